//! Text of replication streams, for `mysql` and `report`.

use std::fmt::Write;

use crate::style::{bytes, count, counted, seconds, stats};
use crate::visible::visible;
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
                    "(first file)".into()
                } else {
                    visible(file)
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
            .map(|(k, v)| format!("{k} {}", count(*v)))
            .collect();
        let _ = writeln!(
            out,
            "    {} ({}), {}: {}",
            counted(r.events, "event", "events"),
            bytes(r.bytes),
            counted(r.transactions, "transaction", "transactions"),
            types.join(", ")
        );
        if r.semi_sync {
            let a = &r.ack_latency_us;
            let _ = writeln!(
                out,
                "    semi-sync: {} asked, {} sent, {} never came; ACK latency {}; {} over 10 ms",
                counted(r.acks_requested, "ACK", "ACKs"),
                count(r.acks),
                count(r.acks_missing),
                stats(a, "ACK", "ACKs"),
                count(r.ack_stalls)
            );
        } else {
            let _ = writeln!(out, "    asynchronous (no semi-sync header)");
        }
        if r.lag_s.count > 0 {
            let _ = writeln!(
                out,
                "    lag (capture time - event time, 1 s resolution): p50 {}  p95 {}  p99 {}  max {}",
                seconds(r.lag_s.p50),
                seconds(r.lag_s.p95),
                seconds(r.lag_s.p99),
                seconds(r.lag_s.max)
            );
        }
        let _ = writeln!(
            out,
            "    end: {}{}",
            if r.end.abnormal { "ABNORMAL: " } else { "" },
            visible(&r.end.reason)
        );
        if let Some(a) = &r.awaiting_ack_at_end {
            let _ = writeln!(
                out,
                "    the primary was still waiting for the ACK of position {} (event frame {}) {} later",
                a.position,
                a.event_frame,
                seconds(a.waited_s)
            );
        }
        for n in &r.notes {
            let _ = writeln!(out, "    note: {}", visible(n));
        }
    }
}
