//! What the capture could not show, said by every command: packets cut by the snap length and the figures
//! partial because of them, responses that could not be read to their end, statements cut mid-text, and
//! MySQL sessions encrypted with TLS. A figure from partial data must never read as complete.

use serde::Serialize;

use crate::engine::Run;
use crate::mysql::{RequestCounts, TlsKeys};
use crate::units::{count, counted};

/// Encrypted connections listed by endpoint (the counts cover all of them).
const ENCRYPTED_LISTED: usize = 10;

/// What could not be known, and which figures it leaves partial.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Unknowns {
    /// Packets the snap length cut short; null when none was.
    pub snap_length: Option<SnapCut>,
    /// MySQL requests whose response could not be read to its end (its bytes were cut by the snap length
    /// or lost): no response time, no rows.
    pub unreadable_responses: u64,
    /// MySQL requests whose statement text the capture holds only in part: their fingerprints end in `…`.
    pub statements_cut: u64,
    /// MySQL sessions that went on in TLS and could not be read (or records of those decrypted that did
    /// not authenticate); null when there were none.
    pub encrypted: Option<EncryptedSessions>,
    /// The same in sentences, as the text output prints them.
    pub notes: Vec<String>,
}

/// Packets cut by the snap length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct SnapCut {
    /// Packets cut short, of `packets`.
    pub packets_cut: u64,
    /// All packets of the capture.
    pub packets: u64,
    /// The snap length in force: the longest captured length of a cut packet, in bytes.
    pub snaplen: u32,
}

/// MySQL sessions whose traffic is encrypted: they are counted as sessions, their requests are not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EncryptedSessions {
    /// Sessions that went on in TLS and were not decrypted.
    pub sessions: u64,
    /// Bytes that could not be read: of those sessions, the TCP payload after TLS began (both
    /// directions); of sessions decrypted, the records that did not authenticate.
    pub bytes: u64,
    /// The first connections not decrypted, in order of their first packet.
    pub connections: Vec<EncryptedConnection>,
    /// Sessions in TLS decrypted with a key log (their requests are counted).
    pub decrypted: u64,
    /// Records of the decrypted sessions that did not authenticate with the key log's secrets: never
    /// decoded, their bytes missing from those sessions.
    pub records_failed: u64,
}

/// One encrypted MySQL session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EncryptedConnection {
    /// The client's `ip:port`.
    pub client: String,
    /// The server's `ip:port`.
    pub server: String,
    /// Its first packet's frame.
    pub frame: u64,
    /// Bytes after TLS began, both directions, which could not be read.
    pub bytes: u64,
    /// Why it was not decrypted (`no_key_log`, `not_in_key_log`, ...); null for a session whose TLS
    /// handshake the decoder did not follow.
    pub why: Option<TlsKeys>,
}

/// What `a` could not know, from its capture facts and its connections' MySQL sessions, whatever
/// analysis it ran (first-reset's answer is qualified as `report`'s is).
pub fn unknowns<O>(a: &Run<O>) -> Unknowns {
    let c = &a.capture.counts;
    let snap_length = (c.truncated > 0).then_some(SnapCut {
        packets_cut: c.truncated,
        packets: c.packets,
        snaplen: c.truncated_at,
    });
    let mut requests = RequestCounts::default();
    let mut statements_cut = 0;
    for m in a.mysql_sessions.iter().flatten() {
        requests.merge(&m.requests);
        statements_cut += m.statements_cut;
    }
    let unreadable_responses = requests.unreadable;
    let mut encrypted = EncryptedSessions {
        sessions: 0,
        bytes: 0,
        connections: Vec::new(),
        decrypted: 0,
        records_failed: 0,
    };
    for (conn, facts) in a.connections.iter().zip(&a.mysql_sessions) {
        let Some(f) = facts.as_ref() else {
            continue;
        };
        if let Some(t) = f.tls.as_ref().filter(|t| t.decrypted) {
            encrypted.decrypted += 1;
            encrypted.records_failed += t.records_failed;
            encrypted.bytes += t.failed_bytes;
        }
        if !f.encrypted {
            continue;
        }
        encrypted.sessions += 1;
        encrypted.bytes += f.unread_bytes;
        if encrypted.connections.len() < ENCRYPTED_LISTED {
            encrypted.connections.push(EncryptedConnection {
                client: conn.client.to_string(),
                server: conn.server.to_string(),
                frame: conn.first.frame,
                bytes: f.unread_bytes,
                why: f.tls.as_ref().map(|t| t.keys),
            });
        }
    }
    let encrypted = (encrypted.sessions > 0 || encrypted.records_failed > 0).then_some(encrypted);

    // Which figures are partial, whatever left the bytes out.
    let mut partial = Vec::new();
    if unreadable_responses > 0 {
        partial.push(format!(
            "{} MySQL responses could not be read to their end (no response time, rows or error code for them; times are over the {} answered requests only)",
            count(unreadable_responses),
            count(requests.answered)
        ));
    }
    if statements_cut > 0 {
        partial.push(format!(
            "{} statements were cut mid-text (their fingerprints end in …)",
            count(statements_cut)
        ));
    }
    let partial = partial.join("; ");
    let mut notes = Vec::new();
    match (&snap_length, partial.is_empty()) {
        (Some(s), _) => notes.push(format!(
            "{} of {} packets were cut by the snap length ({} bytes){}{partial}",
            count(s.packets_cut),
            count(s.packets),
            s.snaplen,
            if partial.is_empty() { "" } else { ": " },
        )),
        (None, false) => notes.push(format!(
            "bytes missing from the capture (lost packets, or the capture began or ended inside a message): {partial}"
        )),
        (None, true) => {}
    }
    if let Some(e) = &encrypted {
        if let Some(first) = e.connections.first() {
            let failed_bytes = e.bytes - e.connections.iter().map(|c| c.bytes).sum::<u64>();
            let why = first
                .why
                .map(|w| format!("; {}", w.why_not()))
                .unwrap_or_default();
            notes.push(format!(
                "{} MySQL {} encrypted (TLS): {} bytes could not be read and {} requests are not counted ({} -> {}{}{why}){}",
                count(e.sessions),
                if e.sessions == 1 { "session is" } else { "sessions are" },
                count(e.bytes - failed_bytes.min(e.bytes)),
                if e.sessions == 1 { "its" } else { "their" },
                first.client,
                first.server,
                if e.sessions > 1 {
                    format!(" and {} more", e.sessions - 1)
                } else {
                    String::new()
                },
                if e.decrypted > 0 {
                    format!("; {} decrypted with the key log", counted(e.decrypted, "other was", "others were"))
                } else {
                    String::new()
                }
            ));
        }
        if e.records_failed > 0 {
            notes.push(format!(
                "{} of the sessions decrypted did not authenticate with the key log's secrets: not decoded, their bytes are missing from those sessions",
                counted(e.records_failed, "TLS record", "TLS records")
            ));
        }
    }
    Unknowns {
        snap_length,
        unreadable_responses,
        statements_cut,
        encrypted,
        notes,
    }
}
