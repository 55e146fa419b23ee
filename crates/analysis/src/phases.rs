//! Where a run's wall time goes, phase by phase, and what that predicts on more cores: a developer's
//! diagnostic, off unless [`crate::EngineOptions::phase_log`] asks for it (the command-line tool does
//! when the environment sets `PCAPSLEUTH_PHASES`: see DEVELOPMENT.md).
//!
//! Each batch is timed as the engine runs it: the scan phase (every split's scan, and the release of the
//! previous batch's pages beside them), the serial part between the phases (boundaries proven, counts
//! added), the track phase (every bucket's tracking) and the fold of the buckets' analyses; then the end
//! (connections concluded, analyses finished). Every task's own time is kept, so the log can say how busy
//! the threads were, and what the same work would take on `n` cores: per phase, the longest of `n`
//! workers given the tasks longest first (each to the least loaded), plus the serial parts as measured.
//!
//! The layout (splits per batch, buckets) follows the `threads` the run was planned for; the pool that
//! runs it is capped at the machine's cores when the log is on, so that no task's time includes waiting
//! for a core (with `-j 64` on 2 cores, 64 threads would time-slice). A prediction is therefore made for
//! the layout of the run: `-j 16` says what 16 cores would do, `-j 64` what 64 would. It assumes that
//! tasks take as long on a big machine as here (same core speed, no contention for memory bandwidth
//! or for the kernel's page mapping).

use std::sync::Mutex;
use std::time::Instant;

/// Set to anything to have each run of the command-line tool print its phase log on stderr
/// ([`PhaseLog::from_env`]).
pub const PHASES_ENV: &str = "PCAPSLEUTH_PHASES";

/// Whether a run prints its phase log (each batch's phases and tasks timed, in their threads' CPU time)
/// on stderr when it ends: a diagnostic of the engine's parallelism. The log caps the pool at the cores,
/// so that its tasks' times hold no wait for a core.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum PhaseLog {
    /// No log (the default).
    #[default]
    Off,
    /// The log on stderr.
    Stderr,
}

impl PhaseLog {
    /// [`PhaseLog::Stderr`] when the environment sets [`PHASES_ENV`] (what the command-line tool does),
    /// else [`PhaseLog::Off`].
    pub fn from_env() -> Self {
        if std::env::var_os(PHASES_ENV).is_some() {
            PhaseLog::Stderr
        } else {
            PhaseLog::Off
        }
    }
}

/// One batch's times, in seconds.
#[derive(Debug, Default)]
pub(crate) struct Batch {
    pub(crate) scan_wall: f64,
    /// The split scans.
    pub(crate) scan_tasks: Vec<f64>,
    /// The releases of the previous batch's pages, tasks beside the scans.
    pub(crate) releases: Vec<f64>,
    /// Between the phases: boundaries proven, counts added.
    pub(crate) serial: f64,
    pub(crate) track_wall: f64,
    pub(crate) track_tasks: Vec<f64>,
    pub(crate) fold_wall: f64,
    /// The merges of two analysis instances (a tree of them, in parallel, as the track phase's pieces
    /// finish).
    pub(crate) fold_tasks: Vec<f64>,
    /// The merge of the previous batch's fold into the run's instance: a task beside this batch's
    /// scans.
    pub(crate) last_merge: Vec<f64>,
}

#[derive(Debug, Default)]
struct Log {
    batches: Vec<Batch>,
    /// The end: connections concluded and roles decided (wall), analyses finished.
    end_wall: f64,
    end_tasks: Vec<f64>,
    /// Splits planned (CPU time of the thread driving the run, between batches).
    planning: f64,
}

/// The phase log of one run (inert when off: every method returns at once).
#[derive(Debug)]
pub(crate) struct Phases {
    on: bool,
    started: Instant,
    log: Mutex<Log>,
}

/// Times a phase (wall time) when the log is on.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Stopwatch(Option<Instant>);

impl Stopwatch {
    /// Seconds since the start (0 when the log is off).
    pub(crate) fn seconds(self) -> f64 {
        self.0.map_or(0.0, |t| t.elapsed().as_secs_f64())
    }
}

/// Times one task (a split's scan, a bucket's tracking, a page release) in CPU time of its thread when
/// the log is on: what the task costs, without the time its thread waited for a core (other work on
/// the machine, or more threads than cores).
#[derive(Debug, Clone, Copy)]
pub(crate) struct TaskClock(Option<f64>);

impl TaskClock {
    /// CPU seconds this thread spent since the start (0 when the log is off).
    pub(crate) fn seconds(self) -> f64 {
        self.0.map_or(0.0, |t| thread_cpu_seconds() - t)
    }
}

/// Tasks' CPU times, gathered from any thread.
#[derive(Debug)]
pub(crate) struct Tasks(Option<Mutex<Vec<f64>>>);

impl Tasks {
    /// Runs `work`, timing it when the log is on.
    pub(crate) fn time<T>(&self, work: impl FnOnce() -> T) -> T {
        let Some(times) = &self.0 else {
            return work();
        };
        let start = thread_cpu_seconds();
        let out = work();
        let took = thread_cpu_seconds() - start;
        if let Ok(mut t) = times.lock() {
            t.push(took);
        }
        out
    }

    /// The times gathered.
    pub(crate) fn into_times(self) -> Vec<f64> {
        self.0.and_then(|m| m.into_inner().ok()).unwrap_or_default()
    }
}

/// CPU time of the calling thread, user and system.
#[cfg(target_os = "linux")]
fn thread_cpu_seconds() -> f64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec for the call to fill; CLOCK_THREAD_CPUTIME_ID needs no setup.
    let ok = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) } == 0;
    if ok {
        t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
    } else {
        0.0
    }
}

/// Elsewhere, wall time since the first call (waits for a core count then).
#[cfg(not(target_os = "linux"))]
fn thread_cpu_seconds() -> f64 {
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_secs_f64()
}

impl Phases {
    /// On when the environment asks for it.
    pub(crate) fn new(log: PhaseLog) -> Self {
        Phases {
            on: log == PhaseLog::Stderr,
            started: Instant::now(),
            log: Mutex::new(Log::default()),
        }
    }

    pub(crate) fn on(&self) -> bool {
        self.on
    }

    /// A stopwatch started now (idle when the log is off).
    pub(crate) fn start(&self) -> Stopwatch {
        Stopwatch(self.on.then(Instant::now))
    }

    /// A collector of tasks' times (idle when the log is off).
    pub(crate) fn tasks(&self) -> Tasks {
        Tasks(self.on.then(|| Mutex::new(Vec::new())))
    }

    /// A task's clock started now (idle when the log is off).
    pub(crate) fn task(&self) -> TaskClock {
        TaskClock(self.on.then(thread_cpu_seconds))
    }

    /// Records a batch's times.
    pub(crate) fn batch(&self, b: Batch) {
        if !self.on {
            return;
        }
        if let Ok(mut log) = self.log.lock() {
            log.batches.push(b);
        }
    }

    /// Records the planning of a split (between batches, on the thread driving the run).
    pub(crate) fn planned(&self, seconds: f64) {
        if !self.on {
            return;
        }
        if let Ok(mut log) = self.log.lock() {
            log.planning += seconds;
        }
    }

    /// Records the end of the run: its wall time and the conclusion tasks' times.
    pub(crate) fn end(&self, wall: Stopwatch, tasks: Vec<f64>) {
        if !self.on {
            return;
        }
        if let Ok(mut log) = self.log.lock() {
            log.end_wall += wall.seconds();
            log.end_tasks.extend(tasks);
        }
    }

    /// Prints the log on stderr: per phase, wall seconds, its tasks' CPU seconds and the longest task;
    /// the serial parts; and the wall time predicted on 1 to `planned` cores for this layout.
    pub(crate) fn print(&self, planned: usize, pool: usize, finish: f64) {
        if !self.on {
            return;
        }
        let Ok(log) = self.log.lock() else { return };
        let total = self.started.elapsed().as_secs_f64();
        let sum = |f: &dyn Fn(&Batch) -> f64| log.batches.iter().map(f).sum::<f64>();
        let busy = |f: &dyn Fn(&Batch) -> &Vec<f64>| -> (f64, f64, usize) {
            let all = log.batches.iter().flat_map(|b| f(b).iter());
            let (s, m, n) = all.fold((0.0, 0.0f64, 0), |(s, m, n), &t| (s + t, m.max(t), n + 1));
            (s, m, n)
        };
        let (scan_busy, scan_max, scan_n) = busy(&|b| &b.scan_tasks);
        let (track_busy, track_max, track_n) = busy(&|b| &b.track_tasks);
        let (release_busy, release_max, _) = busy(&|b| &b.releases);
        let (last_merge_busy, last_merge_max, _) = busy(&|b| &b.last_merge);
        let scan_wall = sum(&|b| b.scan_wall);
        let track_wall = sum(&|b| b.track_wall);
        let serial = sum(&|b| b.serial);
        let fold = sum(&|b| b.fold_wall);
        let (fold_busy, fold_max, fold_n) = busy(&|b| &b.fold_tasks);
        let planning = log.planning;
        let counted = scan_wall + serial + track_wall + fold + log.end_wall + finish + planning;
        let other = (total - counted).max(0.0);
        let mut out = format!(
            "phases: {} batch{} laid out for {planned} threads ({} splits, {track_n} bucket tasks), run \
             on {pool}: wall {total:.3} s\n",
            log.batches.len(),
            if log.batches.len() == 1 { "" } else { "es" },
            scan_n,
        );
        out.push_str(&format!(
            "  scan    wall {scan_wall:.3} s, tasks' CPU {:.3} s (page releases {release_busy:.3} s, \
             longest {:.1} ms; the previous batch's fold merged into the run's {last_merge_busy:.3} s, \
             longest {:.1} ms), longest split {:.1} ms\n",
            scan_busy + release_busy + last_merge_busy,
            release_max * 1e3,
            last_merge_max * 1e3,
            scan_max * 1e3
        ));
        out.push_str(&format!(
            "  serial  CPU {serial:.3} s between the phases (boundaries proven, counts added), \
             {planning:.3} s between batches (splits planned)\n"
        ));
        out.push_str(&format!(
            "  track   wall {track_wall:.3} s, tasks' CPU {track_busy:.3} s, longest bucket {:.1} ms\n",
            track_max * 1e3
        ));
        out.push_str(&format!(
            "  fold    wall {fold:.3} s, tasks' CPU {fold_busy:.3} s ({fold_n} merges of two analysis \
             instances, longest {:.1} ms)\n",
            fold_max * 1e3
        ));
        out.push_str(&format!(
            "  end     wall {:.3} s (connections concluded); finish CPU {finish:.3} s; unaccounted wall \
             {other:.3} s (waits for a core)\n",
            log.end_wall
        ));
        out.push_str(
            "  predicted wall for this layout on n cores (tasks' CPU time given longest first to the \
             least loaded core, batch by batch; the rest as measured):\n   ",
        );
        let mut n = 1;
        while n <= planned.max(1) {
            let phases: f64 = log
                .batches
                .iter()
                .map(|b| {
                    let scan: Vec<f64> = b
                        .scan_tasks
                        .iter()
                        .chain(&b.releases)
                        .chain(&b.last_merge)
                        .copied()
                        .collect();
                    makespan(&scan, n)
                        + b.serial
                        + makespan(&b.track_tasks, n)
                        + fold_makespan(&b.fold_tasks, n)
                })
                .sum();
            let at_n = phases + planning + makespan(&log.end_tasks, n) + finish;
            out.push_str(&format!(" {n}: {at_n:.3} s"));
            n *= 2;
        }
        out.push('\n');
        eprint!("{out}");
    }
}

/// How long `tasks` take on `workers` workers, each task given, longest first, to the least loaded one
/// (LPT scheduling: within 4/3 of the best schedule).
pub(crate) fn makespan(tasks: &[f64], workers: usize) -> f64 {
    let workers = workers.max(1);
    let mut sorted: Vec<f64> = tasks.to_vec();
    sorted.sort_by(|a, b| b.total_cmp(a));
    let mut load = vec![0.0f64; workers.min(sorted.len().max(1))];
    for t in sorted {
        if let Some(least) = load.iter_mut().min_by(|a, b| a.total_cmp(b)) {
            *least += t;
        }
    }
    load.into_iter().fold(0.0, f64::max)
}

/// How long a fold of `tasks` (merges of instances, as a tree) takes on `workers` workers: the
/// work shared out, then one merge per level of the tree the workers' results make.
fn fold_makespan(tasks: &[f64], workers: usize) -> f64 {
    let longest = tasks.iter().copied().fold(0.0, f64::max);
    let levels = workers.max(1).next_power_of_two().trailing_zeros();
    makespan(tasks, workers) + f64::from(levels) * longest
}

#[cfg(test)]
mod tests {
    use super::makespan;

    #[test]
    fn the_makespan_is_the_longest_worker_given_tasks_longest_first() {
        // One worker does everything; enough workers leave the longest task alone.
        assert_eq!(makespan(&[1.0, 2.0, 3.0], 1), 6.0);
        assert_eq!(makespan(&[1.0, 2.0, 3.0], 8), 3.0);
        // 3 | 2+2 is the LPT schedule of these on two workers (and the best one).
        assert_eq!(makespan(&[2.0, 3.0, 2.0], 2), 4.0);
        // 7 tasks of 1 on 3 workers: 3, 2, 2.
        assert_eq!(makespan(&[1.0; 7], 3), 3.0);
        assert_eq!(makespan(&[], 4), 0.0);
    }
}
