//! The [`Analysis`] trait: what the engine tells an analysis about each TCP connection, and the views
//! it tells it with.
//!
//! The engine reads a capture in parallel splits and follows every connection in capture order (see
//! [`crate::analyze`]). An analysis is told, per connection and in that order, what the engine saw: the
//! connection opened, each of its TCP segments, each MySQL transaction it completed, each close (the
//! first FIN or RST of a side), and its end. It keeps what it wants in two places: its own instance
//! (counts, distributions, rows to write) and a per-connection state the engine keeps beside the
//! connection, so that an analysis never looks a connection up.
//!
//! # The contract
//!
//! * **Capture order within a connection, no order across connections.** The events of one connection
//!   come in the order of its packets, from one thread at a time; events of different connections
//!   interleave in any order, on any thread.
//! * **Many instances, one result.** The engine makes instances with the factory it was given (one per
//!   worker and batch) and folds them into one with [`Analysis::merge`], in any order: `merge` must be
//!   commutative and associative. A connection's later events may go to another instance than its
//!   earlier ones: its per-connection state, which the engine hands to every call, is the only thing
//!   that follows a connection.
//! * **The same result for any number of splits.** Nothing an analysis is told depends on how the
//!   capture was split or on how many threads ran, so its result must not either (the built-in analyses
//!   are property-tested with 1, 2, 3, 7 and 64 splits).
//! * **The order of a segment's events:** the MySQL transactions the segment completed (a response's
//!   last byte, or its close cutting a request off), then its close ([`Analysis::close`], when its FIN
//!   or RST is the first of its kind from its side), then what the end of the MySQL session completed (a
//!   RST, or FINs both ways, end it), then the segment itself ([`Analysis::segment`]).
//! * **Roles as known so far.** Which side is the client is known from the connection's handshake, or
//!   from MySQL (a greeting, or a request and its answer); until either tells, the ports decide
//!   ([`ConnectionView::roles`]). The connection table of the finished run ([`crate::Run`]) also uses
//!   what other connections tell (a server that accepted a handshake elsewhere).
//!
//! Built-in analyses implement this trait: [`crate::MysqlStatistics`], [`crate::ResponseTimes`],
//! [`crate::Rates`]. Tuples of analyses are analyses, so a run computes several at once with static
//! dispatch: `(MysqlStatistics::default(), Rates::new(interval))`.

use pcapsleuth_flow::{
    server_side_by_port, CloseEvent, ConnectionState, Endpoint, FlowKey, FrameRef, RoleBasis,
    SegmentClass, Side, TcpSegment,
};
use pcapsleuth_mysql::{CloseContext, Direction};

use crate::facts::CaptureFacts;
use crate::mysql::MysqlSessionFacts;
pub use crate::mysql::{EstimatedExchangeView, TransactionView};

/// An analysis the engine runs: told about every connection in capture order, merged across workers,
/// finished into its result. See the [module documentation](self) for the contract.
///
/// Every event has a default that does nothing: implement the ones the analysis needs.
///
/// ```
/// use pcapsleuth_analysis::{Analysis, CaptureFacts, ConnectionView, TransactionView};
///
/// /// Error responses per MySQL error code.
/// #[derive(Default)]
/// struct Errors(std::collections::BTreeMap<u16, u64>);
///
/// impl Analysis for Errors {
///     type PerConnection = ();
///     type Output = std::collections::BTreeMap<u16, u64>;
///
///     fn transaction(&mut self, _: &mut (), _: &ConnectionView<'_>, t: &TransactionView<'_>) {
///         if let Some(code) = t.error_code() {
///             *self.0.entry(code).or_default() += 1;
///         }
///     }
///
///     fn merge(&mut self, other: Self) {
///         for (code, n) in other.0 {
///             *self.0.entry(code).or_default() += n;
///         }
///     }
///
///     fn finish(self, _: &CaptureFacts) -> Self::Output {
///         self.0
///     }
/// }
/// ```
pub trait Analysis: Send + Sized {
    /// What the analysis keeps per connection: made with `Default` when the connection opens, handed to
    /// every event of the connection, and given back, by value, when it ends.
    type PerConnection: Default + Send;
    /// The result of the run.
    type Output;

    /// A connection's first packet was seen (it is already fed to the connection's state).
    fn connection_opened(&mut self, _state: &mut Self::PerConnection, _conn: &ConnectionView<'_>) {}

    /// A TCP segment of the connection.
    fn segment(
        &mut self,
        _state: &mut Self::PerConnection,
        _conn: &ConnectionView<'_>,
        _segment: &SegmentView<'_>,
    ) {
    }

    /// A MySQL request and what became of it: answered, cut off by a close, still unanswered when the
    /// capture ended, or unreadable.
    fn transaction(
        &mut self,
        _state: &mut Self::PerConnection,
        _conn: &ConnectionView<'_>,
        _transaction: &TransactionView<'_>,
    ) {
    }

    /// A request and its response on a MySQL session in TLS that was not decrypted, estimated from the
    /// timing of its records (told as each ends: when the next request begins, or at the close or the
    /// end of the capture). Never among the transactions: an estimate, kept apart.
    fn estimated_exchange(
        &mut self,
        _state: &mut Self::PerConnection,
        _conn: &ConnectionView<'_>,
        _exchange: &EstimatedExchangeView<'_>,
    ) {
    }

    /// The first FIN, or the first RST, a side of the connection sent.
    fn close(
        &mut self,
        _state: &mut Self::PerConnection,
        _conn: &ConnectionView<'_>,
        _close: &CloseView<'_>,
    ) {
    }

    /// The connection is over for the engine: a new connection took its 4-tuple, or the capture ended.
    /// No event of it follows.
    fn connection_ended(
        &mut self,
        _state: Self::PerConnection,
        _conn: &ConnectionView<'_>,
        _end: &EndView<'_>,
    ) {
    }

    /// Folds another instance's results into this one. Commutative and associative: instances are
    /// merged in any order.
    fn merge(&mut self, other: Self);

    /// The result, once every instance is merged into this one; `capture` says what the whole capture
    /// was (its body in time, the packets that could not be read).
    fn finish(self, capture: &CaptureFacts) -> Self::Output;
}

/// No analysis: the run gives its connections and their closes only (`first-reset`, `flows`).
impl Analysis for () {
    type PerConnection = ();
    type Output = ();
    fn merge(&mut self, _: Self) {}
    fn finish(self, _: &CaptureFacts) {}
}

/// Tuples of analyses run together: each is told every event, with its own per-connection state.
macro_rules! tuple_analysis {
    ($($name:ident $i:tt),+) => {
        impl<$($name: Analysis),+> Analysis for ($($name,)+) {
            type PerConnection = ($($name::PerConnection,)+);
            type Output = ($($name::Output,)+);

            #[inline]
            fn connection_opened(&mut self, s: &mut Self::PerConnection, c: &ConnectionView<'_>) {
                $(self.$i.connection_opened(&mut s.$i, c);)+
            }
            #[inline]
            fn segment(&mut self, s: &mut Self::PerConnection, c: &ConnectionView<'_>, x: &SegmentView<'_>) {
                $(self.$i.segment(&mut s.$i, c, x);)+
            }
            #[inline]
            fn transaction(&mut self, s: &mut Self::PerConnection, c: &ConnectionView<'_>, x: &TransactionView<'_>) {
                $(self.$i.transaction(&mut s.$i, c, x);)+
            }
            fn estimated_exchange(&mut self, s: &mut Self::PerConnection, c: &ConnectionView<'_>, x: &EstimatedExchangeView<'_>) {
                $(self.$i.estimated_exchange(&mut s.$i, c, x);)+
            }
            #[inline]
            fn close(&mut self, s: &mut Self::PerConnection, c: &ConnectionView<'_>, x: &CloseView<'_>) {
                $(self.$i.close(&mut s.$i, c, x);)+
            }
            fn connection_ended(&mut self, s: Self::PerConnection, c: &ConnectionView<'_>, x: &EndView<'_>) {
                $(self.$i.connection_ended(s.$i, c, x);)+
            }
            fn merge(&mut self, o: Self) {
                $(self.$i.merge(o.$i);)+
            }
            fn finish(self, capture: &CaptureFacts) -> Self::Output {
                ($(self.$i.finish(capture),)+)
            }
        }
    };
}

tuple_analysis!(A 0);
tuple_analysis!(A 0, B 1);
tuple_analysis!(A 0, B 1, C 2);
tuple_analysis!(A 0, B 1, C 2, D 3);
tuple_analysis!(A 0, B 1, C 2, D 3, E 4);
tuple_analysis!(A 0, B 1, C 2, D 3, E 4, F 5);
tuple_analysis!(A 0, B 1, C 2, D 3, E 4, F 5, G 6);
tuple_analysis!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);

/// How the roles of a connection are known so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RolesFrom {
    /// The MySQL protocol: the side that sent the greeting (or answered a request) is the server.
    Mysql,
    /// The TCP handshake: the side that sent the SYN (or received the SYN-ACK) is the client.
    Handshake(RoleBasis),
    /// Neither has told yet: the ports decide (a port below 1024 or outside the ephemeral range
    /// listens).
    Ports,
}

/// A connection as known at the event: its TCP state so far, and who is client and server.
#[derive(Clone, Copy)]
pub struct ConnectionView<'a> {
    tcp: &'a ConnectionState,
    /// The client side, if MySQL named it.
    mysql_client: Option<Side>,
    /// Whether the connection is decoded as MySQL.
    mysql: bool,
}

impl<'a> ConnectionView<'a> {
    pub(crate) fn new(tcp: &'a ConnectionState, mysql_client: Option<Side>, mysql: bool) -> Self {
        ConnectionView {
            tcp,
            mysql_client,
            mysql,
        }
    }

    /// The client side, if MySQL named it.
    pub(crate) fn mysql_client(&self) -> Option<Side> {
        self.mysql_client
    }

    /// The 4-tuple.
    pub fn key(&self) -> FlowKey {
        self.tcp.key()
    }

    /// The TCP state so far: handshake, closes, per-direction counts, retransmissions.
    pub fn tcp(&self) -> &'a ConnectionState {
        self.tcp
    }

    /// Whether the connection is decoded as MySQL (recognised so far).
    pub fn is_mysql(&self) -> bool {
        self.mysql
    }

    /// The client's side and how that is known.
    #[inline]
    pub fn roles(&self) -> (Side, RolesFrom) {
        if let Some(c) = self.mysql_client {
            return (c, RolesFrom::Mysql);
        }
        match self.tcp.handshake_client() {
            Some((c, basis)) => (c, RolesFrom::Handshake(basis)),
            None => (
                server_side_by_port(&self.tcp.key()).other(),
                RolesFrom::Ports,
            ),
        }
    }

    /// The client's side.
    #[inline]
    pub fn client_side(&self) -> Side {
        self.roles().0
    }

    /// The client's address and port.
    pub fn client(&self) -> Endpoint {
        self.key().endpoint(self.client_side())
    }

    /// The server's address and port.
    pub fn server(&self) -> Endpoint {
        self.key().endpoint(self.client_side().other())
    }

    /// Which way bytes sent by `side` travel.
    #[inline]
    pub fn direction(&self, side: Side) -> Direction {
        if side == self.client_side() {
            Direction::ClientToServer
        } else {
            Direction::ServerToClient
        }
    }
}

/// One TCP segment of a connection.
pub struct SegmentView<'a> {
    /// Its frame and time.
    pub at: FrameRef,
    /// The side that sent it.
    pub side: Side,
    /// The decoded segment: flags, sequence numbers, window, the captured payload.
    pub tcp: &'a TcpSegment<'a>,
    /// Its length on the wire (link layer).
    pub wire_len: u32,
    /// How it relates to the sequence space already seen: new data, a retransmission, ...
    pub class: SegmentClass,
}

impl SegmentView<'_> {
    /// Whether it resends sequence space already seen.
    pub fn is_retransmission(&self) -> bool {
        self.class == SegmentClass::Retransmission
    }
}

/// The first FIN or RST a side sent.
pub struct CloseView<'a> {
    /// The TCP facts of the close: frame and time, flag, side, and what the peer was doing.
    pub tcp: &'a CloseEvent,
    /// What the MySQL session was doing, when the connection is decoded as MySQL.
    pub mysql: Option<&'a CloseContext>,
}

/// Why a connection ended for the engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndedBy {
    /// A new connection (a SYN with a new sequence space) took its 4-tuple.
    PortReuse,
    /// The capture ended.
    CaptureEnd,
}

/// A connection's end.
pub struct EndView<'a> {
    /// Why it ended.
    pub by: EndedBy,
    /// What MySQL showed of it, when it was decoded as MySQL.
    pub mysql: Option<&'a MysqlSessionFacts>,
}
