//! Shared helpers of the end-to-end tests: where the real captures are, and how to run the binary.
//! The tools the tests compare against (tshark, ...) are asked for through `pcapsleuth_testkit::oracle`.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The captures recorded for this project (fixtures/) and the external ones others recorded
/// (../shared/external/zeek-mysql, present beside every checkout and in CI).
pub fn real_captures() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    for dir in [
        root.join("fixtures"),
        root.join("../shared/external/zeek-mysql"),
    ] {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            let ext = p.extension().and_then(|s| s.to_str()).unwrap_or("");
            if ext == "pcap" || ext == "pcapng" {
                out.push(p);
            }
        }
    }
    out.sort();
    assert!(
        out.len() >= 5,
        "expected the fixtures and ../shared/external captures, found {out:?}"
    );
    out
}

pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(name)
}

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_pcapsleuth")
}

/// Runs the binary with `args`, asserts success, and returns its stdout.
fn stdout(args: &[&str]) -> Vec<u8> {
    let o = Command::new(bin()).args(args).output().unwrap();
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o.stdout
}

/// Runs the binary with `args`, asserts success, and parses its stdout as JSON.
pub fn json(args: &[&str]) -> serde_json::Value {
    serde_json::from_slice(&stdout(args)).unwrap()
}

/// Runs the binary with `args`, asserts success, and returns its stdout as text.
pub fn text(args: &[&str]) -> String {
    String::from_utf8_lossy(&stdout(args)).into_owned()
}
