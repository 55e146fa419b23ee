//! Response times checked against pt-query-digest (percona-toolkit), the tool DBAs use on tcpdump output.
//!
//! Definitions: pt-query-digest's Query_time runs from the query's first packet to the response's last
//! packet seen before the next query, which for these fixtures is our request → last response byte.
//! It groups statements by a fingerprint that also replaces digits in identifiers (all `sbtestN` tables
//! are one class), so only the overall figures are compared. Its percentiles come from buckets 5% wide,
//! ours from buckets under 1% wide: percentiles agree within that resolution, while counts, sums and
//! maxima agree exactly (to the microsecond of the capture's timestamps).

use crate::common;

use pcapsleuth_testkit::oracle::{self, Oracle, Tool};
use std::process::Command;

fn pt_query_digest([tcpdump, digest]: &[Tool; 2], fixture: &str) -> serde_json::Value {
    let pcap = common::fixture(fixture);
    let text = tcpdump.stdout(["-r", pcap.to_str().unwrap(), "-x", "-n", "-q", "-tttt"]);
    let dump = common::scratch("pt-query-digest", &format!("{fixture}.txt"));
    std::fs::write(&dump, text).unwrap();
    let out = digest.stdout([
        "--type",
        "tcpdump",
        "--watch-server",
        "10.77.0.1:3306",
        "--limit",
        "100%:1000",
        "--output",
        "json",
        dump.to_str().unwrap(),
    ]);
    serde_json::from_str(&out).unwrap()
}

fn ours(fixture: &str) -> serde_json::Value {
    let o = Command::new(common::bin())
        .args([
            "mysql",
            "--json",
            common::fixture(fixture).to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(o.status.success());
    serde_json::from_slice(&o.stdout).unwrap()
}

fn secs(v: &serde_json::Value) -> f64 {
    v.as_str()
        .and_then(|s| s.parse().ok())
        .or_else(|| v.as_f64())
        .unwrap()
}

#[test]
fn response_times_agree_with_pt_query_digest() {
    let Some(oracles) = oracle::require_all([Oracle::Tcpdump, Oracle::PtQueryDigest]) else {
        return;
    };
    for fixture in ["err1146-storm.pcap", "rt-bimodal.pcap", "no-cap.pcap"] {
        let pt = pt_query_digest(&oracles, fixture);
        let us = ours(fixture);
        // pt-query-digest's classes hold the queries (COM_QUIT appears only in its global count, at 0 s).
        let classes = pt["classes"].as_array().unwrap();
        let count: u64 = classes
            .iter()
            .map(|c| c["query_count"].as_u64().unwrap())
            .sum();
        let sum: f64 = classes
            .iter()
            .map(|c| secs(&c["metrics"]["Query_time"]["sum"]))
            .sum();
        let max = classes
            .iter()
            .map(|c| secs(&c["metrics"]["Query_time"]["max"]))
            .fold(0.0, f64::max);
        let rt = &us["rt_us"];
        assert_eq!(rt["count"].as_u64().unwrap(), count, "{fixture}: queries");
        let our_sum = rt["mean"].as_f64().unwrap() * count as f64 / 1e6;
        assert!(
            (our_sum - sum).abs() <= sum * 0.002 + 1e-4,
            "{fixture}: total {our_sum} vs {sum}"
        );
        assert!(
            (rt["max"].as_f64().unwrap() / 1e6 - max).abs() <= 2e-6,
            "{fixture}: max"
        );
        if classes.len() == 1 {
            let m = &classes[0]["metrics"]["Query_time"];
            for (ours_key, theirs_key) in [("p50", "median"), ("p95", "pct_95")] {
                let (a, b) = (rt[ours_key].as_f64().unwrap() / 1e6, secs(&m[theirs_key]));
                assert!(
                    (a - b).abs() <= b * 0.06 + 2e-6,
                    "{fixture}: {ours_key} {a} vs {theirs_key} {b}"
                );
            }
        }
    }
}
