//! One meaning of "per second" for every time series: how much of an interval the capture covers.
//!
//! The capture's body (`Timeline::body_first` to `body_last`) begins and ends inside an interval: the
//! first and the last interval of a series are only partly covered. Every series says how much of each interval it
//! covers (`covered_s` in JSON); counts stay counts (what was seen in that part), and rates divide by the
//! covered seconds, never by the whole interval: dividing a count by the whole interval would draw a ramp
//! at each end of the capture that never happened, and a count read as a rate would understate it.

use crate::timeline::Timeline;

/// Nanoseconds of `[start_ns, start_ns + width_ns)` that the body `[first, last]` (inclusive timestamps,
/// ns) covers: the whole width when there is no body, at least 1 ns for an interval the body touches.
pub fn covered_ns(body: Option<(i64, i64)>, start_ns: i64, width_ns: i64) -> i64 {
    let width = width_ns.max(1);
    match body {
        Some((first, last)) => {
            let end = start_ns.saturating_add(width);
            let covered = end.min(last.saturating_add(1)) - start_ns.max(first);
            covered.clamp(1, width)
        }
        None => width,
    }
}

/// [`covered_ns`] in seconds, for the body of `timeline`.
pub fn covered_s(timeline: &Timeline, start_ns: i64, width_ns: i64) -> f64 {
    covered_ns(body(timeline), start_ns, width_ns) as f64 / 1e9
}

/// The body of `timeline` as `(first, last)` nanoseconds, when it has one.
pub fn body(timeline: &Timeline) -> Option<(i64, i64)> {
    Some((timeline.body_first?.0, timeline.body_last?.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEC: i64 = 1_000_000_000;

    #[test]
    fn edge_intervals_are_covered_in_part_and_the_rest_whole() {
        let body = Some((10 * SEC + 600_000_000, 12 * SEC + 399_999_999));
        assert_eq!(covered_ns(body, 10 * SEC, SEC), 400_000_000);
        assert_eq!(covered_ns(body, 11 * SEC, SEC), SEC);
        assert_eq!(covered_ns(body, 12 * SEC, SEC), 400_000_000);
        // An interval the body does not reach, and a capture without packets.
        assert_eq!(covered_ns(body, 20 * SEC, SEC), 1);
        assert_eq!(covered_ns(None, 20 * SEC, SEC), SEC);
    }
}
