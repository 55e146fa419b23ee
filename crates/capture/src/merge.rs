//! Files captured at the same time (on several interfaces, or several hosts) merged into one capture in
//! time order, as `mergecap` merges files by default: the next record is always the earliest of the
//! files' next records, the earlier file (in the set's order) first on equal times. The merged capture is
//! produced as bytes (the files' shared preamble, then whole records copied from the mappings), read as a
//! [`crate::Stream`], so the engine analyses it in parallel windows while the merge runs ahead on its own
//! thread. Frame numbers are then those of `mergecap -w merged.pcap FILES`.

use std::io::{self, Read};
use std::sync::Arc;

use crate::{Capture, Damage, DamageKind, LateDamage, ReaderState, Timestamp};

/// Pages of a file already merged are released every this many bytes.
const RELEASE_STEP: u64 = 64 << 20;

/// One file of a merge and where reading it stands.
struct Source {
    cap: Capture,
    state: ReaderState,
    /// The next record: time, and where it lies in the file.
    next: Option<(Timestamp, u64, u64)>,
    released: u64,
}

impl Source {
    /// Reads the next record's place, recording any damage met on the way.
    fn advance(&mut self, damage: &LateDamage, merged_at: u64) {
        let mut reader = self.cap.reader_after(self.state.clone(), self.cap.len());
        self.next = reader
            .next_record()
            .map(|r| (r.ts, r.offset, r.offset + r.raw.len() as u64));
        self.state = reader.state();
        let found = reader.take_damage();
        if !found.is_empty() {
            if let Ok(mut all) = damage.lock() {
                all.extend(found.into_iter().map(|d| Damage {
                    input: 0,
                    offset: merged_at,
                    kind: DamageKind::InMergedFile {
                        file: self.cap.path().to_path_buf(),
                        damage: Box::new(d),
                    },
                }));
            }
        }
        if self.state.offset >= self.released + RELEASE_STEP {
            self.cap.release_before(self.state.offset);
            self.released = self.state.offset;
        }
    }
}

/// The merged capture's bytes, see the module documentation.
pub(crate) struct Merge {
    sources: Vec<Source>,
    /// The preamble, then each record in turn: what is still to hand out of it.
    preamble: Vec<u8>,
    preamble_sent: usize,
    /// The record being handed out: its file, and the part of it not yet handed out.
    current: Option<(usize, u64, u64)>,
    /// Bytes handed out so far (the merged capture's offset).
    sent: u64,
    damage: LateDamage,
}

impl Merge {
    /// Merges `caps`, which share a preamble (the first one's is written).
    pub(crate) fn new(caps: Vec<Capture>) -> Self {
        let damage = LateDamage::default();
        let preamble = caps.first().map_or(Vec::new(), |c| c.preamble().to_vec());
        let sources = caps
            .into_iter()
            .map(|cap| {
                let mut s = Source {
                    state: cap.initial_state().clone(),
                    cap,
                    next: None,
                    released: 0,
                };
                s.advance(&damage, 0);
                s
            })
            .collect();
        Merge {
            sources,
            preamble,
            preamble_sent: 0,
            current: None,
            sent: 0,
            damage,
        }
    }

    /// Where damage found in the files is recorded.
    pub(crate) fn damage(&self) -> LateDamage {
        Arc::clone(&self.damage)
    }

    /// The file whose next record is the earliest (the first such file on equal times), moved past it.
    fn pick(&mut self) -> Option<(usize, u64, u64)> {
        let (i, _) = self
            .sources
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.next.map(|(ts, _, _)| (i, ts)))
            .min_by_key(|&(i, ts)| (ts, i))?;
        let (_, from, to) = self.sources[i].next?;
        self.sources[i].advance(&self.damage, self.sent);
        Some((i, from, to))
    }
}

impl Read for Merge {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut n = 0;
        while n < buf.len() {
            if self.preamble_sent < self.preamble.len() {
                let rest = &self.preamble[self.preamble_sent..];
                let k = rest.len().min(buf.len() - n);
                buf[n..n + k].copy_from_slice(&rest[..k]);
                self.preamble_sent += k;
                self.sent += k as u64;
                n += k;
                continue;
            }
            let Some((i, from, to)) = self.current.take().or_else(|| self.pick()) else {
                break;
            };
            let bytes = self.sources[i].cap.bytes();
            let record = usize::try_from(from)
                .ok()
                .zip(usize::try_from(to).ok())
                .and_then(|(a, b)| bytes.get(a..b))
                .unwrap_or(&[]);
            let k = record.len().min(buf.len() - n);
            buf[n..n + k].copy_from_slice(&record[..k]);
            self.sent += k as u64;
            n += k;
            if k < record.len() {
                self.current = Some((i, from + k as u64, to));
            }
        }
        Ok(n)
    }
}
