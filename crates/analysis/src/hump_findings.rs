//! What a slow hump of response times says in words: the lines `rt` prints under each slow hump
//! ([`hump_lines`]) and the finding `report` makes of a hump that errors make or whose cause is known
//! ([`hump_findings`]).
//!
//! It reads a finished [`RtReport`] and never collects: a hump's traits are collected beside the
//! distribution (`humps.rs`, driven by `rt.rs`), and its cause is inferred in `cause/hump.rs`.

use pcapsleuth_flow::Endpoint;

use crate::cause::{narrow_hump, round_wait};
use crate::finding::{Finding, FindingKind};
use crate::rt::{RtReport, SlowModeTraits};
use crate::thresholds::{
    HUMP_ERRORS_ABSORBED, HUMP_ERRORS_MAKE, HUMP_MEMBERS_PER_BIN, HUMP_SERVERS_KEPT,
};
use crate::units::{count, counted, duration_us, seconds};

/// What a slow hump's requests have in common, in lines of words (each a fact; the cause aside): its
/// error codes, statements, commands, connections and clients, retransmissions, and when its requests
/// came (`first_s`: the capture's first packet, seconds since the epoch). `rt` prints them under each
/// slow hump; `report` gives them as the evidence of the hump's finding.
pub fn hump_lines(t: &SlowModeTraits, first_s: Option<f64>) -> Vec<String> {
    let mut out = Vec::new();
    for e in &t.errors {
        let of_code = if e.of_code >= 1.0 {
            format!("every answered ERR {} of the capture", e.code)
        } else {
            format!(
                "{} of the capture's answered ERR {}",
                percent(e.of_code),
                e.code
            )
        };
        out.push(format!(
            "{} ERR {} ({}, {of_code}): {}",
            percent(e.share),
            e.code,
            count(e.count),
            one_line(&e.message)
        ));
    }
    for (fp, share) in &t.statements {
        out.push(format!("{}: {}", percent(*share), one_line(fp)));
    }
    if !t.commands.is_empty() {
        out.push(format!(
            "commands: {}",
            t.commands
                .iter()
                .map(|(c, s)| format!("{} {c}", percent(*s)))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let c = &t.connections;
    if c.requests > 0 {
        let clients = match &c.top_clients[..] {
            [(one, _)] => format!("1 client ({one})"),
            many => format!(
                "{} ({})",
                counted(c.clients, "client", "clients"),
                many.iter()
                    .map(|(ip, n)| format!("{ip}: {}", count(*n)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        let servers = match &t.servers[..] {
            [(one, _)] if t.other_servers_share == 0.0 => format!("to {one}"),
            many => format!(
                "to {} ({}{})",
                counted(t.distinct_servers, "server", "servers"),
                many.iter()
                    .map(|(e, s)| format!("{e}: {}", percent(*s)))
                    .collect::<Vec<_>>()
                    .join(", "),
                if t.other_servers_share > 0.0 {
                    format!(
                        "; {} to servers past the capture's first {HUMP_SERVERS_KEPT}",
                        percent(t.other_servers_share)
                    )
                } else {
                    String::new()
                }
            ),
        };
        let top = c
            .top
            .iter()
            .map(|x| format!("{} ({})", x.client, count(x.requests)))
            .collect::<Vec<_>>()
            .join(", ");
        out.push(format!(
            "{} from {clients} {servers}{}: {top}{}",
            counted(c.connections, "connection", "connections"),
            if c.complete {
                String::new()
            } else {
                format!(
                    " (among the earliest {} of its requests, {HUMP_MEMBERS_PER_BIN} per histogram bin)",
                    count(c.requests)
                )
            },
            if c.connections > c.top.len() as u64 {
                ", ..."
            } else {
                ""
            }
        ));
    }
    out.push(format!(
        "{} of its requests saw a retransmission",
        percent(t.retransmitted_share)
    ));
    if let Some(f) = &t.first {
        let when = |at: f64| match first_s {
            Some(s0) => seconds(at - s0),
            None => seconds(at),
        };
        out.push(format!(
            "sent from {} to {} into the capture; the first: request frame {}{} ({} -> {})",
            when(f.time),
            when(t.last_request_at.unwrap_or(f.time)),
            f.request_frame,
            f.response_frame
                .map_or_else(String::new, |r| format!(", response frame {r}")),
            f.client,
            f.server
        ));
    }
    for (start, share) in &t.time_windows {
        out.push(format!(
            "{} in the interval from {} into the capture",
            percent(*share),
            seconds(*start - first_s.unwrap_or(0.0))
        ));
    }
    out
}

/// A share as a percentage, "0%" for none (not "0.0%").
fn percent(share: f64) -> String {
    if share == 0.0 {
        "0%".into()
    } else {
        crate::units::percent(share)
    }
}

/// A slow hump that `report` makes a finding of its own, with the error codes it takes from the errors'
/// finding.
pub(crate) struct HumpFinding {
    /// The finding, its scope not yet given.
    pub(crate) finding: Finding,
    /// The error codes whose errors it stands for (most of each code's are in the hump).
    pub(crate) codes: Vec<u16>,
    /// The first frames of the connections its requests came on, when they are all known and few.
    pub(crate) connections: Vec<u64>,
    /// Its server, when it has one.
    pub(crate) server: Option<Endpoint>,
    /// The hump's center, µs (as [`SlowModeTraits::center_us`]).
    pub(crate) center_us: f64,
}

/// The slow humps of `rt` that error responses make (an error code answered most of the hump) or whose
/// cause is known: each as one finding with the errors that make it (`report` leaves those errors out of
/// its errors' finding). `queries` is the capture's MySQL requests; `first_s` its first packet, seconds
/// since the epoch.
pub(crate) fn hump_findings(rt: &RtReport, queries: u64, first_s: Option<f64>) -> Vec<HumpFinding> {
    let mut out = Vec::new();
    for t in &rt.slow_modes {
        let made = t.errors.first().filter(|e| e.share >= HUMP_ERRORS_MAKE);
        if made.is_none() && t.cause.is_none() {
            continue;
        }
        let codes: Vec<u16> = t
            .errors
            .iter()
            .filter(|e| e.of_code >= HUMP_ERRORS_ABSORBED)
            .map(|e| e.code)
            .collect();
        let errors: u64 = t
            .errors
            .iter()
            .filter(|e| codes.contains(&e.code))
            .map(|e| e.count)
            .sum();
        let errors_severity = if errors as f64 >= 0.01 * queries.max(1) as f64 {
            1
        } else {
            3
        };
        let answered_by = match made {
            Some(e) if e.count == t.count => format!(
                ", all answered by ERR {} `{}`",
                e.code,
                one_line(&e.message)
            ),
            Some(e) => format!(
                ", {} of them answered by ERR {} `{}`",
                percent(e.share),
                e.code,
                one_line(&e.message)
            ),
            None => String::new(),
        };
        let summary = format!(
            "{} took ~{} (a hump of {} response times, {} of {}){answered_by}{}",
            counted(t.count, "request", "requests"),
            duration_us(t.center_us),
            rt.source.name(),
            percent(t.share),
            count(queries.max(t.count)),
            match t.cause.as_ref().and_then(|c| c.setting) {
                Some(setting) => {
                    let at = (t.center_us * 1e3).round() as i64;
                    match round_wait(at).filter(|_| narrow_hump(t.spread)) {
                        Some(w) => format!(": a timeout ({} = {} s)", setting.name(), w.seconds),
                        None => format!(": a timeout ({})", setting.name()),
                    }
                }
                None => String::new(),
            }
        );
        let mut frames: Vec<u64> = t
            .first
            .iter()
            .flat_map(|f| std::iter::once(f.request_frame).chain(f.response_frame))
            .collect();
        for e in t.cause.iter().flat_map(|c| &c.evidence) {
            for f in &e.frames {
                if !frames.contains(f) {
                    frames.push(*f);
                }
            }
        }
        let c = &t.connections;
        out.push(HumpFinding {
            finding: Finding {
                severity: errors_severity.min(2),
                kind: FindingKind::SlowHump,
                summary,
                evidence: hump_lines(t, first_s),
                frames,
                cause: t.cause.clone(),
                ..Finding::blank()
            },
            codes,
            connections: if c.complete && c.connections <= c.top.len() as u64 {
                c.top.iter().map(|x| x.first_frame).collect()
            } else {
                Vec::new()
            },
            server: match &t.servers[..] {
                [(one, _)] if t.other_servers_share == 0.0 => one.parse().ok(),
                _ => None,
            },
            center_us: t.center_us,
        });
    }
    out
}

/// `s` on one line: a statement or a message as one reads it in a list.
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}
