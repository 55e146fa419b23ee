//! Finding each request in both captures: by 4-tuple and sequence number where nothing rewrote the
//! connection, by payload in time order where a NAT or proxy did (the in-order alignment of one
//! connection's requests with another's is here too).
//!
//! It never compares the two captures' clocks: they are aligned afterwards, from its pairs
//! (`clock.rs`).

use std::collections::{BTreeMap, HashMap};

use crate::thresholds::{
    COMPARE_CANDIDATE_CONNECTIONS, COMPARE_COMMON_PAYLOAD_CONNECTIONS, COMPARE_PAYLOAD_LOOKAHEAD,
};

use super::model::{ConnectionPairing, Exchange, MatchedBy};
use super::{connection_of, ConnectionKey};

/// Which exchange of the other capture each one was matched with: 8 bytes a request on each side (an
/// index fits in 32 bits: no capture's requests held in memory number 2^32).
pub(super) struct Matches {
    of_client: Vec<Option<(u32, MatchedBy)>>,
    of_server: Vec<Option<u32>>,
}

impl Matches {
    pub(super) fn new(clients: usize, servers: usize) -> Self {
        Matches {
            of_client: vec![None; clients],
            of_server: vec![None; servers],
        }
    }

    pub(super) fn pair(&mut self, c: usize, s: usize, by: MatchedBy) {
        self.of_client[c] = Some((s as u32, by));
        self.of_server[s] = Some(c as u32);
    }

    /// The server exchange client exchange `c` was matched with, and how.
    pub(super) fn of_client(&self, c: usize) -> Option<(usize, MatchedBy)> {
        self.of_client[c].map(|(s, by)| (s as usize, by))
    }

    /// Whether server exchange `s` was matched.
    pub(super) fn server_matched(&self, s: usize) -> bool {
        self.of_server[s].is_some()
    }

    /// Whether client exchange `c` was matched.
    pub(super) fn client_matched(&self, c: usize) -> bool {
        self.of_client[c].is_some()
    }
}

/// Same 4-tuple, same sequence number of the first byte, same payload: the same request, in capture
/// order when a request was recorded twice.
pub(super) fn match_by_sequence(
    client: &[Exchange],
    server: &[Exchange],
    client_order: &[usize],
    server_order: &[usize],
    matches: &mut Matches,
) {
    // The server's requests with a sequence number, by (4-tuple, sequence number) and, for equal keys,
    // in time order (the sort is stable): a sorted list rather than a map of lists, which cost ~180 bytes
    // a request.
    let key = |e: &Exchange| (e.client, e.server, e.request_seq);
    let mut by_key: Vec<usize> = server_order
        .iter()
        .copied()
        .filter(|&s| server[s].request_seq.is_some())
        .collect();
    by_key.sort_by_key(|&s| key(&server[s]));
    for &c in client_order {
        let e = &client[c];
        if e.request_seq.is_none() {
            continue;
        }
        let wanted = key(e);
        let from = by_key.partition_point(|&s| key(&server[s]) < wanted);
        let found = by_key[from..]
            .iter()
            .copied()
            .take_while(|&s| key(&server[s]) == wanted)
            .find(|&s| !matches.server_matched(s) && server[s].request_hash == e.request_hash);
        if let Some(s) = found {
            matches.pair(c, s, MatchedBy::Sequence);
        }
    }
}

/// Connections paired between the captures, and the counts for the report.
pub(super) struct Pairing {
    /// Client connection -> server connection.
    pub(super) of_client: HashMap<ConnectionKey, ConnectionKey>,
    pub(super) counts: ConnectionPairing,
}

/// Pairs connections by their requests and matches the requests left over, by payload in time order.
///
/// Connections already paired by sequence numbers keep their partner (the one most of their matched
/// requests went to); the others are taken in the order of their first request, each pairing with the
/// still unpaired server connection that carries the most of its requests' payloads in order (the
/// earliest on a tie, so that identical sessions pair in the order they began).
pub(super) fn match_by_payload(
    client: &[Exchange],
    server: &[Exchange],
    client_order: &[usize],
    server_order: &[usize],
    matches: &mut Matches,
) -> Pairing {
    let client_conns = group_by_connection(client, client_order);
    let server_conns = group_by_connection(server, server_order);

    // Partners from the sequence matches: per client connection, the server connection with most of them.
    let mut votes: BTreeMap<(ConnectionKey, ConnectionKey), u64> = BTreeMap::new();
    for (c, e) in client.iter().enumerate() {
        if let Some((s, _)) = matches.of_client(c) {
            *votes
                .entry((connection_of(e), connection_of(&server[s])))
                .or_default() += 1;
        }
    }
    let mut of_client: HashMap<ConnectionKey, ConnectionKey> = HashMap::new();
    let mut taken: HashMap<ConnectionKey, ConnectionKey> = HashMap::new();
    let mut ranked: Vec<_> = votes.into_iter().collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    for ((cc, sc), _) in ranked {
        if !of_client.contains_key(&cc) && !taken.contains_key(&sc) {
            of_client.insert(cc, sc);
            taken.insert(sc, cc);
        }
    }

    // Server connections by the payloads of their unmatched requests, for finding partners.
    let mut carriers: HashMap<u64, Vec<usize>> = HashMap::new();
    for (k, (_, members)) in server_conns.iter().enumerate() {
        for &s in members {
            if !matches.server_matched(s) {
                let list = carriers.entry(server[s].request_hash).or_default();
                if list.last() != Some(&k) {
                    list.push(k);
                }
            }
        }
    }
    let server_index: HashMap<ConnectionKey, usize> = server_conns
        .iter()
        .enumerate()
        .map(|(k, (key, _))| (*key, k))
        .collect();

    for (cc, members) in &client_conns {
        let left: Vec<usize> = members
            .iter()
            .copied()
            .filter(|&c| !matches.client_matched(c))
            .collect();
        if left.is_empty() {
            continue;
        }
        if let Some(sc) = of_client.get(cc) {
            if let Some(&k) = server_index.get(sc) {
                align(client, server, &left, &server_conns[k].1, matches);
            }
            continue;
        }
        let is_open = |k: &usize| !taken.contains_key(&server_conns[*k].0);
        let candidates = candidates(client, &left, &carriers, is_open);
        let mut best: Option<(usize, Vec<(usize, usize)>)> = None;
        for k in candidates {
            let found = alignment(client, server, &left, &server_conns[k].1, matches);
            if found.len() > best.as_ref().map_or(0, |(_, f)| f.len()) {
                best = Some((k, found));
            }
        }
        if let Some((k, found)) = best {
            for (c, s) in found {
                matches.pair(c, s, MatchedBy::Payload);
            }
            let sc = server_conns[k].0;
            of_client.insert(*cc, sc);
            taken.insert(sc, *cc);
        }
    }

    let paired = of_client.len() as u64;
    Pairing {
        counts: ConnectionPairing {
            paired,
            client_only: client_conns.len() as u64 - paired,
            server_only: server_conns.len() as u64 - paired,
        },
        of_client,
    }
}

/// Matches `left` (client requests of one connection, in time order) with the unmatched requests of
/// `members` (a server connection's, in time order) and records the matches.
fn align(
    client: &[Exchange],
    server: &[Exchange],
    left: &[usize],
    members: &[usize],
    matches: &mut Matches,
) {
    for (c, s) in alignment(client, server, left, members, matches) {
        matches.pair(c, s, MatchedBy::Payload);
    }
}

/// Requests of one connection matched in order with a connection of the other capture: each client
/// request takes the next unmatched server request with its payload within a short look-ahead, so that
/// requests one capture missed are stepped over without losing the order.
fn alignment(
    client: &[Exchange],
    server: &[Exchange],
    left: &[usize],
    members: &[usize],
    matches: &Matches,
) -> Vec<(usize, usize)> {
    let open: Vec<usize> = members
        .iter()
        .copied()
        .filter(|&s| !matches.server_matched(s))
        .collect();
    let mut next = 0;
    let mut found = Vec::new();
    for &c in left {
        let window = open
            .get(next..)
            .unwrap_or(&[])
            .iter()
            .take(COMPARE_PAYLOAD_LOOKAHEAD);
        if let Some(pos) = window
            .enumerate()
            .find(|(_, &s)| server[s].request_hash == client[c].request_hash)
            .map(|(pos, _)| pos)
        {
            found.push((c, open[next + pos]));
            next += pos + 1;
        }
    }
    found
}

/// The unpaired server connections worth aligning with a client connection's requests `left`: those that
/// carry its rarer payloads, by how rare the payloads they share are (a payload every connection sends,
/// `SELECT 1` or a ping, says little), the best few; when every payload is that common, the earliest few
/// unpaired carriers of its first request's payload (identical sessions pair in the order they began).
fn candidates(
    client: &[Exchange],
    left: &[usize],
    carriers: &HashMap<u64, Vec<usize>>,
    is_open: impl Fn(&usize) -> bool,
) -> Vec<usize> {
    let mut hashes: Vec<u64> = left.iter().map(|&c| client[c].request_hash).collect();
    hashes.sort_unstable();
    hashes.dedup();
    let mut score: BTreeMap<usize, f64> = BTreeMap::new();
    for h in &hashes {
        let Some(list) = carriers.get(h) else {
            continue;
        };
        if list.len() <= COMPARE_COMMON_PAYLOAD_CONNECTIONS {
            for k in list.iter().filter(|k| is_open(k)) {
                *score.entry(*k).or_default() += 1.0 / list.len() as f64;
            }
        }
    }
    if score.is_empty() {
        let first = left.first().map(|&c| client[c].request_hash);
        return first
            .and_then(|h| carriers.get(&h))
            .map(|list| {
                list.iter()
                    .copied()
                    .filter(|k| is_open(k))
                    .take(COMPARE_CANDIDATE_CONNECTIONS)
                    .collect()
            })
            .unwrap_or_default();
    }
    let mut ranked: Vec<(usize, f64)> = score.into_iter().collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut best: Vec<usize> = ranked
        .into_iter()
        .take(COMPARE_CANDIDATE_CONNECTIONS)
        .map(|(k, _)| k)
        .collect();
    best.sort_unstable();
    best
}

/// Connections in the order of their first request, each with its requests in time order.
fn group_by_connection(
    exchanges: &[Exchange],
    order: &[usize],
) -> Vec<(ConnectionKey, Vec<usize>)> {
    let mut index: HashMap<ConnectionKey, usize> = HashMap::new();
    let mut out: Vec<(ConnectionKey, Vec<usize>)> = Vec::new();
    for &i in order {
        let key = connection_of(&exchanges[i]);
        let k = *index.entry(key).or_insert_with(|| {
            out.push((key, Vec::new()));
            out.len() - 1
        });
        out[k].1.push(i);
    }
    out
}
