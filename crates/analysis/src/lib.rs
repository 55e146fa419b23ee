//! The analyses of pcapsleuth and the parallel engine they run on.
//!
//! Four things live here:
//!
//! * **The [`Analysis`] trait** ([`events`]): what the engine tells an analysis about every TCP
//!   connection, in capture order: the connection opened, each segment, each MySQL transaction (request,
//!   response, response time, error), each close with what the session was doing, and the connection's
//!   end. One instance per worker from a factory, merged in any order, finished into a result.
//! * **The engine** ([`analyze`], [`analyze_set`]): reads a capture in parallel splits, follows every
//!   connection with its TCP tracker and MySQL decoder, and runs an analysis on it. Its [`Run`] holds
//!   what the capture was, every connection with its roles and MySQL facts, and the analysis' output.
//!   The result is the same for any number of splits or threads.
//! * **The analyses:**
//!   - [`MysqlStatistics`]: requests, errors by code with their own response times, statements by
//!     fingerprint, incidents ([`MysqlAggregate::report`]);
//!   - [`ResponseTimes`]: response-time distributions, their modes and what the slow ones share
//!     ([`RtAggregate::report`]);
//!   - [`Rates`]: packets/s and bits/s per direction, and ceilings ([`RateAggregate::report`]);
//!   - [`Everything`]: all three at once;
//!   - reports over a run's connections, whatever analysis it ran: [`first_reset`] (who closed first,
//!     and how; [`every_close`]: every first FIN and first RST so judged), [`connect_report`] (connects that could not get in), [`unknowns`] (what the capture
//!     could not show); and [`full_report`] (everything, as ranked findings).
//! * **Two capture points** ([`compare`]): the same workload captured at the client and at the server,
//!   lined up transaction by transaction: where each one's time went (the server or the path). The
//!   [`Exchanges`] analysis gives each capture's requests as the records [`compare`] lines up.
//!
//! Detector thresholds live in one place, with the reason for each value: the `thresholds` module. Why a
//! close or a request ended as it did is a [`cause::Cause`], worded in one place: the [`cause`] module.
//!
//! The first RST of a capture, then its MySQL statistics:
//!
//! ```
//! use pcapsleuth_analysis::{analyze, first_reset, EngineOptions, MysqlDepth, MysqlStatistics};
//! use pcapsleuth_flow::{CloseFlag, Role};
//!
//! let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/server-closes.pcap");
//! let cap = pcapsleuth_capture::Capture::open(path)?;
//! // No analysis besides the connections: `first-reset` needs nothing more, and of each MySQL session
//! // only what judges its closes (plain exchanges are counted, not decoded: the same answer, sooner).
//! let closes_only = EngineOptions {
//!     mysql_depth: MysqlDepth::Closes,
//!     ..EngineOptions::default()
//! };
//! let run = analyze(&cap, &closes_only, || ());
//! let rst = first_reset(&run, 20).first_rst.unwrap();
//! assert_eq!((rst.frame, rst.initiator, rst.flag), (29, Role::Server, CloseFlag::Rst));
//! println!("first RST: frame {} by {:?}: {}", rst.frame, rst.initiator, rst.reason);
//!
//! // The same capture through an analysis: one `MysqlStatistics` per worker, merged, finished.
//! let run = analyze(&cap, &EngineOptions::default(), MysqlStatistics::default);
//! let mysql = run.output.report();
//! assert_eq!((mysql.sessions, mysql.queries), (2, 4));
//! // `select sleep(10)` was cut off when the server's FIN closed its connection.
//! assert_eq!((mysql.requests.answered, mysql.requests.cut_off), (3, 1));
//! # Ok::<(), pcapsleuth_capture::CaptureError>(())
//! ```

#![deny(missing_docs)]

pub mod cause;
mod closes;
mod compare;
mod compare_ends;
mod connects;
pub mod coverage;
mod diff;
mod engine;
pub use engine::events;
mod everything;
mod exchanges;
mod facts;
mod finding;
mod findings;
mod histogram;
mod hump_findings;
mod humps;
mod load;
mod modes;
mod mysql;
mod path;
mod phases;
mod rate;
mod reasons;
mod replication;
mod resends;
mod rt;
pub mod sinks;
mod thresholds;
mod timeline;
pub mod units;
mod unknowns;
mod widening;

pub use closes::{
    connection_closes, every_close, explain_incidents, first_reset, flow_rows, mysql_report,
    CloseRecord, CloseReport, CloseVerdict, FinJudgement, FirstReset, FlowClose, FlowCloses,
    FlowRow, Judgements, NotJudged, SessionState,
};
pub use compare::{
    compare, CaptureSpan, CapturedAs, ClientHump, ClockAlignment, ClockBasis, ClockPolicy,
    CompareOptions, Comparison, ConnectionPairing, Exchange, IntervalComparison, MatchedBy,
    MatchedPair, Notable, NotableCounts, NotableKind, OutsideOtherCapture, Seen, SideBySideHumps,
};
pub use compare_ends::{
    compare_endings, ConnectionEnding, EndingAt, EndingCounts, EndingKind, EndingTrack, Endings,
    EndingsComparison, NotableEnding, OpenRequest, SeenClose,
};
pub use connects::{
    connect_report, ConnectReport, DropCause, DropSpan, LateGreetings, Refusals, SynDrops, SynRound,
};
pub use diff::{
    count_test, diff, holm, rank_test, rate_test, CapturePoint, Change, Compared, ConnectionFacts,
    ConnectionLoad, CountTest, Diff, DiffSide, ErrorDiff, ErrorStatement, Load, LoadProfile,
    Matching, Method, Pair, PathFacts, PathLeg, RankTest, RateTest, RunProfile, RunSummary,
    ServerDiff, ServerMatch, StatementDiff, StatementSide, TailTest, Throughput,
};
pub use engine::{
    analyze, analyze_set, EngineOptions, Inputs, Run, BATCH_TARGET_BYTES, SPLIT_TARGET_BYTES,
};
pub use events::{
    Analysis, CloseView, ConnectionView, EndView, EndedBy, RolesFrom, SegmentView, TransactionView,
};
pub use everything::{Everything, Statistics};
pub use exchanges::{
    name_requests, request_hash, ExchangeTrack, Exchanges, RequestStatements, StatementText,
};
pub use facts::{CaptureFacts, FileFacts, PacketCounts, Stopped};
pub use finding::{
    connection_filter, endpoint_filter, Finding, FindingKind, NamedConnection, Scope, Span,
    FILTER_MAX_CONNECTIONS,
};
pub use findings::{full_report, FullReport};
pub use histogram::{Histogram, RtSummary};
pub use hump_findings::hump_lines;
pub use humps::{HumpConnection, HumpConnections, HumpError, HumpRequest};
pub use load::{
    ConnectionRow, Connections, EstimatedLoad, IdleGap, InFlight, LoadConnection, LoadInterval,
    LoadReport, LoadTest, ServerLoad, TransactionCounts, TransactionRow, TransactionStatement,
    Transactions, LOAD_TRANSACTION_STATEMENTS_KEPT, LOAD_WORST_CONNECTIONS,
    LOAD_WORST_TRANSACTIONS,
};
pub use modes::{detect_modes, Mode, ModeAnalysis, Valley};
pub use mysql::{
    command_word, first_byte_ns, response_end_known, response_time_ns, statement_label,
    ConnectSummary, CutOff, ErrorDetail, ErrorExample, Fate, Incident, IncidentKind, ListedPhases,
    MysqlAggregate, MysqlDepth, MysqlDetection, MysqlFilter, MysqlReport, MysqlSessionFacts,
    MysqlStatistics, OtherStatements, PhaseSummary, RecognisedBy, RequestCounts, RequestPhases,
    SecondCounts, ServerRow, SlowRequest, StatementFingerprinter, StatementGroup, StatusCounts,
    UnansweredRequest, CUT_MARK, ERROR_EXAMPLES, SLOW_REQUESTS_LISTED, STATEMENT_GROUPS_KEPT,
};
pub use mysql::{
    EstimatedExchangeView, EstimatedRt, TlsAggregate, TlsKeys, TlsReport, TlsResumption,
    TlsSession, TlsSessionFacts,
};
pub use path::{PathPoint, ResendCounts};
pub use phases::{PhaseLog, PHASES_ENV};
pub use rate::{
    Ceiling, PathTiming, RateAggregate, RateConnection, RatePoint, RateReport, Rates, ServerScope,
};
pub use reasons::{stall_start, tcp_reason};
pub use replication::{
    AckStall, AwaitingAck, LagSummary, ReplicationRole, ReplicationStream, StreamEndReport,
    StreamEnding,
};
pub use resends::{ConnectionResends, Resends};
pub use rt::{
    HistogramBin, IntervalKind, IntervalRt, PendingTcpRequest, ResponseTimes, RtAggregate,
    RtReport, RtSource, SlowModeTraits,
};
pub use timeline::{plausible_response_time, ClockStepBack, Timeline, WildTimestamps};
pub use unknowns::{unknowns, EncryptedConnection, EncryptedSessions, SnapCut, Unknowns};
