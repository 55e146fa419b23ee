//! The shape of one request/response exchange read from its packets' headers and first bytes, to tell
//! whether decoding it could change anything but the counts: a caller that only needs a session's state at
//! its closes (who was doing what when the connection broke) passes over the exchanges that are *plain*
//! and decodes the rest (see [`ExchangeShape::plain`]).
//!
//! An exchange is plain when the client sent exactly one packet, a request whose answer depends on
//! nothing the session remembers and changes nothing it remembers (`COM_QUERY` other than a `SET @...`,
//! which a replica's binlog dump reads later, and whose text does not end as a statement cut by a gap
//! does; `COM_PING`; `COM_STMT_EXECUTE` without a cursor, which only reads the text of the statement it
//! runs: the caller checks that text as the transaction would show it, see [`PlainExchange::statement`]),
//! and the server answered it with whole packets numbered 1, 2, 3, ... that the session's
//! reader of responses takes, packet by packet, to one complete response: an OK or an ERR alone, or a
//! resultset (its column count, definitions, rows, and the terminator that ends it with no further result
//! announced, or an ERR). The response is read here with the decoder's own readers and by its rules
//! (`Stage::First`, `ColumnDefs`, `AfterDefs`, `Rows` in the session's protocol), and anything they would
//! treat otherwise than as such a response (a progress report, LOCAL INFILE, a malformed packet, more
//! results, a packet after the end) makes the exchange not plain. A session at rest before a plain exchange
//! ([`crate::Session::at_rest`]) is at rest after it, as a decoder would have left it, with one more request
//! answered: the caller can count it instead of decoding it.
//!
//! The bytes are read once, as they come, and nothing is copied: each piece's packet headers are walked,
//! and each packet judged where it lies. A packet whose header is cut across pieces, or whose first bytes
//! are when they are needed (an OK's status, a column count), is not judged and the exchange is decoded:
//! it does not happen with the small packets that make up nearly every exchange.

use crate::replication::ReplicaHints;
use crate::wire::{self, capability as cap, status, MAX_PAYLOAD};

/// One direction's packets, followed by their headers.
#[derive(Debug, Clone, Copy)]
struct Framing {
    /// Packets begun.
    packets: u32,
    /// Payload bytes of the current packet not yet seen.
    left: u32,
    /// Bytes of the next header seen so far.
    header: [u8; 4],
    header_fill: u8,
    /// The sequence id the next packet must carry.
    next_seq: u8,
    /// A header broke the numbering, a packet was as long as a packet can be (continued), or a header was
    /// cut across pieces (its packet was not judged).
    irregular: bool,
    /// Bytes fed.
    bytes: u64,
}

impl Framing {
    const fn new(first_seq: u8) -> Self {
        Framing {
            packets: 0,
            left: 0,
            header: [0; 4],
            header_fill: 0,
            next_seq: first_seq,
            irregular: false,
            bytes: 0,
        }
    }

    /// Follows the packets of the next piece of the direction's bytes, handing each packet whose header
    /// is in it to `on`: its payload's bytes in this piece (the whole payload when `whole`), and its
    /// length.
    #[inline(always)]
    fn push(&mut self, bytes: &[u8], on: &mut impl OnPacket) {
        self.bytes += bytes.len() as u64;
        let n = bytes.len();
        let mut i = 0usize;
        // The rest of the packet under way.
        if self.left != 0 || self.header_fill != 0 {
            i = self.finish_packet(bytes);
        }
        // Whole headers in this piece: read in registers (packets are usually small, several to a
        // segment).
        let mut next_seq = self.next_seq;
        let mut irregular = false;
        let mut count = 0u32;
        while let Some(&[a, b, c, seq]) = bytes.get(i..i + 4) {
            let len = u32::from_le_bytes([a, b, c, 0]);
            irregular |= (seq != next_seq) | (len >= MAX_PAYLOAD);
            next_seq = seq.wrapping_add(1);
            count += 1;
            let at = i + 4;
            i = at + len as usize;
            let whole = i <= n;
            on.packet(bytes.get(at..i.min(n)).unwrap_or(&[]), len, whole);
        }
        self.next_seq = next_seq;
        self.irregular |= irregular;
        self.packets += count;
        if i > n {
            // The last packet goes on in the next pieces.
            self.left = (i - n) as u32;
        } else if i < n {
            // A header cut by the end of the piece.
            let rest = &bytes[i..];
            self.header[..rest.len()].copy_from_slice(rest);
            self.header_fill = rest.len() as u8;
        }
    }

    /// Continues the packet under way (its header, then its payload) with the piece `bytes`; returns
    /// where the next packet's header begins in it (past its end if the packet goes on). A packet whose
    /// header was cut is not judged: the exchange is irregular.
    #[cold]
    fn finish_packet(&mut self, bytes: &[u8]) -> usize {
        let mut i = 0;
        if self.header_fill > 0 {
            let fill = usize::from(self.header_fill);
            let take = (4 - fill).min(bytes.len());
            self.header[fill..fill + take].copy_from_slice(&bytes[..take]);
            self.header_fill += take as u8;
            i = take;
            if self.header_fill < 4 {
                return bytes.len();
            }
            self.header_fill = 0;
            let [a, b, c, _] = self.header;
            self.packets += 1;
            self.left = u32::from_le_bytes([a, b, c, 0]);
            self.irregular = true;
        }
        let n = (self.left as usize).min(bytes.len() - i);
        self.left -= n as u32;
        i + n
    }

    /// Nothing fed yet.
    #[inline(always)]
    fn fresh(&self) -> bool {
        self.bytes == 0
    }

    /// Whole packets only, numbered from the first, none continued, each judged.
    fn whole(&self) -> bool {
        !self.irregular && self.packets > 0 && self.left == 0 && self.header_fill == 0
    }
}

/// What is done with each packet whose header [`Framing::push`] reads.
trait OnPacket {
    /// `p`: the packet's payload bytes in the piece (all of it when `whole`); `len`: its length.
    fn packet(&mut self, p: &[u8], len: u32, whole: bool);
}

impl OnPacket for Reading {
    #[inline(always)]
    fn packet(&mut self, p: &[u8], len: u32, whole: bool) {
        *self = self.next(p, len, whole);
    }
}

/// The client's packets: the first, whole, is the request.
struct Request {
    /// Packets seen before this piece.
    before: u32,
    capabilities: Option<u32>,
    plain: bool,
    reading: Reading,
    /// The prepared statement a `COM_STMT_EXECUTE` runs.
    statement: Option<u32>,
}

impl OnPacket for Request {
    #[inline(always)]
    fn packet(&mut self, p: &[u8], len: u32, whole: bool) {
        if self.before == 0 && whole {
            // The first request: what its answer is read as.
            self.plain = ExchangeShape::request_is_plain(p, self.capabilities);
            self.reading = match p.first() {
                Some(0x03 | 0x17) => Reading::First,
                Some(0x0e) if len == 1 => Reading::Simple,
                _ => Reading::Other,
            };
            self.statement = match p {
                [0x17, a, b, c, d, ..] => Some(u32::from_le_bytes([*a, *b, *c, *d])),
                _ => None,
            };
        }
    }
}

/// Where the session's reader of responses would stand, packet by packet (its stages for a `COM_QUERY`
/// or a `COM_STMT_EXECUTE`, and the one packet of a `COM_PING`'s answer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reading {
    /// Before the first packet of a `COM_QUERY`'s (or a `COM_STMT_EXECUTE`'s) response.
    First,
    /// Before the one packet of a `COM_PING`'s answer.
    Simple,
    /// Column definitions still to come.
    ColumnDefs {
        left: u64,
    },
    /// After the definitions: an EOF, or (CLIENT_DEPRECATE_EOF) rows or the OK for an empty resultset.
    AfterDefs,
    Rows,
    /// The response is complete, with an ERR or not.
    Done {
        error: bool,
    },
    /// The reader would do something else than read one whole response: not plain.
    Other,
}

impl Reading {
    /// The next response packet: `p` its payload's bytes at hand (all of it when `whole`), `len` its
    /// length. The session's rules (protocol.rs `response_step`), on the packets a plain exchange may hold.
    #[inline(always)]
    fn next(self, p: &[u8], len: u32, whole: bool) -> Reading {
        // A row or a column definition, nearly every packet of a resultset: its first byte decides.
        match (self, p.first()) {
            (Reading::Rows, Some(&b)) if b < 0xFE => Reading::Rows,
            (Reading::ColumnDefs { left }, Some(&b)) if b < 0xFE => {
                if left <= 1 {
                    Reading::AfterDefs
                } else {
                    Reading::ColumnDefs { left: left - 1 }
                }
            }
            _ => self.next_other(p, len, whole),
        }
    }

    /// [`Reading::next`] of the packets that begin or end a response.
    #[inline(never)]
    fn next_other(self, p: &[u8], len: u32, whole: bool) -> Reading {
        let first = p.first().copied();
        let len64 = u64::from(len);
        // MariaDB's progress report goes on; a packet whose bytes are needed but not at hand is not judged.
        let progress = first == Some(0xFF) && p.get(1..3) == Some(&[0xFF, 0xFF][..]);
        let needs_bytes = |r: Reading| if whole { r } else { Reading::Other };
        if progress || (first.is_none() && len > 0) {
            return Reading::Other;
        }
        match self {
            Reading::First => match first {
                Some(0x00) => needs_bytes(match wire::parse_ok(p) {
                    Some(ok) if ok.status_flags & status::SERVER_MORE_RESULTS_EXISTS == 0 => {
                        Reading::Done { error: false }
                    }
                    _ => Reading::Other,
                }),
                Some(0xFF) => needs_bytes(Reading::error(p)),
                Some(0xFB | 0xFE) | None => Reading::Other,
                _ => needs_bytes(match wire::parse_column_count(p, len64) {
                    Some((n, true)) => Reading::ColumnDefs { left: n },
                    Some((_, false)) => Reading::AfterDefs,
                    None => Reading::Other,
                }),
            },
            Reading::Simple => match first {
                Some(0x00) if whole && wire::parse_ok(p).is_some() => {
                    Reading::Done { error: false }
                }
                Some(0xFF) => needs_bytes(Reading::error(p)),
                _ => Reading::Other,
            },
            Reading::ColumnDefs { left } => {
                if first == Some(0xFF) || (wire::is_terminator(p, len64) && len < 9) {
                    Reading::Other
                } else if left <= 1 {
                    Reading::AfterDefs
                } else {
                    Reading::ColumnDefs { left: left - 1 }
                }
            }
            Reading::AfterDefs => {
                if wire::is_terminator(p, len64) && len < 7 {
                    // The EOF after the definitions (a cursor's ends the response: not plain).
                    match wire::parse_eof(p) {
                        _ if !whole => Reading::Other,
                        Some(st) if st.status_flags & status::SERVER_STATUS_CURSOR_EXISTS != 0 => {
                            Reading::Other
                        }
                        _ => Reading::Rows,
                    }
                } else if wire::is_terminator(p, len64) {
                    needs_bytes(Reading::terminator(p, len64))
                } else if first == Some(0xFF) {
                    Reading::Other
                } else {
                    Reading::Rows
                }
            }
            Reading::Rows => {
                if wire::is_terminator(p, len64) {
                    needs_bytes(Reading::terminator(p, len64))
                } else if first == Some(0xFF) {
                    needs_bytes(Reading::error(p))
                } else {
                    Reading::Rows
                }
            }
            Reading::Done { .. } | Reading::Other => Reading::Other,
        }
    }

    /// An ERR that ends the response (one the decoder cannot read ends it otherwise: not plain).
    fn error(p: &[u8]) -> Reading {
        match wire::parse_err(p) {
            Some(_) => Reading::Done { error: true },
            None => Reading::Other,
        }
    }

    /// The terminator of a resultset's rows: the end, unless it announces more results.
    fn terminator(p: &[u8], len: u64) -> Reading {
        let st = wire::parse_terminator(p, len).unwrap_or_default();
        if st.status_flags & status::SERVER_MORE_RESULTS_EXISTS != 0 {
            Reading::Other
        } else {
            Reading::Done { error: false }
        }
    }
}

/// One exchange's packets, fed as the reassembled bytes of each direction arrive.
#[derive(Debug, Clone, Copy)]
pub struct ExchangeShape {
    client: Framing,
    server: Framing,
    /// The capabilities in force: whether a query carries attributes.
    capabilities: Option<u32>,
    /// The request (the client's first packet, whole in its piece) depends on no state and leaves none (a
    /// `COM_STMT_EXECUTE` only reads its statement's text: see [`PlainExchange::statement`]).
    request_plain: bool,
    /// Where the reader of the response stands.
    reading: Reading,
    /// The prepared statement the request executes (`COM_STMT_EXECUTE`).
    statement: Option<u32>,
}

/// What a plain exchange's response was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlainExchange {
    /// The response was (or ended in) an ERR packet.
    pub error: bool,
    /// The prepared statement a `COM_STMT_EXECUTE` ran: its transaction shows the statement's text, which
    /// the caller reads in the session ([`crate::Session::prepared`]) if it counts what texts show (a
    /// statement cut by a gap).
    pub statement: Option<u32>,
}

impl Default for ExchangeShape {
    /// A shape for a session whose capabilities are not known.
    fn default() -> Self {
        ExchangeShape::new(None)
    }
}

/// What one piece of a direction's bytes is when it begins that direction's part of an exchange: a
/// request or a whole response, told once, where the bytes are at hand (a reader of the capture's
/// records), so that [`ExchangeShape::client_shaped`] and [`ExchangeShape::server_shaped`] follow the
/// exchange without reading them again.
///
/// It says what [`ExchangeShape::client`] or [`ExchangeShape::server`] would make of the piece as the
/// first of its direction, in the only cases that matter for a plain exchange; anything else is
/// [`PieceShape::Unknown`] and the bytes are read. Three bits: it fits beside a packet's other facts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum PieceShape {
    /// Not one of the others: the bytes are read.
    Unknown = 0,
    /// One whole packet numbered 0, a `COM_QUERY` whose text does not begin as query attributes do:
    /// plain when queries carry no attributes, or when the capabilities are not known.
    Query = 1,
    /// One whole packet numbered 0, a `COM_QUERY` that begins as query attributes do and is plain read
    /// with them: plain whatever the capabilities (read without attributes, its text begins with those
    /// bytes, which no `SET @` does).
    QueryWithAttributes = 2,
    /// One whole packet numbered 0: `COM_PING`.
    Ping = 3,
    /// Whole packets numbered from 1 holding one complete response to a `COM_QUERY`, a `COM_PING` alike:
    /// an OK alone.
    Ok = 4,
    /// As [`PieceShape::Ok`]: an ERR alone.
    Err = 5,
    /// Whole packets numbered from 1 holding one complete resultset answering a `COM_QUERY` (a
    /// `COM_STMT_EXECUTE` alike).
    Resultset = 6,
    /// As [`PieceShape::Resultset`], ended by an ERR.
    ResultsetErr = 7,
}

impl PieceShape {
    /// The shape of `bytes` (a TCP segment's whole payload).
    #[inline(never)]
    pub fn of(bytes: &[u8]) -> PieceShape {
        match bytes.get(3) {
            Some(0) => Self::of_request(bytes),
            Some(1) => Self::of_response(bytes),
            _ => PieceShape::Unknown,
        }
    }

    /// From the three bits [`PieceShape::bits`] gave.
    #[inline]
    pub fn from_bits(bits: u8) -> PieceShape {
        match bits & 7 {
            1 => PieceShape::Query,
            2 => PieceShape::QueryWithAttributes,
            3 => PieceShape::Ping,
            4 => PieceShape::Ok,
            5 => PieceShape::Err,
            6 => PieceShape::Resultset,
            7 => PieceShape::ResultsetErr,
            _ => PieceShape::Unknown,
        }
    }

    /// Three bits.
    #[inline]
    pub fn bits(self) -> u8 {
        self as u8
    }

    /// A request as [`ExchangeShape::client`] reads the first packet of a flight: one whole packet (the
    /// caller saw it numbered 0), a plain request. Written out rather than read with [`Framing`] and
    /// [`Request`] (what [`PieceShape::read`], the definition, does): it runs for every segment.
    #[inline]
    fn of_request(bytes: &[u8]) -> PieceShape {
        let Some((&[a, b, c, _], p)) = bytes.split_first_chunk::<4>() else {
            return PieceShape::Unknown;
        };
        let len = u32::from_le_bytes([a, b, c, 0]);
        if len as usize != p.len() || len >= MAX_PAYLOAD {
            return PieceShape::Unknown;
        }
        let body = match p {
            [0x0e] => return PieceShape::Ping,
            [0x03, body @ ..] if body.last() != Some(&b'/') => body,
            _ => return PieceShape::Unknown,
        };
        if !wire::looks_like_attribute_prefix(body) {
            return if ReplicaHints::may_note(body) {
                PieceShape::Unknown
            } else {
                PieceShape::Query
            };
        }
        match wire::split_query_attributes(body) {
            Some((_, text)) if !ReplicaHints::may_note(text) => PieceShape::QueryWithAttributes,
            _ => PieceShape::Unknown,
        }
    }

    /// A response as [`ExchangeShape::server`] reads it after a `COM_QUERY` (the caller saw its first
    /// packet numbered 1). One packet, the answer to most requests, is judged here as the reader would
    /// judge it; several are read.
    #[inline]
    fn of_response(bytes: &[u8]) -> PieceShape {
        let Some((&[a, b, c, _], p)) = bytes.split_first_chunk::<4>() else {
            return PieceShape::Unknown;
        };
        let len = u32::from_le_bytes([a, b, c, 0]) as usize;
        if len >= p.len() {
            if len != p.len() || len >= MAX_PAYLOAD as usize {
                return PieceShape::Unknown;
            }
            return match p {
                // An ERR long enough for its code, not MariaDB's progress report.
                [0xFF, x, y, ..] if [*x, *y] != [0xFF, 0xFF] => PieceShape::Err,
                [0x00, ..] => match wire::parse_ok(p) {
                    Some(ok) if ok.status_flags & status::SERVER_MORE_RESULTS_EXISTS == 0 => {
                        PieceShape::Ok
                    }
                    _ => PieceShape::Unknown,
                },
                _ => PieceShape::Unknown,
            };
        }
        // A piece whose packets are not whole and numbered from 1 is not a response read whole: told
        // without a second walk (reading would find it irregular or unfinished).
        let mut torn = false;
        match Self::of_resultset(bytes, &mut torn) {
            Some(shape) => shape,
            None if torn => PieceShape::Unknown,
            None => Self::read_response(bytes),
        }
    }

    /// The common resultsets, judged packet by packet as [`Reading`] would judge them: a one-byte column
    /// count, definitions, the EOF after them (unless CLIENT_DEPRECATE_EOF), rows, and the terminator or
    /// an ERR that ends them as the last packet. `None` for anything else, which is read.
    #[inline]
    fn of_resultset(bytes: &[u8], torn: &mut bool) -> Option<PieceShape> {
        /// Where the resultset stands before the next packet.
        #[derive(Clone, Copy)]
        enum Stage {
            Count,
            Definitions(u8),
            AfterDefinitions,
            Rows,
        }
        let mut stage = Stage::Count;
        let mut seq = 1u8;
        let mut at = 0usize;
        // Whole packets numbered 1, 2, 3, ...; each but the last leaves bytes after it, or the loop ends.
        loop {
            let Some(&[a, b, c, s]) = bytes.get(at..at + 4) else {
                *torn = true;
                return None;
            };
            let len = u32::from_le_bytes([a, b, c, 0]) as usize;
            let from = at + 4;
            if s != seq || len >= MAX_PAYLOAD as usize || len > bytes.len() - from {
                *torn = true;
                return None;
            }
            let p = &bytes[from..from + len];
            at = from + len;
            seq = seq.wrapping_add(1);
            let last = at == bytes.len();
            stage = match (stage, p) {
                // The column count (MariaDB's cached metadata adds a byte: not 0, the definitions follow).
                (Stage::Count, &[n] | &[n, 1..=0xFF]) if !last && (1..0xFB).contains(&n) => {
                    Stage::Definitions(n)
                }
                (Stage::Definitions(left), &[b, ..]) if !last && b < 0xFE => {
                    if left <= 1 {
                        Stage::AfterDefinitions
                    } else {
                        Stage::Definitions(left - 1)
                    }
                }
                // After the definitions: (CLIENT_DEPRECATE_EOF) the end, their EOF (classic), or a row.
                (Stage::AfterDefinitions, &[0xFE, ..]) if p.len() >= 7 => {
                    return Self::end_of_rows(p, last)
                }
                (Stage::AfterDefinitions, &[0xFE, ..]) if !last => {
                    let st = wire::parse_eof(p)?;
                    if st.status_flags & status::SERVER_STATUS_CURSOR_EXISTS != 0 {
                        return None;
                    }
                    Stage::Rows
                }
                (Stage::AfterDefinitions | Stage::Rows, &[b, ..]) if !last && b < 0xFE => {
                    Stage::Rows
                }
                (Stage::Rows, _) => return Self::end_of_rows(p, last),
                _ => return None,
            };
        }
    }

    /// The packet after a resultset's rows, judged as [`Reading`] judges it in `Rows`: the last, a
    /// terminator announcing no more results or an ERR.
    #[inline]
    fn end_of_rows(p: &[u8], last: bool) -> Option<PieceShape> {
        if !last {
            return None;
        }
        match p {
            [0xFE, ..] => {
                let st = wire::parse_terminator(p, p.len() as u64).unwrap_or_default();
                (st.status_flags & status::SERVER_MORE_RESULTS_EXISTS == 0)
                    .then_some(PieceShape::Resultset)
            }
            [0xFF, x, y, ..] if [*x, *y] != [0xFF, 0xFF] => Some(PieceShape::ResultsetErr),
            _ => None,
        }
    }

    /// The definition: what [`Framing`] and [`Reading`], which follow an exchange, make of `bytes` as the
    /// first piece of their direction.
    #[cfg(test)]
    fn read(bytes: &[u8]) -> PieceShape {
        match bytes.get(3) {
            Some(0) => {
                let mut framing = Framing::new(0);
                let mut request = Request {
                    before: 0,
                    capabilities: None,
                    plain: false,
                    reading: Reading::Other,
                    statement: None,
                };
                framing.push(bytes, &mut request);
                if !(request.plain && framing.packets == 1 && framing.whole()) {
                    return PieceShape::Unknown;
                }
                match request.reading {
                    Reading::Simple => PieceShape::Ping,
                    // A COM_QUERY (a COM_STMT_EXECUTE is told nothing).
                    Reading::First if bytes[4] == 0x03 => {
                        // Plain read with the capabilities unknown (request.plain); and as the session
                        // reads it once they are known: with attributes, without.
                        let p = &bytes[4..];
                        let with =
                            ExchangeShape::request_is_plain(p, Some(cap::CLIENT_QUERY_ATTRIBUTES));
                        let without = ExchangeShape::request_is_plain(p, Some(0));
                        let attributed = wire::looks_like_attribute_prefix(&p[1..]);
                        match (attributed, with, without) {
                            (false, _, true) => PieceShape::Query,
                            (true, true, true) => PieceShape::QueryWithAttributes,
                            _ => PieceShape::Unknown,
                        }
                    }
                    _ => PieceShape::Unknown,
                }
            }
            Some(1) => Self::read_response(bytes),
            _ => PieceShape::Unknown,
        }
    }

    /// A response read with [`Framing`] and [`Reading`] from a `COM_QUERY`'s first packet.
    fn read_response(bytes: &[u8]) -> PieceShape {
        let mut framing = Framing::new(1);
        let mut reading = Reading::First;
        framing.push(bytes, &mut reading);
        match reading {
            Reading::Done { error } if framing.whole() => match (framing.packets, error) {
                // One packet that ends a COM_QUERY's response is an OK (no more results) or an ERR, which
                // end a COM_PING's alike.
                (1, false) => PieceShape::Ok,
                (1, true) => PieceShape::Err,
                (_, false) => PieceShape::Resultset,
                (_, true) => PieceShape::ResultsetErr,
            },
            _ => PieceShape::Unknown,
        }
    }
}

impl ExchangeShape {
    /// A shape for the exchanges of a session with these `capabilities` in force
    /// ([`crate::Session::capabilities`]).
    pub fn new(capabilities: Option<u32>) -> Self {
        ExchangeShape {
            client: Framing::new(0),
            server: Framing::new(1),
            capabilities,
            request_plain: false,
            reading: Reading::Other,
            statement: None,
        }
    }

    /// Forgets the exchange, for the next one.
    #[inline]
    pub fn reset(&mut self) {
        *self = ExchangeShape::new(self.capabilities);
    }

    /// The next bytes the client sent.
    #[inline(always)]
    pub fn client(&mut self, bytes: &[u8]) {
        let mut request = Request {
            before: self.client.packets,
            capabilities: self.capabilities,
            plain: self.request_plain,
            reading: self.reading,
            statement: self.statement,
        };
        self.client.push(bytes, &mut request);
        self.reading = request.reading;
        self.request_plain = request.plain;
        self.statement = request.statement;
    }

    /// The next bytes the server sent.
    #[inline(always)]
    pub fn server(&mut self, bytes: &[u8]) {
        let mut reading = self.reading;
        self.server.push(bytes, &mut reading);
        self.reading = reading;
    }

    /// [`ExchangeShape::client`] of the bytes `bytes` whose [`PieceShape`] is `shape`: when they begin
    /// the client's bytes and their shape tells what reading them would, they are not read.
    #[inline(always)]
    pub fn client_shaped(&mut self, bytes: &[u8], shape: PieceShape) {
        let attributes = self
            .capabilities
            .map(|c| c & cap::CLIENT_QUERY_ATTRIBUTES != 0);
        let reading = match (shape, attributes) {
            (PieceShape::Query, None | Some(false)) | (PieceShape::QueryWithAttributes, _) => {
                Reading::First
            }
            (PieceShape::Ping, _) => Reading::Simple,
            _ => return self.client(bytes),
        };
        if !self.client.fresh() {
            return self.client(bytes);
        }
        // What reading them does: one whole packet numbered 0, a plain request.
        self.client.bytes += bytes.len() as u64;
        self.client.packets = 1;
        self.client.next_seq = 1;
        self.request_plain = true;
        self.reading = reading;
    }

    /// [`ExchangeShape::server`] of the bytes `bytes` whose [`PieceShape`] is `shape`: when they begin
    /// the server's bytes and their shape tells what reading them would, they are not read.
    #[inline(always)]
    pub fn server_shaped(&mut self, bytes: &[u8], shape: PieceShape) {
        let error = match (shape, self.reading) {
            (PieceShape::Ok, Reading::First | Reading::Simple)
            | (PieceShape::Resultset, Reading::First) => false,
            (PieceShape::Err, Reading::First | Reading::Simple)
            | (PieceShape::ResultsetErr, Reading::First) => true,
            _ => return self.server(bytes),
        };
        if !self.server.fresh() {
            return self.server(bytes);
        }
        // What reading them does: whole packets, numbered from 1, one complete response. (How many, and
        // so the number the next packet must carry, is not kept: any packet after a complete response
        // makes the exchange not plain, whatever its number.)
        self.server.bytes += bytes.len() as u64;
        self.server.packets = 1;
        self.reading = Reading::Done { error };
    }

    /// Whether a request's payload (whole) is one of a plain exchange.
    fn request_is_plain(p: &[u8], capabilities: Option<u32>) -> bool {
        match p.split_first() {
            Some((0x03, body)) => {
                // A text ending as the decoder marks a statement cut by a gap (` /* gap: N bytes */`) would
                // be counted as cut: decoded, to count it as the decoder does.
                if body.last() == Some(&b'/') {
                    return false;
                }
                let with_attrs = match capabilities {
                    Some(caps) => caps & cap::CLIENT_QUERY_ATTRIBUTES != 0,
                    None => wire::looks_like_attribute_prefix(body),
                };
                let text = if with_attrs {
                    match wire::split_query_attributes(body) {
                        Some((_, t)) => t,
                        None => return false,
                    }
                } else {
                    body
                };
                !ReplicaHints::may_note(text)
            }
            Some((0x0e, [])) => true,
            // A prepared statement run without a cursor (a cursor's rows come with COM_STMT_FETCH); its
            // id must be there (else the decoder counts the packet malformed).
            Some((0x17, [_, _, _, _])) => true,
            Some((0x17, [_, _, _, _, flags, ..])) => flags & 0x07 == 0,
            _ => false,
        }
    }

    /// Bytes the client and the server sent.
    pub fn bytes(&self) -> (u64, u64) {
        (self.client.bytes, self.server.bytes)
    }

    /// Whether the exchange is plain (see the module's documentation), and how it ended if it is; `None`
    /// when decoding it could tell more than that it was answered. For a `COM_STMT_EXECUTE`, the promise
    /// holds once the caller has found the text of [`PlainExchange::statement`] is one it does not count.
    #[inline]
    pub fn plain(&self) -> Option<PlainExchange> {
        let Reading::Done { error } = self.reading else {
            return None;
        };
        let plain = self.request_plain
            && self.client.packets == 1
            && self.client.whole()
            && self.server.whole();
        plain.then_some(PlainExchange {
            error,
            statement: self.statement,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packet(seq: u8, payload: &[u8]) -> Vec<u8> {
        let len = payload.len() as u32;
        let mut p = len.to_le_bytes()[..3].to_vec();
        p.push(seq);
        p.extend_from_slice(payload);
        p
    }

    /// Feeds `client` and `server` (each the concatenated bytes of a direction) in pieces of `cut`
    /// bytes, and judges the exchange; then again after a reset, for a shape used twice.
    /// Also fed with each piece's [`PieceShape`], as the engine feeds segments whose shape its scan told:
    /// the same verdict and counts.
    fn shape(client: &[u8], server: &[u8], cut: usize, caps: Option<u32>) -> Option<PlainExchange> {
        let mut x = ExchangeShape::new(caps);
        let mut verdicts = Vec::new();
        for _ in 0..2 {
            client.chunks(cut).for_each(|b| x.client(b));
            server.chunks(cut).for_each(|b| x.server(b));
            verdicts.push(x.plain());
            x.reset();
        }
        assert_eq!(verdicts[0], verdicts[1], "the same after a reset");
        let mut shaped = ExchangeShape::new(caps);
        for b in client.chunks(cut) {
            shaped.client_shaped(b, told(b));
        }
        for b in server.chunks(cut) {
            shaped.server_shaped(b, told(b));
        }
        client.chunks(cut).for_each(|b| x.client(b));
        server.chunks(cut).for_each(|b| x.server(b));
        assert_eq!(shaped.plain(), verdicts[0], "told shapes, cut {cut}");
        assert_eq!(shaped.bytes(), x.bytes(), "told shapes, cut {cut}");
        verdicts[0]
    }

    fn query(text: &str) -> Vec<u8> {
        packet(0, &[&[0x03][..], text.as_bytes()].concat())
    }

    const OK: &[u8] = &[0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00];
    const ERR_1146: &[u8] = b"\xff\x7a\x04#42S02Table 'db.t' doesn't exist";
    const PLAIN: Option<PlainExchange> = Some(PlainExchange {
        error: false,
        statement: None,
    });
    const ERROR: Option<PlainExchange> = Some(PlainExchange {
        error: true,
        statement: None,
    });

    const DEPRECATE_EOF: u32 = 1 << 24;

    /// A one-column resultset of `rows` rows ended by `end`: with an EOF after the column definition,
    /// unless `deprecate_eof`.
    fn resultset_as(rows: usize, end: &[u8], deprecate_eof: bool) -> Vec<u8> {
        let mut s = packet(1, &[0x01]);
        s.extend(packet(
            2,
            b"\x03def\x00\x00\x00\x01a\x00\x0c\x3f\x00\x0b\x00\x00\x00\x03\x00\x00\x00\x00\x00",
        ));
        let mut seq = 3;
        if !deprecate_eof {
            s.extend(packet(seq, &[0xfe, 0, 0, 0x02, 0]));
            seq += 1;
        }
        for _ in 0..rows {
            s.extend(packet(seq, b"\x011"));
            seq += 1;
        }
        if !end.is_empty() {
            s.extend(packet(seq, end));
        }
        s
    }

    fn resultset(rows: usize, end: &[u8]) -> Vec<u8> {
        resultset_as(rows, end, false)
    }

    /// Judged in every cut: plain only where each piece holds the request and the last response packet
    /// whole (else decoded, never judged otherwise).
    fn judged(client: &[u8], server: &[u8], caps: Option<u32>) -> Option<PlainExchange> {
        let whole = shape(client, server, 100_000, caps);
        for cut in 1..=40 {
            let v = shape(client, server, cut, caps);
            assert!(v.is_none() || v == whole, "cut {cut}: {v:?} vs {whole:?}");
        }
        whole
    }

    #[test]
    fn a_query_answered_by_ok_err_or_a_whole_resultset_is_plain() {
        let q = query("select 1");
        assert_eq!(judged(&q, &packet(1, OK), None), PLAIN);
        assert_eq!(judged(&q, &packet(1, ERR_1146), None), ERROR);
        let eof = [0xfe, 0, 0, 0x02, 0];
        assert_eq!(judged(&q, &resultset(3, &eof), None), PLAIN);
        // CLIENT_DEPRECATE_EOF: no EOF after the definitions; an OK with the 0xFE header ends the rows.
        let ok_eof = [0xfe, 0, 0, 0x02, 0, 0, 0, 0, 0, 0, 0];
        let deprecate = Some(DEPRECATE_EOF);
        assert_eq!(
            judged(&q, &resultset_as(0, &ok_eof, true), deprecate),
            PLAIN
        );
        assert_eq!(
            judged(&q, &resultset_as(2, &ok_eof, true), deprecate),
            PLAIN
        );
        // An error after some rows (a query killed mid-resultset).
        assert_eq!(judged(&q, &resultset(2, ERR_1146), None), ERROR);
        assert_eq!(judged(&packet(0, &[0x0e]), &packet(1, OK), None), PLAIN);
        // A prepared statement run without a cursor: the caller is told which (it reads its text).
        let execute = packet(0, &[0x17, 7, 0, 0, 0, 0, 1, 0, 0, 0]);
        let ran = |error| {
            Some(PlainExchange {
                error,
                statement: Some(7),
            })
        };
        let eof = [0xfe, 0, 0, 0x02, 0];
        assert_eq!(judged(&execute, &packet(1, OK), None), ran(false));
        assert_eq!(judged(&execute, &resultset(2, &eof), None), ran(false));
        assert_eq!(judged(&execute, &packet(1, ERR_1146), None), ran(true));
        // A statement with query attributes (none set): the text follows two counts.
        let attrs = packet(0, b"\x03\x00\x01select 1");
        let caps = Some(cap::CLIENT_QUERY_ATTRIBUTES);
        assert_eq!(judged(&attrs, &packet(1, OK), caps), PLAIN);
    }

    #[test]
    fn a_response_in_pieces_of_whole_packets_is_judged() {
        // As TCP cuts a resultset: each segment a run of whole packets.
        let mut x = ExchangeShape::new(None);
        x.client(&query("select 1"));
        let rs = resultset(3, &[0xfe, 0, 0, 0x02, 0]);
        // The column count, its definition and the EOF after them; then the rows and the last EOF.
        let (head, rows) = rs.split_at(5 + 27 + 9);
        x.server(head);
        assert_eq!(x.plain(), None, "the column definitions alone");
        x.server(rows);
        assert_eq!(x.plain(), PLAIN);
    }

    #[test]
    fn what_a_decoder_must_see_is_not_plain() {
        let shape = |c: &[u8], s: &[u8], _cut: usize, caps: Option<u32>| judged(c, s, caps);
        let q = query("select 1");
        let eof = [0xfe, 0, 0, 0x02, 0];
        // A response not yet complete: rows still coming, or nothing yet.
        let mut cut = resultset(3, &eof);
        cut.truncate(cut.len() - 9);
        assert_eq!(shape(&q, &cut, 7, None), None);
        assert_eq!(shape(&q, &[], 7, None), None);
        // More results announced (a stored procedure's, multi-statements).
        let more = [0x00, 0x00, 0x00, 0x0a, 0x00, 0x00, 0x00];
        assert_eq!(shape(&q, &packet(1, &more), 7, None), None);
        assert_eq!(
            shape(&q, &resultset(1, &[0xfe, 0, 0, 0x0a, 0]), 7, None),
            None
        );
        // Two requests in the flight (pipelined), a request in two packets, a packet numbered wrong.
        let two = [q.clone(), query("select 2")].concat();
        assert_eq!(shape(&two, &packet(1, OK), 7, None), None);
        assert_eq!(
            shape(&packet(1, b"\x03select 1"), &packet(1, OK), 7, None),
            None
        );
        assert_eq!(shape(&q, &packet(2, OK), 7, None), None);
        // A replica's `SET @...` is read by the decoder, with or without attributes.
        let set = "SET @master_binlog_checksum='CRC32'";
        assert_eq!(shape(&query(set), &packet(1, OK), 7, None), None);
        let set_attrs = packet(0, &[&b"\x03\x00\x01"[..], set.as_bytes()].concat());
        let caps = Some(cap::CLIENT_QUERY_ATTRIBUTES);
        assert_eq!(shape(&set_attrs, &packet(1, OK), 7, caps), None);
        // Requests that leave state behind or depend on it.
        for command in [0x02u8, 0x11, 0x16, 0x12, 0x1e, 0x1f] {
            let r = packet(0, &[command, 1, 0, 0, 0]);
            assert_eq!(shape(&r, &packet(1, OK), 7, None), None, "{command:#x}");
        }
        // A prepared statement run with a cursor (its rows come with COM_STMT_FETCH), or without its id.
        let cursor = packet(0, &[0x17, 1, 0, 0, 0, 1, 1, 0, 0, 0]);
        assert_eq!(shape(&cursor, &resultset(1, &eof), 7, None), None);
        let no_id = packet(0, &[0x17, 1, 0, 0]);
        assert_eq!(shape(&no_id, &packet(1, OK), 7, None), None);
        // LOAD DATA LOCAL INFILE: the server asks for a file, which the client sends next.
        assert_eq!(shape(&q, &packet(1, b"\xfb/tmp/x"), 7, None), None);
        // MariaDB's progress report is not the end of the response.
        assert_eq!(
            shape(&q, &packet(1, b"\xff\xff\xff\x01\x00"), 7, None),
            None
        );
        // The EOF after the column definitions is not the end of the rows (a client that sent its next
        // request before the rows came: pipelining); nor is a row without EOFs.
        assert_eq!(shape(&q, &resultset(0, &[]), 7, None), None);
        let deprecate = Some(DEPRECATE_EOF);
        assert_eq!(shape(&q, &resultset_as(2, &[], true), 7, deprecate), None);
        // An EOF right after the definitions is theirs, whatever convention is in force: rows follow.
        assert_eq!(shape(&q, &resultset_as(0, &eof, true), 7, deprecate), None);
        // An ERR too short to hold its code.
        assert_eq!(shape(&q, &packet(1, &[0xff, 0x7a]), 7, None), None);
        // A packet after the end: an ERR after an OK (unsolicited), after a whole resultset, or an ERR
        // amid the rows followed by more.
        let mut s = packet(1, OK);
        s.extend(packet(2, ERR_1146));
        assert_eq!(shape(&q, &s, 7, None), None);
        let mut s = resultset(1, &eof);
        s.extend(packet(6, ERR_1146));
        assert_eq!(shape(&q, &s, 7, None), None);
        let mut s = resultset(1, ERR_1146);
        s.extend(packet(6, &eof));
        assert_eq!(shape(&q, &s, 7, None), None);
        // A 7-byte terminator is read as an OK: here one that announces more results.
        let fe7 = [0xfe, 0x00, 0xfc, 0x00, 0x00, 0x08, 0x00];
        assert_eq!(shape(&q, &resultset(1, &fe7), 7, None), None);
        // A statement ending as one cut by a gap is marked: the decoder counts it.
        assert_eq!(
            shape(
                &query("select 1 /* gap: 5 bytes */"),
                &packet(1, OK),
                7,
                None
            ),
            None
        );
        // A response that starts with an OK does not go on as a resultset.
        let mut s = packet(1, OK);
        s.extend(packet(2, &eof));
        assert_eq!(shape(&q, &s, 7, None), None);
    }

    struct Rng(u64);
    impl Rng {
        fn n(&mut self, n: usize) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 % n as u64) as usize
        }
        fn b(&mut self) -> u8 {
            self.n(256) as u8
        }
        fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
            &v[self.n(v.len())]
        }
    }

    const CAPS: [Option<u32>; 6] = [
        None,
        Some(0),
        Some(cap::CLIENT_QUERY_ATTRIBUTES),
        Some(cap::CLIENT_DEPRECATE_EOF),
        Some(cap::CLIENT_QUERY_ATTRIBUTES | cap::CLIENT_DEPRECATE_EOF),
        Some(u32::MAX),
    ];

    fn request(r: &mut Rng) -> Vec<u8> {
        let texts: [&[u8]; 12] = [
            b"select 1",
            b"SET @a=1",
            b"set @slave_connect_state=''",
            b"SeT @x",
            b"SET @",
            b"SET autocommit=1",
            b"select 1 /* gap: 3 bytes */",
            b"x/",
            b"",
            b"/",
            b"\x01\x01",
            b"\x00\x01",
        ];
        let mut body = vec![];
        match r.n(6) {
            0 => {
                // attribute prefix count 0
                body.push(r.n(3) as u8);
                body.push(*r.pick(&[1u8, 1, 0, 2]));
            }
            1 => {
                // one attribute: count 1, sets 1, null bitmap, bind 1, type, flag, name, value
                body.extend([
                    1,
                    1,
                    *r.pick(&[0u8, 1]),
                    1,
                    *r.pick(&[0xfeu8, 8, 6, 1]),
                    0,
                    1,
                    b'n',
                ]);
                match r.n(3) {
                    0 => body.extend([3, b'a', b'b', b'c']),
                    1 => body.extend([1, 2, 3, 4, 5, 6, 7, 8]),
                    _ => {}
                }
            }
            2 => {
                body.push(r.b() & 0x1f);
                body.push(1);
            }
            _ => {}
        }
        let t: &[u8] = texts[r.n(texts.len())];
        body.extend_from_slice(t);
        if r.n(5) == 0 {
            body.push(*r.pick(&[b'/', b' ', 0]));
        }
        let cmd = *r.pick(&[3u8, 3, 3, 3, 0x0e, 0x0e, 0x16, 0x17, 0x17, 0x01, 0x11]);
        let mut p = vec![cmd];
        if cmd == 0x0e {
            if r.n(4) == 0 {
                p.push(0);
            }
        } else if cmd == 0x17 {
            // A statement id (or less), then flags (a cursor's or none), the iteration count, parameters.
            let len = *r.pick(&[3usize, 4, 5, 9, 12]);
            p.extend([7, 0, 0, 0, *r.pick(&[0u8, 0, 1, 4, 8]), 1, 0, 0, 0, 0, 1, 8][..len].iter());
        } else {
            p.extend(body);
        }
        p
    }

    fn status(r: &mut Rng) -> [u8; 2] {
        let s: u16 = *r.pick(&[
            0x0002u16, 0x0008, 0x0040, 0x000a, 0x0042, 0x0000, 0x4002, 0xffff,
        ]);
        s.to_le_bytes()
    }

    fn ok(r: &mut Rng, head: u8) -> Vec<u8> {
        let mut p = vec![head];
        match r.n(6) {
            0 => {}
            1 => p.push(0),
            2 => p.extend([0, 0]),
            3 => p.extend([0xfc, 1, 0, 0]),
            _ => {
                p.extend([0, 0]);
                p.extend(status(r));
                p.extend([0, 0]);
                for _ in 0..r.n(4) {
                    p.push(r.b());
                }
            }
        }
        p
    }

    fn err(r: &mut Rng) -> Vec<u8> {
        let mut p = vec![0xff];
        for _ in 0..r.n(8) {
            p.push(*r.pick(&[0xffu8, 0x01, b'#', b'4']));
        }
        p
    }

    fn eof(r: &mut Rng) -> Vec<u8> {
        let mut p = vec![0xfe];
        match r.n(4) {
            0 => {}
            1 => {
                p.extend([0, 0]);
                p.extend(status(r));
            }
            2 => {
                p.extend([0, 0]);
                p.extend(status(r));
                for _ in 0..r.n(10) {
                    p.push(r.b());
                }
            }
            _ => {
                p.extend([0, 0, 0, 0]);
                p.extend(status(r));
                p.extend([0, 0]);
            }
        }
        p
    }

    fn anyp(r: &mut Rng) -> Vec<u8> {
        match r.n(9) {
            0 => vec![],
            1 => ok(r, 0),
            2 => err(r),
            3 => eof(r),
            4 => ok(r, 0xfe),
            5 => vec![r.b()],
            6 => vec![r.b(), r.b()],
            7 => (0..r.n(12)).map(|_| r.b()).collect(),
            _ => b"\x03def\x00\x00\x00\x01a\x00\x0c\x3f\x00".to_vec(),
        }
    }

    fn response(r: &mut Rng) -> Vec<Vec<u8>> {
        match r.n(5) {
            0 => vec![ok(r, 0)],
            1 => vec![err(r)],
            2 => (0..1 + r.n(4)).map(|_| anyp(r)).collect(),
            _ => {
                let n = 1 + r.n(4);
                let mut v = vec![];
                v.push(match r.n(6) {
                    0 => vec![n as u8, r.b()],
                    1 => vec![0xfc, n as u8, 0],
                    2 => vec![n as u8, 0],
                    _ => vec![n as u8],
                });
                let defs = if r.n(6) == 0 { r.n(6) } else { n };
                for _ in 0..defs {
                    v.push(if r.n(10) == 0 {
                        anyp(r)
                    } else {
                        b"\x03def\x00".to_vec()
                    });
                }
                if r.n(3) != 0 {
                    v.push(eof(r));
                }
                for _ in 0..r.n(5) {
                    v.push(if r.n(8) == 0 {
                        anyp(r)
                    } else {
                        vec![r.b() % 0xfe, 1]
                    });
                }
                match r.n(4) {
                    0 => v.push(err(r)),
                    1 => v.push(ok(r, 0xfe)),
                    2 => v.push(eof(r)),
                    _ => v.push(anyp(r)),
                }
                if r.n(10) == 0 {
                    v.push(anyp(r));
                }
                v
            }
        }
    }

    fn frame(r: &mut Rng, packets: &[Vec<u8>], first: u8) -> Vec<u8> {
        let mut s = vec![];
        for (i, p) in packets.iter().enumerate() {
            let mut seq = first.wrapping_add(i as u8);
            if r.n(40) == 0 {
                seq = r.b();
            }
            s.extend(packet(seq, p));
        }
        if r.n(15) == 0 && !s.is_empty() {
            let at = r.n(s.len());
            s[at] = r.b();
        }
        if r.n(15) == 0 {
            s.truncate(r.n(s.len() + 1));
        }
        if r.n(20) == 0 {
            s.extend((0..1 + r.n(4)).map(|_| r.b()));
        }
        s
    }

    fn cuts(r: &mut Rng, b: &[u8]) -> Vec<Vec<u8>> {
        match r.n(4) {
            0 | 1 => vec![b.to_vec()],
            2 => b.chunks(1 + r.n(30)).map(|c| c.to_vec()).collect(),
            _ => {
                // whole first piece, then the rest (a later segment), or an empty piece first
                let mut v = vec![];
                if r.n(3) == 0 {
                    v.push(vec![]);
                }
                let k = r.n(b.len() + 1);
                v.push(b[..k].to_vec());
                v.push(b[k..].to_vec());
                v
            }
        }
    }

    /// [`PieceShape::of`], checked against its definition.
    fn told(b: &[u8]) -> PieceShape {
        let t = PieceShape::of(b);
        assert_eq!(t, PieceShape::read(b), "of != read on {b:x?}");
        assert_eq!(PieceShape::from_bits(t.bits()), t);
        t
    }

    /// Told shapes change nothing: on random exchanges (requests with and without query attributes;
    /// responses of any shape, multi-column resultsets with MariaDB's metadata byte, 0xFE, 0xFF and empty
    /// packets anywhere; numbered right or not; headers that lie), fed whole or cut anywhere, in the order
    /// they come or with server bytes first, under six capability sets, an exchange fed its pieces' shapes
    /// judges as one whose bytes are all read; and every piece's shape is its definition's.
    #[test]
    fn told_shapes_judge_as_read_bytes() {
        let mut r = Rng(0x9e37_79b9_7f4a_7c15);
        let mut kinds = [0usize; 8];
        let mut plain = 0;
        for case in 0..300_000 {
            let req = request(&mut r);
            let mut reqs = vec![req];
            if r.n(10) == 0 {
                reqs.push(request(&mut r));
            }
            let client = frame(&mut r, &reqs, 0);
            let resp = response(&mut r);
            let server = frame(&mut r, &resp, 1);
            let cpieces = cuts(&mut r, &client);
            let spieces = cuts(&mut r, &server);
            let caps = CAPS[r.n(CAPS.len())];
            let order = r.n(10);
            let mut read = ExchangeShape::new(caps);
            let mut shaped = ExchangeShape::new(caps);
            // Each piece fed to both, read and told.
            let mut feed = |pieces: &[Vec<u8>], client: bool| {
                for p in pieces {
                    let t = told(p);
                    kinds[t as usize] += 1;
                    if client {
                        read.client(p);
                        shaped.client_shaped(p, t);
                    } else {
                        read.server(p);
                        shaped.server_shaped(p, t);
                    }
                }
            };
            if order == 0 {
                // server bytes first, then client, then server again
                feed(&spieces, false);
            }
            feed(&cpieces, true);
            feed(&spieces, false);
            if order == 1 {
                feed(&cpieces, true);
            }
            assert_eq!(
                shaped.plain(),
                read.plain(),
                "case {case} caps {caps:?}: {cpieces:x?} {spieces:x?}"
            );
            assert_eq!(shaped.bytes(), read.bytes(), "case {case}");
            plain += usize::from(read.plain().is_some());
        }
        // Not vacuous: every shape told many times, many exchanges plain.
        assert!(kinds.iter().all(|&n| n > 1_000), "{kinds:?}");
        assert!(plain > 5_000, "{plain}");
    }

    #[test]
    fn every_short_packet_is_told_as_read() {
        // Every payload of 0..=3 bytes (and 4 with a fixed tail), numbered 0 or 1, length right or off by one.
        let mut payloads: Vec<Vec<u8>> = vec![vec![]];
        for a in 0..=255u8 {
            payloads.push(vec![a]);
            for b in 0..=255u8 {
                payloads.push(vec![a, b]);
                for c in [0u8, 1, 2, 0x08, 0x0a, 0x40, 0xff, b'/', b'S', b's'] {
                    payloads.push(vec![a, b, c]);
                }
            }
        }
        for p in &payloads {
            for seq in [0u8, 1] {
                let b = packet(seq, p);
                let t = told(&b);
                for caps in CAPS {
                    let mut read = ExchangeShape::new(caps);
                    let mut shaped = ExchangeShape::new(caps);
                    if seq == 0 {
                        read.client(&b);
                        shaped.client_shaped(&b, t);
                        let ok = packet(1, &[0, 0, 0, 2, 0, 0, 0]);
                        read.server(&ok);
                        shaped.server_shaped(&ok, told(&ok));
                    } else {
                        for q in [&packet(0, b"\x03select 1")[..], &packet(0, b"\x0e")[..]] {
                            let mut read = ExchangeShape::new(caps);
                            let mut shaped = ExchangeShape::new(caps);
                            read.client(q);
                            shaped.client_shaped(q, told(q));
                            read.server(&b);
                            shaped.server_shaped(&b, t);
                            assert_eq!(shaped.plain(), read.plain(), "{b:x?} after {q:x?}");
                        }
                    }
                    assert_eq!(shaped.plain(), read.plain(), "{b:x?} {caps:?}");
                }
            }
        }
    }

    #[test]
    fn longest_packets_and_wrapped_numbers_are_told_as_read() {
        // A COM_QUERY of exactly 0xFFFFFF bytes: continued, never plain.
        let mut big = vec![0xff, 0xff, 0xff, 0, 0x03];
        big.resize(4 + 0xFF_FFFF, b'a');
        assert_eq!(PieceShape::of(&big), PieceShape::read(&big));
        assert_eq!(PieceShape::of(&big), PieceShape::Unknown);
        let mut big1 = big.clone();
        big1[3] = 1;
        big1[4] = 0;
        assert_eq!(PieceShape::of(&big1), PieceShape::read(&big1));
        // A resultset of 300 rows: the numbering wraps.
        let mut s = packet(1, &[1]);
        s.extend(packet(2, b"\x03def\x00"));
        s.extend(packet(3, &[0xfe, 0, 0, 2, 0]));
        let mut seq = 4u8;
        for _ in 0..300 {
            s.extend(packet(seq, b"\x011"));
            seq = seq.wrapping_add(1);
        }
        s.extend(packet(seq, &[0xfe, 0, 0, 2, 0]));
        assert_eq!(PieceShape::of(&s), PieceShape::read(&s));
        assert_eq!(PieceShape::of(&s), PieceShape::Resultset);
        // A row of 0xFFFFFF bytes in the middle is never told.
        let mut s2 = packet(1, &[1]);
        s2.extend(packet(2, b"\x03def\x00"));
        s2.extend(packet(3, &[0xfe, 0, 0, 2, 0]));
        let mut row = vec![0xff, 0xff, 0xff, 4, 0xfe];
        row.resize(4 + 0xFF_FFFF, b'x');
        s2.extend(row);
        s2.extend(packet(5, &[0xfe, 0, 0, 2, 0]));
        assert_eq!(PieceShape::of(&s2), PieceShape::read(&s2));
        // The same with a row whose first value is short (a later one 16 MB): 0x01-led.
        let mut s3 = packet(1, &[1]);
        s3.extend(packet(2, b"\x03def\x00"));
        s3.extend(packet(3, &[0xfe, 0, 0, 2, 0]));
        let mut row = vec![0xff, 0xff, 0xff, 4, 0x01, b'x', 0xfd];
        row.resize(4 + 0xFF_FFFF, b'x');
        s3.extend(row);
        s3.extend(packet(5, b"\x01y"));
        s3.extend(packet(6, &[0xfe, 0, 0, 2, 0]));
        assert_eq!(PieceShape::read(&s3), PieceShape::Unknown);
        assert_eq!(PieceShape::of(&s3), PieceShape::read(&s3));
    }

    /// MariaDB's metadata byte 0 ("no definitions follow"): `[1, 0]` is not one column with its
    /// definition. Read: AfterDefs, a row, the EOF ends the rows, then a packet after the end: Unknown.
    /// Caught by no test of the branch if `of_resultset` took `[n, 0]` as n columns.
    #[test]
    fn metadata_byte_zero_is_not_a_column_count_with_definitions() {
        let mut s = packet(1, &[1, 0]);
        s.extend(packet(2, b"\x03def"));
        s.extend(packet(3, &[0xfe, 0, 0, 2, 0]));
        s.extend(packet(4, b"\x011"));
        s.extend(packet(5, &[0xfe, 0, 0, 2, 0]));
        assert_eq!(PieceShape::read(&s), PieceShape::Unknown);
        assert_eq!(PieceShape::of(&s), PieceShape::read(&s));
    }

    /// A told response applied to a server side already fed: caught by no test of the branch if the
    /// `fresh` guard of `server_shaped` went (here server bytes came before the request).
    #[test]
    fn a_told_response_after_server_bytes_is_read() {
        let q = packet(0, b"\x03select 1");
        let ok = packet(1, &[0, 0, 0, 2, 0, 0, 0]);
        for caps in [None, Some(0)] {
            let mut read = ExchangeShape::new(caps);
            let mut shaped = ExchangeShape::new(caps);
            read.server(&ok);
            shaped.server_shaped(&ok, PieceShape::of(&ok));
            read.client(&q);
            shaped.client_shaped(&q, PieceShape::of(&q));
            read.server(&ok);
            shaped.server_shaped(&ok, PieceShape::of(&ok));
            assert_eq!(read.plain(), None);
            assert_eq!(shaped.plain(), read.plain());
        }
    }
}
