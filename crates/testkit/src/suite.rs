//! One test binary per package.
//!
//! Every file under a package's `tests/` would be a test binary of its own, each linked against the whole
//! library and run one after another. A package instead lists its test files as modules of one binary
//! (`autotests = false` and one `[[test]]` in its Cargo.toml): one link instead of dozens, and the tests
//! of all files share the harness's threads. The cost of that choice is that a new file nobody lists is
//! never compiled nor run. [`assert_lists_every_test_file`] is the test that makes that a failure.

use std::path::Path;

/// Fails unless the test binary's root file `root` (e.g. `tests/e2e.rs`) declares every other `*.rs` file
/// of its directory as a module, `mod NAME;`. (Helpers shared by the files, `tests/common/`, are declared
/// once there too, and each file says `use crate::common;`.)
pub fn assert_lists_every_test_file(root: &Path) {
    let text = std::fs::read_to_string(root).unwrap_or_else(|e| panic!("{}: {e}", root.display()));
    let dir = root.parent().unwrap_or(Path::new("."));
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let mut missing = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if path == root || path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        let declared = format!("mod {stem};");
        if !text.contains(&declared) {
            missing.push(declared);
        }
    }
    missing.sort();
    assert!(
        missing.is_empty(),
        "{} does not list these test files, so they are never compiled nor run; add:\n{}",
        root.display(),
        missing.join("\n")
    );
}
