//! `first-reset` passes over the plain exchanges of a MySQL session ([`MysqlDepth::Closes`]): the run it
//! gives must be the run of a full decode, connection by connection and fact by fact (closes, requests left
//! unanswered, counts, encryption), on every capture we have: the fixtures (those in TLS decrypted with
//! the secrets they embed), Zeek's traces, the peers' captures and what fuzzing found; in any number of splits; for a set of files, one of them a stream.
//! Only the analyses are told fewer transactions: that is the point, and it is checked too.

use crate::common;

use std::path::{Path, PathBuf};

use pcapsleuth::analysis::{
    analyze, analyze_set, first_reset, unknowns, Analysis, CaptureFacts, ConnectionView,
    EngineOptions, MysqlDepth, Run, TransactionView,
};
use pcapsleuth::capture::{Capture, CaptureSet};
use pcapsleuth::report::to_json;

/// Counts the transactions the engine tells.
#[derive(Default)]
struct Told(u64);

impl Analysis for Told {
    type PerConnection = ();
    type Output = u64;
    fn transaction(&mut self, _: &mut (), _: &ConnectionView<'_>, _: &TransactionView<'_>) {
        self.0 += 1;
    }
    fn merge(&mut self, other: Self) {
        self.0 += other.0;
    }
    fn finish(self, _: &CaptureFacts) -> u64 {
        self.0
    }
}

fn opts(depth: MysqlDepth, splits: usize, threads: usize) -> EngineOptions {
    EngineOptions {
        threads,
        splits: Some(splits),
        mysql_depth: depth,
        ..EngineOptions::default()
    }
}

/// What `first-reset` prints of a run, as JSON: its answer and what could not be known.
fn answer(run: &Run<u64>) -> String {
    to_json(&first_reset(run, usize::MAX)) + &to_json(&unknowns(run))
}

/// Every capture of the fixtures, Zeek's traces, the peers and the fuzz findings.
fn every_capture() -> Vec<PathBuf> {
    let mut files = common::real_captures();
    files.extend(common::peer_captures());
    // MySQL in TLS, decrypted with the secrets these pcapngs hold: decoded whole either way.
    let tls = std::fs::read_dir(common::fixture("tls")).unwrap();
    files.extend(
        tls.map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "pcapng")),
    );
    for dir in [
        "fuzz-findings/captures-that-abort-report",
        "fuzz-findings/segmentation",
    ] {
        if let Some(dir) = common::shared(dir) {
            let entries =
                std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
            files.extend(entries.map(|e| e.unwrap().path()));
        }
    }
    files
}

/// Runs `path` both ways; the transactions told by each, once the runs are found equal.
fn both_ways(path: &Path, splits: usize, threads: usize) -> Option<(u64, u64)> {
    let cap = Capture::open(path).ok()?;
    let full = analyze(
        &cap,
        &opts(MysqlDepth::Full, splits, threads),
        Told::default,
    );
    let closes = analyze(
        &cap,
        &opts(MysqlDepth::Closes, splits, threads),
        Told::default,
    );
    assert_eq!(
        answer(&full),
        answer(&closes),
        "{}: first-reset's answer with {splits} splits",
        path.display()
    );
    let (told_full, told_closes) = (full.output, closes.output);
    assert_eq!(
        full.map(|_| ()),
        closes.map(|_| ()),
        "{}: the runs with {splits} splits",
        path.display()
    );
    Some((told_full, told_closes))
}

#[test]
fn every_capture_gives_the_run_of_a_full_decode() {
    let files = every_capture();
    assert!(files.len() > 100, "{} captures", files.len());
    let told = std::sync::Mutex::new((0u64, 0u64));
    common::each_in_parallel(files, |path| {
        for (splits, threads) in [(1, 1), (7, 2)] {
            if let Some((full, closes)) = both_ways(&path, splits, threads) {
                assert!(closes <= full, "{}", path.display());
                if splits == 1 {
                    let mut t = told.lock().unwrap();
                    t.0 += full;
                    t.1 += closes;
                }
            }
        }
    });
    // Plain exchanges were passed over (else the comparison above proves nothing).
    let (full, closes) = *told.lock().unwrap();
    assert!(
        closes * 2 < full,
        "{closes} of {full} transactions decoded when judging closes"
    );
}

#[test]
fn the_error_storm_is_passed_over_and_judged_the_same() {
    // 1146 errors, one after another on a few connections, each closed after COM_QUIT.
    let path = common::fixture("err1146-storm.pcap");
    let (full, closes) = both_ways(&path, 3, 2).unwrap();
    assert!(full > 1000, "{full} transactions");
    assert!(closes * 100 < full, "{closes} of {full} decoded");
}

#[test]
fn a_client_that_pipelines_is_judged_the_same() {
    // Requests sent before the answer to the one before is complete (in one segment, or while its rows
    // flow), then an RST mid-resultset with two requests unanswered: the exchanges before the pipelining
    // are passed over, the pipelined ones decoded.
    let path = common::fixture("pipelined.pcap");
    let (full, closes) = both_ways(&path, 3, 2).unwrap();
    assert_eq!(full, 15, "2 logins, 12 queries and a COM_QUIT");
    assert!(
        closes < full,
        "{closes} of {full} decoded: none passed over"
    );
}

#[test]
fn a_set_of_files_one_of_them_a_stream_gives_the_run_of_a_full_decode() {
    // The rotated set: connections run over the files, so an exchange passed over lies in two of them. Then
    // its first file gzipped: a stream's bytes do not last, so what comes from it is decoded in full.
    let files = common::rotated_set();
    let gz = common::scratch("closes_depth", "rotated.pcap.gz");
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut e, &std::fs::read(&files[0]).unwrap()).unwrap();
    std::fs::write(&gz, e.finish().unwrap()).unwrap();
    let mut with_stream = files.clone();
    with_stream[0] = gz;
    for set in [files, with_stream] {
        let run = |depth| {
            let mut s = CaptureSet::open(&set).unwrap();
            analyze_set(&mut s, &opts(depth, 5, 2), Told::default, |_, _| {})
        };
        let (full, closes) = (run(MysqlDepth::Full), run(MysqlDepth::Closes));
        assert_eq!(answer(&full), answer(&closes), "{set:?}");
        assert!(closes.output < full.output, "{set:?}: nothing passed over");
        assert_eq!(full.map(|_| ()), closes.map(|_| ()), "{set:?}");
    }
}

#[test]
fn prepared_statements_are_passed_over_unless_their_text_was_cut() {
    // sysbench with server-side prepared statements: COM_STMT_EXECUTE without a cursor is passed over.
    let path = common::fixture("prepared-full.pcap");
    let (full, closes) = both_ways(&path, 3, 2).unwrap();
    assert!(full > 600, "{full} transactions");
    assert!(closes * 2 < full, "{closes} of {full} decoded");
    // The same capture with each COM_STMT_PREPARE cut by the snap length a few bytes into its text: every
    // run of those statements shows a cut text, which the decoder counts, so they are decoded.
    let cut = common::scratch("closes_depth", "prepared-cut.pcap");
    std::fs::write(&cut, prepares_cut(&std::fs::read(&path).unwrap())).unwrap();
    let (full, closes) = both_ways(&cut, 3, 2).unwrap();
    let run = analyze(
        &Capture::open(&cut).unwrap(),
        &opts(MysqlDepth::Full, 1, 1),
        Told::default,
    );
    let statements_cut = unknowns(&run).statements_cut;
    assert!(statements_cut > 600, "{statements_cut} statements cut");
    assert!(closes < full, "{closes} of {full} decoded");
}

/// A classic little-endian pcap of Ethernet/IPv4/TCP frames with each client `COM_STMT_PREPARE` cut 6
/// bytes into its text (the record's captured length; the frame's length on the wire unchanged).
fn prepares_cut(pcap: &[u8]) -> Vec<u8> {
    assert_eq!(
        pcap[..4],
        [0xd4, 0xc3, 0xb2, 0xa1],
        "a classic little-endian pcap"
    );
    let mut out = pcap[..24].to_vec();
    let mut at = 24;
    let mut cut = 0;
    while at + 16 <= pcap.len() {
        let mut header: [u8; 16] = pcap[at..at + 16].try_into().unwrap();
        let incl = u32::from_le_bytes(header[8..12].try_into().unwrap()) as usize;
        let frame = &pcap[at + 16..at + 16 + incl];
        let ip = 14;
        let tcp = ip + usize::from(frame[ip] & 0x0f) * 4;
        let payload = tcp + usize::from(frame[tcp + 12] >> 4) * 4;
        let keep = match frame.get(payload..) {
            // A request numbered 0 that prepares a statement: its header, the command, 6 bytes of text.
            Some([_, _, _, 0, 0x16, ..]) if frame.len() > payload + 11 => payload + 11,
            _ => incl,
        };
        cut += usize::from(keep < incl);
        header[8..12].copy_from_slice(&(keep as u32).to_le_bytes());
        out.extend_from_slice(&header);
        out.extend_from_slice(&frame[..keep]);
        at += 16 + incl;
    }
    assert!(cut > 50, "{cut} prepares cut");
    out
}
