//! Recognising MySQL on a TCP connection from its first turns, whatever segments carried them.
//!
//! A *turn* is what one side sends before the other side sends payload. MySQL is recognised from the
//! start of a turn (a greeting, a login, a command, the start of the answer to a command, semi-sync
//! ACKs) or from a binlog event anywhere in one. TCP may cut a turn anywhere (one byte of a greeting in
//! a segment of its own is legal, and resegmenting middleboxes and capture offloads do it), so a turn's
//! bytes are held, segment by segment, until the checks can answer: each answers only once more bytes
//! could not change its answer (a MySQL packet's header says how long the packet is), or when no more
//! bytes of the turn will come. The same stream cut differently is therefore recognised the same way, at
//! the same byte, and the bytes held are replayed to the session as the segments carried them.

use std::collections::VecDeque;

use pcapsleuth_flow::{server_side_by_port, ConnectionState, FrameRef, Side, TcpSegment};
use pcapsleuth_mysql::{
    binlog_event_verdict, client_command_verdict, error_packet_verdict, greeting_verdict,
    login_verdict, packet_run_verdict, response_verdict, semi_sync_acks_verdict, Extent, StartMode,
    Verdict,
};

/// How a connection was recognised as MySQL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RecognisedBy {
    /// The server's greeting (Protocol::HandshakeV10), or the ERR a server sends instead of one.
    Greeting,
    /// A request (or a login) and the answer that followed it, on a connection joined mid-stream.
    RequestResponseShape,
    /// A whole command that was never answered: cut off by a close, or still waiting when the capture ended.
    UnansweredRequest,
    /// The user named the server's port (`--mysql-port`).
    Port,
    /// Binlog event packets or semi-sync ACKs: a replication stream joined after its dump.
    BinlogEvents,
    /// A run of packets in sequence (a resultset's rows) on a connection joined in the middle of an
    /// answer.
    PacketRun,
    /// An ERR packet (marker, code, SQLSTATE, message) at the start of the server's turn, on a
    /// connection joined mid-way: the answer to a request the capture does not hold the start of.
    ErrorPacket,
}

/// How many turns a connection may show before it is judged not to be MySQL. Turns, not segments: a
/// capture that begins mid-resultset shows hundreds of server segments before the client's next
/// command, the first chance to recognise the connection.
const DETECTION_TURNS: u32 = 8;

/// How many payload bytes a connection may show before it is judged not to be MySQL, however few its
/// turns: a one-way stream is not looked at forever. Bytes, not segments, so that how TCP cut the
/// stream does not move the limit; 6 MiB hold a resultset of 4,096 segments at a 1,460-byte MSS.
const DETECTION_BYTES: u64 = 6 << 20;

/// Bytes of a turn held for its checks and for the replay: a request longer than this is replayed with
/// a gap the decoder absorbs inside its payload (its statement text is capped well below this).
const HELD_BYTES: usize = 1 << 16;

/// Segments of a turn held apart. Past this (a turn of segments a few bytes long) each new one is held
/// apart and the one before it joins the segment before that, replayed at that one's frame: memory
/// stays bounded whatever the segments, and the turn's latest segment keeps its own frame.
const HELD_SEGMENTS: usize = 1024;

/// How a TLS record carrying a handshake (a ClientHello) begins: content type 22, major version 3.
const TLS_HANDSHAKE: &[u8] = &[0x16, 0x03];

/// One segment of a held turn, as it came.
#[derive(Debug, Clone, Copy)]
struct HeldSegment {
    /// Offset of its first byte in the turn.
    offset: u64,
    /// How many of its first bytes are held (fewer than `wire_len` when the snap length cut it, or
    /// past what a turn holds).
    kept: u32,
    wire_len: u32,
    at: FrameRef,
}

/// A turn's bytes from some offset on, and the segments that carried them.
#[derive(Debug)]
struct Held {
    /// Sequence number of the turn's first byte.
    seq: u32,
    /// Offset in the turn of `bytes[0]`.
    base: u64,
    /// The bytes held, contiguous from `base`.
    bytes: Vec<u8>,
    /// A byte was not held (cut by the snap length, or past [`HELD_BYTES`]): later bytes are not either,
    /// and the checks judge those before it.
    stopped: bool,
    segments: VecDeque<HeldSegment>,
    /// Bytes of the turn on the wire so far.
    wire_len: u64,
}

impl Held {
    fn new(seq: u32) -> Held {
        Held {
            seq,
            base: 0,
            bytes: Vec::new(),
            stopped: false,
            segments: VecDeque::new(),
            wire_len: 0,
        }
    }

    /// The next segment of the turn: `payload` captured of `wire_len`, held while the bytes held stay
    /// within `cap`.
    fn push(&mut self, payload: &[u8], wire_len: u32, at: FrameRef, cap: usize) {
        let room = if self.stopped {
            0
        } else {
            cap.saturating_sub(self.bytes.len())
        };
        let kept = payload.len().min(room).min(wire_len as usize);
        self.bytes
            .extend_from_slice(payload.get(..kept).unwrap_or(&[]));
        if kept < wire_len as usize {
            self.stopped = true;
        }
        let offset = self.wire_len;
        self.wire_len += u64::from(wire_len);
        if self.segments.len() >= HELD_SEGMENTS {
            // The two latest segments become one, at the earlier's frame, and the new one keeps its own:
            // the turn's last byte is always replayed at the frame that carried it (a request's end,
            // whose time its upload ends at, however finely TCP cut it).
            if let (Some(newest), Some(before)) =
                (self.segments.pop_back(), self.segments.back_mut())
            {
                // Held bytes stay a prefix of each segment: once one was not held, none later is.
                before.kept = before.kept.saturating_add(newest.kept);
                before.wire_len = before.wire_len.saturating_add(newest.wire_len);
            }
        }
        self.segments.push_back(HeldSegment {
            offset,
            kept: kept as u32,
            wire_len,
            at,
        });
    }

    /// The bytes held from turn offset `from` on.
    fn bytes_from(&self, from: u64) -> &[u8] {
        usize::try_from(from.saturating_sub(self.base))
            .ok()
            .and_then(|i| self.bytes.get(i..))
            .unwrap_or(&[])
    }

    /// Forgets what comes before turn offset `to` (no further than the bytes held).
    fn forget_before(&mut self, to: u64) {
        let n = (to.saturating_sub(self.base) as usize).min(self.bytes.len());
        self.bytes.drain(..n);
        self.base += n as u64;
        while self
            .segments
            .front()
            .is_some_and(|s| s.offset + u64::from(s.wire_len) <= self.base)
        {
            self.segments.pop_front();
        }
    }

    /// Each segment from turn offset `from` on: its first byte's sequence number, the bytes held of
    /// it, its length on the wire, and where it was seen.
    fn replay(&self, from: u64, mut f: impl FnMut(u32, &[u8], u32, FrameRef)) {
        let held_end = self.base + self.bytes.len() as u64;
        for s in &self.segments {
            let start = from.max(s.offset).max(self.base);
            let end = s.offset + u64::from(s.wire_len);
            if start >= end {
                continue;
            }
            let kept_end = (s.offset + u64::from(s.kept)).min(held_end);
            let bytes = if start < kept_end {
                self.bytes
                    .get((start - self.base) as usize..(kept_end - self.base) as usize)
                    .unwrap_or(&[])
            } else {
                &[]
            };
            let seq = self.seq.wrapping_add(start as u32);
            f(seq, bytes, (end - start) as u32, s.at);
        }
    }
}

/// What a turn's start was judged to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Start {
    /// Not known yet.
    Pending,
    /// A command or a login, which the other side's answer may prove to be MySQL.
    Request {
        mode: StartMode,
        /// Where the command or login its header announces ends in the turn.
        announced: u64,
    },
    /// Nothing a turn's start tells: only binlog events are looked for, anywhere in it.
    Searching,
}

/// What the checks on a turn's start said.
enum Judged {
    /// Its bytes so far cannot tell.
    Wait,
    NotMysql,
    Recognised {
        client: Side,
        by: RecognisedBy,
        mode: StartMode,
        /// The turn offset the session starts at.
        from: u64,
    },
    /// It starts like the answer to the candidate's request.
    Answered,
    /// It does not: the candidate was no MySQL request.
    NotAnswered,
    Start(Start),
}

/// The turn at hand, or an earlier one that began with a request.
#[derive(Debug)]
struct Turn {
    side: Side,
    /// Which turn of the connection it is (1: the connection's first payload).
    number: u32,
    held: Held,
    start: Start,
    /// Where the search for a binlog event goes on (an offset in the turn).
    search: u64,
    /// No more bytes of it will be judged: the other side spoke, a close, bytes out of sequence, the
    /// detection's budget.
    ended: bool,
}

impl Turn {
    fn extent(&self) -> Extent {
        if self.ended || self.held.stopped {
            Extent::Final
        } else {
            Extent::Growing
        }
    }

    /// The sequence number the next segment of the turn starts at.
    fn next_seq(&self) -> u32 {
        self.held.seq.wrapping_add(self.held.wire_len as u32)
    }

    /// The whole request its start announced went on the wire.
    fn request_complete(&self) -> bool {
        matches!(self.start, Start::Request { announced, .. } if self.held.wire_len >= announced)
    }
}

/// Bytes held while the connection was being recognised: the session is fed them, segment by segment,
/// before the segment at hand (whose bytes may be among them: the session's reassembler drops the copy).
#[derive(Debug, Default)]
pub(crate) struct Replay {
    turns: Vec<(Side, Held, u64)>,
}

impl Replay {
    /// Each segment held, in order: its side, first byte's sequence number, bytes held, length on the
    /// wire, and where it was seen.
    pub(crate) fn for_each(&self, mut f: impl FnMut(Side, u32, &[u8], u32, FrameRef)) {
        for (side, held, from) in &self.turns {
            held.replay(*from, |seq, bytes, wire_len, at| {
                f(*side, seq, bytes, wire_len, at)
            });
        }
    }
}

/// A connection recognised as MySQL: who the client is, from what, how its session starts, and the
/// bytes to feed it first.
#[derive(Debug)]
pub(crate) struct Recognised {
    pub(crate) client: Side,
    pub(crate) by: RecognisedBy,
    pub(crate) mode: StartMode,
    pub(crate) replay: Replay,
}

/// What the connection's turns so far say.
#[derive(Debug)]
pub(crate) enum Recognition {
    /// Not known yet.
    Undecided,
    NotMysql,
    Mysql(Recognised),
}

/// The recognition of one connection, fed its segments in capture order until it answers.
#[derive(Debug)]
pub(crate) struct Recogniser {
    /// The server port the user named (`--mysql-port`).
    port: Option<u16>,
    /// Payload bytes judged so far.
    bytes: u64,
    turns: u32,
    last_side: Option<Side>,
    turn: Option<Turn>,
    /// An earlier turn that began with a request, waiting for the other side's answer.
    candidate: Option<Turn>,
}

impl Recogniser {
    pub(crate) fn new(port: Option<u16>) -> Recogniser {
        Recogniser {
            port,
            bytes: 0,
            turns: 0,
            last_side: None,
            turn: None,
            candidate: None,
        }
    }

    /// Whether it has judged nothing yet: as `new` made it.
    pub(crate) fn is_fresh(&self) -> bool {
        self.bytes == 0
            && self.turns == 0
            && self.last_side.is_none()
            && self.turn.is_none()
            && self.candidate.is_none()
    }

    /// Judges one more segment of the connection.
    pub(crate) fn segment(
        &mut self,
        conn: &ConnectionState,
        side: Side,
        seg: &TcpSegment<'_>,
        at: FrameRef,
    ) -> Recognition {
        let close = seg.flags.fin() || seg.flags.rst();
        if seg.payload_len == 0 {
            if !close {
                return Recognition::Undecided;
            }
            // A close: nothing more of the turn at hand is coming, and a whole request that looked
            // like MySQL is now answered by the close, if by nothing else.
            return match self.end_turn(conn, None) {
                Recognition::Undecided => self.unanswered_request(),
                r => r,
            };
        }
        let seq = seg.seq.wrapping_add(u32::from(seg.flags.syn()));
        let follows = self
            .turn
            .as_ref()
            .is_some_and(|t| t.side == side && t.next_seq() == seq);
        if !follows {
            // The other side speaks, or this side's bytes do not follow on (a retransmission, a
            // hole): what was held of the turn is all it will hold.
            if let r @ (Recognition::Mysql(_) | Recognition::NotMysql) =
                self.end_turn(conn, Some(side))
            {
                return r;
            }
            if self.last_side != Some(side) {
                self.turns += 1;
                self.last_side = Some(side);
            }
            self.turn = Some(Turn {
                side,
                number: self.turns,
                held: Held::new(seq),
                start: Start::Pending,
                search: 0,
                ended: false,
            });
        }
        let Some(turn) = self.turn.as_mut() else {
            return Recognition::Undecided;
        };
        // Only what fits the detection's budget is judged, wherever the segments end.
        let room = DETECTION_BYTES - self.bytes;
        let wire_len = u64::from(seg.payload_len).min(room) as u32;
        self.bytes += u64::from(wire_len);
        let payload = seg.payload.get(..wire_len as usize).unwrap_or(seg.payload);
        // A turn that only searches for binlog events holds what the search has not passed.
        let cap = match turn.start {
            Start::Searching => usize::MAX,
            _ => HELD_BYTES,
        };
        turn.held.push(payload, wire_len, at, cap);
        if close || self.bytes >= DETECTION_BYTES {
            turn.ended = true;
        }
        match self.judge(conn) {
            Recognition::Undecided if self.bytes >= DETECTION_BYTES => Recognition::NotMysql,
            r => r,
        }
    }

    /// The capture ended: the turn at hand is judged on what it holds, and a whole request that
    /// looked like MySQL was still waiting for its answer.
    pub(crate) fn end(&mut self, conn: &ConnectionState) -> Recognition {
        match self.end_turn(conn, None) {
            Recognition::Undecided => self.unanswered_request(),
            r => r,
        }
    }

    /// No more bytes of the turn at hand will come (`next` is the side that speaks next, if any):
    /// judges what it holds, and keeps it as the candidate when it began with a request that the
    /// other side may answer.
    fn end_turn(&mut self, conn: &ConnectionState, next: Option<Side>) -> Recognition {
        let Some(turn) = self.turn.as_mut() else {
            return Recognition::Undecided;
        };
        turn.ended = true;
        let r = self.judge(conn);
        if let Some(turn) = self.turn.take() {
            if matches!(turn.start, Start::Request { .. }) && next != Some(turn.side) {
                self.candidate = Some(turn);
            }
        }
        r
    }

    /// The candidate is a whole request that the capture shows unanswered (a close, or its end).
    fn unanswered_request(&mut self) -> Recognition {
        if !self.candidate.as_ref().is_some_and(Turn::request_complete) {
            return Recognition::Undecided;
        }
        self.recognised_by_candidate(RecognisedBy::UnansweredRequest)
    }

    /// The candidate's side is the client of a MySQL connection joined mid-stream: its request is the
    /// session's first bytes, then the turn at hand.
    fn recognised_by_candidate(&mut self, by: RecognisedBy) -> Recognition {
        let Some(c) = self.candidate.take() else {
            return Recognition::Undecided;
        };
        let Start::Request { mode, .. } = c.start else {
            return Recognition::Undecided;
        };
        let client = c.side;
        let mut replay = Replay::default();
        replay.turns.push((c.side, c.held, 0));
        if let Some(t) = self.turn.take() {
            replay.turns.push((t.side, t.held, 0));
        }
        Recognition::Mysql(Recognised {
            client,
            by,
            mode,
            replay,
        })
    }

    /// The turn at hand tells MySQL: the session starts with its bytes from turn offset `from` on.
    fn recognised(
        &mut self,
        client: Side,
        by: RecognisedBy,
        mode: StartMode,
        from: u64,
    ) -> Recognition {
        let mut replay = Replay::default();
        if let Some(t) = self.turn.take() {
            replay.turns.push((t.side, t.held, from));
        }
        Recognition::Mysql(Recognised {
            client,
            by,
            mode,
            replay,
        })
    }

    /// Runs the checks on the turn at hand, as far as its bytes allow.
    fn judge(&mut self, conn: &ConnectionState) -> Recognition {
        if self
            .turn
            .as_ref()
            .is_some_and(|t| t.start == Start::Pending)
        {
            match self.judge_start(conn) {
                Judged::Wait => return Recognition::Undecided,
                Judged::NotMysql => return Recognition::NotMysql,
                Judged::Recognised {
                    client,
                    by,
                    mode,
                    from,
                } => return self.recognised(client, by, mode, from),
                Judged::Answered => {
                    return self.recognised_by_candidate(RecognisedBy::RequestResponseShape)
                }
                Judged::NotAnswered => {
                    self.candidate = None;
                    self.set_start(Start::Searching);
                }
                Judged::Start(start) => self.set_start(start),
            }
        }
        let Some(t) = self.turn.as_ref() else {
            return Recognition::Undecided;
        };
        match t.start {
            Start::Pending => Recognition::Undecided,
            Start::Request {
                mode: StartMode::Login,
                announced,
            } if announced == 4 + 32 => {
                // An SSLRequest (a login of 32 bytes), then the client's TLS handshake: a login going
                // on encrypted, answered in TLS, never with a MySQL packet.
                let after = t.held.bytes_from(announced);
                let tls = match (after.get(..TLS_HANDSHAKE.len()), t.extent()) {
                    (Some(b), _) => b == TLS_HANDSHAKE,
                    (None, Extent::Final) => false,
                    (None, Extent::Growing) => return Recognition::Undecided,
                };
                if !tls {
                    return Recognition::Undecided;
                }
                self.candidate = self.turn.take();
                self.recognised_by_candidate(RecognisedBy::RequestResponseShape)
            }
            Start::Request { .. } => Recognition::Undecided,
            Start::Searching if t.number > DETECTION_TURNS => Recognition::NotMysql,
            Start::Searching => self.search_binlog_events(conn),
        }
    }

    fn set_start(&mut self, start: Start) {
        if let Some(t) = self.turn.as_mut() {
            t.start = start;
        }
    }

    /// What the start of the turn at hand is, in the order the checks are asked: on the connection's
    /// first turn a greeting (or, with `--mysql-port`, how the session starts), then the answer to
    /// the other side's request, or else a request (a command or a login), or else semi-sync ACKs.
    fn judge_start(&self, conn: &ConnectionState) -> Judged {
        let Some(t) = self.turn.as_ref() else {
            return Judged::Wait;
        };
        let extent = t.extent();
        let bytes = t.held.bytes_from(0);
        if t.number == 1 {
            let key = conn.key();
            let port_server = self.port.and_then(|p| {
                if key.lo.port == p {
                    Some(Side::Lo)
                } else if key.hi.port == p {
                    Some(Side::Hi)
                } else {
                    None
                }
            });
            if let Some(server) = port_server {
                // The user said which side is the server: only how the session starts is to know.
                let mode = if conn.saw_syn() {
                    StartMode::Handshake
                } else if t.side == server {
                    match greeting_verdict(bytes, extent) {
                        Verdict::NeedMore => return Judged::Wait,
                        Verdict::Yes => StartMode::Handshake,
                        Verdict::No => StartMode::MidStream,
                    }
                } else {
                    match login_verdict(bytes, extent) {
                        Verdict::NeedMore => return Judged::Wait,
                        Verdict::Yes => StartMode::Login,
                        Verdict::No => StartMode::MidStream,
                    }
                };
                return Judged::Recognised {
                    client: server.other(),
                    by: RecognisedBy::Port,
                    mode,
                    from: 0,
                };
            }
            let greeting = greeting_verdict(bytes, extent);
            if let Some((client, _)) = conn.handshake_client().filter(|_| conn.saw_syn()) {
                // MySQL servers speak first: a connection seen from its handshake is MySQL when the
                // server's first bytes are a greeting, and only then.
                return match greeting {
                    _ if t.side == client => Judged::NotMysql,
                    Verdict::NeedMore => Judged::Wait,
                    Verdict::Yes => Judged::Recognised {
                        client,
                        by: RecognisedBy::Greeting,
                        mode: StartMode::Handshake,
                        from: 0,
                    },
                    Verdict::No => Judged::NotMysql,
                };
            }
            // The connection's first bytes are a greeting: its connection phase is in the capture even
            // when the SYN is not (the capture began between the TCP handshake and the greeting, as a
            // rotated file or a capture started under load does).
            match greeting {
                Verdict::NeedMore => return Judged::Wait,
                Verdict::Yes => {
                    return Judged::Recognised {
                        client: t.side.other(),
                        by: RecognisedBy::Greeting,
                        mode: StartMode::Handshake,
                        from: 0,
                    }
                }
                Verdict::No => {}
            }
        }
        if let Some(c) = self.candidate.as_ref().filter(|c| c.side != t.side) {
            let answer_seq = match c.start {
                // A login (sequence id 1) is answered with sequence id 2.
                Start::Request {
                    mode: StartMode::Login,
                    ..
                } => 2,
                _ => 1,
            };
            return match response_verdict(bytes, answer_seq, extent) {
                Verdict::NeedMore => Judged::Wait,
                Verdict::Yes => Judged::Answered,
                Verdict::No => Judged::NotAnswered,
            };
        }
        if t.number > DETECTION_TURNS {
            return Judged::NotMysql;
        }
        match error_packet_verdict(bytes, extent) {
            Verdict::NeedMore => return Judged::Wait,
            Verdict::Yes => {
                return Judged::Recognised {
                    client: t.side.other(),
                    by: RecognisedBy::ErrorPacket,
                    mode: StartMode::MidStream,
                    from: 0,
                }
            }
            Verdict::No => {}
        }
        let request = match client_command_verdict(bytes, extent) {
            Verdict::NeedMore => return Judged::Wait,
            Verdict::Yes => Some(StartMode::MidStream),
            Verdict::No => match login_verdict(bytes, extent) {
                Verdict::NeedMore => return Judged::Wait,
                Verdict::Yes => Some(StartMode::Login),
                Verdict::No => None,
            },
        };
        if let Some(mode) = request {
            // Its header says where it ends.
            let len = bytes
                .iter()
                .take(3)
                .rev()
                .fold(0u64, |n, &b| (n << 8) | u64::from(b));
            return Judged::Start(Start::Request {
                mode,
                announced: 4 + len,
            });
        }
        match semi_sync_acks_verdict(bytes, extent) {
            Verdict::NeedMore => Judged::Wait,
            // The side sending ACKs is the replica, the client.
            Verdict::Yes => Judged::Recognised {
                client: t.side,
                by: RecognisedBy::BinlogEvents,
                mode: StartMode::MidStream,
                from: 0,
            },
            Verdict::No => Judged::Start(Start::Searching),
        }
    }

    /// Looks for a binlog event, or a run of packets in sequence ([`packet_run_verdict`]: a resultset's
    /// rows), at each offset of the turn at hand not looked at yet, as far as its bytes allow: a
    /// replication stream joined after its dump, or a connection joined in the middle of a long answer,
    /// shows nothing else. The side sending events is the primary, the server; the side sending a run
    /// of packets is the server too, unless the handshake or the ports say it is the client (a LOAD DATA
    /// LOCAL INFILE's file).
    fn search_binlog_events(&mut self, conn: &ConnectionState) -> Recognition {
        let Some(t) = self.turn.as_mut() else {
            return Recognition::Undecided;
        };
        let extent = t.extent();
        loop {
            let w = t.held.bytes_from(t.search);
            if w.is_empty() {
                break;
            }
            let run = || packet_run_verdict(w, extent);
            match (binlog_event_verdict(w, extent), run) {
                (Verdict::Yes, _) => {
                    let (client, from) = (t.side.other(), t.search);
                    return self.recognised(
                        client,
                        RecognisedBy::BinlogEvents,
                        StartMode::MidStream,
                        from,
                    );
                }
                (Verdict::No, run) => match run() {
                    Verdict::Yes => {
                        let server = match conn.handshake_client() {
                            Some((client, _)) => client.other(),
                            None => server_side_by_port(&conn.key()),
                        };
                        let (sender, from) = (t.side, t.search);
                        let client = if sender == server {
                            sender.other()
                        } else {
                            sender
                        };
                        return self.recognised(
                            client,
                            RecognisedBy::PacketRun,
                            StartMode::MidAnswer,
                            from,
                        );
                    }
                    Verdict::No => t.search += 1,
                    Verdict::NeedMore => break,
                },
                (Verdict::NeedMore, _) => break,
            }
        }
        let search = t.search;
        t.held.forget_before(search);
        Recognition::Undecided
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pcapsleuth_capture::Timestamp;
    use pcapsleuth_flow::{ConnectionTracker, Endpoint, FlowKey, TcpFlags};

    const CLIENT: &str = "10.0.0.2:40000";
    const SERVER: &str = "10.0.0.1:3306";

    fn endpoint(s: &str) -> Endpoint {
        let (ip, port) = s.split_once(':').unwrap();
        Endpoint {
            ip: ip.parse().unwrap(),
            port: port.parse().unwrap(),
        }
    }

    /// A connection the capture joined mid-stream (no SYN), fed segments from either end.
    struct Joined {
        tracker: ConnectionTracker,
        recogniser: Recogniser,
        seq: [u32; 2],
        frame: u64,
    }

    impl Joined {
        fn new() -> Joined {
            let (key, _) = FlowKey::of(endpoint(CLIENT), endpoint(SERVER));
            let at = FrameRef {
                frame: 1,
                ts: Timestamp(0),
            };
            Joined {
                tracker: ConnectionTracker::new(key, at),
                recogniser: Recogniser::new(None),
                seq: [1_000, 5_000],
                frame: 0,
            }
        }

        /// One segment from `from` (an endpoint) with `payload`.
        fn send(&mut self, from: &str, payload: &[u8]) -> Recognition {
            let (src, dst) = if from == CLIENT {
                (endpoint(CLIENT), endpoint(SERVER))
            } else {
                (endpoint(SERVER), endpoint(CLIENT))
            };
            let (_, side) = FlowKey::of(src, dst);
            self.frame += 1;
            let at = FrameRef {
                frame: self.frame,
                ts: Timestamp(self.frame as i64 * 1_000),
            };
            let seg = TcpSegment {
                src: src.ip,
                src_port: src.port,
                dst: dst.ip,
                dst_port: dst.port,
                seq: self.seq[side.index()],
                ack: self.seq[side.other().index()],
                window: 1000,
                flags: TcpFlags(TcpFlags::ACK),
                options: &[],
                payload,
                payload_len: payload.len() as u32,
                ttl: 64,
            };
            self.seq[side.index()] = self.seq[side.index()].wrapping_add(payload.len() as u32);
            self.tracker.feed(side, &seg, payload.len() as u32 + 54, at);
            self.recogniser
                .segment(self.tracker.current(), side, &seg, at)
        }

        /// The bytes the turn at hand holds, and its segments.
        fn held(&self) -> (usize, usize) {
            self.recogniser
                .turn
                .as_ref()
                .map_or((0, 0), |t| (t.held.bytes.len(), t.held.segments.len()))
        }
    }

    fn packet(seq: u8, payload: &[u8]) -> Vec<u8> {
        let mut v = (payload.len() as u32).to_le_bytes()[..3].to_vec();
        v.push(seq);
        v.extend_from_slice(payload);
        v
    }

    /// The replay's bytes, by side, and its segments.
    fn replayed(r: &Recognised) -> (Vec<u8>, usize) {
        let (mut bytes, mut segments) = (Vec::new(), 0);
        r.replay.for_each(|_, _, b, _, _| {
            bytes.extend_from_slice(b);
            segments += 1;
        });
        (bytes, segments)
    }

    /// A greeting one byte per segment is a greeting: judged once its last byte came, and replayed to
    /// the session byte by byte, at the frames that carried them.
    #[test]
    fn a_greeting_cut_into_single_bytes_is_recognised_when_whole() {
        let mut greeting = vec![10];
        greeting.extend_from_slice(b"5.7.44\0\x01\0\0\0abcdefgh\0\xff\xf7\x21\x02\0");
        greeting.extend_from_slice(&[0; 13]);
        let greeting = packet(0, &greeting);
        let mut c = Joined::new();
        for (i, b) in greeting.iter().enumerate() {
            match c.send(SERVER, std::slice::from_ref(b)) {
                Recognition::Undecided if i + 1 < greeting.len() => {}
                Recognition::Mysql(r) if i + 1 == greeting.len() => {
                    assert_eq!(r.by, RecognisedBy::Greeting);
                    assert_eq!(r.mode, StartMode::Handshake);
                    assert_eq!(replayed(&r), (greeting.clone(), greeting.len()));
                }
                other => panic!("byte {i}: {other:?}"),
            }
        }
    }

    /// A long command in tiny segments holds at most [`HELD_BYTES`] in at most [`HELD_SEGMENTS`]
    /// segments, and the replay still covers its whole length on the wire.
    #[test]
    fn a_long_request_in_tiny_segments_is_held_within_bounds() {
        let mut query = b"\x03insert into t values ".to_vec();
        query.resize(100_000, b'x');
        let request = packet(0, &query);
        let mut c = Joined::new();
        for chunk in request.chunks(3) {
            assert!(matches!(c.send(CLIENT, chunk), Recognition::Undecided));
            let (bytes, segments) = c.held();
            assert!(bytes <= HELD_BYTES && segments <= HELD_SEGMENTS);
        }
        let Recognition::Mysql(r) = c.send(SERVER, &packet(1, b"\x00\x01\x00\x02\x00\x00\x00"))
        else {
            panic!("the OK did not answer the request");
        };
        assert_eq!(r.by, RecognisedBy::RequestResponseShape);
        let mut wire = [0u64; 2];
        r.replay
            .for_each(|side, _, _, len, _| wire[side.index()] += u64::from(len));
        let client = FlowKey::of(endpoint(CLIENT), endpoint(SERVER)).1;
        assert_eq!(wire[client.index()], request.len() as u64);
        assert_eq!(wire[client.other().index()], 11);
    }

    /// A one-way stream that is not MySQL is given up at the byte budget, wherever its segments end,
    /// having held no more than the binlog-event search needs.
    #[test]
    fn a_one_way_stream_is_given_up_at_the_byte_budget() {
        let segment = vec![b'A'; 1_448];
        let mut c = Joined::new();
        let mut sent = 0u64;
        loop {
            let r = c.send(SERVER, &segment);
            sent += segment.len() as u64;
            assert!(c.held().0 <= 2 * segment.len(), "{:?}", c.held());
            match r {
                Recognition::Undecided => assert!(sent < DETECTION_BYTES),
                Recognition::NotMysql => break,
                Recognition::Mysql(m) => panic!("{:?}", m.by),
            }
        }
        assert!(sent >= DETECTION_BYTES && sent < DETECTION_BYTES + segment.len() as u64);
    }
}
