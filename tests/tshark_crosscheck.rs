//! TCP tracking checked against tshark's dissector on every real capture: packets, connections,
//! retransmissions, zero windows, and the first FIN and RST frames.

use crate::common;

use std::path::Path;

use pcapsleuth_testkit::oracle::{self, Tshark};

use pcapsleuth::analysis::{analyze, first_reset, EngineOptions, Everything};
use pcapsleuth::capture::Capture;

#[test]
fn tcp_facts_match_tshark_on_every_real_capture() {
    let Some(tshark) = oracle::tshark() else {
        return;
    };
    common::each_in_parallel(common::real_captures(), |path| {
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
        let theirs = TcpFacts::of(&tshark, &path);
        assert_eq!(
            a.capture.counts.packets as usize, theirs.frames,
            "{p}: packets"
        );
        // A client that reset a TIME_WAIT's plain ACK to its SYN and resent the same SYN: tshark keeps
        // both in one stream (a new stream needs a new ISN), pcapsleuth ends the first connection at the
        // RST and says which SYN resumed its attempt.
        let resumed = conns
            .iter()
            .filter(|c| c.handshake.resumed_by.is_some())
            .count();
        assert_eq!(
            conns.len() - resumed,
            theirs.conversations,
            "{p}: TCP connections ({resumed} attempts resumed on the next)"
        );
        // Segments resent or reordered: exactly Wireshark's. Which of the two a segment is follows
        // Wireshark's timing heuristics (initial RTT, duplicate ACKs); they may differ on a rare segment.
        assert_eq!(
            sum(|d| d.retransmissions + d.out_of_order),
            theirs.resent_or_reordered,
            "{p}: retransmitted or out-of-order segments"
        );
        let (ours, retransmissions) = (sum(|d| d.retransmissions), theirs.retransmissions);
        assert!(
            ours.abs_diff(retransmissions) <= (retransmissions / 100).max(1),
            "{p}: retransmissions {ours} vs tshark {retransmissions}"
        );
        assert_eq!(
            sum(|d| d.zero_windows),
            theirs.zero_windows,
            "{p}: zero windows"
        );
        let answer = first_reset(&a, 0);
        assert_eq!(
            answer.first_fin.map(|c| c.frame),
            theirs.first_fin,
            "{p}: first FIN"
        );
        assert_eq!(
            answer.first_rst.map(|c| c.frame),
            theirs.first_rst,
            "{p}: first RST"
        );
    });
}

/// What tshark says of a capture's TCP: one line of fields per frame, and its TCP conversation table
/// (`-z conv,tcp`), from the pass over the capture the tests comparing with tshark share
/// (`common::tshark_pass`): tshark's dissection with TCP analysis is most of this test's time.
struct TcpFacts {
    frames: usize,
    conversations: usize,
    resent_or_reordered: usize,
    retransmissions: usize,
    zero_windows: usize,
    first_fin: Option<u64>,
    first_rst: Option<u64>,
}

impl TcpFacts {
    fn of(tshark: &Tshark, path: &Path) -> TcpFacts {
        let pass = common::tshark_pass(tshark, path);
        let col = common::TsharkPass::col;
        let (fin, reset, retransmission, out_of_order, zero_window) = (
            col("tcp.flags.fin"),
            col("tcp.flags.reset"),
            col("tcp.analysis.retransmission"),
            col("tcp.analysis.out_of_order"),
            col("tcp.analysis.zero_window"),
        );
        let mut facts = TcpFacts {
            frames: 0,
            conversations: pass.tcp_conversations,
            resent_or_reordered: 0,
            retransmissions: 0,
            zero_windows: 0,
            first_fin: None,
            first_rst: None,
        };
        for cols in pass.rows() {
            let frame: u64 = cols[col("frame.number")].parse().unwrap();
            // A flag field is "1" when set; an analysis field (a marker with no value) is "1" when present.
            // A frame with two TCP headers (an ICMP error quoting one, a tunnel) lists both, comma-separated:
            // as with a display filter, any of them counts.
            let set = |i: usize| cols[i].split(',').any(|v| v == "1" || v == "True");
            facts.frames += 1;
            if set(fin) {
                facts.first_fin.get_or_insert(frame);
            }
            if set(reset) {
                facts.first_rst.get_or_insert(frame);
            }
            facts.retransmissions += usize::from(set(retransmission));
            facts.resent_or_reordered += usize::from(set(retransmission) || set(out_of_order));
            facts.zero_windows += usize::from(set(zero_window));
        }
        facts
    }
}
