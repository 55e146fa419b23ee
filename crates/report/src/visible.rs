//! The one sanitiser of text that comes from a capture. Whoever can send a packet or a query to a server
//! writes part of its capture: a statement or an error message can hold an escape sequence that sets the
//! analyst's window title, plants a hyperlink (OSC 8), clears the screen, makes the terminal answer (DCS,
//! DA queries), or hides text (backspace, carriage return, a right-to-left override). So nothing from a
//! capture reaches a terminal, a page, a plot or a packet comment raw: every character that a terminal or
//! a text renderer acts on instead of showing ([`is_hazard`]) is written as an escape that shows it,
//! the same way in every command and every format:
//!
//! * text, HTML, pcapng comments, warnings on stderr: `\x1b`, `\x07`, `\n` (C0 and DEL), `\u009b` (C1),
//!   `\u202e` (bidirectional controls) — [`visible`]; a whole rendered text keeps its own line breaks
//!   ([`visible_lines`]);
//! * JSON: the same characters as `\u001b`, `\u009b`, `\u202e` — JSON escapes that decode to the very
//!   same string, so values stay true for scripts while the document itself holds no control character
//!   ([`write_json`], used by [`crate::to_json`]).
//!
//! A backslash is left as it is (SQL is full of them), so `\x1b` in a statement's text reads the same as
//! an ESC shown by the sanitiser: the JSON tells them apart.
//!
//! ```
//! use pcapsleuth_report::{visible, visible_lines};
//!
//! assert_eq!(visible("select 1 -- \u{1b}]0;owned\u{7}"), r"select 1 -- \x1b]0;owned\x07");
//! assert_eq!(visible("a\u{9b}2Jb\u{202e}c"), r"a\u009b2Jb\u202ec");
//! assert_eq!(visible_lines("line 1\nline\r2\n"), "line 1\nline\\r2\n");
//! let json = pcapsleuth_report::to_json(&serde_json::json!({ "statement": "x\u{1b}[2J\u{202e}" }));
//! assert!(json.contains(r#""x\u001b[2J\u202e""#));
//! let back: serde_json::Value = serde_json::from_str(&json).unwrap();
//! assert_eq!(back["statement"], "x\u{1b}[2J\u{202e}");
//! ```

use std::borrow::Cow;
use std::fmt::Write as _;
use std::io;

use serde::Serialize;
use serde_json::ser::{Formatter, PrettyFormatter};

pub use pcapsleuth_analysis::units::is_hazard;

/// Whether `s` may hold a hazard: a cheap test on bytes, exact for ASCII. Every hazard's UTF-8 encoding
/// is a byte below 0x20, 0x7f, or starts with 0xc2 (C1), 0xd8 (U+061C) or 0xe2 (the U+2xxx ones).
fn may_hold_hazard(s: &str) -> bool {
    s.bytes()
        .any(|b| b < 0x20 || matches!(b, 0x7f | 0xc2 | 0xd8 | 0xe2))
}

/// How a hazard is shown: `\n`, `\r`, `\t`; `\x1b` for the rest of C0 and DEL; `\u009b`, `\u202e` above.
fn push_escape(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c if (c as u32) < 0x80 => {
            let _ = write!(out, "\\x{:02x}", c as u32);
        }
        c => {
            let _ = write!(out, "\\u{:04x}", c as u32);
        }
    }
}

fn escaped(s: &str, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !may_hold_hazard(s) || !s.chars().any(|c| is_hazard(c) && !keep(c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if is_hazard(c) && !keep(c) {
            push_escape(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `s` with every [hazard](is_hazard) shown as an escape (new lines too: `\n`), for one value from a
/// capture (a statement, an error message, a file name) wherever it is written for people.
pub fn visible(s: &str) -> Cow<'_, str> {
    escaped(s, |_| false)
}

/// A whole text for people, its own line breaks kept: every other [hazard](is_hazard) shown as an
/// escape. What each renderer returns and the command writes to stdout and stderr, so that a value that
/// reached the text without [`visible`] still cannot act on a terminal.
pub fn visible_lines(s: &str) -> Cow<'_, str> {
    escaped(s, |c| c == '\n')
}

/// [`visible_lines`] of an owned text, without a copy when it holds no hazard.
pub(crate) fn visible_lines_owned(s: String) -> String {
    match visible_lines(&s) {
        Cow::Borrowed(_) => s,
        Cow::Owned(o) => o,
    }
}

/// Pretty JSON (two-space indents, as `serde_json::to_string_pretty`) that writes every
/// [hazard](is_hazard) inside a string as a `\uXXXX` escape: serde_json escapes C0 itself, this escapes
/// DEL, C1, the bidirectional controls and the separators too. The decoded values are unchanged.
pub struct VisibleJson<'a>(PrettyFormatter<'a>);

impl Default for VisibleJson<'_> {
    fn default() -> Self {
        VisibleJson(PrettyFormatter::new())
    }
}

impl Formatter for VisibleJson<'_> {
    fn write_string_fragment<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        if !may_hold_hazard(fragment) {
            return writer.write_all(fragment.as_bytes());
        }
        let mut start = 0;
        for (i, c) in fragment.char_indices() {
            if is_hazard(c) {
                writer.write_all(&fragment.as_bytes()[start..i])?;
                write!(writer, "\\u{:04x}", c as u32)?;
                start = i + c.len_utf8();
            }
        }
        writer.write_all(&fragment.as_bytes()[start..])
    }

    fn begin_array<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.begin_array(writer)
    }

    fn end_array<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.end_array(writer)
    }

    fn begin_array_value<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.0.begin_array_value(writer, first)
    }

    fn end_array_value<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.end_array_value(writer)
    }

    fn begin_object<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.begin_object(writer)
    }

    fn end_object<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.end_object(writer)
    }

    fn begin_object_key<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.0.begin_object_key(writer, first)
    }

    fn begin_object_value<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.begin_object_value(writer)
    }

    fn end_object_value<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.end_object_value(writer)
    }
}

/// Writes `value` as pretty JSON to `writer` with [`VisibleJson`]: what [`crate::to_json`] returns as a
/// string, for output too large to hold.
pub fn write_json<W: io::Write, T: Serialize + ?Sized>(
    writer: W,
    value: &T,
) -> serde_json::Result<()> {
    let mut ser = serde_json::Serializer::with_formatter(writer, VisibleJson::default());
    value.serialize(&mut ser)
}

/// The elements of a long array, each turned into a [`serde_json::Value`] only when it is written (its
/// object keys then sorted as those of a whole document turned into one are).
pub trait ElementSource {
    /// How many elements.
    fn count(&self) -> usize;
    /// The `i`th element as a JSON value.
    fn element(&self, i: usize) -> serde_json::Result<serde_json::Value>;
}

impl<T: Serialize> ElementSource for Vec<T> {
    fn count(&self) -> usize {
        self.len()
    }
    fn element(&self, i: usize) -> serde_json::Result<serde_json::Value> {
        serde_json::to_value(&self[i])
    }
}

/// What [`write_json_streamed_at`] writes of one object: the keys of `head` and those the streamed
/// arrays' paths begin with, in key order.
struct Streamed<'a> {
    /// `None` where the arrays' paths go through a key `head` does not hold as an object.
    head: Option<&'a serde_json::Map<String, serde_json::Value>>,
    /// The arrays in this object, each by its path from it.
    arrays: Vec<(&'a [&'a str], &'a dyn ElementSource)>,
}

struct Elements<'a>(&'a dyn ElementSource);

impl Serialize for Elements<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{Error, SerializeSeq};
        let mut seq = s.serialize_seq(Some(self.0.count()))?;
        for i in 0..self.0.count() {
            let v = self.0.element(i).map_err(S::Error::custom)?;
            seq.serialize_element(&v)?;
        }
        seq.end()
    }
}

impl Serialize for Streamed<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut keys: Vec<&str> = self
            .head
            .into_iter()
            .flat_map(|h| h.keys().map(String::as_str))
            .chain(
                self.arrays
                    .iter()
                    .filter_map(|(path, _)| path.first().copied()),
            )
            .collect();
        keys.sort_unstable();
        keys.dedup();
        let mut map = s.serialize_map(Some(keys.len()))?;
        for k in keys {
            let value = self.head.and_then(|h| h.get(k));
            let under: Vec<(&[&str], &dyn ElementSource)> = self
                .arrays
                .iter()
                .filter(|(path, _)| path.first() == Some(&k))
                .map(|&(path, a)| (&path[1..], a))
                .collect();
            if let Some(&(_, a)) = under.iter().find(|(rest, _)| rest.is_empty()) {
                map.serialize_entry(k, &Elements(a))?;
            } else if !under.is_empty() {
                let inner = Streamed {
                    head: value.and_then(serde_json::Value::as_object),
                    arrays: under,
                };
                map.serialize_entry(k, &inner)?;
            } else if let Some(v) = value {
                map.serialize_entry(k, v)?;
            }
        }
        map.end()
    }
}

/// Writes, as [`write_json`] would write the whole object, the JSON object made of `head`'s keys and
/// of `arrays`, each a key and the elements of its array (a key of `head` named there is replaced), with
/// a trailing newline: the same bytes as [`crate::to_json`] of the object turned into one
/// [`serde_json::Value`] first, holding one element of an array at a time instead of the whole document.
pub fn write_json_streamed<W: io::Write>(
    writer: W,
    head: &serde_json::Map<String, serde_json::Value>,
    arrays: &[(&str, &dyn ElementSource)],
) -> serde_json::Result<()> {
    let paths: Vec<[&str; 1]> = arrays.iter().map(|&(k, _)| [k]).collect();
    let at: Vec<(&[&str], &dyn ElementSource)> = paths
        .iter()
        .zip(arrays)
        .map(|(p, &(_, a))| (&p[..], a))
        .collect();
    write_json_streamed_at(writer, head, &at)
}

/// [`write_json_streamed`] with each array at a path of keys from the top (`["mysql", "statements"]`
/// for the key `statements` of the object under `mysql`): the arrays of objects inside the document are
/// written element by element too.
pub fn write_json_streamed_at<W: io::Write>(
    mut writer: W,
    head: &serde_json::Map<String, serde_json::Value>,
    arrays: &[(&[&str], &dyn ElementSource)],
) -> serde_json::Result<()> {
    let object = Streamed {
        head: Some(head),
        arrays: arrays
            .iter()
            .filter(|(p, _)| !p.is_empty())
            .copied()
            .collect(),
    };
    write_json(&mut writer, &object)?;
    writer.write_all(b"\n").map_err(serde_json::Error::io)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every character the sanitiser must catch: C0, DEL, C1, the bidirectional controls, the separators.
    fn hazards() -> Vec<char> {
        (0u32..=0x2070)
            .filter_map(char::from_u32)
            .filter(|&c| is_hazard(c))
            .collect()
    }

    #[test]
    fn every_control_and_bidi_character_is_a_hazard_and_nothing_printable_is() {
        let h = hazards();
        assert_eq!(h.len(), 32 + 1 + 32 + 1 + 2 + 2 + 5 + 4, "{h:?}");
        for c in [
            'a', ' ', '~', '\u{a0}', 'é', '€', '…', '—', '\u{200b}', '\u{fffd}', '中',
        ] {
            assert!(!is_hazard(c), "{c:?}");
        }
    }

    #[test]
    fn hazards_are_shown_and_everything_else_kept() {
        let all: String = hazards().into_iter().collect();
        let shown = visible(&all);
        assert!(!shown.chars().any(is_hazard), "{shown}");
        assert!(shown.starts_with(r"\x00\x01"), "{shown}");
        assert!(shown.contains(r"\x07\x08\t\n\x0b\x0c\r"), "{shown}");
        assert!(shown.contains(r"\x1b"), "{shown}");
        assert!(shown.contains(r"\x7f\u0080"), "{shown}");
        assert!(shown.contains(r"\u009b"), "{shown}");
        assert!(
            shown.ends_with(r"\u202e\u2066\u2067\u2068\u2069"),
            "{shown}"
        );
        assert!(matches!(visible("select * from t"), Cow::Borrowed(_)));
        assert!(matches!(visible("naïve — 中 €"), Cow::Borrowed(_)));
        assert_eq!(visible_lines("a\x1b[2Jb\nc\r\n"), "a\\x1b[2Jb\nc\\r\n");
        assert_eq!(visible_lines_owned("x\ny".into()), "x\ny");
    }

    #[test]
    fn a_streamed_document_is_the_whole_value_written_byte_for_byte() {
        #[derive(Serialize)]
        struct Row {
            zeta: u64,
            text: String,
            alpha: Option<f64>,
            nested: Vec<(u8, &'static str)>,
        }
        let rows: Vec<Row> = (0..3)
            .map(|i| Row {
                zeta: i,
                text: format!("select {i} -- \u{1b}[2J\u{202e}"),
                alpha: (i != 1).then_some(i as f64 / 3.0),
                nested: vec![(i as u8, "x"); i as usize],
            })
            .collect();
        let empty: Vec<Row> = Vec::new();
        let head = serde_json::json!({ "b": 1, "rows": [], "a": { "y": [1, 2], "x": null }, "z": "\u{9b}" });
        let mut whole = head.clone();
        whole["rows"] = serde_json::to_value(&rows).expect("serialises");
        whole["empty"] = serde_json::to_value(&empty).expect("serialises");
        let mut out = Vec::new();
        write_json_streamed(
            &mut out,
            head.as_object().expect("an object"),
            &[("rows", &rows), ("empty", &empty)],
        )
        .expect("written");
        assert_eq!(
            String::from_utf8(out).expect("UTF-8"),
            crate::to_json(&whole)
        );
        // Arrays inside objects of the document, one where the head has no such object.
        let mut whole = head.clone();
        whole["a"]["y"] = serde_json::to_value(&rows).expect("serialises");
        whole["a"]["empty"] = serde_json::to_value(&empty).expect("serialises");
        whole["n"] =
            serde_json::json!({ "rows": serde_json::to_value(&rows).expect("serialises") });
        whole["rows"] = serde_json::to_value(&empty).expect("serialises");
        let mut out = Vec::new();
        write_json_streamed_at(
            &mut out,
            head.as_object().expect("an object"),
            &[
                (&["a", "y"], &rows),
                (&["a", "empty"], &empty),
                (&["n", "rows"], &rows),
                (&["rows"], &empty),
            ],
        )
        .expect("written");
        assert_eq!(
            String::from_utf8(out).expect("UTF-8"),
            crate::to_json(&whole)
        );
    }

    #[test]
    fn json_escapes_decode_to_the_same_strings() {
        let all: String = hazards().into_iter().collect();
        let value = serde_json::json!({ "text": format!("select '{all}' -- é€\\x"), "n": [1, 2] });
        let json = crate::to_json(&value);
        assert!(
            !json.trim_end().contains('\n') || !json.chars().any(|c| is_hazard(c) && c != '\n')
        );
        assert!(json.contains(r"\u009b") && json.contains(r"\u202e") && json.contains(r"\u007f"));
        let back: serde_json::Value = serde_json::from_str(&json).expect("valid JSON");
        assert_eq!(back, value);
        // Pretty, as serde_json's own pretty printer writes it.
        let plain = serde_json::json!({ "a": [1, {"b": "c"}], "d": {} });
        assert_eq!(
            crate::to_json(&plain),
            serde_json::to_string_pretty(&plain).expect("json") + "\n"
        );
    }
}
