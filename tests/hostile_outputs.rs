//! What the tools write from hostile or unusual inputs: valid captures from a pcapng file of several
//! sections, outputs that are whole or absent (plots, export's staging, split's set of pieces), names
//! that cannot collide, commands that cannot be misread.

use crate::common;
use crate::hostile_text::adversary;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use pcapsleuth::capture::{Capture, LinkType};

fn run(args: &[&str]) -> Output {
    Command::new(common::bin()).args(args).output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Every record of a capture as read: link type, timestamp, wire length, captured bytes.
fn records(path: &Path) -> Vec<(LinkType, i64, u32, Vec<u8>)> {
    let cap = Capture::open(path).unwrap();
    let mut reader = cap.reader_all();
    let mut out = Vec::new();
    while let Some(r) = reader.next_record() {
        out.push((r.link, r.ts.0, r.orig_len, r.data.to_vec()));
    }
    assert!(
        reader.damage().is_empty(),
        "{}: {:?}",
        path.display(),
        reader.damage()
    );
    out
}

/// A pcapng file whose second section is big-endian, or has another link type (raw IP after
/// Ethernet): `extract` and `split` write captures whose every packet reads back with its own link type,
/// timestamp and bytes (a copy after the first section's header labelled the second section's packets
/// Ethernet, or put big-endian blocks in a little-endian section).
#[test]
fn a_pcapng_of_several_sections_is_extracted_and_split_into_valid_captures() {
    for name in [
        "extract_multisection_endian.pcapng",
        "extract_multisection_linktype.pcapng",
    ] {
        let Some(input) = adversary(name) else {
            return;
        };
        let original = records(&input);
        assert!(original.len() > 20, "{name}");
        let out = common::scratch("sections", &format!("extract-{name}"));
        let o = run(&["extract", s(&input), "--port", "3306", "-o", s(&out)]);
        assert_eq!(o.status.code(), Some(0), "{name}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("later pcapng section"),
            "{}",
            stderr(&o)
        );
        assert_eq!(records(&out), original, "{name}: extract");
        let dir = common::scratch("sections", &format!("split-{name}"));
        let _ = std::fs::remove_dir_all(&dir);
        let o = run(&["split", s(&input), "--packets", "5", "-o", s(&dir)]);
        assert_eq!(o.status.code(), Some(0), "{name}: {}", stderr(&o));
        let mut pieces: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        pieces.sort();
        let from_pieces: Vec<_> = pieces.iter().flat_map(|p| records(p)).collect();
        assert_eq!(from_pieces, original, "{name}: split");
        // tshark reads them back as it reads the original: link types, sources, times, lengths.
        let Some(tshark) = pcapsleuth_testkit::oracle::tshark() else {
            return;
        };
        let fields = |path: &Path| {
            tshark.lines([
                "-r",
                s(path),
                "-T",
                "fields",
                "-e",
                "frame.encap_type",
                "-e",
                "ip.src",
                "-e",
                "frame.time_epoch",
                "-e",
                "frame.len",
            ])
        };
        let expected = fields(&input);
        assert_eq!(
            fields(&out),
            expected,
            "{name}: extract, as tshark reads it"
        );
        let split: Vec<String> = pieces.iter().flat_map(|p| fields(p)).collect();
        assert_eq!(split, expected, "{name}: split, as tshark reads it");
    }
}

/// The pieces in `dir`, by name.
fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// A second split into a directory holding a first one's pieces would leave a mix of both sets (the
/// first run's pieces beyond the second's count stayed, read as part of the capture): refused, naming
/// them, unless `--replace`, which leaves exactly the new set.
#[test]
fn split_never_mixes_its_pieces_with_an_earlier_split() {
    let f = common::fixture("stream-stall.pcap");
    let dir = common::scratch("split-sets", "out");
    let _ = std::fs::remove_dir_all(&dir);
    let o = run(&["split", s(&f), "--packets", "100", "-o", s(&dir)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let first = names_in(&dir);
    assert_eq!(first.len(), 35, "{first:?}");
    std::fs::write(dir.join("notes.txt"), "kept").unwrap();
    let o = run(&["split", s(&f), "--packets", "1000", "-o", s(&dir)]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("already holds 35 pieces of an earlier split")
            && stderr(&o).contains("stream-stall_00000.pcap")
            && stderr(&o).contains("--replace"),
        "{}",
        stderr(&o)
    );
    assert_eq!(names_in(&dir).len(), 36, "nothing written or removed");
    let o = run(&[
        "split",
        s(&f),
        "--packets",
        "1000",
        "-o",
        s(&dir),
        "--replace",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let pieces: Vec<PathBuf> = (0..4)
        .map(|i| dir.join(format!("stream-stall_{i:05}.pcap")))
        .collect();
    let mut expected: Vec<String> = pieces
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    expected.insert(0, "notes.txt".into());
    assert_eq!(names_in(&dir), expected);
    let read: usize = pieces.iter().map(|p| records(p).len()).sum();
    assert_eq!(read, records(&f).len());
}

/// Pieces cut from a stream appear together, when the last is written: none while the input still
/// flows.
#[test]
fn split_pieces_appear_together_when_the_set_is_complete() {
    use std::io::Write;
    let dir = common::scratch("split-together", "out");
    let _ = std::fs::remove_dir_all(&dir);
    let bytes = std::fs::read(common::fixture("stream-stall.pcap")).unwrap();
    let mut child = Command::new(common::bin())
        .args(["split", "-", "--packets", "100", "-o", s(&dir)])
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // More than a stream window (16 MB) of records, so that pieces have been written.
    stdin.write_all(&bytes).unwrap();
    for _ in 0..4 {
        stdin.write_all(&bytes[24..]).unwrap();
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(child.try_wait().unwrap().is_none(), "split ended early");
    assert!(!dir.exists(), "pieces appeared before the set was complete");
    drop(stdin);
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(names_in(&dir).len(), 171);
    let parent = dir.parent().unwrap();
    assert!(
        !names_in(parent)
            .iter()
            .any(|n| n.starts_with(".pcapsleuth-")),
        "{:?}",
        names_in(parent)
    );
}

/// The hidden staging directories of this test's scratch `dir`.
fn stagings(dir: &Path) -> Vec<String> {
    names_in(dir)
        .into_iter()
        .filter(|n| n.starts_with(".pcapsleuth-"))
        .collect()
}

/// `split` reading a stream, interrupted (Ctrl-C) while it writes: nothing is left, neither output nor
/// staging directory; `export` killed outright (SIGKILL, no chance to clean up): its staging directory
/// is removed by the next run into the same place, which says so. (An `export` stopped by a signal it
/// can take: `tests/interrupt.rs`.)
#[test]
fn interrupted_runs_leave_no_staging_directory() {
    use std::io::Write;
    let bytes = std::fs::read(common::fixture("err1146-storm.pcap")).unwrap();
    let root = common::scratch("interrupted", "root");
    for (signal, args) in [
        (
            libc::SIGINT,
            vec!["split", "-", "--packets", "10", "-o", s(&root)],
        ),
        (libc::SIGKILL, vec!["export", "-", "--parquet", s(&root)]),
    ] {
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        let mut child = Command::new(common::bin())
            .args(&args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(&bytes).unwrap();
        let mut waited = 0;
        while stagings(&root).is_empty() && waited < 600 {
            std::thread::sleep(std::time::Duration::from_millis(50));
            waited += 1;
        }
        assert!(
            !stagings(&root).is_empty(),
            "{args:?}: no staging directory"
        );
        // SAFETY: a signal to the child this test started and has not waited for yet.
        unsafe {
            libc::kill(child.id() as libc::pid_t, signal);
        }
        let status = child.wait().unwrap();
        drop(stdin);
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(signal), "{args:?}: {status:?}");
        if signal == libc::SIGKILL {
            let left = stagings(&root);
            assert_eq!(left.len(), 1, "{left:?}");
            let o = run(&[
                "export",
                s(&common::fixture("server-closes.pcap")),
                "--parquet",
                s(&root),
            ]);
            assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
            assert!(
                stderr(&o).contains(&format!("removed {}", root.join(&left[0]).display()))
                    && stderr(&o).contains("left by an export that was killed"),
                "{}",
                stderr(&o)
            );
        }
        assert!(
            stagings(&root).is_empty(),
            "{args:?}: {:?}",
            stagings(&root)
        );
        if signal != libc::SIGKILL {
            assert!(
                names_in(&root).is_empty(),
                "{args:?}: {:?}",
                names_in(&root)
            );
        }
    }
}

/// Plots written onto a file system that fills up: the run fails, and every plot file there is whole
/// (a PNG with its end chunk, an SVG with its end tag) — never the cut 4 KB SVG a plain write left. Needs
/// a small tmpfs of its own (`unshare -m` and `mount`, as root); said and passed where it cannot have one.
#[test]
fn plots_on_a_full_file_system_are_whole_or_absent() {
    let dir = common::scratch("plots-full", "fs");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let f = common::fixture("stream-stall.pcap");
    // Room for about one plot: the first PNG fits, a later file does not.
    let script = format!(
        "mount -t tmpfs -o size=96k tmpfs '{d}' || exit 99
         '{bin}' report '{f}' --plots '{d}/plots' >/dev/null 2>'{d}/err'; echo \"exit $?\"
         cat '{d}/err'
         for p in '{d}'/plots/*; do
           [ -e \"$p\" ] || continue
           case $p in
             *.svg) tail -c 7 \"$p\" | grep -q '</svg>' && echo \"whole $p\" || echo \"cut $p\" ;;
             *.png) tail -c 8 \"$p\" | od -An -c | grep -q 'I   E   N   D' && echo \"whole $p\" || echo \"cut $p\" ;;
           esac
         done",
        d = dir.display(),
        bin = common::bin(),
        f = f.display()
    );
    let o = Command::new("unshare")
        .args(["-m", "sh", "-c", &script])
        .output();
    let Some(o) = o
        .ok()
        .filter(|o| o.status.code() != Some(99) && o.status.success())
    else {
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            b"skipped: needs a tmpfs of its own (unshare -m, mount: root) [e2e::hostile_outputs]\n",
        );
        return;
    };
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.starts_with("exit 1\n"), "{out}");
    assert!(out.contains("No space left on device"), "{out}");
    assert!(out.contains("whole "), "no plot fit at all: {out}");
    assert!(!out.contains("cut "), "{out}");
}

/// Captures whose names differ only in letters outside ASCII once gave the same partition
/// (`capture=__`), so that `--replace` of one replaced the other's rows.
#[test]
fn exports_of_captures_named_apart_stay_apart() {
    let root = common::scratch("export-names", "root");
    let _ = std::fs::remove_dir_all(&root);
    let dir = common::scratch("export-names", "in");
    std::fs::create_dir_all(&dir).unwrap();
    for name in ["ü.pcap", "é.pcap"] {
        let f = dir.join(name);
        std::fs::copy(common::fixture("server-closes.pcap"), &f).unwrap();
        let o = run(&["export", s(&f), "--parquet", s(&root), "--replace"]);
        assert_eq!(o.status.code(), Some(0), "{name}: {}", stderr(&o));
    }
    assert_eq!(
        names_in(&root.join("transactions")),
        ["capture=_xc3_xa9", "capture=_xc3_xbc"]
    );
}

/// The `extract` command a finding suggests, pasted into a shell, runs: for a file named with a leading
/// `-` (read as an option, unprotected), spaces and a quote.
#[test]
fn the_suggested_extract_command_runs_for_any_file_name() {
    let dir = common::scratch("odd-names", "d");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for name in ["-x.pcap", "-it's a \"capture\".pcap", "--help"] {
        std::fs::copy(common::fixture("server-closes.pcap"), dir.join(name)).unwrap();
        let o = Command::new(common::bin())
            .args(["report", "--json", "--", name])
            .current_dir(&dir)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{name}: {}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let command = v["findings"][0]["extract_command"].as_str().unwrap();
        let out = dir.join(command.rsplit(' ').next().unwrap());
        let _ = std::fs::remove_file(&out);
        let o = Command::new("sh")
            .arg("-c")
            .arg(format!(
                "exec \"$0\" {}",
                command.trim_start_matches("pcapsleuth ")
            ))
            .arg(common::bin())
            .current_dir(&dir)
            .output()
            .unwrap();
        assert_eq!(
            o.status.code(),
            Some(0),
            "{name}: `{command}`: {}",
            stderr(&o)
        );
        assert!(out.exists(), "{name}: `{command}` wrote nothing");
    }
}

/// `first-reset -` with a terminal on standard input waited without a word for a capture nobody can
/// type: refused, saying how to give one.
#[test]
fn standard_input_that_is_a_terminal_is_refused() {
    // A pseudo-terminal of our own as standard input.
    // SAFETY: posix_openpt/grantpt/unlockpt/ptsname on the descriptor just opened; the name is copied
    // before any other call.
    let slave = unsafe {
        let master = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY);
        if master < 0 || libc::grantpt(master) != 0 || libc::unlockpt(master) != 0 {
            let _ = std::io::Write::write_all(
                &mut std::io::stderr(),
                b"skipped: needs a pseudo-terminal (/dev/ptmx) [e2e::hostile_outputs]\n",
            );
            return;
        }
        let name = libc::ptsname(master);
        std::ffi::CStr::from_ptr(name)
            .to_string_lossy()
            .into_owned()
    };
    let tty = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&slave)
        .unwrap();
    let mut child = Command::new(common::bin())
        .args(["first-reset", "-"])
        .stdin(tty)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // A hang guard, not a speed test: a run that waits on the terminal is stopped.
    let started = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > std::time::Duration::from_secs(20) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("first-reset - waited on the terminal without a word");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("standard input, which is a terminal"),
        "{}",
        stderr(&o)
    );
}
