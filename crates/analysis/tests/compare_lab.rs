//! `compare` on the lab's two-point captures (fixtures/README.md says what is true in them), with the
//! exchanges the engine gives ([`Exchanges`]): the verdict, the transactions named, the clock offset and the
//! proxy's pairing agree with what was checked by hand.
//!
//! The engine's records are checked against tshark's, transaction by transaction, on every file of the three
//! pairs (the matching done by hand, on every request rather than on a sample): for each MySQL command tshark
//! reports, the request's first segment (4-tuple, raw sequence number, command, length, statement), and the
//! server's next segments with payload up to the connection's next request (at the server the first
//! transmission of each, at the client every arrival: a resent segment there fills a hole).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use pcapsleuth_analysis::{
    analyze, compare, request_hash, CaptureSpan, CompareOptions, Comparison, EngineOptions,
    Exchange, Exchanges, Seen,
};
use pcapsleuth_capture::Capture;
use pcapsleuth_mysql::Command;
use pcapsleuth_testkit::oracle::{self, Oracle, Tshark};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures")
        .join(name)
}

/// Which capture point a file was taken at.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Point {
    Client,
    Server,
}

/// The lab pairs: name, and the server port at the client (the proxy's).
const PAIRS: [(&str, u16); 3] = [
    ("two-point-path", 3306),
    ("two-point-slow-server", 3306),
    ("two-point-proxy", 6033),
];

/// `1795626637.032807000` -> ns.
fn ns(epoch: &str) -> i64 {
    let (s, frac) = epoch.split_once('.').unwrap_or((epoch, "0"));
    let frac = format!("{frac:0<9}");
    s.parse::<i64>().unwrap() * 1_000_000_000 + frac[..9].parse::<i64>().unwrap()
}

/// The engine's exchanges of `file`, and the span of its packets.
fn engine(file: &Path) -> (Vec<Exchange>, CaptureSpan) {
    let cap = Capture::open(file).unwrap();
    let run = analyze(&cap, &EngineOptions::default(), Exchanges::default);
    let t = &run.capture.timeline;
    let span = CaptureSpan {
        first_ns: t.body_first.unwrap().0,
        last_ns: t.body_last.unwrap().0,
    };
    (run.output, span)
}

/// The engine's exchanges of `client` and `server`, and their comparison.
fn engine_compare(client: &Path, server: &Path) -> (Vec<Exchange>, Vec<Exchange>, Comparison) {
    let (c, client_span) = engine(client);
    let (s, server_span) = engine(server);
    let opts = CompareOptions {
        client_span: Some(client_span),
        server_span: Some(server_span),
        ..CompareOptions::default()
    };
    let cmp = compare(&c, &s, &opts);
    (c, s, cmp)
}

/// The engine's comparison of the lab pair `name` (`fixtures/NAME.client.pcap`, `fixtures/NAME.server.pcap`).
fn lab_pair(name: &str) -> (Vec<Exchange>, Vec<Exchange>, Comparison) {
    engine_compare(
        &fixture(&format!("{name}.client.pcap")),
        &fixture(&format!("{name}.server.pcap")),
    )
}

/// The exchanges of `file` as tshark shows them (see the module documentation).
fn tshark_exchanges(tshark: &Tshark, file: &Path, server_port: u16, point: Point) -> Vec<Exchange> {
    let decode_as = format!("tcp.port=={server_port},mysql");
    let mut args: Vec<String> = [
        "-r",
        file.to_str().unwrap(),
        "-d",
        &decode_as,
        "-T",
        "fields",
    ]
    .map(String::from)
    .to_vec();
    args.extend(["-E", "separator=\t", "-E", "occurrence=f"].map(String::from));
    for field in [
        "frame.number",
        "frame.time_epoch",
        "ip.src",
        "tcp.srcport",
        "ip.dst",
        "tcp.dstport",
        "tcp.stream",
        "tcp.seq_raw",
        "tcp.len",
        "mysql.command",
        "tcp.analysis.retransmission",
        "mysql.query",
    ] {
        args.extend(["-e".to_string(), field.to_string()]);
    }
    let mut out: Vec<Exchange> = Vec::new();
    let mut current: HashMap<u64, usize> = HashMap::new();
    for line in tshark.lines(&args) {
        let f: Vec<&str> = line.split('\t').collect();
        let (frame, ts) = (f[0].parse().unwrap(), ns(f[1]));
        let (sport, dport): (u16, u16) = (f[3].parse().unwrap(), f[5].parse().unwrap());
        let stream: u64 = f[6].parse().unwrap();
        let len: u32 = f[8].parse().unwrap_or(0);
        let resent = !f[10].is_empty();
        if len == 0 {
            continue;
        }
        if dport == server_port && !resent && !f[9].is_empty() {
            let command = Command::from_byte(f[9].parse().unwrap());
            let statement = (!f[11].is_empty()).then(|| f[11].to_string());
            current.insert(stream, out.len());
            out.push(Exchange {
                client: format!("{}:{sport}", f[2]).parse().unwrap(),
                server: format!("{}:{dport}", f[4]).parse().unwrap(),
                connection: stream,
                request_seq: Some(f[7].parse().unwrap()),
                // One MySQL packet in one segment: its length on the wire is the segment's.
                request_hash: request_hash(command, u64::from(len), statement.as_deref()),
                command,
                statement: statement.map(String::into_boxed_str),
                request: Seen { frame, ts_ns: ts },
                first_response: None,
                last_response: None,
                response_retransmitted: false,
            });
        } else if sport == server_port {
            let Some(&i) = current.get(&stream) else {
                continue;
            };
            let e = &mut out[i];
            e.response_retransmitted |= resent;
            if resent && point == Point::Server {
                continue; // the server's answer is its first transmission
            }
            let seen = Seen { frame, ts_ns: ts };
            e.first_response.get_or_insert(seen);
            e.last_response = Some(seen);
        }
    }
    out
}

/// Each record with its connection numbered by order of first appearance (the engine numbers a connection
/// by its first frame, tshark by its stream index), in order of the request's frame.
fn numbered(mut records: Vec<Exchange>) -> Vec<Exchange> {
    records.sort_by_key(|e| e.request.frame);
    let mut numbers: HashMap<u64, u64> = HashMap::new();
    for e in &mut records {
        let next = numbers.len() as u64;
        e.connection = *numbers.entry(e.connection).or_insert(next);
    }
    records
}

#[test]
fn the_engine_gives_the_exchanges_tshark_shows_on_every_lab_file() {
    let Some(tshark) = oracle::tshark() else {
        return;
    };
    let mut failures = Vec::new();
    for (name, client_port) in PAIRS {
        for (point, port) in [(Point::Client, client_port), (Point::Server, 3306)] {
            let file = fixture(&format!(
                "{name}.{}.pcap",
                if point == Point::Client {
                    "client"
                } else {
                    "server"
                }
            ));
            let want = numbered(tshark_exchanges(&tshark, &file, port, point));
            let got = numbered(engine(&file).0);
            assert!(
                want.len() > 700,
                "{}: {} requests",
                file.display(),
                want.len()
            );
            let differing: Vec<String> = want
                .iter()
                .zip(&got)
                .filter(|(w, g)| w != g)
                .map(|(w, g)| format!("  tshark {w:?}\n  engine {g:?}"))
                .collect();
            if !differing.is_empty() || want.len() != got.len() {
                failures.push(format!(
                    "{name} ({point:?}): {} requests by tshark, {} by the engine, {} differ:\n{}",
                    want.len(),
                    got.len(),
                    differing.len(),
                    differing.join("\n")
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Matched (by sequence number, by payload), unmatched at the client, at the server.
fn matching(cmp: &Comparison) -> [u64; 5] {
    [
        cmp.matched,
        cmp.matched_by_sequence,
        cmp.matched_by_payload,
        cmp.unmatched_client,
        cmp.unmatched_server,
    ]
}

#[test]
fn the_path_took_the_time_behind_the_packet_rate_cap() {
    let (_, _, cmp) = lab_pair("two-point-path");
    // 794 queries and 4 COM_QUIT, all with the same 4-tuple and sequence number at both points.
    assert_eq!(matching(&cmp), [798, 798, 0, 0, 0]);
    assert_eq!(
        (
            cmp.server_rt_us.count,
            cmp.server_rt_us.p50,
            cmp.server_rt_us.max
        ),
        (794, 130.0, 1284.0)
    );
    assert_eq!(
        (
            cmp.client_rt_us.p50,
            cmp.client_rt_us.p95,
            cmp.client_rt_us.max
        ),
        (3967.0, 24120.0, 301684.0)
    );
    assert!(
        (cmp.path_share.unwrap() - 0.984).abs() < 0.0005,
        "{:?}",
        cmp.path_share
    );
    assert!(cmp.verdict.starts_with("The path took the time: the server answered in 130 µs (p50) while the client waited 3.97 ms (p50)"), "{}", cmp.verdict);
    assert!(
        cmp.verdict.contains("mostly on the server->client side"),
        "{}",
        cmp.verdict
    );
    // The three responses resent on the way, with their frames in both files.
    let named: Vec<String> = cmp
        .notable
        .iter()
        .map(|n| {
            let (c, s) = (&n.client_capture, n.server_capture.as_ref().unwrap());
            format!(
                "{:?}: client {} -> {:?}, server {} -> {:?}",
                n.kind, c.request_frame, c.response_frame, s.request_frame, s.response_frame
            )
        })
        .collect();
    assert_eq!(
        named,
        [
            "ResponseRetransmitted: client 842 -> Some(923), server 865 -> Some(876)",
            "ResponseRetransmitted: client 2551 -> Some(3059), server 2584 -> Some(2595)",
            "ResponseRetransmitted: client 3056 -> Some(3444), server 3097 -> Some(3108)",
        ]
    );
    // One clock: the true offset 0 lies within the estimate's bound.
    let (offset, bound) = (
        cmp.clock_offset_us.unwrap(),
        cmp.clock.uncertainty_us.unwrap(),
    );
    assert!(offset.abs() <= bound, "{offset} ± {bound}");
}

#[test]
fn the_server_took_the_time_when_it_slept() {
    let (_, _, cmp) = lab_pair("two-point-slow-server");
    assert_eq!(matching(&cmp), [1319, 1319, 0, 0, 0]);
    assert_eq!((cmp.server_rt_us.p50, cmp.client_rt_us.p50), (133.0, 146.0));
    assert!(cmp.path_share.unwrap() < 0.003, "{:?}", cmp.path_share);
    assert!(
        cmp.verdict.starts_with("The server took the time"),
        "{}",
        cmp.verdict
    );
    assert!(cmp.notable.is_empty(), "{:?}", cmp.notable);
    let slow = cmp.humps.client.last().unwrap();
    assert!(
        (slow.server_rt_p50_us - slow.mode.center_us).abs() < 100.0,
        "{slow:?}"
    );
}

#[test]
fn requests_through_a_proxy_are_matched_by_their_payload() {
    let (client, server, cmp) = lab_pair("two-point-proxy");
    assert_eq!(matching(&cmp), [1336, 0, 1336, 0, 0]);
    assert_eq!(
        (
            cmp.connections.paired,
            cmp.connections.client_only,
            cmp.connections.server_only
        ),
        (4, 0, 0)
    );
    // The connections as paired by hand (their lists of request payloads are equal).
    let mut pairs: Vec<(u16, u16)> = cmp
        .pairs
        .iter()
        .map(|p| (client[p.client].client.port, server[p.server].client.port))
        .collect();
    pairs.sort_unstable();
    pairs.dedup();
    assert_eq!(
        pairs,
        vec![
            (56550, 35508),
            (56552, 35506),
            (56560, 35514),
            (56574, 35522)
        ]
    );
    let first = &cmp.pairs[0];
    assert_eq!(
        (
            client[first.client].request.frame,
            server[first.server].request.frame
        ),
        (33, 35)
    );
    assert!(
        cmp.verdict.starts_with("The server took the time"),
        "{}",
        cmp.verdict
    );
    assert!(
        (cmp.path_share.unwrap() - 0.0218).abs() < 0.0005,
        "{:?}",
        cmp.path_share
    );
}

#[test]
fn a_client_clock_12_s_ahead_is_found_within_its_bound() {
    let Some(editcap) = oracle::require(Oracle::Editcap) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let shifted = dir.path().join("client-clock-ahead.pcap");
    let original = fixture("two-point-path.client.pcap");
    editcap.stdout([
        "-t",
        "12.345678",
        original.to_str().unwrap(),
        shifted.to_str().unwrap(),
    ]);
    let server = fixture("two-point-path.server.pcap");
    let (_, _, same) = engine_compare(&original, &server);
    let (_, _, cmp) = engine_compare(&shifted, &server);
    let (offset, bound) = (
        cmp.clock_offset_us.unwrap(),
        cmp.clock.uncertainty_us.unwrap(),
    );
    assert!((offset + 12_345_678.0).abs() <= bound, "{offset} ± {bound}");
    assert_eq!(offset, same.clock_offset_us.unwrap() - 12_345_678.0);
    assert!(cmp.clock.consistent && cmp.clock.drift_ppm.is_none());
    // What needs no clock is unchanged; the request and response paths are those of the unshifted pair.
    assert_eq!(
        (cmp.matched, cmp.path_us, cmp.path_share),
        (same.matched, same.path_us, same.path_share)
    );
    assert_eq!(
        (cmp.request_path_us, cmp.response_path_us),
        (same.request_path_us, same.response_path_us)
    );
    assert_eq!(cmp.verdict, same.verdict);
}
