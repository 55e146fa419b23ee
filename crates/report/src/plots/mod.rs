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

use pcapsleuth_analysis::units::Measure;
use pcapsleuth_analysis::{Ceiling, FullReport, RateReport, RtReport, RtSource};
use pcapsleuth_mysql::Direction;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::{register_font, FontStyle, RGBAColor};

mod backend;
mod frame;
mod histogram;
mod ticks;
mod time;

use backend::*;
use frame::*;
use histogram::*;
use ticks::*;
use time::*;

/// Width and height of every plot, in pixels.
pub const PLOT_SIZE: (u32, u32) = (1200, 600);

static FONT: &[u8] = include_bytes!("../../assets/DejaVuSans.ttf");
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
    /// The directory the plots go to could not be created.
    #[error("cannot create plot directory {}: {source}", dir.display())]
    CreateDir {
        /// The directory asked for.
        dir: PathBuf,
        /// The operating system's error.
        source: io::Error,
    },
    /// plotters could not draw a plot.
    #[error("cannot draw {}: {message}", file.display())]
    Draw {
        /// The plot's file (PNG or SVG).
        file: PathBuf,
        /// plotters' error, in words.
        message: String,
    },
    /// A plot drawn in memory could not be encoded as PNG.
    #[error("cannot encode {}: {source}", file.display())]
    Encode {
        /// The PNG file it was for.
        file: PathBuf,
        /// The PNG encoder's error.
        source: png::EncodingError,
    },
    /// A plot's file (PNG or SVG) could not be written.
    #[error("cannot write {}: {source}", file.display())]
    Write {
        /// The file that was being written.
        file: PathBuf,
        /// The operating system's error.
        source: io::Error,
    },
}

/// A plot that was not written because it had nothing to show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedPlot {
    /// The plot's file stem, e.g. "qps".
    pub name: &'static str,
    /// Why it had nothing to show, in words (e.g. no MySQL requests for `qps`).
    pub reason: String,
}

/// What [`write_plot_set`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PlotSet {
    /// Files written, PNG then SVG of each plot, in plot order.
    pub written: Vec<PathBuf>,
    /// Plots left out because they had nothing to show, in plot order.
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
    for (name, plot) in plots_of(report) {
        match plot {
            Ok(p) => render(dir, name, &p, &mut set.written)?,
            Err(reason) => set.skipped.push(SkippedPlot { name, reason }),
        }
    }
    Ok(set)
}

/// One plot drawn as SVG text, to be inlined in a page (the same drawing as its `NAME.svg` file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SvgPlot {
    /// The plot's file stem, e.g. "rt-histogram".
    pub name: &'static str,
    /// The whole `<svg>` element, every text in it escaped by plotters.
    pub svg: String,
}

/// Every plot of `report` that has data, drawn as SVG in memory (what [`write_plot_set`] writes as
/// `NAME.svg`), and the plots left out with why. A drawing failure names the plot as `NAME.svg`.
pub fn svg_plots(report: &FullReport) -> Result<(Vec<SvgPlot>, Vec<SkippedPlot>), PlotError> {
    let mut drawn = Vec::new();
    let mut skipped = Vec::new();
    for (name, plot) in plots_of(report) {
        match plot {
            Ok(p) => drawn.push(SvgPlot {
                name,
                svg: svg_of(&p).map_err(|e| PlotError::Draw {
                    file: PathBuf::from(format!("{name}.svg")),
                    message: e.0,
                })?,
            }),
            Err(reason) => skipped.push(SkippedPlot { name, reason }),
        }
    }
    Ok((drawn, skipped))
}

/// One plot drawn in both formats in memory: the bytes [`write_plot_set`] writes as `NAME.png` and
/// `NAME.svg`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DrawnPlot {
    /// The plot's file stem, e.g. "rt-histogram".
    pub name: &'static str,
    /// The PNG image.
    pub png: Vec<u8>,
    /// The whole SVG document.
    pub svg: String,
}

/// Every plot of `report` that has data, drawn in both formats in memory (what [`write_plot_set`]
/// writes, without touching a file system), and the plots left out with why.
pub fn drawn_plots(report: &FullReport) -> Result<(Vec<DrawnPlot>, Vec<SkippedPlot>), PlotError> {
    let mut out = Vec::new();
    let mut skipped = Vec::new();
    for (name, plot) in plots_of(report) {
        match plot {
            Ok(p) => out.push(drawn(name, &p)?),
            Err(reason) => skipped.push(SkippedPlot { name, reason }),
        }
    }
    Ok((out, skipped))
}

/// Each plot of `report` in plot order with its file stem, or why it has nothing to show.
fn plots_of(report: &FullReport) -> [(&'static str, Result<Plot, String>); 5] {
    let axis = TimeAxis::of(report);
    [
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
            rate_chart(&report.rate, Measure::Packets, &axis).map(Plot::Time),
        ),
        (
            "rate-bps",
            rate_chart(&report.rate, Measure::Bits, &axis).map(Plot::Time),
        ),
        ("qps", qps_chart(report, &axis).map(Plot::Time)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use pcapsleuth_analysis::{analyze, full_report, EngineOptions, Everything};

    fn fixture_report(name: &str) -> FullReport {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures")
            .join(name);
        let cap = pcapsleuth_capture::Capture::open(&path).expect("fixture opens");
        full_report(&analyze(
            &cap,
            &EngineOptions::default(),
            Everything::default,
        ))
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
        let report = full_report(&analyze(
            &cap,
            &EngineOptions::default(),
            Everything::default,
        ));
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
        let last = r.timeline.body_last.expect("packets").as_secs_f64();
        r.timeline.body_last = Some(pcapsleuth_capture::Timestamp((stretch(last) * 1e9) as i64));
        r.rate.interval_s *= 3000.0;
        for p in &mut r.rate.total {
            p.start = stretch(p.start);
            p.c2s_bps *= 2000.0;
        }
        let base = r.rate.ceilings[0].clone();
        r.rate.ceilings.clear();
        for (i, dir) in [
            Direction::ClientToServer,
            Direction::ServerToClient,
            Direction::ServerToClient,
        ]
        .into_iter()
        .enumerate()
        {
            for kind in [Measure::Packets, Measure::Bits] {
                r.rate.ceilings.push(Ceiling {
                    kind,
                    direction: dir,
                    server: (i > 0).then(|| format!("10.0.0.{i}:3306")),
                    value: if kind == Measure::Packets {
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

    /// A ceiling lies on the line it caps (pps-cap: server→client at exactly 1000 pkt/s): its dashes are
    /// drawn after the data lines, in an ink no data line has, so they show over it (dashes of the line's
    /// own colour, as the legend's grey promised otherwise, were invisible there).
    #[test]
    fn a_ceiling_shows_over_the_line_it_caps() {
        let r = fixture_report("pps-cap.pcap");
        assert_eq!(r.rate.ceilings.len(), 1);
        let dir = TempDir::new("ceiling");
        write_plot_set(&dir.0, &r).expect("plots written");
        let svg = fs::read_to_string(dir.0.join("rate-pps.svg")).unwrap();
        let stroke = |c: RGBColor| format!("stroke=\"#{:02X}{:02X}{:02X}\"", c.0, c.1, c.2);
        let data = svg
            .rfind(&format!("{} stroke-width=\"2\"", stroke(ORANGE_C)))
            .expect("the server→client line");
        let dashes = svg[data..].matches(&stroke(CEILING_C)).count();
        assert!(dashes > 20, "{dashes} ceiling dashes after the data line");
        for line in [BLUE_C, ORANGE_C] {
            assert_ne!(line, CEILING_C);
        }
    }

    /// Every chart over time starts at the capture's first packet (x = 0, Wireshark's relative time) and
    /// ends at its last; the seconds of requests/s the capture only partly covers are dashed, not a ramp.
    #[test]
    fn time_runs_from_the_first_packet_to_the_last() {
        let r = fixture_report("pps-cap.pcap");
        let axis = TimeAxis::of(&r);
        let first = r.timeline.body_first.unwrap().as_secs_f64();
        let last = r.timeline.body_last.unwrap().as_secs_f64();
        assert!((axis.end() - (last - first)).abs() < 1e-9);
        assert!(axis.desc().contains("since the first packet"));
        let charts = [
            rt_over_time(&r.rt, &axis).unwrap(),
            rate_chart(&r.rate, Measure::Packets, &axis).unwrap(),
            qps_chart(&r, &axis).unwrap(),
        ];
        for c in &charts {
            assert_eq!(
                c.x_max,
                axis.end(),
                "{}: the axis ends at the data",
                c.title
            );
            let xs: Vec<f64> = c
                .lines
                .iter()
                .flat_map(|l| l.segments.iter().flatten().map(|p| p.0))
                .collect();
            assert!(
                xs.iter().all(|&x| (0.0..=c.x_max).contains(&x)),
                "{}",
                c.title
            );
            assert!((xs.iter().copied().fold(0.0, f64::max) - c.x_max).abs() < 1e-9);
        }
        // Rates and response times start at the first packet.
        for c in &charts[..2] {
            let x0 = c.lines[0].segments[0][0].0;
            assert_eq!(x0, 0.0, "{}", c.title);
        }
        // pps-cap's capture began 0.92 s into its first second: requests/s starts with the first whole
        // second (a sliver of 0.08 s is left out), and ends with its last second dashed, as requests per
        // second of the part captured.
        let qps = &charts[2];
        let solid = &qps.lines[0];
        assert_eq!(solid.segments[0][0].0, axis.x(first.ceil()));
        let dashed = &qps.lines[2];
        assert!(dashed.dashed && dashed.label.is_empty());
        let end = dashed.segments.last().unwrap();
        assert_eq!(end[1].0, axis.end());
        assert_eq!(end[0].0, axis.x(last.floor()));
    }

    #[test]
    fn rt_over_time_draws_percentiles_not_the_mean() {
        let r = fixture_report("rt-bimodal.pcap");
        let chart = rt_over_time(&r.rt, &TimeAxis::of(&r)).unwrap();
        let labels: Vec<&str> = chart.lines.iter().map(|l| l.label.as_str()).collect();
        assert_eq!(labels, ["p50", "p95", "p99"]);
        // rt-bimodal's p50 is in the fast hump, its p95 and p99 in the slow one: three lines apart from
        // the first, two that coincide (p95 wide, p99 dashed over it).
        assert!(chart.lines[2].dashed && chart.lines[1].width > chart.lines[2].width);
        let svg = svg_of(&Plot::Time(chart)).ok().unwrap();
        assert!(!svg.contains(">mean<"));
    }

    /// A hump of 0.7% (snaplen80's at ~2.7 ms) would be a few pixels on a linear axis: log counts; two
    /// big humps (rt-bimodal's) keep a linear one.
    #[test]
    fn a_small_hump_gets_log_counts() {
        let small = rt_histogram(&fixture_report("snaplen80.pcap").rt).unwrap();
        assert!(small.log_y);
        let svg = svg_of(&Plot::Histogram(small)).ok().unwrap();
        assert!(svg.contains("log scale)"));
        assert!(
            svg.contains("shaded: each mode"),
            "the shading is in the legend"
        );
        let big = rt_histogram(&fixture_report("rt-bimodal.pcap").rt).unwrap();
        assert!(!big.log_y);
    }

    #[test]
    fn rates_read_well() {
        assert_eq!(fmt_rate(Measure::Packets, 1000.0), "1000 pkt/s");
        assert_eq!(fmt_rate(Measure::Bits, 9.5e6), "9.5 Mbit/s");
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
        // Counts have whole steps: 5, not 2.5.
        let (t, d) = linear_ticks_min(0.0, 16.0, 6.0, 1.0);
        assert_eq!((t, d), (vec![0.0, 5.0, 10.0, 15.0], 0));
        let (bold, _) = log_ticks(1.0, 5.0, 1000.0, 80.0);
        assert!(bold.windows(2).all(|w| (w[1] - w[0]) * 250.0 >= 80.0));
        assert!(bold.len() >= 4);
    }
}
