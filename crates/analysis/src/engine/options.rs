//! What a run is asked to do: the [`EngineOptions`] and the sizes of splits and batches.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::mysql::{MysqlDepth, MysqlDetection};
use crate::phases::PhaseLog;

/// How the engine reads a capture. What is computed from it is the [`Analysis`](crate::Analysis) the run is given.
#[derive(Debug, Clone, Default)]
pub struct EngineOptions {
    /// Worker threads (0: all cores).
    pub threads: usize,
    /// Exact number of splits (None: two per thread, more when a batch of them would read more than
    /// [`BATCH_TARGET_BYTES`]).
    pub splits: Option<usize>,
    /// Which connections are decoded as MySQL.
    pub mysql: MysqlDetection,
    /// How much of each MySQL session is decoded (`first-reset` needs only what judges closes).
    pub mysql_depth: MysqlDepth,
    /// Bytes per window of a streamed input (compressed, a pipe); 0: 32 MiB per thread. Results do not
    /// depend on it (tests make it small, so that records straddle windows).
    pub stream_window: usize,
    /// TLS secrets to decrypt MySQL sessions in TLS with (a key log, `--tls-keylog`); the secrets of the
    /// inputs' pcapng Decryption Secrets Blocks are added to them for the run. `None`, and no secrets in
    /// the inputs: TLS sessions are timed from their records, not decrypted.
    pub tls_keys: Option<std::sync::Arc<pcapsleuth_ssl::KeyLog>>,
    /// Set it (from another thread, a signal handler's thread, a sink) to stop the run early: no batch
    /// starts after it is set, the connections tracked so far are concluded as at the capture's end, and
    /// the analyses are finished on what was read. The run says so ([`CaptureFacts::stopped`](crate::CaptureFacts::stopped)), and
    /// every figure of it covers only the frames read. `None`: the run always reads the whole capture.
    pub interrupt: Option<Arc<AtomicBool>>,
    /// Whether the run prints its phase log on stderr (a diagnostic of the engine's parallelism).
    pub phase_log: PhaseLog,
}

impl EngineOptions {
    /// Whether the run was asked to stop ([`EngineOptions::interrupt`]).
    pub fn interrupted(&self) -> bool {
        self.interrupt
            .as_ref()
            .is_some_and(|flag| flag.load(Ordering::Relaxed))
    }
}

/// Splits are at most this size, so that a batch is small with few threads: two 4 MiB splits per
/// thread, a batch of 16 MiB on two cores, whose pages and events (a 70-byte record makes a 48-byte
/// event) mostly stay in the caches between the scan that writes the events and the tracking that reads
/// them with the payloads. Larger splits hold more memory and cost CPU time in cache misses; smaller ones
/// cost `mysql` more time (DEVELOPMENT.md has the measurements).
pub const SPLIT_TARGET_BYTES: u64 = 4 << 20;

/// A batch reads about this many bytes of a mapped file (a stream's window at most this many), whatever
/// the number of threads: memory holds one batch's pages and events, so it stays flat on a machine with
/// many cores too (two 32 MiB splits per thread would make a batch of 512 MB at 8 threads, of 4 GB at
/// 64). With many threads the splits are smaller.
pub const BATCH_TARGET_BYTES: u64 = 128 << 20;

/// Splits are no smaller than this: below it, planning and proving boundaries would cost more than
/// the parallelism gives.
pub(super) const SPLIT_MIN_BYTES: u64 = 1 << 20;

/// Splits in a batch with `threads` threads: two per thread, so that a thread that finishes early finds
/// another, but never so many that splits of [`SPLIT_MIN_BYTES`] would read more than
/// [`BATCH_TARGET_BYTES`].
pub(super) fn batch_len(threads: usize) -> usize {
    (threads * 2).clamp(1, (BATCH_TARGET_BYTES / SPLIT_MIN_BYTES) as usize)
}

/// The size of a split when `batch_len` splits make a batch.
pub(super) fn split_target(batch_len: usize) -> u64 {
    (BATCH_TARGET_BYTES / batch_len.max(1) as u64).clamp(SPLIT_MIN_BYTES, SPLIT_TARGET_BYTES)
}
