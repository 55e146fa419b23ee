//! The records [`compare`](super::compare) reads and the comparison it returns: plain data, no logic
//! beyond small accessors.

use pcapsleuth_flow::Endpoint;
use pcapsleuth_mysql::Command;
use serde::Serialize;

use crate::histogram::RtSummary;
use crate::modes::Mode;

use super::span_of;

/// A packet of one capture: its frame number (Wireshark's) and its time on that capture's clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Seen {
    /// Wireshark's frame number in that capture (1-based).
    pub frame: u64,
    /// Nanoseconds since the epoch, on the clock of the host that captured it.
    pub ts_ns: i64,
}

/// One MySQL request and its response as one capture point saw them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exchange {
    /// The client's endpoint as this capture point saw it (a NAT may show another address).
    pub client: Endpoint,
    /// The server's endpoint as this capture point saw it (a proxy's, at the client's side of it).
    pub server: Endpoint,
    /// The TCP connection within its capture: requests with the same endpoints and `connection` travelled
    /// on one connection; a 4-tuple used again later is another connection with another number.
    pub connection: u64,
    /// The TCP sequence number of the request's first byte, when known.
    pub request_seq: Option<u32>,
    /// A hash of the request's MySQL payload: equal in both captures when nothing rewrote the request.
    pub request_hash: u64,
    /// The request's command (`COM_QUERY`, `COM_STMT_EXECUTE`, ...).
    pub command: Command,
    /// The statement text, when the request has one (for naming notable transactions).
    pub statement: Option<Box<str>>,
    /// The segment carrying the request's first byte.
    pub request: Seen,
    /// The segment carrying the response's first byte, if this point saw it.
    pub first_response: Option<Seen>,
    /// The segment that completed the response, if this point saw it complete: at the sender (the server)
    /// the first transmission of its last byte; at the receiver (the client) the arrival that left no byte
    /// missing (a resent segment filling a hole can come after the last byte).
    pub last_response: Option<Seen>,
    /// A segment of the response was retransmitted, as this point saw it.
    pub response_retransmitted: bool,
}

/// How the clocks of the two captures are aligned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClockPolicy {
    /// Estimated from the matched pairs (see the module documentation).
    Estimate,
    /// Known: the server capture's clock minus the client capture's, in nanoseconds (0 for two captures
    /// taken on one host or by hosts synchronised by PTP).
    Known {
        /// Server clock minus client clock, nanoseconds.
        offset_ns: i64,
    },
}

/// The time a capture ran, on its own clock: its first and last packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CaptureSpan {
    /// The first packet's time, nanoseconds since the epoch on that capture's clock.
    pub first_ns: i64,
    /// The last packet's time, nanoseconds since the epoch on that capture's clock.
    pub last_ns: i64,
}

impl CaptureSpan {
    pub(super) fn contains(&self, ns: i64) -> bool {
        (self.first_ns..=self.last_ns).contains(&ns)
    }
}

/// How [`compare`](fn@super::compare) works.
#[derive(Debug, Clone, PartialEq)]
pub struct CompareOptions {
    /// Width of the `per_interval` rows, nanoseconds (1 s by default).
    pub interval_ns: i64,
    /// How the two clocks are aligned: estimated from the matched pairs (the default), or known.
    pub clock: ClockPolicy,
    /// When the client capture ran; by default, from its first request to its last response.
    pub client_span: Option<CaptureSpan>,
    /// When the server capture ran; by default, from its first request to its last response.
    pub server_span: Option<CaptureSpan>,
    /// At most this many notable transactions are listed (the earliest); all are counted.
    pub notable_limit: usize,
}

impl Default for CompareOptions {
    fn default() -> Self {
        CompareOptions {
            interval_ns: 1_000_000_000,
            clock: ClockPolicy::Estimate,
            client_span: None,
            server_span: None,
            notable_limit: 100,
        }
    }
}

impl CompareOptions {
    /// When each capture ran, `(client, server)`: the spans given, else from its first request to its
    /// last response.
    pub fn spans(&self, client: &[Exchange], server: &[Exchange]) -> (CaptureSpan, CaptureSpan) {
        (
            self.client_span.unwrap_or_else(|| span_of(client)),
            self.server_span.unwrap_or_else(|| span_of(server)),
        )
    }
}

/// Which rule found a request in both captures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MatchedBy {
    /// The same 4-tuple, TCP sequence number and payload.
    Sequence,
    /// The same payload, in time order, on a pair of connections matched by their requests.
    Payload,
}

/// One transaction found in both captures, with where its time went.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MatchedPair {
    /// Index into the client capture's exchanges.
    pub client: usize,
    /// Index into the server capture's exchanges.
    pub server: usize,
    /// Which rule matched it.
    pub matched_by: MatchedBy,
    /// What the client waited: its request's first byte to the response's last byte, if it saw both.
    pub client_rt_ns: Option<u64>,
    /// What the server took, likewise on its own clock.
    pub server_rt_ns: Option<u64>,
    /// From the client sending the request to the server receiving it (needs the clock offset).
    pub request_path_ns: Option<i64>,
    /// From the server sending the response's last byte to the client receiving it (needs the offset).
    pub response_path_ns: Option<i64>,
}

impl MatchedPair {
    /// What the path added: client RT minus server RT (independent of the clocks' offset).
    pub fn path_ns(&self) -> Option<i64> {
        Some(self.client_rt_ns? as i64 - self.server_rt_ns? as i64)
    }
}

/// Where the clock offset came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ClockBasis {
    /// Estimated from the matched pairs.
    Estimated,
    /// Given ([`ClockPolicy::Known`]).
    Given,
    /// Not known: no matched pair bounds it from both sides.
    Unknown,
}

/// How the two captures' clocks were aligned, and how well.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ClockAlignment {
    /// Where the offset came from.
    pub basis: ClockBasis,
    /// Server clock minus client clock, µs, at `reference` (null when unknown).
    pub offset_us: Option<f64>,
    /// When the offset holds (the client capture's first matched request), seconds since the epoch.
    pub reference: Option<f64>,
    /// How fast the server's clock runs against the client's, parts per million: measured only when no
    /// single offset fits every matched pair (otherwise null: too small to be seen through the bounds).
    pub drift_ppm: Option<f64>,
    /// The true offset lies within `offset_us` ± this (half the fastest round trip), when every pair agrees
    /// with the alignment.
    pub uncertainty_us: Option<f64>,
    /// Every matched pair agrees with the alignment (a request never arrives before it was sent, a
    /// response never before the server sent it). False means a clock stepped, or requests were matched
    /// wrongly.
    pub consistent: bool,
    /// Matched pairs that bounded the offset.
    pub pairs: u64,
}

/// The humps of each side's response times, side by side.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct SideBySideHumps {
    /// The client's, each with what the server and the path took of the same transactions.
    pub client: Vec<ClientHump>,
    /// The server's humps, of the same transactions (matched and answered at both points), fast first.
    pub server: Vec<Mode>,
}

/// A hump of the client's response times, and where the time of its transactions went.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClientHump {
    /// The hump of the client's response times (center, share, extent), as [`detect_modes`](crate::detect_modes) finds it.
    #[serde(flatten)]
    pub mode: Mode,
    /// The median server RT of the hump's transactions, µs: near the hump's center when the server made
    /// the hump, small when the path did.
    pub server_rt_p50_us: f64,
    /// The median of what the path added to them, µs.
    pub path_p50_us: f64,
    /// The share of them whose response was retransmitted (seen at either point), 0..1.
    pub retransmitted_share: f64,
}

/// One interval of the matched transactions, by the client's request time.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IntervalComparison {
    /// Seconds since the epoch, client clock.
    pub start: f64,
    /// Matched transactions answered at both points.
    pub count: u64,
    /// Mean response time at the client, µs.
    pub client_rt_mean_us: f64,
    /// 95th percentile of the response time at the client, µs (exact: a value that occurred).
    pub client_rt_p95_us: f64,
    /// Mean response time at the server, µs.
    pub server_rt_mean_us: f64,
    /// 95th percentile of the response time at the server, µs.
    pub server_rt_p95_us: f64,
    /// Mean of what the path added (client RT minus server RT), µs.
    pub path_mean_us: f64,
    /// The share of the client's time in the interval spent on the path, 0..1; `None` when the client waited
    /// no time at all.
    pub path_share: Option<f64>,
}

/// What makes a transaction notable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NotableKind {
    /// The response was retransmitted on its way to the client.
    ResponseRetransmitted,
    /// The response reached the client much later than responses usually did, with no retransmission
    /// seen at either point.
    ResponseLate,
    /// The server sent a complete response that the client never saw complete, though its capture went on.
    ResponseNeverSeen,
    /// The client sent a request that the server capture does not have, though it followed the
    /// connection and was running.
    RequestNeverSeen,
}

impl NotableKind {
    /// Its name, as JSON and the text give it (`response_retransmitted`, ...).
    pub fn name(self) -> &'static str {
        match self {
            NotableKind::ResponseRetransmitted => "response_retransmitted",
            NotableKind::ResponseLate => "response_late",
            NotableKind::ResponseNeverSeen => "response_never_seen",
            NotableKind::RequestNeverSeen => "request_never_seen",
        }
    }
}

/// How one capture point saw a notable transaction: its endpoints there and its frames.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CapturedAs {
    /// The client's endpoint as this capture point saw it.
    pub client: Endpoint,
    /// The server's endpoint as this capture point saw it.
    pub server: Endpoint,
    /// The frame of the request's first byte.
    pub request_frame: u64,
    /// The frame of the response's last byte, if this point saw it.
    pub response_frame: Option<u64>,
}

impl CapturedAs {
    pub(super) fn of(e: &Exchange) -> Self {
        CapturedAs {
            client: e.client,
            server: e.server,
            request_frame: e.request.frame,
            response_frame: e.last_response.map(|s| s.frame),
        }
    }
}

/// A transaction whose time went somewhere specific, with its frames in both captures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Notable {
    /// What makes it notable.
    pub kind: NotableKind,
    /// The client's request time, seconds since the epoch, client clock.
    pub at: f64,
    /// The request's command name (`COM_QUERY`, ...).
    pub command: &'static str,
    /// The statement text, when the request has one.
    pub statement: Option<String>,
    /// In the client capture.
    pub client_capture: CapturedAs,
    /// In the server capture (null for a request the server never saw).
    pub server_capture: Option<CapturedAs>,
    /// The response time at the client, µs, if the client saw the response complete.
    pub client_rt_us: Option<f64>,
    /// The response time at the server, µs, if the server capture has the transaction.
    pub server_rt_us: Option<f64>,
    /// What happened, in words.
    pub detail: String,
}

/// Notable transactions by kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
pub struct NotableCounts {
    /// Transactions whose response was retransmitted on its way to the client.
    pub response_retransmitted: u64,
    /// Responses that reached the client much later than responses usually did, with no retransmission seen.
    pub response_late: u64,
    /// Complete responses of the server that the client never saw complete.
    pub response_never_seen: u64,
    /// Requests of the client that the server capture does not have.
    pub request_never_seen: u64,
}

impl NotableCounts {
    pub(super) fn add(&mut self, kind: NotableKind) {
        match kind {
            NotableKind::ResponseRetransmitted => self.response_retransmitted += 1,
            NotableKind::ResponseLate => self.response_late += 1,
            NotableKind::ResponseNeverSeen => self.response_never_seen += 1,
            NotableKind::RequestNeverSeen => self.request_never_seen += 1,
        }
    }
}

/// Requests of one capture that the other could not have seen: sent before the other capture began or
/// after it ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
pub struct OutsideOtherCapture {
    /// Unmatched requests of the client capture sent while the server capture was not running.
    pub client: u64,
    /// Unmatched requests of the server capture received while the client capture was not running.
    pub server: u64,
}

/// Connections of the two captures, paired by their requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
pub struct ConnectionPairing {
    /// Pairs of connections with at least one request matched.
    pub paired: u64,
    /// Connections of the client capture with no request found in the server capture.
    pub client_only: u64,
    /// Connections of the server capture with no request found in the client capture.
    pub server_only: u64,
}

/// The comparison of a client capture with a server capture of the same workload.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// Requests found in both captures.
    pub matched: u64,
    /// Of them, by 4-tuple and sequence number.
    pub matched_by_sequence: u64,
    /// Of them, by payload on connections paired by their requests (NAT, proxy).
    pub matched_by_payload: u64,
    /// Requests of the client capture not found in the server capture.
    pub unmatched_client: u64,
    /// Requests of the server capture not found in the client capture.
    pub unmatched_server: u64,
    /// Unmatched requests sent while the other capture was not running.
    pub outside_other_capture: OutsideOtherCapture,
    /// How the two captures' connections were paired.
    pub connections: ConnectionPairing,
    /// Server clock minus client clock, µs (null when unknown); `clock` says how well it is known.
    pub clock_offset_us: Option<f64>,
    /// How the clocks were aligned, and how well.
    pub clock: ClockAlignment,
    /// Response time at the client, of matched transactions answered at both points.
    pub client_rt_us: RtSummary,
    /// Response time at the server, of the same transactions.
    pub server_rt_us: RtSummary,
    /// Client RT minus server RT: what the path added.
    pub path_us: RtSummary,
    /// Client to server (needs the clock offset; within its uncertainty).
    pub request_path_us: RtSummary,
    /// Server to client, the response's last byte (needs the clock offset; within its uncertainty).
    pub response_path_us: RtSummary,
    /// The share of the client's time (summed over the transactions) spent on the path, 0..1.
    pub path_share: Option<f64>,
    /// The humps of both sides' response times, side by side.
    pub humps: SideBySideHumps,
    /// Width of the `per_interval` rows, seconds.
    pub interval_s: f64,
    /// Matched transactions by interval of the client's request time, in time order (intervals with none are
    /// left out).
    pub per_interval: Vec<IntervalComparison>,
    /// The earliest notable transactions (at most `notable_limit`).
    pub notable: Vec<Notable>,
    /// All notable transactions, by kind.
    pub notable_counts: NotableCounts,
    /// Where the time went, in words.
    pub verdict: String,
    /// Every matched transaction, in the client capture's order (for programs; not in JSON).
    #[serde(skip)]
    pub pairs: Vec<MatchedPair>,
}
