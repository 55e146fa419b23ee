//! `pcapsleuth first-reset`.

use std::process::ExitCode;

use pcapsleuth::analysis::{self};
use pcapsleuth::report::{self};

use crate::common::{analyze_closes, Common};
use crate::shell::{finish, output};

// The help text is the doc comment of `Command::FirstReset` (src/main.rs).
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub common: Common,
    /// How many closes to list.
    #[arg(long, default_value_t = 20)]
    pub limit: usize,
}

pub fn run(given: Args) -> anyhow::Result<ExitCode> {
    let Args { common, limit } = given;
    let (cap, a) = analyze_closes(&common)?;
    let answer = analysis::first_reset(&a, limit);
    output(common.engine.json, &a, &answer, report::render_first_reset)?;
    Ok(finish(&cap, &a))
}
