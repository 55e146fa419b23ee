//! A connection attempt as its handshake shows it: the client's SYNs, the server's answers, and the
//! options each side offered.
//!
//! An attempt is a SYN's 4-tuple and initial sequence number (ISN). A SYN repeating the ISN is the
//! client's kernel retransmitting it, whatever its timing (classically 1 s, 3 s, 7 s after the first;
//! newer kernels may resend linearly every second); a SYN with another ISN is another attempt. The
//! server answers with a SYN-ACK (the attempt is established), a RST (refused: nothing listens there),
//! a plain ACK of an older connection on the same 4-tuple (a TIME_WAIT that rejected the SYN, e.g. by
//! PAWS when timestamps go backwards), or not at all.

use serde::{Serialize, Serializer};

use crate::decode::TcpSegment;
use crate::frame::FrameRef;
use crate::key::Side;
use crate::packing::{bit, has, Packer, Unpacker};

/// What a SYN or SYN-ACK offered in its TCP options: maximum segment size (RFC 9293), window scale and
/// timestamps (RFC 7323), SACK (RFC 2018).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct SynOptions {
    /// Maximum segment size, in bytes, when the option was present.
    pub mss: Option<u16>,
    /// Window scale shift count (the window field counts units of 2^shift bytes), when present.
    pub window_scale: Option<u8>,
    /// Whether the SACK-permitted option was present.
    pub sack_permitted: bool,
    /// The sender's timestamp (TSval) when the timestamps option was present.
    pub timestamp: Option<u32>,
}

const OPT_END: u8 = 0;
const OPT_NOP: u8 = 1;
const OPT_MSS: u8 = 2;
const OPT_WINDOW_SCALE: u8 = 3;
const OPT_SACK_PERMITTED: u8 = 4;
const OPT_TIMESTAMPS: u8 = 8;

impl SynOptions {
    /// Reads the options of a TCP header (the bytes after its first 20). Options of other kinds are
    /// skipped by their length, so that one this does not know (a Fast Open cookie, MPTCP) does not hide
    /// those after it, which is why this is not etherparse's options iterator (it stops at an unknown
    /// kind). A malformed length ends the walk.
    pub fn parse(options: &[u8]) -> SynOptions {
        let mut o = SynOptions::default();
        let mut rest = options;
        while let Some((&kind, tail)) = rest.split_first() {
            match kind {
                OPT_END => break,
                OPT_NOP => {
                    rest = tail;
                    continue;
                }
                _ => {}
            }
            let Some(len) = tail.first().map(|&l| usize::from(l)) else {
                break;
            };
            let Some(body) = rest.get(2..len) else {
                break;
            };
            match (kind, body) {
                (OPT_MSS, &[a, b]) => o.mss = Some(u16::from_be_bytes([a, b])),
                (OPT_WINDOW_SCALE, &[shift]) => o.window_scale = Some(shift),
                (OPT_SACK_PERMITTED, []) => o.sack_permitted = true,
                (OPT_TIMESTAMPS, &[a, b, c, d, _, _, _, _]) => {
                    o.timestamp = Some(u32::from_be_bytes([a, b, c, d]))
                }
                _ => {}
            }
            rest = &rest[len..];
        }
        o
    }

    /// Whether this SYN-ACK echoes none of the options `syn` offered that a server echoes when it
    /// supports them (window scale, SACK, timestamps). A SYN cookie made without timestamps cannot
    /// remember them, so such a SYN-ACK is one sign that the server answered with a SYN cookie (a full
    /// SYN queue); a server that supports none of them looks the same.
    pub fn echoes_none_of(&self, syn: &SynOptions) -> bool {
        let offered = syn.window_scale.is_some() || syn.sack_permitted || syn.timestamp.is_some();
        let echoed = (syn.window_scale.is_some() && self.window_scale.is_some())
            || (syn.sack_permitted && self.sack_permitted)
            || (syn.timestamp.is_some() && self.timestamp.is_some());
        offered && !echoed
    }
}

/// How a connection attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AttemptOutcome {
    /// The server answered with a SYN-ACK.
    Established,
    /// The server answered with a RST: nothing listened on the port (or a firewall rejected it).
    Refused,
    /// No answer was seen: SYNs lost or dropped (a full listen queue, a firewall), or the capture ended.
    Unanswered,
}

/// The handshake of one connection, as tracking concluded it. An attempt exists when the capture saw
/// the client's SYN; a connection that began before the capture has none (`outcome` null).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Handshake {
    /// SYNs the client sent with the attempt's ISN: 1 when the first was answered, more when it was
    /// retransmitted.
    pub syn_count: u32,
    /// SYN-ACKs the server sent: more than one when it resent it (its SYN-ACK or the client's ACK was
    /// lost, or the client's ACK was dropped at a full accept queue) or answered retransmitted SYNs.
    pub synack_count: u32,
    /// The client's first SYN to the SYN-ACK it answered, in nanoseconds: what `connect()` waited for.
    /// In JSON `connect_us`, microseconds. `None` without both, or when the SYN-ACK comes first in the
    /// capture.
    #[serde(rename = "connect_us", serialize_with = "ns_as_us")]
    pub connect_ns: Option<u64>,
    /// How the attempt ended; `None` when the client's SYN was not captured (the connection began
    /// before the capture), or when the attempt went on as the next connection (`resumed_by`).
    pub outcome: Option<AttemptOutcome>,
    /// The client's initial sequence number.
    pub isn: Option<u32>,
    /// The client's first SYN (with the attempt's ISN); `None` when it was not captured.
    pub first_syn: Option<FrameRef>,
    /// The first SYN the client sent again.
    pub retransmitted_syn: Option<FrameRef>,
    /// SYNs sent up to the answer: 2 or more when the answer came only to a retransmitted SYN.
    pub syns_before_answer: u32,
    /// The SYN-ACK the client answered, or the RST that refused the attempt.
    pub answer: Option<FrameRef>,
    /// The server answered a SYN with a plain ACK (of an older connection on this 4-tuple: a TIME_WAIT
    /// that rejected the SYN, or a challenge ACK).
    pub ack_to_syn: Option<FrameRef>,
    /// The options of the client's first SYN.
    pub syn_options: Option<SynOptions>,
    /// The options of the answered SYN-ACK.
    pub synack_options: Option<SynOptions>,
    /// The client resent this attempt's SYN after this connection was reset before any answer, and
    /// the attempt went on as the next connection of the 4-tuple from this frame (`outcome` is then
    /// null here and told there).
    pub resumed_by: Option<FrameRef>,
}

fn ns_as_us<S: Serializer>(ns: &Option<u64>, s: S) -> Result<S::Ok, S::Error> {
    match ns {
        Some(ns) => s.serialize_f64(*ns as f64 / 1e3),
        None => s.serialize_none(),
    }
}

/// The attempt while packets arrive.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct AttemptState {
    /// The side that sent the first SYN, and its ISN.
    pub(crate) opener: Option<(Side, u32)>,
    pub(crate) first_syn: Option<FrameRef>,
    pub(crate) syns: u32,
    pub(crate) retransmitted_syn: Option<FrameRef>,
    pub(crate) syn_options: Option<SynOptions>,
    pub(crate) synacks: u32,
    /// The latest SYN-ACK answering the ISN before the client's first other packet after one, with
    /// how many SYNs had been sent (before any SYN: the first SYN-ACK, with its acknowledgment number).
    pub(crate) synack: Option<(FrameRef, u32, SynOptions)>,
    /// The client sent a packet after a SYN-ACK: the answer it acted on is settled.
    pub(crate) settled: bool,
    pub(crate) refused: Option<FrameRef>,
    pub(crate) ack_to_syn: Option<FrameRef>,
    /// The SYN that resumed this attempt on the next connection of the 4-tuple.
    pub(crate) resumed_by: Option<FrameRef>,
}

impl AttemptState {
    /// Whether a SYN (without ACK) from `side` with sequence number `seq` is another attempt than this
    /// one: another ISN from the side that opened.
    pub(crate) fn is_other_attempt(&self, side: Side, seq: u32) -> bool {
        matches!(self.opener, Some((s, isn)) if s == side && isn != seq)
    }

    /// The attempt a connection begun by this SYN continues: this one when the SYN repeats its ISN
    /// before any SYN-ACK answered it (the client resent its SYN after the exchange was reset, e.g.
    /// by its own RST to the plain ACK of a TIME_WAIT), else a new one. The connection that is left
    /// behind says at which frame its attempt was resumed.
    pub(crate) fn resumed(&mut self, side: Side, seq: u32, at: FrameRef) -> AttemptState {
        if self.opener == Some((side, seq)) && self.synack.is_none() {
            self.resumed_by = Some(at);
            AttemptState {
                resumed_by: None,
                ..*self
            }
        } else {
            AttemptState::default()
        }
    }

    /// The SYN that resumed this attempt on the next connection of the 4-tuple.
    pub(crate) fn resumed_by(&self) -> Option<FrameRef> {
        self.resumed_by
    }

    /// Notes one segment of the connection.
    #[inline]
    pub(crate) fn segment(&mut self, side: Side, seg: &TcpSegment<'_>, at: FrameRef) {
        // Nearly every packet: once the client has acted on an answer, or when the connection began
        // before the capture, only SYNs and SYN-ACKs still count.
        if !seg.flags.syn() && (self.settled || self.opener.is_none()) {
            return;
        }
        self.note(side, seg, at);
    }

    fn note(&mut self, side: Side, seg: &TcpSegment<'_>, at: FrameRef) {
        let flags = seg.flags;
        let opener = match self.opener {
            Some(o) => o,
            None if flags.syn() && !flags.ack() => {
                self.opener = Some((side, seg.seq));
                self.first_syn = Some(at);
                self.syns = 1;
                self.syn_options = Some(SynOptions::parse(seg.options));
                // A SYN-ACK captured before the SYN it answers (two capture queues, or a capture point
                // between the two hosts' clocks) answered it.
                self.synack = self
                    .synack
                    .filter(|&(_, ack, _)| ack == seg.seq.wrapping_add(1))
                    .map(|(at, _, options)| (at, 1, options));
                return;
            }
            None => {
                // Seen from its SYN-ACK on (the SYN was not captured, or comes later in the capture):
                // count the server's answers, and keep the first with its acknowledgment number.
                if flags.syn() && flags.ack() {
                    self.synacks += 1;
                    if self.synack.is_none() {
                        self.synack = Some((at, seg.ack, SynOptions::parse(seg.options)));
                    }
                }
                return;
            }
        };
        let (client, isn) = opener;
        if side == client {
            if flags.syn() && !flags.ack() {
                if seg.seq == isn {
                    self.syns += 1;
                    self.retransmitted_syn.get_or_insert(at);
                }
            } else if self.synack.is_some() {
                self.settled = true;
            }
            return;
        }
        if flags.syn() && flags.ack() {
            self.synacks += 1;
            if !self.settled && seg.ack == isn.wrapping_add(1) {
                self.synack = Some((at, self.syns, SynOptions::parse(seg.options)));
            }
        } else if self.synack.is_none() {
            if flags.rst() {
                self.refused.get_or_insert(at);
            } else if flags.ack() && seg.payload_len == 0 && !flags.fin() {
                self.ack_to_syn.get_or_insert(at);
            }
        }
    }

    pub(crate) fn first_syn(&self) -> Option<FrameRef> {
        self.first_syn
    }

    /// The first SYN to the SYN-ACK the client answered (so far); unknown when the capture has the
    /// SYN-ACK first.
    pub(crate) fn connect_ns(&self) -> Option<u64> {
        let (syn, (answer, _, _)) = (self.first_syn?, self.synack?);
        (answer.frame > syn.frame)
            .then(|| u64::try_from(answer.ts.0.checked_sub(syn.ts.0)?).ok())
            .flatten()
    }

    pub(crate) fn conclude(&self) -> Handshake {
        let outcome = self.opener.filter(|_| self.resumed_by.is_none()).map(|_| {
            match (self.synack, self.refused) {
                (Some(_), _) => AttemptOutcome::Established,
                (None, Some(_)) => AttemptOutcome::Refused,
                (None, None) => AttemptOutcome::Unanswered,
            }
        });
        let connect_ns = self.connect_ns();
        // Without the SYN there is no attempt to answer.
        let synack = self.synack.filter(|_| self.opener.is_some());
        Handshake {
            syn_count: self.syns,
            synack_count: self.synacks,
            connect_ns,
            outcome,
            isn: self.opener.map(|(_, isn)| isn),
            first_syn: self.first_syn,
            retransmitted_syn: self.retransmitted_syn,
            syns_before_answer: synack.map_or(self.syns, |(_, n, _)| n),
            answer: synack.map(|(at, _, _)| at).or(self.refused),
            ack_to_syn: self.ack_to_syn,
            syn_options: self.syn_options,
            synack_options: synack.map(|(_, _, o)| o),
            resumed_by: self.resumed_by,
        }
    }
}

impl SynOptions {
    fn pack(&self, p: &mut Packer<'_>) {
        p.bits(
            bit(0, self.mss.is_some())
                | bit(1, self.window_scale.is_some())
                | bit(2, self.sack_permitted)
                | bit(3, self.timestamp.is_some()),
        );
        if let Some(m) = self.mss {
            p.u32(u32::from(m));
        }
        if let Some(w) = self.window_scale {
            p.u32(u32::from(w));
        }
        if let Some(t) = self.timestamp {
            p.u32(t);
        }
    }

    fn unpack(u: &mut Unpacker<'_>) -> SynOptions {
        let b = u.bits();
        SynOptions {
            mss: has(b, 0).then(|| u.u32() as u16),
            window_scale: has(b, 1).then(|| u.u32() as u8),
            sack_permitted: has(b, 2),
            timestamp: has(b, 3).then(|| u.u32()),
        }
    }
}

impl AttemptState {
    pub(crate) fn pack(&self, p: &mut Packer<'_>) {
        p.bits(
            bit(0, self.opener.is_some())
                | bit(1, self.opener.is_some_and(|(s, _)| s == Side::Hi))
                | bit(2, self.first_syn.is_some())
                | bit(3, self.retransmitted_syn.is_some())
                | bit(4, self.syn_options.is_some())
                | bit(5, self.synack.is_some())
                | bit(6, self.settled)
                | bit(7, self.refused.is_some())
                | bit(8, self.ack_to_syn.is_some())
                | bit(9, self.resumed_by.is_some()),
        );
        if let Some((_, isn)) = self.opener {
            p.u32(isn);
        }
        p.opt_frame(self.first_syn);
        p.u32(self.syns);
        p.opt_frame(self.retransmitted_syn);
        if let Some(o) = &self.syn_options {
            o.pack(p);
        }
        p.u32(self.synacks);
        if let Some((at, n, o)) = &self.synack {
            p.frame(*at);
            p.u32(*n);
            o.pack(p);
        }
        p.opt_frame(self.refused);
        p.opt_frame(self.ack_to_syn);
        p.opt_frame(self.resumed_by);
    }

    pub(crate) fn unpack(u: &mut Unpacker<'_>) -> AttemptState {
        let b = u.bits();
        let opener = has(b, 0).then(|| (if has(b, 1) { Side::Hi } else { Side::Lo }, u.u32()));
        let first_syn = u.opt_frame(has(b, 2));
        let syns = u.u32();
        let retransmitted_syn = u.opt_frame(has(b, 3));
        let syn_options = has(b, 4).then(|| SynOptions::unpack(u));
        let synacks = u.u32();
        let synack = has(b, 5).then(|| (u.frame(), u.u32(), SynOptions::unpack(u)));
        AttemptState {
            opener,
            first_syn,
            syns,
            retransmitted_syn,
            syn_options,
            synacks,
            synack,
            settled: has(b, 6),
            refused: u.opt_frame(has(b, 7)),
            ack_to_syn: u.opt_frame(has(b, 8)),
            resumed_by: u.opt_frame(has(b, 9)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linux_syn_options_are_read() {
        // MSS 1460, SACK permitted, timestamps 2779406187/0, NOP, window scale 7.
        let linux = [
            2, 4, 5, 180, 4, 2, 8, 10, 165, 170, 95, 107, 0, 0, 0, 0, 1, 3, 3, 7,
        ];
        assert_eq!(
            SynOptions::parse(&linux),
            SynOptions {
                mss: Some(1460),
                window_scale: Some(7),
                sack_permitted: true,
                timestamp: Some(2_779_406_187),
            }
        );
    }

    #[test]
    fn unknown_options_are_skipped_and_bad_lengths_end_the_walk() {
        // A Fast Open cookie (kind 34, 10 bytes) before the MSS.
        let tfo_first = [34, 10, 1, 2, 3, 4, 5, 6, 7, 8, 2, 4, 5, 180];
        assert_eq!(SynOptions::parse(&tfo_first).mss, Some(1460));
        for bad in [
            &[2u8, 4, 5][..],
            &[2, 0, 5, 180],
            &[2, 1],
            &[8, 10, 1, 2],
            &[3],
        ] {
            assert_eq!(SynOptions::parse(bad), SynOptions::default(), "{bad:?}");
        }
        assert_eq!(SynOptions::parse(&[0, 2, 4, 5, 180]).mss, None);
    }

    #[test]
    fn a_synack_echoing_nothing_offered_is_told() {
        let syn = SynOptions {
            mss: Some(1460),
            window_scale: Some(7),
            sack_permitted: true,
            timestamp: Some(1),
        };
        let mss_only = SynOptions {
            mss: Some(1460),
            ..SynOptions::default()
        };
        assert!(mss_only.echoes_none_of(&syn));
        assert!(!syn.echoes_none_of(&syn));
        assert!(!mss_only.echoes_none_of(&mss_only));
    }
}
