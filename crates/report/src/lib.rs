//! Renders pcapsleuth's results for people (aligned text) and for scripts (JSON).
//!
//! Every `render_*` function writes complete output for one command; JSON shapes are the serde models of
//! `pcapsleuth-analysis`, documented field by field in the README.

mod analyses;
pub mod plots;
mod replication;
mod text;

pub use analyses::{render_rate, render_report, render_rt};
pub use plots::{write_plot_set, write_plots, PlotError, PlotSet, SkippedPlot};
pub use text::{render_first_reset, render_flows, render_mysql, sorted, FlowSort};

use serde::Serialize;

/// Pretty JSON of any result, with a trailing newline.
pub fn to_json<T: Serialize>(value: &T) -> String {
    let mut s =
        serde_json::to_string_pretty(value).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"));
    s.push('\n');
    s
}
