//! `pcapsleuth rate`.

use std::process::ExitCode;
use std::time::Duration;

use pcapsleuth::analysis::{self, Everything, Rates};
use pcapsleuth::report::{self};

use crate::args;
use crate::common::{analyze, Common, PlotsArg};
use crate::shell::{finish, output, plot_report};

// The help text is the doc comment of `Command::Rate` (src/main.rs).
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub common: Common,
    /// Interval of the printed series, at least 1ms (e.g. 1s, 100ms).
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = args::interval)]
    pub interval: Duration,
    #[command(flatten)]
    pub plots: PlotsArg,
}

pub fn run(given: Args) -> anyhow::Result<ExitCode> {
    let Args {
        common,
        interval,
        plots,
    } = given;
    let interval_ns = args::nanos(interval);
    // Every analysis only when the plots draw them all.
    if let Some(dir) = plots.dir.as_deref() {
        let (cap, a) = analyze(&common, || Everything::new(interval_ns))?;
        output(
            common.engine.json,
            &a,
            &a.output.rates.report(),
            report::render_rate,
        )?;
        plot_report(dir, &analysis::full_report(&a))?;
        return Ok(finish(&cap, &a));
    }
    let (cap, a) = analyze(&common, || Rates::new(interval_ns))?;
    output(
        common.engine.json,
        &a,
        &a.output.report(),
        report::render_rate,
    )?;
    Ok(finish(&cap, &a))
}
