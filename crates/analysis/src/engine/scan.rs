//! Phase 1, the scan: one split's records decoded into packet events, each appended to its flow's bucket.

use std::collections::HashMap;

use pcapsleuth_capture::{
    Capture, Chunk, Damage, LinkType, ReaderState, Record, RecordReader, Split, Timestamp,
};
use pcapsleuth_flow::{
    decode_segment, FlowBuildHasher, FlowKey, NotTcp, Side, TcpFlags, TcpSegment,
};

use crate::facts::PacketCounts;
use crate::mysql::PayloadHint;
use crate::timeline::SplitTimes;

use super::event::PacketEvent;
use super::prefetch::prefetch_line;

/// How far ahead of the record it reads the scan asks for the file's bytes (see [`prefetch_line`](super::prefetch::prefetch_line)).
///
/// The scan reads the file in order, but the hardware's own prefetcher stops at every 4 KB page (and a
/// record is ~160 bytes on small-packet traffic): without the hint the scan waited on memory for most
/// lines it read. Anything from 1 to 8 KB ahead does alike (DEVELOPMENT.md has the measurements).
pub(super) const SCAN_READAHEAD: usize = 2048;

/// A split to scan: which input, the bytes it lies in, and whether its start is proven already (the
/// first split of a file or of a stream window starts where reading is known to stand).
pub(super) struct Piece<'a> {
    pub(super) input: usize,
    pub(super) chunk: Chunk<'a>,
    pub(super) split: Split,
    pub(super) proven: bool,
    /// The mapped file, to read again if it shrank.
    pub(super) mapped: Option<&'a Capture>,
}

/// Phase 1's result for one split.
pub(super) struct Scan<'a> {
    /// The bytes the split was read from (a mapped file or a stream window): events point into them.
    pub(super) bytes: &'a [u8],
    /// The input the split is of.
    pub(super) input: usize,
    pub(super) split: Split,
    pub(super) end: ReaderState,
    pub(super) frames: u64,
    pub(super) counts: PacketCounts,
    pub(super) first_ts: Option<Timestamp>,
    pub(super) last_ts: Option<Timestamp>,
    pub(super) keys: Vec<FlowKey>,
    pub(super) buckets: EventLists,
    pub(super) damage: Vec<Damage>,
    pub(super) times: SplitTimes,
    /// The split's IP fragments, reassembled between the phases in capture order ([`Pass::reassemble`]).
    pub(super) fragments: Vec<FragmentRecord>,
    /// The datagrams that fragments completed in this split, rebuilt: the payloads of their events.
    pub(super) reassembled: Vec<u8>,
}

impl Scan<'_> {
    /// The bytes `[from, to)` of the datagrams reassembled from the split's IP fragments, counted from the
    /// end of the split's bytes ([`PacketEvent::payload_at`]); empty where there are none.
    #[cold]
    pub(super) fn in_reassembled(&self, from: usize, to: usize) -> &[u8] {
        let base = self.bytes.len();
        from.checked_sub(base)
            .and_then(|from| self.reassembled.get(from..to.checked_sub(base)?))
            .unwrap_or(&[])
    }

    /// The TCP segment `ev` was made from, its payload read where the scan left it: in the
    /// split's bytes or, past them, in a datagram reassembled from IP fragments.
    #[inline(always)]
    pub(super) fn segment_of(&self, ev: &PacketEvent, key: &FlowKey) -> TcpSegment<'_> {
        let from = usize::try_from(ev.payload_at).unwrap_or(usize::MAX);
        let to = from.saturating_add(ev.payload_captured() as usize);
        let payload = self
            .bytes
            .get(from..to)
            .unwrap_or_else(|| self.in_reassembled(from, to));
        let side = ev.side();
        let (src, dst) = (key.endpoint(side), key.endpoint(side.other()));
        TcpSegment {
            src: src.ip,
            src_port: src.port,
            dst: dst.ip,
            dst_port: dst.port,
            seq: ev.seq,
            ack: ev.ack,
            window: ev.window,
            flags: TcpFlags(ev.flags),
            options: self.options_of(ev),
            payload,
            payload_len: ev.payload_len,
            ttl: ev.ttl(),
        }
    }

    /// The TCP options kept, read from where the payload is: right before it, in the split's
    /// bytes or in the datagrams reassembled from its IP fragments.
    #[inline]
    fn options_of(&self, ev: &PacketEvent) -> &[u8] {
        let len = ev.options_len();
        if len == 0 {
            return &[];
        }
        let end = usize::try_from(ev.payload_at).unwrap_or(usize::MAX);
        let from = end.saturating_sub(len);
        self.bytes
            .get(from..end)
            .unwrap_or_else(|| self.in_reassembled(from, end))
    }
}

/// A record that holds an IP fragment: where its bytes are in its split, and when it was captured.
/// Fragments after the first carry no ports, so they cannot go to a flow's bucket in the scan: they are
/// put back together in capture order between the phases, and the datagrams they make go to their
/// buckets then, at the frame of the fragment that completed each (as Wireshark shows them).
#[derive(Debug, Clone, Copy)]
pub(super) struct FragmentRecord {
    pub(super) ts: i64,
    pub(super) data_at: u64,
    pub(super) data_len: u32,
    pub(super) wire_len: u32,
    pub(super) frame_in_split: u32,
    pub(super) link: LinkType,
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
pub(super) struct FlowIds {
    v4: HashMap<u128, (u32, u32), FlowBuildHasher>,
    other: HashMap<FlowKey, (u32, u32), FlowBuildHasher>,
}

impl FlowIds {
    /// The flow of `seg` (registering it in `keys` if new), the side that sent it, and its bucket.
    #[inline]
    pub(super) fn of(
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
pub(super) struct EventLists {
    /// Per bucket, its events in capture order, block after block (every block but the last full).
    buckets: Vec<Vec<Block>>,
    /// Empty blocks, ready to fill.
    spare: Vec<Block>,
}

impl EventLists {
    pub(super) fn new(nbuckets: usize) -> Self {
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
    pub(super) fn blocks(&self, bucket: usize) -> &[Block] {
        &self.buckets[bucket]
    }

    /// Merges `extra` (events in order of frame, none at a frame of the list's) into `bucket`'s list, in
    /// order of frame: one pass over the bucket's events, whatever the number of extra ones.
    pub(super) fn merge_in(&mut self, bucket: usize, extra: &[PacketEvent]) {
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
    pub(super) fn recycled(mut self) -> Self {
        let used: usize = self.buckets.iter().map(Vec::len).sum();
        self.clear();
        self.spare.truncate(used);
        self
    }
}

/// Phase 1: reads the records of `split`, each TCP segment into an event of its flow's bucket. With
/// `hints`, each payload's [`PayloadHint`] for the MySQL glue is told beside it, read here where its bytes were just read,
/// so that following a MySQL exchange does not read them again ([`MysqlDepth::Closes`]).
pub(super) fn scan<'a>(
    piece: &Piece<'a>,
    split: Split,
    mut reader: RecordReader<'a>,
    mut buckets: EventLists,
    hints: bool,
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
        let hint = hint_of(hints, &seg);
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
                side_options: PacketEvent::side_options(side, &seg) | PacketEvent::hint_bits(hint),
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
pub(super) fn reassembled_event(
    (reassembled, split_len): (&[u8], usize),
    seg: &TcpSegment<'_>,
    (frame_in_split, ts): (u32, i64),
    wire_len: u32,
    hints: bool,
) -> (FlowKey, PacketEvent) {
    let (key, side) = FlowKey::of(seg.src_endpoint(), seg.dst_endpoint());
    let hint = hint_of(hints, seg);
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
        side_options: PacketEvent::side_options(side, seg) | PacketEvent::hint_bits(hint),
    };
    (key, event)
}

/// The MySQL glue's hint for the payload of `seg` when `hints` are asked for and the payload was captured
/// whole, else none.
#[inline(always)]
fn hint_of(hints: bool, seg: &TcpSegment<'_>) -> PayloadHint {
    if hints && seg.payload.len() as u32 == seg.payload_len {
        PayloadHint::of(seg.payload)
    } else {
        PayloadHint::NONE
    }
}
