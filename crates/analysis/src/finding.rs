//! A finding: one thing worth a user's attention, with its evidence. Every analysis that reports things
//! to look at says them as findings; `pcapsleuth report` ranks them.

use serde::Serialize;

/// One thing worth a user's attention.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    /// 1 (look first) to 4 (for the record).
    pub severity: u8,
    /// What kind of thing it is.
    pub kind: FindingKind,
    /// What was found, in one line.
    pub summary: String,
    /// The facts behind it: frames, times, values.
    pub evidence: Vec<String>,
    /// Wireshark frame numbers to look at.
    pub frames: Vec<u64>,
}

/// What kind of thing a finding is (snake_case in JSON: `first_abnormal_close`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FindingKind {
    /// The first connection that closed abnormally (`first-reset`'s answer).
    FirstAbnormalClose,
    /// Clients that gave up waiting for a server's greeting.
    GreetingWait,
    /// SYNs dropped or answered late (a full listen queue, a TIME_WAIT, loss).
    SynDrops,
    /// Connection attempts refused (nothing listened) or never answered.
    ConnectRefused,
    /// Connections accepted late (greeted long after their handshake).
    LateAccept,
    /// A close that cut a MySQL request off.
    MidResponseClose,
    /// Requests still waiting, far longer than usual, when the capture ended.
    UnansweredAtEnd,
    /// Traffic pinned flat at a packet-rate or bit-rate cap.
    Ceiling,
    /// MySQL error responses.
    Errors,
    /// Response times in two or more humps.
    RtMultimodal,
    /// A semi-sync primary waiting for its replica's ACKs.
    SemiSyncAckStalls,
    /// Retransmissions.
    Retransmissions,
    /// Damage in the capture: corrupt records, wild timestamps.
    CaptureDamage,
}

impl FindingKind {
    /// Its name, as JSON and the text report give it.
    pub fn name(self) -> &'static str {
        match self {
            FindingKind::CaptureDamage => "capture_damage",
            FindingKind::Ceiling => "ceiling",
            FindingKind::ConnectRefused => "connect_refused",
            FindingKind::Errors => "errors",
            FindingKind::FirstAbnormalClose => "first_abnormal_close",
            FindingKind::GreetingWait => "greeting_wait",
            FindingKind::LateAccept => "late_accept",
            FindingKind::MidResponseClose => "mid_response_close",
            FindingKind::Retransmissions => "retransmissions",
            FindingKind::RtMultimodal => "rt_multimodal",
            FindingKind::SemiSyncAckStalls => "semi_sync_ack_stalls",
            FindingKind::SynDrops => "syn_drops",
            FindingKind::UnansweredAtEnd => "unanswered_at_end",
        }
    }
}

impl std::fmt::Display for FindingKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
