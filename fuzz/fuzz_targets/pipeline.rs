//! Capture bytes through the whole pipeline: reading, every analysis, every report in text and JSON, and
//! (for some inputs) the plots. Nothing may panic, hang or allocate from a wild length or timestamp
//! (libFuzzer's `-rss_limit_mb`, `-malloc_limit_mb` and `-timeout` catch the last two), and every report
//! must be the same with one split as with several.
//!
//! Input: any bytes, taken whole as the capture file, so that real captures are seeds as they are. Its
//! last byte also picks the run: bits 0-1 the split count (2, 3, 7 or 64), bit 2 the interval (100 ms or
//! 1 s), bit 3 decoding port 3306 as MySQL; 0xFF: also draw the plots, in memory (slow: one input in 256).
#![no_main]

use libfuzzer_sys::fuzz_target;
use pcapsleuth::analysis::{
    analyze, first_reset, full_report, EngineOptions, Everything, MysqlDetection, Run, Statistics,
};
use pcapsleuth::capture::Capture;
use pcapsleuth::report::{self, FlowSort};

fn run(cap: &Capture, splits: usize, interval_ns: i64, mysql: MysqlDetection) -> Run<Statistics> {
    analyze(
        cap,
        &EngineOptions {
            threads: 1,
            splits: Some(splits),
            mysql,
            ..EngineOptions::default()
        },
        || Everything::new(interval_ns),
    )
}

/// Every report of the CLI, as text and JSON, in one string.
fn reports(a: &Run<Statistics>) -> String {
    let full = full_report(a);
    let fr = first_reset(a, 20);
    let flows = pcapsleuth::analysis::flow_rows(
        a,
        &report::flow_order(&a.connections, FlowSort::Duration),
    );
    let unknowns = pcapsleuth::analysis::unknowns(a);
    let mut out = report::to_json(&full) + &report::to_json(&fr);
    out += &report::to_json(&unknowns);
    out += &report::render_unknowns(&unknowns);
    out += &report::to_json(&a.capture);
    out += &report::to_json(&a.connections);
    out += &report::render_report(&full);
    out += &report::render_first_reset(&fr);
    out += &report::render_mysql(&full.mysql, 20);
    out += &report::render_rate(&full.rate);
    out += &report::render_rt(&full.rt, true);
    out += &report::render_flows(&a.capture, &flows);
    for line in a.capture.timeline.damage_lines() {
        out += &line;
    }
    for d in &a.capture.damage {
        out += &d.to_string();
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let Ok(cap) = Capture::from_vec("fuzz.pcap", data.to_vec()) else {
        return;
    };
    let pick = data.last().copied().unwrap_or(0);
    let splits = [2, 3, 7, 64][usize::from(pick & 3)];
    let interval_ns = if pick & 4 != 0 {
        100_000_000
    } else {
        1_000_000_000
    };
    let mysql = if pick & 8 != 0 {
        MysqlDetection::Port(3306)
    } else {
        MysqlDetection::Auto
    };
    let whole = run(&cap, 1, interval_ns, mysql);
    let split = run(&cap, splits, interval_ns, mysql);
    assert_eq!(whole, split, "the analysis differs with {splits} splits");
    let text = reports(&whole);
    assert_eq!(
        text,
        reports(&split),
        "a report differs with {splits} splits"
    );
    if pick == 0xFF {
        // Drawn in memory, both formats, as `--plots` draws them: writing them out (each file synced to
        // disk) would measure the disk, not the drawing.
        let _ = report::drawn_plots(&full_report(&whole));
    }
});
