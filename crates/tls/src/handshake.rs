//! Handshake messages: their framing across records (a message may span several records, and a record
//! hold several messages), and the two hellos read in full (RFC 8446 4.1.2 and 4.1.3, RFC 5246 7.4.1).
//! Every other message is only followed by its type and length: its body is never kept.

use crate::suite::{CipherSuite, ProtocolVersion};

/// Handshake message types this crate acts on.
pub mod kind {
    /// ClientHello.
    pub const CLIENT_HELLO: u8 = 1;
    /// ServerHello (and, with the special random, HelloRetryRequest).
    pub const SERVER_HELLO: u8 = 2;
    /// NewSessionTicket.
    pub const NEW_SESSION_TICKET: u8 = 4;
    /// Finished.
    pub const FINISHED: u8 = 20;
    /// KeyUpdate (TLS 1.3).
    pub const KEY_UPDATE: u8 = 24;
}

/// A hello's body kept at most this long (a ClientHello with many extensions, post-quantum key shares
/// included, stays well under it).
const HELLO_CAP: usize = 1 << 16;

/// The random of a ServerHello that is a HelloRetryRequest (RFC 8446 4.1.3): SHA-256 of
/// "HelloRetryRequest".
pub const HELLO_RETRY_REQUEST_RANDOM: [u8; 32] = [
    0xCF, 0x21, 0xAD, 0x74, 0xE5, 0x9A, 0x61, 0x11, 0xBE, 0x1D, 0x8C, 0x02, 0x1E, 0x65, 0xB8, 0x91,
    0xC2, 0xA2, 0x11, 0x16, 0x7A, 0xBB, 0x8C, 0x5E, 0x07, 0x9E, 0x09, 0xE2, 0xC8, 0xA8, 0x33, 0x9C,
];

/// Extension numbers read.
mod ext {
    pub const ENCRYPT_THEN_MAC: u16 = 22;
    pub const SESSION_TICKET: u16 = 35;
    pub const PRE_SHARED_KEY: u16 = 41;
    pub const SUPPORTED_VERSIONS: u16 = 43;
}

/// A ClientHello, as far as following the connection needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientHello {
    /// The legacy version field (`0x0303` for TLS 1.2 and 1.3 clients).
    pub legacy_version: ProtocolVersion,
    /// The client random: the key of the key log.
    pub random: [u8; 32],
    /// The legacy session id (resumption by id in TLS 1.2; random filler in TLS 1.3).
    pub session_id_len: u8,
    /// The versions of `supported_versions`, in the client's order (empty when absent: TLS 1.2 or older).
    pub supported_versions: Vec<ProtocolVersion>,
    /// The client offered a PSK (TLS 1.3 resumption).
    pub offers_psk: bool,
    /// The client sent a session ticket (TLS 1.2 resumption by ticket), non-empty.
    pub offers_ticket: bool,
    /// The client asked for encrypt-then-MAC (RFC 7366).
    pub encrypt_then_mac: bool,
    /// The suites offered, in order.
    pub cipher_suites: Vec<CipherSuite>,
}

/// A ServerHello (or HelloRetryRequest).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerHello {
    /// The legacy version field (TLS 1.2's version; `0x0303` under TLS 1.3).
    pub legacy_version: ProtocolVersion,
    /// The server random.
    pub random: [u8; 32],
    /// The echoed or new session id.
    pub session_id: Vec<u8>,
    /// The suite chosen.
    pub cipher_suite: CipherSuite,
    /// The version `supported_versions` selected (TLS 1.3), if present.
    pub selected_version: Option<ProtocolVersion>,
    /// The server accepted a PSK (TLS 1.3 resumption).
    pub accepted_psk: bool,
    /// The server agreed to encrypt-then-MAC.
    pub encrypt_then_mac: bool,
}

impl ServerHello {
    /// The version in force: `supported_versions`' choice, else the legacy field.
    pub fn version(&self) -> ProtocolVersion {
        self.selected_version.unwrap_or(self.legacy_version)
    }

    /// Whether this is a HelloRetryRequest rather than a ServerHello.
    pub fn is_retry_request(&self) -> bool {
        self.random == HELLO_RETRY_REQUEST_RANDOM
    }
}

/// A cursor over a hello's body; every read is checked.
struct Reader<'a> {
    b: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, rest) = (self.b.get(..n)?, self.b.get(n..)?);
        self.b = rest;
        Some(head)
    }
    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }
    fn u16(&mut self) -> Option<u16> {
        self.take(2).map(|b| u16::from_be_bytes([b[0], b[1]]))
    }
    fn vec8(&mut self) -> Option<&'a [u8]> {
        let n = self.u8()?;
        self.take(usize::from(n))
    }
    fn vec16(&mut self) -> Option<&'a [u8]> {
        let n = self.u16()?;
        self.take(usize::from(n))
    }
    fn random(&mut self) -> Option<[u8; 32]> {
        let mut r = [0u8; 32];
        r.copy_from_slice(self.take(32)?);
        Some(r)
    }
}

/// Calls `f` for each extension of the block `block`; `None` if the block is malformed.
fn each_extension<'a>(block: &'a [u8], mut f: impl FnMut(u16, &'a [u8])) -> Option<()> {
    let mut r = Reader { b: block };
    while !r.b.is_empty() {
        let t = r.u16()?;
        let data = r.vec16()?;
        f(t, data);
    }
    Some(())
}

/// Reads a ClientHello's body (after the 4-byte handshake header).
pub fn parse_client_hello(body: &[u8]) -> Option<ClientHello> {
    let mut r = Reader { b: body };
    let legacy_version = ProtocolVersion(r.u16()?);
    let random = r.random()?;
    let session_id_len = u8::try_from(r.vec8()?.len()).ok()?;
    let suites = r.vec16()?;
    let cipher_suites = suites
        .chunks_exact(2)
        .map(|c| CipherSuite(u16::from_be_bytes([c[0], c[1]])))
        .collect();
    let _compression = r.vec8()?;
    let mut hello = ClientHello {
        legacy_version,
        random,
        session_id_len,
        supported_versions: Vec::new(),
        offers_psk: false,
        offers_ticket: false,
        encrypt_then_mac: false,
        cipher_suites,
    };
    if r.b.is_empty() {
        return Some(hello);
    }
    let block = r.vec16()?;
    each_extension(block, |t, data| match t {
        ext::SUPPORTED_VERSIONS => {
            let mut v = Reader { b: data };
            if let Some(list) = v.vec8() {
                hello.supported_versions = list
                    .chunks_exact(2)
                    .map(|c| ProtocolVersion(u16::from_be_bytes([c[0], c[1]])))
                    .collect();
            }
        }
        ext::PRE_SHARED_KEY => hello.offers_psk = true,
        ext::SESSION_TICKET => hello.offers_ticket = !data.is_empty(),
        ext::ENCRYPT_THEN_MAC => hello.encrypt_then_mac = true,
        _ => {}
    })?;
    Some(hello)
}

/// Reads a ServerHello's body (after the 4-byte handshake header).
pub fn parse_server_hello(body: &[u8]) -> Option<ServerHello> {
    let mut r = Reader { b: body };
    let legacy_version = ProtocolVersion(r.u16()?);
    let random = r.random()?;
    let session_id = r.vec8()?.to_vec();
    let cipher_suite = CipherSuite(r.u16()?);
    let _compression = r.u8()?;
    let mut hello = ServerHello {
        legacy_version,
        random,
        session_id,
        cipher_suite,
        selected_version: None,
        accepted_psk: false,
        encrypt_then_mac: false,
    };
    if r.b.is_empty() {
        return Some(hello);
    }
    let block = r.vec16()?;
    each_extension(block, |t, data| match t {
        ext::SUPPORTED_VERSIONS => {
            if let [a, b] = data {
                hello.selected_version = Some(ProtocolVersion(u16::from_be_bytes([*a, *b])));
            }
        }
        ext::PRE_SHARED_KEY => hello.accepted_psk = true,
        ext::ENCRYPT_THEN_MAC => hello.encrypt_then_mac = true,
        _ => {}
    })?;
    Some(hello)
}

/// A complete handshake message as the framing delivers it: its type, and its body when it is one that
/// is kept (the hellos); other bodies are passed over.
#[derive(Debug, PartialEq, Eq)]
pub struct Message<'a> {
    /// The handshake type.
    pub kind: u8,
    /// The body (after the 4-byte header), for the hellos and short messages; empty otherwise.
    pub body: &'a [u8],
    /// The body's length as its header says.
    pub len: usize,
}

/// Short messages kept whole besides the hellos (Finished, KeyUpdate: a few dozen bytes).
const SHORT_KEPT: usize = 64;

/// Follows one sender's handshake messages across the records that carry them.
#[derive(Debug, Default)]
pub struct HandshakeFraming {
    header: [u8; 4],
    have_header: usize,
    /// Bytes of the current message's body still to come.
    remaining: usize,
    /// The current message's body, when it is kept.
    body: Vec<u8>,
    keep: bool,
    /// Messages larger than a hello may be (a hello that is not one): counted, passed over.
    pub oversized: u64,
}

impl HandshakeFraming {
    /// Takes the plaintext of one handshake record, calling `f` for every message it completes.
    pub fn push(&mut self, mut bytes: &[u8], mut f: impl FnMut(Message<'_>)) {
        while !bytes.is_empty() {
            if self.have_header < 4 {
                let take = (4 - self.have_header).min(bytes.len());
                self.header[self.have_header..self.have_header + take]
                    .copy_from_slice(&bytes[..take]);
                self.have_header += take;
                bytes = &bytes[take..];
                if self.have_header < 4 {
                    return;
                }
                let len = usize::from(self.header[1]) << 16
                    | usize::from(self.header[2]) << 8
                    | usize::from(self.header[3]);
                let kind = self.header[0];
                let hello = matches!(kind, kind::CLIENT_HELLO | kind::SERVER_HELLO);
                self.keep = (hello && len <= HELLO_CAP) || len <= SHORT_KEPT;
                if hello && len > HELLO_CAP {
                    self.oversized += 1;
                }
                self.remaining = len;
                self.body.clear();
            }
            let take = self.remaining.min(bytes.len());
            if self.keep {
                self.body.extend_from_slice(&bytes[..take]);
            }
            self.remaining -= take;
            bytes = &bytes[take..];
            if self.remaining == 0 {
                let len = usize::from(self.header[1]) << 16
                    | usize::from(self.header[2]) << 8
                    | usize::from(self.header[3]);
                f(Message {
                    kind: self.header[0],
                    body: if self.keep { &self.body } else { &[] },
                    len,
                });
                self.have_header = 0;
                self.body.clear();
                if self.body.capacity() > 4096 {
                    self.body = Vec::new();
                }
            }
        }
    }

    /// Forgets a message in progress (bytes were lost, or the sender's keys changed).
    pub fn reset(&mut self) {
        self.have_header = 0;
        self.remaining = 0;
        self.body = Vec::new();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        let digits: Vec<u8> = s.bytes().filter(u8::is_ascii_hexdigit).collect();
        digits
            .chunks(2)
            .map(|p| u8::from_str_radix(std::str::from_utf8(p).unwrap(), 16).unwrap())
            .collect()
    }

    /// RFC 8448 3's ClientHello and ServerHello (handshake messages, header included).
    pub(crate) const CLIENT_HELLO: &str = "01 00 00 c0 03 03 cb 34 ec b1 e7 81 63
        ba 1c 38 c6 da cb 19 6a 6d ff a2 1a 8d 99 12 ec 18 a2 ef 62 83
        02 4d ec e7 00 00 06 13 01 13 03 13 02 01 00 00 91 00 00 00 0b
        00 09 00 00 06 73 65 72 76 65 72 ff 01 00 01 00 00 0a 00 14 00
        12 00 1d 00 17 00 18 00 19 01 00 01 01 01 02 01 03 01 04 00 23
        00 00 00 33 00 26 00 24 00 1d 00 20 99 38 1d e5 60 e4 bd 43 d2
        3d 8e 43 5a 7d ba fe b3 c0 6e 51 c1 3c ae 4d 54 13 69 1e 52 9a
        af 2c 00 2b 00 03 02 03 04 00 0d 00 20 00 1e 04 03 05 03 06 03
        02 03 08 04 08 05 08 06 04 01 05 01 06 01 02 01 04 02 05 02 06
        02 02 02 00 2d 00 02 01 01 00 1c 00 02 40 01";
    pub(crate) const SERVER_HELLO: &str = "02 00 00 56 03 03 a6 af 06 a4 12 18 60
        dc 5e 6e 60 24 9c d3 4c 95 93 0c 8a c5 cb 14 34 da c1 55 77 2e
        d3 e2 69 28 00 13 01 00 00 2e 00 33 00 24 00 1d 00 20 c9 82 88
        76 11 20 95 fe 66 76 2b db f7 c6 72 e1 56 d6 cc 25 3b 83 3d f1
        dd 69 b1 b0 4e 75 1f 0f 00 2b 00 02 03 04";

    #[test]
    fn rfc8448_hellos() {
        let mut framing = HandshakeFraming::default();
        let ch = hex(CLIENT_HELLO);
        let mut seen = Vec::new();
        // One byte at a time: the framing does not depend on where records cut the message.
        for b in &ch {
            framing.push(std::slice::from_ref(b), |m| {
                seen.push(parse_client_hello(m.body).unwrap())
            });
        }
        let hello = &seen[0];
        assert_eq!(hello.random[..4], [0xcb, 0x34, 0xec, 0xb1]);
        assert_eq!(hello.supported_versions, vec![ProtocolVersion::TLS1_3]);
        assert_eq!(
            hello.cipher_suites,
            vec![
                CipherSuite(0x1301),
                CipherSuite(0x1303),
                CipherSuite(0x1302)
            ]
        );
        assert!(!hello.offers_psk);
        let sh = hex(SERVER_HELLO);
        let mut server = None;
        framing.push(&sh, |m| server = parse_server_hello(m.body));
        let server = server.unwrap();
        assert_eq!(server.version(), ProtocolVersion::TLS1_3);
        assert_eq!(server.cipher_suite, CipherSuite(0x1301));
        assert!(!server.is_retry_request());
    }

    #[test]
    fn truncated_hellos_are_refused_not_misread() {
        let ch = hex(CLIENT_HELLO);
        for cut in 4..ch.len() - 1 {
            // Cut inside the extensions or before: never a hello with a wrong random.
            if let Some(h) = parse_client_hello(&ch[4..cut]) {
                assert_eq!(h.random[..4], [0xcb, 0x34, 0xec, 0xb1]);
                assert!(cut >= 4 + 2 + 32 + 1 + 8 + 2, "cut at {cut}");
            }
        }
    }
}
