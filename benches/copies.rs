//! Copies of a real capture's records, shifted in time and with distinct client addresses: a long capture
//! built from a short real one (the benchmark capture, and the week-long capture of the tests).

use pcapsleuth::capture::Record;
use pcapsleuth::flow::{decode, Decoded};

/// Writes into `buf` record `r` of a classic little-endian µs pcap with Ethernet link type (the fixtures
/// are), as copy number `copy`: its time shifted by `copy * period_us`, and its client's IPv4 address
/// rewritten (the last two octets take the copy number) so that each copy's connections are distinct.
/// Checksums are not recomputed, as no reader checks them.
pub fn shifted_record(r: &Record<'_>, copy: u64, period_us: u64, buf: &mut Vec<u8>) {
    buf.clear();
    buf.extend_from_slice(r.raw);
    let ts_us = (r.ts.0 / 1000) as u64 + copy * period_us;
    buf[0..4].copy_from_slice(&((ts_us / 1_000_000) as u32).to_le_bytes());
    buf[4..8].copy_from_slice(&((ts_us % 1_000_000) as u32).to_le_bytes());
    if let Decoded::Tcp(seg) = decode(r.link, r.data) {
        // The client is the side with the higher port; its IPv4 address sits at 26 (src) or 30 (dst) of
        // the Ethernet frame, i.e. 16 + 26/30 in the record.
        let client_is_src = seg.src_port > seg.dst_port;
        let at = 16 + if client_is_src { 26 } else { 30 };
        if let Some(addr) = buf.get_mut(at + 2..at + 4) {
            addr.copy_from_slice(&((copy % 60_000) as u16 + 1024).to_be_bytes());
        }
    }
}
