//! The per-connection state machine.
//!
//! Layering, per direction: bytes → [compressed-protocol inflate] → packet
//! framing (or, when framing is lost, a hunt for a packet boundary) → one call
//! of the protocol state machine per completed logical packet. The protocol
//! state machine ([`Core`]) pairs client requests with server responses through
//! a queue of open requests; the server side interprets each packet according
//! to the request at the head of that queue.
//!
//! Three modules hold the three layers, and this one drives them: [`stream`] is the byte layer of
//! each direction (framing, inflating, hunting), [`protocol`] the state machine ([`Core`]),
//! [`request`] the requests of its queue and the readers of their responses. The core never touches
//! the streams: what a packet asks of them (stop, switch to the compressed protocol, resynchronise the
//! server side at a new command) it returns as [`Effects`], which [`Session`] applies.

use std::collections::{HashMap, VecDeque};

use crate::command::Command;
use crate::compress::Decompressor;
use crate::detect::{
    answer_start_at, client_command_at, compressed_client_command_at, compressed_server_packet_at,
    err_packet_at, server_answer_at, AnswerStart, Verdict,
};
use crate::framing::{Framer, GapEffect, PacketEnd};
use crate::replication::{self, ReplicaHints, Replication, ReplicationSample, ReplicationSummary};
use crate::wire::{self, capability as cap, status, OkPacket};
use crate::{
    CachingSha2Auth, CloseContext, CloseFlag, Compression, Direction, Encryption, ErrorAt,
    ExecuteBytes, Meta, Outcome, PendingRequest, ServerError, SessionInfo, SessionPhase, SqlState,
    StartMode, Transaction, STATEMENT_CAP,
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

mod protocol;
mod request;
mod stream;

use self::protocol::*;
use self::request::*;
use self::stream::*;

/// The decoder of one MySQL connection. Feed it both directions' bytes in
/// capture order; drain completed [`Transaction`]s as they appear.
pub struct Session {
    client: DirStream,
    server: DirStream,
    core: Core,
    /// After an SSLRequest: the TLS bytes fed since, until a TLS layer takes them.
    tls: Option<Box<TlsBytes>>,
}

/// The bytes a session was fed after its SSLRequest, kept until a TLS layer takes them
/// ([`Session::take_tls_bytes`]): where decoding stopped, the TLS records begin.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct TlsBytes {
    /// Each feed's bytes after the SSLRequest, in order, with its direction and segment.
    pub pieces: Vec<(Direction, Meta, Vec<u8>)>,
    /// Bytes not kept (past [`TLS_BYTES_KEPT`]): the TLS layer is told of them as a gap.
    pub dropped: [u64; 2],
    /// The bytes were taken: later ones are not kept.
    taken: bool,
}

/// The TLS bytes a session keeps for a TLS layer at most: the handshake's first flights (a caller takes
/// them after the segment that carried the SSLRequest, or after the segments held while the connection
/// was being recognised).
pub const TLS_BYTES_KEPT: usize = 64 * 1024;

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
            StartMode::MidStream | StartMode::MidAnswer => StreamMode::Hunting,
        };
        Session {
            client: DirStream::new(CLIENT_PREFIX_CAP, CLIENT_HUNT_WINDOW, initial),
            server: DirStream::new(SERVER_PREFIX_CAP, SERVER_HUNT_WINDOW, initial),
            core: Core::new(mode),
            tls: None,
        }
    }

    /// In-order TCP payload bytes of one direction (the caller has removed
    /// retransmissions and reordered). `meta` is the segment carrying them.
    pub fn feed(&mut self, dir: Direction, bytes: &[u8], meta: Meta) {
        // One copy of the byte layer per direction, each with its direction known where it is
        // compiled: which stream is whose, and which side's packet handler to call, are then no
        // longer chosen per packet.
        match dir {
            Direction::ClientToServer => {
                self.core.info.counters.client_bytes += bytes.len() as u64;
                if self.core.phase == Phase::AwaitHandshakeResponse {
                    self.core.note_login_bytes(meta);
                }
                self.feed_bytes_inline(Direction::ClientToServer, bytes, meta, false);
            }
            Direction::ServerToClient => {
                self.core.info.counters.server_bytes += bytes.len() as u64;
                self.feed_bytes_inline(Direction::ServerToClient, bytes, meta, false);
            }
        }
    }

    fn feed_bytes(&mut self, dir: Direction, bytes: &[u8], meta: Meta, is_replay: bool) {
        self.feed_bytes_inline(dir, bytes, meta, is_replay);
    }

    fn streams(&mut self, dir: Direction) -> (&mut DirStream, &mut DirStream, &mut Core) {
        match dir {
            Direction::ClientToServer => (&mut self.client, &mut self.server, &mut self.core),
            Direction::ServerToClient => (&mut self.server, &mut self.client, &mut self.core),
        }
    }

    #[inline(always)]
    fn feed_bytes_inline(&mut self, dir: Direction, bytes: &[u8], meta: Meta, is_replay: bool) {
        let mut input = bytes;
        while !input.is_empty() {
            let (cur, _, core) = self.streams(dir);
            match cur.mode {
                StreamMode::Stopped => {
                    core.info.counters.undecoded_bytes += input.len() as u64;
                    if core.info.encryption == Encryption::Tls {
                        self.keep_tls_bytes(dir, input, meta);
                    }
                    return;
                }
                StreamMode::Hunting => {
                    if is_replay {
                        // Replayed bytes are never hunted again: they were just accepted.
                        cur.mode = StreamMode::Framed;
                        continue;
                    }
                    let n = self.hunt_step(dir, input, meta);
                    input = input.get(n..).unwrap_or(&[]);
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

    /// Hunts for a packet boundary in `input`; when one is found, framing restarts there and the bytes
    /// from it on are fed again. Returns the bytes consumed. (Apart, and never inlined, from the
    /// framed path of [`Session::feed_bytes`], which every packet takes: rare code there made the
    /// common path spill registers.)
    #[inline(never)]
    fn hunt_step(&mut self, dir: Direction, input: &[u8], meta: Meta) -> usize {
        let (cur, other, core) = self.streams(dir);
        // A request still being sent can be answered before it is whole only by an error (ERR 1153
        // to a request over max_allowed_packet): the server side, lost in a gap, may find that answer.
        let request_in_flight = dir == Direction::ServerToClient
            && core.queue.is_empty()
            && core.phase == Phase::Command
            && core.replication.is_none()
            && other.mode == StreamMode::Framed
            && !other.taken_early
            && other.framer.started_at().is_some();
        let (n, found) = Self::hunt(cur, core, dir, input, request_in_flight);
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
            cur.answer_due = AnswerDue::No;
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
        n
    }

    /// Scan for a packet boundary; returns (bytes consumed, how the packet found is
    /// carried). When found, the window holds the bytes from the boundary on.
    fn hunt(
        cur: &mut DirStream,
        core: &mut Core,
        dir: Direction,
        input: &[u8],
        request_in_flight: bool,
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
        let early_error =
            |seq: u8, payload: &[u8], _len: u64| seq == 1 && payload.first() == Some(&0xFF);
        // The answer to a command sent while the server side was lost: only its first packet ends
        // the hunt (chained packets may be the rest of an earlier answer a pipelining client did not
        // wait for).
        let due = cur.answer_due != AnswerDue::No
            && dir == Direction::ServerToClient
            && carriage == Carriage::Plain;
        let answer_seq = core.queue.front().map_or(1, |p| p.next_seq);
        let answer_due = core.queue.front().filter(|_| due).map(|p| {
            let (command, first, lost) = (p.command, p.next_seq, p.gap_before_response);
            move |seq: u8, payload: &[u8], len: u64| {
                seq == first && starts_response(command, payload, len, lost.unwrap_or(0))
            }
        });
        let answer = match (answer_due.as_ref(), starts.as_ref()) {
            (Some(f), _) => Some(f as AnswerStart<'_>),
            (None, Some(f)) => Some(f as AnswerStart<'_>),
            (None, None) if request_in_flight && carriage == Carriage::Plain => {
                Some(&early_error as AnswerStart<'_>)
            }
            (None, None) => None,
        };
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
            if due && cur.answer_due == AnswerDue::Next {
                match cur.window.get(3) {
                    Some(&seq) if seq == answer_seq => found = Some(Carriage::Plain),
                    Some(_) => cur.answer_due = AnswerDue::Later,
                    None => {}
                }
            }
            while found.is_none() && at < cur.window.len() {
                if cur.answer_due == AnswerDue::Next {
                    break;
                }
                let ask = HuntAsk {
                    acks: core.expects_acks(),
                    answer,
                    answer_only: due,
                    stream_start: cur.at_start && at == 0,
                };
                match hunt_check(
                    dir,
                    carriage,
                    cur.window.get(at..).unwrap_or(&[]),
                    cur.window_cap,
                    &ask,
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
            if at > 0 || found.is_some() {
                cur.at_start = false;
            }
            cur.window.drain(..at.min(cur.window.len()));
            if found.is_some() || consumed >= input.len() {
                return (consumed, found);
            }
        }
    }

    /// Feed framed bytes (through the inflater when compressed) until one packet
    /// completes or the input runs out; returns the bytes consumed.
    #[inline(always)]
    fn framed_step(&mut self, dir: Direction, input: &[u8], meta: Meta) -> usize {
        let (cur, other, core) = self.streams(dir);
        if cur.inflater.is_some() {
            return Self::inflated_step(cur, other, core, dir, input, meta);
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
                // The packet handlers are inlined here, one per direction, rather than called
                // through `dispatch`: each packet then saves a call, its frame and the packet's copy
                // (-17 M instructions on the 60 MB slice for the server side alone).
                let fx = match dir {
                    // The rest of a request the server answered before it was whole.
                    Direction::ClientToServer if cur.taken_early => {
                        cur.taken_early = false;
                        Effects::default()
                    }
                    Direction::ClientToServer => {
                        core.on_client_packet_here(pkt, body, server_hunting)
                    }
                    Direction::ServerToClient => {
                        if core.queue.is_empty() && other.framer.started_at().is_some() {
                            Self::take_early(other, core, pkt.start);
                        }
                        core.on_server_packet_here(pkt, body)
                    }
                };
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

    /// [`Session::framed_step`] under the compressed protocol (apart, and never inlined, for the
    /// same reason as [`Session::hunt_step`]).
    #[inline(never)]
    fn inflated_step(
        cur: &mut DirStream,
        other: &mut DirStream,
        core: &mut Core,
        dir: Direction,
        input: &[u8],
        meta: Meta,
    ) -> usize {
        if let Some(mut inflater) = cur.inflater.take() {
            let mut consumed = 0;
            // Output the inflater still holds belongs to this segment, even after its last byte.
            while consumed < input.len() || inflater.has_pending_output() {
                // Every compressed packet's first byte, wherever the input was cut (one push reads
                // one header).
                if dir == Direction::ServerToClient
                    && consumed < input.len()
                    && inflater.at_boundary()
                {
                    Self::compressed_answer_begins(core, meta);
                }
                let (n, mut out) = inflater.push(input.get(consumed..).unwrap_or(&[]));
                consumed += n;
                while !out.is_empty() {
                    // Read per packet: the previous packet may have resynchronised the server.
                    let server_hunting = Self::server_hunting(dir, cur, other);
                    let (k, pkt) = cur.framer.push(out, meta);
                    out = out.get(k..).unwrap_or(&[]);
                    if let Some((pkt, body)) = pkt {
                        if dir == Direction::ClientToServer && cur.taken_early {
                            cur.taken_early = false;
                            continue;
                        }
                        if dir == Direction::ServerToClient
                            && core.queue.is_empty()
                            && other.framer.started_at().is_some()
                        {
                            Self::take_early(other, core, pkt.start);
                        }
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
        0
    }

    /// A compressed packet of the server begins at `at` while a request waits for its answer: that is
    /// where its answer's first byte is on the wire, even when the capture holds too little of the
    /// packet to inflate any of it (a sample that kept only the first segment of a large answer).
    #[cold]
    #[inline(never)]
    fn compressed_answer_begins(core: &mut Core, at: Meta) {
        if let Some(head) = core.queue.front_mut() {
            if head.first_response.is_none()
                && !head.lost
                && !matches!(head.stage, Stage::NoResponse | Stage::Lost)
            {
                head.first_response = Some(at);
                head.last_response.get_or_insert(at);
            }
        }
    }

    /// The server sent a packet while nothing was open and the client was in the middle of a command's
    /// packet: the server answered that command before it was whole (an ERR such as 1153, for a request
    /// larger than its max_allowed_packet, read no further). The command is taken as a request now, as
    /// far as it came (its text marked truncated at the length its header gives: the bytes the server did
    /// not read are no loss of the capture's), so that the packet answers it; the rest of its bytes, when
    /// they come, are not a new request.
    #[cold]
    #[inline(never)]
    fn take_early(client: &mut DirStream, core: &mut Core, at: Meta) {
        if client.mode != StreamMode::Framed
            || client.taken_early
            || core.phase != Phase::Command
            || core.replication.is_some()
        {
            return;
        }
        if let Some(pkt) = client.framer.partial(at) {
            // A command's effects are on the server's stream, which is framed and between packets here.
            let _ = core.on_client_packet(pkt, client.framer.prefix(), false);
            client.taken_early = !core.queue.is_empty();
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
            Self::start_inflating(cur, other);
        }
        if fx.new_command && dir == Direction::ClientToServer {
            // A new command means the server finished (or abandoned) what it was
            // sending, or will: a hunting server starts afresh here, and so does one caught
            // mid-packet with nothing left to answer (the packet was garbage). Where the answer's
            // first packet can be told, the hunt goes on until it comes, as a pipelining client
            // may send before the answer to its last command has ended.
            let mid_packet_idle = !other.framer.at_boundary() && core.queue.len() <= 1;
            if other.mode == StreamMode::Hunting {
                let told = other.inflater.is_none()
                    && !core.compression_unknown
                    && core.queue.len() == 1
                    && core.queue.front().is_some_and(|p| {
                        matches!(p.stage, Stage::First | Stage::PrepareFirst | Stage::Simple)
                    });
                core.info.counters.skipped_bytes += if told {
                    other.hunt_answer_here()
                } else {
                    other.resync_here()
                };
            } else if other.mode == StreamMode::Framed && mid_packet_idle {
                core.info.counters.skipped_bytes += other.resync_here();
            }
        }
    }

    /// Both directions switch to the compressed protocol. Apart, and never inlined: a decompressor is
    /// built on the stack before it is boxed, and a frame that large made every call of the function
    /// it sat in probe its stack page by page (once per client command).
    #[cold]
    #[inline(never)]
    fn start_inflating(cur: &mut DirStream, other: &mut DirStream) {
        if cur.inflater.is_none() {
            cur.inflater = Some(Box::new(Decompressor::new()));
        }
        if other.inflater.is_none() {
            other.inflater = Some(Box::new(Decompressor::new()));
        }
    }

    /// Keeps the TLS bytes fed after the SSLRequest for a TLS layer ([`Session::take_tls_bytes`]).
    #[cold]
    #[inline(never)]
    fn keep_tls_bytes(&mut self, dir: Direction, bytes: &[u8], meta: Meta) {
        let kept = self.tls.get_or_insert_with(Box::default);
        if kept.taken {
            return;
        }
        let held: usize = kept.pieces.iter().map(|(_, _, b)| b.len()).sum();
        let room = TLS_BYTES_KEPT.saturating_sub(held);
        let keep = bytes.len().min(room);
        if keep > 0 {
            kept.pieces.push((dir, meta, bytes[..keep].to_vec()));
        }
        let side = usize::from(dir == Direction::ServerToClient);
        kept.dropped[side] += (bytes.len() - keep) as u64;
    }

    /// After an SSLRequest, the bytes fed since (the TLS handshake's first records), for a TLS layer to
    /// take over the connection; `None` before an SSLRequest or once taken. From this call on, bytes fed
    /// to the stopped session are only counted (`undecoded_bytes`), as before the hand-off existed.
    pub fn take_tls_bytes(&mut self) -> Option<TlsBytes> {
        if self.core.info.encryption != Encryption::Tls {
            return None;
        }
        let kept = self.tls.get_or_insert_with(Box::default);
        if kept.taken {
            return None;
        }
        let out = std::mem::take(&mut **kept);
        kept.taken = true;
        Some(out)
    }

    /// The TLS after the SSLRequest is decrypted: what follows is fed as plaintext, from the login
    /// (HandshakeResponse) on, and decoded as a plain session is. The bytes counted as undecoded so far
    /// were the TLS handshake's, read by the TLS layer: the count starts again. Nothing happens unless the
    /// session stopped at an SSLRequest.
    pub fn resume_decrypted(&mut self) {
        if self.core.phase != Phase::Stopped || self.core.info.encryption != Encryption::Tls {
            return;
        }
        self.core.phase = Phase::AwaitHandshakeResponse;
        self.core.info.encryption = Encryption::TlsDecrypted;
        self.core.info.counters.undecoded_bytes = 0;
        for d in [&mut self.client, &mut self.server] {
            d.mode = StreamMode::Framed;
            d.framer.reset();
            d.window.clear();
            d.replay.clear();
        }
    }

    /// `len` bytes of this direction are missing (loss or snaplen truncation).
    /// Within a packet payload the framing is kept; otherwise the direction
    /// hunts: the client side for its next command packet, the server side for
    /// the client's next command or two chained packet headers.
    pub fn gap(&mut self, dir: Direction, len: u64, meta: Meta) {
        self.streams(dir).0.at_start = false;
        self.core.info.counters.gaps += 1;
        self.core.info.counters.gap_bytes += len;
        if dir == Direction::ServerToClient && self.answer_cut_in_window(len) {
            // Framed again from the cut ERR's first byte: the gap below ends it, and its kept bytes
            // (the code, the state, the start of the message) answer the request.
            let window = std::mem::take(&mut self.server.window);
            self.server.mode = StreamMode::Framed;
            self.server.framer.reset();
            self.feed_bytes(dir, &window, meta, true);
            self.server.window = window;
            self.server.window.clear();
        }
        let server_hunting = self.server.mode == StreamMode::Hunting;
        let (cur, other, core) = self.streams(dir);
        match cur.mode {
            StreamMode::Stopped => return,
            StreamMode::Hunting => return Self::gap_while_hunting(cur, core, dir, len),
            StreamMode::Framed => {}
        }
        if cur.inflater.is_none() {
            match cur.framer.gap(len, meta) {
                (GapEffect::Absorbed, _) => return,
                (GapEffect::Completed, Some(_)) if cur.taken_early => {
                    cur.taken_early = false;
                    return;
                }
                (GapEffect::Completed, Some(pkt)) => {
                    // A server packet cut by the snap length answers a request still being sent as
                    // much as a whole one does (ERR 1153 to a request over max_allowed_packet).
                    if dir == Direction::ServerToClient
                        && core.answers_lost()
                        && other.framer.started_at().is_some()
                    {
                        Self::take_early(other, core, pkt.start);
                    }
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
                    if !cur.taken_early {
                        let fx = core.on_client_packet(pkt, cur.framer.prefix(), server_hunting);
                        Self::apply(cur, other, core, dir, fx);
                    }
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
                        if core.queue.is_empty() && other.framer.started_at().is_some() {
                            Self::take_early(other, core, pkt.start);
                        }
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
                if let Some(head) = core.queue.front_mut() {
                    if head.stage != Stage::NoResponse
                        && at_boundary
                        && head.first_response.is_none()
                    {
                        *head.gap_before_response.get_or_insert(0) += len;
                    }
                }
                core.lose_answers(len);
                cur.start_hunting();
            }
        }
    }

    /// A gap of `len` bytes in a direction that is hunting already.
    fn gap_while_hunting(cur: &mut DirStream, core: &mut Core, dir: Direction, len: u64) {
        // The window is no longer contiguous.
        core.info.counters.skipped_bytes += cur.window.len() as u64;
        cur.window.clear();
        if dir != Direction::ServerToClient {
            return;
        }
        if cur.answer_due != AnswerDue::No {
            cur.answer_due = AnswerDue::Later;
            // Nothing of the answer due was seen: the gap came before it (see
            // `Core::on_response_packet`).
            if let Some(head) = core.queue.front_mut() {
                if head.stage != Stage::NoResponse && head.first_response.is_none() {
                    *head.gap_before_response.get_or_insert(0) += len;
                }
            }
        }
        // What the server sent after the open requests is lost, their answers with it.
        core.lose_answers(len);
    }

    /// The server side hunts, and the bytes it holds begin a packet whose end this gap of `len` bytes
    /// holds (a snap length that cut it) and that answers a request: an ERR packet, the answer a
    /// request waits for or the one a request still being sent gets when the server refuses it unread
    /// (an ERR's code is in its first bytes, so the cut packet still says which error it was); or the
    /// first packet of the answer due to a command sent while the server side was lost
    /// ([`DirStream::answer_due`]: its sequence id and first byte were checked). Anything else cut
    /// this way says too little to resynchronise on.
    fn answer_cut_in_window(&self, len: u64) -> bool {
        let w = &self.server.window;
        let (Some(packet_len), Some(&seq)) = (wire::le_u24(w), w.get(3)) else {
            return false;
        };
        let kept = w.len() as u64;
        let end = 4 + u64::from(packet_len);
        // An ERR packet: marker, code, and a message of at most 512 bytes.
        let cut_err = seq == 1
            && w.get(4) == Some(&0xFF)
            && kept >= 7
            && kept < end
            && end <= 1024
            && end - kept <= len;
        let client = &self.client;
        let awaited = match self.core.queue.front() {
            Some(p) if p.first_response.is_none() => p.stage != Stage::NoResponse,
            _ => {
                self.core.answers_lost()
                    && self.core.phase == Phase::Command
                    && self.core.replication.is_none()
                    && client.mode == StreamMode::Framed
                    && !client.taken_early
                    && client.framer.started_at().is_some()
            }
        };
        // The answer to a command sent while the server side was lost, begun and cut here.
        let cut_answer_due = self.server.answer_due != AnswerDue::No
            && kept >= 5
            && kept < end
            && end - kept <= len
            && self.core.queue.front().is_some_and(|p| {
                p.first_response.is_none()
                    && seq == p.next_seq
                    && starts_response(
                        p.command,
                        w.get(4..).unwrap_or(&[]),
                        u64::from(packet_len),
                        p.gap_before_response.unwrap_or(0),
                    )
            });
        self.server.mode == StreamMode::Hunting
            && self.server.inflater.is_none()
            && ((cut_err && awaited) || cut_answer_due)
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
        let request_cut = self.client.mode == StreamMode::Framed
            && self.client.framer.started_at().is_some()
            && !self.client.taken_early;
        let response_cut =
            self.server.mode == StreamMode::Framed && !self.server.framer.at_boundary();
        self.take_partial_command();
        let ctx = CloseContext {
            request_cut,
            response_cut,
            error: self.core.recent_error().cloned(),
            phase: self.phase(),
            pending: self
                .core
                .queue
                .iter()
                .find(|p| p.stage != Stage::NoResponse)
                .map(|p| p.snapshot()),
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
        if self.client.taken_early {
            // Its request is answered already: the bytes never sent are nobody's loss.
            self.client.taken_early = false;
            self.client.framer.reset();
            return;
        }
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
            // An answer that fell into bytes the capture lost is not one the capture ended before.
            self.core.complete_all(|p| {
                if p.lost {
                    Outcome::GapLost
                } else {
                    Outcome::CaptureEnded
                }
            });
        }
        let dropped = self.client.framer.reset() + self.server.framer.reset();
        self.core.info.counters.truncated_bytes += dropped;
    }

    /// Completed transactions since the last call, in request order.
    pub fn drain(&mut self) -> std::vec::Drain<'_, Transaction> {
        self.core.done.drain()
    }

    /// Completed transactions not yet drained or cleared, in request order: for callers that only read
    /// them, and so need not move each one out (see [`Session::clear_completed`]).
    pub fn completed(&self) -> &[Transaction] {
        self.core.done.as_slice()
    }

    /// Forgets the completed transactions. (Their strings, statements and error messages, stay with
    /// this session, for those of transactions to come.)
    pub fn clear_completed(&mut self) {
        // The texts stay where they lie, and are taken when their slot is written again: moving
        // them out now would cost a pass over the transactions.
        self.core.done.clear();
    }

    /// Whether the session is at rest between exchanges, so that the next client packet begins a request
    /// and its exchange decodes the same whatever came before it: logged in and in the command phase, no
    /// request open or completed undrained, both directions at a packet boundary with their framing
    /// known, neither compressed nor in TLS (decrypted or not), no replication stream, and the EOF convention known.
    /// A caller may then pass over a plain exchange ([`crate::ExchangeShape`]) and tell the session with
    /// [`Session::passed_over`].
    pub fn at_rest(&self) -> bool {
        let c = &self.core;
        let quiet = |d: &DirStream| {
            d.mode == StreamMode::Framed
                && d.inflater.is_none()
                && d.framer.at_boundary()
                && d.window.is_empty()
                && d.replay.is_empty()
        };
        c.phase == Phase::Command
            && c.queue.is_empty()
            && c.done.as_slice().is_empty()
            && c.replication.is_none()
            && c.trailing_eof.is_none()
            && !c.client_fin
            && !c.compression_unknown
            && c.eof_mode != EofMode::Unknown
            && c.info.compression == Compression::None
            && c.info.encryption == Encryption::Plain
            && quiet(&self.client)
            && quiet(&self.server)
    }

    /// The capabilities in force (the client's, as far as the server has them), when the login was seen.
    pub fn capabilities(&self) -> Option<u32> {
        self.core.caps()
    }

    /// The text of the prepared statement `id`, as a `COM_STMT_EXECUTE` of it shows it in its transaction
    /// (none if its `COM_STMT_PREPARE` was not seen).
    pub fn prepared(&self, id: u32) -> Option<&str> {
        protocol::prepared(&self.core.statements, id)
    }

    /// The caller passed over a plain exchange of `client_bytes` and `server_bytes` (see
    /// [`Session::at_rest`]): the byte counters count them; the session stays at rest.
    pub fn passed_over(&mut self, client_bytes: u64, server_bytes: u64) {
        // A command came after any error the server had sent.
        self.core.recent_error_live = false;
        self.core.info.counters.client_bytes += client_bytes;
        self.core.info.counters.server_bytes += server_bytes;
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
