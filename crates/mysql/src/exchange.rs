//! The shape of one request/response exchange read from its packets' headers and first bytes, to tell
//! whether decoding it could change anything but the counts: a caller that only needs a session's state at
//! its closes (who was doing what when the connection broke) passes over the exchanges that are *plain*
//! and decodes the rest (see [`ExchangeShape::plain`]).
//!
//! An exchange is plain when the client sent exactly one packet, a request whose answer depends on
//! nothing the session remembers and changes nothing it remembers (`COM_QUERY` other than a `SET @...`,
//! which a replica's binlog dump reads later, and whose text does not end as a statement cut by a gap
//! does; `COM_PING`), and the server answered it with whole packets numbered 1, 2, 3, ... that the session's
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
}

impl OnPacket for Request {
    #[inline(always)]
    fn packet(&mut self, p: &[u8], len: u32, whole: bool) {
        if self.before == 0 && whole {
            // The first request: what its answer is read as.
            self.plain = ExchangeShape::request_is_plain(p, self.capabilities);
            self.reading = match p.first() {
                Some(0x03) => Reading::First,
                Some(0x0e) if len == 1 => Reading::Simple,
                _ => Reading::Other,
            };
        }
    }
}

/// Where the session's reader of responses would stand, packet by packet (its stages for a `COM_QUERY`,
/// and the one packet of a `COM_PING`'s answer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reading {
    /// Before the first packet of a `COM_QUERY`'s response.
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
    /// The request (the client's first packet, whole in its piece) depends on no state and leaves none.
    request_plain: bool,
    /// Where the reader of the response stands.
    reading: Reading,
}

/// What a plain exchange's response was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlainExchange {
    /// The response was (or ended in) an ERR packet.
    pub error: bool,
}

impl Default for ExchangeShape {
    /// A shape for a session whose capabilities are not known.
    fn default() -> Self {
        ExchangeShape::new(None)
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
        };
        self.client.push(bytes, &mut request);
        self.reading = request.reading;
        self.request_plain = request.plain;
    }

    /// The next bytes the server sent.
    #[inline(always)]
    pub fn server(&mut self, bytes: &[u8]) {
        let mut reading = self.reading;
        self.server.push(bytes, &mut reading);
        self.reading = reading;
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
            _ => false,
        }
    }

    /// Bytes the client and the server sent.
    pub fn bytes(&self) -> (u64, u64) {
        (self.client.bytes, self.server.bytes)
    }

    /// Whether the exchange is plain (see the module's documentation), and how it ended if it is; `None`
    /// when decoding it could tell more than that it was answered.
    #[inline]
    pub fn plain(&self) -> Option<PlainExchange> {
        let Reading::Done { error } = self.reading else {
            return None;
        };
        let plain = self.request_plain
            && self.client.packets == 1
            && self.client.whole()
            && self.server.whole();
        plain.then_some(PlainExchange { error })
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
        verdicts[0]
    }

    fn query(text: &str) -> Vec<u8> {
        packet(0, &[&[0x03][..], text.as_bytes()].concat())
    }

    const OK: &[u8] = &[0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00];
    const ERR_1146: &[u8] = b"\xff\x7a\x04#42S02Table 'db.t' doesn't exist";
    const PLAIN: Option<PlainExchange> = Some(PlainExchange { error: false });
    const ERROR: Option<PlainExchange> = Some(PlainExchange { error: true });

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
        for command in [0x02u8, 0x11, 0x16, 0x17, 0x12, 0x1e, 0x1f] {
            let r = packet(0, &[command, 1, 0, 0, 0]);
            assert_eq!(shape(&r, &packet(1, OK), 7, None), None, "{command:#x}");
        }
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
}
