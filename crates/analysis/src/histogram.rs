//! Response-time distributions in bounded memory: a sparse histogram with logarithmic bins under 1% wide.
//!
//! Bins are 128 per octave (HDR-histogram style: the value's leading bit picks the octave, the next 7 bits
//! the bin), computed with integer operations only: every value below 128 ns has its own bin, above that a
//! bin is at most 0.8% wide. Adding is commutative and merging is addition, so a distribution does not
//! depend on how flows were spread over workers (split invariance). Percentiles are the upper edge of the
//! bin holding the rank, clamped to the exact minimum and maximum: at most 0.8% above the exact value
//! (pt-query-digest's own buckets are 5% wide).

use serde::Serialize;

/// Bins per octave, as a power of two: 2^7 = 128 for distributions reported on their own.
pub const FINE: u32 = 7;
/// 2^4 = 16 bins per octave (4.4% wide) for the many per-interval distributions, where a p95 within 4% is
/// plenty and memory matters.
pub const COARSE: u32 = 4;

/// A distribution of durations in nanoseconds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Histogram<const SUB_BITS: u32 = FINE> {
    /// Counts of bins `base..base + counts.len()`: dense over the span of values seen, so adding is O(1)
    /// on the per-request path; the span is a few octaves (128 bins each) in practice. Never starts or ends
    /// with a zero, so equal distributions have equal representations.
    base: u16,
    counts: Vec<u64>,
    count: u64,
    sum_ns: u128,
    min_ns: u64,
    max_ns: u64,
}

/// A per-interval distribution: 16 bins per octave.
pub type CoarseHistogram = Histogram<COARSE>;

fn bin_of<const SUB_BITS: u32>(ns: u64) -> u16 {
    let sub: u64 = 1 << SUB_BITS;
    if ns < sub {
        return ns as u16;
    }
    let octave = 63 - ns.leading_zeros(); // >= SUB_BITS
    let shift = octave - SUB_BITS;
    let within = (ns >> shift) & (sub - 1);
    (sub + u64::from(shift) * sub + within) as u16
}

/// The smallest value of the next bin (bins hold `[lower, upper)`).
fn upper_edge<const SUB_BITS: u32>(bin: u16) -> u64 {
    let sub: u64 = 1 << SUB_BITS;
    let bin = u64::from(bin);
    if bin < sub {
        return bin + 1;
    }
    let shift = (bin - sub) / sub;
    let within = (bin - sub) % sub;
    u64::try_from(u128::from(sub + within + 1) << shift).unwrap_or(u64::MAX)
}

fn lower_edge<const SUB_BITS: u32>(bin: u16) -> u64 {
    if bin == 0 {
        0
    } else {
        upper_edge::<SUB_BITS>(bin - 1)
    }
}

/// The summary every distribution prints: count, mean and percentiles in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Default)]
pub struct RtSummary {
    /// How many values (requests, connects, ...) the distribution holds; every other field is 0 when none.
    pub count: u64,
    /// Mean, µs (exact).
    pub mean: f64,
    /// Median, µs. Read off the histogram: the upper edge of the bin holding it, at most 0.8% above the
    /// exact value (4.4% for a per-interval distribution); exact, a value that occurred, in a
    /// [`crate::Comparison`].
    pub p50: f64,
    /// 95th percentile, µs (as `p50`).
    pub p95: f64,
    /// 99th percentile, µs (as `p50`).
    pub p99: f64,
    /// Largest value, µs (exact).
    pub max: f64,
    /// Smallest value, µs (exact).
    pub min: f64,
}

/// A value in nanoseconds with its bin, worked out once for several histograms of one resolution
/// ([`Histogram::add_binned`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Binned<const SUB_BITS: u32 = FINE> {
    ns: u64,
    bin: u16,
}

impl<const SUB_BITS: u32> Binned<SUB_BITS> {
    /// `ns` and its bin.
    #[inline]
    pub(crate) fn new(ns: u64) -> Self {
        Binned {
            ns,
            bin: bin_of::<SUB_BITS>(ns),
        }
    }

    /// The value, in nanoseconds.
    pub(crate) fn ns(self) -> u64 {
        self.ns
    }

    /// Its bin's number.
    pub(crate) fn bin(self) -> u16 {
        self.bin
    }
}

impl<const SUB_BITS: u32> Histogram<SUB_BITS> {
    /// Adds one value, in nanoseconds.
    #[inline]
    pub fn add(&mut self, ns: u64) {
        self.add_binned(Binned::new(ns));
    }

    /// Adds one value whose bin is already known: the same as [`Histogram::add`] of its
    /// nanoseconds.
    #[inline]
    pub(crate) fn add_binned(&mut self, value: Binned<SUB_BITS>) {
        let Binned { ns, bin } = value;
        self.add_to_bin(bin, 1);
        if self.count == 0 || ns < self.min_ns {
            self.min_ns = ns;
        }
        self.max_ns = self.max_ns.max(ns);
        self.count += 1;
        self.sum_ns += u128::from(ns);
    }

    #[inline]
    fn add_to_bin(&mut self, b: u16, n: u64) {
        // Nearly every value lands inside the span already seen.
        if let Some(c) = b
            .checked_sub(self.base)
            .and_then(|i| self.counts.get_mut(usize::from(i)))
        {
            *c += n;
            return;
        }
        self.grow_to(b, n);
    }

    /// [`Histogram::add_to_bin`] for a bin outside the span so far.
    #[cold]
    #[inline(never)]
    fn grow_to(&mut self, b: u16, n: u64) {
        if self.counts.is_empty() {
            self.base = b;
            self.counts.push(n);
            return;
        }
        if b < self.base {
            let grow = usize::from(self.base - b);
            self.counts.splice(0..0, std::iter::repeat_n(0, grow));
            self.base = b;
        }
        let i = usize::from(b - self.base);
        if i >= self.counts.len() {
            self.counts.resize(i + 1, 0);
        }
        self.counts[i] += n;
    }

    /// Adds every value of `other` (what adding them one by one would give, in any order).
    pub fn merge(&mut self, other: &Histogram<SUB_BITS>) {
        if other.count == 0 {
            return;
        }
        for (i, &n) in other.counts.iter().enumerate() {
            if n > 0 {
                self.add_to_bin(other.base + i as u16, n);
            }
        }
        if self.count == 0 || other.min_ns < self.min_ns {
            self.min_ns = other.min_ns;
        }
        self.max_ns = self.max_ns.max(other.max_ns);
        self.count += other.count;
        self.sum_ns += other.sum_ns;
    }

    /// Non-empty bins as (bin, count), in order.
    fn nonzero(&self) -> impl Iterator<Item = (u16, u64)> + '_ {
        self.counts
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
            .map(|(i, &n)| (self.base + i as u16, n))
    }

    /// How many values were added.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The sum of the values added, in nanoseconds.
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
        for (b, n) in self.nonzero() {
            seen += n;
            if seen >= rank {
                return upper_edge::<SUB_BITS>(b).clamp(self.min_ns, self.max_ns);
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
        self.nonzero()
            .map(|(b, n)| (lower_edge::<SUB_BITS>(b), upper_edge::<SUB_BITS>(b), n))
    }

    /// Count, mean, percentiles, maximum and minimum, in microseconds.
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
        let mut h: Histogram = Histogram::default();
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
    fn bins_tile_the_axis_and_hold_their_values() {
        let mut prev_upper = 0;
        for bin in 0..4000u16 {
            assert_eq!(lower_edge::<FINE>(bin), prev_upper, "bin {bin}");
            prev_upper = upper_edge::<FINE>(bin);
        }
        for v in [
            0u64,
            1,
            127,
            128,
            129,
            255,
            256,
            1000,
            123_456_789,
            u64::MAX / 3,
        ] {
            let b = bin_of::<FINE>(v);
            assert!(
                lower_edge::<FINE>(b) <= v && v < upper_edge::<FINE>(b),
                "{v} in bin {b}"
            );
        }
    }

    #[test]
    fn merging_equals_adding_in_any_order() {
        let (mut a, mut b, mut all): (Histogram, Histogram, Histogram) = Default::default();
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
