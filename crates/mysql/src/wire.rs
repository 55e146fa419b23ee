//! Pure decoding of MySQL protocol structures from byte slices.
//!
//! Every function here takes a slice that may be short, truncated (we keep only a
//! bounded prefix of each packet) or hostile, and answers `None` rather than
//! panicking. Nothing here allocates except where a caller asks for an owned
//! string.

/// Capability flags (`CLIENT_*`) as documented in the MySQL client/server protocol.
pub mod capability {
    /// `CLIENT_CONNECT_WITH_DB`: HandshakeResponse carries a schema name.
    pub const CLIENT_CONNECT_WITH_DB: u32 = 1 << 3;
    /// `CLIENT_COMPRESS`: the compressed protocol is used after authentication.
    pub const CLIENT_COMPRESS: u32 = 1 << 5;
    /// `CLIENT_LOCAL_FILES`: LOAD DATA LOCAL INFILE is allowed.
    pub const CLIENT_LOCAL_FILES: u32 = 1 << 7;
    /// `CLIENT_PROTOCOL_41`: the 4.1 protocol (HandshakeResponse41, SQLSTATE in ERR).
    pub const CLIENT_PROTOCOL_41: u32 = 1 << 9;
    /// `CLIENT_SSL`: TLS follows the SSLRequest packet.
    pub const CLIENT_SSL: u32 = 1 << 11;
    /// `CLIENT_SECURE_CONNECTION`: auth response is length-prefixed (1 byte).
    pub const CLIENT_SECURE_CONNECTION: u32 = 1 << 15;
    /// `CLIENT_MULTI_STATEMENTS`.
    pub const CLIENT_MULTI_STATEMENTS: u32 = 1 << 16;
    /// `CLIENT_MULTI_RESULTS`.
    pub const CLIENT_MULTI_RESULTS: u32 = 1 << 17;
    /// `CLIENT_PLUGIN_AUTH`: auth plugin names are exchanged.
    pub const CLIENT_PLUGIN_AUTH: u32 = 1 << 19;
    /// `CLIENT_CONNECT_ATTRS`: HandshakeResponse carries connection attributes.
    pub const CLIENT_CONNECT_ATTRS: u32 = 1 << 20;
    /// `CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA`: auth response is length-encoded.
    pub const CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA: u32 = 1 << 21;
    /// `CLIENT_SESSION_TRACK`.
    pub const CLIENT_SESSION_TRACK: u32 = 1 << 23;
    /// `CLIENT_DEPRECATE_EOF`: EOF_Packet replaced by OK_Packet with a 0xFE header.
    pub const CLIENT_DEPRECATE_EOF: u32 = 1 << 24;
    /// `CLIENT_OPTIONAL_RESULTSET_METADATA`: column definitions may be omitted.
    pub const CLIENT_OPTIONAL_RESULTSET_METADATA: u32 = 1 << 25;
    /// `CLIENT_ZSTD_COMPRESSION_ALGORITHM`.
    pub const CLIENT_ZSTD_COMPRESSION_ALGORITHM: u32 = 1 << 26;
    /// `CLIENT_QUERY_ATTRIBUTES`: COM_QUERY / COM_STMT_EXECUTE carry attributes.
    pub const CLIENT_QUERY_ATTRIBUTES: u32 = 1 << 27;
}

/// Server status flags (`SERVER_*`) carried by OK_Packet and EOF_Packet.
pub mod status {
    /// `SERVER_MORE_RESULTS_EXISTS`: another resultset / OK follows.
    pub const SERVER_MORE_RESULTS_EXISTS: u16 = 0x0008;
    /// `SERVER_QUERY_NO_GOOD_INDEX_USED`: the query found no good index.
    pub const SERVER_QUERY_NO_GOOD_INDEX_USED: u16 = 0x0010;
    /// `SERVER_QUERY_NO_INDEX_USED`: the query used no index.
    pub const SERVER_QUERY_NO_INDEX_USED: u16 = 0x0020;
    /// `SERVER_STATUS_CURSOR_EXISTS`: COM_STMT_EXECUTE opened a cursor; rows come via COM_STMT_FETCH.
    pub const SERVER_STATUS_CURSOR_EXISTS: u16 = 0x0040;
    /// `SERVER_STATUS_LAST_ROW_SENT`: a cursor is exhausted.
    pub const SERVER_STATUS_LAST_ROW_SENT: u16 = 0x0080;
}

/// Largest payload of one physical packet; a packet of exactly this length is continued.
pub const MAX_PAYLOAD: u32 = 0x00FF_FFFF;

/// A forward-only cursor over a byte slice whose every read is checked.
#[derive(Debug, Clone)]
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    pub(crate) fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }

    pub(crate) fn rest(&self) -> &'a [u8] {
        self.buf.get(self.pos..).unwrap_or(&[])
    }

    pub(crate) fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let s = self.buf.get(self.pos..end)?;
        self.pos = end;
        Some(s)
    }

    pub(crate) fn skip(&mut self, n: usize) -> Option<()> {
        self.bytes(n).map(|_| ())
    }

    pub(crate) fn u8(&mut self) -> Option<u8> {
        let b = *self.buf.get(self.pos)?;
        self.pos += 1;
        Some(b)
    }

    pub(crate) fn u16(&mut self) -> Option<u16> {
        let b = self.bytes(2)?;
        Some(u16::from_le_bytes([*b.first()?, *b.get(1)?]))
    }

    pub(crate) fn u24(&mut self) -> Option<u32> {
        let b = self.bytes(3)?;
        le_u24(b)
    }

    pub(crate) fn u32(&mut self) -> Option<u32> {
        let b = self.bytes(4)?;
        Some(u32::from_le_bytes([
            *b.first()?,
            *b.get(1)?,
            *b.get(2)?,
            *b.get(3)?,
        ]))
    }

    pub(crate) fn u64(&mut self) -> Option<u64> {
        let b = self.bytes(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Some(u64::from_le_bytes(a))
    }

    /// Length-encoded integer; 0xFB (NULL) and 0xFF (invalid) yield `None`.
    pub(crate) fn lenenc(&mut self) -> Option<u64> {
        match self.u8()? {
            b @ 0..=0xFA => Some(u64::from(b)),
            0xFC => self.u16().map(u64::from),
            0xFD => self.u24().map(u64::from),
            0xFE => self.u64(),
            _ => None,
        }
    }

    /// Length-encoded string; the length is bounded by the slice, never trusted.
    pub(crate) fn lenenc_bytes(&mut self) -> Option<&'a [u8]> {
        let n = self.lenenc()?;
        let n = usize::try_from(n).ok()?;
        self.bytes(n)
    }

    /// NUL-terminated string (without the NUL).
    pub(crate) fn nul_bytes(&mut self) -> Option<&'a [u8]> {
        let rest = self.rest();
        let at = rest.iter().position(|&b| b == 0)?;
        let s = rest.get(..at)?;
        self.pos += at + 1;
        Some(s)
    }

    /// NUL-terminated string, or the rest of the slice when the NUL is missing
    /// (several clients omit the trailing NUL of the last field).
    pub(crate) fn nul_or_rest(&mut self) -> &'a [u8] {
        match self.nul_bytes() {
            Some(s) => s,
            None => {
                let s = self.rest();
                self.pos = self.buf.len();
                s
            }
        }
    }
}

pub(crate) fn le_u24(b: &[u8]) -> Option<u32> {
    Some(u32::from(*b.first()?) | u32::from(*b.get(1)?) << 8 | u32::from(*b.get(2)?) << 16)
}

/// Lossy UTF-8, for names and messages that should be text.
pub(crate) fn text(b: &[u8]) -> String {
    text_in(String::new(), b)
}

/// Lossy UTF-8 of `b`, written into `buf`'s allocation (whatever it held is dropped): a string
/// recycled from a transaction the caller is done with saves an allocation and a free.
///
/// The bytes are validated after the copy, where they lie in the string's allocation, which the
/// allocator aligns to a word: the validator's ASCII fast path then reads them a word at a time from
/// the first byte, while a packet's bytes sit at any offset (a statement checked in place went byte by
/// byte up to the first aligned word, and its tail after the last pair of words).
pub(crate) fn text_in(buf: String, b: &[u8]) -> String {
    let mut v = buf.into_bytes();
    v.clear();
    v.extend_from_slice(b);
    match String::from_utf8(v) {
        Ok(s) => s,
        // Bad bytes (rare) pay for the repair.
        Err(_) => String::from_utf8_lossy(b).into_owned(),
    }
}

/// The server greeting (Protocol::Handshake, protocol version 10, or the ancient 9).
/// Fields past the end of a greeting cut short by a gap are `None`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Greeting<'a> {
    pub protocol: u8,
    pub version: Option<&'a [u8]>,
    pub connection_id: Option<u32>,
    pub capabilities: Option<u32>,
    pub character_set: Option<u8>,
    pub auth_plugin: Option<&'a [u8]>,
}

/// Parse a greeting. `complete` is false when the payload was cut by a gap
/// (snap length, loss): the fields that were kept are returned and the others
/// are `None`, as long as the protocol version byte is there.
pub(crate) fn parse_greeting(p: &[u8], complete: bool) -> Option<Greeting<'_>> {
    let mut r = Reader::new(p);
    let protocol = r.u8()?;
    if protocol != 10 && protocol != 9 {
        return None;
    }
    let mut g = Greeting {
        protocol,
        version: None,
        connection_id: None,
        capabilities: None,
        character_set: None,
        auth_plugin: None,
    };
    // Once the payload runs out: a complete greeting is malformed, a cut one stops here.
    fn cut(g: Greeting<'_>, complete: bool) -> Option<Greeting<'_>> {
        if complete {
            None
        } else {
            Some(g)
        }
    }
    let Some(version) = r.nul_bytes() else {
        return cut(g, complete);
    };
    g.version = Some(version);
    let Some(connection_id) = r.u32() else {
        return cut(g, complete);
    };
    g.connection_id = Some(connection_id);
    if protocol == 9 {
        g.capabilities = Some(0);
        return Some(g);
    }
    // auth-plugin-data-part-1, filler
    if r.skip(9).is_none() {
        return cut(g, complete);
    }
    let cap_low = match r.u16() {
        Some(c) => u32::from(c),
        // A complete greeting may stop before the capabilities (very old servers).
        None if complete => 0,
        None => return Some(g),
    };
    g.capabilities = Some(cap_low);
    let Some(cs) = r.u8() else { return Some(g) };
    g.character_set = Some(cs);
    let _status = r.u16();
    let cap_high = match r.u16() {
        Some(c) => u32::from(c),
        None if complete => 0,
        None => {
            // The upper half was cut: the flags are not known.
            g.capabilities = None;
            return Some(g);
        }
    };
    let caps = cap_low | cap_high << 16;
    g.capabilities = Some(caps);
    let auth_len = r.u8().unwrap_or(0);
    if r.skip(10).is_none() {
        return Some(g);
    }
    if caps & capability::CLIENT_SECURE_CONNECTION != 0 {
        // auth-plugin-data-part-2: max(13, len - 8) bytes.
        let n = usize::from(auth_len).saturating_sub(8).max(13);
        if r.skip(n).is_none() {
            return Some(g);
        }
    }
    if caps & capability::CLIENT_PLUGIN_AUTH != 0 && r.remaining() > 0 {
        g.auth_plugin = if complete {
            Some(r.nul_or_rest())
        } else {
            r.nul_bytes()
        };
    }
    Some(g)
}

/// HandshakeResponse41 / HandshakeResponse320 / SSLRequest as sent by the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HandshakeResponse<'a> {
    pub capabilities: u32,
    pub character_set: Option<u8>,
    /// `None` for an SSLRequest (the packet stops before the user name).
    pub user: Option<&'a [u8]>,
    pub schema: Option<&'a [u8]>,
    pub auth_plugin: Option<&'a [u8]>,
}

/// Parse a HandshakeResponse. `complete` is false when the payload was cut by
/// a gap: the capabilities (and what else was kept) are still returned, but
/// only NUL-terminated names are taken, and a cut packet is never an SSLRequest.
pub(crate) fn parse_handshake_response(p: &[u8], complete: bool) -> Option<HandshakeResponse<'_>> {
    let mut r = Reader::new(p);
    let low = r.u16()?;
    if u32::from(low) & capability::CLIENT_PROTOCOL_41 == 0 {
        // HandshakeResponse320: 2-byte capabilities, 3-byte max packet size.
        let caps = u32::from(low);
        let mut hr = HandshakeResponse {
            capabilities: caps,
            character_set: None,
            user: None,
            schema: None,
            auth_plugin: None,
        };
        if r.skip(3).is_none() {
            return if complete { None } else { Some(hr) };
        }
        if r.remaining() == 0 {
            return Some(hr);
        }
        hr.user = if complete {
            Some(r.nul_or_rest())
        } else {
            r.nul_bytes()
        };
        if caps & capability::CLIENT_CONNECT_WITH_DB != 0 {
            let _auth = r.nul_bytes();
            hr.schema = r.nul_bytes();
        }
        return Some(hr);
    }
    let high = r.u16()?;
    let caps = u32::from(low) | u32::from(high) << 16;
    let mut hr = HandshakeResponse {
        capabilities: caps,
        character_set: None,
        user: None,
        schema: None,
        auth_plugin: None,
    };
    if r.skip(4).is_none() {
        // max packet size
        return if complete { None } else { Some(hr) };
    }
    let Some(cs) = r.u8() else {
        return if complete { None } else { Some(hr) };
    };
    hr.character_set = Some(cs);
    if r.skip(23).is_none() {
        // filler
        return if complete { None } else { Some(hr) };
    }
    if r.remaining() == 0 {
        // SSLRequest (or, when cut, nothing kept past the filler).
        return Some(hr);
    }
    // A user name cut by the gap has no NUL: dropped rather than kept as a fragment.
    hr.user = if complete {
        Some(r.nul_or_rest())
    } else {
        match r.nul_bytes() {
            Some(u) => Some(u),
            None => return Some(hr),
        }
    };
    let auth_ok = if caps & capability::CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA != 0 {
        r.lenenc_bytes().is_some()
    } else if caps & capability::CLIENT_SECURE_CONNECTION != 0 {
        r.u8().and_then(|n| r.bytes(usize::from(n))).is_some()
    } else {
        r.nul_bytes().is_some()
    };
    if !auth_ok {
        return Some(hr);
    }
    if caps & capability::CLIENT_CONNECT_WITH_DB != 0 {
        hr.schema = r.nul_bytes();
    }
    if caps & capability::CLIENT_PLUGIN_AUTH != 0 {
        hr.auth_plugin = r.nul_bytes();
    }
    Some(hr)
}

/// COM_CHANGE_USER payload after the command byte.
pub(crate) struct ChangeUser<'a> {
    pub user: &'a [u8],
    pub schema: Option<&'a [u8]>,
    pub auth_plugin: Option<&'a [u8]>,
}

pub(crate) fn parse_change_user(body: &[u8], caps: Option<u32>) -> Option<ChangeUser<'_>> {
    let mut r = Reader::new(body);
    let user = r.nul_or_rest();
    // Unknown capabilities (mid-stream): every 4.1+ client uses the length-prefixed form.
    let secure = caps.is_none_or(|c| c & capability::CLIENT_SECURE_CONNECTION != 0);
    let auth = if secure {
        r.u8().and_then(|n| r.bytes(usize::from(n)))
    } else {
        r.nul_bytes()
    };
    let mut cu = ChangeUser {
        user,
        schema: None,
        auth_plugin: None,
    };
    if auth.is_none() {
        return Some(cu);
    }
    cu.schema = r.nul_bytes();
    if r.skip(2).is_some() && caps.is_none_or(|c| c & capability::CLIENT_PLUGIN_AUTH != 0) {
        cu.auth_plugin = r.nul_bytes();
    }
    Some(cu)
}

/// OK_Packet (header 0x00, or 0xFE when it ends a resultset under CLIENT_DEPRECATE_EOF).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct OkPacket {
    pub affected_rows: u64,
    pub last_insert_id: u64,
    pub status_flags: u16,
    pub warnings: u16,
}

pub(crate) fn parse_ok(p: &[u8]) -> Option<OkPacket> {
    let mut r = Reader::new(p);
    let h = r.u8()?;
    if h != 0x00 && h != 0xFE {
        return None;
    }
    let affected_rows = r.lenenc()?;
    let last_insert_id = r.lenenc()?;
    // Pre-4.1 servers end here; status and warnings then read as zero.
    let status_flags = r.u16().unwrap_or(0);
    let warnings = r.u16().unwrap_or(0);
    Some(OkPacket {
        affected_rows,
        last_insert_id,
        status_flags,
        warnings,
    })
}

/// EOF_Packet: 0xFE, warnings, status flags (4.1); just 0xFE before.
#[inline]
pub(crate) fn parse_eof(p: &[u8]) -> Option<OkPacket> {
    let mut r = Reader::new(p);
    if r.u8()? != 0xFE {
        return None;
    }
    let warnings = r.u16().unwrap_or(0);
    let status_flags = r.u16().unwrap_or(0);
    Some(OkPacket {
        status_flags,
        warnings,
        ..OkPacket::default()
    })
}

/// A terminator of rows: 0xFE-led and shorter than a full physical packet. A
/// text row can only start with 0xFE when its first value is at least 2^24 bytes
/// long, which makes its first physical packet exactly 0xFFFFFF long.
#[inline]
pub(crate) fn is_terminator(p: &[u8], len: u64) -> bool {
    p.first() == Some(&0xFE) && len < u64::from(MAX_PAYLOAD)
}

/// A terminator of rows: EOF_Packet (exactly 5 bytes in 4.1, 1 byte before) or,
/// under CLIENT_DEPRECATE_EOF, an OK_Packet with a 0xFE header (at least 7 bytes).
#[inline]
pub(crate) fn parse_terminator(p: &[u8], len: u64) -> Option<OkPacket> {
    if len < 7 {
        parse_eof(p)
    } else {
        parse_ok(p).or_else(|| parse_eof(p))
    }
}

/// ERR_Packet: 0xFF, error code, optional '#' + 5-byte SQLSTATE, message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ErrPacket<'a> {
    pub code: u16,
    pub sql_state: &'a [u8],
    pub message: &'a [u8],
}

pub(crate) fn parse_err(p: &[u8]) -> Option<ErrPacket<'_>> {
    let mut r = Reader::new(p);
    if r.u8()? != 0xFF {
        return None;
    }
    let code = r.u16()?;
    let rest = r.rest();
    if rest.first() == Some(&b'#') && rest.len() >= 6 {
        Some(ErrPacket {
            code,
            sql_state: rest.get(1..6).unwrap_or(&[]),
            message: rest.get(6..).unwrap_or(&[]),
        })
    } else {
        Some(ErrPacket {
            code,
            sql_state: &[],
            message: rest,
        })
    }
}

/// COM_STMT_PREPARE_OK.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PrepareOk {
    pub statement_id: u32,
    pub num_columns: u16,
    pub num_params: u16,
    /// `metadata_follows` under CLIENT_OPTIONAL_RESULTSET_METADATA; `true` when absent.
    pub metadata_follows: bool,
}

/// `complete` is false when a gap cut the payload: the statement id and the
/// counts (the first 9 bytes) are then enough.
pub(crate) fn parse_prepare_ok(p: &[u8], len: u64, complete: bool) -> Option<PrepareOk> {
    if len < 12 {
        return None;
    }
    let mut r = Reader::new(p);
    if r.u8()? != 0x00 {
        return None;
    }
    let statement_id = r.u32()?;
    let num_columns = r.u16()?;
    let num_params = r.u16()?;
    // filler, warning count; then byte 12, present only under
    // CLIENT_OPTIONAL_RESULTSET_METADATA (0 = RESULTSET_METADATA_NONE).
    let metadata_follows = match r.skip(3) {
        Some(()) => r.u8().is_none_or(|m| m != 0),
        None if complete => return None,
        None => true,
    };
    Some(PrepareOk {
        statement_id,
        num_columns,
        num_params,
        metadata_follows,
    })
}

/// The column-count packet that opens a resultset: a length-encoded integer,
/// plus one `metadata_follows` byte under CLIENT_OPTIONAL_RESULTSET_METADATA.
/// Returns (column count, metadata follows).
#[inline]
pub(crate) fn parse_column_count(p: &[u8], len: u64) -> Option<(u64, bool)> {
    let mut r = Reader::new(p);
    let n = r.lenenc()?;
    // MySQL caps a resultset at 4096 columns; allow headroom but refuse absurd counts.
    if n == 0 || n > 65_535 {
        return None;
    }
    let used = u64::try_from(p.len() - r.remaining()).ok()?;
    match len.checked_sub(used)? {
        0 => Some((n, true)),
        1 => Some((n, r.u8()? != 0)),
        _ => None,
    }
}

/// Length in the binary protocol of a value of MySQL field type `ty`, for
/// skipping query attribute values: `Fixed(n)`, or `LenEnc`/`ByteLen` prefixes.
enum BinLen {
    Fixed(usize),
    LenEnc,
    ByteLen,
}

fn binary_len(ty: u8) -> Option<BinLen> {
    Some(match ty {
        6 => BinLen::Fixed(0),                         // MYSQL_TYPE_NULL
        1 => BinLen::Fixed(1),                         // TINY
        2 | 13 => BinLen::Fixed(2),                    // SHORT, YEAR
        3 | 9 | 4 => BinLen::Fixed(4),                 // LONG, INT24, FLOAT
        5 | 8 => BinLen::Fixed(8),                     // DOUBLE, LONGLONG
        7 | 10 | 11 | 12 | 17..=19 => BinLen::ByteLen, // temporal types
        0 | 15 | 16 | 20 | 245..=255 => BinLen::LenEnc,
        _ => return None,
    })
}

/// Splits the COM_QUERY body (after the command byte) when CLIENT_QUERY_ATTRIBUTES
/// is in force: parameter_count, parameter_set_count, [null bitmap, new_params_bind_flag,
/// types and names, values], then the query text. Returns (attribute count, text).
pub(crate) fn split_query_attributes(body: &[u8]) -> Option<(u64, &[u8])> {
    let mut r = Reader::new(body);
    let count = r.lenenc()?;
    let _sets = r.lenenc()?;
    if count == 0 {
        return Some((0, r.rest()));
    }
    // Every parameter takes at least 3 bytes (type + empty name); refuse counts the
    // slice cannot hold, so the loops below are bounded by the data, not the field.
    if count > u64::try_from(body.len()).ok()? {
        return None;
    }
    let n = usize::try_from(count).ok()?;
    let bitmap = r.bytes(n.div_ceil(8))?;
    let bind = r.u8()?;
    if bind != 1 {
        return None;
    }
    // Types come first for all parameters, names after each type.
    let mut types_start = r.clone();
    for _ in 0..n {
        r.skip(2)?;
        r.lenenc_bytes()?;
    }
    for i in 0..n {
        let ty = types_start.u8()?;
        types_start.u8()?;
        types_start.lenenc_bytes()?;
        let is_null = bitmap.get(i / 8).is_some_and(|b| b & (1 << (i % 8)) != 0);
        if is_null {
            continue;
        }
        match binary_len(ty)? {
            BinLen::Fixed(k) => r.skip(k)?,
            BinLen::LenEnc => r.lenenc_bytes().map(|_| ())?,
            BinLen::ByteLen => {
                let k = r.u8()?;
                r.skip(usize::from(k))?
            }
        }
    }
    Some((count, r.rest()))
}

/// Guess, without capabilities (mid-stream), whether a COM_QUERY body starts with
/// a query-attribute prefix: SQL text starts with a printable byte or whitespace,
/// the prefix with a small count followed by parameter_set_count = 1.
pub(crate) fn looks_like_attribute_prefix(body: &[u8]) -> bool {
    match (body.first(), body.get(1)) {
        (Some(&c), Some(&1)) => c < 0x20 && !matches!(c, b'\t' | b'\n' | b'\r'),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lenenc_integers_of_every_width_decode_and_short_input_is_none() {
        assert_eq!(Reader::new(&[0xFA]).lenenc(), Some(250));
        assert_eq!(Reader::new(&[0xFC, 0x01, 0x02]).lenenc(), Some(0x0201));
        assert_eq!(Reader::new(&[0xFD, 1, 2, 3]).lenenc(), Some(0x030201));
        assert_eq!(
            Reader::new(&[0xFE, 1, 0, 0, 0, 0, 0, 0, 0]).lenenc(),
            Some(1)
        );
        assert_eq!(Reader::new(&[0xFE, 1, 0]).lenenc(), None);
        assert_eq!(Reader::new(&[0xFB]).lenenc(), None);
        assert_eq!(Reader::new(&[0xFF]).lenenc(), None);
        assert_eq!(Reader::new(&[]).lenenc(), None);
    }

    #[test]
    fn lenenc_string_longer_than_the_slice_is_refused() {
        assert_eq!(
            Reader::new(&[0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]).lenenc_bytes(),
            None
        );
    }

    #[test]
    fn err_packet_with_sqlstate() {
        let p = b"\xff\x7a\x04#42S02Table 'x.y' doesn't exist";
        let e = parse_err(p).unwrap();
        assert_eq!(e.code, 1146);
        assert_eq!(e.sql_state, b"42S02");
        assert_eq!(e.message, b"Table 'x.y' doesn't exist");
    }

    #[test]
    fn column_count_must_fill_the_packet() {
        assert_eq!(parse_column_count(&[3], 1), Some((3, true)));
        assert_eq!(parse_column_count(&[3, 0], 2), Some((3, false)));
        assert_eq!(parse_column_count(&[3, 1, 1], 3), None);
        assert_eq!(parse_column_count(&[0], 1), None);
    }

    #[test]
    fn query_attributes_prefix_without_parameters() {
        assert_eq!(
            split_query_attributes(b"\x00\x01select 1"),
            Some((0, &b"select 1"[..]))
        );
    }

    #[test]
    fn query_attributes_with_one_string_parameter() {
        // count 1, sets 1, null bitmap 0, bind flag 1, type 0xFE 0x00, name "n", value "v"
        let body = b"\x01\x01\x00\x01\xfe\x00\x01n\x01vselect 2";
        assert_eq!(split_query_attributes(body), Some((1, &b"select 2"[..])));
    }

    #[test]
    fn query_attributes_with_absurd_count_are_refused_without_looping() {
        let body = b"\xfe\xff\xff\xff\xff\xff\xff\xff\x7f\x01";
        assert_eq!(split_query_attributes(body), None);
    }

    #[test]
    fn cut_greeting_gives_what_was_kept() {
        // First 10 payload bytes of the MariaDB 10.11 greeting in fixtures/snaplen80.pcap.
        let p = b"\x0a5.5.5-10.";
        assert_eq!(parse_greeting(p, true), None);
        let g = parse_greeting(p, false).unwrap();
        assert_eq!((g.protocol, g.version, g.capabilities), (10, None, None));
        let mut p = b"\x0a8.0.36\x00".to_vec();
        p.extend_from_slice(&7u32.to_le_bytes());
        p.extend_from_slice(b"abcdefgh\x00\xff\xf7\x21\x02\x00");
        let g = parse_greeting(&p, false).unwrap();
        assert_eq!(g.version, Some(&b"8.0.36"[..]));
        assert_eq!(g.connection_id, Some(7));
        assert_eq!(g.capabilities, None, "upper half of the flags cut");
        let g = parse_greeting(&p, true).unwrap();
        assert_eq!(g.capabilities, Some(0xf7ff), "a short complete greeting");
        assert_eq!(parse_greeting(b"\x0b", false), None);
    }

    #[test]
    fn cut_handshake_response_gives_the_capabilities_and_no_name_fragment() {
        // First 10 payload bytes of the HandshakeResponse in fixtures/snaplen80.pcap.
        let p = [0x8c, 0xa2, 0xbf, 0x00, 0x00, 0x00, 0x10, 0x00, 0x2d, 0x00];
        assert_eq!(parse_handshake_response(&p, true), None);
        let hr = parse_handshake_response(&p, false).unwrap();
        assert_eq!(hr.capabilities, 0x00bf_a28c);
        assert_eq!((hr.character_set, hr.user), (Some(0x2d), None));
        let hr = parse_handshake_response(&p[..8], false).unwrap();
        assert_eq!(hr.character_set, None, "cut before the character set");
        let mut p = p.to_vec();
        p.extend_from_slice(&[0; 22]);
        p.extend_from_slice(b"ro");
        let hr = parse_handshake_response(&p, false).unwrap();
        assert_eq!(hr.user, None, "a cut name is not kept");
        assert_eq!(
            parse_handshake_response(&p, true).unwrap().user,
            Some(&b"ro"[..])
        );
        assert_eq!(parse_handshake_response(&[0x8c], false), None);
    }

    #[test]
    fn cut_prepare_ok_needs_only_the_id_and_counts() {
        let p = [0, 1, 0, 0, 0, 1, 0, 1, 0, 0];
        assert_eq!(parse_prepare_ok(&p, 12, true), None);
        let ok = parse_prepare_ok(&p, 12, false).unwrap();
        assert_eq!(
            (
                ok.statement_id,
                ok.num_columns,
                ok.num_params,
                ok.metadata_follows
            ),
            (1, 1, 1, true)
        );
        assert_eq!(parse_prepare_ok(&p[..8], 12, false), None);
    }
}
