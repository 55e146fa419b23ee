//! [`Exchanges`]: every MySQL request of a capture as one capture point saw it, the records
//! [`compare`](crate::compare()) lines up between a client capture and a server capture.
//!
//! Each [`Exchange`] takes from the engine's transaction its endpoints, command, statement, and the frames
//! and times of the request and of its response's first and last bytes. Two facts the transaction does
//! not carry come from the connection's segments, which this analysis watches as they pass:
//!
//! * **The TCP sequence number of the request**, so that the same request is recognised in both captures
//!   when nothing between them rewrote the connection. A request is told when its response is complete,
//!   after its own segment, so each connection remembers a few of the segments each side sent since its
//!   last request was told, by frame: every segment that began a turn (the first after the other side
//!   spoke: a request that is not pipelined, however many segments carry it) and the most recent ones
//!   (pipelined requests). A request whose segment was forgotten, or that began inside a segment another
//!   request began in (its own first byte is then not the segment's), has no sequence number, and is
//!   matched by payload instead.
//! * **Whether the response was resent**: a segment of the server's side classed as a retransmission
//!   after the request and before the client's next data (its next request, or its close): at the
//!   client, resent segments complete the response; at the server, they follow it, when the server
//!   finds out the client did not get it. A request is therefore kept until the client sends again, or
//!   the connection ends.
//!
//! **The payload hash** is computed from what the transaction carries: the command byte, the request's
//! length on the wire (MySQL packet headers included) and its statement text ([`request_hash`]), not from
//! the bytes of the request's segment. How TCP cut a request into segments differs between two capture
//! points (segmentation offload at the client, a proxy re-sending), while the request itself does not.
//! Requests that differ only in what the statement text leaves out (the parameters of two
//! `COM_STMT_EXECUTE` of one statement, of equal length) hash alike; they are told apart by their sequence
//! numbers, or by their order on the connection.

use std::collections::BTreeSet;
use std::sync::Arc;

use pcapsleuth_flow::{SegmentClass, Side};
use pcapsleuth_mysql::{Command, Transaction};

use crate::compare::{Exchange, Seen};
use crate::events::{Analysis, ConnectionView, EndView, SegmentView, TransactionView};
use crate::facts::CaptureFacts;
use crate::mysql::Fate;

/// How many segments of a side a connection remembers of each kind (turn starts, most recent) between
/// two requests told: a request is told when its response completes, so the client's segments between
/// a request and its telling are the request's own continuation and any requests pipelined behind it.
const REMEMBERED_SEGMENTS: usize = 16;

/// Statements are kept to name notable transactions, not to match them (the hash covers the whole
/// text): their first this-many bytes, so that two captures of millions of requests fit in memory.
const STATEMENT_KEPT_BYTES: usize = 240;

/// The hash of a request's payload that [`Exchange::request_hash`] holds: FNV-1a of the command byte, the
/// request's length on the wire (little-endian u64) and its statement text (nothing when it has none).
pub fn request_hash(command: Command, request_bytes: u64, statement: Option<&str>) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for &b in bytes {
            h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
    };
    eat(&[command.byte()]);
    eat(&request_bytes.to_le_bytes());
    if let Some(s) = statement {
        eat(s.as_bytes());
    }
    h
}

/// Every MySQL request of a capture (logins aside) as an [`Exchange`], in order of the request's frame.
///
/// ```no_run
/// use pcapsleuth_analysis::{analyze, compare, CompareOptions, EngineOptions, Exchanges};
/// use pcapsleuth_capture::Capture;
/// let opts = EngineOptions::default();
/// let client = analyze(&Capture::open("client.pcap")?, &opts, Exchanges::default);
/// let server = analyze(&Capture::open("server.pcap")?, &opts, Exchanges::default);
/// let cmp = compare(&client.output, &server.output, &CompareOptions::default());
/// println!("{}", cmp.verdict);
/// # Ok::<(), pcapsleuth_capture::CaptureError>(())
/// ```
#[derive(Debug, Default)]
pub struct Exchanges {
    exchanges: Vec<Exchange>,
    statements: StatementText,
}

/// Whether [`Exchanges`] keeps each request's statement text ([`Exchange::statement`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum StatementText {
    /// Kept (its first bytes): [`compare`](crate::compare()) names the client capture's notable
    /// transactions with it.
    #[default]
    Kept,
    /// Left out (`statement` is `None`; the request hash still covers the text): the server capture's
    /// statements name nothing, and a capture of many distinct statements would hold them all.
    Dropped,
}

impl Exchanges {
    /// Every request as an [`Exchange`], its statement text kept or not.
    pub fn new(statements: StatementText) -> Self {
        Exchanges {
            exchanges: Vec::new(),
            statements,
        }
    }
}

/// A segment a side sent: its frame and the sequence number of its first byte.
#[derive(Debug, Clone, Copy)]
struct Sent {
    frame: u64,
    seq: u32,
}

/// The segments one side sent since the connection's last request was told.
#[derive(Debug, Default)]
struct SideSegments {
    /// Segments that began a turn (the first after the other side's data), the latest
    /// [`REMEMBERED_SEGMENTS`].
    turn_starts: Vec<Sent>,
    /// The latest [`REMEMBERED_SEGMENTS`] segments with payload.
    recent: Vec<Sent>,
    /// The last segment that resent data already seen.
    last_resent: Option<u64>,
}

impl SideSegments {
    fn remember(list: &mut Vec<Sent>, s: Sent) {
        if list.len() == REMEMBERED_SEGMENTS {
            list.remove(0);
        }
        list.push(s);
    }

    fn seq_of(&self, frame: u64) -> Option<u32> {
        self.turn_starts
            .iter()
            .chain(&self.recent)
            .find(|s| s.frame == frame)
            .map(|s| s.seq)
    }

    /// Forgets the segments before `frame`: no request told later began in them.
    fn forget_before(&mut self, frame: u64) {
        self.turn_starts.retain(|s| s.frame >= frame);
        self.recent.retain(|s| s.frame >= frame);
    }
}

/// A request told but not finished: its segment may be the one being processed (it is then told first),
/// and the server may still resend its response until the client sends again.
#[derive(Debug)]
struct Told {
    exchange: Exchange,
    client_side: Side,
    /// The request's segment was not found yet (it may be the segment being processed).
    seq_pending: bool,
}

/// What [`Exchanges`] keeps per connection.
#[derive(Debug, Default)]
pub struct ExchangeTrack {
    sides: [SideSegments; 2],
    /// The side that sent the last segment with payload.
    last_data_side: Option<Side>,
    /// The frame the last request told began in.
    last_request_frame: Option<u64>,
    told: Vec<Told>,
}

impl ExchangeTrack {
    /// Finishes the requests told before `before` (all of them when `None`): whether their response
    /// was resent since the request.
    fn finish_told(&mut self, before: Option<u64>, out: &mut Vec<Exchange>) {
        let (done, keep): (Vec<Told>, Vec<Told>) = std::mem::take(&mut self.told)
            .into_iter()
            .partition(|t| before.is_none_or(|f| t.exchange.request.frame < f));
        self.told = keep;
        for mut t in done {
            t.exchange.response_retransmitted = self.sides[t.client_side.other().index()]
                .last_resent
                .is_some_and(|f| f > t.exchange.request.frame);
            out.push(t.exchange);
        }
    }
}

/// `s` cut to at most [`STATEMENT_KEPT_BYTES`] at a character boundary, marked with `…` when cut.
fn kept_statement(s: &str) -> Box<str> {
    if s.len() <= STATEMENT_KEPT_BYTES {
        return s.into();
    }
    let mut end = STATEMENT_KEPT_BYTES;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end]).into()
}

fn seen(frame: Option<u64>, ts_ns: Option<u64>) -> Option<Seen> {
    Some(Seen {
        frame: frame?,
        ts_ns: i64::try_from(ts_ns?).ok()?,
    })
}

impl Analysis for Exchanges {
    /// Made when the connection first carries payload: a connection that never does (an attempt of a
    /// SYN flood) costs a pointer, not the track's ~180 bytes.
    type PerConnection = Option<Box<ExchangeTrack>>;
    type Output = Vec<Exchange>;

    fn segment(
        &mut self,
        state: &mut Option<Box<ExchangeTrack>>,
        _conn: &ConnectionView<'_>,
        segment: &SegmentView<'_>,
    ) {
        if segment.tcp.payload_len == 0 {
            return;
        }
        let state = state.get_or_insert_with(Box::default);
        let side = &mut state.sides[segment.side.index()];
        let sent = Sent {
            frame: segment.at.frame,
            seq: segment.tcp.seq,
        };
        if state.last_data_side != Some(segment.side) {
            SideSegments::remember(&mut side.turn_starts, sent);
        }
        SideSegments::remember(&mut side.recent, sent);
        if segment.class == SegmentClass::Retransmission {
            side.last_resent = Some(segment.at.frame);
        }
        state.last_data_side = Some(segment.side);
        for t in state.told.iter_mut().filter(|t| t.seq_pending) {
            if t.exchange.request.frame == segment.at.frame && t.client_side == segment.side {
                t.exchange.request_seq = Some(segment.tcp.seq);
            }
            t.seq_pending = false;
        }
        // The client sends again: the requests before this segment are over.
        if state.told.iter().any(|t| t.client_side == segment.side) {
            state.finish_told(Some(segment.at.frame), &mut self.exchanges);
        }
    }

    fn transaction(
        &mut self,
        state: &mut Option<Box<ExchangeTrack>>,
        conn: &ConnectionView<'_>,
        t: &TransactionView<'_>,
    ) {
        let state = state.get_or_insert_with(Box::default);
        let tx: &Transaction = t.transaction;
        // A login is matched by nothing: its scramble differs through a proxy, and it is not a request
        // the server answers in the command phase.
        if tx.command == Command::Connect {
            return;
        }
        let Ok(request_ts) = i64::try_from(tx.request_ts_ns) else {
            return;
        };
        let client_side = t.client_side();
        let frame = tx.request_frame;
        // A request that began in the segment the previous one began in does not begin it: the
        // segment's sequence number is not its own.
        let shares_segment = state.last_request_frame == Some(frame);
        state.last_request_frame = Some(frame);
        let found = state.sides[client_side.index()].seq_of(frame);
        for side in &mut state.sides {
            side.forget_before(frame);
        }
        let answered = t.fate() == Fate::Answered;
        state.told.push(Told {
            exchange: Exchange {
                client: t.client,
                server: t.server,
                connection: conn.tcp().first().frame,
                request_seq: found.filter(|_| !shares_segment),
                request_hash: request_hash(tx.command, tx.request_bytes, tx.statement.as_deref()),
                command: tx.command,
                statement: match self.statements {
                    StatementText::Kept => tx.statement.as_deref().map(kept_statement),
                    StatementText::Dropped => None,
                },
                request: Seen {
                    frame,
                    ts_ns: request_ts,
                },
                first_response: seen(tx.first_response_frame, tx.first_response_ts_ns),
                last_response: seen(tx.last_response_frame, tx.last_response_ts_ns)
                    .filter(|_| answered),
                response_retransmitted: false,
            },
            client_side,
            seq_pending: found.is_none() && !shares_segment,
        });
    }

    fn connection_ended(
        &mut self,
        state: Option<Box<ExchangeTrack>>,
        _conn: &ConnectionView<'_>,
        _end: &EndView<'_>,
    ) {
        if let Some(mut state) = state {
            state.finish_told(None, &mut self.exchanges);
        }
    }

    fn merge(&mut self, other: Self) {
        self.exchanges.extend(other.exchanges);
    }

    /// In order of the request's frame. Requests that began in one segment share it and come from one
    /// instance in the order told; the sort is stable, so they keep that order whatever the merging.
    fn finish(mut self, _: &CaptureFacts) -> Vec<Exchange> {
        self.exchanges.sort_by_key(|e| e.request.frame);
        // The vector grew by doubling: a capture of many requests would keep up to as many unused slots
        // as used ones for the rest of the run.
        self.exchanges.shrink_to_fit();
        self.exchanges
    }
}

/// The statement texts of the requests that began in some frames, as [`Exchanges`] keeps them
/// ([`StatementText::Kept`]): what names the few transactions a comparison reports, found by a second
/// reading of a capture whose exchanges were taken with [`StatementText::Dropped`], so that the text of
/// every request is never held at once. Fill them in with [`name_requests`].
#[derive(Debug, Default)]
pub struct RequestStatements {
    frames: Arc<BTreeSet<u64>>,
    /// (request frame, its statement), in the order told per connection.
    found: Vec<(u64, Option<Box<str>>)>,
}

impl RequestStatements {
    /// The statements of the requests that began in `frames`.
    pub fn new(frames: Arc<BTreeSet<u64>>) -> Self {
        RequestStatements {
            frames,
            found: Vec::new(),
        }
    }
}

impl Analysis for RequestStatements {
    type PerConnection = ();
    /// By request frame; requests that began in one frame in the order they were told, as
    /// [`Exchanges`] lists them.
    type Output = Vec<(u64, Option<Box<str>>)>;

    fn transaction(&mut self, _: &mut (), _: &ConnectionView<'_>, t: &TransactionView<'_>) {
        let tx = t.transaction;
        // The requests [`Exchanges`] lists, and no other: the same count in each frame.
        if tx.command == Command::Connect
            || i64::try_from(tx.request_ts_ns).is_err()
            || !self.frames.contains(&tx.request_frame)
        {
            return;
        }
        self.found.push((
            tx.request_frame,
            tx.statement.as_deref().map(kept_statement),
        ));
    }

    fn merge(&mut self, other: Self) {
        self.found.extend(other.found);
    }

    /// Requests that began in one frame come from one connection, so from one instance, in the order
    /// told; the sort is stable.
    fn finish(mut self, _: &CaptureFacts) -> Self::Output {
        self.found.sort_by_key(|&(frame, _)| frame);
        self.found
    }
}

/// Gives the exchanges (in order of request frame, as [`Exchanges`] gives them) the statements `names`
/// found for their frames ([`RequestStatements`] of the same capture).
pub fn name_requests(exchanges: &mut [Exchange], names: Vec<(u64, Option<Box<str>>)>) {
    let mut names = names.into_iter().peekable();
    for e in exchanges.iter_mut() {
        while names
            .peek()
            .is_some_and(|(frame, _)| *frame < e.request.frame)
        {
            names.next();
        }
        if names
            .peek()
            .is_some_and(|(frame, _)| *frame == e.request.frame)
        {
            if let Some((_, text)) = names.next() {
                e.statement = text;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_covers_command_length_and_text() {
        let q = request_hash(Command::Query, 13, Some("select 1"));
        assert_eq!(q, request_hash(Command::Query, 13, Some("select 1")));
        assert_ne!(q, request_hash(Command::StmtPrepare, 13, Some("select 1")));
        assert_ne!(q, request_hash(Command::Query, 14, Some("select 1")));
        assert_ne!(q, request_hash(Command::Query, 13, Some("select 2")));
    }

    #[test]
    fn names_go_to_their_frames_in_order() {
        let exchange = |frame: u64| Exchange {
            client: pcapsleuth_flow::Endpoint {
                ip: std::net::IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 2)),
                port: 40000,
            },
            server: pcapsleuth_flow::Endpoint {
                ip: std::net::IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 1)),
                port: 3306,
            },
            connection: 1,
            request_seq: None,
            request_hash: frame,
            command: Command::Query,
            statement: None,
            request: Seen { frame, ts_ns: 0 },
            first_response: None,
            last_response: None,
            response_retransmitted: false,
        };
        // Frames 5 and 9 are named; 9 holds two pipelined requests, the second without a statement.
        let mut list: Vec<Exchange> = [3, 5, 7, 9, 9, 12].into_iter().map(exchange).collect();
        name_requests(
            &mut list,
            vec![
                (5, Some("select 5".into())),
                (9, Some("select 9a".into())),
                (9, None),
            ],
        );
        let names: Vec<Option<&str>> = list.iter().map(|e| e.statement.as_deref()).collect();
        assert_eq!(
            names,
            [None, Some("select 5"), None, Some("select 9a"), None, None]
        );
    }

    #[test]
    fn a_long_statement_is_cut_at_a_character() {
        let s = "é".repeat(STATEMENT_KEPT_BYTES);
        let kept = kept_statement(&s);
        assert!(kept.ends_with('…'));
        assert!(kept.len() <= STATEMENT_KEPT_BYTES + '…'.len_utf8());
        assert_eq!(&*kept_statement("select 1"), "select 1");
    }
}
