//! `pcapsleuth compare` lines up closes and unanswered requests as well as answers: on the lab's
//! proxy-timeout captures (HAProxy's `timeout server 3s` cut `select sleep(5)` at 3.0015 s, seen at both
//! ends at once) neither end closed and a device in between closed both sides; on forged-rst (a firewall's
//! `REJECT --reject-with tcp-reset` in the server's name) the RST exists only at the client point; on the
//! two-point captures whose connections ended normally there is nothing to say. fixtures/README.md says
//! what is true in each.

use crate::common;

use std::path::Path;

use pcapsleuth_testkit::oracle;
use serde_json::Value;

fn pair(name: &str) -> (String, String) {
    let f = |side: &str| {
        common::fixture(&format!("{name}.{side}.pcap"))
            .to_str()
            .unwrap()
            .to_string()
    };
    (f("client"), f("server"))
}

fn frames(v: &Value) -> Vec<u64> {
    v["frames"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_u64().unwrap())
        .collect()
}

#[test]
fn a_proxy_timeout_is_neither_ends_close() {
    let (client, server) = pair("proxy-timeout");
    let v = common::json(&["compare", "--json", &client, &server]);
    let e = &v["endings"];
    assert_eq!(
        e["counts"],
        serde_json::json!({
            "device_closed_both": 1,
            "close_not_sent": 0,
            "close_not_received": 0,
            "answered_at_neither": 1
        }),
        "{e:#}"
    );
    let notable = e["notable"].as_array().unwrap();
    let (request, device) = (&notable[0], &notable[1]);

    // The sleep, answered at neither point, cut off at each by the close in the other end's name.
    assert_eq!(request["kind"], "answered_at_neither");
    assert_eq!(request["request"], "select sleep(5)");
    assert_eq!(frames(&request["client_capture"]), [210, 1489]);
    assert_eq!(frames(&request["server_capture"]), [212, 1493]);
    let waited: Vec<f64> = request["waited_s"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_f64().unwrap())
        .collect();
    assert!((waited[0] - 3.001533).abs() < 1e-6, "{waited:?}");
    assert!((waited[1] - 3.001591).abs() < 1e-6, "{waited:?}");

    // The close: the client's view shows its server side closing, the server's its client side, at the
    // same moment; the server never sent a FIN or RST.
    assert_eq!(device["kind"], "device_closed_both");
    assert_eq!(device["client_capture"]["server"], "10.77.1.1:3306");
    assert_eq!(device["server_capture"]["client"], "10.77.0.254:45340");
    assert_eq!(frames(&device["client_capture"]), [1489, 1490]);
    assert_eq!(frames(&device["server_capture"]), [1493, 1494]);
    let cause = &device["cause"];
    assert_eq!(cause["kind"], "path_device", "{cause:#}");
    assert_eq!(cause["sender"], "path");
    assert_eq!(cause["setting"], "proxy_timeout");
    assert_eq!(cause["confidence"], "likely");
    assert!((cause["wait_s"].as_f64().unwrap() - 3.001533).abs() < 1e-6);
    let summary = cause["summary"].as_str().unwrap();
    assert!(
        summary.starts_with("neither end closed: a device in between (the client talks to 10.77.1.1:3306, the server sees the connection from 10.77.0.254:45340) closed both sides after `select sleep(5)` had waited 3.002 s"),
        "{summary}"
    );

    let text = common::flat(&common::text(&["compare", &client, &server]));
    for said in [
        "Closes: neither end closed one connection: a device in between closed both sides; 1 request answered at neither point.",
        "device_closed_both at 2026-12-06 12:57:02.452595 UTC: client 10.77.1.2:51052 -> 10.77.1.1:3306, frames 1489, 1490; server 10.77.0.254:45340 -> 10.77.0.1:3306, frames 1493, 1494",
        "cause (likely): neither end closed: a device in between",
        "the device's timeout (3 s: HAProxy's `timeout server`",
    ] {
        assert!(text.contains(said), "no {said:?} in {text}");
    }

    // What tshark sees: the client capture's first close is 10.77.1.1's FIN, frame 1489; the server
    // capture has no FIN or RST from 10.77.0.1 on the sleep's connection, only the proxy side's.
    let Some(tshark) = oracle::tshark() else {
        return;
    };
    let closes = |file: &str, filter: &str| {
        tshark.lines([
            "-r",
            file,
            "-Y",
            filter,
            "-T",
            "fields",
            "-e",
            "frame.number",
        ])
    };
    assert_eq!(
        closes(
            &client,
            "(tcp.flags.fin==1 || tcp.flags.reset==1) && tcp.port==51052"
        ),
        ["1489", "1490"]
    );
    assert_eq!(
        closes(
            &client,
            "ip.src==10.77.1.1 && tcp.flags.fin==1 && tcp.port==51052"
        ),
        ["1489"]
    );
    assert_eq!(
        closes(
            &server,
            "(tcp.flags.fin==1 || tcp.flags.reset==1) && tcp.port==45340"
        ),
        ["1493", "1494"]
    );
    assert!(closes(
        &server,
        "ip.src==10.77.0.1 && (tcp.flags.fin==1 || tcp.flags.reset==1) && tcp.port==45340"
    )
    .is_empty());
}

#[test]
fn a_forged_reset_exists_only_at_the_client_point() {
    let (client, server) = pair("forged-rst");
    let v = common::json(&["compare", "--json", &client, &server]);
    let e = &v["endings"];
    assert_eq!(
        e["counts"],
        serde_json::json!({
            "device_closed_both": 0,
            "close_not_sent": 1,
            "close_not_received": 0,
            "answered_at_neither": 0
        }),
        "{e:#}"
    );
    let n = &e["notable"][0];
    assert_eq!(n["kind"], "close_not_sent");
    assert_eq!(frames(&n["client_capture"]), [38]);
    assert!(frames(&n["server_capture"]).is_empty());
    let cause = &n["cause"];
    assert_eq!(
        (&cause["kind"], &cause["sender"]),
        (&Value::from("path_device"), &Value::from("path"))
    );
    assert!(
        cause["summary"].as_str().unwrap().starts_with(
            "this RST from 10.77.0.1:3306 exists only at the client point: the server never sent it; likely a device on the path"
        ),
        "{cause:#}"
    );
    // It answered `select 2`, which the server never saw (compare's own notable says so too).
    assert_eq!(cause["evidence"][1]["frames"][0], 37);
    assert_eq!(v["notable"][0]["kind"], "request_never_seen");
    let text = common::flat(&common::text(&["compare", &client, &server]));
    assert!(
        text.contains("Closes: 1 FIN or RST arrived in the name of a side that never sent it (a device on the path did)."),
        "{text}"
    );

    let Some(tshark) = oracle::tshark() else {
        return;
    };
    assert_eq!(tshark.count(Path::new(&client), "tcp.flags.reset==1"), 1);
    assert_eq!(tshark.count(Path::new(&server), "tcp.flags.reset==1"), 0);
}

#[test]
fn connections_that_ended_alike_at_both_points_are_not_notable() {
    for name in ["two-point-path", "two-point-proxy", "two-point-slow-server"] {
        let (client, server) = pair(name);
        let v = common::json(&["compare", "--json", &client, &server]);
        let e = &v["endings"];
        assert_eq!(e["compared"], 4, "{name}: {e:#}");
        assert_eq!(e["closes_matched"], 8, "{name}: {e:#}");
        assert!(e["notable"].as_array().unwrap().is_empty(), "{name}: {e:#}");
        let text = common::text(&["compare", &client, &server]);
        assert!(!text.contains("Closes:"), "{name}: {text}");
    }
}
