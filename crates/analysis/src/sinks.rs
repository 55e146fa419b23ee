//! Streaming a capture's events to code that keeps no state of its own: a [`Sink`] is told each MySQL
//! transaction and each close as the engine completes them, and may stop the run early or fail it with
//! its own error; [`transactions`] and [`closes`] make one of a closure; [`stream`] runs one.
//!
//! A sink is the simple side of the [`Analysis`] trait: no per-connection state, no instances to merge,
//! no output. The engine still runs in parallel, so a sink is called from several threads at once
//! (`&self`, `Sync`), each connection's events in capture order, connections interleaved.
//!
//! ```
//! use std::ops::ControlFlow;
//! use std::sync::atomic::{AtomicU64, Ordering};
//! use pcapsleuth_analysis::{sinks, EngineOptions};
//!
//! let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/server-closes.pcap");
//! let cap = pcapsleuth_capture::Capture::open(path)?;
//! let statements = AtomicU64::new(0);
//! let sink = sinks::transactions(|_conn, t| {
//!     statements.fetch_add(u64::from(t.transaction.statement.is_some()), Ordering::Relaxed);
//!     Ok::<_, std::convert::Infallible>(ControlFlow::Continue(()))
//! });
//! let run = sinks::stream(&cap, &EngineOptions::default(), &sink).unwrap_or_else(|e| match e {});
//! assert_eq!(statements.into_inner(), 4);
//! assert_eq!(run.output, sinks::Streamed::EveryEvent);
//! # Ok::<(), pcapsleuth_capture::CaptureError>(())
//! ```

use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use crate::engine::{analyze, EngineOptions, Inputs, Run};
use crate::events::{Analysis, CloseView, ConnectionView, TransactionView};
use crate::facts::CaptureFacts;

/// What a sink says after each event: go on, or stop the run (`Break`); or an error, which stops the run
/// too and is what [`stream`] returns.
pub type Flow<E> = Result<ControlFlow<()>, E>;

/// Code told each MySQL transaction and each close of a capture as the engine completes them (see the
/// [module documentation](self)). Both methods have a default that goes on.
pub trait Sink: Sync {
    /// The error a sink may fail the run with (an I/O error of its output, ...).
    type Error: Send;

    /// A MySQL request and what became of it (see [`Analysis::transaction`]).
    fn transaction(
        &self,
        _conn: &ConnectionView<'_>,
        _transaction: &TransactionView<'_>,
    ) -> Flow<Self::Error> {
        Ok(ControlFlow::Continue(()))
    }

    /// The first FIN, or the first RST, a side of a connection sent (see [`Analysis::close`]).
    fn close(&self, _conn: &ConnectionView<'_>, _close: &CloseView<'_>) -> Flow<Self::Error> {
        Ok(ControlFlow::Continue(()))
    }
}

/// A sink of the transactions: `f(connection, transaction)` for each. Made by [`transactions`].
pub struct Transactions<F>(F);

/// A sink that calls `f(connection, transaction)` for each MySQL transaction.
pub fn transactions<F, E>(f: F) -> Transactions<F>
where
    F: Fn(&ConnectionView<'_>, &TransactionView<'_>) -> Flow<E> + Sync,
    E: Send,
{
    Transactions(f)
}

impl<F, E> Sink for Transactions<F>
where
    F: Fn(&ConnectionView<'_>, &TransactionView<'_>) -> Flow<E> + Sync,
    E: Send,
{
    type Error = E;
    fn transaction(&self, conn: &ConnectionView<'_>, t: &TransactionView<'_>) -> Flow<E> {
        (self.0)(conn, t)
    }
}

/// A sink of the closes: `f(connection, close)` for each. Made by [`closes`].
pub struct Closes<F>(F);

/// A sink that calls `f(connection, close)` for each first FIN and first RST of a side.
pub fn closes<F, E>(f: F) -> Closes<F>
where
    F: Fn(&ConnectionView<'_>, &CloseView<'_>) -> Flow<E> + Sync,
    E: Send,
{
    Closes(f)
}

impl<F, E> Sink for Closes<F>
where
    F: Fn(&ConnectionView<'_>, &CloseView<'_>) -> Flow<E> + Sync,
    E: Send,
{
    type Error = E;
    fn close(&self, conn: &ConnectionView<'_>, close: &CloseView<'_>) -> Flow<E> {
        (self.0)(conn, close)
    }
}

/// Runs the engine over `inputs` (a [`Capture`](pcapsleuth_capture::Capture) or a
/// [`CaptureSet`](pcapsleuth_capture::CaptureSet)) and tells `sink` every transaction and close.
///
/// When the sink stops (`Break`) or fails, the run stops as [`EngineOptions::interrupt`] stops it: no
/// batch starts after that, and no event reaches the sink after it (events already being told on other
/// threads finish). The run's output says whether the sink stopped it ([`Streamed`]); a failure is
/// returned instead of the run (the first, when several threads fail). With an interrupt flag in
/// `opts`, the sink's stop sets that flag, and setting it stops the sink's run.
pub fn stream<'a, S: Sink>(
    inputs: impl Into<Inputs<'a>>,
    opts: &EngineOptions,
    sink: &S,
) -> Result<Run<Streamed>, S::Error> {
    let flag = opts.interrupt.clone().unwrap_or_default();
    let stop = Stop {
        flag: flag.clone(),
        broke: AtomicBool::new(false),
        error: Mutex::new(None),
    };
    let opts = EngineOptions {
        interrupt: Some(flag),
        ..opts.clone()
    };
    let run = analyze(inputs, &opts, || Adapter { sink, stop: &stop });
    let ended = if stop.broke.load(Ordering::Relaxed) {
        Streamed::StoppedBySink
    } else {
        Streamed::EveryEvent
    };
    match stop
        .error
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner)
    {
        Some(e) => Err(e),
        None => Ok(run.map(|()| ended)),
    }
}

/// How a streamed run ended for its sink.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Streamed {
    /// The sink was told every event of what was read (the whole capture, unless
    /// [`CaptureFacts::stopped`] says the run was interrupted).
    EveryEvent,
    /// The sink stopped the run: the events after its stop were not told. The engine may have read
    /// further than the event it stopped at (the batch being read is finished); where reading stopped
    /// is [`CaptureFacts::stopped`], `None` when that batch was the last.
    StoppedBySink,
}

/// Whether the run is to stop, and the first error a sink failed with.
struct Stop<E> {
    flag: Arc<AtomicBool>,
    /// Whether the sink stopped the run (`Break`, or an error).
    broke: AtomicBool,
    error: Mutex<Option<E>>,
}

impl<E> Stop<E> {
    fn stopped(&self) -> bool {
        self.flag.load(Ordering::Relaxed)
    }

    /// Stops the run after what `flow` says, keeping the first error.
    fn after(&self, flow: Flow<E>) {
        let failed = match flow {
            Ok(ControlFlow::Continue(())) => return,
            Ok(ControlFlow::Break(())) => None,
            Err(e) => Some(e),
        };
        if let Some(e) = failed {
            let mut first = self.error.lock().unwrap_or_else(PoisonError::into_inner);
            first.get_or_insert(e);
        }
        self.broke.store(true, Ordering::Relaxed);
        self.flag.store(true, Ordering::Relaxed);
    }
}

/// A sink as the engine runs it: an analysis with no state, told nothing once the run is to stop.
struct Adapter<'s, S: Sink> {
    sink: &'s S,
    stop: &'s Stop<S::Error>,
}

impl<S: Sink> Analysis for Adapter<'_, S> {
    type PerConnection = ();
    type Output = ();

    fn transaction(&mut self, _: &mut (), conn: &ConnectionView<'_>, t: &TransactionView<'_>) {
        if !self.stop.stopped() {
            self.stop.after(self.sink.transaction(conn, t));
        }
    }

    fn close(&mut self, _: &mut (), conn: &ConnectionView<'_>, close: &CloseView<'_>) {
        if !self.stop.stopped() {
            self.stop.after(self.sink.close(conn, close));
        }
    }

    fn merge(&mut self, _: Self) {}

    fn finish(self, _: &CaptureFacts) {}
}
