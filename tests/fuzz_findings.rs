//! Captures that fuzzing found to abort `report` (`../shared/fuzz-findings/captures-that-abort-report/`, read
//! from there): one wild timestamp among normal ones stretched the rate series over decades, so `report`
//! asked for a terabyte and aborted, or ran for minutes. Each must now give a report and exit 0 or 2 (bad
//! input), within 300 MB of address space: a hang guard of 20 s, not a speed test.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The memory cap, as `ulimit -v` (KiB of address space, which bounds the resident size too).
const ADDRESS_SPACE_KIB: u64 = 300 * 1024;
/// Long enough for a debug build on a busy machine, far shorter than the minutes a stretched series took.
const HANG_GUARD: Duration = Duration::from_secs(20);

/// The fuzz findings, or `None` (the skip said) without `../shared`.
fn findings() -> Option<Vec<PathBuf>> {
    let dir = common::shared("fuzz-findings/captures-that-abort-report")?;
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    Some(files)
}

/// Runs `pcapsleuth args... file` under the memory cap; its exit code, or None if it had to be killed.
fn run_capped(args: &[&str], file: &Path) -> (Option<i32>, String) {
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -v {ADDRESS_SPACE_KIB} && exec \"$0\" \"$@\""
        ))
        .arg(common::bin())
        .args(args)
        .arg(file)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = std::io::Read::read_to_string(&mut e, &mut err);
            }
            return (status.code(), err);
        }
        if started.elapsed() > HANG_GUARD {
            let _ = child.kill();
            let _ = child.wait();
            return (None, format!("still running after {HANG_GUARD:?}"));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn every_capture_that_aborted_report_now_gives_one_within_the_memory_cap() {
    let Some(files) = findings() else {
        return;
    };
    assert_eq!(files.len(), 69, "the README of fuzz-findings names 69");
    let mut failed = Vec::new();
    for f in &files {
        for args in [
            &["report", "-j", "1"][..],
            &["report", "-j", "2", "--json"][..],
        ] {
            let (code, err) = run_capped(args, f);
            if !matches!(code, Some(0 | 2)) || err.contains("panicked") {
                failed.push(format!("{} {args:?}: exit {code:?}: {err}", f.display()));
            }
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// The wild timestamps of those captures are named by frame, on stderr and in the JSON, and left out of the
/// time series: the rate series covers the capture's body only.
#[test]
fn their_wild_timestamps_are_reported_by_frame_and_left_out_of_the_series() {
    let Some(files) = findings() else {
        return;
    };
    let mut with_wild = 0;
    for f in files {
        let o = Command::new(common::bin())
            .args(["report", "-j", "1", "--json"])
            .arg(&f)
            .output()
            .unwrap();
        let Ok(report) = serde_json::from_slice::<serde_json::Value>(&o.stdout) else {
            continue; // not a capture at all: exit 2 with one line, checked above
        };
        let t = &report["timeline"];
        let wild = t["wild_packets"].as_u64().unwrap();
        if wild == 0 {
            continue;
        }
        with_wild += 1;
        let first = &t["wild"][0];
        let frame = first["first_frame"].as_u64().unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(
            (stderr.contains(&format!("frame {frame}:"))
                || stderr.contains(&format!("frames {frame}-")))
                && stderr.contains("left out of time series"),
            "{}: {stderr}",
            f.display()
        );
        let (lo, hi) = (
            t["body_first"].as_f64().unwrap(),
            t["body_last"].as_f64().unwrap(),
        );
        let interval = report["rate"]["interval_s"].as_f64().unwrap();
        for p in report["rate"]["total"].as_array().unwrap() {
            let start = p["start"].as_f64().unwrap();
            assert!(
                start + interval >= lo && start <= hi,
                "{}: interval at {start} outside the body {lo}..{hi}",
                f.display()
            );
        }
    }
    assert!(
        with_wild >= 60,
        "only {with_wild} of the 69 have wild timestamps"
    );
}

/// The analysis and the full report of a capture found by the `pipeline` fuzz target (fuzz/, kept in
/// tests/data/fuzz/), with 1 split and with 2, 3, 7 and 64: they must be identical.
fn assert_split_invariant(
    name: &str,
) -> pcapsleuth::analysis::Run<pcapsleuth::analysis::Statistics> {
    use pcapsleuth::analysis::{analyze, full_report, EngineOptions, Everything, MysqlDetection};
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/fuzz")
        .join(name);
    let cap = pcapsleuth::capture::Capture::open(&path).unwrap();
    let run = |splits| {
        let a = analyze(
            &cap,
            &EngineOptions {
                threads: 1,
                splits: Some(splits),
                mysql: MysqlDetection::Port(3306),
                ..EngineOptions::default()
            },
            || Everything::new(100_000_000),
        );
        let report = full_report(&a);
        (a, report)
    };
    let one = run(1);
    for splits in [2, 3, 7, 64] {
        assert_eq!(one, run(splits), "{name}: {splits} splits");
    }
    one.0
}

/// Found by the `pipeline` fuzz target after about 12,000 executions: two ERR 1146 responses of one capture
/// carry different SQLSTATEs (`42S02`, and `41S02` from a damaged byte); the error's SQLSTATE was the first
/// one merged, so it depended on the splits. It is now the earliest request's.
#[test]
fn an_errors_sqlstate_does_not_depend_on_the_splits() {
    let a = assert_split_invariant("pipeline-sqlstate-first-merged.pcap");
    let report = pcapsleuth::analysis::full_report(&a);
    assert_eq!(report.mysql.error_details[0].sql_state, "42S02");
}

/// Found by the `pipeline` fuzz target from its corpus: the file's last timestamp was the latest of its
/// splits' last timestamps, so a capture whose last packet is dated before an earlier one (frame 8 at
/// 1970 after frame 1 at 2023) reported a different one with 64 splits. It is now the last packet's, as
/// the capture's is.
#[test]
fn a_files_last_timestamp_does_not_depend_on_the_splits() {
    let a = assert_split_invariant("pipeline-file-last-ts-max-of-splits.pcap");
    assert_eq!(a.capture.files[0].last_ts, a.capture.last_ts);
    assert_eq!(a.capture.last_ts.map(|t| t.0), Some(0));
}
