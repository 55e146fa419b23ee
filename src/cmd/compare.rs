//! `pcapsleuth compare`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::bail;
use pcapsleuth::analysis::{self};
use pcapsleuth::report::{self};

use crate::args;
use crate::common::{analyze, Common, EngineArgs};
use crate::shell::{emit, finish, fitted, InputError};

// The help text is the doc comment of `Command::Compare` (src/main.rs).
#[derive(clap::Args)]
pub struct Args {
    /// The client capture and the server capture, one file each.
    #[arg(value_names = ["CLIENT_CAPTURE", "SERVER_CAPTURE"], num_args = 2, conflicts_with_all = ["client", "server"])]
    pub pair: Vec<PathBuf>,
    /// The capture taken at the client (or on its side of the path): files read as one capture, as
    /// the analyses read them.
    #[arg(long, value_name = "FILE", num_args = 1.., requires = "server")]
    pub client: Vec<PathBuf>,
    /// The capture taken at the server.
    #[arg(long, value_name = "FILE", num_args = 1.., requires = "client")]
    pub server: Vec<PathBuf>,
    /// The server's clock minus the client's, when known (`0` for two captures taken on one host or by
    /// hosts synchronised by PTP; `-2.5ms`, `12s`); by default it is estimated from the matched requests.
    #[arg(
        long,
        value_name = "DURATION",
        allow_hyphen_values = true,
        value_parser = args::signed_duration
    )]
    pub clock_offset: Option<i64>,
    /// Interval of the per-interval rows (`per_interval` in JSON), at least 1ms (e.g. 1s, 100ms).
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = args::interval)]
    pub interval: Duration,
    /// Also print the per-interval table.
    #[arg(long)]
    pub per_interval: bool,
    /// How many notable transactions to list (the earliest; all are counted).
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub notable: usize,
    #[command(flatten)]
    pub engine: EngineArgs,
}

pub fn run(given: Args) -> anyhow::Result<ExitCode> {
    let Args {
        pair,
        client,
        server,
        clock_offset,
        interval,
        per_interval,
        notable,
        engine,
    } = given;
    let (client, server) = match (&pair[..], client.is_empty()) {
        ([c, s], true) => (vec![c.clone()], vec![s.clone()]),
        (_, false) => (client, server),
        _ => bail!(InputError(
            "compare needs the client capture and the server capture: CLIENT_CAPTURE SERVER_CAPTURE, or --client FILE... --server FILE...".into()
        )),
    };
    let interval_ns = args::nanos(interval);
    let clock = match clock_offset {
        None => analysis::ClockPolicy::Estimate,
        Some(offset_ns) => analysis::ClockPolicy::Known { offset_ns },
    };
    let side = |files: Vec<PathBuf>| Common {
        files,
        engine: engine.clone(),
        no_mysql: false,
    };
    // Each side keeps, once read, only what the comparison needs: its per-connection tables are
    // summed into its unknowns and dropped, so that the second side's run does not stack on the first's
    // (a capture of a million connection attempts holds ~80 MB of them).
    let read = |files: Vec<PathBuf>, statements| -> anyhow::Result<_> {
        let both = || {
            (
                analysis::Exchanges::new(statements),
                analysis::Endings::default(),
            )
        };
        let (set, mut run) = analyze(&side(files), both)?;
        let unknowns = analysis::unknowns(&run);
        run.connections = Default::default();
        run.mysql_sessions = Vec::new();
        Ok((set, run, unknowns))
    };
    // No request's statement text is held: only the client capture's name anything (its notable
    // transactions and the requests its closes cut off), and those few are read again afterwards. Standard
    // input cannot be read twice: its statements are kept as it is read.
    let client_statements = if client.iter().any(|f| f.as_os_str() == "-") {
        analysis::StatementText::Kept
    } else {
        analysis::StatementText::Dropped
    };
    let client_files = client.clone();
    let (client_set, mut client_run, client_unknowns) = read(client, client_statements)?;
    let (server_set, server_run, server_unknowns) = read(server, analysis::StatementText::Dropped)?;
    let span = |t: &analysis::Timeline| {
        Some(analysis::CaptureSpan {
            first_ns: t.body_first?.0,
            last_ns: t.body_last?.0,
        })
    };
    let opts = analysis::CompareOptions {
        interval_ns,
        clock,
        client_span: span(&client_run.capture.timeline),
        server_span: span(&server_run.capture.timeline),
        notable_limit: notable,
    };
    let (server_exchanges, server_endings) = &server_run.output;
    let compared = |(client_exchanges, client_endings): &(
        Vec<analysis::Exchange>,
        Vec<analysis::ConnectionEnding>,
    )| {
        let cmp = analysis::compare(client_exchanges, server_exchanges, &opts);
        let endings = analysis::compare_endings(
            (client_exchanges, client_endings),
            (server_exchanges, server_endings),
            &cmp,
            opts.spans(client_exchanges, server_exchanges),
        );
        (cmp, endings)
    };
    let (mut cmp, mut endings) = compared(&client_run.output);
    if client_statements == analysis::StatementText::Dropped && client_run.capture.stopped.is_none()
    {
        let frames: std::collections::BTreeSet<u64> = cmp
            .notable
            .iter()
            .map(|n| n.client_capture.request_frame)
            .chain(
                client_run
                    .output
                    .1
                    .iter()
                    .flat_map(|e| e.open.iter().map(|o| o.request.frame)),
            )
            .collect();
        if !frames.is_empty() {
            let frames = std::sync::Arc::new(frames);
            let (_, names) = analyze(&side(client_files), || {
                analysis::RequestStatements::new(frames.clone())
            })?;
            if names.output.iter().any(|(_, text)| text.is_some()) {
                // The comparison does not depend on the texts, only its words do: it is made again
                // with them (the first one's pairs freed first).
                drop((cmp, endings));
                analysis::name_requests(&mut client_run.output.0, names.output);
                (cmp, endings) = compared(&client_run.output);
            }
        }
    }
    let client_exchanges = &client_run.output.0;
    let sides = (
        report::ComparedCapture {
            capture: &client_run.capture,
            unknowns: &client_unknowns,
            requests: client_exchanges.len(),
        },
        report::ComparedCapture {
            capture: &server_run.capture,
            unknowns: &server_unknowns,
            requests: server_exchanges.len(),
        },
    );
    emit(if engine.json {
        report::to_json(&report::compare_json(&cmp, &endings, &sides.0, &sides.1))
    } else {
        fitted(report::render_compare(
            &cmp,
            &endings,
            &sides.0,
            &sides.1,
            per_interval,
        ))
    })?;
    let codes = [
        finish(&client_set, &client_run),
        finish(&server_set, &server_run),
    ];
    Ok(if codes.contains(&ExitCode::from(2)) {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}
