//! `first-reset`: the first FIN, the first RST, and every connection's close in time order, each with who
//! closed it and what the other side was waiting for.

use std::collections::BTreeSet;

use pcapsleuth_flow::{
    AttemptOutcome, CloseFlag, ClosedBy, Connection, ConnectionEnd, Endpoint, Role,
};
use serde::Serialize;

use crate::connects::{connect_report, ConnectReport};
use crate::engine::Run;
use crate::finding::{connection_namer, Finding, FindingKind, Scope};
use crate::mysql::{
    CloseSeenFacts, MysqlDetection, MysqlSessionFacts, RecognisedBy, UnansweredRequest,
};
use crate::reasons::{role_name, tcp_reason};
use crate::replication;
use crate::thresholds::GREETING_WAIT_ABNORMAL_NS;
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
    /// Bytes the other side had sent that the closing side had not acknowledged.
    pub peer_unacked_bytes: u64,
    /// The other side's last data was still unanswered.
    pub peer_awaiting_reply: bool,
    /// How the connection ended in the end.
    pub end: ConnectionEnd,
    /// Not a normal end of a session: an RST, a close mid-response or with a request unanswered, a server
    /// hanging up an idle session. A close after COM_QUIT is never abnormal.
    pub abnormal: bool,
    /// What the MySQL session was doing ("after_quit", "in_resultset", "awaiting_response", "idle", ...),
    /// when the connection speaks MySQL.
    pub mysql_state: Option<SessionState>,
    /// Frame of the connection's first packet.
    pub connection_first_frame: u64,
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

/// The reason in MySQL terms, and whether the close was abnormal.
fn mysql_reason(ev: &ClosedBy, seen: &CloseSeenFacts) -> (String, bool) {
    let by = role_name(ev.by);
    let flag = match ev.event.flag {
        CloseFlag::Fin => "FIN",
        CloseFlag::Rst => "RST",
    };
    let rst = ev.event.flag == CloseFlag::Rst;
    let what = || {
        let cmd = seen.command.map_or("request", |c| c.name());
        match &seen.statement {
            Some(_) => quoted(&seen.statement),
            None => cmd.to_string(),
        }
    };
    match seen.phase {
        SessionPhase::AfterQuit => (
            format!("{by} {flag} after COM_QUIT (normal end of session)"),
            false,
        ),
        SessionPhase::InResultset { .. } => (
            format!(
                "{by} {flag} mid-resultset of {} after {} ({}), request frame {}",
                what(),
                crate::units::counted(seen.rows, "row", "rows"),
                crate::units::counted(seen.bytes, "byte", "bytes"),
                seen.request_frame.unwrap_or(0)
            ),
            true,
        ),
        SessionPhase::InResponse { .. } => (
            format!(
                "{by} {flag} mid-response to {} ({} delivered), request frame {}",
                what(),
                crate::units::counted(seen.bytes, "byte", "bytes"),
                seen.request_frame.unwrap_or(0)
            ),
            true,
        ),
        SessionPhase::AwaitingResponse => (
            format!(
                "{by} {flag} while {} (frame {}) was unanswered",
                what(),
                seen.request_frame.unwrap_or(0)
            ),
            true,
        ),
        SessionPhase::Idle => (
            format!("{by} {flag} while the session was idle, without COM_QUIT"),
            rst || ev.by == Role::Server,
        ),
        SessionPhase::Handshake => (format!("{by} {flag} during the login handshake"), true),
        SessionPhase::Encrypted => (
            format!("{by} {flag} in a TLS session (contents not visible)"),
            rst,
        ),
        SessionPhase::Undecodable | SessionPhase::Unknown => (format!("{by} {flag}"), rst),
        // Judged in replication terms by `classify`.
        SessionPhase::Replicating(_) => (format!("{by} {flag} in a replication stream"), rst),
    }
}

fn classify(
    conn: &Connection,
    ev: &ClosedBy,
    mysql: Option<&MysqlSessionFacts>,
    speaks_first: &BTreeSet<Endpoint>,
    fins: FinJudgement,
) -> (String, bool, Option<SessionState>) {
    let seen = mysql.and_then(|m| m.closes.iter().find(|c| c.frame == ev.event.at.frame));
    let after_quit = seen.is_some_and(|s| s.phase == SessionPhase::AfterQuit);
    let tcp = tcp_reason(conn, ev, after_quit);
    if let Some(w) = greeting_wait(conn, ev, mysql, speaks_first) {
        let flag = match ev.event.flag {
            CloseFlag::Fin => "FIN",
            CloseFlag::Rst => "RST",
        };
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
        let abnormal = w.waited_ns >= GREETING_WAIT_ABNORMAL_NS || w.greeted_after.is_some();
        return (
            format!("{reason}; TCP: {tcp}"),
            abnormal,
            Some(SessionState::AwaitingGreeting),
        );
    }
    if let Some((reason, abnormal)) = mysql.and_then(|m| replication_close_reason(conn, ev, m)) {
        return (
            format!("{reason}; TCP: {tcp}"),
            abnormal,
            Some(SessionState::Replicating),
        );
    }
    match seen {
        Some(seen)
            if !matches!(
                seen.phase,
                SessionPhase::Unknown | SessionPhase::Undecodable
            ) =>
        {
            let (mut reason, abnormal) = mysql_reason(ev, seen);
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
            (
                format!("{reason}; TCP: {tcp}"),
                abnormal,
                Some(seen.phase.into()),
            )
        }
        _ if fins == FinJudgement::NotJudged && ev.event.flag == CloseFlag::Fin => {
            // A FIN right after COM_QUIT and a FIN leaving a query unanswered look alike in TCP: only
            // the protocol tells them apart, and it was not decoded.
            (
                format!("{tcp} (not judged: MySQL not decoded)"),
                false,
                None,
            )
        }
        _ => {
            let abnormal = ev.event.flag == CloseFlag::Rst
                || ev.event.peer_awaiting_reply
                || ev.event.peer_unacked_bytes > 0;
            (tcp, abnormal, seen.map(|s| s.phase.into()))
        }
    }
}

fn report<O>(
    a: &Run<O>,
    i: usize,
    ev: &ClosedBy,
    speaks_first: &BTreeSet<Endpoint>,
) -> CloseReport {
    let conn = &a.connections.at(i);
    let first = a.capture.first_ts.map_or(0, |t| t.0);
    let mysql = a.mysql_sessions.get(i).and_then(Option::as_deref);
    let (reason, abnormal, mysql_state) =
        classify(conn, ev, mysql, speaks_first, FinJudgement::of(a));
    CloseReport {
        frame: ev.event.at.frame,
        time: ev.event.at.ts.as_secs_f64(),
        rel_time: (ev.event.at.ts.0 - first) as f64 / 1e9,
        client: conn.client.to_string(),
        server: conn.server.to_string(),
        initiator: ev.by,
        flag: ev.event.flag,
        reason,
        peer_unacked_bytes: ev.event.peer_unacked_bytes,
        peer_awaiting_reply: ev.event.peer_awaiting_reply,
        end: conn.end,
        abnormal,
        mysql_state,
        connection_first_frame: conn.first.frame,
    }
}

/// Builds the `first-reset` answer, listing at most `limit` closes.
pub fn first_reset<O>(a: &Run<O>, limit: usize) -> FirstReset {
    let speaks_first = greeting_servers(a);
    let report = |a: &Run<O>, i: usize, ev: &ClosedBy| report(a, i, ev, &speaks_first);
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
    let greeting_waits = greeting_waits(a, &closes, &speaks_first);
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
        attempt_findings: crate::findings::attempt_findings(a, &greeting_waits, &connects),
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
    let speaks_first = greeting_servers(a);
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
            close: report(a, *i, ev, &speaks_first),
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
        if g.waited_ns < GREETING_WAIT_ABNORMAL_NS && g.greeted_after.is_none() {
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
