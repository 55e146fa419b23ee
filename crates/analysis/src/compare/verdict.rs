//! What the matched pairs say: each transaction's split into server and path time, the humps side by
//! side, per-interval figures, the notable transactions, and the verdict in words.

use std::collections::BTreeMap;

use crate::histogram::{Histogram, RtSummary};
use crate::modes::{detect_modes, Mode};
use crate::thresholds::{COMPARE_LATE_FACTOR, COMPARE_LATE_MIN_NS, COMPARE_PATH_SHARE};
use crate::timeline::plausible_response_time;
use crate::units::{duration_us, percent};

use super::clock::Clock;
use super::connection_of;
use super::matching::{Matches, Pairing};
use super::model::{
    CaptureSpan, CapturedAs, ClientHump, ClockBasis, Comparison, Exchange, IntervalComparison,
    MatchedBy, MatchedPair, Notable, NotableCounts, NotableKind,
};

/// The count, mean, percentiles, minimum and maximum of `values_ns` (sorted in place), in µs: exact, each
/// percentile a value that occurred (nearest rank), where the other reports read them off a histogram.
pub(super) fn exact_summary_us(values_ns: &mut [i64]) -> RtSummary {
    if values_ns.is_empty() {
        return RtSummary::default();
    }
    values_ns.sort_unstable();
    let n = values_ns.len();
    let us = |ns: i64| ns as f64 / 1e3;
    let rank = |q: f64| {
        let r = (q * n as f64).ceil() as usize;
        us(values_ns[r.clamp(1, n) - 1])
    };
    let sum: i128 = values_ns.iter().map(|&v| i128::from(v)).sum();
    RtSummary {
        count: n as u64,
        mean: (sum as f64 / n as f64) / 1e3,
        p50: rank(0.50),
        p95: rank(0.95),
        p99: rank(0.99),
        max: us(values_ns[n - 1]),
        min: us(values_ns[0]),
    }
}

pub(super) fn measure(
    c: &Exchange,
    s: &Exchange,
    ci: usize,
    si: usize,
    by: MatchedBy,
    clock: &Clock,
) -> MatchedPair {
    let rt = |e: &Exchange| {
        e.last_response
            .and_then(|end| plausible_response_time(e.request.ts_ns, end.ts_ns))
    };
    let theta = clock.known.then(|| clock.offset_at(c.request.ts_ns));
    MatchedPair {
        client: ci,
        server: si,
        matched_by: by,
        client_rt_ns: rt(c),
        server_rt_ns: rt(s),
        request_path_ns: theta.map(|theta| {
            s.request
                .ts_ns
                .saturating_sub(theta)
                .saturating_sub(c.request.ts_ns)
        }),
        response_path_ns: theta.and_then(|theta| {
            let (cl, sl) = (c.last_response?, s.last_response?);
            Some(cl.ts_ns.saturating_sub(sl.ts_ns.saturating_sub(theta)))
        }),
    }
}

/// Summed path time over summed client time.
pub(super) fn share<'a>(pairs: impl Iterator<Item = &'a MatchedPair>) -> Option<f64> {
    let (mut path, mut total) = (0i128, 0i128);
    for p in pairs {
        if let (Some(c), Some(d)) = (p.client_rt_ns, p.path_ns()) {
            total += i128::from(c);
            path += i128::from(d);
        }
    }
    (total > 0).then(|| (path as f64 / total as f64).clamp(0.0, 1.0))
}

pub(super) fn humps_of(values_ns: impl Iterator<Item = u64>) -> Vec<Mode> {
    let mut h = Histogram::default();
    for v in values_ns {
        h.add(v);
    }
    detect_modes(&h).modes
}

/// What the server and the path took of the transactions in a client hump (those in its histogram bins).
pub(super) fn client_hump(
    mode: Mode,
    client: &[Exchange],
    server: &[Exchange],
    pairs: &[MatchedPair],
) -> ClientHump {
    let members: Vec<&MatchedPair> = pairs
        .iter()
        .filter(|p| p.server_rt_ns.is_some())
        .filter(|p| p.client_rt_ns.is_some_and(|rt| mode.holds(rt)))
        .collect();
    let mut server_rt: Vec<i64> = members
        .iter()
        .filter_map(|p| p.server_rt_ns)
        .map(|v| v as i64)
        .collect();
    let mut path: Vec<i64> = members.iter().filter_map(|p| p.path_ns()).collect();
    let resent = members
        .iter()
        .filter(|p| {
            client[p.client].response_retransmitted || server[p.server].response_retransmitted
        })
        .count();
    ClientHump {
        server_rt_p50_us: exact_summary_us(&mut server_rt).p50,
        path_p50_us: exact_summary_us(&mut path).p50,
        retransmitted_share: if members.is_empty() {
            0.0
        } else {
            resent as f64 / members.len() as f64
        },
        mode,
    }
}

pub(super) fn per_interval(
    client: &[Exchange],
    pairs: &[MatchedPair],
    interval_ns: i64,
) -> Vec<IntervalComparison> {
    let mut rows: BTreeMap<i64, Vec<&MatchedPair>> = BTreeMap::new();
    for p in pairs {
        if p.client_rt_ns.is_some() && p.server_rt_ns.is_some() {
            let start = client[p.client]
                .request
                .ts_ns
                .div_euclid(interval_ns)
                .saturating_mul(interval_ns);
            rows.entry(start).or_default().push(p);
        }
    }
    rows.into_iter()
        .map(|(start, members)| {
            let mut c: Vec<i64> = members
                .iter()
                .filter_map(|p| p.client_rt_ns)
                .map(|v| v as i64)
                .collect();
            let mut s: Vec<i64> = members
                .iter()
                .filter_map(|p| p.server_rt_ns)
                .map(|v| v as i64)
                .collect();
            let mut d: Vec<i64> = members.iter().filter_map(|p| p.path_ns()).collect();
            let (c, s, d) = (
                exact_summary_us(&mut c),
                exact_summary_us(&mut s),
                exact_summary_us(&mut d),
            );
            IntervalComparison {
                start: start as f64 / 1e9,
                count: members.len() as u64,
                client_rt_mean_us: c.mean,
                client_rt_p95_us: c.p95,
                server_rt_mean_us: s.mean,
                server_rt_p95_us: s.p95,
                path_mean_us: d.mean,
                path_share: share(members.into_iter()),
            }
        })
        .collect()
}

#[allow(clippy::too_many_arguments)]
pub(super) fn notables(
    client: &[Exchange],
    server: &[Exchange],
    pairs: &[MatchedPair],
    matches: &Matches,
    pairing: &Pairing,
    clock: &Clock,
    client_span: CaptureSpan,
    server_span: CaptureSpan,
    typical_response_path_us: f64,
    limit: usize,
) -> (Vec<Notable>, NotableCounts) {
    let late_ns =
        COMPARE_LATE_MIN_NS.max((typical_response_path_us * 1e3 * COMPARE_LATE_FACTOR) as i64);
    let us = |ns: u64| ns as f64 / 1e3;
    let mut found: Vec<(i64, u64, Notable)> = Vec::new();
    let mut note =
        |c: &Exchange, s: Option<&Exchange>, kind, detail: String, p: Option<&MatchedPair>| {
            found.push((
                c.request.ts_ns,
                c.request.frame,
                Notable {
                    kind,
                    at: c.request.ts_ns as f64 / 1e9,
                    command: c.command.name(),
                    statement: c.statement.as_deref().map(str::to_string),
                    client_capture: CapturedAs::of(c),
                    server_capture: s.map(CapturedAs::of),
                    client_rt_us: p.and_then(|p| p.client_rt_ns).map(us),
                    server_rt_us: p.and_then(|p| p.server_rt_ns).map(us),
                    detail,
                },
            ));
        };
    for p in pairs {
        let (c, s) = (&client[p.client], &server[p.server]);
        let server_sent = s.last_response.zip(p.server_rt_ns);
        match (server_sent, c.last_response) {
            (Some((sent, server_rt)), None) => {
                let at_client = clock.to_client(sent.ts_ns);
                if at_client <= client_span.last_ns {
                    let detail = format!(
                        "the server answered in {} (server frame {}); the client capture, running {} longer, never saw the response complete",
                        duration_us(us(server_rt)),
                        sent.frame,
                        duration_us(us(client_span.last_ns.saturating_sub(at_client).max(0) as u64)),
                    );
                    note(c, Some(s), NotableKind::ResponseNeverSeen, detail, Some(p));
                }
            }
            (Some((sent, server_rt)), Some(got)) => {
                let retransmitted_at = match (s.response_retransmitted, c.response_retransmitted) {
                    (true, true) => Some("both captures"),
                    (true, false) => Some("the server"),
                    (false, true) => Some("the client"),
                    (false, false) => None,
                };
                let way_back = p
                    .response_path_ns
                    .map(|ns| {
                        format!(
                            "; its last byte reached the client {} after the server sent it",
                            duration_us(ns as f64 / 1e3)
                        )
                    })
                    .unwrap_or_default();
                let client_rt = p
                    .client_rt_ns
                    .map(|ns| duration_us(us(ns)))
                    .unwrap_or_default();
                if let Some(where_) = retransmitted_at {
                    let detail = format!(
                        "the server answered in {} (server frame {}), the client waited {} (client frame {}): the response was retransmitted (seen at {}){}",
                        duration_us(us(server_rt)),
                        sent.frame,
                        client_rt,
                        got.frame,
                        where_,
                        way_back,
                    );
                    note(
                        c,
                        Some(s),
                        NotableKind::ResponseRetransmitted,
                        detail,
                        Some(p),
                    );
                } else if p.response_path_ns.is_some_and(|ns| ns >= late_ns) {
                    let detail = format!(
                        "the server answered in {} (server frame {}), the client waited {} (client frame {}){}, with no retransmission seen (responses usually took {})",
                        duration_us(us(server_rt)),
                        sent.frame,
                        client_rt,
                        got.frame,
                        way_back,
                        duration_us(typical_response_path_us),
                    );
                    note(c, Some(s), NotableKind::ResponseLate, detail, Some(p));
                }
            }
            _ => {}
        }
    }
    for (i, c) in client.iter().enumerate() {
        if matches.client_matched(i) || !pairing.of_client.contains_key(&connection_of(c)) {
            continue;
        }
        let at_server = clock.to_server(c.request.ts_ns);
        if server_span.contains(at_server) {
            let (sc, ss, _) = pairing.of_client[&connection_of(c)];
            let detail = format!(
                "the client sent it (client frame {}); the server capture follows the connection as {sc} -> {ss} and has no such request",
                c.request.frame
            );
            note(c, None, NotableKind::RequestNeverSeen, detail, None);
        }
    }
    found.sort_by_key(|a| (a.0, a.1, a.2.kind));
    let mut counts = NotableCounts::default();
    for (_, _, n) in &found {
        counts.add(n.kind);
    }
    let list = found.into_iter().take(limit).map(|(_, _, n)| n).collect();
    (list, counts)
}

/// Where the time went, in words.
pub(super) fn verdict(cmp: &Comparison) -> String {
    if cmp.matched == 0 {
        return format!(
            "No request was found in both captures ({} in the client capture, {} in the server capture): \
             they do not hold the same traffic, or do not overlap in time.",
            cmp.unmatched_client, cmp.unmatched_server
        );
    }
    if cmp.client_rt_us.count == 0 {
        return format!(
            "{} requests were found in both captures, but none was answered at both points.",
            cmp.matched
        );
    }
    let share = cmp.path_share.unwrap_or(0.0);
    let mut out = who_took_the_time(cmp, share);
    if let Some(way) = which_way(cmp, share) {
        out += &way;
    }
    out.push('.');
    if let Some(humps) = humps_at_both_points(cmp) {
        out += &humps;
    }
    if let Some(notable) = notable(cmp) {
        out += &notable;
    }
    if !cmp.clock.consistent {
        out += " The clocks could not be aligned consistently (a clock stepped, or requests were matched \
                wrongly): the request and response paths are unreliable.";
    }
    out
}

/// Who took the time, the path or the server or both, by the path's `share` of the client's time, with
/// both points' response times and what the path added.
fn who_took_the_time(cmp: &Comparison, share: f64) -> String {
    let (c, s, d) = (&cmp.client_rt_us, &cmp.server_rt_us, &cmp.path_us);
    if share >= COMPARE_PATH_SHARE {
        format!(
            "The path took the time: the server answered in {} (p50) while the client waited {} (p50); \
             on average the path added {} of the client's {} ({})",
            duration_us(s.p50),
            duration_us(c.p50),
            duration_us(d.mean),
            duration_us(c.mean),
            percent(share)
        )
    } else if share <= 1.0 - COMPARE_PATH_SHARE {
        format!(
            "The server took the time: it answered in {} (p50, mean {}) and the client waited {} (p50, mean {}); \
             the path added {} on average ({} of the client's time)",
            duration_us(s.p50),
            duration_us(s.mean),
            duration_us(c.p50),
            duration_us(c.mean),
            duration_us(d.mean),
            percent(share)
        )
    } else {
        format!(
            "The server and the path shared the time: the server answered in {} (p50, mean {}) and the client \
             waited {} (p50, mean {}); the path added {} on average ({} of the client's time)",
            duration_us(s.p50),
            duration_us(s.mean),
            duration_us(c.p50),
            duration_us(c.mean),
            duration_us(d.mean),
            percent(share)
        )
    }
}

/// Which way the path's time went, client->server or server->client, when the path took a part of it and
/// both ways were measured; said with how well the clocks are aligned, on which the split rests.
fn which_way(cmp: &Comparison, share: f64) -> Option<String> {
    let (rq, rs) = (&cmp.request_path_us, &cmp.response_path_us);
    if share <= 1.0 - COMPARE_PATH_SHARE || rq.count == 0 || rs.count == 0 {
        return None;
    }
    let (way, more, less) = if rs.mean >= rq.mean {
        ("server->client", rs, rq)
    } else {
        ("client->server", rq, rs)
    };
    // The split between the ways rests on the clock alignment: say how well it is known, and when the
    // smaller way is within it (a path slower one way than the other puts the estimate off by up to
    // its uncertainty).
    let uncertainty = cmp
        .clock
        .uncertainty_us
        .filter(|_| cmp.clock.basis == ClockBasis::Estimated);
    Some(match uncertainty {
        Some(u) if less.mean <= u => format!(
            ", mostly on the {way} side ({} on average; the other way's {} is within the clocks' alignment, ±{})",
            duration_us(more.mean),
            duration_us(less.mean),
            duration_us(u)
        ),
        Some(u) => format!(
            ", mostly on the {way} side ({} on average, the other way {}; the clocks are aligned to ±{})",
            duration_us(more.mean),
            duration_us(less.mean),
            duration_us(u)
        ),
        None => format!(
            ", mostly on the {way} side ({} on average, the other way {})",
            duration_us(more.mean),
            duration_us(less.mean)
        ),
    })
}

/// Each hump of the client's response times with the server's part of the same transactions, when either
/// point shows more than one: a hump the server also shows keeps its place, one the path made has a small
/// server part.
fn humps_at_both_points(cmp: &Comparison) -> Option<String> {
    let humps = &cmp.humps;
    if humps.client.len() <= 1 && humps.server.len() <= 1 {
        return None;
    }
    let described: Vec<String> = humps
        .client
        .iter()
        .map(|h| {
            let resent = if h.retransmitted_share >= 0.5 {
                format!(
                    "; {:.0}% of its responses retransmitted",
                    h.retransmitted_share * 100.0
                )
            } else {
                String::new()
            };
            format!(
                "~{} ({:.0}%; the server's part {}{resent})",
                duration_us(h.mode.center_us),
                h.mode.share * 100.0,
                duration_us(h.server_rt_p50_us),
            )
        })
        .collect();
    let server: Vec<String> = humps
        .server
        .iter()
        .map(|m| format!("~{} ({:.0}%)", duration_us(m.center_us), m.share * 100.0))
        .collect();
    Some(format!(
        " Client RT humps: {}; server RT humps: {}.",
        described.join(", "),
        server.join(", ")
    ))
}

/// The notable transactions by kind, when there are any: responses resent or late on the way to the
/// client, or never seen by it, requests the server never saw.
fn notable(cmp: &Comparison) -> Option<String> {
    let n = &cmp.notable_counts;
    let mut named = Vec::new();
    if n.response_retransmitted > 0 {
        named.push(format!(
            "{} retransmitted on the way to the client",
            crate::units::counted(n.response_retransmitted, "response", "responses")
        ));
    }
    if n.response_late > 0 {
        named.push(format!(
            "{} late without a retransmission seen",
            crate::units::counted(n.response_late, "response", "responses")
        ));
    }
    if n.response_never_seen > 0 {
        named.push(format!(
            "{} the client never saw",
            crate::units::counted(n.response_never_seen, "response", "responses")
        ));
    }
    if n.request_never_seen > 0 {
        named.push(format!(
            "{} the server never saw",
            crate::units::counted(n.request_never_seen, "request", "requests")
        ));
    }
    (!named.is_empty()).then(|| format!(" Notable: {}.", named.join("; ")))
}
