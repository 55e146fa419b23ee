//! Two capture points of one MySQL workload: where each transaction's time went.
//!
//! A capture taken at the client shows how long the client waited; one taken at the server shows how long
//! the server took. [`compare`] lines the two up: it finds each request in both captures, aligns the two
//! hosts' clocks from the pairs it found, and splits every client-observed response time into the server's
//! time and the path's (the request's way to the server, the response's way back). It answers "the server
//! answered in 0.1 ms; the path added 9.9 ms of the client's 10.0 ms" and names the transactions whose time
//! went somewhere specific (a response resent on its way, one the client never saw, a request the server
//! never saw).
//!
//! It works on plain records, one [`Exchange`] per request as one capture point saw it, and knows nothing
//! of packets: whatever reads a capture (the engine, a test, another program) produces them.
//!
//! **Matching.** A request is the same in both captures when its connection's 4-tuple and the TCP sequence
//! number of its first byte agree and so does the hash of its MySQL payload: nothing between the two points
//! rewrote the connection. Where a NAT, a load balancer or a TCP proxy did (other addresses, ports or
//! sequence numbers), connections are paired by their requests instead: a connection of the client
//! capture goes with the server capture's connection that carries the most of its requests' payloads in
//! the same order, and within a pair the requests are matched by payload in time order. A proxy that
//! spreads one client connection over several server connections (multiplexing) is not followed.
//!
//! **Clocks.** The two captures were timestamped by two hosts. Every matched pair bounds the offset
//! `θ = server clock - client clock`: the request reached the server after the client sent it
//! (`θ <= server request time - client request time`) and the response reached the client after the server
//! sent it (`θ >= server response time - client response time`). The tightest bounds over all pairs, the
//! fastest request and the fastest response (the minimum one-way delays each way), leave an interval whose
//! middle is the estimate and whose half-width, half the fastest round trip, is how well the clocks are
//! aligned: the true offset is inside it, whatever the path. A path slower one way than the other (a shaper
//! on the way back) puts the middle off the truth by up to that half-width, never more. Only when no single
//! offset fits every pair (a clock running faster than the other) is a drift fitted: the slope through the
//! middles of the bounds in successive time windows, kept if the pairs then agree.
//!
//! **What is measured.** Response time at each point is the request's first byte to the response's last
//! byte, as every report of pcapsleuth measures it, so the path's share of a transaction, client RT minus
//! server RT, needs no clock at all; the split into request path and response path does.
//!
//! ```
//! use pcapsleuth_analysis::{compare, CompareOptions, Exchange, Seen};
//! use pcapsleuth_mysql::Command;
//!
//! let at = |frame, ts_ns| Some(Seen { frame, ts_ns });
//! let client = "10.0.0.2:50000".parse()?;
//! let server = "10.0.0.1:3306".parse()?;
//! let request = |request: Seen, last| Exchange {
//!     client, server, connection: 0, request_seq: Some(1000), request_hash: 42,
//!     command: Command::Query, statement: Some("select 1".into()),
//!     request, first_response: last, last_response: last, response_retransmitted: false,
//! };
//! // The client waited 4 ms; the server answered in 0.1 ms (the clocks happen to agree).
//! let at_client = [request(Seen { frame: 10, ts_ns: 1_000_000 }, at(12, 5_000_000))];
//! let at_server = [request(Seen { frame: 7, ts_ns: 1_010_000 }, at(8, 1_110_000))];
//! let cmp = compare(&at_client, &at_server, &CompareOptions::default());
//! assert_eq!(cmp.matched, 1);
//! assert_eq!(cmp.path_us.p50, 3900.0);
//! # Ok::<(), String>(())
//! ```

mod clock;
mod matching;
mod model;
#[cfg(test)]
mod tests;
mod verdict;

use pcapsleuth_flow::Endpoint;

use clock::align_clocks;
use matching::{match_by_payload, match_by_sequence, Matches};
pub use model::{
    CaptureSpan, CapturedAs, ClientHump, ClockAlignment, ClockBasis, ClockPolicy, CompareOptions,
    Comparison, ConnectionPairing, Exchange, IntervalComparison, MatchedBy, MatchedPair, Notable,
    NotableCounts, NotableKind, OutsideOtherCapture, Seen, SideBySideHumps,
};
use verdict::{
    client_hump, exact_summary_us, humps_of, measure, notables, per_interval, share, verdict,
};

/// A connection within one capture.
type ConnectionKey = (Endpoint, Endpoint, u64);

fn connection_of(e: &Exchange) -> ConnectionKey {
    (e.client, e.server, e.connection)
}

/// Compares a client capture's exchanges with a server capture's (each in any order).
pub fn compare(client: &[Exchange], server: &[Exchange], opts: &CompareOptions) -> Comparison {
    let client_order = time_order(client);
    let server_order = time_order(server);
    let mut matches = Matches::new(client.len(), server.len());
    match_by_sequence(client, server, &client_order, &server_order, &mut matches);
    let pairing = match_by_payload(client, server, &client_order, &server_order, &mut matches);

    let mut found: Vec<(usize, usize, MatchedBy)> = client_order
        .iter()
        .filter_map(|&c| matches.of_client(c).map(|(s, by)| (c, s, by)))
        .collect();
    found.sort_by_key(|&(c, _, _)| (client[c].request.ts_ns, client[c].request.frame));
    // What is held per request from here on is the pairs: two captures of many requests peak here.
    drop((client_order, server_order));

    let clock = align_clocks(client, server, &found, opts.clock);
    let pairs: Vec<MatchedPair> = found
        .iter()
        .map(|&(c, s, by)| measure(&client[c], &server[s], c, s, by, &clock))
        .collect();
    drop(found);

    let (client_span, server_span) = opts.spans(client, server);
    let mut outside = OutsideOtherCapture::default();
    for (i, e) in client.iter().enumerate() {
        if !matches.client_matched(i) {
            let at_server = clock.to_server(e.request.ts_ns);
            outside.client += u64::from(!server_span.contains(at_server));
        }
    }
    for (i, e) in server.iter().enumerate() {
        if !matches.server_matched(i) {
            let at_client = clock.to_client(e.request.ts_ns);
            outside.server += u64::from(!client_span.contains(at_client));
        }
    }

    // Client RT, server RT and path over the same transactions (answered at both points), so that the
    // server's mean and the path's add up to the client's.
    let summary = |f: &dyn Fn(&MatchedPair) -> Option<i64>| {
        let mut v: Vec<i64> = pairs.iter().filter_map(f).collect();
        exact_summary_us(&mut v)
    };
    let both = |p: &MatchedPair| p.client_rt_ns.is_some() && p.server_rt_ns.is_some();
    let client_rt_us = summary(&|p| p.path_ns().and(p.client_rt_ns).map(|v| v as i64));
    let server_rt_us = summary(&|p| p.path_ns().and(p.server_rt_ns).map(|v| v as i64));
    let path_us = summary(&MatchedPair::path_ns);
    let request_path_us = summary(&|p| p.request_path_ns);
    let response_path_us = summary(&|p| p.response_path_ns);
    let path_share = share(pairs.iter().filter(|p| both(p)));

    let humps = SideBySideHumps {
        client: humps_of(
            pairs
                .iter()
                .filter(|p| both(p))
                .filter_map(|p| p.client_rt_ns),
        )
        .into_iter()
        .map(|mode| client_hump(mode, client, server, &pairs))
        .collect(),
        server: humps_of(
            pairs
                .iter()
                .filter(|p| both(p))
                .filter_map(|p| p.server_rt_ns),
        ),
    };
    let interval_ns = opts.interval_ns.max(1);
    let per_interval = per_interval(client, &pairs, interval_ns);

    let (notable, notable_counts) = notables(
        client,
        server,
        &pairs,
        &matches,
        &pairing,
        &clock,
        client_span,
        server_span,
        response_path_us.p50,
        opts.notable_limit,
    );

    let mut cmp = Comparison {
        matched: pairs.len() as u64,
        matched_by_sequence: count_by(&pairs, MatchedBy::Sequence),
        matched_by_payload: count_by(&pairs, MatchedBy::Payload),
        unmatched_client: (client.len() - pairs.len()) as u64,
        unmatched_server: (server.len() - pairs.len()) as u64,
        outside_other_capture: outside,
        connections: pairing.counts,
        clock_offset_us: clock.alignment.offset_us,
        clock: clock.alignment,
        client_rt_us,
        server_rt_us,
        path_us,
        request_path_us,
        response_path_us,
        path_share,
        humps,
        interval_s: interval_ns as f64 / 1e9,
        per_interval,
        notable,
        notable_counts,
        verdict: String::new(),
        pairs,
    };
    cmp.verdict = verdict(&cmp);
    cmp
}

fn count_by(pairs: &[MatchedPair], by: MatchedBy) -> u64 {
    pairs.iter().filter(|p| p.matched_by == by).count() as u64
}

/// Indices of `exchanges` by request time (then frame): the order requests were sent or received.
fn time_order(exchanges: &[Exchange]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..exchanges.len()).collect();
    order.sort_by_key(|&i| (exchanges[i].request.ts_ns, exchanges[i].request.frame));
    order
}

/// From the first request to the last packet of any exchange.
fn span_of(exchanges: &[Exchange]) -> CaptureSpan {
    let times = exchanges.iter().flat_map(|e| {
        [Some(e.request), e.first_response, e.last_response]
            .into_iter()
            .flatten()
            .map(|s| s.ts_ns)
    });
    let (first_ns, last_ns) =
        times.fold((i64::MAX, i64::MIN), |(lo, hi), t| (lo.min(t), hi.max(t)));
    CaptureSpan { first_ns, last_ns }
}
