//! Text for `load`: the load-test view of a run.

use std::fmt::Write;

use pcapsleuth_analysis::{ConnectionRow, LoadReport};

use crate::style::{column_width, count, counted, duration, instant, percent, seconds, stats};
use crate::visible::visible;

/// Rows of the per-interval table printed (the JSON has them all).
const ROWS_PRINTED: usize = 600;

/// What `pcapsleuth load` prints: requests in flight with Little's law beside them, connections,
/// transactions (how many, how they were told, how long, statements, rollbacks), think time and idle in
/// transaction with the worst connections named, then one row per interval (partial ones marked).
pub fn render_load(r: &LoadReport) -> String {
    let mut out = String::new();
    let tx = &r.transactions;
    let c = &tx.counts;
    let _ = writeln!(
        out,
        "{} requests in {} ({:.1}/s); {} connections seen, {} sent requests (open at once: mean {:.1}, max {})",
        count(r.requests),
        seconds(r.span_s),
        r.requests_per_s,
        count(r.connections.seen),
        count(r.connections.active),
        r.connections.open_mean,
        count(r.connections.open_max)
    );
    let agreement = if r.in_flight.littles_law > 0.0 {
        format!(
            " ({} of the measured)",
            percent(r.in_flight.littles_law / r.in_flight.mean.max(f64::MIN_POSITIVE))
        )
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "in flight: mean {:.2}, max {}{}; Little's law: {:.1}/s x mean RT {} = {:.2}{}",
        r.in_flight.mean,
        count(r.in_flight.max),
        if r.in_flight.max > 0 {
            format!(" at {}", instant(r.in_flight.max_at))
        } else {
            String::new()
        },
        r.requests_per_s,
        duration(r.in_flight.rt_mean_us),
        r.in_flight.littles_law,
        agreement
    );
    let told = match tx.told_by {
        "server_status" => "told by the server's SERVER_STATUS_IN_TRANS flag",
        "statements" => "told by the statements (no server status flag where it would say)",
        "both" => "told by the server's SERVER_STATUS_IN_TRANS flag, some by the statements",
        _ => "none seen",
    };
    let ended = c.committed + c.rolled_back;
    let _ = writeln!(
        out,
        "\ntransactions: {} ended ({:.1}/s): {} committed, {} rolled back; {} explicit (BEGIN), {} with \
         autocommit off; {}",
        count(ended),
        tx.per_s,
        count(c.committed),
        count(c.rolled_back),
        count(c.explicit),
        count(c.autocommit_off),
        told
    );
    if c.implicit_commits > 0 {
        let _ = writeln!(
            out,
            "  {} committed implicitly (a DDL, SET autocommit=1 or a new BEGIN)",
            count(c.implicit_commits)
        );
    }
    for (n, what) in [
        (
            c.began_before_capture,
            "already open when the capture began (start unknown, not timed)",
        ),
        (
            c.open_at_end,
            "still open when the capture ended (not timed)",
        ),
        (
            c.abandoned,
            "open when their connection closed or quit (the server rolls them back)",
        ),
    ] {
        if n > 0 {
            let _ = writeln!(out, "  {} {what}", count(n));
        }
    }
    if ended > 0 {
        let _ = writeln!(
            out,
            "  time (first statement to the end's answer): {}",
            stats(&tx.rt_us, "transaction", "transactions")
        );
        let _ = writeln!(
            out,
            "  statements per transaction (BEGIN/COMMIT/ROLLBACK aside): mean {:.1}, max {}",
            tx.statements_mean, tx.statements_max
        );
        let _ = writeln!(
            out,
            "  idle in transaction: {} ({} of the transactions' time waiting for the client's next statement)",
            seconds(tx.idle_in_transaction_s),
            percent(tx.idle_share)
        );
    }
    let _ = writeln!(
        out,
        "\nthink time (a response's end to the next request): {}",
        stats(&r.think_time_us, "gap", "gaps")
    );
    if !r.worst_idle_in_transaction.is_empty() {
        let _ = writeln!(out, "\nidle in transaction, the worst connections:");
        for row in &r.worst_idle_in_transaction {
            let _ = writeln!(out, "  {}", connection_line(row, row.idle_in_transaction_s));
            if let Some(g) = &row.longest_idle {
                let _ = writeln!(
                    out,
                    "    longest: {} from the response ending frame {} to `{}` (frame {})",
                    seconds(g.seconds),
                    g.after_frame,
                    visible(&g.statement),
                    g.request_frame
                );
            }
        }
    }
    if !r.worst_think_time.is_empty() {
        let _ = writeln!(out, "\nthink time, the worst connections:");
        for row in &r.worst_think_time {
            let _ = writeln!(out, "  {}", connection_line(row, row.think_s));
        }
    }
    for n in &r.notes {
        let _ = writeln!(out, "\nnote: {}", visible(n));
    }
    if !r.per_interval.is_empty() {
        let _ = writeln!(
            out,
            "\nper {} (rates per second the capture covers; * partial interval):",
            seconds(r.interval_s)
        );
        let starts: Vec<String> = r
            .per_interval
            .iter()
            .take(ROWS_PRINTED)
            .map(|p| format!("{}{}", instant(p.start), if p.partial { "*" } else { "" }))
            .collect();
        let w = column_width("interval start", &starts);
        let _ = writeln!(
            out,
            "{:<w$} {:>8} {:>9} {:>8} {:>7} {:>7} {:>6} {:>7} {:>5} {:>9} {:>9} {:>8}",
            "interval start",
            "req/s",
            "inflight",
            "max",
            "little",
            "conns",
            "active",
            "tps",
            "rollb",
            "tx mean",
            "think",
            "idle-tx"
        );
        for (p, start) in r.per_interval.iter().zip(&starts) {
            let _ = writeln!(
                out,
                "{:<w$} {:>8.1} {:>9.2} {:>8} {:>7.2} {:>7.1} {:>6} {:>7.1} {:>5} {:>9} {:>9} {:>8}",
                start,
                p.requests_per_s,
                p.in_flight_mean,
                count(p.in_flight_max),
                p.littles_law,
                p.connections_open_mean,
                count(p.connections_active),
                p.tps,
                count(p.rollbacks),
                dur0(p.transaction_rt_mean_us),
                dur0(p.think_mean_us),
                seconds(p.idle_in_transaction_s)
            );
        }
        if r.per_interval.len() > ROWS_PRINTED {
            let _ = writeln!(
                out,
                "… and {} more intervals (see --json)",
                count((r.per_interval.len() - ROWS_PRINTED) as u64)
            );
        }
    }
    out
}

fn dur0(us: f64) -> String {
    if us == 0.0 {
        "-".to_string()
    } else {
        duration(us)
    }
}

fn connection_line(row: &ConnectionRow, s: f64) -> String {
    format!(
        "{} -> {} (from frame {}): {} over {}, {} taking {}",
        row.client,
        row.server,
        row.first_frame,
        seconds(s),
        counted(row.requests, "request", "requests"),
        counted(row.transactions, "transaction", "transactions"),
        seconds(row.transaction_s)
    )
}
