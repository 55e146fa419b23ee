//! MySQL on a TCP connection: the layer between the TCP tracking of `pcapsleuth-flow`, the MySQL wire
//! protocol of `pcapsleuth-mysql`, and the analyses.
//!
//! What it does, for each TCP connection the engine follows: it recognises MySQL (from the greeting, a
//! login, or a request and its answer, on any port: [`RecognisedBy`]), puts each direction's bytes in
//! order with flow's reassembler and hands them to mysql's `Session` (through TLS where the keys are
//! known), tells each transaction as it completes ([`TransactionView`]), reads each close in MySQL terms
//! (what the session was doing: an [`Incident`] when it cut a request off), and summarises the session
//! when the connection ends ([`MysqlSessionFacts`]). Its one type the engine drives is `MysqlTrack`;
//! `PayloadHint` is what the engine's scan may tell it about a payload, carried opaque.
//!
//! What it never does: read packets or files (the engine hands it TCP segments and says where their bytes
//! live), decide TCP state (flow's tracker has, before a segment reaches it), keep anything across
//! connections (the run's aggregates are the analyses'), or know which analyses run (it tells, the engine
//! relays). Nothing here imports the engine: the dependency runs flow + mysql -> this layer -> the engine
//! and the analyses.
//!
//! The `mysql` report itself ([`MysqlStatistics`]) is an analysis of what this layer tells, kept beside
//! it in `statistics`.

mod close_seen;
mod counts;
mod facts;
mod fate;
mod gap_mark;
mod hint;
mod incident;
mod options;
mod recognition;
mod request_phases;
mod response_time;
mod statistics;
mod tail;
mod tls;
mod track;
mod transaction_view;

pub use close_seen::CloseSeenFacts;
pub use counts::RequestCounts;
pub use facts::MysqlSessionFacts;
pub use fate::{CutOff, Fate, UnansweredRequest};
pub(crate) use gap_mark::cut_text;
pub(crate) use hint::PayloadHint;
pub use incident::{Incident, IncidentKind};
pub use options::{MysqlDepth, MysqlDetection};
pub use recognition::RecognisedBy;
pub use request_phases::{ListedPhases, RequestPhases};
pub use response_time::{first_byte_ns, response_end_known, response_time_ns};
pub(crate) use statistics::login_from_syn;
pub use statistics::{
    command_word, statement_label, ConnectSummary, ErrorDetail, ErrorExample, MysqlAggregate,
    MysqlFilter, MysqlReport, MysqlStatistics, OtherStatements, PhaseSummary, SecondCounts,
    ServerRow, SlowRequest, StatementFingerprinter, StatementGroup, StatusCounts, CUT_MARK,
    ERROR_EXAMPLES, SLOW_REQUESTS_LISTED, STATEMENT_GROUPS_KEPT,
};
pub(crate) use tail::Home;
pub use tls::{
    EstimatedExchangeView, EstimatedRt, TlsAggregate, TlsKeys, TlsReport, TlsResumption,
    TlsSession, TlsSessionFacts,
};
pub(crate) use tls::{EstimatedTimes, Told};
pub(crate) use track::MysqlTrack;
pub use transaction_view::TransactionView;
