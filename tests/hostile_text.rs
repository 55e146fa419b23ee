//! Nothing from a capture reaches a terminal raw. A statement, an error message or a file name can hold
//! escape sequences (set the window title, plant a hyperlink, clear the screen, make the terminal answer)
//! and bidirectional overrides (hide or reorder text): every command shows each such character as an
//! escape (`\x1b`, `\u009b`, `\u202e`), in its text, its JSON (where `\u001b` decodes back to the very
//! same value), its HTML page, its plots, the comments `extract --annotate` writes and its messages on
//! stderr.
//!
//! The inputs: the adversary's captures (`../shared/adversary-findings`, read from there; the tests that
//! need them say so and pass when it is absent), and the real capture `markup.pcap` with the text of its
//! statements and error message (the three payload strings it was recorded with) overwritten, byte for
//! byte, by every C0 and C1 control, DEL, the bidirectional controls and OSC, DCS and CSI sequences:
//! lengths unchanged, so every MySQL packet still frames and decodes as recorded.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use pcapsleuth::report::visible::is_hazard;

/// An adversary capture, or `None` (having said so on stderr, past the harness's capture) when
/// `../shared` is not beside the repository; a failure instead under `PCAPSLEUTH_REQUIRE_ORACLES=1`, as
/// CI sets, where it always is.
pub fn adversary(name: &str) -> Option<PathBuf> {
    common::shared(&format!("adversary-findings/{name}"))
}

/// The strings `markup.pcap` was recorded with, each in a statement (and the second in an error
/// message, the first in a column name): where the payloads go.
const SLOTS: [&str; 3] = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(2)>",
    "</pre><script>alert(3)</script>",
];

/// What is planted: every C0 control, DEL, every C1 control, every bidirectional control and separator,
/// and the sequences an attacker would send (OSC title and hyperlink, DCS, CSI clear, home and cursor
/// report, 8-bit CSI). Each fits the shortest slot (25 bytes).
fn payloads() -> Vec<String> {
    let chars = |range: std::ops::RangeInclusive<u32>| -> String {
        range.filter_map(char::from_u32).collect()
    };
    vec![
        chars(0x00..=0x0f),
        chars(0x10..=0x1f) + "\x7f",
        chars(0x80..=0x8b),
        chars(0x8c..=0x97),
        chars(0x98..=0x9f),
        chars(0x202a..=0x202e) + "\u{061c}\u{200e}\u{200f}",
        chars(0x2066..=0x2069) + "\u{2028}\u{2029}",
        "\x1b]0;PWNED\x07\x1b]8;;h\x1b\\".to_string(),
        "\x1bP+q\x1b\\\x1b[2J\x1b[H\u{9b}31m\x1b[6n".to_string(),
    ]
}

/// `markup.pcap` with each slot overwritten by `payload`, padded with `x` to the slot's length.
fn planted(payload: &str) -> Vec<u8> {
    let mut bytes = std::fs::read(common::fixture("markup.pcap")).unwrap();
    for slot in SLOTS {
        let mut with = payload.as_bytes().to_vec();
        assert!(
            with.len() <= slot.len(),
            "{payload:?} is longer than {slot}"
        );
        with.resize(slot.len(), b'x');
        let mut found = 0;
        let mut at = 0;
        while let Some(i) = find(&bytes[at..], slot.as_bytes()) {
            bytes[at + i..at + i + slot.len()].copy_from_slice(&with);
            at += i + slot.len();
            found += 1;
        }
        assert!(found > 0, "{slot} is no longer in markup.pcap");
    }
    bytes
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Fails if `bytes` (something a command wrote) hold a hazard other than a line break, naming it and
/// showing where.
fn assert_shown(what: &str, bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    if let Some((i, c)) = text
        .char_indices()
        .find(|&(_, c)| is_hazard(c) && c != '\n')
    {
        let from = text[..i].char_indices().rev().nth(60).map_or(0, |(j, _)| j);
        panic!(
            "{what}: U+{:04X} written raw after: {:?}",
            c as u32,
            &text[from..i]
        );
    }
}

fn run(args: &[&str]) -> Output {
    Command::new(common::bin()).args(args).output().unwrap()
}

/// Runs `args`, which must not fail otherwise than as bad input (2: the planted captures are fine, the
/// adversary's may be damaged), and checks what it wrote to stdout and stderr.
fn run_shown(args: &[&str]) -> Output {
    let o = run(args);
    let what = format!("pcapsleuth {}", args.join(" "));
    assert!(
        matches!(o.status.code(), Some(0 | 2)),
        "{what}: exit {:?}: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        !String::from_utf8_lossy(&o.stderr).contains("panicked"),
        "{what}"
    );
    assert_shown(&format!("{what} (stdout)"), &o.stdout);
    assert_shown(&format!("{what} (stderr)"), &o.stderr);
    o
}

/// The comments of every packet of a pcapng file as `PcapngWriter` writes it (little-endian).
fn packet_comments(path: &Path) -> Vec<Vec<u8>> {
    let b = std::fs::read(path).unwrap();
    let word = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap()) as usize;
    let (mut at, mut out) = (0, Vec::new());
    while at + 12 <= b.len() {
        let (kind, len) = (word(at), word(at + 4));
        if kind == 6 {
            let caplen = word(at + 20);
            let mut o = at + 28 + caplen.next_multiple_of(4);
            while o + 4 <= at + len - 4 {
                let code = u16::from_le_bytes([b[o], b[o + 1]]);
                let n = usize::from(u16::from_le_bytes([b[o + 2], b[o + 3]]));
                if code == 0 {
                    break;
                }
                if code == 1 {
                    out.push(b[o + 4..o + 4 + n].to_vec());
                }
                o += 4 + n.next_multiple_of(4);
            }
        }
        at += len;
    }
    out
}

/// Every command on `capture`, each output checked: text and JSON of the analyses, the HTML page and
/// plots, an annotated extract's comments, compare, export's messages. `area` names the scratch
/// directory.
fn every_command_shows_what_it_prints(capture: &Path, area: &str) {
    let f = capture.to_str().unwrap();
    for command in ["first-reset", "flows", "mysql", "rt", "rate", "report"] {
        run_shown(&[command, f]);
        run_shown(&[command, "--json", f]);
    }
    run_shown(&["rt", "--per-interval", f]);
    run_shown(&["mysql", "--errors-only", f]);
    let html = common::scratch(area, "report.html");
    let plots = common::scratch(area, "plots");
    run_shown(&[
        "report",
        f,
        "--html",
        html.to_str().unwrap(),
        "--plots",
        plots.to_str().unwrap(),
    ]);
    assert_shown("report --html", &std::fs::read(&html).unwrap());
    for svg in std::fs::read_dir(&plots).unwrap().flatten() {
        if svg.path().extension().is_some_and(|e| e == "svg") {
            assert_shown(
                &svg.path().display().to_string(),
                &std::fs::read(svg.path()).unwrap(),
            );
        }
    }
    let annotated = common::scratch(area, "annotated.pcapng");
    run_shown(&[
        "extract",
        f,
        "--findings",
        "--abnormal",
        "--annotate",
        "-o",
        annotated.to_str().unwrap(),
    ]);
    let comments = packet_comments(&annotated);
    assert!(!comments.is_empty(), "{f}: no comment written");
    for c in &comments {
        assert_shown("a packet comment of extract --annotate", c);
    }
    run_shown(&["compare", f, f]);
    run_shown(&["compare", "--json", f, f]);
    let parquet = common::scratch(area, "parquet");
    let _ = std::fs::remove_dir_all(&parquet);
    run_shown(&["export", f, "--parquet", parquet.to_str().unwrap()]);
}

#[test]
fn every_control_and_bidi_character_planted_in_statements_and_errors_is_shown_in_every_command() {
    for (i, payload) in payloads().iter().enumerate() {
        let area = format!("hostile-text-{i}");
        let capture = common::scratch(&area, "planted.pcap");
        std::fs::write(&capture, planted(payload)).unwrap();
        every_command_shows_what_it_prints(&capture, &area);
    }
}

#[test]
fn json_values_stay_true_to_the_capture_while_the_document_holds_no_control() {
    // The error message and the statement of session 2 carry the planted characters exactly.
    for payload in payloads() {
        let capture = common::scratch("hostile-json", "planted.pcap");
        std::fs::write(&capture, planted(&payload)).unwrap();
        let o = run_shown(&["mysql", "--json", capture.to_str().unwrap()]);
        let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let message = json["error_details"][0]["messages"][0].as_str().unwrap();
        let padded = format!("{payload}{}", "x".repeat(SLOTS[1].len() - payload.len()));
        assert_eq!(
            message,
            format!("Table 'sbtest.{padded}' doesn't exist"),
            "{payload:?}"
        );
        let text = run_shown(&["mysql", capture.to_str().unwrap()]);
        let shown = String::from_utf8_lossy(&text.stdout);
        let escaped = pcapsleuth::report::visible(&payload).into_owned();
        // Statements and messages are shown on one line: white space among the payload reads as a space.
        let first_shown: String = escaped.chars().take(6).collect();
        assert!(
            common::flat(&shown).contains(&first_shown) || payload.starts_with(char::is_whitespace),
            "{payload:?}: {first_shown} not in {shown}"
        );
    }
}

#[test]
fn the_adversary_captures_give_clean_output_in_every_command() {
    for name in [
        "ansi_escape_injection.pcap",
        "html_xss_and_ansi_payloads.pcap",
    ] {
        let Some(capture) = adversary(name) else {
            return;
        };
        every_command_shows_what_it_prints(&capture, &format!("hostile-{name}"));
        // What the attacker meant to do is visible as text instead.
        let text = run_shown(&["mysql", capture.to_str().unwrap()]);
        let shown = String::from_utf8_lossy(&text.stdout);
        assert!(shown.contains(r"\x1b]0;PWNED-TITLE\x07"), "{shown}");
    }
}

/// A file name chosen by whoever could write into a directory of captures: its controls are shown in
/// every message that names it, and the `extract` command a finding suggests still names it exactly.
#[test]
fn file_names_with_controls_are_shown_in_messages_and_quoted_in_commands() {
    let dir = common::scratch("hostile-names", "d");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let name = "\x1b]0;owned\x07\u{202e}cap\x1b[2J.pcap";
    let capture = dir.join(name);
    std::fs::copy(common::fixture("markup.pcap"), &capture).unwrap();
    let c = capture.to_str().unwrap();
    let report = run_shown(&["report", c]);
    let text = String::from_utf8_lossy(&report.stdout).into_owned();
    assert!(
        text.contains(r"$'") && text.contains(r"\x1b]0;owned\x07\u202ecap\x1b[2J.pcap'"),
        "{text}"
    );
    let json = run_shown(&["report", "--json", c]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let command = v["findings"][0]["extract_command"].as_str().unwrap();
    // The command, run by a shell, names the file: bash decodes `$'...'` as the name itself.
    if let Ok(o) = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "set -- {}; printf %s \"$2\"",
            command.trim_start_matches("pcapsleuth ")
        ))
        .output()
    {
        assert_eq!(String::from_utf8_lossy(&o.stdout), c, "{command}");
    }
    let out = dir.join("out\x1b[31m.pcap");
    run_shown(&["extract", c, "--port", "3306", "-o", out.to_str().unwrap()]);
    run_shown(&[
        "split",
        c,
        "--packets",
        "10",
        "-o",
        dir.join("pieces\x07").to_str().unwrap(),
    ]);
    let missing = dir.join("gone\x1b]0;x\x07.pcap");
    let o = run(&["first-reset", missing.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert_shown("an error naming a missing file", &o.stderr);
    assert!(String::from_utf8_lossy(&o.stderr).contains(r"gone\x1b]0;x\x07.pcap"));
    // A directory read as a capture names the files it skipped.
    std::fs::write(dir.join("notes\x1b[2J.txt"), "not a capture").unwrap();
    let o = run_shown(&["flows", dir.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&o.stderr).contains(r"notes\x1b[2J.txt"));
    let html = dir.join("page.html");
    run_shown(&["report", c, "--html", html.to_str().unwrap()]);
    assert_shown(
        "report --html of a file named with controls",
        &std::fs::read(&html).unwrap(),
    );
}
