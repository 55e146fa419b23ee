//! MySQL in TLS on one connection: after the session's SSLRequest, each direction's reassembled bytes go
//! through a [`TlsConnection`] (its state lives with the connection, like the session's), which hands the
//! session the plaintext where the key log (`--tls-keylog`, a pcapng's Decryption Secrets Blocks) has the
//! connection's secrets. Where it has not, the session stays stopped (its bytes cannot be read), and the TLS layer
//! still tells what TLS lets through: version, cipher suite, the handshake's time, and exchanges
//! estimated from record timing ([`EstimatedExchangeView`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use pcapsleuth_flow::{Endpoint, Side};
use pcapsleuth_mysql::{Direction, Meta, Session, Transaction};
use pcapsleuth_ssl::{
    At, CipherSuite, EstimatedExchange, KeyLog, KeyStatus, Plaintext, ProtocolVersion, Resumption,
    Sender, TlsConnection, TlsFacts,
};
use serde::Serialize;

use super::transaction_view::TransactionView;
use crate::histogram::{Histogram, RtSummary};

/// One connection's TLS layer, from the SSLRequest on.
pub(crate) struct TlsTrack {
    pub(crate) conn: TlsConnection,
    keys: Option<Arc<KeyLog>>,
    /// The SSLRequest's login (its outcome `Encrypted`), told only if the session is not decrypted:
    /// decrypted, the login inside TLS is the session's login.
    pub(crate) held: Option<Transaction>,
    /// The session reads plaintext (the first application data was decrypted).
    pub(crate) resumed: bool,
    /// The connection's first FIN or RST was seen.
    closed: bool,
    /// Exchanges told as estimated.
    pub(crate) estimated: u64,
    /// Whether the session may still be decrypted (until its bytes are over).
    undecided: bool,
}

/// Maps a MySQL direction to a TLS sender.
pub(crate) fn sender(d: Direction) -> Sender {
    match d {
        Direction::ClientToServer => Sender::Client,
        Direction::ServerToClient => Sender::Server,
    }
}

fn direction(s: Sender) -> Direction {
    match s {
        Sender::Client => Direction::ClientToServer,
        Sender::Server => Direction::ServerToClient,
    }
}

fn at(m: Meta) -> At {
    At {
        ts_ns: m.ts_ns,
        frame: m.frame,
    }
}

fn meta(a: At) -> Meta {
    Meta {
        ts_ns: a.ts_ns,
        frame: a.frame,
    }
}

impl TlsTrack {
    pub(crate) fn new(keys: Option<Arc<KeyLog>>) -> Self {
        TlsTrack {
            conn: TlsConnection::new(),
            keys,
            held: None,
            resumed: false,
            closed: false,
            estimated: 0,
            undecided: true,
        }
    }

    /// Bytes of direction `d`, carried by the segment `m`: through the TLS layer, its plaintext to the
    /// session. Until the session reads plaintext, the bytes are also fed to the stopped session, which
    /// counts them (what could not be read), unless it `counted` them already (those it kept for the TLS
    /// layer).
    pub(crate) fn data(
        &mut self,
        session: &mut Session,
        d: Direction,
        bytes: &[u8],
        m: Meta,
        counted: bool,
    ) {
        let resumed = &mut self.resumed;
        let held = &mut self.held;
        self.conn.feed(
            sender(d),
            bytes,
            at(m),
            self.keys.as_deref(),
            &mut |s, p| match p {
                Plaintext::Data(b, a) => {
                    if !*resumed {
                        *resumed = true;
                        *held = None;
                        session.resume_decrypted();
                    }
                    session.feed(direction(s), b, meta(a));
                }
                Plaintext::Missing(n, a) => {
                    if *resumed {
                        session.gap(direction(s), n, meta(a));
                    }
                }
            },
        );
        if !self.resumed && !counted {
            session.feed(d, bytes, m);
        }
    }

    /// `len` bytes of direction `d` are missing.
    pub(crate) fn gap(&mut self, session: &mut Session, d: Direction, len: u64, m: Meta) {
        let resumed = self.resumed;
        self.conn.gap(sender(d), len, at(m), &mut |s, p| {
            if let (Plaintext::Missing(n, a), true) = (p, resumed) {
                session.gap(direction(s), n, meta(a));
            }
        });
        if !self.resumed {
            session.gap(d, len, m);
        }
    }

    /// The connection's first FIN or RST.
    pub(crate) fn closed(&mut self) {
        if !self.closed {
            self.closed = true;
            self.conn.closed();
        }
    }

    /// Whether the held login is to be told now: the session will not be decrypted (no keys for its
    /// handshake, or its records stopped authenticating before any application data).
    pub(crate) fn login_undecryptable(&self) -> bool {
        let f = self.conn.facts();
        let decided = f.client_hello.is_some() && f.keys != KeyStatus::Found;
        let failed = f.keys == KeyStatus::Found && !self.conn.decrypting();
        !self.resumed && self.held.is_some() && (decided || failed || !self.undecided)
    }

    /// The session's bytes are over and it was not decrypted: its held login is to be told.
    pub(crate) fn force_undecryptable(&mut self) {
        self.undecided = false;
    }

    /// What to keep of the connection's TLS when it ends.
    pub(crate) fn facts(&self) -> TlsSessionFacts {
        TlsSessionFacts::of(self.conn.facts(), self.resumed, self.estimated)
    }
}

/// Whether, and why not, a TLS session's keys were known.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TlsKeys {
    /// The key log held its secrets: decrypted.
    Found,
    /// No key log was given (`--tls-keylog`, or a pcapng's Decryption Secrets Blocks).
    NoKeyLog,
    /// The key log holds no secret for its handshake.
    NotInKeyLog,
    /// The key log holds its handshake, but not the secrets its version needs.
    Incomplete,
    /// Its version or cipher suite is not one pcapsleuth decrypts.
    Unsupported,
    /// The capture began after its handshake.
    NoHandshake,
}

impl TlsKeys {
    fn of(k: KeyStatus) -> TlsKeys {
        match k {
            KeyStatus::Found => TlsKeys::Found,
            KeyStatus::NoKeyLog => TlsKeys::NoKeyLog,
            KeyStatus::NotInKeyLog => TlsKeys::NotInKeyLog,
            KeyStatus::Incomplete => TlsKeys::Incomplete,
            KeyStatus::Unsupported => TlsKeys::Unsupported,
            KeyStatus::NoHandshake => TlsKeys::NoHandshake,
        }
    }

    /// Why a session was not decrypted, in words ("no key log was given").
    pub fn why_not(&self) -> &'static str {
        match self {
            TlsKeys::Found => "its records did not authenticate with the key log's secrets",
            TlsKeys::NoKeyLog => "no key log was given",
            TlsKeys::NotInKeyLog => "the key log has no secrets for its handshake",
            TlsKeys::Incomplete => "the key log lacks the secrets its TLS version needs",
            TlsKeys::Unsupported => "its TLS version or cipher suite is not decrypted",
            TlsKeys::NoHandshake => "the capture began after its TLS handshake",
        }
    }
}

/// How a TLS handshake resumed an earlier session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TlsResumption {
    /// A full handshake.
    None,
    /// TLS 1.2, by session id.
    SessionId,
    /// TLS 1.2, by session ticket.
    Ticket,
    /// TLS 1.3, by a pre-shared key.
    PreSharedKey,
}

/// The TLS a MySQL session went on in after its SSLRequest (`tls` of a session in `flows --json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TlsSessionFacts {
    /// `TLS 1.3`, `TLS 1.2`, ...: the version the ServerHello chose; null when it was not seen.
    pub version: Option<String>,
    /// The cipher suite's IANA name (`TLS_AES_256_GCM_SHA384`); null when the ServerHello was not seen.
    pub cipher_suite: Option<String>,
    /// Whether and how the handshake resumed a session.
    pub resumption: TlsResumption,
    /// Whether the session was decrypted (its MySQL traffic read, from the login on).
    pub decrypted: bool,
    /// Whether the keys were known, and if not why.
    pub keys: TlsKeys,
    /// From the ClientHello to the end of the handshake (the last Finished), µs; null when either was not
    /// seen.
    pub handshake_us: Option<f64>,
    /// The ClientHello's frame.
    pub client_hello_frame: Option<u64>,
    /// Protected records opened.
    pub records_decrypted: u64,
    /// Records that did not authenticate with the keys in force: never decoded.
    pub records_failed: u64,
    /// Their bytes.
    pub failed_bytes: u64,
    /// The first of them.
    pub first_failed_frame: Option<u64>,
    /// Protected records not decrypted (no keys).
    pub records_undecrypted: u64,
    /// Bytes of records cut by the end of the connection or of the capture.
    pub truncated_bytes: u64,
    /// Exchanges estimated from record timing (sessions not decrypted; the first is the login).
    pub exchanges_estimated: u64,
    /// The handshake's time in ns, for distributions.
    #[serde(skip)]
    pub handshake_ns: Option<u64>,
}

impl TlsSessionFacts {
    fn of(f: &TlsFacts, decrypted: bool, estimated: u64) -> Self {
        let handshake_ns = f.handshake_ns();
        TlsSessionFacts {
            version: f.version.map(|v| v.name()),
            cipher_suite: f.cipher_suite.map(|c| c.name()),
            resumption: match f.resumption {
                Resumption::None => TlsResumption::None,
                Resumption::SessionId => TlsResumption::SessionId,
                Resumption::Ticket => TlsResumption::Ticket,
                Resumption::PreSharedKey => TlsResumption::PreSharedKey,
            },
            decrypted,
            keys: TlsKeys::of(f.keys),
            handshake_us: handshake_ns.map(|ns| ns as f64 / 1e3),
            client_hello_frame: f.client_hello.map(|a| a.frame),
            records_decrypted: f.records_decrypted,
            records_failed: f.records_failed,
            failed_bytes: f.failed_bytes,
            first_failed_frame: f.first_failure.map(|a| a.frame),
            records_undecrypted: f.records_undecrypted,
            truncated_bytes: f.truncated_bytes,
            exchanges_estimated: estimated,
            handshake_ns,
        }
    }
}

/// A request and its response on a TLS session that was not decrypted, as the timing of its records
/// shows them ([`EstimatedExchange`]): a burst of client records, then a burst of server records. The
/// first of a session is its login. Estimated, never decoded: kept apart from the decoded transactions.
pub struct EstimatedExchangeView<'a> {
    /// The exchange.
    pub exchange: &'a EstimatedExchange,
    /// The MySQL client's address and port.
    pub client: Endpoint,
    /// The MySQL server's.
    pub server: Endpoint,
    /// The session's TLS version, when the ServerHello was seen.
    pub version: Option<ProtocolVersion>,
    /// Its cipher suite.
    pub cipher_suite: Option<CipherSuite>,
    /// The client's side of the connection.
    pub(crate) client_side: Side,
}

impl EstimatedExchangeView<'_> {
    /// Whether this is the session's login (the first exchange after the TLS handshake).
    pub fn is_login(&self) -> bool {
        self.exchange.index == 0
    }

    /// The estimated response time: from the first client record's first byte to the last server
    /// record's, for an exchange the next request ended (`None` otherwise: cut off, or still open when
    /// the capture ended) and that is not the login.
    pub fn response_time_ns(&self) -> Option<u64> {
        self.exchange
            .response_time_ns()
            .filter(|_| !self.is_login())
    }
}

/// The exchanges estimated on sessions not decrypted, as `mysql` and `load` count them: the times of
/// those answered (each session's login aside), and how many had no answer (a `COM_QUIT`, a close or
/// the capture's end). Mergeable in any order.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct EstimatedTimes {
    pub(crate) rt: Histogram,
    pub(crate) unfinished: u64,
}

impl EstimatedTimes {
    pub(crate) fn add(&mut self, x: &EstimatedExchangeView<'_>) {
        if x.is_login() {
            return;
        }
        match x.response_time_ns() {
            Some(ns) => self.rt.add(ns),
            None => self.unfinished += 1,
        }
    }

    pub(crate) fn merge(&mut self, o: &EstimatedTimes) {
        self.rt.merge(&o.rt);
        self.unfinished += o.unfinished;
    }
}

/// What the MySQL glue tells an analysis (the engine turns each into an [`crate::Analysis`] call).
pub(crate) enum Told<'a> {
    Transaction(&'a TransactionView<'a>),
    Estimated(&'a EstimatedExchangeView<'a>),
}

/// The TLS sessions of a run, and the exchanges estimated on those not decrypted: part of the `mysql`
/// report, mergeable in any order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TlsAggregate {
    sessions: u64,
    decrypted: u64,
    versions: BTreeMap<String, u64>,
    cipher_suites: BTreeMap<String, u64>,
    not_decrypted: BTreeMap<TlsKeys, u64>,
    records_failed: u64,
    failed_bytes: u64,
    handshake: Histogram,
    estimated_sessions: u64,
    estimated: EstimatedTimes,
    /// The first sessions, by their first frame.
    listed: Vec<TlsSession>,
}

/// Sessions listed one by one in the report (the counts cover all of them).
const TLS_SESSIONS_LISTED: usize = 100;

/// One MySQL session in TLS, as the `mysql` report lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TlsSession {
    /// The client's `ip:port`.
    pub client: String,
    /// The server's `ip:port`.
    pub server: String,
    /// The connection's first frame.
    pub frame: u64,
    /// What is known of its TLS.
    #[serde(flatten)]
    pub tls: TlsSessionFacts,
}

impl TlsAggregate {
    /// A TLS session ended: `client`, `server` and `frame` (its first) name it.
    pub(crate) fn session(
        &mut self,
        t: &TlsSessionFacts,
        client: Endpoint,
        server: Endpoint,
        frame: u64,
    ) {
        if self.listed.len() < TLS_SESSIONS_LISTED
            || self.listed.last().is_some_and(|l| l.frame > frame)
        {
            self.listed.push(TlsSession {
                client: client.to_string(),
                server: server.to_string(),
                frame,
                tls: t.clone(),
            });
            self.keep_first();
        }
        self.sessions += 1;
        if t.decrypted {
            self.decrypted += 1;
        } else {
            *self.not_decrypted.entry(t.keys).or_default() += 1;
        }
        let unknown = || "unknown".to_string();
        *self
            .versions
            .entry(t.version.clone().unwrap_or_else(unknown))
            .or_default() += 1;
        *self
            .cipher_suites
            .entry(t.cipher_suite.clone().unwrap_or_else(unknown))
            .or_default() += 1;
        self.records_failed += t.records_failed;
        self.failed_bytes += t.failed_bytes;
        if let Some(ns) = t.handshake_ns {
            self.handshake.add(ns);
        }
        self.estimated_sessions += u64::from(t.exchanges_estimated > 0);
    }

    /// An exchange estimated from the records of a session not decrypted.
    pub(crate) fn exchange(&mut self, x: &EstimatedExchangeView<'_>) {
        self.estimated.add(x);
    }

    pub(crate) fn merge(&mut self, o: &TlsAggregate) {
        self.sessions += o.sessions;
        self.decrypted += o.decrypted;
        for (mine, theirs) in [
            (&mut self.versions, &o.versions),
            (&mut self.cipher_suites, &o.cipher_suites),
        ] {
            for (k, v) in theirs {
                *mine.entry(k.clone()).or_default() += v;
            }
        }
        for (k, v) in &o.not_decrypted {
            *self.not_decrypted.entry(*k).or_default() += v;
        }
        self.records_failed += o.records_failed;
        self.failed_bytes += o.failed_bytes;
        self.handshake.merge(&o.handshake);
        self.estimated_sessions += o.estimated_sessions;
        self.estimated.merge(&o.estimated);
        self.listed.extend(o.listed.iter().cloned());
        self.keep_first();
    }

    /// Keeps the first [`TLS_SESSIONS_LISTED`] sessions by frame, whatever the order they came in.
    fn keep_first(&mut self) {
        self.listed.sort_by_key(|s| s.frame);
        self.listed.truncate(TLS_SESSIONS_LISTED);
    }

    /// The distribution of estimated response times (for plots and modes).
    pub fn estimated_rt(&self) -> &Histogram {
        &self.estimated.rt
    }

    /// The response times estimated from the records of the sessions not decrypted.
    pub fn estimated(&self) -> EstimatedRt {
        EstimatedRt {
            sessions: self.estimated_sessions,
            exchanges: self.estimated.rt.count(),
            rt_us: self.estimated.rt.summary_us(),
            unfinished: self.estimated.unfinished,
        }
    }

    /// The report of these sessions.
    pub fn report(&self) -> TlsReport {
        TlsReport {
            sessions: self.sessions,
            decrypted: self.decrypted,
            not_decrypted: self.not_decrypted.clone(),
            versions: self.versions.clone(),
            cipher_suites: self.cipher_suites.clone(),
            records_failed: self.records_failed,
            failed_bytes: self.failed_bytes,
            handshake_us: self.handshake.summary_us(),
            estimated_from_tls_records: self.estimated(),
            listed: self.listed.clone(),
        }
    }
}

/// MySQL sessions in TLS (`tls` in `mysql --json`): how many were decrypted, their versions and suites,
/// their handshakes, and the response times estimated from the records of those not decrypted.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TlsReport {
    /// MySQL sessions that went on in TLS after an SSLRequest.
    pub sessions: u64,
    /// Of them, those decrypted with a key log (their requests are among the decoded ones).
    pub decrypted: u64,
    /// Those not decrypted, by why not (`no_key_log`, `not_in_key_log`, ...).
    pub not_decrypted: BTreeMap<TlsKeys, u64>,
    /// Sessions by TLS version (`TLS 1.3`; `unknown` when the ServerHello was not seen).
    pub versions: BTreeMap<String, u64>,
    /// Sessions by cipher suite (IANA name).
    pub cipher_suites: BTreeMap<String, u64>,
    /// Records that did not authenticate with the key log's secrets (never decoded).
    pub records_failed: u64,
    /// Their bytes.
    pub failed_bytes: u64,
    /// TLS handshakes, ClientHello to the last Finished, µs.
    pub handshake_us: RtSummary,
    /// Response times estimated from the timing of the records of the sessions not decrypted: kept apart
    /// from the decoded response times.
    pub estimated_from_tls_records: EstimatedRt,
    /// The first 100 sessions by their first frame, each with its version, suite, whether it was
    /// decrypted (and if not why), its handshake and its exchanges estimated.
    pub listed: Vec<TlsSession>,
}

/// Response times estimated from TLS records: a burst of client records, then the server's, is one
/// exchange; from the first client record's first byte to the last server record's last, for exchanges
/// the next request ended. The first exchange of a session, its login, is left out.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EstimatedRt {
    /// Sessions with estimated exchanges.
    pub sessions: u64,
    /// Exchanges timed.
    pub exchanges: u64,
    /// Their response times, µs.
    pub rt_us: RtSummary,
    /// Exchanges not timed: no answer came before a close (a `COM_QUIT` looks so) or the capture's end.
    pub unfinished: u64,
}
