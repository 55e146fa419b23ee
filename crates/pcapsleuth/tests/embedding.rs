//! The embedding contract on real captures: the package's examples run as their docs say (`cargo test`
//! builds them beside the test binaries); a run stops when interrupted, or when its sink stops or fails.

use std::convert::Infallible;
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use pcapsleuth::analysis::{self, sinks, EngineOptions, MysqlStatistics, Stopped};
use pcapsleuth::capture::{Capture, CaptureSet};

/// The example `name`, as `cargo test` built it.
fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>/deps");
    let path = dir.join("examples").join(name);
    assert!(
        path.exists(),
        "{} is missing: `cargo test -p pcapsleuth` builds the examples",
        path.display()
    );
    path
}

fn fixture(name: &str) -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/").to_string() + name
}

#[test]
fn the_transactions_example_streams_every_transaction_and_stops_early_when_asked() {
    let storm = fixture("err1146-storm.pcap");
    let all = Command::new(example("transactions"))
        .arg(&storm)
        .output()
        .unwrap();
    assert!(
        all.status.success(),
        "{}",
        String::from_utf8_lossy(&all.stderr)
    );
    let every = String::from_utf8(all.stdout).unwrap();
    // The storm's requests, each answered by ERR 1146 (fixtures/README.md), one JSON line each.
    let lines: Vec<serde_json::Value> = every
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let errors = lines.iter().filter(|l| l["error_code"] == 1146).count();
    assert!(errors > 1000, "{errors} ERR 1146 of {} lines", lines.len());
    assert!(all.stderr.is_empty());

    let first = Command::new(example("transactions"))
        .args([&storm, "3"])
        .output()
        .unwrap();
    assert!(first.status.success());
    let few = String::from_utf8(first.stdout).unwrap().lines().count();
    // Stopped at the third: each other worker may finish the line it was writing, no more.
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    assert!(
        (3..3 + workers).contains(&few),
        "{few} lines after asking for 3"
    );
    assert!(few < lines.len());
    assert_eq!(
        String::from_utf8_lossy(&first.stderr),
        "stopped after the transactions asked for\n"
    );
}

fn storm() -> Capture {
    Capture::open(fixture("err1146-storm.pcap")).unwrap()
}

/// One thread and 64 splits: 32 batches of two, so that a stop leaves batches unread.
fn many_batches() -> EngineOptions {
    EngineOptions {
        threads: 1,
        splits: Some(64),
        ..EngineOptions::default()
    }
}

#[test]
fn an_interrupted_run_reads_nothing_more_and_says_its_figures_are_partial() {
    let interrupt = Arc::new(AtomicBool::new(true));
    let opts = EngineOptions {
        interrupt: Some(interrupt),
        ..many_batches()
    };
    let run = analysis::analyze(&storm(), &opts, MysqlStatistics::default);
    assert_eq!(run.capture.stopped, Some(Stopped { frames_read: 0 }));
    assert_eq!((run.capture.counts.packets, run.connections.len()), (0, 0));
    let notes = analysis::unknowns(&run).notes;
    assert_eq!(
        notes[0],
        "the run was stopped before it read a frame: every figure is empty"
    );
    let whole = analysis::analyze(&storm(), &many_batches(), || ());
    assert_eq!(whole.capture.stopped, None);
}

#[test]
fn a_sink_that_stops_stops_the_reading_after_the_batch_it_stopped_in() {
    let told = AtomicU64::new(0);
    let sink = sinks::transactions(|_, _| {
        told.fetch_add(1, Ordering::Relaxed);
        Ok::<_, Infallible>(ControlFlow::Break(()))
    });
    let run = sinks::stream(&storm(), &many_batches(), &sink).unwrap_or_else(|e| match e {});
    assert_eq!(run.output, sinks::Streamed::StoppedBySink);
    assert_eq!(told.into_inner(), 1, "one thread: nothing after the stop");
    let whole = analysis::analyze(&storm(), &many_batches(), || ());
    let stopped = run.capture.stopped.expect("batches left unread");
    assert!(stopped.frames_read > 0 && stopped.frames_read < whole.capture.counts.packets);
    assert_eq!(stopped.frames_read, run.capture.counts.packets);
}

#[test]
fn a_sink_that_fails_fails_the_run_with_its_own_error() {
    let sink = sinks::closes(|conn, close| {
        Err(format!(
            "close at frame {} on {}",
            close.tcp.at.frame,
            conn.server()
        ))
    });
    let mut set = CaptureSet::open(&[PathBuf::from(fixture("server-closes.pcap"))]).unwrap();
    let err = sinks::stream(&mut set, &EngineOptions::default(), &sink).unwrap_err();
    // The capture's first close: the server's FIN that cut `select sleep(10)` off (lib.rs's example).
    assert!(err.starts_with("close at frame 13 on "), "{err}");
}
