//! Capture bytes through every analysis to every report a person reads, checking the sanitiser: no
//! control character (C0 but the line break, DEL, C1), bidirectional control or separator may be written
//! raw (`pcapsleuth_report::visible`), in any text report, in the JSON (where they must be `\uXXXX`
//! escapes that decode back to the same values), in the `extract` commands the findings suggest, or, for
//! one input in 64, in the HTML page.
//!
//! Input: any bytes, taken whole as the capture file; real captures are seeds as they are. The seeds
//! (`seeds/text_render`) are `markup.pcap` and copies of it whose statement and error message texts hold
//! every C0 and C1 control, DEL, the bidirectional controls and OSC/DCS/CSI sequences, so that mutations
//! start from text that reaches the renderers. The input's last byte picks `--mysql-port 3306` (bit 0)
//! and the HTML page (`& 0x3f == 0x3f`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use pcapsleuth::analysis::{
    analyze, first_reset, full_report, unknowns, EngineOptions, Everything, MysqlDetection,
};
use pcapsleuth::capture::Capture;
use pcapsleuth::report::{self, visible::is_hazard, FlowSort};

/// Fails on the first hazard in `text` other than a line break, showing where.
fn assert_shown(what: &str, text: &str) {
    if let Some((i, c)) = text
        .char_indices()
        .find(|&(_, c)| is_hazard(c) && c != '\n')
    {
        let from = text[..i].char_indices().rev().nth(40).map_or(0, |(j, _)| j);
        panic!(
            "{what}: U+{:04X} written raw after {:?}",
            c as u32,
            &text[from..i]
        );
    }
}

/// Every string of a JSON value (object keys too), in document order.
fn strings(v: &serde_json::Value) -> Vec<&str> {
    let mut out = Vec::new();
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            serde_json::Value::String(s) => out.push(s.as_str()),
            serde_json::Value::Array(items) => stack.extend(items.iter().rev()),
            serde_json::Value::Object(map) => {
                for (k, v) in map.iter().rev() {
                    out.push(k.as_str());
                    stack.push(v);
                }
            }
            _ => {}
        }
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let Ok(cap) = Capture::from_vec("fuzz.pcap", data.to_vec()) else {
        return;
    };
    let pick = data.last().copied().unwrap_or(0);
    let mysql = if pick & 1 != 0 {
        MysqlDetection::Port(3306)
    } else {
        MysqlDetection::Auto
    };
    let run = analyze(
        &cap,
        &EngineOptions {
            threads: 1,
            mysql,
            ..EngineOptions::default()
        },
        Everything::default,
    );
    let full = full_report(&run);
    let fr = first_reset(&run, 20);
    let flows = pcapsleuth::analysis::flow_rows(
        &run,
        &report::flow_order(&run.connections, FlowSort::Start),
    );
    let unknown = unknowns(&run);
    let texts = [
        ("report", report::render_report(&full)),
        ("first-reset", report::render_first_reset(&fr)),
        ("mysql", report::render_mysql(&full.mysql, 20)),
        ("rt", report::render_rt(&full.rt, true)),
        ("rate", report::render_rate(&full.rate)),
        ("flows", report::render_flows(&run.capture, &flows)),
        ("unknowns", report::render_unknowns(&unknown)),
    ];
    for (what, text) in &texts {
        assert_shown(what, text);
    }
    for f in &full.findings {
        if let Some(command) = &f.extract_command {
            assert_shown("an extract command", command);
        }
    }
    let json = report::to_json(&full);
    assert_shown("report --json", &json);
    let back: serde_json::Value = serde_json::from_str(&json).expect("valid JSON");
    // The escapes decode to the values themselves: every string, in order (numbers are another story:
    // serde_json's parser need not round-trip a float to the last bit).
    let value = serde_json::to_value(&full).expect("the report serialises");
    assert!(strings(&back) == strings(&value), "JSON strings changed");
    assert_shown("first-reset --json", &report::to_json(&fr));
    if pick & 0x3f == 0x3f {
        if let Ok(page) = report::render_html(&full, &unknown, "fuzz.pcap") {
            assert_shown("report --html", &page);
        }
    }
});
