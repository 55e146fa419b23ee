//! `pcapsleuth export`: Parquet datasets that say what the JSON reports say, the same for any number of
//! splits and threads, read by a real engine (DuckDB, through `tests/oracle/duckdb_sql.py`), and written
//! with the promises `extract` and `split` make (nothing half-written in place, never into an input,
//! bad arguments refused with one line and exit code 2).

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::Field;
use pcapsleuth::analysis::{analyze_set, EngineOptions};
use pcapsleuth::capture::CaptureSet;
use pcapsleuth::export::{columns::DATASETS, Export, ExportOptions, Partition};
use pcapsleuth_testkit::{oracle, Oracle};
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

/// Exports `files` into `root` with the binary, asserting success.
fn export(files: &[&Path], root: &Path, extra: &[&str]) {
    let mut args = vec!["export"];
    args.extend(files.iter().map(|f| s(f)));
    args.extend(["--parquet", s(root)]);
    args.extend(extra);
    let o = run(&args);
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
}

/// The Parquet files under `dir` (recursively).
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "parquet") {
                files.push(p);
            }
        }
    }
    files.sort();
    files
}

/// Every row of the Parquet files under `dir` (recursively), each as one text per column, read with
/// parquet's own reader (its record API).
fn rows_under(dir: &Path) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for p in files_under(dir) {
        let reader = SerializedFileReader::new(std::fs::File::open(&p).unwrap()).unwrap();
        for row in reader.get_row_iter(None).unwrap() {
            let row = row.unwrap();
            rows.push(row.get_column_iter().map(|(_, v)| text(v)).collect());
        }
    }
    rows.sort();
    rows
}

/// A value as text (`null` for a null). The export writes no other types: integers (a timestamp,
/// nanoseconds without a legacy converted type, is read as one), doubles, booleans and texts.
fn text(v: &Field) -> String {
    match v {
        Field::Null => "null".to_string(),
        Field::Bool(b) => b.to_string(),
        Field::Int(i) => i.to_string(),
        Field::Long(i) => i.to_string(),
        Field::Double(d) => format!("{d:?}"),
        Field::Str(s) => s.clone(),
        other => panic!("a value of a type the export does not write: {other:?}"),
    }
}

/// Every real capture (fixtures and ../shared/external/zeek-mysql), and the rotated set as one capture.
fn captures() -> Vec<Vec<PathBuf>> {
    let mut all: Vec<Vec<PathBuf>> = common::real_captures()
        .into_iter()
        .map(|p| vec![p])
        .collect();
    all.push(common::rotated_set());
    all
}

/// The library's export of `files` with `splits` splits on `threads` threads into `root`.
fn export_with(files: &[PathBuf], root: &Path, splits: usize, threads: usize) {
    let mut set = CaptureSet::open(files).unwrap();
    let partition = Partition::new("c", vec!["host=db3".parse().unwrap()]).unwrap();
    let job = Export::begin(
        ExportOptions::new(root, partition),
        files.iter().map(|p| p.as_path()),
    )
    .unwrap();
    let opts = EngineOptions {
        splits: Some(splits),
        threads,
        ..EngineOptions::default()
    };
    let run = analyze_set(&mut set, &opts, || job.analysis(), |_, _| {});
    job.finish(&run).unwrap();
}

/// The engine runs many instances of the exporter at once, each writing the files of its batches: the
/// rows written (sorted: their order within and across files is not significant) are the same for
/// any number of splits and threads, in every dataset, on every real capture.
#[test]
fn the_rows_are_the_same_for_any_number_of_splits_and_threads() {
    for files in captures() {
        let tmp = tempfile::TempDir::new().unwrap();
        let mut first: Option<Vec<Vec<Vec<String>>>> = None;
        for (i, (splits, threads)) in [(1, 1), (2, 2), (7, 3)].into_iter().enumerate() {
            let root = tmp.path().join(i.to_string());
            export_with(&files, &root, splits, threads);
            let got: Vec<Vec<Vec<String>>> = DATASETS
                .iter()
                .map(|d| rows_under(&root.join(d.name)))
                .collect();
            match &first {
                None => first = Some(got),
                Some(want) => {
                    for (d, (w, g)) in DATASETS.iter().zip(want.iter().zip(&got)) {
                        assert!(
                            w == g,
                            "{files:?}: {} differs with {splits} splits on {threads} threads ({} rows, {} with one split)",
                            d.name,
                            g.len(),
                            w.len()
                        );
                    }
                }
            }
        }
    }
}

/// What engines read from the files, read back with parquet's own reader: every dataset's columns are
/// `capture`, the label keys, then its columns, in that order, each with its Parquet type (no annotation
/// on integers, doubles and booleans; `STRING` on texts; `TIMESTAMP(NANOS, isAdjustedToUTC = true)` on
/// times) and `OPTIONAL` exactly where it can be null; every column chunk is zstd-compressed; the
/// texts that repeat (fingerprints, SQLSTATEs, error messages, endpoints, commands, states) are
/// dictionary-encoded and the other texts plain, integers and times delta-encoded; numbers and times carry statistics where
/// engines prune by them (frames, times, error codes, response times) and texts none; row groups hold
/// at most 131,072 rows.
#[test]
fn every_column_is_written_with_its_type_encoding_and_statistics() {
    use parquet::basic::{Compression, Encoding, LogicalType, Repetition, TimeUnit, Type};
    let tmp = tempfile::TempDir::new().unwrap();
    let root = tmp.path().join("pq");
    export(
        &[&common::fixture("err1146-storm.pcap")],
        &root,
        &["--label", "host=db1"],
    );
    let mut chunks = 0;
    for d in DATASETS {
        let mut want = vec![("capture", "string", false), ("host", "string", false)];
        want.extend(d.columns.iter().map(|c| (c.name, c.ty.name(), c.nullable)));
        for p in files_under(&root.join(d.name)) {
            let reader = SerializedFileReader::new(std::fs::File::open(&p).unwrap()).unwrap();
            let meta = reader.metadata();
            let schema = meta.file_metadata().schema_descr();
            let got: Vec<&str> = schema.columns().iter().map(|c| c.name()).collect();
            let names: Vec<&str> = want.iter().map(|w| w.0).collect();
            assert_eq!(got, names, "{p:?}: the columns in order");
            for (c, (name, ty, nullable)) in schema.columns().iter().zip(&want) {
                let types = match *ty {
                    "int64" => (Type::INT64, None),
                    "int32" => (Type::INT32, None),
                    "double" => (Type::DOUBLE, None),
                    "boolean" => (Type::BOOLEAN, None),
                    "string" => (Type::BYTE_ARRAY, Some(LogicalType::String)),
                    "timestamp(ns, UTC)" => (
                        Type::INT64,
                        Some(LogicalType::timestamp(true, TimeUnit::NANOS)),
                    ),
                    other => panic!("{name}: a type the test does not know: {other}"),
                };
                assert_eq!(
                    (c.physical_type(), c.logical_type_ref().cloned()),
                    types,
                    "{name}"
                );
                let repetition = c.self_type().get_basic_info().repetition();
                let optional = repetition == Repetition::OPTIONAL;
                assert_eq!(optional, *nullable, "{name}: {repetition:?}");
            }
            for rg in meta.row_groups() {
                assert!(rg.num_rows() <= 131_072, "{p:?}: {} rows", rg.num_rows());
                for col in rg.columns() {
                    chunks += 1;
                    let name = col.column_descr().name();
                    let what = format!("{}: {name}", d.name);
                    assert!(
                        matches!(col.compression(), Compression::ZSTD(_)),
                        "{what}: {:?}",
                        col.compression()
                    );
                    let encodings: Vec<Encoding> = col.encodings().collect();
                    let dictionary = encodings.contains(&Encoding::RLE_DICTIONARY);
                    let repeats = [
                        "fingerprint",
                        "sql_state",
                        "error_message",
                        "client",
                        "server",
                        "client_ip",
                        "server_ip",
                        "command",
                        "state",
                    ]
                    .contains(&name);
                    assert_eq!(dictionary, repeats, "{what}: {encodings:?}");
                    let text = col.column_type() == Type::BYTE_ARRAY;
                    let integer = [Type::INT64, Type::INT32].contains(&col.column_type());
                    assert_eq!(
                        encodings.contains(&Encoding::DELTA_BINARY_PACKED),
                        integer,
                        "{what}: {encodings:?}"
                    );
                    // Columns never null (so a chunk has a minimum) that engines prune by.
                    let pruned = [
                        "request_frame",
                        "request_time",
                        "connection_id",
                        "frame",
                        "time",
                        "start",
                    ]
                    .contains(&name);
                    if text || name == "rows" || name.ends_with("_port") {
                        assert!(col.statistics().is_none(), "{what}: statistics");
                    } else if pruned {
                        let st = col.statistics();
                        assert!(
                            st.is_some_and(|s| s.min_bytes_opt().is_some()),
                            "{what}: no statistics"
                        );
                    }
                }
            }
        }
    }
    assert!(chunks > 100, "{chunks} column chunks checked");
}

/// DuckDB, with the export's datasets as views (see tests/oracle/duckdb_sql.py): each query's rows.
fn duckdb(tool: oracle::Tool, root: &Path, queries: &[String]) -> Vec<Vec<Vec<Value>>> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/oracle/duckdb_sql.py");
    let mut child = tool
        .command()
        .arg(&script)
        .arg(root)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    serde_json::to_writer(child.stdin.take().unwrap(), queries).unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "duckdb: {}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// Groups query rows by their first column (the capture), the rest of each row kept.
fn by_capture(rows: &[Vec<Value>]) -> BTreeMap<String, Vec<Vec<Value>>> {
    let mut m: BTreeMap<String, Vec<Vec<Value>>> = BTreeMap::new();
    for r in rows {
        m.entry(r[0].as_str().unwrap().to_string())
            .or_default()
            .push(r[1..].to_vec());
    }
    m
}

/// `(key, count)` rows as a map, the key as text (an error code too).
fn counts(rows: &[Vec<Value>]) -> BTreeMap<String, u64> {
    rows.iter()
        .map(|r| match &r[0] {
            Value::String(k) => (k.clone(), u(&r[1])),
            k => (k.to_string(), u(&r[1])),
        })
        .collect()
}

/// A JSON object of counts as a map.
fn json_counts(o: &Value) -> BTreeMap<String, u64> {
    o.as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), u(v)))
        .collect()
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap()
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap()
}

/// A percentile of `mysql --json` against DuckDB's exact one over the same response times.
///
/// `mysql` takes the nearest rank (the ⌈q·n⌉-th smallest value, as DuckDB's `quantile_disc` does)
/// from a histogram: it reports the upper edge of the bin holding that rank, clamped to the exact
/// minimum and maximum. Bins are 1 ns wide below 128 ns and 2^-7 (0.78%) of their value above, so the
/// report is never below the exact value and at most 1/128 of it (or 1 ns) above.
fn within_bin(report_us: f64, exact_us: f64) -> bool {
    let slack = 1e-9;
    report_us >= exact_us - slack && report_us <= exact_us * (1.0 + 1.0 / 128.0) + 0.001 + slack
}

/// One export root holds every real capture and the peers' captures (each its own `capture=`), and
/// DuckDB's answers over it, per capture, are the JSON reports': requests by fate, commands, errors by
/// code, response-time count, mean, minimum, maximum and p50/p95/p99, statements by fingerprint, and
/// every close of `first-reset`, its first FIN, first RST and first abnormal close.
#[test]
fn duckdb_over_the_export_says_what_the_json_reports_say() {
    let Some(duck) = oracle::require(Oracle::DuckDb) else {
        return;
    };
    let tmp = tempfile::TempDir::new().unwrap();
    let root = tmp.path().join("pq");
    let mut reports: BTreeMap<String, (Value, Value)> = BTreeMap::new();
    // Every real capture, and the peers' captures of other stacks, link types and capture points.
    let peers = common::peer_captures().into_iter().map(|p| vec![p]);
    for (i, files) in captures().into_iter().chain(peers).enumerate() {
        let name = format!("c{i:03}");
        let paths: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
        export(&paths, &root, &["--capture", &name]);
        let args = |cmd: &[&str]| {
            let mut a: Vec<&str> = cmd.to_vec();
            a.extend(paths.iter().map(|p| s(p)));
            common::json(&a)
        };
        let mysql = args(&["mysql", "--json"]);
        let closes = args(&["first-reset", "--json", "--limit", "1000000000"]);
        reports.insert(name, (mysql, closes));
    }
    let q = [
        // `state` alone says what `mysql` counts (logins have states of their own), and `is_query`
        // is exactly its four values.
        "SELECT capture, count(*) FILTER (is_query),
                count(*) FILTER (state = 'answered'),
                count(*) FILTER (state = 'cut_off'),
                count(*) FILTER (state = 'unanswered'),
                count(*) FILTER (state = 'unreadable'),
                count(*) FILTER (is_query <> (state IN ('answered', 'cut_off', 'unanswered', 'unreadable')))
         FROM transactions GROUP BY capture",
        "SELECT capture, command, count(*) FROM transactions GROUP BY ALL",
        "SELECT capture, error_code, count(*) FROM transactions WHERE error_code IS NOT NULL GROUP BY ALL",
        "SELECT capture, count(rt_us), avg(rt_us), min(rt_us), max(rt_us),
                quantile_disc(rt_us, 0.5), quantile_disc(rt_us, 0.95), quantile_disc(rt_us, 0.99)
         FROM transactions WHERE state = 'answered' AND rt_us IS NOT NULL GROUP BY capture",
        "SELECT capture, command || ' ' || fingerprint, count(*), count(*) FILTER (state = 'answered'),
                count(error_code), sum(rows), bool_or(text_cut),
                quantile_disc(rt_us, 0.5), quantile_disc(rt_us, 0.99)
         FROM transactions WHERE is_query AND fingerprint IS NOT NULL GROUP BY ALL",
        "SELECT capture, frame, flag, initiator, abnormal, reason, mysql_state, client, server,
                peer_unacked_bytes, peer_awaiting_reply, end_kind, end_by, connection_id, rel_time
         FROM closes WHERE connection_close ORDER BY capture, time, frame",
        "SELECT capture, what, frame, reason FROM (
            SELECT capture, 'first_abnormal' AS what, frame, reason, time FROM closes WHERE abnormal
            UNION ALL SELECT capture, 'first_fin', frame, reason, time FROM closes WHERE flag = 'FIN'
            UNION ALL SELECT capture, 'first_rst', frame, reason, time FROM closes WHERE flag = 'RST')
         QUALIFY row_number() OVER (PARTITION BY capture, what ORDER BY time, frame) = 1",
        "SELECT capture, count(*), count(*) FILTER (end_kind = 'open') FROM connections GROUP BY capture",
    ]
    .map(String::from);
    let answers = duckdb(duck, &root, &q);
    let grouped: Vec<_> = answers.iter().map(|a| by_capture(a)).collect();
    let [requests, commands, errors, rt, statements, closes, firsts, connections] =
        <[_; 8]>::try_from(grouped).unwrap();
    let none = Vec::new();
    let mut checked_rt = 0;
    for (name, (mysql, fr)) in &reports {
        let at = |m: &BTreeMap<String, Vec<Vec<Value>>>| m.get(name).unwrap_or(&none).clone();
        // Requests by fate.
        let r = &mysql["requests"];
        let want = [
            u(&mysql["queries"]),
            u(&r["answered"]),
            u(&r["cut_off"]),
            u(&r["unanswered"]),
            u(&r["unreadable"]),
            0,
        ];
        let got: Vec<u64> = at(&requests)
            .first()
            .map_or(vec![0; 6], |row| row.iter().map(u).collect());
        assert_eq!(got, want, "{name}: queries by state");
        // Commands and errors.
        assert_eq!(
            counts(&at(&commands)),
            json_counts(&mysql["commands"]),
            "{name}: commands"
        );
        assert_eq!(
            counts(&at(&errors)),
            json_counts(&mysql["errors"]),
            "{name}: errors by code"
        );
        // Response times.
        let j = &mysql["rt_us"];
        match at(&rt).first() {
            None => assert_eq!(u(&j["count"]), 0, "{name}: response times"),
            Some(row) => {
                checked_rt += 1;
                assert_eq!(u(&row[0]), u(&j["count"]), "{name}: rt count");
                assert!(
                    (f(&row[1]) - f(&j["mean"])).abs() <= 0.002,
                    "{name}: mean {row:?} {j}"
                );
                assert_eq!(f(&row[2]), f(&j["min"]), "{name}: min");
                assert_eq!(f(&row[3]), f(&j["max"]), "{name}: max");
                for (i, p) in ["p50", "p95", "p99"].iter().enumerate() {
                    assert!(
                        within_bin(f(&j[p]), f(&row[4 + i])),
                        "{name}: {p}: mysql {} against the exact {}",
                        j[p],
                        row[4 + i]
                    );
                }
            }
        }
        // Statements, by command and fingerprint (as mysql groups them).
        let got: BTreeMap<String, Vec<Value>> = at(&statements)
            .into_iter()
            .map(|r| (r[0].as_str().unwrap().to_string(), r[1..].to_vec()))
            .collect();
        let want = mysql["statements"].as_array().unwrap();
        assert_eq!(got.len(), want.len(), "{name}: statement groups");
        for st in want {
            let fp = &format!(
                "{} {}",
                st["command"].as_str().unwrap(),
                st["fingerprint"].as_str().unwrap()
            );
            let row = &got[fp];
            assert_eq!(u(&row[0]), u(&st["count"]), "{name}: {fp}: count");
            assert_eq!(u(&row[1]), u(&st["answered"]), "{name}: {fp}: answered");
            assert_eq!(u(&row[2]), u(&st["errors"]), "{name}: {fp}: errors");
            assert_eq!(u(&row[3]), u(&st["rows"]), "{name}: {fp}: rows");
            assert_eq!(row[4].as_bool(), st["text_cut"].as_bool(), "{name}: {fp}");
            // Answered requests whose response's end is not in the capture have no response time.
            if u(&st["rt_us"]["count"]) > 0 {
                let rt = &st["rt_us"];
                assert!(within_bin(f(&rt["p50"]), f(&row[5])), "{name}: {fp}: p50");
                assert!(within_bin(f(&rt["p99"]), f(&row[6])), "{name}: {fp}: p99");
            }
        }
        // Closes: every one of `first-reset`, in its order, with its judgement.
        let want = fr["closes"].as_array().unwrap();
        let got = at(&closes);
        assert_eq!(got.len(), want.len(), "{name}: closes");
        assert_eq!(got.len() as u64, u(&fr["total_closes"]), "{name}");
        for (g, w) in got.iter().zip(want) {
            let end = &w["end"];
            let expected = [
                w["frame"].clone(),
                w["flag"].clone(),
                w["initiator"].clone(),
                w["abnormal"].clone(),
                w["reason"].clone(),
                w["mysql_state"].clone(),
                w["client"].clone(),
                w["server"].clone(),
                w["peer_unacked_bytes"].clone(),
                w["peer_awaiting_reply"].clone(),
                end["kind"].clone(),
                end.get("by").cloned().unwrap_or(Value::Null),
                w["connection_first_frame"].clone(),
            ];
            assert_eq!(
                g[..13],
                expected[..],
                "{name}: close at frame {}",
                w["frame"]
            );
            assert!(
                (f(&g[13]) - f(&w["rel_time"])).abs() < 1e-6,
                "{name}: rel_time"
            );
        }
        let got: BTreeMap<String, (Value, Value)> = at(&firsts)
            .into_iter()
            .map(|r| {
                (
                    r[0].as_str().unwrap().to_string(),
                    (r[1].clone(), r[2].clone()),
                )
            })
            .collect();
        for what in ["first_abnormal", "first_fin", "first_rst"] {
            let want = match &fr[what] {
                Value::Null => None,
                c => Some((c["frame"].clone(), c["reason"].clone())),
            };
            assert_eq!(got.get(what).cloned(), want, "{name}: {what}");
        }
        // Connections.
        let row = at(&connections);
        let (n, open) = row.first().map_or((0, 0), |r| (u(&r[0]), u(&r[1])));
        assert_eq!(n, u(&fr["connections"]), "{name}: connections");
        assert_eq!(open, u(&fr["open_at_end"]), "{name}: open at the end");
    }
    assert!(
        checked_rt >= 10,
        "response times compared on {checked_rt} captures"
    );
}

/// Two captures exported into one root, each under its host label, are one dataset that groups by
/// `capture` and by `host`, read from the directories (hive partitions) or from the files alike.
#[test]
fn two_captures_in_one_root_group_by_capture_and_label() {
    let Some(duck) = oracle::require(Oracle::DuckDb) else {
        return;
    };
    let tmp = tempfile::TempDir::new().unwrap();
    let root = tmp.path().join("fleet");
    let storm = common::fixture("err1146-storm.pcap");
    let stall = common::fixture("stream-stall.pcap");
    export(&[&storm], &root, &["--label", "host=db1"]);
    export(&[&stall], &root, &["--label", "host=db2"]);
    assert!(root
        .join("transactions/host=db1/capture=err1146-storm/part-00000.parquet")
        .is_file());
    let queries = [
        "SELECT host, capture, count(*) FILTER (is_query), count(*) FILTER (error_code = 1146)
         FROM transactions GROUP BY ALL ORDER BY ALL",
        // The files alone, without the directories' partitions, say the same.
        &format!(
            "SELECT host, capture, count(*) FILTER (is_query), count(*) FILTER (error_code = 1146)
             FROM read_parquet('{}/transactions/*/*/*.parquet', hive_partitioning = false)
             GROUP BY ALL ORDER BY ALL",
            s(&root)
        ),
    ]
    .map(|q| q.to_string());
    let a = duckdb(duck, &root, &queries);
    let count = |f: &Path, what: &str| -> u64 {
        let m = common::json(&["mysql", "--json", s(f)]);
        match what {
            "queries" => u(&m["queries"]),
            _ => m["errors"].get("1146").map_or(0, u),
        }
    };
    let want = vec![
        vec![
            Value::from("db1"),
            Value::from("err1146-storm"),
            Value::from(count(&storm, "queries")),
            Value::from(count(&storm, "1146")),
        ],
        vec![
            Value::from("db2"),
            Value::from("stream-stall"),
            Value::from(count(&stall, "queries")),
            Value::from(count(&stall, "1146")),
        ],
    ];
    assert_eq!(a[0], want);
    assert_eq!(a[1], want);
}

fn one_line_error(o: &Output, what: &str) {
    assert_eq!(o.status.code(), Some(2), "{what}: {}", stderr(o));
    let e = stderr(o);
    assert_eq!(e.lines().count(), 1, "{what}: one line: {e}");
    assert!(e.starts_with("pcapsleuth: "), "{what}: {e}");
}

/// The root holds only the datasets: no staging directory left behind.
fn only_datasets(root: &Path) {
    let mut names: Vec<String> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["ceilings", "closes", "connections", "rates", "transactions"],
        "{root:?}"
    );
}

#[test]
fn an_existing_partition_is_refused_unless_replaced_and_nothing_is_left_half_written() {
    let tmp = tempfile::TempDir::new().unwrap();
    let root = tmp.path().join("pq");
    let f = common::fixture("err1146-storm.pcap");
    export(&[&f], &root, &[]);
    let before = rows_under(&root.join("transactions"));
    let again = run(&["export", s(&f), "--parquet", s(&root)]);
    one_line_error(&again, "an existing partition");
    assert!(
        stderr(&again).contains("already exists"),
        "{}",
        stderr(&again)
    );
    only_datasets(&root);
    assert_eq!(rows_under(&root.join("transactions")), before);
    // A re-run (a retried task) with --replace gives the same rows, once.
    export(&[&f], &root, &["--replace"]);
    only_datasets(&root);
    assert_eq!(rows_under(&root.join("transactions")), before);
    // Another name beside it.
    export(&[&f], &root, &["--capture", "again"]);
    assert_eq!(
        rows_under(&root.join("transactions")).len(),
        2 * before.len()
    );
}

#[test]
fn bad_arguments_are_refused_with_one_line_and_exit_code_2() {
    let tmp = tempfile::TempDir::new().unwrap();
    let root = tmp.path().join("pq");
    let f = common::fixture("err1146-storm.pcap");
    for (extra, what) in [
        (&["--label", "host"][..], "a label without ="),
        (&["--label", "Host=db3"], "an upper-case key"),
        (&["--label", "state=x"], "a key that is a column"),
        (&["--label", "host=a/b"], "a value with /"),
        (&["--label", "host=a", "--label", "host=b"], "a key twice"),
        (&["--capture", "../x"], "a capture name with /"),
    ] {
        let mut args = vec!["export", s(&f), "--parquet", s(&root)];
        args.extend(extra);
        one_line_error(&run(&args), what);
        assert!(
            !root.join("transactions").exists(),
            "{what}: nothing written"
        );
    }
    // An interval is checked by clap as the other commands' are: its usage error, exit code 2.
    for interval in ["0", "0.5ms", "1"] {
        let o = run(&[
            "export",
            s(&f),
            "--parquet",
            s(&root),
            "--interval",
            interval,
        ]);
        assert_eq!(
            o.status.code(),
            Some(2),
            "--interval {interval}: {}",
            stderr(&o)
        );
        assert!(
            !root.join("transactions").exists(),
            "--interval {interval}: nothing written"
        );
    }
    // `--json`: export prints no report.
    one_line_error(
        &run(&["export", s(&f), "--parquet", s(&root), "--json"]),
        "--json",
    );
    // A root that is a file.
    let file = tmp.path().join("file");
    std::fs::write(&file, b"x").unwrap();
    one_line_error(
        &run(&["export", s(&f), "--parquet", s(&file)]),
        "a root that is a file",
    );
    assert_eq!(std::fs::read(&file).unwrap(), b"x");
}

/// Never into an input: a root that is an input directory or inside one is refused, and an input inside a
/// dataset's directory (which --replace would take away) too.
#[test]
fn the_export_never_writes_into_an_input() {
    let tmp = tempfile::TempDir::new().unwrap();
    let dir = tmp.path().join("captures");
    std::fs::create_dir(&dir).unwrap();
    let f = dir.join("one.pcap");
    std::fs::copy(common::fixture("err1146-storm.pcap"), &f).unwrap();
    let before: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    for root in [dir.clone(), dir.join("pq")] {
        one_line_error(
            &run(&["export", s(&dir), "--parquet", s(&root)]),
            "a root in the input directory",
        );
    }
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), before.len());
    let root = tmp.path().join("pq");
    let inside = root.join("transactions/capture=one");
    std::fs::create_dir_all(&inside).unwrap();
    let hidden = inside.join("one.pcap");
    std::fs::copy(&f, &hidden).unwrap();
    one_line_error(
        &run(&["export", s(&hidden), "--parquet", s(&root), "--replace"]),
        "an input inside a dataset",
    );
    assert!(hidden.is_file());
}

/// A killed export (SIGKILL while reading a pipe that stays open) puts no partition in place: its files
/// stay in the hidden staging directory, which no reader of the datasets looks into, and a new export
/// of the capture succeeds beside it.
#[test]
fn a_killed_export_leaves_no_partition_in_place() {
    let tmp = tempfile::TempDir::new().unwrap();
    let root = tmp.path().join("pq");
    let mut child = Command::new(common::bin())
        .args(["export", "-", "--parquet", s(&root), "--capture", "live"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let bytes = std::fs::read(common::fixture("err1146-storm.pcap")).unwrap();
    let mut stdin = child.stdin.take().unwrap();
    use std::io::Write;
    stdin.write_all(&bytes).unwrap();
    // The staging directory exists from the start (before anything is read).
    let staged = || {
        std::fs::read_dir(&root).ok().is_some_and(|mut d| {
            d.any(|e| {
                e.unwrap()
                    .file_name()
                    .to_string_lossy()
                    .starts_with(".pcapsleuth-export-")
            })
        })
    };
    let mut waited = 0;
    while !staged() && waited < 600 {
        std::thread::sleep(std::time::Duration::from_millis(50));
        waited += 1;
    }
    assert!(staged(), "the export began");
    child.kill().unwrap();
    child.wait().unwrap();
    drop(stdin);
    for d in DATASETS {
        assert!(!root.join(d.name).exists(), "{} appeared", d.name);
    }
    export(
        &[&common::fixture("err1146-storm.pcap")],
        &root,
        &["--capture", "live"],
    );
    assert!(!rows_under(&root.join("transactions")).is_empty());
}
