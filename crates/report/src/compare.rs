//! `pcapsleuth compare` for people: the verdict first, then the response times of both capture points side
//! by side, their humps side by side, and the transactions whose time went somewhere specific, with their
//! frames in both captures.

use std::fmt::Write;

use pcapsleuth_analysis::{
    CaptureFacts, CapturedAs, ClockAlignment, ClockBasis, Comparison, EndingAt, EndingsComparison,
    RtSummary, SideBySideHumps, Unknowns,
};
use serde_json::Value;

use crate::located::locate_frames_json;
use crate::style::{count, counted, duration, instant, percent, NONE};
use crate::visible::{visible, visible_lines_owned};

/// One capture point of a comparison: what was read, and what it could not show.
pub struct ComparedCapture<'a> {
    /// What was read: files, packets, timeline.
    pub capture: &'a CaptureFacts,
    /// What it could not show (snap-length cuts, encrypted sessions, ...).
    pub unknowns: &'a Unknowns,
    /// The MySQL requests found in it (logins aside).
    pub requests: usize,
}

/// A signed duration in a table cell ("-1.2 ms", "88 µs", "—" when there is none).
fn cell(us: Option<f64>) -> String {
    us.map_or_else(|| NONE.to_string(), duration)
}

/// `842` in a capture of one file, `842 (big.pcap2 #42)` in a set.
fn frame_in(capture: &CaptureFacts, frame: u64) -> String {
    match capture.locate(frame) {
        Some((file, n)) if capture.files.len() > 1 => {
            format!("{frame} ({} #{n})", visible(&file.path))
        }
        _ => frame.to_string(),
    }
}

/// `frames 842 -> 923` (the request, the response's last byte), or `frame 842 -> (no response)`.
fn frames_of(capture: &CaptureFacts, seen: &CapturedAs) -> String {
    let request = frame_in(capture, seen.request_frame);
    match seen.response_frame {
        Some(r) => format!("frames {request} -> {}", frame_in(capture, r)),
        None => format!("frame {request} -> (no complete response)"),
    }
}

/// The files a capture point was read from, for the header.
fn files_of(capture: &CaptureFacts) -> String {
    match &capture.files[..] {
        [one] => visible(&one.path).into_owned(),
        many => format!(
            "{} files ({} ... {})",
            many.len(),
            visible(&many[0].path),
            visible(&many[many.len() - 1].path)
        ),
    }
}

/// `pcapsleuth compare` for people.
pub fn render_compare(
    cmp: &Comparison,
    endings: &EndingsComparison,
    client: &ComparedCapture<'_>,
    server: &ComparedCapture<'_>,
    per_interval: bool,
) -> String {
    let mut out = String::new();
    write_partial_data(&mut out, client, server);
    let _ = writeln!(out, "{}", cmp.verdict);
    if let Some(line) = endings_headline(endings) {
        let _ = writeln!(out, "{line}");
    }
    out.push('\n');
    write_captures(&mut out, cmp, client, server);
    write_clocks(&mut out, &cmp.clock);
    write_response_times(&mut out, cmp);
    write_humps(&mut out, &cmp.humps);
    if per_interval {
        write_per_interval(&mut out, cmp);
    }
    render_endings(&mut out, endings, client, server);
    write_notable(&mut out, cmp, client, server);
    visible_lines_owned(out)
}

/// What each capture point could not show, before anything else.
fn write_partial_data(
    out: &mut String,
    client: &ComparedCapture<'_>,
    server: &ComparedCapture<'_>,
) {
    for (name, side) in [("client", client), ("server", server)] {
        if !side.unknowns.notes.is_empty() {
            let _ = writeln!(
                out,
                "Partial data in the {name} capture (figures below are qualified by it):"
            );
            for n in &side.unknowns.notes {
                let _ = writeln!(out, "  * {n}");
            }
            out.push('\n');
        }
    }
}

/// The files of each capture point, and how many requests were matched and how (and why not the others).
fn write_captures(
    out: &mut String,
    cmp: &Comparison,
    client: &ComparedCapture<'_>,
    server: &ComparedCapture<'_>,
) {
    let _ = writeln!(
        out,
        "client capture: {} ({})\nserver capture: {} ({})",
        files_of(client.capture),
        counted(client.requests as u64, "request", "requests"),
        files_of(server.capture),
        counted(server.requests as u64, "request", "requests")
    );
    let _ = writeln!(
        out,
        "matched {} on {} ({} by 4-tuple and TCP sequence number, {} by payload); not found in the other capture: {} of the client's ({} sent while the server capture was not running), {} of the server's ({} while the client capture was not running)",
        counted(cmp.matched, "request", "requests"),
        counted(cmp.connections.paired, "pair of connections", "pairs of connections"),
        count(cmp.matched_by_sequence),
        count(cmp.matched_by_payload),
        count(cmp.unmatched_client),
        count(cmp.outside_other_capture.client),
        count(cmp.unmatched_server),
        count(cmp.outside_other_capture.server),
    );
}

/// How the two clocks were aligned: given, estimated (with its uncertainty and drift), or not at all.
fn write_clocks(out: &mut String, clock: &ClockAlignment) {
    let _ = match (clock.basis, clock.offset_us) {
        (ClockBasis::Given, Some(o)) => writeln!(out, "clocks: server - client = {} (given)", duration(o)),
        (ClockBasis::Estimated, Some(o)) => writeln!(
            out,
            "clocks: server - client = {} ± {}{} (estimated from {}{})",
            duration(o),
            duration(clock.uncertainty_us.unwrap_or(0.0)),
            clock
                .drift_ppm
                .map(|d| format!(", drifting {d:+.1} ppm"))
                .unwrap_or_default(),
            counted(clock.pairs, "pair", "pairs"),
            if clock.consistent {
                ""
            } else {
                "; not every pair agrees: the request and response paths are unreliable"
            }
        ),
        _ => writeln!(
            out,
            "clocks: not aligned (no matched request was answered at both points): request and response paths unknown"
        ),
    };
}

/// The transactions answered at both points: client and server response times, and the path between.
fn write_response_times(out: &mut String, cmp: &Comparison) {
    let columns: [(&str, &RtSummary); 5] = [
        ("client RT", &cmp.client_rt_us),
        ("server RT", &cmp.server_rt_us),
        ("path", &cmp.path_us),
        ("request path", &cmp.request_path_us),
        ("response path", &cmp.response_path_us),
    ];
    let _ = writeln!(
        out,
        "\nOf the {} answered at both points (path = client RT - server RT; request and response paths need the clocks):",
        counted(cmp.client_rt_us.count, "transaction", "transactions")
    );
    let _ = write!(out, "{:>6}", "");
    for (name, _) in &columns {
        let _ = write!(out, "  {name:>13}");
    }
    out.push('\n');
    type Pick = fn(&RtSummary) -> f64;
    let rows: [(&str, Pick); 6] = [
        ("mean", |r| r.mean),
        ("p50", |r| r.p50),
        ("p95", |r| r.p95),
        ("p99", |r| r.p99),
        ("min", |r| r.min),
        ("max", |r| r.max),
    ];
    for (name, pick) in rows {
        let _ = write!(out, "{name:>6}");
        for (_, r) in &columns {
            let v = (r.count > 0).then(|| pick(r));
            let _ = write!(out, "  {:>13}", cell(v));
        }
        out.push('\n');
    }
    if let Some(share) = cmp.path_share {
        let _ = writeln!(
            out,
            "the path's share of the client's time: {}",
            percent(share)
        );
    }
}

/// Each capture point's response-time humps side by side, each client hump with the server's and the
/// path's part of its transactions.
fn write_humps(out: &mut String, humps: &SideBySideHumps) {
    if !humps.client.is_empty() || !humps.server.is_empty() {
        let _ = writeln!(
            out,
            "\nResponse-time humps side by side (each client hump with the server's and the path's part of its transactions, p50):"
        );
        let _ = writeln!(
            out,
            "  {:<10} {:>5}  {:>12} {:>12} {:>8}    {:<10} {:>5}",
            "client", "share", "server part", "path part", "resent", "server", "share"
        );
        for i in 0..humps.client.len().max(humps.server.len()) {
            let left = match humps.client.get(i) {
                Some(h) => format!(
                    "~{:<9} {:>4.0}%  {:>12} {:>12} {:>7.0}%",
                    cell(Some(h.mode.center_us)),
                    h.mode.share * 100.0,
                    cell(Some(h.server_rt_p50_us)),
                    cell(Some(h.path_p50_us)),
                    h.retransmitted_share * 100.0
                ),
                None => format!("{:55}", ""),
            };
            let right = match humps.server.get(i) {
                Some(m) => format!("~{:<9} {:>4.0}%", cell(Some(m.center_us)), m.share * 100.0),
                None => String::new(),
            };
            let line = format!("  {left}    {right}");
            let _ = writeln!(out, "{}", line.trim_end());
        }
    }
}

/// The comparison per interval of the client's request time.
fn write_per_interval(out: &mut String, cmp: &Comparison) {
    if !cmp.per_interval.is_empty() {
        let _ = writeln!(
            out,
            "\nPer {} (by the client's request time): count, client RT mean/p95, server RT mean/p95, path mean and share",
            duration(cmp.interval_s * 1e6)
        );
        let starts: Vec<String> = cmp.per_interval.iter().map(|r| instant(r.start)).collect();
        let start_w = crate::style::column_width("start", &starts);
        let _ = writeln!(
            out,
            "  {:<start_w$} {:>7} {:>10} {:>10} {:>10} {:>10} {:>10} {:>6}",
            "start", "count", "client", "p95", "server", "p95", "path", "share"
        );
        for (r, start) in cmp.per_interval.iter().zip(&starts) {
            let _ = writeln!(
                out,
                "  {:<start_w$} {:>7} {:>10} {:>10} {:>10} {:>10} {:>10} {:>6}",
                start,
                count(r.count),
                cell(Some(r.client_rt_mean_us)),
                cell(Some(r.client_rt_p95_us)),
                cell(Some(r.server_rt_mean_us)),
                cell(Some(r.server_rt_p95_us)),
                cell(Some(r.path_mean_us)),
                r.path_share.map(percent).unwrap_or_else(|| NONE.into())
            );
        }
    }
}

/// The transactions whose time went somewhere specific, with their frames in both captures.
fn write_notable(
    out: &mut String,
    cmp: &Comparison,
    client: &ComparedCapture<'_>,
    server: &ComparedCapture<'_>,
) {
    let n = &cmp.notable_counts;
    let total =
        n.response_retransmitted + n.response_late + n.response_never_seen + n.request_never_seen;
    if total > 0 {
        let _ = writeln!(
            out,
            "\nNotable transactions: {total} ({} response retransmitted, {} response late, {} response never seen by the client, {} request never seen by the server){}:",
            n.response_retransmitted,
            n.response_late,
            n.response_never_seen,
            n.request_never_seen,
            if (cmp.notable.len() as u64) < total {
                format!("; the first {}", cmp.notable.len())
            } else {
                String::new()
            }
        );
        for (i, t) in cmp.notable.iter().enumerate() {
            let server_frames = match &t.server_capture {
                Some(s) => format!("server {}", frames_of(server.capture, s)),
                None => "not in the server capture".into(),
            };
            let _ = writeln!(
                out,
                "{:>3}. {} at {}: client {}, {server_frames}; client RT {}, server RT {}",
                i + 1,
                t.kind.name(),
                instant(t.at),
                frames_of(client.capture, &t.client_capture),
                cell(t.client_rt_us),
                cell(t.server_rt_us),
            );
            let what = t.statement.clone().unwrap_or_else(|| t.command.to_string());
            let _ = writeln!(out, "     `{}`", crate::text::statement(&what));
            let _ = writeln!(out, "     {}", visible(&t.detail));
        }
    }
}

/// `compare --json`: the comparison, with what each capture was and could not show, and each notable
/// transaction's frames also named in their files when a capture point was read from several.
pub fn compare_json(
    cmp: &Comparison,
    endings: &EndingsComparison,
    client: &ComparedCapture<'_>,
    server: &ComparedCapture<'_>,
) -> Value {
    let side = |c: &ComparedCapture<'_>| {
        serde_json::json!({
            "files": c.capture.files.iter().map(|f| f.path.clone()).collect::<Vec<_>>(),
            "packets": c.capture.counts.packets,
            "requests": c.requests,
            "unknowns": c.unknowns,
        })
    };
    let mut v = serde_json::to_value(cmp).unwrap_or(Value::Null);
    if let Some(notable) = v.get_mut("notable").and_then(Value::as_array_mut) {
        for n in notable {
            if let Some(c) = n.get_mut("client_capture") {
                locate_frames_json(c, client.capture);
            }
            if let Some(s) = n.get_mut("server_capture") {
                locate_frames_json(s, server.capture);
            }
        }
    }
    let mut ends = serde_json::to_value(endings).unwrap_or(Value::Null);
    if let Some(notable) = ends.get_mut("notable").and_then(Value::as_array_mut) {
        for n in notable {
            if let Some(c) = n.get_mut("client_capture").filter(|c| !c.is_null()) {
                locate_frames_json(c, client.capture);
            }
            if let Some(s) = n.get_mut("server_capture").filter(|s| !s.is_null()) {
                locate_frames_json(s, server.capture);
            }
        }
    }
    if let Some(o) = v.as_object_mut() {
        o.insert("endings".into(), ends);
        o.insert("client_capture".into(), side(client));
        o.insert("server_capture".into(), side(server));
    }
    v
}

/// The line under the verdict when the two points tell a connection's end differently: what a reader must
/// not miss (a device that closed both sides, a packet one end never sent).
fn endings_headline(e: &EndingsComparison) -> Option<String> {
    let c = &e.counts;
    let mut said = Vec::new();
    if c.device_closed_both > 0 {
        said.push(format!(
            "neither end closed {}: a device in between closed both sides",
            if c.device_closed_both == 1 {
                "one connection".to_string()
            } else {
                format!("{} connections", count(c.device_closed_both))
            }
        ));
    }
    if c.close_not_sent > 0 {
        said.push(format!(
            "{} arrived in the name of a side that never sent {} (a device on the path did)",
            counted(c.close_not_sent, "FIN or RST", "FINs or RSTs"),
            if c.close_not_sent == 1 { "it" } else { "them" }
        ));
    }
    if c.answered_at_neither > 0 {
        said.push(format!(
            "{} answered at neither point",
            counted(c.answered_at_neither, "request", "requests")
        ));
    }
    (!said.is_empty()).then(|| format!("Closes: {}.", said.join("; ")))
}

/// `frames 1489, 1490` at one point, or "(nothing)" when it has none of it.
fn ending_frames(capture: &CaptureFacts, at: &Option<EndingAt>) -> String {
    match at {
        Some(a) if !a.frames.is_empty() => format!(
            "{} -> {}, {} {}",
            a.client,
            a.server,
            if a.frames.len() == 1 {
                "frame"
            } else {
                "frames"
            },
            a.frames
                .iter()
                .map(|&f| frame_in(capture, f))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Some(a) => format!("{} -> {}, nothing of it", a.client, a.server),
        None => "nothing of it".into(),
    }
}

/// The section on how the paired connections ended at the two points.
fn render_endings(
    out: &mut String,
    e: &EndingsComparison,
    client: &ComparedCapture<'_>,
    server: &ComparedCapture<'_>,
) {
    if e.compared == 0 {
        return;
    }
    let c = &e.counts;
    let _ = writeln!(
        out,
        "\nCloses and unanswered requests at both points: {} compared, {} seen at both ends{}",
        counted(e.compared, "pair of connections", "pairs of connections"),
        counted(e.closes_matched, "close", "closes"),
        if e.notable.is_empty() {
            "; nothing the two points tell differently".to_string()
        } else {
            format!(
                "; {} device closed both sides, {} not sent by the side named, {} never arrived, {} answered at neither point:",
                c.device_closed_both, c.close_not_sent, c.close_not_received, c.answered_at_neither
            )
        }
    );
    for (i, n) in e.notable.iter().enumerate() {
        let _ = writeln!(
            out,
            "{:>3}. {} at {}: client {}; server {}",
            i + 1,
            n.kind.name(),
            instant(n.at),
            ending_frames(client.capture, &n.client_capture),
            ending_frames(server.capture, &n.server_capture),
        );
        if let Some(r) = &n.request {
            let _ = writeln!(out, "     `{}`", crate::text::statement(r));
        }
        match &n.cause {
            Some(c) => {
                if c.summary != n.detail {
                    let _ = writeln!(out, "     {}", n.detail);
                }
                crate::text::describe_cause(out, "     ", c, true);
            }
            None => {
                let _ = writeln!(out, "     {}", n.detail);
            }
        }
    }
}
