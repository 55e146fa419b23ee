//! `pcapsleuth diff` for people: the verdict first, then what each run was and what was matched with
//! what, the runs side by side (response times, load, connections, path), their humps, the statements
//! by the time they added or saved, the errors and the servers.

use std::fmt::Write;

use pcapsleuth_analysis::{
    statement_label, Change, CountTest, Diff, Pair, RankTest, RateTest, ResendCounts, RtSummary,
    RunSummary, StatementDiff,
};

use crate::style::{
    count, counted, duration, duration_or_none, percent, rate, row, seconds, significant, size,
    Measure, NONE,
};

/// `pcapsleuth diff` for people: at most `limit` statement groups listed (the JSON has them all).
pub fn render_diff(d: &Diff, limit: usize) -> String {
    let mut out = String::new();
    for (name, run) in [("A", &d.runs.a), ("B", &d.runs.b)] {
        if !run.unknowns.is_empty() {
            let _ = writeln!(
                out,
                "Partial data in run {name} (figures below are qualified by it):"
            );
            for n in &run.unknowns {
                let _ = writeln!(out, "  * {n}");
            }
            out.push('\n');
        }
    }
    let _ = writeln!(out, "{}\n", d.verdict);
    for (name, run) in [("A", &d.runs.a), ("B", &d.runs.b)] {
        let _ = writeln!(out, "{name}: {}", run_line(run));
    }
    let _ = writeln!(out, "Matched: {}.", d.matched.notes.join("; "));
    let tests = d.statements.iter().filter(|s| s.test.is_some()).count()
        + d.servers.iter().filter(|s| s.test.is_some()).count()
        + usize::from(d.rt_us.test.is_some())
        + usize::from(d.load.think_time_us.test.is_some())
        + usize::from(d.path.rtt_to_server_us.test.is_some())
        + usize::from(d.path.rtt_to_client_us.test.is_some());
    let _ = writeln!(
        out,
        "Judged: a change of times is called when the Mann-Whitney rank test of the two distributions gives \
         p < {} after Holm's correction over this diff's {} and P(B > A) is outside {}-{}; a change of rates \
         when the conditional binomial test of two Poisson rates gives p < {} and the rate moved by {} or more.",
        d.method.level,
        counted(tests as u64, "test", "tests"),
        0.5 - d.method.min_effect,
        0.5 + d.method.min_effect,
        d.method.rate_level,
        percent(d.method.min_rate_change)
    );

    side_by_side(&mut out, d);
    humps(&mut out, d);
    statements(&mut out, d, limit);
    errors(&mut out, d);
    servers(&mut out, d);
    for (name, ceilings) in [("A", &d.ceilings.a), ("B", &d.ceilings.b)] {
        for c in ceilings {
            let _ = writeln!(
                out,
                "ceiling in {name}: {} {} pinned at {} for {}",
                c.server.as_deref().unwrap_or("all traffic"),
                pcapsleuth_analysis::units::direction_words(c.direction),
                rate(c.kind, c.value),
                seconds(c.end - c.start)
            );
        }
    }
    out
}

/// "fixtures/a.pcap: 2,408 requests in 2.97 s (810 per second), 4 sessions; captured at the client".
fn run_line(run: &RunSummary) -> String {
    let files = match &run.files[..] {
        [one] => one.clone(),
        [first, .., last] => format!("{} files ({first} ... {last})", run.files.len()),
        [] => NONE.to_string(),
    };
    let per_s = if run.request_span_s > 0.0 {
        format!(
            " ({} per second)",
            significant(run.requests as f64 / run.request_span_s, 3)
        )
    } else {
        String::new()
    };
    let point = match run.capture_point {
        pcapsleuth_analysis::CapturePoint::Client => {
            "; captured at the client (its handshakes say)"
        }
        pcapsleuth_analysis::CapturePoint::Server => {
            "; captured at the server (its handshakes say)"
        }
        pcapsleuth_analysis::CapturePoint::Unknown => "",
    };
    format!(
        "{files}: {} in {}{per_s}, {}{point}",
        counted(run.requests, "request", "requests"),
        seconds(run.request_span_s),
        counted(run.sessions, "MySQL session", "MySQL sessions"),
    )
}

/// A test's result in a cell: "slower (p 1e-12, P(B>A) 0.99)", "within noise", or "—"; `words` say
/// which way is which ("slower"/"faster", "longer"/"shorter").
fn judged(test: &Option<RankTest>, words: (&str, &str)) -> String {
    match test {
        None => NONE.to_string(),
        Some(t) if t.significant => format!(
            "{} (p {}, P(B>A) {:.2})",
            if t.effect > 0.5 { words.0 } else { words.1 },
            p_value(t.p),
            t.effect
        ),
        Some(t) => format!("within noise (p {}, P(B>A) {:.2})", p_value(t.p), t.effect),
    }
}

/// A p-value in two significant digits, "< 1e-15" below what the approximation tells.
fn p_value(p: f64) -> String {
    if p < 1e-15 {
        "< 1e-15".to_string()
    } else if p < 0.001 {
        format!("{p:.1e}")
    } else {
        significant(p, 2)
    }
}

/// B's figure relative to A's: "41.2×", "+3.7%", "-94%".
fn relative(a: f64, b: f64) -> String {
    if a == 0.0 {
        return if b == 0.0 {
            String::new()
        } else {
            "new".to_string()
        };
    }
    let r = b / a;
    if r >= 2.0 {
        format!("{}×", significant(r, 3))
    } else {
        let c = r - 1.0;
        format!("{}{}", if c >= 0.0 { "+" } else { "-" }, percent(c.abs()))
    }
}

/// A count test's result in a cell, as [`rate_judged`]'s, saying that it compares counts per request.
fn count_judged(test: &Option<CountTest>) -> String {
    match test {
        Some(t) if t.significant => format!("beyond noise per request (p {})", p_value(t.p)),
        Some(t) => format!("within noise per request (p {})", p_value(t.p)),
        None => String::new(),
    }
}

/// A rate test's result in a cell: "beyond noise (p 1e-12)", "within noise (p 0.42)", or nothing.
fn rate_judged(test: &Option<RateTest>) -> String {
    match test {
        Some(t) if t.significant => format!("beyond noise (p {})", p_value(t.p)),
        Some(t) => format!("within noise (p {})", p_value(t.p)),
        None => String::new(),
    }
}

/// A rate's change from A to B, with its test's result after it when there is one.
fn rate_change(a: f64, b: f64, test: &Option<RateTest>) -> String {
    let judged = rate_judged(test);
    if judged.is_empty() {
        relative(a, b)
    } else {
        format!("{} {judged}", relative(a, b))
    }
}

/// One row of the side-by-side table: what, A's figure, B's, and the change.
fn side_row(out: &mut String, what: &str, a: String, b: String, change: String) {
    let _ = writeln!(out, "{what:<26} {a:>15} {b:>15}  {change}");
}

/// A count in each run, for a row.
fn pair_counts(p: &Pair<u64>) -> (String, String) {
    (count(p.a), count(p.b))
}

/// The rows of a distribution of times: its p50 with the rank test's result, then p95, p99 and mean.
fn time_rows(
    out: &mut String,
    name: &str,
    a: &RtSummary,
    b: &RtSummary,
    test: &Option<RankTest>,
    words: (&str, &str),
) {
    let cell = |s: &RtSummary, v: f64| duration_or_none(s.count, v);
    side_row(
        out,
        &format!("{name} p50"),
        cell(a, a.p50),
        cell(b, b.p50),
        format!("{}  {}", relative(a.p50, b.p50), judged(test, words)),
    );
    for (what, x, y) in [
        ("p95", a.p95, b.p95),
        ("p99", a.p99, b.p99),
        ("mean", a.mean, b.mean),
    ] {
        side_row(
            out,
            &format!("{:>width$}", what, width = name.len() + 4),
            cell(a, x),
            cell(b, y),
            relative(x, y),
        );
    }
}

/// The runs side by side: the load, the connections, the path, the errors and the throughput.
fn side_by_side(out: &mut String, d: &Diff) {
    let _ = writeln!(out, "\n{:<26} {:>15} {:>15}  change", "", "A", "B");
    load_rows(out, d);
    connection_rows(out, d);
    path_rows(out, d);
    let errors = Pair {
        a: d.errors.iter().map(|e| e.count.a).sum::<u64>(),
        b: d.errors.iter().map(|e| e.count.b).sum::<u64>(),
    };
    let (a, b) = pair_counts(&errors);
    side_row(out, "error responses", a, b, String::new());
    throughput_rows(out, d);
}

/// The load side by side: requests per second, response and think times, requests in flight, the
/// transactions (when there are any) and the connections that sent requests.
fn load_rows(out: &mut String, d: &Diff) {
    let rt = &d.rt_us;
    let r = &d.load.requests_per_s;
    side_row(
        out,
        "requests per second",
        significant(r.a, 3),
        significant(r.b, 3),
        rate_change(r.a, r.b, &d.load.rate_test),
    );
    time_rows(
        out,
        "response time",
        &rt.a,
        &rt.b,
        &rt.test,
        ("slower", "faster"),
    );
    if let Some(e) = &d.tls_estimated_us {
        time_rows(
            out,
            "TLS exchange (est.)",
            &e.a,
            &e.b,
            &e.test,
            ("slower", "faster"),
        );
    }
    if let Some(t) = &d.rt_tail {
        let judged = if t.significant {
            format!(
                "{} (p {})",
                if t.ratio > 1.0 { "slower" } else { "faster" },
                p_value(t.p)
            )
        } else {
            format!("within noise (p {})", p_value(t.p))
        };
        side_row(
            out,
            &format!("  {}+ (both p99)", duration(t.threshold_us)),
            percent(t.a_share()),
            percent(t.b_share()),
            format!("{}  {judged}", relative(t.a_share(), t.b_share())),
        );
    }
    let think = &d.load.think_time_us;
    time_rows(
        out,
        "think time",
        &think.a,
        &think.b,
        &think.test,
        ("longer", "shorter"),
    );
    side_row(
        out,
        "      p10",
        duration_or_none(think.a.count, d.load.think_p10_us.a),
        duration_or_none(think.b.count, d.load.think_p10_us.b),
        relative(d.load.think_p10_us.a, d.load.think_p10_us.b),
    );
    let f = &d.load.in_flight;
    side_row(
        out,
        "in flight (mean)",
        significant(f.a, 3),
        significant(f.b, 3),
        relative(f.a, f.b),
    );
    let (a, b) = pair_counts(&d.load.in_flight_max);
    side_row(out, "in flight (max)", a, b, String::new());
    transaction_rows(out, d);
    let (a, b) = pair_counts(&d.load.active_connections);
    side_row(out, "connections with requests", a, b, String::new());
    let m = &d.load.connection_medians_us;
    if m.a.count > 0 || m.b.count > 0 {
        let range = |s: &RtSummary| {
            if s.count == 0 {
                NONE.to_string()
            } else if duration(s.min) == duration(s.max) {
                duration(s.min)
            } else {
                format!("{}-{}", duration(s.min), duration(s.max)).replacen(" µs-", "-", 1)
            }
        };
        side_row(
            out,
            "connection medians",
            range(&m.a),
            range(&m.b),
            String::new(),
        );
    }
}

/// The transactions side by side, when either run has any: their rate, their time and the share of it
/// spent idle.
fn transaction_rows(out: &mut String, d: &Diff) {
    let tps = &d.load.transactions_per_s;
    if tps.a > 0.0 || tps.b > 0.0 {
        side_row(
            out,
            "transactions per second",
            significant(tps.a, 3),
            significant(tps.b, 3),
            rate_change(tps.a, tps.b, &d.load.transaction_rate_test),
        );
        let tx = &d.load.transaction_rt_us;
        time_rows(
            out,
            "transaction time",
            &tx.a,
            &tx.b,
            &tx.test,
            ("slower", "faster"),
        );
        let idle = &d.load.idle_in_transaction_share;
        side_row(
            out,
            "idle in transaction",
            percent(idle.a),
            percent(idle.b),
            String::new(),
        );
    }
}

/// The connections side by side: connects, refusals, resets and abnormal closes.
fn connection_rows(out: &mut String, d: &Diff) {
    let c = &d.connections;
    for (what, x, y) in [
        ("connects", c.a.connects, c.b.connects),
        ("connects refused", c.a.refused, c.b.refused),
        ("connections reset", c.a.resets, c.b.resets),
        ("abnormal closes", c.a.abnormal_closes, c.b.abnormal_closes),
    ] {
        side_row(out, what, count(x), count(y), String::new());
    }
}

/// The network path side by side: handshake and round-trip times, retransmissions by kind,
/// duplicate ACKs and zero windows.
fn path_rows(out: &mut String, d: &Diff) {
    let p = &d.path;
    for (what, s) in [
        ("handshake RTT p50", &p.handshake_rtt_us),
        ("  SYN to SYN-ACK p50", &p.syn_to_synack_us),
        ("  SYN-ACK to ACK p50", &p.synack_to_ack_us),
    ] {
        side_row(
            out,
            what,
            duration_or_none(s.a.count, s.a.p50),
            duration_or_none(s.b.count, s.b.p50),
            relative(s.a.p50, s.b.p50),
        );
    }
    for (what, c) in [
        ("RTT to server p50", &p.rtt_to_server_us),
        ("RTT to client p50", &p.rtt_to_client_us),
    ] {
        if c.a.count > 0 || c.b.count > 0 {
            side_row(
                out,
                what,
                duration_or_none(c.a.count, c.a.p50),
                duration_or_none(c.b.count, c.b.p50),
                format!(
                    "{}  {}",
                    relative(c.a.p50, c.b.p50),
                    judged(&c.test, ("longer", "shorter"))
                ),
            );
        }
    }
    let (a, b) = pair_counts(&p.retransmissions);
    side_row(
        out,
        "retransmissions",
        a,
        b,
        rate_judged(&p.resend_rate_test),
    );
    if p.retransmissions.a + p.retransmissions.b > 0 {
        resend_kind_rows(out, &p.c2s_resends, &p.s2c_resends);
    }
    side_row(
        out,
        "duplicate ACKs",
        count(p.dup_acks.a),
        count(p.dup_acks.b),
        rate_judged(&p.dup_ack_rate_test),
    );
    let (a, b) = pair_counts(&p.zero_windows);
    side_row(out, "zero windows", a, b, String::new());
    if p.zero_windows.a + p.zero_windows.b > 0 {
        for (what, n, test) in [
            (
                "  by the clients",
                &p.client_zero_windows,
                &p.client_zero_window_test,
            ),
            (
                "  by the server",
                &p.server_zero_windows,
                &p.server_zero_window_test,
            ),
        ] {
            let (a, b) = pair_counts(n);
            side_row(out, what, a, b, count_judged(test));
        }
    }
    let zero = |c: f64, s: f64| {
        if c + s > 0.0 {
            format!("{}/{}", seconds(c), seconds(s))
        } else {
            "0".to_string()
        }
    };
    side_row(
        out,
        "zero-window time c/s",
        zero(p.client_zero_window_s.a, p.server_zero_window_s.a),
        zero(p.client_zero_window_s.b, p.server_zero_window_s.b),
        String::new(),
    );
}

/// The retransmissions by kind, both directions added: `r` the client's resends, `s` the server's.
fn resend_kind_rows(out: &mut String, r: &Pair<ResendCounts>, s: &Pair<ResendCounts>) {
    for (what, x, y) in [
        (
            "  fast retransmit",
            r.a.fast_retransmit + s.a.fast_retransmit,
            r.b.fast_retransmit + s.b.fast_retransmit,
        ),
        (
            "  timeout",
            r.a.timeout + s.a.timeout,
            r.b.timeout + s.b.timeout,
        ),
        (
            "  tail loss probe",
            r.a.tail_loss_probe + s.a.tail_loss_probe,
            r.b.tail_loss_probe + s.b.tail_loss_probe,
        ),
        ("  other", r.a.other + s.a.other, r.b.other + s.b.other),
        (
            "  spurious (D-SACK)",
            r.a.spurious + s.a.spurious,
            r.b.spurious + s.b.spurious,
        ),
    ] {
        side_row(out, what, count(x), count(y), String::new());
    }
}

/// The packets and bits per second each way, side by side.
fn throughput_rows(out: &mut String, d: &Diff) {
    let t = &d.throughput;
    for (what, x, y, kind) in [
        (
            "client->server packets/s",
            t.a.c2s_pps,
            t.b.c2s_pps,
            Measure::Packets,
        ),
        (
            "server->client packets/s",
            t.a.s2c_pps,
            t.b.s2c_pps,
            Measure::Packets,
        ),
        (
            "client->server bits/s",
            t.a.c2s_bps,
            t.b.c2s_bps,
            Measure::Bits,
        ),
        (
            "server->client bits/s",
            t.a.s2c_bps,
            t.b.s2c_bps,
            Measure::Bits,
        ),
    ] {
        let cell = |v: f64| rate(kind, v).replace(" pkt/s", "").replace("bit/s", "b/s");
        side_row(out, what, cell(x), cell(y), relative(x, y));
    }
}

fn humps(out: &mut String, d: &Diff) {
    let _ = writeln!(out, "\nResponse-time humps side by side (center, share):");
    for (name, modes) in [("A", &d.humps.a), ("B", &d.humps.b)] {
        let each: Vec<String> = modes
            .iter()
            .map(|m| format!("~{} ({})", duration(m.center_us), percent(m.share)))
            .collect();
        let _ = writeln!(
            out,
            "  {name}: {}",
            if each.is_empty() {
                NONE.to_string()
            } else {
                each.join(", ")
            }
        );
    }
}

/// "48.1 µs → 2.31 ms" of one statistic of a statement in both runs.
fn arrow(a: Option<&RtSummary>, b: Option<&RtSummary>, pick: fn(&RtSummary) -> f64) -> String {
    let cell = |s: Option<&RtSummary>| match s {
        Some(s) if s.count > 0 => duration(pick(s)),
        _ => NONE.to_string(),
    };
    format!("{}→{}", cell(a), cell(b))
}

fn statements(out: &mut String, d: &Diff, limit: usize) {
    if d.statements.is_empty() {
        return;
    }
    let shown: Vec<&StatementDiff> = d.statements.iter().take(limit).collect();
    let counts: Vec<String> = shown
        .iter()
        .map(|s| {
            format!(
                "{}→{}",
                s.a.as_ref().map_or_else(|| "0".into(), |x| count(x.count)),
                s.b.as_ref().map_or_else(|| "0".into(), |x| count(x.count))
            )
        })
        .collect();
    let p50: Vec<String> = shown
        .iter()
        .map(|s| {
            arrow(
                s.a.as_ref().map(|x| &x.rt_us),
                s.b.as_ref().map(|x| &x.rt_us),
                |r| r.p50,
            )
        })
        .collect();
    let p99: Vec<String> = shown
        .iter()
        .map(|s| {
            arrow(
                s.a.as_ref().map(|x| &x.rt_us),
                s.b.as_ref().map(|x| &x.rt_us),
                |r| r.p99,
            )
        })
        .collect();
    let added: Vec<String> = shown
        .iter()
        .map(|s| match s.change {
            Change::Slower | Change::Faster => format!(
                "{}{}",
                if s.added_us >= 0.0 { "+" } else { "" },
                duration(s.added_us)
            ),
            _ => NONE.to_string(),
        })
        .collect();
    let w = |h: &str, v: &[String]| crate::style::column_width(h, v);
    let (wc, wp, wq, wa) = (
        w("count A→B", &counts),
        w("p50 A→B", &p50),
        w("p99 A→B", &p99),
        w("added", &added),
    );
    let _ = writeln!(
        out,
        "\nStatements by the time B added or saved{}:",
        if d.statements.len() > limit {
            format!(" (top {limit} of {})", count(d.statements.len() as u64))
        } else {
            String::new()
        }
    );
    let _ = writeln!(
        out,
        "  {:<9} {:>wc$}  {:>wp$}  {:>wq$}  {:>wa$}  statement",
        "change", "count A→B", "p50 A→B", "p99 A→B", "added"
    );
    for (i, s) in shown.iter().enumerate() {
        let columns = format!(
            "  {:<9} {:>wc$}  {:>wp$}  {:>wq$}  {:>wa$}  ",
            s.change.name(),
            counts[i],
            p50[i],
            p99[i],
            added[i]
        );
        let _ = writeln!(
            out,
            "{}",
            row(&columns, &statement_label(&s.command, &s.fingerprint))
        );
    }
}

fn errors(out: &mut String, d: &Diff) {
    if d.errors.is_empty() {
        return;
    }
    let _ = writeln!(out, "\nError responses:");
    let _ = writeln!(
        out,
        "  {:<6} {:<8} {:>8} {:>8}  {:<7}  message",
        "code", "SQLSTATE", "A", "B", "change"
    );
    for e in &d.errors {
        let columns = format!(
            "  {:<6} {:<8} {:>8} {:>8}  {:<7}  ",
            e.code,
            if e.sql_state.is_empty() {
                NONE
            } else {
                &e.sql_state
            },
            count(e.count.a),
            count(e.count.b),
            e.change
        );
        let _ = writeln!(
            out,
            "{}",
            row(&columns, e.messages.first().map_or(NONE, String::as_str))
        );
        for s in e.statements.iter().take(3) {
            let columns = format!(
                "  {:<6} {:<8} {:>8} {:>8}  {:<7}  ",
                "",
                "",
                count(s.count.a),
                count(s.count.b),
                ""
            );
            let _ = writeln!(
                out,
                "{}",
                row(
                    &columns,
                    &format!("answering {}", statement_label(&s.command, &s.fingerprint))
                )
            );
        }
    }
}

fn servers(out: &mut String, d: &Diff) {
    if d.servers.is_empty() {
        return;
    }
    let _ = writeln!(out, "\nServers (as matched):");
    for s in &d.servers {
        let name = match (&s.matched.a, &s.matched.b) {
            (Some(a), Some(b)) if a == b => a.clone(),
            (Some(a), Some(b)) => format!("{a} → {b}"),
            (Some(a), None) => format!("{a} (only in A)"),
            (None, Some(b)) => format!("{b} (only in B)"),
            (None, None) => NONE.to_string(),
        };
        let side = |r: &Option<pcapsleuth_analysis::ServerRow>| match r {
            Some(r) => format!(
                "{}, p50 {}, p99 {}, {}, {}, {} sent and {} received",
                counted(r.requests, "request", "requests"),
                duration_or_none(r.rt_us.count, r.rt_us.p50),
                duration_or_none(r.rt_us.count, r.rt_us.p99),
                counted(r.errors, "error", "errors"),
                counted(r.resets, "session reset", "sessions reset"),
                size(r.request_bytes),
                size(r.response_bytes)
            ),
            None => NONE.to_string(),
        };
        let _ = writeln!(out, "  {name}: {}", judged(&s.test, ("slower", "faster")));
        let _ = writeln!(out, "    A: {}", side(&s.a));
        let _ = writeln!(out, "    B: {}", side(&s.b));
    }
}
