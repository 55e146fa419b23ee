//! `pcapsleuth compare` on the lab's two-point captures (fixtures/README.md says what is true in them): the
//! verdict both ways, the transactions named with their frames in both captures, a side read from several
//! files, a clock offset given, and the arguments refused. The records the comparison rests on are checked
//! against tshark, request by request, in `crates/analysis/tests/compare_lab.rs`.

use crate::common;

use std::path::Path;
use std::process::Command;

use serde_json::Value;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn pair(name: &str) -> (String, String) {
    (
        s(&common::fixture(&format!("{name}.client.pcap"))).to_string(),
        s(&common::fixture(&format!("{name}.server.pcap"))).to_string(),
    )
}

/// `[kind, client request frame, client response frame, server request frame, server response frame]`.
fn notables(v: &Value) -> Vec<String> {
    v["notable"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            format!(
                "{} client {}->{} server {}->{}",
                n["kind"].as_str().unwrap(),
                n["client_capture"]["request_frame"],
                n["client_capture"]["response_frame"],
                n["server_capture"]["request_frame"],
                n["server_capture"]["response_frame"]
            )
        })
        .collect()
}

#[test]
fn the_path_took_the_time_behind_the_packet_rate_cap() {
    let (client, server) = pair("two-point-path");
    let text = common::text(&["compare", &client, &server]);
    // The verdict first, in words a person reads at a glance.
    assert!(
        common::flat(&text).starts_with("The path took the time: the server answered in 130 µs (p50) while the client waited 3.97 ms (p50); on average the path added 9.88 ms of the client's 10 ms (98%), mostly on the server->client side"),
        "{text}"
    );
    // Then the percentiles side by side, the humps side by side, and the notable transactions with their
    // frames in both captures.
    for line in [
        "            client RT      server RT           path   request path  response path",
        "   p50        3.97 ms         130 µs        3.87 ms         176 µs         3.7 ms",
        "   max         302 ms        1.28 ms         301 ms         252 µs         301 ms",
        "the path's share of the client's time: 98%",
        "  ~3.93 ms     54%        123 µs       3.8 ms       0%    ~130 µs     100%",
        "  ~14 ms       36%        149 µs      13.8 ms       0%",
        "  1. response_retransmitted at 2026-11-25 17:10:37.501257 UTC: client frames 842 -> 923, server frames 865 -> 876;\n         client RT 49.3 ms, server RT 200 µs",
    ] {
        assert!(text.contains(&format!("{line}\n")), "no line {line:?} in\n{text}");
    }
    let verdict_at = text.find("The path took").unwrap();
    let percentiles_at = text.find("client RT      server RT").unwrap();
    let humps_at = text.find("Response-time humps").unwrap();
    let notable_at = text.find("Notable transactions").unwrap();
    assert!(verdict_at < percentiles_at && percentiles_at < humps_at && humps_at < notable_at);

    let v = common::json(&["compare", "--json", &client, &server]);
    assert_eq!(
        (
            v["matched"].as_u64(),
            v["unmatched_client"].as_u64(),
            v["unmatched_server"].as_u64()
        ),
        (Some(798), Some(0), Some(0))
    );
    for key in ["client_rt_us", "server_rt_us", "path_us"] {
        for stat in ["count", "mean", "p50", "p95", "p99", "max"] {
            assert!(v[key][stat].is_number(), "{key}.{stat}: {}", v[key]);
        }
    }
    assert_eq!(v["client_rt_us"]["max"], 301_684.0);
    assert_eq!(v["server_rt_us"]["p50"], 130.0);
    assert!((v["path_share"].as_f64().unwrap() - 0.984).abs() < 0.0005);
    assert!(
        v["clock_offset_us"].as_f64().unwrap().abs()
            <= v["clock"]["uncertainty_us"].as_f64().unwrap()
    );
    assert!(v["per_interval"].as_array().is_some_and(|r| r.len() >= 2));
    assert_eq!(
        notables(&v),
        [
            "response_retransmitted client 842->923 server 865->876",
            "response_retransmitted client 2551->3059 server 2584->2595",
            "response_retransmitted client 3056->3444 server 3097->3108",
        ]
    );
    assert!(common::flat(&text).contains(v["verdict"].as_str().unwrap()));
}

#[test]
fn the_server_took_the_time_when_it_slept() {
    let (client, server) = pair("two-point-slow-server");
    let text = common::text(&["compare", &client, &server]);
    assert!(
        common::flat(&text).starts_with("The server took the time: it answered in 133 µs (p50, mean 6.02 ms) and the client waited 146 µs (p50, mean 6.03 ms); the path added 13 µs on average (0.2% of the client's time)."),
        "{text}"
    );
    assert!(!text.contains("Notable transactions"), "{text}");
    // The slow hump is the server's at both points.
    assert!(
        text.contains(
            "  ~20.3 ms     29%       20.2 ms        14 µs       0%    ~20.2 ms     29%\n"
        ),
        "{text}"
    );
    let v = common::json(&["compare", "--json", &client, &server]);
    assert_eq!(v["matched"], 1319);
    assert!(v["path_share"].as_f64().unwrap() < 0.003);
    assert_eq!(v["notable"].as_array().map(Vec::len), Some(0));
}

#[test]
fn requests_through_a_proxy_are_matched_by_their_payload() {
    let (client, server) = pair("two-point-proxy");
    let v = common::json(&["compare", "--json", &client, &server]);
    assert_eq!(
        (
            v["matched"].as_u64(),
            v["matched_by_payload"].as_u64(),
            v["connections"]["paired"].as_u64()
        ),
        (Some(1336), Some(1336), Some(4))
    );
    assert!(v["verdict"]
        .as_str()
        .unwrap()
        .starts_with("The server took the time"));
}

/// The client capture cut in pieces (as `tcpdump -C` leaves it) and given with `--client`: the same
/// comparison, with each frame named in the piece that holds it.
#[test]
fn a_side_read_from_several_files_gives_the_same_comparison() {
    let (client, server) = pair("two-point-path");
    let dir = tempfile::tempdir().unwrap();
    common::text(&["split", &client, "--packets", "1500", "-o", s(dir.path())]);
    let mut pieces: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| s(&e.unwrap().path()).to_string())
        .collect();
    pieces.sort();
    assert!(pieces.len() >= 3, "{pieces:?}");
    let mut args = vec!["compare", "--json", "--client"];
    args.extend(pieces.iter().map(String::as_str));
    args.extend(["--server", &server]);
    let cut = common::json(&args);
    let whole = common::json(&["compare", "--json", &client, &server]);
    for key in [
        "matched",
        "client_rt_us",
        "server_rt_us",
        "path_us",
        "path_share",
        "clock",
        "verdict",
    ] {
        assert_eq!(cut[key], whole[key], "{key}");
    }
    assert_eq!(notables(&cut), notables(&whole));
    // Frames 1-1500 are the first piece, 3001-4500 the third.
    let first = &cut["notable"][0]["client_capture"];
    assert_eq!(first["response_frame"], 923);
    assert_eq!(first["response_file"].as_str(), Some(pieces[0].as_str()));
    let third = &cut["notable"][2]["client_capture"];
    assert_eq!(third["response_frame"], 3444);
    assert_eq!(third["response_file_frame"], 3444 - 3000);
    assert_eq!(third["response_file"].as_str(), Some(pieces[2].as_str()));
    assert_eq!(
        cut["client_capture"]["files"].as_array().map(Vec::len),
        Some(pieces.len())
    );
    // In text too: `3444 (PIECE #444)`.
    let mut args = vec!["compare", "--client"];
    args.extend(pieces.iter().map(String::as_str));
    args.extend(["--server", &server]);
    let text = common::flat(&common::text(&args));
    assert!(
        text.contains(&format!(
            "client frames 3056 ({} #56) -> 3444 ({} #444), server frames 3097 -> 3108",
            pieces[2], pieces[2]
        )),
        "{text}"
    );
}

#[test]
fn a_clock_offset_given_replaces_the_estimate() {
    let (client, server) = pair("two-point-path");
    let v = common::json(&["compare", "--json", "--clock-offset", "0", &client, &server]);
    assert_eq!(v["clock"]["basis"], "given");
    assert_eq!(v["clock_offset_us"], 0.0);
    // What needs no clock does not change.
    let estimated = common::json(&["compare", "--json", &client, &server]);
    assert_eq!(v["path_us"], estimated["path_us"]);
    let text = common::text(&["compare", "--clock-offset=-2.5ms", &client, &server]);
    assert!(
        text.contains("clocks: server - client = -2.5 ms (given)\n"),
        "{text}"
    );
}

#[test]
fn compare_needs_both_captures() {
    let (client, server) = pair("two-point-path");
    for args in [
        vec!["compare", client.as_str()],
        vec!["compare", "--client", client.as_str()],
        vec![
            "compare",
            client.as_str(),
            server.as_str(),
            "--server",
            server.as_str(),
        ],
        vec![
            "compare",
            client.as_str(),
            server.as_str(),
            "--clock-offset",
            "soon",
        ],
        vec!["compare", client.as_str(), "/nonexistent/server.pcap"],
    ] {
        let o = Command::new(common::bin()).args(&args).output().unwrap();
        assert_eq!(
            o.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(o.stdout.is_empty(), "{args:?}");
    }
}
