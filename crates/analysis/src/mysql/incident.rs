//! Incidents: a close that cut a request off, with what the session was doing and why it may have
//! happened.

use pcapsleuth_flow::{CloseFlag as TcpCloseFlag, ClosedBy, ConnectionState, Endpoint, Role, Side};
use pcapsleuth_mysql::SessionPhase;
use serde::Serialize;

use super::close_seen::CloseSeen;
use super::fate::CutOff;
use super::request_phases::ListedPhases;

/// Which side closed, with which flag, cutting off what: `server_fin_mid_resultset` in JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct IncidentKind {
    /// The side that closed.
    pub by: Role,
    /// FIN or RST.
    pub flag: TcpCloseFlag,
    /// What the close cut off.
    pub cut: CutOff,
}

impl IncidentKind {
    /// Its name, as JSON gives it: `server_fin_mid_resultset`.
    pub fn name(&self) -> String {
        let by = match self.by {
            Role::Client => "client",
            Role::Server => "server",
            Role::Unknown => "unknown",
        };
        let flag = match self.flag {
            TcpCloseFlag::Fin => "fin",
            TcpCloseFlag::Rst => "rst",
        };
        let cut = match self.cut {
            CutOff::MidResultset => "mid_resultset",
            CutOff::MidResponse => "mid_response",
            CutOff::Unanswered => "unanswered",
        };
        format!("{by}_{flag}_{cut}")
    }
}

impl Serialize for IncidentKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.name())
    }
}

/// A connection closed while MySQL work was in progress.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Incident {
    /// Frame of the FIN or RST.
    pub frame: u64,
    /// e.g. `server_fin_mid_resultset`, `server_rst_unanswered`, `client_fin_mid_response`.
    pub kind: IncidentKind,
    /// The client's `ip:port`.
    pub client: String,
    /// The server's `ip:port`.
    pub server: String,
    /// The side that closed.
    pub by: Role,
    /// `FIN` or `RST`.
    pub flag: TcpCloseFlag,
    /// The cut-off request's command name (`COM_QUERY`, ...).
    pub command: String,
    /// Its statement text, when it has one.
    pub query: Option<String>,
    /// Frame of the request's first packet.
    pub request_frame: u64,
    /// Seconds since the epoch of the request.
    pub request_time: f64,
    /// Rows and response bytes delivered before the close.
    pub rows: u64,
    /// Response bytes delivered before the close (MySQL packets, headers included).
    pub bytes: u64,
    /// From the request to the close, seconds: how long the client waited before it was cut off.
    pub waited_s: f64,
    /// Where that wait went: the request's upload, the server's time to its first response byte, and
    /// the download of what came before the close (never complete); `None` when the timestamps cannot
    /// all be right.
    pub phases: Option<ListedPhases>,
    /// What preceded the close on the connection, in TCP facts (a zero window, resends, silence), as
    /// `first-reset` words it; empty when nothing did.
    pub preceded_by: Vec<String>,
    /// Why, as a hypothesis with its evidence, in the words `first-reset` gives the same close.
    pub cause: Option<crate::cause::Cause>,
}

impl Incident {
    pub(super) fn from_close(
        seen: &CloseSeen,
        client: Side,
        c: Endpoint,
        s: Endpoint,
        conn: &ConnectionState,
    ) -> Option<Incident> {
        let pending = seen.context.pending.as_ref()?;
        let cut = match seen.context.phase {
            SessionPhase::InResultset { .. } => CutOff::MidResultset,
            SessionPhase::InResponse { .. } => CutOff::MidResponse,
            SessionPhase::AwaitingResponse => CutOff::Unanswered,
            _ if pending.first_response_frame.is_some() => CutOff::MidResponse,
            _ => CutOff::Unanswered,
        };
        let by = if seen.side == client {
            Role::Client
        } else {
            Role::Server
        };
        let (rows, bytes) = match seen.context.phase {
            SessionPhase::InResultset { rows, bytes } => (rows, bytes),
            SessionPhase::InResponse { bytes } => (pending.rows, bytes),
            _ => (pending.rows, pending.response_bytes),
        };
        Some(Incident {
            frame: seen.frame,
            kind: IncidentKind {
                by,
                flag: seen.flag,
                cut,
            },
            client: c.to_string(),
            server: s.to_string(),
            by,
            flag: seen.flag,
            command: pending.command.name().to_string(),
            query: pending.statement.clone(),
            request_frame: pending.request_frame,
            request_time: pending.request_ts_ns as f64 / 1e9,
            rows,
            bytes,
            waited_s: seen.ts_ns.saturating_sub(pending.request_ts_ns) as f64 / 1e9,
            phases: ListedPhases::new(
                (pending.request_ts_ns, pending.last_request_ts_ns),
                pending
                    .first_response_ts_ns
                    .map(|f| (f, pending.last_response_ts_ns.unwrap_or(f))),
                false,
                (pending.request_bytes, bytes),
            ),
            preceded_by: conn
                .first_close(seen.side, seen.flag)
                .map(|event| crate::reasons::why(&ClosedBy { event, by }))
                .unwrap_or_default(),
            cause: None,
        })
    }
}
