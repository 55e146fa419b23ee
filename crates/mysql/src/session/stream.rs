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
        }
    }

    /// Drop the hunt and restart framing at the current byte; returns bytes dropped.
    pub(super) fn resync_here(&mut self) -> u64 {
        let dropped = self.window.len() as u64 + self.framer.reset();
        self.taken_early = false;
        self.window.clear();
        if let Some(d) = self.inflater.as_mut() {
            d.reset();
        }
        if self.mode == StreamMode::Hunting {
            self.mode = StreamMode::Framed;
        }
        dropped
    }

    pub(super) fn start_hunting(&mut self) {
        if self.mode != StreamMode::Stopped {
            self.mode = StreamMode::Hunting;
            self.window.clear();
            self.framer.reset();
            self.taken_early = false;
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

/// Is `w` a plausible start of the stream at a packet boundary? Client side: a
/// command; server side: a run of packets. A compressed stream must be at a
/// boundary of both the compressed packets and the packets they carry.
pub(super) fn hunt_check(
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
