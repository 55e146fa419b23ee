//! What became of a request ([`Fate`]), what a close cut off ([`CutOff`]), and the requests left
//! unanswered.

use pcapsleuth_flow::Endpoint;
use pcapsleuth_mysql::{Outcome, Transaction};
use serde::Serialize;

/// What became of a request. Every count of the MySQL report (requests, statements, response times) sorts
/// requests this one way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Fate {
    /// A complete response arrived (OK, ERR, a resultset, ...): it has a response time.
    Answered,
    /// The connection was closed (FIN or RST, by either side) before the response was complete: it waited
    /// until the close.
    CutOff,
    /// Still waiting when the capture ended.
    Unanswered,
    /// The response fell into bytes the capture does not hold (cut by the snap length, or lost), or a
    /// login went on in TLS: how it ended is unknown.
    Unreadable,
    /// A command the server never answers (COM_QUIT, COM_STMT_CLOSE, COM_STMT_SEND_LONG_DATA), or a binlog
    /// dump, answered by a stream of events rather than a response.
    NoResponse,
}

impl Fate {
    /// The fate an outcome tells.
    /// The fate of `t`: its outcome's ([`Fate::of`]), but a request whose response began in the capture
    /// and whose rest fell into bytes the capture does not hold (the snap length cut it, it was lost,
    /// or the capture kept only the first segment of a compressed packet) was answered: its time to
    /// first byte is known, its response time is not ([`response_end_known`](super::response_end_known)). A response still
    /// arriving when the capture ended leaves its request unanswered: it was still waiting for the
    /// rest.
    pub fn of_transaction(t: &Transaction) -> Fate {
        match t.outcome {
            Outcome::GapLost if t.first_response_ts_ns.is_some() => Fate::Answered,
            ref o => Fate::of(o),
        }
    }

    /// The fate an outcome tells, whether or not any of the response came.
    pub fn of(o: &Outcome) -> Fate {
        match o {
            Outcome::Ok { .. }
            | Outcome::Err { .. }
            | Outcome::ResultSet { .. }
            | Outcome::Prepared { .. }
            | Outcome::LocalInfile { .. }
            | Outcome::Unparsed => Fate::Answered,
            Outcome::ClosedMidResponse { .. } | Outcome::ClosedBeforeResponse { .. } => {
                Fate::CutOff
            }
            Outcome::CaptureEnded => Fate::Unanswered,
            Outcome::GapLost | Outcome::Encrypted => Fate::Unreadable,
            Outcome::NoResponseExpected | Outcome::ReplicationStream => Fate::NoResponse,
        }
    }
}

/// A request still waiting for its response when the capture ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UnansweredRequest {
    /// Frame of the request's first packet.
    pub request_frame: u64,
    /// Seconds since the epoch.
    pub request_time: f64,
    /// The client's `ip:port`.
    pub client: String,
    /// The server's `ip:port`.
    pub server: String,
    /// The command's name (`COM_QUERY`, `COM_STMT_EXECUTE`, ...).
    pub command: String,
    /// The statement text, when the request has one (SQL of a prepared statement for `COM_STMT_EXECUTE`).
    pub query: Option<String>,
    /// From the request to the capture's last packet, seconds.
    pub waited_s: f64,
    #[serde(skip)]
    request_ts_ns: u64,
}

impl UnansweredRequest {
    pub(super) fn new(t: &Transaction, c: Endpoint, s: Endpoint) -> Self {
        UnansweredRequest {
            request_frame: t.request_frame,
            request_time: t.request_ts_ns as f64 / 1e9,
            client: c.to_string(),
            server: s.to_string(),
            command: t.command.name().to_string(),
            query: t.statement.clone(),
            waited_s: 0.0,
            request_ts_ns: t.request_ts_ns,
        }
    }

    /// Sets `waited_s` from the time of the capture's last packet.
    pub(crate) fn capture_ended(&mut self, last_ns: i64) {
        self.waited_s = (last_ns - self.request_ts_ns as i64).max(0) as f64 / 1e9;
    }
}

/// What a close cut off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CutOff {
    /// Rows were still coming.
    MidResultset,
    /// Part of another response had come.
    MidResponse,
    /// None of the response had come.
    Unanswered,
}
