//! Renders pcapsleuth's results for people (aligned text) and for scripts (JSON).
//!
//! Every `render_*` function writes complete output for one command: [`render_first_reset`],
//! [`render_mysql`], [`render_rt`], [`render_rate`], [`render_report`], [`render_flows`] (with
//! [`sorted`] for `--sort`) and [`render_unknowns`]. JSON is [`to_json`] of the analysis' own result
//! (the serde models of `pcapsleuth-analysis`, documented field by field there and in the README), or
//! [`to_json_located`] when the capture was several files, so that each frame is also named in its file.
//! With the default feature `plots`, `write_plots` draws the charts of a full report as PNG and SVG, and
//! `render_html` makes the whole report one self-contained HTML page with those charts inline.
//! There is no analysis here: only layout, in one house style ([`style`]): how durations, counts, bytes,
//! instants and ratios are written, and how lines are fitted to a width.
//!
//! What `pcapsleuth first-reset` prints, and its `--json`:
//!
//! ```
//! use pcapsleuth_analysis::{analyze, first_reset, EngineOptions};
//! use pcapsleuth_report::{render_first_reset, to_json};
//!
//! let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/server-closes.pcap");
//! let cap = pcapsleuth_capture::Capture::open(path)?;
//! let run = analyze(&cap, &EngineOptions::default(), || ());
//! let answer = first_reset(&run, 20);
//! let text = render_first_reset(&answer);
//! assert!(text.starts_with("First abnormal close: frame 13 at 1.247228 s"));
//! let json: serde_json::Value = serde_json::from_str(&to_json(&answer)).unwrap();
//! assert_eq!(json["first_rst"]["frame"], 29);
//! assert_eq!(json["first_rst"]["initiator"], "server");
//! # Ok::<(), pcapsleuth_capture::CaptureError>(())
//! ```

#![deny(missing_docs)]

mod analyses;
mod compare;
mod diff;
#[cfg(feature = "plots")]
mod html;
mod load;
mod located;
#[cfg(feature = "plots")]
pub mod plots;
mod replication;
pub mod style;
mod text;
pub mod visible;

pub use analyses::{render_rate, render_report, render_rt};
pub use compare::{compare_json, render_compare, ComparedCapture};
pub use diff::render_diff;
#[cfg(feature = "plots")]
pub use html::{escape_html, render_html, render_html_against};
pub use load::render_load;
pub use located::{locate_frames_json, locate_frames_text};
#[cfg(feature = "plots")]
pub use plots::{
    drawn_plots, svg_plots, write_plot_set, write_plots, DrawnPlot, PlotError, PlotSet,
    SkippedPlot, SvgPlot,
};
pub use text::{
    flow_order, render_first_reset, render_flows, render_mysql, render_unknowns, sorted,
    write_flows, FlowSort,
};
pub use visible::{
    visible, visible_lines, write_json, write_json_streamed, write_json_streamed_at, ElementSource,
};

use serde::Serialize;

/// Pretty JSON of any result, with a trailing newline, each frame also named in its file when the
/// capture was several files ([`locate_frames_json`]).
pub fn to_json_located<T: Serialize>(
    value: &T,
    capture: &pcapsleuth_analysis::CaptureFacts,
) -> String {
    if capture.files.len() < 2 {
        return to_json(value);
    }
    match serde_json::to_value(value) {
        Ok(mut v) => {
            locate_frames_json(&mut v, capture);
            to_json(&v)
        }
        Err(_) => to_json(value),
    }
}

/// Pretty JSON of any result, with a trailing newline; no control or bidirectional character is written
/// raw, inside strings either (see [`visible`](mod@visible)): they are `\uXXXX` escapes, which decode to the
/// same values.
pub fn to_json<T: Serialize>(value: &T) -> String {
    let mut out = Vec::with_capacity(4096);
    match write_json(&mut out, value) {
        Ok(()) => {
            // serde_json writes UTF-8 only.
            let mut s = String::from_utf8(out)
                .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
            s.push('\n');
            s
        }
        Err(e) => format!(
            "{{\"error\":{}}}\n",
            serde_json::Value::String(visible(&e.to_string()).into_owned())
        ),
    }
}
