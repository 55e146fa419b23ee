//! Time that cannot hurt: a week-long capture costs its packets, not its span, and still shows its ceilings;
//! a wild timestamp in a real capture is named by frame and left out of the time series, which are otherwise
//! the capture's own.

use crate::common;

use pcapsleuth::analysis::{analyze, full_report, EngineOptions, Everything, FullReport};
use pcapsleuth::capture::Capture;

#[path = "../benches/copies.rs"]
mod copies;

const DAY_US: u64 = 86_400_000_000;

/// The records of a real fixture, and its bytes.
fn records(fixture: &str) -> (Capture, Vec<(usize, usize)>) {
    let cap = Capture::open(common::fixture(fixture)).unwrap();
    let base = cap.bytes().as_ptr() as usize;
    let mut spans = Vec::new();
    let mut reader = cap.reader_all();
    while let Some(r) = reader.next_record() {
        spans.push((r.raw.as_ptr() as usize - base, r.raw.len()));
    }
    (cap, spans)
}

fn report(name: &str, bytes: Vec<u8>, splits: usize, interval_ns: i64) -> FullReport {
    let cap = Capture::from_vec(name, bytes).unwrap();
    full_report(&analyze(
        &cap,
        &EngineOptions {
            threads: 2,
            splits: Some(splits),
            ..EngineOptions::default()
        },
        || Everything::new(interval_ns),
    ))
}

/// `pps-cap.pcap` (a 1000 packets/s cap on one server, 3 s) on each of 7 days: a week of light traffic.
/// Its series hold only the seconds with packets and the edges of each silence, its ceilings are the
/// fixture's own, once a day, and nothing in it is taken for a wild timestamp.
#[test]
fn a_week_long_capture_keeps_its_ceilings_and_costs_its_packets_not_its_span() {
    let (cap, spans) = records("pps-cap.pcap");
    let one = full_report(&analyze(
        &cap,
        &EngineOptions::default(),
        Everything::default,
    ));
    let mut week = cap.bytes()[..24].to_vec();
    let mut buf = Vec::new();
    let mut reader = cap.reader_all();
    let mut recs = Vec::new();
    while let Some(r) = reader.next_record() {
        recs.push(r);
    }
    assert_eq!(recs.len(), spans.len());
    for day in 0..7 {
        for r in &recs {
            copies::shifted_record(r, day, DAY_US, &mut buf);
            week.extend_from_slice(&buf);
        }
    }
    for (splits, interval_ns) in [(1, 1_000_000_000), (7, 100_000_000)] {
        let r = report("week.pcap", week.clone(), splits, interval_ns);
        let t = &r.timeline;
        assert_eq!((t.wild_packets, t.clock_steps_back), (0, 0), "{t:?}");
        let span_s = (t.body_last.unwrap().0 - t.body_first.unwrap().0) as f64 / 1e9;
        assert!(
            (6.0 * 86_400.0..6.0 * 86_400.0 + 10.0).contains(&span_s),
            "{span_s}"
        );
        // The fixture's ceiling on each day, the same value and length, shifted by whole days.
        let want = &one.rate.ceilings;
        assert_eq!(want.len(), 1, "{want:?}");
        assert_eq!(r.rate.ceilings.len(), 7, "{:#?}", r.rate.ceilings);
        for (day, c) in r.rate.ceilings.iter().enumerate() {
            assert_eq!(
                (c.kind, c.direction, &c.server),
                (want[0].kind, want[0].direction, &want[0].server)
            );
            assert!(
                (c.value - want[0].value).abs() < 1e-6 * want[0].value,
                "{c:?}"
            );
            assert!(
                (c.start - want[0].start - day as f64 * 86_400.0).abs() < 1e-6,
                "{c:?}"
            );
            assert!(((c.end - c.start) - (want[0].end - want[0].start)).abs() < 1e-6);
        }
        // Rows: the intervals with packets and at most two empty ones per silence, never the week.
        let occupied = r
            .rate
            .total
            .iter()
            .filter(|p| p.c2s_pps + p.s2c_pps > 0.0)
            .count();
        assert!(
            occupied > 0 && r.rate.total.len() <= occupied + 2 * 7,
            "{} rows",
            r.rate.total.len()
        );
        assert_eq!(r.mysql.per_second.len(), 7 * one.mysql.per_second.len());
    }
}

/// `rt-bimodal.pcap` with one pure ACK's timestamp zeroed (a corrupt record): that frame is reported with
/// its timestamp and distance, left out of the time series, and everything else reads as before.
#[test]
fn a_zeroed_timestamp_in_a_real_capture_is_named_and_left_out() {
    let (cap, spans) = records("rt-bimodal.pcap");
    let original = full_report(&analyze(
        &cap,
        &EngineOptions::default(),
        Everything::default,
    ));
    // A client ACK without payload, well inside the capture.
    let mut reader = cap.reader_all();
    let mut frame = 0;
    let mut victim = None;
    while let Some(r) = reader.next_record() {
        frame += 1;
        if let pcapsleuth::flow::Decoded::Tcp(s) = pcapsleuth::flow::decode(r.link, r.data) {
            if frame > spans.len() / 2 && s.payload_len == 0 && s.flags.0 == 0x10 {
                victim = Some(frame);
                break;
            }
        }
    }
    let victim = victim.expect("a pure ACK in the second half");
    let mut bytes = cap.bytes().to_vec();
    let (at, _) = spans[victim - 1];
    bytes[at..at + 8].fill(0);
    let damaged = report("zeroed.pcap", bytes.clone(), 3, 0);
    let t = &damaged.timeline;
    assert_eq!((t.wild_packets, t.wild_runs), (1, 1));
    assert_eq!(t.wild[0].first_frame, victim as u64);
    assert_eq!(
        t.damage_lines()[0],
        format!(
            "frame {victim}: timestamp 1970-01-01 00:00:00.000000 UTC, 56.9 years before the rest of the capture; left out of time series"
        )
    );
    assert_eq!(
        (t.body_first, t.body_last),
        (original.timeline.body_first, original.timeline.body_last)
    );
    assert!(damaged.findings.iter().any(|f| f.kind
        == pcapsleuth::analysis::FindingKind::CaptureDamage
        && f.frames == [victim as u64]));
    // The series are the original's but for the one packet left out.
    assert_eq!(damaged.rate.ceilings, original.rate.ceilings);
    // Rows alike but for the round trips: the packet left out takes the one it timed with it.
    let without_rtt = |r: &FullReport| {
        let mut rows = r.rt.per_interval.clone();
        for row in &mut rows {
            row.rtt_to_server_us = None;
            row.rtt_to_client_us = None;
        }
        rows
    };
    assert_eq!(without_rtt(&damaged), without_rtt(&original));
    let samples = |r: &FullReport| -> u64 {
        r.rt.per_interval
            .iter()
            .filter(|row| row.kind == pcapsleuth::analysis::IntervalKind::Requests)
            .flat_map(|row| [&row.rtt_to_server_us, &row.rtt_to_client_us])
            .map(|s| s.as_ref().map_or(0, |s| s.count))
            .sum()
    };
    let lost = samples(&original) - samples(&damaged);
    assert!(lost <= 1, "{lost} round trips lost with one packet");
    assert_eq!(damaged.mysql, original.mysql);
    assert_eq!(damaged.rate.total.len(), original.rate.total.len());
    let packets = |r: &FullReport| -> f64 {
        r.rate
            .total
            .iter()
            .map(|p| (p.c2s_pps + p.s2c_pps) * p.covered_s)
            .sum()
    };
    assert!((packets(&original) - packets(&damaged) - 1.0).abs() < 1e-6);
    // The command line says so on stderr, and still exits 0: everything could be read.
    let path = common::scratch("timeline", "zeroed.pcap");
    std::fs::write(&path, bytes).unwrap();
    let o = std::process::Command::new(common::bin())
        .args(["report", path.to_str().unwrap()])
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&path);
    assert_eq!(o.status.code(), Some(0));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("warning: ") && err.contains(&format!("frame {victim}: timestamp 1970-01-01")),
        "{err}"
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        common::flat(&out).contains("1 packet with a timestamp outside it left out of time series"),
        "{out}"
    );
}
