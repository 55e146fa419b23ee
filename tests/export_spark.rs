//! The fleet path on a real distributed engine: Spark (PySpark in local mode, two executor threads) runs
//! `pcapsleuth export` as its task, one per capture, through `fleet/spark_export.py` (the script the
//! README's "When one machine is not enough" runs), then one Spark SQL query over the whole dataset.
//! What the query says per host, capture and minute is what `mysql --json` says per capture.
//!
//! Spark starting its JVM dominates the test's time. The test runs it light, as one runs Spark for a
//! small job (`PYSPARK_SUBMIT_ARGS`): no web UI, 2 shuffle partitions for the query's grouping instead
//! of 200 tasks of nothing, and the driver's JVM with its quick JIT only and the serial collector (a
//! JVM that lives seconds). The script and what the query answers are those of a real run.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;

use pcapsleuth_testkit::{oracle, Oracle};
use serde_json::Value;

/// `2026-11-22 09:20` for a time in seconds since the epoch (UTC), as the script's query prints minutes.
fn minute(epoch_s: i64) -> String {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(epoch_s as u64);
    let s = humantime::format_rfc3339_seconds(t).to_string();
    s.replace('T', " ")[..16].to_string()
}

#[test]
fn spark_runs_export_as_its_task_per_capture_and_one_query_reads_them_all() {
    let Some([python, _java]) = oracle::require_all([Oracle::PySpark, Oracle::Java]) else {
        return;
    };
    let tmp = tempfile::TempDir::new().unwrap();
    let root = tmp.path().join("fleet");
    // Four captures from three hosts: db1 has two.
    let captures = [
        ("db1", "err1146-storm.pcap"),
        ("db1", "prepared-full.pcap"),
        ("db2", "stream-stall.pcap"),
        ("db3", "server-closes.pcap"),
    ];
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("fleet/spark_export.py");
    let mut cmd = python.command();
    cmd.arg(&script)
        .args(["--master", "local[2]", "--pcapsleuth", common::bin()])
        .arg("--out")
        .arg(&root)
        .env("SPARK_LOCAL_IP", "127.0.0.1")
        .env(
            "PYSPARK_SUBMIT_ARGS",
            "--driver-java-options '-XX:TieredStopAtLevel=1 -XX:+UseSerialGC' \
             --conf spark.ui.enabled=false --conf spark.sql.shuffle.partitions=2 pyspark-shell",
        )
        // Spark leaves files where it runs (a Derby metastore, spark-warehouse): never in the repository.
        .current_dir(tmp.path());
    for (host, f) in captures {
        cmd.arg(format!("{host}={}", common::fixture(f).display()));
    }
    let o = cmd.output().unwrap();
    assert!(
        o.status.success(),
        "spark_export.py: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    // One partition per capture, under its host.
    for (host, f) in captures {
        let name = f.trim_end_matches(".pcap");
        assert!(
            root.join(format!("transactions/host={host}/capture={name}"))
                .is_dir(),
            "{host} {name}"
        );
    }
    // (host, capture, minute) -> [requests, errors, err_1146], from Spark.
    let mut got: BTreeMap<(String, String, String), [u64; 3]> = BTreeMap::new();
    for line in String::from_utf8_lossy(&o.stdout).lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        let key = ["host", "capture", "minute"].map(|k| v[k].as_str().unwrap().to_string());
        let n = ["requests", "errors", "err_1146"].map(|k| v[k].as_u64().unwrap());
        got.insert(key.into(), n);
    }
    // The same from `mysql --json`: per_second summed per minute, and ERR 1146 per capture.
    let mut want: BTreeMap<(String, String, String), [u64; 3]> = BTreeMap::new();
    for (host, f) in captures {
        let name = f.trim_end_matches(".pcap").to_string();
        let m = common::json(&["mysql", "--json", common::fixture(f).to_str().unwrap()]);
        for s in m["per_second"].as_array().unwrap() {
            let key = (
                host.to_string(),
                name.clone(),
                minute(s["second"].as_i64().unwrap()),
            );
            let e = want.entry(key).or_default();
            e[0] += s["queries"].as_u64().unwrap();
            e[1] += s["errors"].as_u64().unwrap();
        }
        let err_1146 = m["errors"].get("1146").and_then(Value::as_u64).unwrap_or(0);
        let spark_1146: u64 = got
            .iter()
            .filter(|((h, c, _), _)| h == host && *c == name)
            .map(|(_, n)| n[2])
            .sum();
        assert_eq!(spark_1146, err_1146, "{host} {name}: ERR 1146");
    }
    let got_counts: BTreeMap<_, _> = got.iter().map(|(k, n)| (k.clone(), [n[0], n[1]])).collect();
    let want_counts: BTreeMap<_, _> = want
        .iter()
        .map(|(k, n)| (k.clone(), [n[0], n[1]]))
        .collect();
    assert_eq!(
        got_counts, want_counts,
        "requests and errors per host, capture and minute"
    );
    assert!(
        got.values().map(|n| n[2]).sum::<u64>() > 1000,
        "the storm is in it"
    );
}
