//! What the diff of two runs needs of each run beyond the MySQL statistics: how long the clients took
//! between a response and their next request (think time), each connection's median response time, and
//! when the requests began and ended.

use pcapsleuth_mysql::Command;

use crate::events::{Analysis, ConnectionView, EndView, TransactionView};
use crate::facts::CaptureFacts;
use crate::histogram::{CoarseHistogram, Histogram};
use crate::mysql::Fate;
use crate::thresholds::DIFF_CONNECTION_MIN_REQUESTS;
use crate::timeline::plausible_response_time;

/// The load a run's clients offered and how each connection was answered: the analysis the diff runs
/// beside [`crate::Everything`] on each side ([`crate::DiffSide`]). Its output is a [`LoadProfile`].
#[derive(Default)]
pub struct RunProfile {
    out: LoadProfile,
}

/// What [`RunProfile`] found in one run, mergeable in any order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LoadProfile {
    /// Response times of the answered requests (logins aside), ns.
    pub(crate) rt: Histogram,
    /// Think time: on each connection, from the last byte of a response (or a login's answer) to the
    /// first byte of the next request, ns. Seen at a server it holds the path's round trip too.
    pub(crate) think: Histogram,
    /// Each connection's median response time, ns, for the connections with at least
    /// [`DIFF_CONNECTION_MIN_REQUESTS`] answered requests: its extremes say whether a change shows on
    /// every connection.
    pub(crate) connection_medians: Histogram,
    /// Connections that sent at least one request (logins aside).
    pub(crate) active_connections: u64,
    /// The first and the last request's first byte, ns since the epoch.
    pub(crate) first_request_ns: Option<u64>,
    pub(crate) last_request_ns: Option<u64>,
}

impl LoadProfile {
    fn merge(&mut self, o: LoadProfile) {
        self.rt.merge(&o.rt);
        self.think.merge(&o.think);
        self.connection_medians.merge(&o.connection_medians);
        self.active_connections += o.active_connections;
        self.first_request_ns = min_of(self.first_request_ns, o.first_request_ns);
        self.last_request_ns = self.last_request_ns.max(o.last_request_ns);
    }

    /// Seconds from the first request to the last (0 with fewer than two).
    pub(crate) fn request_span_s(&self) -> f64 {
        match (self.first_request_ns, self.last_request_ns) {
            (Some(a), Some(b)) => b.saturating_sub(a) as f64 / 1e9,
            _ => 0.0,
        }
    }
}

fn min_of(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    }
}

/// What follows one connection: when its last response ended, and its response times.
#[derive(Debug, Default)]
pub struct ConnectionLoad {
    last_response_ns: Option<u64>,
    requests: u64,
    rt: CoarseHistogram,
}

impl Analysis for RunProfile {
    type PerConnection = ConnectionLoad;
    type Output = LoadProfile;

    fn transaction(
        &mut self,
        c: &mut ConnectionLoad,
        _: &ConnectionView<'_>,
        view: &TransactionView<'_>,
    ) {
        let t = view.transaction;
        let login = t.command == Command::Connect;
        if !login && view.fate() != Fate::NoResponse {
            if let Some(end) = c.last_response_ns {
                if let Some(gap) = plausible_response_time(end as i64, t.request_ts_ns as i64) {
                    self.out.think.add(gap);
                }
            }
            c.requests += 1;
            let out = &mut self.out;
            out.first_request_ns = min_of(out.first_request_ns, Some(t.request_ts_ns));
            out.last_request_ns = out.last_request_ns.max(Some(t.request_ts_ns));
            if let Some(rt) = view.response_time_ns() {
                out.rt.add(rt);
                c.rt.add(rt);
            }
        }
        if view.fate() == Fate::Answered {
            c.last_response_ns = t.last_response_ts_ns;
        } else if view.fate() != Fate::NoResponse {
            // A request not answered leaves no response for the next one to follow.
            c.last_response_ns = None;
        }
    }

    fn connection_ended(&mut self, c: ConnectionLoad, _: &ConnectionView<'_>, _: &EndView<'_>) {
        if c.requests > 0 {
            self.out.active_connections += 1;
        }
        if c.rt.count() >= DIFF_CONNECTION_MIN_REQUESTS {
            self.out.connection_medians.add(c.rt.quantile_ns(0.5));
        }
    }

    fn merge(&mut self, o: Self) {
        self.out.merge(o.out);
    }

    fn finish(self, _: &CaptureFacts) -> LoadProfile {
        self.out
    }
}
