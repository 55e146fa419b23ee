//! Replication on the wire, on the lab's captures of a MariaDB primary and its replica (fixtures/repl-*.pcap:
//! semi-synchronous, asynchronous, and a replica stopped mid-load): every figure of the `replication`
//! report is checked against an independent walk of the binlog streams (tests/oracle/binlog_walk.py,
//! which itself agrees with the primary's SHOW BINLOG EVENTS and semi-sync counters, checked here too).

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Mutex;

use pcapsleuth::analysis::{analyze, EngineOptions, MysqlStatistics};
use pcapsleuth::capture::Capture;
use pcapsleuth_testkit::oracle::{self, Oracle, Tool};
use serde_json::Value;

const CAPTURES: [&str; 3] = ["repl-semisync", "repl-async", "repl-stall"];

/// The oracle's walk of `name`'s capture, as a capture starting at `from_frame` would show it, with its
/// own checks against the primary's binary log and counters. Walked once per test process.
fn walk(python: &Tool, name: &str, from_frame: u64) -> Value {
    static WALKS: Mutex<BTreeMap<(String, u64), Value>> = Mutex::new(BTreeMap::new());
    let key = (name.to_string(), from_frame);
    if let Some(v) = WALKS.lock().unwrap().get(&key) {
        return v.clone();
    }
    let v = walk_once(python, name, from_frame);
    WALKS.lock().unwrap().insert(key, v.clone());
    v
}

fn walk_once(python: &Tool, name: &str, from_frame: u64) -> Value {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let lab = root.join("fixtures/lab");
    let out = python.stdout([
        root.join("tests/oracle/binlog_walk.py").as_os_str(),
        common::fixture(&format!("{name}.pcap")).as_os_str(),
        "--binlog-events".as_ref(),
        lab.join(format!("{name}.binlog-events.tsv")).as_os_str(),
        "--status".as_ref(),
        lab.join(format!("{name}.status.txt")).as_os_str(),
        "--from-frame".as_ref(),
        from_frame.to_string().as_ref(),
    ]);
    let v: Value = serde_json::from_str(&out).expect("the walk prints JSON");
    if from_frame == 1 {
        // The walk's truth is the primary's: every event of its binary log streamed, none made up, and
        // its own count of ACK requests and ACKs read.
        let b = &v["binlog_check"];
        assert_eq!(b["missing"], 0, "{name}: {b}");
        assert_eq!(b["problems"].as_array().unwrap().len(), 0, "{name}: {b}");
        assert!(b["rows"].as_u64().unwrap() > 2000);
        let s = &v["status_check"];
        assert_eq!(s["net_waits"], s["acks_requested"], "{name}: {s}");
        assert_eq!(s["get_ack"], s["acks_read"], "{name}: {s}");
    }
    v
}

/// Each capture's name, the walk's truth, and `pcapsleuth mysql --json` on it.
fn cases(python: &Tool) -> Vec<(&'static str, Value, Value)> {
    CAPTURES
        .iter()
        .map(|&name| {
            let f = common::fixture(&format!("{name}.pcap"));
            let ours = common::json(&["mysql", "--json", f.to_str().unwrap()]);
            (name, walk(python, name, 1), ours)
        })
        .collect()
}

/// A percentile from pcapsleuth's histogram (µs) against the exact one (ns): never below it, at most
/// one bin (0.8%) above.
fn within_resolution(ours_us: &Value, exact_ns: &Value, what: &str) {
    let (ours, exact) = (ours_us.as_f64().unwrap() * 1e3, exact_ns.as_f64().unwrap());
    assert!(
        ours >= exact - 0.5 && ours <= exact * 1.008 + 1.0,
        "{what}: {ours} ns vs exact {exact} ns"
    );
}

/// Our streams against the walk's, field by field.
fn assert_streams_agree(name: &str, ours: &[Value], truth: &[Value], whole: bool) {
    let truth: Vec<&Value> = truth
        .iter()
        .filter(|t| t["events"].as_u64() > Some(0) || t["acks"].as_u64() > Some(0))
        .collect();
    assert_eq!(ours.len(), truth.len(), "{name}: streams");
    for (o, t) in ours.iter().zip(truth) {
        let what = format!("{name} {}", o["client"]);
        for key in [
            "client",
            "server",
            "dump_frame",
            "start_file",
            "start_position",
            "gtid",
            "first_event_frame",
            "semi_sync",
            "events",
            "events_by_type",
            "bytes",
            "transactions",
            "acks_requested",
            "acks",
            "acks_unmatched",
            "acks_missing",
        ] {
            assert_eq!(o[key], t[key], "{what}: {key}");
        }
        if whole {
            assert_eq!(o["replica_server_id"], t["server_id"], "{what}");
        }
        let (a, x) = (&o["ack_latency_us"], &t["ack_latency_ns"]);
        assert_eq!(a["count"], x["count"], "{what}: ACK latencies");
        if x["count"].as_u64() > Some(0) {
            let mean_ns = a["mean"].as_f64().unwrap() * 1e3;
            assert!(
                (mean_ns - x["mean"].as_f64().unwrap()).abs() < 1.0,
                "{what}: mean"
            );
            assert_eq!(a["max"].as_f64().unwrap() * 1e3, x["max"].as_f64().unwrap());
            for p in ["p50", "p95", "p99"] {
                within_resolution(&a[p], &x[p], &format!("{what}: ACK {p}"));
            }
        }
        let stalls: Vec<&Value> = t["stalls_over_10ms"].as_array().unwrap().iter().collect();
        assert_eq!(o["ack_stalls"], stalls.len(), "{what}: stalls");
        let frames: Vec<&Value> = o["ack_stall_examples"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| &s["event_frame"])
            .collect();
        assert_eq!(
            frames,
            stalls[..stalls.len().min(10)],
            "{what}: stall frames"
        );
        let (l, x) = (&o["lag_s"], &t["lag_ns"]);
        assert_eq!(l["count"], x["count"], "{what}: lags");
        for p in ["p50", "p95", "p99"]
            .into_iter()
            .filter(|_| x["count"].as_u64() > Some(0))
        {
            let secs = serde_json::json!(l[p].as_f64().unwrap() * 1e6);
            within_resolution(&secs, &x[p], &format!("{what}: lag {p}"));
        }
    }
}

#[test]
fn every_stream_agrees_with_the_independent_walk_of_its_binlog_events() {
    let Some(python) = oracle::require(Oracle::Python3) else {
        return;
    };
    for (name, truth, ours) in cases(&python) {
        assert_streams_agree(
            name,
            ours["replication"].as_array().unwrap(),
            truth["replication"].as_array().unwrap(),
            true,
        );
    }
}

#[test]
fn requests_and_response_times_leave_the_replication_streams_out() {
    let Some(python) = oracle::require(Oracle::Python3) else {
        return;
    };
    for (name, truth, ours) in cases(&python) {
        // Every command the walk saw outside the streams (the replica's setup queries, its
        // registration and dump, sysbench's, the KILL session's), and no other: logins aside, no ACK
        // counted as a request.
        let mut commands = ours["commands"].as_object().unwrap().clone();
        commands.remove("COM_CONNECT");
        assert_eq!(
            Value::Object(commands),
            truth["requests"]["commands"],
            "{name}"
        );
        // Response times of the answered requests only: the dump is not one, and nothing is timed
        // against the events.
        let (rt, x) = (&ours["rt_us"], &truth["requests"]["rt_ns"]);
        assert_eq!(rt["count"], x["count"], "{name}");
        assert_eq!(ours["queries"], x["count"], "{name}");
        assert_eq!(
            rt["max"].as_f64().unwrap() * 1e3,
            x["max"].as_f64().unwrap()
        );
        for p in ["p50", "p95", "p99"] {
            within_resolution(&rt[p], &x[p], &format!("{name}: RT {p}"));
        }
    }
}

#[test]
fn replicas_leaving_are_normal_ends_and_a_primary_giving_up_on_an_ack_is_not() {
    let Some(python) = oracle::require(Oracle::Python3) else {
        return;
    };
    for (name, truth, ours) in cases(&python) {
        let f = common::fixture(&format!("{name}.pcap"));
        let fr = common::json(&[
            "first-reset",
            "--json",
            "--limit",
            "100",
            f.to_str().unwrap(),
        ]);
        let streams = ours["replication"].as_array().unwrap();
        for (o, t) in streams.iter().zip(truth["replication"].as_array().unwrap()) {
            let first = &t["closes"][0];
            let by = first["by"].as_str().unwrap();
            assert_eq!(o["end"]["frame"], first["frame"], "{name}");
            assert_eq!(o["end"]["by"], by, "{name}");
            let awaited = &t["waiting_for_ack_at_close"];
            // Abnormal exactly when the primary hung up, or an ACK was awaited over 10 ms.
            let stalled = awaited["waited_ns"]
                .as_u64()
                .is_some_and(|ns| ns > 10_000_000);
            let abnormal = by == "primary" || stalled;
            assert_eq!(o["end"]["abnormal"], abnormal, "{name}: {}", o["end"]);
            let close = fr["closes"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["frame"] == first["frame"])
                .expect("the stream's close among first-reset's");
            assert_eq!(close["abnormal"], abnormal, "{name}: {close}");
            assert_eq!(close["mysql_state"], "replicating");
            if stalled {
                let reason = close["reason"].as_str().unwrap();
                let at = format!("semi-sync ACK for position {}", awaited["position"]);
                assert!(reason.contains(&at), "{reason}");
            }
        }
        match name {
            // STOP SLAVE: the replica leaves between events; nothing else is abnormal either.
            "repl-semisync" | "repl-async" => assert_eq!(fr["first_abnormal"], Value::Null),
            // The primary closes the stream that stopped ACKing: the first abnormal close of all.
            _ => assert_eq!(
                fr["first_abnormal"]["frame"],
                truth["replication"][0]["closes"][0]["frame"]
            ),
        }
    }
}

#[test]
fn a_capture_that_begins_mid_stream_finds_the_stream_from_its_events() {
    let Some(python) = oracle::require(Oracle::Python3) else {
        return;
    };
    for name in CAPTURES {
        let f = common::fixture(&format!("{name}.pcap"));
        let cap = Capture::open(&f).unwrap();
        for from in [1777u64, 3500] {
            // The same records from `from` on, as a capture started then would hold them.
            let mut bytes = cap.preamble().to_vec();
            let mut reader = cap.reader_all();
            let mut frame = 0;
            while let Some(r) = reader.next_record() {
                frame += 1;
                if frame >= from {
                    bytes.extend_from_slice(r.raw);
                }
            }
            let cut = Capture::from_vec(format!("{name}-from-{from}.pcap"), bytes).unwrap();
            let report = analyze(&cut, &EngineOptions::default(), MysqlStatistics::default)
                .output
                .report();
            let ours = serde_json::to_value(&report).unwrap();
            let mut ours: Vec<Value> = ours["replication"].as_array().unwrap().clone();
            // Frames of the cut capture count from its own first record.
            for o in &mut ours {
                for key in ["dump_frame", "first_event_frame"] {
                    if let Some(n) = o[key].as_u64() {
                        o[key] = (n + from - 1).into();
                    }
                }
                for s in o["ack_stall_examples"].as_array_mut().unwrap() {
                    s["event_frame"] = (s["event_frame"].as_u64().unwrap() + from - 1).into();
                }
            }
            let truth = walk(&python, name, from);
            assert_streams_agree(
                &format!("{name} from frame {from}"),
                &ours,
                truth["replication"].as_array().unwrap(),
                false,
            );
            assert!(
                !report.commands.contains_key("COM_UNKNOWN"),
                "{name} {from}"
            );
        }
    }
}

#[test]
fn the_dump_is_the_one_tsharks_dissector_decodes() {
    let Some(tshark) = oracle::tshark() else {
        return;
    };
    for name in CAPTURES {
        let f = common::fixture(&format!("{name}.pcap"));
        let dumps = tshark.lines([
            "-r",
            f.to_str().unwrap(),
            "-Y",
            "mysql.command==18",
            "-T",
            "fields",
            "-e",
            "frame.number",
            "-e",
            "mysql.binlog.position",
            "-e",
            "mysql.binlog.server_id",
            "-e",
            "mysql.binlog.file_name",
        ]);
        let ours = common::json(&["mysql", "--json", f.to_str().unwrap()]);
        let ours: Vec<String> = ours["replication"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                format!(
                    "{}\t{}\t{}\t{}",
                    r["dump_frame"],
                    r["start_position"],
                    r["replica_server_id"],
                    r["start_file"].as_str().unwrap()
                )
            })
            .collect();
        let theirs: Vec<String> = dumps
            .iter()
            .map(|l| {
                let mut f: Vec<&str> = l.split('\t').collect();
                f.resize(4, "");
                // tshark prints the server id in hex.
                let id = u32::from_str_radix(f[2].trim_start_matches("0x"), 16).unwrap();
                format!("{}\t{}\t{id}\t{}", f[0], f[1], f[3])
            })
            .collect();
        assert_eq!(ours, theirs, "{name}");
    }
}

#[test]
fn stalled_semi_sync_acks_are_a_finding_with_their_frames() {
    let Some(python) = oracle::require(Oracle::Python3) else {
        return;
    };
    for name in CAPTURES {
        let truth = walk(&python, name, 1);
        let stalls: Vec<u64> = truth["replication"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|r| r["stalls_over_10ms"].as_array().unwrap().clone())
            .map(|f| f.as_u64().unwrap())
            .collect();
        let f = common::fixture(&format!("{name}.pcap"));
        let report = common::json(&["report", "--json", f.to_str().unwrap()]);
        let finding = report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["kind"] == "semi_sync_ack_stalls");
        match finding {
            None => assert!(stalls.is_empty(), "{name}: {stalls:?} without a finding"),
            Some(x) => {
                let frames: Vec<u64> = x["frames"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|f| f.as_u64().unwrap())
                    .collect();
                assert!(stalls.iter().all(|s| frames.contains(s)), "{name}: {x}");
                let summary = x["summary"].as_str().unwrap();
                assert!(
                    summary.contains(&format!("{} of", stalls.len())),
                    "{summary}"
                );
                // The primary gave up on the stalled replica: look first.
                assert_eq!(x["severity"], 1, "{name}");
            }
        }
    }
}
