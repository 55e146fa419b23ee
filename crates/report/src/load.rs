//! Text for `load`: the load-test view of a run.

use std::fmt::Write;

use pcapsleuth_analysis::{ConnectionRow, LoadReport, TransactionRow, Transactions};

use crate::style::{
    column_width, count, counted, duration, instant, one_line, percent, seconds, stats,
};
use crate::visible::visible;

/// Rows of the per-interval table printed (the JSON has them all).
const ROWS_PRINTED: usize = 600;

/// What `pcapsleuth load` prints: requests in flight with Little's law beside them, connections,
/// transactions (how many, how they were told, how long, statements, rollbacks), think time and idle in
/// transaction with the worst connections named, then one row per interval (partial ones marked).
pub fn render_load(r: &LoadReport) -> String {
    let mut out = String::new();
    write_requests(&mut out, r);
    write_transactions(&mut out, &r.transactions);
    render_worst_transactions(&mut out, &r.transactions.worst);
    render_servers(&mut out, r);
    write_think_time(&mut out, r);
    for n in &r.notes {
        let _ = writeln!(out, "\nnote: {}", visible(n));
    }
    write_per_interval(&mut out, r);
    out
}

/// The requests, their rate and the connections; the requests in flight beside Little's law.
fn write_requests(out: &mut String, r: &LoadReport) {
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
    if let Some(e) = &r.tls_estimated {
        let unfinished = if e.unfinished > 0 {
            format!(
                ", {} more without an answer (a COM_QUIT, a close or the capture's end)",
                count(e.unfinished)
            )
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "in TLS sessions not decrypted (no key log), timed from their records: {} exchanges ({:.1}/s){unfinished}; \
             p50 {}, mean {}; in flight by Little's law {:.2} (estimates: an exchange is the client's records \
             and the server's until the client's next)",
            count(e.exchanges),
            e.exchanges_per_s,
            duration(e.rt_us.p50),
            duration(e.rt_us.mean),
            e.littles_law
        );
    }
}

/// The transactions: how many ended and how, how they were told, those not timed, their time,
/// statements and idle time.
fn write_transactions(out: &mut String, tx: &Transactions) {
    let c = &tx.counts;
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
}

/// The think time, and the connections that were idle in transaction or thought the longest.
fn write_think_time(out: &mut String, r: &LoadReport) {
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
}

/// One row per interval (partial ones marked), the first `ROWS_PRINTED`.
fn write_per_interval(out: &mut String, r: &LoadReport) {
    if !r.per_interval.is_empty() {
        let _ = writeln!(
            out,
            "\nper {}{} (rates per second the capture covers; * partial interval):",
            seconds(r.interval_s),
            if r.interval_s > r.asked_interval_s {
                format!(
                    ", not {} as asked: the capture is too long for that many intervals; active: not counted at this width",
                    seconds(r.asked_interval_s)
                )
            } else {
                String::new()
            }
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
                p.connections_active.map_or_else(|| "-".to_string(), count),
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
}

/// Transactions listed in the text with their statements (the JSON has [`LoadReport`]'s ten).
const TRANSACTIONS_PRINTED: usize = 3;
/// Statements of each listed transaction printed.
const STATEMENTS_PRINTED: usize = 8;

/// The longest transactions, each with its first statements.
fn render_worst_transactions(out: &mut String, worst: &[TransactionRow]) {
    if worst.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "\nthe longest transactions (of {} listed in --json), with their statements:",
        count(worst.len() as u64)
    );
    for t in worst.iter().take(TRANSACTIONS_PRINTED) {
        let _ = writeln!(
            out,
            "  {} from frame {} ({} -> {}, {}): {}, {} idle waiting for the client",
            duration(t.rt_us),
            t.first_frame,
            t.client,
            t.server,
            t.ending.replace('_', " "),
            counted(t.statement_count, "request", "requests"),
            duration(t.idle_us)
        );
        for st in t.statements.iter().take(STATEMENTS_PRINTED) {
            let text = one_line(&st.fingerprint);
            let text = if text.chars().count() > 70 {
                let mut s: String = text.chars().take(69).collect();
                s.push('…');
                s
            } else {
                text
            };
            let _ = writeln!(
                out,
                "    frame {:<8} {:>9}  {:<17} {}",
                st.frame,
                st.rt_us.map_or_else(|| "unanswered".to_string(), duration),
                st.command,
                text
            );
        }
        let more = t.statement_count.saturating_sub(STATEMENTS_PRINTED as u64);
        if more > 0 {
            let _ = writeln!(
                out,
                "    … and {} more",
                counted(more, "request", "requests")
            );
        }
    }
}

/// One row per server, the busiest first: only with more than one server (the run's figures say the
/// rest).
fn render_servers(out: &mut String, r: &LoadReport) {
    if r.servers.len() < 2 {
        return;
    }
    let w = column_width("server", r.servers.iter().map(|s| &s.server));
    let _ = writeln!(out, "\nservers, by requests:");
    let _ = writeln!(
        out,
        "  {:<w$} {:>6} {:>9} {:>8} {:>9} {:>6} {:>8} {:>6} {:>9} {:>9}",
        "server",
        "conns",
        "requests",
        "req/s",
        "RT mean",
        "errors",
        "tps",
        "rollb",
        "tx mean",
        "idle-tx"
    );
    for s in &r.servers {
        let _ = writeln!(
            out,
            "  {:<w$} {:>6} {:>9} {:>8.1} {:>9} {:>6} {:>8.1} {:>6} {:>9} {:>9}",
            s.server,
            count(s.connections),
            count(s.requests),
            s.requests_per_s,
            dur0(s.rt_mean_us),
            count(s.errors),
            s.tps,
            count(s.rollbacks),
            dur0(s.transaction_rt_mean_us),
            seconds(s.idle_in_transaction_s)
        );
    }
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
