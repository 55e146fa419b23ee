//! `pcapsleuth export --slowlog`: the slow log a capture makes reads in pt-query-digest as `mysql`
//! reports the capture (counts exactly, per fingerprint the count and the total time to the microsecond
//! the log keeps, the 95th percentile as pt-query-digest computes it), and as pt-query-digest reads the
//! capture itself (`--type tcpdump`); it is the same for any number of splits and threads; a statement
//! cannot forge entries; and it is written as every output is (never onto an input, in place only when
//! complete).
//!
//! **What is compared.** `mysql --json` groups every request expecting a response by our fingerprint,
//! `COM_STMT_PREPARE` included (a prepared statement's prepare and its runs show the same text), while the
//! log has the runs (`COM_STMT_EXECUTE`) and `COM_QUERY` only. So the export writes, in the same read,
//! the Parquet `transactions` of the capture: its rows are first checked to be `mysql`'s statements
//! (per fingerprint the answered requests and their total time), and those of the log's commands are the
//! entries pt-query-digest must report. pt-query-digest's fingerprint folds more than ours (digits in
//! names: `sbtest1`..`sbtest10` are one class), so each of our fingerprints is taken to the class that
//! pt-fingerprint gives its `mysql` sample.

use crate::common;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::Field;
use pcapsleuth_testkit::oracle::{self, Oracle, Tool};
use serde_json::Value;

fn run(args: &[&str]) -> Output {
    Command::new(common::bin()).args(args).output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A name for a capture's scratch files: its directory and name, made a file name.
fn slug(capture: &Path) -> String {
    let parent = capture
        .parent()
        .and_then(|p| p.file_name())
        .map_or(String::new(), |n| n.to_string_lossy().into_owned());
    format!(
        "{parent}-{}",
        capture.file_name().unwrap().to_string_lossy()
    )
}

/// The captures with statements: the fixtures with the statement shapes a slow log must carry (and the
/// other capture of `tcpdump -i any`), and the peers' whose projects' tests expect `COM_QUERY` or `COM_STMT_EXECUTE` requests.
fn captures() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = [
        "err1146-storm.pcap",
        "prepared-full.pcap",
        "rt-bimodal.pcap",
        "any-cooked.pcapng",
        "any-cooked-v2.pcap",
        "pipelined.pcap",
    ]
    .iter()
    .map(|f| common::fixture(f))
    .collect();
    let Some(peers) = common::shared("external/peers") else {
        return out;
    };
    let manifest = std::fs::read(peers.join("manifest.json")).unwrap();
    let manifest: Value = serde_json::from_slice(&manifest).unwrap();
    for c in manifest["captures"].as_array().unwrap() {
        let commands = &c["expect"]["commands"];
        if commands["COM_QUERY"].as_u64().unwrap_or(0)
            + commands["COM_STMT_EXECUTE"].as_u64().unwrap_or(0)
            > 0
        {
            out.push(peers.join(c["file"].as_str().unwrap()));
        }
    }
    out
}

/// One request as the Parquet `transactions` dataset has it.
#[derive(Debug, Clone)]
struct Row {
    command: String,
    fingerprint: Option<String>,
    statement: Option<String>,
    state: String,
    is_query: bool,
    rt_us: Option<f64>,
    server: String,
}

impl Row {
    /// Whether the log has an entry for it: an answered `COM_QUERY`, or `COM_STMT_EXECUTE` of a
    /// statement whose text the capture holds.
    fn logged(&self) -> bool {
        // Answered to the response's end: one whose end is not in the capture has no query time.
        self.state == "answered"
            && self.rt_us.is_some()
            && (self.command == "COM_QUERY" || self.command == "COM_STMT_EXECUTE")
            && self.statement.is_some()
    }

    /// Its response time in the log's microseconds.
    fn us(&self) -> u64 {
        (self.rt_us.unwrap() + 0.5).floor() as u64
    }
}

/// The rows of the `transactions` dataset under `root`, read with parquet's own reader.
fn transactions(root: &Path) -> Vec<Row> {
    let mut rows = Vec::new();
    let mut stack = vec![root.join("transactions")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            let reader = SerializedFileReader::new(std::fs::File::open(&p).unwrap()).unwrap();
            for row in reader.get_row_iter(None).unwrap() {
                let row = row.unwrap();
                let mut r = Row {
                    command: String::new(),
                    fingerprint: None,
                    statement: None,
                    state: String::new(),
                    is_query: false,
                    rt_us: None,
                    server: String::new(),
                };
                for (name, v) in row.get_column_iter() {
                    let text = match v {
                        Field::Str(s) => Some(s.clone()),
                        _ => None,
                    };
                    match name.as_str() {
                        "command" => r.command = text.unwrap(),
                        "fingerprint" => r.fingerprint = text,
                        "statement" => r.statement = text,
                        "state" => r.state = text.unwrap(),
                        "server" => r.server = text.unwrap(),
                        "is_query" => r.is_query = matches!(v, Field::Bool(true)),
                        "rt_us" => {
                            r.rt_us = match v {
                                Field::Double(d) => Some(*d),
                                _ => None,
                            }
                        }
                        _ => {}
                    }
                }
                rows.push(r);
            }
        }
    }
    rows
}

/// `export CAPTURE --parquet DIR --slowlog LOG` in one read; returns the log and the rows.
fn export(capture: &Path, extra: &[&str]) -> (PathBuf, Vec<Row>, String) {
    // Apart for each call: the tests run at the same time, several on one capture.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let name = format!("{}-{call}", slug(capture));
    let log = common::scratch("slowlog", &format!("{name}.log"));
    let root = common::scratch("slowlog", &format!("{name}.parquet"));
    let _ = std::fs::remove_dir_all(&root);
    let mut args = vec![
        "export",
        s(capture),
        "--parquet",
        s(&root),
        "--capture",
        "c",
        "--slowlog",
        s(&log),
    ];
    args.extend(extra);
    let o = run(&args);
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    (log, transactions(&root), stderr(&o))
}

/// pt-query-digest's report of the slow logs `logs` (read as one), as JSON.
fn digest_slowlogs(digest: &Tool, logs: &[PathBuf]) -> Value {
    let mut args = vec![
        "--type".to_string(),
        "slowlog".into(),
        "--limit".into(),
        "100%:100000".into(),
        "--output".into(),
        "json".into(),
    ];
    args.extend(logs.iter().map(|l| s(l).to_string()));
    let out = digest.stdout(&args);
    if out.trim().is_empty() {
        // Nothing to report: no class.
        return serde_json::json!({"global": {"query_count": 0}, "classes": []});
    }
    serde_json::from_str(&out).unwrap()
}

/// pt-query-digest's fingerprint of each statement, from one run of pt-fingerprint (a file of
/// statements ended by `;` and a line end; pt-fingerprint folds whitespace, so each is trimmed).
fn pt_fingerprints(tool: &Tool, statements: &[String]) -> Vec<String> {
    if statements.is_empty() {
        return Vec::new();
    }
    let file = common::scratch("slowlog", "statements.sql");
    let text: String = statements
        .iter()
        .map(|q| format!("{};\n", q.trim()))
        .collect();
    std::fs::write(&file, text).unwrap();
    let out = tool.stdout([s(&file)]);
    let fps: Vec<String> = out.lines().map(str::to_string).collect();
    assert_eq!(fps.len(), statements.len(), "one fingerprint per statement");
    fps
}

fn secs(v: &Value) -> f64 {
    v.as_str()
        .and_then(|s| s.parse().ok())
        .or_else(|| v.as_f64())
        .unwrap_or_else(|| panic!("a number: {v}"))
}

/// pt-query-digest's 95th percentile of `us` (its `_calc_metrics`): the value itself when all are one,
/// the largest of two, else the lower edge of the 5%-wide bucket (`1.05^(b-1)` µs) that holds the
/// ⌊0.95·n⌋-th smallest value (all n below 10).
fn pt_pct_95(us: &[u64]) -> f64 {
    let mut v: Vec<f64> = us.iter().map(|&u| u as f64 / 1e6).collect();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let (min, max) = (v[0], v[n - 1]);
    if n == 1 || min == max || n == 2 {
        return max;
    }
    let cutoff = if n >= 10 { n * 95 / 100 } else { n };
    let x = v[cutoff - 1];
    let base_log = 1.05f64.ln();
    let offset = (1.0 - 1e-6f64.ln() / base_log).abs();
    let bucket = if x < 1e-6 {
        0
    } else {
        ((offset + x.ln() / base_log) as usize).min(999)
    };
    if bucket == 0 {
        0.0
    } else {
        1.05f64.powi(bucket as i32 - 1) * 1e-6
    }
}

/// The rows agree with `mysql --json`'s statements: per fingerprint, the requests answered and their
/// total response time.
fn rows_say_what_mysql_says(capture: &Path, rows: &[Row], mysql: &Value) {
    let mut ours: BTreeMap<String, (u64, f64)> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.is_query && r.state == "answered") {
        if let Some(fp) = &r.fingerprint {
            let e = ours.entry(fp.clone()).or_default();
            e.0 += 1;
            // An answered request whose response's end is not in the capture has no response time.
            e.1 += r.rt_us.unwrap_or(0.0);
        }
    }
    // mysql groups by command and fingerprint (a prepare, its executions and the same text as a query
    // apart); the rows, by fingerprint.
    let mut theirs: BTreeMap<&str, (u64, f64)> = BTreeMap::new();
    for g in mysql["statements"].as_array().unwrap() {
        let e = theirs
            .entry(g["fingerprint"].as_str().unwrap())
            .or_default();
        e.0 += g["answered"].as_u64().unwrap();
        e.1 += g["total_us"].as_f64().unwrap_or(0.0);
    }
    for (fp, (answered, want)) in theirs {
        let (n, total) = ours.remove(fp).unwrap_or_default();
        assert_eq!(n, answered, "{capture:?}: {fp}: answered");
        assert!(
            (total - want).abs() <= 1e-6 * want.max(1.0),
            "{capture:?}: {fp}: total {total} µs, mysql {want} µs"
        );
    }
    assert!(
        ours.values().all(|(n, _)| *n == 0),
        "{capture:?}: fingerprints mysql does not have: {ours:?}"
    );
}

/// One of `mysql`'s statement groups of a capture, and the entries the log has of it.
#[derive(Debug)]
struct Group {
    /// The first statement as sent.
    sample: String,
    /// Each entry's response time, in the log's microseconds.
    entries_us: Vec<u64>,
    /// `mysql`'s p95, µs.
    p95_us: Option<f64>,
    /// Requests answered (entries and prepares of the same text).
    answered: u64,
}

/// pt-query-digest reads the slow log of each capture as `mysql` reports it.
#[test]
fn pt_query_digest_reports_the_slow_log_as_mysql_reports_the_capture() {
    let Some([digest, fingerprint]) =
        oracle::require_all([Oracle::PtQueryDigest, Oracle::PtFingerprint])
    else {
        return;
    };
    let mut logs = Vec::new();
    // By capture and our fingerprint.
    let mut expected: BTreeMap<String, Group> = BTreeMap::new();
    let mut entries = 0u64;
    for capture in captures() {
        let (log, rows, _) = export(&capture, &[]);
        let mysql = common::json(&["mysql", "--json", s(&capture)]);
        rows_say_what_mysql_says(&capture, &rows, &mysql);
        let logged: Vec<&Row> = rows.iter().filter(|r| r.logged()).collect();
        entries += logged.len() as u64;
        // Each capture's fingerprints apart: two captures' statements may share a fingerprint and
        // not a class (their samples differ where ours folds and pt's does not).
        let key = |fp: &str| format!("{}\u{0}{fp}", slug(&capture));
        for g in mysql["statements"].as_array().unwrap() {
            let fp = g["fingerprint"].as_str().unwrap();
            let answered = g["answered"].as_u64().unwrap();
            match expected.entry(key(fp)) {
                // The same text as a prepare, its executions or a query: groups apart in mysql, one
                // here, whose p95 mysql does not give.
                std::collections::btree_map::Entry::Occupied(mut e) => {
                    let e = e.get_mut();
                    e.answered += answered;
                    e.p95_us = None;
                }
                std::collections::btree_map::Entry::Vacant(e) => {
                    e.insert(Group {
                        sample: g["sample"].as_str().unwrap().to_string(),
                        entries_us: Vec::new(),
                        p95_us: g["rt_us"]["p95"].as_f64(),
                        answered,
                    });
                }
            }
        }
        for r in logged {
            let fp = r.fingerprint.as_deref().unwrap();
            expected.get_mut(&key(fp)).unwrap().entries_us.push(r.us());
        }
        logs.push(log);
    }
    let report = digest_slowlogs(&digest, &logs);
    assert_eq!(
        report["global"]["query_count"].as_u64().unwrap(),
        entries,
        "every entry is one query"
    );
    let samples: Vec<String> = expected.values().map(|g| g.sample.clone()).collect();
    let classes_of = pt_fingerprints(&fingerprint, &samples);
    // By pt-query-digest's class: the groups with entries in it.
    let mut want: BTreeMap<String, Vec<Group>> = BTreeMap::new();
    for (group, class) in expected.into_values().zip(classes_of) {
        if !group.entries_us.is_empty() {
            want.entry(class).or_default().push(group);
        }
    }
    let mut unmatched_pt = (0u64, 0.0f64);
    let (mut checked, mut single) = (0, 0);
    for c in report["classes"].as_array().unwrap() {
        let class = c["fingerprint"].as_str().unwrap();
        let n = c["query_count"].as_u64().unwrap();
        let qt = &c["metrics"]["Query_time"];
        let Some(groups) = want.remove(class) else {
            unmatched_pt.0 += n;
            unmatched_pt.1 += secs(&qt["sum"]);
            continue;
        };
        checked += 1;
        let us: Vec<u64> = groups.iter().flat_map(|g| g.entries_us.clone()).collect();
        assert_eq!(n, us.len() as u64, "{class}: entries");
        let total = us.iter().sum::<u64>() as f64 / 1e6;
        assert!(
            (secs(&qt["sum"]) - total).abs() < 5e-7,
            "{class}: total {} s, the capture's {total} s",
            secs(&qt["sum"])
        );
        let pct = secs(&qt["pct_95"]);
        assert!(
            (pct - pt_pct_95(&us)).abs() < 5e-7,
            "{class}: pct_95 {pct}, computed from the capture's times {}",
            pt_pct_95(&us)
        );
        // `mysql`'s p95 (the ⌈0.95·n⌉-th, up to 0.8% above) is no lower than pt-query-digest's (a
        // bucket's lower edge under the ⌊0.95·n⌋-th), for a class that is one statement group whose
        // requests are all entries (no prepares among them).
        if let [g] = &groups[..] {
            if let (Some(p95_us), true) = (g.p95_us, g.answered == n) {
                assert!(
                    pct <= p95_us / 1e6 + 1e-6,
                    "{class}: pct_95 {pct} above mysql's p95 {p95_us} µs"
                );
                single += 1;
            }
        }
    }
    // What pt-fingerprint (a statement alone) and pt-query-digest (a statement in a log) fingerprint
    // differently, such as a statement the decoder cut at its cap inside a string: the same entries
    // and time in all.
    let unmatched_ours = want.values().flatten().fold((0u64, 0u64), |(n, t), g| {
        (
            n + g.entries_us.len() as u64,
            t + g.entries_us.iter().sum::<u64>(),
        )
    });
    assert_eq!(
        unmatched_pt.0, unmatched_ours.0,
        "entries of classes not matched: {want:?}"
    );
    assert!((unmatched_pt.1 - unmatched_ours.1 as f64 / 1e6).abs() < 1e-5);
    assert!(
        unmatched_ours.0 * 100 <= entries,
        "at most 1% of the entries fall in classes not matched: {want:?}"
    );
    // The peers' captures hold most of the classes.
    let (classes, singles) = if common::shared_present() {
        (40, 20)
    } else {
        (15, 3)
    };
    assert!(
        checked >= classes && single >= singles,
        "{checked} classes compared, {single} with mysql's p95"
    );
}

/// pt-query-digest's report of the capture itself (`--type tcpdump` on `tcpdump -x`), and its runs of
/// prepared statements with their values (`EXECUTE ...`).
fn digest_tcpdump(tools: &[Tool; 2], capture: &Path, server: &str) -> (Value, Vec<String>) {
    let [tcpdump, digest] = tools;
    let text = tcpdump.stdout(["-r", s(capture), "-x", "-n", "-q", "-tttt"]);
    let dump = common::scratch("slowlog", &format!("{}.tcpdump", slug(capture)));
    std::fs::write(&dump, text).unwrap();
    let json = digest.stdout([
        "--type",
        "tcpdump",
        "--watch-server",
        server,
        "--limit",
        "100%:100000",
        "--output",
        "json",
        s(&dump),
    ]);
    let events = digest.stdout([
        "--type",
        "tcpdump",
        "--watch-server",
        server,
        "--no-report",
        "--output",
        "slowlog",
        s(&dump),
    ]);
    let executes = statements_of(&events)
        .into_iter()
        .filter_map(|q| q.strip_prefix("EXECUTE ").map(str::to_string))
        .collect();
    (serde_json::from_str(&json).unwrap(), executes)
}

/// The statements of a slow log: what follows each entry's header and `SET` line, without its `;`.
fn statements_of(log: &str) -> Vec<String> {
    log.split("\n# Time: ")
        .filter_map(|entry| {
            // The first line is the time (its `# Time: ` split off, or the first entry's whole).
            let body = entry
                .lines()
                .skip(1)
                .skip_while(|l| l.starts_with('#') || l.starts_with("use "));
            let mut lines = body.skip_while(|l| l.starts_with("SET "));
            let first = lines.next()?;
            let text: Vec<&str> = std::iter::once(first).chain(lines).collect();
            Some(text.join("\n").trim_end_matches(';').to_string())
        })
        .collect()
}

/// `q` with its double-quoted strings single-quoted: pt-query-digest writes a run's strings in double
/// quotes; the server, and the log, in single ones (both are strings to MySQL).
fn single_quoted(q: &str) -> String {
    let mut out = String::new();
    let mut rest = q;
    while let Some(at) = rest.find('"') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        match after.find('"') {
            Some(end) if !after[..end].contains(['\'', '\\']) => {
                out.push('\'');
                out.push_str(&after[..end]);
                out.push('\'');
                rest = &after[end + 1..];
            }
            _ => {
                out.push('"');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// pt-query-digest reads the same from the capture (`--type tcpdump`) as from its slow log: the same
/// classes with the same counts, the runs of prepared statements with the same values. Its times are
/// ours where the response is one segment; for a response of several it may stop at the first
/// (`prepared-full.pcap`'s 100-row resultsets: 6 µs sooner), so there they are at most ours.
#[test]
fn pt_query_digest_reads_the_same_from_the_capture_and_from_its_slow_log() {
    let Some(tools) = oracle::require_all([Oracle::Tcpdump, Oracle::PtQueryDigest]) else {
        return;
    };
    // Without ../shared, the fixtures alone (the skip said).
    let peers = common::shared("external/peers/percona-toolkit").unwrap_or_default();
    // (err1146-storm.pcap, read by `pt_query_digest.rs` as `mysql` reads it, is left out: its 6 MB of
    // tcpdump text cost pt-query-digest a second.)
    let mut captures: Vec<(PathBuf, bool)> = vec![
        (common::fixture("rt-bimodal.pcap"), true),
        (common::fixture("prepared-full.pcap"), false),
    ];
    // Percona Toolkit's own captures of prepared statements, read by its own tests.
    for n in ["021", "023", "028", "033"] {
        let p = peers.join(format!("tcpdump{n}.pcap"));
        if p.exists() {
            captures.push((p, true));
        }
    }
    let mut executes = 0;
    for (capture, same_times) in captures {
        let (log, rows, _) = export(&capture, &[]);
        let ours = digest_slowlogs(&tools[1], std::slice::from_ref(&log));
        let server = &rows.iter().find(|r| r.logged()).unwrap().server;
        let (theirs, their_runs) = digest_tcpdump(&tools, &capture, server);
        let classes = |r: &Value| -> BTreeMap<String, (u64, f64)> {
            r["classes"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|c| {
                    let fp = c["fingerprint"].as_str().unwrap();
                    // The log has no prepares, closes of prepared statements (`DEALLOCATE PREPARE`
                    // to pt-query-digest) and administrator commands (COM_QUIT, COM_PING).
                    if fp.starts_with("prepare ")
                        || fp.starts_with("deallocate prepare")
                        || fp.starts_with("administrator command")
                    {
                        return None;
                    }
                    let fp = fp.strip_prefix("execute ").unwrap_or(fp).to_string();
                    Some((
                        fp,
                        (
                            c["query_count"].as_u64().unwrap(),
                            secs(&c["metrics"]["Query_time"]["sum"]),
                        ),
                    ))
                })
                .collect()
        };
        let (ours, theirs) = (classes(&ours), classes(&theirs));
        assert_eq!(
            ours.keys().collect::<Vec<_>>(),
            theirs.keys().collect::<Vec<_>>(),
            "{capture:?}: classes"
        );
        for (fp, (n, t)) in &ours {
            let (tn, tt) = theirs[fp];
            assert_eq!(*n, tn, "{capture:?}: {fp}: count");
            let slack = *n as f64 * 1e-6;
            if same_times {
                assert!(
                    (t - tt).abs() <= slack,
                    "{capture:?}: {fp}: {t} s, tcpdump {tt} s"
                );
            } else {
                assert!(tt <= t + slack, "{capture:?}: {fp}: {t} s, tcpdump {tt} s");
            }
        }
        // Every run pt-query-digest substituted is one of the log's statements, with the same values.
        let text = std::fs::read_to_string(&log).unwrap();
        let mut logged: HashMap<String, usize> = HashMap::new();
        for q in statements_of(&text) {
            *logged.entry(single_quoted(&q)).or_default() += 1;
        }
        for q in &their_runs {
            let q = single_quoted(q);
            let n = logged.get_mut(&q).filter(|n| **n > 0);
            assert!(
                n.is_some(),
                "{capture:?}: pt-query-digest's run `{q}` is not in the log"
            );
            *n.unwrap() -= 1;
            executes += 1;
        }
    }
    assert!(executes >= 640, "{executes} runs compared");
}

/// The log of each capture is the same, byte for byte, for any number of splits and threads, and when
/// its entries go through temporary files (a buffer of 4 KiB: hundreds of sorted runs merged).
#[test]
fn the_slow_log_is_the_same_for_any_number_of_splits_and_threads() {
    use pcapsleuth::analysis::{analyze_set, EngineOptions};
    use pcapsleuth::capture::CaptureSet;
    use pcapsleuth::export::{SlowLog, SlowLogOptions};
    for capture in captures() {
        let mut first: Option<Vec<u8>> = None;
        for (splits, threads, buffer) in [
            (1, 1, 16 << 20),
            (2, 2, 4096),
            (3, 2, 16 << 20),
            (7, 3, 4096),
            (64, 2, 100_000),
        ] {
            let path = common::scratch("slowlog", &format!("{}-{splits}.log", slug(&capture)));
            let mut set = CaptureSet::open(std::slice::from_ref(&capture)).unwrap();
            let log = SlowLog::begin(
                SlowLogOptions {
                    buffer_bytes: buffer,
                    ..SlowLogOptions::new(&path)
                },
                set.identities(),
            )
            .unwrap();
            let opts = EngineOptions {
                splits: Some(splits),
                threads,
                ..EngineOptions::default()
            };
            let run = analyze_set(&mut set, &opts, || log.analysis(), |_, _| {});
            log.finish(&run.output).unwrap();
            let got = std::fs::read(&path).unwrap();
            match &first {
                None => first = Some(got),
                Some(want) => assert!(
                    *want == got,
                    "{capture:?}: the log differs with {splits} splits on {threads} threads"
                ),
            }
        }
    }
}

/// The entries of a capture are in completion order (each `# Time:` no earlier than the one before),
/// each entry's `Start` + `Query_time` is its `End` and its `# Time:`, and `SET timestamp` is the start's
/// second; the fields are those the README lists, in MySQL's order.
#[test]
fn entries_are_in_completion_order_with_consistent_times() {
    let (log, rows, _) = export(&common::fixture("rt-bimodal.pcap"), &[]);
    let text = std::fs::read_to_string(&log).unwrap();
    let mut last = String::new();
    let mut n = 0;
    for entry in text.split("# Time: ").skip(1) {
        n += 1;
        let time = entry.lines().next().unwrap();
        assert!(time >= last.as_str(), "{time} after {last}");
        last = time.to_string();
        let q = entry
            .lines()
            .find(|l| l.starts_with("# Query_time: "))
            .unwrap();
        let field = |k: &str| {
            q.split(&format!(" {k}: "))
                .nth(1)
                .unwrap()
                .split(' ')
                .next()
                .unwrap()
        };
        assert!(
            q.starts_with("# Query_time: ")
                && q.contains("  Lock_time: 0.000000 Rows_sent: ")
                && q.contains("  Rows_examined: 0 Thread_id: "),
            "{q}"
        );
        let us = |t: &str| -> u64 {
            // 2026-11-22T09:17:42.118403Z: the seconds of the day will do here.
            let (hms, frac) = t.trim_end_matches('Z').split_once('.').unwrap();
            let hms = hms.split_once('T').unwrap().1;
            let p: Vec<u64> = hms.split(':').map(|x| x.parse().unwrap()).collect();
            ((p[0] * 60 + p[1]) * 60 + p[2]) * 1_000_000 + frac.parse::<u64>().unwrap()
        };
        let query: f64 = q["# Query_time: ".len()..]
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        let (start, end) = (us(field("Start")), us(field("End")));
        assert_eq!(end - start, (query * 1e6).round() as u64, "{q}");
        assert_eq!(end, us(time));
        let set = entry
            .lines()
            .find(|l| l.starts_with("SET timestamp="))
            .unwrap();
        assert!(set.ends_with(';'));
    }
    assert_eq!(n, rows.iter().filter(|r| r.logged()).count());
}

/// `--errors-only` and `--slower-than` select the entries `mysql` counts with the same options.
#[test]
fn the_filters_select_what_mysql_selects() {
    for (capture, filter) in [
        ("err1146-storm.pcap", vec!["--errors-only"]),
        ("rt-bimodal.pcap", vec!["--slower-than", "10ms"]),
        (
            "rt-bimodal.pcap",
            vec!["--port", "3306", "--server", "10.77.0.1:3306"],
        ),
        ("rt-bimodal.pcap", vec!["--server", "10.77.0.9:3306"]),
    ] {
        let capture = common::fixture(capture);
        let (log, _, _) = export(&capture, &filter);
        let text = std::fs::read_to_string(&log).unwrap();
        let entries = text.matches("# Time: ").count() as u64;
        let mut args = vec!["mysql", "--json", s(&capture)];
        args.extend(&filter);
        let mysql = common::json(&args);
        // These captures' requests are all COM_QUERY, and all answered.
        assert_eq!(
            entries,
            mysql["requests"]["answered"].as_u64().unwrap(),
            "{filter:?}"
        );
        if filter[0] == "--errors-only" {
            assert!(entries > 0 && !text.contains("Errno: 0 "));
        }
    }
}

/// The log is never written onto an input (the same file, a hard link, a symlink: exit code 2, the input
/// untouched), nor onto a directory; a failed write puts nothing in place and leaves nothing behind.
#[test]
fn the_slow_log_never_replaces_an_input_and_appears_only_complete() {
    let dir = common::scratch("slowlog-harm", "x")
        .parent()
        .unwrap()
        .to_path_buf();
    let input = dir.join("in.pcap");
    std::fs::copy(common::fixture("err1146-storm.pcap"), &input).unwrap();
    let before = std::fs::read(&input).unwrap();
    let link = dir.join("hard.log");
    let _ = std::fs::remove_file(&link);
    std::fs::hard_link(&input, &link).unwrap();
    let sym = dir.join("sym.log");
    let _ = std::fs::remove_file(&sym);
    std::os::unix::fs::symlink(&input, &sym).unwrap();
    for out in [&input, &link, &sym] {
        let o = run(&["export", s(&input), "--slowlog", s(out)]);
        assert_eq!(o.status.code(), Some(2), "{out:?}: {}", stderr(&o));
        assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
        assert_eq!(std::fs::read(&input).unwrap(), before);
    }
    // Standard input redirected from the file: the same file.
    let o = Command::new(common::bin())
        .args(["export", "-", "--slowlog", s(&input)])
        .stdin(std::fs::File::open(&input).unwrap())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "stdin: {}", stderr(&o));
    assert_eq!(std::fs::read(&input).unwrap(), before);
    let o = run(&["export", s(&input), "--slowlog", s(&dir)]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    // A directory that does not exist: nothing read, nothing written.
    let missing = dir.join("no-such-dir/slow.log");
    let o = run(&["export", s(&input), "--slowlog", s(&missing)]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(!missing.parent().unwrap().exists());
    // The slow-log options need --slowlog; export needs an output; a slow log needs MySQL decoded.
    let log = dir.join("slow.log");
    for args in [
        vec!["export", s(&input), "--parquet", s(&dir), "--errors-only"],
        vec!["export", s(&input)],
        vec!["export", s(&input), "--slowlog", s(&log), "--no-mysql"],
    ] {
        let o = run(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
    }
    // Nothing left beside the input and its links: no temporary file, no half-written log.
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["hard.log", "in.pcap", "sym.log"]);
}

/// Runs of prepared statements are written with the values they ran with: every run of
/// `prepared-full.pcap`'s (640, types bound by the first run of each statement), and the peers'
/// captures of every binary type pcap2mysql-log decodes.
#[test]
fn runs_of_prepared_statements_carry_their_values() {
    let (log, rows, said) = export(&common::fixture("prepared-full.pcap"), &[]);
    let text = std::fs::read_to_string(&log).unwrap();
    let executes = rows
        .iter()
        .filter(|r| r.command == "COM_STMT_EXECUTE")
        .count();
    assert_eq!(executes, 640);
    assert_eq!(text.matches("# Time: ").count(), 640);
    let statements = statements_of(&text);
    assert_eq!(statements.len(), 640);
    assert!(
        statements
            .iter()
            .all(|q| q.starts_with("SELECT ") || q == "BEGIN" || q == "COMMIT"),
        "{statements:?}"
    );
    assert!(!statements.iter().any(|q| q.contains('?')), "a marker left");
    assert!(!said.contains("? markers"), "{said}");
    let Some(peers) = common::shared("external/peers/pcap2mysql-log") else {
        return;
    };
    let (log, _, _) = export(&peers.join("numeric-types.pcap"), &[]);
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.contains("(127, 8388607, 32767, 2147483647, 9223372036854775807, 255, 16777215, 65535, 4294967295, 18446744073709551615, 3.4567, 3.33, 4.44, 3)"),
        "{text}"
    );
    assert!(text.contains("(-1, -2, -3, -4, -5, 6, 7, 8, 9, 10, 3.4567, 3.33, 4.44, 3)"));
    let (log, _, _) = export(&peers.join("date-types.pcap"), &[]);
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.contains("('2013-03-04', '20:33', '2021', '97')"),
        "{text}"
    );
}
