//! What the requests of a response-time hump have in common: the error codes that answered them, their
//! commands, servers, connections and clients, when they came, and the first of them by frame.
//!
//! [`HumpTraits`] is collected beside a response-time distribution ([`crate::rt`]), one request at a
//! time, in memory that does not grow with the capture: a histogram per error code and per command (as
//! fine as the distribution's, so that a hump's share of each is exact), one per server endpoint for the
//! [`HUMP_SERVERS_KEPT`] lowest endpoints (the rest together), and for each bin of the distribution its
//! earliest [`HUMP_MEMBERS_PER_BIN`] requests by frame ([`Member`]) and its latest request's frame and time.
//! A hump's connections and clients are read from those members: all of the hump's requests when none of
//! its bins held more (a timeout's hump of a few dozen errors), else the earliest of each bin, and the
//! report says which. Everything merges by addition or by keeping the lowest keys, so it is the same
//! however the capture was split.
//!
//! It collects and never words: a hump's lines and its finding are written in `hump_findings.rs`, its
//! cause is inferred in `cause/hump.rs`.

use std::collections::BTreeMap;

use pcapsleuth_flow::Endpoint;
use pcapsleuth_mysql::Command;
use serde::Serialize;

use crate::histogram::{Binned, Histogram, FINE};
use crate::modes::Mode;
use crate::thresholds::{
    HUMP_LISTED, HUMP_MEMBERS_PER_BIN, HUMP_SERVERS_KEPT, HUMP_TRAIT_MIN_SHARE,
};

/// One request of the distribution, as a hump's member: enough to name its connection and find it in
/// Wireshark. Ordered by request frame first: the earliest are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Member {
    /// The frame of the request's first byte.
    pub(crate) request_frame: u64,
    /// The frame of the response's last byte, when there is one.
    pub(crate) response_frame: Option<u64>,
    /// The request's time, ns since the epoch.
    pub(crate) request_ts_ns: i64,
    /// The connection's first frame: tells apart connections of a reused 4-tuple.
    pub(crate) connection: u64,
    pub(crate) client: Endpoint,
    pub(crate) server: Endpoint,
    /// The MySQL error code that answered it.
    pub(crate) error: Option<u16>,
}

/// The members of one histogram bin: the earliest by frame, and the latest request's frame and time.
#[derive(Debug, Clone, PartialEq, Eq)]
struct BinMembers {
    /// The earliest [`HUMP_MEMBERS_PER_BIN`] noted, and some later ones: kept in the order noted until
    /// there are twice as many, then cut to the earliest (requests of several connections come
    /// interleaved, so a sorted insert would move the list for most of them). [`BinMembers::settle`]
    /// leaves exactly the earliest, sorted.
    earliest: Vec<Member>,
    /// Nothing with a later request frame can be among the earliest: the last kept at the last cut.
    bound: u64,
    /// (frame, ns since the epoch) of the bin's latest request.
    latest: Option<(u64, i64)>,
}

impl Default for BinMembers {
    fn default() -> Self {
        BinMembers {
            earliest: Vec::new(),
            bound: u64::MAX,
            latest: None,
        }
    }
}

impl BinMembers {
    #[inline]
    fn note(&mut self, m: &Member) {
        if self
            .latest
            .is_none_or(|(f, t)| (m.request_frame, m.request_ts_ns) > (f, t))
        {
            self.latest = Some((m.request_frame, m.request_ts_ns));
        }
        self.note_earliest(m);
    }

    fn merge(&mut self, o: &BinMembers) {
        for m in &o.earliest {
            self.note_earliest(m);
        }
        if let Some(l) = o.latest {
            if self.latest.is_none_or(|s| l > s) {
                self.latest = Some(l);
            }
        }
    }

    #[inline]
    fn note_earliest(&mut self, m: &Member) {
        // Requests come in frame order on a connection: once a bin is cut, nearly all are past its bound.
        if m.request_frame > self.bound {
            return;
        }
        self.earliest.push(*m);
        if self.earliest.len() >= 2 * HUMP_MEMBERS_PER_BIN {
            self.cut();
        }
    }

    /// Keeps the earliest [`HUMP_MEMBERS_PER_BIN`], in no particular order, and bounds what may join them.
    fn cut(&mut self) {
        if self.earliest.len() > HUMP_MEMBERS_PER_BIN {
            self.earliest.select_nth_unstable(HUMP_MEMBERS_PER_BIN - 1);
            self.earliest.truncate(HUMP_MEMBERS_PER_BIN);
        }
        self.bound = match self.earliest.iter().max() {
            Some(l) if self.earliest.len() == HUMP_MEMBERS_PER_BIN => l.request_frame,
            _ => u64::MAX,
        };
    }

    /// Keeps exactly the earliest [`HUMP_MEMBERS_PER_BIN`], sorted: the same whatever order they were
    /// noted in.
    fn settle(&mut self) {
        self.cut();
        self.earliest.sort_unstable();
    }

    /// The earliest [`HUMP_MEMBERS_PER_BIN`] (those of a settled bin as they are).
    fn kept(&self) -> std::borrow::Cow<'_, [Member]> {
        if self.earliest.len() <= HUMP_MEMBERS_PER_BIN {
            return std::borrow::Cow::Borrowed(&self.earliest);
        }
        let mut kept = self.earliest.clone();
        kept.select_nth_unstable(HUMP_MEMBERS_PER_BIN - 1);
        kept.truncate(HUMP_MEMBERS_PER_BIN);
        std::borrow::Cow::Owned(kept)
    }
}

/// The response times of an error code, and its earliest error by request frame.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct ErrorCode {
    rt: Histogram,
    /// (request frame, SQLSTATE, message) of the earliest.
    message: Option<(u64, String, String)>,
}

/// What the requests of each bin of a response-time distribution have in common (see the module docs).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct HumpTraits {
    by_error: BTreeMap<u16, ErrorCode>,
    /// By command byte; empty until the first request with a command.
    by_command: Vec<Histogram>,
    /// The lowest [`HUMP_SERVERS_KEPT`] server endpoints seen, in order, each with its distribution.
    servers: Vec<(Endpoint, Histogram)>,
    /// The requests to every other server.
    other_servers: Histogram,
    /// Members of bins `base..base + members.len()` (the distribution's bin numbers).
    base: u16,
    members: Vec<BinMembers>,
}

impl HumpTraits {
    /// Notes a request whose response time is `rt`: `member` says what it was; `command` is its MySQL
    /// command (`None` for a tcprstat-style request) and `message` its error's SQLSTATE and message, if
    /// any.
    #[inline]
    pub(crate) fn note(
        &mut self,
        rt: Binned,
        member: &Member,
        command: Option<Command>,
        message: Option<(&str, &str)>,
    ) {
        if let Some(code) = member.error {
            self.note_error(rt, code, member.request_frame, message);
        }
        if let Some(c) = command {
            if self.by_command.is_empty() {
                self.by_command.resize_with(256, Histogram::default);
            }
            if let Some(h) = self.by_command.get_mut(usize::from(c.byte())) {
                h.add_binned(rt);
            }
        }
        self.note_server(member.server, rt);
        self.bin(rt.bin()).note(member);
    }

    #[inline(never)]
    fn note_error(&mut self, rt: Binned, code: u16, frame: u64, message: Option<(&str, &str)>) {
        let e = self.by_error.entry(code).or_default();
        e.rt.add_binned(rt);
        if let Some((state, text)) = message {
            if e.message.as_ref().is_none_or(|(f, _, _)| frame < *f) {
                e.message = Some((frame, state.to_string(), text.to_string()));
            }
        }
    }

    #[inline]
    fn note_server(&mut self, server: Endpoint, rt: Binned) {
        if let Some((_, h)) = self.servers.iter_mut().find(|(e, _)| *e == server) {
            h.add_binned(rt);
            return;
        }
        let mut h = Histogram::default();
        h.add_binned(rt);
        self.keep_server(server, h);
    }

    /// Adds `h`, the requests to `server`, keeping the lowest [`HUMP_SERVERS_KEPT`] endpoints apart:
    /// an endpoint among the lowest of all is among the lowest of every part, so it is counted whole.
    fn keep_server(&mut self, server: Endpoint, h: Histogram) {
        match self.servers.binary_search_by(|(e, _)| e.cmp(&server)) {
            Ok(i) => self.servers[i].1.merge(&h),
            Err(i) if i < HUMP_SERVERS_KEPT => {
                self.servers.insert(i, (server, h));
                if self.servers.len() > HUMP_SERVERS_KEPT {
                    if let Some((_, out)) = self.servers.pop() {
                        self.other_servers.merge(&out);
                    }
                }
            }
            Err(_) => self.other_servers.merge(&h),
        }
    }

    /// The members of bin `bin`, growing the span as [`Histogram`] does.
    #[inline]
    fn bin(&mut self, bin: u16) -> &mut BinMembers {
        if self.members.is_empty() {
            self.base = bin;
        }
        if bin < self.base {
            let grow = usize::from(self.base - bin);
            self.members
                .splice(0..0, std::iter::repeat_n(BinMembers::default(), grow));
            self.base = bin;
        }
        let i = usize::from(bin - self.base);
        if i >= self.members.len() {
            self.members.resize_with(i + 1, BinMembers::default);
        }
        &mut self.members[i]
    }

    /// Leaves every bin's members as [`BinMembers::settle`] does: what equal traits hold alike.
    pub(crate) fn settle(&mut self) {
        for b in &mut self.members {
            b.settle();
        }
    }

    pub(crate) fn merge(&mut self, o: &HumpTraits) {
        for (code, e) in &o.by_error {
            let mine = self.by_error.entry(*code).or_default();
            mine.rt.merge(&e.rt);
            if let Some((f, st, m)) = &e.message {
                if mine.message.as_ref().is_none_or(|(g, _, _)| f < g) {
                    mine.message = Some((*f, st.clone(), m.clone()));
                }
            }
        }
        if !o.by_command.is_empty() {
            if self.by_command.is_empty() {
                self.by_command.resize_with(256, Histogram::default);
            }
            for (mine, h) in self.by_command.iter_mut().zip(&o.by_command) {
                mine.merge(h);
            }
        }
        for (e, h) in &o.servers {
            self.keep_server(*e, h.clone());
        }
        self.other_servers.merge(&o.other_servers);
        for (i, b) in o.members.iter().enumerate() {
            if b.latest.is_some() {
                self.bin(o.base + i as u16).merge(b);
            }
        }
    }

    /// What the requests of `mode` have in common; `all` is the distribution the mode was found in (the
    /// one these traits were collected beside).
    pub(crate) fn of_mode(&self, mode: &Mode, all: &Histogram) -> ModeMembers {
        let in_mode = mode.count_in(all).max(1) as f64;
        let share = |h: &Histogram| mode.count_in(h) as f64 / in_mode;
        let mut errors: Vec<HumpError> = self
            .by_error
            .iter()
            .filter_map(|(&code, e)| {
                let count = mode.count_in(&e.rt);
                (count > 0).then(|| HumpError {
                    code,
                    count,
                    share: count as f64 / in_mode,
                    of_code: count as f64 / e.rt.count().max(1) as f64,
                    sql_state: e
                        .message
                        .as_ref()
                        .map(|(_, st, _)| st.clone())
                        .unwrap_or_default(),
                    message: e
                        .message
                        .as_ref()
                        .map(|(_, _, m)| m.clone())
                        .unwrap_or_default(),
                })
            })
            .collect();
        errors.sort_by(|a, b| b.count.cmp(&a.count).then(a.code.cmp(&b.code)));
        errors.truncate(HUMP_LISTED);
        let mut commands: Vec<(String, f64)> = self
            .by_command
            .iter()
            .enumerate()
            .map(|(b, h)| (Command::from_byte(b as u8).name().to_string(), share(h)))
            .filter(|(_, s)| *s >= HUMP_TRAIT_MIN_SHARE)
            .collect();
        commands.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        commands.truncate(HUMP_LISTED);
        let mut servers: Vec<(String, f64)> = self
            .servers
            .iter()
            .map(|(e, h)| (e.to_string(), share(h)))
            .filter(|(_, s)| *s > 0.0)
            .collect();
        servers.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let distinct_servers = servers.len() as u64;
        servers.truncate(HUMP_LISTED);

        // The members of the mode's bins, and whether they are all of its requests.
        let mut members: Vec<Member> = Vec::new();
        let mut complete = true;
        let mut latest: Option<(u64, i64)> = None;
        for (lo, hi, n) in all.bins() {
            if !mode.holds_bin(hi) {
                continue;
            }
            let Some(b) = self.members_of(lo) else {
                complete = false;
                continue;
            };
            let kept = b.kept();
            complete &= kept.len() as u64 == n;
            members.extend_from_slice(&kept);
            if let Some(l) = b.latest {
                if latest.is_none_or(|s| l > s) {
                    latest = Some(l);
                }
            }
        }
        let first_error = errors.first().and_then(|e| {
            members
                .iter()
                .filter(|m| m.error == Some(e.code))
                .min()
                .map(|m| (m.request_frame, m.response_frame))
        });
        ModeMembers {
            first_error,
            errors,
            commands,
            servers,
            distinct_servers,
            other_servers_share: share(&self.other_servers),
            connections: HumpConnections::of(&members, complete),
            first: members.iter().min().map(HumpRequest::of),
            last_request_at: latest.map(|(_, t)| t as f64 / 1e9),
        }
    }

    /// The members of the bin whose lower edge is `lo_ns`.
    fn members_of(&self, lo_ns: u64) -> Option<&BinMembers> {
        let bin = Binned::<FINE>::new(lo_ns).bin();
        let i = usize::from(bin.checked_sub(self.base)?);
        self.members.get(i)
    }
}

/// What [`HumpTraits::of_mode`] finds: the traits of one hump besides those the distribution itself
/// gives.
pub(crate) struct ModeMembers {
    /// The earliest of its requests (among those kept) answered by its most frequent error code.
    pub(crate) first_error: Option<(u64, Option<u64>)>,
    pub(crate) errors: Vec<HumpError>,
    pub(crate) commands: Vec<(String, f64)>,
    pub(crate) servers: Vec<(String, f64)>,
    pub(crate) distinct_servers: u64,
    pub(crate) other_servers_share: f64,
    pub(crate) connections: HumpConnections,
    pub(crate) first: Option<HumpRequest>,
    pub(crate) last_request_at: Option<f64>,
}

/// An error code among a hump's responses.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HumpError {
    /// The MySQL error code.
    pub code: u16,
    /// The hump's requests it answered.
    pub count: u64,
    /// Their share of the hump, 0..1.
    pub share: f64,
    /// Their share of every answered request this code answered in the capture, 0..1: near 1 when the
    /// hump holds (nearly) all of them.
    pub of_code: f64,
    /// The SQLSTATE of the code's earliest error in the capture; empty when it had none.
    pub sql_state: String,
    /// The message of the code's earliest error in the capture.
    pub message: String,
}

/// The connections a hump's requests came on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HumpConnections {
    /// The requests these figures are read from: every request of the hump when `complete`, else the
    /// earliest of each of its histogram bins (a sample, biased to the capture's start).
    pub requests: u64,
    /// `requests` is every request of the hump: the counts below are exact.
    pub complete: bool,
    /// Distinct TCP connections among them.
    pub connections: u64,
    /// Distinct client addresses among them.
    pub clients: u64,
    /// The connections with the most of them, most first (at most 5).
    pub top: Vec<HumpConnection>,
    /// The client addresses with the most of them, most first (at most 5), with their request counts.
    pub top_clients: Vec<(String, u64)>,
}

/// One connection of a hump.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HumpConnection {
    /// The client's endpoint.
    pub client: String,
    /// The server's endpoint.
    pub server: String,
    /// The connection's first frame.
    pub first_frame: u64,
    /// The hump's requests on it (among `requests`).
    pub requests: u64,
}

impl HumpConnections {
    fn of(members: &[Member], complete: bool) -> HumpConnections {
        let mut by_conn: BTreeMap<(u64, Endpoint, Endpoint), u64> = BTreeMap::new();
        let mut by_client: BTreeMap<std::net::IpAddr, u64> = BTreeMap::new();
        for m in members {
            *by_conn
                .entry((m.connection, m.client, m.server))
                .or_default() += 1;
            *by_client.entry(m.client.ip).or_default() += 1;
        }
        let mut top: Vec<HumpConnection> = by_conn
            .iter()
            .map(|(&(first_frame, c, s), &n)| HumpConnection {
                client: c.to_string(),
                server: s.to_string(),
                first_frame,
                requests: n,
            })
            .collect();
        top.sort_by(|a, b| {
            b.requests
                .cmp(&a.requests)
                .then(a.first_frame.cmp(&b.first_frame))
        });
        top.truncate(HUMP_LISTED);
        let mut top_clients: Vec<(String, u64)> = by_client
            .iter()
            .map(|(ip, &n)| (ip.to_string(), n))
            .collect();
        top_clients.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        top_clients.truncate(HUMP_LISTED);
        HumpConnections {
            requests: members.len() as u64,
            complete,
            connections: by_conn.len() as u64,
            clients: by_client.len() as u64,
            top,
            top_clients,
        }
    }
}

/// A request of a hump, to find in Wireshark.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HumpRequest {
    /// The frame of its first byte.
    pub request_frame: u64,
    /// The frame of its response's last byte.
    pub response_frame: Option<u64>,
    /// When it was sent, seconds since the epoch.
    pub time: f64,
    /// The client's endpoint.
    pub client: String,
    /// The server's endpoint.
    pub server: String,
    /// The MySQL error code that answered it, if one did.
    pub error: Option<u16>,
}

impl HumpRequest {
    fn of(m: &Member) -> HumpRequest {
        HumpRequest {
            request_frame: m.request_frame,
            response_frame: m.response_frame,
            time: m.request_ts_ns as f64 / 1e9,
            client: m.client.to_string(),
            server: m.server.to_string(),
            error: m.error,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modes::detect_modes;

    fn ep(s: &str) -> Endpoint {
        s.parse().unwrap()
    }

    fn member(frame: u64, conn: u64, client: &str, error: Option<u16>) -> Member {
        Member {
            request_frame: frame,
            response_frame: Some(frame + 1),
            request_ts_ns: frame as i64 * 1_000_000,
            connection: conn,
            client: ep(client),
            server: ep("10.0.0.1:3306"),
            error,
        }
    }

    /// 200 fast requests and a hump of 20 errors within one bin of 1.0004 s (a timeout), with 4 slow
    /// successes beside them: each request's response time and what it was.
    fn timeout_hump_requests() -> Vec<(u64, Member)> {
        let fast = (0..200u64).map(|i| {
            let m = member(3 + 2 * i, i % 3, "10.0.0.5:40000", None);
            (100_000 + i * 300, m)
        });
        let slow = (0..24u64).map(|i| {
            let (ns, error) = if i % 6 == 5 {
                (950_000_000 + i * 1_000_000, None)
            } else {
                (1_000_400_000 + i * 1_000, Some(1205))
            };
            (ns, member(403 + 2 * i, 10 + i % 4, "10.0.0.6:40000", error))
        });
        fast.chain(slow).collect()
    }

    /// Notes `(ns, member)` in `t`, as the MySQL side notes a `COM_QUERY`.
    fn note(t: &mut HumpTraits, ns: u64, m: &Member) {
        let message = m.error.map(|_| ("HY000", "Lock wait timeout exceeded"));
        t.note(Binned::new(ns), m, Some(Command::Query), message);
    }

    /// [`timeout_hump_requests`] in one distribution and its traits.
    fn timeout_hump() -> (Histogram, HumpTraits) {
        let mut all = Histogram::default();
        let mut t = HumpTraits::default();
        for (ns, m) in timeout_hump_requests() {
            all.add(ns);
            note(&mut t, ns, &m);
        }
        (all, t)
    }

    #[test]
    fn a_hump_in_one_bin_at_the_maximum_is_counted_whole() {
        let (all, t) = timeout_hump();
        let modes = detect_modes(&all);
        let slow = modes.modes.last().unwrap();
        assert_eq!(slow.count, 24, "{modes:?}");
        assert_eq!(slow.count_in(&all), 24);
        let m = t.of_mode(slow, &all);
        assert_eq!(m.errors.len(), 1);
        assert_eq!((m.errors[0].code, m.errors[0].count), (1205, 20));
        assert!((m.errors[0].share - 20.0 / 24.0).abs() < 1e-9);
        assert_eq!(m.errors[0].of_code, 1.0);
        assert_eq!(m.errors[0].message, "Lock wait timeout exceeded");
        assert_eq!(m.commands, vec![("COM_QUERY".to_string(), 1.0)]);
        assert_eq!(m.servers, vec![("10.0.0.1:3306".to_string(), 1.0)]);
        let c = &m.connections;
        assert!(c.complete);
        assert_eq!((c.requests, c.connections, c.clients), (24, 4, 1));
        assert_eq!(c.top_clients, vec![("10.0.0.6".to_string(), 24)]);
        let first = m.first.unwrap();
        assert_eq!(first.request_frame, 403);
        assert!(m.last_request_at.unwrap() > first.time);
    }

    #[test]
    fn merging_in_any_order_equals_noting_at_once() {
        let (_, mut whole) = timeout_hump();
        // The same requests noted by three instances, merged both ways.
        let mut parts = [
            HumpTraits::default(),
            HumpTraits::default(),
            HumpTraits::default(),
        ];
        for (i, (ns, m)) in timeout_hump_requests().into_iter().enumerate() {
            note(&mut parts[i % 3], ns, &m);
        }
        let mut a = parts[0].clone();
        a.merge(&parts[1]);
        a.merge(&parts[2]);
        let mut b = parts[2].clone();
        b.merge(&parts[1]);
        b.merge(&parts[0]);
        for t in [&mut a, &mut b, &mut whole] {
            t.settle();
        }
        assert_eq!(a, b);
        assert_eq!(a, whole);
    }

    #[test]
    fn many_servers_keep_the_lowest_apart_whatever_the_order() {
        let servers: Vec<Endpoint> = (0..40)
            .map(|i| ep(&format!("10.0.{}.1:3306", 40 - i)))
            .collect();
        let rt = Binned::new(5_000_000);
        let mut one = HumpTraits::default();
        for s in &servers {
            one.note_server(*s, rt);
        }
        let mut a = HumpTraits::default();
        let mut b = HumpTraits::default();
        for (i, s) in servers.iter().enumerate() {
            if i % 2 == 0 {
                a.note_server(*s, rt);
            } else {
                b.note_server(*s, rt);
            }
        }
        b.merge(&a);
        assert_eq!(one.servers, b.servers);
        assert_eq!(one.other_servers, b.other_servers);
        assert_eq!(one.servers.len(), HUMP_SERVERS_KEPT);
        assert_eq!(one.other_servers.count(), 40 - HUMP_SERVERS_KEPT as u64);
        assert_eq!(one.servers[0].0, ep("10.0.1.1:3306"));
    }
}
