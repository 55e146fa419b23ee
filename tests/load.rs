//! `pcapsleuth load` on the lab's load captures: transactions counted as tshark counts their COMMITs
//! and ROLLBACKs, the connection that sent its COMMIT late named with its frames, requests in flight as
//! an independent sweep over tshark's frames measures them, Little's law beside it, partial intervals
//! marked.

use crate::common;

use pcapsleuth_testkit::oracle;
use serde_json::Value;

fn load(name: &str) -> Value {
    common::json(&["load", "--json", common::fixture(name).to_str().unwrap()])
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// COM_QUERY statements of `file` whose text is `text` exactly, as tshark counts them.
fn statements(tshark: &oracle::Tshark, file: &str, text: &str) -> u64 {
    tshark.count(
        &common::fixture(file),
        &format!("mysql.command == 3 && mysql.query == \"{text}\""),
    ) as u64
}

/// The capture's span (first to last packet), seconds, from tshark's relative times.
fn span_s(tshark: &oracle::Tshark, file: &str) -> f64 {
    let path = common::fixture(file);
    let times = tshark.lines([
        "-r",
        path.to_str().unwrap(),
        "-T",
        "fields",
        "-e",
        "frame.time_relative",
    ]);
    times
        .iter()
        .filter_map(|t| t.trim().parse::<f64>().ok())
        .fold(0.0, f64::max)
}

#[test]
fn the_late_commit_is_named_with_its_connection_and_frames() {
    let Some(tshark) = oracle::tshark() else {
        return;
    };
    let file = "load-commit-late.pcap";
    let r = load(file);
    let tx = &r["transactions"];
    let counts = &tx["counts"];
    // Every COMMIT and ROLLBACK on the wire ends one transaction, each opened by a BEGIN.
    let (commits, rollbacks, begins) = (
        statements(&tshark, file, "COMMIT"),
        statements(&tshark, file, "ROLLBACK"),
        statements(&tshark, file, "BEGIN"),
    );
    assert_eq!((commits, rollbacks, begins), (311, 1, 312));
    assert_eq!(u(&counts["committed"]), commits);
    assert_eq!(u(&counts["rolled_back"]), rollbacks);
    assert_eq!(u(&counts["explicit"]), begins);
    assert_eq!(u(&counts["by_server_status"]), begins);
    assert_eq!(tx["told_by"], "server_status");
    let tps = f(&tx["per_s"]);
    let want = (commits + rollbacks) as f64 / span_s(&tshark, file);
    assert!((tps - want).abs() < 1e-6 * want, "tps {tps}, tshark {want}");

    // The session that held its transactions open 1 s each before the COMMIT (commit-late.py's "late",
    // port 59328 in its log) is the worst, with its longest silence ending in a COMMIT.
    let worst = &r["worst_idle_in_transaction"][0];
    assert_eq!(worst["client"], "10.77.1.2:59328");
    assert_eq!(u(&worst["transactions"]), 4);
    let idle = f(&worst["idle_in_transaction_s"]);
    // 3 x 1.0 s before a COMMIT and 0.3 s before the ROLLBACK, plus the milliseconds between statements.
    assert!((3.3..3.4).contains(&idle), "idle {idle}");
    let gap = &worst["longest_idle"];
    assert_eq!(gap["statement"], "COMMIT");
    assert!((1.0..1.01).contains(&f(&gap["seconds"])), "{gap}");
    // tshark: the request frame is a COMMIT from that port, and the frame the silence began after is the
    // server's last answer on the connection before it.
    let path = common::fixture(file);
    let at = |frame: u64, field: &str| {
        tshark
            .lines([
                "-r",
                path.to_str().unwrap(),
                "-Y",
                &format!("frame.number == {frame}"),
                "-T",
                "fields",
                "-e",
                field,
            ])
            .join("\n")
    };
    let commit = u(&gap["request_frame"]);
    assert_eq!(at(commit, "mysql.query").trim(), "COMMIT");
    assert_eq!(at(commit, "tcp.srcport").trim(), "59328");
    let after = u(&gap["after_frame"]);
    let between = tshark.count(
        &path,
        &format!(
            "tcp.dstport == 59328 && tcp.len > 0 && frame.number > {after} && frame.number < {commit}"
        ),
    );
    assert_eq!(at(after, "tcp.dstport").trim(), "59328");
    assert_eq!(
        between, 0,
        "server data between frames {after} and {commit}"
    );
    // Most of the transactions' time is the client's silence.
    assert!(f(&tx["idle_share"]) > 0.8, "{tx}");

    let text = common::text(&["load", path.to_str().unwrap()]);
    assert!(
        text.contains(
            "idle in transaction, the worst connections:\n  10.77.1.2:59328 -> 10.77.0.1:3306"
        ),
        "{text}"
    );
    assert!(text.contains("to `COMMIT` (frame "), "{text}");
}

#[test]
fn sysbench_read_write_transactions_are_counted_with_their_statements() {
    let Some(tshark) = oracle::tshark() else {
        return;
    };
    let file = "load-oltp-rw.pcap";
    let r = load(file);
    let tx = &r["transactions"];
    let commits = statements(&tshark, file, "COMMIT");
    let begins = statements(&tshark, file, "BEGIN");
    // sysbench's own count (fixtures/lab/load-oltp-rw.client.log): 67 transactions.
    assert_eq!((commits, begins), (67, 67));
    assert_eq!(u(&tx["counts"]["committed"]), commits);
    assert_eq!(u(&tx["counts"]["explicit"]), begins);
    assert_eq!(u(&tx["counts"]["rolled_back"]), 0);
    assert_eq!(u(&tx["counts"]["open_at_end"]), 0);
    // oltp_read_write: 10 point selects, 4 ranges, 2 updates, a delete and an insert between BEGIN and
    // COMMIT; tshark's COM_QUERY count less the BEGINs and COMMITs, per transaction.
    let queries = tshark.count(&common::fixture(file), "mysql.command == 3") as u64;
    assert_eq!(queries, 1340);
    assert_eq!(
        f(&tx["statements_mean"]),
        (queries - 2 * commits) as f64 / commits as f64
    );
    assert_eq!(u(&tx["statements_max"]), 18);
    let tps = f(&tx["per_s"]);
    let want = commits as f64 / span_s(&tshark, file);
    assert!((tps - want).abs() < 1e-6 * want, "tps {tps}, tshark {want}");
    // A transaction's time is at least the sum of its statements': p50 above 18 of the median RT.
    let p50 = f(&tx["rt_us"]["p50"]);
    assert!(p50 > 18.0 * f(&r["in_flight"]["rt_mean_us"]) * 0.3, "{tx}");
}

#[test]
fn autocommit_off_transactions_are_told_by_the_server_flag() {
    let Some(tshark) = oracle::tshark() else {
        return;
    };
    let file = "load-autocommit-off.pcap";
    let r = load(file);
    let c = &r["transactions"]["counts"];
    let (commits, rollbacks) = (
        statements(&tshark, file, "COMMIT"),
        statements(&tshark, file, "ROLLBACK"),
    );
    // autocommit-off.py's log: 48 + 49 + 8 commits, 12 + 12 + 1 rollbacks; no BEGIN on the wire.
    assert_eq!((commits, rollbacks), (105, 25));
    assert_eq!(statements(&tshark, file, "BEGIN"), 0);
    assert_eq!(statements(&tshark, file, "SET AUTOCOMMIT = 0"), 3);
    assert_eq!(
        (u(&c["committed"]), u(&c["rolled_back"])),
        (commits, rollbacks)
    );
    assert_eq!(
        (u(&c["autocommit_off"]), u(&c["explicit"])),
        (commits + rollbacks, 0)
    );
    assert_eq!(r["transactions"]["told_by"], "server_status");
    assert_eq!(u(&r["transactions"]["statements_max"]), 2);
    // The session that waits 0.2 s inside each transaction ("ac0-slow", port 50074 in the log).
    let worst = &r["worst_idle_in_transaction"][0];
    assert_eq!(worst["client"], "10.77.1.2:50074");
    let gap = f(&worst["longest_idle"]["seconds"]);
    assert!((0.2..0.21).contains(&gap), "{worst}");
    assert!(worst["longest_idle"]["statement"]
        .as_str()
        .unwrap()
        .starts_with("UPDATE sbtest3"));
}

/// Requests in flight measured independently from tshark's frames: on each connection a request is in
/// flight from its first frame to the last server data before the next request (or the end). The
/// maximum must be the same and the time-weighted mean within 0.5% (tshark prints times to the ns,
/// pcapsleuth reads µs; a request's end is the segment with its last byte in both).
#[test]
fn requests_in_flight_match_a_sweep_over_tsharks_frames() {
    let Some(tshark) = oracle::tshark() else {
        return;
    };
    for file in [
        "load-oltp-rw.pcap",
        "load-commit-late.pcap",
        "load-autocommit-off.pcap",
    ] {
        let path = common::fixture(file);
        let pass = common::tshark_pass(&tshark, &path);
        let col = common::TsharkPass::col;
        let (t, sport, dport, len, cmd) = (
            col("frame.time_epoch"),
            col("tcp.srcport"),
            col("tcp.dstport"),
            col("tcp.len"),
            col("mysql.command"),
        );
        // Per client port: (start, end) of each request.
        let mut open: std::collections::BTreeMap<String, (f64, Option<f64>)> = Default::default();
        let mut spans: Vec<(f64, f64)> = Vec::new();
        let (mut first, mut last) = (f64::MAX, 0.0f64);
        for row in pass.rows() {
            let ts: f64 = row[t].parse().unwrap();
            first = first.min(ts);
            last = last.max(ts);
            let data = row[len].parse::<u64>().unwrap_or(0) > 0;
            if row[dport] == "3306" && !row[cmd].is_empty() {
                let c = row[cmd].split(',').next().unwrap();
                if let Some((s, Some(e))) = open.remove(row[sport]) {
                    spans.push((s, e));
                }
                if c != "1" {
                    open.insert(row[sport].to_string(), (ts, None));
                }
            } else if row[sport] == "3306" && data {
                if let Some(o) = open.get_mut(row[dport]) {
                    o.1 = Some(ts);
                }
            }
        }
        spans.extend(open.into_values().filter_map(|(s, e)| Some((s, e?))));
        let mut events: Vec<(f64, i32)> =
            spans.iter().flat_map(|&(s, e)| [(s, 1), (e, -1)]).collect();
        events.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let (mut level, mut max, mut area, mut prev) = (0i32, 0i32, 0.0, first);
        for (ts, d) in events {
            area += f64::from(level) * (ts - prev);
            prev = ts;
            level += d;
            max = max.max(level);
        }
        let mean = area / (last - first);

        let r = load(file);
        let inf = &r["in_flight"];
        assert_eq!(u(&inf["max"]), max as u64, "{file}");
        let got = f(&inf["mean"]);
        assert!(
            (got - mean).abs() <= 0.005 * mean,
            "{file}: {got} vs tshark {mean}"
        );
        // Little's law on the whole run: requests/s x mean RT sums the same response times over the same
        // span; it may differ only by what the capture's edges cut (none here: every request answered).
        let little = f(&inf["littles_law"]);
        assert!(
            (little - got).abs() <= 0.01 * got,
            "{file}: {little} vs {got}"
        );
    }
}

/// Per interval, Little's law counts each request in the interval it began in while the measured mean
/// spreads it over the intervals it lasted: on full intervals of 1 s with requests of at most tens of ms
/// they agree within 10%; the edges are marked partial with the seconds they cover.
#[test]
fn intervals_mark_the_edges_and_agree_with_littles_law() {
    for file in ["load-oltp-rw.pcap", "load-commit-late.pcap"] {
        let r = load(file);
        let rows = r["per_interval"].as_array().unwrap();
        assert!(rows.len() >= 3, "{file}");
        let (head, tail) = (&rows[0], &rows[rows.len() - 1]);
        for edge in [head, tail] {
            assert_eq!(edge["partial"], true, "{file}: {edge}");
            assert!(f(&edge["covered_s"]) < 1.0, "{file}: {edge}");
        }
        let mut ended = 0;
        for row in rows {
            ended += u(&row["transactions"]);
            let cov = f(&row["covered_s"]);
            assert!((f(&row["tps"]) - u(&row["transactions"]) as f64 / cov).abs() < 1e-9);
            if row["partial"] == false {
                assert_eq!(cov, 1.0);
                let (m, l) = (f(&row["in_flight_mean"]), f(&row["littles_law"]));
                assert!((m - l).abs() <= 0.1 * m, "{file}: {row}");
            }
        }
        let c = &r["transactions"]["counts"];
        assert_eq!(ended, u(&c["committed"]) + u(&c["rolled_back"]), "{file}");
    }
}

fn idle_finding(name: &str) -> Option<Value> {
    let r = common::json(&["report", "--json", common::fixture(name).to_str().unwrap()]);
    r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["kind"] == "idle_in_transaction")
        .cloned()
}

/// `report` raises `idle_in_transaction` on the lock holder of lock-wait-timeout.pcap (a session that
/// held a row lock 6.5 s before its COMMIT, fixtures/lab/lock-waits.py), names the COMMIT's frame as
/// tshark reads it, and does not blame the clients of a path made slow (diff-path-delay-server.b: the
/// clients answered at once through a 2 ms delay line); none on sysbench's back-to-back statements.
#[test]
fn report_names_the_transaction_held_open_and_not_a_slow_path() {
    let Some(tshark) = oracle::tshark() else {
        return;
    };
    let f =
        idle_finding("lock-wait-timeout.pcap").expect("idle_in_transaction on lock-wait-timeout");
    assert_eq!(f["severity"], 2, "{f}");
    let summary = f["summary"].as_str().unwrap();
    assert!(
        summary.contains(
            "worst connection 10.77.1.2:60096 -> 10.77.0.1:3306: 6.5 s idle in 1 transaction"
        ),
        "{summary}"
    );
    let commit = u(&f["frames"][1]);
    let path = common::fixture("lock-wait-timeout.pcap");
    let at = tshark.lines([
        "-r",
        path.to_str().unwrap(),
        "-Y",
        &format!("frame.number == {commit}"),
        "-T",
        "fields",
        "-e",
        "mysql.query",
        "-e",
        "tcp.srcport",
    ]);
    assert_eq!(at, vec!["COMMIT\t60096".to_string()]);
    assert!(
        summary.ends_with(&format!("before `COMMIT` (frame {commit})")),
        "{summary}"
    );

    let f =
        idle_finding("diff-path-delay-server.b.pcap").expect("idle_in_transaction at the server");
    assert_eq!(f["severity"], 3, "{f}");
    assert!(
        f["summary"]
            .as_str()
            .unwrap()
            .contains("the clients answered at once, the path holds most of it"),
        "{f}"
    );
    assert!(idle_finding("diff-path-delay-server.a.pcap").is_none());
    assert!(idle_finding("load-oltp-rw.pcap").is_none());
}

/// The longest transactions are listed with their statements: on the late-COMMIT run, the late session's
/// three 1 s transactions first, each BEGIN, UPDATE, SELECT, COMMIT, at the frames where tshark shows
/// those queries from its port, in order, the COMMIT last; the transaction's time is its BEGIN's first
/// byte to the COMMIT's answer. The text shows them, and the JSON lists at most ten, longest first.
#[test]
fn the_longest_transactions_are_listed_with_their_statements() {
    let file = "load-commit-late.pcap";
    let r = load(file);
    let worst = r["transactions"]["worst"].as_array().unwrap();
    assert_eq!(worst.len(), 10);
    let rts: Vec<f64> = worst.iter().map(|t| f(&t["rt_us"])).collect();
    assert!(rts.windows(2).all(|w| w[0] >= w[1]), "{rts:?}");
    for t in &worst[..3] {
        assert_eq!(t["client"], "10.77.1.2:59328", "{t}");
        assert_eq!(t["ending"], "commit");
        let rt = f(&t["rt_us"]);
        assert!((1_000_000.0..1_010_000.0).contains(&rt), "{t}");
        let st = t["statements"].as_array().unwrap();
        assert_eq!(u(&t["statement_count"]), st.len() as u64);
        let fps: Vec<&str> = st
            .iter()
            .map(|s| s["fingerprint"].as_str().unwrap())
            .collect();
        assert_eq!(
            fps,
            [
                "begin",
                "update sbtest1 set k=k+? where id=?",
                "select k from sbtest1 where id=?",
                "commit"
            ]
        );
        assert!(st.iter().all(|s| s["command"] == "COM_QUERY"));
        assert_eq!(t["first_frame"], st[0]["frame"]);
        assert!(f(&t["idle_us"]) > 0.9 * rt, "{t}");
        if let Some(tshark) = oracle::tshark() {
            let path = common::fixture(file);
            let first = u(&st[0]["frame"]);
            let last = u(&st[3]["frame"]);
            let frames: Vec<u64> = tshark
                .lines([
                    "-r",
                    path.to_str().unwrap(),
                    "-Y",
                    &format!(
                        "tcp.srcport == 59328 && mysql.query && frame.number >= {first} && \
                         frame.number <= {last}"
                    ),
                    "-T",
                    "fields",
                    "-e",
                    "frame.number",
                ])
                .iter()
                .map(|l| l.trim().parse().unwrap())
                .collect();
            let ours: Vec<u64> = st.iter().map(|s| u(&s["frame"])).collect();
            assert_eq!(ours, frames, "{t}");
        }
    }
    let text = common::text(&["load", common::fixture(file).to_str().unwrap()]);
    assert!(
        text.contains("the longest transactions (of 10 listed in --json), with their statements:"),
        "{text}"
    );
    assert!(text.contains("COM_QUERY         commit"), "{text}");
}

/// `load` has a row per server (`ip:port`): three servers on one port are three rows, whose requests
/// and connections add up to the run's.
#[test]
fn load_has_a_row_per_server() {
    let files: Vec<String> = ["vlan.pcap", "ipv6.pcap", "any-cooked-v2.pcap"]
        .iter()
        .map(|n| common::fixture(n).to_str().unwrap().to_string())
        .collect();
    let mut args = vec!["load", "--json"];
    args.extend(files.iter().map(String::as_str));
    let r = common::json(&args);
    let rows = r["servers"].as_array().unwrap();
    let names: Vec<&str> = rows.iter().map(|s| s["server"].as_str().unwrap()).collect();
    assert_eq!(names.len(), 3, "{names:?}");
    for want in ["10.78.0.1:3306", "[fd77::1]:3306", "10.77.0.1:3306"] {
        assert!(names.contains(&want), "{want} in {names:?}");
    }
    assert!(rows.iter().all(|s| s["port"] == 3306));
    assert_eq!(
        rows.iter().map(|s| u(&s["requests"])).sum::<u64>(),
        u(&r["requests"])
    );
    assert_eq!(
        rows.iter().map(|s| u(&s["connections"])).sum::<u64>(),
        u(&r["connections"]["active"])
    );
    let requests: Vec<u64> = rows.iter().map(|s| u(&s["requests"])).collect();
    assert!(requests.windows(2).all(|w| w[0] >= w[1]), "{requests:?}");
    args.remove(1);
    let text = common::text(&args);
    assert!(text.contains("servers, by requests:"), "{text}");
    // One server: no table.
    let one = common::text(&[
        "load",
        common::fixture("load-oltp-rw.pcap").to_str().unwrap(),
    ]);
    assert!(!one.contains("servers, by requests:"), "{one}");
}

/// A load test whose connections are all in TLS with no key log (the lab's diff pair, TLS 1.3): no
/// request can be read, so the load is told from the TLS records, as estimates: one exchange per query
/// sysbench sent, their rate over the capture's span, their times, and the exchanges in flight by
/// Little's law. A run in the clear has no such figures.
#[test]
fn a_load_in_tls_without_keys_is_told_from_its_records() {
    for run in ["a", "b"] {
        let name = format!("diff-tls-path-delay.{run}.pcap");
        let r = load(&name);
        assert_eq!(u(&r["requests"]), 0);
        let e = &r["tls_estimated"];
        let log = std::fs::read_to_string(common::fixture(&format!(
            "lab/diff-tls-path-delay.{run}.sysbench.txt"
        )))
        .unwrap();
        let queries: u64 = log
            .lines()
            .find_map(|l| l.trim_start().strip_prefix("queries:"))
            .and_then(|l| l.split_whitespace().next())
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(u(&e["exchanges"]), queries, "{run}: {e}");
        // Each connection's COM_QUIT has no answer.
        assert_eq!(u(&e["unfinished"]), 4, "{run}: {e}");
        let per_s = f(&e["exchanges_per_s"]);
        assert!(
            (per_s - queries as f64 / f(&r["span_s"])).abs() < 1e-6 * per_s,
            "{e}"
        );
        let little = per_s * f(&e["rt_us"]["mean"]) / 1e6;
        assert!((f(&e["littles_law"]) - little).abs() < 1e-9, "{e}");
        let text = common::flat(&common::text(&[
            "load",
            common::fixture(&name).to_str().unwrap(),
        ]));
        let thousands = format!("{},{:03}", queries / 1000, queries % 1000);
        assert!(
            text.contains(&format!(
                "in TLS sessions not decrypted (no key log), timed from their records: {thousands} exchanges"
            )),
            "{text}"
        );
    }
    // The delay line's 2 ms on every answer, in the exchanges' times.
    let (a, b) = (
        load("diff-tls-path-delay.a.pcap"),
        load("diff-tls-path-delay.b.pcap"),
    );
    let grew = f(&b["tls_estimated"]["rt_us"]["p50"]) - f(&a["tls_estimated"]["rt_us"]["p50"]);
    assert!((2000.0..2600.0).contains(&grew), "{grew}");
    assert_eq!(load("no-cap.pcap")["tls_estimated"], Value::Null);
}
