//! Two capture points of one workload: the closes each saw and the requests neither saw answered.
//!
//! [`compare`](crate::compare()) lines up the requests of a client capture and a server capture.
//! [`compare_endings`] lines up how their connections ended: each FIN and RST a side sent (its first of
//! each), as the point at that side saw it leave and as the point at the other side saw it arrive, and the
//! requests that were not answered. A packet seen arriving at one point that the point at its sender does
//! not show leaving was sent by something between them; one seen leaving that never arrived was lost or
//! swallowed on the way.
//!
//! **Neither end closed.** When the client's point shows its server side closing first (before the client
//! closed) and the server's point shows its client side closing first, both cannot be true of the two
//! ends: the server's close would have reached the client before the client's close left, and the
//! client's would have reached the server before the server's left, so each was sent before the other
//! and after it. When in addition the server point shows no close of the server's that the client's could
//! be, and the two closes came at the same moment on the aligned clocks, a device between them (a proxy,
//! a load balancer, a firewall) closed both sides: with a request waiting at a timer's wait, its timeout.
//!
//! [`Endings`] is the analysis that gives each capture's closes and unanswered requests, run beside
//! [`Exchanges`](crate::Exchanges).

use std::collections::BTreeMap;

use pcapsleuth_flow::{CloseFlag, Endpoint, Role, Side};
use pcapsleuth_mysql::Command;
use serde::Serialize;

use crate::cause::{
    close_not_sent, device_closed_both, wait_words, Cause, DeviceCloseFacts, NotSentFacts,
};
use crate::compare::{CaptureSpan, ClockAlignment, ClockBasis, Comparison, Exchange, Seen};
use crate::events::{Analysis, CloseView, ConnectionView, EndView, TransactionView};
use crate::facts::CaptureFacts;
use crate::mysql::Fate;
use crate::thresholds::{
    COMPARE_CLOSE_ARRIVAL_NS, COMPARE_CLOSE_SLACK_NS, COMPARE_SAME_MOMENT_MIN_NS,
};
use crate::units::duration_us;

/// A FIN or RST one side of a connection sent (its first of that flag), as one capture point saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct SeenClose {
    /// FIN or RST.
    pub flag: CloseFlag,
    /// The side whose address it bears.
    pub by: Role,
    /// Its frame and time at this point.
    pub at: Seen,
}

/// A request this capture point did not see answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct OpenRequest {
    /// Its first byte.
    pub request: Seen,
    /// What became of it here: cut off by a close, or still waiting when the capture ended.
    pub fate: Fate,
}

/// How one connection ended, as one capture point saw it: the closes of each side and the requests left
/// unanswered. Only connections with a close or an unanswered request are kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConnectionEnding {
    /// The client's endpoint as this point saw it.
    pub client: Endpoint,
    /// The server's endpoint as this point saw it.
    pub server: Endpoint,
    /// The connection's first frame ([`Exchange::connection`]).
    pub connection: u64,
    /// The first FIN and the first RST of each side, in time order.
    pub closes: Vec<SeenClose>,
    /// The requests not answered here, in time order.
    pub open: Vec<OpenRequest>,
}

/// The closes and the unanswered requests of every connection of a capture (see the module docs), in
/// order of the connections' first frames.
#[derive(Debug, Default)]
pub struct Endings {
    endings: Vec<ConnectionEnding>,
}

/// What [`Endings`] keeps of a connection while it lasts: its closes by side (the side's role is known
/// for sure only at its end) and its unanswered requests; made at the first of them, so that a
/// connection with neither (an attempt of a SYN flood) costs a pointer.
#[derive(Debug, Default)]
pub struct EndingTrack(Option<Box<EndingLists>>);

#[derive(Debug, Default)]
struct EndingLists {
    closes: Vec<(CloseFlag, Side, Seen)>,
    open: Vec<OpenRequest>,
}

impl EndingTrack {
    fn lists(&mut self) -> &mut EndingLists {
        self.0.get_or_insert_with(Box::default)
    }
}

impl Analysis for Endings {
    type PerConnection = EndingTrack;
    type Output = Vec<ConnectionEnding>;

    fn transaction(
        &mut self,
        s: &mut EndingTrack,
        _: &ConnectionView<'_>,
        t: &TransactionView<'_>,
    ) {
        let tx = t.transaction;
        if tx.command == Command::Connect || !matches!(t.fate(), Fate::CutOff | Fate::Unanswered) {
            return;
        }
        if let Ok(ts_ns) = i64::try_from(tx.request_ts_ns) {
            s.lists().open.push(OpenRequest {
                request: Seen {
                    frame: tx.request_frame,
                    ts_ns,
                },
                fate: t.fate(),
            });
        }
    }

    fn close(&mut self, s: &mut EndingTrack, _: &ConnectionView<'_>, close: &CloseView<'_>) {
        let ev = close.tcp;
        s.lists().closes.push((
            ev.flag,
            ev.side,
            Seen {
                frame: ev.at.frame,
                ts_ns: ev.at.ts.0,
            },
        ));
    }

    fn connection_ended(&mut self, s: EndingTrack, conn: &ConnectionView<'_>, _: &EndView<'_>) {
        let Some(s) = s.0 else {
            return;
        };
        if s.closes.is_empty() && s.open.is_empty() {
            return;
        }
        let (client_side, _) = conn.roles();
        let mut closes: Vec<SeenClose> = s
            .closes
            .into_iter()
            .map(|(flag, side, at)| SeenClose {
                flag,
                by: if side == client_side {
                    Role::Client
                } else {
                    Role::Server
                },
                at,
            })
            .collect();
        closes.sort_by_key(|c| (c.at.frame, c.flag));
        self.endings.push(ConnectionEnding {
            client: conn.client(),
            server: conn.server(),
            connection: conn.tcp().first().frame,
            closes,
            open: s.open,
        });
    }

    fn merge(&mut self, other: Self) {
        self.endings.extend(other.endings);
    }

    fn finish(mut self, _: &CaptureFacts) -> Vec<ConnectionEnding> {
        self.endings.sort_by_key(|e| e.connection);
        self.endings
    }
}

/// What makes a connection's ending notable between two capture points.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EndingKind {
    /// Neither end closed: a device between the two points closed both sides at once.
    DeviceClosedBoth,
    /// A FIN or RST arrived at one point in the name of the other side, whose own point shows no such
    /// packet leaving: something between them sent it.
    CloseNotSent,
    /// A side's FIN or RST left it (seen at its point) and never arrived at the other point, though that
    /// capture went on.
    CloseNotReceived,
    /// A request found in both captures that neither point saw answered.
    AnsweredAtNeither,
}

impl EndingKind {
    /// Its name, as JSON and the text give it.
    pub fn name(self) -> &'static str {
        match self {
            EndingKind::DeviceClosedBoth => "device_closed_both",
            EndingKind::CloseNotSent => "close_not_sent",
            EndingKind::CloseNotReceived => "close_not_received",
            EndingKind::AnsweredAtNeither => "answered_at_neither",
        }
    }
}

/// A connection as one capture point saw it, and the frames of it a notable ending is about.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EndingAt {
    /// The client's endpoint there.
    pub client: Endpoint,
    /// The server's endpoint there.
    pub server: Endpoint,
    /// The frames (that capture's numbers), in order.
    pub frames: Vec<u64>,
}

/// A connection whose ending the two points tell differently, or a request neither saw answered.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NotableEnding {
    /// What makes it notable.
    pub kind: EndingKind,
    /// When it happened, seconds since the epoch, client clock.
    pub at: f64,
    /// In the client capture (null when that capture has nothing of it).
    pub client_capture: Option<EndingAt>,
    /// In the server capture (null when that capture has nothing of it).
    pub server_capture: Option<EndingAt>,
    /// The request it is about, when it is about one: its statement, or its command.
    pub request: Option<String>,
    /// How long the request had waited when it ended, at the client point then at the server point,
    /// seconds.
    pub waited_s: [Option<f64>; 2],
    /// What happened, in words.
    pub detail: String,
    /// Why, when the two points say: a device between them that sent a close in an end's name.
    pub cause: Option<Cause>,
}

/// Notable endings by kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
pub struct EndingCounts {
    /// Connections a device between the points closed on both sides.
    pub device_closed_both: u64,
    /// FINs and RSTs that arrived in the name of a side that did not send them.
    pub close_not_sent: u64,
    /// FINs and RSTs sent that never arrived at the other point.
    pub close_not_received: u64,
    /// Requests answered at neither point.
    pub answered_at_neither: u64,
}

/// How the connections of the two captures ended, side by side.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct EndingsComparison {
    /// Pairs of connections whose closes were compared (the connections [`compare`](crate::compare())
    /// paired by their requests, with a close or an unanswered request at either point).
    pub compared: u64,
    /// Every closes that arrived where it was sent, on those connections.
    pub closes_matched: u64,
    /// The notable endings, in time order.
    pub notable: Vec<NotableEnding>,
    /// The notable endings by kind.
    pub counts: EndingCounts,
}

/// A connection of one capture: its first frame, client and server.
type ConnectionKey = (u64, Endpoint, Endpoint);

/// The clocks as [`compare`](crate::compare()) aligned them.
struct Clocks {
    known: bool,
    offset_ns: f64,
    drift: f64,
    reference_ns: f64,
    /// How far off the alignment may be, ns.
    uncertainty_ns: i64,
}

impl Clocks {
    fn of(a: &ClockAlignment) -> Clocks {
        Clocks {
            known: a.basis != ClockBasis::Unknown && a.offset_us.is_some(),
            offset_ns: a.offset_us.unwrap_or(0.0) * 1e3,
            drift: a.drift_ppm.unwrap_or(0.0) * 1e-6,
            reference_ns: a.reference.unwrap_or(0.0) * 1e9,
            uncertainty_ns: (a.uncertainty_us.unwrap_or(0.0) * 1e3).round() as i64,
        }
    }

    /// A server-clock time on the client's clock.
    fn to_client(&self, server_ns: i64) -> i64 {
        let guess = server_ns as f64 - self.offset_ns;
        let offset = self.offset_ns + self.drift * (guess - self.reference_ns);
        server_ns.saturating_sub(offset.round() as i64)
    }

    /// A client-clock time on the server's clock.
    fn to_server(&self, client_ns: i64) -> i64 {
        let offset = self.offset_ns + self.drift * (client_ns as f64 - self.reference_ns);
        client_ns.saturating_add(offset.round() as i64)
    }
}

/// The two captures' endings of one pair of connections.
struct Pair<'a> {
    client: Option<&'a ConnectionEnding>,
    server: Option<&'a ConnectionEnding>,
    /// The endpoints each capture saw the connection with (from its exchanges).
    client_at: (Endpoint, Endpoint),
    server_at: (Endpoint, Endpoint),
}

/// Which capture point.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Point {
    Client,
    Server,
}

impl Point {
    fn name(self) -> &'static str {
        match self {
            Point::Client => "client",
            Point::Server => "server",
        }
    }

    /// The point at the side `role`.
    fn of(role: Role) -> Option<Point> {
        match role {
            Role::Client => Some(Point::Client),
            Role::Server => Some(Point::Server),
            Role::Unknown => None,
        }
    }

    fn other(self) -> Point {
        match self {
            Point::Client => Point::Server,
            Point::Server => Point::Client,
        }
    }
}

/// Compares how the connections of the two captures ended: `client` and `server` are each capture's
/// exchanges (as [`compare`](crate::compare()) was given them) and endings ([`Endings`]), `cmp` the
/// comparison of their requests, `spans` when each capture ran (the options' spans, else its exchanges').
pub fn compare_endings(
    (client, client_endings): (&[Exchange], &[ConnectionEnding]),
    (server, server_endings): (&[Exchange], &[ConnectionEnding]),
    cmp: &Comparison,
    spans: (CaptureSpan, CaptureSpan),
) -> EndingsComparison {
    let clocks = Clocks::of(&cmp.clock);
    // A device's closes reach the two points within one trip through the path between them.
    let same_moment_ns =
        COMPARE_SAME_MOMENT_MIN_NS.max((cmp.path_us.p99.max(0.0) * 1e3).round() as i64);
    let by_conn = |list: &[ConnectionEnding]| -> BTreeMap<(Endpoint, Endpoint, u64), usize> {
        list.iter()
            .enumerate()
            .map(|(i, e)| ((e.client, e.server, e.connection), i))
            .collect()
    };
    let (client_idx, server_idx) = (by_conn(client_endings), by_conn(server_endings));
    // Connections paired by their matched requests: each client connection with the server connection
    // holding most of them (the first such, by its first frame).
    let mut votes: BTreeMap<ConnectionKey, BTreeMap<ConnectionKey, u64>> = BTreeMap::new();
    for p in &cmp.pairs {
        let (c, s) = (&client[p.client], &server[p.server]);
        *votes
            .entry((c.connection, c.client, c.server))
            .or_default()
            .entry((s.connection, s.client, s.server))
            .or_default() += 1;
    }
    // The client capture's requests in words, by frame, for the closes that cut one off.
    let open: std::collections::BTreeSet<u64> = client_endings
        .iter()
        .flat_map(|x| x.open.iter().map(|o| o.request.frame))
        .collect();
    let requests: BTreeMap<u64, String> = client
        .iter()
        .filter(|e| open.contains(&e.request.frame))
        .map(|e| {
            (
                e.request.frame,
                e.statement
                    .as_deref()
                    .map_or_else(|| e.command.name().to_string(), str::to_string),
            )
        })
        .collect();
    let matched_client: std::collections::BTreeSet<u64> = cmp
        .pairs
        .iter()
        .map(|p| client[p.client].request.frame)
        .collect();
    let mut out = EndingsComparison::default();
    let mut found: Vec<(i64, u64, NotableEnding)> = Vec::new();
    for ((cc, ccl, csv), servers) in &votes {
        let Some((&(sc, scl, ssv), _)) = servers
            .iter()
            .max_by(|a, b| a.1.cmp(b.1).then(b.0 .0.cmp(&a.0 .0)))
        else {
            continue;
        };
        let pair = Pair {
            client: client_idx
                .get(&(*ccl, *csv, *cc))
                .map(|&i| &client_endings[i]),
            server: server_idx.get(&(scl, ssv, sc)).map(|&i| &server_endings[i]),
            client_at: (*ccl, *csv),
            server_at: (scl, ssv),
        };
        if pair.client.is_none() && pair.server.is_none() {
            continue;
        }
        out.compared += 1;
        let matched = endings_of(
            &pair,
            (&requests, &matched_client),
            &clocks,
            same_moment_ns,
            spans,
            &mut found,
        );
        out.closes_matched += matched;
    }
    unanswered_at_both(
        client,
        server,
        cmp,
        (client_endings, server_endings),
        &clocks,
        &mut found,
    );
    found.sort_by_key(|a| (a.0, a.1, a.2.kind));
    for (_, _, n) in found {
        match n.kind {
            EndingKind::DeviceClosedBoth => out.counts.device_closed_both += 1,
            EndingKind::CloseNotSent => out.counts.close_not_sent += 1,
            EndingKind::CloseNotReceived => out.counts.close_not_received += 1,
            EndingKind::AnsweredAtNeither => out.counts.answered_at_neither += 1,
        }
        out.notable.push(n);
    }
    out
}

/// Whether the capture that ran `span` was running at `ns`.
fn within(span: CaptureSpan, ns: i64) -> bool {
    (span.first_ns..=span.last_ns).contains(&ns)
}

/// A close in words: "the server's FIN (client frame 1489)".
fn close_words(c: &SeenClose, at: Point) -> String {
    format!(
        "the {}'s {} ({} frame {})",
        c.by.name(),
        c.flag.name(),
        at.name(),
        c.at.frame
    )
}

/// The notable endings of one pair of connections (pushed to `found` with their client-clock time and
/// first frame); returns how many closes arrived where they were sent.
fn endings_of(
    pair: &Pair<'_>,
    (requests, answered_there): (&BTreeMap<u64, String>, &std::collections::BTreeSet<u64>),
    clocks: &Clocks,
    same_moment_ns: i64,
    (client_span, server_span): (CaptureSpan, CaptureSpan),
    found: &mut Vec<(i64, u64, NotableEnding)>,
) -> u64 {
    let ends = Ends {
        pair,
        clocks,
        client_span,
        server_span,
        slack: clocks.uncertainty_ns + COMPARE_CLOSE_SLACK_NS,
        // Through a proxy (other endpoints at the two points) each side's closes are the proxy's own
        // packets, sent when it relays a close of the other connection, as a FIN or a RST as it
        // chooses: a close is then the relay of any close of that side before it. Where nothing
        // rewrote the connection, it must be the same packet.
        proxied: pair.client_at != pair.server_at,
    };
    let (matched, not_sent, not_received) = ends.unmatched();
    if let Some(ending) = ends.closed_by_device(&not_sent, requests, same_moment_ns) {
        found.push(ending);
        return matched;
    }
    for (here, c) in not_sent {
        found.push(ends.not_sent(here, c, requests, answered_there));
    }
    for (here, c) in not_received {
        found.push(ends.not_received(here, c));
    }
    matched
}

/// One pair of connections as its endings are read: its closes at each point, each capture's span, and
/// the clocks between them.
struct Ends<'p, 'a> {
    pair: &'p Pair<'a>,
    clocks: &'p Clocks,
    client_span: CaptureSpan,
    server_span: CaptureSpan,
    /// How far a close may seem to arrive before it was sent (the clocks' uncertainty and more), ns.
    slack: i64,
    /// The two points saw other endpoints: a proxy relays closes as it chooses.
    proxied: bool,
}

/// A notable ending with its client-clock time and first frame.
type Found = (i64, u64, NotableEnding);

impl<'a> Ends<'_, 'a> {
    /// The closes point `p` saw.
    fn at(&self, p: Point) -> &'a [SeenClose] {
        let end = match p {
            Point::Client => self.pair.client,
            Point::Server => self.pair.server,
        };
        end.map_or(&[], |e| &e.closes[..])
    }

    /// The span of point `p`'s capture.
    fn span(&self, p: Point) -> CaptureSpan {
        match p {
            Point::Client => self.client_span,
            Point::Server => self.server_span,
        }
    }

    /// A time of point `p` on point `q`'s clock.
    fn on(&self, p: Point, q: Point, ns: i64) -> i64 {
        match (p, q) {
            (Point::Server, Point::Client) => self.clocks.to_client(ns),
            (Point::Client, Point::Server) => self.clocks.to_server(ns),
            _ => ns,
        }
    }

    /// Where point `p` saw the ending: the connection's endpoints there and `frames`.
    fn ending_at(&self, p: Point, frames: Vec<u64>) -> EndingAt {
        let (client, server) = match p {
            Point::Client => self.pair.client_at,
            Point::Server => self.pair.server_at,
        };
        EndingAt {
            client,
            server,
            frames,
        }
    }

    /// The closes that arrived where they were counted (how many), those seen arriving that their sender
    /// never sent, and those seen leaving that never arrived while the other capture went on.
    #[allow(clippy::type_complexity)]
    fn unmatched(&self) -> (u64, Vec<(Point, SeenClose)>, Vec<(Point, SeenClose)>) {
        // Each close seen arriving at a point, from the other side: was it sent by that side?
        let mut not_sent: Vec<(Point, SeenClose)> = Vec::new();
        let mut matched = 0;
        for here in [Point::Client, Point::Server] {
            for c in self.at(here).iter() {
                let Some(from) = Point::of(c.by).filter(|&f| f != here) else {
                    continue;
                };
                let on_sender = self.on(here, from, c.at.ts_ns);
                let sent = self.at(from).iter().any(|s| {
                    s.by == c.by
                        && (self.proxied || s.flag == c.flag)
                        && (!self.clocks.known
                            || s.at.ts_ns <= on_sender.saturating_add(self.slack))
                });
                if sent {
                    matched += 1;
                } else if self.clocks.known && within(self.span(from), on_sender) {
                    not_sent.push((here, *c));
                }
            }
        }
        // Each close seen leaving a point: did it arrive at the other?
        let mut not_received: Vec<(Point, SeenClose)> = Vec::new();
        for here in [Point::Client, Point::Server] {
            for c in self.at(here).iter() {
                if Point::of(c.by) != Some(here) {
                    continue;
                }
                let to = here.other();
                let on_receiver = self.on(here, to, c.at.ts_ns);
                let arrived = self.at(to).iter().any(|r| {
                    r.by == c.by
                        && (self.proxied || r.flag == c.flag)
                        && (!self.clocks.known
                            || r.at.ts_ns.saturating_add(self.slack) >= on_receiver)
                });
                let went_on = self.clocks.known
                    && within(self.span(to), on_receiver)
                    && self.span(to).last_ns
                        >= on_receiver.saturating_add(COMPARE_CLOSE_ARRIVAL_NS);
                if !arrived && went_on {
                    not_received.push((here, *c));
                }
            }
        }

        (matched, not_sent, not_received)
    }

    /// Neither end closed: the client point's first close is its server side's, which the server never
    /// sent; the server point's first is its client side's, at the same moment.
    fn closed_by_device(
        &self,
        not_sent: &[(Point, SeenClose)],
        requests: &BTreeMap<u64, String>,
        same_moment_ns: i64,
    ) -> Option<Found> {
        let first = |p: Point| self.at(p).iter().min_by_key(|c| (c.at.ts_ns, c.at.frame));
        if let (Some(to_client), Some(to_server)) = (first(Point::Client), first(Point::Server)) {
            let server_never = not_sent
                .iter()
                .any(|(p, c)| *p == Point::Client && c == to_client);
            let apart = (self.on(Point::Server, Point::Client, to_server.at.ts_ns)
                - to_client.at.ts_ns)
                .abs();
            if self.clocks.known
                && to_client.by == Role::Server
                && to_server.by == Role::Client
                && server_never
                && apart <= self.clocks.uncertainty_ns + same_moment_ns
            {
                let client_frames: Vec<u64> =
                    self.at(Point::Client).iter().map(|c| c.at.frame).collect();
                let server_frames: Vec<u64> =
                    self.at(Point::Server).iter().map(|c| c.at.frame).collect();
                let never_sent_by_client = not_sent
                    .iter()
                    .find(|(p, _)| *p == Point::Server)
                    .map(|(_, c)| (c.flag, c.at.frame));
                // The request the close cut off at the client point: the latest one open before it.
                let cut = self.pair.client.and_then(|e| {
                    e.open
                        .iter()
                        .filter(|o| o.request.ts_ns <= to_client.at.ts_ns)
                        .max_by_key(|o| (o.request.ts_ns, o.request.frame))
                });
                let words = cut.map(|o| {
                    requests
                        .get(&o.request.frame)
                        .map_or_else(|| "a request".to_string(), |w| format!("`{w}`"))
                });
                let proxy = (self.pair.client_at.1 != self.pair.server_at.1
                    || self.pair.client_at.0 != self.pair.server_at.0)
                    .then_some((self.pair.client_at.1, self.pair.server_at.0));
                let cause = device_closed_both(&DeviceCloseFacts {
                    to_client: (to_client.flag, to_client.at.frame),
                    to_server: (to_server.flag, to_server.at.frame),
                    never_sent_by_client,
                    apart_ns: apart,
                    uncertainty_ns: self.clocks.uncertainty_ns,
                    request: cut
                        .zip(words.as_deref())
                        .map(|(o, w)| (w, o.request.frame, to_client.at.ts_ns - o.request.ts_ns)),
                    proxy,
                });
                let detail = cause.summary.clone();
                return Some((
                    to_client.at.ts_ns,
                    to_client.at.frame,
                    NotableEnding {
                        kind: EndingKind::DeviceClosedBoth,
                        at: to_client.at.ts_ns as f64 / 1e9,
                        client_capture: Some(self.ending_at(Point::Client, client_frames)),
                        server_capture: Some(self.ending_at(Point::Server, server_frames)),
                        request: None,
                        waited_s: [None, None],
                        detail,
                        cause: Some(cause),
                    },
                ));
            }
        }
        None
    }

    /// A close that arrived at `here` but that its sender's capture never sent.
    fn not_sent(
        &self,
        here: Point,
        c: SeenClose,
        requests: &BTreeMap<u64, String>,
        answered_there: &std::collections::BTreeSet<u64>,
    ) -> Found {
        let from = Point::of(c.by).unwrap_or(here.other());
        let t = self.on(here, Point::Client, c.at.ts_ns);
        let own: Vec<(CloseFlag, u64)> = self
            .at(from)
            .iter()
            .filter(|s| s.by == c.by)
            .map(|s| (s.flag, s.at.frame))
            .collect();
        // The request the close came right after, at a client point (a reset answering a request).
        let after = (here == Point::Client)
            .then(|| {
                self.pair.client.and_then(|e| {
                    e.open
                        .iter()
                        .filter(|o| o.request.ts_ns <= c.at.ts_ns)
                        .max_by_key(|o| (o.request.ts_ns, o.request.frame))
                })
            })
            .flatten();
        let words = after.map(|o| {
            requests
                .get(&o.request.frame)
                .map_or_else(|| "a request".to_string(), |w| format!("`{w}`"))
        });
        let cause = close_not_sent(&NotSentFacts {
            flag: c.flag,
            by: (
                c.by,
                match here {
                    Point::Client => self.pair.client_at.1,
                    Point::Server => self.pair.server_at.0,
                },
            ),
            arrived_at: (here.name(), c.at.frame),
            ran_after_ns: self.span(from).last_ns - self.on(here, from, c.at.ts_ns),
            own,
            after_request: after.zip(words.as_deref()).map(|(o, w)| {
                (
                    w,
                    o.request.frame,
                    c.at.ts_ns - o.request.ts_ns,
                    answered_there.contains(&o.request.frame),
                )
            }),
        });
        let mut n = NotableEnding {
            kind: EndingKind::CloseNotSent,
            at: t as f64 / 1e9,
            client_capture: None,
            server_capture: None,
            request: None,
            waited_s: [None, None],
            detail: cause.summary.clone(),
            cause: Some(cause),
        };
        let there = Some(self.ending_at(here, vec![c.at.frame]));
        let other = Some(self.ending_at(from, vec![]));
        match here {
            Point::Client => (n.client_capture, n.server_capture) = (there, other),
            Point::Server => (n.server_capture, n.client_capture) = (there, other),
        }
        (t, c.at.frame, n)
    }

    /// A close that left `here` and never arrived at the other point.
    fn not_received(&self, here: Point, c: SeenClose) -> Found {
        let to = here.other();
        let t = self.on(here, Point::Client, c.at.ts_ns);
        let detail = format!(
            "{} left the {} and never reached the {} point, whose capture went on {} after it",
            close_words(&c, here),
            here.name(),
            to.name(),
            duration_us(
                (self.span(to).last_ns - self.on(here, to, c.at.ts_ns)).max(0) as f64 / 1e3
            ),
        );
        let mut n = NotableEnding {
            kind: EndingKind::CloseNotReceived,
            at: t as f64 / 1e9,
            client_capture: None,
            server_capture: None,
            request: None,
            waited_s: [None, None],
            detail,
            cause: None,
        };
        let there = Some(self.ending_at(here, vec![c.at.frame]));
        let other = Some(self.ending_at(to, vec![]));
        match here {
            Point::Client => (n.client_capture, n.server_capture) = (there, other),
            Point::Server => (n.server_capture, n.client_capture) = (there, other),
        }
        (t, c.at.frame, n)
    }
}

/// The requests found in both captures that neither point saw answered, each with how it ended at each
/// point (the first close after it, and how long it had waited).
fn unanswered_at_both(
    client: &[Exchange],
    server: &[Exchange],
    cmp: &Comparison,
    (client_endings, server_endings): (&[ConnectionEnding], &[ConnectionEnding]),
    clocks: &Clocks,
    found: &mut Vec<(i64, u64, NotableEnding)>,
) {
    let index = |list: &[ConnectionEnding]| -> BTreeMap<(Endpoint, Endpoint, u64), usize> {
        list.iter()
            .enumerate()
            .map(|(i, e)| ((e.client, e.server, e.connection), i))
            .collect()
    };
    let (ci, si) = (index(client_endings), index(server_endings));
    // The request of `e` left open at its point, and the first close after it there.
    let open = |e: &Exchange,
                idx: &BTreeMap<(Endpoint, Endpoint, u64), usize>,
                list: &[ConnectionEnding]|
     -> Option<(Fate, Option<SeenClose>)> {
        let ending = &list[*idx.get(&(e.client, e.server, e.connection))?];
        let r = ending
            .open
            .iter()
            .find(|o| o.request.frame == e.request.frame)?;
        let close = ending
            .closes
            .iter()
            .filter(|c| c.at.ts_ns >= r.request.ts_ns)
            .min_by_key(|c| (c.at.ts_ns, c.at.frame))
            .copied();
        Some((r.fate, close))
    };
    let _ = clocks;
    for p in &cmp.pairs {
        let (c, s) = (&client[p.client], &server[p.server]);
        let (Some((cf, cclose)), Some((sf, sclose))) =
            (open(c, &ci, client_endings), open(s, &si, server_endings))
        else {
            continue;
        };
        let ended =
            |fate: Fate, close: Option<SeenClose>, e: &Exchange, at: Point| match (fate, close) {
                (Fate::CutOff, Some(x)) => (
                    format!(
                        "cut off at the {} point by {} after {}",
                        at.name(),
                        close_words(&x, at),
                        wait_words(x.at.ts_ns - e.request.ts_ns)
                    ),
                    Some((x.at.ts_ns - e.request.ts_ns) as f64 / 1e9),
                    Some(x.at.frame),
                ),
                _ => (
                    format!(
                        "still waiting at the {} point when its capture ended",
                        at.name()
                    ),
                    None,
                    None,
                ),
            };
        let (cw, cwait, cframe) = ended(cf, cclose, c, Point::Client);
        let (sw, swait, sframe) = ended(sf, sclose, s, Point::Server);
        let what = c
            .statement
            .as_deref()
            .map_or_else(|| c.command.name().to_string(), str::to_string);
        let detail = format!(
            "answered at neither point (client frame {}, server frame {}): {cw}; {sw}",
            c.request.frame, s.request.frame
        );
        found.push((
            c.request.ts_ns,
            c.request.frame,
            NotableEnding {
                kind: EndingKind::AnsweredAtNeither,
                at: c.request.ts_ns as f64 / 1e9,
                client_capture: Some(EndingAt {
                    client: c.client,
                    server: c.server,
                    frames: std::iter::once(c.request.frame).chain(cframe).collect(),
                }),
                server_capture: Some(EndingAt {
                    client: s.client,
                    server: s.server,
                    frames: std::iter::once(s.request.frame).chain(sframe).collect(),
                }),
                request: Some(what),
                waited_s: [cwait, swait],
                detail,
                cause: None,
            },
        ));
    }
}
