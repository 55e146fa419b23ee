//! `pcapsleuth report --html FILE`: one self-contained page, checked as a person sees it, rendered by
//! headless Chromium, on `fixtures/markup.pcap`, a capture whose statements, error message and close
//! reason carry HTML (`<script>`, `<img onerror>`, `</pre>`): from a capture they are text, never markup.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use pcapsleuth_testkit::oracle::Tool;
use pcapsleuth_testkit::{oracle, Oracle};

/// A fresh directory for one test; kept for looking at when PCAPSLEUTH_KEEP_HTML is set.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        let d = std::env::temp_dir().join(format!("pcapsleuth-html-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        TempDir(d)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if std::env::var_os("PCAPSLEUTH_KEEP_HTML").is_none() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// `report --html` of markup.pcap into `dir`: the page's path, and `report --json` of the same capture.
fn page(dir: &Path) -> (PathBuf, serde_json::Value) {
    let html = dir.join("report.html");
    let capture = common::fixture("markup.pcap");
    let o = Command::new(common::bin())
        .arg("report")
        .arg(&capture)
        .arg("--html")
        .arg(&html)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains(&format!("wrote {}", html.display())),
        "says where the page went"
    );
    let json = common::json(&["report", "--json", capture.to_str().unwrap()]);
    (html, json)
}

/// What the page must say in any case: the findings as the JSON has them (escaped), and the capture's
/// markup as text.
fn escaped(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// Chromium, headless, on the page, with a profile of its own in `dir` (tests run in parallel) and the
/// network log written to `dir/net.json`.
fn show(
    tool: &pcapsleuth_testkit::oracle::Tool,
    dir: &Path,
    action: &[&str],
    page: &Path,
) -> String {
    let mut cmd = tool.command();
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--hide-scrollbars",
        "--window-size=1280,2000",
        // Less of the browser's own traffic in the net log (it is told apart from the page's anyway).
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-extensions",
    ])
    .arg(format!("--user-data-dir={}", dir.join("profile").display()))
    .arg(format!("--log-net-log={}", dir.join("net.json").display()))
    .args(action)
    .arg(format!("file://{}", page.display()));
    let o = cmd.output().unwrap();
    assert!(
        o.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Every element of `html` is one the page is made of (no `<link>`, `<img>`, `<iframe>`, no element
/// from the capture).
fn assert_only_own_elements(html: &str) {
    const OWN: &[&str] = &[
        "html",
        "head",
        "meta",
        "title",
        "style",
        "body",
        "header",
        "h1",
        "h2",
        "h3",
        "p",
        "div",
        "section",
        "span",
        "pre",
        "code",
        "strong",
        "br",
        "ol",
        "ul",
        "li",
        "table",
        "thead",
        "tbody",
        "tr",
        "th",
        "td",
        "figure",
        "figcaption",
        "footer",
        "script",
        "svg",
        "rect",
        "line",
        "polyline",
        "polygon",
        "circle",
        "path",
        "text",
        "g",
    ];
    for (i, _) in html.match_indices('<') {
        let tag: String = html[i + 1..]
            .chars()
            .skip_while(|&c| c == '/')
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect();
        if tag.is_empty() {
            continue; // <!DOCTYPE html>
        }
        assert!(
            OWN.contains(&tag.to_ascii_lowercase().as_str()),
            "element <{tag}> in the page: {}",
            html[i..].chars().take(80).collect::<String>()
        );
    }
}

/// The URLs the page asked Chromium's network stack for while it was shown, from the browser's net log:
/// the requests made with the traffic annotation of Blink's resource loader (every subresource a page
/// loads: scripts, styles, fonts, images), not the browser's own (component updates, accounts, its
/// clock), which come with annotations of their own. A page with `<img src="http://example.invalid/">`
/// shows that URL here.
fn page_requests(net_log: &Path) -> Vec<String> {
    /// `net::TrafficAnnotation` hash of "blink_resource_loader".
    const BLINK_RESOURCE_LOADER: &str = "\"traffic_annotation\":101845102";
    let text = std::fs::read_to_string(net_log).expect("chromium wrote its net log");
    // The innermost JSON objects; a log cut short (the browser exiting) still has them.
    let mut urls = Vec::new();
    for (end, _) in text.match_indices('}') {
        let Some(start) = text[..end].rfind('{') else {
            continue;
        };
        let object = &text[start..end];
        if !object.contains(BLINK_RESOURCE_LOADER) {
            continue;
        }
        if let Some(at) = object.find("\"url\":\"") {
            let url = &object[at + 7..];
            urls.push(url[..url.find('"').unwrap_or(url.len())].to_string());
        }
    }
    urls
}

#[test]
fn the_page_is_self_contained_and_the_capture_is_text_on_it() {
    let dir = TempDir::new("static");
    let (html, json) = page(&dir.0);
    let text = std::fs::read_to_string(&html).unwrap();
    // Nothing from elsewhere: no external script, style sheet, font or image, and a policy forbidding any.
    assert!(text.starts_with("<!DOCTYPE html>"));
    assert!(text.contains("Content-Security-Policy\" content=\"default-src 'none';"));
    for outside in ["src=\"", "href=\"", "@import", "url("] {
        assert!(!text.contains(outside), "the page has {outside}");
    }
    assert_only_own_elements(&text);
    assert_eq!(
        text.matches("<script").count(),
        1,
        "one script, the page's own"
    );
    assert!(text.contains("<script>document.documentElement"));
    // The capture's markup is text: each of its three pieces is on the page, escaped.
    for markup in [
        "<script>alert(1)</script>",
        "<img src=x onerror=alert(2)>",
        "</pre><script>alert(3)</script>",
    ] {
        assert!(
            text.contains(&escaped(markup)),
            "{markup} is on the page as text"
        );
    }
    assert!(
        !text.contains("<img"),
        "no image element came from the capture"
    );
    assert!(
        !text.contains("alert(3)</script>"),
        "no script closed by the capture"
    );
    // The findings, as the JSON has them: summary, filter and extract command, in order, but for the
    // first abnormal close, which the box at the top says (once: not again in the list).
    let findings = json["findings"].as_array().unwrap();
    assert!(!findings.is_empty());
    let listed: Vec<&serde_json::Value> = findings
        .iter()
        .filter(|f| f["kind"] != "first_abnormal_close")
        .collect();
    let list = &text[text.find("id=\"findings\"").unwrap()..];
    assert!(
        list.contains("<ol class=\"findings\" start=\"2\">"),
        "numbered as in the text report"
    );
    let mut at = 0;
    for f in &listed {
        let summary = escaped(f["summary"].as_str().unwrap());
        let found = list[at..]
            .find(&summary)
            .unwrap_or_else(|| panic!("finding `{summary}` on the page, in the JSON's order"));
        at += found;
        for key in ["wireshark_filter", "extract_command"] {
            if let Some(s) = f[key].as_str() {
                assert!(text.contains(&escaped(s)), "{key} {s} on the page");
            }
        }
    }
    assert_eq!(text.matches("<li class=\"finding").count(), listed.len());
    // The first abnormal close leads, with its reason, evidence, filter and extract command, said once.
    let first = &json["first_reset"]["first_abnormal"];
    let top = &text[..text.find("id=\"findings\"").unwrap()];
    assert!(top.contains(&format!("What broke first: frame {}", first["frame"])));
    let close = findings
        .iter()
        .find(|f| f["kind"] == "first_abnormal_close")
        .unwrap();
    let reason = escaped(first["reason"].as_str().unwrap());
    assert!(close["summary"]
        .as_str()
        .unwrap()
        .contains(first["reason"].as_str().unwrap()));
    assert_eq!(
        text.matches(&reason).count(),
        1,
        "the reason, once: {reason}"
    );
    assert!(top.contains(&reason));
    for e in close["evidence"].as_array().unwrap().iter().skip(1) {
        assert!(
            top.contains(&escaped(e.as_str().unwrap())),
            "{e} in the box"
        );
    }
    assert!(list.contains("Finding 1, the first abnormal close, is the box above."));
    for key in ["wireshark_filter", "extract_command"] {
        let s = close[key].as_str().unwrap();
        assert!(top.contains(&escaped(s)), "{key} at the top");
    }
    // Every plot, inline.
    assert_eq!(text.matches("<svg ").count(), 5, "five plots");
    assert_eq!(text.matches("<figure id=\"plot-").count(), 5);
}

/// Chromium (or `None`, the test skipped, without it), a directory for test `name`, and the page in it
/// with the JSON of the same report.
#[track_caller]
fn with_chromium(name: &str) -> Option<(Tool, TempDir, PathBuf, serde_json::Value)> {
    let chromium = oracle::require(Oracle::Chromium)?;
    let dir = TempDir::new(name);
    let (html, json) = page(&dir.0);
    Some((chromium, dir, html, json))
}

#[test]
fn chromium_renders_the_page_without_asking_the_network() {
    let Some((chromium, dir, html, json)) = with_chromium("dom") else {
        return;
    };
    let dom = show(&chromium, &dir.0, &["--dump-dom"], &html);
    // The page's script ran: the policy's hash is its script's (the browser refuses any other).
    assert!(
        dom.contains("<html lang=\"en\" class=\"js\">"),
        "the sorting script ran"
    );
    assert!(dom.contains("tabindex=\"0\""), "headers became sortable");
    // The browser made no element of the capture's markup.
    assert_eq!(dom.matches("<script").count(), 1, "one script element");
    assert!(!dom.contains("<img"), "no image element");
    assert_only_own_elements(&dom);
    assert!(dom.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    // Findings, the first abnormal close, the tables, the plots: as elements of the rendered page.
    // Every finding but the first abnormal close, which is the box at the top.
    let findings = json["findings"].as_array().unwrap();
    let listed = findings
        .iter()
        .filter(|f| f["kind"] != "first_abnormal_close")
        .count();
    assert_eq!(dom.matches("<li class=\"finding").count(), listed);
    assert!(dom.contains("id=\"first-abnormal\""));
    for table in ["commands", "errors", "statements"] {
        assert!(
            dom.contains(&format!("<table class=\"sortable\" id=\"{table}\"")),
            "{table} table"
        );
    }
    assert_eq!(dom.matches("<svg ").count(), 5, "five plots");
    // The page asked for nothing.
    let asked = page_requests(&dir.0.join("net.json"));
    assert!(asked.is_empty(), "the page made requests: {asked:?}");
}

#[test]
fn chromium_screenshot_shows_the_page() {
    let Some((chromium, dir, html, _)) = with_chromium("shot") else {
        return;
    };
    let png = dir.0.join("report.png");
    show(
        &chromium,
        &dir.0,
        &[&format!("--screenshot={}", png.display())],
        &html,
    );
    let bytes = std::fs::read(&png).expect("chromium wrote the screenshot");
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"));
    let (w, h) = (
        u32::from_be_bytes(bytes[16..20].try_into().unwrap()),
        u32::from_be_bytes(bytes[20..24].try_into().unwrap()),
    );
    assert_eq!((w, h), (1280, 2000), "the window's size");
    // A blank or unstyled page compresses to a few kB; text, tables and plots do not.
    assert!(
        bytes.len() > 100_000,
        "a page with content: {} bytes",
        bytes.len()
    );
}

/// `report --html` of `capture` into a scratch file: the page's text.
fn page_of(capture: &str) -> String {
    let html = common::scratch("html", &format!("{capture}.html"));
    let o = Command::new(common::bin())
        .arg("report")
        .arg(common::fixture(capture))
        .arg("--html")
        .arg(&html)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::read_to_string(&html).unwrap()
}

/// The page has the load-test view and the request phases, each a section of its own, with the figures
/// `load --json` and `mysql --json` give: on the late-COMMIT run, the longest transaction with its
/// statements at their frames, the server's row, and the phases summed over the answered requests. On
/// markup.pcap both sections are there too, made of the page's own elements only (its statements'
/// markup is text).
#[test]
fn the_page_has_the_load_view_and_the_request_phases() {
    let capture = "load-commit-late.pcap";
    let text = page_of(capture);
    let path = common::fixture(capture);
    let load = common::json(&["load", "--json", path.to_str().unwrap()]);
    let mysql = common::json(&["mysql", "--json", path.to_str().unwrap()]);
    let section = |id: &str| -> String {
        let at = text
            .find(&format!("<section id=\"{id}\">"))
            .unwrap_or_else(|| panic!("section {id}"));
        let end = text[at..].find("</section>").unwrap();
        text[at..at + end].to_string()
    };
    let l = section("load");
    assert!(l.contains("<h2>Load</h2>"));
    let worst = &load["transactions"]["worst"][0];
    assert!(
        l.contains(&format!(
            "from frame {} ({} → {}, commit)",
            worst["first_frame"],
            worst["client"].as_str().unwrap(),
            worst["server"].as_str().unwrap()
        )),
        "{l}"
    );
    for st in worst["statements"].as_array().unwrap() {
        assert!(
            l.contains(&format!(
                "<td class=\"n\" data-v=\"{}\">{}</td>",
                st["frame"], st["frame"]
            )),
            "frame {} in {l}",
            st["frame"]
        );
        assert!(l.contains(&format!(
            "<code>{}</code>",
            escaped(st["fingerprint"].as_str().unwrap())
        )));
    }
    let server = load["servers"][0]["server"].as_str().unwrap();
    assert!(l.contains(&format!("<tr><td>{server}</td>")), "{l}");
    let p = section("phases");
    let phases = &mysql["phases"];
    assert!(
        p.contains(&format!(
            "{} answered requests timed phase by phase",
            common_count(phases["requests"].as_u64().unwrap())
        )),
        "{p}"
    );
    for s in mysql["statements"].as_array().unwrap().iter().take(3) {
        assert!(
            p.contains(&format!(
                "<code>{}</code>",
                escaped(s["fingerprint"].as_str().unwrap())
            )),
            "{p}"
        );
    }

    let markup = page_of("markup.pcap");
    assert!(markup.contains("<section id=\"load\">"));
    assert!(markup.contains("<section id=\"phases\">"));
    assert_only_own_elements(&markup);
}

/// A count as the house style writes it: "1,234".
fn common_count(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
