//! MySQL on one TCP connection: recognised (from the greeting, a login, or a request and its answer, on
//! any port), its bytes put in order and decoded by `pcapsleuth-mysql`, each transaction handed to the
//! analyses as it completes, each close read in MySQL terms, and the session summarised when it ends.

use std::collections::VecDeque;
use std::sync::Arc;

use pcapsleuth_flow::{
    CloseFlag as TcpCloseFlag, ClosedBy, ConnectionState, Endpoint, FlowKey, FrameRef, Role, Side,
    StreamEvent, StreamReassembler, TcpFlags, TcpSegment,
};
use pcapsleuth_mysql::{
    CloseContext, CloseFlag, Command, Direction, Encryption, ExchangeShape, Meta, Outcome,
    PieceShape, PlainExchange, Session, SessionInfo, SessionPhase, Transaction,
};
use pcapsleuth_ssl::KeyLog;
use serde::Serialize;

use super::hint::PayloadHint;
use super::recognition::{Recognised, RecognisedBy, Recogniser, Recognition};
use super::tls::{EstimatedExchangeView, TlsSessionFacts, TlsTrack, Told};
use crate::replication::{stream_report, ReplicationStream, StreamClose, StreamTrack};
use crate::timeline::plausible_response_time;

/// Which connections are decoded as MySQL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MysqlDetection {
    /// Recognised from the greeting or the request/response shape, on any port.
    #[default]
    Auto,
    /// Connections with this server port are MySQL (and others are still recognised automatically).
    Port(u16),
    /// No MySQL decoding.
    Off,
}

/// How much of each MySQL session the engine decodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MysqlDepth {
    /// Every exchange: every transaction is told to the analyses, every count is exact.
    #[default]
    Full,
    /// What judging closes needs (`first-reset`, `flows`): the login, the exchange each close falls in,
    /// what the end of the capture finds open, and every exchange that is not plain; a plain exchange (one
    /// request that depends on no state and leaves none, its response whole:
    /// [`pcapsleuth_mysql::ExchangeShape`]; for a prepared statement's run, its text not cut) met while
    /// the session is at rest ([`Session::at_rest`]) is counted as the decoder would count it (a request
    /// answered, an error if it ended in ERR), not decoded. The run is the run of [`MysqlDepth::Full`],
    /// every connection and every fact of its session (closes, requests left unanswered, counts,
    /// encryption, user and schema): a test compares them on every capture we have. Only the analyses are
    /// told fewer transactions, those decoded. Inputs read as streams (compressed, a pipe) are decoded in
    /// full: passing over an exchange keeps where its bytes lie in a mapped file, to decode them after all
    /// if it turns out not to be plain.
    Closes,
}

/// The bytes of the inputs of a run, by input (empty for an input read as a stream, whose windows do
/// not last), and the input the current segment is from: where an exchange passed over lies.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Home<'a> {
    pub(crate) files: &'a [&'a [u8]],
    pub(crate) input: usize,
}

impl Home<'_> {
    /// Where `bytes` lie in the current input, when they are part of its mapped bytes (not bytes
    /// reassembly held in a buffer of its own).
    #[inline]
    fn offset_of(&self, bytes: &[u8]) -> Option<u64> {
        let file = self.files.get(self.input)?;
        let at = (bytes.as_ptr() as usize).wrapping_sub(file.as_ptr() as usize);
        (at < file.len() && bytes.len() <= file.len() - at).then_some(at as u64)
    }
}

/// Bytes of one direction kept undecoded: where they lie in a mapped input.
#[derive(Debug, Clone, Copy)]
struct Kept {
    dir: Direction,
    input: u32,
    len: u32,
    at: u64,
    meta: Meta,
}

/// An exchange holds at most this many pieces kept undecoded (10 KB); past it (a long resultset) it is
/// decoded, so that memory follows connections, not the length of a response.
const KEPT_MAX: usize = 256;

/// Room for kept pieces a connection keeps between exchanges (most exchanges are a few segments).
const KEPT_ROOM: usize = 16;

/// [`MysqlDepth::Closes`]: the session passes over plain exchanges. From a new client flight (client
/// bytes after server bytes) found with the session at rest, the exchange's bytes are kept undecoded,
/// only their packet headers followed ([`ExchangeShape`]), until the next flight: then the exchange is
/// counted if plain, else decoded from what was kept. Whatever needs the session's state (a close, a
/// gap, bytes reassembly held, the end) first decodes what is kept; the session then decodes as bytes
/// come until it is at rest at a new flight again.
#[derive(Default)]
struct Tail {
    /// Bytes are being kept (the session was at rest when the exchange began).
    keeping: bool,
    kept: Vec<Kept>,
    shape: ExchangeShape,
    /// The last bytes were the server's.
    server_last: bool,
    /// Plain exchanges passed over, and of them those answered by an error.
    passed: u64,
    passed_errors: u64,
}

impl Tail {
    /// One event of a direction's reassembled bytes; `shape`: the bytes' [`PieceShape`] when they are a
    /// whole segment's payload whose shape the scan told.
    #[inline(always)]
    fn route(
        &mut self,
        session: &mut Session,
        home: Home<'_>,
        d: Direction,
        e: StreamEvent<'_>,
        shape: PieceShape,
        m: Meta,
    ) {
        match e {
            StreamEvent::Data(b) if self.keep(session, home, d, b, shape, m) => {}
            StreamEvent::Data(_) => self.decode_now(session, home.files, d, e, m),
            StreamEvent::Gap(_) => {
                self.server_last = d == Direction::ServerToClient;
                self.decode_now(session, home.files, d, e, m);
            }
        }
    }

    /// Keeps the bytes `b` of direction `d` if the session is passing over the exchange (beginning a new
    /// one when they begin a client flight); returns whether it did (else they are to be decoded).
    #[inline(always)]
    fn keep(
        &mut self,
        session: &mut Session,
        home: Home<'_>,
        d: Direction,
        b: &[u8],
        shape: PieceShape,
        m: Meta,
    ) -> bool {
        let from_server = d == Direction::ServerToClient;
        if self.server_last && !from_server {
            self.new_flight(session, home.files);
        }
        self.server_last = from_server;
        if !self.keeping || self.kept.len() >= KEPT_MAX {
            return false;
        }
        let Some(at) = home.offset_of(b) else {
            return false;
        };
        self.kept.push(Kept {
            dir: d,
            input: home.input as u32,
            len: b.len() as u32,
            at,
            meta: m,
        });
        if from_server {
            self.shape.server_shaped(b, shape);
        } else {
            self.shape.client_shaped(b, shape);
        }
        true
    }

    /// Decodes what is kept, then `e`.
    #[inline(never)]
    fn decode_now(
        &mut self,
        session: &mut Session,
        files: &[&[u8]],
        d: Direction,
        e: StreamEvent<'_>,
        m: Meta,
    ) {
        self.decode_kept(session, files);
        feed_event(session, d, e, m);
    }

    /// A new client flight begins: the exchange kept ended, passed over if plain, else decoded; bytes
    /// are kept from this flight on if the session is at rest.
    #[inline(never)]
    fn new_flight(&mut self, session: &mut Session, files: &[&[u8]]) {
        if !self.keeping {
            self.start_keeping(session);
            return;
        }
        // A prepared statement's run shows the statement's text, which the decoder counts if it was cut.
        let counted = |plain: &PlainExchange| {
            plain
                .statement
                .and_then(|id| session.prepared(id))
                .is_none_or(|text| cut_text(text).is_none())
        };
        match self.shape.plain().filter(counted) {
            Some(plain) => {
                self.passed += 1;
                self.passed_errors += u64::from(plain.error);
                let (client, server) = self.shape.bytes();
                session.passed_over(client, server);
                self.kept.clear();
                self.kept.shrink_to(KEPT_ROOM);
                self.shape.reset();
            }
            None => {
                self.decode_kept(session, files);
                self.start_keeping(session);
            }
        }
    }

    /// Keeps the exchange beginning now if the session is at rest.
    fn start_keeping(&mut self, session: &Session) {
        if session.at_rest() {
            self.keeping = true;
            self.shape = ExchangeShape::new(session.capabilities());
        }
    }

    /// Decodes what is kept, and stops keeping: the session decodes as bytes come.
    #[cold]
    fn decode_kept(&mut self, session: &mut Session, files: &[&[u8]]) {
        if !self.keeping {
            return;
        }
        self.keeping = false;
        for k in self.kept.drain(..) {
            let from = usize::try_from(k.at).unwrap_or(usize::MAX);
            let bytes = files
                .get(k.input as usize)
                .and_then(|f| f.get(from..from.saturating_add(k.len as usize)));
            if let Some(b) = bytes {
                session.feed(k.dir, b, k.meta);
            }
        }
        self.kept.shrink_to(KEPT_ROOM);
        self.shape.reset();
    }
}

/// Hands one event of a direction's reassembled bytes to the session, or to its [`Tail`] when plain
/// exchanges are passed over. (Inlined: decoding every exchange, the session's `feed` is called here as it
/// was before there was a choice.)
#[inline(always)]
fn route<const KEEPS: bool>(
    session: &mut Session,
    tail: &mut Option<Box<Tail>>,
    home: Home<'_>,
    d: Direction,
    e: StreamEvent<'_>,
    m: Meta,
) {
    match tail {
        Some(t) if KEEPS => t.route(session, home, d, e, PieceShape::Unknown, m),
        _ => feed_event(session, d, e, m),
    }
}

/// Feeds one event of a direction's reassembled bytes to the session.
#[inline(always)]
fn feed_event(session: &mut Session, d: Direction, e: StreamEvent<'_>, m: Meta) {
    match e {
        StreamEvent::Data(b) => session.feed(d, b, m),
        StreamEvent::Gap(n) => session.gap(d, n, m),
    }
}

/// Feeds one event of a direction's reassembled bytes to a TLS session: through its TLS layer.
fn tls_event(
    track: &mut TlsTrack,
    session: &mut Session,
    d: Direction,
    e: StreamEvent<'_>,
    m: Meta,
) {
    match e {
        StreamEvent::Data(b) => track.data(session, d, b, m, false),
        StreamEvent::Gap(n) => track.gap(session, d, n, m),
    }
}

/// Request (first packet) to the last byte of the response: what the client waited for. Counted only for
/// requests [`Fate::Answered`]: the others' last response byte is not the end of their response. `None`
/// when unanswered, or when the two timestamps cannot both be right ([`crate::plausible_response_time`]).
pub fn response_time_ns(t: &Transaction) -> Option<u64> {
    if !response_end_known(t) {
        return None;
    }
    t.last_response_ts_ns
        .and_then(|end| plausible_response_time(t.request_ts_ns as i64, end as i64))
}

/// Whether the last response byte `t` records is the end of its response: not when the capture ended
/// first, or when the rest of the response fell into bytes the capture does not hold.
#[inline]
pub fn response_end_known(t: &Transaction) -> bool {
    !matches!(t.outcome, Outcome::CaptureEnded | Outcome::GapLost)
}

/// Request (first byte) to the first response byte: the time to first byte, which every answered
/// request has, its response's end in the capture or not (what pt-query-digest calls a query's time).
/// `None` when no response byte came, or when the two timestamps cannot both be right.
pub fn first_byte_ns(t: &Transaction) -> Option<u64> {
    t.first_response_ts_ns
        .and_then(|first| plausible_response_time(t.request_ts_ns as i64, first as i64))
}

/// Where a request's time went: the upload (first to last request byte), the server (last request
/// byte to first response byte) and the download (first to last response byte).
///
/// The three add up to the response time. When the server began to answer before the request's last
/// byte (LOCAL INFILE asks for the file before it comes; an early ERR such as 1153 answers a request
/// still being sent), they would overlap, and are cut: the upload ends at the response's last byte at
/// the latest, the time after it is the server's, and the download is 0 (what the server sent came
/// while the client was still sending).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RequestPhases {
    /// First to last request byte, ns.
    pub upload_ns: u64,
    /// Last request byte to first response byte, ns.
    pub server_ns: u64,
    /// First to last response byte, ns; `None` when the response's end is not in the capture (the
    /// capture ended first, or the rest fell into bytes it does not hold).
    pub download_ns: Option<u64>,
}

impl RequestPhases {
    /// The phases of a request some of whose response came (`None` when none did, or when its
    /// timestamps cannot all be right). Timestamps a little out of order (interfaces timestamped
    /// apart) count as simultaneous.
    pub fn of(t: &Transaction) -> Option<RequestPhases> {
        let first = t.first_response_ts_ns?;
        let (upload_ns, server_ns, download_ns) = split_phases(
            t.request_ts_ns,
            t.last_request_ts_ns,
            first,
            t.last_response_ts_ns.unwrap_or(first),
        )?;
        Some(RequestPhases {
            upload_ns,
            server_ns,
            download_ns: response_end_known(t).then_some(download_ns),
        })
    }
}

/// Upload, server and download of a request sent from `r0` to `r1` and answered from `s0` to `s1`
/// (ns since the epoch), as [`RequestPhases`] defines them; `None` when the request and the response
/// cannot both be right ([`plausible_response_time`]).
fn split_phases(r0: u64, r1: u64, s0: u64, s1: u64) -> Option<(u64, u64, u64)> {
    plausible_response_time(r0 as i64, s1.max(s0) as i64)?;
    let s0 = s0.max(r0);
    let s1 = s1.max(s0);
    let r1 = r1.max(r0);
    let upload_end = r1.min(s1);
    let (server, download) = if s0 >= r1 {
        (s0 - r1, s1 - s0)
    } else {
        (s1 - upload_end, 0)
    };
    Some((upload_end - r0, server, download))
}

/// One listed request's phases ([`RequestPhases`]) and bytes, microseconds: the `phases` of an
/// incident or of a slow request in JSON.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ListedPhases {
    /// First to last request byte (those sent, for a request cut off while it was being sent).
    pub upload_us: f64,
    /// Last request byte to first response byte; `None` when no response byte came.
    pub server_us: Option<f64>,
    /// First to last response byte seen; `None` when no response byte came.
    pub download_us: Option<f64>,
    /// Whether the download ran to the response's end; `false` when a close cut it off or the capture
    /// holds no end of it (the download is then what came before).
    pub download_complete: bool,
    /// Request bytes on the wire (MySQL packets, headers included).
    pub request_bytes: u64,
    /// Response bytes on the wire (as far as they came).
    pub response_bytes: u64,
}

impl ListedPhases {
    /// The phases of a request sent from `r0` to `r1`, answered from `s` (first and last response
    /// byte) when any of its response came; `None` when its timestamps cannot all be right.
    fn new(
        (r0, r1): (u64, u64),
        s: Option<(u64, u64)>,
        download_complete: bool,
        (request_bytes, response_bytes): (u64, u64),
    ) -> Option<ListedPhases> {
        let us = |ns: u64| ns as f64 / 1e3;
        let (upload_us, server_us, download_us) = match s {
            Some((s0, s1)) => {
                let (u, sv, d) = split_phases(r0, r1, s0, s1)?;
                (us(u), Some(us(sv)), Some(us(d)))
            }
            None => (us(r1.saturating_sub(r0)), None, None),
        };
        Some(ListedPhases {
            upload_us,
            server_us,
            download_us,
            download_complete: download_complete && s.is_some(),
            request_bytes,
            response_bytes,
        })
    }

    /// The phases of a request the decoder completed.
    pub fn of(t: &Transaction) -> Option<ListedPhases> {
        let s = t
            .first_response_ts_ns
            .map(|f| (f, t.last_response_ts_ns.unwrap_or(f)));
        let complete = response_end_known(t) && Fate::of(&t.outcome) == Fate::Answered;
        ListedPhases::new(
            (t.request_ts_ns, t.last_request_ts_ns),
            s,
            complete,
            (t.request_bytes, t.response_bytes),
        )
    }
}

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
    /// first byte is known, its response time is not ([`response_end_known`]). A response still
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
    fn new(t: &Transaction, c: Endpoint, s: Endpoint) -> Self {
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

enum Detect {
    Undecided(Box<Recogniser>),
    Mysql,
    /// MySQL, in TLS after its SSLRequest: its bytes go through its TLS layer.
    MysqlTls,
    NotMysql,
}

/// What a close found the session doing.
#[derive(Debug, Clone)]
pub struct CloseSeen {
    pub frame: u64,
    pub ts_ns: u64,
    pub side: Side,
    pub flag: TcpCloseFlag,
    pub context: CloseContext,
}

/// MySQL facts about one connection, kept with it for `first-reset` and `flows`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MysqlSessionFacts {
    /// What showed that the connection speaks MySQL.
    pub recognised_by: RecognisedBy,
    /// The server's version string from its greeting (e.g. `10.11.19-MariaDB-0+deb12u1`), when captured.
    pub server_version: Option<String>,
    /// The user name from the login (or the last `COM_CHANGE_USER`), when captured.
    pub user: Option<String>,
    /// The default schema from the login, `COM_INIT_DB` or `COM_CHANGE_USER`, when captured.
    pub schema: Option<String>,
    /// Whether the session went on in TLS and was not decrypted (its requests cannot be read).
    pub encrypted: bool,
    /// Bytes after TLS began (or of a compression that cannot be decoded): fed, not read. Of a TLS
    /// session decrypted, none (the records that failed are in `tls`).
    pub unread_bytes: u64,
    /// The TLS the session went on in after its SSLRequest; null for a session in the clear.
    pub tls: Option<TlsSessionFacts>,
    /// Requests decoded on the connection, each with what became of it (answered or not).
    pub transactions: u64,
    /// Of them, those answered by an error response.
    pub errors: u64,
    /// What the session was doing at each FIN or RST, in capture order (for `first-reset`; not in JSON).
    #[serde(skip)]
    pub closes: Vec<CloseSeenFacts>,
    /// Requests still waiting for their response when the capture ended.
    #[serde(skip)]
    pub unanswered: Vec<UnansweredRequest>,
    /// The session's requests that expect a response (logins aside), by fate: what `unknowns` says of
    /// every run, whatever analysis it ran.
    #[serde(skip)]
    pub requests: RequestCounts,
    /// The session's requests whose statement text the capture holds only in part.
    #[serde(skip)]
    pub statements_cut: u64,
    /// Closes that cut a request off (at most one per request).
    #[serde(skip)]
    pub incidents: Vec<Incident>,
    /// The replication stream the connection carried, if it did.
    #[serde(skip)]
    pub replication: Option<Box<ReplicationStream>>,
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

/// Per-connection MySQL state during tracking.
pub(crate) struct MysqlTrack {
    detect: Detect,
    recognised_by: Option<RecognisedBy>,
    client: Option<Side>,
    session: Option<Session>,
    streams: [StreamReassembler<Meta>; 2],
    closes: Vec<CloseSeen>,
    closed: [[bool; 2]; 2],
    transactions: u64,
    errors: u64,
    /// Requests expecting a response, by fate, and those with their statement cut.
    requests: RequestCounts,
    statements_cut: u64,
    /// Times of this connection's recent retransmissions, to tell which exchanges saw one.
    retransmissions: VecDeque<i64>,
    /// The distributions of the replication stream the connection carries, if it does.
    replication: Option<Box<StreamTrack>>,
    /// The last segment's time: how long an open semi-sync wait lasted at least.
    last_ts_ns: u64,
    /// Requests the end of the capture found waiting.
    unanswered: Vec<UnansweredRequest>,
    /// Plain exchanges may be passed over ([`MysqlDepth::Closes`]).
    closes_only: bool,
    /// The exchange kept undecoded, once the connection is MySQL and `closes_only`.
    tail: Option<Box<Tail>>,
    /// The TLS layer, after the session's SSLRequest: the reassembled bytes go through it, decrypted where
    /// the key log allows, timed from their records where not.
    tls: Option<Box<TlsTrack>>,
    /// The TLS key log, when one was given: the SSLRequest's login then waits for the TLS layer to say
    /// whether the session is decrypted.
    keys: Option<Arc<KeyLog>>,
}

/// An acknowledgment at most this far (1 GiB) past the bytes captured is of bytes the capture lost; one
/// farther (or behind, wrapped) is no acknowledgment of this stream's bytes (a garbled or stale ACK).
const TRAILING_GAP_MAX: u32 = 1 << 30;

/// Retransmission times kept per connection: enough to cover the requests in flight, bounded.
const RETRANSMISSIONS_KEPT: usize = 256;

fn meta(at: FrameRef) -> Meta {
    Meta {
        ts_ns: at.ts.0.max(0) as u64,
        frame: at.frame,
    }
}

impl MysqlTrack {
    pub(crate) fn new(mode: MysqlDetection, depth: MysqlDepth, keys: Option<&Arc<KeyLog>>) -> Self {
        MysqlTrack {
            detect: match mode {
                MysqlDetection::Off => Detect::NotMysql,
                MysqlDetection::Auto => Detect::Undecided(Box::new(Recogniser::new(None))),
                MysqlDetection::Port(p) => Detect::Undecided(Box::new(Recogniser::new(Some(p)))),
            },
            recognised_by: None,
            client: None,
            session: None,
            streams: [StreamReassembler::new(), StreamReassembler::new()],
            closes: Vec::new(),
            closed: [[false; 2]; 2],
            transactions: 0,
            errors: 0,
            requests: RequestCounts::default(),
            statements_cut: 0,
            retransmissions: VecDeque::new(),
            replication: None,
            last_ts_ns: 0,
            unanswered: Vec::new(),
            closes_only: depth == MysqlDepth::Closes,
            tail: None,
            tls: None,
            keys: keys.cloned(),
        }
    }

    /// The connection retransmitted a segment at `ts_ns`.
    pub(crate) fn retransmission(&mut self, ts_ns: i64) {
        if self.retransmissions.len() == RETRANSMISSIONS_KEPT {
            self.retransmissions.pop_front();
        }
        self.retransmissions.push_back(ts_ns);
    }

    /// Whether [`MysqlTrack::untouched`] may find it untouched (a quick check first: a session never is).
    #[inline]
    pub(crate) fn may_be_untouched(&self) -> bool {
        !matches!(self.detect, Detect::Mysql | Detect::MysqlTls)
    }

    /// The retransmission times this track was told, when that is all it was told since
    /// `MysqlTrack::new(mode, _)` made it: the same track is then made again by `new` and those times
    /// told in order. (A segment without payload that closes nothing leaves the recogniser as it was, so
    /// a connection seen only in its handshake packets and ACKs keeps its track untouched.)
    pub(crate) fn untouched(&self, mode: MysqlDetection) -> Option<&VecDeque<i64>> {
        let fresh = match (&self.detect, mode) {
            (Detect::Undecided(r), MysqlDetection::Auto | MysqlDetection::Port(_)) => r.is_fresh(),
            (Detect::NotMysql, MysqlDetection::Off) => true,
            _ => false,
        };
        // The rest is filled only once the connection is MySQL (a decided recogniser, above), but is
        // checked all the same: a track that is not as made is never taken for one.
        (fresh
            && self.recognised_by.is_none()
            && self.client.is_none()
            && self.session.is_none()
            && self.closes.is_empty()
            && self.closed == [[false; 2]; 2]
            && self.transactions == 0
            && self.errors == 0
            && self.requests == RequestCounts::default()
            && self.statements_cut == 0
            && self.replication.is_none()
            && self.last_ts_ns == 0
            && self.unanswered.is_empty()
            && self.tail.is_none()
            && self.tls.is_none())
        .then_some(&self.retransmissions)
    }

    /// The client side, once MySQL told it (greeting, or request/response shape).
    pub(crate) fn client(&self) -> Option<Side> {
        // Set only when the connection is recognised as MySQL, which it then stays (in TLS or not).
        self.client
    }

    pub(crate) fn is_mysql(&self) -> bool {
        self.client.is_some()
    }

    /// Feeds one segment of the connection (after the TCP tracker saw it).
    #[inline]
    pub(crate) fn segment(
        &mut self,
        conn: &ConnectionState,
        side: Side,
        seg: &TcpSegment<'_>,
        hint: PayloadHint,
        at: FrameRef,
        home: Home<'_>,
    ) {
        let shape = hint.shape();
        // A connection known to be MySQL, nearly every segment: straight to the session, without the
        // recogniser's registers and stack to set up (nor a TLS layer's).
        if matches!(self.detect, Detect::Mysql) {
            if self.tail.is_some() && self.pass_over(side, seg, shape, at, home) {
                return;
            }
            self.feed(side, seg, at, home);
        } else {
            self.segment_not_yet_mysql(conn, side, seg, at, home);
        }
    }

    /// While an exchange is kept undecoded ([`MysqlDepth::Closes`]), a segment whose bytes come next in
    /// order, with no flag that needs the session (SYN, FIN, RST) and nothing held after a hole in either
    /// direction, goes straight to the [`Tail`]: what [`MysqlTrack::feed`] would do with it, without the
    /// reassembly's work. Returns whether it did.
    #[inline(never)]
    fn pass_over(
        &mut self,
        side: Side,
        seg: &TcpSegment<'_>,
        shape: PieceShape,
        at: FrameRef,
        home: Home<'_>,
    ) -> bool {
        let (Some(t), Some(session), Some(client)) =
            (self.tail.as_deref_mut(), self.session.as_mut(), self.client)
        else {
            return false;
        };
        if !t.keeping
            || seg.flags.0 & (TcpFlags::SYN | TcpFlags::FIN | TcpFlags::RST) != 0
            || self.streams[side.other().index()].holds()
            || !self.streams[side.index()].take_in_order(
                seg.seq,
                seg.payload.len(),
                seg.payload_len,
            )
        {
            return false;
        }
        let m = meta(at);
        self.last_ts_ns = m.ts_ns;
        if !seg.payload.is_empty() {
            let d = if side == client {
                Direction::ClientToServer
            } else {
                Direction::ServerToClient
            };
            t.route(session, home, d, StreamEvent::Data(seg.payload), shape, m);
        }
        true
    }

    /// [`MysqlTrack::segment`] on a connection not (yet) recognised as MySQL, or in TLS.
    #[inline(never)]
    fn segment_not_yet_mysql(
        &mut self,
        conn: &ConnectionState,
        side: Side,
        seg: &TcpSegment<'_>,
        at: FrameRef,
        home: Home<'_>,
    ) {
        match &mut self.detect {
            Detect::MysqlTls => return self.feed_tls(side, seg, at),
            Detect::Undecided(r) => match r.segment(conn, side, seg, at) {
                Recognition::Undecided => return,
                Recognition::NotMysql => {
                    self.detect = Detect::NotMysql;
                    return;
                }
                Recognition::Mysql(m) => self.start(m, conn, home),
            },
            Detect::Mysql | Detect::NotMysql => {}
        }
        if self.is_mysql() {
            self.feed(side, seg, at, home);
        }
    }

    /// The connection is MySQL: the session starts, and is fed the bytes held while it was being
    /// recognised, segment by segment as they came (only bytes: their ACKs and closes were read as they
    /// came, and a close is the segment at hand's).
    fn start(&mut self, m: Recognised, conn: &ConnectionState, home: Home<'_>) {
        self.detect = Detect::Mysql;
        self.recognised_by = Some(m.by);
        self.client = Some(m.client);
        self.session = Some(Session::new(m.mode));
        if self.closes_only {
            self.tail = Some(Box::default());
        }
        let key = conn.key();
        m.replay.for_each(|side, seq, payload, payload_len, at| {
            let (src, dst) = (key.endpoint(side), key.endpoint(side.other()));
            let replay = TcpSegment {
                src: src.ip,
                src_port: src.port,
                dst: dst.ip,
                dst_port: dst.port,
                seq,
                ack: 0,
                window: 0,
                flags: TcpFlags(0),
                options: &[],
                payload,
                payload_len,
                // The session reads bytes only.
                ttl: 0,
            };
            self.feed(side, &replay, at, home);
        });
    }

    fn feed(&mut self, side: Side, seg: &TcpSegment<'_>, at: FrameRef, home: Home<'_>) {
        // Two copies of the work, chosen once per segment: decoding every exchange, the reassembled
        // bytes go straight to the session as they did before exchanges could be passed over.
        if self.tail.is_some() {
            self.feed_via::<true>(side, seg, at, home);
        } else {
            self.feed_via::<false>(side, seg, at, home);
        }
    }

    /// [`MysqlTrack::feed`]; `KEEPS`: the connection has a [`Tail`] (plain exchanges passed over).
    #[inline(always)]
    fn feed_via<const KEEPS: bool>(
        &mut self,
        side: Side,
        seg: &TcpSegment<'_>,
        at: FrameRef,
        home: Home<'_>,
    ) {
        let (Some(client), Some(session)) = (self.client, self.session.as_mut()) else {
            return;
        };
        let tail = &mut self.tail;
        let dir = |s: Side| {
            if s == client {
                Direction::ClientToServer
            } else {
                Direction::ServerToClient
            }
        };
        let d = dir(side);
        self.last_ts_ns = meta(at).ts_ns;
        // The acknowledgment before the payload: it tells what the sender had received from its peer
        // before it sent this segment, so the peer's bytes it releases (held after a hole the capture
        // lost) were read before this payload was sent, and come first. Read after the payload, they
        // would follow a whole request but fall between the pieces of a request cut in several
        // segments (each carries the ACK): how TCP cut the request would decide whether it was queued
        // before the hole or after the answers behind it.
        if seg.flags.ack() {
            let od = dir(side.other());
            let mut out =
                |e: StreamEvent<'_>, m: Meta| route::<KEEPS>(session, tail, home, od, e, m);
            self.streams[side.other().index()].acknowledged(seg.ack, &mut out);
        }
        let mut out = |e: StreamEvent<'_>, m: Meta| route::<KEEPS>(session, tail, home, d, e, m);
        self.streams[side.index()].segment(
            seg.seq,
            seg.flags.syn(),
            seg.payload,
            seg.payload_len,
            meta(at),
            &mut out,
        );
        let flag = if seg.flags.rst() {
            Some((TcpCloseFlag::Rst, CloseFlag::Rst))
        } else if seg.flags.fin() {
            Some((TcpCloseFlag::Fin, CloseFlag::Fin))
        } else {
            None
        };
        if let Some((tcp_flag, flag)) = flag {
            let slot = &mut self.closed[side.index()][usize::from(tcp_flag == TcpCloseFlag::Rst)];
            if !*slot {
                *slot = true;
                let mut out =
                    |e: StreamEvent<'_>, m: Meta| route::<KEEPS>(session, tail, home, d, e, m);
                self.streams[side.index()].flush(&mut out);
                // The close is read in the state the session is in: what was kept is decoded first.
                if let Some(t) = tail {
                    t.decode_kept(session, home.files);
                }
                let context = session.close(d, flag, meta(at));
                self.closes.push(CloseSeen {
                    frame: at.frame,
                    ts_ns: meta(at).ts_ns,
                    side,
                    flag: tcp_flag,
                    context,
                });
            }
        }
        if self
            .session
            .as_ref()
            .is_some_and(|s| !s.replication_samples().is_empty())
        {
            self.drain_replication();
        }
    }

    /// Hands the transactions the session completed to `tell`, counting them, and what a TLS session's
    /// records told (estimated exchanges; the SSLRequest's login once the session is known not to be
    /// decrypted). Called after every segment: most complete none.
    #[inline]
    pub(crate) fn drain(&mut self, conn: &ConnectionState, mut tell: impl FnMut(Told<'_>)) {
        if self
            .session
            .as_ref()
            .is_some_and(|s| !s.completed().is_empty())
        {
            self.drain_completed(conn, &mut tell);
        }
        if self.tls.is_some() {
            self.after_tls(conn, &mut tell);
        }
    }

    /// Feeds the replication stream's samples (ACK latencies, event lags) to its distributions.
    fn drain_replication(&mut self) {
        let Some(session) = self.session.as_mut() else {
            return;
        };
        let track = self.replication.get_or_insert_with(Default::default);
        for s in session.replication_samples() {
            track.sample(s);
        }
        session.clear_replication_samples();
    }

    /// (Inlined where the segment's transactions are told: a call per transaction saved.)
    #[inline]
    fn drain_completed(&mut self, conn: &ConnectionState, tell: &mut impl FnMut(Told<'_>)) {
        let (Some(client), Some(session)) = (self.client, self.session.as_mut()) else {
            return;
        };
        let key = conn.key();
        let mut tls_begins = false;
        for t in session.completed() {
            let view = TransactionView::new(
                t,
                client,
                key,
                &self.closes,
                &self.retransmissions,
                session.info(),
            );
            let fate = view.fate();
            // Logins are not requests; commands the server never answers expect nothing.
            if fate != Fate::NoResponse && t.command != Command::Connect {
                self.requests.count(fate, t);
                self.statements_cut += u64::from(
                    t.statement
                        .as_deref()
                        .is_some_and(|s| cut_text(s).is_some()),
                );
            } else if matches!(t.outcome, Outcome::Encrypted) {
                // The SSLRequest: TLS begins; its login is told (or held) by `begin_tls`.
                tls_begins = true;
                continue;
            }
            self.transactions += 1;
            self.errors += u64::from(matches!(t.outcome, Outcome::Err { .. }));
            if fate == Fate::Unanswered {
                // Rare (the end of the capture only), and wanted by `first-reset` too.
                self.unanswered
                    .push(UnansweredRequest::new(t, view.client, view.server));
            }
            tell(Told::Transaction(&view));
        }
        if tls_begins {
            self.begin_tls(conn, tell);
        } else {
            session.clear_completed();
        }
    }

    /// After the session's SSLRequest: a TLS layer takes the connection's bytes over, from those the
    /// session kept since the SSLRequest on.
    #[cold]
    #[inline(never)]
    fn begin_tls(&mut self, conn: &ConnectionState, tell: &mut impl FnMut(Told<'_>)) {
        let (Some(client), Some(session)) = (self.client, self.session.as_mut()) else {
            return;
        };
        // The SSLRequest's login, the last transaction completed: with a key log it waits for the TLS
        // layer, as the login inside TLS replaces it if the session is decrypted.
        let login = session
            .completed()
            .iter()
            .rfind(|t| matches!(t.outcome, Outcome::Encrypted))
            .cloned();
        session.clear_completed();
        let mut track = Box::new(TlsTrack::new(self.keys.clone()));
        self.detect = Detect::MysqlTls;
        // No exchange is passed over from here: the bytes are the TLS layer's.
        self.tail = None;
        match login {
            Some(t) if self.keys.is_some() => track.held = Some(t),
            Some(t) => {
                self.transactions += 1;
                let view = TransactionView::new(
                    &t,
                    client,
                    conn.key(),
                    &self.closes,
                    &self.retransmissions,
                    session.info(),
                );
                tell(Told::Transaction(&view));
            }
            None => {}
        }
        if let Some(kept) = session.take_tls_bytes() {
            let mut last = None;
            for (d, m, bytes) in &kept.pieces {
                track.data(session, *d, bytes, *m, true);
                last = Some(*m);
            }
            for (d, n) in [
                (Direction::ClientToServer, kept.dropped[0]),
                (Direction::ServerToClient, kept.dropped[1]),
            ] {
                if let (true, Some(m)) = (n > 0, last) {
                    track.gap(session, d, n, m);
                }
            }
        }
        self.tls = Some(track);
        self.after_tls(conn, tell);
        // What the TLS layer decrypted from the bytes the session kept since its SSLRequest may have
        // completed more (a whole login, replayed after recognition).
        if self
            .session
            .as_ref()
            .is_some_and(|s| !s.completed().is_empty())
        {
            self.drain_completed(conn, tell);
        }
    }

    /// What a TLS session's records told since the last call: exchanges estimated (while it is not
    /// decrypted), and the SSLRequest's login once the session is known not to be decrypted.
    #[cold]
    #[inline(never)]
    fn after_tls(&mut self, conn: &ConnectionState, tell: &mut impl FnMut(Told<'_>)) {
        let (Some(track), Some(client)) = (self.tls.as_deref_mut(), self.client) else {
            return;
        };
        let key = conn.key();
        if track.login_undecryptable() {
            if let Some(t) = track.held.take() {
                self.transactions += 1;
                let info = self
                    .session
                    .as_ref()
                    .map(|s| s.info().clone())
                    .unwrap_or_default();
                let view = TransactionView::new(
                    &t,
                    client,
                    key,
                    &self.closes,
                    &self.retransmissions,
                    &info,
                );
                tell(Told::Transaction(&view));
            }
        }
        if track.conn.has_exchanges() {
            let exchanges: Vec<_> = track.conn.take_exchanges().collect();
            if track.resumed {
                return;
            }
            let f = track.conn.facts();
            let (version, cipher_suite) = (f.version, f.cipher_suite);
            for x in &exchanges {
                track.estimated += 1;
                tell(Told::Estimated(&EstimatedExchangeView {
                    exchange: x,
                    client: key.endpoint(client),
                    server: key.endpoint(client.other()),
                    version,
                    cipher_suite,
                    client_side: client,
                }));
            }
        }
    }

    /// [`MysqlTrack::feed`] of a connection in TLS: the reassembled bytes go through its TLS layer.
    #[cold]
    #[inline(never)]
    fn feed_tls(&mut self, side: Side, seg: &TcpSegment<'_>, at: FrameRef) {
        let (Some(client), Some(session), Some(track)) =
            (self.client, self.session.as_mut(), self.tls.as_deref_mut())
        else {
            return;
        };
        let dir = |s: Side| {
            if s == client {
                Direction::ClientToServer
            } else {
                Direction::ServerToClient
            }
        };
        let d = dir(side);
        self.last_ts_ns = meta(at).ts_ns;
        // As in `feed_via`: the acknowledgment first.
        if seg.flags.ack() {
            let od = dir(side.other());
            let mut out = |e: StreamEvent<'_>, m: Meta| tls_event(track, session, od, e, m);
            self.streams[side.other().index()].acknowledged(seg.ack, &mut out);
        }
        let mut out = |e: StreamEvent<'_>, m: Meta| tls_event(track, session, d, e, m);
        self.streams[side.index()].segment(
            seg.seq,
            seg.flags.syn(),
            seg.payload,
            seg.payload_len,
            meta(at),
            &mut out,
        );
        let flag = if seg.flags.rst() {
            Some((TcpCloseFlag::Rst, CloseFlag::Rst))
        } else if seg.flags.fin() {
            Some((TcpCloseFlag::Fin, CloseFlag::Fin))
        } else {
            None
        };
        if let Some((tcp_flag, flag)) = flag {
            let slot = &mut self.closed[side.index()][usize::from(tcp_flag == TcpCloseFlag::Rst)];
            if !*slot {
                *slot = true;
                let mut out = |e: StreamEvent<'_>, m: Meta| tls_event(track, session, d, e, m);
                self.streams[side.index()].flush(&mut out);
                track.closed();
                let context = session.close(d, flag, meta(at));
                self.closes.push(CloseSeen {
                    frame: at.frame,
                    ts_ns: meta(at).ts_ns,
                    side,
                    flag: tcp_flag,
                    context,
                });
            }
        }
        if self
            .session
            .as_ref()
            .is_some_and(|s| !s.replication_samples().is_empty())
        {
            self.drain_replication();
        }
    }

    /// What the session was doing when `side` sent the close `flag` at `frame`, if it was seen.
    pub(crate) fn close_context(
        &self,
        frame: u64,
        side: Side,
        flag: TcpCloseFlag,
    ) -> Option<&CloseContext> {
        self.closes
            .iter()
            .find(|c| c.frame == frame && c.side == side && c.flag == flag)
            .map(|c| &c.context)
    }

    /// The connection ended (port reuse, both sides closed, or the end of the capture): flush, finish,
    /// hand what that completed to `tell`, and summarise it.
    pub(crate) fn conclude(
        mut self,
        conn: &ConnectionState,
        files: &[&[u8]],
        mut tell: impl FnMut(Told<'_>),
    ) -> Option<MysqlSessionFacts> {
        if let Detect::Undecided(r) = &mut self.detect {
            // The last turn is judged on what the capture holds of it; a whole command that looked like
            // MySQL was still waiting for its answer.
            if let Recognition::Mysql(m) = r.end(conn) {
                self.start(m, conn, Home { files, input: 0 });
            }
        }
        if !self.is_mysql() {
            return None;
        }
        let client = self.client?;
        // What the replay completed (an SSLRequest: its TLS layer takes over before the flush).
        self.drain(conn, &mut tell);
        if let (Some(mut t), Some(session)) = (self.tail.take(), self.session.as_mut()) {
            t.decode_kept(session, files);
            // Plain exchanges passed over were answered (counted as the decoder would have).
            self.transactions += t.passed;
            self.errors += t.passed_errors;
            self.requests.answered += t.passed;
        }
        if let Some(session) = self.session.as_mut() {
            for side in [Side::Lo, Side::Hi] {
                let d = if side == client {
                    Direction::ClientToServer
                } else {
                    Direction::ServerToClient
                };
                match self.tls.as_deref_mut() {
                    Some(track) => {
                        let mut out =
                            |e: StreamEvent<'_>, m: Meta| tls_event(track, session, d, e, m);
                        self.streams[side.index()].flush(&mut out);
                    }
                    None => {
                        let mut out = |e: StreamEvent<'_>, m: Meta| feed_event(session, d, e, m);
                        self.streams[side.index()].flush(&mut out);
                        // Bytes the peer acknowledged that the capture does not hold (its last segments,
                        // lost to the capture): a gap at the end of the stream, where an answer may
                        // have been.
                        let stream = &self.streams[side.index()];
                        if let (Some(next), Some(ack)) =
                            (stream.next_seq(), conn.last_ack(side.other()))
                        {
                            let fin =
                                u32::from(conn.first_close(side, TcpCloseFlag::Fin).is_some());
                            let beyond = ack.wrapping_sub(next).wrapping_sub(fin);
                            if beyond > 0 && beyond < TRAILING_GAP_MAX {
                                let at = Meta {
                                    ts_ns: self.last_ts_ns,
                                    frame: conn.last().frame,
                                };
                                session.gap(d, u64::from(beyond), at);
                            }
                        }
                    }
                }
            }
            if let Some(track) = self.tls.as_deref_mut() {
                track.conn.finish();
            }
        }
        if let Some(track) = self.tls.as_deref_mut() {
            // Not decrypted by the end: the SSLRequest's login is the session's.
            if !track.resumed {
                track.force_undecryptable();
            }
        }
        self.after_tls(conn, &mut tell);
        if let Some(session) = self.session.as_mut() {
            session.finish();
        }
        self.drain(conn, &mut tell);
        if self
            .session
            .as_ref()
            .is_some_and(|s| !s.replication_samples().is_empty())
        {
            self.drain_replication();
        }
        let key = conn.key();
        let (c, s) = (key.endpoint(client), key.endpoint(client.other()));
        let replication = self.session.as_ref().and_then(|session| {
            let summary = session.replication()?;
            let role = |side: Side| {
                if side == client {
                    Role::Client
                } else {
                    Role::Server
                }
            };
            let closes: Vec<StreamClose> = self
                .closes
                .iter()
                .filter_map(|seen| match seen.context.phase {
                    SessionPhase::Replicating(state) => Some(StreamClose {
                        by: role(seen.side),
                        flag: seen.flag,
                        at: Meta {
                            ts_ns: seen.ts_ns,
                            frame: seen.frame,
                        },
                        state,
                    }),
                    _ => None,
                })
                .collect();
            let awaiting = match session.phase() {
                SessionPhase::Replicating(state) => state.awaiting_ack,
                _ => None,
            };
            Some(stream_report(
                c.to_string(),
                s.to_string(),
                summary,
                self.replication
                    .as_deref()
                    .unwrap_or(&StreamTrack::default()),
                &closes,
                awaiting,
                self.last_ts_ns,
            ))
        });
        // One incident per request: a FIN then an RST on the same request is one event.
        let mut incidents: Vec<Incident> = Vec::new();
        for seen in &self.closes {
            if let Some(incident) = Incident::from_close(seen, client, c, s, conn) {
                if incidents.last().map(|i| i.request_frame) != Some(incident.request_frame) {
                    incidents.push(incident);
                }
            }
        }
        let info = self.session.as_ref().map(|s| s.info().clone());
        let tls = self.tls.as_ref().map(|track| track.facts());
        Some(MysqlSessionFacts {
            recognised_by: self.recognised_by?,
            server_version: info.as_ref().and_then(|i| i.server_version.clone()),
            user: info.as_ref().and_then(|i| i.user.clone()),
            schema: info.as_ref().and_then(|i| i.schema.clone()),
            encrypted: info
                .as_ref()
                .is_some_and(|i| i.encryption == Encryption::Tls),
            unread_bytes: info.as_ref().map_or(0, |i| i.counters.undecoded_bytes),
            tls,
            transactions: self.transactions,
            errors: self.errors,
            unanswered: std::mem::take(&mut self.unanswered),
            requests: self.requests,
            statements_cut: self.statements_cut,
            incidents,
            replication: replication.map(Box::new),
            closes: self
                .closes
                .iter()
                .map(|c| {
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
                })
                .collect(),
        })
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
    fn from_close(
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

/// A MySQL request and what became of it.
pub struct TransactionView<'a> {
    /// What the decoder read: the command and its statement, the frames and times of the request and of
    /// the first and last response bytes, rows, bytes, and the outcome (OK, ERR with code and message,
    /// a resultset, a close that cut it off, ...).
    pub transaction: &'a Transaction,
    /// The MySQL client's address and port.
    pub client: Endpoint,
    /// The MySQL server's address and port.
    pub server: Endpoint,
    /// The client's side of the connection.
    client_side: Side,
    /// The FINs and RSTs the connection has seen so far, with what the session was doing.
    closes: &'a [CloseSeen],
    /// The connection's recent retransmission times.
    retransmissions: &'a VecDeque<i64>,
    /// What became of the request (read once from its outcome: the analyses each ask).
    fate: Fate,
    /// What the session knew when the transaction was told.
    session: &'a SessionInfo,
}

impl<'a> TransactionView<'a> {
    pub(crate) fn new(
        transaction: &'a Transaction,
        client_side: Side,
        key: FlowKey,
        closes: &'a [CloseSeen],
        retransmissions: &'a VecDeque<i64>,
        session: &'a SessionInfo,
    ) -> Self {
        TransactionView {
            transaction,
            client: key.endpoint(client_side),
            server: key.endpoint(client_side.other()),
            client_side,
            closes,
            retransmissions,
            fate: Fate::of_transaction(transaction),
            session,
        }
    }

    /// What the session knew when the transaction was told (after the segment that completed it): the
    /// login's user and schema, as `COM_CHANGE_USER` and `COM_INIT_DB` changed them (a `USE` statement
    /// is not followed), the server's thread id and version from its greeting, the capabilities.
    pub fn session(&self) -> &'a SessionInfo {
        self.session
    }

    /// The client's side of the connection.
    pub(crate) fn client_side(&self) -> Side {
        self.client_side
    }

    /// What became of the request: every count sorts requests this one way.
    pub fn fate(&self) -> Fate {
        self.fate
    }

    /// From the request's first byte to the response's last, for a request [`Fate::Answered`] (`None`
    /// otherwise, or when the two timestamps cannot both be right).
    pub fn response_time_ns(&self) -> Option<u64> {
        response_time_ns(self.transaction).filter(|_| self.fate() == Fate::Answered)
    }

    /// How long a request cut off by a close waited, from its first byte to the close.
    pub fn waited_ns(&self) -> Option<u64> {
        let t = self.transaction;
        let (by, flag) = match t.outcome {
            Outcome::ClosedMidResponse { by, flag }
            | Outcome::ClosedBeforeResponse { by, flag } => (by, flag),
            _ => return None,
        };
        let side = match by {
            Direction::ClientToServer => self.client_side,
            Direction::ServerToClient => self.client_side.other(),
        };
        let flag = match flag {
            CloseFlag::Fin => TcpCloseFlag::Fin,
            CloseFlag::Rst => TcpCloseFlag::Rst,
        };
        let close = self
            .closes
            .iter()
            .find(|c| c.side == side && c.flag == flag)?;
        plausible_response_time(t.request_ts_ns as i64, close.ts_ns as i64)
    }

    /// Whether the connection retransmitted a segment between the request and the end of its response.
    pub fn retransmitted(&self) -> bool {
        let Some(rt) = self.response_time_ns() else {
            return false;
        };
        let start = self.transaction.request_ts_ns as i64;
        let end = start.saturating_add(rt as i64);
        self.retransmissions.iter().any(|&r| r >= start && r <= end)
    }

    /// The MySQL error code of an ERR response.
    pub fn error_code(&self) -> Option<u16> {
        match self.transaction.outcome {
            Outcome::Err { code, .. } => Some(code),
            _ => None,
        }
    }
}

/// Requests that expect a response, by what became of them ([`Fate`]): of a whole report or of one
/// statement group.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct RequestCounts {
    /// Answered: the response began in the capture (and did not stop at its end). These, and only
    /// these, have a time to first byte; those whose response's end is also in the capture have a
    /// response time.
    pub answered: u64,
    /// Of the answered, those whose response's end is not in the capture (the rest fell into bytes it
    /// does not hold): they have a time to first byte and no response time.
    pub answered_end_unknown: u64,
    /// Cut off by a close (FIN or RST) before their response was complete.
    pub cut_off: u64,
    /// Still waiting when the capture ended.
    pub unanswered: u64,
    /// Their response could not be read to its end (bytes the capture does not hold: the snap length cut
    /// the packets, or they were lost).
    pub unreadable: u64,
}

impl RequestCounts {
    pub(crate) fn count(&mut self, fate: Fate, t: &Transaction) {
        match fate {
            Fate::Answered => {
                self.answered += 1;
                self.answered_end_unknown += u64::from(!response_end_known(t));
            }
            Fate::CutOff => self.cut_off += 1,
            Fate::Unanswered => self.unanswered += 1,
            Fate::Unreadable => self.unreadable += 1,
            Fate::NoResponse => {}
        }
    }

    pub(crate) fn merge(&mut self, o: &RequestCounts) {
        self.answered += o.answered;
        self.answered_end_unknown += o.answered_end_unknown;
        self.cut_off += o.cut_off;
        self.unanswered += o.unanswered;
        self.unreadable += o.unreadable;
    }

    /// Every request that expects a response.
    pub fn total(&self) -> u64 {
        self.answered + self.cut_off + self.unanswered + self.unreadable
    }

    /// "1,506 answered, 2 cut off by a close, 1 still unanswered when the capture ended": the fates with
    /// requests, in this order.
    pub fn describe(&self) -> String {
        let parts = [
            (self.answered, "answered"),
            (self.cut_off, "cut off by a close"),
            (self.unanswered, "still unanswered when the capture ended"),
            (
                self.unreadable,
                "whose response could not be read to its end",
            ),
        ];
        let mut said: Vec<String> = parts
            .iter()
            .filter(|(n, _)| *n > 0)
            .map(|(n, what)| format!("{} {what}", crate::units::count(*n)))
            .collect();
        if let (Some(first), n @ 1..) = (said.first_mut(), self.answered_end_unknown) {
            if self.answered > 0 {
                first.push_str(&format!(
                    ", of which {} without its response's end in the capture",
                    crate::units::count(n)
                ));
            }
        }
        if said.is_empty() {
            "none".into()
        } else {
            said.join(", ")
        }
    }
}

/// The statement text before the decoder's mark of bytes missing inside it (` /* gap: N bytes */`, at its
/// end), or `None` when the text is whole.
#[inline]
pub(crate) fn cut_text(sql: &str) -> Option<&str> {
    // Nearly every statement is whole and does not end in `/`: one byte tells, before the suffix is
    // compared (this runs once per request).
    if sql.as_bytes().last() != Some(&b'/') {
        return None;
    }
    cut_text_ending_in_slash(sql)
}

/// [`cut_text`] of a statement ending in `/`: out of line, so that the test for the common case inlines.
#[inline(never)]
fn cut_text_ending_in_slash(sql: &str) -> Option<&str> {
    let head = sql.strip_suffix(" bytes */")?;
    let at = head.rfind(" /* gap: ")?;
    let n = head.get(at + " /* gap: ".len()..)?;
    (!n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())).then(|| &sql[..at])
}
