//! Writes the plots of a capture: `cargo run -p pcapsleuth-report --example plot -- CAPTURE OUT_DIR`.

use std::path::PathBuf;
use std::process::ExitCode;

use pcapsleuth_analysis::{analyze, full_report, EngineOptions, Everything};
use pcapsleuth_capture::Capture;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [capture, out] = args.as_slice() else {
        eprintln!("usage: plot CAPTURE OUT_DIR");
        return ExitCode::from(2);
    };
    let cap = match Capture::open(capture) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{capture}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let report = full_report(&analyze(
        &cap,
        &EngineOptions::default(),
        Everything::default,
    ));
    match pcapsleuth_report::write_plot_set(&PathBuf::from(out), &report) {
        Ok(set) => {
            for f in &set.written {
                println!("wrote {}", f.display());
            }
            for s in &set.skipped {
                println!("skipped {}: {}", s.name, s.reason);
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}
