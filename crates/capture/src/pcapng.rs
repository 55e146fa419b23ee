//! pcapng: sections (SHB), interfaces (IDB with `if_tsresol`/`if_tsoffset`), enhanced and simple packet
//! blocks, and the Decryption Secrets Blocks before the first packet; every other block type is skipped
//! by its length.

use std::path::Path;
use std::sync::Arc;

use pcap_parser::pcapng::{parse_block_be, parse_block_le, Block, InterfaceDescriptionBlock};

use crate::{
    CaptureError, Damage, DamageKind, Interface, LinkType, Record, RecordReader, Section, Tail,
    Timestamp,
};

pub(crate) const SHB_TYPE: u32 = 0x0A0D_0D0A;
pub(crate) const BOM: u32 = 0x1A2B_3C4D;
/// Smallest block: type, length, length.
const MIN_BLOCK: usize = 12;
/// No real block is larger; a bigger length is corruption, not a reason to skip gigabytes.
const MAX_BLOCK: usize = 16 << 20;
/// Block types a resync may start from (all block types of the pcapng draft that carry packets or
/// metadata writers emit).
const KNOWN_TYPES: [u32; 10] = [
    SHB_TYPE,
    0x0000_0001, // IDB
    0x0000_0002, // obsolete packet block
    0x0000_0003, // SPB
    0x0000_0004, // NRB
    0x0000_0005, // ISB
    0x0000_0006, // EPB
    0x0000_000A, // DSB
    0x0000_0BAD, // custom
    0x4000_0BAD, // custom, do not copy
];
const RESYNC_CHAIN: usize = 4;

fn word(bytes: &[u8], p: usize, big_endian: bool) -> Option<u32> {
    let b = bytes.get(p..p.checked_add(4)?)?;
    let b = [b[0], b[1], b[2], b[3]];
    Some(if big_endian {
        u32::from_be_bytes(b)
    } else {
        u32::from_le_bytes(b)
    })
}

/// The block at `p`: its type, total length, and the byte order it is written in (an SHB carries its own).
fn block_frame(bytes: &[u8], p: usize, section_big_endian: bool) -> Option<(u32, usize, bool)> {
    let raw_type = word(bytes, p, false)?;
    let big_endian = if raw_type == SHB_TYPE {
        match word(bytes, p + 8, false)? {
            BOM => false,
            x if x.swap_bytes() == BOM => true,
            _ => return None,
        }
    } else {
        section_big_endian
    };
    let block_type = word(bytes, p, big_endian)?;
    let len = word(bytes, p + 4, big_endian)? as usize;
    Some((block_type, len, big_endian))
}

/// The version (major, minor) of the Section Header Block at `p`, in its byte order, when its major version
/// is not 1 (the fields stay at these offsets in any version, as the specification requires).
fn unknown_version(bytes: &[u8], p: usize, big_endian: bool) -> Option<(u16, u16)> {
    let b = bytes.get(p + 12..p + 16)?;
    let (major, minor) = if big_endian {
        (
            u16::from_be_bytes([b[0], b[1]]),
            u16::from_be_bytes([b[2], b[3]]),
        )
    } else {
        (
            u16::from_le_bytes([b[0], b[1]]),
            u16::from_le_bytes([b[2], b[3]]),
        )
    };
    (major != 1).then_some((major, minor))
}

fn framing_ok(len: usize) -> bool {
    (MIN_BLOCK..=MAX_BLOCK).contains(&len) && len % 4 == 0
}

/// Units per second of `if_tsresol`: 10^n, or 2^n when the high bit is set.
fn ts_units(resol: u8) -> Option<u64> {
    if resol & 0x80 == 0 {
        10u64.checked_pow(u32::from(resol))
    } else {
        1u64.checked_shl(u32::from(resol & 0x7f))
    }
}

fn interface_of(idb: &InterfaceDescriptionBlock<'_>) -> (Interface, Option<String>) {
    let linktype = idb.linktype.0 as u32;
    let (units, problem) = match ts_units(idb.if_tsresol) {
        Some(u) if u > 0 => (u, None),
        _ => (
            1_000_000,
            Some(format!(
                "IDB if_tsresol {} unusable, assuming microseconds",
                idb.if_tsresol
            )),
        ),
    };
    (
        Interface {
            link: LinkType::from_number(linktype),
            linktype,
            snaplen: idb.snaplen,
            ts_units_per_sec: units,
            ts_offset_s: idb.if_tsoffset,
        },
        problem,
    )
}

fn parse(block: &[u8], big_endian: bool) -> Option<Block<'_>> {
    let parsed = if big_endian {
        parse_block_be(block)
    } else {
        parse_block_le(block)
    };
    parsed.ok().map(|(_, b)| b)
}

/// Reads the SHB and every block before the first packet: the interfaces a split starts with.
pub(crate) fn read_preamble(path: &Path, bytes: &[u8]) -> Result<(Section, u64), CaptureError> {
    let malformed = |offset: usize, what| CaptureError::MalformedPcapng {
        path: path.to_path_buf(),
        offset: offset as u64,
        what,
    };
    let Some((_, len, big_endian)) = block_frame(bytes, 0, false) else {
        return Err(if bytes.len() < MIN_BLOCK {
            CaptureError::TruncatedHeader {
                path: path.to_path_buf(),
                offset: 0,
                len: bytes.len() as u64,
            }
        } else {
            malformed(0, "section header byte-order magic")
        });
    };
    if !framing_ok(len) || len > bytes.len() {
        return Err(malformed(0, "section header block length"));
    }
    if let Some((major, minor)) = unknown_version(bytes, 0, big_endian) {
        return Err(CaptureError::PcapngVersion {
            path: path.to_path_buf(),
            offset: 0,
            major,
            minor,
        });
    }
    let mut section = Section {
        big_endian,
        interfaces: Vec::new(),
        unknown_version: None,
    };
    let mut p = 0usize;
    while p < bytes.len() {
        let Some((block_type, len, be)) = block_frame(bytes, p, section.big_endian) else {
            break;
        };
        let unknown = block_type == SHB_TYPE && unknown_version(bytes, p, be).is_some();
        if matches!(block_type, 2 | 3 | 6) || !framing_ok(len) || p + len > bytes.len() || unknown {
            break; // the first packet, or what the record reader will report
        }
        match parse(&bytes[p..p + len], be) {
            Some(Block::SectionHeader(_)) => {
                section = Section {
                    big_endian: be,
                    interfaces: Vec::new(),
                    unknown_version: None,
                }
            }
            Some(Block::InterfaceDescription(idb)) => section.interfaces.push(interface_of(&idb).0),
            None if p == 0 => return Err(malformed(0, "section header block")),
            _ => {}
        }
        p += len;
    }
    if section.interfaces.is_empty() && p < bytes.len() {
        return Err(malformed(
            p,
            "file: packets before any interface description",
        ));
    }
    if !section.interfaces.is_empty() && section.interfaces.iter().all(|i| !i.link.is_supported()) {
        return Err(CaptureError::UnsupportedLinkType {
            path: path.to_path_buf(),
            linktype: section.interfaces[0].linktype,
        });
    }
    Ok((section, p as u64))
}

/// The content of a pcapng Decryption Secrets Block (block type 0x0A): what `editcap --inject-secrets`
/// and Wireshark write to make a capture decryptable on its own. Opaque here: a TLS key log
/// ([`DecryptionSecrets::TLS_KEY_LOG`]) is read by pcapsleuth-ssl.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecryptionSecrets {
    /// The secrets' type: `TLSK` (0x544c534b) for an NSS key log, `WGKL` for WireGuard, ...
    pub secrets_type: u32,
    /// The secrets, as the block holds them (padding removed).
    pub data: Vec<u8>,
}

impl DecryptionSecrets {
    /// `TLSK`: an NSS key log (`SSLKEYLOGFILE` lines).
    pub const TLS_KEY_LOG: u32 = 0x544c_534b;
}

/// The Decryption Secrets Blocks among `preamble`'s blocks (the blocks of a pcapng before its first
/// packet, where editcap and Wireshark write them).
pub(crate) fn decryption_secrets(preamble: &[u8]) -> Vec<DecryptionSecrets> {
    const DSB_TYPE: u32 = 0x0000_000A;
    let mut out = Vec::new();
    let (mut p, mut big_endian) = (0usize, false);
    while let Some((block_type, len, be)) = block_frame(preamble, p, big_endian) {
        if !framing_ok(len) || p + len > preamble.len() {
            break;
        }
        big_endian = be;
        if block_type == DSB_TYPE {
            if let Some(Block::DecryptionSecrets(dsb)) = parse(&preamble[p..p + len], be) {
                let n = usize::try_from(dsb.secrets_len).unwrap_or(usize::MAX);
                out.push(DecryptionSecrets {
                    secrets_type: dsb.secrets_type.0,
                    data: dsb.data.get(..n).unwrap_or(dsb.data).to_vec(),
                });
            }
        }
        p += len;
    }
    out
}

/// Whether a chain of valid blocks starts at `p`: `None` when the bytes end before its first block does
/// (a block may start there, which more bytes would show).
fn chain(bytes: &[u8], mut p: usize, mut big_endian: bool) -> Option<bool> {
    for i in 0..RESYNC_CHAIN {
        if i > 0 && p >= bytes.len() {
            return Some(true);
        }
        let Some((block_type, len, be)) = block_frame(bytes, p, big_endian) else {
            return if i == 0 && bytes.len() - p.min(bytes.len()) < MIN_BLOCK {
                None
            } else {
                Some(false)
            };
        };
        if !KNOWN_TYPES.contains(&block_type) || !framing_ok(len) {
            return Some(false);
        }
        if p + len > bytes.len() {
            return (i > 0).then_some(true);
        }
        if word(bytes, p + len - 4, be) != Some(len as u32) {
            return Some(false);
        }
        big_endian = be;
        p += len;
    }
    Some(true)
}

fn chain_at(bytes: &[u8], p: usize, big_endian: bool) -> bool {
    chain(bytes, p, big_endian) == Some(true)
}

/// In a window that more bytes follow: the first 4-byte-aligned offset from `from` on where a chain of
/// blocks starts (`Ok`), or where one may start but the window ends before its first block does (`Err`:
/// to be read again with the next window's bytes; the window's end when nothing can start).
fn resync_in_window(bytes: &[u8], from: usize, big_endian: bool) -> Result<usize, usize> {
    let mut p = from.next_multiple_of(4);
    while p < bytes.len() {
        match chain(bytes, p, big_endian) {
            Some(true) => return Ok(p),
            None => return Err(p),
            Some(false) => p += 4,
        }
    }
    Err(bytes.len())
}

/// First 4-byte-aligned offset in `[from, limit)` where a chain of valid blocks starts.
pub(crate) fn resync(bytes: &[u8], from: usize, limit: usize, big_endian: bool) -> Option<usize> {
    let start = from.next_multiple_of(4);
    (start..limit.min(bytes.len()))
        .step_by(4)
        .find(|&p| chain_at(bytes, p, big_endian))
}

pub(crate) fn timestamp(iface: &Interface, high: u32, low: u32) -> Timestamp {
    let units = (i128::from(high) << 32) | i128::from(low);
    let ns = units * 1_000_000_000 / i128::from(iface.ts_units_per_sec)
        + i128::from(iface.ts_offset_s) * 1_000_000_000;
    Timestamp(ns.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64)
}

pub(crate) fn next_record<'a>(r: &mut RecordReader<'a>) -> Option<Record<'a>> {
    let bytes: &'a [u8] = r.bytes;
    if r.section.unknown_version.is_some() {
        // Nothing after a section of an unknown version is read: its bytes are passed over to the end
        // (of the file, or of a stream's window, so that the next window starts past them).
        r.pos = bytes.len().max(r.pos);
        return None;
    }
    loop {
        if r.pos >= r.end || r.pos >= bytes.len() {
            return None;
        }
        let at = r.pos;
        let frame = block_frame(bytes, at, r.section.big_endian);
        let (block_type, len, be) = match frame {
            Some((t, len, be)) if framing_ok(len) && at + len <= bytes.len() => {
                if word(bytes, at + len - 4, be) == Some(len as u32) {
                    (t, len, be)
                } else {
                    corrupt(r, at, "block length not repeated at the block's end".into());
                    continue;
                }
            }
            Some((_, len, _)) if framing_ok(len) => {
                truncated_tail(r, at, len as u64);
                return None;
            }
            None if bytes.len() - at < MIN_BLOCK => {
                truncated_tail(r, at, MIN_BLOCK as u64);
                return None;
            }
            Some((_, len, _)) => {
                corrupt(r, at, format!("block length {len} impossible"));
                continue;
            }
            None => {
                corrupt(r, at, "unreadable block header".into());
                continue;
            }
        };
        r.pos = at + len;
        let raw = &bytes[at..at + len];
        // Only blocks that change state or carry packets are parsed; the rest are skipped by length.
        if !matches!(block_type, SHB_TYPE | 1 | 3 | 6) {
            continue;
        }
        if block_type == SHB_TYPE {
            if let Some((major, minor)) = unknown_version(bytes, at, be) {
                r.damage.push(Damage {
                    input: 0,
                    offset: r.base + at as u64,
                    kind: DamageKind::UnknownPcapngVersion { major, minor },
                });
                r.section = Arc::new(Section {
                    big_endian: be,
                    interfaces: Vec::new(),
                    unknown_version: Some((major, minor)),
                });
                r.pos = bytes.len();
                return None;
            }
        }
        match parse(raw, be) {
            Some(Block::SectionHeader(_)) => {
                r.section = Arc::new(Section {
                    big_endian: be,
                    interfaces: Vec::new(),
                    unknown_version: None,
                });
            }
            Some(Block::InterfaceDescription(idb)) => {
                let (iface, problem) = interface_of(&idb);
                if let Some(reason) = problem {
                    r.damage.push(Damage {
                        input: 0,
                        offset: r.base + at as u64,
                        kind: DamageKind::BadInterface { reason },
                    });
                }
                Arc::make_mut(&mut r.section).interfaces.push(iface);
            }
            Some(Block::EnhancedPacket(epb)) => {
                let Some(iface) = r.section.interfaces.get(epb.if_id as usize) else {
                    bad_interface(r, at, epb.if_id);
                    continue;
                };
                let caplen = (epb.caplen as usize).min(epb.data.len());
                return Some(Record {
                    offset: r.base + at as u64,
                    raw,
                    data: &epb.data[..caplen],
                    orig_len: epb.origlen,
                    ts: timestamp(iface, epb.ts_high, epb.ts_low),
                    link: iface.link,
                    interface: epb.if_id,
                });
            }
            Some(Block::SimplePacket(spb)) => {
                let Some(iface) = r.section.interfaces.first() else {
                    bad_interface(r, at, 0);
                    continue;
                };
                let mut caplen = (spb.origlen as usize).min(spb.data.len());
                if iface.snaplen > 0 {
                    caplen = caplen.min(iface.snaplen as usize);
                }
                // An SPB carries no timestamp; like Wireshark we give it none (the epoch).
                return Some(Record {
                    offset: r.base + at as u64,
                    raw,
                    data: &spb.data[..caplen],
                    orig_len: spb.origlen,
                    ts: Timestamp(0),
                    link: iface.link,
                    interface: 0,
                });
            }
            _ => {
                r.damage.push(Damage {
                    input: 0,
                    offset: r.base + at as u64,
                    kind: DamageKind::CorruptRecord {
                        reason: format!("malformed block of type {block_type:#x}"),
                        skipped: len as u64,
                    },
                });
            }
        }
    }
}

fn bad_interface(r: &mut RecordReader<'_>, at: usize, id: u32) {
    r.damage.push(Damage {
        input: 0,
        offset: r.base + at as u64,
        kind: DamageKind::BadInterface {
            reason: format!("packet block names interface {id}, which no IDB defined"),
        },
    });
}

fn truncated_tail(r: &mut RecordReader<'_>, at: usize, need: u64) {
    if r.tail == Tail::More {
        r.stop_at(at); // the block continues in the next window
        return;
    }
    let len = r.bytes.len();
    r.damage.push(Damage {
        input: 0,
        offset: r.base + at as u64,
        kind: DamageKind::TruncatedTail {
            have: (len - at) as u64,
            need,
        },
    });
    r.pos = len;
}

fn corrupt(r: &mut RecordReader<'_>, at: usize, reason: String) {
    let bytes: &[u8] = r.bytes;
    let be = r.section.big_endian;
    // In a window of a stream, a block that may begin before the window's end is read again with the
    // next window's bytes, rather than passed over with the garbage before it.
    let (next, wait) = match r.tail {
        Tail::Final => (
            resync(bytes, at + 1, bytes.len(), be).unwrap_or(bytes.len()),
            false,
        ),
        Tail::More => match resync_in_window(bytes, at + 1, be) {
            Ok(p) => (p, false),
            Err(p) => (p, true),
        },
    };
    r.damage.push(Damage {
        input: 0,
        offset: r.base + at as u64,
        kind: DamageKind::CorruptRecord {
            reason,
            skipped: (next - at) as u64,
        },
    });
    if wait {
        r.stop_at(next);
    } else {
        r.pos = next;
    }
}
