//! `PcapngWriter` on real captures: Wireshark finds the comments written on chosen packets
//! (`frame.comment`), and every packet keeps its time, lengths and bytes.

use std::path::{Path, PathBuf};

use pcapsleuth_capture::{Capture, CaptureError, PcapngWriter, MAX_COMMENT_BYTES};
use pcapsleuth_testkit::oracle::{self, Oracle, Tshark};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures")
        .join(name)
}

/// Writes the first `limit` records of each capture in `inputs`, one after the other, into `out` as pcapng,
/// with `comments(n)` on the n-th record written (1-based).
fn write_pcapng(
    out: &Path,
    inputs: &[&Capture],
    limit: usize,
    comments: impl Fn(u64) -> Vec<String>,
) {
    let mut w = PcapngWriter::create(out, inputs.iter().map(|c| (c.path(), c.file_id()))).unwrap();
    let mut n = 0;
    for cap in inputs {
        let mut reader = cap.reader_all();
        let mut taken = 0;
        while let Some(record) = reader.next_record() {
            if taken == limit {
                break;
            }
            taken += 1;
            n += 1;
            let texts = comments(n);
            let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
            w.write(&record, &texts).unwrap();
        }
    }
    assert_eq!(w.finish().unwrap(), n);
}

/// What tshark says of the first `count` packets of `file`: time, wire and captured length, and the
/// layers it decodes.
fn packets(tshark: &Tshark, file: &Path, count: usize) -> Vec<String> {
    let count = count.min(1 << 30).to_string();
    tshark.lines([
        "-r".as_ref(),
        file.as_os_str(),
        "-c".as_ref(),
        count.as_ref(),
        "-T".as_ref(),
        "fields".as_ref(),
        "-e".as_ref(),
        "frame.time_epoch".as_ref(),
        "-e".as_ref(),
        "frame.len".as_ref(),
        "-e".as_ref(),
        "frame.cap_len".as_ref(),
        "-e".as_ref(),
        "frame.protocols".as_ref(),
    ] as [&std::ffi::OsStr; 14])
}

/// `(frame, comment)` of every packet that carries one, as tshark finds them.
fn comments(tshark: &Tshark, file: &Path) -> Vec<String> {
    tshark.lines([
        "-r".as_ref(),
        file.as_os_str(),
        "-Y".as_ref(),
        "frame.comment".as_ref(),
        "-T".as_ref(),
        "fields".as_ref(),
        "-e".as_ref(),
        "frame.number".as_ref(),
        "-e".as_ref(),
        "frame.comment".as_ref(),
    ] as [&std::ffi::OsStr; 10])
}

#[test]
fn tshark_finds_the_comments_written_on_the_chosen_packets() {
    let Some(tshark) = oracle::tshark() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("annotated.pcapng");
    let cap = Capture::open(fixture("vlan.pcap")).unwrap();
    write_pcapng(&out, &[&cap], usize::MAX, |n| match n {
        16 => vec!["ERR 1146 Table 'sbtest.nosuch' doesn't exist (frame 16 in vlan.pcap)".into()],
        20 => vec![
            "first FIN, by the client".into(),
            "frame 20 in vlan.pcap".into(),
        ],
        38 => vec!["the last packet: 38 µs — ünïcödé".into()],
        _ => Vec::new(),
    });
    assert_eq!(
        comments(&tshark, &out),
        vec![
            "16\tERR 1146 Table 'sbtest.nosuch' doesn't exist (frame 16 in vlan.pcap)",
            "20\tfirst FIN, by the client,frame 20 in vlan.pcap",
            "38\tthe last packet: 38 µs — ünïcödé",
        ]
    );
    assert_eq!(tshark.count(&out, "frame.comment"), 3);
    assert_eq!(
        packets(&tshark, &out, usize::MAX),
        packets(&tshark, cap.path(), usize::MAX)
    );
}

#[test]
fn every_packet_keeps_its_time_lengths_and_bytes() {
    let Some(tshark) = oracle::tshark() else {
        return;
    };
    let Some(editcap) = oracle::require(Oracle::Editcap) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // A nanosecond pcap whose times are not whole microseconds: the connect-refused capture shifted by
    // 123 ns.
    let ns = dir.path().join("nanoseconds.pcap");
    editcap.stdout([
        "-F".as_ref(),
        "nsecpcap".as_ref(),
        "-t".as_ref(),
        "0.000000123".as_ref(),
        fixture("connect-refused.pcap").as_os_str(),
        ns.as_os_str(),
    ] as [&std::ffi::OsStr; 6]);
    for (source, limit) in [
        (fixture("vlan.pcap"), usize::MAX),
        (fixture("any-cooked.pcapng"), usize::MAX),
        (fixture("any-cooked-v2.pcap"), usize::MAX),
        (fixture("ipv6.pcap"), usize::MAX),
        (fixture("snaplen80.pcap"), 400),
        (ns, usize::MAX),
    ] {
        let cap = Capture::open(&source).unwrap();
        let out = dir.path().join("copy.pcapng");
        write_pcapng(&out, &[&cap], limit, |_| Vec::new());
        let want = packets(&tshark, &source, limit);
        assert_eq!(
            packets(&tshark, &out, usize::MAX),
            want,
            "{}",
            source.display()
        );
        if source.ends_with("nanoseconds.pcap") {
            let time = want[0].split('\t').next().unwrap();
            assert!(time.ends_with("123"), "not a nanosecond time: {time}");
        }

        // Byte for byte, as read back.
        let copy = Capture::open(&out).unwrap();
        let (mut a, mut b) = (cap.reader_all(), copy.reader_all());
        let mut n = 0;
        while let Some(x) = b.next_record() {
            let y = a.next_record().unwrap();
            assert_eq!(
                (x.data, x.orig_len, x.ts, x.link),
                (y.data, y.orig_len, y.ts, y.link)
            );
            n += 1;
        }
        assert_eq!(n, want.len(), "{}", source.display());
    }
}

#[test]
fn each_link_type_gets_its_own_interface() {
    let Some(tshark) = oracle::tshark() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("mixed.pcapng");
    let ethernet = Capture::open(fixture("vlan.pcap")).unwrap();
    let cooked = Capture::open(fixture("any-cooked-v2.pcap")).unwrap();
    write_pcapng(&out, &[&ethernet, &cooked, &ethernet], 2, |n| {
        vec![format!("record {n}")]
    });
    let lines = tshark.lines([
        "-r".as_ref(),
        out.as_os_str(),
        "-T".as_ref(),
        "fields".as_ref(),
        "-e".as_ref(),
        "frame.interface_id".as_ref(),
        "-e".as_ref(),
        "frame.protocols".as_ref(),
        "-e".as_ref(),
        "frame.comment".as_ref(),
    ] as [&std::ffi::OsStr; 10]);
    let seen: Vec<(String, bool, String)> = lines
        .iter()
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (f[0].to_string(), f[1].starts_with("sll"), f[2].to_string())
        })
        .collect();
    let want: Vec<(String, bool, String)> = [
        (0, false),
        (0, false),
        (1, true),
        (1, true),
        (0, false),
        (0, false),
    ]
    .iter()
    .enumerate()
    .map(|(i, &(id, sll))| (id.to_string(), sll, format!("record {}", i + 1)))
    .collect();
    assert_eq!(seen, want);
}

#[test]
fn a_comment_longer_than_an_option_holds_is_cut_at_a_character() {
    let Some(tshark) = oracle::tshark() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("long.pcapng");
    let cap = Capture::open(fixture("vlan.pcap")).unwrap();
    let long = "é".repeat(40_000); // 80,000 bytes
    write_pcapng(&out, &[&cap], 3, |n| {
        if n == 2 {
            vec![long.clone()]
        } else {
            Vec::new()
        }
    });
    let found = comments(&tshark, &out);
    assert_eq!(found.len(), 1);
    let (frame, text) = found[0].split_once('\t').unwrap();
    assert_eq!(frame, "2");
    assert!(
        text.ends_with('…') && text.len() <= MAX_COMMENT_BYTES,
        "{} bytes",
        text.len()
    );
    assert_eq!(
        text.trim_end_matches('…'),
        "é".repeat((MAX_COMMENT_BYTES - 3) / 2)
    );
}

#[test]
fn an_input_is_never_the_output() {
    let cap = Capture::open(fixture("vlan.pcap")).unwrap();
    let refused = PcapngWriter::create(cap.path(), [(cap.path(), cap.file_id())]);
    assert!(matches!(refused, Err(CaptureError::OutputIsInput { .. })));
}
