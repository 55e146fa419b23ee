//! The process around the command: its standard streams and the signals that end it.

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

/// On SIGINT (Ctrl-C), SIGTERM (`kill`, a scheduler's timeout) or SIGHUP (a closed terminal), removes
/// the hidden staging directories of the run (`split`'s pieces, `export`'s datasets), which no
/// destructor would reach, then ends as the signal would have ended the process. The signals are
/// blocked in every thread (set here, before any thread starts, and inherited) and taken by one thread
/// that waits for them; a signal the caller ignores (`nohup`) stays ignored.
pub fn remove_staging_when_interrupted() {
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
                if libc::sigwait(&set, &mut sig) == 0 {
                    pcapsleuth::capture::staging::remove_all();
                    libc::signal(sig, libc::SIG_DFL);
                    libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
                    libc::raise(sig);
                }
            });
        if waiter.is_err() {
            libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        }
    }
}
