//! A finding: one thing worth a user's attention, with its evidence. Every analysis that reports things
//! to look at says them as findings; `pcapsleuth report` ranks them.

use serde::Serialize;

/// One thing worth a user's attention.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    /// 1 (look first) to 4 (for the record).
    pub severity: u8,
    /// "first_abnormal_close", "greeting_wait", "syn_drops", "connect_refused", "late_accept",
    /// "mid_response_close", "unanswered_at_end", "ceiling", "errors", "rt_multimodal",
    /// "semi_sync_ack_stalls",
    /// "retransmissions", "capture_damage".
    pub kind: &'static str,
    pub summary: String,
    /// The facts behind it: frames, times, values.
    pub evidence: Vec<String>,
    /// Wireshark frame numbers to look at.
    pub frames: Vec<u64>,
}
