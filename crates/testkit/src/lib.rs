//! Test support for pcapsleuth: a dev-dependency of the workspace's tests, never published.
//!
//! # Oracles: the tools the tests compare against
//!
//! The project's best tests compare its answers with another tool's reading of the same capture:
//! tshark's dissectors, editcap's conversions, pt-query-digest's response times. Those tools are the
//! *oracles*. A newcomer with only the Rust toolchain has none of them, and their first
//! `cargo test --workspace` must still pass; CI installs them all and must never skip one. So a test that
//! needs an oracle asks for it first, in one line, and returns when it is missing:
//!
//! ```no_run
//! use pcapsleuth_testkit::{oracle, Oracle};
//! # let fixture = std::path::Path::new("fixtures/stream-stall.pcap");
//! # let ours = 0;
//! // In a #[test] fn:
//! let Some(tshark) = oracle::tshark() else { return };
//! assert_eq!(ours, tshark.count(fixture, "mysql.error_code==1146"));
//!
//! // Any other oracle, or several at once:
//! let Some(editcap) = oracle::require(Oracle::Editcap) else { return };
//! let Some([tcpdump, digest]) = oracle::require_all([Oracle::Tcpdump, Oracle::PtQueryDigest]) else {
//!     return;
//! };
//! ```
//!
//! * **Found** (looked up on `PATH` once per test process): the handle runs it ([`oracle::Tool::command`],
//!   [`oracle::Tool::lines`], [`oracle::Tshark::count`]). The handle is the only way to run an oracle,
//!   so a test cannot use one without having asked.
//! * **Missing:** the test prints one line, `skipped: needs tshark (apt-get install tshark) [cli::...]`,
//!   past the test harness's output capture so that it is seen, records the skip, and passes having
//!   asserted nothing else: put the check first.
//! * **Missing under `PCAPSLEUTH_REQUIRE_ORACLES=1`** (what `.ci/run` sets): the test fails, so a green
//!   CI means that every cross-check ran.
//! * **At the end of `cargo test --workspace`** this crate's `oracle_summary` test says how many checks
//!   were skipped and why (see [`skips`] for how it finds the run's records).
//!
//! A new oracle is one more [`Oracle`] variant (its program, or its Python module, and how to install
//! it: a Debian or a Python package) and its entry in `.ci/run` (`oracles=(...)` or
//! `python_modules=(...)`); a test here fails until `.ci/run` installs it.
//!
//! Each oracle names its program and the package `.ci/run` installs it from (Debian's, or Python's for
//! DuckDB and PySpark), and the end of a run groups the skipped checks by what was missing:
//!
//! ```
//! use pcapsleuth_testkit::skips::{summary, Skip};
//! use pcapsleuth_testkit::Oracle;
//!
//! // editcap comes with tshark's package.
//! assert_eq!((Oracle::Editcap.program(), Oracle::Editcap.package()), ("editcap", "tshark"));
//!
//! let skipped = |test: &str| Skip {
//!     reason: "needs tshark (apt-get install tshark)".into(),
//!     target: "cli".into(),
//!     test: test.into(),
//! };
//! let text = summary(&[skipped("errors_match_tshark"), skipped("closes_match_tshark")]);
//! assert!(text.starts_with("oracle checks: 2 skipped in 1 test targets"));
//! let lines: Vec<&str> = text.lines().skip(1).collect();
//! assert_eq!(
//!     lines,
//!     [
//!         "  2 needs tshark (apt-get install tshark):",
//!         "      cli::errors_match_tshark",
//!         "      cli::closes_match_tshark",
//!     ]
//! );
//! assert_eq!(summary(&[]), "oracle checks: none skipped in this run");
//! ```

#![deny(missing_docs)]

pub mod oracle;
pub mod shared;
pub mod skips;
pub mod suite;

pub use oracle::{Install, Oracle};
