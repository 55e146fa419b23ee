//! The `pcapsleuth` command: a thin shell over the library.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::{Args, Parser, Subcommand, ValueEnum};
use pcapsleuth::analysis::{self, Aggregation, Analysis, EngineOptions};
use pcapsleuth::capture::{
    refuse_input_as_output, Capture, CaptureError, CaptureSet, Damage, PcapWriter,
};
use pcapsleuth::flow::{decode, Decoded, Endpoint};
use pcapsleuth::report::{self, FlowSort};

/// Offline forensics for MySQL traffic captures: who closed the connection first, and how.
///
/// Reads classic pcap (µs/ns, either byte order) and pcapng, Ethernet (VLAN), Linux cooked v1/v2
/// (`tcpdump -i any`), raw IP and loopback, IPv4 and IPv6, in parallel; through VXLAN, Geneve, GRE/ERSPAN,
/// IP-in-IP and MPLS tunnels (mirror and overlay capture points). Frame numbers are Wireshark's, so
/// "Go to packet" finds them.
#[derive(Parser)]
#[command(name = "pcapsleuth", version, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Args, Clone)]
struct Common {
    /// Capture files (pcap or pcapng, also gzip/zstd/xz/lz4-compressed), directories, or `-` for standard
    /// input. Several files are read as one capture, in time order: a rotated set (`big.pcap*` from
    /// `tcpdump -C` or `-G`) gives the results of the files concatenated.
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
    /// Worker threads (default: all cores).
    #[arg(
        short = 'j',
        long,
        value_name = "N",
        default_value_t = 0,
        hide_default_value = true
    )]
    threads: usize,
    /// Print JSON for scripts instead of text.
    #[arg(long)]
    json: bool,
    /// Decode connections on this server port as MySQL (MySQL is also recognised on any port from its
    /// greeting or the shape of its requests and responses).
    #[arg(long, value_name = "N")]
    mysql_port: Option<u16>,
    /// Do not decode MySQL: TCP facts only (faster; closes are then described in TCP terms).
    #[arg(long, conflicts_with = "mysql_port")]
    no_mysql: bool,
    /// Number of byte-range splits (default: automatic). Results do not depend on it.
    #[arg(long, value_name = "N", hide = true)]
    splits: Option<usize>,
}

/// `--plots DIR` of the commands that can draw.
#[derive(Args, Clone)]
struct PlotsArg {
    /// Also write plots (PNG and SVG) into this directory.
    #[arg(long = "plots", value_name = "DIR")]
    dir: Option<PathBuf>,
}

#[derive(Subcommand)]
enum Command {
    /// The first abnormal close (an RST, a close mid-response or with a request unanswered), the first FIN
    /// and first RST of the capture, and the first connection closes in time order.
    ///
    /// For each close: Wireshark frame number, absolute and relative time, client and server, who closed
    /// (client/server), FIN or RST, and whether the other side still had data unacknowledged or a request
    /// unanswered.
    #[command(name = "first-reset")]
    FirstReset {
        #[command(flatten)]
        common: Common,
        /// How many closes to list.
        #[arg(long, default_value_t = 20)]
        limit: usize,
    },
    /// One row per TCP connection: roles, times, packets and bytes each way, retransmissions, zero
    /// windows, and how and by whom it closed (like `tshark -z conv,tcp`, plus the close).
    Flows {
        #[command(flatten)]
        common: Common,
        /// Order of the rows.
        #[arg(long, value_enum, default_value_t = SortArg::Start)]
        sort: SortArg,
    },
    /// MySQL forensics: requests and responses with their response times, errors by code (with their own
    /// response times), statements grouped by fingerprint, and incidents: connections closed while a
    /// response or resultset was still flowing or a request was unanswered.
    ///
    /// Response time is measured from the request's first packet to the last packet of its response.
    Mysql {
        #[command(flatten)]
        common: Common,
        /// Only connections with this port (client or server side).
        #[arg(long, value_name = "N")]
        port: Option<u16>,
        /// Only connections to this server (IP:PORT or [IPv6]:PORT).
        #[arg(long, value_name = "IP:PORT")]
        server: Option<String>,
        /// Only requests answered with an error.
        #[arg(long)]
        errors_only: bool,
        /// Only requests whose response took at least this long (e.g. 10ms, 1.5s, 250us).
        #[arg(long, value_name = "DURATION")]
        slower_than: Option<String>,
        /// How many statement groups to print.
        #[arg(long, default_value_t = 20)]
        limit: usize,
        #[command(flatten)]
        plots: PlotsArg,
    },
    /// Packets/s and bits/s per direction, per server and in total, and ceilings: traffic pinned flat at a
    /// packet-rate or bit-rate cap while load waited behind it (retransmissions, requests queueing).
    Rate {
        #[command(flatten)]
        common: Common,
        /// Interval of the printed series (e.g. 1s, 100ms).
        #[arg(long, default_value = "1s")]
        interval: String,
        #[command(flatten)]
        plots: PlotsArg,
    },
    /// Response-time distribution: percentiles, a log histogram, its humps (modes) and what the slow
    /// humps have in common. MySQL requests where decoded, else TCP request/response (tcprstat-style).
    Rt {
        #[command(flatten)]
        common: Common,
        /// Also print a table per interval and server port: count, mean, p95, p99, errors.
        #[arg(long)]
        per_interval: bool,
        /// Interval of the per-interval table (e.g. 1s, 100ms).
        #[arg(long, default_value = "1s")]
        interval: String,
        #[command(flatten)]
        plots: PlotsArg,
    },
    /// Every analysis at once, as ranked findings with their evidence (frames, times, values).
    Report {
        #[command(flatten)]
        common: Common,
        /// Interval of rate series and per-interval response times.
        #[arg(long, default_value = "1s")]
        interval: String,
        #[command(flatten)]
        plots: PlotsArg,
    },
    /// Copies every packet of the matching TCP connections into a new capture for Wireshark
    /// (records byte-identical: original link type and timestamps).
    Extract {
        /// Capture file to read.
        file: PathBuf,
        /// Packets with this TCP port on either side.
        #[arg(long, value_name = "N", group = "filter")]
        port: Option<u16>,
        /// Packets to or from this endpoint (IP:PORT or [IPv6]:PORT).
        #[arg(long, value_name = "IP:PORT", group = "filter")]
        flow: Option<String>,
        /// One connection: CLIENT_IP:PORT-SERVER_IP:PORT (either direction matches).
        #[arg(long, value_name = "CLIENT-SERVER", group = "filter")]
        conn: Option<String>,
        /// Output file.
        #[arg(short, long, value_name = "OUT")]
        output: PathBuf,
    },
    /// Cuts a capture into pieces of N packets or N megabytes (like `editcap -c`), written in parallel.
    Split {
        /// Capture file to read.
        file: PathBuf,
        /// Packets per piece.
        #[arg(long, value_name = "N", group = "size", required = true)]
        packets: Option<u64>,
        /// Megabytes (10^6 bytes) per piece.
        #[arg(long, value_name = "N", group = "size", required = true)]
        megabytes: Option<u64>,
        /// Directory for the pieces (created if missing).
        #[arg(short, long, value_name = "DIR")]
        output: PathBuf,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum SortArg {
    Start,
    Bytes,
    Duration,
}

/// Writes to stderr, ignoring a closed stderr (`2>&1 | head -1`): warnings and progress are not worth
/// dying for, and `eprint!` would panic.
macro_rules! say {
    ($($arg:tt)*) => {{
        let _ = write!(std::io::stderr(), $($arg)*);
    }};
}

/// [`say!`] with a newline.
macro_rules! sayln {
    ($($arg:tt)*) => {{
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

/// An input problem: exit code 2.
struct InputError(String);

fn main() -> ExitCode {
    keep_standard_streams_open();
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            let _ = std::io::stdout().flush();
            if let Some(InputError(msg)) = e.downcast_ref::<InputError>() {
                sayln!("pcapsleuth: {msg}");
                return ExitCode::from(2);
            }
            if let Some(ce) = e.downcast_ref::<CaptureError>() {
                sayln!("pcapsleuth: {ce}");
                return ExitCode::from(match ce {
                    CaptureError::Write { .. } => 1,
                    _ => 2,
                });
            }
            sayln!("pcapsleuth: {e:#}");
            ExitCode::from(1)
        }
    }
}

/// Opens /dev/null on any of the standard streams the caller closed (`2>&-`): otherwise the next file
/// opened, the input or an output being written, would take its number, and a warning meant for stderr
/// would be written into it.
fn keep_standard_streams_open() {
    for fd in 0..=2 {
        // SAFETY: fcntl(F_GETFD) only queries the descriptor; open returns a new one we keep for good.
        unsafe {
            if libc::fcntl(fd, libc::F_GETFD) == -1 {
                libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
            }
        }
    }
}

impl std::fmt::Debug for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for InputError {}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::FirstReset { common, limit } => {
            let (cap, a) = analyze(&common)?;
            let answer = analysis::first_reset(&a, limit);
            output(common.json, &a.capture, &answer, report::render_first_reset)?;
            Ok(finish(&cap, &a))
        }
        Command::Flows { common, sort } => {
            let (cap, a) = analyze(&common)?;
            let by = match sort {
                SortArg::Start => FlowSort::Start,
                SortArg::Bytes => FlowSort::Bytes,
                SortArg::Duration => FlowSort::Duration,
            };
            let rows = report::sorted(&a.connections, by);
            emit(if common.json {
                report::to_json_located(
                    &serde_json::json!({
                        "capture": a.capture,
                        "connects": analysis::connect_report(&a),
                        "connections": rows,
                    }),
                    &a.capture,
                )
            } else {
                report::locate_frames_text(&report::render_flows(&a, &rows), &a.capture)
            })?;
            Ok(finish(&cap, &a))
        }
        Command::Mysql {
            common,
            port,
            server,
            errors_only,
            slower_than,
            limit,
            plots,
        } => {
            let server = match server {
                Some(s) => Some(
                    s.parse()
                        .map_err(|e: String| InputError(format!("--server: {e}")))?,
                ),
                None => None,
            };
            let slower_than_ns = match slower_than {
                Some(d) => Some(parse_duration_ns(&d)?),
                None => None,
            };
            let filter = analysis::MysqlFilter {
                port,
                server,
                errors_only,
                slower_than_ns,
            };
            // Rate series and response-time distributions are only drawn, never printed, by `mysql`.
            let aggregation = if plots.dir.is_some() {
                Aggregation::Everything
            } else {
                Aggregation::Mysql
            };
            let (cap, a) = analyze_with(&common, filter, 0, aggregation)?;
            let mysql = a.mysql.clone().report();
            output(common.json, &a.capture, &mysql, |r| {
                report::render_mysql(r, limit)
            })?;
            write_plots(plots.dir.as_deref(), &a)?;
            Ok(finish(&cap, &a))
        }
        Command::Rate {
            common,
            interval,
            plots,
        } => {
            let (cap, a) = analyze_full(&common, &interval)?;
            let r = a.rates.report();
            output(common.json, &a.capture, &r, report::render_rate)?;
            write_plots(plots.dir.as_deref(), &a)?;
            Ok(finish(&cap, &a))
        }
        Command::Rt {
            common,
            per_interval,
            interval,
            plots,
        } => {
            let (cap, a) = analyze_full(&common, &interval)?;
            let r = a.rt.report(&a.mysql);
            output(common.json, &a.capture, &r, |r| {
                report::render_rt(r, per_interval)
            })?;
            write_plots(plots.dir.as_deref(), &a)?;
            Ok(finish(&cap, &a))
        }
        Command::Report {
            common,
            interval,
            plots,
        } => {
            let (cap, a) = analyze_full(&common, &interval)?;
            let r = analysis::full_report(&a);
            output(common.json, &a.capture, &r, report::render_report)?;
            if let Some(dir) = plots.dir.as_deref() {
                plot_report(dir, &r)?;
            }
            Ok(finish(&cap, &a))
        }
        Command::Extract {
            file,
            port,
            flow,
            conn,
            output,
        } => extract(&file, port, flow, conn, &output),
        Command::Split {
            file,
            packets,
            megabytes,
            output,
        } => split(&file, packets, megabytes, &output),
    }
}

/// Writes the plots of every analysis into `dir`, naming on stderr what was written and what was skipped.
fn write_plots(dir: Option<&Path>, a: &Analysis) -> anyhow::Result<()> {
    match dir {
        Some(dir) => plot_report(dir, &analysis::full_report(a)),
        None => Ok(()),
    }
}

fn plot_report(dir: &Path, r: &analysis::FullReport) -> anyhow::Result<()> {
    let set = report::write_plot_set(dir, r)?;
    for p in &set.written {
        sayln!("pcapsleuth: wrote {}", p.display());
    }
    for s in &set.skipped {
        sayln!("pcapsleuth: no {} plot: {}", s.name, s.reason);
    }
    Ok(())
}

/// Prints `value` as JSON for scripts or, rendered by `text`, for people.
fn output<T: serde::Serialize>(
    json: bool,
    capture: &analysis::CaptureFacts,
    value: &T,
    text: impl FnOnce(&T) -> String,
) -> anyhow::Result<()> {
    emit(if json {
        report::to_json_located(value, capture)
    } else {
        report::locate_frames_text(&text(value), capture)
    })
}

fn emit(text: String) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r.context("writing to stdout"),
    }
}

fn open(path: &Path) -> anyhow::Result<Capture> {
    Ok(Capture::open(path)?)
}

/// `10ms`, `1.5s`, `250us`, `2m` (a bare number is milliseconds).
fn parse_duration_ns(s: &str) -> anyhow::Result<u64> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let scale = match unit.trim() {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "" | "ms" => 1e6,
        "s" => 1e9,
        "m" | "min" => 60e9,
        _ => f64::NAN,
    };
    match num.parse::<f64>() {
        Ok(v) if scale.is_finite() && v >= 0.0 => Ok((v * scale) as u64),
        _ => bail!(InputError(format!(
            "--slower-than expects a duration like 10ms, 1.5s or 250us, got `{s}`"
        ))),
    }
}

/// Connections and their closes only (`first-reset`, `flows`).
fn analyze(common: &Common) -> anyhow::Result<(CaptureSet, Analysis)> {
    analyze_with(
        common,
        analysis::MysqlFilter::default(),
        0,
        Aggregation::ConnectionsOnly,
    )
}

fn analyze_full(common: &Common, interval: &str) -> anyhow::Result<(CaptureSet, Analysis)> {
    let ns = parse_duration_ns(interval).map_err(|_| {
        InputError(format!(
            "--interval expects a duration like 1s or 100ms, got `{interval}`"
        ))
    })?;
    if ns < 1_000_000 {
        bail!(InputError(format!(
            "--interval must be at least 1ms, got `{interval}`"
        )));
    }
    analyze_with(
        common,
        analysis::MysqlFilter::default(),
        ns as i64,
        Aggregation::Everything,
    )
}

fn analyze_with(
    common: &Common,
    mysql_filter: analysis::MysqlFilter,
    interval_ns: i64,
    aggregation: Aggregation,
) -> anyhow::Result<(CaptureSet, Analysis)> {
    let mut set = CaptureSet::open(&common.files)?;
    let opts = EngineOptions {
        threads: common.threads,
        splits: common.splits,
        mysql: match (common.no_mysql, common.mysql_port) {
            (true, _) => analysis::MysqlDetection::Off,
            (false, Some(p)) => analysis::MysqlDetection::Port(p),
            (false, None) => analysis::MysqlDetection::Auto,
        },
        mysql_filter,
        interval_ns,
        aggregation,
        ..EngineOptions::default()
    };
    let total: u64 = set.inputs.iter().filter_map(|i| i.stored_len()).sum();
    let name = match &set.inputs[..] {
        [one] => one.path().display().to_string(),
        many => format!("{} files", many.len()),
    };
    let progress = Progress::new("reading", Path::new(&name), total);
    let a = analysis::analyze_set(&mut set, &opts, |done, total| progress.show(done, total));
    progress.clear();
    if !set.skipped.is_empty() {
        sayln!(
            "pcapsleuth: skipped {} files that are not captures: {}",
            set.skipped.len(),
            set.skipped
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    for &(earlier, later) in &set.overlaps {
        sayln!(
            "pcapsleuth: warning: {} and {} overlap in time; they were read one after the other",
            set.inputs[earlier].path().display(),
            set.inputs[later].path().display()
        );
    }
    Ok((set, a))
}

/// A progress line on stderr, for inputs over 256 MB when stderr is a terminal. Cheap to call per record:
/// it writes only when the percentage changes.
struct Progress {
    label: String,
    shown: bool,
    percent: std::sync::atomic::AtomicU64,
}

impl Progress {
    fn new(verb: &str, file: &Path, len: u64) -> Self {
        Progress {
            label: format!("{verb} {}", file.display()),
            shown: std::io::stderr().is_terminal() && len > 256 << 20,
            percent: std::sync::atomic::AtomicU64::new(u64::MAX),
        }
    }

    fn show(&self, done: u64, total: u64) {
        let percent = done.saturating_mul(100) / total.max(1);
        if self.shown
            && self
                .percent
                .swap(percent, std::sync::atomic::Ordering::Relaxed)
                != percent
        {
            say!(
                "\r{}: {:>3}% ({:.1} of {:.1} GB)",
                self.label,
                percent,
                done as f64 / 1e9,
                total as f64 / 1e9
            );
        }
    }

    fn clear(&self) {
        if self.shown {
            say!("\r\x1b[K");
        }
    }
}

/// `split` copies a piece in steps of this size, releasing each step's pages: memory stays flat however
/// large the pieces.
const COPY_STEP: u64 = 64 << 20;

/// Warnings for damage the reading survived; exit code 2 if any of it was more than a cut-short tail.
fn finish(set: &CaptureSet, a: &Analysis) -> ExitCode {
    if set.inputs.len() > 1 {
        sayln!(
            "pcapsleuth: read {} files as one capture, one after the other in time order ({}); frames are numbered across them",
            set.inputs.len(),
            set.inputs
                .iter()
                .map(|i| i.path().display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let paths: Vec<&Path> = set.inputs.iter().map(|i| i.path()).collect();
    report_damage(&paths, &a.capture.damage)
}

fn report_damage(files: &[&Path], damage: &[Damage]) -> ExitCode {
    let mut fatal = false;
    for d in damage {
        let level = if d.is_fatal() { "error" } else { "warning" };
        let file = files.get(d.input).copied().unwrap_or(Path::new("?"));
        sayln!("pcapsleuth: {level}: {}: {d}", file.display());
        fatal |= d.is_fatal();
    }
    if fatal {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    }
}

/// Which packets `extract` keeps.
enum Selection {
    Port(u16),
    Endpoint(Endpoint),
    Connection(Endpoint, Endpoint),
}

fn parse_conn(s: &str) -> anyhow::Result<(Endpoint, Endpoint)> {
    // The '-' between the endpoints is the one outside IPv6 brackets.
    let mut depth = 0i32;
    let cut = s.char_indices().find(|&(_, c)| {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            _ => {}
        }
        c == '-' && depth == 0
    });
    let Some((i, _)) = cut else {
        bail!(InputError(format!(
            "--conn expects CLIENT_IP:PORT-SERVER_IP:PORT, got `{s}`"
        )));
    };
    let a = s[..i]
        .parse::<Endpoint>()
        .map_err(|e| InputError(format!("--conn: {e}")))?;
    let b = s[i + 1..]
        .parse::<Endpoint>()
        .map_err(|e| InputError(format!("--conn: {e}")))?;
    Ok((a, b))
}

fn extract(
    file: &Path,
    port: Option<u16>,
    flow: Option<String>,
    conn: Option<String>,
    output: &Path,
) -> anyhow::Result<ExitCode> {
    let sel = match (port, flow, conn) {
        (Some(p), _, _) => Selection::Port(p),
        (_, Some(f), _) => Selection::Endpoint(
            f.parse()
                .map_err(|e: String| InputError(format!("--flow: {e}")))?,
        ),
        (_, _, Some(c)) => {
            let (a, b) = parse_conn(&c)?;
            Selection::Connection(a, b)
        }
        _ => bail!(InputError(
            "extract needs one of --port N, --flow IP:PORT or --conn CLIENT-SERVER".into()
        )),
    };
    let cap = open(file)?;
    let mut w = PcapWriter::create(output, &cap)?;
    let progress = Progress::new("extracting from", file, cap.len());
    let mut pass = cap.pass();
    while let Some(rec) = pass.next_record() {
        progress.show(rec.offset, cap.len());
        let Decoded::Tcp(seg) = decode(rec.link, rec.data) else {
            continue;
        };
        let (src, dst) = (seg.src_endpoint(), seg.dst_endpoint());
        let keep = match &sel {
            Selection::Port(p) => src.port == *p || dst.port == *p,
            Selection::Endpoint(e) => src == *e || dst == *e,
            Selection::Connection(a, b) => (src == *a && dst == *b) || (src == *b && dst == *a),
        };
        if keep {
            w.write(&rec)?;
        }
    }
    progress.clear();
    let n = w.finish()?;
    let damage = pass.finish();
    sayln!("pcapsleuth: wrote {n} packets to {}", output.display());
    Ok(report_damage(&[file], &damage))
}

fn split(
    file: &Path,
    packets: Option<u64>,
    megabytes: Option<u64>,
    out_dir: &Path,
) -> anyhow::Result<ExitCode> {
    use rayon::prelude::*;
    let cap = open(file)?;
    if packets == Some(0) || megabytes == Some(0) {
        bail!(InputError("split size must be at least 1".into()));
    }
    let progress = Progress::new("splitting", file, cap.len());
    // Piece boundaries: a sequential walk of record headers (fast), then pieces are copied in parallel,
    // each as one contiguous run of whole records after the source's own header.
    let mut cuts = vec![cap.initial_state().offset];
    let mut pass = cap.pass();
    let (mut in_piece, mut piece_start) = (0u64, cap.initial_state().offset);
    while let Some(rec) = pass.next_record() {
        // The walk is the quick half: the copy shows the second half of the progress.
        progress.show(rec.offset / 2, cap.len());
        let full = match (packets, megabytes) {
            (Some(n), _) => in_piece >= n,
            (_, Some(mb)) => {
                in_piece > 0 && rec.offset + rec.raw.len() as u64 - piece_start > mb * 1_000_000
            }
            _ => false,
        };
        if full {
            cuts.push(rec.offset);
            piece_start = rec.offset;
            in_piece = 0;
        }
        in_piece += 1;
    }
    cuts.push(pass.offset());
    let damage = pass.finish();
    let stem = file
        .file_stem()
        .map_or("capture".into(), |s| s.to_string_lossy().into_owned());
    let ext = file
        .extension()
        .map_or("pcap".into(), |s| s.to_string_lossy().into_owned());
    let pieces: Vec<(PathBuf, u64, u64)> = cuts
        .windows(2)
        .enumerate()
        .filter(|(_, w)| w[1] > w[0])
        .map(|(i, w)| (out_dir.join(format!("{stem}_{i:05}.{ext}")), w[0], w[1]))
        .collect();
    // No piece may replace the input (`split x.pcap -o .` where x.pcap is itself a piece's name).
    for (path, _, _) in &pieces {
        refuse_input_as_output(path, [(file, cap.file_id())])?;
    }
    std::fs::create_dir_all(out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
    let copied = std::sync::atomic::AtomicU64::new(0);
    let written: Result<Vec<&PathBuf>, CaptureError> = pieces
        .par_iter()
        .map(|(path, a, b)| {
            let mut w = PcapWriter::create(path, &cap)?;
            // In steps, releasing what was copied: a piece can be gigabytes.
            let mut at = *a;
            while at < *b {
                let to = (at + COPY_STEP).min(*b);
                w.write_raw(&cap.bytes()[at as usize..to as usize])?;
                cap.release(at, to);
                let done = copied.fetch_add(to - at, std::sync::atomic::Ordering::Relaxed);
                progress.show((cap.len() + done + to - at) / 2, cap.len());
                at = to;
            }
            w.finish()?;
            Ok(path)
        })
        .collect();
    let written = written?;
    progress.clear();
    sayln!(
        "pcapsleuth: wrote {} pieces to {}",
        written.len(),
        out_dir.display()
    );
    Ok(report_damage(&[file], &damage))
}
