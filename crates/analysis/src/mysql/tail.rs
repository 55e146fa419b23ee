//! Where a connection's bytes live ([`Home`]) and the [`Tail`]: the bytes of an exchange followed
//! undecoded ([`MysqlDepth::Closes`]), handed to the session only when a close needs them.

use pcapsleuth_flow::{FrameRef, StreamEvent};
use pcapsleuth_mysql::{Direction, ExchangeShape, Meta, PieceShape, PlainExchange, Session};

use super::tls::TlsTrack;

use super::gap_mark::cut_text;

/// The bytes of the inputs of a run, by input (empty for an input read as a stream, whose windows do
/// not last), and the input the current segment is from: where an exchange passed over lies.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Home<'a> {
    pub(crate) files: &'a [&'a [u8]],
    pub(crate) input: usize,
}

impl Home<'_> {
    /// Where `bytes` lie in the current input, when they are part of its mapped bytes (not bytes
    /// reassembly held in a buffer of its own).
    #[inline]
    fn offset_of(&self, bytes: &[u8]) -> Option<u64> {
        let file = self.files.get(self.input)?;
        let at = (bytes.as_ptr() as usize).wrapping_sub(file.as_ptr() as usize);
        (at < file.len() && bytes.len() <= file.len() - at).then_some(at as u64)
    }
}

/// Bytes of one direction kept undecoded: where they lie in a mapped input.
#[derive(Debug, Clone, Copy)]
struct Kept {
    dir: Direction,
    input: u32,
    len: u32,
    at: u64,
    meta: Meta,
}

/// An exchange holds at most this many pieces kept undecoded (10 KB); past it (a long resultset) it is
/// decoded, so that memory follows connections, not the length of a response.
const KEPT_MAX: usize = 256;

/// Room for kept pieces a connection keeps between exchanges (most exchanges are a few segments).
const KEPT_ROOM: usize = 16;

/// [`MysqlDepth::Closes`]: the session passes over plain exchanges. From a new client flight (client
/// bytes after server bytes) found with the session at rest, the exchange's bytes are kept undecoded,
/// only their packet headers followed ([`ExchangeShape`]), until the next flight: then the exchange is
/// counted if plain, else decoded from what was kept. Whatever needs the session's state (a close, a
/// gap, bytes reassembly held, the end) first decodes what is kept; the session then decodes as bytes
/// come until it is at rest at a new flight again.
#[derive(Default)]
pub(super) struct Tail {
    /// Bytes are being kept (the session was at rest when the exchange began).
    pub(super) keeping: bool,
    kept: Vec<Kept>,
    shape: ExchangeShape,
    /// The last bytes were the server's.
    server_last: bool,
    /// Plain exchanges passed over, and of them those answered by an error.
    pub(super) passed: u64,
    pub(super) passed_errors: u64,
}

impl Tail {
    /// One event of a direction's reassembled bytes; `shape`: the bytes' [`PieceShape`] when they are a
    /// whole segment's payload whose shape the scan told.
    #[inline(always)]
    pub(super) fn route(
        &mut self,
        session: &mut Session,
        home: Home<'_>,
        d: Direction,
        e: StreamEvent<'_>,
        shape: PieceShape,
        m: Meta,
    ) {
        match e {
            StreamEvent::Data(b) if self.keep(session, home, d, b, shape, m) => {}
            StreamEvent::Data(_) => self.decode_now(session, home.files, d, e, m),
            StreamEvent::Gap(_) => {
                self.server_last = d == Direction::ServerToClient;
                self.decode_now(session, home.files, d, e, m);
            }
        }
    }

    /// Keeps the bytes `b` of direction `d` if the session is passing over the exchange (beginning a new
    /// one when they begin a client flight); returns whether it did (else they are to be decoded).
    #[inline(always)]
    fn keep(
        &mut self,
        session: &mut Session,
        home: Home<'_>,
        d: Direction,
        b: &[u8],
        shape: PieceShape,
        m: Meta,
    ) -> bool {
        let from_server = d == Direction::ServerToClient;
        if self.server_last && !from_server {
            self.new_flight(session, home.files);
        }
        self.server_last = from_server;
        if !self.keeping || self.kept.len() >= KEPT_MAX {
            return false;
        }
        let Some(at) = home.offset_of(b) else {
            return false;
        };
        self.kept.push(Kept {
            dir: d,
            input: home.input as u32,
            len: b.len() as u32,
            at,
            meta: m,
        });
        if from_server {
            self.shape.server_shaped(b, shape);
        } else {
            self.shape.client_shaped(b, shape);
        }
        true
    }

    /// Decodes what is kept, then `e`.
    #[inline(never)]
    fn decode_now(
        &mut self,
        session: &mut Session,
        files: &[&[u8]],
        d: Direction,
        e: StreamEvent<'_>,
        m: Meta,
    ) {
        self.decode_kept(session, files);
        feed_event(session, d, e, m);
    }

    /// A new client flight begins: the exchange kept ended, passed over if plain, else decoded; bytes
    /// are kept from this flight on if the session is at rest.
    #[inline(never)]
    fn new_flight(&mut self, session: &mut Session, files: &[&[u8]]) {
        if !self.keeping {
            self.start_keeping(session);
            return;
        }
        // A prepared statement's run shows the statement's text, which the decoder counts if it was cut.
        let counted = |plain: &PlainExchange| {
            plain
                .statement
                .and_then(|id| session.prepared(id))
                .is_none_or(|text| cut_text(text).is_none())
        };
        match self.shape.plain().filter(counted) {
            Some(plain) => {
                self.passed += 1;
                self.passed_errors += u64::from(plain.error);
                let (client, server) = self.shape.bytes();
                session.passed_over(client, server);
                self.kept.clear();
                self.kept.shrink_to(KEPT_ROOM);
                self.shape.reset();
            }
            None => {
                self.decode_kept(session, files);
                self.start_keeping(session);
            }
        }
    }

    /// Keeps the exchange beginning now if the session is at rest.
    fn start_keeping(&mut self, session: &Session) {
        if session.at_rest() {
            self.keeping = true;
            self.shape = ExchangeShape::new(session.capabilities());
        }
    }

    /// Decodes what is kept, and stops keeping: the session decodes as bytes come.
    #[cold]
    pub(super) fn decode_kept(&mut self, session: &mut Session, files: &[&[u8]]) {
        if !self.keeping {
            return;
        }
        self.keeping = false;
        for k in self.kept.drain(..) {
            let from = usize::try_from(k.at).unwrap_or(usize::MAX);
            let bytes = files
                .get(k.input as usize)
                .and_then(|f| f.get(from..from.saturating_add(k.len as usize)));
            if let Some(b) = bytes {
                session.feed(k.dir, b, k.meta);
            }
        }
        self.kept.shrink_to(KEPT_ROOM);
        self.shape.reset();
    }
}

/// Hands one event of a direction's reassembled bytes to the session, or to its [`Tail`] when plain
/// exchanges are passed over. (Inlined: decoding every exchange, the session's `feed` is called here as it
/// was before there was a choice.)
#[inline(always)]
pub(super) fn route<const KEEPS: bool>(
    session: &mut Session,
    tail: &mut Option<Box<Tail>>,
    home: Home<'_>,
    d: Direction,
    e: StreamEvent<'_>,
    m: Meta,
) {
    match tail {
        Some(t) if KEEPS => t.route(session, home, d, e, PieceShape::Unknown, m),
        _ => feed_event(session, d, e, m),
    }
}

/// Feeds one event of a direction's reassembled bytes to the session.
#[inline(always)]
pub(super) fn feed_event(session: &mut Session, d: Direction, e: StreamEvent<'_>, m: Meta) {
    match e {
        StreamEvent::Data(b) => session.feed(d, b, m),
        StreamEvent::Gap(n) => session.gap(d, n, m),
    }
}

/// Feeds one event of a direction's reassembled bytes to a TLS session: through its TLS layer.
pub(super) fn tls_event(
    track: &mut TlsTrack,
    session: &mut Session,
    d: Direction,
    e: StreamEvent<'_>,
    m: Meta,
) {
    match e {
        StreamEvent::Data(b) => track.data(session, d, b, m, false),
        StreamEvent::Gap(n) => track.gap(session, d, n, m),
    }
}

pub(super) fn meta(at: FrameRef) -> Meta {
    Meta {
        ts_ns: at.ts.0.max(0) as u64,
        frame: at.frame,
    }
}
