//! `pcapsleuth report`: every analysis at once, turned into ranked findings with their evidence.

use serde::Serialize;

use crate::closes::first_reset;
use crate::closes::{CloseReport, FirstReset};
use crate::engine::Run;
use crate::everything::Statistics;
use crate::finding::{connection_namer, Finding, FindingKind, NamedConnection, Scope, Span};
use crate::hump_findings::HumpFinding;
use crate::mysql::{ErrorDetail, Incident, MysqlReport, UnansweredRequest};
use crate::rate::RateReport;
use crate::reasons::{role_name, stall_start};
use crate::replication::ReplicationStream;
use crate::rt::RtReport;
use crate::thresholds::{
    ACK_STALL_NS, ANNOTATED_ERROR_CODES, CLOSE_GROUP_GAP_S, GROUP_LISTED, UNANSWERED_FAR_FACTOR,
    UNANSWERED_MIN_WAIT_S,
};
use crate::units::{self, direction_words, duration_us, Measure};
use std::collections::{BTreeMap, BTreeSet, HashMap};

use pcapsleuth_flow::{Connection, ConnectionTable, Endpoint, Role};

/// Everything `pcapsleuth report` prints.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FullReport {
    /// What the analyses found, ranked by `severity` (1, look first, comes first).
    pub findings: Vec<Finding>,
    /// When the capture happened: its body, and the timestamps left out of time series.
    pub timeline: crate::timeline::Timeline,
    /// The `first-reset` answer (at most 20 closes listed).
    pub first_reset: crate::closes::FirstReset,
    /// The `mysql` report.
    pub mysql: MysqlReport,
    /// The `rt` report: response-time distributions and their modes.
    pub rt: RtReport,
    /// The `rate` report: packet and bit rates per interval, and ceilings.
    pub rate: RateReport,
    /// The `load` report (for the HTML page; `load --json` has it, `report --json` leaves it out).
    #[serde(skip)]
    pub load: crate::load::LoadReport,
}

/// Every analysis' report on `a`, and what they found, ranked.
pub fn full_report(a: &Run<Statistics>) -> FullReport {
    let fr = first_reset(a, 20);
    let stats = &a.output;
    let mysql = crate::closes::mysql_report(a, &stats.mysql);
    let rt = stats.rt.report_with_path(&stats.mysql, Some(&stats.rates));
    let rate = stats.rates.report();
    let mut f = Vec::new();
    let first_s = a.capture.first_ts.map_or(0.0, |t| t.0 as f64 / 1e9);
    let mut groups = incident_groups(&mysql.incidents, first_s);
    if let Some(c) = &fr.first_abnormal {
        f.push(first_abnormal_close(c, &mut groups));
    }
    f.extend(fr.attempt_findings.iter().cloned());
    f.extend(groups.into_iter().map(IncidentGroup::finding));
    f.extend(unanswered_at_end(&mysql));
    f.extend(ceilings(&rate));
    // Slow humps that errors make, or whose cause is known: one finding each, with those errors.
    let humps =
        crate::hump_findings::hump_findings(&rt, mysql.queries, (first_s > 0.0).then_some(first_s));
    let in_humps: BTreeSet<u16> = humps.iter().flat_map(|h| h.codes.iter().copied()).collect();
    let hump_centers: Vec<f64> = humps.iter().map(|h| h.center_us).collect();
    f.extend(scoped_humps(humps, a, &mysql));
    f.extend(errors_besides_humps(&mysql, &in_humps, hump_centers.len()));
    f.extend(rt_multimodal(&rt, &hump_centers));
    f.extend(semi_sync_finding(&mysql));
    f.extend(crate::load::idle_in_transaction_finding(
        &stats.load,
        handshake_rtt_us(&a.connections),
    ));
    f.extend(retransmissions(&a.connections));
    f.extend(capture_damage(a));
    stall_notes(&mut f, &a.connections);
    hand_off(&mut f, a, &fr, &mysql, &rate);
    f.sort_by_key(|x| x.severity);
    FullReport {
        findings: f,
        timeline: a.capture.timeline.clone(),
        first_reset: fr,
        mysql,
        rt,
        rate,
        load: stats.load.clone(),
    }
}

/// The first abnormal close, heading the group of closes like it (it is one of them when it cut a request
/// off, and that group is taken out of `groups`): said once, with how many more there were.
fn first_abnormal_close(c: &CloseReport, groups: &mut Vec<IncidentGroup<'_>>) -> Finding {
    let head = groups
        .iter()
        .position(|g| g.members.iter().any(|m| m.frames.last() == Some(&c.frame)));
    let group = head.map(|i| groups.remove(i));
    let mut summary = format!(
        "first abnormal close at frame {} ({} into the capture): {}",
        c.frame,
        units::seconds(c.rel_time),
        c.reason
    );
    let mut evidence = vec![format!("client {} server {}", c.client, c.server)];
    let mut members = Vec::new();
    let mut span = None;
    if let Some(g) = group {
        // The head is described above: the others, in words and the first few one by one.
        let others = &g.incidents[1..];
        if !others.is_empty() {
            summary.push_str(&format!(
                "; and {} like it by {} ({})",
                units::counted(others.len() as u64, "more", "more"),
                units::seconds(g.span.last_s),
                what(others)
            ));
            span = Some(g.span);
            evidence.extend(listed(others));
        }
        members = g.members;
    }
    Finding {
        severity: 1,
        kind: FindingKind::FirstAbnormalClose,
        cause: c.cause.clone(),
        summary,
        evidence,
        // The close first (Wireshark's frame to go to), then its members' request and close frames.
        frames: std::iter::once(c.frame)
            .chain(members.iter().flat_map(|m| m.frames.iter().copied()))
            .fold(Vec::new(), |mut v, x| {
                if !v.contains(&x) {
                    v.push(x);
                }
                v
            }),
        count: members.len().max(1) as u64,
        span,
        members,
        ..Finding::blank()
    }
}

/// Requests still waiting at the end, when they waited far longer than a typical answered request.
fn unanswered_at_end(mysql: &MysqlReport) -> Option<Finding> {
    let far = (UNANSWERED_FAR_FACTOR * mysql.rt_us.p99 / 1e6).max(UNANSWERED_MIN_WAIT_S);
    let stuck: Vec<&UnansweredRequest> = mysql
        .unanswered
        .iter()
        .filter(|u| u.waited_s >= far)
        .collect();
    let longest = stuck
        .iter()
        .max_by(|a, b| a.waited_s.total_cmp(&b.waited_s))?;
    let typical = if mysql.rt_us.count > 0 {
        format!(
            "answered requests took at most {} (p99)",
            duration_us(mysql.rt_us.p99)
        )
    } else {
        "no request was answered".into()
    };
    Some(Finding {
        severity: 1,
        kind: FindingKind::UnansweredAtEnd,
        summary: format!(
            "{} {} unanswered when the capture ended, the longest for {} (`{}`); {typical}",
            stuck.len(),
            if stuck.len() == 1 {
                "request was"
            } else {
                "requests were"
            },
            units::seconds(longest.waited_s),
            longest
                .query
                .as_deref()
                .unwrap_or(&longest.command)
                .chars()
                .take(80)
                .collect::<String>()
        ),
        evidence: stuck
            .iter()
            .take(5)
            .map(|u| {
                format!(
                    "request frame {}, {} -> {}, waited {}",
                    u.request_frame,
                    u.client,
                    u.server,
                    units::seconds(u.waited_s)
                )
            })
            .collect(),
        frames: stuck.iter().map(|u| u.request_frame).collect(),
        ..Finding::blank()
    })
}

/// A rate pinned at a ceiling while the other rate was not: a packet-rate or a bit-rate cap.
fn ceilings(rate: &RateReport) -> impl Iterator<Item = Finding> + '_ {
    rate.ceilings.iter().map(|c| {
        let other = if c.kind == Measure::Packets {
            units::rate(Measure::Bits, c.other_value)
        } else {
            units::rate(Measure::Packets, c.other_value)
        };
        Finding {
            severity: 1,
            kind: FindingKind::Ceiling,
            summary: format!(
                "{} {} pinned at {} for {:.1} s while only {} ({:.0}-byte packets): a {} cap",
                c.server.as_deref().unwrap_or("all traffic"),
                direction_words(c.direction),
                units::rate(c.kind, c.value),
                c.end - c.start,
                other,
                c.mean_packet_bytes,
                if c.kind == Measure::Packets {
                    "packet-rate"
                } else {
                    "bit-rate"
                }
            ),
            evidence: c.evidence.clone(),
            frames: vec![],
            ..Finding::blank()
        }
    })
}

/// The slow humps' findings, each scoped to its connections (when all are known and few) or its server,
/// with the frames of the errors that make it noted.
fn scoped_humps<'a>(
    humps: Vec<HumpFinding>,
    a: &'a Run<Statistics>,
    mysql: &'a MysqlReport,
) -> impl Iterator<Item = Finding> + 'a {
    let named = connection_namer(&a.connections);
    humps.into_iter().map(move |h| {
        let mut x = h.finding;
        x.frame_notes = error_notes(
            &mysql
                .error_details
                .iter()
                .filter(|e| h.codes.contains(&e.code))
                .cloned()
                .collect::<Vec<_>>(),
        );
        let conns: Vec<NamedConnection> = a
            .connections
            .iter()
            .filter(|c| h.connections.contains(&c.first.frame))
            .map(&named)
            .collect();
        x.scope = match (conns.is_empty(), h.server) {
            (false, _) => Scope::Connections(conns),
            (true, Some(s)) => Scope::Endpoint(s),
            (true, None) => Scope::Capture,
        };
        x
    })
}

/// The MySQL error responses besides those of the slow humps' findings (`in_humps`, the codes of
/// `slow_humps` humps), with the most frequent error and how fast errors were answered.
fn errors_besides_humps(
    mysql: &MysqlReport,
    in_humps: &BTreeSet<u16>,
    slow_humps: usize,
) -> Option<Finding> {
    let other_errors: Vec<&ErrorDetail> = mysql
        .error_details
        .iter()
        .filter(|e| !in_humps.contains(&e.code))
        .collect();
    let errors: u64 = other_errors.iter().map(|e| e.count).sum();
    if errors == 0 {
        return None;
    }
    let share = errors as f64 / mysql.queries.max(1) as f64;
    let top = &other_errors.iter().max_by_key(|e| e.count);
    // The errors' mean response time: of them all, or of those not in a hump's finding.
    let error_mean = if in_humps.is_empty() {
        mysql.rt_error_us.mean
    } else {
        let (n, sum) = other_errors.iter().fold((0u64, 0.0), |(n, sum), e| {
            (n + e.rt_us.count, sum + e.rt_us.mean * e.rt_us.count as f64)
        });
        sum / n.max(1) as f64
    };
    let besides = if in_humps.is_empty() {
        String::new()
    } else {
        format!(
            " besides those of the slow hump{} ({})",
            if slow_humps == 1 { "" } else { "s" },
            in_humps
                .iter()
                .map(|c| format!("ERR {c}"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    Some(Finding {
        severity: if share >= 0.01 { 1 } else { 3 },
        kind: FindingKind::Errors,
        summary: format!(
            "{} ({:.1}% of {}){besides}; errors answered in {} on average vs {} for successes",
            units::counted(errors, "MySQL error response", "MySQL error responses"),
            100.0 * share,
            units::counted(mysql.queries, "request", "requests"),
            duration_us(error_mean),
            duration_us(mysql.rt_ok_us.mean)
        ),
        evidence: top
            .iter()
            .map(|e| {
                format!(
                    "ERR {} x {}: {}",
                    e.code,
                    e.count,
                    e.messages.first().cloned().unwrap_or_default()
                )
            })
            .collect(),
        frames: vec![],
        frame_notes: error_notes(&other_errors.into_iter().cloned().collect::<Vec<_>>()),
        ..Finding::blank()
    })
}

/// Response times in several humps: each with its share, and what the slow ones without a finding of
/// their own (`hump_centers`) have in common.
fn rt_multimodal(rt: &RtReport, hump_centers: &[f64]) -> Option<Finding> {
    if !rt.multimodal {
        return None;
    }
    let humps: Vec<String> = rt
        .modes
        .iter()
        .map(|m| format!("{:.1}% at ~{}", 100.0 * m.share, duration_us(m.center_us)))
        .collect();
    let mut evidence = Vec::new();
    for s in &rt.slow_modes {
        if hump_centers.contains(&s.center_us) {
            evidence.push(format!(
                "hump at ~{}: see its own finding ({})",
                duration_us(s.center_us),
                FindingKind::SlowHump
            ));
            continue;
        }
        let mut traits = vec![format!(
            "{:.0}% retransmitted",
            100.0 * s.retransmitted_share
        )];
        if s.error_share > 0.0 {
            traits.push(format!("{:.0}% errors", 100.0 * s.error_share));
        }
        if let Some((fp, share)) = s.statements.first() {
            traits.push(format!(
                "{:.0}% are `{}`",
                100.0 * share,
                fp.chars().take(80).collect::<String>()
            ));
        }
        if !s.time_windows.is_empty() {
            traits.push(format!(
                "concentrated in {} interval(s)",
                s.time_windows.len()
            ));
        }
        evidence.push(format!(
            "hump at ~{}: {}",
            duration_us(s.center_us),
            traits.join(", ")
        ));
    }
    Some(Finding {
        severity: 2,
        kind: FindingKind::RtMultimodal,
        summary: format!(
            "{} response times are multimodal: {}",
            rt.source.name(),
            humps.join(", ")
        ),
        evidence,
        frames: vec![],
        ..Finding::blank()
    })
}

/// The median of the connections' handshake round trips, µs: the path's round trip, when any was seen.
fn handshake_rtt_us(connections: &ConnectionTable) -> Option<f64> {
    let handshakes = {
        let mut h: crate::histogram::Histogram = Default::default();
        for c in connections {
            if let Some(rtt) = c.handshake_rtt_ns.filter(|&r| r >= 0) {
                h.add(rtt as u64);
            }
        }
        h
    };
    (handshakes.count() > 0).then(|| handshakes.quantile_ns(0.5) as f64 / 1e3)
}

/// TCP retransmissions, when they are at least 1% of the packets.
fn retransmissions(connections: &ConnectionTable) -> Option<Finding> {
    let (pk, re) = connections.iter().fold((0u64, 0u64), |(p, r), c| {
        (
            p + c.to_server.packets + c.to_client.packets,
            r + c.to_server.retransmissions + c.to_client.retransmissions,
        )
    });
    if pk == 0 || (re as f64) < 0.01 * pk as f64 {
        return None;
    }
    Some(Finding {
        severity: 2,
        kind: FindingKind::Retransmissions,
        summary: format!(
            "{re} retransmitted segments ({:.1}% of {pk} TCP packets)",
            100.0 * re as f64 / pk as f64
        ),
        evidence: vec![],
        frames: vec![],
        ..Finding::blank()
    })
}

/// The capture's own damage: timestamps far outside the rest or a clock that stepped back, and the first
/// few damaged records.
fn capture_damage(a: &Run<Statistics>) -> Vec<Finding> {
    let mut f = Vec::new();
    let time = &a.capture.timeline;
    if time.wild_packets > 0 || time.clock_steps_back > 0 {
        let mut frames: Vec<u64> = time.wild.iter().map(|w| w.first_frame).collect();
        frames.extend(time.steps_back.iter().map(|s| s.frame));
        f.push(Finding {
            severity: 3,
            kind: FindingKind::CaptureDamage,
            summary: match (time.wild_packets, time.clock_steps_back) {
                (0, n) => format!("the capture's clock stepped back {n} times"),
                (n, _) => format!(
                    "{} with a timestamp far outside the rest of the capture: left out of time series",
                    crate::timeline::packets(n)
                ),
            },
            evidence: time.damage_lines(),
            frames,
            ..Finding::blank()
        });
    }
    for d in a.capture.damage.iter().take(5) {
        f.push(Finding {
            severity: if d.is_fatal() { 2 } else { 4 },
            kind: FindingKind::CaptureDamage,
            summary: d.to_string(),
            evidence: vec![],
            frames: vec![],
            ..Finding::blank()
        });
    }
    f
}

/// `report`'s finding when semi-sync ACKs stalled (any over [`ACK_STALL_NS`]): how many, the worst, the
/// frames, and how much of the COMMITs' response time the ACK wait is (in a capture at the primary,
/// COMMIT time minus ACK latency is what the server itself spent). A stream the primary closed while an
/// ACK was awaited makes it look-first.
fn semi_sync_finding(m: &MysqlReport) -> Option<Finding> {
    let semi: Vec<&ReplicationStream> = m
        .replication
        .iter()
        .filter(|r| r.ack_latency_us.count > 0)
        .collect();
    let stalls: u64 = semi.iter().map(|r| r.ack_stalls).sum();
    if stalls == 0 {
        return None;
    }
    let count: u64 = semi.iter().map(|r| r.ack_latency_us.count).sum();
    let total_us: f64 = semi
        .iter()
        .map(|r| r.ack_latency_us.mean * r.ack_latency_us.count as f64)
        .sum();
    let ack_mean = total_us / count as f64;
    let worst = semi
        .iter()
        .map(|r| r.ack_latency_us.max)
        .fold(0.0, f64::max);
    let gave_up = semi.iter().any(|r| r.end.abnormal);
    let mut summary = format!(
        "semi-sync ACKs stalled: {stalls} of {count} over {} (the worst {}), on {} replication stream(s); ACK latency mean {}",
        duration_us(ACK_STALL_NS as f64 / 1e3),
        duration_us(worst),
        semi.len(),
        duration_us(ack_mean)
    );
    // Medians: one ACK that came after the primary had given up (a timeout) must not stand for them all.
    if let Some(commit) = m.statements.iter().find(|s| s.fingerprint == "commit") {
        let ack_p50 = weighted_median(&semi);
        summary.push_str(&format!(
            "; the median ACK ({}) is {:.0}% of the median COMMIT ({}, {} COMMITs): the server's own part \
             of a commit is about {}",
            duration_us(ack_p50),
            100.0 * (ack_p50 / commit.rt_us.p50).min(1.0),
            duration_us(commit.rt_us.p50),
            commit.count,
            duration_us((commit.rt_us.p50 - ack_p50).max(0.0))
        ));
    }
    let mut evidence = Vec::new();
    let mut frames = Vec::new();
    for r in &semi {
        evidence.push(format!(
            "replica {} -> primary {}: {} ACKs, p50 {} p99 {} max {}, {} over {}; end: {}",
            r.client,
            r.server,
            r.ack_latency_us.count,
            duration_us(r.ack_latency_us.p50),
            duration_us(r.ack_latency_us.p99),
            duration_us(r.ack_latency_us.max),
            r.ack_stalls,
            duration_us(ACK_STALL_NS as f64 / 1e3),
            r.end.reason
        ));
        for st in &r.ack_stall_examples {
            evidence.push(format!(
                "  ACK for position {} took {}: event frame {}, ACK frame {}",
                st.position,
                duration_us(st.latency_us),
                st.event_frame,
                st.ack_frame
            ));
            frames.extend([st.event_frame, st.ack_frame]);
        }
    }
    Some(Finding {
        severity: if gave_up { 1 } else { 2 },
        kind: FindingKind::SemiSyncAckStalls,
        summary,
        evidence,
        frames,
        ..Finding::blank()
    })
}

/// The finding of one close that cut MySQL work off, as it reads alone.
fn incident_finding(i: &Incident) -> Finding {
    Finding {
        severity: if i.by == Role::Server { 1 } else { 2 },
        kind: FindingKind::MidResponseClose,
        summary: format!(
            "{} {} {} of `{}` ({} rows, {} delivered)",
            role_name(i.by),
            i.flag.name(),
            cut_words(i),
            i.query.as_deref().unwrap_or(&i.command),
            units::count(i.rows),
            units::bytes(i.bytes)
        ),
        evidence: std::iter::once(format!(
            "request frame {}, close frame {}, {} -> {}",
            i.request_frame, i.frame, i.client, i.server
        ))
        .chain(i.preceded_by.iter().cloned())
        .collect(),
        frames: vec![i.request_frame, i.frame],
        cause: i.cause.clone(),
        ..Finding::blank()
    }
}

/// The cause of a group's closes, when they all have one of the same kind and setting: the first's (each
/// member has its own).
fn shared_cause(members: &[Finding]) -> Option<crate::cause::Cause> {
    let first = members.first()?.cause.as_ref()?;
    members
        .iter()
        .all(|m| {
            m.cause
                .as_ref()
                .is_some_and(|c| c.kind == first.kind && c.setting == first.setting)
        })
        .then(|| first.clone())
}

/// What a close cut off, in words: "mid resultset", "mid response", "unanswered".
fn cut_words(i: &Incident) -> String {
    i.kind
        .name()
        .split('_')
        .skip(2)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Closes that cut MySQL work off, of one kind, by one side, on one server, each within
/// [`CLOSE_GROUP_GAP_S`] of the previous: one finding.
struct IncidentGroup<'a> {
    incidents: Vec<&'a Incident>,
    members: Vec<Finding>,
    span: Span,
}

/// Who did what to which server, for closes of one group: "client RST mid resultset on 10.77.0.1:3306",
/// "client FINs unanswered on ...", "client closes (2 FIN, 1 RST) mid resultset on ...".
fn what(incidents: &[&Incident]) -> String {
    let Some(first) = incidents.first() else {
        return String::new();
    };
    let rsts = incidents
        .iter()
        .filter(|i| i.flag == pcapsleuth_flow::CloseFlag::Rst)
        .count();
    let fins = incidents.len() - rsts;
    let flags = match (fins, rsts) {
        (1, 0) => "FIN".to_string(),
        (0, 1) => "RST".to_string(),
        (_, 0) => "FINs".to_string(),
        (0, _) => "RSTs".to_string(),
        (f, r) => format!("closes ({f} FIN, {r} RST)"),
    };
    format!(
        "{} {flags} {} on {}",
        role_name(first.by),
        cut_words(first),
        first.server
    )
}

/// The first few closes of a group, one line each, and the frames of the rest.
fn listed(incidents: &[&Incident]) -> Vec<String> {
    let mut lines: Vec<String> = incidents
        .iter()
        .take(GROUP_LISTED)
        .map(|i| {
            format!(
                "close frame {} ({}), {} -> {}: `{}` requested at frame {}, {} rows / {} delivered",
                i.frame,
                i.flag.name(),
                i.client,
                i.server,
                i.query.as_deref().unwrap_or(&i.command),
                i.request_frame,
                units::count(i.rows),
                units::bytes(i.bytes)
            )
        })
        .collect();
    let rest = &incidents[incidents.len().min(GROUP_LISTED)..];
    if !rest.is_empty() {
        let frames: Vec<String> = rest.iter().take(10).map(|i| i.frame.to_string()).collect();
        lines.push(format!(
            "and {} in close frames {}{} (each in the JSON's members)",
            units::counted(rest.len() as u64, "more", "more"),
            frames.join(", "),
            if rest.len() > 10 { ", …" } else { "" }
        ));
    }
    lines
}

impl IncidentGroup<'_> {
    /// The group as one finding (a group of one: its member's finding).
    fn finding(self) -> Finding {
        if self.members.len() == 1 {
            return self.members.into_iter().next().expect("a group of one");
        }
        let first = self.incidents[0];
        let mut statements: Vec<&str> = self
            .incidents
            .iter()
            .map(|i| i.query.as_deref().unwrap_or(&i.command))
            .collect();
        statements.sort_unstable();
        statements.dedup();
        let of = match statements.len() {
            1 => format!("`{}`", statements[0]),
            n => format!(
                "`{}` and {}",
                first.query.as_deref().unwrap_or(&first.command),
                units::counted(n as u64 - 1, "other statement", "other statements")
            ),
        };
        Finding {
            severity: self.members.iter().map(|m| m.severity).min().unwrap_or(2),
            kind: FindingKind::MidResponseClose,
            summary: format!(
                "{} {} from {} to {} (within {}), of {of}",
                self.incidents.len(),
                what(&self.incidents),
                units::seconds(self.span.first_s),
                units::seconds(self.span.last_s),
                units::seconds(self.span.last_s - self.span.first_s)
            ),
            evidence: listed(&self.incidents),
            frames: self
                .members
                .iter()
                .flat_map(|m| m.frames.iter().copied())
                .collect::<BTreeSet<u64>>()
                .into_iter()
                .collect(),
            count: self.members.len() as u64,
            span: Some(self.span),
            cause: shared_cause(&self.members),
            members: self.members,
            ..Finding::blank()
        }
    }
}

/// The closes that cut MySQL work off, in groups ([`IncidentGroup`]), in the order of their first
/// members; `first_s` is the capture's first packet (seconds since the epoch). Only the incidents (sorted
/// by frame when the run finished) decide, so the groups are the same however the capture was split.
fn incident_groups(incidents: &[Incident], first_s: f64) -> Vec<IncidentGroup<'_>> {
    let mut groups: Vec<IncidentGroup> = Vec::new();
    for i in incidents {
        // To the microsecond, as frame times are.
        let at = ((i.request_time + i.waited_s - first_s) * 1e6).round() / 1e6;
        let like = groups.iter_mut().rev().find(|g| {
            let l = g.incidents[g.incidents.len() - 1];
            l.by == i.by
                && l.kind.cut == i.kind.cut
                && l.server == i.server
                && (at - g.span.last_s).abs() <= CLOSE_GROUP_GAP_S
        });
        match like {
            Some(g) => {
                g.incidents.push(i);
                g.members.push(incident_finding(i));
                g.span.last_s = g.span.last_s.max(at);
            }
            None => groups.push(IncidentGroup {
                incidents: vec![i],
                members: vec![incident_finding(i)],
                span: Span {
                    first_s: at,
                    last_s: at,
                },
            }),
        }
    }
    groups
}

/// Comments for `extract --annotate` on error responses and their requests: the examples `mysql` keeps
/// ([`crate::ERROR_EXAMPLES`] per code, the earliest) of the [`ANNOTATED_ERROR_CODES`] most frequent
/// codes, so that a storm of thousands of errors comments a few frames, not thousands.
fn error_notes(details: &[ErrorDetail]) -> BTreeMap<u64, String> {
    let mut codes: Vec<&ErrorDetail> = details.iter().collect();
    codes.sort_by(|a, b| b.count.cmp(&a.count).then(a.code.cmp(&b.code)));
    let mut notes: BTreeMap<u64, String> = BTreeMap::new();
    let mut note = |frame: u64, text: String| {
        let slot = notes.entry(frame).or_default();
        if !slot.is_empty() {
            slot.push_str("; ");
        }
        slot.push_str(&text);
    };
    for e in codes.into_iter().take(ANNOTATED_ERROR_CODES) {
        let state = if e.sql_state.is_empty() {
            String::new()
        } else {
            format!(" ({})", e.sql_state)
        };
        for x in &e.examples {
            let what = x.statement.as_deref().unwrap_or(&x.command);
            note(
                x.request_frame,
                format!(
                    "request `{what}` answered by ERR {}{state}{}; {} ERR {} in the capture",
                    e.code,
                    x.response_frame
                        .map_or_else(String::new, |f| format!(" in frame {f}")),
                    units::count(e.count),
                    e.code
                ),
            );
            if let Some(r) = x.response_frame {
                note(
                    r,
                    format!(
                        "ERR {}{state} {}, answering `{what}` of frame {}; {} ERR {} in the capture",
                        e.code,
                        x.message,
                        x.request_frame,
                        units::count(e.count),
                        e.code
                    ),
                );
            }
        }
    }
    notes
}

/// Comments for `extract --annotate` on where the stall that led to a close began (the first segment of
/// the peer's zero window, or its last data before a silence), for the closes the close findings point
/// at; each note goes to the finding that points at the close, a group's member rather than its head.
fn stall_notes(f: &mut [Finding], conns: &pcapsleuth_flow::ConnectionTable) {
    let is_close = |k: FindingKind| {
        matches!(
            k,
            FindingKind::FirstAbnormalClose | FindingKind::MidResponseClose
        )
    };
    let wanted: BTreeSet<u64> = f
        .iter()
        .filter(|x| is_close(x.kind))
        .flat_map(|x| {
            x.frames
                .iter()
                .chain(x.members.iter().flat_map(|m| &m.frames))
        })
        .copied()
        .collect();
    if wanted.is_empty() {
        return;
    }
    let starts: HashMap<u64, (u64, String)> = conns
        .iter()
        .flat_map(|c| [c.first_fin, c.first_rst])
        .flatten()
        .filter(|ev| wanted.contains(&ev.event.at.frame))
        .filter_map(|ev| Some((ev.event.at.frame, stall_start(&ev)?)))
        .collect();
    let fill = |x: &mut Finding, skip: &BTreeSet<u64>| {
        for frame in &x.frames {
            if let Some((at, note)) = starts.get(frame).filter(|_| !skip.contains(frame)) {
                x.frame_notes.insert(*at, note.clone());
            }
        }
    };
    for x in f.iter_mut().filter(|x| is_close(x.kind)) {
        let of_members: BTreeSet<u64> = x.members.iter().flat_map(|m| m.frames.clone()).collect();
        for m in &mut x.members {
            fill(m, &BTreeSet::new());
        }
        fill(x, &of_members);
    }
}

/// The streams' ACK medians, weighted by their ACK counts (one stream: its median).
fn weighted_median(streams: &[&ReplicationStream]) -> f64 {
    let mut p50s: Vec<(f64, u64)> = streams
        .iter()
        .map(|r| (r.ack_latency_us.p50, r.ack_latency_us.count))
        .collect();
    p50s.sort_by(|a, b| a.0.total_cmp(&b.0));
    let half = p50s.iter().map(|p| p.1).sum::<u64>().div_ceil(2);
    let mut seen = 0;
    for (p50, n) in p50s {
        seen += n;
        if seen >= half {
            return p50;
        }
    }
    0.0
}

/// Gives every finding its scope (the connections it names, the server endpoint or the frames it is
/// about) and, from it, its Wireshark filter and `extract` command. `f` is in the order the findings were
/// made: those of one kind in the order of what they came from (incidents, ceilings, ...).
fn hand_off(
    f: &mut [Finding],
    a: &Run<Statistics>,
    fr: &FirstReset,
    mysql: &MysqlReport,
    rate: &RateReport,
) {
    let conns = &a.connections;
    let named = connection_namer(conns);
    let on_tuple = |k: &Connection, c: Endpoint, s: Endpoint| {
        (k.client == c && k.server == s) || (k.client == s && k.server == c)
    };
    // The connection between `client` and `server` (endpoints as reports print them) holding `frame`.
    let holding = |client: &str, server: &str, frame: u64| -> Option<NamedConnection> {
        let (c, s) = (client.parse().ok()?, server.parse().ok()?);
        conns
            .iter()
            .find(|k| on_tuple(k, c, s) && (k.first.frame..=k.last.frame).contains(&frame))
            .map(&named)
    };
    let connections = |list: Vec<NamedConnection>| {
        if list.is_empty() {
            Scope::Capture
        } else {
            Scope::Connections(list)
        }
    };
    let endpoint = |e: Option<&str>| {
        e.and_then(|e| e.parse().ok())
            .map_or(Scope::Capture, Scope::Endpoint)
    };
    // The connection a close that cut MySQL work off happened on: its frames are the request's and the
    // close's.
    let incident = |m: &Finding, holding: &dyn Fn(&str, &str, u64) -> Option<NamedConnection>| {
        mysql
            .incidents
            .iter()
            .filter(|i| m.frames == [i.request_frame, i.frame])
            .filter_map(|i| holding(&i.client, &i.server, i.frame))
            .take(1)
            .collect::<Vec<_>>()
    };
    let mut ceilings = rate.ceilings.iter();
    let files: Vec<&str> = a.capture.files.iter().map(|f| f.path.as_str()).collect();
    for x in f.iter_mut() {
        x.scope = match x.kind {
            FindingKind::FirstAbnormalClose => connections(
                fr.first_abnormal
                    .iter()
                    .filter_map(|c| holding(&c.client, &c.server, c.frame))
                    .chain(x.members.iter().flat_map(|m| incident(m, &holding)))
                    .fold(Vec::new(), |mut v, c| {
                        if !v.contains(&c) {
                            v.push(c);
                        }
                        v
                    }),
            ),
            FindingKind::MidResponseClose if x.members.is_empty() => {
                connections(incident(x, &holding))
            }
            FindingKind::MidResponseClose => connections(
                x.members
                    .iter()
                    .flat_map(|m| incident(m, &holding))
                    .collect(),
            ),
            FindingKind::UnansweredAtEnd => connections(
                mysql
                    .unanswered
                    .iter()
                    .filter(|u| x.frames.contains(&u.request_frame))
                    .filter_map(|u| holding(&u.client, &u.server, u.request_frame))
                    .collect(),
            ),
            // Given theirs by `first_reset` (`FirstReset::attempt_findings`).
            FindingKind::GreetingWait
            | FindingKind::SynDrops
            | FindingKind::ConnectRefused
            | FindingKind::LateAccept => x.scope.clone(),
            FindingKind::Ceiling => endpoint(ceilings.next().and_then(|c| c.server.as_deref())),
            FindingKind::Errors => connections(
                conns
                    .iter()
                    .zip(&a.mysql_sessions)
                    .filter(|(_, m)| m.as_ref().is_some_and(|m| m.errors > 0))
                    .map(|(c, _)| named(c))
                    .collect(),
            ),
            FindingKind::SlowHump => x.scope.clone(),
            FindingKind::RtMultimodal => {
                let servers: BTreeSet<Endpoint> = conns
                    .iter()
                    .zip(&a.mysql_sessions)
                    .filter(|(_, m)| m.is_some())
                    .map(|(c, _)| c.server)
                    .collect();
                match servers.iter().next() {
                    Some(&s) if servers.len() == 1 => Scope::Endpoint(s),
                    _ => Scope::Capture,
                }
            }
            FindingKind::SemiSyncAckStalls => {
                let streams: Vec<(Endpoint, Endpoint)> = mysql
                    .replication
                    .iter()
                    .filter(|r| r.ack_latency_us.count > 0)
                    .filter_map(|r| Some((r.client.parse().ok()?, r.server.parse().ok()?)))
                    .collect();
                connections(
                    conns
                        .iter()
                        .filter(|k| streams.iter().any(|&(c, s)| on_tuple(k, c, s)))
                        .map(&named)
                        .collect(),
                )
            }
            FindingKind::IdleInTransaction => connections(
                a.output
                    .load
                    .worst_idle_in_transaction
                    .iter()
                    .take(1)
                    .filter_map(|w| holding(&w.client, &w.server, w.first_frame))
                    .collect(),
            ),
            FindingKind::Retransmissions => connections(
                conns
                    .iter()
                    .filter(|c| c.to_server.retransmissions + c.to_client.retransmissions > 0)
                    .map(&named)
                    .collect(),
            ),
            FindingKind::CaptureDamage if !x.frames.is_empty() => Scope::Frames(x.frames.clone()),
            FindingKind::CaptureDamage => Scope::Capture,
        };
        x.hand_off(&files);
        for m in &mut x.members {
            m.scope = connections(incident(m, &holding));
            m.hand_off(&files);
        }
    }
}
