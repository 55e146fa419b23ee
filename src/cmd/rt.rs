//! `pcapsleuth rt`.

use std::process::ExitCode;
use std::time::Duration;

use pcapsleuth::analysis::{self, Everything, MysqlStatistics, PathTiming, Rates, ResponseTimes};
use pcapsleuth::report::{self};

use crate::args;
use crate::common::{analyze, Common, PlotsArg};
use crate::shell::{finish, output, plot_report};

// The help text is the doc comment of `Command::Rt` (src/main.rs).
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub common: Common,
    /// Also print a table per interval and server: count, mean, p95, p99, errors, and the round trip
    /// each way (p50, from TCP's data/ACK timing, as `rate` shows it).
    #[arg(long)]
    pub per_interval: bool,
    /// Interval of the per-interval table, at least 1ms (e.g. 1s, 100ms).
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = args::interval)]
    pub interval: Duration,
    #[command(flatten)]
    pub plots: PlotsArg,
}

pub fn run(given: Args) -> anyhow::Result<ExitCode> {
    let Args {
        common,
        per_interval,
        interval,
        plots,
    } = given;
    let interval_ns = args::nanos(interval);
    let render = |r: &analysis::RtReport| report::render_rt(r, per_interval);
    if let Some(dir) = plots.dir.as_deref() {
        let (cap, a) = analyze(&common, || Everything::new(interval_ns))?;
        let r = a
            .output
            .rt
            .report_with_path(&a.output.mysql, Some(&a.output.rates));
        output(common.engine.json, &a, &r, render)?;
        plot_report(dir, &analysis::full_report(&a))?;
        return Ok(finish(&cap, &a));
    }
    // The slow humps are explained by statements: MySQL statistics too. The per-interval rows carry the
    // path's round trips, which only they need: the path is timed for them alone.
    if per_interval {
        let (cap, a) = analyze(&common, || {
            (
                MysqlStatistics::default(),
                ResponseTimes::new(interval_ns),
                Rates::with_path(interval_ns, PathTiming::Measured),
            )
        })?;
        let (mysql, rt, rates) = &a.output;
        let r = rt.report_with_path(mysql, Some(rates));
        output(common.engine.json, &a, &r, render)?;
        return Ok(finish(&cap, &a));
    }
    let (cap, a) = analyze(&common, || {
        (MysqlStatistics::default(), ResponseTimes::new(interval_ns))
    })?;
    let (mysql, rt) = &a.output;
    output(common.engine.json, &a, &rt.report(mysql), render)?;
    Ok(finish(&cap, &a))
}
