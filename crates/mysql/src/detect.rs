//! Recognising MySQL from a few bytes: the server greeting on an unknown port,
//! and client command packets when a capture starts mid-connection or after a gap,
//! plain or inside the compressed protocol (CLIENT_COMPRESS).

use miniz_oxide::inflate::core::{decompress, inflate_flags, DecompressorOxide};
use miniz_oxide::inflate::TINFLStatus;

use crate::wire::{self, le_u24, MAX_PAYLOAD};

/// Answer of a check that may need more bytes than it has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The bytes have the shape asked about.
    Yes,
    /// They do not, whatever follows.
    No,
    /// The bytes so far cannot tell: ask again with more.
    NeedMore,
}

/// Whether the bytes a check is given may still grow: a turn that goes on, or all there will ever be
/// (the other side spoke, a close, bytes the capture does not hold, the end of the capture).
///
/// The checks that take one ([`greeting_verdict`], [`client_command_verdict`], ...) answer
/// [`Verdict::NeedMore`] on `Growing` bytes until more bytes could no longer change the answer, so that
/// where TCP cut a stream never changes what is recognised in it: a verdict on a prefix is the verdict
/// on every extension of it. On `Final` bytes they judge what there is and never need more.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Extent {
    /// More bytes may follow.
    Growing,
    /// Nothing follows these bytes.
    Final,
}

impl Extent {
    /// `v`, or when it needs bytes that will never come, what `on_what_there_is` says of those there are.
    pub(crate) fn settle(self, v: Verdict, on_what_there_is: impl FnOnce() -> bool) -> Verdict {
        match (v, self) {
            (Verdict::NeedMore, Extent::Final) => {
                if on_what_there_is() {
                    Verdict::Yes
                } else {
                    Verdict::No
                }
            }
            (v, _) => v,
        }
    }
}

impl From<bool> for Verdict {
    fn from(yes: bool) -> Verdict {
        if yes {
            Verdict::Yes
        } else {
            Verdict::No
        }
    }
}

fn is_text_start(b: u8) -> bool {
    b.is_ascii_graphic() || matches!(b, b' ' | b'\t' | b'\r' | b'\n') || b >= 0x80
}

/// Is `w` (starting at a candidate packet header) a plausible client command
/// packet? Looks at the header, the command byte and, for text commands, the
/// first byte of text; exact lengths are required for fixed-size commands.
pub(crate) fn client_command_at(w: &[u8]) -> Verdict {
    let (Some(len), Some(&seq)) = (le_u24(w), w.get(3)) else {
        return Verdict::NeedMore;
    };
    if seq != 0 || len == 0 {
        return Verdict::No;
    }
    let Some(&cmd) = w.get(4) else {
        return Verdict::NeedMore;
    };
    let next = w.get(5).copied();
    let text = |min: u32| -> Verdict {
        if len < min {
            return Verdict::No;
        }
        match next {
            None => Verdict::NeedMore,
            Some(b) if is_text_start(b) => Verdict::Yes,
            Some(_) => Verdict::No,
        }
    };
    let exact = |n: u32| if len == n { Verdict::Yes } else { Verdict::No };
    let at_least = |n: u32| if len >= n { Verdict::Yes } else { Verdict::No };
    match cmd {
        // COM_QUIT, COM_STATISTICS, COM_PROCESS_INFO, COM_DEBUG, COM_PING, COM_RESET_CONNECTION
        0x01 | 0x09 | 0x0a | 0x0d | 0x0e | 0x1f => exact(1),
        // COM_QUERY: text, or a query-attribute prefix (count, set count 1). Only the
        // packet's own bytes may decide: what follows its end is another packet, which
        // may or may not have arrived yet, so reading it would make the answer depend on
        // how TCP cut the stream.
        0x03 => {
            if len < 2 {
                return Verdict::No;
            }
            let body = w.get(5..).unwrap_or(&[]);
            let body = body.get(..body.len().min(len as usize - 1)).unwrap_or(&[]);
            match body {
                [] => Verdict::NeedMore,
                [b, ..] if is_text_start(*b) => Verdict::Yes,
                [_] if len >= 3 => Verdict::NeedMore,
                _ if wire::looks_like_attribute_prefix(body) => Verdict::Yes,
                _ => Verdict::No,
            }
        }
        // COM_INIT_DB, COM_FIELD_LIST, COM_CREATE_DB, COM_DROP_DB, COM_STMT_PREPARE, COM_CHANGE_USER
        0x02 | 0x04 | 0x05 | 0x06 | 0x16 | 0x11 => text(2),
        0x07 => exact(2), // COM_REFRESH
        0x08 => {
            if len <= 2 {
                Verdict::Yes
            } else {
                Verdict::No
            }
        } // COM_SHUTDOWN
        0x0c | 0x19 | 0x1a => exact(5), // COM_PROCESS_KILL, COM_STMT_CLOSE, COM_STMT_RESET
        0x1b => exact(3), // COM_SET_OPTION
        0x1c => exact(9), // COM_STMT_FETCH
        0x17 => at_least(10), // COM_STMT_EXECUTE
        0x18 => at_least(7), // COM_STMT_SEND_LONG_DATA
        0x12 => at_least(11), // COM_BINLOG_DUMP
        0x1e => at_least(19), // COM_BINLOG_DUMP_GTID
        0x15 => at_least(18), // COM_REGISTER_SLAVE
        _ => Verdict::No,
    }
}

/// Is `w` (starting at a candidate packet header) the start of a run of server
/// packets: a packet that fits the window followed by the header of the next one,
/// with the next sequence id? One packet alone says too little: a row, a column
/// definition or random bytes could look like any header.
pub(crate) fn server_packets_at(w: &[u8], window_cap: usize) -> Verdict {
    let (Some(len), Some(&seq)) = (le_u24(w), w.get(3)) else {
        return Verdict::NeedMore;
    };
    let len = len as usize;
    if len == 0 || len + 8 > window_cap {
        return Verdict::No;
    }
    let next = w.get(4 + len..).unwrap_or(&[]);
    match (le_u24(next), next.get(3)) {
        (Some(l2), Some(&s2)) if s2 == seq.wrapping_add(1) && l2 > 0 => Verdict::Yes,
        (Some(_), Some(_)) => Verdict::No,
        _ => Verdict::NeedMore,
    }
}

/// Judges a whole packet (sequence id, payload kept, length): does an answer begin with it?
pub(crate) type AnswerStart<'a> = &'a dyn Fn(u8, &[u8], u64) -> bool;

/// Is `w` a whole packet with which `starts` says an answer begins? One packet is enough here:
/// the caller knows what answer it waits for.
pub(crate) fn answer_start_at(w: &[u8], window_cap: usize, starts: AnswerStart<'_>) -> Verdict {
    let (Some(len), Some(&seq)) = (le_u24(w), w.get(3)) else {
        return Verdict::NeedMore;
    };
    if 4 + len as usize > window_cap {
        return Verdict::No;
    }
    match w.get(4..4 + len as usize) {
        Some(payload) if starts(seq, payload, u64::from(len)) => Verdict::Yes,
        Some(_) => Verdict::No,
        None => Verdict::NeedMore,
    }
}

/// Is `w` an ERR packet (protocol 4.1: marker 0xFF, an error code of 1000 or more, `#` and a
/// five-character SQLSTATE, then the message), alone? Its shape says enough by itself, unlike other
/// packets: an error the server sent just before it closed (ERR 1153 to a request over
/// max_allowed_packet, 1040 too many connections) is often its last packet, with none after it to
/// chain to, in a capture that joins the connection mid-way (the second file of a rotated set).
pub(crate) fn err_packet_at(w: &[u8], window_cap: usize) -> Verdict {
    // The marker, the code, `#` and the SQLSTATE.
    const SHAPE: usize = 9;
    /// MySQL's longest error message (MYSQL_ERRMSG_SIZE).
    const MESSAGE_MAX: usize = 512;
    let Some(len) = le_u24(w) else {
        return Verdict::NeedMore;
    };
    let len = len as usize;
    if !(SHAPE..=SHAPE + MESSAGE_MAX).contains(&len) || 4 + len > window_cap {
        return Verdict::No;
    }
    let payload = w.get(4..).unwrap_or(&[]);
    let shape_so_far = payload
        .iter()
        .take(SHAPE)
        .enumerate()
        .all(|(i, &b)| match i {
            0 => b == 0xFF,
            1 | 2 => true,
            3 => b == b'#',
            _ => b.is_ascii_uppercase() || b.is_ascii_digit(),
        });
    if !shape_so_far {
        return Verdict::No;
    }
    let Some(code) = payload.get(1..3).map(|c| u16::from_le_bytes([c[0], c[1]])) else {
        return Verdict::NeedMore;
    };
    if code < 1000 {
        return Verdict::No;
    }
    // The message: text, no control bytes. Judged whole, so that the verdict does not depend on how
    // many of its bytes have come.
    match payload.get(SHAPE..len) {
        Some(message) => Verdict::from(message.iter().all(|&b| b >= 0x20)),
        None => Verdict::NeedMore,
    }
}

/// Do these bytes, the start of one side's turn, begin with an ERR packet (marker 0xFF, a code of 1000
/// or more, `#` and a five-character SQLSTATE, a message of text)? The side is then the server, on a
/// connection the capture joined mid-way: the error it sent just before it closed says why it closed
/// even when the request it answered is not in the capture. A packet the capture cut (a snap length) is
/// judged by its marker, code and SQLSTATE.
pub fn error_packet_verdict(bytes: &[u8], extent: Extent) -> Verdict {
    let v = err_packet_at(bytes, usize::MAX);
    // Cut: what there is must hold the whole shape, and text after it.
    extent.settle(v, || {
        bytes.len() >= 4 + 9
            && bytes
                .get(13..)
                .is_some_and(|m| m.iter().all(|&b| b >= 0x20))
    })
}

/// [`server_packets_at`], a lone [`err_packet_at`], or where an expected answer begins (`starts`).
pub(crate) fn server_answer_at(
    w: &[u8],
    window_cap: usize,
    starts: Option<AnswerStart<'_>>,
) -> Verdict {
    match starts.map(|f| answer_start_at(w, window_cap, f)) {
        Some(Verdict::Yes) => Verdict::Yes,
        Some(Verdict::NeedMore) => Verdict::NeedMore,
        _ => match err_packet_at(w, window_cap) {
            Verdict::No => server_packets_at(w, window_cap),
            v => v,
        },
    }
}

/// A compressed-protocol packet's header: compressed payload length, sequence id,
/// and the length it inflates to (0: stored as is, not deflated).
pub(crate) fn compressed_header(w: &[u8]) -> Option<(u32, u8, u32)> {
    Some((le_u24(w)?, *w.get(3)?, le_u24(w.get(4..)?)?))
}

/// The zlib stream header (RFC 1950) MySQL's zlib writes: deflate with a 32 KiB
/// window, no preset dictionary, any compression level.
fn is_zlib_header(cmf: u8, flg: u8) -> bool {
    cmf == 0x78 && matches!(flg, 0x01 | 0x5E | 0x9C | 0xDA)
}

/// Inflates the start of a zlib stream, at most `limit` bytes; `None` if the bytes
/// are not a deflate stream. More input only ever extends what a prefix gave.
fn inflate_start(z: &[u8], limit: usize) -> Option<Vec<u8>> {
    // Rare (a candidate with a zlib header while hunting or recognising a connection):
    // a fresh inflater each time, boxed as it is 10 KiB.
    let mut inflater = Box::<DecompressorOxide>::default();
    let mut out = vec![0u8; limit];
    let flags = inflate_flags::TINFL_FLAG_PARSE_ZLIB_HEADER
        | inflate_flags::TINFL_FLAG_HAS_MORE_INPUT
        | inflate_flags::TINFL_FLAG_USING_NON_WRAPPING_OUTPUT_BUF;
    let (status, _, produced) = decompress(&mut inflater, z, &mut out, 0, flags);
    match status {
        TINFLStatus::Done | TINFLStatus::NeedsMoreInput | TINFLStatus::HasMoreOutput => {
            out.truncate(produced);
            Some(out)
        }
        _ => None,
    }
}

/// The captured part of a compressed packet's payload (its own bytes only).
fn compressed_payload(w: &[u8], clen: u32) -> &[u8] {
    let rest = w.get(7..).unwrap_or(&[]);
    rest.get(..rest.len().min(clen as usize)).unwrap_or(&[])
}

/// The start of a deflated payload, inflated (at most `limit` bytes), or the verdict
/// already known: not a zlib stream, or not enough of it yet. It is judged on the
/// whole payload, or on all the window holds of it: a later byte could show a stream
/// that inflated well so far to be corrupt, and a verdict must not change.
fn deflated_start(
    payload: &[u8],
    complete: bool,
    window_full: bool,
    limit: usize,
) -> Result<Vec<u8>, Verdict> {
    match payload {
        [] | [0x78] => return Err(Verdict::NeedMore),
        [cmf, flg, ..] if is_zlib_header(*cmf, *flg) => {}
        _ => return Err(Verdict::No),
    }
    if !complete && !window_full {
        return Err(Verdict::NeedMore);
    }
    inflate_start(payload, limit).ok_or(Verdict::No)
}

/// Is `w` a compressed packet carrying the start of a client command (sequence id
/// 0)? A client sends each command in compressed packets of its own: stored as is
/// when deflating would not make it smaller (always below 50 bytes), otherwise
/// deflated, then the start of the stream must inflate to a command packet that
/// fills what the header says it inflates to. A deflated payload whose first
/// output needs more bytes than the window holds is judged by its headers.
pub(crate) fn compressed_client_command_at(w: &[u8], window_cap: usize) -> Verdict {
    // Each header field is judged as soon as it is here: a plain command as short as
    // a compressed header must not wait for bytes that may never come.
    let Some(clen) = le_u24(w) else {
        return Verdict::NeedMore;
    };
    if clen < 5 || w.get(3).is_some_and(|&seq| seq != 0) {
        return Verdict::No;
    }
    let Some((clen, _, ulen)) = compressed_header(w) else {
        return Verdict::NeedMore;
    };
    let payload = compressed_payload(w, clen);
    let complete = payload.len() == clen as usize;
    // One command fills the compressed packet (a command of 16 MiB or more spans several).
    let fills = |inner: &[u8], total: u32| match le_u24(inner) {
        Some(len) if len != MAX_PAYLOAD && len + 4 != total => Verdict::No,
        _ => client_command_at(inner),
    };
    if ulen == 0 {
        return fills(payload, clen);
    }
    // Deflated only when that made it smaller.
    if clen >= ulen || ulen < 5 {
        return Verdict::No;
    }
    let inner = match deflated_start(payload, complete, w.len() >= window_cap, 64) {
        Ok(inner) => inner,
        Err(v) => return v,
    };
    match fills(&inner, ulen) {
        // Too little came out of what the window holds: the headers have to do.
        Verdict::NeedMore if !complete && inner.is_empty() => Verdict::Yes,
        Verdict::NeedMore => Verdict::No,
        v => v,
    }
}

/// Is `w` a compressed packet a server sent, at a boundary of the packets it
/// carries: what it carries (stored, or the start of its inflated stream) begins
/// with two chained packets, or is one whole packet followed by the next
/// compressed packet's header with the next sequence id.
pub(crate) fn compressed_server_packet_at(
    w: &[u8],
    window_cap: usize,
    starts: Option<AnswerStart<'_>>,
) -> Verdict {
    let Some((clen, seq, ulen)) = compressed_header(w) else {
        return Verdict::NeedMore;
    };
    if clen == 0 || (ulen != 0 && clen >= ulen) {
        return Verdict::No;
    }
    let payload = compressed_payload(w, clen);
    let complete = payload.len() == clen as usize;
    let (inner, inner_total) = if ulen == 0 {
        (std::borrow::Cow::Borrowed(payload), clen)
    } else {
        match deflated_start(payload, complete, w.len() >= window_cap, window_cap) {
            Ok(out) => (std::borrow::Cow::Owned(out), ulen),
            Err(v) => return v,
        }
    };
    let whole_inner = inner.len() == inner_total as usize;
    match server_answer_at(&inner, window_cap, starts) {
        Verdict::NeedMore => {}
        v => return v,
    }
    if !whole_inner {
        return if complete || w.len() >= window_cap {
            Verdict::No
        } else {
            Verdict::NeedMore
        };
    }
    // One packet that fills it exactly, then the next compressed packet.
    if le_u24(&inner).is_none_or(|len| len + 4 != inner_total) {
        return Verdict::No;
    }
    let next = w.get(7 + clen as usize..).unwrap_or(&[]);
    match compressed_header(next) {
        Some((c2, s2, _)) if c2 > 0 && s2 == seq.wrapping_add(1) => Verdict::Yes,
        Some(_) => Verdict::No,
        None if w.len() >= window_cap => Verdict::No,
        None => Verdict::NeedMore,
    }
}

/// Do these bytes, the first a server sent on a connection, look like a MySQL
/// server greeting? Accepts protocol 10 handshakes (a printable version string,
/// then connection id, scramble and capability flags) and the ERR_Packet a
/// server sends instead when it refuses the connection outright (e.g. 1130
/// "Host is not allowed to connect", 1040 "Too many connections").
pub fn looks_like_greeting(server_first_bytes: &[u8]) -> bool {
    let b = server_first_bytes;
    let (Some(len), Some(&seq)) = (le_u24(b), b.get(3)) else {
        return false;
    };
    if seq != 0 || !(5..=2048).contains(&len) {
        return false;
    }
    let payload = b.get(4..).unwrap_or(&[]);
    let payload = payload
        .get(..(len as usize).min(payload.len()))
        .unwrap_or(&[]);
    match payload.first() {
        Some(&10) => {
            let version_and_rest = payload.get(1..).unwrap_or(&[]);
            let Some(nul) = version_and_rest.iter().position(|&c| c == 0) else {
                // Cut by the snap length before the version's NUL: judge the version prefix captured.
                let cut_short = b.len() < 4 + len as usize;
                return cut_short
                    && len >= 20
                    && version_and_rest.len() >= 3
                    && version_and_rest.first().is_some_and(u8::is_ascii_digit)
                    && version_and_rest
                        .iter()
                        .all(|c| c.is_ascii_graphic() || *c == b' ');
            };
            let version = version_and_rest.get(..nul).unwrap_or(&[]);
            // "5.0.54", "8.0.36", "5.5.5-10.6.12-MariaDB": starts with a digit, all printable.
            let plausible_version = (1..=64).contains(&version.len())
                && version.first().is_some_and(u8::is_ascii_digit)
                && version.iter().all(|c| c.is_ascii_graphic() || *c == b' ');
            // Protocol 10 needs id (4) + scramble (8) + filler (1) + capabilities (2) after the version.
            plausible_version && (len as usize) >= 1 + nul + 1 + 15
        }
        Some(&0xFF) => {
            let code = payload.get(1..3).map(|c| u16::from_le_bytes([c[0], c[1]]));
            let msg = payload.get(3..).unwrap_or(&[]);
            code.is_some_and(|c| (1000..5000).contains(&c))
                && !msg.is_empty()
                && msg
                    .iter()
                    .all(|c| c.is_ascii_graphic() || *c == b' ' || *c >= 0x80)
        }
        _ => false,
    }
}

/// Do these client bytes start with a MySQL login (a HandshakeResponse41 or an SSLRequest: sequence id 1,
/// CLIENT_PROTOCOL_41, the 23-byte filler (zero but for its last 4, where MariaDB clients put their
/// extended capabilities), then a printable user name ended by NUL, or nothing for an SSLRequest)? A
/// capture that began between a greeting and its login shows this first.
pub fn looks_like_login(client_bytes: &[u8]) -> bool {
    let b = client_bytes;
    let (Some(len), Some(&seq)) = (le_u24(b), b.get(3)) else {
        return false;
    };
    let Some(p) = b.get(4..4 + len as usize) else {
        return false;
    };
    let caps = p
        .get(..4)
        .map_or(0, |c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]));
    let filler = p.get(9..28).is_some_and(|f| f.iter().all(|&z| z == 0));
    let user = match p.get(32..) {
        Some([]) => caps & wire::capability::CLIENT_SSL != 0,
        Some(rest) => rest.iter().position(|&c| c == 0).is_some_and(|nul| {
            rest.get(..nul)
                .is_some_and(|u| u.iter().all(|c| c.is_ascii_graphic() || *c >= 0x80))
        }),
        None => false,
    };
    seq == 1 && caps & wire::capability::CLIENT_PROTOCOL_41 != 0 && filler && user
}

/// [`looks_like_greeting`], judged on the whole greeting packet (at most 2,052 bytes), or on the
/// header and first byte where they already say no; on `Final` bytes, on what there is (a greeting cut
/// by the snap length).
pub fn greeting_verdict(server_first_bytes: &[u8], extent: Extent) -> Verdict {
    let b = server_first_bytes;
    let v = match (le_u24(b), b.get(3), b.get(4)) {
        (Some(len), Some(&seq), _) if seq != 0 || !(5..=2048).contains(&len) => Verdict::No,
        (_, _, Some(first)) if !matches!(first, 10 | 0xFF) => Verdict::No,
        (Some(len), Some(_), Some(_)) if b.len() >= 4 + len as usize => {
            looks_like_greeting(b).into()
        }
        _ => Verdict::NeedMore,
    };
    extent.settle(v, || looks_like_greeting(b))
}

/// [`looks_like_login`], judged on the whole login packet, or on its header, capabilities and filler
/// where they already say no.
pub fn login_verdict(client_bytes: &[u8], extent: Extent) -> Verdict {
    let b = client_bytes;
    let caps = b
        .get(4..8)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]));
    let filler = b.get(13..b.len().min(32)).unwrap_or(&[]);
    let v = match (le_u24(b), b.get(3)) {
        (Some(len), Some(&seq)) if seq != 1 || len < 32 => Verdict::No,
        (Some(len), Some(_)) if b.len() >= 4 + len as usize => looks_like_login(b).into(),
        _ if caps.is_some_and(|c| c & wire::capability::CLIENT_PROTOCOL_41 == 0) => Verdict::No,
        _ if filler.iter().any(|&z| z != 0) => Verdict::No,
        _ => Verdict::NeedMore,
    };
    extent.settle(v, || looks_like_login(b))
}

/// The most bytes [`client_command_verdict`] reads: the start of a long command's text (the text
/// check samples 256 bytes), or a compressed packet's headers and the start of its zlib stream.
const COMMAND_JUDGED_BYTES: usize = 512;

/// [`looks_like_client_command`], judged on the first bytes it reads: a compressed packet's 7-byte
/// header and payload, or a plain packet and the 3 bytes after it (which a compressed header would
/// hold), at most 512 bytes; or on the header alone where it already says no.
pub fn client_command_verdict(client_bytes: &[u8], extent: Extent) -> Verdict {
    let b = client_bytes;
    let Some(len) = le_u24(b) else {
        return extent.settle(Verdict::NeedMore, || false);
    };
    let judged = (7 + len as usize).min(COMMAND_JUDGED_BYTES);
    let v = match b.get(..judged) {
        Some(w) => looks_like_client_command(w).into(),
        None if client_command_at(b) == Verdict::No
            && compressed_client_command_at(b, judged) == Verdict::No =>
        {
            Verdict::No
        }
        None => Verdict::NeedMore,
    };
    extent.settle(v, || looks_like_client_command(b))
}

/// Packets in a run that [`packet_run_verdict`] takes for MySQL's: 16 headers in a row, each where the
/// previous packet ends and with the next sequence id, happen by chance about once in 2^120 offsets of
/// other bytes.
pub const PACKET_RUN: usize = 16;

/// The bytes a run of [`PACKET_RUN`] packets must fit in to be taken for one: rows are short, and a
/// search that waited for a header's length (up to 16 MiB, 16 times) would hold that much of a stream
/// that is not MySQL before it could say no.
pub const PACKET_RUN_BYTES: usize = 1 << 16;

/// Do these bytes start with a run of [`PACKET_RUN`] MySQL packets in sequence: each packet's header
/// (3-byte length, not empty, not continued; sequence id one more than the previous one's, modulo 256)
/// where the previous packet ends, all within `PACKET_RUN_BYTES` (64 KiB)? The rows of a resultset, joined mid-stream (a capture that began in
/// the middle of one, the last file of a rotated set), show nothing else until the client's next
/// command.
pub fn packet_run_verdict(bytes: &[u8], extent: Extent) -> Verdict {
    let mut at = 0usize;
    let mut seq: Option<u8> = None;
    for _ in 0..PACKET_RUN {
        let w = bytes.get(at..).unwrap_or(&[]);
        let (Some(len), Some(&s)) = (le_u24(w), w.get(3)) else {
            return extent.settle(Verdict::NeedMore, || false);
        };
        if len == 0 || len == MAX_PAYLOAD || seq.is_some_and(|p| s != p.wrapping_add(1)) {
            return Verdict::No;
        }
        seq = Some(s);
        at += 4 + len as usize;
        if at > PACKET_RUN_BYTES {
            return Verdict::No;
        }
    }
    Verdict::Yes
}

/// Do these server bytes start like a response to a command (sequence id 1) or a login (2): a packet
/// header with that sequence id and a non-empty payload? Together with a client command or login just
/// before it, this recognises MySQL on a connection whose handshake the capture missed.
pub fn response_verdict(server_bytes: &[u8], seq: u8, extent: Extent) -> Verdict {
    let v = match (le_u24(server_bytes), server_bytes.get(3)) {
        (Some(len), Some(&s)) if s != seq || len == 0 => Verdict::No,
        (Some(_), Some(_)) if server_bytes.len() >= 5 => Verdict::Yes,
        _ => Verdict::NeedMore,
    };
    extent.settle(v, || false)
}

/// Do these client bytes start with a MySQL command packet (sequence id 0, a
/// known `COM_*` byte with a plausible length), plain or in a compressed packet
/// (CLIENT_COMPRESS)? When the whole packet is present, COM_QUERY text must also
/// look like text, which makes a false positive on other protocols unlikely.
pub fn looks_like_client_command(client_bytes: &[u8]) -> bool {
    if compressed_client_command_at(client_bytes, client_bytes.len()) == Verdict::Yes {
        let Some((clen, _, ulen)) = compressed_header(client_bytes) else {
            return false;
        };
        let payload = compressed_payload(client_bytes, clen);
        return if ulen == 0 {
            looks_like_plain_command(payload)
        } else {
            inflate_start(payload, 4 + 256)
                .is_some_and(|inner| inner.is_empty() || looks_like_plain_command(&inner))
        };
    }
    looks_like_plain_command(client_bytes)
}

fn looks_like_plain_command(client_bytes: &[u8]) -> bool {
    if client_command_at(client_bytes) != Verdict::Yes {
        return false;
    }
    let len = le_u24(client_bytes).unwrap_or(0) as usize;
    let Some(payload) = client_bytes.get(4..4 + len) else {
        // Only part of the packet is here: the header check has to do.
        return true;
    };
    match payload.first() {
        Some(0x03) | Some(0x16) => {
            let body = payload.get(1..).unwrap_or(&[]);
            let text = if wire::looks_like_attribute_prefix(body) {
                match wire::split_query_attributes(body) {
                    Some((_, t)) => t,
                    None => return false,
                }
            } else {
                body
            };
            let sample = text.get(..text.len().min(256)).unwrap_or(&[]);
            !sample.is_empty() && sample.iter().all(|&c| is_text_start(c))
        }
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err_packet(code: u16, state: &[u8], message: &[u8]) -> Vec<u8> {
        let mut payload = vec![0xFF];
        payload.extend(code.to_le_bytes());
        payload.push(b'#');
        payload.extend(state);
        payload.extend(message);
        let mut p = (payload.len() as u32).to_le_bytes()[..3].to_vec();
        p.push(1);
        p.extend(payload);
        p
    }

    #[test]
    fn an_err_packet_is_told_by_its_shape_alone_and_only_when_whole() {
        let p = err_packet(
            1153,
            b"08S01",
            b"Got a packet bigger than 'max_allowed_packet' bytes",
        );
        assert_eq!(err_packet_at(&p, 2048), Verdict::Yes);
        for cut in 0..p.len() {
            assert_eq!(err_packet_at(&p[..cut], 2048), Verdict::NeedMore, "{cut}");
        }
        // Cut by the capture: the shape and the text kept are enough.
        assert_eq!(error_packet_verdict(&p[..20], Extent::Final), Verdict::Yes);
        assert_eq!(error_packet_verdict(&p[..10], Extent::Final), Verdict::No);
        // A control byte in the message: not the text of an error.
        assert_eq!(
            err_packet_at(&err_packet(1153, b"08S01", &[b'a', 0x1b]), 2048),
            Verdict::No
        );
        assert_eq!(
            err_packet_at(&err_packet(999, b"08S01", b"x"), 2048),
            Verdict::No
        );
        assert_eq!(
            err_packet_at(&err_packet(1040, b"08s01", b"x"), 2048),
            Verdict::No
        );
        assert_eq!(
            err_packet_at(&err_packet(1040, b"08S01", b"x"), 8),
            Verdict::No
        );
        let mut row = err_packet(1040, b"08S01", b"x");
        row[7] = b'!';
        assert_eq!(err_packet_at(&row, 2048), Verdict::No);
    }

    /// Greeting of the classic Wireshark sample (zeek-mysql/mysql.pcap, stream 0, first server segment).
    const MYSQL_5_0_GREETING: &str = "340000000a352e302e3534005e0000003e7e24347574682c002ca2210200000000000000000000000000003e36313249575a3e6668575800";

    /// The login of the same sample (frame 6: HandshakeResponse41, user "tfoerste").
    const MYSQL_5_0_LOGIN: &str = "3e00000185a603000000000121000000000000000000000000000000000000000000000074666f65727374650014eefd6d5562851bc5966a0b41236ae3f2315efcc4";
    /// nDPI's mysql.pcapng frame 6: a MariaDB client's login, its extended capabilities in the filler's
    /// last 4 bytes.
    const MARIADB_LOGIN: &str = "d600000184a6ff200000000121000000000000000000000000000000000000001d00000061646d696e0014e38721fbab8305d547465b19e40b1ce58bdf1b8f6d7973716c5f6e61746976655f70617373776f72640084035f6f73054c696e75780c5f636c69656e745f6e616d650a6c69626d617269616462045f706964063733373831320f5f636c69656e745f76657273696f6e05332e332e34095f706c6174666f726d067838365f36340c70726f6772616d5f6e616d65056d7973716c0c5f7365727665725f686f73740e3139322e3136382e38382e323031";
    /// Arkime's mysql-tls.pcap frame 6: an SSLRequest (CLIENT_SSL, nothing after the filler).
    const SSL_REQUEST: &str =
        "200000018faa3a00ffffff00210000000000000000000000000000000000000000000000";

    pub(crate) fn hex(s: &str) -> Vec<u8> {
        (0..s.len() / 2)
            .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn a_real_greeting_is_recognised_even_when_cut_short() {
        let g = hex(MYSQL_5_0_GREETING);
        assert!(looks_like_greeting(&g));
        assert!(looks_like_greeting(&g[..30]));
        // A snap length of 80 leaves ~14 bytes: the header, protocol 10 and the start of the version.
        assert!(looks_like_greeting(&g[..10]));
        // Too little of the version to judge.
        assert!(!looks_like_greeting(&g[..7]));
    }

    #[test]
    fn http_and_tls_are_not_greetings_nor_commands() {
        assert!(!looks_like_greeting(b"HTTP/1.1 200 OK\r\n\r\n"));
        assert!(!looks_like_greeting(
            b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"
        ));
        assert!(!looks_like_client_command(b"GET / HTTP/1.1\r\n"));
        assert!(!looks_like_client_command(
            b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"
        ));
    }

    #[test]
    fn a_login_is_recognised_from_its_filler_and_user() {
        let login = hex(MYSQL_5_0_LOGIN);
        assert!(looks_like_login(&login));
        assert!(looks_like_login(&hex(SSL_REQUEST)));
        assert!(looks_like_login(&hex(MARIADB_LOGIN)));
        // Not the whole packet, another sequence id, a byte in the filler, no NUL after the user.
        assert!(!looks_like_login(&login[..40]));
        let mut other = login.clone();
        other[3] = 0;
        assert!(!looks_like_login(&other));
        let mut filler = login.clone();
        filler[4 + 20] = 1;
        assert!(!looks_like_login(&filler));
        let mut user = login.clone();
        user[4 + 32 + 8] = b'x';
        user.truncate(4 + 32 + 9);
        user[..3].copy_from_slice(&[41, 0, 0]);
        assert!(!looks_like_login(&user));
        // Greetings and commands are no logins.
        assert!(!looks_like_login(&hex(MYSQL_5_0_GREETING)));
        assert!(!looks_like_login(&packet(0, b"\x03select 1")));
    }

    #[test]
    fn refusal_err_greeting_is_recognised() {
        let mut p = vec![0xFF];
        p.extend_from_slice(&1130u16.to_le_bytes());
        p.extend_from_slice(b"Host '10.0.0.1' is not allowed to connect to this MySQL server");
        let mut b = vec![p.len() as u8, 0, 0, 0];
        b.extend(p);
        assert!(looks_like_greeting(&b));
    }

    /// `02 00 00 00 03 02`: a 2-byte COM_QUERY whose one byte is not text, from the
    /// fuzz finding `min-of-crash-f2e2431b`. Whatever follows it is the next packet
    /// and must not change the verdict.
    #[test]
    fn a_short_query_is_judged_by_its_own_bytes() {
        let short = [0x02, 0, 0, 0, 0x03, 0x02];
        assert_eq!(client_command_at(&short), Verdict::No);
        assert_eq!(
            client_command_at(&[&short[..], &[0x01]].concat()),
            Verdict::No
        );
        // With a third byte the packet itself can hold the attribute prefix (count 2, set count 1).
        let attrs = [0x03, 0, 0, 0, 0x03, 0x02, 0x01];
        assert_eq!(client_command_at(&attrs[..6]), Verdict::NeedMore);
        assert_eq!(client_command_at(&attrs), Verdict::Yes);
    }

    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 4096, ..ProptestConfig::default() })]
        /// The boundary search asks again with more bytes only after `NeedMore`, so a
        /// verdict given on a prefix must be the verdict on every extension of it;
        /// otherwise where TCP cut the stream would change what is decoded. And only
        /// the packet's own bytes count: once it is whole, what follows is irrelevant.
        #[test]
        fn client_command_verdicts_depend_only_on_the_packets_own_bytes(
            head in prop_oneof![
                (prop_oneof![0u8..4, 0u8..12], prop_oneof![Just(0x03), 0u8..0x20])
                    .prop_map(|(len, cmd)| vec![len, 0, 0, 0, cmd]),
                proptest::collection::vec(any::<u8>(), 0..5),
            ],
            // Small values often, so that lengths, sequence ids and attribute counts line up.
            body in proptest::collection::vec(prop_oneof![0u8..4, any::<u8>()], 0..16),
            after in proptest::collection::vec(any::<u8>(), 0..16),
        ) {
            let w: Vec<u8> = [head, body].concat();
            let whole = client_command_at(&w);
            for cut in 0..w.len() {
                let v = client_command_at(&w[..cut]);
                prop_assert!(v == Verdict::NeedMore || v == whole, "{:?} at {}", v, cut);
            }
            if let Some(len) = le_u24(&w).filter(|&l| w.len() >= 4 + l as usize) {
                let packet = &w[..4 + len as usize];
                prop_assert_eq!(client_command_at(&[packet, &after[..]].concat()), client_command_at(packet));
            }
        }
    }

    /// A compressed-protocol packet of `inner`, deflated or stored.
    fn compressed(seq: u8, inner: &[u8], deflate: bool) -> Vec<u8> {
        let (body, ulen) = if deflate {
            (
                miniz_oxide::deflate::compress_to_vec_zlib(inner, 6),
                inner.len(),
            )
        } else {
            (inner.to_vec(), 0)
        };
        let mut v = (body.len() as u32).to_le_bytes()[..3].to_vec();
        v.push(seq);
        v.extend_from_slice(&(ulen as u32).to_le_bytes()[..3]);
        v.extend(body);
        v
    }

    fn packet(seq: u8, payload: &[u8]) -> Vec<u8> {
        let mut v = (payload.len() as u32).to_le_bytes()[..3].to_vec();
        v.push(seq);
        v.extend_from_slice(payload);
        v
    }

    #[test]
    fn compressed_commands_are_recognised_stored_or_deflated() {
        let short = packet(0, b"\x03show databases");
        let long = packet(
            0,
            b"\x03SELECT * FROM `process` WHERE `process`.`deleted_at` IS NULL AND `process`.`id` > 0",
        );
        for (inner, deflate) in [(&short, false), (&long, true), (&long, false)] {
            let c = compressed(0, inner, deflate);
            assert_eq!(
                compressed_client_command_at(&c, 512),
                Verdict::Yes,
                "{deflate}"
            );
            assert!(looks_like_client_command(&c));
            // The plain check never takes a compressed command for a plain one.
            assert_eq!(client_command_at(&c), Verdict::No);
        }
        // Plain commands are not compressed ones, and say so as soon as their header does.
        assert_eq!(compressed_client_command_at(&short, 512), Verdict::No);
        assert_eq!(compressed_client_command_at(&long, 512), Verdict::No);
        assert_eq!(
            compressed_client_command_at(b"\x01\x00\x00\x00\x0e", 512),
            Verdict::No
        );
        // A stored packet must hold the one command exactly; a deflated one must inflate to it.
        let mut loose = compressed(0, &short, false);
        loose[0] += 1;
        loose.push(0);
        assert_eq!(compressed_client_command_at(&loose, 512), Verdict::No);
        let mut garbled = compressed(0, &long, true);
        let n = garbled.len();
        garbled[9..n].iter_mut().for_each(|b| *b ^= 0x5A);
        assert_eq!(compressed_client_command_at(&garbled, 512), Verdict::No);
    }

    #[test]
    fn compressed_server_packets_are_found_at_their_boundaries() {
        // A resultset's start: column count, then a column definition.
        let mut rs = packet(1, &[1]);
        rs.extend(packet(
            2,
            b"\x03def\x00\x00\x00\x01a\x00\x0c\x21\x00\x0f\x00\x00\x00\xfd\x00\x00\x1f\x00\x00",
        ));
        for row in 0..20u8 {
            rs.extend(packet(3 + row, b"\x0bsome value."));
        }
        rs.extend(packet(23, b"\xfe\x00\x00\x02\x00"));
        for deflate in [false, true] {
            let c = compressed(1, &rs, deflate);
            assert_eq!(compressed_server_packet_at(&c, 2048, None), Verdict::Yes);
            // One byte later is no boundary.
            assert_eq!(
                compressed_server_packet_at(&c[1..], 2048, None),
                Verdict::No
            );
        }
        // One whole packet (an OK) in a stored compressed packet: the next compressed header decides.
        let ok = compressed(1, &packet(1, b"\x00\x00\x00\x02\x00\x00\x00"), false);
        assert_eq!(
            compressed_server_packet_at(&ok, 2048, None),
            Verdict::NeedMore
        );
        let next = compressed(2, &packet(2, b"\x00\x00\x00\x02\x00\x00\x00"), false);
        assert_eq!(
            compressed_server_packet_at(&[&ok[..], &next[..]].concat(), 2048, None),
            Verdict::Yes
        );
        let stray = compressed(7, &packet(2, b"\x00\x00\x00\x02\x00\x00\x00"), false);
        assert_eq!(
            compressed_server_packet_at(&[&ok[..], &stray[..]].concat(), 2048, None),
            Verdict::No
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2048, ..ProptestConfig::default() })]
        /// As for plain commands: a verdict given on a prefix of the window is the verdict on the
        /// whole window, so that where TCP cut the stream never changes what is found.
        #[test]
        fn compressed_verdicts_on_a_prefix_hold_for_the_whole_window(
            text in proptest::collection::vec(prop_oneof![Just(b'a'), any::<u8>()], 1..120),
            deflate in any::<bool>(),
            garble in proptest::collection::vec((0usize..140, any::<u8>()), 0..3),
            window in 16usize..200,
        ) {
            let mut inner = vec![0x03];
            inner.extend(text);
            let mut w = compressed(0, &packet(0, &inner), deflate);
            for (at, b) in garble {
                if let Some(x) = w.get_mut(at) {
                    *x = b;
                }
            }
            w.truncate(window);
            let server = |w: &[u8], cap| compressed_server_packet_at(w, cap, None);
            for check in [compressed_client_command_at, server] {
                let whole = check(&w, window);
                for cut in 0..w.len() {
                    let v = check(&w[..cut], window);
                    prop_assert!(v == Verdict::NeedMore || v == whole, "{:?} at {} of {:?}", v, cut, w);
                }
            }
        }
    }

    #[test]
    fn client_commands_are_recognised() {
        // COM_QUERY "select @@version_comment limit 1" from mysql.pcap stream 0.
        let q = hex("210000000373656c65637420404076657273696f6e5f636f6d6d656e74206c696d69742031");
        assert!(looks_like_client_command(&q));
        assert!(looks_like_client_command(b"\x01\x00\x00\x00\x0e"));
        assert!(!looks_like_client_command(b"\x02\x00\x00\x00\x0e\x00"));
        assert!(!looks_like_client_command(b"\x01\x00\x00\x01\x0e"));
        assert!(looks_like_client_command(
            b"\x0b\x00\x00\x00\x03\x00\x01select 1"
        ));
    }
}
