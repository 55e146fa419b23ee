//! The run's record of skipped oracle checks, and its summary.
//!
//! `cargo test --workspace` runs one test binary after another, each a child of the same cargo process,
//! in the order of their package names; this crate's name sorts last. So every skip is appended to a
//! file under `target/<profile>/oracle-skips/<run>/`, where `<run>` names the parent cargo process
//! (its pid and, on Linux, its start time, so that a reused pid is a different run), and this crate's
//! `oracle_summary` test, run last, reads the run's records, prints the summary and removes them.
//! Records of runs that never reached the summary (`cargo test -p ...`, a failed binary) are removed
//! once they are a day old.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// One skipped test: why, and which.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skip {
    /// What was missing, as the skip line says it: `needs tshark (apt-get install tshark)`.
    pub reason: String,
    /// The test target (binary) it is in, e.g. `cli`.
    pub target: String,
    /// The test's name as the harness gives it: its path in the target, e.g. `errors_match_tshark`, or
    /// `module::test` for a test in a module.
    pub test: String,
}

/// Prints the skip line past the harness's capture and appends it to this run's record.
pub(crate) fn record(reason: &str) {
    let skip = Skip {
        reason: reason.to_owned(),
        target: target_name(),
        test: std::thread::current()
            .name()
            .unwrap_or("<unnamed>")
            .to_owned(),
    };
    // Straight to the stream, in one write: the harness captures print!/eprint! of passing tests, not
    // this, and other tests write beside it.
    let line = format!(
        "skipped: {} [{}::{}]\n",
        skip.reason, skip.target, skip.test
    );
    let _ = std::io::stderr().write_all(line.as_bytes());
    if let Some(dir) = run_dir() {
        if let Err(e) = append(&dir, &skip) {
            let _ = writeln!(
                std::io::stderr(),
                "(could not record the skip in {}: {e})",
                dir.display()
            );
        }
    }
}

/// Reads and removes this run's records, and those of runs over a day old.
pub fn take_this_run() -> Vec<Skip> {
    let Some(dir) = run_dir() else {
        return Vec::new();
    };
    let skips = read(&dir);
    let _ = fs::remove_dir_all(&dir);
    if let Some(Ok(runs)) = dir.parent().map(fs::read_dir) {
        let day_ago = SystemTime::now() - Duration::from_secs(24 * 3600);
        for run in runs.flatten() {
            if run
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|t| t < day_ago)
            {
                let _ = fs::remove_dir_all(run.path());
            }
        }
    }
    skips
}

/// What the run skipped, grouped by reason, for the end of the run.
pub fn summary(skips: &[Skip]) -> String {
    if skips.is_empty() {
        return "oracle checks: none skipped in this run".to_owned();
    }
    let mut by_reason: BTreeMap<&str, Vec<&Skip>> = BTreeMap::new();
    for s in skips {
        by_reason.entry(&s.reason).or_default().push(s);
    }
    let targets: std::collections::BTreeSet<&str> =
        skips.iter().map(|s| s.target.as_str()).collect();
    let mut out = format!(
        "oracle checks: {} skipped in {} test targets, because a tool to compare with or an input of \
         ../shared is missing (install the tools and put ../shared beside the repository, or run \
         .ci/run, for every cross-check):",
        skips.len(),
        targets.len()
    );
    let mut by_reason: Vec<(&str, Vec<&Skip>)> = by_reason.into_iter().collect();
    by_reason.sort_by_key(|(_, tests)| std::cmp::Reverse(tests.len()));
    for (reason, tests) in by_reason {
        out.push_str(&format!("\n  {} {reason}:", tests.len()));
        for t in tests {
            out.push_str(&format!("\n      {}::{}", t.target, t.test));
        }
    }
    out
}

/// `target/<profile>/oracle-skips/<run>`: beside the test binaries (`target/<profile>/deps/`), whatever
/// `CARGO_TARGET_DIR` is.
fn run_dir() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    Some(exe.parent()?.parent()?.join("oracle-skips").join(run_id()))
}

/// The parent process (cargo, for `cargo test`): its pid and, where `/proc` says, its start time.
fn run_id() -> String {
    let ppid = std::os::unix::process::parent_id();
    let started = fs::read_to_string(format!("/proc/{ppid}/stat"))
        .ok()
        .and_then(|stat| {
            // Field 22, `starttime`; the fields after the `(comm)` one start at field 3.
            let after_comm = stat.rsplit_once(')')?.1;
            after_comm.split_whitespace().nth(19).map(str::to_owned)
        });
    match started {
        Some(t) => format!("{ppid}-{t}"),
        None => ppid.to_string(),
    }
}

/// The test binary's name without cargo's hash: `cli` for `target/debug/deps/cli-0a1b2c...`.
fn target_name() -> String {
    let exe = std::env::current_exe().unwrap_or_default();
    let stem = exe.file_stem().and_then(|s| s.to_str()).unwrap_or("?");
    stem.rsplit_once('-')
        .map_or(stem, |(name, _hash)| name)
        .to_owned()
}

/// One line per skip, tab-separated, in a file per test process (appends from its threads are whole
/// lines: one `write` each).
fn append(dir: &Path, skip: &Skip) -> std::io::Result<()> {
    fs::create_dir_all(dir)?;
    let mut f = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join(std::process::id().to_string()))?;
    f.write_all(format!("{}\t{}\t{}\n", skip.reason, skip.target, skip.test).as_bytes())
}

fn read(dir: &Path) -> Vec<Skip> {
    let mut skips: Vec<Skip> = fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| fs::read_to_string(e.path()).ok())
        .flat_map(|text| {
            text.lines()
                .filter_map(|l| {
                    let mut f = l.splitn(3, '\t');
                    Some(Skip {
                        reason: f.next()?.to_owned(),
                        target: f.next()?.to_owned(),
                        test: f.next()?.to_owned(),
                    })
                })
                .collect::<Vec<_>>()
        })
        .collect();
    skips.sort_by(|a, b| (&a.target, &a.test).cmp(&(&b.target, &b.test)));
    skips
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_appended_from_several_threads_read_back_whole() {
        let dir = std::env::temp_dir().join(format!("pcapsleuth-skips-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let skip = |i: usize| Skip {
            reason: format!("needs tool{} (apt-get install pkg{})", i % 3, i % 3),
            target: "cli".to_owned(),
            test: format!("test_{i:02}"),
        };
        std::thread::scope(|s| {
            for i in 0..40 {
                let dir = &dir;
                s.spawn(move || append(dir, &skip(i)).unwrap());
            }
        });
        let back = read(&dir);
        fs::remove_dir_all(&dir).unwrap();
        assert_eq!(back, (0..40).map(skip).collect::<Vec<_>>());
        let text = summary(&back);
        assert!(
            text.starts_with("oracle checks: 40 skipped in 1 test targets"),
            "{text}"
        );
        assert!(
            text.contains("\n  14 needs tool0 (apt-get install pkg0):\n      cli::test_00\n"),
            "{text}"
        );
    }

    /// The summary runs after every other test binary only while this package's name sorts last.
    #[test]
    fn no_workspace_package_sorts_after_this_one() {
        let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        for member in fs::read_dir(&crates).unwrap().flatten() {
            let Ok(manifest) = fs::read_to_string(member.path().join("Cargo.toml")) else {
                continue;
            };
            let name = manifest
                .lines()
                .find_map(|l| l.strip_prefix("name = \""))
                .and_then(|l| l.strip_suffix('"'))
                .unwrap_or_else(|| panic!("{:?}: no package name", member.path()));
            assert!(
                name <= env!("CARGO_PKG_NAME"),
                "package `{name}` sorts after `{}`, so cargo would run its tests after the oracle summary: \
                 rename one of them",
                env!("CARGO_PKG_NAME")
            );
        }
    }

    #[test]
    fn a_test_binary_is_named_without_cargos_hash() {
        // This unit test binary is target/<profile>/deps/pcapsleuth_testkit-<hash>.
        assert_eq!(target_name(), "pcapsleuth_testkit");
    }
}
