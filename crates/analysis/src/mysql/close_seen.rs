//! The FINs and RSTs a connection has seen, each with what the MySQL session was doing.

use pcapsleuth_flow::{CloseFlag as TcpCloseFlag, Side};
use pcapsleuth_mysql::{CloseContext, Command, SessionPhase};

/// What a close found the session doing.
#[derive(Debug, Clone)]
pub struct CloseSeen {
    pub frame: u64,
    pub ts_ns: u64,
    pub side: Side,
    pub flag: TcpCloseFlag,
    pub context: CloseContext,
}

/// A [`CloseSeen`] reduced to what reports print.
#[derive(Debug, Clone, PartialEq)]
pub struct CloseSeenFacts {
    /// The FIN's or RST's frame.
    pub frame: u64,
    /// What the session was doing.
    pub phase: SessionPhase,
    /// The open request's command, when one was open.
    pub command: Option<Command>,
    /// Its statement.
    pub statement: Option<String>,
    /// Its first frame.
    pub request_frame: Option<u64>,
    /// When it was sent (its first byte), ns since the epoch.
    pub request_ts_ns: Option<u64>,
    /// Rows delivered before the close.
    pub rows: u64,
    /// Response bytes delivered before the close.
    pub bytes: u64,
    /// The client was in the middle of sending a request packet.
    pub request_cut: bool,
    /// The server's byte stream ended inside a MySQL packet.
    pub response_cut: bool,
    /// The server's last word before the close, when it was an error with no command after it.
    pub error: Option<pcapsleuth_mysql::ErrorAt>,
}

impl CloseSeenFacts {
    /// What reports print of `c`.
    pub(super) fn of(c: &CloseSeen) -> CloseSeenFacts {
        let p = c.context.pending.as_ref();
        let (rows, bytes) = match c.context.phase {
            SessionPhase::InResultset { rows, bytes } => (rows, bytes),
            SessionPhase::InResponse { bytes } => (0, bytes),
            _ => (p.map_or(0, |p| p.rows), p.map_or(0, |p| p.response_bytes)),
        };
        CloseSeenFacts {
            frame: c.frame,
            phase: c.context.phase,
            command: p.map(|p| p.command),
            statement: p.and_then(|p| p.statement.clone()),
            request_frame: p.map(|p| p.request_frame),
            request_ts_ns: p.map(|p| p.request_ts_ns),
            rows,
            bytes,
            request_cut: c.context.request_cut,
            response_cut: c.context.response_cut,
            error: c.context.error.clone(),
        }
    }
}
