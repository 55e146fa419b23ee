//! TCP connection tracking: roles, handshake, per-direction counters, retransmissions, zero windows,
//! and how and by whom a connection was closed.
//!
//! One [`ConnectionTracker`] follows one 4-tuple through time. A SYN after a FIN or RST, or a SYN with
//! another initial sequence number than the connection's own, starts a new connection on the same
//! 4-tuple (port reuse, a new attempt); the attempt itself is followed by [`crate::handshake`].
//! Packets must be fed in capture order.

use serde::Serialize;

use crate::decode::{TcpFlags, TcpSegment};
use crate::frame::FrameRef;
use crate::handshake::{AttemptState, Handshake};
use crate::key::{Endpoint, FlowKey, Side};
use crate::packing::{bit, has, Packer, Unpacker};
use pcapsleuth_capture::Timestamp;

/// The TCP flag that ended (or began ending) a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum CloseFlag {
    /// FIN: the sender has no more to send (an orderly close, or half of one). `"FIN"` in JSON.
    Fin,
    /// RST: the sender aborts the connection. `"RST"` in JSON.
    Rst,
}

impl CloseFlag {
    /// Its name, as JSON gives it: `FIN` or `RST`.
    pub fn name(self) -> &'static str {
        match self {
            CloseFlag::Fin => "FIN",
            CloseFlag::Rst => "RST",
        }
    }
}

/// Which role an endpoint plays.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The endpoint that opened the connection (sent the SYN, or is taken to have).
    Client,
    /// The endpoint that accepted it (the listener).
    Server,
    /// Roles could not be told apart (no handshake, no port hint).
    Unknown,
}

impl Role {
    /// Its name, as JSON gives it: `client`, `server` or `unknown`.
    pub fn name(self) -> &'static str {
        match self {
            Role::Client => "client",
            Role::Server => "server",
            Role::Unknown => "unknown",
        }
    }
}

/// How the client/server roles of a connection were decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RoleBasis {
    /// The client sent the SYN.
    Syn,
    /// The server sent the SYN+ACK (the SYN itself was not captured).
    SynAck,
    /// The server endpoint accepted a handshake on another connection in this capture.
    KnownListener,
    /// Port heuristics: well-known port below 1024, or the non-ephemeral side.
    Port,
    /// An application protocol said so (e.g. the MySQL server greeting).
    Protocol,
}

/// Traffic of one direction of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct DirectionStats {
    /// TCP segments sent in this direction, pure ACKs and retransmissions included.
    pub packets: u64,
    /// TCP payload bytes on the wire (retransmissions included).
    pub payload_bytes: u64,
    /// Frame bytes on the wire (link-layer length of every packet).
    pub wire_bytes: u64,
    /// Segments that resent sequence space already seen (Wireshark's `tcp.analysis.retransmission`,
    /// without its out-of-order refinement).
    pub retransmissions: u64,
    /// Segments behind the highest sequence seen that arrived within the initial RTT (3 ms when unknown)
    /// of it: reordered in flight, not resent (Wireshark's `tcp.analysis.out_of_order`).
    pub out_of_order: u64,
    /// Segments advertising a zero receive window (Wireshark's `tcp.analysis.zero_window`).
    pub zero_windows: u64,
    /// Packets the snap length cut short.
    pub truncated: u64,
    /// The first packet carrying payload (for a server that speaks first, its greeting).
    pub first_data: Option<FrameRef>,
    /// The IP TTLs (IPv6 hop limits) of the side's first [`TTL_SAMPLES`] segments of new data: what its
    /// host's packets look like at the capture point, against which a FIN or RST bearing its address is
    /// judged (a device on the path that forges one sends it with its own TTL, and no data).
    pub ttl: TtlRange,
    /// The TTL of the side's first SYN (or SYN-ACK), judged apart for the same reason.
    pub syn_ttl: Option<u8>,
}

/// The lowest and highest IP TTL (IPv6 hop limit) of some packets, and how many they were.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct TtlRange {
    /// The lowest TTL (meaningless while `packets` is 0).
    pub min: u8,
    /// The highest TTL.
    pub max: u8,
    /// The packets seen.
    pub packets: u64,
}

impl TtlRange {
    /// One more packet, sent with `ttl`.
    pub fn note(&mut self, ttl: u8) {
        if self.packets == 0 {
            (self.min, self.max) = (ttl, ttl);
        } else {
            self.min = self.min.min(ttl);
            self.max = self.max.max(ttl);
        }
        self.packets += 1;
    }

    /// The packets of both ranges.
    pub fn merge(&mut self, o: &TtlRange) {
        match (self.packets, o.packets) {
            (_, 0) => {}
            (0, _) => *self = *o,
            _ => {
                self.min = self.min.min(o.min);
                self.max = self.max.max(o.max);
                self.packets += o.packets;
            }
        }
    }

    /// Whether a packet sent with `ttl` fits these (no packets: it fits, as nothing says otherwise).
    pub fn holds(&self, ttl: u8) -> bool {
        self.packets == 0 || (self.min..=self.max).contains(&ttl)
    }
}

/// The first FIN or RST a side sent, and what the other side was waiting for at that moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CloseEvent {
    /// The FIN or RST segment.
    pub at: FrameRef,
    /// Whether it was a FIN or a RST.
    pub flag: CloseFlag,
    /// Which endpoint of the flow key sent it (not in JSON: [`ClosedBy::by`] gives the role).
    #[serde(skip)]
    pub side: Side,
    /// Bytes the peer had sent that the closing side had not acknowledged.
    pub peer_unacked_bytes: u64,
    /// The last payload before the close came from the peer: its request was left unanswered.
    pub peer_awaiting_reply: bool,
    /// The peer's latest spell of zero-window advertisements before the close (it stopped reading).
    pub peer_zero_window: Option<ZeroWindowSpell>,
    /// Times the closing side had resent its unacknowledged bytes since it last sent new data. A resend
    /// is counted once however many segments carried it: how TCP cut it is no measure of the path.
    pub resent_in_a_row: u32,
    /// The peer's last segment carrying payload before the close.
    pub peer_last_data: Option<FrameRef>,
    /// The closing side's own last segment carrying new data before the close (not a resend): when its
    /// writes last made progress.
    pub last_data: Option<FrameRef>,
    /// The IP TTL (IPv6 hop limit) the FIN or RST came with.
    pub ttl: u8,
}

/// A side advertising a zero receive window, from its first such segment to the segment that opened the
/// window again (`until`: none while it was still zero).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ZeroWindowSpell {
    /// The first segment of the spell advertising a zero window.
    pub from: FrameRef,
    /// The first segment after it advertising a non-zero window; `None` while the window was still zero.
    pub until: Option<FrameRef>,
}

/// How a connection ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "by")]
pub enum ConnectionEnd {
    /// Both sides sent FIN; `by` began it.
    Graceful(Role),
    /// A RST ended it.
    Reset(Role),
    /// Only `by` sent a FIN before the capture ended.
    HalfClosed(Role),
    /// Still open when the capture ended.
    Open,
}

/// What tracking concluded about one connection of a 4-tuple.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Connection {
    /// The client's address and port (when `roles_known` is false, the flow key's lower endpoint).
    pub client: Endpoint,
    /// The server's address and port (when `roles_known` is false, the flow key's higher endpoint).
    pub server: Endpoint,
    /// Whether `client`/`server` are known; `Unknown` means they are just the two ends.
    pub roles_known: bool,
    /// How the roles were decided; `None` when they are not known.
    pub role_basis: Option<RoleBasis>,
    /// The connection's first packet in the capture.
    pub first: FrameRef,
    /// Its last packet in the capture (stragglers after the close included).
    pub last: FrameRef,
    /// SYN to the ACK that completes the handshake, in nanoseconds (Wireshark's
    /// `tcp.analysis.initial_rtt`); `None` when the capture lacks the SYN, the SYN-ACK or that ACK.
    pub handshake_rtt_ns: Option<i64>,
    /// Traffic from the client to the server.
    pub to_server: DirectionStats,
    /// Traffic from the server to the client.
    pub to_client: DirectionStats,
    /// The first FIN of either side, with who sent it; `None` when neither did.
    pub first_fin: Option<ClosedBy>,
    /// The first RST of either side, with who sent it; `None` when neither did.
    pub first_rst: Option<ClosedBy>,
    /// How the connection ended, from the FINs and RSTs both sides sent.
    pub end: ConnectionEnd,
    /// The connection attempt: SYNs, SYN-ACKs, connect time and outcome.
    #[serde(flatten)]
    pub handshake: Handshake,
}

/// A [`CloseEvent`] with the role of the side that sent it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ClosedBy {
    /// The FIN or RST, and what preceded it.
    #[serde(flatten)]
    pub event: CloseEvent,
    /// The role of the side that sent it.
    pub by: Role,
}

impl Connection {
    /// The packet that began the end: the earlier of the first FIN and the first RST.
    pub fn close(&self) -> Option<ClosedBy> {
        match (self.first_fin, self.first_rst) {
            (Some(f), Some(r)) => Some(if r.event.at.frame < f.event.at.frame {
                r
            } else {
                f
            }),
            (f, r) => f.or(r),
        }
    }

    /// Nanoseconds from its first packet to its last.
    pub fn duration_ns(&self) -> i64 {
        self.last.ts.0 - self.first.ts.0
    }

    /// Frame bytes on the wire in both directions (link-layer length of every packet).
    pub fn total_bytes(&self) -> u64 {
        self.to_server.wire_bytes + self.to_client.wire_bytes
    }
}

/// Per-side sequence state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct SideState {
    /// Highest sequence number sent plus its length: the next byte expected.
    next_seq: Option<u32>,
    /// When `next_seq` last advanced.
    next_seq_at: Timestamp,
    /// Latest acknowledgment number this side sent, and when.
    last_ack: Option<u32>,
    last_ack_at: Timestamp,
    /// Last advertised window, and how many duplicate ACKs in a row repeated `last_ack`.
    last_window: u16,
    dup_acks: u32,
    stats: DirectionStats,
    first_fin: Option<CloseEvent>,
    first_rst: Option<CloseEvent>,
    syn: Option<FrameRef>,
    syn_ack: Option<FrameRef>,
    /// The latest zero-window spell this side advertised.
    zero_window: Option<ZeroWindowSpell>,
    /// Resends since this side last sent new data.
    resent_in_a_row: u32,
    /// Where the last resent segment ended: a segment resent from there goes on with the same resend.
    resent_until: Option<u32>,
    /// This side's last segment carrying payload.
    last_data: Option<FrameRef>,
    /// This side's last segment carrying new data (not a resend).
    last_new_data: Option<FrameRef>,
    /// The lowest and highest IP TTL of this side's first [`TTL_SAMPLES`] segments of new data (`u8::MAX`
    /// and 0 before the first), and how many those were: [`DirectionStats::ttl`] when the connection is
    /// concluded.
    ttl_min: u8,
    ttl_max: u8,
    ttl_packets: u64,
}

/// A side's TTL is learned from its first this many segments of new data: a host sends every packet of
/// a connection with one initial TTL, and its path takes the same hops off each, so a few show it; the
/// rest of a long connection would only cost a comparison each.
pub const TTL_SAMPLES: u64 = 16;

/// Sequence-space comparison (RFC 1982 serial arithmetic).
fn seq_before(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

/// How a segment relates to the sequence space already seen in its direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SegmentClass {
    /// New sequence space (or a pure ACK).
    New,
    /// Resends sequence space already seen.
    Retransmission,
    /// A one-byte (or empty) probe at next_seq - 1.
    KeepAlive,
    /// Behind the highest sequence, but too soon after it to be a resend.
    OutOfOrder,
}

/// The state of one connection while packets arrive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionState {
    key: FlowKey,
    sides: [SideState; 2],
    first: FrameRef,
    last: FrameRef,
    handshake_ack: Option<FrameRef>,
    last_data_side: Option<Side>,
    last_retransmission: Option<Timestamp>,
    attempt: AttemptState,
}

impl ConnectionState {
    fn new(key: FlowKey, at: FrameRef) -> Self {
        ConnectionState {
            key,
            sides: [SideState {
                ttl_min: u8::MAX,
                ..SideState::default()
            }; 2],
            first: at,
            last: at,
            handshake_ack: None,
            last_data_side: None,
            last_retransmission: None,
            attempt: AttemptState::default(),
        }
    }

    /// The connection's 4-tuple.
    pub fn key(&self) -> FlowKey {
        self.key
    }

    /// Its first packet.
    pub fn first(&self) -> FrameRef {
        self.first
    }

    /// Its last packet so far.
    pub fn last(&self) -> FrameRef {
        self.last
    }

    fn closed(&self) -> bool {
        self.sides
            .iter()
            .any(|s| s.first_fin.is_some() || s.first_rst.is_some())
    }

    /// The client side, if a handshake packet says which it is.
    pub fn handshake_client(&self) -> Option<(Side, RoleBasis)> {
        if self.sides[0].syn.is_some() != self.sides[1].syn.is_some() {
            let s = if self.sides[0].syn.is_some() {
                Side::Lo
            } else {
                Side::Hi
            };
            return Some((s, RoleBasis::Syn));
        }
        if self.sides[0].syn_ack.is_some() != self.sides[1].syn_ack.is_some() {
            let s = if self.sides[0].syn_ack.is_some() {
                Side::Hi
            } else {
                Side::Lo
            };
            return Some((s, RoleBasis::SynAck));
        }
        None
    }

    /// SYN to the ACK that completed the handshake.
    pub fn initial_rtt(&self) -> Option<i64> {
        let syn = self.sides[0].syn.or(self.sides[1].syn)?;
        Some(self.handshake_ack?.ts.0 - syn.ts.0)
    }

    /// Whether a retransmission happened between `from_ns` and `to_ns`.
    pub fn retransmissions_between(&self, from_ns: i64, to_ns: i64) -> bool {
        self.last_retransmission
            .is_some_and(|t| t.0 >= from_ns && t.0 <= to_ns)
    }

    /// Whether the connection is over: a RST, or a FIN from both sides. Later packets are stragglers.
    pub fn is_finished(&self) -> bool {
        self.sides.iter().any(|s| s.first_rst.is_some())
            || self.sides.iter().all(|s| s.first_fin.is_some())
    }

    /// Whether the connection began inside the capture (its SYN was seen).
    pub fn saw_syn(&self) -> bool {
        self.sides.iter().any(|s| s.syn.is_some())
    }

    /// The client's first SYN of the attempt this connection carries (resent SYNs of the same attempt
    /// on an earlier connection of the 4-tuple included).
    pub fn first_syn(&self) -> Option<FrameRef> {
        self.attempt.first_syn()
    }

    /// The client's first SYN to the SYN-ACK it answered: what `connect()` waited for.
    pub fn connect_ns(&self) -> Option<u64> {
        self.attempt.connect_ns()
    }

    /// The first FIN (or RST) `side` sent.
    pub fn first_close(&self, side: Side, flag: CloseFlag) -> Option<CloseEvent> {
        let s = &self.sides[side.index()];
        match flag {
            CloseFlag::Fin => s.first_fin,
            CloseFlag::Rst => s.first_rst,
        }
    }

    /// The latest acknowledgment number `side` sent.
    pub fn last_ack(&self, side: Side) -> Option<u32> {
        self.sides[side.index()].last_ack
    }

    /// The first packet carrying payload that `side` sent.
    pub fn first_data(&self, side: Side) -> Option<FrameRef> {
        self.sides[side.index()].stats.first_data
    }

    /// Whether a SYN (without ACK) from `side` starts a new connection on this 4-tuple: after a FIN or
    /// RST, or with another ISN than this connection's attempt.
    fn starts_anew(&self, side: Side, seq: u32) -> bool {
        self.closed() || self.attempt.is_other_attempt(side, seq)
    }

    /// Called once per packet, from [`ConnectionTracker::feed`] only: inlined there, and with it into the
    /// engine's per-packet loop (as a call of its own it cost ~30 instructions a packet: saved registers,
    /// arguments, the state reloaded). Each step below is inlined into it for the same reason.
    #[inline(always)]
    fn update(
        &mut self,
        side: Side,
        seg: &TcpSegment<'_>,
        wire_len: u32,
        at: FrameRef,
    ) -> SegmentClass {
        let ConnectionState {
            sides,
            last,
            handshake_ack,
            last_data_side,
            last_retransmission,
            attempt,
            ..
        } = self;
        *last = at;
        let flags = seg.flags;
        let seg_len = seg.payload_len + u32::from(flags.syn()) + u32::from(flags.fin());
        let peer_has_data_unanswered = *last_data_side == Some(side.other());
        // This side's state to update, and the peer's to read: borrowed in place, not the peer's whole
        // state copied per packet (most of it is read only on the rare resends and closes).
        let [lo, hi] = sides;
        let (s, peer) = match side {
            Side::Lo => (lo, &*hi),
            Side::Hi => (hi, &*lo),
        };
        s.count(seg, wire_len, at);
        s.follow_zero_window(seg, at);
        let class = s.classify(side, peer, seg, seg_len, at, *handshake_ack);
        if class == SegmentClass::Retransmission {
            *last_retransmission = Some(at.ts);
        }
        s.advance_next_seq(seg, seg_len, at);
        s.note_ack(seg, at);
        if flags.syn() {
            s.note_syn(seg, at);
        } else if flags.ack() && handshake_ack.is_none() {
            let this_syn = s.syn.is_some();
            let peer_syn_ack = peer.syn_ack.is_some();
            if this_syn && peer_syn_ack {
                *handshake_ack = Some(at);
            }
        }
        if flags.fin() || flags.rst() {
            s.note_close(side, peer, seg, at, peer_has_data_unanswered);
        }
        if seg.payload_len > 0 {
            s.note_data(class, seg, at);
            if class == SegmentClass::New {
                *last_data_side = Some(side);
            }
        }
        attempt.segment(side, seg, at);
        class
    }

    /// Concludes the connection, given who the client is (when known).
    pub fn finish(self, client: Option<(Side, RoleBasis)>) -> Connection {
        let (client_side, basis) = match client {
            Some((s, b)) => (s, Some(b)),
            None => (Side::Lo, None),
        };
        let known = basis.is_some();
        let role_of = |side: Side| match (known, side == client_side) {
            (false, _) => Role::Unknown,
            (true, true) => Role::Client,
            (true, false) => Role::Server,
        };
        let c = &self.sides[client_side.index()];
        let sv = &self.sides[client_side.other().index()];
        let stats = |s: &SideState| DirectionStats {
            ttl: if s.ttl_packets == 0 {
                TtlRange::default()
            } else {
                TtlRange {
                    min: s.ttl_min,
                    max: s.ttl_max,
                    packets: s.ttl_packets,
                }
            },
            ..s.stats
        };
        let first_of = |a: Option<CloseEvent>, b: Option<CloseEvent>| match (a, b) {
            (Some(x), Some(y)) => Some(if y.at.frame < x.at.frame { y } else { x }),
            (x, y) => x.or(y),
        };
        let with_role = |e: Option<CloseEvent>| {
            e.map(|event| ClosedBy {
                event,
                by: role_of(event.side),
            })
        };
        let first_fin = with_role(first_of(c.first_fin, sv.first_fin));
        let first_rst = with_role(first_of(c.first_rst, sv.first_rst));
        let end = match (first_rst, first_fin) {
            (Some(r), _) => ConnectionEnd::Reset(r.by),
            (None, Some(f)) if c.first_fin.is_some() && sv.first_fin.is_some() => {
                ConnectionEnd::Graceful(f.by)
            }
            (None, Some(f)) => ConnectionEnd::HalfClosed(f.by),
            (None, None) => ConnectionEnd::Open,
        };
        Connection {
            client: self.key.endpoint(client_side),
            server: self.key.endpoint(client_side.other()),
            roles_known: known,
            role_basis: basis,
            first: self.first,
            last: self.last,
            handshake_rtt_ns: self.initial_rtt(),
            to_server: stats(c),
            to_client: stats(sv),
            first_fin,
            first_rst,
            end,
            handshake: self.attempt.conclude(),
        }
    }
}

/// The steps of [`ConnectionState::update`] on the side that sent the segment, in the order it takes
/// them; each is inlined into it (it runs for every packet).
impl SideState {
    /// The segment's counts: packets, bytes, and whether the snap length cut it.
    #[inline(always)]
    fn count(&mut self, seg: &TcpSegment<'_>, wire_len: u32, at: FrameRef) {
        self.stats.packets += 1;
        self.stats.payload_bytes += u64::from(seg.payload_len);
        self.stats.wire_bytes += u64::from(wire_len);
        if (seg.payload.len() as u32) < seg.payload_len {
            self.stats.truncated += 1;
        }
        if seg.payload_len > 0 {
            self.stats.first_data.get_or_insert(at);
        }
    }

    /// A zero window advertised begins a spell (unless one is open); a window opened again ends it.
    #[inline(always)]
    fn follow_zero_window(&mut self, seg: &TcpSegment<'_>, at: FrameRef) {
        let flags = seg.flags;
        if seg.window == 0 && flags.0 & (TcpFlags::SYN | TcpFlags::FIN | TcpFlags::RST) == 0 {
            self.stats.zero_windows += 1;
            if self.zero_window.is_none_or(|z| z.until.is_some()) {
                self.zero_window = Some(ZeroWindowSpell {
                    from: at,
                    until: None,
                });
            }
        } else if seg.window != 0 && !flags.rst() {
            if let Some(z) = self.zero_window.as_mut().filter(|z| z.until.is_none()) {
                z.until = Some(at);
            }
        }
    }

    /// How the segment relates to the sequence space this side already sent (counted as out of order
    /// or resent here): `peer` and `handshake_ack` as they were before the segment.
    #[inline(always)]
    fn classify(
        &mut self,
        side: Side,
        peer: &SideState,
        seg: &TcpSegment<'_>,
        seg_len: u32,
        at: FrameRef,
        handshake_ack: Option<FrameRef>,
    ) -> SegmentClass {
        let flags = seg.flags;
        if seg_len == 0 || flags.rst() {
            return SegmentClass::New;
        }
        let Some(next) = self.next_seq.filter(|&n| seq_before(seg.seq, n)) else {
            return SegmentClass::New;
        };
        if seg.payload_len <= 1 && seg.seq == next.wrapping_sub(1) && !flags.syn() && !flags.fin() {
            return SegmentClass::KeepAlive;
        }
        // Wireshark's order: a fast retransmission (the peer repeated its ACK of exactly this sequence
        // at least twice, under 20 ms ago) is a retransmission; else a segment within the initial RTT of
        // the highest one is out of order; else a retransmission.
        let fast = peer.dup_acks >= 2
            && peer.last_ack == Some(seg.seq)
            && at.ts.0 - peer.last_ack_at.0 < 20_000_000;
        let since_highest = at.ts.0 - self.next_seq_at.0;
        // [`ConnectionState::initial_rtt`], from the state as it was before this segment.
        let (lo_syn, hi_syn) = match side {
            Side::Lo => (self.syn, peer.syn),
            Side::Hi => (peer.syn, self.syn),
        };
        let initial_rtt = lo_syn
            .or(hi_syn)
            .and_then(|syn| Some(handshake_ack.as_ref()?.ts.0 - syn.ts.0));
        let reorder_window = initial_rtt.unwrap_or(3_000_000);
        if !fast && since_highest < reorder_window && next != seg.seq.wrapping_add(seg_len) {
            self.stats.out_of_order += 1;
            SegmentClass::OutOfOrder
        } else {
            self.stats.retransmissions += 1;
            SegmentClass::Retransmission
        }
    }

    /// Like Wireshark, every segment (pure ACKs too) advances the next expected sequence number, so a
    /// FIN captured after an ACK that already covers it counts as a retransmission there and here.
    #[inline(always)]
    fn advance_next_seq(&mut self, seg: &TcpSegment<'_>, seg_len: u32, at: FrameRef) {
        if !seg.flags.rst() {
            let end = seg.seq.wrapping_add(seg_len);
            if self.next_seq.is_none_or(|n| seq_before(n, end)) {
                self.next_seq = Some(end);
                self.next_seq_at = at.ts;
            }
        }
    }

    /// The acknowledgment and window this side sent. A duplicate ACK: no data, same ACK and window as
    /// before, nothing new in sequence space.
    #[inline(always)]
    fn note_ack(&mut self, seg: &TcpSegment<'_>, at: FrameRef) {
        let flags = seg.flags;
        if flags.ack() {
            let dup = seg.payload_len == 0
                && flags.0 & (TcpFlags::SYN | TcpFlags::FIN | TcpFlags::RST) == 0
                && seg.window != 0
                && seg.window == self.last_window
                && self.last_ack == Some(seg.ack)
                && self.next_seq == Some(seg.seq);
            if dup {
                self.dup_acks += 1;
            } else if self.last_ack != Some(seg.ack) {
                self.dup_acks = 0;
            }
            self.last_ack_at = at.ts;
        }
        self.last_window = seg.window;
        if flags.ack() {
            self.last_ack = Some(seg.ack);
        }
    }

    /// A SYN or SYN-ACK of this side: the first of each is kept, with the TTL of the first.
    #[inline(always)]
    fn note_syn(&mut self, seg: &TcpSegment<'_>, at: FrameRef) {
        self.stats.syn_ttl.get_or_insert(seg.ttl);
        let slot = if seg.flags.ack() {
            &mut self.syn_ack
        } else {
            &mut self.syn
        };
        slot.get_or_insert(at);
    }

    /// A FIN or RST of this side: the first of each is kept, with what the peer had left unanswered.
    #[inline(always)]
    fn note_close(
        &mut self,
        side: Side,
        peer: &SideState,
        seg: &TcpSegment<'_>,
        at: FrameRef,
        peer_awaiting_reply: bool,
    ) {
        let flags = seg.flags;
        let unacked = match (
            peer.next_seq,
            flags.ack().then_some(seg.ack).or(self.last_ack),
        ) {
            (Some(n), Some(a)) if seq_before(a, n) => u64::from(n.wrapping_sub(a)),
            _ => 0,
        };
        let event = CloseEvent {
            at,
            flag: if flags.rst() {
                CloseFlag::Rst
            } else {
                CloseFlag::Fin
            },
            side,
            peer_unacked_bytes: unacked,
            peer_awaiting_reply,
            peer_zero_window: peer.zero_window,
            resent_in_a_row: self.resent_in_a_row,
            peer_last_data: peer.last_data,
            last_data: self.last_new_data,
            ttl: seg.ttl,
        };
        let slot = if flags.rst() {
            &mut self.first_rst
        } else {
            &mut self.first_fin
        };
        slot.get_or_insert(event);
    }

    /// A segment carrying payload, of class `class`: the resends in a row, the last data, and the
    /// host's TTL.
    #[inline(always)]
    fn note_data(&mut self, class: SegmentClass, seg: &TcpSegment<'_>, at: FrameRef) {
        match class {
            SegmentClass::New => {
                self.resent_in_a_row = 0;
                self.resent_until = None;
                self.last_data = Some(at);
                self.last_new_data = Some(at);
                // The host's TTL, learned from the new data it sent (what a device on the path that
                // forges a FIN or RST does not send), from its first few segments: one host on one
                // path gives them one TTL, and the rest of a long connection says no more.
                if self.ttl_packets < TTL_SAMPLES {
                    self.ttl_min = self.ttl_min.min(seg.ttl);
                    self.ttl_max = self.ttl_max.max(seg.ttl);
                    self.ttl_packets += 1;
                }
            }
            SegmentClass::Retransmission => {
                if self.resent_until != Some(seg.seq) {
                    self.resent_in_a_row += 1;
                }
                self.resent_until = Some(seg.seq.wrapping_add(seg.payload_len));
                self.last_data = Some(at);
            }
            // A keep-alive probe carries no data the application sent.
            SegmentClass::OutOfOrder => self.last_data = Some(at),
            SegmentClass::KeepAlive => {}
        }
    }
}

impl ZeroWindowSpell {
    fn pack(&self, p: &mut Packer<'_>) {
        p.frame(self.from);
        p.opt_frame(self.until);
    }

    fn unpack(u: &mut Unpacker<'_>, until: bool) -> ZeroWindowSpell {
        ZeroWindowSpell {
            from: u.frame(),
            until: u.opt_frame(until),
        }
    }
}

impl CloseEvent {
    fn pack(&self, p: &mut Packer<'_>) {
        p.bits(
            bit(0, self.flag == CloseFlag::Rst)
                | bit(1, self.side == Side::Hi)
                | bit(2, self.peer_awaiting_reply)
                | bit(3, self.peer_zero_window.is_some())
                | bit(4, self.peer_zero_window.is_some_and(|z| z.until.is_some()))
                | bit(5, self.peer_last_data.is_some())
                | bit(6, self.last_data.is_some()),
        );
        p.frame(self.at);
        p.u64(self.peer_unacked_bytes);
        if let Some(z) = &self.peer_zero_window {
            z.pack(p);
        }
        p.u32(self.resent_in_a_row);
        p.opt_frame(self.peer_last_data);
        p.opt_frame(self.last_data);
        p.u32(u32::from(self.ttl));
    }

    fn unpack(u: &mut Unpacker<'_>) -> CloseEvent {
        let b = u.bits();
        CloseEvent {
            flag: if has(b, 0) {
                CloseFlag::Rst
            } else {
                CloseFlag::Fin
            },
            side: if has(b, 1) { Side::Hi } else { Side::Lo },
            peer_awaiting_reply: has(b, 2),
            at: u.frame(),
            peer_unacked_bytes: u.u64(),
            peer_zero_window: has(b, 3).then(|| ZeroWindowSpell::unpack(u, has(b, 4))),
            resent_in_a_row: u.u32(),
            peer_last_data: u.opt_frame(has(b, 5)),
            last_data: u.opt_frame(has(b, 6)),
            ttl: u.u32() as u8,
        }
    }
}

impl SideState {
    fn pack(&self, p: &mut Packer<'_>) {
        let st = &self.stats;
        p.bits(
            bit(0, self.next_seq.is_some())
                | bit(1, self.next_seq_at != Timestamp::default())
                | bit(2, self.last_ack.is_some())
                | bit(3, self.last_ack_at != Timestamp::default())
                | bit(4, st.first_data.is_some())
                | bit(5, self.first_fin.is_some())
                | bit(6, self.first_rst.is_some())
                | bit(7, self.syn.is_some())
                | bit(8, self.syn_ack.is_some())
                | bit(9, self.zero_window.is_some())
                | bit(10, self.zero_window.is_some_and(|z| z.until.is_some()))
                | bit(11, self.resent_until.is_some())
                | bit(12, self.last_data.is_some())
                | bit(13, st.ttl != TtlRange::default())
                | bit(14, st.syn_ttl.is_some())
                | bit(15, self.last_new_data.is_some())
                | bit(
                    16,
                    self.ttl_packets != 0 || (self.ttl_min, self.ttl_max) != (u8::MAX, 0),
                ),
        );
        if let Some(n) = self.next_seq {
            p.u32(n);
        }
        if self.next_seq_at != Timestamp::default() {
            p.ts(self.next_seq_at);
        }
        if let Some(a) = self.last_ack {
            p.u32(a);
        }
        if self.last_ack_at != Timestamp::default() {
            p.ts(self.last_ack_at);
        }
        p.u32(u32::from(self.last_window));
        p.u32(self.dup_acks);
        for n in [
            st.packets,
            st.payload_bytes,
            st.wire_bytes,
            st.retransmissions,
            st.out_of_order,
            st.zero_windows,
            st.truncated,
        ] {
            p.u64(n);
        }
        p.opt_frame(st.first_data);
        for e in [&self.first_fin, &self.first_rst].into_iter().flatten() {
            e.pack(p);
        }
        p.opt_frame(self.syn);
        p.opt_frame(self.syn_ack);
        if let Some(z) = &self.zero_window {
            z.pack(p);
        }
        p.u32(self.resent_in_a_row);
        if let Some(r) = self.resent_until {
            p.u32(r);
        }
        p.opt_frame(self.last_data);
        if st.ttl != TtlRange::default() {
            p.u32(u32::from(st.ttl.min));
            p.u32(u32::from(st.ttl.max));
            p.u64(st.ttl.packets);
        }
        if let Some(t) = st.syn_ttl {
            p.u32(u32::from(t));
        }
        p.opt_frame(self.last_new_data);
        if self.ttl_packets != 0 || (self.ttl_min, self.ttl_max) != (u8::MAX, 0) {
            p.u32(u32::from(self.ttl_min));
            p.u32(u32::from(self.ttl_max));
            p.u64(self.ttl_packets);
        }
    }

    fn unpack(u: &mut Unpacker<'_>) -> SideState {
        let b = u.bits();
        let next_seq = has(b, 0).then(|| u.u32());
        let next_seq_at = if has(b, 1) {
            u.ts()
        } else {
            Timestamp::default()
        };
        let last_ack = has(b, 2).then(|| u.u32());
        let last_ack_at = if has(b, 3) {
            u.ts()
        } else {
            Timestamp::default()
        };
        let last_window = u.u32() as u16;
        let dup_acks = u.u32();
        let stats = DirectionStats {
            packets: u.u64(),
            payload_bytes: u.u64(),
            wire_bytes: u.u64(),
            retransmissions: u.u64(),
            out_of_order: u.u64(),
            zero_windows: u.u64(),
            truncated: u.u64(),
            first_data: u.opt_frame(has(b, 4)),
            ttl: TtlRange::default(),
            syn_ttl: None,
        };
        let mut side = SideState {
            next_seq,
            next_seq_at,
            last_ack,
            last_ack_at,
            last_window,
            dup_acks,
            stats,
            first_fin: has(b, 5).then(|| CloseEvent::unpack(u)),
            first_rst: has(b, 6).then(|| CloseEvent::unpack(u)),
            syn: u.opt_frame(has(b, 7)),
            syn_ack: u.opt_frame(has(b, 8)),
            zero_window: has(b, 9).then(|| ZeroWindowSpell::unpack(u, has(b, 10))),
            resent_in_a_row: u.u32(),
            resent_until: has(b, 11).then(|| u.u32()),
            last_data: u.opt_frame(has(b, 12)),
            last_new_data: None,
            ttl_min: u8::MAX,
            ttl_max: 0,
            ttl_packets: 0,
        };
        if has(b, 13) {
            side.stats.ttl = TtlRange {
                min: u.u32() as u8,
                max: u.u32() as u8,
                packets: u.u64(),
            };
        }
        side.stats.syn_ttl = has(b, 14).then(|| u.u32() as u8);
        side.last_new_data = u.opt_frame(has(b, 15));
        if has(b, 16) {
            side.ttl_min = u.u32() as u8;
            side.ttl_max = u.u32() as u8;
            side.ttl_packets = u.u64();
        }
        side
    }
}

impl ConnectionState {
    /// Appends the state to `out` in few bytes: its key and first packet, then every other field (see
    /// [`crate::packing`]).
    pub(crate) fn pack(&self, out: &mut Vec<u8>) {
        let mut p = Packer::new(out, self.first);
        p.key(&self.key);
        p.u64(self.first.frame);
        p.i64(self.first.ts.0);
        p.bits(
            bit(0, self.handshake_ack.is_some())
                | bit(1, self.last_data_side.is_some())
                | bit(2, self.last_data_side == Some(Side::Hi))
                | bit(3, self.last_retransmission.is_some()),
        );
        p.frame(self.last);
        p.opt_frame(self.handshake_ack);
        if let Some(t) = self.last_retransmission {
            p.ts(t);
        }
        for s in &self.sides {
            s.pack(&mut p);
        }
        self.attempt.pack(&mut p);
    }

    /// The state [`ConnectionState::pack`] wrote.
    pub(crate) fn unpack(bytes: &[u8]) -> ConnectionState {
        let mut u = Unpacker::new(bytes);
        let key = u.key();
        let first = FrameRef {
            frame: u.u64(),
            ts: Timestamp(u.i64()),
        };
        u.set_base(first);
        let b = u.bits();
        let last = u.frame();
        let handshake_ack = u.opt_frame(has(b, 0));
        let last_retransmission = has(b, 3).then(|| u.ts());
        let sides = [SideState::unpack(&mut u), SideState::unpack(&mut u)];
        ConnectionState {
            key,
            sides,
            first,
            last,
            handshake_ack,
            last_data_side: has(b, 1).then_some(if has(b, 2) { Side::Hi } else { Side::Lo }),
            last_retransmission,
            attempt: AttemptState::unpack(&mut u),
        }
    }
}

/// Follows one 4-tuple: the current connection, and those it replaced (port reuse).
#[derive(Debug, Clone)]
pub struct ConnectionTracker {
    current: ConnectionState,
}

/// What feeding a segment produced.
pub struct Fed {
    /// How the segment relates to the sequence space already seen in its direction.
    pub class: SegmentClass,
    /// The previous connection on this 4-tuple, ended because this segment is a new SYN (boxed: rare, and
    /// large to move on every packet).
    pub replaced: Option<Box<ConnectionState>>,
}

impl ConnectionTracker {
    /// Starts following the 4-tuple `key` with its first packet, `at`.
    pub fn new(key: FlowKey, at: FrameRef) -> Self {
        ConnectionTracker {
            current: ConnectionState::new(key, at),
        }
    }

    /// Feeds one segment sent by `side` (in capture order). Inlined into the engine's per-packet loop,
    /// its one caller there: the call, its saved registers and the segment's fields passed through
    /// memory cost ~20 instructions a packet.
    #[inline(always)]
    pub fn feed(&mut self, side: Side, seg: &TcpSegment<'_>, wire_len: u32, at: FrameRef) -> Fed {
        let mut replaced = None;
        if seg.flags.syn() && !seg.flags.ack() && self.current.starts_anew(side, seg.seq) {
            replaced = Some(self.replace(side, seg, at));
        }
        let class = self.current.update(side, seg, wire_len, at);
        Fed { class, replaced }
    }

    /// A SYN starts a new connection on the 4-tuple: the current one is handed back. Rare, and kept out
    /// of [`ConnectionTracker::feed`]'s per-packet code.
    #[cold]
    #[inline(never)]
    fn replace(&mut self, side: Side, seg: &TcpSegment<'_>, at: FrameRef) -> Box<ConnectionState> {
        let mut next = ConnectionState::new(self.current.key, at);
        next.attempt = self.current.attempt.resumed(side, seg.seq, at);
        if self.current.attempt.resumed_by() == Some(at) {
            // The same SYN again: it resends the attempt's sequence space, a retransmission (as in
            // tshark's stream, which only a new ISN ends).
            let (from, to) = (
                &self.current.sides[side.index()],
                &mut next.sides[side.index()],
            );
            to.next_seq = from.next_seq;
            to.next_seq_at = from.next_seq_at;
        }
        Box::new(std::mem::replace(&mut self.current, next))
    }

    /// Follows the 4-tuple on from `current`, its connection as tracking left it (e.g. unpacked:
    /// [`ConnectionState::packed`]).
    pub fn resume(current: ConnectionState) -> Self {
        ConnectionTracker { current }
    }

    /// The connection the 4-tuple carries now (the last one started).
    pub fn current(&self) -> &ConnectionState {
        &self.current
    }

    /// Ends tracking, handing over the current connection (to [`ConnectionState::finish`] it).
    pub fn into_current(self) -> ConnectionState {
        self.current
    }
}

/// Decides the server side of a connection without a usable handshake, from ports: a port below 1024
/// listens; otherwise the side outside the ephemeral range (32768 and up, and Windows' 49152 and up)
/// listens; otherwise the lower port.
pub fn server_side_by_port(key: &FlowKey) -> Side {
    let (lo, hi) = (key.lo.port, key.hi.port);
    let well_known = |p: u16| p < 1024;
    let ephemeral = |p: u16| p >= 32768;
    if well_known(lo) != well_known(hi) {
        return if well_known(lo) { Side::Lo } else { Side::Hi };
    }
    if ephemeral(lo) != ephemeral(hi) {
        return if ephemeral(lo) { Side::Hi } else { Side::Lo };
    }
    if lo <= hi {
        Side::Lo
    } else {
        Side::Hi
    }
}

#[cfg(test)]
mod tests {
    //! How a segment relates to what its side sent before (`SegmentClass`), as Wireshark's TCP analysis
    //! tells it: new data, a resend, a keep-alive probe, a segment that overtook another.
    use super::*;
    use crate::handshake::SynOptions;
    use std::net::{IpAddr, Ipv4Addr};

    const CLIENT: Endpoint = Endpoint {
        ip: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)),
        port: 50000,
    };
    const SERVER: Endpoint = Endpoint {
        ip: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
        port: 3306,
    };

    /// A connection between CLIENT and SERVER, and the side each is on.
    struct Conn {
        tracker: ConnectionTracker,
        client: Side,
        frame: u64,
    }

    impl Conn {
        fn new() -> Conn {
            let (key, client) = FlowKey::of(CLIENT, SERVER);
            Conn {
                tracker: ConnectionTracker::new(
                    key,
                    FrameRef {
                        frame: 1,
                        ts: Timestamp(0),
                    },
                ),
                client,
                frame: 0,
            }
        }

        /// A segment from the client (`to_server`) or the server at `ms` milliseconds.
        fn send(
            &mut self,
            to_server: bool,
            ms: i64,
            flags: u8,
            seq: u32,
            ack: u32,
            payload: &[u8],
        ) -> SegmentClass {
            let (side, src, dst) = if to_server {
                (self.client, CLIENT, SERVER)
            } else {
                (self.client.other(), SERVER, CLIENT)
            };
            self.frame += 1;
            let seg = TcpSegment {
                src: src.ip,
                src_port: src.port,
                dst: dst.ip,
                dst_port: dst.port,
                seq,
                ack,
                window: 64240,
                flags: TcpFlags(flags),
                options: &[],
                payload,
                payload_len: payload.len() as u32,
                ttl: 64,
            };
            let at = FrameRef {
                frame: self.frame,
                ts: Timestamp(ms * 1_000_000),
            };
            self.tracker.feed(side, &seg, 66, at).class
        }

        /// SYN, SYN-ACK, ACK at 0, 10 and 20 ms: an initial round trip of 20 ms. Client ISN 1000,
        /// server ISN 5000.
        fn handshake(&mut self) {
            const SYN: u8 = TcpFlags::SYN;
            const ACK: u8 = TcpFlags::ACK;
            self.send(true, 0, SYN, 1000, 0, &[]);
            self.send(false, 10, SYN | ACK, 5000, 1001, &[]);
            self.send(true, 20, ACK, 1001, 5001, &[]);
        }
    }

    const ACK: u8 = TcpFlags::ACK;
    const PSH_ACK: u8 = TcpFlags::PSH | TcpFlags::ACK;

    #[test]
    fn data_in_order_and_pure_acks_are_new() {
        let mut c = Conn::new();
        c.handshake();
        assert_eq!(
            c.send(true, 30, PSH_ACK, 1001, 5001, b"query"),
            SegmentClass::New
        );
        assert_eq!(c.send(false, 31, ACK, 5001, 1006, &[]), SegmentClass::New);
        assert_eq!(
            c.send(false, 32, PSH_ACK, 5001, 1006, b"rows"),
            SegmentClass::New
        );
        let state = c.tracker.current();
        assert_eq!(state.sides[c.client.index()].stats.retransmissions, 0);
    }

    #[test]
    fn the_same_data_again_after_the_round_trip_is_a_retransmission() {
        let mut c = Conn::new();
        c.handshake();
        c.send(true, 30, PSH_ACK, 1001, 5001, b"query");
        // 200 ms later, well past the initial round trip: a timeout's resend.
        assert_eq!(
            c.send(true, 230, PSH_ACK, 1001, 5001, b"query"),
            SegmentClass::Retransmission
        );
        let state = c.tracker.current();
        assert_eq!(state.sides[c.client.index()].stats.retransmissions, 1);
        assert!(state.retransmissions_between(229_000_000, 231_000_000));
    }

    #[test]
    fn a_segment_behind_the_highest_within_the_round_trip_is_out_of_order() {
        let mut c = Conn::new();
        c.handshake();
        // 1001..1006 was overtaken by 1006..1011, then arrives 1 ms later (under the 20 ms round trip).
        assert_eq!(
            c.send(true, 30, PSH_ACK, 1006, 5001, b"later"),
            SegmentClass::New
        );
        assert_eq!(
            c.send(true, 31, PSH_ACK, 1001, 5001, b"first"),
            SegmentClass::OutOfOrder
        );
        let state = c.tracker.current();
        assert_eq!(state.sides[c.client.index()].stats.out_of_order, 1);
        assert_eq!(state.sides[c.client.index()].stats.retransmissions, 0);
    }

    #[test]
    fn a_resend_the_peer_asked_for_with_duplicate_acks_is_a_retransmission_however_soon() {
        let mut c = Conn::new();
        c.handshake();
        c.send(false, 30, PSH_ACK, 5001, 1001, b"aaaa");
        c.send(false, 30, PSH_ACK, 5005, 1001, b"bbbb");
        // The client lost 5001..5005: it keeps acknowledging 5001 (the first ACK, then two duplicates).
        c.send(true, 31, ACK, 1001, 5001, &[]);
        c.send(true, 31, ACK, 1001, 5001, &[]);
        c.send(true, 31, ACK, 1001, 5001, &[]);
        // Resent 2 ms later, within the round trip: a fast retransmission, not reordering.
        assert_eq!(
            c.send(false, 32, PSH_ACK, 5001, 1001, b"aaaa"),
            SegmentClass::Retransmission
        );
    }

    #[test]
    fn one_byte_before_the_next_sequence_number_is_a_keep_alive() {
        let mut c = Conn::new();
        c.handshake();
        c.send(true, 30, PSH_ACK, 1001, 5001, b"query");
        // Linux's keep-alive: one garbage byte (or none) at snd.nxt - 1, long after.
        assert_eq!(
            c.send(true, 7_230_000, ACK, 1005, 5001, b"\0"),
            SegmentClass::KeepAlive
        );
        assert_eq!(
            c.send(true, 7_260_000, ACK, 1005, 5001, &[]),
            SegmentClass::New,
            "an empty probe takes no sequence space: nothing to resend"
        );
    }

    #[test]
    fn a_reset_is_never_a_retransmission() {
        let mut c = Conn::new();
        c.handshake();
        c.send(true, 30, PSH_ACK, 1001, 5001, b"query");
        assert_eq!(
            c.send(true, 500, TcpFlags::RST | ACK, 1001, 5001, &[]),
            SegmentClass::New
        );
    }

    /// A deterministic stream of random numbers (xorshift64*), for the packing tests.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }

        /// Small values mostly, any value sometimes: both ends of every varint length.
        fn value(&mut self) -> u64 {
            match self.next() % 4 {
                0 => 0,
                1 => self.next() % 200,
                2 => self.next() % 100_000,
                _ => self.next(),
            }
        }

        fn some(&mut self) -> bool {
            self.next() % 2 == 0
        }

        fn frame(&mut self, base: FrameRef) -> FrameRef {
            match self.next() % 3 {
                0 => FrameRef {
                    frame: self.next(),
                    ts: Timestamp(self.next() as i64),
                },
                _ => FrameRef {
                    frame: base.frame.wrapping_add(self.value()),
                    ts: Timestamp(base.ts.0.wrapping_add(self.value() as i64)),
                },
            }
        }

        fn opt_frame(&mut self, base: FrameRef) -> Option<FrameRef> {
            self.some().then(|| self.frame(base))
        }

        fn side(&mut self) -> Side {
            if self.some() {
                Side::Hi
            } else {
                Side::Lo
            }
        }

        fn endpoint(&mut self) -> Endpoint {
            let ip = if self.some() {
                IpAddr::V4(Ipv4Addr::from(self.next() as u32))
            } else {
                IpAddr::from(
                    (u128::from(self.next()) << 64 | u128::from(self.next())).to_be_bytes(),
                )
            };
            Endpoint {
                ip,
                port: self.next() as u16,
            }
        }

        fn spell(&mut self, base: FrameRef) -> Option<ZeroWindowSpell> {
            self.some().then(|| ZeroWindowSpell {
                from: self.frame(base),
                until: self.opt_frame(base),
            })
        }

        fn close(&mut self, base: FrameRef) -> Option<CloseEvent> {
            self.some().then(|| CloseEvent {
                at: self.frame(base),
                flag: if self.some() {
                    CloseFlag::Rst
                } else {
                    CloseFlag::Fin
                },
                side: self.side(),
                peer_unacked_bytes: self.value(),
                peer_awaiting_reply: self.some(),
                peer_zero_window: self.spell(base),
                resent_in_a_row: self.value() as u32,
                peer_last_data: self.opt_frame(base),
                last_data: self.opt_frame(base),
                ttl: self.next() as u8,
            })
        }

        fn side_state(&mut self, base: FrameRef) -> SideState {
            let t = Timestamp(0);
            SideState {
                next_seq: self.some().then(|| self.next() as u32),
                next_seq_at: if self.some() { self.frame(base).ts } else { t },
                last_ack: self.some().then(|| self.next() as u32),
                last_ack_at: if self.some() { self.frame(base).ts } else { t },
                last_window: self.next() as u16,
                dup_acks: self.value() as u32,
                stats: DirectionStats {
                    packets: self.value(),
                    payload_bytes: self.value(),
                    wire_bytes: self.value(),
                    retransmissions: self.value(),
                    out_of_order: self.value(),
                    zero_windows: self.value(),
                    truncated: self.value(),
                    first_data: self.opt_frame(base),
                    ttl: if self.some() {
                        TtlRange {
                            min: self.next() as u8,
                            max: self.next() as u8,
                            packets: self.value(),
                        }
                    } else {
                        TtlRange::default()
                    },
                    syn_ttl: self.some().then(|| self.next() as u8),
                },
                first_fin: self.close(base),
                first_rst: self.close(base),
                syn: self.opt_frame(base),
                syn_ack: self.opt_frame(base),
                zero_window: self.spell(base),
                resent_in_a_row: self.value() as u32,
                resent_until: self.some().then(|| self.next() as u32),
                last_data: self.opt_frame(base),
                last_new_data: self.opt_frame(base),
                ttl_min: if self.some() {
                    self.next() as u8
                } else {
                    u8::MAX
                },
                ttl_max: if self.some() { self.next() as u8 } else { 0 },
                ttl_packets: if self.some() { self.value() } else { 0 },
            }
        }

        fn options(&mut self) -> SynOptions {
            SynOptions {
                mss: self.some().then(|| self.next() as u16),
                window_scale: self.some().then(|| self.next() as u8),
                sack_permitted: self.some(),
                timestamp: self.some().then(|| self.next() as u32),
            }
        }

        fn state(&mut self) -> ConnectionState {
            let first = FrameRef {
                frame: self.value(),
                ts: Timestamp(if self.some() {
                    1_700_000_000_000_000_000i64.wrapping_add(self.value() as i64)
                } else {
                    self.next() as i64
                }),
            };
            let (key, _) = FlowKey::of(self.endpoint(), self.endpoint());
            let mut attempt = AttemptState::default();
            if self.some() {
                attempt.opener = self.some().then(|| (self.side(), self.next() as u32));
                attempt.first_syn = self.opt_frame(first);
                attempt.syns = self.value() as u32;
                attempt.retransmitted_syn = self.opt_frame(first);
                attempt.syn_options = self.some().then(|| self.options());
                attempt.synacks = self.value() as u32;
                attempt.synack = self
                    .some()
                    .then(|| (self.frame(first), self.value() as u32, self.options()));
                attempt.settled = self.some();
                attempt.refused = self.opt_frame(first);
                attempt.ack_to_syn = self.opt_frame(first);
                attempt.resumed_by = self.opt_frame(first);
            }
            ConnectionState {
                key,
                sides: [self.side_state(first), self.side_state(first)],
                first,
                last: self.frame(first),
                handshake_ack: self.opt_frame(first),
                last_data_side: self.some().then(|| self.side()),
                last_retransmission: self.some().then(|| self.frame(first).ts),
                attempt,
            }
        }
    }

    /// Packing loses nothing: every field of states with any mix of options, values of every size
    /// (frames and times far from the first packet's too, before it, at the ends of their ranges),
    /// comes back equal, and every byte written is read.
    #[test]
    fn a_packed_state_unpacks_equal_in_every_field() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for _ in 0..20_000 {
            let state = rng.state();
            let mut bytes = Vec::new();
            state.pack(&mut bytes);
            assert_eq!(ConnectionState::unpack(&bytes), state);
            assert_eq!(state.packed().unpack(), state);
            assert_eq!(state.packed().key(), state.key);
            let mut u = crate::packing::Unpacker::new(&bytes);
            let _ = u.key();
            assert!(!u.at_end());
        }
    }

    /// The states tracking goes through, packed after every segment, come back equal; and an attempt
    /// seen from its SYN packs small.
    #[test]
    fn states_met_while_tracking_unpack_equal() {
        let mut rng = Rng(7);
        for _ in 0..300 {
            let mut c = Conn::new();
            for i in 0..40 {
                let flags = [
                    TcpFlags::SYN,
                    TcpFlags::SYN | ACK,
                    ACK,
                    PSH_ACK,
                    TcpFlags::FIN | ACK,
                    TcpFlags::RST,
                ][(rng.next() % 6) as usize];
                let payload: &[u8] = if rng.some() { b"data" } else { &[] };
                c.send(
                    rng.some(),
                    i * (rng.next() % 300) as i64,
                    flags,
                    1000 + (rng.next() % 3) as u32 * 4,
                    5000 + (rng.next() % 3) as u32 * 4,
                    payload,
                );
                let state = c.tracker.current();
                assert_eq!(&state.packed().unpack(), state);
            }
        }
        let mut c = Conn::new();
        c.send(true, 0, TcpFlags::SYN, 1000, 0, &[]);
        let packed = c.tracker.current().packed();
        assert!(packed.len() <= 64, "{} bytes", packed.len());
    }
}
