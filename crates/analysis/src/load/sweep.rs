//! Time spans (a request in flight, a connection open) kept compactly by when they start, and swept in
//! time order into per-interval levels: how many were present, integrated and at most.
//!
//! A span is told when it ends, in no order across connections, so the sweep can only run once every
//! span is known: which interval is final is not known before the end, nor is the capture's body the
//! spans are clamped to (chosen at the end from every timestamp), and a timestamp read later may step
//! back before any interval swept. Until then each span costs a few bytes: grouped by the ~1.07 s chunk
//! its start falls in, its start within the chunk and its length as variable-length integers. Past
//! [`SPILL_AT`] bytes in memory they go to an unnamed scratch file (deleted when closed), so that memory
//! does not grow with the capture; the sweep reads them back a chunk at a time. Where no scratch file
//! can be written they stay in memory. The sweep decodes one chunk at a time and holds the ends still to
//! come in a heap, so besides the kept bytes it needs memory for one chunk's spans and for the spans
//! present at once, not for a sorted copy of every event.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::Arc;

/// Bits of a start's offset within its chunk: chunks are 2^30 ns wide.
const CHUNK_BITS: u32 = 30;

/// Bytes of spans kept in memory (about a million spans) before they go to the scratch file.
const SPILL_AT: usize = 8 << 20;

/// Spans `[start, end)` in ns, `end == i64::MAX` for one that had not ended when the capture did.
#[derive(Debug, Clone, Default)]
pub(super) struct Spans {
    /// Per chunk of start times (`start >> CHUNK_BITS`): each span's offset in the chunk and its length
    /// (`end - start`, wrapping), LEB128 one after the other.
    chunks: BTreeMap<i64, Vec<u8>>,
    /// Bytes in `chunks`.
    in_memory: usize,
    /// The chunks' bytes written out.
    spilled: Spilled,
    count: u64,
    unended: bool,
}

/// Where a chunk's bytes written out lie: a file of [`Spilled::files`], an offset, a length.
#[derive(Debug, Clone, Copy)]
struct Piece {
    file: u32,
    at: u64,
    len: u32,
}

/// Spans written out of memory, in unnamed scratch files.
#[derive(Debug, Clone, Default)]
struct Spilled {
    /// The files: the last one is written to while no clone of the spans shares it (a clone, or a merge
    /// of another instance's, brings files that are only read).
    files: Vec<Arc<File>>,
    /// Bytes written to the last file.
    written: u64,
    /// Per chunk, its pieces in the files (a chunk told again after it was written has several).
    pieces: BTreeMap<i64, Vec<Piece>>,
    /// A scratch file could not be made or written: the spans stay in memory from then on.
    failed: bool,
    /// Bytes kept in memory before writing out; 0 for [`SPILL_AT`] (tests set less).
    limit: usize,
}

impl Spilled {
    /// The file to append to, made when there is none that this instance alone holds.
    fn writable(&mut self) -> Option<(u32, Arc<File>)> {
        let sole = self
            .files
            .last_mut()
            .is_some_and(|f| Arc::get_mut(f).is_some());
        if !sole {
            let file = tempfile::tempfile().ok()?;
            self.files.push(Arc::new(file));
            self.written = 0;
        }
        let index = u32::try_from(self.files.len() - 1).ok()?;
        Some((index, Arc::clone(self.files.last()?)))
    }

    /// Takes another instance's files and pieces. Their bytes are copied to the file this instance
    /// appends to, so that a run holds one scratch file open however many instances wrote out; those
    /// that cannot be copied are read from the other's file from here on, and the last of this
    /// instance's files stays the last, the one appended to (the other's, when this one has none).
    fn take(&mut self, o: Spilled) {
        if o.files.is_empty() {
            return;
        }
        if self.files.is_empty() {
            self.files = o.files;
            self.pieces = o.pieces;
            self.written = o.written;
            return;
        }
        let target = self.writable();
        let mut left: BTreeMap<i64, Vec<Piece>> = BTreeMap::new();
        let mut bytes = Vec::new();
        for (chunk, pieces) in o.pieces {
            for p in pieces {
                let copied = target.as_ref().and_then(|(file, to)| {
                    bytes.resize(p.len as usize, 0);
                    o.files
                        .get(p.file as usize)?
                        .read_exact_at(&mut bytes, p.at)
                        .ok()?;
                    to.write_all_at(&bytes, self.written).ok()?;
                    Some(Piece {
                        file: *file,
                        at: self.written,
                        len: p.len,
                    })
                });
                match copied {
                    Some(c) => {
                        self.written += u64::from(c.len);
                        self.pieces.entry(chunk).or_default().push(c);
                    }
                    None => left.entry(chunk).or_default().push(p),
                }
            }
        }
        if left.is_empty() {
            return;
        }
        let Some(mine) = self.files.pop() else {
            return;
        };
        let at = self.files.len() as u32;
        let theirs = o.files.len() as u32;
        for p in self.pieces.values_mut().flatten() {
            if p.file == at {
                p.file = at + theirs;
            }
        }
        for (chunk, pieces) in left {
            let moved = pieces.into_iter().map(|p| Piece {
                file: p.file + at,
                ..p
            });
            self.pieces.entry(chunk).or_default().extend(moved);
        }
        self.files.extend(o.files);
        self.files.push(mine);
    }

    /// Reads the pieces of `chunk` into `out`; false when one could not be read back.
    fn read(&self, chunk: i64, out: &mut Vec<u8>) -> bool {
        let mut whole = true;
        for p in self.pieces.get(&chunk).into_iter().flatten() {
            let from = out.len();
            out.resize(from + p.len as usize, 0);
            let read = self
                .files
                .get(p.file as usize)
                .is_some_and(|f| f.read_exact_at(&mut out[from..], p.at).is_ok());
            if !read {
                out.truncate(from);
                whole = false;
            }
        }
        whole
    }
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// The next integer at `bytes[*at..]`; the bytes are this module's own, so a cut one ends the list.
fn get_varint(bytes: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    let mut shift = 0;
    while let Some(&b) = bytes.get(*at) {
        *at += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(v);
        }
        shift += 7;
        if shift >= 64 {
            return None;
        }
    }
    None
}

impl Spans {
    /// Keeps `[start, end)`; `end` is at least `start`.
    pub(super) fn push(&mut self, start: i64, end: i64) {
        let bytes = self.chunks.entry(start >> CHUNK_BITS).or_default();
        let before = bytes.len();
        put_varint(bytes, (start & ((1 << CHUNK_BITS) - 1)) as u64);
        put_varint(bytes, (end as u64).wrapping_sub(start as u64));
        self.in_memory += bytes.len() - before;
        self.count += 1;
        self.unended |= end == i64::MAX;
    }

    /// Spans kept.
    pub(super) fn len(&self) -> u64 {
        self.count
    }

    /// Whether a span had not ended when the capture did.
    pub(super) fn any_unended(&self) -> bool {
        self.unended
    }

    /// Adds another instance's spans (the order within a chunk is the sweep's to sort), and writes
    /// the spans in memory out when they are more than the limit.
    pub(super) fn merge(&mut self, o: Spans) {
        for (chunk, bytes) in o.chunks {
            match self.chunks.get_mut(&chunk) {
                Some(mine) => mine.extend_from_slice(&bytes),
                None => {
                    self.chunks.insert(chunk, bytes);
                }
            }
        }
        self.in_memory += o.in_memory;
        self.spilled.failed |= o.spilled.failed;
        self.spilled.take(o.spilled);
        self.count += o.count;
        self.unended |= o.unended;
        let limit = match self.spilled.limit {
            0 => SPILL_AT,
            n => n,
        };
        if self.in_memory > limit {
            self.spill();
        }
    }

    /// Writes every chunk in memory to the scratch file (kept in memory where it cannot be written).
    fn spill(&mut self) {
        if self.spilled.failed {
            return;
        }
        let Some((file, handle)) = self.spilled.writable() else {
            self.spilled.failed = true;
            return;
        };
        for (&chunk, bytes) in &mut self.chunks {
            let Ok(len) = u32::try_from(bytes.len()) else {
                continue;
            };
            if handle.write_all_at(bytes, self.spilled.written).is_err() {
                self.spilled.failed = true;
                break;
            }
            self.spilled.pieces.entry(chunk).or_default().push(Piece {
                file,
                at: self.spilled.written,
                len,
            });
            self.spilled.written += u64::from(len);
            self.in_memory -= bytes.len();
            // Emptied, not kept: the chunk may never be told again.
            *bytes = Vec::new();
        }
        self.chunks.retain(|_, b| !b.is_empty());
    }

    /// Bytes kept in memory for the spans (the chunks' lengths, not their capacity).
    #[cfg(test)]
    pub(super) fn kept_bytes(&self) -> usize {
        self.chunks.values().map(Vec::len).sum()
    }

    /// The sweep's events in order, each span clamped to `[first, last]`: `(time, kind)`, where at one
    /// instant ends (0) come first, then starts (1), then the ends of spans that last an instant (2), so
    /// that back-to-back requests on a connection do not add up while a request of no measurable length
    /// still counts in the maximum.
    fn events(&self, first: i64, last: i64) -> Events<'_> {
        let mut keys: Vec<i64> = self
            .chunks
            .keys()
            .chain(self.spilled.pieces.keys())
            .copied()
            .collect();
        keys.sort_unstable();
        keys.dedup();
        Events {
            spans: self,
            keys: keys.into_iter(),
            bytes: Vec::new(),
            lost: false,
            starts: Vec::new(),
            at: 0,
            ends: BinaryHeap::new(),
            first,
            last,
        }
    }
}

/// The events of [`Spans`] in `(time, kind)` order: the starts chunk by chunk (clamping keeps chunks
/// in order), merged with the ends of the spans already started.
struct Events<'a> {
    spans: &'a Spans,
    /// The chunks with spans, in memory or written out, in order.
    keys: std::vec::IntoIter<i64>,
    /// The current chunk's bytes, read back and from memory.
    bytes: Vec<u8>,
    /// Whether a chunk's bytes written out could not be read back.
    lost: bool,
    /// The current chunk's spans, clamped, sorted by start.
    starts: Vec<(i64, i64)>,
    at: usize,
    ends: BinaryHeap<Reverse<(i64, u8)>>,
    first: i64,
    last: i64,
}

impl Events<'_> {
    /// Decodes the next chunk with a span into `starts`; false when none is left.
    fn next_chunk(&mut self) -> bool {
        for chunk in self.keys.by_ref() {
            self.starts.clear();
            self.at = 0;
            self.bytes.clear();
            // A piece is whole spans: one that could not be read leaves the others readable.
            self.lost |= !self.spans.spilled.read(chunk, &mut self.bytes);
            if let Some(kept) = self.spans.chunks.get(&chunk) {
                self.bytes.extend_from_slice(kept);
            }
            let bytes = &self.bytes;
            let base = chunk << CHUNK_BITS;
            let mut at = 0;
            while let (Some(offset), Some(len)) =
                (get_varint(bytes, &mut at), get_varint(bytes, &mut at))
            {
                let s = base + offset as i64;
                let e = (s as u64).wrapping_add(len) as i64;
                self.starts.push((
                    s.clamp(self.first, self.last),
                    e.clamp(self.first, self.last),
                ));
            }
            if !self.starts.is_empty() {
                self.starts.sort_unstable();
                return true;
            }
        }
        false
    }
}

impl Iterator for Events<'_> {
    type Item = (i64, u8);

    fn next(&mut self) -> Option<(i64, u8)> {
        if self.at == self.starts.len() && !self.next_chunk() {
            return self.ends.pop().map(|Reverse(e)| e);
        }
        let (s, e) = self.starts[self.at];
        if let Some(&Reverse(end)) = self.ends.peek() {
            if end < (s, 1) {
                self.ends.pop();
                return Some(end);
            }
        }
        self.at += 1;
        self.ends.push(Reverse(if e > s { (e, 0) } else { (s, 2) }));
        Some((s, 1))
    }
}

/// Per-interval integral and maximum of a count of things each present over `[start, end)`.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Level {
    /// Integral over the bin, ns x count.
    pub(super) area: u128,
    pub(super) max: u64,
}

/// What a sweep found: per bin (when asked), and over the whole run.
pub(super) struct Swept {
    pub(super) bins: BTreeMap<i64, Level>,
    /// Integral over the run, ns x count.
    pub(super) area: u128,
    pub(super) max: u64,
    /// When `max` was first reached.
    pub(super) max_at: i64,
    /// Whether spans written to the scratch file could not be read back, and are left out.
    pub(super) lost: bool,
}

/// Sweeps `spans`: per bin of `interval_ns` the integral and maximum of how many were present, and the
/// overall maximum with when it was first reached. Spans are clamped to `[first, last]`.
pub(super) fn sweep(
    spans: &Spans,
    interval_ns: i64,
    first: i64,
    last: i64,
    with_bins: bool,
) -> Swept {
    let mut events = spans.events(first, last);
    let swept = sweep_events(events.by_ref().peekable(), interval_ns, first, with_bins);
    Swept {
        lost: events.lost,
        ..swept
    }
}

/// The sweep over events in `(time, kind)` order (see [`Spans::events`]).
fn sweep_events(
    mut events: std::iter::Peekable<impl Iterator<Item = (i64, u8)>>,
    interval_ns: i64,
    first: i64,
    with_bins: bool,
) -> Swept {
    // The sweep visits bins in order: each is filled in place, then kept when the next begins.
    let mut bins: Vec<(i64, Level)> = Vec::new();
    fn cell(bins: &mut Vec<(i64, Level)>, bin: i64) -> &mut Level {
        if bins.last().is_none_or(|&(b, _)| b != bin) {
            bins.push((bin, Level::default()));
        }
        let last = bins.len() - 1;
        &mut bins[last].1
    }
    let (mut level, mut area, mut max, mut max_at) = (0u64, 0u128, 0u64, 0i64);
    let mut prev = first;
    while let Some(&(t, _)) = events.peek() {
        if level > 0 && t > prev {
            area += u128::from(level) * (t - prev) as u128;
            if with_bins {
                let mut a = prev;
                while a < t {
                    let bin = a.div_euclid(interval_ns);
                    let b_end = (bin + 1).saturating_mul(interval_ns).min(t);
                    let c = cell(&mut bins, bin);
                    c.area += u128::from(level) * (b_end - a) as u128;
                    c.max = c.max.max(level);
                    a = b_end;
                }
            }
        }
        while events.next_if_eq(&(t, 0)).is_some() {
            level = level.saturating_sub(1);
        }
        while events.next_if_eq(&(t, 1)).is_some() {
            level += 1;
        }
        let peak = level;
        while events.next_if_eq(&(t, 2)).is_some() {
            level = level.saturating_sub(1);
        }
        if peak > max {
            max = peak;
            max_at = t;
        }
        if with_bins && peak > 0 {
            let c = cell(&mut bins, t.div_euclid(interval_ns));
            c.max = c.max.max(peak);
        }
        prev = t;
    }
    Swept {
        bins: bins.into_iter().collect(),
        area,
        max,
        max_at,
        lost: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spans(list: &[(i64, i64)]) -> Spans {
        let mut s = Spans::default();
        for &(a, b) in list {
            s.push(a, b);
        }
        s
    }

    /// Every event at once, sorted: what the chunked sweep must reproduce.
    fn sorted_events(list: &[(i64, i64)], first: i64, last: i64) -> Vec<(i64, u8)> {
        let mut events = Vec::new();
        for &(s, e) in list {
            let (s, e) = (s.clamp(first, last), e.clamp(first, last));
            events.push((s, 1));
            events.push(if e > s { (e, 0) } else { (s, 2) });
        }
        events.sort_unstable();
        events
    }

    #[test]
    fn sweep_counts_overlaps_and_back_to_back() {
        // Two overlapping spans, then one that starts as the second ends: at most 2 at once.
        let w = sweep(&spans(&[(0, 10), (5, 20), (20, 30)]), 10, 0, 30, true);
        assert_eq!((w.area, w.max, w.max_at), (35, 2, 5));
        assert_eq!(w.bins[&0].area, 15);
        assert_eq!(w.bins[&0].max, 2);
        assert_eq!(w.bins[&1].area, 10);
        assert_eq!(w.bins[&1].max, 1);
        // An instant's span counts in the maximum.
        let w = sweep(&spans(&[(3, 3)]), 10, 0, 30, true);
        assert_eq!((w.area, w.max), (0, 1));
    }

    #[test]
    fn chunked_events_are_the_sorted_events_in_any_order_and_merge() {
        let base = 1_700_000_000_000_000_000i64;
        let list = random_spans(5_000, base, 0x9e37_79b9_7f4a_7c15);
        let (first, last) = (base + 1_000, base + (7 << CHUNK_BITS));
        let whole = spans(&list);
        let want = sorted_events(&list, first, last);
        assert_eq!(whole.events(first, last).collect::<Vec<_>>(), want);
        assert_eq!(whole.len(), 5_000);
        assert!(whole.any_unended());
        // Told in another order by three instances, merged.
        let mut parts = [Spans::default(), Spans::default(), Spans::default()];
        for (i, &(s, e)) in list.iter().enumerate().rev() {
            parts[i % 3].push(s, e);
        }
        let [mut a, b, c] = parts;
        a.merge(c);
        a.merge(b);
        assert_eq!(a.events(first, last).collect::<Vec<_>>(), want);
        let (w1, w2) = (
            sweep(&whole, 1_000_000_000, first, last, true),
            sweep(&a, 1_000_000_000, first, last, true),
        );
        assert_eq!((w1.area, w1.max, w1.max_at), (w2.area, w2.max, w2.max_at));
        assert!(w1.max > 1);
    }

    /// `n` spans of a linear congruential sequence from `seed` over several chunks: some long, some
    /// instants, some unended, some outside `[first, last]`.
    fn random_spans(n: usize, base: i64, seed: u64) -> Vec<(i64, i64)> {
        let mut x = seed;
        let mut next = move |m: u64| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (x >> 11) % m
        };
        (0..n)
            .map(|_| {
                let s = base + next(8 << CHUNK_BITS) as i64;
                let e = match next(20) {
                    0 => i64::MAX,
                    1 => s,
                    2 => s + next(3 << CHUNK_BITS) as i64,
                    _ => s + next(2_000_000) as i64,
                };
                (s, e)
            })
            .collect()
    }

    #[test]
    fn spans_written_out_sweep_as_those_kept() {
        let base = 1_700_000_000_000_000_000i64;
        let list = random_spans(6_000, base, 0x2545_f491_4f6c_dd1d);
        let (first, last) = (base + 1_000, base + (7 << CHUNK_BITS));
        let want = sorted_events(&list, first, last);
        // Three instances that write out past 2,000 bytes, each fed batches of 150 spans as the engine
        // merges a batch's instance, then merged in two orders (the files of one read by another).
        let told = |order: &mut dyn Iterator<Item = usize>| {
            let mut parts: Vec<Spans> = (0..3)
                .map(|_| Spans {
                    spilled: Spilled {
                        limit: 2_000,
                        ..Spilled::default()
                    },
                    ..Spans::default()
                })
                .collect();
            for (b, batch) in list.chunks(150).enumerate() {
                let mut one = Spans::default();
                for &(s, e) in batch {
                    one.push(s, e);
                }
                parts[b % 3].merge(one);
            }
            assert!(parts.iter().all(|p| !p.spilled.pieces.is_empty()));
            assert!(parts.iter().all(|p| p.kept_bytes() <= 2_000 + 150 * 20));
            let mut parts: Vec<Option<Spans>> = parts.into_iter().map(Some).collect();
            let mut whole = Spans::default();
            for i in order {
                if let Some(p) = parts[i].take() {
                    whole.merge(p);
                }
            }
            whole
        };
        for order in [[0, 1, 2], [2, 0, 1]] {
            let whole = told(&mut order.into_iter());
            assert_eq!(whole.len(), 6_000);
            // The others' bytes were copied to the file of the instance they were merged into.
            assert_eq!(whole.spilled.files.len(), 1);
            assert_eq!(whole.events(first, last).collect::<Vec<_>>(), want);
            // A clone shares the files it reads, and writes out to one of its own.
            let mut copy = whole.clone();
            copy.spilled.limit = 1;
            copy.merge(spans(&[(base, base + 10)]));
            let mut events = want.clone();
            events.extend([(first, 1), (first, 2)]);
            events.sort_unstable();
            assert_eq!(copy.events(first, last).collect::<Vec<_>>(), events);
            assert_eq!(whole.events(first, last).collect::<Vec<_>>(), want);
            let w = sweep(&whole, 1_000_000_000, first, last, true);
            assert!(!w.lost && w.max > 1);
        }
        // One instance that writes out merged into another that never did: the files follow.
        let mut kept = Spans::default();
        let mut out = Spans {
            spilled: Spilled {
                limit: 1,
                ..Spilled::default()
            },
            ..Spans::default()
        };
        out.merge(spans(&list[..3_000]));
        kept.merge(spans(&list[3_000..]));
        kept.merge(out);
        kept.spilled.limit = 1;
        kept.merge(Spans::default());
        assert_eq!(kept.kept_bytes(), 0);
        assert_eq!(kept.events(first, last).collect::<Vec<_>>(), want);
    }

    #[test]
    fn spans_stay_in_memory_without_a_scratch_file_and_a_piece_not_read_back_is_said() {
        let base = 1_700_000_000_000_000_000i64;
        let list = random_spans(2_000, base, 0x2545_f491_4f6c_dd1d);
        let (first, last) = (base, base + (8 << CHUNK_BITS));
        let want = sorted_events(&list, first, last);
        // No scratch file could be made: every span stays in memory, swept as ever.
        let mut kept = Spans {
            spilled: Spilled {
                limit: 1,
                failed: true,
                ..Spilled::default()
            },
            ..Spans::default()
        };
        kept.merge(spans(&list));
        assert!(kept.spilled.pieces.is_empty() && kept.kept_bytes() > 0);
        assert_eq!(kept.events(first, last).collect::<Vec<_>>(), want);
        assert!(!sweep(&kept, 1_000_000_000, first, last, true).lost);
        // A piece that cannot be read back (past the file's end) is left out, and said.
        let mut out = Spans {
            spilled: Spilled {
                limit: 1,
                ..Spilled::default()
            },
            ..Spans::default()
        };
        out.merge(spans(&list));
        let Some(p) = out.spilled.pieces.values_mut().flatten().next() else {
            panic!("nothing written out");
        };
        p.at += 1 << 40;
        assert!(sweep(&out, 1_000_000_000, first, last, true).lost);
        // Merged into an instance with a file of its own, the pieces that can be read are copied there;
        // the one that cannot stays where it was, still said when swept.
        let mut into = Spans {
            spilled: Spilled {
                limit: 1,
                ..Spilled::default()
            },
            ..Spans::default()
        };
        into.merge(spans(&list[..10]));
        into.merge(out);
        assert_eq!(into.spilled.files.len(), 2);
        assert!(sweep(&into, 1_000_000_000, first, last, true).lost);
    }

    #[test]
    fn a_span_costs_a_few_bytes() {
        // Requests of ~200 µs starting within a second: offset (<= 5 bytes) and length (3 bytes).
        let s = spans(
            &(0..1_000)
                .map(|i| {
                    let t = 1_700_000_000_000_000_000 + i * 900_000;
                    (t, t + 200_000)
                })
                .collect::<Vec<_>>(),
        );
        assert!(s.kept_bytes() <= 8 * 1_000, "{} bytes", s.kept_bytes());
    }
}
