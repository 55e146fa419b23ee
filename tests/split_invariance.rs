//! The invariant that lets pcapsleuth be parallel and right: every analysis gives the identical report
//! whatever the number of splits and threads.

mod common;

use pcapsleuth::analysis::{analyze, first_reset, Aggregation, EngineOptions};
use pcapsleuth::capture::Capture;
use pcapsleuth::report::to_json;
use proptest::prelude::*;

fn reports(
    cap: &Capture,
    splits: usize,
    threads: usize,
) -> (pcapsleuth::analysis::Analysis, String) {
    let a = analyze(
        cap,
        &EngineOptions {
            threads,
            splits: Some(splits),
            interval_ns: 100_000_000,
            ..EngineOptions::default()
        },
    );
    // The whole reports as a user sees them: first-reset and the MySQL report, as JSON.
    let json =
        to_json(&first_reset(&a, usize::MAX)) + &to_json(&pcapsleuth::analysis::full_report(&a));
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

/// `pcapsleuth mysql` collects only MySQL statistics (no rate series or RT distributions): its report and
/// the closes must be what the full run gives, with any number of splits.
#[test]
fn the_mysql_level_gives_the_full_runs_mysql_report() {
    for path in common::real_captures() {
        let cap = Capture::open(&path).unwrap();
        let full = analyze(&cap, &EngineOptions::default());
        for splits in [1, 7] {
            let lean = analyze(
                &cap,
                &EngineOptions {
                    threads: 2,
                    splits: Some(splits),
                    aggregation: Aggregation::Mysql,
                    ..EngineOptions::default()
                },
            );
            assert_eq!(
                to_json(&full.mysql.clone().report()),
                to_json(&lean.mysql.clone().report()),
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

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Any split count and thread count, on the capture with the most connection events.
    #[test]
    fn any_split_count_matches_one_split(splits in 1usize..400, threads in 1usize..4) {
        static ONE: std::sync::OnceLock<(Capture, pcapsleuth::analysis::Analysis)> = std::sync::OnceLock::new();
        let (cap, one) = ONE.get_or_init(|| {
            let cap = Capture::open(common::fixture("stream-stall.pcap")).unwrap();
            let one = reports(&cap, 1, 1).0;
            (cap, one)
        });
        let (a, _) = reports(cap, splits, threads);
        prop_assert_eq!(one, &a);
    }
}
