//! One TLS connection, both directions: records framed from each sender's ordered bytes, the hellos read,
//! the keys taken from a key log and put in force where each version puts them, every protected record
//! opened (or counted as not opened, and why), the application data handed on with the segment each byte
//! came in, and the facts that need no key: version, cipher suite, when the handshake ended, and the
//! timing of the records ([`crate::EstimatedExchange`]).

use crate::cipher::{Framing, OpenError, Opened, Opener, TAG_LEN};
use crate::estimate::{EstimatedExchange, Estimator, ExchangeEnd, MIN_MESSAGE};
use crate::handshake::{self, kind, HandshakeFraming};
use crate::keylog::{ClientRandom, KeyLog, Secret, SessionSecrets};
use crate::origin::{At, Sender};
use crate::record::{ContentType, RecordHeader, HEADER_LEN};
use crate::schedule::{tls12_keys, tls13_next_traffic_secret, tls13_traffic_keys};
use crate::suite::{CipherSuite, ProtocolVersion, RecordProtection, SuiteParameters};

/// What the connection hands on, per sender and in order.
#[derive(Debug, PartialEq, Eq)]
pub enum Plaintext<'a> {
    /// Application data, authenticated and decrypted, with the segment that carried its first byte (a
    /// record spread over several segments is handed on in as many pieces).
    Data(&'a [u8], At),
    /// About this many bytes of application data could not be read (a record that did not
    /// authenticate, or bytes the capture lost), at the segment where that was found.
    Missing(u64, At),
}

/// Whether the keys of a connection are known, and if not why.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeyStatus {
    /// No key log was given.
    NoKeyLog,
    /// The ClientHello was not seen (the capture began after it): no client random to look up.
    NoHandshake,
    /// The key log holds no secret for this handshake's client random.
    NotInKeyLog,
    /// The key log holds this handshake, but not the secrets its version needs (TLS 1.2 needs
    /// `CLIENT_RANDOM`; TLS 1.3 the traffic secrets).
    Incomplete,
    /// The version or cipher suite is one this crate does not decrypt.
    Unsupported,
    /// The keys are known and in force.
    Found,
}

/// How the handshake resumed an earlier session, if it did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Resumption {
    /// A full handshake.
    None,
    /// TLS 1.2, by session id (the server echoed the client's).
    SessionId,
    /// TLS 1.2, by session ticket.
    Ticket,
    /// TLS 1.3, by a pre-shared key (a ticket of an earlier connection).
    PreSharedKey,
}

/// An alert, by level and description (RFC 8446 6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Alert {
    /// 1 warning, 2 fatal.
    pub level: u8,
    /// 0 close_notify, 20 bad_record_mac, 40 handshake_failure, ...
    pub description: u8,
}

/// What is known of a TLS connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFacts {
    /// The version in force, from the ServerHello.
    pub version: Option<ProtocolVersion>,
    /// The cipher suite the server chose.
    pub cipher_suite: Option<CipherSuite>,
    /// Whether and how the handshake resumed a session.
    pub resumption: Resumption,
    /// The server asked the client to try again (TLS 1.3 HelloRetryRequest).
    pub retried: bool,
    /// The (first) ClientHello's record: where the handshake began.
    pub client_hello: Option<At>,
    /// The end of the handshake: the last Finished (the client's for TLS 1.3 and a resumed TLS 1.2, the
    /// server's for a full TLS 1.2 handshake), when the record that carries it was seen.
    pub handshake_done: Option<At>,
    /// Whether the keys are known.
    pub keys: KeyStatus,
    /// Protected records opened.
    pub records_decrypted: u64,
    /// Application data decrypted and handed on, bytes.
    pub plaintext_bytes: u64,
    /// Protected records that did not authenticate with the keys in force: never handed on.
    pub records_failed: u64,
    /// Their bytes on the wire.
    pub failed_bytes: u64,
    /// The first record that did not authenticate.
    pub first_failure: Option<At>,
    /// Protected records not decrypted (no keys, or no more after too many failures), and their bytes.
    pub records_undecrypted: u64,
    /// Bytes of those records.
    pub undecrypted_bytes: u64,
    /// Bytes that were not records (framing lost after a gap or damage), passed over.
    pub skipped_bytes: u64,
    /// Gaps in either direction's bytes (loss, snap length).
    pub gaps: u64,
    /// Bytes of records cut by the end of the connection or of the capture.
    pub truncated_bytes: u64,
    /// KeyUpdates followed (TLS 1.3).
    pub key_updates: u64,
    /// The last alert each side sent that could be read (client, server).
    pub alerts: [Option<Alert>; 2],
    /// Server records that arrived with no request open, after the handshake (tickets, notices).
    pub unsolicited_records: u64,
}

impl Default for TlsFacts {
    fn default() -> Self {
        TlsFacts {
            version: None,
            cipher_suite: None,
            resumption: Resumption::None,
            retried: false,
            client_hello: None,
            handshake_done: None,
            keys: KeyStatus::NoKeyLog,
            records_decrypted: 0,
            plaintext_bytes: 0,
            records_failed: 0,
            failed_bytes: 0,
            first_failure: None,
            records_undecrypted: 0,
            undecrypted_bytes: 0,
            skipped_bytes: 0,
            gaps: 0,
            truncated_bytes: 0,
            key_updates: 0,
            alerts: [None; 2],
            unsolicited_records: 0,
        }
    }
}

impl TlsFacts {
    /// From the ClientHello to the end of the handshake, when both were seen.
    pub fn handshake_ns(&self) -> Option<u64> {
        let (a, b) = (self.client_hello?, self.handshake_done?);
        b.ts_ns.checked_sub(a.ts_ns)
    }
}

/// Records that fail in a row before a sender's decryption is given up (its keys are wrong, or it lost
/// its place): past this, its records are counted as not decrypted rather than tried.
const FAILURES_BEFORE_GIVING_UP: u32 = 16;

/// Sequence numbers tried for the first record after a gap that crossed record boundaries.
const SEQUENCE_TRIALS: u64 = 64;

/// Nested re-hunts within one record's bytes before giving up on a sender (each drops a byte).
const REHUNT_DEPTH: u32 = 8;

/// Where a sender's keys stand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Epoch {
    /// Records are not protected (before the keys change).
    Plain,
    /// TLS 1.3, after the ServerHello: handshake traffic keys, until this sender's Finished.
    Handshake,
    /// Application traffic keys (TLS 1.3), or TLS 1.2 after this sender's ChangeCipherSpec.
    Protected,
}

/// One sender's state.
struct Direction {
    header: [u8; HEADER_LEN],
    have: usize,
    current: Option<RecordHeader>,
    remaining: usize,
    keep: bool,
    /// Bytes of the current record lost to a gap: it cannot be opened, but its framing holds.
    damaged: bool,
    body: Vec<u8>,
    /// Where each segment's bytes begin in `body`, and the segment.
    marks: Vec<(u32, At)>,
    first: At,
    last: At,
    /// Framing was lost: looking for the next record header.
    hunting: bool,
    /// The record being framed was found by hunting: its sequence number is not known.
    tentative: bool,
    /// Bytes lost to gaps since the last record whose number is known.
    lost_since_known: u64,
    epoch: Epoch,
    opener: Option<Box<Opener>>,
    seq: u64,
    /// TLS 1.2: the keys a ChangeCipherSpec puts in force.
    pending: Option<Box<Opener>>,
    /// TLS 1.3: the traffic secret in force (for a KeyUpdate), and the application secret the Finished
    /// switches to.
    secret: Option<Secret>,
    application_secret: Option<Secret>,
    handshake: HandshakeFraming,
    failures_in_row: u32,
    /// This sender's records are no longer tried (counted as not decrypted).
    given_up: bool,
    changed_cipher_spec: bool,
    /// This sender's Finished (for a TLS 1.2 handshake's end).
    finished: Option<At>,
    /// Records opened under the keys in force and their mean length, to guess how many a gap held.
    records_opened: u64,
    body_bytes_opened: u64,
}

impl Default for Direction {
    fn default() -> Self {
        Direction {
            header: [0; HEADER_LEN],
            have: 0,
            current: None,
            remaining: 0,
            keep: false,
            damaged: false,
            body: Vec::new(),
            marks: Vec::new(),
            first: At::default(),
            last: At::default(),
            hunting: false,
            tentative: false,
            lost_since_known: 0,
            epoch: Epoch::Plain,
            opener: None,
            seq: 0,
            pending: None,
            secret: None,
            application_secret: None,
            handshake: HandshakeFraming::default(),
            failures_in_row: 0,
            given_up: false,
            changed_cipher_spec: false,
            finished: None,
            records_opened: 0,
            body_bytes_opened: 0,
        }
    }
}

/// The client's hello, as far as later steps need it.
#[derive(Debug, Clone, Copy)]
struct Offer {
    random: ClientRandom,
    encrypt_then_mac: bool,
    offers_ticket: bool,
    session_id_len: u8,
}

/// A TLS connection followed from its first bytes (its ClientHello), decrypting what a key log allows.
///
/// Feed each sender's bytes in order ([`TlsConnection::feed`]), with the key log (or none); the
/// application data comes out through the callback, per sender, in order. The state is the
/// connection's alone, so where TCP cut the stream, or how a capture was split, changes nothing.
pub struct TlsConnection {
    dirs: [Direction; 2],
    offer: Option<Offer>,
    secrets: Option<SessionSecrets>,
    suite: Option<&'static SuiteParameters>,
    tls13: bool,
    /// A ServerHello (not a HelloRetryRequest) was read.
    server_hello: bool,
    /// TLS 1.3: the client's first protected record after the ServerHello (its Finished) was seen.
    client_finished_seen: bool,
    facts: TlsFacts,
    estimator: Estimator,
    /// Plaintext of an opened record, reused.
    scratch: Vec<u8>,
}

impl Default for TlsConnection {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for TlsConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsConnection")
            .field("facts", &self.facts)
            .finish_non_exhaustive()
    }
}

impl TlsConnection {
    /// A connection about to send its ClientHello.
    pub fn new() -> Self {
        TlsConnection {
            dirs: [Direction::default(), Direction::default()],
            offer: None,
            secrets: None,
            suite: None,
            tls13: false,
            server_hello: false,
            client_finished_seen: false,
            facts: TlsFacts::default(),
            estimator: Estimator::default(),
            scratch: Vec::new(),
        }
    }

    /// What is known so far.
    pub fn facts(&self) -> &TlsFacts {
        &self.facts
    }

    /// Whether application data is being decrypted: the keys are known and in force, and neither
    /// sender gave up.
    pub fn decrypting(&self) -> bool {
        self.facts.keys == KeyStatus::Found && !self.dirs.iter().any(|d| d.given_up)
    }

    /// Exchanges estimated from record timing that ended since the last call.
    pub fn take_exchanges(&mut self) -> std::vec::Drain<'_, EstimatedExchange> {
        self.estimator.done.drain(..)
    }

    /// Whether exchanges wait to be taken.
    pub fn has_exchanges(&self) -> bool {
        !self.estimator.done.is_empty()
    }

    /// In-order bytes from `from`, carried by the segment `at`. `keys` is looked up at the ClientHello.
    pub fn feed(
        &mut self,
        from: Sender,
        bytes: &[u8],
        at: At,
        keys: Option<&KeyLog>,
        out: &mut impl FnMut(Sender, Plaintext<'_>),
    ) {
        self.feed_dir(from.index(), bytes, at, keys, out, 0);
    }

    /// `len` bytes of `from` are missing (loss, snap length). Inside a record, its framing holds and the
    /// record is counted as unreadable; across record boundaries, the sender looks for the next record
    /// and, when decrypting, tries the sequence numbers the gap may have skipped.
    pub fn gap(
        &mut self,
        from: Sender,
        len: u64,
        at: At,
        out: &mut impl FnMut(Sender, Plaintext<'_>),
    ) {
        self.facts.gaps += 1;
        let i = from.index();
        let d = &mut self.dirs[i];
        if d.current.is_some() && len < d.remaining as u64 {
            d.remaining -= len as usize;
            d.damaged = true;
            d.last = at;
            return;
        }
        // The gap ends the current record (if any) and takes unknown record headers with it.
        let mut lost = len;
        if d.current.take().is_some() {
            lost = lost.saturating_sub(d.remaining as u64);
            d.body.clear();
            d.marks.clear();
        }
        d.have = 0;
        d.remaining = 0;
        d.hunting = true;
        d.tentative = false;
        d.lost_since_known += lost;
        d.handshake.reset();
        if d.opener.is_some() {
            out(from, Plaintext::Missing(len, at));
        }
    }

    /// The connection closed (the first FIN or RST of either side): the exchange open ends so.
    pub fn closed(&mut self) {
        self.estimator.end(ExchangeEnd::Close);
    }

    /// The connection's bytes are over (its end, or the capture's): records cut short are counted, the
    /// exchange open ends.
    pub fn finish(&mut self) {
        for d in &mut self.dirs {
            let cut = match d.current.take() {
                Some(h) => HEADER_LEN + h.len - d.remaining,
                None if d.hunting => 0,
                None => d.have,
            };
            self.facts.truncated_bytes += cut as u64;
            d.have = 0;
            d.body = Vec::new();
        }
        self.estimator.end(ExchangeEnd::CaptureEnd);
    }

    fn feed_dir(
        &mut self,
        i: usize,
        bytes: &[u8],
        at: At,
        keys: Option<&KeyLog>,
        out: &mut impl FnMut(Sender, Plaintext<'_>),
        depth: u32,
    ) {
        let mut input = bytes;
        while !input.is_empty() {
            let d = &mut self.dirs[i];
            if d.hunting {
                let n = self.hunt(i, input, at);
                input = &input[n..];
                continue;
            }
            if d.current.is_none() {
                let take = (HEADER_LEN - d.have).min(input.len());
                if d.have == 0 {
                    d.first = at;
                }
                d.header[d.have..d.have + take].copy_from_slice(&input[..take]);
                d.have += take;
                input = &input[take..];
                if d.have < HEADER_LEN {
                    return;
                }
                d.have = 0;
                match RecordHeader::parse(d.header) {
                    Some(h) => self.start_record(i, h),
                    None => {
                        // Not a record: the stream is not what it should be (damage, or not TLS).
                        self.lose(i, HEADER_LEN as u64);
                        self.dirs[i].hunting = true;
                        continue;
                    }
                }
            }
            let d = &mut self.dirs[i];
            let take = d.remaining.min(input.len());
            if d.keep && take > 0 {
                d.marks.push((d.body.len() as u32, at));
                d.body.extend_from_slice(&input[..take]);
            }
            d.remaining -= take;
            d.last = at;
            input = &input[take..];
            if d.remaining == 0 {
                if let Some(h) = d.current.take() {
                    self.end_record(i, h, keys, out, depth);
                }
            }
        }
    }

    /// Looks for the next record header in `input` (and the few bytes kept from the previous input, which
    /// may begin one); returns the bytes of `input` passed over or taken. A header found starts a
    /// (tentative) record.
    fn hunt(&mut self, i: usize, input: &[u8], at: At) -> usize {
        let version_known = self.server_hello;
        let plausible = |h: [u8; HEADER_LEN]| {
            // After the hellos every record says 03 03; a content type and length must fit too.
            RecordHeader::parse(h)
                .filter(|r| !version_known || r.version == 0x0303)
                .filter(|r| r.content_type != 20 || r.len == 1)
        };
        // Positions that begin in the bytes kept: the header straddles the two inputs.
        let carried = self.dirs[i].have;
        if carried > 0 {
            let mut joined = [0u8; 2 * HEADER_LEN];
            joined[..carried].copy_from_slice(&self.dirs[i].header[..carried]);
            let more = input.len().min(HEADER_LEN - 1);
            joined[carried..carried + more].copy_from_slice(&input[..more]);
            let joined = &joined[..carried + more];
            let mut p = 0;
            while p < carried && p + HEADER_LEN <= joined.len() {
                let mut h = [0u8; HEADER_LEN];
                h.copy_from_slice(&joined[p..p + HEADER_LEN]);
                if let Some(r) = plausible(h) {
                    self.lose(i, p as u64);
                    self.dirs[i].have = 0;
                    self.found(i, r, at);
                    return HEADER_LEN - (carried - p);
                }
                p += 1;
            }
            if p < carried {
                // Too few bytes yet to tell whether the rest begins a header: kept, with all of `input`.
                self.lose(i, p as u64);
                let d = &mut self.dirs[i];
                let keep = joined.len() - p;
                let kept: Vec<u8> = joined[p..].to_vec();
                d.header[..keep].copy_from_slice(&kept);
                d.have = keep;
                return input.len();
            }
            self.lose(i, carried as u64);
            self.dirs[i].have = 0;
        }
        let mut p = 0;
        while p + HEADER_LEN <= input.len() {
            let mut h = [0u8; HEADER_LEN];
            h.copy_from_slice(&input[p..p + HEADER_LEN]);
            if let Some(r) = plausible(h) {
                self.lose(i, p as u64);
                self.found(i, r, at);
                return p + HEADER_LEN;
            }
            p += 1;
        }
        // The last bytes may begin a header that the next input completes: kept.
        let keep = (input.len() - p).min(HEADER_LEN - 1);
        let from = input.len() - keep;
        self.lose(i, from as u64);
        let d = &mut self.dirs[i];
        d.header[..keep].copy_from_slice(&input[from..]);
        d.have = keep;
        input.len()
    }

    /// `n` bytes of sender `i` were passed over while looking for a record.
    fn lose(&mut self, i: usize, n: u64) {
        self.facts.skipped_bytes += n;
        self.dirs[i].lost_since_known += n;
    }

    /// A header found by hunting starts a record whose number is not known.
    fn found(&mut self, i: usize, r: RecordHeader, at: At) {
        let d = &mut self.dirs[i];
        d.hunting = false;
        d.tentative = true;
        d.first = at;
        self.start_record(i, r);
    }

    fn start_record(&mut self, i: usize, h: RecordHeader) {
        let keep = h.content_type != 23 || self.may_open(i);
        let d = &mut self.dirs[i];
        d.current = Some(h);
        d.remaining = h.len;
        d.keep = keep;
        d.damaged = false;
        d.body.clear();
        d.marks.clear();
    }

    /// Whether an application_data record of sender `i` may be opened (so its body is kept).
    fn may_open(&self, i: usize) -> bool {
        let d = &self.dirs[i];
        !d.given_up && (d.opener.is_some() || d.application_secret.is_some())
    }

    fn end_record(
        &mut self,
        i: usize,
        h: RecordHeader,
        keys: Option<&KeyLog>,
        out: &mut impl FnMut(Sender, Plaintext<'_>),
        depth: u32,
    ) {
        let sender = Sender::of(i);
        let (first, last) = (self.dirs[i].first, self.dirs[i].last);
        let wire = (HEADER_LEN + h.len) as u64;
        if self.offer.is_none() && keys.is_some() && !(i == 0 && h.content_type == 22) {
            // Records before any ClientHello: the capture began after the handshake.
            self.facts.keys = KeyStatus::NoHandshake;
        }
        self.note_timing(i, &h, first, last, wire);
        if self.dirs[i].damaged {
            // Part of its bytes fell in a gap: it cannot be read; the next record keeps its number.
            let d = &mut self.dirs[i];
            d.damaged = false;
            d.tentative = false;
            if d.opener.is_some() {
                d.seq += 1;
                self.facts.undecrypted_bytes += wire;
                self.facts.records_undecrypted += 1;
                out(sender, Plaintext::Missing(h.len as u64, last));
            }
            return;
        }
        match h.content_type() {
            ContentType::ChangeCipherSpec => {
                let d = &mut self.dirs[i];
                d.tentative = false;
                if !self.tls13 {
                    d.changed_cipher_spec = true;
                    d.opener = d.pending.take();
                    d.seq = 0;
                    d.epoch = Epoch::Protected;
                    d.handshake.reset();
                }
            }
            ContentType::Alert if self.dirs[i].opener.is_none() => {
                let body = &self.dirs[i].body;
                if let [level, description] = body[..] {
                    self.facts.alerts[i] = Some(Alert { level, description });
                }
            }
            ContentType::Handshake
                if self.dirs[i].opener.is_none() && self.dirs[i].epoch == Epoch::Plain =>
            {
                let mut body = std::mem::take(&mut self.dirs[i].body);
                self.plain_handshake(i, &body, first, keys);
                body.clear();
                self.dirs[i].body = body;
            }
            _ => self.protected(i, h, keys, out, depth),
        }
    }

    /// Record timing: the end of the handshake, and the records of the exchanges after it.
    fn note_timing(&mut self, i: usize, h: &RecordHeader, first: At, last: At, wire: u64) {
        let data = h.content_type == 23;
        if self.facts.handshake_done.is_none() {
            if self.tls13 {
                // The client's Finished ends the handshake: among its protected records after the
                // ServerHello (an empty Certificate and a CertificateVerify may come first, when the
                // server asked for one), the first as long as a Finished under the suite's hash.
                let finished_len = 4 + self.suite.map_or(32, |p| p.hash.len()) + 1 + TAG_LEN;
                if i == 0
                    && data
                    && self.server_hello
                    && !self.client_finished_seen
                    && h.len == finished_len
                {
                    self.client_finished_seen = true;
                    self.facts.handshake_done = Some(last);
                }
            } else if h.content_type == 22 && self.dirs[i].changed_cipher_spec {
                let d = &mut self.dirs[i];
                if d.finished.is_none() {
                    d.finished = Some(last);
                }
                if let (Some(a), Some(b)) = (self.dirs[0].finished, self.dirs[1].finished) {
                    self.facts.handshake_done = Some(a.max(b));
                }
            }
            return;
        }
        if !data {
            return;
        }
        let overhead = self.overhead();
        if h.len < overhead + MIN_MESSAGE {
            return;
        }
        self.estimator.record(Sender::of(i), first, last, wire);
        self.facts.unsolicited_records = self.estimator.unsolicited;
    }

    /// What protection adds to a record at least, under the suite in force (0 when unknown).
    fn overhead(&self) -> usize {
        match self.suite.map(|s| s.protection) {
            None => 0,
            Some(_) if self.tls13 => TAG_LEN + 1,
            Some(RecordProtection::Aes128Gcm | RecordProtection::Aes256Gcm) => 8 + TAG_LEN,
            Some(RecordProtection::ChaCha20Poly1305) => TAG_LEN,
            Some(RecordProtection::AesCbc { mac, .. }) => 16 + mac.len() + 1,
        }
    }

    fn plain_handshake(&mut self, i: usize, body: &[u8], first: At, keys: Option<&KeyLog>) {
        let mut hellos: Vec<(u8, Vec<u8>)> = Vec::new();
        self.dirs[i].handshake.push(body, |m| {
            if matches!(m.kind, kind::CLIENT_HELLO | kind::SERVER_HELLO) {
                hellos.push((m.kind, m.body.to_vec()));
            }
        });
        for (k, b) in hellos {
            match (i, k) {
                (0, kind::CLIENT_HELLO) => self.client_hello(&b, first, keys),
                (1, kind::SERVER_HELLO) => self.server_hello(&b),
                _ => {}
            }
        }
    }

    fn client_hello(&mut self, body: &[u8], first: At, keys: Option<&KeyLog>) {
        let Some(hello) = handshake::parse_client_hello(body) else {
            return;
        };
        if self.facts.client_hello.is_none() {
            self.facts.client_hello = Some(first);
        }
        self.offer = Some(Offer {
            random: hello.random,
            encrypt_then_mac: hello.encrypt_then_mac,
            offers_ticket: hello.offers_ticket,
            session_id_len: hello.session_id_len,
        });
        if hello.offers_psk {
            self.facts.resumption = Resumption::PreSharedKey;
        }
        self.secrets = keys.and_then(|k| k.get(&hello.random)).copied();
        self.facts.keys = match (keys, &self.secrets) {
            (None, _) => KeyStatus::NoKeyLog,
            (Some(_), None) => KeyStatus::NotInKeyLog,
            (Some(_), Some(_)) => KeyStatus::Found,
        };
    }

    fn server_hello(&mut self, body: &[u8]) {
        let Some(hello) = handshake::parse_server_hello(body) else {
            return;
        };
        if hello.is_retry_request() {
            self.facts.retried = true;
            self.facts.cipher_suite = Some(hello.cipher_suite);
            return;
        }
        let version = hello.version();
        self.server_hello = true;
        self.facts.version = Some(version);
        self.facts.cipher_suite = Some(hello.cipher_suite);
        self.tls13 = version == ProtocolVersion::TLS1_3;
        let params = hello
            .cipher_suite
            .parameters()
            .filter(|p| p.tls13 == self.tls13);
        self.suite = params;
        self.facts.resumption = match (self.tls13, self.offer) {
            (true, _) if hello.accepted_psk => Resumption::PreSharedKey,
            (true, _) => Resumption::None,
            (false, Some(o))
                if o.session_id_len > 0
                    && usize::from(o.session_id_len) == hello.session_id.len() =>
            {
                // An echoed session id resumes; a ticket resumption also echoes one when the client sent
                // one, so a ticket offered says which.
                if o.offers_ticket {
                    Resumption::Ticket
                } else {
                    Resumption::SessionId
                }
            }
            _ => Resumption::None,
        };
        if self.tls13 {
            // From here both senders protect their records with the handshake keys.
            for d in &mut self.dirs {
                d.epoch = Epoch::Handshake;
                d.handshake.reset();
            }
        }
        if self.facts.keys != KeyStatus::Found {
            return;
        }
        let (Some(params), Some(secrets), Some(offer)) = (params, self.secrets, self.offer) else {
            self.facts.keys = KeyStatus::Unsupported;
            return;
        };
        if version < ProtocolVersion::TLS1_2 {
            self.facts.keys = KeyStatus::Unsupported;
            return;
        }
        let installed = if self.tls13 {
            self.install_tls13(params, &secrets)
        } else {
            self.install_tls12(params, &secrets, &offer, &hello)
        };
        if !installed {
            self.facts.keys = KeyStatus::Incomplete;
        }
    }

    fn install_tls13(&mut self, params: &'static SuiteParameters, s: &SessionSecrets) -> bool {
        let hash_len = params.hash.len();
        let fits = |x: &Option<Secret>| x.filter(|x| x.as_bytes().len() == hash_len);
        let pairs = [
            (fits(&s.client_handshake), fits(&s.client_traffic)),
            (fits(&s.server_handshake), fits(&s.server_traffic)),
        ];
        if pairs.iter().all(|(_, app)| app.is_none()) {
            return false;
        }
        for (d, (hs, app)) in self.dirs.iter_mut().zip(pairs) {
            d.opener = hs.and_then(|hs| opener13(params, &hs)).map(Box::new);
            d.secret = hs;
            d.application_secret = app;
            d.seq = 0;
        }
        true
    }

    fn install_tls12(
        &mut self,
        params: &'static SuiteParameters,
        s: &SessionSecrets,
        offer: &Offer,
        hello: &handshake::ServerHello,
    ) -> bool {
        let Some(master) = s.master_secret else {
            return false;
        };
        let (mac_len, iv_len, framing) = match params.protection {
            RecordProtection::Aes128Gcm | RecordProtection::Aes256Gcm => (0, 4, Framing::Tls12),
            RecordProtection::ChaCha20Poly1305 => (0, 12, Framing::Tls12),
            RecordProtection::AesCbc { mac, .. } => {
                let etm = offer.encrypt_then_mac && hello.encrypt_then_mac;
                let framing = if etm {
                    Framing::Tls12EncryptThenMac
                } else {
                    Framing::Tls12
                };
                (mac.len(), 0, framing)
            }
        };
        let Some(k) = tls12_keys(
            params.hash,
            &master,
            &offer.random,
            &hello.random,
            mac_len,
            params.protection.key_len(),
            iv_len,
        ) else {
            return false;
        };
        let client = Opener::new(
            params.protection,
            &k.client,
            &k.client_mac.0[..k.client_mac.1],
            framing,
        );
        let server = Opener::new(
            params.protection,
            &k.server,
            &k.server_mac.0[..k.server_mac.1],
            framing,
        );
        let (Some(client), Some(server)) = (client, server) else {
            return false;
        };
        self.dirs[0].pending = Some(Box::new(client));
        self.dirs[1].pending = Some(Box::new(server));
        true
    }

    /// A protected record (or one sent while the sender had no keys in force).
    fn protected(
        &mut self,
        i: usize,
        h: RecordHeader,
        keys: Option<&KeyLog>,
        out: &mut impl FnMut(Sender, Plaintext<'_>),
        depth: u32,
    ) {
        let sender = Sender::of(i);
        let wire = (HEADER_LEN + h.len) as u64;
        let last = self.dirs[i].last;
        if !self.dirs[i].keep || self.dirs[i].given_up || !self.may_open(i) {
            let d = &mut self.dirs[i];
            d.tentative = false;
            self.facts.records_undecrypted += 1;
            self.facts.undecrypted_bytes += wire;
            if d.given_up && d.opener.is_some() {
                // A sender that was decrypted: its reader is told what it misses.
                out(
                    sender,
                    Plaintext::Missing(h.len.saturating_sub(TAG_LEN) as u64, last),
                );
            }
            return;
        }
        let mut body = std::mem::take(&mut self.dirs[i].body);
        let mut marks = std::mem::take(&mut self.dirs[i].marks);
        let attempt = self.open(i, &h, &mut body);
        let tentative = std::mem::replace(&mut self.dirs[i].tentative, false);
        match attempt {
            Attempt::Opened(o) => {
                let d = &mut self.dirs[i];
                d.failures_in_row = 0;
                d.lost_since_known = 0;
                d.records_opened += 1;
                d.body_bytes_opened += h.len as u64;
                self.facts.records_decrypted += 1;
                self.opened(i, o, &body, &marks, out);
            }
            Attempt::Failed if tentative && depth < REHUNT_DEPTH => {
                // Not a record after all (or too far from the numbers tried): look again inside it.
                let mut again = Vec::with_capacity(HEADER_LEN - 1 + body.len());
                again.extend_from_slice(&h.bytes[1..]);
                again.extend_from_slice(&body);
                body.clear();
                marks.clear();
                let d = &mut self.dirs[i];
                d.body = body;
                d.marks = marks;
                d.hunting = true;
                self.lose(i, 1);
                self.feed_dir(i, &again, last, keys, out, depth + 1);
                return;
            }
            Attempt::Failed => {
                let d = &mut self.dirs[i];
                if tentative {
                    // Its number is not known: the sender's place is lost for good.
                    d.given_up = true;
                }
                d.seq += 1;
                d.failures_in_row += 1;
                if d.failures_in_row >= FAILURES_BEFORE_GIVING_UP {
                    d.given_up = true;
                }
                self.facts.records_failed += 1;
                self.facts.failed_bytes += wire;
                self.facts.first_failure.get_or_insert(last);
                out(
                    sender,
                    Plaintext::Missing(h.len.saturating_sub(TAG_LEN) as u64, last),
                );
            }
            Attempt::HandshakeWithoutSecret => {
                // TLS 1.3 handshake records, when the key log holds only the application secrets.
                self.facts.records_undecrypted += 1;
                self.facts.undecrypted_bytes += wire;
            }
        }
        let d = &mut self.dirs[i];
        body.clear();
        marks.clear();
        d.body = body;
        d.marks = marks;
    }

    /// Opens a record of sender `i` with the keys that may apply: those in force at its number (or, after
    /// a gap, at the numbers the gap may have skipped); for TLS 1.3 in the handshake epoch, the application
    /// keys too (their first record), which then take over.
    fn open(&mut self, i: usize, h: &RecordHeader, body: &mut [u8]) -> Attempt {
        let d = &self.dirs[i];
        if let Some(op) = d.opener.as_deref() {
            let found = if d.tentative {
                let candidates = self.sequence_candidates(i, body);
                try_open(op, &candidates, h, body, &mut self.scratch)
            } else {
                op.open(d.seq, h, body).ok().map(|o| (d.seq, o))
            };
            if let Some((seq, o)) = found {
                self.dirs[i].seq = seq + 1;
                return Attempt::Opened(o);
            }
        }
        // TLS 1.3: the handshake keys are missing or did not open it: the application keys may.
        let d = &mut self.dirs[i];
        if d.epoch == Epoch::Handshake && self.tls13 {
            let without = d.opener.is_none();
            if let (Some(app), Some(params)) = (d.application_secret, self.suite) {
                if let Some(op) = opener13(params, &app) {
                    let from_start = [0u64, 1, 2, 3];
                    if let Some((seq, o)) = try_open(&op, &from_start, h, body, &mut self.scratch) {
                        d.opener = Some(Box::new(op));
                        d.secret = Some(app);
                        d.application_secret = None;
                        d.epoch = Epoch::Protected;
                        d.handshake.reset();
                        d.seq = seq + 1;
                        return Attempt::Opened(o);
                    }
                }
            }
            if without {
                return Attempt::HandshakeWithoutSecret;
            }
        }
        Attempt::Failed
    }

    /// The sequence numbers a record may have: the next one, or after a gap that crossed records, the
    /// numbers around what the lost bytes would hold (and a TLS 1.2 GCM record's explicit nonce, which
    /// senders set to the number).
    fn sequence_candidates(&self, i: usize, body: &[u8]) -> Vec<u64> {
        let d = &self.dirs[i];
        if !d.tentative {
            return vec![d.seq];
        }
        let mut c = Vec::with_capacity(SEQUENCE_TRIALS as usize + 1);
        let explicit = !self.tls13
            && matches!(
                self.suite.map(|s| s.protection),
                Some(RecordProtection::Aes128Gcm | RecordProtection::Aes256Gcm)
            );
        if explicit {
            if let Some(n) = body.get(..8) {
                let mut b = [0u8; 8];
                b.copy_from_slice(n);
                let n = u64::from_be_bytes(b);
                if n >= d.seq {
                    c.push(n);
                }
            }
        }
        let mean = d
            .body_bytes_opened
            .checked_div(d.records_opened)
            .unwrap_or(1 << 14)
            .max(1)
            + HEADER_LEN as u64;
        let guess = d.seq + d.lost_since_known / mean;
        for k in 0..SEQUENCE_TRIALS {
            let n = if k % 2 == 0 {
                guess + k / 2
            } else {
                guess.saturating_sub(k / 2 + 1).max(d.seq)
            };
            if !c.contains(&n) {
                c.push(n);
            }
        }
        c
    }

    /// Hands on what an opened record holds.
    fn opened(
        &mut self,
        i: usize,
        o: Opened,
        body: &[u8],
        marks: &[(u32, At)],
        out: &mut impl FnMut(Sender, Plaintext<'_>),
    ) {
        let sender = Sender::of(i);
        let last = self.dirs[i].last;
        let plain = body.get(o.start..o.end).unwrap_or(&[]);
        match o.content_type {
            ContentType::ApplicationData => {
                self.facts.plaintext_bytes += plain.len() as u64;
                for (k, &(from, at)) in marks.iter().enumerate() {
                    let to = marks.get(k + 1).map_or(body.len(), |m| m.0 as usize);
                    let (s, e) = ((from as usize).max(o.start), to.min(o.end));
                    if s < e {
                        out(sender, Plaintext::Data(&body[s..e], at));
                    }
                }
            }
            ContentType::Handshake => {
                let mut seen: Vec<(u8, Vec<u8>)> = Vec::new();
                self.dirs[i].handshake.push(plain, |m| {
                    if matches!(m.kind, kind::FINISHED | kind::KEY_UPDATE) {
                        seen.push((m.kind, m.body.to_vec()));
                    }
                });
                for (k, _) in seen {
                    match k {
                        kind::FINISHED => self.finished(i, last),
                        kind::KEY_UPDATE => self.key_update(i),
                        _ => {}
                    }
                }
            }
            ContentType::Alert => {
                if let [level, description] = plain[..] {
                    self.facts.alerts[i] = Some(Alert { level, description });
                }
            }
            _ => {}
        }
    }

    /// Sender `i`'s Finished was read: under TLS 1.3 its application keys take over.
    fn finished(&mut self, i: usize, at: At) {
        let d = &mut self.dirs[i];
        d.finished.get_or_insert(at);
        if !self.tls13 || d.epoch != Epoch::Handshake {
            return;
        }
        d.epoch = Epoch::Protected;
        d.handshake.reset();
        d.seq = 0;
        d.secret = d.application_secret.take();
        d.opener = match (d.secret, self.suite) {
            (Some(s), Some(p)) => opener13(p, &s).map(Box::new),
            _ => None,
        };
    }

    /// Sender `i` updated its keys (TLS 1.3): the next generation of its traffic secret.
    fn key_update(&mut self, i: usize) {
        self.facts.key_updates += 1;
        let d = &mut self.dirs[i];
        let (Some(s), Some(p)) = (d.secret, self.suite) else {
            d.opener = None;
            return;
        };
        let next = tls13_next_traffic_secret(p.hash, &s);
        d.secret = next;
        d.seq = 0;
        d.opener = next.and_then(|n| opener13(p, &n)).map(Box::new);
    }
}

/// What trying to open a record came to.
enum Attempt {
    Opened(Opened),
    /// It did not authenticate under the keys that should open it.
    Failed,
    /// A TLS 1.3 handshake record, whose secret the key log lacks: not tried.
    HandshakeWithoutSecret,
}

fn opener13(params: &SuiteParameters, secret: &Secret) -> Option<Opener> {
    let keys = tls13_traffic_keys(params.hash, secret, params.protection.key_len())?;
    Opener::new(params.protection, &keys, &[], Framing::Tls13)
}

/// Opens `body` as the record numbered by the first candidate that authenticates. The body is
/// decrypted in place only for that one (each trial works on a copy when there are several).
fn try_open(
    op: &Opener,
    candidates: &[u64],
    h: &RecordHeader,
    body: &mut [u8],
    scratch: &mut Vec<u8>,
) -> Option<(u64, Opened)> {
    if let [seq] = candidates {
        return match op.open(*seq, h, body) {
            Ok(o) => Some((*seq, o)),
            Err(OpenError::Authentication | OpenError::Malformed) => None,
        };
    }
    for &seq in candidates {
        scratch.clear();
        scratch.extend_from_slice(body);
        if let Ok(o) = op.open(seq, h, scratch) {
            body.copy_from_slice(scratch);
            return Some((seq, o));
        }
    }
    None
}
