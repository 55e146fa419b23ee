//! The split engine: read a capture in parallel byte-range splits, follow every TCP connection in capture
//! order, and produce the same result whatever the number of splits.
//!
//! Two phases run per batch of splits:
//! 1. **Scan** (one task per split): walk the split's records, decode each, give each flow a split-local
//!    id, and append a compact [`PacketEvent`] to the list of the flow's *bucket* (a hash of its 4-tuple).
//! 2. **Track** (one task per bucket): for every split in file order, feed the bucket's events to each
//!    flow's TCP tracker and MySQL decoder (stream reassembly, session), which live across batches, and
//!    tell the bucket's [`Analysis`] instance what they saw (segments, transactions, closes, ends).
//!
//! A flow is always fed by one task, in capture order, with its whole history: a connection spanning
//! splits is tracked exactly as in one piece, so split invariance holds by construction rather than by
//! merging partial states. Between the phases, each split's starting boundary is checked against where
//! the previous split really ended ([`pcapsleuth_capture::Split::continues`]) and re-read if the resync
//! guessed wrong. Each thread takes the next bucket to track from one queue (the buckets with the most
//! events first) and tells one analysis instance of its own; the instances are merged into one as the
//! threads finish (merging is commutative, so the order does not matter); the next batch makes fresh
//! ones. Memory holds one batch of events, the open flows' state, the concluded
//! connections' facts and the aggregates, never the file: pages already read are released, and a
//! connection's decoder is freed when the connection ends.

mod conclude;
mod event;
pub mod events;
mod flow;
mod options;
mod pass;
mod prefetch;
mod read;
mod scan;
#[cfg(test)]
mod tests;
mod track;

use pcapsleuth_capture::{Capture, CaptureSet, Input};
use pcapsleuth_flow::ConnectionTable;

use crate::events::Analysis;
use crate::facts::CaptureFacts;
use crate::mysql::{MysqlDetection, MysqlSessionFacts};
use crate::phases::Phases;

pub use options::{EngineOptions, BATCH_TARGET_BYTES, SPLIT_TARGET_BYTES};
use pass::Source;
use read::run_engine;

/// The result of one run over a capture: what the capture was, every connection in it, and the output
/// of the analyses the run was given.
#[derive(Debug, Clone, PartialEq)]
pub struct Run<O> {
    /// What the capture was: format and files, packets by kind, time span, damage met.
    pub capture: CaptureFacts,
    /// Every TCP connection, in order of its first packet, with its roles decided from the whole
    /// capture (its own handshake, else a server that accepted a handshake elsewhere, else the ports);
    /// kept packed, each read back as a [`pcapsleuth_flow::Connection`] when asked for.
    pub connections: ConnectionTable,
    /// MySQL facts of each connection (same index as `connections`; `None` when it is not MySQL).
    pub mysql_sessions: Vec<Option<Box<MysqlSessionFacts>>>,
    /// Which connections were decoded as MySQL: with [`MysqlDetection::Off`] no close can be read in
    /// MySQL terms.
    pub mysql_detection: MysqlDetection,
    /// What the analyses found ([`Analysis::Output`]).
    pub output: O,
}

impl<O> Run<O> {
    /// The same run with its output replaced by `f(output)`.
    pub fn map<P>(self, f: impl FnOnce(O) -> P) -> Run<P> {
        Run {
            capture: self.capture,
            connections: self.connections,
            mysql_sessions: self.mysql_sessions,
            mysql_detection: self.mysql_detection,
            output: f(self.output),
        }
    }
}

/// What a run reads: one capture file, or a set of files read as one capture ([`CaptureSet`]: a rotated
/// set, compressed files, a pipe).
pub enum Inputs<'a> {
    /// One capture file, mapped.
    File(&'a Capture),
    /// A set of files read as one capture, in time order.
    Set(&'a mut CaptureSet),
}

impl<'a> From<&'a Capture> for Inputs<'a> {
    fn from(cap: &'a Capture) -> Self {
        Inputs::File(cap)
    }
}

impl<'a> From<&'a mut CaptureSet> for Inputs<'a> {
    fn from(set: &'a mut CaptureSet) -> Self {
        Inputs::Set(set)
    }
}

/// Reads a capture (a file, or a set of files read as one: see [`Inputs`]), tracks every TCP connection
/// in it, and runs the analysis `analyses` makes (called once per worker and batch: see [`Analysis`]) on
/// them. [`analyze_set`] does the same for a set and tells how far it is.
///
/// ```no_run
/// use pcapsleuth_analysis::{analyze, first_reset, EngineOptions, MysqlStatistics};
/// let cap = pcapsleuth_capture::Capture::open("fixtures/err1146-storm.pcap")?;
/// let run = analyze(&cap, &EngineOptions::default(), MysqlStatistics::default);
/// println!("{} requests", run.output.requests().total());
/// # Ok::<(), pcapsleuth_capture::CaptureError>(())
/// ```
pub fn analyze<'a, A: Analysis>(
    inputs: impl Into<Inputs<'a>>,
    opts: &EngineOptions,
    analyses: impl Fn() -> A + Sync,
) -> Run<A::Output> {
    let cap = match inputs.into() {
        Inputs::File(cap) => cap,
        Inputs::Set(set) => return analyze_set(set, opts, analyses, |_, _| {}),
    };
    let phases = Phases::new(opts.phase_log);
    let (run, threads, pool) = in_pool(opts, &phases, |threads| {
        run_engine(
            &mut [Source::Mapped(cap)],
            opts,
            threads,
            &analyses,
            &|_, _| {},
            &phases,
        )
    });
    finish(run, &phases, threads, pool)
}

/// Finishes the analyses of `run` (and prints the phase log, when asked for).
fn finish<A: Analysis>(
    run: Run<A>,
    phases: &Phases,
    threads: usize,
    pool: usize,
) -> Run<A::Output> {
    let clock = phases.task();
    let capture = run.capture.clone();
    let run = run.map(|a| a.finish(&capture));
    phases.print(threads, pool, clock.seconds());
    run
}

/// Reads a set of files as one capture ([`CaptureSet`]: a rotated set, compressed files, a pipe), tracks
/// every TCP connection across them and runs the analysis `analyses` makes on them, calling
/// `progress(bytes_done, bytes_total)` after each batch (bytes as stored; the total counts what is
/// known, pipes have none).
pub fn analyze_set<A: Analysis>(
    set: &mut CaptureSet,
    opts: &EngineOptions,
    analyses: impl Fn() -> A + Sync,
    progress: impl Fn(u64, u64) + Sync,
) -> Run<A::Output> {
    let mut sources: Vec<Source<'_>> = set
        .inputs
        .iter_mut()
        .map(|i| match i {
            Input::Mapped(c) => Source::Mapped(c),
            Input::Streamed(s) => Source::Streamed(s),
        })
        .collect();
    let phases = Phases::new(opts.phase_log);
    let (mut run, threads, pool) = in_pool(opts, &phases, |threads| {
        run_engine(&mut sources, opts, threads, &analyses, &progress, &phases)
    });
    run.capture.order = set.order;
    finish(run, &phases, threads, pool)
}

/// Runs `work` in a pool of the configured number of threads (`work` is told that number, which lays
/// out the batches); returns its result, that number and the pool's. The phase log caps the pool at the
/// cores (see [`Phases`]), so that its tasks' times hold no wait for a core.
fn in_pool<T: Send>(
    opts: &EngineOptions,
    phases: &Phases,
    work: impl FnOnce(usize) -> T + Send,
) -> (T, usize, usize) {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = if opts.threads == 0 {
        cores
    } else {
        opts.threads
    };
    let pool_threads = if phases.on() {
        threads.min(cores)
    } else {
        threads
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(pool_threads)
        .build()
        .ok();
    match pool {
        Some(pool) => (pool.install(|| work(threads)), threads, pool_threads),
        None => (work(threads), threads, 1),
    }
}

/// `opts` with the TLS key logs of the inputs' pcapng Decryption Secrets Blocks added to its key log;
/// `None` when no input has one.
fn with_capture_secrets(opts: &EngineOptions, sources: &[Source<'_>]) -> Option<EngineOptions> {
    let logs: Vec<Vec<u8>> = sources
        .iter()
        .flat_map(|s| match s {
            Source::Mapped(c) => c.decryption_secrets(),
            Source::Streamed(st) => st.decryption_secrets(),
        })
        .filter(|d| d.secrets_type == pcapsleuth_capture::DecryptionSecrets::TLS_KEY_LOG)
        .map(|d| d.data)
        .collect();
    if logs.is_empty() {
        return None;
    }
    let mut keys = opts.tls_keys.as_deref().cloned().unwrap_or_default();
    for log in &logs {
        keys.add(log);
    }
    Some(EngineOptions {
        tls_keys: Some(std::sync::Arc::new(keys)),
        ..opts.clone()
    })
}
