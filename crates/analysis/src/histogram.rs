//! Response-time distributions in bounded memory: a sparse histogram with logarithmic bins 1% wide.
//!
//! Adding is commutative and merging is addition, so a distribution does not depend on how flows were
//! spread over workers (split invariance). Percentiles are the upper edge of the bin holding the rank,
//! clamped to the exact minimum and maximum: at most 1% above the exact value, the same resolution
//! pt-query-digest's own buckets have (5%).

use std::collections::BTreeMap;

use serde::Serialize;

/// Bin growth factor: each bin is 1% wider than the previous one.
const GROWTH: f64 = 1.01;

/// A distribution of durations in nanoseconds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Histogram {
    bins: BTreeMap<u16, u64>,
    count: u64,
    sum_ns: u128,
    min_ns: u64,
    max_ns: u64,
}

fn bin_of(ns: u64) -> u16 {
    if ns <= 1 {
        return 0;
    }
    ((ns as f64).ln() / GROWTH.ln())
        .floor()
        .min(f64::from(u16::MAX)) as u16
}

fn upper_edge(bin: u16) -> u64 {
    GROWTH.powi(i32::from(bin) + 1).ceil() as u64
}

/// The summary every distribution prints: count, mean and percentiles in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Default)]
pub struct RtSummary {
    pub count: u64,
    pub mean: f64,
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
    pub max: f64,
    pub min: f64,
}

impl Histogram {
    pub fn add(&mut self, ns: u64) {
        *self.bins.entry(bin_of(ns)).or_insert(0) += 1;
        if self.count == 0 || ns < self.min_ns {
            self.min_ns = ns;
        }
        self.max_ns = self.max_ns.max(ns);
        self.count += 1;
        self.sum_ns += u128::from(ns);
    }

    pub fn merge(&mut self, other: &Histogram) {
        if other.count == 0 {
            return;
        }
        for (&b, &n) in &other.bins {
            *self.bins.entry(b).or_insert(0) += n;
        }
        if self.count == 0 || other.min_ns < self.min_ns {
            self.min_ns = other.min_ns;
        }
        self.max_ns = self.max_ns.max(other.max_ns);
        self.count += other.count;
        self.sum_ns += other.sum_ns;
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    pub fn sum_ns(&self) -> u128 {
        self.sum_ns
    }

    /// The value at quantile `q` (0..=1), in nanoseconds.
    pub fn quantile_ns(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        let mut seen = 0;
        for (&b, &n) in &self.bins {
            seen += n;
            if seen >= rank {
                return upper_edge(b).clamp(self.min_ns, self.max_ns);
            }
        }
        self.max_ns
    }

    /// How many values fell in bins whose upper edge lies in `(lo_ns, hi_ns]`.
    pub fn count_between(&self, lo_ns: u64, hi_ns: u64) -> u64 {
        self.bins()
            .filter(|&(_, hi, _)| hi > lo_ns && hi <= hi_ns)
            .map(|(_, _, n)| n)
            .sum()
    }

    /// Bins as (lower edge ns, upper edge ns, count), in order: what plots and mode detection read.
    pub fn bins(&self) -> impl Iterator<Item = (u64, u64, u64)> + '_ {
        self.bins.iter().map(|(&b, &n)| {
            let lo = if b == 0 { 0 } else { upper_edge(b - 1) };
            (lo, upper_edge(b), n)
        })
    }

    pub fn summary_us(&self) -> RtSummary {
        let us = |ns: u64| ns as f64 / 1e3;
        RtSummary {
            count: self.count,
            mean: if self.count == 0 {
                0.0
            } else {
                (self.sum_ns / u128::from(self.count)) as f64 / 1e3
            },
            p50: us(self.quantile_ns(0.50)),
            p95: us(self.quantile_ns(0.95)),
            p99: us(self.quantile_ns(0.99)),
            max: us(self.max_ns),
            min: us(self.min_ns),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_within_one_percent_above_the_exact_value() {
        let mut h = Histogram::default();
        for v in 1..=10_000u64 {
            h.add(v * 1000);
        }
        for (q, exact) in [(0.5, 5_000_000u64), (0.95, 9_500_000), (0.99, 9_900_000)] {
            let got = h.quantile_ns(q);
            assert!(
                got >= exact && got as f64 <= exact as f64 * 1.0101,
                "q{q}: {got} vs {exact}"
            );
        }
        assert_eq!(h.summary_us().mean, 5000.5);
    }

    #[test]
    fn merging_equals_adding_in_any_order() {
        let (mut a, mut b, mut all) = (
            Histogram::default(),
            Histogram::default(),
            Histogram::default(),
        );
        for v in [5u64, 900, 77_000, 3, 1_000_000_000] {
            a.add(v);
            all.add(v);
        }
        for v in [1u64, 42, 77_001] {
            b.add(v);
            all.add(v);
        }
        let mut ab = a.clone();
        ab.merge(&b);
        b.merge(&a);
        assert_eq!(ab, all);
        assert_eq!(b, all);
    }
}
