//! The response-time histogram on a log axis, with its modes.

use super::*;

pub(super) struct HistChart {
    title: String,
    subtitle: String,
    /// (log10 lo µs, log10 hi µs, count).
    bars: Vec<(f64, f64, u64)>,
    x: Range<f64>,
    /// Counts on a log axis: a hump of a fraction of a percent beside a tall one is then visible.
    pub(super) log_y: bool,
    /// The y axis's range: counts, or log10 of counts on a log axis (whose bars start at half a request).
    y: Range<f64>,
    y_desc: String,
    /// (log10 lo, log10 center, log10 hi, label).
    modes: Vec<(f64, f64, f64, String)>,
}

pub(super) fn source_noun(source: RtSource) -> &'static str {
    if source == RtSource::Mysql {
        "MySQL requests"
    } else {
        "TCP request/response exchanges"
    }
}

pub(super) fn rt_histogram(rt: &RtReport) -> Result<HistChart, String> {
    let bins: Vec<_> = rt
        .histogram
        .iter()
        .filter(|b| b.count > 0 && b.hi_us > 0.0)
        .collect();
    if bins.is_empty() {
        return Err("no response times".into());
    }
    // Bins below 1 ns (same-timestamp answers) start at 0: give them the 1% width of their neighbours.
    let lo_of = |b: &pcapsleuth_analysis::HistogramBin| b.lo_us.max(b.hi_us / 1.01).max(1e-4);
    let lo = bins.iter().map(|b| lo_of(b)).fold(f64::INFINITY, f64::min);
    let hi = bins.iter().map(|b| b.hi_us).fold(0.0, f64::max);
    // About 160 bars across the data: 1% bins are too thin to see and too noisy to read.
    let n1 = ((hi / lo).ln() / 1.01f64.ln()).max(1.0);
    let k = (n1 / 160.0).ceil().max(1.0);
    let width = k * 1.01f64.log10();
    let mut groups: std::collections::BTreeMap<i64, u64> = Default::default();
    for b in &bins {
        let center = (lo_of(b) * b.hi_us).sqrt().log10();
        *groups.entry((center / width).floor() as i64).or_default() += b.count;
    }
    let bars: Vec<(f64, f64, u64)> = groups
        .iter()
        .map(|(&g, &n)| (g as f64 * width, (g + 1) as f64 * width, n))
        .collect();
    let (l0, l1) = (bars[0].0, bars[bars.len() - 1].1);
    let span = (l1 - l0).max(0.6);
    let mid = (l0 + l1) / 2.0;
    let x = (mid - span / 2.0 - 0.08 * span)..(mid + span / 2.0 + 0.08 * span);
    let max = bars.iter().map(|b| b.2).max().unwrap_or(1) as f64;
    let modes: Vec<(f64, f64, f64, String)> = rt
        .modes
        .iter()
        .filter(|m| m.center_us > 0.0)
        .map(|m| {
            (
                m.lo_us.max(1e-4).log10(),
                m.center_us.log10(),
                m.hi_us.max(1e-4).log10(),
                format!("{:.1}% ~{}", 100.0 * m.share, fmt_dur(m.center_us)),
            )
        })
        .collect();
    let rows = modes.len().min(4) as f64;
    // Log counts when a hump's tallest bar is under a twentieth of the tallest: on a linear axis it would
    // be a few pixels high.
    let peak_in = |lo: f64, hi: f64| {
        bars.iter()
            .filter(|b| b.1 > lo && b.0 < hi)
            .map(|b| b.2)
            .max()
            .unwrap_or(0)
    };
    let log_y = modes
        .iter()
        .any(|m| (peak_in(m.0, m.2) as f64) * 20.0 < max);
    let y = if log_y {
        let (lo, hi) = (0.5f64.log10(), max.log10());
        lo..hi + (hi - lo) * (0.12 + 0.1 * rows)
    } else {
        0.0..max * (1.12 + 0.1 * rows)
    };
    let p = &rt.percentiles_us;
    let pct = (1.01f64.powf(k) - 1.0) * 100.0;
    Ok(HistChart {
        title: format!(
            "Response times of {} {}",
            count(p.count),
            source_noun(rt.source)
        ),
        subtitle: format!(
            "p50 {}, p95 {}, p99 {}, max {}; {} mode{}{}",
            fmt_dur3(p.p50),
            fmt_dur3(p.p95),
            fmt_dur3(p.p99),
            fmt_dur3(p.max),
            modes.len(),
            if modes.len() == 1 { "" } else { "s" },
            if rt.multimodal { " (multimodal)" } else { "" }
        ),
        bars,
        x,
        log_y,
        y,
        y_desc: format!(
            "{} per bin (bins {}% wide{})",
            if rt.source == RtSource::Mysql {
                "requests"
            } else {
                "exchanges"
            },
            trim_decimals(pct, if pct < 2.0 { 1 } else { 0 }),
            if log_y { "; log scale" } else { "" }
        ),
        modes,
    })
}

impl HistChart {
    pub(super) fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Drawn {
        let mut legend = vec![
            LegendItem {
                label: "requests per bin".into(),
                color: BAR_C,
                swatch: Swatch::Box,
            },
            LegendItem {
                label: "mode: share ~median".into(),
                color: RED_C,
                swatch: Swatch::Dashed,
            },
        ];
        let several = self.modes.len() > 1;
        if several {
            legend.push(LegendItem {
                label: "shaded: each mode's extent".into(),
                color: tint(&RED_C, 0.12),
                swatch: Swatch::Box,
            });
        }
        let top = frame(root, &self.title, &self.subtitle, &legend)?;
        let (w, h) = root.dim_in_pixel();
        let (bold, light) = log_ticks(self.x.start, self.x.end, f64::from(w) - 150.0, 70.0);
        let (yt, ylight, yd) = if self.log_y {
            // Whole counts only: 1, 2, 5, 10, ... (no 0.5: the axis starts there, below one request).
            let (b, l) = log_ticks(0.0, self.y.end, f64::from(h - top - 80), 28.0);
            (b, l, 0)
        } else {
            let (t, d) = linear_ticks_min(0.0, self.y.end, 6.0, 1.0);
            (t, Vec::new(), d)
        };
        let mut chart = chart_below(root, top).build_cartesian_2d(
            Ticks::new(self.x.clone(), bold, light),
            Ticks::new(self.y.clone(), yt, ylight),
        )?;
        let log_y = self.log_y;
        let xf = |v: &f64| fmt_dur_tick(10f64.powf(*v));
        let yf = |v: &f64| {
            if log_y {
                count(10f64.powf(*v).round() as u64)
            } else {
                trim_decimals(*v, yd)
            }
        };
        let bar_top = |n: u64| {
            if log_y {
                (n as f64).log10()
            } else {
                n as f64
            }
        };
        let base = self.y.start;
        chart
            .configure_mesh()
            .x_desc("response time (log scale)")
            .y_desc(self.y_desc.as_str())
            .x_label_formatter(&xf)
            .y_label_formatter(&yf)
            .label_style(font(15))
            .axis_desc_style(font(16))
            .bold_line_style(BLACK.mix(0.12))
            .light_line_style(BLACK.mix(0.05))
            .draw()?;
        // Each mode's extent, alternately tinted, behind the bars (when there is more than one).
        for (i, m) in self.modes.iter().enumerate().filter(|_| several) {
            let shade = if i % 2 == 0 {
                tint(&RED_C, 0.06)
            } else {
                tint(&BLUE_C, 0.08)
            };
            chart.draw_series(std::iter::once(Rectangle::new(
                [(m.0, base), (m.2, self.y.end)],
                shade.filled(),
            )))?;
        }
        chart.draw_series(
            self.bars
                .iter()
                .map(|&(l, h, n)| Rectangle::new([(l, base), (h, bar_top(n))], BAR_C.filled())),
        )?;
        // Every non-empty bin at least 3 px tall: a few outliers next to a tall spike stay visible.
        for &(l, h, _) in &self.bars {
            let (x0, y0) = chart.backend_coord(&(l, base));
            let (x1, _) = chart.backend_coord(&(h, base));
            root.draw(&Rectangle::new(
                [(x0, y0 - 3), (x1.max(x0 + 1), y0)],
                BAR_C.filled(),
            ))?;
        }
        let area = chart.plotting_area().get_pixel_range();
        let mut placer = LabelPlacer::new();
        let label_font = font(14);
        for m in &self.modes {
            chart.draw_series(std::iter::once(DashedPathElement::new(
                vec![(m.1, base), (m.1, self.y.end)],
                8,
                5,
                RED_C.stroke_width(2),
            )))?;
            let (px, _) = chart.backend_coord(&(m.1, base));
            let (tw, th) = root.estimate_text_size(&m.3, &label_font)?;
            let size = (tw as i32 + 8, th as i32 + 6);
            let rows: Vec<(i32, i32)> = (0..4)
                .flat_map(|r| {
                    let y = area.1.start + 6 + r * (size.1 + 4);
                    [(px + 5, y), (px - 5 - size.0, y)]
                })
                .collect();
            let at = placer.place(&rows, size, &area);
            boxed_label(root, &m.3, at, size, &RED_C)?;
        }
        Ok(())
    }
}

/// `c` at opacity `a` over white, as an opaque colour (for a legend swatch that matches the shading).
fn tint(c: &RGBColor, a: f64) -> RGBColor {
    let over_white = |v: u8| (255.0 - a * (255.0 - f64::from(v))).round() as u8;
    RGBColor(over_white(c.0), over_white(c.1), over_white(c.2))
}
