//! Ordered byte streams out of TCP segments: retransmitted bytes removed, segments that arrive early held
//! until the hole before them fills, and holes that will never fill (packet loss in the capture, bytes cut
//! by the snap length) reported as gaps so the protocol decoder above can resynchronise.

use std::collections::BTreeMap;

/// What the stream hands the protocol decoder, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamEvent<'a> {
    /// The next bytes of the stream, in order, each byte once.
    Data(&'a [u8]),
    /// This many bytes of the stream were never captured.
    Gap(u64),
}

/// Bytes held while waiting for a hole to fill; past this the hole is declared lost.
pub const MAX_HELD_BYTES: usize = 1 << 20;

struct Held<M> {
    bytes: Vec<u8>,
    /// Length on the wire (bytes beyond `bytes.len()` were cut by the snap length).
    wire_len: u32,
    meta: M,
}

/// Serial-number comparison (RFC 1982).
fn before(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

/// One direction of a TCP connection, reassembled. `M` is whatever the caller attaches to a segment
/// (frame number and time), handed back with the bytes it carried.
pub struct StreamReassembler<M> {
    next: Option<u32>,
    held: BTreeMap<u32, Held<M>>,
    held_bytes: usize,
}

impl<M: Copy> Default for StreamReassembler<M> {
    fn default() -> Self {
        Self::new()
    }
}

impl<M: Copy> StreamReassembler<M> {
    /// An empty stream. Its first byte is the one after the SYN, or, when no SYN is fed (it was not
    /// captured), the first payload byte fed.
    pub fn new() -> Self {
        StreamReassembler {
            next: None,
            held: BTreeMap::new(),
            held_bytes: 0,
        }
    }

    /// Feeds one segment: `seq` of its first payload byte (the SYN's own sequence number is not payload),
    /// the captured payload, and its length on the wire.
    #[inline]
    pub fn segment(
        &mut self,
        seq: u32,
        syn: bool,
        payload: &[u8],
        wire_len: u32,
        meta: M,
        out: &mut impl FnMut(StreamEvent<'_>, M),
    ) {
        let seq = if syn { seq.wrapping_add(1) } else { seq };
        if syn && self.next.is_none() {
            self.next = Some(seq);
        }
        if wire_len == 0 {
            return;
        }
        let next = *self.next.get_or_insert(seq);
        if before(next, seq) {
            self.hold(seq, payload, wire_len, meta, out);
            return;
        }
        let skip = next.wrapping_sub(seq);
        if skip >= wire_len {
            return; // entirely a retransmission
        }
        Self::deliver(&mut self.next, seq, skip, payload, wire_len, meta, out);
        // In order (nearly always), nothing is held: no search for what might now follow.
        if !self.held.is_empty() {
            // This segment filled the hole before what was held: the held bytes could be read only
            // now, so they are handed out with this segment's meta (as tshark's reassembly puts a
            // message in the frame that completed it). A response whose segment was lost ends when its
            // resend arrived, not when its last byte first did.
            self.drain_held(Some(meta), out);
        }
    }

    /// Takes a segment the caller reads itself when its bytes are the next of the stream, all captured,
    /// with nothing held: the stream moves past them and `true` is returned (what
    /// [`StreamReassembler::segment`] would have done, handing them out whole). Else nothing changes, and
    /// the caller feeds the segment with [`StreamReassembler::segment`].
    #[inline]
    pub fn take_in_order(&mut self, seq: u32, captured: usize, wire_len: u32) -> bool {
        if self.next != Some(seq) || !self.held.is_empty() || captured != wire_len as usize {
            return false;
        }
        self.next = Some(seq.wrapping_add(wire_len));
        true
    }

    /// The sequence number of the next byte expected in order, once a segment was seen.
    pub fn next_seq(&self) -> Option<u32> {
        self.next
    }

    /// Whether bytes are held after a hole (an acknowledgment may release them).
    #[inline]
    pub fn holds(&self) -> bool {
        !self.held.is_empty()
    }

    /// The peer acknowledged everything before `ack`: a hole before it was received by the peer but not
    /// captured, so it is reported as a gap and what was held after it is released.
    #[inline]
    pub fn acknowledged(&mut self, ack: u32, out: &mut impl FnMut(StreamEvent<'_>, M)) {
        // Called for every ACK; nearly always nothing is held.
        if !self.held.is_empty() {
            self.acknowledged_held(ack, out);
        }
    }

    fn acknowledged_held(&mut self, ack: u32, out: &mut impl FnMut(StreamEvent<'_>, M)) {
        let Some(next) = self.next else { return };
        if !before(next, ack) {
            return;
        }
        let first = self.first_held_seq();
        if let Some(first) = first.filter(|&f| !before(ack, f)) {
            // Everything from `next` up to the first held segment is lost; the held data follows it.
            self.skip_to(first, out);
            self.drain_held(None, out);
        }
    }

    /// Releases everything held (at a close or the end of the capture), holes reported as gaps.
    pub fn flush(&mut self, out: &mut impl FnMut(StreamEvent<'_>, M)) {
        while let Some(first) = self.first_held_seq() {
            self.skip_to(first, out);
            self.drain_held(None, out);
        }
    }

    fn first_held_seq(&self) -> Option<u32> {
        let next = self.next?;
        // Keys are raw sequence numbers; order them relative to `next` so wrap-around sorts right.
        self.held
            .keys()
            .copied()
            .min_by_key(|&k| k.wrapping_sub(next))
    }

    fn skip_to(&mut self, seq: u32, out: &mut impl FnMut(StreamEvent<'_>, M)) {
        let Some(next) = self.next else { return };
        if before(next, seq) {
            if let Some(h) = self.held.get(&seq) {
                out(StreamEvent::Gap(u64::from(seq.wrapping_sub(next))), h.meta);
            }
            self.next = Some(seq);
        }
    }

    fn hold(
        &mut self,
        seq: u32,
        payload: &[u8],
        wire_len: u32,
        meta: M,
        out: &mut impl FnMut(StreamEvent<'_>, M),
    ) {
        if self.held.contains_key(&seq) {
            return;
        }
        self.held_bytes += payload.len();
        self.held.insert(
            seq,
            Held {
                bytes: payload.to_vec(),
                wire_len,
                meta,
            },
        );
        if self.held_bytes > MAX_HELD_BYTES {
            // A hole this old is not going to fill: give up on it rather than grow.
            if let Some(first) = self.first_held_seq() {
                self.skip_to(first, out);
                self.drain_held(None, out);
            }
        }
    }

    /// Hands out what was held and now follows in order, with `filled_by`'s meta when a segment just
    /// filled the hole before it (else each with its own: after a gap, they were received as they came).
    fn drain_held(&mut self, filled_by: Option<M>, out: &mut impl FnMut(StreamEvent<'_>, M)) {
        while let Some(next) = self.next {
            let Some(seq) = self.first_held_seq().filter(|&s| !before(next, s)) else {
                return;
            };
            let Some(h) = self.held.remove(&seq) else {
                return;
            };
            self.held_bytes -= h.bytes.len();
            let skip = next.wrapping_sub(seq);
            if skip < h.wire_len {
                let meta = filled_by.unwrap_or(h.meta);
                Self::deliver(&mut self.next, seq, skip, &h.bytes, h.wire_len, meta, out);
            }
        }
    }

    /// Hands out bytes `[skip, wire_len)` of a segment starting at `seq`; bytes past the captured ones are a gap.
    /// (Inlined where a segment in order is handed out: with the caller's decoder behind `out`, a call here
    /// per segment is a measurable part of `mysql`'s instructions.)
    #[inline(always)]
    fn deliver(
        next: &mut Option<u32>,
        seq: u32,
        skip: u32,
        payload: &[u8],
        wire_len: u32,
        meta: M,
        out: &mut impl FnMut(StreamEvent<'_>, M),
    ) {
        let skip = skip as usize;
        if skip < payload.len() {
            out(StreamEvent::Data(&payload[skip..]), meta);
        }
        let captured_end = payload.len().max(skip);
        let missing = (wire_len as usize).saturating_sub(captured_end);
        if missing > 0 {
            out(StreamEvent::Gap(missing as u64), meta);
        }
        *next = Some(seq.wrapping_add(wire_len));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(segs: &[(u32, &[u8], u32)], ack: Option<u32>) -> Vec<String> {
        let mut r = StreamReassembler::<u32>::new();
        let mut got = Vec::new();
        let mut out = |e: StreamEvent<'_>, m: u32| {
            got.push(match e {
                StreamEvent::Data(d) => format!("{m}:{}", String::from_utf8_lossy(d)),
                StreamEvent::Gap(n) => format!("{m}:gap{n}"),
            })
        };
        for (i, &(seq, p, wire)) in segs.iter().enumerate() {
            r.segment(seq, false, p, wire, i as u32, &mut out);
        }
        if let Some(a) = ack {
            r.acknowledged(a, &mut out);
        }
        r.flush(&mut out);
        got
    }

    #[test]
    fn a_segment_taken_in_order_leaves_the_stream_as_feeding_it_would() {
        let mut fed = StreamReassembler::<u32>::new();
        let mut took = StreamReassembler::<u32>::new();
        let mut got = Vec::new();
        let mut out = |e: StreamEvent<'_>, m: u32| got.push(format!("{m}:{e:?}"));
        fed.segment(99, true, &[], 0, 0, &mut out);
        took.segment(99, true, &[], 0, 0, &mut out);
        // The first payload, in order: taken (its bytes are the caller's to read).
        fed.segment(100, false, b"abc", 3, 1, &mut out);
        assert!(took.take_in_order(100, 3, 3));
        // Not the next bytes, cut by the snap length: left for `segment`.
        assert!(!took.take_in_order(110, 3, 3));
        assert!(!took.take_in_order(103, 2, 3));
        // Both streams go on alike: the next segment is delivered by both, after a hole held by both.
        got.clear();
        let mut out = |e: StreamEvent<'_>, m: u32| got.push(format!("{m}:{e:?}"));
        for r in [&mut fed, &mut took] {
            r.segment(106, false, b"ghi", 3, 3, &mut out);
            r.segment(103, false, b"def", 3, 2, &mut out);
        }
        assert_eq!(got[..2], got[2..]);
        assert_eq!(got.len(), 4);
        // Bytes held after a hole: nothing is taken until it fills.
        took.segment(200, false, b"x", 1, 4, &mut |_, _| {});
        assert!(took.holds());
        assert!(!took.take_in_order(109, 1, 1));
    }

    #[test]
    fn retransmitted_bytes_are_delivered_once() {
        assert_eq!(
            run(&[(10, b"abc", 3), (10, b"abc", 3), (12, b"cde", 3)], None),
            ["0:abc", "2:de"]
        );
    }

    /// Bytes that came early are read when the hole before them fills: they are handed out with the
    /// segment that filled it (the last byte of a response whose middle was lost arrives when its resend
    /// does, for the reader).
    #[test]
    fn early_segments_wait_for_the_hole_to_fill_and_come_with_the_segment_that_filled_it() {
        assert_eq!(
            run(&[(10, b"ab", 2), (14, b"ef", 2), (12, b"cd", 2)], None),
            ["0:ab", "2:cd", "2:ef"]
        );
    }

    #[test]
    fn a_hole_the_peer_acknowledged_is_a_gap() {
        assert_eq!(
            run(&[(10, b"ab", 2), (14, b"ef", 2)], Some(16)),
            ["0:ab", "1:gap2", "1:ef"]
        );
    }

    #[test]
    fn snaplen_cut_bytes_are_a_gap() {
        assert_eq!(
            run(&[(10, b"ab", 5), (15, b"xy", 2)], None),
            ["0:ab", "0:gap3", "1:xy"]
        );
    }

    #[test]
    fn sequence_numbers_wrap() {
        assert_eq!(
            run(&[(u32::MAX - 1, b"ab", 2), (0, b"cd", 2)], None),
            ["0:ab", "1:cd"]
        );
    }
}
