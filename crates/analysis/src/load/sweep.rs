//! Time spans (a request in flight, a connection open) kept compactly, and swept in time order into
//! per-interval levels: how many were present, integrated and at most.
//!
//! A span is told when it ends, in no order across connections, so the sweep can only run once every
//! span is known: which interval is final is not known before the end, nor is the capture's body the
//! spans are clamped to (chosen at the end from every timestamp), and a timestamp read later may step
//! back before any interval swept. Until then each span costs a few bytes: its start as the difference
//! from the start told before it and its length, as variable-length integers, in the order told. Past
//! [`SPILL_AT`] bytes in memory they are sorted by start and written as one *run* to an unnamed scratch
//! file (deleted when closed), so that memory grows neither with the number of spans nor with the
//! time they cover; where no scratch file can be written they stay in memory. The sweep merges the
//! runs (each read through a small buffer) with the spans still in memory, and holds the ends still to
//! come in a heap: besides the bytes in memory it needs a buffer per run and the spans present at once.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use rayon::slice::ParallelSliceMut;

use crate::widening::{BinMemo, BinWidth};

/// Bytes of spans kept in memory (about a million spans) before they are written out as a run.
const SPILL_AT: usize = 8 << 20;

/// Bytes of a run read back at once by the sweep.
const READ_AHEAD: usize = 64 << 10;

/// Bytes copied at once when another instance's runs are copied to this one's file.
const COPY_BLOCK: u64 = 1 << 20;

/// Spans `[start, end)` in ns, `end == i64::MAX` for one that had not ended when the capture did.
#[derive(Debug, Clone, Default)]
pub(super) struct Spans {
    /// The spans told and not yet written out, in the order told: each start's difference from the
    /// one before it (zigzag, the first from 0) and its length (`end - start`, wrapping), LEB128.
    fresh: Vec<u8>,
    /// The start of the last span in `fresh` (0 when it is empty).
    fresh_last: i64,
    /// The runs written out.
    spilled: Spilled,
    count: u64,
    unended: bool,
}

/// A run written out: spans sorted by start, at `at..at + len` of a file of [`Spilled::files`], each
/// start as the difference from the one before it (the first from 0, wrapping) and its length, LEB128.
#[derive(Debug, Clone, Copy)]
struct Run {
    file: u32,
    at: u64,
    len: u64,
}

/// Spans written out of memory, in unnamed scratch files.
#[derive(Debug, Clone, Default)]
struct Spilled {
    /// The files: the last one is written to while no clone of the spans shares it (a clone, or a merge
    /// of another instance's, brings files that are only read).
    files: Vec<Arc<File>>,
    /// Bytes written to the last file.
    written: u64,
    runs: Vec<Run>,
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

    /// Appends `bytes` as a run to the file written to; false (nothing kept) when it cannot be.
    fn write_run(&mut self, bytes: &[u8]) -> bool {
        let Some((file, handle)) = self.writable() else {
            return false;
        };
        if handle.write_all_at(bytes, self.written).is_err() {
            return false;
        }
        self.runs.push(Run {
            file,
            at: self.written,
            len: bytes.len() as u64,
        });
        self.written += bytes.len() as u64;
        true
    }

    /// Copies `r` of `from` to the end of `to` (the file written to, index `file`).
    fn copy(&mut self, r: Run, from: &[Arc<File>], (file, to): &(u32, Arc<File>)) -> Option<Run> {
        let src = from.get(r.file as usize)?;
        let mut block = vec![0; COPY_BLOCK.min(r.len) as usize];
        let mut done = 0;
        while done < r.len {
            let n = COPY_BLOCK.min(r.len - done) as usize;
            src.read_exact_at(&mut block[..n], r.at + done).ok()?;
            to.write_all_at(&block[..n], self.written + done).ok()?;
            done += n as u64;
        }
        let copied = Run {
            file: *file,
            at: self.written,
            len: r.len,
        };
        self.written += r.len;
        Some(copied)
    }

    /// Takes another instance's files and runs. Their bytes are copied to the file this instance
    /// appends to, so that a run holds one scratch file open however many instances wrote out; those
    /// that cannot be copied are read from the other's file from here on, and the last of this
    /// instance's files stays the last, the one appended to (the other's, when this one has none).
    fn take(&mut self, o: Spilled) {
        if o.files.is_empty() {
            return;
        }
        if self.files.is_empty() {
            self.files = o.files;
            self.runs = o.runs;
            self.written = o.written;
            return;
        }
        let target = self.writable();
        let mut left = Vec::new();
        for r in o.runs {
            match target.as_ref().and_then(|t| self.copy(r, &o.files, t)) {
                Some(c) => self.runs.push(c),
                None => left.push(r),
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
        for r in &mut self.runs {
            if r.file == at {
                r.file = at + theirs;
            }
        }
        self.runs.extend(left.into_iter().map(|r| Run {
            file: r.file + at,
            ..r
        }));
        self.files.extend(o.files);
        self.files.push(mine);
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

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// The next span of `fresh` bytes at `*at`, whose previous start was `*prev`.
fn next_fresh(bytes: &[u8], at: &mut usize, prev: &mut i64) -> Option<(i64, i64)> {
    let delta = unzigzag(get_varint(bytes, at)?);
    let len = get_varint(bytes, at)?;
    let start = prev.wrapping_add(delta);
    *prev = start;
    Some((start, (start as u64).wrapping_add(len) as i64))
}

impl Spans {
    /// Keeps `[start, end)`; `end` is at least `start`.
    pub(super) fn push(&mut self, start: i64, end: i64) {
        self.encode(start, end);
        self.count += 1;
        self.unended |= end == i64::MAX;
    }

    /// Writes `[start, end)` after the spans in memory.
    #[inline]
    fn encode(&mut self, start: i64, end: i64) {
        put_varint(&mut self.fresh, zigzag(start.wrapping_sub(self.fresh_last)));
        put_varint(&mut self.fresh, (end as u64).wrapping_sub(start as u64));
        self.fresh_last = start;
    }

    /// Spans kept.
    pub(super) fn len(&self) -> u64 {
        self.count
    }

    /// Whether a span had not ended when the capture did.
    pub(super) fn any_unended(&self) -> bool {
        self.unended
    }

    /// Adds another instance's spans (their order is the sweep's to sort), and writes the spans in
    /// memory out when they are more than the limit.
    pub(super) fn merge(&mut self, o: Spans) {
        // The other's first start is told from 0: told again from this one's last, the rest follow.
        let (mut at, mut prev) = (0, 0);
        if let Some((start, end)) = next_fresh(&o.fresh, &mut at, &mut prev) {
            self.encode(start, end);
            self.fresh.extend_from_slice(&o.fresh[at..]);
            self.fresh_last = o.fresh_last;
        }
        self.spilled.failed |= o.spilled.failed;
        self.spilled.take(o.spilled);
        self.count += o.count;
        self.unended |= o.unended;
        let limit = match self.spilled.limit {
            0 => SPILL_AT,
            n => n,
        };
        if self.fresh.len() > limit {
            self.spill();
        }
    }

    /// The spans in memory, sorted by start (then end).
    fn fresh_sorted(&self) -> Vec<(i64, i64)> {
        let (mut at, mut prev) = (0, 0);
        let mut spans = Vec::new();
        while let Some(s) = next_fresh(&self.fresh, &mut at, &mut prev) {
            spans.push(s);
        }
        // About a million spans when they are written out, sorted during a batch's scans (the run's
        // instance writes them out as it merges the batch before): in parallel, so that the threads that
        // finish their scans first sort too.
        spans.par_sort_unstable();
        spans
    }

    /// Writes the spans in memory to the scratch file as one run (kept in memory where it cannot be
    /// written).
    fn spill(&mut self) {
        if self.spilled.failed {
            return;
        }
        let mut run = Vec::with_capacity(self.fresh.len() + self.fresh.len() / 4);
        let mut prev = 0i64;
        for (start, end) in self.fresh_sorted() {
            put_varint(&mut run, (start as u64).wrapping_sub(prev as u64));
            put_varint(&mut run, (end as u64).wrapping_sub(start as u64));
            prev = start;
        }
        if self.spilled.write_run(&run) {
            // Emptied, not kept: the memory is for the next run's spans.
            self.fresh = Vec::new();
            self.fresh_last = 0;
        } else {
            self.spilled.failed = true;
        }
    }

    /// Bytes kept in memory for the spans (their length, not their capacity).
    #[cfg(test)]
    pub(super) fn kept_bytes(&self) -> usize {
        self.fresh.len()
    }

    /// The sweep's events in order, each span clamped to `[first, last]`: `(time, kind)`, where at one
    /// instant ends (0) come first, then starts (1), then the ends of spans that last an instant (2), so
    /// that back-to-back requests on a connection do not add up while a request of no measurable length
    /// still counts in the maximum.
    fn events(&self, first: i64, last: i64) -> Events<'_> {
        let mut sources = vec![Source::Memory(self.fresh_sorted().into_iter())];
        sources.extend(self.spilled.runs.iter().map(|&r| {
            Source::Run(RunReader {
                file: self.spilled.files.get(r.file as usize).map(Arc::as_ref),
                at: r.at,
                end: r.at.saturating_add(r.len),
                bytes: Vec::new(),
                pos: 0,
                prev: 0,
            })
        }));
        let mut events = Events {
            sources,
            heads: BinaryHeap::new(),
            lost: false,
            ends: BinaryHeap::new(),
            first,
            last,
        };
        for i in 0..events.sources.len() {
            events.advance(i);
        }
        events
    }
}

/// A run read back through a buffer of [`READ_AHEAD`] bytes.
struct RunReader<'a> {
    /// `None` when the run's file is not known (it cannot be read).
    file: Option<&'a File>,
    /// The next byte to read, and the run's end, in the file.
    at: u64,
    end: u64,
    bytes: Vec<u8>,
    pos: usize,
    prev: i64,
}

impl RunReader<'_> {
    /// The next span; `Err` when the run could not be read to its end (what was read stays).
    fn next(&mut self) -> Result<Option<(i64, i64)>, ()> {
        // A span is at most 20 bytes: read more once fewer are left, unless the run has no more.
        if self.bytes.len() - self.pos < 20 && self.at < self.end {
            self.bytes.drain(..self.pos);
            self.pos = 0;
            let have = self.bytes.len();
            let n = (READ_AHEAD as u64).min(self.end - self.at) as usize;
            self.bytes.resize(have + n, 0);
            let read = self
                .file
                .is_some_and(|f| f.read_exact_at(&mut self.bytes[have..], self.at).is_ok());
            if !read {
                self.bytes.truncate(have);
                self.at = self.end;
                return Err(());
            }
            self.at += n as u64;
        }
        if self.pos == self.bytes.len() {
            return Ok(None);
        }
        let mut at = self.pos;
        let (Some(delta), Some(len)) = (
            get_varint(&self.bytes, &mut at),
            get_varint(&self.bytes, &mut at),
        ) else {
            // The run's own bytes end in a cut span only if they were not written whole.
            self.pos = self.bytes.len();
            return Err(());
        };
        self.pos = at;
        let start = (self.prev as u64).wrapping_add(delta) as i64;
        self.prev = start;
        Ok(Some((start, (start as u64).wrapping_add(len) as i64)))
    }
}

/// Where the sweep's spans come from, each in order of start.
enum Source<'a> {
    Memory(std::vec::IntoIter<(i64, i64)>),
    Run(RunReader<'a>),
}

/// The events of [`Spans`] in `(time, kind)` order: the starts of every source merged in order
/// (clamping keeps them in order), merged with the ends of the spans already started.
struct Events<'a> {
    sources: Vec<Source<'a>>,
    /// Each source's next span, clamped, with the source's index.
    heads: BinaryHeap<Reverse<(i64, i64, usize)>>,
    /// Whether a run written out could not be read back (whole).
    lost: bool,
    ends: BinaryHeap<Reverse<(i64, u8)>>,
    first: i64,
    last: i64,
}

impl Events<'_> {
    /// Puts the next span of source `i` among the heads.
    fn advance(&mut self, i: usize) {
        let next = match &mut self.sources[i] {
            Source::Memory(spans) => spans.next(),
            Source::Run(run) => run.next().unwrap_or_else(|()| {
                self.lost = true;
                None
            }),
        };
        if let Some((s, e)) = next {
            self.heads.push(Reverse((
                s.clamp(self.first, self.last),
                e.clamp(self.first, self.last),
                i,
            )));
        }
    }
}

impl Iterator for Events<'_> {
    type Item = (i64, u8);

    fn next(&mut self) -> Option<(i64, u8)> {
        let Some(&Reverse((s, e, i))) = self.heads.peek() else {
            return self.ends.pop().map(|Reverse(e)| e);
        };
        if let Some(&Reverse(end)) = self.ends.peek() {
            if end < (s, 1) {
                self.ends.pop();
                return Some(end);
            }
        }
        self.heads.pop();
        self.advance(i);
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
    // Events come in time order: a bin is worked out once, not once per event.
    let (width, mut at) = (BinWidth::new(interval_ns), BinMemo::default());
    let (mut level, mut area, mut max, mut max_at) = (0u64, 0u128, 0u64, 0i64);
    let mut prev = first;
    while let Some(&(t, _)) = events.peek() {
        if level > 0 && t > prev {
            area += u128::from(level) * (t - prev) as u128;
            if with_bins {
                let mut a = prev;
                while a < t {
                    let bin = at.bin(width, a);
                    let b_end = at.end().min(t);
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
            let c = cell(&mut bins, at.bin(width, t));
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

    /// About a second: the spread of the tests' spans is counted in these.
    const CHUNK_BITS: u32 = 30;

    fn spans(list: &[(i64, i64)]) -> Spans {
        let mut s = Spans::default();
        for &(a, b) in list {
            s.push(a, b);
        }
        s
    }

    /// Every event at once, sorted: what the merged sweep must reproduce.
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
    fn merged_events_are_the_sorted_events_in_any_order_and_merge() {
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

    /// `n` spans of a linear congruential sequence from `seed` over several seconds: some long, some
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
            assert!(parts.iter().all(|p| !p.spilled.runs.is_empty()));
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
    fn spans_stay_in_memory_without_a_scratch_file_and_a_run_not_read_back_is_said() {
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
        assert!(kept.spilled.runs.is_empty() && kept.kept_bytes() > 0);
        assert_eq!(kept.events(first, last).collect::<Vec<_>>(), want);
        assert!(!sweep(&kept, 1_000_000_000, first, last, true).lost);
        // A run that cannot be read back (past the file's end) is left out, and said.
        let mut out = Spans {
            spilled: Spilled {
                limit: 1,
                ..Spilled::default()
            },
            ..Spans::default()
        };
        out.merge(spans(&list));
        let Some(p) = out.spilled.runs.first_mut() else {
            panic!("nothing written out");
        };
        p.at += 1 << 40;
        assert!(sweep(&out, 1_000_000_000, first, last, true).lost);
        // Merged into an instance with a file of its own, the runs that can be read are copied there;
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

    #[test]
    fn a_trickle_of_twelve_days_keeps_memory_for_its_spans_not_for_its_days() {
        // One request of 200 µs a second for 12 days, told in batches of an hour as the engine merges
        // them: a few bytes per span in memory until the limit, then written out; the memory kept does
        // not depend on how many seconds the spans cover (it did, a map entry per second, before).
        // Days from the epoch, so that the spans fill twelve whole days.
        let base = 19_676 * 86_400 * 1_000_000_000i64;
        let mut whole = Spans {
            spilled: Spilled {
                limit: 1 << 20,
                ..Spilled::default()
            },
            ..Spans::default()
        };
        let days = 12 * 86_400i64;
        for hour in 0..days / 3_600 {
            let mut one = Spans::default();
            for s in hour * 3_600..(hour + 1) * 3_600 {
                let t = base + s * 1_000_000_000;
                one.push(t, t + 200_000);
            }
            whole.merge(one);
        }
        assert_eq!(whole.len(), days as u64);
        assert!(whole.kept_bytes() <= (1 << 20) + 3_600 * 20);
        let runs = whole.spilled.runs.len();
        assert!((6..=9).contains(&runs), "{runs} runs");
        let (first, last) = (base, base + days * 1_000_000_000);
        let w = sweep(&whole, 86_400_000_000_000, first, last, true);
        assert!(!w.lost);
        assert_eq!((w.max, w.area), (1, days as u128 * 200_000));
        assert_eq!(w.bins.len(), 12);
        assert!(w
            .bins
            .values()
            .all(|b| b.area == 86_400 * 200_000 && b.max == 1));
    }
}
