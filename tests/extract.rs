//! `extract` selects what the findings point at (frames, a time range, one connection among several on a
//! reused 4-tuple), from any input the analyses read (a rotated set, compressed files, standard input),
//! and `split` cuts such inputs as they stream. Checked against tshark's frame numbers, relative times
//! and TCP stream indices on real captures.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn run(args: &[&str]) -> Output {
    Command::new(common::bin()).args(args).output().unwrap()
}

fn ok(args: &[&str]) -> Output {
    let o = run(args);
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    o
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn scratch(name: &str) -> PathBuf {
    common::scratch("extract", name)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Every packet's time as tshark prints it (`frame.time_epoch`), for the frames `filter` selects.
fn times(tshark: &pcapsleuth_testkit::oracle::Tshark, file: &Path, filter: &str) -> Vec<String> {
    let mut args = vec!["-r", s(file), "-T", "fields", "-e", "frame.time_epoch"];
    if !filter.is_empty() {
        args.extend(["-Y", filter]);
    }
    tshark.lines(args)
}

/// A client bound to one port ran three MySQL sessions in a row (fixtures/README.md): one 4-tuple, three
/// connections, which tshark numbers as TCP streams 0, 1 and 2.
#[test]
fn conn_at_a_frame_picks_the_connection_holding_it_among_those_reusing_the_4_tuple() {
    let Some(tshark) = pcapsleuth_testkit::oracle::tshark() else {
        return;
    };
    let input = common::fixture("reused-port.pcap");
    let conn = "10.77.1.2:40123-10.77.0.1:3306";
    let streams = tshark.lines(["-r", s(&input), "-T", "fields", "-e", "tcp.stream"]);
    for stream in ["0", "1", "2"] {
        // Any frame of the stream names it: its first, and its last.
        let frames: Vec<usize> = (1..=streams.len())
            .filter(|&f| streams[f - 1] == stream)
            .collect();
        for at in [frames[0], frames[frames.len() - 1]] {
            let out = scratch(&format!("stream{stream}-at{at}.pcap"));
            let o = ok(&[
                "extract",
                s(&input),
                "--conn",
                conn,
                "--at",
                &at.to_string(),
                "-o",
                s(&out),
            ]);
            assert!(!stderr(&o).contains("warning"), "{}", stderr(&o));
            assert_eq!(
                times(&tshark, &out, ""),
                times(&tshark, &input, &format!("tcp.stream == {stream}")),
                "--at {at}"
            );
        }
    }
    // Without --at: all three, and a warning that says so and where each one is.
    let out = scratch("all.pcap");
    let o = ok(&["extract", s(&input), "--conn", conn, "-o", s(&out)]);
    assert!(
        stderr(&o).contains("3 connections used") && stderr(&o).contains("--at"),
        "{}",
        stderr(&o)
    );
    assert_eq!(
        times(&tshark, &out, ""),
        times(&tshark, &input, "tcp.port == 40123")
    );
    // A compressed capture is read twice as well (once to delimit the connections).
    let zst = scratch("reused-port.pcap.zst");
    std::fs::write(
        &zst,
        zstd::encode_all(&std::fs::read(&input).unwrap()[..], 3).unwrap(),
    )
    .unwrap();
    let (plain, packed) = (scratch("plain.pcap"), scratch("packed.pcap"));
    ok(&[
        "extract",
        s(&input),
        "--conn",
        conn,
        "--at",
        "20",
        "-o",
        s(&plain),
    ]);
    ok(&[
        "extract",
        s(&zst),
        "--conn",
        conn,
        "--at",
        "20",
        "-o",
        s(&packed),
    ]);
    assert!(std::fs::read(&plain).unwrap() == std::fs::read(&packed).unwrap());
    // Standard input cannot be: --at on it is refused rather than answered wrong.
    let o = Command::new(common::bin())
        .args(["extract", "-", "--conn", conn, "--at", "20", "-o", s(&out)])
        .stdin(std::fs::File::open(&input).unwrap())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("reads the capture twice"),
        "{}",
        stderr(&o)
    );
    // A frame no connection on the 4-tuple holds is a usage error that lists where they are.
    let o = run(&[
        "extract",
        s(&input),
        "--conn",
        conn,
        "--at",
        "100000",
        "-o",
        s(&out),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("frames 1-"), "{}", stderr(&o));
}

#[test]
fn frames_and_time_ranges_select_what_tshark_numbers_so() {
    let Some(tshark) = pcapsleuth_testkit::oracle::tshark() else {
        return;
    };
    let input = common::fixture("stream-stall.pcap");
    let out = scratch("frames.pcap");
    ok(&["extract", s(&input), "--frames", "100-250", "-o", s(&out)]);
    assert_eq!(
        times(&tshark, &out, ""),
        times(
            &tshark,
            &input,
            "frame.number >= 100 && frame.number <= 250"
        )
    );
    // With a connection filter too: what both select.
    ok(&[
        "extract",
        s(&input),
        "--frames",
        "1500-",
        "--port",
        "3306",
        "-o",
        s(&out),
    ]);
    assert_eq!(
        times(&tshark, &out, ""),
        times(&tshark, &input, "frame.number >= 1500 && tcp.port == 3306")
    );
    let relative = scratch("relative.pcap");
    ok(&[
        "extract",
        s(&input),
        "--time",
        "0.75..1.9",
        "-o",
        s(&relative),
    ]);
    let expected = times(
        &tshark,
        &input,
        "frame.time_relative >= 0.75 && frame.time_relative < 1.9",
    );
    assert!(expected.len() > 100, "{}", expected.len());
    assert_eq!(times(&tshark, &relative, ""), expected);
    // The same range as UTC times, written as the reports print them.
    let first: f64 = times(&tshark, &input, "frame.number == 1")[0]
        .parse()
        .unwrap();
    let utc = |secs: f64| {
        let o = Command::new("date")
            .args([
                "-u",
                "-d",
                &format!("@{secs:.6}"),
                "+%Y-%m-%d %H:%M:%S.%6N UTC",
            ])
            .output()
            .unwrap();
        String::from_utf8(o.stdout).unwrap().trim().to_string()
    };
    let absolute = scratch("absolute.pcap");
    let range = format!("{}..{}", utc(first + 0.75), utc(first + 1.9));
    ok(&["extract", s(&input), "--time", &range, "-o", s(&absolute)]);
    assert_eq!(times(&tshark, &absolute, ""), expected, "--time {range}");
}

/// The rotated set of fixtures/rotated, and its files concatenated by hand into one.
fn rotated() -> (Vec<PathBuf>, PathBuf) {
    let files = common::rotated_set();
    let path = scratch("rotated-whole.pcap");
    std::fs::write(&path, common::concatenated(&files)).unwrap();
    (files, path)
}

#[test]
fn a_rotated_set_compressed_files_and_standard_input_extract_as_their_concatenation() {
    let (files, whole) = rotated();
    // Frames across the boundaries of the files, of every connection on port 3306.
    let args = ["--port", "3306", "--frames", "900-3500"];
    let reference = scratch("from-whole.pcap");
    ok(&[&["extract", s(&whole)][..], &args, &["-o", s(&reference)]].concat());
    let expected = std::fs::read(&reference).unwrap();
    assert!(expected.len() > 1_000_000, "{}", expected.len());
    // The directory, and the files named out of order.
    for names in [
        vec![s(files[0].parent().unwrap())],
        files.iter().rev().map(|f| s(f)).collect(),
    ] {
        let out = scratch("from-set.pcap");
        let o = ok(&[&["extract"][..], &names, &args, &["-o", s(&out)]].concat());
        assert!(
            stderr(&o).contains("read 4 files as one capture"),
            "{}",
            stderr(&o)
        );
        assert!(std::fs::read(&out).unwrap() == expected, "{names:?}");
    }
    // The whole file zstd-compressed (no extension to go by), and through a pipe.
    let zst = scratch("whole.bin");
    std::fs::write(
        &zst,
        zstd::encode_all(&std::fs::read(&whole).unwrap()[..], 3).unwrap(),
    )
    .unwrap();
    let out = scratch("from-zst.pcap");
    ok(&[&["extract", s(&zst)][..], &args, &["-o", s(&out)]].concat());
    assert!(std::fs::read(&out).unwrap() == expected);
    let out = scratch("from-stdin.pcap");
    let o = common::piped(
        &[&["extract", "-"][..], &args, &["-o", s(&out)]].concat(),
        std::fs::read(&whole).unwrap(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(std::fs::read(&out).unwrap() == expected);
}

#[test]
fn split_cuts_a_rotated_set_as_one_capture() {
    let (files, whole) = rotated();
    let dir = scratch("pieces");
    let _ = std::fs::remove_dir_all(&dir);
    let names: Vec<&str> = files.iter().map(|f| s(f)).collect();
    let o = ok(&[&["split"][..], &names, &["--megabytes", "1", "-o", s(&dir)]].concat());
    assert!(stderr(&o).contains("wrote 4 pieces"), "{}", stderr(&o));
    let mut pieces: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    pieces.sort();
    assert_eq!(pieces[0].file_name().unwrap(), "rotated_00000.pcap");
    let mut joined = Vec::new();
    for (i, p) in pieces.iter().enumerate() {
        let bytes = std::fs::read(p).unwrap();
        assert!(
            bytes.len() <= 1_000_000 + 24 + 70_000,
            "{p:?}: {}",
            bytes.len()
        );
        joined.extend_from_slice(if i == 0 { &bytes } else { &bytes[24..] });
    }
    assert!(joined == std::fs::read(&whole).unwrap());
}

#[test]
fn files_whose_records_mean_different_things_are_not_written_into_one_capture() {
    let pcap = common::fixture("stream-stall.pcap");
    let pcapng = common::fixture("any-cooked.pcapng");
    let out = scratch("mixed.pcap");
    let o = run(&[
        "extract",
        s(&pcap),
        s(&pcapng),
        "--port",
        "3306",
        "-o",
        s(&out),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("any-cooked.pcapng") && stderr(&o).contains("stream-stall.pcap"),
        "{}",
        stderr(&o)
    );
    assert!(!out.exists());
}

/// A filter that selects nothing says so on one line, with the likely mistake: proxy-6033.pcap's MySQL
/// is on port 6033 (fixtures/README.md), so `--port 3306` names where MySQL was; a frame range past the
/// end says how many frames there are. The right port says nothing of the kind.
#[test]
fn a_filter_that_matches_nothing_says_where_mysql_was() {
    let input = common::fixture("proxy-6033.pcap");
    let out = scratch("nothing.pcap");
    let wrong = stderr(&ok(&[
        "extract",
        s(&input),
        "--port",
        "3306",
        "-o",
        s(&out),
    ]));
    assert!(
        wrong.contains(
            "pcapsleuth: warning: --port 3306 matched nothing; MySQL was found on 10.77.0.1:6033\n"
        ),
        "{wrong}"
    );
    let right = stderr(&ok(&[
        "extract",
        s(&input),
        "--port",
        "6033",
        "-o",
        s(&out),
    ]));
    assert!(!right.contains("warning"), "{right}");
    let flow = stderr(&ok(&[
        "extract",
        s(&input),
        "--flow",
        "10.77.0.1:3306",
        "-o",
        s(&out),
    ]));
    assert!(
        flow.contains("--flow 10.77.0.1:3306 matched nothing; MySQL was found on 10.77.0.1:6033"),
        "{flow}"
    );
    let frames = stderr(&ok(&[
        "extract",
        s(&input),
        "--frames",
        "5000-",
        "-o",
        s(&out),
    ]));
    assert!(
        frames.contains("--frames 5000- matched nothing: the capture has "),
        "{frames}"
    );
    let time = stderr(&ok(&[
        "extract",
        s(&input),
        "--time",
        "100..200",
        "-o",
        s(&out),
    ]));
    assert!(
        time.contains("--time 100..200 matched nothing: the capture runs from "),
        "{time}"
    );
    // Each part matched something, but not together.
    let both = stderr(&ok(&[
        "extract",
        s(&input),
        "--port",
        "6033",
        "--frames",
        "1-2",
        "--time",
        "5..",
        "-o",
        s(&out),
    ]));
    assert!(
        both.contains("each matched packets, but no packet matched all of them"),
        "{both}"
    );
}

/// The summary line counts in the house style: "1 packet", and thousands separated ("1,234 packets").
/// err1146-storm.pcap has 12,430 frames (tshark's count is checked by the golden and crosscheck tests).
#[test]
fn the_summary_line_counts_packets_in_the_house_style() {
    let input = common::fixture("err1146-storm.pcap");
    let out = scratch("one-packet.pcap");
    let o = ok(&["extract", s(&input), "--frames", "5", "-o", s(&out)]);
    assert!(stderr(&o).contains("wrote 1 packet to "), "{}", stderr(&o));
    let o = ok(&["extract", s(&input), "--frames", "1-12430", "-o", s(&out)]);
    assert!(
        stderr(&o).contains("wrote 12,430 packets to "),
        "{}",
        stderr(&o)
    );
}
