//! Connections that could not get in: every connection attempt the capture saw (a SYN's 4-tuple and
//! ISN), how it was answered, how long `connect()` waited, and, where SYNs went unanswered, the likely
//! cause read from the capture:
//!
//! * **a full listen queue**: during a burst of connects the server dropped SYNs from every client
//!   (no other attempt was answered at its first SYN meanwhile). Duplicate SYN-ACKs (the client's ACK
//!   dropped at a full accept queue) and late greetings say the same;
//! * **a TIME_WAIT rejecting the SYN (PAWS)**: the server answered a SYN with a plain ACK of the previous
//!   connection on the 4-tuple, or the SYN's timestamp went backwards from that connection's: clients
//!   behind one address (NAT) reusing a port, each with its own clock;
//! * **loss**: the server answered other clients at once meanwhile; the SYN or its SYN-ACK was lost.
//!
//! For MySQL connections, the server greets first: a greeting long after the handshake means the server
//! accepted the connection late (a full accept queue, a stalled accept loop, slow reverse DNS).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::IpAddr;

use pcapsleuth_flow::{AttemptOutcome, Connection, Endpoint, FrameRef};
use serde::Serialize;

use crate::engine::Run;
use crate::finding::{Finding, FindingKind};
use crate::histogram::{Histogram, RtSummary};
use crate::modes::{detect_modes, Mode};
use crate::mysql::RecognisedBy;
use crate::thresholds::LATE_GREETING_NS;
use crate::units::{counted, duration_us};

/// What every connection attempt of the capture came to.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConnectReport {
    /// Attempts seen from their SYN.
    pub attempts: u64,
    /// Attempts the server answered with a SYN-ACK.
    pub established: u64,
    /// Attempts the server refused with a RST.
    pub refused: u64,
    /// Attempts with no answer in the capture.
    pub unanswered: u64,
    /// SYNs of all attempts, first and resent.
    pub syns: u64,
    /// SYNs the clients sent again (same ISN).
    pub retransmitted_syns: u64,
    /// Attempts answered only after a retransmitted SYN.
    pub delayed: u64,
    /// SYN-ACKs beyond the first of each attempt.
    pub duplicate_synacks: u64,
    /// Connect times (first SYN to the SYN-ACK the client answered) of established attempts, µs.
    pub connect_us: RtSummary,
    /// Whether the connect times form two or more humps (as for response times).
    pub multimodal: bool,
    /// Humps of the connect-time distribution, fast first.
    pub modes: Vec<Mode>,
    /// Established attempts by the SYN the server answered: 1 = the first, 2 = the first resend, ...
    pub answered_at_syn: Vec<SynRound>,
    /// Server hosts that left SYNs unanswered, with the likely cause.
    pub drops: Vec<SynDrops>,
    /// Server hosts that refused attempts.
    pub refusals: Vec<Refusals>,
    /// MySQL servers that greeted connections long after their handshake.
    pub late_greetings: Vec<LateGreetings>,
}

/// Established attempts answered at the same SYN.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SynRound {
    /// Which SYN was answered (1 = the first).
    pub syn: u32,
    /// Established attempts answered at this SYN.
    pub count: u64,
    /// Their connect times (first SYN to the SYN-ACK the client answered), µs.
    pub connect_us: RtSummary,
}

/// Why a server's SYNs went unanswered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DropCause {
    /// SYNs dropped for every client during a burst: the listen queue was full.
    ListenQueueOverflow,
    /// A TIME_WAIT of an earlier connection on the 4-tuple rejected the SYN (PAWS: its timestamp went
    /// backwards, as for clients behind one address).
    TimeWait,
    /// Other clients were answered at once meanwhile: the SYN or its SYN-ACK was lost.
    Loss,
    /// No attempt to the server's port was ever answered: nothing reachable listens there (the host is
    /// down or unreachable, or a firewall drops the SYNs).
    Unreachable,
    /// No other attempt to the server meanwhile to compare with.
    Unknown,
}

/// A server host whose SYNs went unanswered, at least for a while. The cause of each attempt is read
/// from the other attempts to the same port (one listen queue); attempts are reported per host, so that
/// a port scan is one entry.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SynDrops {
    /// `ip:port`, or `ip (N ports)` when the attempts went to several ports.
    pub server: String,
    /// Attempts to this server.
    pub attempts: u64,
    /// Answered only after a retransmitted SYN.
    pub delayed: u64,
    /// Never answered.
    pub unanswered: u64,
    /// Attempts with each cause (the first is the likely one).
    pub causes: Vec<(DropCause, u64)>,
    /// Connect times of the delayed attempts by the SYN that was answered.
    pub rounds: Vec<SynRound>,
    /// SYN-ACKs the server sent again.
    pub duplicate_synacks: u64,
    /// Attempts answered with a plain ACK (a TIME_WAIT's).
    pub acks_to_syn: u64,
    /// Attempts whose SYN timestamp went backwards from the previous connection on the 4-tuple.
    pub timestamps_backwards: u64,
    /// While SYNs were being dropped: how many attempts began, and how many were answered at once.
    pub during: Option<DropSpan>,
    /// The first SYN left unanswered (its frame).
    pub first_syn_frame: u64,
    /// That SYN's first retransmission; `None` when it was not resent.
    pub first_retransmission_frame: Option<u64>,
    /// A Wireshark display filter for the retransmitted SYNs to this server.
    pub filter: String,
}

/// The time span in which a server dropped SYNs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DropSpan {
    /// The first dropped SYN.
    pub from: FrameRef,
    /// The last answer (or, when none came, the last SYN) of an attempt whose SYN was dropped.
    pub to: FrameRef,
    /// Attempts to the server whose first SYN was sent between `from` and `to`.
    pub attempts: u64,
    /// Of them, those answered at their first SYN.
    pub answered_at_once: u64,
}

/// A server host that refused attempts with a RST.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Refusals {
    /// `ip:port`, or `ip (N ports)` when the refused attempts went to several ports.
    pub server: String,
    /// Attempts refused.
    pub count: u64,
    /// The first refused SYN (its frame).
    pub first_syn_frame: u64,
    /// The RST refusing it.
    pub first_rst_frame: u64,
    /// A Wireshark display filter for the RSTs refusing attempts to this server.
    pub filter: String,
}

/// A MySQL server that greeted connections late: the handshake completed, then the client waited.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LateGreetings {
    /// The server's `ip:port`.
    pub server: String,
    /// Greetings at least `LATE_GREETING_NS` (100 ms) after the handshake, of all greetings seen.
    pub count: u64,
    /// Greetings of this server that followed a captured handshake, late or not.
    pub greetings: u64,
    /// Handshake to greeting of the late ones, µs.
    pub wait_us: RtSummary,
    /// The first late greeting.
    pub first_frame: u64,
    /// A Wireshark display filter for the server's greetings.
    pub filter: String,
}

/// A connection's attempt facts the report needs, taken once.
struct Attempt<'a> {
    conn: &'a Connection,
    outcome: AttemptOutcome,
    first_syn: FrameRef,
    /// The answered SYN was a retransmitted one, or none was answered.
    dropped: bool,
    timestamps_backwards: bool,
    /// Why the first SYN went unanswered, for dropped attempts.
    cause: Option<DropCause>,
}

impl Attempt<'_> {
    /// When the first SYN went unanswered: until its first resend (or itself, when never resent).
    fn drop_window(&self) -> (i64, i64) {
        let from = self.first_syn.ts.0;
        let to = self
            .conn
            .handshake
            .retransmitted_syn
            .map_or(from, |f| f.ts.0);
        (from, to)
    }

    fn answered_at_once(&self) -> bool {
        self.outcome == AttemptOutcome::Established && !self.dropped
    }
}

/// Serial-number comparison of two TCP timestamps (RFC 7323 §5.2): whether `a` is older than `b`.
fn ts_before(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

fn attempts<O>(a: &Run<O>) -> Vec<Attempt<'_>> {
    // The SYN timestamp of the previous attempt on each 4-tuple, in capture order (connections are
    // sorted by their first frame).
    let mut previous_ts: BTreeMap<(Endpoint, Endpoint), (u32, Option<u32>)> = BTreeMap::new();
    let mut out = Vec::new();
    for conn in &a.connections {
        let h = &conn.handshake;
        let key = (conn.client, conn.server);
        let ts = h.syn_options.and_then(|o| o.timestamp);
        let backwards = match (previous_ts.get(&key), h.isn, ts) {
            (Some(&(isn, Some(prev))), Some(this_isn), Some(ts)) => {
                isn != this_isn && ts_before(ts, prev)
            }
            _ => false,
        };
        if let Some(isn) = h.isn {
            previous_ts.insert(key, (isn, ts));
        }
        let (Some(outcome), Some(first_syn)) = (h.outcome, h.first_syn) else {
            continue;
        };
        out.push(Attempt {
            conn,
            outcome,
            first_syn,
            dropped: h.syns_before_answer > 1 || outcome == AttemptOutcome::Unanswered,
            timestamps_backwards: backwards,
            cause: None,
        });
    }
    // Each dropped attempt's cause, from the other attempts to the same listening endpoint: per
    // endpoint, its attempts' first SYNs in time order with a running count of those answered at once,
    // so that the attempts within a drop window are counted by two binary searches rather than a walk
    // over every other attempt (a SYN flood has every attempt dropped: that walk was quadratic).
    let mut by_endpoint: HashMap<Endpoint, Listener> = HashMap::new();
    for t in &out {
        let l = by_endpoint.entry(t.conn.server).or_default();
        l.syns.push((t.first_syn.ts.0, t.answered_at_once()));
        l.established |= t.outcome == AttemptOutcome::Established;
    }
    for l in by_endpoint.values_mut() {
        l.syns.sort_unstable();
        l.prompt_before.reserve(l.syns.len() + 1);
        l.prompt_before.push(0);
        let mut prompt = 0u64;
        for &(_, at_once) in &l.syns {
            prompt += u64::from(at_once);
            l.prompt_before.push(prompt);
        }
    }
    for t in &mut out {
        if t.dropped {
            t.cause = Some(cause(t, &by_endpoint[&t.conn.server]));
        }
    }
    out
}

/// The attempts to one listening endpoint, as the causes of its drops are read from them.
#[derive(Default)]
struct Listener {
    /// Every attempt's first SYN time, and whether it was answered at its first SYN, in time order.
    syns: Vec<(i64, bool)>,
    /// `prompt_before[i]`: how many of `syns[..i]` were answered at their first SYN.
    prompt_before: Vec<u64>,
    /// Whether any attempt to the endpoint was established.
    established: bool,
}

impl Listener {
    /// Of the attempts whose first SYN was sent from `from` to `to` (both included): how many were
    /// answered at their first SYN, and how many were not.
    fn within(&self, from: i64, to: i64) -> (u64, u64) {
        if to < from {
            return (0, 0);
        }
        let lo = self.syns.partition_point(|&(at, _)| at < from);
        let hi = self.syns.partition_point(|&(at, _)| at <= to);
        let prompt = self.prompt_before[hi] - self.prompt_before[lo];
        (prompt, (hi - lo) as u64 - prompt)
    }
}

fn rounds<'a>(attempts: impl Iterator<Item = &'a Attempt<'a>>) -> Vec<SynRound> {
    let mut by: BTreeMap<u32, Histogram> = BTreeMap::new();
    for t in attempts {
        if let Some(ns) = t.conn.handshake.connect_ns {
            by.entry(t.conn.handshake.syns_before_answer)
                .or_default()
                .add(ns);
        }
    }
    by.into_iter()
        .map(|(syn, h)| SynRound {
            syn,
            count: h.count(),
            connect_us: h.summary_us(),
        })
        .collect()
}

/// A display filter naming packets to or from `e` (`to`: as destination).
fn host_filter(e: &Endpoint, to: bool) -> String {
    let dir = if to { "dst" } else { "src" };
    let ip = if e.ip.is_ipv4() { "ip" } else { "ipv6" };
    format!("{ip}.{dir}=={} && tcp.{dir}port=={}", e.ip, e.port)
}

/// Why `t`'s SYN went unanswered, from what happened to the other attempts to its server endpoint
/// (`listener`, which holds `t` too) meanwhile.
fn cause(t: &Attempt<'_>, listener: &Listener) -> DropCause {
    if t.conn.handshake.ack_to_syn.is_some() || t.timestamps_backwards {
        return DropCause::TimeWait;
    }
    let (from, to) = t.drop_window();
    let (prompt, mut dropped) = listener.within(from, to);
    // `t` itself began its window (when the window is not empty), and was not answered at once.
    if from <= to {
        dropped -= 1;
    }
    // A listener that answered no attempt at all is not there to have a full queue.
    if !listener.established {
        DropCause::Unreachable
    } else if dropped > 0 && dropped >= prompt {
        DropCause::ListenQueueOverflow
    } else if prompt > 0 {
        DropCause::Loss
    } else {
        DropCause::Unknown
    }
}

/// How a server host is named in reports: `ip:port` when the attempts went to one port, else the
/// address and how many ports (a port scan), with a display filter for its packets.
fn server_name(ip: IpAddr, list: &[&Attempt<'_>], to: bool) -> (String, String) {
    let ports: BTreeSet<u16> = list.iter().map(|t| t.conn.server.port).collect();
    match ports.iter().next() {
        Some(&port) if ports.len() == 1 => {
            let e = Endpoint { ip, port };
            (e.to_string(), host_filter(&e, to))
        }
        _ => {
            let dir = if to { "dst" } else { "src" };
            let family = if ip.is_ipv4() { "ip" } else { "ipv6" };
            (
                format!("{ip} ({} ports)", ports.len()),
                format!("{family}.{dir}=={ip}"),
            )
        }
    }
}

fn drops(ip: IpAddr, list: &[&Attempt<'_>]) -> Option<SynDrops> {
    let dropped: Vec<&Attempt<'_>> = list.iter().copied().filter(|t| t.dropped).collect();
    let first = dropped.first()?;
    let mut causes: BTreeMap<DropCause, u64> = BTreeMap::new();
    for t in &dropped {
        *causes
            .entry(t.cause.unwrap_or(DropCause::Unknown))
            .or_default() += 1;
    }
    let mut causes: Vec<(DropCause, u64)> = causes.into_iter().collect();
    causes.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    // The span of the drops: from the first dropped SYN to the last answer (or last SYN) of a dropped
    // attempt.
    let end = dropped
        .iter()
        .filter_map(|t| {
            let h = &t.conn.handshake;
            h.answer.or(h.retransmitted_syn).or(h.first_syn)
        })
        .max_by_key(|f| (f.ts, f.frame))
        .unwrap_or(first.first_syn);
    let began: Vec<&&Attempt<'_>> = list
        .iter()
        .filter(|t| t.first_syn.ts >= first.first_syn.ts && t.first_syn.ts <= end.ts)
        .collect();
    let (server, filter) = server_name(ip, list, true);
    Some(SynDrops {
        server,
        attempts: list.len() as u64,
        delayed: dropped
            .iter()
            .filter(|t| t.outcome == AttemptOutcome::Established)
            .count() as u64,
        unanswered: dropped
            .iter()
            .filter(|t| t.outcome == AttemptOutcome::Unanswered)
            .count() as u64,
        causes,
        rounds: rounds(dropped.iter().copied()),
        duplicate_synacks: list
            .iter()
            .map(|t| u64::from(t.conn.handshake.synack_count.saturating_sub(1)))
            .sum(),
        acks_to_syn: dropped
            .iter()
            .filter(|t| t.conn.handshake.ack_to_syn.is_some())
            .count() as u64,
        timestamps_backwards: dropped.iter().filter(|t| t.timestamps_backwards).count() as u64,
        during: Some(DropSpan {
            from: first.first_syn,
            to: end,
            attempts: began.len() as u64,
            answered_at_once: began.iter().filter(|t| t.answered_at_once()).count() as u64,
        }),
        first_syn_frame: first.first_syn.frame,
        first_retransmission_frame: first.conn.handshake.retransmitted_syn.map(|f| f.frame),
        filter: if dropped.iter().any(|t| t.conn.handshake.syn_count > 1) {
            format!(
                "tcp.flags.syn==1 && tcp.flags.ack==0 && tcp.analysis.retransmission && {filter}"
            )
        } else {
            format!("tcp.flags.syn==1 && tcp.flags.ack==0 && {filter}")
        },
    })
}

fn refusals(ip: IpAddr, list: &[&Attempt<'_>]) -> Option<Refusals> {
    let refused: Vec<&Attempt<'_>> = list
        .iter()
        .copied()
        .filter(|t| t.outcome == AttemptOutcome::Refused)
        .collect();
    let first = *refused.first()?;
    let (server, filter) = server_name(ip, &refused, false);
    Some(Refusals {
        server,
        count: refused.len() as u64,
        first_syn_frame: first.first_syn.frame,
        first_rst_frame: first.conn.handshake.answer.map_or(0, |f| f.frame),
        filter: format!("tcp.flags.reset==1 && {filter}"),
    })
}

/// MySQL greetings long after the handshake, per server.
fn late_greetings<O>(a: &Run<O>) -> Vec<LateGreetings> {
    let mut by: BTreeMap<Endpoint, (u64, Histogram, Option<FrameRef>)> = BTreeMap::new();
    for (conn, facts) in a.connections.iter().zip(&a.mysql_sessions) {
        let (Some(_), Some(answer), Some(greeting)) = (
            facts
                .as_ref()
                .filter(|f| f.recognised_by == RecognisedBy::Greeting),
            conn.handshake
                .answer
                .filter(|_| conn.handshake.outcome == Some(AttemptOutcome::Established)),
            conn.to_client.first_data,
        ) else {
            continue;
        };
        let slot = by.entry(conn.server).or_default();
        slot.0 += 1;
        let wait = u64::try_from(greeting.ts.0 - answer.ts.0).unwrap_or(0);
        if wait >= LATE_GREETING_NS {
            slot.1.add(wait);
            if slot.2.is_none_or(|f| greeting.frame < f.frame) {
                slot.2 = Some(greeting);
            }
        }
    }
    by.into_iter()
        .filter_map(|(server, (greetings, late, first))| {
            Some(LateGreetings {
                server: server.to_string(),
                count: late.count(),
                greetings,
                wait_us: late.summary_us(),
                first_frame: first?.frame,
                filter: format!("mysql.protocol && {}", host_filter(&server, false)),
            })
        })
        .collect()
}

/// Builds the report of every connection attempt in `a`.
pub fn connect_report<O>(a: &Run<O>) -> ConnectReport {
    let all = attempts(a);
    let count = |o: AttemptOutcome| all.iter().filter(|t| t.outcome == o).count() as u64;
    let mut connect = Histogram::default();
    for t in &all {
        if let Some(ns) = t.conn.handshake.connect_ns {
            connect.add(ns);
        }
    }
    let modes = detect_modes(&connect);
    let mut by_server: BTreeMap<IpAddr, Vec<&Attempt<'_>>> = BTreeMap::new();
    for t in &all {
        by_server.entry(t.conn.server.ip).or_default().push(t);
    }
    ConnectReport {
        attempts: all.len() as u64,
        established: count(AttemptOutcome::Established),
        refused: count(AttemptOutcome::Refused),
        unanswered: count(AttemptOutcome::Unanswered),
        syns: all
            .iter()
            .map(|t| u64::from(t.conn.handshake.syn_count))
            .sum(),
        retransmitted_syns: all
            .iter()
            .map(|t| u64::from(t.conn.handshake.syn_count.saturating_sub(1)))
            .sum(),
        delayed: all
            .iter()
            .filter(|t| t.dropped && t.outcome == AttemptOutcome::Established)
            .count() as u64,
        duplicate_synacks: all
            .iter()
            .map(|t| u64::from(t.conn.handshake.synack_count.saturating_sub(1)))
            .sum(),
        connect_us: connect.summary_us(),
        multimodal: modes.multimodal,
        modes: modes.modes,
        answered_at_syn: rounds(all.iter()),
        drops: by_server
            .iter()
            .filter_map(|(&ip, list)| drops(ip, list))
            .collect(),
        refusals: by_server
            .iter()
            .filter_map(|(&ip, list)| refusals(ip, list))
            .collect(),
        late_greetings: late_greetings(a),
    }
}

impl DropCause {
    /// The cause's name, as in JSON.
    pub fn name(self) -> &'static str {
        match self {
            DropCause::ListenQueueOverflow => "listen_queue_overflow",
            DropCause::TimeWait => "time_wait",
            DropCause::Loss => "loss",
            DropCause::Unreachable => "unreachable",
            DropCause::Unknown => "unknown",
        }
    }

    /// The cause in words, for findings.
    pub fn words(self) -> &'static str {
        match self {
            DropCause::ListenQueueOverflow => {
                "the server dropped SYNs from every client during a burst of connects: its listen \
                 queue was full (an accept loop too slow or stalled; back_log, net.core.somaxconn)"
            }
            DropCause::TimeWait => {
                "the server answered the SYN with a plain ACK of the previous connection on the same \
                 4-tuple, or the SYN's timestamp went backwards from that connection's: a TIME_WAIT \
                 rejected it (PAWS), as happens to clients behind one address (NAT) reusing ports; \
                 tcp_tw_recycle on old kernels dropped such SYNs silently"
            }
            DropCause::Loss => {
                "the server answered other clients at once meanwhile: the SYN or its SYN-ACK was lost \
                 on the path"
            }
            DropCause::Unreachable => {
                "no attempt to the port was ever answered: the host is down or unreachable, or a \
                 firewall drops the SYNs"
            }
            DropCause::Unknown => "no other attempt to the server meanwhile tells why",
        }
    }
}

impl SynDrops {
    /// One line: how many waited, for how long, and why.
    pub fn summary(&self) -> String {
        let rounds: Vec<String> = self
            .rounds
            .iter()
            .map(|r| format!("~{} ({})", duration_us(r.connect_us.p50), r.count))
            .collect();
        let mut what = Vec::new();
        if self.delayed > 0 {
            what.push(format!(
                "{} of {} to {} waited for a retransmitted SYN ({})",
                self.delayed,
                counted(self.attempts, "connect", "connects"),
                self.server,
                rounds.join(", ")
            ));
        }
        if self.unanswered > 0 {
            what.push(format!(
                "{} of {} to {} were never answered",
                self.unanswered,
                counted(self.attempts, "connect", "connects"),
                self.server
            ));
        }
        let cause = self.causes.first().map_or(DropCause::Unknown, |c| c.0);
        format!("{}: {}", what.join("; "), cause.words())
    }

    /// The facts behind the cause.
    pub fn evidence(&self) -> Vec<String> {
        let mut e = Vec::new();
        if let Some(d) = &self.during {
            e.push(format!(
                "from frame {} to frame {} ({:.2} s): {} began, {} answered at their first SYN",
                d.from.frame,
                d.to.frame,
                (d.to.ts.0 - d.from.ts.0) as f64 / 1e9,
                counted(d.attempts, "attempt", "attempts"),
                d.answered_at_once
            ));
        }
        if self.causes.len() > 1 {
            let parts: Vec<String> = self
                .causes
                .iter()
                .map(|(c, n)| format!("{n} {}", c.name()))
                .collect();
            e.push(format!("by attempt: {}", parts.join(", ")));
        }
        if self.duplicate_synacks > 0 {
            e.push(format!(
                "{} duplicate SYN-ACKs (the server resent them: the client's ACK was lost or dropped at \
                 a full accept queue)",
                self.duplicate_synacks
            ));
        }
        if self.acks_to_syn > 0 {
            e.push(format!(
                "{} answered with a plain ACK (a TIME_WAIT's)",
                counted(self.acks_to_syn, "SYN", "SYNs")
            ));
        }
        if self.timestamps_backwards > 0 {
            e.push(format!(
                "{} SYNs with a timestamp older than the previous connection's on the same 4-tuple",
                self.timestamps_backwards
            ));
        }
        e.push(format!(
            "first unanswered SYN frame {}{}; Wireshark: {}",
            self.first_syn_frame,
            self.first_retransmission_frame
                .map(|f| format!(", resent in frame {f}"))
                .unwrap_or_default(),
            self.filter
        ));
        e
    }
}

impl ConnectReport {
    /// What is worth a user's attention: SYNs dropped (with the likely cause), refused attempts, late
    /// greetings. Empty when every attempt was answered at its first SYN and greeted promptly.
    pub fn findings(&self) -> Vec<Finding> {
        let mut f = Vec::new();
        for d in &self.drops {
            let cause = d.causes.first().map_or(DropCause::Unknown, |c| c.0);
            f.push(Finding {
                severity: if cause == DropCause::Loss && d.unanswered == 0 {
                    2
                } else {
                    1
                },
                kind: FindingKind::SynDrops,
                summary: d.summary(),
                evidence: d.evidence(),
                frames: std::iter::once(d.first_syn_frame)
                    .chain(d.first_retransmission_frame)
                    .collect(),
                ..Finding::blank()
            });
        }
        for r in &self.refusals {
            f.push(Finding {
                severity: 1,
                kind: FindingKind::ConnectRefused,
                summary: format!(
                    "{} connects to {} were refused (RST to the SYN): nothing listened on the port \
                     (the server was down or restarting, or the port is wrong)",
                    r.count, r.server
                ),
                evidence: vec![format!(
                    "first refused SYN frame {}, RST frame {}; Wireshark: {}",
                    r.first_syn_frame, r.first_rst_frame, r.filter
                )],
                frames: vec![r.first_syn_frame, r.first_rst_frame],
                ..Finding::blank()
            });
        }
        for g in &self.late_greetings {
            f.push(Finding {
                severity: 2,
                kind: FindingKind::LateAccept,
                summary: format!(
                    "{} of {} MySQL connections to {} were greeted {} to {} after their handshake: \
                     the server accepted them late (a full accept queue or a stalled accept loop; slow \
                     reverse DNS when skip_name_resolve is off)",
                    g.count,
                    g.greetings,
                    g.server,
                    duration_us(g.wait_us.min),
                    duration_us(g.wait_us.max)
                ),
                evidence: vec![format!(
                    "first late greeting frame {}; Wireshark: {}",
                    g.first_frame, g.filter
                )],
                frames: vec![g.first_frame],
                ..Finding::blank()
            });
        }
        f
    }
}
