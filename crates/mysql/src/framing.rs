//! Streaming MySQL packet framing: 3-byte little-endian payload length + 1-byte
//! sequence id, with 0xFFFFFF-long payloads continued by the next packet.
//!
//! The framer never buffers a whole packet. It keeps the 4 header bytes (which
//! may straddle TCP segments) and the first `cap` bytes of each logical packet,
//! in a buffer allocated once; the rest of the payload is only counted. That is
//! what lets a million-row resultset be walked with no allocation.

use crate::wire::{le_u24, MAX_PAYLOAD};
use crate::Meta;

/// A logical packet that has just been completed by [`Framer::push`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct PacketEnd {
    /// Sequence id of the first physical packet.
    pub seq: u8,
    /// Total payload length over all continuation packets.
    pub len: u64,
    /// Where the first header byte was seen.
    pub start: Meta,
    /// Where the last byte was seen.
    pub end: Meta,
    /// Bytes of this packet lost to a gap (the packet kept its framing).
    pub gap_bytes: u64,
    /// The kept prefix stops early because a gap fell inside it.
    pub damaged: bool,
}

/// What a gap did to the framing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GapEffect {
    /// The gap fell inside the current payload: framing kept, packet still open.
    Absorbed,
    /// The gap fell inside the current payload and finished the packet.
    Completed,
    /// The gap crossed a packet boundary or a header: framing lost.
    Lost,
}

/// What [`Framer::push`] did: bytes consumed, and the packet completed with its kept first bytes.
pub(crate) type Pushed<'a> = (usize, Option<(PacketEnd, &'a [u8])>);

#[derive(Debug)]
pub(crate) struct Framer {
    hdr: [u8; 4],
    hdr_fill: usize,
    hdr_start: Meta,
    in_payload: bool,
    remaining: u32,
    continued: bool,
    started: bool,
    seq: u8,
    len: u64,
    start: Meta,
    prefix: Vec<u8>,
    cap: usize,
    damaged: bool,
    gap_bytes: u64,
}

const NO_META: Meta = Meta { ts_ns: 0, frame: 0 };

impl Framer {
    pub(crate) fn new(cap: usize) -> Self {
        Framer {
            hdr: [0; 4],
            hdr_fill: 0,
            hdr_start: NO_META,
            in_payload: false,
            remaining: 0,
            continued: false,
            started: false,
            seq: 0,
            len: 0,
            start: NO_META,
            prefix: Vec::with_capacity(cap),
            cap,
            damaged: false,
            gap_bytes: 0,
        }
    }

    /// The kept first bytes of the packet last completed.
    pub(crate) fn prefix(&self) -> &[u8] {
        &self.prefix
    }

    /// True between packets (no header byte nor payload byte pending).
    pub(crate) fn at_boundary(&self) -> bool {
        !self.started && self.hdr_fill == 0
    }

    /// Forget any partial packet (resynchronisation); returns the bytes dropped.
    pub(crate) fn reset(&mut self) -> u64 {
        let dropped = if self.started {
            self.len - u64::from(self.remaining) + self.hdr_fill as u64
        } else {
            self.hdr_fill as u64
        };
        self.hdr_fill = 0;
        self.in_payload = false;
        self.remaining = 0;
        self.continued = false;
        self.started = false;
        self.prefix.clear();
        dropped
    }

    /// Payload bytes still expected in the current physical packet.
    pub(crate) fn remaining(&self) -> u64 {
        if self.in_payload {
            u64::from(self.remaining)
        } else {
            0
        }
    }

    /// Where the packet being read began (its first header byte), if one is.
    pub(crate) fn started_at(&self) -> Option<Meta> {
        self.started.then_some(self.start)
    }

    /// The packet being read, as far as it came, while its framing goes on (the rest is still to come, or
    /// will never be sent): not damaged, its kept bytes in [`Framer::prefix`], its length the header's.
    pub(crate) fn partial(&self, end: Meta) -> Option<PacketEnd> {
        self.started.then(|| self.packet_end(end))
    }

    /// A partial packet whose header was read, as a damaged packet (the rest lost).
    pub(crate) fn take_partial(&mut self, end: Meta) -> Option<PacketEnd> {
        if !self.started {
            self.hdr_fill = 0;
            return None;
        }
        let p = PacketEnd {
            gap_bytes: self.gap_bytes + u64::from(self.remaining),
            damaged: true,
            ..self.packet_end(end)
        };
        // Keep the prefix readable for the caller; only the framing state resets.
        self.hdr_fill = 0;
        self.in_payload = false;
        self.remaining = 0;
        self.continued = false;
        self.started = false;
        Some(p)
    }

    /// Consume bytes until one logical packet completes or the input runs out.
    /// Returns the bytes consumed and the completed packet with its kept first bytes (at most `cap`).
    ///
    /// A packet that lies whole in `input` (the common case: a request or a small response in one
    /// segment) is handed back as a slice of `input`, with no copy; only packets that straddle inputs are
    /// gathered into the prefix buffer.
    #[inline(always)]
    pub(crate) fn push<'a>(&'a mut self, input: &'a [u8], meta: Meta) -> Pushed<'a> {
        let mut i = 0usize;
        loop {
            if !self.in_payload {
                if self.hdr_fill == 0 && !self.started {
                    if let Some(whole) = self.whole_packet(input, i, meta) {
                        return whole;
                    }
                }
                if self.hdr_fill == 0 && input.len() >= i + 4 {
                    // The whole header is here: read it in place (no byte-by-byte staging).
                    self.hdr_start = meta;
                    self.hdr.copy_from_slice(&input[i..i + 4]);
                    i += 4;
                } else {
                    while self.hdr_fill < 4 {
                        let Some(&b) = input.get(i) else {
                            return (i, None);
                        };
                        if self.hdr_fill == 0 {
                            self.hdr_start = meta;
                        }
                        if let Some(slot) = self.hdr.get_mut(self.hdr_fill) {
                            *slot = b;
                        }
                        self.hdr_fill += 1;
                        i += 1;
                    }
                }
                self.hdr_fill = 0;
                let len = le_u24(&self.hdr).unwrap_or(0);
                let seq = self.hdr[3];
                if !self.started {
                    self.started = true;
                    self.seq = seq;
                    self.len = 0;
                    self.start = self.hdr_start;
                    self.prefix.clear();
                    self.damaged = false;
                    self.gap_bytes = 0;
                }
                self.len += u64::from(len);
                self.remaining = len;
                self.continued = len == MAX_PAYLOAD;
                self.in_payload = true;
            }
            let avail = input.len().saturating_sub(i);
            let take = avail.min(self.remaining as usize);
            if !self.damaged && self.prefix.len() < self.cap {
                let keep = take.min(self.cap - self.prefix.len());
                if let Some(s) = input.get(i..i + keep) {
                    self.prefix.extend_from_slice(s);
                }
            }
            i += take;
            self.remaining -= take as u32;
            if self.remaining > 0 {
                return (i, None);
            }
            self.in_payload = false;
            if self.continued {
                continue;
            }
            self.started = false;
            return (i, Some((self.packet_end(meta), &self.prefix)));
        }
    }

    /// At a packet boundary: the packet starting at `input[i]`, if its header and whole payload are in
    /// `input` and it is not continued. Framing state is left as after a completed packet.
    fn whole_packet<'a>(&self, input: &'a [u8], i: usize, meta: Meta) -> Option<Pushed<'a>> {
        let hdr = input.get(i..i + 4)?;
        let len = le_u24(hdr)?;
        if len == MAX_PAYLOAD {
            return None;
        }
        let body_start = i + 4;
        let body_end = body_start + len as usize;
        if body_end > input.len() {
            return None;
        }
        let kept = input.get(body_start..body_start + (len as usize).min(self.cap))?;
        let end = PacketEnd {
            seq: hdr[3],
            len: u64::from(len),
            start: meta,
            end: meta,
            gap_bytes: 0,
            damaged: false,
        };
        Some((body_end, Some((end, kept))))
    }

    /// `n` bytes are missing at the current position.
    pub(crate) fn gap(&mut self, n: u64, meta: Meta) -> (GapEffect, Option<PacketEnd>) {
        if !self.in_payload || n > u64::from(self.remaining) {
            return (GapEffect::Lost, None);
        }
        // Bytes after the gap would land at the wrong offset of the prefix: stop keeping.
        if self.prefix.len() < self.cap {
            self.damaged = true;
        }
        self.gap_bytes += n;
        self.remaining -= n as u32;
        if self.remaining > 0 || n == 0 {
            return (GapEffect::Absorbed, None);
        }
        self.in_payload = false;
        if self.continued {
            return (GapEffect::Absorbed, None);
        }
        self.started = false;
        (GapEffect::Completed, Some(self.packet_end(meta)))
    }

    /// The logical packet being framed, ending at `end`.
    fn packet_end(&self, end: Meta) -> PacketEnd {
        PacketEnd {
            seq: self.seq,
            len: self.len,
            start: self.start,
            end,
            gap_bytes: self.gap_bytes,
            damaged: self.damaged,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const M: Meta = Meta { ts_ns: 1, frame: 1 };

    #[test]
    fn a_packet_split_in_its_header_is_reassembled() {
        let mut f = Framer::new(16);
        let bytes = [3, 0, 0, 7, b'a', b'b', b'c'];
        assert_eq!(f.push(&bytes[..2], M).1.map(|p| p.0.len), None);
        let (n, p) = f.push(&bytes[2..], M);
        assert_eq!(n, 5);
        let (p, body) = p.unwrap();
        assert_eq!((p.seq, p.len), (7, 3));
        assert_eq!(body, b"abc");
    }

    #[test]
    fn continuation_packets_form_one_logical_packet_and_only_the_cap_is_kept() {
        let mut f = Framer::new(4);
        let mut s = vec![0xFF, 0xFF, 0xFF, 0];
        s.extend(std::iter::repeat_n(b'x', MAX_PAYLOAD as usize));
        s.extend([2, 0, 0, 1, b'y', b'z']);
        let (n, p) = f.push(&s, M);
        assert_eq!(n, s.len());
        let (p, body) = p.unwrap();
        assert_eq!(p.len, u64::from(MAX_PAYLOAD) + 2);
        assert_eq!(body, b"xxxx");
    }

    #[test]
    fn a_gap_inside_a_payload_keeps_framing() {
        let mut f = Framer::new(16);
        assert!(f.push(&[10, 0, 0, 1, b'a'], M).1.is_none());
        assert_eq!(f.gap(4, M).0, GapEffect::Absorbed);
        let (_, p) = f.push(&[1, 2, 3, 4, 5, 9, 9], M);
        let (p, body) = p.unwrap();
        assert!(p.damaged);
        assert_eq!(p.gap_bytes, 4);
        assert_eq!(body, b"a");
        assert_eq!(f.gap(1, M).0, GapEffect::Lost);
    }

    #[test]
    fn whole_packets_are_handed_back_in_place_and_capped() {
        let mut f = Framer::new(2);
        let bytes = [3, 0, 0, 0, b'a', b'b', b'c', 1, 0, 0, 1, b'd'];
        let (n, p) = f.push(&bytes, M);
        assert_eq!(n, 7);
        let (p, body) = p.unwrap();
        assert_eq!((p.seq, p.len, p.damaged), (0, 3, false));
        assert_eq!(body, b"ab");
        let (n, p) = f.push(&bytes[7..], M);
        assert_eq!((n, p.map(|p| p.1)), (5, Some(&b"d"[..])));
        assert!(f.at_boundary());
    }
}
