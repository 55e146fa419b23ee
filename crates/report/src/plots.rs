//! Charts of a [`FullReport`], each written as PNG and SVG: the response-time histogram with its modes,
//! response time over time, packets/s and bits/s with their ceilings, MySQL requests/s and errors/s.
//!
//! Text in the PNGs is drawn with a bundled DejaVu Sans (see `assets/DejaVuSans-LICENSE.txt`), so no
//! system font library is needed; SVGs name `sans-serif` and leave the font to the viewer.

use std::fs;
use std::io;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Once;

use pcapsleuth_analysis::{Ceiling, FullReport, RateReport, RtReport};
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::{register_font, FontStyle, RGBAColor};

use crate::text::utc;

/// Size of every plot, pixels.
pub const PLOT_SIZE: (u32, u32) = (1200, 600);

static FONT: &[u8] = include_bytes!("../assets/DejaVuSans.ttf");
const FAMILY: &str = "sans-serif";

const BLUE_C: RGBColor = RGBColor(31, 119, 180);
const ORANGE_C: RGBColor = RGBColor(230, 115, 0);
const GREEN_C: RGBColor = RGBColor(44, 160, 44);
const RED_C: RGBColor = RGBColor(214, 39, 40);
const GREY_C: RGBColor = RGBColor(90, 90, 90);
const DARK_C: RGBColor = RGBColor(40, 40, 40);
const BAR_C: RGBColor = RGBColor(70, 130, 180);

/// Why writing plots failed, naming the file or directory.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    #[error("cannot create plot directory {}: {source}", dir.display())]
    CreateDir { dir: PathBuf, source: io::Error },
    #[error("cannot draw {}: {message}", file.display())]
    Draw { file: PathBuf, message: String },
    #[error("cannot encode {}: {source}", file.display())]
    Encode {
        file: PathBuf,
        source: png::EncodingError,
    },
    #[error("cannot write {}: {source}", file.display())]
    Write { file: PathBuf, source: io::Error },
}

/// A plot that was not written because it had nothing to show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedPlot {
    /// The plot's file stem, e.g. "qps".
    pub name: &'static str,
    pub reason: String,
}

/// What [`write_plot_set`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PlotSet {
    /// Files written, PNG then SVG of each plot, in plot order.
    pub written: Vec<PathBuf>,
    pub skipped: Vec<SkippedPlot>,
}

/// Creates `dir` and writes every plot of `report` that has data as `NAME.png` and `NAME.svg`:
/// `rt-histogram`, `rt-over-time`, `rate-pps`, `rate-bps`, `qps`. Returns the files written; plots with
/// nothing to draw are left out (see [`write_plot_set`] for why).
pub fn write_plots(dir: &Path, report: &FullReport) -> Result<Vec<PathBuf>, PlotError> {
    Ok(write_plot_set(dir, report)?.written)
}

/// [`write_plots`], also saying which plots were skipped and why.
pub fn write_plot_set(dir: &Path, report: &FullReport) -> Result<PlotSet, PlotError> {
    fs::create_dir_all(dir).map_err(|source| PlotError::CreateDir {
        dir: dir.to_path_buf(),
        source,
    })?;
    let mut set = PlotSet::default();
    let axis = TimeAxis::of(report);
    let plots: [(&'static str, Result<Plot, String>); 5] = [
        (
            "rt-histogram",
            rt_histogram(&report.rt).map(Plot::Histogram),
        ),
        (
            "rt-over-time",
            rt_over_time(&report.rt, &axis).map(Plot::Time),
        ),
        (
            "rate-pps",
            rate_chart(&report.rate, "pps", &axis).map(Plot::Time),
        ),
        (
            "rate-bps",
            rate_chart(&report.rate, "bps", &axis).map(Plot::Time),
        ),
        ("qps", qps_chart(report, &axis).map(Plot::Time)),
    ];
    for (name, plot) in plots {
        match plot {
            Ok(p) => render(dir, name, &p, &mut set.written)?,
            Err(reason) => set.skipped.push(SkippedPlot { name, reason }),
        }
    }
    Ok(set)
}

// ---------------------------------------------------------------------------------------------------------
// Rendering to both formats.

enum Plot {
    Histogram(HistChart),
    Time(TimeChart),
}

/// A drawing failure of any backend, as text.
struct DrawErr(String);

impl<E: std::error::Error + Send + Sync> From<DrawingAreaErrorKind<E>> for DrawErr {
    fn from(e: DrawingAreaErrorKind<E>) -> Self {
        DrawErr(e.to_string())
    }
}

type Drawn = Result<(), DrawErr>;

impl Plot {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Drawn {
        match self {
            Plot::Histogram(h) => h.draw(root),
            Plot::Time(t) => t.draw(root),
        }
    }
}

fn register_bundled_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // A failure leaves the family unregistered: drawing text then fails with "FontUnavailable".
        let _ = register_font(FAMILY, FontStyle::Normal, FONT);
    });
}

fn render(
    dir: &Path,
    name: &str,
    plot: &Plot,
    written: &mut Vec<PathBuf>,
) -> Result<(), PlotError> {
    register_bundled_font();
    let (w, h) = PLOT_SIZE;
    let png_path = dir.join(format!("{name}.png"));
    let draw_err = |file: &Path, e: DrawErr| PlotError::Draw {
        file: file.to_path_buf(),
        message: e.0,
    };
    let mut rgb = vec![0u8; (w * h * 3) as usize];
    {
        let root =
            PngBackend::new(BitMapBackend::with_buffer(&mut rgb, PLOT_SIZE)).into_drawing_area();
        plot.draw(&root)
            .and_then(|()| root.present().map_err(DrawErr::from))
            .map_err(|e| draw_err(&png_path, e))?;
    }
    let mut bytes = Vec::new();
    {
        let encode = |source| PlotError::Encode {
            file: png_path.clone(),
            source,
        };
        let mut enc = png::Encoder::new(&mut bytes, w, h);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        let mut writer = enc.write_header().map_err(encode)?;
        writer.write_image_data(&rgb).map_err(encode)?;
        writer.finish().map_err(encode)?;
    }
    fs::write(&png_path, bytes).map_err(|source| PlotError::Write {
        file: png_path.clone(),
        source,
    })?;
    written.push(png_path);

    let svg_path = dir.join(format!("{name}.svg"));
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, PLOT_SIZE).into_drawing_area();
        plot.draw(&root)
            .and_then(|()| root.present().map_err(DrawErr::from))
            .map_err(|e| draw_err(&svg_path, e))?;
    }
    fs::write(&svg_path, svg).map_err(|source| PlotError::Write {
        file: svg_path.clone(),
        source,
    })?;
    written.push(svg_path);
    Ok(())
}

/// The bitmap backend with text rasterised here: plotters' `ab_glyph` text drawing ignores each glyph's
/// side bearing and truncates the pen position, which leaves letters unevenly spaced ("2 026", "U TC").
struct PngBackend<'a> {
    inner: BitMapBackend<'a>,
    font: ab_glyph::FontRef<'static>,
}

type BitMapBackendError = <BitMapBackend<'static> as DrawingBackend>::ErrorType;
type BackendResult = Result<(), DrawingErrorKind<BitMapBackendError>>;
use plotters_backend::{
    BackendColor, BackendCoord, BackendTextStyle, DrawingErrorKind, FontTransform,
};

impl<'a> PngBackend<'a> {
    fn new(inner: BitMapBackend<'a>) -> Self {
        PngBackend {
            inner,
            // The same bytes `register_font` accepted; a failure here is a broken build, not input.
            font: ab_glyph::FontRef::try_from_slice(FONT).expect("bundled font parses"),
        }
    }

    /// Glyphs of `text` at `size` px, positioned with the baseline at y = ascent; and the text's width and
    /// height.
    fn layout(&self, text: &str, size: f64) -> (Vec<ab_glyph::Glyph>, f32, f32) {
        use ab_glyph::{Font, ScaleFont};
        let font = self.font.as_scaled(size as f32);
        let mut caret = 0.0f32;
        let mut prev: Option<ab_glyph::GlyphId> = None;
        let mut glyphs = Vec::new();
        for c in text.chars() {
            let id = font.glyph_id(c);
            if let Some(p) = prev {
                caret += font.kern(p, id);
            }
            glyphs.push(
                id.with_scale_and_position(font.scale(), ab_glyph::point(caret, font.ascent())),
            );
            caret += font.h_advance(id);
            prev = Some(id);
        }
        (glyphs, caret, font.ascent() - font.descent())
    }
}

impl DrawingBackend for PngBackend<'_> {
    type ErrorType = BitMapBackendError;

    fn get_size(&self) -> (u32, u32) {
        self.inner.get_size()
    }

    fn ensure_prepared(&mut self) -> BackendResult {
        self.inner.ensure_prepared()
    }

    fn present(&mut self) -> BackendResult {
        self.inner.present()
    }

    fn draw_pixel(&mut self, point: BackendCoord, color: BackendColor) -> BackendResult {
        self.inner.draw_pixel(point, color)
    }

    fn draw_line<S: plotters_backend::BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> BackendResult {
        self.inner.draw_line(from, to, style)
    }

    fn draw_rect<S: plotters_backend::BackendStyle>(
        &mut self,
        upper_left: BackendCoord,
        bottom_right: BackendCoord,
        style: &S,
        fill: bool,
    ) -> BackendResult {
        self.inner.draw_rect(upper_left, bottom_right, style, fill)
    }

    fn draw_path<S: plotters_backend::BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> BackendResult {
        self.inner.draw_path(path, style)
    }

    fn draw_circle<S: plotters_backend::BackendStyle>(
        &mut self,
        center: BackendCoord,
        radius: u32,
        style: &S,
        fill: bool,
    ) -> BackendResult {
        self.inner.draw_circle(center, radius, style, fill)
    }

    fn fill_polygon<S: plotters_backend::BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        vert: I,
        style: &S,
    ) -> BackendResult {
        self.inner.fill_polygon(vert, style)
    }

    fn blit_bitmap(
        &mut self,
        pos: BackendCoord,
        (iw, ih): (u32, u32),
        src: &[u8],
    ) -> BackendResult {
        self.inner.blit_bitmap(pos, (iw, ih), src)
    }

    fn estimate_text_size<TStyle: BackendTextStyle>(
        &self,
        text: &str,
        style: &TStyle,
    ) -> Result<(u32, u32), DrawingErrorKind<Self::ErrorType>> {
        let (_, w, h) = self.layout(text, style.size());
        Ok((w.ceil() as u32, h.ceil() as u32))
    }

    fn draw_text<TStyle: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &TStyle,
        pos: BackendCoord,
    ) -> BackendResult {
        use ab_glyph::Font;
        use plotters_backend::text_anchor::{HPos, VPos};
        let color = style.color();
        if color.alpha == 0.0 {
            return Ok(());
        }
        let (glyphs, w, h) = self.layout(text, style.size());
        let dx = match style.anchor().h_pos {
            HPos::Left => 0.0,
            HPos::Right => -w,
            HPos::Center => -w / 2.0,
        };
        let dy = match style.anchor().v_pos {
            VPos::Top => 0.0,
            VPos::Center => -h / 2.0,
            VPos::Bottom => -h,
        };
        let trans: FontTransform = style.transform();
        let mut pixels = Vec::new();
        for g in glyphs {
            if let Some(outline) = self.font.outline_glyph(g) {
                let b = outline.px_bounds();
                // Whole-pixel offsets per glyph: rounding each pixel would skip a row or column at -0.5/0.5.
                let (ox, oy) = ((b.min.x + dx).round() as i32, (b.min.y + dy).round() as i32);
                outline.draw(|x, y, coverage| {
                    pixels.push((ox + x as i32, oy + y as i32, coverage));
                });
            }
        }
        for (x, y, coverage) in pixels {
            if coverage <= 0.0 {
                continue;
            }
            let (x, y) = trans.transform(x, y);
            self.inner.draw_pixel(
                (pos.0 + x, pos.1 + y),
                BackendColor {
                    alpha: color.alpha * f64::from(coverage.min(1.0)),
                    rgb: color.rgb,
                },
            )?;
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------------------
// Numbers, durations, ticks.

fn font(size: u32) -> TextStyle<'static> {
    TextStyle::from((FAMILY, size).into_font()).color(&DARK_C)
}

/// `v` with at most `decimals` decimals, trailing zeros dropped.
fn trim(v: f64, decimals: usize) -> String {
    let s = format!("{v:.decimals$}");
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    if s == "-0" {
        "0".into()
    } else {
        s
    }
}

/// A duration in microseconds with 2-3 significant digits and a unit that reads well: "88 µs", "1.2 ms".
fn fmt_dur(us: f64) -> String {
    let (v, unit) = if us < 1.0 {
        (us * 1e3, "ns")
    } else if us < 1e3 {
        (us, "µs")
    } else if us < 1e6 {
        (us / 1e3, "ms")
    } else {
        (us / 1e6, "s")
    };
    let v = round_sig(v, 3);
    format!("{} {unit}", trim(v, if v >= 10.0 { 0 } else { 1 }))
}

/// [`fmt_dur`] with 3 significant digits: "3.96 ms", "88.3 µs", "139 µs".
fn fmt_dur3(us: f64) -> String {
    let (v, unit) = if us < 1.0 {
        (us * 1e3, "ns")
    } else if us < 1e3 {
        (us, "µs")
    } else if us < 1e6 {
        (us / 1e3, "ms")
    } else {
        (us / 1e6, "s")
    };
    format!("{} {unit}", trim(round_sig(v, 3), 2))
}

/// A tick label of a duration axis: the value is a round number, only float noise is removed.
fn fmt_dur_tick(us: f64) -> String {
    let (v, unit) = if us < 1.0 {
        (us * 1e3, "ns")
    } else if us < 1e3 {
        (us, "µs")
    } else if us < 1e6 {
        (us / 1e3, "ms")
    } else {
        (us / 1e6, "s")
    };
    format!("{} {unit}", trim(round_sig(v, 3), 3))
}

fn round_sig(v: f64, digits: i32) -> f64 {
    if v == 0.0 || !v.is_finite() {
        return v;
    }
    let scale = 10f64.powi(digits - 1 - v.abs().log10().floor() as i32);
    (v * scale).round() / scale
}

fn fmt_count(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A rate with a unit for a label: "1000 pkt/s", "9.5 Mbit/s".
fn fmt_rate(kind: &str, v: f64) -> String {
    if kind == "pps" {
        return if v >= 1e6 {
            format!("{} Mpkt/s", trim(v / 1e6, 2))
        } else {
            format!("{} pkt/s", trim(v, 0))
        };
    }
    let (d, u) = bit_unit(v);
    format!("{} {u}", trim(round_sig(v / d, 3), 2))
}

fn bit_unit(max: f64) -> (f64, &'static str) {
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

fn nice_step(range: f64, target: f64) -> f64 {
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
fn linear_ticks(lo: f64, hi: f64, target: f64) -> (Vec<f64>, usize) {
    linear_ticks_min(lo, hi, target, 0.0)
}

/// [`linear_ticks`] at least `min_step` apart (1 for counts).
fn linear_ticks_min(lo: f64, hi: f64, target: f64, min_step: f64) -> (Vec<f64>, usize) {
    let step = nice_step(hi - lo, target).max(min_step);
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
fn log_ticks(lo: f64, hi: f64, px: f64, min_px: f64) -> (Vec<f64>, Vec<f64>) {
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
struct Ticks {
    range: Range<f64>,
    bold: Vec<f64>,
    light: Vec<f64>,
}

impl Ticks {
    fn new(range: Range<f64>, bold: Vec<f64>, light: Vec<f64>) -> Self {
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

// ---------------------------------------------------------------------------------------------------------
// Common frame: title, subtitle, legend above the plot area.

#[derive(Clone, Copy)]
enum Swatch {
    Line,
    Dashed,
    Box,
}

struct LegendItem {
    label: String,
    color: RGBColor,
    swatch: Swatch,
}

/// Fills the background and writes the title, the subtitle and the legend; returns the height they take.
fn frame<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    subtitle: &str,
    legend: &[LegendItem],
) -> Result<u32, DrawErr> {
    root.fill(&WHITE)?;
    let (w, _) = root.dim_in_pixel();
    root.draw_text(title, &font(22).color(&BLACK), (20, 12))?;
    root.draw_text(subtitle, &font(15).color(&GREY_C), (20, 42))?;
    let label_font = font(15);
    let widths: Vec<u32> = legend
        .iter()
        .map(|i| root.estimate_text_size(&i.label, &label_font).map(|s| s.0))
        .collect::<Result<_, _>>()?;
    let total: u32 = widths.iter().map(|w| w + 36 + 24).sum();
    let sub_w = root.estimate_text_size(subtitle, &font(15))?.0;
    // The legend goes right-aligned on the subtitle's line when both fit, else on its own line.
    let (mut x, y, height) = if 20 + sub_w + 40 + total <= w - 20 {
        ((w - 20 - total) as i32, 50, 68)
    } else {
        (20, 74, 94)
    };
    for (item, tw) in legend.iter().zip(widths) {
        let style = ShapeStyle::from(&item.color).stroke_width(3);
        match item.swatch {
            Swatch::Line => root.draw(&PathElement::new(vec![(x, y), (x + 28, y)], style))?,
            Swatch::Dashed => root.draw(&DashedPathElement::new(
                vec![(x, y), (x + 28, y)],
                6,
                4,
                ShapeStyle::from(&item.color).stroke_width(2),
            ))?,
            Swatch::Box => root.draw(&Rectangle::new(
                [(x, y - 7), (x + 28, y + 7)],
                item.color.filled(),
            ))?,
        }
        root.draw_text(
            &item.label,
            &label_font.pos(Pos::new(HPos::Left, VPos::Center)),
            (x + 36, y),
        )?;
        x += (36 + tw + 24) as i32;
    }
    Ok(height)
}

/// Places labels in pixel space without overlapping each other: returns for each wanted position
/// (x, y, anchor) the top-left corner of its box.
struct LabelPlacer {
    taken: Vec<(i32, i32, i32, i32)>,
}

impl LabelPlacer {
    fn new() -> Self {
        LabelPlacer { taken: Vec::new() }
    }

    fn free(&self, r: (i32, i32, i32, i32)) -> bool {
        self.taken
            .iter()
            .all(|t| r.2 <= t.0 || r.0 >= t.2 || r.3 <= t.1 || r.1 >= t.3)
    }

    /// The first of `candidates` (top-left corners) where a `w`x`h` box is free and inside `bounds`
    /// (or the first candidate when none is), taken.
    fn place(
        &mut self,
        candidates: &[(i32, i32)],
        (w, h): (i32, i32),
        bounds: &(Range<i32>, Range<i32>),
    ) -> (i32, i32) {
        let clamp = |(x, y): (i32, i32)| {
            (
                x.clamp(
                    bounds.0.start + 2,
                    (bounds.0.end - w - 2).max(bounds.0.start + 2),
                ),
                y.clamp(
                    bounds.1.start + 2,
                    (bounds.1.end - h - 2).max(bounds.1.start + 2),
                ),
            )
        };
        let inside = |&(x, y): &(i32, i32)| {
            x > bounds.0.start && x + w < bounds.0.end && y > bounds.1.start && y + h < bounds.1.end
        };
        let chosen = candidates
            .iter()
            .copied()
            .find(|&(x, y)| inside(&(x, y)) && self.free((x, y, x + w, y + h)))
            .unwrap_or_else(|| clamp(candidates[0]));
        self.taken
            .push((chosen.0, chosen.1, chosen.0 + w, chosen.1 + h));
        chosen
    }
}

fn boxed_label<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    text: &str,
    (x, y): (i32, i32),
    (w, h): (i32, i32),
    color: &RGBColor,
) -> Drawn {
    root.draw(&Rectangle::new(
        [(x, y), (x + w, y + h)],
        WHITE.mix(0.85).filled(),
    ))?;
    root.draw_text(
        text,
        &font(14)
            .color(color)
            .pos(Pos::new(HPos::Left, VPos::Center)),
        (x + 4, y + h / 2),
    )?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------------------
// Response-time histogram.

struct HistChart {
    title: String,
    subtitle: String,
    /// (log10 lo µs, log10 hi µs, count).
    bars: Vec<(f64, f64, u64)>,
    x: Range<f64>,
    y_max: f64,
    y_desc: String,
    /// (log10 lo, log10 center, log10 hi, label).
    modes: Vec<(f64, f64, f64, String)>,
}

fn source_noun(source: &str) -> &'static str {
    if source == "mysql" {
        "MySQL requests"
    } else {
        "TCP request/response exchanges"
    }
}

fn rt_histogram(rt: &RtReport) -> Result<HistChart, String> {
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
    let p = &rt.percentiles_us;
    let pct = (1.01f64.powf(k) - 1.0) * 100.0;
    Ok(HistChart {
        title: format!(
            "Response times of {} {}",
            fmt_count(p.count),
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
        y_max: max * (1.12 + 0.1 * rows),
        y_desc: format!(
            "{} per bin (bins {}% wide)",
            if rt.source == "mysql" {
                "requests"
            } else {
                "exchanges"
            },
            trim(pct, if pct < 2.0 { 1 } else { 0 })
        ),
        modes,
    })
}

impl HistChart {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Drawn {
        let legend = [
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
        let top = frame(root, &self.title, &self.subtitle, &legend)?;
        let (w, _) = root.dim_in_pixel();
        let (bold, light) = log_ticks(self.x.start, self.x.end, f64::from(w) - 150.0, 70.0);
        let (yt, yd) = linear_ticks_min(0.0, self.y_max, 6.0, 1.0);
        let mut chart = ChartBuilder::on(root)
            .margin_top(top)
            .margin_right(30)
            .margin_left(10)
            .margin_bottom(10)
            .x_label_area_size(55)
            .y_label_area_size(95)
            .build_cartesian_2d(
                Ticks::new(self.x.clone(), bold, light),
                Ticks::new(0.0..self.y_max, yt, Vec::new()),
            )?;
        let xf = |v: &f64| fmt_dur_tick(10f64.powf(*v));
        let yf = |v: &f64| trim(*v, yd);
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
        for (i, m) in self
            .modes
            .iter()
            .enumerate()
            .filter(|_| self.modes.len() > 1)
        {
            let tint = if i % 2 == 0 {
                RED_C.mix(0.06)
            } else {
                BLUE_C.mix(0.08)
            };
            chart.draw_series(std::iter::once(Rectangle::new(
                [(m.0, 0.0), (m.2, self.y_max)],
                tint.filled(),
            )))?;
        }
        chart.draw_series(
            self.bars
                .iter()
                .map(|&(l, h, n)| Rectangle::new([(l, 0.0), (h, n as f64)], BAR_C.filled())),
        )?;
        // Every non-empty bin at least 3 px tall: a few outliers next to a tall spike stay visible.
        for &(l, h, _) in &self.bars {
            let (x0, y0) = chart.backend_coord(&(l, 0.0));
            let (x1, _) = chart.backend_coord(&(h, 0.0));
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
                vec![(m.1, 0.0), (m.1, self.y_max)],
                8,
                5,
                RED_C.stroke_width(2),
            )))?;
            let (px, _) = chart.backend_coord(&(m.1, 0.0));
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

// ---------------------------------------------------------------------------------------------------------
// Charts over time.

/// Maps epoch seconds to the x axis: time since the first interval, in s, min or h.
struct TimeAxis {
    t0: f64,
    /// The end of the last interval of any series, epoch seconds: all plots over time share the x axis.
    t1: f64,
    div: f64,
    unit: &'static str,
    start_text: String,
}

impl TimeAxis {
    fn of(r: &FullReport) -> TimeAxis {
        let mut t0 = f64::INFINITY;
        let mut t1 = f64::NEG_INFINITY;
        if let (Some(a), Some(b)) = (r.rate.total.first(), r.rate.total.last()) {
            t0 = t0.min(a.start);
            t1 = t1.max(b.start + r.rate.interval_s);
        }
        for i in &r.rt.per_interval {
            t0 = t0.min(i.start);
            t1 = t1.max(i.start + r.rt.interval_s);
        }
        if let (Some(a), Some(b)) = (r.mysql.per_second.first(), r.mysql.per_second.last()) {
            t0 = t0.min(a.second as f64);
            t1 = t1.max(b.second as f64 + 1.0);
        }
        if !t0.is_finite() {
            t0 = 0.0;
            t1 = 1.0;
        }
        let span = t1 - t0;
        let (div, unit) = if span > 3.0 * 3600.0 {
            (3600.0, "h")
        } else if span > 15.0 * 60.0 {
            (60.0, "min")
        } else {
            (1.0, "s")
        };
        // "2026-11-22 07:37:42.500000 UTC" -> "2026-11-22 07:37:42 UTC"
        let full = utc(t0);
        let start_text = match full.find('.') {
            Some(dot) => format!("{} UTC", &full[..dot]),
            None => full,
        };
        TimeAxis {
            t0,
            t1,
            div,
            unit,
            start_text,
        }
    }

    fn x(&self, epoch_s: f64) -> f64 {
        (epoch_s - self.t0) / self.div
    }

    fn end(&self) -> f64 {
        self.x(self.t1).max(0.1)
    }

    fn desc(&self) -> String {
        format!("time since {} ({})", self.start_text, self.unit)
    }
}

enum YAxis {
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

struct Line {
    label: String,
    color: RGBColor,
    /// Line width, pixels: a wide line drawn first stays visible under a narrow one on the same values.
    width: u32,
    /// Contiguous runs of a step line, path vertices in axis units.
    segments: Vec<Vec<(f64, f64)>>,
}

/// A horizontal marker over a span of time: a ceiling.
struct Band {
    x0: f64,
    x1: f64,
    y: f64,
    color: RGBColor,
    label: String,
}

struct TimeChart {
    title: String,
    subtitle: String,
    x_max: f64,
    x_desc: String,
    y: YAxis,
    lines: Vec<Line>,
    bands: Vec<Band>,
    extra_legend: Vec<LegendItem>,
}

impl TimeChart {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Drawn {
        let mut legend: Vec<LegendItem> = self
            .lines
            .iter()
            .map(|l| LegendItem {
                label: l.label.clone(),
                color: l.color,
                swatch: Swatch::Line,
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
        let mut chart = ChartBuilder::on(root)
            .margin_top(top)
            .margin_right(30)
            .margin_left(10)
            .margin_bottom(10)
            .x_label_area_size(55)
            .y_label_area_size(95)
            .build_cartesian_2d(
                Ticks::new(0.0..self.x_max, xt, Vec::new()),
                Ticks::new(y_range.clone(), yt, light),
            )?;
        let xf = |v: &f64| trim(*v, xd);
        let yf = |v: &f64| {
            if log_y {
                fmt_dur_tick(10f64.powf(*v))
            } else {
                trim(*v, yd)
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
            chart.draw_series(
                l.segments
                    .iter()
                    .map(|seg| PathElement::new(seg.clone(), l.color.stroke_width(l.width))),
            )?;
        }
        let area = chart.plotting_area().get_pixel_range();
        let mut placer = LabelPlacer::new();
        let label_font = font(14);
        for b in &self.bands {
            chart.draw_series(std::iter::once(DashedPathElement::new(
                vec![(0.0, b.y), (self.x_max, b.y)],
                8,
                5,
                b.color.stroke_width(2),
            )))?;
            let (x0, y) = chart.backend_coord(&(b.x0, b.y));
            let (x1, _) = chart.backend_coord(&(b.x1, b.y));
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

fn darker(c: &RGBColor) -> RGBColor {
    RGBColor(
        (f64::from(c.0) * 0.75) as u8,
        (f64::from(c.1) * 0.75) as u8,
        (f64::from(c.2) * 0.75) as u8,
    )
}

/// Step lines through (interval start, value) points: each value held over its interval, runs split where
/// intervals are missing.
fn segments(points: &[(f64, f64)], interval: f64) -> Vec<Vec<(f64, f64)>> {
    let mut out: Vec<Vec<(f64, f64)>> = Vec::new();
    for &(x, y) in points {
        match out.last_mut() {
            Some(s) if x - s[s.len() - 1].0 <= 0.5 * interval => {
                s.push((x, y));
                s.push((x + interval, y));
            }
            _ => out.push(vec![(x, y), (x + interval, y)]),
        }
    }
    out
}

fn interval_text(s: f64) -> String {
    if s >= 3600.0 && s % 3600.0 == 0.0 {
        format!("{} h", s / 3600.0)
    } else if s >= 60.0 && s % 60.0 == 0.0 {
        format!("{} min", s / 60.0)
    } else if s >= 1.0 {
        format!("{} s", trim(s, 3))
    } else {
        format!("{} ms", trim(s * 1e3, 3))
    }
}

/// Label, colour, line width, (x, y) points.
type NamedSeries = (&'static str, RGBColor, u32, Vec<(f64, f64)>);

fn rt_over_time(rt: &RtReport, axis: &TimeAxis) -> Result<TimeChart, String> {
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
        rows.iter().map(|i| (axis.x(i.start), f(i))).collect()
    };
    let series: [NamedSeries; 3] = [
        ("mean", GREEN_C, 2, pick(&|i| i.mean_us)),
        ("p95", ORANGE_C, 4, pick(&|i| i.p95_us)),
        ("p99", RED_C, 2, pick(&|i| i.p99_us)),
    ];
    let values = series.iter().flat_map(|s| s.3.iter().map(|p| p.1));
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
    let gap = rt.interval_s / axis.div;
    let (y, lines) = if log {
        let (l, h) = (lo.log10(), hi.log10());
        let pad = ((h - l) * 0.06).max(0.05);
        let lines = series
            .into_iter()
            .map(|(label, color, width, pts)| {
                let pts: Vec<(f64, f64)> = pts
                    .into_iter()
                    .map(|(x, v)| (x, v.max(lo).log10()))
                    .collect();
                Line {
                    label: label.into(),
                    color,
                    width,
                    segments: segments(&pts, gap),
                }
            })
            .collect();
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
        let lines = series
            .into_iter()
            .map(|(label, color, width, pts)| {
                let pts: Vec<(f64, f64)> = pts.into_iter().map(|(x, v)| (x, v / d)).collect();
                Line {
                    label: label.into(),
                    color,
                    width,
                    segments: segments(&pts, gap),
                }
            })
            .collect();
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
            fmt_count(total),
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

fn direction_text(d: &str) -> &'static str {
    if d == "client_to_server" {
        "client→server"
    } else {
        "server→client"
    }
}

fn rate_chart(rate: &RateReport, kind: &'static str, axis: &TimeAxis) -> Result<TimeChart, String> {
    if rate.total.is_empty() {
        return Err("no TCP traffic".into());
    }
    let pps = kind == "pps";
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
    let gap = rate.interval_s / axis.div;
    let series = |f: &dyn Fn(&pcapsleuth_analysis::RatePoint) -> f64| -> Vec<(f64, f64)> {
        rate.total
            .iter()
            .map(|p| (axis.x(p.start), f(p) / d))
            .collect()
    };
    let lines = vec![
        Line {
            label: "client→server".into(),
            color: BLUE_C,
            width: 4,
            segments: segments(&series(&|p| get(p).0), gap),
        },
        Line {
            label: "server→client".into(),
            color: ORANGE_C,
            width: 2,
            segments: segments(&series(&|p| get(p).1), gap),
        },
    ];
    let bands: Vec<Band> = ceilings
        .iter()
        .map(|c| Band {
            x0: axis.x(c.start),
            x1: axis.x(c.end),
            y: c.value / d,
            color: if c.direction == "client_to_server" {
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
            color: GREY_C,
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

fn qps_chart(r: &FullReport, axis: &TimeAxis) -> Result<TimeChart, String> {
    let ps = &r.mysql.per_second;
    let (Some(first), Some(last)) = (ps.first(), ps.last()) else {
        return Err("no MySQL requests".into());
    };
    // Seconds without requests are zeros, not gaps (unless the capture spans days).
    let fill = last.second - first.second <= 400_000;
    let mut q = Vec::new();
    let mut e = Vec::new();
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
                s = it.peek().map_or(last.second + 1, |c| c.second);
                continue;
            }
        };
        let x = axis.x(s as f64);
        q.push((x, nq as f64));
        e.push((x, ne as f64));
        s += 1;
    }
    let max = q.iter().map(|p| p.1).fold(0.0, f64::max).max(1.0);
    let total_q: u64 = ps.iter().map(|c| c.queries).sum();
    let total_e: u64 = ps.iter().map(|c| c.errors).sum();
    let gap = 1.0 / axis.div;
    Ok(TimeChart {
        title: "MySQL requests and errors per second".into(),
        subtitle: format!(
            "{} requests, {} errors ({}%) over {} s",
            fmt_count(total_q),
            fmt_count(total_e),
            trim(100.0 * total_e as f64 / total_q.max(1) as f64, 2),
            last.second - first.second + 1
        ),
        x_max: axis.end(),
        x_desc: axis.desc(),
        y: YAxis::Linear {
            max: max * 1.12,
            desc: "requests per second".into(),
            min_step: 1.0,
        },
        lines: vec![
            Line {
                label: "requests/s".into(),
                color: BLUE_C,
                width: 2,
                segments: segments(&q, gap),
            },
            Line {
                label: if total_e == 0 {
                    "errors/s (none)".into()
                } else {
                    "errors/s".into()
                },
                color: RED_C,
                width: 2,
                segments: segments(&e, gap),
            },
        ],
        bands: Vec::new(),
        extra_legend: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pcapsleuth_analysis::{analyze, full_report, EngineOptions};

    fn fixture_report(name: &str) -> FullReport {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures")
            .join(name);
        let cap = pcapsleuth_capture::Capture::open(&path).expect("fixture opens");
        full_report(&analyze(&cap, &EngineOptions::default()))
    }

    /// A fresh directory under the system temp dir; kept for looking at when PCAPSLEUTH_KEEP_PLOTS is set.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new(name: &str) -> Self {
            let d = std::env::temp_dir()
                .join(format!("pcapsleuth-plots-{name}-{}", std::process::id()));
            let _ = fs::remove_dir_all(&d);
            TempDir(d)
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            if std::env::var_os("PCAPSLEUTH_KEEP_PLOTS").is_none() {
                let _ = fs::remove_dir_all(&self.0);
            }
        }
    }

    fn assert_real_files(files: &[PathBuf]) {
        for f in files {
            let bytes = fs::read(f).expect("written file reads");
            match f.extension().and_then(|e| e.to_str()) {
                Some("png") => {
                    assert!(
                        bytes.starts_with(b"\x89PNG\r\n\x1a\n"),
                        "{} is a PNG",
                        f.display()
                    );
                    assert!(bytes.len() > 10_000, "{} has a real picture", f.display());
                }
                Some("svg") => {
                    let text = String::from_utf8(bytes).expect("SVG is text");
                    assert!(text.starts_with("<svg"), "{} is an SVG", f.display());
                    assert!(
                        text.matches("<text").count() > 10,
                        "{} has labels",
                        f.display()
                    );
                }
                _ => panic!("unexpected file {}", f.display()),
            }
        }
    }

    #[test]
    fn fixture_plots_are_written() {
        let dir = TempDir::new("bimodal");
        let set = write_plot_set(&dir.0.join("nested"), &fixture_report("rt-bimodal.pcap"))
            .expect("plots written");
        assert_eq!(set.skipped, vec![]);
        let names: Vec<String> = set
            .written
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        for stem in [
            "rt-histogram",
            "rt-over-time",
            "rate-pps",
            "rate-bps",
            "qps",
        ] {
            for ext in ["png", "svg"] {
                assert!(
                    names.contains(&format!("{stem}.{ext}")),
                    "{stem}.{ext} in {names:?}"
                );
            }
        }
        assert_real_files(&set.written);
        let svg = fs::read_to_string(dir.0.join("nested/rt-histogram.svg")).unwrap();
        assert!(svg.contains("70.9% ~88 µs"), "the fast mode is labelled");
    }

    #[test]
    fn empty_capture_skips_every_plot() {
        let dir = TempDir::new("empty");
        fs::create_dir_all(&dir.0).unwrap();
        let pcap = dir.0.join("empty.pcap");
        // A pcap global header (microsecond, Ethernet) and no packets.
        let mut header = vec![0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0];
        header.extend([0u8; 8]);
        header.extend(65535u32.to_le_bytes());
        header.extend(1u32.to_le_bytes());
        fs::write(&pcap, header).unwrap();
        let cap = pcapsleuth_capture::Capture::open(&pcap).expect("empty capture opens");
        let report = full_report(&analyze(&cap, &EngineOptions::default()));
        let set =
            write_plot_set(&dir.0.join("plots"), &report).expect("nothing to draw is no error");
        assert_eq!(set.written, Vec::<PathBuf>::new());
        assert_eq!(set.skipped.len(), 5);
        assert!(dir.0.join("plots").is_dir());
    }

    /// Long captures, wide response-time ranges, several ceilings and no MySQL: hours on the x axis,
    /// a log y axis, labels that must not collide.
    #[test]
    fn stretched_report_still_draws() {
        let mut r = fixture_report("pps-cap.pcap");
        let t0 = r.rate.total[0].start;
        let stretch = |t: f64| t0 + (t - t0) * 3000.0;
        r.rate.interval_s *= 3000.0;
        for p in &mut r.rate.total {
            p.start = stretch(p.start);
            p.c2s_bps *= 2000.0;
        }
        let base = r.rate.ceilings[0].clone();
        r.rate.ceilings.clear();
        for (i, dir) in ["client_to_server", "server_to_client", "server_to_client"]
            .into_iter()
            .enumerate()
        {
            for kind in ["pps", "bps"] {
                r.rate.ceilings.push(Ceiling {
                    kind,
                    direction: dir,
                    server: (i > 0).then(|| format!("10.0.0.{i}:3306")),
                    value: if kind == "pps" {
                        1000.0 - i as f64 * 10.0
                    } else {
                        2.5e9
                    },
                    start: stretch(base.start) + i as f64 * 600.0,
                    end: stretch(base.end),
                    ..base.clone()
                });
            }
        }
        r.rt.interval_s *= 3000.0;
        for (n, i) in r.rt.per_interval.iter_mut().enumerate() {
            i.start = stretch(i.start);
            i.p99_us *= 10f64.powi(n as i32 + 1);
        }
        r.mysql.per_second.clear();
        let dir = TempDir::new("stretched");
        let set = write_plot_set(&dir.0, &r).expect("plots written");
        assert_eq!(set.skipped.len(), 1);
        assert_eq!(set.skipped[0].name, "qps");
        assert_eq!(set.written.len(), 8);
        assert_real_files(&set.written);
        let svg = fs::read_to_string(dir.0.join("rate-bps.svg")).unwrap();
        assert!(svg.contains("Gbit/s"));
        assert!(svg.contains("(h)"), "hours on the time axis");
    }

    #[test]
    fn durations_read_well() {
        assert_eq!(fmt_dur(88.3), "88 µs");
        assert_eq!(fmt_dur(1234.0), "1.2 ms");
        assert_eq!(fmt_dur(5000.0), "5 ms");
        assert_eq!(fmt_dur(0.5), "500 ns");
        assert_eq!(fmt_dur3(3962.0), "3.96 ms");
        assert_eq!(fmt_dur3(88.34), "88.3 µs");
        assert_eq!(fmt_dur_tick(10f64.powf(2.0f64.log10() + 2.0)), "200 µs");
        assert_eq!(fmt_dur_tick(1e6), "1 s");
        assert_eq!(fmt_rate("pps", 1000.0), "1000 pkt/s");
        assert_eq!(fmt_rate("bps", 9.5e6), "9.5 Mbit/s");
    }

    #[test]
    fn ticks_are_round_and_spaced() {
        let (t, d) = linear_ticks(0.0, 1120.0, 6.0);
        assert_eq!(t, vec![0.0, 200.0, 400.0, 600.0, 800.0, 1000.0]);
        assert_eq!(d, 0);
        let (t, d) = linear_ticks(0.0, 0.7, 6.0);
        assert_eq!(t.len(), 4);
        assert!((t[3] - 0.6).abs() < 1e-9);
        assert_eq!(d, 1);
        let (t, d) = linear_ticks(0.0, 0.1, 4.0);
        assert!((t[1] - 0.025).abs() < 1e-12);
        assert_eq!(d, 3);
        let (t, _) = linear_ticks_min(0.0, 2.4, 6.0, 1.0);
        assert_eq!(t, vec![0.0, 1.0, 2.0]);
        let (bold, _) = log_ticks(1.0, 5.0, 1000.0, 80.0);
        assert!(bold.windows(2).all(|w| (w[1] - w[0]) * 250.0 >= 80.0));
        assert!(bold.len() >= 4);
    }
}
