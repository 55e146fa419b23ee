//! Finding an oracle, skipping or failing where it is missing, and running it.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The variable that turns a missing oracle from a skip into a failure (`.ci/run` sets it to `1`).
pub const REQUIRE_VAR: &str = "PCAPSLEUTH_REQUIRE_ORACLES";

/// An outside tool a test compares pcapsleuth with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Oracle {
    /// Wireshark's dissectors on the command line.
    Tshark,
    /// Wireshark's capture converter (`editcap -F pcapng`, `-c N` splits).
    Editcap,
    /// Wireshark's capture merger.
    Mergecap,
    /// tcpdump, whose `-x` output pt-query-digest reads.
    Tcpdump,
    /// pt-query-digest from Percona Toolkit: MySQL response times from tcpdump output, reports of slow
    /// logs.
    PtQueryDigest,
    /// pt-fingerprint from Percona Toolkit: pt-query-digest's fingerprint of a statement.
    PtFingerprint,
    /// Python 3 (standard library only), which runs the oracle scripts of `tests/oracle/` (e.g. the
    /// binlog stream walk).
    Python3,
    /// DuckDB's Python package: SQL over the Parquet datasets `export` writes.
    DuckDb,
    /// PySpark: Spark in local mode, a distributed engine running `export` as its per-file task.
    PySpark,
    /// A Java runtime, which Spark runs on.
    Java,
    /// Chromium, headless: renders `report --html`'s page as a person sees it (DOM and screenshot).
    Chromium,
}

/// How an oracle is installed (by `.ci/run`, or by hand).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Install {
    /// A Debian package: `apt-get install PACKAGE`.
    Apt(&'static str),
    /// A Python package, importable by the `python3` on `PATH`: `pip install PACKAGE`.
    Pip(&'static str),
}

impl Oracle {
    /// Every oracle, for `.ci/run`'s install list and the summary.
    pub const ALL: [Oracle; 11] = [
        Oracle::Tshark,
        Oracle::Editcap,
        Oracle::Mergecap,
        Oracle::Tcpdump,
        Oracle::PtQueryDigest,
        Oracle::PtFingerprint,
        Oracle::Python3,
        Oracle::DuckDb,
        Oracle::PySpark,
        Oracle::Java,
        Oracle::Chromium,
    ];

    /// The program looked up on `PATH` (`python3` for a Python package).
    pub fn program(self) -> &'static str {
        match self {
            Oracle::Tshark => "tshark",
            Oracle::Editcap => "editcap",
            Oracle::Mergecap => "mergecap",
            Oracle::Tcpdump => "tcpdump",
            Oracle::PtQueryDigest => "pt-query-digest",
            Oracle::PtFingerprint => "pt-fingerprint",
            Oracle::Python3 | Oracle::DuckDb | Oracle::PySpark => "python3",
            Oracle::Java => "java",
            Oracle::Chromium => "chromium",
        }
    }

    /// The Python module `python3` must import, for an oracle that is a Python package.
    pub fn module(self) -> Option<&'static str> {
        match self {
            Oracle::DuckDb => Some("duckdb"),
            Oracle::PySpark => Some("pyspark"),
            _ => None,
        }
    }

    /// How it is installed (editcap and mergecap come with tshark's dependencies).
    pub fn install(self) -> Install {
        match self {
            Oracle::Tshark | Oracle::Editcap | Oracle::Mergecap => Install::Apt("tshark"),
            Oracle::Tcpdump => Install::Apt("tcpdump"),
            Oracle::PtQueryDigest | Oracle::PtFingerprint => Install::Apt("percona-toolkit"),
            Oracle::Python3 => Install::Apt("python3"),
            Oracle::DuckDb => Install::Pip("duckdb"),
            Oracle::PySpark => Install::Pip("pyspark"),
            Oracle::Java => Install::Apt("default-jre-headless"),
            Oracle::Chromium => Install::Apt("chromium"),
        }
    }

    /// The package that brings it, Debian's or Python's ([`Oracle::install`]).
    pub fn package(self) -> &'static str {
        match self.install() {
            Install::Apt(p) | Install::Pip(p) => p,
        }
    }

    /// Where the program is, looked up on `PATH` once per process; for a Python package, `python3`
    /// if it imports the module.
    fn location(self) -> Option<&'static Path> {
        static FOUND: [OnceLock<Option<PathBuf>>; Oracle::ALL.len()] =
            [const { OnceLock::new() }; Oracle::ALL.len()];
        FOUND[self as usize]
            .get_or_init(|| {
                let path = which::which(self.program()).ok()?;
                match self.module() {
                    None => Some(path),
                    Some(m) => Command::new(&path)
                        .args(["-c", &format!("import {m}")])
                        .output()
                        .ok()
                        .filter(|o| o.status.success())
                        .map(|_| path),
                }
            })
            .as_deref()
    }

    /// `tshark (apt-get install tshark)`, `duckdb (pip install duckdb)`.
    fn need(self) -> String {
        match self.install() {
            Install::Apt(p) => format!("{} (apt-get install {p})", self.program()),
            Install::Pip(p) => format!(
                "the Python package {} (pip install {p})",
                self.module().unwrap_or(p)
            ),
        }
    }
}

/// Whether a missing oracle fails the test (`PCAPSLEUTH_REQUIRE_ORACLES` set to anything but `0`).
pub fn required() -> bool {
    std::env::var_os(REQUIRE_VAR).is_some_and(|v| !v.is_empty() && v != "0")
}

/// The oracle, if it is installed. If not, prints `skipped: needs ...`, records the skip for the run's
/// summary and returns `None`; the caller returns at once. Panics instead when
/// `PCAPSLEUTH_REQUIRE_ORACLES=1`.
#[track_caller]
pub fn require(oracle: Oracle) -> Option<Tool> {
    require_all([oracle]).map(|[tool]| tool)
}

/// Several oracles, all or none: a test that needs two skips once, naming every missing one.
#[track_caller]
pub fn require_all<const N: usize>(oracles: [Oracle; N]) -> Option<[Tool; N]> {
    let missing: Vec<String> = oracles
        .iter()
        .filter(|o| o.location().is_none())
        .map(|o| o.need())
        .collect();
    if missing.is_empty() {
        return Some(oracles.map(|oracle| Tool {
            oracle,
            path: oracle.location().expect("looked up above"),
        }));
    }
    let reason = format!("needs {}", missing.join(", "));
    assert!(
        !required(),
        "{reason}: {REQUIRE_VAR} is set, so a missing oracle is a failure"
    );
    crate::skips::record(&reason);
    None
}

/// tshark, with helpers for its display filters; see [`require`].
#[track_caller]
pub fn tshark() -> Option<Tshark> {
    require(Oracle::Tshark).map(Tshark)
}

/// An oracle that was found. Only [`require`] makes one, so running an oracle implies having asked.
#[derive(Debug, Clone, Copy)]
pub struct Tool {
    oracle: Oracle,
    path: &'static Path,
}

impl Tool {
    /// Which oracle this is.
    pub fn oracle(&self) -> Oracle {
        self.oracle
    }

    /// A command for the program, to add arguments to.
    pub fn command(&self) -> Command {
        Command::new(self.path)
    }

    /// Runs it with `args` and returns its stdout; panics, with its stderr, unless it exits with 0.
    pub fn stdout<I, S>(&self, args: I) -> String
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let args: Vec<OsString> = args.into_iter().map(|a| a.as_ref().to_owned()).collect();
        let program = self.oracle.program();
        let out = self
            .command()
            .args(&args)
            .output()
            .unwrap_or_else(|e| panic!("{program} {args:?}: {e}"));
        assert!(
            out.status.success(),
            "{program} {args:?} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// [`Tool::stdout`]'s lines, blank ones left out.
    pub fn lines<I, S>(&self, args: I) -> Vec<String>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.stdout(args)
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(str::to_owned)
            .collect()
    }
}

/// tshark, found: [`Tool`]'s runners plus counts of what a display filter selects.
#[derive(Debug, Clone, Copy)]
pub struct Tshark(Tool);

impl Tshark {
    /// The underlying [`Tool`].
    pub fn tool(&self) -> Tool {
        self.0
    }

    /// tshark's non-blank output lines for `args`; see [`Tool::lines`].
    pub fn lines<I, S>(&self, args: I) -> Vec<String>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.0.lines(args)
    }

    /// The number of frames of `file` that the display filter selects.
    pub fn count(&self, file: &Path, filter: &str) -> usize {
        self.count_with(file, &[], filter)
    }

    /// [`Tshark::count`] with extra arguments before the filter, e.g. `["-d", "tcp.port==6033,mysql"]`.
    pub fn count_with(&self, file: &Path, extra: &[&str], filter: &str) -> usize {
        let mut args: Vec<&OsStr> = vec!["-r".as_ref(), file.as_os_str()];
        args.extend(extra.iter().map(OsStr::new));
        args.extend(["-Y", filter, "-T", "fields", "-e", "frame.number"].map(OsStr::new));
        self.lines(args).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_oracle_is_listed_once_in_variant_order() {
        for (i, o) in Oracle::ALL.iter().enumerate() {
            assert_eq!(*o as usize, i, "{o:?}: ALL is indexed by the variant");
        }
    }

    /// CI must install every oracle, or `PCAPSLEUTH_REQUIRE_ORACLES=1` fails its tests there: Debian
    /// packages from `oracles=(program:package ...)`, Python packages from
    /// `python_modules=(module:package ...)`.
    #[test]
    fn ci_installs_every_oracle() {
        let ci = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.ci/run");
        let script = std::fs::read_to_string(&ci).expect(".ci/run");
        let list = |var: &str| {
            script
                .lines()
                .find_map(|l| l.strip_prefix(var))
                .unwrap_or_else(|| panic!(".ci/run lists the oracles as `{var}...)`"))
                .to_string()
        };
        let (apt, pip) = (list("oracles=("), list("python_modules=("));
        for o in Oracle::ALL {
            let (list, name, entry) = match o.install() {
                Install::Apt(p) => (&apt, "oracles", format!("{}:{p}", o.program())),
                Install::Pip(p) => (
                    &pip,
                    "python_modules",
                    format!("{}:{p}", o.module().expect("a pip oracle names its module")),
                ),
            };
            assert!(
                list.split([' ', ')']).any(|e| e == entry),
                "{}: `{name}=(...)` must have `{entry}`",
                ci.display()
            );
        }
    }

    #[test]
    fn the_skip_reason_names_the_program_and_its_package() {
        assert_eq!(
            Oracle::PtQueryDigest.need(),
            "pt-query-digest (apt-get install percona-toolkit)"
        );
        assert_eq!(
            Oracle::DuckDb.need(),
            "the Python package duckdb (pip install duckdb)"
        );
    }
}
