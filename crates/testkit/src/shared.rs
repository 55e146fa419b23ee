//! Inputs kept beside the repository in `../shared` rather than in it, never copied into the repository:
//! the captures that adversarial testing and fuzzing found breaking a promise (`adversary-findings`,
//! `fuzz-findings`) and the captures others recorded (`external`: Zeek's, the peers').
//! A test that needs one asks for it first, as for an oracle; where `../shared` is absent it prints
//! `skipped: needs ../shared/adversary-findings/NAME ...`, records the skip for the run's summary and
//! returns; under `PCAPSLEUTH_REQUIRE_ORACLES=1` (CI) it fails instead.
//!
//! ```no_run
//! # let root = std::path::Path::new(".");
//! let Some(capture) = pcapsleuth_testkit::shared::adversary_finding(root, "ipfrag_silently_dropped.pcap")
//! else {
//!     return;
//! };
//! ```

use std::path::{Path, PathBuf};

/// `../shared/adversary-findings/NAME` beside the workspace root `root` (the root package's
/// `CARGO_MANIFEST_DIR`), if it is there; else the skip is said and recorded, and `None` returned.
#[track_caller]
pub fn adversary_finding(root: &Path, name: &str) -> Option<PathBuf> {
    input(root, &format!("adversary-findings/{name}"))
}

/// `../shared/REL` (a file or a directory: `external/peers`, `fuzz-findings/segmentation`, ...) beside
/// the workspace root `root`, if it is there; else the skip is said and recorded, and `None` returned
/// (a failure under `PCAPSLEUTH_REQUIRE_ORACLES=1`, as in CI).
#[track_caller]
pub fn input(root: &Path, rel: &str) -> Option<PathBuf> {
    let path = root.join("../shared").join(rel);
    if path.exists() {
        return Some(path);
    }
    let reason = format!(
        "needs ../shared/{rel} (beside the repository; {} not found)",
        path.display()
    );
    assert!(
        !crate::oracle::required(),
        "{reason}: PCAPSLEUTH_REQUIRE_ORACLES is set, so a missing input is a failure"
    );
    crate::skips::record(&reason);
    None
}
