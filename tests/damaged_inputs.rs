//! Damaged inputs read as far as they hold and said once: a small gzip'd capture cut short or followed by
//! garbage is read up to where it breaks, as a large one is; garbage across the windows of a stream is one
//! warning with its total; a pcapng section of a major version this reader does not know is not read.

use crate::common;

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Output, Stdio};

use pcapsleuth::analysis::{analyze, analyze_set, EngineOptions, MysqlStatistics};
use pcapsleuth::capture::{Capture, CaptureSet, DamageKind};
use pcapsleuth_testkit::oracle::{self, Oracle};

fn run(args: &[&str]) -> Output {
    Command::new(common::bin()).args(args).output().unwrap()
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

/// The packets of `flows --json` and its exit code, and its stderr.
fn flows(path: &Path) -> (u64, Option<i32>, String) {
    let o = run(&["flows", "--json", path.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{}: {e}: {stderr}", path.display()));
    (
        v["capture"]["counts"]["packets"].as_u64().unwrap(),
        o.status.code(),
        stderr,
    )
}

/// The packets tcpdump reads from what gzip's decoder gives of `gz` before it fails (as `zcat F |
/// tcpdump -r -` does); `None` without tcpdump.
fn tcpdump_packets(gz: &Path) -> Option<u64> {
    let tcpdump = oracle::require(Oracle::Tcpdump)?;
    let mut bytes = Vec::new();
    let mut d = flate2::read::MultiGzDecoder::new(std::fs::File::open(gz).unwrap());
    let _ = d.read_to_end(&mut bytes);
    let mut child = tcpdump
        .command()
        .args(["-n", "-r", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let feeder = std::thread::spawn(move || {
        let _ = stdin.write_all(&bytes);
    });
    let out = child.wait_with_output().unwrap();
    feeder.join().unwrap();
    Some(String::from_utf8_lossy(&out.stdout).lines().count() as u64)
}

#[test]
fn a_small_gzip_capture_cut_short_is_read_up_to_the_cut() {
    // Made here: a fixture gzip'd and cut to 16,000 bytes (its stream is 30 KB).
    let whole = gzip(&std::fs::read(common::fixture("server-closes.pcap")).unwrap());
    let made = common::scratch("damaged", "cut.pcap.gz");
    std::fs::write(&made, &whole[..whole.len() / 2]).unwrap();
    let (packets, code, stderr) = flows(&made);
    assert!(packets > 0, "{stderr}");
    assert_eq!(code, Some(0), "a cut tail is a warning: {stderr}");
    assert!(stderr.contains("the gzip stream ends early"), "{stderr}");
    if let Some(theirs) = tcpdump_packets(&made) {
        assert_eq!(packets, theirs);
    }

    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let Some(found) =
        pcapsleuth_testkit::shared::adversary_finding(root, "gz_truncated_16k_all_lost.pcap.gz")
    else {
        return;
    };
    let (packets, code, stderr) = flows(&found);
    assert_eq!((packets, code), (61, Some(0)), "{stderr}");
    if let Some(theirs) = tcpdump_packets(&found) {
        assert_eq!(packets, theirs);
    }
}

#[test]
fn a_small_gzip_capture_followed_by_garbage_is_read_up_to_the_garbage() {
    let mut bytes = gzip(&std::fs::read(common::fixture("server-closes.pcap")).unwrap());
    bytes.extend_from_slice(&[0x5a; 70]);
    let made = common::scratch("damaged", "garbage.pcap.gz");
    std::fs::write(&made, &bytes).unwrap();
    let (packets, code, stderr) = flows(&made);
    // Every packet of the member; the garbage is damage (it could have been a second member, lost).
    assert_eq!(packets, 29, "{stderr}");
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("gzip stream"), "{stderr}");

    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let Some(found) = pcapsleuth_testkit::shared::adversary_finding(
        root,
        "gz_small_trailing_garbage_all_lost.pcap.gz",
    ) else {
        return;
    };
    let (packets, code, stderr) = flows(&found);
    assert_eq!((packets, code), (22, Some(2)), "{stderr}");
    if let Some(theirs) = tcpdump_packets(&found) {
        assert_eq!(packets, theirs);
    }
}

/// 5,000 bytes of garbage in the middle of a gzip'd capture read in windows of 600 bytes (past the first
/// 64 KiB, which are read at opening): one warning, with every byte skipped, not one per window.
#[test]
fn garbage_across_the_windows_of_a_stream_is_said_once_with_its_total() {
    let cap_path = common::fixture("err1146-storm.pcap");
    let bytes = std::fs::read(&cap_path).unwrap();
    let cap = Capture::open(&cap_path).unwrap();
    let mut reader = cap.reader_all();
    let mut starts = Vec::new();
    while let Some(rec) = reader.next_record() {
        starts.push(rec.offset as usize);
    }
    let cut = *starts.iter().find(|&&s| s > 100_000).unwrap();
    let mut damaged = bytes[..cut].to_vec();
    damaged.extend(std::iter::repeat_n(0xee, 5_000));
    damaged.extend_from_slice(&bytes[cut..]);
    let gz = common::scratch("damaged", "garbage-inside.pcap.gz");
    std::fs::write(&gz, gzip(&damaged)).unwrap();
    for splits in [1, 3] {
        let mut set = CaptureSet::open(std::slice::from_ref(&gz)).unwrap();
        let opts = EngineOptions {
            threads: 2,
            splits: Some(splits),
            stream_window: 600,
            ..EngineOptions::default()
        };
        let a = analyze_set(&mut set, &opts, MysqlStatistics::default, |_, _| {});
        assert_eq!(
            a.capture.counts.packets,
            starts.len() as u64,
            "every record around the garbage"
        );
        let corrupt: Vec<_> = a
            .capture
            .damage
            .iter()
            .filter_map(|d| match &d.kind {
                DamageKind::CorruptRecord { skipped, .. } => Some((d.offset, *skipped)),
                _ => None,
            })
            .collect();
        assert_eq!(corrupt, [(cut as u64, 5_000)], "{:?}", a.capture.damage);
    }
    // `extract` and `split` read it as one pass of their own, and say it the same way.
    let mut set = CaptureSet::open(std::slice::from_ref(&gz)).unwrap();
    let damage = set
        .pass(|_, _| Ok::<(), std::convert::Infallible>(()), |_, _| {})
        .unwrap();
    assert_eq!(damage.len(), 1, "{damage:?}");
}

/// A pcapng section of a major version other than 1 (here 2, after a real capture's section): its header
/// and everything after it are not read, with exit code 2 and the file and offset named; the records
/// before are read, whatever the splits. A file whose first section is of version 2 is refused.
#[test]
fn a_pcapng_section_of_an_unknown_major_version_is_not_read() {
    let real = std::fs::read(common::fixture("any-cooked.pcapng")).unwrap();
    // The section again, with its Section Header Block's major version 2 (little-endian, offset 12).
    let mut second = real.clone();
    second[12..14].copy_from_slice(&2u16.to_le_bytes());
    let mut two_sections = real.clone();
    two_sections.extend_from_slice(&second);
    let f = common::scratch("damaged", "v2-section.pcapng");
    std::fs::write(&f, &two_sections).unwrap();

    let whole = Capture::open(common::fixture("any-cooked.pcapng")).unwrap();
    let cap = Capture::open(&f).unwrap();
    for splits in [1, 2, 3, 7] {
        let opts = EngineOptions {
            threads: 2,
            splits: Some(splits),
            ..EngineOptions::default()
        };
        let a = analyze(&cap, &opts, MysqlStatistics::default);
        let one = analyze(&whole, &opts, MysqlStatistics::default);
        assert_eq!(a.capture.counts, one.capture.counts, "{splits} splits");
        assert_eq!(a.capture.damage.len(), 1, "{:?}", a.capture.damage);
        let d = &a.capture.damage[0];
        assert_eq!(d.offset, real.len() as u64);
        assert_eq!(
            d.kind,
            DamageKind::UnknownPcapngVersion { major: 2, minor: 0 }
        );
    }
    let o = run(&["flows", f.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("v2-section.pcapng")
            && stderr.contains(&format!(
                "the pcapng section at offset {} is of version 2.0",
                real.len()
            )),
        "{stderr}"
    );
    // Streamed (standard input) the same.
    let o = common::piped(&["flows", "--json", "-"], two_sections);
    assert_eq!(o.status.code(), Some(2));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["capture"]["counts"]["packets"], 38);

    let first = common::scratch("damaged", "v2-first.pcapng");
    std::fs::write(&first, &second).unwrap();
    let o = run(&["flows", first.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("pcapng section of version 2.0 at offset 0"),
        "{stderr}"
    );
}
