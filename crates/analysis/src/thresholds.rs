//! Every detector threshold in one place, with the reason for its value.

/// Resolution of the series the ceiling detector reads, whatever `--interval` prints: fine enough that
/// Poisson noise of organic load shows (300 packets a bin vary by ~6%), coarse enough that a shaper's
/// token-bucket bursts average out.
pub const CEILING_BIN_NS: i64 = 100_000_000;

/// A bin is "at the ceiling" when within this fraction of the sustained top level. HTB and cloud NIC
/// policers hold a rate to well under 1% per 100 ms; organic load at a few hundred packets a bin does not
/// stay within ±3% for long.
pub const CEILING_BAND: f64 = 0.03;

/// The top level is the highest median over a window this many bins long (2 s): a sustained level, not a
/// burst.
pub const CEILING_LEVEL_WINDOW_BINS: usize = 20;

/// A ceiling must hold at least this long (2 s): long enough that chance cannot explain it.
pub const CEILING_MIN_RUN_BINS: usize = 20;

/// Isolated bins off the level inside a run (a shaper's burst, a pause of the sender) are tolerated up to
/// this share of the run.
pub const CEILING_MAX_MISSES: f64 = 0.10;

/// Below these rates a flat line is idleness, not a cap (per second).
pub const CEILING_MIN_PPS: f64 = 50.0;
pub const CEILING_MIN_BPS: f64 = 100_000.0;

/// Evidence that load was held back: retransmitted segments in the capped direction during the run, as a
/// share of its packets (drops at a policer or a full shaper queue).
pub const EVIDENCE_RETRANS_SHARE: f64 = 0.001;

/// Evidence that requests queued: mean response time during the run at least this many times the path's
/// round trip (the median handshake RTT of the connections) and at least [`EVIDENCE_RT_MIN_NS`]. A point
/// select answered in 0.1 ms on a 0.05 ms path is not queueing; 4 ms is.
pub const EVIDENCE_RT_FACTOR: f64 = 10.0;
pub const EVIDENCE_RT_MIN_NS: f64 = 1_000_000.0;

/// When both the packet rate and the bit rate are flat, the flatter one is the cap; when they are equally
/// flat (constant packet size), packets smaller than this on average mean a packet-rate cap.
pub const SMALL_PACKET_BYTES: f64 = 1000.0;

/// Two coefficients of variation closer than this count as equally flat.
pub const CV_TIE: f64 = 0.002;
