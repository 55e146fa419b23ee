//! Cutting a capture into byte ranges that workers read independently.

use crate::{pcapng, Capture, Chunk, Format, ReaderState};

/// A byte range of the capture: the records whose first byte lies in `[start_state.offset, end)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Split {
    /// Position in the plan (0-based).
    pub index: usize,
    /// Where the planner cut (the resynchronised start is at or after it).
    pub cut: u64,
    /// Exclusive end of the range of record starts.
    pub end: u64,
    /// The resynchronised boundary; equal to `end` when no record starts in the range.
    pub start_state: ReaderState,
}

impl Split {
    /// Whether a reader that finished the previous split in state `prev_end` hands over to this split
    /// exactly. When it does not (a false resync, or pcapng interfaces defined mid-file), the split must
    /// be read again with [`Capture::reader_after`]`(prev_end, split.end)`.
    pub fn continues(&self, prev_end: &ReaderState) -> bool {
        // Exact equality only: when the previous split already read past this one's range, re-reading from
        // `prev_end` yields nothing and hands `prev_end` on, which is what an empty split must do.
        *prev_end == self.start_state
    }
}

impl Capture {
    /// Cuts the record area into `n` byte ranges (fewer when the file is small), each starting at the
    /// first offset from which a chain of valid records follows.
    pub fn plan_splits(&self, n: usize) -> Vec<Split> {
        self.chunk().plan_splits(&self.initial, n)
    }

    /// How many ranges [`Capture::plan_splits`]`(n)` makes: `n`, or fewer when the file is small.
    pub fn split_count(&self, n: usize) -> usize {
        self.chunk().split_count(&self.initial, n)
    }

    /// The range `i` of the `n` that [`Capture::plan_splits`] makes (`n` from
    /// [`Capture::split_count`]), planned alone: it touches only the pages at its own cut.
    pub fn plan_split(&self, n: usize, i: usize) -> Split {
        self.chunk().plan_split(&self.initial, n, i)
    }

    /// The first record boundary in `[from, limit)`, judged by a chain of plausible records.
    pub fn resync(&self, from: u64, limit: u64) -> Option<u64> {
        self.chunk()
            .resync(from, limit, self.initial.section.big_endian)
    }
}

impl Chunk<'_> {
    /// Cuts the chunk from `start` (a proven state: the capture's first record, or where the previous
    /// chunk's reading ended) to its end into `n` byte ranges (fewer when it is small). The first starts
    /// at `start`, the others at the first offset from which a chain of valid records follows.
    pub fn plan_splits(&self, start: &ReaderState, n: usize) -> Vec<Split> {
        let n = self.split_count(start, n);
        (0..n).map(|i| self.plan_split(start, n, i)).collect()
    }

    /// How many ranges [`Chunk::plan_splits`]`(start, n)` makes: `n`, or fewer when the chunk is small.
    pub fn split_count(&self, start: &ReaderState, n: usize) -> usize {
        let area = self.end().saturating_sub(start.offset.max(self.base));
        (n.max(1) as u64).min(area.max(1)) as usize
    }

    /// The range `i` of the `n` that [`Chunk::plan_splits`] makes (`n` from [`Chunk::split_count`]).
    /// Planning one reads only the bytes at its cut, so a reader can plan each range just before it
    /// reads it, instead of touching the pages around every cut of a large file at once.
    pub fn plan_split(&self, start: &ReaderState, n: usize, i: usize) -> Split {
        let first = start.offset.max(self.base);
        let area = self.end().saturating_sub(first);
        let n = n.max(1) as u128;
        let cut_at = |i: usize| first + (u128::from(area) * i as u128 / n) as u64;
        let (cut, end) = (cut_at(i), cut_at(i + 1));
        let offset = if i == 0 {
            Some(cut)
        } else {
            self.resync(cut, end, start.section.big_endian)
        };
        Split {
            index: i,
            cut,
            end,
            start_state: ReaderState {
                offset: offset.unwrap_or(end),
                section: start.section.clone(),
            },
        }
    }

    /// The first record boundary in `[from, limit)`, judged by a chain of plausible records; `big_endian`
    /// is the pcapng section's byte order.
    pub fn resync(&self, from: u64, limit: u64, big_endian: bool) -> Option<u64> {
        let index = |offset: u64| usize::try_from(offset.saturating_sub(self.base)).ok();
        let (from, limit) = (index(from)?, index(limit).unwrap_or(usize::MAX));
        match self.format {
            Format::Pcap(f) => f.resync(self.bytes, from, limit),
            Format::PcapNg => pcapng::resync(self.bytes, from, limit, big_endian),
        }
        .map(|p| self.base + p as u64)
    }
}

#[cfg(test)]
mod tests {
    //! Resynchronisation on real captures: from any byte of the record area, the first boundary found is
    //! the next record's start, and splits planned at any count read every record exactly once.
    use super::*;

    fn fixture(name: &str) -> Capture {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/");
        Capture::open(format!("{path}{name}")).expect("fixture")
    }

    /// The offset of every record, in order, as one reader walking the whole capture sees them.
    fn record_starts(cap: &Capture) -> Vec<u64> {
        let mut reader = cap.reader_all();
        let mut starts = Vec::new();
        loop {
            let at = reader.state().offset;
            if reader.next_record().is_none() {
                return starts;
            }
            starts.push(at);
        }
    }

    #[test]
    fn pcap_resync_from_any_byte_finds_the_next_record() {
        for name in ["vlan.pcap", "ipv6.pcap", "compressed.pcap"] {
            let cap = fixture(name);
            let starts = record_starts(&cap);
            assert!(starts.len() > 10, "{name}");
            for from in starts[0]..cap.len() {
                let next = starts.iter().copied().find(|&s| s >= from);
                assert_eq!(
                    cap.resync(from, cap.len()),
                    next,
                    "{name}: from byte {from}"
                );
            }
        }
    }

    #[test]
    fn pcapng_resync_from_any_byte_finds_a_block_at_or_before_the_next_packet() {
        let cap = fixture("any-cooked.pcapng");
        let starts = record_starts(&cap);
        assert!(starts.len() > 10);
        for from in starts[0]..cap.len() {
            let next = starts.iter().copied().find(|&s| s >= from);
            let found = cap.resync(from, cap.len());
            match (found, next) {
                // A block boundary: an interface or statistics block may come before the next packet.
                (Some(f), Some(n)) => assert!(f >= from && f <= n, "from {from}: {f} past {n}"),
                (found, None) => assert!(found.is_none_or(|f| f >= from), "from {from}"),
                (None, Some(n)) => panic!("from {from}: no boundary, but a packet starts at {n}"),
            }
        }
    }

    #[test]
    fn splits_at_any_count_read_every_record_once() {
        for name in ["vlan.pcap", "any-cooked.pcapng", "compressed.pcap"] {
            let cap = fixture(name);
            let whole = record_starts(&cap);
            for n in 1..=40 {
                let splits = cap.plan_splits(n);
                let mut read = Vec::new();
                for split in &splits {
                    let mut reader = cap.reader(split);
                    loop {
                        let at = reader.state().offset;
                        if reader.next_record().is_none() {
                            break;
                        }
                        read.push(at);
                    }
                }
                assert_eq!(read, whole, "{name}: {n} splits");
            }
        }
    }
}
