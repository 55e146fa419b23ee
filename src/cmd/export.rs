//! `pcapsleuth export`: the capture's Parquet datasets, its slow log, or both from one read.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::bail;
use pcapsleuth::analysis::{self, Run};
use pcapsleuth::export;
use pcapsleuth::report;

use crate::args;
use crate::common::{analyze_opened, mysql_filter, open_set, Common};
use crate::shell::{finish, say_stopped, InputError, Interrupted};

// The help text is the doc comment of `Command::Export` (src/main.rs).
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub common: Common,
    /// The root directory of the Parquet datasets (created if missing).
    #[arg(long, value_name = "DIR", required_unless_present = "slowlog")]
    pub parquet: Option<PathBuf>,
    /// The MySQL slow query log to write (replaced if it exists; never an input).
    #[arg(long, value_name = "OUT.log", conflicts_with = "no_mysql")]
    pub slowlog: Option<PathBuf>,
    /// The capture's name, its partition `capture=NAME` (default: the first file's name without
    /// its extensions). Letters, digits, `.`, `_`, `-`.
    #[arg(long, value_name = "NAME", requires = "parquet")]
    pub capture: Option<String>,
    /// A constant column and partition key of every row, e.g. `host=db3` (repeatable; the
    /// partitions nest in the order given, before `capture=`).
    #[arg(long, value_name = "KEY=VALUE", requires = "parquet")]
    pub label: Vec<String>,
    /// Interval of the rates series, at least 1ms (e.g. 1s, 100ms).
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = args::interval)]
    pub interval: Duration,
    /// Replace the partition of this capture and labels if DIR already has it (a re-run, a retried
    /// task), instead of refusing.
    #[arg(long, requires = "parquet")]
    pub replace: bool,
    /// Slow log: only connections with this port (client or server side).
    #[arg(long, value_name = "N", requires = "slowlog")]
    pub port: Option<u16>,
    /// Slow log: only connections to this server (IP:PORT or [IPv6]:PORT).
    #[arg(long, value_name = "IP:PORT", requires = "slowlog")]
    pub server: Option<String>,
    /// Slow log: only statements answered with an error.
    #[arg(long, requires = "slowlog")]
    pub errors_only: bool,
    /// Slow log: only statements whose response took at least this long (10ms, 1.5s, 250us).
    #[arg(long, value_name = "DURATION", value_parser = args::duration, requires = "slowlog")]
    pub slower_than: Option<Duration>,
}

pub fn run(given: Args) -> anyhow::Result<ExitCode> {
    let Args {
        common,
        parquet,
        slowlog,
        capture,
        label,
        interval,
        replace,
        port,
        server,
        errors_only,
        slower_than,
    } = given;
    if common.engine.json {
        bail!(InputError(
            "export writes files and prints no report: it has no --json".into()
        ));
    }
    let parquet = parquet.map(|root| ParquetArgs {
        root,
        capture,
        labels: label,
        interval_ns: args::nanos(interval),
        existing: if replace {
            export::Existing::Replace
        } else {
            export::Existing::Refuse
        },
    });
    let slowlog = match slowlog {
        Some(path) => Some(export::SlowLogOptions {
            filter: mysql_filter(port, server, errors_only, slower_than)?,
            ..export::SlowLogOptions::new(path)
        }),
        None => None,
    };
    export_files(&common, parquet, slowlog)
}

/// `export --parquet`'s arguments.
struct ParquetArgs {
    root: PathBuf,
    capture: Option<String>,
    labels: Vec<String>,
    interval_ns: i64,
    existing: export::Existing,
}

/// `export`: the capture's Parquet datasets, its slow log, or both from one read.
fn export_files(
    common: &Common,
    parquet: Option<ParquetArgs>,
    slowlog: Option<export::SlowLogOptions>,
) -> anyhow::Result<ExitCode> {
    let usage = |e: export::ExportError| -> anyhow::Error {
        if e.is_usage() {
            InputError(e.to_string()).into()
        } else {
            e.into()
        }
    };
    let parquet = match parquet {
        Some(p) => {
            let labels = p
                .labels
                .iter()
                .map(|l| l.parse::<export::Label>())
                .collect::<Result<Vec<_>, _>>()
                .map_err(usage)?;
            let name = p
                .capture
                .unwrap_or_else(|| export::Partition::capture_name_of(&common.files[0]));
            let partition = export::Partition::new(&name, labels).map_err(usage)?;
            Some(export::ExportOptions {
                interval_ns: p.interval_ns,
                existing: p.existing,
                ..export::ExportOptions::new(p.root, partition)
            })
        }
        None => None,
    };
    let set = open_set(&common.files)?;
    // Refused before anything is read: an output that is an input, a partition already there.
    let log = slowlog
        .map(|o| export::SlowLog::begin(o, set.identities()))
        .transpose()
        .map_err(usage)?;
    let inputs: Vec<PathBuf> = common
        .files
        .iter()
        .cloned()
        .chain(set.identities().map(|(p, _)| p.to_path_buf()))
        .collect();
    let job = parquet
        .map(|o| export::Export::begin(o, inputs.iter().map(PathBuf::as_path)))
        .transpose()
        .map_err(usage)?;
    for left in job.iter().flat_map(|j| j.removed_stale()) {
        sayln!(
            "pcapsleuth: removed {}, left by an export that was killed",
            left.display()
        );
    }
    let full = analysis::MysqlDepth::Full;
    match (job, log) {
        (Some(job), Some(log)) => {
            let (set, run) =
                analyze_opened(common, set, full, || (job.analysis(), log.analysis()))?;
            whole(&run)?;
            say_parquet(&job.finish_with(&run, &run.output.0).map_err(usage)?);
            say_slowlog(&log.finish(&run.output.1).map_err(usage)?, &run);
            Ok(finish(&set, &run))
        }
        (Some(job), None) => {
            let (set, run) = analyze_opened(common, set, full, || job.analysis())?;
            whole(&run)?;
            say_parquet(&job.finish(&run).map_err(usage)?);
            Ok(finish(&set, &run))
        }
        (None, Some(log)) => {
            let (set, run) = analyze_opened(common, set, full, || log.analysis())?;
            whole(&run)?;
            say_slowlog(&log.finish(&run.output).map_err(usage)?, &run);
            Ok(finish(&set, &run))
        }
        (None, None) => bail!(InputError(
            "export needs --parquet DIR or --slowlog OUT.log".into()
        )),
    }
}

/// Refuses to write the datasets of a run interrupted before the capture's end: an export is of the
/// whole capture or nothing (the job and the log, dropped, remove what they had staged).
fn whole<O>(run: &Run<O>) -> anyhow::Result<()> {
    match run.capture.stopped {
        Some(s) => {
            say_stopped(s.frames_read);
            bail!(Interrupted(
                "an export is of the whole capture: nothing written".into()
            ))
        }
        None => Ok(()),
    }
}

/// What `export --parquet` wrote, on stderr.
fn say_parquet(done: &export::ExportSummary) {
    let rows = |d: &str, one: &str, many: &str| report::style::counted(done.rows(d), one, many);
    sayln!(
        "pcapsleuth: wrote {}, {}, {}, {} and {} ({}) to {}",
        rows("transactions", "transaction", "transactions"),
        rows("connections", "connection", "connections"),
        rows("closes", "close", "closes"),
        rows("rates", "rate interval", "rate intervals"),
        rows("ceilings", "ceiling", "ceilings"),
        report::style::size(done.bytes),
        done.partitions
            .first()
            .map_or_else(String::new, |p| p.display().to_string()),
    );
}

/// What `export --slowlog` wrote, and what the log lacks (and what the capture could not show), on
/// stderr.
fn say_slowlog<O>(done: &export::SlowLogSummary, run: &Run<O>) {
    sayln!(
        "pcapsleuth: wrote {} ({}) to {}",
        report::style::counted(done.counts.entries, "slow-log entry", "slow-log entries"),
        report::style::size(done.bytes),
        done.path.display()
    );
    for note in done.counts.notes() {
        sayln!("pcapsleuth: {note}");
    }
    for note in analysis::unknowns(run).notes {
        sayln!("pcapsleuth: partial data: {note}");
    }
}
