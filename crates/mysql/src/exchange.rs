//! The shape of one request/response exchange read from packet headers alone, to tell whether decoding it
//! could change anything but the counts: a caller that only needs a session's state at its closes (who
//! was doing what when the connection broke) passes over the exchanges that are *plain* and decodes the
//! rest (see [`ExchangeShape::plain`]).
//!
//! An exchange is plain when the client sent exactly one packet, a request whose answer depends on
//! nothing the session remembers and changes nothing it remembers (`COM_QUERY` other than a `SET @...`,
//! which a replica's binlog dump reads later; `COM_PING`), and the server answered it with whole packets
//! numbered 1, 2, 3, ... whose last one ends a response (an OK or ERR alone; after a resultset's rows an
//! EOF, an OK in its place, or an ERR) and announces no further result. A session at rest before a plain
//! exchange ([`crate::Session::at_rest`]) is at rest after it, as a decoder would have left it, with one
//! more request answered: the caller can count it instead of decoding it.
//!
//! The bytes are read once, as they come, and nothing is copied: each piece's packet headers are walked,
//! and the request and the last response packet are judged where they lie in it. A request or a final
//! packet cut across pieces is not judged (the exchange is then decoded): it does not happen with the
//! small packets that make up nearly every exchange.

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
    /// A header broke the numbering, or a packet was as long as a packet can be (continued).
    irregular: bool,
    /// Bytes fed.
    bytes: u64,
    /// The first packet's first payload byte, when its header and that byte came in one piece.
    first_byte: Option<u8>,
    /// Packets whose payload begins with 0xFE (an EOF, or the OK that stands for it).
    fe_packets: u32,
    /// A packet's first payload byte was not in the piece of its header: not counted above.
    uncounted: bool,
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
            first_byte: None,
            fe_packets: 0,
            uncounted: false,
        }
    }

    /// Follows the packets of the next piece of the direction's bytes; returns the last packet begun in
    /// it whose payload it holds whole (its payload), if the piece ends with one.
    #[inline(always)]
    fn push<'b>(&mut self, bytes: &'b [u8]) -> Option<&'b [u8]> {
        self.bytes += bytes.len() as u64;
        let n = bytes.len();
        let mut i = 0usize;
        // The rest of the packet under way.
        if self.left != 0 || self.header_fill != 0 {
            i = self.finish_packet(bytes);
        }
        // Whole headers in this piece: only they are read (packets are usually small, several to a
        // segment), in registers.
        let mut last = None;
        if i + 4 <= n {
            if self.packets == 0 {
                self.first_byte = bytes.get(i + 4).copied();
            }
            let mut next_seq = self.next_seq;
            let mut irregular = false;
            let mut count = 0u32;
            let mut fe = 0u32;
            let mut at = 0usize;
            while let Some(&[a, b, c, seq]) = bytes.get(i..i + 4) {
                let len = u32::from_le_bytes([a, b, c, 0]);
                irregular |= (seq != next_seq) | (len >= MAX_PAYLOAD);
                next_seq = seq.wrapping_add(1);
                count += 1;
                at = i + 4;
                match bytes.get(at) {
                    Some(&first) => fe += u32::from(first == 0xfe),
                    None => self.uncounted |= len > 0,
                }
                i = at + len as usize;
            }
            self.next_seq = next_seq;
            self.irregular |= irregular;
            self.packets += count;
            self.fe_packets += fe;
            last = bytes.get(at..i);
        }
        if i > n {
            // The last packet goes on in the next pieces.
            self.left = (i - n) as u32;
        } else if i < n {
            // A header cut by the end of the piece.
            let rest = &bytes[i..];
            self.header[..rest.len()].copy_from_slice(rest);
            self.header_fill = rest.len() as u8;
        }
        last
    }

    /// Continues the packet under way (its header, then its payload) with the piece `bytes`; returns
    /// where the next packet's header begins in it (past its end if the packet goes on).
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
            let [a, b, c, seq] = self.header;
            let len = u32::from_le_bytes([a, b, c, 0]);
            self.irregular |= seq != self.next_seq || len >= MAX_PAYLOAD;
            self.next_seq = seq.wrapping_add(1);
            self.packets += 1;
            self.left = len;
            // Its first payload byte is in a later piece, or in this one: not counted either way.
            self.uncounted |= len > 0;
        }
        let n = (self.left as usize).min(bytes.len() - i);
        self.left -= n as u32;
        i + n
    }

    /// Whole packets only, numbered from the first, none continued.
    fn whole(&self) -> bool {
        !self.irregular && self.packets > 0 && self.left == 0 && self.header_fill == 0
    }
}

/// How the response's last packet seen so far ends it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    /// Not judged (no packet yet, or one cut across pieces), or not an end.
    None,
    /// An OK alone, or an EOF (or the OK for it) after a resultset.
    Ok,
    /// An ERR.
    Err,
}

/// One exchange's packets, fed as the reassembled bytes of each direction arrive.
#[derive(Debug, Clone, Copy)]
pub struct ExchangeShape {
    client: Framing,
    server: Framing,
    /// The capabilities in force: whether a query carries attributes.
    capabilities: Option<u32>,
    /// CLIENT_DEPRECATE_EOF is in force: a resultset's rows end with an OK (0xFE), and no EOF follows
    /// its column definitions.
    deprecate_eof: bool,
    /// The request (the client's first packet) depends on no state and leaves none.
    request_plain: bool,
    /// The response's first packet was a resultset's column count.
    resultset: bool,
    /// What the last response packet seen says.
    ending: Ending,
}

/// What a plain exchange's response was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlainExchange {
    /// The response was (or ended in) an ERR packet.
    pub error: bool,
}

impl Default for ExchangeShape {
    /// A shape for a session whose capabilities are not known, EOF packets in use.
    fn default() -> Self {
        ExchangeShape::new(None, false)
    }
}

impl ExchangeShape {
    /// A shape for the exchanges of a session with these `capabilities` in force
    /// ([`crate::Session::capabilities`]) and this convention for the end of a resultset's column
    /// definitions and rows ([`crate::Session::deprecates_eof`]).
    pub fn new(capabilities: Option<u32>, deprecate_eof: bool) -> Self {
        ExchangeShape {
            client: Framing::new(0),
            server: Framing::new(1),
            capabilities,
            deprecate_eof,
            request_plain: false,
            resultset: false,
            ending: Ending::None,
        }
    }

    /// Forgets the exchange, for the next one.
    #[inline]
    pub fn reset(&mut self) {
        *self = ExchangeShape::new(self.capabilities, self.deprecate_eof);
    }

    /// The next bytes the client sent.
    #[inline(always)]
    pub fn client(&mut self, bytes: &[u8]) {
        let first = self.client.packets == 0;
        let last = self.client.push(bytes);
        if first {
            // The request's payload, when this piece holds it whole (a later packet spoils the
            // exchange anyway).
            self.request_plain = last.is_some_and(|p| self.request_is_plain(p));
        }
    }

    /// The next bytes the server sent.
    #[inline(always)]
    pub fn server(&mut self, bytes: &[u8]) {
        let before = self.server.packets;
        let last = self.server.push(bytes);
        if before == 0 {
            // A column count (a length-encoded integer: no OK, ERR, LOCAL INFILE or EOF header).
            self.resultset = self
                .server
                .first_byte
                .is_some_and(|b| !matches!(b, 0x00 | 0xfb | 0xfe | 0xff));
        }
        if self.server.packets != before {
            self.ending = last.map_or(Ending::None, |p| self.ending_of(p));
        }
    }

    /// Whether a request's payload is one of a plain exchange.
    fn request_is_plain(&self, p: &[u8]) -> bool {
        match p.split_first() {
            Some((0x03, body)) => {
                let with_attrs = match self.capabilities {
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

    /// Whether the response packet `p` ends the response, given what came before it.
    fn ending_of(&self, p: &[u8]) -> Ending {
        let more = |st: Option<u16>| match st {
            Some(st) if st & status::SERVER_MORE_RESULTS_EXISTS == 0 => Ending::Ok,
            _ => Ending::None,
        };
        match p.first() {
            // ERR (with its code), other than MariaDB's progress report (code 0xFFFF), which more
            // packets follow.
            Some(0xff) if p.len() >= 3 && p.get(1..3) != Some(&[0xff, 0xff]) => Ending::Err,
            // OK alone.
            Some(0x00) if self.server.packets == 1 => more(ok_status(p)),
            // After a resultset's rows: the EOF that follows them (the second of the response: the
            // first ends the column definitions), or the OK that stands for it (0xFE, the only one).
            // A row never begins with 0xFE in a packet shorter than a packet can be.
            Some(0xfe)
                if self.resultset
                    && self.server.packets > 2
                    && !self.server.uncounted
                    && self.server.fe_packets == if self.deprecate_eof { 1 } else { 2 } =>
            {
                if p.len() < 9 {
                    more(p.get(3..5).map(|b| u16::from_le_bytes([b[0], b[1]])))
                } else {
                    more(ok_status(p))
                }
            }
            _ => Ending::None,
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
        let plain = self.request_plain
            && self.ending != Ending::None
            && self.client.packets == 1
            && self.client.whole()
            && self.server.whole();
        plain.then_some(PlainExchange {
            error: self.ending == Ending::Err,
        })
    }
}

/// The status flags of an OK packet (header byte, affected rows, last insert id, status).
fn ok_status(p: &[u8]) -> Option<u16> {
    let mut r = wire::Reader::new(p);
    r.u8()?;
    r.lenenc()?;
    r.lenenc()?;
    r.u16()
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
        let deprecate_eof = caps.is_some_and(|c| c & DEPRECATE_EOF != 0);
        let mut x = ExchangeShape::new(caps, deprecate_eof);
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
        let mut x = ExchangeShape::new(None, false);
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
        // The same EOF where the other convention is in force.
        assert_eq!(shape(&q, &resultset(1, &eof), 7, deprecate), None);
        // An ERR too short to hold its code.
        assert_eq!(shape(&q, &packet(1, &[0xff, 0x7a]), 7, None), None);
        // A response that starts with an OK does not go on as a resultset.
        let mut s = packet(1, OK);
        s.extend(packet(2, &eof));
        assert_eq!(shape(&q, &s, 7, None), None);
    }
}
