//! Replication streams: after a replica's `COM_BINLOG_DUMP` or `COM_BINLOG_DUMP_GTID`, its connection
//! carries the primary's binary-log events and, under semi-synchronous replication, the replica's ACKs.
//! Neither is a request or a response.
//!
//! On the wire (MySQL internals, *Replication protocol*; MariaDB, *Semisynchronous replication*):
//! * every event travels in its own packet, `00` [`EF` flag] event. The event starts with a 19-byte
//!   header: timestamp (u32, seconds), type (u8), server id (u32), event size (u32, the rest of the
//!   packet), end position in the binary log (u32), flags (u16). `EF` is the semi-sync magic; flag `01`
//!   asks the replica to ACK this event;
//! * the ACK is a new packet from the replica (sequence id 0): `EF`, the 8-byte end position of the
//!   event it acknowledges, and the binary log's file name. A primary waiting at a position is released
//!   by an ACK at that position or a later one;
//! * a non-blocking dump ends with an EOF packet; an ERR packet ends a stream with an error (1236: the
//!   position is not in the binary logs).
//!
//! The dump itself is reported as a [`Transaction`] whose outcome is [`Outcome::ReplicationStream`] (or
//! the ERR that refused it): it has no response time. The stream is summarised in
//! [`ReplicationSummary`]; what distributions need (ACK latencies, event lag) comes out one
//! [`ReplicationSample`] at a time.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use crate::command::Command;
use crate::detect::{Extent, Verdict};
use crate::framing::PacketEnd;
use crate::wire::{self, le_u24, Reader};
use crate::{CloseFlag, Direction, Meta, Outcome, SqlState, Transaction};

/// The semi-sync magic byte before an event, and the first byte of an ACK.
const SEMI_SYNC_MAGIC: u8 = 0xEF;
/// Semi-sync flag: the primary waits for this event's ACK.
const SEMI_SYNC_NEED_ACK: u8 = 0x01;
/// Size of the v4 event header.
const EVENT_HEADER: usize = 19;
/// `LOG_EVENT_ARTIFICIAL_F`: made up by the primary for this stream (the first ROTATE), not in its log.
const ARTIFICIAL: u16 = 0x20;
/// ACK requests remembered at once; a replica that stops ACKing leaves them all open.
const MAX_AWAITED_ACKS: usize = 4096;

/// Binary-log event type codes (MySQL's `Log_event_type`; MariaDB's from 160).
pub mod event_type {
    /// `QUERY_EVENT`: a statement (DDL, `BEGIN`, `COMMIT` for non-transactional engines).
    pub const QUERY: u8 = 2;
    /// `STOP_EVENT`: the primary shut down.
    pub const STOP: u8 = 3;
    /// `ROTATE_EVENT`: the stream continues in the binary log named in it.
    pub const ROTATE: u8 = 4;
    /// `FORMAT_DESCRIPTION_EVENT`: the header of every binary log file.
    pub const FORMAT_DESCRIPTION: u8 = 15;
    /// `XID_EVENT`: a transaction's commit.
    pub const XID: u8 = 16;
    /// `HEARTBEAT_LOG_EVENT`: the primary is alive, nothing to send.
    pub const HEARTBEAT: u8 = 27;
    /// `PREVIOUS_GTIDS_LOG_EVENT` (MySQL): the GTIDs of earlier files.
    pub const PREVIOUS_GTIDS: u8 = 35;
    /// `HEARTBEAT_LOG_EVENT_V2` (MySQL 8).
    pub const HEARTBEAT_V2: u8 = 41;
    /// `BINLOG_CHECKPOINT_EVENT` (MariaDB).
    pub const BINLOG_CHECKPOINT: u8 = 161;
    /// `GTID_LIST_EVENT` (MariaDB): the GTIDs of earlier files.
    pub const GTID_LIST: u8 = 163;
    /// `START_ENCRYPTION_EVENT` (MariaDB).
    pub const START_ENCRYPTION: u8 = 164;
}

/// The name of an event type as MySQL's and MariaDB's sources spell it, without `_EVENT`
/// (`"XID"`, `"TABLE_MAP"`, `"WRITE_ROWS_V1"`, ...); `None` for a code neither uses.
pub fn event_type_name(code: u8) -> Option<&'static str> {
    Some(match code {
        1 => "START_V3",
        2 => "QUERY",
        3 => "STOP",
        4 => "ROTATE",
        5 => "INTVAR",
        6 => "LOAD",
        7 => "SLAVE",
        8 => "CREATE_FILE",
        9 => "APPEND_BLOCK",
        10 => "EXEC_LOAD",
        11 => "DELETE_FILE",
        12 => "NEW_LOAD",
        13 => "RAND",
        14 => "USER_VAR",
        15 => "FORMAT_DESCRIPTION",
        16 => "XID",
        17 => "BEGIN_LOAD_QUERY",
        18 => "EXECUTE_LOAD_QUERY",
        19 => "TABLE_MAP",
        20 => "PRE_GA_WRITE_ROWS",
        21 => "PRE_GA_UPDATE_ROWS",
        22 => "PRE_GA_DELETE_ROWS",
        23 => "WRITE_ROWS_V1",
        24 => "UPDATE_ROWS_V1",
        25 => "DELETE_ROWS_V1",
        26 => "INCIDENT",
        27 => "HEARTBEAT",
        28 => "IGNORABLE",
        29 => "ROWS_QUERY",
        30 => "WRITE_ROWS",
        31 => "UPDATE_ROWS",
        32 => "DELETE_ROWS",
        // MySQL's GTID (33) and MariaDB's (162) never meet in one stream.
        33 => "GTID",
        34 => "ANONYMOUS_GTID",
        35 => "PREVIOUS_GTIDS",
        36 => "TRANSACTION_CONTEXT",
        37 => "VIEW_CHANGE",
        38 => "XA_PREPARE",
        39 => "PARTIAL_UPDATE_ROWS",
        40 => "TRANSACTION_PAYLOAD",
        41 => "HEARTBEAT_V2",
        42 => "GTID_TAGGED",
        160 => "ANNOTATE_ROWS",
        161 => "BINLOG_CHECKPOINT",
        162 => "GTID",
        163 => "GTID_LIST",
        164 => "START_ENCRYPTION",
        165 => "QUERY_COMPRESSED",
        166 => "WRITE_ROWS_COMPRESSED_V1",
        167 => "UPDATE_ROWS_COMPRESSED_V1",
        168 => "DELETE_ROWS_COMPRESSED_V1",
        169 => "WRITE_ROWS_COMPRESSED",
        170 => "UPDATE_ROWS_COMPRESSED",
        171 => "DELETE_ROWS_COMPRESSED",
        _ => return None,
    })
}

/// A binary-log event header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct EventHeader {
    timestamp: u32,
    kind: u8,
    size: u32,
    log_pos: u32,
    flags: u16,
}

fn event_header(b: &[u8]) -> Option<EventHeader> {
    let mut r = Reader::new(b);
    let timestamp = r.u32()?;
    let kind = r.u8()?;
    let _server_id = r.u32()?;
    let size = r.u32()?;
    let log_pos = r.u32()?;
    let flags = r.u16()?;
    Some(EventHeader {
        timestamp,
        kind,
        size,
        log_pos,
        flags,
    })
}

/// Where the event of an event packet starts, and whether the primary asks for its ACK.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct EventLayout {
    offset: usize,
    semi_sync: bool,
    need_ack: bool,
}

/// How a packet of `len` payload bytes (of which `p` is the kept prefix) carries an event, if it does:
/// `00`, optionally the semi-sync magic and flag, then an event header whose size is the rest.
fn event_layout(p: &[u8], len: u64) -> Option<(EventLayout, EventHeader)> {
    if p.first() != Some(&0x00) {
        return None;
    }
    let fits = |offset: usize| {
        event_header(p.get(offset..)?)
            .filter(|h| u64::from(h.size) + offset as u64 == len && h.size as usize >= EVENT_HEADER)
    };
    if let (Some(&SEMI_SYNC_MAGIC), Some(&flag)) = (p.get(1), p.get(2)) {
        if flag <= SEMI_SYNC_NEED_ACK {
            if let Some(h) = fits(3) {
                let layout = EventLayout {
                    offset: 3,
                    semi_sync: true,
                    need_ack: flag == SEMI_SYNC_NEED_ACK,
                };
                return Some((layout, h));
            }
        }
    }
    let layout = EventLayout {
        offset: 1,
        semi_sync: false,
        need_ack: false,
    };
    fits(1).map(|h| (layout, h))
}

/// Is the logical packet `p` (kept prefix) of `len` bytes a binlog event of a known type? What a
/// session that joined mid-stream goes by: a replica's connection shows nothing else.
pub(crate) fn is_event_packet(p: &[u8], len: u64) -> bool {
    event_layout(p, len).is_some_and(|(_, h)| plausible(&h))
}

/// A known type, an end position after the event (0 for events the primary made up), and a creation
/// time after 2000 (0 for those too).
fn plausible(h: &EventHeader) -> bool {
    const Y2000: u32 = 946_684_800;
    event_type_name(h.kind).is_some()
        && (h.log_pos == 0 || h.log_pos >= h.size)
        && (h.timestamp == 0 || h.timestamp >= Y2000)
}

/// Is `w`, from a candidate packet header on, a binlog event packet? For hunting a packet boundary in
/// the primary's bytes.
pub(crate) fn event_packet_at(w: &[u8]) -> Verdict {
    let Some(len) = le_u24(w) else {
        return Verdict::NeedMore;
    };
    let payload = w.get(4..).unwrap_or(&[]);
    // `00`, magic and flag, header: the most an answer needs.
    const NEEDED: usize = 3 + EVENT_HEADER;
    if (len as usize) < 1 + EVENT_HEADER {
        return Verdict::No;
    }
    if payload.len() < NEEDED.min(len as usize) {
        return Verdict::NeedMore;
    }
    if is_event_packet(payload, u64::from(len)) {
        Verdict::Yes
    } else {
        Verdict::No
    }
}

/// Does this segment's payload, from one side of a connection whose start the capture missed, hold the
/// start of a binlog event packet: a header whose size adds up, and after the packet (if the segment
/// goes on) the next packet's header with the next sequence id? The packet may start anywhere in the
/// segment, which may begin with the tail of an event. Recognises a replication stream where the
/// replica sends nothing (asynchronous replication) or only ACKs.
pub fn looks_like_binlog_events(payload: &[u8]) -> bool {
    (0..payload.len()).any(|i| {
        let at = payload.get(i..).unwrap_or(&[]);
        if event_packet_at(at) != Verdict::Yes {
            return false;
        }
        let (Some(len), Some(&seq)) = (le_u24(at), at.get(3)) else {
            return false;
        };
        match at.get(4 + len as usize..) {
            None | Some([]) => true,
            Some(next) => match (le_u24(next), next.get(3)) {
                (Some(_), Some(&s)) => s == seq.wrapping_add(1),
                _ => true,
            },
        }
    })
}

/// Is this segment's payload one or more whole semi-sync ACK packets? The replica's side of a
/// replication stream that the capture joined mid-way.
pub fn looks_like_semi_sync_acks(payload: &[u8]) -> bool {
    let mut at = payload;
    while !at.is_empty() {
        let Some(len) = le_u24(at) else {
            return false;
        };
        if ack_packet_at(at) != Verdict::Yes {
            return false;
        }
        at = at.get(4 + len as usize..).unwrap_or(&[]);
    }
    !payload.is_empty()
}

/// How far past an event packet [`binlog_event_verdict`] looks for the next packet's header: an event
/// longer than this is judged by its own header.
const NEXT_HEADER_LOOKAHEAD: usize = 2048;

/// [`looks_like_binlog_events`] at one position of a stream, judged only on bytes at fixed places: an
/// event packet's header (its first 26 bytes at most) and, when the packet ends within 2,048 bytes,
/// the next packet's header with the next sequence id. On `Final` bytes that end before the next
/// header, the event's own header decides (the event runs past them).
pub fn binlog_event_verdict(w: &[u8], extent: Extent) -> Verdict {
    const NEEDED: usize = 3 + EVENT_HEADER;
    let (Some(len), Some(&seq)) = (le_u24(w), w.get(3)) else {
        return extent.settle(Verdict::NeedMore, || false);
    };
    // Only the bytes the header check needs, so that bytes after them never change its answer.
    let head = w.get(..4 + NEEDED.min(len as usize)).unwrap_or(w);
    let event = event_packet_at(head);
    let next_at = 4 + len as usize;
    let v = match event {
        Verdict::Yes if next_at + 4 > NEXT_HEADER_LOOKAHEAD => Verdict::Yes,
        Verdict::Yes => match w.get(next_at + 3) {
            Some(&s) => (s == seq.wrapping_add(1)).into(),
            None => Verdict::NeedMore,
        },
        v => v,
    };
    extent.settle(v, || event == Verdict::Yes)
}

/// [`looks_like_semi_sync_acks`] on a whole turn of the replica: every packet of it a whole semi-sync
/// ACK. `Growing` bytes are never enough for a yes (another packet may follow), only for a no.
pub fn semi_sync_acks_verdict(replica_bytes: &[u8], extent: Extent) -> Verdict {
    let mut at = replica_bytes;
    let mut v = Verdict::NeedMore;
    while !at.is_empty() {
        match ack_packet_at(at) {
            Verdict::Yes => {}
            Verdict::No => {
                v = Verdict::No;
                break;
            }
            Verdict::NeedMore => break,
        }
        at = le_u24(at)
            .and_then(|len| at.get(4 + len as usize..))
            .unwrap_or(&[]);
    }
    extent.settle(v, || looks_like_semi_sync_acks(replica_bytes))
}

/// Is the logical packet `p` (kept prefix) of `len` bytes with sequence id `seq` a semi-sync ACK?
pub(crate) fn is_ack_packet(seq: u8, p: &[u8], len: u64) -> bool {
    seq == 0
        && (10..=521).contains(&len)
        && p.first() == Some(&SEMI_SYNC_MAGIC)
        && p.get(9..)
            .is_some_and(|name| name.iter().all(u8::is_ascii_graphic))
}

/// Is `w`, from a candidate packet header on, a semi-sync ACK (sequence id 0, the magic, an 8-byte
/// position and a printable file name)? For hunting a packet boundary in the replica's bytes.
pub(crate) fn ack_packet_at(w: &[u8]) -> Verdict {
    let (Some(len), Some(&seq)) = (le_u24(w), w.get(3)) else {
        return Verdict::NeedMore;
    };
    if seq != 0 || !(10..=521).contains(&len) {
        return Verdict::No;
    }
    match (w.get(4), w.get(4..4 + len as usize)) {
        (Some(&b), _) if b != SEMI_SYNC_MAGIC => Verdict::No,
        (_, Some(p)) if is_ack_packet(seq, p, u64::from(len)) => Verdict::Yes,
        (_, Some(_)) => Verdict::No,
        _ => Verdict::NeedMore,
    }
}

/// What a replica said before its dump, in `SET` statements the dump depends on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ReplicaHints {
    /// `SET @slave_connect_state=...` (MariaDB): the dump starts from a GTID position.
    gtid_state: bool,
}

impl ReplicaHints {
    /// Whether a COM_QUERY's text is one [`ReplicaHints::note_query`] reads: a `SET @...`.
    #[inline]
    pub(crate) fn may_note(b: &[u8]) -> bool {
        // Most statements are told apart by their third byte (SELECT, SHOW), before the loop of the
        // comparison.
        matches!(b.get(2), Some(b't' | b'T'))
            && b.len() >= 6
            && b[..5].eq_ignore_ascii_case(b"SET @")
    }

    /// A COM_QUERY's text. Only `SET @...` statements are looked at (the check of the first bytes is
    /// all that other statements cost).
    pub(crate) fn note_query(&mut self, text: &str) {
        let b = text.as_bytes();
        if !Self::may_note(b) {
            return;
        }
        let var = b.get(5..24).unwrap_or(&[]);
        if var.eq_ignore_ascii_case(b"slave_connect_state") {
            self.gtid_state = true;
        }
    }
}

/// Which dump began the stream.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DumpRequest {
    /// `COM_BINLOG_DUMP` or `COM_BINLOG_DUMP_GTID`.
    pub command: Command,
    /// Frame and time of the request.
    pub at: Meta,
    /// The `server_id` the replica announced (distinct for every server of a replication topology).
    pub server_id: u32,
    /// Binary log file to start from (empty: the first, or the one a GTID position leads to).
    pub start_file: String,
    /// Byte position in `start_file` to start from (4, the first event, when the replica starts a file).
    pub start_position: u64,
    /// The dump starts from a GTID set: `COM_BINLOG_DUMP_GTID`, or MariaDB's `@slave_connect_state`.
    pub gtid: bool,
    /// The dump's flags (`BINLOG_DUMP_NON_BLOCK` = 1: end with EOF when caught up).
    pub flags: u16,
}

fn parse_dump(command: Command, at: Meta, body: &[u8], hints: ReplicaHints) -> DumpRequest {
    let mut r = Reader::new(body);
    let mut dump = DumpRequest {
        command,
        at,
        server_id: 0,
        start_file: String::new(),
        start_position: 0,
        gtid: command == Command::BinlogDumpGtid || hints.gtid_state,
        flags: 0,
    };
    match command {
        Command::BinlogDumpGtid => {
            dump.flags = r.u16().unwrap_or(0);
            dump.server_id = r.u32().unwrap_or(0);
            let name_len = r.u32().unwrap_or(0) as usize;
            let name = r.bytes(name_len.min(r.remaining())).unwrap_or(&[]);
            dump.start_file = wire::text(name);
            dump.start_position = r.u64().unwrap_or(0);
        }
        _ => {
            dump.start_position = u64::from(r.u32().unwrap_or(0));
            dump.flags = r.u16().unwrap_or(0);
            dump.server_id = r.u32().unwrap_or(0);
            dump.start_file = wire::text(r.rest());
        }
    }
    dump
}

/// How the primary ended a stream, when it said so.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum StreamEnd {
    /// EOF after the last event: a non-blocking dump caught up.
    Eof {
        /// Where.
        at: Meta,
    },
    /// An ERR_Packet.
    Error {
        /// Where.
        at: Meta,
        /// Its code (1236: the start position is not in the binary logs).
        code: u16,
        /// Its message.
        message: String,
    },
}

/// An event whose ACK the primary asked for and has not had.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AwaitedAck {
    /// The event's end position in its binary log (what the ACK will name).
    pub position: u64,
    /// Where the event's last byte was seen: the wait runs from there.
    pub event_end: Meta,
}

/// A replication stream at the moment a side closed the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplicationAtClose {
    /// Binary-log events the primary had streamed, whole, when the side closed.
    pub events: u64,
    /// Part of an event had arrived and the rest had not.
    pub mid_event: bool,
    /// The oldest event whose semi-sync ACK the primary was still waiting for.
    pub awaiting_ack: Option<AwaitedAck>,
    /// Frame and time of the segment that carried the last complete event's last byte; `None` before
    /// the first event.
    pub last_event: Option<Meta>,
}

/// One replication stream, as decoded so far.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ReplicationSummary {
    /// The dump request; `None` when the capture began after it.
    pub dump: Option<DumpRequest>,
    /// Events carried the semi-sync header, or the replica sent ACKs.
    pub semi_sync: bool,
    /// Binary-log events streamed, whole.
    pub events: u64,
    /// Events by type code (256 counters once the first event came; see [`event_type_name`]).
    pub events_by_type: Vec<u64>,
    /// Bytes of the events (their size fields).
    pub bytes: u64,
    /// Commits: XID events, and QUERY events whose statement is `COMMIT`.
    pub transactions: u64,
    /// Events whose ACK the primary asked for.
    pub acks_requested: u64,
    /// Semi-sync ACKs the replica sent.
    pub acks: u64,
    /// ACKs that named a requested event (each gives an [`ReplicationSample::Ack`]).
    pub acks_matched: u64,
    /// ACKs naming no event asked for (e.g. one the capture missed).
    pub acks_unmatched: u64,
    /// Requests answered only by a later ACK (which releases the primary as well).
    pub acks_covered: u64,
    /// Requests forgotten because too many were open at once.
    pub acks_untracked: u64,
    /// The binary log file the stream is in, from its ROTATE events.
    pub file: Option<String>,
    /// The end position of the last event (0 before any).
    pub position: u64,
    /// Whether events end with a CRC32, from the format description event.
    pub checksum: Option<bool>,
    /// Frame and time of the segment that completed the first event; `None` before any.
    pub first_event: Option<Meta>,
    /// Frame and time of the segment that completed the last event so far; `None` before any.
    pub last_event: Option<Meta>,
    /// The primary's EOF or ERR, if it ended the stream itself.
    pub end: Option<StreamEnd>,
    /// Server packets that were not events (nor EOF/ERR).
    pub malformed_packets: u64,
    /// Replica packets that were neither an ACK nor COM_QUIT.
    pub unexpected_client_packets: u64,
    /// Event bytes lost in gaps (their events are counted; what they said is unknown).
    pub gap_bytes: u64,
}

impl ReplicationSummary {
    /// Events by type code, for the types seen.
    pub fn event_counts(&self) -> impl Iterator<Item = (u8, u64)> + '_ {
        (0..=u8::MAX)
            .zip(&self.events_by_type)
            .filter(|&(_, &n)| n > 0)
            .map(|(t, &n)| (t, n))
    }
}

/// What distributions are made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ReplicationSample {
    /// A semi-sync ACK named an event that asked for it: the latency runs from the event's last byte
    /// to the ACK's.
    Ack {
        /// The event's end position.
        position: u64,
        /// Where the event ended.
        event_end: Meta,
        /// Where the ACK was seen.
        ack: Meta,
    },
    /// An event with a creation time: capture time of its last byte minus the timestamp in its header
    /// (whole seconds, so up to 1 s more than the true lag). Events of the log's own bookkeeping (format
    /// description, rotate, heartbeats, GTID lists, checkpoints) and those the primary made up are left
    /// out: their timestamps are not a transaction's.
    Lag {
        /// Where the event ended.
        at: Meta,
        /// Nanoseconds; negative when the clocks disagree.
        lag_ns: i64,
    },
}

/// An open ACK request.
#[derive(Debug, Clone, Copy)]
struct AckRequest {
    position: u64,
    /// Which binary log file ([`Replication::file_generation`] when it was asked).
    generation: u32,
    event_end: Meta,
}

/// The dump, until the primary's first packet says how it was taken.
#[derive(Debug, Clone)]
struct DumpPending {
    command: Command,
    at: Meta,
    request_bytes: u64,
}

/// A replication stream being decoded (one per connection, from the dump on).
#[derive(Debug, Clone)]
pub(crate) struct Replication {
    summary: ReplicationSummary,
    dump: Option<DumpPending>,
    awaited: VecDeque<AckRequest>,
    /// Counts ROTATEs to a new file: ACKs name files, requests remember the generation.
    file_generation: u32,
    samples: Vec<ReplicationSample>,
}

impl Replication {
    /// The replica sent a dump (`body` is the command's payload after the command byte).
    pub(crate) fn dumped(
        command: Command,
        pkt: &PacketEnd,
        body: &[u8],
        hints: ReplicaHints,
        request_bytes: u64,
    ) -> Self {
        let dump = parse_dump(command, pkt.start, body, hints);
        let mut r = Replication::joined();
        r.summary.file = Some(dump.start_file.clone()).filter(|f| !f.is_empty());
        r.summary.dump = Some(dump);
        r.dump = Some(DumpPending {
            command,
            at: pkt.start,
            request_bytes,
        });
        r
    }

    /// A stream the capture joined after its dump.
    pub(crate) fn joined() -> Self {
        Replication {
            summary: ReplicationSummary::default(),
            dump: None,
            awaited: VecDeque::new(),
            file_generation: 0,
            samples: Vec::new(),
        }
    }

    pub(crate) fn summary(&self) -> &ReplicationSummary {
        &self.summary
    }

    pub(crate) fn samples(&self) -> &[ReplicationSample] {
        &self.samples
    }

    pub(crate) fn clear_samples(&mut self) {
        self.samples.clear();
    }

    /// What a close finds; `mid_event`: the primary's framing is inside a packet.
    pub(crate) fn at_close(&self, mid_event: bool) -> ReplicationAtClose {
        ReplicationAtClose {
            events: self.summary.events,
            mid_event,
            awaiting_ack: self.awaited.front().map(|a| AwaitedAck {
                position: a.position,
                event_end: a.event_end,
            }),
            last_event: self.summary.last_event,
        }
    }

    /// The dump as a transaction, told by the primary's first packet (`Some(err)` if it was an ERR).
    fn dump_transaction(&mut self, answer: Option<(&PacketEnd, Outcome)>) -> Option<Transaction> {
        let d = self.dump.take()?;
        let mut t = Transaction {
            command: d.command,
            statement: None,
            statement_id: None,
            request_ts_ns: d.at.ts_ns,
            request_frame: d.at.frame,
            last_request_ts_ns: d.at.ts_ns,
            last_request_frame: d.at.frame,
            first_response_ts_ns: None,
            first_response_frame: None,
            last_response_ts_ns: None,
            last_response_frame: None,
            rows: 0,
            server_status: None,
            response_bytes: 0,
            request_bytes: d.request_bytes,
            gap_bytes: 0,
            outcome: Outcome::ReplicationStream,
            execute: crate::ExecuteBytes::default(),
        };
        if let Some((pkt, outcome)) = answer {
            t.first_response_ts_ns = Some(pkt.start.ts_ns);
            t.first_response_frame = Some(pkt.start.frame);
            t.last_response_ts_ns = Some(pkt.end.ts_ns);
            t.last_response_frame = Some(pkt.end.frame);
            t.response_bytes = pkt.len + 4;
            t.outcome = outcome;
        }
        Some(t)
    }

    /// The connection closed (`by`, `flag`) or the capture ended (`None`) before the primary said
    /// anything: the dump went unanswered.
    pub(crate) fn unanswered_dump(
        &mut self,
        closed: Option<(Direction, CloseFlag)>,
    ) -> Option<Transaction> {
        let mut t = self.dump_transaction(None)?;
        t.outcome = match closed {
            Some((by, flag)) => Outcome::ClosedBeforeResponse { by, flag },
            None => Outcome::CaptureEnded,
        };
        Some(t)
    }

    /// A packet from the primary; returns the dump's transaction when this packet decides it.
    pub(crate) fn on_server_packet(&mut self, pkt: &PacketEnd, p: &[u8]) -> Option<Transaction> {
        let s = &mut self.summary;
        s.gap_bytes += pkt.gap_bytes;
        match p.first() {
            Some(0xFF) => {
                let e = wire::parse_err(p);
                let (code, message) = e
                    .as_ref()
                    .map_or((0, String::new()), |e| (e.code, wire::text(e.message)));
                if self.dump.is_some() {
                    let outcome = Outcome::Err {
                        code,
                        sql_state: SqlState::from_wire(e.map_or(&[][..], |e| e.sql_state)),
                        message: message.clone(),
                    };
                    self.summary.end = Some(StreamEnd::Error {
                        at: pkt.end,
                        code,
                        message,
                    });
                    return self.dump_transaction(Some((pkt, outcome)));
                }
                s.end = Some(StreamEnd::Error {
                    at: pkt.end,
                    code,
                    message,
                });
                return None;
            }
            Some(0xFE) if pkt.len < 9 => {
                s.end = Some(StreamEnd::Eof { at: pkt.end });
            }
            _ => self.on_event_packet(pkt, p),
        }
        self.dump_transaction(None)
    }

    fn on_event_packet(&mut self, pkt: &PacketEnd, p: &[u8]) {
        let s = &mut self.summary;
        let Some((layout, h)) = event_layout(p, pkt.len) else {
            if pkt.damaged && p.first() == Some(&0x00) {
                // Cut by a gap before its header was read: an event, of a kind unknown.
                s.events += 1;
            } else {
                s.malformed_packets += 1;
            }
            return;
        };
        s.semi_sync |= layout.semi_sync;
        s.events += 1;
        if s.events_by_type.is_empty() {
            s.events_by_type.resize(256, 0);
        }
        if let Some(n) = s.events_by_type.get_mut(usize::from(h.kind)) {
            *n += 1;
        }
        s.bytes += u64::from(h.size);
        s.first_event.get_or_insert(pkt.start);
        s.last_event = Some(pkt.end);
        if h.log_pos != 0 {
            s.position = u64::from(h.log_pos);
        }
        let event = p.get(layout.offset..).unwrap_or(&[]);
        let body = event.get(EVENT_HEADER..).unwrap_or(&[]);
        // The body as far as it was kept, without a trailing checksum once the event is whole.
        let whole = event.len() as u64 == u64::from(h.size);
        let payload = |crc: Option<bool>| {
            let cut = if whole && crc == Some(true) { 4 } else { 0 };
            body.get(..body.len().saturating_sub(cut)).unwrap_or(&[])
        };
        match h.kind {
            event_type::FORMAT_DESCRIPTION if whole => s.checksum = format_checksum(body),
            event_type::ROTATE if whole => {
                if let Some(name) = rotate_file(payload(s.checksum), s.checksum) {
                    if s.file.as_deref() != Some(name.as_str()) {
                        self.file_generation = self.file_generation.wrapping_add(1);
                        s.file = Some(name);
                    }
                }
            }
            event_type::XID => s.transactions += 1,
            event_type::QUERY if is_commit(payload(s.checksum), whole) => s.transactions += 1,
            _ => {}
        }
        if layout.need_ack {
            s.acks_requested += 1;
            if self.awaited.len() == MAX_AWAITED_ACKS {
                self.awaited.pop_front();
                s.acks_untracked += 1;
            }
            self.awaited.push_back(AckRequest {
                position: u64::from(h.log_pos),
                generation: self.file_generation,
                event_end: pkt.end,
            });
        }
        let bookkeeping = matches!(
            h.kind,
            event_type::FORMAT_DESCRIPTION
                | event_type::ROTATE
                | event_type::STOP
                | event_type::HEARTBEAT
                | event_type::HEARTBEAT_V2
                | event_type::PREVIOUS_GTIDS
                | event_type::BINLOG_CHECKPOINT
                | event_type::GTID_LIST
                | event_type::START_ENCRYPTION
        );
        if h.timestamp != 0 && h.flags & ARTIFICIAL == 0 && !bookkeeping {
            let created = i64::from(h.timestamp) * 1_000_000_000;
            self.samples.push(ReplicationSample::Lag {
                at: pkt.end,
                lag_ns: (pkt.end.ts_ns as i64).saturating_sub(created),
            });
        }
    }

    /// A packet from the replica. Returns false for one the command phase must see (COM_QUIT).
    pub(crate) fn on_client_packet(&mut self, pkt: &PacketEnd, p: &[u8]) -> bool {
        let s = &mut self.summary;
        match p.first() {
            Some(&SEMI_SYNC_MAGIC) => {}
            Some(0x01) if pkt.len == 1 => return false,
            _ => {
                s.unexpected_client_packets += 1;
                return true;
            }
        }
        s.acks += 1;
        s.semi_sync = true;
        let mut r = Reader::new(p.get(1..).unwrap_or(&[]));
        let Some(position) = r.u64() else {
            s.acks_unmatched += 1;
            return true;
        };
        let name = r.rest();
        // An ACK names the current file, or (right after a ROTATE) an earlier one.
        let current = s.file.as_deref().is_none_or(|f| f.as_bytes() == name);
        let in_file = |a: &AckRequest| {
            if current {
                a.generation == self.file_generation
            } else {
                a.generation != self.file_generation
            }
        };
        match self
            .awaited
            .iter()
            .position(|a| in_file(a) && a.position == position)
        {
            Some(i) => {
                // The requests before it are released by it too.
                s.acks_covered += i as u64;
                let answered = self.awaited.drain(..=i).next_back();
                if let Some(a) = answered {
                    s.acks_matched += 1;
                    self.samples.push(ReplicationSample::Ack {
                        position,
                        event_end: a.event_end,
                        ack: pkt.end,
                    });
                }
            }
            None => s.acks_unmatched += 1,
        }
        true
    }
}

/// The checksum algorithm byte near the end of a format description event (servers since MySQL 5.6.1
/// and MariaDB 5.3 write it, followed by the event's own CRC32): 0 none, 1 CRC32.
fn format_checksum(body: &[u8]) -> Option<bool> {
    // binlog version (2), server version (50), create time (4), header length (1), post-header lengths.
    let version = body.get(2..52)?;
    let version = version.split(|&b| b == 0).next().unwrap_or(&[]);
    let aware = version.windows(7).any(|w| w == b"MariaDB") || {
        let mut parts = version.split(|&b| !b.is_ascii_digit()).map(|d| {
            std::str::from_utf8(d)
                .ok()
                .and_then(|d| d.parse::<u32>().ok())
        });
        let (major, minor, patch) = (
            parts.next().flatten().unwrap_or(0),
            parts.next().flatten().unwrap_or(0),
            parts.next().flatten().unwrap_or(0),
        );
        (major, minor, patch) >= (5, 6, 1)
    };
    if !aware {
        return Some(false);
    }
    match body.len().checked_sub(5).and_then(|i| body.get(i)) {
        Some(0) => Some(false),
        Some(1) => Some(true),
        _ => None,
    }
}

/// The file name a ROTATE event names (after its 8-byte position). Before the format description
/// says whether events carry a checksum (the first ROTATE of a stream comes before it), a name whose
/// last four bytes do not end like a file name (`.000042`) is taken to carry one.
fn rotate_file(body: &[u8], checksum: Option<bool>) -> Option<String> {
    let name = body.get(8..)?;
    let name = match checksum {
        Some(_) => name,
        None => {
            let plain = name.last().is_some_and(u8::is_ascii_digit)
                && name.iter().all(u8::is_ascii_graphic);
            if plain || name.len() <= 4 {
                name
            } else {
                name.get(..name.len() - 4).unwrap_or(&[])
            }
        }
    };
    (!name.is_empty()).then(|| wire::text(name))
}

/// Is this QUERY event body (`whole`: nothing cut off) a `COMMIT`? Post-header: thread id (4), time
/// (4), schema length (1), error code (2), status variables' length (2); then the status variables,
/// the schema and a NUL, then the statement.
fn is_commit(body: &[u8], whole: bool) -> bool {
    let mut r = Reader::new(body);
    let (Some(_), Some(_), Some(db_len), Some(_), Some(vars)) =
        (r.u32(), r.u32(), r.u8(), r.u16(), r.u16())
    else {
        return false;
    };
    if r.skip(usize::from(vars) + usize::from(db_len) + 1)
        .is_none()
    {
        return false;
    }
    let text = r.rest();
    // Before the checksum is known a whole event's text may end with its 4 CRC bytes.
    whole
        && (text.eq_ignore_ascii_case(b"COMMIT")
            || text.len() == 10 && text[..6].eq_ignore_ascii_case(b"COMMIT"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(kind: u8, size: u32, log_pos: u32, flags: u16) -> Vec<u8> {
        let mut h = 1_700_000_000u32.to_le_bytes().to_vec();
        h.push(kind);
        h.extend_from_slice(&1u32.to_le_bytes());
        h.extend_from_slice(&size.to_le_bytes());
        h.extend_from_slice(&log_pos.to_le_bytes());
        h.extend_from_slice(&flags.to_le_bytes());
        h
    }

    #[test]
    fn an_event_packet_is_recognised_with_and_without_the_semi_sync_header() {
        let mut plain = vec![0];
        plain.extend(header(16, 31, 1000, 0));
        plain.extend_from_slice(&[0; 12]);
        assert_eq!(plain.len(), 32);
        let (l, h) = event_layout(&plain, 32).unwrap();
        assert_eq!(
            (l.offset, l.semi_sync, l.need_ack, h.kind),
            (1, false, false, 16)
        );
        let mut semi = vec![0, 0xEF, 1];
        semi.extend_from_slice(&plain[1..]);
        let (l, _) = event_layout(&semi, 34).unwrap();
        assert_eq!((l.offset, l.semi_sync, l.need_ack), (3, true, true));
        // The size must add up.
        assert!(event_layout(&plain, 33).is_none());
        assert!(!is_event_packet(&plain, 40));
    }

    #[test]
    fn a_rotate_name_loses_its_checksum_before_the_format_is_known() {
        let mut body = 4u64.to_le_bytes().to_vec();
        body.extend_from_slice(b"primary-bin.000001");
        assert_eq!(rotate_file(&body, None).unwrap(), "primary-bin.000001");
        body.extend_from_slice(&[0xED, 0x2D, 0x58, 0x92]);
        assert_eq!(rotate_file(&body, None).unwrap(), "primary-bin.000001");
    }

    #[test]
    fn only_set_statements_give_hints() {
        let mut h = ReplicaHints::default();
        h.note_query("select @slave_connect_state");
        assert!(!h.gtid_state);
        h.note_query("SET @slave_connect_state=''");
        assert!(h.gtid_state);
    }
}
