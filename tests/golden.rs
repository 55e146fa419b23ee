//! The output of every analysis command on every real capture, as it was last reviewed.
//!
//! `tests/golden/<set>/<capture>.json` holds each command's `--json` document, and `<capture>.txt` its text
//! with its exit code and whatever it wrote to stderr, for the captures recorded for this project
//! (`fixtures/`) and those recorded by others (`../shared/external/zeek-mysql`, `../shared/external/peers`).
//! A change to any output fails this test until it is looked at and accepted: a refactoring must leave them
//! alone, and a deliberate change shows, in the diff of these files, exactly what users will see differently.
//!
//! To accept the current outputs: `PCAPSLEUTH_BLESS=1 cargo test --test e2e golden::` (refused under `CI`), then
//! review `git diff tests/golden`.

use crate::common;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The analysis commands, each run with its defaults.
const COMMANDS: [&str; 6] = ["first-reset", "flows", "mysql", "rate", "rt", "report"];

/// One capture (a file, or a directory read as one rotated set) and where its goldens live.
struct Case {
    input: PathBuf,
    /// `<set>/<capture>`, relative to `tests/golden`.
    name: String,
}

fn cases() -> Vec<Case> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    // Without ../shared, the fixtures' goldens alone are checked (the skip said).
    let sets = [
        ("fixtures", Some(root.join("fixtures"))),
        ("zeek-mysql", common::shared("external/zeek-mysql")),
        ("peers", common::shared("external/peers")),
    ];
    let all = sets.iter().all(|(_, dir)| dir.is_some());
    for (set, dir) in sets {
        let Some(dir) = dir else {
            continue;
        };
        let mut found = Vec::new();
        collect(&dir, &mut found);
        for input in found {
            let rel = input.strip_prefix(&dir).unwrap_or(&input);
            out.push(Case {
                name: format!("{set}/{}", rel.display()),
                input,
            });
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    assert!(
        out.len() >= if all { 100 } else { 40 },
        "expected fixtures/ and ../shared/external beside the checkout, found {} captures",
        out.len()
    );
    out
}

/// Every capture under `dir`; a directory of capture files only (a rotated set) is one capture.
fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            if p.file_name().is_some_and(|n| n == "rotated") {
                out.push(p);
            } else {
                collect(&p, out);
            }
        } else if is_capture(&p) {
            out.push(p);
        }
    }
}

fn is_capture(p: &Path) -> bool {
    let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
    name.ends_with(".pcap") || name.ends_with(".pcapng") || name.ends_with(".cap")
}

/// What every command printed for one capture: `(json, text)`.
///
/// The commands run in the repository's root with the capture's path relative to it, because the outputs
/// name their input: an absolute path would tie the goldens to one checkout's location.
fn outputs(case: &Case) -> (String, String) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let relative = case.input.strip_prefix(root).unwrap_or(&case.input);
    let input = relative.to_str().expect("capture paths are UTF-8");
    let mut json = serde_json::Map::new();
    let mut text = String::new();
    for command in COMMANDS {
        let o = Command::new(common::bin())
            .current_dir(root)
            .args([command, "--json", input])
            .output()
            .unwrap();
        let value = serde_json::from_slice(&o.stdout).unwrap_or_else(|_| {
            serde_json::Value::String(String::from_utf8_lossy(&o.stdout).into_owned())
        });
        json.insert(command.to_string(), digest_if_large(value));

        let o = Command::new(common::bin())
            .current_dir(root)
            .args([command, input])
            .output()
            .unwrap();
        let _ = writeln!(
            text,
            "===== pcapsleuth {command} (exit {}) =====",
            o.status.code().map_or("none".into(), |c| c.to_string())
        );
        let stdout = String::from_utf8_lossy(&o.stdout);
        if stdout.len() <= LARGEST_KEPT {
            text.push_str(&stdout);
        } else {
            use sha2::Digest;
            let _ = writeln!(
                text,
                "({} bytes, sha256 {:x})",
                stdout.len(),
                sha2::Sha256::digest(stdout.as_bytes())
            );
        }
        if !o.stderr.is_empty() {
            let _ = writeln!(text, "----- stderr -----");
            text.push_str(&String::from_utf8_lossy(&o.stderr));
        }
    }
    let mut json = serde_json::to_string_pretty(&serde_json::Value::Object(json)).unwrap();
    json.push('\n');
    (json, text)
}

/// Outputs larger than this are kept as a digest (an nDPI SYN scan lists 20,000 connections): a change
/// still fails the test, and the command shows what it is now.
const LARGEST_KEPT: usize = 200_000;

fn digest_if_large(value: serde_json::Value) -> serde_json::Value {
    use sha2::Digest;
    let pretty = serde_json::to_string_pretty(&value).unwrap();
    if pretty.len() <= LARGEST_KEPT {
        return value;
    }
    serde_json::json!({
        "sha256": format!("{:x}", sha2::Sha256::digest(pretty.as_bytes())),
        "bytes": pretty.len(),
    })
}

/// Where `a` and `b` first differ, as a line number and the two lines.
fn first_difference(a: &str, b: &str) -> String {
    let (mut la, mut lb) = (a.lines(), b.lines());
    for n in 1.. {
        match (la.next(), lb.next()) {
            (Some(x), Some(y)) if x == y => continue,
            (None, None) => break,
            (x, y) => {
                return format!(
                    "line {n}:\n    golden: {}\n    now:    {}",
                    x.unwrap_or("<end>"),
                    y.unwrap_or("<end>")
                )
            }
        }
    }
    "identical".into()
}

#[test]
fn every_command_prints_what_was_reviewed_on_every_real_capture() {
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let bless = std::env::var_os("PCAPSLEUTH_BLESS").is_some();
    assert!(
        !(bless && std::env::var_os("CI").is_some()),
        "PCAPSLEUTH_BLESS is refused under CI: goldens are accepted by a person"
    );
    let cases = cases();
    // Two workers: the binary itself runs on every core.
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: Vec<(usize, String, String)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(case) = cases.get(i) else { break };
                        let (json, text) = outputs(case);
                        done.push((i, json, text));
                    }
                    done
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect()
    });
    let mut differences = Vec::new();
    for (i, json, text) in results {
        let case = &cases[i];
        for (ext, now) in [("json", json), ("txt", text)] {
            let path = golden.join(format!("{}.{ext}", case.name));
            if bless {
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(&path, &now).unwrap();
                continue;
            }
            let was = std::fs::read_to_string(&path).unwrap_or_default();
            if was != now {
                differences.push(format!(
                    "{}: {}",
                    path.strip_prefix(&golden).unwrap().display(),
                    first_difference(&was, &now)
                ));
            }
        }
    }
    assert!(
        differences.is_empty(),
        "{} outputs differ from tests/golden (review, then accept with PCAPSLEUTH_BLESS=1):\n{}",
        differences.len(),
        differences.join("\n")
    );
}

/// Words that must not follow a lone "1": the plural of what is counted.
const PLURALS_AFTER_ONE: [&str; 24] = [
    "connections",
    "TCP connections",
    "requests",
    "MySQL requests",
    "sessions",
    "MySQL sessions",
    "responses",
    "error responses",
    "MySQL error responses",
    "packets",
    "bytes",
    "rows",
    "events",
    "transactions",
    "SYNs",
    "ACKs",
    "closes",
    "attempts",
    "connects",
    "logins",
    "MySQL logins",
    "humps",
    "files",
    "pairs",
];

/// What the house style (`pcapsleuth_report::style`) rules out, in one line of text: `None` when the
/// line keeps it.
fn style_fault(line: &str) -> Option<String> {
    let width = line.chars().count();
    if width > 120 {
        return Some(format!("{width} characters (at most 120)"));
    }
    if line.contains(".000000") {
        return Some("trailing zeros (\".000000\")".into());
    }
    if line.contains("n=0") {
        return Some("a statistic of nothing (\"n=0\"; \"—\" says it)".into());
    }
    for (at, _) in line.match_indices("1 ") {
        let before = line[..at].chars().next_back();
        if before.is_some_and(|c| c.is_ascii_digit() || c == ',' || c == '.') {
            continue;
        }
        let after = &line[at + 2..];
        for noun in PLURALS_AFTER_ONE {
            if after.starts_with(noun)
                && !after[noun.len()..]
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_alphanumeric())
            {
                return Some(format!("\"1 {noun}\" (one is singular)"));
            }
        }
    }
    None
}

#[test]
fn the_house_style_holds_in_every_golden_text() {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "txt") {
                out.push(p);
            }
        }
    }
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut files = Vec::new();
    walk(&golden, &mut files);
    files.sort();
    assert!(files.len() >= 100, "{} golden texts", files.len());
    let mut faults = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        // What a command wrote to stderr is left out: a warning or an error is one line whatever its length,
        // so that a script can read it (tests/cli.rs), and the width is stdout's.
        let mut on_stderr = false;
        for (n, line) in text.lines().enumerate() {
            if line.starts_with("===== pcapsleuth ") {
                on_stderr = false;
            } else if line == "----- stderr -----" {
                on_stderr = true;
            }
            if on_stderr {
                continue;
            }
            if let Some(fault) = style_fault(line) {
                faults.push(format!(
                    "{}:{}: {fault}: {line}",
                    f.strip_prefix(&golden).unwrap().display(),
                    n + 1
                ));
            }
        }
    }
    assert!(
        faults.is_empty(),
        "{} lines break the house style:\n{}",
        faults.len(),
        faults.join("\n")
    );
}

#[test]
fn the_house_style_check_finds_what_it_looks_for() {
    assert!(style_fault(&"x".repeat(121)).is_some());
    assert!(
        style_fault(&"µ".repeat(120)).is_none(),
        "characters, not bytes"
    );
    assert!(style_fault("  2026-11-23 08:39:31.000000 UTC  2").is_some());
    assert!(style_fault("  errors    n=0 —").is_some());
    assert!(style_fault("1 connections").is_some());
    assert!(style_fault("2. [errors] 1 MySQL error responses (1.0% of 12 requests)").is_some());
    assert!(style_fault("of 1 TCP connections").is_some());
    assert!(style_fault("11 connections, 2,001 connections, 1 connection").is_none());
    assert!(style_fault("1 ms, 1 kbit/s, 0.1 seconds").is_none());
    assert!(style_fault("1 connectionsfoo").is_none());
}
