//! `pcapsleuth man`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

use crate::shell;

// The help text is the doc comment of `Command::Man` (src/main.rs).
#[derive(clap::Args)]
pub struct Args {
    /// Write every page into this directory (created if missing) instead of printing the main one.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// Prints the manual page of `command`, or writes one page per command into the directory asked.
pub fn run(given: Args, command: clap::Command) -> anyhow::Result<ExitCode> {
    match given.dir {
        None => {
            let mut page = Vec::new();
            clap_mangen::Man::new(command)
                .render(&mut page)
                .context("rendering the manual page")?;
            shell::emit(String::from_utf8_lossy(&page).into_owned())?;
        }
        Some(dir) => {
            std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
            clap_mangen::generate_to(command, &dir)
                .with_context(|| format!("writing manual pages into {}", dir.display()))?;
            sayln!("manual pages written into {}", dir.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}
