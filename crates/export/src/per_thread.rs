//! One value per worker thread of the engine's pool: what an export's analysis instances write into.
//! The engine runs many instances at once (eight per thread, made afresh every batch); a buffer each
//! would hold that many batches in memory, and a worker's own is never contended.

use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};

/// A `T` per worker thread of the engine's pool, and a last one for calls from any other thread, made
/// at the first use (by a worker of the pool, whose size it takes).
pub(crate) struct PerThread<T> {
    cells: OnceLock<Box<[Mutex<T>]>>,
}

impl<T: Default> PerThread<T> {
    pub(crate) fn new() -> Self {
        PerThread {
            cells: OnceLock::new(),
        }
    }

    /// The calling thread's: its own when it is one of the pool's workers (no other thread takes its
    /// lock), else the last one, shared.
    pub(crate) fn get(&self) -> &Mutex<T> {
        let cells = self.cells.get_or_init(|| {
            (0..=rayon::current_num_threads())
                .map(|_| Mutex::new(T::default()))
                .collect()
        });
        let last = cells.len() - 1;
        let i = rayon::current_thread_index().map_or(last, |i| i.min(last));
        &cells[i]
    }

    /// Every thread's, once made (none before the first use).
    pub(crate) fn all(&self) -> &[Mutex<T>] {
        self.cells.get().map_or(&[], |c| &c[..])
    }
}

/// Locks `m`, whose data stays consistent if a holder panicked (every holder only moves whole rows or
/// entries in, or a buffer out).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}
