//! Inputs found by the fuzz targets in `crates/capture/fuzz`, kept as tests so the bugs they exposed stay
//! fixed. Each test re-checks what its target checks: whole-file reading must not panic, and reading in
//! splits (as the analysis engine does) must give exactly the records, damage and end state of reading
//! the whole file.

use pcapsleuth_capture::{Capture, Damage, ReaderState};

/// What a reading produced: each record's offset and stored bytes, the damage, and the end state.
type Reading = (Vec<(u64, Vec<u8>)>, Vec<Damage>, ReaderState);

fn read_all(cap: &Capture) -> Reading {
    let mut reader = cap.reader_all();
    let mut records = Vec::new();
    while let Some(rec) = reader.next_record() {
        records.push((rec.offset, rec.raw.to_vec()));
    }
    let damage = reader.take_damage();
    (records, damage, reader.state())
}

/// The engine's loop: a split is read from its own boundary only when it continues the previous reader's
/// end state, else re-read from that state.
fn read_splits(cap: &Capture, n: usize) -> Reading {
    let mut prev = cap.initial_state().clone();
    let mut records = Vec::new();
    let mut damage = Vec::new();
    for split in cap.plan_splits(n) {
        let mut reader = if split.continues(&prev) {
            cap.reader(&split)
        } else {
            cap.reader_after(prev.clone(), split.end)
        };
        while let Some(rec) = reader.next_record() {
            records.push((rec.offset, rec.raw.to_vec()));
        }
        damage.extend(reader.take_damage());
        prev = reader.state();
    }
    (records, damage, prev)
}

fn assert_split_invariant(file: Vec<u8>) {
    let cap = Capture::from_vec("regression", file).expect("opens");
    let whole = read_all(&cap);
    for n in 1..=16 {
        assert_eq!(read_splits(&cap, n), whole, "{n} splits");
    }
}

/// Found by `split_invariance` (input `24 24 32 24 32`: "modified" pcap, 5 splits, 3 body bytes). The
/// first split's reader reports the truncated tail at 24 and ends at 27, past the two one-byte splits
/// after it. `Split::continues` used to answer true for a split whose range the previous reader had
/// already passed, so that split was read from its own boundary (26), read nothing, and handed on state
/// 26 instead of 27; the last split was then re-read from 26 and reported a second truncated tail there.
/// Fixed in split.rs: `continues` is exact state equality, so such a split is re-read from `prev_end`,
/// which yields nothing and hands `prev_end` on.
#[test]
fn split_already_passed_by_previous_reader_hands_on_its_end_state() {
    let file = vec![
        0x34, 0xcd, 0xb2, 0xa1, 0x02, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00, //
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00, 0x01, 0x00, 0x00, 0x00, //
        0x32, 0x24, 0x32,
    ];
    assert_split_invariant(file);
}

fn le_block(block_type: u32, body: &[u8]) -> Vec<u8> {
    let len = (12 + body.len().next_multiple_of(4)) as u32;
    let mut b = Vec::new();
    b.extend_from_slice(&block_type.to_le_bytes());
    b.extend_from_slice(&len.to_le_bytes());
    b.extend_from_slice(body);
    b.resize(len as usize - 4, 0);
    b.extend_from_slice(&len.to_le_bytes());
    b
}

fn idb() -> Vec<u8> {
    le_block(1, &[1, 0, 0, 0, 0, 0, 0, 0])
}

fn epb(if_id: u32, ts: u32, payload: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    for w in [if_id, 0, ts, payload.len() as u32, payload.len() as u32] {
        body.extend_from_slice(&w.to_le_bytes());
    }
    body.extend_from_slice(payload);
    le_block(6, &body)
}

/// The same bug with the other half of the state: a pcapng interface defined mid-file, then a packet
/// block longer than a split. The split inside the long block used to hand on the *initial* section (one
/// interface), losing the mid-file IDB and the true offset, so the next split was re-read from inside the
/// block: corrupt-record damage and lost packets that whole-file reading does not have.
#[test]
fn pcapng_block_spanning_splits_keeps_mid_file_interfaces() {
    let shb = le_block(
        0x0A0D_0D0A,
        &[
            0x4d, 0x3c, 0x2b, 0x1a, 1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        ],
    );
    let mut file = [shb, idb(), epb(0, 1, &[0xee; 20]), idb()].concat();
    file.extend(epb(1, 2, &[0xff; 200]));
    file.extend(epb(1, 3, &[0xee; 20]));
    file.extend(epb(0, 4, &[0xee; 24]));
    let cap = Capture::from_vec("regression", file.clone()).expect("opens");
    let (records, damage, _) = read_all(&cap);
    assert_eq!(records.len(), 4);
    assert!(damage.is_empty(), "{damage:?}");
    assert_split_invariant(file);
}
