//! Text for `rate`, `rt` and `report`.

use std::fmt::Write;

use pcapsleuth_analysis::{FindingKind, FullReport, IntervalKind, RateReport, RtReport, RtSource};

use crate::style::{
    column_width, command_lines, count, counted, covered_note, direction_words, duration,
    duration_or_none, instant, instant_ns, list, percent, rate, seconds, span, stats, times,
    variation, width, Measure, NONE,
};
use crate::visible::{visible, visible_lines_owned};

/// What `pcapsleuth rate` prints: each ceiling found (a direction's packets/s or bits/s held flat at a
/// cap while load waited behind it: where, from when, for how many seconds, how flat), or a line saying
/// there is none, then the peak rates per direction.
pub fn render_rate(r: &RateReport) -> String {
    let mut out = String::new();
    if r.ceilings.is_empty() {
        let _ = writeln!(
            out,
            "No ceiling: no rate held flat at a cap with load waiting behind it."
        );
    }
    if r.ceiling_bin_s > 0.1 + 1e-9 {
        let _ = writeln!(
            out,
            "(ceilings were looked for in {} bins, not 100 ms: the capture is too long for that many; a cap \
             held for less than about {} would not show)",
            seconds(r.ceiling_bin_s),
            seconds(r.ceiling_bin_s * 20.0)
        );
    }
    for c in &r.ceilings {
        let other = if c.kind == Measure::Packets {
            rate(Measure::Bits, c.other_value)
        } else {
            rate(Measure::Packets, c.other_value)
        };
        let _ = writeln!(
            out,
            "CEILING: {} {} pinned at {} from {} for {} (flat: {}), while {} with {}-byte packets",
            c.server.as_deref().unwrap_or("all traffic"),
            direction_words(c.direction),
            rate(c.kind, c.value),
            instant(c.start),
            seconds(c.end - c.start),
            variation(c.flatness_cv),
            other,
            count(c.mean_packet_bytes.round() as u64)
        );
        for e in &c.evidence {
            let _ = writeln!(out, "  evidence: {}", visible(e));
        }
    }
    let _ = writeln!(
        out,
        "\nall TCP traffic, per {}{} (c2s: client to server, s2c: server to client; resent: retransmitted \
         packets, both ways; rates per second of the capture in each interval: see \"Per second\" in the \
         README):",
        seconds(r.interval_s),
        widened(r.interval_s, r.asked_interval_s)
    );
    let starts: Vec<String> = r.total.iter().take(600).map(|p| instant(p.start)).collect();
    let start_w = column_width("interval start", &starts);
    let _ = writeln!(
        out,
        "{:<start_w$} {:>11} {:>13} {:>11} {:>13} {:>7}",
        "interval start", "c2s pkt/s", "c2s bit/s", "s2c pkt/s", "s2c bit/s", "resent"
    );
    for (p, start) in r.total.iter().zip(&starts) {
        let _ = writeln!(
            out,
            "{:<start_w$} {:>11} {:>13} {:>11} {:>13} {:>7}{}",
            start,
            count(p.c2s_pps.round() as u64),
            rate(Measure::Bits, p.c2s_bps),
            count(p.s2c_pps.round() as u64),
            rate(Measure::Bits, p.s2c_bps),
            count(p.c2s_retrans + p.s2c_retrans),
            covered_note(p.covered_s, r.interval_s)
        );
    }
    if r.total.len() > 600 {
        let _ = writeln!(
            out,
            "… and {} more intervals (see --json)",
            count((r.total.len() - 600) as u64)
        );
    }
    render_path(&mut out, r, &starts, start_w);
    let servers: Vec<String> = r.servers.keys().cloned().collect();
    let _ = writeln!(
        out,
        "\nservers: {}",
        if servers.is_empty() {
            NONE.to_string()
        } else {
            list(&servers, width() - "servers: ".len())
        }
    );
    visible_lines_owned(out)
}

/// What a series' intervals say when they are wider than asked: the capture was too long for that many
/// (see `pcapsleuth_analysis`'s widening); empty when they are as asked.
fn widened(used_s: f64, asked_s: f64) -> String {
    if used_s > asked_s {
        format!(
            ", not {} as asked: the capture is too long for that many intervals, so each holds {} of them",
            seconds(asked_s),
            count((used_s / asked_s).round() as u64)
        )
    } else {
        String::new()
    }
}

/// The path per interval under `rate`'s table, when it was timed: the round trip each way (median and
/// minimum), duplicate ACKs, retransmissions by kind and zero-window time.
fn render_path(out: &mut String, r: &RateReport, starts: &[String], start_w: usize) {
    if !r.total.iter().any(|p| p.path.is_some()) {
        return;
    }
    let _ = writeln!(
        out,
        "\nthe path per {} (RTT: data to the ACK that first covers it, median (min), at the capture point: \
         \"to server\" is client data the server acknowledged, \"to client\" server data the client \
         acknowledged; an ACK riding on a response or the next request adds the server's or the client's \
         turnaround; dup ACKs both ways; resent by the sender's reason: fast retransmit, timeout, tail \
         loss probe, other; zero window: time the client / the server advertised none, summed over \
         connections):",
        seconds(r.interval_s)
    );
    let _ = writeln!(
        out,
        "{:<start_w$} {:>17} {:>17} {:>6} {:>4} {:>4} {:>4} {:>5} {:>8} {:>15}",
        "interval start",
        "RTT to server",
        "RTT to client",
        "dupACK",
        "fast",
        "RTO",
        "TLP",
        "other",
        "spurious",
        "zero window c/s"
    );
    let rtt = |s: &Option<pcapsleuth_analysis::RtSummary>| match s {
        Some(s) if s.count > 0 => format!("{} ({})", duration(s.p50), duration(s.min)),
        _ => NONE.to_string(),
    };
    let zero = |v: f64| {
        if v > 0.0 {
            seconds(v)
        } else {
            "0".to_string()
        }
    };
    // The partial intervals are marked in the table above.
    for (p, start) in r.total.iter().zip(starts) {
        let Some(x) = &p.path else { continue };
        let (c, s) = (&x.c2s_resends, &x.s2c_resends);
        let _ = writeln!(
            out,
            "{:<start_w$} {:>17} {:>17} {:>6} {:>4} {:>4} {:>4} {:>5} {:>8} {:>15}",
            start,
            rtt(&x.rtt_to_server_us),
            rtt(&x.rtt_to_client_us),
            count(x.c2s_dup_acks + x.s2c_dup_acks),
            count(c.fast_retransmit + s.fast_retransmit),
            count(c.timeout + s.timeout),
            count(c.tail_loss_probe + s.tail_loss_probe),
            count(c.other + s.other),
            count(c.spurious + s.spurious),
            format!(
                "{}/{}",
                zero(x.client_zero_window_s),
                zero(x.server_zero_window_s)
            )
        );
    }
}

/// What `pcapsleuth rt` prints: the response-time percentiles (µs and ms as fits), of MySQL requests or,
/// when the capture has none, of TCP request/response turns ([`RtSource`]), the connect times, the
/// distribution's modes and what its slow requests share; with `per_interval`, one row per interval
/// (`--per-second`/`--per-minute`) as well.
pub fn render_rt(r: &RtReport, per_interval: bool) -> String {
    let mut out = String::new();
    let p = &r.percentiles_us;
    let source = |n: u64| {
        if r.source == RtSource::Mysql {
            format!(
                "{} (request to last response byte)",
                counted(n, "MySQL request", "MySQL requests")
            )
        } else {
            format!(
                "{} (client data to the server's next data)",
                counted(n, "TCP request/response", "TCP requests/responses")
            )
        }
    };
    let _ = writeln!(out, "response time of {}", source(p.count));
    // Beside the distribution, never in it: these exchanges were timed from TLS records, not decoded.
    let estimated = |out: &mut String| {
        let e = &r.estimated_from_tls_records;
        if e.sessions > 0 {
            let _ = writeln!(
                out,
                "response time estimated from TLS records, not decoded ({} not decrypted; not in the \
                 figures above): {}",
                counted(e.sessions, "MySQL session", "MySQL sessions"),
                stats(&e.rt_us, "exchange", "exchanges")
            );
        }
    };
    if p.count == 0 {
        let _ = writeln!(
            out,
            "  {NONE} (no request was answered in the capture: no distribution, no humps)"
        );
        estimated(&mut out);
        return visible_lines_owned(out);
    }
    let _ = writeln!(
        out,
        "  min {}  p50 {}  p95 {}  p99 {}  max {}  mean {}",
        duration(p.min),
        duration(p.p50),
        duration(p.p95),
        duration(p.p99),
        duration(p.max),
        duration(p.mean)
    );
    let c = &r.connect_us;
    if c.count > 0 {
        let _ = writeln!(
            out,
            "connect of {} (first SYN to the login's answer): p50 {}  p95 {}  max {}",
            counted(c.count, "MySQL login", "MySQL logins"),
            duration(c.p50),
            duration(c.p95),
            duration(c.max)
        );
    }
    estimated(&mut out);
    if r.multimodal {
        let _ = writeln!(out, "\nMULTIMODAL: {} humps", r.modes.len());
    } else {
        let _ = writeln!(out, "\none hump");
    }
    for m in &r.modes {
        let _ = writeln!(
            out,
            "  {:>6} ({:>7}) at ~{:<9} spans {} .. {}  (its middle half spans {}: p75/p25)",
            percent(m.share),
            count(m.count),
            duration(m.center_us),
            duration(m.lo_us),
            duration(m.hi_us),
            times(m.spread)
        );
    }
    let first_s = r.timeline.body_first.map(|t| t.0 as f64 / 1e9);
    for s in &r.slow_modes {
        let _ = writeln!(
            out,
            "  the hump at ~{} ({}):",
            duration(s.center_us),
            counted(s.count, "request", "requests")
        );
        if let Some(c) = &s.cause {
            let _ = writeln!(out, "    cause ({}): {}", c.confidence.name(), c.summary);
        }
        for line in pcapsleuth_analysis::hump_lines(s, first_s) {
            let _ = writeln!(out, "    {line}");
        }
    }
    // A log-scale histogram as text: 10% bins, bars scaled to the largest.
    let mut coarse: Vec<(f64, f64, u64)> = Vec::new();
    for b in &r.histogram {
        match coarse.last_mut() {
            Some(last) if b.hi_us <= last.0 * 1.26 => {
                last.1 = b.hi_us;
                last.2 += b.count;
            }
            _ => coarse.push((b.lo_us.max(0.001), b.hi_us, b.count)),
        }
    }
    let peak = coarse.iter().map(|c| c.2).max().unwrap_or(1).max(1);
    let _ = writeln!(out, "\nhistogram (log bins):");
    for (lo, hi, n) in &coarse {
        let bar = "#".repeat(((*n as f64 / peak as f64) * 50.0).ceil() as usize);
        let _ = writeln!(
            out,
            "  {:>9} .. {:<9} {:>8} {}",
            duration(*lo),
            duration(*hi),
            count(*n),
            bar
        );
    }
    if per_interval {
        render_rt_intervals(&mut out, r);
    }
    visible_lines_owned(out)
}

/// `rt --per-interval`'s table: a row per interval, server and kind, with the round trip each way when
/// the path was timed.
fn render_rt_intervals(out: &mut String, r: &RtReport) {
    let _ = writeln!(
        out,
        "\nper interval ({}{}) and server:",
        seconds(r.interval_s),
        widened(r.interval_s, r.asked_interval_s)
    );
    if r.rtt_timed {
        let _ = writeln!(
            out,
            "(RTT srv/cli: the median round trip to the server / to the client in the interval, data to the \
             ACK that first covers it at the capture point, as `rate` shows it; unknown: no sample)"
        );
    }
    let starts: Vec<String> = r.per_interval.iter().map(|i| instant(i.start)).collect();
    let start_w = column_width("interval start", &starts);
    let server_w = column_width("server", r.per_interval.iter().map(|i| &i.server));
    let rtt = |s: &Option<pcapsleuth_analysis::RtSummary>| match s {
        Some(s) if s.count > 0 => duration(s.p50),
        _ => "unknown".to_string(),
    };
    let rtts: Vec<String> = r
        .per_interval
        .iter()
        .map(|i| {
            if r.rtt_timed {
                format!("{}/{}", rtt(&i.rtt_to_server_us), rtt(&i.rtt_to_client_us))
            } else {
                String::new()
            }
        })
        .collect();
    let rtt_header = if r.rtt_timed { "RTT srv/cli" } else { "" };
    let rtt_w = column_width(rtt_header, &rtts);
    let _ = writeln!(
        out,
        "{}",
        format!(
            "{:<start_w$} {:>server_w$} {:<8} {:>5} {:>8} {:>8} {:>8} {:>6} {:>rtt_w$}",
            "interval start", "server", "what", "count", "mean", "p95", "p99", "errors", rtt_header
        )
        .trim_end()
    );
    for ((i, start), rtt) in r.per_interval.iter().zip(&starts).zip(&rtts) {
        let row = format!(
            "{:<start_w$} {:>server_w$} {:<8} {:>5} {:>8} {:>8} {:>8} {:>6} {:>rtt_w$}",
            start,
            i.server,
            match i.kind {
                IntervalKind::Requests => "requests",
                IntervalKind::Connect => "connect",
            },
            count(i.count),
            duration_or_none(i.count, i.mean_us),
            duration_or_none(i.count, i.p95_us),
            duration_or_none(i.count, i.p99_us),
            count(i.errors),
            rtt,
        );
        let _ = writeln!(
            out,
            "{}{}",
            row.trim_end(),
            covered_note(i.covered_s, r.interval_s)
        );
    }
}

/// The report's counts and response time in one line: "4 TCP connections, 4 MySQL sessions, 2,004 MySQL
/// requests (2,004 answered); response time p50 139 µs p99 20.32 ms" (the text report and the HTML page).
pub(crate) fn counts_line(r: &FullReport) -> String {
    let m = &r.mysql;
    format!(
        "{}, {}, {} ({}); response time p50 {} p99 {}",
        counted(
            r.first_reset.connections as u64,
            "TCP connection",
            "TCP connections"
        ),
        counted(m.sessions, "MySQL session", "MySQL sessions"),
        counted(m.queries, "MySQL request", "MySQL requests"),
        m.requests.describe(),
        duration_or_none(r.rt.percentiles_us.count, r.rt.percentiles_us.p50),
        duration_or_none(r.rt.percentiles_us.count, r.rt.percentiles_us.p99)
    )
}

/// What `pcapsleuth report` prints: the findings, most important first, each with its evidence, then the
/// capture's span, its connections, MySQL sessions and requests, the response-time p50 and p99, the
/// replication streams and the requests still unanswered when the capture ended.
pub fn render_report(r: &FullReport) -> String {
    let mut out = String::new();
    if r.findings.is_empty() && r.first_reset.connections == 0 {
        let _ = writeln!(
            out,
            "No TCP connection found in the capture: nothing to judge."
        );
    } else if r.findings.is_empty() {
        let _ = writeln!(out, "Nothing abnormal found.");
    }
    for (i, f) in r.findings.iter().enumerate() {
        let _ = writeln!(out, "{}. [{}] {}", i + 1, f.kind, visible(&f.summary));
        if let Some(c) = &f.cause {
            // The first abnormal close with the facts its cause rests on, as `first-reset` gives them,
            // and a slow hump's with its (the error's frames, why its wait is a timer's).
            let evidence = matches!(
                f.kind,
                FindingKind::FirstAbnormalClose | FindingKind::SlowHump
            );
            crate::text::describe_cause(&mut out, "     ", c, evidence);
        }
        for e in &f.evidence {
            let _ = writeln!(out, "     {}", visible(e));
        }
        if let Some(filter) = &f.wireshark_filter {
            let _ = writeln!(out, "     Wireshark: {}", visible(filter));
        }
        if let Some(command) = &f.extract_command {
            out.push_str(&command_lines("     extract: ", &visible(command), 9));
        }
    }
    if let (Some(first), Some(last)) = (r.timeline.body_first, r.timeline.body_last) {
        let _ = writeln!(
            out,
            "\ncapture: {} to {} ({}){}",
            instant_ns(first.0),
            instant_ns(last.0),
            span(last.0 - first.0),
            if r.timeline.wild_packets > 0 {
                format!(
                    "; {} with a timestamp outside it left out of time series",
                    counted(r.timeline.wild_packets, "packet", "packets")
                )
            } else {
                String::new()
            }
        );
    }
    let m = &r.mysql;
    let _ = writeln!(out, "\n{}", counts_line(r));
    crate::text::write_servers(&mut out, &m.servers);
    crate::replication::write_streams(&mut out, &m.replication);
    if let Some(longest) = m
        .unanswered
        .iter()
        .max_by(|a, b| a.waited_s.total_cmp(&b.waited_s))
    {
        let _ = writeln!(
            out,
            "{} still unanswered when the capture ended, the longest for {} (request frame {}, {} -> {})",
            counted(m.unanswered.len() as u64, "request", "requests"),
            seconds(longest.waited_s),
            longest.request_frame,
            longest.client,
            longest.server
        );
    }
    visible_lines_owned(out)
}
