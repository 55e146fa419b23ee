//! pcapsleuth: offline forensics of MySQL traffic captures.
//!
//! This facade re-exports the workspace's crates so an embedding program depends on one crate:
//! [`capture`] reads pcap/pcapng in splits, [`flow`] decodes packets and tracks TCP connections,
//! [`mysql`] decodes the MySQL protocol from ordered bytes, [`analysis`] runs the parallel engine and the analyses, [`report`] renders results.
//!
//! ```no_run
//! use pcapsleuth::{analysis, capture::Capture};
//! let cap = Capture::open("big.pcap")?;
//! let a = analysis::analyze(&cap, &analysis::EngineOptions::default());
//! let answer = analysis::first_reset(&a, 20);
//! print!("{}", pcapsleuth::report::render_first_reset(&answer));
//! # Ok::<(), pcapsleuth::capture::CaptureError>(())
//! ```

pub use pcapsleuth_analysis as analysis;
pub use pcapsleuth_capture as capture;
pub use pcapsleuth_flow as flow;
pub use pcapsleuth_mysql as mysql;
pub use pcapsleuth_report as report;
