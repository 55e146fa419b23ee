//! A custom analysis on the parallel engine: requests, errors and response time per table, merged across
//! workers. `cargo run --release -p pcapsleuth --example per_table -- CAPTURE...`
use std::collections::BTreeMap;

use pcapsleuth::analysis::{self, Analysis, CaptureFacts, ConnectionView, Fate, TransactionView};
use pcapsleuth::capture::CaptureSet;
use pcapsleuth::mysql::Command;

/// Per table: requests, error responses, answered requests and the sum of their response times (ns).
#[derive(Default)]
struct PerTable(BTreeMap<String, [u64; 4]>);

/// The first table a statement names (after FROM, INTO, UPDATE, JOIN or TABLE), lower-cased.
fn table(statement: &str) -> String {
    let words: Vec<&str> = statement.split_whitespace().collect();
    let after = ["from", "into", "update", "join", "table"];
    words
        .windows(2)
        .find(|w| after.contains(&w[0].to_ascii_lowercase().as_str()))
        .map(|w| {
            w[1].trim_matches(|c: char| "`;(),".contains(c))
                .to_ascii_lowercase()
        })
        .unwrap_or_else(|| "(no table)".into())
}

impl Analysis for PerTable {
    type PerConnection = ();
    type Output = BTreeMap<String, [u64; 4]>;

    fn transaction(&mut self, _: &mut (), _: &ConnectionView<'_>, t: &TransactionView<'_>) {
        let tx = t.transaction;
        if tx.command == Command::Connect || t.fate() == Fate::NoResponse {
            return;
        }
        let row = self
            .0
            .entry(table(tx.statement.as_deref().unwrap_or("")))
            .or_default();
        row[0] += 1;
        row[1] += u64::from(t.error_code().is_some());
        if let Some(rt) = t.response_time_ns() {
            row[2] += 1;
            row[3] += rt;
        }
    }

    /// Workers saw different connections: their counts add up, in any order.
    fn merge(&mut self, other: Self) {
        for (table, theirs) in other.0 {
            let mine = self.0.entry(table).or_default();
            (0..4).for_each(|i| mine[i] += theirs[i]);
        }
    }

    fn finish(self, _: &CaptureFacts) -> Self::Output {
        self.0
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let files: Vec<std::path::PathBuf> = std::env::args_os().skip(1).map(Into::into).collect();
    let mut set = CaptureSet::open(&files)?;
    let opts = analysis::EngineOptions::default();
    let run = analysis::analyze_set(&mut set, &opts, PerTable::default, |_, _| {});
    println!(
        "{:<32} {:>10} {:>8} {:>12}",
        "table", "requests", "errors", "mean rt µs"
    );
    for (table, [requests, errors, answered, rt_ns]) in run.output {
        let mean = rt_ns as f64 / 1e3 / answered.max(1) as f64;
        println!("{table:<32} {requests:>10} {errors:>8} {mean:>12.1}");
    }
    Ok(())
}
