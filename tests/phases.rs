//! Request phases on real captures: the upload (first to last request byte), the server (last request
//! byte to first response byte) and the download (first to last response byte), their boundaries
//! checked against tshark's frame times.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;

use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::Field;
use pcapsleuth_testkit::oracle::{self, Tshark};
use serde_json::Value;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// (frame, epoch seconds, source port, TCP payload length, RST) of every frame tshark selects with
/// `filter`.
fn frames(tshark: &Tshark, f: &Path, filter: &str) -> Vec<(u64, f64, u16, u64, bool)> {
    tshark
        .lines([
            "-r",
            s(f),
            "-Y",
            filter,
            "-T",
            "fields",
            "-e",
            "frame.number",
            "-e",
            "frame.time_epoch",
            "-e",
            "tcp.srcport",
            "-e",
            "tcp.len",
            "-e",
            "tcp.flags.reset",
        ])
        .iter()
        .map(|l| {
            let c: Vec<&str> = l.split('\t').collect();
            (
                c[0].parse().unwrap(),
                c[1].parse().unwrap(),
                c[2].parse().unwrap(),
                c[3].parse().unwrap(),
                c[4] == "1" || c[4] == "True",
            )
        })
        .collect()
}

/// Microseconds between two epoch times, as the capture stamps them (to the microsecond).
fn us(from: f64, to: f64) -> f64 {
    ((to - from) * 1e6).round()
}

fn close(a: &Value, b: f64) -> bool {
    (a.as_f64().unwrap() - b).abs() <= 1.0
}

/// The slowest requests of `mysql --slower-than 0s --json`.
fn slow(f: &Path) -> Vec<Value> {
    let m = common::json(&["mysql", "--json", "--slower-than", "0s", s(f)]);
    m["slow_requests"].as_array().unwrap().clone()
}

#[test]
fn local_infile_uploads_its_file_after_the_server_asked_for_it_and_the_rest_is_the_servers() {
    let Some(tshark) = oracle::tshark() else {
        return;
    };
    let f = common::fixture("local-infile.pcap");
    let query = frames(&tshark, &f, "mysql.query matches \"(?i)local infile\"");
    let (q, q_ts, client, ..) = query[0];
    // After the query: the server asks for the file, the client sends it (and the empty packet that
    // ends it), the server reports progress and answers OK; then the next query.
    let after: Vec<_> = frames(&tshark, &f, &format!("frame.number > {q} && tcp.len > 0"));
    let asked = after.iter().find(|x| x.2 == 3306).unwrap();
    let file = after.iter().find(|x| x.2 == client).unwrap();
    let next_query = after
        .iter()
        .find(|x| x.2 == client && x.0 > file.0)
        .unwrap();
    let ok = after
        .iter()
        .rfind(|x| x.2 == 3306 && x.0 < next_query.0)
        .unwrap();
    assert!(asked.0 < file.0 && file.0 < ok.0);
    let r = slow(&f)
        .into_iter()
        .find(|r| r["request_frame"] == q)
        .unwrap();
    let p = &r["phases"];
    // The response began (the server's request for the file) before the request's last byte: the
    // upload runs to the file's end, the server's time from there to the OK, no download.
    assert!(close(&p["upload_us"], us(q_ts, file.1)), "{r}");
    assert!(close(&p["server_us"], us(file.1, ok.1)), "{r}");
    assert_eq!(p["download_us"], 0.0, "{r}");
    assert_eq!(p["download_complete"], true);
    assert!(close(
        &(r["time_s"].as_f64().unwrap() * 1e6).into(),
        us(q_ts, ok.1)
    ));
    // The bytes: the query's and the file's packets, the server's request for it, its progress report
    // and its OK (every MySQL byte of those frames).
    assert_eq!(p["request_bytes"], query[0].3 + file.3, "{r}");
    let answered: u64 = after
        .iter()
        .filter(|x| x.2 == 3306 && x.0 <= ok.0)
        .map(|x| x.3)
        .sum();
    assert_eq!(p["response_bytes"], answered, "{r}");
    // The export's row says the same, with the frame of the request's last byte.
    let out = common::scratch("phases", "local-infile");
    let _ = std::fs::remove_dir_all(&out);
    common::text(&["export", "--parquet", s(&out), s(&f)]);
    let row = transaction_row(&out.join("transactions"), q);
    let int = |name: &str| match &row[name] {
        Field::Long(n) => *n as u64,
        other => panic!("{name}: {other:?}"),
    };
    let num = |name: &str| match &row[name] {
        Field::Double(d) => *d,
        other => panic!("{name}: {other:?}"),
    };
    assert_eq!(int("last_request_frame"), file.0);
    assert_eq!(int("first_response_frame"), asked.0);
    assert_eq!(int("response_frame"), ok.0);
    assert!((num("upload_us") - us(q_ts, file.1)).abs() <= 1.0);
    assert!((num("server_us") - us(file.1, ok.1)).abs() <= 1.0);
    assert_eq!(num("download_us"), 0.0);
    assert!((num("upload_us") + num("server_us") + num("download_us") - num("rt_us")).abs() <= 1.0);
}

/// The `transactions` row (column name to value) of the request at `frame`, from the Parquet files
/// under `dir`.
fn transaction_row(dir: &Path, frame: u64) -> BTreeMap<String, Field> {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            if p.extension().is_none_or(|x| x != "parquet") {
                continue;
            }
            let reader = SerializedFileReader::new(std::fs::File::open(&p).unwrap()).unwrap();
            for row in reader.get_row_iter(None).unwrap() {
                let row: BTreeMap<String, Field> = row
                    .unwrap()
                    .get_column_iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                if row.get("request_frame") == Some(&Field::Long(frame as i64)) {
                    return row;
                }
            }
        }
    }
    panic!("no transactions row of request frame {frame} under {dir:?}")
}

#[test]
fn a_stalled_resultset_spends_its_wait_downloading() {
    let Some(tshark) = oracle::tshark() else {
        return;
    };
    let f = common::fixture("stream-stall.pcap");
    let m = common::json(&["mysql", "--json", s(&f)]);
    let incidents = m["incidents"].as_array().unwrap();
    assert_eq!(incidents.len(), 2);
    for i in incidents {
        let client: u16 = i["client"]
            .as_str()
            .unwrap()
            .rsplit(':')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        let conn = frames(
            &tshark,
            &f,
            // Resent segments carry no new byte: the download ends at a byte's first arrival.
            &format!(
                "tcp.port == {client} && (tcp.len > 0 || tcp.flags.reset == 1) \
                 && !tcp.analysis.retransmission"
            ),
        );
        let q = i["request_frame"].as_u64().unwrap();
        let close = i["frame"].as_u64().unwrap();
        let request = conn.iter().find(|x| x.0 == q).unwrap();
        let answer: Vec<_> = conn
            .iter()
            .filter(|x| x.2 == 3306 && x.0 > q && x.0 < close && x.3 > 0)
            .collect();
        let (first, last) = (answer[0], answer[answer.len() - 1]);
        let p = &i["phases"];
        assert_eq!(p["upload_us"], 0.0, "{i}");
        assert!(self::close(&p["server_us"], us(request.1, first.1)), "{i}");
        assert!(self::close(&p["download_us"], us(first.1, last.1)), "{i}");
        assert_eq!(p["download_complete"], false);
        assert_eq!(p["request_bytes"], request.3);
        assert_eq!(p["response_bytes"], i["bytes"]);
        // Nearly all of the wait went into the download, which the close cut off.
        let download_s = p["download_us"].as_f64().unwrap() / 1e6;
        assert!(download_s > 0.38 * i["waited_s"].as_f64().unwrap(), "{i}");
    }
    let text = common::flat(&common::text(&["mysql", s(&f)]));
    assert!(
        text.contains(
            "phases: upload 0 µs (30 bytes) + server 335 µs + download 7.64 s (3.19 MiB) so far"
        ),
        "{text}"
    );
}

#[test]
fn an_error_that_answers_a_request_still_being_sent_ends_its_upload() {
    let Some(tshark) = oracle::tshark() else {
        return;
    };
    let f = common::fixture("max-allowed-packet.pcap");
    let err = frames(&tshark, &f, "mysql.error_code == 1153");
    let (err_frame, err_ts, ..) = err[0];
    let r = slow(&f)
        .into_iter()
        .find(|r| r["statement"].as_str().unwrap().starts_with("INSERT"))
        .unwrap();
    let sent = frames(
        &tshark,
        &f,
        &format!("frame.number == {}", r["request_frame"]),
    );
    let p = &r["phases"];
    // The 20 MB INSERT was still being sent when ERR 1153 came: the upload ends there, no server time,
    // no download (the ERR is one segment).
    assert!(
        close(&p["upload_us"], us(sent[0].1, err_ts)),
        "{r} {err_frame}"
    );
    assert_eq!(p["server_us"], 0.0);
    assert_eq!(p["download_us"], 0.0);
    assert!(p["request_bytes"].as_u64().unwrap() > 0);
}

#[test]
fn a_slow_query_spends_its_time_in_the_server_and_the_phases_add_up_per_statement() {
    for name in ["rt-bimodal.pcap", "lock-wait-timeout.pcap"] {
        let f = common::fixture(name);
        let m = common::json(&["mysql", "--json", s(&f)]);
        for g in m["statements"].as_array().unwrap() {
            let p = &g["phases"];
            assert_eq!(p["requests"], g["answered"], "{name} {g}");
            assert_eq!(p["downloads"], g["rt_us"]["count"], "{name} {g}");
            // Each request's phases add up to its response time.
            let sum = p["upload_us"].as_f64().unwrap()
                + p["server_us"].as_f64().unwrap()
                + p["download_us"].as_f64().unwrap();
            assert!(
                (sum - g["total_us"].as_f64().unwrap()).abs() < 1.0,
                "{name} {g}"
            );
        }
        // The slow group's time is the server's.
        let slow = m["statements"]
            .as_array()
            .unwrap()
            .iter()
            .max_by(|a, b| {
                a["rt_us"]["mean"]
                    .as_f64()
                    .unwrap()
                    .total_cmp(&b["rt_us"]["mean"].as_f64().unwrap())
            })
            .unwrap();
        let p = &slow["phases"];
        assert!(
            p["server_us"].as_f64().unwrap() > 0.99 * slow["total_us"].as_f64().unwrap(),
            "{name} {slow}"
        );
    }
    let text = common::flat(&common::text(&[
        "mysql",
        "--slower-than",
        "1s",
        s(&common::fixture("lock-wait-timeout.pcap")),
    ]));
    assert!(
        text.contains(
            "slowest requests (--slower-than; response time = upload + server + download):"
        ),
        "{text}"
    );
    assert!(
        text.contains("answered in 1.01 s = upload 0 µs ("),
        "{text}"
    );
}
