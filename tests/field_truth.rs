//! Every answer either right or honestly qualified: requests unanswered when the capture ended,
//! requests cut off by a close and how long they waited, and one set of counts in every command and table,
//! on real captures.

use crate::common;

use pcapsleuth_testkit::oracle;
use serde_json::Value;

use common::json;

/// A command's text as it reads: its sentences whole, wherever the text width wrapped them.
fn text(args: &[&str]) -> String {
    common::flat(&common::text(args))
}

fn f64_of(v: &Value) -> f64 {
    v.as_f64().unwrap()
}

/// tshark's epoch time of one frame.
fn frame_time(tshark: &oracle::Tshark, f: &std::path::Path, frame: u64) -> f64 {
    let t = tshark.lines([
        "-r",
        f.to_str().unwrap(),
        "-Y",
        &format!("frame.number=={frame}"),
        "-T",
        "fields",
        "-e",
        "frame.time_epoch",
    ]);
    t[0].parse().unwrap()
}

/// tshark's epoch time of the capture's last packet.
fn last_time(tshark: &oracle::Tshark, f: &std::path::Path) -> f64 {
    let t = tshark.lines([
        "-r",
        f.to_str().unwrap(),
        "-T",
        "fields",
        "-e",
        "frame.time_epoch",
    ]);
    t.last().unwrap().parse().unwrap()
}

/// A client-side capture: `select sleep(30)` sent, ACKed by the server, never answered in the last 6 s of the
/// capture. `mysql`, `first-reset` and `report` all say so, with the request's frame and how long it waited.
#[test]
fn a_request_unanswered_at_the_end_is_reported_by_every_command() {
    let f = common::fixture("client-hang.pcap");
    let p = f.to_str().unwrap();
    let m = json(&["mysql", "--json", p]);
    let u = m["unanswered"].as_array().unwrap();
    assert_eq!(u.len(), 1, "{u:#?}");
    assert_eq!(u[0]["query"], "select sleep(30)");
    assert_eq!(u[0]["command"], "COM_QUERY");
    assert_eq!(u[0]["client"], "10.77.1.2:50362");
    assert_eq!(u[0]["server"], "10.77.0.1:3306");
    assert_eq!(m["requests"]["unanswered"], 1);
    assert_eq!(
        m["requests"]["answered"].as_u64().unwrap() + 1,
        m["queries"].as_u64().unwrap()
    );
    let waited = f64_of(&u[0]["waited_s"]);
    assert!(waited > 5.0, "{waited}");
    let mysql_text = text(&["mysql", p]);
    assert!(
        mysql_text.contains("1 still unanswered when the capture ended"),
        "{mysql_text}"
    );
    assert!(
        mysql_text
            .contains("`select sleep(30)` (10.77.1.2:50362 -> 10.77.0.1:3306), waited 6.01 s"),
        "{mysql_text}"
    );

    let fr = json(&["first-reset", "--json", p]);
    assert_eq!(fr["unanswered_at_end"], m["unanswered"]);
    let fr_text = text(&["first-reset", p]);
    assert!(
        fr_text.contains(&format!(
            "1 connection has a request unanswered at the end of the capture for 6.01 s: request frame {}, connection 10.77.1.2:50362-10.77.0.1:3306",
            u[0]["request_frame"]
        )),
        "{fr_text}"
    );

    let r = json(&["report", "--json", p]);
    let finding = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["kind"] == "unanswered_at_end")
        .unwrap_or_else(|| panic!("{:#}", r["findings"]));
    assert_eq!(finding["frames"][0], u[0]["request_frame"]);

    let Some(tshark) = oracle::tshark() else {
        return;
    };
    // The request is tshark's `select sleep(30)`, and it waited to the capture's last packet.
    let frames = tshark.lines([
        "-r",
        p,
        "-Y",
        "mysql.query == \"select sleep(30)\"",
        "-T",
        "fields",
        "-e",
        "frame.number",
    ]);
    assert_eq!(frames, [u[0]["request_frame"].to_string()]);
    let frame = u[0]["request_frame"].as_u64().unwrap();
    let want = last_time(&tshark, &f) - frame_time(&tshark, &f, frame);
    assert!((waited - want).abs() < 1e-6, "{waited} vs tshark {want}");
    assert_eq!(
        m["queries"].as_u64().unwrap() as usize,
        tshark.count(&f, "mysql.command == 3")
    );
}

/// A thread pool with every session waiting at the end: all 8 are listed, but they had waited no longer than
/// the requests answered before them, so they are not a finding.
#[test]
fn requests_merely_in_flight_at_the_end_are_listed_but_not_a_finding() {
    let f = common::fixture("thread-pool.pcap");
    let p = f.to_str().unwrap();
    let m = json(&["mysql", "--json", p]);
    let u = m["unanswered"].as_array().unwrap();
    assert_eq!(u.len(), 8);
    let mut clients: Vec<&str> = u.iter().map(|u| u["client"].as_str().unwrap()).collect();
    clients.dedup();
    assert_eq!(clients.len(), 8, "one per session");
    let p99 = f64_of(&m["rt_us"]["p99"]) / 1e6;
    assert!(u.iter().all(|u| f64_of(&u["waited_s"]) < p99));
    let r = json(&["report", "--json", p]);
    assert!(!r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["kind"] == "unanswered_at_end"));
    let report_text = text(&["report", p]);
    assert!(
        report_text.contains("8 requests still unanswered when the capture ended"),
        "{report_text}"
    );
    assert!(text(&["first-reset", p]).contains(
        "8 connections have a request unanswered at the end of the capture, the longest for 304 ms"
    ));
}

/// `select sleep(10)` killed by the server (KILL CONNECTION) 1.2 s after it was sent: cut off by the server's
/// FIN after waiting 1.2 s, never listed as answered in 0 µs.
#[test]
fn a_request_cut_off_by_a_close_waited_until_the_close() {
    let f = common::fixture("server-closes.pcap");
    let p = f.to_str().unwrap();
    let m = json(&["mysql", "--json", p]);
    let sleep = m["statements"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["fingerprint"] == "select sleep(?)")
        .unwrap();
    assert_eq!(sleep["count"], 1);
    assert_eq!(sleep["answered"], 0);
    assert_eq!(sleep["cut_off"], 1);
    assert_eq!(sleep["rt_us"]["count"], 0);
    let waited_us = f64_of(&sleep["cut_off_waited_us"]["max"]);
    let incident = &m["incidents"][0];
    assert_eq!(incident["kind"], "server_fin_unanswered");
    assert_eq!(incident["query"], "select sleep(10)");
    let waited_s = f64_of(&incident["waited_s"]);
    assert!((waited_s * 1e6 - waited_us).abs() < waited_us * 0.01);
    assert!(waited_s > 1.0, "{waited_s}");
    assert_eq!(m["requests"]["cut_off"], 1);
    let mysql_text = text(&["mysql", p]);
    assert!(
        mysql_text.contains("and 1 cut off by a close (the cut off waited up to 1.23 s)"),
        "{mysql_text}"
    );
    let Some(tshark) = oracle::tshark() else {
        return;
    };
    let want = frame_time(&tshark, &f, incident["frame"].as_u64().unwrap())
        - frame_time(&tshark, &f, incident["request_frame"].as_u64().unwrap());
    assert!(
        (waited_s - want).abs() < 1e-6,
        "{waited_s} vs tshark {want}"
    );
}

/// One set of counts: on every real capture, a request is counted the same way by `mysql` (requests,
/// response times, statements, seconds) and `rt`, and the duration is the capture's span.
#[test]
fn every_command_and_table_counts_requests_the_same_way() {
    for path in common::real_captures() {
        let p = path.to_str().unwrap();
        let m = json(&["mysql", "--json", p]);
        let req = &m["requests"];
        let fates = ["answered", "cut_off", "unanswered", "unreadable"];
        let total: u64 = fates.iter().map(|k| req[k].as_u64().unwrap()).sum();
        assert_eq!(m["queries"].as_u64().unwrap(), total, "{p}: queries");
        // Every answered request has a time to first byte; those whose response's end is in the
        // capture a response time.
        let answered =
            req["answered"].as_u64().unwrap() - req["answered_end_unknown"].as_u64().unwrap();
        assert_eq!(
            m["first_byte_us"]["count"].as_u64().unwrap(),
            req["answered"].as_u64().unwrap(),
            "{p}: first_byte_us"
        );
        assert_eq!(
            m["rt_us"]["count"].as_u64().unwrap(),
            answered,
            "{p}: rt_us"
        );
        let rt = json(&["rt", "--json", p]);
        if rt["source"] == "mysql" {
            assert_eq!(
                rt["percentiles_us"]["count"].as_u64().unwrap(),
                answered,
                "{p}: rt vs mysql"
            );
        }
        let per_second: u64 = m["per_second"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["queries"].as_u64().unwrap())
            .sum();
        assert_eq!(per_second, total, "{p}: per second");
        for s in m["statements"].as_array().unwrap() {
            let group: u64 = fates.iter().map(|k| s[k].as_u64().unwrap()).sum();
            assert_eq!(s["count"].as_u64().unwrap(), group, "{p}: {s:#}");
            assert_eq!(
                s["rt_us"]["count"].as_u64().unwrap(),
                s["answered"].as_u64().unwrap() - s["answered_end_unknown"].as_u64().unwrap(),
                "{p}: {s:#}"
            );
        }
        let flows = json(&["flows", "--json", p]);
        let span = flows["capture"]["last_ts"].as_f64().unwrap_or(0.0)
            - flows["capture"]["first_ts"].as_f64().unwrap_or(0.0);
        assert!(
            (f64_of(&m["span_s"]) - span).abs() < 1e-6,
            "{p}: span {} vs {span}",
            m["span_s"]
        );
    }
}

/// Every command that reads a capture, with `--json` added where `json` is set.
fn every_command(p: &str, json: bool) -> Vec<Vec<String>> {
    ["first-reset", "flows", "mysql", "rt", "rate", "report"]
        .iter()
        .map(|c| {
            let mut a = vec![c.to_string()];
            if json {
                a.push("--json".into());
            }
            a.push(p.into());
            a
        })
        .collect()
}

fn args(a: &[String]) -> Vec<&str> {
    a.iter().map(String::as_str).collect()
}

/// A capture taken with `-s 80`: every command says how many packets were cut and at which snap length;
/// `mysql` and `report` say which figures are partial, and no cut statement passes for a complete one.
#[test]
fn snap_length_cuts_are_said_by_every_command() {
    let f = common::fixture("snaplen80.pcap");
    let p = f.to_str().unwrap();
    let mut cut = None;
    for a in every_command(p, true) {
        let v = json(&args(&a));
        let u = &v["unknowns"];
        assert_eq!(u["snap_length"]["snaplen"], 80, "{a:?}");
        let n = u["snap_length"]["packets_cut"].as_u64().unwrap();
        assert_eq!(*cut.get_or_insert(n), n, "{a:?}");
        assert!(u["notes"][0]
            .as_str()
            .unwrap()
            .contains("packets were cut by the snap length (80 bytes)"));
    }
    for a in every_command(p, false) {
        let t = text(&args(&a));
        assert!(
            t.starts_with("Partial data")
                && t.contains("packets were cut by the snap length (80 bytes)"),
            "{a:?}: {t}"
        );
    }
    let m = json(&["mysql", "--json", p]);
    let u = &m["unknowns"];
    // Unreadable, or answered with the rest of the response cut off by the snap length.
    let unreadable = m["requests"]["unreadable"].as_u64().unwrap()
        + m["requests"]["answered_end_unknown"].as_u64().unwrap();
    assert!(unreadable > 0);
    assert_eq!(u["unreadable_responses"], unreadable);
    assert!(u["notes"][0].as_str().unwrap().contains(&format!(
        "{} MySQL responses could not be read to their end",
        pcapsleuth::analysis::units::count(unreadable)
    )));
    let mut cut_statements = 0;
    for s in m["statements"].as_array().unwrap() {
        let sample = s["sample"].as_str().unwrap();
        let fp = s["fingerprint"].as_str().unwrap();
        // The decoder marks bytes missing inside a statement's text; such a group is marked cut.
        let text_cut = sample.contains("/* gap: ");
        assert_eq!(s["text_cut"], text_cut, "{s:#}");
        assert_eq!(fp.ends_with('…'), text_cut, "{s:#}");
        if text_cut {
            cut_statements += s["count"].as_u64().unwrap();
        }
    }
    assert!(cut_statements > 0);
    assert!(u["statements_cut"].as_u64().unwrap() >= cut_statements);
    let r = text(&["report", p]);
    assert!(
        r.contains("MySQL responses could not be read to their end"),
        "{r}"
    );

    let Some(tshark) = oracle::tshark() else {
        return;
    };
    assert_eq!(
        cut.unwrap() as usize,
        tshark.count(&f, "frame.cap_len < frame.len")
    );
    let lens = tshark.lines([
        "-r",
        p,
        "-Y",
        "frame.cap_len < frame.len",
        "-T",
        "fields",
        "-e",
        "frame.cap_len",
    ]);
    assert!(lens.iter().all(|l| l == "80"));
}

/// A capture of one TLS session and one plain one: `mysql`, `report` and their JSON say how many sessions are
/// encrypted, which endpoints, and how many bytes could not be read (tshark: the TCP payload after the
/// SSLRequest).
#[test]
fn encrypted_sessions_are_said_with_their_endpoints_and_bytes() {
    let f = common::fixture("tls.pcap");
    let p = f.to_str().unwrap();
    let m = json(&["mysql", "--json", p]);
    let r = json(&["report", "--json", p]);
    let e = &m["unknowns"]["encrypted"];
    assert_eq!(e, &r["unknowns"]["encrypted"]);
    assert_eq!(e["sessions"], 1);
    let c = &e["connections"][0];
    assert_eq!(c["client"], "10.77.1.2:37328");
    assert_eq!(c["server"], "10.77.0.1:3306");
    let bytes = e["bytes"].as_u64().unwrap();
    assert!(bytes > 0);
    for t in [text(&["mysql", p]), text(&["report", p])] {
        assert!(
            t.contains(&format!(
                "1 MySQL session is encrypted (TLS): {} bytes could not be read",
                pcapsleuth::analysis::units::count(bytes)
            )) && t.contains("10.77.1.2:37328 -> 10.77.0.1:3306"),
            "{t}"
        );
    }
    let Some(tshark) = oracle::tshark() else {
        return;
    };
    let conn = "ip.addr==10.77.1.2 && tcp.port==37328";
    let ssl_request = tshark.lines([
        "-r",
        p,
        "-d",
        "tcp.port==3306,mysql",
        "-Y",
        &format!("{conn} && ip.src==10.77.1.2 && mysql.caps.sl == 1"),
        "-T",
        "fields",
        "-e",
        "frame.number",
    ]);
    let after: u64 = tshark
        .lines([
            "-r",
            p,
            "-Y",
            &format!("{conn} && frame.number > {} && tcp.len > 0", ssl_request[0]),
            "-T",
            "fields",
            "-e",
            "tcp.len",
        ])
        .iter()
        .map(|l| l.parse::<u64>().unwrap())
        .sum();
    assert_eq!(bytes, after);
}

/// `--no-mysql` is never wrong: without the protocol a FIN cannot be judged, so on every real capture the
/// first abnormal close is an RST or nothing, and the output says FINs were not judged.
#[test]
fn without_mysql_decoding_no_fin_is_judged() {
    for path in common::real_captures() {
        let p = path.to_str().unwrap();
        let fr = json(&["first-reset", "--no-mysql", "--json", p]);
        assert_eq!(fr["fins"], "not_judged", "{p}");
        if let Some(a) = fr["first_abnormal"].as_object() {
            let greeting_wait = a["reason"]
                .as_str()
                .unwrap()
                .contains("waiting for the server greeting");
            assert!(a["flag"] == "RST" || greeting_wait, "{p}: {a:#?}");
        }
        // Every RST is abnormal: the first abnormal close is no later than the first RST.
        if let Some(rst) = fr["first_rst"]["time"].as_f64() {
            assert!(fr["first_abnormal"]["time"].as_f64().unwrap() <= rst, "{p}");
        }
        let t = text(&["first-reset", "--no-mysql", p]);
        assert!(t.contains("FINs not judged"), "{p}: {t}");
        // With MySQL decoded, FINs are judged.
        assert_eq!(json(&["first-reset", "--json", p])["fins"], "judged", "{p}");
    }
    // A server FIN right after COM_QUIT was named the first abnormal close by --no-mysql.
    let f = common::fixture("prepared-full.pcap");
    let fr = json(&["first-reset", "--no-mysql", "--json", f.to_str().unwrap()]);
    assert!(fr["first_abnormal"].is_null(), "{fr:#}");
}

/// The why of a close, from TCP facts: the stalled reader of stream-stall.pcap advertised a zero window
/// from frame 1358 until the server's RST (net_write_timeout), and wait_timeout's RST in server-closes.pcap
/// came after the client had sent nothing for seconds. Both are named in the close's reason and in
/// `first_abnormal`, with the frames tshark finds.
#[test]
fn a_close_names_what_preceded_it() {
    let f = common::fixture("stream-stall.pcap");
    let p = f.to_str().unwrap();
    let fr = json(&["first-reset", "--json", p]);
    let rst = &fr["first_rst"];
    assert_eq!(rst["frame"], 2029);
    let reason = rst["reason"].as_str().unwrap();
    assert!(
        reason.contains("the client had advertised a zero window for 1.96 s before this, from frame 1358 (it stopped reading)"),
        "{reason}"
    );
    assert_eq!(fr["first_abnormal"]["reason"], rst["reason"]);
    // The same in the MySQL incident of that close.
    let m = json(&["mysql", "--json", p]);
    let incident = m["incidents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["frame"] == 2029)
        .unwrap();
    assert_eq!(
        incident["preceded_by"],
        serde_json::json!([
            "the client had advertised a zero window for 1.96 s before this, from frame 1358 (it stopped reading)"
        ])
    );
    assert!(text(&["mysql", p])
        .contains("delivered; the client had advertised a zero window for 1.96 s"));
    // And in the report's finding for that incident: a member of the first abnormal close's finding,
    // which it is (said once, not again as a finding of its own).
    let r = json(&["report", "--json", p]);
    let head = &r["findings"][0];
    assert_eq!(head["kind"], "first_abnormal_close");
    assert!(!r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["kind"] == "mid_response_close" && f["frames"][1] == 2029));
    let finding = head["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["kind"] == "mid_response_close" && f["frames"][1] == 2029)
        .unwrap();
    assert_eq!(finding["evidence"][1], incident["preceded_by"][0]);

    let f2 = common::fixture("server-closes.pcap");
    let p2 = f2.to_str().unwrap();
    let fr2 = json(&["first-reset", "--json", p2]);
    let rst2 = &fr2["first_rst"];
    assert_eq!(rst2["frame"], 29);
    let reason2 = rst2["reason"].as_str().unwrap();
    assert!(
        reason2.contains("the client had sent nothing for 2 s (since frame 26"),
        "{reason2}"
    );
    // A normal end names nothing: the server's FIN right after COM_QUIT.
    let fin = json(&[
        "first-reset",
        "--json",
        common::fixture("prepared-full.pcap").to_str().unwrap(),
    ]);
    assert!(
        !fin["first_fin"]["reason"]
            .as_str()
            .unwrap()
            .contains("had "),
        "{fin:#}"
    );

    let Some(tshark) = oracle::tshark() else {
        return;
    };
    // tshark: the client's first zero window on the stalled connection, and the last client data
    // before wait_timeout's RST.
    // The client's window advertisements before the RST: the last spell of zeros starts at frame 1358.
    let windows = tshark.lines([
        "-r",
        p,
        "-Y",
        "tcp.port==41452 && ip.src==10.77.1.2 && frame.number < 2029 && tcp.flags.syn==0",
        "-T",
        "fields",
        "-e",
        "frame.number",
        "-e",
        "tcp.window_size_value",
    ]);
    let mut spell_from = None;
    for l in &windows {
        let (frame, window) = l.split_once('\t').unwrap();
        if window != "0" {
            spell_from = None;
        } else if spell_from.is_none() {
            spell_from = Some(frame.to_string());
        }
    }
    assert_eq!(spell_from.as_deref(), Some("1358"));
    let data = tshark.lines([
        "-r",
        p2,
        "-Y",
        "tcp.port==54122 && ip.src==10.77.1.2 && tcp.len > 0",
        "-T",
        "fields",
        "-e",
        "frame.number",
    ]);
    assert_eq!(data.last().unwrap(), "26");
    let waited = frame_time(&tshark, &f2, 29) - frame_time(&tshark, &f2, 26);
    // tshark's interval, written as every duration is (three significant digits).
    assert!(
        reason2.contains(&format!(
            "for {} (since",
            pcapsleuth::analysis::units::seconds(waited)
        )),
        "{reason2} vs {waited}"
    );
}

/// A copy of the classic pcap `src` with every packet cut to `snaplen` bytes, as `tcpdump -s` would have
/// captured it.
fn cut_to_snaplen(src: &std::path::Path, dst: &std::path::Path, snaplen: u32) {
    let b = std::fs::read(src).unwrap();
    let le = b[..4] == [0xd4, 0xc3, 0xb2, 0xa1];
    let u32_at = |at: usize| {
        let w: [u8; 4] = b[at..at + 4].try_into().unwrap();
        if le {
            u32::from_le_bytes(w)
        } else {
            u32::from_be_bytes(w)
        }
    };
    let put = |v: u32| if le { v.to_le_bytes() } else { v.to_be_bytes() };
    let mut out = b[..24].to_vec();
    out[16..20].copy_from_slice(&put(snaplen));
    let mut at = 24;
    while at + 16 <= b.len() {
        let incl = u32_at(at + 8);
        let keep = incl.min(snaplen);
        out.extend_from_slice(&b[at..at + 8]);
        out.extend_from_slice(&put(keep));
        out.extend_from_slice(&b[at + 12..at + 16]);
        out.extend_from_slice(&b[at + 16..at + 16 + keep as usize]);
        at += 16 + incl as usize;
    }
    std::fs::write(dst, out).unwrap();
}

/// stream-stall.pcap cut to 100 bytes a packet: the close mid-resultset still names the query, and says
/// its rows and bytes are a lower bound; every command says the capture was cut.
#[test]
fn a_close_in_a_cut_capture_says_its_counts_are_a_lower_bound() {
    let cut = common::scratch("cut", "stream-stall-s100.pcap");
    cut_to_snaplen(&common::fixture("stream-stall.pcap"), &cut, 100);
    let p = cut.to_str().unwrap();
    let fr = json(&["first-reset", "--json", p]);
    let reason = fr["first_rst"]["reason"].as_str().unwrap().to_string();
    assert_eq!(fr["unknowns"]["snap_length"]["snaplen"], 100);
    let whole = json(&[
        "first-reset",
        "--json",
        common::fixture("stream-stall.pcap").to_str().unwrap(),
    ]);
    std::fs::remove_file(&cut).unwrap();
    assert_eq!(fr["first_rst"]["frame"], whole["first_rst"]["frame"]);
    assert!(
        reason.contains("mid-resultset of `select * from big.sbtest1`"),
        "{reason}"
    );
    assert!(
        reason.contains("(at least: the snap length cut"),
        "{reason}"
    );
    assert!(whole["unknowns"]["snap_length"].is_null());
    assert!(!whole["first_rst"]["reason"]
        .as_str()
        .unwrap()
        .contains("at least"));
}

/// The path to the client died as a resultset began (path-lost.pcap): the server resent its unacknowledged data
/// 3 times (tshark's retransmissions) before its write timed out and it reset the connection; the close's reason
/// and the MySQL incident say so.
#[test]
fn a_close_after_resends_names_them() {
    let f = common::fixture("path-lost.pcap");
    let p = f.to_str().unwrap();
    let fr = json(&["first-reset", "--json", p]);
    let rst = &fr["first_abnormal"];
    assert_eq!(rst["frame"], 30);
    let why = "the server had resent its last data 3 times unacknowledged";
    let reason = rst["reason"].as_str().unwrap();
    assert!(reason.contains(why), "{reason}");
    let m = json(&["mysql", "--json", p]);
    assert_eq!(m["incidents"][0]["preceded_by"], serde_json::json!([why]));
    let Some(tshark) = oracle::tshark() else {
        return;
    };
    let resent = tshark.lines([
        "-r",
        p,
        "-Y",
        "tcp.analysis.retransmission && ip.src==10.77.0.1 && frame.number < 30",
        "-T",
        "fields",
        "-e",
        "frame.number",
    ]);
    assert_eq!(resent, ["27", "28", "29"]);
}

/// The slow requests of a capture, by a custom analysis: (request frame, last response frame, rt in ns).
#[derive(Default)]
struct Slow(Vec<(u64, u64, u64)>);

impl pcapsleuth::analysis::Analysis for Slow {
    type PerConnection = ();
    type Output = Vec<(u64, u64, u64)>;
    fn transaction(
        &mut self,
        _: &mut (),
        _: &pcapsleuth::analysis::ConnectionView<'_>,
        t: &pcapsleuth::analysis::TransactionView<'_>,
    ) {
        if let (Some(rt), Some(last)) = (t.response_time_ns(), t.transaction.last_response_frame) {
            if rt > 40_000_000 {
                self.0.push((t.transaction.request_frame, last, rt));
            }
        }
    }
    fn merge(&mut self, o: Self) {
        self.0.extend(o.0);
    }
    fn finish(mut self, _: &pcapsleuth::analysis::CaptureFacts) -> Self::Output {
        self.0.sort_unstable();
        self.0
    }
}

/// A response whose segment was lost on the way is read by the client when its resend fills the hole,
/// not when its last byte first arrived: at the client end of a packet-rate-capped path
/// (`two-point-path.client.pcap`), the three requests slower than 40 ms end at the frames tshark's
/// reassembly completes them in, two of them resends, and their times are tshark's frame times apart.
#[test]
fn a_response_with_a_lost_segment_ends_when_its_resend_arrives() {
    let Some(tshark) = oracle::tshark() else {
        return;
    };
    let f = common::fixture("two-point-path.client.pcap");
    let cap = pcapsleuth::capture::Capture::open(&f).unwrap();
    let run = pcapsleuth::analysis::analyze(
        &cap,
        &pcapsleuth::analysis::EngineOptions::default(),
        Slow::default,
    );
    let frames: Vec<(u64, u64)> = run.output.iter().map(|&(q, r, _)| (q, r)).collect();
    assert_eq!(frames, [(842, 923), (2551, 3059), (3056, 3444)]);
    for &(request, response, rt) in &run.output {
        let tshark_rt = frame_time(&tshark, &f, response) - frame_time(&tshark, &f, request);
        assert!(
            (rt as f64 / 1e9 - tshark_rt).abs() < 1e-6,
            "{request}: {rt} ns"
        );
    }
    let resends = tshark.count(
        &f,
        "(frame.number == 923 || frame.number == 3059) && tcp.analysis.retransmission",
    );
    assert_eq!(resends, 2);
}

/// proxy-cut.pcap: after the proxy's reset, the application reset its 23 other pool connections, each
/// while its `select sleep(20)` awaited an answer. The server's silence before such a client close is
/// the wait for that answer, not an idle connection: no server idle limit (wait_timeout) is suggested,
/// and the cause says the client gave up while its request waited. Checked on every close of the
/// client's the report lists.
#[test]
fn a_client_that_gave_up_waiting_is_not_said_to_have_hit_an_idle_timeout() {
    let f = common::fixture("proxy-cut.pcap");
    let p = f.to_str().unwrap();
    let fr = json(&["first-reset", "--json", p]);
    let by_client: Vec<&Value> = fr["closes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["initiator"] == "client")
        .collect();
    // The JSON lists the first 20 of the 24 closes (`total_closes`): all but the proxy's are the client's.
    assert_eq!(fr["total_closes"], 24);
    assert_eq!(by_client.len(), 19, "{by_client:?}");
    for c in by_client {
        assert!(!c.to_string().contains("wait_timeout"), "{c}");
        assert_eq!(c["cause"]["kind"], "client_abort", "{c}");
        let summary = c["cause"]["summary"].as_str().unwrap();
        assert!(
            summary.starts_with("the client closed while `select sleep(20)` waited"),
            "{summary}"
        );
    }
    // A server that hangs up on an idle client is named by its idle limit (server-closes.pcap: its second
    // close came 2.0 s after the client had been answered and said nothing more; the lab set
    // wait_timeout=2).
    let f = common::fixture("server-closes.pcap");
    let fr = json(&["first-reset", "--json", f.to_str().unwrap()]);
    assert!(
        fr["closes"].as_array().unwrap().iter().any(|c| {
            c["initiator"] == "server"
                && c["cause"]["kind"] == "idle_timeout"
                && c["cause"]["setting"] == "wait_timeout"
        }),
        "{fr}"
    );
}
