//! Two capture points of one MySQL workload: where each transaction's time went.
//!
//! A capture taken at the client shows how long the client waited; one taken at the server shows how long
//! the server took. [`compare`] lines the two up: it finds each request in both captures, aligns the two
//! hosts' clocks from the pairs it found, and splits every client-observed response time into the server's
//! time and the path's (the request's way to the server, the response's way back). It answers "the server
//! answered in 0.1 ms; the path added 9.9 ms of the client's 10.0 ms" and names the transactions whose time
//! went somewhere specific (a response resent on its way, one the client never saw, a request the server
//! never saw).
//!
//! It works on plain records, one [`Exchange`] per request as one capture point saw it, and knows nothing
//! of packets: whatever reads a capture (the engine, a test, another program) produces them.
//!
//! **Matching.** A request is the same in both captures when its connection's 4-tuple and the TCP sequence
//! number of its first byte agree and so does the hash of its MySQL payload: nothing between the two points
//! rewrote the connection. Where a NAT, a load balancer or a TCP proxy did (other addresses, ports or
//! sequence numbers), connections are paired by their requests instead: a connection of the client
//! capture goes with the server capture's connection that carries the most of its requests' payloads in
//! the same order, and within a pair the requests are matched by payload in time order. A proxy that
//! spreads one client connection over several server connections (multiplexing) is not followed.
//!
//! **Clocks.** The two captures were timestamped by two hosts. Every matched pair bounds the offset
//! `θ = server clock - client clock`: the request reached the server after the client sent it
//! (`θ <= server request time - client request time`) and the response reached the client after the server
//! sent it (`θ >= server response time - client response time`). The tightest bounds over all pairs, the
//! fastest request and the fastest response (the minimum one-way delays each way), leave an interval whose
//! middle is the estimate and whose half-width, half the fastest round trip, is how well the clocks are
//! aligned: the true offset is inside it, whatever the path. A path slower one way than the other (a shaper
//! on the way back) puts the middle off the truth by up to that half-width, never more. Only when no single
//! offset fits every pair (a clock running faster than the other) is a drift fitted: the slope through the
//! middles of the bounds in successive time windows, kept if the pairs then agree.
//!
//! **What is measured.** Response time at each point is the request's first byte to the response's last
//! byte, as every report of pcapsleuth measures it, so the path's share of a transaction, client RT minus
//! server RT, needs no clock at all; the split into request path and response path does.
//!
//! ```
//! use pcapsleuth_analysis::{compare, CompareOptions, Exchange, Seen};
//! use pcapsleuth_mysql::Command;
//!
//! let at = |frame, ts_ns| Some(Seen { frame, ts_ns });
//! let client = "10.0.0.2:50000".parse()?;
//! let server = "10.0.0.1:3306".parse()?;
//! let request = |request: Seen, last| Exchange {
//!     client, server, connection: 0, request_seq: Some(1000), request_hash: 42,
//!     command: Command::Query, statement: Some("select 1".into()),
//!     request, first_response: last, last_response: last, response_retransmitted: false,
//! };
//! // The client waited 4 ms; the server answered in 0.1 ms (the clocks happen to agree).
//! let at_client = [request(Seen { frame: 10, ts_ns: 1_000_000 }, at(12, 5_000_000))];
//! let at_server = [request(Seen { frame: 7, ts_ns: 1_010_000 }, at(8, 1_110_000))];
//! let cmp = compare(&at_client, &at_server, &CompareOptions::default());
//! assert_eq!(cmp.matched, 1);
//! assert_eq!(cmp.path_us.p50, 3900.0);
//! # Ok::<(), String>(())
//! ```

use std::collections::{BTreeMap, HashMap};

use pcapsleuth_flow::Endpoint;
use pcapsleuth_mysql::Command;
use serde::Serialize;

use crate::histogram::{Histogram, RtSummary};
use crate::modes::{detect_modes, Mode};
use crate::thresholds::{
    COMPARE_CANDIDATE_CONNECTIONS, COMPARE_CLOCK_WINDOWS, COMPARE_COMMON_PAYLOAD_CONNECTIONS,
    COMPARE_LATE_FACTOR, COMPARE_LATE_MIN_NS, COMPARE_PATH_SHARE, COMPARE_PAYLOAD_LOOKAHEAD,
};
use crate::timeline::plausible_response_time;
use crate::units::{duration_us, percent};

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
    pub statement: Option<String>,
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
    fn contains(&self, ns: i64) -> bool {
        (self.first_ns..=self.last_ns).contains(&ns)
    }
}

/// How [`compare`] works.
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

/// The count, mean, percentiles, minimum and maximum of `values_ns` (sorted in place), in µs: exact, each
/// percentile a value that occurred (nearest rank), where the other reports read them off a histogram.
fn exact_summary_us(values_ns: &mut [i64]) -> RtSummary {
    if values_ns.is_empty() {
        return RtSummary::default();
    }
    values_ns.sort_unstable();
    let n = values_ns.len();
    let us = |ns: i64| ns as f64 / 1e3;
    let rank = |q: f64| {
        let r = (q * n as f64).ceil() as usize;
        us(values_ns[r.clamp(1, n) - 1])
    };
    let sum: i128 = values_ns.iter().map(|&v| i128::from(v)).sum();
    RtSummary {
        count: n as u64,
        mean: (sum as f64 / n as f64) / 1e3,
        p50: rank(0.50),
        p95: rank(0.95),
        p99: rank(0.99),
        max: us(values_ns[n - 1]),
        min: us(values_ns[0]),
    }
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
    /// The hump of the client's response times (center, share, extent), as [`detect_modes`] finds it.
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
    fn of(e: &Exchange) -> Self {
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
    fn add(&mut self, kind: NotableKind) {
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

/// A connection within one capture.
type ConnectionKey = (Endpoint, Endpoint, u64);

fn connection_of(e: &Exchange) -> ConnectionKey {
    (e.client, e.server, e.connection)
}

/// Compares a client capture's exchanges with a server capture's (each in any order).
pub fn compare(client: &[Exchange], server: &[Exchange], opts: &CompareOptions) -> Comparison {
    let client_order = time_order(client);
    let server_order = time_order(server);
    let mut matches = Matches::new(client.len(), server.len());
    match_by_sequence(client, server, &client_order, &server_order, &mut matches);
    let pairing = match_by_payload(client, server, &client_order, &server_order, &mut matches);

    let mut found: Vec<(usize, usize, MatchedBy)> = client_order
        .iter()
        .filter_map(|&c| matches.of_client[c].map(|(s, by)| (c, s, by)))
        .collect();
    found.sort_by_key(|&(c, _, _)| (client[c].request.ts_ns, client[c].request.frame));

    let clock = align_clocks(client, server, &found, opts.clock);
    let pairs: Vec<MatchedPair> = found
        .iter()
        .map(|&(c, s, by)| measure(&client[c], &server[s], c, s, by, &clock))
        .collect();

    let (client_span, server_span) = opts.spans(client, server);
    let mut outside = OutsideOtherCapture::default();
    for (i, e) in client.iter().enumerate() {
        if matches.of_client[i].is_none() {
            let at_server = clock.to_server(e.request.ts_ns);
            outside.client += u64::from(!server_span.contains(at_server));
        }
    }
    for (i, e) in server.iter().enumerate() {
        if matches.of_server[i].is_none() {
            let at_client = clock.to_client(e.request.ts_ns);
            outside.server += u64::from(!client_span.contains(at_client));
        }
    }

    // Client RT, server RT and path over the same transactions (answered at both points), so that the
    // server's mean and the path's add up to the client's.
    let summary = |f: &dyn Fn(&MatchedPair) -> Option<i64>| {
        let mut v: Vec<i64> = pairs.iter().filter_map(f).collect();
        exact_summary_us(&mut v)
    };
    let both = |p: &MatchedPair| p.client_rt_ns.is_some() && p.server_rt_ns.is_some();
    let client_rt_us = summary(&|p| p.path_ns().and(p.client_rt_ns).map(|v| v as i64));
    let server_rt_us = summary(&|p| p.path_ns().and(p.server_rt_ns).map(|v| v as i64));
    let path_us = summary(&MatchedPair::path_ns);
    let request_path_us = summary(&|p| p.request_path_ns);
    let response_path_us = summary(&|p| p.response_path_ns);
    let path_share = share(pairs.iter().filter(|p| both(p)));

    let humps = SideBySideHumps {
        client: humps_of(
            pairs
                .iter()
                .filter(|p| both(p))
                .filter_map(|p| p.client_rt_ns),
        )
        .into_iter()
        .map(|mode| client_hump(mode, client, server, &pairs))
        .collect(),
        server: humps_of(
            pairs
                .iter()
                .filter(|p| both(p))
                .filter_map(|p| p.server_rt_ns),
        ),
    };
    let interval_ns = opts.interval_ns.max(1);
    let per_interval = per_interval(client, &pairs, interval_ns);

    let (notable, notable_counts) = notables(
        client,
        server,
        &pairs,
        &matches,
        &pairing,
        &clock,
        client_span,
        server_span,
        response_path_us.p50,
        opts.notable_limit,
    );

    let mut cmp = Comparison {
        matched: pairs.len() as u64,
        matched_by_sequence: count_by(&pairs, MatchedBy::Sequence),
        matched_by_payload: count_by(&pairs, MatchedBy::Payload),
        unmatched_client: (client.len() - pairs.len()) as u64,
        unmatched_server: (server.len() - pairs.len()) as u64,
        outside_other_capture: outside,
        connections: pairing.counts,
        clock_offset_us: clock.alignment.offset_us,
        clock: clock.alignment,
        client_rt_us,
        server_rt_us,
        path_us,
        request_path_us,
        response_path_us,
        path_share,
        humps,
        interval_s: interval_ns as f64 / 1e9,
        per_interval,
        notable,
        notable_counts,
        verdict: String::new(),
        pairs,
    };
    cmp.verdict = verdict(&cmp);
    cmp
}

fn count_by(pairs: &[MatchedPair], by: MatchedBy) -> u64 {
    pairs.iter().filter(|p| p.matched_by == by).count() as u64
}

/// Indices of `exchanges` by request time (then frame): the order requests were sent or received.
fn time_order(exchanges: &[Exchange]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..exchanges.len()).collect();
    order.sort_by_key(|&i| (exchanges[i].request.ts_ns, exchanges[i].request.frame));
    order
}

/// From the first request to the last packet of any exchange.
fn span_of(exchanges: &[Exchange]) -> CaptureSpan {
    let times = exchanges.iter().flat_map(|e| {
        [Some(e.request), e.first_response, e.last_response]
            .into_iter()
            .flatten()
            .map(|s| s.ts_ns)
    });
    let (first_ns, last_ns) =
        times.fold((i64::MAX, i64::MIN), |(lo, hi), t| (lo.min(t), hi.max(t)));
    CaptureSpan { first_ns, last_ns }
}

/// Which exchange of the other capture each one was matched with.
struct Matches {
    of_client: Vec<Option<(usize, MatchedBy)>>,
    of_server: Vec<Option<usize>>,
}

impl Matches {
    fn new(clients: usize, servers: usize) -> Self {
        Matches {
            of_client: vec![None; clients],
            of_server: vec![None; servers],
        }
    }

    fn pair(&mut self, c: usize, s: usize, by: MatchedBy) {
        self.of_client[c] = Some((s, by));
        self.of_server[s] = Some(c);
    }
}

/// Same 4-tuple, same sequence number of the first byte, same payload: the same request, in capture
/// order when a request was recorded twice.
fn match_by_sequence(
    client: &[Exchange],
    server: &[Exchange],
    client_order: &[usize],
    server_order: &[usize],
    matches: &mut Matches,
) {
    let mut by_key: HashMap<(Endpoint, Endpoint, u32), Vec<usize>> = HashMap::new();
    for &s in server_order {
        if let Some(seq) = server[s].request_seq {
            by_key
                .entry((server[s].client, server[s].server, seq))
                .or_default()
                .push(s);
        }
    }
    for &c in client_order {
        let e = &client[c];
        let Some(seq) = e.request_seq else { continue };
        let Some(candidates) = by_key.get(&(e.client, e.server, seq)) else {
            continue;
        };
        let found = candidates
            .iter()
            .copied()
            .find(|&s| matches.of_server[s].is_none() && server[s].request_hash == e.request_hash);
        if let Some(s) = found {
            matches.pair(c, s, MatchedBy::Sequence);
        }
    }
}

/// Connections paired between the captures, and the counts for the report.
struct Pairing {
    /// Client connection -> server connection.
    of_client: HashMap<ConnectionKey, ConnectionKey>,
    counts: ConnectionPairing,
}

/// Pairs connections by their requests and matches the requests left over, by payload in time order.
///
/// Connections already paired by sequence numbers keep their partner (the one most of their matched
/// requests went to); the others are taken in the order of their first request, each pairing with the
/// still unpaired server connection that carries the most of its requests' payloads in order (the
/// earliest on a tie, so that identical sessions pair in the order they began).
fn match_by_payload(
    client: &[Exchange],
    server: &[Exchange],
    client_order: &[usize],
    server_order: &[usize],
    matches: &mut Matches,
) -> Pairing {
    let client_conns = group_by_connection(client, client_order);
    let server_conns = group_by_connection(server, server_order);

    // Partners from the sequence matches: per client connection, the server connection with most of them.
    let mut votes: BTreeMap<(ConnectionKey, ConnectionKey), u64> = BTreeMap::new();
    for (c, m) in matches.of_client.iter().enumerate() {
        if let Some((s, _)) = m {
            *votes
                .entry((connection_of(&client[c]), connection_of(&server[*s])))
                .or_default() += 1;
        }
    }
    let mut of_client: HashMap<ConnectionKey, ConnectionKey> = HashMap::new();
    let mut taken: HashMap<ConnectionKey, ConnectionKey> = HashMap::new();
    let mut ranked: Vec<_> = votes.into_iter().collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    for ((cc, sc), _) in ranked {
        if !of_client.contains_key(&cc) && !taken.contains_key(&sc) {
            of_client.insert(cc, sc);
            taken.insert(sc, cc);
        }
    }

    // Server connections by the payloads of their unmatched requests, for finding partners.
    let mut carriers: HashMap<u64, Vec<usize>> = HashMap::new();
    for (k, (_, members)) in server_conns.iter().enumerate() {
        for &s in members {
            if matches.of_server[s].is_none() {
                let list = carriers.entry(server[s].request_hash).or_default();
                if list.last() != Some(&k) {
                    list.push(k);
                }
            }
        }
    }
    let server_index: HashMap<ConnectionKey, usize> = server_conns
        .iter()
        .enumerate()
        .map(|(k, (key, _))| (*key, k))
        .collect();

    for (cc, members) in &client_conns {
        let left: Vec<usize> = members
            .iter()
            .copied()
            .filter(|&c| matches.of_client[c].is_none())
            .collect();
        if left.is_empty() {
            continue;
        }
        if let Some(sc) = of_client.get(cc) {
            if let Some(&k) = server_index.get(sc) {
                align(client, server, &left, &server_conns[k].1, matches);
            }
            continue;
        }
        let is_open = |k: &usize| !taken.contains_key(&server_conns[*k].0);
        let candidates = candidates(client, &left, &carriers, is_open);
        let mut best: Option<(usize, Vec<(usize, usize)>)> = None;
        for k in candidates {
            let found = alignment(client, server, &left, &server_conns[k].1, matches);
            if found.len() > best.as_ref().map_or(0, |(_, f)| f.len()) {
                best = Some((k, found));
            }
        }
        if let Some((k, found)) = best {
            for (c, s) in found {
                matches.pair(c, s, MatchedBy::Payload);
            }
            let sc = server_conns[k].0;
            of_client.insert(*cc, sc);
            taken.insert(sc, *cc);
        }
    }

    let paired = of_client.len() as u64;
    Pairing {
        counts: ConnectionPairing {
            paired,
            client_only: client_conns.len() as u64 - paired,
            server_only: server_conns.len() as u64 - paired,
        },
        of_client,
    }
}

/// The unpaired server connections worth aligning with a client connection's requests `left`: those that
/// carry its rarer payloads, by how rare the payloads they share are (a payload every connection sends,
/// `SELECT 1` or a ping, says little), the best few; when every payload is that common, the earliest few
/// unpaired carriers of its first request's payload (identical sessions pair in the order they began).
fn candidates(
    client: &[Exchange],
    left: &[usize],
    carriers: &HashMap<u64, Vec<usize>>,
    is_open: impl Fn(&usize) -> bool,
) -> Vec<usize> {
    let mut hashes: Vec<u64> = left.iter().map(|&c| client[c].request_hash).collect();
    hashes.sort_unstable();
    hashes.dedup();
    let mut score: BTreeMap<usize, f64> = BTreeMap::new();
    for h in &hashes {
        let Some(list) = carriers.get(h) else {
            continue;
        };
        if list.len() <= COMPARE_COMMON_PAYLOAD_CONNECTIONS {
            for k in list.iter().filter(|k| is_open(k)) {
                *score.entry(*k).or_default() += 1.0 / list.len() as f64;
            }
        }
    }
    if score.is_empty() {
        let first = left.first().map(|&c| client[c].request_hash);
        return first
            .and_then(|h| carriers.get(&h))
            .map(|list| {
                list.iter()
                    .copied()
                    .filter(|k| is_open(k))
                    .take(COMPARE_CANDIDATE_CONNECTIONS)
                    .collect()
            })
            .unwrap_or_default();
    }
    let mut ranked: Vec<(usize, f64)> = score.into_iter().collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut best: Vec<usize> = ranked
        .into_iter()
        .take(COMPARE_CANDIDATE_CONNECTIONS)
        .map(|(k, _)| k)
        .collect();
    best.sort_unstable();
    best
}

/// Connections in the order of their first request, each with its requests in time order.
fn group_by_connection(
    exchanges: &[Exchange],
    order: &[usize],
) -> Vec<(ConnectionKey, Vec<usize>)> {
    let mut index: HashMap<ConnectionKey, usize> = HashMap::new();
    let mut out: Vec<(ConnectionKey, Vec<usize>)> = Vec::new();
    for &i in order {
        let key = connection_of(&exchanges[i]);
        let k = *index.entry(key).or_insert_with(|| {
            out.push((key, Vec::new()));
            out.len() - 1
        });
        out[k].1.push(i);
    }
    out
}

/// Matches `left` (client requests of one connection, in time order) with the unmatched requests of
/// `members` (a server connection's, in time order) and records the matches.
fn align(
    client: &[Exchange],
    server: &[Exchange],
    left: &[usize],
    members: &[usize],
    matches: &mut Matches,
) {
    for (c, s) in alignment(client, server, left, members, matches) {
        matches.pair(c, s, MatchedBy::Payload);
    }
}

/// Requests of one connection matched in order with a connection of the other capture: each client
/// request takes the next unmatched server request with its payload within a short look-ahead, so that
/// requests one capture missed are stepped over without losing the order.
fn alignment(
    client: &[Exchange],
    server: &[Exchange],
    left: &[usize],
    members: &[usize],
    matches: &Matches,
) -> Vec<(usize, usize)> {
    let open: Vec<usize> = members
        .iter()
        .copied()
        .filter(|&s| matches.of_server[s].is_none())
        .collect();
    let mut next = 0;
    let mut found = Vec::new();
    for &c in left {
        let window = open
            .get(next..)
            .unwrap_or(&[])
            .iter()
            .take(COMPARE_PAYLOAD_LOOKAHEAD);
        if let Some(pos) = window
            .enumerate()
            .find(|(_, &s)| server[s].request_hash == client[c].request_hash)
            .map(|(pos, _)| pos)
        {
            found.push((c, open[next + pos]));
            next += pos + 1;
        }
    }
    found
}

/// The clock alignment in use: `θ(t) = offset + drift · (t - reference)`, t on the client's clock.
struct Clock {
    alignment: ClockAlignment,
    offset_ns: f64,
    drift: f64,
    reference_ns: i64,
    known: bool,
}

impl Clock {
    /// Server clock minus client clock at client time `t`.
    fn offset_at(&self, t: i64) -> i64 {
        let dt = t.saturating_sub(self.reference_ns) as f64;
        (self.offset_ns + self.drift * dt).round() as i64
    }

    fn to_server(&self, client_ns: i64) -> i64 {
        client_ns.saturating_add(self.offset_at(client_ns))
    }

    fn to_client(&self, server_ns: i64) -> i64 {
        let guess = server_ns.saturating_sub(self.offset_ns.round() as i64);
        server_ns.saturating_sub(self.offset_at(guess))
    }
}

/// One matched pair's bounds on the offset: `lower <= θ <= upper`, at client time `t`.
struct Bound {
    t: i64,
    upper: i64,
    lower: Option<i64>,
}

fn bounds_of(
    client: &[Exchange],
    server: &[Exchange],
    found: &[(usize, usize, MatchedBy)],
) -> Vec<Bound> {
    found
        .iter()
        .map(|&(c, s, _)| {
            let (c, s) = (&client[c], &server[s]);
            // Any response segment left the server no earlier than its first byte, and the last byte's
            // first transmission no later than any arrival of it.
            let first = s
                .first_response
                .zip(c.first_response)
                .map(|(s, c)| s.ts_ns.saturating_sub(c.ts_ns));
            let last = s
                .last_response
                .zip(c.last_response)
                .map(|(s, c)| s.ts_ns.saturating_sub(c.ts_ns));
            Bound {
                t: c.request.ts_ns,
                upper: s.request.ts_ns.saturating_sub(c.request.ts_ns),
                lower: first.max(last),
            }
        })
        .collect()
}

/// The tightest bounds over all pairs once a drift of `drift` (ns per ns) is taken out.
fn envelope(bounds: &[Bound], drift: f64, reference: i64) -> Option<(f64, f64)> {
    let mut lo = f64::NEG_INFINITY;
    let mut hi = f64::INFINITY;
    let mut lower_seen = false;
    for b in bounds {
        let trend = drift * b.t.saturating_sub(reference) as f64;
        hi = hi.min(b.upper as f64 - trend);
        if let Some(lower) = b.lower {
            lo = lo.max(lower as f64 - trend);
            lower_seen = true;
        }
    }
    (lower_seen && hi.is_finite()).then_some((lo, hi))
}

/// The slope through the middles of the bounds of successive time windows (least squares), when at least
/// three windows hold a bound from each side.
fn window_drift(bounds: &[Bound], reference: i64) -> Option<f64> {
    let first = bounds.iter().map(|b| b.t).min()?;
    let last = bounds.iter().map(|b| b.t).max()?;
    let span = last.saturating_sub(first);
    if span <= 0 {
        return None;
    }
    let windows = COMPARE_CLOCK_WINDOWS as i64;
    let mut cells: Vec<(f64, f64, f64, u64)> =
        vec![(f64::NEG_INFINITY, f64::INFINITY, 0.0, 0); COMPARE_CLOCK_WINDOWS];
    for b in bounds {
        let w = ((i128::from(b.t.saturating_sub(first)) * i128::from(windows))
            / (i128::from(span) + 1))
            .clamp(0, i128::from(windows) - 1) as usize;
        let cell = &mut cells[w];
        cell.1 = cell.1.min(b.upper as f64);
        if let Some(lower) = b.lower {
            cell.0 = cell.0.max(lower as f64);
        }
        cell.2 += b.t.saturating_sub(reference) as f64;
        cell.3 += 1;
    }
    let points: Vec<(f64, f64)> = cells
        .iter()
        .filter(|c| c.0.is_finite() && c.1.is_finite() && c.3 > 0)
        .map(|c| (c.2 / c.3 as f64, (c.0 + c.1) / 2.0))
        .collect();
    if points.len() < 3 {
        return None;
    }
    let n = points.len() as f64;
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    (sxx > 0.0).then(|| sxy / sxx).filter(|d| d.is_finite())
}

fn align_clocks(
    client: &[Exchange],
    server: &[Exchange],
    found: &[(usize, usize, MatchedBy)],
    policy: ClockPolicy,
) -> Clock {
    let reference_ns = found
        .first()
        .map_or(0, |&(c, _, _)| client[c].request.ts_ns);
    let reference = (!found.is_empty()).then(|| reference_ns as f64 / 1e9);
    if let ClockPolicy::Known { offset_ns } = policy {
        return Clock {
            alignment: ClockAlignment {
                basis: ClockBasis::Given,
                offset_us: Some(offset_ns as f64 / 1e3),
                reference,
                drift_ppm: None,
                uncertainty_us: None,
                consistent: true,
                pairs: 0,
            },
            offset_ns: offset_ns as f64,
            drift: 0.0,
            reference_ns,
            known: true,
        };
    }
    let bounds = bounds_of(client, server, found);
    let unknown = Clock {
        alignment: ClockAlignment {
            basis: ClockBasis::Unknown,
            offset_us: None,
            reference: None,
            drift_ppm: None,
            uncertainty_us: None,
            consistent: true,
            pairs: 0,
        },
        offset_ns: 0.0,
        drift: 0.0,
        reference_ns,
        known: false,
    };
    let Some((lo, hi)) = envelope(&bounds, 0.0, reference_ns) else {
        return unknown;
    };
    let mut fit = (lo, hi, 0.0);
    if lo > hi {
        // No single offset fits every pair: try a clock that runs at another rate.
        if let Some(drift) = window_drift(&bounds, reference_ns) {
            if let Some((lo2, hi2)) = envelope(&bounds, drift, reference_ns) {
                if lo2 - hi2 < lo - hi {
                    fit = (lo2, hi2, drift);
                }
            }
        }
    }
    let (lo, hi, drift) = fit;
    let consistent = lo <= hi;
    let offset_ns = (lo + hi) / 2.0;
    Clock {
        alignment: ClockAlignment {
            basis: ClockBasis::Estimated,
            offset_us: Some(offset_ns / 1e3),
            reference,
            drift_ppm: (drift != 0.0).then_some(drift * 1e6),
            uncertainty_us: consistent.then_some((hi - lo) / 2.0 / 1e3),
            consistent,
            pairs: bounds.iter().filter(|b| b.lower.is_some()).count() as u64,
        },
        offset_ns,
        drift,
        reference_ns,
        known: true,
    }
}

fn measure(
    c: &Exchange,
    s: &Exchange,
    ci: usize,
    si: usize,
    by: MatchedBy,
    clock: &Clock,
) -> MatchedPair {
    let rt = |e: &Exchange| {
        e.last_response
            .and_then(|end| plausible_response_time(e.request.ts_ns, end.ts_ns))
    };
    let theta = clock.known.then(|| clock.offset_at(c.request.ts_ns));
    MatchedPair {
        client: ci,
        server: si,
        matched_by: by,
        client_rt_ns: rt(c),
        server_rt_ns: rt(s),
        request_path_ns: theta.map(|theta| {
            s.request
                .ts_ns
                .saturating_sub(theta)
                .saturating_sub(c.request.ts_ns)
        }),
        response_path_ns: theta.and_then(|theta| {
            let (cl, sl) = (c.last_response?, s.last_response?);
            Some(cl.ts_ns.saturating_sub(sl.ts_ns.saturating_sub(theta)))
        }),
    }
}

/// Summed path time over summed client time.
fn share<'a>(pairs: impl Iterator<Item = &'a MatchedPair>) -> Option<f64> {
    let (mut path, mut total) = (0i128, 0i128);
    for p in pairs {
        if let (Some(c), Some(d)) = (p.client_rt_ns, p.path_ns()) {
            total += i128::from(c);
            path += i128::from(d);
        }
    }
    (total > 0).then(|| (path as f64 / total as f64).clamp(0.0, 1.0))
}

fn humps_of(values_ns: impl Iterator<Item = u64>) -> Vec<Mode> {
    let mut h = Histogram::default();
    for v in values_ns {
        h.add(v);
    }
    detect_modes(&h).modes
}

/// What the server and the path took of the transactions in a client hump (those in its histogram bins).
fn client_hump(
    mode: Mode,
    client: &[Exchange],
    server: &[Exchange],
    pairs: &[MatchedPair],
) -> ClientHump {
    let members: Vec<&MatchedPair> = pairs
        .iter()
        .filter(|p| p.server_rt_ns.is_some())
        .filter(|p| p.client_rt_ns.is_some_and(|rt| mode.holds(rt)))
        .collect();
    let mut server_rt: Vec<i64> = members
        .iter()
        .filter_map(|p| p.server_rt_ns)
        .map(|v| v as i64)
        .collect();
    let mut path: Vec<i64> = members.iter().filter_map(|p| p.path_ns()).collect();
    let resent = members
        .iter()
        .filter(|p| {
            client[p.client].response_retransmitted || server[p.server].response_retransmitted
        })
        .count();
    ClientHump {
        server_rt_p50_us: exact_summary_us(&mut server_rt).p50,
        path_p50_us: exact_summary_us(&mut path).p50,
        retransmitted_share: if members.is_empty() {
            0.0
        } else {
            resent as f64 / members.len() as f64
        },
        mode,
    }
}

fn per_interval(
    client: &[Exchange],
    pairs: &[MatchedPair],
    interval_ns: i64,
) -> Vec<IntervalComparison> {
    let mut rows: BTreeMap<i64, Vec<&MatchedPair>> = BTreeMap::new();
    for p in pairs {
        if p.client_rt_ns.is_some() && p.server_rt_ns.is_some() {
            let start = client[p.client]
                .request
                .ts_ns
                .div_euclid(interval_ns)
                .saturating_mul(interval_ns);
            rows.entry(start).or_default().push(p);
        }
    }
    rows.into_iter()
        .map(|(start, members)| {
            let mut c: Vec<i64> = members
                .iter()
                .filter_map(|p| p.client_rt_ns)
                .map(|v| v as i64)
                .collect();
            let mut s: Vec<i64> = members
                .iter()
                .filter_map(|p| p.server_rt_ns)
                .map(|v| v as i64)
                .collect();
            let mut d: Vec<i64> = members.iter().filter_map(|p| p.path_ns()).collect();
            let (c, s, d) = (
                exact_summary_us(&mut c),
                exact_summary_us(&mut s),
                exact_summary_us(&mut d),
            );
            IntervalComparison {
                start: start as f64 / 1e9,
                count: members.len() as u64,
                client_rt_mean_us: c.mean,
                client_rt_p95_us: c.p95,
                server_rt_mean_us: s.mean,
                server_rt_p95_us: s.p95,
                path_mean_us: d.mean,
                path_share: share(members.into_iter()),
            }
        })
        .collect()
}

#[allow(clippy::too_many_arguments)]
fn notables(
    client: &[Exchange],
    server: &[Exchange],
    pairs: &[MatchedPair],
    matches: &Matches,
    pairing: &Pairing,
    clock: &Clock,
    client_span: CaptureSpan,
    server_span: CaptureSpan,
    typical_response_path_us: f64,
    limit: usize,
) -> (Vec<Notable>, NotableCounts) {
    let late_ns =
        COMPARE_LATE_MIN_NS.max((typical_response_path_us * 1e3 * COMPARE_LATE_FACTOR) as i64);
    let us = |ns: u64| ns as f64 / 1e3;
    let mut found: Vec<(i64, u64, Notable)> = Vec::new();
    let mut note =
        |c: &Exchange, s: Option<&Exchange>, kind, detail: String, p: Option<&MatchedPair>| {
            found.push((
                c.request.ts_ns,
                c.request.frame,
                Notable {
                    kind,
                    at: c.request.ts_ns as f64 / 1e9,
                    command: c.command.name(),
                    statement: c.statement.clone(),
                    client_capture: CapturedAs::of(c),
                    server_capture: s.map(CapturedAs::of),
                    client_rt_us: p.and_then(|p| p.client_rt_ns).map(us),
                    server_rt_us: p.and_then(|p| p.server_rt_ns).map(us),
                    detail,
                },
            ));
        };
    for p in pairs {
        let (c, s) = (&client[p.client], &server[p.server]);
        let server_sent = s.last_response.zip(p.server_rt_ns);
        match (server_sent, c.last_response) {
            (Some((sent, server_rt)), None) => {
                let at_client = clock.to_client(sent.ts_ns);
                if at_client <= client_span.last_ns {
                    let detail = format!(
                        "the server answered in {} (server frame {}); the client capture, running {} longer, never saw the response complete",
                        duration_us(us(server_rt)),
                        sent.frame,
                        duration_us(us(client_span.last_ns.saturating_sub(at_client).max(0) as u64)),
                    );
                    note(c, Some(s), NotableKind::ResponseNeverSeen, detail, Some(p));
                }
            }
            (Some((sent, server_rt)), Some(got)) => {
                let retransmitted_at = match (s.response_retransmitted, c.response_retransmitted) {
                    (true, true) => Some("both captures"),
                    (true, false) => Some("the server"),
                    (false, true) => Some("the client"),
                    (false, false) => None,
                };
                let way_back = p
                    .response_path_ns
                    .map(|ns| {
                        format!(
                            "; its last byte reached the client {} after the server sent it",
                            duration_us(ns as f64 / 1e3)
                        )
                    })
                    .unwrap_or_default();
                let client_rt = p
                    .client_rt_ns
                    .map(|ns| duration_us(us(ns)))
                    .unwrap_or_default();
                if let Some(where_) = retransmitted_at {
                    let detail = format!(
                        "the server answered in {} (server frame {}), the client waited {} (client frame {}): the response was retransmitted (seen at {}){}",
                        duration_us(us(server_rt)),
                        sent.frame,
                        client_rt,
                        got.frame,
                        where_,
                        way_back,
                    );
                    note(
                        c,
                        Some(s),
                        NotableKind::ResponseRetransmitted,
                        detail,
                        Some(p),
                    );
                } else if p.response_path_ns.is_some_and(|ns| ns >= late_ns) {
                    let detail = format!(
                        "the server answered in {} (server frame {}), the client waited {} (client frame {}){}, with no retransmission seen (responses usually took {})",
                        duration_us(us(server_rt)),
                        sent.frame,
                        client_rt,
                        got.frame,
                        way_back,
                        duration_us(typical_response_path_us),
                    );
                    note(c, Some(s), NotableKind::ResponseLate, detail, Some(p));
                }
            }
            _ => {}
        }
    }
    for (i, c) in client.iter().enumerate() {
        if matches.of_client[i].is_some() || !pairing.of_client.contains_key(&connection_of(c)) {
            continue;
        }
        let at_server = clock.to_server(c.request.ts_ns);
        if server_span.contains(at_server) {
            let (sc, ss, _) = pairing.of_client[&connection_of(c)];
            let detail = format!(
                "the client sent it (client frame {}); the server capture follows the connection as {sc} -> {ss} and has no such request",
                c.request.frame
            );
            note(c, None, NotableKind::RequestNeverSeen, detail, None);
        }
    }
    found.sort_by_key(|a| (a.0, a.1, a.2.kind));
    let mut counts = NotableCounts::default();
    for (_, _, n) in &found {
        counts.add(n.kind);
    }
    let list = found.into_iter().take(limit).map(|(_, _, n)| n).collect();
    (list, counts)
}

/// Where the time went, in words.
fn verdict(cmp: &Comparison) -> String {
    if cmp.matched == 0 {
        return format!(
            "No request was found in both captures ({} in the client capture, {} in the server capture): \
             they do not hold the same traffic, or do not overlap in time.",
            cmp.unmatched_client, cmp.unmatched_server
        );
    }
    let (c, s, d) = (&cmp.client_rt_us, &cmp.server_rt_us, &cmp.path_us);
    if c.count == 0 {
        return format!(
            "{} requests were found in both captures, but none was answered at both points.",
            cmp.matched
        );
    }
    let share = cmp.path_share.unwrap_or(0.0);
    let mut out = if share >= COMPARE_PATH_SHARE {
        format!(
            "The path took the time: the server answered in {} (p50) while the client waited {} (p50); \
             on average the path added {} of the client's {} ({})",
            duration_us(s.p50),
            duration_us(c.p50),
            duration_us(d.mean),
            duration_us(c.mean),
            percent(share)
        )
    } else if share <= 1.0 - COMPARE_PATH_SHARE {
        format!(
            "The server took the time: it answered in {} (p50, mean {}) and the client waited {} (p50, mean {}); \
             the path added {} on average ({} of the client's time)",
            duration_us(s.p50),
            duration_us(s.mean),
            duration_us(c.p50),
            duration_us(c.mean),
            duration_us(d.mean),
            percent(share)
        )
    } else {
        format!(
            "The server and the path shared the time: the server answered in {} (p50, mean {}) and the client \
             waited {} (p50, mean {}); the path added {} on average ({} of the client's time)",
            duration_us(s.p50),
            duration_us(s.mean),
            duration_us(c.p50),
            duration_us(c.mean),
            duration_us(d.mean),
            percent(share)
        )
    };
    let (rq, rs) = (&cmp.request_path_us, &cmp.response_path_us);
    if share > 1.0 - COMPARE_PATH_SHARE && rq.count > 0 && rs.count > 0 {
        let (way, more, less) = if rs.mean >= rq.mean {
            ("server->client", rs, rq)
        } else {
            ("client->server", rq, rs)
        };
        // The split between the ways rests on the clock alignment: say how well it is known, and when the
        // smaller way is within it (a path slower one way than the other puts the estimate off by up to
        // its uncertainty).
        let uncertainty = cmp
            .clock
            .uncertainty_us
            .filter(|_| cmp.clock.basis == ClockBasis::Estimated);
        out += &match uncertainty {
            Some(u) if less.mean <= u => format!(
                ", mostly on the {way} side ({} on average; the other way's {} is within the clocks' alignment, ±{})",
                duration_us(more.mean),
                duration_us(less.mean),
                duration_us(u)
            ),
            Some(u) => format!(
                ", mostly on the {way} side ({} on average, the other way {}; the clocks are aligned to ±{})",
                duration_us(more.mean),
                duration_us(less.mean),
                duration_us(u)
            ),
            None => format!(
                ", mostly on the {way} side ({} on average, the other way {})",
                duration_us(more.mean),
                duration_us(less.mean)
            ),
        };
    }
    out.push('.');

    // Each hump of the client's response times with the server's part of the same transactions: a hump
    // the server also shows keeps its place, one the path made has a small server part.
    let humps = &cmp.humps;
    if humps.client.len() > 1 || humps.server.len() > 1 {
        let described: Vec<String> = humps
            .client
            .iter()
            .map(|h| {
                let resent = if h.retransmitted_share >= 0.5 {
                    format!(
                        "; {:.0}% of its responses retransmitted",
                        h.retransmitted_share * 100.0
                    )
                } else {
                    String::new()
                };
                format!(
                    "~{} ({:.0}%; the server's part {}{resent})",
                    duration_us(h.mode.center_us),
                    h.mode.share * 100.0,
                    duration_us(h.server_rt_p50_us),
                )
            })
            .collect();
        let server: Vec<String> = humps
            .server
            .iter()
            .map(|m| format!("~{} ({:.0}%)", duration_us(m.center_us), m.share * 100.0))
            .collect();
        out += &format!(
            " Client RT humps: {}; server RT humps: {}.",
            described.join(", "),
            server.join(", ")
        );
    }
    let n = &cmp.notable_counts;
    let mut named = Vec::new();
    if n.response_retransmitted > 0 {
        named.push(format!(
            "{} retransmitted on the way to the client",
            crate::units::counted(n.response_retransmitted, "response", "responses")
        ));
    }
    if n.response_late > 0 {
        named.push(format!(
            "{} late without a retransmission seen",
            crate::units::counted(n.response_late, "response", "responses")
        ));
    }
    if n.response_never_seen > 0 {
        named.push(format!(
            "{} the client never saw",
            crate::units::counted(n.response_never_seen, "response", "responses")
        ));
    }
    if n.request_never_seen > 0 {
        named.push(format!(
            "{} the server never saw",
            crate::units::counted(n.request_never_seen, "request", "requests")
        ));
    }
    if !named.is_empty() {
        out += &format!(" Notable: {}.", named.join("; "));
    }
    if !cmp.clock.consistent {
        out += " The clocks could not be aligned consistently (a clock stepped, or requests were matched \
                wrongly): the request and response paths are unreliable.";
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MS: i64 = 1_000_000;
    const US: i64 = 1_000;
    /// 2026-11-25 17:10:37 UTC, when the lab pairs were recorded.
    const T0: i64 = 1_795_626_637 * 1_000_000_000;

    fn ep(s: &str) -> Endpoint {
        s.parse().unwrap()
    }

    /// One exchange: `(frame, ns after T0)` for the request and the response's last byte (also its first).
    fn exchange(
        client: &str,
        server: &str,
        seq: Option<u32>,
        hash: u64,
        request: (u64, i64),
        response: Option<(u64, i64)>,
    ) -> Exchange {
        let seen = |(frame, ns): (u64, i64)| Seen {
            frame,
            ts_ns: T0 + ns,
        };
        Exchange {
            client: ep(client),
            server: ep(server),
            connection: 0,
            request_seq: seq,
            request_hash: hash,
            command: Command::Query,
            statement: Some(format!("select {hash}")),
            request: seen(request),
            first_response: response.map(seen),
            last_response: response.map(seen),
            response_retransmitted: false,
        }
    }

    /// The same transactions at both points of a path with no NAT, on one clock: request path `up`,
    /// server time `serve`, response path `down` (each per transaction), requests 10 ms apart.
    fn same_clock(
        n: usize,
        up: i64,
        serve: &[i64],
        down: &[i64],
    ) -> (Vec<Exchange>, Vec<Exchange>) {
        let (mut client, mut server) = (Vec::new(), Vec::new());
        for i in 0..n {
            let t = i as i64 * 10 * MS;
            let (s, d) = (serve[i % serve.len()], down[i % down.len()]);
            let f = 2 * i as u64 + 1;
            let seq = Some(1000 + 40 * i as u32);
            client.push(exchange(
                "10.77.1.2:50000",
                "10.77.0.1:3306",
                seq,
                i as u64,
                (f, t),
                Some((f + 1, t + up + s + d)),
            ));
            server.push(exchange(
                "10.77.1.2:50000",
                "10.77.0.1:3306",
                seq,
                i as u64,
                (f, t + up),
                Some((f + 1, t + up + s)),
            ));
        }
        (client, server)
    }

    #[test]
    fn the_same_4_tuple_and_sequence_number_match_and_the_time_splits_into_server_and_path() {
        let (client, server) = same_clock(3, 10 * US, &[100 * US, 200 * US, 300 * US], &[4 * MS]);
        let cmp = compare(&client, &server, &CompareOptions::default());
        assert_eq!(
            (
                cmp.matched,
                cmp.matched_by_sequence,
                cmp.unmatched_client,
                cmp.unmatched_server
            ),
            (3, 3, 0, 0)
        );
        assert_eq!(cmp.server_rt_us.p50, 200.0);
        assert_eq!(cmp.client_rt_us.p50, 4210.0);
        assert_eq!(cmp.path_us.count, 3);
        assert_eq!((cmp.path_us.p50, cmp.path_us.max), (4010.0, 4010.0));
        // The offset lies between minus the fastest response path and the fastest request path.
        let clock = cmp.clock;
        assert_eq!(clock.basis, ClockBasis::Estimated);
        assert_eq!(clock.offset_us, Some((10.0 - 4000.0) / 2.0));
        assert_eq!(clock.uncertainty_us, Some((10.0 + 4000.0) / 2.0));
        assert!(clock.consistent && clock.drift_ppm.is_none());
        // The split between the ways follows that estimate; the sum does not depend on it.
        assert_eq!(cmp.request_path_us.p50 + cmp.response_path_us.p50, 4010.0);
        assert_eq!(
            cmp.connections,
            ConnectionPairing {
                paired: 1,
                client_only: 0,
                server_only: 0
            }
        );
        let share = cmp.path_share.unwrap();
        assert!((share - 12030.0 / 12630.0).abs() < 1e-9, "{share}");
    }

    #[test]
    fn a_proxy_that_changes_every_address_and_sequence_number_is_crossed_by_payload() {
        // Two client connections to a proxy at 10.0.0.9:6033; the server sees them from the proxy's own
        // ports, with other sequence numbers, 1 ms later, and the proxy adds a health check of its own.
        let mut client = Vec::new();
        let mut server = Vec::new();
        let mut f = 0;
        let mut frame = || {
            f += 1;
            f
        };
        for (i, (cport, pport)) in [(50001u16, 40001u16), (50002, 40002)]
            .into_iter()
            .enumerate()
        {
            let c = format!("10.0.0.5:{cport}");
            let p = format!("10.0.0.9:{pport}");
            server.push(exchange(
                &p,
                "10.0.1.1:3306",
                Some(7),
                999,
                (frame(), i as i64 * MS),
                Some((frame(), i as i64 * MS + 50 * US)),
            ));
            for k in 0..4u64 {
                let t = (10 + 5 * k as i64 + i as i64) * MS;
                // Connection 2 repeats connection 1's statements: only the order tells them apart.
                client.push(exchange(
                    &c,
                    "10.0.0.9:6033",
                    Some(100 + k as u32),
                    k,
                    (frame(), t),
                    Some((frame(), t + 3 * MS)),
                ));
                server.push(exchange(
                    &p,
                    "10.0.1.1:3306",
                    Some(9000 + k as u32),
                    k,
                    (frame(), t + MS),
                    Some((frame(), t + MS + 500 * US)),
                ));
            }
        }
        let cmp = compare(&client, &server, &CompareOptions::default());
        assert_eq!(
            (cmp.matched, cmp.matched_by_payload, cmp.matched_by_sequence),
            (8, 8, 0)
        );
        assert_eq!((cmp.unmatched_client, cmp.unmatched_server), (0, 2));
        assert_eq!(
            cmp.connections,
            ConnectionPairing {
                paired: 2,
                client_only: 0,
                server_only: 0
            }
        );
        for p in &cmp.pairs {
            let (c, s) = (&client[p.client], &server[p.server]);
            assert_eq!(c.request_hash, s.request_hash);
            assert_eq!(
                c.client.port - 50001,
                s.client.port - 40001,
                "connections paired crosswise"
            );
            assert_eq!(p.path_ns(), Some(2500 * US));
        }
        assert_eq!(cmp.server_rt_us.p50, 500.0);
        assert_eq!(cmp.path_us.p50, 2500.0);
    }

    #[test]
    fn identical_sessions_behind_a_nat_pair_in_the_order_they_began() {
        let mut client = Vec::new();
        let mut server = Vec::new();
        for i in 0..3u16 {
            let t = i64::from(i) * 100 * MS;
            client.push(exchange(
                &format!("192.168.0.2:{}", 5000 + i),
                "10.0.0.1:3306",
                Some(1),
                1,
                (u64::from(i) + 1, t),
                Some((10, t + MS)),
            ));
            server.push(exchange(
                &format!("203.0.113.7:{}", 61000 - i),
                "10.0.0.1:3306",
                Some(2),
                1,
                (u64::from(i) + 1, t + 20 * US),
                Some((10, t + 200 * US)),
            ));
        }
        let cmp = compare(&client, &server, &CompareOptions::default());
        assert_eq!(cmp.matched_by_payload, 3);
        let order: Vec<(usize, usize)> = cmp.pairs.iter().map(|p| (p.client, p.server)).collect();
        assert_eq!(order, vec![(0, 0), (1, 1), (2, 2)]);
    }

    #[test]
    fn hundreds_of_connections_behind_a_nat_pair_by_their_rare_payloads() {
        // 300 sessions, each `SELECT 1` (hash 0, in every connection), its own statement, `SELECT 1` again;
        // then 100 sessions that only ever send `SELECT 1`, one after the other.
        let (mut client, mut server) = (Vec::new(), Vec::new());
        for i in 0..400u16 {
            let t = i64::from(i) * 3 * MS;
            let hashes: &[u64] = if i < 300 {
                &[0, 1000 + i as u64, 0]
            } else {
                &[0]
            };
            for (k, &h) in hashes.iter().enumerate() {
                let at = t + k as i64 * 100 * US;
                let f = u64::from(i) * 10 + k as u64;
                client.push(exchange(
                    &format!("192.168.0.2:{}", 20000 + i),
                    "10.0.0.1:3306",
                    Some(1),
                    h,
                    (f, at),
                    Some((f, at + MS)),
                ));
                server.push(exchange(
                    &format!("203.0.113.7:{}", 60000 - i),
                    "10.0.0.1:3306",
                    Some(9),
                    h,
                    (f, at + 10 * US),
                    Some((f, at + 200 * US)),
                ));
            }
        }
        let cmp = compare(&client, &server, &CompareOptions::default());
        assert_eq!((cmp.matched, cmp.matched_by_payload), (1000, 1000));
        assert_eq!(cmp.connections.paired, 400);
        for p in &cmp.pairs {
            assert_eq!(
                client[p.client].client.port - 20000,
                60000 - server[p.server].client.port
            );
        }
    }

    #[test]
    fn a_server_clock_5_s_ahead_is_found_within_half_the_fastest_round_trip() {
        let offset = 5_000 * MS + 123 * US;
        let (client, mut server) = same_clock(
            50,
            40 * US,
            &[100 * US, 130 * US, 90 * US],
            &[60 * US, 80 * US, 300 * US],
        );
        for e in &mut server {
            for s in [
                Some(&mut e.request),
                e.first_response.as_mut(),
                e.last_response.as_mut(),
            ]
            .into_iter()
            .flatten()
            {
                s.ts_ns += offset;
            }
        }
        let cmp = compare(&client, &server, &CompareOptions::default());
        let est = cmp.clock_offset_us.unwrap();
        let bound = cmp.clock.uncertainty_us.unwrap();
        assert_eq!(bound, (40.0 + 60.0) / 2.0, "half the fastest round trip");
        assert!(
            (est - offset as f64 / 1e3).abs() <= bound,
            "{est} vs {offset}"
        );
        // Asymmetric fastest ways (40 µs up, 60 µs down): the middle is 10 µs off, inside the bound.
        assert_eq!(est, offset as f64 / 1e3 - 10.0);
        assert_eq!(cmp.request_path_us.p50, 50.0);
        assert_eq!(cmp.path_us.p50, 120.0);
        assert_eq!(cmp.outside_other_capture, OutsideOtherCapture::default());
    }

    #[test]
    fn a_clock_running_50_ppm_fast_is_fitted_when_no_single_offset_fits() {
        // 100 s of requests, 200 ms apart; the server's clock gains 5 ms over them, far more than the
        // 100 µs round trip.
        let (mut client, mut server) = (Vec::new(), Vec::new());
        for i in 0..500u64 {
            let t = i as i64 * 200 * MS;
            let skew = 2 * MS + t / 20_000; // 2 ms + 50 ppm
            let jitter = (i % 7) as i64 * 30 * US;
            let seq = Some(i as u32 * 50);
            client.push(exchange(
                "10.0.0.2:4000",
                "10.0.0.1:3306",
                seq,
                i,
                (i, t),
                Some((i, t + 50 * US + 200 * US + 50 * US + 2 * jitter)),
            ));
            server.push(exchange(
                "10.0.0.2:4000",
                "10.0.0.1:3306",
                seq,
                i,
                (i, t + 50 * US + jitter + skew),
                Some((i, t + 50 * US + jitter + 200 * US + skew)),
            ));
        }
        let cmp = compare(&client, &server, &CompareOptions::default());
        let drift = cmp.clock.drift_ppm.expect("a drift");
        assert!((drift - 50.0).abs() < 2.0, "{drift}");
        assert!(cmp.clock.consistent);
        let offset = cmp.clock_offset_us.unwrap();
        assert!(
            (offset - 2000.0).abs() <= cmp.clock.uncertainty_us.unwrap() + 5.0,
            "{offset}"
        );
        // With the drift taken out, every request path is near its true 50-230 µs.
        assert!(
            cmp.request_path_us.max < 400.0 && cmp.request_path_us.p50 > 0.0,
            "{:?}",
            cmp.request_path_us
        );
    }

    #[test]
    fn a_known_offset_is_used_as_given() {
        let (client, server) = same_clock(3, 10 * US, &[100 * US], &[4 * MS]);
        let opts = CompareOptions {
            clock: ClockPolicy::Known { offset_ns: 0 },
            ..CompareOptions::default()
        };
        let cmp = compare(&client, &server, &opts);
        assert_eq!(cmp.clock.basis, ClockBasis::Given);
        assert_eq!(
            (cmp.request_path_us.p50, cmp.response_path_us.p50),
            (10.0, 4000.0)
        );
    }

    #[test]
    fn notable_transactions_name_their_frames_in_both_captures() {
        let (mut client, mut server) = same_clock(8, 20 * US, &[100 * US], &[300 * US]);
        // 1: resent by the server, seen 250 ms later by the client.
        server[1].response_retransmitted = true;
        client[1].last_response.as_mut().unwrap().ts_ns += 250 * MS;
        // 3: late with no retransmission seen anywhere.
        client[3].last_response.as_mut().unwrap().ts_ns += 400 * MS;
        // 5: the client never saw the response complete, though its capture went on.
        client[5].last_response = None;
        // 6: the server never saw the request (the connection is followed there).
        server.remove(6);
        let cmp = compare(&client, &server, &CompareOptions::default());
        let kinds: Vec<(NotableKind, u64)> = cmp
            .notable
            .iter()
            .map(|n| (n.kind, n.client_capture.request_frame))
            .collect();
        assert_eq!(
            kinds,
            vec![
                (NotableKind::ResponseRetransmitted, 3),
                (NotableKind::ResponseLate, 7),
                (NotableKind::ResponseNeverSeen, 11),
                (NotableKind::RequestNeverSeen, 13),
            ]
        );
        let n = &cmp.notable[0];
        let s = n.server_capture.as_ref().unwrap();
        assert_eq!(
            (
                n.client_capture.response_frame,
                s.request_frame,
                s.response_frame
            ),
            (Some(4), 3, Some(4))
        );
        assert!(
            n.detail.contains("retransmitted (seen at the server)"),
            "{}",
            n.detail
        );
        assert!(cmp.notable[3].server_capture.is_none());
        assert_eq!(
            cmp.notable_counts,
            NotableCounts {
                response_retransmitted: 1,
                response_late: 1,
                response_never_seen: 1,
                request_never_seen: 1
            }
        );
        assert!(
            cmp.verdict.contains("1 request the server never saw"),
            "{}",
            cmp.verdict
        );
    }

    #[test]
    fn what_the_other_capture_could_not_have_seen_is_not_notable() {
        let (mut client, server) = same_clock(4, 20 * US, &[100 * US], &[300 * US]);
        // A request sent after the server capture ended, and a response after the client capture ended.
        let mut late = client[3].clone();
        late.request_seq = Some(7);
        late.request.ts_ns += 10_000 * MS;
        late.last_response = None;
        late.first_response = None;
        client.push(late);
        client[3].last_response = None;
        client[3].first_response = None;
        let opts = CompareOptions {
            client_span: Some(CaptureSpan {
                first_ns: T0,
                last_ns: T0 + 10_030 * MS,
            }),
            ..CompareOptions::default()
        };
        let mut server_only_early = server.clone();
        server_only_early.truncate(4);
        let cmp = compare(&client, &server_only_early, &opts);
        assert_eq!(cmp.unmatched_client, 1);
        assert_eq!(cmp.outside_other_capture.client, 1);
        assert_eq!(cmp.notable_counts.request_never_seen, 0);
        // client[3]'s response was sent inside the client capture's span: never seen.
        assert_eq!(cmp.notable_counts.response_never_seen, 1);
        let opts = CompareOptions {
            client_span: Some(CaptureSpan {
                first_ns: T0,
                last_ns: T0 + 30 * MS,
            }),
            ..CompareOptions::default()
        };
        let cmp = compare(&client, &server_only_early, &opts);
        assert_eq!(
            cmp.notable_counts.response_never_seen, 0,
            "sent after the client capture ended"
        );
    }

    #[test]
    fn the_verdict_blames_the_path_when_the_client_waits_and_the_server_does_not() {
        let down: Vec<i64> = (0..300)
            .map(|i| if i % 3 == 0 { 14 * MS } else { 4 * MS })
            .collect();
        let (client, server) = same_clock(300, 8 * US, &[130 * US, 120 * US, 140 * US], &down);
        let cmp = compare(&client, &server, &CompareOptions::default());
        let v = &cmp.verdict;
        assert!(
            v.starts_with("The path took the time: the server answered in 130 µs (p50)"),
            "{v}"
        );
        assert!(
            v.contains(
                "mostly on the server->client side (5.34 ms on average; the other way's 2 ms is \
                 within the clocks' alignment, ±2 ms)"
            ),
            "{v}"
        );
        assert!(v.contains("server RT humps: ~130 µs (100%)"), "{v}");
        let slow = cmp.humps.client.last().unwrap();
        assert!(
            slow.mode.center_us > 10_000.0 && slow.server_rt_p50_us == 130.0,
            "{slow:?}"
        );
        assert!(cmp.humps.client.len() >= 2, "{:?}", cmp.humps);
        assert!(cmp.path_share.unwrap() > 0.95);
    }

    #[test]
    fn the_verdict_blames_the_server_when_both_points_wait_alike() {
        let serve: Vec<i64> = (0..300)
            .map(|i| {
                if i % 3 == 0 {
                    20 * MS
                } else {
                    100 * US + (i % 5) * US
                }
            })
            .collect();
        let (client, server) = same_clock(300, 5 * US, &serve, &[6 * US, 7 * US]);
        let cmp = compare(&client, &server, &CompareOptions::default());
        let v = &cmp.verdict;
        assert!(v.starts_with("The server took the time"), "{v}");
        let slow = cmp.humps.client.last().unwrap();
        assert!(
            (slow.server_rt_p50_us - 20_000.0).abs() < 1.0 && slow.path_p50_us < 20.0,
            "{slow:?}"
        );
        assert!(v.contains("; the server's part 20 ms)"), "{v}");
        assert!(cmp.path_share.unwrap() < 0.01);
    }

    #[test]
    fn the_verdict_says_the_time_was_shared_when_neither_side_took_most_of_it() {
        let (client, server) = same_clock(100, 2 * MS, &[5 * MS], &[3 * MS]);
        let cmp = compare(&client, &server, &CompareOptions::default());
        let v = &cmp.verdict;
        assert!(
            v.starts_with("The server and the path shared the time: the server answered in 5 ms"),
            "{v}"
        );
        assert!(
            v.contains("the path added 5 ms on average (50% of the client's time)"),
            "{v}"
        );
    }

    #[test]
    fn json_names_the_fields_as_the_issue_does() {
        let (client, server) = same_clock(3, 10 * US, &[100 * US], &[MS]);
        let json =
            serde_json::to_value(compare(&client, &server, &CompareOptions::default())).unwrap();
        for key in [
            "matched",
            "unmatched_client",
            "unmatched_server",
            "clock_offset_us",
            "client_rt_us",
            "server_rt_us",
            "path_us",
            "path_share",
            "per_interval",
            "notable",
            "verdict",
        ] {
            assert!(json.get(key).is_some(), "no {key} in {json}");
        }
        for key in ["count", "mean", "p50", "p95", "p99", "max"] {
            assert!(json["path_us"].get(key).is_some(), "no path_us.{key}");
        }
        assert!(
            json.get("pairs").is_none(),
            "the pairs are for programs, not JSON"
        );
    }

    #[test]
    fn nothing_in_common_says_so() {
        let (client, _) = same_clock(2, 0, &[0], &[0]);
        let cmp = compare(&client, &[], &CompareOptions::default());
        assert_eq!((cmp.matched, cmp.unmatched_client), (0, 2));
        assert_eq!(cmp.clock.basis, ClockBasis::Unknown);
        assert!(
            cmp.verdict
                .starts_with("No request was found in both captures"),
            "{}",
            cmp.verdict
        );
        let cmp = compare(&[], &[], &CompareOptions::default());
        assert_eq!(cmp.matched, 0);
    }

    #[test]
    fn per_interval_rows_are_the_intervals_with_transactions() {
        let (client, server) = same_clock(250, 10 * US, &[100 * US], &[MS]);
        let cmp = compare(&client, &server, &CompareOptions::default());
        let counts: Vec<u64> = cmp.per_interval.iter().map(|r| r.count).collect();
        assert_eq!(counts.iter().sum::<u64>(), 250);
        assert_eq!(counts.len(), 3, "{counts:?}");
        assert!(cmp.per_interval.iter().all(|r| r.path_mean_us == 1010.0));
    }

    fn arbitrary_exchange() -> impl Strategy<Value = Exchange> {
        (
            0u16..3,
            0u16..3,
            0u64..2,
            proptest::option::of(0u32..4),
            0u64..4,
            any::<i64>(),
            proptest::option::of(any::<i64>()),
            proptest::option::of(-5i64..5),
            any::<bool>(),
        )
            .prop_map(|(c, s, conn, seq, hash, t, end, near, resent)| {
                let at = |ts_ns| Seen { frame: 1, ts_ns };
                let end = near.map(|d| t.saturating_add(d * MS)).or(end);
                Exchange {
                    client: Endpoint {
                        ip: [10, 0, 0, 2].into(),
                        port: 1000 + c,
                    },
                    server: Endpoint {
                        ip: [10, 0, 0, 1].into(),
                        port: 3306 + s,
                    },
                    connection: conn,
                    request_seq: seq,
                    request_hash: hash,
                    command: Command::Query,
                    statement: None,
                    request: at(t),
                    first_response: end.map(at),
                    last_response: end.map(at),
                    response_retransmitted: resent,
                }
            })
    }

    proptest! {
        /// Any records at all (wild timestamps, duplicates, collisions): no panic, and each request is
        /// matched at most once.
        #[test]
        fn any_records_compare_without_panic(
            client in proptest::collection::vec(arbitrary_exchange(), 0..40),
            server in proptest::collection::vec(arbitrary_exchange(), 0..40),
            interval in any::<i64>(),
        ) {
            let opts = CompareOptions { interval_ns: interval, ..CompareOptions::default() };
            let cmp = compare(&client, &server, &opts);
            prop_assert_eq!(cmp.matched as usize, cmp.pairs.len());
            let mut seen_c: Vec<usize> = cmp.pairs.iter().map(|p| p.client).collect();
            let mut seen_s: Vec<usize> = cmp.pairs.iter().map(|p| p.server).collect();
            seen_c.sort_unstable(); seen_c.dedup();
            seen_s.sort_unstable(); seen_s.dedup();
            prop_assert_eq!(seen_c.len(), cmp.pairs.len());
            prop_assert_eq!(seen_s.len(), cmp.pairs.len());
            for p in &cmp.pairs {
                prop_assert_eq!(client[p.client].request_hash, server[p.server].request_hash);
            }
            prop_assert!(serde_json::to_string(&cmp).is_ok());
        }
    }
}
