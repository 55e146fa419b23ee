//! What the command line prints around the library's results: stdout (JSON or text fitted to the
//! terminal, a closed pipe not an error), stderr (warnings with every hazard escaped, a progress line),
//! and the exit code the reading's damage calls for.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use anyhow::{bail, Context};
use pcapsleuth::analysis::{self, Run};
use pcapsleuth::capture::{CaptureSet, Damage, Order};
use pcapsleuth::report;

/// Errors that are a message and nothing more, told apart by their type: the exit code `main` gives
/// each.
macro_rules! message_errors {
    ($($(#[$doc:meta])* $name:ident;)*) => {$(
        $(#[$doc])*
        pub struct $name(pub String);

        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }
        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }
        impl std::error::Error for $name {}
    )*};
}

message_errors! {
    /// An input problem: exit code 2.
    InputError;
    /// A run a signal stopped whose output is of the whole capture or nothing (`export`): the exit code
    /// of the signal.
    Interrupted;
}

pub fn plot_report(dir: &Path, r: &analysis::FullReport) -> anyhow::Result<()> {
    // The error names the file and says why; anyhow's chain would say why twice.
    let set = report::write_plot_set(dir, r).map_err(|e| anyhow::anyhow!("{e}"))?;
    for p in &set.written {
        sayln!("pcapsleuth: wrote {}", p.display());
    }
    for s in &set.skipped {
        sayln!("pcapsleuth: no {} plot: {}", s.name, s.reason);
    }
    Ok(())
}

/// Prints `value` as JSON for scripts or, rendered by `text`, for people; either way with what the
/// capture could not show (`unknowns`).
pub fn output<O, T: serde::Serialize>(
    json: bool,
    a: &Run<O>,
    value: &T,
    text: impl FnOnce(&T) -> String,
) -> anyhow::Result<()> {
    let unknowns = analysis::unknowns(a);
    emit(if json {
        let mut v = serde_json::to_value(value)?;
        if let Some(o) = v.as_object_mut() {
            o.insert("unknowns".into(), serde_json::to_value(&unknowns)?);
        }
        report::to_json_located(&v, &a.capture)
    } else {
        let mut out = report::render_unknowns(&unknowns);
        out.push_str(&text(value));
        fitted(report::locate_frames_text(&out, &a.capture))
    })
}

/// Prints `head` as JSON with the run's `unknowns` and the long `arrays` (each at its path of keys, and
/// its elements) written element by element as they are serialised: the same bytes as [`output`] of
/// the whole value, holding neither the document as one value nor its text. A capture of several files
/// goes through [`output`]'s whole value, where each frame is also named in its file.
pub fn output_json_streamed<O, T: serde::Serialize>(
    a: &Run<O>,
    head: &T,
    arrays: &[(Vec<&str>, &dyn report::ElementSource)],
) -> anyhow::Result<()> {
    let mut v = serde_json::to_value(head)?;
    let Some(o) = v.as_object_mut() else {
        bail!("a JSON report is not an object");
    };
    o.insert(
        "unknowns".into(),
        serde_json::to_value(analysis::unknowns(a))?,
    );
    if a.capture.files.len() > 1 {
        for (path, elements) in arrays {
            let all = (0..elements.count())
                .map(|i| elements.element(i))
                .collect::<Result<Vec<_>, _>>()?;
            let Some((key, within)) = path.split_last() else {
                continue;
            };
            let mut at = &mut v;
            for k in within {
                at = &mut at[*k];
            }
            at[*key] = serde_json::Value::Array(all);
        }
        return emit(report::to_json_located(&v, &a.capture));
    }
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    let at: Vec<(&[&str], &dyn report::ElementSource)> =
        arrays.iter().map(|(p, e)| (&p[..], *e)).collect();
    let written = report::write_json_streamed_at(&mut out, o, &at)
        .map_err(std::io::Error::from)
        .and_then(|()| out.flush());
    match written {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r.context("writing to stdout"),
    }
}

/// Text for stdout, every line fitted to the terminal's width, or to [`report::style::WIDTH`] when
/// stdout is not a terminal (a file, a pipe, a pager); no control or bidirectional character raw but its
/// line breaks, whatever the renderer let through.
pub fn fitted(text: String) -> String {
    report::style::fit(&report::visible_lines(&text), report::style::width())
}

/// The columns of the terminal stdout goes to, if it goes to one.
pub fn terminal_columns() -> Option<usize> {
    if !std::io::stdout().is_terminal() {
        return None;
    }
    columns_of(libc::STDOUT_FILENO)
}

/// The columns of the terminal `fd` is open on.
fn columns_of(fd: libc::c_int) -> Option<usize> {
    // SAFETY: TIOCGWINSZ only fills the winsize it is given.
    let mut size: libc::winsize = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::ioctl(fd, libc::TIOCGWINSZ, &mut size) } == 0;
    (ok && size.ws_col > 0).then_some(usize::from(size.ws_col))
}

/// The progress line's template for a terminal of `columns`: what is fixed in it must fit, or the line
/// wraps and every draw leaves a line behind (at 70 columns, `8.00 MiB/83.99 MiB at 794.15 MiB/s` with
/// the bar made 72). The bar goes first, then the rate.
fn progress_template(columns: usize) -> &'static str {
    match columns {
        84.. => "{wide_msg} {percent:>3}% [{bar:20}] {bytes}/{total_bytes} at {bytes_per_sec}, {eta} left",
        60.. => "{wide_msg} {percent:>3}% {bytes}/{total_bytes} at {bytes_per_sec}, {eta} left",
        _ => "{wide_msg} {percent:>3}% of {total_bytes}, {eta} left",
    }
}

pub fn emit(text: String) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r.context("writing to stdout"),
    }
}

pub fn report_set(set: &CaptureSet) {
    if !set.skipped.is_empty() {
        sayln!(
            "pcapsleuth: skipped {} files that are not captures: {}",
            set.skipped.len(),
            set.skipped
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let overlapping = set
        .overlaps
        .iter()
        .map(|(a, b)| format!("{} and {}", a.display(), b.display()))
        .collect::<Vec<_>>()
        .join("; ");
    match set.order {
        Order::Single => {}
        Order::Merged => sayln!(
            "pcapsleuth: read {} files merged by time, as mergecap merges them by default, because they overlap in time ({overlapping}); frames are numbered as in `mergecap -w merged.pcap {}`",
            set.merged.len(),
            set.merged
                .iter()
                .map(|(p, _)| p.display().to_string())
                .collect::<Vec<_>>()
                .join(" ")
        ),
        Order::Concatenated => {
            if let Some(why) = &set.not_merged {
                sayln!(
                    "pcapsleuth: warning: files overlap in time ({overlapping}) but were read one after the other, not merged by time: {why}"
                );
            }
            sayln!(
                "pcapsleuth: read {} files as one capture, one after the other in time order ({}); frames are numbered across them",
                set.inputs.len(),
                set.inputs
                    .iter()
                    .map(|i| i.path().display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }
}

/// A progress line on stderr (indicatif): what is read, how far, how fast, and how long is left, on one
/// line cut to the terminal's width; nothing when stderr is not a terminal or the input is under 64 MB
/// (it would flash). Cheap to call per record: indicatif draws at most ten times a second.
pub struct Progress(indicatif::ProgressBar);

impl Progress {
    pub fn new(verb: &str, file: &Path, len: u64) -> Self {
        if len < 64 << 20 || !std::io::stderr().is_terminal() {
            return Progress(indicatif::ProgressBar::hidden());
        }
        let columns = columns_of(libc::STDERR_FILENO).unwrap_or(80);
        let style = indicatif::ProgressStyle::with_template(progress_template(columns))
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
            .progress_chars("=> ");
        let name = file.file_name().map_or(file.as_os_str(), |n| n);
        let bar = indicatif::ProgressBar::with_draw_target(
            Some(len),
            indicatif::ProgressDrawTarget::stderr_with_hz(10),
        )
        .with_style(style)
        .with_message(format!(
            "{verb} {}",
            report::visible(&name.to_string_lossy())
        ));
        // Ticks between the engine's reports keep the rate and the time left moving.
        bar.enable_steady_tick(std::time::Duration::from_millis(200));
        Progress(bar)
    }

    pub fn show(&self, done: u64, total: u64) {
        // Once interrupted, the engine still reports the inputs it passes over as done.
        if !crate::signals::interrupted() {
            READ[0].store(done, Ordering::Relaxed);
            READ[1].store(total, Ordering::Relaxed);
        }
        if self.0.length() != Some(total) {
            self.0.set_length(total);
        }
        self.0.set_position(done);
    }

    pub fn clear(&self) {
        self.0.finish_and_clear();
    }
}

/// Bytes read of the inputs, and their size (0 when unknown), as the last progress report before an
/// interruption said: how far an interrupted run got (at least: the batch being read when the signal
/// came is left out).
static READ: [AtomicU64; 2] = [AtomicU64::new(0), AtomicU64::new(0)];

/// How far an interrupted run got, in bytes: "read 12.3 MB of 2.1 GB".
fn how_far() -> String {
    let (done, total) = (
        READ[0].load(Ordering::Relaxed),
        READ[1].load(Ordering::Relaxed),
    );
    match total {
        0 => format!("read {}", report::style::size(done)),
        total => format!(
            "read {} of {}",
            report::style::size(done),
            report::style::size(total)
        ),
    }
}

/// [`finish_pass`] for an analysis, and warnings for the timestamps outside the capture's body; for a
/// run a signal stopped before the capture's end, whose results are partial, says so, with the exit
/// code of the signal (130 for Ctrl-C).
pub fn finish<O>(set: &CaptureSet, a: &Run<O>) -> ExitCode {
    let code = finish_pass(set, &a.capture.damage);
    let name = match &set.inputs[..] {
        [one] => one.path().display().to_string(),
        _ => "the capture".to_string(),
    };
    for line in a.capture.timeline.damage_lines() {
        let line = report::locate_frames_text(&line, &a.capture);
        sayln!("pcapsleuth: warning: {name}: {line}");
    }
    match a.capture.stopped {
        Some(stopped) => {
            say_stopped(stopped.frames_read);
            crate::signals::stopped_exit_code()
        }
        None => code,
    }
}

/// Says that a run was interrupted, how far it got, and what its results cover.
pub fn say_stopped(frames_read: u64) {
    let far = how_far();
    match frames_read {
        0 => sayln!(
            "pcapsleuth: interrupted: {far}, before a frame was analysed: the results are empty"
        ),
        n => sayln!("pcapsleuth: interrupted: {far}; the results cover frames 1 to {n} only"),
    }
}

pub fn report_damage(files: &[&Path], damage: &[Damage]) -> ExitCode {
    let mut fatal = false;
    for d in damage {
        let level = if d.is_fatal() { "error" } else { "warning" };
        let file = files.get(d.input).copied().unwrap_or(Path::new("?"));
        sayln!("pcapsleuth: {level}: {}: {d}", file.display());
        fatal |= d.is_fatal();
    }
    if fatal {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    }
}

/// Says how many records were not copied byte for byte because their pcapng section differed from the
/// first (see `PcapWriter`).
pub fn say_rewritten(rewritten: u64) {
    if rewritten > 0 {
        sayln!(
            "pcapsleuth: note: {} of a later pcapng section (another byte order, link type or timestamp unit) written as new packet blocks, on interfaces of their own, without their options",
            analysis::units::counted(rewritten, "packet", "packets")
        );
    }
}

/// Warnings for damage the reading survived, and what the files were read as; exit code 2 if any of the
/// damage was more than a cut-short tail.
pub fn finish_pass(set: &CaptureSet, damage: &[Damage]) -> ExitCode {
    report_set(set);
    let paths: Vec<&Path> = set.inputs.iter().map(|i| i.path()).collect();
    report_damage(&paths, damage)
}

/// Refuses standard input (`-`) that is a terminal: nobody types a capture, and a run waiting on it
/// without a word looks hung.
pub fn refuse_terminal_stdin(files: &[PathBuf]) -> anyhow::Result<()> {
    if files.iter().any(|f| f.as_os_str() == "-") && std::io::stdin().is_terminal() {
        bail!(InputError(
            "`-` reads the capture from standard input, which is a terminal here: pipe one in (`tcpdump -w - ... | pcapsleuth ... -`, `< big.pcap`) or name the file".into()
        ));
    }
    Ok(())
}

/// An error of `extract` or `split` as the command line reports it: a usage error is bad input (exit
/// code 2), a capture error is said as the analyses say theirs.
pub fn cut_error(e: pcapsleuth::extract::Error) -> anyhow::Error {
    match e {
        pcapsleuth::extract::Error::Usage(msg) => InputError(msg).into(),
        pcapsleuth::extract::Error::Capture(ce) => ce.into(),
        io => io.into(),
    }
}

/// The library's long runs seen from the terminal: their passes as a progress line, their notes and
/// warnings on stderr.
pub struct Shell(Mutex<Option<Progress>>);

impl Shell {
    pub fn new() -> Self {
        Shell(Mutex::new(None))
    }

    fn bar(&self) -> std::sync::MutexGuard<'_, Option<Progress>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl pcapsleuth::extract::Observer for Shell {
    fn begin(&self, doing: &str, name: &str, len: u64) {
        *self.bar() = Some(Progress::new(doing, Path::new(name), len));
    }
    fn progress(&self, done: u64, total: u64) {
        if let Some(p) = &*self.bar() {
            p.show(done, total);
        }
    }
    fn end(&self) {
        if let Some(p) = self.bar().take() {
            p.clear();
        }
    }
    fn note(&self, text: &str) {
        sayln!("pcapsleuth: {text}");
    }
    fn warning(&self, text: &str) {
        sayln!("pcapsleuth: warning: {text}");
    }
}
