//! `first-reset`: the first FIN, the first RST, and every connection's close in time order, each with who
//! closed it and what the other side was waiting for.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use pcapsleuth_flow::{
    AttemptOutcome, CloseFlag, ClosedBy, Connection, ConnectionEnd, Endpoint, Role, TtlRange,
};
use serde::Serialize;

use crate::cause::{self, Cause};
use crate::connects::{connect_report, ConnectReport};
use crate::engine::Run;
use crate::finding::{connection_namer, Finding, FindingKind, NamedConnection, Scope};
use crate::mysql::{
    CloseSeenFacts, MysqlDetection, MysqlSessionFacts, RecognisedBy, UnansweredRequest,
};
use crate::reasons::{role_name, tcp_reason};
use crate::replication;
use crate::thresholds::{CLOSE_GROUP_GAP_S, GREETING_WAIT_ABNORMAL_NS, LATE_GREETING_NS};
use pcapsleuth_mysql::SessionPhase;

/// One connection's close, as `first-reset` prints it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CloseReport {
    /// Wireshark frame number of the FIN or RST.
    pub frame: u64,
    /// Seconds since the epoch.
    pub time: f64,
    /// Seconds since frame 1.
    pub rel_time: f64,
    /// The client's `ip:port` (IPv6 as `[addr]:port`).
    pub client: String,
    /// The server's `ip:port`.
    pub server: String,
    /// Who sent it: "client", "server", or "unknown" when roles could not be told.
    pub initiator: Role,
    /// `FIN` or `RST`.
    pub flag: CloseFlag,
    /// What the close was, in MySQL terms when the connection speaks MySQL (``server RST mid-resultset of
    /// `select ...` after 3,752 rows``, `client FIN after COM_QUIT (normal end of session)`), followed by the
    /// TCP facts that preceded it on the connection (a zero window, resends, silence; [`tcp_reason`]).
    pub reason: String,
    /// Why, as a hypothesis with its evidence ([`Cause`]), for an abnormal close; `null` for a normal one.
    pub cause: Option<Cause>,
    /// Bytes the other side had sent that the closing side had not acknowledged.
    pub peer_unacked_bytes: u64,
    /// The other side's last data was still unanswered.
    pub peer_awaiting_reply: bool,
    /// How the connection ended in the end.
    pub end: ConnectionEnd,
    /// Not a normal end of a session: an RST, a close mid-response or with a request unanswered, a server
    /// hanging up an idle session, a close a device on the path sent. A close after COM_QUIT is never
    /// abnormal. (`verdict` is `abnormal`.)
    pub abnormal: bool,
    /// How the close was judged: `normal`, `abnormal`, or `not_judged` when what the session was doing
    /// could not be known.
    pub verdict: CloseVerdict,
    /// Why the close could not be judged, when it could not.
    pub not_judged: Option<NotJudged>,
    /// What the MySQL session was doing ("after_quit", "in_resultset", "awaiting_response", "idle", ...),
    /// when the connection speaks MySQL.
    pub mysql_state: Option<SessionState>,
    /// Frame of the connection's first packet.
    pub connection_first_frame: u64,
}

/// How a close was judged (snake_case in JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CloseVerdict {
    /// A normal end of a session: after COM_QUIT, a client leaving an idle session.
    Normal,
    /// Not a normal end: see [`CloseReport::abnormal`].
    Abnormal,
    /// What the session was doing could not be known ([`NotJudged`]): the close is called neither
    /// normal nor abnormal.
    NotJudged,
}

/// Why a close could not be judged (snake_case in JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NotJudged {
    /// The MySQL session's state was not known: the capture began after the session did, or lost its
    /// thread.
    StateUnknown,
    /// The session went on in TLS.
    Encrypted,
    /// The session could not be decoded (zstd compression).
    Undecodable,
    /// The connection was not recognised as MySQL: TCP alone cannot tell a normal FIN from one that cut
    /// work off.
    NotMysql,
    /// MySQL was not decoded (`--no-mysql`).
    MysqlNotDecoded,
}

impl NotJudged {
    /// In words, for "N could not be judged (...)".
    pub fn words(self) -> &'static str {
        match self {
            NotJudged::StateUnknown => {
                "whose MySQL state was not known (the capture began after the session did)"
            }
            NotJudged::Encrypted => "encrypted (TLS)",
            NotJudged::Undecodable => "not decodable",
            NotJudged::NotMysql => "not recognised as MySQL",
            NotJudged::MysqlNotDecoded => "with MySQL not decoded",
        }
    }
}

/// How the connections' closes were judged.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct Judgements {
    /// Closes judged normal or abnormal.
    pub judged: usize,
    /// Of them, abnormal.
    pub abnormal: usize,
    /// Closes that could not be judged.
    pub not_judged: usize,
    /// Those, by why: `[why, closes]`, the most first.
    pub not_judged_why: Vec<(NotJudged, usize)>,
}

/// Whether a FIN could be judged normal or abnormal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FinJudgement {
    /// MySQL was decoded: a FIN is judged by what the session was doing.
    Judged,
    /// MySQL was not decoded (`--no-mysql`): only what TCP alone proves (an RST) is abnormal; a FIN
    /// after COM_QUIT cannot be told from one that cut a query off.
    NotJudged,
}

impl FinJudgement {
    fn of<O>(a: &Run<O>) -> FinJudgement {
        if a.mysql_detection == MysqlDetection::Off {
            FinJudgement::NotJudged
        } else {
            FinJudgement::Judged
        }
    }
}

/// The `first-reset` answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FirstReset {
    /// Whether FINs were judged (`not_judged` with `--no-mysql`: only RSTs can be abnormal then).
    pub fins: FinJudgement,
    /// The first close that is not a normal end of a session.
    pub first_abnormal: Option<CloseReport>,
    /// The first FIN of the capture.
    pub first_fin: Option<CloseReport>,
    /// The first RST of the capture.
    pub first_rst: Option<CloseReport>,
    /// Connection closes in time order (at most the requested limit).
    pub closes: Vec<CloseReport>,
    /// All closes in the capture (before the limit).
    pub total_closes: usize,
    /// How those closes were judged: how many could not be, and why.
    pub judgements: Judgements,
    /// Every TCP connection of the capture.
    pub connections: usize,
    /// Connections still open when the capture ended.
    pub open_at_end: usize,
    /// Connections the client closed while waiting for the greeting of a server that speaks first.
    pub greeting_waits: GreetingWaits,
    /// Every connection attempt: refused, unanswered, delayed by retransmitted SYNs.
    pub connects: ConnectReport,
    /// Requests still waiting for their response when the capture ended (MySQL), in request order.
    pub unanswered_at_end: Vec<UnansweredRequest>,
    /// The findings of `greeting_waits` and `connects`, each with its Wireshark filter and `extract`
    /// command (not in JSON: `report --json` lists them among its findings).
    #[serde(skip)]
    pub attempt_findings: Vec<Finding>,
    /// The Wireshark filter and the `extract` command of the first abnormal close's connection, as
    /// `report` gives them (not in JSON: `report --json` has them).
    #[serde(skip)]
    pub first_abnormal_hand_off: Option<(Option<String>, Option<String>)>,
}

/// Connections the client believed open and gave up on while waiting for the server's greeting: the
/// server had not accepted them (a full accept queue; with SYN cookies the server's kernel does not
/// even know them until the client's next packet).
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct GreetingWaits {
    /// Closes while waiting at least [`GREETING_WAIT_ABNORMAL_NS`], or answered by a greeting only
    /// after the close.
    pub count: usize,
    /// The longest wait, seconds.
    pub longest_s: f64,
    /// Of them: greeted only after the client's close (the server accepted only then).
    pub greeted_after_close: usize,
    /// Of them: the SYN-ACK echoed none of the SYN's options (a SYN cookie made without timestamps).
    pub synack_without_options: usize,
    /// The closes (FIN or RST frames), the first few.
    pub frames: Vec<u64>,
}

impl GreetingWaits {
    /// The finding, when any client gave up waiting for a greeting.
    pub fn finding(&self) -> Option<Finding> {
        if self.count == 0 {
            return None;
        }
        let mut cause = vec![
            "the server had not accepted them: its accept queue was full (a stalled or slow accept \
             loop; back_log, net.core.somaxconn)"
                .to_string(),
        ];
        if self.greeted_after_close > 0 {
            cause.push(format!(
                "{} {} greeted only after the client's close: the server's kernel knew them only \
                 then, as when it answered their SYNs with SYN cookies and dropped the client's ACK at \
                 the full accept queue",
                self.greeted_after_close,
                if self.greeted_after_close == 1 {
                    "was"
                } else {
                    "were"
                }
            ));
        }
        if self.synack_without_options > 0 {
            cause.push(format!(
                "{} SYN-ACKs echoed none of the SYN's options: SYN cookies",
                self.synack_without_options
            ));
        }
        Some(Finding {
            severity: 1,
            kind: FindingKind::GreetingWait,
            summary: format!(
                "{} closed by the client while waiting for the server greeting (up \
                 to {:.1} s): {}",
                crate::units::counted(self.count as u64, "connection was", "connections were"),
                self.longest_s,
                cause.join("; ")
            ),
            evidence: vec![format!(
                "closes in frames {}{}",
                self.frames
                    .iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(", "),
                if self.count > self.frames.len() {
                    ", ..."
                } else {
                    ""
                }
            )],
            frames: self.frames.clone(),
            ..Finding::blank()
        })
    }
}

/// How long the client waited for a greeting before closing, and when the greeting came, if at all.
struct GreetingWait {
    waited_ns: i64,
    greeted_after: Option<pcapsleuth_flow::FrameRef>,
}

impl GreetingWait {
    /// Whether the client gave up waiting: it waited [`GREETING_WAIT_ABNORMAL_NS`], or the server greeted
    /// only after its close and it had waited at least [`LATE_GREETING_NS`] (a client that closes the
    /// moment it connects, a port check, gave up on nothing: the server's answer after it says nothing
    /// of an accept queue).
    fn gave_up(&self) -> bool {
        self.waited_ns >= GREETING_WAIT_ABNORMAL_NS
            || (self.greeted_after.is_some() && self.waited_ns >= LATE_GREETING_NS as i64)
    }
}

/// The client closed an established connection to a server that speaks first before either side sent
/// anything: it was waiting for the greeting.
fn greeting_wait(
    conn: &Connection,
    ev: &ClosedBy,
    mysql: Option<&MysqlSessionFacts>,
    speaks_first: &BTreeSet<Endpoint>,
) -> Option<GreetingWait> {
    let h = &conn.handshake;
    let answer = h
        .answer
        .filter(|_| h.outcome == Some(AttemptOutcome::Established))?;
    let at = ev.event.at;
    let silent_until_close =
        |first: Option<pcapsleuth_flow::FrameRef>| first.is_none_or(|f| f.frame > at.frame);
    let greeted_later = mysql.is_some_and(|m| m.recognised_by == RecognisedBy::Greeting);
    if ev.by != Role::Client
        || !silent_until_close(conn.to_server.first_data)
        || !silent_until_close(conn.to_client.first_data)
        || !(greeted_later || speaks_first.contains(&conn.server))
    {
        return None;
    }
    Some(GreetingWait {
        waited_ns: at.ts.0 - answer.ts.0,
        greeted_after: conn.to_client.first_data.filter(|_| greeted_later),
    })
}

/// Servers known to speak first: those that greeted a MySQL connection of the capture.
fn greeting_servers<O>(a: &Run<O>) -> BTreeSet<Endpoint> {
    a.connections
        .iter()
        .zip(&a.mysql_sessions)
        .filter(|(_, m)| {
            m.as_ref()
                .is_some_and(|m| m.recognised_by == RecognisedBy::Greeting)
        })
        .map(|(c, _)| c.server)
        .collect()
}

/// What a MySQL session was doing when a side closed (snake_case in JSON: `in_resultset`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionState {
    /// The client waited for the server's greeting (the connection opened, the server said nothing).
    AwaitingGreeting,
    /// In its connection phase: greeting, login.
    Handshake,
    /// Between requests.
    Idle,
    /// A request waited for its response.
    AwaitingResponse,
    /// Rows of a resultset were coming.
    InResultset,
    /// Another response was coming.
    InResponse,
    /// The client had sent COM_QUIT.
    AfterQuit,
    /// The session had gone on in TLS.
    Encrypted,
    /// The decoder had lost the protocol's framing.
    Undecodable,
    /// Joined too late to tell.
    Unknown,
    /// A replication stream.
    Replicating,
}

impl From<SessionPhase> for SessionState {
    fn from(p: SessionPhase) -> SessionState {
        match p {
            SessionPhase::Handshake => SessionState::Handshake,
            SessionPhase::Idle => SessionState::Idle,
            SessionPhase::AwaitingResponse => SessionState::AwaitingResponse,
            SessionPhase::InResultset { .. } => SessionState::InResultset,
            SessionPhase::InResponse { .. } => SessionState::InResponse,
            SessionPhase::AfterQuit => SessionState::AfterQuit,
            SessionPhase::Encrypted => SessionState::Encrypted,
            SessionPhase::Undecodable => SessionState::Undecodable,
            SessionPhase::Unknown => SessionState::Unknown,
            SessionPhase::Replicating(_) => SessionState::Replicating,
        }
    }
}

fn quoted(statement: &Option<String>) -> String {
    match statement {
        Some(s) => {
            let one_line: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
            let short: String = one_line.chars().take(120).collect();
            let more = if short.len() < one_line.len() {
                "..."
            } else {
                ""
            };
            format!("`{short}{more}`")
        }
        None => "a request".into(),
    }
}

/// The reason in MySQL terms, and how the close is judged.
fn mysql_reason(
    ev: &ClosedBy,
    seen: &CloseSeenFacts,
    recognised_by: Option<RecognisedBy>,
) -> (String, CloseVerdict) {
    use CloseVerdict::{Abnormal, Normal};
    let by = role_name(ev.by);
    let flag = ev.event.flag.name();
    let rst = ev.event.flag == CloseFlag::Rst;
    let what = || {
        let cmd = seen.command.map_or("request", |c| c.name());
        match &seen.statement {
            Some(_) => quoted(&seen.statement),
            None => cmd.to_string(),
        }
    };
    let verdict = |abnormal: bool| if abnormal { Abnormal } else { Normal };
    match seen.phase {
        SessionPhase::AfterQuit => (
            format!("{by} {flag} after COM_QUIT (normal end of session)"),
            Normal,
        ),
        SessionPhase::InResultset { .. } => (
            format!(
                "{by} {flag} mid-resultset of {} after {} ({}), request frame {}",
                what(),
                crate::units::counted(seen.rows, "row", "rows"),
                crate::units::counted(seen.bytes, "byte", "bytes"),
                seen.request_frame.unwrap_or(0)
            ),
            Abnormal,
        ),
        SessionPhase::InResponse { .. } => (
            format!(
                "{by} {flag} mid-response to {} ({} delivered), request frame {}",
                what(),
                crate::units::counted(seen.bytes, "byte", "bytes"),
                seen.request_frame.unwrap_or(0)
            ),
            Abnormal,
        ),
        SessionPhase::AwaitingResponse => (
            format!(
                "{by} {flag} while {} (frame {}) was unanswered",
                what(),
                seen.request_frame.unwrap_or(0)
            ),
            Abnormal,
        ),
        // The server's last word was an error (a refusal, a request it would not read): not idle.
        SessionPhase::Idle if seen.error.is_some() => (
            format!(
                "{by} {flag} after ERR {} (frame {}), without COM_QUIT",
                seen.error.as_ref().map_or(0, |e| e.error.code),
                seen.error.as_ref().map_or(0, |e| e.at.frame)
            ),
            verdict(rst || ev.by == Role::Server),
        ),
        SessionPhase::Idle => (
            format!("{by} {flag} while the session was idle, without COM_QUIT"),
            verdict(rst || ev.by == Role::Server),
        ),
        SessionPhase::Handshake => (format!("{by} {flag} during the login handshake"), Abnormal),
        SessionPhase::Encrypted if rst => (
            format!("{by} {flag} in a TLS session (contents not visible)"),
            Abnormal,
        ),
        SessionPhase::Encrypted => (
            format!("{by} {flag} in a TLS session (contents not visible: not judged)"),
            CloseVerdict::NotJudged,
        ),
        // A byte stream that ends inside a MySQL packet did not end normally, whatever else is unknown.
        SessionPhase::Unknown
            if seen.response_cut && recognised_by == Some(RecognisedBy::PacketRun) =>
        {
            (
                format!(
                    "{by} {flag} mid-resultset, inside one of its packets (the capture began in the middle \
                     of the answer: its request is not in the capture)"
                ),
                Abnormal,
            )
        }
        SessionPhase::Undecodable | SessionPhase::Unknown if seen.response_cut => (
            format!("{by} {flag} inside a MySQL packet of the server's (a response cut off)"),
            Abnormal,
        ),
        SessionPhase::Undecodable | SessionPhase::Unknown
            if rst || ev.event.peer_awaiting_reply || ev.event.peer_unacked_bytes > 0 =>
        {
            (format!("{by} {flag}"), Abnormal)
        }
        SessionPhase::Unknown => (
            format!("{by} {flag} (the session's state was not known: not judged)"),
            CloseVerdict::NotJudged,
        ),
        SessionPhase::Undecodable => (
            format!("{by} {flag} (the session could not be decoded: not judged)"),
            CloseVerdict::NotJudged,
        ),
        // Judged in replication terms by `classify`.
        SessionPhase::Replicating(_) => {
            (format!("{by} {flag} in a replication stream"), verdict(rst))
        }
    }
}

/// What `classify` concludes of a close.
struct Judged {
    reason: String,
    verdict: CloseVerdict,
    not_judged: Option<NotJudged>,
    state: Option<SessionState>,
    /// The client waited for the greeting: how long, and the greeting after its close.
    greeting_wait: Option<(i64, Option<pcapsleuth_flow::FrameRef>)>,
    /// The close judged in replication terms.
    replication: Option<String>,
}

fn classify(
    conn: &Connection,
    ev: &ClosedBy,
    mysql: Option<&MysqlSessionFacts>,
    speaks_first: &BTreeSet<Endpoint>,
    fins: FinJudgement,
) -> Judged {
    let seen = mysql.and_then(|m| m.closes.iter().find(|c| c.frame == ev.event.at.frame));
    let after_quit = seen.is_some_and(|s| s.phase == SessionPhase::AfterQuit);
    let tcp = tcp_reason(conn, ev, after_quit);
    let judged = |reason: String, verdict: CloseVerdict, state: Option<SessionState>| Judged {
        reason,
        verdict,
        not_judged: None,
        state,
        greeting_wait: None,
        replication: None,
    };
    if let Some(w) = greeting_wait(conn, ev, mysql, speaks_first) {
        let flag = ev.event.flag.name();
        let mut reason = format!(
            "client {flag} while waiting for the server greeting for {:.1} s",
            w.waited_ns as f64 / 1e9
        );
        if let Some(g) = w.greeted_after {
            reason.push_str(&format!(
                " (the server greeted only after it, frame {}, {:.1} s later: it had not accepted \
                 the connection until then)",
                g.frame,
                (g.ts.0 - ev.event.at.ts.0) as f64 / 1e9
            ));
        }
        let abnormal = w.gave_up();
        return Judged {
            greeting_wait: Some((w.waited_ns, w.greeted_after)),
            ..judged(
                format!("{reason}; TCP: {tcp}"),
                if abnormal {
                    CloseVerdict::Abnormal
                } else {
                    CloseVerdict::Normal
                },
                Some(SessionState::AwaitingGreeting),
            )
        };
    }
    if let Some((reason, abnormal)) = mysql.and_then(|m| replication_close_reason(conn, ev, m)) {
        return Judged {
            replication: Some(reason.clone()),
            ..judged(
                format!("{reason}; TCP: {tcp}"),
                if abnormal {
                    CloseVerdict::Abnormal
                } else {
                    CloseVerdict::Normal
                },
                Some(SessionState::Replicating),
            )
        };
    }
    match seen {
        Some(seen) => {
            let (mut reason, verdict) = mysql_reason(ev, seen, mysql.map(|m| m.recognised_by));
            let cut = conn.to_client.truncated + conn.to_server.truncated;
            if cut > 0
                && matches!(
                    seen.phase,
                    SessionPhase::InResultset { .. } | SessionPhase::InResponse { .. }
                )
            {
                // Rows and bytes are counted from what the capture holds.
                reason.push_str(&format!(
                    " (at least: the snap length cut {cut} packets of this connection)"
                ));
            }
            let not_judged = (verdict == CloseVerdict::NotJudged).then_some(match seen.phase {
                SessionPhase::Encrypted => NotJudged::Encrypted,
                SessionPhase::Undecodable => NotJudged::Undecodable,
                _ => NotJudged::StateUnknown,
            });
            Judged {
                not_judged,
                ..judged(
                    format!("{reason}; TCP: {tcp}"),
                    verdict,
                    Some(seen.phase.into()),
                )
            }
        }
        // A FIN right after COM_QUIT and a FIN leaving a query unanswered look alike in TCP: only the
        // protocol tells them apart.
        _ if fins == FinJudgement::NotJudged && ev.event.flag == CloseFlag::Fin => Judged {
            not_judged: Some(NotJudged::MysqlNotDecoded),
            ..judged(
                format!("{tcp} (not judged: MySQL not decoded)"),
                CloseVerdict::NotJudged,
                None,
            )
        },
        _ if ev.event.flag == CloseFlag::Rst
            || ev.event.peer_awaiting_reply
            || ev.event.peer_unacked_bytes > 0 =>
        {
            judged(tcp, CloseVerdict::Abnormal, None)
        }
        _ if mysql.is_some() => Judged {
            not_judged: Some(NotJudged::StateUnknown),
            ..judged(
                format!("{tcp} (the session's state was not known: not judged)"),
                CloseVerdict::NotJudged,
                None,
            )
        },
        _ => Judged {
            not_judged: Some(NotJudged::NotMysql),
            ..judged(
                format!("{tcp} (not recognised as MySQL: not judged)"),
                CloseVerdict::NotJudged,
                None,
            )
        },
    }
}

/// What judges every close of a run: the servers that speak first (MySQL's greeting), and the usual IP
/// TTL of each address, learned from all its packets in the capture.
pub(crate) struct Judge {
    speaks_first: BTreeSet<Endpoint>,
    ttl: BTreeMap<IpAddr, TtlRange>,
    /// The timed waits of the abnormal closes, as their causes read alone, by what makes closes alike
    /// (the side, the flag, the server, the kind of wait): `(time ns, frame, wait ns)`.
    waits: BTreeMap<Alike, Vec<(i64, u64, i64)>>,
    /// Which of them each close's is, by its frame.
    alike_of: BTreeMap<u64, Alike>,
}

/// What makes two closes alike, for their waits: the side that closed, the flag, the server, the kind of
/// wait their causes rest on.
type Alike = (Role, CloseFlag, Endpoint, cause::WaitKind);

impl Judge {
    pub(crate) fn of<O>(a: &Run<O>) -> Judge {
        let mut ttl: BTreeMap<IpAddr, TtlRange> = BTreeMap::new();
        for c in &a.connections {
            ttl.entry(c.client.ip).or_default().merge(&c.to_server.ttl);
            ttl.entry(c.server.ip).or_default().merge(&c.to_client.ttl);
        }
        let mut judge = Judge {
            speaks_first: greeting_servers(a),
            ttl,
            waits: BTreeMap::new(),
            alike_of: BTreeMap::new(),
        };
        // Each abnormal close's cause as it reads alone: the waits that tell a timer's from chance.
        for (i, conn) in a.connections.iter().enumerate() {
            let mysql = a.mysql_sessions.get(i).and_then(Option::as_deref);
            for ev in [conn.first_fin, conn.first_rst].into_iter().flatten() {
                let j = classify(&conn, &ev, mysql, &judge.speaks_first, FinJudgement::of(a));
                if j.verdict != CloseVerdict::Abnormal {
                    continue;
                }
                let facts = judge.facts(&conn, &ev, mysql, &j, &[]);
                if let Some((kind, wait)) = cause::of_close(&facts).timed_wait() {
                    let key = (ev.by, ev.event.flag, conn.server, kind);
                    judge.waits.entry(key).or_default().push((
                        ev.event.at.ts.0,
                        ev.event.at.frame,
                        wait,
                    ));
                    judge.alike_of.insert(ev.event.at.frame, key);
                }
            }
        }
        judge
    }

    /// The facts the cause of the close `ev` of `conn` is judged from, `alike_waits` those of the
    /// closes alike near it.
    fn facts<'a>(
        &self,
        conn: &'a Connection,
        ev: &'a ClosedBy,
        mysql: Option<&'a MysqlSessionFacts>,
        j: &'a Judged,
        alike_waits: &'a [i64],
    ) -> cause::CloseFacts<'a> {
        cause::CloseFacts {
            conn,
            ev,
            seen: mysql.and_then(|m| m.closes.iter().find(|c| c.frame == ev.event.at.frame)),
            mysql,
            greeting_wait: j.greeting_wait,
            replication: j.replication.as_deref(),
            sender_ttl: self.sender_ttl(conn, ev),
            alike_waits,
        }
    }

    /// The waits of the closes alike the close `ev` (see [`Judge::waits`]) within
    /// [`CLOSE_GROUP_GAP_S`] of it, itself aside.
    fn alike_waits(&self, ev: &ClosedBy) -> Vec<i64> {
        let frame = ev.event.at.frame;
        let Some(list) = self.alike_of.get(&frame).and_then(|k| self.waits.get(k)) else {
            return Vec::new();
        };
        let gap = (CLOSE_GROUP_GAP_S * 1e9) as i64;
        let at = ev.event.at.ts.0;
        list.iter()
            .filter(|(ts, f, _)| *f != frame && (ts - at).abs() <= gap)
            .map(|(_, _, w)| *w)
            .collect()
    }

    /// The usual TTL of the address that sent the close `ev` of `conn`.
    fn sender_ttl(&self, conn: &Connection, ev: &ClosedBy) -> TtlRange {
        let sender = match ev.by {
            Role::Server => conn.server.ip,
            _ => conn.client.ip,
        };
        self.ttl.get(&sender).copied().unwrap_or_default()
    }

    /// Whether the close `ev` of `conn` came with a TTL that does not fit its address.
    fn forged(&self, conn: &Connection, ev: &ClosedBy) -> bool {
        cause::ttl_fits(ev, self.sender_ttl(conn, ev)).is_some()
    }
}

/// How the close `ev` of connection `i` is judged, without its words.
fn verdict<O>(
    a: &Run<O>,
    i: usize,
    ev: &ClosedBy,
    judge: &Judge,
) -> (CloseVerdict, Option<NotJudged>) {
    let conn = &a.connections.at(i);
    let mysql = a.mysql_sessions.get(i).and_then(Option::as_deref);
    let j = classify(conn, ev, mysql, &judge.speaks_first, FinJudgement::of(a));
    if judge.forged(conn, ev) {
        (CloseVerdict::Abnormal, None)
    } else {
        (j.verdict, j.not_judged)
    }
}

pub(crate) fn report<O>(a: &Run<O>, i: usize, ev: &ClosedBy, judge: &Judge) -> CloseReport {
    let conn = &a.connections.at(i);
    let first = a.capture.first_ts.map_or(0, |t| t.0);
    let mysql = a.mysql_sessions.get(i).and_then(Option::as_deref);
    let j = classify(conn, ev, mysql, &judge.speaks_first, FinJudgement::of(a));
    let alike = judge.alike_waits(ev);
    let facts = judge.facts(conn, ev, mysql, &j, &alike);
    let forged = judge.forged(conn, ev);
    // A close a device on the path sent is no normal end of a session, whatever the session was doing.
    let verdict = if forged {
        CloseVerdict::Abnormal
    } else {
        j.verdict
    };
    let cause = match verdict {
        CloseVerdict::Normal => None,
        _ => Some(cause::of_close(&facts)).filter(|c| {
            verdict == CloseVerdict::Abnormal || c.kind != cause::CauseKind::Unexplained
        }),
    };
    CloseReport {
        frame: ev.event.at.frame,
        time: ev.event.at.ts.as_secs_f64(),
        rel_time: (ev.event.at.ts.0 - first) as f64 / 1e9,
        client: conn.client.to_string(),
        server: conn.server.to_string(),
        initiator: ev.by,
        flag: ev.event.flag,
        reason: j.reason,
        cause,
        peer_unacked_bytes: ev.event.peer_unacked_bytes,
        peer_awaiting_reply: ev.event.peer_awaiting_reply,
        end: conn.end,
        abnormal: verdict == CloseVerdict::Abnormal,
        verdict,
        not_judged: if forged { None } else { j.not_judged },
        mysql_state: j.state,
        connection_first_frame: conn.first.frame,
    }
}

/// Builds the `first-reset` answer, listing at most `limit` closes.
pub fn first_reset<O>(a: &Run<O>, limit: usize) -> FirstReset {
    let judge = Judge::of(a);
    let speaks_first = &judge.speaks_first;
    let report = |a: &Run<O>, i: usize, ev: &ClosedBy| report(a, i, ev, &judge);
    let order = |ev: &ClosedBy| (ev.event.at.ts, ev.event.at.frame);
    let earliest = |pick: fn(&Connection) -> Option<ClosedBy>| {
        a.connections
            .iter()
            .enumerate()
            .filter_map(|(i, c)| pick(&c).map(|ev| (i, ev)))
            .min_by_key(|(_, ev)| order(ev))
            .map(|(i, ev)| report(a, i, &ev))
    };
    let mut closes: Vec<(usize, ClosedBy)> = a
        .connections
        .iter()
        .enumerate()
        .filter_map(|(i, c)| c.close().map(|ev| (i, ev)))
        .collect();
    closes.sort_by_key(|(_, ev)| order(ev));
    // Every FIN and RST event of every connection, in time order, until one is abnormal.
    let mut events: Vec<(usize, ClosedBy)> = a
        .connections
        .iter()
        .enumerate()
        .flat_map(|(i, c)| {
            [c.first_fin, c.first_rst]
                .into_iter()
                .flatten()
                .map(move |ev| (i, ev))
        })
        .collect();
    events.sort_by_key(|(_, ev)| order(ev));
    let first_abnormal = events
        .iter()
        .map(|(i, ev)| report(a, *i, ev))
        .find(|r| r.abnormal);
    let greeting_waits = greeting_waits(a, &closes, speaks_first);
    let mut judgements = Judgements::default();
    let mut why: BTreeMap<NotJudged, usize> = BTreeMap::new();
    for (i, ev) in &closes {
        let (verdict, not_judged) = verdict(a, *i, ev, &judge);
        match verdict {
            CloseVerdict::NotJudged => {
                judgements.not_judged += 1;
                *why.entry(not_judged.unwrap_or(NotJudged::StateUnknown))
                    .or_default() += 1;
            }
            CloseVerdict::Abnormal => {
                judgements.judged += 1;
                judgements.abnormal += 1;
            }
            CloseVerdict::Normal => judgements.judged += 1,
        }
    }
    judgements.not_judged_why = why.into_iter().collect();
    judgements
        .not_judged_why
        .sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let connects = connect_report(a);
    let first_abnormal_hand_off = first_abnormal.as_ref().and_then(|c| {
        let conn = a
            .connections
            .iter()
            .find(|k| k.first.frame == c.connection_first_frame)?;
        let scope = Scope::Connections(vec![connection_namer(&a.connections)(conn)]);
        let files: Vec<&str> = a.capture.files.iter().map(|f| f.path.as_str()).collect();
        Some((
            scope.wireshark_filter(),
            scope.extract_command(FindingKind::FirstAbnormalClose, &files),
        ))
    });
    FirstReset {
        first_abnormal_hand_off,
        fins: FinJudgement::of(a),
        first_abnormal,
        first_fin: earliest(|c| c.first_fin),
        first_rst: earliest(|c| c.first_rst),
        total_closes: closes.len(),
        judgements,
        closes: closes
            .iter()
            .take(limit)
            .map(|(i, ev)| report(a, *i, ev))
            .collect(),
        connections: a.connections.len(),
        open_at_end: a
            .connections
            .iter()
            .filter(|c| c.end == ConnectionEnd::Open)
            .count(),
        attempt_findings: attempt_findings(a, &greeting_waits, &connects),
        greeting_waits,
        connects,
        unanswered_at_end: {
            let mut u: Vec<UnansweredRequest> = a
                .mysql_sessions
                .iter()
                .flatten()
                .flat_map(|m| m.unanswered.iter().cloned())
                .collect();
            u.sort_by_key(|u| u.request_frame);
            u
        },
    }
}

/// A FIN or RST of [`every_close`].
#[derive(Debug, Clone, PartialEq)]
pub struct CloseRecord {
    /// The close as `first-reset` reports it.
    pub close: CloseReport,
    /// It is the connection's close, as `first-reset`'s `closes` lists it: the earlier of the
    /// connection's first FIN and first RST (the later one is a second record of the connection).
    pub connection_close: bool,
}

/// Every connection's first FIN and first RST as `first-reset` reports them, in time order (frame on
/// ties): its `closes` (those with [`CloseRecord::connection_close`]), without a limit, and every event
/// its `first_fin`, `first_rst` and `first_abnormal` are chosen from. The first record that is abnormal
/// is `first_abnormal`.
pub fn every_close<O>(a: &Run<O>) -> Vec<CloseRecord> {
    let judge = Judge::of(a);
    let mut events: Vec<(usize, ClosedBy, bool)> = a
        .connections
        .iter()
        .enumerate()
        .flat_map(|(i, c)| {
            let close = c.close().map(|ev| ev.event.at);
            [c.first_fin, c.first_rst]
                .into_iter()
                .flatten()
                .map(move |ev| (i, ev, Some(ev.event.at) == close))
        })
        .collect();
    events.sort_by_key(|(_, ev, _)| (ev.event.at.ts, ev.event.at.frame));
    events
        .iter()
        .map(|(i, ev, connection_close)| CloseRecord {
            close: report(a, *i, ev, &judge),
            connection_close: *connection_close,
        })
        .collect()
}

/// How many closes of `closes` (in time order) came while the client waited for a greeting.
fn greeting_waits<O>(
    a: &Run<O>,
    closes: &[(usize, ClosedBy)],
    speaks_first: &BTreeSet<Endpoint>,
) -> GreetingWaits {
    let mut w = GreetingWaits::default();
    for (i, ev) in closes {
        let conn = &a.connections.at(*i);
        let mysql = a.mysql_sessions.get(*i).and_then(Option::as_deref);
        let Some(g) = greeting_wait(conn, ev, mysql, speaks_first) else {
            continue;
        };
        if !g.gave_up() {
            continue;
        }
        w.count += 1;
        w.longest_s = w.longest_s.max(g.waited_ns as f64 / 1e9);
        w.greeted_after_close += usize::from(g.greeted_after.is_some());
        let h = &conn.handshake;
        if let (Some(syn), Some(synack)) = (h.syn_options, h.synack_options) {
            w.synack_without_options += usize::from(synack.echoes_none_of(&syn));
        }
        if w.frames.len() < GREETING_WAIT_FRAMES {
            w.frames.push(ev.event.at.frame);
        }
    }
    w
}

/// How many greeting-wait closes are listed by frame.
const GREETING_WAIT_FRAMES: usize = 10;

/// The close `ev` of `conn` judged in replication terms (see [`replication::judge`]), if the connection carried a
/// replication stream when it came.
fn replication_close_reason(
    conn: &Connection,
    ev: &ClosedBy,
    mysql: &MysqlSessionFacts,
) -> Option<(String, bool)> {
    let stream_close = |e: &ClosedBy| {
        let seen = mysql.closes.iter().find(|c| c.frame == e.event.at.frame)?;
        let SessionPhase::Replicating(state) = seen.phase else {
            return None;
        };
        Some(replication::StreamClose {
            by: e.by,
            flag: e.event.flag,
            at: pcapsleuth_mysql::Meta {
                ts_ns: e.event.at.ts.0.max(0) as u64,
                frame: e.event.at.frame,
            },
            state,
        })
    };
    let this = stream_close(ev)?;
    let earlier = [conn.first_fin, conn.first_rst]
        .into_iter()
        .flatten()
        .filter(|e| e.event.at.frame < ev.event.at.frame)
        .min_by_key(|e| e.event.at.frame)
        .and_then(|e| stream_close(&e));
    Some(replication::judge(&this, earlier.as_ref()))
}

/// Each connection's close (the earlier of its first FIN and first RST) as `first-reset` reports it, by
/// the connection's index in `a.connections`; `None` for a connection still open.
pub fn connection_closes<O>(a: &Run<O>) -> Vec<Option<CloseReport>> {
    let judge = Judge::of(a);
    a.connections
        .iter()
        .enumerate()
        .map(|(i, c)| c.close().map(|ev| report(a, i, &ev, &judge)))
        .collect()
}

/// Gives each incident (a close that cut MySQL work off) the cause `first-reset` gives the same close, in
/// the same words.
pub fn explain_incidents<O>(a: &Run<O>, incidents: &mut [crate::mysql::Incident]) {
    if incidents.is_empty() {
        return;
    }
    let judge = Judge::of(a);
    let by_frame: BTreeMap<u64, (usize, ClosedBy)> = a
        .connections
        .iter()
        .enumerate()
        .flat_map(|(i, c)| {
            [c.first_fin, c.first_rst]
                .into_iter()
                .flatten()
                .map(move |ev| (ev.event.at.frame, (i, ev)))
        })
        .collect();
    for incident in incidents {
        if let Some((i, ev)) = by_frame.get(&incident.frame) {
            incident.cause = report(a, *i, ev, &judge).cause;
        }
    }
}

/// The `mysql` report of `m`, computed in the run `a`, its incidents with their causes.
pub fn mysql_report<O>(a: &Run<O>, m: &crate::mysql::MysqlAggregate) -> crate::mysql::MysqlReport {
    let mut r = m.clone().report();
    explain_incidents(a, &mut r.incidents);
    r
}

/// One connection as `flows` lists it: the connection, and how it closed as `first-reset` judges it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FlowRow {
    /// The connection (its fields are the row's, in JSON).
    #[serde(flatten)]
    pub connection: Connection,
    /// Its close (the earlier of its first FIN and first RST) as `first-reset` judges it; null while it
    /// was open.
    pub close: Option<FlowClose>,
}

/// A connection's close in `flows`: what `first-reset` says of it, without what the row says already.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FlowClose {
    /// The FIN's or RST's frame.
    pub frame: u64,
    /// `normal`, `abnormal` or `not_judged`.
    pub verdict: CloseVerdict,
    /// Why it could not be judged, when it could not.
    pub not_judged: Option<NotJudged>,
    /// As `first-reset`'s `reason`.
    pub reason: String,
    /// As `first-reset`'s `cause`.
    pub cause: Option<Cause>,
}

/// The rows of `flows` for the connections of `a` at `order` (their positions in `a.connections`, in
/// the order to list them), each with its close.
pub fn flow_rows<O>(a: &Run<O>, order: &[usize]) -> Vec<FlowRow> {
    let closes = FlowCloses::of(a);
    order.iter().filter_map(|&i| closes.row(a, i)).collect()
}

/// The closes of `flows`, judged one connection at a time as its row is written (a capture of a million
/// connections is never held as a million rows): what [`flow_rows`] gives, row by row.
pub struct FlowCloses {
    judge: Judge,
}

impl FlowCloses {
    /// Ready to judge the closes of `a`'s connections.
    pub fn of<O>(a: &Run<O>) -> FlowCloses {
        FlowCloses {
            judge: Judge::of(a),
        }
    }

    /// The row of the connection at position `i` of `a.connections` (`None` past the end), with its
    /// close as `first-reset` judges it. `a` is the run [`FlowCloses::of`] was given.
    pub fn row<O>(&self, a: &Run<O>, i: usize) -> Option<FlowRow> {
        let connection = a.connections.get(i)?;
        let close = connection.close().map(|ev| {
            let r = report(a, i, &ev, &self.judge);
            FlowClose {
                frame: r.frame,
                verdict: r.verdict,
                not_judged: r.not_judged,
                reason: r.reason,
                cause: r.cause,
            }
        });
        Some(FlowRow { connection, close })
    }
}

/// The findings of connection attempts (greeting waits, SYN drops, refusals, late accepts) with their
/// scopes (the connections that waited for a greeting, the server endpoint of the others) and from them
/// their Wireshark filters and `extract` commands.
fn attempt_findings<O>(
    a: &Run<O>,
    greeting_waits: &GreetingWaits,
    connects: &ConnectReport,
) -> Vec<Finding> {
    let named = connection_namer(&a.connections);
    let endpoint = |e: &str| e.parse().map_or(Scope::Capture, Scope::Endpoint);
    let files: Vec<&str> = a.capture.files.iter().map(|f| f.path.as_str()).collect();
    let mut f: Vec<Finding> = greeting_waits
        .finding()
        .into_iter()
        .chain(connects.findings())
        .collect();
    let mut drops = connects.drops.iter();
    let mut refusals = connects.refusals.iter();
    let mut late = connects.late_greetings.iter();
    for x in &mut f {
        x.scope = match x.kind {
            FindingKind::GreetingWait => {
                let list: Vec<NamedConnection> = a
                    .connections
                    .iter()
                    .filter(|c| {
                        c.close()
                            .is_some_and(|e| x.frames.contains(&e.event.at.frame))
                    })
                    .map(&named)
                    .collect();
                if list.is_empty() {
                    Scope::Capture
                } else {
                    Scope::Connections(list)
                }
            }
            FindingKind::SynDrops => drops.next().map_or(Scope::Capture, |d| endpoint(&d.server)),
            FindingKind::ConnectRefused => refusals
                .next()
                .map_or(Scope::Capture, |r| endpoint(&r.server)),
            FindingKind::LateAccept => late.next().map_or(Scope::Capture, |g| endpoint(&g.server)),
            _ => Scope::Capture,
        };
        x.hand_off(&files);
    }
    f
}
