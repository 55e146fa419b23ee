//! Two runs compared (`pcapsleuth diff A B`): the same workload before and after a change, the good
//! environment and the bad one, the old primary and the new.
//!
//! Each run is read on its own ([`DiffSide`]: a run of [`crate::Everything`] and [`RunProfile`]); then
//! [`diff`] lines them up:
//!
//! * **matching** ([`matching`]): servers by endpoint (or the only ones left), statement groups by
//!   command and fingerprint, error codes by code; runs of different lengths are compared on rates (per
//!   second of each run's span of requests) and shares, times as distributions;
//! * **significance** ([`significance`]): a difference is one only when it is larger than the runs' own
//!   noise: a rank test of distributions, a rate test of counts, computed from counts alone
//!   (deterministic, the same for any number of splits);
//! * **the verdict** ([`verdict`]): what changed, where the added time went, and the direction of
//!   cause: a server that got faster because its clients sent less is said so, not "all good".

mod matching;
mod model;
mod profile;
mod side;
mod significance;
mod verdict;

pub use model::{
    CapturePoint, Change, Compared, ConnectionFacts, Diff, ErrorDiff, ErrorStatement, Load,
    Matching, Method, Pair, PathFacts, PathLeg, RunSummary, ServerDiff, ServerMatch, StatementDiff,
    StatementSide, Throughput,
};
pub use profile::{ConnectionLoad, LoadProfile, RunProfile};
pub use side::DiffSide;
pub use significance::{
    count_test, holm, rank_test, rate_test, tail_test, CountTest, RankTest, RateTest, TailTest,
};

use crate::histogram::Histogram;
use crate::mysql::ErrorDetail;
use crate::thresholds::{
    DIFF_LEVEL, DIFF_MIN_EFFECT, DIFF_MIN_RATE_CHANGE, DIFF_MIN_TESTED, DIFF_RATE_LEVEL,
};
use crate::units::{count, seconds};

use side::SideStatement;

/// Runs A and B compared: every figure side by side with the test of its change, and the verdict.
///
/// ```
/// use pcapsleuth_analysis::{analyze, diff, DiffSide, EngineOptions, Everything, RunProfile};
///
/// let side = |name: &str| {
///     let path = format!("{}/../../fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
///     let cap = pcapsleuth_capture::Capture::open(&path).unwrap();
///     let run = analyze(&cap, &EngineOptions::default(), || {
///         (Everything::default(), RunProfile::default())
///     });
///     DiffSide::new(&run, &run.output.0, &run.output.1, vec![name.to_string()])
/// };
/// let d = diff(&side("diff-missing-table.a.pcap"), &side("diff-missing-table.b.pcap"));
/// assert!(d.verdict.starts_with("New in B: ERR 1146"), "{}", d.verdict);
/// assert_eq!((d.errors[0].count.a, d.errors[0].count.b), (0, 305));
/// ```
pub fn diff(a: &DiffSide, b: &DiffSide) -> Diff {
    let (ta, tb) = (a.summary.request_span_s, b.summary.request_span_s);
    let pairs = matching::pair_statements(&a.statements, &b.statements);
    let servers = matching::pair_servers(
        &a.servers.iter().map(|s| s.0).collect::<Vec<_>>(),
        &b.servers.iter().map(|s| s.0).collect::<Vec<_>>(),
    );
    let tests = RankTests::of(a, b, &pairs, &servers);
    let statements = statement_diffs(&pairs, &tests, (ta, tb));
    let errors = error_diffs(a, b, (ta, tb));
    let server_diffs: Vec<ServerDiff> = servers
        .into_iter()
        .zip(&tests.servers)
        .map(|((i, j, m), &s)| ServerDiff {
            matched: m,
            a: i.map(|i| a.servers[i].1.clone()),
            b: j.map(|j| b.servers[j].1.clone()),
            test: tests.get(s),
        })
        .collect();
    let summary = |h: &Histogram| h.summary_us();
    let mut d = Diff {
        verdict: String::new(),
        method: method(),
        runs: Pair {
            a: a.summary.clone(),
            b: b.summary.clone(),
        },
        matched: matched(a, b, &pairs, &server_diffs),
        rt_us: Compared {
            a: summary(&a.profile.rt),
            b: summary(&b.profile.rt),
            test: tests.get(tests.overall),
        },
        rt_tail: tail_test(&a.profile.rt, &b.profile.rt),
        tls_estimated_us: (a.tls_estimated.count() + b.tls_estimated.count() > 0).then(|| {
            Compared {
                a: summary(&a.tls_estimated),
                b: summary(&b.tls_estimated),
                // Tested on its own, as the transactions' times are: not one of the requests' figures.
                test: rank_test_alone(&a.tls_estimated, &b.tls_estimated),
            }
        }),
        load: load(a, b, tests.get(tests.think)),
        statements,
        errors,
        servers: server_diffs,
        humps: Pair {
            a: a.modes.modes.clone(),
            b: b.modes.modes.clone(),
        },
        connections: Pair {
            a: a.connections.clone(),
            b: b.connections.clone(),
        },
        path: path_facts(a, b, tests.rtt.map(|s| tests.get(s))),
        ceilings: Pair {
            a: a.ceilings.clone(),
            b: b.ceilings.clone(),
        },
        throughput: Pair {
            a: a.throughput.clone(),
            b: b.throughput.clone(),
        },
    };
    d.verdict = verdict::verdict(&d);
    d
}

/// The rank test of a figure judged on its own, not in the Holm family of the response times (a
/// family of one: the level as it is).
fn rank_test_alone(a: &Histogram, b: &Histogram) -> Option<RankTest> {
    rank_test(a, b).map(|t| {
        let mut one = [t];
        holm(&mut one);
        one[0]
    })
}

/// The statement groups of A and B as they were paired, each with its own in `b` (or `None`).
type StatementPairs<'a> = [(Option<&'a SideStatement>, Option<&'a SideStatement>)];

/// Every rank test of a diff, corrected together (Holm): the overall response time, the think time, the
/// round trips each way, each statement group's, each paired server's; and where each figure's test is.
struct RankTests {
    tests: Vec<RankTest>,
    overall: Option<usize>,
    think: Option<usize>,
    /// To the server, to the client.
    rtt: [Option<usize>; 2],
    /// By statement pair, in the pairs' order.
    statements: Vec<Option<usize>>,
    /// By server pair, in the pairs' order.
    servers: Vec<Option<usize>>,
}

impl RankTests {
    fn of(
        a: &DiffSide,
        b: &DiffSide,
        pairs: &StatementPairs<'_>,
        servers: &[(Option<usize>, Option<usize>, ServerMatch)],
    ) -> RankTests {
        let mut tests: Vec<RankTest> = Vec::new();
        let mut slot = |t: Option<RankTest>| {
            t.map(|t| {
                tests.push(t);
                tests.len() - 1
            })
        };
        let overall = slot(rank_test(&a.profile.rt, &b.profile.rt));
        let think = slot(rank_test(&a.profile.think, &b.profile.think));
        let rtt = [0, 1].map(|d| slot(rank_test(&a.path.rtt[d], &b.path.rtt[d])));
        let statements: Vec<Option<usize>> = pairs
            .iter()
            .map(|(sa, sb)| match (sa, sb) {
                (Some(x), Some(y))
                    if x.requests.answered >= DIFF_MIN_TESTED
                        && y.requests.answered >= DIFF_MIN_TESTED =>
                {
                    slot(rank_test(&x.rt, &y.rt))
                }
                _ => None,
            })
            .collect();
        let servers: Vec<Option<usize>> = servers
            .iter()
            .map(|(i, j, _)| match (i, j) {
                (Some(i), Some(j)) => slot(rank_test(&a.servers[*i].2, &b.servers[*j].2)),
                _ => None,
            })
            .collect();
        holm(&mut tests);
        RankTests {
            tests,
            overall,
            think,
            rtt,
            statements,
            servers,
        }
    }

    /// The corrected test in `slot`, when that figure was tested.
    fn get(&self, slot: Option<usize>) -> Option<RankTest> {
        slot.and_then(|i| self.tests.get(i).copied())
    }
}

/// The statement groups side by side, each with its share of the added (or saved) time among the changes
/// of its sign, the largest change first.
fn statement_diffs(
    pairs: &StatementPairs<'_>,
    tests: &RankTests,
    spans: (f64, f64),
) -> Vec<StatementDiff> {
    let mut statements: Vec<StatementDiff> = pairs
        .iter()
        .zip(&tests.statements)
        .map(|((sa, sb), &s)| statement_diff(*sa, *sb, tests.get(s), spans))
        .collect();
    let (gained, saved) = statements.iter().fold((0.0, 0.0), |(g, s), x| {
        if x.added_us > 0.0 {
            (g + x.added_us, s)
        } else {
            (g, s + x.added_us)
        }
    });
    for s in &mut statements {
        let of = if s.added_us > 0.0 { gained } else { saved };
        s.added_share = if of != 0.0 { s.added_us / of } else { 0.0 };
    }
    statements.sort_by(|x, y| {
        y.added_us
            .abs()
            .total_cmp(&x.added_us.abs())
            .then(total_b(y).total_cmp(&total_b(x)))
            .then(x.fingerprint.cmp(&y.fingerprint))
            .then(x.command.cmp(&y.command))
    });
    statements
}

/// How the tests are made: the same for every diff.
fn method() -> Method {
    Method {
        distributions: "mann_whitney_u",
        samples: "histogram bins (under 0.8% wide), each bin one tie; normal approximation with the tie correction",
        level: DIFF_LEVEL,
        correction: "holm",
        min_effect: DIFF_MIN_EFFECT,
        rates: "poisson_conditional_binomial",
        rate_level: DIFF_RATE_LEVEL,
        min_rate_change: DIFF_MIN_RATE_CHANGE,
        min_tested: DIFF_MIN_TESTED,
        random: false,
    }
}

/// What was matched with what: the servers, and how many statement groups are in both runs or one.
fn matched(
    a: &DiffSide,
    b: &DiffSide,
    pairs: &StatementPairs<'_>,
    server_diffs: &[ServerDiff],
) -> Matching {
    let in_both = pairs
        .iter()
        .filter(|(x, y)| x.is_some() && y.is_some())
        .count();
    let only_a = pairs.iter().filter(|(_, y)| y.is_none()).count();
    let only_b = pairs.iter().filter(|(x, _)| x.is_none()).count();
    Matching {
        notes: matching_notes(
            server_diffs,
            (in_both, only_a, only_b),
            (a.statements_folded, b.statements_folded),
            (a.summary.request_span_s, b.summary.request_span_s),
        ),
        servers: server_diffs.iter().map(|s| s.matched.clone()).collect(),
        statements_in_both: in_both,
        statements_only_a: only_a,
        statements_only_b: only_b,
    }
}

/// The load each run put on its servers: rates of requests and transactions, think time, requests in
/// flight, connections; `think` is the think time's corrected rank test.
fn load(a: &DiffSide, b: &DiffSide, think: Option<RankTest>) -> Load {
    let (ta, tb) = (a.summary.request_span_s, b.summary.request_span_s);
    let summary = |h: &Histogram| h.summary_us();
    let in_flight = |s: &DiffSide| {
        let span = s.summary.request_span_s;
        if span > 0.0 {
            s.profile.rt.sum_ns() as f64 / 1e9 / span
        } else {
            0.0
        }
    };
    Load {
        requests_per_s: Pair {
            a: per_s(a.summary.requests, ta),
            b: per_s(b.summary.requests, tb),
        },
        rate_test: rate_test(a.summary.requests, ta, b.summary.requests, tb),
        think_time_us: Compared {
            a: summary(&a.profile.think),
            b: summary(&b.profile.think),
            test: think,
        },
        think_p10_us: Pair {
            a: a.profile.think.quantile_ns(0.1) as f64 / 1e3,
            b: b.profile.think.quantile_ns(0.1) as f64 / 1e3,
        },
        in_flight: Pair {
            a: in_flight(a),
            b: in_flight(b),
        },
        in_flight_max: Pair {
            a: a.load.in_flight.max,
            b: b.load.in_flight.max,
        },
        transactions_per_s: Pair {
            a: per_s(a.load.transactions.counts.ended(), ta),
            b: per_s(b.load.transactions.counts.ended(), tb),
        },
        transaction_rate_test: match (
            a.load.transactions.counts.ended(),
            b.load.transactions.counts.ended(),
        ) {
            (0, 0) => None,
            (na, nb) => rate_test(na, ta, nb, tb),
        },
        transaction_rt_us: Compared {
            a: summary(&a.load.transaction_rt),
            b: summary(&b.load.transaction_rt),
            test: rank_test_alone(&a.load.transaction_rt, &b.load.transaction_rt),
        },
        idle_in_transaction_share: Pair {
            a: a.load.transactions.idle_share,
            b: b.load.transactions.idle_share,
        },
        active_connections: Pair {
            a: a.profile.active_connections,
            b: b.profile.active_connections,
        },
        connection_medians_us: Pair {
            a: summary(&a.profile.connection_medians),
            b: summary(&b.profile.connection_medians),
        },
    }
}

/// The path in each run: handshakes, round trips each way (`rtt`: their corrected rank tests, to the
/// server and to the client), resends, duplicate ACKs and zero windows.
fn path_facts(a: &DiffSide, b: &DiffSide, rtt: [Option<RankTest>; 2]) -> PathFacts {
    let (ta, tb) = (a.summary.request_span_s, b.summary.request_span_s);
    let summary = |h: &Histogram| h.summary_us();
    PathFacts {
        handshake_rtt_us: Pair {
            a: summary(&a.handshake_rtt),
            b: summary(&b.handshake_rtt),
        },
        syn_to_synack_us: Pair {
            a: summary(&a.syn_to_synack),
            b: summary(&b.syn_to_synack),
        },
        synack_to_ack_us: Pair {
            a: summary(&a.synack_to_ack),
            b: summary(&b.synack_to_ack),
        },
        retransmissions: Pair {
            a: a.retransmissions,
            b: b.retransmissions,
        },
        retransmitted_share: Pair {
            a: share(a.retransmissions, a.packets),
            b: share(b.retransmissions, b.packets),
        },
        zero_windows: Pair {
            a: a.zero_windows,
            b: b.zero_windows,
        },
        rtt_to_server_us: Compared {
            a: a.path.rtt[0].summary_us(),
            b: b.path.rtt[0].summary_us(),
            test: rtt[0],
        },
        rtt_to_client_us: Compared {
            a: a.path.rtt[1].summary_us(),
            b: b.path.rtt[1].summary_us(),
            test: rtt[1],
        },
        path_leg: match (a.summary.capture_point, b.summary.capture_point) {
            (CapturePoint::Client, CapturePoint::Client) => Some(PathLeg::ToServer),
            (CapturePoint::Server, CapturePoint::Server) => Some(PathLeg::ToClient),
            (CapturePoint::Client | CapturePoint::Server, CapturePoint::Unknown) => {
                leg(a.summary.capture_point)
            }
            (CapturePoint::Unknown, p) => leg(p),
            _ => None,
        },
        c2s_resends: Pair {
            a: a.path.resend_counts(0),
            b: b.path.resend_counts(0),
        },
        s2c_resends: Pair {
            a: a.path.resend_counts(1),
            b: b.path.resend_counts(1),
        },
        resend_rate_test: match (a.path.resends_total(), b.path.resends_total()) {
            (0, 0) => None,
            (na, nb) => rate_test(na, ta, nb, tb),
        },
        dup_acks: Pair {
            a: a.path.dup_acks.iter().sum(),
            b: b.path.dup_acks.iter().sum(),
        },
        dup_ack_rate_test: match (
            a.path.dup_acks.iter().sum::<u64>(),
            b.path.dup_acks.iter().sum::<u64>(),
        ) {
            (0, 0) => None,
            (na, nb) => rate_test(na, ta, nb, tb),
        },
        client_zero_windows: Pair {
            a: a.zero_windows_by[0],
            b: b.zero_windows_by[0],
        },
        server_zero_windows: Pair {
            a: a.zero_windows_by[1],
            b: b.zero_windows_by[1],
        },
        client_zero_window_test: count_test(
            a.zero_windows_by[0],
            a.summary.answered,
            b.zero_windows_by[0],
            b.summary.answered,
        ),
        server_zero_window_test: count_test(
            a.zero_windows_by[1],
            a.summary.answered,
            b.zero_windows_by[1],
            b.summary.answered,
        ),
        client_zero_window_s: Pair {
            a: a.path.zero_window_ns[0] as f64 / 1e9,
            b: b.path.zero_window_ns[0] as f64 / 1e9,
        },
        server_zero_window_s: Pair {
            a: a.path.zero_window_ns[1] as f64 / 1e9,
            b: b.path.zero_window_ns[1] as f64 / 1e9,
        },
    }
}

/// The leg of the round trip that crossed the path at a capture point: the other end's ACKs.
fn leg(p: CapturePoint) -> Option<PathLeg> {
    match p {
        CapturePoint::Client => Some(PathLeg::ToServer),
        CapturePoint::Server => Some(PathLeg::ToClient),
        CapturePoint::Unknown => None,
    }
}

fn per_s(n: u64, span_s: f64) -> f64 {
    if span_s > 0.0 {
        n as f64 / span_s
    } else {
        0.0
    }
}

fn share(n: u64, of: u64) -> f64 {
    if of == 0 {
        0.0
    } else {
        n as f64 / of as f64
    }
}

fn total_b(s: &StatementDiff) -> f64 {
    s.b.as_ref().map_or(0.0, |b| b.total_us)
}

/// One statement group's row: its sides, its change, the time B's requests took beyond A's speed.
fn statement_diff(
    a: Option<&SideStatement>,
    b: Option<&SideStatement>,
    test: Option<RankTest>,
    (ta, tb): (f64, f64),
) -> StatementDiff {
    let side = |s: &SideStatement, span: f64| StatementSide {
        count: s.requests.total(),
        per_s: per_s(s.requests.total(), span),
        answered: s.requests.answered,
        errors: s.errors,
        rows: s.rows,
        request_bytes: s.request_bytes,
        response_bytes: s.response_bytes,
        total_us: s.rt.sum_ns() as f64 / 1e3,
        rt_us: s.rt.summary_us(),
    };
    let change = match (a, b, &test) {
        (None, _, _) => Change::New,
        (_, None, _) => Change::Gone,
        (_, _, None) => Change::TooFew,
        (_, _, Some(t)) if !t.significant => Change::Unchanged,
        (_, _, Some(t)) if t.effect > 0.5 => Change::Slower,
        _ => Change::Faster,
    };
    let added_us = match (a, b, change) {
        (Some(x), Some(y), Change::Slower | Change::Faster) => {
            let mean = |h: &Histogram| h.sum_ns() as f64 / h.count().max(1) as f64 / 1e3;
            y.rt.count() as f64 * (mean(&y.rt) - mean(&x.rt))
        }
        _ => 0.0,
    };
    let any = a.or(b);
    StatementDiff {
        command: any.map_or_else(String::new, |s| s.command.name().to_string()),
        fingerprint: any.map_or_else(String::new, |s| s.fingerprint.clone()),
        change,
        a: a.map(|s| side(s, ta)),
        b: b.map(|s| side(s, tb)),
        test,
        rate_test: rate_test(
            a.map_or(0, |s| s.requests.total()),
            ta,
            b.map_or(0, |s| s.requests.total()),
            tb,
        ),
        added_us,
        added_share: 0.0,
    }
}

/// Error codes of both runs, in code order, with the statement groups each answered.
fn error_diffs(a: &DiffSide, b: &DiffSide, (ta, tb): (f64, f64)) -> Vec<ErrorDiff> {
    let mut codes: Vec<u16> = a
        .errors
        .iter()
        .chain(&b.errors)
        .map(|(d, _)| d.code)
        .collect();
    codes.sort_unstable();
    codes.dedup();
    codes
        .into_iter()
        .map(|code| {
            fn find(s: &DiffSide, code: u16) -> Option<&ErrorDetail> {
                s.errors.iter().find(|(d, _)| d.code == code).map(|e| &e.0)
            }
            let (ea, eb) = (find(a, code), find(b, code));
            let count = Pair {
                a: ea.map_or(0, |e| e.count),
                b: eb.map_or(0, |e| e.count),
            };
            let rate = rate_test(count.a, ta, count.b, tb);
            let change = match (count.a, count.b, rate) {
                (0, _, _) => "new",
                (_, 0, _) => "gone",
                (_, _, Some(r)) if r.significant && r.ratio > 1.0 => "more",
                (_, _, Some(r)) if r.significant => "fewer",
                _ => "same",
            };
            let with_code = |s: &SideStatement| {
                s.error_codes
                    .iter()
                    .find(|(c, _)| *c == code)
                    .map_or(0, |(_, n)| *n)
            };
            let mut statements: Vec<ErrorStatement> =
                matching::pair_statements(&a.statements, &b.statements)
                    .into_iter()
                    .filter_map(|(x, y)| {
                        let n = Pair {
                            a: x.map_or(0, with_code),
                            b: y.map_or(0, with_code),
                        };
                        let s = x.or(y)?;
                        (n.a + n.b > 0).then(|| ErrorStatement {
                            command: s.command.name().to_string(),
                            fingerprint: s.fingerprint.clone(),
                            count: n,
                        })
                    })
                    .collect();
            statements.sort_by(|x, y| {
                (y.count.b + y.count.a)
                    .cmp(&(x.count.b + x.count.a))
                    .then(x.fingerprint.cmp(&y.fingerprint))
            });
            let detail = eb.or(ea);
            ErrorDiff {
                code,
                sql_state: detail.map_or_else(String::new, |d| d.sql_state.clone()),
                change,
                count,
                rate_test: rate,
                messages: detail.map_or_else(Vec::new, |d| d.messages.clone()),
                statements,
            }
        })
        .collect()
}

/// What was matched with what, in words.
fn matching_notes(
    servers: &[ServerDiff],
    (in_both, only_a, only_b): (usize, usize, usize),
    (folded_a, folded_b): (u64, u64),
    (ta, tb): (f64, f64),
) -> Vec<String> {
    let mut notes = Vec::new();
    for s in servers {
        let m = &s.matched;
        notes.push(match (m.a.as_deref(), m.b.as_deref(), m.basis) {
            (Some(x), Some(_), "same_endpoint") => {
                format!("A's server {x} with B's (the same endpoint)")
            }
            (Some(x), Some(y), _) => format!(
                "A's server {x} with B's {y} (the only server of each run not matched by endpoint)"
            ),
            (Some(x), None, _) => format!("A's server {x}: not in B"),
            (None, Some(y), _) => format!("B's server {y}: not in A"),
            (None, None, _) => continue,
        });
    }
    notes.push(format!(
        "statement groups by command and fingerprint: {} in both, {} only in A, {} only in B",
        count(in_both as u64),
        count(only_a as u64),
        count(only_b as u64)
    ));
    // A run with more groups than are kept one by one: the rest is one sum, compared in the totals only.
    for (run, folded) in [("A", folded_a), ("B", folded_b)] {
        if folded > 0 {
            notes.push(format!(
                "{run} had more statement groups than the {} kept one by one: {} of its requests are in                  groups folded together, in the totals but not compared group by group",
                count(crate::STATEMENT_GROUPS_KEPT as u64),
                count(folded)
            ));
        }
    }
    if ta > 0.0 && tb > 0.0 && ((ta - tb).abs() / ta.max(tb)) > 0.05 {
        notes.push(format!(
            "the runs' requests span {} and {}: counts are compared per second, times as \
             distributions",
            seconds(ta),
            seconds(tb)
        ));
    } else {
        notes.push(
            "counts are compared per second of each run's requests, times as distributions".into(),
        );
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::matching_notes;

    #[test]
    fn a_run_whose_statement_groups_were_folded_says_so() {
        let notes = matching_notes(&[], (3, 0, 0), (0, 42), (1.0, 1.0));
        assert!(
            notes.iter().any(|n| n.starts_with(
                "B had more statement groups than the 10,000 kept one by one: 42 of its requests"
            )),
            "{notes:?}"
        );
        assert!(!notes.iter().any(|n| n.starts_with("A had")), "{notes:?}");
        let none = matching_notes(&[], (3, 0, 0), (0, 0), (1.0, 1.0));
        assert!(!none.iter().any(|n| n.contains("folded")), "{none:?}");
    }
}
