//! IP fragments of any offsets, lengths, flags, identifications, orders and times through the decoder and
//! `IpReassembler`: nothing may panic, the memory held stays within its bound, and every datagram made is
//! made of its fragments' bytes.
//!
//! Input: byte 0 picks IPv4 or IPv6 (bit 0) and whether fragments of one identification may carry
//! different bytes at the same offset (bit 1); then 6 bytes per fragment: identification (2 bits of byte 0)
//! and More Fragments (bit 2), offset in 8-byte units (bytes 1-2, big-endian, 13 bits), length (byte 3,
//! times 1 to 8 by bits 3-4 of byte 0, so that some fragments are long), milliseconds since the previous
//! fragment (byte 4, times 256 by bit 5 of byte 0: past the 30 s timeout sometimes), and the value the data
//! is drawn from (byte 5).
#![no_main]

use libfuzzer_sys::fuzz_target;
use pcapsleuth_capture::{LinkType, Timestamp};
use pcapsleuth_flow::{decode, Decoded, FrameRef, IpReassembler, REASSEMBLY_MEMORY};

/// The byte a fragment of datagram `id` carries at `offset` of the payload, unless `conflicting`.
fn byte(id: u32, offset: usize, seed: u8, conflicting: bool) -> u8 {
    let b = (id as usize * 31 + offset * 7) % 251;
    if conflicting {
        (b as u8).wrapping_add(seed)
    } else {
        b as u8
    }
}

fn packet(v6: bool, id: u32, offset: usize, more: bool, data: &[u8]) -> Vec<u8> {
    let mut ip = Vec::with_capacity(48 + data.len());
    if v6 {
        ip.extend_from_slice(&[0x60, 0, 0, 0]);
        ip.extend_from_slice(&((8 + data.len()) as u16).to_be_bytes());
        ip.extend_from_slice(&[44, 64]);
        ip.extend_from_slice(&[0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
        ip.extend_from_slice(&[0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
        ip.extend_from_slice(&[6, 0]);
        ip.extend_from_slice(&((offset as u16 & 0xfff8) | u16::from(more)).to_be_bytes());
        ip.extend_from_slice(&id.to_be_bytes());
    } else {
        ip.extend_from_slice(&[0x45, 0]);
        ip.extend_from_slice(&((20 + data.len()) as u16).to_be_bytes());
        ip.extend_from_slice(&(id as u16).to_be_bytes());
        ip.extend_from_slice(&(u16::from(more) << 13 | (offset / 8) as u16).to_be_bytes());
        ip.extend_from_slice(&[64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
    }
    ip.extend_from_slice(data);
    ip
}

fuzz_target!(|input: &[u8]| {
    let Some((&mode, rest)) = input.split_first() else {
        return;
    };
    let (v6, conflicting) = (mode & 1 != 0, mode & 2 != 0);
    let mut r = IpReassembler::default();
    let mut ms: i64 = 0;
    let mut fed = 0u64;
    let mut out = Vec::new();
    for (i, f) in rest.chunks_exact(6).enumerate() {
        let id = u32::from(f[0] & 3);
        let more = f[0] & 4 != 0;
        let offset = usize::from(u16::from_be_bytes([f[1], f[2]]) & 0x1fff) * 8;
        let scale = 1 + usize::from((f[0] >> 3) & 3) * 2 + usize::from((f[0] >> 3) & 3 == 3);
        let len = (usize::from(f[3]) * scale).min(65_000);
        ms += i64::from(f[4]) * if f[0] & 0x20 != 0 { 256 } else { 1 };
        let data: Vec<u8> = (0..len).map(|k| byte(id, offset + k, f[5], conflicting)).collect();
        let p = packet(v6, id, offset, more, &data);
        let Decoded::Fragment(frag) = decode(LinkType::RawIp, &p) else {
            continue; // offset 0 and no more fragments: IPv4 not fragmented
        };
        fed += 1;
        let at = FrameRef {
            frame: i as u64 + 1,
            ts: Timestamp(ms * 1_000_000),
        };
        out.clear();
        if let Some(d) = r.add(&frag, at, p.len() as u32, &mut out) {
            assert!(d.wire_len > 0 && d.first.frame <= at.frame);
            if !conflicting {
                // The datagram this fragment completed: every byte is its fragments' byte at that offset.
                let made = &d.packet[if v6 { 40 } else { 20 }..];
                for (k, &b) in made.iter().enumerate() {
                    assert_eq!(b, byte(id, k, 0, false), "byte {k}");
                }
            }
        }
        assert!(
            r.held() <= REASSEMBLY_MEMORY + 65_535 + 1_024,
            "held {} past the limit",
            r.held()
        );
    }
    let facts = r.finish(Some(Timestamp(ms * 1_000_000)));
    assert_eq!(facts.fragments, fed);
    assert!(facts.first_failures.len() <= 10);
    assert!(facts.first_failures.windows(2).all(|w| w[0].first <= w[1].first));
});
