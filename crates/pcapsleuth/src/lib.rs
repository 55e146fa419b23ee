//! pcapsleuth: offline forensics of MySQL traffic captures.
//!
//! This facade re-exports the workspace's crates so an embedding program depends on one crate:
//! [`capture`] reads pcap/pcapng in splits, [`flow`] decodes packets and tracks TCP connections,
//! [`mysql`] decodes the MySQL protocol from ordered bytes, [`analysis`] runs the parallel engine and the analyses, [`report`] renders results.
//!
//! The first abnormal close of a capture, as `pcapsleuth first-reset` prints it:
//!
//! ```no_run
//! use pcapsleuth::{analysis, capture::Capture};
//! let cap = Capture::open("big.pcap")?;
//! // No analysis besides the connections, which every run gives.
//! let run = analysis::analyze(&cap, &analysis::EngineOptions::default(), || ());
//! let answer = analysis::first_reset(&run, 20);
//! print!("{}", pcapsleuth::report::render_first_reset(&answer));
//! # Ok::<(), pcapsleuth::capture::CaptureError>(())
//! ```
//!
//! Your own analysis runs on the same parallel engine: implement [`analysis::Analysis`] (every event
//! has a default; a commutative `merge`; a `finish`), and pass a function that makes one. The examples
//! `transactions` (every MySQL transaction as a JSON line) and `per_table` (requests and errors per
//! table) show how:
//!
//! ```no_run
//! use pcapsleuth::analysis::{self, Analysis, CaptureFacts, ConnectionView, TransactionView};
//!
//! /// Requests that waited more than 100 ms for their answer.
//! #[derive(Default)]
//! struct Slow(u64);
//!
//! impl Analysis for Slow {
//!     type PerConnection = ();
//!     type Output = u64;
//!     fn transaction(&mut self, _: &mut (), _: &ConnectionView<'_>, t: &TransactionView<'_>) {
//!         self.0 += u64::from(t.response_time_ns().is_some_and(|ns| ns > 100_000_000));
//!     }
//!     fn merge(&mut self, other: Self) {
//!         self.0 += other.0;
//!     }
//!     fn finish(self, _: &CaptureFacts) -> u64 {
//!         self.0
//!     }
//! }
//!
//! let cap = pcapsleuth::capture::Capture::open("big.pcap")?;
//! let run = analysis::analyze(&cap, &analysis::EngineOptions::default(), Slow::default);
//! println!("{} slow requests over {} connections", run.output, run.connections.len());
//! # Ok::<(), pcapsleuth::capture::CaptureError>(())
//! ```

pub use pcapsleuth_analysis as analysis;
pub use pcapsleuth_capture as capture;
pub use pcapsleuth_flow as flow;
pub use pcapsleuth_mysql as mysql;
pub use pcapsleuth_report as report;
