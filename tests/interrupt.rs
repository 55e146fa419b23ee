//! Ctrl-C while a command reads a pipe that stays open (a live `tcpdump -w - | pcapsleuth ... -`): the run
//! stops without waiting for the writer, prints what it had read said to be partial, exits with 128 + the
//! signal's number (130 for SIGINT, as a shell reports it), and leaves no temporary file or staging
//! directory behind.

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common;

/// What an interrupted run left: its exit code and what it printed.
struct Stopped {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Whether process `pid` has a thread named `name` (as `/proc` shows it, cut to 15 bytes).
fn has_thread(pid: u32, name: &str) -> bool {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task"));
    tasks.into_iter().flatten().flatten().any(|t| {
        std::fs::read_to_string(t.path().join("comm")).is_ok_and(|comm| comm.trim_end() == name)
    })
}

/// Runs the binary with `args`, writes `fixture` into its standard input and keeps the pipe open; once
/// the run reads the stream (its reading thread is there), sends it `signal`. The pipe is closed only
/// after the run ended, so a run that waited for its writer would never end: after a minute the child
/// is killed and the test fails.
fn signalled_on_open_pipe(args: &[&str], fixture: &str, signal: libc::c_int) -> Stopped {
    let bytes = std::fs::read(common::fixture(fixture)).unwrap();
    let mut child = Command::new(common::bin())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        stdin.write_all(&bytes).unwrap();
        stdin
    });
    let drain = |mut from: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            from.read_to_string(&mut text).unwrap();
            text
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let open_pipe = writer.join().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !has_thread(child.id(), "pcapsleuth-deco") && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: a signal to the child this test started and has not waited for yet.
    unsafe {
        libc::kill(child.id() as libc::pid_t, signal);
    }
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{args:?}: still running long after the signal, waiting for its writer");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    drop(open_pipe);
    Stopped {
        code: status.code(),
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}

/// Every name in `dir`, hidden ones too.
fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn mysql_on_an_open_pipe_stops_at_ctrl_c_with_its_partial_result_said() {
    let o = signalled_on_open_pipe(
        &["mysql", "--json", "-"],
        "err1146-storm.pcap",
        libc::SIGINT,
    );
    assert_eq!(o.code, Some(130), "{}", o.stderr);
    assert!(
        o.stderr.contains("pcapsleuth: interrupted: read "),
        "{}",
        o.stderr
    );
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    let notes = v["unknowns"]["notes"].as_array().unwrap();
    assert!(
        notes.iter().any(|n| n
            .as_str()
            .unwrap()
            .starts_with("the run was stopped before")),
        "{notes:?}"
    );
}

#[test]
fn report_html_on_an_open_pipe_stops_at_ctrl_c_and_leaves_no_temporary_file() {
    let dir = common::scratch("interrupt-report", "out");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let page = dir.join("report.html");
    let o = signalled_on_open_pipe(
        &["report", "-", "--html", page.to_str().unwrap()],
        "stream-stall.pcap",
        libc::SIGINT,
    );
    assert_eq!(o.code, Some(130), "{}", o.stderr);
    assert!(
        common::flat(&o.stdout).contains("the run was stopped before"),
        "{}",
        o.stdout
    );
    // The page of what was read, whole, and nothing else: no temporary file beside it.
    assert_eq!(names_in(&dir), ["report.html"]);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.trim_end().ends_with("</html>"));
    assert!(common::flat(&html).contains("the run was stopped before"));
}

#[test]
fn export_on_an_open_pipe_stopped_by_a_signal_writes_nothing_and_leaves_no_staging() {
    let root = common::scratch("interrupt-export", "root");
    for (signal, code) in [(libc::SIGINT, 130), (libc::SIGTERM, 143)] {
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        let o = signalled_on_open_pipe(
            &["export", "-", "--parquet", root.to_str().unwrap()],
            "err1146-storm.pcap",
            signal,
        );
        assert_eq!(o.code, Some(code), "{}", o.stderr);
        assert!(
            o.stderr.contains("pcapsleuth: interrupted: read ")
                && o.stderr.contains("nothing written"),
            "{}",
            o.stderr
        );
        assert!(names_in(&root).is_empty(), "{:?}", names_in(&root));
    }
}
