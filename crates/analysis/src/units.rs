//! How durations and rates read in text: one place, so findings and reports say the same thing.

/// A duration given in microseconds: "88 µs", "3.96 ms", "1.25 s".
pub fn duration_us(us: f64) -> String {
    if us >= 1_000_000.0 {
        format!("{:.2} s", us / 1e6)
    } else if us >= 1000.0 {
        format!("{:.2} ms", us / 1000.0)
    } else {
        format!("{us:.0} µs")
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

/// A duration in seconds, as a capture's span or a wait reads: "7.81 s", "0.59 s", "28,800 s".
pub fn seconds(s: f64) -> String {
    if s >= 100.0 {
        format!("{} s", count(s.round() as u64))
    } else if s >= 0.01 {
        format!("{s:.2} s")
    } else {
        duration_us(s * 1e6)
    }
}

/// A rate per second of `kind` "pps" (packets) or "bps" (bits): "1000 pkt/s", "19.98 Mbit/s".
pub fn rate(kind: &str, per_second: f64) -> String {
    let v = per_second;
    match kind {
        "pps" => format!("{v:.0} pkt/s"),
        _ if v >= 1e9 => format!("{:.2} Gbit/s", v / 1e9),
        _ if v >= 1e6 => format!("{:.2} Mbit/s", v / 1e6),
        _ => format!("{:.0} kbit/s", v / 1e3),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn units_read_naturally() {
        assert_eq!(super::duration_us(88.0), "88 µs");
        assert_eq!(super::duration_us(3960.0), "3.96 ms");
        assert_eq!(super::rate("bps", 19.98e6), "19.98 Mbit/s");
        assert_eq!(super::rate("pps", 1000.0), "1000 pkt/s");
        assert_eq!(super::count(11_376), "11,376");
        assert_eq!(super::count(999), "999");
        assert_eq!(super::seconds(7.812), "7.81 s");
        assert_eq!(super::seconds(28_800.4), "28,800 s");
        assert_eq!(super::seconds(0.0002), "200 µs");
    }
}
