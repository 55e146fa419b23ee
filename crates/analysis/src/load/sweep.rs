//! Time spans (a request in flight, a connection open) kept compactly by when they start, and swept in
//! time order into per-interval levels: how many were present, integrated and at most.
//!
//! A span is told when it ends, in no order across connections, so the sweep can only run once every
//! span is known. Until then each costs a few bytes: grouped by the ~1.07 s chunk its start falls in,
//! its start within the chunk and its length as variable-length integers. The sweep decodes one chunk
//! at a time and holds the ends still to come in a heap, so besides the kept bytes it needs memory for
//! one chunk's spans and for the spans present at once, not for a sorted copy of every event.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

/// Bits of a start's offset within its chunk: chunks are 2^30 ns wide.
const CHUNK_BITS: u32 = 30;

/// Spans `[start, end)` in ns, `end == i64::MAX` for one that had not ended when the capture did.
#[derive(Debug, Clone, Default)]
pub(super) struct Spans {
    /// Per chunk of start times (`start >> CHUNK_BITS`): each span's offset in the chunk and its length
    /// (`end - start`, wrapping), LEB128 one after the other.
    chunks: BTreeMap<i64, Vec<u8>>,
    count: u64,
    unended: bool,
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
        put_varint(bytes, (start & ((1 << CHUNK_BITS) - 1)) as u64);
        put_varint(bytes, (end as u64).wrapping_sub(start as u64));
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

    /// Adds another instance's spans (the order within a chunk is the sweep's to sort).
    pub(super) fn merge(&mut self, o: Spans) {
        for (chunk, bytes) in o.chunks {
            match self.chunks.get_mut(&chunk) {
                Some(mine) => mine.extend_from_slice(&bytes),
                None => {
                    self.chunks.insert(chunk, bytes);
                }
            }
        }
        self.count += o.count;
        self.unended |= o.unended;
    }

    /// Bytes kept for the spans (the chunks' lengths, not their capacity).
    #[cfg(test)]
    pub(super) fn kept_bytes(&self) -> usize {
        self.chunks.values().map(Vec::len).sum()
    }

    /// The sweep's events in order, each span clamped to `[first, last]`: `(time, kind)`, where at one
    /// instant ends (0) come first, then starts (1), then the ends of spans that last an instant (2), so
    /// that back-to-back requests on a connection do not add up while a request of no measurable length
    /// still counts in the maximum.
    fn events(&self, first: i64, last: i64) -> Events<'_> {
        Events {
            chunks: self.chunks.iter(),
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
    chunks: std::collections::btree_map::Iter<'a, i64, Vec<u8>>,
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
        for (&chunk, bytes) in self.chunks.by_ref() {
            self.starts.clear();
            self.at = 0;
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
    sweep_events(
        spans.events(first, last).peekable(),
        interval_ns,
        first,
        with_bins,
    )
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
        // A linear congruential sequence: spans over several chunks, some long, some instants, some
        // unended, some outside [first, last].
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move |m: u64| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (x >> 11) % m
        };
        let base = 1_700_000_000_000_000_000i64;
        let list: Vec<(i64, i64)> = (0..5_000)
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
            .collect();
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
