//! The `pcapsleuth` command: a thin shell over the library. It parses the command line, calls the
//! library, and prints: one file per command under `cmd/`, what they share in `common` (the capture
//! files and engine options of the analysis commands) and `shell` (stdout, stderr, exit codes).

use std::io::Write;
use std::process::ExitCode;

use clap::{ArgGroup, CommandFactory, Parser, Subcommand};
use pcapsleuth::capture::CaptureError;
use pcapsleuth::report;

/// Writes a line to stderr, ignoring a closed stderr (`2>&1 | head -1`): warnings are not worth dying
/// for, and `eprintln!` would panic. What it says can hold file names and text from a capture: every
/// control or bidirectional character in it is shown as an escape (`report::visible_lines`).
macro_rules! sayln {
    ($($arg:tt)*) => {{
        let line = format!($($arg)*);
        let mut line = ::pcapsleuth::report::visible_lines(&line).into_owned();
        line.push('\n');
        let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
    }};
}

mod args;
mod cmd;
mod common;
mod shell;
mod signals;

use shell::{InputError, Interrupted};

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

#[derive(Subcommand)]
enum Command {
    /// The first abnormal close (an RST, a close mid-response or with a request unanswered), the first FIN
    /// and first RST of the capture, and the first connection closes in time order.
    ///
    /// For each close: Wireshark frame number, absolute and relative time, client and server, who closed
    /// (client/server), FIN or RST, and whether the other side still had data unacknowledged or a request
    /// unanswered.
    #[command(name = "first-reset")]
    FirstReset(cmd::first_reset::Args),
    /// One row per TCP connection: roles, times, packets and bytes each way, retransmissions, zero
    /// windows, and how and by whom it closed (like `tshark -z conv,tcp`, plus the close).
    Flows(cmd::flows::Args),
    /// MySQL forensics: requests and responses with their response times, errors by code (with their own
    /// response times), statements grouped by fingerprint, and incidents: connections closed while a
    /// response or resultset was still flowing or a request was unanswered.
    ///
    /// Response time is measured from the request's first packet to the last packet of its response.
    Mysql(cmd::mysql::Args),
    /// Packets/s and bits/s per direction, per server and in total, and ceilings: traffic pinned flat at a
    /// packet-rate or bit-rate cap while load waited behind it (retransmissions, requests queueing).
    Rate(cmd::rate::Args),
    /// Response-time distribution: percentiles, a log histogram, its humps (modes) and what the slow
    /// humps have in common. MySQL requests where decoded, else TCP request/response (tcprstat-style).
    Rt(cmd::rt::Args),
    /// The load-test view: requests in flight (time-weighted mean and max, with Little's law beside it
    /// as a check), connections open and active, transactions (explicit and autocommit=0: per second,
    /// their time from first statement to the end's answer, statements, rollbacks), client think time,
    /// and idle-in-transaction time with the worst connections named; per interval and for the run.
    ///
    /// Transactions are told by the server's SERVER_STATUS_IN_TRANS flag where its responses carry it,
    /// by the statements (BEGIN, START TRANSACTION, COMMIT, ROLLBACK, SET autocommit) where not.
    Load(cmd::load::Args),
    /// Every analysis at once, as ranked findings with their evidence (frames, times, values).
    Report(cmd::report::Args),
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
    Compare(cmd::compare::Args),
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
    Diff(cmd::diff::Args),
    /// Copies the packets selected into a new capture for Wireshark (records byte-identical: original
    /// link type and timestamps): the TCP connections matching --port, --flow or --conn, the frames
    /// --frames names, the packets in --time; several selections keep what all of them select.
    ///
    /// Frames and times are numbered as the reports number them, across all the files read, so
    /// `extract big.pcap* --conn C-S --at 81234 -o one.pcap` writes the connection a finding named.
    Extract(cmd::extract::Args),
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
    Export(cmd::export::Args),
    /// Cuts a capture into pieces of N packets or N megabytes (like `editcap -c`): a single uncompressed
    /// file is copied in parallel; several files, compressed files and standard input are read as one
    /// capture, as the analyses read them, and cut as they stream.
    #[command(group(ArgGroup::new("size").required(true).args(["packets", "megabytes"])))]
    Split(cmd::split::Args),
    /// Prints the shell completion script for SHELL, e.g.
    /// `pcapsleuth completions bash > ~/.local/share/bash-completion/completions/pcapsleuth`,
    /// `pcapsleuth completions zsh > ~/.zfunc/_pcapsleuth`,
    /// `pcapsleuth completions fish > ~/.config/fish/completions/pcapsleuth.fish`.
    Completions(cmd::completions::Args),
    /// Prints the manual page (roff), e.g. `pcapsleuth man | man -l -`; with --dir, writes one page per
    /// command (pcapsleuth.1, pcapsleuth-first-reset.1, ...) into DIR, for `MANPATH` or /usr/local/share/man/man1.
    Man(cmd::man::Args),
}

fn main() -> ExitCode {
    signals::keep_standard_streams_open();
    signals::take_interrupts();
    let cli = Cli::parse();
    if let Some(columns) = shell::terminal_columns() {
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
            if let Some(Interrupted(msg)) = e.downcast_ref::<Interrupted>() {
                sayln!("pcapsleuth: {msg}");
                return signals::stopped_exit_code();
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

/// One line per command: each parses what is left of its arguments, calls the library, prints.
fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::FirstReset(args) => cmd::first_reset::run(args),
        Command::Flows(args) => cmd::flows::run(args),
        Command::Mysql(args) => cmd::mysql::run(args),
        Command::Rate(args) => cmd::rate::run(args),
        Command::Rt(args) => cmd::rt::run(args),
        Command::Load(args) => cmd::load::run(args),
        Command::Report(args) => cmd::report::run(args),
        Command::Compare(args) => cmd::compare::run(args),
        Command::Diff(args) => cmd::diff::run(args),
        Command::Extract(args) => cmd::extract::run(args),
        Command::Export(args) => cmd::export::run(args),
        Command::Split(args) => cmd::split::run(args),
        Command::Completions(args) => cmd::completions::run(args, Cli::command()),
        Command::Man(args) => cmd::man::run(args, Cli::command()),
    }
}
