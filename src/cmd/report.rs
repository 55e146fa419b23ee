//! `pcapsleuth report`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use pcapsleuth::analysis::{self, Everything, Run};
use pcapsleuth::capture::{refuse_input_as_output, CaptureSet};
use pcapsleuth::report::{self};

use crate::args;
use crate::cmd::mysql::MysqlArrays;
use crate::common::{analyze, Common, PlotsArg};
use crate::shell::{finish, output, output_json_streamed, plot_report};

// The help text is the doc comment of `Command::Report` (src/main.rs).
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub common: Common,
    /// Interval of rate series and per-interval response times, at least 1ms (e.g. 1s, 100ms).
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = args::interval)]
    pub interval: Duration,
    #[command(flatten)]
    pub plots: PlotsArg,
    /// Also write the whole report as one self-contained HTML page: the first abnormal close with its
    /// Wireshark filter and extract command, the findings, sortable MySQL tables and every plot inline
    /// (no network needed to read it; it prints).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// With --html: a baseline run (files read as one capture) to compare this capture with, as
    /// `pcapsleuth diff BASELINE CAPTURE` does; the page gets the diff's verdict and the statements
    /// that changed.
    #[arg(long, value_name = "FILE", num_args = 1.., requires = "html")]
    pub baseline: Vec<PathBuf>,
}

pub fn run(given: Args) -> anyhow::Result<ExitCode> {
    let Args {
        common,
        interval,
        plots,
        html,
        baseline,
    } = given;
    let interval_ns = args::nanos(interval);
    let (cap, a, profile) = if baseline.is_empty() {
        let (cap, a) = analyze(&common, || Everything::new(interval_ns))?;
        (cap, a, None)
    } else {
        let (cap, a) = analyze(&common, || {
            (
                Everything::new(interval_ns),
                analysis::RunProfile::default(),
            )
        })?;
        let mut profile = None;
        let a = a.map(|(stats, p)| {
            profile = Some(p);
            stats
        });
        (cap, a, profile)
    };
    let mut r = analysis::full_report(&a);
    if common.engine.json {
        // The long arrays are written element by element, then put back for the plots and the page.
        let arrays = ReportArrays::take(&mut r);
        output_json_streamed(&a, &r, &arrays.paths())?;
        arrays.put_back(&mut r);
    } else {
        output(false, &a, &r, report::render_report)?;
    }
    if let Some(dir) = plots.dir.as_deref() {
        plot_report(dir, &r)?;
    }
    if let Some(path) = html.as_deref() {
        let against = match profile {
            Some(profile) => {
                let names = |set: &CaptureSet| -> Vec<String> {
                    set.inputs
                        .iter()
                        .map(|i| i.path().display().to_string())
                        .collect()
                };
                let base = Common {
                    files: baseline,
                    ..common.clone()
                };
                let (base_set, base_run) = analyze(&base, || {
                    (
                        Everything::new(interval_ns),
                        analysis::RunProfile::default(),
                    )
                })?;
                let (stats, p) = &base_run.output;
                let base_names = names(&base_set);
                let a_side = analysis::DiffSide::new(&base_run, stats, p, base_names.clone());
                let b_side = analysis::DiffSide::new(&a, &a.output, &profile, names(&cap));
                Some((analysis::diff(&a_side, &b_side), base_names.join(", ")))
            }
            None => None,
        };
        write_html(
            path,
            &cap,
            &a,
            &r,
            against.as_ref().map(|(d, n)| (d, n.as_str())),
        )?;
    }
    Ok(finish(&cap, &a))
}
/// `report --html`: the page of `r`, put in place at `path` only when whole (never over an input).
fn write_html<O>(
    path: &Path,
    set: &CaptureSet,
    a: &Run<O>,
    r: &analysis::FullReport,
    baseline: Option<(&analysis::Diff, &str)>,
) -> anyhow::Result<()> {
    refuse_input_as_output(path, set.identities())?;
    let names: Vec<String> = set
        .inputs
        .iter()
        .map(|i| i.path().display().to_string())
        .collect();
    let capture = match &names[..] {
        [one] => one.clone(),
        [first, ..] => format!("{first} and {} more files", names.len() - 1),
        [] => "the capture".to_string(),
    };
    let page = report::render_html_against(r, &analysis::unknowns(a), &capture, baseline)?;
    pcapsleuth::capture::write_file(path, page.as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))?;
    sayln!("pcapsleuth: wrote {}", path.display());
    Ok(())
}

/// The arrays of the whole report that grow with the capture: the MySQL report's, and the rt and rate
/// reports' per-interval series (each server's too), taken out of it to be written element by element.
struct ReportArrays {
    mysql: MysqlArrays,
    rt_per_interval: Vec<analysis::IntervalRt>,
    rate_total: Vec<analysis::RatePoint>,
    /// Each server's series, by its key in `rate.servers` (left there, empty, to keep its place).
    rate_servers: Vec<(String, Vec<analysis::RatePoint>)>,
}

impl ReportArrays {
    /// Takes the arrays out of `r`.
    fn take(r: &mut analysis::FullReport) -> Self {
        ReportArrays {
            mysql: MysqlArrays::take(&mut r.mysql),
            rt_per_interval: std::mem::take(&mut r.rt.per_interval),
            rate_total: std::mem::take(&mut r.rate.total),
            rate_servers: r
                .rate
                .servers
                .iter_mut()
                .map(|(k, v)| (k.clone(), std::mem::take(v)))
                .collect(),
        }
    }

    /// Puts the arrays back into `r`.
    fn put_back(self, r: &mut analysis::FullReport) {
        self.mysql.put_back(&mut r.mysql);
        r.rt.per_interval = self.rt_per_interval;
        r.rate.total = self.rate_total;
        for (k, v) in self.rate_servers {
            r.rate.servers.insert(k, v);
        }
    }

    /// Each array with its path of keys from the top.
    fn paths(&self) -> Vec<(Vec<&str>, &dyn report::ElementSource)> {
        let mut paths = self.mysql.under(&["mysql"]);
        paths.push((vec!["rt", "per_interval"], &self.rt_per_interval));
        paths.push((vec!["rate", "total"], &self.rate_total));
        for (server, series) in &self.rate_servers {
            paths.push((vec!["rate", "servers", server.as_str()], series));
        }
        paths
    }
}
