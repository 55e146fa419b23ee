//! Never harm the input, never leave a half-written output, never die of a closed pipe or a file that
//! shrinks underneath: the promises `extract` and `split` make about the files they touch.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use pcapsleuth::analysis::{analyze, EngineOptions, Everything};
use pcapsleuth::capture::{Capture, DamageKind, PcapWriter};
use pcapsleuth::report::to_json;

fn run(args: &[&str]) -> Output {
    Command::new(common::bin()).args(args).output().unwrap()
}

fn scratch(name: &str) -> PathBuf {
    common::scratch("harm", name)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn copy_of(fixture: &str, name: &str) -> PathBuf {
    let p = scratch(name);
    std::fs::copy(common::fixture(fixture), &p).unwrap();
    p
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn extract_refuses_its_own_input_as_output_by_inode_and_leaves_it_untouched() {
    let input = copy_of("stream-stall.pcap", "self.pcap");
    let before = std::fs::read(&input).unwrap();
    let link = scratch("hard-link.pcap");
    let _ = std::fs::remove_file(&link);
    std::fs::hard_link(&input, &link).unwrap();
    let sym = scratch("sym-link.pcap");
    let _ = std::fs::remove_file(&sym);
    std::os::unix::fs::symlink(&input, &sym).unwrap();
    for out in [&input, &link, &sym] {
        let o = run(&["extract", s(&input), "--port", "3306", "-o", s(out)]);
        assert_eq!(o.status.code(), Some(2), "-o {out:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("is the input") && stderr(&o).contains(s(&input)),
            "{}",
            stderr(&o)
        );
        assert_eq!(std::fs::read(&input).unwrap(), before, "-o {out:?}");
    }
}

#[test]
fn split_refuses_a_piece_that_would_replace_its_input() {
    let dir = scratch("split-self");
    std::fs::create_dir_all(&dir).unwrap();
    // `split x_00000.pcap -o DIR` names its first piece DIR/x_00000_00000.pcap; a piece named like the
    // input needs the input to be named like a piece of itself: `x_00000.pcap` split as `x`.
    let input = dir.join("x_00000.pcap");
    std::fs::copy(common::fixture("stream-stall.pcap"), &input).unwrap();
    let link = dir.join("x_00000_00000.pcap");
    let _ = std::fs::remove_file(&link);
    std::fs::hard_link(&input, &link).unwrap();
    let before = std::fs::read(&input).unwrap();
    let o = run(&["split", s(&input), "--packets", "100", "-o", s(&dir)]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("is the input"), "{}", stderr(&o));
    assert_eq!(std::fs::read(&input).unwrap(), before);
    let pieces = std::fs::read_dir(&dir).unwrap().count();
    assert_eq!(pieces, 2, "nothing written besides the input and its link");
}

#[test]
fn an_unfinished_output_never_appears() {
    let cap = Capture::open(common::fixture("stream-stall.pcap")).unwrap();
    let out = scratch("unfinished.pcap");
    let _ = std::fs::remove_file(&out);
    let mut w = PcapWriter::create(&out, &cap).unwrap();
    let mut reader = cap.reader_all();
    while let Some(rec) = reader.next_record() {
        w.write(&rec).unwrap();
    }
    assert!(!out.exists(), "visible before finish");
    drop(w);
    assert!(!out.exists(), "a writer dropped unfinished left a file");
    let dir_entries: Vec<_> = std::fs::read_dir(out.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(
        !dir_entries
            .iter()
            .any(|n| n.to_string_lossy().contains("unfinished")),
        "a temporary file was left: {dir_entries:?}"
    );
    // Finished, it appears whole.
    let mut w = PcapWriter::create(&out, &cap).unwrap();
    let mut reader = cap.reader_all();
    while let Some(rec) = reader.next_record() {
        w.write(&rec).unwrap();
    }
    w.finish().unwrap();
    assert_eq!(
        std::fs::read(&out).unwrap(),
        std::fs::read(common::fixture("stream-stall.pcap")).unwrap()
    );
}

#[test]
fn a_capture_truncated_while_mapped_gives_the_results_of_what_is_left_and_a_warning() {
    let whole = std::fs::read(common::fixture("stream-stall.pcap")).unwrap();
    let keep = 1_500_000;
    let path = scratch("shrinking.pcap");
    std::fs::write(&path, &whole).unwrap();
    let cap = Capture::open(&path).unwrap();
    // logrotate's copytruncate, after the capture was opened and mapped: the pages past the new end
    // vanish, and reading them would raise SIGBUS.
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(keep)
        .unwrap();
    let opts = EngineOptions {
        splits: Some(7),
        threads: 2,
        ..EngineOptions::default()
    };
    let shrunk = analyze(&cap, &opts, Everything::default);
    let cut = Capture::from_vec("cut", whole[..keep as usize].to_vec()).unwrap();
    let expected = analyze(&cut, &opts, Everything::default);
    // Everything but the warning is what the bytes left give.
    assert_eq!(shrunk.capture.counts, expected.capture.counts);
    assert!(shrunk.connections == expected.connections);
    assert!(shrunk.mysql_sessions == expected.mysql_sessions);
    assert!(
        to_json(&shrunk.output.mysql.clone().report())
            == to_json(&expected.output.mysql.clone().report()),
        "MySQL reports differ"
    );
    assert!(shrunk.output.rt == expected.output.rt && shrunk.output.rates == expected.output.rates);
    assert_eq!(shrunk.capture.damage[1..], expected.capture.damage[..]);
    assert!(
        shrunk
            .capture
            .damage
            .iter()
            .any(|d| d.offset == keep && matches!(d.kind, DamageKind::Shrank { .. })),
        "{:?}",
        shrunk.capture.damage
    );
}

/// Runs the binary with its stdout (and `stderr` too if asked) closed from the start, as `head` does to
/// its input when it has read enough.
fn spawn_closing(args: &[&str], stderr: bool) -> std::process::Child {
    let mut child = Command::new(common::bin())
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    if stderr {
        drop(child.stderr.take());
    }
    child
}

/// Output read by `head`, which exits early: no panic, no error message, whichever stream is closed.
#[test]
fn closed_pipes_end_the_run_quietly() {
    let full = std::fs::read(common::fixture("stream-stall.pcap")).unwrap();
    // A capture cut short, so that there is a warning on stderr as well as results on stdout.
    let cut = scratch("cut-for-pipes.pcap");
    std::fs::write(&cut, &full[..full.len() - 700]).unwrap();
    for args in [
        vec!["flows", s(&cut)],
        vec!["report", s(&cut)],
        vec!["mysql", "--json", s(&cut)],
    ] {
        // stdout and stderr both closed before the program writes (like `2>&1 | head -0`).
        let status = spawn_closing(&args, true).wait().unwrap();
        assert!(
            status.code().is_some_and(|c| c == 0 || c == 1),
            "{args:?}: {status:?} (101 is a panic)"
        );
        // Only stdout closed: nothing but the capture's own warning on stderr.
        let child = spawn_closing(&args, false);
        let o = child.wait_with_output().unwrap();
        let err = stderr(&o);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(
            err.lines().all(|l| l.contains("warning")),
            "{args:?}: {err}"
        );
    }
}

/// `extract` killed mid-write (SIGKILL: no cleanup runs) leaves no output and no temporary file: the
/// records written so far sit in an unnamed file that vanishes with the process.
#[test]
fn a_killed_extract_leaves_no_output_file() {
    use std::io::Write;
    let dir = scratch("killed");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("out.pcap");
    let mut child = Command::new(common::bin())
        .args(["extract", "-", "--port", "3306", "-o", s(&out)])
        .stdin(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // More than a stream window (16 MB) of records, so that extract has written some; then the pipe
    // stays open and extract waits for the rest.
    let bytes = std::fs::read(common::fixture("stream-stall.pcap")).unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&bytes).unwrap();
    for _ in 0..4 {
        stdin.write_all(&bytes[24..]).unwrap();
    }
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert!(
        child.try_wait().unwrap().is_none(),
        "extract ended before the input did"
    );
    child.kill().unwrap();
    child.wait().unwrap();
    drop(stdin);
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(left.is_empty(), "a killed extract left {left:?}");
}

/// Runs the binary with `args` and its standard input redirected from the file `input` (`< input`).
fn run_with_stdin_from(args: &[&str], input: &Path) -> Output {
    Command::new(common::bin())
        .args(args)
        .stdin(std::fs::File::open(input).unwrap())
        .output()
        .unwrap()
}

/// `-` reads standard input; when that is a file (`< x.pcap`), it is an input like any named one: no
/// output may be it. Compared by device and inode with what standard input is open on.
#[test]
fn a_capture_read_through_standard_input_is_never_overwritten() {
    let input = copy_of("server-closes.pcap", "stdin-self.pcap");
    let before = std::fs::read(&input).unwrap();
    let runs: [&[&str]; 4] = [
        &["extract", "-", "--port", "9", "-o", s(&input)],
        &[
            "extract",
            "-",
            "--port",
            "3306",
            "--annotate",
            "-o",
            s(&input),
        ],
        &["report", "-", "--html", s(&input)],
        &["split", "-", "--packets", "10", "-o", "."],
    ];
    for args in runs {
        let mut args = args.to_vec();
        let dir;
        if args[0] == "split" {
            // `split - -o DIR` names its pieces stdin_00000.pcap, ...: the input is the first one.
            dir = scratch("stdin-split");
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::hard_link(&input, dir.join("stdin_00000.pcap")).unwrap();
            args[5] = s(&dir);
        }
        let o = run_with_stdin_from(&args, &input);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("is the input - (standard input)"),
            "{args:?}: {}",
            stderr(&o)
        );
        assert_eq!(std::fs::read(&input).unwrap(), before, "{args:?}");
    }
    // `report --html` onto a hard link of its input, named or read through `-`.
    let link = scratch("stdin-self-link.html");
    let _ = std::fs::remove_file(&link);
    std::fs::hard_link(&input, &link).unwrap();
    for args in [
        vec!["report", s(&input), "--html", s(&link)],
        vec!["report", "-", "--html", s(&link)],
    ] {
        let o = run_with_stdin_from(&args, &input);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert_eq!(std::fs::read(&input).unwrap(), before, "{args:?}");
    }
}

/// `export - --replace` removes the partition it replaces: not when the capture read through `-` is
/// kept inside it.
#[test]
fn export_replace_keeps_a_capture_read_through_standard_input_from_the_partition() {
    let root = scratch("stdin-export");
    let _ = std::fs::remove_dir_all(&root);
    let partition = root.join("transactions/capture=kept");
    std::fs::create_dir_all(&partition).unwrap();
    let input = partition.join("cap.pcap");
    std::fs::copy(common::fixture("server-closes.pcap"), &input).unwrap();
    let o = run_with_stdin_from(
        &[
            "export",
            "-",
            "--parquet",
            s(&root),
            "--capture",
            "kept",
            "--replace",
        ],
        &input,
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("standard input"), "{}", stderr(&o));
    assert!(input.exists(), "the capture read was removed");
    // A hard link of a named input inside the partition is the input too.
    let elsewhere = copy_of("server-closes.pcap", "export-linked.pcap");
    std::fs::remove_file(&input).unwrap();
    std::fs::hard_link(&elsewhere, &input).unwrap();
    let o = run(&[
        "export",
        s(&elsewhere),
        "--parquet",
        s(&root),
        "--capture",
        "kept",
        "--replace",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(input.exists());
}

/// A device node that answers every write with "no space left" (`/dev/full`'s major and minor), made
/// in the scratch directory so that an output that replaced it by a file would harm nothing; `None`
/// (said on stderr) where this process may not make device nodes.
fn full_device(name: &str) -> Option<PathBuf> {
    let path = scratch(name);
    let _ = std::fs::remove_file(&path);
    let made = Command::new("mknod")
        .arg(&path)
        .args(["c", "1", "7"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !made {
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            b"skipped: needs to make a device node (mknod: root or CAP_MKNOD) [e2e::never_harm]\n",
        );
        return None;
    }
    Some(path)
}

fn is_char_device(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::metadata(path).is_ok_and(|m| m.file_type().is_char_device())
}

/// A full device, whatever writes to it: exit code 1 and the reason, and the device left a device (an
/// output put in place by a rename would have replaced it by a regular file).
#[test]
fn a_write_to_a_full_device_fails_the_run_and_leaves_the_device() {
    let Some(full) = full_device("full-device") else {
        return;
    };
    let f = common::fixture("stream-stall.pcap");
    let runs: [&[&str]; 4] = [
        &["extract", s(&f), "--port", "3306", "-o", s(&full)],
        &[
            "extract",
            s(&f),
            "--port",
            "3306",
            "--annotate",
            "-o",
            s(&full),
        ],
        &["report", s(&f), "--html", s(&full)],
        &["extract", "-", "--frames", "1-", "-o", s(&full)],
    ];
    for args in runs {
        let o = run_with_stdin_from(args, &f);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("No space left on device") && !stderr(&o).contains("wrote"),
            "{args:?}: {}",
            stderr(&o)
        );
        assert!(is_char_device(&full), "{args:?} replaced the device");
    }
}

/// A FIFO whose reader reads a little and goes away: the writer's next write fails (EPIPE), and so does
/// the run, with exit code 1, instead of saying it wrote every packet.
#[test]
fn a_fifo_whose_reader_quits_fails_the_run() {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    use std::sync::atomic::{AtomicBool, Ordering};
    let fifo = scratch("quitting-reader.fifo");
    let _ = std::fs::remove_file(&fifo);
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let f = common::fixture("stream-stall.pcap");
    for args in [
        vec!["extract", s(&f), "--port", "3306", "-o", s(&fifo)],
        vec!["report", s(&f), "--html", s(&fifo)],
    ] {
        // The reader's end, open before the run (without waiting for a writer), with the smallest pipe
        // buffer (a page), so that even a 50 KB page cannot fit before the reader leaves.
        let reader = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&fifo)
            .unwrap();
        // SAFETY: fcntl on a descriptor this test owns.
        unsafe {
            assert!(libc::fcntl(reader.as_raw_fd(), libc::F_SETPIPE_SZ, 4096) >= 4096);
        }
        let done = AtomicBool::new(false);
        let o = std::thread::scope(|scope| {
            scope.spawn(|| {
                use std::io::Read;
                let mut reader = reader;
                let mut head = [0u8; 16];
                // Until the run has written something (or ended without), then gone.
                while !done.load(Ordering::Relaxed) {
                    match reader.read(&mut head) {
                        Ok(n) if n > 0 => break,
                        _ => std::thread::sleep(std::time::Duration::from_millis(5)),
                    }
                }
            });
            let o = run(&args);
            done.store(true, Ordering::Relaxed);
            o
        });
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("Broken pipe") && !stderr(&o).contains("wrote"),
            "{args:?}: {}",
            stderr(&o)
        );
        assert!(
            std::fs::symlink_metadata(&fifo).is_ok_and(|m| m.file_type().is_fifo()),
            "{args:?} replaced the FIFO"
        );
    }
}
