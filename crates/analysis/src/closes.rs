//! `first-reset`: the first FIN, the first RST, and every connection's close in time order, each with who
//! closed it and what the other side was waiting for.

use pcapsleuth_flow::{CloseFlag, ClosedBy, Connection, ConnectionEnd, Role};
use serde::Serialize;

use crate::engine::Analysis;

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
    /// Frame of the connection's first packet.
    pub connection_first_frame: u64,
}

/// The `first-reset` answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FirstReset {
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

fn report(a: &Analysis, conn: &Connection, ev: &ClosedBy) -> CloseReport {
    let first = a.capture.first_ts.map_or(0, |t| t.0);
    CloseReport {
        frame: ev.event.at.frame,
        time: ev.event.at.ts.as_secs_f64(),
        rel_time: (ev.event.at.ts.0 - first) as f64 / 1e9,
        client: conn.client.to_string(),
        server: conn.server.to_string(),
        initiator: ev.by,
        flag: ev.event.flag,
        reason: tcp_reason(conn, ev),
        peer_unacked_bytes: ev.event.peer_unacked_bytes,
        peer_awaiting_reply: ev.event.peer_awaiting_reply,
        end: conn.end,
        connection_first_frame: conn.first.frame,
    }
}

/// Builds the `first-reset` answer, listing at most `limit` closes.
pub fn first_reset(a: &Analysis, limit: usize) -> FirstReset {
    let order = |ev: &ClosedBy| (ev.event.at.ts, ev.event.at.frame);
    let earliest = |pick: fn(&Connection) -> Option<ClosedBy>| {
        a.connections
            .iter()
            .filter_map(|c| pick(c).map(|ev| (c, ev)))
            .min_by_key(|(_, ev)| order(ev))
            .map(|(c, ev)| report(a, c, &ev))
    };
    let mut closes: Vec<(&Connection, ClosedBy)> = a
        .connections
        .iter()
        .filter_map(|c| c.close().map(|ev| (c, ev)))
        .collect();
    closes.sort_by_key(|(_, ev)| order(ev));
    FirstReset {
        first_fin: earliest(|c| c.first_fin),
        first_rst: earliest(|c| c.first_rst),
        total_closes: closes.len(),
        closes: closes
            .iter()
            .take(limit)
            .map(|(c, ev)| report(a, c, ev))
            .collect(),
        connections: a.connections.len(),
        open_at_end: a
            .connections
            .iter()
            .filter(|c| c.end == ConnectionEnd::Open)
            .count(),
    }
}
