//! MySQL on every TCP connection that speaks it: recognised from the server greeting or the shape of a
//! request and its response (any port, or a port the user names), its bytes put in order and decoded by
//! `pcapsleuth-mysql`, every transaction aggregated, and every close read in MySQL terms.

use std::collections::{BTreeMap, HashMap, VecDeque};

use pcapsleuth_flow::{
    CloseFlag as TcpCloseFlag, ClosedBy, ConnectionState, Endpoint, FlowBuildHasher, FrameRef,
    Role, Side, StreamEvent, StreamReassembler, TcpFlags, TcpSegment,
};
use pcapsleuth_mysql::{
    CloseContext, CloseFlag, Command, Direction, Encryption, Fingerprinter, Meta, Outcome, Session,
    SessionPhase, SqlState, Transaction,
};
use serde::Serialize;

use crate::events::{Analysis, ConnectionView, EndView, TransactionView};
use crate::facts::CaptureFacts;
use crate::histogram::{Histogram, RtSummary};
use crate::recognition::{Recognised, Recogniser, Recognition};
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

/// Which transactions the MySQL report counts (`pcapsleuth mysql --port/--server/--errors-only/--slower-than`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MysqlFilter {
    pub port: Option<u16>,
    pub server: Option<Endpoint>,
    pub errors_only: bool,
    pub slower_than_ns: Option<u64>,
}

impl MysqlFilter {
    fn connection(&self, client: Endpoint, server: Endpoint) -> bool {
        self.port
            .is_none_or(|p| client.port == p || server.port == p)
            && self.server.is_none_or(|s| s == server)
    }

    /// Whether `t` is counted; `waited_ns` is how long a request cut off by a close had waited.
    fn transaction(&self, t: &Transaction, waited_ns: Option<u64>) -> bool {
        (!self.errors_only || matches!(t.outcome, Outcome::Err { .. }))
            && self.slower_than_ns.is_none_or(|min| {
                response_time_ns(t)
                    .filter(|_| Fate::of(&t.outcome) == Fate::Answered)
                    .or(waited_ns)
                    .is_some_and(|rt| rt >= min)
            })
    }
}

/// Request (first packet) to the last byte of the response: what the client waited for. Counted only for
/// requests [`Fate::Answered`]: the others' last response byte is not the end of their response. `None`
/// when unanswered, or when the two timestamps cannot both be right ([`crate::plausible_response_time`]).
pub fn response_time_ns(t: &Transaction) -> Option<u64> {
    t.last_response_ts_ns
        .and_then(|end| plausible_response_time(t.request_ts_ns as i64, end as i64))
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
    pub request_frame: u64,
    /// Seconds since the epoch.
    pub request_time: f64,
    pub client: String,
    pub server: String,
    pub command: String,
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

/// How a connection was recognised as MySQL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RecognisedBy {
    Greeting,
    RequestResponseShape,
    /// A whole command that was never answered: cut off by a close, or still waiting when the capture ended.
    UnansweredRequest,
    Port,
    /// Binlog event packets or semi-sync ACKs: a replication stream joined after its dump.
    BinlogEvents,
}

enum Detect {
    Undecided(Box<Recogniser>),
    Mysql,
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
    pub recognised_by: RecognisedBy,
    pub server_version: Option<String>,
    pub user: Option<String>,
    pub schema: Option<String>,
    pub encrypted: bool,
    /// Bytes after TLS began (or of a compression that cannot be decoded): fed, not read.
    pub unread_bytes: u64,
    pub transactions: u64,
    pub errors: u64,
    #[serde(skip)]
    pub closes: Vec<CloseSeenFacts>,
    /// Requests still waiting for their response when the capture ended.
    #[serde(skip)]
    pub unanswered: Vec<UnansweredRequest>,
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
    pub frame: u64,
    pub phase: SessionPhase,
    pub command: Option<Command>,
    pub statement: Option<String>,
    pub request_frame: Option<u64>,
    pub rows: u64,
    pub bytes: u64,
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
    /// Times of this connection's recent retransmissions, to tell which exchanges saw one.
    retransmissions: VecDeque<i64>,
    /// The distributions of the replication stream the connection carries, if it does.
    replication: Option<Box<StreamTrack>>,
    /// The last segment's time: how long an open semi-sync wait lasted at least.
    last_ts_ns: u64,
    /// Requests the end of the capture found waiting.
    unanswered: Vec<UnansweredRequest>,
}

/// Retransmission times kept per connection: enough to cover the requests in flight, bounded.
const RETRANSMISSIONS_KEPT: usize = 256;

fn meta(at: FrameRef) -> Meta {
    Meta {
        ts_ns: at.ts.0.max(0) as u64,
        frame: at.frame,
    }
}

impl MysqlTrack {
    pub(crate) fn new(mode: MysqlDetection) -> Self {
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
            retransmissions: VecDeque::new(),
            replication: None,
            last_ts_ns: 0,
            unanswered: Vec::new(),
        }
    }

    /// The connection retransmitted a segment at `ts_ns`.
    pub(crate) fn retransmission(&mut self, ts_ns: i64) {
        if self.retransmissions.len() == RETRANSMISSIONS_KEPT {
            self.retransmissions.pop_front();
        }
        self.retransmissions.push_back(ts_ns);
    }

    /// The client side, once MySQL told it (greeting, or request/response shape).
    pub(crate) fn client(&self) -> Option<Side> {
        self.client.filter(|_| self.is_mysql())
    }

    pub(crate) fn is_mysql(&self) -> bool {
        matches!(self.detect, Detect::Mysql)
    }

    /// Feeds one segment of the connection (after the TCP tracker saw it).
    pub(crate) fn segment(
        &mut self,
        conn: &ConnectionState,
        side: Side,
        seg: &TcpSegment<'_>,
        at: FrameRef,
    ) {
        if let Detect::Undecided(r) = &mut self.detect {
            match r.segment(conn, side, seg, at) {
                Recognition::Undecided => return,
                Recognition::NotMysql => {
                    self.detect = Detect::NotMysql;
                    return;
                }
                Recognition::Mysql(m) => self.start(m, conn),
            }
        }
        if self.is_mysql() {
            self.feed(side, seg, at);
        }
    }

    /// The connection is MySQL: the session starts, and is fed the bytes held while it was being
    /// recognised, segment by segment as they came (only bytes: their ACKs and closes were read as they
    /// came, and a close is the segment at hand's).
    fn start(&mut self, m: Recognised, conn: &ConnectionState) {
        self.detect = Detect::Mysql;
        self.recognised_by = Some(m.by);
        self.client = Some(m.client);
        self.session = Some(Session::new(m.mode));
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
            };
            self.feed(side, &replay, at);
        });
    }

    fn feed(&mut self, side: Side, seg: &TcpSegment<'_>, at: FrameRef) {
        let (Some(client), Some(session)) = (self.client, self.session.as_mut()) else {
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
        let mut out = |e: StreamEvent<'_>, m: Meta| match e {
            StreamEvent::Data(b) => session.feed(d, b, m),
            StreamEvent::Gap(n) => session.gap(d, n, m),
        };
        self.streams[side.index()].segment(
            seg.seq,
            seg.flags.syn(),
            seg.payload,
            seg.payload_len,
            meta(at),
            &mut out,
        );
        if seg.flags.ack() {
            let od = dir(side.other());
            let mut out = |e: StreamEvent<'_>, m: Meta| match e {
                StreamEvent::Data(b) => session.feed(od, b, m),
                StreamEvent::Gap(n) => session.gap(od, n, m),
            };
            self.streams[side.other().index()].acknowledged(seg.ack, &mut out);
        }
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
                let mut out = |e: StreamEvent<'_>, m: Meta| match e {
                    StreamEvent::Data(b) => session.feed(d, b, m),
                    StreamEvent::Gap(n) => session.gap(d, n, m),
                };
                self.streams[side.index()].flush(&mut out);
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

    /// Hands the transactions the session completed to `tell`, counting them. Called after every
    /// segment: most complete none.
    #[inline]
    pub(crate) fn drain(&mut self, conn: &ConnectionState, tell: impl FnMut(&TransactionView<'_>)) {
        if self
            .session
            .as_ref()
            .is_some_and(|s| !s.completed().is_empty())
        {
            self.drain_completed(conn, tell);
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

    fn drain_completed(
        &mut self,
        conn: &ConnectionState,
        mut tell: impl FnMut(&TransactionView<'_>),
    ) {
        let (Some(client), Some(session)) = (self.client, self.session.as_mut()) else {
            return;
        };
        let key = conn.key();
        for t in session.completed() {
            self.transactions += 1;
            self.errors += u64::from(matches!(t.outcome, Outcome::Err { .. }));
            let view = TransactionView::new(t, client, key, &self.closes, &self.retransmissions);
            if view.fate() == Fate::Unanswered {
                // Rare (the end of the capture only), and wanted by `first-reset` too.
                self.unanswered
                    .push(UnansweredRequest::new(t, view.client, view.server));
            }
            tell(&view);
        }
        session.clear_completed();
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
        tell: impl FnMut(&TransactionView<'_>),
    ) -> Option<MysqlSessionFacts> {
        if let Detect::Undecided(r) = &mut self.detect {
            // The last turn is judged on what the capture holds of it; a whole command that looked like
            // MySQL was still waiting for its answer.
            if let Recognition::Mysql(m) = r.end(conn) {
                self.start(m, conn);
            }
        }
        if !self.is_mysql() {
            return None;
        }
        let client = self.client?;
        if let Some(session) = self.session.as_mut() {
            for side in [Side::Lo, Side::Hi] {
                let d = if side == client {
                    Direction::ClientToServer
                } else {
                    Direction::ServerToClient
                };
                let mut out = |e: StreamEvent<'_>, m: Meta| match e {
                    StreamEvent::Data(b) => session.feed(d, b, m),
                    StreamEvent::Gap(n) => session.gap(d, n, m),
                };
                self.streams[side.index()].flush(&mut out);
            }
            session.finish();
        }
        self.drain(conn, tell);
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
        Some(MysqlSessionFacts {
            recognised_by: self.recognised_by?,
            server_version: info.as_ref().and_then(|i| i.server_version.clone()),
            user: info.as_ref().and_then(|i| i.user.clone()),
            schema: info.as_ref().and_then(|i| i.schema.clone()),
            encrypted: info
                .as_ref()
                .is_some_and(|i| i.encryption == Encryption::Tls),
            unread_bytes: info.as_ref().map_or(0, |i| i.counters.undecoded_bytes),
            transactions: self.transactions,
            errors: self.errors,
            unanswered: std::mem::take(&mut self.unanswered),
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
                        rows,
                        bytes,
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
    pub client: String,
    pub server: String,
    /// The side that closed.
    pub by: Role,
    pub flag: TcpCloseFlag,
    pub command: String,
    pub query: Option<String>,
    pub request_frame: u64,
    /// Seconds since the epoch of the request.
    pub request_time: f64,
    /// Rows and response bytes delivered before the close.
    pub rows: u64,
    pub bytes: u64,
    /// From the request to the close, seconds: how long the client waited before it was cut off.
    pub waited_s: f64,
    /// What preceded the close on the connection, in TCP facts (a zero window, resends, silence), as
    /// `first-reset` words it; empty when nothing did.
    pub preceded_by: Vec<String>,
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
            preceded_by: conn
                .first_close(seen.side, seen.flag)
                .map(|event| crate::reasons::why(&ClosedBy { event, by }))
                .unwrap_or_default(),
        })
    }
}

/// Streams in one order whatever the merge order: a connection carries at most one stream and is tracked
/// by one task, so its first frame and endpoints identify it.
fn sort_streams(streams: &mut [ReplicationStream]) {
    streams.sort_by(|a, b| {
        (a.dump_frame.or(a.first_event_frame), &a.client, &a.server).cmp(&(
            b.dump_frame.or(b.first_event_frame),
            &b.client,
            &b.server,
        ))
    });
}

/// [`MysqlAggregate::add`]'s fingerprints: the fingerprinter (its buffer, and the statement heads it
/// remembers) and the key of a cut statement's group (its fingerprint and [`CUT_MARK`]), built in reused
/// buffers. Owned by the analysis instance, so no state hides in the thread.
#[derive(Default)]
struct Fingerprints {
    fingerprinter: Fingerprinter,
    cut_key: String,
}

/// Ends the fingerprint of a statement the capture holds only in part: its group never merges with the
/// complete statements it may be the start of.
pub const CUT_MARK: &str = "…";

/// The statement text before the decoder's mark of bytes missing inside it (` /* gap: N bytes */`, at its
/// end), or `None` when the text is whole.
fn cut_text(sql: &str) -> Option<&str> {
    let head = sql.strip_suffix(" bytes */")?;
    let at = head.rfind(" /* gap: ")?;
    let n = head.get(at + " /* gap: ".len()..)?;
    (!n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())).then(|| &sql[..at])
}

/// Up to this many distinct messages are kept per error code (those seen first).
const MESSAGE_SAMPLES: usize = 3;

#[derive(Debug, Clone, Default, PartialEq)]
struct ErrorAgg {
    count: u64,
    rt: Histogram,
    messages: MessageSamples,
    /// The SQLSTATE of the earliest response that carried one, and its request's frame: responses with
    /// one code may differ (a damaged byte), and the earliest does not depend on how the work was split.
    sql_state: Option<(u64, SqlState)>,
}

impl ErrorAgg {
    fn note_sql_state(&mut self, frame: u64, state: SqlState) {
        if !state.is_empty() && self.sql_state.is_none_or(|(seen, _)| frame < seen) {
            self.sql_state = Some((frame, state));
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
struct StatementAgg {
    requests: RequestCounts,
    errors: u64,
    rows: u64,
    /// Response times of the answered requests.
    rt: Histogram,
    /// How long the requests cut off by a close had waited.
    waited: Histogram,
    /// The earliest statement of the group, and its frame.
    sample: (u64, String),
    /// The group's statements are held only in part by the capture.
    text_cut: bool,
}

/// Requests that expect a response, by what became of them ([`Fate`]): of a whole report or of one
/// statement group.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct RequestCounts {
    /// Answered: these, and only these, have response times.
    pub answered: u64,
    /// Cut off by a close (FIN or RST) before their response was complete.
    pub cut_off: u64,
    /// Still waiting when the capture ended.
    pub unanswered: u64,
    /// Their response could not be read to its end (bytes the capture does not hold: the snap length cut
    /// the packets, or they were lost).
    pub unreadable: u64,
}

impl RequestCounts {
    fn count(&mut self, fate: Fate) {
        match fate {
            Fate::Answered => self.answered += 1,
            Fate::CutOff => self.cut_off += 1,
            Fate::Unanswered => self.unanswered += 1,
            Fate::Unreadable => self.unreadable += 1,
            Fate::NoResponse => {}
        }
    }

    fn merge(&mut self, o: &RequestCounts) {
        self.answered += o.answered;
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
        let said: Vec<String> = parts
            .iter()
            .filter(|(n, _)| *n > 0)
            .map(|(n, what)| format!("{} {what}", crate::units::count(*n)))
            .collect();
        if said.is_empty() {
            "none".into()
        } else {
            said.join(", ")
        }
    }
}

/// The MySQL statistics of a run (`pcapsleuth mysql`): requests by command and fate, errors by code
/// with their own response times, statements grouped by fingerprint, requests per second, logins,
/// incidents (closes that cut a request off), replication streams, and requests unanswered at the end.
///
/// Counts the transactions and sessions its [`MysqlFilter`] lets through. Its output is a
/// [`MysqlAggregate`]; [`MysqlAggregate::report`] gives the report.
#[derive(Default)]
pub struct MysqlStatistics {
    filter: MysqlFilter,
    aggregate: MysqlAggregate,
    fingerprints: Fingerprints,
}

impl MysqlStatistics {
    /// Statistics of the transactions `filter` lets through.
    pub fn new(filter: MysqlFilter) -> Self {
        MysqlStatistics {
            filter,
            ..MysqlStatistics::default()
        }
    }
}

/// A login seen from the client's first SYN: the SYN, and the time from it to the answer to the login.
pub(crate) fn login_from_syn(
    conn: &ConnectionView<'_>,
    t: &TransactionView<'_>,
) -> Option<(FrameRef, u64)> {
    if t.transaction.command != Command::Connect {
        return None;
    }
    let syn = conn.tcp().first_syn()?;
    // Timestamps that cannot both be right (one outside the capture's body) time nothing.
    let login = plausible_response_time(syn.ts.0, t.transaction.last_response_ts_ns? as i64)?;
    Some((syn, login))
}

impl Analysis for MysqlStatistics {
    type PerConnection = ();
    type Output = MysqlAggregate;

    fn transaction(&mut self, _: &mut (), conn: &ConnectionView<'_>, view: &TransactionView<'_>) {
        let filter = &self.filter;
        if !filter.connection(view.client, view.server) {
            return;
        }
        let t = view.transaction;
        if let Some((syn, login)) = login_from_syn(conn, view) {
            if filter.transaction(t, None) {
                let tcp = conn.tcp();
                self.aggregate.connect.add(
                    tcp.connect_ns(),
                    tcp.first_data(conn.client_side().other())
                        .and_then(|g| plausible_response_time(syn.ts.0, g.ts.0)),
                    login,
                );
            }
        }
        let waited_ns = view.waited_ns();
        if filter.transaction(t, waited_ns) {
            self.aggregate
                .add(t, view.fate(), waited_ns, &mut self.fingerprints);
        }
    }

    fn connection_ended(&mut self, _: (), conn: &ConnectionView<'_>, end: &EndView<'_>) {
        let Some(facts) = end.mysql else {
            return;
        };
        if !self.filter.connection(conn.client(), conn.server()) {
            return;
        }
        let m = &mut self.aggregate;
        if let Some(stream) = &facts.replication {
            m.replication.push((**stream).clone());
        }
        m.sessions += 1;
        m.incidents.extend(facts.incidents.iter().cloned());
        if !self.filter.errors_only {
            m.unanswered.extend(facts.unanswered.iter().cloned());
        }
    }

    fn merge(&mut self, other: Self) {
        self.aggregate.merge(other.aggregate);
    }

    fn finish(mut self, capture: &CaptureFacts) -> MysqlAggregate {
        let timeline = &capture.timeline;
        self.aggregate.keep_within(timeline);
        // The MySQL span and the waits of requests open at the end run to the body's last packet, not to
        // a timestamp outside it.
        if let (Some(first), Some(last)) = (timeline.body_first, timeline.body_last) {
            self.aggregate.capture_ended(first.0, last.0);
        }
        self.aggregate
    }
}

/// Everything the `mysql` report counts, mergeable in any order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MysqlAggregate {
    pub sessions: u64,
    /// Requests expecting a response (logins aside), by fate.
    requests: RequestCounts,
    /// How long the requests cut off by a close had waited.
    waited: Histogram,
    /// Requests by command byte ([`Command::byte`]; empty until the first): one counter per
    /// possible byte costs less than a map lookup per request.
    commands: Vec<u64>,
    /// By error code (a hash map: looked up once per error response; sorted when reported).
    errors: HashMap<u16, ErrorAgg, FlowBuildHasher>,
    /// Response times of answered requests, split by outcome (all of them: their sum, at report time).
    rt_ok: Histogram,
    rt_err: Histogram,
    statements: HashMap<String, StatementAgg, FlowBuildHasher>,
    per_second: HashMap<i64, (u64, u64), FlowBuildHasher>,
    incidents: Vec<Incident>,
    connect: ConnectTimes,
    /// One per replication stream.
    replication: Vec<ReplicationStream>,
    pub(crate) unanswered: Vec<UnansweredRequest>,
    /// Requests whose statement text the capture holds only in part.
    statements_cut: u64,
    /// The capture's first and last packet times (ns since the epoch), once the run is over.
    span: Option<(i64, i64)>,
}

/// What MySQL clients seen from their first SYN waited for before their first command.
#[derive(Debug, Clone, Default, PartialEq)]
struct ConnectTimes {
    syn_ack: Histogram,
    greeting: Histogram,
    login: Histogram,
}

impl ConnectTimes {
    fn add(&mut self, syn_ack: Option<u64>, greeting: Option<u64>, login: u64) {
        if let Some(ns) = syn_ack {
            self.syn_ack.add(ns);
        }
        if let Some(ns) = greeting {
            self.greeting.add(ns);
        }
        self.login.add(login);
    }

    fn merge(&mut self, o: &ConnectTimes) {
        self.syn_ack.merge(&o.syn_ack);
        self.greeting.merge(&o.greeting);
        self.login.merge(&o.login);
    }
}

/// Times from the client's first SYN, µs, of the logins the capture saw from their SYN.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConnectSummary {
    /// To the SYN-ACK the client answered (what `connect()` waited for).
    pub syn_ack_us: RtSummary,
    /// To the server's greeting.
    pub greeting_us: RtSummary,
    /// To the answer to the login (OK or ERR): all the client waited for before its first command.
    pub login_us: RtSummary,
}

/// The earliest [`MESSAGE_SAMPLES`] distinct messages of one error code, each with the first request
/// frame it was seen at, in (frame, message) order. A short vector: an error storm looks a message up
/// once per error, and comparing a few lengths is cheaper than walking a tree.
#[derive(Debug, Clone, Default, PartialEq)]
struct MessageSamples(Vec<(u64, String)>);

impl MessageSamples {
    /// Keeps `message`, first seen at `frame`, if it is among the earliest.
    fn note(&mut self, message: &str, frame: u64) {
        // Later than every kept message (the last: they are sorted), it changes nothing, whether it is one
        // of them or not, and is not copied. An error storm repeats a few messages millions of times in
        // capture order, so this is nearly every call; the frames differ, so no text is compared.
        let full = self.0.len() >= MESSAGE_SAMPLES;
        if full
            && self
                .0
                .last()
                .is_some_and(|(f, m)| (*f, m.as_str()) < (frame, message))
        {
            return;
        }
        if let Some(seen) = self.0.iter_mut().find(|(_, m)| m == message) {
            if frame < seen.0 {
                seen.0 = frame;
                self.0.sort_unstable();
            }
            return;
        }
        self.0.push((frame, message.to_string()));
        self.0.sort_unstable();
        self.0.truncate(MESSAGE_SAMPLES);
    }

    fn merge(&mut self, o: MessageSamples) {
        for (frame, message) in o.0 {
            self.note(&message, frame);
        }
    }

    fn messages(&self) -> Vec<String> {
        self.0.iter().map(|(_, m)| m.clone()).collect()
    }
}

impl MysqlAggregate {
    /// Counts `t`, whose fate is `fate`; `waited_ns` is how long a request cut off by a close waited.
    fn add(
        &mut self,
        t: &Transaction,
        fate: Fate,
        waited_ns: Option<u64>,
        fingerprints: &mut Fingerprints,
    ) {
        self.commands.resize(256, 0);
        if let Some(n) = self.commands.get_mut(usize::from(t.command.byte())) {
            *n += 1;
        }
        let is_err = matches!(t.outcome, Outcome::Err { .. });
        let rt = response_time_ns(t).filter(|_| fate == Fate::Answered);
        // Logins (COM_CONNECT) count among errors (1045 access denied, 1130 host not allowed, ...) but not
        // among requests and their response times.
        let request = fate != Fate::NoResponse && t.command != Command::Connect;
        if request {
            self.requests.count(fate);
            let sec = (t.request_ts_ns / 1_000_000_000) as i64;
            let e = self.per_second.entry(sec).or_insert((0, 0));
            e.0 += 1;
            e.1 += u64::from(is_err);
            if let Some(rt) = rt {
                if is_err {
                    self.rt_err.add(rt);
                } else {
                    self.rt_ok.add(rt);
                }
            }
            if let Some(w) = waited_ns {
                self.waited.add(w);
            }
        }
        if let Outcome::Err {
            code,
            sql_state,
            message,
        } = &t.outcome
        {
            let agg = self.errors.entry(*code).or_default();
            agg.count += 1;
            if let Some(rt) = rt {
                agg.rt.add(rt);
            }
            agg.note_sql_state(t.request_frame, *sql_state);
            agg.messages.note(message, t.request_frame);
        }
        if !request {
            return;
        }
        if let Some(sql) = &t.statement {
            let count = |agg: &mut StatementAgg| {
                agg.requests.count(fate);
                agg.errors += u64::from(is_err);
                agg.rows += t.rows;
                if let Some(rt) = rt {
                    agg.rt.add(rt);
                }
                if let Some(w) = waited_ns {
                    agg.waited.add(w);
                }
                if t.request_frame < agg.sample.0 {
                    agg.sample = (t.request_frame, sql.clone());
                }
            };
            let cut = cut_text(sql);
            self.statements_cut += u64::from(cut.is_some());
            // The fingerprint is built in a reused buffer and looked up by reference: a `String` is
            // allocated once per statement group, not once per request.
            let Fingerprints {
                fingerprinter,
                cut_key,
            } = fingerprints;
            let fp = fingerprinter.fingerprint(cut.unwrap_or(sql));
            let fp = match cut {
                Some(_) => {
                    cut_key.clear();
                    cut_key.push_str(fp);
                    cut_key.push_str(CUT_MARK);
                    cut_key.as_str()
                }
                None => fp,
            };
            match self.statements.get_mut(fp) {
                Some(agg) => count(agg),
                None => {
                    let mut agg = StatementAgg {
                        sample: (t.request_frame, sql.clone()),
                        text_cut: cut.is_some(),
                        ..StatementAgg::default()
                    };
                    count(&mut agg);
                    self.statements.insert(fp.to_string(), agg);
                }
            }
        }
    }

    /// Requests that expect a response, by fate.
    pub fn requests(&self) -> RequestCounts {
        self.requests
    }

    /// Requests whose statement text the capture holds only in part.
    pub fn statements_cut(&self) -> u64 {
        self.statements_cut
    }

    /// The run is over: the capture's first and last packet times (ns since the epoch) give the span
    /// and how long the requests still open at the end had waited.
    pub(crate) fn capture_ended(&mut self, first_ns: i64, last_ns: i64) {
        self.span = Some((first_ns, last_ns));
        for u in &mut self.unanswered {
            u.capture_ended(last_ns);
        }
    }

    pub(crate) fn merge(&mut self, o: MysqlAggregate) {
        self.sessions += o.sessions;
        self.requests.merge(&o.requests);
        self.statements_cut += o.statements_cut;
        self.waited.merge(&o.waited);
        self.span = self.span.or(o.span);
        if self.commands.len() < o.commands.len() {
            self.commands.resize(o.commands.len(), 0);
        }
        for (n, m) in self.commands.iter_mut().zip(&o.commands) {
            *n += m;
        }
        for (code, e) in o.errors {
            let agg = self.errors.entry(code).or_default();
            agg.count += e.count;
            agg.rt.merge(&e.rt);
            if let Some((frame, state)) = e.sql_state {
                agg.note_sql_state(frame, state);
            }
            agg.messages.merge(e.messages);
        }
        self.rt_ok.merge(&o.rt_ok);
        self.rt_err.merge(&o.rt_err);
        for (fp, s) in o.statements {
            match self.statements.get_mut(&fp) {
                None => {
                    self.statements.insert(fp, s);
                }
                Some(agg) => {
                    agg.requests.merge(&s.requests);
                    agg.errors += s.errors;
                    agg.rows += s.rows;
                    agg.rt.merge(&s.rt);
                    agg.waited.merge(&s.waited);
                    if s.sample.0 < agg.sample.0 {
                        agg.sample = s.sample;
                    }
                }
            }
        }
        for (sec, (q, e)) in o.per_second {
            let slot = self.per_second.entry(sec).or_insert((0, 0));
            slot.0 += q;
            slot.1 += e;
        }
        self.incidents.extend(o.incidents);
        self.connect.merge(&o.connect);
        self.replication.extend(o.replication);
        sort_streams(&mut self.replication);
        // Kept in one order whatever the merge order (batches, buckets): frame, then kind.
        self.incidents
            .sort_by(|a, b| (a.frame, &a.kind).cmp(&(b.frame, &b.kind)));
        self.unanswered.extend(o.unanswered);
        self.unanswered.sort_by_key(|u| u.request_frame);
    }

    /// Leaves out the seconds outside the capture's body (the requests still count).
    pub(crate) fn keep_within(&mut self, timeline: &crate::timeline::Timeline) {
        self.per_second.retain(|&sec, _| {
            let start = sec.saturating_mul(1_000_000_000);
            timeline.overlaps_body(start, start.saturating_add(1_000_000_000))
        });
    }

    /// Response-time distribution of each statement group.
    pub(crate) fn statement_histograms(&self) -> impl Iterator<Item = (&String, &Histogram)> {
        self.statements.iter().map(|(fp, s)| (fp, &s.rt))
    }

    /// The finished report, in an order that does not depend on how the work was split.
    pub fn report(mut self) -> MysqlReport {
        self.incidents
            .sort_by(|a, b| (a.frame, &a.kind).cmp(&(b.frame, &b.kind)));
        sort_streams(&mut self.replication);
        let mut statements: Vec<StatementGroup> = self
            .statements
            .into_iter()
            .map(|(fp, s)| StatementGroup {
                fingerprint: fp,
                sample: s.sample.1,
                count: s.requests.total(),
                requests: s.requests,
                errors: s.errors,
                rows: s.rows,
                total_us: s.rt.sum_ns() as f64 / 1e3,
                rt_us: s.rt.summary_us(),
                cut_off_waited_us: s.waited.summary_us(),
                text_cut: s.text_cut,
            })
            .collect();
        statements.sort_by(|a, b| {
            b.total_us
                .total_cmp(&a.total_us)
                .then(b.count.cmp(&a.count))
                .then(a.fingerprint.cmp(&b.fingerprint))
        });
        MysqlReport {
            sessions: self.sessions,
            queries: self.requests.total(),
            requests: self.requests,
            span_s: self.span.map_or(0.0, |(a, b)| (b - a).max(0) as f64 / 1e9),
            cut_off_waited_us: self.waited.summary_us(),
            unanswered: self.unanswered,
            commands: (0..=u8::MAX)
                .zip(&self.commands)
                .filter(|&(_, &n)| n > 0)
                .fold(BTreeMap::new(), |mut names, (b, n)| {
                    // Unknown command bytes share one name.
                    *names
                        .entry(Command::from_byte(b).name().to_string())
                        .or_insert(0) += n;
                    names
                }),
            errors: self
                .errors
                .iter()
                .map(|(k, e)| (k.to_string(), e.count))
                .collect(),
            error_details: self
                .errors
                .iter()
                .collect::<BTreeMap<_, _>>()
                .into_iter()
                .map(|(code, e)| ErrorDetail {
                    code: *code,
                    sql_state: e
                        .sql_state
                        .map_or_else(String::new, |(_, state)| state.to_string()),
                    count: e.count,
                    messages: e.messages.messages(),
                    rt_us: e.rt.summary_us(),
                })
                .collect(),
            rt_us: {
                let mut all = self.rt_ok.clone();
                all.merge(&self.rt_err);
                all.summary_us()
            },
            rt_ok_us: self.rt_ok.summary_us(),
            rt_error_us: self.rt_err.summary_us(),
            statements,
            per_second: self
                .per_second
                .iter()
                .collect::<BTreeMap<_, _>>()
                .into_iter()
                .map(|(&s, &(q, e))| SecondCounts {
                    second: s,
                    queries: q,
                    errors: e,
                })
                .collect(),
            incidents: self.incidents,
            connect: ConnectSummary {
                syn_ack_us: self.connect.syn_ack.summary_us(),
                greeting_us: self.connect.greeting.summary_us(),
                login_us: self.connect.login.summary_us(),
            },
            replication: self.replication,
        }
    }
}

/// `pcapsleuth mysql --json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MysqlReport {
    /// Connections recognised as MySQL.
    pub sessions: u64,
    /// Requests that expect a response (logins, COM_QUIT and the other commands without one aside):
    /// `requests` says what became of them.
    pub queries: u64,
    pub requests: RequestCounts,
    /// The capture's span, first packet to last, seconds.
    pub span_s: f64,
    /// How long the requests cut off by a close had waited, microseconds.
    pub cut_off_waited_us: RtSummary,
    /// Requests still waiting for their response when the capture ended, in request order.
    pub unanswered: Vec<UnansweredRequest>,
    /// Every request by command name ("COM_QUERY", "COM_STMT_EXECUTE", ..., "COM_CONNECT" for logins).
    pub commands: BTreeMap<String, u64>,
    /// Error responses by code.
    pub errors: BTreeMap<String, u64>,
    pub error_details: Vec<ErrorDetail>,
    /// Response times of the answered requests, microseconds.
    pub rt_us: RtSummary,
    pub rt_ok_us: RtSummary,
    pub rt_error_us: RtSummary,
    /// Statements grouped by fingerprint, by total time.
    pub statements: Vec<StatementGroup>,
    pub per_second: Vec<SecondCounts>,
    pub incidents: Vec<Incident>,
    /// Logins seen from the client's first SYN: what the client waited for before its first command.
    pub connect: ConnectSummary,
    /// Replication streams (a replica's binlog dump and what followed); their events and ACKs are not
    /// among the requests and response times above.
    pub replication: Vec<ReplicationStream>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ErrorDetail {
    pub code: u16,
    pub sql_state: String,
    pub count: u64,
    /// The first distinct messages seen (up to 3).
    pub messages: Vec<String>,
    pub rt_us: RtSummary,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StatementGroup {
    pub fingerprint: String,
    /// The first statement of the group, as sent.
    pub sample: String,
    /// Requests of the group that expect a response; `answered`, `cut_off`, `unanswered` and
    /// `unreadable` say what became of them.
    pub count: u64,
    #[serde(flatten)]
    pub requests: RequestCounts,
    pub errors: u64,
    pub rows: u64,
    /// Sum and distribution of the response times of the answered requests.
    pub total_us: f64,
    pub rt_us: RtSummary,
    /// How long the requests cut off by a close had waited.
    pub cut_off_waited_us: RtSummary,
    /// The capture holds these statements only in part (snap length, loss): the fingerprint is of their
    /// start and ends in [`CUT_MARK`].
    pub text_cut: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SecondCounts {
    /// Seconds since the epoch.
    pub second: i64,
    pub queries: u64,
    pub errors: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Noting messages in any two parts and merging them keeps what the definition says: the earliest
        /// few distinct messages, each at the first frame it was seen at, in (frame, message) order.
        #[test]
        fn message_samples_keep_the_earliest(
            seen in proptest::collection::vec((0u8..6, 0u64..40), 0..40),
            cut in 0usize..40,
        ) {
            let seen: Vec<(String, u64)> =
                seen.into_iter().map(|(m, f)| (format!("Table 't{m}' doesn't exist"), f)).collect();
            let cut = cut.min(seen.len());
            let (mut a, mut b) = (MessageSamples::default(), MessageSamples::default());
            for (m, f) in &seen[..cut] {
                a.note(m, *f);
            }
            for (m, f) in &seen[cut..] {
                b.note(m, *f);
            }
            a.merge(b);
            let mut first: BTreeMap<&str, u64> = BTreeMap::new();
            for (m, f) in &seen {
                let slot = first.entry(m.as_str()).or_insert(*f);
                *slot = (*slot).min(*f);
            }
            let mut want: Vec<(u64, String)> = first.into_iter().map(|(m, f)| (f, m.to_string())).collect();
            want.sort();
            want.truncate(MESSAGE_SAMPLES);
            prop_assert_eq!(a.0, want);
        }
    }
}
