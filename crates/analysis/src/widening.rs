//! Time series kept in bounded memory: a series of bins holds at most a fixed number of them, and when it
//! would hold more, every bin doubles in width (two neighbours add into one) until it fits.
//!
//! A series is one cell per interval that saw traffic, so it grows with the capture's duration, not with
//! its open flows: a quiet server captured for a week at one-second intervals is 600,000 cells per
//! server, whatever the file's size. Doubling keeps the series whole (every packet and request is still
//! counted, in a wider interval) and says so: the reports give the width used beside the one asked for.
//!
//! Widening is split-invariant. Bins are numbered on the asked width from the epoch and a bin of
//! `2^k` times that width is the asked bin shifted right by `k` (floor division), so widening composes and
//! two series widened apart add up exactly once brought to the wider width. A part of a run widens only
//! when its own bins, a subset of the whole run's at the same width, are over the cap; so the whole run's
//! bins are over it at that width too, and the merged series ends at the narrowest width at which the
//! whole run's bins fit: the same width, and the same sums, however the run was split.

/// The width of a series' bins: the asked width times `2^shift`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BinWidth {
    asked_ns: i64,
    shift: u32,
}

impl BinWidth {
    /// Bins `asked_ns` wide (at least 1 ns), not widened.
    pub fn new(asked_ns: i64) -> Self {
        BinWidth {
            asked_ns: asked_ns.max(1),
            shift: 0,
        }
    }

    /// The width asked for, ns.
    pub fn asked_ns(self) -> i64 {
        self.asked_ns
    }

    /// The width in use, ns (saturating: a series widened past `i64::MAX` ns is one bin).
    pub fn ns(self) -> i64 {
        i64::try_from(i128::from(self.asked_ns) << self.shift.min(64)).unwrap_or(i64::MAX)
    }

    /// Whether the bins are wider than asked.
    /// The bin of an instant `ts_ns`.
    #[inline]
    pub fn bin(self, ts_ns: i64) -> i64 {
        ts_ns.div_euclid(self.asked_ns) >> self.shift.min(63)
    }

    /// The first instant of bin `bin`, ns (saturating).
    pub fn start(self, bin: i64) -> i64 {
        let asked_bin = i128::from(bin) << self.shift.min(64);
        i64::try_from(asked_bin.saturating_mul(i128::from(self.asked_ns))).unwrap_or(if bin < 0 {
            i64::MIN
        } else {
            i64::MAX
        })
    }

    /// Whether the bins are as wide as they go: 2^62 ns (146 years) or more, where every instant of the
    /// clock falls in one of four bins and doubling again could not make fewer.
    pub fn widest(self) -> bool {
        i128::from(self.asked_ns) << self.shift.min(64) >= 1i128 << 62
    }

    /// Bins twice as wide.
    pub fn doubled(self) -> Self {
        BinWidth {
            shift: self.shift + 1,
            ..self
        }
    }

    /// The wider of two widths of the same asked width.
    pub fn max(self, o: Self) -> Self {
        if o.shift > self.shift {
            o
        } else {
            self
        }
    }

    /// Bin `bin` of this width, as a bin of `to` (as wide or wider, of the same asked width).
    #[inline]
    pub fn rebin(self, bin: i64, to: Self) -> i64 {
        bin >> to.shift.saturating_sub(self.shift).min(63)
    }

    /// How many of this width's bins one bin of `to` (as wide or wider) spans.
    pub fn bins_per(self, to: Self) -> i64 {
        1i64 << to.shift.saturating_sub(self.shift).min(62)
    }
}

/// [`BinWidth::bin`] remembered for the last bin worked out: instants that come in time order fall in
/// the bin before them nearly always, and are told so by two comparisons instead of a division.
#[derive(Debug, Clone, Copy, Default)]
pub struct BinMemo {
    width: BinWidth,
    bin: i64,
    /// The instants `[from, to)` of `bin` at `width` (saturating: never more than the bin's).
    from: i64,
    to: i64,
}

impl BinMemo {
    /// `width.bin(ts_ns)`.
    #[inline]
    pub fn bin(&mut self, width: BinWidth, ts_ns: i64) -> i64 {
        if !(self.holds(ts_ns) && self.width == width) {
            self.work_out(width, ts_ns);
        }
        self.bin
    }

    /// Whether `ts_ns` falls in the last bin worked out (at the width it was worked out for).
    #[inline]
    pub fn holds(&self, ts_ns: i64) -> bool {
        self.from <= ts_ns && ts_ns < self.to
    }

    /// The end of the last bin worked out: the first instant of the next (saturating).
    pub fn end(&self) -> i64 {
        self.to
    }

    #[inline(never)]
    fn work_out(&mut self, width: BinWidth, ts_ns: i64) {
        let bin = width.bin(ts_ns);
        *self = BinMemo {
            width,
            bin,
            from: width.start(bin),
            to: width.start(bin.saturating_add(1)),
        };
    }
}

/// Whether a series of bins of `width` holding `cells` cells (across every scope) must widen to keep at
/// most `cap`: never past [`BinWidth::widest`], where a series holds at most four cells a scope (the
/// widening stops at the same width however the run was split, as the module says).
pub fn over(cells: usize, cap: usize, width: BinWidth) -> bool {
    cells > cap.max(1) && !width.widest()
}

/// What the widening property tests of the series check: `items` cut at `cuts` (positions, any order,
/// past the end allowed), each part fed to an instance of its own, the parts merged forward and
/// backward. Both must be the instance fed the whole.
#[cfg(test)]
pub(crate) fn merged_both_ways<I, T: Clone + Default>(
    items: &[I],
    mut cuts: Vec<usize>,
    feed: impl Fn(&[I]) -> T,
    merge: impl Fn(&mut T, T),
) -> (T, T) {
    cuts.push(items.len());
    cuts.sort_unstable();
    let mut parts = Vec::new();
    let mut from = 0;
    for &c in &cuts {
        let to = c.min(items.len()).max(from);
        parts.push(feed(&items[from..to]));
        from = to;
    }
    let mut forward = T::default();
    for p in parts.iter().cloned() {
        merge(&mut forward, p);
    }
    let mut backward = T::default();
    for p in parts.into_iter().rev() {
        merge(&mut backward, p);
    }
    (forward, backward)
}

/// The narrowest width, from `asked_ns` doubling, at which `fits` holds (or the widest).
#[cfg(test)]
pub(crate) fn narrowest(asked_ns: i64, fits: impl Fn(BinWidth) -> bool) -> BinWidth {
    let mut w = BinWidth::new(asked_ns);
    while !fits(w) && !w.widest() {
        w = w.doubled();
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_widened_bin_is_the_floor_of_the_asked_bins_it_holds() {
        let w = BinWidth::new(1_000);
        let w4 = w.doubled().doubled();
        assert_eq!(w4.ns(), 4_000);
        for ts in [-9_001, -4_000, -1, 0, 3_999, 4_000, 12_345] {
            assert_eq!(w4.bin(ts), ts.div_euclid(4_000), "{ts}");
            assert_eq!(w.rebin(w.bin(ts), w4), w4.bin(ts), "{ts}");
            assert!(w4.start(w4.bin(ts)) <= ts && ts < w4.start(w4.bin(ts)) + 4_000);
        }
        assert_eq!(w.bins_per(w4), 4);
    }

    #[test]
    fn a_width_past_the_clock_saturates_instead_of_wrapping() {
        let mut w = BinWidth::new(1_000_000_000);
        for _ in 0..70 {
            w = w.doubled();
        }
        assert_eq!(w.ns(), i64::MAX);
        assert!(w.widest());
        assert!(!BinWidth::new(1_000_000_000).widest());
        assert_eq!(w.bin(i64::MAX), 0);
        assert_eq!(w.bin(i64::MIN), -1);
        assert_eq!(w.start(0), 0);
    }

    proptest::proptest! {
        /// The memo gives the bin the division gives, whatever the order of the instants, the widths
        /// asked (widened or not, between calls) and the clock's ends.
        #[test]
        fn a_remembered_bin_is_the_bin(
            asked in 1i64..5_000_000_000,
            calls in proptest::collection::vec(
                (proptest::prop_oneof![
                    -20_000_000_000i64..20_000_000_000,
                    proptest::strategy::Just(i64::MIN),
                    proptest::strategy::Just(i64::MAX),
                    proptest::strategy::Just(i64::MAX - 1),
                ], 0u32..70),
                1..60,
            ),
        ) {
            let mut memo = BinMemo::default();
            for (ts, shift) in calls {
                let mut w = BinWidth::new(asked);
                for _ in 0..shift {
                    w = w.doubled();
                }
                let bin = memo.bin(w, ts);
                proptest::prop_assert_eq!(bin, w.bin(ts));
                proptest::prop_assert!(memo.holds(ts) || memo.end() == i64::MAX || ts == i64::MAX);
                proptest::prop_assert_eq!(memo.end(), w.start(bin.saturating_add(1)));
            }
        }
    }
}
