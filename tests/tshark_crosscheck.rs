//! TCP tracking checked against tshark's dissector on every real capture: packets, connections,
//! retransmissions, zero windows, and the first FIN and RST frames.

mod common;

use pcapsleuth_testkit::oracle;

use pcapsleuth::analysis::{analyze, first_reset, EngineOptions, Everything};
use pcapsleuth::capture::Capture;

#[test]
fn tcp_facts_match_tshark_on_every_real_capture() {
    let Some(tshark) = oracle::tshark() else {
        return;
    };
    for path in common::real_captures() {
        let p = path.to_str().unwrap();
        let cap = Capture::open(&path).unwrap();
        let a = analyze(&cap, &EngineOptions::default(), Everything::default);
        let conns = &a.connections;
        let sum = |f: fn(&pcapsleuth::flow::DirectionStats) -> u64| -> usize {
            conns
                .iter()
                .map(|c| (f(&c.to_server) + f(&c.to_client)) as usize)
                .sum()
        };
        assert_eq!(
            a.capture.counts.packets as usize,
            tshark.count(&path, "frame"),
            "{p}: packets"
        );
        let tshark_conversations = tshark
            .lines(["-r", p, "-q", "-z", "conv,tcp"])
            .iter()
            .filter(|l| l.contains("<->"))
            .count();
        // A client that reset a TIME_WAIT's plain ACK to its SYN and resent the same SYN: tshark keeps
        // both in one stream (a new stream needs a new ISN), pcapsleuth ends the first connection at the
        // RST and says which SYN resumed its attempt.
        let resumed = conns
            .iter()
            .filter(|c| c.handshake.resumed_by.is_some())
            .count();
        assert_eq!(
            conns.len() - resumed,
            tshark_conversations,
            "{p}: TCP connections ({resumed} attempts resumed on the next)"
        );
        // Segments resent or reordered: exactly Wireshark's. Which of the two a segment is follows
        // Wireshark's timing heuristics (initial RTT, duplicate ACKs); they may differ on a rare segment.
        assert_eq!(
            sum(|d| d.retransmissions + d.out_of_order),
            tshark.count(
                &path,
                "tcp.analysis.retransmission || tcp.analysis.out_of_order"
            ),
            "{p}: retransmitted or out-of-order segments"
        );
        let (ours, theirs) = (
            sum(|d| d.retransmissions),
            tshark.count(&path, "tcp.analysis.retransmission"),
        );
        assert!(
            ours.abs_diff(theirs) <= (theirs / 100).max(1),
            "{p}: retransmissions {ours} vs tshark {theirs}"
        );
        assert_eq!(
            sum(|d| d.zero_windows),
            tshark.count(&path, "tcp.analysis.zero_window"),
            "{p}: zero windows"
        );
        let answer = first_reset(&a, 0);
        let first = |filter: &str| {
            tshark
                .lines(["-r", p, "-Y", filter, "-T", "fields", "-e", "frame.number"])
                .first()
                .map(|s| s.parse::<u64>().unwrap())
        };
        assert_eq!(
            answer.first_fin.map(|c| c.frame),
            first("tcp.flags.fin==1"),
            "{p}: first FIN"
        );
        assert_eq!(
            answer.first_rst.map(|c| c.frame),
            first("tcp.flags.reset==1"),
            "{p}: first RST"
        );
    }
}
