//! The cause of a close: from the close itself (its flag, its sender's TTL), its connection, what the
//! MySQL session was doing and the closes alike in the capture, which story fits (an error the server sent,
//! a server timeout, an idle session, a client that gave up, a stale pooled connection, a device on the
//! path).
//!
//! It infers from the facts `closes.rs` gathers ([`CloseFacts`]) and never reads packets itself.

use pcapsleuth_flow::{AttemptOutcome, CloseFlag, ClosedBy, Connection, FrameRef, Role, TtlRange};
use pcapsleuth_mysql::SessionPhase;

use crate::mysql::{CloseSeenFacts, MysqlSessionFacts};
use crate::reasons::{data_after_fin, peer_name, role_name, zero_window_before};
use crate::thresholds::{
    ERROR_BEFORE_CLOSE_NS, ROUND_WAIT_TOLERANCE_NS, SHARED_WAIT_CLOSES, TTL_MIN_PACKETS,
    WHY_RESENT_IN_A_ROW, WHY_SILENCE_NS,
};
use crate::units;

use super::errors::error_meaning;
use super::model::{
    one_line, Cause, CauseError, CauseKind, Confidence, Evidence, Sender, Setting, TtlMismatch,
    WaitKind,
};
use super::wait::{round_wait, wait_words, RoundWait};

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
    c.waited(waited);
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
                wait_words(waited)
            ),
            &[at.frame],
        );
        c.waited(waited);
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
    let by_server = f.ev.by == Role::Server;
    let (closer, peer) = if by_server {
        ("server", "client")
    } else {
        ("client", "server")
    };
    let said = if by_server {
        Cause::new(
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
    } else {
        Cause::new(
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
    };
    let mut c = said.with(
        format!(
            "the {closer}'s FIN in frame {}; the {peer}'s data after it in frame {}; the RST in frame {}",
            fin.event.at.frame, data.frame, ev.at.frame
        ),
        &[fin.event.at.frame, data.frame, ev.at.frame],
    );
    // A stale connection's server had its reasons to close: the FIN's own cause.
    if let (true, Some(s)) = (by_server, f.mysql) {
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
    c.waited(gap);
    Some(c)
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
        Some(w) => request_timeout(
            f,
            (req, wait),
            format!(
                "a timeout: the server side closed after {} had waited {} for its answer, without an \
                 error; {}, and MySQL does not end a session on a running statement without an error: a \
                 proxy or load balancer between client and server gave up (HAProxy's `timeout server`, a \
                 cloud load balancer's timeout)",
                f.request(),
                wait_words(wait),
                w.why()
            ),
            Setting::ProxyTimeout,
        ),
        None => server_ended(f),
    }
}

/// A timer that gave up on a request waiting for its answer: `story` says whose timer and what it points
/// at (`setting`); the evidence is the request's first byte (`req`) and the close, `wait` apart.
fn request_timeout(
    f: &CloseFacts<'_>,
    (req, wait): (FrameRef, i64),
    story: String,
    setting: Setting,
) -> Cause {
    let mut c = Cause::new(CauseKind::RequestTimeout, Confidence::Likely, story).with(
        format!(
            "the request's first byte in frame {}, the {} {} later",
            req.frame,
            f.flag(),
            wait_words(wait)
        ),
        &[req.frame, f.at().frame],
    );
    c.setting = Some(setting);
    c.timed(WaitKind::Request, wait);
    c
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
                Some(w) if !answer_began => request_timeout(
                    f,
                    (req, wait),
                    format!(
                        "a timeout: the client gave up after {} had waited {} for its answer; {}: the \
                         client's read timeout (a driver's socket timeout, a pool's query timeout), or a \
                         proxy's in front of the server",
                        f.request(),
                        wait_words(wait),
                        w.why()
                    ),
                    Setting::ClientReadTimeout,
                ),
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
