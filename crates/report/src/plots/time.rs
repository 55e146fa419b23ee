//! Charts over time: response times, packets/s and bits/s with their ceilings, MySQL requests/s.

use super::*;

/// Maps epoch seconds to the x axis: time since the capture's first packet (Wireshark's
/// `frame.time_relative`), in s, min or h; the axis ends at its last packet.
pub(super) struct TimeAxis {
    /// The first packet of the capture's body, epoch seconds: x = 0.
    t0: f64,
    /// Its last packet, epoch seconds: where every plot over time ends.
    t1: f64,
    pub(super) div: f64,
    unit: &'static str,
}

impl TimeAxis {
    pub(super) fn of(r: &FullReport) -> TimeAxis {
        let (t0, t1) = match (r.timeline.body_first, r.timeline.body_last) {
            (Some(a), Some(b)) => (a.as_secs_f64(), b.as_secs_f64()),
            _ => (0.0, 1.0),
        };
        let span = t1 - t0;
        let (div, unit) = if span > 3.0 * 3600.0 {
            (3600.0, "h")
        } else if span > 15.0 * 60.0 {
            (60.0, "min")
        } else {
            (1.0, "s")
        };
        TimeAxis { t0, t1, div, unit }
    }

    pub(super) fn x(&self, epoch_s: f64) -> f64 {
        (epoch_s - self.t0) / self.div
    }

    /// The x of the last packet (a capture of one instant still gets an axis of a millisecond).
    pub(super) fn end(&self) -> f64 {
        self.x(self.t1).max(1e-3 / self.div)
    }

    /// The part of the interval of `len_s` seconds from `start` (epoch) that the capture covers, on the x
    /// axis; `None` when it covers none of it.
    pub(super) fn span(&self, start: f64, len_s: f64) -> Option<(f64, f64)> {
        let (x0, x1) = (
            self.x(start).max(0.0),
            self.x(start + len_s).min(self.end()),
        );
        (x1 > x0).then_some((x0, x1))
    }

    pub(super) fn desc(&self) -> String {
        format!(
            "time since the first packet ({}), as Wireshark's frame.time_relative",
            self.unit
        )
    }
}

pub(super) enum YAxis {
    /// Values already divided to the unit in the description.
    Linear {
        max: f64,
        desc: String,
        /// 1 for counts, which have no fractional ticks.
        min_step: f64,
    },
    /// log10 of microseconds.
    LogUs { lo: f64, hi: f64, desc: String },
}

pub(super) struct Line {
    /// Its legend entry; empty for a line the legend explains otherwise (the dashed partial seconds).
    pub(super) label: String,
    pub(super) color: RGBColor,
    /// Line width, pixels: a wide line drawn first stays visible under a narrow one on the same values.
    pub(super) width: u32,
    /// Dashed: a value the eye must not take for the others' kind (a partial second; p99 over p95).
    pub(super) dashed: bool,
    /// Contiguous runs of a step line, path vertices in axis units.
    pub(super) segments: Vec<Vec<(f64, f64)>>,
}

/// A horizontal marker over a span of time: a ceiling.
pub(super) struct Band {
    x0: f64,
    x1: f64,
    y: f64,
    color: RGBColor,
    label: String,
}

pub(super) struct TimeChart {
    pub(super) title: String,
    subtitle: String,
    pub(super) x_max: f64,
    x_desc: String,
    y: YAxis,
    pub(super) lines: Vec<Line>,
    bands: Vec<Band>,
    extra_legend: Vec<LegendItem>,
}

impl TimeChart {
    pub(super) fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Drawn {
        let mut legend: Vec<LegendItem> = self
            .lines
            .iter()
            .filter(|l| !l.label.is_empty())
            .map(|l| LegendItem {
                label: l.label.clone(),
                color: l.color,
                swatch: if l.dashed {
                    Swatch::Dashed
                } else {
                    Swatch::Line
                },
            })
            .collect();
        legend.extend(self.extra_legend.iter().map(|i| LegendItem {
            label: i.label.clone(),
            color: i.color,
            swatch: i.swatch,
        }));
        let top = frame(root, &self.title, &self.subtitle, &legend)?;
        let (_, h) = root.dim_in_pixel();
        let (xt, xd) = linear_ticks(0.0, self.x_max, 10.0);
        let (y_range, yt, light, ydesc, yd): (Range<f64>, Vec<f64>, Vec<f64>, &str, usize) =
            match &self.y {
                YAxis::Linear {
                    max,
                    desc,
                    min_step,
                } => {
                    let (t, d) = linear_ticks_min(0.0, *max, 6.0, *min_step);
                    (0.0..*max, t, Vec::new(), desc, d)
                }
                YAxis::LogUs { lo, hi, desc } => {
                    let (b, l) = log_ticks(*lo, *hi, f64::from(h - top - 80), 28.0);
                    (*lo..*hi, b, l, desc, 0)
                }
            };
        let log_y = matches!(self.y, YAxis::LogUs { .. });
        let mut chart = chart_below(root, top).build_cartesian_2d(
            Ticks::new(0.0..self.x_max, xt, Vec::new()),
            Ticks::new(y_range.clone(), yt, light),
        )?;
        let xf = |v: &f64| trim_decimals(*v, xd);
        let yf = |v: &f64| {
            if log_y {
                fmt_dur_tick(10f64.powf(*v))
            } else {
                trim_decimals(*v, yd)
            }
        };
        chart
            .configure_mesh()
            .x_desc(self.x_desc.as_str())
            .y_desc(ydesc)
            .x_label_formatter(&xf)
            .y_label_formatter(&yf)
            .label_style(font(15))
            .axis_desc_style(font(16))
            .bold_line_style(BLACK.mix(0.12))
            .light_line_style(BLACK.mix(0.05))
            .draw()?;
        let tinted = |c: &RGBColor, a: f64| -> RGBAColor { c.mix(a) };
        for b in &self.bands {
            chart.draw_series(std::iter::once(Rectangle::new(
                [(b.x0, y_range.start), (b.x1, y_range.end)],
                tinted(&b.color, 0.12).filled(),
            )))?;
        }
        for l in &self.lines {
            let style = l.color.stroke_width(l.width);
            if l.dashed {
                chart.draw_series(
                    l.segments
                        .iter()
                        .map(|seg| DashedPathElement::new(seg.clone(), 7, 5, style)),
                )?;
            } else {
                chart.draw_series(
                    l.segments
                        .iter()
                        .map(|seg| PathElement::new(seg.clone(), style)),
                )?;
            }
        }
        let area = chart.plotting_area().get_pixel_range();
        let mut placer = LabelPlacer::new();
        let label_font = font(14);
        for b in &self.bands {
            // Over the flat period it was found in only: the cap held there, not over the capture. It lies
            // on the capped line itself (that is what a ceiling is), so it is drawn after the lines, in
            // the legend's dark ink rather than the line's colour, each dash on a white halo, with a tick
            // at each end of its span: dashes of the line's own colour over it were invisible.
            let (x0, y) = chart.backend_coord(&(b.x0, b.y));
            let (x1, _) = chart.backend_coord(&(b.x1, b.y));
            for (ink, width) in [(WHITE, 6), (CEILING_C, 2)] {
                root.draw(&DashedPathElement::new(
                    vec![(x0, y), (x1, y)],
                    CEILING_DASH.0,
                    CEILING_DASH.1,
                    ink.stroke_width(width),
                ))?;
            }
            for x in [x0, x1] {
                root.draw(&PathElement::new(
                    vec![(x, y - 8), (x, y + 8)],
                    CEILING_C.stroke_width(2),
                ))?;
            }
            let (tw, th) = root.estimate_text_size(&b.label, &label_font)?;
            let size = (tw as i32 + 8, th as i32 + 6);
            let above = y - size.1 - 3;
            let below = y + 4;
            let mut cands = Vec::new();
            for dy in [0, 1, 2] {
                for x in [x0 + 4, x1 - 4 - size.0] {
                    cands.push((x, above - dy * (size.1 + 2)));
                    cands.push((x, below + dy * (size.1 + 2)));
                }
            }
            let at = placer.place(&cands, size, &area);
            boxed_label(root, &b.label, at, size, &darker(&b.color))?;
        }
        Ok(())
    }
}

/// A ceiling's line: ink unlike any data line's, and its dash and gap lengths, pixels.
pub(super) const CEILING_C: RGBColor = DARK_C;
const CEILING_DASH: (u32, u32) = (10, 6);

pub(super) fn darker(c: &RGBColor) -> RGBColor {
    RGBColor(
        (f64::from(c.0) * 0.75) as u8,
        (f64::from(c.1) * 0.75) as u8,
        (f64::from(c.2) * 0.75) as u8,
    )
}

/// Step lines through (interval start in epoch seconds, value) points: each value held over the part of its
/// interval the capture covers (so that the lines begin at the first packet and end at the last), runs
/// split where intervals are missing.
pub(super) fn segments(
    points: &[(f64, f64)],
    interval_s: f64,
    axis: &TimeAxis,
) -> Vec<Vec<(f64, f64)>> {
    let gap = interval_s / axis.div;
    let mut out: Vec<Vec<(f64, f64)>> = Vec::new();
    for &(start, y) in points {
        let Some((x0, x1)) = axis.span(start, interval_s) else {
            continue;
        };
        match out.last_mut() {
            Some(s) if x0 - s[s.len() - 1].0 <= 0.5 * gap => {
                s.push((x0, y));
                s.push((x1, y));
            }
            _ => out.push(vec![(x0, y), (x1, y)]),
        }
    }
    out
}

pub(super) fn interval_text(s: f64) -> String {
    if s >= 3600.0 && s % 3600.0 == 0.0 {
        format!("{} h", s / 3600.0)
    } else if s >= 60.0 && s % 60.0 == 0.0 {
        format!("{} min", s / 60.0)
    } else if s >= 1.0 {
        format!("{} s", trim_decimals(s, 3))
    } else {
        format!("{} ms", trim_decimals(s * 1e3, 3))
    }
}

/// Label, colour, line width, dashed, (interval start in epoch seconds, y) points.
pub(super) type NamedSeries = (&'static str, RGBColor, u32, bool, Vec<(f64, f64)>);

pub(super) fn rt_over_time(rt: &RtReport, axis: &TimeAxis) -> Result<TimeChart, String> {
    let requests = || {
        rt.per_interval
            .iter()
            .filter(|i| i.kind == pcapsleuth_analysis::IntervalKind::Requests)
    };
    let mut by_port: std::collections::BTreeMap<u16, u64> = Default::default();
    for i in requests() {
        *by_port.entry(i.port).or_default() += i.count;
    }
    let Some((&port, _)) = by_port
        .iter()
        .max_by_key(|(p, n)| (**n, std::cmp::Reverse(**p)))
    else {
        return Err("no response times".into());
    };
    let mut rows: Vec<_> = requests()
        .filter(|i| i.port == port && i.count > 0)
        .collect();
    rows.sort_by(|a, b| a.start.total_cmp(&b.start));
    let pick = |f: &dyn Fn(&pcapsleuth_analysis::IntervalRt) -> f64| -> Vec<(f64, f64)> {
        rows.iter().map(|i| (i.start, f(i))).collect()
    };
    // Percentiles, not the mean: the mean of two humps is a time no request took. p95 wide and p99 dashed
    // over it, so that both show where they coincide.
    let series: [NamedSeries; 3] = [
        ("p50", GREEN_C, 2, false, pick(&|i| i.p50_us)),
        ("p95", ORANGE_C, 6, false, pick(&|i| i.p95_us)),
        ("p99", RED_C, 2, true, pick(&|i| i.p99_us)),
    ];
    let values = series.iter().flat_map(|s| s.4.iter().map(|p| p.1));
    let (mut lo, mut hi) = (f64::INFINITY, 0.0f64);
    for v in values {
        if v > 0.0 {
            lo = lo.min(v);
        }
        hi = hi.max(v);
    }
    if hi <= 0.0 {
        return Err("all response times are zero".into());
    }
    let log = hi / lo > 20.0;
    let (y, lines) = if log {
        let (l, h) = (lo.log10(), hi.log10());
        let pad = ((h - l) * 0.06).max(0.05);
        let lines = lines_of(series, rt.interval_s, axis, |v| v.max(lo).log10());
        (
            YAxis::LogUs {
                lo: l - pad,
                hi: h + pad * 2.0,
                desc: "response time (log scale)".into(),
            },
            lines,
        )
    } else {
        let (d, unit) = if hi >= 1e6 {
            (1e6, "s")
        } else if hi >= 1e3 {
            (1e3, "ms")
        } else {
            (1.0, "µs")
        };
        let lines = lines_of(series, rt.interval_s, axis, |v| v / d);
        (
            YAxis::Linear {
                max: hi / d * 1.1,
                desc: format!("response time ({unit})"),
                min_step: 0.0,
            },
            lines,
        )
    };
    let total: u64 = rows.iter().map(|i| i.count).sum();
    let ports = if by_port.len() > 1 {
        format!(", busiest of {} server ports", by_port.len())
    } else {
        String::new()
    };
    Ok(TimeChart {
        title: format!(
            "Response time per {} interval, {} to port {port}",
            interval_text(rt.interval_s),
            source_noun(rt.source)
        ),
        subtitle: format!(
            "{} requests in {} interval{}{ports}",
            count(total),
            rows.len(),
            if rows.len() == 1 { "" } else { "s" }
        ),
        x_max: axis.end(),
        x_desc: axis.desc(),
        y,
        lines,
        bands: Vec::new(),
        extra_legend: Vec::new(),
    })
}

pub(super) fn direction_text(d: Direction) -> &'static str {
    if d == Direction::ClientToServer {
        "client→server"
    } else {
        "server→client"
    }
}

pub(super) fn rate_chart(
    rate: &RateReport,
    kind: Measure,
    axis: &TimeAxis,
) -> Result<TimeChart, String> {
    if rate.total.is_empty() {
        return Err("no TCP traffic".into());
    }
    let pps = kind == Measure::Packets;
    let get = |p: &pcapsleuth_analysis::RatePoint| {
        if pps {
            (p.c2s_pps, p.s2c_pps)
        } else {
            (p.c2s_bps, p.s2c_bps)
        }
    };
    let ceilings: Vec<&Ceiling> = rate.ceilings.iter().filter(|c| c.kind == kind).collect();
    let max = rate
        .total
        .iter()
        .map(|p| {
            let (a, b) = get(p);
            a.max(b)
        })
        .chain(ceilings.iter().map(|c| c.value))
        .fold(0.0, f64::max);
    let (d, unit, desc) = if pps {
        if max >= 1e7 {
            (1e6, "Mpkt/s", "million packets per second")
        } else if max >= 1e5 {
            (1e3, "kpkt/s", "thousand packets per second")
        } else {
            (1.0, "pkt/s", "packets per second")
        }
    } else {
        let (d, u) = bit_unit(max);
        (d, u, "bits per second")
    };
    let series = |f: &dyn Fn(&pcapsleuth_analysis::RatePoint) -> f64| -> Vec<(f64, f64)> {
        rate.total.iter().map(|p| (p.start, f(p) / d)).collect()
    };
    let lines = vec![
        Line {
            label: "client→server".into(),
            color: BLUE_C,
            width: 4,
            dashed: false,
            segments: segments(&series(&|p| get(p).0), rate.interval_s, axis),
        },
        Line {
            label: "server→client".into(),
            color: ORANGE_C,
            width: 2,
            dashed: false,
            segments: segments(&series(&|p| get(p).1), rate.interval_s, axis),
        },
    ];
    let bands: Vec<Band> = ceilings
        .iter()
        .map(|c| Band {
            x0: axis.x(c.start),
            x1: axis.x(c.end),
            y: c.value / d,
            color: if c.direction == Direction::ClientToServer {
                BLUE_C
            } else {
                ORANGE_C
            },
            label: format!(
                "cap {} {}{}",
                fmt_rate(kind, c.value),
                direction_text(c.direction),
                c.server
                    .as_deref()
                    .map(|s| format!(" ({s})"))
                    .unwrap_or_default()
            ),
        })
        .collect();
    let extra_legend = if bands.is_empty() {
        Vec::new()
    } else {
        vec![LegendItem {
            label: "ceiling (span and value)".into(),
            color: CEILING_C,
            swatch: Swatch::Dashed,
        }]
    };
    Ok(TimeChart {
        title: format!(
            "{} per {} interval, all TCP traffic",
            if pps { "Packets/s" } else { "Bits/s" },
            interval_text(rate.interval_s)
        ),
        subtitle: match ceilings.len() {
            0 => "no ceiling detected".to_string(),
            1 => "1 ceiling detected".to_string(),
            n => format!("{n} ceilings detected"),
        } + if pps { "" } else { "; link-layer bytes" },
        x_max: axis.end(),
        x_desc: axis.desc(),
        y: YAxis::Linear {
            max: (max / d * 1.12).max(1e-9),
            desc: format!("{desc} ({unit})"),
            min_step: 0.0,
        },
        lines,
        bands,
        extra_legend,
    })
}

/// Seconds the capture covers less than this share of are left out of requests/s: a rate over a sliver of
/// a second is noise.
const PARTIAL_SECOND_MIN: f64 = 0.1;

pub(super) fn qps_chart(r: &FullReport, axis: &TimeAxis) -> Result<TimeChart, String> {
    let ps = &r.mysql.per_second;
    let (Some(first), Some(last)) = (ps.first(), ps.last()) else {
        return Err("no MySQL requests".into());
    };
    // Seconds without requests are zeros, not gaps (unless the capture spans days). The capture began
    // and ended within its first and last seconds: those are drawn dashed, as the requests per second of
    // the part captured, so that a second half watched does not read as a ramp.
    // Rows are a second wide, or wider in a long capture (`width_s`): values are per second either way.
    let w = first.width_s.max(1);
    let fill = (last.second - first.second) / w <= 400_000;
    let (mut q, mut e, mut partial_q, mut partial_e) = (vec![], vec![], vec![], vec![]);
    let mut it = ps.iter().peekable();
    let mut s = first.second;
    while s <= last.second {
        let (nq, ne) = match it.peek() {
            Some(c) if c.second == s => {
                let v = (c.queries, c.errors);
                it.next();
                v
            }
            _ if fill => (0, 0),
            _ => {
                s = it.peek().map_or(last.second + w, |c| c.second);
                continue;
            }
        };
        let t = s as f64;
        let covered = axis
            .span(t, w as f64)
            .map_or(0.0, |(x0, x1)| (x1 - x0) * axis.div);
        if covered >= 0.999 * w as f64 {
            q.push((t, nq as f64 / w as f64));
            e.push((t, ne as f64 / w as f64));
        } else if covered >= PARTIAL_SECOND_MIN {
            partial_q.push((t, nq as f64 / covered));
            partial_e.push((t, ne as f64 / covered));
        }
        s += w;
    }
    let max = q
        .iter()
        .chain(&partial_q)
        .map(|p| p.1)
        .fold(0.0, f64::max)
        .max(1.0);
    let total_q: u64 = ps.iter().map(|c| c.queries).sum();
    let total_e: u64 = ps.iter().map(|c| c.errors).sum();
    let line = |label: &str, color, dashed, pts: &[(f64, f64)]| Line {
        label: label.into(),
        color,
        width: 2,
        dashed,
        segments: segments(pts, w as f64, axis),
    };
    let mut lines = vec![
        line("requests/s", BLUE_C, false, &q),
        line(
            if total_e == 0 {
                "errors/s (none)"
            } else {
                "errors/s"
            },
            RED_C,
            false,
            &e,
        ),
    ];
    let mut extra_legend = Vec::new();
    if !partial_q.is_empty() {
        lines.push(line("", BLUE_C, true, &partial_q));
        lines.push(line("", RED_C, true, &partial_e));
        extra_legend.push(LegendItem {
            label: "second the capture began or ended in".into(),
            color: GREY_C,
            swatch: Swatch::Dashed,
        });
    }
    Ok(TimeChart {
        title: "MySQL requests and errors per second".into(),
        subtitle: format!(
            "{} requests, {} errors ({}%) over {} s",
            count(total_q),
            count(total_e),
            trim_decimals(100.0 * total_e as f64 / total_q.max(1) as f64, 2),
            last.second - first.second + 1
        ),
        x_max: axis.end(),
        x_desc: axis.desc(),
        y: YAxis::Linear {
            max: max * 1.12,
            desc: "requests per second".into(),
            min_step: 1.0,
        },
        lines,
        bands: Vec::new(),
        extra_legend,
    })
}

/// The step lines of named series over intervals of `interval_s`, each value mapped to the y axis's units
/// by `y`.
fn lines_of<const N: usize>(
    series: [NamedSeries; N],
    interval_s: f64,
    axis: &TimeAxis,
    y: impl Fn(f64) -> f64,
) -> Vec<Line> {
    series
        .into_iter()
        .map(|(label, color, width, dashed, pts)| {
            let pts: Vec<(f64, f64)> = pts.into_iter().map(|(x, v)| (x, y(v))).collect();
            Line {
                label: label.into(),
                color,
                width,
                dashed,
                segments: segments(&pts, interval_s, axis),
            }
        })
        .collect()
}
