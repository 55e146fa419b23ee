//! [`MysqlTrack`]: the MySQL glue of one TCP connection, from its first segment to its conclusion.

use std::collections::VecDeque;
use std::sync::Arc;

use pcapsleuth_flow::{
    CloseFlag as TcpCloseFlag, ConnectionState, Endpoint, FrameRef, Role, Side, StreamEvent,
    StreamReassembler, TcpFlags, TcpSegment,
};
use pcapsleuth_mysql::{
    CloseContext, CloseFlag, Command, Direction, Encryption, Meta, Outcome, PieceShape, Session,
    SessionPhase,
};
use pcapsleuth_ssl::KeyLog;

use super::hint::PayloadHint;
use super::recognition::{Recognised, RecognisedBy, Recogniser, Recognition};
use super::tls::{EstimatedExchangeView, TlsTrack, Told};
use crate::replication::{stream_report, ReplicationStream, StreamClose, StreamTrack};

use super::close_seen::{CloseSeen, CloseSeenFacts};
use super::counts::RequestCounts;
use super::facts::MysqlSessionFacts;
use super::fate::{Fate, UnansweredRequest};
use super::gap_mark::cut_text;
use super::incident::Incident;
use super::options::{MysqlDepth, MysqlDetection};
use super::tail::{feed_event, meta, route, tls_event, Home, Tail};
use super::transaction_view::TransactionView;

enum Detect {
    Undecided(Box<Recogniser>),
    Mysql,
    /// MySQL, in TLS after its SSLRequest: its bytes go through its TLS layer.
    MysqlTls,
    NotMysql,
}

/// Per-connection MySQL state during tracking.
pub(crate) struct MysqlTrack {
    detect: Detect,
    recognised_by: Option<RecognisedBy>,
    client: Option<Side>,
    session: Option<Session>,
    streams: [StreamReassembler<Meta>; 2],
    closes: Vec<CloseSeen>,
    closed: [[bool; 2]; 2],
    transactions: u64,
    errors: u64,
    /// Requests expecting a response, by fate, and those with their statement cut.
    requests: RequestCounts,
    statements_cut: u64,
    /// Times of this connection's recent retransmissions, to tell which exchanges saw one.
    retransmissions: VecDeque<i64>,
    /// The distributions of the replication stream the connection carries, if it does.
    replication: Option<Box<StreamTrack>>,
    /// The last segment's time: how long an open semi-sync wait lasted at least.
    last_ts_ns: u64,
    /// Requests the end of the capture found waiting.
    unanswered: Vec<UnansweredRequest>,
    /// Plain exchanges may be passed over ([`MysqlDepth::Closes`]).
    closes_only: bool,
    /// The exchange kept undecoded, once the connection is MySQL and `closes_only`.
    tail: Option<Box<Tail>>,
    /// The TLS layer, after the session's SSLRequest: the reassembled bytes go through it, decrypted where
    /// the key log allows, timed from their records where not.
    tls: Option<Box<TlsTrack>>,
    /// The TLS key log, when one was given: the SSLRequest's login then waits for the TLS layer to say
    /// whether the session is decrypted.
    keys: Option<Arc<KeyLog>>,
}

/// An acknowledgment at most this far (1 GiB) past the bytes captured is of bytes the capture lost; one
/// farther (or behind, wrapped) is no acknowledgment of this stream's bytes (a garbled or stale ACK).
const TRAILING_GAP_MAX: u32 = 1 << 30;

/// Retransmission times kept per connection: enough to cover the requests in flight, bounded.
const RETRANSMISSIONS_KEPT: usize = 256;

impl MysqlTrack {
    pub(crate) fn new(mode: MysqlDetection, depth: MysqlDepth, keys: Option<&Arc<KeyLog>>) -> Self {
        MysqlTrack {
            detect: match mode {
                MysqlDetection::Off => Detect::NotMysql,
                MysqlDetection::Auto => Detect::Undecided(Box::new(Recogniser::new(None))),
                MysqlDetection::Port(p) => Detect::Undecided(Box::new(Recogniser::new(Some(p)))),
            },
            recognised_by: None,
            client: None,
            session: None,
            streams: [StreamReassembler::new(), StreamReassembler::new()],
            closes: Vec::new(),
            closed: [[false; 2]; 2],
            transactions: 0,
            errors: 0,
            requests: RequestCounts::default(),
            statements_cut: 0,
            retransmissions: VecDeque::new(),
            replication: None,
            last_ts_ns: 0,
            unanswered: Vec::new(),
            closes_only: depth == MysqlDepth::Closes,
            tail: None,
            tls: None,
            keys: keys.cloned(),
        }
    }

    /// The connection retransmitted a segment at `ts_ns`.
    pub(crate) fn retransmission(&mut self, ts_ns: i64) {
        if self.retransmissions.len() == RETRANSMISSIONS_KEPT {
            self.retransmissions.pop_front();
        }
        self.retransmissions.push_back(ts_ns);
    }

    /// Whether [`MysqlTrack::untouched`] may find it untouched (a quick check first: a session never is).
    #[inline]
    pub(crate) fn may_be_untouched(&self) -> bool {
        !matches!(self.detect, Detect::Mysql | Detect::MysqlTls)
    }

    /// The retransmission times this track was told, when that is all it was told since
    /// `MysqlTrack::new(mode, _)` made it: the same track is then made again by `new` and those times
    /// told in order. (A segment without payload that closes nothing leaves the recogniser as it was, so
    /// a connection seen only in its handshake packets and ACKs keeps its track untouched.)
    pub(crate) fn untouched(&self, mode: MysqlDetection) -> Option<&VecDeque<i64>> {
        let fresh = match (&self.detect, mode) {
            (Detect::Undecided(r), MysqlDetection::Auto | MysqlDetection::Port(_)) => r.is_fresh(),
            (Detect::NotMysql, MysqlDetection::Off) => true,
            _ => false,
        };
        // The rest is filled only once the connection is MySQL (a decided recogniser, above), but is
        // checked all the same: a track that is not as made is never taken for one.
        (fresh
            && self.recognised_by.is_none()
            && self.client.is_none()
            && self.session.is_none()
            && self.closes.is_empty()
            && self.closed == [[false; 2]; 2]
            && self.transactions == 0
            && self.errors == 0
            && self.requests == RequestCounts::default()
            && self.statements_cut == 0
            && self.replication.is_none()
            && self.last_ts_ns == 0
            && self.unanswered.is_empty()
            && self.tail.is_none()
            && self.tls.is_none())
        .then_some(&self.retransmissions)
    }

    /// The client side, once MySQL told it (greeting, or request/response shape).
    pub(crate) fn client(&self) -> Option<Side> {
        // Set only when the connection is recognised as MySQL, which it then stays (in TLS or not).
        self.client
    }

    pub(crate) fn is_mysql(&self) -> bool {
        self.client.is_some()
    }

    /// Feeds one segment of the connection (after the TCP tracker saw it).
    #[inline]
    pub(crate) fn segment(
        &mut self,
        conn: &ConnectionState,
        side: Side,
        seg: &TcpSegment<'_>,
        hint: PayloadHint,
        at: FrameRef,
        home: Home<'_>,
    ) {
        let shape = hint.shape();
        // A connection known to be MySQL, nearly every segment: straight to the session, without the
        // recogniser's registers and stack to set up (nor a TLS layer's).
        if matches!(self.detect, Detect::Mysql) {
            if self.tail.is_some() && self.pass_over(side, seg, shape, at, home) {
                return;
            }
            self.feed(side, seg, at, home);
        } else {
            self.segment_not_yet_mysql(conn, side, seg, at, home);
        }
    }

    /// While an exchange is kept undecoded ([`MysqlDepth::Closes`]), a segment whose bytes come next in
    /// order, with no flag that needs the session (SYN, FIN, RST) and nothing held after a hole in either
    /// direction, goes straight to the [`Tail`]: what [`MysqlTrack::feed`] would do with it, without the
    /// reassembly's work. Returns whether it did.
    #[inline(never)]
    fn pass_over(
        &mut self,
        side: Side,
        seg: &TcpSegment<'_>,
        shape: PieceShape,
        at: FrameRef,
        home: Home<'_>,
    ) -> bool {
        let (Some(t), Some(session), Some(client)) =
            (self.tail.as_deref_mut(), self.session.as_mut(), self.client)
        else {
            return false;
        };
        if !t.keeping
            || seg.flags.0 & (TcpFlags::SYN | TcpFlags::FIN | TcpFlags::RST) != 0
            || self.streams[side.other().index()].holds()
            || !self.streams[side.index()].take_in_order(
                seg.seq,
                seg.payload.len(),
                seg.payload_len,
            )
        {
            return false;
        }
        let m = meta(at);
        self.last_ts_ns = m.ts_ns;
        if !seg.payload.is_empty() {
            let d = if side == client {
                Direction::ClientToServer
            } else {
                Direction::ServerToClient
            };
            t.route(session, home, d, StreamEvent::Data(seg.payload), shape, m);
        }
        true
    }

    /// [`MysqlTrack::segment`] on a connection not (yet) recognised as MySQL, or in TLS.
    #[inline(never)]
    fn segment_not_yet_mysql(
        &mut self,
        conn: &ConnectionState,
        side: Side,
        seg: &TcpSegment<'_>,
        at: FrameRef,
        home: Home<'_>,
    ) {
        match &mut self.detect {
            Detect::MysqlTls => return self.feed_tls(side, seg, at),
            Detect::Undecided(r) => match r.segment(conn, side, seg, at) {
                Recognition::Undecided => return,
                Recognition::NotMysql => {
                    self.detect = Detect::NotMysql;
                    return;
                }
                Recognition::Mysql(m) => self.start(m, conn, home),
            },
            Detect::Mysql | Detect::NotMysql => {}
        }
        if self.is_mysql() {
            self.feed(side, seg, at, home);
        }
    }

    /// The connection is MySQL: the session starts, and is fed the bytes held while it was being
    /// recognised, segment by segment as they came (only bytes: their ACKs and closes were read as they
    /// came, and a close is the segment at hand's).
    fn start(&mut self, m: Recognised, conn: &ConnectionState, home: Home<'_>) {
        self.detect = Detect::Mysql;
        self.recognised_by = Some(m.by);
        self.client = Some(m.client);
        self.session = Some(Session::new(m.mode));
        if self.closes_only {
            self.tail = Some(Box::default());
        }
        let key = conn.key();
        m.replay.for_each(|side, seq, payload, payload_len, at| {
            let (src, dst) = (key.endpoint(side), key.endpoint(side.other()));
            let replay = TcpSegment {
                src: src.ip,
                src_port: src.port,
                dst: dst.ip,
                dst_port: dst.port,
                seq,
                ack: 0,
                window: 0,
                flags: TcpFlags(0),
                options: &[],
                payload,
                payload_len,
                // The session reads bytes only.
                ttl: 0,
            };
            self.feed(side, &replay, at, home);
        });
    }

    fn feed(&mut self, side: Side, seg: &TcpSegment<'_>, at: FrameRef, home: Home<'_>) {
        // Two copies of the work, chosen once per segment: decoding every exchange, the reassembled
        // bytes go straight to the session as they did before exchanges could be passed over.
        if self.tail.is_some() {
            self.feed_via::<true>(side, seg, at, home);
        } else {
            self.feed_via::<false>(side, seg, at, home);
        }
    }

    /// [`MysqlTrack::feed`]; `KEEPS`: the connection has a [`Tail`] (plain exchanges passed over).
    #[inline(always)]
    fn feed_via<const KEEPS: bool>(
        &mut self,
        side: Side,
        seg: &TcpSegment<'_>,
        at: FrameRef,
        home: Home<'_>,
    ) {
        let (Some(client), Some(session)) = (self.client, self.session.as_mut()) else {
            return;
        };
        self.last_ts_ns = meta(at).ts_ns;
        let mut to = PlainBytes::<KEEPS> {
            tail: &mut self.tail,
            home,
        };
        segment_to(
            (&mut self.streams, &mut self.closed, &mut self.closes),
            session,
            client,
            (side, seg, at),
            &mut to,
        );
        self.drain_replication();
    }

    /// Hands the transactions the session completed to `tell`, counting them, and what a TLS session's
    /// records told (estimated exchanges; the SSLRequest's login once the session is known not to be
    /// decrypted). Called after every segment: most complete none.
    #[inline]
    pub(crate) fn drain(&mut self, conn: &ConnectionState, mut tell: impl FnMut(Told<'_>)) {
        if self
            .session
            .as_ref()
            .is_some_and(|s| !s.completed().is_empty())
        {
            self.drain_completed(conn, &mut tell);
        }
        if self.tls.is_some() {
            self.after_tls(conn, &mut tell);
        }
    }

    /// Feeds the replication stream's samples (ACK latencies, event lags) the segment made, if any, to
    /// its distributions.
    #[inline(always)]
    fn drain_replication(&mut self) {
        if self
            .session
            .as_ref()
            .is_some_and(|s| !s.replication_samples().is_empty())
        {
            self.feed_replication_samples();
        }
    }

    /// [`MysqlTrack::drain_replication`] when there are samples: rare, out of the segment's path.
    #[cold]
    #[inline(never)]
    fn feed_replication_samples(&mut self) {
        let Some(session) = self.session.as_mut() else {
            return;
        };
        let track = self.replication.get_or_insert_with(Default::default);
        for s in session.replication_samples() {
            track.sample(s);
        }
        session.clear_replication_samples();
    }

    /// (Inlined where the segment's transactions are told: a call per transaction saved.)
    #[inline]
    fn drain_completed(&mut self, conn: &ConnectionState, tell: &mut impl FnMut(Told<'_>)) {
        let (Some(client), Some(session)) = (self.client, self.session.as_mut()) else {
            return;
        };
        let key = conn.key();
        let mut tls_begins = false;
        for t in session.completed() {
            let view = TransactionView::new(
                t,
                client,
                key,
                &self.closes,
                &self.retransmissions,
                session.info(),
            );
            let fate = view.fate();
            // Logins are not requests; commands the server never answers expect nothing.
            if fate != Fate::NoResponse && t.command != Command::Connect {
                self.requests.count(fate, t);
                self.statements_cut += u64::from(
                    t.statement
                        .as_deref()
                        .is_some_and(|s| cut_text(s).is_some()),
                );
            } else if matches!(t.outcome, Outcome::Encrypted) {
                // The SSLRequest: TLS begins; its login is told (or held) by `begin_tls`.
                tls_begins = true;
                continue;
            }
            self.transactions += 1;
            self.errors += u64::from(matches!(t.outcome, Outcome::Err { .. }));
            if fate == Fate::Unanswered {
                // Rare (the end of the capture only), and wanted by `first-reset` too.
                self.unanswered
                    .push(UnansweredRequest::new(t, view.client, view.server));
            }
            tell(Told::Transaction(&view));
        }
        if tls_begins {
            self.begin_tls(conn, tell);
        } else {
            session.clear_completed();
        }
    }

    /// After the session's SSLRequest: a TLS layer takes the connection's bytes over, from those the
    /// session kept since the SSLRequest on.
    #[cold]
    #[inline(never)]
    fn begin_tls(&mut self, conn: &ConnectionState, tell: &mut impl FnMut(Told<'_>)) {
        let (Some(client), Some(session)) = (self.client, self.session.as_mut()) else {
            return;
        };
        // The SSLRequest's login, the last transaction completed: with a key log it waits for the TLS
        // layer, as the login inside TLS replaces it if the session is decrypted.
        let login = session
            .completed()
            .iter()
            .rfind(|t| matches!(t.outcome, Outcome::Encrypted))
            .cloned();
        session.clear_completed();
        let mut track = Box::new(TlsTrack::new(self.keys.clone()));
        self.detect = Detect::MysqlTls;
        // No exchange is passed over from here: the bytes are the TLS layer's.
        self.tail = None;
        match login {
            Some(t) if self.keys.is_some() => track.held = Some(t),
            Some(t) => {
                self.transactions += 1;
                let view = TransactionView::new(
                    &t,
                    client,
                    conn.key(),
                    &self.closes,
                    &self.retransmissions,
                    session.info(),
                );
                tell(Told::Transaction(&view));
            }
            None => {}
        }
        if let Some(kept) = session.take_tls_bytes() {
            let mut last = None;
            for (d, m, bytes) in &kept.pieces {
                track.data(session, *d, bytes, *m, true);
                last = Some(*m);
            }
            for (d, n) in [
                (Direction::ClientToServer, kept.dropped[0]),
                (Direction::ServerToClient, kept.dropped[1]),
            ] {
                if let (true, Some(m)) = (n > 0, last) {
                    track.gap(session, d, n, m);
                }
            }
        }
        self.tls = Some(track);
        self.after_tls(conn, tell);
        // What the TLS layer decrypted from the bytes the session kept since its SSLRequest may have
        // completed more (a whole login, replayed after recognition).
        if self
            .session
            .as_ref()
            .is_some_and(|s| !s.completed().is_empty())
        {
            self.drain_completed(conn, tell);
        }
    }

    /// What a TLS session's records told since the last call: exchanges estimated (while it is not
    /// decrypted), and the SSLRequest's login once the session is known not to be decrypted.
    #[cold]
    #[inline(never)]
    fn after_tls(&mut self, conn: &ConnectionState, tell: &mut impl FnMut(Told<'_>)) {
        let (Some(track), Some(client)) = (self.tls.as_deref_mut(), self.client) else {
            return;
        };
        let key = conn.key();
        if track.login_undecryptable() {
            if let Some(t) = track.held.take() {
                self.transactions += 1;
                let info = self
                    .session
                    .as_ref()
                    .map(|s| s.info().clone())
                    .unwrap_or_default();
                let view = TransactionView::new(
                    &t,
                    client,
                    key,
                    &self.closes,
                    &self.retransmissions,
                    &info,
                );
                tell(Told::Transaction(&view));
            }
        }
        if track.conn.has_exchanges() {
            let exchanges: Vec<_> = track.conn.take_exchanges().collect();
            if track.resumed {
                return;
            }
            let f = track.conn.facts();
            let (version, cipher_suite) = (f.version, f.cipher_suite);
            for x in &exchanges {
                track.estimated += 1;
                tell(Told::Estimated(&EstimatedExchangeView {
                    exchange: x,
                    client: key.endpoint(client),
                    server: key.endpoint(client.other()),
                    version,
                    cipher_suite,
                    client_side: client,
                }));
            }
        }
    }

    /// [`MysqlTrack::feed`] of a connection in TLS: the reassembled bytes go through its TLS layer.
    #[cold]
    #[inline(never)]
    fn feed_tls(&mut self, side: Side, seg: &TcpSegment<'_>, at: FrameRef) {
        let (Some(client), Some(session), Some(track)) =
            (self.client, self.session.as_mut(), self.tls.as_deref_mut())
        else {
            return;
        };
        self.last_ts_ns = meta(at).ts_ns;
        segment_to(
            (&mut self.streams, &mut self.closed, &mut self.closes),
            session,
            client,
            (side, seg, at),
            &mut TlsBytes { track },
        );
        self.drain_replication();
    }

    /// What the session was doing when `side` sent the close `flag` at `frame`, if it was seen.
    pub(crate) fn close_context(
        &self,
        frame: u64,
        side: Side,
        flag: TcpCloseFlag,
    ) -> Option<&CloseContext> {
        self.closes
            .iter()
            .find(|c| c.frame == frame && c.side == side && c.flag == flag)
            .map(|c| &c.context)
    }

    /// The connection ended (port reuse, both sides closed, or the end of the capture): flush, finish,
    /// hand what that completed to `tell`, and summarise it.
    pub(crate) fn conclude(
        mut self,
        conn: &ConnectionState,
        files: &[&[u8]],
        mut tell: impl FnMut(Told<'_>),
    ) -> Option<MysqlSessionFacts> {
        if let Detect::Undecided(r) = &mut self.detect {
            // The last turn is judged on what the capture holds of it; a whole command that looked like
            // MySQL was still waiting for its answer.
            if let Recognition::Mysql(m) = r.end(conn) {
                self.start(m, conn, Home { files, input: 0 });
            }
        }
        if !self.is_mysql() {
            return None;
        }
        let client = self.client?;
        // What the replay completed (an SSLRequest: its TLS layer takes over before the flush).
        self.drain(conn, &mut tell);
        if let (Some(mut t), Some(session)) = (self.tail.take(), self.session.as_mut()) {
            t.decode_kept(session, files);
            // Plain exchanges passed over were answered (counted as the decoder would have).
            self.transactions += t.passed;
            self.errors += t.passed_errors;
            self.requests.answered += t.passed;
        }
        self.flush_streams(conn, client);
        if let Some(track) = self.tls.as_deref_mut() {
            // Not decrypted by the end: the SSLRequest's login is the session's.
            if !track.resumed {
                track.force_undecryptable();
            }
        }
        self.after_tls(conn, &mut tell);
        if let Some(session) = self.session.as_mut() {
            session.finish();
        }
        self.drain(conn, &mut tell);
        if self
            .session
            .as_ref()
            .is_some_and(|s| !s.replication_samples().is_empty())
        {
            self.drain_replication();
        }
        let key = conn.key();
        let (c, s) = (key.endpoint(client), key.endpoint(client.other()));
        let replication = self.replication_report(client, c, s);
        let incidents = self.incidents(client, c, s, conn);
        let info = self.session.as_ref().map(|s| s.info().clone());
        let tls = self.tls.as_ref().map(|track| track.facts());
        Some(MysqlSessionFacts {
            recognised_by: self.recognised_by?,
            server_version: info.as_ref().and_then(|i| i.server_version.clone()),
            user: info.as_ref().and_then(|i| i.user.clone()),
            schema: info.as_ref().and_then(|i| i.schema.clone()),
            encrypted: info
                .as_ref()
                .is_some_and(|i| i.encryption == Encryption::Tls),
            unread_bytes: info.as_ref().map_or(0, |i| i.counters.undecoded_bytes),
            tls,
            transactions: self.transactions,
            errors: self.errors,
            unanswered: std::mem::take(&mut self.unanswered),
            requests: self.requests,
            statements_cut: self.statements_cut,
            incidents,
            replication: replication.map(Box::new),
            closes: self.closes.iter().map(CloseSeenFacts::of).collect(),
        })
    }

    /// Flushes each direction's reassembled bytes to the session (through TLS where it is), and marks
    /// a gap at the end of a plain stream where the peer acknowledged bytes the capture does not hold.
    fn flush_streams(&mut self, conn: &ConnectionState, client: Side) {
        if let Some(session) = self.session.as_mut() {
            for side in [Side::Lo, Side::Hi] {
                let d = if side == client {
                    Direction::ClientToServer
                } else {
                    Direction::ServerToClient
                };
                match self.tls.as_deref_mut() {
                    Some(track) => {
                        let mut out =
                            |e: StreamEvent<'_>, m: Meta| tls_event(track, session, d, e, m);
                        self.streams[side.index()].flush(&mut out);
                    }
                    None => {
                        let mut out = |e: StreamEvent<'_>, m: Meta| feed_event(session, d, e, m);
                        self.streams[side.index()].flush(&mut out);
                        // Bytes the peer acknowledged that the capture does not hold (its last segments,
                        // lost to the capture): a gap at the end of the stream, where an answer may
                        // have been.
                        let stream = &self.streams[side.index()];
                        if let (Some(next), Some(ack)) =
                            (stream.next_seq(), conn.last_ack(side.other()))
                        {
                            let fin =
                                u32::from(conn.first_close(side, TcpCloseFlag::Fin).is_some());
                            let beyond = ack.wrapping_sub(next).wrapping_sub(fin);
                            if beyond > 0 && beyond < TRAILING_GAP_MAX {
                                let at = Meta {
                                    ts_ns: self.last_ts_ns,
                                    frame: conn.last().frame,
                                };
                                session.gap(d, u64::from(beyond), at);
                            }
                        }
                    }
                }
            }
            if let Some(track) = self.tls.as_deref_mut() {
                track.conn.finish();
            }
        }
    }

    /// The replication stream's report, when the session carried one (`c`, `s`: the client's and the
    /// server's endpoints).
    fn replication_report(
        &self,
        client: Side,
        c: Endpoint,
        s: Endpoint,
    ) -> Option<ReplicationStream> {
        self.session.as_ref().and_then(|session| {
            let summary = session.replication()?;
            let role = |side: Side| {
                if side == client {
                    Role::Client
                } else {
                    Role::Server
                }
            };
            let closes: Vec<StreamClose> = self
                .closes
                .iter()
                .filter_map(|seen| match seen.context.phase {
                    SessionPhase::Replicating(state) => Some(StreamClose {
                        by: role(seen.side),
                        flag: seen.flag,
                        at: Meta {
                            ts_ns: seen.ts_ns,
                            frame: seen.frame,
                        },
                        state,
                    }),
                    _ => None,
                })
                .collect();
            let awaiting = match session.phase() {
                SessionPhase::Replicating(state) => state.awaiting_ack,
                _ => None,
            };
            Some(stream_report(
                c.to_string(),
                s.to_string(),
                summary,
                self.replication
                    .as_deref()
                    .unwrap_or(&StreamTrack::default()),
                &closes,
                awaiting,
                self.last_ts_ns,
            ))
        })
    }

    /// One incident per request cut off by a close: a FIN then an RST on the same request is one event.
    fn incidents(
        &self,
        client: Side,
        c: Endpoint,
        s: Endpoint,
        conn: &ConnectionState,
    ) -> Vec<Incident> {
        let mut incidents: Vec<Incident> = Vec::new();
        for seen in &self.closes {
            if let Some(incident) = Incident::from_close(seen, client, c, s, conn) {
                if incidents.last().map(|i| i.request_frame) != Some(incident.request_frame) {
                    incidents.push(incident);
                }
            }
        }
        incidents
    }
}

/// One segment of a MySQL connection whose `client` side is known: the peer's bytes its acknowledgment
/// releases, its own bytes, and its close, the reassembled bytes going where `to` makes them go (the
/// session, through a [`Tail`], or through the TLS layer). The connection's reassemblers, the closes it
/// has seen, and their record are `wire`.
#[inline(always)]
fn segment_to(
    (streams, closed, closes): (
        &mut [StreamReassembler<Meta>; 2],
        &mut [[bool; 2]; 2],
        &mut Vec<CloseSeen>,
    ),
    session: &mut Session,
    client: Side,
    (side, seg, at): (Side, &TcpSegment<'_>, FrameRef),
    to: &mut impl BytesTo,
) {
    let dir = |s: Side| {
        if s == client {
            Direction::ClientToServer
        } else {
            Direction::ServerToClient
        }
    };
    let d = dir(side);
    // The acknowledgment before the payload: it tells what the sender had received from its peer
    // before it sent this segment, so the peer's bytes it releases (held after a hole the capture
    // lost) were read before this payload was sent, and come first. Read after the payload, they
    // would follow a whole request but fall between the pieces of a request cut in several
    // segments (each carries the ACK): how TCP cut the request would decide whether it was queued
    // before the hole or after the answers behind it.
    if seg.flags.ack() {
        let od = dir(side.other());
        let mut out = |e: StreamEvent<'_>, m: Meta| to.event(session, od, e, m);
        streams[side.other().index()].acknowledged(seg.ack, &mut out);
    }
    let mut out = |e: StreamEvent<'_>, m: Meta| to.event(session, d, e, m);
    streams[side.index()].segment(
        seg.seq,
        seg.flags.syn(),
        seg.payload,
        seg.payload_len,
        meta(at),
        &mut out,
    );
    let flag = if seg.flags.rst() {
        Some((TcpCloseFlag::Rst, CloseFlag::Rst))
    } else if seg.flags.fin() {
        Some((TcpCloseFlag::Fin, CloseFlag::Fin))
    } else {
        None
    };
    if let Some((tcp_flag, flag)) = flag {
        let slot = &mut closed[side.index()][usize::from(tcp_flag == TcpCloseFlag::Rst)];
        if !*slot {
            *slot = true;
            let mut out = |e: StreamEvent<'_>, m: Meta| to.event(session, d, e, m);
            streams[side.index()].flush(&mut out);
            // The close is read in the state the session is in: what was held is read first.
            to.before_close(session);
            let context = session.close(d, flag, meta(at));
            closes.push(CloseSeen {
                frame: at.frame,
                ts_ns: meta(at).ts_ns,
                side,
                flag: tcp_flag,
                context,
            });
        }
    }
}

/// Where a MySQL connection's reassembled bytes go ([`segment_to`]), and what must be read
/// before a close is.
trait BytesTo {
    /// One event of direction `d`'s reassembled bytes.
    fn event(&mut self, session: &mut Session, d: Direction, e: StreamEvent<'_>, m: Meta);
    /// A close is about to be read: what is held back is read first.
    fn before_close(&mut self, session: &mut Session);
}

/// The bytes of a plain connection: to the session, through its [`Tail`] if `KEEPS` (exchanges passed
/// over are kept there, and decoded before a close).
struct PlainBytes<'a, const KEEPS: bool> {
    tail: &'a mut Option<Box<Tail>>,
    home: Home<'a>,
}

impl<const KEEPS: bool> BytesTo for PlainBytes<'_, KEEPS> {
    #[inline(always)]
    fn event(&mut self, session: &mut Session, d: Direction, e: StreamEvent<'_>, m: Meta) {
        route::<KEEPS>(session, self.tail, self.home, d, e, m);
    }

    #[inline(always)]
    fn before_close(&mut self, session: &mut Session) {
        if let Some(t) = self.tail {
            t.decode_kept(session, self.home.files);
        }
    }
}

/// The bytes of a connection in TLS: through its TLS layer, which is told of a close first.
struct TlsBytes<'a> {
    track: &'a mut TlsTrack,
}

impl BytesTo for TlsBytes<'_> {
    fn event(&mut self, session: &mut Session, d: Direction, e: StreamEvent<'_>, m: Meta) {
        tls_event(self.track, session, d, e, m);
    }

    fn before_close(&mut self, _: &mut Session) {
        self.track.closed();
    }
}
