//! Ceilings and response-time humps on real captures of a shaped and an unshaped path.

use crate::common;

use pcapsleuth_testkit::oracle;

use common::json;

fn rate(fixture: &str) -> serde_json::Value {
    json(&["rate", "--json", common::fixture(fixture).to_str().unwrap()])
}

fn within(v: &serde_json::Value, expected: f64, tolerance: f64) -> bool {
    (v.as_f64().unwrap() - expected).abs() <= expected * tolerance
}

/// `tc ... htb rate 12mbit mpu 1500`: every packet counts as 1500 bytes, so 1000 packets/s.
#[test]
fn a_packet_rate_cap_on_small_responses_is_named_with_its_value_and_direction() {
    let r = rate("pps-cap.pcap");
    let c = r["ceilings"].as_array().unwrap();
    assert_eq!(c.len(), 1, "{c:#?}");
    assert_eq!(c[0]["kind"], "pps");
    assert_eq!(c[0]["direction"], "server_to_client");
    assert_eq!(c[0]["server"], "10.77.0.1:3306");
    assert!(within(&c[0]["value"], 1000.0, 0.02), "{}", c[0]["value"]);
    // The bit rate is far from the shaper's 12 Mbit/s: small packets hit the packet cap.
    assert!(c[0]["other_value"].as_f64().unwrap() < 3e6);
    assert!(c[0]["end"].as_f64().unwrap() - c[0]["start"].as_f64().unwrap() >= 2.0);
}

/// `record-bandwidth-cap.sh` at 20 Mbit/s: bulk resultsets hit the byte cap.
#[test]
fn a_bit_rate_cap_on_bulk_transfer_is_named_with_its_value_and_direction() {
    let r = rate("bw-cap.pcap");
    let c = r["ceilings"].as_array().unwrap();
    assert_eq!(c.len(), 1, "{c:#?}");
    assert_eq!(c[0]["kind"], "bps");
    assert_eq!(c[0]["direction"], "server_to_client");
    assert!(within(&c[0]["value"], 20e6, 0.03), "{}", c[0]["value"]);
    assert!(c[0]["mean_packet_bytes"].as_f64().unwrap() > 1400.0);
}

/// A 2.03 s client capture behind a 1,000 packets/s shaper (`shape_path 12mbit 1500 24`): 19 whole
/// 100 ms bins at 990-1,000 packets/s each with 18 resends is as plain a cap as a long capture's, at any
/// printed interval; the server's capture of the same run (before the shaper) has none.
#[test]
fn a_cap_in_a_two_second_capture_is_found() {
    for interval in ["1s", "100ms"] {
        let f = common::fixture("two-point-path.client.pcap");
        let r = json(&[
            "rate",
            "--json",
            "--interval",
            interval,
            f.to_str().unwrap(),
        ]);
        let c = r["ceilings"].as_array().unwrap();
        assert_eq!(c.len(), 1, "{interval}: {c:#?}");
        assert_eq!(c[0]["kind"], "pps");
        assert_eq!(c[0]["direction"], "server_to_client");
        assert_eq!(c[0]["server"], "10.77.0.1:3306");
        assert!(within(&c[0]["value"], 1000.0, 0.02), "{}", c[0]["value"]);
        let held = c[0]["end"].as_f64().unwrap() - c[0]["start"].as_f64().unwrap();
        assert!((1.8..=2.0).contains(&held), "{held}");
        let evidence = c[0]["evidence"].as_array().unwrap();
        assert!(evidence[0]
            .as_str()
            .unwrap()
            .starts_with("18 retransmitted segments"));
    }
    assert_eq!(
        rate("two-point-path.server.pcap")["ceilings"]
            .as_array()
            .unwrap()
            .len(),
        0
    );
}

/// The same open-loop load without shaping (flat because the generator is steady), and captures of other
/// kinds: no ceiling is claimed.
#[test]
fn uncapped_traffic_gets_no_ceiling() {
    for f in [
        "no-cap.pcap",
        "err1146-storm.pcap",
        "rt-bimodal.pcap",
        "stream-stall.pcap",
        "snaplen80.pcap",
        "two-point-slow-server.client.pcap",
        "diff-path-delay.b.pcap",
        "path-lost.pcap",
    ] {
        let r = rate(f);
        assert_eq!(
            r["ceilings"].as_array().unwrap().len(),
            0,
            "{f}: {:#}",
            r["ceilings"]
        );
    }
}

#[test]
fn rate_series_count_every_tcp_packet() {
    let Some(tshark) = oracle::tshark() else {
        return;
    };
    let f = common::fixture("pps-cap.pcap");
    let r = json(&["rate", "--json", "--interval", "100ms", f.to_str().unwrap()]);
    assert!((r["interval_s"].as_f64().unwrap() - 0.1).abs() < 1e-9);
    let total: f64 = r["total"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (p["c2s_pps"].as_f64().unwrap() + p["s2c_pps"].as_f64().unwrap())
                * p["covered_s"].as_f64().unwrap()
        })
        .sum();
    assert_eq!(total.round() as usize, tshark.count(&f, "tcp"));
}

/// Point selects at ~0.1 ms and `SELECT SLEEP(0.02)` from the same threads: two humps, and the slow one is
/// the sleeps.
#[test]
fn bimodal_response_times_are_found_and_the_slow_hump_explained() {
    let Some(tshark) = oracle::tshark() else {
        return;
    };
    let f = common::fixture("rt-bimodal.pcap");
    let r = json(&["rt", "--json", f.to_str().unwrap()]);
    assert_eq!(r["source"], "mysql");
    assert_eq!(r["multimodal"], true);
    let modes = r["modes"].as_array().unwrap();
    assert_eq!(modes.len(), 2, "{modes:#?}");
    let sleeps = tshark.count(
        &f,
        "mysql.query contains \"SLEEP\" || mysql.query contains \"sleep\"",
    );
    assert_eq!(modes[1]["count"].as_u64().unwrap() as usize, sleeps);
    let total = r["percentiles_us"]["count"].as_u64().unwrap();
    assert_eq!(
        modes[0]["count"].as_u64().unwrap() + modes[1]["count"].as_u64().unwrap(),
        total
    );
    assert!(modes[0]["center_us"].as_f64().unwrap() < 500.0);
    assert!(within(&modes[1]["center_us"], 20_200.0, 0.05));
    assert!(within(
        &modes[1]["share"],
        sleeps as f64 / total as f64,
        0.001
    ));
    let slow = &r["slow_modes"][0];
    assert_eq!(slow["statements"][0][0], "select sleep(?)");
    assert_eq!(slow["retransmitted_share"], 0.0);
}

#[test]
fn unimodal_response_times_are_not_called_multimodal() {
    for f in [
        "no-cap.pcap",
        "err1146-storm.pcap",
        "pps-cap.pcap",
        "point-select-slope.pcap",
    ] {
        let r = json(&["rt", "--json", common::fixture(f).to_str().unwrap()]);
        assert_eq!(r["multimodal"], false, "{f}: {:#}", r["modes"]);
    }
}

#[test]
fn the_per_interval_table_accounts_for_every_response() {
    let Some(tshark) = oracle::tshark() else {
        return;
    };
    let f = common::fixture("err1146-storm.pcap");
    let r = json(&[
        "rt",
        "--json",
        "--per-interval",
        "--interval",
        "100ms",
        f.to_str().unwrap(),
    ]);
    let rows = r["per_interval"].as_array().unwrap();
    let of = |kind: &'static str| rows.iter().filter(move |i| i["kind"] == kind);
    assert!(of("requests").count() >= 10);
    let n: u64 = of("requests").map(|i| i["count"].as_u64().unwrap()).sum();
    let e: u64 = of("requests").map(|i| i["errors"].as_u64().unwrap()).sum();
    assert_eq!(n, r["percentiles_us"]["count"].as_u64().unwrap());
    // The 4 sysbench logins, each seen from its SYN, in the connect rows.
    let logins: u64 = of("connect").map(|i| i["count"].as_u64().unwrap()).sum();
    assert_eq!(logins, r["connect_us"]["count"].as_u64().unwrap());
    assert_eq!(
        logins as usize,
        tshark.count(&f, "tcp.flags.syn==1 && tcp.flags.ack==0")
    );
    assert_eq!(e as usize, tshark.count(&f, "mysql.error_code==1146"));
}

#[test]
fn report_ranks_the_cap_the_error_storm_and_the_hang_up() {
    let pps = json(&[
        "report",
        "--json",
        common::fixture("pps-cap.pcap").to_str().unwrap(),
    ]);
    assert_eq!(pps["findings"][0]["kind"], "ceiling");
    let storm = json(&[
        "report",
        "--json",
        common::fixture("err1146-storm.pcap").to_str().unwrap(),
    ]);
    assert_eq!(storm["findings"][0]["kind"], "errors");
    let stall = json(&[
        "report",
        "--json",
        common::fixture("stream-stall.pcap").to_str().unwrap(),
    ]);
    assert_eq!(stall["findings"][0]["kind"], "first_abnormal_close");
    assert_eq!(stall["findings"][0]["frames"][0], 2029);
    let calm = json(&[
        "report",
        "--json",
        common::fixture("no-cap.pcap").to_str().unwrap(),
    ]);
    assert_eq!(
        calm["findings"].as_array().unwrap().len(),
        0,
        "{:#}",
        calm["findings"]
    );
}

/// Response times computed from tshark's fields: each COM_QUERY to the server's next data segment on the same
/// connection (responses of one segment, as a `select sleep()` answer is).
fn tshark_query_response_times(
    tshark: &oracle::Tshark,
    f: &std::path::Path,
    port: u16,
) -> Vec<f64> {
    let decode = format!("tcp.port=={port},mysql");
    let rows = tshark.lines([
        "-r",
        f.to_str().unwrap(),
        "-d",
        &decode,
        "-T",
        "fields",
        "-e",
        "tcp.stream",
        "-e",
        "frame.time_epoch",
        "-e",
        "tcp.srcport",
        "-e",
        "tcp.len",
        "-e",
        "mysql.command",
    ]);
    let mut waiting = std::collections::HashMap::new();
    let mut rts = Vec::new();
    for row in rows {
        let f: Vec<&str> = row.split('\t').collect();
        let t: f64 = f[1].parse().unwrap();
        if f.get(4) == Some(&"3") {
            waiting.insert(f[0].to_string(), t);
        } else if f[2] == port.to_string() && f[3].parse::<u32>().unwrap_or(0) > 0 {
            if let Some(start) = waiting.remove(f[0]) {
                rts.push(t - start);
            }
        }
    }
    rts
}

/// The thread-pool staircase, on a real MariaDB thread pool (fixtures/README.md): 30 requests served at once
/// (300-325 ms) and 12 that waited one more service time (575-589 ms), nothing between. Two humps, each with
/// exactly the requests tshark times on its step.
#[test]
fn a_thread_pool_staircase_of_a_few_dozen_requests_is_two_humps() {
    let f = common::fixture("thread-pool.pcap");
    let r = json(&["rt", "--json", f.to_str().unwrap()]);
    let modes = r["modes"].as_array().unwrap();
    assert_eq!(r["multimodal"], true, "{modes:#?}");
    assert_eq!(modes.len(), 2, "{modes:#?}");
    assert!(within(&modes[0]["center_us"], 310_000.0, 0.05));
    assert!(within(&modes[1]["center_us"], 580_000.0, 0.05));
    let valley = r["valleys"][0]["at_us"].as_f64().unwrap();
    assert!(valley > 325_000.0 && valley < 574_000.0, "{valley}");
    let text = common::text(&["rt", f.to_str().unwrap()]);
    assert!(text.contains("MULTIMODAL: 2 humps"), "{text}");
    let Some(tshark) = oracle::tshark() else {
        return;
    };
    let rts = tshark_query_response_times(&tshark, &f, 3307);
    let first_step = rts.iter().filter(|&&t| t < 0.45).count() as u64;
    let second_step = rts.iter().filter(|&&t| t >= 0.45).count() as u64;
    assert!(first_step >= 8 && second_step >= 8, "{rts:?}");
    assert_eq!(modes[0]["count"].as_u64().unwrap(), first_step);
    assert_eq!(modes[1]["count"].as_u64().unwrap(), second_step);
}

/// Point selects under CPU contention (16 sysbench threads on 2 cores): a peak near 50-90 µs and a steady
/// slope to 7 ms with small shoulders on it. No valley separates the shoulders: one hump.
#[test]
fn a_slope_with_shoulders_is_one_hump() {
    let f = common::fixture("point-select-slope.pcap");
    let r = json(&["rt", "--json", f.to_str().unwrap()]);
    assert_eq!(r["multimodal"], false, "{:#}", r["modes"]);
    assert_eq!(r["modes"][0]["count"], r["percentiles_us"]["count"]);
    let report = json(&["report", "--json", f.to_str().unwrap()]);
    assert!(
        !report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["kind"] == "rt_multimodal"),
        "{:#}",
        report["findings"]
    );
}
