//! Every MySQL transaction as a JSON line, stopping after N: `--example transactions -- CAPTURE [N]`
use pcapsleuth::analysis::sinks::{self, Streamed::StoppedBySink};
use std::{io::Write, ops::ControlFlow::*, sync::atomic::*};
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let cap = pcapsleuth::capture::Capture::open(args.next().ok_or("usage: CAPTURE [N]")?)?;
    let left = AtomicUsize::new(args.next().map_or(Ok(usize::MAX), |n| n.parse())?);
    let sink = sinks::transactions(|_, t| {
        let (tx, rt_ns, error) = (t.transaction, t.response_time_ns(), t.error_code());
        let line = serde_json::json!({ "frame": tx.request_frame, "command": tx.command.name(), "fate": t.fate(),
            "statement": tx.statement, "rt_ns": rt_ns, "error_code": error });
        writeln!(std::io::stdout().lock(), "{line}")?; // a write error fails the run: `?` below
        let more = left.fetch_sub(1, Ordering::Relaxed) > 1; // `Break` stops the run early
        Ok::<_, std::io::Error>(if more { Continue(()) } else { Break(()) })
    }); // and EngineOptions::interrupt, a flag another thread may set (Ctrl-C), stops any run
    if let StoppedBySink = sinks::stream(&cap, &Default::default(), &sink)?.output {
        eprintln!("stopped after the transactions asked for");
    }
    Ok(())
}
