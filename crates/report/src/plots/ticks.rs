//! Numbers on the axes: tick positions and the labels of durations, counts and rates.

use super::*;
pub(super) use pcapsleuth_analysis::units::{count, round_significant, trim_decimals};
use pcapsleuth_analysis::units::{duration, DurationStyle, Measure};

/// A duration label of a chart: "88 µs", "1.2 ms".
pub(super) fn fmt_dur(us: f64) -> String {
    duration(us, DurationStyle::Label)
}

/// A duration annotation of a chart: "3.96 ms", "88.3 µs".
pub(super) fn fmt_dur3(us: f64) -> String {
    duration(us, DurationStyle::Precise)
}

/// A tick label of a duration axis: "200 µs".
pub(super) fn fmt_dur_tick(us: f64) -> String {
    duration(us, DurationStyle::Tick)
}

pub(super) fn font(size: u32) -> TextStyle<'static> {
    TextStyle::from((FAMILY, size).into_font()).color(&DARK_C)
}

/// A rate with a unit for a label: "1000 pkt/s", "9.5 Mbit/s".
pub(super) fn fmt_rate(kind: Measure, v: f64) -> String {
    if kind == Measure::Packets {
        return if v >= 1e6 {
            format!("{} Mpkt/s", trim_decimals(v / 1e6, 2))
        } else {
            format!("{} pkt/s", trim_decimals(v, 0))
        };
    }
    let (d, u) = bit_unit(v);
    format!("{} {u}", trim_decimals(round_significant(v / d, 3), 2))
}

pub(super) fn bit_unit(max: f64) -> (f64, &'static str) {
    if max >= 1e9 {
        (1e9, "Gbit/s")
    } else if max >= 1e6 {
        (1e6, "Mbit/s")
    } else if max >= 1e3 {
        (1e3, "kbit/s")
    } else {
        (1.0, "bit/s")
    }
}

pub(super) fn nice_step(range: f64, target: f64) -> f64 {
    let raw = (range / target).max(f64::MIN_POSITIVE);
    let mag = 10f64.powf(raw.log10().floor());
    let r = raw / mag;
    let m = if r <= 1.0 {
        1.0
    } else if r <= 2.0 {
        2.0
    } else if r <= 2.5 {
        2.5
    } else if r <= 5.0 {
        5.0
    } else {
        10.0
    };
    m * mag
}

/// Round ticks covering `lo..=hi`, about `target` of them, and the decimals their labels need.
pub(super) fn linear_ticks(lo: f64, hi: f64, target: f64) -> (Vec<f64>, usize) {
    linear_ticks_min(lo, hi, target, 0.0)
}

/// [`linear_ticks`] at least `min_step` apart (1 for counts, whose steps are then whole: 5, not 2.5).
pub(super) fn linear_ticks_min(lo: f64, hi: f64, target: f64, min_step: f64) -> (Vec<f64>, usize) {
    let mut step = nice_step(hi - lo, target).max(min_step);
    if min_step >= 1.0 && step.fract().abs() > 1e-9 {
        step *= 2.0;
    }
    let mut ticks = Vec::new();
    let mut i = (lo / step).ceil() as i64;
    while (i as f64) * step <= hi + step * 1e-9 {
        ticks.push(i as f64 * step);
        i += 1;
    }
    let decimals = (-(step.log10().floor()) as i64).max(0) as usize
        + usize::from((step / 10f64.powf(step.log10().floor()) - 2.5).abs() < 1e-9);
    (ticks, decimals)
}

/// Ticks of a log10 axis spanning `lo..hi` (log10 values) over `px` pixels, labels at least `min_px` apart:
/// (labelled ticks, unlabelled grid lines).
pub(super) fn log_ticks(lo: f64, hi: f64, px: f64, min_px: f64) -> (Vec<f64>, Vec<f64>) {
    let per_unit = px / (hi - lo).max(1e-9);
    let decades = |mantissas: &[f64], every: i64| -> Vec<f64> {
        let mut v = Vec::new();
        for e in (lo.floor() as i64 - 1)..=(hi.ceil() as i64) {
            if e.rem_euclid(every) != 0 {
                continue;
            }
            for m in mantissas {
                let x = m.log10() + e as f64;
                if x >= lo - 1e-9 && x <= hi + 1e-9 {
                    v.push(x);
                }
            }
        }
        v
    };
    let fits = |v: &[f64]| v.windows(2).all(|w| (w[1] - w[0]) * per_unit >= min_px);
    let sets: [&[f64]; 5] = [
        &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0],
        &[1.0, 2.0, 3.0, 5.0, 7.0],
        &[1.0, 2.0, 5.0],
        &[1.0, 3.0],
        &[1.0],
    ];
    let mut bold = Vec::new();
    for s in sets {
        let v = decades(s, 1);
        if fits(&v) {
            bold = v;
            break;
        }
    }
    if bold.is_empty() {
        let mut every = 2;
        loop {
            let v = decades(&[1.0], every);
            if fits(&v) || every > 64 {
                bold = v;
                break;
            }
            every *= 2;
        }
    }
    let light = if (hi - lo) <= 4.5 {
        decades(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0], 1)
            .into_iter()
            .filter(|x| !bold.iter().any(|b| (b - x).abs() < 1e-9))
            .collect()
    } else {
        Vec::new()
    };
    (bold, light)
}

/// A linear f64 axis with the ticks chosen here (plotters' own would overlap or read badly).
#[derive(Clone)]
pub(super) struct Ticks {
    range: Range<f64>,
    bold: Vec<f64>,
    light: Vec<f64>,
}

impl Ticks {
    pub(super) fn new(range: Range<f64>, bold: Vec<f64>, light: Vec<f64>) -> Self {
        Ticks { range, bold, light }
    }
}

impl Ranged for Ticks {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let span = self.range.end - self.range.start;
        let f = if span > 0.0 {
            (v - self.range.start) / span
        } else {
            0.5
        };
        limit.0 + (f * f64::from(limit.1 - limit.0)).round() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            self.light.clone()
        } else {
            self.bold.clone()
        }
    }

    fn range(&self) -> Range<f64> {
        self.range.clone()
    }
}
