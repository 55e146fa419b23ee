//! The path over time from TCP's own timing (`rate`'s per-interval round trips, duplicate ACKs,
//! retransmissions by kind, zero-window time), checked against tshark's analysis of the same captures.

use std::collections::BTreeMap;
use std::path::Path;

use crate::common;

use pcapsleuth_testkit::oracle::{self, Tshark};
use serde_json::Value;

fn rate(file: &Path, interval: &str) -> Value {
    common::json(&[
        "rate",
        "--json",
        "--interval",
        interval,
        file.to_str().unwrap(),
    ])
}

/// tshark's `tcp.analysis.ack_rtt` samples of `file`: each ACK's time (epoch seconds, as tshark writes
/// it), whether the server (on `server_port`) sent it, and the round trip in seconds.
fn ack_rtt_rows(tshark: &Tshark, file: &Path, server_port: &str) -> Vec<(String, bool, f64)> {
    tshark
        .lines([
            "-r",
            file.to_str().unwrap(),
            "-Y",
            "tcp.analysis.ack_rtt",
            "-T",
            "fields",
            "-e",
            "frame.time_epoch",
            "-e",
            "tcp.srcport",
            "-e",
            "tcp.analysis.ack_rtt",
        ])
        .iter()
        .map(|line| {
            let f: Vec<&str> = line.split('\t').collect();
            (f[0].to_string(), f[1] == server_port, f[2].parse().unwrap())
        })
        .collect()
}

/// tshark's `tcp.analysis.ack_rtt` samples by whole second of the ACK and by who sent the ACK (`true`:
/// the server, on `server_port`), in seconds.
fn ack_rtts(tshark: &Tshark, file: &Path, server_port: &str) -> BTreeMap<(i64, bool), Vec<f64>> {
    let mut out: BTreeMap<(i64, bool), Vec<f64>> = BTreeMap::new();
    for (time, by_server, rtt) in ack_rtt_rows(tshark, file, server_port) {
        let t: f64 = time.parse().unwrap();
        out.entry((t.floor() as i64, by_server))
            .or_default()
            .push(rtt);
    }
    for v in out.values_mut() {
        v.sort_by(f64::total_cmp);
    }
    out
}

/// The round trip of an interval one way: samples, minimum and median (µs), or none.
fn rtt(point: &Value, key: &str) -> Option<(u64, f64, f64)> {
    let s = &point[key];
    (!s.is_null()).then(|| {
        (
            s["count"].as_u64().unwrap(),
            s["min"].as_f64().unwrap(),
            s["p50"].as_f64().unwrap(),
        )
    })
}

/// Without retransmissions, every interval's round trips each way are tshark's `ack_rtt` samples of the
/// ACKs in it: the same count, the same minimum, and a median at most one coarse bin (6.25%) above the
/// exact one. At a client capture of a path with a 2 ms delay line on server->client, the round trip to
/// the server carries it; at the server's capture of the same run, the round trip to the client does.
#[test]
fn round_trips_are_tsharks_ack_rtt_in_every_interval() {
    let Some(tshark) = oracle::tshark() else {
        return;
    };
    for name in [
        "diff-path-delay.a.pcap",
        "diff-path-delay.b.pcap",
        "diff-path-delay-server.b.pcap",
    ] {
        let f = common::fixture(name);
        let expected = ack_rtts(&tshark, &f, "3306");
        let r = rate(&f, "1s");
        let mut intervals = 0;
        for p in r["total"].as_array().unwrap() {
            let second = p["start"].as_f64().unwrap() as i64;
            for (key, by_server) in [("rtt_to_server_us", true), ("rtt_to_client_us", false)] {
                let want = expected.get(&(second, by_server));
                match (rtt(p, key), want) {
                    (None, None) => {}
                    (Some((n, min, p50)), Some(v)) => {
                        assert_eq!(n as usize, v.len(), "{name} {second} {key}");
                        assert!(
                            (min - v[0] * 1e6).abs() < 1.0,
                            "{name} {second} {key}: {min}"
                        );
                        let exact = v[v.len().div_ceil(2) - 1] * 1e6;
                        assert!(
                            p50 >= exact - 1.0 && p50 <= exact * 1.0625 + 1.0,
                            "{name} {second} {key}: p50 {p50} against {exact}"
                        );
                        intervals += 1;
                    }
                    (got, want) => panic!("{name} {second} {key}: {got:?} against {want:?}"),
                }
            }
        }
        assert_eq!(intervals, 8, "{name}: four seconds, both ways");
    }
    // The delay line, seen from each end: ~0.06 ms without it, ~2.3 ms with it, in every whole second.
    for (name, key, low) in [
        ("diff-path-delay.a.pcap", "rtt_to_server_us", true),
        ("diff-path-delay.b.pcap", "rtt_to_server_us", false),
        ("diff-path-delay-server.a.pcap", "rtt_to_client_us", true),
        ("diff-path-delay-server.b.pcap", "rtt_to_client_us", false),
    ] {
        let r = rate(&common::fixture(name), "1s");
        for p in r["total"].as_array().unwrap() {
            let (_, _, p50) = rtt(p, key).unwrap();
            if low {
                assert!(p50 < 200.0, "{name}: {p50}");
            } else {
                assert!((2_000.0..2_600.0).contains(&p50), "{name}: {p50}");
            }
        }
    }
}

/// Where segments were resent, their ACKs give no round trip (Karn's algorithm: the ACK cannot say which
/// copy it answers) where tshark still times them: fewer samples, by at most the resends; resends are
/// classed, each kind counted, and the kinds add up to the interval's resends.
#[test]
fn resent_segments_give_no_round_trip_and_every_resend_has_a_kind() {
    let Some(tshark) = oracle::tshark() else {
        return;
    };
    for name in [
        "two-point-path.client.pcap",
        "two-point-path.server.pcap",
        "path-lost.pcap",
        "stream-stall.pcap",
    ] {
        let f = common::fixture(name);
        let expected: usize = ack_rtts(&tshark, &f, "3306").values().map(Vec::len).sum();
        let resent = tshark.count(&f, "tcp.analysis.retransmission");
        let r = rate(&f, "100ms");
        let (mut samples, mut resends) = (0, 0);
        for p in r["total"].as_array().unwrap() {
            for key in ["rtt_to_server_us", "rtt_to_client_us"] {
                samples += rtt(p, key).map_or(0, |(n, _, _)| n as usize);
            }
            for dir in ["c2s", "s2c"] {
                let k = &p[format!("{dir}_resends")];
                let kinds: u64 = ["fast_retransmit", "timeout", "tail_loss_probe", "other"]
                    .iter()
                    .map(|x| k[x].as_u64().unwrap())
                    .sum();
                assert_eq!(
                    kinds,
                    p[format!("{dir}_retrans")].as_u64().unwrap(),
                    "{name} {p}"
                );
                resends += kinds as usize;
            }
        }
        assert_eq!(resends, resent, "{name}");
        assert!(
            samples <= expected && samples + resent >= expected,
            "{name}: {samples} samples, tshark {expected}, {resent} resent"
        );
    }
    // path-lost: the path to the client dies as a resultset begins; the server's three resends come
    // after silences of 200 ms and more (its retransmission timer doubling).
    let r = rate(&common::fixture("path-lost.pcap"), "1s");
    let timeouts: u64 = r["total"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["s2c_resends"]["timeout"].as_u64().unwrap())
        .sum();
    assert_eq!(timeouts, 3);
}

/// Duplicate ACKs are Wireshark's `tcp.analysis.duplicate_ack`, each way (a peer's capture with 22 each
/// way), and no fixture's resends are fast retransmits where tshark finds none.
#[test]
fn duplicate_acks_are_tsharks() {
    let Some(tshark) = oracle::tshark() else {
        return;
    };
    let Some(f) = common::shared("external/peers/deepflow/mysql-statement.pcap") else {
        return;
    };
    let r = rate(&f, "1s");
    for (dir, filter) in [
        ("c2s", "tcp.analysis.duplicate_ack && tcp.dstport == 30130"),
        ("s2c", "tcp.analysis.duplicate_ack && tcp.srcport == 30130"),
    ] {
        let got: u64 = r["total"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p[format!("{dir}_dup_acks")].as_u64().unwrap())
            .sum();
        assert_eq!(got as usize, tshark.count(&f, filter), "{dir}");
        assert!(got > 0);
    }
}

/// A resend the receiver reports as already received (a D-SACK, RFC 2883) is counted spurious, against
/// the direction that resent it, as often as tshark finds a D-SACK from the other side: stream-stall's
/// slow readers hold their ACKs back and the server resends for nothing (82), tail-drops' client D-SACKs
/// the probes that raced its late ACKs (15).
#[test]
fn spurious_resends_are_the_receivers_d_sacks() {
    let Some(tshark) = oracle::tshark() else {
        return;
    };
    for (fixture, at_least) in [("stream-stall.pcap", 80), ("tail-drops.pcap", 10)] {
        let f = common::fixture(fixture);
        let r = rate(&f, "1s");
        let mut total = 0;
        for (dir, receiver) in [
            ("c2s", "tcp.srcport == 3306"),
            ("s2c", "tcp.dstport == 3306"),
        ] {
            let got: u64 = r["total"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p[format!("{dir}_resends")]["spurious"].as_u64().unwrap())
                .sum();
            let filter = format!("tcp.options.sack.dsack && {receiver}");
            assert_eq!(got as usize, tshark.count(&f, &filter), "{fixture} {dir}");
            total += got;
        }
        assert!(total >= at_least, "{fixture}: {total} spurious");
    }
}

/// stream-stall: the stalled reader advertises a zero window from frame 1358 (1.6232 s) until the server
/// resets it (3.5856 s), and the other reader's window closes and opens as it reads: the client's
/// zero-window time is the spells tshark's window fields give (a spell still open when a connection
/// ends lasts until its last packet), and the server never advertises one.
#[test]
fn zero_window_time_is_the_spells_tshark_shows() {
    let Some(tshark) = oracle::tshark() else {
        return;
    };
    let f = common::fixture("stream-stall.pcap");
    let mut open: BTreeMap<String, f64> = BTreeMap::new();
    let mut last: BTreeMap<String, f64> = BTreeMap::new();
    let mut total = 0.0;
    for line in tshark.lines([
        "-r",
        f.to_str().unwrap(),
        "-T",
        "fields",
        "-e",
        "tcp.stream",
        "-e",
        "frame.time_epoch",
        "-e",
        "tcp.srcport",
        "-e",
        "tcp.window_size_value",
        "-e",
        "tcp.flags.str",
    ]) {
        let v: Vec<&str> = line.split('\t').collect();
        let (stream, t) = (v[0].to_string(), v[1].parse::<f64>().unwrap());
        last.insert(stream.clone(), t);
        if v[2] == "3306" {
            continue;
        }
        let control = v[4].contains('S') || v[4].contains('F') || v[4].contains('R');
        if v[3] == "0" && !control {
            open.entry(stream).or_insert(t);
        } else if v[3] != "0" && !v[4].contains('R') {
            if let Some(since) = open.remove(&stream) {
                total += t - since;
            }
        }
    }
    for (stream, since) in open {
        total += last[&stream] - since;
    }
    let r = rate(&f, "100ms");
    let (mut client, mut server) = (0.0, 0.0);
    for p in r["total"].as_array().unwrap() {
        client += p["client_zero_window_s"].as_f64().unwrap();
        server += p["server_zero_window_s"].as_f64().unwrap();
    }
    assert!((client - total).abs() < 1e-5, "{client} against {total}");
    assert!(total > 1.96, "{total}");
    assert_eq!(server, 0.0);
    assert!(tshark.count(&f, "tcp.analysis.zero_window") > 0);
}

/// tshark's `tcp.analysis.ack_rtt` samples by tenth of a second of the ACK and by who sent it (`true`:
/// the server, on `server_port`): the count and the smallest, in µs.
fn ack_rtts_per_100ms(
    tshark: &Tshark,
    file: &Path,
    server_port: &str,
) -> BTreeMap<(i64, bool), (usize, f64)> {
    let mut out: BTreeMap<(i64, bool), (usize, f64)> = BTreeMap::new();
    for (time, by_server, rtt) in ack_rtt_rows(tshark, file, server_port) {
        // Tenths of a second, from the decimal text (a float's floor can fall a bin short).
        let (whole, frac) = time.split_once('.').unwrap_or((&time, "0"));
        let tenth = whole.parse::<i64>().unwrap() * 10 + i64::from(frac.as_bytes()[0] - b'0');
        let e = out.entry((tenth, by_server)).or_insert((0, f64::INFINITY));
        e.0 += 1;
        e.1 = e.1.min(rtt * 1e6);
    }
    out
}

/// `rt --per-interval` gives each row the round trips each way that `rate` shows for its server and
/// interval: in every 1 s row of the delay-line runs, as many samples as tshark's `ack_rtt` of the ACKs
/// in that second, the same minimum, and `rate`'s median for the server. Where an interval has no sample
/// one way (logins of connect-burst, at 100 ms), the row says so: null in JSON, "unknown" in the text,
/// and tshark has no `ack_rtt` there either.
#[test]
fn rt_per_interval_rows_carry_the_round_trip_each_way() {
    let Some(tshark) = oracle::tshark() else {
        return;
    };
    for name in ["diff-path-delay.b.pcap", "diff-path-delay-server.b.pcap"] {
        let f = common::fixture(name);
        let expected = ack_rtts(&tshark, &f, "3306");
        let rt = common::json(&["rt", "--per-interval", "--json", f.to_str().unwrap()]);
        assert_eq!(rt["rtt_timed"], true);
        let rate = rate(&f, "1s");
        let rows = rt["per_interval"].as_array().unwrap();
        assert!(rows.len() >= 4, "{name}: {}", rows.len());
        for row in rows {
            let server = row["server"].as_str().unwrap();
            let start = row["start"].as_f64().unwrap();
            let point = rate["servers"][server]
                .as_array()
                .unwrap()
                .iter()
                .find(|p| p["start"].as_f64() == Some(start))
                .unwrap();
            for (key, by_server) in [("rtt_to_server_us", true), ("rtt_to_client_us", false)] {
                assert_eq!(row[key], point[key], "{name} {start} {key}: rate's figures");
                let (n, min, _) = rtt(row, key).unwrap();
                let want = &expected[&(start as i64, by_server)];
                assert_eq!(n as usize, want.len(), "{name} {start} {key}");
                assert!((min - want[0] * 1e6).abs() < 1.0, "{name} {start} {key}");
            }
        }
        // The delay line is on the path's server->client leg: at the client it is in the round trip to
        // the server, at the server in the round trip to the client.
        let text = common::text(&["rt", "--per-interval", f.to_str().unwrap()]);
        assert!(text.contains("RTT srv/cli"), "{text}");
        let delayed = if name.contains("server") {
            "rtt_to_client_us"
        } else {
            "rtt_to_server_us"
        };
        for row in rows {
            let (_, _, p50) = rtt(row, delayed).unwrap();
            assert!((2_000.0..2_600.0).contains(&p50), "{name}: {p50}");
        }
    }

    let f = common::fixture("connect-burst.pcap");
    let expected = ack_rtts_per_100ms(&tshark, &f, "3306");
    let args = ["rt", "--per-interval", "--interval", "100ms"];
    let rt = common::json(&[&args[..], &["--json", f.to_str().unwrap()]].concat());
    let mut unknown = 0;
    for row in rt["per_interval"].as_array().unwrap() {
        let tenth = (row["start"].as_f64().unwrap() * 10.0).round() as i64;
        for (key, by_server) in [("rtt_to_server_us", true), ("rtt_to_client_us", false)] {
            match (rtt(row, key), expected.get(&(tenth, by_server))) {
                (None, None) => unknown += 1,
                (Some((n, min, _)), Some(&(want_n, want_min))) => {
                    assert_eq!(n as usize, want_n, "{tenth} {key}");
                    assert!(
                        (min - want_min).abs() < 1.0,
                        "{tenth} {key}: {min} {want_min}"
                    );
                }
                (got, want) => panic!("{tenth} {key}: {got:?} against {want:?}"),
            }
        }
    }
    assert!(
        unknown > 0,
        "connect-burst has intervals without a round trip"
    );
    let text = common::text(&[&args[..], &[f.to_str().unwrap()]].concat());
    assert!(text.contains("unknown/unknown"), "{text}");
}

/// Resends classed as the sender's own kernel counted them. The switch dropped 3% of the server's data
/// packets at random while sysbench ran (fixtures/lab/record-tail-drops.sh); `nstat` in the server's
/// namespace counted, over the same interval, its loss probes, its retransmission timeouts and its fast
/// (SACK/RACK) retransmits (fixtures/lab/tail-drops.nstat). With one segment in flight Linux's probe
/// timeout is 2 round trips plus 200 ms, capped at the retransmission timeout: probes and timeouts both
/// come after ~200 ms of silence here, and only which resend of an episode it is tells them apart.
#[test]
fn tail_loss_probes_and_timeouts_are_the_senders_own_count() {
    let nstat = std::fs::read_to_string(common::fixture("lab/tail-drops.nstat")).unwrap();
    let counter = |name: &str| -> u64 {
        nstat
            .lines()
            .find_map(|l| {
                let mut w = l.split_whitespace();
                (w.next() == Some(name)).then(|| w.next().unwrap().parse().unwrap())
            })
            .unwrap_or_else(|| panic!("{name} not in tail-drops.nstat"))
    };
    let (probes, timeouts, fast) = (
        counter("TcpExtTCPLossProbes"),
        counter("TcpExtTCPTimeouts"),
        counter("TcpExtTCPFastRetrans"),
    );
    let r = rate(&common::fixture("tail-drops.pcap"), "1s");
    let kind = |k: &str| -> u64 {
        r["total"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["s2c_resends"][k].as_u64().unwrap())
            .sum()
    };
    let (tlp, rto) = (kind("tail_loss_probe"), kind("timeout"));
    // Every resend after a silence is a probe or a timeout, as many as the kernel sent.
    assert_eq!(tlp + rto, probes + timeouts, "tlp {tlp} rto {rto}");
    // The kernel holds a probe back from state the wire shows only in part (a recovery under way, an
    // earlier probe unresolved): one resend may go either way.
    assert!(
        tlp.abs_diff(probes) <= 1 && rto.abs_diff(timeouts) <= 1,
        "tlp {tlp} rto {rto}, kernel: {probes} probes, {timeouts} timeouts"
    );
    assert!(
        tlp > 10 * rto,
        "most silences end in a probe: tlp {tlp} rto {rto}"
    );
    // The rest are the kernel's fast retransmits, which it counts in segments (a resent burst can be one
    // packet on the wire, never more than its segments).
    let recovery = kind("fast_retransmit") + kind("other");
    assert!(
        recovery > 0 && recovery <= fast,
        "{recovery} resends, kernel {fast}"
    );
}
