//! Input builders and invariant checks shared by the `pcapsleuth-capture` fuzz targets.
//!
//! Every check panics (which libFuzzer reports as a crash) when an invariant of the reader breaks:
//! records outside the file, overlapping or out-of-order records, impossible damage reports, a reader
//! that does not stop, or split reading that disagrees with reading the whole file.

use pcapsleuth_capture::{Capture, Damage, DamageKind, Format, Record};

/// The largest split count the split target asks for.
pub const MAX_SPLITS: usize = 16;

/// The smallest record any format stores (a pcapng block: type, length, length); classic pcap record
/// headers are 16 or 24 bytes. Bounds how many records a file can hold.
const MIN_RECORD: usize = 12;

/// A valid classic pcap file header with link type Ethernet, chosen by `sel`: bit 0 big-endian, bit 1
/// nanosecond timestamps, bit 2 the "modified" variant with 24-byte record headers (libpcap writes that
/// one little-endian and µs only, so it is used only when bit 0 is clear).
pub fn pcap_header(sel: u8) -> Vec<u8> {
    let big = sel & 1 != 0;
    let ns = sel & 2 != 0;
    let modified = !big && sel & 4 != 0;
    let magic: u32 = if modified {
        0xa1b2_cd34
    } else if ns {
        0xa1b2_3c4d
    } else {
        0xa1b2_c3d4
    };
    let mut h = Vec::with_capacity(24);
    let mut put = |bytes: &[u8]| h.extend_from_slice(bytes);
    let u16b = |v: u16| {
        if big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    };
    let u32b = |v: u32| {
        if big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    };
    put(&u32b(magic));
    put(&u16b(2));
    put(&u16b(4));
    put(&u32b(0)); // thiszone
    put(&u32b(0)); // sigfigs
    put(&u32b(262_144)); // snaplen
    put(&u32b(1)); // LINKTYPE_ETHERNET
    h
}

/// A valid pcapng Section Header Block followed by one Ethernet Interface Description Block, chosen by
/// `sel`: bit 0 big-endian, bit 1 an IDB snap length of 96 (else 0, "no limit"), bit 2 an `if_tsresol`
/// option of 10^-9 (else none, microseconds).
pub fn pcapng_preamble(sel: u8) -> Vec<u8> {
    let big = sel & 1 != 0;
    let snaplen: u32 = if sel & 2 != 0 { 96 } else { 0 };
    let tsresol = sel & 4 != 0;
    let u16b = |v: u16| {
        if big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    };
    let u32b = |v: u32| {
        if big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    };
    let mut out = Vec::with_capacity(28 + 32);
    // SHB: type, length, byte-order magic, version 1.0, section length -1 (unknown), length.
    out.extend_from_slice(&u32b(0x0A0D_0D0A));
    out.extend_from_slice(&u32b(28));
    out.extend_from_slice(&u32b(0x1A2B_3C4D));
    out.extend_from_slice(&u16b(1));
    out.extend_from_slice(&u16b(0));
    out.extend_from_slice(&[0xff; 8]);
    out.extend_from_slice(&u32b(28));
    // IDB: type, length, link type, reserved, snap length, [options], length.
    let idb_len: u32 = if tsresol { 32 } else { 20 };
    out.extend_from_slice(&u32b(1));
    out.extend_from_slice(&u32b(idb_len));
    out.extend_from_slice(&u16b(1));
    out.extend_from_slice(&u16b(0));
    out.extend_from_slice(&u32b(snaplen));
    if tsresol {
        out.extend_from_slice(&u16b(9)); // if_tsresol
        out.extend_from_slice(&u16b(1));
        out.extend_from_slice(&[9, 0, 0, 0]);
        out.extend_from_slice(&u16b(0)); // opt_endofopt
        out.extend_from_slice(&u16b(0));
    }
    out.extend_from_slice(&u32b(idb_len));
    out
}

/// `header` followed by `body`.
pub fn with_prefix(header: Vec<u8>, body: &[u8]) -> Vec<u8> {
    let mut v = header;
    v.extend_from_slice(body);
    v
}

/// The file for a split-target input: `sel` bit 7 picks pcapng (else classic pcap), the low bits pick
/// the variant as in [`pcap_header`] / [`pcapng_preamble`].
pub fn build_file(sel: u8, body: &[u8]) -> Vec<u8> {
    if sel & 0x80 != 0 {
        with_prefix(pcapng_preamble(sel), body)
    } else {
        with_prefix(pcap_header(sel), body)
    }
}

/// What a reading produced, to compare two readings: each record's offset and stored bytes, the damage,
/// and the final reader state's offset.
#[derive(Debug, PartialEq, Eq)]
pub struct Reading<'a> {
    pub records: Vec<(u64, &'a [u8])>,
    pub damage: Vec<Damage>,
}

/// Whether `inner` lies within `outer` (by address).
fn within(inner: &[u8], outer: &[u8]) -> bool {
    let (i, o) = (inner.as_ptr() as usize, outer.as_ptr() as usize);
    i >= o && i + inner.len() <= o + outer.len()
}

/// Checks one record against the file it was read from.
pub fn check_record(cap: &Capture, rec: &Record<'_>) {
    let file = cap.bytes();
    assert!(
        within(rec.raw, file),
        "record at {} outside the file",
        rec.offset
    );
    let start = rec.raw.as_ptr() as usize - file.as_ptr() as usize;
    assert_eq!(start as u64, rec.offset, "raw does not start at the offset");
    assert!(
        within(rec.data, rec.raw),
        "data of record at {} outside its raw bytes",
        rec.offset
    );
    assert!(
        rec.data.len() as u64 <= u64::from(rec.orig_len) || rec.data.len() <= rec.raw.len(),
        "data longer than both orig_len and the record"
    );
    assert!(
        rec.raw.len() >= MIN_RECORD,
        "record shorter than any header"
    );
    assert!(
        rec.offset >= cap.initial_state().offset,
        "record before the first record"
    );
    match cap.format() {
        Format::Pcap(f) => {
            let hl = if f.modified { 24 } else { 16 };
            assert_eq!(rec.raw.len(), hl + rec.data.len(), "pcap record size");
            assert_eq!(rec.interface, 0);
            assert!(rec.data.len() <= 16 << 20, "caplen above the ceiling");
        }
        Format::PcapNg => {
            assert_eq!(
                rec.raw.len() % 4,
                0,
                "pcapng block length not a multiple of 4"
            );
            assert!(rec.raw.len() <= 16 << 20, "pcapng block above the ceiling");
        }
    }
}

/// Checks a damage list: in file order, inside the file, and each kind self-consistent.
pub fn check_damage(cap: &Capture, damage: &[Damage]) {
    let len = cap.len();
    let mut prev = 0u64;
    for d in damage {
        assert!(d.offset < len, "damage at {} past the end {len}", d.offset);
        assert!(d.offset >= prev, "damage out of file order");
        prev = d.offset;
        match &d.kind {
            DamageKind::TruncatedTail { have, need } => {
                assert!(have < need, "truncated tail that is not short: {d:?}");
                assert_eq!(d.offset + have, len, "truncated tail not at the end: {d:?}");
            }
            DamageKind::CorruptRecord { skipped, .. } => {
                assert!(*skipped > 0, "corrupt record skipping nothing: {d:?}");
                assert!(d.offset + skipped <= len, "skip past the end: {d:?}");
            }
            DamageKind::BadInterface { .. } => {}
            // A section of a pcapng version this reader does not know: reading stops there.
            DamageKind::UnknownPcapngVersion { major, .. } => {
                assert_ne!(*major, 1, "version 1 is known: {d:?}");
            }
            // Only a mapped file that changes while it is read reports these; the targets' captures
            // are held in memory.
            DamageKind::Shrank { .. } | DamageKind::Grew { .. } => {
                panic!("a capture held in memory changed size: {d:?}")
            }
            // Only streams (compressed files, pipes) report these; the targets read captures in memory.
            DamageKind::CompressedCutShort { .. }
            | DamageKind::Unreadable { .. }
            | DamageKind::InMergedFile { .. } => {
                panic!("a capture held in memory reported stream damage: {d:?}")
            }
        }
        // Display must not panic either.
        let _ = d.to_string();
    }
}

/// Reads every record a reader yields, checking each and the order; returns them with the damage.
fn drain<'a>(
    cap: &'a Capture,
    reader: &mut pcapsleuth_capture::RecordReader<'a>,
    records: &mut Vec<(u64, &'a [u8])>,
) {
    // Each record consumes at least MIN_RECORD bytes, so a reader yielding more is looping.
    let bound = cap.bytes().len() / MIN_RECORD + 1;
    while let Some(rec) = reader.next_record() {
        check_record(cap, &rec);
        if let Some(&(off, raw)) = records.last() {
            assert!(
                rec.offset > off,
                "offsets not increasing: {off} then {}",
                rec.offset
            );
            assert!(
                rec.offset >= off + raw.len() as u64,
                "record at {} overlaps the one at {off}",
                rec.offset
            );
        }
        let _ = rec.is_truncated();
        records.push((rec.offset, rec.raw));
        assert!(
            records.len() <= bound,
            "more records than the file can hold"
        );
    }
    assert!(
        reader.next_record().is_none(),
        "reader not fused after None"
    );
    assert!(reader.state().offset <= cap.len(), "state past the end");
}

/// Reads the whole file with [`Capture::reader_all`], checking every invariant on the way.
pub fn read_all(cap: &Capture) -> (Reading<'_>, pcapsleuth_capture::ReaderState) {
    let mut reader = cap.reader_all();
    let mut records = Vec::new();
    drain(cap, &mut reader, &mut records);
    let state = reader.state();
    let damage = reader.take_damage();
    check_damage(cap, &damage);
    (Reading { records, damage }, state)
}

/// Reads the file as the analysis engine does: `plan_splits(n)`, each split read from its own boundary
/// when [`pcapsleuth_capture::Split::continues`] the previous reader's end state, else re-read from that
/// state with [`Capture::reader_after`].
pub fn read_splits(cap: &Capture, n: usize) -> (Reading<'_>, pcapsleuth_capture::ReaderState) {
    let splits = cap.plan_splits(n);
    check_plan(cap, n, &splits);
    let mut prev = cap.initial_state().clone();
    let mut records = Vec::new();
    let mut damage = Vec::new();
    for split in &splits {
        let mut reader = if split.continues(&prev) {
            cap.reader(split)
        } else {
            cap.reader_after(prev.clone(), split.end)
        };
        drain(cap, &mut reader, &mut records);
        damage.extend(reader.take_damage());
        prev = reader.state();
    }
    check_damage(cap, &damage);
    (Reading { records, damage }, prev)
}

/// The plan covers the record area with contiguous ranges, each boundary inside its range.
fn check_plan(cap: &Capture, n: usize, splits: &[pcapsleuth_capture::Split]) {
    assert!(!splits.is_empty(), "no splits");
    assert!(splits.len() <= n.max(1), "more splits than asked for");
    let first = cap.initial_state().offset;
    assert_eq!(
        splits[0].cut, first,
        "first split does not start at the first record"
    );
    assert_eq!(splits[0].start_state, *cap.initial_state());
    for (i, s) in splits.iter().enumerate() {
        assert_eq!(s.index, i);
        assert!(s.cut <= s.end, "split {i} ends before it starts");
        assert!(
            (s.cut..=s.end).contains(&s.start_state.offset),
            "split {i} boundary {} outside [{}, {}]",
            s.start_state.offset,
            s.cut,
            s.end
        );
        if let Some(next) = splits.get(i + 1) {
            assert_eq!(s.end, next.cut, "splits {i} and {} not contiguous", i + 1);
        }
    }
    assert_eq!(
        splits.last().map(|s| s.end),
        Some(cap.len().max(first)),
        "splits do not reach the end of the file"
    );
}

/// The split property: reading in `n` splits gives exactly what reading the whole file gives.
pub fn check_split_invariance(cap: &Capture, n: usize) {
    let (all, all_end) = read_all(cap);
    let (split, split_end) = read_splits(cap, n);
    if all != split {
        let first_diff = all
            .records
            .iter()
            .zip(&split.records)
            .position(|(a, b)| a != b);
        panic!(
            "split reading ({n} splits) differs from whole-file reading: {} vs {} records \
             (first differing record #{first_diff:?}); damage whole {:?} vs split {:?}; plan {:?}",
            all.records.len(),
            split.records.len(),
            all.damage,
            split.damage,
            cap.plan_splits(n)
                .iter()
                .map(|s| (s.cut, s.start_state.offset, s.end))
                .collect::<Vec<_>>()
        );
    }
    assert_eq!(
        all_end, split_end,
        "split reading ({n} splits) ends in a different state"
    );
}

/// `resync` answers inside the range it was asked about.
pub fn check_resync(cap: &Capture, from: u64, limit: u64) {
    if let Some(p) = cap.resync(from, limit) {
        assert!(p >= from, "resync went backwards: {p} < {from}");
        assert!(p < limit.min(cap.len()), "resync past its limit: {p}");
    }
}
