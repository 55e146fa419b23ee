//! One module per subcommand: its arguments (clap) and its `run`, which parses what clap left as text,
//! calls the library and prints the result.

pub mod compare;
pub mod completions;
pub mod diff;
pub mod export;
pub mod extract;
pub mod first_reset;
pub mod flows;
pub mod load;
pub mod man;
pub mod mysql;
pub mod rate;
pub mod report;
pub mod rt;
pub mod split;
