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
    }
}
