//! Text of replication streams, for `mysql` and `report`.

use std::fmt::Write;

use pcapsleuth_analysis::units::duration_us as us;
use pcapsleuth_analysis::ReplicationStream;

/// One paragraph per stream: who, from where, what it carried, its ACKs and lag, how it ended.
pub(crate) fn write_streams(out: &mut String, streams: &[ReplicationStream]) {
    if streams.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "\nreplication streams (binlog events and semi-sync ACKs; not among the requests above):"
    );
    for r in streams {
        let from = match (r.dump_frame, &r.start_file, r.start_position) {
            (Some(frame), Some(file), Some(pos)) => format!(
                "dump frame {frame} from {}:{pos}{}",
                if file.is_empty() {
                    "(first file)"
                } else {
                    file
                },
                if r.gtid == Some(true) { " (GTID)" } else { "" }
            ),
            _ => "joined mid-stream (the dump is before the capture)".to_string(),
        };
        let _ = writeln!(
            out,
            "  replica {} <- primary {}: {from}",
            r.client, r.server
        );
        let types: Vec<String> = r
            .events_by_type
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        let _ = writeln!(
            out,
            "    {} events ({} bytes), {} transactions: {}",
            r.events,
            r.bytes,
            r.transactions,
            types.join(", ")
        );
        if r.semi_sync {
            let a = &r.ack_latency_us;
            let _ = writeln!(
                out,
                "    semi-sync: {} ACKs asked, {} sent, {} never came; ACK latency n={} p50 {} p95 {} p99 {} max {}; {} over 10 ms",
                r.acks_requested,
                r.acks,
                r.acks_missing,
                a.count,
                us(a.p50),
                us(a.p95),
                us(a.p99),
                us(a.max),
                r.ack_stalls
            );
        } else {
            let _ = writeln!(out, "    asynchronous (no semi-sync header)");
        }
        if r.lag_s.count > 0 {
            let _ = writeln!(
                out,
                "    lag (capture time - event time, 1 s resolution): p50 {:.1} s p95 {:.1} s p99 {:.1} s max {:.1} s",
                r.lag_s.p50, r.lag_s.p95, r.lag_s.p99, r.lag_s.max
            );
        }
        let _ = writeln!(
            out,
            "    end: {}{}",
            if r.end.abnormal { "ABNORMAL: " } else { "" },
            r.end.reason
        );
        if let Some(a) = &r.awaiting_ack_at_end {
            let _ = writeln!(
                out,
                "    the primary was still waiting for the ACK of position {} (event frame {}) {:.1} s later",
                a.position, a.event_frame, a.waited_s
            );
        }
        for n in &r.notes {
            let _ = writeln!(out, "    note: {n}");
        }
    }
}
