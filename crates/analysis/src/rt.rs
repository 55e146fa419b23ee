//! Response-time distributions: MySQL transactions where the protocol was decoded, and tcprstat-style
//! request/response on any TCP connection (client data, then the server's next data); per server port and
//! interval (tsar tcprt / tcprstat tables), their modes, and what the slow modes have in common.

use std::collections::{BTreeMap, HashMap};

use pcapsleuth_flow::{Endpoint, FlowBuildHasher, SegmentClass};
use pcapsleuth_mysql::{Command, Direction, Outcome};

use serde::Serialize;

use crate::cause::{Cause, HumpFacts};
use crate::events::{Analysis, ConnectionView, SegmentView, TransactionView};
use crate::facts::CaptureFacts;
use crate::histogram::{Binned, CoarseHistogram, Histogram, RtSummary};
use crate::humps::{HumpConnections, HumpError, HumpRequest, HumpTraits, Member};
use crate::modes::{detect_modes, Mode, ModeAnalysis};
use crate::mysql::{login_from_syn, MysqlAggregate};
use crate::rate::RateAggregate;
use crate::thresholds::{HUMP_ERRORS_MAKE, RT_INTERVALS_KEPT};
use crate::timeline::{plausible_response_time, Timeline};
use crate::widening::BinWidth;

/// Response times from one source.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RtSide {
    all: Histogram,
    errors: Histogram,
    /// Exchanges during which the connection retransmitted a segment.
    retransmitted: Histogram,
    by_server: BTreeMap<Endpoint, Histogram>,
    /// (server endpoint, interval) -> distribution and error count.
    per_interval: HashMap<(Endpoint, i64), (CoarseHistogram, u64), FlowBuildHasher>,
    /// What the requests of each bin of `all` have in common: for explaining humps.
    traits: HumpTraits,
}

impl RtSide {
    fn add(
        &mut self,
        width: BinWidth,
        server: Endpoint,
        request_ts_ns: i64,
        rt_ns: u64,
        error: bool,
        retransmitted: bool,
    ) {
        let rt = Binned::new(rt_ns);
        self.add_unplaced(rt, error, retransmitted);
        self.add_placed(
            server,
            width.bin(request_ts_ns),
            std::iter::once((rt, error)),
        );
    }

    /// The distributions that do not depend on where a response time was measured. (The value is
    /// binned once for these and its server's.)
    #[inline]
    fn add_unplaced(&mut self, rt: Binned, error: bool, retransmitted: bool) {
        self.all.add_binned(rt);
        if error {
            self.errors.add_binned(rt);
        }
        if retransmitted {
            self.retransmitted.add_binned(rt);
        }
    }

    /// The distributions of server `server` and of its interval `bin`: `values` are response times
    /// measured there, with whether each was an error.
    fn add_placed(
        &mut self,
        server: Endpoint,
        bin: i64,
        values: impl Iterator<Item = (Binned, bool)> + Clone,
    ) {
        let by_server = self.by_server.entry(server).or_default();
        for (rt, _) in values.clone() {
            by_server.add_binned(rt);
        }
        let cell = self.per_interval.entry((server, bin)).or_default();
        for (rt, error) in values {
            cell.0.add(rt.ns());
            cell.1 += u64::from(error);
        }
    }

    /// The per-interval distributions in intervals of width `to` (as wide as `from`, theirs, or wider).
    fn widen(&mut self, from: BinWidth, to: BinWidth) {
        let mut wide: HashMap<(Endpoint, i64), (CoarseHistogram, u64), FlowBuildHasher> =
            HashMap::default();
        for ((server, bin), (h, e)) in self.per_interval.drain() {
            let c = wide.entry((server, from.rebin(bin, to))).or_default();
            c.0.merge(&h);
            c.1 += e;
        }
        self.per_interval = wide;
    }

    /// Adds `o` (its intervals of width `from`) to these (of width `to`, as wide or wider).
    fn merge(&mut self, mut o: RtSide, from: BinWidth, to: BinWidth) {
        if from != to {
            o.widen(from, to);
        }
        self.all.merge(&o.all);
        self.errors.merge(&o.errors);
        self.retransmitted.merge(&o.retransmitted);
        self.traits.merge(&o.traits);
        for (p, h) in o.by_server {
            self.by_server.entry(p).or_default().merge(&h);
        }
        // Into the larger map: a run's series is often all in one instance (one busy connection).
        if self.per_interval.len() < o.per_interval.len() {
            std::mem::swap(&mut self.per_interval, &mut o.per_interval);
        }
        for (k, (h, e)) in o.per_interval {
            let c = self.per_interval.entry(k).or_default();
            c.0.merge(&h);
            c.1 += e;
        }
    }
}

/// Response times of the whole run, mergeable by addition.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RtAggregate {
    /// The per-interval rows' width: as asked, or wider for a run whose rows would be more than `kept`
    /// ([`crate::widening`]).
    width: BinWidth,
    /// How many (server, interval) distributions the three series may hold together
    /// ([`RT_INTERVALS_KEPT`]).
    kept: usize,
    /// The capture's body, once the run is over.
    timeline: Timeline,
    pub(crate) mysql: RtSide,
    pub(crate) tcp: RtSide,
    /// MySQL logins: the client's first SYN to the answer to its login.
    pub(crate) connect: RtSide,
}

impl RtAggregate {
    /// Empty distributions, with per-interval rows `interval_ns` nanoseconds wide (at least 1).
    pub fn new(interval_ns: i64) -> Self {
        RtAggregate {
            width: BinWidth::new(interval_ns),
            kept: RT_INTERVALS_KEPT,
            ..Default::default()
        }
    }

    pub(crate) fn connect(&mut self, server: Endpoint, syn_ts: i64, login_ns: u64) {
        self.connect
            .add(self.width, server, syn_ts, login_ns, false, false);
        self.bound();
    }

    /// Widens the per-interval rows while the three series hold more than they may.
    fn bound(&mut self) {
        let cells = |rt: &Self| {
            rt.mysql.per_interval.len() + rt.tcp.per_interval.len() + rt.connect.per_interval.len()
        };
        while crate::widening::over(cells(self), self.kept, self.width) {
            let (from, to) = (self.width, self.width.doubled());
            for side in [&mut self.mysql, &mut self.tcp, &mut self.connect] {
                side.widen(from, to);
            }
            self.width = to;
        }
    }

    /// Leaves out the intervals outside the capture's body (samples between two wild timestamps keep
    /// their response time, which one clock measured, but not their place in time).
    pub(crate) fn keep_within(&mut self, timeline: &Timeline) {
        self.timeline = timeline.clone();
        let width = self.width;
        for side in [&mut self.mysql, &mut self.tcp, &mut self.connect] {
            side.per_interval.retain(|&(_, bin), _| {
                timeline.overlaps_body(width.start(bin), width.start(bin.saturating_add(1)))
            });
        }
    }

    pub(crate) fn merge(&mut self, o: RtAggregate) {
        if self.kept == 0 {
            (self.width, self.kept) = (BinWidth::new(o.width.asked_ns()), o.kept);
        }
        // Both at the wider of the two widths: widening commutes with adding.
        let to = self.width.max(o.width);
        for side in [&mut self.mysql, &mut self.tcp, &mut self.connect] {
            side.widen(self.width, to);
        }
        self.width = to;
        self.mysql.merge(o.mysql, o.width, to);
        self.tcp.merge(o.tcp, o.width, to);
        self.connect.merge(o.connect, o.width, to);
        self.bound();
    }

    /// The report: MySQL response times when MySQL was decoded, else TCP request/response times. The
    /// per-interval rows carry no round trips ([`RtReport::rtt_timed`] is false): see
    /// [`RtAggregate::report_with_path`].
    pub fn report(&self, mysql: &MysqlAggregate) -> RtReport {
        self.report_with_path(mysql, None)
    }

    /// [`RtAggregate::report`], with each per-interval row's round trips each way taken from `rates`'
    /// path series (the figures `rate` shows for that server and interval) when `rates` timed the path
    /// at the same interval.
    pub fn report_with_path(
        &self,
        mysql: &MysqlAggregate,
        rates: Option<&RateAggregate>,
    ) -> RtReport {
        // The round trips come from the rate series: when they were widened more than these rows, the
        // rows are shown at their width.
        if let Some(r) = rates {
            if r.printed_width().max(self.width) != self.width
                && r.printed_width().asked_ns() == self.width.asked_ns()
            {
                let mut wide = self.clone();
                let to = r.printed_width();
                for side in [&mut wide.mysql, &mut wide.tcp, &mut wide.connect] {
                    side.widen(self.width, to);
                }
                wide.width = to;
                return wide.report_with_path(mysql, rates);
            }
        }
        let rates = rates.filter(|r| r.path_timed_at(self.width));
        let (source, side) = if self.mysql.all.count() > 0 {
            (RtSource::Mysql, &self.mysql)
        } else {
            (RtSource::Tcp, &self.tcp)
        };
        let modes = detect_modes(&side.all);
        let explained = modes
            .modes
            .iter()
            .skip(1)
            .map(|m| {
                explain(
                    m,
                    side,
                    (source == RtSource::Mysql).then_some(mysql),
                    self.width,
                )
            })
            .collect();
        let secs = self.width.ns() as f64 / 1e9;
        RtReport {
            timeline: self.timeline.clone(),
            source,
            multimodal: modes.multimodal,
            percentiles_us: side.all.summary_us(),
            modes: modes.modes.clone(),
            valleys: modes.valleys.clone(),
            slow_modes: explained,
            histogram: side
                .all
                .bins()
                .map(|(lo, hi, count)| HistogramBin {
                    lo_us: lo as f64 / 1e3,
                    hi_us: hi as f64 / 1e3,
                    count,
                })
                .collect(),
            by_port: side
                .by_server
                .iter()
                .fold(BTreeMap::<u16, Histogram>::new(), |mut ports, (s, h)| {
                    ports.entry(s.port).or_default().merge(h);
                    ports
                })
                .iter()
                .map(|(p, h)| (p.to_string(), h.summary_us()))
                .collect(),
            by_server: side
                .by_server
                .iter()
                .map(|(s, h)| (s.to_string(), h.summary_us()))
                .collect(),
            per_interval: {
                let mut rows = intervals(
                    side,
                    self.width,
                    &self.timeline,
                    IntervalKind::Requests,
                    rates,
                );
                rows.extend(intervals(
                    &self.connect,
                    self.width,
                    &self.timeline,
                    IntervalKind::Connect,
                    rates,
                ));
                rows.sort_by(|a, b| {
                    (a.0, a.1, a.2.kind)
                        .partial_cmp(&(b.0, b.1, b.2.kind))
                        .unwrap_or(std::cmp::Ordering::Equal)
                });
                rows.into_iter().map(|(_, _, row)| row).collect()
            },
            connect_us: self.connect.all.summary_us(),
            estimated_from_tls_records: mysql.tls.estimated(),
            interval_s: secs,
            asked_interval_s: self.width.asked_ns() as f64 / 1e9,
            rtt_timed: rates.is_some(),
            analysis: modes,
        }
    }
}

/// Response times of a run (`pcapsleuth rt`): of MySQL requests where the protocol was decoded, of
/// logins from the client's first SYN, and tcprstat-style (client data, then the server's next data) on
/// connections not decoded as MySQL; per server port and interval. Its output is an [`RtAggregate`];
/// [`RtAggregate::report`] gives the report, with the modes and what the slow ones have in common.
pub struct ResponseTimes {
    rt: RtAggregate,
    /// MySQL response times whose port and interval distributions are not yet added to (see [`Unplaced`]).
    mysql: Unplaced,
    /// The same for tcprstat-style response times.
    tcp: Unplaced,
}

/// Response times measured at one server in one interval, since the one before them was measured
/// elsewhere, not yet added to that server's and that interval's distributions: added together when one
/// is measured elsewhere, when [`Unplaced::CAP`] are waiting, or before the distributions are read
/// ([`ResponseTimes::merge`], [`ResponseTimes::finish`]). Requests come in time order and a capture holds
/// few servers, so the two lookups are made once for many response times. Adding to a distribution
/// commutes, so the distributions are the same whenever the values are added.
#[derive(Debug, Default)]
struct Unplaced {
    /// (server, interval) of `values`; `None` when there are none.
    key: Option<(Endpoint, i64)>,
    /// The intervals' width when the key was made (the rows may widen before the values are placed).
    width: BinWidth,
    /// `[from, to)`: the request times the interval holds.
    from: i64,
    to: i64,
    /// Response times and whether each was an error.
    values: Vec<(Binned, bool)>,
}

impl Unplaced {
    const CAP: usize = 256;

    /// Notes a response time of a request at `ts_ns` to `server` (its other distributions are `side`'s
    /// already), adding the waiting ones to `side` first if they were measured elsewhere.
    #[inline(always)]
    fn note(
        &mut self,
        side: &mut RtSide,
        width: BinWidth,
        server: Endpoint,
        ts_ns: i64,
        value: (Binned, bool),
    ) -> bool {
        let same = self.key.is_some_and(|(s, _)| s == server)
            && self.width == width
            && ts_ns >= self.from
            && ts_ns < self.to
            && self.values.len() < Self::CAP;
        let placed = !same && self.place(side, width);
        if !same {
            let bin = width.bin(ts_ns);
            self.key = Some((server, bin));
            self.width = width;
            self.from = width.start(bin);
            self.to = width.start(bin.saturating_add(1));
        }
        self.values.push(value);
        placed
    }

    /// Adds the waiting response times to `side`'s port and interval distributions, of width `now`:
    /// whether there were any.
    fn place(&mut self, side: &mut RtSide, now: BinWidth) -> bool {
        match self.key.take() {
            Some((server, bin)) => {
                side.add_placed(
                    server,
                    self.width.rebin(bin, now),
                    self.values.iter().copied(),
                );
                self.values.clear();
                true
            }
            None => false,
        }
    }
}

impl ResponseTimes {
    /// A segment carrying new data on a connection not decoded as MySQL: a tcprstat-style request or
    /// response. Out of line, so that the test for it inlines into the per-packet path.
    #[inline(never)]
    fn tcp_data(
        &mut self,
        pending: &mut PendingTcpRequest,
        conn: &ConnectionView<'_>,
        seg: &SegmentView<'_>,
    ) {
        let ts = seg.at.ts.0;
        if conn.direction(seg.side) == Direction::ClientToServer {
            if pending.0.is_none() {
                *pending = PendingTcpRequest(Some(ts), seg.at.frame);
            }
        } else if let Some(start) = pending.0.take() {
            if let Some(rt) = plausible_response_time(start, ts) {
                let rt = Binned::new(rt);
                let retransmitted = conn.tcp().retransmissions_between(start, ts);
                let side = &mut self.rt.tcp;
                side.add_unplaced(rt, false, retransmitted);
                let member = Member {
                    request_frame: pending.1,
                    response_frame: Some(seg.at.frame),
                    request_ts_ns: start,
                    connection: conn.tcp().first().frame,
                    client: conn.client(),
                    server: conn.server(),
                    error: None,
                };
                side.traits.note(rt, &member, None, None);
                if self
                    .tcp
                    .note(side, self.rt.width, conn.server(), start, (rt, false))
                {
                    self.rt.bound();
                }
            }
        }
    }

    /// Adds the waiting response times to their distributions.
    fn place(&mut self) {
        self.mysql.place(&mut self.rt.mysql, self.rt.width);
        self.tcp.place(&mut self.rt.tcp, self.rt.width);
        self.rt.bound();
    }
}

impl ResponseTimes {
    /// Response times, with per-interval tables at `interval_ns` (0: one second).
    pub fn new(interval_ns: i64) -> Self {
        ResponseTimes {
            rt: RtAggregate::new(if interval_ns > 0 {
                interval_ns
            } else {
                1_000_000_000
            }),
            mysql: Unplaced::default(),
            tcp: Unplaced::default(),
        }
    }
}

impl Default for ResponseTimes {
    fn default() -> Self {
        ResponseTimes::new(0)
    }
}

/// A tcprstat-style request: when the client's data began that the server has not answered yet, and
/// its frame.
#[derive(Debug, Clone, Copy, Default)]
pub struct PendingTcpRequest(Option<i64>, u64);

impl Analysis for ResponseTimes {
    type PerConnection = PendingTcpRequest;
    type Output = RtAggregate;

    fn transaction(
        &mut self,
        _: &mut PendingTcpRequest,
        conn: &ConnectionView<'_>,
        t: &TransactionView<'_>,
    ) {
        if t.transaction.command == Command::Connect {
            // A login is timed from the client's first SYN, when the capture holds it.
            if let Some((syn, login)) = login_from_syn(conn, t) {
                self.rt.connect(t.server, syn.ts.0, login);
            }
            return;
        }
        if let Some(rt) = t.response_time_ns() {
            let rt = Binned::new(rt);
            let tx = t.transaction;
            let code = t.error_code();
            let error = code.is_some();
            let side = &mut self.rt.mysql;
            side.add_unplaced(rt, error, t.retransmitted());
            let member = Member {
                request_frame: tx.request_frame,
                response_frame: tx.last_response_frame,
                request_ts_ns: tx.request_ts_ns as i64,
                connection: conn.tcp().first().frame,
                client: t.client,
                server: t.server,
                error: code,
            };
            let message = match &tx.outcome {
                Outcome::Err {
                    message, sql_state, ..
                } => Some((sql_state.as_str(), message.as_str())),
                _ => None,
            };
            side.traits.note(rt, &member, Some(tx.command), message);
            if self.mysql.note(
                side,
                self.rt.width,
                t.server,
                t.transaction.request_ts_ns as i64,
                (rt, error),
            ) {
                self.rt.bound();
            }
        }
    }

    #[inline]
    fn segment(
        &mut self,
        pending: &mut PendingTcpRequest,
        conn: &ConnectionView<'_>,
        seg: &SegmentView<'_>,
    ) {
        if seg.tcp.payload_len == 0 || seg.class != SegmentClass::New || conn.is_mysql() {
            return;
        }
        self.tcp_data(pending, conn, seg);
    }

    fn merge(&mut self, mut other: Self) {
        self.place();
        other.place();
        self.rt.merge(other.rt);
    }

    fn finish(mut self, capture: &CaptureFacts) -> RtAggregate {
        self.place();
        self.rt.keep_within(&capture.timeline);
        // Equal runs give equal aggregates, however their requests were spread over instances.
        self.rt.mysql.traits.settle();
        self.rt.tcp.traits.settle();
        self.rt
    }
}

/// The per-interval rows of one distribution, each with its start and server to sort by.
fn intervals(
    side: &RtSide,
    width: BinWidth,
    timeline: &Timeline,
    kind: IntervalKind,
    rates: Option<&RateAggregate>,
) -> Vec<(f64, Endpoint, IntervalRt)> {
    let secs = width.ns() as f64 / 1e9;
    side.per_interval
        .iter()
        .collect::<BTreeMap<_, _>>()
        .into_iter()
        .map(|(&(server, bin), (h, errors))| {
            let summary = h.summary_us();
            let start = bin as f64 * secs;
            let path = rates
                .and_then(|r| r.path_at(width, server, bin))
                .flatten()
                .map(|c| c.point());
            let (rtt_to_server_us, rtt_to_client_us) =
                path.map_or((None, None), |p| (p.rtt_to_server_us, p.rtt_to_client_us));
            let row = IntervalRt {
                server: server.to_string(),
                port: server.port,
                kind,
                start,
                covered_s: crate::coverage::covered_s(timeline, width.start(bin), width.ns()),
                count: h.count(),
                mean_us: summary.mean,
                p50_us: summary.p50,
                p95_us: summary.p95,
                p99_us: summary.p99,
                errors: *errors,
                rtt_to_server_us,
                rtt_to_client_us,
            };
            (start, server, row)
        })
        .collect()
}

/// What a per-interval row measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IntervalKind {
    /// Requests to their responses (of the report's `source`).
    Requests,
    /// MySQL logins: the client's first SYN to the answer to its login (by the interval of the SYN).
    Connect,
}

/// What the requests of a slow mode have in common.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SlowModeTraits {
    /// The mode's center (median of its requests), µs.
    pub center_us: f64,
    /// The mode's share of all requests, 0..1.
    pub share: f64,
    /// Requests in the mode.
    pub count: u64,
    /// p75/p25 of its response times, >= 1 (as [`Mode::spread`]): near 1 for a timer's wait.
    pub spread: f64,
    /// Share of them whose exchange saw a retransmitted segment (a mode near 200 ms × 2^n with a high share
    /// is retransmission timeouts).
    pub retransmitted_share: f64,
    /// Share of them answered with an error.
    pub error_share: f64,
    /// The error codes that answered them, most first (at most 5), each with its share of the mode and
    /// of all its code's answered errors.
    pub errors: Vec<HumpError>,
    /// Statements (fingerprints) holding most of the mode, with their share of it.
    pub statements: Vec<(String, f64)>,
    /// Commands (`COM_QUERY`, ...) holding at least 5% of the mode, with their share of it, most first.
    pub commands: Vec<(String, f64)>,
    /// Server endpoints of its requests, most first (at most 5), with their share of it.
    pub servers: Vec<(String, f64)>,
    /// Distinct server endpoints among its requests (of the 16 lowest endpoints of the capture).
    pub distinct_servers: u64,
    /// The share of it sent to servers past the capture's 16 lowest endpoints (not counted apart), 0..1.
    pub other_servers_share: f64,
    /// The connections and clients its requests came from.
    pub connections: HumpConnections,
    /// Its earliest request by frame.
    pub first: Option<HumpRequest>,
    /// When its latest request was sent, seconds since the epoch.
    pub last_request_at: Option<f64>,
    /// Intervals (start, seconds since the epoch) holding most of the mode when it is concentrated in
    /// time, with their share of it; empty when spread over the capture.
    pub time_windows: Vec<(f64, f64)>,
    /// Why the hump is there, when a timeout of the server's that answers with an error made it (ERR 1205
    /// at innodb_lock_wait_timeout, ...); `null` otherwise.
    pub cause: Option<Cause>,
}

fn explain(
    m: &Mode,
    side: &RtSide,
    mysql: Option<&MysqlAggregate>,
    width: BinWidth,
) -> SlowModeTraits {
    let in_mode = m.count_in(&side.all).max(1) as f64;
    let share_of = |h: &Histogram| m.count_in(h) as f64 / in_mode;
    let mut statements: Vec<(String, f64)> = mysql
        .map(|a| {
            a.statement_histograms()
                .map(|(fp, h)| (fp, share_of(h)))
                .filter(|(_, s)| *s >= 0.05)
                .collect()
        })
        .unwrap_or_default();
    statements.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    statements.truncate(5);
    let mut windows: BTreeMap<i64, u64> = BTreeMap::new();
    for (&(_, bin), (h, _)) in &side.per_interval {
        *windows.entry(bin).or_default() += h.count_between(m.bins_ns.0, m.bins_ns.1);
    }
    let mut ranked: Vec<(i64, u64)> = windows.into_iter().filter(|(_, n)| *n > 0).collect();
    let intervals = ranked.len();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut time_windows = Vec::new();
    let mut covered = 0.0;
    for (bin, n) in &ranked {
        if covered >= 0.5 {
            break;
        }
        let s = *n as f64 / in_mode;
        covered += s;
        time_windows.push((*bin as f64 * width.ns() as f64 / 1e9, s));
    }
    // Only worth saying when the mode is concentrated: at most a fifth of its intervals hold half of it.
    if intervals < 5 || time_windows.len() * 5 > intervals {
        time_windows.clear();
    }
    let members = side.traits.of_mode(m, &side.all);
    let cause = crate::cause::of_hump(&HumpFacts {
        center_ns: (m.center_us * 1e3).round() as i64,
        spread: m.spread,
        count: m.count,
        errors: &members.errors,
        statement: statements
            .first()
            .filter(|(_, s)| *s >= HUMP_ERRORS_MAKE)
            .map(|(fp, _)| fp.as_str()),
        first_error: members.first_error,
    });
    SlowModeTraits {
        center_us: m.center_us,
        share: m.share,
        count: m.count,
        spread: m.spread,
        retransmitted_share: share_of(&side.retransmitted),
        error_share: share_of(&side.errors),
        errors: members.errors,
        statements,
        commands: members.commands,
        servers: members.servers,
        distinct_servers: members.distinct_servers,
        other_servers_share: members.other_servers_share,
        connections: members.connections,
        first: members.first,
        last_request_at: members.last_request_at,
        time_windows,
        cause,
    }
}

/// One non-empty bin of a response-time histogram.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HistogramBin {
    /// The bin's lower edge, µs (inclusive).
    pub lo_us: f64,
    /// The bin's upper edge, µs (exclusive; at most 0.8% above `lo_us`).
    pub hi_us: f64,
    /// Responses whose time fell in the bin.
    pub count: u64,
}

/// The response times of one interval, for one server and kind.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IntervalRt {
    /// The server's `ip:port` (IPv6 as `[addr]:port`).
    pub server: String,
    /// The server's port.
    pub port: u16,
    /// What is timed: requests, or MySQL logins from their first SYN.
    pub kind: IntervalKind,
    /// Seconds since the epoch.
    pub start: f64,
    /// Seconds of the interval the capture covers (less than the interval at the capture's ends): the
    /// count is what was seen in that part (see [`crate::coverage`]).
    pub covered_s: f64,
    /// Responses timed in the interval (by the interval of the request, or of the SYN for logins).
    pub count: u64,
    /// Mean, µs.
    pub mean_us: f64,
    /// Median, µs (from a coarse histogram, as `p95_us`).
    pub p50_us: f64,
    /// 95th percentile, µs (from a coarse histogram: at most 4.4% above the exact value).
    pub p95_us: f64,
    /// 99th percentile, µs (as `p95_us`).
    pub p99_us: f64,
    /// Of them, those answered by a MySQL error response.
    pub errors: u64,
    /// The round trip to the server in the interval, on connections to this server: client data to the
    /// server's ACK of it, at the capture point (the `rtt_to_server_us` of `rate`'s path for this server
    /// and interval); null when the interval gave no sample, or when the path was not timed
    /// ([`RtReport::rtt_timed`]).
    pub rtt_to_server_us: Option<RtSummary>,
    /// The round trip to the client: server data to the client's ACK of it (as `rtt_to_server_us`).
    pub rtt_to_client_us: Option<RtSummary>,
}

/// Where response times come from (`mysql` or `tcp` in JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RtSource {
    /// Decoded MySQL transactions: request to the last byte of its response.
    Mysql,
    /// tcprstat-style, on connections not decoded as MySQL: client data to the server's next data.
    Tcp,
}

impl RtSource {
    /// Its name: `mysql` or `tcp`.
    pub fn name(self) -> &'static str {
        match self {
            RtSource::Mysql => "mysql",
            RtSource::Tcp => "tcp",
        }
    }
}

/// `pcapsleuth rt --json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RtReport {
    /// The capture's body: per-interval rows cover it; timestamps outside it are left out.
    pub timeline: Timeline,
    /// Whose response times: MySQL transactions, or TCP requests and responses.
    pub source: RtSource,
    /// Whether two or more humps stand apart (`modes` has more than one).
    pub multimodal: bool,
    /// The humps of the distribution, fast first.
    pub modes: Vec<Mode>,
    /// The valleys between consecutive modes.
    pub valleys: Vec<crate::modes::Valley>,
    /// Count, mean, percentiles, minimum and maximum of all response times, µs.
    pub percentiles_us: RtSummary,
    /// What the requests of each mode after the first have in common.
    pub slow_modes: Vec<SlowModeTraits>,
    /// The distribution's non-empty bins, in order.
    pub histogram: Vec<HistogramBin>,
    /// The summary per server port (the port as a string key): servers that share a port are one.
    pub by_port: BTreeMap<String, RtSummary>,
    /// The summary per server (`"ip:port"`, IPv6 as `"[addr]:port"`).
    pub by_server: BTreeMap<String, RtSummary>,
    /// Width of the `per_interval` rows, seconds.
    pub interval_s: f64,
    /// The width asked for, seconds: `interval_s` is a power of two times it when the rows would
    /// otherwise be more than 65,536 (servers times intervals; a long capture), or to match the rate
    /// series' intervals the round trips come from, so that memory does not
    /// grow with the capture's duration.
    pub asked_interval_s: f64,
    /// Rows by interval, server and kind: requests, and MySQL logins from their first SYN.
    pub per_interval: Vec<IntervalRt>,
    /// Whether the rows' round trips were timed (`rt --per-interval`, `report`): when false every
    /// `rtt_to_*` is null for that reason, not for want of a sample.
    pub rtt_timed: bool,
    /// MySQL logins seen from their first SYN: the SYN to the answer to the login.
    pub connect_us: RtSummary,
    /// Response times estimated from the TLS records of the MySQL sessions in TLS not decrypted, as the
    /// `mysql` report's `tls` has them: never among the distributions above.
    pub estimated_from_tls_records: crate::EstimatedRt,
    /// The mode analysis behind `multimodal`, `modes` and `valleys` (for programs; not in JSON).
    #[serde(skip)]
    pub analysis: ModeAnalysis,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::widening::{merged_both_ways, narrowest};
    use proptest::prelude::*;

    /// Logins `(server, µs, ns)` into an aggregate of 1 ms rows keeping `kept` distributions.
    fn fed(items: &[(u8, i64, u64)], kept: usize) -> RtAggregate {
        let mut rt = RtAggregate::new(1_000_000);
        rt.kept = kept;
        for &(server, us, ns) in items {
            let server = Endpoint {
                ip: std::net::IpAddr::from([10, 0, 0, server]),
                port: 3306,
            };
            rt.connect(server, us * 1_000, ns);
        }
        rt
    }

    proptest! {
        /// Per-interval rows widened in parts and merged, in any order, are the rows widened whole, at the
        /// narrowest width at which the run's (server, interval) distributions fit.
        #[test]
        fn rows_widened_in_parts_are_the_rows_widened_whole(
            items in proptest::collection::vec((1u8..4, -3_000_000i64..30_000_000, 1u64..1_000_000), 1..200),
            cuts in proptest::collection::vec(0usize..200, 0..6),
            kept in 2usize..40,
        ) {
            let whole = fed(&items, kept);
            let (forward, backward) =
                merged_both_ways(&items, cuts, |part| fed(part, kept), RtAggregate::merge);
            prop_assert!(forward == whole);
            prop_assert!(backward == whole);
            let fits = |w: BinWidth| {
                let rows: std::collections::BTreeSet<(u8, i64)> =
                    items.iter().map(|&(s, us, _)| (s, w.bin(us * 1_000))).collect();
                rows.len() <= kept
            };
            let w = narrowest(1_000_000, fits);
            prop_assert_eq!(whole.width, w);
            let counted: u64 = whole.connect.per_interval.values().map(|(h, _)| h.count()).sum();
            prop_assert_eq!(counted, items.len() as u64);
        }
    }
}
