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

use pcapsleuth_flow::{AttemptOutcome, Endpoint, FrameRef, Role, TtlRange};
use serde::Serialize;

use crate::cause::TtlMismatch;
use crate::engine::Run;
use crate::finding::{Finding, FindingKind};
use crate::histogram::{Histogram, RtSummary};
use crate::modes::{detect_modes, Mode};
use crate::mysql::RecognisedBy;
use crate::thresholds::{LATE_GREETING_NS, TTL_MIN_PACKETS};
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
    /// When every refusing RST came with an IP TTL that the data this host sent never had: likely
    /// sent by a device on the path (a firewall's REJECT, a load balancer), not by the host; the TTL
    /// of the first refusing RST and the host's usual ones. `None` when they fit, or too few of the
    /// host's packets were seen to tell.
    pub on_path: Option<TtlMismatch>,
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

/// A connection's attempt facts the report needs. The report reads the connections twice (the causes of
/// drops need every attempt to the endpoint first), keeping per attempt only the time of its first SYN:
/// memory follows the servers, not the attempts.
struct Attempt {
    server: Endpoint,
    outcome: AttemptOutcome,
    first_syn: FrameRef,
    retransmitted_syn: Option<FrameRef>,
    /// The SYN-ACK the client answered, or the RST that refused the attempt.
    answer: Option<FrameRef>,
    ack_to_syn: bool,
    syn_count: u32,
    synack_count: u32,
    syns_before_answer: u32,
    connect_ns: Option<u64>,
    /// The answered SYN was a retransmitted one, or none was answered.
    dropped: bool,
    timestamps_backwards: bool,
    /// The IP TTL of the RST that refused the attempt.
    refusal_ttl: Option<u8>,
    /// The IP TTLs of the data the server sent on this connection (none on a refused attempt).
    server_data_ttl: TtlRange,
}

impl Attempt {
    /// When the first SYN went unanswered: until its first resend (or itself, when never resent).
    fn drop_window(&self) -> (i64, i64) {
        let from = self.first_syn.ts.0;
        let to = self.retransmitted_syn.map_or(from, |f| f.ts.0);
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

/// Calls `each` with every connection attempt of `a`, in capture order.
fn each_attempt<O>(a: &Run<O>, mut each: impl FnMut(&Attempt)) {
    // The SYN timestamp of the previous attempt on each 4-tuple, in capture order (connections are
    // sorted by their first frame); only 4-tuples that carried more than one connection have one.
    let mut previous_ts: HashMap<(Endpoint, Endpoint), (u32, Option<u32>)> = HashMap::new();
    for conn in &a.connections {
        let h = &conn.handshake;
        let key = (conn.client, conn.server);
        let ts = h.syn_options.and_then(|o| o.timestamp);
        let mut backwards = false;
        if a.connections.reused(conn.client, conn.server) {
            backwards = match (previous_ts.get(&key), h.isn, ts) {
                (Some(&(isn, Some(prev))), Some(this_isn), Some(ts)) => {
                    isn != this_isn && ts_before(ts, prev)
                }
                _ => false,
            };
            if let Some(isn) = h.isn {
                previous_ts.insert(key, (isn, ts));
            }
        }
        let (Some(outcome), Some(first_syn)) = (h.outcome, h.first_syn) else {
            continue;
        };
        each(&Attempt {
            server: conn.server,
            outcome,
            first_syn,
            retransmitted_syn: h.retransmitted_syn,
            answer: h.answer,
            ack_to_syn: h.ack_to_syn.is_some(),
            syn_count: h.syn_count,
            synack_count: h.synack_count,
            syns_before_answer: h.syns_before_answer,
            connect_ns: h.connect_ns,
            dropped: h.syns_before_answer > 1 || outcome == AttemptOutcome::Unanswered,
            timestamps_backwards: backwards,
            refusal_ttl: conn
                .first_rst
                .filter(|c| outcome == AttemptOutcome::Refused && c.by == Role::Server)
                .map(|c| c.event.ttl),
            server_data_ttl: conn.to_client.ttl,
        });
    }
}

/// The attempts to one listening endpoint, as the causes of its drops are read from them: per endpoint,
/// its attempts' first SYNs in time order with a running count of those answered at once, so that the
/// attempts within a drop window are counted by two binary searches (a SYN flood has every attempt
/// dropped: walking every other attempt for each would be quadratic).
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
    /// Ready to count: the first SYNs in time order, and the running count.
    fn sorted(&mut self) {
        self.syns.sort_unstable();
        self.prompt_before = Vec::with_capacity(self.syns.len() + 1);
        self.prompt_before.push(0);
        let mut prompt = 0u64;
        for &(_, at_once) in &self.syns {
            prompt += u64::from(at_once);
            self.prompt_before.push(prompt);
        }
    }

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

/// Connect times by the SYN that was answered.
#[derive(Default)]
struct Rounds(BTreeMap<u32, Histogram>);

impl Rounds {
    fn add(&mut self, t: &Attempt) {
        if let Some(ns) = t.connect_ns {
            self.0.entry(t.syns_before_answer).or_default().add(ns);
        }
    }

    fn report(self) -> Vec<SynRound> {
        self.0
            .into_iter()
            .map(|(syn, h)| SynRound {
                syn,
                count: h.count(),
                connect_us: h.summary_us(),
            })
            .collect()
    }
}

/// A display filter naming packets to or from `e` (`to`: as destination).
fn host_filter(e: &Endpoint, to: bool) -> String {
    let dir = if to { "dst" } else { "src" };
    let ip = if e.ip.is_ipv4() { "ip" } else { "ipv6" };
    format!("{ip}.{dir}=={} && tcp.{dir}port=={}", e.ip, e.port)
}

/// Why `t`'s SYN went unanswered, from what happened to the other attempts to its server endpoint
/// (`listener`, which holds `t` too) meanwhile.
fn cause(t: &Attempt, listener: &Listener) -> DropCause {
    if t.ack_to_syn || t.timestamps_backwards {
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
fn server_name(ip: IpAddr, ports: &BTreeSet<u16>, to: bool) -> (String, String) {
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

/// What the report says of one server host's attempts, gathered attempt by attempt.
#[derive(Default)]
struct ServerAttempts {
    attempts: u64,
    /// The ports of every attempt, and of the refused ones.
    ports: BTreeSet<u16>,
    refused_ports: BTreeSet<u16>,
    duplicate_synacks: u64,
    /// The first dropped attempt (in capture order): its first SYN and that SYN's first resend.
    first_dropped: Option<(FrameRef, Option<FrameRef>)>,
    /// The last answer (or, when none came, the last SYN) of an attempt whose SYN was dropped.
    drops_end: Option<FrameRef>,
    delayed: u64,
    unanswered: u64,
    acks_to_syn: u64,
    timestamps_backwards: u64,
    /// A dropped attempt's SYN was resent.
    resent: bool,
    rounds: Rounds,
    /// Of the dropped attempts, by cause (the second reading).
    causes: BTreeMap<DropCause, u64>,
    /// Attempts that began within the drops' span, and of them those answered at once (the second
    /// reading).
    began: u64,
    began_at_once: u64,
    refused: u64,
    /// The first refused attempt: its SYN's frame and the RST's.
    first_refused: Option<(u64, u64)>,
    /// The TTLs of the RSTs that refused attempts, and of the data the host sent.
    refusal_ttl: TtlRange,
    first_refusal_ttl: Option<u8>,
    data_ttl: TtlRange,
}

impl ServerAttempts {
    /// The first reading: counts, and the span of the drops.
    fn add(&mut self, t: &Attempt) {
        self.attempts += 1;
        self.ports.insert(t.server.port);
        self.duplicate_synacks += u64::from(t.synack_count.saturating_sub(1));
        self.data_ttl.merge(&t.server_data_ttl);
        if let Some(ttl) = t.refusal_ttl {
            self.refusal_ttl.note(ttl);
            self.first_refusal_ttl.get_or_insert(ttl);
        }
        if t.outcome == AttemptOutcome::Refused {
            self.refused += 1;
            self.refused_ports.insert(t.server.port);
            self.first_refused
                .get_or_insert((t.first_syn.frame, t.answer.map_or(0, |f| f.frame)));
        }
        if !t.dropped {
            return;
        }
        self.first_dropped
            .get_or_insert((t.first_syn, t.retransmitted_syn));
        let end = t.answer.or(t.retransmitted_syn).unwrap_or(t.first_syn);
        if self
            .drops_end
            .is_none_or(|e| (end.ts, end.frame) >= (e.ts, e.frame))
        {
            self.drops_end = Some(end);
        }
        self.delayed += u64::from(t.outcome == AttemptOutcome::Established);
        self.unanswered += u64::from(t.outcome == AttemptOutcome::Unanswered);
        self.acks_to_syn += u64::from(t.ack_to_syn);
        self.timestamps_backwards += u64::from(t.timestamps_backwards);
        self.resent |= t.syn_count > 1;
        self.rounds.add(t);
    }

    /// The second reading: the cause of each drop, and the attempts within the drops' span.
    fn add_again(&mut self, t: &Attempt, listener: &Listener) {
        if let (Some((first, _)), Some(end)) = (self.first_dropped, self.drops_end) {
            if t.first_syn.ts >= first.ts && t.first_syn.ts <= end.ts {
                self.began += 1;
                self.began_at_once += u64::from(t.answered_at_once());
            }
        }
        if t.dropped {
            *self.causes.entry(cause(t, listener)).or_default() += 1;
        }
    }

    fn drops(&mut self, ip: IpAddr) -> Option<SynDrops> {
        let (first, first_resent) = self.first_dropped?;
        let mut causes: Vec<(DropCause, u64)> =
            std::mem::take(&mut self.causes).into_iter().collect();
        causes.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let (server, filter) = server_name(ip, &self.ports, true);
        Some(SynDrops {
            server,
            attempts: self.attempts,
            delayed: self.delayed,
            unanswered: self.unanswered,
            causes,
            rounds: std::mem::take(&mut self.rounds).report(),
            duplicate_synacks: self.duplicate_synacks,
            acks_to_syn: self.acks_to_syn,
            timestamps_backwards: self.timestamps_backwards,
            during: Some(DropSpan {
                from: first,
                to: self.drops_end.unwrap_or(first),
                attempts: self.began,
                answered_at_once: self.began_at_once,
            }),
            first_syn_frame: first.frame,
            first_retransmission_frame: first_resent.map(|f| f.frame),
            filter: if self.resent {
                format!(
                    "tcp.flags.syn==1 && tcp.flags.ack==0 && tcp.analysis.retransmission && {filter}"
                )
            } else {
                format!("tcp.flags.syn==1 && tcp.flags.ack==0 && {filter}")
            },
        })
    }

    fn refusals(&self, ip: IpAddr) -> Option<Refusals> {
        let (first_syn_frame, first_rst_frame) = self.first_refused?;
        let (server, filter) = server_name(ip, &self.refused_ports, false);
        Some(Refusals {
            server,
            count: self.refused,
            first_syn_frame,
            first_rst_frame,
            filter: format!("tcp.flags.reset==1 && {filter}"),
            on_path: self.refusals_on_path(),
        })
    }

    /// The refusing RSTs' TTL against the data the host sent: a host's kernel refuses with the TTL
    /// its data has, a device closer to the capture point with its own.
    fn refusals_on_path(&self) -> Option<TtlMismatch> {
        let (usual, refusing) = (self.data_ttl, self.refusal_ttl);
        let apart = refusing.max < usual.min || refusing.min > usual.max;
        (usual.packets >= TTL_MIN_PACKETS && refusing.packets > 0 && apart).then_some(TtlMismatch {
            ttl: self.first_refusal_ttl?,
            usual: [usual.min, usual.max],
            packets: usual.packets,
        })
    }
}

/// MySQL greetings long after the handshake, per server.
fn late_greetings<O>(a: &Run<O>) -> Vec<LateGreetings> {
    let mut by: BTreeMap<Endpoint, (u64, Histogram, Option<FrameRef>)> = BTreeMap::new();
    for (conn, facts) in a.connections.iter().zip(&a.mysql_sessions) {
        let (Some(_), Some(answer), Some(greeting)) = (
            facts
                .as_deref()
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
    let mut r = ConnectReport {
        attempts: 0,
        established: 0,
        refused: 0,
        unanswered: 0,
        syns: 0,
        retransmitted_syns: 0,
        delayed: 0,
        duplicate_synacks: 0,
        connect_us: RtSummary::default(),
        multimodal: false,
        modes: Vec::new(),
        answered_at_syn: Vec::new(),
        drops: Vec::new(),
        refusals: Vec::new(),
        late_greetings: late_greetings(a),
    };
    let mut connect = Histogram::default();
    let mut rounds = Rounds::default();
    let mut servers: BTreeMap<IpAddr, ServerAttempts> = BTreeMap::new();
    let mut listeners: HashMap<Endpoint, Listener> = HashMap::new();
    each_attempt(a, |t| {
        r.attempts += 1;
        match t.outcome {
            AttemptOutcome::Established => r.established += 1,
            AttemptOutcome::Refused => r.refused += 1,
            AttemptOutcome::Unanswered => r.unanswered += 1,
        }
        r.syns += u64::from(t.syn_count);
        r.retransmitted_syns += u64::from(t.syn_count.saturating_sub(1));
        r.delayed += u64::from(t.dropped && t.outcome == AttemptOutcome::Established);
        r.duplicate_synacks += u64::from(t.synack_count.saturating_sub(1));
        if let Some(ns) = t.connect_ns {
            connect.add(ns);
        }
        rounds.add(t);
        servers.entry(t.server.ip).or_default().add(t);
        let l = listeners.entry(t.server).or_default();
        l.syns.push((t.first_syn.ts.0, t.answered_at_once()));
        l.established |= t.outcome == AttemptOutcome::Established;
    });
    // Each dropped attempt's cause, from the other attempts to the same listening endpoint.
    listeners.values_mut().for_each(Listener::sorted);
    each_attempt(a, |t| {
        if let (Some(s), Some(l)) = (servers.get_mut(&t.server.ip), listeners.get(&t.server)) {
            s.add_again(t, l);
        }
    });
    let modes = detect_modes(&connect);
    r.connect_us = connect.summary_us();
    r.multimodal = modes.multimodal;
    r.modes = modes.modes;
    r.answered_at_syn = rounds.report();
    r.refusals = servers
        .iter()
        .filter_map(|(&ip, s)| s.refusals(ip))
        .collect();
    r.drops = servers
        .iter_mut()
        .filter_map(|(&ip, s)| s.drops(ip))
        .collect();
    r
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
            let mut evidence = vec![format!(
                "first refused SYN frame {}, RST frame {}; Wireshark: {}",
                r.first_syn_frame, r.first_rst_frame, r.filter
            )];
            let summary = match &r.on_path {
                None => format!(
                    "{} connects to {} were refused (RST to the SYN): nothing listened on the port \
                     (the server was down or restarting, or the port is wrong)",
                    r.count, r.server
                ),
                Some(t) => {
                    evidence.push(format!(
                        "the refusing RSTs came with IP TTL {}; every segment of data from the \
                         server came with {} ({} segments): a host sends its packets with one initial \
                         TTL, and one path takes as many hops off each",
                        t.ttl,
                        t.usual_words(),
                        t.packets
                    ));
                    format!(
                        "{} connects to {} were refused (RST to the SYN), likely by a device on the \
                         path (a firewall's REJECT, a load balancer), not by the server: the RSTs \
                         came with TTL {}, where the data the server sent came with {}",
                        r.count,
                        r.server,
                        t.ttl,
                        t.usual_words()
                    )
                }
            };
            f.push(Finding {
                severity: 1,
                kind: FindingKind::ConnectRefused,
                summary,
                evidence,
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
