//! When a capture happened: the *body* of its timestamps, and the timestamps that do not belong to it.
//!
//! A capture's clock can be wrong for a packet or a stretch: a corrupt record, a zero timestamp, a clock
//! that jumped (an NTP step, a VM migrated or resumed, broken capture hardware). Time series indexed by
//! such a timestamp would stretch over decades. So every time-indexed structure is sparse (it costs the
//! intervals that hold something, never the span), and timestamps far from the rest are found, reported
//! as damage with their frames, and left out of the time series.
//!
//! The decision is the same whatever the number of splits: each split counts its records in runs of
//! consecutive frames whose timestamps fall in the same day, runs are joined across split boundaries, and
//! the body is chosen at the end from the days' counts alone, which do not depend on order. The body is
//! the cluster of days around the median timestamp (of those between 1990 and 2106 when there are any), a
//! cluster ending at a silence longer than [`WILD_GAP_NS`]; every timestamp outside it is *wild*.

use std::collections::BTreeMap;
use std::fmt;

use pcapsleuth_capture::Timestamp;
use serde::Serialize;

use crate::thresholds::{
    CLOCK_STEP_BACK_NS, TIMELINE_LISTED, WILD_AFTER_NS, WILD_BEFORE_NS, WILD_GAP_NS,
};
use crate::units::{span_ns, utc};

const DAY_NS: i64 = 86_400_000_000_000;

/// Consecutive frames whose timestamps fall in one day.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Run {
    day: i64,
    /// Frame of the first record (split-local from 0 while scanning, then Wireshark's).
    first_frame: u64,
    packets: u64,
    min_ts: i64,
    max_ts: i64,
}

/// A record whose timestamp lies more than [`CLOCK_STEP_BACK_NS`] before the previous record's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Step {
    frame: u64,
    ts: i64,
    previous_ts: i64,
}

/// What one split's scan notes about time: per record, two comparisons when the day does not change.
///
/// The run being counted is kept in plain fields rather than as the last of `runs` (a vector's last
/// element, looked up per record, cost as much again), and is put with the others when it ends.
#[derive(Debug, Clone)]
pub(crate) struct SplitTimes {
    /// The runs that ended.
    runs: Vec<Run>,
    /// The current run (its `day` and `first_frame`; `packets` 0 before the first record).
    current: Run,
    /// The current run's day: `[day_start, day_end)` (empty before the first record).
    day_start: i64,
    day_end: i64,
    steps: Vec<Step>,
    first: Option<i64>,
    /// The previous record's timestamp (meaningless before the first record).
    previous: i64,
    /// A record before this is a step back: `previous` less [`CLOCK_STEP_BACK_NS`] (saturating), or
    /// `i64::MIN` before the first record.
    step_floor: i64,
}

impl Default for SplitTimes {
    fn default() -> Self {
        SplitTimes {
            runs: Vec::new(),
            current: Run {
                day: 0,
                first_frame: 0,
                packets: 0,
                min_ts: 0,
                max_ts: 0,
            },
            day_start: 0,
            day_end: 0,
            steps: Vec::new(),
            first: None,
            previous: 0,
            step_floor: i64::MIN,
        }
    }
}

impl SplitTimes {
    /// Record `frame` (split-local, from 0) has timestamp `ts` (ns since the epoch).
    #[inline]
    pub(crate) fn note(&mut self, frame: u64, ts: i64) {
        if ts >= self.day_start && ts < self.day_end {
            let r = &mut self.current;
            r.packets += 1;
            r.min_ts = r.min_ts.min(ts);
            r.max_ts = r.max_ts.max(ts);
        } else {
            self.start_run(frame, ts);
        }
        if ts < self.step_floor {
            self.step_back(frame, ts);
        }
        self.previous = ts;
        self.step_floor = ts.saturating_sub(CLOCK_STEP_BACK_NS);
    }

    #[cold]
    fn step_back(&mut self, frame: u64, ts: i64) {
        self.steps.push(Step {
            frame,
            ts,
            previous_ts: self.previous,
        });
    }

    #[cold]
    fn start_run(&mut self, frame: u64, ts: i64) {
        if self.current.packets > 0 {
            self.runs.push(self.current);
        } else {
            self.first = Some(ts);
        }
        let day = ts.div_euclid(DAY_NS);
        self.day_start = ts.saturating_sub(ts.rem_euclid(DAY_NS));
        self.day_end = self.day_start.saturating_add(DAY_NS);
        self.current = Run {
            day,
            first_frame: frame,
            packets: 1,
            min_ts: ts,
            max_ts: ts,
        };
    }

    /// The runs, in frame order: those that ended, then the current one.
    fn runs(&self) -> impl Iterator<Item = &Run> {
        self.runs
            .iter()
            .chain(Some(&self.current).filter(|r| r.packets > 0))
    }

    /// The first record's timestamp, if the split had a record.
    pub(crate) fn first(&self) -> Option<i64> {
        self.first
    }

    /// The last record's timestamp, if the split had a record.
    pub(crate) fn last(&self) -> Option<i64> {
        self.first.map(|_| self.previous)
    }
}

/// Every split's notes, joined in file order; [`TimeTally::finish`] decides the body.
#[derive(Debug, Clone, Default)]
pub(crate) struct TimeTally {
    runs: Vec<Run>,
    steps: Vec<Step>,
    /// Timestamp of the last record so far.
    previous: Option<i64>,
}

impl TimeTally {
    /// Appends the notes of the next split, whose first record is frame `base + 1`.
    pub(crate) fn append(&mut self, split: &SplitTimes, base: u64) {
        if let (Some(p), Some(first)) = (self.previous, split.first) {
            // The split's first record follows the previous split's last.
            if first < p.saturating_sub(CLOCK_STEP_BACK_NS) {
                self.steps.push(Step {
                    frame: base + 1,
                    ts: first,
                    previous_ts: p,
                });
            }
        }
        for r in split.runs() {
            let r = Run {
                first_frame: base + r.first_frame + 1,
                ..*r
            };
            match self.runs.last_mut() {
                // A run the split boundary cut in two.
                Some(last)
                    if last.day == r.day && last.first_frame + last.packets == r.first_frame =>
                {
                    last.packets += r.packets;
                    last.min_ts = last.min_ts.min(r.min_ts);
                    last.max_ts = last.max_ts.max(r.max_ts);
                }
                _ => self.runs.push(r),
            }
        }
        self.steps.extend(split.steps.iter().map(|s| Step {
            frame: base + s.frame + 1,
            ..*s
        }));
        self.previous = split.last().or(self.previous);
    }

    /// Decides the body and what lies outside it.
    pub(crate) fn finish(self) -> Timeline {
        // Per day: packets, earliest and latest timestamp.
        let mut days: BTreeMap<i64, (u64, i64, i64)> = BTreeMap::new();
        for r in &self.runs {
            let d = days.entry(r.day).or_insert((0, r.min_ts, r.max_ts));
            d.0 += r.packets;
            d.1 = d.1.min(r.min_ts);
            d.2 = d.2.max(r.max_ts);
        }
        // Before 1990 or after 2106 the body is only where every timestamp is.
        let era = WILD_BEFORE_NS.div_euclid(DAY_NS)..=WILD_AFTER_NS.div_euclid(DAY_NS);
        let era = if days.range(era.clone()).next().is_some() {
            era
        } else {
            i64::MIN..=i64::MAX
        };
        let days: Vec<(i64, (u64, i64, i64))> = days.range(era).map(|(&k, &v)| (k, v)).collect();
        let total: u64 = days.iter().map(|(_, d)| d.0).sum();
        let target = total.saturating_sub(1) / 2;
        let mut seen = 0u64;
        let Some(median) = days.iter().position(|(_, d)| {
            seen += d.0;
            seen > target
        }) else {
            return Timeline::default();
        };
        let silence = |a: usize, b: usize| days[b].1 .1.saturating_sub(days[a].1 .2);
        let (mut lo, mut hi) = (median, median);
        while lo > 0 && silence(lo - 1, lo) <= WILD_GAP_NS {
            lo -= 1;
        }
        while hi + 1 < days.len() && silence(hi, hi + 1) <= WILD_GAP_NS {
            hi += 1;
        }
        let (first_day, last_day) = (days[lo].0, days[hi].0);
        let body = (days[lo].1 .1, days[hi].1 .2);
        let mut t = Timeline {
            body_first: Some(Timestamp(body.0)),
            body_last: Some(Timestamp(body.1)),
            ..Timeline::default()
        };
        for r in self
            .runs
            .iter()
            .filter(|r| r.day < first_day || r.day > last_day)
        {
            t.wild_packets += r.packets;
            t.wild_runs += 1;
            if t.wild.len() < TIMELINE_LISTED {
                t.wild.push(WildTimestamps {
                    first_frame: r.first_frame,
                    packets: r.packets,
                    first_ts: Timestamp(r.min_ts),
                    last_ts: Timestamp(r.max_ts),
                    before_body_ns: body.0.saturating_sub(r.max_ts).max(0),
                    after_body_ns: r.min_ts.saturating_sub(body.1).max(0),
                });
            }
        }
        let in_body = |ts: i64| ts >= body.0 && ts <= body.1;
        for s in self
            .steps
            .iter()
            .filter(|s| in_body(s.ts) && in_body(s.previous_ts))
        {
            t.clock_steps_back += 1;
            if t.steps_back.len() < TIMELINE_LISTED {
                t.steps_back.push(ClockStepBack {
                    frame: s.frame,
                    ts: Timestamp(s.ts),
                    back_ns: s.previous_ts.saturating_sub(s.ts),
                });
            }
        }
        t
    }
}

/// When the capture happened, and the timestamps that do not fit.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Timeline {
    /// Earliest timestamp of the capture's body; the body, up to `body_last`, is the span time series
    /// cover.
    pub body_first: Option<Timestamp>,
    /// Latest timestamp of the body; both are `None` for a capture without packets.
    pub body_last: Option<Timestamp>,
    /// Records whose timestamps lie outside the body (more than 30 days of silence away from it, or before
    /// 1990 or after 2106 when it is not): left out of every time series and of response times.
    pub wild_packets: u64,
    /// Runs of consecutive such records.
    pub wild_runs: u64,
    /// The first runs of them (at most 10), in frame order.
    pub wild: Vec<WildTimestamps>,
    /// Records inside the body whose timestamp lies more than a second before the previous record's:
    /// the capture's clock stepped back (kept in the time series).
    pub clock_steps_back: u64,
    /// The first of them (at most 10).
    pub steps_back: Vec<ClockStepBack>,
}

/// Consecutive records whose timestamps lie outside the capture's body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WildTimestamps {
    /// Wireshark frame number of the first.
    pub first_frame: u64,
    /// Records in the run.
    pub packets: u64,
    /// Timestamp of the run's first record.
    pub first_ts: Timestamp,
    /// Timestamp of the run's last record.
    pub last_ts: Timestamp,
    /// How far before the body's start (0 when after it).
    pub before_body_ns: i64,
    /// How far after the body's end (0 when before it).
    pub after_body_ns: i64,
}

/// A record whose timestamp is earlier than the previous record's by more than a second.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ClockStepBack {
    /// Wireshark frame number of the record.
    pub frame: u64,
    /// Its timestamp.
    pub ts: Timestamp,
    /// How far before the previous record's timestamp.
    pub back_ns: i64,
}

impl Timeline {
    /// Whether a timestamp (ns since the epoch) belongs to the body.
    pub fn in_body(&self, ts_ns: i64) -> bool {
        match (self.body_first, self.body_last) {
            (Some(a), Some(b)) => ts_ns >= a.0 && ts_ns <= b.0,
            _ => false,
        }
    }

    /// Whether `[start, end)` (ns since the epoch) overlaps the body.
    pub fn overlaps_body(&self, start_ns: i64, end_ns: i64) -> bool {
        match (self.body_first, self.body_last) {
            (Some(a), Some(b)) => start_ns <= b.0 && end_ns > a.0,
            _ => false,
        }
    }

    /// Lines for people, one per listed run or step, and one for any beyond those listed.
    pub fn damage_lines(&self) -> Vec<String> {
        let mut out: Vec<String> = self.wild.iter().map(ToString::to_string).collect();
        if self.wild_runs > self.wild.len() as u64 {
            let listed: u64 = self.wild.iter().map(|w| w.packets).sum();
            out.push(format!(
                "{} more in {} more runs with timestamps outside the capture's body; left out of time series",
                packets(self.wild_packets - listed),
                self.wild_runs - self.wild.len() as u64
            ));
        }
        out.extend(self.steps_back.iter().map(ToString::to_string));
        if self.clock_steps_back > self.steps_back.len() as u64 {
            out.push(format!(
                "the clock stepped back {} more times",
                self.clock_steps_back - self.steps_back.len() as u64
            ));
        }
        out
    }

    /// "2026-11-22 09:21:22 to 09:21:26 UTC (3.6 s)", with the packets left out when there are any.
    pub fn span_text(&self) -> Option<String> {
        let (a, b) = (self.body_first?, self.body_last?);
        let mut s = format!("{} to {} ({})", utc(a.0), utc(b.0), span_ns(b.0 - a.0));
        if self.wild_packets > 0 {
            s += &format!(
                "; {} with a timestamp outside it left out of time series",
                packets(self.wild_packets)
            );
        }
        Some(s)
    }
}

/// "1 packet", "3 packets".
pub(crate) fn packets(n: u64) -> String {
    if n == 1 {
        "1 packet".to_string()
    } else {
        format!("{n} packets")
    }
}

impl fmt::Display for WildTimestamps {
    /// "frame 8: timestamp 1970-01-01 00:00:00 UTC, 27 years before the rest of the capture; left out
    /// of time series".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (distance, side) = if self.before_body_ns > 0 {
            (self.before_body_ns, "before")
        } else {
            (self.after_body_ns, "after")
        };
        let far = format!("{} {side} the rest of the capture", span_ns(distance));
        if self.packets == 1 {
            write!(
                f,
                "frame {}: timestamp {}, {far}; left out of time series",
                self.first_frame,
                utc(self.first_ts.0)
            )
        } else {
            write!(
                f,
                "frames {}-{} ({} packets): timestamps {} to {}, {far}; left out of time series",
                self.first_frame,
                self.first_frame + self.packets - 1,
                self.packets,
                utc(self.first_ts.0),
                utc(self.last_ts.0)
            )
        }
    }
}

impl fmt::Display for ClockStepBack {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "frame {}: timestamp {}, {} before the previous frame's: the capture's clock stepped back",
            self.frame,
            utc(self.ts.0),
            span_ns(self.back_ns)
        )
    }
}

/// The time from a request at `start_ns` to a response at `end_ns`, unless the timestamps cannot both be
/// right: a response more than 1 s (`CLOCK_STEP_BACK_NS`) before its request, or more than 30 days
/// (`WILD_GAP_NS`) after it (one of the two lies outside the capture's body). A response a little before
/// its request (interfaces timestamped apart) took no measurable time.
pub fn plausible_response_time(start_ns: i64, end_ns: i64) -> Option<u64> {
    let rt = end_ns.checked_sub(start_ns)?;
    (-CLOCK_STEP_BACK_NS..=WILD_GAP_NS)
        .contains(&rt)
        .then(|| rt.max(0) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const SEC: i64 = 1_000_000_000;
    /// 2024-06-01 00:00:00 UTC.
    const JUNE_2024: i64 = 1_717_200_000 * SEC;

    fn timeline(ts: &[i64], splits: &[usize]) -> Timeline {
        let mut tally = TimeTally::default();
        let mut from = 0;
        for &to in splits.iter().chain(std::iter::once(&ts.len())) {
            let mut s = SplitTimes::default();
            for (i, &t) in ts[from..to].iter().enumerate() {
                s.note(i as u64, t);
            }
            tally.append(&s, from as u64);
            from = to;
        }
        tally.finish()
    }

    #[test]
    fn a_zero_timestamp_is_wild_and_named_by_its_frame() {
        let mut ts: Vec<i64> = (0..20).map(|i| JUNE_2024 + i * SEC).collect();
        ts[7] = 0;
        let t = timeline(&ts, &[]);
        assert_eq!(t.wild_packets, 1);
        assert_eq!(t.body_first, Some(Timestamp(JUNE_2024)));
        assert_eq!(t.body_last, Some(Timestamp(JUNE_2024 + 19 * SEC)));
        assert_eq!(
            t.wild[0].to_string(),
            "frame 8: timestamp 1970-01-01 00:00:00.000000 UTC, 54.4 years before the rest of the capture; left out of time series"
        );
        // Frame 9 steps forward again; frame 8's step back is wild, not a clock step inside the body.
        assert_eq!(t.clock_steps_back, 0);
    }

    #[test]
    fn a_week_of_light_traffic_is_all_body() {
        let ts: Vec<i64> = (0..7 * 24).map(|h| JUNE_2024 + h * 3600 * SEC).collect();
        let t = timeline(&ts, &[3, 100]);
        assert_eq!(t.wild_packets, 0);
        assert_eq!(t.body_last, Some(Timestamp(JUNE_2024 + 167 * 3600 * SEC)));
    }

    #[test]
    fn a_clock_that_stepped_back_inside_the_body_is_reported_and_kept() {
        let ts = [
            JUNE_2024 + 600 * SEC,
            JUNE_2024 + 601 * SEC,
            JUNE_2024,
            JUNE_2024 + SEC,
        ];
        let t = timeline(&ts, &[2]);
        assert_eq!(t.wild_packets, 0);
        assert_eq!(t.clock_steps_back, 1);
        assert_eq!(t.steps_back[0].frame, 3);
        assert_eq!(t.steps_back[0].back_ns, 601 * SEC);
    }

    #[test]
    fn before_1990_is_wild_unless_everything_is() {
        let t = timeline(&[JUNE_2024, 5 * SEC, JUNE_2024 + SEC], &[]);
        assert_eq!((t.wild_packets, t.wild[0].first_frame), (1, 2));
        let t = timeline(&[SEC, 2 * SEC, 3 * SEC], &[]);
        assert_eq!(t.wild_packets, 0);
        assert_eq!(t.body_first, Some(Timestamp(SEC)));
    }

    #[test]
    fn after_2106_is_wild_even_for_a_majority() {
        // A pcapng resolution gone wrong saturates the nanosecond clock, in 2262.
        let t = timeline(&[i64::MAX, JUNE_2024, i64::MAX, i64::MAX], &[]);
        assert_eq!(t.wild_packets, 3);
        assert_eq!(t.body_first, Some(Timestamp(JUNE_2024)));
        assert_eq!(t.span_text().unwrap(), "2024-06-01 00:00:00.000000 UTC to 2024-06-01 00:00:00.000000 UTC (0 ms); 3 packets with a timestamp outside it left out of time series");
    }

    #[test]
    fn implausible_response_times_are_none() {
        assert_eq!(plausible_response_time(10, 15), Some(5));
        assert_eq!(plausible_response_time(10, 9), Some(0));
        assert_eq!(plausible_response_time(JUNE_2024, 0), None);
        assert_eq!(plausible_response_time(0, JUNE_2024), None);
    }

    proptest! {
        /// The body, the wild runs and the clock steps do not depend on where the splits fall.
        #[test]
        fn the_timeline_does_not_depend_on_the_splits(
            ts in proptest::collection::vec(
                prop_oneof![
                    8 => (0i64..4000).prop_map(|s| JUNE_2024 + s * SEC),
                    1 => any::<i64>(),
                    1 => (0i64..100).prop_map(|d| JUNE_2024 + d * 86_400 * SEC),
                ],
                1..60,
            ),
            cuts in proptest::collection::vec(0usize..60, 0..6),
        ) {
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(ts.len())).collect();
            cuts.sort_unstable();
            prop_assert_eq!(timeline(&ts, &[]), timeline(&ts, &cuts));
        }
    }
}
