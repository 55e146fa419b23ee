//! The packet event: one decoded TCP segment, kept compact (48 bytes) between the scan and the tracking
//! phase.

use pcapsleuth_flow::{Side, TcpSegment};
use pcapsleuth_mysql::PieceShape;

use super::scan::Scan;

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
    /// The sending [`Side`] (bit 7), the [`PieceShape`] of the payload when the scan tells it (bits
    /// 4..=6; see [`EngineOptions::mysql_depth`]) and, for a SYN, the length of its TCP options in 32-bit
    /// words (bits 0..=3, at most 10): three facts in the byte a `Side` alone would take, so that an event
    /// stays 48 bytes.
    pub(super) side_options: u8,
}

const _: () = assert!(std::mem::size_of::<PacketEvent>() == 48);

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

    /// `side_options` of a segment. Only the handshake reads options, so only a SYN's are kept. They
    /// are found again before the payload, so they are kept only where the record has them there
    /// (always, for the decoders' slices of one header).
    #[inline]
    pub(super) fn side_options(side: Side, seg: &TcpSegment<'_>) -> u8 {
        let adjacent = seg.flags.syn() && seg.options.as_ptr_range().end == seg.payload.as_ptr();
        let words = if adjacent {
            (seg.options.len() / 4).min(10) as u8
        } else {
            0
        };
        words | if side == Side::Hi { Self::SIDE_HI } else { 0 }
    }

    pub(super) const SHAPE_SHIFT: u8 = 4;
    const SHAPE_BITS: u8 = 0x70;

    /// Whether the scan told the payload's shape.
    #[inline]
    pub(super) fn shaped(&self) -> bool {
        self.side_options & Self::SHAPE_BITS != 0
    }

    /// What the payload is to a MySQL exchange, when the scan told it (else [`PieceShape::Unknown`]).
    #[inline]
    pub(super) fn piece_shape(&self) -> PieceShape {
        PieceShape::from_bits(self.side_options >> Self::SHAPE_SHIFT)
    }

    pub(super) fn side(&self) -> Side {
        if self.side_options & Self::SIDE_HI != 0 {
            Side::Hi
        } else {
            Side::Lo
        }
    }

    /// The TCP options kept (a SYN's), read from where the payload is: right before it, in the split's
    /// bytes or in the datagrams reassembled from its IP fragments.
    #[inline]
    pub(super) fn options<'a>(&self, scan: &'a Scan<'_>) -> &'a [u8] {
        let len = usize::from(self.side_options & 0x0f) * 4;
        if len == 0 {
            return &[];
        }
        let end = usize::try_from(self.payload_at).unwrap_or(usize::MAX);
        let from = end.saturating_sub(len);
        scan.bytes
            .get(from..end)
            .unwrap_or_else(|| scan.in_reassembled(from, end))
    }
}
