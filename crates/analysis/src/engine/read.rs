//! Reading the run's sources (mapped files and stream windows) into batches of splits.

use pcapsleuth_capture::Capture;
use pcapsleuth_flow::IpReassembler;

use crate::events::Analysis;
use crate::facts::{FileFacts, PacketCounts, Stopped};
use crate::phases::Phases;
use crate::timeline::TimeTally;

use super::conclude::conclude_run;
use super::options::{batch_len, split_target, EngineOptions, BATCH_TARGET_BYTES};
use super::pass::{flush, Pass, Source, STREAM_WINDOW_PER_THREAD};
use super::scan::Piece;
use super::track::Bucket;
use super::{with_capture_secrets, Run};

/// Reads `sources` as one capture; the result holds the analysis instances merged, not yet finished.
pub(super) fn run_engine<A: Analysis>(
    sources: &mut [Source<'_>],
    opts: &EngineOptions,
    threads: usize,
    analyses: &(dyn Fn() -> A + Sync),
    progress: &(dyn Fn(u64, u64) + Sync),
    phases: &Phases,
) -> Run<A> {
    let with_secrets = with_capture_secrets(opts, sources);
    let opts = with_secrets.as_ref().unwrap_or(opts);
    let nbuckets = (threads * 8).max(16);
    let mapped: Vec<&[u8]> = sources
        .iter()
        .map(|s| match s {
            Source::Mapped(c) => {
                let cap: &Capture = c;
                cap.chunk().bytes
            }
            Source::Streamed(_) => &[][..],
        })
        .collect();
    let mut run = Pass {
        opts,
        mapped,
        batch_len: batch_len(threads),
        buckets: (0..nbuckets).map(|_| Bucket::new()).collect(),
        analyses,
        analysis: analyses(),
        unmerged: None,
        counts: PacketCounts::default(),
        first_ts: None,
        last_ts: None,
        damage: Vec::new(),
        times: TimeTally::default(),
        frames: 0,
        files: sources
            .iter()
            .map(|s| match s {
                Source::Mapped(c) => FileFacts::new(c.path(), c.format().describe(), c.len()),
                Source::Streamed(st) => {
                    FileFacts::new(st.path(), st.describe(), st.stored_len().unwrap_or(0))
                }
            })
            .collect(),
        expected: None,
        pool: Vec::new(),
        nbuckets,
        phases,
        fragments: IpReassembler::default(),
        stopped: false,
    };
    let release = read_sources(&mut run, sources, threads, progress);
    conclude_run(run, release, sources)
}

/// Reads every batch of `sources` (until the run is interrupted), telling `progress` after each. Returns
/// the pages of the last batch, not yet released.
fn read_sources<'x, A: Analysis>(
    run: &mut Pass<'_, A>,
    sources: &mut [Source<'x>],
    threads: usize,
    progress: &(dyn Fn(u64, u64) + Sync),
) -> Vec<(&'x Capture, u64, u64)> {
    let (opts, phases) = (run.opts, run.phases);
    let total: u64 = run.files.iter().map(|f| f.bytes).sum();
    let total_mapped: u64 = sources
        .iter()
        .map(|s| match s {
            Source::Mapped(c) => c.len(),
            Source::Streamed(_) => 0,
        })
        .sum();
    let mut done_before = 0u64;
    // Splits of consecutive mapped files are batched together, so that a set of small files is read in
    // parallel across files as well as within them.
    let mut pending: Vec<Piece<'_>> = Vec::new();
    // Pages of the batch tracked last, released while the next batch is scanned: dropping page-table
    // entries is kernel work that would otherwise hold up every thread between batches.
    let mut read: Vec<(&'x Capture, u64, u64)> = Vec::new();
    for (input, source) in sources.iter_mut().enumerate() {
        match source {
            Source::Mapped(cap) => {
                let cap: &'x Capture = cap;
                let auto = (run.batch_len as u64)
                    .max(cap.len().div_ceil(split_target(run.batch_len)))
                    as usize;
                let n = match opts.splits {
                    // An exact count is spread over the mapped files by size (at least one each).
                    Some(n) => {
                        (u128::from(cap.len()) * n as u128 / u128::from(total_mapped.max(1))).max(1)
                            as usize
                    }
                    None => auto,
                };
                // Each split is planned just before its batch: planning touches the pages at its cut,
                // which its batch then reads and releases (planning every cut at once would map the
                // pages at every cut of a large file, many times a page with the page cache's large
                // folios).
                let n = cap.split_count(n.max(1));
                for i in 0..n {
                    if run.stopped {
                        break;
                    }
                    let planning = phases.task();
                    let split = cap.plan_split(n, i);
                    phases.planned(planning.seconds());
                    let split_end = split.end;
                    pending.push(Piece {
                        input,
                        chunk: cap.chunk(),
                        proven: i == 0,
                        split,
                        mapped: Some(cap),
                    });
                    if pending.len() == run.batch_len {
                        flush(run, &mut pending, &mut read);
                        progress(done_before + split_end, total);
                    }
                }
                flush(run, &mut pending, &mut read);
                done_before += cap.len();
                progress(done_before, total);
            }
            Source::Streamed(stream) => {
                flush(run, &mut pending, &mut read);
                let window_len = match opts.stream_window {
                    0 => {
                        (STREAM_WINDOW_PER_THREAD * threads.max(1)).min(BATCH_TARGET_BYTES as usize)
                    }
                    n => n,
                };
                let n = opts.splits.unwrap_or(run.batch_len).max(1);
                stream.interrupt_with(opts.interrupt.clone());
                let read_all = stream.read_windows(window_len, |w| {
                    if run.opts.interrupted() {
                        return Err(Stopped {
                            frames_read: run.frames,
                        });
                    }
                    let pieces: Vec<Piece<'_>> = w
                        .chunk
                        .plan_splits(&w.start, n)
                        .into_iter()
                        .enumerate()
                        .map(|(i, split)| Piece {
                            input,
                            chunk: w.chunk,
                            proven: i == 0,
                            split,
                            mapped: None,
                        })
                        .collect();
                    let end = run.batch(&pieces, &std::mem::take(&mut read));
                    run.damage
                        .extend(w.damage.iter().map(|d| d.clone().in_input(input)));
                    progress(done_before + w.stored_read, total);
                    Ok(end)
                });
                run.stopped |= read_all.is_err() || stream.interrupted();
                done_before += stream.stored_len().unwrap_or(0);
            }
        }
        if run.stopped {
            break;
        }
    }
    read
}
