//! Why a connection closed, named on real captures of everyday MySQL failures: a proxy's timeout, a
//! server that went away, too many connections, a request larger than max_allowed_packet, a reset forged
//! on the path, the server's write timeout, the last file of a rotated set alone. Each test reads the
//! capture's facts from tshark where tshark sees them, and asserts the cause pcapsleuth names, in its JSON
//! (`cause`: kind, setting, confidence, sender, the wait) and in the words of its text; the same close
//! reads the same in `first-reset`, `mysql`'s incidents, `report` and `flows`.

use crate::common;

use std::path::Path;

use pcapsleuth_testkit::oracle::{self, Tshark};
use serde_json::Value;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `first-reset --json` of `file`, every close listed.
fn first_reset(file: &Path) -> Value {
    common::json(&["first-reset", "--json", "--limit", "100000", s(file)])
}

/// The close at `frame` among `first-reset --json`'s closes.
fn close_at(fr: &Value, frame: u64) -> &Value {
    fr["closes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["frame"] == frame)
        .unwrap_or_else(|| panic!("no close at frame {frame}"))
}

/// The first frame tshark selects with `filter` in `file`, and its time (epoch seconds).
fn first(tshark: &Tshark, file: &Path, filter: &str) -> (u64, f64) {
    let lines = tshark.lines([
        "-r",
        s(file),
        "-d",
        "tcp.port==3306,mysql",
        "-Y",
        filter,
        "-T",
        "fields",
        "-e",
        "frame.number",
        "-e",
        "frame.time_epoch",
    ]);
    let line = lines
        .first()
        .unwrap_or_else(|| panic!("tshark finds no {filter} in {file:?}"));
    let (frame, time) = line.split_once('\t').unwrap();
    (frame.parse().unwrap(), time.parse().unwrap())
}

/// A cause's wait, seconds.
fn wait_s(cause: &Value) -> f64 {
    cause["wait_s"].as_f64().unwrap()
}

#[test]
fn a_proxy_that_times_out_a_request_is_named_with_the_wait_at_the_client() {
    let Some(tshark) = oracle::tshark() else {
        return;
    };
    let f = common::fixture("proxy-timeout.client.pcap");
    let (query, sent) = first(&tshark, &f, "mysql.query contains \"sleep(5)\"");
    let (fin, closed) = first(&tshark, &f, "tcp.flags.fin==1 && tcp.srcport==3306");
    let fr = first_reset(&f);
    let c = &fr["first_abnormal"];
    assert_eq!(
        (c["frame"].as_u64(), &c["initiator"]),
        (Some(fin), &"server".into())
    );
    let cause = &c["cause"];
    assert_eq!(cause["kind"], "request_timeout");
    assert_eq!(cause["setting"], "proxy_timeout");
    assert_eq!(cause["confidence"], "likely");
    assert_eq!(cause["sender"], "server");
    assert!((wait_s(cause) - (closed - sent)).abs() < 1e-5, "{cause}");
    assert!(cause["evidence"][0]["frames"]
        .as_array()
        .unwrap()
        .contains(&query.into()));
    let text = common::flat(&common::text(&["first-reset", s(&f)]));
    assert!(
        text.contains("cause (likely): a timeout: the server side closed after `select sleep(5)` had waited 3.002 s")
            && text.contains("a close at a round wait is a timer's")
            && text.contains("HAProxy's `timeout server`"),
        "{text}"
    );
}

#[test]
fn the_same_proxy_timeout_seen_at_the_server_is_the_client_sides_timeout() {
    let Some(tshark) = oracle::tshark() else {
        return;
    };
    let f = common::fixture("proxy-timeout.server.pcap");
    let (_, sent) = first(&tshark, &f, "mysql.query contains \"sleep(5)\"");
    let (fin, closed) = first(&tshark, &f, "tcp.flags.fin==1 && tcp.dstport==3306");
    let fr = first_reset(&f);
    let c = &fr["first_abnormal"];
    assert_eq!(c["frame"].as_u64(), Some(fin));
    assert_eq!(c["initiator"], "client");
    let cause = &c["cause"];
    assert_eq!(
        (&cause["kind"], &cause["setting"]),
        (&"request_timeout".into(), &"client_read_timeout".into())
    );
    assert!((wait_s(cause) - (closed - sent)).abs() < 1e-5, "{cause}");
}

#[test]
fn a_client_read_timeout_then_the_late_answer_reset_by_the_clients_kernel() {
    let f = common::fixture("client-read-timeout.pcap");
    let fr = first_reset(&f);
    let c = &fr["first_abnormal"];
    assert_eq!((c["frame"].as_u64(), &c["flag"]), (Some(13), &"FIN".into()));
    assert_eq!(c["cause"]["kind"], "request_timeout");
    assert_eq!(c["cause"]["setting"], "client_read_timeout");
    // The server's answer came after the client's FIN: its kernel reset it. The session was not idle.
    let rst = &fr["first_rst"];
    assert_eq!(rst["frame"], 16);
    assert_eq!(rst["cause"]["kind"], "peer_gone");
    assert_eq!(rst["cause"]["confidence"], "certain");
    assert_eq!(
        rst["cause"]["evidence"][0]["frames"],
        serde_json::json!([13, 15, 16])
    );
}

#[test]
fn a_request_on_a_connection_the_server_had_closed_is_a_stale_connection() {
    let Some(tshark) = oracle::tshark() else {
        return;
    };
    let f = common::fixture("server-gone-away.pcap");
    let (fin, fin_at) = first(&tshark, &f, "tcp.flags.fin==1 && tcp.srcport==3306");
    let (query, sent) = first(&tshark, &f, "mysql.query contains \"after kill\"");
    let (rst, _) = first(
        &tshark,
        &f,
        &format!("tcp.flags.reset==1 && tcp.srcport==3306 && frame.number > {query}"),
    );
    // In `mysql`, the request the RST cut off is a stale connection's.
    let m = common::json(&["mysql", "--json", s(&f)]);
    let incident = m["incidents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["frame"] == rst)
        .expect("the RST cut a request off");
    let cause = &incident["cause"];
    assert_eq!(
        (&cause["kind"], &cause["confidence"]),
        (&"stale_connection".into(), &"certain".into())
    );
    assert!((wait_s(cause) - (sent - fin_at)).abs() < 1e-5, "{cause}");
    assert_eq!(
        cause["evidence"][0]["frames"],
        serde_json::json!([fin, query, rst])
    );
    let text = common::flat(&common::text(&["mysql", s(&f)]));
    assert!(
        text.contains(&format!(
            "a stale connection: the client sent `select 'after kill'` (frame {query}) 2.07 s after the server had \
             closed the connection (FIN, frame {fin})"
        )) && text.contains("MySQL server has gone away"),
        "{text}"
    );
    // `first-reset` says it of the server's FIN too, and `report` of the incident in the same words.
    let fr = first_reset(&f);
    let fin_close = close_at(&fr, fin);
    let facts: Vec<&str> = fin_close["cause"]["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["fact"].as_str().unwrap())
        .collect();
    assert!(
        facts.iter().any(|f| f.contains("stale connection")),
        "{facts:?}"
    );
    let report = common::json(&["report", "--json", s(&f)]);
    let finding = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["kind"] == "mid_response_close")
        .unwrap();
    assert_eq!(&finding["cause"], cause);
}

#[test]
fn a_server_that_resets_an_idle_session_at_its_wait_timeout() {
    let Some(tshark) = oracle::tshark() else {
        return;
    };
    let f = common::fixture("server-gone-away.pcap");
    let (rst, _) = first(&tshark, &f, "tcp.flags.reset==1 && tcp.srcport==3306");
    let fr = first_reset(&f);
    let c = &fr["first_rst"];
    assert_eq!(c["frame"].as_u64(), Some(rst));
    let cause = &c["cause"];
    assert_eq!(
        (&cause["kind"], &cause["setting"], &cause["confidence"]),
        (
            &"idle_timeout".into(),
            &"wait_timeout".into(),
            &"likely".into()
        )
    );
    // 2.0018 s after the server's last answer (the lab set wait_timeout=2).
    assert!((wait_s(cause) - 2.0).abs() < 0.005, "{cause}");
    let text = common::flat(&common::text(&["first-reset", s(&f)]));
    assert!(text.contains("wait_timeout (interactive_timeout for interactive clients): 2 s here"));
}

#[test]
fn refused_logins_name_the_error_that_refused_them() {
    let Some(tshark) = oracle::tshark() else {
        return;
    };
    let f = common::fixture("too-many-connections.pcap");
    // Every server FIN that follows an ERR 1040 on its connection.
    let fins = tshark.lines([
        "-r",
        s(&f),
        "-Y",
        "tcp.flags.fin==1 && tcp.srcport==3306",
        "-T",
        "fields",
        "-e",
        "tcp.stream",
    ]);
    let refused = tshark.lines([
        "-r",
        s(&f),
        "-Y",
        "tcp.srcport==3306 && tcp.payload contains \"Too many connections\"",
        "-T",
        "fields",
        "-e",
        "tcp.stream",
    ]);
    assert_eq!(refused.len(), 20, "the lab's 20 refusals");
    let fr = first_reset(&f);
    let named: Vec<&Value> = fr["closes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["cause"]["error"]["code"] == 1040)
        .collect();
    assert_eq!(named.len(), refused.len());
    assert!(fins.len() >= named.len());
    for c in &named {
        assert_eq!(c["initiator"], "server");
        assert_eq!(c["cause"]["kind"], "server_error");
        assert_eq!(c["cause"]["setting"], "max_connections");
        assert_eq!(c["cause"]["confidence"], "certain");
        assert_eq!(c["cause"]["error"]["name"], "ER_CON_COUNT_ERROR");
    }
    // Four were refused in place of the greeting, before any login.
    let in_place = named
        .iter()
        .filter(|c| {
            c["cause"]["summary"]
                .as_str()
                .unwrap()
                .contains("in place of its greeting")
        })
        .count();
    assert_eq!(in_place, 4);
    let text = common::flat(&common::text(&["first-reset", s(&f)]));
    assert!(
        text.contains("cause (certain): the server sent ERR 1040 (08004) `Too many connections` answering the login")
            && text.contains("the server had max_connections connections already"),
        "{text}"
    );
}

#[test]
fn an_error_before_the_request_is_whole_is_its_answer() {
    let Some(tshark) = oracle::tshark() else {
        return;
    };
    let f = common::fixture("max-allowed-packet.pcap");
    // tshark cannot dissect the 20 MB request (it never completes): its first segment is found by its bytes.
    let (request, sent) = first(
        &tshark,
        &f,
        "tcp.dstport==3306 && tcp.payload contains \"INSERT INTO\"",
    );
    let (err, answered) = first(
        &tshark,
        &f,
        "tcp.srcport==3306 && tcp.payload contains \"Got a packet bigger\"",
    );
    let (rst, _) = first(&tshark, &f, "tcp.flags.reset==1");
    let m = common::json(&["mysql", "--json", s(&f)]);
    assert_eq!(m["errors"]["1153"], 1, "{}", m["errors"]);
    assert_eq!(m["requests"]["cut_off"], 0);
    assert_eq!(m["requests"]["unanswered"], 0);
    assert_eq!(m["requests"]["answered"], m["queries"]);
    assert!(m["incidents"].as_array().unwrap().is_empty());
    let e = &m["error_details"][0];
    assert_eq!(e["examples"][0]["request_frame"].as_u64(), Some(request));
    assert_eq!(e["examples"][0]["response_frame"].as_u64(), Some(err));
    // Timed from the request's first byte.
    let rt_us = (answered - sent) * 1e6;
    assert!(
        (e["rt_us"]["max"].as_f64().unwrap() - rt_us).abs() < rt_us * 0.011,
        "{e}"
    );
    // The bytes the server did not read are no loss of the capture's.
    assert!(
        m["unknowns"]["notes"].as_array().unwrap().is_empty(),
        "{}",
        m["unknowns"]
    );
    let text = common::text(&["mysql", s(&f)]);
    assert!(
        !text.contains("no error responses") && !text.contains("Partial data"),
        "{text}"
    );
    // The reset that followed is named by that error.
    let fr = first_reset(&f);
    let c = &fr["first_abnormal"];
    assert_eq!(c["frame"].as_u64(), Some(rst));
    assert_eq!(c["cause"]["kind"], "server_error");
    assert_eq!(c["cause"]["setting"], "max_allowed_packet");
    assert_eq!(c["cause"]["error"]["frame"].as_u64(), Some(err));
    let text = common::flat(&common::text(&["first-reset", s(&f)]));
    assert!(
        text.contains("cause (certain): the server sent ERR 1153 (08S01) `Got a packet bigger than 'max_allowed_packet' bytes` answering `INSERT INTO sbtest1"),
        "{text}"
    );
}

/// The IP TTLs of the packets of `file` that `filter` shows, each once, in order (tshark's reading).
fn distinct_ttls(tshark: &Tshark, file: &Path, filter: &str) -> Vec<u64> {
    let mut v: Vec<u64> = tshark
        .lines(["-r", s(file), "-Y", filter, "-T", "fields", "-e", "ip.ttl"])
        .iter()
        .map(|l| l.parse().unwrap())
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

#[test]
fn a_reset_forged_on_the_path_is_told_by_its_ttl() {
    let Some(tshark) = oracle::tshark() else {
        return;
    };
    let f = common::fixture("forged-rst.client.pcap");
    let (rst, _) = first(&tshark, &f, "tcp.flags.reset==1");
    let ttl = |filter: &str| distinct_ttls(&tshark, &f, filter);
    let forged = ttl("tcp.flags.reset==1");
    let usual =
        ttl("ip.src==10.77.0.1 && tcp.flags.reset==0 && tcp.flags.fin==0 && tcp.flags.syn==0");
    assert_eq!((forged.len(), usual.len()), (1, 1));
    assert_ne!(forged, usual);
    let fr = first_reset(&f);
    let c = &fr["first_abnormal"];
    assert_eq!(c["frame"].as_u64(), Some(rst));
    let cause = &c["cause"];
    assert_eq!(cause["kind"], "path_device");
    assert_eq!(cause["sender"], "path");
    assert_eq!(cause["ttl"]["ttl"].as_u64(), Some(forged[0]));
    assert_eq!(
        cause["ttl"]["usual"],
        serde_json::json!([usual[0], usual[0]])
    );
    let text = common::flat(&common::text(&["first-reset", s(&f)]));
    assert!(
        text.contains(&format!(
            "this RST was likely sent by a device on the path (a firewall, a load balancer, a NAT), not by \
             10.77.0.1: its IP TTL is {}, where the data 10.77.0.1 sent came with",
            forged[0]
        )),
        "{text}"
    );
}

#[test]
fn connects_a_firewall_refused_are_not_blamed_on_the_server() {
    let Some(tshark) = oracle::tshark() else {
        return;
    };
    let f = common::fixture("firewall-reject.client.pcap");
    let ttls = |filter: &str| distinct_ttls(&tshark, &f, filter);
    let refusing = ttls("tcp.flags.reset==1");
    let data = ttls("ip.src==10.77.0.1 && tcp.len>0");
    assert_eq!((refusing.len(), data.len()), (1, 1));
    assert_ne!(refusing, data);
    let (first_syn, first_rst) = (
        first(
            &tshark,
            &f,
            "tcp.flags.syn==1 && tcp.flags.ack==0 && tcp.srcport!=49436",
        )
        .0,
        first(&tshark, &f, "tcp.flags.reset==1").0,
    );
    let fr = first_reset(&f);
    let refusals = fr["connects"]["refusals"].as_array().unwrap();
    assert_eq!(refusals.len(), 1);
    let r = &refusals[0];
    assert_eq!(
        r["count"].as_u64(),
        Some(tshark.count(&f, "tcp.flags.reset==1") as u64)
    );
    assert_eq!(r["first_syn_frame"].as_u64(), Some(first_syn));
    assert_eq!(r["first_rst_frame"].as_u64(), Some(first_rst));
    assert_eq!(r["on_path"]["ttl"].as_u64(), Some(refusing[0]));
    assert_eq!(r["on_path"]["usual"], serde_json::json!([data[0], data[0]]));
    let text = common::flat(&common::text(&["first-reset", s(&f)]));
    assert!(
        text.contains("were refused (RST to the SYN), likely by a device on the path")
            && !text.contains("nothing listened on the port (the server was down"),
        "{text}"
    );
    // A port nothing listened on: the server's own kernel refuses, with the TTL of its other packets.
    let fr = first_reset(&common::fixture("connect-refused.pcap"));
    let refusals = fr["connects"]["refusals"].as_array().unwrap();
    assert!(!refusals.is_empty());
    for r in refusals {
        assert!(r["on_path"].is_null(), "{r}");
    }
}

#[test]
fn no_other_close_of_a_real_capture_is_said_to_come_from_the_path() {
    // A host sends every packet with one TTL: only the forged reset may be called a path device's.
    common::each_in_parallel(common::real_captures(), |f| {
        let fr = first_reset(&f);
        for c in fr["closes"].as_array().unwrap() {
            let forged = c["cause"]["sender"] == "path";
            let expected = (f.ends_with("forged-rst.client.pcap")
                || f.ends_with("firewall-reject.client.pcap"))
                && c["flag"] == "RST";
            assert_eq!(
                forged, expected,
                "{f:?} frame {}: {}",
                c["frame"], c["cause"]
            );
        }
    });
}

#[test]
fn the_servers_write_timeout_is_named_where_the_reader_stopped_reading() {
    for (name, setting_s) in [("stream-stall.pcap", 2), ("path-lost.pcap", 2)] {
        let f = common::fixture(name);
        let fr = first_reset(&f);
        let cause = &fr["first_abnormal"]["cause"];
        assert_eq!(cause["kind"], "write_timeout", "{name}");
        assert_eq!(cause["setting"], "net_write_timeout", "{name}");
        assert_eq!(cause["confidence"], "likely", "{name}");
        assert!(
            (wait_s(cause) - setting_s as f64).abs() < 0.02,
            "{name}: {cause}"
        );
        let text = common::flat(&common::text(&["first-reset", s(&f)]));
        assert!(
            text.contains(&format!(
                "net_write_timeout ({setting_s} s here; default 60 s)"
            )),
            "{name}: {text}"
        );
    }
}

#[test]
fn no_idle_timeout_is_guessed_while_a_response_flows_or_the_peer_reads() {
    // A proxy's child killed while a slow reader drained its resultset; a primary's dump thread killed
    // while the replica stalled; a query KILLed while its reader was slow (the whole rotated set).
    for name in ["proxy-6033.pcap", "repl-stall.pcap", "rotated-cut"] {
        let f = common::fixture(name);
        let fr = first_reset(&f);
        let c = &fr["first_abnormal"];
        assert_ne!(c["cause"]["kind"], "idle_timeout", "{name}");
        assert_ne!(c["cause"]["setting"], "wait_timeout", "{name}");
        for cmd in ["first-reset", "mysql", "report", "flows"] {
            let text = common::text(&[cmd, s(&f)]);
            assert!(!text.contains("wait_timeout"), "{name} {cmd}: {text}");
        }
    }
}

#[test]
fn the_last_file_of_a_rotated_set_alone_is_not_a_normal_end() {
    let Some(tshark) = oracle::tshark() else {
        return;
    };
    let f = common::fixture("rotated-cut/rotated-cut.pcap2");
    let (fin, _) = first(&tshark, &f, "tcp.flags.fin==1 && tcp.srcport==3306");
    let fr = first_reset(&f);
    let c = &fr["first_abnormal"];
    assert_eq!(c["frame"].as_u64(), Some(fin));
    assert_eq!(c["verdict"], "abnormal");
    assert!(
        c["reason"]
            .as_str()
            .unwrap()
            .starts_with("server FIN mid-resultset, inside one of its packets"),
        "{c}"
    );
    let text = common::text(&["first-reset", s(&f)]);
    assert!(!text.contains("ended normally"), "{text}");
}

#[test]
fn a_session_whose_state_is_unknown_is_never_called_normal() {
    // A TLS session's FIN could end it after COM_QUIT or cut a query off: the capture cannot tell.
    let f = common::fixture("tls.pcap");
    let fr = first_reset(&f);
    assert_eq!(fr["judgements"]["not_judged"], 1);
    assert_eq!(
        fr["judgements"]["not_judged_why"],
        serde_json::json!([["encrypted", 1]])
    );
    let text = common::flat(&common::text(&["first-reset", s(&f)]));
    if fr["first_abnormal"].is_null() {
        assert!(
            text.contains("; 1 could not be judged (1 encrypted (TLS))")
                && !text.contains("ended normally"),
            "{text}"
        );
    }
}

#[test]
fn a_compressed_answer_that_the_capture_holds_only_the_start_of_is_answered_without_an_end() {
    let Some(f) = common::shared("external/peers/percona-toolkit/tcpdump014.pcap") else {
        return;
    };
    let m = common::json(&["mysql", "--json", s(&f)]);
    assert_eq!(m["queries"], 1);
    // Frame 3 begins the server's compressed answer (12 of its 633 bytes): answered, its end not in the
    // capture, so timed to its first byte (frame 1 at .586310, frame 3 at .587685: pt-query-digest's
    // 1,375 µs) and to no last byte.
    assert_eq!(m["requests"]["answered"], 1);
    assert_eq!(m["requests"]["answered_end_unknown"], 1);
    assert_eq!(m["requests"]["unanswered"], 0);
    assert_eq!(m["requests"]["unreadable"], 0);
    assert!(m["unanswered"].as_array().unwrap().is_empty());
    assert_eq!(m["rt_us"]["count"], 0);
    assert_eq!(m["first_byte_us"]["count"], 1);
    assert_eq!(m["first_byte_us"]["max"], 1375.0);
    assert_eq!(m["phases"]["requests"], 1);
    assert_eq!(m["phases"]["upload_us"], 0.0);
    assert_eq!(m["phases"]["server_us"], 1375.0);
    assert_eq!(m["phases"]["downloads"], 0);
    let g = &m["statements"][0];
    assert_eq!(g["fingerprint"], "show databases");
    assert_eq!(g["answered"], 1);
    assert_eq!(g["answered_end_unknown"], 1);
    let text = common::text(&["mysql", s(&f)]);
    assert!(
        text.contains("1 answered, of which 1 without its response's end in the capture"),
        "{text}"
    );
    assert!(
        text.contains("to first response byte, every answered request: 1 request: mean 1.38 ms"),
        "{text}"
    );
}

#[test]
fn flows_and_report_give_each_close_the_cause_first_reset_gives_it() {
    for name in [
        "stream-stall.pcap",
        "forged-rst.client.pcap",
        "server-gone-away.pcap",
    ] {
        let f = common::fixture(name);
        let fr = first_reset(&f);
        let flows = common::json(&["flows", "--json", s(&f)]);
        for row in flows["connections"].as_array().unwrap() {
            let Some(close) = row["close"].as_object() else {
                continue;
            };
            let c = close_at(&fr, close["frame"].as_u64().unwrap());
            assert_eq!(close["cause"], c["cause"], "{name}");
            assert_eq!(close["verdict"], c["verdict"], "{name}");
        }
        let report = common::json(&["report", "--json", s(&f)]);
        let head = report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["kind"] == "first_abnormal_close")
            .unwrap();
        assert_eq!(head["cause"], fr["first_abnormal"]["cause"], "{name}");
    }
}

/// `file` with every record cut to `snap` bytes, as `tcpdump -s SNAP` would have kept it (classic pcap,
/// little-endian: the global header's snap length at 16, each record's kept length at 8 of its header).
fn snap_cut(file: &Path, snap: u32) -> std::path::PathBuf {
    let bytes = std::fs::read(file).unwrap();
    assert_eq!(
        bytes[..4],
        [0xd4, 0xc3, 0xb2, 0xa1],
        "{file:?}: little-endian pcap"
    );
    let mut out = bytes[..24].to_vec();
    out[16..20].copy_from_slice(&snap.to_le_bytes());
    let mut at = 24;
    while at + 16 <= bytes.len() {
        let kept = u32::from_le_bytes(bytes[at + 8..at + 12].try_into().unwrap());
        let cut = kept.min(snap);
        let mut header = bytes[at..at + 16].to_vec();
        header[8..12].copy_from_slice(&cut.to_le_bytes());
        out.extend_from_slice(&header);
        out.extend_from_slice(&bytes[at + 16..at + 16 + cut as usize]);
        at += 16 + kept as usize;
    }
    let name = file.file_name().unwrap().to_str().unwrap();
    let path = common::scratch("causes", &format!("s{snap}-{name}"));
    std::fs::write(&path, out).unwrap();
    path
}

/// A snap length of 96 bytes (tcpdump's old default) keeps 30 bytes of each segment's payload here: an
/// ERR packet's code and SQLSTATE, not its whole message. The error that refused a login, and the one that
/// answered a request the server refused unread (while the client was still sending it, and after the
/// answer to the previous query had been cut), are named as in the whole capture, from the same frame,
/// their message marked cut.
#[test]
fn a_snap_length_that_cuts_the_error_packet_still_names_the_error() {
    for (name, setting) in [
        ("max-allowed-packet.pcap", "max_allowed_packet"),
        ("too-many-connections.pcap", "max_connections"),
    ] {
        let whole = common::fixture(name);
        let cut = snap_cut(&whole, 96);
        let (w, c) = (first_reset(&whole), first_reset(&cut));
        let (w, c) = (&w["first_abnormal"], &c["first_abnormal"]);
        assert_eq!(c["frame"], w["frame"], "{name}");
        for key in ["kind", "setting", "confidence", "sender"] {
            assert_eq!(c["cause"][key], w["cause"][key], "{name}: {key}");
        }
        assert_eq!(c["cause"]["setting"], setting, "{name}");
        let (we, ce) = (&w["cause"]["error"], &c["cause"]["error"]);
        for key in ["code", "sql_state", "frame"] {
            assert_eq!(ce[key], we[key], "{name}: error {key}");
        }
        let whole_message = we["message"].as_str().unwrap();
        let cut_message = ce["message"].as_str().unwrap();
        let kept = cut_message
            .strip_suffix('…')
            .unwrap_or_else(|| panic!("{cut_message}"));
        assert!(
            !kept.is_empty() && whole_message.starts_with(kept) && kept.len() < whole_message.len(),
            "{name}: {cut_message:?} of {whole_message:?}"
        );
    }
}

/// A client that pipelines (sends `SELECT 1` while the answer to `SELECT * FROM sbtest3 LIMIT 1000` is
/// still arriving) on a capture cut to 96 or 128 bytes: the server side is lost in the first cut answer,
/// and the byte after the next command lies inside that answer, not at the start of the next one.
/// Framed from there, the rest of the stream read as one packet of garbage, and the server's FIN after
/// COM_QUIT was called abnormal ("server FIN while `SELECT 1` was unanswered"). Every close keeps the
/// whole capture's verdict, and the first abnormal close is the same frame.
#[test]
fn a_snap_length_cut_of_pipelined_requests_keeps_every_closes_verdict() {
    let whole = common::fixture("pipelined.pcap");
    let w = first_reset(&whole);
    assert_eq!(w["first_fin"]["verdict"], "normal", "the whole capture");
    for snap in [96, 128] {
        let cut = snap_cut(&whole, snap);
        let c = first_reset(&cut);
        assert_eq!(
            c["first_abnormal"]["frame"], w["first_abnormal"]["frame"],
            "snap {snap}"
        );
        for close in w["closes"].as_array().unwrap() {
            let frame = close["frame"].as_u64().unwrap();
            assert_eq!(
                close_at(&c, frame)["verdict"],
                close["verdict"],
                "snap {snap}: the close at frame {frame}"
            );
        }
        assert_eq!(
            close_at(&c, 995)["mysql_state"],
            close_at(&w, 995)["mysql_state"]
        );
    }
}

/// The records of `file` from its `from`-th on (0-based), as the second file of a rotated set holds them
/// (`tcpdump -C`/`-G`, `editcap -c`): classic little-endian pcap.
fn rotated_from(file: &Path, from: usize) -> std::path::PathBuf {
    let bytes = std::fs::read(file).unwrap();
    assert_eq!(bytes[..4], [0xd4, 0xc3, 0xb2, 0xa1], "{file:?}");
    let mut out = bytes[..24].to_vec();
    let (mut at, mut k) = (24, 0);
    while at + 16 <= bytes.len() {
        let kept = u32::from_le_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize;
        if k >= from {
            out.extend_from_slice(&bytes[at..at + 16 + kept]);
        }
        at += 16 + kept;
        k += 1;
    }
    let name = file.file_name().unwrap().to_str().unwrap();
    let path = common::scratch("causes", &format!("from{from}-{name}"));
    std::fs::write(&path, out).unwrap();
    path
}

/// The second file of a rotated set that begins while the client is still sending a request over
/// max_allowed_packet: the server's ERR 1153 and its RST are in it, the request's start is not. The
/// server's turn begins with the ERR packet (its code, `#` and SQLSTATE say what it is by themselves),
/// so the connection is MySQL and the close's cause is the error, as in the whole capture; before, the
/// connection was "not MySQL, and TCP alone says no more".
#[test]
fn a_rotated_file_that_begins_mid_request_still_names_the_error_before_the_close() {
    let whole = common::fixture("max-allowed-packet.pcap");
    let w = first_reset(&whole);
    let from = 45;
    let part = rotated_from(&whole, from);
    let p = first_reset(&part);
    let (w, p) = (&w["first_abnormal"], &p["first_abnormal"]);
    assert_eq!(
        p["frame"].as_u64().unwrap() + from as u64,
        w["frame"].as_u64().unwrap()
    );
    for key in ["kind", "setting", "confidence", "sender"] {
        assert_eq!(p["cause"][key], w["cause"][key], "{key}");
    }
    let (we, pe) = (&w["cause"]["error"], &p["cause"]["error"]);
    assert_eq!(
        (&pe["code"], &pe["sql_state"]),
        (&we["code"], &we["sql_state"])
    );
    assert_eq!(
        pe["frame"].as_u64().unwrap() + from as u64,
        we["frame"].as_u64().unwrap()
    );
}
