//! `pcapsleuth load`.

use std::process::ExitCode;
use std::time::Duration;

use pcapsleuth::analysis::{self};
use pcapsleuth::report::{self};

use crate::args;
use crate::common::{analyze, Common};
use crate::shell::{finish, output, output_json_streamed};

// The help text is the doc comment of `Command::Load` (src/main.rs).
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub common: Common,
    /// Interval of the per-interval table, at least 1ms (e.g. 1s, 100ms).
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = args::interval)]
    pub interval: Duration,
}

pub fn run(given: Args) -> anyhow::Result<ExitCode> {
    let Args { common, interval } = given;
    let interval_ns = args::nanos(interval);
    let (cap, mut a) = analyze(&common, || analysis::LoadTest::new(interval_ns))?;
    if common.engine.json {
        // The per-interval rows (up to 200,000) are written one by one.
        let rows = std::mem::take(&mut a.output.per_interval);
        output_json_streamed(&a, &a.output, &[(vec!["per_interval"], &rows)])?;
    } else {
        output(false, &a, &a.output, report::render_load)?;
    }
    Ok(finish(&cap, &a))
}
