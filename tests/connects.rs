//! Connection attempts checked against tshark's dissection on every real capture: each attempt (4-tuple
//! and ISN), its SYNs and SYN-ACKs, its outcome, its connect time, the SYN that was answered, the humps
//! of the connect-time distribution, and the clients that gave up waiting for a greeting. On captures
//! where tshark shows no such trouble, the reports say nothing of the kind.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;

use pcapsleuth_testkit::oracle::{self, Tshark};

use pcapsleuth::analysis::{
    analyze, connect_report, first_reset, ConnectReport, EngineOptions, Everything,
};
use pcapsleuth::capture::Capture;
use pcapsleuth::flow::AttemptOutcome;

/// One packet as tshark dissects it: the packets that matter to a handshake (SYNs, SYN-ACKs, RSTs,
/// and the packets of each side that begin its stream: relative sequence number 1).
#[derive(Debug, Clone)]
struct Packet {
    frame: u64,
    /// Nanoseconds since the epoch.
    ns: i64,
    src: String,
    dst: String,
    syn: bool,
    ack: bool,
    rst: bool,
    fin: bool,
    seq: u32,
    ack_no: u32,
    len: u32,
    retransmission: bool,
}

fn last_value(field: &str) -> &str {
    // Tunnelled packets carry the outer and the inner address: the inner one is the connection's.
    field.rsplit(',').next().unwrap_or("")
}

fn tshark_packets(tshark: &Tshark, path: &Path) -> Vec<Packet> {
    // tshark's fields of every frame, from the pass the tests comparing with tshark share.
    let pass = common::tshark_pass(tshark, path);
    let col = common::TsharkPass::col;
    let any = |v: &str, want: &str| v.split(',').any(|v| v == want);
    pass.rows()
        // `(tcp.flags.syn==1 || tcp.flags.reset==1 || tcp.seq==1) && !icmp && !icmpv6`, as its display
        // filter selected them: not the TCP headers quoted in ICMP errors (a router's host unreachable),
        // which are not the connection's.
        .filter(|r| {
            let set = |field: &str| any(r[col(field)], "1") || any(r[col(field)], "True");
            let icmp = r[col("frame.protocols")]
                .split(':')
                .any(|p| p == "icmp" || p == "icmpv6");
            (set("tcp.flags.syn") || set("tcp.flags.reset") || any(r[col("tcp.seq")], "1")) && !icmp
        })
        .map(|r| {
            let f = |field: &str| r[col(field)];
            let endpoint = |v4: &str, v6: &str, port: &str| {
                if v6.is_empty() {
                    format!("{}:{port}", last_value(v4))
                } else {
                    format!("[{}]:{port}", last_value(v6))
                }
            };
            let flags = u16::from_str_radix(f("tcp.flags").trim_start_matches("0x"), 16).unwrap();
            let (secs, frac) = f("frame.time_epoch").split_once('.').unwrap();
            Packet {
                frame: f("frame.number").parse().unwrap(),
                ns: secs.parse::<i64>().unwrap() * 1_000_000_000 + frac.parse::<i64>().unwrap(),
                src: endpoint(f("ip.src"), f("ipv6.src"), f("tcp.srcport")),
                dst: endpoint(f("ip.dst"), f("ipv6.dst"), f("tcp.dstport")),
                syn: flags & 0x02 != 0,
                ack: flags & 0x10 != 0,
                rst: flags & 0x04 != 0,
                fin: flags & 0x01 != 0,
                seq: f("tcp.seq_raw").parse().unwrap(),
                ack_no: f("tcp.ack_raw").parse().unwrap(),
                len: f("tcp.len").parse().unwrap(),
                retransmission: !f("tcp.analysis.retransmission").is_empty(),
            }
        })
        .collect()
}

/// tshark's view of one attempt, computed from its packets.
#[derive(Debug, Clone, PartialEq)]
struct TsharkAttempt {
    syns: u32,
    synacks: u32,
    outcome: AttemptOutcome,
    /// First SYN to the SYN-ACK the client answered (the last before its first other packet), ns.
    connect_ns: Option<i64>,
    /// SYNs sent up to that SYN-ACK.
    answered_at_syn: Option<u32>,
    /// The client closed before either side sent data, this long after the answered SYN-ACK (ns),
    /// and whether the server's first data came after that close.
    closed_waiting: Option<(i64, bool)>,
    /// The server's first data (a greeting) this long after the answered SYN-ACK, ns.
    greeting_after_ns: Option<i64>,
}

/// Every attempt of the capture by (client, server, ISN), from tshark's packets.
fn tshark_attempts(packets: &[Packet]) -> BTreeMap<(String, String, u32), TsharkAttempt> {
    let mut by_tuple: BTreeMap<(String, String), Vec<&Packet>> = BTreeMap::new();
    for p in packets {
        let key = if p.src <= p.dst {
            (p.src.clone(), p.dst.clone())
        } else {
            (p.dst.clone(), p.src.clone())
        };
        by_tuple.entry(key).or_default().push(p);
    }
    let mut out = BTreeMap::new();
    for list in by_tuple.values() {
        // Each SYN (without ACK) with a new ISN begins an attempt; it lasts until the next one.
        let starts: Vec<usize> = list
            .iter()
            .enumerate()
            .filter(|(i, p)| {
                p.syn
                    && !p.ack
                    && !list[..*i]
                        .iter()
                        .any(|q| q.syn && !q.ack && q.src == p.src && q.seq == p.seq)
            })
            .map(|(i, _)| i)
            .collect();
        for (n, &start) in starts.iter().enumerate() {
            let end = starts.get(n + 1).copied().unwrap_or(list.len());
            let span = &list[start..end];
            let first = span[0];
            let (client, server, isn) = (&first.src, &first.dst, first.seq);
            let mut syns = 0;
            let mut synacks = 0;
            let mut answer: Option<(&Packet, u32)> = None;
            let mut settled = false;
            let mut refused = false;
            let mut client_first: Option<&Packet> = None;
            let mut server_data: Option<&Packet> = None;
            for p in span {
                if &p.src == client {
                    if p.syn && !p.ack {
                        syns += u32::from(p.seq == isn);
                    } else {
                        if answer.is_some() {
                            settled = true;
                        }
                        client_first.get_or_insert(p);
                    }
                } else if p.syn && p.ack {
                    synacks += 1;
                    if !settled && p.ack_no == isn.wrapping_add(1) {
                        answer = Some((p, syns));
                    }
                } else if p.rst && answer.is_none() {
                    refused = true;
                } else if p.len > 0 && !p.syn {
                    server_data.get_or_insert(p);
                }
            }
            let outcome = match (answer, refused) {
                (Some(_), _) => AttemptOutcome::Established,
                (None, true) => AttemptOutcome::Refused,
                (None, false) => AttemptOutcome::Unanswered,
            };
            let client_data_first = client_first.filter(|c| c.len > 0 && !c.fin && !c.rst);
            let closed_waiting = match (answer, client_first) {
                // The client's first close after the answer it took (not its RST of a TIME_WAIT's
                // plain ACK before it resent the SYN).
                (Some((a, _)), _) => span
                    .iter()
                    .find(|p| &p.src == client && (p.fin || p.rst) && p.frame > a.frame)
                    .filter(|close| {
                        client_data_first.is_none_or(|d| d.frame > close.frame)
                            && server_data.is_none_or(|d| d.frame > close.frame)
                    })
                    .map(|close| (close.ns - a.ns, server_data.is_some())),
                _ => None,
            };
            out.insert(
                (client.clone(), server.clone(), isn),
                TsharkAttempt {
                    syns,
                    synacks,
                    outcome,
                    connect_ns: answer.map(|(a, _)| a.ns - first.ns),
                    answered_at_syn: answer.map(|(_, n)| n),
                    closed_waiting,
                    greeting_after_ns: answer
                        .zip(
                            server_data
                                .filter(|d| client_data_first.is_none_or(|c| c.frame > d.frame)),
                        )
                        .map(|((a, _), d)| d.ns - a.ns),
                },
            );
        }
    }
    out
}

struct Ours {
    attempts: BTreeMap<(String, String, u32), TsharkAttempt>,
    report: ConnectReport,
    greeting_waits: usize,
    findings: Vec<&'static str>,
}

fn ours(path: &Path) -> Ours {
    let cap = Capture::open(path).unwrap();
    let a = analyze(&cap, &EngineOptions::default(), Everything::default);
    let mut attempts = BTreeMap::new();
    for c in &a.connections {
        let h = &c.handshake;
        let (Some(outcome), Some(isn)) = (h.outcome, h.isn) else {
            continue;
        };
        attempts.insert(
            (c.client.to_string(), c.server.to_string(), isn),
            TsharkAttempt {
                syns: h.syn_count,
                synacks: h.synack_count,
                outcome,
                connect_ns: h.connect_ns.map(|ns| ns as i64),
                answered_at_syn: h.connect_ns.map(|_| h.syns_before_answer),
                closed_waiting: None,
                greeting_after_ns: None,
            },
        );
    }
    let fr = first_reset(&a, 0);
    let findings = pcapsleuth::analysis::full_report(&a)
        .findings
        .iter()
        .map(|f| f.kind.name())
        .collect();
    Ours {
        attempts,
        report: connect_report(&a),
        greeting_waits: fr.greeting_waits.count,
        findings,
    }
}

#[test]
fn attempts_agree_with_tshark_on_every_real_capture() {
    let Some(tshark) = oracle::tshark() else {
        return;
    };
    common::each_in_parallel(common::real_captures(), |path| {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let packets = tshark_packets(&tshark, &path);
        let theirs = tshark_attempts(&packets);
        let ours = ours(&path);
        // Per attempt: SYNs, SYN-ACKs, outcome, connect time and the SYN that was answered.
        let strip = |m: &BTreeMap<(String, String, u32), TsharkAttempt>| {
            m.iter()
                .map(|(k, t)| {
                    (
                        k.clone(),
                        (
                            t.syns,
                            t.synacks,
                            t.outcome,
                            t.connect_ns,
                            t.answered_at_syn,
                        ),
                    )
                })
                .collect::<BTreeMap<_, _>>()
        };
        assert_eq!(strip(&ours.attempts), strip(&theirs), "{name}: attempts");
        // Resent SYNs: those of the attempts, and those tshark flags as retransmissions.
        let r = &ours.report;
        let resent: u32 = theirs.values().map(|t| t.syns - 1).sum();
        assert_eq!(r.retransmitted_syns, u64::from(resent), "{name}");
        let flagged = packets
            .iter()
            .filter(|p| p.syn && !p.ack && p.retransmission)
            .count();
        assert_eq!(
            r.retransmitted_syns as usize, flagged,
            "{name}: tshark's retransmitted SYNs"
        );
        let dup_synacks = packets
            .iter()
            .filter(|p| p.syn && p.ack && p.retransmission)
            .count();
        assert_eq!(
            r.duplicate_synacks as usize, dup_synacks,
            "{name}: resent SYN-ACKs"
        );
        // Attempts answered at each SYN: the counts, and their median connect times.
        let mut rounds: BTreeMap<u32, Vec<i64>> = BTreeMap::new();
        for t in theirs.values() {
            if let (Some(n), Some(ns)) = (t.answered_at_syn, t.connect_ns) {
                rounds.entry(n).or_default().push(ns / 1000);
            }
        }
        assert_eq!(
            r.answered_at_syn
                .iter()
                .map(|s| (s.syn, s.count as usize))
                .collect::<Vec<_>>(),
            rounds
                .iter()
                .map(|(n, v)| (*n, v.len()))
                .collect::<Vec<_>>(),
            "{name}: attempts by the SYN answered"
        );
        for s in &r.answered_at_syn {
            let mut v = rounds[&s.syn].clone();
            v.sort_unstable();
            let median = v[(v.len() - 1) / 2] as f64;
            assert!(
                (s.connect_us.p50 - median).abs() <= median * 0.01 + 1.0,
                "{name}: median connect at SYN {}: {} vs tshark {median}",
                s.syn,
                s.connect_us.p50
            );
        }
        // The humps of the connect-time distribution: each is made of whole clusters of tshark's
        // connect times, never part of one. A cluster is the connects answered at the same SYN (a SYN
        // round: with linear 1 s retransmission the 3rd and 4th SYNs' answers at ~2 s and ~3 s are less
        // than a factor 2 apart, yet two humps) whose times are less than a factor 2 apart.
        let mut by_round: BTreeMap<u32, Vec<f64>> = BTreeMap::new();
        for t in theirs.values() {
            if let (Some(n), Some(ns)) = (t.answered_at_syn, t.connect_ns) {
                by_round.entry(n).or_default().push(ns as f64 / 1e3);
            }
        }
        let mut clusters: Vec<Vec<f64>> = Vec::new();
        for mut times in by_round.into_values() {
            times.sort_by(f64::total_cmp);
            let first = clusters.len();
            for t in times {
                match clusters[first..].last_mut() {
                    Some(c) if t < 2.0 * c.last().unwrap().max(1.0) => c.push(t),
                    _ => clusters.push(vec![t]),
                }
            }
        }
        let mut covered = 0;
        for m in &r.modes {
            let inside: usize = clusters
                .iter()
                .filter(|c| {
                    let (lo, hi) = (c[0], *c.last().unwrap());
                    lo >= m.lo_us - 1.0 && hi <= m.hi_us + 1.0
                })
                .map(Vec::len)
                .sum();
            assert_eq!(inside as u64, m.count, "{name}: hump at {} µs", m.center_us);
            covered += inside;
        }
        assert_eq!(
            covered as u64, r.connect_us.count,
            "{name}: every connect time in a hump"
        );
        // Clients that gave up waiting for a greeting (a server that speaks first), and late greetings.
        let waits = theirs
            .values()
            .filter_map(|t| t.closed_waiting)
            .filter(|&(ns, greeted_after)| ns >= 1_000_000_000 || greeted_after)
            .count();
        assert_eq!(
            ours.greeting_waits, waits,
            "{name}: closes while waiting for a greeting"
        );
        let late = theirs
            .values()
            .filter(|t| t.greeting_after_ns.is_some_and(|ns| ns >= 100_000_000))
            .count() as u64;
        assert_eq!(
            r.late_greetings.iter().map(|g| g.count).sum::<u64>(),
            late,
            "{name}: late greetings"
        );
        // Nothing of the kind where tshark shows no such trouble, and each kind where it does.
        let has = |kind: &str| ours.findings.contains(&kind);
        let dropped = theirs
            .values()
            .any(|t| t.syns > 1 || t.outcome == AttemptOutcome::Unanswered);
        assert_eq!(has("syn_drops"), dropped, "{name}: syn_drops finding");
        let refused = theirs
            .values()
            .any(|t| t.outcome == AttemptOutcome::Refused);
        assert_eq!(
            has("connect_refused"),
            refused,
            "{name}: connect_refused finding"
        );
        assert_eq!(has("late_accept"), late > 0, "{name}: late_accept finding");
        assert_eq!(
            has("greeting_wait"),
            waits > 0,
            "{name}: greeting_wait finding"
        );
    });
}

/// The report's findings on one capture, by kind: (summary, frames).
fn findings(path: &Path) -> BTreeMap<&'static str, (String, Vec<u64>)> {
    let cap = Capture::open(path).unwrap();
    let a = analyze(&cap, &EngineOptions::default(), Everything::default);
    pcapsleuth::analysis::full_report(&a)
        .findings
        .into_iter()
        .map(|f| (f.kind.name(), (f.summary, f.frames)))
        .collect()
}

/// Lines of a lab recording's client log (fixtures/lab/<name>.clients.log) that contain `what`.
fn clients_saying(name: &str, what: &str) -> usize {
    let log = common::fixture(&format!("lab/{name}.clients.log"));
    std::fs::read_to_string(&log)
        .unwrap_or_else(|e| panic!("{}: {e}", log.display()))
        .lines()
        .filter(|l| l.contains(what))
        .count()
}

/// The burst against a frozen accept loop with a small back_log: the report names the full listen queue
/// for the retransmitted SYNs, the full accept queue for the client that gave up waiting for its greeting
/// (as many as the clients that printed ERROR 2013), and the late accepts; nothing was refused.
#[test]
fn a_connect_burst_at_a_full_listen_queue_is_named_so() {
    let path = common::fixture("connect-burst.pcap");
    let f = findings(&path);
    let (drops, _) = &f["syn_drops"];
    assert!(
        drops.contains("waited for a retransmitted SYN")
            && drops.contains("its listen queue was full"),
        "{drops}"
    );
    let (waits, frames) = &f["greeting_wait"];
    assert!(waits.contains("its accept queue was full"), "{waits}");
    let gave_up = clients_saying(
        "connect-burst",
        "ERROR 2013 (HY000): Lost connection to server at 'handshake: reading initial communication packet'",
    );
    assert_eq!(gave_up, 1);
    assert_eq!(frames.len(), gave_up, "{waits}: {frames:?}");
    // One client gave up: the sentence says so in the singular.
    assert!(waits.starts_with(&format!(
        "{gave_up} connection was closed by the client while waiting"
    )));
    assert!(f["late_accept"].0.contains("accepted them late"));
    assert!(!f.contains_key("connect_refused"));
    let r = ours(&path).report;
    assert_eq!(r.attempts, 45);
    assert_eq!(r.established, 45);
}

/// Connects while the server was down and to an address where no host answers: each refusal is one the
/// client reported (ERROR 2002 ... (115): connection refused), each unanswered attempt one that timed out
/// (ERROR 2002 ... (110)), and the report says the port had no listener and the host was unreachable.
#[test]
fn refused_and_unanswered_connects_are_named_so() {
    let path = common::fixture("connect-refused.pcap");
    let f = findings(&path);
    let r = ours(&path).report;
    let refused = clients_saying(
        "connect-refused",
        "ERROR 2002 (HY000): Can't connect to server on '10.77.0.1' (115)",
    );
    assert_eq!(refused, 3);
    assert_eq!(r.refused, refused as u64);
    let (summary, frames) = &f["connect_refused"];
    assert!(
        summary.starts_with(&format!(
            "{refused} connects to 10.77.0.1:3306 were refused"
        )) && summary.contains("nothing listened on the port"),
        "{summary}"
    );
    assert_eq!(frames[..2], [15, 16]);
    let timed_out = clients_saying(
        "connect-refused",
        "ERROR 2002 (HY000): Can't connect to server on '10.77.0.9' (110)",
    );
    assert_eq!(timed_out, 2);
    assert_eq!(r.unanswered, timed_out as u64);
    let (summary, _) = &f["syn_drops"];
    assert!(
        summary.starts_with(&format!(
            "{timed_out} of {timed_out} connects to 10.77.0.9:3306 were never answered"
        )) && summary.contains("the host is down or unreachable"),
        "{summary}"
    );
    for kind in ["greeting_wait", "late_accept"] {
        assert!(!f.contains_key(kind), "{kind}: {:?}", f[kind]);
    }
}

/// Two "hosts" behind one address reusing client ports, the second with an older TCP timestamp: the
/// server's TIME_WAIT rejects its SYN (PAWS) with a plain ACK of the old connection, which the client
/// resets before resending the SYN. Each plain ACK is one the client reset (tshark's RSTs), and the report
/// names TIME_WAIT and PAWS as the cause, not a full listen queue.
#[test]
fn syns_rejected_by_a_time_wait_are_named_paws() {
    let Some(tshark) = oracle::tshark() else {
        return;
    };
    let path = common::fixture("connect-paws.pcap");
    let client_resets = tshark_packets(&tshark, &path)
        .iter()
        .filter(|p| p.rst && p.dst.ends_with(":3306"))
        .count();
    assert_eq!(client_resets, 2);
    let r = ours(&path).report;
    let [drops] = &r.drops[..] else {
        panic!("one server: {:?}", r.drops);
    };
    assert_eq!(drops.acks_to_syn, client_resets as u64);
    assert_eq!(drops.delayed, client_resets as u64);
    assert!(
        drops.causes.iter().all(|(c, _)| c.name() == "time_wait"),
        "{:?}",
        drops.causes
    );
    let f = findings(&path);
    let (summary, _) = &f["syn_drops"];
    assert!(
        summary.contains("a TIME_WAIT rejected it (PAWS)") && !summary.contains("listen queue"),
        "{summary}"
    );
    for kind in ["greeting_wait", "late_accept", "connect_refused"] {
        assert!(!f.contains_key(kind), "{kind}: {:?}", f[kind]);
    }
}
