//! Where a packet was seen.

use pcapsleuth_capture::Timestamp;
use serde::Serialize;

/// A packet's place in the capture: Wireshark's frame number and its timestamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct FrameRef {
    /// Wireshark's frame number: the packet's 1-based position in the capture (across all files of a set).
    pub frame: u64,
    /// When the packet was captured; in JSON, seconds since the epoch (a float, as Wireshark's
    /// `frame.time_epoch`).
    #[serde(serialize_with = "ser_ts")]
    pub ts: Timestamp,
}

fn ser_ts<S: serde::Serializer>(ts: &Timestamp, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(ts.as_secs_f64())
}
