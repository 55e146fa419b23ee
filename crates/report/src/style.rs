//! The house style of every text the tool prints, in one place: each renderer formats numbers, durations,
//! instants and lists with these functions and no others, so that a value reads the same in every command.
//!
//! * durations in the unit that reads best, with three significant digits: "91 µs", "4.84 ms", "7.64 s",
//!   "194 s", "28,800 s" ([`duration`], [`seconds`]);
//! * counts with thousands separators and nouns that agree with them: "1 connection", "11,376 requests"
//!   ([`count`], [`counted`]); bytes exact when small and in binary units when large ([`bytes`], [`size`]);
//! * "—" for a statistic of nothing ([`NONE`], [`stats`]), never a zero that looks measured;
//! * instants without trailing zeros: "2026-11-23 08:39:31 UTC" for a whole second ([`instant`]);
//! * ratios as multiples and spreads as percentages: "2.84×" ([`times`]), "varies by 0.4%" ([`variation`]);
//! * lines that fit: tables cut their last, free-text column with "…" ([`elide`], [`list`]) and the whole
//!   text is wrapped to [`width`] ([`fit`]), 120 characters unless the CLI is told a terminal's width.
//!
//! Sentences written by the analyses (findings, close reasons) are also in the JSON: their numbers come
//! from the same functions (`pcapsleuth_analysis::units`, re-exported here), only their line breaks are
//! this module's.

use std::sync::atomic::{AtomicUsize, Ordering};

pub use pcapsleuth_analysis::units::{
    bytes, count, counted, direction_words, duration_us as duration, seconds, significant, size,
    Measure, NONE,
};
use pcapsleuth_analysis::units::{scaled, span_ns, utc, utc_us};
use pcapsleuth_analysis::RtSummary;

/// The width of text when it does not go to a terminal: what a reader's pager, an e-mail or a ticket shows
/// without wrapping.
pub const WIDTH: usize = 120;

static TEXT_WIDTH: AtomicUsize = AtomicUsize::new(WIDTH);

/// Sets the width text is laid out for (the terminal's, when output goes to one); at least 40.
pub fn set_width(columns: usize) {
    TEXT_WIDTH.store(columns.max(40), Ordering::Relaxed);
}

/// The width text is laid out for: [`WIDTH`] unless [`set_width`] said otherwise.
pub fn width() -> usize {
    TEXT_WIDTH.load(Ordering::Relaxed)
}

/// A duration of `n` measured values, or "—" when there were none.
pub fn duration_or_none(n: u64, us: f64) -> String {
    if n == 0 {
        NONE.to_string()
    } else {
        duration(us)
    }
}

/// Six decimals (a microsecond), three when the last three are zeros (a millisecond), none when all are.
fn fraction(digits: &str) -> &str {
    match digits {
        "000000" => "",
        d if d.len() == 6 && d.ends_with("000") => &d[..3],
        d => d,
    }
}

/// A time into the capture, to the microsecond a frame is stamped with, without trailing zeros:
/// "1.247228 s", "0.500 s", "3 s".
pub fn offset(s: f64) -> String {
    let full = format!("{s:.6}");
    match full.split_once('.') {
        Some((whole, digits)) if !fraction(digits).is_empty() => {
            format!("{whole}.{} s", fraction(digits))
        }
        Some((whole, _)) => format!("{whole} s"),
        None => format!("{full} s"),
    }
}

/// What a row of a time series says after its figures when the capture covers only part of its interval
/// (its first and last): " (400 ms covered)"; nothing for a whole interval. Counts in such a row are what
/// was seen in that part; rates divide by it (`pcapsleuth_analysis::coverage`).
pub fn covered_note(covered_s: f64, interval_s: f64) -> String {
    if covered_s >= interval_s * (1.0 - 1e-9) {
        String::new()
    } else {
        format!(" ({} covered)", seconds(covered_s))
    }
}

/// An instant given in seconds since the epoch, to the microsecond, to the millisecond when that is
/// exact, and to the second when that is: "2026-11-23 08:39:32.710340 UTC", "2026-11-23 08:39:31.500 UTC",
/// "2026-11-23 08:39:31 UTC".
pub fn instant(secs: f64) -> String {
    without_trailing_zeros(utc_us((secs * 1e6).round() as i64))
}

/// An instant given in nanoseconds since the epoch, as [`instant`] writes it (to the microsecond).
pub fn instant_ns(ns: i64) -> String {
    without_trailing_zeros(utc(ns))
}

/// A stretch of time given in nanoseconds: as [`duration`] up to 100 s, then in minutes, hours, days or
/// years ("12 min", "3.0 days").
pub fn span(ns: i64) -> String {
    if ns < 100_000_000_000 {
        duration(ns as f64 / 1e3)
    } else {
        span_ns(ns)
    }
}

fn without_trailing_zeros(full: String) -> String {
    match full.split_once('.') {
        Some((whole, rest)) => {
            let (digits, zone) = rest.split_once(' ').unwrap_or((rest, "UTC"));
            let digits = fraction(digits);
            if digits.is_empty() {
                format!("{whole} {zone}")
            } else {
                format!("{whole}.{digits} {zone}")
            }
        }
        None => full,
    }
}

/// A share (0..1) as a percentage: whole percents, one decimal below 10% so that a small share is not
/// "0%", and "0%" for none: "54%", "2.4%", "0%".
pub fn percent(share: f64) -> String {
    if share == 0.0 {
        "0%".to_string()
    } else {
        pcapsleuth_analysis::units::percent(share)
    }
}

/// A ratio as a multiple with three significant digits: "2.84×", "27,700×".
pub fn times(ratio: f64) -> String {
    format!("{}×", significant(ratio, 3))
}

/// How much a series varies (its coefficient of variation), in words: "varies by 4.2%", "varies by less
/// than 0.1%".
pub fn variation(cv: f64) -> String {
    if cv < 0.001 {
        "varies by less than 0.1%".to_string()
    } else {
        format!("varies by {}", percent(cv))
    }
}

/// A rate per second of packets or bits, with thousands separators or three significant digits:
/// "120,000 pkt/s", "19.9 Mbit/s", "640 bit/s".
pub fn rate(kind: Measure, per_second: f64) -> String {
    let v = per_second.max(0.0);
    match kind {
        Measure::Packets => format!("{} pkt/s", count(v.round() as u64)),
        Measure::Bits => scaled(
            v,
            &[
                (1.0, "bit/s"),
                (1e3, "kbit/s"),
                (1e6, "Mbit/s"),
                (1e9, "Gbit/s"),
            ],
        ),
    }
}

/// A response-time summary on one line: "3 requests: mean 106 µs  p50 98 µs  p95 162 µs  p99 162 µs  max
/// 162 µs", or "—" when nothing was measured. `one` and `many` name what was timed.
pub fn stats(r: &RtSummary, one: &str, many: &str) -> String {
    if r.count == 0 {
        return NONE.to_string();
    }
    format!(
        "{}: mean {}  p50 {}  p95 {}  p99 {}  max {}",
        counted(r.count, one, many),
        duration(r.mean),
        duration(r.p50),
        duration(r.p95),
        duration(r.p99),
        duration(r.max)
    )
}

/// The width of a table column: its widest cell or its header, in characters.
pub fn column_width<S: AsRef<str>>(header: &str, cells: impl IntoIterator<Item = S>) -> usize {
    cells
        .into_iter()
        .map(|c| c.as_ref().chars().count())
        .max()
        .unwrap_or(0)
        .max(header.chars().count())
}

/// Text on one line (runs of white space, new lines among them, become one space), any other control
/// or bidirectional character shown as an escape ([`crate::visible()`]): how a statement or a message from
/// a capture is written in a sentence or a table.
pub fn one_line(s: &str) -> String {
    let joined = s.split_whitespace().collect::<Vec<_>>().join(" ");
    crate::visible::visible(&joined).into_owned()
}

/// `s` cut to at most `max` characters, ending in "…" when it was cut.
pub fn elide(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// A table row whose last column is free text (a statement, a reason): the text is cut with "…" so that
/// the row fits [`width`]; the JSON and the detail lines give it in full.
pub fn row(columns: &str, text: &str) -> String {
    let room = width().saturating_sub(columns.chars().count()).max(12);
    format!("{columns}{}", elide(&one_line(text), room))
}

/// Items joined by ", " within `room` characters; what does not fit is counted: "a, b, c … and 18,990
/// more".
pub fn list(items: &[String], room: usize) -> String {
    let mut out = String::new();
    for (i, item) in items.iter().enumerate() {
        let sep = if i == 0 { "" } else { ", " };
        let left = items.len() - i;
        let tail = format!(" … and {} more", count(left as u64));
        let fits = out.chars().count()
            + sep.len()
            + item.chars().count()
            + if left > 1 { tail.chars().count() } else { 0 }
            <= room;
        if !fits {
            out.push_str(&tail);
            return out;
        }
        out.push_str(sep);
        out.push_str(item);
    }
    out
}

/// The words of a shell command: split at spaces outside quotes (`'a b'`, `$'a\'b'`, `"a b"`), so that
/// a quoted file name holding a space stays one word.
fn shell_words(command: &str) -> Vec<&str> {
    let mut words = Vec::new();
    let (mut start, mut quote, mut escaped) = (None::<usize>, None::<&str>, false);
    let mut chars = command.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if start.is_none() && c != ' ' {
            start = Some(i);
        }
        match (quote, c) {
            (Some(_), _) if escaped => escaped = false,
            (Some("$'" | "\""), '\\') => escaped = true,
            (Some("'" | "$'"), '\'') | (Some("\""), '"') => quote = None,
            (Some(_), _) => {}
            (None, '$') if chars.peek().is_some_and(|&(_, n)| n == '\'') => {
                chars.next();
                quote = Some("$'");
            }
            (None, '\'') => quote = Some("'"),
            (None, '"') => quote = Some("\""),
            (None, '\\') => {
                chars.next();
            }
            (None, ' ') => {
                if let Some(s) = start.take() {
                    words.push(&command[s..i]);
                }
            }
            (None, _) => {}
        }
    }
    if let Some(s) = start {
        words.push(&command[s..]);
    }
    words
}

/// A shell command as lines of at most [`width`] characters, each but the last ending in " \", so that a
/// copy of the lines still runs; the first line begins with `lead`, the others with `indent` spaces. A
/// word longer than a line (a very long path) is left whole, and so is a quoted one holding spaces: a
/// command cut inside a word would not run.
pub fn command_lines(lead: &str, command: &str, indent: usize) -> String {
    let limit = width().saturating_sub(2);
    let mut lines: Vec<String> = vec![lead.to_string()];
    for word in shell_words(command) {
        let last = lines.last_mut().expect("one line at least");
        let blank = last.trim().is_empty() || last.ends_with(' ');
        if blank || last.chars().count() + 1 + word.chars().count() <= limit {
            if !blank {
                last.push(' ');
            }
            last.push_str(word);
        } else {
            last.push_str(" \\");
            lines.push(format!("{}{word}", " ".repeat(indent)));
        }
    }
    let mut out = lines.join("\n");
    out.push('\n');
    out
}

/// Every line of `text` at most `columns` characters wide: a longer line is wrapped at spaces, its
/// continuation indented four more than where its text starts (after any "* " or "12. " marker); a word
/// longer than a line is cut where it must be.
pub fn fit(text: &str, columns: usize) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 16);
    for line in text.split_inclusive('\n') {
        let (body, newline) = match line.strip_suffix('\n') {
            Some(b) => (b, "\n"),
            None => (line, ""),
        };
        if body.chars().count() <= columns {
            out.push_str(line);
            continue;
        }
        wrap(body, columns, &mut out);
        out.push_str(newline);
    }
    out
}

fn wrap(body: &str, columns: usize, out: &mut String) {
    let lead = body.len() - body.trim_start_matches(' ').len();
    let rest = &body[lead..];
    let marker = if rest.starts_with("* ") || rest.starts_with("- ") {
        2
    } else {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 && rest[digits..].starts_with(". ") {
            digits + 2
        } else {
            0
        }
    };
    let mut indent = lead + marker + 4;
    if columns < indent + 30 {
        indent = 2;
    }
    let pad = " ".repeat(indent);
    let mut current = String::from(&body[..lead]);
    let mut len = lead;
    let mut flush = |current: &mut String, len: &mut usize| {
        out.push_str(current.trim_end());
        out.push('\n');
        current.clear();
        current.push_str(&pad);
        *len = pad.len();
    };
    let mut at_start = true;
    for word in rest.split(' ') {
        let w = word.chars().count();
        if !at_start && len + 1 + w > columns && !current.trim().is_empty() {
            flush(&mut current, &mut len);
            if word.is_empty() {
                continue;
            }
        } else if !at_start {
            current.push(' ');
            len += 1;
        }
        at_start = false;
        // A word wider than a whole line is cut.
        for ch in word.chars() {
            if len >= columns {
                flush(&mut current, &mut len);
            }
            current.push(ch);
            len += 1;
        }
    }
    out.push_str(current.trim_end());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_have_three_significant_digits_and_the_unit_that_reads_best() {
        assert_eq!(duration(91.0), "91 µs");
        assert_eq!(duration(90.64), "90.6 µs");
        assert_eq!(duration(4835.9), "4.84 ms");
        assert_eq!(duration(7_640_600.0), "7.64 s");
        assert_eq!(duration(193_598_400.0), "194 s");
        assert_eq!(duration(28_800_400_000.0), "28,800 s");
        assert_eq!(duration(999.7), "1 ms");
        assert_eq!(duration(0.5), "500 ns");
        assert_eq!(duration(0.0), "0 µs");
        assert_eq!(duration(-1234.0), "-1.23 ms");
        assert_eq!(seconds(0.59), "590 ms");
        assert_eq!(duration_or_none(0, 12.0), NONE);
    }

    #[test]
    fn instants_and_offsets_drop_trailing_zeros() {
        assert_eq!(instant(0.0), "1970-01-01 00:00:00 UTC");
        assert_eq!(instant(1_795_333_062.5), "2026-11-22 07:37:42.500 UTC");
        assert_eq!(
            instant(1_795_333_062.710_34),
            "2026-11-22 07:37:42.710340 UTC"
        );
        assert_eq!(
            instant_ns(1_795_333_062_000_000_999),
            "2026-11-22 07:37:42 UTC"
        );
        assert_eq!(offset(1.2472280), "1.247228 s");
        assert_eq!(offset(0.5), "0.500 s");
        assert_eq!(offset(3.0), "3 s");
    }

    #[test]
    fn rates_ratios_and_counts_read_naturally() {
        assert_eq!(rate(Measure::Packets, 120_000.4), "120,000 pkt/s");
        assert_eq!(rate(Measure::Bits, 19.98e6), "20 Mbit/s");
        assert_eq!(rate(Measure::Bits, 9_870.0), "9.87 kbit/s");
        assert_eq!(rate(Measure::Bits, 0.0), "0 bit/s");
        assert_eq!(rate(Measure::Bits, 999_700.0), "1 Mbit/s");
        assert_eq!(times(27_726.72), "27,700×");
        assert_eq!(times(2.8449), "2.84×");
        assert_eq!(percent(0.0), "0%");
        assert_eq!(percent(0.024), "2.4%");
        assert_eq!(variation(0.0), "varies by less than 0.1%");
        assert_eq!(variation(0.042), "varies by 4.2%");
        assert_eq!(counted(1, "connection", "connections"), "1 connection");
        assert_eq!(
            counted(1234, "connection", "connections"),
            "1,234 connections"
        );
    }

    #[test]
    fn empty_statistics_read_as_a_dash() {
        let none = RtSummary::default();
        assert_eq!(stats(&none, "request", "requests"), "—");
        let one = RtSummary {
            count: 1,
            mean: 98.0,
            p50: 98.0,
            p95: 98.0,
            p99: 98.0,
            max: 98.0,
            ..RtSummary::default()
        };
        assert_eq!(
            stats(&one, "request", "requests"),
            "1 request: mean 98 µs  p50 98 µs  p95 98 µs  p99 98 µs  max 98 µs"
        );
    }

    #[test]
    fn long_things_are_cut_or_wrapped_to_the_width() {
        assert_eq!(elide("select 1", 20), "select 1");
        assert_eq!(elide("select * from t", 10), "select * …");
        let servers: Vec<String> = (0..1000).map(|i| format!("10.0.0.{i}:3306")).collect();
        let l = list(&servers, 60);
        assert!(l.chars().count() <= 60, "{l}");
        assert!(l.ends_with(" … and 997 more"), "{l}");
        assert_eq!(list(&servers[..2], 60), "10.0.0.0:3306, 10.0.0.1:3306");

        let text = format!("short\n  * {}\n", "word ".repeat(60).trim_end());
        let fitted = fit(&text, 50);
        for line in fitted.lines() {
            assert!(line.chars().count() <= 50, "{line:?}");
        }
        assert_eq!(fitted.lines().next(), Some("short"));
        assert!(fitted.lines().nth(2).unwrap().starts_with("        word"));
        // Nothing is lost: the words are all there, in order.
        assert_eq!(one_line(&fitted), one_line(&text));
        let long_word = "x".repeat(130);
        for line in fit(&long_word, 50).lines() {
            assert!(line.chars().count() <= 50);
        }
    }

    #[test]
    fn commands_break_with_a_shell_continuation() {
        let cmd = format!(
            "pcapsleuth extract {} --conn 10.77.1.2:54116-10.77.0.1:3306 --at 1 --annotate -o out.pcapng",
            "captures/".repeat(9)
        );
        let lines = command_lines("     extract: ", &cmd, 9);
        for l in lines.lines() {
            assert!(l.chars().count() <= WIDTH, "{l}");
        }
        assert!(lines.lines().count() > 1, "{lines}");
        let joined = lines.replace(" \\\n", " ");
        assert_eq!(one_line(&joined), one_line(&format!("extract: {cmd}")));

        // A quoted name with spaces is never cut inside its quotes.
        let quoted = format!(
            "pcapsleuth extract '{} it'\\''s.pcap' $'a b\\'c \\x1b' \"d e\" --frames 7",
            "dir with spaces/".repeat(6)
        );
        assert_eq!(
            shell_words(&quoted)[3..],
            [r"$'a b\'c \x1b'", "\"d e\"", "--frames", "7"]
        );
        let lines = command_lines("     extract: ", &quoted, 9);
        assert!(lines.lines().count() > 1, "{lines}");
        let words = shell_words(&quoted);
        for l in lines.lines().skip(1) {
            let body = l.trim_end_matches(" \\").trim_start();
            assert!(shell_words(body).iter().all(|w| words.contains(w)), "{l}");
        }
        assert_eq!(
            lines.replace(" \\\n         ", " "),
            format!("     extract: {quoted}\n")
        );
    }
}
