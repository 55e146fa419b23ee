//! Which packets `extract` keeps, as the caller selects them ([`Selection`]): connections, frames,
//! a time range.

use pcapsleuth_capture::Timestamp;
use pcapsleuth_flow::Endpoint;

/// Which TCP connections a selection keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Connections {
    /// Segments with this port on either side.
    Port(u16),
    /// Segments to or from this endpoint.
    Endpoint(Endpoint),
    /// The connections on this 4-tuple (either direction).
    Connection(Endpoint, Endpoint),
}

impl Connections {
    /// Whether a TCP segment from `src` to `dst` is on the connections selected.
    pub fn matches(self, src: Endpoint, dst: Endpoint) -> bool {
        match self {
            Connections::Port(p) => src.port == p || dst.port == p,
            Connections::Endpoint(e) => src == e || dst == e,
            Connections::Connection(a, b) => (src == a && dst == b) || (src == b && dst == a),
        }
    }

    /// The command-line option that asks for them: `--port 3306`.
    pub fn option(self) -> String {
        match self {
            Connections::Port(p) => format!("--port {p}"),
            Connections::Endpoint(e) => format!("--flow {e}"),
            Connections::Connection(a, b) => format!("--conn {a}-{b}"),
        }
    }
}

/// Where a bound of a time range is counted from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeBound {
    /// Nanoseconds since the capture's first packet.
    Relative(i64),
    /// An instant.
    Absolute(Timestamp),
}

/// Packets from `from` (included) to `to` (excluded); an end left out is open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimeRange {
    /// The first instant kept.
    pub from: Option<TimeBound>,
    /// The first instant no longer kept.
    pub to: Option<TimeBound>,
    /// The range as the user gave it (`12.5..20`), for the warning when it matched nothing.
    pub given: String,
}

/// Which packets to keep: what every part given keeps (no part: every packet).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    /// TCP connections by port, endpoint or 4-tuple.
    pub connections: Option<Connections>,
    /// An inclusive range of frame numbers (from 1).
    pub frames: Option<(u64, u64)>,
    /// A time range.
    pub time: Option<TimeRange>,
}

impl Selection {
    /// Whether the selection keeps every packet.
    pub fn is_everything(&self) -> bool {
        self.connections.is_none() && self.frames.is_none() && self.time.is_none()
    }
}
