//! `pcapsleuth completions`.

use std::process::ExitCode;

use crate::shell;

// The help text is the doc comment of `Command::Completions` (src/main.rs).
#[derive(clap::Args)]
pub struct Args {
    /// The shell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// Prints the completion script of `command` for the shell asked.
pub fn run(given: Args, mut command: clap::Command) -> anyhow::Result<ExitCode> {
    let mut script = Vec::new();
    clap_complete::generate(given.shell, &mut command, "pcapsleuth", &mut script);
    shell::emit(String::from_utf8_lossy(&script).into_owned())?;
    Ok(ExitCode::SUCCESS)
}
