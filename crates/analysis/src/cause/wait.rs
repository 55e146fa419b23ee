//! Waits a timer makes: a whole number of seconds ([`round_wait`]), a hump of response times too narrow
//! for a service time ([`narrow_hump`]), and a wait in words precise enough to show a timer's.
//!
//! It reads durations only, never packets or sessions.

use crate::thresholds::{HUMP_NARROW_SPREAD, ROUND_WAIT_MIN_NS, ROUND_WAIT_TOLERANCE_NS};
use crate::units;

/// A wait at a whole number of seconds, as a timer makes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoundWait {
    /// The whole number of seconds.
    pub seconds: u64,
    /// How far the wait was from it, nanoseconds (positive: later).
    pub off_ns: i64,
}

/// The whole number of seconds `wait_ns` is, when it is one within `ROUND_WAIT_TOLERANCE_NS` (20 ms) and at
/// least `ROUND_WAIT_MIN_NS` (1 s): timeouts are set in whole seconds (MySQL's are, and most clients' and
/// proxies'), and fire within milliseconds of them.
pub fn round_wait(wait_ns: i64) -> Option<RoundWait> {
    if wait_ns < ROUND_WAIT_MIN_NS - ROUND_WAIT_TOLERANCE_NS {
        return None;
    }
    let seconds = (wait_ns + 500_000_000) / 1_000_000_000;
    let off_ns = wait_ns - seconds * 1_000_000_000;
    (seconds > 0 && off_ns.abs() <= ROUND_WAIT_TOLERANCE_NS).then_some(RoundWait {
        seconds: seconds as u64,
        off_ns,
    })
}

/// A wait in words, precise enough to show a timer's: "3.000 s", "1.96 s" ("3 s" reads as rounded).
/// A wait below zero is no wait: the later packet is stamped earlier, because the capture's clock
/// stepped back between them (or the capture's records are out of order), and the words say so rather
/// than give a negative time.
pub fn wait_words(wait_ns: i64) -> String {
    let s = wait_ns as f64 / 1e9;
    if wait_ns < 0 {
        return format!(
            "an unknown time (the later packet is stamped {} earlier: the capture's clock stepped back)",
            units::seconds(-s)
        );
    }
    if round_wait(wait_ns).is_some() && s < 1000.0 {
        format!("{s:.3} s")
    } else {
        units::seconds(s)
    }
}

/// Whether a hump whose middle half spans `spread` (p75/p25) is narrow: a timer's, not a service time's.
pub(crate) fn narrow_hump(spread: f64) -> bool {
    spread <= HUMP_NARROW_SPREAD
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_wait_is_a_whole_number_of_seconds_within_the_tolerance() {
        assert_eq!(
            round_wait(2_003_700_000),
            Some(RoundWait {
                seconds: 2,
                off_ns: 3_700_000
            })
        );
        assert_eq!(round_wait(2_999_990_000).map(|w| w.seconds), Some(3));
        assert_eq!(round_wait(1_961_189_000), None, "39 ms early is no timer's");
        assert_eq!(round_wait(1_225_246_000), None);
        assert_eq!(
            round_wait(400_000_000),
            None,
            "under a second: too short to tell"
        );
        assert_eq!(round_wait(-1_000_000_000), None);
        assert_eq!(
            round_wait(28_800_004_000_000).map(|w| w.seconds),
            Some(28_800)
        );
    }

    #[test]
    fn waits_at_a_timer_read_to_the_millisecond() {
        assert_eq!(wait_words(3_000_400_000), "3.000 s");
        assert_eq!(wait_words(1_225_246_000), "1.23 s");
    }

    #[test]
    fn a_wait_across_a_clock_that_stepped_back_is_not_given_as_a_negative_time() {
        let words = wait_words(-34_800_000_000_000);
        assert!(!words.contains('-'), "{words}");
        assert!(words.contains("34,800 s earlier"), "{words}");
        assert!(words.contains("clock stepped back"), "{words}");
    }
}
