//! Replication streams: after a binlog dump the primary's events are no response and the replica's
//! semi-sync ACKs no request. Hand-built packets in the layout of MariaDB 10.11's (checked against the
//! lab captures fixtures/repl-*.pcap, whose whole-stream tests are in the workspace's tests/replication.rs).

use crate::common;
use common::*;
use pcapsleuth_mysql::replication::{event_type, StreamEnd};
use pcapsleuth_mysql::{
    CloseFlag, Command, Outcome, ReplicationSample, SessionPhase, StartMode, Transaction,
};
use proptest::prelude::*;

const FILE: &str = "primary-bin.000001";
const TS: u32 = 1_795_000_000;

/// An event of `kind` with `body`, ending at `log_pos`, CRC32 appended (zeros: nothing checks it).
fn event(kind: u8, log_pos: u32, flags: u16, body: &[u8]) -> Vec<u8> {
    let size = (19 + body.len() + 4) as u32;
    let mut e = TS.to_le_bytes().to_vec();
    e.push(kind);
    e.extend_from_slice(&1u32.to_le_bytes());
    e.extend_from_slice(&size.to_le_bytes());
    e.extend_from_slice(&log_pos.to_le_bytes());
    e.extend_from_slice(&flags.to_le_bytes());
    e.extend_from_slice(body);
    e.extend_from_slice(&[0; 4]);
    e
}

/// An event packet's payload: `00`, the semi-sync header if `semi` (`Some(need_ack)`), the event.
fn event_payload(semi: Option<bool>, e: &[u8]) -> Vec<u8> {
    let mut p = vec![0];
    if let Some(ack) = semi {
        p.extend_from_slice(&[0xEF, u8::from(ack)]);
    }
    p.extend_from_slice(e);
    p
}

fn rotate(name: &str) -> Vec<u8> {
    let mut b = 4u64.to_le_bytes().to_vec();
    b.extend_from_slice(name.as_bytes());
    let mut e = event(event_type::ROTATE, 0, 0x20, &b);
    e[0..4].copy_from_slice(&[0; 4]); // the artificial ROTATE has no time
    e
}

fn format_description() -> Vec<u8> {
    let mut b = 4u16.to_le_bytes().to_vec();
    let mut version = b"10.11.19-MariaDB-log".to_vec();
    version.resize(50, 0);
    b.extend_from_slice(&version);
    b.extend_from_slice(&TS.to_le_bytes());
    b.push(19);
    b.extend_from_slice(&[0; 20]); // post-header lengths
    b.push(1); // checksum algorithm: CRC32 (the event's CRC follows)
    event(event_type::FORMAT_DESCRIPTION, 256, 0, &b)
}

fn xid(log_pos: u32) -> Vec<u8> {
    event(event_type::XID, log_pos, 0, &7u64.to_le_bytes())
}

fn query(log_pos: u32, sql: &str) -> Vec<u8> {
    let mut b = vec![0; 8]; // thread id, exec time
    b.push(1); // schema length
    b.extend_from_slice(&[0, 0, 0, 0]); // error code, status variables' length
    b.extend_from_slice(b"d\0");
    b.extend_from_slice(sql.as_bytes());
    event(event_type::QUERY, log_pos, 0, &b)
}

fn dump(position: u32, file: &str) -> Vec<u8> {
    let mut body = position.to_le_bytes().to_vec();
    body.extend_from_slice(&0u16.to_le_bytes());
    body.extend_from_slice(&2u32.to_le_bytes());
    body.extend_from_slice(file.as_bytes());
    command(0x12, &body)
}

fn ack(position: u64, file: &str) -> Vec<u8> {
    let mut p = vec![0xEF];
    p.extend_from_slice(&position.to_le_bytes());
    p.extend_from_slice(file.as_bytes());
    packet(0, &p)
}

/// A semi-sync stream: dump (frame 1), the primary's first events (frame 2), a transaction asking for
/// its ACK (frame 3), the replica's ACK (frame 4), then a QUERY `COMMIT` without a request (frame 5).
fn semi_sync_stream() -> Vec<Ev> {
    let first = [
        event_payload(Some(false), &rotate(FILE)),
        event_payload(Some(false), &format_description()),
    ];
    let tx = [
        event_payload(Some(false), &query(400, "BEGIN")),
        event_payload(Some(true), &xid(431)),
    ];
    fn refs(v: &[Vec<u8>]) -> Vec<&[u8]> {
        v.iter().map(Vec::as_slice).collect()
    }
    vec![
        Ev::Data(C, dump(4, FILE)),
        Ev::Data(S, packets(1, &refs(&first))),
        Ev::Data(S, packets(3, &refs(&tx))),
        Ev::Data(C, ack(431, FILE)),
        Ev::Data(
            S,
            packet(5, &event_payload(Some(false), &query(500, "COMMIT"))),
        ),
    ]
}

#[test]
fn a_dump_becomes_a_stream_whose_events_and_acks_are_neither_responses_nor_requests() {
    let (t, s) = play(StartMode::MidStream, &semi_sync_stream());
    // One transaction, the dump: no response time, no rows.
    assert_eq!(t.len(), 1, "{t:#?}");
    assert_eq!(t[0].command, Command::BinlogDump);
    assert_eq!(t[0].outcome, Outcome::ReplicationStream);
    assert_eq!((t[0].request_frame, t[0].last_response_ts_ns), (1, None));
    let r = s.replication().expect("a replication stream");
    let d = r.dump.as_ref().unwrap();
    assert_eq!(
        (d.start_file.as_str(), d.start_position, d.server_id, d.gtid),
        (FILE, 4, 2, false)
    );
    assert_eq!(r.events, 5);
    let by_type: Vec<(u8, u64)> = r.event_counts().collect();
    assert_eq!(
        by_type,
        [
            (event_type::QUERY, 2),
            (event_type::ROTATE, 1),
            (event_type::FORMAT_DESCRIPTION, 1),
            (event_type::XID, 1)
        ]
    );
    assert_eq!(r.transactions, 2, "the XID and the QUERY COMMIT");
    assert!(r.semi_sync);
    assert_eq!(
        (r.acks_requested, r.acks, r.acks_matched, r.acks_unmatched),
        (1, 1, 1, 0)
    );
    assert_eq!(r.file.as_deref(), Some(FILE));
    assert_eq!(r.checksum, Some(true));
    assert_eq!(r.position, 500);
    assert_eq!(
        s.info().counters.unknown_commands,
        0,
        "ACKs are no commands"
    );
    // The ACK's latency: from frame 3 (the event's end) to frame 4.
    let acks: Vec<_> = s
        .replication_samples()
        .iter()
        .filter_map(|x| match x {
            ReplicationSample::Ack {
                event_end,
                ack,
                position,
            } => Some((event_end.frame, ack.frame, *position)),
            _ => None,
        })
        .collect();
    assert_eq!(acks, [(3, 4, 431)]);
    // Lag only for the transaction's events: not the artificial ROTATE nor the format description.
    let lags = s
        .replication_samples()
        .iter()
        .filter(|x| matches!(x, ReplicationSample::Lag { .. }))
        .count();
    assert_eq!(lags, 3);
}

#[test]
fn a_stream_is_chunking_invariant() {
    let evs = semi_sync_stream();
    let (whole, s1) = play(StartMode::Handshake, &evs);
    let (bytewise, s2) = play_chunked(StartMode::Handshake, &evs, &mut |_| 1);
    assert_eq!(whole, bytewise);
    assert_eq!(s1.replication(), s2.replication());
}

#[test]
fn an_err_refusing_the_dump_is_its_answer_and_ends_the_stream() {
    let evs = vec![
        Ev::Data(C, dump(4, "gone-bin.000001")),
        Ev::Data(
            S,
            packet(
                1,
                &err(
                    1236,
                    "HY000",
                    "Could not find first log file name in binary log index file",
                ),
            ),
        ),
    ];
    let (t, s) = play(StartMode::MidStream, &evs);
    assert_eq!(t.len(), 1);
    assert!(
        matches!(t[0].outcome, Outcome::Err { code: 1236, .. }),
        "{:?}",
        t[0].outcome
    );
    assert_eq!(
        t[0].last_response_frame,
        Some(2),
        "an error has a response time"
    );
    assert!(matches!(
        s.replication().unwrap().end,
        Some(StreamEnd::Error { code: 1236, .. })
    ));
}

#[test]
fn a_non_blocking_dump_ends_with_eof() {
    let evs = vec![
        Ev::Data(C, dump(4, FILE)),
        Ev::Data(
            S,
            packets(
                1,
                &[
                    &event_payload(None, &rotate(FILE)),
                    &event_payload(None, &xid(300)),
                    &eof(0),
                ],
            ),
        ),
    ];
    let (t, s) = play(StartMode::MidStream, &evs);
    assert_eq!(t.len(), 1);
    let r = s.replication().unwrap();
    assert_eq!((r.events, r.semi_sync, r.transactions), (2, false, 1));
    assert!(matches!(r.end, Some(StreamEnd::Eof { .. })));
}

#[test]
fn a_stream_joined_mid_way_is_found_from_its_events() {
    // No dump, no greeting: the capture began mid-stream, in the middle of an event.
    let mut bytes = vec![0xAB; 7];
    bytes.extend(packets(
        9,
        &[
            &event_payload(Some(true), &xid(1000)),
            &event_payload(Some(false), &query(1100, "BEGIN")),
        ],
    ));
    let evs = vec![
        Ev::Data(S, bytes),
        Ev::Data(C, ack(1000, FILE)),
        Ev::Data(C, ack(900, FILE)),
    ];
    let (t, s) = play(StartMode::MidStream, &evs);
    assert!(t.is_empty(), "{t:#?}");
    let r = s.replication().expect("found from the events");
    assert!(r.dump.is_none());
    assert_eq!(
        (
            r.events,
            r.acks_requested,
            r.acks,
            r.acks_matched,
            r.acks_unmatched
        ),
        (2, 1, 2, 1, 1)
    );
    assert_eq!(s.info().counters.unknown_commands, 0);
}

#[test]
fn a_close_says_whether_an_ack_was_awaited_or_an_event_cut() {
    let mut evs = semi_sync_stream();
    evs.truncate(3); // the ACK never comes
    let mut s = play(StartMode::MidStream, &evs).1;
    // Half of the next event, then the primary's FIN.
    let next = packet(5, &event_payload(Some(false), &query(500, "COMMIT")));
    s.feed(S, &next[..20], meta(6));
    let ctx = s.close(S, CloseFlag::Fin, meta(7));
    let SessionPhase::Replicating(at) = ctx.phase else {
        panic!("{:?}", ctx.phase)
    };
    assert!(at.mid_event);
    assert_eq!(at.events, 4);
    let awaited = at.awaiting_ack.unwrap();
    assert_eq!((awaited.position, awaited.event_end.frame), (431, 3));
}

#[test]
fn a_later_ack_releases_earlier_requests() {
    let tx = |pos| event_payload(Some(true), &xid(pos));
    let evs = vec![
        Ev::Data(C, dump(4, FILE)),
        Ev::Data(
            S,
            packets(
                1,
                &[
                    &event_payload(Some(false), &rotate(FILE)),
                    &tx(500),
                    &tx(600),
                ],
            ),
        ),
        Ev::Data(C, ack(600, FILE)),
    ];
    let (_, s) = play(StartMode::MidStream, &evs);
    let r = s.replication().unwrap();
    assert_eq!(
        (r.acks_requested, r.acks_matched, r.acks_covered),
        (2, 1, 1)
    );
    let SessionPhase::Replicating(at) = s.phase() else {
        panic!()
    };
    assert_eq!(at.awaiting_ack, None);
}

#[test]
fn com_quit_after_a_dump_is_still_the_end_of_a_session() {
    let mut evs = semi_sync_stream();
    evs.push(Ev::Data(C, command(0x01, b"")));
    let (t, s) = play(StartMode::MidStream, &evs);
    let names: Vec<&str> = t.iter().map(|t: &Transaction| t.command.name()).collect();
    assert_eq!(names, ["COM_BINLOG_DUMP", "COM_QUIT"]);
    assert_eq!(s.phase(), SessionPhase::AfterQuit);
}

proptest! {
    /// Events and ACKs cut anywhere give the same stream, with no request and no response among them.
    #[test]
    fn streams_are_chunking_invariant(
        txs in proptest::collection::vec((any::<bool>(), 1u8..4), 1..12),
        sizes in proptest::collection::vec(1usize..48, 1..6),
        mid_stream in any::<bool>(),
    ) {
        let mut evs = Vec::new();
        let mut seq = 1u8;
        if !mid_stream {
            evs.push(Ev::Data(C, dump(4, FILE)));
            evs.push(Ev::Data(S, packet(seq, &event_payload(Some(false), &rotate(FILE)))));
            seq += 1;
        }
        let mut pos = 1000;
        for (need_ack, rows) in txs {
            let mut bytes = Vec::new();
            for _ in 0..rows {
                pos += 50;
                bytes.extend(packet(seq, &event_payload(Some(false), &event(23, pos, 0, &[7; 27]))));
                seq = seq.wrapping_add(1);
            }
            pos += 31;
            bytes.extend(packet(seq, &event_payload(Some(need_ack), &xid(pos))));
            seq = seq.wrapping_add(1);
            evs.push(Ev::Data(S, bytes));
            if need_ack {
                evs.push(Ev::Data(C, ack(u64::from(pos), FILE)));
            }
        }
        let mut sizes = sizes.into_iter().cycle();
        let (whole, s1) = play(StartMode::MidStream, &evs);
        let (chunked, s2) = play_chunked(StartMode::MidStream, &evs, &mut |_| sizes.next().unwrap_or(1));
        prop_assert_eq!(&whole, &chunked);
        prop_assert_eq!(s1.replication(), s2.replication());
        prop_assert_eq!(s1.replication_samples(), s2.replication_samples());
        prop_assert!(whole.iter().all(|t| t.command == Command::BinlogDump));
        let r = s1.replication().unwrap();
        prop_assert_eq!(r.acks, r.acks_matched);
    }
}
