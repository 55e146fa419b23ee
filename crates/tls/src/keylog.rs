//! The NSS key log format (`SSLKEYLOGFILE`): one secret a line, `LABEL <client random> <secret>`, both in
//! hex, the client random of the handshake's ClientHello naming the connection.
//!
//! The labels read: `CLIENT_RANDOM` (TLS 1.2: the 48-byte master secret) and, for TLS 1.3,
//! `CLIENT_HANDSHAKE_TRAFFIC_SECRET`, `SERVER_HANDSHAKE_TRAFFIC_SECRET`, `CLIENT_TRAFFIC_SECRET_0` and
//! `SERVER_TRAFFIC_SECRET_0` (later generations, `_1` and on, follow from `_0` at each KeyUpdate and are
//! derived rather than read). Other labels (`EXPORTER_SECRET`, the early-data secrets, `RSA` pre-master
//! lines) are counted and passed over. This is what NSS, OpenSSL (`SSL_CTX_set_keylog_callback`, and
//! `SSLKEYLOGFILE` from 3.5), BoringSSL, Go's `KeyLogWriter`, Python's `ssl` and Java key-log agents
//! write, and what a pcapng's Decryption Secrets Block of type `TLSK` holds.

use std::collections::HashMap;

/// The 32 random bytes of a ClientHello: the key of every key log line.
pub type ClientRandom = [u8; 32];

/// A secret of up to 48 bytes (a TLS 1.2 master secret, or a TLS 1.3 traffic secret of SHA-256 or
/// SHA-384).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Secret {
    bytes: [u8; 48],
    len: u8,
}

impl Secret {
    /// A secret from its bytes; `None` when longer than 48.
    pub fn new(bytes: &[u8]) -> Option<Secret> {
        let mut s = Secret {
            bytes: [0; 48],
            len: u8::try_from(bytes.len()).ok()?,
        };
        s.bytes.get_mut(..bytes.len())?.copy_from_slice(bytes);
        Some(s)
    }

    /// The secret's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // A secret is not printed, even in a debug dump.
        write!(f, "Secret({} bytes)", self.len)
    }
}

/// The secrets a key log holds for one handshake (one client random).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SessionSecrets {
    /// `CLIENT_RANDOM`: the TLS 1.2 master secret.
    pub master_secret: Option<Secret>,
    /// `CLIENT_HANDSHAKE_TRAFFIC_SECRET` (TLS 1.3).
    pub client_handshake: Option<Secret>,
    /// `SERVER_HANDSHAKE_TRAFFIC_SECRET` (TLS 1.3).
    pub server_handshake: Option<Secret>,
    /// `CLIENT_TRAFFIC_SECRET_0` (TLS 1.3).
    pub client_traffic: Option<Secret>,
    /// `SERVER_TRAFFIC_SECRET_0` (TLS 1.3).
    pub server_traffic: Option<Secret>,
}

/// A line of a key log that could not be read, by its number (1-based) and what was wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyLogProblem {
    /// The line's number in its text, 1-based.
    pub line: u64,
    /// What was wrong with it.
    pub what: &'static str,
}

/// Problems kept for a message (the count covers all of them).
const PROBLEMS_KEPT: usize = 5;

/// Secrets by client random, read from one or more key logs.
#[derive(Debug, Clone, Default)]
pub struct KeyLog {
    sessions: HashMap<ClientRandom, SessionSecrets>,
    /// Lines read with a secret kept.
    pub secrets: u64,
    /// Lines with a label this crate does not use (`EXPORTER_SECRET`, early-data secrets, `RSA`, later
    /// traffic-secret generations): passed over.
    pub ignored: u64,
    /// Lines that are not key log lines: counted, the first few kept in `problems`.
    pub malformed: u64,
    /// The first malformed lines.
    pub problems: Vec<KeyLogProblem>,
}

/// Which secret of [`SessionSecrets`] a label names.
#[derive(Clone, Copy)]
enum Slot {
    Master,
    ClientHandshake,
    ServerHandshake,
    ClientTraffic,
    ServerTraffic,
    Ignored,
}

fn slot_of(label: &[u8]) -> Option<Slot> {
    Some(match label {
        b"CLIENT_RANDOM" => Slot::Master,
        b"CLIENT_HANDSHAKE_TRAFFIC_SECRET" => Slot::ClientHandshake,
        b"SERVER_HANDSHAKE_TRAFFIC_SECRET" => Slot::ServerHandshake,
        b"CLIENT_TRAFFIC_SECRET_0" => Slot::ClientTraffic,
        b"SERVER_TRAFFIC_SECRET_0" => Slot::ServerTraffic,
        b"EXPORTER_SECRET"
        | b"EARLY_EXPORTER_SECRET"
        | b"CLIENT_EARLY_TRAFFIC_SECRET"
        | b"RSA"
        | b"RSA_SESSION_ID"
        | b"PMS_CLIENT_RANDOM" => Slot::Ignored,
        l if l.starts_with(b"CLIENT_TRAFFIC_SECRET_")
            || l.starts_with(b"SERVER_TRAFFIC_SECRET_") =>
        {
            Slot::Ignored
        }
        _ => return None,
    })
}

fn hex_value(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// Decodes hex into `out`; `None` unless `text` is exactly `2 * out.len()` hex digits.
fn unhex(text: &[u8], out: &mut [u8]) -> Option<()> {
    if text.len() != out.len() * 2 {
        return None;
    }
    for (o, pair) in out.iter_mut().zip(text.chunks_exact(2)) {
        *o = hex_value(pair[0])? << 4 | hex_value(pair[1])?;
    }
    Some(())
}

impl KeyLog {
    /// An empty key log.
    pub fn new() -> Self {
        KeyLog::default()
    }

    /// Reads a key log's text. Lenient: comments (`#`) and blank lines are skipped, a line that is not a
    /// key log line is counted in [`KeyLog::malformed`] and the rest are read.
    pub fn parse(text: &[u8]) -> Self {
        let mut log = KeyLog::new();
        log.add(text);
        log
    }

    /// Adds the lines of another key log text (a second file, a pcapng's secrets block).
    pub fn add(&mut self, text: &[u8]) {
        for (n, line) in text.split(|&b| b == b'\n').enumerate() {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            let line = line.trim_ascii();
            if line.is_empty() || line.starts_with(b"#") {
                continue;
            }
            if let Err(what) = self.add_line(line) {
                self.malformed += 1;
                if self.problems.len() < PROBLEMS_KEPT {
                    self.problems.push(KeyLogProblem {
                        line: n as u64 + 1,
                        what,
                    });
                }
            }
        }
    }

    fn add_line(&mut self, line: &[u8]) -> Result<(), &'static str> {
        let mut fields = line
            .split(|b| b.is_ascii_whitespace())
            .filter(|f| !f.is_empty());
        let (Some(label), Some(random), Some(secret), None) =
            (fields.next(), fields.next(), fields.next(), fields.next())
        else {
            return Err("not three fields (LABEL CLIENT_RANDOM SECRET)");
        };
        let slot = slot_of(label).ok_or("unknown label")?;
        if let Slot::Ignored = slot {
            self.ignored += 1;
            return Ok(());
        }
        let mut cr: ClientRandom = [0; 32];
        unhex(random, &mut cr).ok_or("the client random is not 64 hex digits")?;
        let mut buf = [0u8; 48];
        let len = secret.len() / 2;
        let expected: &[usize] = match slot {
            Slot::Master => &[48],
            _ => &[32, 48],
        };
        if !expected.contains(&len) {
            return Err("the secret is not 32 or 48 bytes (48 for CLIENT_RANDOM) of hex");
        }
        unhex(secret, &mut buf[..len]).ok_or("the secret is not hex")?;
        let secret = Secret::new(&buf[..len]).ok_or("the secret is too long")?;
        let entry = self.sessions.entry(cr).or_default();
        let field = match slot {
            Slot::Master => &mut entry.master_secret,
            Slot::ClientHandshake => &mut entry.client_handshake,
            Slot::ServerHandshake => &mut entry.server_handshake,
            Slot::ClientTraffic => &mut entry.client_traffic,
            Slot::ServerTraffic => &mut entry.server_traffic,
            Slot::Ignored => return Ok(()),
        };
        *field = Some(secret);
        self.secrets += 1;
        Ok(())
    }

    /// Adds every secret of `other` (a later line for the same handshake and label wins).
    pub fn extend(&mut self, other: &KeyLog) {
        for (cr, s) in &other.sessions {
            let e = self.sessions.entry(*cr).or_default();
            let pairs = [
                (&mut e.master_secret, s.master_secret),
                (&mut e.client_handshake, s.client_handshake),
                (&mut e.server_handshake, s.server_handshake),
                (&mut e.client_traffic, s.client_traffic),
                (&mut e.server_traffic, s.server_traffic),
            ];
            for (mine, theirs) in pairs {
                if theirs.is_some() {
                    *mine = theirs;
                }
            }
        }
        self.secrets += other.secrets;
        self.ignored += other.ignored;
        self.malformed += other.malformed;
        let room = PROBLEMS_KEPT.saturating_sub(self.problems.len());
        self.problems
            .extend(other.problems.iter().take(room).cloned());
    }

    /// The secrets of the handshake whose ClientHello carried `random`.
    pub fn get(&self, random: &ClientRandom) -> Option<&SessionSecrets> {
        self.sessions.get(random)
    }

    /// Handshakes (client randoms) with at least one secret.
    pub fn sessions(&self) -> usize {
        self.sessions.len()
    }

    /// Whether no secret was read.
    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CR: &str = "cb34ecb1e78163ba1c38c6dacb196a6dffa21a8d9912ec18a2ef6283024dece7";

    #[test]
    fn reads_the_labels_of_both_versions() {
        let text = format!(
            "# a comment\n\
             CLIENT_HANDSHAKE_TRAFFIC_SECRET {CR} b3eddb126e067f35a780b3abf45e2d8f3b1a950738f52e9600746a0e27a55a21\r\n\
             SERVER_HANDSHAKE_TRAFFIC_SECRET {CR} b67b7d690cc16c4e75e54213cb2d37b4e9c912bcded9105d42befd59d391ad38\n\
             \n\
             CLIENT_TRAFFIC_SECRET_0 {CR} 9e40646ce79a7f9dc05af8889bce6552875afa0b06df0087f792ebb7c17504a5\n\
             SERVER_TRAFFIC_SECRET_0 {CR} a11af9f05531f856ad47116b45a950328204b4f44bfb6b3a4b4f1f3fcb631643\n\
             EXPORTER_SECRET {CR} fe22f881176eda18eb8f44529e6792c50c9a3f89452f68d8ae311b4309d3cf50\n\
             CLIENT_RANDOM {} {}\n\
             not a line\n\
             CLIENT_RANDOM {CR} 00\n",
            "00".repeat(32),
            "11".repeat(48)
        );
        let log = KeyLog::parse(text.as_bytes());
        assert_eq!((log.secrets, log.ignored, log.malformed), (5, 1, 2));
        assert_eq!(log.problems[0].line, 9);
        assert_eq!(log.problems[1].line, 10);
        assert_eq!(log.sessions(), 2);
        let mut cr = [0u8; 32];
        unhex(CR.as_bytes(), &mut cr).unwrap();
        let s = log.get(&cr).unwrap();
        assert_eq!(s.client_handshake.unwrap().as_bytes()[..2], [0xb3, 0xed]);
        assert_eq!(s.server_traffic.unwrap().as_bytes().len(), 32);
        assert!(s.master_secret.is_none());
        assert_eq!(
            log.get(&[0; 32]).unwrap().master_secret.unwrap().as_bytes(),
            &[0x11; 48]
        );
        assert_eq!(
            format!("{:?}", s.client_traffic.unwrap()),
            "Secret(32 bytes)"
        );
    }

    #[test]
    fn extending_merges_handshakes() {
        let a = KeyLog::parse(
            format!("CLIENT_RANDOM {} {}", "01".repeat(32), "22".repeat(48)).as_bytes(),
        );
        let b = KeyLog::parse(
            format!("CLIENT_RANDOM {} {}", "02".repeat(32), "33".repeat(48)).as_bytes(),
        );
        let mut all = a.clone();
        all.extend(&b);
        assert_eq!(all.sessions(), 2);
        assert_eq!(all.secrets, 2);
    }
}
