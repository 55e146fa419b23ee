//! Renders pcapsleuth's results for people (aligned text) and for scripts (JSON).
//!
//! Every `render_*` function writes complete output for one command; JSON shapes are the serde models of
//! `pcapsleuth-analysis`, documented field by field in the README.

mod analyses;
mod located;
#[cfg(feature = "plots")]
pub mod plots;
mod replication;
mod text;

pub use analyses::{render_rate, render_report, render_rt};
pub use located::{locate_frames_json, locate_frames_text};
#[cfg(feature = "plots")]
pub use plots::{write_plot_set, write_plots, PlotError, PlotSet, SkippedPlot};
pub use text::{render_first_reset, render_flows, render_mysql, render_unknowns, sorted, FlowSort};

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

/// Pretty JSON of any result, with a trailing newline.
pub fn to_json<T: Serialize>(value: &T) -> String {
    let mut s =
        serde_json::to_string_pretty(value).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"));
    s.push('\n');
    s
}
