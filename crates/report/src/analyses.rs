//! Text for `rate`, `rt` and `report`.

use std::fmt::Write;

use pcapsleuth_analysis::{FullReport, IntervalKind, RateReport, RtReport, RtSource};

use pcapsleuth_analysis::units::{
    counted, direction_words, duration_us as us, rate, seconds, Measure, NONE,
};

use crate::text::utc;

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
    for c in &r.ceilings {
        let other = if c.kind == Measure::Packets {
            rate(Measure::Bits, c.other_value)
        } else {
            rate(Measure::Packets, c.other_value)
        };
        let _ = writeln!(
            out,
            "CEILING: {} {} pinned at {} from {} for {:.1} s (flatness cv {:.3}), while {} with {:.0}-byte packets",
            c.server.as_deref().unwrap_or("all traffic"),
            direction_words(c.direction),
            rate(c.kind, c.value),
            utc(c.start),
            c.end - c.start,
            c.flatness_cv,
            other,
            c.mean_packet_bytes
        );
        for e in &c.evidence {
            let _ = writeln!(out, "  evidence: {e}");
        }
    }
    let _ = writeln!(
        out,
        "\nall TCP traffic, per {} s (client->server | server->client):",
        r.interval_s
    );
    let _ = writeln!(
        out,
        "{:<30} {:>10} {:>13} {:>10} {:>13} {:>6}",
        "interval start", "c2s pkt/s", "c2s bit/s", "s2c pkt/s", "s2c bit/s", "retr"
    );
    for p in r.total.iter().take(600) {
        let _ = writeln!(
            out,
            "{:<30} {:>10.0} {:>13} {:>10.0} {:>13} {:>6}",
            utc(p.start),
            p.c2s_pps,
            rate(Measure::Bits, p.c2s_bps),
            p.s2c_pps,
            rate(Measure::Bits, p.s2c_bps),
            p.c2s_retrans + p.s2c_retrans
        );
    }
    if r.total.len() > 600 {
        let _ = writeln!(
            out,
            "... {} more intervals (see --json)",
            r.total.len() - 600
        );
    }
    let _ = writeln!(
        out,
        "\nservers: {}",
        if r.servers.is_empty() {
            NONE.to_string()
        } else {
            r.servers.keys().cloned().collect::<Vec<_>>().join(", ")
        }
    );
    out
}

/// What `pcapsleuth rt` prints: the response-time percentiles (µs and ms as fits), of MySQL requests or,
/// when the capture has none, of TCP request/response turns ([`RtSource`]), the connect times, the
/// distribution's modes and what its slow requests share; with `per_interval`, one row per interval
/// (`--per-second`/`--per-minute`) as well.
pub fn render_rt(r: &RtReport, per_interval: bool) -> String {
    let mut out = String::new();
    let p = &r.percentiles_us;
    let source = if r.source == RtSource::Mysql {
        "MySQL requests (request to last response byte)"
    } else {
        "TCP request/response (client data to the server's next data)"
    };
    let _ = writeln!(out, "response time of {} {}", p.count, source);
    if p.count == 0 {
        let _ = writeln!(
            out,
            "  {NONE} (no request was answered in the capture: no distribution, no humps)"
        );
        return out;
    }
    let _ = writeln!(
        out,
        "  min {}  p50 {}  p95 {}  p99 {}  max {}  mean {}",
        us(p.min),
        us(p.p50),
        us(p.p95),
        us(p.p99),
        us(p.max),
        us(p.mean)
    );
    let c = &r.connect_us;
    if c.count > 0 {
        let _ = writeln!(
            out,
            "connect of {} MySQL logins (first SYN to the login's answer): p50 {}  p95 {}  max {}",
            c.count,
            us(c.p50),
            us(c.p95),
            us(c.max)
        );
    }
    if r.multimodal {
        let _ = writeln!(out, "\nMULTIMODAL: {} humps", r.modes.len());
    } else {
        let _ = writeln!(out, "\none hump");
    }
    for m in &r.modes {
        let _ = writeln!(
            out,
            "  {:>5.1}% ({:>7}) at ~{:<9} spans {} .. {}  (spread p75/p25 {:.2})",
            100.0 * m.share,
            m.count,
            us(m.center_us),
            us(m.lo_us),
            us(m.hi_us),
            m.spread
        );
    }
    for s in &r.slow_modes {
        let _ = writeln!(out, "  the hump at ~{}:", us(s.center_us));
        let _ = writeln!(
            out,
            "    {:.0}% of its requests saw a retransmission, {:.0}% were errors",
            100.0 * s.retransmitted_share,
            100.0 * s.error_share
        );
        for (fp, share) in &s.statements {
            let _ = writeln!(
                out,
                "    {:.0}%: {}",
                100.0 * share,
                fp.chars().take(100).collect::<String>()
            );
        }
        for (t, share) in &s.time_windows {
            let _ = writeln!(
                out,
                "    {:.0}% in the interval from {}",
                100.0 * share,
                utc(*t)
            );
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
        let _ = writeln!(out, "  {:>9} .. {:<9} {:>8} {}", us(*lo), us(*hi), n, bar);
    }
    if per_interval {
        let _ = writeln!(out, "\nper interval ({} s) and server port:", r.interval_s);
        let _ = writeln!(
            out,
            "{:<30} {:>6} {:<8} {:>8} {:>10} {:>10} {:>10} {:>7}",
            "interval start", "port", "what", "count", "mean", "p95", "p99", "errors"
        );
        for i in &r.per_interval {
            let _ = writeln!(
                out,
                "{:<30} {:>6} {:<8} {:>8} {:>10} {:>10} {:>10} {:>7}",
                utc(i.start),
                i.port,
                match i.kind {
                    IntervalKind::Requests => "requests",
                    IntervalKind::Connect => "connect",
                },
                i.count,
                us(i.mean_us),
                us(i.p95_us),
                us(i.p99_us),
                i.errors
            );
        }
    }
    out
}

/// A percentile of `n` response times, or "—" when there are none.
fn rt_or_none(n: u64, us_value: f64) -> String {
    if n == 0 {
        NONE.to_string()
    } else {
        us(us_value)
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
        rt_or_none(r.rt.percentiles_us.count, r.rt.percentiles_us.p50),
        rt_or_none(r.rt.percentiles_us.count, r.rt.percentiles_us.p99)
    )
}

/// What `pcapsleuth report` prints: the findings, most important first, each with its evidence, then the
/// capture's span, its connections, MySQL sessions and requests, the response-time p50 and p99, the
/// replication streams and the requests still unanswered when the capture ended.
pub fn render_report(r: &FullReport) -> String {
    let mut out = String::new();
    if r.findings.is_empty() && r.first_reset.connections == 0 {
        let _ = writeln!(out, "No TCP connection in the capture: nothing to judge.");
    } else if r.findings.is_empty() {
        let _ = writeln!(out, "Nothing abnormal found.");
    }
    for (i, f) in r.findings.iter().enumerate() {
        let _ = writeln!(out, "{}. [{}] {}", i + 1, f.kind, f.summary);
        for e in &f.evidence {
            let _ = writeln!(out, "     {e}");
        }
        if let Some(filter) = &f.wireshark_filter {
            let _ = writeln!(out, "     Wireshark: {filter}");
        }
        if let Some(command) = &f.extract_command {
            let _ = writeln!(out, "     extract: {command}");
        }
    }
    if let Some(span) = r.timeline.span_text() {
        let _ = writeln!(out, "\ncapture: {span}");
    }
    let m = &r.mysql;
    let _ = writeln!(out, "\n{}", counts_line(r));
    crate::replication::write_streams(&mut out, &m.replication);
    if let Some(longest) = m
        .unanswered
        .iter()
        .max_by(|a, b| a.waited_s.total_cmp(&b.waited_s))
    {
        let _ = writeln!(
            out,
            "{} {} still unanswered when the capture ended, the longest for {} (request frame {}, {} -> {})",
            m.unanswered.len(),
            if m.unanswered.len() == 1 { "request" } else { "requests" },
            seconds(longest.waited_s),
            longest.request_frame,
            longest.client,
            longest.server
        );
    }
    out
}
