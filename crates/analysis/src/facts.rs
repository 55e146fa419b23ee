//! What a run found the capture to be: its format and files, its packets by kind, its span in time, and
//! the damage met while reading it. Every analysis is finished with these facts.

use pcapsleuth_capture::{Damage, Order, Timestamp};
use pcapsleuth_flow::ReassemblyFacts;
use serde::Serialize;

use crate::timeline::Timeline;

/// Packets of every kind, counted while scanning.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct PacketCounts {
    /// Every record of the capture (every frame Wireshark numbers).
    pub packets: u64,
    /// Link-layer bytes on the wire (original lengths).
    pub wire_bytes: u64,
    /// Packets decoded to a TCP segment (through any tunnel).
    pub tcp: u64,
    /// IP packets that carry no TCP segment (UDP, ICMP, ...).
    pub other_ip: u64,
    /// IP fragments (of the innermost packet, for a tunnelled one): put back together into datagrams,
    /// whose TCP segments are tracked at the frame of the fragment that completed each
    /// ([`CaptureFacts::ip_fragments`]).
    pub ip_fragments: u64,
    /// Packets that are not IP (ARP, LLDP, ...).
    pub not_ip: u64,
    /// Packets too short or inconsistent to reach a TCP header.
    pub undecodable: u64,
    /// Packets of a link type pcapsleuth does not decode (a pcapng interface of another type).
    pub unsupported_link: u64,
    /// Packets cut short by the snap length.
    pub truncated: u64,
    /// The longest captured length of a cut packet: the snap length in force (0 when none was cut).
    pub truncated_at: u32,
}

impl PacketCounts {
    pub(crate) fn add(&mut self, o: &PacketCounts) {
        self.packets += o.packets;
        self.wire_bytes += o.wire_bytes;
        self.tcp += o.tcp;
        self.other_ip += o.other_ip;
        self.ip_fragments += o.ip_fragments;
        self.not_ip += o.not_ip;
        self.undecodable += o.undecodable;
        self.unsupported_link += o.unsupported_link;
        self.truncated += o.truncated;
        self.truncated_at = self.truncated_at.max(o.truncated_at);
    }
}

/// What the whole capture looked like.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CaptureFacts {
    /// The capture's format in words (`pcap (µs, little-endian, link type 1)`, `pcapng`,
    /// `..., zstd-compressed`), or `N files` for a set of several.
    pub format: String,
    /// Bytes of the files as stored (compressed size for a compressed file, 0 for a pipe), summed over the
    /// files.
    pub file_bytes: u64,
    /// Packets by kind.
    pub counts: PacketCounts,
    /// Time of frame 1 (`rel_time` is measured from it, as in Wireshark).
    pub first_ts: Option<Timestamp>,
    /// Time of the last frame (in file order, which need not be the latest time).
    pub last_ts: Option<Timestamp>,
    /// The span of the capture's body and the timestamps outside it (left out of time series).
    pub timeline: Timeline,
    /// What IP reassembly met: fragments, datagrams made of them, and those that could not be made.
    pub ip_fragments: ReassemblyFacts,
    /// What reading survived (a truncated tail, corrupt records skipped), in file order; not in JSON (the
    /// CLI prints it as warnings).
    #[serde(skip)]
    pub damage: Vec<Damage>,
    /// How several files made one capture.
    #[serde(skip_serializing_if = "is_single")]
    pub order: Order,
    /// Every file read, in reading order, with the frames it holds: frame `first_frame + k` of the
    /// capture is frame `k + 1` of the file.
    pub files: Vec<FileFacts>,
    /// Where the run stopped before the capture's end ([`crate::EngineOptions::interrupt`], a sink that
    /// stopped): every figure of the run covers only the frames read. `None`: the whole capture was read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped: Option<Stopped>,
}

/// A run that stopped before the capture's end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Stopped {
    /// Frames read (frames 1 to this one); the rest of the capture was not read.
    pub frames_read: u64,
}

fn is_single(order: &Order) -> bool {
    *order == Order::Single
}

/// One file of the capture.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FileFacts {
    /// The path as given (`-` for standard input).
    pub path: String,
    /// The file's format in words, as [`CaptureFacts::format`].
    pub format: String,
    /// Size as stored (compressed size for a compressed file; 0 for a pipe).
    pub bytes: u64,
    /// Its first frame's number in the capture (0 when it has none).
    pub first_frame: u64,
    /// How many frames it holds.
    pub frames: u64,
    /// Time of its first frame.
    pub first_ts: Option<Timestamp>,
    /// Time of its last frame.
    pub last_ts: Option<Timestamp>,
}

impl FileFacts {
    pub(crate) fn new(path: &std::path::Path, format: String, bytes: u64) -> Self {
        FileFacts {
            path: path.display().to_string(),
            format,
            bytes,
            first_frame: 0,
            frames: 0,
            first_ts: None,
            last_ts: None,
        }
    }
}

impl CaptureFacts {
    /// The file a frame of the capture is in, and its number in that file (Wireshark's, when the file is
    /// opened alone).
    pub fn locate(&self, frame: u64) -> Option<(&FileFacts, u64)> {
        let i = self
            .files
            .partition_point(|f| f.frames == 0 || f.first_frame <= frame);
        let f = self.files[..i].iter().rev().find(|f| f.frames > 0)?;
        (frame < f.first_frame + f.frames).then(|| (f, frame - f.first_frame + 1))
    }
}
