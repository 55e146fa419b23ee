//! The encoding of a connection at rest ([`crate::PackedState`]), and nothing of what it encodes: each
//! structure (the tracker's, and the handshake's) packs and unpacks itself with these.
//!
//! Each structure begins with a bit set saying which of its options are present and the state of its
//! flags, then its values in a fixed order, integers as LEB128 varints (signed ones zigzagged), frames
//! and timestamps as differences from the connection's first packet (most are close to it). Packing is a
//! function of the state, so equal states pack to equal bytes.

use pcapsleuth_capture::Timestamp;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::frame::FrameRef;
use crate::key::{Endpoint, FlowKey};

/// Writes one packed state (see the [module documentation](self)).
pub(crate) struct Packer<'a> {
    out: &'a mut Vec<u8>,
    base: FrameRef,
}

impl<'a> Packer<'a> {
    /// A packer whose frames and timestamps are written relative to `base`.
    pub(crate) fn new(out: &'a mut Vec<u8>, base: FrameRef) -> Self {
        Packer { out, base }
    }

    pub(crate) fn u64(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.out.push(v as u8 | 0x80);
            v >>= 7;
        }
        self.out.push(v as u8);
    }

    pub(crate) fn u32(&mut self, v: u32) {
        self.u64(u64::from(v));
    }

    pub(crate) fn i64(&mut self, v: i64) {
        self.u64(((v << 1) ^ (v >> 63)) as u64);
    }

    pub(crate) fn bits(&mut self, bits: u32) {
        self.u32(bits);
    }

    /// A timestamp, as its difference from the base's (wrapping: any value comes back).
    pub(crate) fn ts(&mut self, t: Timestamp) {
        self.i64(t.0.wrapping_sub(self.base.ts.0));
    }

    pub(crate) fn frame(&mut self, f: FrameRef) {
        self.i64(f.frame.wrapping_sub(self.base.frame) as i64);
        self.ts(f.ts);
    }

    /// A frame whose presence the bit set says: written only when present.
    pub(crate) fn opt_frame(&mut self, f: Option<FrameRef>) {
        if let Some(f) = f {
            self.frame(f);
        }
    }

    pub(crate) fn endpoint(&mut self, e: &Endpoint) {
        match e.ip {
            IpAddr::V4(a) => self.out.extend_from_slice(&a.octets()),
            IpAddr::V6(a) => self.out.extend_from_slice(&a.octets()),
        }
        self.out.extend_from_slice(&e.port.to_le_bytes());
    }

    /// The flow key: which endpoints are IPv6, then both.
    pub(crate) fn key(&mut self, k: &FlowKey) {
        self.out
            .push(u8::from(k.lo.ip.is_ipv6()) | u8::from(k.hi.ip.is_ipv6()) << 1);
        self.endpoint(&k.lo);
        self.endpoint(&k.hi);
    }
}

/// Reads what a [`Packer`] wrote, in the same order. It reads only bytes it wrote itself; past their
/// end it reads zeros rather than fail, so that nothing here can panic.
pub(crate) struct Unpacker<'a> {
    bytes: &'a [u8],
    base: FrameRef,
}

impl<'a> Unpacker<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Unpacker {
            bytes,
            base: FrameRef {
                frame: 0,
                ts: Timestamp(0),
            },
        }
    }

    /// Frames and timestamps read from here on are relative to `base`.
    pub(crate) fn set_base(&mut self, base: FrameRef) {
        self.base = base;
    }

    fn byte(&mut self) -> u8 {
        match self.bytes.split_first() {
            Some((&b, rest)) => {
                self.bytes = rest;
                b
            }
            None => 0,
        }
    }

    #[inline]
    pub(crate) fn u64(&mut self) -> u64 {
        let mut v = 0u64;
        let mut shift = 0;
        while let Some((&b, rest)) = self.bytes.split_first() {
            self.bytes = rest;
            v |= u64::from(b & 0x7f) << shift;
            if b < 0x80 || shift >= 63 {
                break;
            }
            shift += 7;
        }
        v
    }

    pub(crate) fn u32(&mut self) -> u32 {
        self.u64() as u32
    }

    pub(crate) fn i64(&mut self) -> i64 {
        let v = self.u64();
        (v >> 1) as i64 ^ -((v & 1) as i64)
    }

    pub(crate) fn bits(&mut self) -> u32 {
        self.u32()
    }

    pub(crate) fn ts(&mut self) -> Timestamp {
        Timestamp(self.i64().wrapping_add(self.base.ts.0))
    }

    pub(crate) fn frame(&mut self) -> FrameRef {
        let frame = self.base.frame.wrapping_add(self.i64() as u64);
        FrameRef {
            frame,
            ts: self.ts(),
        }
    }

    /// A frame the bit set says is present (`present`), else `None`.
    pub(crate) fn opt_frame(&mut self, present: bool) -> Option<FrameRef> {
        present.then(|| self.frame())
    }

    fn array<const N: usize>(&mut self) -> [u8; N] {
        let mut a = [0u8; N];
        for b in &mut a {
            *b = self.byte();
        }
        a
    }

    fn endpoint(&mut self, v6: bool) -> Endpoint {
        let ip = if v6 {
            IpAddr::V6(Ipv6Addr::from(self.array::<16>()))
        } else {
            IpAddr::V4(Ipv4Addr::from(self.array::<4>()))
        };
        Endpoint {
            ip,
            port: u16::from_le_bytes(self.array::<2>()),
        }
    }

    pub(crate) fn key(&mut self) -> FlowKey {
        let v6 = self.byte();
        let lo = self.endpoint(v6 & 1 != 0);
        let hi = self.endpoint(v6 & 2 != 0);
        FlowKey { lo, hi }
    }

    /// Whether every byte was read (what was packed is what was unpacked).
    #[cfg(test)]
    pub(crate) fn at_end(&self) -> bool {
        self.bytes.is_empty()
    }
}

/// Bit `n` of a bit set, for a condition.
#[inline]
pub(crate) fn bit(n: u32, on: bool) -> u32 {
    u32::from(on) << n
}

/// Whether bit `n` of `bits` is set.
#[inline]
pub(crate) fn has(bits: u32, n: u32) -> bool {
    bits >> n & 1 != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_come_back_whatever_their_size() {
        let base = FrameRef {
            frame: 77,
            ts: Timestamp(1_700_000_000_123_456_789),
        };
        let values = [
            0u64,
            1,
            127,
            128,
            300,
            u32::MAX as u64,
            u64::MAX - 1,
            u64::MAX,
        ];
        let signed = [0i64, 1, -1, 63, -64, 64, i64::MIN, i64::MAX];
        let frames = [
            base,
            FrameRef {
                frame: 0,
                ts: Timestamp(i64::MIN),
            },
            FrameRef {
                frame: u64::MAX,
                ts: Timestamp(i64::MAX),
            },
        ];
        let mut out = Vec::new();
        let mut p = Packer::new(&mut out, base);
        for v in values {
            p.u64(v);
        }
        for v in signed {
            p.i64(v);
        }
        for f in frames {
            p.frame(f);
        }
        let mut u = Unpacker::new(&out);
        u.set_base(base);
        for v in values {
            assert_eq!(u.u64(), v);
        }
        for v in signed {
            assert_eq!(u.i64(), v);
        }
        for f in frames {
            assert_eq!(u.frame(), f);
        }
        assert!(u.at_end());
        // Past the end, zeros, not a panic.
        assert_eq!((u.u64(), u.key().lo.port), (0, 0));
    }
}
