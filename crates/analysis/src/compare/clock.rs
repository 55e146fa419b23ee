//! Aligning the two hosts' clocks from the matched pairs: the offset's bounds, their middle, and a drift
//! where no single offset fits.
//!
//! It reads the pairs `matching.rs` found and never matches a request itself: the matching needs no clock,
//! and the clock no matching.

use crate::thresholds::COMPARE_CLOCK_WINDOWS;

use super::model::{ClockAlignment, ClockBasis, ClockPolicy, Exchange, MatchedBy};

/// The clock alignment in use: `θ(t) = offset + drift · (t - reference)`, t on the client's clock.
pub(super) struct Clock {
    pub(super) alignment: ClockAlignment,
    offset_ns: f64,
    drift: f64,
    reference_ns: i64,
    pub(super) known: bool,
}

impl Clock {
    /// Server clock minus client clock at client time `t`.
    pub(super) fn offset_at(&self, t: i64) -> i64 {
        let dt = t.saturating_sub(self.reference_ns) as f64;
        (self.offset_ns + self.drift * dt).round() as i64
    }

    pub(super) fn to_server(&self, client_ns: i64) -> i64 {
        client_ns.saturating_add(self.offset_at(client_ns))
    }

    pub(super) fn to_client(&self, server_ns: i64) -> i64 {
        let guess = server_ns.saturating_sub(self.offset_ns.round() as i64);
        server_ns.saturating_sub(self.offset_at(guess))
    }
}

/// One matched pair's bounds on the offset: `lower <= θ <= upper`, at client time `t`.
struct Bound {
    t: i64,
    upper: i64,
    lower: Option<i64>,
}

fn bounds_of(
    client: &[Exchange],
    server: &[Exchange],
    found: &[(usize, usize, MatchedBy)],
) -> Vec<Bound> {
    found
        .iter()
        .map(|&(c, s, _)| {
            let (c, s) = (&client[c], &server[s]);
            // Any response segment left the server no earlier than its first byte, and the last byte's
            // first transmission no later than any arrival of it.
            let first = s
                .first_response
                .zip(c.first_response)
                .map(|(s, c)| s.ts_ns.saturating_sub(c.ts_ns));
            let last = s
                .last_response
                .zip(c.last_response)
                .map(|(s, c)| s.ts_ns.saturating_sub(c.ts_ns));
            Bound {
                t: c.request.ts_ns,
                upper: s.request.ts_ns.saturating_sub(c.request.ts_ns),
                lower: first.max(last),
            }
        })
        .collect()
}

/// The tightest bounds over all pairs once a drift of `drift` (ns per ns) is taken out.
fn envelope(bounds: &[Bound], drift: f64, reference: i64) -> Option<(f64, f64)> {
    let mut lo = f64::NEG_INFINITY;
    let mut hi = f64::INFINITY;
    let mut lower_seen = false;
    for b in bounds {
        let trend = drift * b.t.saturating_sub(reference) as f64;
        hi = hi.min(b.upper as f64 - trend);
        if let Some(lower) = b.lower {
            lo = lo.max(lower as f64 - trend);
            lower_seen = true;
        }
    }
    (lower_seen && hi.is_finite()).then_some((lo, hi))
}

/// The slope through the middles of the bounds of successive time windows (least squares), when at least
/// three windows hold a bound from each side.
fn window_drift(bounds: &[Bound], reference: i64) -> Option<f64> {
    let first = bounds.iter().map(|b| b.t).min()?;
    let last = bounds.iter().map(|b| b.t).max()?;
    let span = last.saturating_sub(first);
    if span <= 0 {
        return None;
    }
    let windows = COMPARE_CLOCK_WINDOWS as i64;
    let mut cells: Vec<(f64, f64, f64, u64)> =
        vec![(f64::NEG_INFINITY, f64::INFINITY, 0.0, 0); COMPARE_CLOCK_WINDOWS];
    for b in bounds {
        let w = ((i128::from(b.t.saturating_sub(first)) * i128::from(windows))
            / (i128::from(span) + 1))
            .clamp(0, i128::from(windows) - 1) as usize;
        let cell = &mut cells[w];
        cell.1 = cell.1.min(b.upper as f64);
        if let Some(lower) = b.lower {
            cell.0 = cell.0.max(lower as f64);
        }
        cell.2 += b.t.saturating_sub(reference) as f64;
        cell.3 += 1;
    }
    let points: Vec<(f64, f64)> = cells
        .iter()
        .filter(|c| c.0.is_finite() && c.1.is_finite() && c.3 > 0)
        .map(|c| (c.2 / c.3 as f64, (c.0 + c.1) / 2.0))
        .collect();
    if points.len() < 3 {
        return None;
    }
    let n = points.len() as f64;
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    (sxx > 0.0).then(|| sxy / sxx).filter(|d| d.is_finite())
}

pub(super) fn align_clocks(
    client: &[Exchange],
    server: &[Exchange],
    found: &[(usize, usize, MatchedBy)],
    policy: ClockPolicy,
) -> Clock {
    let reference_ns = found
        .first()
        .map_or(0, |&(c, _, _)| client[c].request.ts_ns);
    let reference = (!found.is_empty()).then(|| reference_ns as f64 / 1e9);
    if let ClockPolicy::Known { offset_ns } = policy {
        return Clock {
            alignment: ClockAlignment {
                basis: ClockBasis::Given,
                offset_us: Some(offset_ns as f64 / 1e3),
                reference,
                drift_ppm: None,
                uncertainty_us: None,
                consistent: true,
                pairs: 0,
            },
            offset_ns: offset_ns as f64,
            drift: 0.0,
            reference_ns,
            known: true,
        };
    }
    let bounds = bounds_of(client, server, found);
    let unknown = Clock {
        alignment: ClockAlignment {
            basis: ClockBasis::Unknown,
            offset_us: None,
            reference: None,
            drift_ppm: None,
            uncertainty_us: None,
            consistent: true,
            pairs: 0,
        },
        offset_ns: 0.0,
        drift: 0.0,
        reference_ns,
        known: false,
    };
    let Some((lo, hi)) = envelope(&bounds, 0.0, reference_ns) else {
        return unknown;
    };
    let mut fit = (lo, hi, 0.0);
    if lo > hi {
        // No single offset fits every pair: try a clock that runs at another rate.
        if let Some(drift) = window_drift(&bounds, reference_ns) {
            if let Some((lo2, hi2)) = envelope(&bounds, drift, reference_ns) {
                if lo2 - hi2 < lo - hi {
                    fit = (lo2, hi2, drift);
                }
            }
        }
    }
    let (lo, hi, drift) = fit;
    let consistent = lo <= hi;
    let offset_ns = (lo + hi) / 2.0;
    Clock {
        alignment: ClockAlignment {
            basis: ClockBasis::Estimated,
            offset_us: Some(offset_ns / 1e3),
            reference,
            drift_ppm: (drift != 0.0).then_some(drift * 1e6),
            uncertainty_us: consistent.then_some((hi - lo) / 2.0 / 1e3),
            consistent,
            pairs: bounds.iter().filter(|b| b.lower.is_some()).count() as u64,
        },
        offset_ns,
        drift,
        reference_ns,
        known: true,
    }
}
