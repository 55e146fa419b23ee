//! MySQL carried in IP fragments, put back together as the receiving host does: on two real captures (a
//! router whose link had a route MTU of 576, and a VXLAN overlay whose 1,564-byte packets the sender cut in
//! two; `fixtures/lab/record-ipfrag.sh`), it reads as tshark reassembles it, whatever the splits, stream
//! windows and files its fragments straddle, and whatever order or repeats they come in; a datagram that
//! cannot be reassembled is said in `unknowns`.

use crate::common;

use std::io::Write;
use std::path::{Path, PathBuf};

use pcapsleuth::analysis::{
    analyze, analyze_set, unknowns, EngineOptions, MysqlReport, MysqlStatistics, Run,
};
use pcapsleuth::capture::{Capture, CaptureSet, PcapWriter, Record};
use pcapsleuth::flow::{decode, Decoded, ReassemblyFailure};
use pcapsleuth::report::to_json;
use pcapsleuth_testkit::oracle;

const FIXTURES: [&str; 2] = ["ipfrag-router.pcap", "ipfrag-vxlan.pcap"];

fn opts(splits: usize, stream_window: usize) -> EngineOptions {
    EngineOptions {
        threads: 2,
        splits: Some(splits),
        stream_window,
        ..EngineOptions::default()
    }
}

fn mysql(path: &Path, o: &EngineOptions) -> Run<MysqlReport> {
    let cap = Capture::open(path).unwrap();
    analyze(&cap, o, MysqlStatistics::default).map(|m| m.report())
}

/// What a user reads of a run, files aside: connections, MySQL, packet counts and what reassembly met.
fn seen(a: &Run<MysqlReport>) -> String {
    to_json(&a.connections)
        + &to_json(&a.output)
        + &to_json(&a.capture.counts)
        + &to_json(&a.capture.ip_fragments)
        + &to_json(&unknowns(a))
}

/// The indices (0-based) of the records of `path` that are IP fragments.
fn fragment_records(path: &Path) -> Vec<usize> {
    let cap = Capture::open(path).unwrap();
    let mut reader = cap.reader_all();
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(rec) = reader.next_record() {
        if matches!(decode(rec.link, rec.data), Decoded::Fragment(_)) {
            out.push(i);
        }
        i += 1;
    }
    out
}

/// A copy of `src` whose records are `order(records)`: some left out, repeated or moved.
fn rewritten(
    src: &Path,
    dst: &Path,
    order: impl FnOnce(Vec<Record<'_>>) -> Vec<Record<'_>>,
) -> PathBuf {
    let cap = Capture::open(src).unwrap();
    let mut reader = cap.reader_all();
    let mut records = Vec::new();
    while let Some(rec) = reader.next_record() {
        records.push(rec);
    }
    let mut w = PcapWriter::create(dst, &cap).unwrap();
    for rec in order(records) {
        w.write(&rec).unwrap();
    }
    w.finish().unwrap();
    dst.to_path_buf()
}

#[test]
fn mysql_in_fragments_reads_as_tshark_reassembles_it() {
    // What is true in the captures (tshark 4.0, which reassembles IPv4 by default): 42 and 8 fragments,
    // 14 and 4 datagrams; one session each with 6 COM_QUERY, one ERR 1146, COM_QUIT.
    for (name, fragments, datagrams) in [(FIXTURES[0], 42, 14), (FIXTURES[1], 8, 4)] {
        let path = common::fixture(name);
        let a = mysql(&path, &EngineOptions::default());
        let f = &a.capture.ip_fragments;
        assert_eq!(
            (f.fragments, f.reassembled),
            (fragments, datagrams),
            "{name}"
        );
        assert_eq!(a.capture.counts.ip_fragments, fragments, "{name}");
        assert!(!f.lost_any() && f.duplicates == 0, "{name}: {f:?}");
        let u = unknowns(&a);
        assert!(
            u.ip_fragments.is_none() && u.notes.is_empty(),
            "{name}: {u:?}"
        );
        let m = &a.output;
        assert_eq!(m.sessions, 1, "{name}");
        assert_eq!(m.commands.get("COM_QUERY"), Some(&6), "{name}");
        assert_eq!(m.commands.get("COM_QUIT"), Some(&1), "{name}");
        assert_eq!(m.errors.get("1146"), Some(&1), "{name}: {:?}", m.errors);
        assert_eq!(m.requests.answered, 6, "{name}");

        let Some(tshark) = oracle::tshark() else {
            continue;
        };
        let frag = "ip.flags.mf==1 || ip.frag_offset>0";
        assert_eq!(tshark.count(&path, frag), fragments as usize, "{name}");
        assert_eq!(
            tshark.count(&path, "ip.fragment.count"),
            datagrams as usize,
            "{name}"
        );
        assert_eq!(tshark.count(&path, "mysql.command==3"), 6, "{name}");
        assert_eq!(tshark.count(&path, "mysql.error_code==1146"), 1, "{name}");
        // Each direction's packets as tshark's conversation table counts them: a datagram in fragments
        // is one packet, at its last fragment.
        let conv = tshark.lines(["-r", path.to_str().unwrap(), "-q", "-z", "conv,tcp"]);
        let row = conv.iter().find(|l| l.contains("<->")).unwrap();
        let cols: Vec<&str> = row.split_whitespace().collect();
        let c = &a.connections.at(0);
        let (to_client, to_server) = (
            cols[3].parse::<u64>().unwrap(),
            cols[6].parse::<u64>().unwrap(),
        );
        assert_eq!(
            (c.to_client.packets, c.to_server.packets),
            (to_client, to_server),
            "{name}: {row}"
        );
    }
}

#[test]
fn fragments_straddling_every_split_window_and_file_read_the_same() {
    let tmp = tempfile::tempdir().unwrap();
    for name in FIXTURES {
        let path = common::fixture(name);
        let one = seen(&mysql(&path, &opts(1, 0)));
        // Every split count up to one per record and more: splits begin and end between any two records,
        // so between the fragments of a datagram too.
        for splits in 2..=80 {
            assert!(
                seen(&mysql(&path, &opts(splits, 0))) == one,
                "{name}: {splits} splits"
            );
        }
        // Streamed (gzip), in windows of a few hundred bytes: fragments straddle windows and batches.
        let gz = tmp.path().join(format!("{name}.gz"));
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(&std::fs::read(&path).unwrap()).unwrap();
        std::fs::write(&gz, e.finish().unwrap()).unwrap();
        for window in (600..6_000).step_by(487) {
            for splits in [1, 3] {
                let mut set = CaptureSet::open(std::slice::from_ref(&gz)).unwrap();
                let a = analyze_set(
                    &mut set,
                    &opts(splits, window),
                    MysqlStatistics::default,
                    |_, _| {},
                )
                .map(|m| m.report());
                assert!(
                    seen(&a) == one,
                    "{name}: gzip, windows of {window}, {splits} splits"
                );
            }
        }
        // Cut into two files between any two records: a datagram's fragments in both.
        let records = fragment_records(&path).len();
        assert!(records > 0);
        let cap = Capture::open(&path).unwrap();
        let mut all = Vec::new();
        let mut reader = cap.reader_all();
        while let Some(rec) = reader.next_record() {
            all.push(rec);
        }
        for cut in 1..all.len() {
            let dir = tmp.path().join(format!("{name}-{cut}"));
            std::fs::create_dir_all(&dir).unwrap();
            let files: Vec<PathBuf> = [&all[..cut], &all[cut..]]
                .iter()
                .enumerate()
                .map(|(i, part)| {
                    let f = dir.join(if i == 0 {
                        "set.pcap".into()
                    } else {
                        format!("set.pcap{i}")
                    });
                    let mut w = PcapWriter::create(&f, &cap).unwrap();
                    for rec in part.iter() {
                        w.write(rec).unwrap();
                    }
                    w.finish().unwrap();
                    f
                })
                .collect();
            let mut set = CaptureSet::open(&files).unwrap();
            let a = analyze_set(&mut set, &opts(2, 0), MysqlStatistics::default, |_, _| {})
                .map(|m| m.report());
            assert!(seen(&a) == one, "{name}: two files cut before record {cut}");
        }
    }
}

/// Each fragment left out in turn: its datagram cannot be reassembled, and every command says so, with the
/// datagram's endpoints and first fragment; the rest of the session is still read.
#[test]
fn a_fragment_missing_from_a_real_capture_is_said() {
    let tmp = tempfile::tempdir().unwrap();
    let path = common::fixture(FIXTURES[0]);
    let fragments = fragment_records(&path);
    assert_eq!(fragments.len(), 42);
    for &left_out in &fragments {
        let f = rewritten(
            &path,
            &tmp.path().join(format!("without-{left_out}.pcap")),
            |r| {
                r.into_iter()
                    .enumerate()
                    .filter(|(i, _)| *i != left_out)
                    .map(|(_, r)| r)
                    .collect()
            },
        );
        let a = mysql(&f, &EngineOptions::default());
        let lost = a.capture.ip_fragments.clone();
        assert_eq!(lost.not_reassembled.total(), 1, "without record {left_out}");
        assert_eq!(lost.not_reassembled.fragments_missing, 1);
        let d = lost.first_failures[0];
        assert_eq!(d.reason, ReassemblyFailure::FragmentsMissing);
        // Its first fragment held: the one before the left-out record, or the one after it.
        assert!(
            fragments.contains(&(d.first.frame as usize - 1))
                || fragments.contains(&(d.first.frame as usize)),
            "without record {left_out}: {d:?}"
        );
        let u = unknowns(&a);
        assert!(u.ip_fragments.is_some());
        assert!(
            u.notes
                .iter()
                .any(|n| n.starts_with("1 IP datagram sent in fragments could not be reassembled")),
            "{:?}",
            u.notes
        );
        assert_eq!(a.output.sessions, 1);
    }
    // And as the user sees it, in text and JSON: without the datagram's second fragment, so that its first,
    // with the ports, is there.
    let f = tmp.path().join(format!("without-{}.pcap", fragments[1]));
    let p = f.to_str().unwrap();
    let text = common::text(&["mysql", p]);
    assert!(
        text.starts_with("Partial data") && text.contains("could not be reassembled"),
        "{text}"
    );
    let v = common::json(&["first-reset", "--json", p]);
    let frags = &v["unknowns"]["ip_fragments"];
    assert_eq!(
        frags["not_reassembled"]["fragments_missing"], 1,
        "{frags:#}"
    );
    assert_eq!(frags["first_failures"][0]["src"], "10.99.1.2:45468");
    assert_eq!(frags["first_failures"][0]["dst"], "10.99.2.2:3306");
    assert_eq!(frags["first_failures"][0]["reason"], "fragments_missing");
}

/// A capture that holds every packet twice (a mirror port copying both ways) and one whose datagrams' fragments
/// come last first: the same MySQL, nothing said lost.
#[test]
fn fragments_repeated_or_in_reverse_order_make_the_same_datagrams() {
    let tmp = tempfile::tempdir().unwrap();
    for name in FIXTURES {
        let path = common::fixture(name);
        let one = mysql(&path, &EngineOptions::default());
        let fragments = fragment_records(&path);
        let twice = rewritten(&path, &tmp.path().join(format!("twice-{name}")), |r| {
            r.into_iter().flat_map(|r| [r, r]).collect()
        });
        let a = mysql(&twice, &EngineOptions::default());
        let f = &a.capture.ip_fragments;
        assert_eq!(
            f.reassembled, one.capture.ip_fragments.reassembled,
            "{name}"
        );
        assert_eq!(f.duplicates, fragments.len() as u64, "{name}");
        assert!(!f.lost_any(), "{name}: {f:?}");
        assert!(unknowns(&a).notes.is_empty(), "{name}");
        assert_eq!(to_json(&a.output.commands), to_json(&one.output.commands));
        assert_eq!(to_json(&a.output.errors), to_json(&one.output.errors));

        // Each datagram's fragments (consecutive in these captures) in reverse order.
        let reversed = rewritten(
            &path,
            &tmp.path().join(format!("reversed-{name}")),
            |mut r| {
                let id = |rec: &Record<'_>| match decode(rec.link, rec.data) {
                    Decoded::Fragment(f) => Some(f.id),
                    _ => None,
                };
                let mut i = 0;
                while i < r.len() {
                    let Some(this) = id(&r[i]) else {
                        i += 1;
                        continue;
                    };
                    let end = (i..r.len())
                        .take_while(|&j| id(&r[j]) == Some(this))
                        .last()
                        .unwrap_or(i);
                    r[i..=end].reverse();
                    i = end + 1;
                }
                r
            },
        );
        let a = mysql(&reversed, &EngineOptions::default());
        let f = &a.capture.ip_fragments;
        assert_eq!(
            f.reassembled, one.capture.ip_fragments.reassembled,
            "{name}"
        );
        assert!(!f.lost_any(), "{name}: {f:?}");
        assert_eq!(to_json(&a.output.commands), to_json(&one.output.commands));
        assert_eq!(to_json(&a.output.errors), to_json(&one.output.errors));
        assert_eq!(a.output.requests.answered, one.output.requests.answered);
    }
}

/// The adversary's capture of a MySQL session carried in IPv4 fragments read as "0 sessions", with nothing
/// said of the fragments.
#[test]
fn the_adversary_capture_in_fragments_is_read_as_the_sessions_it_holds() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let Some(path) =
        pcapsleuth_testkit::shared::adversary_finding(root, "ipfrag_silently_dropped.pcap")
    else {
        return;
    };
    let p = path.to_str().unwrap();
    let v = common::json(&["mysql", "--json", p]);
    assert_eq!(v["sessions"], 2, "{v:#}");
    assert_eq!(v["commands"]["COM_QUERY"], 3, "{v:#}");
    assert_eq!(v["errors"]["1146"], 1, "{v:#}");
    assert!(v["unknowns"]["ip_fragments"].is_null());
    let text = common::text(&["mysql", p]);
    assert!(text.starts_with("MySQL: 2 sessions"), "{text}");
}
