//! Replication streams: one report per stream (the replica's dump, the events the primary sent, the
//! semi-sync ACK requests and the replica's ACKs with their latency, how far behind the events were, how
//! the stream ended), and the judgement of a replication connection's close in replication terms.
//!
//! A stream's events are not responses and its ACKs are not requests: they never reach the MySQL
//! statistics or response times (the decoder keeps them apart); this module is where they are counted.

use std::collections::BTreeMap;

use pcapsleuth_flow::{CloseFlag, Role};
use pcapsleuth_mysql::replication::{event_type_name, StreamEnd};
use pcapsleuth_mysql::{Meta, ReplicationAtClose, ReplicationSample, ReplicationSummary};
use serde::Serialize;

use crate::histogram::{Histogram, RtSummary};
use crate::thresholds::{ACK_STALLS_LISTED, ACK_STALL_NS};
use crate::units::duration_us;

/// A semi-sync ACK that took longer than 10 ms (`thresholds::ACK_STALL_NS`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AckStall {
    /// Frame of the event's last byte (the primary waits from here).
    pub event_frame: u64,
    /// Frame of the ACK.
    pub ack_frame: u64,
    /// The event's end position.
    pub position: u64,
    /// From the event's last byte to the ACK, µs.
    pub latency_us: f64,
}

/// Event lag percentiles, seconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Default)]
pub struct LagSummary {
    /// Events whose lag was measured.
    pub count: u64,
    /// Median lag, seconds.
    pub p50: f64,
    /// 95th percentile of the lag, seconds.
    pub p95: f64,
    /// 99th percentile of the lag, seconds.
    pub p99: f64,
    /// Largest lag, seconds.
    pub max: f64,
}

/// How a replication stream ended (snake_case in JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StreamEnding {
    /// The replica sent the first FIN (`STOP SLAVE` between events is normal).
    ReplicaClosed,
    /// The replica sent the first RST.
    ReplicaReset,
    /// The primary sent the first FIN.
    PrimaryClosed,
    /// The primary sent the first RST.
    PrimaryReset,
    /// The primary sent EOF: a non-blocking dump caught up with the binary log.
    PrimaryEof,
    /// The primary ended the stream with an ERR.
    PrimaryError,
    /// Still streaming when the capture ended.
    Open,
}

/// The two ends of a replication stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReplicationRole {
    /// The server sending binary-log events (the MySQL server of the connection).
    Primary,
    /// The server reading them (the MySQL client of the connection).
    Replica,
}

/// How a stream ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StreamEndReport {
    /// How it ended.
    pub kind: StreamEnding,
    /// Which side ended it; null while open.
    pub by: Option<ReplicationRole>,
    /// The FIN, RST, EOF or ERR that ended it; null while open.
    pub frame: Option<u64>,
    /// Not a normal end of a replication stream.
    pub abnormal: bool,
    /// What the end was, in words (as `first-reset` words a close).
    pub reason: String,
}

/// The ACK the primary was still waiting for when the capture ended.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct AwaitingAck {
    /// The binary-log position (end of the event) the ACK should name.
    pub position: u64,
    /// Frame of the last byte of the event that asked for it.
    pub event_frame: u64,
    /// From the event's last byte to the end of the capture.
    pub waited_s: f64,
}

/// One replication stream (`mysql --json` under `replication`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReplicationStream {
    /// The replica's `ip:port` (the MySQL client of the connection).
    pub client: String,
    /// The primary's `ip:port` (the replica is `client`).
    pub server: String,
    /// The COM_BINLOG_DUMP(_GTID); null (and the fields that come from it) when the capture began after it.
    pub dump_frame: Option<u64>,
    /// The binary-log file the dump asked to start from (`""`: the first, or where the GTID position leads).
    pub start_file: Option<String>,
    /// The position in it the dump asked to start from.
    pub start_position: Option<u64>,
    /// Whether the dump started from a GTID position (`COM_BINLOG_DUMP_GTID`, or MariaDB's
    /// `@slave_connect_state`).
    pub gtid: Option<bool>,
    /// The replica's server id, from its dump.
    pub replica_server_id: Option<u32>,
    /// Frame of the first event.
    pub first_event_frame: Option<u64>,
    /// Frame of the last event.
    pub last_event_frame: Option<u64>,
    /// Events streamed.
    pub events: u64,
    /// By type name ("XID", "TABLE_MAP", ...; a code neither server uses as `"TYPE_<n>"`).
    pub events_by_type: BTreeMap<String, u64>,
    /// Bytes of the events.
    pub bytes: u64,
    /// XID events and QUERY events of `COMMIT`.
    pub transactions: u64,
    /// Events carried the semi-sync header, or the replica sent ACKs.
    pub semi_sync: bool,
    /// Events whose semi-sync header asked the replica to ACK.
    pub acks_requested: u64,
    /// ACKs the replica sent.
    pub acks: u64,
    /// ACKs that named no event asked for (e.g. before the capture began).
    pub acks_unmatched: u64,
    /// Requests no ACK answered, neither their own nor a later one.
    pub acks_missing: u64,
    /// From the end of the event that asked for the ACK to the replica's ACK (the ACKs that named it).
    pub ack_latency_us: RtSummary,
    /// ACKs that took over 10 ms.
    pub ack_stalls: u64,
    /// The first 10 ACKs over 10 ms, in capture order.
    pub ack_stall_examples: Vec<AckStall>,
    /// Capture time of each event's last byte minus its own timestamp (whole seconds, so up to 1 s
    /// more than the true lag); the log's bookkeeping events left out.
    pub lag_s: LagSummary,
    /// How the stream ended.
    pub end: StreamEndReport,
    /// The primary was still waiting for this ACK when the capture ended.
    pub awaiting_ack_at_end: Option<AwaitingAck>,
    /// What could not be known (a stream joined mid-way, bytes lost in gaps, ...).
    pub notes: Vec<String>,
}

/// Per-stream distributions while the connection is tracked.
#[derive(Debug, Clone, Default)]
pub(crate) struct StreamTrack {
    ack: Histogram,
    lag: Histogram,
    stalls: u64,
    stall_examples: Vec<AckStall>,
}

impl StreamTrack {
    pub(crate) fn sample(&mut self, s: &ReplicationSample) {
        match *s {
            ReplicationSample::Ack {
                position,
                event_end,
                ack,
            } => {
                let ns = ack.ts_ns.saturating_sub(event_end.ts_ns);
                self.ack.add(ns);
                if ns > ACK_STALL_NS {
                    self.stalls += 1;
                    if self.stall_examples.len() < ACK_STALLS_LISTED {
                        self.stall_examples.push(AckStall {
                            event_frame: event_end.frame,
                            ack_frame: ack.frame,
                            position,
                            latency_us: ns as f64 / 1e3,
                        });
                    }
                }
            }
            ReplicationSample::Lag { lag_ns, .. } => self.lag.add(lag_ns.max(0) as u64),
        }
    }
}

/// A close of the stream's connection: who, how, where, and what the stream was doing.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StreamClose {
    pub by: Role,
    pub flag: CloseFlag,
    pub at: Meta,
    pub state: ReplicationAtClose,
}

fn party(r: Role) -> &'static str {
    match r {
        Role::Client => "replica",
        Role::Server => "primary",
        Role::Unknown => "one side",
    }
}

/// A close judged in replication terms: the reason, and whether it is abnormal. `earlier` is the
/// connection's close before this one (a FIN before an RST), if any.
///
/// A replica leaving between events (STOP SLAVE) is the normal end of a stream, and so is its RST for
/// events that arrived after it had left. A primary closing or resetting the stream, an event cut off,
/// and a semi-sync ACK the primary waited for in vain (over [`ACK_STALL_NS`]) are not.
pub(crate) fn judge(c: &StreamClose, earlier: Option<&StreamClose>) -> (String, bool) {
    let (reason, abnormal) = judge_alone(c, earlier);
    match earlier {
        Some(e) => (
            format!(
                "{reason} (after the {} {} in frame {})",
                party(e.by),
                e.flag.name(),
                e.at.frame
            ),
            abnormal,
        ),
        None => (reason, abnormal),
    }
}

fn judge_alone(c: &StreamClose, earlier: Option<&StreamClose>) -> (String, bool) {
    let who = party(c.by);
    let flag = c.flag.name();
    let s = &c.state;
    let waited = s
        .awaiting_ack
        .map(|a| (a, c.at.ts_ns.saturating_sub(a.event_end.ts_ns)));
    let stalled = waited.filter(|&(_, ns)| ns > ACK_STALL_NS);
    if s.mid_event {
        let after = s.last_event.map_or(String::new(), |m| {
            format!(", the last whole one ending in frame {}", m.frame)
        });
        return (
            format!(
                "{who} {flag} in the middle of a binlog event, after {} events{after}",
                s.events
            ),
            true,
        );
    }
    if let Some((a, ns)) = stalled {
        let wait = duration_us(ns as f64 / 1e3);
        let reason = match c.by {
            Role::Server => format!(
                "{who} {flag} while the semi-sync ACK for position {} (event frame {}) had not come for {wait}: \
                 the replica stopped ACKing; primary fell back to async?",
                a.position, a.event_end.frame
            ),
            _ => format!(
                "{who} {flag} while the primary had waited {wait} for its semi-sync ACK for position {} \
                 (event frame {})",
                a.position, a.event_end.frame
            ),
        };
        return (reason, true);
    }
    let pending = waited.map_or(String::new(), |(a, ns)| {
        format!(
            " (the ACK for position {} outstanding for {})",
            a.position,
            duration_us(ns as f64 / 1e3)
        )
    });
    match (c.by, c.flag) {
        (Role::Client, CloseFlag::Fin) => (
            format!(
                "replica FIN between binlog events after {} events{pending}: the replica ended the stream \
                 (STOP SLAVE), a normal end of replication",
                s.events
            ),
            false,
        ),
        (Role::Client, CloseFlag::Rst)
            if earlier.is_some_and(|e| {
                e.by == Role::Client && e.flag == CloseFlag::Fin && !judge(e, None).1
            }) =>
        {
            (
                "replica RST for data that came after it had left the stream (its FIN was normal)"
                    .to_string(),
                false,
            )
        }
        (Role::Server, _) => (
            format!(
                "primary {flag} between binlog events after {} events{pending}: the primary ended the stream \
                 (shutdown, KILL of the dump thread, or a timeout)",
                s.events
            ),
            true,
        ),
        _ => (
            format!(
                "{who} {flag} between binlog events after {} events{pending}",
                s.events
            ),
            c.flag == CloseFlag::Rst,
        ),
    }
}

/// The report of one stream, when its connection is concluded. `closes` are the connection's closes in
/// order; `capture_end` is the last packet's time (for a wait still open).
pub(crate) fn stream_report(
    client: String,
    server: String,
    summary: &ReplicationSummary,
    track: &StreamTrack,
    closes: &[StreamClose],
    awaiting_at_end: Option<pcapsleuth_mysql::replication::AwaitedAck>,
    capture_end_ns: u64,
) -> ReplicationStream {
    let dump = summary.dump.as_ref();
    let events_by_type = summary
        .event_counts()
        .map(|(t, n)| {
            let name = event_type_name(t).map_or_else(|| format!("TYPE_{t}"), str::to_string);
            (name, n)
        })
        .fold(BTreeMap::new(), |mut m, (k, n)| {
            *m.entry(k).or_insert(0) += n;
            m
        });
    let end = match (closes.first(), &summary.end) {
        (_, Some(StreamEnd::Error { at, code, message })) => StreamEndReport {
            kind: StreamEnding::PrimaryError,
            by: Some(ReplicationRole::Primary),
            frame: Some(at.frame),
            abnormal: true,
            reason: format!("the primary ended the stream with ERR {code}: {message}"),
        },
        (_, Some(StreamEnd::Eof { at })) => StreamEndReport {
            kind: StreamEnding::PrimaryEof,
            by: Some(ReplicationRole::Primary),
            frame: Some(at.frame),
            abnormal: false,
            reason: "the primary sent EOF: a non-blocking dump reached the end of the binary log"
                .into(),
        },
        (Some(c), None) => {
            let (reason, abnormal) = judge(c, None);
            StreamEndReport {
                kind: match (c.by, c.flag) {
                    (Role::Server, CloseFlag::Fin) => StreamEnding::PrimaryClosed,
                    (Role::Server, CloseFlag::Rst) => StreamEnding::PrimaryReset,
                    (_, CloseFlag::Fin) => StreamEnding::ReplicaClosed,
                    (_, CloseFlag::Rst) => StreamEnding::ReplicaReset,
                },
                by: match c.by {
                    Role::Server => Some(ReplicationRole::Primary),
                    Role::Client => Some(ReplicationRole::Replica),
                    Role::Unknown => None,
                },
                frame: Some(c.at.frame),
                abnormal,
                reason,
            }
        }
        (None, None) => StreamEndReport {
            kind: StreamEnding::Open,
            by: None,
            frame: None,
            abnormal: false,
            reason: "still streaming when the capture ended".into(),
        },
    };
    let awaiting_ack_at_end = awaiting_at_end
        .filter(|_| closes.is_empty() && summary.end.is_none())
        .map(|a| AwaitingAck {
            position: a.position,
            event_frame: a.event_end.frame,
            waited_s: capture_end_ns.saturating_sub(a.event_end.ts_ns) as f64 / 1e9,
        });
    let mut notes = Vec::new();
    if dump.is_none() {
        notes.push(
            "the capture began after the dump request: its file, position and GTID mode are unknown, \
             and ACKs of events sent before the capture cannot be timed"
                .to_string(),
        );
    }
    if summary.gap_bytes > 0 {
        notes.push(format!(
            "{} bytes of events were lost in gaps (their events are counted, what they said is not)",
            summary.gap_bytes
        ));
    }
    if summary.malformed_packets > 0 {
        notes.push(format!(
            "{} packets from the primary were not binlog events",
            summary.malformed_packets
        ));
    }
    if summary.acks_untracked > 0 {
        notes.push(format!(
            "{} ACK requests were not remembered (too many open at once)",
            summary.acks_untracked
        ));
    }
    let lag_s = |q: f64| track.lag.quantile_ns(q) as f64 / 1e9;
    let lag = track.lag.summary_us();
    ReplicationStream {
        client,
        server,
        dump_frame: dump.map(|d| d.at.frame),
        start_file: dump.map(|d| d.start_file.clone()),
        start_position: dump.map(|d| d.start_position),
        gtid: dump.map(|d| d.gtid),
        replica_server_id: dump.map(|d| d.server_id),
        first_event_frame: summary.first_event.map(|m| m.frame),
        last_event_frame: summary.last_event.map(|m| m.frame),
        events: summary.events,
        events_by_type,
        bytes: summary.bytes,
        transactions: summary.transactions,
        semi_sync: summary.semi_sync,
        acks_requested: summary.acks_requested,
        acks: summary.acks,
        acks_unmatched: summary.acks_unmatched,
        acks_missing: summary
            .acks_requested
            .saturating_sub(summary.acks_matched + summary.acks_covered),
        ack_latency_us: track.ack.summary_us(),
        ack_stalls: track.stalls,
        ack_stall_examples: track.stall_examples.clone(),
        lag_s: LagSummary {
            count: lag.count,
            p50: lag_s(0.50),
            p95: lag_s(0.95),
            p99: lag_s(0.99),
            max: lag.max / 1e6,
        },
        end,
        awaiting_ack_at_end,
        notes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pcapsleuth_mysql::replication::AwaitedAck;

    fn at(frame: u64, ms: u64) -> Meta {
        Meta {
            ts_ns: ms * 1_000_000,
            frame,
        }
    }

    fn close(
        by: Role,
        flag: CloseFlag,
        ms: u64,
        awaited_ms: Option<u64>,
        mid: bool,
    ) -> StreamClose {
        StreamClose {
            by,
            flag,
            at: at(100, ms),
            state: ReplicationAtClose {
                events: 42,
                mid_event: mid,
                awaiting_ack: awaited_ms.map(|t| AwaitedAck {
                    position: 777,
                    event_end: at(90, t),
                }),
                last_event: Some(at(90, 0)),
            },
        }
    }

    #[test]
    fn a_replica_leaving_is_normal_unless_the_primary_was_left_waiting() {
        let c = Role::Client;
        assert!(!judge(&close(c, CloseFlag::Fin, 1000, None, false), None).1);
        // An ACK in flight for 2 ms: a race, not a stall.
        let (reason, abnormal) = judge(&close(c, CloseFlag::Fin, 1000, Some(998), false), None);
        assert!(!abnormal, "{reason}");
        assert!(reason.contains("outstanding for 2 ms"), "{reason}");
        let (reason, abnormal) = judge(&close(c, CloseFlag::Fin, 1000, Some(900), false), None);
        assert!(abnormal && reason.contains("waited 100 ms"), "{reason}");
        // Cut in the middle of an event.
        assert!(judge(&close(c, CloseFlag::Fin, 1000, None, true), None).1);
        // Its RST for events that came after its normal FIN is normal; without the FIN it is not.
        let fin = close(c, CloseFlag::Fin, 1000, None, false);
        assert!(!judge(&close(c, CloseFlag::Rst, 1001, None, false), Some(&fin)).1);
        assert!(judge(&close(c, CloseFlag::Rst, 1001, None, false), None).1);
    }

    #[test]
    fn a_primary_ending_the_stream_is_abnormal_and_says_what_it_waited_for() {
        let s = Role::Server;
        assert!(judge(&close(s, CloseFlag::Fin, 1000, None, false), None).1);
        let (reason, abnormal) = judge(&close(s, CloseFlag::Fin, 11_000, Some(1000), false), None);
        assert!(abnormal);
        assert!(
            reason
                .contains("semi-sync ACK for position 777 (event frame 90) had not come for 10 s"),
            "{reason}"
        );
    }
}
