//! The per-connection state machine.
//!
//! Layering, per direction: bytes → [compressed-protocol inflate] → packet
//! framing (or, when framing is lost, a hunt for a packet boundary) → one call
//! of the protocol state machine per completed logical packet. The protocol
//! state machine ([`Core`]) pairs client requests with server responses through
//! a queue of open requests; the server side interprets each packet according
//! to the request at the head of that queue.

use std::collections::{HashMap, VecDeque};

use crate::command::Command;
use crate::compress::Decompressor;
use crate::detect::{
    client_command_at, compressed_client_command_at, compressed_server_packet_at, server_answer_at,
    AnswerStart, Verdict,
};
use crate::framing::{Framer, GapEffect, PacketEnd};
use crate::replication::{self, ReplicaHints, Replication, ReplicationSample, ReplicationSummary};
use crate::wire::{self, capability as cap, status, OkPacket};
use crate::{
    CachingSha2Auth, CloseContext, CloseFlag, Compression, Direction, Encryption, Meta, Outcome,
    PendingRequest, ServerError, SessionInfo, SessionPhase, SqlState, StartMode, Transaction,
    STATEMENT_CAP,
};

/// Kept prefix of a client packet: statement text plus room for query attributes.
const CLIENT_PREFIX_CAP: usize = STATEMENT_CAP + 4 * 1024;
/// Kept prefix of a server packet: enough for a greeting, an ERR_Packet's message
/// (MySQL caps them at 512 bytes) and every fixed-layout response.
const SERVER_PREFIX_CAP: usize = 1024;
/// Hunting window of the client side: a header, a command byte and a few more, or a
/// compressed packet's headers and enough of its zlib stream to inflate a command
/// header (a dynamic Huffman table comes first).
const CLIENT_HUNT_WINDOW: usize = 512;
/// Hunting window of the server side: two chained packets must fit in it.
const SERVER_HUNT_WINDOW: usize = 2048;
/// Open requests kept at once; a client pipelining more than this is pathological.
const MAX_PENDING: usize = 64;
/// Prepared statements remembered for COM_STMT_EXECUTE.
const MAX_STATEMENTS: usize = 4096;
/// Cap on an ERR_Packet message kept in a transaction.
const MESSAGE_CAP: usize = 512;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StreamMode {
    /// Packet boundaries known.
    Framed,
    /// Boundaries lost: looking for one.
    Hunting,
    /// Nothing more will be decoded (TLS, zstd).
    Stopped,
}

/// One direction's byte handling.
struct DirStream {
    mode: StreamMode,
    framer: Framer,
    inflater: Option<Box<Decompressor>>,
    window: Vec<u8>,
    window_cap: usize,
    replay: Vec<u8>,
}

impl DirStream {
    fn new(prefix_cap: usize, window_cap: usize, mode: StreamMode) -> Self {
        DirStream {
            mode,
            framer: Framer::new(prefix_cap),
            inflater: None,
            window: Vec::new(),
            window_cap,
            replay: Vec::new(),
        }
    }

    /// Drop the hunt and restart framing at the current byte; returns bytes dropped.
    fn resync_here(&mut self) -> u64 {
        let dropped = self.window.len() as u64 + self.framer.reset();
        self.window.clear();
        if let Some(d) = self.inflater.as_mut() {
            d.reset();
        }
        if self.mode == StreamMode::Hunting {
            self.mode = StreamMode::Framed;
        }
        dropped
    }

    fn start_hunting(&mut self) {
        if self.mode != StreamMode::Stopped {
            self.mode = StreamMode::Hunting;
            self.window.clear();
            self.framer.reset();
            if let Some(d) = self.inflater.as_mut() {
                d.reset();
            }
        }
    }
}

/// How a direction's packets are carried, as far as the session knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Carriage {
    Plain,
    /// Inside compressed-protocol packets (CLIENT_COMPRESS).
    Compressed,
    /// Joined mid-stream: the first client command found says which.
    Unknown,
}

/// What the boundary search found at a position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Boundary {
    /// A packet starts here, carried so.
    Here(Carriage),
    NotHere,
    NeedMore,
}

impl Boundary {
    fn from(v: Verdict, carriage: Carriage) -> Boundary {
        match v {
            Verdict::Yes => Boundary::Here(carriage),
            Verdict::No => Boundary::NotHere,
            Verdict::NeedMore => Boundary::NeedMore,
        }
    }
}

/// Is `w` a plausible start of the stream at a packet boundary? Client side: a
/// command; server side: a run of packets. A compressed stream must be at a
/// boundary of both the compressed packets and the packets they carry.
fn hunt_check(
    dir: Direction,
    carriage: Carriage,
    acks: bool,
    w: &[u8],
    window_cap: usize,
    answer: Option<AnswerStart<'_>>,
) -> Boundary {
    use Carriage::*;
    // A replica's semi-sync ACK when one may come (see `Core::expects_acks`), and a primary's binlog
    // event, are boundaries of plain streams whenever seen: a replication stream joined mid-way sends
    // no command that would tell how packets are carried.
    let plain_client = |w: &[u8]| {
        let ack = if acks {
            replication::ack_packet_at(w)
        } else {
            Verdict::No
        };
        match ack {
            Verdict::No => Boundary::from(client_command_at(w), Plain),
            v => Boundary::from(v, Plain),
        }
    };
    if dir == Direction::ServerToClient && carriage != Compressed {
        match replication::event_packet_at(w) {
            Verdict::Yes => return Boundary::Here(Plain),
            Verdict::NeedMore => return Boundary::NeedMore,
            Verdict::No => {}
        }
    }
    match (dir, carriage) {
        (Direction::ClientToServer, Plain) => plain_client(w),
        (Direction::ClientToServer, Compressed) => {
            Boundary::from(compressed_client_command_at(w, window_cap), Compressed)
        }
        // Asked at the stream's first byte only (see `Session::hunt`). A compressed
        // command never reads as a plain one at the same place (its "command byte" would
        // be 0x00, or the inflated stream would not check out), and is asked first: its
        // verdict needs more bytes.
        (Direction::ClientToServer, Unknown) => match compressed_client_command_at(w, window_cap) {
            Verdict::Yes => Boundary::Here(Compressed),
            Verdict::NeedMore => Boundary::NeedMore,
            Verdict::No => plain_client(w),
        },
        (Direction::ServerToClient, Plain) => {
            Boundary::from(server_answer_at(w, window_cap, answer), Plain)
        }
        (Direction::ServerToClient, Compressed) => Boundary::from(
            compressed_server_packet_at(w, window_cap, answer),
            Compressed,
        ),
        // Until the client's first command tells how packets are carried.
        (Direction::ServerToClient, Unknown) => Boundary::NotHere,
    }
}

/// Side effects of one packet on the streams, applied by [`Session`].
#[derive(Debug, Default, Clone, Copy)]
struct Effects {
    /// Stop decoding both directions (TLS, zstd).
    stop: bool,
    /// Both directions switch to the compressed protocol after this packet.
    compress: bool,
    /// A client command arrived: the server side may resynchronise here.
    new_command: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    AwaitGreeting,
    AwaitHandshakeResponse,
    Authenticating,
    Command,
    /// The server refused the login (an ERR where a greeting or the login's OK
    /// belongs): the connection never reaches the command phase, and the server closes it.
    LoginRefused,
    Quit,
    Stopped,
    /// Mid-stream start or lost during the connection phase: waiting for a command.
    Unknown,
}

/// How the server is expected to answer, given what it sent so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// No response will come.
    NoResponse,
    /// One OK/ERR/EOF.
    Simple,
    /// One packet of any content (COM_STATISTICS).
    AnyOne,
    /// OK, ERR, LOCAL INFILE request or the column count of a resultset.
    First,
    /// Column definitions still to come.
    ColumnDefs { left: u64 },
    /// After the definitions: metadata EOF (classic) or first row/terminator.
    AfterDefs,
    /// Rows until EOF/OK terminator or ERR.
    Rows,
    /// LOCAL INFILE requested: the client is sending the file.
    InfileData,
    /// The client's empty packet ended the file: OK/ERR follows.
    InfileResult,
    /// COM_STMT_PREPARE: COM_STMT_PREPARE_OK or ERR.
    PrepareFirst,
    /// Parameter then column definitions, each block followed by EOF in classic mode.
    PrepareDefs { params: u16, columns: u16 },
    /// COM_FIELD_LIST: definitions until EOF.
    FieldList,
    /// COM_BINLOG_DUMP(_GTID): events until EOF or ERR.
    Binlog,
    /// Authentication exchange (connection phase or COM_CHANGE_USER).
    Auth,
    /// Server framing was lost during this response.
    Lost,
}

struct Pending {
    command: Command,
    statement: Option<String>,
    statement_id: Option<u32>,
    request: Meta,
    first_response: Option<Meta>,
    last_response: Option<Meta>,
    rows: u64,
    response_bytes: u64,
    request_bytes: u64,
    gap_bytes: u64,
    stage: Stage,
    next_seq: u8,
    saw_resultset: bool,
    saw_infile: bool,
    file_bytes: u64,
    /// Server bytes of this response may be in a gap.
    lost: bool,
    /// Bytes of a server gap that ended the framing while nothing of this response had come: the
    /// response may have begun in it, or may begin after it (see [`starts_response`]).
    gap_before_response: Option<u64>,
    /// COM_STMT_EXECUTE asked for a cursor.
    cursor: bool,
    /// COM_STMT_PREPARE_OK's (statement id, params, columns), while definitions follow.
    prepared: Option<(u32, u16, u16)>,
    /// COM_INIT_DB / COM_CHANGE_USER: what to record in the session info on OK.
    new_schema: Option<String>,
    new_user: Option<String>,
}

impl Pending {
    fn new(command: Command, request: Meta, stage: Stage) -> Self {
        Pending {
            command,
            statement: None,
            statement_id: None,
            request,
            first_response: None,
            last_response: None,
            rows: 0,
            response_bytes: 0,
            request_bytes: 0,
            gap_bytes: 0,
            stage,
            next_seq: 1,
            saw_resultset: false,
            saw_infile: false,
            file_bytes: 0,
            lost: false,
            gap_before_response: None,
            cursor: false,
            prepared: None,
            new_schema: None,
            new_user: None,
        }
    }

    fn into_transaction(mut self, outcome: Outcome) -> Transaction {
        let statement = self.statement.take();
        self.to_transaction(statement, outcome)
    }

    fn to_transaction(&self, statement: Option<String>, outcome: Outcome) -> Transaction {
        Transaction {
            command: self.command,
            statement,
            statement_id: self.statement_id,
            request_ts_ns: self.request.ts_ns,
            request_frame: self.request.frame,
            first_response_ts_ns: self.first_response.map(|m| m.ts_ns),
            first_response_frame: self.first_response.map(|m| m.frame),
            last_response_ts_ns: self.last_response.map(|m| m.ts_ns),
            last_response_frame: self.last_response.map(|m| m.frame),
            rows: self.rows,
            response_bytes: self.response_bytes,
            request_bytes: self.request_bytes,
            gap_bytes: self.gap_bytes,
            outcome,
        }
    }

    fn snapshot(&self) -> PendingRequest {
        PendingRequest {
            command: self.command,
            statement: self.statement.clone(),
            request_ts_ns: self.request.ts_ns,
            request_frame: self.request.frame,
            rows: self.rows,
            response_bytes: self.response_bytes,
            first_response_frame: self.first_response.map(|m| m.frame),
            last_response_frame: self.last_response.map(|m| m.frame),
        }
    }
}

/// Whether the EOF_Packet is in use; learned from capabilities or, mid-stream,
/// from the shape of the first resultset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EofMode {
    Unknown,
    Classic,
    Deprecated,
}

/// What a server packet did to the head request.
enum Step {
    Continue,
    Done(Outcome),
}

/// At most this many spare statement strings per session, of at most [`SPARE_CAPACITY`] bytes
/// each: a session completes about one request per turn, and the spares must not grow its memory.
const SPARES: usize = 2;
const SPARE_CAPACITY: usize = 1024;

struct Core {
    phase: Phase,
    info: SessionInfo,
    queue: VecDeque<Pending>,
    done: Vec<Transaction>,
    /// Statement strings of transactions the caller is done with ([`Session::clear_completed`]),
    /// emptied, for the next statements: one allocation and free per request saved, owned by the
    /// session so that no state hides in the thread.
    spares: Vec<String>,
    statements: HashMap<u32, String>,
    eof_mode: EofMode,
    /// A classic trailing EOF after COM_STMT_PREPARE_OK definitions may follow
    /// with this sequence id (only when the EOF mode is unknown).
    trailing_eof: Option<u8>,
    /// The client half-closed (FIN): the server may still answer what it read.
    client_fin: bool,
    /// Joined mid-stream and no client command found yet: whether the compressed
    /// protocol is in force is not known.
    compression_unknown: bool,
    /// From a replica's binlog dump on: the replication stream (boxed: few connections have one).
    replication: Option<Box<Replication>>,
    /// What the client's `SET @...` statements said, for a dump to come.
    replica_hints: ReplicaHints,
    /// Where the login began, while the server waits for it.
    login_from: Option<LoginStart>,
}

/// Where a login the server is waiting for began.
#[derive(Debug, Clone, Copy)]
enum LoginStart {
    /// Nothing from the client yet: at the end of the greeting.
    Greeting(Meta),
    /// At the client's first byte after the greeting (which may never make a packet).
    Client(Meta),
}

impl LoginStart {
    fn at(self) -> Meta {
        match self {
            LoginStart::Greeting(m) | LoginStart::Client(m) => m,
        }
    }
}

/// Wire bytes of a logical packet: payload plus one 4-byte header per physical packet.
fn wire_len(len: u64) -> u64 {
    len + 4 * physical_packets(len)
}

/// Physical packets of a logical packet of `len` bytes: one more than its full (0xFFFFFF-byte) ones.
fn physical_packets(len: u64) -> u64 {
    // Nearly every packet is one physical packet: no division for those.
    if len < u64::from(wire::MAX_PAYLOAD) {
        return 1;
    }
    len / u64::from(wire::MAX_PAYLOAD) + 1
}

fn err_outcome(p: &[u8]) -> Option<Outcome> {
    let e = wire::parse_err(p)?;
    let msg = e
        .message
        .get(..e.message.len().min(MESSAGE_CAP))
        .unwrap_or(&[]);
    Some(Outcome::Err {
        code: e.code,
        sql_state: SqlState::from_wire(e.sql_state),
        message: wire::text(msg),
    })
}

fn ok_outcome(ok: OkPacket) -> Outcome {
    Outcome::Ok {
        affected_rows: ok.affected_rows,
        last_insert_id: ok.last_insert_id,
        status_flags: ok.status_flags,
        warnings: ok.warnings,
    }
}

/// A terminator of rows: 0xFE-led and shorter than a full physical packet. A
/// text row can only start with 0xFE when its first value is at least 2^24 bytes
/// long, which makes its first physical packet exactly 0xFFFFFF long.
fn is_terminator(p: &[u8], len: u64) -> bool {
    p.first() == Some(&0xFE) && len < u64::from(wire::MAX_PAYLOAD)
}

/// Statement text from a packet body, capped, with markers for truncation and gaps, written into
/// `s` (a string of the session's spares, or a new one).
fn capped_text(mut s: String, text: &[u8], total: u64, damaged: bool, gap_bytes: u64) -> String {
    let keep = text.get(..text.len().min(STATEMENT_CAP)).unwrap_or(&[]);
    s.clear();
    match std::str::from_utf8(keep) {
        Ok(t) => s.push_str(t),
        Err(_) => s.push_str(&String::from_utf8_lossy(keep)),
    }
    if damaged {
        s.push_str(&format!(" /* gap: {gap_bytes} bytes */"));
    } else if total > keep.len() as u64 {
        // Cut at a character boundary might have left a replacement char: fine.
        s.push_str(&format!(" /* truncated: {total} bytes */"));
    }
    s
}

impl Core {
    fn new(mode: StartMode) -> Self {
        Core {
            phase: match mode {
                StartMode::Handshake => Phase::AwaitGreeting,
                StartMode::MidStream => Phase::Unknown,
                StartMode::Login => Phase::AwaitHandshakeResponse,
            },
            info: SessionInfo::default(),
            queue: VecDeque::with_capacity(8),
            done: Vec::new(),
            spares: Vec::new(),
            statements: HashMap::new(),
            eof_mode: EofMode::Unknown,
            trailing_eof: None,
            client_fin: false,
            compression_unknown: mode == StartMode::MidStream,
            replication: None,
            replica_hints: ReplicaHints::default(),
            login_from: None,
        }
    }

    /// Semi-sync ACKs may come from the client: a replication stream, or a mid-stream start with nothing
    /// decoded yet.
    fn expects_acks(&self) -> bool {
        self.replication.is_some() || (self.phase == Phase::Unknown && self.queue.is_empty())
    }

    /// Effective (negotiated) capabilities, if the handshake was seen.
    fn caps(&self) -> Option<u32> {
        let c = self.info.client_capabilities?;
        Some(match self.info.server_capabilities {
            Some(s) => c & s,
            None => c,
        })
    }

    fn complete_head(&mut self, outcome: Outcome) {
        match self.queue.front_mut() {
            // The common case, with nothing to record in the session info: the transaction is
            // built from the request where it lies rather than from a copy of it.
            Some(p)
                if p.new_schema.is_none()
                    && p.new_user.is_none()
                    && !matches!(p.command, Command::ChangeUser | Command::ResetConnection) =>
            {
                let statement = p.statement.take();
                self.done.push(p.to_transaction(statement, outcome));
                self.queue.pop_front();
            }
            Some(_) => {
                if let Some(p) = self.queue.pop_front() {
                    self.finish_request(p, outcome);
                }
            }
            None => {}
        }
        self.flush_no_response();
    }

    fn finish_request(&mut self, p: Pending, outcome: Outcome) {
        if matches!(outcome, Outcome::Ok { .. }) {
            if let Some(s) = &p.new_schema {
                self.info.schema = Some(s.clone());
            }
            if let Some(u) = &p.new_user {
                self.info.user = Some(u.clone());
            }
            if matches!(p.command, Command::ChangeUser | Command::ResetConnection) {
                // Both deallocate the session's prepared statements.
                self.statements.clear();
            }
        }
        self.done.push(p.into_transaction(outcome));
    }

    /// Requests that expect no response complete once they reach the head.
    fn flush_no_response(&mut self) {
        while self
            .queue
            .front()
            .is_some_and(|p| p.stage == Stage::NoResponse)
        {
            if let Some(p) = self.queue.pop_front() {
                self.finish_request(p, Outcome::NoResponseExpected);
            }
        }
    }

    fn phase_for_close(&self) -> SessionPhase {
        match self.phase {
            Phase::AwaitGreeting
            | Phase::AwaitHandshakeResponse
            | Phase::Authenticating
            | Phase::LoginRefused => SessionPhase::Handshake,
            Phase::Stopped => {
                if self.info.encryption == Encryption::Tls {
                    SessionPhase::Encrypted
                } else {
                    SessionPhase::Undecodable
                }
            }
            Phase::Unknown if self.queue.is_empty() => SessionPhase::Unknown,
            Phase::Quit if self.queue.is_empty() => SessionPhase::AfterQuit,
            _ => match self.queue.front() {
                None => SessionPhase::Idle,
                Some(p) if p.first_response.is_none() => SessionPhase::AwaitingResponse,
                Some(p) if p.saw_resultset || p.rows > 0 => SessionPhase::InResultset {
                    rows: p.rows,
                    bytes: p.response_bytes,
                },
                Some(p) => SessionPhase::InResponse {
                    bytes: p.response_bytes,
                },
            },
        }
    }

    /// Every open request ends with `f(request)`.
    fn complete_all(&mut self, f: impl Fn(&Pending) -> Outcome) {
        while let Some(p) = self.queue.pop_front() {
            let outcome = if p.stage == Stage::NoResponse {
                Outcome::NoResponseExpected
            } else {
                f(&p)
            };
            self.finish_request(p, outcome);
        }
    }

    // ----- client side -----

    fn on_client_packet(&mut self, pkt: PacketEnd, prefix: &[u8], server_hunting: bool) -> Effects {
        let mut fx = Effects::default();
        match self.phase {
            Phase::Stopped => {}
            Phase::AwaitGreeting | Phase::LoginRefused => {
                self.info.counters.unexpected_client_packets += 1;
            }
            Phase::AwaitHandshakeResponse => fx = self.on_handshake_response(pkt, prefix),
            Phase::Authenticating => {
                if let Some(head) = self.queue.front_mut() {
                    head.request_bytes += wire_len(pkt.len);
                    head.gap_bytes += pkt.gap_bytes;
                    head.next_seq = pkt.seq.wrapping_add(1);
                } else {
                    self.info.counters.unexpected_client_packets += 1;
                }
            }
            Phase::Command | Phase::Quit | Phase::Unknown => {
                // After a binlog dump the replica sends ACKs, not commands; a capture that began
                // mid-stream may show an ACK first.
                if self.replication.is_none()
                    && self.phase == Phase::Unknown
                    && self.queue.is_empty()
                    && replication::is_ack_packet(pkt.seq, prefix, pkt.len)
                {
                    self.replication = Some(Box::new(Replication::joined()));
                }
                if let Some(r) = self.replication.as_deref_mut() {
                    if r.on_client_packet(&pkt, prefix) {
                        return fx;
                    }
                }
                // File data of LOAD DATA LOCAL INFILE, or auth data of COM_CHANGE_USER?
                if let Some(head) = self.queue.front_mut() {
                    if head.stage == Stage::InfileData {
                        head.request_bytes += wire_len(pkt.len);
                        head.gap_bytes += pkt.gap_bytes;
                        head.next_seq = pkt.seq.wrapping_add(1);
                        if pkt.len == 0 {
                            head.stage = Stage::InfileResult;
                        } else {
                            head.file_bytes += pkt.len;
                        }
                        return fx;
                    }
                    if head.stage == Stage::Auth && pkt.seq != 0 {
                        head.request_bytes += wire_len(pkt.len);
                        head.next_seq = pkt.seq.wrapping_add(1);
                        return fx;
                    }
                }
                fx = self.on_command(pkt, prefix, server_hunting);
            }
        }
        fx
    }

    fn on_handshake_response(&mut self, pkt: PacketEnd, prefix: &[u8]) -> Effects {
        let mut fx = Effects::default();
        let mut pending = Pending::new(Command::Connect, pkt.start, Stage::Auth);
        pending.request_bytes = wire_len(pkt.len);
        pending.next_seq = pkt.seq.wrapping_add(1);
        // A response cut by a gap still gives the capabilities (first 4 bytes).
        match wire::parse_handshake_response(prefix, !pkt.damaged) {
            Some(hr) => {
                self.info.client_capabilities = Some(hr.capabilities);
                self.info.character_set = hr.character_set.or(self.info.character_set);
                if hr.capabilities & cap::CLIENT_SSL != 0 {
                    // SSLRequest: TLS starts with the next byte in both directions. The login goes
                    // on inside it: it happened, and how it ended cannot be read.
                    self.info.encryption = Encryption::Tls;
                    self.phase = Phase::Stopped;
                    fx.stop = true;
                    self.finish_request(pending, Outcome::Encrypted);
                    return fx;
                }
                self.info.user = hr.user.map(wire::text);
                if let Some(s) = hr.schema.filter(|s| !s.is_empty()) {
                    self.info.schema = Some(wire::text(s));
                }
                self.info.client_auth_plugin = hr.auth_plugin.map(wire::text);
                self.eof_mode = if hr.capabilities & cap::CLIENT_DEPRECATE_EOF != 0
                    && self
                        .info
                        .server_capabilities
                        .is_none_or(|s| s & cap::CLIENT_DEPRECATE_EOF != 0)
                {
                    EofMode::Deprecated
                } else {
                    EofMode::Classic
                };
            }
            // Cut before the capabilities: nothing to read, but nothing wrong.
            None if pkt.damaged => {}
            None => self.info.counters.malformed_packets += 1,
        }
        self.phase = Phase::Authenticating;
        self.queue.push_back(pending);
        fx
    }

    fn on_command(&mut self, pkt: PacketEnd, prefix: &[u8], server_hunting: bool) -> Effects {
        let fx = Effects {
            new_command: true,
            ..Effects::default()
        };
        let Some(&byte) = prefix.first() else {
            // An empty packet (or one whose first byte fell in a gap) is no command.
            self.info.counters.unexpected_client_packets += 1;
            return Effects::default();
        };
        if pkt.seq != 0 {
            self.info.counters.sequence_anomalies += 1;
        }
        // The server resynchronises at this point: whatever it was answering in
        // the dark is lost.
        if server_hunting {
            self.complete_all(|_| Outcome::GapLost);
        } else {
            while self.queue.front().is_some_and(|p| p.lost) {
                self.complete_head(Outcome::GapLost);
            }
        }
        if self.phase == Phase::Unknown {
            self.phase = Phase::Command;
        } else if self.phase == Phase::Quit {
            self.info.counters.unexpected_client_packets += 1;
        }
        let command = Command::from_byte(byte);
        let body = prefix.get(1..).unwrap_or(&[]);
        let body_total = pkt.len.saturating_sub(1);
        if matches!(command, Command::BinlogDump | Command::BinlogDumpGtid) {
            // From here on the connection is a replication stream.
            let dumped =
                Replication::dumped(command, &pkt, body, self.replica_hints, wire_len(pkt.len));
            self.replication = Some(Box::new(dumped));
            return fx;
        }
        if matches!(command, Command::Unknown(_)) {
            self.info.counters.unknown_commands += 1;
        }
        let stage = first_stage(command);
        let caps = self.caps();
        if self.queue.len() >= MAX_PENDING {
            self.info.counters.dropped_requests += 1;
            self.complete_head(Outcome::Unparsed);
        }
        // Built where it will wait for its response: a request is large, and moving it in
        // costs a copy per command.
        self.queue
            .push_back(Pending::new(command, pkt.start, stage));
        let Some(p) = self.queue.back_mut() else {
            return fx;
        };
        p.request_bytes = wire_len(pkt.len);
        p.gap_bytes = pkt.gap_bytes;
        p.next_seq = pkt.seq.wrapping_add(1);
        let spares = &mut self.spares;
        let mut text = |b: &[u8], total: u64| {
            let s = spares.pop().unwrap_or_default();
            Some(capped_text(s, b, total, pkt.damaged, pkt.gap_bytes))
        };
        match command {
            Command::Query => {
                let with_attrs = match caps {
                    Some(c) => c & cap::CLIENT_QUERY_ATTRIBUTES != 0,
                    None => wire::looks_like_attribute_prefix(body),
                };
                if with_attrs {
                    match wire::split_query_attributes(body) {
                        Some((_, t)) => {
                            let skipped = (body.len() - t.len()) as u64;
                            p.statement = text(t, body_total.saturating_sub(skipped));
                        }
                        None => self.info.counters.malformed_packets += 1,
                    }
                } else {
                    p.statement = text(body, body_total);
                }
                if let Some(s) = &p.statement {
                    self.replica_hints.note_query(s);
                }
            }
            Command::StmtPrepare | Command::InitDb | Command::CreateDb | Command::DropDb => {
                p.statement = text(body, body_total);
                if command == Command::InitDb && !pkt.damaged {
                    p.new_schema = Some(wire::text(body));
                }
            }
            Command::FieldList => {
                let table = body.split(|&b| b == 0).next().unwrap_or(&[]);
                p.statement = text(table, table.len() as u64);
            }
            Command::ChangeUser => {
                if let Some(cu) = wire::parse_change_user(body, caps) {
                    p.statement = Some(wire::text(cu.user));
                    p.new_user = Some(wire::text(cu.user));
                    p.new_schema = cu.schema.filter(|s| !s.is_empty()).map(wire::text);
                    if let Some(plugin) = cu.auth_plugin {
                        self.info.client_auth_plugin = Some(wire::text(plugin));
                    }
                } else {
                    self.info.counters.malformed_packets += 1;
                }
            }
            Command::ProcessKill => {
                p.statement = wire::Reader::new(body).u32().map(|id| id.to_string());
            }
            Command::StmtExecute
            | Command::StmtFetch
            | Command::StmtReset
            | Command::StmtClose
            | Command::StmtSendLongData => {
                let mut r = wire::Reader::new(body);
                if let Some(id) = r.u32() {
                    p.statement_id = Some(id);
                    p.statement = self.statements.get(&id).cloned();
                    if command == Command::StmtClose {
                        self.statements.remove(&id);
                    }
                    // flags: CURSOR_TYPE_READ_ONLY and friends open a cursor.
                    if command == Command::StmtExecute {
                        p.cursor = r.u8().is_some_and(|f| f & 0x07 != 0);
                    }
                } else {
                    self.info.counters.malformed_packets += 1;
                }
            }
            _ => {}
        }
        if command == Command::Quit {
            self.phase = Phase::Quit;
        }
        self.flush_no_response();
        fx
    }

    // ----- server side -----

    fn on_server_packet(&mut self, pkt: PacketEnd, prefix: &[u8]) -> Effects {
        let mut fx = Effects::default();
        match self.phase {
            Phase::Stopped => return fx,
            Phase::AwaitGreeting => {
                self.on_greeting(pkt, prefix);
                return fx;
            }
            Phase::AwaitHandshakeResponse => {
                if let (Some(0xFF), Some(outcome)) = (prefix.first(), err_outcome(prefix)) {
                    // The server refused what the client sent instead of a login (1156 "Got
                    // packets out of order" for bytes that are no HandshakeResponse), or its
                    // silence (1043 "Bad handshake"): the login attempt ends with that error.
                    let mut p = Pending::new(
                        Command::Connect,
                        self.login_from.map_or(pkt.start, LoginStart::at),
                        Stage::Auth,
                    );
                    p.first_response = Some(pkt.start);
                    p.last_response = Some(pkt.end);
                    p.response_bytes = wire_len(pkt.len);
                    self.finish_request(p, outcome);
                    self.phase = Phase::LoginRefused;
                    return fx;
                }
                self.info.counters.unsolicited_server_packets += 1;
                self.note_unsolicited_error(prefix);
                return fx;
            }
            _ => {}
        }
        if self.replication.is_none()
            && self.phase == Phase::Unknown
            && self.queue.is_empty()
            && replication::is_event_packet(prefix, pkt.len)
        {
            // Joined mid-stream: binlog events with no request before them are a replication stream.
            self.replication = Some(Box::new(Replication::joined()));
        }
        if let Some(r) = self.replication.as_deref_mut() {
            if let Some(dump) = r.on_server_packet(&pkt, prefix) {
                self.done.push(dump);
            }
            return fx;
        }
        if let Some(seq) = self.trailing_eof.take() {
            if pkt.seq == seq && prefix.first() == Some(&0xFE) && pkt.len < 9 {
                self.eof_mode = EofMode::Classic;
                return fx;
            }
        }
        let Some(head) = self.queue.front_mut() else {
            self.info.counters.unsolicited_server_packets += 1;
            self.note_unsolicited_error(prefix);
            return fx;
        };
        if head.stage == Stage::NoResponse {
            self.info.counters.unsolicited_server_packets += 1;
            return fx;
        }
        if let (Stage::Lost, None, Some(gap)) =
            (head.stage, head.first_response, head.gap_before_response)
        {
            if pkt.seq == 1 && starts_response(head.command, prefix, pkt.len, gap) {
                // The gap held nothing of this response, which begins here: read it as usual.
                head.stage = first_stage(head.command);
                head.next_seq = 1;
                head.lost = false;
                head.gap_bytes = head.gap_bytes.saturating_sub(gap);
                head.gap_before_response = None;
            }
        }
        if head.first_response.is_none() {
            head.first_response = Some(pkt.start);
        }
        head.last_response = Some(pkt.end);
        head.response_bytes += wire_len(pkt.len);
        head.gap_bytes += pkt.gap_bytes;
        if pkt.seq != head.next_seq && head.stage != Stage::Lost {
            self.info.counters.sequence_anomalies += 1;
        }
        head.next_seq = pkt.seq.wrapping_add(physical_packets(pkt.len) as u8);
        // MariaDB's progress report (LOAD DATA, ALTER, ... with progress reporting on) is an ERR_Packet
        // with code 0xFFFF: not an error, and the request goes on.
        if prefix.starts_with(&[0xFF, 0xFF, 0xFF]) {
            self.info.counters.progress_reports += 1;
            return fx;
        }
        let step = self.response_step(pkt, prefix, &mut fx);
        if let Step::Done(outcome) = step {
            self.complete_head(outcome);
        }
        fx
    }

    /// Client bytes arrived while the server waits for the login: the login began with the first.
    #[cold]
    fn note_login_bytes(&mut self, at: Meta) {
        if !matches!(self.login_from, Some(LoginStart::Client(_))) {
            self.login_from = Some(LoginStart::Client(at));
        }
    }

    fn note_unsolicited_error(&mut self, prefix: &[u8]) {
        if let Some(Outcome::Err {
            code,
            sql_state,
            message,
        }) = err_outcome(prefix)
        {
            self.info.counters.unsolicited_errors += 1;
            self.info.last_unsolicited_error = Some(ServerError {
                code,
                sql_state,
                message,
            });
        }
    }

    fn on_greeting(&mut self, pkt: PacketEnd, prefix: &[u8]) {
        if prefix.first() == Some(&0xFF) {
            // The server refused the connection before any handshake.
            if let Some(outcome) = err_outcome(prefix) {
                let mut p = Pending::new(Command::Connect, pkt.start, Stage::Auth);
                p.first_response = Some(pkt.start);
                p.last_response = Some(pkt.end);
                p.response_bytes = wire_len(pkt.len);
                self.finish_request(p, outcome);
                self.phase = Phase::LoginRefused;
                return;
            }
        }
        // A greeting cut by a gap (snap length, loss) still opens the
        // connection phase: what it kept is recorded, the rest stays unknown.
        match wire::parse_greeting(prefix, !pkt.damaged) {
            Some(g) => {
                self.info.protocol_version = Some(g.protocol);
                self.info.server_version = g.version.map(wire::text);
                self.info.connection_id = g.connection_id;
                self.info.server_capabilities = g.capabilities;
                self.info.character_set = g.character_set;
                self.info.auth_plugin = g.auth_plugin.filter(|p| !p.is_empty()).map(wire::text);
                self.phase = Phase::AwaitHandshakeResponse;
                self.login_from = Some(LoginStart::Greeting(pkt.end));
            }
            // Not even the protocol byte was kept: the first server packet is
            // still the greeting.
            None if pkt.damaged && prefix.is_empty() && pkt.seq == 0 => {
                self.phase = Phase::AwaitHandshakeResponse;
            }
            None => self.info.counters.malformed_packets += 1,
        }
    }

    /// The end of one resultset (terminator or cursor EOF): another may follow.
    fn end_of_result(head: &mut Pending, status_flags: u16) -> Step {
        if status_flags & status::SERVER_MORE_RESULTS_EXISTS != 0 {
            head.stage = Stage::First;
            Step::Continue
        } else {
            Step::Done(Outcome::ResultSet { rows: head.rows })
        }
    }

    fn response_step(&mut self, pkt: PacketEnd, p: &[u8], fx: &mut Effects) -> Step {
        let eof_mode = self.eof_mode;
        let counters = &mut self.info.counters;
        let Some(head) = self.queue.front_mut() else {
            return Step::Continue;
        };
        let first = p.first().copied();
        let len = pkt.len;
        // The first byte fell into a gap: only row-like streams can go on.
        if first.is_none() && len > 0 {
            return match head.stage {
                Stage::Rows
                | Stage::ColumnDefs { .. }
                | Stage::Binlog
                | Stage::FieldList
                | Stage::Lost => {
                    if matches!(head.stage, Stage::Rows | Stage::Binlog | Stage::Lost) {
                        head.rows += 1;
                    }
                    if let Stage::ColumnDefs { left } = head.stage {
                        head.stage = if left <= 1 {
                            Stage::AfterDefs
                        } else {
                            Stage::ColumnDefs { left: left - 1 }
                        };
                    }
                    Step::Continue
                }
                _ => {
                    head.stage = Stage::Lost;
                    Step::Continue
                }
            };
        }
        match head.stage {
            Stage::NoResponse => Step::Continue,
            Stage::Lost => {
                if !matches!(first, Some(0xFE | 0xFF)) {
                    head.rows += 1;
                }
                Step::Continue
            }
            Stage::Simple => match first {
                Some(0x00) => match wire::parse_ok(p) {
                    Some(ok) => Step::Done(ok_outcome(ok)),
                    None => {
                        counters.malformed_packets += 1;
                        Step::Done(Outcome::Unparsed)
                    }
                },
                Some(0xFE) => Step::Done(ok_outcome(
                    wire::parse_terminator(p, len).unwrap_or_default(),
                )),
                Some(0xFF) => Step::Done(err_outcome(p).unwrap_or(Outcome::Unparsed)),
                _ => {
                    counters.malformed_packets += 1;
                    Step::Done(Outcome::Unparsed)
                }
            },
            Stage::AnyOne => match first {
                Some(0xFF) => Step::Done(err_outcome(p).unwrap_or(Outcome::Unparsed)),
                _ => Step::Done(ok_outcome(OkPacket::default())),
            },
            Stage::First => match first {
                Some(0x00) => match wire::parse_ok(p) {
                    Some(ok) => {
                        if ok.status_flags & status::SERVER_MORE_RESULTS_EXISTS != 0 {
                            Step::Continue
                        } else if head.saw_infile {
                            Step::Done(Outcome::LocalInfile {
                                file_bytes: head.file_bytes,
                                affected_rows: ok.affected_rows,
                            })
                        } else if head.saw_resultset {
                            Step::Done(Outcome::ResultSet { rows: head.rows })
                        } else {
                            Step::Done(ok_outcome(ok))
                        }
                    }
                    None => {
                        counters.malformed_packets += 1;
                        Step::Done(Outcome::Unparsed)
                    }
                },
                Some(0xFF) => Step::Done(err_outcome(p).unwrap_or(Outcome::Unparsed)),
                Some(0xFB) => {
                    head.stage = Stage::InfileData;
                    head.saw_infile = true;
                    Step::Continue
                }
                Some(0xFE) => {
                    let st = wire::parse_terminator(p, len).unwrap_or_default();
                    if head.saw_resultset {
                        Self::end_of_result(head, st.status_flags)
                    } else {
                        Step::Done(ok_outcome(st))
                    }
                }
                _ => match wire::parse_column_count(p, len) {
                    Some((n, metadata)) => {
                        head.saw_resultset = true;
                        head.stage = if metadata {
                            Stage::ColumnDefs { left: n }
                        } else {
                            Stage::AfterDefs
                        };
                        Step::Continue
                    }
                    None => {
                        counters.malformed_packets += 1;
                        Step::Done(Outcome::Unparsed)
                    }
                },
            },
            Stage::ColumnDefs { left } => {
                if first == Some(0xFF) {
                    return Step::Done(err_outcome(p).unwrap_or(Outcome::Unparsed));
                }
                if is_terminator(p, len) && len < 9 {
                    // Fewer definitions than announced: take it as the metadata EOF.
                    counters.malformed_packets += 1;
                    head.stage = Stage::Rows;
                    return Step::Continue;
                }
                head.stage = if left <= 1 {
                    Stage::AfterDefs
                } else {
                    Stage::ColumnDefs { left: left - 1 }
                };
                Step::Continue
            }
            Stage::AfterDefs => {
                // Classic framing puts a 5-byte EOF_Packet here; under
                // CLIENT_DEPRECATE_EOF rows follow at once, and an empty
                // resultset ends with an OK_Packet of at least 7 bytes.
                if is_terminator(p, len) && len < 7 {
                    if eof_mode == EofMode::Unknown {
                        self.eof_mode = EofMode::Classic;
                    }
                    let st = wire::parse_eof(p).unwrap_or_default();
                    if st.status_flags & status::SERVER_STATUS_CURSOR_EXISTS != 0
                        || head.cursor && len < 5
                    {
                        return Self::end_of_result(head, st.status_flags);
                    }
                    head.stage = Stage::Rows;
                    return Step::Continue;
                }
                if eof_mode == EofMode::Unknown {
                    self.eof_mode = EofMode::Deprecated;
                }
                if is_terminator(p, len) {
                    let st = wire::parse_terminator(p, len).unwrap_or_default();
                    return Self::end_of_result(head, st.status_flags);
                }
                if first == Some(0xFF) {
                    return Step::Done(err_outcome(p).unwrap_or(Outcome::Unparsed));
                }
                head.rows += 1;
                head.stage = Stage::Rows;
                Step::Continue
            }
            Stage::Rows => {
                if is_terminator(p, len) {
                    let st = wire::parse_terminator(p, len).unwrap_or_default();
                    return Self::end_of_result(head, st.status_flags);
                }
                if first == Some(0xFF) {
                    // 0xFF is no valid start of a text row (nor of a binary row, 0x00).
                    if let Some(o) = err_outcome(p) {
                        return Step::Done(o);
                    }
                    counters.malformed_packets += 1;
                }
                head.rows += 1;
                Step::Continue
            }
            Stage::InfileData | Stage::InfileResult => match first {
                Some(0x00) => match wire::parse_ok(p) {
                    Some(ok) if ok.status_flags & status::SERVER_MORE_RESULTS_EXISTS != 0 => {
                        head.stage = Stage::First;
                        Step::Continue
                    }
                    Some(ok) => Step::Done(Outcome::LocalInfile {
                        file_bytes: head.file_bytes,
                        affected_rows: ok.affected_rows,
                    }),
                    None => {
                        counters.malformed_packets += 1;
                        Step::Done(Outcome::Unparsed)
                    }
                },
                Some(0xFF) => Step::Done(err_outcome(p).unwrap_or(Outcome::Unparsed)),
                _ => {
                    counters.malformed_packets += 1;
                    Step::Continue
                }
            },
            Stage::PrepareFirst => match first {
                Some(0x00) => match wire::parse_prepare_ok(p, len, !pkt.damaged) {
                    Some(ok) => {
                        head.statement_id = Some(ok.statement_id);
                        if let Some(sql) = &head.statement {
                            if self.statements.len() < MAX_STATEMENTS
                                || self.statements.contains_key(&ok.statement_id)
                            {
                                self.statements.insert(ok.statement_id, sql.clone());
                            } else {
                                counters.untracked_statements += 1;
                            }
                        }
                        let done = Outcome::Prepared {
                            statement_id: ok.statement_id,
                            params: ok.num_params,
                            columns: ok.num_columns,
                        };
                        if !ok.metadata_follows || (ok.num_params == 0 && ok.num_columns == 0) {
                            Step::Done(done)
                        } else {
                            head.stage = Stage::PrepareDefs {
                                params: ok.num_params,
                                columns: ok.num_columns,
                            };
                            head.prepared = Some((ok.statement_id, ok.num_params, ok.num_columns));
                            Step::Continue
                        }
                    }
                    None => {
                        counters.malformed_packets += 1;
                        Step::Done(Outcome::Unparsed)
                    }
                },
                Some(0xFF) => Step::Done(err_outcome(p).unwrap_or(Outcome::Unparsed)),
                _ => {
                    counters.malformed_packets += 1;
                    Step::Done(Outcome::Unparsed)
                }
            },
            Stage::PrepareDefs { params, columns } => {
                let (statement_id, all_params, all_columns) = head.prepared.unwrap_or_default();
                let outcome = Outcome::Prepared {
                    statement_id,
                    params: all_params,
                    columns: all_columns,
                };
                if first == Some(0xFF) {
                    return Step::Done(err_outcome(p).unwrap_or(Outcome::Unparsed));
                }
                if is_terminator(p, len) && len < 9 {
                    // EOF after a block of definitions (classic framing).
                    if params == 0 && columns == 0 {
                        return Step::Done(outcome);
                    }
                    return Step::Continue;
                }
                let (params, columns) = if params > 0 {
                    (params - 1, columns)
                } else {
                    (params, columns.saturating_sub(1))
                };
                head.stage = Stage::PrepareDefs { params, columns };
                if params == 0 && columns == 0 {
                    match eof_mode {
                        EofMode::Classic => Step::Continue,
                        EofMode::Deprecated => Step::Done(outcome),
                        EofMode::Unknown => {
                            self.trailing_eof = Some(pkt.seq.wrapping_add(1));
                            Step::Done(outcome)
                        }
                    }
                } else {
                    Step::Continue
                }
            }
            Stage::FieldList => {
                if is_terminator(p, len) {
                    return Step::Done(Outcome::ResultSet { rows: head.rows });
                }
                if first == Some(0xFF) {
                    return Step::Done(err_outcome(p).unwrap_or(Outcome::Unparsed));
                }
                head.rows += 1;
                Step::Continue
            }
            Stage::Binlog => match first {
                Some(0xFF) => Step::Done(err_outcome(p).unwrap_or(Outcome::Unparsed)),
                _ if is_terminator(p, len) && len < 9 => {
                    Step::Done(Outcome::ResultSet { rows: head.rows })
                }
                _ => {
                    head.rows += 1;
                    Step::Continue
                }
            },
            Stage::Auth => match first {
                Some(0x00) => {
                    let ok = wire::parse_ok(p).unwrap_or_default();
                    if head.command == Command::Connect {
                        self.phase = Phase::Command;
                        fx.compress = start_compression(&mut self.info);
                        if self.info.compression == Compression::Zstd {
                            self.phase = Phase::Stopped;
                            fx.stop = true;
                        }
                    }
                    Step::Done(ok_outcome(ok))
                }
                Some(0xFF) => {
                    if head.command == Command::Connect {
                        self.phase = Phase::LoginRefused;
                    }
                    Step::Done(err_outcome(p).unwrap_or(Outcome::Unparsed))
                }
                Some(0xFE) => {
                    // AuthSwitchRequest: plugin name, then its data (1 byte: old auth switch).
                    let name = wire::Reader::new(p.get(1..).unwrap_or(&[])).nul_or_rest();
                    if !name.is_empty() {
                        self.info.auth_plugin = Some(wire::text(name));
                    }
                    Step::Continue
                }
                Some(0x01) => {
                    match p.get(1) {
                        Some(0x03) if len == 2 => {
                            self.info.caching_sha2 = Some(CachingSha2Auth::FastAuthSuccess)
                        }
                        Some(0x04) if len == 2 => {
                            self.info.caching_sha2 = Some(CachingSha2Auth::FullAuthRequired)
                        }
                        _ => {}
                    }
                    Step::Continue
                }
                // 0x02: AuthNextFactor (multi-factor authentication).
                Some(0x02) => Step::Continue,
                _ => {
                    counters.malformed_packets += 1;
                    Step::Continue
                }
            },
        }
    }
}

/// How the server's answer to a command begins.
fn first_stage(command: Command) -> Stage {
    match command {
        Command::Quit | Command::StmtClose | Command::StmtSendLongData => Stage::NoResponse,
        Command::Query | Command::ProcessInfo | Command::StmtExecute => Stage::First,
        Command::StmtPrepare => Stage::PrepareFirst,
        Command::StmtFetch => Stage::Rows,
        Command::FieldList => Stage::FieldList,
        Command::Statistics => Stage::AnyOne,
        Command::BinlogDump | Command::BinlogDumpGtid => Stage::Binlog,
        Command::ChangeUser => Stage::Auth,
        _ => Stage::Simple,
    }
}

/// After a server gap that fell before any of a request's response, is this packet (sequence id 1)
/// where that response begins, rather than a later packet whose sequence id wrapped around? An ERR
/// (no row nor definition starts with 0xFF) and a resultset's column count (one byte, 1 to 250: too
/// short for a row) can only begin one. Other first packets (an OK, an EOF) could be the 257th packet
/// of a binary resultset, unless the gap is too short to have held 255 packets.
fn starts_response(command: Command, p: &[u8], len: u64, gap: u64) -> bool {
    const WRAP_BYTES: u64 = 4 * 255;
    match (p.first(), first_stage(command)) {
        (Some(0xFF), _) => true,
        (Some(&n), Stage::First) if len == 1 && (1..=250).contains(&n) => true,
        (Some(0x00 | 0xFE), Stage::First | Stage::PrepareFirst | Stage::Simple) => gap < WRAP_BYTES,
        _ => false,
    }
}

/// After the authentication OK: switch to the compressed protocol if both
/// sides agreed on it. Returns whether zlib framing starts now.
fn start_compression(info: &mut SessionInfo) -> bool {
    let Some(client) = info.client_capabilities else {
        return false;
    };
    let c = client & info.server_capabilities.unwrap_or(u32::MAX);
    if c & cap::CLIENT_COMPRESS != 0 {
        info.compression = Compression::Zlib;
        true
    } else if c & cap::CLIENT_ZSTD_COMPRESSION_ALGORITHM != 0 {
        info.compression = Compression::Zstd;
        false
    } else {
        false
    }
}

/// The decoder of one MySQL connection. Feed it both directions' bytes in
/// capture order; drain completed [`Transaction`]s as they appear.
pub struct Session {
    client: DirStream,
    server: DirStream,
    core: Core,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("phase", &self.core.phase_for_close())
            .field("open_requests", &self.core.queue.len())
            .field("info", &self.core.info)
            .finish()
    }
}

impl Session {
    /// A session for a connection seen from its start ([`StartMode::Handshake`])
    /// or joined mid-stream ([`StartMode::MidStream`]).
    pub fn new(mode: StartMode) -> Self {
        let initial = match mode {
            StartMode::Handshake | StartMode::Login => StreamMode::Framed,
            StartMode::MidStream => StreamMode::Hunting,
        };
        Session {
            client: DirStream::new(CLIENT_PREFIX_CAP, CLIENT_HUNT_WINDOW, initial),
            server: DirStream::new(SERVER_PREFIX_CAP, SERVER_HUNT_WINDOW, initial),
            core: Core::new(mode),
        }
    }

    /// In-order TCP payload bytes of one direction (the caller has removed
    /// retransmissions and reordered). `meta` is the segment carrying them.
    pub fn feed(&mut self, dir: Direction, bytes: &[u8], meta: Meta) {
        match dir {
            Direction::ClientToServer => {
                self.core.info.counters.client_bytes += bytes.len() as u64;
                if self.core.phase == Phase::AwaitHandshakeResponse {
                    self.core.note_login_bytes(meta);
                }
            }
            Direction::ServerToClient => self.core.info.counters.server_bytes += bytes.len() as u64,
        }
        self.feed_bytes(dir, bytes, meta, false);
    }

    fn streams(&mut self, dir: Direction) -> (&mut DirStream, &mut DirStream, &mut Core) {
        match dir {
            Direction::ClientToServer => (&mut self.client, &mut self.server, &mut self.core),
            Direction::ServerToClient => (&mut self.server, &mut self.client, &mut self.core),
        }
    }

    fn feed_bytes(&mut self, dir: Direction, bytes: &[u8], meta: Meta, is_replay: bool) {
        let mut input = bytes;
        while !input.is_empty() {
            let (cur, _, core) = self.streams(dir);
            match cur.mode {
                StreamMode::Stopped => {
                    core.info.counters.undecoded_bytes += input.len() as u64;
                    return;
                }
                StreamMode::Hunting => {
                    if is_replay {
                        // Replayed bytes are never hunted again: they were just accepted.
                        cur.mode = StreamMode::Framed;
                        continue;
                    }
                    let (n, found) = Self::hunt(cur, core, dir, input);
                    input = input.get(n..).unwrap_or(&[]);
                    if let Some(carriage) = found {
                        let (cur, other, core) = self.streams(dir);
                        // (Binlog events found by the server side are plain too.)
                        if core.compression_unknown
                            && (dir == Direction::ClientToServer || carriage == Carriage::Plain)
                        {
                            // Joined mid-stream: the first command says whether the connection
                            // negotiated the compressed protocol.
                            core.compression_unknown = false;
                            if carriage == Carriage::Compressed {
                                core.info.compression = Compression::Zlib;
                                Self::apply_effects(
                                    cur,
                                    other,
                                    core,
                                    dir,
                                    Effects {
                                        compress: true,
                                        ..Effects::default()
                                    },
                                );
                            }
                        }
                        cur.mode = StreamMode::Framed;
                        cur.framer.reset();
                        if let Some(d) = cur.inflater.as_mut() {
                            d.reset();
                        }
                        std::mem::swap(&mut cur.window, &mut cur.replay);
                        cur.window.clear();
                        let replay = std::mem::take(&mut cur.replay);
                        self.feed_bytes(dir, &replay, meta, true);
                        let (cur, _, _) = self.streams(dir);
                        cur.replay = replay;
                        cur.replay.clear();
                    }
                }
                StreamMode::Framed => {
                    let n = self.framed_step(dir, input, meta);
                    if n == 0 {
                        // Every step consumes input; never spin if one did not.
                        return;
                    }
                    input = input.get(n..).unwrap_or(&[]);
                }
            }
        }
    }

    /// Scan for a packet boundary; returns (bytes consumed, how the packet found is
    /// carried). When found, the window holds the bytes from the boundary on.
    fn hunt(
        cur: &mut DirStream,
        core: &mut Core,
        dir: Direction,
        input: &[u8],
    ) -> (usize, Option<Carriage>) {
        let mut carriage = if cur.inflater.is_some() {
            Carriage::Compressed
        } else if core.compression_unknown {
            Carriage::Unknown
        } else {
            Carriage::Plain
        };
        // A request waits for an answer the gap held nothing of: its start is enough to find.
        let awaited = core
            .queue
            .front()
            .filter(|_| dir == Direction::ServerToClient)
            .and_then(
                |p| match (p.stage, p.first_response, p.gap_before_response) {
                    (Stage::Lost, None, Some(gap)) => Some((p.command, gap)),
                    _ => None,
                },
            );
        let starts = awaited.map(|(command, gap)| {
            move |seq: u8, payload: &[u8], len: u64| {
                seq == 1 && starts_response(command, payload, len, gap)
            }
        });
        let answer = starts.as_ref().map(|f| f as AnswerStart<'_>);
        let mut consumed = 0usize;
        loop {
            let space = cur.window_cap.saturating_sub(cur.window.len());
            let take = space.min(input.len() - consumed);
            if let Some(s) = input.get(consumed..consumed + take) {
                cur.window.extend_from_slice(s);
            }
            consumed += take;
            let mut at = 0usize;
            let mut found = None;
            while at < cur.window.len() {
                match hunt_check(
                    dir,
                    carriage,
                    core.expects_acks(),
                    cur.window.get(at..).unwrap_or(&[]),
                    cur.window_cap,
                    answer,
                ) {
                    Boundary::Here(c) => {
                        found = Some(c);
                        break;
                    }
                    Boundary::NotHere => {
                        at += 1;
                        if carriage == Carriage::Unknown && dir == Direction::ClientToServer {
                            // Only the stream's first byte may start the compressed command that
                            // says the protocol is compressed (a session is joined on a command);
                            // past it, the connection is plain. Asking at every byte would let a
                            // header-like run, waiting for bytes the capture may not hold, hide
                            // the plain command after it.
                            carriage = Carriage::Plain;
                            core.compression_unknown = false;
                        }
                    }
                    Boundary::NeedMore => break,
                }
            }
            if at == 0 && found.is_none() && take == 0 && cur.window.len() >= cur.window_cap {
                // Cannot happen by construction (checks never need more than the
                // window); drop a byte rather than spin if it ever does.
                at = 1;
            }
            core.info.counters.skipped_bytes += at as u64;
            cur.window.drain(..at.min(cur.window.len()));
            if found.is_some() || consumed >= input.len() {
                return (consumed, found);
            }
        }
    }

    /// Feed framed bytes (through the inflater when compressed) until one packet
    /// completes or the input runs out; returns the bytes consumed.
    fn framed_step(&mut self, dir: Direction, input: &[u8], meta: Meta) -> usize {
        let (cur, other, core) = self.streams(dir);
        if let Some(mut inflater) = cur.inflater.take() {
            let mut consumed = 0;
            // Output the inflater still holds belongs to this segment, even after its last byte.
            while consumed < input.len() || inflater.has_pending_output() {
                let (n, mut out) = inflater.push(input.get(consumed..).unwrap_or(&[]));
                consumed += n;
                while !out.is_empty() {
                    // Read per packet: the previous packet may have resynchronised the server.
                    let server_hunting = Self::server_hunting(dir, cur, other);
                    let (k, pkt) = cur.framer.push(out, meta);
                    out = out.get(k..).unwrap_or(&[]);
                    if let Some((pkt, body)) = pkt {
                        let fx = Self::dispatch(core, dir, pkt, body, server_hunting);
                        Self::apply(cur, other, core, dir, fx);
                    }
                }
                if cur.mode != StreamMode::Framed {
                    break;
                }
            }
            core.info.counters.decompression_errors += std::mem::take(&mut inflater.errors);
            if cur.inflater.is_none() {
                cur.inflater = Some(inflater);
            }
            return consumed;
        }
        // Every packet the input holds, while nothing changes how the stream is read (a stop, a
        // switch to compression): a segment often carries several (a resultset's column count,
        // definitions, rows and terminator).
        let mut consumed = 0;
        loop {
            // Read per packet: the previous packet may have resynchronised the server.
            let server_hunting = Self::server_hunting(dir, cur, other);
            let rest = input.get(consumed..).unwrap_or(&[]);
            let (n, pkt) = cur.framer.push(rest, meta);
            consumed += n;
            if let Some((pkt, body)) = pkt {
                let fx = Self::dispatch(core, dir, pkt, body, server_hunting);
                Self::apply(cur, other, core, dir, fx);
            }
            if n == 0
                || consumed >= input.len()
                || cur.mode != StreamMode::Framed
                || cur.inflater.is_some()
            {
                return consumed;
            }
        }
    }

    fn server_hunting(dir: Direction, cur: &DirStream, other: &DirStream) -> bool {
        let server = match dir {
            Direction::ClientToServer => other,
            Direction::ServerToClient => cur,
        };
        server.mode == StreamMode::Hunting
    }

    fn dispatch(
        core: &mut Core,
        dir: Direction,
        pkt: PacketEnd,
        prefix: &[u8],
        server_hunting: bool,
    ) -> Effects {
        match dir {
            Direction::ClientToServer => core.on_client_packet(pkt, prefix, server_hunting),
            Direction::ServerToClient => core.on_server_packet(pkt, prefix),
        }
    }

    /// Applies what a packet did to the streams. Most packets (rows, OKs) do nothing to them: that
    /// case is tested where the packet was dispatched.
    #[inline(always)]
    fn apply(
        cur: &mut DirStream,
        other: &mut DirStream,
        core: &mut Core,
        dir: Direction,
        fx: Effects,
    ) {
        if fx.stop || fx.compress || fx.new_command {
            Self::apply_effects(cur, other, core, dir, fx);
        }
    }

    fn apply_effects(
        cur: &mut DirStream,
        other: &mut DirStream,
        core: &mut Core,
        dir: Direction,
        fx: Effects,
    ) {
        if fx.stop {
            cur.mode = StreamMode::Stopped;
            other.mode = StreamMode::Stopped;
            return;
        }
        if fx.compress {
            if cur.inflater.is_none() {
                cur.inflater = Some(Box::new(Decompressor::new()));
            }
            if other.inflater.is_none() {
                other.inflater = Some(Box::new(Decompressor::new()));
            }
        }
        if fx.new_command && dir == Direction::ClientToServer {
            // A new command means the server finished (or abandoned) what it was
            // sending: a hunting server starts afresh here, and so does one caught
            // mid-packet with nothing left to answer (the packet was garbage).
            let mid_packet_idle = !other.framer.at_boundary() && core.queue.len() <= 1;
            if other.mode == StreamMode::Hunting
                || (other.mode == StreamMode::Framed && mid_packet_idle)
            {
                core.info.counters.skipped_bytes += other.resync_here();
            }
        }
    }

    /// `len` bytes of this direction are missing (loss or snaplen truncation).
    /// Within a packet payload the framing is kept; otherwise the direction
    /// hunts: the client side for its next command packet, the server side for
    /// the client's next command or two chained packet headers.
    pub fn gap(&mut self, dir: Direction, len: u64, meta: Meta) {
        self.core.info.counters.gaps += 1;
        self.core.info.counters.gap_bytes += len;
        let server_hunting = self.server.mode == StreamMode::Hunting;
        let (cur, other, core) = self.streams(dir);
        match cur.mode {
            StreamMode::Stopped => return,
            StreamMode::Hunting => {
                // The window is no longer contiguous.
                core.info.counters.skipped_bytes += cur.window.len() as u64;
                cur.window.clear();
                return;
            }
            StreamMode::Framed => {}
        }
        if cur.inflater.is_none() {
            match cur.framer.gap(len, meta) {
                (GapEffect::Absorbed, _) => return,
                (GapEffect::Completed, Some(pkt)) => {
                    let fx = Self::dispatch(core, dir, pkt, cur.framer.prefix(), server_hunting);
                    Self::apply(cur, other, core, dir, fx);
                    return;
                }
                _ => {}
            }
        }
        // Framing lost.
        core.info.counters.resyncs += 1;
        let in_connection_phase = matches!(
            core.phase,
            Phase::AwaitGreeting | Phase::AwaitHandshakeResponse | Phase::Authenticating
        );
        if in_connection_phase {
            // Without the handshake we cannot follow authentication: continue as
            // if joining mid-stream. The compressed protocol starts after the lost
            // authentication if both sides asked for it; if the capabilities were lost
            // too, the first command found says.
            core.phase = Phase::Unknown;
            match core.caps() {
                Some(c) if c & cap::CLIENT_COMPRESS != 0 => {
                    core.info.compression = Compression::Zlib;
                    for d in [&mut *cur, &mut *other] {
                        d.inflater
                            .get_or_insert_with(|| Box::new(Decompressor::new()));
                    }
                }
                Some(_) => {}
                None => core.compression_unknown = true,
            }
            core.complete_all(|_| Outcome::GapLost);
            cur.start_hunting();
            other.start_hunting();
            return;
        }
        match dir {
            Direction::ClientToServer => {
                // A command whose start we saw still gets paired with its response.
                if let Some(pkt) = cur.framer.take_partial(meta) {
                    let fx = core.on_client_packet(pkt, cur.framer.prefix(), server_hunting);
                    Self::apply(cur, other, core, dir, fx);
                }
                cur.start_hunting();
            }
            Direction::ServerToClient => {
                // The packet the gap cut still says what it was (an OK, an ERR
                // and its code, a COM_STMT_PREPARE_OK, the start of a row):
                // interpret its kept bytes before the framing is given up.
                let remaining = cur.framer.remaining();
                let at_boundary = cur.framer.at_boundary()
                    && cur.inflater.as_ref().is_none_or(|d| d.at_boundary());
                if let Some(mut pkt) = cur.framer.take_partial(meta) {
                    let prefix = cur.framer.prefix();
                    if prefix.is_empty() {
                        core.info.counters.skipped_bytes += pkt.len.saturating_sub(pkt.gap_bytes);
                    } else {
                        // The packet's missing tail is part of this gap, counted below.
                        pkt.gap_bytes = pkt.gap_bytes.saturating_sub(remaining);
                        let fx = core.on_server_packet(pkt, prefix);
                        Self::apply(cur, other, core, dir, fx);
                        if cur.mode == StreamMode::Stopped {
                            return;
                        }
                    }
                }
                // COM_STMT_PREPARE_OK was read: the definitions lost after it
                // do not change the outcome.
                if let Some(head) = core.queue.front_mut() {
                    if let (Stage::PrepareDefs { .. }, Some((statement_id, params, columns))) =
                        (head.stage, head.prepared)
                    {
                        head.gap_bytes += len;
                        core.complete_head(Outcome::Prepared {
                            statement_id,
                            params,
                            columns,
                        });
                    }
                }
                for p in core.queue.iter_mut() {
                    p.lost = true;
                    p.gap_bytes += len;
                }
                if let Some(head) = core.queue.front_mut() {
                    if head.stage != Stage::NoResponse {
                        if at_boundary && head.first_response.is_none() {
                            *head.gap_before_response.get_or_insert(0) += len;
                        }
                        head.stage = Stage::Lost;
                    }
                }
                cur.start_hunting();
            }
        }
    }

    /// FIN or RST seen from `by`. Returns what the session was doing at that
    /// moment; every open request then ends as [`Outcome::ClosedMidResponse`]
    /// (part of the response had arrived) or [`Outcome::ClosedBeforeResponse`].
    ///
    /// A FIN from the client is a half-close: the server still answers what it
    /// has read (MySQL answers a login abandoned this way with ERR 1158), so
    /// open requests stay open for their responses. Those still open at the
    /// server's close, a RST or the end of the capture end as closed by the
    /// client's FIN.
    pub fn close(&mut self, by: Direction, kind: CloseFlag, _meta: Meta) -> CloseContext {
        self.take_partial_command();
        let ctx = CloseContext {
            phase: self.phase(),
            pending: self
                .core
                .queue
                .iter()
                .find(|p| p.stage != Stage::NoResponse)
                .map(Pending::snapshot),
        };
        let (by, kind) = if self.core.client_fin {
            (Direction::ClientToServer, CloseFlag::Fin)
        } else if by == Direction::ClientToServer && kind == CloseFlag::Fin {
            self.core.client_fin = true;
            return ctx;
        } else {
            (by, kind)
        };
        if let Some(dump) = self
            .core
            .replication
            .as_deref_mut()
            .and_then(|r| r.unanswered_dump(Some((by, kind))))
        {
            self.core.done.push(dump);
        }
        self.core
            .complete_all(|p| Self::closed_outcome(p, by, kind));
        ctx
    }

    /// A command the client began to send and the capture holds no end of (the connection closed, or
    /// the capture ended, mid-request) was made all the same: it waits for its answer like any other,
    /// its statement marked as missing its tail.
    fn take_partial_command(&mut self) {
        if self.client.mode != StreamMode::Framed {
            return;
        }
        let Some(start) = self.client.framer.started_at() else {
            return;
        };
        let server_hunting = self.server.mode == StreamMode::Hunting;
        let (cur, other, core) = self.streams(Direction::ClientToServer);
        if let Some(pkt) = cur.framer.take_partial(start) {
            let fx = core.on_client_packet(pkt, cur.framer.prefix(), server_hunting);
            Self::apply(cur, other, core, Direction::ClientToServer, fx);
        }
    }

    fn closed_outcome(p: &Pending, by: Direction, flag: CloseFlag) -> Outcome {
        if p.first_response.is_some() {
            Outcome::ClosedMidResponse { by, flag }
        } else {
            Outcome::ClosedBeforeResponse { by, flag }
        }
    }

    /// End of capture: open requests end as [`Outcome::CaptureEnded`] (or as
    /// closed by the client, after its FIN), a command still being sent among them;
    /// other partial packets are counted as `truncated_bytes`.
    pub fn finish(&mut self) {
        self.take_partial_command();
        let closed = self
            .core
            .client_fin
            .then_some((Direction::ClientToServer, CloseFlag::Fin));
        if let Some(dump) = self
            .core
            .replication
            .as_deref_mut()
            .and_then(|r| r.unanswered_dump(closed))
        {
            self.core.done.push(dump);
        }
        if self.core.client_fin {
            self.core.complete_all(|p| {
                Self::closed_outcome(p, Direction::ClientToServer, CloseFlag::Fin)
            });
        } else {
            self.core.complete_all(|_| Outcome::CaptureEnded);
        }
        let dropped = self.client.framer.reset() + self.server.framer.reset();
        self.core.info.counters.truncated_bytes += dropped;
    }

    /// Completed transactions since the last call, in request order.
    pub fn drain(&mut self) -> std::vec::Drain<'_, Transaction> {
        self.core.done.drain(..)
    }

    /// Completed transactions not yet drained or cleared, in request order: for callers that only read
    /// them, and so need not move each one out (see [`Session::clear_completed`]).
    pub fn completed(&self) -> &[Transaction] {
        &self.core.done
    }

    /// Forgets the completed transactions. (A few of their statement strings are kept, by this
    /// session, for those of transactions to come.)
    pub fn clear_completed(&mut self) {
        // The texts are taken where they lie: moving each transaction out would copy it.
        let core = &mut self.core;
        for t in &mut core.done {
            if let Some(s) = t.statement.take() {
                if core.spares.len() < SPARES && s.capacity() <= SPARE_CAPACITY {
                    core.spares.push(s);
                }
            }
        }
        core.done.clear();
    }

    /// What is known about the connection, and the counters.
    pub fn info(&self) -> &SessionInfo {
        &self.core.info
    }

    /// What the session is doing now (the phase [`Session::close`] would report).
    pub fn phase(&self) -> SessionPhase {
        match self.core.replication.as_deref() {
            Some(r) if self.core.phase != Phase::Quit => {
                SessionPhase::Replicating(r.at_close(!self.server.framer.at_boundary()))
            }
            _ => self.core.phase_for_close(),
        }
    }

    /// The replication stream this connection carries (after a replica's binlog dump, or binlog
    /// events seen mid-stream), as decoded so far.
    pub fn replication(&self) -> Option<&ReplicationSummary> {
        self.core.replication.as_deref().map(Replication::summary)
    }

    /// Samples of the replication stream since the last [`Session::clear_replication_samples`]: ACK
    /// latencies and event lags, for distributions.
    pub fn replication_samples(&self) -> &[ReplicationSample] {
        self.core
            .replication
            .as_deref()
            .map_or(&[], Replication::samples)
    }

    /// Forgets the samples read.
    pub fn clear_replication_samples(&mut self) {
        if let Some(r) = self.core.replication.as_deref_mut() {
            r.clear_samples();
        }
    }
}
