//! `pcapsleuth split`: hands the sizes to [`pcapsleuth::split()`], says what was written.

use std::path::PathBuf;
use std::process::ExitCode;

use pcapsleuth::analysis::units;
use pcapsleuth::extract::{Existing, PieceSize, SplitOptions};

use crate::shell::{self, Shell};

// The help text is the doc comment of `Command::Split` (src/main.rs).
#[derive(clap::Args)]
pub struct Args {
    /// Capture files, as for the analyses (several files, a directory, a glob, compressed, `-`).
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Packets per piece.
    #[arg(long, value_name = "N", group = "size")]
    pub packets: Option<u64>,
    /// Megabytes (10^6 bytes) per piece.
    #[arg(long, value_name = "N", group = "size")]
    pub megabytes: Option<u64>,
    /// Directory for the pieces (created if missing). The pieces appear together when all are
    /// written.
    #[arg(short, long, value_name = "DIR")]
    pub output: PathBuf,
    /// Replace the pieces of an earlier split of the same name in DIR (`NAME_00000.pcap`, ...)
    /// instead of refusing: the new set takes their place, and earlier pieces beyond it are removed.
    #[arg(long)]
    pub replace: bool,
}

pub fn run(given: Args) -> anyhow::Result<ExitCode> {
    let size = match (given.packets, given.megabytes) {
        (Some(n), _) => PieceSize::Packets(n),
        (None, Some(mb)) => PieceSize::Megabytes(mb),
        // clap requires one of them.
        (None, None) => PieceSize::Packets(u64::MAX),
    };
    let opts = SplitOptions {
        size,
        output: given.output,
        existing: if given.replace {
            Existing::Replace
        } else {
            Existing::Refuse
        },
    };
    if !matches!(size, PieceSize::Packets(0) | PieceSize::Megabytes(0)) {
        shell::refuse_terminal_stdin(&given.files)?;
    }
    let done = pcapsleuth::split(&given.files, &opts, &Shell::new()).map_err(shell::cut_error)?;
    shell::say_rewritten(done.rewritten);
    sayln!(
        "pcapsleuth: wrote {} to {}",
        units::counted(done.pieces as u64, "piece", "pieces"),
        opts.output.display()
    );
    Ok(if done.copied_in_parallel {
        shell::report_damage(&[done.set.inputs[0].path()], &done.damage)
    } else {
        shell::finish_pass(&done.set, &done.damage)
    })
}
