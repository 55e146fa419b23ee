//! `pcapsleuth flows`.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;
use pcapsleuth::analysis::{self, Run};
use pcapsleuth::report::{self, FlowSort};

use crate::common::{analyze_closes, Common};
use crate::shell::{finish, output};

// The help text is the doc comment of `Command::Flows` (src/main.rs).
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub common: Common,
    /// Order of the rows.
    #[arg(long, value_enum, default_value_t = SortArg::Start)]
    pub sort: SortArg,
}

pub fn run(given: Args) -> anyhow::Result<ExitCode> {
    let Args { common, sort } = given;
    let (cap, a) = analyze_closes(&common)?;
    let by = match sort {
        SortArg::Start => FlowSort::Start,
        SortArg::Bytes => FlowSort::Bytes,
        SortArg::Duration => FlowSort::Duration,
    };
    print_flows(
        common.engine.json,
        &a,
        &report::flow_order(&a.connections, by),
    )?;
    Ok(finish(&cap, &a))
}
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum SortArg {
    Start,
    Bytes,
    Duration,
}

/// `flows`: one row per connection, in `order`, written to stdout as it is made (a capture of a million
/// connections has a million rows: neither its text nor its JSON is held whole, and each row's close is
/// judged as it is written). The same output as [`output`] gives: JSON with its keys in order (as a
/// `serde_json::Value` orders them), every hazard in a string escaped, and each frame located in its
/// file when the capture is several files; text fitted to the width with no hazard raw, through
/// [`output`] when frames must be located in text.
fn print_flows<O>(json: bool, a: &Run<O>, order: &[usize]) -> anyhow::Result<()> {
    let unknowns = analysis::unknowns(a);
    let closes = analysis::FlowCloses::of(a);
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let written = if json {
        let doc = FlowsDocument {
            capture: located_value(&a.capture, &a.capture)?,
            connections: FlowRows {
                run: a,
                closes: &closes,
                order,
            },
            connects: located_value(analysis::connect_report(a), &a.capture)?,
            unknowns: located_value(&unknowns, &a.capture)?,
        };
        report::write_json(&mut out, &doc)
            .map_err(std::io::Error::from)
            .and_then(|_| out.write_all(b"\n"))
    } else if a.capture.files.len() > 1 {
        let rows = analysis::flow_rows(a, order);
        drop(out);
        return output(false, a, &(), |_| report::render_flows(&a.capture, &rows));
    } else {
        let width = report::style::width();
        let rows = || order.iter().filter_map(|&i| closes.row(a, i));
        out.write_all(
            report::style::fit(
                &report::visible_lines(&report::render_unknowns(&unknowns)),
                width,
            )
            .as_bytes(),
        )
        .and_then(|_| {
            report::write_flows(&a.capture, rows, order.len(), |line| {
                out.write_all(report::style::fit(line, width).as_bytes())
            })
        })
    };
    match written.and_then(|_| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r.context("writing to stdout"),
    }
}

/// A part of a JSON document as [`output`] writes it: its keys in order (a `serde_json::Value`'s) and its
/// frames located in their files.
fn located_value<T: serde::Serialize>(
    v: T,
    capture: &analysis::CaptureFacts,
) -> serde_json::Result<serde_json::Value> {
    serde_json::to_value(v).map(|mut v| {
        report::locate_frames_json(&mut v, capture);
        v
    })
}

/// `flows --json`'s document, its keys in the order a `serde_json::Value` gives them.
#[derive(serde::Serialize)]
#[serde(bound = "")]
struct FlowsDocument<'a, O> {
    capture: serde_json::Value,
    connections: FlowRows<'a, O>,
    connects: serde_json::Value,
    unknowns: serde_json::Value,
}

/// The rows of `flows --json`, each made (its close judged) and made a JSON value (see
/// [`located_value`]) as it is written.
struct FlowRows<'a, O> {
    run: &'a Run<O>,
    closes: &'a analysis::FlowCloses,
    order: &'a [usize],
}

impl<O> serde::Serialize for FlowRows<'_, O> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{Error, SerializeSeq};
        let mut seq = s.serialize_seq(Some(self.order.len()))?;
        for r in self
            .order
            .iter()
            .filter_map(|&i| self.closes.row(self.run, i))
        {
            seq.serialize_element(&located_value(r, &self.run.capture).map_err(S::Error::custom)?)?;
        }
        seq.end()
    }
}
