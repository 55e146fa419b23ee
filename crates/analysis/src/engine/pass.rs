//! One pass over the inputs, batch by batch: a batch's scan, the proof of its splits' boundaries, and its
//! tracking.

use std::sync::Mutex;

use pcapsleuth_capture::{Capture, Damage, LinkType, ReaderState, Stream, Timestamp};
use pcapsleuth_flow::{decode, decode_segment, Decoded, FrameRef, IpReassembler, NotTcp};
use rayon::prelude::*;

use crate::events::Analysis;
use crate::facts::{FileFacts, PacketCounts};
use crate::mysql::PayloadHint;
use crate::phases::{Batch, Phases, Tasks};
use crate::timeline::TimeTally;

use super::event::PacketEvent;
use super::options::EngineOptions;
use super::scan::{reassembled_event, scan, EventLists, Piece, Scan};
use super::track::Bucket;

/// One input of a run.
pub(super) enum Source<'a> {
    Mapped(&'a Capture),
    Streamed(&'a mut Stream),
}

/// A window of a stream is this many bytes per thread (two splits per thread, as for mapped files), at
/// most [`BATCH_TARGET_BYTES`].
pub(super) const STREAM_WINDOW_PER_THREAD: usize = 32 << 20;

/// Runs the batch of `pending` pieces, then queues their pages for release during the next batch.
pub(super) fn flush<'a, A: Analysis>(
    run: &mut Pass<'_, A>,
    pending: &mut Vec<Piece<'a>>,
    read: &mut Vec<(&'a Capture, u64, u64)>,
) {
    if pending.is_empty() {
        return;
    }
    if run.opts.interrupted() {
        run.stopped = true;
        pending.clear();
        return;
    }
    let release = std::mem::take(read);
    run.batch(pending, &release);
    read.extend(
        pending
            .iter()
            .filter_map(|p| p.mapped.map(|cap| (cap, p.split.cut, p.split.end))),
    );
    pending.clear();
}

/// A task of a batch's scan phase.
enum ScanWork<'p, 'a> {
    /// Scan the `usize`th piece into these lists.
    Split(usize, &'p Piece<'a>, EventLists),
    /// Release pages the previous batch read.
    Release(&'p (&'p Capture, u64, u64)),
    /// Merge the previous batch's fold into the run's instance ([`Pass::unmerged`]).
    Merge,
}

/// One task per thread of the pool, each taking its work from a queue the phase's threads share
/// ([`next_of`]) until it is empty, so that a thread that runs out of large tasks takes the small ones
/// left: a phase lasts until its last task ends.
fn every_thread() -> rayon::iter::MaxLen<rayon::range::Iter<usize>> {
    (0..rayon::current_num_threads())
        .into_par_iter()
        .with_max_len(1)
}

/// The next item of a queue that the threads of a phase share (each takes the next when it is free).
fn next_of<T>(queue: &Mutex<std::vec::IntoIter<T>>) -> Option<T> {
    queue
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .next()
}

/// The state of one pass over a list of inputs: everything that lives across batches.
pub(super) struct Pass<'o, A: Analysis> {
    pub(super) opts: &'o EngineOptions,
    /// The bytes of each input read mapped (empty for a stream): where MySQL exchanges passed over lie.
    pub(super) mapped: Vec<&'o [u8]>,
    pub(super) batch_len: usize,
    pub(super) buckets: Vec<Bucket<A>>,
    /// Makes the analysis instances.
    pub(super) analyses: &'o (dyn Fn() -> A + Sync),
    /// The buckets' instances of the batches done, merged (but for [`Pass::unmerged`]).
    pub(super) analysis: A,
    /// The last batch's instances merged, not yet merged into [`Pass::analysis`]: that is done beside
    /// the next batch's scans, or at the end of the run (a merge of the run's large instance, one
    /// thread's work, made no thread wait for it). Merging commutes, so when is not seen in the result.
    pub(super) unmerged: Option<A>,
    pub(super) counts: PacketCounts,
    pub(super) first_ts: Option<Timestamp>,
    pub(super) last_ts: Option<Timestamp>,
    pub(super) damage: Vec<Damage>,
    pub(super) times: TimeTally,
    pub(super) frames: u64,
    pub(super) files: Vec<FileFacts>,
    /// Where reading stands: the state the next split must start in.
    pub(super) expected: Option<ReaderState>,
    pub(super) pool: Vec<EventLists>,
    pub(super) nbuckets: usize,
    /// The phase log (a developer's diagnostic; inert unless asked for).
    pub(super) phases: &'o Phases,
    /// IP fragments of datagrams not yet whole, across splits, batches and files.
    pub(super) fragments: IpReassembler,
    /// Whether a batch was left unread because the run was interrupted.
    pub(super) stopped: bool,
}

impl<A: Analysis> Pass<'_, A> {
    /// Puts the IP fragments of the batch's splits back together, in capture order (split after split,
    /// and with the fragments of earlier batches held in [`Pass::fragments`]), and adds each TCP segment a
    /// datagram made to its flow's bucket in the split of the fragment that completed it, at that
    /// fragment's frame. Runs between the phases, once the splits' boundaries are proven, so that every
    /// split count meets the same fragments in the same order. Apart, never inlined: most captures hold
    /// no fragment, and the batch's own code is the hot path's.
    #[inline(never)]
    fn reassemble(&mut self, scans: &mut [Scan<'_>], bases: &[u64], hints: bool) {
        for (sc, &base) in scans.iter_mut().zip(bases) {
            let mut made: Vec<(usize, PacketEvent)> = Vec::new();
            for fr in std::mem::take(&mut sc.fragments) {
                let at = FrameRef {
                    frame: base + u64::from(fr.frame_in_split) + 1,
                    ts: Timestamp(fr.ts),
                };
                let Some(data) = usize::try_from(fr.data_at)
                    .ok()
                    .and_then(|from| sc.bytes.get(from..from.checked_add(fr.data_len as usize)?))
                else {
                    continue;
                };
                let Decoded::Fragment(f) = decode(fr.link, data) else {
                    continue;
                };
                let start = sc.reassembled.len();
                let Some(datagram) = self.fragments.add(&f, at, fr.wire_len, &mut sc.reassembled)
                else {
                    continue;
                };
                let wire_len = u32::try_from(datagram.wire_len).unwrap_or(u32::MAX);
                // A tunnel reassembled may carry fragments of its own; they are put back together in
                // turn, at the same frame, as deep as the decoder follows tunnels.
                for _ in 0..4 {
                    match decode_segment(LinkType::RawIp, &sc.reassembled[start..]) {
                        Ok(seg) => {
                            let when = (fr.frame_in_split, fr.ts);
                            let (key, mut ev) = reassembled_event(
                                (&sc.reassembled, sc.bytes.len()),
                                &seg,
                                when,
                                wire_len,
                                hints,
                            );
                            // A flow seen in the split already gets a second id here, which tracking
                            // resolves to the same flow.
                            sc.keys.push(key);
                            ev.flow = (sc.keys.len() - 1) as u32;
                            made.push((key.bucket(self.nbuckets), ev));
                            break;
                        }
                        Err(NotTcp::Fragment) => {
                            // The fragment's bytes are taken out of the buffer the datagram it makes is
                            // written to.
                            let packet = sc.reassembled.split_off(start);
                            let Decoded::Fragment(inner) = decode(LinkType::RawIp, &packet) else {
                                break;
                            };
                            if self
                                .fragments
                                .add(&inner, at, fr.wire_len, &mut sc.reassembled)
                                .is_none()
                            {
                                break;
                            }
                        }
                        Err(_) => {
                            sc.reassembled.truncate(start);
                            break;
                        }
                    }
                }
            }
            if made.is_empty() {
                continue;
            }
            // Stable: a bucket's events stay in order of frame.
            made.sort_by_key(|(bucket, _)| *bucket);
            for run in made.chunk_by(|a, b| a.0 == b.0) {
                let events: Vec<PacketEvent> = run.iter().map(|(_, ev)| *ev).collect();
                sc.buckets.merge_in(run[0].0, &events);
            }
        }
    }

    /// Scans `pieces` in parallel (releasing `release` meanwhile), proves every boundary, and tracks the
    /// events. Returns the state reading ended in.
    pub(super) fn batch(
        &mut self,
        pieces: &[Piece<'_>],
        release: &[(&Capture, u64, u64)],
    ) -> ReaderState {
        let phases = self.phases;
        let hints = PayloadHint::wanted(self.opts.mysql, self.opts.mysql_depth);
        let scan_clock = phases.start();
        let (releases, scan_tasks, merged) = (phases.tasks(), phases.tasks(), phases.tasks());
        let mut scans = self.scan_phase(pieces, release, hints, [&releases, &scan_tasks, &merged]);
        let scan_wall = scan_clock.seconds();
        let serial_clock = phases.task();
        self.rescan_shrunk(pieces, &mut scans, hints);
        let bases = self.prove_boundaries(pieces, &mut scans, hints);
        if scans.iter().any(|sc| !sc.fragments.is_empty()) {
            self.reassemble(&mut scans, &bases, hints);
        }
        let serial = serial_clock.seconds();
        let track_clock = phases.start();
        let (track_tasks, merges) = (phases.tasks(), phases.tasks());
        let batch = self.track_phase(&scans, &bases, &track_tasks, &merges);
        self.pool
            .extend(scans.into_iter().map(|sc| sc.buckets.recycled()));
        let track_wall = track_clock.seconds();
        let fold_clock = phases.start();
        // Merged during the next batch's scans (the scans took the previous one).
        if let Some(earlier) = std::mem::replace(&mut self.unmerged, batch) {
            self.analysis.merge(earlier);
        }
        phases.batch(Batch {
            scan_wall,
            scan_tasks: scan_tasks.into_times(),
            releases: releases.into_times(),
            serial,
            track_wall,
            track_tasks: track_tasks.into_times(),
            fold_wall: fold_clock.seconds(),
            fold_tasks: merges.into_times(),
            last_merge: merged.into_times(),
        });
        self.expected
            .clone()
            .unwrap_or_else(|| pieces[0].split.start_state.clone())
    }

    /// Phase 1 of a batch: scans `pieces` in parallel, each into event lists of the pool, and releases
    /// the pages of `release` and merges the previous batch's instance ([`Pass::unmerged`]) meanwhile
    /// (timed in `releases`, `scan_tasks` and `merged`). Returns the scans in the pieces' order.
    fn scan_phase<'a>(
        &mut self,
        pieces: &[Piece<'a>],
        release: &[(&Capture, u64, u64)],
        hints: bool,
        [releases, scan_tasks, merged]: [&Tasks; 3],
    ) -> Vec<Scan<'a>> {
        let nbuckets = self.nbuckets;
        let lists: Vec<EventLists> = pieces
            .iter()
            .map(|_| self.pool.pop().unwrap_or_else(|| EventLists::new(nbuckets)))
            .collect();
        // One queue for the phase: each split followed by the release of one of the previous batch's
        // (split by split: one thread dropping a whole batch's page-table entries was the longest task
        // of a batch's scan once splits are small, with many cores). A thread takes the next task when
        // it is free, so a small release comes last, where a thread that ran out of splits would
        // otherwise wait for the other's last one; and the previous batch's pages go as this one's are
        // read, so that memory holds about one batch of pages. (Run beside the scans, the releases made
        // one thread start its splits late: the phase kept the cores 87% busy; after all the splits,
        // they kept two batches' pages at once, 16-64 MB more.)
        let mut releases_left = release.iter().map(ScanWork::Release);
        let mut work: Vec<ScanWork<'_, '_>> = Vec::with_capacity(pieces.len() + release.len() + 1);
        // The merge first: the longest task, and the scans fill in around it.
        let unmerged = self.unmerged.take();
        if unmerged.is_some() {
            work.push(ScanWork::Merge);
        }
        let to_merge = Mutex::new(unmerged.map(|u| (&mut self.analysis, u)));
        for (i, (p, lists)) in pieces.iter().zip(lists).enumerate() {
            work.push(ScanWork::Split(i, p, lists));
            work.extend(releases_left.next());
        }
        work.extend(releases_left);
        let queue = Mutex::new(work.into_iter());
        let mut scanned: Vec<(usize, Scan<'_>)> = every_thread()
            .flat_map_iter(|_| {
                let mut done = Vec::new();
                while let Some(w) = next_of(&queue) {
                    match w {
                        ScanWork::Split(i, p, lists) => done.push((
                            i,
                            scan_tasks.time(|| {
                                if let Some(cap) = p.mapped {
                                    cap.populate(p.split.cut, p.split.end);
                                }
                                scan(p, p.split.clone(), p.chunk.reader(&p.split), lists, hints)
                            }),
                        )),
                        ScanWork::Release((cap, from, to)) => {
                            releases.time(|| cap.release(*from, *to));
                        }
                        ScanWork::Merge => {
                            let taken = to_merge
                                .lock()
                                .unwrap_or_else(std::sync::PoisonError::into_inner)
                                .take();
                            if let Some((run, earlier)) = taken {
                                merged.time(|| run.merge(earlier));
                            }
                        }
                    }
                }
                done
            })
            .collect();
        scanned.sort_unstable_by_key(|(i, _)| *i);
        scanned.into_iter().map(|(_, sc)| sc).collect()
    }

    /// Reads again the splits of a mapped file that shrank while this batch was scanned.
    fn rescan_shrunk<'a>(&mut self, pieces: &[Piece<'a>], scans: &mut [Scan<'a>], hints: bool) {
        // A mapped file that shrank while this batch was scanned (logrotate's copytruncate) was read as
        // zeros past its new end: read again up to the end, which readers now stop at.
        for (i, piece) in pieces.iter().enumerate() {
            let Some(cap) = piece.mapped else { continue };
            let first_of_cap = pieces[..i].iter().all(|p| p.input != piece.input);
            if !first_of_cap {
                continue;
            }
            if let Some(shrank) = cap.recheck_size() {
                for (p, sc) in pieces.iter().zip(scans.iter_mut()) {
                    if p.input == piece.input && sc.end.offset > shrank.offset {
                        let chunk = cap.chunk();
                        let lists = std::mem::take(&mut sc.buckets);
                        *sc = scan(p, p.split.clone(), chunk.reader(&p.split), lists, hints);
                        sc.bytes = chunk.bytes;
                    }
                }
                self.damage.push(shrank.in_input(piece.input));
            }
        }
    }

    /// Proves each split's start against where the previous one ended (scanning it again from there
    /// where the resync guessed wrong), and adds each split's counts and times to the run's. Returns
    /// each split's first frame number less one.
    fn prove_boundaries<'a>(
        &mut self,
        pieces: &[Piece<'a>],
        scans: &mut [Scan<'a>],
        hints: bool,
    ) -> Vec<u64> {
        // A split is kept only if the previous one ended exactly where it began.
        let mut bases = Vec::with_capacity(scans.len());
        for (piece, sc) in pieces.iter().zip(scans.iter_mut()) {
            match &self.expected {
                Some(expected) if !piece.proven && !sc.split.continues(expected) => {
                    let split = sc.split.clone();
                    let chunk = match piece.mapped {
                        Some(cap) => cap.chunk(),
                        None => piece.chunk,
                    };
                    let reader = chunk.reader_after(expected.clone(), split.end);
                    let lists = std::mem::take(&mut sc.buckets);
                    *sc = scan(piece, split, reader, lists, hints);
                    sc.bytes = chunk.bytes;
                }
                _ => {}
            }
            self.expected = Some(sc.end.clone());
            self.times.append(&sc.times, self.frames);
            bases.push(self.frames);
            let file = &mut self.files[piece.input];
            if file.frames == 0 {
                file.first_frame = self.frames + 1;
            }
            file.frames += sc.frames;
            file.first_ts = file.first_ts.or(sc.first_ts);
            file.last_ts = sc.last_ts.or(file.last_ts);
            self.frames += sc.frames;
            self.counts.add(&sc.counts);
            self.first_ts = self.first_ts.or(sc.first_ts);
            self.last_ts = sc.last_ts.or(self.last_ts);
            self.damage
                .extend(sc.damage.iter().map(|d| d.clone().in_input(piece.input)));
        }
        bases
    }

    /// Phase 2 of a batch: tracks every bucket's events, the threads taking the buckets from one queue.
    /// Returns the batch's analysis instances merged (none if the pool had no thread).
    fn track_phase(
        &mut self,
        scans: &[Scan<'_>],
        bases: &[u64],
        track_tasks: &Tasks,
        merges: &Tasks,
    ) -> Option<A> {
        let opts = self.opts;
        let files = &self.mapped[..];
        // Each thread takes the next bucket from one queue, the buckets with the most events first (a
        // bucket's tracking takes about as long as its events), so that the small ones fill in at the
        // end: a phase lasts until its last task ends, and rayon's halving of the list would give one
        // thread the large buckets and the other the small ones. Each thread tracks into one analysis
        // instance, made as it starts, merged as a tree as the threads finish: an instance per bucket
        // would be several per thread and batch, each filling its maps and caches anew and merged, work
        // that grows with the number of buckets. The contract allows it: instances are per worker, and merging is commutative and
        // associative.
        let analyses = self.analyses;
        let mut order: Vec<(usize, usize, &mut Bucket<A>)> = self
            .buckets
            .iter_mut()
            .enumerate()
            .map(|(b, bucket)| {
                let events = scans
                    .iter()
                    .map(|sc| sc.buckets.blocks(b).iter().map(Vec::len).sum::<usize>())
                    .sum();
                (events, b, bucket)
            })
            .collect();
        order.sort_unstable_by(|x, y| y.0.cmp(&x.0).then(x.1.cmp(&y.1)));
        let queue = Mutex::new(order.into_iter());
        every_thread()
            .map(|_| {
                let mut analysis = analyses();
                while let Some((_, b, bucket)) = next_of(&queue) {
                    track_tasks.time(|| bucket.track(b, scans, bases, files, opts, &mut analysis));
                }
                analysis
            })
            .reduce_with(|mut a, b| {
                merges.time(|| a.merge(b));
                a
            })
    }
}
