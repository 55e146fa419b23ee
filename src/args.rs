//! Values of the command line that clap checks as it parses, so that a wrong one is refused with
//! clap's usage error (exit code 2) before any capture is read, and never taken in a unit the user
//! did not mean (`--interval 1` is not silently 1 ms).

use std::time::Duration;

/// A duration as written on the command line: a number with its unit (`10ms`, `1.5s`, `250us`,
/// `2m`). A bare number is refused: "10" could mean seconds or milliseconds, and a forensic
/// tool must not guess.
pub fn duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let scale = match unit.trim() {
        "ns" => 1e-9,
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "s" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        "" if !number.is_empty() => {
            return Err(format!(
                "`{number}` has no unit: write {number}ms or {number}s (units: ns, us, ms, s, m, h)"
            ))
        }
        _ => return Err("expected a number with a unit, like 10ms, 1.5s, 250us or 2m".into()),
    };
    let value: f64 = number
        .parse()
        .map_err(|_| "expected a number with a unit, like 10ms, 1.5s, 250us or 2m".to_string())?;
    Duration::try_from_secs_f64(value * scale).map_err(|_| format!("`{s}` is out of range"))
}

/// A duration that may be negative, in whole nanoseconds (saturating): `-2.5ms`, `+12s`, or `0` (the one
/// number that needs no unit), for the offset between two hosts' clocks.
pub fn signed_duration(s: &str) -> Result<i64, String> {
    let t = s.trim();
    if t.trim_start_matches(['-', '+']) == "0" {
        return Ok(0);
    }
    let (sign, magnitude) = match t.strip_prefix('-') {
        Some(rest) => (-1, rest),
        None => (1, t.strip_prefix('+').unwrap_or(t)),
    };
    Ok(sign * nanos(duration(magnitude)?))
}

/// The interval of a time series: a [`duration`] of at least 1 ms (finer bins say nothing a
/// capture's timestamps can support, and would cost a bin per millisecond of capture).
pub fn interval(s: &str) -> Result<Duration, String> {
    let d = duration(s)?;
    if d < Duration::from_millis(1) {
        return Err("the interval must be at least 1ms".into());
    }
    Ok(d)
}

/// A worker thread count: 1 to four times this machine's cores (more threads than that only
/// compete for the same cores and memory). With the phase log on ([`pcapsleuth::analysis::PHASES_ENV`]),
/// up to 1,024: the count then lays the work out for that many cores, and the pool stays at this
/// machine's.
pub fn threads(s: &str) -> Result<usize, String> {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let (most, why) = if std::env::var_os(pcapsleuth::analysis::PHASES_ENV).is_some() {
        (1024, "with the phase log on")
    } else {
        (4 * cores, "4 x this machine's cores")
    };
    match s.trim().parse::<usize>() {
        Ok(n) if (1..=most).contains(&n) => Ok(n),
        _ => Err(format!(
            "expected a thread count from 1 to {most} ({why}); leave it out for one per core"
        )),
    }
}

/// A duration in whole nanoseconds, saturating (a duration this long is only ever a bound).
pub fn nanos(d: Duration) -> i64 {
    i64::try_from(d.as_nanos()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_need_their_unit() {
        assert_eq!(duration("10ms"), Ok(Duration::from_millis(10)));
        assert_eq!(duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(duration("250us"), Ok(Duration::from_micros(250)));
        assert_eq!(duration("250µs"), Ok(Duration::from_micros(250)));
        assert_eq!(duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(duration("7ns"), Ok(Duration::from_nanos(7)));
        let bare = duration("10").unwrap_err();
        assert!(bare.contains("`10` has no unit"), "{bare}");
        assert!(bare.contains("10ms or 10s"), "{bare}");
        for wrong in ["", "ms", "ten ms", "10 parsecs", "-5ms", "1e999s"] {
            assert!(duration(wrong).is_err(), "{wrong} accepted");
        }
    }

    #[test]
    fn clock_offsets_may_be_negative_and_zero_needs_no_unit() {
        assert_eq!(signed_duration("-2.5ms"), Ok(-2_500_000));
        assert_eq!(signed_duration("+12s"), Ok(12_000_000_000));
        assert_eq!(signed_duration("0"), Ok(0));
        assert!(signed_duration("5").unwrap_err().contains("no unit"));
        assert!(signed_duration("soon").is_err());
    }

    #[test]
    fn intervals_are_at_least_a_millisecond() {
        assert_eq!(interval("1ms"), Ok(Duration::from_millis(1)));
        assert_eq!(interval("1s"), Ok(Duration::from_secs(1)));
        assert!(interval("999us").unwrap_err().contains("at least 1ms"));
        assert!(interval("1").unwrap_err().contains("no unit"));
    }

    #[test]
    fn thread_counts_are_bounded_by_the_cores() {
        let most = 4 * std::thread::available_parallelism().map_or(1, usize::from);
        assert_eq!(threads("1"), Ok(1));
        assert_eq!(threads(&most.to_string()), Ok(most));
        for wrong in ["0", &(most + 1).to_string(), "1000000", "two", "-1"] {
            let e = threads(wrong).unwrap_err();
            assert!(e.contains(&format!("from 1 to {most}")), "{wrong}: {e}");
        }
    }

    #[test]
    fn nanoseconds_saturate() {
        assert_eq!(nanos(Duration::from_millis(3)), 3_000_000);
        assert_eq!(nanos(Duration::MAX), i64::MAX);
    }
}
