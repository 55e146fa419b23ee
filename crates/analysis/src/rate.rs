//! Packets/s and bits/s per direction, per server endpoint and in total, and the detection of ceilings:
//! traffic pinned flat at a packet-rate or bit-rate cap while load was clearly waiting behind it.

use std::collections::{BTreeMap, HashMap};

use pcapsleuth_flow::{Endpoint, FlowBuildHasher, Side};
use pcapsleuth_mysql::{Command, Direction};
use serde::Serialize;

use crate::events::{Analysis, ConnectionView, EndView, SegmentView, TransactionView};
use crate::facts::CaptureFacts;
use crate::histogram::Histogram;
use crate::path::{resend_index, LazyPath, PathCell, PathEvents, PathPoint};
use crate::thresholds::*;
use crate::timeline::Timeline;
use crate::units::Measure;
use crate::widening::{self, BinWidth};

/// Client to server (0) and server to client (1).
const C2S: usize = 0;
const S2C: usize = 1;

/// Counters of one time bin.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Cell {
    packets: [u64; 2],
    /// Link-layer bytes on the wire.
    bytes: [u64; 2],
    retrans: [u64; 2],
    /// Response times of requests sent in this bin (for queueing evidence).
    rt_sum_ns: u64,
    rt_count: u64,
}

impl Cell {
    fn add(&mut self, o: &Cell) {
        for d in 0..2 {
            self.packets[d] += o.packets[d];
            self.bytes[d] += o.bytes[d];
            self.retrans[d] += o.retrans[d];
        }
        self.rt_sum_ns += o.rt_sum_ns;
        self.rt_count += o.rt_count;
    }
}

type Series = BTreeMap<i64, Cell>;

/// `None` is all traffic; `Some(server)` one server endpoint.
type Scope = Option<Endpoint>;

/// One scope's bins, found by hash with a one-entry cache: the packets of a flow arrive in time order, so
/// most packets land in the bin the previous one did.
#[derive(Debug, Clone, Default)]
struct Bins {
    index: HashMap<i64, u32, FlowBuildHasher>,
    cells: Vec<(i64, Cell)>,
    last: Option<(i64, u32)>,
}

impl Bins {
    #[inline]
    fn cell(&mut self, bin: i64) -> &mut Cell {
        match self.last {
            Some((b, i)) if b == bin => &mut self.cells[i as usize].1,
            _ => self.cell_looked_up(bin),
        }
    }

    /// [`Bins::cell`] for a bin other than the last one: kept out of line, so that the common case
    /// inlines into the per-packet path.
    #[cold]
    #[inline(never)]
    fn cell_looked_up(&mut self, bin: i64) -> &mut Cell {
        let next = self.cells.len() as u32;
        let i = *self.index.entry(bin).or_insert(next);
        if i == next {
            self.cells.push((bin, Cell::default()));
        }
        self.last = Some((bin, i));
        &mut self.cells[i as usize].1
    }

    /// Keeps the bins for which `keep(bin)` holds.
    fn retain(&mut self, keep: impl Fn(i64) -> bool) {
        self.cells.retain(|&(b, _)| keep(b));
        self.index = self
            .cells
            .iter()
            .enumerate()
            .map(|(i, &(b, _))| (b, i as u32))
            .collect();
        self.last = None;
    }

    /// Adds `counts` to bin `bin`: 1 when that made a new cell, else 0.
    #[inline]
    fn add(&mut self, bin: i64, counts: &Cell) -> usize {
        let before = self.cells.len();
        self.cell(bin).add(counts);
        self.cells.len() - before
    }

    /// The same counts in bins of width `to` (as wide as `from`, the bins' width, or wider).
    fn widen(&mut self, from: BinWidth, to: BinWidth) {
        let mut wide = Bins::default();
        for (b, c) in std::mem::take(&mut self.cells) {
            wide.add(from.rebin(b, to), &c);
        }
        *self = wide;
    }

    fn sorted(&self) -> Series {
        self.cells.iter().map(|&(b, c)| (b, c)).collect()
    }
}

/// Packet and bit rates of a run (`pcapsleuth rate`): per direction, in total and per server endpoint, at
/// the printed interval and at the ceiling detector's resolution, with the response times and handshake
/// round trips that tell a ceiling from a lull. Its output is a [`RateAggregate`];
/// [`RateAggregate::report`] gives the series and the ceilings found.
pub struct Rates {
    rates: RateAggregate,
    /// Which instance this is: a connection's cached scope id is this instance's only.
    instance: u64,
    /// Packets not yet counted into `rates` (see [`PendingPackets`]).
    pending: PendingPackets,
    /// Response times not yet counted into `rates` (see [`PendingResponseTimes`]).
    pending_rt: PendingResponseTimes,
    /// What the path told, not yet counted into `rates` (see [`PendingPath`]).
    pending_path: PendingPath,
    /// Whether the path is timed (round trips, duplicate ACKs, resends by kind, zero windows).
    path: PathTiming,
}

/// Whether [`Rates`] times the path from TCP's own timing ([`PathPoint`](crate::PathPoint)), which costs
/// a little per packet: the `rate` command does; a run that only needs packet and bit rates need not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PathTiming {
    /// Round trips per interval and direction, duplicate ACKs, resends by kind, zero-window time.
    Measured,
    /// Packet and bit rates only.
    #[default]
    Skipped,
}

/// What [`Rates`] keeps per connection: its server scope and its path state.
#[derive(Debug, Clone, Default)]
pub struct RateConnection {
    scope: ServerScope,
    path: LazyPath,
}

/// The response times of requests to one scope sent in one fine bin, since the request before them was
/// sent elsewhere: counted into the two cells they belong to (all traffic and the scope) as
/// [`PendingPackets`] are.
#[derive(Debug, Default)]
struct PendingResponseTimes {
    /// (scope id, fine bin); `None` when there are none.
    key: Option<(u32, i64)>,
    /// The width of the fine bins when the key was made (the series may widen before it is counted).
    width: BinWidth,
    /// `[from, to)`: the request times the fine bin holds.
    from: i64,
    to: i64,
    sum_ns: u64,
    count: u64,
}

/// The packets of one scope that fell into one printed and one fine bin, since the packet before them
/// fell elsewhere: counted once into the four cells they belong to (all traffic and the scope, each at
/// both resolutions) when a packet falls elsewhere, or before the counts are read ([`Rates::merge`],
/// [`Rates::finish`]). Packets come in time order and a capture holds few servers, so runs are long, and
/// a packet costs a comparison and three additions instead of four cell lookups. Addition commutes, so
/// the counts are the same whenever they are made.
#[derive(Debug, Default)]
struct PendingPackets {
    /// (scope id, printed bin, fine bin) of the packets in `cell`; `None` when there are none.
    key: Option<(u32, i64, i64)>,
    /// The printed and fine widths of the key's bins (the series may widen before they are counted).
    widths: (BinWidth, BinWidth),
    /// Their packets, bytes and retransmissions (the response-time fields stay 0).
    cell: Cell,
}

/// What the segments of one scope's connections told about the path in one printed bin, since a segment
/// told it of another: counted into the two cells it belongs to (all traffic and the scope) as
/// [`PendingPackets`] are, so that a round trip is one histogram addition instead of two, and no cell
/// is looked up per segment.
#[derive(Debug, Default)]
struct PendingPath {
    /// (scope id, printed bin); `None` when there is nothing pending.
    key: Option<(u32, i64)>,
    /// The printed width when the key was made (the series may widen before it is counted).
    width: BinWidth,
    cell: PathCell,
}

/// Numbers every [`Rates`] instance.
static RATES_INSTANCES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

impl Rates {
    /// Rates at `interval_ns` (0: one second), with the path timed ([`PathTiming::Measured`]).
    pub fn new(interval_ns: i64) -> Self {
        Rates::with_path(interval_ns, PathTiming::Measured)
    }

    /// Rates at `interval_ns` (0: one second), timing the path or not.
    pub fn with_path(interval_ns: i64, path: PathTiming) -> Self {
        let mut rates = RateAggregate::new(if interval_ns > 0 {
            interval_ns
        } else {
            1_000_000_000
        });
        rates.path_timing = path;
        Rates {
            path,
            rates,
            instance: RATES_INSTANCES.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            pending: PendingPackets::default(),
            pending_rt: PendingResponseTimes::default(),
            pending_path: PendingPath::default(),
        }
    }

    /// Counts the pending packets, response times and path events into the aggregate.
    fn flush(&mut self) {
        self.flush_packets();
        self.flush_response_times();
        self.flush_path();
    }

    /// Counts the pending path events ([`PendingPath`]) into the aggregate.
    fn flush_path(&mut self) {
        let pending = &mut self.pending_path;
        if let Some((scope, bin)) = pending.key.take() {
            let cell = std::mem::take(&mut pending.cell);
            self.rates.path_cell(scope, bin, pending.width, &cell);
        }
    }

    /// What a segment of a connection to the server of scope `scope` told about the path (`client` is
    /// the connection's client side, `side` the segment's sender).
    #[inline]
    fn path_events(&mut self, scope: u32, client: Side, side: Side, ev: &PathEvents, ts_ns: i64) {
        let role = |s: Side| usize::from(s != client);
        let width = self.rates.printed_width;
        let key = Some((scope, self.rates.bins_of(ts_ns).0));
        if self.pending_path.key != key || self.pending_path.width != width {
            self.flush_path();
            self.pending_path.key = key;
            self.pending_path.width = width;
        }
        let c = &mut self.pending_path.cell;
        if let Some((acker, rtt)) = ev.rtt {
            // Acknowledged by the server: the round trip to the server (index 0).
            c.rtt[1 - role(acker)].add(rtt);
        }
        c.dup_acks[role(side)] += u64::from(ev.dup_ack);
        if let Some(k) = ev.resend {
            c.resends[role(side)][resend_index(k)] += 1;
        }
        // A D-SACK reports the other side's resend as spurious.
        c.spurious[role(side.other())] += u64::from(ev.spurious);
        if let Some(since) = ev.zero_window_ended {
            self.rates.zero_window(scope, role(side), since, ts_ns);
        }
    }

    /// Counts the pending packets ([`PendingPackets`]) into the aggregate.
    fn flush_packets(&mut self) {
        let pending = &mut self.pending;
        if let Some((scope, p, f)) = pending.key.take() {
            self.rates
                .packets(scope, (p, f), pending.widths, &pending.cell);
            pending.cell = Cell::default();
        }
    }

    /// Counts the pending response times ([`PendingResponseTimes`]) into the aggregate.
    fn flush_response_times(&mut self) {
        let pending = &mut self.pending_rt;
        if let Some((scope, f)) = pending.key.take() {
            self.rates
                .response_times(scope, f, pending.width, pending.sum_ns, pending.count);
            pending.sum_ns = 0;
            pending.count = 0;
        }
    }
}

impl Default for Rates {
    fn default() -> Self {
        Rates::new(0)
    }
}

/// A connection's server scope, cached: the instance that gave the id, the client side it was named for
/// (the connection's 4-tuple is fixed, so the side names the server), and the id.
#[derive(Debug, Clone, Copy, Default)]
pub struct ServerScope(Option<(u64, Side, u32)>);

impl ServerScope {
    /// The scope id of the server opposite `client`, from the cache when this instance gave it for the
    /// same roles, else from `server()` (hashing an endpoint costs more than the rest of a packet's rate).
    #[inline]
    fn id(&mut self, rates: &mut Rates, client: Side, server: impl FnOnce() -> Endpoint) -> u32 {
        match self.0 {
            Some((instance, side, id)) if instance == rates.instance && side == client => id,
            _ => {
                let id = rates.rates.scope_id(server());
                self.0 = Some((rates.instance, client, id));
                id
            }
        }
    }
}

impl Analysis for Rates {
    type PerConnection = RateConnection;
    type Output = RateAggregate;

    #[inline]
    fn segment(
        &mut self,
        state: &mut RateConnection,
        conn: &ConnectionView<'_>,
        seg: &SegmentView<'_>,
    ) {
        let scope = &mut state.scope;
        // Roles as known at this packet: MySQL's word, the handshake, else the ports.
        let client = conn.client_side();
        let id = scope.id(self, client, || conn.key().endpoint(client.other()));
        let dir = if seg.side == client { C2S } else { S2C };
        let ts_ns = seg.at.ts.0;
        let widths = (self.rates.printed_width, self.rates.fine_width);
        let (p, f) = self.rates.bins_of(ts_ns);
        let key = Some((id, p, f));
        if self.pending.key != key || self.pending.widths != widths {
            self.flush_packets();
            self.pending.key = key;
            self.pending.widths = widths;
        }
        let pending = &mut self.pending;
        let c = &mut pending.cell;
        c.packets[dir] += 1;
        c.bytes[dir] += u64::from(seg.wire_len);
        c.retrans[dir] += u64::from(seg.is_retransmission());
        if self.path == PathTiming::Measured {
            let ev = state.path.segment(
                seg.side,
                seg.tcp,
                seg.class,
                ts_ns,
                conn.tcp().initial_rtt(),
            );
            if ev != PathEvents::default() {
                self.path_events(id, client, seg.side, &ev, ts_ns);
            }
        }
    }

    fn transaction(
        &mut self,
        state: &mut RateConnection,
        _: &ConnectionView<'_>,
        t: &TransactionView<'_>,
    ) {
        let scope = &mut state.scope;
        if t.transaction.command == Command::Connect {
            return;
        }
        if let Some(rt) = t.response_time_ns() {
            let id = scope.id(self, t.client_side(), || t.server);
            let ts_ns = t.transaction.request_ts_ns as i64;
            let p = &self.pending_rt;
            if !(p.key.is_some_and(|(s, _)| s == id) && ts_ns >= p.from && ts_ns < p.to) {
                self.flush_response_times();
                let width = self.rates.fine_width;
                let f = width.bin(ts_ns);
                let p = &mut self.pending_rt;
                p.key = Some((id, f));
                p.width = width;
                p.from = width.start(f);
                p.to = width.start(f.saturating_add(1));
            }
            let p = &mut self.pending_rt;
            p.sum_ns += rt;
            p.count += 1;
        }
    }

    fn connection_ended(
        &mut self,
        mut state: RateConnection,
        conn: &ConnectionView<'_>,
        _: &EndView<'_>,
    ) {
        // A zero window still advertised when the connection ended lasted until its last packet.
        if self.path == PathTiming::Measured {
            let client = conn.client_side();
            let last_ns = conn.tcp().last().ts.0;
            let open: Vec<(Side, i64)> = state.path.open_zero_windows();
            for (side, since) in open {
                let id = state
                    .scope
                    .id(self, client, || conn.key().endpoint(client.other()));
                self.rates
                    .zero_window(id, usize::from(side != client), since, last_ns);
            }
        }
        // A connection's handshake gives the path's round trip, the baseline for queueing evidence.
        let tcp = conn.tcp();
        if let (Some((client, _)), Some(rtt)) = (tcp.handshake_client(), tcp.initial_rtt()) {
            self.rates
                .handshake(tcp.key().endpoint(client.other()), rtt);
        }
    }

    fn merge(&mut self, mut other: Self) {
        self.flush();
        other.flush();
        self.rates.merge(other.rates);
    }

    fn finish(mut self, capture: &CaptureFacts) -> RateAggregate {
        self.flush();
        self.rates.keep_within(&capture.timeline);
        self.rates
    }
}

/// Rate series at the printed interval and at the detector's resolution, mergeable by addition.
#[derive(Debug, Clone, Default)]
pub struct RateAggregate {
    /// The printed intervals' width: as asked, or wider for a series that would hold more than
    /// `kept.0` of them ([`crate::widening`]).
    printed_width: BinWidth,
    /// The ceiling detector's bins' width: [`CEILING_BIN_NS`], or wider past `kept.1` of them.
    fine_width: BinWidth,
    /// How many printed and fine cells the series may hold, over every scope
    /// ([`RATE_INTERVALS_KEPT`], [`CEILING_BINS_KEPT`]).
    kept: (usize, usize),
    /// How many they hold.
    cells: (usize, usize),
    /// Scope of each id; id 0 is all traffic.
    scopes: Vec<Scope>,
    ids: HashMap<Endpoint, u32, FlowBuildHasher>,
    printed: Vec<Bins>,
    fine: Vec<Bins>,
    /// The path's figures per printed bin, per scope (when timed).
    path: Vec<HashMap<i64, PathCell, FlowBuildHasher>>,
    /// Whether the path was timed.
    path_timing: PathTiming,
    handshake_rtt: BTreeMap<Scope, Histogram>,
    /// The capture's body, once the run is over.
    timeline: Timeline,
    /// `[from, to)` where the last packet's printed and fine bins both hold, and those bins
    /// ([`RateAggregate::bins_of`]); not part of the content.
    last_bins: Option<(i64, i64, i64, i64)>,
}

impl PartialEq for RateAggregate {
    /// Equal content, whatever order scopes and bins were first seen in.
    fn eq(&self, o: &Self) -> bool {
        self.printed_width == o.printed_width
            && self.fine_width == o.fine_width
            && self.timeline == o.timeline
            && self.handshake_rtt == o.handshake_rtt
            && self.canonical(&self.printed) == o.canonical(&o.printed)
            && self.canonical(&self.fine) == o.canonical(&o.fine)
            && self.path_timing == o.path_timing
            && self.canonical_path() == o.canonical_path()
    }
}

impl RateAggregate {
    /// Empty series with rows `interval_ns` nanoseconds wide (at least 1).
    pub fn new(interval_ns: i64) -> Self {
        RateAggregate {
            printed_width: BinWidth::new(interval_ns),
            fine_width: BinWidth::new(CEILING_BIN_NS),
            kept: (RATE_INTERVALS_KEPT, CEILING_BINS_KEPT),
            scopes: vec![None],
            printed: vec![Bins::default()],
            fine: vec![Bins::default()],
            path: vec![HashMap::default()],
            ..Default::default()
        }
    }

    /// The path's figures of server `server` in interval `bin` of width `width`, when the path was timed
    /// at that width or a narrower one of the same asked width (its intervals added up): `Some(None)` for
    /// an interval without any (no sample), `None` when the path was not timed at such a width.
    pub(crate) fn path_at(
        &self,
        width: BinWidth,
        server: Endpoint,
        bin: i64,
    ) -> Option<Option<PathCell>> {
        if !self.path_timed_at(width) {
            return None;
        }
        let Some(m) = self
            .ids
            .get(&server)
            .and_then(|&i| self.path.get(i as usize))
        else {
            return Some(None);
        };
        let n = self.printed_width.bins_per(width);
        let first = bin.saturating_mul(n);
        let mut sum: Option<PathCell> = None;
        for b in first..first.saturating_add(n) {
            if let Some(c) = m.get(&b) {
                sum.get_or_insert_with(PathCell::default).add(c);
            }
        }
        Some(sum)
    }

    /// Whether the path was timed, at intervals of width `width` or narrower ones that add up to it.
    pub(crate) fn path_timed_at(&self, width: BinWidth) -> bool {
        self.path_timing == PathTiming::Measured
            && self.printed_width.asked_ns() == width.asked_ns()
            && self.printed_width.max(width) == width
    }

    /// The printed intervals' width: as asked, or wider for a long capture ([`crate::widening`]).
    pub(crate) fn printed_width(&self) -> BinWidth {
        self.printed_width
    }

    /// The path's figures of all traffic over the whole run (every interval's added up), when timed.
    pub(crate) fn path_total(&self) -> Option<PathCell> {
        if self.path_timing != PathTiming::Measured {
            return None;
        }
        let mut total = PathCell::default();
        for c in self.path.first().into_iter().flat_map(|m| m.values()) {
            total.add(c);
        }
        Some(total)
    }

    fn canonical_path(&self) -> BTreeMap<Scope, BTreeMap<i64, PathCell>> {
        self.scopes
            .iter()
            .zip(&self.path)
            .map(|(s, m)| (*s, m.iter().map(|(b, c)| (*b, c.clone())).collect()))
            .filter(|(_, m): &(Scope, BTreeMap<i64, PathCell>)| !m.is_empty())
            .collect()
    }

    /// Path events counted together ([`PendingPath`]): of scope `scope`, in printed bin `bin` of width
    /// `at`.
    fn path_cell(&mut self, scope: u32, bin: i64, at: BinWidth, cell: &PathCell) {
        let bin = at.rebin(bin, self.printed_width);
        for id in [0, scope as usize] {
            self.path[id].entry(bin).or_default().add(cell);
        }
    }

    /// `role` (0 the client, 1 the server) of a connection to the server of scope `scope` advertised a
    /// zero window from `from_ns` to `to_ns`: its time, split over the printed intervals it spans (its
    /// first [`ZERO_WINDOW_INTERVALS_KEPT`] intervals of the width asked).
    fn zero_window(&mut self, scope: u32, role: usize, from_ns: i64, to_ns: i64) {
        if to_ns <= from_ns {
            return;
        }
        // The intervals kept are counted at the width asked, whatever the series' width now, so that
        // the time kept does not depend on when the series widened (split invariance).
        let width = self.printed_width;
        let asked = BinWidth::new(width.asked_ns());
        let to_ns = to_ns.min(
            asked.start(
                asked
                    .bin(from_ns)
                    .saturating_add(ZERO_WINDOW_INTERVALS_KEPT),
            ),
        );
        if to_ns <= from_ns {
            return;
        }
        let (first, last) = (width.bin(from_ns), width.bin(to_ns - 1));
        for bin in first..=last {
            let start = width.start(bin);
            let ns = to_ns.min(width.start(bin.saturating_add(1))) - from_ns.max(start);
            for id in [0, scope as usize] {
                self.path[id].entry(bin).or_default().zero_window_ns[role] += ns;
                // The interval is a row of the series even when no packet fell in it.
                self.cells.0 += self.printed[id].add(bin, &Cell::default());
            }
        }
        self.bound();
    }

    /// Widens the series that hold more cells than they may ([`crate::widening`]).
    fn bound(&mut self) {
        while widening::over(self.cells.0, self.kept.0, self.printed_width) {
            self.widen_printed();
        }
        while widening::over(self.cells.1, self.kept.1, self.fine_width) {
            self.widen_fine();
        }
    }

    /// Doubles the printed intervals' width (and the path's, which shares them).
    fn widen_printed(&mut self) {
        let (from, to) = (self.printed_width, self.printed_width.doubled());
        for b in &mut self.printed {
            b.widen(from, to);
        }
        for m in &mut self.path {
            let mut wide: HashMap<i64, PathCell, FlowBuildHasher> = HashMap::default();
            for (b, c) in m.drain() {
                wide.entry(from.rebin(b, to)).or_default().add(&c);
            }
            *m = wide;
        }
        self.printed_width = to;
        self.cells.0 = self.printed.iter().map(|b| b.cells.len()).sum();
        self.last_bins = None;
    }

    /// Doubles the ceiling detector's bins' width.
    fn widen_fine(&mut self) {
        let (from, to) = (self.fine_width, self.fine_width.doubled());
        for b in &mut self.fine {
            b.widen(from, to);
        }
        self.fine_width = to;
        self.cells.1 = self.fine.iter().map(|b| b.cells.len()).sum();
        self.last_bins = None;
    }

    fn canonical(&self, series: &[Bins]) -> BTreeMap<Scope, Series> {
        self.scopes
            .iter()
            .zip(series)
            .map(|(s, b)| (*s, b.sorted()))
            .filter(|(_, s)| !s.is_empty())
            .collect()
    }

    /// The id of a server's scope (stable for a run; callers may cache it).
    pub(crate) fn scope_id(&mut self, server: Endpoint) -> u32 {
        let next = self.scopes.len() as u32;
        let id = *self.ids.entry(server).or_insert(next);
        if id == next {
            self.scopes.push(Some(server));
            self.printed.push(Bins::default());
            self.fine.push(Bins::default());
            self.path.push(HashMap::default());
        }
        id
    }

    /// Packets of connections to the server of scope `scope` (from [`RateAggregate::scope_id`]) that fell
    /// in printed bin `p` and fine bin `f` ([`RateAggregate::bins_of`]) of widths `at`: their packets,
    /// bytes and retransmissions are `counts`'.
    fn packets(&mut self, scope: u32, (p, f): (i64, i64), at: (BinWidth, BinWidth), counts: &Cell) {
        let p = at.0.rebin(p, self.printed_width);
        let f = at.1.rebin(f, self.fine_width);
        for id in [0, scope as usize] {
            self.cells.0 += self.printed[id].add(p, counts);
            self.cells.1 += self.fine[id].add(f, counts);
        }
        self.bound();
    }

    /// The printed and the fine bin of `ts_ns`. Packets come in time order, so most fall in the bins of
    /// the packet before: two 64-bit divisions per packet are saved by remembering where those bins end.
    #[inline]
    fn bins_of(&mut self, ts_ns: i64) -> (i64, i64) {
        match self.last_bins {
            Some((from, to, p, f)) if ts_ns >= from && ts_ns < to => (p, f),
            _ => {
                let (pw, fw) = (self.printed_width, self.fine_width);
                let (p, f) = (pw.bin(ts_ns), fw.bin(ts_ns));
                // Where both bins hold: from the later start to the earlier end.
                let from = pw.start(p).max(fw.start(f));
                let to = pw
                    .start(p.saturating_add(1))
                    .min(fw.start(f.saturating_add(1)));
                self.last_bins = Some((from, to, p, f));
                (p, f)
            }
        }
    }

    /// `count` requests to the server of scope `scope` (from [`RateAggregate::scope_id`]) sent in fine bin
    /// `f` of width `at` were answered after `sum_ns` in all.
    fn response_times(&mut self, scope: u32, f: i64, at: BinWidth, sum_ns: u64, count: u64) {
        let f = at.rebin(f, self.fine_width);
        let counts = Cell {
            rt_sum_ns: sum_ns,
            rt_count: count,
            ..Cell::default()
        };
        for i in [0, scope as usize] {
            self.cells.1 += self.fine[i].add(f, &counts);
        }
        self.bound();
    }

    /// A connection to `server` completed its handshake in `rtt_ns`: the path's round trip.
    pub(crate) fn handshake(&mut self, server: Endpoint, rtt_ns: i64) {
        for scope in [None, Some(server)] {
            self.handshake_rtt
                .entry(scope)
                .or_default()
                .add(rtt_ns.max(0) as u64);
        }
    }

    pub(crate) fn merge(&mut self, mut o: RateAggregate) {
        // A run's series is often all in one instance (one busy connection): into an instance that has
        // given no server its id yet (connections may have cached them), `o` is taken whole rather than
        // copied, which would hold it twice. Addition commutes.
        if self.scopes.len() <= 1 && self.cells.0 + self.cells.1 < o.cells.0 + o.cells.1 {
            std::mem::swap(self, &mut o);
        }
        if self.scopes.is_empty() {
            *self = RateAggregate::new(o.printed_width.asked_ns());
            self.kept = o.kept;
        }
        if o.path_timing == PathTiming::Measured {
            self.path_timing = PathTiming::Measured;
        }
        // Both at the wider of the two widths first: widening commutes with adding.
        let (pw, fw) = (
            self.printed_width.max(o.printed_width),
            self.fine_width.max(o.fine_width),
        );
        while self.printed_width != pw {
            self.widen_printed();
        }
        while self.fine_width != fw {
            self.widen_fine();
        }
        for (i, scope) in o.scopes.iter().enumerate() {
            let id = match scope {
                None => 0,
                Some(e) => self.scope_id(*e) as usize,
            };
            for (bin, cell) in &o.printed[i].cells {
                self.cells.0 += self.printed[id].add(o.printed_width.rebin(*bin, pw), cell);
            }
            for (bin, cell) in &o.fine[i].cells {
                self.cells.1 += self.fine[id].add(o.fine_width.rebin(*bin, fw), cell);
            }
            for (bin, cell) in &o.path[i] {
                self.path[id]
                    .entry(o.printed_width.rebin(*bin, pw))
                    .or_default()
                    .add(cell);
            }
        }
        self.bound();
        for (scope, h) in o.handshake_rtt {
            self.handshake_rtt.entry(scope).or_default().merge(&h);
        }
    }

    /// Leaves out the bins outside the capture's body; the first and last packets are the body's.
    pub(crate) fn keep_within(&mut self, timeline: &Timeline) {
        let within = |width: BinWidth, bin: i64| {
            timeline.overlaps_body(width.start(bin), width.start(bin.saturating_add(1)))
        };
        for (bins, width) in [
            (&mut self.printed, self.printed_width),
            (&mut self.fine, self.fine_width),
        ] {
            for b in bins.iter_mut() {
                b.retain(|bin| within(width, bin));
            }
        }
        let width = self.printed_width;
        for m in &mut self.path {
            m.retain(|bin, _| within(width, *bin));
        }
        self.cells = (
            self.printed.iter().map(|b| b.cells.len()).sum(),
            self.fine.iter().map(|b| b.cells.len()).sum(),
        );
        self.timeline = timeline.clone();
    }

    /// The finished report: series at the printed interval and the ceilings found.
    pub fn report(&self) -> RateReport {
        let width = self.printed_width;
        let secs = width.ns() as f64 / 1e9;
        // Seconds of an interval the capture covers (see [`crate::coverage`]).
        let covered = |bin: i64| -> f64 {
            crate::coverage::covered_s(&self.timeline, width.start(bin), width.ns())
        };
        let rows = |scope: &Scope, series: &Series| -> Vec<RatePoint> {
            let path = match scope {
                None => self.path.first(),
                Some(e) => self.ids.get(e).and_then(|&i| self.path.get(i as usize)),
            };
            let measured = self.path_timing == PathTiming::Measured;
            let (Some(&first), Some(&last)) = (series.keys().next(), series.keys().next_back())
            else {
                return Vec::new();
            };
            // The intervals with packets, and the empty ones at the edges of each silence, so that a
            // series drops to zero and rises from it: never one row per interval of a silence, which can
            // last days in a long capture.
            let mut bins: Vec<i64> = Vec::with_capacity(series.len() + 2);
            for &b in series.keys() {
                for e in [b.saturating_sub(1), b, b.saturating_add(1)] {
                    let shown = e == b || !series.contains_key(&e);
                    if shown && (first..=last).contains(&e) && bins.last().is_none_or(|&l| l < e) {
                        bins.push(e);
                    }
                }
            }
            bins.into_iter()
                .map(|bin| {
                    let c = series.get(&bin).copied().unwrap_or_default();
                    let secs = covered(bin);
                    RatePoint {
                        start: bin as f64 * width.ns() as f64 / 1e9,
                        covered_s: secs,
                        c2s_pps: c.packets[C2S] as f64 / secs,
                        s2c_pps: c.packets[S2C] as f64 / secs,
                        c2s_bps: c.bytes[C2S] as f64 * 8.0 / secs,
                        s2c_bps: c.bytes[S2C] as f64 * 8.0 / secs,
                        c2s_retrans: c.retrans[C2S],
                        s2c_retrans: c.retrans[S2C],
                        path: measured.then(|| {
                            path.and_then(|m| m.get(&bin))
                                .map(PathCell::point)
                                .unwrap_or_else(|| PathCell::default().point())
                        }),
                    }
                })
                .collect()
        };
        let printed = self.canonical(&self.printed);
        let fine = self.canonical(&self.fine);
        let mut ceilings = Vec::new();
        for (scope, series) in &fine {
            let rtt = self
                .handshake_rtt
                .get(scope)
                .filter(|h| h.count() > 0)
                .map(|h| h.quantile_ns(0.5));
            ceilings.extend(detect(*scope, series, self.fine_width, rtt));
        }
        // A cap on all traffic that one server's own ceiling explains is the same finding: keep the server's.
        let per_server: Vec<Ceiling> = ceilings
            .iter()
            .filter(|c| c.server.is_some())
            .cloned()
            .collect();
        ceilings.retain(|c| {
            c.server.is_some()
                || !per_server.iter().any(|s| {
                    s.kind == c.kind
                        && s.direction == c.direction
                        && overlap(s, c)
                        && (s.value - c.value).abs() <= c.value * CEILING_BAND
                })
        });
        ceilings.sort_by(|a, b| {
            a.start
                .total_cmp(&b.start)
                .then_with(|| a.server.cmp(&b.server))
                .then_with(|| a.direction.cmp(&b.direction))
        });
        RateReport {
            timeline: self.timeline.clone(),
            interval_s: secs,
            asked_interval_s: width.asked_ns() as f64 / 1e9,
            ceiling_bin_s: self.fine_width.ns() as f64 / 1e9,
            ceilings,
            total: printed
                .get(&None)
                .map(|series| rows(&None, series))
                .unwrap_or_default(),
            servers: printed
                .iter()
                .filter_map(|(s, series)| s.map(|e| (e.to_string(), rows(s, series))))
                .collect(),
        }
    }
}

/// One interval of a rate series (per second values).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RatePoint {
    /// Seconds since the epoch of the interval's start.
    pub start: f64,
    /// Seconds of the interval the capture covers (less than the interval at the capture's ends); the
    /// rates divide by it.
    pub covered_s: f64,
    /// Packets per second, client to server.
    pub c2s_pps: f64,
    /// Packets per second, server to client.
    pub s2c_pps: f64,
    /// Bits per second on the wire (link-layer frame lengths), client to server.
    pub c2s_bps: f64,
    /// Bits per second on the wire, server to client.
    pub s2c_bps: f64,
    /// Retransmitted segments, client to server, in the interval (a count, not a rate).
    pub c2s_retrans: u64,
    /// Retransmitted segments, server to client, in the interval.
    pub s2c_retrans: u64,
    /// The path in the interval: round trips, duplicate ACKs, resends by kind, zero-window time (when
    /// timed: [`PathTiming`]; its keys sit beside the others in JSON).
    #[serde(flatten)]
    pub path: Option<PathPoint>,
}

/// `pcapsleuth rate --json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RateReport {
    /// The capture's body: the series cover it; timestamps outside it are left out.
    pub timeline: Timeline,
    /// Width of each series interval, seconds: the width asked for, or a power of two times it when the
    /// series would otherwise hold more than 32,768 intervals (over all traffic and every server; a long
    /// capture), so that memory does not grow with the capture's duration.
    pub interval_s: f64,
    /// The width asked for, seconds.
    pub asked_interval_s: f64,
    /// Width of the bins the ceilings were looked for in, seconds: 0.1, or a power of two times it past
    /// 262,144 bins (a capture of hours, of many servers), where a cap shorter than a few bins is not seen.
    pub ceiling_bin_s: f64,
    /// Traffic pinned flat at a cap, per server and for all traffic (left out when one server's cap
    /// explains it), by start time.
    pub ceilings: Vec<Ceiling>,
    /// All TCP traffic.
    pub total: Vec<RatePoint>,
    /// Per server endpoint ("ip:port").
    pub servers: BTreeMap<String, Vec<RatePoint>>,
}

/// Traffic pinned at a cap.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Ceiling {
    /// What is capped: packets (`pps` in JSON) or bits (`bps`) per second.
    pub kind: Measure,
    /// Which way the capped traffic went (`client_to_server` or `server_to_client` in JSON).
    pub direction: Direction,
    /// The server endpoint, or null for all traffic.
    pub server: Option<String>,
    /// The cap, per second (packets or bits).
    pub value: f64,
    /// Seconds since the epoch.
    pub start: f64,
    /// Seconds since the epoch: where the capped run ends.
    pub end: f64,
    /// The other measure in the same run (bits/s for a packet cap, packets/s for a bit cap) and its mean
    /// packet size: a packet cap on small packets leaves the bit rate far from any cap.
    pub other_value: f64,
    /// Mean packet size over the run, bytes on the wire.
    pub mean_packet_bytes: f64,
    /// Coefficient of variation of the capped measure over the run's bins.
    pub flatness_cv: f64,
    /// Why this is a cap and not steady load: drops/retransmissions, requests queueing.
    pub evidence: Vec<String>,
}

struct Run {
    from: usize,
    to: usize,
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        0.0
    } else {
        v[v.len() / 2]
    }
}

fn cv(v: &[f64]) -> f64 {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    if mean == 0.0 {
        return f64::INFINITY;
    }
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
    var.sqrt() / mean
}

/// Runs of bins at the series' highest sustained level. The series comes in segments: the bins from one
/// with packets to the next are all there (empty ones as zeros), and segments are separated by silences of
/// at least [`CEILING_LEVEL_WINDOW_BINS`] empty bins, which no window of the level and no run can cross
/// with anything but zeros. So the answer is the one the whole series, silences filled in with zeros,
/// would give, at a cost that follows the bins with packets and not the span. Runs are (segment, run).
///
/// A series shorter than the level window (a short capture) takes its level over windows as long as the
/// series; runs shorter than [`CEILING_MIN_RUN_FLOOR_BINS`] are never returned ([`min_run_bins`] asks
/// more of each run according to its rate).
fn flat_runs(segments: &[Vec<f64>], span_bins: usize) -> Vec<(usize, Run)> {
    if span_bins < CEILING_MIN_RUN_FLOOR_BINS {
        return Vec::new();
    }
    let window = span_bins.min(CEILING_LEVEL_WINDOW_BINS);
    let pad = [0.0; CEILING_LEVEL_WINDOW_BINS - 1];
    let pad = &pad[..window - 1];
    let last = segments.len().saturating_sub(1);
    let level = segments
        .iter()
        .enumerate()
        .map(|(i, seg)| {
            // Windows reaching into a silence see its zeros; the series' own ends have none beyond them.
            let before = if i > 0 { pad } else { &[] };
            let after = if i < last { pad } else { &[] };
            let padded: Vec<f64> = [before, &seg[..], after].concat();
            padded
                .windows(window)
                .map(|w| median(&mut w.to_vec()))
                .fold(0.0, f64::max)
        })
        .fold(0.0, f64::max);
    if level <= 0.0 {
        return Vec::new();
    }
    let at = |v: f64| (v - level).abs() <= level * CEILING_BAND;
    let mut runs = Vec::new();
    for (s, values) in segments.iter().enumerate() {
        let mut i = 0;
        while i < values.len() {
            if !at(values[i]) {
                i += 1;
                continue;
            }
            let (from, mut to, mut misses) = (i, i, 0usize);
            let mut j = i + 1;
            while j < values.len() {
                if at(values[j]) {
                    to = j;
                } else if j + 1 < values.len()
                    && at(values[j + 1])
                    && (misses + 1) as f64 <= CEILING_MAX_MISSES * (j - from + 1) as f64
                {
                    misses += 1;
                } else {
                    break;
                }
                j += 1;
            }
            if to + 1 - from >= CEILING_MIN_RUN_FLOOR_BINS {
                runs.push((s, Run { from, to }));
            }
            i = to + 1;
        }
    }
    runs
}

/// The bins a flat run must span to be a cap when its direction carries `packets_per_bin` packets a bin:
/// as many as make it unlikelier than [`CEILING_CHANCE`] that Poisson noise at that level keeps every bin
/// within [`CEILING_BAND`] of it, between [`CEILING_MIN_RUN_FLOOR_BINS`] and [`CEILING_MIN_RUN_BINS`].
fn min_run_bins(packets_per_bin: f64) -> usize {
    if packets_per_bin.is_nan() || packets_per_bin <= 0.0 {
        return CEILING_MIN_RUN_BINS;
    }
    // A Poisson count within the band of its mean, by the normal approximation with continuity
    // correction (the band is at least one count wide: half a count each side).
    let half_width = CEILING_BAND * packets_per_bin + 0.5;
    let p_in_band = erf(half_width / (2.0 * packets_per_bin).sqrt());
    if p_in_band >= 1.0 {
        return CEILING_MIN_RUN_BINS;
    }
    let n = (CEILING_CHANCE.ln() / p_in_band.ln()).ceil();
    if n.is_finite() {
        (n as usize).clamp(CEILING_MIN_RUN_FLOOR_BINS, CEILING_MIN_RUN_BINS)
    } else {
        CEILING_MIN_RUN_FLOOR_BINS
    }
}

/// The error function, to 1.5e-7 (Abramowitz and Stegun 7.1.26).
fn erf(x: f64) -> f64 {
    let sign = if x < 0.0 { -1.0 } else { 1.0 };
    let x = x.abs();
    let t = 1.0 / (1.0 + 0.327_591_1 * x);
    let y = 1.0
        - (((((1.061_405_429 * t - 1.453_152_027) * t) + 1.421_413_741) * t - 0.284_496_736) * t
            + 0.254_829_592)
            * t
            * (-x * x).exp();
    sign * y
}

struct Candidate {
    ceiling: Ceiling,
    cv: f64,
    dir: usize,
    bytes: f64,
}

fn detect(
    scope: Scope,
    series: &Series,
    width: BinWidth,
    path_rtt_ns: Option<u64>,
) -> Vec<Ceiling> {
    let (Some(&first), Some(&last)) = (series.keys().next(), series.keys().next_back()) else {
        return Vec::new();
    };
    // The first and last bins are partial (the capture starts and ends inside them).
    if last - first < 2 {
        return Vec::new();
    }
    // The bins between the first and the last with traffic, and the segments they make (see
    // [`flat_runs`]): each segment's first bin and the range of `cells` it holds. A segment is dense (the
    // silent bins inside it count as zeros), but only its values are made dense, one measure at a time:
    // 8 bytes a bin, not a cell's 72.
    let cells: Vec<(i64, Cell)> = series
        .range(first + 1..last)
        .map(|(&b, &c)| (b, c))
        .collect();
    let mut segments: Vec<(i64, std::ops::Range<usize>)> = Vec::new();
    for (i, &(b, _)) in cells.iter().enumerate() {
        match segments.last_mut() {
            Some((_, range)) if b - cells[range.end - 1].0 <= CEILING_LEVEL_WINDOW_BINS as i64 => {
                range.end = i + 1;
            }
            _ => segments.push((b, i..i + 1)),
        }
    }
    let span_bins = usize::try_from(last - first - 1).unwrap_or(usize::MAX);
    let secs = width.ns() as f64 / 1e9;
    let mut found: Vec<Candidate> = Vec::new();
    for dir in [C2S, S2C] {
        for kind in [Measure::Packets, Measure::Bits] {
            let value = |c: &Cell| match kind {
                Measure::Packets => c.packets[dir] as f64 / secs,
                Measure::Bits => c.bytes[dir] as f64 * 8.0 / secs,
            };
            let values: Vec<Vec<f64>> = segments
                .iter()
                .map(|(start, range)| {
                    let seg = &cells[range.clone()];
                    let len = seg.last().map_or(0, |&(b, _)| b - start + 1);
                    let mut v = vec![0.0; usize::try_from(len).unwrap_or(0)];
                    for (b, c) in seg {
                        v[(b - start) as usize] = value(c);
                    }
                    v
                })
                .collect();
            for (seg, run) in flat_runs(&values, span_bins) {
                let (start, range) = &segments[seg];
                // The run's bins, and those of them with traffic.
                let (run_first, run_last) = (start + run.from as i64, start + run.to as i64);
                let bins = run.to + 1 - run.from;
                let seg_cells = &cells[range.clone()];
                let lo = seg_cells.partition_point(|&(b, _)| b < run_first);
                let hi = seg_cells.partition_point(|&(b, _)| b <= run_last);
                let cells = &seg_cells[lo..hi];
                let vals: Vec<f64> = values[seg][run.from..=run.to].to_vec();
                let cap = median(&mut vals.clone());
                let min_rate = if kind == Measure::Packets {
                    CEILING_MIN_PPS
                } else {
                    CEILING_MIN_BPS
                };
                if cap < min_rate {
                    continue;
                }
                let packets: u64 = cells.iter().map(|(_, c)| c.packets[dir]).sum();
                // Flat for long enough, at this rate, that chance cannot explain it.
                if bins < min_run_bins(packets as f64 / bins as f64) {
                    continue;
                }
                let bytes: u64 = cells.iter().map(|(_, c)| c.bytes[dir]).sum();
                let retrans: u64 = cells.iter().map(|(_, c)| c.retrans[dir]).sum();
                let (rt_sum, rt_n) = cells.iter().fold((0u64, 0u64), |(s, n), (_, c)| {
                    (s + c.rt_sum_ns, n + c.rt_count)
                });
                let mut evidence = Vec::new();
                if packets > 0 && retrans as f64 >= EVIDENCE_RETRANS_SHARE * packets as f64 {
                    evidence.push(format!(
                        "{retrans} retransmitted segments ({:.2}% of {packets} packets): drops at the cap",
                        100.0 * retrans as f64 / packets as f64
                    ));
                }
                if let (Some(rtt), true) = (path_rtt_ns, rt_n > 0) {
                    let mean_rt = rt_sum as f64 / rt_n as f64;
                    if mean_rt >= EVIDENCE_RT_FACTOR * rtt as f64 && mean_rt >= EVIDENCE_RT_MIN_NS {
                        evidence.push(format!(
                            "requests queueing: mean response time {:.2} ms over {rt_n} requests, {:.0}x the path round trip ({:.3} ms)",
                            mean_rt / 1e6,
                            mean_rt / rtt.max(1) as f64,
                            rtt as f64 / 1e6
                        ));
                    }
                }
                if evidence.is_empty() {
                    continue; // steady load: flat but nothing waiting behind it
                }
                let duration = bins as f64 * secs;
                let mean_size = if packets == 0 {
                    0.0
                } else {
                    bytes as f64 / packets as f64
                };
                let other_value = match kind {
                    Measure::Packets => bytes as f64 * 8.0 / duration,
                    Measure::Bits => packets as f64 / duration,
                };
                found.push(Candidate {
                    cv: cv(&vals),
                    dir,
                    bytes: bytes as f64,
                    ceiling: Ceiling {
                        kind,
                        direction: if dir == C2S {
                            Direction::ClientToServer
                        } else {
                            Direction::ServerToClient
                        },
                        server: scope.map(|e| e.to_string()),
                        value: cap,
                        start: run_first as f64 * secs,
                        end: (run_last + 1) as f64 * secs,
                        other_value,
                        mean_packet_bytes: mean_size,
                        flatness_cv: cv(&vals),
                        evidence,
                    },
                });
            }
        }
    }
    choose(found)
}

fn overlap(a: &Ceiling, b: &Ceiling) -> bool {
    a.start < b.end && b.start < a.end
}

/// One cap per time span: of a flat packet rate and a flat bit rate in the same direction, the flatter is
/// the cap (equally flat: small packets mean a packet cap); of both directions flat at once (a closed loop
/// of requests and responses mirrors a cap), the direction carrying more bytes.
fn choose(mut found: Vec<Candidate>) -> Vec<Ceiling> {
    let mut keep = vec![true; found.len()];
    for i in 0..found.len() {
        for j in 0..found.len() {
            if i == j || !keep[i] || !keep[j] || !overlap(&found[i].ceiling, &found[j].ceiling) {
                continue;
            }
            let (a, b) = (&found[i], &found[j]);
            let loser = if a.dir == b.dir {
                if a.ceiling.kind == b.ceiling.kind {
                    continue;
                }
                if (a.cv - b.cv).abs() > CV_TIE {
                    if a.cv > b.cv {
                        i
                    } else {
                        j
                    }
                } else {
                    let small = a.ceiling.mean_packet_bytes < SMALL_PACKET_BYTES;
                    let a_wins = (a.ceiling.kind == Measure::Packets) == small;
                    if a_wins {
                        j
                    } else {
                        i
                    }
                }
            } else if a.bytes >= b.bytes {
                j
            } else {
                i
            };
            keep[loser] = false;
        }
    }
    let mut out = Vec::new();
    for (k, c) in keep.into_iter().zip(found.drain(..)) {
        if k {
            out.push(c.ceiling);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::widening::{merged_both_ways, narrowest};
    use proptest::prelude::*;

    const SEC: i64 = 1_000_000_000;

    /// The intervals with packets and the empty ones at the edges of each silence, never the silence.
    #[test]
    fn a_series_lists_the_edges_of_a_silence_not_the_silence() {
        let mut r = RateAggregate::new(SEC);
        for s in [10, 11, 15, 40, 1_000_000_000] {
            let (p, f) = r.bins_of(s * SEC);
            r.packets(0, (p, f), (r.printed_width, r.fine_width), &cell(1, 0));
        }
        let starts: Vec<f64> = r.report().total.iter().map(|p| p.start).collect();
        assert_eq!(
            starts,
            [
                10.0,
                11.0,
                12.0,
                14.0,
                15.0,
                16.0,
                39.0,
                40.0,
                41.0,
                999_999_999.0,
                1e9
            ]
        );
    }

    /// Packets `(server, µs, packets)` into an aggregate of 1 ms intervals keeping `kept` cells.
    fn fed(items: &[(u8, i64, u64)], kept: (usize, usize)) -> RateAggregate {
        let mut r = RateAggregate::new(1_000_000);
        r.kept = kept;
        for &(server, us, n) in items {
            let id = r.scope_id(Endpoint {
                ip: std::net::IpAddr::from([10, 0, 0, server]),
                port: 3306,
            });
            let (p, f) = r.bins_of(us * 1_000);
            r.packets(id, (p, f), (r.printed_width, r.fine_width), &cell(n, 0));
        }
        r
    }

    proptest! {
        /// A series widened in parts and merged, in any order, is the series widened whole: the same
        /// widths and the same counts (what makes widening split-invariant); and its width is the
        /// narrowest power of two of the asked one at which the run's cells fit.
        #[test]
        fn series_widened_in_parts_are_the_series_widened_whole(
            items in proptest::collection::vec((1u8..4, -3_000_000i64..30_000_000, 1u64..4), 1..200),
            cuts in proptest::collection::vec(0usize..200, 0..6),
            kept in (3usize..40, 3usize..40),
        ) {
            let whole = fed(&items, kept);
            let (forward, backward) =
                merged_both_ways(&items, cuts, |part| fed(part, kept), RateAggregate::merge);
            prop_assert!(forward == whole);
            prop_assert!(backward == whole);
            // The narrowest width that fits: all traffic's cells and each server's.
            let fits = |w: BinWidth| {
                let cells: std::collections::BTreeSet<(u8, i64)> = items
                    .iter()
                    .flat_map(|&(s, us, _)| [(0, w.bin(us * 1_000)), (s, w.bin(us * 1_000))])
                    .collect();
                cells.len() <= kept.0
            };
            let w = narrowest(1_000_000, fits);
            prop_assert_eq!(whole.printed_width, w);
            let counted = |r: &RateAggregate| -> u64 {
                r.printed[0].cells.iter().map(|(_, c)| c.packets[C2S]).sum()
            };
            prop_assert_eq!(counted(&whole), items.iter().map(|i| i.2).sum::<u64>());
        }
    }

    /// The run a cap needs follows its rate: 11 bins at 100 packets a bin (a 1,000 packets/s shaper seen
    /// in 100 ms bins), the 2 s cap at 1,000 and more, never under the 1 s floor.
    #[test]
    fn a_run_needs_fewer_bins_where_noise_would_show_more() {
        assert_eq!(min_run_bins(100.0), 11);
        assert_eq!(min_run_bins(1_000.0), CEILING_MIN_RUN_BINS);
        assert_eq!(min_run_bins(100_000.0), CEILING_MIN_RUN_BINS);
        assert_eq!(min_run_bins(5.0), CEILING_MIN_RUN_FLOOR_BINS);
        assert_eq!(min_run_bins(0.0), CEILING_MIN_RUN_BINS);
        assert!((erf(0.5) - 0.520_499_877_8).abs() < 1e-6);
    }

    fn cell(packets: u64, retrans: u64) -> Cell {
        Cell {
            packets: [packets, 0],
            bytes: [packets * 100, 0],
            retrans: [retrans, 0],
            rt_sum_ns: 0,
            rt_count: 0,
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 1024, ..ProptestConfig::default() })]
        /// Ceilings found on the bins with packets are those of the whole series, every silence filled in
        /// with empty bins (what the detector read before it skipped silences).
        #[test]
        fn ceilings_of_a_sparse_series_are_those_of_the_series_with_silences_filled(
            blocks in proptest::collection::vec(
                (
                    // Bins of traffic: at a level, with some off it and some retransmissions.
                    proptest::collection::vec(
                        (prop_oneof![8 => Just(0u64), 1 => 1u64..40], prop_oneof![5 => Just(0u64), 1 => 1u64..4]),
                        1..60,
                    ),
                    prop_oneof![Just(300u64), Just(2000u64)],
                    // Then a silence: none, short (misses), just under or over the level window, long.
                    prop_oneof![3 => Just(0i64), 1 => 1i64..3, 1 => 18i64..22, 1 => 30i64..90],
                ),
                1..8,
            ),
        ) {
            let mut sparse = Series::new();
            let mut bin = 0i64;
            for (cells, level, silence) in blocks {
                for (off, retrans) in cells {
                    sparse.insert(bin, cell(level - off.min(level), retrans));
                    bin += 1;
                }
                bin += silence;
            }
            let mut dense = sparse.clone();
            let last = sparse.keys().next_back().copied().unwrap_or(0);
            for b in 0..last {
                dense.entry(b).or_default();
            }
            let w = BinWidth::new(CEILING_BIN_NS);
            prop_assert_eq!(detect(None, &sparse, w, None), detect(None, &dense, w, None));
        }
    }
}
