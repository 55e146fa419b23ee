//! One run as the diff reads it: its statements, errors, servers, load, connections and path, taken
//! from the engine's run of [`crate::Everything`] and [`super::RunProfile`].

use pcapsleuth_flow::{ConnectionEnd, Endpoint};

use crate::closes::every_close;
use crate::connects::connect_report;
use crate::engine::Run;
use crate::everything::Statistics;
use crate::histogram::Histogram;
use crate::modes::{detect_modes, ModeAnalysis};
use crate::mysql::{ErrorDetail, RequestCounts, ServerRow};
use crate::rate::Ceiling;
use crate::thresholds::DIFF_HANDSHAKE_HALF;
use crate::unknowns::unknowns;

use super::model::{CapturePoint, ConnectionFacts, RunSummary, Throughput};
use super::profile::LoadProfile;

/// One run, ready to be compared ([`crate::diff`]): made from a run of [`crate::Everything`] and
/// [`super::RunProfile`] by [`DiffSide::new`].
#[derive(Debug, Clone)]
pub struct DiffSide {
    pub(crate) summary: RunSummary,
    pub(crate) profile: LoadProfile,
    pub(crate) statements: Vec<SideStatement>,
    /// Requests of statement groups folded past the groups kept one by one: not compared group by group.
    pub(crate) statements_folded: u64,
    pub(crate) errors: Vec<(ErrorDetail, Histogram)>,
    pub(crate) servers: Vec<(Endpoint, ServerRow, Histogram)>,
    pub(crate) modes: ModeAnalysis,
    pub(crate) connections: ConnectionFacts,
    pub(crate) handshake_rtt: Histogram,
    pub(crate) syn_to_synack: Histogram,
    pub(crate) synack_to_ack: Histogram,
    pub(crate) retransmissions: u64,
    pub(crate) zero_windows: u64,
    /// Of `zero_windows`, those the clients advertised and those the servers did.
    pub(crate) zero_windows_by: [u64; 2],
    pub(crate) packets: u64,
    pub(crate) ceilings: Vec<Ceiling>,
    pub(crate) throughput: Throughput,
    /// The load-test view: requests in flight measured, transactions.
    pub(crate) load: crate::load::LoadReport,
    /// The path over the whole run, every interval of `rate`'s path series added up (empty when the
    /// run's rates did not time the path).
    pub(crate) path: crate::path::PathCell,
    /// The exchanges of the MySQL sessions in TLS not decrypted, timed from their records (logins
    /// aside): all a run without its key log shows of its response times.
    pub(crate) tls_estimated: Histogram,
}

/// A statement group of one run.
#[derive(Debug, Clone)]
pub(crate) struct SideStatement {
    pub(crate) command: pcapsleuth_mysql::Command,
    pub(crate) fingerprint: String,
    pub(crate) requests: RequestCounts,
    pub(crate) errors: u64,
    pub(crate) error_codes: Vec<(u16, u64)>,
    pub(crate) rows: u64,
    pub(crate) request_bytes: u64,
    pub(crate) response_bytes: u64,
    pub(crate) rt: Histogram,
}

impl DiffSide {
    /// Run `run` (its connections, closes and capture facts), whose analyses found `stats` and
    /// `profile`, read from `files`.
    pub fn new<O>(
        run: &Run<O>,
        stats: &Statistics,
        profile: &LoadProfile,
        files: Vec<String>,
    ) -> DiffSide {
        let mysql = &stats.mysql;
        let mut statements: Vec<SideStatement> = mysql
            .statement_groups()
            .map(|s| SideStatement {
                command: s.command,
                fingerprint: s.fingerprint.to_string(),
                requests: s.requests,
                errors: s.errors,
                error_codes: s.error_codes.to_vec(),
                rows: s.rows,
                request_bytes: s.request_bytes,
                response_bytes: s.response_bytes,
                rt: s.rt.clone(),
            })
            .collect();
        statements.sort_by(|a, b| {
            (a.command.byte(), &a.fingerprint).cmp(&(b.command.byte(), &b.fingerprint))
        });
        let mut errors: Vec<(ErrorDetail, Histogram)> = mysql
            .error_codes()
            .map(|(_, rt, detail)| (detail, rt.clone()))
            .collect();
        errors.sort_by_key(|(d, _)| d.code);
        let servers = mysql.servers_with_rt();

        let (mut hs, mut syn_synack, mut synack_ack) =
            <(Histogram, Histogram, Histogram)>::default();
        let (mut retrans, mut zero, mut resets) = (0, [0u64; 2], 0);
        let (mut c2s, mut s2c) = ((0u64, 0u64), (0u64, 0u64));
        for c in &run.connections {
            if let Some(rtt) = c.handshake_rtt_ns.filter(|&r| r >= 0) {
                hs.add(rtt as u64);
                if let Some(connect) = c.handshake.connect_ns {
                    syn_synack.add(connect);
                    synack_ack.add((rtt as u64).saturating_sub(connect));
                }
            }
            retrans += c.to_server.retransmissions + c.to_client.retransmissions;
            // A segment towards the server advertises the client's receive window.
            zero[0] += c.to_server.zero_windows;
            zero[1] += c.to_client.zero_windows;
            resets += u64::from(matches!(c.end, ConnectionEnd::Reset(_)));
            c2s = (c2s.0 + c.to_server.packets, c2s.1 + c.to_server.wire_bytes);
            s2c = (s2c.0 + c.to_client.packets, s2c.1 + c.to_client.wire_bytes);
        }
        let closes = every_close(run);
        let abnormal: Vec<_> = closes
            .iter()
            .filter(|c| c.connection_close && c.close.abnormal)
            .collect();
        let connects = connect_report(run);
        let sessions = run.mysql_sessions.iter().flatten().count() as u64;
        let timeline = &run.capture.timeline;
        let body = timeline.body_first.zip(timeline.body_last);
        let body_s = body.map_or(0.0, |(a, b)| (b.0 - a.0).max(0) as f64 / 1e9);
        let per_s = |n: u64| if body_s > 0.0 { n as f64 / body_s } else { 0.0 };
        let capture_point = capture_point(&syn_synack, &hs);
        let requests = mysql.requests();
        let request_span_s = match body {
            // A wild timestamp (outside the capture's body) stretches no span.
            Some((first, last)) => {
                let clamp = |ns: u64| (ns as i64).clamp(first.0, last.0);
                match (profile.first_request_ns, profile.last_request_ns) {
                    (Some(x), Some(y)) => (clamp(y) - clamp(x)).max(0) as f64 / 1e9,
                    _ => 0.0,
                }
            }
            None => profile.request_span_s(),
        };
        DiffSide {
            load: stats.load.clone(),
            path: stats.rates.path_total().unwrap_or_default(),
            tls_estimated: mysql.tls.estimated_rt().clone(),
            summary: RunSummary {
                files,
                packets: run.capture.counts.packets,
                first_s: body.map(|(a, _)| a.0 as f64 / 1e9),
                last_s: body.map(|(_, b)| b.0 as f64 / 1e9),
                request_span_s,
                sessions,
                requests: requests.total(),
                answered: requests.answered,
                capture_point,
                unknowns: unknowns(run).notes,
            },
            profile: profile.clone(),
            statements,
            statements_folded: mysql.statement_requests_folded(),
            errors,
            servers,
            modes: detect_modes(&profile.rt),
            connections: ConnectionFacts {
                connections: run.connections.len() as u64,
                sessions,
                connects: connects.attempts,
                refused: connects.refused,
                unanswered: connects.unanswered,
                delayed: connects.delayed,
                resets,
                abnormal_closes: abnormal.len() as u64,
                first_abnormal: abnormal.first().map(|c| {
                    format!(
                        "frame {}: {} by the {}: {}",
                        c.close.frame,
                        c.close.flag.name(),
                        c.close.initiator.name(),
                        c.close.reason
                    )
                }),
            },
            handshake_rtt: hs,
            syn_to_synack: syn_synack,
            synack_to_ack: synack_ack,
            retransmissions: retrans,
            zero_windows: zero[0] + zero[1],
            zero_windows_by: zero,
            packets: run.capture.counts.packets,
            ceilings: stats.rates.report().ceilings,
            throughput: Throughput {
                c2s_pps: per_s(c2s.0),
                s2c_pps: per_s(s2c.0),
                c2s_bps: per_s(c2s.1 * 8),
                s2c_bps: per_s(s2c.1 * 8),
            },
        }
    }

    /// The run's summary: files, span, requests, capture point.
    pub fn summary(&self) -> &RunSummary {
        &self.summary
    }
}

/// Where the capture was taken, from the medians of its handshakes' SYN to SYN-ACK and of the whole
/// handshake: the half holding [`DIFF_HANDSHAKE_HALF`] of the round trip crossed the path.
fn capture_point(syn_to_synack: &Histogram, handshake: &Histogram) -> CapturePoint {
    if syn_to_synack.count() == 0 {
        return CapturePoint::Unknown;
    }
    let whole = handshake.quantile_ns(0.5) as f64;
    let first = syn_to_synack.quantile_ns(0.5) as f64;
    if whole <= 0.0 {
        CapturePoint::Unknown
    } else if first / whole >= DIFF_HANDSHAKE_HALF {
        CapturePoint::Client
    } else if first / whole <= 1.0 - DIFF_HANDSHAKE_HALF {
        CapturePoint::Server
    } else {
        CapturePoint::Unknown
    }
}
