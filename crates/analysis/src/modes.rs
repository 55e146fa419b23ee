//! Modes of a response-time distribution: "RT is bimodal: 70% at ~0.12 ms, 30% at ~20 ms".
//!
//! Works on the log axis, where a response time's humps (a cache hit and a disk read, thread-pool
//! queueing steps, a TCP retransmission timeout) look alike whatever their scale.
//!
//! 1. A pilot density: every 1% bin of the [`Histogram`] is spread with a Gaussian kernel of a fixed
//!    width that shrinks slowly with the count (Silverman's `n^-1/5`).
//! 2. The final density is a sample-point adaptive kernel estimate (Abramson): where the pilot is thin
//!    (tails, small humps) the kernel is widened by `sqrt(g / pilot)`, so a handful of scattered tail
//!    samples blur into a tail instead of making one bump each, while dense humps stay sharp.
//! 3. Its local maxima are candidate modes and the minima between them valleys. Candidates are merged,
//!    shallowest valley first, while a valley is not clearly lower than its smaller neighbouring peak,
//!    the dip is not statistically significant (the counts near the smaller peak and near the valley
//!    differ by fewer than `Z_MIN` Poisson standard deviations, `Z_DEEP` for a near-empty valley), or
//!    a side holds too few samples (`MIN_COUNT`, `MIN_SHARE`).
//! 4. Groups of samples separated by an empty stretch are separate modes, whatever the density estimate
//!    says: with a few dozen samples the kernels are wide enough to bridge the gap between the steps of a
//!    thread-pool staircase (32 requests at 300 ms, 10 at 580 ms, nothing between). A stretch counts when
//!    at least `GAP_MIN_COUNT` samples lie on each side, it is at least `GAP_MIN_RATIO` wide (and a few
//!    timestamp ticks), and it is `GAP_SPAN_FACTOR` times wider than the span of the `GAP_MIN_COUNT`
//!    samples nearest to it on either side: so in a thinning tail, where the samples beyond a gap are
//!    spread as widely as the gap itself, it is not.
//! 5. The raw bins are assigned to the surviving modes, split at the valley minima; a mode's center is
//!    its median and its spread its p75/p25.
//!
//! Deterministic: no randomness and no hash maps, only ordered arrays. The constants, with the reason for
//! each value, are in `crate::thresholds` with the other detectors'.

use serde::Serialize;

use crate::histogram::Histogram;
use crate::thresholds::{
    DEEP_RATIO, GAP_MIN_COUNT, GAP_MIN_RATIO, GAP_MIN_TICKS, GAP_SPAN_FACTOR, GRID_STEP, H_CAP,
    H_MAX, H_MIN, H_REF, KERNEL_CUTOFF, MAX_WIDEN, MIN_COUNT, MIN_SHARE, RES_NS, VALLEY_RATIO_MAX,
    Z_DEEP, Z_MIN,
};

/// The modes of a response-time distribution.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModeAnalysis {
    /// At least two modes.
    pub multimodal: bool,
    /// Ordered by center, fastest first. Empty only for an empty histogram.
    pub modes: Vec<Mode>,
    /// The valleys between consecutive modes (`modes.len() - 1` of them), in the same order.
    pub valleys: Vec<Valley>,
}

/// One hump of the distribution.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Mode {
    /// The median of the mode's own samples, µs.
    pub center_us: f64,
    /// The share of all samples in this mode, 0..1.
    pub share: f64,
    /// Samples in this mode.
    pub count: u64,
    /// The mode's lower end, µs: the valley below it, or the distribution's minimum for the first
    /// mode.
    pub lo_us: f64,
    /// The mode's upper end, µs: the valley above it, or the distribution's maximum for the last mode.
    pub hi_us: f64,
    /// p75/p25 of the mode's own samples, >= 1: 1.1 is a tight hump, 3 a broad one.
    pub spread: f64,
    /// The histogram bins the mode holds, as the lower edge of its first and the upper edge of its last,
    /// ns: what [`Mode::count_in`] counts in another histogram of the same resolution.
    #[serde(skip)]
    pub(crate) bins_ns: (u64, u64),
}

impl Mode {
    /// How many of the values of `h` (a histogram of the resolution the mode was found in) fall in the
    /// mode's bins: exactly the mode's own samples when `h` is the histogram it was found in.
    pub(crate) fn count_in(&self, h: &Histogram) -> u64 {
        h.count_between(self.bins_ns.0, self.bins_ns.1)
    }

    /// Whether a value of `ns` falls in one of the mode's bins.
    pub(crate) fn holds(&self, ns: u64) -> bool {
        ns >= self.bins_ns.0 && ns < self.bins_ns.1
    }

    /// Whether the bin with the upper edge `hi_ns` is one of the mode's.
    pub(crate) fn holds_bin(&self, hi_ns: u64) -> bool {
        hi_ns > self.bins_ns.0 && hi_ns <= self.bins_ns.1
    }
}

/// The lowest point between two modes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Valley {
    /// Where the valley lies, µs: the upper end of the mode below it and the lower end of the mode above.
    pub at_us: f64,
    /// Smoothed density at the valley over that of the lower neighbouring peak, 0..1: near 0 is an
    /// empty gap, near `VALLEY_RATIO_MAX` a shallow dip.
    pub depth: f64,
}

/// One non-empty histogram bin on the ln axis.
struct Point {
    /// ln of the bin's geometric center in ns.
    x: f64,
    lo_ns: f64,
    hi_ns: f64,
    /// The bin's edges as the histogram gives them.
    edges: (u64, u64),
    n: u64,
}

fn points_of(h: &Histogram) -> Vec<Point> {
    h.bins()
        .filter(|&(_, _, n)| n > 0)
        .map(|(lo, hi, n)| {
            let (lo_ns, hi_ns) = (lo as f64, (hi as f64).max(1.0));
            // Below one timestamp tick (a response in the same µs, 0 ns) there is nothing to resolve:
            // such bins sit at half a tick, inside the widest kernels, instead of far out at 1 ns.
            let x = (lo_ns.max(1.0) * hi_ns).sqrt().max(RES_NS / 2.0).ln();
            Point {
                x,
                lo_ns,
                hi_ns,
                edges: (lo, hi),
                n,
            }
        })
        .collect()
}

/// The ln-axis grid the densities are evaluated on.
struct Grid {
    x0: f64,
    len: usize,
}

impl Grid {
    fn x(&self, i: usize) -> f64 {
        self.x0 + i as f64 * GRID_STEP
    }
    fn index(&self, x: f64) -> usize {
        let i = ((x - self.x0) / GRID_STEP).round();
        if i.is_nan() || i < 0.0 {
            0
        } else {
            (i as usize).min(self.len - 1)
        }
    }
}

/// The smallest kernel width the timestamp resolution allows at ln position `x`.
fn resolution_floor(x: f64) -> f64 {
    (RES_NS / x.exp()).min(H_CAP)
}

/// Adds `w` times a Gaussian of width `sigma` centered at `x` to the density `f` (counts per ln unit).
fn deposit(f: &mut [f64], grid: &Grid, x: f64, sigma: f64, w: f64) {
    let reach = KERNEL_CUTOFF * sigma;
    let first = grid.index(x - reach);
    let last = grid.index(x + reach);
    let norm = w / (sigma * (2.0 * std::f64::consts::PI).sqrt());
    for (i, slot) in f.iter_mut().enumerate().take(last + 1).skip(first) {
        let d = (grid.x(i) - x) / sigma;
        *slot += norm * (-0.5 * d * d).exp();
    }
}

/// A candidate mode during merging: the grid range `[start, end)` and its highest density.
#[derive(Clone, Copy)]
struct Region {
    start: usize,
    end: usize,
    peak_at: usize,
    peak: f64,
    /// An empty stretch separates this region from the previous one: they are never merged.
    after_gap: bool,
}

/// The empty stretches between the points that separate two groups (see the module's step 4), as the ln
/// positions of the last point before and the first point after each.
fn empty_stretches(points: &[Point]) -> Vec<(f64, f64)> {
    let counts: Vec<u64> = points.iter().map(|p| p.n).collect();
    // The ln span of the `GAP_MIN_COUNT` samples nearest to the boundary after point `i` (going left from
    // it, or right from `i + 1`), or None when there are fewer samples on that side.
    let span = |from: usize, leftwards: bool| -> Option<f64> {
        let mut seen = 0u64;
        let mut j = from;
        loop {
            seen += counts[j];
            if seen >= GAP_MIN_COUNT {
                return Some((points[j].x - points[from].x).abs());
            }
            if leftwards {
                j = j.checked_sub(1)?;
            } else {
                j += 1;
                if j >= points.len() {
                    return None;
                }
            }
        }
    };
    let mut out = Vec::new();
    for i in 0..points.len().saturating_sub(1) {
        let (a, b) = (&points[i], &points[i + 1]);
        let width = b.x - a.x;
        let ticks = (b.lo_ns - a.hi_ns) / RES_NS;
        if width < GAP_MIN_RATIO.ln() || ticks < GAP_MIN_TICKS {
            continue;
        }
        if let (Some(left), Some(right)) = (span(i, true), span(i + 1, false)) {
            if width >= GAP_SPAN_FACTOR * left.max(right) {
                out.push((a.x, b.x));
            }
        }
    }
    out
}

/// Makes every empty stretch a boundary between regions: a boundary already inside it is kept (and marked),
/// else the region spanning it is cut at its middle.
fn split_at_stretches(regions: &mut Vec<Region>, f: &[f64], grid: &Grid, stretches: &[(f64, f64)]) {
    for &(a, b) in stretches {
        if let Some(r) = regions
            .iter_mut()
            .find(|r| r.start > 0 && grid.x(r.start) > a && grid.x(r.start) < b)
        {
            r.after_gap = true;
            continue;
        }
        let cut = grid.index((a + b) / 2.0);
        let Some(i) = regions.iter().position(|r| r.start < cut && cut < r.end) else {
            continue;
        };
        let whole = regions[i];
        let peak_of = |from: usize, to: usize| {
            (from..to)
                .max_by(|&x, &y| f[x].total_cmp(&f[y]))
                .map_or((from, 0.0), |at| (at, f[at]))
        };
        let (lp, lv) = peak_of(whole.start, cut);
        let (rp, rv) = peak_of(cut, whole.end);
        regions[i] = Region {
            end: cut,
            peak_at: lp,
            peak: lv,
            ..whole
        };
        regions.insert(
            i + 1,
            Region {
                start: cut,
                end: whole.end,
                peak_at: rp,
                peak: rv,
                after_gap: true,
            },
        );
    }
}

/// Finds the modes of a response-time histogram. Never panics; an empty histogram has no mode.
pub fn detect_modes(h: &Histogram) -> ModeAnalysis {
    let points = points_of(h);
    let total: u64 = points.iter().map(|p| p.n).sum();
    if points.is_empty() || total == 0 {
        return ModeAnalysis {
            multimodal: false,
            modes: Vec::new(),
            valleys: Vec::new(),
        };
    }
    let n = total as f64;
    let h0 = (H_REF * n.powf(-0.2)).clamp(H_MIN, H_MAX);
    let widest = H_CAP.max(h0 * MAX_WIDEN);
    let x_min = points.first().map_or(0.0, |p| p.x);
    let x_max = points.last().map_or(0.0, |p| p.x);
    let margin = KERNEL_CUTOFF * widest + GRID_STEP;
    let x0 = x_min - margin;
    let len = (((x_max + margin - x0) / GRID_STEP).ceil() as usize).clamp(1, 1 << 20) + 1;
    let grid = Grid { x0, len };

    // Pilot density with the base width, then the adaptive final density.
    let base_width = |x: f64| h0.max(resolution_floor(x)).min(H_CAP);
    let mut pilot = vec![0.0; len];
    for p in &points {
        deposit(&mut pilot, &grid, p.x, base_width(p.x), p.n as f64);
    }
    let log_g = points
        .iter()
        .map(|p| p.n as f64 * pilot[grid.index(p.x)].max(f64::MIN_POSITIVE).ln())
        .sum::<f64>()
        / n;
    let g = log_g.exp();
    let local_width = |x: f64| {
        let f = pilot[grid.index(x)];
        let widen = if f > 0.0 {
            (g / f).sqrt().clamp(1.0, MAX_WIDEN)
        } else {
            MAX_WIDEN
        };
        (h0 * widen).max(resolution_floor(x)).min(H_CAP)
    };
    let mut f = vec![0.0; len];
    for p in &points {
        deposit(&mut f, &grid, p.x, local_width(p.x), p.n as f64);
    }

    // Raw counts per grid cell, cumulated: mass of any grid range in O(1).
    let mut cum = vec![0u64; len + 1];
    for p in &points {
        cum[grid.index(p.x) + 1] += p.n;
    }
    for i in 0..len {
        cum[i + 1] += cum[i];
    }
    let mass = |a: usize, b: usize| cum[b.min(len)] - cum[a.min(len)];

    let mut regions = initial_regions(&f);
    split_at_stretches(&mut regions, &f, &grid, &empty_stretches(&points));
    let min_mass = (MIN_SHARE * n).ceil().max(MIN_COUNT as f64);
    loop {
        // The shallowest valley that does not separate two genuine modes, if any.
        let mut worst: Option<(usize, f64)> = None;
        for i in 0..regions.len().saturating_sub(1) {
            let (l, r) = (regions[i], regions[i + 1]);
            let too_small = (mass(l.start, l.end) as f64) < min_mass
                || (mass(r.start, r.end) as f64) < min_mass;
            // Groups an empty stretch separates stay apart, unless one is too small to be a mode at all.
            if r.after_gap && !too_small {
                continue;
            }
            let valley_at = r.start;
            let lower = l.peak.min(r.peak);
            let ratio = if lower > 0.0 {
                f[valley_at] / lower
            } else {
                1.0
            };
            let small = if l.peak <= r.peak { l } else { r };
            let w = local_width(grid.x(small.peak_at));
            let k = (w / GRID_STEP).round() as usize;
            let window = |c: usize| mass(c.saturating_sub(k), c + k + 1) as f64;
            let (p, v) = (window(small.peak_at), window(valley_at));
            let z = if p + v > 0.0 {
                (p - v) / (p + v).sqrt()
            } else {
                0.0
            };
            let significant =
                (ratio <= VALLEY_RATIO_MAX && z >= Z_MIN) || (ratio <= DEEP_RATIO && z >= Z_DEEP);
            let bad = !significant || too_small;
            if bad && worst.is_none_or(|(_, wr)| ratio > wr) {
                worst = Some((i, ratio));
            }
        }
        let Some((i, _)) = worst else { break };
        let r = regions.remove(i + 1);
        let l = &mut regions[i];
        l.end = r.end;
        if r.peak > l.peak {
            l.peak = r.peak;
            l.peak_at = r.peak_at;
        }
    }

    modes_of(h, &points, &regions, &f, &grid, n)
}

/// The modes and valleys the regions left after merging make of the histogram `h`: its raw bins
/// (`points`) assigned to the regions, split at the valleys of the density `f` on `grid`; `n`: the
/// histogram's count.
fn modes_of(
    h: &Histogram,
    points: &[Point],
    regions: &[Region],
    f: &[f64],
    grid: &Grid,
    n: f64,
) -> ModeAnalysis {
    // Assign the raw bins to the modes, split at the valleys.
    let mut members: Vec<Vec<&Point>> = vec![Vec::new(); regions.len()];
    let mut ri = 0;
    for p in points {
        let gi = grid.index(p.x);
        while ri + 1 < regions.len() && gi >= regions[ri + 1].start {
            ri += 1;
        }
        members[ri].push(p);
    }
    let summary = h.summary_us();
    let valley_us: Vec<f64> = regions
        .iter()
        .skip(1)
        .map(|r| grid.x(r.start).exp() / 1e3)
        .collect();
    let mut modes = Vec::new();
    let mut valleys = Vec::new();
    for (i, pts) in members.iter().enumerate() {
        let count: u64 = pts.iter().map(|p| p.n).sum();
        if count == 0 {
            continue;
        }
        let q = |q: f64| quantile_us(pts, count, q);
        let (p25, p75) = (q(0.25), q(0.75));
        modes.push(Mode {
            center_us: q(0.5),
            share: count as f64 / n,
            count,
            lo_us: if i == 0 {
                summary.min
            } else {
                valley_us[i - 1]
            },
            hi_us: valley_us.get(i).copied().unwrap_or(summary.max),
            spread: if p25 > 0.0 { (p75 / p25).max(1.0) } else { 1.0 },
            bins_ns: (
                pts.first().map_or(0, |p| p.edges.0),
                pts.last().map_or(0, |p| p.edges.1),
            ),
        });
        if i + 1 < regions.len() {
            let (l, r) = (regions[i], regions[i + 1]);
            let lower = l.peak.min(r.peak);
            valleys.push(Valley {
                at_us: valley_us[i],
                depth: if lower > 0.0 {
                    (f[r.start] / lower).clamp(0.0, 1.0)
                } else {
                    0.0
                },
            });
        }
    }
    ModeAnalysis {
        multimodal: modes.len() >= 2,
        modes,
        valleys,
    }
}

/// Splits the grid at every local minimum between two local maxima of `f`. Plateaus count once: a
/// flat top is one peak, a flat bottom one valley (split at its middle).
fn initial_regions(f: &[f64]) -> Vec<Region> {
    // Runs of equal values: (start, end exclusive, value).
    let mut runs: Vec<(usize, usize, f64)> = Vec::new();
    for (i, &v) in f.iter().enumerate() {
        match runs.last_mut() {
            Some(last) if last.2 == v => last.1 = i + 1,
            _ => runs.push((i, i + 1, v)),
        }
    }
    let higher = |a: Option<&(usize, usize, f64)>, v: f64| a.is_none_or(|r| r.2 < v);
    let is_peak = |j: usize| {
        let v = runs[j].2;
        v > 0.0 && higher(j.checked_sub(1).map(|k| &runs[k]), v) && higher(runs.get(j + 1), v)
    };
    let peaks: Vec<usize> = (0..runs.len()).filter(|&j| is_peak(j)).collect();
    if peaks.is_empty() {
        return vec![Region {
            start: 0,
            end: f.len(),
            peak_at: 0,
            peak: f.iter().copied().fold(0.0, f64::max),
            after_gap: false,
        }];
    }
    let mut regions = Vec::with_capacity(peaks.len());
    let mut start = 0;
    for (k, &j) in peaks.iter().enumerate() {
        let peak_at = (runs[j].0 + runs[j].1 - 1) / 2;
        let end = match peaks.get(k + 1) {
            Some(&next) => {
                // The lowest run between this peak and the next: the valley.
                let m = (j + 1..next)
                    .min_by(|&a, &b| runs[a].2.total_cmp(&runs[b].2))
                    .unwrap_or(j);
                (runs[m].0 + runs[m].1 - 1) / 2
            }
            None => f.len(),
        };
        regions.push(Region {
            start,
            end,
            peak_at,
            peak: runs[j].2,
            after_gap: false,
        });
        start = end;
    }
    regions
}

/// The quantile `q` of a mode's own samples in µs, interpolated geometrically inside the bin.
fn quantile_us(pts: &[&Point], count: u64, q: f64) -> f64 {
    let rank = (q * count as f64).clamp(0.0, count as f64);
    let mut seen = 0.0;
    for p in pts {
        let n = p.n as f64;
        if seen + n >= rank {
            let t = ((rank - seen) / n).clamp(0.0, 1.0);
            let lo = p.lo_ns.max(1.0).min(p.hi_ns);
            return lo * (p.hi_ns / lo).powf(t) / 1e3;
        }
        seen += n;
    }
    pts.last().map_or(0.0, |p| p.hi_ns / 1e3)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// splitmix64: a tiny deterministic generator for synthetic samples.
    struct Rng(u64);

    impl Rng {
        fn next_u64(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }
        /// Uniform in (0, 1).
        fn uniform(&mut self) -> f64 {
            ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        }
        /// Standard normal (Box-Muller).
        fn normal(&mut self) -> f64 {
            let (u1, u2) = (self.uniform(), self.uniform());
            (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
        }
        /// Log-normal with the given median (ns) and sigma on the ln axis.
        fn lognormal(&mut self, median_ns: f64, sigma: f64) -> u64 {
            (median_ns * (sigma * self.normal()).exp()).round().max(1.0) as u64
        }
    }

    fn hist(samples: impl IntoIterator<Item = u64>) -> Histogram {
        let mut h = Histogram::default();
        for s in samples {
            h.add(s);
        }
        h
    }

    /// Rounds to whole microseconds, as classic pcap timestamps do.
    fn us_ticks(ns: u64) -> u64 {
        (ns + 500) / 1000 * 1000
    }

    fn describe(m: &ModeAnalysis) -> String {
        m.modes
            .iter()
            .map(|m| format!("{:.1}% at {:.1} us", m.share * 100.0, m.center_us))
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn bimodal(seed: u64, n: usize) -> Histogram {
        let mut rng = Rng(seed);
        hist((0..n).map(|i| {
            if i % 10 < 7 {
                us_ticks(rng.lognormal(120_000.0, 0.2))
            } else {
                us_ticks(rng.lognormal(20_100_000.0, 0.03))
            }
        }))
    }

    #[test]
    fn modes_two_humps_70_30() {
        for seed in 1..=5 {
            for n in [2_000, 20_000] {
                let m = detect_modes(&bimodal(seed, n));
                assert!(m.multimodal, "seed {seed} n {n}: {}", describe(&m));
                assert_eq!(m.modes.len(), 2, "seed {seed} n {n}: {}", describe(&m));
                assert_eq!(m.valleys.len(), 1);
                let (a, b) = (&m.modes[0], &m.modes[1]);
                assert!((a.share - 0.7).abs() <= 0.03, "{}", describe(&m));
                assert!((b.share - 0.3).abs() <= 0.03, "{}", describe(&m));
                assert!((a.center_us / 120.0 - 1.0).abs() <= 0.1, "{}", describe(&m));
                assert!(
                    (b.center_us / 20_100.0 - 1.0).abs() <= 0.1,
                    "{}",
                    describe(&m)
                );
                assert_eq!(a.count + b.count, n as u64);
                assert!(a.spread >= 1.0 && a.spread < 1.5, "{}", a.spread);
                assert!(b.spread >= 1.0 && b.spread < 1.1, "{}", b.spread);
                let v = &m.valleys[0];
                assert!(v.at_us > 300.0 && v.at_us < 19_000.0, "{v:?}");
                assert!(v.depth < 0.05, "{v:?}");
                assert_eq!(a.hi_us, v.at_us);
                assert_eq!(b.lo_us, v.at_us);
            }
        }
    }

    #[test]
    fn modes_thread_pool_steps() {
        for seed in 1..=5 {
            let mut rng = Rng(seed);
            let h = hist((0..3_000).map(|i| {
                let step = [0.3e9, 0.6e9, 0.9e9][i % 3];
                us_ticks((step * (1.0 + 0.1 * rng.normal())).max(1.0) as u64)
            }));
            let m = detect_modes(&h);
            assert_eq!(m.modes.len(), 3, "seed {seed}: {}", describe(&m));
            for (mode, want) in m.modes.iter().zip([300_000.0, 600_000.0, 900_000.0]) {
                assert!(
                    (mode.center_us / want - 1.0).abs() < 0.1,
                    "{}",
                    describe(&m)
                );
                assert!((mode.share - 1.0 / 3.0).abs() < 0.06, "{}", describe(&m));
            }
        }
    }

    /// The thread-pool staircase: 32 requests served at once (300-319 ms) and 10 that waited one
    /// more service time (579-583 ms), nothing between. Too few samples for the density estimate to show a
    /// valley (its kernels bridge the gap); the empty stretch still makes them two humps.
    #[test]
    fn modes_a_staircase_of_a_few_dozen_requests_is_two_humps() {
        for seed in 1..=20 {
            let mut rng = Rng(seed);
            let h = hist((0..42).map(|i| {
                let (lo, hi) = if i < 32 {
                    (300.0, 319.0)
                } else {
                    (579.0, 583.0)
                };
                us_ticks(((lo + (hi - lo) * rng.uniform()) * 1e6) as u64)
            }));
            let m = detect_modes(&h);
            assert_eq!(m.modes.len(), 2, "seed {seed}: {}", describe(&m));
            assert_eq!((m.modes[0].count, m.modes[1].count), (32, 10));
            let v = &m.valleys[0];
            assert!(v.at_us > 319_000.0 && v.at_us < 579_000.0, "{v:?}");
        }
    }

    /// Seven requests beyond an empty stretch are a handful of outliers, not a hump; eight are a hump.
    #[test]
    fn modes_an_empty_stretch_needs_eight_requests_on_each_side() {
        let step = |n: u64| {
            hist(
                (0..40)
                    .map(|i| 300_000_000 + i * 400_000)
                    .chain((0..n).map(|i| 580_000_000 + i * 300_000)),
            )
        };
        assert_eq!(
            detect_modes(&step(7)).modes.len(),
            1,
            "{}",
            describe(&detect_modes(&step(7)))
        );
        assert_eq!(
            detect_modes(&step(8)).modes.len(),
            2,
            "{}",
            describe(&detect_modes(&step(8)))
        );
    }

    /// A steady slope (the density falling by a factor e every 0.8 in ln) with a small shoulder on it (10%
    /// of the requests, centred 1.5 e-folds out, as wide as the slope is steep): no valley, one hump.
    #[test]
    fn modes_a_shoulder_on_a_slope_is_one_hump() {
        for n in [300usize, 3_000, 30_000] {
            for seed in 1..=10 {
                let mut rng = Rng(seed);
                let h = hist((0..n).map(|i| {
                    let ln = if i % 10 == 0 {
                        1.5 + 0.4 * rng.normal()
                    } else {
                        -0.8 * rng.uniform().ln()
                    };
                    us_ticks((50_000.0 * ln.exp()) as u64)
                }));
                assert_unimodal(&format!("slope and shoulder n {n} seed {seed}"), &h);
            }
        }
    }

    #[test]
    fn modes_small_retransmission_hump() {
        for seed in 1..=3 {
            let mut rng = Rng(seed);
            let h = hist((0..100_000).map(|i| {
                if i % 1000 < 3 {
                    us_ticks(rng.lognormal(210_000_000.0, 0.05))
                } else {
                    us_ticks(rng.lognormal(4_000_000.0, 0.4))
                }
            }));
            let m = detect_modes(&h);
            assert_eq!(m.modes.len(), 2, "seed {seed}: {}", describe(&m));
            let rto = &m.modes[1];
            assert!(
                (rto.center_us / 210_000.0 - 1.0).abs() < 0.1,
                "{}",
                describe(&m)
            );
            assert!((rto.share - 0.003).abs() < 0.001, "{}", describe(&m));
        }
    }

    fn assert_unimodal(name: &str, h: &Histogram) {
        let m = detect_modes(h);
        assert!(!m.multimodal, "{name}: {}", describe(&m));
        assert_eq!(m.modes.len(), 1, "{name}");
        assert!(m.valleys.is_empty());
        assert_eq!(m.modes[0].count, h.count());
        assert_eq!(m.modes[0].share, 1.0);
    }

    #[test]
    fn modes_unimodal_distributions_stay_one_mode() {
        for n in [200usize, 2_000, 200_000] {
            let seeds = if n > 10_000 { 1..=2 } else { 1..=20 };
            for seed in seeds {
                for sigma in [0.3, 0.6, 1.0] {
                    let mut rng = Rng(seed);
                    let h = hist((0..n).map(|_| us_ticks(rng.lognormal(2_000_000.0, sigma))));
                    assert_unimodal(&format!("lognormal {sigma} n {n} seed {seed}"), &h);
                }
                let mut rng = Rng(seed);
                let h = hist(
                    (0..n).map(|_| us_ticks((-rng.uniform().ln() * 3_000_000.0).max(1.0) as u64)),
                );
                assert_unimodal(&format!("exponential n {n} seed {seed}"), &h);
                let mut rng = Rng(seed);
                let h = hist((0..n).map(|_| {
                    us_ticks((10_000_000.0 + 2_500_000.0 * rng.normal()).max(1_000.0) as u64)
                }));
                assert_unimodal(&format!("normal n {n} seed {seed}"), &h);
            }
        }
    }

    #[test]
    fn modes_degenerate_inputs() {
        let m = detect_modes(&Histogram::default());
        assert!(!m.multimodal && m.modes.is_empty() && m.valleys.is_empty());

        for v in [0u64, 1, 2, 1_000, 123_456_789, u64::MAX] {
            let m = detect_modes(&hist([v]));
            assert_eq!(m.modes.len(), 1, "{v}");
            assert_eq!(m.modes[0].count, 1);
            assert!(m.modes[0].spread >= 1.0);
            let m = detect_modes(&hist(std::iter::repeat_n(v, 1000)));
            assert_eq!(m.modes.len(), 1, "{v}");
        }

        // Extremes together, and a huge count.
        let mut h = hist([0, 1, u64::MAX, u64::MAX / 2, 5, 5_000_000_000]);
        let mut big = Histogram::default();
        big.add(1_000_000);
        for _ in 0..40 {
            let b = big.clone();
            big.merge(&b);
        }
        h.merge(&big);
        let m = detect_modes(&h);
        assert_eq!(m.modes.iter().map(|m| m.count).sum::<u64>(), h.count());
        assert!(m
            .modes
            .iter()
            .all(|m| m.center_us.is_finite() && m.spread >= 1.0));
    }

    #[test]
    fn modes_are_deterministic_and_ordered() {
        let h = bimodal(7, 5_000);
        let (a, b) = (detect_modes(&h), detect_modes(&h));
        assert_eq!(a, b);
        assert!(a.modes.windows(2).all(|w| w[0].center_us < w[1].center_us));
        assert!(a.modes.windows(2).all(|w| w[0].hi_us <= w[1].lo_us));
    }
}
