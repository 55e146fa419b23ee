//! Hints to the CPU to load bytes the scan and the tracking are about to read.

/// Asks the CPU to start loading the first bytes of an event's payload (up to 4 cache lines): the
/// `captured` bytes at `payload_at`.
///
/// Phase 2 visits a bucket's events in capture order, but a batch is far larger than the caches, so every
/// payload it decodes would otherwise be a cache miss, paid in turn. Hinting a few events ahead overlaps those
/// misses with the work on the current event; on small-packet MySQL traffic this saves about a tenth of the
/// CPU time of `first-reset`.
pub(super) fn prefetch_payload(bytes: &[u8], payload_at: u64, captured: u32) {
    let from = usize::try_from(payload_at).unwrap_or(usize::MAX);
    let end = from.saturating_add((captured as usize).min(256));
    let mut at = from;
    while at < end {
        prefetch_line(bytes, at);
        at = at.saturating_add(64);
    }
}

/// Asks the CPU to start loading the cache line of `bytes[at]` (nothing if `at` is past the end).
#[inline(always)]
pub(super) fn prefetch_line(bytes: &[u8], at: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(b) = bytes.get(at) {
        // SAFETY: a prefetch is only a hint: it never faults and has no effect on program state; the
        // address is that of a live byte of the mapping.
        unsafe {
            core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(
                (b as *const u8).cast(),
            )
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (bytes, at);
}
