use super::*;
use pcapsleuth_mysql::Command;
use proptest::prelude::*;

const MS: i64 = 1_000_000;
const US: i64 = 1_000;
/// 2026-11-25 17:10:37 UTC, when the lab pairs were recorded.
const T0: i64 = 1_795_626_637 * 1_000_000_000;

fn ep(s: &str) -> Endpoint {
    s.parse().unwrap()
}

/// One exchange: `(frame, ns after T0)` for the request and the response's last byte (also its first).
fn exchange(
    client: &str,
    server: &str,
    seq: Option<u32>,
    hash: u64,
    request: (u64, i64),
    response: Option<(u64, i64)>,
) -> Exchange {
    let seen = |(frame, ns): (u64, i64)| Seen {
        frame,
        ts_ns: T0 + ns,
    };
    Exchange {
        client: ep(client),
        server: ep(server),
        connection: 0,
        request_seq: seq,
        request_hash: hash,
        command: Command::Query,
        statement: Some(format!("select {hash}").into()),
        request: seen(request),
        first_response: response.map(seen),
        last_response: response.map(seen),
        response_retransmitted: false,
    }
}

/// The same transactions at both points of a path with no NAT, on one clock: request path `up`,
/// server time `serve`, response path `down` (each per transaction), requests 10 ms apart.
fn same_clock(n: usize, up: i64, serve: &[i64], down: &[i64]) -> (Vec<Exchange>, Vec<Exchange>) {
    let (mut client, mut server) = (Vec::new(), Vec::new());
    for i in 0..n {
        let t = i as i64 * 10 * MS;
        let (s, d) = (serve[i % serve.len()], down[i % down.len()]);
        let f = 2 * i as u64 + 1;
        let seq = Some(1000 + 40 * i as u32);
        client.push(exchange(
            "10.77.1.2:50000",
            "10.77.0.1:3306",
            seq,
            i as u64,
            (f, t),
            Some((f + 1, t + up + s + d)),
        ));
        server.push(exchange(
            "10.77.1.2:50000",
            "10.77.0.1:3306",
            seq,
            i as u64,
            (f, t + up),
            Some((f + 1, t + up + s)),
        ));
    }
    (client, server)
}

#[test]
fn the_same_4_tuple_and_sequence_number_match_and_the_time_splits_into_server_and_path() {
    let (client, server) = same_clock(3, 10 * US, &[100 * US, 200 * US, 300 * US], &[4 * MS]);
    let cmp = compare(&client, &server, &CompareOptions::default());
    assert_eq!(
        (
            cmp.matched,
            cmp.matched_by_sequence,
            cmp.unmatched_client,
            cmp.unmatched_server
        ),
        (3, 3, 0, 0)
    );
    assert_eq!(cmp.server_rt_us.p50, 200.0);
    assert_eq!(cmp.client_rt_us.p50, 4210.0);
    assert_eq!(cmp.path_us.count, 3);
    assert_eq!((cmp.path_us.p50, cmp.path_us.max), (4010.0, 4010.0));
    // The offset lies between minus the fastest response path and the fastest request path.
    let clock = cmp.clock;
    assert_eq!(clock.basis, ClockBasis::Estimated);
    assert_eq!(clock.offset_us, Some((10.0 - 4000.0) / 2.0));
    assert_eq!(clock.uncertainty_us, Some((10.0 + 4000.0) / 2.0));
    assert!(clock.consistent && clock.drift_ppm.is_none());
    // The split between the ways follows that estimate; the sum does not depend on it.
    assert_eq!(cmp.request_path_us.p50 + cmp.response_path_us.p50, 4010.0);
    assert_eq!(
        cmp.connections,
        ConnectionPairing {
            paired: 1,
            client_only: 0,
            server_only: 0
        }
    );
    let share = cmp.path_share.unwrap();
    assert!((share - 12030.0 / 12630.0).abs() < 1e-9, "{share}");
}

#[test]
fn a_proxy_that_changes_every_address_and_sequence_number_is_crossed_by_payload() {
    // Two client connections to a proxy at 10.0.0.9:6033; the server sees them from the proxy's own
    // ports, with other sequence numbers, 1 ms later, and the proxy adds a health check of its own.
    let mut client = Vec::new();
    let mut server = Vec::new();
    let mut f = 0;
    let mut frame = || {
        f += 1;
        f
    };
    for (i, (cport, pport)) in [(50001u16, 40001u16), (50002, 40002)]
        .into_iter()
        .enumerate()
    {
        let c = format!("10.0.0.5:{cport}");
        let p = format!("10.0.0.9:{pport}");
        server.push(exchange(
            &p,
            "10.0.1.1:3306",
            Some(7),
            999,
            (frame(), i as i64 * MS),
            Some((frame(), i as i64 * MS + 50 * US)),
        ));
        for k in 0..4u64 {
            let t = (10 + 5 * k as i64 + i as i64) * MS;
            // Connection 2 repeats connection 1's statements: only the order tells them apart.
            client.push(exchange(
                &c,
                "10.0.0.9:6033",
                Some(100 + k as u32),
                k,
                (frame(), t),
                Some((frame(), t + 3 * MS)),
            ));
            server.push(exchange(
                &p,
                "10.0.1.1:3306",
                Some(9000 + k as u32),
                k,
                (frame(), t + MS),
                Some((frame(), t + MS + 500 * US)),
            ));
        }
    }
    let cmp = compare(&client, &server, &CompareOptions::default());
    assert_eq!(
        (cmp.matched, cmp.matched_by_payload, cmp.matched_by_sequence),
        (8, 8, 0)
    );
    assert_eq!((cmp.unmatched_client, cmp.unmatched_server), (0, 2));
    assert_eq!(
        cmp.connections,
        ConnectionPairing {
            paired: 2,
            client_only: 0,
            server_only: 0
        }
    );
    for p in &cmp.pairs {
        let (c, s) = (&client[p.client], &server[p.server]);
        assert_eq!(c.request_hash, s.request_hash);
        assert_eq!(
            c.client.port - 50001,
            s.client.port - 40001,
            "connections paired crosswise"
        );
        assert_eq!(p.path_ns(), Some(2500 * US));
    }
    assert_eq!(cmp.server_rt_us.p50, 500.0);
    assert_eq!(cmp.path_us.p50, 2500.0);
}

#[test]
fn identical_sessions_behind_a_nat_pair_in_the_order_they_began() {
    let mut client = Vec::new();
    let mut server = Vec::new();
    for i in 0..3u16 {
        let t = i64::from(i) * 100 * MS;
        client.push(exchange(
            &format!("192.168.0.2:{}", 5000 + i),
            "10.0.0.1:3306",
            Some(1),
            1,
            (u64::from(i) + 1, t),
            Some((10, t + MS)),
        ));
        server.push(exchange(
            &format!("203.0.113.7:{}", 61000 - i),
            "10.0.0.1:3306",
            Some(2),
            1,
            (u64::from(i) + 1, t + 20 * US),
            Some((10, t + 200 * US)),
        ));
    }
    let cmp = compare(&client, &server, &CompareOptions::default());
    assert_eq!(cmp.matched_by_payload, 3);
    let order: Vec<(usize, usize)> = cmp.pairs.iter().map(|p| (p.client, p.server)).collect();
    assert_eq!(order, vec![(0, 0), (1, 1), (2, 2)]);
}

#[test]
fn hundreds_of_connections_behind_a_nat_pair_by_their_rare_payloads() {
    // 300 sessions, each `SELECT 1` (hash 0, in every connection), its own statement, `SELECT 1` again;
    // then 100 sessions that only ever send `SELECT 1`, one after the other.
    let (mut client, mut server) = (Vec::new(), Vec::new());
    for i in 0..400u16 {
        let t = i64::from(i) * 3 * MS;
        let hashes: &[u64] = if i < 300 {
            &[0, 1000 + i as u64, 0]
        } else {
            &[0]
        };
        for (k, &h) in hashes.iter().enumerate() {
            let at = t + k as i64 * 100 * US;
            let f = u64::from(i) * 10 + k as u64;
            client.push(exchange(
                &format!("192.168.0.2:{}", 20000 + i),
                "10.0.0.1:3306",
                Some(1),
                h,
                (f, at),
                Some((f, at + MS)),
            ));
            server.push(exchange(
                &format!("203.0.113.7:{}", 60000 - i),
                "10.0.0.1:3306",
                Some(9),
                h,
                (f, at + 10 * US),
                Some((f, at + 200 * US)),
            ));
        }
    }
    let cmp = compare(&client, &server, &CompareOptions::default());
    assert_eq!((cmp.matched, cmp.matched_by_payload), (1000, 1000));
    assert_eq!(cmp.connections.paired, 400);
    for p in &cmp.pairs {
        assert_eq!(
            client[p.client].client.port - 20000,
            60000 - server[p.server].client.port
        );
    }
}

#[test]
fn a_server_clock_5_s_ahead_is_found_within_half_the_fastest_round_trip() {
    let offset = 5_000 * MS + 123 * US;
    let (client, mut server) = same_clock(
        50,
        40 * US,
        &[100 * US, 130 * US, 90 * US],
        &[60 * US, 80 * US, 300 * US],
    );
    for e in &mut server {
        for s in [
            Some(&mut e.request),
            e.first_response.as_mut(),
            e.last_response.as_mut(),
        ]
        .into_iter()
        .flatten()
        {
            s.ts_ns += offset;
        }
    }
    let cmp = compare(&client, &server, &CompareOptions::default());
    let est = cmp.clock_offset_us.unwrap();
    let bound = cmp.clock.uncertainty_us.unwrap();
    assert_eq!(bound, (40.0 + 60.0) / 2.0, "half the fastest round trip");
    assert!(
        (est - offset as f64 / 1e3).abs() <= bound,
        "{est} vs {offset}"
    );
    // Asymmetric fastest ways (40 µs up, 60 µs down): the middle is 10 µs off, inside the bound.
    assert_eq!(est, offset as f64 / 1e3 - 10.0);
    assert_eq!(cmp.request_path_us.p50, 50.0);
    assert_eq!(cmp.path_us.p50, 120.0);
    assert_eq!(cmp.outside_other_capture, OutsideOtherCapture::default());
}

#[test]
fn a_clock_running_50_ppm_fast_is_fitted_when_no_single_offset_fits() {
    // 100 s of requests, 200 ms apart; the server's clock gains 5 ms over them, far more than the
    // 100 µs round trip.
    let (mut client, mut server) = (Vec::new(), Vec::new());
    for i in 0..500u64 {
        let t = i as i64 * 200 * MS;
        let skew = 2 * MS + t / 20_000; // 2 ms + 50 ppm
        let jitter = (i % 7) as i64 * 30 * US;
        let seq = Some(i as u32 * 50);
        client.push(exchange(
            "10.0.0.2:4000",
            "10.0.0.1:3306",
            seq,
            i,
            (i, t),
            Some((i, t + 50 * US + 200 * US + 50 * US + 2 * jitter)),
        ));
        server.push(exchange(
            "10.0.0.2:4000",
            "10.0.0.1:3306",
            seq,
            i,
            (i, t + 50 * US + jitter + skew),
            Some((i, t + 50 * US + jitter + 200 * US + skew)),
        ));
    }
    let cmp = compare(&client, &server, &CompareOptions::default());
    let drift = cmp.clock.drift_ppm.expect("a drift");
    assert!((drift - 50.0).abs() < 2.0, "{drift}");
    assert!(cmp.clock.consistent);
    let offset = cmp.clock_offset_us.unwrap();
    assert!(
        (offset - 2000.0).abs() <= cmp.clock.uncertainty_us.unwrap() + 5.0,
        "{offset}"
    );
    // With the drift taken out, every request path is near its true 50-230 µs.
    assert!(
        cmp.request_path_us.max < 400.0 && cmp.request_path_us.p50 > 0.0,
        "{:?}",
        cmp.request_path_us
    );
}

#[test]
fn a_known_offset_is_used_as_given() {
    let (client, server) = same_clock(3, 10 * US, &[100 * US], &[4 * MS]);
    let opts = CompareOptions {
        clock: ClockPolicy::Known { offset_ns: 0 },
        ..CompareOptions::default()
    };
    let cmp = compare(&client, &server, &opts);
    assert_eq!(cmp.clock.basis, ClockBasis::Given);
    assert_eq!(
        (cmp.request_path_us.p50, cmp.response_path_us.p50),
        (10.0, 4000.0)
    );
}

#[test]
fn notable_transactions_name_their_frames_in_both_captures() {
    let (mut client, mut server) = same_clock(8, 20 * US, &[100 * US], &[300 * US]);
    // 1: resent by the server, seen 250 ms later by the client.
    server[1].response_retransmitted = true;
    client[1].last_response.as_mut().unwrap().ts_ns += 250 * MS;
    // 3: late with no retransmission seen anywhere.
    client[3].last_response.as_mut().unwrap().ts_ns += 400 * MS;
    // 5: the client never saw the response complete, though its capture went on.
    client[5].last_response = None;
    // 6: the server never saw the request (the connection is followed there).
    server.remove(6);
    let cmp = compare(&client, &server, &CompareOptions::default());
    let kinds: Vec<(NotableKind, u64)> = cmp
        .notable
        .iter()
        .map(|n| (n.kind, n.client_capture.request_frame))
        .collect();
    assert_eq!(
        kinds,
        vec![
            (NotableKind::ResponseRetransmitted, 3),
            (NotableKind::ResponseLate, 7),
            (NotableKind::ResponseNeverSeen, 11),
            (NotableKind::RequestNeverSeen, 13),
        ]
    );
    let n = &cmp.notable[0];
    let s = n.server_capture.as_ref().unwrap();
    assert_eq!(
        (
            n.client_capture.response_frame,
            s.request_frame,
            s.response_frame
        ),
        (Some(4), 3, Some(4))
    );
    assert!(
        n.detail.contains("retransmitted (seen at the server)"),
        "{}",
        n.detail
    );
    assert!(cmp.notable[3].server_capture.is_none());
    assert_eq!(
        cmp.notable_counts,
        NotableCounts {
            response_retransmitted: 1,
            response_late: 1,
            response_never_seen: 1,
            request_never_seen: 1
        }
    );
    assert!(
        cmp.verdict.contains("1 request the server never saw"),
        "{}",
        cmp.verdict
    );
}

#[test]
fn what_the_other_capture_could_not_have_seen_is_not_notable() {
    let (mut client, server) = same_clock(4, 20 * US, &[100 * US], &[300 * US]);
    // A request sent after the server capture ended, and a response after the client capture ended.
    let mut late = client[3].clone();
    late.request_seq = Some(7);
    late.request.ts_ns += 10_000 * MS;
    late.last_response = None;
    late.first_response = None;
    client.push(late);
    client[3].last_response = None;
    client[3].first_response = None;
    let opts = CompareOptions {
        client_span: Some(CaptureSpan {
            first_ns: T0,
            last_ns: T0 + 10_030 * MS,
        }),
        ..CompareOptions::default()
    };
    let mut server_only_early = server.clone();
    server_only_early.truncate(4);
    let cmp = compare(&client, &server_only_early, &opts);
    assert_eq!(cmp.unmatched_client, 1);
    assert_eq!(cmp.outside_other_capture.client, 1);
    assert_eq!(cmp.notable_counts.request_never_seen, 0);
    // client[3]'s response was sent inside the client capture's span: never seen.
    assert_eq!(cmp.notable_counts.response_never_seen, 1);
    let opts = CompareOptions {
        client_span: Some(CaptureSpan {
            first_ns: T0,
            last_ns: T0 + 30 * MS,
        }),
        ..CompareOptions::default()
    };
    let cmp = compare(&client, &server_only_early, &opts);
    assert_eq!(
        cmp.notable_counts.response_never_seen, 0,
        "sent after the client capture ended"
    );
}

#[test]
fn the_verdict_blames_the_path_when_the_client_waits_and_the_server_does_not() {
    let down: Vec<i64> = (0..300)
        .map(|i| if i % 3 == 0 { 14 * MS } else { 4 * MS })
        .collect();
    let (client, server) = same_clock(300, 8 * US, &[130 * US, 120 * US, 140 * US], &down);
    let cmp = compare(&client, &server, &CompareOptions::default());
    let v = &cmp.verdict;
    assert!(
        v.starts_with("The path took the time: the server answered in 130 µs (p50)"),
        "{v}"
    );
    assert!(
        v.contains(
            "mostly on the server->client side (5.34 ms on average; the other way's 2 ms is \
             within the clocks' alignment, ±2 ms)"
        ),
        "{v}"
    );
    assert!(v.contains("server RT humps: ~130 µs (100%)"), "{v}");
    let slow = cmp.humps.client.last().unwrap();
    assert!(
        slow.mode.center_us > 10_000.0 && slow.server_rt_p50_us == 130.0,
        "{slow:?}"
    );
    assert!(cmp.humps.client.len() >= 2, "{:?}", cmp.humps);
    assert!(cmp.path_share.unwrap() > 0.95);
}

#[test]
fn the_verdict_blames_the_server_when_both_points_wait_alike() {
    let serve: Vec<i64> = (0..300)
        .map(|i| {
            if i % 3 == 0 {
                20 * MS
            } else {
                100 * US + (i % 5) * US
            }
        })
        .collect();
    let (client, server) = same_clock(300, 5 * US, &serve, &[6 * US, 7 * US]);
    let cmp = compare(&client, &server, &CompareOptions::default());
    let v = &cmp.verdict;
    assert!(v.starts_with("The server took the time"), "{v}");
    let slow = cmp.humps.client.last().unwrap();
    assert!(
        (slow.server_rt_p50_us - 20_000.0).abs() < 1.0 && slow.path_p50_us < 20.0,
        "{slow:?}"
    );
    assert!(v.contains("; the server's part 20 ms)"), "{v}");
    assert!(cmp.path_share.unwrap() < 0.01);
}

#[test]
fn the_verdict_says_the_time_was_shared_when_neither_side_took_most_of_it() {
    let (client, server) = same_clock(100, 2 * MS, &[5 * MS], &[3 * MS]);
    let cmp = compare(&client, &server, &CompareOptions::default());
    let v = &cmp.verdict;
    assert!(
        v.starts_with("The server and the path shared the time: the server answered in 5 ms"),
        "{v}"
    );
    assert!(
        v.contains("the path added 5 ms on average (50% of the client's time)"),
        "{v}"
    );
}

#[test]
fn json_names_the_fields_as_the_issue_does() {
    let (client, server) = same_clock(3, 10 * US, &[100 * US], &[MS]);
    let json = serde_json::to_value(compare(&client, &server, &CompareOptions::default())).unwrap();
    for key in [
        "matched",
        "unmatched_client",
        "unmatched_server",
        "clock_offset_us",
        "client_rt_us",
        "server_rt_us",
        "path_us",
        "path_share",
        "per_interval",
        "notable",
        "verdict",
    ] {
        assert!(json.get(key).is_some(), "no {key} in {json}");
    }
    for key in ["count", "mean", "p50", "p95", "p99", "max"] {
        assert!(json["path_us"].get(key).is_some(), "no path_us.{key}");
    }
    assert!(
        json.get("pairs").is_none(),
        "the pairs are for programs, not JSON"
    );
}

#[test]
fn nothing_in_common_says_so() {
    let (client, _) = same_clock(2, 0, &[0], &[0]);
    let cmp = compare(&client, &[], &CompareOptions::default());
    assert_eq!((cmp.matched, cmp.unmatched_client), (0, 2));
    assert_eq!(cmp.clock.basis, ClockBasis::Unknown);
    assert!(
        cmp.verdict
            .starts_with("No request was found in both captures"),
        "{}",
        cmp.verdict
    );
    let cmp = compare(&[], &[], &CompareOptions::default());
    assert_eq!(cmp.matched, 0);
}

#[test]
fn per_interval_rows_are_the_intervals_with_transactions() {
    let (client, server) = same_clock(250, 10 * US, &[100 * US], &[MS]);
    let cmp = compare(&client, &server, &CompareOptions::default());
    let counts: Vec<u64> = cmp.per_interval.iter().map(|r| r.count).collect();
    assert_eq!(counts.iter().sum::<u64>(), 250);
    assert_eq!(counts.len(), 3, "{counts:?}");
    assert!(cmp.per_interval.iter().all(|r| r.path_mean_us == 1010.0));
}

fn arbitrary_exchange() -> impl Strategy<Value = Exchange> {
    (
        0u16..3,
        0u16..3,
        0u64..2,
        proptest::option::of(0u32..4),
        0u64..4,
        any::<i64>(),
        proptest::option::of(any::<i64>()),
        proptest::option::of(-5i64..5),
        any::<bool>(),
    )
        .prop_map(|(c, s, conn, seq, hash, t, end, near, resent)| {
            let at = |ts_ns| Seen { frame: 1, ts_ns };
            let end = near.map(|d| t.saturating_add(d * MS)).or(end);
            Exchange {
                client: Endpoint {
                    ip: [10, 0, 0, 2].into(),
                    port: 1000 + c,
                },
                server: Endpoint {
                    ip: [10, 0, 0, 1].into(),
                    port: 3306 + s,
                },
                connection: conn,
                request_seq: seq,
                request_hash: hash,
                command: Command::Query,
                statement: None,
                request: at(t),
                first_response: end.map(at),
                last_response: end.map(at),
                response_retransmitted: resent,
            }
        })
}

proptest! {
    /// Any records at all (wild timestamps, duplicates, collisions): no panic, and each request is
    /// matched at most once.
    #[test]
    fn any_records_compare_without_panic(
        client in proptest::collection::vec(arbitrary_exchange(), 0..40),
        server in proptest::collection::vec(arbitrary_exchange(), 0..40),
        interval in any::<i64>(),
    ) {
        let opts = CompareOptions { interval_ns: interval, ..CompareOptions::default() };
        let cmp = compare(&client, &server, &opts);
        prop_assert_eq!(cmp.matched as usize, cmp.pairs.len());
        let mut seen_c: Vec<usize> = cmp.pairs.iter().map(|p| p.client).collect();
        let mut seen_s: Vec<usize> = cmp.pairs.iter().map(|p| p.server).collect();
        seen_c.sort_unstable(); seen_c.dedup();
        seen_s.sort_unstable(); seen_s.dedup();
        prop_assert_eq!(seen_c.len(), cmp.pairs.len());
        prop_assert_eq!(seen_s.len(), cmp.pairs.len());
        for p in &cmp.pairs {
            prop_assert_eq!(client[p.client].request_hash, server[p.server].request_hash);
        }
        prop_assert!(serde_json::to_string(&cmp).is_ok());
    }
}
