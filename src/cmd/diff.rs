//! `pcapsleuth diff`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::bail;
use pcapsleuth::analysis::{self, Everything};
use pcapsleuth::report::{self};

use crate::common::{analyze, Common, EngineArgs};
use crate::shell::{emit, finish, fitted, InputError};

// The help text is the doc comment of `Command::Diff` (src/main.rs).
#[derive(clap::Args)]
pub struct Args {
    /// Run A (the baseline) and run B, one file each.
    #[arg(value_names = ["A_CAPTURE", "B_CAPTURE"], num_args = 2, conflicts_with_all = ["a", "b"])]
    pub pair: Vec<PathBuf>,
    /// Run A, the baseline: files read as one capture, as the analyses read them.
    #[arg(long = "a", value_name = "FILE", num_args = 1.., requires = "b")]
    pub a: Vec<PathBuf>,
    /// Run B, compared with A.
    #[arg(long = "b", value_name = "FILE", num_args = 1.., requires = "a")]
    pub b: Vec<PathBuf>,
    /// How many statement groups to print (the JSON has them all).
    #[arg(long, default_value_t = 20)]
    pub limit: usize,
    #[command(flatten)]
    pub engine: EngineArgs,
}

pub fn run(given: Args) -> anyhow::Result<ExitCode> {
    let Args {
        pair,
        a,
        b,
        limit,
        engine,
    } = given;
    let (a, b) = match (&pair[..], a.is_empty()) {
        ([x, y], true) => (vec![x.clone()], vec![y.clone()]),
        (_, false) => (a, b),
        _ => bail!(InputError(
            "diff needs two runs: A_CAPTURE B_CAPTURE, or --a FILE... --b FILE...".into()
        )),
    };
    let mut codes = Vec::new();
    let mut side = |files: Vec<PathBuf>| -> anyhow::Result<analysis::DiffSide> {
        let common = Common {
            files,
            engine: engine.clone(),
            no_mysql: false,
        };
        let (set, run) = analyze(&common, || {
            (Everything::default(), analysis::RunProfile::default())
        })?;
        let names = set.inputs.iter().map(|i| i.path().display().to_string());
        let (stats, profile) = &run.output;
        codes.push(finish(&set, &run));
        Ok(analysis::DiffSide::new(
            &run,
            stats,
            profile,
            names.collect(),
        ))
    };
    let (a, b) = (side(a)?, side(b)?);
    let d = analysis::diff(&a, &b);
    emit(if engine.json {
        report::to_json(&d)
    } else {
        fitted(report::render_diff(&d, limit))
    })?;
    Ok(if codes.contains(&ExitCode::from(2)) {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}
