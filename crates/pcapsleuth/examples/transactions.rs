//! Every MySQL transaction of a capture as a JSON line, as the parallel engine completes them (one
//! connection's in capture order, connections interleaved), stopping after N when given:
//! `cargo run --release -p pcapsleuth --example transactions -- CAPTURE [N]`
use std::io::Write;
use std::ops::ControlFlow::{Break, Continue};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use pcapsleuth::analysis::{sinks, EngineOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let cap = pcapsleuth::capture::Capture::open(args.next().ok_or("usage: CAPTURE [N]")?)?;
    let limit: usize = args.next().map_or(Ok(usize::MAX), |n| n.parse())?;
    let written = AtomicUsize::new(0);
    let sink = sinks::transactions(|_, t| {
        let tx = t.transaction;
        let line = serde_json::json!({ "request_frame": tx.request_frame, "server": t.server.to_string(),
            "command": tx.command.name(), "statement": tx.statement, "fate": t.fate(),
            "rt_ns": t.response_time_ns(), "error_code": t.error_code() });
        writeln!(std::io::stdout().lock(), "{line}")?; // one write per line: threads never mix lines
        let more = written.fetch_add(1, Relaxed) + 1 < limit;
        Ok::<_, std::io::Error>(if more { Continue(()) } else { Break(()) })
    });
    let run = sinks::stream(&cap, &EngineOptions::default(), &sink)?;
    if run.output == sinks::Streamed::StoppedBySink {
        eprintln!("stopped after {limit} transactions");
    }
    Ok(())
}
