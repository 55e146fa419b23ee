//! The compressed protocol (CLIENT_COMPRESS): each compressed packet has a 7-byte
//! header (3-byte compressed length, 1-byte compressed sequence id, 3-byte
//! uncompressed length; 0 means "stored, not deflated") and a zlib payload. The
//! inner bytes are an ordinary packet stream, and inner packets may straddle
//! compressed packets, so this layer only turns bytes into bytes.
//!
//! Output is produced in a fixed 16 KiB buffer and bounded by the declared
//! uncompressed length, so a deflate bomb costs time proportional to its
//! declared size (at most 16 MiB per compressed packet), never memory.
//!
//! Every deflated payload is a zlib stream of its own. One inflater serves a
//! direction for its whole life: it is reset between payloads (which keeps its
//! window and tables allocated), and its output buffer is allocated once and
//! never cleared, as only the bytes the inflater wrote are handed out. Each
//! payload byte is inflated once, as it comes.
//!
//! The inflater hands out at most one buffer at a time, so it may still hold
//! output after it has read the last byte of a payload: the payload ends only
//! once that output is out ([`Decompressor::has_pending_output`] tells the
//! caller to call again).

use std::cell::RefCell;

use flate2::{Decompress, FlushDecompress, Status};

use crate::wire::le_u24;

const OUT_CHUNK: usize = 16 * 1024;

/// A zlib inflater and its output buffer: what a direction needs to inflate, allocated once.
struct Inflater {
    /// The current payload's zlib stream (reset at each deflated payload).
    state: Decompress,
    out: Box<[u8]>,
}

/// Inflaters a thread keeps from directions that ended, for the next ones it starts: setting one up
/// (its state, its window, its output buffer: some 60 KB) costs more than inflating a short
/// connection's payloads, and a capture of short compressed connections starts one per direction.
const SPARE_MAX: usize = 8;

thread_local! {
    static SPARE: RefCell<Vec<Inflater>> = const { RefCell::new(Vec::new()) };
}

impl Inflater {
    /// One of the thread's spare inflaters, else a new one. Its state is reset before every payload
    /// and only the bytes it writes are read from its buffer, so what it held before cannot show.
    fn take() -> Self {
        let spare = SPARE
            .try_with(|s| s.try_borrow_mut().ok().and_then(|mut s| s.pop()))
            .ok()
            .flatten();
        spare.unwrap_or_else(|| Inflater {
            state: Decompress::new(true),
            out: vec![0u8; OUT_CHUNK].into_boxed_slice(),
        })
    }
}

pub(crate) struct Decompressor {
    hdr: [u8; 7],
    hdr_fill: usize,
    in_payload: bool,
    remaining: u32,
    uncompressed_len: u32,
    produced: u32,
    deflated: bool,
    /// The current payload cannot be inflated any further: skip it.
    broken: bool,
    finished: bool,
    /// The last call filled the output buffer: the inflater may hold more.
    pending: bool,
    /// Taken at the first deflated payload (stored payloads need none).
    inflater: Option<Inflater>,
    /// Payloads that failed to inflate or inflated past their declared length.
    pub(crate) errors: u64,
}

impl Decompressor {
    pub(crate) fn new() -> Self {
        Decompressor {
            hdr: [0; 7],
            hdr_fill: 0,
            in_payload: false,
            remaining: 0,
            uncompressed_len: 0,
            produced: 0,
            deflated: false,
            broken: false,
            finished: false,
            pending: false,
            inflater: None,
            errors: 0,
        }
    }

    /// Forget the partial compressed packet (resynchronisation).
    pub(crate) fn reset(&mut self) {
        self.hdr_fill = 0;
        self.in_payload = false;
        self.remaining = 0;
        self.pending = false;
    }

    /// Between compressed packets (no header byte nor payload byte pending).
    pub(crate) fn at_boundary(&self) -> bool {
        !self.in_payload && self.hdr_fill == 0
    }

    /// The inflater may hold output of the current payload that did not fit the
    /// last call's buffer: call [`Decompressor::push`] again, even with no input,
    /// before the segment is done.
    pub(crate) fn has_pending_output(&self) -> bool {
        self.in_payload && self.pending
    }

    /// Consume some input; returns (bytes consumed, inner bytes produced). Every
    /// call with non-empty input, or with output pending, consumes at least one
    /// byte, produces output, or ends the current payload.
    pub(crate) fn push<'a>(&'a mut self, input: &'a [u8]) -> (usize, &'a [u8]) {
        if !self.in_payload {
            let mut i = 0;
            while self.hdr_fill < 7 {
                let Some(&b) = input.get(i) else {
                    return (i, &[]);
                };
                if let Some(slot) = self.hdr.get_mut(self.hdr_fill) {
                    *slot = b;
                }
                self.hdr_fill += 1;
                i += 1;
            }
            self.hdr_fill = 0;
            self.remaining = le_u24(&self.hdr).unwrap_or(0);
            self.uncompressed_len = le_u24(self.hdr.get(4..).unwrap_or(&[])).unwrap_or(0);
            self.deflated = self.uncompressed_len != 0;
            self.produced = 0;
            self.broken = false;
            self.finished = false;
            self.pending = false;
            if self.deflated {
                self.inflater
                    .get_or_insert_with(Inflater::take)
                    .state
                    .reset(true);
            }
            self.in_payload = self.remaining > 0;
            return (i, &[]);
        }
        let avail = input.len().min(self.remaining as usize);
        let Some(chunk) = input.get(..avail) else {
            return (0, &[]);
        };
        if !self.deflated {
            self.finish_bytes(avail);
            return (avail, chunk);
        }
        let Some(inflater) = self
            .inflater
            .as_mut()
            .filter(|_| !self.broken && !self.finished)
        else {
            self.finish_bytes(avail);
            return (avail, &[]);
        };
        let (in_before, out_before) = (inflater.state.total_in(), inflater.state.total_out());
        let status = inflater
            .state
            .decompress(chunk, &mut inflater.out, FlushDecompress::None);
        let consumed = usize::try_from(inflater.state.total_in().wrapping_sub(in_before))
            .unwrap_or(avail)
            .min(avail);
        let mut written = usize::try_from(inflater.state.total_out().wrapping_sub(out_before))
            .unwrap_or(0)
            .min(inflater.out.len());
        let room = (self.uncompressed_len - self.produced) as usize;
        if written > room {
            // More output than declared: deliver what was promised, drop the rest.
            written = room;
            self.broken = true;
            self.errors += 1;
        }
        self.produced += written as u32;
        match status {
            Ok(Status::StreamEnd) => self.finished = true,
            Ok(Status::Ok) => {}
            // Asked for what it still held and it held nothing: not an error.
            Ok(Status::BufError) if chunk.is_empty() => {}
            Ok(Status::BufError) | Err(_) => {
                if !self.broken {
                    self.errors += 1;
                }
                self.broken = true;
            }
        }
        self.pending = written == inflater.out.len()
            && self.produced < self.uncompressed_len
            && !self.broken
            && !self.finished;
        if consumed == 0 && written == 0 && !chunk.is_empty() && !self.broken && !self.finished {
            // No progress with input available: treat as corrupt rather than spin.
            self.broken = true;
            self.errors += 1;
        }
        self.finish_bytes(consumed);
        let out = self.inflater.as_ref().and_then(|i| i.out.get(..written));
        (consumed, out.unwrap_or(&[]))
    }

    fn finish_bytes(&mut self, n: usize) {
        self.remaining = self.remaining.saturating_sub(n as u32);
        if self.remaining == 0 && !self.pending {
            self.in_payload = false;
        }
    }
}

impl Drop for Decompressor {
    /// The inflater goes to the thread's spares (unless it has enough, or is being torn down).
    fn drop(&mut self) {
        let Some(spare) = self.inflater.take() else {
            return;
        };
        let _ = SPARE.try_with(|s| {
            if let Ok(mut s) = s.try_borrow_mut() {
                if s.len() < SPARE_MAX {
                    s.push(spare);
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(d: &mut Decompressor, mut input: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        while !input.is_empty() || d.has_pending_output() {
            let (n, o) = d.push(input);
            out.extend_from_slice(o);
            input = &input[n..];
        }
        out
    }

    #[test]
    fn stored_and_deflated_payloads_yield_the_inner_stream() {
        let inner = b"\x05\x00\x00\x00\x03abcd";
        let z = miniz_oxide::deflate::compress_to_vec_zlib(inner, 6);
        let mut s = Vec::new();
        s.extend_from_slice(&(z.len() as u32).to_le_bytes()[..3]);
        s.push(0);
        s.extend_from_slice(&(inner.len() as u32).to_le_bytes()[..3]);
        s.extend_from_slice(&z);
        s.extend_from_slice(&[inner.len() as u8, 0, 0, 1, 0, 0, 0]);
        s.extend_from_slice(inner);
        let mut d = Decompressor::new();
        let mut expected = inner.to_vec();
        expected.extend_from_slice(inner);
        assert_eq!(drain(&mut d, &s), expected);
        // Byte by byte gives the same bytes.
        let mut d = Decompressor::new();
        let mut got = Vec::new();
        for b in &s {
            got.extend(drain(&mut d, std::slice::from_ref(b)));
        }
        assert_eq!(got, expected);
        assert_eq!(d.errors, 0);
    }

    /// Compressed packets of `inner`'s pieces, each deflated.
    fn deflated_packets(pieces: &[&[u8]]) -> Vec<u8> {
        let mut s = Vec::new();
        for (seq, p) in pieces.iter().enumerate() {
            let z = miniz_oxide::deflate::compress_to_vec_zlib(p, 6);
            s.extend_from_slice(&(z.len() as u32).to_le_bytes()[..3]);
            s.push(seq as u8);
            s.extend_from_slice(&(p.len() as u32).to_le_bytes()[..3]);
            s.extend_from_slice(&z);
        }
        s
    }

    /// Text that deflates well, as resultsets and long INSERTs do.
    fn rows(n: usize) -> Vec<u8> {
        let mut v = Vec::with_capacity(n);
        let mut i = 0u32;
        while v.len() < n {
            v.extend_from_slice(format!("({i}, 'row {i}', NULL), ").as_bytes());
            i += 1;
        }
        v.truncate(n);
        v
    }

    #[test]
    fn payloads_inflating_far_past_the_output_buffer_are_delivered_whole() {
        // The inflater's window is 32 KiB and the output buffer 16 KiB: a payload whose last window
        // holds more than 16 KiB (17-32 KB, 50-65 KB, ...) must not lose that window's tail once the
        // input is all read, nor the next compressed packet with it.
        for size in [17_000, 20_000, 32_768, 40_000, 50_000, 65_000, 1 << 20] {
            let (big, next) = (rows(size), rows(300));
            let s = deflated_packets(&[&big, &next]);
            let mut want = big.clone();
            want.extend_from_slice(&next);
            let mut d = Decompressor::new();
            let mut got = Vec::new();
            let mut input = &s[..];
            while !input.is_empty() || d.has_pending_output() {
                let (n, o) = d.push(input);
                got.extend_from_slice(o);
                input = &input[n..];
            }
            assert!(got == want, "{size}: {} bytes of {}", got.len(), want.len());
            assert_eq!(d.errors, 0, "{size}");
            // In 1460-byte segments, each drained before the next, as a session does.
            let mut d = Decompressor::new();
            let mut got = Vec::new();
            for seg in s.chunks(1460) {
                let mut input = seg;
                while !input.is_empty() || d.has_pending_output() {
                    let (n, o) = d.push(input);
                    got.extend_from_slice(o);
                    input = &input[n..];
                }
            }
            assert!(
                got == want,
                "{size} in segments: {} bytes of {}",
                got.len(),
                want.len()
            );
            assert_eq!(d.errors, 0, "{size}");
        }
    }

    #[test]
    fn a_spare_inflater_left_mid_payload_decodes_the_next_stream_as_a_new_one() {
        let (big, next) = (rows(40_000), rows(300));
        let s = deflated_packets(&[&big, &next]);
        let fresh = {
            let mut d = Decompressor::new();
            drain(&mut d, &s)
        };
        let mut want = big.clone();
        want.extend_from_slice(&next);
        assert!(fresh == want);
        // A direction that ended in the middle of a deflated payload, its inflater full of that
        // payload's window, leaves it to the next one on this thread.
        let mut d = Decompressor::new();
        let _ = d.push(&s[..s.len() / 3]);
        assert!(d.inflater.is_some());
        drop(d);
        let mut d = Decompressor::new();
        assert!(drain(&mut d, &s) == fresh);
        assert_eq!(d.errors, 0);
    }

    #[test]
    fn a_match_reaching_before_its_payload_is_counted_not_filled_in() {
        // A fixed-Huffman block whose first symbol copies 3 bytes from distance 1: there is nothing
        // before it, as each payload is a zlib stream of its own (zlib: "invalid distance too far
        // back"). Its output is not made up from whatever a window last held.
        let z = [0x78, 0x9c, 0x03, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01];
        let mut s = vec![z.len() as u8, 0, 0, 0, 3, 0, 0];
        s.extend_from_slice(&z);
        s.extend_from_slice(&[1, 0, 0, 1, 0, 0, 0, b'x']);
        let mut d = Decompressor::new();
        assert_eq!(drain(&mut d, &s), b"x");
        assert_eq!(d.errors, 1);
    }

    #[test]
    fn garbage_payload_is_counted_and_skipped() {
        let mut s = vec![4, 0, 0, 0, 100, 0, 0, 1, 2, 3, 4];
        s.extend_from_slice(&[1, 0, 0, 1, 0, 0, 0, b'x']);
        let mut d = Decompressor::new();
        assert_eq!(drain(&mut d, &s), b"x");
        assert_eq!(d.errors, 1);
    }
}
