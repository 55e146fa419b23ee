//! `first-reset`: the first FIN, the first RST, and every connection's close in time order, each with who
//! closed it and what the other side was waiting for.

use pcapsleuth_flow::{CloseFlag, ClosedBy, Connection, ConnectionEnd, Role};
use serde::Serialize;

use crate::engine::Analysis;
use crate::mysql::{CloseSeenFacts, MysqlSessionFacts};
use pcapsleuth_mysql::SessionPhase;

/// One connection's close, as `first-reset` prints it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CloseReport {
    /// Wireshark frame number of the FIN or RST.
    pub frame: u64,
    /// Seconds since the epoch.
    pub time: f64,
    /// Seconds since frame 1.
    pub rel_time: f64,
    pub client: String,
    pub server: String,
    /// Who sent it: "client", "server", or "unknown" when roles could not be told.
    pub initiator: Role,
    pub flag: CloseFlag,
    pub reason: String,
    /// Bytes the other side had sent that the closing side had not acknowledged.
    pub peer_unacked_bytes: u64,
    /// The other side's last data was still unanswered.
    pub peer_awaiting_reply: bool,
    /// How the connection ended in the end.
    pub end: ConnectionEnd,
    /// Not a normal end of a session: an RST, a close mid-response or with a request unanswered, a server
    /// hanging up an idle session. A close after COM_QUIT is never abnormal.
    pub abnormal: bool,
    /// What the MySQL session was doing ("after_quit", "in_resultset", "awaiting_response", "idle", ...),
    /// when the connection speaks MySQL.
    pub mysql_state: Option<&'static str>,
    /// Frame of the connection's first packet.
    pub connection_first_frame: u64,
}

/// The `first-reset` answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FirstReset {
    /// The first close that is not a normal end of a session.
    pub first_abnormal: Option<CloseReport>,
    pub first_fin: Option<CloseReport>,
    pub first_rst: Option<CloseReport>,
    /// Connection closes in time order (at most the requested limit).
    pub closes: Vec<CloseReport>,
    /// All closes in the capture (before the limit).
    pub total_closes: usize,
    pub connections: usize,
    /// Connections still open when the capture ended.
    pub open_at_end: usize,
}

fn role_name(r: Role) -> &'static str {
    match r {
        Role::Client => "client",
        Role::Server => "server",
        Role::Unknown => "one side",
    }
}

fn peer_name(r: Role) -> &'static str {
    match r {
        Role::Client => "server",
        Role::Server => "client",
        Role::Unknown => "other side",
    }
}

/// The TCP-level reason for a close: who, which flag, what the peer was waiting for, how it ended.
pub fn tcp_reason(conn: &Connection, ev: &ClosedBy) -> String {
    let by = role_name(ev.by);
    let peer = peer_name(ev.by);
    let flag = match ev.event.flag {
        CloseFlag::Fin => "FIN",
        CloseFlag::Rst => "RST",
    };
    let mut parts = vec![format!("{by} {flag}")];
    if ev.event.peer_awaiting_reply {
        parts.push(format!("while the {peer}'s last data was unanswered"));
    }
    if ev.event.peer_unacked_bytes > 0 {
        parts.push(format!(
            "with {} bytes from the {peer} unacknowledged",
            ev.event.peer_unacked_bytes
        ));
    }
    match (ev.event.flag, conn.end) {
        (CloseFlag::Fin, ConnectionEnd::Graceful(_)) => {
            parts.push("graceful: both sides sent FIN".into())
        }
        (CloseFlag::Fin, ConnectionEnd::Reset(r)) => {
            parts.push(format!("then {} RST", role_name(r)))
        }
        (CloseFlag::Fin, ConnectionEnd::HalfClosed(_)) => {
            parts.push(format!("the {peer} sent no FIN before the capture ended"))
        }
        (CloseFlag::Rst, _) => parts.push("abortive close".into()),
        (CloseFlag::Fin, ConnectionEnd::Open) => {}
    }
    parts.join(", ")
}

fn phase_name(p: SessionPhase) -> &'static str {
    match p {
        SessionPhase::Handshake => "handshake",
        SessionPhase::Idle => "idle",
        SessionPhase::AwaitingResponse => "awaiting_response",
        SessionPhase::InResultset { .. } => "in_resultset",
        SessionPhase::InResponse { .. } => "in_response",
        SessionPhase::AfterQuit => "after_quit",
        SessionPhase::Encrypted => "encrypted",
        SessionPhase::Undecodable => "undecodable",
        SessionPhase::Unknown => "unknown",
    }
}

fn quoted(statement: &Option<String>) -> String {
    match statement {
        Some(s) => {
            let one_line: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
            let short: String = one_line.chars().take(120).collect();
            let more = if short.len() < one_line.len() {
                "..."
            } else {
                ""
            };
            format!("`{short}{more}`")
        }
        None => "a request".into(),
    }
}

/// The reason in MySQL terms, and whether the close was abnormal.
fn mysql_reason(ev: &ClosedBy, seen: &CloseSeenFacts) -> (String, bool) {
    let by = role_name(ev.by);
    let flag = match ev.event.flag {
        CloseFlag::Fin => "FIN",
        CloseFlag::Rst => "RST",
    };
    let rst = ev.event.flag == CloseFlag::Rst;
    let what = || {
        let cmd = seen.command.map_or("request", |c| c.name());
        match &seen.statement {
            Some(_) => quoted(&seen.statement),
            None => cmd.to_string(),
        }
    };
    match seen.phase {
        SessionPhase::AfterQuit => (
            format!("{by} {flag} after COM_QUIT (normal end of session)"),
            false,
        ),
        SessionPhase::InResultset { .. } => (
            format!(
                "{by} {flag} mid-resultset of {} after {} rows ({} bytes), request frame {}",
                what(),
                seen.rows,
                seen.bytes,
                seen.request_frame.unwrap_or(0)
            ),
            true,
        ),
        SessionPhase::InResponse { .. } => (
            format!(
                "{by} {flag} mid-response to {} ({} bytes delivered), request frame {}",
                what(),
                seen.bytes,
                seen.request_frame.unwrap_or(0)
            ),
            true,
        ),
        SessionPhase::AwaitingResponse => (
            format!(
                "{by} {flag} while {} (frame {}) was unanswered",
                what(),
                seen.request_frame.unwrap_or(0)
            ),
            true,
        ),
        SessionPhase::Idle => (
            format!("{by} {flag} while the session was idle, without COM_QUIT"),
            rst || ev.by == Role::Server,
        ),
        SessionPhase::Handshake => (format!("{by} {flag} during the login handshake"), true),
        SessionPhase::Encrypted => (
            format!("{by} {flag} in a TLS session (contents not visible)"),
            rst,
        ),
        SessionPhase::Undecodable | SessionPhase::Unknown => (format!("{by} {flag}"), rst),
    }
}

fn classify(
    conn: &Connection,
    ev: &ClosedBy,
    mysql: Option<&MysqlSessionFacts>,
) -> (String, bool, Option<&'static str>) {
    let tcp = tcp_reason(conn, ev);
    let seen = mysql.and_then(|m| m.closes.iter().find(|c| c.frame == ev.event.at.frame));
    match seen {
        Some(seen)
            if !matches!(
                seen.phase,
                SessionPhase::Unknown | SessionPhase::Undecodable
            ) =>
        {
            let (reason, abnormal) = mysql_reason(ev, seen);
            (
                format!("{reason}; TCP: {tcp}"),
                abnormal,
                Some(phase_name(seen.phase)),
            )
        }
        _ => {
            let abnormal = ev.event.flag == CloseFlag::Rst
                || ev.event.peer_awaiting_reply
                || ev.event.peer_unacked_bytes > 0;
            (tcp, abnormal, seen.map(|s| phase_name(s.phase)))
        }
    }
}

fn report(a: &Analysis, i: usize, ev: &ClosedBy) -> CloseReport {
    let conn = &a.connections[i];
    let first = a.capture.first_ts.map_or(0, |t| t.0);
    let mysql = a.mysql_sessions.get(i).and_then(Option::as_ref);
    let (reason, abnormal, mysql_state) = classify(conn, ev, mysql);
    CloseReport {
        frame: ev.event.at.frame,
        time: ev.event.at.ts.as_secs_f64(),
        rel_time: (ev.event.at.ts.0 - first) as f64 / 1e9,
        client: conn.client.to_string(),
        server: conn.server.to_string(),
        initiator: ev.by,
        flag: ev.event.flag,
        reason,
        peer_unacked_bytes: ev.event.peer_unacked_bytes,
        peer_awaiting_reply: ev.event.peer_awaiting_reply,
        end: conn.end,
        abnormal,
        mysql_state,
        connection_first_frame: conn.first.frame,
    }
}

/// Builds the `first-reset` answer, listing at most `limit` closes.
pub fn first_reset(a: &Analysis, limit: usize) -> FirstReset {
    let order = |ev: &ClosedBy| (ev.event.at.ts, ev.event.at.frame);
    let earliest = |pick: fn(&Connection) -> Option<ClosedBy>| {
        a.connections
            .iter()
            .enumerate()
            .filter_map(|(i, c)| pick(c).map(|ev| (i, ev)))
            .min_by_key(|(_, ev)| order(ev))
            .map(|(i, ev)| report(a, i, &ev))
    };
    let mut closes: Vec<(usize, ClosedBy)> = a
        .connections
        .iter()
        .enumerate()
        .filter_map(|(i, c)| c.close().map(|ev| (i, ev)))
        .collect();
    closes.sort_by_key(|(_, ev)| order(ev));
    // Every FIN and RST event of every connection, in time order, until one is abnormal.
    let mut events: Vec<(usize, ClosedBy)> = a
        .connections
        .iter()
        .enumerate()
        .flat_map(|(i, c)| {
            [c.first_fin, c.first_rst]
                .into_iter()
                .flatten()
                .map(move |ev| (i, ev))
        })
        .collect();
    events.sort_by_key(|(_, ev)| order(ev));
    let first_abnormal = events
        .iter()
        .map(|(i, ev)| report(a, *i, ev))
        .find(|r| r.abnormal);
    FirstReset {
        first_abnormal,
        first_fin: earliest(|c| c.first_fin),
        first_rst: earliest(|c| c.first_rst),
        total_closes: closes.len(),
        closes: closes
            .iter()
            .take(limit)
            .map(|(i, ev)| report(a, *i, ev))
            .collect(),
        connections: a.connections.len(),
        open_at_end: a
            .connections
            .iter()
            .filter(|c| c.end == ConnectionEnd::Open)
            .count(),
    }
}
