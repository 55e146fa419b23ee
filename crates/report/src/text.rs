//! Human-readable tables.

use std::fmt::Write;

use crate::style::{
    bytes, column_width, command_lines, count, counted, duration, duration_or_none, elide, instant,
    offset, one_line, percent, row, seconds, significant, size, stats, width, NONE,
};
use crate::visible::{visible, visible_lines_owned};
use pcapsleuth_analysis::cause::Cause;
use pcapsleuth_analysis::CUT_MARK;
use pcapsleuth_analysis::{
    statement_label, CaptureFacts, CloseReport, CloseVerdict, ConnectSummary, Fate, FinJudgement,
    FirstReset, FlowClose, FlowRow, Incident, ListedPhases, MysqlReport, RequestCounts, RtSummary,
    SecondCounts, ServerRow, SlowRequest, StatementGroup, TlsReport, UnansweredRequest, Unknowns,
};
use pcapsleuth_flow::{AttemptOutcome, CloseFlag, Connection, ConnectionEnd, ConnectionTable};
use serde::Serialize;

/// A cause in the text reports: `cause (likely): ...`, then its evidence one fact a line (with
/// `evidence`), each line indented by `indent`.
pub(crate) fn describe_cause(out: &mut String, indent: &str, c: &Cause, evidence: bool) {
    let _ = writeln!(
        out,
        "{indent}cause ({}): {}",
        c.confidence.name(),
        visible(&c.summary)
    );
    if evidence {
        for e in &c.evidence {
            let _ = writeln!(out, "{indent}  - {}", visible(&e.fact));
        }
    }
}

/// "; 1 could not be judged (1 whose MySQL state was not known ...)": what the closes' verdicts leave
/// out, for a headline.
fn not_judged(r: &FirstReset) -> String {
    let j = &r.judgements;
    if j.not_judged == 0 {
        return String::new();
    }
    let why: Vec<String> = j
        .not_judged_why
        .iter()
        .map(|(w, n)| format!("{} {}", count(*n as u64), w.words()))
        .collect();
    format!(
        "{} could not be judged ({})",
        count(j.not_judged as u64),
        why.join(", ")
    )
}

/// The headline when no close was abnormal: "No abnormal close: every connection ended normally or is
/// still open.", or, when some closes could not be judged, "No abnormal close among 40 judged closes; 1
/// could not be judged (...)." (the text and the HTML page).
pub(crate) fn no_abnormal_close(r: &FirstReset) -> String {
    if r.judgements.not_judged == 0 {
        "No abnormal close: every connection ended normally or is still open.".into()
    } else {
        format!(
            "No abnormal close among {} judged; {}.",
            count(r.judgements.judged as u64),
            not_judged(r)
        )
    }
}

fn describe_close(out: &mut String, title: &str, c: &CloseReport, evidence: bool) {
    let _ = writeln!(
        out,
        "{title}: frame {} at {} ({})",
        c.frame,
        offset(c.rel_time),
        instant(c.time)
    );
    let _ = writeln!(
        out,
        "  {} {} by the {}   client {}  server {}",
        c.flag.name(),
        if c.flag == CloseFlag::Rst {
            "(reset)"
        } else {
            "(close)"
        },
        c.initiator.name(),
        c.client,
        c.server
    );
    let _ = writeln!(out, "  {}", visible(&c.reason));
    if let Some(cause) = &c.cause {
        describe_cause(out, "  ", cause, evidence);
    }
}

/// `2026-11-22 09:17:42.123456 UTC` from seconds since the epoch, always with six decimals: the HTML page's
/// instants (its own layout; the text reports use [`crate::style::instant`]).
pub(crate) fn utc(secs: f64) -> String {
    pcapsleuth_analysis::units::utc_us((secs * 1e6).round() as i64)
}

/// What `pcapsleuth first-reset` prints: the first abnormal close (frame, time, flag, which side, the
/// client and server, and what the session was doing), then the first RST and the first FIN of the
/// capture, and the requests still waiting for an answer when it ended. Without MySQL decoding only
/// RSTs can be judged abnormal, and the text says so first.
pub fn render_first_reset(r: &FirstReset) -> String {
    let mut out = String::new();
    if r.fins == FinJudgement::NotJudged {
        let _ = writeln!(
            out,
            "FINs not judged: MySQL was not decoded (--no-mysql), and only the protocol tells a FIN after \
             COM_QUIT from one that cut a query off; only RSTs can be abnormal here.\n"
        );
    }
    match (&r.first_abnormal, r.fins) {
        (Some(c), _) => {
            describe_close(&mut out, "First abnormal close", c, true);
            if let Some((filter, command)) = &r.first_abnormal_hand_off {
                if let Some(filter) = filter {
                    let _ = writeln!(out, "  Wireshark: {}", visible(filter));
                }
                if let Some(command) = command {
                    out.push_str(&command_lines("  extract: ", &visible(command), 6));
                }
            }
        }
        (None, _) if r.connections == 0 => {
            let _ = writeln!(
                out,
                "No TCP connection found in the capture: nothing was closed."
            );
            return visible_lines_owned(out);
        }
        (None, FinJudgement::Judged) => {
            let _ = writeln!(out, "{}", no_abnormal_close(r));
        }
        (None, FinJudgement::NotJudged) => {
            let _ = writeln!(out, "No RST in the capture (FINs not judged).");
        }
    }
    let _ = writeln!(out);
    match (&r.first_rst, &r.first_fin) {
        (None, None) => {
            let _ = writeln!(
                out,
                "No FIN or RST in {}.",
                counted(r.connections as u64, "TCP connection", "TCP connections")
            );
        }
        (rst, fin) => {
            // In the order they happened: the first of the two is the one to look at.
            let fin_first = matches!((rst, fin), (Some(r), Some(f)) if f.frame < r.frame);
            let say_rst = |out: &mut String| match rst {
                Some(c) => describe_close(out, "First RST", c, false),
                None => {
                    let _ = writeln!(out, "No RST in the capture.");
                }
            };
            let say_fin = |out: &mut String| match fin {
                Some(c) => describe_close(out, "First FIN", c, false),
                None => {
                    let _ = writeln!(out, "No FIN in the capture.");
                }
            };
            if fin_first {
                say_fin(&mut out);
                say_rst(&mut out);
            } else {
                say_rst(&mut out);
                say_fin(&mut out);
            }
        }
    }
    if let Some(longest) = r
        .unanswered_at_end
        .iter()
        .max_by(|a, b| a.waited_s.total_cmp(&b.waited_s))
    {
        let mut conns: Vec<(&str, &str)> = r
            .unanswered_at_end
            .iter()
            .map(|u| (u.client.as_str(), u.server.as_str()))
            .collect();
        conns.sort_unstable();
        conns.dedup();
        let _ = writeln!(
            out,
            "\n{} {} a request unanswered at the end of the capture{} {}: request frame {}, connection {}-{} (`{}`)",
            conns.len(),
            if conns.len() == 1 { "connection has" } else { "connections have" },
            if r.unanswered_at_end.len() == 1 { " for" } else { ", the longest for" },
            seconds(longest.waited_s),
            longest.request_frame,
            longest.client,
            longest.server,
            statement(longest.query.as_deref().unwrap_or(&longest.command))
        );
    }
    let _ = writeln!(
        out,
        "\n{}, {} closed ({} listed below), {} still open at the end of the capture.",
        counted(r.connections as u64, "connection", "connections"),
        count(r.total_closes as u64),
        count(r.closes.len() as u64),
        count(r.open_at_end as u64)
    );
    connects(&mut out, r);
    if !r.closes.is_empty() {
        let frames: Vec<String> = r.closes.iter().map(|c| c.frame.to_string()).collect();
        let times: Vec<String> = r.closes.iter().map(|c| offset(c.rel_time)).collect();
        let frame_w = column_width("frame", &frames);
        let time_w = column_width("time", &times);
        let client_w = column_width("client", r.closes.iter().map(|c| &c.client));
        let server_w = column_width("server", r.closes.iter().map(|c| &c.server));
        let _ = writeln!(
            out,
            "\n  {:>frame_w$}  {:>time_w$}  {:<4} {:<6}  {:<client_w$}  {:<server_w$}  reason",
            "frame", "time", "flag", "by", "client", "server"
        );
        for (c, time) in r.closes.iter().zip(&times) {
            let columns = format!(
                "{} {:>frame_w$}  {:>time_w$}  {:<4} {:<6}  {:<client_w$}  {:<server_w$}  ",
                if c.abnormal { "!" } else { " " },
                c.frame,
                time,
                c.flag.name(),
                c.initiator.name(),
                c.client,
                c.server,
            );
            let _ = writeln!(out, "{}", row(&columns, &c.reason));
        }
        let _ = writeln!(
            out,
            "  ! = an abnormal close; time = seconds after the capture's first packet; reasons in full: --json"
        );
    }
    visible_lines_owned(out)
}

/// The connection attempts, when any could not get in (or waited for a greeting that did not come).
fn connects(out: &mut String, r: &FirstReset) {
    let c = &r.connects;
    let findings = &r.attempt_findings;
    if findings.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "\nConnection attempts: {} ({} established, {} only after a retransmitted SYN; {} refused; {} never answered; {})",
        count(c.attempts),
        count(c.established),
        count(c.delayed),
        count(c.refused),
        count(c.unanswered),
        counted(c.retransmitted_syns, "SYN resent", "SYNs resent")
    );
    for f in findings {
        let _ = writeln!(out, "  {}", visible(&f.summary));
        for e in &f.evidence {
            let _ = writeln!(out, "    {}", visible(e));
        }
        if let Some(filter) = &f.wireshark_filter {
            let _ = writeln!(out, "    Wireshark: {}", visible(filter));
        }
        if let Some(command) = &f.extract_command {
            out.push_str(&command_lines("    extract: ", &visible(command), 8));
        }
    }
}

/// A statement in a sentence: on one line, at most 100 characters (cut with "…"; JSON has it whole).
pub(crate) fn statement(s: &str) -> String {
    elide(&one_line(s), 100)
}

fn rt_line(r: &RtSummary) -> String {
    stats(r, "request", "requests")
}

/// Where a listed request's time went: "upload 27.1 s (6.50 MiB) + server 612 ms + download 98 ms
/// (1.20 KiB)", the download said to be partial when it did not run to the response's end.
pub(crate) fn phases_text(p: &ListedPhases) -> String {
    let upload = format!(
        "upload {} ({})",
        duration(p.upload_us),
        size(p.request_bytes)
    );
    match (p.server_us, p.download_us) {
        (Some(server), Some(download)) => format!(
            "{upload} + server {} + download {} ({}){}",
            duration(server),
            duration(download),
            size(p.response_bytes),
            if p.download_complete { "" } else { " so far" }
        ),
        _ => format!("{upload}, no response byte"),
    }
}

/// The ranked per-server table of `mysql` and `report`, when the capture holds more than one server:
/// requests (and per second), p50 and p99, errors, sessions reset and bytes each way, the busiest first,
/// so that the hot shard or the broken instance is one glance. At most 20 rows (`--json` has them all).
pub(crate) fn write_servers(out: &mut String, servers: &[ServerRow]) {
    const SHOWN: usize = 20;
    if servers.len() < 2 {
        return;
    }
    let names: Vec<&str> = servers
        .iter()
        .take(SHOWN)
        .map(|s| s.server.as_str())
        .collect();
    let w = column_width("server", &names);
    let _ = writeln!(out, "\nservers, by requests:");
    let _ = writeln!(
        out,
        "  {:<w$} {:>9} {:>9} {:>9} {:>9} {:>7} {:>6} {:>10} {:>10}",
        "server", "requests", "per s", "p50", "p99", "errors", "resets", "sent", "received"
    );
    for s in servers.iter().take(SHOWN) {
        let n = s.rt_us.count;
        let _ = writeln!(
            out,
            "  {:<w$} {:>9} {:>9} {:>9} {:>9} {:>7} {:>6} {:>10} {:>10}",
            s.server,
            count(s.requests),
            s.requests_per_s
                .map_or_else(|| NONE.to_string(), |r| significant(r, 3)),
            duration_or_none(n, s.rt_us.p50),
            duration_or_none(n, s.rt_us.p99),
            count(s.errors),
            count(s.resets),
            size(s.request_bytes),
            size(s.response_bytes)
        );
    }
    if servers.len() > SHOWN {
        let _ = writeln!(
            out,
            "  … and {} more servers (see --json)",
            count((servers.len() - SHOWN) as u64)
        );
    }
}

/// TLS sessions the text lists one by one.
const TLS_SESSIONS_SHOWN: usize = 5;

/// The MySQL sessions in TLS: versions and suites, how many were decrypted (and why not the others), and
/// the response times estimated from the records of those not decrypted, said to be estimates.
fn render_tls(out: &mut String, t: &TlsReport) {
    if t.sessions == 0 {
        return;
    }
    let each = |m: &std::collections::BTreeMap<String, u64>| {
        m.iter()
            .map(|(k, v)| format!("{k} {}", count(*v)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let _ = writeln!(
        out,
        "\nTLS: {} ({}; {})",
        counted(t.sessions, "session", "sessions"),
        each(&t.versions),
        each(&t.cipher_suites)
    );
    let not: Vec<String> = t
        .not_decrypted
        .iter()
        .map(|(why, n)| format!("{}: {}", why.why_not(), count(*n)))
        .collect();
    let _ = writeln!(
        out,
        "  decrypted with the key log: {}; not decrypted: {}{}",
        count(t.decrypted),
        count(t.sessions - t.decrypted),
        if not.is_empty() {
            String::new()
        } else {
            format!(" ({})", not.join("; "))
        }
    );
    if t.records_failed > 0 {
        let _ = writeln!(
            out,
            "  {} ({}) did not authenticate with the key log's secrets: not decoded",
            counted(t.records_failed, "record", "records"),
            bytes(t.failed_bytes)
        );
    }
    let _ = writeln!(
        out,
        "  handshake {}",
        stats(&t.handshake_us, "session", "sessions")
    );
    for s in t.listed.iter().take(TLS_SESSIONS_SHOWN) {
        let _ = writeln!(
            out,
            "    {} -> {} (frame {}): {} {}, {}{}",
            s.client,
            s.server,
            s.frame,
            s.tls.version.as_deref().unwrap_or("version unknown"),
            s.tls.cipher_suite.as_deref().unwrap_or("suite unknown"),
            if s.tls.decrypted {
                "decrypted".to_string()
            } else {
                format!("not decrypted ({})", s.tls.keys.why_not())
            },
            s.tls
                .handshake_us
                .map(|us| format!(", handshake {}", duration(us)))
                .unwrap_or_default()
        );
    }
    if t.listed.len() > TLS_SESSIONS_SHOWN {
        let _ = writeln!(
            out,
            "    and {} more (`--json` lists the first {})",
            count(t.sessions - TLS_SESSIONS_SHOWN as u64),
            t.listed.len()
        );
    }
    let e = &t.estimated_from_tls_records;
    if e.sessions > 0 {
        let _ = writeln!(
            out,
            "  response time estimated from TLS records, not decoded ({} not decrypted; a burst of client \
             records, then the server's, is one exchange; the login left out):",
            counted(e.sessions, "session", "sessions")
        );
        let _ = writeln!(
            out,
            "    {}{}",
            stats(&e.rt_us, "exchange", "exchanges"),
            if e.unfinished > 0 {
                format!(
                    "; {} without an answer (a COM_QUIT, a close or the capture's end)",
                    count(e.unfinished)
                )
            } else {
                String::new()
            }
        );
    }
}

/// What `pcapsleuth mysql` prints: sessions, requests and how they ended, requests per command, the
/// response-time distribution, the servers (when there are several), errors by code with their own
/// response times, the `limit` statement groups (command and fingerprint) with the most total time,
/// incidents, and up to `limit` requests left unanswered.
pub fn render_mysql(r: &MysqlReport, limit: usize) -> String {
    let mut out = String::new();
    write_summary(&mut out, r);
    write_response_times(&mut out, r);
    write_connect(&mut out, &r.connect);
    write_servers(&mut out, &r.servers);
    render_tls(&mut out, &r.tls);
    write_errors(&mut out, r);
    write_statements(&mut out, r, limit);
    write_incidents(&mut out, &r.incidents);
    if let Some(slow) = &r.slow_requests {
        write_slow(&mut out, slow, limit);
    }
    crate::replication::write_streams(&mut out, &r.replication);
    write_unanswered(&mut out, &r.unanswered, limit);
    write_per_second(&mut out, &r.per_second);
    visible_lines_owned(out)
}

/// The headline (sessions, requests, their span and rate, how they ended) and the requests per command.
fn write_summary(out: &mut String, r: &MysqlReport) {
    let _ = writeln!(
        out,
        "MySQL: {}, {}{}{}: {}",
        counted(r.sessions, "session", "sessions"),
        counted(r.queries, "request", "requests"),
        if r.queries > 0 {
            format!(" in {}", seconds(r.span_s))
        } else {
            String::new()
        },
        // A rate over less than a second would be a guess at a second nobody watched.
        if r.span_s >= 1.0 && r.queries > 0 {
            let per_s = r.queries as f64 / r.span_s;
            format!(" ({} per second)", significant(per_s, 3))
        } else {
            String::new()
        },
        r.requests.describe()
    );
    let cmds: Vec<String> = r
        .commands
        .iter()
        .map(|(k, v)| format!("{k} {}", count(*v)))
        .collect();
    let _ = writeln!(
        out,
        "commands: {}",
        if cmds.is_empty() {
            NONE.to_string()
        } else {
            cmds.join(", ")
        }
    );
}

/// The response times of the answered requests: all, successes, errors; what was not timed and the
/// requests cut off by a close.
fn write_response_times(out: &mut String, r: &MysqlReport) {
    let _ = writeln!(
        out,
        "\nresponse time of the answered requests (request to last response byte):"
    );
    let _ = writeln!(out, "  all       {}", rt_line(&r.rt_us));
    let _ = writeln!(out, "  success   {}", rt_line(&r.rt_ok_us));
    let _ = writeln!(out, "  errors    {}", rt_line(&r.rt_error_us));
    if r.requests.answered_end_unknown > 0 {
        let _ = writeln!(
            out,
            "  {} answered without the end of the response in the capture: not timed above",
            count(r.requests.answered_end_unknown)
        );
        let _ = writeln!(
            out,
            "  to first response byte, every answered request: {}",
            rt_line(&r.first_byte_us)
        );
    }
    if r.requests.cut_off > 0 {
        let _ = writeln!(
            out,
            "  cut off   {} until the close: mean {}  max {}",
            counted(r.requests.cut_off, "request waited", "requests waited"),
            duration(r.cut_off_waited_us.mean),
            duration(r.cut_off_waited_us.max)
        );
    }
}

/// The connects: from the client's first SYN to the SYN-ACK, the greeting, the login and the TLS handshake.
fn write_connect(out: &mut String, c: &ConnectSummary) {
    if c.login_us.count > 0 || c.greeting_us.count > 0 {
        let _ = writeln!(out, "connect, from the client's first SYN to:");
        let _ = writeln!(
            out,
            "  SYN-ACK   {}",
            stats(&c.syn_ack_us, "connection", "connections")
        );
        let _ = writeln!(
            out,
            "  greeting  {}",
            stats(&c.greeting_us, "connection", "connections")
        );
        let _ = writeln!(
            out,
            "  login     {}",
            stats(&c.login_us, "connection", "connections")
        );
        if c.tls_handshake_us.count > 0 {
            let _ = writeln!(
                out,
                "  TLS handshake (ClientHello to the last Finished) {}",
                stats(&c.tls_handshake_us, "session", "sessions")
            );
        }
    }
}

/// The error responses by code, with their response times, messages and first example.
fn write_errors(out: &mut String, r: &MysqlReport) {
    if r.error_details.is_empty() {
        let _ = writeln!(out, "\nno error responses");
    } else {
        let total: u64 = r.error_details.iter().map(|e| e.count).sum();
        // Logins answered by an error are among the errors, so they count among what was answered.
        let logins = r.commands.get("COM_CONNECT").copied().unwrap_or(0);
        let _ = writeln!(
            out,
            "\nerror responses: {} ({} of requests and logins)",
            count(total),
            percent(total as f64 / (r.queries + logins).max(1) as f64)
        );
        for e in &r.error_details {
            let _ = writeln!(
                out,
                "  ERR {} ({}): {}, answered in mean {}  p95 {}",
                e.code,
                visible(&e.sql_state),
                counted(e.count, "response", "responses"),
                duration_or_none(e.rt_us.count, e.rt_us.mean),
                duration_or_none(e.rt_us.count, e.rt_us.p95)
            );
            for m in &e.messages {
                let _ = writeln!(out, "      e.g. {}", elide(&one_line(m), width() - 11));
            }
            if let Some(x) = e.examples.first() {
                let _ = writeln!(
                    out,
                    "      first: request frame {}{}, {} -> {}",
                    x.request_frame,
                    x.response_frame
                        .map_or_else(String::new, |f| format!(", response frame {f}")),
                    x.client,
                    x.server
                );
            }
        }
    }
}

/// The `limit` statement groups with the most total time, the others as one row, and what the marks mean.
fn write_statements(out: &mut String, r: &MysqlReport, limit: usize) {
    if r.statements.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "\nstatements by total time (top {limit}; times over the answered requests):"
    );
    let _ = writeln!(
        out,
        "  {:>9} {:>10} {:>9} {:>9} {:>9} {:>9} {:>7}  fingerprint",
        "answered", "total", "mean", "p50", "p95", "p99", "errors"
    );
    for s in r.statements.iter().take(limit) {
        write_statement_group(out, s);
    }
    write_other_statements(out, r, limit);
    if let Some(o) = &r.other_statements {
        let _ = writeln!(
            out,
            "  more statement groups than the {} kept one by one: those kept (and listed) are chosen by a hash of their command and fingerprint, not by time; the {} requests of the others are counted in `other statements`",
            count(o.groups_kept),
            count(o.count)
        );
    }
    if r.statements.iter().take(limit).any(|s| s.text_cut) {
        let _ = writeln!(
            out,
            "  {CUT_MARK} = the capture holds the statement only in part (snap length, lost bytes): the fingerprint is of its start"
        );
    }
}

/// One statement group's row, with what the server's status flags said and the requests not answered.
fn write_statement_group(out: &mut String, s: &StatementGroup) {
    let timed = |us: f64| duration_or_none(s.rt_us.count, us);
    let columns = format!(
        "  {:>9} {:>10} {:>9} {:>9} {:>9} {:>9} {:>7}  ",
        count(s.requests.answered),
        timed(s.total_us),
        timed(s.rt_us.mean),
        timed(s.rt_us.p50),
        timed(s.rt_us.p95),
        timed(s.rt_us.p99),
        count(s.errors),
    );
    let _ = writeln!(
        out,
        "{}",
        row(&columns, &statement_label(&s.command, &s.fingerprint))
    );
    let st = &s.status;
    let mut said = Vec::new();
    if st.no_index_used > 0 {
        said.push(format!("no index used by {}", count(st.no_index_used)));
    }
    if st.no_good_index_used > 0 {
        said.push(format!("no good index by {}", count(st.no_good_index_used)));
    }
    if st.with_warnings > 0 {
        said.push(format!(
            "{} with {}",
            count(st.with_warnings),
            counted(st.warnings, "warning", "warnings")
        ));
    }
    if !said.is_empty() {
        let _ = writeln!(out, "  {:>9}   server status: {}", "", said.join(", "));
    }
    if s.count > s.requests.answered {
        let others = RequestCounts {
            answered: 0,
            ..s.requests
        };
        let waited = if s.requests.cut_off > 0 {
            format!(
                " (the cut off waited up to {})",
                duration(s.cut_off_waited_us.max)
            )
        } else {
            String::new()
        };
        let _ = writeln!(out, "  {:>9}   and {}{waited}", "", others.describe());
    }
    if s.requests.answered_end_unknown > 0 {
        let _ = writeln!(
            out,
            "  {:>9}   of the answered, {} without the end of the response in the capture (not timed)",
            "",
            count(s.requests.answered_end_unknown)
        );
    }
}

/// The statement groups not listed (beyond `limit`, or not kept one by one), as one row.
fn write_other_statements(out: &mut String, r: &MysqlReport, limit: usize) {
    let unlisted = r.statements.get(limit..).unwrap_or(&[]);
    if !unlisted.is_empty() || r.other_statements.is_some() {
        // The groups not listed, as one row: counts and times add up; percentiles do not, so
        // they are not shown.
        let (mut answered, mut total_us, mut errors) = (0u64, 0f64, 0u64);
        for s in unlisted {
            answered += s.rt_us.count;
            total_us += s.total_us;
            errors += s.errors;
        }
        let mut groups = counted(unlisted.len() as u64, "group", "groups");
        if let Some(o) = &r.other_statements {
            answered += o.rt_us.count;
            total_us += o.total_us;
            errors += o.errors;
            groups = format!(
                "about {}",
                counted(unlisted.len() as u64 + o.groups_about, "group", "groups")
            );
        }
        let timed = |us: f64| duration_or_none(answered, us);
        let columns = format!(
            "  {:>9} {:>10} {:>9} {:>9} {:>9} {:>9} {:>7}  ",
            count(answered),
            timed(total_us),
            timed(total_us / answered.max(1) as f64),
            NONE,
            NONE,
            NONE,
            count(errors),
        );
        let _ = writeln!(
            out,
            "{}",
            row(&columns, &format!("(other statements: {groups})"))
        );
    }
}

/// The connections closed with MySQL work in progress, each with its phases and cause.
fn write_incidents(out: &mut String, incidents: &[Incident]) {
    if incidents.is_empty() {
        let _ = writeln!(
            out,
            "\nno incidents (no connection closed with MySQL work in progress)"
        );
    } else {
        let _ = writeln!(
            out,
            "\nincidents (connections closed with MySQL work in progress):"
        );
        for i in incidents {
            let q = statement(i.query.as_deref().unwrap_or(&i.command));
            let _ = writeln!(
                out,
                "  frame {}: {} ({} -> {}): `{}` requested at frame {}, waited {}, {} / {} delivered{}",
                i.frame,
                i.kind.name().replace('_', " "),
                i.client,
                i.server,
                q,
                i.request_frame,
                seconds(i.waited_s),
                counted(i.rows, "row", "rows"),
                bytes(i.bytes),
                i.preceded_by
                    .iter()
                    .map(|w| format!("; {}", visible(w)))
                    .collect::<String>()
            );
            if let Some(p) = &i.phases {
                let _ = writeln!(out, "      phases: {}", phases_text(p));
            }
            if let Some(c) = &i.cause {
                describe_cause(out, "      ", c, false);
            }
        }
    }
}

/// Up to `limit` requests still unanswered when the capture ended.
fn write_unanswered(out: &mut String, unanswered: &[UnansweredRequest], limit: usize) {
    if !unanswered.is_empty() {
        let _ = writeln!(
            out,
            "\nrequests still unanswered when the capture ended (waited until its last packet):"
        );
        for u in unanswered.iter().take(limit) {
            let _ = writeln!(
                out,
                "  frame {}: `{}` ({} -> {}), waited {}",
                u.request_frame,
                statement(u.query.as_deref().unwrap_or(&u.command)),
                u.client,
                u.server,
                seconds(u.waited_s)
            );
        }
        if unanswered.len() > limit {
            let _ = writeln!(
                out,
                "  … and {} more (see --json)",
                count((unanswered.len() - limit) as u64)
            );
        }
    }
}

/// The requests and errors of each second, the first 120 seconds.
fn write_per_second(out: &mut String, per_second: &[SecondCounts]) {
    if per_second.len() > 1 {
        let w = per_second[0].width_s;
        if w > 1 {
            let _ = writeln!(
                out,
                "\nper {w} s (requests sent in each {w} seconds, not each second: the capture is too long \
                 for a row per second; the first and last are partly covered: see \"Per second\" in the \
                 README):"
            );
        } else {
            let _ = writeln!(
                out,
                "\nper second (requests sent in each second; the first and last are partly covered: see \
                 \"Per second\" in the README):"
            );
        }
        let _ = writeln!(out, "  {:<23}  {:>8} {:>8}", "second", "requests", "errors");
        for s in per_second.iter().take(120) {
            let _ = writeln!(
                out,
                "  {:<23}  {:>8} {:>8}{}",
                instant(s.second as f64),
                count(s.queries),
                count(s.errors),
                crate::style::covered_note(s.covered_s, s.width_s as f64)
            );
        }
        if per_second.len() > 120 {
            let _ = writeln!(
                out,
                "  … and {} more seconds (see --json)",
                count((per_second.len() - 120) as u64)
            );
        }
    }
}

/// The requests `mysql --slower-than` matched, slowest first, each with where its time went.
fn write_slow(out: &mut String, slow: &[SlowRequest], limit: usize) {
    if slow.is_empty() {
        let _ = writeln!(out, "\nno request as slow as --slower-than");
        return;
    }
    let _ = writeln!(
        out,
        "\nslowest requests (--slower-than; response time = upload + server + download):"
    );
    for q in slow.iter().take(limit) {
        let what = match q.fate {
            Fate::CutOff => "waited until a close",
            _ => "answered in",
        };
        let _ = writeln!(
            out,
            "  frame {}: `{}` ({} -> {}), {what} {}{}",
            q.request_frame,
            statement(q.statement.as_deref().unwrap_or(&q.command)),
            q.client,
            q.server,
            seconds(q.time_s),
            q.phases.as_ref().map_or_else(String::new, |p| {
                let sum = if p.download_complete {
                    " ="
                } else {
                    "; phases:"
                };
                format!("{sum} {}", phases_text(p))
            })
        );
    }
    if slow.len() > limit {
        let _ = writeln!(
            out,
            "  … and {} more (see --json)",
            count((slow.len() - limit) as u64)
        );
    }
}

/// Orders for `pcapsleuth flows --sort`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum FlowSort {
    /// In order of each connection's first packet (the capture's order).
    Start,
    /// Most bytes on the wire (both directions) first.
    Bytes,
    /// Longest (first packet to last) first.
    Duration,
}

fn end_text(e: ConnectionEnd) -> String {
    match e {
        ConnectionEnd::Graceful(r) => format!("FIN by {}", r.name()),
        ConnectionEnd::Reset(r) => format!("RST by {}", r.name()),
        ConnectionEnd::HalfClosed(r) => format!("half-closed by {}", r.name()),
        ConnectionEnd::Open => "open".into(),
    }
}

/// How a connection's close was judged, after its end in `flows`: "; abnormal: net_write_timeout", "; not
/// judged" (nothing for a normal one).
fn close_words(c: Option<&FlowClose>) -> String {
    let Some(c) = c else {
        return String::new();
    };
    match (c.verdict, &c.cause) {
        (CloseVerdict::Normal, _) => String::new(),
        (CloseVerdict::NotJudged, _) => "; not judged".into(),
        (CloseVerdict::Abnormal, Some(cause)) => format!(
            "; abnormal: {}",
            cause.setting.map_or(cause.kind.name(), |s| s.name())
        ),
        (CloseVerdict::Abnormal, None) => "; abnormal".into(),
    }
}

/// The order `pcapsleuth flows --sort` lists the connections of `conns` in, as their positions in it: by
/// start (as kept), or largest first by bytes or duration (ties in order of start).
pub fn flow_order(conns: &ConnectionTable, by: FlowSort) -> Vec<usize> {
    let key = |c: Connection| match by {
        FlowSort::Start => 0,
        FlowSort::Bytes => i128::from(c.total_bytes()),
        FlowSort::Duration => i128::from(c.duration_ns()),
    };
    if by == FlowSort::Start {
        return (0..conns.len()).collect();
    }
    let mut keyed: Vec<(std::cmp::Reverse<i128>, usize)> = conns
        .iter()
        .enumerate()
        .map(|(i, c)| (std::cmp::Reverse(key(c)), i))
        .collect();
    keyed.sort_unstable();
    keyed.into_iter().map(|(_, i)| i).collect()
}

/// Sorts connections for display: by start (frame), bytes or duration (largest first).
pub fn sorted(conns: &ConnectionTable, by: FlowSort) -> Vec<Connection> {
    flow_order(conns, by)
        .into_iter()
        .map(|i| conns.at(i))
        .collect()
}

/// What `pcapsleuth flows` prints: one row per connection, in the order of `rows` (see [`flow_order`]):
/// client, server, first frame, start (seconds after the capture's first packet), duration (s), SYNs
/// sent, connect time, packets each way, retransmissions, zero windows, bytes, and how it ended (and how
/// its close was judged); then the number of connections.
pub fn render_flows(capture: &CaptureFacts, rows: &[FlowRow]) -> String {
    let mut out = String::new();
    flow_lines(
        capture,
        || rows.iter().cloned(),
        rows.len(),
        |line| {
            out.push_str(line);
            Ok(())
        },
    )
    .unwrap_or_default();
    visible_lines_owned(out)
}

/// [`render_flows`] of the `n` rows `rows` gives (each time it is called: the rows are walked twice, once
/// for the columns' widths, once for the lines), handed to `line` one line (with its newline) at a
/// time, so that a table of a million connections is never held as text. Each line is shown as
/// [`crate::visible_lines`] shows it.
pub fn write_flows<I: Iterator<Item = FlowRow>>(
    capture: &CaptureFacts,
    rows: impl Fn() -> I,
    n: usize,
    mut line: impl FnMut(&str) -> std::io::Result<()>,
) -> std::io::Result<()> {
    flow_lines(capture, rows, n, |l| line(&crate::visible_lines(l)))
}

/// The cells of a connection's row in `pcapsleuth flows`, written into `cells`.
fn flow_cells(r: &FlowRow, first: i64, cells: &mut [String; 13]) {
    for cell in cells.iter_mut() {
        cell.clear();
    }
    let c = &r.connection;
    let h = &c.handshake;
    let _ = write!(cells[0], "{}", c.client);
    let _ = write!(cells[1], "{}", c.server);
    let _ = write!(cells[2], "{}", c.first.frame);
    let _ = write!(cells[3], "{:.3}", (c.first.ts.0 - first) as f64 / 1e9);
    let _ = write!(cells[4], "{:.3}", c.duration_ns() as f64 / 1e9);
    let _ = write!(cells[5], "{}", h.syn_count);
    cells[6].push_str(&match (h.outcome, h.connect_ns) {
        (_, Some(ns)) => duration(ns as f64 / 1e3),
        (Some(AttemptOutcome::Refused), None) => "refused".into(),
        (Some(AttemptOutcome::Unanswered), None) => "no answer".into(),
        _ => NONE.into(),
    });
    cells[7].push_str(&count(c.to_server.packets));
    cells[8].push_str(&count(c.to_client.packets));
    cells[9].push_str(&count(
        c.to_server.retransmissions + c.to_client.retransmissions,
    ));
    cells[10].push_str(&count(c.to_server.zero_windows + c.to_client.zero_windows));
    cells[11].push_str(&count(c.total_bytes()));
    cells[12].push_str(&end_text(c.end));
    if !c.roles_known {
        cells[12].push_str(" (roles unknown)");
    }
    cells[12].push_str(&close_words(r.close.as_ref()));
}

/// The lines of `pcapsleuth flows` for the `n` rows `rows` gives (it is walked twice: once for the
/// columns' widths, once for the lines).
fn flow_lines<I: Iterator<Item = FlowRow>>(
    capture: &CaptureFacts,
    rows: impl Fn() -> I,
    n: usize,
    mut line: impl FnMut(&str) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let first = capture.first_ts.map_or(0, |t| t.0);
    const HEADERS: [&str; 13] = [
        "client", "server", "frame", "start", "dur", "SYNs", "connect", "pkts>s", "pkts>c",
        "resent", "0-win", "bytes", "end",
    ];
    let mut cells: [String; 13] = Default::default();
    let mut widths = HEADERS.map(str::len);
    for r in rows() {
        flow_cells(&r, first, &mut cells);
        for (w, cell) in widths.iter_mut().zip(&cells) {
            *w = (*w).max(cell.chars().count());
        }
    }
    // Addresses to the left, numbers to the right, the end in words last (cut to the width if it must be).
    let columns = |cells: [&str; 13]| {
        let mut line = format!(
            "{:<w0$}  {:<w1$}",
            cells[0],
            cells[1],
            w0 = widths[0],
            w1 = widths[1]
        );
        for (cell, w) in cells[2..12].iter().zip(&widths[2..12]) {
            let _ = write!(line, " {cell:>w$}");
        }
        line.push_str("  ");
        line
    };
    line(&format!("{}\n", row(&columns(HEADERS), HEADERS[12])))?;
    for r in rows() {
        flow_cells(&r, first, &mut cells);
        let cells: [&str; 13] = std::array::from_fn(|i| cells[i].as_str());
        line(&format!("{}\n", row(&columns(cells), cells[12])))?;
    }
    line(&format!(
        "{}\n(frame: the first of the connection; start: seconds after the capture's first packet; dur: seconds, \
         first packet to last; SYNs: the client's; connect: first SYN to SYN-ACK; pkts>s, pkts>c: packets to the \
         server, to the client; resent: retransmitted packets; 0-win: zero-window advertisements; bytes: on the \
         wire, both ways)\n",
        counted(n as u64, "connection", "connections")
    ))
}

/// What the capture could not show, before any command's text: empty when it showed everything.
pub fn render_unknowns(u: &Unknowns) -> String {
    let mut out = String::new();
    if u.notes.is_empty() {
        return out;
    }
    let _ = writeln!(out, "Partial data (figures below are qualified by it):");
    for n in &u.notes {
        let _ = writeln!(out, "  * {}", visible(n));
    }
    out.push('\n');
    visible_lines_owned(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn statements_in_sentences_are_one_line_and_cut_visibly() {
        assert_eq!(super::statement("select\n  1"), "select 1");
        let long = super::statement(&"x".repeat(300));
        assert_eq!(long.chars().count(), 100);
        assert!(long.ends_with('…'));
    }
}
