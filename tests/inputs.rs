//! Every capture a user holds gives the same report: one file, the same packets cut into a set of files
//! (in any order on the command line), compressed with gzip, zstd, xz or lz4, or piped to standard input.

use crate::common;

use std::io::Write;
use std::path::{Path, PathBuf};

use pcapsleuth::analysis::{
    analyze, analyze_set, first_reset, full_report, EngineOptions, Everything, Run, Statistics,
};
use pcapsleuth::capture::{Capture, CaptureSet, Order, PcapWriter};
use pcapsleuth::flow::{decode, Decoded};
use pcapsleuth::report::to_json;
use pcapsleuth_testkit::oracle::{self, Oracle};
use proptest::prelude::*;

/// A path in the test's own temporary directory, removed with it when the test ends (pass or fail).
fn scratch(tmp: &tempfile::TempDir, name: &str) -> PathBuf {
    tmp.path().join(name)
}

fn opts(splits: usize, threads: usize, stream_window: usize) -> EngineOptions {
    EngineOptions {
        threads,
        splits: Some(splits),
        stream_window,
        ..EngineOptions::default()
    }
}

/// Every analysis, rates at 100 ms.
fn every() -> Everything {
    Everything::new(100_000_000)
}

/// Everything a user reads: the reports, the connections, the packet counts. Not the list of files
/// (nor the `extract_command`s of findings, which name them).
fn reports(a: &Run<Statistics>) -> String {
    let mut full: serde_json::Value = serde_json::from_str(&to_json(&full_report(a))).unwrap();
    strip_files(&mut full);
    to_json(&first_reset(a, usize::MAX))
        + &full.to_string()
        + &to_json(&a.connections)
        + &to_json(&a.capture.counts)
        + &format!("{:?}{:?}", a.capture.first_ts, a.capture.last_ts)
}

/// Cuts `capture` into files at the given record indices (each file a valid capture: the header, then
/// whole records), named as `tcpdump -C` names them: NAME, NAME1, NAME2, ...
fn cut_into_files(capture: &Path, cuts: &[usize], dir: &Path) -> Vec<PathBuf> {
    std::fs::create_dir_all(dir).unwrap();
    let cap = Capture::open(capture).unwrap();
    let mut files = Vec::new();
    let mut writer: Option<PcapWriter> = None;
    let mut reader = cap.reader_all();
    let mut index = 0usize;
    while let Some(rec) = reader.next_record() {
        if writer.is_none() || cuts.contains(&index) {
            if let Some(w) = writer.take() {
                w.finish().unwrap();
            }
            let n = files.len();
            let name = if n == 0 {
                "set.pcap".to_string()
            } else {
                format!("set.pcap{n}")
            };
            files.push(dir.join(name));
            writer = Some(PcapWriter::create(files.last().unwrap(), &cap).unwrap());
        }
        writer.as_mut().unwrap().write(&rec).unwrap();
        index += 1;
    }
    writer.unwrap().finish().unwrap();
    files
}

#[test]
fn a_capture_cut_into_a_rotated_set_gives_the_reports_of_the_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let whole = common::fixture("stream-stall.pcap");
    let one = reports(&analyze(
        &Capture::open(&whole).unwrap(),
        &opts(1, 1, 0),
        every,
    ));
    // Cuts inside the long resultset and between sessions; twelve files so that names sort by number.
    let cuts: Vec<usize> = (1..12).map(|i| i * 190).collect();
    let files = cut_into_files(&whole, &cuts, &scratch(&tmp, "rotated-cut"));
    assert_eq!(files.len(), 12);
    // As a shell glob gives them: set.pcap, set.pcap1, set.pcap10, set.pcap11, set.pcap2, ...
    let mut as_text = files.clone();
    as_text.sort();
    for splits in [1, 2, 3, 7, 64] {
        let mut set = CaptureSet::open(&as_text).unwrap();
        assert_eq!(set.order, Order::Concatenated);
        assert!(set.overlaps.is_empty());
        let a = analyze_set(&mut set, &opts(splits, 2, 0), every, |_, _| {});
        assert!(
            reports(&a) == one,
            "a set of 12 files differs from the whole with {splits} splits"
        );
        let located: Vec<_> = a.capture.files.iter().map(|f| f.frames).collect();
        assert_eq!(located.iter().sum::<u64>(), a.capture.counts.packets);
        // Frame 191 is the first frame of the second file.
        let (file, in_file) = a.capture.locate(191).unwrap();
        assert!(file.path.ends_with("set.pcap1"), "{}", file.path);
        assert_eq!(in_file, 1);
    }
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

fn zstd(bytes: &[u8]) -> Vec<u8> {
    zstd::encode_all(bytes, 3).unwrap()
}

fn xz(bytes: &[u8]) -> Vec<u8> {
    let mut e = liblzma::write::XzEncoder::new(Vec::new(), 1);
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

fn lz4(bytes: &[u8]) -> Vec<u8> {
    let mut e = lz4_flex::frame::FrameEncoder::new(Vec::new());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

/// A set `tcpdump -C 1` wrote while sessions started and ended (fixtures/README.md): the handshake of
/// the long session in the first file and its last queries in the fourth, one short session across a
/// boundary. Read as a set, it gives the reports of its files concatenated.
#[test]
fn a_real_rotated_set_reads_as_one_capture() {
    let files = common::rotated_set();
    let dir = common::fixture("rotated");
    let whole = Capture::from_vec("concatenated", common::concatenated(&files)).unwrap();
    let reference = analyze(&whole, &opts(1, 1, 0), every);
    for splits in [1, 2, 3, 7, 64] {
        let mut set = CaptureSet::open(std::slice::from_ref(&dir)).unwrap();
        let a = analyze_set(&mut set, &opts(splits, 2, 0), every, |_, _| {});
        assert!(
            reports(&a) == reports(&reference),
            "the set differs from its concatenation with {splits} splits"
        );
    }
    let mut set = CaptureSet::open(std::slice::from_ref(&dir)).unwrap();
    let a = analyze_set(&mut set, &EngineOptions::default(), every, |_, _| {});
    assert_eq!(a.connections.len(), 41);
    let report = a.output.mysql.clone().report();
    assert_eq!((report.sessions, report.queries), (41, 86));
    let long = a
        .connections
        .iter()
        .find(|c| c.client.port == 43940)
        .unwrap();
    let (first_file, first) = a.capture.locate(long.first.frame).unwrap();
    let (last_file, last) = a.capture.locate(long.last.frame).unwrap();
    assert!(first_file.path.ends_with("rotated.pcap") && first == 1);
    assert!(last_file.path.ends_with("rotated.pcap3") && last == 74);
    assert_eq!(long.last.frame, 2854);
    let across = a
        .connections
        .iter()
        .find(|c| c.client.port == 44174)
        .unwrap();
    assert_eq!(
        a.capture
            .locate(across.first.frame)
            .map(|(f, n)| (f.path.clone(), n)),
        Some((files[1].display().to_string(), 953))
    );
}

/// The reference for a set is `mergecap -a` of its files in time order: Wireshark's own concatenation.
#[test]
fn a_rotated_set_gives_the_reports_of_mergecap_a() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(mergecap) = oracle::require(Oracle::Mergecap) else {
        return;
    };
    let whole = common::fixture("err1146-storm.pcap");
    let files = cut_into_files(
        &whole,
        &[3000, 9000, 9001, 20000],
        &scratch(&tmp, "for-mergecap"),
    );
    let merged = scratch(&tmp, "mergecap-a.pcap");
    let mut cmd = mergecap.command();
    cmd.args(["-a", "-F", "pcap", "-w"])
        .arg(&merged)
        .args(&files);
    let o = cmd.output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let reference = reports(&analyze(
        &Capture::open(&merged).unwrap(),
        &opts(1, 1, 0),
        every,
    ));
    let mut set = CaptureSet::open(&files).unwrap();
    let a = analyze_set(&mut set, &opts(7, 2, 0), every, |_, _| {});
    assert!(reports(&a) == reference);
}

/// `capture` as if captured at once on two interfaces: its connections dealt alternately (by client
/// port) into two files, each in time order, which overlap in time.
fn dealt_into_two_files(capture: &Path, dir: &Path) -> [PathBuf; 2] {
    std::fs::create_dir_all(dir).unwrap();
    let cap = Capture::open(capture).unwrap();
    let files = [dir.join("if0.pcap"), dir.join("if1.pcap")];
    let mut out = files.clone().map(|f| PcapWriter::create(f, &cap).unwrap());
    let mut clients = Vec::new();
    let mut reader = cap.reader_all();
    while let Some(rec) = reader.next_record() {
        let Decoded::Tcp(seg) = decode(rec.link, rec.data) else {
            panic!("a fixture packet that is not TCP");
        };
        let (src, dst) = (seg.src_endpoint(), seg.dst_endpoint());
        let client = if dst.port == 3306 { src } else { dst };
        let n = clients
            .iter()
            .position(|c| *c == client)
            .unwrap_or_else(|| {
                clients.push(client);
                clients.len() - 1
            });
        out[n % 2].write(&rec).unwrap();
    }
    assert!(clients.len() >= 2);
    for w in out {
        w.finish().unwrap();
    }
    files
}

/// Files captured at the same time are merged by time, as `mergecap` merges them by default: the reports
/// (frame numbers included) equal those of the capture they were dealt from, which is also what
/// `mergecap` writes from them, at any number of splits and windows.
#[test]
fn files_that_overlap_in_time_are_merged_by_time_as_mergecap_does() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(mergecap) = oracle::require(Oracle::Mergecap) else {
        return;
    };
    for fixture in ["stream-stall.pcap", "rt-bimodal.pcap"] {
        let original = common::fixture(fixture);
        let files = dealt_into_two_files(&original, &scratch(&tmp, &format!("dealt-{fixture}")));
        let merged = scratch(&tmp, &format!("mergecap-{fixture}"));
        let mut cmd = mergecap.command();
        cmd.args(["-F", "pcap", "-w"]).arg(&merged).args(&files);
        let o = cmd.output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert!(std::fs::read(&merged).unwrap() == std::fs::read(&original).unwrap());
        let reference = reports(&analyze(
            &Capture::open(&original).unwrap(),
            &opts(1, 1, 0),
            every,
        ));
        for (splits, window) in [(1, 0), (3, 100_003), (7, 250_000)] {
            let mut set = CaptureSet::open(&files).unwrap();
            assert_eq!(set.order, Order::Merged);
            assert_eq!(set.overlaps, [(files[0].clone(), files[1].clone())]);
            let a = analyze_set(&mut set, &opts(splits, 2, window), every, |_, _| {});
            assert!(
                reports(&a) == reference,
                "{fixture}: {splits} splits, windows of {window}"
            );
            assert!(a.capture.damage.is_empty(), "{:?}", a.capture.damage);
        }
        // The command line says what was done, and extract writes the merged capture.
        let out = scratch(&tmp, &format!("extract-merged-{fixture}"));
        let o = std::process::Command::new(common::bin())
            .args(["extract", "--frames", "1-"])
            .args(&files)
            .arg("-o")
            .arg(&out)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{stderr}");
        assert!(stderr.contains("merged by time"), "{stderr}");
        assert!(std::fs::read(&out).unwrap() == std::fs::read(&original).unwrap());
    }
}

/// A compressed file cannot be read side by side with the others: overlapping files are then read one
/// after the other, and the warning says so and why.
#[test]
fn overlapping_files_that_cannot_be_merged_are_concatenated_with_a_warning_saying_why() {
    let tmp = tempfile::tempdir().unwrap();
    let original = common::fixture("stream-stall.pcap");
    let [a, b] = dealt_into_two_files(&original, &scratch(&tmp, "dealt-gz"));
    let gz = scratch(&tmp, "dealt-gz/if1.pcap.gz");
    std::fs::write(&gz, gzip(&std::fs::read(&b).unwrap())).unwrap();
    let set = CaptureSet::open(&[a.clone(), gz.clone()]).unwrap();
    assert_eq!(set.order, Order::Concatenated);
    let o = std::process::Command::new(common::bin())
        .args(["flows", "--json"])
        .args([&a, &gz])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(
        stderr.contains("overlap in time")
            && stderr.contains("not merged by time")
            && stderr.contains("is a stream"),
        "{stderr}"
    );
}

#[test]
fn compressed_captures_give_the_reports_of_the_uncompressed_file() {
    let tmp = tempfile::tempdir().unwrap();
    for fixture in [
        "stream-stall.pcap",
        "any-cooked.pcapng",
        "err1146-storm.pcap",
    ] {
        let path = common::fixture(fixture);
        let bytes = std::fs::read(&path).unwrap();
        let one = reports(&analyze(
            &Capture::open(&path).unwrap(),
            &opts(1, 1, 0),
            every,
        ));
        type Compress = fn(&[u8]) -> Vec<u8>;
        let compressions: [(&str, Compress); 4] =
            [("gz", gzip), ("zst", zstd), ("xz", xz), ("lz4", lz4)];
        for (ext, compress) in compressions {
            // Named without the extension: the magic bytes tell the compression.
            let file = scratch(&tmp, &format!("{fixture}.{ext}.bin"));
            std::fs::write(&file, compress(&bytes)).unwrap();
            // Windows much smaller than the capture, so that records straddle them; and the default.
            for (window, splits) in [(0, 1), (100_003, 1), (64_000, 3), (250_000, 7)] {
                let mut set = CaptureSet::open(std::slice::from_ref(&file)).unwrap();
                let a = analyze_set(&mut set, &opts(splits, 2, window), every, |_, _| {});
                assert!(
                    reports(&a) == one,
                    "{fixture}.{ext} with windows of {window} bytes and {splits} splits differs"
                );
                assert!(a.capture.damage.is_empty(), "{:?}", a.capture.damage);
                assert!(
                    a.capture.format.contains("-compressed"),
                    "{}",
                    a.capture.format
                );
            }
        }
    }
}

#[test]
fn a_compressed_file_cut_short_gives_what_it_holds_and_a_warning() {
    let tmp = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(common::fixture("stream-stall.pcap")).unwrap();
    let z = gzip(&bytes);
    let file = scratch(&tmp, "cut.pcap.gz");
    std::fs::write(&file, &z[..z.len() / 2]).unwrap();
    let mut set = CaptureSet::open(std::slice::from_ref(&file)).unwrap();
    let a = analyze_set(&mut set, &opts(2, 2, 200_000), every, |_, _| {});
    assert!(a.capture.counts.packets > 1000, "{:?}", a.capture.counts);
    assert!(
        a.capture
            .damage
            .iter()
            .any(|d| !d.is_fatal() && d.to_string().contains("gzip stream ends early")),
        "{:?}",
        a.capture.damage
    );
}

#[test]
fn standard_input_and_a_set_on_the_command_line_give_the_reports_of_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let path = common::fixture("stream-stall.pcap");
    let mut file_json = common::json(&["report", "--json", path.to_str().unwrap()]);
    let o = common::piped(&["report", "--json", "-"], std::fs::read(&path).unwrap());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut piped: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // Standard input cannot be read again: no command to extract from it.
    assert!(piped["findings"][0]["extract_command"].is_null(), "{piped}");
    assert!(file_json["findings"][0]["extract_command"]
        .as_str()
        .is_some_and(|c| c.contains(path.to_str().unwrap())));
    strip_files(&mut file_json);
    strip_files(&mut piped);
    assert_eq!(piped, file_json);
    // A directory of the rotated files, and the files named one by one, out of order.
    let dir = scratch(&tmp, "rotated-cli");
    let files = cut_into_files(&path, &[500, 1000, 1500, 2000], &dir);
    let mut set_json = common::json(&["report", "--json", dir.to_str().unwrap()]);
    // Each frame is also named in its file: frame 2029 is the 29th of the fifth file.
    let rst = &set_json["first_reset"]["first_rst"];
    assert_eq!(rst["frame"], 2029);
    assert_eq!(rst["file"], files[4].to_str().unwrap());
    assert_eq!(rst["file_frame"], 29);
    assert_eq!(rst["connection_first_file"], files[0].to_str().unwrap());
    assert_eq!(
        set_json["findings"][0]["files"][0],
        serde_json::json!({"file": files[4].to_str().unwrap(), "frame": 29})
    );
    strip_files(&mut set_json);
    assert_eq!(set_json, file_json);
    let mut names: Vec<&str> = files.iter().map(|f| f.to_str().unwrap()).collect();
    names.reverse();
    let mut args = vec!["report", "--json"];
    args.extend(names);
    let mut reversed = common::json(&args);
    strip_files(&mut reversed);
    assert_eq!(reversed, file_json);
}

/// Removes what naming frames in their files added (`file`, `file_frame`, `request_file`, ...,
/// `files`) and the findings' `extract_command` (it names the files read, or none for standard
/// input), leaving the report of one capture.
fn strip_files(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(map) => {
            map.retain(|k, _| {
                !(k == "files"
                    || k == "extract_command"
                    || k.ends_with("file")
                    || k.ends_with("file_frame"))
            });
            map.values_mut().for_each(strip_files);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(strip_files),
        _ => {}
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    /// Split invariance across file boundaries: any cut into files, any split count, any window size of
    /// a compressed member, gives the one-file result.
    #[test]
    fn any_cut_into_files_matches_one_file(
        cuts in proptest::collection::btree_set(1usize..2300, 1..6),
        splits in 1usize..40,
        threads in 1usize..4,
        compress_one in proptest::bool::ANY,
        window in 20_000usize..400_000,
    ) {
        static ONE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
        let whole = common::fixture("stream-stall.pcap");
        let one = ONE.get_or_init(|| reports(&analyze(&Capture::open(&whole).unwrap(), &opts(1, 1, 0), every)));
        let cuts: Vec<usize> = cuts.into_iter().collect();
        let tmp = tempfile::tempdir().unwrap();
        let dir = scratch(&tmp, &format!("prop-{}", cuts.iter().map(|c| c.to_string()).collect::<Vec<_>>().join("-")));
        let mut files = cut_into_files(&whole, &cuts, &dir);
        if compress_one {
            // One member of the set compressed, as `tcpdump -z gzip` leaves all but the newest file.
            let gz = files[0].with_extension("pcap.gz");
            std::fs::write(&gz, gzip(&std::fs::read(&files[0]).unwrap())).unwrap();
            std::fs::remove_file(&files[0]).unwrap();
            files[0] = gz;
        }
        let mut set = CaptureSet::open(&files).unwrap();
        let a = analyze_set(&mut set, &opts(splits, threads, window), every, |_, _| {});
        prop_assert!(&reports(&a) == one, "cuts {:?}, {} splits, {} threads", cuts, splits, threads);
    }
}
