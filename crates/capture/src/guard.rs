//! Surviving a mapped capture that shrinks while it is read.
//!
//! Reading a page of a file mapping beyond the file's current end raises SIGBUS, which kills the
//! process: logrotate's `copytruncate` does exactly that to a capture being analysed. ripgrep documents
//! the risk and offers `--no-mmap`; pcapsleuth maps because the engine reads splits in parallel, so it
//! keeps the mapping and makes the fault harmless instead. Each mapping registers its address range here,
//! and a SIGBUS handler that finds the faulting address in a registered range maps a page of zeros over
//! the vanished page (`MAP_FIXED`) and returns: the read is retried and sees zeros. Readers never trust those zeros: the capture's size is checked again
//! ([`crate::Capture::recheck_size`]) and reading stops at the new end. A fault anywhere else is passed
//! to the handler that was installed before, or to the default action.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::OnceLock;

/// Mappings guarded at once; a capture mapped while all are taken is read unguarded, as before.
const SLOTS: usize = 4096;

struct Slot {
    /// Claimed by a mapping.
    used: AtomicBool,
    /// Address range, valid while `start` is not 0.
    start: AtomicUsize,
    end: AtomicUsize,
}

#[allow(clippy::declare_interior_mutable_const)] // only used to initialise the array below
const EMPTY: Slot = Slot {
    used: AtomicBool::new(false),
    start: AtomicUsize::new(0),
    end: AtomicUsize::new(0),
};
static REGISTRY: [Slot; SLOTS] = [EMPTY; SLOTS];
static PAGE_SIZE: AtomicUsize = AtomicUsize::new(4096);

/// The SIGBUS action in force before ours, to which foreign faults are passed.
struct Previous(libc::sigaction);
// SAFETY: a plain C struct of function pointers and flags, written once before any reader.
unsafe impl Sync for Previous {}
unsafe impl Send for Previous {}
static PREVIOUS: OnceLock<Option<Previous>> = OnceLock::new();

/// A registered mapping; unregisters on drop (before the mapping itself is unmapped, as fields drop in
/// order and [`crate::Capture`] declares its bytes first).
#[derive(Debug)]
pub(crate) struct Guard {
    slot: usize,
}

impl Guard {
    /// Registers `[start, start + len)`. `None` when the handler could not be installed or every slot is
    /// taken: the mapping is then read unguarded, as before.
    pub(crate) fn register(start: *const u8, len: usize) -> Option<Guard> {
        install()?;
        let slot = REGISTRY.iter().position(|s| {
            s.used
                .compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        })?;
        let s = &REGISTRY[slot];
        s.end.store(start as usize + len, Ordering::Release);
        s.start.store(start as usize, Ordering::Release);
        Some(Guard { slot })
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        let s = &REGISTRY[self.slot];
        s.start.store(0, Ordering::Release);
        s.end.store(0, Ordering::Release);
        s.used.store(false, Ordering::Release);
    }
}

/// Installs the handler once, remembering the previous action. `None` if `sigaction` failed.
fn install() -> Option<()> {
    PREVIOUS
        .get_or_init(|| {
            // SAFETY: sysconf has no preconditions.
            let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
            if page > 0 {
                PAGE_SIZE.store(page as usize, Ordering::Relaxed);
            }
            // SAFETY: a zeroed sigaction is a valid value to fill in; the handler only uses
            // async-signal-safe operations (atomics and mmap).
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = on_sigbus as *const () as usize;
                action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
                libc::sigemptyset(&mut action.sa_mask);
                let mut previous: libc::sigaction = std::mem::zeroed();
                (libc::sigaction(libc::SIGBUS, &action, &mut previous) == 0)
                    .then_some(Previous(previous))
            }
        })
        .as_ref()
        .map(|_| ())
}

extern "C" fn on_sigbus(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo for a SA_SIGINFO handler.
    let addr = unsafe { (*info).si_addr() } as usize;
    let page = PAGE_SIZE.load(Ordering::Relaxed);
    for s in &REGISTRY {
        let start = s.start.load(Ordering::Acquire);
        if start == 0 || addr < start || addr >= s.end.load(Ordering::Acquire) {
            continue;
        }
        // SAFETY: replaces one page inside a read-only mapping this process owns with an anonymous page
        // of zeros; no Rust reference assumes the page's contents, which readers re-check by size.
        let mapped = unsafe {
            libc::mmap(
                (addr & !(page - 1)) as *mut libc::c_void,
                page,
                libc::PROT_READ,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                -1,
                0,
            )
        };
        if mapped != libc::MAP_FAILED {
            return;
        }
    }
    // Not a guarded mapping: what would have happened without us.
    match PREVIOUS.get() {
        Some(Some(Previous(prev)))
            if prev.sa_sigaction != libc::SIG_DFL && prev.sa_sigaction != libc::SIG_IGN =>
        {
            // SAFETY: calling the handler that was installed for this signal, as it was installed.
            unsafe {
                if prev.sa_flags & libc::SA_SIGINFO != 0 {
                    let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                        std::mem::transmute(prev.sa_sigaction);
                    f(sig, info, ctx);
                } else {
                    let f: extern "C" fn(libc::c_int) = std::mem::transmute(prev.sa_sigaction);
                    f(sig);
                }
            }
        }
        _ => {
            // SAFETY: restoring the default action; returning re-runs the faulting access, which then
            // terminates the process as SIGBUS does by default.
            unsafe {
                libc::signal(libc::SIGBUS, libc::SIG_DFL);
            }
        }
    }
}
