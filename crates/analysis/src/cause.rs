//! Why: the cause of an abnormal close, of a request cut off, of a slow hump, named as a hypothesis with
//! the evidence it rests on, in the terms a DBA or SRE acts on (a server setting that timed out, the error
//! the server sent, a pool that reused a connection the server had closed, a device on the path that sent
//! the packet).
//!
//! A [`Cause`] is what every report says about it: `first-reset`, `flows`, `mysql`'s incidents, `report`'s
//! findings and its HTML page print its [`Cause::summary`] and [`Cause::evidence`] as they are, and give it
//! whole in JSON as a `cause` object beside the older `reason`. The sentences are written here and nowhere
//! else (`Cause::new` and the functions of this module), so that the same close reads the same in each
//! report; the thresholds that decide them are in `thresholds.rs`, each with its reason.
//!
//! A cause is never a verdict: its [`Confidence`] says how far the capture proves it, and its evidence says
//! from which packets.
//!
//! ```
//! use pcapsleuth_analysis::cause::{round_wait, Confidence, Setting};
//!
//! // A close 3.0004 s after the request it cut off: a wait at a whole number of seconds, a timer's.
//! let w = round_wait(3_000_400_000).unwrap();
//! assert_eq!(w.seconds, 3);
//! assert!(round_wait(1_225_246_000).is_none());
//! assert_eq!(Setting::NetWriteTimeout.name(), "net_write_timeout");
//! assert!(Confidence::Certain > Confidence::Possible);
//! ```

use pcapsleuth_flow::{AttemptOutcome, CloseFlag, ClosedBy, Connection, FrameRef, Role, TtlRange};
use pcapsleuth_mysql::SessionPhase;
use serde::Serialize;

use crate::mysql::{CloseSeenFacts, MysqlSessionFacts};
use crate::reasons::{data_after_fin, peer_name, role_name, zero_window_before};
use crate::thresholds::{
    ERROR_BEFORE_CLOSE_NS, HUMP_ERRORS_MAKE, HUMP_NARROW_SPREAD, ROUND_WAIT_MIN_NS,
    ROUND_WAIT_TOLERANCE_NS, SHARED_WAIT_CLOSES, TTL_MIN_PACKETS, WHY_RESENT_IN_A_ROW,
    WHY_SILENCE_NS,
};
use crate::units;

/// Why something happened, as far as the capture tells: a hypothesis with its evidence.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cause {
    /// What kind of cause it is.
    pub kind: CauseKind,
    /// The hypothesis in one sentence, as every report words it (e.g. "a timeout: the server's
    /// net_write_timeout (2 s here) ended the session while its writes were stalled by the client's zero
    /// window").
    pub summary: String,
    /// How far the capture proves it.
    pub confidence: Confidence,
    /// The facts it rests on, each with the frames that show it, in the order they happened.
    pub evidence: Vec<Evidence>,
    /// Who really sent the packet the cause is about (the close): the endpoint whose address it bears, or
    /// a device on the path when its IP TTL does not fit that endpoint's packets.
    pub sender: Sender,
    /// The setting (a server variable, or a client's or a proxy's timeout) the cause points to, when it
    /// names one.
    pub setting: Option<Setting>,
    /// The MySQL error behind it: the ERR that preceded the close, or that answered the request.
    pub error: Option<CauseError>,
    /// The wait the cause rests on, seconds: the request's wait before a timeout closed it, the session's
    /// idle time before an idle timeout, the time the writes were stalled. `null` when none does.
    pub wait_s: Option<f64>,
    /// The IP TTL (IPv6 hop limit) of the packet and of the endpoint's other packets, when they do not
    /// fit: what says a device on the path sent it. `null` otherwise.
    pub ttl: Option<TtlMismatch>,
    /// What `wait_s` is measured from, for telling closes alike (not in JSON).
    #[serde(skip)]
    pub(crate) wait_kind: Option<WaitKind>,
}

/// What kind of cause (snake_case in JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CauseKind {
    /// The server sent an error (an ERR_Packet), then the connection closed: the error says why (1040
    /// Too many connections, 1153 max_allowed_packet, 1045 Access denied, 4031 idle disconnect, ...).
    ServerError,
    /// The server closed a session that had been idle for its idle limit (`wait_timeout`, or
    /// `interactive_timeout` for interactive clients).
    IdleTimeout,
    /// The server gave up writing a response the client did not take (its zero window, or resends left
    /// unacknowledged): `net_write_timeout`.
    WriteTimeout,
    /// The server gave up reading a request the client had begun and did not finish: `net_read_timeout`.
    ReadTimeout,
    /// The server gave up waiting for a login: `connect_timeout`.
    ConnectTimeout,
    /// A side closed while a request waited for its answer, at a wait that is a timer's (a whole number of
    /// seconds): the client's own read timeout, or a proxy's or load balancer's timeout between them.
    RequestTimeout,
    /// The server side ended a session while a request ran, without an error and not at a timer's wait
    /// (a `KILL`, a server stopped or crashed, a proxy that gave up).
    ServerEnded,
    /// The client closed or reset while its request waited or its answer was arriving: the application
    /// gave up, was stopped or crashed (a socket closed with unread data sends a RST).
    ClientAbort,
    /// A request was sent on a connection the peer had already closed, and answered by a RST: a stale
    /// pooled connection ("MySQL server has gone away", "Communications link failure").
    StaleConnection,
    /// The peer's data arrived after this side had closed, and this side's kernel answered with a RST: the
    /// process had gone (killed, exited, or closed without waiting for the answer).
    PeerGone,
    /// The packet was likely sent by a device on the path (a firewall, a load balancer, a NAT), not by the
    /// endpoint whose address it bears: its IP TTL does not fit that endpoint's packets, or the capture at
    /// that endpoint shows no such packet leaving it.
    PathDevice,
    /// The server stopped statements at a limit of its own and answered them with an error: a row lock
    /// waited for too long (innodb_lock_wait_timeout, ERR 1205), a statement that ran too long
    /// (max_execution_time, ERR 3024; max_statement_time, ERR 1969).
    StatementTimeout,
    /// The client gave up waiting for the server's greeting: the server had not accepted the connection
    /// (a full accept queue).
    GreetingWait,
    /// The connection attempt was refused (an RST answered the SYN): nothing listened, or a firewall
    /// rejected it.
    Refused,
    /// A replication stream ended: judged in replication terms (a stopped replica, an ACK not sent).
    Replication,
    /// The capture holds nothing that says why.
    Unexplained,
}

impl CauseKind {
    /// Its name, as JSON gives it.
    pub fn name(self) -> &'static str {
        match self {
            CauseKind::ServerError => "server_error",
            CauseKind::IdleTimeout => "idle_timeout",
            CauseKind::WriteTimeout => "write_timeout",
            CauseKind::ReadTimeout => "read_timeout",
            CauseKind::ConnectTimeout => "connect_timeout",
            CauseKind::RequestTimeout => "request_timeout",
            CauseKind::ServerEnded => "server_ended",
            CauseKind::ClientAbort => "client_abort",
            CauseKind::StaleConnection => "stale_connection",
            CauseKind::PeerGone => "peer_gone",
            CauseKind::PathDevice => "path_device",
            CauseKind::StatementTimeout => "statement_timeout",
            CauseKind::GreetingWait => "greeting_wait",
            CauseKind::Refused => "refused",
            CauseKind::Replication => "replication",
            CauseKind::Unexplained => "unexplained",
        }
    }
}

/// How far the capture proves a cause (lowercase in JSON). Ordered: `Possible < Likely < Certain`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Confidence {
    /// One explanation among others that fit as well.
    Possible,
    /// The facts fit it and nothing else the capture shows: a close at a timer's wait in the state the
    /// setting watches.
    Likely,
    /// The capture shows it: the error packet, a request sent after the peer's FIN and reset.
    Certain,
}

impl Confidence {
    /// Its name, as JSON and the text give it.
    pub fn name(self) -> &'static str {
        match self {
            Confidence::Possible => "possible",
            Confidence::Likely => "likely",
            Confidence::Certain => "certain",
        }
    }
}

/// Who really sent a packet (lowercase in JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Sender {
    /// The client whose address it bears (nothing says otherwise).
    Client,
    /// The server whose address it bears (nothing says otherwise).
    Server,
    /// A device on the path (firewall, load balancer, NAT) forged it with an endpoint's address.
    Path,
    /// Not known (roles unknown, or the cause is not about a packet).
    Unknown,
}

/// A setting a cause points to: a server variable, or a timeout outside the server (snake_case in JSON, the
/// variable's own name where it is one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Setting {
    /// The server closes a non-interactive session idle this long (default 28,800 s).
    WaitTimeout,
    /// The server waits this long for a write to the client to progress (default 60 s).
    NetWriteTimeout,
    /// The server waits this long for the rest of a request (default 30 s).
    NetReadTimeout,
    /// The server waits this long for a login (default 10 s).
    ConnectTimeout,
    /// InnoDB waits this long for a row lock, then answers ERR 1205 (default 50 s).
    InnodbLockWaitTimeout,
    /// MySQL interrupts a SELECT running this long, with ERR 3024 (milliseconds; 0: off).
    MaxExecutionTime,
    /// MariaDB interrupts a statement running this long, with ERR 1969 (seconds; 0: off).
    MaxStatementTime,
    /// The server refuses connections past this many (ERR 1040).
    MaxConnections,
    /// Per-user connection limit (ERR 1203).
    MaxUserConnections,
    /// The largest packet the server (or the client) accepts (ERR 1153).
    MaxAllowedPacket,
    /// Connection errors from one host before it is blocked (ERR 1129; `FLUSH HOSTS` unblocks it).
    MaxConnectErrors,
    /// A read timeout of the client (a driver's socket timeout, a pool's query timeout, `mysql
    /// --net-read-timeout`...).
    ClientReadTimeout,
    /// A timeout of a proxy or load balancer between client and server (HAProxy's `timeout server` /
    /// `timeout client`, ProxySQL's, a cloud load balancer's idle timeout).
    ProxyTimeout,
}

impl Setting {
    /// How it reads in text (the variable's name where it is a server variable).
    pub fn name(self) -> &'static str {
        match self {
            Setting::WaitTimeout => "wait_timeout",
            Setting::NetWriteTimeout => "net_write_timeout",
            Setting::NetReadTimeout => "net_read_timeout",
            Setting::ConnectTimeout => "connect_timeout",
            Setting::InnodbLockWaitTimeout => "innodb_lock_wait_timeout",
            Setting::MaxExecutionTime => "max_execution_time",
            Setting::MaxStatementTime => "max_statement_time",
            Setting::MaxConnections => "max_connections",
            Setting::MaxUserConnections => "max_user_connections",
            Setting::MaxAllowedPacket => "max_allowed_packet",
            Setting::MaxConnectErrors => "max_connect_errors",
            Setting::ClientReadTimeout => "client_read_timeout",
            Setting::ProxyTimeout => "proxy_timeout",
        }
    }
}

/// One fact a cause rests on, with the frames that show it (Wireshark's numbers).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Evidence {
    /// The fact, in one sentence.
    pub fact: String,
    /// The frames that show it (empty when it is about no one packet).
    pub frames: Vec<u64>,
}

impl Evidence {
    /// A fact shown by `frames`.
    pub fn new(fact: impl Into<String>, frames: impl IntoIterator<Item = u64>) -> Evidence {
        Evidence {
            fact: fact.into(),
            frames: frames.into_iter().collect(),
        }
    }
}

/// The MySQL error behind a cause.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CauseError {
    /// The error code (1040, 1153, ...).
    pub code: u16,
    /// Its SQLSTATE; empty when the server sent none.
    pub sql_state: String,
    /// The server's name for it (`ER_CON_COUNT_ERROR`), when the code is one this module knows.
    pub name: Option<&'static str>,
    /// What it means, in words, when the code is one this module knows.
    pub meaning: Option<&'static str>,
    /// The message the server sent.
    pub message: String,
    /// The frame of the ERR packet (its last segment).
    pub frame: u64,
}

/// A packet whose IP TTL (IPv6 hop limit) does not fit the other packets of the address it bears.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct TtlMismatch {
    /// The packet's TTL.
    pub ttl: u8,
    /// The lowest and the highest TTL of the address's other packets (the same when they all had one).
    pub usual: [u8; 2],
    /// How many of the address's segments those were (its first 16 segments of data on each of its
    /// connections).
    pub packets: u64,
}

impl TtlMismatch {
    /// The address's usual TTL in words: `63`, or `60-63` when its packets had several.
    pub fn usual_words(&self) -> String {
        if self.usual[0] == self.usual[1] {
            self.usual[0].to_string()
        } else {
            format!("{}-{}", self.usual[0], self.usual[1])
        }
    }
}

/// What a known MySQL error code means, and the setting behind it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErrorMeaning {
    /// The server's name for it (`ER_CON_COUNT_ERROR`).
    pub name: &'static str,
    /// What it means, in words.
    pub meaning: &'static str,
    /// The setting behind it, when one is.
    pub setting: Option<Setting>,
}

/// What the error `code` means, for the codes that explain a close or a failed request (MySQL's and
/// MariaDB's numbers; `None` for the others, whose message says what they are).
pub fn error_meaning(code: u16) -> Option<ErrorMeaning> {
    let m = |name, meaning, setting| {
        Some(ErrorMeaning {
            name,
            meaning,
            setting,
        })
    };
    use Setting::*;
    match code {
        1040 => m(
            "ER_CON_COUNT_ERROR",
            "the server had max_connections connections already and refused this one",
            Some(MaxConnections),
        ),
        1043 => m(
            "ER_HANDSHAKE_ERROR",
            "the server could not read the login (bad handshake)",
            None,
        ),
        1044 => m(
            "ER_DBACCESS_DENIED_ERROR",
            "the user may not use the schema asked for",
            None,
        ),
        1045 => m(
            "ER_ACCESS_DENIED_ERROR",
            "the login was refused: wrong user, password or client host",
            None,
        ),
        1049 => m(
            "ER_BAD_DB_ERROR",
            "the schema asked for does not exist",
            None,
        ),
        1053 => m(
            "ER_SERVER_SHUTDOWN",
            "the server was shutting down",
            None,
        ),
        1129 => m(
            "ER_HOST_IS_BLOCKED",
            "the client host is blocked after too many connection errors (max_connect_errors; FLUSH HOSTS \
             unblocks it)",
            Some(MaxConnectErrors),
        ),
        1130 => m(
            "ER_HOST_NOT_PRIVILEGED",
            "no account may log in from the client host",
            None,
        ),
        1152 | 1184 => m(
            if code == 1152 {
                "ER_ABORTING_CONNECTION"
            } else {
                "ER_NEW_ABORTING_CONNECTION"
            },
            "the server aborted the connection",
            None,
        ),
        1153 => m(
            "ER_NET_PACKET_TOO_LARGE",
            "the request was larger than the server's max_allowed_packet: the server refused it unread and \
             closed the connection",
            Some(MaxAllowedPacket),
        ),
        1156 => m(
            "ER_NET_PACKETS_OUT_OF_ORDER",
            "the server read packets out of order (bytes that were no MySQL login or command)",
            None,
        ),
        1158 => m(
            "ER_NET_READ_ERROR",
            "the server could not read from the connection",
            None,
        ),
        1159 => m(
            "ER_NET_READ_INTERRUPTED",
            "the server timed out reading the request (net_read_timeout)",
            Some(NetReadTimeout),
        ),
        1160 => m(
            "ER_NET_ERROR_ON_WRITE",
            "the server could not write to the connection",
            None,
        ),
        1161 => m(
            "ER_NET_WRITE_INTERRUPTED",
            "the server timed out writing to the client (net_write_timeout)",
            Some(NetWriteTimeout),
        ),
        1203 => m(
            "ER_TOO_MANY_USER_CONNECTIONS",
            "the user had max_user_connections connections already",
            Some(MaxUserConnections),
        ),
        1205 => m(
            "ER_LOCK_WAIT_TIMEOUT",
            "the statement waited innodb_lock_wait_timeout for a row lock and gave up",
            Some(InnodbLockWaitTimeout),
        ),
        1213 => m(
            "ER_LOCK_DEADLOCK",
            "InnoDB found a deadlock and rolled this transaction back",
            None,
        ),
        1226 => m(
            "ER_USER_LIMIT_REACHED",
            "the user exceeded a resource limit (max_questions, max_updates, max_connections_per_hour)",
            None,
        ),
        1317 => m(
            "ER_QUERY_INTERRUPTED",
            "the statement was interrupted (KILL QUERY, or the connection was killed)",
            None,
        ),
        1927 => m(
            "ER_CONNECTION_KILLED",
            "the connection was killed (KILL CONNECTION)",
            None,
        ),
        1969 => m(
            "ER_STATEMENT_TIMEOUT",
            "the statement ran longer than max_statement_time and was interrupted",
            Some(MaxStatementTime),
        ),
        3024 => m(
            "ER_QUERY_TIMEOUT",
            "the statement ran longer than max_execution_time and was interrupted",
            Some(MaxExecutionTime),
        ),
        4031 => m(
            "ER_CLIENT_INTERACTION_TIMEOUT",
            "the server disconnected the session after wait_timeout (or interactive_timeout) of inactivity",
            Some(WaitTimeout),
        ),
        _ => None,
    }
}

/// A wait at a whole number of seconds, as a timer makes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoundWait {
    /// The whole number of seconds.
    pub seconds: u64,
    /// How far the wait was from it, nanoseconds (positive: later).
    pub off_ns: i64,
}

/// The whole number of seconds `wait_ns` is, when it is one within `ROUND_WAIT_TOLERANCE_NS` (20 ms) and at
/// least `ROUND_WAIT_MIN_NS` (1 s): timeouts are set in whole seconds (MySQL's are, and most clients' and
/// proxies'), and fire within milliseconds of them.
pub fn round_wait(wait_ns: i64) -> Option<RoundWait> {
    if wait_ns < ROUND_WAIT_MIN_NS - ROUND_WAIT_TOLERANCE_NS {
        return None;
    }
    let seconds = (wait_ns + 500_000_000) / 1_000_000_000;
    let off_ns = wait_ns - seconds * 1_000_000_000;
    (seconds > 0 && off_ns.abs() <= ROUND_WAIT_TOLERANCE_NS).then_some(RoundWait {
        seconds: seconds as u64,
        off_ns,
    })
}

/// A wait in words, precise enough to show a timer's: "3.000 s", "1.96 s" ("3 s" reads as rounded).
pub fn wait_words(wait_ns: i64) -> String {
    let s = wait_ns as f64 / 1e9;
    if round_wait(wait_ns).is_some() && s < 1000.0 {
        format!("{s:.3} s")
    } else {
        units::seconds(s)
    }
}

impl Cause {
    /// A cause of `kind`, worded `summary`, with nothing else said yet: the functions of this module fill
    /// in the rest.
    pub(crate) fn new(kind: CauseKind, confidence: Confidence, summary: String) -> Cause {
        Cause {
            kind,
            summary,
            confidence,
            evidence: Vec::new(),
            sender: Sender::Unknown,
            setting: None,
            error: None,
            wait_s: None,
            ttl: None,
            wait_kind: None,
        }
    }

    /// One more fact.
    pub(crate) fn with(mut self, fact: impl Into<String>, frames: &[u64]) -> Cause {
        self.evidence
            .push(Evidence::new(fact, frames.iter().copied()));
        self
    }

    /// The cause in one line of text, with its confidence: "likely: a timeout: ...".
    pub fn line(&self) -> String {
        format!("{}: {}", self.confidence.name(), self.summary)
    }
}

// ---- Closes ----

/// What the cause of a close is judged from: the close, its connection, what the MySQL session was doing,
/// and what the rest of the capture says of the address the close bears.
pub(crate) struct CloseFacts<'a> {
    pub(crate) conn: &'a Connection,
    pub(crate) ev: &'a ClosedBy,
    /// What the MySQL session was doing at the close, when the connection speaks MySQL and it was seen.
    pub(crate) seen: Option<&'a CloseSeenFacts>,
    /// The session's every close (for a RST after a FIN of the same side).
    pub(crate) mysql: Option<&'a MysqlSessionFacts>,
    /// The client closed while waiting for the greeting: how long it had waited (ns), and the greeting
    /// that came after its close.
    pub(crate) greeting_wait: Option<(i64, Option<FrameRef>)>,
    /// The close judged in replication terms, when the connection carried a replication stream.
    pub(crate) replication: Option<&'a str>,
    /// The TTLs of the packets the close's address sent over the whole capture (its SYNs, FINs and RSTs
    /// aside).
    pub(crate) sender_ttl: TtlRange,
    /// The waits of the closes alike near it (by the same side, with the same flag, of the same server,
    /// of the same kind of wait, within `CLOSE_GROUP_GAP_S`), this one aside: what tells a timer's wait
    /// from chance ([`timer`]).
    pub(crate) alike_waits: &'a [i64],
}

impl CloseFacts<'_> {
    /// The address the close bears.
    fn sender_addr(&self) -> std::net::IpAddr {
        if self.ev.by == Role::Client {
            self.conn.client.ip
        } else {
            self.conn.server.ip
        }
    }

    /// Who sent it, by its address.
    fn sender(&self) -> Sender {
        match self.ev.by {
            Role::Client => Sender::Client,
            Role::Server => Sender::Server,
            Role::Unknown => Sender::Unknown,
        }
    }

    fn at(&self) -> FrameRef {
        self.ev.event.at
    }

    fn flag(&self) -> &'static str {
        self.ev.event.flag.name()
    }

    /// "server RST", "client FIN".
    fn who(&self) -> String {
        format!("{} {}", role_name(self.ev.by), self.flag())
    }

    /// Nanoseconds from `from` to the close.
    fn since(&self, from: FrameRef) -> i64 {
        self.at().ts.0 - from.ts.0
    }

    /// The open request in words: its statement quoted, or its command.
    fn request(&self) -> String {
        match self.seen {
            Some(s) => match &s.statement {
                Some(q) => format!("`{}`", one_line(q, 100)),
                None => s.command.map_or("a request", |c| c.name()).to_string(),
            },
            None => "a request".into(),
        }
    }

    /// When the open request was sent, and its frame.
    fn request_at(&self) -> Option<FrameRef> {
        let s = self.seen?;
        Some(FrameRef {
            frame: s.request_frame?,
            ts: pcapsleuth_capture::Timestamp(s.request_ts_ns? as i64),
        })
    }

    fn phase(&self) -> Option<SessionPhase> {
        self.seen.map(|s| s.phase)
    }
}

/// The cause of the close `f`.
pub(crate) fn of_close(f: &CloseFacts<'_>) -> Cause {
    let mut c = explain_close(f);
    c.sender = f.sender();
    if let Some((data, rst)) =
        data_after_fin(f.conn, f.ev).filter(|_| f.ev.event.flag == CloseFlag::Fin)
    {
        let after = units::seconds((data.ts.0 - f.at().ts.0) as f64 / 1e9);
        c = c.with(
            match f.ev.by {
                Role::Server => format!(
                    "then the client sent data (frame {}) {after} after this FIN, and the server's kernel \
                     reset the connection (frame {}): the client used it after the server had closed it (a \
                     stale connection: \"MySQL server has gone away\")",
                    data.frame, rst.frame
                ),
                _ => format!(
                    "then the server sent data (frame {}) {after} after this FIN, and the client's kernel \
                     reset the connection (frame {}): the client had not waited for it",
                    data.frame, rst.frame
                ),
            },
            &[data.frame, rst.frame],
        );
    }
    match ttl_mismatch(f) {
        Some(t) => on_path(c, t, f),
        None => c,
    }
}

/// The close's TTL, when it does not fit the address's other packets.
fn ttl_mismatch(f: &CloseFacts<'_>) -> Option<TtlMismatch> {
    ttl_fits(f.ev, f.sender_ttl)
}

/// The TTL of the close `ev`, when it does not fit `usual`, the TTLs of its address's other packets
/// (learned from at least [`TTL_MIN_PACKETS`]).
pub(crate) fn ttl_fits(ev: &ClosedBy, usual: TtlRange) -> Option<TtlMismatch> {
    let ttl = ev.event.ttl;
    (ev.by != Role::Unknown && usual.packets >= TTL_MIN_PACKETS && !usual.holds(ttl)).then_some(
        TtlMismatch {
            ttl,
            usual: [usual.min, usual.max],
            packets: usual.packets,
        },
    )
}

/// `inner`, the cause as the close's address would have it, when a device on the path sent the close.
fn on_path(inner: Cause, t: TtlMismatch, f: &CloseFacts<'_>) -> Cause {
    let addr = f.sender_addr();
    let usual = t.usual_words();
    let mut c = Cause::new(
        CauseKind::PathDevice,
        Confidence::Likely,
        format!(
            "this {} was likely sent by a device on the path (a firewall, a load balancer, a NAT), not by \
             {addr}: its IP TTL is {}, where the data {addr} sent came with {usual}",
            f.flag(),
            t.ttl,
        ),
    )
    .with(
        format!(
            "the {} (frame {}) came with TTL {}; every segment of data from {addr} in the capture came \
             with {usual} (a host sends its packets with one initial TTL, and one path takes as many hops \
             off each)",
            f.flag(),
            f.at().frame,
            t.ttl
        ),
        &[f.at().frame],
    );
    c.evidence.extend(inner.evidence);
    c.wait_s = inner.wait_s;
    c.wait_kind = inner.wait_kind;
    c.sender = Sender::Path;
    c.ttl = Some(t);
    c
}

/// The cause as the close's address would have it.
fn explain_close(f: &CloseFacts<'_>) -> Cause {
    let ev = &f.ev.event;
    let h = &f.conn.handshake;
    if let Some((waited, greeted)) = f.greeting_wait {
        return greeting_wait(f, waited, greeted);
    }
    if h.outcome == Some(AttemptOutcome::Refused) && h.answer == Some(ev.at) {
        return Cause::new(
            CauseKind::Refused,
            Confidence::Likely,
            format!(
                "the connection attempt was refused: nothing listened on {} (or a firewall rejected it)",
                f.conn.server
            ),
        )
        .with(
            format!(
                "the {} answered the client's SYN (frame {})",
                f.flag(),
                h.first_syn.map_or(0, |s| s.frame)
            ),
            &[h.first_syn.map_or(0, |s| s.frame), ev.at.frame],
        );
    }
    if let Some(r) = f.replication {
        return Cause::new(CauseKind::Replication, Confidence::Possible, r.to_string());
    }
    if let Some(c) = error_before(f) {
        return c;
    }
    if let Some(c) = after_own_fin(f) {
        return c;
    }
    match f.ev.by {
        Role::Server => server_close(f),
        Role::Client => client_close(f),
        Role::Unknown => unexplained(f),
    }
}

/// The client gave up waiting for the greeting.
fn greeting_wait(f: &CloseFacts<'_>, waited: i64, greeted: Option<FrameRef>) -> Cause {
    let mut c = Cause::new(
        CauseKind::GreetingWait,
        Confidence::Likely,
        format!(
            "the client gave up after waiting {} for the server's greeting: the server had not accepted \
             the connection (its accept queue was full: a stalled or slow accept loop; back_log, \
             net.core.somaxconn)",
            wait_words(waited)
        ),
    )
    .with(
        format!(
            "the handshake completed (frame {}) and the server sent nothing before the client's {}",
            f.conn.handshake.answer.map_or(0, |a| a.frame),
            f.flag()
        ),
        &[f.at().frame],
    );
    if let Some(g) = greeted {
        c = c.with(
            format!(
                "the server greeted only after the close (frame {}): its kernel handed it the connection \
                 only then",
                g.frame
            ),
            &[g.frame],
        );
    }
    c.wait_s = Some(waited as f64 / 1e9);
    c.setting = Some(Setting::ConnectTimeout);
    c
}

/// An error the server sent just before the close: what it says is why.
fn error_before(f: &CloseFacts<'_>) -> Option<Cause> {
    let e = f.seen?.error.as_ref()?;
    let before = f.at().ts.0 - e.at.ts_ns as i64;
    if !(0..=ERROR_BEFORE_CLOSE_NS).contains(&before) {
        return None;
    }
    let code = e.error.code;
    let meaning = error_meaning(code);
    let state = if e.error.sql_state.is_empty() {
        String::new()
    } else {
        format!(" ({})", e.error.sql_state)
    };
    let answering = match (e.request, e.statement.as_deref()) {
        (Some((pcapsleuth_mysql::Command::Connect, _)), _) if e.in_place_of_greeting => {
            "the connection, in place of its greeting (before any login)".to_string()
        }
        (Some((pcapsleuth_mysql::Command::Connect, _)), _) => "the login".to_string(),
        (Some((_, at)), Some(q)) => format!("`{}` (frame {})", one_line(q, 100), at.frame),
        (Some((cmd, at)), None) => format!("the {} of frame {}", cmd.name(), at.frame),
        (None, _) => "no request (sent unasked)".to_string(),
    };
    let what = meaning.map_or_else(
        || one_line(&e.error.message, 120),
        |m| m.meaning.to_string(),
    );
    let summary = format!(
        "the server sent ERR {code}{state} `{}` {}, then the {}: {what}",
        one_line(&e.error.message, 120),
        match e.request {
            Some(_) => format!("answering {answering}"),
            None => "unasked".to_string(),
        },
        f.who(),
    );
    let mut c = Cause::new(CauseKind::ServerError, Confidence::Certain, summary).with(
        format!(
            "ERR {code} in frame {} came {} before the {} (frame {})",
            e.at.frame,
            units::seconds(before as f64 / 1e9),
            f.flag(),
            f.at().frame
        ),
        &[e.at.frame, f.at().frame],
    );
    if let Some((_, at)) = e.request {
        let waited = e.at.ts_ns as i64 - at.ts_ns as i64;
        c = c.with(
            format!(
                "the request (frame {}) was answered {} after its first byte",
                at.frame,
                units::seconds(waited as f64 / 1e9)
            ),
            &[at.frame],
        );
        c.wait_s = Some(waited as f64 / 1e9);
    }
    c.setting = meaning.and_then(|m| m.setting);
    c.error = Some(CauseError {
        code,
        sql_state: e.error.sql_state.to_string(),
        name: meaning.map(|m| m.name),
        meaning: meaning.map(|m| m.meaning),
        message: e.error.message.clone(),
        frame: e.at.frame,
    });
    Some(c)
}

/// A RST from a side that had sent its FIN already, answering the peer's data sent after that FIN: a
/// request on a connection the server had closed (stale), or an answer to a client that had gone.
fn after_own_fin(f: &CloseFacts<'_>) -> Option<Cause> {
    let ev = &f.ev.event;
    if ev.flag != CloseFlag::Rst {
        return None;
    }
    let fin = f.conn.first_fin.filter(|fin| {
        fin.by == f.ev.by && fin.by != Role::Unknown && fin.event.at.frame < ev.at.frame
    })?;
    let data = ev.peer_last_data.filter(|d| d.frame > fin.event.at.frame)?;
    let gap = data.ts.0 - fin.event.at.ts.0;
    Some(match f.ev.by {
        Role::Server => {
            let mut c = Cause::new(
                CauseKind::StaleConnection,
                Confidence::Certain,
                format!(
                    "a stale connection: the client sent {} (frame {}) {} after the server had closed the \
                     connection (FIN, frame {}), and the server's kernel answered with this RST: a pooled \
                     connection used after the server closed it (the client reads \"MySQL server has gone \
                     away\" / \"Communications link failure\")",
                    match f.seen {
                        Some(s) if s.request_frame.is_some() => f.request(),
                        _ => "data".to_string(),
                    },
                    data.frame,
                    units::seconds(gap as f64 / 1e9),
                    fin.event.at.frame
                ),
            )
            .with(
                format!(
                    "the server's FIN in frame {}; the client's data after it in frame {}; the RST in frame {}",
                    fin.event.at.frame,
                    data.frame,
                    ev.at.frame
                ),
                &[fin.event.at.frame, data.frame, ev.at.frame],
            );
            if let Some(s) = f.mysql {
                let seen = s.closes.iter().find(|c| c.frame == fin.event.at.frame);
                let fin_cause = explain_close(&CloseFacts {
                    ev: &fin,
                    seen,
                    replication: None,
                    greeting_wait: None,
                    ..*f
                });
                c = c.with(
                    format!(
                        "why the server had closed it ({}): {}",
                        fin_cause.confidence.name(),
                        fin_cause.summary
                    ),
                    &[fin.event.at.frame],
                );
            }
            c.wait_s = Some(gap as f64 / 1e9);
            c
        }
        _ => {
            let mut c = Cause::new(
                CauseKind::PeerGone,
                Confidence::Certain,
                format!(
                    "the client had gone: the server's data (frame {}) came {} after the client had closed \
                     (FIN, frame {}), and the client's kernel answered it with this RST (the client process \
                     had exited or been killed, or had closed the connection without waiting for the answer)",
                    data.frame,
                    units::seconds(gap as f64 / 1e9),
                    fin.event.at.frame
                ),
            )
            .with(
                format!(
                    "the client's FIN in frame {}; the server's data after it in frame {}; the RST in frame {}",
                    fin.event.at.frame,
                    data.frame,
                    ev.at.frame
                ),
                &[fin.event.at.frame, data.frame, ev.at.frame],
            );
            c.wait_s = Some(gap as f64 / 1e9);
            c
        }
    })
}

/// The writes of the closing side had stalled before the close: the peer's zero window (it stopped
/// reading), or resends it did not acknowledge. The stall's start (the closing side's last new data),
/// its length, and the fact in words.
fn write_stall(f: &CloseFacts<'_>) -> Option<(FrameRef, i64, Evidence)> {
    let ev = &f.ev.event;
    let peer = peer_name(f.ev.by);
    let since = ev.last_data?;
    if let Some((z, spell, _)) = zero_window_before(f.ev) {
        return Some((
            since,
            f.since(since),
            Evidence::new(
                format!(
                    "the {peer} advertised a zero window from frame {} for {} (it stopped reading); the {}'s \
                     last new data was frame {}",
                    z.from.frame,
                    units::seconds(spell as f64 / 1e9),
                    role_name(f.ev.by),
                    since.frame
                ),
                [z.from.frame, since.frame],
            ),
        ));
    }
    (ev.resent_in_a_row >= WHY_RESENT_IN_A_ROW && ev.peer_unacked_bytes == 0).then(|| {
        (
            since,
            f.since(since),
            Evidence::new(
                format!(
                    "the {} resent its last data {} times and the {peer} acknowledged none of it (the path or \
                     the {peer} had stopped answering); its last new data was frame {}",
                    role_name(f.ev.by),
                    ev.resent_in_a_row,
                    since.frame
                ),
                [since.frame],
            ),
        )
    })
}

/// What makes a wait a timer's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Timer {
    /// A whole number of seconds.
    Round(RoundWait),
    /// The wait of this many closes alike (this one among them), within [`ROUND_WAIT_TOLERANCE_NS`].
    Shared(usize),
}

impl Timer {
    /// Why it is a timer's, in words: "a close at a round wait is a timer's".
    fn why(self) -> String {
        match self {
            Timer::Round(_) => "a close at a round wait is a timer's".into(),
            Timer::Shared(n) => format!("a wait that {n} closes alike share is a timer's"),
        }
    }

    /// The setting's value it shows: "2 s here", "about 2.51 s here".
    fn here(self, wait: i64) -> String {
        match self {
            Timer::Round(w) => format!("{} s here", w.seconds),
            Timer::Shared(_) => format!("about {} here", wait_words(wait)),
        }
    }
}

/// Whether the wait `wait` of the close `f` is a timer's: a whole number of seconds, unless the closes
/// alike near it waited other, unequal times (then it is one of them by chance); or a wait that
/// [`SHARED_WAIT_CLOSES`] closes alike share.
fn timer(f: &CloseFacts<'_>, wait: i64) -> Option<Timer> {
    timer_among(wait, f.alike_waits)
}

/// [`timer`] of a wait among the waits of the closes alike near it.
fn timer_among(wait: i64, alike: &[i64]) -> Option<Timer> {
    let near = |w: i64| (w - wait).abs() <= ROUND_WAIT_TOLERANCE_NS;
    let shared = 1 + alike.iter().filter(|&&w| near(w)).count();
    if let Some(r) = round_wait(wait) {
        let differ = alike.iter().filter(|&&w| !near(w)).count();
        if alike.len() < 2 || differ * 2 <= alike.len() {
            return Some(Timer::Round(r));
        }
    }
    (shared >= SHARED_WAIT_CLOSES).then_some(Timer::Shared(shared))
}

fn server_close(f: &CloseFacts<'_>) -> Cause {
    let ev = &f.ev.event;
    let phase = f.phase();
    let mid_response = matches!(
        phase,
        Some(SessionPhase::InResultset { .. } | SessionPhase::InResponse { .. })
    );
    if let Some((since, stall, fact)) = write_stall(f) {
        let mut c = match timer(f, stall) {
            Some(w) => Cause::new(
                CauseKind::WriteTimeout,
                Confidence::Likely,
                format!(
                    "a timeout: the server's writes had been stalled for {}; {}, and the server's timer \
                     for a stalled write is net_write_timeout ({}; default 60 s)",
                    wait_words(stall),
                    w.why(),
                    w.here(stall)
                ),
            ),
            None => Cause::new(
                CauseKind::WriteTimeout,
                Confidence::Possible,
                format!(
                    "the server gave up writing after its writes had been stalled for {}: a write timeout \
                     (net_write_timeout), or a server that ended the session",
                    wait_words(stall)
                ),
            ),
        };
        c.evidence.push(fact);
        if mid_response {
            c = c.with(
                format!(
                    "it cut the response to {} (request frame {}) off",
                    f.request(),
                    f.seen.and_then(|s| s.request_frame).unwrap_or(0)
                ),
                &[],
            );
        }
        c.setting = Some(Setting::NetWriteTimeout);
        c.timed(WaitKind::Stall, stall);
        let _ = since;
        return c;
    }
    if f.seen.is_some_and(|s| s.request_cut) {
        let from = ev.peer_last_data;
        let wait = from.map_or(0, |d| f.since(d));
        let mut c = match timer(f, wait) {
            Some(w) => Cause::new(
                CauseKind::ReadTimeout,
                Confidence::Likely,
                format!(
                    "a timeout: the client had sent part of a request and nothing more for {}; {}, and the \
                     server's timer for the rest of a request is net_read_timeout ({}; default 30 s)",
                    wait_words(wait),
                    w.why(),
                    w.here(wait)
                ),
            ),
            None => Cause::new(
                CauseKind::ReadTimeout,
                Confidence::Possible,
                format!(
                    "the server closed while the client's request was incomplete, {} after its last bytes: \
                     a read timeout (net_read_timeout), or a server that ended the session",
                    wait_words(wait)
                ),
            ),
        };
        if let Some(d) = from {
            c = c.with(
                format!("the client's last bytes, mid-packet: frame {}", d.frame),
                &[d.frame],
            );
        }
        c.setting = Some(Setting::NetReadTimeout);
        c.timed(WaitKind::PartialRequest, wait);
        return c;
    }
    match phase {
        Some(SessionPhase::Handshake) if !ev.peer_awaiting_reply => {
            let from = ev.last_data.or(ev.peer_last_data);
            let wait = from.map_or(0, |d| f.since(d));
            let mut c = match timer(f, wait) {
                Some(w) => Cause::new(
                    CauseKind::ConnectTimeout,
                    Confidence::Likely,
                    format!(
                        "a timeout: the server waited {} for the client's login; {}, and the server's timer \
                         for a login is connect_timeout ({}; default 10 s)",
                        wait_words(wait),
                        w.why(),
                        w.here(wait)
                    ),
                ),
                None => Cause::new(
                    CauseKind::ConnectTimeout,
                    Confidence::Possible,
                    format!(
                        "the server closed the connection during the login, {} after its last packet, with \
                         no error: a login timeout (connect_timeout), or a server that refused it silently",
                        wait_words(wait)
                    ),
                ),
            };
            if let Some(d) = from {
                c = c.with(
                    format!("the login's last packet: frame {}", d.frame),
                    &[d.frame],
                );
            }
            c.setting = Some(Setting::ConnectTimeout);
            c.timed(WaitKind::Login, wait);
            c
        }
        Some(SessionPhase::Idle) => idle(f),
        None if !ev.peer_awaiting_reply && ev.peer_unacked_bytes == 0 => idle(f),
        Some(SessionPhase::AwaitingResponse) => request_waited(f),
        Some(SessionPhase::InResultset { .. } | SessionPhase::InResponse { .. }) => server_ended(f),
        Some(SessionPhase::Unknown | SessionPhase::Undecodable)
            if f.seen.is_some_and(|s| s.response_cut) =>
        {
            server_ended(f)
        }
        _ => unexplained(f),
    }
}

/// The server closed a session with nothing open: an idle timeout, when the session was idle long.
fn idle(f: &CloseFacts<'_>) -> Cause {
    let ev = &f.ev.event;
    // The server's timer starts when it begins to wait for the next command: after its last data.
    let last = match (ev.last_data, ev.peer_last_data) {
        (Some(a), Some(b)) => Some(if a.ts >= b.ts { a } else { b }),
        (a, b) => a.or(b),
    };
    let Some(last) = last else {
        return unexplained(f);
    };
    let idle = f.since(last);
    if f.seen.is_none() {
        // Not MySQL (or not decoded): TCP shows the silence, not what the server was waiting for.
        if idle < WHY_SILENCE_NS {
            return unexplained(f);
        }
        let mut c = Cause::new(
            CauseKind::IdleTimeout,
            Confidence::Possible,
            format!(
                "the server side closed a connection idle for {}: an idle timeout (of the server, or of a \
                 proxy or firewall between)",
                wait_words(idle)
            ),
        )
        .with(
            format!("nothing was sent either way after frame {}", last.frame),
            &[last.frame],
        );
        c.timed(WaitKind::Idle, idle);
        return c;
    }
    let quiet = format!(
        "nothing was sent either way after frame {} (the session was idle, no request open)",
        last.frame
    );
    if idle < WHY_SILENCE_NS {
        let mut c = Cause::new(
            CauseKind::ServerEnded,
            Confidence::Possible,
            format!(
                "the server ended an idle session {} after its last exchange, without an error and long \
                 before any idle timeout: the session was killed (KILL CONNECTION), or the server was \
                 stopping",
                wait_words(idle)
            ),
        )
        .with(quiet, &[last.frame]);
        c.timed(WaitKind::Idle, idle);
        return c;
    }
    let mut c = match timer(f, idle) {
        Some(w) => Cause::new(
            CauseKind::IdleTimeout,
            Confidence::Likely,
            format!(
                "a timeout: the server closed a session idle for {}; {}, and the server's timer for an \
                 idle session is wait_timeout (interactive_timeout for interactive clients): {} (default \
                 28,800 s)",
                wait_words(idle),
                w.why(),
                w.here(idle)
            ),
        ),
        None => Cause::new(
            CauseKind::IdleTimeout,
            Confidence::Possible,
            format!(
                "the server closed a session idle for {}: an idle timeout (wait_timeout, a proxy's idle \
                 limit) or a KILL",
                wait_words(idle)
            ),
        ),
    }
    .with(quiet, &[last.frame]);
    c.setting = Some(Setting::WaitTimeout);
    c.timed(WaitKind::Idle, idle);
    c
}

/// The server side closed while a request waited for its answer, nothing of it sent.
fn request_waited(f: &CloseFacts<'_>) -> Cause {
    let Some(req) = f.request_at() else {
        return unexplained(f);
    };
    let wait = f.since(req);
    match timer(f, wait) {
        Some(w) => {
            let mut c = Cause::new(
                CauseKind::RequestTimeout,
                Confidence::Likely,
                format!(
                    "a timeout: the server side closed after {} had waited {} for its answer, without an \
                     error; {}, and MySQL does not end a session on a running statement without an error: \
                     a proxy or load balancer between client and server gave up (HAProxy's `timeout \
                     server`, a cloud load balancer's timeout)",
                    f.request(),
                    wait_words(wait),
                    w.why()
                ),
            )
            .with(
                format!(
                    "the request's first byte in frame {}, the {} {} later",
                    req.frame,
                    f.flag(),
                    wait_words(wait)
                ),
                &[req.frame, f.at().frame],
            );
            c.setting = Some(Setting::ProxyTimeout);
            c.timed(WaitKind::Request, wait);
            c
        }
        None => server_ended(f),
    }
}

/// The server side ended a session while a request ran, with nothing that explains it.
fn server_ended(f: &CloseFacts<'_>) -> Cause {
    let seen = f.seen;
    let req = f.request_at();
    let wait = req.map(|r| f.since(r));
    let doing = match f.phase() {
        Some(SessionPhase::InResultset { .. }) => format!(
            "cut the resultset of {} off after {}",
            f.request(),
            units::counted(seen.map_or(0, |s| s.rows), "row", "rows")
        ),
        Some(SessionPhase::InResponse { .. }) => {
            format!("cut the response to {} off", f.request())
        }
        Some(SessionPhase::AwaitingResponse) => format!(
            "closed while {} waited {} for its answer",
            f.request(),
            wait.map_or_else(String::new, wait_words)
        ),
        _ => "ended its byte stream inside a MySQL packet (a response cut off)".to_string(),
    };
    let mut c = Cause::new(
        CauseKind::ServerEnded,
        Confidence::Possible,
        format!(
            "the server side {doing}, without an error and with no stall or timer's wait before it: the \
             session was killed (KILL), or the server or a proxy in between stopped"
        ),
    );
    if let (Some(r), Some(w)) = (req, wait) {
        c = c.with(
            format!(
                "the request's first byte (frame {}) came {} before the {}",
                r.frame,
                wait_words(w),
                f.flag()
            ),
            &[r.frame],
        );
        c.timed(WaitKind::Request, w);
    }
    if seen.is_some_and(|s| s.response_cut) {
        c = c.with("the server's byte stream ended inside a MySQL packet", &[]);
    }
    c
}

fn client_close(f: &CloseFacts<'_>) -> Cause {
    let ev = &f.ev.event;
    let rst = ev.flag == CloseFlag::Rst;
    if let Some((_, stall, fact)) = write_stall(f) {
        let mut c = Cause::new(
            CauseKind::ClientAbort,
            Confidence::Likely,
            format!(
                "the client gave up after its writes had been stalled for {}: the server stopped reading, \
                 or the path stopped carrying its data (a write timeout of the client, or TCP's own)",
                wait_words(stall)
            ),
        );
        c.evidence.push(fact);
        c.timed(WaitKind::Stall, stall);
        return c;
    }
    match f.phase() {
        Some(
            SessionPhase::AwaitingResponse
            | SessionPhase::InResultset { .. }
            | SessionPhase::InResponse { .. },
        ) => {
            let Some(req) = f.request_at() else {
                return unexplained(f);
            };
            let wait = f.since(req);
            let answer_began = !matches!(f.phase(), Some(SessionPhase::AwaitingResponse));
            match timer(f, wait) {
                Some(w) if !answer_began => {
                    let mut c = Cause::new(
                        CauseKind::RequestTimeout,
                        Confidence::Likely,
                        format!(
                            "a timeout: the client gave up after {} had waited {} for its answer; {}: the \
                             client's read timeout (a driver's socket timeout, a pool's query timeout), or a \
                             proxy's in front of the server",
                            f.request(),
                            wait_words(wait),
                            w.why()
                        ),
                    )
                    .with(
                        format!(
                            "the request's first byte in frame {}, the {} {} later",
                            req.frame,
                            f.flag(),
                            wait_words(wait)
                        ),
                        &[req.frame, f.at().frame],
                    );
                    c.setting = Some(Setting::ClientReadTimeout);
                    c.timed(WaitKind::Request, wait);
                    c
                }
                _ => {
                    let what = if answer_began {
                        format!(
                            "with the answer to {} still arriving ({} after the request)",
                            f.request(),
                            wait_words(wait)
                        )
                    } else {
                        format!(
                            "while {} waited {} for its answer",
                            f.request(),
                            wait_words(wait)
                        )
                    };
                    let how = if rst && answer_began {
                        " (a socket closed with unread data sends a RST)"
                    } else {
                        ""
                    };
                    let mut c = Cause::new(
                        CauseKind::ClientAbort,
                        Confidence::Possible,
                        format!(
                            "the client closed {what}: the application gave up, was stopped (killed, \
                             interrupted) or crashed{how}"
                        ),
                    )
                    .with(
                        format!("the request's first byte in frame {}", req.frame),
                        &[req.frame],
                    );
                    c.timed(WaitKind::Request, wait);
                    c
                }
            }
        }
        Some(SessionPhase::Handshake) => Cause::new(
            CauseKind::ClientAbort,
            Confidence::Possible,
            "the client abandoned the login: the application gave up or failed (a wrong password it \
             would not send, a TLS it did not offer)"
                .to_string(),
        ),
        Some(SessionPhase::Idle) if rst => Cause::new(
            CauseKind::ClientAbort,
            Confidence::Possible,
            "the client reset an idle session instead of ending it with COM_QUIT: a pool discarding the \
             connection (SO_LINGER 0), or a process that exited"
                .to_string(),
        ),
        _ => unexplained(f),
    }
}

/// Nothing in the capture says why.
fn unexplained(f: &CloseFacts<'_>) -> Cause {
    let why_not = match f.phase() {
        Some(SessionPhase::Unknown) => {
            "the session's state was not known (the capture began after its start)"
        }
        Some(SessionPhase::Undecodable) => "the session could not be decoded",
        Some(SessionPhase::Encrypted) => "the session was encrypted (TLS)",
        None if f.seen.is_none() && f.mysql.is_none() => {
            "the connection is not MySQL, and TCP alone says no more"
        }
        _ => "nothing before it in the capture says why",
    };
    Cause::new(
        CauseKind::Unexplained,
        Confidence::Possible,
        format!("no cause in the capture: {why_not}"),
    )
}

/// Which kind of wait a cause rests on, for telling closes alike ([`CloseFacts::alike_waits`]): the waits
/// of one kind are measured from one kind of moment (a request's first byte, a session's last exchange,
/// a stalled write's last progress).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum WaitKind {
    /// From a request's first byte.
    Request,
    /// From the session's last exchange.
    Idle,
    /// From the last progress of a stalled write.
    Stall,
    /// From the last bytes of an incomplete request.
    PartialRequest,
    /// From the last packet of a login.
    Login,
}

impl Cause {
    /// The cause rests on a wait of `kind`, `wait_ns` long.
    fn timed(&mut self, kind: WaitKind, wait_ns: i64) {
        self.wait_s = Some(wait_ns as f64 / 1e9);
        self.wait_kind = Some(kind);
    }

    /// The kind of wait the cause rests on, and the wait (ns), when it rests on one a timer could have made.
    pub(crate) fn timed_wait(&self) -> Option<(WaitKind, i64)> {
        Some((self.wait_kind?, (self.wait_s? * 1e9).round() as i64))
    }
}

// ---- Humps of response times (crate::humps) ----

/// What the cause of a slow hump of response times is judged from.
pub(crate) struct HumpFacts<'a> {
    /// Its median response time, ns.
    pub(crate) center_ns: i64,
    /// p75/p25 of its response times.
    pub(crate) spread: f64,
    /// Its requests.
    pub(crate) count: u64,
    /// The error codes that answered its requests, most first.
    pub(crate) errors: &'a [crate::humps::HumpError],
    /// Its statement (fingerprint), when one holds most of it.
    pub(crate) statement: Option<&'a str>,
    /// Its earliest request answered by its main error code, as (request frame, response frame).
    pub(crate) first_error: Option<(u64, Option<u64>)>,
}

/// Whether a hump whose middle half spans `spread` (p75/p25) is narrow: a timer's, not a service time's.
pub(crate) fn narrow_hump(spread: f64) -> bool {
    spread <= HUMP_NARROW_SPREAD
}

/// The cause of a slow hump, when its requests were stopped by a timeout of the server's that answers
/// with an error (ERR 1205 at innodb_lock_wait_timeout, ERR 3024 at max_execution_time, ERR 1969 at
/// max_statement_time) and that error answered most of them; `None` otherwise (a hump of successes, or
/// of errors no timer sends, is described by its traits, not given a cause).
pub(crate) fn of_hump(h: &HumpFacts<'_>) -> Option<Cause> {
    let e = h.errors.first().filter(|e| e.share >= HUMP_ERRORS_MAKE)?;
    let meaning = error_meaning(e.code)?;
    let setting = meaning.setting.filter(|s| {
        matches!(
            s,
            Setting::InnodbLockWaitTimeout | Setting::MaxExecutionTime | Setting::MaxStatementTime
        )
    })?;
    let narrow = narrow_hump(h.spread);
    let round = round_wait(h.center_ns).filter(|_| narrow);
    let what = match h.statement {
        Some(q) => format!("`{}`", one_line(q, 80)),
        None => "requests".to_string(),
    };
    let (waited, took) = match setting {
        Setting::InnodbLockWaitTimeout => ("for a row lock", "waited"),
        _ => ("running", "took"),
    };
    let (default, unit) = match setting {
        Setting::InnodbLockWaitTimeout => ("default 50 s", "s"),
        Setting::MaxExecutionTime => ("milliseconds; default 0: off", "ms"),
        _ => ("seconds; default 0: off", "s"),
    };
    let here = match (round, unit) {
        (Some(w), "s") => format!("{} s here; {default}", w.seconds),
        (Some(w), _) => format!("{} ms here; {default}", w.seconds * 1000),
        (None, _) if narrow => format!(
            "about {} here, less what the statements did before they began to wait; {default}",
            wait_words(h.center_ns)
        ),
        (None, _) => default.to_string(),
    };
    let mut c = Cause::new(
        CauseKind::StatementTimeout,
        Confidence::Certain,
        format!(
            "a timeout: {} ({here}): {} {took} {} (median) {waited} and got ERR {} `{}` ({})",
            setting.name(),
            if e.count == h.count {
                format!("all {} of the hump's requests", units::count(h.count))
            } else {
                format!(
                    "{} of the hump's {}",
                    units::count(e.count),
                    units::counted(h.count, "request", "requests")
                )
            },
            wait_words(h.center_ns),
            e.code,
            one_line(&e.message, 100),
            meaning.name,
        ),
    );
    let frames: Vec<u64> = h
        .first_error
        .map(|(q, r)| std::iter::once(q).chain(r).collect())
        .unwrap_or_default();
    c = c.with(
        format!(
            "ERR {} answered {} of the hump's {} ({}), {} of the capture's answered ERR {}{}",
            e.code,
            units::count(e.count),
            units::counted(h.count, "request", "requests"),
            what,
            units::percent(e.of_code),
            e.code,
            match h.first_error {
                Some((q, Some(r))) => format!("; the first: request frame {q}, ERR frame {r}"),
                Some((q, None)) => format!("; the first: request frame {q}"),
                None => String::new(),
            }
        ),
        &frames,
    );
    c = c.with(
        match round {
            Some(w) => format!(
                "their median wait, {}, is a whole number of seconds ({} s), and the middle half of the hump \
                 spans {:.1}%: a timer's wait, the same for every request",
                wait_words(h.center_ns),
                w.seconds,
                (h.spread - 1.0) * 100.0
            ),
            None if narrow => format!(
                "the middle half of the hump spans {:.1}% around its median, {}: one wait for every \
                 request, a timer's",
                (h.spread - 1.0) * 100.0,
                wait_words(h.center_ns)
            ),
            None => format!(
                "the hump is broad (its middle half spans {:.2}×): the waits differ from request to request",
                h.spread
            ),
        },
        &[],
    );
    c.sender = Sender::Server;
    c.setting = Some(setting);
    c.wait_s = Some(h.center_ns as f64 / 1e9);
    c.error = Some(CauseError {
        code: e.code,
        sql_state: e.sql_state.clone(),
        name: Some(meaning.name),
        meaning: Some(meaning.meaning),
        message: e.message.clone(),
        frame: h.first_error.and_then(|(_, r)| r).unwrap_or(0),
    });
    Some(c)
}

// ---- Two capture points (crate::compare_ends) ----

/// What says that a device between two capture points closed a connection on both sides.
pub(crate) struct DeviceCloseFacts<'a> {
    /// The close the client received in its server side's name: (flag, client frame).
    pub(crate) to_client: (CloseFlag, u64),
    /// The close the server received in its client side's name: (flag, server frame).
    pub(crate) to_server: (CloseFlag, u64),
    /// The RST or FIN the server received that the client never sent, if any: (flag, server frame).
    pub(crate) never_sent_by_client: Option<(CloseFlag, u64)>,
    /// How far apart the two closes were on the aligned clocks, ns.
    pub(crate) apart_ns: i64,
    /// How far off the alignment may be, ns.
    pub(crate) uncertainty_ns: i64,
    /// The request the close cut off, and how long it had waited at the client point (ns): (words,
    /// request frame at the client, wait).
    pub(crate) request: Option<(&'a str, u64, i64)>,
    /// The endpoint the client talked to, and the one the server saw the connection come from, when they
    /// differ from the ends' own (a proxy's addresses).
    pub(crate) proxy: Option<(pcapsleuth_flow::Endpoint, pcapsleuth_flow::Endpoint)>,
}

/// Neither end closed: a device in between closed both sides.
pub(crate) fn device_closed_both(f: &DeviceCloseFacts<'_>) -> Cause {
    let timer = f
        .request
        .and_then(|(_, _, w)| round_wait(w).map(|r| (w, r)));
    let between = match f.proxy {
        Some((to, from)) => format!(
            "a device in between (the client talks to {to}, the server sees the connection from {from})"
        ),
        None => "a device in between".to_string(),
    };
    let summary = match (f.request, timer) {
        (Some((what, _, w)), Some((_, r))) => format!(
            "neither end closed: {between} closed both sides after {what} had waited {}; a close at a round \
             wait is a timer's: the device's timeout ({} s: HAProxy's `timeout server`, a load balancer's \
             idle or request timeout)",
            wait_words(w),
            r.seconds
        ),
        (Some((what, _, w)), None) => format!(
            "neither end closed: {between} closed both sides after {what} had waited {}",
            wait_words(w)
        ),
        (None, _) => format!("neither end closed: {between} closed both sides"),
    };
    let mut c = Cause::new(CauseKind::PathDevice, Confidence::Likely, summary)
        .with(
            format!(
                "the client received a {} in its server side's name (client frame {}) that the server never \
                 sent: the server capture has no FIN or RST of the server's on the connection before it",
                f.to_client.0.name(),
                f.to_client.1
            ),
            &[f.to_client.1],
        )
        .with(
            format!(
                "the server received a {} in its client side's name (server frame {}) {} from it on the \
                 aligned clocks (± {}): at the same moment",
                f.to_server.0.name(),
                f.to_server.1,
                units::duration_us(f.apart_ns as f64 / 1e3),
                units::duration_us(f.uncertainty_ns as f64 / 1e3)
            ),
            &[f.to_server.1],
        );
    if let Some((flag, frame)) = f.never_sent_by_client {
        c = c.with(
            format!(
                "the client never sent the {} the server received in its name (server frame {frame})",
                flag.name()
            ),
            &[frame],
        );
    }
    if let Some((what, frame, w)) = f.request {
        c = c.with(
            format!(
                "{what} (client frame {frame}) was answered at neither point: cut off after {}",
                wait_words(w)
            ),
            &[frame],
        );
        c.wait_s = Some(w as f64 / 1e9);
    }
    c.sender = Sender::Path;
    if timer.is_some() {
        c.setting = Some(Setting::ProxyTimeout);
    }
    c
}

/// What says that a FIN or RST that arrived at one capture point in the name of a side was not sent by
/// it: the point at that side shows no such packet leaving it.
pub(crate) struct NotSentFacts<'a> {
    /// FIN or RST.
    pub(crate) flag: CloseFlag,
    /// The side whose name it bears, and its endpoint there.
    pub(crate) by: (Role, pcapsleuth_flow::Endpoint),
    /// The point it arrived at ("client", "server") and its frame there.
    pub(crate) arrived_at: (&'a str, u64),
    /// How long the capture at the sender's side ran past it, ns.
    pub(crate) ran_after_ns: i64,
    /// The closes that capture does show of that side: (flag, frame there).
    pub(crate) own: Vec<(CloseFlag, u64)>,
    /// The request it came right after, at the point it arrived at: (words, frame, ns between them), and
    /// whether the other point has that request.
    pub(crate) after_request: Option<(&'a str, u64, i64, bool)>,
}

/// A FIN or RST that exists only at the point it arrived at: a device on the path sent it.
pub(crate) fn close_not_sent(f: &NotSentFacts<'_>) -> Cause {
    let (role, endpoint) = f.by;
    let other = if f.arrived_at.0 == "client" {
        "server"
    } else {
        "client"
    };
    let answering = match f.after_request {
        Some((what, _, gap, false)) => format!(
            ", {} after {what}, which never reached the {other} point: a firewall that rejects with a \
             reset, or a device that dropped the request and answered it",
            units::seconds(gap as f64 / 1e9)
        ),
        _ => String::new(),
    };
    let mut c = Cause::new(
        CauseKind::PathDevice,
        Confidence::Likely,
        format!(
            "this {} from {endpoint} exists only at the {} point: the {} never sent it; likely a device on \
             the path (a firewall, a load balancer, a NAT) sent it in the {}'s name{answering}",
            f.flag.name(),
            f.arrived_at.0,
            role_name(role),
            role_name(role)
        ),
    )
    .with(
        format!(
            "the {} arrived at the {} point (frame {}); the {} capture, which follows the connection and ran \
             {} past it, has no {} from the {}{}",
            f.flag.name(),
            f.arrived_at.0,
            f.arrived_at.1,
            role_name(role),
            units::seconds(f.ran_after_ns as f64 / 1e9),
            f.flag.name(),
            role_name(role),
            if f.own.is_empty() {
                String::new()
            } else {
                format!(
                    " (it shows the {}'s {})",
                    role_name(role),
                    f.own
                        .iter()
                        .map(|(flag, frame)| format!("{} in frame {frame}", flag.name()))
                        .collect::<Vec<_>>()
                        .join(" and ")
                )
            }
        ),
        &[f.arrived_at.1],
    );
    if let Some((what, frame, gap, reached)) = f.after_request {
        c = c.with(
            format!(
                "it came {} after {what} (frame {frame}){}",
                units::seconds(gap as f64 / 1e9),
                if reached {
                    String::new()
                } else {
                    format!(", which the {other} capture does not have")
                }
            ),
            &[frame],
        );
    }
    c.sender = Sender::Path;
    c
}

/// `s` on one line, at most `max` characters (cut with "…").
fn one_line(s: &str, max: usize) -> String {
    let line: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= max {
        line
    } else {
        let mut cut: String = line.chars().take(max.saturating_sub(1)).collect();
        cut.push('…');
        cut
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_wait_is_a_whole_number_of_seconds_within_the_tolerance() {
        assert_eq!(
            round_wait(2_003_700_000),
            Some(RoundWait {
                seconds: 2,
                off_ns: 3_700_000
            })
        );
        assert_eq!(round_wait(2_999_990_000).map(|w| w.seconds), Some(3));
        assert_eq!(round_wait(1_961_189_000), None, "39 ms early is no timer's");
        assert_eq!(round_wait(1_225_246_000), None);
        assert_eq!(
            round_wait(400_000_000),
            None,
            "under a second: too short to tell"
        );
        assert_eq!(round_wait(-1_000_000_000), None);
        assert_eq!(
            round_wait(28_800_004_000_000).map(|w| w.seconds),
            Some(28_800)
        );
    }

    #[test]
    fn a_round_wait_among_closes_alike_that_waited_otherwise_is_chance() {
        const S: i64 = 1_000_000_000;
        // Alone, or beside closes that waited as long: a timer's.
        assert!(timer_among(3 * S + 1_500_000, &[]).is_some());
        assert!(matches!(
            timer_among(3 * S, &[3 * S + 4_000_000, 3 * S - 2_000_000]),
            Some(Timer::Round(_))
        ));
        // One of a burst of closes whose waits run 1.3 s to 3.6 s: it hit 2 s by chance.
        let burst = [
            1_330_000_000,
            1_630_000_000,
            2_330_000_000,
            2_930_000_000,
            3_530_000_000,
        ];
        assert_eq!(timer_among(2 * S + 5_000_000, &burst), None);
        // Three closes alike at 2.5 s: no whole second, a timer all the same.
        assert_eq!(
            timer_among(2_500_000_000, &[2_505_000_000, 2_490_000_000]),
            Some(Timer::Shared(3))
        );
        assert_eq!(
            timer_among(2_500_000_000, &[2_505_000_000]),
            None,
            "two may agree by chance"
        );
    }

    #[test]
    fn waits_at_a_timer_read_to_the_millisecond() {
        assert_eq!(wait_words(3_000_400_000), "3.000 s");
        assert_eq!(wait_words(1_225_246_000), "1.23 s");
    }

    #[test]
    fn the_errors_that_explain_closes_name_their_setting() {
        assert_eq!(
            error_meaning(1040).and_then(|m| m.setting),
            Some(Setting::MaxConnections)
        );
        assert_eq!(
            error_meaning(1153).and_then(|m| m.setting),
            Some(Setting::MaxAllowedPacket)
        );
        assert_eq!(
            error_meaning(4031).map(|m| m.name),
            Some("ER_CLIENT_INTERACTION_TIMEOUT")
        );
        assert_eq!(error_meaning(1146), None, "its message says what it is");
    }

    #[test]
    fn json_names_are_snake_case() {
        let c = Cause::new(
            CauseKind::WriteTimeout,
            Confidence::Likely,
            "a timeout".into(),
        )
        .with("the client advertised a zero window", &[1358]);
        let v = serde_json::to_value(&c).unwrap();
        assert_eq!(v["kind"], "write_timeout");
        assert_eq!(v["confidence"], "likely");
        assert_eq!(v["sender"], "unknown");
        assert_eq!(v["evidence"][0]["frames"][0], 1358);
        assert_eq!(
            serde_json::to_value(Setting::InnodbLockWaitTimeout).unwrap(),
            "innodb_lock_wait_timeout"
        );
    }
}
