//! A slow hump of response times explained by what its requests share, and named as a timeout when an
//! error a timer sends made it: `rt` and `report` on the lab's lock-wait-timeout.pcap (20 UPDATEs answered
//! by ERR 1205 after 1.0003-1.0087 s at innodb_lock_wait_timeout=1, beside 3,128 point selects;
//! fixtures/README.md), and the captures whose humps are not timeouts, which stay quiet.

use crate::common;

use pcapsleuth::analysis::{analyze, full_report, EngineOptions, Everything, FindingKind};
use pcapsleuth::capture::Capture;
use pcapsleuth_testkit::oracle;
use serde_json::Value;

fn rt(name: &str) -> Value {
    common::json(&["rt", "--json", common::fixture(name).to_str().unwrap()])
}

/// The 20 ERR 1205 make the last hump, whole (its top bin included), and it is named a timeout of
/// innodb_lock_wait_timeout, at 1 s, with the frames of the first of them.
#[test]
fn the_lock_wait_hump_is_its_errors_and_a_timeout_of_innodb_lock_wait_timeout() {
    let f = common::fixture("lock-wait-timeout.pcap");
    let r = rt("lock-wait-timeout.pcap");
    let slow = r["slow_modes"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(slow["count"], 20, "{slow:#}");
    // Every request of the hump was an error (the share once read 0%: its top bin was left out).
    assert_eq!(slow["error_share"], 1.0);
    let e = &slow["errors"][0];
    assert_eq!(
        (&e["code"], &e["count"], &e["share"], &e["of_code"]),
        (
            &Value::from(1205),
            &Value::from(20),
            &Value::from(1.0),
            &Value::from(1.0)
        )
    );
    assert_eq!(
        e["message"],
        "Lock wait timeout exceeded; try restarting transaction"
    );
    assert_eq!(
        slow["statements"][0][0],
        "update sbtest1 set k=k+? where id=?"
    );
    assert_eq!(slow["statements"][0][1], 1.0);
    assert_eq!(slow["commands"][0][0], "COM_QUERY");
    assert_eq!(slow["servers"][0][0], "10.77.0.1:3306");
    // The four waiter sessions, five UPDATEs each, all of them known.
    let c = &slow["connections"];
    assert_eq!(
        (&c["complete"], &c["connections"], &c["clients"]),
        (&Value::from(true), &Value::from(4), &Value::from(1))
    );
    let ports: Vec<&str> = c["top"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["client"].as_str().unwrap())
        .collect();
    assert_eq!(
        ports,
        [
            "10.77.1.2:60098",
            "10.77.1.2:60100",
            "10.77.1.2:60106",
            "10.77.1.2:60116"
        ]
    );
    assert_eq!(
        (
            &slow["first"]["request_frame"],
            &slow["first"]["response_frame"]
        ),
        (&Value::from(727), &Value::from(1485))
    );

    let cause = &slow["cause"];
    assert_eq!(cause["kind"], "statement_timeout", "{cause:#}");
    assert_eq!(cause["setting"], "innodb_lock_wait_timeout");
    assert_eq!(cause["confidence"], "certain");
    assert_eq!(cause["sender"], "server");
    assert_eq!(cause["error"]["code"], 1205);
    assert_eq!(cause["error"]["sql_state"], "HY000");
    assert_eq!(cause["error"]["frame"], 1485);
    let wait = cause["wait_s"].as_f64().unwrap();
    assert!((1.0003..=1.0087).contains(&wait), "{wait}");
    assert!(
        cause["summary"]
            .as_str()
            .unwrap()
            .starts_with("a timeout: innodb_lock_wait_timeout (1 s here; default 50 s): all 20 of the hump's requests waited 1.001 s (median) for a row lock and got ERR 1205"),
        "{cause:#}"
    );

    let text = common::flat(&common::text(&["rt", f.to_str().unwrap()]));
    for said in [
        "the hump at ~1 s (20 requests): cause (certain): a timeout: innodb_lock_wait_timeout (1 s here; default 50 s)",
        "100% ERR 1205 (20, every answered ERR 1205 of the capture): Lock wait timeout exceeded; try restarting transaction",
        "4 connections from 1 client (10.77.1.2) to 10.77.0.1:3306: 10.77.1.2:60098 (5), 10.77.1.2:60100 (5), 10.77.1.2:60106 (5), 10.77.1.2:60116 (5)",
        "the first: request frame 727, response frame 1485",
    ] {
        assert!(text.contains(said), "no {said:?} in {text}");
    }

    // What tshark sees: 20 ERR 1205, the first in frame 1485.
    let Some(tshark) = oracle::tshark() else {
        return;
    };
    let errs = tshark.lines([
        "-r",
        f.to_str().unwrap(),
        "-Y",
        "mysql.error_code==1205",
        "-T",
        "fields",
        "-e",
        "frame.number",
    ]);
    assert_eq!(errs.len(), 20);
    assert_eq!(errs[0], "1485");
}

/// `report` puts the hump and the errors that make it into one finding (text, JSON and HTML), and says no
/// more of those errors apart.
#[test]
fn report_gives_the_hump_and_its_errors_as_one_finding() {
    let f = common::fixture("lock-wait-timeout.pcap");
    let v = common::json(&["report", "--json", f.to_str().unwrap()]);
    let findings = v["findings"].as_array().unwrap();
    let kinds: Vec<&str> = findings
        .iter()
        .map(|x| x["kind"].as_str().unwrap())
        .collect();
    // The session that held the row lock 6.5 s before its COMMIT (the waits' cause) is its own finding.
    assert_eq!(
        kinds,
        ["slow_hump", "rt_multimodal", "idle_in_transaction"],
        "{findings:#?}"
    );
    let hump = &findings[0];
    assert_eq!(hump["cause"]["setting"], "innodb_lock_wait_timeout");
    assert!(
        hump["summary"].as_str().unwrap().starts_with(
            "20 requests took ~1 s (a hump of mysql response times, 0.6% of 3,151), all answered by ERR 1205 `Lock wait timeout exceeded; try restarting transaction`: a timeout (innodb_lock_wait_timeout = 1 s)"
        ),
        "{hump:#}"
    );
    assert_eq!(hump["frames"][0], 727);
    assert_eq!(hump["frames"][1], 1485);
    // Its hand-off: the four connections, cut out by the finding's kind.
    assert!(hump["wireshark_filter"]
        .as_str()
        .unwrap()
        .contains("tcp.srcport==60116"));
    assert!(hump["extract_command"]
        .as_str()
        .unwrap()
        .contains("--findings=slow_hump"));
    assert!(findings[1]["evidence"]
        .as_array()
        .unwrap()
        .contains(&Value::from(
            "hump at ~1 s: see its own finding (slow_hump)"
        )));

    let text = common::text(&["report", f.to_str().unwrap()]);
    assert!(
        text.starts_with("1. [slow_hump] 20 requests took ~1 s"),
        "{text}"
    );
    assert!(
        common::flat(&text).contains(
            "cause (certain): a timeout: innodb_lock_wait_timeout (1 s here; default 50 s)"
        ),
        "{text}"
    );
    assert!(!text.contains("[errors]"), "{text}");

    let page = common::scratch("hump_causes", "lock-wait-timeout.html");
    let _ = common::text(&[
        "report",
        "--html",
        page.to_str().unwrap(),
        f.to_str().unwrap(),
    ]);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("<span class=\"kind\">slow_hump</span>20 requests took ~1 s"));
    assert!(html.contains(
        "<p class=\"cause\"><strong>Cause (certain):</strong> a timeout: innodb_lock_wait_timeout (1 s here; default 50 s)"
    ));
    // With the facts it rests on.
    assert!(html.contains("<li>ERR 1205 answered 20 of the hump&#39;s 20 requests"));
}

/// The humps that are not timeouts stay unnamed: the SELECT SLEEP(0.02) hump of rt-bimodal.pcap (narrow,
/// but no error and not a whole second), the thread pool's staircase of 0.3 s service times
/// (thread-pool.pcap), and the one hump of point-select-slope.pcap.
#[test]
fn humps_that_are_no_timeout_are_given_no_cause() {
    for (name, humps) in [
        ("rt-bimodal.pcap", 2),
        ("thread-pool.pcap", 2),
        ("point-select-slope.pcap", 1),
    ] {
        let r = rt(name);
        assert_eq!(r["modes"].as_array().unwrap().len(), humps, "{name}");
        for s in r["slow_modes"].as_array().unwrap() {
            assert!(s["cause"].is_null(), "{name}: {s:#}");
            assert!(s["errors"].as_array().unwrap().is_empty(), "{name}: {s:#}");
        }
        let text = common::text(&["rt", common::fixture(name).to_str().unwrap()]);
        assert!(!text.contains("cause ("), "{name}: {text}");
        let v = common::json(&["report", "--json", common::fixture(name).to_str().unwrap()]);
        assert!(
            v["findings"]
                .as_array()
                .unwrap()
                .iter()
                .all(|f| f["kind"] != "slow_hump"),
            "{name}"
        );
    }
    // The sleeps' hump is still explained by its statement; the staircase's second step by its own.
    let sleeps = rt("rt-bimodal.pcap");
    assert_eq!(
        sleeps["slow_modes"][0]["statements"][0][0],
        "select sleep(?)"
    );
    let steps = rt("thread-pool.pcap");
    assert_eq!(
        steps["slow_modes"][0]["statements"][0],
        serde_json::json!(["select sleep(?)", 1.0])
    );
}

/// On every real capture, the only hump named a timeout is the lock waits'.
#[test]
fn only_the_lock_wait_hump_is_called_a_timeout_among_the_real_captures() {
    let mut named = Vec::new();
    for path in common::real_captures() {
        let cap = Capture::open(&path).unwrap();
        let run = analyze(&cap, &EngineOptions::default(), Everything::default);
        let r = full_report(&run);
        for s in r.rt.slow_modes.iter().filter(|s| s.cause.is_some()) {
            named.push(format!(
                "{}: ~{:.0} us",
                path.file_name().unwrap().to_string_lossy(),
                s.center_us
            ));
        }
        let humps = r
            .findings
            .iter()
            .filter(|f| f.kind == FindingKind::SlowHump)
            .count();
        let lock_waits = path.ends_with("lock-wait-timeout.pcap");
        assert_eq!(humps, usize::from(lock_waits), "{path:?}");
    }
    assert_eq!(named, ["lock-wait-timeout.pcap: ~1001039 us"]);
}
