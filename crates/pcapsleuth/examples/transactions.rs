//! Every MySQL transaction of a capture, one JSON object per line, as the parallel engine completes them:
//! `cargo run --release -p pcapsleuth --example transactions -- CAPTURE...`
//!
//! Lines of one connection come in capture order; connections interleave (sort by `request_frame`).
use std::io::Write;

use pcapsleuth::analysis::{self, Analysis, CaptureFacts, ConnectionView, TransactionView};
use pcapsleuth::capture::CaptureSet;

/// Writes each transaction as it completes: nothing is kept, so memory stays flat.
struct Transactions;

impl Analysis for Transactions {
    type PerConnection = ();
    type Output = ();

    fn transaction(&mut self, _: &mut (), _: &ConnectionView<'_>, t: &TransactionView<'_>) {
        let tx = t.transaction;
        let line = serde_json::json!({
            "request_frame": tx.request_frame,
            "response_frame": tx.last_response_frame,
            "time": tx.request_ts_ns as f64 / 1e9,
            "client": t.client.to_string(),
            "server": t.server.to_string(),
            "command": tx.command.name(),
            "statement": tx.statement,
            "fate": t.fate(),
            "rt_us": t.response_time_ns().map(|ns| ns as f64 / 1e3),
            "error_code": t.error_code(),
            "rows": tx.rows,
        });
        // One write per line: lines from different threads never mix.
        let _ = writeln!(std::io::stdout().lock(), "{line}");
    }

    fn merge(&mut self, _: Self) {}

    fn finish(self, _: &CaptureFacts) {}
}

fn main() -> std::process::ExitCode {
    let files: Vec<std::path::PathBuf> = std::env::args_os().skip(1).map(Into::into).collect();
    if files.is_empty() {
        eprintln!("usage: transactions CAPTURE...");
        return std::process::ExitCode::from(2);
    }
    let mut set = match CaptureSet::open(&files) {
        Ok(set) => set,
        Err(e) => {
            eprintln!("transactions: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    let opts = analysis::EngineOptions::default();
    analysis::analyze_set(&mut set, &opts, || Transactions, |_, _| {});
    std::process::ExitCode::SUCCESS
}
