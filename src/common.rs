//! What every analysis command shares: the capture files and engine options of its command line
//! ([`Common`]), and the run of the analyses it asks for on them.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::bail;
use clap::Args;
use pcapsleuth::analysis::{self, Analysis, EngineOptions, Run};
use pcapsleuth::capture::CaptureSet;

use crate::args;
use crate::shell::{refuse_terminal_stdin, InputError, Progress};

#[derive(Args, Clone)]
pub struct Common {
    /// Capture files (pcap or pcapng, also gzip/zstd/xz/lz4-compressed), directories, or `-` for standard
    /// input. Several files are read as one capture, in time order: a rotated set (`big.pcap*` from
    /// `tcpdump -C` or `-G`) gives the results of the files concatenated.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub engine: EngineArgs,
    /// Do not decode MySQL: TCP facts only (faster; closes are then described in TCP terms).
    #[arg(long, conflicts_with = "mysql_port")]
    pub no_mysql: bool,
}

/// How every analysis command reads its captures and prints: the options `Common` and `compare` share.
#[derive(Args, Clone)]
pub struct EngineArgs {
    /// Worker threads, 1 to 4 x the cores (default: one per core).
    #[arg(short = 'j', long, value_name = "N", value_parser = args::threads)]
    pub threads: Option<usize>,
    /// Print JSON for scripts instead of text.
    #[arg(long)]
    pub json: bool,
    /// Decode connections on this server port as MySQL (MySQL is also recognised on any port from its
    /// greeting or the shape of its requests and responses).
    #[arg(long, value_name = "N")]
    pub mysql_port: Option<u16>,
    /// Number of byte-range splits (default: automatic). Results do not depend on it.
    #[arg(long, value_name = "N", hide = true)]
    pub splits: Option<usize>,
    /// A TLS key log (the SSLKEYLOGFILE format: `CLIENT_RANDOM` lines for TLS 1.2, `*_TRAFFIC_SECRET*`
    /// lines for TLS 1.3) to decrypt MySQL sessions in TLS with; may be given again for more files. The
    /// Decryption Secrets Blocks of a pcapng (`editcap --inject-secrets`) are read without it.
    #[arg(long = "tls-keylog", value_name = "FILE")]
    pub tls_keylog: Vec<PathBuf>,
}

/// `--plots DIR` of the commands that can draw.
#[derive(Args, Clone)]
pub struct PlotsArg {
    /// Also write plots (PNG and SVG) into this directory.
    #[arg(long = "plots", value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// Reads the capture `common` names and runs the analysis `analyses` makes on it.
pub fn analyze<A: Analysis>(
    common: &Common,
    analyses: impl Fn() -> A + Sync,
) -> anyhow::Result<(CaptureSet, Run<A::Output>)> {
    let set = open_set(&common.files)?;
    analyze_opened(common, set, analysis::MysqlDepth::Full, analyses)
}

/// The connections and their closes, judged on the exchanges they fall in (`first-reset`, `flows`): plain
/// exchanges are passed over, with the same run (see `MysqlDepth::Closes`).
pub fn analyze_closes(common: &Common) -> anyhow::Result<(CaptureSet, Run<()>)> {
    let set = open_set(&common.files)?;
    analyze_opened(common, set, analysis::MysqlDepth::Closes, || ())
}

/// [`analyze`] of a capture already opened.
pub fn analyze_opened<A: Analysis>(
    common: &Common,
    mut set: CaptureSet,
    mysql_depth: analysis::MysqlDepth,
    analyses: impl Fn() -> A + Sync,
) -> anyhow::Result<(CaptureSet, Run<A::Output>)> {
    let opts = EngineOptions {
        threads: common.engine.threads.unwrap_or(0),
        splits: common.engine.splits,
        mysql: match (common.no_mysql, common.engine.mysql_port) {
            (true, _) => analysis::MysqlDetection::Off,
            (false, Some(p)) => analysis::MysqlDetection::Port(p),
            (false, None) => analysis::MysqlDetection::Auto,
        },
        mysql_depth,
        tls_keys: read_key_logs(&common.engine.tls_keylog)?,
        interrupt: Some(crate::signals::interrupt_flag()),
        phase_log: analysis::PhaseLog::from_env(),
        ..EngineOptions::default()
    };
    let total: u64 = set.inputs.iter().filter_map(|i| i.stored_len()).sum();
    let name = match &set.inputs[..] {
        [one] => one.path().display().to_string(),
        many => format!("{} files", many.len()),
    };
    let progress = Progress::new("reading", Path::new(&name), total);
    let a = analysis::analyze_set(&mut set, &opts, analyses, |done, total| {
        progress.show(done, total)
    });
    progress.clear();
    Ok((set, a))
}

/// The key logs of `--tls-keylog`, as one; a file that cannot be read, or holds no key log line, is bad
/// input; lines that are not key log lines are passed over with a warning.
pub fn read_key_logs(
    files: &[PathBuf],
) -> anyhow::Result<Option<std::sync::Arc<pcapsleuth::tls::KeyLog>>> {
    if files.is_empty() {
        return Ok(None);
    }
    let mut all = pcapsleuth::tls::KeyLog::new();
    for f in files {
        let text = std::fs::read(f)
            .map_err(|e| InputError(format!("--tls-keylog {}: {e}", f.display())))?;
        let log = pcapsleuth::tls::KeyLog::parse(&text);
        if log.is_empty() && log.ignored == 0 {
            bail!(InputError(format!(
                "--tls-keylog {}: not a TLS key log (no CLIENT_RANDOM or *_TRAFFIC_SECRET line)",
                f.display()
            )));
        }
        if log.malformed > 0 {
            let first = log
                .problems
                .first()
                .map(|p| format!(" (line {}: {})", p.line, p.what))
                .unwrap_or_default();
            sayln!(
                "pcapsleuth: warning: --tls-keylog {}: {} lines passed over{first}",
                f.display(),
                log.malformed
            );
        }
        all.extend(&log);
    }
    Ok(Some(std::sync::Arc::new(all)))
}

/// `--port`, `--server`, `--errors-only`, `--slower-than` of `mysql` and `export --slowlog`.
pub fn mysql_filter(
    port: Option<u16>,
    server: Option<String>,
    errors_only: bool,
    slower_than: Option<Duration>,
) -> anyhow::Result<analysis::MysqlFilter> {
    let server = match server {
        Some(s) => Some(
            s.parse()
                .map_err(|e: String| InputError(format!("--server: {e}")))?,
        ),
        None => None,
    };
    Ok(analysis::MysqlFilter {
        port,
        server,
        errors_only,
        slower_than_ns: slower_than.map(|d| args::nanos(d).unsigned_abs()),
    })
}

/// Opens the inputs as one capture (see [`CaptureSet::open`]). Standard input (`-`) that is a terminal
/// is refused: nobody types a capture, and a run waiting on it without a word looks hung.
pub fn open_set(files: &[PathBuf]) -> anyhow::Result<CaptureSet> {
    refuse_terminal_stdin(files)?;
    Ok(CaptureSet::open(files)?)
}
