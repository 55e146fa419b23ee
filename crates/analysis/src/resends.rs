//! The first retransmitted segments of each connection, each way: where `extract --annotate` comments
//! that a connection began to resend data.

use pcapsleuth_flow::Endpoint;

use crate::events::{Analysis, ConnectionView, EndView, SegmentView};
use crate::facts::CaptureFacts;
use crate::reasons::role_name;
use crate::thresholds::{ANNOTATED_RESENDS, ANNOTATED_RESEND_CONNECTIONS};
use crate::units;

/// The first 5 retransmitted segments each way of the connections `keep` accepts (by client and
/// server endpoint), for at most 4096 connections (those that began first, so the same whatever the
/// split): `thresholds::ANNOTATED_RESENDS` and `ANNOTATED_RESEND_CONNECTIONS`.
#[derive(Debug, Clone)]
pub struct Resends<F> {
    keep: F,
    found: Vec<ConnectionResends>,
}

impl<F: Fn(Endpoint, Endpoint) -> bool + Send> Resends<F> {
    /// Collects the resends of the connections `keep(client, server)` accepts.
    pub fn new(keep: F) -> Self {
        Resends {
            keep,
            found: Vec::new(),
        }
    }
}

/// One connection's first retransmitted segments.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConnectionResends {
    /// The connection's first frame.
    pub first_frame: u64,
    /// The client's endpoint (`None` until the first resend is seen).
    pub client: Option<Endpoint>,
    /// The server's endpoint.
    pub server: Option<Endpoint>,
    /// Retransmitted segments from the client, and the first few of them: frame, payload bytes.
    pub from_client: (u64, Vec<(u64, u32)>),
    /// Retransmitted segments from the server, and the first few of them.
    pub from_server: (u64, Vec<(u64, u32)>),
}

impl ConnectionResends {
    /// A comment per retransmitted segment kept: which side resent it, how many bytes, its rank among
    /// the connection's resends that way and how many there were.
    pub fn notes(&self) -> Vec<(u64, String)> {
        let (Some(client), Some(server)) = (self.client, self.server) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for (role, (total, frames), from, to) in [
            (
                pcapsleuth_flow::Role::Client,
                &self.from_client,
                client,
                server,
            ),
            (
                pcapsleuth_flow::Role::Server,
                &self.from_server,
                server,
                client,
            ),
        ] {
            for (i, &(frame, bytes)) in frames.iter().enumerate() {
                out.push((
                    frame,
                    format!(
                        "retransmitted segment from the {} ({from} -> {to}, {}): resend {} of {} that way on this connection",
                        role_name(role),
                        units::bytes(u64::from(bytes)),
                        i + 1,
                        total
                    ),
                ));
            }
        }
        out
    }
}

impl<F: Fn(Endpoint, Endpoint) -> bool + Send> Analysis for Resends<F> {
    type PerConnection = ConnectionResends;
    type Output = Vec<ConnectionResends>;

    fn segment(
        &mut self,
        state: &mut ConnectionResends,
        conn: &ConnectionView<'_>,
        seg: &SegmentView<'_>,
    ) {
        if !seg.is_retransmission() {
            return;
        }
        if state.client.is_none() {
            if !(self.keep)(conn.client(), conn.server()) {
                return;
            }
            state.first_frame = conn.tcp().first().frame;
            state.client = Some(conn.client());
            state.server = Some(conn.server());
        }
        let way = if seg.side == conn.client_side() {
            &mut state.from_client
        } else {
            &mut state.from_server
        };
        way.0 += 1;
        if way.1.len() < ANNOTATED_RESENDS {
            way.1.push((seg.at.frame, seg.tcp.payload_len));
        }
    }

    fn connection_ended(
        &mut self,
        state: ConnectionResends,
        _: &ConnectionView<'_>,
        _: &EndView<'_>,
    ) {
        if state.client.is_some() {
            self.found.push(state);
            if self.found.len() >= 2 * ANNOTATED_RESEND_CONNECTIONS {
                self.trim();
            }
        }
    }

    fn merge(&mut self, other: Self) {
        self.found.extend(other.found);
        self.trim();
    }

    fn finish(mut self, _: &CaptureFacts) -> Vec<ConnectionResends> {
        self.trim();
        self.found
    }
}

impl<F> Resends<F> {
    /// Keeps the connections that began first, in that order.
    fn trim(&mut self) {
        self.found.sort_by_key(|c| c.first_frame);
        self.found.truncate(ANNOTATED_RESEND_CONNECTIONS);
    }
}
