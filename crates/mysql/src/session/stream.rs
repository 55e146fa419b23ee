//! The stream layer of a session, one per direction: its bytes framed into packets (through the
//! compressed protocol's inflater when it is in force) and, when framing is lost, the hunt for a
//! packet boundary ([`hunt_check`]).

use super::*;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum StreamMode {
    /// Packet boundaries known.
    Framed,
    /// Boundaries lost: looking for one.
    Hunting,
    /// Nothing more will be decoded (TLS, zstd).
    Stopped,
}

/// The server side was lost when a command came: where the hunt looks for that command's answer.
///
/// A command means the server finished what it was sending, or will: its next byte is where the
/// answer begins, unless the client pipelines (sends a command before the answer to the one before
/// has ended), and then the next byte lies inside that earlier answer: a header read there would
/// frame the rest of the stream as one packet of garbage. So the first header after the command is
/// taken only when it carries the answer's sequence id; if not, the answer begins further on, and
/// only a packet that can begin nothing else ends the hunt (`starts_response`): chained packets
/// there are the rest of the earlier answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum AnswerDue {
    /// No command is waiting: the hunt looks for any packet boundary.
    No,
    /// At the first byte after the command: its header is taken if its sequence id is the answer's.
    Next,
    /// Further on: only the answer's first packet ends the hunt.
    Later,
}

/// One direction's byte handling.
pub(super) struct DirStream {
    pub(super) mode: StreamMode,
    pub(super) framer: Framer,
    pub(super) inflater: Option<Box<Decompressor>>,
    pub(super) window: Vec<u8>,
    pub(super) window_cap: usize,
    pub(super) replay: Vec<u8>,
    /// The packet being framed (the client's) was taken as its request before it was whole, because
    /// the server answered it already (an ERR such as 1153 for a request larger than its
    /// max_allowed_packet): when it completes, it is not a new request.
    pub(super) taken_early: bool,
    /// Whether this side (the server's) hunts for the answer to a command sent while it was lost.
    pub(super) answer_due: AnswerDue,
    /// No byte of this side has been passed over or lost yet: a hunt at this point looks at the first
    /// byte the session was given (where the capture joined the connection, a turn's start).
    pub(super) at_start: bool,
}

impl DirStream {
    pub(super) fn new(prefix_cap: usize, window_cap: usize, mode: StreamMode) -> Self {
        DirStream {
            mode,
            framer: Framer::new(prefix_cap),
            inflater: None,
            window: Vec::new(),
            window_cap,
            replay: Vec::new(),
            taken_early: false,
            answer_due: AnswerDue::No,
            at_start: true,
        }
    }

    /// Drop the hunt and restart framing at the current byte; returns bytes dropped.
    pub(super) fn resync_here(&mut self) -> u64 {
        let dropped = self.window.len() as u64 + self.framer.reset();
        self.taken_early = false;
        self.answer_due = AnswerDue::No;
        self.window.clear();
        if let Some(d) = self.inflater.as_mut() {
            d.reset();
        }
        if self.mode == StreamMode::Hunting {
            self.mode = StreamMode::Framed;
        }
        dropped
    }

    /// Drop the hunt's bytes and any partial packet, and hunt on from the current byte for the answer
    /// to the command just sent ([`DirStream::answer_due`]); returns bytes dropped.
    pub(super) fn hunt_answer_here(&mut self) -> u64 {
        let dropped = self.resync_here();
        self.mode = StreamMode::Hunting;
        self.answer_due = AnswerDue::Next;
        dropped
    }

    pub(super) fn start_hunting(&mut self) {
        if self.mode != StreamMode::Stopped {
            self.mode = StreamMode::Hunting;
            self.window.clear();
            self.framer.reset();
            self.taken_early = false;
            self.answer_due = AnswerDue::No;
            if let Some(d) = self.inflater.as_mut() {
                d.reset();
            }
        }
    }
}

/// How a direction's packets are carried, as far as the session knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Carriage {
    Plain,
    /// Inside compressed-protocol packets (CLIENT_COMPRESS).
    Compressed,
    /// Joined mid-stream: the first client command found says which.
    Unknown,
}

/// What the boundary search found at a position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Boundary {
    /// A packet starts here, carried so.
    Here(Carriage),
    NotHere,
    NeedMore,
}

impl Boundary {
    pub(super) fn from(v: Verdict, carriage: Carriage) -> Boundary {
        match v {
            Verdict::Yes => Boundary::Here(carriage),
            Verdict::No => Boundary::NotHere,
            Verdict::NeedMore => Boundary::NeedMore,
        }
    }
}

/// What the hunt knows of the session that decides what may begin a packet.
pub(super) struct HuntAsk<'a> {
    /// A replica's semi-sync ACK may come (see `Core::expects_acks`).
    pub(super) acks: bool,
    /// The answer a request waits for, when its first packet can be told.
    pub(super) answer: Option<AnswerStart<'a>>,
    /// Only that answer ends the hunt ([`AnswerDue`]).
    pub(super) answer_only: bool,
    /// The position is the first byte this side was given ([`DirStream::at_start`]).
    pub(super) stream_start: bool,
}

/// Is `w` a plausible start of the stream at a packet boundary? Client side: a
/// command; server side: a run of packets. A compressed stream must be at a
/// boundary of both the compressed packets and the packets they carry.
pub(super) fn hunt_check(
    dir: Direction,
    carriage: Carriage,
    w: &[u8],
    window_cap: usize,
    ask: &HuntAsk<'_>,
) -> Boundary {
    use Carriage::*;
    let &HuntAsk {
        acks,
        answer,
        answer_only,
        stream_start,
    } = ask;
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
        (Direction::ServerToClient, Plain) => match answer {
            Some(f) if answer_only => Boundary::from(answer_start_at(w, window_cap, f), Plain),
            _ => Boundary::from(server_answer_at(w, window_cap, answer), Plain),
        },
        (Direction::ServerToClient, Compressed) => Boundary::from(
            compressed_server_packet_at(w, window_cap, answer),
            Compressed,
        ),
        // Until the client's first command tells how packets are carried; but the first byte of a
        // server's turn the capture joined may be an ERR packet (the answer to a request whose start
        // the capture does not hold), which no compressed packet begins with. (Past that byte, a raw
        // compressed packet's inner ERR would read as one.)
        (Direction::ServerToClient, Unknown) if stream_start => {
            match err_packet_at(w, window_cap) {
                Verdict::Yes => Boundary::Here(Plain),
                Verdict::NeedMore => Boundary::NeedMore,
                Verdict::No => Boundary::NotHere,
            }
        }
        (Direction::ServerToClient, Unknown) => Boundary::NotHere,
    }
}
