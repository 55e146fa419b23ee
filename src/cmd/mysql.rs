//! `pcapsleuth mysql`.

use std::process::ExitCode;
use std::time::Duration;

use pcapsleuth::analysis::{self, Everything, MysqlStatistics, Run};
use pcapsleuth::report::{self};

use crate::args;
use crate::common::{analyze, mysql_filter, Common, PlotsArg};
use crate::shell::{finish, output, output_json_streamed, plot_report};

// The help text is the doc comment of `Command::Mysql` (src/main.rs).
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub common: Common,
    /// Only connections with this port (client or server side).
    #[arg(long, value_name = "N")]
    pub port: Option<u16>,
    /// Only connections to this server (IP:PORT or [IPv6]:PORT).
    #[arg(long, value_name = "IP:PORT")]
    pub server: Option<String>,
    /// Only requests answered with an error.
    #[arg(long)]
    pub errors_only: bool,
    /// Only requests whose response took at least this long (with its unit: 10ms, 1.5s, 250us).
    #[arg(long, value_name = "DURATION", value_parser = args::duration)]
    pub slower_than: Option<Duration>,
    /// How many statement groups to print.
    #[arg(long, default_value_t = 20)]
    pub limit: usize,
    #[command(flatten)]
    pub plots: PlotsArg,
}

pub fn run(given: Args) -> anyhow::Result<ExitCode> {
    let Args {
        common,
        port,
        server,
        errors_only,
        slower_than,
        limit,
        plots,
    } = given;
    let filter = mysql_filter(port, server, errors_only, slower_than)?;
    // Rate series and response-time distributions are only drawn, never printed, by `mysql`.
    match plots.dir.as_deref() {
        Some(dir) => {
            let (cap, a) = analyze(&common, || {
                Everything::default().mysql_filter(filter.clone())
            })?;
            print_mysql(common.engine.json, &a, &a.output.mysql, limit)?;
            plot_report(dir, &analysis::full_report(&a))?;
            Ok(finish(&cap, &a))
        }
        None => {
            let (cap, a) = analyze(&common, || MysqlStatistics::new(filter.clone()))?;
            print_mysql(common.engine.json, &a, &a.output, limit)?;
            Ok(finish(&cap, &a))
        }
    }
}
/// `pcapsleuth mysql`'s report of `m`, computed in the run `a`.
fn print_mysql<O>(
    json: bool,
    a: &Run<O>,
    m: &analysis::MysqlAggregate,
    limit: usize,
) -> anyhow::Result<()> {
    let mut r = analysis::mysql_report(a, m);
    if !json {
        return output(json, a, &r, |r| report::render_mysql(r, limit));
    }
    let arrays = MysqlArrays::take(&mut r);
    output_json_streamed(a, &r, &arrays.under(&[]))
}

/// The arrays of a MySQL report that grow with the capture (up to their bounds), taken out of it to be
/// written element by element.
pub(crate) struct MysqlArrays {
    statements: Vec<analysis::StatementGroup>,
    incidents: Vec<analysis::Incident>,
    unanswered: Vec<analysis::UnansweredRequest>,
    per_second: Vec<analysis::SecondCounts>,
    error_details: Vec<analysis::ErrorDetail>,
    slow_requests: Option<Vec<analysis::SlowRequest>>,
}

impl MysqlArrays {
    /// Takes the arrays out of `r`.
    pub(crate) fn take(r: &mut analysis::MysqlReport) -> Self {
        MysqlArrays {
            statements: std::mem::take(&mut r.statements),
            incidents: std::mem::take(&mut r.incidents),
            unanswered: std::mem::take(&mut r.unanswered),
            per_second: std::mem::take(&mut r.per_second),
            error_details: std::mem::take(&mut r.error_details),
            slow_requests: r.slow_requests.take(),
        }
    }

    /// Puts the arrays back into `r`.
    pub(crate) fn put_back(self, r: &mut analysis::MysqlReport) {
        r.statements = self.statements;
        r.incidents = self.incidents;
        r.unanswered = self.unanswered;
        r.per_second = self.per_second;
        r.error_details = self.error_details;
        r.slow_requests = self.slow_requests;
    }

    /// Each array with its path of keys: `prefix` (the key of the report in a larger one) and its own.
    pub(crate) fn under(
        &self,
        prefix: &[&'static str],
    ) -> Vec<(Vec<&'static str>, &dyn report::ElementSource)> {
        let mut arrays: Vec<(&str, &dyn report::ElementSource)> = vec![
            ("statements", &self.statements),
            ("incidents", &self.incidents),
            ("unanswered", &self.unanswered),
            ("per_second", &self.per_second),
            ("error_details", &self.error_details),
        ];
        if let Some(slow) = &self.slow_requests {
            arrays.push(("slow_requests", slow));
        }
        arrays
            .into_iter()
            .map(|(key, a)| (prefix.iter().copied().chain([key]).collect(), a))
            .collect()
    }
}
