//! MySQL in a capture: on each connection that speaks it ([`connection`]: recognised, decoded, its
//! closes read), and over the whole run ([`statistics`]: the `mysql` report).

mod connection;
mod hint;
mod recognition;
mod statistics;
mod tls;

pub use connection::{
    first_byte_ns, response_end_known, response_time_ns, CloseSeenFacts, CutOff, Fate, Incident,
    IncidentKind, ListedPhases, MysqlDepth, MysqlDetection, MysqlSessionFacts, RequestCounts,
    RequestPhases, TransactionView, UnansweredRequest,
};
pub(crate) use connection::{Home, MysqlTrack};
pub(crate) use hint::PayloadHint;
pub use recognition::RecognisedBy;
pub(crate) use statistics::login_from_syn;
pub use statistics::{
    command_word, statement_label, ConnectSummary, ErrorDetail, ErrorExample, MysqlAggregate,
    MysqlFilter, MysqlReport, MysqlStatistics, OtherStatements, PhaseSummary, SecondCounts,
    ServerRow, SlowRequest, StatementFingerprinter, StatementGroup, StatusCounts, CUT_MARK,
    ERROR_EXAMPLES, SLOW_REQUESTS_LISTED, STATEMENT_GROUPS_KEPT,
};
pub(crate) use tls::Told;
pub use tls::{
    EstimatedExchangeView, EstimatedRt, TlsAggregate, TlsKeys, TlsReport, TlsResumption,
    TlsSession, TlsSessionFacts,
};
