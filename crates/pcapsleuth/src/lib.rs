//! pcapsleuth: offline forensics of MySQL traffic captures, as a library.
//!
//! This facade re-exports the workspace's crates so an embedding program depends on one crate (with
//! neither clap nor anyhow; PNG/SVG plotting is the default feature `plots`):
//!
//! * [`capture`] reads pcap and pcapng, from a memory map in parallel splits, or a set of files (rotated,
//!   compressed, a pipe) as one capture;
//! * [`flow`] decodes packets and tracks TCP connections: handshakes, segments, closes;
//! * [`mysql`] decodes the MySQL protocol from the ordered bytes of a connection, with no pcap knowledge;
//! * [`analysis`] is the parallel engine, the [`Analysis`](analysis::Analysis) trait it runs, and the
//!   built-in analyses (MySQL statistics, response times, rates and ceilings, closes, findings);
//! * [`report`] renders results as the command-line tool prints them: text, JSON, plots;
//! * [`extract`](mod@extract) cuts new captures from a capture: [`extract()`] the packets a selection keeps
//!   (connections, frames, times, the findings' packets, with comments), [`split()`] pieces of N packets
//!   or megabytes.
//! * `export` (the feature `export`, off by default: it brings parquet and zstd) writes Parquet
//!   datasets of every MySQL transaction, TCP connection, close and rate interval, for engines beyond one
//!   machine.
//!
//! # What the command-line tool answers
//!
//! A run always gives every TCP connection with its closes, whatever analysis it computed, so the first
//! abnormal close needs no analysis (`()`). On a bundled capture where the server ended two sessions by
//! itself (fixtures/README.md):
//!
//! ```
//! use pcapsleuth::analysis::{self, EngineOptions};
//! use pcapsleuth::capture::Capture;
//! use pcapsleuth::flow::{CloseFlag, Role};
//!
//! let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/server-closes.pcap");
//! let cap = Capture::open(path)?;
//! let run = analysis::analyze(&cap, &EngineOptions::default(), || ());
//! assert_eq!(run.connections.len(), 2);
//!
//! let answer = analysis::first_reset(&run, 20);
//! // The server's FIN that cut `select sleep(10)` off (KILL CONNECTION sends no ERR)...
//! let first = answer.first_abnormal.as_ref().unwrap();
//! assert_eq!((first.frame, first.initiator, first.flag), (13, Role::Server, CloseFlag::Fin));
//! // ...and, later, the RST of an idle session past its wait_timeout.
//! assert_eq!(answer.first_rst.as_ref().unwrap().frame, 29);
//! // What `pcapsleuth first-reset` prints:
//! let text = pcapsleuth::report::render_first_reset(&answer);
//! assert!(text.starts_with("First abnormal close: frame 13 at 1.247228 s"));
//! # Ok::<(), pcapsleuth::capture::CaptureError>(())
//! ```
//!
//! # Your own analysis
//!
//! An analysis runs on the same parallel engine as the built-in ones: implement
//! [`Analysis`](analysis::Analysis) (every event has a default that does nothing; `merge` folds the
//! instances of different workers together in any order; `finish` gives the result), and hand the
//! engine a function that makes one. A tuple of analyses is an analysis, so a run computes yours beside
//! the built-in ones in one pass, with static dispatch:
//!
//! ```
//! use pcapsleuth::analysis::{
//!     self, Analysis, CaptureFacts, ConnectionView, EngineOptions, Fate, MysqlStatistics,
//!     TransactionView,
//! };
//! use pcapsleuth::capture::Capture;
//!
//! /// Requests a close cut off: request frame, statement, and how long each had waited (ms).
//! #[derive(Default)]
//! struct CutOff(Vec<(u64, String, u64)>);
//!
//! impl Analysis for CutOff {
//!     type PerConnection = ();
//!     type Output = Vec<(u64, String, u64)>;
//!
//!     fn transaction(&mut self, _: &mut (), _: &ConnectionView<'_>, t: &TransactionView<'_>) {
//!         if t.fate() == Fate::CutOff {
//!             let statement = t.transaction.statement.clone().unwrap_or_default();
//!             let waited_ms = t.waited_ns().unwrap_or(0) / 1_000_000;
//!             self.0.push((t.transaction.request_frame, statement, waited_ms));
//!         }
//!     }
//!
//!     fn merge(&mut self, other: Self) {
//!         self.0.extend(other.0); // instances come in any order: `finish` sorts
//!     }
//!
//!     fn finish(mut self, _: &CaptureFacts) -> Self::Output {
//!         self.0.sort();
//!         self.0
//!     }
//! }
//!
//! let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/server-closes.pcap");
//! let cap = Capture::open(path)?;
//! let make = || (CutOff::default(), MysqlStatistics::default());
//! let run = analysis::analyze(&cap, &EngineOptions::default(), make);
//! let (cut_off, mysql) = run.output;
//! // The query the server's KILL CONNECTION ended, 1.225 s after it was sent.
//! assert_eq!(cut_off, [(11, "select sleep(10)".to_string(), 1225)]);
//! // The built-in statistics, computed in the same pass: 4 queries, 3 answered, the 4th cut off.
//! let mysql = mysql.report();
//! assert_eq!((mysql.queries, mysql.requests.answered, mysql.requests.cut_off), (4, 3, 1));
//! # Ok::<(), pcapsleuth::capture::CaptureError>(())
//! ```
//!
//! # Streaming, stopping, failing
//!
//! Code that keeps no state needs no analysis: a [`Sink`](analysis::sinks::Sink) is told each
//! transaction and each close as the engine completes them, and answers whether to go on
//! (`ControlFlow`), or fails the run with its own error; [`analysis::sinks::transactions`] and
//! [`analysis::sinks::closes`] make one of a closure, [`analysis::sinks::stream`] runs it. Any run stops
//! early when [`EngineOptions::interrupt`](analysis::EngineOptions::interrupt) is set (from a Ctrl-C
//! handler, another thread), and says so ([`CaptureFacts::stopped`](analysis::CaptureFacts::stopped)).
//!
//! # The process
//!
//! A mapped capture is guarded against its file shrinking while it is read with a process-wide SIGBUS
//! handler; [`Capture::open_with`](capture::Capture::open_with) and
//! [`Truncation::Unguarded`](capture::Truncation::Unguarded) leave the process's signal handlers alone.
//! The engine prints nothing unless asked ([`EngineOptions::phase_log`](analysis::EngineOptions::phase_log)).
//!
//! The package's examples go further: `transactions` prints every MySQL transaction of a capture as a
//! JSON line while the engine runs, with a closure, and stops after N (`cargo run --release -p pcapsleuth
//! --example transactions -- CAPTURE [N]`), and `per_table` counts requests, errors and response time per
//! table, merged across workers.

#![deny(missing_docs)]

pub use pcapsleuth_analysis as analysis;
pub use pcapsleuth_capture as capture;
/// Parquet datasets of a capture (feature `export`).
#[cfg(feature = "export")]
pub use pcapsleuth_export as export;
/// New captures cut from a capture: [`extract()`] and [`split()`], their options and summaries.
pub use pcapsleuth_extract as extract;
pub use pcapsleuth_extract::{extract, split};
pub use pcapsleuth_flow as flow;
pub use pcapsleuth_mysql as mysql;
pub use pcapsleuth_report as report;
pub use pcapsleuth_ssl as tls;

// The README's Rust examples compile (`cargo test --doc`).
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeExamples;
