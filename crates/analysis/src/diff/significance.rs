//! When a difference between two runs is one: larger than the runs' own noise.
//!
//! * **Distributions** (response times, think times) are compared with the Mann-Whitney U test (the
//!   Wilcoxon rank-sum test), two-sided, on the runs' histograms: their bins are under 0.8% wide and the
//!   same in every run, so each bin is one rank tie. The p-value is the normal approximation with the
//!   tie correction. It is computed from counts only: nothing is drawn at random, and histograms merge
//!   exactly, so the answer is the same for any number of splits and threads. The effect is the
//!   probability of superiority, P(B > A) + P(B = A) / 2 (0.5: no shift); a difference is called when the
//!   p-value is below the level after Holm's correction over the comparisons of one diff **and** the
//!   effect is at least 0.06 (`DIFF_MIN_EFFECT`) away from 0.5, so that a huge sample does not make a
//!   trivial shift a finding.
//! * **Counts over time** (requests or errors per second) are compared as two Poisson rates: given
//!   the total, B's count is binomial with B's share of the time under no change (the conditional
//!   test), normal approximation with a continuity correction; called when the p-value is below
//!   0.001 (`DIFF_RATE_LEVEL`) and the rate changed by at least 20% (`DIFF_MIN_RATE_CHANGE`). A paced workload
//!   varies less than a Poisson process, so this test is on the cautious side.

use serde::Serialize;

use crate::histogram::Histogram;
use crate::thresholds::{
    DIFF_LEVEL, DIFF_MIN_EFFECT, DIFF_MIN_RATE_CHANGE, DIFF_RATE_LEVEL, DIFF_TAIL_FACTOR,
    DIFF_TAIL_QUANTILE,
};

/// The Mann-Whitney U test of B's distribution against A's.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RankTest {
    /// Values in A and in B.
    pub n_a: u64,
    /// Values in B.
    pub n_b: u64,
    /// The probability of superiority, P(B > A) + P(B = A) / 2: 0.5 when neither tends to be larger,
    /// towards 1 when B's values are larger (slower).
    pub effect: f64,
    /// The standard score of U (normal approximation, tie-corrected).
    pub z: f64,
    /// The two-sided p-value.
    pub p: f64,
    /// Whether the difference is called one: `p` below the level after Holm's correction, and
    /// `effect` at least 0.06 (`DIFF_MIN_EFFECT`) from 0.5.
    pub significant: bool,
}

/// The Mann-Whitney U test of `b` against `a` (histograms of one resolution); `None` when either is
/// empty.
pub fn rank_test<const S: u32>(a: &Histogram<S>, b: &Histogram<S>) -> Option<RankTest> {
    let (n_a, n_b) = (a.count(), b.count());
    if n_a == 0 || n_b == 0 {
        return None;
    }
    // Walk both histograms' bins in order; a bin is a tie of every value in it.
    let mut ia = a.bins().peekable();
    let mut ib = b.bins().peekable();
    let (mut below_a, mut u_b, mut ties) = (0u64, 0f64, 0f64);
    loop {
        let (ca, cb) = match (ia.peek(), ib.peek()) {
            (None, None) => break,
            (Some(&(lo, _, n)), Some(&(lo_b, _, m))) if lo == lo_b => {
                ia.next();
                ib.next();
                (n, m)
            }
            (Some(&(lo, _, n)), Some(&(lo_b, _, _))) if lo < lo_b => {
                ia.next();
                (n, 0)
            }
            (Some(&(_, _, n)), None) => {
                ia.next();
                (n, 0)
            }
            (_, Some(&(_, _, m))) => {
                ib.next();
                (0, m)
            }
        };
        // Each of B's values in this bin is above every A value below it and ties with those in it.
        u_b += cb as f64 * (below_a as f64 + ca as f64 / 2.0);
        below_a += ca;
        let t = (ca + cb) as f64;
        ties += t * t * t - t;
    }
    let (na, nb) = (n_a as f64, n_b as f64);
    let n = na + nb;
    let mean = na * nb / 2.0;
    let variance = na * nb / 12.0 * ((n + 1.0) - ties / (n * (n - 1.0)).max(1.0));
    // With a continuity correction of a half towards the mean.
    let d = u_b - mean;
    let z = if variance > 0.0 {
        d.signum() * (d.abs() - 0.5).max(0.0) / variance.sqrt()
    } else {
        0.0
    };
    Some(RankTest {
        n_a,
        n_b,
        effect: u_b / (na * nb),
        z,
        p: two_sided_p(z),
        significant: false,
    })
}

impl RankTest {
    /// Whether the effect alone is large enough to be called (before the p-value is).
    pub fn large_enough(&self) -> bool {
        (self.effect - 0.5).abs() >= DIFF_MIN_EFFECT
    }
}

/// Marks as significant the tests whose p-value passes Holm's step-down correction at 0.01 (`DIFF_LEVEL`)
/// over all of `tests`, and whose effect is large enough. The order of `tests` does not matter.
pub fn holm(tests: &mut [RankTest]) {
    let mut order: Vec<usize> = (0..tests.len()).collect();
    order.sort_by(|&i, &j| tests[i].p.total_cmp(&tests[j].p).then(i.cmp(&j)));
    let m = tests.len();
    let mut rejecting = true;
    for (k, &i) in order.iter().enumerate() {
        // Step down: once one test fails its level, none after it passes.
        rejecting = rejecting && tests[i].p <= DIFF_LEVEL / (m - k) as f64;
        tests[i].significant = rejecting && tests[i].large_enough();
    }
}

/// Two Poisson rates compared: B's count against A's, each over its own time.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RateTest {
    /// A's rate per second.
    pub a_per_s: f64,
    /// B's rate per second.
    pub b_per_s: f64,
    /// B's rate over A's (infinite when A's is 0 and B's is not; 1 when both are 0).
    pub ratio: f64,
    /// The two-sided p-value of the conditional binomial test.
    pub p: f64,
    /// Whether the change is called one: `p` below 0.001 (`DIFF_RATE_LEVEL`) and the rate changed by at least
    /// 20% (`DIFF_MIN_RATE_CHANGE`).
    pub significant: bool,
}

/// The rates of `n_a` events in `t_a` seconds and `n_b` in `t_b` compared; `None` when a time is not
/// positive.
pub fn rate_test(n_a: u64, t_a: f64, n_b: u64, t_b: f64) -> Option<RateTest> {
    if !(t_a > 0.0 && t_b > 0.0) {
        return None;
    }
    let (a_per_s, b_per_s) = (n_a as f64 / t_a, n_b as f64 / t_b);
    let ratio = if n_a == 0 {
        if n_b == 0 {
            1.0
        } else {
            f64::INFINITY
        }
    } else {
        b_per_s / a_per_s
    };
    let n = (n_a + n_b) as f64;
    let share = t_b / (t_a + t_b);
    let p = if n == 0.0 {
        1.0
    } else {
        let sd = (n * share * (1.0 - share)).sqrt();
        let d = n_b as f64 - n * share;
        let z = (d.abs() - 0.5).max(0.0) / sd.max(f64::MIN_POSITIVE);
        two_sided_p(z)
    };
    let changed = (ratio - 1.0).abs() >= DIFF_MIN_RATE_CHANGE || !ratio.is_finite();
    Some(RateTest {
        a_per_s,
        b_per_s,
        ratio,
        p,
        significant: p < DIFF_RATE_LEVEL && changed,
    })
}

/// Two counts of events compared per request rather than per second: the same conditional binomial
/// test as [`rate_test`], with each run's answered requests in place of its seconds.
///
/// Zero windows are counted so: a client that stops reading stretches its own run, so per second of
/// that run its zero windows would be diluted by the very time they cost; per request, the same
/// workload is the same exposure.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CountTest {
    /// A's events per answered request.
    pub a_per_request: f64,
    /// B's events per answered request.
    pub b_per_request: f64,
    /// B's rate over A's (infinite when A's is 0 and B's is not; 1 when both are 0).
    pub ratio: f64,
    /// The two-sided p-value of the conditional binomial test.
    pub p: f64,
    /// Whether the change is called one: `p` below 0.001 (`DIFF_RATE_LEVEL`) and the rate changed by at
    /// least 20% (`DIFF_MIN_RATE_CHANGE`).
    pub significant: bool,
}

/// `n_a` events over `requests_a` answered requests against `n_b` over `requests_b`; `None` when
/// either run answered none, or neither has an event (nothing to compare).
pub fn count_test(n_a: u64, requests_a: u64, n_b: u64, requests_b: u64) -> Option<CountTest> {
    if n_a + n_b == 0 {
        return None;
    }
    let t = rate_test(n_a, requests_a as f64, n_b, requests_b as f64)?;
    Some(CountTest {
        a_per_request: t.a_per_s,
        b_per_request: t.b_per_s,
        ratio: t.ratio,
        p: t.p,
        significant: t.significant,
    })
}

/// The slowest requests of two runs compared: each run's share of requests at or above the
/// p99 (`DIFF_TAIL_QUANTILE`) of both runs' requests together, by the conditional binomial test of
/// [`count_test`] (requests in the tail per request). A threshold taken from both runs is the same
/// whichever is called A; bins of the histograms, not values, are compared: the threshold is the
/// lower edge of the bin that holds the p99, and a request is in the tail when its bin is.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TailTest {
    /// The p99 of both runs' requests together (the lower edge of its bin), µs.
    pub threshold_us: f64,
    /// A's requests at or above it, of `n_a`.
    pub a_above: u64,
    /// A's answered requests.
    pub n_a: u64,
    /// B's requests at or above it, of `n_b`.
    pub b_above: u64,
    /// B's answered requests.
    pub n_b: u64,
    /// B's share above over A's (infinite when A has none above).
    pub ratio: f64,
    /// The two-sided p-value of the conditional binomial test.
    pub p: f64,
    /// Whether the tail moved: `p` below 0.001 (`DIFF_RATE_LEVEL`) and one share at least twice the
    /// other (`DIFF_TAIL_FACTOR`).
    pub significant: bool,
}

impl TailTest {
    /// A's share of requests above the threshold.
    pub fn a_share(&self) -> f64 {
        self.a_above as f64 / self.n_a.max(1) as f64
    }

    /// B's share of requests above the threshold.
    pub fn b_share(&self) -> f64 {
        self.b_above as f64 / self.n_b.max(1) as f64
    }
}

/// The tails of `a` and `b` compared ([`TailTest`]); `None` when either is empty or no request of
/// either run lies above the threshold.
pub fn tail_test<const S: u32>(a: &Histogram<S>, b: &Histogram<S>) -> Option<TailTest> {
    let (n_a, n_b) = (a.count(), b.count());
    if n_a == 0 || n_b == 0 {
        return None;
    }
    let mut both = a.clone();
    both.merge(b);
    let p99 = both.quantile_ns(DIFF_TAIL_QUANTILE);
    // From the lower edge of the bin that holds the p99: a tail in one bin (a timeout's spike) would
    // otherwise have nothing above its own p99.
    let threshold = both
        .bins()
        .find(|&(_, hi, _)| hi >= p99)
        .map_or(p99, |(lo, _, _)| lo);
    let above = |h: &Histogram<S>| {
        h.bins()
            .filter(|&(lo, _, _)| lo >= threshold)
            .map(|(_, _, n)| n)
            .sum::<u64>()
    };
    let (a_above, b_above) = (above(a), above(b));
    let t = count_test(a_above, n_a, b_above, n_b)?;
    let thicker = t.ratio >= DIFF_TAIL_FACTOR || t.ratio <= 1.0 / DIFF_TAIL_FACTOR;
    Some(TailTest {
        threshold_us: threshold as f64 / 1e3,
        a_above,
        n_a,
        b_above,
        n_b,
        ratio: t.ratio,
        p: t.p,
        significant: t.significant && thicker,
    })
}

/// The two-sided p-value of a standard normal score.
fn two_sided_p(z: f64) -> f64 {
    erfc(z.abs() / std::f64::consts::SQRT_2).min(1.0)
}

/// The complementary error function, with a fractional error under 1.2e-7 everywhere (the Chebyshev
/// fit of Press et al., *Numerical Recipes*, `erfcc`): enough for p-values compared with levels of
/// 1e-2 to 1e-4.
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hist(values: &[u64]) -> Histogram {
        let mut h = Histogram::default();
        for &v in values {
            h.add(v);
        }
        h
    }

    #[test]
    fn erfc_matches_known_values() {
        for (x, want) in [
            (0.0, 1.0),
            (0.5, 0.479_500_122),
            (1.0, 0.157_299_207),
            (2.0, 0.004_677_735),
            (3.0, 2.209_049_7e-5),
            (-1.0, 1.842_700_793),
        ] {
            assert!(
                (erfc(x) - want).abs() <= want * 2e-7,
                "erfc({x}) = {}",
                erfc(x)
            );
        }
    }

    /// With no ties, U and its p-value are the textbook ones: B = {4,5,6} above A = {1,2,3} entirely.
    #[test]
    fn u_counts_the_pairs_b_wins() {
        let t = rank_test(&hist(&[1, 2, 3]), &hist(&[4, 5, 6])).unwrap();
        assert_eq!(t.effect, 1.0);
        let t = rank_test(&hist(&[1, 3, 5]), &hist(&[2, 4, 6])).unwrap();
        // B wins 1+2+3 = 6 of the 9 pairs.
        assert!((t.effect - 6.0 / 9.0).abs() < 1e-12);
        let same = rank_test(&hist(&[10, 20, 30]), &hist(&[10, 20, 30])).unwrap();
        assert_eq!((same.effect, same.z, same.p), (0.5, 0.0, 1.0));
    }

    /// A shift of a few percent in a large sample is significant but too small to be called; a large
    /// one is called; noise from one distribution is not.
    #[test]
    fn a_thicker_tail_is_called_whichever_run_is_a() {
        // 1,000 requests from 50 to 60 µs in each run; 60 at 2 ms (a spike in one bin) in B, 5 in A.
        let fast: Vec<u64> = (0..1000).map(|i| 50_000 + i * 10).collect();
        let with_slow = |n: usize| {
            let mut v = fast.clone();
            v.extend(std::iter::repeat_n(2_000_000, n));
            hist(&v)
        };
        let (a, b) = (with_slow(5), with_slow(60));
        let t = tail_test(&a, &b).unwrap();
        assert_eq!((t.a_above, t.b_above, t.n_a, t.n_b), (5, 60, 1005, 1060));
        assert!(t.threshold_us > 1900.0 && t.threshold_us <= 2000.0, "{t:?}");
        assert!(t.significant && t.ratio > 10.0, "{t:?}");
        let back = tail_test(&b, &a).unwrap();
        assert_eq!(back.threshold_us, t.threshold_us);
        assert!(
            back.significant && (back.ratio * t.ratio - 1.0).abs() < 1e-9,
            "{back:?}"
        );
        // Alike tails are not called; nor are a handful of slow requests against none.
        assert!(
            !tail_test(&with_slow(30), &with_slow(33))
                .unwrap()
                .significant
        );
        assert!(!tail_test(&with_slow(0), &with_slow(2)).unwrap().significant);
        assert!(tail_test(&hist(&[]), &b).is_none());
    }

    #[test]
    fn holm_and_the_effect_decide_together() {
        let a: Vec<u64> = (0..5000).map(|i| 50_000 + (i * 7919) % 50_000).collect();
        let small: Vec<u64> = a.iter().map(|v| v + 2_000).collect();
        let large: Vec<u64> = a.iter().map(|v| v * 2).collect();
        let noise: Vec<u64> = (0..5000).map(|i| 50_000 + (i * 104_729) % 50_000).collect();
        let s = rank_test(&hist(&a), &hist(&small)).unwrap();
        let l = rank_test(&hist(&a), &hist(&large)).unwrap();
        let n = rank_test(&hist(&a), &hist(&noise)).unwrap();
        assert!(s.p < 1e-6 && !s.large_enough(), "{s:?}");
        let mut tests = [s, l, n];
        holm(&mut tests);
        let called: Vec<bool> = tests.iter().map(|t| t.significant).collect();
        assert_eq!(called, [false, true, false], "{tests:?}");
    }

    #[test]
    fn rates_are_compared_over_their_own_time() {
        // The same rate over different lengths: no change.
        let same = rate_test(300, 3.0, 100, 1.0).unwrap();
        assert!(!same.significant && (same.ratio - 1.0).abs() < 1e-12);
        // 2,408 requests in 2.97 s against 2,520 in 3.00 s: within the noise.
        assert!(!rate_test(2408, 2.972, 2520, 3.001).unwrap().significant);
        // 4,800 in 0.24 s against 4,800 in 4.22 s: a drop of 94%.
        let drop = rate_test(4800, 0.238, 4800, 4.221).unwrap();
        assert!(drop.significant && drop.ratio < 0.1);
        // New in B.
        let new = rate_test(0, 3.0, 305, 3.0).unwrap();
        assert!(new.significant && new.ratio.is_infinite());
    }

    /// Zero windows per request: 21 in B's 120 requests against none in A's is called, though B's run
    /// lasted 15 times as long (per second the test would find nothing); a handful is not.
    #[test]
    fn counts_are_compared_per_request() {
        let slow_reader = count_test(0, 120, 21, 120).unwrap();
        assert!(slow_reader.significant && slow_reader.ratio.is_infinite());
        assert!((slow_reader.b_per_request - 0.175).abs() < 1e-12);
        assert!(!rate_test(0, 0.163, 21, 2.38).unwrap().significant);
        assert!(!count_test(1, 120, 3, 120).unwrap().significant);
        assert_eq!(count_test(0, 120, 0, 120), None);
        assert_eq!(count_test(0, 0, 5, 120), None);
    }
}
