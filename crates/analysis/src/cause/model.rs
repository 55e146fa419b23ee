//! The cause as every report gives it: [`Cause`], what kind it is, how far the capture proves it, who sent
//! the packet it is about, the setting and the MySQL error it points to, and the evidence it rests on.
//!
//! It holds the data and its wording in JSON and never infers: the functions that judge a cause from
//! facts are in `close.rs`, `hump.rs` and `path_device.rs`.

use serde::Serialize;

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
    /// The server's name for it (`ER_CON_COUNT_ERROR`), when the code is one `error_meaning` knows.
    pub name: Option<&'static str>,
    /// What it means, in words, when the code is one `error_meaning` knows.
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

impl Cause {
    /// A cause of `kind`, worded `summary`, with nothing else said yet: the inference functions of `cause` fill
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

/// Which kind of wait a cause rests on, for telling closes alike (`CloseFacts::alike_waits`, in `close.rs`): the waits
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
    /// A wait below zero (the capture's clock stepped back between its packets) is no timed wait: it
    /// is left out, and the cause's words say why ([`super::wait::wait_words`]).
    pub(super) fn timed(&mut self, kind: WaitKind, wait_ns: i64) {
        if wait_ns < 0 {
            return;
        }
        self.waited(wait_ns);
        self.wait_kind = Some(kind);
    }

    /// The wait the cause rests on, `wait_ns`; none below zero (a clock that stepped back).
    pub(super) fn waited(&mut self, wait_ns: i64) {
        self.wait_s = (wait_ns >= 0).then(|| wait_ns as f64 / 1e9);
    }

    /// The kind of wait the cause rests on, and the wait (ns), when it rests on one a timer could have made.
    pub(crate) fn timed_wait(&self) -> Option<(WaitKind, i64)> {
        Some((self.wait_kind?, (self.wait_s? * 1e9).round() as i64))
    }
}

/// `s` on one line, at most `max` characters (cut with "…").
pub(super) fn one_line(s: &str, max: usize) -> String {
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
