//! The `pcapsleuth` binary end to end: bad input is one clear line and exit code 2, JSON keeps its
//! documented shape, and `extract`/`split` write captures tshark reads back.

use crate::common;

use pcapsleuth_testkit::oracle;

use std::path::PathBuf;
use std::process::{Command, Output};

fn run(args: &[&str]) -> Output {
    Command::new(common::bin()).args(args).output().unwrap()
}

fn scratch(name: &str) -> PathBuf {
    common::scratch("cli", name)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Exit code 2, exactly one line on stderr naming the file, nothing on stdout, no panic.
fn assert_input_error(args: &[&str], file: &str, mentions: &str) {
    let o = run(args);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}: stderr {err}");
    assert_eq!(
        err.lines().count(),
        1,
        "{args:?}: one line expected, got {err}"
    );
    assert!(err.contains(file), "{args:?}: {err} does not name {file}");
    assert!(
        err.contains(mentions),
        "{args:?}: {err} does not say {mentions}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

fn write(name: &str, bytes: &[u8]) -> String {
    let p = scratch(name);
    std::fs::write(&p, bytes).unwrap();
    p.to_str().unwrap().to_owned()
}

fn pcap_header(linktype: u32) -> Vec<u8> {
    let mut h = vec![0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    h.extend_from_slice(&65535u32.to_le_bytes());
    h.extend_from_slice(&linktype.to_le_bytes());
    h
}

#[test]
fn bad_inputs_get_one_line_naming_the_file_and_exit_code_2() {
    assert_input_error(
        &["first-reset", "/nonexistent/x.pcap"],
        "/nonexistent/x.pcap",
        "cannot open",
    );
    let dir = scratch("no-captures-here");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("notes.txt"), b"not a capture\n").unwrap();
    let d = dir.to_str().unwrap();
    assert_input_error(&["first-reset", d], d, "directory without capture files");
    let empty = write("empty.pcap", b"");
    assert_input_error(&["first-reset", &empty], &empty, "empty");
    let text = write("notes.pcap", b"this is not a capture file at all\n");
    assert_input_error(&["flows", &text], &text, "not a pcap or pcapng");
    let short = write("short.pcap", &pcap_header(1)[..10]);
    assert_input_error(&["first-reset", &short], &short, "cut short");
    // Standard input and devices are read as streams: here, empty ones.
    assert_input_error(&["first-reset", "-"], "-", "empty");
    assert_input_error(&["flows", "/dev/null"], "/dev/null", "empty");
    let usb = write("usb.pcap", &pcap_header(189));
    assert_input_error(&["first-reset", &usb], &usb, "unsupported link type 189");
}

#[test]
fn garbage_after_a_valid_header_is_reported_with_its_offset() {
    let mut bytes = pcap_header(1);
    bytes.extend_from_slice(&[0xff; 64]);
    let f = write("garbage.pcap", &bytes);
    let o = run(&["first-reset", "--json", &f]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains(&f) && err.contains("offset 24") && err.contains("caplen"),
        "{err}"
    );
    // What could be read (nothing) is still reported on stdout.
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["closes"].as_array().unwrap().len(), 0);
}

#[test]
fn a_capture_cut_short_mid_record_gives_results_and_a_warning() {
    let full = std::fs::read(common::fixture("stream-stall.pcap")).unwrap();
    let cut = write("cut.pcap", &full[..full.len() - 700]);
    let o = run(&["first-reset", "--json", &cut]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("warning") && stderr(&o).contains("cut short"),
        "{}",
        stderr(&o)
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        v["first_rst"]["frame"], 2029,
        "the server's RST is before the cut"
    );
}

#[test]
fn first_reset_json_has_the_documented_fields() {
    let f = common::fixture("stream-stall.pcap");
    let o = run(&["first-reset", "--json", f.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rst = &v["first_rst"];
    assert_eq!(rst["frame"], 2029);
    assert_eq!(rst["initiator"], "server");
    assert_eq!(rst["flag"], "RST");
    assert_eq!(rst["client"], "10.77.1.2:41452");
    assert_eq!(rst["server"], "10.77.0.1:3306");
    assert!(rst["time"].as_f64().unwrap() > 1.7e9);
    assert!((rst["rel_time"].as_f64().unwrap() - 3.585592).abs() < 1e-6);
    assert!(rst["reason"].as_str().unwrap().contains("server RST"));
    let closes = v["closes"].as_array().unwrap();
    assert_eq!(closes.len(), 4);
    let times: Vec<f64> = closes.iter().map(|c| c["time"].as_f64().unwrap()).collect();
    assert!(
        times.windows(2).all(|w| w[0] <= w[1]),
        "closes in time order"
    );
    assert_eq!(v["first_fin"]["frame"], 14);
}

#[test]
fn extract_writes_exactly_the_connection_and_tshark_reads_it() {
    let Some(tshark) = oracle::tshark() else {
        return;
    };
    let src = common::fixture("stream-stall.pcap");
    let out = scratch("one.pcap");
    let o = run(&[
        "extract",
        src.to_str().unwrap(),
        "--conn",
        "10.77.1.2:41452-10.77.0.1:3306",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        tshark.count(&out, "frame"),
        tshark.count(&src, "tcp.port==41452"),
        "extract --conn equals tshark's tcp.port filter for that client port"
    );
    let by_port = scratch("port.pcapng");
    let cooked = common::fixture("any-cooked.pcapng");
    let o = run(&[
        "extract",
        cooked.to_str().unwrap(),
        "--port",
        "3306",
        "-o",
        by_port.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        tshark.count(&by_port, "frame"),
        tshark.count(&cooked, "tcp.port==3306")
    );
    // Records are byte-identical: the same packets decode to the same first-reset answer.
    let a = run(&["first-reset", "--json", by_port.to_str().unwrap()]);
    let b = run(&["first-reset", "--json", cooked.to_str().unwrap()]);
    let (a, b): (serde_json::Value, serde_json::Value) = (
        serde_json::from_slice(&a.stdout).unwrap(),
        serde_json::from_slice(&b.stdout).unwrap(),
    );
    assert_eq!(a["first_fin"]["time"], b["first_fin"]["time"]);
}

#[test]
fn split_cuts_into_pieces_tshark_reads_and_loses_no_packet() {
    let Some(tshark) = oracle::tshark() else {
        return;
    };
    let src = common::fixture("err1146-storm.pcap");
    let dir = scratch("pieces");
    let _ = std::fs::remove_dir_all(&dir);
    let o = run(&[
        "split",
        src.to_str().unwrap(),
        "--packets",
        "5000",
        "-o",
        dir.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let mut pieces: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    pieces.sort();
    let counts: Vec<usize> = pieces.iter().map(|p| tshark.count(p, "frame")).collect();
    let total = tshark.count(&src, "frame");
    assert_eq!(counts.iter().sum::<usize>(), total);
    assert_eq!(counts.len(), total.div_ceil(5000));
    assert!(
        counts[..counts.len() - 1].iter().all(|&c| c == 5000),
        "{counts:?}"
    );
}

#[test]
fn extract_and_split_refuse_nonsense_arguments() {
    let src = common::fixture("err1146-storm.pcap");
    let o = run(&[
        "extract",
        src.to_str().unwrap(),
        "--conn",
        "nonsense",
        "-o",
        "/tmp/x.pcap",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--conn"), "{}", stderr(&o));
    let o = run(&[
        "split",
        src.to_str().unwrap(),
        "--packets",
        "0",
        "-o",
        "/tmp/x",
    ]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn split_by_megabytes_keeps_pieces_under_the_size_and_every_packet() {
    let Some(tshark) = oracle::tshark() else {
        return;
    };
    let src = common::fixture("stream-stall.pcap");
    let dir = scratch("pieces-mb");
    let _ = std::fs::remove_dir_all(&dir);
    let o = run(&[
        "split",
        src.to_str().unwrap(),
        "--megabytes",
        "1",
        "-o",
        dir.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let pieces: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(pieces.len() >= 4, "{pieces:?}");
    for p in &pieces {
        // Each piece: the 24-byte file header plus records up to 1 MB (a piece holds at least one record).
        assert!(
            std::fs::metadata(p).unwrap().len() <= 1_000_000 + 24 + 262_160,
            "{p:?}"
        );
    }
    let total: usize = pieces.iter().map(|p| tshark.count(p, "frame")).sum();
    assert_eq!(total, tshark.count(&src, "frame"));
}

#[test]
fn extract_by_endpoint_takes_every_connection_of_that_endpoint() {
    let Some(tshark) = oracle::tshark() else {
        return;
    };
    let src = common::fixture("ipv6.pcap");
    let out = scratch("flow.pcap");
    let server = common::json(&["flows", "--json", src.to_str().unwrap()])["connections"][0]
        ["server"]
        .as_str()
        .unwrap()
        .to_owned();
    let o = run(&[
        "extract",
        src.to_str().unwrap(),
        "--flow",
        &server,
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(server.starts_with('['), "an IPv6 endpoint: {server}");
    assert_eq!(
        tshark.count(&out, "frame"),
        tshark.count(&src, "tcp.port==3306")
    );
}

#[test]
fn durations_without_a_unit_and_thread_counts_out_of_range_are_refused_before_reading() {
    let src = common::fixture("err1146-storm.pcap");
    let src = src.to_str().unwrap();
    let most = 4 * std::thread::available_parallelism().map_or(1, usize::from);
    let too_many = (most + 1).to_string();
    for (args, says) in [
        (
            vec!["rate", "--interval", "1", src],
            "`1` has no unit: write 1ms or 1s",
        ),
        (vec!["report", "--interval", "500us", src], "at least 1ms"),
        (
            vec!["mysql", "--slower-than", "10", src],
            "`10` has no unit",
        ),
        (
            vec!["rt", "--interval", "fast", src],
            "a number with a unit",
        ),
        (vec!["first-reset", "-j", "0", src], "from 1 to"),
        (
            vec!["first-reset", "--threads", &too_many, src],
            "from 1 to",
        ),
    ] {
        let o = run(&args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err} does not say {says}");
        assert!(o.stdout.is_empty(), "{args:?} printed a result");
    }
    // The same duration in two units selects the same requests.
    let ms = run(&["mysql", "--json", "--slower-than", "2ms", src]);
    let s = run(&["mysql", "--json", "--slower-than", "0.002s", src]);
    assert_eq!(ms.status.code(), Some(0), "{}", stderr(&ms));
    assert_eq!(ms.stdout, s.stdout);
    let all = run(&["mysql", "--json", src]);
    assert_ne!(
        ms.stdout, all.stdout,
        "--slower-than 2ms selected everything"
    );
    let one = run(&["first-reset", "--json", "-j", "1", src]);
    let most = run(&["first-reset", "--json", "-j", &most.to_string(), src]);
    assert_eq!(one.stdout, most.stdout);
}

/// The phase log (a developer's diagnostic, DEVELOPMENT.md) goes to stderr only: the answer on stdout is
/// the same with it on, also when the work is laid out for far more threads than the machine has (the
/// pool stays at the cores, so the predictions hold no wait for a core), and it predicts less time on
/// more cores.
#[test]
fn the_phase_log_leaves_the_answer_alone_and_predicts_up_to_the_layout() {
    let src = common::fixture("err1146-storm.pcap");
    let src = src.to_str().unwrap();
    let plain = run(&["report", "--json", src]);
    assert_eq!(plain.status.code(), Some(0), "{}", stderr(&plain));
    assert!(!stderr(&plain).contains("phases:"), "{}", stderr(&plain));
    let logged = Command::new(common::bin())
        .args(["report", "--json", "-j", "64", src])
        .env("PCAPSLEUTH_PHASES", "1")
        .output()
        .unwrap();
    let log = stderr(&logged);
    assert_eq!(logged.status.code(), Some(0), "{log}");
    assert_eq!(
        logged.stdout, plain.stdout,
        "the phase log changed the answer"
    );
    assert!(
        log.contains("laid out for 64 threads") && log.contains("bucket tasks"),
        "{log}"
    );
    let predicted: Vec<(usize, f64)> = log
        .lines()
        .skip_while(|l| !l.contains("predicted wall"))
        .nth(1)
        .unwrap_or_else(|| panic!("no predictions in {log}"))
        .split(" s")
        .filter_map(|p| {
            let (n, secs) = p.trim().split_once(": ")?;
            Some((n.parse().ok()?, secs.parse().ok()?))
        })
        .collect();
    let cores: Vec<usize> = predicted.iter().map(|p| p.0).collect();
    assert_eq!(cores, [1, 2, 4, 8, 16, 32, 64], "{log}");
    // More cores never make it slower than one (the merges of the fold add a level per doubling, so on
    // a capture this small the figures may flatten or tick up at the far end).
    assert!(predicted[0].1 > 0.0, "{log}");
    assert!(
        predicted.iter().all(|p| p.1 <= predicted[0].1) && predicted[1].1 < predicted[0].1,
        "{log}"
    );
    // Without the log, 64 threads are refused on a machine with fewer than 16 cores.
    if std::thread::available_parallelism().map_or(1, usize::from) < 16 {
        let refused = run(&["report", "--json", "-j", "64", src]);
        assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    }
}

#[test]
fn split_shows_its_two_sizes_as_alternatives_and_needs_one() {
    let help = run(&["split", "--help"]);
    let usage = String::from_utf8_lossy(&help.stdout);
    assert!(usage.contains("<--packets <N>|--megabytes <N>>"), "{usage}");
    let src = common::fixture("err1146-storm.pcap");
    let o = run(&["split", src.to_str().unwrap(), "-o", "/tmp/never-written"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--packets"), "{}", stderr(&o));
    assert!(!std::path::Path::new("/tmp/never-written").exists());
}

#[test]
fn completions_for_every_shell_know_every_command_and_bash_parses_its_script() {
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let o = run(&["completions", shell]);
        assert_eq!(o.status.code(), Some(0), "{shell}: {}", stderr(&o));
        let script = String::from_utf8_lossy(&o.stdout);
        for word in [
            "first-reset",
            "extract",
            "split",
            "slower-than",
            "mysql-port",
        ] {
            assert!(script.contains(word), "{shell} completions lack {word}");
        }
    }
    let path = scratch("pcapsleuth.bash");
    std::fs::write(&path, run(&["completions", "bash"]).stdout).unwrap();
    let check = Command::new("bash").arg("-n").arg(&path).output().unwrap();
    assert!(check.status.success(), "{}", stderr(&check));
    assert_eq!(run(&["completions", "tcsh"]).status.code(), Some(2));
}

#[test]
fn the_manual_pages_hold_every_command_and_option() {
    let o = run(&["man"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let page = String::from_utf8_lossy(&o.stdout);
    assert!(
        page.starts_with(".ie"),
        "not roff: {}",
        &page[..80.min(page.len())]
    );
    assert!(page.contains(".TH pcapsleuth 1"), "{page}");
    for command in [
        "first\\-reset",
        "flows",
        "mysql",
        "rate",
        "rt",
        "report",
        "extract",
        "split",
    ] {
        assert!(page.contains(command), "the main page lacks {command}");
    }
    let dir = scratch("man");
    let o = run(&["man", "--dir", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let first_reset = std::fs::read_to_string(dir.join("pcapsleuth-first-reset.1")).unwrap();
    assert!(
        first_reset.contains("How many closes to list"),
        "{first_reset}"
    );
    assert!(dir.join("pcapsleuth-mysql.1").exists());
}

/// A real capture made long enough for a progress line: stream-stall.pcap's records 20 times over,
/// each copy a minute after the previous one.
fn long_capture() -> PathBuf {
    let bytes = std::fs::read(common::fixture("stream-stall.pcap")).unwrap();
    let (header, mut rest) = bytes.split_at(24);
    let mut records = Vec::new();
    while rest.len() >= 16 {
        let len = u32::from_le_bytes(rest[8..12].try_into().unwrap()) as usize;
        records.push(&rest[..16 + len]);
        rest = &rest[16 + len..];
    }
    let mut out = header.to_vec();
    for copy in 0..20u32 {
        for r in &records {
            let secs = u32::from_le_bytes(r[..4].try_into().unwrap()) + copy * 60;
            out.extend_from_slice(&secs.to_le_bytes());
            out.extend_from_slice(&r[4..]);
        }
    }
    assert!(out.len() > 80 << 20, "{} bytes", out.len());
    let path = scratch("long.pcap");
    std::fs::write(&path, out).unwrap();
    path
}

#[test]
fn progress_is_one_line_within_a_narrow_terminal_and_silent_without_one() {
    let long = long_capture();
    let long = long.to_str().unwrap();
    // A 70-column terminal (util-linux's `script` gives the command one).
    let shown = scratch("typescript");
    let o = Command::new("script")
        .args(["-qfec"])
        .arg(format!(
            "stty rows 24 cols 70; {} first-reset -j 1 {long} > /dev/null",
            common::bin()
        ))
        .arg(&shown)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let typescript = String::from_utf8_lossy(&std::fs::read(&shown).unwrap()).into_owned();
    // What each draw left on the screen, as a person sees it: a carriage return, a new line, or a
    // cursor move or erase (any escape but a colour's, which ends in `m`) starts a new piece of line, so
    // two draws written back to back (a busy machine delays the first) are two lines, not one twice as
    // wide; colours take no columns.
    let mut updates: Vec<String> = vec![String::new()];
    let mut chars = typescript.chars();
    while let Some(c) = chars.next() {
        match c {
            '\r' | '\n' => updates.push(String::new()),
            '\x1b' => {
                let mut last = ' ';
                for e in chars.by_ref() {
                    last = e;
                    if e.is_ascii_alphabetic() {
                        break;
                    }
                }
                if last != 'm' {
                    updates.push(String::new());
                }
            }
            c => updates.last_mut().unwrap().push(c),
        }
    }
    // At 70 columns the line has no bar: what is fixed in it (sizes, rate, time left) must fit.
    updates.retain(|l| l.contains("% ") && l.contains(" left"));
    assert!(!updates.is_empty(), "no progress line: {typescript}");
    for u in &updates {
        assert!(u.chars().count() <= 70, "wider than the terminal: {u:?}");
        assert!(u.contains("MiB") && u.contains("left"), "{u:?}");
    }
    // Without a terminal: nothing on stderr at all.
    let o = run(&["first-reset", "-j", "1", long]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(stderr(&o), "");
}

#[test]
fn text_fits_the_terminal_it_is_shown_on_and_120_columns_elsewhere() {
    let input = common::fixture("stream-stall.pcap");
    let input = input.to_str().unwrap();
    // Through a pipe: 120 columns, and this report needs them all (so the terminal's width below matters).
    let piped = common::text(&["report", input]);
    let widest = |t: &str| t.lines().map(|l| l.chars().count()).max().unwrap_or(0);
    assert!(
        widest(&piped) > 100 && widest(&piped) <= 120,
        "{}: {piped}",
        widest(&piped)
    );
    // On an 80-column terminal (util-linux's `script` gives the command one): 80.
    let shown = scratch("report-typescript");
    let o = Command::new("script")
        .args(["-qfec"])
        .arg(format!(
            "stty rows 24 cols 80; {} report {input}",
            common::bin()
        ))
        .arg(&shown)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    // What the command printed: `script`'s own first and last lines (when it runs without a terminal of
    // its own) left out.
    let typescript: String = String::from_utf8_lossy(&std::fs::read(&shown).unwrap())
        .replace('\r', "")
        .lines()
        .filter(|l| !l.starts_with("Script started") && !l.starts_with("Script done"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(
        typescript.contains("[first_abnormal_close]"),
        "{typescript}"
    );
    assert!(widest(&typescript) <= 80, "{typescript}");
    // The same words, wrapped differently (a command's lines end in " \" where the width falls).
    let words = |t: &str| common::flat(&t.replace(" \\\n", " "));
    assert_eq!(words(&typescript), words(&piped));
}
