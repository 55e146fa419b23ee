//! A close's TCP facts in words: who closed and how, what the peer was waiting for, and what preceded
//! the close on its connection (a zero window, resends, silence).

use pcapsleuth_flow::{
    AttemptOutcome, CloseFlag, ClosedBy, Connection, ConnectionEnd, FrameRef, Role, ZeroWindowSpell,
};

use crate::thresholds::{WHY_RESENT_IN_A_ROW, WHY_SILENCE_NS, WHY_ZERO_WINDOW_NS};
use crate::units;

pub(crate) fn role_name(r: Role) -> &'static str {
    match r {
        Role::Client => "client",
        Role::Server => "server",
        Role::Unknown => "one side",
    }
}

pub(crate) fn peer_name(r: Role) -> &'static str {
    match r {
        Role::Client => "server",
        Role::Server => "client",
        Role::Unknown => "other side",
    }
}

/// The TCP-level reason for a close: who, which flag, what the peer was waiting for, how it ended.
/// `after_quit`: the client's last data was COM_QUIT, which the protocol never answers, so the
/// server closing on it is not leaving anything unanswered.
pub fn tcp_reason(conn: &Connection, ev: &ClosedBy, after_quit: bool) -> String {
    let by = role_name(ev.by);
    let peer = peer_name(ev.by);
    let flag = match ev.event.flag {
        CloseFlag::Fin => "FIN",
        CloseFlag::Rst => "RST",
    };
    let mut parts = vec![format!("{by} {flag}")];
    let h = &conn.handshake;
    if h.outcome == Some(AttemptOutcome::Refused) && h.answer == Some(ev.event.at) {
        parts.push(format!(
            "refusing the connection attempt (the answer to the client's SYN, frame {}): nothing \
             listened on {} (or a firewall rejected it)",
            h.first_syn.map_or(0, |f| f.frame),
            conn.server
        ));
    }
    if let (Some(ack), Some(resent), Role::Client, CloseFlag::Rst) =
        (h.ack_to_syn, h.resumed_by, ev.by, ev.event.flag)
    {
        parts.push(format!(
            "answering the server's plain ACK to its SYN (frame {}: a TIME_WAIT rejected the SYN); \
             the client resent the SYN in frame {}",
            ack.frame, resent.frame
        ));
    }
    if ev.event.peer_awaiting_reply && after_quit && ev.by == Role::Server {
        parts.push("on the client's COM_QUIT (which has no answer)".into());
    } else if ev.event.peer_awaiting_reply {
        parts.push(format!("while the {peer}'s last data was unanswered"));
    }
    if ev.event.peer_unacked_bytes > 0 {
        parts.push(format!(
            "with {} bytes from the {peer} unacknowledged",
            ev.event.peer_unacked_bytes
        ));
    }
    parts.extend(why(ev));
    match (ev.event.flag, conn.end) {
        // A fact of TCP, not a judgement: a FIN that cut a resultset off is answered by the peer's FIN
        // as politely as one after COM_QUIT.
        (CloseFlag::Fin, ConnectionEnd::Graceful(_)) => parts.push("both sides sent FIN".into()),
        (CloseFlag::Fin, ConnectionEnd::Reset(r)) => match data_after_fin(conn, ev) {
            Some((data, rst)) => parts.push(format!(
                "then {} RST (frame {}) answering the {peer}'s data sent after this FIN (frame {})",
                role_name(r),
                rst.frame,
                data.frame
            )),
            None => parts.push(format!("then {} RST", role_name(r))),
        },
        (CloseFlag::Fin, ConnectionEnd::HalfClosed(_)) => {
            parts.push(format!("the {peer} sent no FIN before the capture ended"))
        }
        (CloseFlag::Rst, _) => parts.push("abortive close".into()),
        (CloseFlag::Fin, ConnectionEnd::Open) => {}
    }
    parts.join(", ")
}

/// The FIN `fin`'s side reset the connection later, answering data its peer sent after the FIN (a request
/// on a connection the server had closed; an answer to a client that had left): that data, and the RST.
pub(crate) fn data_after_fin(conn: &Connection, fin: &ClosedBy) -> Option<(FrameRef, FrameRef)> {
    let rst = conn
        .first_rst
        .filter(|r| r.by == fin.by && r.event.at.frame > fin.event.at.frame)?;
    let data = rst
        .event
        .peer_last_data
        .filter(|d| d.frame > fin.event.at.frame)?;
    Some((data, rst.event.at))
}

/// What preceded a close on its connection, in TCP facts: the peer's zero window (it stopped reading),
/// the closing side's resends of the same data, the peer's silence.
pub(crate) fn why(ev: &ClosedBy) -> Vec<String> {
    let e = &ev.event;
    let at = e.at.ts.0;
    let peer = peer_name(ev.by);
    let s = |ns: i64| units::seconds(ns as f64 / 1e9);
    let mut parts = Vec::new();
    if let Some((z, spell, since_end)) = zero_window_before(ev) {
        parts.push(match z.until.filter(|u| u.ts.0 <= at) {
                None => format!(
                    "the {peer} had advertised a zero window for {} before this, from frame {} (it stopped reading)",
                    s(spell),
                    z.from.frame
                ),
                Some(u) => format!(
                    "the {peer} had advertised a zero window for {} (frames {}-{}, it stopped reading), until {} before this",
                    s(spell),
                    z.from.frame,
                    u.frame,
                    s(since_end)
                ),
            });
    }
    if e.resent_in_a_row >= WHY_RESENT_IN_A_ROW {
        parts.push(format!(
            "the {} had resent its last data {} times unacknowledged",
            role_name(ev.by),
            e.resent_in_a_row
        ));
    }
    if let Some((last, silent)) = silence_before(ev, parts.is_empty()) {
        // A fact only: whether the silence was an idle session's (an idle timeout) or a reader's wait
        // for its answer is the cause's to judge (`crate::cause`), which knows what the session did.
        parts.push(format!(
            "the {peer} had sent nothing for {} (since frame {})",
            s(silent),
            last.frame
        ));
    }
    parts
}

/// The peer's zero-window spell that led to the close `ev` (at least [`WHY_ZERO_WINDOW_NS`] long, and
/// ended, if it did, less long before the close than it lasted): the spell, its length and how long
/// before the close it ended, ns.
pub(crate) fn zero_window_before(ev: &ClosedBy) -> Option<(ZeroWindowSpell, i64, i64)> {
    let at = ev.event.at.ts.0;
    let z = ev.event.peer_zero_window?;
    let end = z.until.map_or(at, |u| u.ts.0.min(at));
    let spell = end - z.from.ts.0;
    // A spell that ended long before the close did not lead to it.
    let since_end = at - end;
    (spell >= WHY_ZERO_WINDOW_NS && since_end < spell).then_some((z, spell, since_end))
}

/// The peer's silence before the close `ev` that [`why`] names as its reason (`nothing_else`: no zero
/// window or resends said why first): the peer's last data and how long before the close it was, ns.
fn silence_before(ev: &ClosedBy, nothing_else: bool) -> Option<(FrameRef, i64)> {
    let e = &ev.event;
    let last = e.peer_last_data?;
    let silent = e.at.ts.0 - last.ts.0;
    // Silence matters when the side that had the floor hangs up, not when a client leaves.
    let hung_up = ev.by == Role::Server || e.flag == CloseFlag::Rst;
    // A reader that stopped reading or a path that lost the data is silent too: that silence is
    // no idle timeout, and the reason already says why.
    (hung_up && nothing_else && !e.peer_awaiting_reply && silent >= WHY_SILENCE_NS)
        .then_some((last, silent))
}

/// Where the stall that led to the close `ev` began, and a comment for that frame: the first segment of
/// the peer's zero window, or the peer's last data before a silence, as a close's reason names them; `None` when
/// neither led to it.
pub fn stall_start(ev: &ClosedBy) -> Option<(u64, String)> {
    let peer = peer_name(ev.by);
    let close = ev.event.at.frame;
    let s = |ns: i64| units::seconds(ns as f64 / 1e9);
    if let Some((z, spell, _)) = zero_window_before(ev) {
        return Some((
            z.from.frame,
            format!(
                "the {peer} advertises a zero window here and keeps it for {} (it stopped reading); the {} closed at frame {close}",
                s(spell),
                role_name(ev.by)
            ),
        ));
    }
    let resent = ev.event.resent_in_a_row >= WHY_RESENT_IN_A_ROW;
    silence_before(ev, !resent).map(|(last, silent)| {
        (
            last.frame,
            format!(
                "the {peer}'s last data before {} of silence; the {} closed at frame {close}",
                s(silent),
                role_name(ev.by)
            ),
        )
    })
}
