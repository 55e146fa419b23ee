//! `pcapsleuth diff --json`: two runs side by side, every figure as `{a, b}` with how it changed.

use serde::Serialize;

use crate::histogram::RtSummary;
use crate::modes::Mode;
use crate::mysql::ServerRow;
use crate::path::ResendCounts;
use crate::rate::Ceiling;

use super::significance::{CountTest, RankTest, RateTest, TailTest};

/// A figure of each run: `a` (the baseline) and `b`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Pair<T> {
    /// Run A's.
    pub a: T,
    /// Run B's.
    pub b: T,
}

/// Two runs compared (`pcapsleuth diff A B`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Diff {
    /// What changed from A to B, and why where the capture shows it, in words.
    pub verdict: String,
    /// How a difference was judged larger than the runs' own noise.
    pub method: Method,
    /// What each run was.
    pub runs: Pair<RunSummary>,
    /// What was matched with what: servers, statement groups, and on what basis runs of different
    /// lengths were compared.
    pub matched: Matching,
    /// Response times of the answered requests (logins aside), µs, and their rank test.
    pub rt_us: Compared<RtSummary>,
    /// The slowest requests: each run's share of answered requests slower than the p99 of both runs'
    /// together, and its test; `None` when either run has none answered.
    pub rt_tail: Option<TailTest>,
    /// The exchanges of the MySQL sessions in TLS that were not decrypted, timed from their records
    /// (as `mysql --json`'s `tls.estimated_from_tls_records.rt_us`), with a rank test of their own;
    /// `None` when neither run has one. Estimates: an exchange is the client's records and the
    /// server's until the client's next, whatever statements they held.
    pub tls_estimated_us: Option<Compared<RtSummary>>,
    /// The load the clients offered.
    pub load: Load,
    /// Statement groups (command and fingerprint), the largest change of time first.
    pub statements: Vec<StatementDiff>,
    /// Error responses by code.
    pub errors: Vec<ErrorDiff>,
    /// Servers, as matched.
    pub servers: Vec<ServerDiff>,
    /// The humps of each run's response-time distribution (as `rt --json`'s `modes`).
    pub humps: Pair<Vec<Mode>>,
    /// Connections, connects and closes.
    pub connections: Pair<ConnectionFacts>,
    /// The path between the capture point and the other side.
    pub path: PathFacts,
    /// Ceilings `rate` finds in each run.
    pub ceilings: Pair<Vec<Ceiling>>,
    /// Packets and bytes per second each way.
    pub throughput: Pair<Throughput>,
}

/// How differences were judged (see the README's *Two runs: `diff`*).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Method {
    /// `mann_whitney_u`: the rank test of two distributions (response times, think times).
    pub distributions: &'static str,
    /// What the rank test reads: the histograms' bins, each one tie.
    pub samples: &'static str,
    /// Its family-wise level, with `correction` over the tests of one diff.
    pub level: f64,
    /// `holm`.
    pub correction: &'static str,
    /// The least distance of the probability of superiority from 0.5 that is called a difference.
    pub min_effect: f64,
    /// `poisson_conditional_binomial`: the test of two rates (requests, errors per second).
    pub rates: &'static str,
    /// Its level.
    pub rate_level: f64,
    /// The least relative change of a rate called one.
    pub min_rate_change: f64,
    /// Statement groups with fewer answered requests in either run are not tested.
    pub min_tested: u64,
    /// Whether anything was drawn at random: never (the tests are computed from counts), so the
    /// output is the same for any number of splits and threads.
    pub random: bool,
}

/// A figure of each run and the test of its change.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Compared<T> {
    /// Run A's.
    pub a: T,
    /// Run B's.
    pub b: T,
    /// The rank test of B against A; `None` when either has nothing to test.
    pub test: Option<RankTest>,
}

/// What one run was.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunSummary {
    /// The files read as this run.
    pub files: Vec<String>,
    /// Packets read.
    pub packets: u64,
    /// The capture's body: first and last timestamps, epoch seconds.
    pub first_s: Option<f64>,
    /// See `first_s`.
    pub last_s: Option<f64>,
    /// Seconds from the first request to the last: rates divide by it.
    pub request_span_s: f64,
    /// MySQL sessions.
    pub sessions: u64,
    /// Requests that expect a response (logins aside).
    pub requests: u64,
    /// Of them, answered.
    pub answered: u64,
    /// Where the capture was taken, as the TCP handshakes tell: `client`, `server` or `unknown`.
    pub capture_point: CapturePoint,
    /// What the capture could not show (as `unknowns.notes` of the other commands).
    pub unknowns: Vec<String>,
}

/// Where a capture was taken, as its TCP handshakes tell: the half of the handshake that holds the
/// round trip is the one that crossed the path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CapturePoint {
    /// SYN to SYN-ACK holds the round trip: the capture saw the SYN leave and the answer come back.
    Client,
    /// SYN-ACK to ACK holds it.
    Server,
    /// No handshake, or its halves too alike to tell (a local network, where both are microseconds).
    Unknown,
}

/// What was matched with what.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Matching {
    /// Server endpoints paired: by the same `ip:port`, else the only one left on each side.
    pub servers: Vec<ServerMatch>,
    /// Statement groups (command and fingerprint) in both runs, only in A, only in B.
    pub statements_in_both: usize,
    /// See `statements_in_both`.
    pub statements_only_a: usize,
    /// See `statements_in_both`.
    pub statements_only_b: usize,
    /// What was compared how, in words: the pairing, and that counts are compared as rates over each
    /// run's span of requests, times as distributions.
    pub notes: Vec<String>,
}

/// Two server endpoints paired (or one left alone).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServerMatch {
    /// A's `ip:port`, `None` when only B has it.
    pub a: Option<String>,
    /// B's.
    pub b: Option<String>,
    /// `same_endpoint`, `only_one_left` (the only server of each side not paired otherwise),
    /// `only_in_a`, `only_in_b`.
    pub basis: &'static str,
}

/// The load the clients offered, each run's.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Load {
    /// Requests per second (over each run's span of requests), and the test of the change.
    pub requests_per_s: Pair<f64>,
    /// The rate test of `requests_per_s`.
    pub rate_test: Option<RateTest>,
    /// Think time, µs: on each connection, a response's last byte to the next request's first byte.
    /// Seen at a server it holds the path's round trip too.
    pub think_time_us: Compared<RtSummary>,
    /// The fastest tenth of think times (p10), µs: the client answering at once; at a server, the
    /// path's round trip and the client's turnaround.
    pub think_p10_us: Pair<f64>,
    /// Requests in flight on average (Little's law: the response times summed over the span).
    pub in_flight: Pair<f64>,
    /// The most requests in flight at once (measured: every request from its first byte to its
    /// response's last).
    pub in_flight_max: Pair<u64>,
    /// Transactions ended (committed or rolled back) per second of each run's span of requests.
    pub transactions_per_s: Pair<f64>,
    /// The rate test of `transactions_per_s`.
    pub transaction_rate_test: Option<RateTest>,
    /// Transaction time (first statement to the answer to its COMMIT or ROLLBACK), µs, with the rank
    /// test of its change: tested on its own (not in the Holm family of the response times), and said in
    /// the verdict only when beyond the noise.
    pub transaction_rt_us: Compared<RtSummary>,
    /// Of the transactions' time, the share idle: waiting for the client's next statement.
    pub idle_in_transaction_share: Pair<f64>,
    /// Connections that sent requests.
    pub active_connections: Pair<u64>,
    /// Each connection's median response time, µs, over the connections with at least 10 answered
    /// requests: `min` and `max` say whether a change shows on every connection.
    pub connection_medians_us: Pair<RtSummary>,
}

/// What became of a statement group from A to B.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    /// Its response times are larger in B beyond the noise.
    Slower,
    /// Smaller in B beyond the noise.
    Faster,
    /// Within the noise.
    Unchanged,
    /// Too few answered requests in A or B to test.
    TooFew,
    /// Only in B.
    New,
    /// Only in A.
    Gone,
}

impl Change {
    /// Its name in JSON and text: `slower`, `faster`, `unchanged`, `too_few`, `new`, `gone`.
    pub fn name(self) -> &'static str {
        match self {
            Change::Slower => "slower",
            Change::Faster => "faster",
            Change::Unchanged => "unchanged",
            Change::TooFew => "too_few",
            Change::New => "new",
            Change::Gone => "gone",
        }
    }
}

/// One statement group (command and fingerprint) in both runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StatementDiff {
    /// `COM_QUERY`, `COM_STMT_EXECUTE`, ...
    pub command: String,
    /// The fingerprint.
    pub fingerprint: String,
    /// What became of its response times.
    pub change: Change,
    /// Run A's requests of it; `None` when A has none.
    pub a: Option<StatementSide>,
    /// Run B's.
    pub b: Option<StatementSide>,
    /// The rank test of its response times.
    pub test: Option<RankTest>,
    /// The test of its rate of requests.
    pub rate_test: Option<RateTest>,
    /// The time B's answered requests of it took beyond what they would have at A's mean (negative:
    /// saved), µs; 0 unless `change` is `slower` or `faster`.
    pub added_us: f64,
    /// `added_us` as a share of all the added (or saved) time.
    pub added_share: f64,
}

/// A statement group in one run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StatementSide {
    /// Requests expecting a response.
    pub count: u64,
    /// Per second of the run's span of requests.
    pub per_s: f64,
    /// Of them, answered.
    pub answered: u64,
    /// Of them, answered by an error.
    pub errors: u64,
    /// Rows returned.
    pub rows: u64,
    /// MySQL bytes of the requests and of their responses.
    pub request_bytes: u64,
    /// See `request_bytes`.
    pub response_bytes: u64,
    /// The answered requests' response times summed, µs.
    pub total_us: f64,
    /// Their distribution, µs.
    pub rt_us: RtSummary,
}

/// One error code in both runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ErrorDiff {
    /// The MySQL error code.
    pub code: u16,
    /// Its SQLSTATE.
    pub sql_state: String,
    /// `new` (only in B), `gone` (only in A), `more`, `fewer` (per second, beyond the noise), `same`.
    pub change: &'static str,
    /// Responses with it in A and in B.
    pub count: Pair<u64>,
    /// The rate test.
    pub rate_test: Option<RateTest>,
    /// Its first messages (B's, else A's).
    pub messages: Vec<String>,
    /// The statement groups it answered, with how many in each run, most first.
    pub statements: Vec<ErrorStatement>,
}

/// A statement group an error code answered.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ErrorStatement {
    /// The command.
    pub command: String,
    /// The fingerprint.
    pub fingerprint: String,
    /// How many of its requests got the error in A and in B.
    pub count: Pair<u64>,
}

/// One server (or two paired) in both runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServerDiff {
    /// How it was paired.
    pub matched: ServerMatch,
    /// Its row in A (as `mysql --json`'s `servers`), `None` when A has no such server.
    pub a: Option<ServerRow>,
    /// Its row in B.
    pub b: Option<ServerRow>,
    /// The rank test of its response times.
    pub test: Option<RankTest>,
}

/// Connections, connects and closes of one run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConnectionFacts {
    /// TCP connections.
    pub connections: u64,
    /// Of them, MySQL sessions.
    pub sessions: u64,
    /// Connects seen from their SYN, established, refused (RST), never answered.
    pub connects: u64,
    /// See `connects`.
    pub refused: u64,
    /// See `connects`.
    pub unanswered: u64,
    /// Connects answered only after a retransmitted SYN.
    pub delayed: u64,
    /// Connections that ended with a RST.
    pub resets: u64,
    /// Closes `first-reset` calls abnormal.
    pub abnormal_closes: u64,
    /// Its first abnormal close, in words.
    pub first_abnormal: Option<String>,
}

/// The path, from what TCP shows in each run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PathFacts {
    /// SYN to the ACK completing the handshake (Wireshark's `tcp.analysis.initial_rtt`), µs.
    pub handshake_rtt_us: Pair<RtSummary>,
    /// SYN to SYN-ACK, µs: the round trip when captured at the client.
    pub syn_to_synack_us: Pair<RtSummary>,
    /// SYN-ACK to ACK, µs: the round trip when captured at the server.
    pub synack_to_ack_us: Pair<RtSummary>,
    /// Retransmitted segments, both ways.
    pub retransmissions: Pair<u64>,
    /// Of all packets.
    pub retransmitted_share: Pair<f64>,
    /// Segments advertising a zero window.
    pub zero_windows: Pair<u64>,
    /// The round trip to the server over the whole run, from TCP's own timing: client data to the
    /// server's ACK of it at the capture point (every sample of `rate`'s path series), µs, with the rank
    /// test of B against A. At a client-side capture it crosses the path; at a server-side capture it is
    /// the server's own ACK delay.
    pub rtt_to_server_us: Compared<RtSummary>,
    /// The round trip to the client: server data to the client's ACK of it (as `rtt_to_server_us`; it
    /// crosses the path at a server-side capture).
    pub rtt_to_client_us: Compared<RtSummary>,
    /// Which round trip crossed the path, as the capture point says: `to_server` at a client-side
    /// capture, `to_client` at a server-side one; `null` where the capture point is unknown.
    pub path_leg: Option<PathLeg>,
    /// The client's retransmissions by what made it resend.
    pub c2s_resends: Pair<ResendCounts>,
    /// The server's retransmissions by what made it resend.
    pub s2c_resends: Pair<ResendCounts>,
    /// Retransmissions both ways per second of each run's requests, compared (the rate test).
    pub resend_rate_test: Option<RateTest>,
    /// Duplicate ACKs, both ways.
    pub dup_acks: Pair<u64>,
    /// Duplicate ACKs per second of each run's requests, compared (the rate test).
    pub dup_ack_rate_test: Option<RateTest>,
    /// Segments the clients sent advertising a zero receive window (Wireshark's
    /// `tcp.analysis.zero_window` from the client's side): the client stopped reading.
    pub client_zero_windows: Pair<u64>,
    /// Segments the server sent advertising a zero receive window: the server stopped reading what the
    /// clients uploaded.
    pub server_zero_windows: Pair<u64>,
    /// `client_zero_windows` per answered request, compared (the conditional binomial test; per request,
    /// not per second, because a client that stops reading stretches its own run).
    pub client_zero_window_test: Option<CountTest>,
    /// `server_zero_windows` per answered request, compared.
    pub server_zero_window_test: Option<CountTest>,
    /// Seconds the clients advertised a zero window, summed over connections.
    pub client_zero_window_s: Pair<f64>,
    /// Seconds the server advertised a zero window, summed over connections.
    pub server_zero_window_s: Pair<f64>,
}

/// One leg of the round trip seen at the capture point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PathLeg {
    /// Client data to the server's ACK: the path, at a client-side capture.
    ToServer,
    /// Server data to the client's ACK: the path, at a server-side capture.
    ToClient,
}

/// Packets and bytes per second of one run, over its span of requests.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Throughput {
    /// Packets per second, client to server.
    pub c2s_pps: f64,
    /// Packets per second, server to client.
    pub s2c_pps: f64,
    /// Bits per second (frames on the wire), client to server.
    pub c2s_bps: f64,
    /// Bits per second, server to client.
    pub s2c_bps: f64,
}
