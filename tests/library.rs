//! The library as an embedding program uses it: the examples of the `pcapsleuth` package, run on every
//! real capture, agree with the command-line tool, and a custom analysis runs on the parallel engine.

use crate::common;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

/// An example of the `pcapsleuth` package, built as the tests are (`cargo test --workspace` builds
/// every example; run alone, this test builds it).
fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().and_then(|deps| deps.parent()).unwrap();
    let path = profile_dir.join("examples").join(name);
    if !path.exists() {
        // Into the directory it is looked for in: `cargo test --release` runs from `target/release`.
        let release = profile_dir.file_name().is_some_and(|d| d == "release");
        let status = Command::new(env!("CARGO"))
            .args(["build", "--quiet", "-p", "pcapsleuth", "--example", name])
            .args(release.then_some("--release"))
            .status()
            .unwrap();
        assert!(status.success(), "building the example {name}");
    }
    path
}

/// `examples/transactions.rs` prints one line per MySQL transaction: as many requests, and as many of
/// each command, as `pcapsleuth mysql --json` counts, on every real capture.
#[test]
fn the_transactions_example_prints_every_transaction_the_cli_counts() {
    let exe = example("transactions");
    for path in common::real_captures() {
        let p = path.to_str().unwrap();
        let o = Command::new(&exe).arg(p).output().unwrap();
        assert!(
            o.status.success(),
            "{p}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let mut commands: BTreeMap<String, u64> = BTreeMap::new();
        let mut requests = 0;
        for line in String::from_utf8(o.stdout).unwrap().lines() {
            let t: serde_json::Value = serde_json::from_str(line).unwrap();
            let command = t["command"].as_str().unwrap().to_string();
            if command != "COM_CONNECT" && t["fate"] != "no_response" {
                requests += 1;
            }
            *commands.entry(command).or_default() += 1;
        }
        let cli = common::json(&["mysql", "--json", p]);
        assert_eq!(requests, cli["queries"].as_u64().unwrap(), "{p}: requests");
        let cli_commands: BTreeMap<String, u64> =
            serde_json::from_value(cli["commands"].clone()).unwrap();
        assert_eq!(commands, cli_commands, "{p}: commands");
    }
}

/// `examples/per_table.rs`, a custom analysis merged across workers: its requests add up to the CLI's, and
/// on the ERR 1146 storm (sysbench asking for 16 tables where it prepared 8) its errors are the CLI's
/// 1146s, every one on a table beyond the eighth, and every request to those failed.
#[test]
fn the_per_table_example_adds_up_to_the_cli() {
    let exe = example("per_table");
    let storm = common::fixture("err1146-storm.pcap");
    for path in common::real_captures() {
        let p = path.to_str().unwrap();
        let o = Command::new(&exe).arg(p).output().unwrap();
        assert!(
            o.status.success(),
            "{p}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let rows: Vec<(String, u64, u64)> = String::from_utf8(o.stdout)
            .unwrap()
            .lines()
            .skip(1)
            .map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                let n = f.len();
                (
                    f[..n - 3].join(" "),
                    f[n - 3].parse().unwrap(),
                    f[n - 2].parse().unwrap(),
                )
            })
            .collect();
        let cli = common::json(&["mysql", "--json", p]);
        let requests: u64 = rows.iter().map(|r| r.1).sum();
        assert_eq!(requests, cli["queries"].as_u64().unwrap(), "{p}: requests");
        if path == storm {
            let errors: u64 = rows.iter().map(|r| r.2).sum();
            assert_eq!(errors, cli["errors"]["1146"].as_u64().unwrap());
            for (table, requests, errors) in &rows {
                let n: u32 = table.trim_start_matches("sbtest").parse().unwrap();
                assert_eq!(*errors, if n > 8 { *requests } else { 0 }, "{table}");
            }
        }
    }
}
