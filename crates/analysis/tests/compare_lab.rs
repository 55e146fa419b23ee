//! `compare` on the lab's two-point captures (fixtures/README.md says what is true in them), with the
//! exchanges read by tshark: the verdict, the transactions named, the clock offset and the proxy's pairing
//! agree with what was checked by hand.
//!
//! tshark stands in for the producer of exchanges until the engine gives them to analyses: for each MySQL
//! command it reports, the request's first segment (4-tuple, raw sequence number, payload), and the server's
//! next segments with payload up to the connection's next request (at the server the first transmission of
//! each, at the client every arrival: a resent segment there fills a hole).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use pcapsleuth_analysis::{compare, CompareOptions, Comparison, Exchange, Seen};
use pcapsleuth_mysql::Command;
use pcapsleuth_testkit::oracle::{self, Oracle, Tshark};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures")
        .join(name)
}

/// Which capture point a file was taken at.
#[derive(Clone, Copy, PartialEq)]
enum Point {
    Client,
    Server,
}

/// `1795626637.032807000` -> ns.
fn ns(epoch: &str) -> i64 {
    let (s, frac) = epoch.split_once('.').unwrap_or((epoch, "0"));
    let frac = format!("{frac:0<9}");
    s.parse::<i64>().unwrap() * 1_000_000_000 + frac[..9].parse::<i64>().unwrap()
}

/// FNV-1a of the request's payload (as tshark prints it): equal payloads, equal hashes.
fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

fn exchanges(tshark: &Tshark, file: &Path, server_port: u16, point: Point) -> Vec<Exchange> {
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
        "tcp.payload",
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
        let resent = !f[11].is_empty();
        if len == 0 {
            continue;
        }
        if dport == server_port && !resent && !f[10].is_empty() {
            let hex: String = f[9].chars().filter(|c| *c != ':').collect();
            current.insert(stream, out.len());
            out.push(Exchange {
                client: format!("{}:{sport}", f[2]).parse().unwrap(),
                server: format!("{}:{dport}", f[4]).parse().unwrap(),
                connection: stream,
                request_seq: Some(f[7].parse().unwrap()),
                request_hash: fnv(hex.as_bytes()),
                command: Command::Query,
                statement: (!f[12].is_empty()).then(|| f[12].to_string()),
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

/// The exchanges of the lab pair `name` (`fixtures/NAME.client.pcap`, whose server port is `client_port`,
/// and `fixtures/NAME.server.pcap`).
fn lab_pair(tshark: &Tshark, name: &str, client_port: u16) -> (Vec<Exchange>, Vec<Exchange>) {
    let client = fixture(&format!("{name}.client.pcap"));
    let server = fixture(&format!("{name}.server.pcap"));
    (
        exchanges(tshark, &client, client_port, Point::Client),
        exchanges(tshark, &server, 3306, Point::Server),
    )
}

fn compare_lab_pair(tshark: &Tshark, name: &str, client_port: u16) -> Comparison {
    let (client, server) = lab_pair(tshark, name, client_port);
    compare(&client, &server, &CompareOptions::default())
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
    let Some(tshark) = oracle::tshark() else {
        return;
    };
    let cmp = compare_lab_pair(&tshark, "two-point-path", 3306);
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
    let Some(tshark) = oracle::tshark() else {
        return;
    };
    let cmp = compare_lab_pair(&tshark, "two-point-slow-server", 3306);
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
    let Some(tshark) = oracle::tshark() else {
        return;
    };
    let (client, server) = lab_pair(&tshark, "two-point-proxy", 6033);
    let cmp = compare(&client, &server, &CompareOptions::default());
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
    let Some(tshark) = oracle::tshark() else {
        return;
    };
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
    let (client, server) = lab_pair(&tshark, "two-point-path", 3306);
    let same = compare(&client, &server, &CompareOptions::default());
    let client = exchanges(&tshark, &shifted, 3306, Point::Client);
    let cmp = compare(&client, &server, &CompareOptions::default());
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
