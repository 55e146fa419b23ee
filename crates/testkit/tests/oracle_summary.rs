//! The end of `cargo test --workspace`: how many oracle checks were skipped, and why.
//!
//! cargo runs the test binaries one after another in the order of their package names, and
//! `pcapsleuth-testkit` sorts last, so by now every other test of the run has finished (see
//! `pcapsleuth_testkit::skips`). Run alone, it summarises only itself: nothing.

use pcapsleuth_testkit::skips;
use std::io::Write;

#[test]
fn the_run_says_which_oracle_checks_were_skipped() {
    let skipped = skips::take_this_run();
    // Past the harness's capture: this is the run's last word before cargo's own.
    let _ = writeln!(std::io::stderr(), "\n{}\n", skips::summary(&skipped));
    for s in &skipped {
        assert!(
            s.reason.starts_with("needs ") && !s.target.is_empty() && !s.test.is_empty(),
            "a malformed skip record: {s:?}"
        );
    }
}
