//! The path over time, from TCP's own timing at the capture point: round trips from data to the ACK that
//! first covers it, duplicate ACKs, zero-window time, and retransmissions by what made the sender resend.
//!
//! **Round trips.** A segment of new data seen at the capture point, then the first segment from the other
//! side whose ACK covers its last byte: the time between them is the round trip from the capture point to
//! the receiver and back (Wireshark's `tcp.analysis.ack_rtt`). It is named by the receiver: `to_server`
//! is client data acknowledged by the server, `to_client` server data acknowledged by the client. At a
//! client-side capture `to_server` crosses the path and `to_client` is the client's own ACK delay; at a
//! server-side capture it is the other way round. An ACK that rides on data (a response, the next
//! request) comes when the application answers, so it adds the server's response time or the client's
//! think time: the interval's minimum is the closest to the bare path, its median what the application's
//! exchanges saw. Segments resent before their ACK give no sample (Karn's algorithm: the ACK cannot say
//! which copy it answers).
//!
//! **Retransmissions**, as the flow tracker finds them (`c2s_retrans`, `s2c_retrans`), each by what
//! preceded it: a **fast retransmit** resends the byte the peer has acknowledged at least three times (two
//! duplicate ACKs, Wireshark's `tcp.analysis.fast_retransmission`); a resend after a silence of the whole
//! connection of at least the retransmission timeout is an **RTO**; a resend of the last segment sent
//! after at least two round trips of silence, the first of its episode (no resend since the sender's last
//! new data or ACKed progress), is a **tail loss probe** (RFC 8985), even at the timeout: with one segment
//! in flight the probe timeout adds the worst-case delayed ACK (200 ms) and Linux caps it at the
//! retransmission timeout, so probe and timeout would fire together, and the probe goes first; a second
//! resend in the same episode is the timeout's; the rest
//! (SACK- or RACK-driven recovery, resends inside a burst) are **other**. A retransmission the receiver
//! reports as received twice (a D-SACK, RFC 2883: a SACK block below its cumulative ACK) was
//! **spurious**.
//!
//! Memory per connection is bounded: each direction keeps at most [`OUTSTANDING_KEPT`] segments awaiting
//! their ACK (the oldest are forgotten first: their ACKs then give no sample, and a later ACK never takes a
//! forgotten segment's time).

use std::collections::VecDeque;

use pcapsleuth_flow::{SegmentClass, Side, TcpFlags, TcpSegment};

use crate::histogram::{CoarseHistogram, RtSummary};
use crate::thresholds::{
    OUTSTANDING_KEPT, RTO_MIN_NS, RTO_SILENCE_SHARE, TLP_MIN_NS, TLP_SILENCE_ROUND_TRIPS,
};

/// Sequence-space comparison (RFC 1982 serial arithmetic): `a` before `b`.
fn seq_before(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

/// A segment of new data awaiting its ACK.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Sent {
    /// Its last byte's sequence number plus one.
    end: u32,
    /// When it passed the capture point.
    at_ns: i64,
    /// Whether (part of) it was resent before its ACK came.
    resent: bool,
}

/// One side of a connection: as a sender of data and as the receiver that acknowledges the other's.
#[derive(Debug, Clone, Default)]
struct Endpoint {
    /// Its segments of new data awaiting their ACK, oldest first (at most [`OUTSTANDING_KEPT`]).
    outstanding: VecDeque<Sent>,
    /// The highest sequence number it sent plus the segment's length (pure ACKs included, as the flow
    /// tracker counts them): a duplicate ACK carries exactly this.
    next_seq: Option<u32>,
    /// Its smoothed round trip and variation (RFC 6298), from its own data's samples, ns.
    srtt_ns: Option<i64>,
    rttvar_ns: i64,
    /// Its latest ACK number and window, and how many duplicate ACKs in a row repeated them.
    last_ack: Option<u32>,
    last_window: u16,
    dup_acks: u32,
    last_ack_at_ns: i64,
    /// Since when it has advertised a zero window, while it does.
    zero_since_ns: Option<i64>,
    /// It resent data since it last sent new data or had data acknowledged: a probe, if one was due,
    /// went already.
    resent_in_episode: bool,
}

/// What made a sender resend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResendKind {
    /// The peer acknowledged the byte three times (two duplicate ACKs) just before.
    FastRetransmit,
    /// The connection had been silent for at least the retransmission timeout.
    Timeout,
    /// The last segment sent, resent after two round trips of silence, the first resend since the
    /// sender's last progress (RFC 8985's probe, which Linux sends even at the timeout).
    TailLossProbe,
    /// None of those: recovery driven by SACK or RACK, or resends inside a burst.
    Other,
}

/// What one segment told about the path, for the interval it falls in. Sides are the flow key's.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PathEvents {
    /// A round trip: data that `side.other()` sent, acknowledged by `side` (so the round trip to `side`),
    /// ns.
    pub rtt: Option<(Side, u64)>,
    /// The segment was a duplicate ACK sent by its side.
    pub dup_ack: bool,
    /// The segment was a retransmission, and what made its side resend.
    pub resend: Option<ResendKind>,
    /// The segment's D-SACK says the other side's resend was spurious.
    pub spurious: bool,
    /// A zero-window spell of the segment's side ended with this segment: from when, ns.
    pub zero_window_ended: Option<i64>,
}

/// A connection's path state: both endpoints.
#[derive(Debug, Clone, Default)]
pub struct PathConnection {
    sides: [Endpoint; 2],
    /// When the connection's previous segment (either way) passed the capture point.
    last_segment_ns: Option<i64>,
}

impl PathConnection {
    /// Follows one segment from `side`, given how the flow tracker classed it and the connection's
    /// handshake round trip (the first estimate of the round trip before data gives one).
    pub fn segment(
        &mut self,
        side: Side,
        seg: &TcpSegment<'_>,
        class: SegmentClass,
        at_ns: i64,
        handshake_rtt_ns: Option<i64>,
    ) -> PathEvents {
        let mut ev = PathEvents::default();
        let silence_ns = self.last_segment_ns.map_or(0, |t| at_ns - t);
        self.last_segment_ns = Some(at_ns);
        let flags = seg.flags;
        let control = flags.0 & (TcpFlags::SYN | TcpFlags::FIN | TcpFlags::RST) != 0;
        let [lo, hi] = &mut self.sides;
        let (me, peer) = match side {
            Side::Lo => (lo, hi),
            Side::Hi => (hi, lo),
        };

        // The window this side advertises: a zero-window spell begins or ends.
        if seg.window == 0 && !control {
            me.zero_since_ns.get_or_insert(at_ns);
        } else if seg.window != 0 && !flags.rst() {
            ev.zero_window_ended = me.zero_since_ns.take();
        }

        // Its resends, classed by what preceded them (before its ACK below changes the peer's view).
        if class == SegmentClass::Retransmission && seg.payload_len > 0 {
            let seg_end = seg.seq.wrapping_add(seg.payload_len);
            for s in me.outstanding.iter_mut() {
                if seq_before(seg.seq, s.end) {
                    s.resent = true;
                    if !seq_before(s.end, seg_end) {
                        break;
                    }
                }
            }
            let rto_ns = me
                .srtt_ns
                .or(handshake_rtt_ns)
                .map_or(RTO_MIN_NS, |srtt| (srtt + 4 * me.rttvar_ns).max(RTO_MIN_NS));
            let is_last = me.next_seq == Some(seg_end);
            let srtt = me.srtt_ns.or(handshake_rtt_ns);
            ev.resend = Some(
                if peer.dup_acks >= 2
                    && peer.last_ack == Some(seg.seq)
                    && at_ns - peer.last_ack_at_ns < 20_000_000
                {
                    ResendKind::FastRetransmit
                } else if is_last
                    && !me.resent_in_episode
                    && srtt.is_some_and(|r| {
                        silence_ns as f64 >= TLP_SILENCE_ROUND_TRIPS * r as f64
                            && silence_ns >= TLP_MIN_NS
                    })
                {
                    ResendKind::TailLossProbe
                } else if silence_ns as f64 >= RTO_SILENCE_SHARE * rto_ns as f64 {
                    ResendKind::Timeout
                } else {
                    ResendKind::Other
                },
            );
            me.resent_in_episode = true;
        }

        // Its ACK of the peer's data: a round trip, a duplicate, a D-SACK.
        if flags.ack() {
            let ack = seg.ack;
            let dup = seg.payload_len == 0
                && !control
                && seg.window != 0
                && seg.window == me.last_window
                && me.last_ack == Some(ack)
                && me.next_seq == Some(seg.seq);
            if dup {
                me.dup_acks += 1;
                ev.dup_ack = true;
            } else if me.last_ack != Some(ack) {
                me.dup_acks = 0;
            }
            me.last_ack_at_ns = at_ns;
            if dsack(seg.options, ack) {
                ev.spurious = true;
            }
            let mut newest: Option<Sent> = None;
            let mut any_resent = false;
            while let Some(s) = peer.outstanding.front() {
                if seq_before(ack, s.end) {
                    break;
                }
                any_resent |= s.resent;
                newest = Some(*s);
                peer.outstanding.pop_front();
            }
            if newest.is_some() {
                // The peer's data made progress: its next resend begins a new episode.
                peer.resent_in_episode = false;
            }
            // A wild timestamp at either end makes no round trip (it would be years long, or below 0).
            let timed = newest
                .filter(|_| !any_resent)
                .and_then(|s| crate::timeline::plausible_response_time(s.at_ns, at_ns));
            if let Some(rtt) = timed {
                let rtt = rtt as i64;
                ev.rtt = Some((side, rtt as u64));
                // RFC 6298's smoothing, for the timeout the peer's resends are judged by.
                match peer.srtt_ns {
                    None => {
                        peer.srtt_ns = Some(rtt);
                        peer.rttvar_ns = rtt / 2;
                    }
                    Some(srtt) => {
                        peer.rttvar_ns = (3 * peer.rttvar_ns + (srtt - rtt).abs()) / 4;
                        peer.srtt_ns = Some((7 * srtt + rtt) / 8);
                    }
                }
            }
            me.last_ack = Some(ack);
        }
        me.last_window = seg.window;

        // Its new data, to be timed when acknowledged.
        let seg_len = seg.payload_len + u32::from(flags.syn()) + u32::from(flags.fin());
        // A SYN and a FIN take a sequence number each and are acknowledged as data is (Wireshark
        // times their ACKs too).
        if seg_len > 0 && class == SegmentClass::New && !flags.rst() {
            me.resent_in_episode = false;
            if me.outstanding.len() >= OUTSTANDING_KEPT {
                me.outstanding.pop_front();
            }
            me.outstanding.push_back(Sent {
                end: seg.seq.wrapping_add(seg_len),
                at_ns,
                resent: false,
            });
        }
        if !flags.rst() {
            let end = seg.seq.wrapping_add(seg_len);
            if me.next_seq.is_none_or(|n| seq_before(n, end)) {
                me.next_seq = Some(end);
            }
        }
        ev
    }

    /// The zero-window spells still open (the connection ended inside them): side and since when.
    pub fn open_zero_windows(&self) -> impl Iterator<Item = (Side, i64)> + '_ {
        [Side::Lo, Side::Hi]
            .into_iter()
            .filter_map(|s| Some((s, self.sides[s.index()].zero_since_ns?)))
    }
}

/// A connection's path state made only once it has a second segment: a connection seen in one segment
/// (an attempt of a SYN flood, a lone RST) keeps that segment's few fields instead of the ~220 bytes of
/// a [`PathConnection`], and the state is rebuilt from them, exactly, when the next one comes.
#[derive(Debug, Clone, Default)]
pub enum LazyPath {
    /// No segment yet.
    #[default]
    Unseen,
    /// One segment, without ACK (so without a SACK option that matters).
    First(FirstSegment),
    /// Two segments or more, or a first one with ACK.
    Followed(Box<PathConnection>),
}

/// The fields of a connection's first segment that [`PathConnection::segment`] reads when it has no ACK.
#[derive(Debug, Clone, Copy)]
pub struct FirstSegment {
    side: Side,
    seq: u32,
    window: u16,
    flags: TcpFlags,
    payload_len: u32,
    class: SegmentClass,
    at_ns: i64,
    handshake_rtt_ns: Option<i64>,
}

impl FirstSegment {
    /// The path state after this segment alone, and what it told.
    fn replayed(&self) -> (PathConnection, PathEvents) {
        let mut p = PathConnection::default();
        // Addresses, ports, ACK number, options and payload bytes are not read for a segment without
        // ACK: only the fields kept.
        let unspecified = std::net::IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED);
        let seg = TcpSegment {
            src: unspecified,
            src_port: 0,
            dst: unspecified,
            dst_port: 0,
            seq: self.seq,
            ack: 0,
            window: self.window,
            flags: self.flags,
            options: &[],
            payload: &[],
            payload_len: self.payload_len,
            ttl: 0,
        };
        let ev = p.segment(
            self.side,
            &seg,
            self.class,
            self.at_ns,
            self.handshake_rtt_ns,
        );
        (p, ev)
    }
}

impl LazyPath {
    /// [`PathConnection::segment`], the state made at the second segment.
    pub fn segment(
        &mut self,
        side: Side,
        seg: &TcpSegment<'_>,
        class: SegmentClass,
        at_ns: i64,
        handshake_rtt_ns: Option<i64>,
    ) -> PathEvents {
        match self {
            LazyPath::Unseen if !seg.flags.ack() => {
                let first = FirstSegment {
                    side,
                    seq: seg.seq,
                    window: seg.window,
                    flags: seg.flags,
                    payload_len: seg.payload_len,
                    class,
                    at_ns,
                    handshake_rtt_ns,
                };
                *self = LazyPath::First(first);
                first.replayed().1
            }
            LazyPath::Unseen => {
                let mut p = Box::<PathConnection>::default();
                let ev = p.segment(side, seg, class, at_ns, handshake_rtt_ns);
                *self = LazyPath::Followed(p);
                ev
            }
            LazyPath::First(first) => {
                let mut p = Box::new(first.replayed().0);
                let ev = p.segment(side, seg, class, at_ns, handshake_rtt_ns);
                *self = LazyPath::Followed(p);
                ev
            }
            LazyPath::Followed(p) => p.segment(side, seg, class, at_ns, handshake_rtt_ns),
        }
    }

    /// [`PathConnection::open_zero_windows`].
    pub fn open_zero_windows(&self) -> Vec<(Side, i64)> {
        match self {
            LazyPath::Unseen => Vec::new(),
            LazyPath::First(first) => first.replayed().0.open_zero_windows().collect(),
            LazyPath::Followed(p) => p.open_zero_windows().collect(),
        }
    }
}

/// Whether a segment's SACK option reports a duplicate segment (D-SACK, RFC 2883): its first block lies
/// below the cumulative ACK, or inside the second block.
fn dsack(options: &[u8], ack: u32) -> bool {
    let mut i = 0;
    while i < options.len() {
        match options[i] {
            0 => return false,
            1 => i += 1,
            kind => {
                let Some(&len) = options.get(i + 1) else {
                    return false;
                };
                let len = usize::from(len);
                if len < 2 || i + len > options.len() {
                    return false;
                }
                if kind == 5 && len >= 10 {
                    let block = |k: usize| {
                        let at = i + 2 + 8 * k;
                        let word = |o: usize| {
                            u32::from_be_bytes([
                                options[o],
                                options[o + 1],
                                options[o + 2],
                                options[o + 3],
                            ])
                        };
                        (word(at), word(at + 4))
                    };
                    let (left, right) = block(0);
                    if seq_before(left, ack) {
                        return true;
                    }
                    if len >= 18 {
                        let (l2, r2) = block(1);
                        return !seq_before(left, l2) && !seq_before(r2, right);
                    }
                    return false;
                }
                i += len;
            }
        }
    }
    false
}

/// The path's figures of one interval, in one scope. Directions are by role: index 0 for what the client
/// sent (or, for round trips, the round trip to the server: client data, the server's ACK), 1 for the
/// server.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct PathCell {
    /// Round trips: `[to the server, to the client]`.
    pub rtt: [CoarseHistogram; 2],
    /// Duplicate ACKs sent by `[the client, the server]`.
    pub dup_acks: [u64; 2],
    /// Retransmissions sent by `[the client, the server]`: fast, timeout, tail loss probe, other.
    pub resends: [[u64; 4]; 2],
    /// Retransmissions of `[the client, the server]` a D-SACK reported as spurious.
    pub spurious: [u64; 2],
    /// Nanoseconds of the interval `[the client, the server]` advertised a zero window.
    pub zero_window_ns: [i64; 2],
}

impl PathCell {
    pub(crate) fn add(&mut self, o: &PathCell) {
        for d in 0..2 {
            self.rtt[d].merge(&o.rtt[d]);
            self.dup_acks[d] += o.dup_acks[d];
            for k in 0..4 {
                self.resends[d][k] += o.resends[d][k];
            }
            self.spurious[d] += o.spurious[d];
            self.zero_window_ns[d] += o.zero_window_ns[d];
        }
    }

    /// The retransmissions of `[the client, the server]` (index `d`) by kind.
    pub(crate) fn resend_counts(&self, d: usize) -> ResendCounts {
        ResendCounts {
            fast_retransmit: self.resends[d][0],
            timeout: self.resends[d][1],
            tail_loss_probe: self.resends[d][2],
            other: self.resends[d][3],
            spurious: self.spurious[d],
        }
    }

    /// Every retransmission, both ways.
    pub(crate) fn resends_total(&self) -> u64 {
        self.resends.iter().flatten().sum()
    }

    /// The interval's figures for a report.
    pub(crate) fn point(&self) -> PathPoint {
        let rtt = |h: &CoarseHistogram| (h.count() > 0).then(|| h.summary_us());
        let resends = |d: usize| self.resend_counts(d);
        PathPoint {
            rtt_to_server_us: rtt(&self.rtt[0]),
            rtt_to_client_us: rtt(&self.rtt[1]),
            c2s_dup_acks: self.dup_acks[0],
            s2c_dup_acks: self.dup_acks[1],
            c2s_resends: resends(0),
            s2c_resends: resends(1),
            client_zero_window_s: self.zero_window_ns[0] as f64 / 1e9,
            server_zero_window_s: self.zero_window_ns[1] as f64 / 1e9,
        }
    }
}

/// Index of a resend kind in [`PathCell::resends`].
pub(crate) fn resend_index(k: ResendKind) -> usize {
    match k {
        ResendKind::FastRetransmit => 0,
        ResendKind::Timeout => 1,
        ResendKind::TailLossProbe => 2,
        ResendKind::Other => 3,
    }
}

/// Retransmissions one way in an interval, by what made the sender resend (they add up to the interval's
/// `c2s_retrans` or `s2c_retrans`), and those a D-SACK reported as spurious (a subset).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct ResendCounts {
    /// After two duplicate ACKs of the resent byte.
    pub fast_retransmit: u64,
    /// After a silence of at least the retransmission timeout.
    pub timeout: u64,
    /// The last segment sent, after two round trips of silence.
    pub tail_loss_probe: u64,
    /// None of those.
    pub other: u64,
    /// Reported by the receiver as received twice (D-SACK): resent for nothing.
    pub spurious: u64,
}

impl ResendCounts {
    /// Fast retransmits, timeouts, tail loss probes and others: every retransmission.
    pub fn total(&self) -> u64 {
        self.fast_retransmit + self.timeout + self.tail_loss_probe + self.other
    }
}

/// The path in one interval of a rate series (see the module's documentation for what each means).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PathPoint {
    /// Client data to the server's ACK of it: the round trip from the capture point to the server and
    /// back (the path at a client-side capture; the server's own ACK delay, and its response time when
    /// the ACK rides on the response, at a server-side capture); null without a sample.
    pub rtt_to_server_us: Option<RtSummary>,
    /// Server data to the client's ACK of it: the round trip from the capture point to the client.
    pub rtt_to_client_us: Option<RtSummary>,
    /// Duplicate ACKs the client sent.
    pub c2s_dup_acks: u64,
    /// Duplicate ACKs the server sent.
    pub s2c_dup_acks: u64,
    /// The client's retransmissions by kind.
    pub c2s_resends: ResendCounts,
    /// The server's retransmissions by kind.
    pub s2c_resends: ResendCounts,
    /// Seconds of the interval the client advertised a zero window (it stopped reading), summed over
    /// connections.
    pub client_zero_window_s: f64,
    /// Seconds of the interval the server advertised a zero window.
    pub server_zero_window_s: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sack_block_below_the_ack_is_a_duplicate() {
        // NOP, NOP, SACK with one block [1000, 1100) under ACK 2000: D-SACK.
        let mut o = vec![1, 1, 5, 10];
        o.extend(1000u32.to_be_bytes());
        o.extend(1100u32.to_be_bytes());
        assert!(dsack(&o, 2000));
        // The same block above the ACK: an ordinary SACK.
        assert!(!dsack(&o, 900));
        // A first block inside the second: D-SACK above the ACK.
        let mut o = vec![5, 18];
        for v in [3000u32, 3100, 2000, 4000] {
            o.extend(v.to_be_bytes());
        }
        assert!(dsack(&o, 1000));
        // Cut short or malformed options are no D-SACK and no panic.
        assert!(!dsack(&[5, 10, 0, 0], 10));
        assert!(!dsack(&[5], 10));
        assert!(!dsack(&[8, 1], 10));
    }

    fn segment(
        seq: u32,
        ack: u32,
        flags: u8,
        window: u16,
        payload_len: u32,
    ) -> TcpSegment<'static> {
        let ip = std::net::IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 1));
        TcpSegment {
            src: ip,
            src_port: 40000,
            dst: ip,
            dst_port: 3306,
            seq,
            ack,
            window,
            flags: TcpFlags(flags),
            options: &[],
            payload: &[],
            payload_len,
            ttl: 64,
        }
    }

    #[test]
    fn a_lazy_path_follows_every_segment_as_the_full_state_does() {
        const SYN: u8 = TcpFlags::SYN;
        const ACK: u8 = TcpFlags::ACK;
        const RST: u8 = TcpFlags::RST;
        const PSH: u8 = TcpFlags::PSH;
        let firsts = [
            (Side::Lo, segment(1000, 0, SYN, 64240, 0), SegmentClass::New),
            (Side::Hi, segment(1000, 0, SYN, 0, 0), SegmentClass::New),
            (Side::Lo, segment(1000, 0, PSH, 0, 100), SegmentClass::New),
            (
                Side::Lo,
                segment(1000, 0, PSH, 512, 100),
                SegmentClass::Retransmission,
            ),
            (Side::Lo, segment(1000, 0, RST, 0, 0), SegmentClass::New),
            (
                Side::Hi,
                segment(5000, 1001, SYN | ACK, 65535, 0),
                SegmentClass::New,
            ),
        ];
        let thens = [
            (Side::Hi, segment(5000, 1001, SYN | ACK, 65535, 0)),
            (Side::Lo, segment(1001, 5001, ACK, 0, 0)),
            (Side::Lo, segment(1001, 5001, ACK | PSH, 502, 40)),
            (Side::Hi, segment(5001, 1101, ACK, 0, 0)),
        ];
        for (i, (side, first, class)) in firsts.iter().enumerate() {
            for (j, (then_side, then)) in thens.iter().enumerate() {
                let mut full = PathConnection::default();
                let mut lazy = LazyPath::default();
                let at = [1_000_000_000, 1_000_200_000, 1_400_000_000];
                let rtt = Some(150_000);
                let a = full.segment(*side, first, *class, at[0], rtt);
                let b = lazy.segment(*side, first, *class, at[0], rtt);
                assert_eq!(a, b, "first segment {i}");
                assert_eq!(
                    full.open_zero_windows().collect::<Vec<_>>(),
                    lazy.open_zero_windows(),
                    "after first segment {i}"
                );
                for (k, &t) in at[1..].iter().enumerate() {
                    let a = full.segment(*then_side, then, SegmentClass::New, t, rtt);
                    let b = lazy.segment(*then_side, then, SegmentClass::New, t, rtt);
                    assert_eq!(a, b, "first {i}, then {j}, segment {k}");
                }
                let LazyPath::Followed(p) = &lazy else {
                    panic!("followed after three segments");
                };
                assert_eq!(format!("{full:?}"), format!("{p:?}"), "first {i}, then {j}");
            }
        }
    }
}
