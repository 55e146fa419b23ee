//! `pcapsleuth extract`: parses the selection, hands it to [`pcapsleuth::extract()`], says what was
//! written.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::bail;
use pcapsleuth::analysis::{units, FindingKind};
use pcapsleuth::capture::Timestamp;
use pcapsleuth::extract::{
    Connections, ExtractOptions, FindingKinds, Selection, TimeBound, TimeRange, Wanted,
};
use pcapsleuth::flow::Endpoint;

use crate::shell::{self, InputError, Shell};

// The help text is the doc comment of `Command::Extract` (src/main.rs).
#[derive(clap::Args)]
pub struct Args {
    /// Capture files, as for the analyses: several files (read as one capture, in time order), a
    /// directory, a glob, gzip/zstd/xz/lz4-compressed files, or `-` for standard input.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Packets with this TCP port on either side.
    #[arg(long, value_name = "N", group = "filter")]
    pub port: Option<u16>,
    /// Packets to or from this endpoint (IP:PORT or [IPv6]:PORT).
    #[arg(long, value_name = "IP:PORT", group = "filter")]
    pub flow: Option<String>,
    /// One connection: CLIENT_IP:PORT-SERVER_IP:PORT (either direction matches). If the capture
    /// holds several connections on this 4-tuple (a reused port), all of them unless --at picks one.
    #[arg(long, value_name = "CLIENT-SERVER", group = "filter")]
    pub conn: Option<String>,
    /// With --conn: only the connection on that 4-tuple that holds this frame.
    #[arg(long, value_name = "FRAME", requires = "conn")]
    pub at: Option<u64>,
    /// Only frames A to B, inclusive (`A-` to the end, `-B` from the start, `A` alone).
    #[arg(long, value_name = "A-B")]
    pub frames: Option<String>,
    /// Only packets from FROM to TO (FROM included, TO excluded): seconds since the capture's first
    /// packet (`12.5..20`), or UTC times as the reports print them (`2026-11-22 09:17:42.5..2026-11-22
    /// 09:18:00`, also RFC 3339 with `T` and `Z`); either end may be left out (`..20`, `12.5..`).
    #[arg(long, value_name = "FROM..TO")]
    pub time: Option<String>,
    /// Every connection with an abnormal close (as `first-reset` judges closes).
    #[arg(long)]
    pub abnormal: bool,
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
    pub findings: Option<String>,
    /// Write pcapng whose packets carry comments (Wireshark's packet comments, `frame.comment`) on
    /// the frames the findings point at and on abnormal closes: the finding, and the frame's number
    /// in the original capture (an extract numbers its frames anew).
    #[arg(long)]
    pub annotate: bool,
    /// Output file (written beside itself under a temporary name, put in place when complete).
    #[arg(short, long, value_name = "OUT")]
    pub output: PathBuf,
}

pub fn run(given: Args) -> anyhow::Result<ExitCode> {
    let selection = Selection {
        connections: match (given.port, given.flow, given.conn) {
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
        frames: given.frames.as_deref().map(parse_frames).transpose()?,
        time: given.time.as_deref().map(parse_time_range).transpose()?,
    };
    let wanted = Wanted {
        abnormal: given.abnormal,
        findings: given
            .findings
            .as_deref()
            .map(parse_finding_kinds)
            .transpose()?,
        annotate: given.annotate,
    };
    if selection.is_everything() && !wanted.abnormal && wanted.findings.is_none() {
        bail!(InputError(
            "extract needs a selection: --port N, --flow IP:PORT, --conn CLIENT-SERVER, --frames A-B, --time FROM..TO, --abnormal or --findings".into()
        ));
    }
    shell::refuse_terminal_stdin(&given.files)?;
    let opts = ExtractOptions {
        selection,
        at: given.at,
        wanted,
        output: given.output,
    };
    let done = pcapsleuth::extract(&given.files, &opts, &Shell::new()).map_err(shell::cut_error)?;
    shell::say_rewritten(done.rewritten);
    let packets = units::counted(done.packets, "packet", "packets");
    match done.span {
        Some((a, b)) => sayln!(
            "pcapsleuth: wrote {packets} to {} (frames {a} to {b} of the original capture{})",
            opts.output.display(),
            if opts.wanted.annotate {
                format!(
                    "; {} with comments, found with the display filter frame.comment",
                    units::count(done.annotated)
                )
            } else {
                String::new()
            }
        ),
        None => {
            sayln!("pcapsleuth: wrote {packets} to {}", opts.output.display());
            for warning in &done.nothing_matched {
                sayln!("pcapsleuth: warning: {warning}");
            }
        }
    }
    Ok(shell::finish_pass(&done.set, &done.damage))
}

/// `all`, or finding kinds separated by commas (`mid_response_close,errors`).
fn parse_finding_kinds(s: &str) -> anyhow::Result<FindingKinds> {
    if s == "all" {
        return Ok(FindingKinds::All);
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
        .map(FindingKinds::Only)
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
fn parse_time_range(s: &str) -> anyhow::Result<TimeRange> {
    let Some((from, to)) = s.split_once("..") else {
        bail!(InputError(format!(
            "--time expects FROM..TO (seconds since the first packet, or UTC times like 2026-11-22 09:17:42.5), got `{s}`"
        )));
    };
    let (from, to) = (parse_time_bound(from)?, parse_time_bound(to)?);
    if from.is_none() && to.is_none() {
        bail!(InputError("--time needs FROM, TO or both".into()));
    }
    Ok(TimeRange {
        from,
        to,
        given: s.to_string(),
    })
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
