//! The split engine: read a capture in parallel byte-range splits, follow every TCP connection in capture
//! order, and produce the same result whatever the number of splits.
//!
//! Two phases run per batch of splits:
//! 1. **Scan** (one task per split): walk the split's records, decode each, give each flow a split-local
//!    id, and append a compact [`PacketEvent`] to the list of the flow's *bucket* (a hash of its 4-tuple).
//! 2. **Track** (one task per bucket): for every split in file order, feed the bucket's events to each
//!    flow's TCP tracker and MySQL decoder (stream reassembly, session), which live across batches, and
//!    tell the bucket's [`Analysis`] instance what they saw (segments, transactions, closes, ends).
//!
//! A flow is always fed by one task, in capture order, with its whole history: a connection spanning
//! splits is tracked exactly as in one piece, so split invariance holds by construction rather than by
//! merging partial states. Between the phases, each split's starting boundary is checked against where
//! the previous split really ended ([`pcapsleuth_capture::Split::continues`]) and re-read if the resync
//! guessed wrong. Each thread takes the next bucket to track from one queue (the buckets with the most
//! events first) and tells one analysis instance of its own; the instances are merged into one as the
//! threads finish (merging is commutative, so the order does not matter); the next batch makes fresh
//! ones. Memory holds one batch of events, the open flows' state, the concluded
//! connections' facts and the aggregates, never the file: pages already read are released, and a
//! connection's decoder is freed when the connection ends.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use hashbrown::HashTable;
use pcapsleuth_capture::{
    Capture, CaptureSet, Chunk, Damage, Input, LinkType, Order, ReaderState, Record, RecordReader,
    Split, Stream, Timestamp,
};
use pcapsleuth_flow::{
    decode, decode_segment, server_side_by_port, CloseFlag, ConnectionState, ConnectionTable,
    ConnectionTracker, Decoded, Endpoint, FlowBuildHasher, FlowKey, FrameRef, IpReassembler,
    NotTcp, PackedState, RoleBasis, SegmentClass, Side, TcpFlags, TcpSegment,
};
use pcapsleuth_mysql::PieceShape;
use rayon::prelude::*;

use crate::events::{Analysis, CloseView, ConnectionView, EndView, EndedBy, SegmentView};
use crate::facts::{CaptureFacts, FileFacts, PacketCounts, Stopped};
use crate::mysql::{Home, MysqlDepth, MysqlDetection, MysqlSessionFacts, MysqlTrack, Told};
use crate::phases::{Batch, PhaseLog, Phases};
use crate::timeline::{SplitTimes, TimeTally};

/// How the engine reads a capture. What is computed from it is the [`Analysis`] the run is given.
#[derive(Debug, Clone, Default)]
pub struct EngineOptions {
    /// Worker threads (0: all cores).
    pub threads: usize,
    /// Exact number of splits (None: two per thread, more when a batch of them would read more than
    /// [`BATCH_TARGET_BYTES`]).
    pub splits: Option<usize>,
    /// Which connections are decoded as MySQL.
    pub mysql: MysqlDetection,
    /// How much of each MySQL session is decoded (`first-reset` needs only what judges closes).
    pub mysql_depth: MysqlDepth,
    /// Bytes per window of a streamed input (compressed, a pipe); 0: 32 MiB per thread. Results do not
    /// depend on it (tests make it small, so that records straddle windows).
    pub stream_window: usize,
    /// TLS secrets to decrypt MySQL sessions in TLS with (a key log, `--tls-keylog`); the secrets of the
    /// inputs' pcapng Decryption Secrets Blocks are added to them for the run. `None`, and no secrets in
    /// the inputs: TLS sessions are timed from their records, not decrypted.
    pub tls_keys: Option<std::sync::Arc<pcapsleuth_ssl::KeyLog>>,
    /// Set it (from another thread, a signal handler's thread, a sink) to stop the run early: no batch
    /// starts after it is set, the connections tracked so far are concluded as at the capture's end, and
    /// the analyses are finished on what was read. The run says so ([`CaptureFacts::stopped`]), and
    /// every figure of it covers only the frames read. `None`: the run always reads the whole capture.
    pub interrupt: Option<Arc<AtomicBool>>,
    /// Whether the run prints its phase log on stderr (a diagnostic of the engine's parallelism).
    pub phase_log: PhaseLog,
}

impl EngineOptions {
    /// Whether the run was asked to stop ([`EngineOptions::interrupt`]).
    pub fn interrupted(&self) -> bool {
        self.interrupt
            .as_ref()
            .is_some_and(|flag| flag.load(Ordering::Relaxed))
    }
}

/// Splits are at most this size, so that a batch is small with few threads: two 4 MiB splits per
/// thread, a batch of 16 MiB on two cores, whose pages and events (a 70-byte record makes a 48-byte
/// event) mostly stay in the caches between the scan that writes the events and the tracking that reads
/// them with the payloads. Larger splits hold more memory and cost CPU time in cache misses; smaller ones
/// cost `mysql` more time (DEVELOPMENT.md has the measurements).
pub const SPLIT_TARGET_BYTES: u64 = 4 << 20;

/// A batch reads about this many bytes of a mapped file (a stream's window at most this many), whatever
/// the number of threads: memory holds one batch's pages and events, so it stays flat on a machine with
/// many cores too (two 32 MiB splits per thread would make a batch of 512 MB at 8 threads, of 4 GB at
/// 64). With many threads the splits are smaller.
pub const BATCH_TARGET_BYTES: u64 = 128 << 20;

/// Splits are no smaller than this: below it, planning and proving boundaries would cost more than
/// the parallelism gives.
const SPLIT_MIN_BYTES: u64 = 1 << 20;

/// Splits in a batch with `threads` threads: two per thread, so that a thread that finishes early finds
/// another, but never so many that splits of [`SPLIT_MIN_BYTES`] would read more than
/// [`BATCH_TARGET_BYTES`].
fn batch_len(threads: usize) -> usize {
    (threads * 2).clamp(1, (BATCH_TARGET_BYTES / SPLIT_MIN_BYTES) as usize)
}

/// The size of a split when `batch_len` splits make a batch.
fn split_target(batch_len: usize) -> u64 {
    (BATCH_TARGET_BYTES / batch_len.max(1) as u64).clamp(SPLIT_MIN_BYTES, SPLIT_TARGET_BYTES)
}

/// The result of one run over a capture: what the capture was, every connection in it, and the output
/// of the analyses the run was given.
#[derive(Debug, Clone, PartialEq)]
pub struct Run<O> {
    /// What the capture was: format and files, packets by kind, time span, damage met.
    pub capture: CaptureFacts,
    /// Every TCP connection, in order of its first packet, with its roles decided from the whole
    /// capture (its own handshake, else a server that accepted a handshake elsewhere, else the ports);
    /// kept packed, each read back as a [`pcapsleuth_flow::Connection`] when asked for.
    pub connections: ConnectionTable,
    /// MySQL facts of each connection (same index as `connections`; `None` when it is not MySQL).
    pub mysql_sessions: Vec<Option<Box<MysqlSessionFacts>>>,
    /// Which connections were decoded as MySQL: with [`MysqlDetection::Off`] no close can be read in
    /// MySQL terms.
    pub mysql_detection: MysqlDetection,
    /// What the analyses found ([`Analysis::Output`]).
    pub output: O,
}

impl<O> Run<O> {
    /// The same run with its output replaced by `f(output)`.
    pub fn map<P>(self, f: impl FnOnce(O) -> P) -> Run<P> {
        Run {
            capture: self.capture,
            connections: self.connections,
            mysql_sessions: self.mysql_sessions,
            mysql_detection: self.mysql_detection,
            output: f(self.output),
        }
    }
}

/// A decoded TCP packet, kept compact between the scan and the tracking phase.
#[derive(Debug, Clone, Copy)]
struct PacketEvent {
    ts: i64,
    /// Offset of the captured payload in the split's bytes; past their end, in the datagrams the split's
    /// IP fragments made ([`Scan::reassembled`]), as if those followed the split's bytes.
    payload_at: u64,
    frame_in_split: u32,
    flow: u32,
    seq: u32,
    ack: u32,
    /// The captured payload's length (bits 0..=23: a record holds at most 16 MiB, the capture readers'
    /// bound) and the IP TTL (bits 24..=31), so that an event stays 48 bytes.
    captured_ttl: u32,
    payload_len: u32,
    wire_len: u32,
    window: u16,
    flags: u8,
    /// The sending [`Side`] (bit 7), the [`PieceShape`] of the payload when the scan tells it (bits
    /// 4..=6; see [`EngineOptions::mysql_depth`]) and, for a SYN, the length of its TCP options in 32-bit
    /// words (bits 0..=3, at most 10): three facts in the byte a `Side` alone would take, so that an event
    /// stays 48 bytes.
    side_options: u8,
}

const _: () = assert!(std::mem::size_of::<PacketEvent>() == 48);

impl PacketEvent {
    const SIDE_HI: u8 = 0x80;
    const CAPTURED_MASK: u32 = 0x00ff_ffff;

    /// `captured_ttl` of a payload of `captured` bytes sent with `ttl`.
    #[inline]
    fn captured_ttl(captured: usize, ttl: u8) -> u32 {
        // The capture readers keep no record longer than 16 MiB, so `captured` fits its bits: the mask
        // only keeps a length that did not from the TTL's.
        (captured as u32 & Self::CAPTURED_MASK) | u32::from(ttl) << 24
    }

    /// The captured payload's length.
    #[inline]
    fn payload_captured(&self) -> u32 {
        self.captured_ttl & Self::CAPTURED_MASK
    }

    /// The IP TTL (hop limit) the segment came with.
    #[inline]
    fn ttl(&self) -> u8 {
        (self.captured_ttl >> 24) as u8
    }

    /// `side_options` of a segment. Only the handshake reads options, so only a SYN's are kept. They
    /// are found again before the payload, so they are kept only where the record has them there
    /// (always, for the decoders' slices of one header).
    #[inline]
    fn side_options(side: Side, seg: &TcpSegment<'_>) -> u8 {
        let adjacent = seg.flags.syn() && seg.options.as_ptr_range().end == seg.payload.as_ptr();
        let words = if adjacent {
            (seg.options.len() / 4).min(10) as u8
        } else {
            0
        };
        words | if side == Side::Hi { Self::SIDE_HI } else { 0 }
    }

    const SHAPE_SHIFT: u8 = 4;
    const SHAPE_BITS: u8 = 0x70;

    /// Whether the scan told the payload's shape.
    #[inline]
    fn shaped(&self) -> bool {
        self.side_options & Self::SHAPE_BITS != 0
    }

    /// What the payload is to a MySQL exchange, when the scan told it (else [`PieceShape::Unknown`]).
    #[inline]
    fn piece_shape(&self) -> PieceShape {
        PieceShape::from_bits(self.side_options >> Self::SHAPE_SHIFT)
    }

    fn side(&self) -> Side {
        if self.side_options & Self::SIDE_HI != 0 {
            Side::Hi
        } else {
            Side::Lo
        }
    }

    /// The TCP options kept (a SYN's), read from where the payload is: right before it, in the split's
    /// bytes or in the datagrams reassembled from its IP fragments.
    #[inline]
    fn options<'a>(&self, scan: &'a Scan<'_>) -> &'a [u8] {
        let len = usize::from(self.side_options & 0x0f) * 4;
        if len == 0 {
            return &[];
        }
        let end = usize::try_from(self.payload_at).unwrap_or(usize::MAX);
        let from = end.saturating_sub(len);
        scan.bytes
            .get(from..end)
            .unwrap_or_else(|| scan.in_reassembled(from, end))
    }
}

/// Phase 1's result for one split.
struct Scan<'a> {
    /// The bytes the split was read from (a mapped file or a stream window): events point into them.
    bytes: &'a [u8],
    /// The input the split is of.
    input: usize,
    split: Split,
    end: ReaderState,
    frames: u64,
    counts: PacketCounts,
    first_ts: Option<Timestamp>,
    last_ts: Option<Timestamp>,
    keys: Vec<FlowKey>,
    buckets: EventLists,
    damage: Vec<Damage>,
    times: SplitTimes,
    /// The split's IP fragments, reassembled between the phases in capture order ([`Pass::reassemble`]).
    fragments: Vec<FragmentRecord>,
    /// The datagrams that fragments completed in this split, rebuilt: the payloads of their events.
    reassembled: Vec<u8>,
}

impl Scan<'_> {
    /// The bytes `[from, to)` of the datagrams reassembled from the split's IP fragments, counted from the
    /// end of the split's bytes ([`PacketEvent::payload_at`]); empty where there are none.
    #[cold]
    fn in_reassembled(&self, from: usize, to: usize) -> &[u8] {
        let base = self.bytes.len();
        from.checked_sub(base)
            .and_then(|from| self.reassembled.get(from..to.checked_sub(base)?))
            .unwrap_or(&[])
    }
}

/// A record that holds an IP fragment: where its bytes are in its split, and when it was captured.
/// Fragments after the first carry no ports, so they cannot go to a flow's bucket in the scan: they are
/// put back together in capture order between the phases, and the datagrams they make go to their
/// buckets then, at the frame of the fragment that completed each (as Wireshark shows them).
#[derive(Debug, Clone, Copy)]
struct FragmentRecord {
    ts: i64,
    data_at: u64,
    data_len: u32,
    wire_len: u32,
    frame_in_split: u32,
    link: LinkType,
}

impl FragmentRecord {
    /// Keeps the record `rec` of the split whose bytes begin at address `base`. Out of the scan's loop,
    /// which runs for every packet and meets a fragment rarely.
    #[cold]
    #[inline(never)]
    fn keep(list: &mut Vec<FragmentRecord>, rec: &Record<'_>, frame_in_split: u32, base: usize) {
        list.push(FragmentRecord {
            ts: rec.ts.0,
            data_at: (rec.data.as_ptr() as usize).wrapping_sub(base) as u64,
            data_len: rec.data.len() as u32,
            wire_len: rec.orig_len,
            frame_in_split,
            link: rec.link,
        });
    }
}

/// A split's flows, numbered in order of first packet: (split-local id, bucket) by 4-tuple.
///
/// This lookup runs for every packet. IPv4 4-tuples, nearly all traffic, are looked up as one 96-bit
/// integer (each endpoint as its [`Endpoint::v4_word`], which orders as endpoints do), so hashing and
/// comparing are a few integer operations; the [`FlowKey`] is built once per flow. Other flows use the
/// key itself.
#[derive(Default)]
struct FlowIds {
    v4: HashMap<u128, (u32, u32), FlowBuildHasher>,
    other: HashMap<FlowKey, (u32, u32), FlowBuildHasher>,
}

impl FlowIds {
    /// The flow of `seg` (registering it in `keys` if new), the side that sent it, and its bucket.
    #[inline]
    fn of(
        &mut self,
        seg: &TcpSegment<'_>,
        keys: &mut Vec<FlowKey>,
        nbuckets: usize,
    ) -> (u32, Side, u32) {
        let key_of = || FlowKey::of(seg.src_endpoint(), seg.dst_endpoint());
        let mut new_flow = |key: FlowKey| {
            keys.push(key);
            ((keys.len() - 1) as u32, key.bucket(nbuckets) as u32)
        };
        if let (Some(s), Some(d)) = (seg.src_endpoint().v4_word(), seg.dst_endpoint().v4_word()) {
            let (lo, hi, side) = if s <= d {
                (s, d, Side::Lo)
            } else {
                (d, s, Side::Hi)
            };
            let (id, bucket) = *self
                .v4
                .entry(u128::from(lo) << 48 | u128::from(hi))
                .or_insert_with(|| new_flow(key_of().0));
            return (id, side, bucket);
        }
        let (key, side) = key_of();
        let (id, bucket) = *self.other.entry(key).or_insert_with(|| new_flow(key));
        (id, side, bucket)
    }
}

/// A block of a bucket's events: lists grow by whole blocks, never by reallocation.
type Block = Vec<PacketEvent>;

/// Events per block (48 KB): small against a split's events, large against the per-block overhead.
const BLOCK_EVENTS: usize = 1024;

/// The events of one split, per bucket, in blocks; recycled across batches so that their memory is
/// allocated once. Lists of blocks rather than one growing vector per bucket: a vector that doubles
/// holds up to twice its events, and each kept the room of its largest batch (the events of a batch,
/// ~40 MB at 2 threads, took a peak heap of 122 MB); blocks hold at most one partly filled block per
/// bucket beyond the events.
#[derive(Default)]
struct EventLists {
    /// Per bucket, its events in capture order, block after block (every block but the last full).
    buckets: Vec<Vec<Block>>,
    /// Empty blocks, ready to fill.
    spare: Vec<Block>,
}

impl EventLists {
    fn new(nbuckets: usize) -> Self {
        EventLists {
            buckets: vec![Vec::new(); nbuckets],
            spare: Vec::new(),
        }
    }

    fn nbuckets(&self) -> usize {
        self.buckets.len()
    }

    /// Appends `ev` to `bucket`'s list (`bucket` < [`EventLists::nbuckets`], as flow keys give it).
    /// Inlined always: the scan calls it for every packet, and a call (the event built on the stack to be
    /// passed) cost a twentieth of the scan's instructions.
    #[inline(always)]
    fn push(&mut self, bucket: usize, ev: PacketEvent) {
        let blocks = &mut self.buckets[bucket];
        if let Some(last) = blocks.last_mut().filter(|b| b.len() < BLOCK_EVENTS) {
            last.push(ev);
            return;
        }
        let mut block = self
            .spare
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(BLOCK_EVENTS));
        block.push(ev);
        blocks.push(block);
    }

    /// The events of `bucket`, block by block.
    fn blocks(&self, bucket: usize) -> &[Block] {
        &self.buckets[bucket]
    }

    /// Merges `extra` (events in order of frame, none at a frame of the list's) into `bucket`'s list, in
    /// order of frame: one pass over the bucket's events, whatever the number of extra ones.
    fn merge_in(&mut self, bucket: usize, extra: &[PacketEvent]) {
        let old = std::mem::take(&mut self.buckets[bucket]);
        let mut extra = extra.iter().peekable();
        for mut block in old {
            for ev in block.iter() {
                while let Some(x) = extra.next_if(|x| x.frame_in_split < ev.frame_in_split) {
                    self.push(bucket, *x);
                }
                self.push(bucket, *ev);
            }
            block.clear();
            self.spare.push(block);
        }
        for x in extra {
            self.push(bucket, *x);
        }
    }

    /// Every block emptied into `spare`, for another split.
    fn clear(&mut self) {
        for blocks in self.buckets.iter_mut() {
            for mut block in blocks.drain(..) {
                block.clear();
                self.spare.push(block);
            }
        }
    }

    /// Ready for another batch, keeping no more blocks than this split filled: the room kept is one
    /// split's events, whatever the size of the file.
    fn recycled(mut self) -> Self {
        let used: usize = self.buckets.iter().map(Vec::len).sum();
        self.clear();
        self.spare.truncate(used);
        self
    }
}

/// Phase 1: reads the records of `split`, each TCP segment into an event of its flow's bucket. With
/// `shapes`, each payload's [`PieceShape`] is told beside it, read here where its bytes were just read,
/// so that following a MySQL exchange does not read them again ([`MysqlDepth::Closes`]).
fn scan<'a>(
    piece: &Piece<'a>,
    split: Split,
    mut reader: RecordReader<'a>,
    mut buckets: EventLists,
    shapes: bool,
) -> Scan<'a> {
    let base = piece.chunk.bytes.as_ptr() as usize;
    let nbuckets = buckets.nbuckets();
    buckets.clear();
    let mut ids = FlowIds::default();
    let mut keys = Vec::new();
    let mut counts = PacketCounts::default();
    let mut frames: u64 = 0;
    let mut times = SplitTimes::default();
    let mut fragments = Vec::new();
    let mut readahead = 0usize;
    while let Some(rec) = reader.next_record() {
        // The file's bytes up to SCAN_READAHEAD ahead of this record are fetched meanwhile.
        let at = (rec.data.as_ptr() as usize).wrapping_sub(base);
        let until = at.saturating_add(SCAN_READAHEAD);
        readahead = readahead.max(at & !63);
        while readahead < until {
            prefetch_line(piece.chunk.bytes, readahead);
            readahead += 64;
        }
        let frame_in_split = frames as u32;
        frames += 1;
        times.note(u64::from(frame_in_split), rec.ts.0);
        counts.wire_bytes += u64::from(rec.orig_len);
        if rec.is_truncated() {
            counts.truncated += 1;
            counts.truncated_at = counts.truncated_at.max(rec.data.len() as u32);
        }
        let seg = match decode_segment(rec.link, rec.data) {
            Ok(seg) => seg,
            Err(NotTcp::Fragment) => {
                counts.ip_fragments += 1;
                FragmentRecord::keep(&mut fragments, &rec, frame_in_split, base);
                continue;
            }
            Err(NotTcp::OtherIp) => {
                counts.other_ip += 1;
                continue;
            }
            Err(NotTcp::NotIp) => {
                counts.not_ip += 1;
                continue;
            }
            Err(NotTcp::UnsupportedLink) => {
                counts.unsupported_link += 1;
                continue;
            }
            Err(NotTcp::Undecodable) => {
                counts.undecodable += 1;
                continue;
            }
        };
        counts.tcp += 1;
        let (flow, side, bucket) = ids.of(&seg, &mut keys, nbuckets);
        // A cut payload is not told: the exchange reads what it has.
        let shape = if shapes && seg.payload.len() as u32 == seg.payload_len {
            PieceShape::of(seg.payload)
        } else {
            PieceShape::Unknown
        };
        buckets.push(
            bucket as usize,
            PacketEvent {
                ts: rec.ts.0,
                payload_at: (seg.payload.as_ptr() as usize - base) as u64,
                frame_in_split,
                flow,
                seq: seg.seq,
                ack: seg.ack,
                captured_ttl: PacketEvent::captured_ttl(seg.payload.len(), seg.ttl),
                payload_len: seg.payload_len,
                wire_len: rec.orig_len,
                window: seg.window,
                flags: seg.flags.0,
                side_options: PacketEvent::side_options(side, &seg)
                    | shape.bits() << PacketEvent::SHAPE_SHIFT,
            },
        );
    }
    counts.packets = frames;
    Scan {
        bytes: piece.chunk.bytes,
        input: piece.input,
        split,
        end: reader.state(),
        frames,
        counts,
        first_ts: times.first().map(Timestamp),
        last_ts: times.last().map(Timestamp),
        keys,
        buckets,
        damage: reader.take_damage(),
        times,
        fragments,
        reassembled: Vec::new(),
    }
}

/// The event of a TCP segment `seg` that a datagram reassembled from IP fragments carried, its bytes in
/// `reassembled` (a split's [`Scan::reassembled`], which [`PacketEvent::payload_at`] counts from
/// `split_len`, the end of the split's bytes); at the fragment that completed the datagram
/// (`frame_in_split`, `ts`), `wire_len` bytes on the wire for all its fragments. Returns the flow's key and
/// the event, whose flow id is for the caller to set.
fn reassembled_event(
    (reassembled, split_len): (&[u8], usize),
    seg: &TcpSegment<'_>,
    (frame_in_split, ts): (u32, i64),
    wire_len: u32,
    shapes: bool,
) -> (FlowKey, PacketEvent) {
    let (key, side) = FlowKey::of(seg.src_endpoint(), seg.dst_endpoint());
    let shape = if shapes && seg.payload.len() as u32 == seg.payload_len {
        PieceShape::of(seg.payload)
    } else {
        PieceShape::Unknown
    };
    let payload_at = (seg.payload.as_ptr() as usize).wrapping_sub(reassembled.as_ptr() as usize);
    let event = PacketEvent {
        ts,
        payload_at: (split_len + payload_at) as u64,
        frame_in_split,
        flow: 0,
        seq: seg.seq,
        ack: seg.ack,
        captured_ttl: PacketEvent::captured_ttl(seg.payload.len(), seg.ttl),
        payload_len: seg.payload_len,
        wire_len,
        window: seg.window,
        flags: seg.flags.0,
        side_options: PacketEvent::side_options(side, seg)
            | shape.bits() << PacketEvent::SHAPE_SHIFT,
    };
    (key, event)
}

/// One flow's state in phase 2: its current connection, followed or at rest, and the analysis' state
/// for it.
struct FlowSlot<C> {
    flow: Flow,
    /// The analysis' state for the current connection.
    state: C,
}

/// A flow's current connection, as phase 2 keeps it between its packets.
enum Flow {
    /// Followed packet by packet: its TCP tracker and MySQL decoder in full.
    Live(Box<LiveFlow>),
    /// At rest in few bytes: a connection whose MySQL decoder was told nothing yet (seen only in its
    /// handshake and ACKs, as every attempt of a SYN flood) or is concluded (the connection ended). Its
    /// next packet makes it live again, exactly as it was: memory follows the connections that are
    /// followed, not every connection the capture began.
    Resting(RestingFlow),
}

/// A connection followed packet by packet.
struct LiveFlow {
    tracker: ConnectionTracker,
    mysql: MysqlTrack,
    /// MySQL facts of the current connection, concluded as soon as it finished so that its decoder state
    /// is freed: memory follows open connections, not all connections ever seen.
    concluded: Option<Option<Box<MysqlSessionFacts>>>,
    /// The client side MySQL named, kept when its decoder is concluded.
    mysql_client: Option<Side>,
}

/// A connection at rest ([`Flow::Resting`]).
struct RestingFlow {
    tcp: PackedState,
    mysql: RestingMysql,
}

/// The MySQL decoder of a connection at rest.
enum RestingMysql {
    /// As [`MysqlTrack::new`] made it, told only these retransmission times (in order).
    Untouched(Option<Box<[i64]>>),
    /// Concluded: the session's facts (`None`: not MySQL), and the client side MySQL named.
    Concluded(Option<Box<MysqlSessionFacts>>, Option<Side>),
}

impl Flow {
    /// A new flow's first connection, from its first packet `at`.
    fn new(key: FlowKey, at: FrameRef, opts: &EngineOptions) -> Flow {
        Flow::Live(Box::new(LiveFlow {
            tracker: ConnectionTracker::new(key, at),
            mysql: MysqlTrack::new(opts.mysql, opts.mysql_depth, opts.tls_keys.as_ref()),
            concluded: None,
            mysql_client: None,
        }))
    }

    /// The flow's 4-tuple.
    fn key(&self) -> FlowKey {
        match self {
            Flow::Live(live) => live.tracker.current().key(),
            Flow::Resting(rest) => rest.tcp.key(),
        }
    }

    /// The connection followed, made live if it was at rest (in `spare`'s allocation, if there is one).
    #[inline]
    fn live(&mut self, opts: &EngineOptions, spare: &mut Option<Box<LiveFlow>>) -> &mut LiveFlow {
        if let Flow::Resting(_) = self {
            self.wake(opts, spare);
        }
        match self {
            Flow::Live(live) => live,
            Flow::Resting(_) => unreachable!("woken above"),
        }
    }

    #[inline(never)]
    fn wake(&mut self, opts: &EngineOptions, spare: &mut Option<Box<LiveFlow>>) {
        let Flow::Resting(rest) = self else { return };
        let tracker = ConnectionTracker::resume(rest.tcp.unpack());
        let (mysql, concluded, mysql_client) = match &mut rest.mysql {
            RestingMysql::Untouched(retransmissions) => {
                let mut mysql =
                    MysqlTrack::new(opts.mysql, opts.mysql_depth, opts.tls_keys.as_ref());
                for &ts in retransmissions.iter().flat_map(|r| r.iter()) {
                    mysql.retransmission(ts);
                }
                (mysql, None, None)
            }
            RestingMysql::Concluded(facts, client) => (
                MysqlTrack::new(MysqlDetection::Off, MysqlDepth::Full, None),
                Some(facts.take()),
                *client,
            ),
        };
        let live = LiveFlow {
            tracker,
            mysql,
            concluded,
            mysql_client,
        };
        *self = Flow::Live(match spare.take() {
            Some(mut b) => {
                *b = live;
                b
            }
            None => Box::new(live),
        });
    }

    /// Puts the connection at rest if nothing it holds is lost by it (see [`Flow::Resting`]), keeping
    /// its allocation in `spare`. A concluded decoder is not kept: after its conclusion it is one that
    /// decodes nothing, whose retransmission times nothing reads.
    #[inline(never)]
    fn rest(&mut self, opts: &EngineOptions, spare: &mut Option<Box<LiveFlow>>) {
        let Flow::Live(live) = self else { return };
        let mysql = match &mut live.concluded {
            Some(facts) => RestingMysql::Concluded(facts.take(), live.mysql_client),
            None => match live.mysql.untouched(opts.mysql) {
                Some(r) if r.is_empty() => RestingMysql::Untouched(None),
                Some(r) => RestingMysql::Untouched(Some(r.iter().copied().collect())),
                None => return,
            },
        };
        let tcp = live.tracker.current().packed();
        // Every test run checks the packing on every connection of every capture it reads.
        debug_assert!(tcp.unpack() == *live.tracker.current());
        let resting = Flow::Resting(RestingFlow { tcp, mysql });
        if let Flow::Live(b) = std::mem::replace(self, resting) {
            if spare.is_none() {
                *spare = Some(b);
            }
        }
    }

    /// The connection, live, for its end.
    fn into_live(self, opts: &EngineOptions) -> LiveFlow {
        let mut flow = self;
        let mut spare = None;
        flow.live(opts, &mut spare);
        match flow {
            Flow::Live(live) => *live,
            Flow::Resting(_) => unreachable!("made live above"),
        }
    }
}

/// A connection as an analysis sees it: its TCP state, and the client MySQL named (by the decoder
/// `mysql`, or kept in `concluded_client` when the decoder was concluded).
#[inline]
fn view_of<'a>(
    tcp: &'a ConnectionState,
    mysql: &MysqlTrack,
    concluded_client: Option<Side>,
) -> ConnectionView<'a> {
    ConnectionView::new(
        tcp,
        mysql.client().or(concluded_client),
        mysql.is_mysql() || concluded_client.is_some(),
    )
}

/// How many events ahead phase 2 asks for payload bytes (see [`prefetch_payload`]).
const PREFETCH_DISTANCE: usize = 8;

/// Phase 2 state of one bucket: the flows whose 4-tuple hashes to it, across the whole run.
struct Bucket<A: Analysis> {
    /// Each flow's slot number, by the [`FlowKey::stable_hash`] of its 4-tuple (the key itself is the
    /// slot's: a table of numbers takes a tenth of the memory of one of keys, for a lookup per flow and
    /// split, not per packet).
    index: HashTable<u32>,
    slots: Vec<FlowSlot<A::PerConnection>>,
    /// Connections ended by port reuse, concluded at the end with the rest.
    replaced: Vec<Concluded>,
    /// The allocation of the last flow put at rest, for the next one made live.
    spare: Option<Box<LiveFlow>>,
}

/// A connection the engine is done with, as the run's table takes it.
struct Concluded {
    tcp: PackedState,
    /// Its first packet's frame: connections are listed in this order (no two share a first packet).
    first_frame: u64,
    /// The client side its own handshake names, if it does.
    handshake_client: Option<(Side, RoleBasis)>,
    mysql: Option<Box<MysqlSessionFacts>>,
    /// It ended because a new connection began on its 4-tuple.
    replaced: bool,
}

impl Concluded {
    fn of(tcp: &ConnectionState, mysql: Option<Box<MysqlSessionFacts>>, end: EndedBy) -> Concluded {
        Concluded {
            tcp: tcp.packed(),
            first_frame: tcp.first().frame,
            handshake_client: tcp.handshake_client(),
            mysql,
            replaced: end == EndedBy::PortReuse,
        }
    }
}

/// Tells `analysis` what the MySQL glue tells of the connection `tcp`.
#[inline(always)]
fn tell<A: Analysis>(
    analysis: &mut A,
    state: &mut A::PerConnection,
    tcp: &ConnectionState,
    told: Told<'_>,
) {
    match told {
        Told::Transaction(t) => analysis.transaction(
            state,
            &ConnectionView::new(tcp, Some(t.client_side()), true),
            t,
        ),
        Told::Estimated(x) => analysis.estimated_exchange(
            state,
            &ConnectionView::new(tcp, Some(x.client_side), true),
            x,
        ),
    }
}

/// Tells `analysis` the transactions `mysql` completed on the connection `tcp`.
#[inline]
fn tell_transactions<A: Analysis>(
    mysql: &mut MysqlTrack,
    tcp: &ConnectionState,
    analysis: &mut A,
    state: &mut A::PerConnection,
) {
    mysql.drain(tcp, |told| tell(analysis, state, tcp, told));
}

/// Concludes the MySQL decoding of the connection `tcp`, telling `analysis` what its end completed.
fn conclude_mysql<A: Analysis>(
    mysql: MysqlTrack,
    tcp: &ConnectionState,
    files: &[&[u8]],
    analysis: &mut A,
    state: &mut A::PerConnection,
) -> Option<Box<MysqlSessionFacts>> {
    mysql
        .conclude(tcp, files, |told| tell(analysis, state, tcp, told))
        .map(Box::new)
}

impl<A: Analysis> Bucket<A> {
    fn new() -> Self {
        Bucket {
            index: HashTable::new(),
            slots: Vec::new(),
            replaced: Vec::new(),
            spare: None,
        }
    }

    /// Feeds this bucket's events of the batch `scans` to its flows, telling `analysis` what they saw.
    #[inline(always)]
    fn track(
        &mut self,
        b: usize,
        scans: &[Scan<'_>],
        bases: &[u64],
        files: &[&[u8]],
        opts: &EngineOptions,
        analysis: &mut A,
    ) {
        let Bucket {
            index,
            slots,
            replaced,
            spare,
        } = self;
        // Split-local flow id -> slot, resolved once per flow per split rather than hashed per packet. One
        // table for the batch, whose entries this bucket set are put back after each split: a table made
        // per split cost every bucket a pass over every flow of the split (most of them other buckets'),
        // work that grew with buckets x splits, i.e. with the square of the threads (18% more CPU for
        // `mysql` laid out for 64 threads).
        let mysql_on = opts.mysql != MysqlDetection::Off;
        let mut slot_of: Vec<u32> = Vec::new();
        let mut resolved: Vec<u32> = Vec::new();
        for (scan, &base) in scans.iter().zip(bases) {
            let bytes = scan.bytes;
            let home = Home {
                files,
                input: scan.input,
            };
            let events = scan.buckets.blocks(b);
            if events.is_empty() {
                continue;
            }
            for f in resolved.drain(..) {
                slot_of[f as usize] = u32::MAX;
            }
            if slot_of.len() < scan.keys.len() {
                slot_of.resize(scan.keys.len(), u32::MAX);
            }
            // Only MySQL decoding reads payloads.
            let prefetch = mysql_on;
            let mut blocks = events.iter().peekable();
            while let Some(block) = blocks.next() {
                let next_block: &[PacketEvent] = blocks.peek().map_or(&[], |b| b.as_slice());
                for (pos, ev) in block.iter().enumerate() {
                    if prefetch {
                        // The event PREFETCH_DISTANCE places ahead (in this block or the next), whose
                        // payload is fetched meanwhile, unless the scan told its shape: a MySQL exchange
                        // followed undecoded does not read it.
                        let a = pos + PREFETCH_DISTANCE;
                        let ahead = block.get(a).or_else(|| next_block.get(a - block.len()));
                        if let Some(ahead) = ahead.filter(|e| !e.shaped()) {
                            prefetch_payload(bytes, ahead);
                        }
                    }
                    // Borrowed, not copied per packet: only a new flow needs the key itself.
                    let key = &scan.keys[ev.flow as usize];
                    let at = FrameRef {
                        frame: base + u64::from(ev.frame_in_split) + 1,
                        ts: Timestamp(ev.ts),
                    };
                    let (slot, opened) = match slot_of[ev.flow as usize] {
                        u32::MAX => {
                            let (i, new) = slot_of_key(index, slots, key, at, opts);
                            slot_of[ev.flow as usize] = i as u32;
                            resolved.push(ev.flow);
                            (i, new)
                        }
                        i => (i as usize, false),
                    };
                    let from = usize::try_from(ev.payload_at).unwrap_or(usize::MAX);
                    let to = from.saturating_add(ev.payload_captured() as usize);
                    // Past the split's bytes: a datagram reassembled from IP fragments.
                    let payload = bytes
                        .get(from..to)
                        .unwrap_or_else(|| scan.in_reassembled(from, to));
                    let options = ev.options(scan);
                    let side = ev.side();
                    let (src, dst) = (key.endpoint(side), key.endpoint(side.other()));
                    let seg = TcpSegment {
                        src: src.ip,
                        src_port: src.port,
                        dst: dst.ip,
                        dst_port: dst.port,
                        seq: ev.seq,
                        ack: ev.ack,
                        window: ev.window,
                        flags: TcpFlags(ev.flags),
                        options,
                        payload,
                        payload_len: ev.payload_len,
                        ttl: ev.ttl(),
                    };
                    let FlowSlot {
                        flow: resting,
                        state: flow_state,
                    } = &mut slots[slot];
                    let flow = resting.live(opts, spare);
                    let fed = flow.tracker.feed(side, &seg, ev.wire_len, at);
                    let mut opened = opened;
                    if let Some(old) = fed.replaced.map(|b| *b) {
                        let track = std::mem::replace(
                            &mut flow.mysql,
                            MysqlTrack::new(opts.mysql, opts.mysql_depth, opts.tls_keys.as_ref()),
                        );
                        let mut state = std::mem::take(flow_state);
                        let view = view_of(&old, &track, flow.mysql_client);
                        let (client, is_mysql) = (view.mysql_client(), view.is_mysql());
                        let facts = match flow.concluded.take() {
                            Some(facts) => facts,
                            None => conclude_mysql(track, &old, files, analysis, &mut state),
                        };
                        analysis.connection_ended(
                            state,
                            &ConnectionView::new(&old, client, is_mysql),
                            &EndView {
                                by: EndedBy::PortReuse,
                                mysql: facts.as_deref(),
                            },
                        );
                        replaced.push(Concluded::of(&old, facts, EndedBy::PortReuse));
                        flow.mysql_client = None;
                        opened = true;
                    }
                    let retransmitted = fed.class == SegmentClass::Retransmission;
                    if retransmitted {
                        flow.mysql.retransmission(at.ts.0);
                    }
                    // Without MySQL detection the decoder is decided "not MySQL" from the start, and its
                    // `segment` does nothing: not called per packet.
                    if mysql_on && flow.concluded.is_none() {
                        flow.mysql.segment(
                            flow.tracker.current(),
                            side,
                            &seg,
                            ev.piece_shape(),
                            at,
                            home,
                        );
                    }
                    if opened {
                        let view = view_of(flow.tracker.current(), &flow.mysql, flow.mysql_client);
                        analysis.connection_opened(flow_state, &view);
                    }
                    if flow.concluded.is_none() {
                        tell_transactions(
                            &mut flow.mysql,
                            flow.tracker.current(),
                            analysis,
                            flow_state,
                        );
                    }
                    if seg.flags.fin() || seg.flags.rst() {
                        for flag in [CloseFlag::Fin, CloseFlag::Rst] {
                            let Some(close) = flow
                                .tracker
                                .current()
                                .first_close(side, flag)
                                .filter(|c| c.at == at)
                            else {
                                continue;
                            };
                            let LiveFlow {
                                tracker,
                                mysql,
                                mysql_client,
                                ..
                            } = &mut *flow;
                            let view = view_of(tracker.current(), mysql, *mysql_client);
                            let context = mysql.close_context(at.frame, side, flag);
                            analysis.close(
                                flow_state,
                                &view,
                                &CloseView {
                                    tcp: &close,
                                    mysql: context,
                                },
                            );
                        }
                    }
                    if flow.concluded.is_none() && flow.tracker.current().is_finished() {
                        let track = std::mem::replace(
                            &mut flow.mysql,
                            MysqlTrack::new(MysqlDetection::Off, MysqlDepth::Full, None),
                        );
                        let client = track.client();
                        flow.concluded = Some(conclude_mysql(
                            track,
                            flow.tracker.current(),
                            files,
                            analysis,
                            flow_state,
                        ));
                        flow.mysql_client = client;
                    }
                    let view = view_of(flow.tracker.current(), &flow.mysql, flow.mysql_client);
                    analysis.segment(
                        flow_state,
                        &view,
                        &SegmentView {
                            at,
                            side,
                            tcp: &seg,
                            wire_len: ev.wire_len,
                            class: fed.class,
                        },
                    );
                    // Only a connection that ended, or one that carried no payload or close to a
                    // decoder that is not yet sure it is MySQL, can rest: the check is two loads on
                    // the path of every packet.
                    if flow.concluded.is_some()
                        || (seg.payload_len == 0 && flow.mysql.may_be_untouched())
                    {
                        resting.rest(opts, spare);
                    }
                }
            }
        }
    }

    /// The run is over: every connection still open ends with the capture, told to `analysis`.
    fn conclude(self, files: &[&[u8]], opts: &EngineOptions, analysis: &mut A) -> Vec<Concluded> {
        let Bucket {
            index,
            slots,
            replaced,
            ..
        } = self;
        drop(index);
        let mut out = replaced;
        out.reserve(slots.len());
        for FlowSlot { flow, state } in slots {
            let slot = flow.into_live(opts);
            let view = view_of(slot.tracker.current(), &slot.mysql, slot.mysql_client);
            let (client, is_mysql) = (view.mysql_client(), view.is_mysql());
            let mut state = state;
            let tcp = slot.tracker.into_current();
            let facts = match slot.concluded {
                Some(facts) => facts,
                None => conclude_mysql(slot.mysql, &tcp, files, analysis, &mut state),
            };
            analysis.connection_ended(
                state,
                &ConnectionView::new(&tcp, client, is_mysql),
                &EndView {
                    by: EndedBy::CaptureEnd,
                    mysql: facts.as_deref(),
                },
            );
            out.push(Concluded::of(&tcp, facts, EndedBy::CaptureEnd));
        }
        out
    }
}

/// Asks the CPU to start loading the first bytes of an event's payload (up to 4 cache lines).
///
/// Phase 2 visits a bucket's events in capture order, but a batch is far larger than the caches, so every
/// payload it decodes would otherwise be a cache miss, paid in turn. Hinting a few events ahead overlaps those
/// misses with the work on the current event; on small-packet MySQL traffic this saves about a tenth of the
/// CPU time of `first-reset`.
fn prefetch_payload(bytes: &[u8], ev: &PacketEvent) {
    let from = usize::try_from(ev.payload_at).unwrap_or(usize::MAX);
    let end = from.saturating_add((ev.payload_captured() as usize).min(256));
    let mut at = from;
    while at < end {
        prefetch_line(bytes, at);
        at = at.saturating_add(64);
    }
}

/// How far ahead of the record it reads the scan asks for the file's bytes (see [`prefetch_line`]).
///
/// The scan reads the file in order, but the hardware's own prefetcher stops at every 4 KB page (and a
/// record is ~160 bytes on small-packet traffic): without the hint the scan waited on memory for most
/// lines it read. Anything from 1 to 8 KB ahead does alike (DEVELOPMENT.md has the measurements).
const SCAN_READAHEAD: usize = 2048;

/// Asks the CPU to start loading the cache line of `bytes[at]` (nothing if `at` is past the end).
#[inline(always)]
fn prefetch_line(bytes: &[u8], at: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(b) = bytes.get(at) {
        // SAFETY: a prefetch is only a hint: it never faults and has no effect on program state; the
        // address is that of a live byte of the mapping.
        unsafe {
            core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(
                (b as *const u8).cast(),
            )
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (bytes, at);
}

/// What a run reads: one capture file, or a set of files read as one capture ([`CaptureSet`]: a rotated
/// set, compressed files, a pipe).
pub enum Inputs<'a> {
    /// One capture file, mapped.
    File(&'a Capture),
    /// A set of files read as one capture, in time order.
    Set(&'a mut CaptureSet),
}

impl<'a> From<&'a Capture> for Inputs<'a> {
    fn from(cap: &'a Capture) -> Self {
        Inputs::File(cap)
    }
}

impl<'a> From<&'a mut CaptureSet> for Inputs<'a> {
    fn from(set: &'a mut CaptureSet) -> Self {
        Inputs::Set(set)
    }
}

/// Reads a capture (a file, or a set of files read as one: see [`Inputs`]), tracks every TCP connection
/// in it, and runs the analysis `analyses` makes (called once per worker and batch: see [`Analysis`]) on
/// them. [`analyze_set`] does the same for a set and tells how far it is.
///
/// ```no_run
/// use pcapsleuth_analysis::{analyze, first_reset, EngineOptions, MysqlStatistics};
/// let cap = pcapsleuth_capture::Capture::open("fixtures/err1146-storm.pcap")?;
/// let run = analyze(&cap, &EngineOptions::default(), MysqlStatistics::default);
/// println!("{} requests", run.output.requests().total());
/// # Ok::<(), pcapsleuth_capture::CaptureError>(())
/// ```
pub fn analyze<'a, A: Analysis>(
    inputs: impl Into<Inputs<'a>>,
    opts: &EngineOptions,
    analyses: impl Fn() -> A + Sync,
) -> Run<A::Output> {
    let cap = match inputs.into() {
        Inputs::File(cap) => cap,
        Inputs::Set(set) => return analyze_set(set, opts, analyses, |_, _| {}),
    };
    let phases = Phases::new(opts.phase_log);
    let (run, threads, pool) = in_pool(opts, &phases, |threads| {
        run_engine(
            &mut [Source::Mapped(cap)],
            opts,
            threads,
            &analyses,
            &|_, _| {},
            &phases,
        )
    });
    finish(run, &phases, threads, pool)
}

/// Finishes the analyses of `run` (and prints the phase log, when asked for).
fn finish<A: Analysis>(
    run: Run<A>,
    phases: &Phases,
    threads: usize,
    pool: usize,
) -> Run<A::Output> {
    let clock = phases.task();
    let capture = run.capture.clone();
    let run = run.map(|a| a.finish(&capture));
    phases.print(threads, pool, clock.seconds());
    run
}

/// Reads a set of files as one capture ([`CaptureSet`]: a rotated set, compressed files, a pipe), tracks
/// every TCP connection across them and runs the analysis `analyses` makes on them, calling
/// `progress(bytes_done, bytes_total)` after each batch (bytes as stored; the total counts what is
/// known, pipes have none).
pub fn analyze_set<A: Analysis>(
    set: &mut CaptureSet,
    opts: &EngineOptions,
    analyses: impl Fn() -> A + Sync,
    progress: impl Fn(u64, u64) + Sync,
) -> Run<A::Output> {
    let mut sources: Vec<Source<'_>> = set
        .inputs
        .iter_mut()
        .map(|i| match i {
            Input::Mapped(c) => Source::Mapped(c),
            Input::Streamed(s) => Source::Streamed(s),
        })
        .collect();
    let phases = Phases::new(opts.phase_log);
    let (mut run, threads, pool) = in_pool(opts, &phases, |threads| {
        run_engine(&mut sources, opts, threads, &analyses, &progress, &phases)
    });
    run.capture.order = set.order;
    finish(run, &phases, threads, pool)
}

/// Runs `work` in a pool of the configured number of threads (`work` is told that number, which lays
/// out the batches); returns its result, that number and the pool's. The phase log caps the pool at the
/// cores (see [`Phases`]), so that its tasks' times hold no wait for a core.
fn in_pool<T: Send>(
    opts: &EngineOptions,
    phases: &Phases,
    work: impl FnOnce(usize) -> T + Send,
) -> (T, usize, usize) {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = if opts.threads == 0 {
        cores
    } else {
        opts.threads
    };
    let pool_threads = if phases.on() {
        threads.min(cores)
    } else {
        threads
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(pool_threads)
        .build()
        .ok();
    match pool {
        Some(pool) => (pool.install(|| work(threads)), threads, pool_threads),
        None => (work(threads), threads, 1),
    }
}

/// `opts` with the TLS key logs of the inputs' pcapng Decryption Secrets Blocks added to its key log;
/// `None` when no input has one.
fn with_capture_secrets(opts: &EngineOptions, sources: &[Source<'_>]) -> Option<EngineOptions> {
    let logs: Vec<Vec<u8>> = sources
        .iter()
        .flat_map(|s| match s {
            Source::Mapped(c) => c.decryption_secrets(),
            Source::Streamed(st) => st.decryption_secrets(),
        })
        .filter(|d| d.secrets_type == pcapsleuth_capture::DecryptionSecrets::TLS_KEY_LOG)
        .map(|d| d.data)
        .collect();
    if logs.is_empty() {
        return None;
    }
    let mut keys = opts.tls_keys.as_deref().cloned().unwrap_or_default();
    for log in &logs {
        keys.add(log);
    }
    Some(EngineOptions {
        tls_keys: Some(std::sync::Arc::new(keys)),
        ..opts.clone()
    })
}

/// One input of a run.
enum Source<'a> {
    Mapped(&'a Capture),
    Streamed(&'a mut Stream),
}

/// A split to scan: which input, the bytes it lies in, and whether its start is proven already (the
/// first split of a file or of a stream window starts where reading is known to stand).
struct Piece<'a> {
    input: usize,
    chunk: Chunk<'a>,
    split: Split,
    proven: bool,
    /// The mapped file, to read again if it shrank.
    mapped: Option<&'a Capture>,
}

/// A window of a stream is this many bytes per thread (two splits per thread, as for mapped files), at
/// most [`BATCH_TARGET_BYTES`].
const STREAM_WINDOW_PER_THREAD: usize = 32 << 20;

/// Runs the batch of `pending` pieces, then queues their pages for release during the next batch.
fn flush<'a, A: Analysis>(
    run: &mut Pass<'_, A>,
    pending: &mut Vec<Piece<'a>>,
    read: &mut Vec<(&'a Capture, u64, u64)>,
) {
    if pending.is_empty() {
        return;
    }
    if run.opts.interrupted() {
        run.stopped = true;
        pending.clear();
        return;
    }
    let release = std::mem::take(read);
    run.batch(pending, &release);
    read.extend(
        pending
            .iter()
            .filter_map(|p| p.mapped.map(|cap| (cap, p.split.cut, p.split.end))),
    );
    pending.clear();
}

/// A task of a batch's scan phase.
enum ScanWork<'p, 'a> {
    /// Scan the `usize`th piece into these lists.
    Split(usize, &'p Piece<'a>, EventLists),
    /// Release pages the previous batch read.
    Release(&'p (&'p Capture, u64, u64)),
}

/// One task per thread of the pool, each taking its work from a queue the phase's threads share
/// ([`next_of`]) until it is empty, so that a thread that runs out of large tasks takes the small ones
/// left: a phase lasts until its last task ends.
fn every_thread() -> rayon::iter::MaxLen<rayon::range::Iter<usize>> {
    (0..rayon::current_num_threads())
        .into_par_iter()
        .with_max_len(1)
}

/// The next item of a queue that the threads of a phase share (each takes the next when it is free).
fn next_of<T>(queue: &Mutex<std::vec::IntoIter<T>>) -> Option<T> {
    queue
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .next()
}

/// The state of one pass over a list of inputs: everything that lives across batches.
struct Pass<'o, A: Analysis> {
    opts: &'o EngineOptions,
    /// The bytes of each input read mapped (empty for a stream): where MySQL exchanges passed over lie.
    mapped: Vec<&'o [u8]>,
    batch_len: usize,
    buckets: Vec<Bucket<A>>,
    /// Makes the analysis instances.
    analyses: &'o (dyn Fn() -> A + Sync),
    /// The buckets' instances of the batches done, merged.
    analysis: A,
    counts: PacketCounts,
    first_ts: Option<Timestamp>,
    last_ts: Option<Timestamp>,
    damage: Vec<Damage>,
    times: TimeTally,
    frames: u64,
    files: Vec<FileFacts>,
    /// Where reading stands: the state the next split must start in.
    expected: Option<ReaderState>,
    pool: Vec<EventLists>,
    nbuckets: usize,
    /// The phase log (a developer's diagnostic; inert unless asked for).
    phases: &'o Phases,
    /// IP fragments of datagrams not yet whole, across splits, batches and files.
    fragments: IpReassembler,
    /// Whether a batch was left unread because the run was interrupted.
    stopped: bool,
}

impl<A: Analysis> Pass<'_, A> {
    /// Puts the IP fragments of the batch's splits back together, in capture order (split after split,
    /// and with the fragments of earlier batches held in [`Pass::fragments`]), and adds each TCP segment a
    /// datagram made to its flow's bucket in the split of the fragment that completed it, at that
    /// fragment's frame. Runs between the phases, once the splits' boundaries are proven, so that every
    /// split count meets the same fragments in the same order. Apart, never inlined: most captures hold
    /// no fragment, and the batch's own code is the hot path's.
    #[inline(never)]
    fn reassemble(&mut self, scans: &mut [Scan<'_>], bases: &[u64], shapes: bool) {
        for (sc, &base) in scans.iter_mut().zip(bases) {
            let mut made: Vec<(usize, PacketEvent)> = Vec::new();
            for fr in std::mem::take(&mut sc.fragments) {
                let at = FrameRef {
                    frame: base + u64::from(fr.frame_in_split) + 1,
                    ts: Timestamp(fr.ts),
                };
                let Some(data) = usize::try_from(fr.data_at)
                    .ok()
                    .and_then(|from| sc.bytes.get(from..from.checked_add(fr.data_len as usize)?))
                else {
                    continue;
                };
                let Decoded::Fragment(f) = decode(fr.link, data) else {
                    continue;
                };
                let start = sc.reassembled.len();
                let Some(datagram) = self.fragments.add(&f, at, fr.wire_len, &mut sc.reassembled)
                else {
                    continue;
                };
                let wire_len = u32::try_from(datagram.wire_len).unwrap_or(u32::MAX);
                // A tunnel reassembled may carry fragments of its own; they are put back together in
                // turn, at the same frame, as deep as the decoder follows tunnels.
                for _ in 0..4 {
                    match decode_segment(LinkType::RawIp, &sc.reassembled[start..]) {
                        Ok(seg) => {
                            let when = (fr.frame_in_split, fr.ts);
                            let (key, mut ev) = reassembled_event(
                                (&sc.reassembled, sc.bytes.len()),
                                &seg,
                                when,
                                wire_len,
                                shapes,
                            );
                            // A flow seen in the split already gets a second id here, which tracking
                            // resolves to the same flow.
                            sc.keys.push(key);
                            ev.flow = (sc.keys.len() - 1) as u32;
                            made.push((key.bucket(self.nbuckets), ev));
                            break;
                        }
                        Err(NotTcp::Fragment) => {
                            // The fragment's bytes are taken out of the buffer the datagram it makes is
                            // written to.
                            let packet = sc.reassembled.split_off(start);
                            let Decoded::Fragment(inner) = decode(LinkType::RawIp, &packet) else {
                                break;
                            };
                            if self
                                .fragments
                                .add(&inner, at, fr.wire_len, &mut sc.reassembled)
                                .is_none()
                            {
                                break;
                            }
                        }
                        Err(_) => {
                            sc.reassembled.truncate(start);
                            break;
                        }
                    }
                }
            }
            if made.is_empty() {
                continue;
            }
            // Stable: a bucket's events stay in order of frame.
            made.sort_by_key(|(bucket, _)| *bucket);
            for run in made.chunk_by(|a, b| a.0 == b.0) {
                let events: Vec<PacketEvent> = run.iter().map(|(_, ev)| *ev).collect();
                sc.buckets.merge_in(run[0].0, &events);
            }
        }
    }

    /// Scans `pieces` in parallel (releasing `release` meanwhile), proves every boundary, and tracks the
    /// events. Returns the state reading ended in.
    fn batch(&mut self, pieces: &[Piece<'_>], release: &[(&Capture, u64, u64)]) -> ReaderState {
        let nbuckets = self.nbuckets;
        let phases = self.phases;
        // Payload shapes are told only where MySQL exchanges are followed undecoded.
        let shapes =
            self.opts.mysql_depth == MysqlDepth::Closes && self.opts.mysql != MysqlDetection::Off;
        let scan_clock = phases.start();
        let lists: Vec<EventLists> = pieces
            .iter()
            .map(|_| self.pool.pop().unwrap_or_else(|| EventLists::new(nbuckets)))
            .collect();
        let (releases, scan_tasks) = (phases.tasks(), phases.tasks());
        // One queue for the phase: each split followed by the release of one of the previous batch's
        // (split by split: one thread dropping a whole batch's page-table entries was the longest task
        // of a batch's scan once splits are small, with many cores). A thread takes the next task when
        // it is free, so a small release comes last, where a thread that ran out of splits would
        // otherwise wait for the other's last one; and the previous batch's pages go as this one's are
        // read, so that memory holds about one batch of pages. (Run beside the scans, the releases made
        // one thread start its splits late: the phase kept the cores 87% busy; after all the splits,
        // they kept two batches' pages at once, 16-64 MB more.)
        let mut releases_left = release.iter().map(ScanWork::Release);
        let mut work: Vec<ScanWork<'_, '_>> = Vec::with_capacity(pieces.len() + release.len());
        for (i, (p, lists)) in pieces.iter().zip(lists).enumerate() {
            work.push(ScanWork::Split(i, p, lists));
            work.extend(releases_left.next());
        }
        work.extend(releases_left);
        let queue = Mutex::new(work.into_iter());
        let mut scanned: Vec<(usize, Scan<'_>)> = every_thread()
            .flat_map_iter(|_| {
                let mut done = Vec::new();
                while let Some(w) = next_of(&queue) {
                    match w {
                        ScanWork::Split(i, p, lists) => done.push((
                            i,
                            scan_tasks.time(|| {
                                if let Some(cap) = p.mapped {
                                    cap.populate(p.split.cut, p.split.end);
                                }
                                scan(p, p.split.clone(), p.chunk.reader(&p.split), lists, shapes)
                            }),
                        )),
                        ScanWork::Release((cap, from, to)) => {
                            releases.time(|| cap.release(*from, *to));
                        }
                    }
                }
                done
            })
            .collect();
        scanned.sort_unstable_by_key(|(i, _)| *i);
        let mut scans: Vec<Scan<'_>> = scanned.into_iter().map(|(_, sc)| sc).collect();
        let scan_wall = scan_clock.seconds();
        let serial_clock = phases.task();
        // A mapped file that shrank while this batch was scanned (logrotate's copytruncate) was read as
        // zeros past its new end: read again up to the end, which readers now stop at.
        for (i, piece) in pieces.iter().enumerate() {
            let Some(cap) = piece.mapped else { continue };
            let first_of_cap = pieces[..i].iter().all(|p| p.input != piece.input);
            if !first_of_cap {
                continue;
            }
            if let Some(shrank) = cap.recheck_size() {
                for (p, sc) in pieces.iter().zip(scans.iter_mut()) {
                    if p.input == piece.input && sc.end.offset > shrank.offset {
                        let chunk = cap.chunk();
                        let lists = std::mem::take(&mut sc.buckets);
                        *sc = scan(p, p.split.clone(), chunk.reader(&p.split), lists, shapes);
                        sc.bytes = chunk.bytes;
                    }
                }
                self.damage.push(shrank.in_input(piece.input));
            }
        }
        // Prove each boundary: a split is kept only if the previous one ended exactly where it began.
        let mut bases = Vec::with_capacity(scans.len());
        for (piece, sc) in pieces.iter().zip(scans.iter_mut()) {
            match &self.expected {
                Some(expected) if !piece.proven && !sc.split.continues(expected) => {
                    let split = sc.split.clone();
                    let chunk = match piece.mapped {
                        Some(cap) => cap.chunk(),
                        None => piece.chunk,
                    };
                    let reader = chunk.reader_after(expected.clone(), split.end);
                    let lists = std::mem::take(&mut sc.buckets);
                    *sc = scan(piece, split, reader, lists, shapes);
                    sc.bytes = chunk.bytes;
                }
                _ => {}
            }
            self.expected = Some(sc.end.clone());
            self.times.append(&sc.times, self.frames);
            bases.push(self.frames);
            let file = &mut self.files[piece.input];
            if file.frames == 0 {
                file.first_frame = self.frames + 1;
            }
            file.frames += sc.frames;
            file.first_ts = file.first_ts.or(sc.first_ts);
            file.last_ts = sc.last_ts.or(file.last_ts);
            self.frames += sc.frames;
            self.counts.add(&sc.counts);
            self.first_ts = self.first_ts.or(sc.first_ts);
            self.last_ts = sc.last_ts.or(self.last_ts);
            self.damage
                .extend(sc.damage.iter().map(|d| d.clone().in_input(piece.input)));
        }
        if scans.iter().any(|sc| !sc.fragments.is_empty()) {
            self.reassemble(&mut scans, &bases, shapes);
        }
        let opts = self.opts;
        let files = &self.mapped[..];
        let serial = serial_clock.seconds();
        let track_clock = phases.start();
        // Each thread takes the next bucket from one queue, the buckets with the most events first (a
        // bucket's tracking takes about as long as its events), so that the small ones fill in at the
        // end: a phase lasts until its last task ends, and rayon's halving of the list gave one thread
        // the large buckets and the other the small ones (`mysql` on the bench capture kept the two
        // cores 91% busy, 94% with the queue, and ran 7% faster). Each thread tracks into one analysis
        // instance, made as it starts, merged as a tree as the threads finish. An instance per bucket
        // made 8 per thread and batch, each filling its maps and caches anew and merged: at 64
        // threads' layout 16,368 instances on the bench capture, 22% more work for `report` than at 2
        // threads'. The contract allows it: instances are per worker, and merging is commutative and
        // associative.
        let analyses = self.analyses;
        let (track_tasks, merges) = (phases.tasks(), phases.tasks());
        let mut order: Vec<(usize, usize, &mut Bucket<A>)> = self
            .buckets
            .iter_mut()
            .enumerate()
            .map(|(b, bucket)| {
                let events = scans
                    .iter()
                    .map(|sc| sc.buckets.blocks(b).iter().map(Vec::len).sum::<usize>())
                    .sum();
                (events, b, bucket)
            })
            .collect();
        order.sort_unstable_by(|x, y| y.0.cmp(&x.0).then(x.1.cmp(&y.1)));
        let queue = Mutex::new(order.into_iter());
        let batch = every_thread()
            .map(|_| {
                let mut analysis = analyses();
                while let Some((_, b, bucket)) = next_of(&queue) {
                    track_tasks
                        .time(|| bucket.track(b, &scans, &bases, files, opts, &mut analysis));
                }
                analysis
            })
            .reduce_with(|mut a, b| {
                merges.time(|| a.merge(b));
                a
            });
        self.pool
            .extend(scans.into_iter().map(|sc| sc.buckets.recycled()));
        let track_wall = track_clock.seconds();
        let fold_clock = phases.start();
        let last_merge = phases.task();
        if let Some(batch) = batch {
            self.analysis.merge(batch);
        }
        let last_merge = last_merge.seconds();
        phases.batch(Batch {
            scan_wall,
            scan_tasks: scan_tasks.into_times(),
            releases: releases.into_times(),
            serial,
            track_wall,
            track_tasks: track_tasks.into_times(),
            fold_wall: fold_clock.seconds(),
            fold_tasks: merges.into_times(),
            last_merge,
        });
        self.expected
            .clone()
            .unwrap_or_else(|| pieces[0].split.start_state.clone())
    }
}

/// Reads `sources` as one capture; the result holds the analysis instances merged, not yet finished.
fn run_engine<A: Analysis>(
    sources: &mut [Source<'_>],
    opts: &EngineOptions,
    threads: usize,
    analyses: &(dyn Fn() -> A + Sync),
    progress: &(dyn Fn(u64, u64) + Sync),
    phases: &Phases,
) -> Run<A> {
    let with_secrets = with_capture_secrets(opts, sources);
    let opts = with_secrets.as_ref().unwrap_or(opts);
    let nbuckets = (threads * 8).max(16);
    let mapped: Vec<&[u8]> = sources
        .iter()
        .map(|s| match s {
            Source::Mapped(c) => {
                let cap: &Capture = c;
                cap.chunk().bytes
            }
            Source::Streamed(_) => &[][..],
        })
        .collect();
    let mut run = Pass {
        opts,
        mapped,
        batch_len: batch_len(threads),
        buckets: (0..nbuckets).map(|_| Bucket::new()).collect(),
        analyses,
        analysis: analyses(),
        counts: PacketCounts::default(),
        first_ts: None,
        last_ts: None,
        damage: Vec::new(),
        times: TimeTally::default(),
        frames: 0,
        files: sources
            .iter()
            .map(|s| match s {
                Source::Mapped(c) => FileFacts::new(c.path(), c.format().describe(), c.len()),
                Source::Streamed(st) => {
                    FileFacts::new(st.path(), st.describe(), st.stored_len().unwrap_or(0))
                }
            })
            .collect(),
        expected: None,
        pool: Vec::new(),
        nbuckets,
        phases,
        fragments: IpReassembler::default(),
        stopped: false,
    };
    let release = read_sources(&mut run, sources, threads, progress);
    conclude_run(run, release, sources)
}

/// Reads every batch of `sources` (until the run is interrupted), telling `progress` after each. Returns
/// the pages of the last batch, not yet released.
fn read_sources<'x, A: Analysis>(
    run: &mut Pass<'_, A>,
    sources: &mut [Source<'x>],
    threads: usize,
    progress: &(dyn Fn(u64, u64) + Sync),
) -> Vec<(&'x Capture, u64, u64)> {
    let (opts, phases) = (run.opts, run.phases);
    let total: u64 = run.files.iter().map(|f| f.bytes).sum();
    let total_mapped: u64 = sources
        .iter()
        .map(|s| match s {
            Source::Mapped(c) => c.len(),
            Source::Streamed(_) => 0,
        })
        .sum();
    let mut done_before = 0u64;
    // Splits of consecutive mapped files are batched together, so that a set of small files is read in
    // parallel across files as well as within them.
    let mut pending: Vec<Piece<'_>> = Vec::new();
    // Pages of the batch tracked last, released while the next batch is scanned: dropping page-table
    // entries is kernel work that would otherwise hold up every thread between batches.
    let mut read: Vec<(&'x Capture, u64, u64)> = Vec::new();
    for (input, source) in sources.iter_mut().enumerate() {
        match source {
            Source::Mapped(cap) => {
                let cap: &'x Capture = cap;
                let auto = (run.batch_len as u64)
                    .max(cap.len().div_ceil(split_target(run.batch_len)))
                    as usize;
                let n = match opts.splits {
                    // An exact count is spread over the mapped files by size (at least one each).
                    Some(n) => {
                        (u128::from(cap.len()) * n as u128 / u128::from(total_mapped.max(1))).max(1)
                            as usize
                    }
                    None => auto,
                };
                // Each split is planned just before its batch: planning touches the pages at its cut,
                // which its batch then reads and releases (planning every cut at once would map the
                // pages at every cut of a large file, many times a page with the page cache's large
                // folios).
                let n = cap.split_count(n.max(1));
                for i in 0..n {
                    if run.stopped {
                        break;
                    }
                    let planning = phases.task();
                    let split = cap.plan_split(n, i);
                    phases.planned(planning.seconds());
                    let split_end = split.end;
                    pending.push(Piece {
                        input,
                        chunk: cap.chunk(),
                        proven: i == 0,
                        split,
                        mapped: Some(cap),
                    });
                    if pending.len() == run.batch_len {
                        flush(run, &mut pending, &mut read);
                        progress(done_before + split_end, total);
                    }
                }
                flush(run, &mut pending, &mut read);
                done_before += cap.len();
                progress(done_before, total);
            }
            Source::Streamed(stream) => {
                flush(run, &mut pending, &mut read);
                let window_len = match opts.stream_window {
                    0 => {
                        (STREAM_WINDOW_PER_THREAD * threads.max(1)).min(BATCH_TARGET_BYTES as usize)
                    }
                    n => n,
                };
                let n = opts.splits.unwrap_or(run.batch_len).max(1);
                stream.interrupt_with(opts.interrupt.clone());
                let read_all = stream.read_windows(window_len, |w| {
                    if run.opts.interrupted() {
                        return Err(Stopped {
                            frames_read: run.frames,
                        });
                    }
                    let pieces: Vec<Piece<'_>> = w
                        .chunk
                        .plan_splits(&w.start, n)
                        .into_iter()
                        .enumerate()
                        .map(|(i, split)| Piece {
                            input,
                            chunk: w.chunk,
                            proven: i == 0,
                            split,
                            mapped: None,
                        })
                        .collect();
                    let end = run.batch(&pieces, &std::mem::take(&mut read));
                    run.damage
                        .extend(w.damage.iter().map(|d| d.clone().in_input(input)));
                    progress(done_before + w.stored_read, total);
                    Ok(end)
                });
                run.stopped |= read_all.is_err() || stream.interrupted();
                done_before += stream.stored_len().unwrap_or(0);
            }
        }
        if run.stopped {
            break;
        }
    }
    read
}

/// Concludes the connections still open (as at the capture's end) and gathers the run: the capture's
/// facts, its connections, the analysis instances merged.
fn conclude_run<A: Analysis>(
    run: Pass<'_, A>,
    release: Vec<(&Capture, u64, u64)>,
    sources: &[Source<'_>],
) -> Run<A> {
    let (opts, phases) = (run.opts, run.phases);
    let end_clock = phases.start();
    let end_tasks = phases.tasks();
    let stopped = run.stopped.then_some(Stopped {
        frames_read: run.frames,
    });
    let Pass {
        buckets,
        mapped,
        analyses,
        mut analysis,
        counts,
        first_ts,
        last_ts,
        mut damage,
        times,
        files,
        fragments,
        ..
    } = run;
    let ((), concluded) = rayon::join(
        || {
            release
                .par_iter()
                .for_each(|(cap, from, to)| cap.release(*from, *to));
        },
        || {
            // Instances per piece of the work rayon shares out, merged as a tree.
            buckets
                .into_par_iter()
                .fold(
                    || (analyses(), Vec::new()),
                    |(mut analysis, mut states), b| {
                        states.extend(end_tasks.time(|| b.conclude(&mapped, opts, &mut analysis)));
                        (analysis, states)
                    },
                )
                .reduce_with(|(mut a, mut states), (b, more)| {
                    a.merge(b);
                    states.extend(more);
                    (a, states)
                })
        },
    );
    let mut states = Vec::new();
    if let Some((concluded_analysis, s)) = concluded {
        analysis.merge(concluded_analysis);
        states = s;
    }
    for (input, source) in sources.iter().enumerate() {
        if let Source::Mapped(cap) = source {
            damage.extend(cap.growth().map(|d| d.in_input(input)));
        }
    }
    // Garbage across a stream's windows is one damage, said once with its total.
    let damage = Damage::coalesced(damage);
    let (connections, mut mysql_sessions) = conclude(states);
    phases.end(end_clock, end_tasks.into_times());
    // Only now is it known which timestamps belong to the capture's body: analyses keep only it in their
    // time series when they finish.
    let timeline = times.finish();
    // Datagrams still waiting for fragments at the end: given up at the timeout if the capture went on
    // past it, else cut off by the capture's end.
    let ip_fragments = fragments.finish(timeline.body_last.or(last_ts));
    // The waits of requests open at the end run to the body's last packet, not to a timestamp outside it.
    if let Some(last) = timeline.body_last {
        for u in mysql_sessions
            .iter_mut()
            .flatten()
            .flat_map(|m| m.unanswered.iter_mut())
        {
            u.capture_ended(last.0);
        }
    }
    let format = match &files[..] {
        [one] => one.format.clone(),
        many => format!("{} files", many.len()),
    };
    Run {
        capture: CaptureFacts {
            format,
            file_bytes: files.iter().map(|f| f.bytes).sum(),
            counts,
            first_ts,
            last_ts,
            timeline,
            ip_fragments,
            damage,
            order: Order::Single,
            files,
            stopped,
        },
        connections,
        mysql_sessions,
        mysql_detection: opts.mysql,
        output: analysis,
    }
}

/// Concludes every connection into the run's table, in order of first packet, deciding roles: from its
/// own handshake; else from an endpoint that accepted a handshake elsewhere in the capture; else from
/// ports.
fn conclude(mut states: Vec<Concluded>) -> (ConnectionTable, Vec<Option<Box<MysqlSessionFacts>>>) {
    let listeners: std::collections::HashSet<Endpoint> = states
        .iter()
        .filter_map(|c| {
            c.handshake_client
                .map(|(client, _)| c.tcp.key().endpoint(client.other()))
        })
        .collect();
    // Every packet belongs to one connection, so first frames are distinct and the order is total.
    states.sort_unstable_by_key(|c| c.first_frame);
    debug_assert!(states
        .windows(2)
        .all(|w| w[0].first_frame < w[1].first_frame));
    let mut table = ConnectionTable::with_capacity(states.len());
    let mut sessions = Vec::with_capacity(states.len());
    for c in states.iter().filter(|c| c.replaced) {
        table.note_reused(c.tcp.key());
    }
    for c in states {
        let key = c.tcp.key();
        let client = c.handshake_client.or_else(|| {
            let lo_listens = listeners.contains(&key.lo);
            let hi_listens = listeners.contains(&key.hi);
            match (lo_listens, hi_listens) {
                (true, false) => Some((Side::Hi, RoleBasis::KnownListener)),
                (false, true) => Some((Side::Lo, RoleBasis::KnownListener)),
                _ => Some((server_side_by_port(&key).other(), RoleBasis::Port)),
            }
        });
        table.push(c.tcp, client);
        sessions.push(c.mysql);
    }
    (table, sessions)
}

/// The slot of the flow `key` (made for it, from its first packet `at`, if it has none), and whether it
/// was made now.
#[inline(never)]
fn slot_of_key<C: Default>(
    index: &mut HashTable<u32>,
    slots: &mut Vec<FlowSlot<C>>,
    key: &FlowKey,
    at: FrameRef,
    opts: &EngineOptions,
) -> (usize, bool) {
    let hash = key.stable_hash();
    if let Some(&i) = index.find(hash, |&i| slots[i as usize].flow.key() == *key) {
        return (i as usize, false);
    }
    let i = slots.len();
    slots.push(FlowSlot {
        flow: Flow::new(*key, at, opts),
        state: C::default(),
    });
    // Fewer flows than packets, whose frame numbers are u64: never near u32::MAX in memory.
    index.insert_unique(hash, i as u32, |&j| {
        slots[j as usize].flow.key().stable_hash()
    });
    (i, true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::net::IpAddr;

    fn endpoint() -> impl Strategy<Value = Endpoint> {
        let ip = prop_oneof![
            // Few distinct values, so that flows repeat and addresses tie.
            (0u8..3).prop_map(|b| IpAddr::from([10, 0, 0, b])),
            any::<[u8; 4]>().prop_map(IpAddr::from),
            (0u8..2)
                .prop_map(|b| IpAddr::from([0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, b])),
        ];
        (ip, prop_oneof![3305u16..3308, any::<u16>()]).prop_map(|(ip, port)| Endpoint { ip, port })
    }

    /// Whatever the thread count (up to `-j`'s most on a 256-core machine), a batch of a large file reads
    /// at most BATCH_TARGET_BYTES: memory holds one batch, so it does not grow with the cores.
    #[test]
    fn a_batch_reads_a_bounded_number_of_bytes_whatever_the_threads() {
        for threads in 1..=1024 {
            let n = batch_len(threads);
            assert!(n >= 1 && n <= threads * 2, "{threads} threads: {n} splits");
            let split = split_target(n);
            assert!((SPLIT_MIN_BYTES..=SPLIT_TARGET_BYTES).contains(&split));
            assert!(
                n as u64 * split <= BATCH_TARGET_BYTES,
                "{threads} threads: {n} splits of {split} bytes"
            );
        }
        // Few threads keep the large splits (and the batches) they had.
        assert_eq!((batch_len(2), split_target(batch_len(2))), (4, 4 << 20));
    }

    proptest! {
        /// The packed IPv4 lookup numbers flows, and names sides and buckets, exactly as the flow keys do.
        #[test]
        fn flow_ids_agree_with_flow_keys(packets in proptest::collection::vec((endpoint(), endpoint()), 1..40)) {
            let mut ids = FlowIds::default();
            let mut keys = Vec::new();
            let mut first_id: Vec<FlowKey> = Vec::new();
            for (src, dst) in packets {
                let seg = TcpSegment {
                    src: src.ip,
                    src_port: src.port,
                    dst: dst.ip,
                    dst_port: dst.port,
                    seq: 0,
                    ack: 0,
                    window: 0,
                    flags: TcpFlags(0),
                    options: &[],
                    payload: &[],
                    payload_len: 0,
                    ttl: 64,
                };
                let (id, side, bucket) = ids.of(&seg, &mut keys, 16);
                let (key, want_side) = FlowKey::of(src, dst);
                if !first_id.contains(&key) {
                    first_id.push(key);
                }
                prop_assert_eq!(side, want_side);
                prop_assert_eq!(keys[id as usize], key);
                prop_assert_eq!(first_id.iter().position(|k| *k == key), Some(id as usize));
                prop_assert_eq!(bucket as usize, key.bucket(16));
            }
        }
    }
}
