//! The process around the command: its standard streams and the signals that stop or end it.

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, OnceLock};

/// Opens /dev/null on any of the standard streams the caller closed (`2>&-`): otherwise the next file
/// opened, the input or an output being written, would take its number, and a warning meant for stderr
/// would be written into it.
pub fn keep_standard_streams_open() {
    for fd in 0..=2 {
        // SAFETY: fcntl(F_GETFD) only queries the descriptor; open returns a new one we keep for good.
        unsafe {
            if libc::fcntl(fd, libc::F_GETFD) == -1 {
                libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
            }
        }
    }
}

/// Set by the first SIGINT, SIGTERM or SIGHUP while an analysis runs: the engine stops at its next
/// batch ([`pcapsleuth::analysis::EngineOptions::interrupt`]).
static INTERRUPT: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// Whether the command runs the engine with [`interrupt_flag`], so that a signal can stop it cleanly.
static STOPPABLE: AtomicBool = AtomicBool::new(false);

/// The signal that set [`INTERRUPT`] (0: none).
static STOPPED_BY: AtomicI32 = AtomicI32::new(0);

/// The flag a signal sets, for the engine's options; from now on the first signal stops the run at its
/// next batch instead of ending the process (a run waiting on a quiet pipe looks at it while it waits).
pub fn interrupt_flag() -> Arc<AtomicBool> {
    let flag = INTERRUPT.get_or_init(Arc::default).clone();
    STOPPABLE.store(true, Ordering::SeqCst);
    flag
}

/// Whether a signal asked the run to stop.
pub fn interrupted() -> bool {
    INTERRUPT
        .get()
        .is_some_and(|flag| flag.load(Ordering::SeqCst))
}

/// The exit code of a command a signal stopped: 128 + the signal's number, as a shell reports a
/// process the signal ended (130 for Ctrl-C), so that a script tells a stopped run from a finished one.
pub fn stopped_exit_code() -> ExitCode {
    let sig = match STOPPED_BY.load(Ordering::SeqCst) {
        0 => libc::SIGINT,
        sig => sig,
    };
    ExitCode::from(u8::try_from(128 + sig).unwrap_or(130))
}

/// On SIGINT (Ctrl-C), SIGTERM (`kill`, a scheduler's timeout) or SIGHUP (a closed terminal): while an
/// analysis runs ([`interrupt_flag`]), the first stops it at its next batch, and the command says what
/// it had read (an `export` then writes nothing); otherwise, or at a second signal, removes the hidden
/// staging directories of the run (`split`'s pieces, `export`'s datasets), which no destructor would
/// reach, then ends as the signal would have ended the process. The signals are blocked in every thread
/// (set here, before any thread starts, and inherited) and taken by one thread that waits for them; a
/// signal the caller ignores (`nohup`) stays ignored.
pub fn take_interrupts() {
    const SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];
    // SAFETY: sigset_t is plain data filled by sigemptyset/sigaddset; pthread_sigmask, sigwait, signal
    // and raise are given valid sets and signal numbers.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for sig in SIGNALS {
            libc::sigaddset(&mut set, sig);
        }
        if libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) != 0 {
            return;
        }
        let waiter = std::thread::Builder::new()
            .name("signals".into())
            .spawn(move || {
                let mut sig: libc::c_int = 0;
                while libc::sigwait(&set, &mut sig) == 0 {
                    let flag = INTERRUPT.get_or_init(Arc::default);
                    if STOPPABLE.load(Ordering::SeqCst) && !flag.load(Ordering::SeqCst) {
                        STOPPED_BY.store(sig, Ordering::SeqCst);
                        flag.store(true, Ordering::SeqCst);
                        sayln!("pcapsleuth: interrupted: stopping after the batch being read (again to stop at once)");
                        continue;
                    }
                    pcapsleuth::capture::staging::remove_all();
                    libc::signal(sig, libc::SIG_DFL);
                    libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
                    libc::raise(sig);
                    break;
                }
            });
        if waiter.is_err() {
            libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        }
    }
}
