//! IP fragments (RFC 791 for IPv4, RFC 8200 for IPv6) put back together into the datagrams they were cut
//! from, as the receiving host's stack does, and an account of the datagrams that could not be.
//!
//! [`IpReassembler`] follows Linux's reassembly (`net/ipv4/ip_fragment.c`, `net/ipv6/reassembly.c` and
//! `inet_fragment.c`), since what a capture should show is what the receiving host made of it:
//!
//! * a datagram is the fragments with the same source, destination, identification and (IPv4) protocol;
//! * a fragment that lies wholly inside bytes already held is a duplicate and dropped; one that overlaps
//!   them in part discards the whole datagram (RFC 5722 for IPv6; Linux does the same for IPv4);
//! * a last fragment whose end contradicts what is held, or an empty fragment, discards the datagram; a
//!   non-last fragment's length is cut to a multiple of 8 (IPv4) or the fragment dropped (IPv6);
//! * a datagram still missing fragments [`IPV4_TIMEOUT_NS`] (`net.ipv4.ipfrag_time`) or
//!   [`IPV6_TIMEOUT_NS`] (`net.ipv6.ip6frag_time`) after its first fragment arrived is given up;
//! * a datagram longer than 65,535 bytes is discarded when it is whole;
//! * while the fragments held take more than [`REASSEMBLY_MEMORY`] (`ipfrag_high_thresh`), new fragments
//!   are dropped.
//!
//! Time is the capture's: a fragment's timestamp. One addition to the host's behaviour: a fragment that
//! repeats, byte for byte, one of a datagram reassembled within the timeout is a duplicate (a capture at
//! a mirror port often holds every packet twice), where Linux would start a new datagram with it and give
//! that up later.
//!
//! ```
//! use pcapsleuth_capture::{LinkType, Timestamp};
//! use pcapsleuth_flow::{decode, Decoded, FrameRef, IpReassembler};
//!
//! // An IPv4 datagram (UDP to port 53) cut into two fragments: 8 bytes, then the other 6.
//! let payload = [0xc3, 0x50, 0, 53, 0, 14, 0, 0, b'h', b'e', b'l', b'l', b'o', b'!'];
//! let fragment = |offset: usize, more: bool, data: &[u8]| {
//!     let flags = (if more { 0x2000 } else { 0 }) | (offset / 8) as u16;
//!     let mut ip = vec![0x45, 0, 0, 20 + data.len() as u8, 0x12, 0x34];
//!     ip.extend_from_slice(&flags.to_be_bytes());
//!     ip.extend_from_slice(&[64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
//!     ip.extend_from_slice(data);
//!     ip
//! };
//! let (first, last) = (fragment(0, true, &payload[..8]), fragment(8, false, &payload[8..]));
//! let mut reassembler = IpReassembler::default();
//! let at = |frame| FrameRef { frame, ts: Timestamp(frame as i64 * 1_000) };
//! let mut out = Vec::new(); // where datagrams are written
//! for (frame, packet) in [(1, &last), (2, &first)] {
//!     let Decoded::Fragment(f) = decode(LinkType::RawIp, packet) else { panic!("a fragment") };
//!     if let Some(datagram) = reassembler.add(&f, at(frame), packet.len() as u32, &mut out) {
//!         // Whole when its last missing piece came: frame 2, though that was its first fragment.
//!         assert_eq!(frame, 2);
//!         assert_eq!(&datagram.packet[20..], &payload);
//!         assert_eq!(datagram.wire_len, 28 + 26);
//!     }
//! }
//! let facts = reassembler.finish(None);
//! assert_eq!((facts.fragments, facts.reassembled, facts.not_reassembled.total()), (2, 1, 0));
//! ```

use std::collections::{HashMap, VecDeque};
use std::hash::{Hash, Hasher};
use std::net::IpAddr;

use pcapsleuth_capture::Timestamp;
use serde::{Serialize, Serializer};

use crate::fields::{be16, ETHERTYPE_IPV4, ETHERTYPE_IPV6};
use crate::FrameRef;

/// How long an IPv4 datagram may wait for its missing fragments: Linux's `net.ipv4.ipfrag_time` (30 s;
/// RFC 791 suggests 15 s as the lower bound).
pub const IPV4_TIMEOUT_NS: i64 = 30_000_000_000;

/// How long an IPv6 datagram may wait for its missing fragments: RFC 8200's 60 s, Linux's
/// `net.ipv6.ip6frag_time`.
pub const IPV6_TIMEOUT_NS: i64 = 60_000_000_000;

/// The most bytes the fragments of unfinished datagrams may hold: Linux's `ipfrag_high_thresh` (4 MiB),
/// counted as the data held plus `FRAGMENT_COST` per fragment and `DATAGRAM_COST` per datagram. Past
/// it, fragments are dropped until some datagram finishes or is given up, so memory stays bounded whatever
/// the capture (Linux drops them the same way).
pub const REASSEMBLY_MEMORY: usize = 4 << 20;

/// What a fragment held costs beyond its data: its place in the datagram and its share of the lists.
const FRAGMENT_COST: usize = 64;

/// What an unfinished datagram costs beyond its fragments: its entry in the table and its state.
const DATAGRAM_COST: usize = 256;

/// Datagrams reassembled are remembered for the timeout (their fragments' ranges and a hash of their
/// bytes), so that a repeated fragment is known for a duplicate; at most this many bytes of such memories
/// are kept, the oldest forgotten first: they are a nicety, never a reason to drop a fragment.
const REASSEMBLED_MEMORY: usize = 1 << 20;

/// What a remembered fragment of a reassembled datagram costs: its range and hash.
const REMEMBERED_COST: usize = 24;

/// Datagrams not reassembled listed by [`ReassemblyFacts::first_failures`] (the counts cover all).
const FAILURES_LISTED: usize = 10;

/// How many IPv6 extension headers may precede the Fragment header before a packet is taken as not
/// fragmented (a hostile packet could chain them to the end of its bytes).
const MAX_EXTENSION_HEADERS: usize = 8;

/// IPv6 extension headers that may come before a Fragment header (RFC 8200, 4.1), and the Fragment header.
const HOP_BY_HOP: u8 = 0;
const ROUTING: u8 = 43;
const FRAGMENT: u8 = 44;
const DESTINATION_OPTIONS: u8 = 60;

/// The largest IP datagram, and the largest IPv6 payload: 16-bit lengths.
const MAX_DATAGRAM: u32 = 65_535;

/// IP protocol numbers whose header begins with the two ports.
const TCP: u8 = 6;
const UDP: u8 = 17;

/// One IP fragment, borrowing the packet's bytes: a piece of a datagram that reassembly puts back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpFragment<'a> {
    /// The sender's address.
    pub src: IpAddr,
    /// The receiver's address.
    pub dst: IpAddr,
    /// The Identification field (16 bits for IPv4, 32 for IPv6's Fragment header).
    pub id: u32,
    /// The protocol of the datagram's payload: IPv4's Protocol field, or the Fragment header's Next Header.
    pub protocol: u8,
    /// The TTL (IPv4) or Hop Limit (IPv6) of this fragment.
    pub hop_limit: u8,
    /// Where the fragment's data lies in the datagram's payload, in bytes (the Fragment Offset field × 8).
    pub offset: u32,
    /// More Fragments: this is not the last fragment.
    pub more: bool,
    /// Bytes before the data that count in the datagram's length: the IPv4 header, or the IPv6 extension
    /// headers before the Fragment header. With the data's length they must fit 65,535 bytes.
    pub unfragmentable: u16,
    /// The fragment's data as captured (shorter than `data_len` when the snap length cut it).
    pub data: &'a [u8],
    /// The fragment's data length on the wire, from its IP header.
    pub data_len: u32,
}

impl IpFragment<'_> {
    fn is_v6(&self) -> bool {
        self.src.is_ipv6()
    }
}

/// The IP fragment at the start of `ip`, when it is one: an IPv4 packet with More Fragments or an offset,
/// or an IPv6 packet with a Fragment header (atomic fragments too: offset 0, no more fragments).
/// `ether_type` is the link's protocol, when the link names one.
pub(crate) fn parse(ether_type: Option<u16>, ip: &[u8]) -> Option<IpFragment<'_>> {
    match (ether_type, ip.first()? >> 4) {
        (None | Some(ETHERTYPE_IPV4), 4) => parse_v4(ip),
        (None | Some(ETHERTYPE_IPV6), 6) => parse_v6(ip),
        _ => None,
    }
}

fn parse_v4(ip: &[u8]) -> Option<IpFragment<'_>> {
    let h: &[u8; 20] = ip.get(..20)?.try_into().ok()?;
    let flags_offset = u16::from_be_bytes([h[6], h[7]]);
    let more = flags_offset & 0x2000 != 0;
    let offset = u32::from(flags_offset & 0x1fff) * 8;
    if !more && offset == 0 {
        return None;
    }
    let header = usize::from(h[0] & 0x0f) * 4;
    let total = usize::from(u16::from_be_bytes([h[2], h[3]]));
    if header < 20 || total < header || ip.len() < header {
        return None;
    }
    Some(IpFragment {
        src: IpAddr::from([h[12], h[13], h[14], h[15]]),
        dst: IpAddr::from([h[16], h[17], h[18], h[19]]),
        id: u32::from(u16::from_be_bytes([h[4], h[5]])),
        protocol: h[9],
        hop_limit: h[8],
        offset,
        more,
        unfragmentable: header as u16,
        // Bytes past the total length are the link's padding, not data.
        data: &ip[header..total.min(ip.len())],
        data_len: (total - header) as u32,
    })
}

fn parse_v6(ip: &[u8]) -> Option<IpFragment<'_>> {
    let h = ip.get(..40)?;
    let payload_len = usize::from(u16::from_be_bytes([h[4], h[5]]));
    // A payload length of 0 is a jumbogram's (RFC 2675), which is never fragmented.
    if payload_len == 0 {
        return None;
    }
    let end = 40 + payload_len;
    let (mut next, mut at) = (h[6], 40usize);
    for _ in 0..MAX_EXTENSION_HEADERS {
        match next {
            HOP_BY_HOP | ROUTING | DESTINATION_OPTIONS => {
                next = *ip.get(at)?;
                at += (usize::from(*ip.get(at + 1)?) + 1) * 8;
            }
            FRAGMENT => {
                let f = ip.get(at..at + 8)?;
                let data_at = at + 8;
                if end < data_at {
                    return None;
                }
                let flags_offset = u16::from_be_bytes([f[2], f[3]]);
                let src: [u8; 16] = h[8..24].try_into().ok()?;
                let dst: [u8; 16] = h[24..40].try_into().ok()?;
                return Some(IpFragment {
                    src: IpAddr::from(src),
                    dst: IpAddr::from(dst),
                    id: u32::from_be_bytes([f[4], f[5], f[6], f[7]]),
                    protocol: f[0],
                    hop_limit: h[7],
                    offset: u32::from(flags_offset & 0xfff8),
                    more: flags_offset & 1 != 0,
                    unfragmentable: u16::try_from(at - 40).ok()?,
                    data: &ip[data_at..end.min(ip.len())],
                    data_len: (end - data_at) as u32,
                });
            }
            _ => return None,
        }
    }
    None
}

/// Why a datagram could not be reassembled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReassemblyFailure {
    /// Fragments were still missing when the capture ended, within the timeout.
    FragmentsMissing,
    /// Fragments were still missing when the timeout ran out ([`IPV4_TIMEOUT_NS`], [`IPV6_TIMEOUT_NS`]).
    TimedOut,
    /// A fragment overlapped bytes already held, in part: the whole datagram is discarded (RFC 5722).
    Overlap,
    /// The datagram was longer than 65,535 bytes.
    TooBig,
    /// Fragments of it were dropped because reassembly held [`REASSEMBLY_MEMORY`].
    MemoryLimit,
    /// Its fragments' lengths contradicted one another: a last fragment ending before bytes already held
    /// or where another last fragment did not, bytes past the last fragment's end, an empty fragment.
    Inconsistent,
}

impl ReassemblyFailure {
    /// Why, in words that follow a count of datagrams ("3 with fragments missing ...").
    pub fn describe(self) -> &'static str {
        match self {
            ReassemblyFailure::FragmentsMissing => "with fragments missing when the capture ended",
            ReassemblyFailure::TimedOut => "with fragments still missing at the reassembly timeout",
            ReassemblyFailure::Overlap => "with overlapping fragments, discarded",
            ReassemblyFailure::TooBig => "longer than 65,535 bytes",
            ReassemblyFailure::MemoryLimit => {
                "with fragments dropped at the reassembly memory limit"
            }
            ReassemblyFailure::Inconsistent => "whose fragment lengths contradict one another",
        }
    }
}

/// Datagrams not reassembled, by reason.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct NotReassembled {
    /// [`ReassemblyFailure::FragmentsMissing`].
    pub fragments_missing: u64,
    /// [`ReassemblyFailure::TimedOut`].
    pub timed_out: u64,
    /// [`ReassemblyFailure::Overlap`].
    pub overlap: u64,
    /// [`ReassemblyFailure::TooBig`].
    pub too_big: u64,
    /// [`ReassemblyFailure::MemoryLimit`].
    pub memory_limit: u64,
    /// [`ReassemblyFailure::Inconsistent`].
    pub inconsistent: u64,
}

impl NotReassembled {
    /// Every datagram not reassembled.
    pub fn total(&self) -> u64 {
        self.fragments_missing
            + self.timed_out
            + self.overlap
            + self.too_big
            + self.memory_limit
            + self.inconsistent
    }

    /// The counts by reason, in the order of [`ReassemblyFailure`].
    pub fn by_reason(&self) -> [(ReassemblyFailure, u64); 6] {
        [
            (ReassemblyFailure::FragmentsMissing, self.fragments_missing),
            (ReassemblyFailure::TimedOut, self.timed_out),
            (ReassemblyFailure::Overlap, self.overlap),
            (ReassemblyFailure::TooBig, self.too_big),
            (ReassemblyFailure::MemoryLimit, self.memory_limit),
            (ReassemblyFailure::Inconsistent, self.inconsistent),
        ]
    }

    fn count(&mut self, why: ReassemblyFailure) {
        *match why {
            ReassemblyFailure::FragmentsMissing => &mut self.fragments_missing,
            ReassemblyFailure::TimedOut => &mut self.timed_out,
            ReassemblyFailure::Overlap => &mut self.overlap,
            ReassemblyFailure::TooBig => &mut self.too_big,
            ReassemblyFailure::MemoryLimit => &mut self.memory_limit,
            ReassemblyFailure::Inconsistent => &mut self.inconsistent,
        } += 1;
    }
}

/// One datagram that could not be reassembled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct UnreassembledDatagram {
    /// Its first fragment in the capture.
    pub first: FrameRef,
    /// The sender: `address:port` when the fragment at offset 0 was captured and the protocol is TCP or
    /// UDP, else the address.
    #[serde(serialize_with = "ser_end")]
    pub src: (IpAddr, Option<u16>),
    /// The receiver, as `src`.
    #[serde(serialize_with = "ser_end")]
    pub dst: (IpAddr, Option<u16>),
    /// The protocol it carried (6: TCP, 17: UDP).
    pub protocol: u8,
    /// Its fragments that were held.
    pub fragments: u32,
    /// Why it was not reassembled.
    pub reason: ReassemblyFailure,
}

impl UnreassembledDatagram {
    /// `10.0.0.1:3306 -> 10.0.0.2:40000`, or the addresses alone when the ports are not known.
    pub fn endpoints(&self) -> String {
        format!("{} -> {}", end_text(self.src), end_text(self.dst))
    }
}

fn end_text((ip, port): (IpAddr, Option<u16>)) -> String {
    match (ip, port) {
        (IpAddr::V4(a), Some(p)) => format!("{a}:{p}"),
        (IpAddr::V6(a), Some(p)) => format!("[{a}]:{p}"),
        (ip, None) => ip.to_string(),
    }
}

fn ser_end<S: Serializer>(end: &(IpAddr, Option<u16>), s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(&end_text(*end))
}

/// What reassembly met in a capture: the fragments, the datagrams made of them, and those that could not be.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ReassemblyFacts {
    /// IP fragments met (inside tunnels, and inside datagrams reassembled, too).
    pub fragments: u64,
    /// Datagrams reassembled from them.
    pub reassembled: u64,
    /// Fragments dropped as duplicates: lying within bytes already held, or repeating a fragment of a
    /// datagram reassembled. Nothing is lost with them.
    pub duplicates: u64,
    /// Fragments dropped because reassembly held [`REASSEMBLY_MEMORY`].
    pub dropped_at_memory_limit: u64,
    /// IPv6 fragments dropped as malformed (a non-last fragment whose length is not a multiple of 8, or
    /// one that ends past 65,535 bytes), as the host drops them (with an ICMPv6 Parameter Problem).
    pub dropped_malformed: u64,
    /// Datagrams that could not be reassembled, by reason.
    pub not_reassembled: NotReassembled,
    /// The first of them (up to 10), in order of their first fragment.
    pub first_failures: Vec<UnreassembledDatagram>,
}

impl ReassemblyFacts {
    /// Whether bytes were lost to reassembly: a datagram not reassembled, or a fragment dropped (not as a
    /// duplicate).
    pub fn lost_any(&self) -> bool {
        self.not_reassembled.total() > 0
            || self.dropped_at_memory_limit > 0
            || self.dropped_malformed > 0
    }

    fn failed(&mut self, d: UnreassembledDatagram) {
        self.not_reassembled.count(d.reason);
        let list = &mut self.first_failures;
        let at = list.partition_point(|x| x.first <= d.first);
        if at < FAILURES_LISTED {
            list.insert(at, d);
            list.truncate(FAILURES_LISTED);
        }
    }
}

/// A datagram reassembled: the IP packet it makes, rebuilt with a plain header (IPv4 without options, or
/// IPv6 without extension headers before the payload), to be decoded as raw IP.
#[derive(Debug, Clone, Copy)]
pub struct Reassembled<'a> {
    /// The rebuilt packet (at the end of the buffer given to [`IpReassembler::add`]): its header's length
    /// fields give the datagram's length on the wire; its bytes stop early if a fragment was cut by the
    /// snap length (at the first byte not captured).
    pub packet: &'a [u8],
    /// Link-layer bytes on the wire of all its fragments (their original lengths).
    pub wire_len: u64,
    /// Its first fragment in the capture.
    pub first: FrameRef,
}

/// Which datagram a fragment belongs to: RFC 791's (source, destination, protocol, identification); RFC
/// 8200's (source, destination, identification), with `protocol` 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct DatagramKey {
    src: IpAddr,
    dst: IpAddr,
    id: u32,
    protocol: u8,
}

impl Hash for DatagramKey {
    /// A few whole words rather than the addresses byte by byte: the table is keyed by a hasher that
    /// resists crafted collisions (the identification is the sender's to choose), which is slow per call.
    fn hash<H: Hasher>(&self, h: &mut H) {
        let word = |a: IpAddr| match a {
            IpAddr::V4(a) => u128::from(u32::from(a)),
            IpAddr::V6(a) => u128::from(a) ^ 1 << 127,
        };
        h.write_u128(word(self.src));
        h.write_u128(word(self.dst));
        h.write_u64(u64::from(self.id) << 8 | u64::from(self.protocol));
    }
}

/// A fragment held: where its data lies in the datagram and in the datagram's buffer.
#[derive(Debug, Clone, Copy)]
struct Piece {
    offset: u32,
    /// Its data length on the wire (after a non-last IPv4 fragment's cut to a multiple of 8).
    len: u32,
    /// Of them, captured and held.
    captured: u32,
    /// Where its captured bytes begin in the buffer.
    at: u32,
    /// A hash of its captured bytes, to know a repeat of it once the datagram is reassembled.
    hash: u64,
}

/// Linux's *fragment run*: fragments that arrived one after the other, each beginning where the previous
/// ended. A fragment wholly inside one run is a duplicate; one overlapping a run in part is an overlap.
#[derive(Debug, Clone, Copy)]
struct Run {
    start: u32,
    end: u32,
}

/// A datagram waiting for its missing fragments.
#[derive(Debug, Default)]
struct Datagram {
    generation: u64,
    first: Option<FrameRef>,
    deadline: i64,
    runs: Vec<Run>,
    pieces: Vec<Piece>,
    bytes: Vec<u8>,
    /// The end of the data so far: the datagram's payload length once the last fragment came.
    len: u32,
    /// The end of the fragment at the tail of the last run (Linux's `fragments_tail`).
    tail_end: u32,
    first_in: bool,
    last_in: bool,
    /// Data bytes held (Linux's `meat`): the datagram is whole when they equal `len`.
    meat: u32,
    unfragmentable: u16,
    protocol: u8,
    hop_limit: u8,
    ports: Option<(u16, u16)>,
    wire_len: u64,
    /// A fragment of it was dropped at the memory limit.
    starved: bool,
    cost: usize,
}

/// What the table holds for a datagram's key.
#[derive(Debug)]
enum Slot {
    /// The datagram, waiting for fragments.
    Open(Datagram),
    /// The datagram was reassembled: its fragments, as (offset, end, hash of the bytes), so that a repeat
    /// of one is known for a duplicate.
    Reassembled {
        generation: u64,
        pieces: Vec<(u32, u32, u64)>,
    },
}

impl Slot {
    fn generation(&self) -> u64 {
        match self {
            Slot::Open(d) => d.generation,
            Slot::Reassembled { generation, .. } => *generation,
        }
    }
}

/// What a remembered datagram costs: its entry, and per fragment its range and hash.
fn remembered_cost(pieces: usize) -> usize {
    DATAGRAM_COST + pieces * REMEMBERED_COST
}

/// Puts IP fragments back together into datagrams, in capture order; see the module documentation.
#[derive(Debug, Default)]
pub struct IpReassembler {
    /// Datagrams open and reassembled, by key: one lookup per fragment.
    table: HashMap<DatagramKey, Slot>,
    /// Datagrams in order of their first fragment (reassembled ones in order of their completion), with
    /// their deadlines, per IP version (the timeouts differ): given up, or forgotten, from the front as
    /// time passes.
    expiry: [VecDeque<(i64, DatagramKey, u64)>; 2],
    /// Reassembled datagrams in order of completion, to forget the oldest when they take too much room.
    remembered_order: VecDeque<(DatagramKey, u64)>,
    /// Bytes the open datagrams cost, and the remembered ones.
    held: usize,
    remembered: usize,
    /// Entries of the table of each kind, for keeping the lists above from outgrowing it.
    open: usize,
    reassembled: usize,
    generation: u64,
    facts: ReassemblyFacts,
    /// Buffers of datagrams finished, to hold the next ones without allocating.
    spare: Vec<Datagram>,
}

/// How a fragment fits the runs held.
enum Fit {
    /// Before, between or after them: it is held.
    Fits,
    /// Wholly inside one run.
    Duplicate,
    /// Across the bytes of a run, in part.
    Overlap,
}

/// Why a fragment was not held.
enum Taken {
    /// It repeats bytes held: dropped, the datagram goes on.
    Duplicate,
    /// The datagram is discarded.
    Failed(ReassemblyFailure),
}

impl Datagram {
    /// Linux's `inet_frag_queue_insert`: where `[offset, end)` goes among the runs (and puts it there).
    fn insert(&mut self, offset: u32, end: u32) -> Fit {
        if self.runs.is_empty() {
            self.runs.push(Run { start: offset, end });
            self.tail_end = end;
            return Fit::Fits;
        }
        if self.tail_end < end {
            // The common case: after everything held.
            if offset < self.tail_end {
                return Fit::Overlap;
            }
            match self.runs.last_mut() {
                Some(last) if offset == self.tail_end => last.end = end,
                _ => self.runs.push(Run { start: offset, end }),
            }
            self.tail_end = end;
            return Fit::Fits;
        }
        let at = self.runs.partition_point(|r| r.end <= offset);
        match self.runs.get(at) {
            Some(r) if r.start < end => {
                if offset >= r.start && end <= r.end {
                    Fit::Duplicate
                } else {
                    Fit::Overlap
                }
            }
            _ => {
                self.runs.insert(at, Run { start: offset, end });
                Fit::Fits
            }
        }
    }

    /// Linux's `ip_frag_queue` / `ip6_frag_queue` for a fragment whose data is `[f.offset, end)` (`data`
    /// of it captured, with hash `hash`): checks its end against the datagram's, places it among the runs
    /// and holds it. Returns what holding it costs, or why it is not held.
    fn take(
        &mut self,
        f: &IpFragment<'_>,
        end: u32,
        (data, hash): (&[u8], u64),
        wire_len: u32,
    ) -> Result<usize, Taken> {
        if !f.more {
            if end < self.len || (self.last_in && end != self.len) {
                return Err(Taken::Failed(ReassemblyFailure::Inconsistent));
            }
            self.last_in = true;
            self.len = end;
        } else if end > self.len {
            if self.last_in {
                return Err(Taken::Failed(ReassemblyFailure::Inconsistent));
            }
            self.len = end;
        }
        if end <= f.offset {
            return Err(Taken::Failed(ReassemblyFailure::Inconsistent));
        }
        match self.insert(f.offset, end) {
            Fit::Fits => {}
            Fit::Duplicate => return Err(Taken::Duplicate),
            Fit::Overlap => return Err(Taken::Failed(ReassemblyFailure::Overlap)),
        }
        self.pieces.push(Piece {
            offset: f.offset,
            len: end - f.offset,
            captured: data.len() as u32,
            at: self.bytes.len() as u32,
            hash,
        });
        self.bytes.extend_from_slice(data);
        self.meat += end - f.offset;
        self.wire_len += u64::from(wire_len);
        if f.offset == 0 {
            self.first_in = true;
            self.unfragmentable = f.unfragmentable;
            self.protocol = f.protocol;
            self.hop_limit = f.hop_limit;
            if matches!(f.protocol, TCP | UDP) {
                if let (Some(s), Some(d)) = (be16(f.data, 0), be16(f.data, 2)) {
                    self.ports = Some((s, d));
                }
            }
        }
        let cost = data.len() + FRAGMENT_COST;
        self.cost += cost;
        Ok(cost)
    }

    fn is_whole(&self) -> bool {
        self.first_in && self.last_in && self.meat == self.len
    }

    fn failure(&self, key: &DatagramKey, reason: ReassemblyFailure) -> UnreassembledDatagram {
        let (sp, dp) = match self.ports {
            Some((s, d)) => (Some(s), Some(d)),
            None => (None, None),
        };
        UnreassembledDatagram {
            first: self.first.unwrap_or(FrameRef {
                frame: 0,
                ts: Timestamp(0),
            }),
            src: (key.src, sp),
            dst: (key.dst, dp),
            protocol: self.protocol,
            fragments: self.pieces.len() as u32,
            reason,
        }
    }

    /// Writes the datagram, whole, to `out`: a plain header, then its bytes in order.
    fn write(&mut self, key: &DatagramKey, out: &mut Vec<u8>) {
        self.pieces.sort_unstable_by_key(|p| p.offset);
        write_header(
            out,
            key.src,
            key.dst,
            key.id,
            self.protocol,
            self.hop_limit,
            self.len,
        );
        for p in &self.pieces {
            let from = p.at as usize;
            out.extend_from_slice(&self.bytes[from..from + p.captured as usize]);
            if p.captured < p.len {
                break; // cut by the snap length: what follows is not contiguous
            }
        }
    }
}

/// A hash of a fragment's bytes (the Fx hash, word by word: a duplicate is looked for only among the
/// fragments of one datagram already reassembled, so a crafted collision only drops its own datagram).
fn bytes_hash(b: &[u8]) -> u64 {
    let mut h = crate::FlowHasher::default();
    h.write(b);
    h.write_usize(b.len());
    h.finish()
}

fn timeout(v6: bool) -> i64 {
    if v6 {
        IPV6_TIMEOUT_NS
    } else {
        IPV4_TIMEOUT_NS
    }
}

impl IpReassembler {
    /// Takes one fragment, captured at `at` in a frame of `wire_len` bytes on the wire. Returns the
    /// datagram when this fragment made it whole (an IPv6 atomic fragment, RFC 6946, is one by itself),
    /// its packet written at the end of `out`.
    pub fn add<'o>(
        &mut self,
        f: &IpFragment<'_>,
        at: FrameRef,
        wire_len: u32,
        out: &'o mut Vec<u8>,
    ) -> Option<Reassembled<'o>> {
        self.facts.fragments += 1;
        self.expire(at.ts.0);
        let v6 = f.is_v6();
        if v6 && f.offset == 0 && !f.more {
            let packet = self.atomic(f, out)?;
            return Some(Reassembled {
                packet,
                wire_len: u64::from(wire_len),
                first: at,
            });
        }
        if self.held > REASSEMBLY_MEMORY {
            self.drop_at_memory_limit(f);
            return None;
        }
        let end = self.data_end(f, v6)?;
        let captured = (f.data.len() as u32).min(end.saturating_sub(f.offset));
        let data = &f.data[..captured as usize];
        let hash = bytes_hash(data);
        let key = key_of(f);
        let (d, timed_out) = self.datagram_for(key, f, (end, hash), at, v6)?;
        let taken = d.take(f, end, (data, hash), wire_len);
        let whole = d.is_whole();
        let too_big = u32::from(d.unfragmentable) + d.len > MAX_DATAGRAM;
        if let Some(old) = timed_out {
            // The datagram given up here had its cost counted; its slot went to the new one.
            self.held -= old.cost;
            self.open -= 1;
            self.give_up(&key, old, ReassemblyFailure::TimedOut);
        }
        match taken {
            Ok(cost) => self.held += cost,
            Err(Taken::Duplicate) => {
                self.facts.duplicates += 1;
                self.compact();
                return None;
            }
            Err(Taken::Failed(reason)) => {
                self.fail(&key, reason);
                self.compact();
                return None;
            }
        }
        if !whole {
            self.compact();
            return None;
        }
        if too_big {
            self.fail(&key, ReassemblyFailure::TooBig);
            self.compact();
            return None;
        }
        self.complete(key, v6, at, out)
    }

    /// An atomic fragment is a datagram by itself, never mixed with other fragments of its
    /// identification (RFC 6946, as Linux does): its packet written at the end of `out` at once, unless
    /// it is too long.
    fn atomic<'o>(&mut self, f: &IpFragment<'_>, out: &'o mut Vec<u8>) -> Option<&'o [u8]> {
        if u32::from(f.unfragmentable) + f.data_len > MAX_DATAGRAM {
            self.facts.dropped_malformed += 1;
            return None;
        }
        self.facts.reassembled += 1;
        let start = out.len();
        write_header(out, f.src, f.dst, f.id, f.protocol, f.hop_limit, f.data_len);
        out.extend_from_slice(f.data);
        Some(&out[start..])
    }

    /// Past the memory limit the fragment is dropped, and its datagram, if open, marked as having lost
    /// one there (so that giving it up later says why).
    fn drop_at_memory_limit(&mut self, f: &IpFragment<'_>) {
        self.facts.dropped_at_memory_limit += 1;
        let key = key_of(f);
        if let Some(Slot::Open(d)) = self.table.get_mut(&key) {
            d.starved = true;
        }
    }

    /// Where the fragment's data ends in its datagram, or `None` when the fragment is dropped alone:
    /// Linux checks a non-last IPv6 fragment's length, and the end's bound, before looking for its
    /// datagram. A non-last IPv4 fragment's data is cut to a multiple of 8.
    fn data_end(&mut self, f: &IpFragment<'_>, v6: bool) -> Option<u32> {
        let mut end = f.offset.saturating_add(f.data_len);
        if v6 && ((f.more && end & 7 != 0) || end > MAX_DATAGRAM) {
            self.facts.dropped_malformed += 1;
            return None;
        }
        if f.more {
            end &= !7;
        }
        Some(end)
    }

    /// The open datagram the fragment `[f.offset, end)` (its bytes' hash `hash`) belongs to, begun here
    /// if need be, with the datagram of its key given up at its deadline (its slot reused), if one was.
    /// One lookup: `None` when the slot says the fragment repeats one of a datagram reassembled (counted
    /// as a duplicate).
    fn datagram_for(
        &mut self,
        key: DatagramKey,
        f: &IpFragment<'_>,
        (end, hash): (u32, u64),
        at: FrameRef,
        v6: bool,
    ) -> Option<(&mut Datagram, Option<Datagram>)> {
        let now = at.ts.0;
        let mut timed_out = None;
        let slot = self.table.entry(key).or_insert(Slot::Reassembled {
            generation: 0,
            pieces: Vec::new(),
        });
        match slot {
            Slot::Reassembled { pieces, .. } if pieces.contains(&(f.offset, end, hash)) => {
                self.facts.duplicates += 1;
                return None;
            }
            Slot::Reassembled { pieces, generation } => {
                // New (an empty slot has generation 0), or the identification used again by a new
                // datagram: the remembered one is forgotten.
                if *generation != 0 {
                    self.remembered -= remembered_cost(pieces.len());
                    self.reassembled -= 1;
                }
                *slot = Slot::Open(Datagram::default());
            }
            Slot::Open(d) if d.deadline < now => timed_out = Some(std::mem::take(d)),
            Slot::Open(_) => {}
        }
        let Slot::Open(d) = slot else {
            return None;
        };
        if d.generation == 0 {
            self.generation += 1;
            let deadline = now.saturating_add(timeout(v6));
            let mut fresh = self.spare.pop().unwrap_or_default();
            fresh.generation = self.generation;
            fresh.first = Some(at);
            fresh.deadline = deadline;
            fresh.unfragmentable = f.unfragmentable;
            fresh.protocol = f.protocol;
            fresh.hop_limit = f.hop_limit;
            fresh.cost = DATAGRAM_COST;
            *d = fresh;
            self.held += DATAGRAM_COST;
            self.open += 1;
            self.expiry[usize::from(v6)].push_back((deadline, key, self.generation));
        }
        Some((d, timed_out))
    }

    /// The datagram `key` is whole: written out, and remembered as reassembled in its slot (for the
    /// timeout, so that a repeat of its fragments is known for a duplicate).
    fn complete<'o>(
        &mut self,
        key: DatagramKey,
        v6: bool,
        at: FrameRef,
        out: &'o mut Vec<u8>,
    ) -> Option<Reassembled<'o>> {
        let Some(Slot::Open(mut d)) = self.table.insert(
            key,
            Slot::Reassembled {
                generation: 0,
                pieces: Vec::new(),
            },
        ) else {
            return None;
        };
        self.held -= d.cost;
        self.open -= 1;
        self.facts.reassembled += 1;
        let start = out.len();
        d.write(&key, out);
        let pieces: Vec<(u32, u32, u64)> = d
            .pieces
            .iter()
            .map(|p| (p.offset, p.offset + p.len, p.hash))
            .collect();
        self.remembered += remembered_cost(pieces.len());
        self.reassembled += 1;
        if let Some(slot) = self.table.get_mut(&key) {
            *slot = Slot::Reassembled {
                generation: d.generation,
                pieces,
            };
        }
        self.expiry[usize::from(v6)].push_back((
            at.ts.0.saturating_add(timeout(v6)),
            key,
            d.generation,
        ));
        self.remembered_order.push_back((key, d.generation));
        self.forget_oldest();
        let (wire_len, first) = (d.wire_len, d.first.unwrap_or(at));
        self.recycle(d);
        self.compact();
        Some(Reassembled {
            packet: &out[start..],
            wire_len,
            first,
        })
    }

    /// Discards the open datagram `key` as not reassembled, for `reason`.
    fn fail(&mut self, key: &DatagramKey, reason: ReassemblyFailure) {
        if let Some(Slot::Open(d)) = self.table.remove(key) {
            self.held -= d.cost;
            self.open -= 1;
            self.give_up(key, d, reason);
        }
    }

    /// Counts `d` as not reassembled (a datagram that lost a fragment at the memory limit is counted for
    /// that) and keeps its buffers.
    fn give_up(&mut self, key: &DatagramKey, d: Datagram, reason: ReassemblyFailure) {
        let reason = if d.starved && matches!(reason, ReassemblyFailure::TimedOut) {
            ReassemblyFailure::MemoryLimit
        } else {
            reason
        };
        self.facts.failed(d.failure(key, reason));
        self.recycle(d);
    }

    /// Keeps the buffers of a datagram finished for the next ones (a few: they are the size of the
    /// largest datagram they held).
    fn recycle(&mut self, mut d: Datagram) {
        if self.spare.len() < 16 {
            d.runs.clear();
            d.pieces.clear();
            d.bytes.clear();
            self.spare.push(Datagram {
                runs: d.runs,
                pieces: d.pieces,
                bytes: d.bytes,
                ..Datagram::default()
            });
        }
    }

    /// Forgets the oldest reassembled datagrams while they take more than [`REASSEMBLED_MEMORY`].
    fn forget_oldest(&mut self) {
        while self.remembered > REASSEMBLED_MEMORY {
            let Some((key, generation)) = self.remembered_order.pop_front() else {
                break;
            };
            self.forget(&key, generation);
        }
    }

    /// Forgets the reassembled datagram `key`, if it is still that of `generation`.
    fn forget(&mut self, key: &DatagramKey, generation: u64) {
        if let Some(Slot::Reassembled {
            pieces,
            generation: g,
        }) = self.table.get(key)
        {
            if *g == generation {
                self.remembered -= remembered_cost(pieces.len());
                self.reassembled -= 1;
                self.table.remove(key);
            }
        }
    }

    /// Gives up the open datagrams whose deadline passed before `now`, and forgets the reassembled ones
    /// remembered that long, from the front of each list.
    fn expire(&mut self, now: i64) {
        for v in 0..2 {
            while let Some(&(deadline, key, generation)) = self.expiry[v].front() {
                if deadline >= now {
                    break;
                }
                self.expiry[v].pop_front();
                match self.table.get(&key) {
                    Some(Slot::Open(d)) if d.generation == generation => {
                        self.fail(&key, ReassemblyFailure::TimedOut)
                    }
                    Some(Slot::Reassembled { .. }) => self.forget(&key, generation),
                    _ => {}
                }
            }
        }
    }

    /// Drops the entries of the lists whose datagram is gone, when they outnumber the table's: the lists
    /// grow with the datagrams held, not with all ever seen.
    fn compact(&mut self) {
        let live = self.open + self.reassembled;
        let table = &self.table;
        let alive = |k: &DatagramKey, g: &u64| table.get(k).is_some_and(|s| s.generation() == *g);
        for list in &mut self.expiry {
            if list.len() > 2 * live + 64 {
                list.retain(|(_, k, g)| alive(k, g));
            }
        }
        if self.remembered_order.len() > 2 * self.reassembled + 64 {
            self.remembered_order.retain(|(k, g)| alive(k, g));
        }
    }

    /// Bytes the unfinished datagrams hold now, as counted against [`REASSEMBLY_MEMORY`].
    pub fn held(&self) -> usize {
        self.held
    }

    /// The end of the capture: every datagram still unfinished is counted as not reassembled (timed out if
    /// its deadline is before `capture_end`, the capture's last time, else missing fragments).
    pub fn finish(mut self, capture_end: Option<Timestamp>) -> ReassemblyFacts {
        let mut left: Vec<(DatagramKey, Datagram)> = self
            .table
            .drain()
            .filter_map(|(k, s)| match s {
                Slot::Open(d) => Some((k, d)),
                Slot::Reassembled { .. } => None,
            })
            .collect();
        left.sort_by_key(|(_, d)| d.first);
        for (key, d) in left {
            let reason = match capture_end {
                _ if d.starved => ReassemblyFailure::MemoryLimit,
                Some(end) if d.deadline < end.0 => ReassemblyFailure::TimedOut,
                _ => ReassemblyFailure::FragmentsMissing,
            };
            self.facts.failed(d.failure(&key, reason));
        }
        self.facts
    }
}

fn key_of(f: &IpFragment<'_>) -> DatagramKey {
    DatagramKey {
        src: f.src,
        dst: f.dst,
        id: f.id,
        protocol: if f.is_v6() { 0 } else { f.protocol },
    }
}

/// A plain IP header for a reassembled datagram of `payload_len` bytes: IPv4 without options (fragment
/// fields cleared, checksum left 0: nothing checks it), or IPv6 with `protocol` as its Next Header.
fn write_header(
    out: &mut Vec<u8>,
    src: IpAddr,
    dst: IpAddr,
    id: u32,
    protocol: u8,
    hop_limit: u8,
    payload_len: u32,
) {
    match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            let total = (20 + payload_len).min(0xffff) as u16;
            out.extend_from_slice(&[0x45, 0]);
            out.extend_from_slice(&total.to_be_bytes());
            out.extend_from_slice(&(id as u16).to_be_bytes());
            out.extend_from_slice(&[0, 0, hop_limit, protocol, 0, 0]);
            out.extend_from_slice(&s.octets());
            out.extend_from_slice(&d.octets());
        }
        (s, d) => {
            let v6 = |a: IpAddr| match a {
                IpAddr::V6(a) => a.octets(),
                IpAddr::V4(a) => a.to_ipv6_mapped().octets(),
            };
            out.extend_from_slice(&[0x60, 0, 0, 0]);
            out.extend_from_slice(&(payload_len.min(0xffff) as u16).to_be_bytes());
            out.extend_from_slice(&[protocol, hop_limit]);
            out.extend_from_slice(&v6(s));
            out.extend_from_slice(&v6(d));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const SRC: [u8; 4] = [10, 0, 0, 1];
    const DST: [u8; 4] = [10, 0, 0, 2];

    /// A raw IPv4 fragment (decoder unit tests only): `data` at byte `offset` of datagram `id`'s payload.
    fn v4(id: u16, offset: u32, more: bool, data: &[u8]) -> Vec<u8> {
        let flags = u16::from(more) << 13 | (offset / 8) as u16;
        let mut ip = vec![0x45, 0];
        ip.extend_from_slice(&(20 + data.len() as u16).to_be_bytes());
        ip.extend_from_slice(&id.to_be_bytes());
        ip.extend_from_slice(&flags.to_be_bytes());
        ip.extend_from_slice(&[64, TCP, 0, 0]);
        ip.extend_from_slice(&SRC);
        ip.extend_from_slice(&DST);
        ip.extend_from_slice(data);
        ip
    }

    /// A raw IPv6 packet with a destination-options header, then a Fragment header.
    fn v6(id: u32, offset: u32, more: bool, data: &[u8]) -> Vec<u8> {
        let mut ip = vec![0x60, 0, 0, 0];
        ip.extend_from_slice(&(8 + 8 + data.len() as u16).to_be_bytes());
        ip.extend_from_slice(&[DESTINATION_OPTIONS, 64]);
        ip.extend_from_slice(&[0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
        ip.extend_from_slice(&[0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
        ip.extend_from_slice(&[FRAGMENT, 0, 1, 4, 0, 0, 0, 0]);
        ip.extend_from_slice(&[TCP, 0]);
        ip.extend_from_slice(&((offset as u16) | u16::from(more)).to_be_bytes());
        ip.extend_from_slice(&id.to_be_bytes());
        ip.extend_from_slice(data);
        ip
    }

    fn at(frame: u64, ms: i64) -> FrameRef {
        FrameRef {
            frame,
            ts: Timestamp(1_700_000_000_000_000_000 + ms * 1_000_000),
        }
    }

    /// Feeds the packets in order (frame i+1, i ms), returning each datagram made: (frame, payload).
    fn feed(r: &mut IpReassembler, packets: &[Vec<u8>]) -> Vec<(u64, Vec<u8>)> {
        let mut out = Vec::new();
        let mut buf = Vec::new();
        for (i, p) in packets.iter().enumerate() {
            let f = parse(None, p).expect("a fragment");
            let header = if f.is_v6() { 40 } else { 20 };
            if let Some(d) = r.add(&f, at(i as u64 + 1, i as i64), p.len() as u32, &mut buf) {
                out.push((i as u64 + 1, d.packet[header..].to_vec()));
            }
        }
        out
    }

    fn payload(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 7 % 251) as u8).collect()
    }

    /// `data` cut at the given offsets (multiples of 8) into IPv4 fragments, in offset order.
    fn cut(id: u16, data: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
        let mut bounds = vec![0];
        bounds.extend(cuts.iter().copied().filter(|&c| c > 0 && c < data.len()));
        bounds.sort_unstable();
        bounds.dedup();
        bounds.push(data.len());
        bounds
            .windows(2)
            .map(|w| v4(id, w[0] as u32, w[1] < data.len(), &data[w[0]..w[1]]))
            .collect()
    }

    #[test]
    fn ipv4_and_ipv6_fragment_headers_are_read() {
        let p = v4(7, 1480, true, &[1; 16]);
        let f = parse(None, &p).unwrap();
        assert_eq!((f.id, f.offset, f.more, f.protocol), (7, 1480, true, TCP));
        assert_eq!((f.data.len(), f.data_len, f.unfragmentable), (16, 16, 20));
        assert!(
            parse(None, &v4(7, 0, false, &[1; 16])).is_none(),
            "not a fragment"
        );
        let p = v6(0x0102_0304, 1232, false, &[2; 8]);
        let f = parse(Some(ETHERTYPE_IPV6), &p).unwrap();
        assert_eq!(
            (f.id, f.offset, f.more, f.protocol),
            (0x0102_0304, 1232, false, TCP)
        );
        assert_eq!((f.data_len, f.unfragmentable), (8, 8));
        assert!(parse(Some(ETHERTYPE_IPV4), &v6(1, 0, true, &[2; 8])).is_none());
        // Cut anywhere, a packet is read as far as it goes, never past its end.
        let whole = v6(1, 8, true, &[3; 16]);
        for n in 0..whole.len() {
            if let Some(f) = parse(None, &whole[..n]) {
                assert!(f.data.len() <= 16);
            }
        }
    }

    #[test]
    fn fragments_in_every_order_make_the_datagram_once_at_the_last_to_come() {
        let data = payload(40);
        let pieces = cut(9, &data, &[8, 16, 32]);
        let orders = permutations(pieces.len());
        assert_eq!(orders.len(), 24);
        for order in orders {
            let mut r = IpReassembler::default();
            let packets: Vec<Vec<u8>> = order.iter().map(|&i| pieces[i].clone()).collect();
            assert_eq!(
                feed(&mut r, &packets),
                [(4, data.clone())],
                "order {order:?}"
            );
            let facts = r.finish(None);
            assert_eq!((facts.reassembled, facts.not_reassembled.total()), (1, 0));
        }
    }

    fn permutations(n: usize) -> Vec<Vec<usize>> {
        if n == 0 {
            return vec![vec![]];
        }
        let mut out = Vec::new();
        for p in permutations(n - 1) {
            for at in 0..=p.len() {
                let mut q = p.clone();
                q.insert(at, n - 1);
                out.push(q);
            }
        }
        out
    }

    #[test]
    fn duplicates_are_dropped_and_nothing_is_lost() {
        let data = payload(24);
        let pieces = cut(1, &data, &[8, 16]);
        let mut r = IpReassembler::default();
        let packets = [
            &pieces[0], &pieces[0], &pieces[1], &pieces[2], &pieces[1], &pieces[2],
        ];
        let packets: Vec<Vec<u8>> = packets.into_iter().cloned().collect();
        assert_eq!(feed(&mut r, &packets), [(4, data)]);
        let facts = r.finish(None);
        // Two repeats after the datagram was made (a mirror port's second copy): duplicates, not a
        // datagram begun anew and given up.
        assert_eq!((facts.duplicates, facts.not_reassembled.total()), (3, 0));
        assert!(!facts.lost_any());
    }

    #[test]
    fn an_identification_used_again_makes_a_new_datagram() {
        let (a, b) = (payload(16), vec![0xee; 16]);
        let mut packets = cut(5, &a, &[8]);
        packets.extend(cut(5, &b, &[8]));
        let mut r = IpReassembler::default();
        assert_eq!(feed(&mut r, &packets), [(2, a), (4, b)]);
    }

    #[test]
    fn an_overlap_discards_the_datagram_as_rfc_5722_and_linux_do() {
        let data = payload(24);
        let pieces = cut(1, &data, &[8, 16]);
        // Bytes 4..12: across the first fragment's end.
        let across = v4(1, 0, true, &data[..16]);
        let mut r = IpReassembler::default();
        let packets = vec![
            pieces[1].clone(),
            across,
            pieces[0].clone(),
            pieces[2].clone(),
        ];
        assert!(feed(&mut r, &packets).is_empty());
        let facts = r.finish(None);
        assert_eq!(facts.not_reassembled.overlap, 1);
        // The fragments after the discard began a datagram anew, which misses its middle.
        assert_eq!(facts.not_reassembled.fragments_missing, 1);
        assert_eq!(facts.first_failures[0].reason, ReassemblyFailure::Overlap);
        assert_eq!(facts.first_failures[0].first.frame, 1);
    }

    #[test]
    fn fragments_still_missing_after_the_timeout_are_given_up() {
        let data = payload(16);
        let pieces = cut(3, &data, &[8]);
        let mut r = IpReassembler::default();
        let first = parse(None, &pieces[0]).unwrap();
        assert!(r.add(&first, at(1, 0), 48, &mut Vec::new()).is_none());
        // 30 s later the datagram is given up: the last fragment begins a new one.
        let last = parse(None, &pieces[1]).unwrap();
        assert!(r.add(&last, at(2, 30_001), 48, &mut Vec::new()).is_none());
        assert_eq!(r.facts.not_reassembled.timed_out, 1);
        // Within the timeout, it would have been whole.
        let mut r = IpReassembler::default();
        assert!(r.add(&first, at(1, 0), 48, &mut Vec::new()).is_none());
        assert!(r.add(&last, at(2, 29_999), 48, &mut Vec::new()).is_some());
        // At the end: timed out if the capture went on past the deadline, else missing.
        let mut r = IpReassembler::default();
        assert!(r.add(&first, at(1, 0), 48, &mut Vec::new()).is_none());
        let facts = r.finish(Some(at(9, 31_000).ts));
        assert_eq!(facts.not_reassembled.timed_out, 1);
        let mut r = IpReassembler::default();
        assert!(r.add(&first, at(1, 0), 48, &mut Vec::new()).is_none());
        let facts = r.finish(Some(at(9, 1_000).ts));
        assert_eq!(facts.not_reassembled.fragments_missing, 1);
        assert_eq!(
            facts.first_failures[0].endpoints(),
            "10.0.0.1:7 -> 10.0.0.2:3605",
            "the first fragment's ports"
        );
    }

    #[test]
    fn a_datagram_over_65535_bytes_is_discarded_when_whole() {
        let mut r = IpReassembler::default();
        let packets = vec![v4(2, 0, true, &[1; 8]), v4(2, 65_528, false, &[2; 100])];
        let big = packets[1].clone();
        assert!(feed(&mut r, &packets).is_empty());
        assert_eq!(r.facts.not_reassembled.too_big, 0, "not whole yet");
        let mut gap = Vec::new();
        let mut at_ = 8;
        while at_ < 65_528 {
            gap.push(v4(2, at_, true, &[3; 1480]));
            at_ += 1480;
        }
        // The last middle fragment is cut to fit exactly before the last one.
        let last_mid = gap.pop().unwrap();
        let f = parse(None, &last_mid).unwrap();
        gap.push(v4(
            2,
            f.offset,
            true,
            &vec![3; (65_528 - f.offset) as usize],
        ));
        let mut packets = vec![v4(2, 0, true, &[1; 8])];
        packets.extend(gap);
        packets.push(big);
        let mut r = IpReassembler::default();
        assert!(feed(&mut r, &packets).is_empty());
        assert_eq!(r.facts.not_reassembled.too_big, 1);
        assert_eq!(r.held(), 0);
    }

    #[test]
    fn lengths_that_contradict_discard_the_datagram() {
        let mut r = IpReassembler::default();
        let packets = vec![
            v4(4, 16, false, &[1; 8]),
            v4(4, 8, false, &[1; 8]), // a second end, before the first
        ];
        assert!(feed(&mut r, &packets).is_empty());
        assert_eq!(r.finish(None).not_reassembled.inconsistent, 1);
        // An empty fragment.
        let mut r = IpReassembler::default();
        assert!(feed(&mut r, &[v4(4, 0, true, &[1; 8]), v4(4, 8, true, &[])]).is_empty());
        assert_eq!(r.finish(None).not_reassembled.inconsistent, 1);
    }

    #[test]
    fn ipv6_fragments_reassemble_and_malformed_ones_are_dropped_alone() {
        let data = payload(20);
        let packets = vec![v6(9, 8, false, &data[8..]), v6(9, 0, true, &data[..8])];
        let mut r = IpReassembler::default();
        assert_eq!(feed(&mut r, &packets), [(2, data.clone())]);
        // A non-last fragment of 12 bytes: dropped with a Parameter Problem, the datagram goes on.
        let packets = vec![
            v6(9, 0, true, &data[..12]),
            v6(9, 8, false, &data[8..]),
            v6(9, 0, true, &data[..8]),
        ];
        let mut r = IpReassembler::default();
        assert_eq!(feed(&mut r, &packets), [(3, data.clone())]);
        assert_eq!(r.facts.dropped_malformed, 1);
        // An atomic fragment is a datagram by itself.
        let mut r = IpReassembler::default();
        assert_eq!(feed(&mut r, &[v6(9, 0, false, &data)]), [(1, data)]);
        assert_eq!(r.finish(None).reassembled, 1);
    }

    #[test]
    fn a_fragment_cut_by_the_snap_length_ends_the_bytes_there() {
        let data = payload(24);
        let mut pieces = cut(6, &data, &[8, 16]);
        pieces[1].truncate(20 + 3);
        let mut r = IpReassembler::default();
        let made = feed(&mut r, &pieces);
        assert_eq!(made, [(3, data[..11].to_vec())]);
    }

    #[test]
    fn memory_stays_bounded_and_dropped_fragments_are_counted() {
        let mut r = IpReassembler::default();
        let mut frame = 0;
        for id in 0..10_000u16 {
            frame += 1;
            // First halves only: none is ever whole.
            let p = v4(id, 0, true, &[7; 1480]);
            let f = parse(None, &p).unwrap();
            assert!(r.add(&f, at(frame, 0), 1514, &mut Vec::new()).is_none());
            assert!(r.held() <= REASSEMBLY_MEMORY + 1480 + FRAGMENT_COST + DATAGRAM_COST);
        }
        let facts = r.finish(None);
        assert!(facts.dropped_at_memory_limit > 7_000, "{facts:?}");
        assert_eq!(
            facts.not_reassembled.fragments_missing + facts.dropped_at_memory_limit,
            10_000
        );
        assert_eq!(facts.first_failures.len(), 10);
        assert!(facts
            .first_failures
            .windows(2)
            .all(|w| w[0].first < w[1].first));
    }

    proptest! {
        /// A datagram cut anywhere (at multiples of 8), its fragments in any order with any of them
        /// repeated, is reassembled once, byte for byte, when its last missing fragment comes.
        #[test]
        fn any_cut_any_order_any_repeats(
            len in 9usize..600,
            cuts in proptest::collection::vec(1usize..75, 0..8),
            order in proptest::collection::vec(any::<proptest::sample::Index>(), 0..30),
        ) {
            let data = payload(len);
            // At least one cut inside: a datagram in one piece is not fragmented.
            let cuts: Vec<usize> = cuts.iter().map(|c| c * 8).chain([8]).collect();
            let pieces = cut(11, &data, &cuts);
            // Each fragment once, in a shuffled order, with repeats drawn from `order` among them.
            let mut packets: Vec<Vec<u8>> = Vec::new();
            let mut left: Vec<usize> = (0..pieces.len()).collect();
            for ix in &order {
                if left.is_empty() { break; }
                let i = left.remove(ix.index(left.len()));
                packets.push(pieces[i].clone());
                packets.push(pieces[ix.index(pieces.len())].clone());
            }
            packets.extend(left.iter().map(|&i| pieces[i].clone()));
            let mut r = IpReassembler::default();
            let made = feed(&mut r, &packets);
            prop_assert_eq!(made.len(), 1);
            prop_assert_eq!(&made[0].1, &data);
            let facts = r.finish(None);
            prop_assert_eq!(facts.not_reassembled.total(), 0);
            prop_assert_eq!(facts.fragments as usize, packets.len());
        }

        /// Fragments of any offsets, lengths and flags: no panic, memory within its bound, and every byte
        /// of a datagram made is the byte some fragment carried at that offset.
        #[test]
        fn any_fragments_never_panic_and_made_bytes_come_from_fragments(
            frags in proptest::collection::vec((0u16..3, 0u32..40, any::<bool>(), 0usize..48, any::<u8>()), 1..40),
        ) {
            let mut r = IpReassembler::default();
            let mut buf = Vec::new();
            let mut sent: Vec<(u16, u32, u8, usize)> = Vec::new();
            for (i, (id, off8, more, len, fill)) in frags.into_iter().enumerate() {
                let p = v4(id, off8 * 8, more, &vec![fill; len]);
                sent.push((id, off8 * 8, fill, len));
                let Some(f) = parse(None, &p) else { continue }; // offset 0, no more: not a fragment
                if let Some(d) = r.add(&f, at(i as u64 + 1, i as i64 * 100), p.len() as u32, &mut buf) {
                    let id_made = u16::from_be_bytes([d.packet[4], d.packet[5]]);
                    for (k, &b) in d.packet[20..].iter().enumerate() {
                        let k = k as u32;
                        let carried = |&(sid, off, fill, len): &(u16, u32, u8, usize)| {
                            sid == id_made && off <= k && k < off + len as u32 && fill == b
                        };
                        prop_assert!(sent.iter().any(carried), "byte {} of datagram {}", k, id_made);
                    }
                }
                prop_assert!(r.held() <= REASSEMBLY_MEMORY + 64 + FRAGMENT_COST + DATAGRAM_COST);
            }
            let _ = r.finish(None);
        }
    }
}
