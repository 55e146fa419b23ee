//! The analyses of pcapsleuth and the parallel engine they run on.
//!
//! [`analyze`] reads a capture in parallel splits, tracks every TCP connection, decodes MySQL wherever it
//! is spoken, and aggregates transactions, response times and rates ([`Analysis`]). The analyses turn that
//! into answers: [`first_reset`] (who closed first, and how), [`MysqlAggregate::report`] (errors,
//! statements, incidents), [`RtAggregate::report`] (response-time modes), [`RateAggregate::report`]
//! (ceilings), and [`full_report`] (everything, as ranked findings). Detector thresholds live in one place,
//! with the reason for each value: the `thresholds` module.
//!
//! ```no_run
//! use pcapsleuth_analysis::{analyze, first_reset, EngineOptions};
//! let cap = pcapsleuth_capture::Capture::open("fixtures/stream-stall.pcap")?;
//! let analysis = analyze(&cap, &EngineOptions::default());
//! if let Some(rst) = first_reset(&analysis, 20).first_rst {
//!     println!("first RST: frame {} by {:?}: {}", rst.frame, rst.initiator, rst.reason);
//! }
//! # Ok::<(), pcapsleuth_capture::CaptureError>(())
//! ```

mod closes;
mod connects;
mod engine;
mod findings;
mod histogram;
mod modes;
mod mysql;
mod rate;
mod replication;
mod rt;
mod thresholds;
mod timeline;
pub mod units;
mod unknowns;

pub use closes::{first_reset, tcp_reason, CloseReport, FinJudgement, FirstReset};
pub use connects::{
    connect_report, ConnectReport, DropCause, DropSpan, LateGreetings, Refusals, SynDrops, SynRound,
};
pub use engine::{
    analyze, analyze_set, analyze_with_progress, Aggregation, Analysis, CaptureFacts,
    EngineOptions, FileFacts, PacketCounts, SPLIT_TARGET_BYTES,
};
pub use findings::{full_report, Finding, FullReport};
pub use histogram::{Histogram, RtSummary};
pub use modes::{detect_modes, Mode, ModeAnalysis, Valley};
pub use mysql::{
    response_time_ns, ConnectSummary, ErrorDetail, Fate, Incident, MysqlAggregate, MysqlDetection,
    MysqlFilter, MysqlReport, MysqlSessionFacts, RecognisedBy, RequestCounts, SecondCounts,
    StatementGroup, UnansweredRequest, CUT_MARK,
};
pub use rate::{Ceiling, RateAggregate, RatePoint, RateReport};
pub use replication::{AckStall, AwaitingAck, LagSummary, ReplicationStream, StreamEndReport};
pub use rt::{HistogramBin, IntervalKind, IntervalRt, RtAggregate, RtReport, SlowModeTraits};
pub use timeline::{plausible_response_time, ClockStepBack, Timeline, WildTimestamps};
pub use unknowns::{unknowns, EncryptedConnection, EncryptedSessions, SnapCut, Unknowns};
