//! The two stories pcapsleuth exists for, answered from real captures by one command each, and the
//! MySQL counts checked against tshark's dissector on every real capture.

use crate::common;

use pcapsleuth_testkit::oracle;

use common::json;

/// Story 1: the client said "Lost connection to server during query"; the capture shows the server
/// hanging up in the middle of the resultset.
#[test]
fn the_server_hanging_up_mid_resultset_is_the_first_abnormal_close() {
    let Some(tshark) = oracle::tshark() else {
        return;
    };
    let f = common::fixture("stream-stall.pcap");
    let v = json(&["first-reset", "--json", f.to_str().unwrap()]);
    let a = &v["first_abnormal"];
    assert_eq!(a["frame"], 2029);
    assert_eq!(a["initiator"], "server");
    assert_eq!(a["flag"], "RST");
    assert_eq!(a["mysql_state"], "in_resultset");
    let reason = a["reason"].as_str().unwrap();
    assert!(
        reason.contains("mid-resultset of `select * from big.sbtest1`"),
        "{reason}"
    );
    // The earlier server FIN followed the client's COM_QUIT: normal, never the first abnormal close.
    assert_eq!(v["first_fin"]["frame"], 14);
    assert_eq!(v["first_fin"]["abnormal"], false);
    assert!(v["first_fin"]["reason"]
        .as_str()
        .unwrap()
        .contains("after COM_QUIT"));

    let m = json(&["mysql", "--json", f.to_str().unwrap()]);
    let incidents = m["incidents"].as_array().unwrap();
    let server_rst = incidents
        .iter()
        .find(|i| i["frame"] == 2029)
        .expect("incident at frame 2029");
    assert_eq!(server_rst["kind"], "server_rst_mid_resultset");
    assert_eq!(server_rst["query"], "select * from big.sbtest1");
    assert_eq!(server_rst["client"], "10.77.1.2:41452");
    assert!(server_rst["rows"].as_u64().unwrap() > 1000);
    // The request's frame is tshark's COM_QUERY on that connection.
    let req = tshark.lines([
        "-r",
        f.to_str().unwrap(),
        "-Y",
        "tcp.srcport==41452 && mysql.command==3",
        "-T",
        "fields",
        "-e",
        "frame.number",
    ]);
    assert_eq!(
        server_rst["request_frame"].as_u64().unwrap().to_string(),
        req[0]
    );
}

/// Story 2: sysbench with ignored errors: half the statements hit tables that do not exist.
#[test]
fn swallowed_1146_errors_are_counted_with_their_own_response_times() {
    let Some(tshark) = oracle::tshark() else {
        return;
    };
    let f = common::fixture("err1146-storm.pcap");
    let p = f.to_str().unwrap();
    let m = json(&["mysql", "--json", p]);
    let tshark_1146 = tshark.count(&f, "mysql.error_code==1146");
    assert!(tshark_1146 > 1000);
    assert_eq!(m["errors"]["1146"].as_u64().unwrap() as usize, tshark_1146);
    assert_eq!(
        m["rt_error_us"]["count"].as_u64().unwrap() as usize,
        tshark_1146
    );
    let detail = &m["error_details"][0];
    assert_eq!(detail["code"], 1146);
    assert_eq!(detail["sql_state"], "42S02");
    assert!(detail["messages"][0]
        .as_str()
        .unwrap()
        .contains("doesn't exist"));
    let queries = m["queries"].as_u64().unwrap();
    assert_eq!(queries as usize, tshark.count(&f, "mysql.command==3"));
    let (p50, p99) = (
        m["rt_us"]["p50"].as_f64().unwrap(),
        m["rt_us"]["p99"].as_f64().unwrap(),
    );
    assert!(p50 > 0.0 && p50 <= p99, "{p50} {p99}");
    // --errors-only keeps exactly the errors.
    let e = json(&["mysql", "--json", "--errors-only", p]);
    assert_eq!(e["queries"].as_u64().unwrap() as usize, tshark_1146);
}

/// Command and error counts equal tshark's MySQL dissector on every real capture. Aside: logins, which
/// tshark does not count as commands; tshark's "commands" above 0x21, its misparses of auth data and LOCAL
/// INFILE contents; its "error 65535", which is MariaDB's progress report; and port 6033 (a proxy), which
/// tshark must be told is MySQL (we recognise it from the greeting).
#[test]
fn mysql_counts_match_tshark_on_every_real_capture() {
    let Some(tshark) = oracle::tshark() else {
        return;
    };
    common::each_in_parallel(common::real_captures(), |path| {
        let p = path.to_str().unwrap();
        let m = json(&["mysql", "--json", p]);
        // tshark's MySQL command codes and error codes of each frame (a frame holding several MySQL
        // packets lists each, comma-separated), from the pass the tests comparing with tshark share
        // (ports 6033 and 3307 decoded as MySQL): the frames `mysql.command || mysql.error_code` selects.
        let mut tshark_cmds = std::collections::BTreeMap::<String, u64>::new();
        let mut tshark_errs = std::collections::BTreeMap::<String, u64>::new();
        let (command, error) = (
            common::TsharkPass::col("mysql.command"),
            common::TsharkPass::col("mysql.error_code"),
        );
        for row in common::tshark_pass(&tshark, &path).rows() {
            let (commands, errors) = (row[command], row[error]);
            for code in commands.split(',').map(str::trim).filter(|c| !c.is_empty()) {
                let code: u8 = code.parse().unwrap();
                if code <= 0x21 {
                    *tshark_cmds.entry(code.to_string()).or_default() += 1;
                }
            }
            for code in errors.split(',').map(str::trim).filter(|c| !c.is_empty()) {
                if code != "65535" {
                    *tshark_errs.entry(code.to_string()).or_default() += 1;
                }
            }
        }
        if path.ends_with("max-allowed-packet.pcap") {
            // tshark counts a command once its whole packet is in the capture, and this one's never is: a
            // 20 MB INSERT that the server answered with ERR 1153 (which tshark reads) and reset after 108
            // KB. pcapsleuth counts it, answered by that error.
            *tshark_cmds.entry("3".to_string()).or_default() += 1;
        }
        let mut ours = std::collections::BTreeMap::<String, u64>::new();
        for (name, n) in m["commands"].as_object().unwrap() {
            if name != "COM_CONNECT" {
                let code = command_code(name);
                *ours.entry(code.to_string()).or_default() += n.as_u64().unwrap();
            }
        }
        assert_eq!(ours, tshark_cmds, "{p}: commands by code");
        let errs: std::collections::BTreeMap<String, u64> = m["errors"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.as_u64().unwrap()))
            .collect();
        assert_eq!(errs, tshark_errs, "{p}: errors by code");
    });
}

fn command_code(name: &str) -> u8 {
    (0..=0x21u8)
        .find(|&b| pcapsleuth::mysql::Command::from_byte(b).name() == name)
        .unwrap_or_else(|| panic!("unknown command {name}"))
}

/// The records of a real capture that `keep(index, frame)` keeps, each rewritten by `f` (Ethernet + IPv4
/// without options: TCP at offset 34).
fn rewritten(
    path: &std::path::Path,
    keep: impl Fn(usize, &[u8]) -> bool,
    f: impl Fn(&mut [u8]),
) -> pcapsleuth::capture::Capture {
    let bytes = std::fs::read(path).unwrap();
    let cap = pcapsleuth::capture::Capture::open(path).unwrap();
    let mut out = bytes[..24].to_vec();
    let mut r = cap.reader_all();
    let mut i = 0;
    while let Some(rec) = r.next_record() {
        if keep(i, &rec.raw[16..]) {
            let mut raw = rec.raw.to_vec();
            f(&mut raw[16..]);
            out.extend_from_slice(&raw);
        }
        i += 1;
    }
    pcapsleuth::capture::Capture::from_vec(path.to_str().unwrap(), out).unwrap()
}

/// Is this Ethernet + IPv4 frame a TCP SYN (or SYN-ACK)?
fn is_syn(frame: &[u8]) -> bool {
    frame.get(47).is_some_and(|flags| flags & 0x02 != 0)
}

/// A peer's capture, or `None` (the skip said) without `../shared`.
fn peer_capture(name: &str) -> Option<std::path::PathBuf> {
    common::shared(&format!("external/peers/{name}"))
}

/// The MySQL report of `cap`, without the capture's span (which removing packets may change).
fn mysql_report(cap: &pcapsleuth::capture::Capture) -> serde_json::Value {
    let a = pcapsleuth::analysis::analyze(
        cap,
        &pcapsleuth::analysis::EngineOptions::default(),
        pcapsleuth::analysis::MysqlStatistics::default,
    );
    let mut v = serde_json::to_value(a.output.clone().report()).unwrap();
    v.as_object_mut().unwrap().remove("span_s");
    // Each server's requests per second are over that span too.
    for s in v["servers"].as_array_mut().unwrap() {
        s.as_object_mut().unwrap().remove("requests_per_s");
    }
    // And how much of each second it covers.
    for s in v["per_second"].as_array_mut().unwrap() {
        s.as_object_mut().unwrap().remove("covered_s");
    }
    // The error examples' frame numbers change with the packets a story removes; the rest of each example
    // (time, statement, message) does not.
    for e in v["error_details"].as_array_mut().unwrap() {
        for x in e["examples"].as_array_mut().unwrap() {
            let x = x.as_object_mut().unwrap();
            x.remove("request_frame");
            x.remove("response_frame");
        }
    }
    v
}

/// Proxies listen on 6033, 4000, 9913...: MySQL is recognised from its greeting, not its port.
#[test]
fn mysql_on_another_port_gives_the_same_report() {
    let storm = common::fixture("err1146-storm.pcap");
    let original = mysql_report(&rewritten(&storm, |_, _| true, |_| {}));
    let moved = mysql_report(&rewritten(
        &storm,
        |_, _| true,
        |frame| {
            for at in [34, 36] {
                if frame[at..at + 2] == 3306u16.to_be_bytes() {
                    frame[at..at + 2].copy_from_slice(&6033u16.to_be_bytes());
                }
            }
        },
    ));
    assert_eq!(original["queries"], 6191);
    // The same, but for the server endpoint the error examples name.
    let moved = moved.to_string();
    assert!(moved.contains("\"server\":\"10.77.0.1:6033\""), "{moved}");
    assert_eq!(
        moved.replace("10.77.0.1:6033\"", "10.77.0.1:3306\""),
        original.to_string()
    );
}

/// A capture started while connections were busy: no greeting, no handshake. The sessions are recognised
/// from the shape of a request and its response, and every later request is decoded.
#[test]
fn a_capture_that_starts_mid_connection_is_still_decoded() {
    let Some(tshark) = oracle::tshark() else {
        return;
    };
    let cut = rewritten(
        &common::fixture("err1146-storm.pcap"),
        |i, _| i >= 5000,
        |_| {},
    );
    let m = mysql_report(&cut);
    assert_eq!(m["sessions"], 4);
    // tshark, told the port is MySQL, on the same cut capture.
    let path = common::scratch("midstream", "cut.pcap");
    std::fs::write(&path, cut.bytes()).unwrap();
    let count =
        |filter: &str| tshark.count_with(&path, &["-d", "tcp.port==3306,mysql"], filter) as u64;
    let queries = count("mysql.command==3");
    let errors = count("mysql.error_code==1146");
    // At most the one request per connection that was in flight when the capture began is not counted.
    let ours_q = m["queries"].as_u64().unwrap();
    let ours_e = m["errors"]["1146"].as_u64().unwrap();
    assert!(
        ours_q <= queries && ours_q + 4 >= queries,
        "queries {ours_q} vs tshark {queries}"
    );
    assert!(
        ours_e <= errors && ours_e + 4 >= errors,
        "1146 {ours_e} vs tshark {errors}"
    );
}

/// A capture that began just after the TCP handshakes (a rotated file, a capture started a moment late)
/// still holds each greeting and login: with every SYN and SYN-ACK removed, the MySQL report is the whole
/// capture's, logins, compressed sessions and LOCAL INFILE included.
#[test]
fn connections_whose_syn_the_capture_missed_still_show_their_login() {
    for name in [
        "err1146-storm.pcap",
        "compressed.pcap",
        "prepared-full.pcap",
        "local-infile.pcap",
    ] {
        let f = common::fixture(name);
        let mut whole = mysql_report(&rewritten(&f, |_, _| true, |_| {}));
        let mut without_syn = mysql_report(&rewritten(&f, |_, frame| !is_syn(frame), |_| {}));
        assert!(
            whole["commands"]["COM_CONNECT"].as_u64().unwrap() > 0,
            "{name}"
        );
        // Connect times run from the SYN: every login has one in the whole capture, none without SYNs.
        let logins_timed = |r: &mut serde_json::Value| {
            let c = r.as_object_mut().unwrap().remove("connect").unwrap();
            c["login_us"]["count"].as_u64().unwrap()
        };
        assert_eq!(
            Some(logins_timed(&mut whole)),
            whole["commands"]["COM_CONNECT"].as_u64(),
            "{name}"
        );
        assert_eq!(logins_timed(&mut without_syn), 0, "{name}");
        assert_eq!(without_syn, whole, "{name}");
    }
    // DeepFlow's login refused with ERR 1040 "Too many connections", its SYNs removed.
    let Some(login_error) = peer_capture("deepflow/mysql-login-error.pcap") else {
        return;
    };
    let refused = mysql_report(&rewritten(&login_error, |_, frame| !is_syn(frame), |_| {}));
    assert_eq!(refused["commands"]["COM_CONNECT"], 1);
    assert_eq!(refused["errors"]["1040"], 1);
}

/// A capture cut in two (rotated files): each piece counts what it holds, and together they count every
/// request and error of the whole, wherever the cut falls: inside a large request (the first piece counts
/// it, still being sent), inside a long answer (the second recognises the connection at the client's next
/// command, after a whole turn of server segments), or between a greeting and its login (the second
/// recognises the connection from the login, or from an SSLRequest and the TLS handshake after it).
#[test]
fn a_capture_cut_in_two_counts_every_request_once() {
    let commands_and_errors = |r: &serde_json::Value| {
        let mut counts = std::collections::BTreeMap::new();
        for key in ["commands", "errors"] {
            for (k, n) in r[key].as_object().unwrap() {
                *counts.entry(format!("{key} {k}")).or_insert(0) += n.as_u64().unwrap();
            }
        }
        counts
    };
    for name in [
        "pcap2mysql-log/uncompressed-data-present.pcap",
        "pcap2mysql-log/type-error.pcap",
        "pcap2mysql-log/big-data.pcap",
        "deepflow/partial-packet-compressed.pcap",
        "deepflow/mysql-table-create.pcap",
        "percona-toolkit/tcpdump015.pcap",
        "arkime/mysql-tls.pcap",
    ] {
        let Some(f) = peer_capture(name) else {
            return;
        };
        let whole = commands_and_errors(&mysql_report(&rewritten(&f, |_, _| true, |_| {})));
        let cap = pcapsleuth::capture::Capture::open(&f).unwrap();
        let mut r = cap.reader_all();
        let mut frames = 0;
        while r.next_record().is_some() {
            frames += 1;
        }
        for cut in 1..frames {
            let first = mysql_report(&rewritten(&f, |i, _| i < cut, |_| {}));
            let second = mysql_report(&rewritten(&f, |i, _| i >= cut, |_| {}));
            let mut sum = commands_and_errors(&first);
            for (k, n) in commands_and_errors(&second) {
                *sum.entry(k).or_insert(0) += n;
            }
            assert_eq!(sum, whole, "{name} cut before frame {}", cut + 1);
        }
    }
}

/// Compressed sessions joined after their login (the greeting, the login and its OK, which negotiated the
/// compression, are not in the capture): compression is recognised from the first command, and every
/// request, error and response time is the whole capture's, the logins aside.
#[test]
fn compressed_sessions_joined_after_the_login_are_decoded() {
    let Some(tshark) = oracle::tshark() else {
        return;
    };
    let f = common::fixture("compressed.pcap");
    // Where each connection's first query is, from tshark (which follows compression from the handshake).
    let mut first_query: std::collections::HashMap<String, usize> = Default::default();
    let mut stream_of = Vec::new();
    for line in tshark.lines([
        "-r",
        f.to_str().unwrap(),
        "-T",
        "fields",
        "-e",
        "tcp.stream",
        "-e",
        "mysql.command",
    ]) {
        let (stream, command) = line.split_once('\t').unwrap_or((line.as_str(), ""));
        if command.split(',').any(|c| c == "3") {
            first_query
                .entry(stream.to_string())
                .or_insert(stream_of.len());
        }
        stream_of.push(stream.to_string());
    }
    assert_eq!(first_query.len(), 2, "two compressed sessions");
    let joined = mysql_report(&rewritten(
        &f,
        |i, _| first_query.get(&stream_of[i]).is_some_and(|&q| i >= q),
        |_| {},
    ));
    let mut joined = joined;
    let mut want = mysql_report(&rewritten(&f, |_, _| true, |_| {}));
    want["commands"]
        .as_object_mut()
        .unwrap()
        .remove("COM_CONNECT");
    // The logins (and so their times from the SYN) are not in the joined capture.
    want.as_object_mut().unwrap().remove("connect");
    joined.as_object_mut().unwrap().remove("connect");
    assert_eq!(joined, want);
    assert_eq!(joined["commands"]["COM_QUERY"], 8);
}

/// Story 1 again, through a proxy on port 6033 (socat, killed while the client read slowly): the proxy's
/// FIN in the middle of the resultset, recognised as MySQL from the greeting, not the port.
#[test]
fn a_proxy_hanging_up_mid_resultset_on_port_6033_is_the_first_abnormal_close() {
    let Some(tshark) = oracle::tshark() else {
        return;
    };
    let f = common::fixture("proxy-6033.pcap");
    let p = f.to_str().unwrap();
    let v = json(&["first-reset", "--json", p]);
    let a = &v["first_abnormal"];
    assert_eq!(a["initiator"], "server");
    assert_eq!(a["flag"], "FIN");
    assert_eq!(a["server"], "10.77.0.1:6033");
    assert_eq!(a["mysql_state"], "in_resultset");
    assert!(a["reason"]
        .as_str()
        .unwrap()
        .contains("mid-resultset of `select * from big.sbtest1`"));
    let client_port = a["client"]
        .as_str()
        .unwrap()
        .rsplit(':')
        .next()
        .unwrap()
        .to_string();
    let filter = format!("tcp.srcport==6033 && tcp.dstport=={client_port} && tcp.flags.fin==1");
    let fin = tshark.lines(["-r", p, "-Y", &filter, "-T", "fields", "-e", "frame.number"]);
    assert_eq!(a["frame"].as_u64().unwrap().to_string(), fin[0]);
}

/// A capture from a mirror point (VXLAN on UDP 4789 seen on the underlay, as AWS VPC Traffic Mirroring
/// delivers it) reads like one taken at the server: connections at their inner addresses, every command and
/// error, and the first FIN with who sent it, checked against tshark's reading of the inner packets.
#[test]
fn a_vxlan_mirror_capture_reads_like_one_at_the_server() {
    let Some(tshark) = oracle::tshark() else {
        return;
    };
    let f = common::fixture("vxlan-mirror.pcap");
    let p = f.to_str().unwrap();
    let fin = &json(&["first-reset", "--json", p])["first_fin"];
    let tshark_fin = tshark.lines([
        "-r",
        p,
        "-Y",
        "tcp.flags.fin==1",
        "-T",
        "fields",
        "-e",
        "frame.number",
        "-e",
        "ip.src",
        "-e",
        "tcp.srcport",
    ]);
    let first: Vec<&str> = tshark_fin[0].split('\t').collect();
    // tshark lists the outer and then the inner source address.
    let inner_src = first[1].rsplit(',').next().unwrap();
    assert_eq!(fin["frame"].as_u64().unwrap().to_string(), first[0]);
    assert_eq!(fin["client"], format!("{inner_src}:{}", first[2]));
    assert_eq!(fin["server"], "10.88.0.1:3306");
    assert_eq!(fin["initiator"], "client");
    let m = json(&["mysql", "--json", p]);
    assert_eq!(m["sessions"], 4);
    assert_eq!(
        m["errors"]["1146"].as_u64().unwrap() as usize,
        tshark.count(&f, "mysql.error_code == 1146")
    );
}

/// Compressed protocol sessions are decoded through the compression: commands, the ERR 1146 and response
/// times of every query (tshark counts the commands but cannot unpack the compressed responses).
#[test]
fn compressed_sessions_are_decoded() {
    let m = json(&[
        "mysql",
        "--json",
        common::fixture("compressed.pcap").to_str().unwrap(),
    ]);
    assert_eq!(m["commands"]["COM_QUERY"], 8);
    assert_eq!(m["errors"]["1146"], 1);
    assert_eq!(m["rt_us"]["count"], 8);
}

/// Prepared statements: every COM_STMT_EXECUTE is grouped under the SQL it was prepared with.
#[test]
fn executes_of_prepared_statements_carry_their_sql() {
    let m = json(&[
        "mysql",
        "--json",
        common::fixture("prepared-full.pcap").to_str().unwrap(),
    ]);
    let executes = m["commands"]["COM_STMT_EXECUTE"].as_u64().unwrap();
    let grouped: u64 = m["statements"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["count"].as_u64().unwrap())
        .sum();
    // PREPARE requests are statements too; every EXECUTE must be among the groups.
    assert!(
        grouped >= executes,
        "{grouped} grouped vs {executes} executes"
    );
    assert!(m["statements"][0]["fingerprint"]
        .as_str()
        .unwrap()
        .starts_with("select c from sbtest"));
}

/// A busy compressed connection (sysbench oltp_read_only with `--mysql-compression=on`): every query is
/// read from its stored payload and answered from zlib-inflated resultsets, so the rows counted per
/// statement are the rows the database holds. tshark reads each query's text (the client's commands are
/// stored, not deflated) but cannot inflate the answers: what each query must return follows from its text
/// (the tables hold ids 1 to 10,000: `id=N` is one row, `BETWEEN a AND b` is b - a + 1 rows, `SUM(k)` one).
#[test]
fn a_busy_compressed_connection_is_decoded_to_every_row() {
    let Some(tshark) = oracle::tshark() else {
        return;
    };
    let f = common::fixture("compressed-busy.pcap");
    // The kind of a statement and its table, the same for tshark's text and our fingerprint.
    let class = |q: &str| {
        let q = q.to_lowercase();
        let table = q
            .split_whitespace()
            .find(|w| w.starts_with("sbtest"))
            .unwrap_or("")
            .to_string();
        let kind = match () {
            _ if q.starts_with("select distinct") => "distinct",
            _ if q.starts_with("select sum") => "sum",
            _ if q.contains("order by") => "range ordered",
            _ if q.contains("between") => "range",
            _ if q.starts_with("select") => "point",
            _ => "other",
        };
        (kind.to_string(), table, q)
    };
    let mut want_count = std::collections::BTreeMap::new();
    let mut want_rows = std::collections::BTreeMap::new();
    for line in tshark.lines([
        "-r",
        f.to_str().unwrap(),
        "-Y",
        "mysql.command == 3",
        "-T",
        "fields",
        "-e",
        "mysql.query",
    ]) {
        let (kind, table, q) = class(&line);
        let bound = |after: &str| -> Option<u64> {
            let rest = q.split(after).nth(1)?;
            rest.split_whitespace().next()?.parse().ok()
        };
        let rows = match kind.as_str() {
            "point" | "sum" => Some(1),
            "range" | "range ordered" => {
                Some(bound(" and ").unwrap() - bound("between ").unwrap() + 1)
            }
            _ => None, // DISTINCT c: as many rows as distinct values, not known from the text.
        };
        *want_count
            .entry((kind.clone(), table.clone()))
            .or_insert(0u64) += 1;
        if let Some(rows) = rows {
            *want_rows.entry((kind, table)).or_insert(0u64) += rows;
        }
    }
    let report = mysql_report(&pcapsleuth::capture::Capture::open(&f).unwrap());
    let (mut count, mut rows) = (
        std::collections::BTreeMap::new(),
        std::collections::BTreeMap::new(),
    );
    for g in report["statements"].as_array().unwrap() {
        let (kind, table, _) = class(g["fingerprint"].as_str().unwrap());
        *count.entry((kind.clone(), table.clone())).or_insert(0u64) += g["count"].as_u64().unwrap();
        if want_rows.contains_key(&(kind.clone(), table.clone())) {
            *rows.entry((kind, table)).or_insert(0u64) += g["rows"].as_u64().unwrap();
        }
    }
    assert_eq!(count, want_count);
    assert_eq!(rows, want_rows);
    // Every query answered; sysbench's own report (fixtures/lab/compressed-busy.client.log) counts 2,338
    // reads and 334 other queries.
    assert_eq!(
        report["requests"]["answered"],
        want_count.values().sum::<u64>()
    );
    assert_eq!(report["commands"]["COM_QUERY"], 2338 + 334);
    assert!(report["errors"].as_object().unwrap().is_empty());
}
