//! The `pcapsleuth` command: a thin shell over the library.

mod args;

use std::collections::{BTreeSet, HashMap};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use std::time::Duration;

use anyhow::{bail, Context};
use clap::{ArgGroup, Args, CommandFactory, Parser, Subcommand, ValueEnum};
use pcapsleuth::analysis::{
    self, Analysis, EngineOptions, Everything, FindingKind, MysqlStatistics, NamedConnection,
    Rates, ResponseTimes, Run, Scope,
};
use pcapsleuth::capture::{
    capture_stem, refuse_input_as_output, Capture, CaptureError, CaptureSet, Damage, Format, Input,
    Order, PcapWriter, PcapngWriter, Preamble, Record, Timestamp,
};
use pcapsleuth::export;
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
    #[command(flatten)]
    engine: EngineArgs,
    /// Do not decode MySQL: TCP facts only (faster; closes are then described in TCP terms).
    #[arg(long, conflicts_with = "mysql_port")]
    no_mysql: bool,
}

/// How every analysis command reads its captures and prints: the options `Common` and `compare` share.
#[derive(Args, Clone)]
struct EngineArgs {
    /// Worker threads, 1 to 4 x the cores (default: one per core).
    #[arg(short = 'j', long, value_name = "N", value_parser = args::threads)]
    threads: Option<usize>,
    /// Print JSON for scripts instead of text.
    #[arg(long)]
    json: bool,
    /// Decode connections on this server port as MySQL (MySQL is also recognised on any port from its
    /// greeting or the shape of its requests and responses).
    #[arg(long, value_name = "N")]
    mysql_port: Option<u16>,
    /// Number of byte-range splits (default: automatic). Results do not depend on it.
    #[arg(long, value_name = "N", hide = true)]
    splits: Option<usize>,
    /// A TLS key log (the SSLKEYLOGFILE format: `CLIENT_RANDOM` lines for TLS 1.2, `*_TRAFFIC_SECRET*`
    /// lines for TLS 1.3) to decrypt MySQL sessions in TLS with; may be given again for more files. The
    /// Decryption Secrets Blocks of a pcapng (`editcap --inject-secrets`) are read without it.
    #[arg(long = "tls-keylog", value_name = "FILE")]
    tls_keylog: Vec<PathBuf>,
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
        /// Only requests whose response took at least this long (with its unit: 10ms, 1.5s, 250us).
        #[arg(long, value_name = "DURATION", value_parser = args::duration)]
        slower_than: Option<Duration>,
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
        /// Interval of the printed series, at least 1ms (e.g. 1s, 100ms).
        #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = args::interval)]
        interval: Duration,
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
        /// Interval of the per-interval table, at least 1ms (e.g. 1s, 100ms).
        #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = args::interval)]
        interval: Duration,
        #[command(flatten)]
        plots: PlotsArg,
    },
    /// The load-test view: requests in flight (time-weighted mean and max, with Little's law beside it
    /// as a check), connections open and active, transactions (explicit and autocommit=0: per second,
    /// their time from first statement to the end's answer, statements, rollbacks), client think time,
    /// and idle-in-transaction time with the worst connections named; per interval and for the run.
    ///
    /// Transactions are told by the server's SERVER_STATUS_IN_TRANS flag where its responses carry it,
    /// by the statements (BEGIN, START TRANSACTION, COMMIT, ROLLBACK, SET autocommit) where not.
    Load {
        #[command(flatten)]
        common: Common,
        /// Interval of the per-interval table, at least 1ms (e.g. 1s, 100ms).
        #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = args::interval)]
        interval: Duration,
    },
    /// Every analysis at once, as ranked findings with their evidence (frames, times, values).
    Report {
        #[command(flatten)]
        common: Common,
        /// Interval of rate series and per-interval response times, at least 1ms (e.g. 1s, 100ms).
        #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = args::interval)]
        interval: Duration,
        #[command(flatten)]
        plots: PlotsArg,
        /// Also write the whole report as one self-contained HTML page: the first abnormal close with its
        /// Wireshark filter and extract command, the findings, sortable MySQL tables and every plot inline
        /// (no network needed to read it; it prints).
        #[arg(long, value_name = "FILE")]
        html: Option<PathBuf>,
        /// With --html: a baseline run (files read as one capture) to compare this capture with, as
        /// `pcapsleuth diff BASELINE CAPTURE` does; the page gets the diff's verdict and the statements
        /// that changed.
        #[arg(long, value_name = "FILE", num_args = 1.., requires = "html")]
        baseline: Vec<PathBuf>,
    },
    /// Two capture points of one workload, the client's and the server's: where each request's time went,
    /// the server or the path between them.
    ///
    /// Every request is found in both captures (by 4-tuple and TCP sequence number; through a NAT or a
    /// proxy, by its payload on connections paired by their requests), the two hosts' clocks are aligned
    /// from the matched pairs, and each response time the client saw is split into the server's time and
    /// the path's. Prints the verdict, the response times at both points side by side with what the path
    /// added, their humps side by side, and the transactions whose time went somewhere specific (a
    /// response resent on its way, one the client never saw, a request the server never saw) with their
    /// frames in both captures.
    ///
    /// `pcapsleuth compare client.pcap server.pcap`, or, with several files per side (rotated sets,
    /// directories, compressed files), `pcapsleuth compare --client c1.pcap c2.pcap --server s.pcap`.
    #[command(
        override_usage = "pcapsleuth compare [OPTIONS] CLIENT_CAPTURE SERVER_CAPTURE\n       pcapsleuth compare [OPTIONS] --client FILE... --server FILE..."
    )]
    Compare {
        /// The client capture and the server capture, one file each.
        #[arg(value_names = ["CLIENT_CAPTURE", "SERVER_CAPTURE"], num_args = 2, conflicts_with_all = ["client", "server"])]
        pair: Vec<PathBuf>,
        /// The capture taken at the client (or on its side of the path): files read as one capture, as
        /// the analyses read them.
        #[arg(long, value_name = "FILE", num_args = 1.., requires = "server")]
        client: Vec<PathBuf>,
        /// The capture taken at the server.
        #[arg(long, value_name = "FILE", num_args = 1.., requires = "client")]
        server: Vec<PathBuf>,
        /// The server's clock minus the client's, when known (`0` for two captures taken on one host or by
        /// hosts synchronised by PTP; `-2.5ms`, `12s`); by default it is estimated from the matched requests.
        #[arg(
            long,
            value_name = "DURATION",
            allow_hyphen_values = true,
            value_parser = args::signed_duration
        )]
        clock_offset: Option<i64>,
        /// Interval of the per-interval rows (`per_interval` in JSON), at least 1ms (e.g. 1s, 100ms).
        #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = args::interval)]
        interval: Duration,
        /// Also print the per-interval table.
        #[arg(long)]
        per_interval: bool,
        /// How many notable transactions to list (the earliest; all are counted).
        #[arg(long, value_name = "N", default_value_t = 20)]
        notable: usize,
        #[command(flatten)]
        engine: EngineArgs,
    },
    /// Two runs side by side (the same workload before and after a change, the good environment and
    /// the bad one), with a verdict in words: what changed, where the added time went, and why where the
    /// capture shows it.
    ///
    /// Per statement group (command and fingerprint): counts, rates, percentiles, total time, errors,
    /// rows, bytes, new and gone; a difference is called only when it is larger than the runs' own noise
    /// (a rank test of the distributions, a rate test of the counts). Then the load (requests/s, think
    /// time, requests in flight), response-time humps, connects and closes, the path (TCP handshakes,
    /// retransmissions), ceilings and servers, side by side. Runs of different lengths, servers or ports
    /// are compared on rates and shares, and the output says what was matched with what.
    ///
    /// `pcapsleuth diff a.pcap b.pcap`, or, with several files per run (rotated sets, directories,
    /// compressed files), `pcapsleuth diff --a a1.pcap a2.pcap --b b.pcap`.
    #[command(
        override_usage = "pcapsleuth diff [OPTIONS] A_CAPTURE B_CAPTURE\n       pcapsleuth diff [OPTIONS] --a FILE... --b FILE..."
    )]
    Diff {
        /// Run A (the baseline) and run B, one file each.
        #[arg(value_names = ["A_CAPTURE", "B_CAPTURE"], num_args = 2, conflicts_with_all = ["a", "b"])]
        pair: Vec<PathBuf>,
        /// Run A, the baseline: files read as one capture, as the analyses read them.
        #[arg(long = "a", value_name = "FILE", num_args = 1.., requires = "b")]
        a: Vec<PathBuf>,
        /// Run B, compared with A.
        #[arg(long = "b", value_name = "FILE", num_args = 1.., requires = "a")]
        b: Vec<PathBuf>,
        /// How many statement groups to print (the JSON has them all).
        #[arg(long, default_value_t = 20)]
        limit: usize,
        #[command(flatten)]
        engine: EngineArgs,
    },
    /// Copies the packets selected into a new capture for Wireshark (records byte-identical: original
    /// link type and timestamps): the TCP connections matching --port, --flow or --conn, the frames
    /// --frames names, the packets in --time; several selections keep what all of them select.
    ///
    /// Frames and times are numbered as the reports number them, across all the files read, so
    /// `extract big.pcap* --conn C-S --at 81234 -o one.pcap` writes the connection a finding named.
    Extract {
        /// Capture files, as for the analyses: several files (read as one capture, in time order), a
        /// directory, a glob, gzip/zstd/xz/lz4-compressed files, or `-` for standard input.
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        /// Packets with this TCP port on either side.
        #[arg(long, value_name = "N", group = "filter")]
        port: Option<u16>,
        /// Packets to or from this endpoint (IP:PORT or [IPv6]:PORT).
        #[arg(long, value_name = "IP:PORT", group = "filter")]
        flow: Option<String>,
        /// One connection: CLIENT_IP:PORT-SERVER_IP:PORT (either direction matches). If the capture
        /// holds several connections on this 4-tuple (a reused port), all of them unless --at picks one.
        #[arg(long, value_name = "CLIENT-SERVER", group = "filter")]
        conn: Option<String>,
        /// With --conn: only the connection on that 4-tuple that holds this frame.
        #[arg(long, value_name = "FRAME", requires = "conn")]
        at: Option<u64>,
        /// Only frames A to B, inclusive (`A-` to the end, `-B` from the start, `A` alone).
        #[arg(long, value_name = "A-B")]
        frames: Option<String>,
        /// Only packets from FROM to TO (FROM included, TO excluded): seconds since the capture's first
        /// packet (`12.5..20`), or UTC times as the reports print them (`2026-11-22 09:17:42.5..2026-11-22
        /// 09:18:00`, also RFC 3339 with `T` and `Z`); either end may be left out (`..20`, `12.5..`).
        #[arg(long, value_name = "FROM..TO")]
        time: Option<String>,
        /// Every connection with an abnormal close (as `first-reset` judges closes).
        #[arg(long)]
        abnormal: bool,
        /// Every connection a finding of `pcapsleuth report` names (or the server endpoint, or the
        /// frames, of a finding about those); `--findings=KIND,...` only those kinds' findings
        /// (`mid_response_close`, `errors`, ...). With --abnormal, what either selects.
        #[arg(
            long,
            value_name = "KIND,...",
            num_args = 0..=1,
            require_equals = true,
            default_missing_value = "all"
        )]
        findings: Option<String>,
        /// Write pcapng whose packets carry comments (Wireshark's packet comments, `frame.comment`) on
        /// the frames the findings point at and on abnormal closes: the finding, and the frame's number
        /// in the original capture (an extract numbers its frames anew).
        #[arg(long)]
        annotate: bool,
        /// Output file (written beside itself under a temporary name, put in place when complete).
        #[arg(short, long, value_name = "OUT")]
        output: PathBuf,
    },
    /// The capture in other tools' formats: Parquet datasets for engines beyond one machine (Spark,
    /// Trino, DuckDB, ...), and the MySQL slow query log (pt-query-digest, pt-upgrade, mysqldumpslow).
    ///
    /// --parquet writes DIR/transactions, DIR/connections, DIR/closes, DIR/rates and DIR/ceilings: every
    /// MySQL transaction, TCP connection, close (first FIN and first RST) and rate interval, each
    /// partitioned hive-style by the labels and the capture's name
    /// (DIR/transactions/host=db3/capture=NAME/part-00000.parquet), zstd-compressed, so that exports of
    /// many captures into one DIR form one dataset per table. --slowlog writes every statement answered
    /// (COM_QUERY, and COM_STMT_EXECUTE with its values) as MySQL's slow log writes it. Both in one read
    /// when both are given. Files appear only when complete.
    Export {
        #[command(flatten)]
        common: Common,
        /// The root directory of the Parquet datasets (created if missing).
        #[arg(long, value_name = "DIR", required_unless_present = "slowlog")]
        parquet: Option<PathBuf>,
        /// The MySQL slow query log to write (replaced if it exists; never an input).
        #[arg(long, value_name = "OUT.log", conflicts_with = "no_mysql")]
        slowlog: Option<PathBuf>,
        /// The capture's name, its partition `capture=NAME` (default: the first file's name without
        /// its extensions). Letters, digits, `.`, `_`, `-`.
        #[arg(long, value_name = "NAME", requires = "parquet")]
        capture: Option<String>,
        /// A constant column and partition key of every row, e.g. `host=db3` (repeatable; the
        /// partitions nest in the order given, before `capture=`).
        #[arg(long, value_name = "KEY=VALUE", requires = "parquet")]
        label: Vec<String>,
        /// Interval of the rates series, at least 1ms (e.g. 1s, 100ms).
        #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = args::interval)]
        interval: Duration,
        /// Replace the partition of this capture and labels if DIR already has it (a re-run, a retried
        /// task), instead of refusing.
        #[arg(long, requires = "parquet")]
        replace: bool,
        /// Slow log: only connections with this port (client or server side).
        #[arg(long, value_name = "N", requires = "slowlog")]
        port: Option<u16>,
        /// Slow log: only connections to this server (IP:PORT or [IPv6]:PORT).
        #[arg(long, value_name = "IP:PORT", requires = "slowlog")]
        server: Option<String>,
        /// Slow log: only statements answered with an error.
        #[arg(long, requires = "slowlog")]
        errors_only: bool,
        /// Slow log: only statements whose response took at least this long (10ms, 1.5s, 250us).
        #[arg(long, value_name = "DURATION", value_parser = args::duration, requires = "slowlog")]
        slower_than: Option<Duration>,
    },
    /// Cuts a capture into pieces of N packets or N megabytes (like `editcap -c`): a single uncompressed
    /// file is copied in parallel; several files, compressed files and standard input are read as one
    /// capture, as the analyses read them, and cut as they stream.
    #[command(group(ArgGroup::new("size").required(true).args(["packets", "megabytes"])))]
    Split {
        /// Capture files, as for the analyses (several files, a directory, a glob, compressed, `-`).
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        /// Packets per piece.
        #[arg(long, value_name = "N", group = "size")]
        packets: Option<u64>,
        /// Megabytes (10^6 bytes) per piece.
        #[arg(long, value_name = "N", group = "size")]
        megabytes: Option<u64>,
        /// Directory for the pieces (created if missing). The pieces appear together when all are
        /// written.
        #[arg(short, long, value_name = "DIR")]
        output: PathBuf,
        /// Replace the pieces of an earlier split of the same name in DIR (`NAME_00000.pcap`, ...)
        /// instead of refusing: the new set takes their place, and earlier pieces beyond it are removed.
        #[arg(long)]
        replace: bool,
    },
    /// Prints the shell completion script for SHELL, e.g.
    /// `pcapsleuth completions bash > ~/.local/share/bash-completion/completions/pcapsleuth`,
    /// `pcapsleuth completions zsh > ~/.zfunc/_pcapsleuth`,
    /// `pcapsleuth completions fish > ~/.config/fish/completions/pcapsleuth.fish`.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Prints the manual page (roff), e.g. `pcapsleuth man | man -l -`; with --dir, writes one page per
    /// command (pcapsleuth.1, pcapsleuth-first-reset.1, ...) into DIR, for `MANPATH` or /usr/local/share/man/man1.
    Man {
        /// Write every page into this directory (created if missing) instead of printing the main one.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum SortArg {
    Start,
    Bytes,
    Duration,
}

/// Writes a line to stderr, ignoring a closed stderr (`2>&1 | head -1`): warnings are not worth dying
/// for, and `eprintln!` would panic. What it says can hold file names and text from a capture: every
/// control or bidirectional character in it is shown as an escape (`report::visible_lines`).
macro_rules! sayln {
    ($($arg:tt)*) => {{
        let line = format!($($arg)*);
        let mut line = report::visible_lines(&line).into_owned();
        line.push('\n');
        let _ = std::io::stderr().write_all(line.as_bytes());
    }};
}

/// An input problem: exit code 2.
struct InputError(String);

fn main() -> ExitCode {
    keep_standard_streams_open();
    remove_staging_when_interrupted();
    let cli = Cli::parse();
    if let Some(columns) = terminal_columns() {
        report::style::set_width(columns);
    }
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

/// On SIGINT (Ctrl-C), SIGTERM (`kill`, a scheduler's timeout) or SIGHUP (a closed terminal), removes
/// the hidden staging directories of the run (`split`'s pieces, `export`'s datasets), which no
/// destructor would reach, then ends as the signal would have ended the process. The signals are
/// blocked in every thread (set here, before any thread starts, and inherited) and taken by one thread
/// that waits for them; a signal the caller ignores (`nohup`) stays ignored.
fn remove_staging_when_interrupted() {
    const SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];
    // SAFETY: sigset_t is plain data filled by sigemptyset/sigaddset; pthread_sigmask, sigwait, signal
    // and raise are given valid sets and signal numbers.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for sig in SIGNALS {
            libc::sigaddset(&mut set, sig);
        }
        if libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) != 0 {
            return;
        }
        let waiter = std::thread::Builder::new()
            .name("signals".into())
            .spawn(move || {
                let mut sig: libc::c_int = 0;
                if libc::sigwait(&set, &mut sig) == 0 {
                    pcapsleuth::capture::staging::remove_all();
                    libc::signal(sig, libc::SIG_DFL);
                    libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
                    libc::raise(sig);
                }
            });
        if waiter.is_err() {
            libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
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
            let (cap, a) = analyze_closes(&common)?;
            let answer = analysis::first_reset(&a, limit);
            output(common.engine.json, &a, &answer, report::render_first_reset)?;
            Ok(finish(&cap, &a))
        }
        Command::Flows { common, sort } => {
            let (cap, a) = analyze_closes(&common)?;
            let by = match sort {
                SortArg::Start => FlowSort::Start,
                SortArg::Bytes => FlowSort::Bytes,
                SortArg::Duration => FlowSort::Duration,
            };
            print_flows(
                common.engine.json,
                &a,
                &report::flow_order(&a.connections, by),
            )?;
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
            let filter = mysql_filter(port, server, errors_only, slower_than)?;
            // Rate series and response-time distributions are only drawn, never printed, by `mysql`.
            match plots.dir.as_deref() {
                Some(dir) => {
                    let (cap, a) = analyze(&common, || {
                        Everything::default().mysql_filter(filter.clone())
                    })?;
                    print_mysql(common.engine.json, &a, &a.output.mysql, limit)?;
                    plot_report(dir, &analysis::full_report(&a))?;
                    Ok(finish(&cap, &a))
                }
                None => {
                    let (cap, a) = analyze(&common, || MysqlStatistics::new(filter.clone()))?;
                    print_mysql(common.engine.json, &a, &a.output, limit)?;
                    Ok(finish(&cap, &a))
                }
            }
        }
        Command::Rate {
            common,
            interval,
            plots,
        } => {
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
        Command::Rt {
            common,
            per_interval,
            interval,
            plots,
        } => {
            let interval_ns = args::nanos(interval);
            let render = |r: &analysis::RtReport| report::render_rt(r, per_interval);
            if let Some(dir) = plots.dir.as_deref() {
                let (cap, a) = analyze(&common, || Everything::new(interval_ns))?;
                let r = a.output.rt.report(&a.output.mysql);
                output(common.engine.json, &a, &r, render)?;
                plot_report(dir, &analysis::full_report(&a))?;
                return Ok(finish(&cap, &a));
            }
            // The slow humps are explained by statements: MySQL statistics too.
            let (cap, a) = analyze(&common, || {
                (MysqlStatistics::default(), ResponseTimes::new(interval_ns))
            })?;
            let (mysql, rt) = &a.output;
            output(common.engine.json, &a, &rt.report(mysql), render)?;
            Ok(finish(&cap, &a))
        }
        Command::Load { common, interval } => {
            let interval_ns = args::nanos(interval);
            let (cap, a) = analyze(&common, || analysis::LoadTest::new(interval_ns))?;
            output(common.engine.json, &a, &a.output, report::render_load)?;
            Ok(finish(&cap, &a))
        }
        Command::Report {
            common,
            interval,
            plots,
            html,
            baseline,
        } => {
            let interval_ns = args::nanos(interval);
            let (cap, a, profile) = if baseline.is_empty() {
                let (cap, a) = analyze(&common, || Everything::new(interval_ns))?;
                (cap, a, None)
            } else {
                let (cap, a) = analyze(&common, || {
                    (
                        Everything::new(interval_ns),
                        analysis::RunProfile::default(),
                    )
                })?;
                let mut profile = None;
                let a = a.map(|(stats, p)| {
                    profile = Some(p);
                    stats
                });
                (cap, a, profile)
            };
            let r = analysis::full_report(&a);
            output(common.engine.json, &a, &r, report::render_report)?;
            if let Some(dir) = plots.dir.as_deref() {
                plot_report(dir, &r)?;
            }
            if let Some(path) = html.as_deref() {
                let against = match profile {
                    Some(profile) => {
                        let names = |set: &CaptureSet| -> Vec<String> {
                            set.inputs
                                .iter()
                                .map(|i| i.path().display().to_string())
                                .collect()
                        };
                        let base = Common {
                            files: baseline,
                            ..common.clone()
                        };
                        let (base_set, base_run) = analyze(&base, || {
                            (
                                Everything::new(interval_ns),
                                analysis::RunProfile::default(),
                            )
                        })?;
                        let (stats, p) = &base_run.output;
                        let base_names = names(&base_set);
                        let a_side =
                            analysis::DiffSide::new(&base_run, stats, p, base_names.clone());
                        let b_side = analysis::DiffSide::new(&a, &a.output, &profile, names(&cap));
                        Some((analysis::diff(&a_side, &b_side), base_names.join(", ")))
                    }
                    None => None,
                };
                write_html(
                    path,
                    &cap,
                    &a,
                    &r,
                    against.as_ref().map(|(d, n)| (d, n.as_str())),
                )?;
            }
            Ok(finish(&cap, &a))
        }
        Command::Compare {
            pair,
            client,
            server,
            clock_offset,
            interval,
            per_interval,
            notable,
            engine,
        } => {
            let (client, server) = match (&pair[..], client.is_empty()) {
                ([c, s], true) => (vec![c.clone()], vec![s.clone()]),
                (_, false) => (client, server),
                _ => bail!(InputError(
                    "compare needs the client capture and the server capture: CLIENT_CAPTURE SERVER_CAPTURE, or --client FILE... --server FILE...".into()
                )),
            };
            let interval_ns = args::nanos(interval);
            let clock = match clock_offset {
                None => analysis::ClockPolicy::Estimate,
                Some(offset_ns) => analysis::ClockPolicy::Known { offset_ns },
            };
            let side = |files: Vec<PathBuf>| Common {
                files,
                engine: engine.clone(),
                no_mysql: false,
            };
            let both = || (analysis::Exchanges::default(), analysis::Endings::default());
            let (client_set, client_run) = analyze(&side(client), both)?;
            let (server_set, server_run) = analyze(&side(server), both)?;
            let ((client_exchanges, client_endings), (server_exchanges, server_endings)) =
                (&client_run.output, &server_run.output);
            let span = |t: &analysis::Timeline| {
                Some(analysis::CaptureSpan {
                    first_ns: t.body_first?.0,
                    last_ns: t.body_last?.0,
                })
            };
            let opts = analysis::CompareOptions {
                interval_ns,
                clock,
                client_span: span(&client_run.capture.timeline),
                server_span: span(&server_run.capture.timeline),
                notable_limit: notable,
            };
            let cmp = analysis::compare(client_exchanges, server_exchanges, &opts);
            let endings = analysis::compare_endings(
                (client_exchanges, client_endings),
                (server_exchanges, server_endings),
                &cmp,
                opts.spans(client_exchanges, server_exchanges),
            );
            let (client_unknowns, server_unknowns) = (
                analysis::unknowns(&client_run),
                analysis::unknowns(&server_run),
            );
            let sides = (
                report::ComparedCapture {
                    capture: &client_run.capture,
                    unknowns: &client_unknowns,
                    requests: client_exchanges.len(),
                },
                report::ComparedCapture {
                    capture: &server_run.capture,
                    unknowns: &server_unknowns,
                    requests: server_exchanges.len(),
                },
            );
            emit(if engine.json {
                report::to_json(&report::compare_json(&cmp, &endings, &sides.0, &sides.1))
            } else {
                fitted(report::render_compare(
                    &cmp,
                    &endings,
                    &sides.0,
                    &sides.1,
                    per_interval,
                ))
            })?;
            let codes = [
                finish(&client_set, &client_run),
                finish(&server_set, &server_run),
            ];
            Ok(if codes.contains(&ExitCode::from(2)) {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            })
        }
        Command::Diff {
            pair,
            a,
            b,
            limit,
            engine,
        } => {
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
        Command::Extract {
            files,
            port,
            flow,
            conn,
            at,
            frames,
            time,
            abnormal,
            findings,
            annotate,
            output,
        } => {
            let selection = Selection {
                picks: None,
                connections: match (port, flow, conn) {
                    (Some(p), _, _) => Some(Connections::Port(p)),
                    (_, Some(f), _) => Some(Connections::Endpoint(
                        f.parse()
                            .map_err(|e: String| InputError(format!("--flow: {e}")))?,
                    )),
                    (_, _, Some(c)) => {
                        let (a, b) = parse_conn(&c)?;
                        Some(Connections::Connection(a, b))
                    }
                    _ => None,
                },
                frames: frames.as_deref().map(parse_frames).transpose()?,
                time: time.as_deref().map(parse_time_range).transpose()?,
                time_arg: time.clone(),
            };
            let wanted = Wanted {
                abnormal,
                findings: findings.as_deref().map(parse_finding_kinds).transpose()?,
                annotate,
            };
            if selection.is_everything() && !wanted.abnormal && wanted.findings.is_none() {
                bail!(InputError(
                    "extract needs a selection: --port N, --flow IP:PORT, --conn CLIENT-SERVER, --frames A-B, --time FROM..TO, --abnormal or --findings".into()
                ));
            }
            extract(&files, selection, at, &wanted, &output)
        }
        Command::Completions { shell } => {
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "pcapsleuth", &mut script);
            emit(String::from_utf8_lossy(&script).into_owned())?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Man { dir: None } => {
            let mut page = Vec::new();
            clap_mangen::Man::new(Cli::command())
                .render(&mut page)
                .context("rendering the manual page")?;
            emit(String::from_utf8_lossy(&page).into_owned())?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Man { dir: Some(dir) } => {
            std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
            clap_mangen::generate_to(Cli::command(), &dir)
                .with_context(|| format!("writing manual pages into {}", dir.display()))?;
            sayln!("manual pages written into {}", dir.display());
            Ok(ExitCode::SUCCESS)
        }
        Command::Export {
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
        } => {
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
        Command::Split {
            files,
            packets,
            megabytes,
            output,
            replace,
        } => split(
            &files,
            packets,
            megabytes,
            &output,
            if replace {
                Existing::Replace
            } else {
                Existing::Refuse
            },
        ),
    }
}

/// `pcapsleuth mysql`'s report of `m`, computed in the run `a`.
fn print_mysql<O>(
    json: bool,
    a: &Run<O>,
    m: &analysis::MysqlAggregate,
    limit: usize,
) -> anyhow::Result<()> {
    output(json, a, &analysis::mysql_report(a, m), |r| {
        report::render_mysql(r, limit)
    })
}

/// `flows`: one row per connection, in `order`, written to stdout as it is made (a capture of a million
/// connections has a million rows: neither its text nor its JSON is held whole, and each row's close is
/// judged as it is written). The same output as [`output`] gives: JSON with its keys in order (as a
/// `serde_json::Value` orders them), every hazard in a string escaped, and each frame located in its
/// file when the capture is several files; text fitted to the width with no hazard raw, through
/// [`output`] when frames must be located in text.
fn print_flows<O>(json: bool, a: &Run<O>, order: &[usize]) -> anyhow::Result<()> {
    let unknowns = analysis::unknowns(a);
    let closes = analysis::FlowCloses::of(a);
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let written = if json {
        let doc = FlowsDocument {
            capture: located_value(&a.capture, &a.capture)?,
            connections: FlowRows {
                run: a,
                closes: &closes,
                order,
            },
            connects: located_value(analysis::connect_report(a), &a.capture)?,
            unknowns: located_value(&unknowns, &a.capture)?,
        };
        report::write_json(&mut out, &doc)
            .map_err(std::io::Error::from)
            .and_then(|_| out.write_all(b"\n"))
    } else if a.capture.files.len() > 1 {
        let rows = analysis::flow_rows(a, order);
        drop(out);
        return output(false, a, &(), |_| report::render_flows(&a.capture, &rows));
    } else {
        let width = report::style::width();
        let rows = || order.iter().filter_map(|&i| closes.row(a, i));
        out.write_all(
            report::style::fit(
                &report::visible_lines(&report::render_unknowns(&unknowns)),
                width,
            )
            .as_bytes(),
        )
        .and_then(|_| {
            report::write_flows(&a.capture, rows, order.len(), |line| {
                out.write_all(report::style::fit(line, width).as_bytes())
            })
        })
    };
    match written.and_then(|_| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r.context("writing to stdout"),
    }
}

/// A part of a JSON document as [`output`] writes it: its keys in order (a `serde_json::Value`'s) and its
/// frames located in their files.
fn located_value<T: serde::Serialize>(
    v: T,
    capture: &analysis::CaptureFacts,
) -> serde_json::Result<serde_json::Value> {
    serde_json::to_value(v).map(|mut v| {
        report::locate_frames_json(&mut v, capture);
        v
    })
}

/// `flows --json`'s document, its keys in the order a `serde_json::Value` gives them.
#[derive(serde::Serialize)]
#[serde(bound = "")]
struct FlowsDocument<'a, O> {
    capture: serde_json::Value,
    connections: FlowRows<'a, O>,
    connects: serde_json::Value,
    unknowns: serde_json::Value,
}

/// The rows of `flows --json`, each made (its close judged) and made a JSON value (see
/// [`located_value`]) as it is written.
struct FlowRows<'a, O> {
    run: &'a Run<O>,
    closes: &'a analysis::FlowCloses,
    order: &'a [usize],
}

impl<O> serde::Serialize for FlowRows<'_, O> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{Error, SerializeSeq};
        let mut seq = s.serialize_seq(Some(self.order.len()))?;
        for r in self
            .order
            .iter()
            .filter_map(|&i| self.closes.row(self.run, i))
        {
            seq.serialize_element(&located_value(r, &self.run.capture).map_err(S::Error::custom)?)?;
        }
        seq.end()
    }
}

fn plot_report(dir: &Path, r: &analysis::FullReport) -> anyhow::Result<()> {
    // The error names the file and says why; anyhow's chain would say why twice.
    let set = report::write_plot_set(dir, r).map_err(|e| anyhow::anyhow!("{e}"))?;
    for p in &set.written {
        sayln!("pcapsleuth: wrote {}", p.display());
    }
    for s in &set.skipped {
        sayln!("pcapsleuth: no {} plot: {}", s.name, s.reason);
    }
    Ok(())
}

/// `report --html`: the page of `r`, put in place at `path` only when whole (never over an input).
fn write_html<O>(
    path: &Path,
    set: &CaptureSet,
    a: &Run<O>,
    r: &analysis::FullReport,
    baseline: Option<(&analysis::Diff, &str)>,
) -> anyhow::Result<()> {
    refuse_input_as_output(path, set.identities())?;
    let names: Vec<String> = set
        .inputs
        .iter()
        .map(|i| i.path().display().to_string())
        .collect();
    let capture = match &names[..] {
        [one] => one.clone(),
        [first, ..] => format!("{first} and {} more files", names.len() - 1),
        [] => "the capture".to_string(),
    };
    let page = report::render_html_against(r, &analysis::unknowns(a), &capture, baseline)?;
    pcapsleuth::capture::write_file(path, page.as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))?;
    sayln!("pcapsleuth: wrote {}", path.display());
    Ok(())
}

/// Prints `value` as JSON for scripts or, rendered by `text`, for people; either way with what the
/// capture could not show (`unknowns`).
fn output<O, T: serde::Serialize>(
    json: bool,
    a: &Run<O>,
    value: &T,
    text: impl FnOnce(&T) -> String,
) -> anyhow::Result<()> {
    let unknowns = analysis::unknowns(a);
    emit(if json {
        let mut v = serde_json::to_value(value)?;
        if let Some(o) = v.as_object_mut() {
            o.insert("unknowns".into(), serde_json::to_value(&unknowns)?);
        }
        report::to_json_located(&v, &a.capture)
    } else {
        let mut out = report::render_unknowns(&unknowns);
        out.push_str(&text(value));
        fitted(report::locate_frames_text(&out, &a.capture))
    })
}

/// Text for stdout, every line fitted to the terminal's width, or to [`report::style::WIDTH`] when
/// stdout is not a terminal (a file, a pipe, a pager); no control or bidirectional character raw but its
/// line breaks, whatever the renderer let through.
fn fitted(text: String) -> String {
    report::style::fit(&report::visible_lines(&text), report::style::width())
}

/// The columns of the terminal stdout goes to, if it goes to one.
fn terminal_columns() -> Option<usize> {
    if !std::io::stdout().is_terminal() {
        return None;
    }
    // SAFETY: TIOCGWINSZ only fills the winsize it is given.
    let mut size: libc::winsize = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut size) } == 0;
    (ok && size.ws_col > 0).then_some(usize::from(size.ws_col))
}

fn emit(text: String) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r.context("writing to stdout"),
    }
}

/// Reads the capture `common` names and runs the analysis `analyses` makes on it.
fn analyze<A: Analysis>(
    common: &Common,
    analyses: impl Fn() -> A + Sync,
) -> anyhow::Result<(CaptureSet, Run<A::Output>)> {
    let set = open_set(&common.files)?;
    analyze_opened(common, set, analysis::MysqlDepth::Full, analyses)
}

/// The connections and their closes, judged on the exchanges they fall in (`first-reset`, `flows`): plain
/// exchanges are passed over, with the same run (see `MysqlDepth::Closes`).
fn analyze_closes(common: &Common) -> anyhow::Result<(CaptureSet, Run<()>)> {
    let set = open_set(&common.files)?;
    analyze_opened(common, set, analysis::MysqlDepth::Closes, || ())
}

/// [`analyze`] of a capture already opened.
fn analyze_opened<A: Analysis>(
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
fn read_key_logs(
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
fn mysql_filter(
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
            say_parquet(&job.finish_with(&run, &run.output.0).map_err(usage)?);
            say_slowlog(&log.finish(&run.output.1).map_err(usage)?, &run);
            Ok(finish(&set, &run))
        }
        (Some(job), None) => {
            let (set, run) = analyze_opened(common, set, full, || job.analysis())?;
            say_parquet(&job.finish(&run).map_err(usage)?);
            Ok(finish(&set, &run))
        }
        (None, Some(log)) => {
            let (set, run) = analyze_opened(common, set, full, || log.analysis())?;
            say_slowlog(&log.finish(&run.output).map_err(usage)?, &run);
            Ok(finish(&set, &run))
        }
        (None, None) => bail!(InputError(
            "export needs --parquet DIR or --slowlog OUT.log".into()
        )),
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

fn report_set(set: &CaptureSet) {
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
    let overlapping = set
        .overlaps
        .iter()
        .map(|(a, b)| format!("{} and {}", a.display(), b.display()))
        .collect::<Vec<_>>()
        .join("; ");
    match set.order {
        Order::Single => {}
        Order::Merged => sayln!(
            "pcapsleuth: read {} files merged by time, as mergecap merges them by default, because they overlap in time ({overlapping}); frames are numbered as in `mergecap -w merged.pcap {}`",
            set.merged.len(),
            set.merged
                .iter()
                .map(|(p, _)| p.display().to_string())
                .collect::<Vec<_>>()
                .join(" ")
        ),
        Order::Concatenated => {
            if let Some(why) = &set.not_merged {
                sayln!(
                    "pcapsleuth: warning: files overlap in time ({overlapping}) but were read one after the other, not merged by time: {why}"
                );
            }
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
    }
}

/// A progress line on stderr (indicatif): what is read, how far, how fast, and how long is left, on one
/// line cut to the terminal's width; nothing when stderr is not a terminal or the input is under 64 MB
/// (it would flash). Cheap to call per record: indicatif draws at most ten times a second.
struct Progress(indicatif::ProgressBar);

impl Progress {
    fn new(verb: &str, file: &Path, len: u64) -> Self {
        if len < 64 << 20 || !std::io::stderr().is_terminal() {
            return Progress(indicatif::ProgressBar::hidden());
        }
        let style = indicatif::ProgressStyle::with_template(
            "{wide_msg} {percent:>3}% [{bar:20}] {bytes}/{total_bytes} at {bytes_per_sec}, {eta} left",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
        .progress_chars("=> ");
        let name = file.file_name().map_or(file.as_os_str(), |n| n);
        let bar = indicatif::ProgressBar::with_draw_target(
            Some(len),
            indicatif::ProgressDrawTarget::stderr_with_hz(10),
        )
        .with_style(style)
        .with_message(format!(
            "{verb} {}",
            report::visible(&name.to_string_lossy())
        ));
        // Ticks between the engine's reports keep the rate and the time left moving.
        bar.enable_steady_tick(std::time::Duration::from_millis(200));
        Progress(bar)
    }

    fn show(&self, done: u64, total: u64) {
        if self.0.length() != Some(total) {
            self.0.set_length(total);
        }
        self.0.set_position(done);
    }

    fn clear(&self) {
        self.0.finish_and_clear();
    }
}

/// `split` copies a piece in steps of this size, releasing each step's pages: memory stays flat however
/// large the pieces.
const COPY_STEP: u64 = 64 << 20;

/// [`finish_pass`] for an analysis, and warnings for the timestamps outside the capture's body.
fn finish<O>(set: &CaptureSet, a: &Run<O>) -> ExitCode {
    let code = finish_pass(set, &a.capture.damage);
    let name = match &set.inputs[..] {
        [one] => one.path().display().to_string(),
        _ => "the capture".to_string(),
    };
    for line in a.capture.timeline.damage_lines() {
        let line = report::locate_frames_text(&line, &a.capture);
        sayln!("pcapsleuth: warning: {name}: {line}");
    }
    code
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

/// Which TCP connections `extract` keeps.
#[derive(Clone, Copy)]
enum Connections {
    Port(u16),
    Endpoint(Endpoint),
    Connection(Endpoint, Endpoint),
}

/// Where a bound of `--time` is counted from.
#[derive(Clone, Copy)]
enum TimeBound {
    /// Seconds since the capture's first packet, in nanoseconds.
    Relative(i64),
    Absolute(Timestamp),
}

impl Connections {
    /// Whether a TCP segment from `src` to `dst` is on the connections selected.
    fn matches(self, src: Endpoint, dst: Endpoint) -> bool {
        match self {
            Connections::Port(p) => src.port == p || dst.port == p,
            Connections::Endpoint(e) => src == e || dst == e,
            Connections::Connection(a, b) => (src == a && dst == b) || (src == b && dst == a),
        }
    }

    /// The option that asked for them, as given: `--port 3306`.
    fn option(self) -> String {
        match self {
            Connections::Port(p) => format!("--port {p}"),
            Connections::Endpoint(e) => format!("--flow {e}"),
            Connections::Connection(a, b) => format!("--conn {a}-{b}"),
        }
    }
}

/// Which packets `extract` keeps: all of what each part given selects.
struct Selection {
    connections: Option<Connections>,
    /// What --abnormal and --findings picked (any of it).
    picks: Option<Picks>,
    /// Inclusive frame range.
    frames: Option<(u64, u64)>,
    /// `[from, to)`, and the --time argument as given.
    time: Option<(Option<TimeBound>, Option<TimeBound>)>,
    time_arg: Option<String>,
}

/// What each part of a selection matched on its own, and what the capture held: for the warning when
/// a selection matched nothing.
#[derive(Default)]
struct Seen {
    frames: bool,
    time: bool,
    connections: bool,
    picks: bool,
    /// Frames read, and the first and last packet times.
    count: u64,
    first_ts: Option<Timestamp>,
    last_ts: Option<Timestamp>,
    /// The TCP endpoints of IP datagrams sent in fragments, by (source, destination, IP ID), learned
    /// from each one's first fragment: the fragments after it carry no ports, and go where it goes.
    datagrams: HashMap<(std::net::IpAddr, std::net::IpAddr, u32), (Endpoint, Endpoint)>,
}

/// Datagrams whose endpoints [`Seen::datagrams`] keeps at once: a datagram's fragments travel
/// together, so forgetting them all now and then loses none but those in flight.
const DATAGRAMS_KEPT: usize = 1 << 16;

impl Seen {
    /// The TCP endpoints of a fragment's datagram: from its own TCP header for the first fragment
    /// (noted for the others), else from the first's when it came before.
    fn datagram_endpoints(
        &mut self,
        f: &pcapsleuth::flow::IpFragment<'_>,
    ) -> Option<(Endpoint, Endpoint)> {
        const TCP: u8 = 6;
        let key = (f.src, f.dst, f.id);
        if f.protocol != TCP {
            return None;
        }
        if f.offset == 0 {
            let port =
                |at: usize| Some(u16::from_be_bytes([*f.data.get(at)?, *f.data.get(at + 1)?]));
            let ends = (
                Endpoint {
                    ip: f.src,
                    port: port(0)?,
                },
                Endpoint {
                    ip: f.dst,
                    port: port(2)?,
                },
            );
            if self.datagrams.len() >= DATAGRAMS_KEPT {
                self.datagrams.clear();
            }
            self.datagrams.insert(key, ends);
            return Some(ends);
        }
        self.datagrams.get(&key).copied()
    }
}

impl Selection {
    fn is_everything(&self) -> bool {
        self.connections.is_none()
            && self.picks.is_none()
            && self.frames.is_none()
            && self.time.is_none()
    }

    /// Whether to keep frame `frame` (`first_ts`: the capture's first packet, for relative times); notes
    /// in `seen` what each part of the selection matched on its own.
    fn keeps(&self, frame: u64, rec: &Record<'_>, first_ts: Timestamp, seen: &mut Seen) -> bool {
        let in_frames = self.frames.is_none_or(|(a, b)| (a..=b).contains(&frame));
        let in_time = self.time.is_none_or(|(from, to)| {
            let at = |bound: TimeBound| match bound {
                TimeBound::Relative(ns) => first_ts.0.saturating_add(ns),
                TimeBound::Absolute(t) => t.0,
            };
            !(from.is_some_and(|f| rec.ts.0 < at(f)) || to.is_some_and(|t| rec.ts.0 >= at(t)))
        });
        seen.frames |= in_frames;
        seen.time |= in_time;
        let in_range = in_frames && in_time;
        if self.connections.is_none() && self.picks.is_none() {
            return in_range;
        }
        // Decoding is what costs: done for the frames in range, and for the others only until the
        // connections and picks have matched something (what the warning needs when nothing matched).
        let curious = (self.connections.is_some() && !seen.connections)
            || (self.picks.is_some() && !seen.picks);
        if !in_range && !curious {
            return false;
        }
        let tcp = match decode(rec.link, rec.data) {
            Decoded::Tcp(seg) => Some((seg.src_endpoint(), seg.dst_endpoint())),
            // A fragment of a TCP datagram belongs to the connection its first fragment names (one
            // that came after the others in the capture leaves those out: rare, and said nowhere).
            Decoded::Fragment(f) => seen.datagram_endpoints(&f),
            _ => None,
        };
        let picked = self.picks.as_ref().is_none_or(|p| p.keeps(frame, tcp));
        let connected = match (self.connections, tcp) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some(c), Some((src, dst))) => c.matches(src, dst),
        };
        seen.picks |= picked;
        seen.connections |= connected;
        in_range && picked && connected
    }

    /// The one-line warnings for a selection that matched nothing: each part that matched nothing on
    /// its own, with the likely mistake (`mysql`: where MySQL was found, when the capture could be read
    /// again to find it), or, when each matched something, that they matched nothing together.
    fn nothing_matched(
        &self,
        seen: &Seen,
        mysql: impl FnOnce() -> Option<Vec<Endpoint>>,
    ) -> Vec<String> {
        let mut said = Vec::new();
        let mut given = Vec::new();
        if let Some((a, b)) = self.frames {
            let arg = match (a, b) {
                (a, u64::MAX) => format!("--frames {a}-"),
                (a, b) if a == b => format!("--frames {a}"),
                (a, b) => format!("--frames {a}-{b}"),
            };
            if !seen.frames {
                said.push(format!(
                    "{arg} matched nothing: the capture has {} (numbered from 1)",
                    analysis::units::counted(seen.count, "frame", "frames")
                ));
            }
            given.push(arg);
        }
        if let Some(arg) = &self.time_arg {
            let arg = format!("--time {arg}");
            if !seen.time {
                said.push(match (seen.first_ts, seen.last_ts) {
                    (Some(first), Some(last)) => format!(
                        "{arg} matched nothing: the capture runs from {} to {} (0 to {:.6} s after its first packet; FROM is included, TO is not)",
                        analysis::units::utc_us(first.0.div_euclid(1000)),
                        analysis::units::utc_us(last.0.div_euclid(1000)),
                        (last.0 - first.0) as f64 / 1e9
                    ),
                    _ => format!("{arg} matched nothing: the capture is empty"),
                });
            }
            given.push(arg);
        }
        if let Some(c) = self.connections {
            if !seen.connections {
                let found = match mysql() {
                    None => "`pcapsleuth flows` lists the capture's connections and their ports".to_string(),
                    Some(servers) if servers.is_empty() => {
                        "no MySQL was found in the capture: `pcapsleuth flows` lists its connections and their ports".to_string()
                    }
                    Some(servers) => format!(
                        "MySQL was found on {}{}",
                        servers
                            .iter()
                            .take(4)
                            .map(Endpoint::to_string)
                            .collect::<Vec<_>>()
                            .join(", "),
                        if servers.len() > 4 {
                            format!(" and {} more", servers.len() - 4)
                        } else {
                            String::new()
                        }
                    ),
                };
                said.push(format!("{} matched nothing; {found}", c.option()));
            }
            given.push(c.option());
        }
        if self.picks.is_some() {
            given.push("--abnormal/--findings".into());
        }
        if said.is_empty() && given.len() > 1 {
            said.push(format!(
                "{} each matched packets, but no packet matched all of them",
                given.join(", ")
            ));
        }
        said
    }
}

/// The comments `extract --annotate` writes, by original frame number.
type Comments = HashMap<u64, Vec<String>>;

/// What `extract` asks of the analyses: connections picked by --abnormal and --findings, comments for
/// --annotate.
struct Wanted {
    abnormal: bool,
    /// `None`: no --findings; `Some(None)`: every finding; `Some(Some(kinds))`: those kinds'.
    findings: Option<Option<Vec<FindingKind>>>,
    annotate: bool,
}

impl Wanted {
    fn needs_analysis(&self) -> bool {
        self.abnormal || self.findings.is_some() || self.annotate
    }
}

/// The packets --abnormal and --findings picked: whole connections (by 4-tuple, within their frames),
/// server endpoints, single frames.
#[derive(Default)]
struct Picks {
    /// By the 4-tuple's endpoints in order (lower first): the frame spans of its picked connections.
    connections: HashMap<(Endpoint, Endpoint), Vec<(u64, u64)>>,
    endpoints: Vec<Endpoint>,
    frames: BTreeSet<u64>,
}

impl Picks {
    fn add_connection(&mut self, c: &NamedConnection) {
        let key = (c.client.min(c.server), c.client.max(c.server));
        self.connections
            .entry(key)
            .or_default()
            .push((c.first_frame, c.last_frame));
    }

    fn add(&mut self, scope: &Scope) {
        match scope {
            Scope::Capture => {}
            Scope::Connections(list) => list.iter().for_each(|c| self.add_connection(c)),
            Scope::Endpoint(e) => self.endpoints.push(*e),
            Scope::Frames(frames) => self.frames.extend(frames),
        }
    }

    /// Whether frame `frame` (a TCP segment from `src` to `dst`, or not TCP) is picked.
    fn keeps(&self, frame: u64, tcp: Option<(Endpoint, Endpoint)>) -> bool {
        if self.frames.contains(&frame) {
            return true;
        }
        let Some((src, dst)) = tcp else {
            return false;
        };
        if self.endpoints.iter().any(|e| src == *e || dst == *e) {
            return true;
        }
        self.connections
            .get(&(src.min(dst), src.max(dst)))
            .is_some_and(|spans| spans.iter().any(|&(a, b)| (a..=b).contains(&frame)))
    }
}

/// `all`, or finding kinds separated by commas (`mid_response_close,errors`).
fn parse_finding_kinds(s: &str) -> anyhow::Result<Option<Vec<FindingKind>>> {
    if s == "all" {
        return Ok(None);
    }
    s.split(',')
        .map(|k| {
            FindingKind::ALL
                .iter()
                .copied()
                .find(|f| f.name() == k.trim())
                .ok_or_else(|| {
                    InputError(format!(
                        "--findings: no finding kind `{k}` (kinds: {})",
                        FindingKind::ALL
                            .iter()
                            .map(|f| f.name())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))
                    .into()
                })
        })
        .collect::<anyhow::Result<Vec<_>>>()
        .map(Some)
}

/// Reads the capture once with every analysis for what `wanted` asks: the connections --abnormal and
/// --findings pick, and the comments --annotate writes (by original frame). Returns the set opened
/// again for the pass that writes.
fn findings_pass(
    mut set: CaptureSet,
    files: &[PathBuf],
    wanted: &Wanted,
    connections: Option<Connections>,
) -> anyhow::Result<(CaptureSet, Option<Picks>, Comments)> {
    if set.inputs.iter().any(|i| i.stored_len().is_none()) {
        bail!(InputError(
            "--abnormal, --findings and --annotate read the capture twice (once to find what to select and annotate); standard input and pipes are read once: save the capture to a file first".into()
        ));
    }
    let progress = Progress::new(
        "finding what to extract in",
        Path::new(&set_name(&set)),
        set_len(&set),
    );
    // The first retransmissions of the connections selected (all, when only --abnormal or --findings
    // select), for --annotate.
    let keep = move |client: Endpoint, server: Endpoint| {
        wanted.annotate && connections.is_none_or(|c| c.matches(client, server))
    };
    let run = analysis::analyze_set(
        &mut set,
        &EngineOptions::default(),
        || (Everything::default(), analysis::Resends::new(keep)),
        |done, total| progress.show(done, total),
    );
    progress.clear();
    let mut resends = Vec::new();
    let run = run.map(|(statistics, r)| {
        resends = r;
        statistics
    });
    let set = open_set(files)?;
    let report = analysis::full_report(&run);
    let closes = analysis::first_reset(&run, usize::MAX);
    let abnormal: Vec<&analysis::CloseReport> =
        closes.closes.iter().filter(|c| c.abnormal).collect();

    let mut picks = None::<Picks>;
    if wanted.abnormal {
        let p = picks.get_or_insert_with(Picks::default);
        for c in &abnormal {
            if let Some(conn) = run
                .connections
                .iter()
                .find(|k| k.first.frame == c.connection_first_frame)
            {
                p.add_connection(&NamedConnection {
                    client: conn.client,
                    server: conn.server,
                    first_frame: conn.first.frame,
                    last_frame: conn.last.frame,
                    reused: false,
                });
            }
        }
    }
    if let Some(kinds) = &wanted.findings {
        let p = picks.get_or_insert_with(Picks::default);
        for f in &report.findings {
            if kinds.as_ref().is_none_or(|k| k.contains(&f.kind)) {
                p.add(&f.scope);
            }
            // A finding heading a group of another kind (the first abnormal close and the closes like
            // it) stands for its members: `--findings=mid_response_close` takes them too.
            for m in &f.members {
                if kinds
                    .as_ref()
                    .is_some_and(|k| k.contains(&m.kind) && !k.contains(&f.kind))
                {
                    p.add(&m.scope);
                }
            }
        }
    }

    let mut comments = Comments::new();
    if wanted.annotate {
        // Wireshark shows comments as they are, and `tshark -V` or `capinfos` print them to a terminal.
        let mut say = |kind: FindingKind, frame: u64, text: &str| {
            let comment = format!(
                "pcapsleuth {kind} (frame {frame} of the original capture): {}",
                report::visible(text)
            );
            let list = comments.entry(frame).or_default();
            if !list.contains(&comment) {
                list.push(comment);
            }
        };
        for f in &report.findings {
            // A group's frames are each commented with their own member's words; the head's with its.
            let of_members: BTreeSet<u64> = f
                .members
                .iter()
                .flat_map(|m| m.frames.iter().copied())
                .collect();
            for &frame in f.frames.iter().filter(|x| !of_members.contains(x)) {
                say(f.kind, frame, &f.summary);
            }
            for m in &f.members {
                for &frame in &m.frames {
                    say(m.kind, frame, &m.summary);
                }
                for (&frame, note) in &m.frame_notes {
                    say(m.kind, frame, note);
                }
            }
            for (&frame, note) in &f.frame_notes {
                say(f.kind, frame, note);
            }
        }
        for (frame, note) in resends.iter().flat_map(|c| c.notes()) {
            say(FindingKind::Retransmissions, frame, &note);
        }
        // Where the stall that led to an abnormal close began, when no finding said it.
        let closes: BTreeSet<u64> = abnormal.iter().map(|c| c.frame).collect();
        for ev in run
            .connections
            .iter()
            .flat_map(|c| [c.first_fin, c.first_rst])
            .flatten()
            .filter(|ev| closes.contains(&ev.event.at.frame))
        {
            if let Some((frame, note)) = analysis::stall_start(&ev) {
                comments.entry(frame).or_insert_with(|| {
                    vec![format!(
                        "pcapsleuth abnormal close (frame {frame} of the original capture): {}",
                        report::visible(&note)
                    )]
                });
            }
        }
        for c in &abnormal {
            let list = comments.entry(c.frame).or_default();
            if list.is_empty() {
                list.push(format!(
                    "pcapsleuth abnormal close (frame {} of the original capture): {} by the {}: {}",
                    c.frame,
                    if c.flag == pcapsleuth::flow::CloseFlag::Rst {
                        "RST"
                    } else {
                        "FIN"
                    },
                    role_word(c.initiator),
                    report::visible(&c.reason)
                ));
            }
        }
    }
    Ok((set, picks, comments))
}

fn role_word(r: pcapsleuth::flow::Role) -> &'static str {
    match r {
        pcapsleuth::flow::Role::Client => "client",
        pcapsleuth::flow::Role::Server => "server",
        _ => "unknown side",
    }
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

/// `A-B`, `A-`, `-B` or `A` (frames are numbered from 1).
fn parse_frames(s: &str) -> anyhow::Result<(u64, u64)> {
    let bad = || {
        InputError(format!(
            "--frames expects A-B, A-, -B or A (frame numbers from 1), got `{s}`"
        ))
    };
    let number = |t: &str, open: u64| match t.trim() {
        "" => Ok(open),
        t => t.parse::<u64>().map_err(|_| bad()),
    };
    let (a, b) = match s.split_once('-') {
        Some((a, b)) => (number(a, 1)?, number(b, u64::MAX)?),
        None => {
            let n = number(s, 0)?;
            (n, n)
        }
    };
    if a == 0 || a > b {
        bail!(bad());
    }
    Ok((a, b))
}

/// `FROM..TO`, either end optional; each a number of seconds since the first packet or a UTC time.
fn parse_time_range(s: &str) -> anyhow::Result<(Option<TimeBound>, Option<TimeBound>)> {
    let Some((from, to)) = s.split_once("..") else {
        bail!(InputError(format!(
            "--time expects FROM..TO (seconds since the first packet, or UTC times like 2026-11-22 09:17:42.5), got `{s}`"
        )));
    };
    let range = (parse_time_bound(from)?, parse_time_bound(to)?);
    if range.0.is_none() && range.1.is_none() {
        bail!(InputError("--time needs FROM, TO or both".into()));
    }
    Ok(range)
}

fn parse_time_bound(s: &str) -> anyhow::Result<Option<TimeBound>> {
    let t = s.trim();
    if t.is_empty() {
        return Ok(None);
    }
    if let Ok(secs) = t.parse::<f64>() {
        if secs.is_finite() && secs >= 0.0 {
            return Ok(Some(TimeBound::Relative((secs * 1e9).round() as i64)));
        }
    }
    // The reports print `2026-11-22 09:17:42.123456 UTC`: accept that as it is copied.
    let utc = t.strip_suffix("UTC").map_or(t, str::trim_end);
    match humantime::parse_rfc3339_weak(utc) {
        Ok(at) => {
            let ns = at
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
            Ok(Some(TimeBound::Absolute(Timestamp(ns))))
        }
        Err(e) => bail!(InputError(format!(
            "--time: `{s}` is neither seconds since the first packet nor a UTC time like 2026-11-22 09:17:42.5 ({e})"
        ))),
    }
}

/// Opens the inputs as one capture (see [`CaptureSet::open`]). Standard input (`-`) that is a terminal
/// is refused: nobody types a capture, and a run waiting on it without a word looks hung.
fn open_set(files: &[PathBuf]) -> anyhow::Result<CaptureSet> {
    if files.iter().any(|f| f.as_os_str() == "-") && std::io::stdin().is_terminal() {
        bail!(InputError(
            "`-` reads the capture from standard input, which is a terminal here: pipe one in (`tcpdump -w - ... | pcapsleuth ... -`, `< big.pcap`) or name the file".into()
        ));
    }
    Ok(CaptureSet::open(files)?)
}

/// "big.pcap" or "12 files", for progress lines.
fn set_name(set: &CaptureSet) -> String {
    match &set.inputs[..] {
        [one] => one.path().display().to_string(),
        many => format!("{} files", many.len()),
    }
}

fn set_len(set: &CaptureSet) -> u64 {
    set.inputs.iter().filter_map(|i| i.stored_len()).sum()
}

/// The frame range of the connection on the 4-tuple `a`-`b` that `--at` names, or of every connection
/// on it (with a warning when there are several): read from a first pass of the connection analysis over
/// `set`, so connections are delimited exactly as the reports delimit them. Returns the set opened
/// again for the pass that writes (or untouched, if it cannot be read twice).
fn connection_frames(
    mut set: CaptureSet,
    files: &[PathBuf],
    (a, b): (Endpoint, Endpoint),
    at: Option<u64>,
) -> anyhow::Result<(CaptureSet, Option<(u64, u64)>)> {
    if set.inputs.iter().any(|i| i.stored_len().is_none()) {
        if at.is_some() {
            bail!(InputError(
                "--at reads the capture twice (once to delimit the connections); standard input and pipes are read once: save the capture to a file first".into()
            ));
        }
        sayln!("pcapsleuth: warning: standard input is read once, so connections that reused this 4-tuple are not told apart: all are extracted");
        return Ok((set, None));
    }
    let opts = EngineOptions {
        mysql: analysis::MysqlDetection::Off,
        ..EngineOptions::default()
    };
    let progress = Progress::new(
        "finding connections in",
        Path::new(&set_name(&set)),
        set_len(&set),
    );
    let analysis = analysis::analyze_set(
        &mut set,
        &opts,
        || (),
        |done, total| progress.show(done, total),
    );
    progress.clear();
    // Streams (compressed files) were read to their end: open everything again for the writing pass.
    let set = open_set(files)?;
    let on_tuple: Vec<(u64, u64)> = analysis
        .connections
        .iter()
        .filter(|c| (c.client == a && c.server == b) || (c.client == b && c.server == a))
        .map(|c| (c.first.frame, c.last.frame))
        .collect();
    let spans = || {
        on_tuple
            .iter()
            .map(|(f, l)| format!("{f}-{l}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match at {
        Some(at) => match on_tuple.iter().find(|(f, l)| (*f..=*l).contains(&at)) {
            Some(&range) => Ok((set, Some(range))),
            None if on_tuple.is_empty() => bail!(InputError(format!(
                "--at {at}: no connection {a}-{b} in the capture"
            ))),
            None => bail!(InputError(format!(
                "--at {at}: no connection {a}-{b} holds frame {at} (its connections span frames {})",
                spans()
            ))),
        },
        None => {
            if on_tuple.len() > 1 {
                sayln!(
                    "pcapsleuth: warning: {} connections used {a}-{b} (frames {}); all of them are extracted: pick one with --at FRAME",
                    on_tuple.len(),
                    spans()
                );
            }
            Ok((set, None))
        }
    }
}

fn extract(
    files: &[PathBuf],
    mut selection: Selection,
    at: Option<u64>,
    wanted: &Wanted,
    output: &Path,
) -> anyhow::Result<ExitCode> {
    let mut set = open_set(files)?;
    // Refused before anything is read: an output that is one of the inputs.
    refuse_input_as_output(output, set.identities())?;
    let mut comments = HashMap::new();
    if wanted.needs_analysis() {
        let (again, picks, notes) = findings_pass(set, files, wanted, selection.connections)?;
        set = again;
        selection.picks = picks;
        comments = notes;
    }
    if let Some(Connections::Connection(a, b)) = selection.connections {
        let (again, range) = connection_frames(set, files, (a, b), at)?;
        set = again;
        if let Some((first, last)) = range {
            let (lo, hi) = selection.frames.unwrap_or((1, u64::MAX));
            selection.frames = Some((lo.max(first), hi.min(last)));
        }
    }
    let mut w = if wanted.annotate {
        Writer::Pcapng(PcapngWriter::create(output, set.identities())?)
    } else {
        Writer::Pcap(PcapWriter::create_for_set(output, &set)?)
    };
    let progress = Progress::new("extracting from", Path::new(&set_name(&set)), set_len(&set));
    let (mut frame, mut first_ts) = (0u64, None);
    let (mut span, mut annotated) = (None::<(u64, u64)>, 0u64);
    let mut seen = Seen::default();
    let damage = set.pass(
        |_, rec| {
            frame += 1;
            let first = *first_ts.get_or_insert(rec.ts);
            seen.count = frame;
            seen.first_ts.get_or_insert(rec.ts);
            seen.last_ts = Some(seen.last_ts.map_or(rec.ts, |t: Timestamp| t.max(rec.ts)));
            if selection.keeps(frame, rec, first, &mut seen) {
                span = Some((span.map_or(frame, |s| s.0), frame));
                match &mut w {
                    Writer::Pcap(w) => w.write(rec)?,
                    Writer::Pcapng(w) => {
                        let notes: Vec<&str> = comments
                            .get(&frame)
                            .map(|c| c.iter().map(String::as_str).collect())
                            .unwrap_or_default();
                        annotated += u64::from(!notes.is_empty());
                        w.write(rec, &notes)?;
                    }
                }
            }
            Ok::<(), CaptureError>(())
        },
        |done, total| progress.show(done, total),
    )?;
    progress.clear();
    let (n, rewritten) = match w {
        Writer::Pcap(w) => {
            let rewritten = w.rewritten();
            (w.finish()?, rewritten)
        }
        Writer::Pcapng(w) => (w.finish()?, 0),
    };
    say_rewritten(rewritten);
    match span {
        Some((a, b)) => sayln!(
            "pcapsleuth: wrote {} to {} (frames {a} to {b} of the original capture{})",
            analysis::units::counted(n, "packet", "packets"),
            output.display(),
            if wanted.annotate {
                format!(
                    "; {} with comments, found with the display filter frame.comment",
                    analysis::units::count(annotated)
                )
            } else {
                String::new()
            }
        ),
        None => {
            sayln!(
                "pcapsleuth: wrote {} to {}",
                analysis::units::counted(n, "packet", "packets"),
                output.display()
            );
            let rereadable = set.inputs.iter().all(|i| i.stored_len().is_some());
            for warning in selection
                .nothing_matched(&seen, || rereadable.then(|| mysql_servers(files)).flatten())
            {
                sayln!("pcapsleuth: warning: {warning}");
            }
        }
    }
    Ok(finish_pass(&set, &damage))
}

/// The server endpoints of the capture's MySQL sessions, read in a pass of their own (for a warning);
/// `None` when the capture cannot be opened again.
fn mysql_servers(files: &[PathBuf]) -> Option<Vec<Endpoint>> {
    let mut set = open_set(files).ok()?;
    let run = analysis::analyze_set(&mut set, &EngineOptions::default(), || (), |_, _| {});
    let servers: BTreeSet<Endpoint> = run
        .connections
        .iter()
        .zip(&run.mysql_sessions)
        .filter(|(_, m)| m.is_some())
        .map(|(c, _)| c.server)
        .collect();
    Some(servers.into_iter().collect())
}

/// Says how many records were not copied byte for byte because their pcapng section differed from the
/// first (see `PcapWriter`).
fn say_rewritten(rewritten: u64) {
    if rewritten > 0 {
        sayln!(
            "pcapsleuth: note: {} of a later pcapng section (another byte order, link type or timestamp unit) written as new packet blocks, on interfaces of their own, without their options",
            analysis::units::counted(rewritten, "packet", "packets")
        );
    }
}

/// The capture `extract` writes: pcap as the input was, or pcapng with comments (--annotate).
enum Writer {
    Pcap(PcapWriter),
    Pcapng(PcapngWriter),
}

/// Warnings for damage the reading survived, and what the files were read as; exit code 2 if any of the
/// damage was more than a cut-short tail.
fn finish_pass(set: &CaptureSet, damage: &[Damage]) -> ExitCode {
    report_set(set);
    let paths: Vec<&Path> = set.inputs.iter().map(|i| i.path()).collect();
    report_damage(&paths, damage)
}

/// `x_00000.pcap`-style names for the pieces of `input`: its name without compression or capture
/// extension, and the extension of what is written (the format read, whatever the input was named).
fn piece_naming(input: &Input) -> (String, &'static str) {
    let ext = match input.format() {
        Format::PcapNg => "pcapng",
        Format::Pcap(_) => "pcap",
    };
    (capture_stem(input.path()), ext)
}

/// The pieces of one `split` run: written into a hidden staging directory, then put in place as a set
/// ([`Pieces::commit`]): a reader of the output directory never sees part of a set, nor pieces of two
/// runs mixed. Pieces are not synced one by one (editcap syncs none); the set is synced once, before it
/// is put in place.
struct Pieces {
    out_dir: PathBuf,
    stem: String,
    ext: &'static str,
    staging: pcapsleuth::capture::staging::StagingDir,
    /// Whether `out_dir` existed: then each piece is renamed into it; else the staging directory becomes
    /// it.
    into_existing: bool,
    /// Pieces of an earlier run in `out_dir` (`--replace`): removed once the new set is in place.
    earlier: Vec<PathBuf>,
}

impl Pieces {
    /// Prepares the pieces `STEM_NNNNN.EXT` of a split into `out_dir`. Refused (exit code 2) when a
    /// piece of an earlier split is there, unless `existing` says to replace the set, and always when
    /// one of them is an input.
    fn begin(
        out_dir: &Path,
        stem: &str,
        ext: &'static str,
        existing: Existing,
        set: &CaptureSet,
    ) -> anyhow::Result<Self> {
        use pcapsleuth::capture::staging;
        let into_existing = out_dir.exists();
        let mut earlier = Vec::new();
        if into_existing {
            if !out_dir.is_dir() {
                bail!(InputError(format!(
                    "{}: not a directory",
                    out_dir.display()
                )));
            }
            earlier = std::fs::read_dir(out_dir)
                .with_context(|| format!("reading {}", out_dir.display()))?
                .flatten()
                .map(|e| e.path())
                .filter(|p| is_piece_name(p, stem, ext))
                .collect();
            earlier.sort();
            for piece in &earlier {
                refuse_input_as_output(piece, set.identities())?;
            }
            if !earlier.is_empty() && existing == Existing::Refuse {
                let names: Vec<String> = earlier
                    .iter()
                    .take(3)
                    .map(|p| p.display().to_string())
                    .collect();
                bail!(InputError(format!(
                    "{} already holds {} of an earlier split ({}{}): split into another directory, remove them, or pass --replace to replace that set",
                    out_dir.display(),
                    analysis::units::counted(earlier.len() as u64, "piece", "pieces"),
                    names.join(", "),
                    if earlier.len() > 3 { ", ..." } else { "" }
                )));
            }
        }
        let parent = match (into_existing, out_dir.parent()) {
            (true, _) => out_dir.to_path_buf(),
            (false, Some(p)) if !p.as_os_str().is_empty() => p.to_path_buf(),
            (false, _) => PathBuf::from("."),
        };
        std::fs::create_dir_all(&parent)
            .with_context(|| format!("creating {}", parent.display()))?;
        for left in staging::remove_stale(&parent, "split") {
            sayln!(
                "pcapsleuth: removed {}, left by a split that was killed",
                left.display()
            );
        }
        let staging = staging::StagingDir::create_in(&parent, "split", stem)
            .with_context(|| format!("creating a staging directory in {}", parent.display()))?;
        Ok(Pieces {
            out_dir: out_dir.to_path_buf(),
            stem: stem.to_string(),
            ext,
            staging,
            into_existing,
            earlier,
        })
    }

    fn name(&self, i: usize) -> String {
        format!("{}_{i:05}.{}", self.stem, self.ext)
    }

    /// Where piece `i` is written (in the staging directory).
    fn staged(&self, i: usize) -> PathBuf {
        self.staging.path().join(self.name(i))
    }

    /// Syncs the `count` pieces written (one `syncfs` for the set) and puts them in place; then removes
    /// the earlier set's pieces that the new set did not replace.
    fn commit(self, count: usize) -> anyhow::Result<()> {
        let failed = || {
            format!(
                "cannot put the pieces in place in {}",
                self.out_dir.display()
            )
        };
        sync_file_system(self.staging.path()).with_context(failed)?;
        if !self.into_existing {
            return self.staging.into_place(&self.out_dir).with_context(failed);
        }
        for i in 0..count {
            std::fs::rename(self.staged(i), self.out_dir.join(self.name(i)))
                .with_context(failed)?;
        }
        let placed: BTreeSet<String> = (0..count).map(|i| self.name(i)).collect();
        for old in &self.earlier {
            let name = old.file_name().map(|n| n.to_string_lossy().into_owned());
            if name.is_some_and(|n| !placed.contains(&n)) {
                std::fs::remove_file(old)
                    .with_context(|| format!("removing {} of the earlier split", old.display()))?;
            }
        }
        Ok(())
    }
}

/// Whether `path`'s name is a piece's: `STEM_` then five or more digits then `.EXT`.
fn is_piece_name(path: &Path, stem: &str, ext: &str) -> bool {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    name.strip_prefix(stem)
        .and_then(|r| r.strip_prefix('_'))
        .and_then(|r| r.strip_suffix(ext))
        .and_then(|r| r.strip_suffix('.'))
        .is_some_and(|digits| digits.len() >= 5 && digits.bytes().all(|b| b.is_ascii_digit()))
}

/// Writes what the file system holding `dir` has not yet written to its disk: one call for a whole set
/// of pieces, instead of one sync per piece.
fn sync_file_system(dir: &Path) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let d = std::fs::File::open(dir)?;
    // SAFETY: syncfs only reads the descriptor, which `d` keeps open for the call.
    if unsafe { libc::syncfs(d.as_raw_fd()) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// What `split` does with the pieces of an earlier split already in its output directory.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Existing {
    Refuse,
    Replace,
}

fn split(
    files: &[PathBuf],
    packets: Option<u64>,
    megabytes: Option<u64>,
    out_dir: &Path,
    existing: Existing,
) -> anyhow::Result<ExitCode> {
    if packets == Some(0) || megabytes == Some(0) {
        bail!(InputError("split size must be at least 1".into()));
    }
    let mut set = open_set(files)?;
    let (stem, ext) = piece_naming(&set.inputs[0]);
    let pieces = Pieces::begin(out_dir, &stem, ext, existing, &set)?;
    // Whether a piece holding `in_piece` records is full before a record ending `bytes` after its
    // first record.
    let full = |in_piece: u64, bytes: u64| match (packets, megabytes) {
        (Some(n), _) => in_piece >= n,
        (_, Some(mb)) => in_piece > 0 && bytes > mb * 1_000_000,
        _ => false,
    };
    if let [Input::Mapped(cap)] = &set.inputs[..] {
        if let Some((count, code)) = split_mapped(cap, full, |i| pieces.staged(i))? {
            pieces.commit(count)?;
            sayln!(
                "pcapsleuth: wrote {} to {}",
                analysis::units::counted(count as u64, "piece", "pieces"),
                out_dir.display()
            );
            return Ok(code);
        }
        // A pcapng file of several sections: its pieces are written record by record, as a stream's.
    }
    // Several files or a stream: cut as they are read, one piece open at a time.
    let preamble = set.preamble()?.to_vec();
    let create = |i: usize| PcapWriter::create_staged(pieces.staged(i), &preamble);
    let progress = Progress::new("splitting", Path::new(&set_name(&set)), set_len(&set));
    let mut writer: Option<PcapWriter> = None;
    let (mut count, mut in_piece, mut bytes, mut rewritten) = (0usize, 0u64, 0u64, 0u64);
    let damage = set.pass(
        |_, rec| {
            let len = rec.raw.len() as u64;
            let w = match writer.take() {
                Some(w) if !full(in_piece, bytes + len) => w,
                done => {
                    if let Some(done) = done {
                        rewritten += done.rewritten();
                        done.finish()?;
                    }
                    count += 1;
                    (in_piece, bytes) = (0, 0);
                    create(count - 1)?
                }
            };
            in_piece += 1;
            bytes += len;
            writer.insert(w).write(rec)
        },
        |done, total| progress.show(done, total),
    )?;
    if let Some(w) = writer {
        rewritten += w.rewritten();
        w.finish()?;
    }
    progress.clear();
    pieces.commit(count)?;
    say_rewritten(rewritten);
    sayln!(
        "pcapsleuth: wrote {} to {}",
        analysis::units::counted(count as u64, "piece", "pieces"),
        out_dir.display()
    );
    Ok(finish_pass(&set, &damage))
}

/// `split` of one uncompressed file: piece boundaries from a sequential walk of record headers (fast),
/// then pieces copied in parallel, each as one contiguous run of whole records after the file's header,
/// into `piece_path(i)` (new files in a staging directory). The number of pieces and the exit code; or
/// `None`, having written nothing, when a record would not mean the same after the file's preamble (a
/// pcapng file of several sections): such a file is cut record by record.
fn split_mapped(
    cap: &Capture,
    full: impl Fn(u64, u64) -> bool,
    piece_path: impl Fn(usize) -> PathBuf + Sync,
) -> anyhow::Result<Option<(usize, ExitCode)>> {
    use rayon::prelude::*;
    let file = cap.path();
    let preamble = Preamble::parse(file, cap.preamble())?;
    let progress = Progress::new("splitting", file, cap.len());
    let mut cuts = vec![cap.initial_state().offset];
    let mut pass = cap.pass();
    let (mut in_piece, mut piece_start) = (0u64, cap.initial_state().offset);
    while let Some(rec) = pass.next_record() {
        if !preamble.holds(&rec) {
            progress.clear();
            return Ok(None);
        }
        // The walk is the quick half: the copy shows the second half of the progress.
        progress.show(rec.offset / 2, cap.len());
        if full(in_piece, rec.offset + rec.raw.len() as u64 - piece_start) {
            cuts.push(rec.offset);
            piece_start = rec.offset;
            in_piece = 0;
        }
        in_piece += 1;
    }
    cuts.push(pass.offset());
    let damage = pass.finish();
    let pieces: Vec<(PathBuf, u64, u64)> = cuts
        .windows(2)
        .filter(|w| w[1] > w[0])
        .enumerate()
        .map(|(i, w)| (piece_path(i), w[0], w[1]))
        .collect();
    let copied = std::sync::atomic::AtomicU64::new(0);
    let written: Result<Vec<&PathBuf>, CaptureError> = pieces
        .par_iter()
        .map(|(path, a, b)| {
            let mut w = PcapWriter::create_staged(path, cap.preamble())?;
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
    Ok(Some((written.len(), report_damage(&[file], &damage))))
}
