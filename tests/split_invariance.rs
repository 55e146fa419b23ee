//! The invariant that lets pcapsleuth be parallel and right: every analysis gives the identical report
//! whatever the number of splits and threads.

use crate::common;

use pcapsleuth::analysis::{
    analyze, first_reset, CloseView, ConnectionView, EndView, Endings, EngineOptions,
    EstimatedExchangeView, Everything, Exchanges, LoadTest, MysqlStatistics, Resends, Run,
    SegmentView, Statistics, TransactionView,
};
use pcapsleuth::capture::Capture;
use pcapsleuth::report::to_json;
use proptest::prelude::*;

fn reports(cap: &Capture, splits: usize, threads: usize) -> (Run<Statistics>, String) {
    reports_with(cap, splits, threads, EngineOptions::default())
}

/// [`reports`] with these options (a TLS key log).
fn reports_with(
    cap: &Capture,
    splits: usize,
    threads: usize,
    opts: EngineOptions,
) -> (Run<Statistics>, String) {
    let a = analyze(
        cap,
        &EngineOptions {
            threads,
            splits: Some(splits),
            ..opts
        },
        || Everything::new(100_000_000),
    );
    // The whole reports as a user sees them: first-reset, flows and the MySQL report, as JSON; and what
    // `extract --annotate` writes that JSON leaves out (the findings' comments on frames, the hand-offs
    // first-reset prints).
    let fr = first_reset(&a, usize::MAX);
    let full = pcapsleuth::analysis::full_report(&a);
    let notes: Vec<_> = full
        .findings
        .iter()
        .flat_map(|f| std::iter::once(f).chain(&f.members))
        .map(|f| &f.frame_notes)
        .collect();
    // `flows`' rows, each with its close and cause.
    let order: Vec<usize> = (0..a.connections.len()).collect();
    let rows = pcapsleuth::analysis::flow_rows(&a, &order);
    let json = to_json(&fr)
        + &to_json(&full)
        + &to_json(&rows)
        + &format!(
            "{notes:?}{:?}{:?}",
            fr.attempt_findings, fr.first_abnormal_hand_off
        );
    (a, json)
}

#[test]
fn every_real_capture_gives_the_same_reports_with_1_2_3_7_and_64_splits() {
    for path in common::real_captures() {
        let cap = Capture::open(&path).unwrap();
        let (one, one_json) = reports(&cap, 1, 1);
        assert!(one.capture.counts.packets > 0, "{path:?} read no packets");
        for splits in [2, 3, 7, 64] {
            let (a, json) = reports(&cap, splits, 2);
            assert_eq!(one, a, "{path:?}: analysis differs with {splits} splits");
            assert_eq!(
                one_json, json,
                "{path:?}: first-reset differs with {splits} splits"
            );
        }
    }
}

/// MySQL in TLS: decrypted with a key log given, decrypted with the secrets a pcapng holds, and timed from
/// its records without keys, every report is the same whatever the splits (a TLS session's record layer
/// lives with its connection, like its MySQL session).
#[test]
fn tls_captures_give_the_same_reports_with_1_2_3_7_and_64_splits() {
    let tls = common::fixture("tls");
    for name in ["tls13-aes256", "tls12-chacha"] {
        let keys = std::fs::read(tls.join(format!("{name}.keys"))).unwrap();
        let keys = std::sync::Arc::new(pcapsleuth::tls::KeyLog::parse(&keys));
        let pcap = tls.join(format!("{name}.pcap"));
        let dsb = tls.join(format!("{name}.dsb.pcapng"));
        for (path, tls_keys) in [(&pcap, Some(keys)), (&dsb, None), (&pcap, None)] {
            let cap = Capture::open(path).unwrap();
            let opts = || EngineOptions {
                tls_keys: tls_keys.clone(),
                ..EngineOptions::default()
            };
            let (one, one_json) = reports_with(&cap, 1, 1, opts());
            let decrypted = one.output.mysql.tls.report().decrypted;
            assert_eq!(
                decrypted > 0,
                tls_keys.is_some() || path == &dsb,
                "{path:?}"
            );
            for splits in [2, 3, 7, 64] {
                let (a, json) = reports_with(&cap, splits, 2, opts());
                assert_eq!(one, a, "{path:?}: analysis differs with {splits} splits");
                assert_eq!(
                    one_json, json,
                    "{path:?}: reports differ with {splits} splits"
                );
            }
        }
    }
}

/// `rate`'s path over time (round trips, duplicate ACKs, resends by kind, zero-window time) at a fine
/// interval, where a connection's ACKs and the data they cover fall into many intervals: the same series
/// whatever the splits (every real capture also runs it at 100 ms through `Everything` above).
#[test]
fn the_path_over_time_is_the_same_with_1_2_3_7_and_64_splits() {
    for name in [
        "two-point-path.client.pcap",
        "path-lost.pcap",
        "stream-stall.pcap",
        "diff-path-delay.b.pcap",
    ] {
        let cap = Capture::open(common::fixture(name)).unwrap();
        let run = |splits: usize, threads: usize| {
            let a = analyze(
                &cap,
                &EngineOptions {
                    threads,
                    splits: Some(splits),
                    ..EngineOptions::default()
                },
                || pcapsleuth::analysis::Rates::new(10_000_000),
            );
            to_json(&a.output.report())
        };
        let one = run(1, 1);
        assert!(one.contains("\"rtt_to_server_us\": {"), "{name}");
        for splits in [2, 3, 7, 64] {
            assert_eq!(
                one,
                run(splits, 2),
                "{name}: the path differs with {splits} splits"
            );
        }
    }
}

/// Series too long to keep at the width asked (here 1 ns: a row per packet) double their intervals until
/// they fit: the widened series, the ceilings looked for in them, the response-time rows and the load view
/// are the same whatever the splits, and every packet is still counted.
#[test]
fn series_widened_for_their_length_are_the_same_with_1_2_3_7_and_64_splits() {
    let mut widened = 0;
    for name in [
        "stream-stall.pcap",
        "no-cap.pcap",
        "err1146-storm.pcap",
        "snaplen80.pcap",
    ] {
        let cap = Capture::open(common::fixture(name)).unwrap();
        let run = |splits: usize| {
            let a = analyze(
                &cap,
                &EngineOptions {
                    threads: 2,
                    splits: Some(splits),
                    ..EngineOptions::default()
                },
                || Everything::new(1),
            );
            let rate = a.output.rates.report();
            let rt = a.output.rt.report(&a.output.mysql);
            let load = &a.output.load;
            (
                (rate.clone(), load.interval_s > load.asked_interval_s),
                to_json(&rate) + &to_json(&rt) + &to_json(load),
            )
        };
        let ((rate, load_widened), one) = run(1);
        if rate.interval_s > rate.asked_interval_s {
            widened += 1;
        }
        // Rows of 1 ns from the first packet to the last are far too many: the load view always widens.
        assert!(load_widened, "{name}: the load view was not widened");
        // Every packet counted once: rates times the seconds each interval covers add up to the packets.
        let packets: f64 = rate
            .total
            .iter()
            .map(|p| (p.c2s_pps + p.s2c_pps) * p.covered_s)
            .sum();
        let at_a_second = analyze(&cap, &EngineOptions::default(), || {
            Everything::new(1_000_000_000)
        });
        let expected: f64 = at_a_second
            .output
            .rates
            .report()
            .total
            .iter()
            .map(|p| (p.c2s_pps + p.s2c_pps) * p.covered_s)
            .sum();
        assert!(
            (packets - expected).abs() < 0.5,
            "{name}: {packets} packets in the widened series, {expected} at 1 s"
        );
        for splits in [2, 3, 7, 64] {
            assert_eq!(
                one,
                run(splits).1,
                "{name}: widened series differ with {splits} splits"
            );
        }
    }
    assert!(widened >= 2, "only {widened} of the captures were widened");
}

/// `pcapsleuth mysql` runs only the MySQL statistics (no rate series or RT distributions): its report and
/// the closes must be what the full run gives, with any number of splits.
#[test]
fn mysql_statistics_alone_give_the_full_runs_mysql_report() {
    for path in common::real_captures() {
        let cap = Capture::open(&path).unwrap();
        let full = analyze(&cap, &EngineOptions::default(), Everything::default);
        for splits in [1, 7] {
            let lean = analyze(
                &cap,
                &EngineOptions {
                    threads: 2,
                    splits: Some(splits),
                    ..EngineOptions::default()
                },
                MysqlStatistics::default,
            );
            assert_eq!(
                to_json(&full.output.mysql.clone().report()),
                to_json(&lean.output.clone().report()),
                "{path:?}: MySQL report differs at the Mysql level with {splits} splits"
            );
            assert_eq!(
                to_json(&first_reset(&full, usize::MAX)),
                to_json(&first_reset(&lean, usize::MAX)),
                "{path:?}: closes differ at the Mysql level with {splits} splits"
            );
        }
    }
}

/// `mysql --slower-than` lists the slowest requests with their phases: the same list whatever the splits
/// (every request of the real captures slower than 0 s is a candidate, so the bound of 100 is met and
/// the ties at equal times are broken the same way).
#[test]
fn slow_requests_and_their_phases_are_the_same_with_1_2_3_7_and_64_splits() {
    use pcapsleuth::analysis::MysqlFilter;
    for path in common::real_captures() {
        let cap = Capture::open(&path).unwrap();
        let filter = MysqlFilter {
            slower_than_ns: Some(0),
            ..MysqlFilter::default()
        };
        let mut first: Option<String> = None;
        for splits in [1, 2, 3, 7, 64] {
            let run = analyze(
                &cap,
                &EngineOptions {
                    threads: 2,
                    splits: Some(splits),
                    ..EngineOptions::default()
                },
                || MysqlStatistics::new(filter.clone()),
            );
            let report = run.output.clone().report();
            assert!(report.slow_requests.is_some(), "{path:?}");
            let json = to_json(&report);
            match &first {
                None => first = Some(json),
                Some(one) => assert_eq!(one, &json, "{path:?}: {splits} splits"),
            }
        }
    }
}

/// The statement groups beyond the bound are folded into one, the same whatever the splits: on every real
/// capture with more than a few groups, keeping 3 (the bound is 10,000 in use) lists 3 groups exactly as the
/// unbounded run does, and `other_statements` holds exactly what the others add up to.
#[test]
fn statement_groups_beyond_the_bound_fold_the_same_with_1_2_3_7_and_64_splits() {
    const KEEP: usize = 3;
    let mut folded = 0;
    for path in common::real_captures() {
        let cap = Capture::open(&path).unwrap();
        let run = |splits: usize, keep: Option<usize>| {
            analyze(
                &cap,
                &EngineOptions {
                    threads: 2,
                    splits: Some(splits),
                    ..EngineOptions::default()
                },
                || match keep {
                    Some(n) => MysqlStatistics::default().keeping_statement_groups(n),
                    None => MysqlStatistics::default(),
                },
            )
            .output
            .report()
        };
        let all = run(1, None);
        if all.statements.len() <= KEEP {
            continue;
        }
        assert!(all.other_statements.is_none(), "{path:?}");
        let bounded = run(1, Some(KEEP));
        for splits in [2, 3, 7, 64] {
            assert_eq!(
                to_json(&bounded),
                to_json(&run(splits, Some(KEEP))),
                "{path:?}: the bounded statements differ with {splits} splits"
            );
        }
        assert_eq!(bounded.statements.len(), KEEP, "{path:?}");
        for s in &bounded.statements {
            assert!(all.statements.contains(s), "{path:?}: {s:?} kept otherwise");
        }
        let others: Vec<_> = all
            .statements
            .iter()
            .filter(|s| !bounded.statements.contains(s))
            .collect();
        let o = bounded.other_statements.as_ref().expect("folded groups");
        assert_eq!(o.groups_kept, KEEP as u64);
        assert_eq!(
            o.count,
            others.iter().map(|s| s.count).sum::<u64>(),
            "{path:?}"
        );
        assert_eq!(o.errors, others.iter().map(|s| s.errors).sum::<u64>());
        assert_eq!(o.rows, others.iter().map(|s| s.rows).sum::<u64>());
        assert_eq!(
            o.requests.answered,
            others.iter().map(|s| s.requests.answered).sum::<u64>()
        );
        let total: f64 = others.iter().map(|s| s.total_us).sum();
        assert!(
            (o.total_us - total).abs() <= 1e-6 * total.max(1.0),
            "{path:?}"
        );
        // Everything but the statements is what the unbounded run says.
        let (mut a, mut b) = (all.clone(), bounded.clone());
        a.statements.clear();
        b.statements.clear();
        b.other_statements = None;
        assert_eq!(to_json(&a), to_json(&b), "{path:?}");
        folded += 1;
    }
    assert!(
        folded >= 5,
        "only {folded} captures with more than {KEEP} statement groups"
    );
}

/// The load-test view (`load`): requests in flight and connections open (swept over every request and
/// connection once merged), transactions followed per connection, the worst connections; at 10 ms
/// intervals, so that requests and transactions straddle many interval edges.
#[test]
fn the_load_view_is_the_same_with_1_2_3_7_and_64_splits() {
    for path in common::real_captures() {
        let cap = Capture::open(&path).unwrap();
        let with = |splits| {
            let run = analyze(
                &cap,
                &EngineOptions {
                    threads: 2,
                    splits: Some(splits),
                    ..EngineOptions::default()
                },
                || LoadTest::new(10_000_000),
            );
            to_json(&run.output)
        };
        let one = with(1);
        for splits in [2, 3, 7, 64] {
            assert_eq!(
                one,
                with(splits),
                "{path:?}: load differs with {splits} splits"
            );
        }
    }
}

/// The records `compare` lines up (every request with its sequence number, payload hash, response
/// frames and whether the response was resent; every connection's closes and unanswered requests) do not
/// depend on the splits either, nor do the first retransmissions of each connection that
/// `extract --annotate` comments.
#[test]
fn exchanges_endings_and_resends_are_the_same_with_1_2_7_and_64_splits() {
    for path in common::real_captures() {
        let cap = Capture::open(&path).unwrap();
        let with = |splits| {
            analyze(
                &cap,
                &EngineOptions {
                    threads: 2,
                    splits: Some(splits),
                    ..EngineOptions::default()
                },
                || {
                    (
                        Exchanges::default(),
                        Endings::default(),
                        Resends::new(|_, _| true),
                    )
                },
            )
            .output
        };
        let one = with(1);
        for splits in [2, 7, 64] {
            assert!(
                one == with(splits),
                "{path:?}: exchanges, endings or resends differ with {splits} splits"
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Any split count and thread count, on the capture with the most connection events.
    #[test]
    fn any_split_count_matches_one_split(splits in 1usize..400, threads in 1usize..4) {
        static ONE: std::sync::OnceLock<(Capture, Run<Statistics>)> = std::sync::OnceLock::new();
        let (cap, one) = ONE.get_or_init(|| {
            let cap = Capture::open(common::fixture("stream-stall.pcap")).unwrap();
            let one = reports(&cap, 1, 1).0;
            (cap, one)
        });
        let (a, _) = reports(cap, splits, threads);
        prop_assert_eq!(one, &a);
    }
}

/// Every event the engine gives an analysis, per connection, in the order it gave them.
#[derive(Default)]
struct Trace(std::collections::BTreeMap<u64, Vec<String>>);

/// A connection's events so far, and the frame of the last (to check their order).
#[derive(Default)]
struct ConnectionTrace {
    events: Vec<String>,
    last_frame: u64,
}

impl ConnectionTrace {
    fn note(&mut self, frame: u64, event: String) {
        assert!(
            frame >= self.last_frame,
            "{event} at frame {frame} came after frame {}",
            self.last_frame
        );
        self.last_frame = frame;
        self.events.push(event);
    }
}

impl pcapsleuth::analysis::Analysis for Trace {
    type PerConnection = ConnectionTrace;
    type Output = std::collections::BTreeMap<u64, Vec<String>>;

    fn connection_opened(&mut self, s: &mut ConnectionTrace, c: &ConnectionView<'_>) {
        let first = c.tcp().first_syn().map_or(0, |f| f.frame);
        s.note(
            0,
            format!("opened {:?} ({first}), client {}", c.key(), c.client()),
        );
    }
    fn segment(&mut self, s: &mut ConnectionTrace, c: &ConnectionView<'_>, x: &SegmentView<'_>) {
        let event = format!(
            "{} {:?} {:?} {}",
            x.at.frame,
            c.direction(x.side),
            x.class,
            x.tcp.payload_len
        );
        s.note(x.at.frame, event);
    }
    fn transaction(
        &mut self,
        s: &mut ConnectionTrace,
        _: &ConnectionView<'_>,
        t: &TransactionView<'_>,
    ) {
        let tx = t.transaction;
        let frame = tx.last_response_frame.unwrap_or(tx.request_frame);
        let event = format!(
            "transaction {} {:?} {:?} {:?} rt {:?} waited {:?} last request {} {} first byte {:?} phases {:?}",
            tx.request_frame,
            tx.command,
            t.fate(),
            t.error_code(),
            t.response_time_ns(),
            t.waited_ns(),
            tx.last_request_frame,
            tx.last_request_ts_ns,
            pcapsleuth::analysis::first_byte_ns(tx),
            pcapsleuth::analysis::RequestPhases::of(tx),
        );
        s.events.push(event);
        s.last_frame = s.last_frame.max(frame);
    }
    fn estimated_exchange(
        &mut self,
        s: &mut ConnectionTrace,
        _: &ConnectionView<'_>,
        x: &EstimatedExchangeView<'_>,
    ) {
        let x = x.exchange;
        let frame = x.response_end.map_or(x.request.frame, |a| a.frame);
        s.events.push(format!(
            "estimated {} {} {:?} {:?}",
            x.index,
            x.request.frame,
            x.ended,
            x.response_time_ns()
        ));
        s.last_frame = s.last_frame.max(frame);
    }
    fn close(&mut self, s: &mut ConnectionTrace, _: &ConnectionView<'_>, x: &CloseView<'_>) {
        let event = format!(
            "close {:?} {:?} mysql {:?}",
            x.tcp.flag,
            x.tcp.side,
            x.mysql.map(|m| m.phase)
        );
        s.note(x.tcp.at.frame, event);
    }
    fn connection_ended(&mut self, s: ConnectionTrace, c: &ConnectionView<'_>, e: &EndView<'_>) {
        let mut events = s.events;
        events.push(format!(
            "ended {:?}, MySQL transactions {:?}",
            e.by,
            e.mysql.map(|m| m.transactions)
        ));
        self.0.insert(c.tcp().first().frame, events);
    }
    fn merge(&mut self, other: Self) {
        self.0.extend(other.0);
    }
    fn finish(self, _: &pcapsleuth::analysis::CaptureFacts) -> Self::Output {
        self.0
    }
}

/// The contract of the analysis trait, on every real capture: the events of a connection come in capture
/// order, and they are the same events whatever the number of splits and threads.
#[test]
fn every_connections_events_come_in_capture_order_and_do_not_depend_on_the_splits() {
    for path in common::real_captures() {
        let cap = Capture::open(&path).unwrap();
        let trace = |splits, threads| {
            let opts = EngineOptions {
                threads,
                splits: Some(splits),
                ..EngineOptions::default()
            };
            analyze(&cap, &opts, Trace::default)
        };
        let one = trace(1, 1);
        assert_eq!(
            one.output.len(),
            one.connections.len(),
            "{path:?}: one end per connection"
        );
        let transactions: u64 = one
            .mysql_sessions
            .iter()
            .flatten()
            .map(|m| m.transactions)
            .sum();
        let told = one
            .output
            .values()
            .flatten()
            .filter(|e| e.starts_with("transaction"))
            .count() as u64;
        assert_eq!(told, transactions, "{path:?}: every transaction told once");
        for splits in [2, 7, 64] {
            assert_eq!(
                one.output,
                trace(splits, 2).output,
                "{path:?}: {splits} splits"
            );
        }
    }
}

/// `diff`: two runs compared give the same verdict, tests and figures whatever the splits and threads
/// of either run (the rank tests are computed from histograms, which merge exactly; nothing is drawn at
/// random).
#[test]
fn diff_is_the_same_with_1_2_3_7_and_64_splits() {
    use pcapsleuth::analysis::{diff, DiffSide, RunProfile};
    for name in [
        "path-delay",
        "clients-slower",
        "missing-table",
        "slow-reader",
    ] {
        let side = |run: &str, splits: usize, threads: usize| {
            let file = format!("diff-{name}.{run}.pcap");
            let cap = Capture::open(common::fixture(&file)).unwrap();
            let a = analyze(
                &cap,
                &EngineOptions {
                    threads,
                    splits: Some(splits),
                    ..EngineOptions::default()
                },
                || (Everything::default(), RunProfile::default()),
            );
            DiffSide::new(&a, &a.output.0, &a.output.1, vec![file])
        };
        let one = to_json(&diff(&side("a", 1, 1), &side("b", 1, 1)));
        for (splits, threads) in [(2, 2), (3, 1), (7, 2), (64, 2)] {
            let other = to_json(&diff(
                &side("a", splits, threads),
                &side("b", 64 / splits, threads),
            ));
            assert_eq!(one, other, "diff-{name}: differs with {splits} splits");
        }
    }
}
