//! Ceilings and response-time humps on real captures of a shaped and an unshaped path.

mod common;

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
    for f in ["no-cap.pcap", "err1146-storm.pcap", "pps-cap.pcap"] {
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
    assert!(rows.len() >= 10);
    let n: u64 = rows.iter().map(|i| i["count"].as_u64().unwrap()).sum();
    let e: u64 = rows.iter().map(|i| i["errors"].as_u64().unwrap()).sum();
    assert_eq!(n, r["percentiles_us"]["count"].as_u64().unwrap());
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
