//! Per server everywhere (three servers on one port are three rows, not one), and statement groups
//! keyed by command as well as fingerprint (a prepare and its executions apart).

use crate::common;

use std::collections::BTreeSet;

use serde_json::Value;

/// Three lab captures of three servers, all on port 3306 (fixtures/README.md): 10.78.0.1 behind a VLAN,
/// fd77::1 over IPv6, 10.77.0.1 seen by `tcpdump -i any`.
fn three_servers() -> Vec<String> {
    ["vlan.pcap", "ipv6.pcap", "any-cooked-v2.pcap"]
        .map(|f| common::fixture(f).to_str().unwrap().to_string())
        .to_vec()
}

fn args<'a>(lead: &[&'a str], files: &'a [String]) -> Vec<&'a str> {
    lead.iter()
        .copied()
        .chain(files.iter().map(String::as_str))
        .collect()
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap()
}

#[test]
fn three_servers_on_one_port_are_three_rows() {
    let files = three_servers();
    let want: BTreeSet<&str> = ["10.77.0.1:3306", "10.78.0.1:3306", "[fd77::1]:3306"].into();

    let rt = common::json(&args(&["rt", "--json"], &files));
    let by_server = rt["by_server"].as_object().unwrap();
    assert_eq!(
        by_server
            .keys()
            .map(String::as_str)
            .collect::<BTreeSet<_>>(),
        want
    );
    // The port alone, as before, still holds them all (it is not unique).
    let by_port = rt["by_port"].as_object().unwrap();
    assert_eq!(by_port.keys().collect::<Vec<_>>(), ["3306"]);
    let total: u64 = by_server.values().map(|s| u(&s["count"])).sum();
    assert_eq!(u(&by_port["3306"]["count"]), total);
    assert_eq!(u(&rt["percentiles_us"]["count"]), total);
    // Per interval: rows per server, each naming its server.
    let rows = rt["per_interval"].as_array().unwrap();
    let servers: BTreeSet<&str> = rows.iter().map(|r| r["server"].as_str().unwrap()).collect();
    assert_eq!(servers, want);

    let text = common::text(&args(&["rt", "--per-interval"], &files));
    assert!(text.contains("per interval (1 s) and server:"), "{text}");
    for s in &want {
        assert!(text.contains(s), "{s} not in\n{text}");
    }

    let m = common::json(&args(&["mysql", "--json"], &files));
    let rows = m["servers"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    assert_eq!(
        rows.iter().map(|r| u(&r["requests"])).sum::<u64>(),
        u(&m["queries"])
    );
    assert_eq!(
        rows.iter().map(|r| u(&r["sessions"])).sum::<u64>(),
        u(&m["sessions"])
    );
    // Ranked: the busiest first.
    let requests: Vec<u64> = rows.iter().map(|r| u(&r["requests"])).collect();
    assert!(requests.windows(2).all(|w| w[0] >= w[1]), "{requests:?}");
    let text = common::text(&args(&["mysql"], &files));
    assert!(text.contains("servers, by requests:"), "{text}");
    let report = common::text(&args(&["report"], &files));
    assert!(report.contains("servers, by requests:"), "{report}");
}

/// One server: the table says nothing `mysql` does not already say, and is left out of the text (the
/// JSON has its one row).
#[test]
fn one_server_has_no_table() {
    let f = common::fixture("err1146-storm.pcap");
    let f = f.to_str().unwrap();
    assert!(!common::text(&["mysql", f]).contains("servers, by requests:"));
    let m = common::json(&["mysql", "--json", f]);
    let rows = m["servers"].as_array().unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["server"], "10.77.0.1:3306");
    // Its errors are the capture's (no logins refused in it).
    assert_eq!(u(&rows[0]["errors"]), u(&m["errors"]["1146"]));
}

/// prepared-full.pcap (fixtures/README.md): 84 COM_STMT_PREPARE and 640 COM_STMT_EXECUTE; the point
/// select of sbtest3 was prepared twice (once per connection, 17.8 ms each) and executed 50 times
/// (49.7 µs on average): two groups, not one row mixing them.
#[test]
fn prepares_and_executes_are_statement_groups_apart() {
    let f = common::fixture("prepared-full.pcap");
    let m = common::json(&["mysql", "--json", f.to_str().unwrap()]);
    let statements = m["statements"].as_array().unwrap();
    let of = |command: &str| -> Vec<&Value> {
        statements
            .iter()
            .filter(|s| s["command"] == command)
            .collect()
    };
    let total = |command: &str| of(command).iter().map(|s| u(&s["count"])).sum::<u64>();
    assert_eq!(total("COM_STMT_PREPARE"), 84);
    assert_eq!(total("COM_STMT_EXECUTE"), 640);
    assert_eq!(total("COM_QUERY"), 0);
    let point = |command: &str| {
        *of(command)
            .iter()
            .find(|s| s["fingerprint"] == "select c from sbtest3 where id=?")
            .unwrap()
    };
    let (prepare, execute) = (point("COM_STMT_PREPARE"), point("COM_STMT_EXECUTE"));
    assert_eq!((u(&prepare["count"]), u(&execute["count"])), (2, 50));
    let mean = |s: &Value| s["rt_us"]["mean"].as_f64().unwrap();
    assert!((17_000.0..18_500.0).contains(&mean(prepare)), "{prepare}");
    assert!((45.0..55.0).contains(&mean(execute)), "{execute}");
    // The text tells them apart by their command.
    let text = common::text(&["mysql", "--limit", "200", f.to_str().unwrap()]);
    assert!(
        text.contains("[prepare] select c from sbtest3 where id=?"),
        "{text}"
    );
    assert!(
        text.contains("[execute] select c from sbtest3 where id=?"),
        "{text}"
    );
}

/// The OK and EOF packets that end a response carry the server's status flags: vlan.pcap's
/// `select count(*) from sbtest2` and `show tables` were answered with `SERVER_QUERY_NO_INDEX_USED`
/// (tshark: the two frames with `mysql.stat.ni == 1`, each holding both EOFs of one resultset), and
/// no other statement was; none raised a warning.
#[test]
fn server_status_flags_are_counted_per_statement() {
    let f = common::fixture("vlan.pcap");
    let m = common::json(&["mysql", "--json", f.to_str().unwrap()]);
    let flagged: Vec<(&str, u64)> = m["statements"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| u(&s["no_index_used"]) > 0)
        .map(|s| (s["fingerprint"].as_str().unwrap(), u(&s["no_index_used"])))
        .collect();
    assert_eq!(
        flagged,
        [("select count(*) from sbtest2", 1), ("show tables", 1)]
    );
    for s in m["statements"].as_array().unwrap() {
        assert_eq!(u(&s["warnings"]), 0, "{s}");
        assert_eq!(u(&s["no_good_index_used"]), 0, "{s}");
    }
    let text = common::text(&["mysql", f.to_str().unwrap()]);
    assert!(text.contains("server status: no index used by 1"), "{text}");
    if let Some(tshark) = pcapsleuth_testkit::oracle::tshark() {
        assert_eq!(tshark.count(&f, "mysql.stat.ni == 1"), 2);
        assert_eq!(tshark.count(&f, "mysql.stat.bi == 1"), 0);
    }
}
