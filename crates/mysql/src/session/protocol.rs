//! The protocol core: the connection's phase (greeting, login, commands), the queue of open requests
//! and how each server packet advances the request at its head. It tells the stream layer what to do
//! with the bytes through [`Effects`], the seam between the two.

use super::*;
use crate::Counters;

/// Side effects of one packet on the streams, applied by [`Session`].
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Effects {
    /// Stop decoding both directions (TLS, zstd).
    pub(super) stop: bool,
    /// Both directions switch to the compressed protocol after this packet.
    pub(super) compress: bool,
    /// A client command arrived: the server side may resynchronise here.
    pub(super) new_command: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
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

/// Whether the EOF_Packet is in use; learned from capabilities or, mid-stream,
/// from the shape of the first resultset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum EofMode {
    Unknown,
    Classic,
    Deprecated,
}

/// What a server packet did to the head request.
pub(super) enum Step {
    Continue,
    Done(Outcome),
}

/// A spare string (see [`Spares`]) is kept only up to this capacity: the spares must not grow a
/// session's memory.
pub(super) const SPARE_CAPACITY: usize = 1024;

/// At most two spare strings of one kind (statements, or error messages) of a session, of at most
/// [`SPARE_CAPACITY`] bytes each, for the texts of the transactions to come: an allocation and a
/// free saved per text. Two, not one: a transaction's string comes back only when the slot that
/// holds it is written again (see [`Pending::fill`]), after the next one's was made. (Two named
/// places, not a vector: keeping and taking one are then a few instructions where they are used.)
#[derive(Default)]
pub(super) struct Spares {
    first: String,
    second: String,
}

impl Spares {
    /// A spare string (empty), or a new one.
    #[inline(always)]
    pub(super) fn take(&mut self) -> String {
        if self.second.capacity() != 0 {
            std::mem::take(&mut self.second)
        } else {
            std::mem::take(&mut self.first)
        }
    }

    /// Keeps `s` for a text to come, if it is not too large and there is room (else it is dropped).
    #[inline(always)]
    pub(super) fn keep(&mut self, s: String) {
        if s.capacity() > SPARE_CAPACITY || s.capacity() == 0 {
            return;
        }
        if self.first.capacity() == 0 {
            self.first = s;
        } else if self.second.capacity() == 0 {
            self.second = s;
        }
    }
}

/// The spare strings of a session: for statements, and for error messages (apart: each kind is
/// reused for its kind, and so is about the right size).
#[derive(Default)]
pub(super) struct TextSpares {
    pub(super) statements: Spares,
    pub(super) messages: Spares,
    /// The last SQLSTATE read from an ERR_Packet, with its bytes (see [`err_outcome_in`]).
    pub(super) sql_state: Option<([u8; 5], SqlState)>,
}

/// Boxes of completed requests, at most two, kept for the next requests (see [`Core::free`]). (Two
/// named places, not a vector, for the reason [`Spares`] gives.)
#[derive(Default)]
pub(super) struct FreeRequests {
    first: Option<Box<Pending>>,
    second: Option<Box<Pending>>,
}

impl FreeRequests {
    #[inline(always)]
    pub(super) fn take(&mut self) -> Option<Box<Pending>> {
        match self.second.take() {
            Some(p) => Some(p),
            None => self.first.take(),
        }
    }

    /// Keeps `p` if there is room (else it is dropped).
    #[inline(always)]
    pub(super) fn keep(&mut self, p: Box<Pending>) {
        if self.first.is_none() {
            self.first = Some(p);
        } else if self.second.is_none() {
            self.second = Some(p);
        }
    }
}
/// Slots of completed transactions kept between turns (see [`Done`]).
const DONE_SLOTS: usize = 4;

/// The completed transactions, in request order, not yet drained or cleared. Their slots outlive a
/// turn: a transaction is written in place into the slot of one the caller is done with, field by
/// field from its request, rather than built apart and moved in (a copy of the whole transaction).
/// Slots past [`Done::len`] hold the caller's old transactions, with their strings taken (see
/// [`Session::clear_completed`]); at most [`DONE_SLOTS`] are kept.
#[derive(Default)]
pub(super) struct Done {
    slots: Vec<Transaction>,
    len: usize,
}

impl Done {
    pub(super) fn push(&mut self, t: Transaction) {
        match self.slots.get_mut(self.len) {
            Some(slot) => *slot = t,
            None => self.slots.push(t),
        }
        self.len += 1;
    }

    /// The transaction of request `p`, which ended with `outcome` (its statement is taken). The
    /// strings of the transaction the slot held, one the caller is done with, go to `spares`.
    #[inline(always)]
    pub(super) fn push_from(&mut self, p: &mut Pending, outcome: Outcome, spares: &mut TextSpares) {
        match self.slots.get_mut(self.len) {
            Some(slot) => p.fill(slot, outcome, spares),
            None => {
                let statement = p.statement.take();
                self.slots.push(p.to_transaction(statement, outcome));
            }
        }
        self.len += 1;
    }

    pub(super) fn as_slice(&self) -> &[Transaction] {
        self.slots.get(..self.len).unwrap_or(&[])
    }

    /// Forgets the transactions; their slots stay for the next ones, with their strings (see
    /// [`Pending::fill`]).
    #[inline]
    pub(super) fn clear(&mut self) {
        self.len = 0;
        if self.slots.len() > DONE_SLOTS {
            self.slots.truncate(DONE_SLOTS);
        }
    }

    pub(super) fn drain(&mut self) -> std::vec::Drain<'_, Transaction> {
        self.slots.truncate(self.len);
        self.len = 0;
        self.slots.drain(..)
    }
}

/// Open requests, oldest first: the head apart from the others, so that reaching it (several
/// times per packet: the response step, completing it, the checks of what follows) is a load and a
/// test instead of a ring buffer's index arithmetic. The head is empty only when the queue is.
/// Boxed: a request (some 240 bytes) is written once where it waits, and moves in and out of the
/// queue as a pointer.
pub(super) struct Queue {
    head: Option<Box<Pending>>,
    rest: VecDeque<Box<Pending>>,
}

impl Queue {
    pub(super) fn with_capacity(n: usize) -> Self {
        Queue {
            head: None,
            rest: VecDeque::with_capacity(n),
        }
    }

    #[inline(always)]
    pub(super) fn front(&self) -> Option<&Pending> {
        self.head.as_deref()
    }

    #[inline(always)]
    pub(super) fn front_mut(&mut self) -> Option<&mut Pending> {
        self.head.as_deref_mut()
    }

    #[inline(always)]
    pub(super) fn is_empty(&self) -> bool {
        self.head.is_none()
    }

    #[inline]
    pub(super) fn len(&self) -> usize {
        usize::from(self.head.is_some()) + self.rest.len()
    }

    /// Queues `p` last, and gives it back to be written.
    #[inline(always)]
    pub(super) fn push_back(&mut self, p: Box<Pending>) -> &mut Pending {
        if self.head.is_none() {
            return self.head.insert(p);
        }
        self.rest.push_back(p);
        // The one just pushed: the index is in range.
        let last = self.rest.len() - 1;
        &mut self.rest[last]
    }

    #[inline(always)]
    pub(super) fn pop_front(&mut self) -> Option<Box<Pending>> {
        let p = self.head.take()?;
        self.head = self.rest.pop_front();
        Some(p)
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = &Pending> {
        self.head.iter().chain(self.rest.iter()).map(|p| &**p)
    }

    pub(super) fn iter_mut(&mut self) -> impl Iterator<Item = &mut Pending> {
        self.head
            .iter_mut()
            .chain(self.rest.iter_mut())
            .map(|p| &mut **p)
    }
}

pub(super) struct Core {
    pub(super) phase: Phase,
    pub(super) info: SessionInfo,
    /// Open requests, oldest first.
    pub(super) queue: Queue,
    /// Boxes of requests completed, for the next requests: at most two. (Boxes, not
    /// requests: each goes into the queue as it is.)
    pub(super) free: FreeRequests,
    pub(super) done: Done,
    /// Strings of transactions the caller is done with, their statements and error messages, for the
    /// next ones (owned by the session so that no state hides in the thread).
    pub(super) spares: TextSpares,
    pub(super) statements: HashMap<u32, String>,
    pub(super) eof_mode: EofMode,
    /// A classic trailing EOF after COM_STMT_PREPARE_OK definitions may follow
    /// with this sequence id (only when the EOF mode is unknown).
    pub(super) trailing_eof: Option<u8>,
    /// The client half-closed (FIN): the server may still answer what it read.
    pub(super) client_fin: bool,
    /// Joined mid-stream and no client command found yet: whether the compressed
    /// protocol is in force is not known.
    pub(super) compression_unknown: bool,
    /// From a replica's binlog dump on: the replication stream (boxed: few connections have one).
    pub(super) replication: Option<Box<Replication>>,
    /// What the client's `SET @...` statements said, for a dump to come.
    pub(super) replica_hints: ReplicaHints,
    /// Where the login began, while the server waits for it.
    pub(super) login_from: Option<LoginStart>,
    /// The last error the server sent, while no command came after it ([`crate::CloseContext::error`]);
    /// kept when it lapses (`None` in its place is [`Core::recent_error_live`] false), so that its message's
    /// string is written again rather than allocated for every error.
    pub(super) recent_error: Option<Box<ErrorAt>>,
    /// Whether [`Core::recent_error`] still stands.
    pub(super) recent_error_live: bool,
}

/// Where a login the server is waiting for began.
#[derive(Debug, Clone, Copy)]
pub(super) enum LoginStart {
    /// Nothing from the client yet: at the end of the greeting.
    Greeting(Meta),
    /// At the client's first byte after the greeting (which may never make a packet).
    Client(Meta),
}

impl LoginStart {
    pub(super) fn at(self) -> Meta {
        match self {
            LoginStart::Greeting(m) | LoginStart::Client(m) => m,
        }
    }
}

impl Core {
    pub(super) fn new(mode: StartMode) -> Self {
        Core {
            phase: match mode {
                StartMode::Handshake => Phase::AwaitGreeting,
                StartMode::MidStream | StartMode::MidAnswer => Phase::Unknown,
                StartMode::Login => Phase::AwaitHandshakeResponse,
            },
            info: SessionInfo::default(),
            queue: Queue::with_capacity(8),
            free: FreeRequests::default(),
            done: Done::default(),
            spares: TextSpares::default(),
            statements: HashMap::new(),
            eof_mode: EofMode::Unknown,
            trailing_eof: None,
            client_fin: false,
            compression_unknown: mode == StartMode::MidStream,
            replication: None,
            replica_hints: ReplicaHints::default(),
            login_from: None,
            recent_error: None,
            recent_error_live: false,
        }
    }

    /// Semi-sync ACKs may come from the client: a replication stream, or a mid-stream start with nothing
    /// decoded yet.
    pub(super) fn expects_acks(&self) -> bool {
        self.replication.is_some() || (self.phase == Phase::Unknown && self.queue.is_empty())
    }

    /// Effective (negotiated) capabilities, if the handshake was seen.
    pub(super) fn caps(&self) -> Option<u32> {
        let c = self.info.client_capabilities?;
        Some(match self.info.server_capabilities {
            Some(s) => c & s,
            None => c,
        })
    }

    pub(super) fn complete_head(&mut self, outcome: Outcome) {
        self.complete_head_here(outcome);
    }

    /// [`Core::complete_head`], inlined where a response completes its request (most do).
    #[inline(always)]
    pub(super) fn complete_head_here(&mut self, outcome: Outcome) {
        if matches!(outcome, Outcome::Err { .. }) {
            if let Some(p) = self.queue.front() {
                let at = p.last_response.unwrap_or(p.request);
                Self::note_error_in(&mut self.recent_error, &outcome, at, Some(p));
                self.recent_error_live = true;
            }
        }
        match self.queue.front_mut() {
            // The common case, with nothing to record in the session info: the transaction is
            // built from the request where it lies rather than from a copy of it.
            Some(p)
                if p.new_schema.is_none()
                    && p.new_user.is_none()
                    && !matches!(p.command, Command::ChangeUser | Command::ResetConnection) =>
            {
                self.done.push_from(p, outcome, &mut self.spares);
                if let Some(p) = self.queue.pop_front() {
                    self.recycle(p);
                }
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

    /// The error `outcome` (an [`Outcome::Err`]) came at `at`, answering `request`: the session's last
    /// word until a command comes. (Apart, and never inlined: errors are the rare answer.)
    #[cold]
    #[inline(never)]
    pub(super) fn note_error(&mut self, outcome: &Outcome, at: Meta, request: Option<&Pending>) {
        Self::note_error_in(&mut self.recent_error, outcome, at, request);
        self.recent_error_live = true;
    }

    /// [`Core::note_error`] into `slot` (the caller marks it live).
    #[cold]
    #[inline(never)]
    fn note_error_in(
        slot: &mut Option<Box<ErrorAt>>,
        outcome: &Outcome,
        at: Meta,
        request: Option<&Pending>,
    ) {
        let Outcome::Err {
            code,
            sql_state,
            message,
        } = outcome
        else {
            return;
        };
        let e = slot.get_or_insert_with(|| {
            Box::new(ErrorAt {
                error: ServerError {
                    code: 0,
                    sql_state: SqlState::default(),
                    message: String::new(),
                },
                at,
                request: None,
                statement: None,
                in_place_of_greeting: false,
            })
        });
        e.error.code = *code;
        e.error.sql_state = *sql_state;
        e.error.message.clear();
        e.error.message.push_str(message);
        e.at = at;
        e.request = request.map(|p| (p.command, p.request));
        e.in_place_of_greeting = request
            .is_some_and(|p| p.command == Command::Connect && p.first_response == Some(p.request));
        // Its start names it; an error storm's statements are not copied whole.
        let head = request.and_then(|p| p.statement.as_deref()).map(|text| {
            text.get(..floor_char_boundary(text, ERROR_STATEMENT_CAP))
                .unwrap_or("")
        });
        match (head, &mut e.statement) {
            (Some(text), Some(kept)) => {
                kept.clear();
                kept.push_str(text);
            }
            (Some(text), kept) => *kept = Some(text.to_owned()),
            (None, kept) => *kept = None,
        }
    }

    /// The last error the server sent, if no command came after it.
    pub(super) fn recent_error(&self) -> Option<&ErrorAt> {
        self.recent_error
            .as_deref()
            .filter(|_| self.recent_error_live)
    }

    /// A request's box, for the next request.
    #[inline(always)]
    fn recycle(&mut self, p: Box<Pending>) {
        self.free.keep(p);
    }

    /// A new request at the end of the queue, written in a recycled box when there is one.
    /// (Of the queue and the free boxes only: the caller goes on using the other fields.) Inlined:
    /// called, it cost ~45 instructions a request more.
    #[inline(always)]
    pub(super) fn open<'a>(
        queue: &'a mut Queue,
        free: &mut FreeRequests,
        command: Command,
        request: Meta,
        stage: Stage,
    ) -> &'a mut Pending {
        let p = match free.take() {
            Some(mut p) => {
                p.reset(command, request, stage);
                p
            }
            None => Box::new(Pending::new(command, request, stage)),
        };
        queue.push_back(p)
    }

    pub(super) fn finish_request(&mut self, mut p: Box<Pending>, outcome: Outcome) {
        if matches!(outcome, Outcome::Err { .. }) {
            let at = p.last_response.unwrap_or(p.request);
            self.note_error(&outcome, at, Some(&p));
        }
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
        self.done.push_from(&mut p, outcome, &mut self.spares);
        self.recycle(p);
    }

    /// Requests that expect no response complete once they reach the head.
    pub(super) fn flush_no_response(&mut self) {
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

    pub(super) fn phase_for_close(&self) -> SessionPhase {
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

    /// `len` bytes the server sent are lost: the open requests' answers may be among them, and cannot be
    /// read (each ends [`Outcome::GapLost`] when it ends unanswered; the head reads on only where its
    /// answer is seen to begin after the gap).
    /// No open request waits for an answer the server stream could still carry: none is open, or each
    /// one's answer began and was lost in a gap. A server packet now can only answer a request that is
    /// still being sent (see [`Session::take_early`](super::Session)).
    pub(super) fn answers_lost(&self) -> bool {
        self.queue
            .iter()
            .all(|p| p.lost && p.first_response.is_some())
    }

    pub(super) fn lose_answers(&mut self, len: u64) {
        for p in self.queue.iter_mut() {
            p.lost = true;
            p.gap_bytes += len;
        }
        if let Some(head) = self.queue.front_mut() {
            if head.stage != Stage::NoResponse {
                head.stage = Stage::Lost;
            }
        }
    }

    /// Every open request ends with `f(request)`.
    pub(super) fn complete_all(&mut self, f: impl Fn(&Pending) -> Outcome) {
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

    pub(super) fn on_client_packet(
        &mut self,
        pkt: PacketEnd,
        prefix: &[u8],
        server_hunting: bool,
    ) -> Effects {
        self.on_client_packet_here(pkt, prefix, server_hunting)
    }

    /// [`Core::on_client_packet`], inlined where the framed client stream reads its packets.
    #[inline(always)]
    pub(super) fn on_client_packet_here(
        &mut self,
        pkt: PacketEnd,
        prefix: &[u8],
        server_hunting: bool,
    ) -> Effects {
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
                    head.last_request = pkt.end;
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
                        head.last_request = pkt.end;
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
                        head.last_request = pkt.end;
                        head.next_seq = pkt.seq.wrapping_add(1);
                        return fx;
                    }
                }
                fx = self.on_command(pkt, prefix, server_hunting);
            }
        }
        fx
    }

    #[cold]
    #[inline(never)]
    pub(super) fn on_handshake_response(&mut self, pkt: PacketEnd, prefix: &[u8]) -> Effects {
        let mut fx = Effects::default();
        let mut pending = Box::new(Pending::new(Command::Connect, pkt.start, Stage::Auth));
        pending.request_bytes = wire_len(pkt.len);
        pending.last_request = pkt.end;
        pending.next_seq = pkt.seq.wrapping_add(1);
        // A response cut by a gap still gives the capabilities (first 4 bytes).
        match wire::parse_handshake_response(prefix, !pkt.damaged) {
            Some(hr) => {
                self.info.client_capabilities = Some(hr.capabilities);
                self.info.character_set = hr.character_set.or(self.info.character_set);
                // The login inside a decrypted TLS keeps CLIENT_SSL among its capabilities: only the
                // first login, in the clear, is an SSLRequest.
                if hr.capabilities & cap::CLIENT_SSL != 0
                    && self.info.encryption == Encryption::Plain
                {
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

    #[inline(always)]
    pub(super) fn on_command(
        &mut self,
        pkt: PacketEnd,
        prefix: &[u8],
        server_hunting: bool,
    ) -> Effects {
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
        self.recent_error_live = false;
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
        // Written where it will wait for its response: a request is large, and moving it in
        // would cost a copy per command.
        let p = Self::open(&mut self.queue, &mut self.free, command, pkt.start, stage);
        p.request_bytes = wire_len(pkt.len);
        p.last_request = pkt.end;
        p.gap_bytes = pkt.gap_bytes;
        // (A request of 16 MiB or more is continued: the answer's number follows its last packet's.)
        p.next_seq = pkt.seq.wrapping_add(physical_packets(pkt.len) as u8);
        let spares = &mut self.spares;
        let mut text = |b: &[u8], total: u64| {
            let s = spares.statements.take();
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
            _ => Self::command_args(
                p,
                command,
                body,
                body_total,
                &pkt,
                caps,
                &mut self.statements,
                &mut self.info,
                spares,
            ),
        }
        if command == Command::Quit {
            self.phase = Phase::Quit;
        }
        self.flush_no_response();
        fx
    }

    /// What a command other than COM_QUERY carries that its transaction shows: its text (schema,
    /// table, user, prepared statement), its statement id. (Apart, and never inlined: COM_QUERY,
    /// by far the most common command, reads better without the others' code around it.)
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn command_args(
        p: &mut Pending,
        command: Command,
        body: &[u8],
        body_total: u64,
        pkt: &PacketEnd,
        caps: Option<u32>,
        statements: &mut HashMap<u32, String>,
        info: &mut SessionInfo,
        spares: &mut TextSpares,
    ) {
        let mut text = |b: &[u8], total: u64| {
            let s = spares.statements.take();
            Some(capped_text(s, b, total, pkt.damaged, pkt.gap_bytes))
        };
        match command {
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
                        info.client_auth_plugin = Some(wire::text(plugin));
                    }
                } else {
                    info.counters.malformed_packets += 1;
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
                    p.statement = prepared(statements, id).map(str::to_owned);
                    if command == Command::StmtClose {
                        statements.remove(&id);
                    }
                    // flags: CURSOR_TYPE_READ_ONLY and friends open a cursor.
                    if command == Command::StmtExecute {
                        let rest = r.rest();
                        p.cursor = r.u8().is_some_and(|f| f & 0x07 != 0);
                        let whole = !pkt.damaged && rest.len() as u64 + 4 == body_total;
                        p.execute.set(rest, whole);
                    }
                } else {
                    info.counters.malformed_packets += 1;
                }
            }
            _ => {}
        }
    }

    // ----- server side -----

    pub(super) fn on_server_packet(&mut self, pkt: PacketEnd, prefix: &[u8]) -> Effects {
        self.on_server_packet_here(pkt, prefix)
    }

    /// [`Core::on_server_packet`], inlined where the framed server stream reads its packets.
    #[inline(always)]
    pub(super) fn on_server_packet_here(&mut self, pkt: PacketEnd, prefix: &[u8]) -> Effects {
        let fx = Effects::default();
        // Nearly every packet answers a command, with no replication stream nor trailing EOF to
        // look for: one test for those, the others apart.
        let plain = self.phase == Phase::Command
            && self.replication.is_none()
            && self.trailing_eof.is_none();
        if !plain && self.other_server_packet(pkt, prefix) {
            return fx;
        }
        self.on_response_packet(pkt, prefix, fx)
    }

    /// A server packet outside the plain command phase: whether it was taken care of here (else it is
    /// a response like any other).
    #[inline(never)]
    fn other_server_packet(&mut self, pkt: PacketEnd, prefix: &[u8]) -> bool {
        match self.phase {
            Phase::Stopped => return true,
            Phase::AwaitGreeting => {
                self.on_greeting(pkt, prefix);
                return true;
            }
            Phase::AwaitHandshakeResponse => {
                self.on_server_before_login(pkt, prefix);
                return true;
            }
            _ => {}
        }
        if self.replication.is_none()
            && self.phase == Phase::Unknown
            && self.queue.is_empty()
            && replication::is_event_packet(prefix, pkt.len)
        {
            // Joined mid-stream: binlog events with no request before them are a replication stream.
            self.join_replication();
        }
        if self.replication.is_some() {
            self.on_replication_packet(pkt, prefix);
            return true;
        }
        self.trailing_eof.is_some() && self.trailing_eof_ends(pkt, prefix)
    }

    #[cold]
    #[inline(never)]
    fn join_replication(&mut self) {
        self.replication = Some(Box::new(Replication::joined()));
    }

    #[inline(never)]
    fn on_replication_packet(&mut self, pkt: PacketEnd, prefix: &[u8]) {
        if let Some(r) = self.replication.as_deref_mut() {
            if let Some(dump) = r.on_server_packet(&pkt, prefix) {
                self.done.push(dump);
            }
        }
    }

    /// Whether this packet is the classic EOF expected after COM_STMT_PREPARE_OK's definitions (the
    /// expectation ends with the packet either way).
    #[cold]
    #[inline(never)]
    fn trailing_eof_ends(&mut self, pkt: PacketEnd, prefix: &[u8]) -> bool {
        if let Some(seq) = self.trailing_eof.take() {
            if pkt.seq == seq && prefix.first() == Some(&0xFE) && pkt.len < 9 {
                self.eof_mode = EofMode::Classic;
                return true;
            }
        }
        false
    }

    /// The server answered the login attempt that began at `from` (or the connection, before any
    /// handshake) with the ERR packet `pkt`, whose `outcome` ends the attempt.
    fn refuse_login(&mut self, from: Meta, pkt: PacketEnd, outcome: Outcome) {
        let mut p = Box::new(Pending::new(Command::Connect, from, Stage::Auth));
        p.first_response = Some(pkt.start);
        p.last_response = Some(pkt.end);
        p.response_bytes = wire_len(pkt.len);
        self.finish_request(p, outcome);
        self.phase = Phase::LoginRefused;
    }

    /// A server packet while the server waits for the login.
    #[cold]
    #[inline(never)]
    fn on_server_before_login(&mut self, pkt: PacketEnd, prefix: &[u8]) {
        if let (Some(0xFF), Some(mut outcome)) = (prefix.first(), err_outcome(prefix)) {
            mark_cut_message(&mut outcome, pkt);
            // The server refused what the client sent instead of a login (1156 "Got
            // packets out of order" for bytes that are no HandshakeResponse), or its
            // silence (1043 "Bad handshake"): the login attempt ends with that error.
            self.refuse_login(
                self.login_from.map_or(pkt.start, LoginStart::at),
                pkt,
                outcome,
            );
            return;
        }
        self.info.counters.unsolicited_server_packets += 1;
        self.note_unsolicited_error(prefix, pkt.end);
    }

    /// A server packet of the command phase, answering the request at the head of the queue.
    #[inline(always)]
    fn on_response_packet(&mut self, pkt: PacketEnd, prefix: &[u8], mut fx: Effects) -> Effects {
        let Some(head) = self.queue.front_mut() else {
            self.info.counters.unsolicited_server_packets += 1;
            self.note_unsolicited_error(prefix, pkt.end);
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
        // (One count of the physical packets for both.)
        let packets = physical_packets(pkt.len);
        head.response_bytes += pkt.len + 4 * packets;
        head.gap_bytes += pkt.gap_bytes;
        if pkt.seq != head.next_seq && head.stage != Stage::Lost {
            self.info.counters.sequence_anomalies += 1;
        }
        head.next_seq = pkt.seq.wrapping_add(packets as u8);
        // MariaDB's progress report (LOAD DATA, ALTER, ... with progress reporting on) is an ERR_Packet
        // with code 0xFFFF: not an error, and the request goes on.
        if prefix.first() == Some(&0xFF) && prefix.get(1..3) == Some(&[0xFF, 0xFF][..]) {
            self.info.counters.progress_reports += 1;
            return fx;
        }
        let step = self.response_step(pkt, prefix, &mut fx);
        if let Step::Done(mut outcome) = step {
            mark_cut_message(&mut outcome, pkt);
            self.complete_head_here(outcome);
        }
        fx
    }

    /// Client bytes arrived while the server waits for the login: the login began with the first.
    #[cold]
    pub(super) fn note_login_bytes(&mut self, at: Meta) {
        if !matches!(self.login_from, Some(LoginStart::Client(_))) {
            self.login_from = Some(LoginStart::Client(at));
        }
    }

    #[cold]
    #[inline(never)]
    pub(super) fn note_unsolicited_error(&mut self, prefix: &[u8], at: Meta) {
        if let Some(Outcome::Err {
            code,
            sql_state,
            message,
        }) = err_outcome(prefix)
        {
            self.info.counters.unsolicited_errors += 1;
            let outcome = Outcome::Err {
                code,
                sql_state,
                message,
            };
            self.note_error(&outcome, at, None);
            if let Outcome::Err {
                code,
                sql_state,
                message,
            } = outcome
            {
                self.info.last_unsolicited_error = Some(ServerError {
                    code,
                    sql_state,
                    message,
                });
            }
            self.info.last_unsolicited_error_at = Some(at);
        }
    }

    #[cold]
    #[inline(never)]
    pub(super) fn on_greeting(&mut self, pkt: PacketEnd, prefix: &[u8]) {
        if prefix.first() == Some(&0xFF) {
            // The server refused the connection before any handshake.
            if let Some(mut outcome) = err_outcome(prefix) {
                mark_cut_message(&mut outcome, pkt);
                self.refuse_login(pkt.start, pkt, outcome);
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
    pub(super) fn end_of_result(head: &mut Pending, st: OkPacket) -> Step {
        head.note_status(st.status_flags, st.warnings);
        if st.status_flags & status::SERVER_MORE_RESULTS_EXISTS != 0 {
            head.stage = Stage::First;
            Step::Continue
        } else {
            Step::Done(Outcome::ResultSet { rows: head.rows })
        }
    }

    /// How the server packet `pkt` (its kept bytes `p`) advances the request at the head: a dispatch on
    /// the stage its response is at, each stage (or group of stages) read by a function of its own.
    /// Every packet of every response comes here, so this and each stage's function are inlined into
    /// [`Core::on_response_packet`], and with it into the server stream's per-packet code.
    #[inline(always)]
    pub(super) fn response_step(&mut self, pkt: PacketEnd, p: &[u8], fx: &mut Effects) -> Step {
        let counters = &mut self.info.counters;
        let spares = &mut self.spares;
        let Some(head) = self.queue.front_mut() else {
            return Step::Continue;
        };
        let r = Reply {
            pkt,
            p,
            first: p.first().copied(),
        };
        if r.first.is_none() && pkt.len > 0 {
            return Self::first_byte_lost(head);
        }
        match head.stage {
            Stage::NoResponse => Step::Continue,
            Stage::Lost => {
                if !matches!(r.first, Some(0xFE | 0xFF)) {
                    head.rows += 1;
                }
                Step::Continue
            }
            Stage::Simple => Self::simple_response(r, counters, spares),
            Stage::AnyOne => match r.first {
                Some(0xFF) => err_step(p, spares),
                _ => Step::Done(ok_outcome(OkPacket::default())),
            },
            Stage::First => Self::first_response(head, r, counters, spares),
            Stage::ColumnDefs { left } => Self::column_definition(head, r, left, counters, spares),
            Stage::AfterDefs => Self::after_definitions(head, r, &mut self.eof_mode, spares),
            Stage::Rows => Self::row(head, r, counters, spares),
            Stage::InfileData | Stage::InfileResult => {
                Self::local_infile_result(head, r, counters, spares)
            }
            Stage::PrepareFirst => {
                Self::prepare_ok(head, r, &mut self.statements, counters, spares)
            }
            Stage::PrepareDefs { params, columns } => Self::prepared_definition(
                head,
                r,
                (params, columns),
                (self.eof_mode, &mut self.trailing_eof),
                spares,
            ),
            Stage::FieldList => Self::field_definition(head, r, spares),
            Stage::Binlog => Self::binlog_event(head, r, spares),
            Stage::Auth => {
                Self::auth_response(head, r, (&mut self.phase, &mut self.info), spares, fx)
            }
        }
    }

    /// The first byte of the packet fell into a gap: only row-like streams can go on.
    #[inline(always)]
    fn first_byte_lost(head: &mut Pending) -> Step {
        match head.stage {
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
        }
    }

    /// The one OK, EOF or ERR that answers a command without a resultset.
    #[inline(always)]
    fn simple_response(r: Reply<'_>, counters: &mut Counters, spares: &mut TextSpares) -> Step {
        let Reply { pkt, p, first } = r;
        match first {
            Some(0x00) => match wire::parse_ok(p) {
                Some(ok) => Step::Done(ok_outcome(ok)),
                None => unparsed(counters),
            },
            Some(0xFE) => Step::Done(ok_outcome(
                wire::parse_terminator(p, pkt.len).unwrap_or_default(),
            )),
            Some(0xFF) => err_step(p, spares),
            _ => unparsed(counters),
        }
    }

    /// The first packet of a response (or of a further resultset): an OK, an ERR, a LOCAL INFILE request,
    /// an EOF ending the resultsets, or the column count of a resultset.
    #[inline(always)]
    fn first_response(
        head: &mut Pending,
        r: Reply<'_>,
        counters: &mut Counters,
        spares: &mut TextSpares,
    ) -> Step {
        let Reply { pkt, p, first } = r;
        let len = pkt.len;
        match first {
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
                        head.note_status(ok.status_flags, ok.warnings);
                        Step::Done(Outcome::ResultSet { rows: head.rows })
                    } else {
                        Step::Done(ok_outcome(ok))
                    }
                }
                None => unparsed(counters),
            },
            Some(0xFF) => Step::Done(err_outcome_here(p, spares).unwrap_or(Outcome::Unparsed)),
            Some(0xFB) => {
                head.stage = Stage::InfileData;
                head.saw_infile = true;
                Step::Continue
            }
            Some(0xFE) => {
                let st = wire::parse_terminator(p, len).unwrap_or_default();
                if head.saw_resultset {
                    Self::end_of_result(head, st)
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
                None => unparsed(counters),
            },
        }
    }

    /// One of the column definitions of a resultset, `left` of them still announced.
    #[inline(always)]
    fn column_definition(
        head: &mut Pending,
        r: Reply<'_>,
        left: u64,
        counters: &mut Counters,
        spares: &mut TextSpares,
    ) -> Step {
        let Reply { pkt, p, first } = r;
        if first == Some(0xFF) {
            return err_step(p, spares);
        }
        if wire::is_terminator(p, pkt.len) && pkt.len < 9 {
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

    /// The packet after the column definitions: the metadata EOF (classic framing), or already the first
    /// row or the resultset's end (CLIENT_DEPRECATE_EOF), which tells `eof_mode` when it is not known.
    #[inline(always)]
    fn after_definitions(
        head: &mut Pending,
        r: Reply<'_>,
        eof_mode: &mut EofMode,
        spares: &mut TextSpares,
    ) -> Step {
        let Reply { pkt, p, first } = r;
        let len = pkt.len;
        // Classic framing puts a 5-byte EOF_Packet here; under
        // CLIENT_DEPRECATE_EOF rows follow at once, and an empty
        // resultset ends with an OK_Packet of at least 7 bytes.
        if wire::is_terminator(p, len) && len < 7 {
            if *eof_mode == EofMode::Unknown {
                *eof_mode = EofMode::Classic;
            }
            let st = wire::parse_eof(p).unwrap_or_default();
            if st.status_flags & status::SERVER_STATUS_CURSOR_EXISTS != 0 || head.cursor && len < 5
            {
                return Self::end_of_result(head, st);
            }
            head.stage = Stage::Rows;
            return Step::Continue;
        }
        if *eof_mode == EofMode::Unknown {
            *eof_mode = EofMode::Deprecated;
        }
        if wire::is_terminator(p, len) {
            let st = wire::parse_terminator(p, len).unwrap_or_default();
            return Self::end_of_result(head, st);
        }
        if first == Some(0xFF) {
            return err_step(p, spares);
        }
        head.rows += 1;
        head.stage = Stage::Rows;
        Step::Continue
    }

    /// A row of a resultset, or its ending EOF/OK, or an ERR that cut it short.
    #[inline(always)]
    fn row(
        head: &mut Pending,
        r: Reply<'_>,
        counters: &mut Counters,
        spares: &mut TextSpares,
    ) -> Step {
        let Reply { pkt, p, first } = r;
        if wire::is_terminator(p, pkt.len) {
            let st = wire::parse_terminator(p, pkt.len).unwrap_or_default();
            return Self::end_of_result(head, st);
        }
        if first == Some(0xFF) {
            // 0xFF is no valid start of a text row (nor of a binary row, 0x00).
            if let Some(o) = err_outcome_in(p, spares) {
                return Step::Done(o);
            }
            counters.malformed_packets += 1;
        }
        head.rows += 1;
        Step::Continue
    }

    /// The OK or ERR that ends a LOCAL INFILE exchange.
    #[inline(always)]
    fn local_infile_result(
        head: &mut Pending,
        r: Reply<'_>,
        counters: &mut Counters,
        spares: &mut TextSpares,
    ) -> Step {
        let Reply { p, first, .. } = r;
        match first {
            Some(0x00) => match wire::parse_ok(p) {
                Some(ok) if ok.status_flags & status::SERVER_MORE_RESULTS_EXISTS != 0 => {
                    head.stage = Stage::First;
                    Step::Continue
                }
                Some(ok) => Step::Done(Outcome::LocalInfile {
                    file_bytes: head.file_bytes,
                    affected_rows: ok.affected_rows,
                }),
                None => unparsed(counters),
            },
            Some(0xFF) => err_step(p, spares),
            _ => {
                counters.malformed_packets += 1;
                Step::Continue
            }
        }
    }

    /// The COM_STMT_PREPARE_OK (or ERR) answering a COM_STMT_PREPARE: the statement's id is learned
    /// (its text kept in `statements` for the executions to come) and its definitions may follow.
    #[inline(always)]
    fn prepare_ok(
        head: &mut Pending,
        r: Reply<'_>,
        statements: &mut HashMap<u32, String>,
        counters: &mut Counters,
        spares: &mut TextSpares,
    ) -> Step {
        let Reply { pkt, p, first } = r;
        match first {
            Some(0x00) => match wire::parse_prepare_ok(p, pkt.len, !pkt.damaged) {
                Some(ok) => {
                    head.statement_id = Some(ok.statement_id);
                    if let Some(sql) = &head.statement {
                        if statements.len() < MAX_STATEMENTS
                            || statements.contains_key(&ok.statement_id)
                        {
                            statements.insert(ok.statement_id, sql.clone());
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
                None => unparsed(counters),
            },
            Some(0xFF) => err_step(p, spares),
            _ => unparsed(counters),
        }
    }

    /// One of a prepared statement's parameter and column definitions (`params` and `columns` still to
    /// come), or the EOF after a block of them. When the last one came and the EOF mode is not known,
    /// a classic trailing EOF may follow: `trailing_eof` says with which sequence id.
    #[inline(always)]
    fn prepared_definition(
        head: &mut Pending,
        r: Reply<'_>,
        (params, columns): (u16, u16),
        (eof_mode, trailing_eof): (EofMode, &mut Option<u8>),
        spares: &mut TextSpares,
    ) -> Step {
        let Reply { pkt, p, first } = r;
        let (statement_id, all_params, all_columns) = head.prepared.unwrap_or_default();
        let outcome = Outcome::Prepared {
            statement_id,
            params: all_params,
            columns: all_columns,
        };
        if first == Some(0xFF) {
            return err_step(p, spares);
        }
        if wire::is_terminator(p, pkt.len) && pkt.len < 9 {
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
                    *trailing_eof = Some(pkt.seq.wrapping_add(1));
                    Step::Done(outcome)
                }
            }
        } else {
            Step::Continue
        }
    }

    /// A column definition answering COM_FIELD_LIST, or the EOF after them.
    #[inline(always)]
    fn field_definition(head: &mut Pending, r: Reply<'_>, spares: &mut TextSpares) -> Step {
        let Reply { pkt, p, first } = r;
        if wire::is_terminator(p, pkt.len) {
            return Step::Done(Outcome::ResultSet { rows: head.rows });
        }
        if first == Some(0xFF) {
            return err_step(p, spares);
        }
        head.rows += 1;
        Step::Continue
    }

    /// A binlog event of a COM_BINLOG_DUMP(_GTID), or the EOF or ERR that ends them.
    #[inline(always)]
    fn binlog_event(head: &mut Pending, r: Reply<'_>, spares: &mut TextSpares) -> Step {
        let Reply { pkt, p, first } = r;
        match first {
            Some(0xFF) => err_step(p, spares),
            _ if wire::is_terminator(p, pkt.len) && pkt.len < 9 => {
                Step::Done(Outcome::ResultSet { rows: head.rows })
            }
            _ => {
                head.rows += 1;
                Step::Continue
            }
        }
    }

    /// A packet of the authentication exchange (the login, or COM_CHANGE_USER): the OK that ends it (and
    /// starts the command phase, compressed if both sides agreed), the ERR that refuses it, an
    /// AuthSwitchRequest, or more data of the authentication method.
    #[inline(always)]
    fn auth_response(
        head: &mut Pending,
        r: Reply<'_>,
        (phase, info): (&mut Phase, &mut SessionInfo),
        spares: &mut TextSpares,
        fx: &mut Effects,
    ) -> Step {
        let Reply { pkt, p, first } = r;
        match first {
            Some(0x00) => {
                let ok = wire::parse_ok(p).unwrap_or_default();
                if head.command == Command::Connect {
                    *phase = Phase::Command;
                    fx.compress = start_compression(info);
                    if info.compression == Compression::Zstd {
                        *phase = Phase::Stopped;
                        fx.stop = true;
                    }
                }
                Step::Done(ok_outcome(ok))
            }
            Some(0xFF) => {
                if head.command == Command::Connect {
                    *phase = Phase::LoginRefused;
                }
                err_step(p, spares)
            }
            Some(0xFE) => {
                // AuthSwitchRequest: plugin name, then its data (1 byte: old auth switch).
                let name = wire::Reader::new(p.get(1..).unwrap_or(&[])).nul_or_rest();
                if !name.is_empty() {
                    info.auth_plugin = Some(wire::text(name));
                }
                Step::Continue
            }
            Some(0x01) => {
                match p.get(1) {
                    Some(0x03) if pkt.len == 2 => {
                        info.caching_sha2 = Some(CachingSha2Auth::FastAuthSuccess)
                    }
                    Some(0x04) if pkt.len == 2 => {
                        info.caching_sha2 = Some(CachingSha2Auth::FullAuthRequired)
                    }
                    _ => {}
                }
                Step::Continue
            }
            // 0x02: AuthNextFactor (multi-factor authentication).
            Some(0x02) => Step::Continue,
            _ => {
                info.counters.malformed_packets += 1;
                Step::Continue
            }
        }
    }
}

/// One server packet of a response, as the stages of [`Core::response_step`] read it: its framing, the
/// bytes of it kept, and its first byte (`None` when a gap took it).
#[derive(Clone, Copy)]
pub(super) struct Reply<'p> {
    pkt: PacketEnd,
    p: &'p [u8],
    first: Option<u8>,
}

/// The request ends with the ERR_Packet `p` (its message written into one of `spares`), or unparsed.
#[inline(always)]
fn err_step(p: &[u8], spares: &mut TextSpares) -> Step {
    Step::Done(err_outcome_in(p, spares).unwrap_or(Outcome::Unparsed))
}

/// The request ends with a packet that does not parse as what its stage expects: counted as malformed.
#[inline(always)]
fn unparsed(counters: &mut Counters) -> Step {
    counters.malformed_packets += 1;
    Step::Done(Outcome::Unparsed)
}

/// Bytes of a request's statement kept with the error that answered it ([`crate::ErrorAt::statement`]):
/// enough to name it in a sentence.
const ERROR_STATEMENT_CAP: usize = 160;

/// The largest index at most `at` that is a character boundary of `s`.
fn floor_char_boundary(s: &str, at: usize) -> usize {
    if at >= s.len() {
        return s.len();
    }
    (0..=at).rev().find(|&i| s.is_char_boundary(i)).unwrap_or(0)
}

/// The text of the prepared statement `id`, as a `COM_STMT_EXECUTE` of it shows it (also what
/// [`crate::Session::prepared`] tells a caller that passes such an exchange over: one rule for both).
pub(super) fn prepared(statements: &HashMap<u32, String>, id: u32) -> Option<&str> {
    statements.get(&id).map(String::as_str)
}

/// After the authentication OK: switch to the compressed protocol if both
/// sides agreed on it. Returns whether zlib framing starts now.
pub(super) fn start_compression(info: &mut SessionInfo) -> bool {
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

/// An error message the capture holds only the start of (a snap length cut its packet) ends in `…`, as a
/// statement cut mid-text does: the code and SQLSTATE before it are whole.
fn mark_cut_message(outcome: &mut Outcome, pkt: PacketEnd) {
    if let Outcome::Err { message, .. } = outcome {
        if pkt.gap_bytes > 0 && !message.ends_with('…') {
            message.push('…');
        }
    }
}
