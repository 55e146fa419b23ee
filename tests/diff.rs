//! `pcapsleuth diff A B` on the lab's pairs of runs (fixtures/README.md, *Two runs to diff*): each pair
//! is one sysbench workload recorded before (a) and after (b) one change, and the verdict must name that
//! change, including its direction of cause.

use crate::common;

use pcapsleuth_testkit::oracle;
use serde_json::Value;

fn pair(name: &str) -> (String, String) {
    let f = |side: &str| {
        common::fixture(&format!("diff-{name}.{side}.pcap"))
            .to_str()
            .unwrap()
            .to_string()
    };
    (f("a"), f("b"))
}

fn diff_json(name: &str) -> Value {
    let (a, b) = pair(name);
    common::json(&["diff", "--json", &a, &b])
}

fn verdict(d: &Value) -> &str {
    d["verdict"].as_str().unwrap()
}

/// The statement group of `fingerprint` sent as `COM_QUERY`.
fn statement<'a>(d: &'a Value, fingerprint: &str) -> &'a Value {
    d["statements"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["fingerprint"] == fingerprint && s["command"] == "COM_QUERY")
        .unwrap_or_else(|| panic!("no statement {fingerprint}"))
}

fn changes(d: &Value) -> Vec<&str> {
    d["statements"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["change"].as_str().unwrap())
        .collect()
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap()
}

/// At the client, a 2 ms delay on server->client: every statement slower by the same ~2.2 ms, on
/// every connection, the round trip to the server (data to its ACK) grown: the path, not the server.
#[test]
fn a_delay_on_the_path_is_named_at_the_client() {
    let d = diff_json("path-delay");
    let v = verdict(&d);
    assert!(
        v.starts_with("B is 41.2× slower at p50 (56.1 µs -> 2.31 ms"),
        "{v}"
    );
    assert!(
        v.contains("every statement got slower by about the same time"),
        "{v}"
    );
    assert!(v.contains("on every connection"), "{v}");
    assert!(
        v.contains("the path's round trip to the server grew from"),
        "{v}"
    );
    assert!(v.contains("Requests per second unchanged"), "{v}");
    // The lab's truth: every kind +2.2-2.3 ms at p50; each group tested is slower, none otherwise.
    assert!(
        changes(&d).iter().all(|c| *c == "slower"),
        "{:?}",
        changes(&d)
    );
    for s in d["statements"].as_array().unwrap() {
        let delta = f(&s["b"]["rt_us"]["p50"]) - f(&s["a"]["rt_us"]["p50"]);
        assert!(
            (2000.0..2400.0).contains(&delta),
            "{}: {delta}",
            s["fingerprint"]
        );
    }
    assert_eq!(d["runs"]["b"]["capture_point"], "client");
    assert!(d["rt_us"]["test"]["significant"].as_bool().unwrap());
    assert!(!d["load"]["rate_test"]["significant"].as_bool().unwrap());
    // The handshakes: SYN to SYN-ACK 0.012-0.033 ms in a, 6.98-11.55 ms in b (tshark, fixtures/README).
    let hs = &d["path"]["syn_to_synack_us"];
    assert!(
        f(&hs["a"]["max"]) < 40.0 && f(&hs["b"]["min"]) > 6900.0,
        "{hs}"
    );
}

/// The same runs captured at the server: its own response times grew a little (the delay line shared
/// the CPUs), but the round trip it sees (a response, then the client's next request; SYN-ACK to ACK)
/// grew by the delay: the verdict names the path, not a slower server.
#[test]
fn a_delay_on_the_path_is_named_at_the_server() {
    let d = diff_json("path-delay-server");
    let v = verdict(&d);
    assert!(
        v.starts_with("The path between the server and its clients got slower: seen at the server"),
        "{v}"
    );
    assert!(
        v.contains("changed by 71.2 µs at p50 (50.2 µs -> 121 µs)"),
        "{v}"
    );
    assert_eq!(d["runs"]["b"]["capture_point"], "server");
    let floor = f(&d["load"]["think_p10_us"]["b"]) - f(&d["load"]["think_p10_us"]["a"]);
    assert!((2000.0..2400.0).contains(&floor), "{floor}");
    assert!(f(&d["path"]["synack_to_ack_us"]["b"]["min"]) > 6900.0);
    assert!(!d["load"]["rate_test"]["significant"].as_bool().unwrap());
}

/// A table renamed away: 305 x ERR 1146 in b only, on the statements of sbtest8, response times
/// unchanged; b sends more requests (sysbench restarts a failed transaction).
#[test]
fn a_missing_table_is_named_by_its_errors() {
    let d = diff_json("missing-table");
    let v = verdict(&d);
    assert!(
        v.starts_with(
            "New in B: ERR 1146 (42S02) × 305: Table 'sbtest.sbtest8' doesn't exist, answering \
             `select c from sbtest8 where id=?` (255), `select id, k from sbtest8 where id between ? and ?` (50)."
        ),
        "{v}"
    );
    assert!(
        v.contains("Response times unchanged within the runs' noise"),
        "{v}"
    );
    let e = &d["errors"][0];
    assert_eq!(
        (e["code"].as_u64(), e["change"].as_str()),
        (Some(1146), Some("new"))
    );
    assert_eq!(
        (e["count"]["a"].as_u64(), e["count"]["b"].as_u64()),
        (Some(0), Some(305))
    );
    // No statement got slower; the point selects of the tables still there did not change. (The
    // range select of sbtest8 is answered faster by its error than by rows, and b's BEGINs include
    // the restarts after an error: both faster, both true.)
    assert!(!changes(&d).contains(&"slower"), "{:?}", changes(&d));
    for n in 1..=7 {
        let s = statement(&d, &format!("select c from sbtest{n} where id=?"));
        assert_eq!(s["change"], "unchanged", "{s}");
    }
    let range8 = statement(&d, "select id, k from sbtest8 where id between ? and ?");
    assert_eq!(range8["change"], "faster", "{range8}");
    if let Some(tshark) = oracle::tshark() {
        let (a, b) = pair("missing-table");
        let count = |f: &str| tshark.count(std::path::Path::new(f), "mysql.error_code==1146");
        assert_eq!((count(&a), count(&b)), (0, 305));
    }
}

/// A smaller buffer pool: only the big.sbtest1 point select got slower (p50 0.045 -> 0.405 ms): the
/// verdict puts the added time there and says the server's work on it changed.
#[test]
fn a_smaller_buffer_pool_is_named_by_its_one_statement() {
    let d = diff_json("small-buffer-pool");
    let v = verdict(&d);
    assert!(
        v.contains(
            "of the added time is in `select c from big.sbtest1 where id=?` (p50 45.1 µs -> 406 µs"
        ),
        "{v}"
    );
    assert!(v.contains("The server's work on it changed"), "{v}");
    let big = statement(&d, "select c from big.sbtest1 where id=?");
    assert_eq!(big["change"], "slower");
    assert!(f(&big["added_share"]) > 0.95, "{big}");
    // The point selects of the small tables, which fit the smaller pool, did not change.
    for n in 1..=8 {
        let s = statement(&d, &format!("select c from sbtest{n} where id=?"));
        assert_eq!(s["change"], "unchanged", "{s}");
    }
}

/// The clients paced to 150 tx/s: the server's own times improve (p50 0.108 -> 0.068 ms) because it is
/// offered less; the verdict must say that, not that the server got faster.
#[test]
fn clients_that_slowed_down_are_not_a_faster_server() {
    let d = diff_json("clients-slower");
    let v = verdict(&d);
    assert!(
        v.starts_with(
            "The clients offered less load, and the server's response times improved with it"
        ),
        "{v}"
    );
    assert!(
        v.contains("not because it got faster: the change is on the clients' side"),
        "{v}"
    );
    assert!(!v.contains("B is"), "{v}");
    let t = &d["rt_us"]["test"];
    assert!(t["significant"].as_bool().unwrap() && f(&t["effect"]) < 0.5);
    let rate = &d["load"]["rate_test"];
    assert!(
        rate["significant"].as_bool().unwrap() && f(&rate["ratio"]) < 0.1,
        "{rate}"
    );
    assert!(
        f(&d["load"]["think_time_us"]["b"]["mean"])
            > 10.0 * f(&d["load"]["think_time_us"]["a"]["mean"])
    );
    assert_eq!(d["load"]["active_connections"]["a"], 8);
    assert_eq!(d["load"]["active_connections"]["b"], 8);
}

/// The other way round, the clients speeding up make the server slower: the load, again, is the cause.
#[test]
fn clients_that_sped_up_are_not_a_slower_server() {
    let (a, b) = pair("clients-slower");
    let d = common::json(&["diff", "--json", &b, &a]);
    let v = verdict(&d);
    assert!(
        v.starts_with(
            "The clients offered more load, and the server's response times grew with it"
        ),
        "{v}"
    );
}

/// A run against itself: nothing beyond the noise, every statement unchanged.
#[test]
fn a_run_against_itself_differs_in_nothing() {
    let (a, _) = pair("small-buffer-pool");
    let d = common::json(&["diff", "--json", &a, &a]);
    let v = verdict(&d);
    assert!(v.starts_with("No difference beyond the runs' noise"), "{v}");
    assert!(changes(&d)
        .iter()
        .all(|c| *c == "unchanged" || *c == "too_few"));
    assert_eq!(d["method"]["distributions"], "mann_whitney_u");
    assert_eq!(d["method"]["random"], false);
}

/// Each run may be a set of files, as every command takes them: `--a FILE... --b FILE...` reads the
/// same runs the positional form does; one run missing is refused as bad input.
#[test]
fn runs_are_given_as_sets_of_files() {
    let (a, b) = pair("missing-table");
    let positional = common::text(&["diff", &a, &b]);
    let named = common::text(&["diff", "--a", &a, "--b", &b]);
    assert_eq!(positional, named);
    assert!(positional.contains("Matched: A's server 10.77.0.1:3306 with B's (the same endpoint)"));
    let o = std::process::Command::new(common::bin())
        .args(["diff", &a])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
}

/// The output says what was matched with what: the server, by its endpoint, and the statement groups.
#[test]
fn the_output_says_what_was_matched_with_what() {
    let d = diff_json("path-delay");
    let notes: Vec<&str> = d["matched"]["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert_eq!(
        notes[0],
        "A's server 10.77.0.1:3306 with B's (the same endpoint)"
    );
    assert_eq!(d["matched"]["statements_in_both"], 19);
    assert_eq!(d["servers"][0]["matched"]["basis"], "same_endpoint");
    // Two runs against different servers (the VLAN lab's 10.78.0.1, the main lab's 10.77.0.1, each
    // the only server of its capture) are paired, and the output says so; their spans differ, so
    // counts are compared per second.
    let (a, b) = (
        common::fixture("vlan.pcap"),
        common::fixture("any-cooked-v2.pcap"),
    );
    let d = common::json(&["diff", "--json", a.to_str().unwrap(), b.to_str().unwrap()]);
    assert_eq!(
        d["matched"]["notes"][0],
        "A's server 10.78.0.1:3306 with B's 10.77.0.1:3306 (the only server of each run not matched by endpoint)"
    );
    assert_eq!(d["servers"][0]["matched"]["basis"], "only_one_left");
}

/// The page `report B --html OUT --baseline A` writes (OUT a scratch file named `name`).
fn baseline_page(a: &str, b: &str, name: &str) -> String {
    let out = common::scratch("diff", name);
    let o = std::process::Command::new(common::bin())
        .args([
            "report",
            b,
            "--html",
            out.to_str().unwrap(),
            "--baseline",
            a,
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::read_to_string(&out).unwrap()
}

/// `report --html OUT --baseline A`: the page of the capture (run B) holds its diff against A, the
/// verdict and the statements that changed, escaped as the rest of the page; `--baseline` without
/// `--html` is refused as bad input.
#[test]
fn the_report_page_compares_with_a_baseline() {
    let (a, b) = pair("small-buffer-pool");
    let page = baseline_page(&a, &b, "baseline.html");
    assert!(
        page.contains("<section id=\"baseline\">"),
        "no baseline section"
    );
    assert!(page.contains("The server&#39;s work on it changed"));
    assert!(page.contains("<td>slower</td><td>COM_QUERY</td><td class=\"stmt\"><code>select c from big.sbtest1 where id=?</code>"));
    let o = std::process::Command::new(common::bin())
        .args(["report", &b, "--baseline", &a])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
}

/// tshark's `tcp.analysis.ack_rtt` samples of a capture: how many ACKs the server sent that timed a
/// round trip (`true`) and how many the clients sent.
fn ack_rtt_counts(tshark: &oracle::Tshark, file: &str) -> (usize, usize) {
    let lines = tshark.lines([
        "-r",
        file,
        "-Y",
        "tcp.analysis.ack_rtt",
        "-T",
        "fields",
        "-e",
        "tcp.srcport",
    ]);
    let by_server = lines.iter().filter(|l| l.trim() == "3306").count();
    (by_server, lines.len() - by_server)
}

/// The path section compares the round trips from TCP's data and ACKs, not the handshakes': every
/// sample tshark times (`ack_rtt`; these runs resend nothing), each leg tested with the rank test the
/// rest of the diff uses. The delay line (2 ms on server->client) is the round trip to the server at
/// the client (57 µs -> 2.36 ms) and to the client at the server; the handshakes, whose SYN-ACKs waited
/// behind the delay line's queue (7.77 ms), are no longer the verdict's figure. The other pairs' changes
/// are not the path's, and their verdicts say nothing of it.
#[test]
fn the_path_is_compared_on_the_round_trips_from_acks() {
    for (name, leg, key) in [
        ("path-delay", "to_server", "rtt_to_server_us"),
        ("path-delay-server", "to_client", "rtt_to_client_us"),
    ] {
        let d = diff_json(name);
        let p = &d["path"];
        assert_eq!(p["path_leg"], leg, "{name}");
        let rtt = &p[key];
        assert!(f(&rtt["a"]["p50"]) < 200.0, "{name}: {rtt}");
        assert!(
            (2000.0..2600.0).contains(&f(&rtt["b"]["p50"])),
            "{name}: {rtt}"
        );
        let t = &rtt["test"];
        assert!(
            t["significant"].as_bool().unwrap() && f(&t["effect"]) > 0.85,
            "{name}: {t}"
        );
        let v = verdict(&d);
        assert!(!v.contains("7.77 ms"), "{name}: {v}");
        assert!(!v.contains("handshakes"), "{name}: {v}");
        let b = dur_us(f(&rtt["b"]["p50"]));
        assert!(v.contains(&format!("to {b}")), "{name}: {b} not in {v}");
        if name == "path-delay" {
            assert!(
                v.contains("the path's round trip to the server grew from"),
                "{v}"
            );
        } else {
            assert!(v.contains("the round trip to the clients"), "{v}");
        }
        assert_eq!(p["resend_rate_test"], Value::Null, "{name}");
        if let Some(tshark) = oracle::tshark() {
            let (a, b) = pair(name);
            for (side, file) in [("a", &a), ("b", &b)] {
                let (server, client) = ack_rtt_counts(&tshark, file);
                assert_eq!(
                    p["rtt_to_server_us"][side]["count"], server as u64,
                    "{file}"
                );
                assert_eq!(
                    p["rtt_to_client_us"][side]["count"], client as u64,
                    "{file}"
                );
            }
        }
        let (a, b) = pair(name);
        let text = common::text(&["diff", &a, &b]);
        assert!(text.contains("RTT to server p50"), "{text}");
        assert!(text.contains("RTT to client p50"), "{text}");
    }
    for name in ["missing-table", "small-buffer-pool", "clients-slower"] {
        let d = diff_json(name);
        let v = verdict(&d);
        assert!(!v.contains("round trip"), "{name}: {v}");
        assert!(!v.contains("On the path"), "{name}: {v}");
    }
}

/// The house style's duration of `us` microseconds, as the verdict writes it (3 significant digits).
fn dur_us(us: f64) -> String {
    if us >= 1000.0 {
        let ms = us / 1000.0;
        let s = format!("{ms:.2}");
        format!("{} ms", s.trim_end_matches('0').trim_end_matches('.'))
    } else {
        format!("{} µs", (us * 10.0).round() / 10.0)
    }
}

/// Retransmissions and duplicate ACKs are compared by kind, each run's the sum of `rate`'s intervals,
/// their rates with the rate test the rest of the diff uses.
#[test]
fn resends_by_kind_and_duplicate_acks_are_compared() {
    let a = common::fixture("path-lost.pcap");
    let b = common::fixture("stream-stall.pcap");
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let d = common::json(&["diff", "--json", a, b]);
    let p = &d["path"];
    for (side, file) in [("a", a), ("b", b)] {
        let r = common::json(&["rate", "--json", file]);
        let mut kinds = [0u64; 5];
        let mut dup = 0;
        for point in r["total"].as_array().unwrap() {
            for dir in ["c2s", "s2c"] {
                let k = &point[format!("{dir}_resends")];
                for (i, name) in [
                    "fast_retransmit",
                    "timeout",
                    "tail_loss_probe",
                    "other",
                    "spurious",
                ]
                .iter()
                .enumerate()
                {
                    kinds[i] += k[name].as_u64().unwrap();
                }
                dup += point[format!("{dir}_dup_acks")].as_u64().unwrap();
            }
        }
        let mut got = [0u64; 5];
        for dir in ["c2s_resends", "s2c_resends"] {
            for (i, name) in [
                "fast_retransmit",
                "timeout",
                "tail_loss_probe",
                "other",
                "spurious",
            ]
            .iter()
            .enumerate()
            {
                got[i] += p[dir][side][name].as_u64().unwrap();
            }
        }
        assert_eq!(got, kinds, "{file}");
        assert_eq!(p["dup_acks"][side].as_u64().unwrap(), dup, "{file}");
        assert_eq!(
            p["retransmissions"][side].as_u64().unwrap(),
            kinds[..4].iter().sum::<u64>(),
            "{file}: every resend has a kind"
        );
    }
    assert!(p["retransmissions"]["b"].as_u64().unwrap() > 0);
    assert!(p["resend_rate_test"]["p"].is_f64(), "{p}");
    let text = common::text(&["diff", a, b]);
    assert!(text.contains("  tail loss probe"), "{text}");
    assert!(text.contains("duplicate ACKs"), "{text}");
}

/// tshark's zero windows of a capture, by the end that advertised them: `(the clients', the
/// server's)` counts of `tcp.analysis.zero_window`, and the clients' seconds of zero window: from a
/// segment advertising one to that connection's next client segment with its window open (not a RST),
/// summed over the connections.
fn tshark_zero_windows(tshark: &oracle::Tshark, file: &str) -> (u64, u64, f64) {
    let lines = tshark.lines([
        "-r",
        file,
        "-T",
        "fields",
        "-E",
        "separator=,",
        "-e",
        "tcp.stream",
        "-e",
        "frame.time_epoch",
        "-e",
        "tcp.srcport",
        "-e",
        "tcp.window_size_value",
        "-e",
        "tcp.flags.reset",
        "-e",
        "tcp.analysis.zero_window",
    ]);
    let (mut client, mut server, mut seconds) = (0, 0, 0.0);
    let mut open: std::collections::HashMap<String, f64> = Default::default();
    for l in &lines {
        let v: Vec<&str> = l.split(',').collect();
        let (stream, t, from_server, window, reset, zero) = (
            v[0],
            v[1].parse::<f64>().unwrap(),
            v[2] == "3306",
            v[3],
            v[4] == "1",
            !v[5].is_empty(),
        );
        match (zero, from_server) {
            (true, true) => server += 1,
            (true, false) => client += 1,
            _ => {}
        }
        if from_server {
            continue;
        }
        if zero {
            open.entry(stream.to_string()).or_insert(t);
        } else if window != "0" && !reset {
            if let Some(since) = open.remove(stream) {
                seconds += t - since;
            }
        }
    }
    (client, server, seconds)
}

/// One workload read promptly (a) and slowly (b) at the client, nothing else changed: b's client lets
/// its receive window go to zero while the server sends its 150-row range selects (21 times for 1.4015
/// s in all, tshark; fixtures/README). The range selects take 95 ms instead of 0.3 ms, and the verdict
/// must say the client held that time (with tshark's count and seconds), not that the server's work
/// on the statement changed, and not read the client's late ACKs as the path.
#[test]
fn a_client_that_stopped_reading_is_named_not_the_server() {
    let d = diff_json("slow-reader");
    let v = verdict(&d);
    assert!(
        v.starts_with("B is 2.67× slower at p50 (106 µs -> 285 µs; mean 275 µs -> 18.8 ms); 99.9% of the added time is in `select * from sbtest2 where id between ? and ?` (p50 289 µs -> 95.4 ms"),
        "{v}"
    );
    assert!(
        v.contains(
            "B's clients stopped reading: they advertised a zero window 21 times for 1.4 s in total (A: \
             none; 0 -> 0.175 per request, p 1.3e-5), as much as 63% of the 2.23 s B's requests took \
             beyond A's speed: the server waited on the clients, not the other way round; that time is \
             the clients'"
        ),
        "{v}"
    );
    assert!(v.contains("not the server's or the path's"), "{v}");
    assert!(
        v.contains(
            "their ACKs came later with it (the round trip to the clients p50 34.8 µs -> 10.5 ms)"
        ),
        "{v}"
    );
    assert!(!v.contains("The server's work on"), "{v}");
    assert!(!v.contains("the round trip to the client went"), "{v}");
    // The rate is said once, with the statements that moved it.
    assert_eq!(v.matches("fewer requests per second").count(), 1, "{v}");
    let p = &d["path"];
    let t = &p["client_zero_window_test"];
    assert!(t["significant"].as_bool().unwrap(), "{t}");
    assert_eq!(t["ratio"], Value::Null, "infinite: A has none");
    assert_eq!(p["server_zero_window_test"], Value::Null);
    assert_eq!(
        (
            p["client_zero_windows"]["a"].as_u64(),
            p["client_zero_windows"]["b"].as_u64()
        ),
        (Some(0), Some(21))
    );
    assert!(
        (f(&p["client_zero_window_s"]["b"]) - 1.4015).abs() < 1e-4,
        "{p}"
    );
    let (a, b) = pair("slow-reader");
    if let Some(tshark) = oracle::tshark() {
        for (side, file) in [("a", &a), ("b", &b)] {
            let (client, server, seconds) = tshark_zero_windows(&tshark, file);
            assert_eq!(
                p["client_zero_windows"][side].as_u64(),
                Some(client),
                "{file}"
            );
            assert_eq!(
                p["server_zero_windows"][side].as_u64(),
                Some(server),
                "{file}"
            );
            assert_eq!(
                p["zero_windows"][side].as_u64(),
                Some(client + server),
                "{file}"
            );
            let ours = f(&p["client_zero_window_s"][side]);
            assert!(
                (ours - seconds).abs() < 1e-5,
                "{file}: {ours} s, tshark {seconds} s"
            );
        }
    }
    let text = common::text(&["diff", &a, &b]);
    assert!(
        text.contains(
            "  by the clients                         0              21  beyond noise per request (p 1.3e-5)"
        ),
        "{text}"
    );
    // The same runs the other way round: B is faster, and A's clients held the time.
    let d = common::json(&["diff", "--json", &b, &a]);
    let v = verdict(&d);
    assert!(v.starts_with("B is 2.67× faster at p50"), "{v}");
    assert!(
        v.contains("A's clients stopped reading: they advertised a zero window 21 times for 1.4 s in total (B: none;"),
        "{v}"
    );
    assert!(!v.contains("The server's work on"), "{v}");
    // The page of run b against its baseline a says it too.
    let page = baseline_page(&a, &b, "slow-reader.html");
    assert!(
        page.contains(
            "B&#39;s clients stopped reading: they advertised a zero window 21 times for 1.4 s"
        ),
        "no slow reader in the page"
    );
    assert!(!page.contains("The server&#39;s work on"));
}

/// Runs with no zero window say nothing of them: no verdict line, no test, no rows by end.
#[test]
fn runs_without_zero_windows_say_nothing_of_them() {
    for name in [
        "path-delay",
        "path-delay-server",
        "missing-table",
        "small-buffer-pool",
        "clients-slower",
    ] {
        let d = diff_json(name);
        let v = verdict(&d);
        assert!(!v.contains("zero window"), "{name}: {v}");
        assert!(!v.contains("stopped reading"), "{name}: {v}");
        let p = &d["path"];
        for key in ["client_zero_window_test", "server_zero_window_test"] {
            assert_eq!(p[key], Value::Null, "{name}: {key}");
        }
        let (a, b) = pair(name);
        let text = common::text(&["diff", &a, &b]);
        assert!(!text.contains("  by the clients"), "{name}: {text}");
    }
}

/// `diff` of two captures that are not one workload before and after a change.
fn diff_files(a: &str, b: &str) -> Value {
    let path = |name: &str| common::fixture(name).to_str().unwrap().to_string();
    common::json(&["diff", "--json", &path(a), &path(b)])
}

/// Two sysbench runs at the same server (oltp_read_write's 4 clients; point selects by 4 clients
/// without a cap), most of B's statements among A's: B's clients wait longer before their next request.
/// The round trip timed from ACKs grows with them, because the clients' ACKs ride on their next
/// requests; the TCP handshakes, a bare round trip to the clients, got no slower. So the verdict may not
/// call the path slower (it did): it says what a server capture cannot tell apart (the clients' own
/// time, or a queue on the path), and why no longer route.
#[test]
fn think_time_riding_on_acks_is_not_called_a_slower_path() {
    let d = diff_files("load-oltp-rw.pcap", "no-cap.pcap");
    let v = verdict(&d);
    assert!(
        v.starts_with(
            "The clients (or the path to them) got slower to send their next request: seen at the server"
        ),
        "{v}"
    );
    assert!(
        !v.contains("The path between the server and its clients got slower"),
        "{v}"
    );
    assert!(v.contains("no longer route"), "{v}");
    // The evidence the verdict weighs, as the JSON gives it: the fastest think times grew by far more
    // than the handshakes' SYN-ACK to ACK moved (it shrank), while the ACK-timed round trip grew.
    let floor = f(&d["load"]["think_p10_us"]["b"]) - f(&d["load"]["think_p10_us"]["a"]);
    let ack = &d["path"]["synack_to_ack_us"];
    assert!(
        f(&ack["a"]["count"]) > 0.0 && f(&ack["b"]["count"]) > 0.0,
        "{ack}"
    );
    assert!(
        f(&ack["b"]["p50"]) - f(&ack["a"]["p50"]) < 0.5 * floor,
        "{ack} {floor}"
    );
    let rtt = &d["path"]["rtt_to_client_us"];
    assert!(f(&rtt["b"]["p50"]) > 2.0 * f(&rtt["a"]["p50"]), "{rtt}");
}

/// The statements both runs ran got slower, but B ran another mix and its requests took less time on
/// average (an HAProxy-fronted run's server-side capture against another proxy run's client side): the
/// headline says both, not "B is faster" over figures that went up.
#[test]
fn another_mix_of_statements_is_not_named_by_the_wrong_direction() {
    let d = diff_files("proxy-timeout.server.pcap", "two-point-proxy.client.pcap");
    let v = verdict(&d);
    assert!(
        f(&d["rt_us"]["b"]["mean"]) > f(&d["rt_us"]["a"]["mean"]),
        "{}",
        d["rt_us"]
    );
    assert!(!v.starts_with("B is faster"), "{v}");
    assert!(
        v.starts_with("The statements both runs ran are faster in B, though its requests took"),
        "{v}"
    );
    assert!(v.contains("another mix of statements"), "{v}");
}

/// Two tiny runs (7 requests each, a login and a few statements, on a cooked and a VLAN capture): no
/// test can find anything in so few, so the verdict says so instead of calling them alike.
#[test]
fn runs_too_small_to_judge_are_not_called_alike() {
    let d = diff_files("any-cooked-v2.pcap", "vlan.pcap");
    let v = verdict(&d);
    assert!(f(&d["rt_us"]["a"]["count"]) < 20.0, "{}", d["rt_us"]);
    assert!(!v.contains("alike"), "{v}");
    assert!(
        v.starts_with("Statement groups in both runs: 6 (1 only in A, 1 only in B), with 7 answered in A and 7 in B, too few to tell a change from the runs' noise"),
        "{v}"
    );
}

/// A run whose requests were all cut off (a proxy's cut, mid-resultset) has no response time to
/// compare: the verdict says so, and shows no median of 0 µs for it.
#[test]
fn a_run_without_answers_has_no_response_time_of_zero() {
    let d = diff_files("client-read-timeout.pcap", "proxy-cut.pcap");
    let v = verdict(&d);
    assert_eq!(d["rt_us"]["b"]["count"], 0, "{}", d["rt_us"]);
    assert!(
        v.contains("Response times not compared: B has no answered request."),
        "{v}"
    );
    assert!(!v.contains("-> 0 µs"), "{v}");
}

/// An error storm of point selects against a replication source's prepared read-write transactions:
/// no statement in common, so no story of load, path or server may explain their difference (it said
/// "the server answered faster because it was less busy"): the verdict says the runs did different
/// work, then what was new and gone.
#[test]
fn runs_of_different_work_are_compared_as_mixes() {
    let d = diff_files("err1146-storm.pcap", "repl-async.pcap");
    let v = verdict(&d);
    assert_eq!(d["matched"]["statements_in_both"], 0, "{}", d["matched"]);
    assert!(
        v.starts_with("A and B ran different work: no statement in both (16 groups only in A, 19 groups only in B)"),
        "{v}"
    );
    assert!(
        v.contains("compare two mixes, not one workload before and after a change"),
        "{v}"
    );
    assert!(!v.contains("less busy"), "{v}");
    assert!(v.contains("Gone in B: ERR 1146"), "{v}");
}

/// One run held at a packet-rate cap (1,000 pkt/s from the server, load waiting behind it), the other
/// not: A's response times include the wait at the cap, so the verdict leads with the cap and tells no
/// story of the server or the clients (it said "the server as a whole answered faster", before that
/// "because it was less busy").
#[test]
fn a_run_held_at_a_cap_is_named_before_any_server_or_client_story() {
    let d = diff_files("pps-cap.pcap", "two-point-path.server.pcap");
    let v = verdict(&d);
    assert!(
        !d["ceilings"]["a"].as_array().unwrap().is_empty(),
        "{}",
        d["ceilings"]
    );
    assert!(
        d["ceilings"]["b"].as_array().unwrap().is_empty(),
        "{}",
        d["ceilings"]
    );
    assert!(v.starts_with("A's traffic was held flat at a cap (10.77.0.1:3306, server to client, pinned at 1000 pkt/s"), "{v}");
    assert!(
        v.contains("A's response times (p50 3.98 ms, mean 3.96 ms) include the wait at the cap"),
        "{v}"
    );
    assert!(!v.contains("answered faster"), "{v}");
    assert!(!v.contains("less busy"), "{v}");
}

/// Less load from fewer clients, not from longer pauses: B's 2 connections against A's 8, its clients'
/// mean think time shorter. The verdict says fewer of them, not "waiting longer" over a think time that
/// fell.
#[test]
fn less_load_from_fewer_clients_is_not_called_longer_waits() {
    let d = diff_files("lock-wait-timeout.pcap", "tail-drops.pcap");
    let v = verdict(&d);
    let think = &d["load"]["think_time_us"];
    assert!(f(&think["b"]["mean"]) < f(&think["a"]["mean"]), "{think}");
    assert!(v.starts_with("The clients offered less load"), "{v}");
    assert!(
        v.contains(
            "over 2 connections (A: 8), fewer of them at once (mean think time 8.1 ms -> 6.24 ms)"
        ),
        "{v}"
    );
    assert!(!v.contains("waiting longer"), "{v}");
}

/// A median that fell while the mean grew several-fold: most of B's requests were faster, a few (the
/// retransmission timeouts of `tail-drops`) far slower. The verdict says the times moved two ways and
/// tells no story of one direction: it said "The server answered faster (p50 67.1 µs -> 54 µs, mean
/// 209 µs -> 899 µs) because it was less busy", over 0.15 -> 0.236 requests in flight.
#[test]
fn times_that_moved_two_ways_are_not_given_one_direction() {
    for (a, b, faster) in [
        ("load-oltp-rw.pcap", "tail-drops.pcap", true),
        ("tail-drops.pcap", "load-oltp-rw.pcap", false),
    ] {
        let d = diff_files(a, b);
        let v = verdict(&d);
        let rt = &d["rt_us"];
        let (p50, mean) = (
            f(&rt["b"]["p50"]) / f(&rt["a"]["p50"]),
            f(&rt["b"]["mean"]) / f(&rt["a"]["mean"]),
        );
        if faster {
            assert!(p50 < 1.0 && mean > 4.0, "{rt}");
            assert!(
                v.starts_with("Response times moved two ways: most of B's requests were answered faster (p50 67.1 µs -> 54 µs, p95 518 µs -> 342 µs), while a few took far longer (max 7.99 ms -> 636 ms), so that the mean grew 4.3× (209 µs -> 899 µs)"),
                "{v}"
            );
        } else {
            assert!(p50 > 1.0 && mean < 0.25, "{rt}");
            assert!(
                v.starts_with("Response times moved two ways: most of B's requests were answered slower (p50 54 µs -> 67.1 µs"),
                "{v}"
            );
            assert!(
                v.contains("so that B's mean is 77% lower (899 µs -> 209 µs)"),
                "{v}"
            );
        }
        for story in [
            "less busy",
            "more load",
            "The server answered",
            "The path",
            "got slower",
        ] {
            assert!(!v.contains(story), "{a} -> {b}: {story}: {v}");
        }
        // What the tail has in common is still said: the retransmissions on B's (or A's) path.
        assert!(v.contains("retransmissions went from"), "{v}");
    }
}

/// A load story is told only with the requests in flight moving with the rate: "the clients offered
/// more load, and the server's response times grew with it" over fewer requests in flight (or "less
/// busy" over more) contradicts its own figures. These three pairs were told so: `tail-drops`' requests
/// held in flight by its retransmission timeouts make its mean in flight higher than a busier run's.
#[test]
fn a_load_story_has_the_requests_in_flight_moving_with_it() {
    for (a, b) in [
        ("tail-drops.pcap", "diff-missing-table.b.pcap"),
        ("tail-drops.pcap", "diff-path-delay.a.pcap"),
        (
            "two-point-slow-server.client.pcap",
            "point-select-slope.pcap",
        ),
    ] {
        let d = diff_files(a, b);
        let v = verdict(&d);
        let (rate, inflight) = (&d["load"]["rate_test"], &d["load"]["in_flight"]);
        assert!(rate["significant"].as_bool().unwrap(), "{rate}");
        // More requests a second, fewer of them in flight on average.
        assert!(f(&rate["ratio"]) > 1.0, "{rate}");
        assert!(f(&inflight["b"]) < f(&inflight["a"]), "{inflight}");
        assert!(!v.contains("offered more load"), "{a} -> {b}: {v}");
        assert!(!v.contains("less busy"), "{a} -> {b}: {v}");
    }
    // The designed pair where the clients did slow down keeps its story, in flight falling with the rate.
    let d = diff_json("clients-slower");
    let v = verdict(&d);
    let inflight = &d["load"]["in_flight"];
    assert!(v.starts_with("The clients offered less load"), "{v}");
    assert!(f(&inflight["b"]) < f(&inflight["a"]), "{inflight}");
}

/// Each request's response time as tcprstat times it, from tshark's fields (an oracle independent of
/// the MySQL decoder and the histograms): on each connection to port 3306, a request is the client's
/// data from its first packet after the server last answered, its response the server's data until
/// the client's next request; the time is the request's first packet to the response's last. The
/// first exchange of each connection (the login) is left out, as `diff` leaves logins out.
fn tcprstat_times_us(tshark: &oracle::Tshark, file: &str) -> Vec<f64> {
    let lines = tshark.lines([
        "-r",
        file,
        "-Y",
        "tcp.len > 0",
        "-T",
        "fields",
        "-e",
        "tcp.stream",
        "-e",
        "tcp.srcport",
        "-e",
        "frame.time_epoch",
    ]);
    // Per connection: (logged in, request start, last response packet).
    let mut open: std::collections::HashMap<String, (bool, Option<f64>, Option<f64>)> =
        Default::default();
    let mut times = Vec::new();
    for l in &lines {
        let fields: Vec<&str> = l.split('\t').collect();
        let (stream, from_server, ts) = (
            fields[0].to_string(),
            fields[1] == "3306",
            fields[2].parse::<f64>().unwrap(),
        );
        let (logged_in, start, last) = open.entry(stream).or_insert((false, None, None));
        if from_server {
            if start.is_some() {
                *last = Some(ts);
            }
            continue;
        }
        if let (Some(s), Some(e)) = (*start, *last) {
            if *logged_in {
                times.push((e - s) * 1e6);
            }
            *logged_in = true;
            *start = None;
            *last = None;
        }
        if start.is_none() {
            *start = Some(ts);
        }
    }
    for (logged_in, start, last) in open.into_values() {
        if let (true, Some(s), Some(e)) = (logged_in, start, last) {
            times.push((e - s) * 1e6);
        }
    }
    times
}

/// Two sysbench point-select runs at one server (4 clients without a cap; 16 clients): the median
/// response time held (77 -> 86 µs, the rank test finds no shift) while B's slowest requests took
/// milliseconds. The verdict says the tail moved instead of "unchanged", with the share of each run
/// above the p99 of both together; tshark's timing of every request (tcprstat's way) finds the same
/// shares, and the diff the other way round says the tail got faster.
#[test]
fn a_tail_that_moved_under_a_median_that_held_is_said() {
    let d = diff_files("no-cap.pcap", "point-select-slope.pcap");
    let v = verdict(&d);
    let t = &d["rt_tail"];
    assert_eq!(t["significant"], true, "{t}");
    assert!(f(&t["ratio"]) > 10.0, "{t}");
    assert_eq!(
        d["rt_us"]["test"]["significant"], false,
        "{}",
        d["rt_us"]["test"]
    );
    assert!(
        v.contains(
            "Response times unchanged at the median within the runs' noise (p50 77.3 µs -> 86 µs), \
             but the slowest requests got slower:"
        ),
        "{v}"
    );
    assert!(
        !v.contains("Response times unchanged within the runs' noise"),
        "{v}"
    );
    let text = common::flat(&common::text(&[
        "diff",
        common::fixture("no-cap.pcap").to_str().unwrap(),
        common::fixture("point-select-slope.pcap").to_str().unwrap(),
    ]));
    assert!(text.contains("(both p99)"), "{text}");
    if let Some(tshark) = oracle::tshark() {
        let threshold = f(&t["threshold_us"]);
        for (name, above, n) in [
            ("no-cap.pcap", &t["a_above"], &t["n_a"]),
            ("point-select-slope.pcap", &t["b_above"], &t["n_b"]),
        ] {
            let times = tcprstat_times_us(&tshark, common::fixture(name).to_str().unwrap());
            let (n, above) = (f(n), f(above));
            assert!(
                (times.len() as f64 - n).abs() <= 0.01 * n,
                "{name}: tshark {} requests, diff {n}",
                times.len()
            );
            // The histogram's bins are under 0.8% wide: a time within one of the threshold may
            // fall either way.
            let over = |x: f64| times.iter().filter(|&&t| t > x).count() as f64;
            let (least, most) = (over(threshold * 1.01), over(threshold * 0.99));
            assert!(
                above >= least - 1.0 && above <= most + 1.0,
                "{name}: diff {above} above {threshold} µs, tshark {least}-{most}"
            );
        }
    }
    let back = diff_files("point-select-slope.pcap", "no-cap.pcap");
    let tb = &back["rt_tail"];
    assert_eq!(tb["significant"], true, "{tb}");
    assert_eq!(tb["a_above"], t["b_above"], "{tb} {t}");
    assert!(
        verdict(&back).contains("but the slowest requests got faster:"),
        "{}",
        verdict(&back)
    );
}

/// A rate that grew many times over is said as a factor ("13.3× as many"), as the table says it, not
/// as "1234% more"; the factor is the rate test's ratio.
#[test]
fn a_rate_many_times_over_is_said_as_a_factor() {
    let d = diff_files("proxy-6033.pcap", "no-cap.pcap");
    let v = verdict(&d);
    let t = &d["load"]["rate_test"];
    assert_eq!(t["significant"], true, "{t}");
    let ratio = f(&t["ratio"]);
    assert!(ratio > 10.0, "{t}");
    let said = format!(
        "B sent {:.1}× as many requests per second (226 -> 3,010/s)",
        ratio
    );
    assert!(v.contains(&said), "{said}: {v}");
    assert!(!v.contains("% more requests per second"), "{v}");
}

/// The queries sysbench says it sent in one run of a lab pair (`fixtures/lab/diff-NAME.RUN.sysbench.txt`).
fn sysbench_queries(name: &str, run: &str) -> f64 {
    let log = std::fs::read_to_string(common::fixture(&format!(
        "lab/diff-{name}.{run}.sysbench.txt"
    )))
    .unwrap();
    let line = log
        .lines()
        .find(|l| l.trim_start().starts_with("queries:"))
        .unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// The lab's path-delay pair again with every connection in TLS and no key log (TLS 1.3): no request
/// can be read, so the exchanges timed from the TLS records are compared, said as estimates. At the
/// client they are 11× slower at p50, and the round trip to the server grew by as much: the path, not
/// the server. One exchange per query sysbench sent (logins aside), and tshark's timing of every
/// exchange (tcprstat's way, over the TLS records) has the same medians.
#[test]
fn encrypted_runs_are_compared_on_their_tls_records() {
    let d = diff_json("tls-path-delay");
    let v = verdict(&d);
    assert_eq!(
        (f(&d["rt_us"]["a"]["count"]), f(&d["rt_us"]["b"]["count"])),
        (0.0, 0.0)
    );
    let e = &d["tls_estimated_us"];
    assert_eq!(
        f(&e["a"]["count"]),
        sysbench_queries("tls-path-delay", "a"),
        "{e}"
    );
    assert_eq!(
        f(&e["b"]["count"]),
        sysbench_queries("tls-path-delay", "b"),
        "{e}"
    );
    assert_eq!(e["test"]["significant"], true, "{e}");
    let factor = f(&e["b"]["p50"]) / f(&e["a"]["p50"]);
    assert!(factor > 5.0, "{e}");
    assert!(
        v.starts_with(
            "Neither run's MySQL requests can be read: their sessions are encrypted (TLS)"
        ),
        "{v}"
    );
    assert!(
        v.contains(&format!("B's exchanges are {:.0}× slower at p50", factor)),
        "{v}"
    );
    assert!(
        v.contains("the round trip to the server (client data to the ACK that first covers it) grew by about as much"),
        "{v}"
    );
    assert!(
        v.contains("the time added to the exchanges is on the path, not in the server's work"),
        "{v}"
    );
    let text = common::flat(&common::text(&[
        "diff",
        common::fixture("diff-tls-path-delay.a.pcap")
            .to_str()
            .unwrap(),
        common::fixture("diff-tls-path-delay.b.pcap")
            .to_str()
            .unwrap(),
    ]));
    assert!(text.contains("TLS exchange (est.) p50"), "{text}");
    if let Some(tshark) = oracle::tshark() {
        for run in ["a", "b"] {
            let file = common::fixture(&format!("diff-tls-path-delay.{run}.pcap"));
            let mut times = tcprstat_times_us(&tshark, file.to_str().unwrap());
            times.sort_by(f64::total_cmp);
            let median = times[times.len() / 2];
            let ours = f(&e[run]["p50"]);
            assert!(
                (ours - median).abs() <= 0.1 * median,
                "{run}: tshark p50 {median} µs over {} exchanges, diff {ours}",
                times.len()
            );
        }
    }
}

/// The same runs captured at the server: the server answered as fast (its exchanges, seen there,
/// hold no path), while the round trip to the clients grew by the delay line's 2 ms: the path.
#[test]
fn encrypted_runs_at_the_server_name_the_path_not_the_server() {
    let d = diff_json("tls-path-delay-server");
    let v = verdict(&d);
    let e = &d["tls_estimated_us"];
    assert!(f(&e["b"]["p50"]) < 1.5 * f(&e["a"]["p50"]), "{e}");
    assert!(
        v.contains("B's exchanges took as long as A's within the runs' noise"),
        "{v}"
    );
    assert!(
        v.contains("each answer reached the clients later, on the path"),
        "{v}"
    );
    let rtt = &d["path"]["rtt_to_client_us"];
    assert!(f(&rtt["b"]["p50"]) - f(&rtt["a"]["p50"]) > 1500.0, "{rtt}");
    // Runs in the clear have no estimate to compare.
    assert_eq!(diff_json("missing-table")["tls_estimated_us"], Value::Null);
}
