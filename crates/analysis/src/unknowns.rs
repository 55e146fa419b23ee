//! What the capture could not show, said by every command: packets cut by the snap length and the figures
//! partial because of them, responses that could not be read to their end, statements cut mid-text, MySQL
//! sessions encrypted with TLS, and IP datagrams whose fragments could not be put back together. A figure
//! from partial data must never read as complete.

use pcapsleuth_flow::{ReassemblyFacts, REASSEMBLY_MEMORY};
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
    /// or lost): no response time, no rows. The `unreadable` requests and the answered ones whose
    /// response's end is not in the capture.
    pub unreadable_responses: u64,
    /// MySQL requests whose statement text the capture holds only in part: their fingerprints end in `…`.
    pub statements_cut: u64,
    /// MySQL sessions that went on in TLS and could not be read (or records of those decrypted that did
    /// not authenticate); null when there were none.
    pub encrypted: Option<EncryptedSessions>,
    /// IP fragments that could not be put back into their datagrams, and why (the capture's
    /// [`crate::CaptureFacts::ip_fragments`]); null when every fragment went into a datagram reassembled
    /// (or was a duplicate).
    pub ip_fragments: Option<ReassemblyFacts>,
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
    let unreadable_responses = requests.unreadable + requests.answered_end_unknown;
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
            "{} MySQL responses could not be read to their end (no response time, rows or error code for them; times are over the {} requests answered to their end only)",
            count(unreadable_responses),
            count(requests.answered - requests.answered_end_unknown)
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
    if let Some(stopped) = &a.capture.stopped {
        notes.push(match stopped.frames_read {
            0 => "the run was stopped before it read a frame: every figure is empty".to_string(),
            n => format!(
                "the run was stopped before the capture's end: every figure covers frames 1 to {} only, the rest was not read",
                count(n)
            ),
        });
    }
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
    let frags = &a.capture.ip_fragments;
    let ip_fragments = frags.lost_any().then(|| frags.clone());
    if let Some(f) = &ip_fragments {
        notes.push(fragments_note(f));
    }
    Unknowns {
        snap_length,
        unreadable_responses,
        statements_cut,
        encrypted,
        ip_fragments,
        notes,
    }
}

/// What reassembly lost, in a sentence: the datagrams not reassembled by reason, the fragments dropped, and
/// the first datagram lost.
fn fragments_note(f: &ReassemblyFacts) -> String {
    let mut parts = Vec::new();
    let lost = f.not_reassembled.total();
    if lost > 0 {
        let reasons: Vec<String> = f
            .not_reassembled
            .by_reason()
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(why, n)| format!("{} {}", count(*n), why.describe()))
            .collect();
        parts.push(format!(
            "{} IP {} sent in fragments could not be reassembled ({})",
            count(lost),
            if lost == 1 { "datagram" } else { "datagrams" },
            reasons.join(", ")
        ));
    }
    let were = |n: u64| match n {
        1 => "1 fragment was".to_string(),
        n => format!("{} fragments were", count(n)),
    };
    if f.dropped_at_memory_limit > 0 {
        parts.push(format!(
            "{} dropped while reassembly held its limit of {} MiB (Linux's ipfrag_high_thresh)",
            were(f.dropped_at_memory_limit),
            REASSEMBLY_MEMORY >> 20
        ));
    }
    if f.dropped_malformed > 0 {
        parts.push(format!(
            "{} dropped as malformed IPv6 fragments, as the receiving host drops them",
            were(f.dropped_malformed)
        ));
    }
    let first = f
        .first_failures
        .first()
        .map(|d| {
            let protocol = match d.protocol {
                6 => "TCP".to_string(),
                17 => "UDP".to_string(),
                n => format!("protocol {n}"),
            };
            format!(
                "; the first: {protocol} {}, its first fragment in frame {}",
                d.endpoints(),
                d.first.frame,
            )
        })
        .unwrap_or_default();
    format!(
        "{}: what they carried is missing (a TCP connection has a gap there){first}",
        parts.join("; ")
    )
}
