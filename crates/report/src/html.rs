//! `pcapsleuth report --html FILE`: the whole report as one self-contained HTML page to hand to a
//! colleague: the first abnormal close with its Wireshark filter and `extract` command at the top, the
//! findings, the MySQL tables (sortable by a click on a header, when scripts run) and every plot as inline
//! SVG. Nothing is fetched: no external script, style sheet, font or image, and a Content-Security-Policy
//! that forbids any (the one inline script is allowed by its hash). The page reads the same without
//! scripts, and prints (`@media print`).
//!
//! Every string that comes from the capture (statements, error messages, addresses, the file's name) is
//! escaped: a statement holding `<script>` is text on the page, never markup, and a control or
//! bidirectional character in it is shown as an escape (`\x1b`, `\u202e`), as in the text reports.

use std::fmt::Write;

use pcapsleuth_analysis::cause::Cause;
use pcapsleuth_analysis::units::{count, counted, duration_us as us, percent, significant, NONE};
use pcapsleuth_analysis::{
    CloseReport, Diff, Finding, FindingKind, FullReport, MysqlReport, RtSource, RtSummary,
    StatusCounts, Unknowns,
};

use crate::plots::{svg_plots, PlotError};
use crate::text::utc;

/// The page's one script: sorts a table of class `sortable` by the column whose header was clicked (or
/// activated with Enter), by each cell's `data-v` number when it has one, else by its text; a second click
/// reverses. It marks the page `js` so that headers show they can be clicked only when they can.
const SCRIPT: &str = r#"document.documentElement.classList.add('js');
document.querySelectorAll('table.sortable').forEach(function (table) {
  var heads = table.querySelectorAll('thead th');
  heads.forEach(function (th, col) {
    th.tabIndex = 0;
    var sort = function () {
      var asc = th.getAttribute('aria-sort') !== 'ascending';
      heads.forEach(function (h) { h.removeAttribute('aria-sort'); });
      th.setAttribute('aria-sort', asc ? 'ascending' : 'descending');
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      var key = function (row) {
        var cell = row.cells[col];
        var v = cell.getAttribute('data-v');
        return v === null ? cell.textContent.trim().toLowerCase() : parseFloat(v);
      };
      rows.sort(function (a, b) {
        var x = key(a), y = key(b);
        var c = (typeof x === 'number' && typeof y === 'number') ? x - y : String(x).localeCompare(String(y));
        return asc ? c : -c;
      });
      rows.forEach(function (r) { body.appendChild(r); });
    };
    th.addEventListener('click', sort);
    th.addEventListener('keydown', function (e) { if (e.key === 'Enter') { sort(); } });
  });
});
"#;

/// Base64 of the SHA-256 of [`SCRIPT`], for the page's Content-Security-Policy (`script-src 'sha256-…'`):
/// the browser runs that script and no other. A test renders the page in Chromium and checks that it ran.
const SCRIPT_SHA256: &str = "9s8/QmmoqRkLQqCFqwd+kSdny3ImHlMg8kxn+95iBes=";

const STYLE: &str = r#"
:root { --fg: #1d1f21; --muted: #5a5f66; --line: #d8dce1; --bg-soft: #f4f6f8; --accent: #b3261e; --code: #eef1f4; }
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 1280px; padding: 24px 32px 48px; color: var(--fg);
  font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; }
h1 { font-size: 24px; margin: 0 0 4px; }
h2 { font-size: 19px; margin: 32px 0 10px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
h3 { font-size: 16px; margin: 20px 0 8px; }
p.meta { color: var(--muted); margin: 2px 0; }
code, pre { font: 13px/1.4 ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; }
code { background: var(--code); padding: 1px 4px; border-radius: 3px; overflow-wrap: anywhere; }
pre { background: var(--code); padding: 8px 10px; border-radius: 4px; margin: 4px 0;
  white-space: pre-wrap; overflow-wrap: anywhere; }
.answer { border: 2px solid var(--accent); border-radius: 6px; padding: 12px 18px; margin: 18px 0;
  background: #fdf3f2; }
.answer.calm { border-color: #2e7d32; background: #f1f8f1; }
.answer h2 { border: 0; margin: 0 0 6px; padding: 0; color: var(--accent); }
.answer.calm h2 { color: #2e7d32; }
.answer .reason { font-size: 17px; margin: 4px 0 8px; }
.cause { margin: 4px 0; }
.handoff { display: grid; grid-template-columns: max-content 1fr; gap: 2px 10px; align-items: baseline; }
.handoff .label { color: var(--muted); font-size: 13px; }
.partial { border-left: 4px solid #e6a700; background: #fff8e1; padding: 6px 12px; margin: 12px 0; }
.partial ul { margin: 4px 0; }
ol.findings { padding-left: 28px; }
ol.findings > li { margin: 0 0 14px; }
.kind { display: inline-block; font: 12px/1.6 ui-monospace, "DejaVu Sans Mono", monospace; padding: 0 6px;
  border-radius: 3px; background: var(--bg-soft); border: 1px solid var(--line); margin-right: 6px; }
.sev1 .kind { background: #fdecea; border-color: #f1aeb5; color: var(--accent); }
.sev2 .kind { background: #fff4e0; border-color: #f3c77c; }
ul.evidence { margin: 4px 0; color: #33373b; }
table { border-collapse: collapse; margin: 6px 0 14px; font-size: 14px; }
th, td { padding: 4px 10px; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
th { background: var(--bg-soft); font-weight: 600; white-space: nowrap; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.stmt { max-width: 560px; overflow-wrap: anywhere; }
.js table.sortable th { cursor: pointer; user-select: none; }
.js table.sortable th::after { content: " \2195"; color: #9aa0a6; font-weight: 400; }
.js table.sortable th[aria-sort=ascending]::after { content: " \2191"; color: var(--fg); }
.js table.sortable th[aria-sort=descending]::after { content: " \2193"; color: var(--fg); }
figure { margin: 12px 0 24px; }
figure svg { display: block; width: 100%; height: auto; max-width: 1200px; border: 1px solid var(--line); }
figcaption { color: var(--muted); font-size: 13px; margin-top: 4px; }
footer { margin-top: 40px; color: var(--muted); font-size: 12px; }
@media print {
  body { max-width: none; padding: 0; font-size: 11pt; }
  h2 { break-after: avoid; }
  figure, tr, .answer, ol.findings > li { break-inside: avoid; }
  figure svg { max-width: 100%; border: 0; }
  .js table.sortable th::after { content: none; }
  pre, code { white-space: pre-wrap; }
  a { color: inherit; text-decoration: none; }
}
"#;

/// `s` with the five characters that mean something in HTML (text or a quoted attribute) escaped, and
/// every control or bidirectional character shown as the text reports show it (`\x1b`, `\u202e`: see
/// [`crate::visible()`]); line breaks are kept, as white space.
pub fn escape_html(s: &str) -> String {
    let s = crate::visible::visible_lines(s);
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// What `pcapsleuth report --html` writes: one self-contained page of `r` (see the module docs), with
/// what the capture could not show (`unknowns`) before the figures it qualifies. `capture` names the
/// capture in the title (its file or files); it is escaped like everything else.
pub fn render_html(
    r: &FullReport,
    unknowns: &Unknowns,
    capture: &str,
) -> Result<String, PlotError> {
    render_html_against(r, unknowns, capture, None)
}

/// [`render_html`] with, when `baseline` is given (`report --html --baseline A`), a section that
/// compares the capture (run B) with that baseline (run A, named by the second string): the diff's
/// verdict, what was matched, and the statement groups that changed.
pub fn render_html_against(
    r: &FullReport,
    unknowns: &Unknowns,
    capture: &str,
    baseline: Option<(&Diff, &str)>,
) -> Result<String, PlotError> {
    let (plots, skipped) = svg_plots(r)?;
    let mut out =
        String::with_capacity(64 * 1024 + plots.iter().map(|p| p.svg.len()).sum::<usize>());
    let title = format!("pcapsleuth report: {capture}");
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; \
         script-src 'sha256-{SCRIPT_SHA256}'; img-src data:\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n",
        escape_html(&title)
    );
    let _ = writeln!(out, "<header>\n<h1>{}</h1>", escape_html(&title));
    if let Some(span) = r.timeline.span_text() {
        let _ = writeln!(out, "<p class=\"meta\">Captured {}</p>", escape_html(&span));
    }
    let _ = writeln!(
        out,
        "<p class=\"meta\">{}</p>\n</header>",
        escape_html(&crate::analyses::counts_line(r))
    );
    partial_data(&mut out, unknowns);
    answer(&mut out, r);
    if let Some((d, name)) = baseline {
        against_baseline(&mut out, d, name);
    }
    findings(&mut out, &r.findings);
    mysql_tables(&mut out, r);
    phases_section(&mut out, r);
    load_section(&mut out, &r.load);
    let _ = writeln!(out, "<section id=\"plots\">\n<h2>Plots</h2>");
    for p in &plots {
        let _ = writeln!(
            out,
            "<figure id=\"plot-{}\">\n{}<figcaption>{}</figcaption>\n</figure>",
            p.name,
            // plotters escapes every text it writes into the SVG; its `<?xml ...?>`-free output inlines as is.
            p.svg.trim(),
            plot_caption(p.name)
        );
    }
    if plots.is_empty() {
        let _ = writeln!(out, "<p>No plot: nothing to draw.</p>");
    }
    for s in &skipped {
        let _ = writeln!(
            out,
            "<p class=\"meta\">No {} plot: {}.</p>",
            plot_caption(s.name),
            escape_html(&s.reason)
        );
    }
    let _ = writeln!(out, "</section>");
    let _ = writeln!(
        out,
        "<footer>Written by pcapsleuth {}. Frame numbers are Wireshark's (Go to packet); times relative \
         to the capture's first packet are Wireshark's <code>frame.time_relative</code>.</footer>",
        env!("CARGO_PKG_VERSION")
    );
    let _ = write!(out, "<script>{SCRIPT}</script>\n</body>\n</html>\n");
    Ok(out)
}

fn partial_data(out: &mut String, u: &Unknowns) {
    if u.notes.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "<div class=\"partial\" id=\"partial\"><strong>Partial data</strong> (the figures below are qualified by it):<ul>"
    );
    for n in &u.notes {
        let _ = writeln!(out, "<li>{}</li>", escape_html(n));
    }
    let _ = writeln!(out, "</ul></div>");
}

/// The box at the top: what broke first and why, with the filter and command that open it.
fn answer(out: &mut String, r: &FullReport) {
    let fr = &r.first_reset;
    let Some(c) = &fr.first_abnormal else {
        let text = if fr.connections == 0 {
            "No TCP connection in the capture: nothing was closed.".to_string()
        } else {
            escape_html(&crate::text::no_abnormal_close(fr))
        };
        let _ = writeln!(
            out,
            "<section class=\"answer calm\" id=\"first-abnormal\"><h2>What broke first</h2><p>{text}</p></section>"
        );
        return;
    };
    let finding = r
        .findings
        .iter()
        .find(|f| f.kind == FindingKind::FirstAbnormalClose);
    let _ = writeln!(
        out,
        "<section class=\"answer\" id=\"first-abnormal\">\n<h2>What broke first: frame {} at {} s</h2>",
        c.frame,
        trim_rel(c.rel_time)
    );
    let _ = writeln!(out, "<p class=\"reason\">{}</p>", escape_html(&c.reason));
    if let Some(cause) = &c.cause {
        cause_html(out, cause, true);
    }
    let _ = writeln!(out, "<p>{}</p>", close_facts(c));
    // The rest of its finding, which the findings list does not repeat: the closes like it.
    if let Some(f) = finding {
        if let Some((_, tail)) = f.summary.split_once(c.reason.as_str()) {
            let tail = tail.trim_start_matches([';', ' ']);
            let mut chars = tail.chars();
            if let Some(first) = chars.next() {
                let _ = writeln!(
                    out,
                    "<p class=\"like\">{}</p>",
                    escape_html(&(first.to_uppercase().collect::<String>() + chars.as_str()))
                );
            }
        }
        let facts = format!("client {} server {}", c.client, c.server);
        let evidence: Vec<&String> = f.evidence.iter().filter(|e| **e != facts).collect();
        if !evidence.is_empty() {
            let _ = writeln!(out, "<ul class=\"evidence\">");
            for e in evidence {
                let _ = writeln!(out, "<li>{}</li>", escape_html(e));
            }
            let _ = writeln!(out, "</ul>");
        }
    }
    let _ = writeln!(out, "<div class=\"handoff\">");
    handoff_rows(out, finding);
    let _ = writeln!(out, "</div>\n</section>");
}

/// A cause as the page shows it: "Cause (likely): ...", with its evidence (with `evidence`), escaped.
fn cause_html(out: &mut String, c: &Cause, evidence: bool) {
    let _ = writeln!(
        out,
        "<p class=\"cause\"><strong>Cause ({}):</strong> {}</p>",
        c.confidence.name(),
        escape_html(&c.summary)
    );
    if evidence && !c.evidence.is_empty() {
        let _ = writeln!(out, "<ul class=\"evidence\">");
        for e in &c.evidence {
            let _ = writeln!(out, "<li>{}</li>", escape_html(&e.fact));
        }
        let _ = writeln!(out, "</ul>");
    }
}

/// "RST sent by the server at 2026-… UTC; client 10.0.0.2:5000, server 10.0.0.1:3306", escaped.
fn close_facts(c: &CloseReport) -> String {
    escape_html(&format!(
        "{} sent by the {} at {}; client {}, server {}",
        c.flag.name(),
        c.initiator.name(),
        utc(c.time),
        c.client,
        c.server
    ))
}

/// A relative time as Wireshark shows it, to the microsecond.
fn trim_rel(s: f64) -> String {
    format!("{s:.6}")
}

/// The Wireshark filter and `extract` command of a finding, as copyable code (nothing when it has none).
fn handoff_rows(out: &mut String, f: Option<&Finding>) {
    let Some(f) = f else { return };
    if let Some(filter) = &f.wireshark_filter {
        let _ = writeln!(
            out,
            "<span class=\"label\">Wireshark filter</span><pre class=\"filter\">{}</pre>",
            escape_html(filter)
        );
    }
    if let Some(cmd) = &f.extract_command {
        let _ = writeln!(
            out,
            "<span class=\"label\">Extract</span><pre class=\"extract\">{}</pre>",
            escape_html(cmd)
        );
    }
}

/// The findings, numbered as in the text report, but for the first abnormal close: the box above
/// ([`answer`]) shows all of its finding (the close, the closes like it, its filter and command), so the list
/// points there instead of saying it again. A page has no links to follow on paper, and this one none at
/// all: the list says where the first finding is and starts at 2.
fn findings(out: &mut String, findings: &[Finding]) {
    let _ = writeln!(out, "<section id=\"findings\">\n<h2>Findings</h2>");
    if findings.is_empty() {
        let _ = writeln!(out, "<p>Nothing abnormal found.</p>\n</section>");
        return;
    }
    let boxed = findings
        .iter()
        .position(|f| f.kind == FindingKind::FirstAbnormalClose);
    let rest: Vec<(usize, &Finding)> = findings
        .iter()
        .enumerate()
        .filter(|(_, f)| f.kind != FindingKind::FirstAbnormalClose)
        .collect();
    if let Some(i) = boxed {
        let _ = writeln!(
            out,
            "<p class=\"meta\">Finding {}, the first abnormal close, is the box above.</p>",
            i + 1
        );
    }
    if rest.is_empty() {
        let _ = writeln!(out, "</section>");
        return;
    }
    // Numbered as in the text report; the boxed finding is the first when there is one.
    let start = rest[0].0 + 1;
    if start == 1 {
        let _ = writeln!(out, "<ol class=\"findings\">");
    } else {
        let _ = writeln!(out, "<ol class=\"findings\" start=\"{start}\">");
    }
    for (_, f) in rest {
        let _ = writeln!(
            out,
            "<li class=\"finding sev{}\"><span class=\"kind\">{}</span>{}",
            f.severity,
            f.kind,
            escape_html(&f.summary)
        );
        if let Some(cause) = &f.cause {
            // A slow hump's cause with its facts: the error's frames and why its wait is a timer's.
            cause_html(out, cause, f.kind == FindingKind::SlowHump);
        }
        if !f.evidence.is_empty() {
            let _ = writeln!(out, "<ul class=\"evidence\">");
            for e in &f.evidence {
                let _ = writeln!(out, "<li>{}</li>", escape_html(e));
            }
            let _ = writeln!(out, "</ul>");
        }
        if f.wireshark_filter.is_some() || f.extract_command.is_some() {
            let _ = writeln!(out, "<div class=\"handoff\">");
            handoff_rows(out, Some(f));
            let _ = writeln!(out, "</div>");
        }
        let _ = writeln!(out, "</li>");
    }
    let _ = writeln!(out, "</ol>\n</section>");
}

/// A numeric cell: shown as `text`, sorted by `v`.
fn num(v: f64, text: &str) -> String {
    format!("<td class=\"n\" data-v=\"{v}\">{}</td>", escape_html(text))
}

/// A count cell.
fn num_count(n: u64) -> String {
    num(n as f64, &count(n))
}

/// A duration cell in the text report's units, "—" (sorted first) for a statistic of nothing.
fn num_us(n: u64, v: f64) -> String {
    if n == 0 {
        num(-1.0, NONE)
    } else {
        num(v, &us(v))
    }
}

/// The page's MySQL section: sessions and requests, then the tables of response times, commands,
/// servers (when there are several), errors and statements.
fn mysql_tables(out: &mut String, r: &FullReport) {
    let m = &r.mysql;
    let _ = writeln!(out, "<section id=\"mysql\">\n<h2>MySQL</h2>");
    if m.sessions == 0 && m.queries == 0 {
        let _ = writeln!(out, "<p>No MySQL session in the capture.</p>\n</section>");
        return;
    }
    let _ = writeln!(
        out,
        "<p>{}, {} ({}).</p>",
        escape_html(&counted(m.sessions, "session", "sessions")),
        escape_html(&counted(m.queries, "request", "requests")),
        escape_html(&m.requests.describe())
    );
    response_time_table(out, r);
    commands_table(out, m);
    servers_table(out, m);
    errors_table(out, m);
    statements_table(out, m);
    let _ = writeln!(out, "</section>");
}

/// The response times of all answered requests, the successes and the errors.
fn response_time_table(out: &mut String, r: &FullReport) {
    let m = &r.mysql;
    let _ = writeln!(
        out,
        "<h3>Response times</h3>\n<table id=\"rt\"><thead><tr><th>requests</th><th class=\"n\">n</th>\
         <th class=\"n\">mean</th><th class=\"n\">p50</th><th class=\"n\">p95</th><th class=\"n\">p99</th>\
         <th class=\"n\">max</th></tr></thead><tbody>"
    );
    let source = if r.rt.source == RtSource::Mysql {
        "request to last response byte"
    } else {
        "TCP request/response"
    };
    for (name, s) in [
        ("all answered", &m.rt_us),
        ("success", &m.rt_ok_us),
        ("errors", &m.rt_error_us),
    ] {
        rt_row(out, name, s);
    }
    let _ = writeln!(
        out,
        "</tbody></table>\n<p class=\"meta\">Response time: {source}.</p>"
    );
}

/// The requests per command and their share, the most frequent first.
fn commands_table(out: &mut String, m: &MysqlReport) {
    let _ = writeln!(
        out,
        "<h3>Commands</h3>\n<table class=\"sortable\" id=\"commands\"><thead><tr><th>command</th>\
         <th class=\"n\">requests</th><th class=\"n\">share</th></tr></thead><tbody>"
    );
    let total: u64 = m.commands.values().sum();
    let mut cmds: Vec<(&String, &u64)> = m.commands.iter().collect();
    cmds.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    for (name, n) in cmds {
        let share = *n as f64 / total.max(1) as f64;
        let _ = writeln!(
            out,
            "<tr><td>{}</td>{}{}</tr>",
            escape_html(name),
            num_count(*n),
            num(share, &percent(share))
        );
    }
    let _ = writeln!(out, "</tbody></table>");
}

/// The servers' requests, rates, response times, errors, resets and bytes, when there are several.
fn servers_table(out: &mut String, m: &MysqlReport) {
    if m.servers.len() > 1 {
        let _ = writeln!(
            out,
            "<h3>Servers</h3>\n<table class=\"sortable\" id=\"servers\"><thead><tr><th>server</th>\
             <th class=\"n\">requests</th><th class=\"n\">per second</th><th class=\"n\">p50</th>\
             <th class=\"n\">p99</th><th class=\"n\">errors</th><th class=\"n\">sessions reset</th>\
             <th class=\"n\">bytes sent</th><th class=\"n\">bytes received</th></tr></thead><tbody>"
        );
        for s in &m.servers {
            let n = s.rt_us.count;
            let per_s = s.requests_per_s.unwrap_or(0.0);
            let _ = writeln!(
                out,
                "<tr><td>{}</td>{}{}{}{}{}{}{}{}</tr>",
                escape_html(&s.server),
                num_count(s.requests),
                num(per_s, &significant(per_s, 3)),
                num_us(n, s.rt_us.p50),
                num_us(n, s.rt_us.p99),
                num_count(s.errors),
                num_count(s.resets),
                num_count(s.request_bytes),
                num_count(s.response_bytes)
            );
        }
        let _ = writeln!(out, "</tbody></table>");
    }
}

/// The error responses by code, with their response times and first messages.
fn errors_table(out: &mut String, m: &MysqlReport) {
    let _ = writeln!(out, "<h3>Errors</h3>");
    if m.error_details.is_empty() {
        let _ = writeln!(out, "<p>No error responses.</p>");
    } else {
        let _ = writeln!(
            out,
            "<table class=\"sortable\" id=\"errors\"><thead><tr><th class=\"n\">code</th><th>SQLSTATE</th>\
             <th class=\"n\">responses</th><th class=\"n\">mean</th><th class=\"n\">p95</th>\
             <th>messages (first seen)</th></tr></thead><tbody>"
        );
        for e in &m.error_details {
            let messages: Vec<String> = e.messages.iter().map(|s| escape_html(s)).collect();
            let _ = writeln!(
                out,
                "<tr>{}<td>{}</td>{}{}{}<td class=\"stmt\">{}</td></tr>",
                num(f64::from(e.code), &e.code.to_string()),
                escape_html(&e.sql_state),
                num_count(e.count),
                num_us(e.rt_us.count, e.rt_us.mean),
                num_us(e.rt_us.count, e.rt_us.p95),
                messages.join("<br>")
            );
        }
        let _ = writeln!(out, "</tbody></table>");
    }
}

/// The statement groups by total time, the groups not kept one by one as one row.
fn statements_table(out: &mut String, m: &MysqlReport) {
    if !m.statements.is_empty() {
        let _ = writeln!(
            out,
            "<h3>Statements by total time</h3>\n<table class=\"sortable\" id=\"statements\"><thead><tr>\
             <th>command</th><th>fingerprint</th><th class=\"n\">requests</th><th class=\"n\">answered</th>\
             <th class=\"n\">total</th><th class=\"n\">mean</th><th class=\"n\">p50</th><th class=\"n\">p95</th>\
             <th class=\"n\">p99</th><th class=\"n\">max</th><th class=\"n\">errors</th><th class=\"n\">rows</th>\
             <th class=\"n\">no index</th><th class=\"n\">warnings</th></tr></thead><tbody>"
        );
        for s in &m.statements {
            let cells = [
                escape_html(&s.command),
                format!("<code>{}</code>", escape_html(&s.fingerprint)),
            ];
            let counts = [s.count, s.requests.answered, s.errors, s.rows];
            statement_row(out, &cells, counts, (s.total_us, &s.rt_us), &s.status);
        }
        if let Some(o) = &m.other_statements {
            let cells = [
                String::new(),
                format!("(other statements: about {} groups)", count(o.groups_about)),
            ];
            let counts = [o.count, o.requests.answered, o.errors, o.rows];
            statement_row(out, &cells, counts, (o.total_us, &o.rt_us), &o.status);
        }
        let _ = writeln!(
            out,
            "</tbody></table>\n<p class=\"meta\">Times are over the answered requests of each fingerprint \
             (literals replaced by <code>?</code>).</p>"
        );
        if let Some(o) = &m.other_statements {
            let _ = writeln!(
                out,
                "<p class=\"meta\">The capture holds more statement groups than the {} kept one by one: \
                 those kept are chosen by a hash of their command and fingerprint, not by time; the others are counted \
                 together as <i>other statements</i>.</p>",
                count(o.groups_kept)
            );
        }
    }
}

/// Statement groups listed in the phases table, by total time.
const PHASE_GROUPS_LISTED: usize = 20;
/// Transactions listed with their statements on the page.
const TRANSACTIONS_LISTED: usize = 5;

/// Where the answered requests' time went: upload (first to last request byte), server (last request
/// byte to first response byte), download (first to last response byte), in all and per statement
/// group, with the bytes each way.
fn phases_section(out: &mut String, r: &FullReport) {
    let m = &r.mysql;
    let p = &m.phases;
    if p.requests == 0 {
        return;
    }
    let _ = writeln!(
        out,
        "<section id=\"phases\">\n<h2>Request phases</h2>\n<p>{} timed phase by phase: upload {} in all \
         (mean {}), server {} (mean {}), download {} (mean {}, of {} whose response's end is in the \
         capture).</p>",
        escape_html(&counted(p.requests, "answered request", "answered requests")),
        escape_html(&us(p.upload_us)),
        escape_html(&us(p.upload_mean_us)),
        escape_html(&us(p.server_us)),
        escape_html(&us(p.server_mean_us)),
        escape_html(&us(p.download_us)),
        escape_html(&us(p.download_mean_us)),
        escape_html(&count(p.downloads))
    );
    let _ = writeln!(
        out,
        "<table class=\"sortable\" id=\"phases-by-statement\"><thead><tr><th>command</th><th>fingerprint</th>\
         <th class=\"n\">timed</th><th class=\"n\">upload mean</th><th class=\"n\">server mean</th>\
         <th class=\"n\">download mean</th><th class=\"n\">request bytes</th><th class=\"n\">response bytes</th>\
         </tr></thead><tbody>"
    );
    for s in m.statements.iter().take(PHASE_GROUPS_LISTED) {
        let ph = &s.phases;
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td class=\"stmt\"><code>{}</code></td>{}{}{}{}{}{}</tr>",
            escape_html(&s.command),
            escape_html(&s.fingerprint),
            num_count(ph.requests),
            num_us(ph.requests, ph.upload_mean_us),
            num_us(ph.requests, ph.server_mean_us),
            num_us(ph.downloads, ph.download_mean_us),
            num_count(s.request_bytes),
            num_count(s.response_bytes)
        );
    }
    let _ = writeln!(
        out,
        "</tbody></table>\n<p class=\"meta\">The {} statement groups with the most total time; \
         <code>pcapsleuth mysql --json</code> has every group's phases.</p>\n</section>",
        count(m.statements.len().min(PHASE_GROUPS_LISTED) as u64)
    );
}

/// The load-test view: requests in flight (with Little's law beside them), connections, transactions,
/// think time, a row per server, and the longest transactions with their statements.
fn load_section(out: &mut String, l: &pcapsleuth_analysis::LoadReport) {
    if l.requests == 0 {
        return;
    }
    let tx = &l.transactions;
    let _ = writeln!(
        out,
        "<section id=\"load\">\n<h2>Load</h2>\n<p>{} in {} ({}/s); in flight: mean {}, max {}; \
         Little's law (requests/s × mean response time {}): {}. Connections: {} seen, {} sent requests, \
         open at once: mean {}, max {}.</p>",
        escape_html(&counted(l.requests, "request", "requests")),
        escape_html(&pcapsleuth_analysis::units::seconds(l.span_s)),
        escape_html(&significant(l.requests_per_s, 3)),
        escape_html(&significant(l.in_flight.mean, 3)),
        escape_html(&count(l.in_flight.max)),
        escape_html(&us(l.in_flight.rt_mean_us)),
        escape_html(&significant(l.in_flight.littles_law, 3)),
        escape_html(&count(l.connections.seen)),
        escape_html(&count(l.connections.active)),
        escape_html(&significant(l.connections.open_mean, 3)),
        escape_html(&count(l.connections.open_max))
    );
    let ended = tx.counts.ended();
    let _ = writeln!(
        out,
        "<p>Transactions: {} ended ({}/s), {} rolled back; time p50 {}, p99 {}; idle in transaction {} \
         ({} of their time). Think time: p50 {}, p99 {}.</p>",
        escape_html(&count(ended)),
        escape_html(&significant(tx.per_s, 3)),
        escape_html(&count(tx.counts.rolled_back)),
        escape_html(&if tx.rt_us.count > 0 { us(tx.rt_us.p50) } else { NONE.to_string() }),
        escape_html(&if tx.rt_us.count > 0 { us(tx.rt_us.p99) } else { NONE.to_string() }),
        escape_html(&pcapsleuth_analysis::units::seconds(tx.idle_in_transaction_s)),
        escape_html(&percent(tx.idle_share)),
        escape_html(&if l.think_time_us.count > 0 { us(l.think_time_us.p50) } else { NONE.to_string() }),
        escape_html(&if l.think_time_us.count > 0 { us(l.think_time_us.p99) } else { NONE.to_string() })
    );
    if !l.servers.is_empty() {
        let _ = writeln!(
            out,
            "<table class=\"sortable\" id=\"load-servers\"><thead><tr><th>server</th>\
             <th class=\"n\">connections</th><th class=\"n\">requests</th><th class=\"n\">per second</th>\
             <th class=\"n\">RT mean</th><th class=\"n\">errors</th><th class=\"n\">transactions</th>\
             <th class=\"n\">rolled back</th><th class=\"n\">tx mean</th><th class=\"n\">idle in tx (s)</th>\
             </tr></thead><tbody>"
        );
        for s in &l.servers {
            let _ = writeln!(
                out,
                "<tr><td>{}</td>{}{}{}{}{}{}{}{}{}</tr>",
                escape_html(&s.server),
                num_count(s.connections),
                num_count(s.requests),
                num(s.requests_per_s, &significant(s.requests_per_s, 3)),
                num_us(u64::from(s.rt_mean_us > 0.0), s.rt_mean_us),
                num_count(s.errors),
                num_count(s.transactions),
                num_count(s.rollbacks),
                num_us(s.transactions, s.transaction_rt_mean_us),
                num(
                    s.idle_in_transaction_s,
                    &significant(s.idle_in_transaction_s, 3)
                )
            );
        }
        let _ = writeln!(out, "</tbody></table>");
    }
    if !tx.worst.is_empty() {
        let _ = writeln!(
            out,
            "<h3>The longest transactions</h3>\n<ol class=\"transactions\">"
        );
        for t in tx.worst.iter().take(TRANSACTIONS_LISTED) {
            let _ = writeln!(
                out,
                "<li><p>{} from frame {} ({} → {}, {}): {}, {} idle waiting for the client</p>\n\
                 <table><thead><tr><th class=\"n\">frame</th><th class=\"n\">response time</th>\
                 <th>command</th><th>statement</th></tr></thead><tbody>",
                escape_html(&us(t.rt_us)),
                t.first_frame,
                escape_html(&t.client),
                escape_html(&t.server),
                escape_html(&t.ending.replace('_', " ")),
                escape_html(&counted(t.statement_count, "request", "requests")),
                escape_html(&us(t.idle_us))
            );
            for st in &t.statements {
                let _ = writeln!(
                    out,
                    "<tr>{}{}<td>{}</td><td class=\"stmt\"><code>{}</code></td></tr>",
                    num_count(st.frame),
                    match st.rt_us {
                        Some(v) => num(v, &us(v)),
                        None => num(-1.0, "unanswered"),
                    },
                    escape_html(st.command),
                    escape_html(&st.fingerprint)
                );
            }
            let _ = writeln!(out, "</tbody></table></li>");
        }
        let _ = writeln!(
            out,
            "</ol>\n<p class=\"meta\"><code>pcapsleuth load --json</code> lists {} with their statements.</p>",
            escape_html(&counted(tx.worst.len() as u64, "transaction", "transactions"))
        );
    }
    let _ = writeln!(out, "</section>");
}

/// A row of the statements table: `cells` (HTML: the command, the statement), then requests, answered,
/// total and the answered's times, errors, rows, responses without an index and warnings (`counts`:
/// requests, answered, errors, rows).
fn statement_row(
    out: &mut String,
    cells: &[String; 2],
    counts: [u64; 4],
    (total_us, rt): (f64, &RtSummary),
    status: &StatusCounts,
) {
    let [requests, answered, errors, rows] = counts;
    let n = rt.count;
    let _ = writeln!(
        out,
        "<tr><td>{}</td><td class=\"stmt\">{}</td>{}{}{}{}{}{}{}{}{}{}{}{}</tr>",
        cells[0],
        cells[1],
        num_count(requests),
        num_count(answered),
        num_us(n, total_us),
        num_us(n, rt.mean),
        num_us(n, rt.p50),
        num_us(n, rt.p95),
        num_us(n, rt.p99),
        num_us(n, rt.max),
        num_count(errors),
        num_count(rows),
        num_count(status.no_index_used),
        num_count(status.warnings)
    );
}

/// The section comparing the capture with its baseline (`report --html --baseline A`).
fn against_baseline(out: &mut String, d: &Diff, baseline: &str) {
    let _ = writeln!(
        out,
        "<section id=\"baseline\">\n<h2>Against the baseline</h2>\n<p class=\"meta\">A: {} (the baseline); B: \
         this capture.</p>\n<p>{}</p>\n<p class=\"meta\">Matched: {}.</p>",
        escape_html(baseline),
        escape_html(&d.verdict),
        escape_html(&d.matched.notes.join("; "))
    );
    let _ = writeln!(
        out,
        "<table class=\"sortable\" id=\"diff-statements\"><thead><tr><th>change</th><th>command</th>\
         <th>fingerprint</th><th class=\"n\">count A</th><th class=\"n\">count B</th>\
         <th class=\"n\">p50 A</th><th class=\"n\">p50 B</th><th class=\"n\">p99 A</th>\
         <th class=\"n\">p99 B</th><th class=\"n\">added</th></tr></thead><tbody>"
    );
    for s in &d.statements {
        let (a, b) = (s.a.as_ref(), s.b.as_ref());
        let n = |x: Option<&pcapsleuth_analysis::StatementSide>| x.map_or(0, |x| x.count);
        let t = |x: Option<&pcapsleuth_analysis::StatementSide>, p50: bool| match x {
            Some(x) => num_us(x.rt_us.count, if p50 { x.rt_us.p50 } else { x.rt_us.p99 }),
            None => num_us(0, 0.0),
        };
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td class=\"stmt\"><code>{}</code></td>{}{}{}{}{}{}{}</tr>",
            s.change.name(),
            escape_html(&s.command),
            escape_html(&s.fingerprint),
            num_count(n(a)),
            num_count(n(b)),
            t(a, true),
            t(b, true),
            t(a, false),
            t(b, false),
            num(s.added_us, &us(s.added_us))
        );
    }
    let _ = writeln!(
        out,
        "</tbody></table>\n<p class=\"meta\">Added: the time B's answered requests of a statement took \
         beyond A's mean for it, where the rank test of its response times calls the difference \
         (pcapsleuth diff --json has every figure).</p>\n</section>"
    );
}

fn rt_row(out: &mut String, name: &str, s: &RtSummary) {
    let n = s.count;
    let _ = writeln!(
        out,
        "<tr><td>{name}</td>{}{}{}{}{}{}</tr>",
        num_count(n),
        num_us(n, s.mean),
        num_us(n, s.p50),
        num_us(n, s.p95),
        num_us(n, s.p99),
        num_us(n, s.max)
    );
}

/// What a plot shows, by its file stem.
fn plot_caption(name: &str) -> &'static str {
    match name {
        "rt-histogram" => "response-time histogram",
        "rt-over-time" => "response time over time",
        "rate-pps" => "packets per second",
        "rate-bps" => "bits per second",
        "qps" => "MySQL requests per second",
        _ => "other",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The policy's hash is the script's: otherwise browsers refuse to run it (and say so only in
    /// their console).
    #[test]
    fn the_policy_allows_exactly_the_script() {
        use sha2::{Digest, Sha256};
        const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let digest = Sha256::digest(SCRIPT.as_bytes());
        let mut b64 = String::new();
        for chunk in digest.chunks(3) {
            let n = chunk
                .iter()
                .enumerate()
                .fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
            for i in 0..=chunk.len() {
                b64.push(B64[(n >> (18 - 6 * i) & 63) as usize] as char);
            }
        }
        while b64.len() % 4 != 0 {
            b64.push('=');
        }
        assert_eq!(SCRIPT_SHA256, b64);
    }

    #[test]
    fn markup_from_a_capture_is_text() {
        assert_eq!(
            escape_html("select '<script>alert(\"x\")</script>' & 1"),
            "select &#39;&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&#39; &amp; 1"
        );
    }
}
