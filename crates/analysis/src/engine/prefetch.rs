//! Hints to the CPU to load bytes the scan and the tracking are about to read.

use super::event::PacketEvent;

/// Asks the CPU to start loading the first bytes of an event's payload (up to 4 cache lines).
///
/// Phase 2 visits a bucket's events in capture order, but a batch is far larger than the caches, so every
/// payload it decodes would otherwise be a cache miss, paid in turn. Hinting a few events ahead overlaps those
/// misses with the work on the current event; on small-packet MySQL traffic this saves about a tenth of the
/// CPU time of `first-reset`.
pub(super) fn prefetch_payload(bytes: &[u8], ev: &PacketEvent) {
    let from = usize::try_from(ev.payload_at).unwrap_or(usize::MAX);
    let end = from.saturating_add((ev.payload_captured() as usize).min(256));
    let mut at = from;
    while at < end {
        prefetch_line(bytes, at);
        at = at.saturating_add(64);
    }
}

/// How far ahead of the record it reads the scan asks for the file's bytes (see [`prefetch_line`]).
///
/// The scan reads the file in order, but the hardware's own prefetcher stops at every 4 KB page (and a
/// record is ~160 bytes on small-packet traffic): without the hint the scan waited on memory for most
/// lines it read. Anything from 1 to 8 KB ahead does alike (DEVELOPMENT.md has the measurements).
pub(super) const SCAN_READAHEAD: usize = 2048;

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
