//! How durations and rates read in text: one place, so findings and reports say the same thing.

/// How a duration is written: the one duration formatter of the project, [`duration`], in the styles its
/// readers need (policy, not a flag per caller).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DurationStyle {
    /// Findings, reports and every text: the unit that reads best, three significant digits: "500 ns",
    /// "88 µs", "90.6 µs", "3.96 ms", "1.25 s", "194 s", "28,800 s".
    Report,
    /// Dense tables: milliseconds with one decimal and no space, "88µs", "1225.2ms".
    Table,
    /// Chart labels: about two significant digits, "88 µs", "1.2 ms", "500 ns".
    Label,
    /// Chart annotations: three significant digits, "88.3 µs", "3.96 ms".
    Precise,
    /// Axis ticks, which are round numbers already: only float noise is removed, "200 µs", "1 s".
    Tick,
}

/// A duration given in microseconds, written in `style`.
pub fn duration(us: f64, style: DurationStyle) -> String {
    match style {
        DurationStyle::Report if !us.is_finite() => NONE.to_string(),
        DurationStyle::Report if us < 0.0 => format!("-{}", duration(-us, style)),
        DurationStyle::Report if us == 0.0 => "0 µs".to_string(),
        DurationStyle::Report => scaled(us, &[(1e-3, "ns"), (1.0, "µs"), (1e3, "ms"), (1e6, "s")]),
        DurationStyle::Table if us >= 1e3 => format!("{:.1}ms", us / 1e3),
        DurationStyle::Table => format!("{us:.0}µs"),
        DurationStyle::Label | DurationStyle::Precise | DurationStyle::Tick => {
            let (v, unit) = if us < 1.0 {
                (us * 1e3, "ns")
            } else if us < 1e3 {
                (us, "µs")
            } else if us < 1e6 {
                (us / 1e3, "ms")
            } else {
                (us / 1e6, "s")
            };
            let v = round_significant(v, 3);
            let decimals = match style {
                DurationStyle::Label => usize::from(v < 10.0),
                DurationStyle::Precise => 2,
                _ => 3,
            };
            format!("{} {unit}", trim_decimals(v, decimals))
        }
    }
}

/// A duration given in microseconds, as findings, reports and every text write it: "88 µs", "3.96 ms",
/// "1.25 s" (three significant digits; "—" for a value that is not a number).
pub fn duration_us(us: f64) -> String {
    duration(us, DurationStyle::Report)
}

/// `v` in the largest of `units` (factor, name) it reaches, with three significant digits; a value that
/// rounds to 1,000 of one unit is 1 of the next: 999.7 µs is "1 ms".
pub fn scaled(v: f64, units: &[(f64, &str)]) -> String {
    let mut unit = units.iter().rposition(|(f, _)| v >= *f).unwrap_or(0);
    let mut r = round_significant(v / units[unit].0, 3);
    if r >= 1000.0 && unit + 1 < units.len() {
        unit += 1;
        r = round_significant(v / units[unit].0, 3);
    }
    format!("{} {}", significant(r, 3), units[unit].1)
}

/// A share (0..1) as a percentage: whole percents, one decimal below 10% so that a small share is not
/// "0%", and one decimal just short of the whole so that it is not "100%" ("99.6%", ">99.9%").
pub fn percent(share: f64) -> String {
    let pct = share * 100.0;
    if pct < 10.0 || (99.5..99.95).contains(&pct) {
        format!("{pct:.1}%")
    } else if (99.95..100.0).contains(&pct) {
        ">99.9%".to_string()
    } else {
        format!("{pct:.0}%")
    }
}

/// `v` rounded to `digits` significant digits.
pub fn round_significant(v: f64, digits: i32) -> f64 {
    if v == 0.0 || !v.is_finite() {
        return v;
    }
    let scale = 10f64.powi(digits - 1 - v.abs().log10().floor() as i32);
    (v * scale).round() / scale
}

/// `v` with at most `decimals` decimals, trailing zeros dropped: "1.5", "2", "0".
pub fn trim_decimals(v: f64, decimals: usize) -> String {
    let s = format!("{v:.decimals$}");
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    if s == "-0" {
        "0".into()
    } else {
        s
    }
}

/// A count with thousands separators: "11,376".
pub fn count(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// A count and its noun, in the singular for one: "1 TCP connection", "1,024 TCP connections".
pub fn counted(n: u64, one: &str, many: &str) -> String {
    format!("{} {}", count(n), if n == 1 { one } else { many })
}

/// A number of bytes: exact with separators up to 9,999 ("1 byte", "1,423 bytes"), and from 10,000 up in
/// binary units with three significant digits, then exact: "717 KiB (734,490 bytes)", "3.19 MiB
/// (3,340,069 bytes)".
pub fn bytes(n: u64) -> String {
    if n < 10_000 {
        return counted(n, "byte", "bytes");
    }
    format!("{} ({} bytes)", size(n), count(n))
}

/// A size in binary units with three significant digits: "18.7 KiB", "717 KiB", "3.19 MiB", "12 bytes".
pub fn size(n: u64) -> String {
    let units = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if n < 1024 {
        return counted(n, "byte", "bytes");
    }
    let mut v = n as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < units.len() {
        v /= 1024.0;
        unit += 1;
    }
    format!("{} {}", significant(v, 3), units[unit])
}

/// `v` with `digits` significant digits and no more (trailing zeros dropped, no exponent): "3.19",
/// "717", "18.7", "1,235" for 1234.6 (thousands separated).
pub fn significant(v: f64, digits: i32) -> String {
    let r = round_significant(v, digits);
    if r.abs() >= 1000.0 {
        let s = count(r.abs().round() as u64);
        return if r < 0.0 { format!("-{s}") } else { s };
    }
    let magnitude = if r == 0.0 {
        0
    } else {
        r.abs().log10().floor() as i32
    };
    let decimals = (digits - 1 - magnitude).max(0) as usize;
    trim_decimals(r, decimals)
}

/// What a statistic of nothing reads as: "—", not a zero that looks measured.
pub const NONE: &str = "—";

/// Whether `c` must never be written raw where a person reads: a control character (C0, DEL, C1: what
/// terminals execute), a bidirectional formatting character (U+061C, U+200E, U+200F, U+202A to U+202E,
/// U+2066 to U+2069: what reorders the text around it, as in "Trojan Source"), or a line or paragraph
/// separator (U+2028, U+2029: line breaks to some viewers). `pcapsleuth_report::visible` shows each as an
/// escape; [`crate::Scope::extract_command`] quotes a file name holding one as `$'...'`.
pub fn is_hazard(c: char) -> bool {
    matches!(
        c,
        '\0'..='\x1f'
            | '\x7f'..='\u{9f}'
            | '\u{061c}'
            | '\u{200e}'
            | '\u{200f}'
            | '\u{2028}'..='\u{202e}'
            | '\u{2066}'..='\u{2069}'
    )
}

/// A duration in seconds, as [`duration_us`] writes it: "7.81 s", "590 ms", "28,800 s".
pub fn seconds(s: f64) -> String {
    duration_us(s * 1e6)
}

/// What a rate counts per second.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub enum Measure {
    /// Packets per second (`pps`).
    #[serde(rename = "pps")]
    Packets,
    /// Bits per second (`bps`).
    #[serde(rename = "bps")]
    Bits,
}

/// Which way traffic went, in words: "client to server".
pub fn direction_words(d: pcapsleuth_mysql::Direction) -> &'static str {
    match d {
        pcapsleuth_mysql::Direction::ClientToServer => "client to server",
        pcapsleuth_mysql::Direction::ServerToClient => "server to client",
    }
}

/// A rate per second of packets or bits: "1000 pkt/s", "19.98 Mbit/s".
pub fn rate(kind: Measure, per_second: f64) -> String {
    let v = per_second;
    match kind {
        Measure::Packets => format!("{v:.0} pkt/s"),
        _ if v >= 1e9 => format!("{:.2} Gbit/s", v / 1e9),
        _ if v >= 1e6 => format!("{:.2} Mbit/s", v / 1e6),
        _ => format!("{:.0} kbit/s", v / 1e3),
    }
}

/// An instant, given in microseconds since the epoch: "2026-11-22 07:37:42.500000 UTC".
pub fn utc_us(total_us: i64) -> String {
    let (days, rem_us) = (
        total_us.div_euclid(86_400_000_000),
        total_us.rem_euclid(86_400_000_000),
    );
    // Days to a civil date (Howard Hinnant's algorithm), valid for every i64 day count we can meet.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    let s = rem_us / 1_000_000;
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}.{:06} UTC",
        s / 3600,
        s / 60 % 60,
        s % 60,
        rem_us % 1_000_000
    )
}

/// An instant, given in nanoseconds since the epoch, to the microsecond.
pub fn utc(ns: i64) -> String {
    utc_us(ns.div_euclid(1000))
}

/// A stretch of time, given in nanoseconds, in the unit that reads best: "850 ms", "3.6 s", "12 min",
/// "5.2 h", "3.0 days", "54.4 years".
pub fn span_ns(ns: i64) -> String {
    let s = ns as f64 / 1e9;
    if s < 1.0 {
        format!("{:.0} ms", s * 1e3)
    } else if s < 60.0 {
        format!("{s:.1} s")
    } else if s < 3600.0 {
        format!("{:.0} min", s / 60.0)
    } else if s < 86_400.0 {
        format!("{:.1} h", s / 3600.0)
    } else if s < 365.25 * 86_400.0 {
        format!("{:.1} days", s / 86_400.0)
    } else {
        format!("{:.1} years", s / (365.25 * 86_400.0))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_share_short_of_the_whole_is_not_called_the_whole() {
        // 624 -> 2.31 requests a second is 99.6% fewer, not "100% fewer".
        assert_eq!(super::percent(1.0 - 2.31 / 624.0), "99.6%");
        assert_eq!(super::percent(0.99996), ">99.9%");
        assert_eq!(super::percent(1.0), "100%");
        assert_eq!(super::percent(0.994), "99%");
        assert_eq!(super::percent(0.54), "54%");
        assert_eq!(super::percent(0.024), "2.4%");
    }

    #[test]
    fn units_read_naturally() {
        assert_eq!(super::duration_us(88.0), "88 µs");
        assert_eq!(super::duration_us(3960.0), "3.96 ms");
        assert_eq!(super::rate(super::Measure::Bits, 19.98e6), "19.98 Mbit/s");
        assert_eq!(super::rate(super::Measure::Packets, 1000.0), "1000 pkt/s");
        assert_eq!(super::count(11_376), "11,376");
        assert_eq!(super::count(999), "999");
        assert_eq!(super::seconds(7.812), "7.81 s");
        assert_eq!(super::seconds(28_800.4), "28,800 s");
        assert_eq!(super::seconds(0.0002), "200 µs");
        assert_eq!(super::span_ns(3_600_000_000), "3.6 s");
        assert_eq!(super::span_ns(27 * 31_557_600_000_000_000), "27.0 years");
        assert_eq!(super::utc(0), "1970-01-01 00:00:00.000000 UTC");
        assert_eq!(super::utc(-1), "1969-12-31 23:59:59.999999 UTC");
    }

    #[test]
    fn sizes_and_significant_digits() {
        use super::{bytes, significant, size};
        assert_eq!(bytes(1), "1 byte");
        assert_eq!(bytes(1423), "1,423 bytes");
        assert_eq!(bytes(734_490), "717 KiB (734,490 bytes)");
        assert_eq!(bytes(3_340_069), "3.19 MiB (3,340,069 bytes)");
        assert_eq!(size(19_184), "18.7 KiB");
        assert_eq!(size(1_048_576), "1 MiB");
        assert_eq!(size(1_048_575), "1,020 KiB");
        assert_eq!(significant(27_726.72, 3), "27,700");
        assert_eq!(significant(2.84, 3), "2.84");
        assert_eq!(significant(0.0, 3), "0");
        assert_eq!(significant(0.012345, 3), "0.0123");
    }

    #[test]
    fn every_duration_style_reads_naturally() {
        use super::{duration, DurationStyle::*};
        assert_eq!(duration(1_250_000.0, Report), "1.25 s");
        assert_eq!(duration(1_225_200.0, Table), "1225.2ms");
        assert_eq!(duration(88.3, Table), "88µs");
        assert_eq!(duration(88.3, Label), "88 µs");
        assert_eq!(duration(1234.0, Label), "1.2 ms");
        assert_eq!(duration(5000.0, Label), "5 ms");
        assert_eq!(duration(0.5, Label), "500 ns");
        assert_eq!(duration(3962.0, Precise), "3.96 ms");
        assert_eq!(duration(88.34, Precise), "88.3 µs");
        assert_eq!(duration(10f64.powf(2.0f64.log10() + 2.0), Tick), "200 µs");
        assert_eq!(duration(1e6, Tick), "1 s");
        assert_eq!(super::trim_decimals(-0.0001, 2), "0");
    }
}
