//! The packet event: one decoded TCP segment, kept compact (48 bytes) between the scan and the tracking
//! phase.

use pcapsleuth_flow::{Side, TcpSegment};

use crate::mysql::PayloadHint;

/// A decoded TCP packet, kept compact between the scan and the tracking phase.
#[derive(Debug, Clone, Copy)]
pub(super) struct PacketEvent {
    pub(super) ts: i64,
    /// Offset of the captured payload in the split's bytes; past their end, in the datagrams the split's
    /// IP fragments made ([`Scan::reassembled`]), as if those followed the split's bytes.
    pub(super) payload_at: u64,
    pub(super) frame_in_split: u32,
    pub(super) flow: u32,
    pub(super) seq: u32,
    pub(super) ack: u32,
    /// The captured payload's length (bits 0..=23: a record holds at most 16 MiB, the capture readers'
    /// bound) and the IP TTL (bits 24..=31), so that an event stays 48 bytes.
    pub(super) captured_ttl: u32,
    pub(super) payload_len: u32,
    pub(super) wire_len: u32,
    pub(super) window: u16,
    pub(super) flags: u8,
    /// The sending [`Side`] (bit 7), the MySQL glue's [`PayloadHint`] when the scan tells one (bits
    /// 4..=6; see [`EngineOptions::mysql_depth`](super::EngineOptions::mysql_depth)) and, for a SYN, the length of its TCP options in 32-bit
    /// words (bits 0..=3, at most 10): three facts in the byte a `Side` alone would take, so that an event
    /// stays 48 bytes.
    pub(super) side_options: u8,
}

const _: () = assert!(std::mem::size_of::<PacketEvent>() == 48);
// The options' length, the hint and the side share `side_options` without overlapping.
const _: () = assert!(PacketEvent::HINT_SHIFT + PayloadHint::BITS <= 7);

impl PacketEvent {
    const SIDE_HI: u8 = 0x80;
    const CAPTURED_MASK: u32 = 0x00ff_ffff;

    /// `captured_ttl` of a payload of `captured` bytes sent with `ttl`.
    #[inline]
    pub(super) fn captured_ttl(captured: usize, ttl: u8) -> u32 {
        // The capture readers keep no record longer than 16 MiB, so `captured` fits its bits: the mask
        // only keeps a length that did not from the TTL's.
        (captured as u32 & Self::CAPTURED_MASK) | u32::from(ttl) << 24
    }

    /// The captured payload's length.
    #[inline]
    pub(super) fn payload_captured(&self) -> u32 {
        self.captured_ttl & Self::CAPTURED_MASK
    }

    /// The IP TTL (hop limit) the segment came with.
    #[inline]
    pub(super) fn ttl(&self) -> u8 {
        (self.captured_ttl >> 24) as u8
    }

    /// `side_options` of a segment. The handshake reads a SYN's options and the path an ACK's SACK
    /// blocks (a D-SACK tells a spurious resend), so a segment's are kept unless they are the
    /// timestamps alone, which nothing reads: those of nearly every segment of a connection between
    /// Linux hosts, left out so that tracking does not slice them for each. They are found again before
    /// the payload, so they are kept only where the record has them there (always, for the decoders'
    /// slices of one header).
    #[inline]
    pub(super) fn side_options(side: Side, seg: &TcpSegment<'_>) -> u8 {
        let o = seg.options;
        // NOP, NOP, Timestamps (kind 8, length 10): RFC 7323's recommended layout.
        let timestamps_alone =
            o.len() == 12 && !seg.flags.syn() && o.get(..4) == Some(&[1, 1, 8, 10]);
        let words = if !timestamps_alone && o.as_ptr_range().end == seg.payload.as_ptr() {
            (seg.options.len() / 4).min(10) as u8
        } else {
            0
        };
        words | if side == Side::Hi { Self::SIDE_HI } else { 0 }
    }

    /// Where the MySQL glue's [`PayloadHint`] sits in `side_options`: between the options' length
    /// (bits 0..=3) and the side (bit 7).
    const HINT_SHIFT: u8 = 4;
    const HINT_MASK: u8 = ((1 << PayloadHint::BITS) - 1) << Self::HINT_SHIFT;

    /// `side_options`' bits of a payload's hint.
    #[inline]
    pub(super) fn hint_bits(hint: PayloadHint) -> u8 {
        hint.bits() << Self::HINT_SHIFT
    }

    /// What the scan told the MySQL glue of the payload ([`PayloadHint::NONE`] when it told nothing).
    #[inline]
    pub(super) fn payload_hint(&self) -> PayloadHint {
        PayloadHint::from_bits((self.side_options & Self::HINT_MASK) >> Self::HINT_SHIFT)
    }

    /// The sending side.
    #[inline]
    pub(super) fn side(&self) -> Side {
        if self.side_options & Self::SIDE_HI != 0 {
            Side::Hi
        } else {
            Side::Lo
        }
    }

    /// The length of the TCP options kept, in bytes: they lie right before the payload.
    #[inline]
    pub(super) fn options_len(&self) -> usize {
        usize::from(self.side_options & 0x0f) * 4
    }
}
