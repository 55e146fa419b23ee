//! Endpoints and direction-free flow keys.

use std::cmp::Ordering;
use std::fmt;
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::net::IpAddr;

use serde::{Serialize, Serializer};

/// An IP address and TCP port, ordered by address (IPv4 before IPv6), then port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Endpoint {
    /// The IP address (v4 or v6).
    pub ip: IpAddr,
    /// The TCP port.
    pub port: u16,
}

impl Endpoint {
    /// An IPv4 endpoint as one integer, `address << 16 | port`, which orders as endpoints do; `None`
    /// for IPv6.
    ///
    /// Ordering and hashing run for every packet (flow keys): IPv4 endpoints, by far the most common,
    /// are handled as this integer rather than field by field and byte by byte.
    #[inline]
    pub fn v4_word(&self) -> Option<u64> {
        match self.ip {
            IpAddr::V4(a) => Some(u64::from(u32::from(a)) << 16 | u64::from(self.port)),
            IpAddr::V6(_) => None,
        }
    }
}

impl Ord for Endpoint {
    #[inline]
    fn cmp(&self, o: &Self) -> Ordering {
        match (self.v4_word(), o.v4_word()) {
            (Some(a), Some(b)) => a.cmp(&b),
            _ => (self.ip, self.port).cmp(&(o.ip, o.port)),
        }
    }
}

impl PartialOrd for Endpoint {
    #[inline]
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

impl Hash for Endpoint {
    #[inline]
    fn hash<H: Hasher>(&self, h: &mut H) {
        if let Some(w) = self.v4_word() {
            h.write_u64(w);
        } else if let IpAddr::V6(a) = self.ip {
            h.write_u128(u128::from(a));
            h.write_u64(1 << 32 | u64::from(self.port));
        }
    }
}

impl fmt::Display for Endpoint {
    /// `10.0.0.1:3306`, `[fd00::1]:3306` (the form Wireshark and `ss` print).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.ip {
            IpAddr::V4(a) => write!(f, "{a}:{}", self.port),
            IpAddr::V6(a) => write!(f, "[{a}]:{}", self.port),
        }
    }
}

impl Serialize for Endpoint {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl std::str::FromStr for Endpoint {
    type Err = String;
    /// Parses `ip:port` or `[ipv6]:port`.
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("expected IP:PORT or [IPv6]:PORT, got `{s}`");
        let (ip, port) = if let Some(rest) = s.strip_prefix('[') {
            let (ip, port) = rest.split_once("]:").ok_or_else(bad)?;
            (ip, port)
        } else {
            s.rsplit_once(':').ok_or_else(bad)?
        };
        Ok(Endpoint {
            ip: ip.parse().map_err(|_| bad())?,
            port: port.parse().map_err(|_| bad())?,
        })
    }
}

/// Which endpoint of a [`FlowKey`] sent a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Side {
    /// The endpoint that sorts first: [`FlowKey::lo`].
    Lo = 0,
    /// The endpoint that sorts last: [`FlowKey::hi`].
    Hi = 1,
}

impl Side {
    /// The other endpoint's side.
    pub fn other(self) -> Side {
        match self {
            Side::Lo => Side::Hi,
            Side::Hi => Side::Lo,
        }
    }
    /// 0 for `Lo`, 1 for `Hi`: for arrays indexed by side.
    pub fn index(self) -> usize {
        self as usize
    }
}

/// A TCP 4-tuple without direction: `lo` sorts before `hi`, so both directions map to one key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FlowKey {
    /// The endpoint that sorts first (address, then port; IPv4 before IPv6): not necessarily the client.
    pub lo: Endpoint,
    /// The endpoint that sorts last.
    pub hi: Endpoint,
}

impl FlowKey {
    /// The key of a packet from `src` to `dst`, and which side sent it.
    #[inline]
    pub fn of(src: Endpoint, dst: Endpoint) -> (FlowKey, Side) {
        if src <= dst {
            (FlowKey { lo: src, hi: dst }, Side::Lo)
        } else {
            (FlowKey { lo: dst, hi: src }, Side::Hi)
        }
    }

    /// The endpoint on `side`.
    pub fn endpoint(&self, side: Side) -> Endpoint {
        match side {
            Side::Lo => self.lo,
            Side::Hi => self.hi,
        }
    }

    /// A 64-bit hash that does not depend on the process ([`FlowHasher`]), so bucketing flows is
    /// deterministic.
    #[inline]
    pub fn stable_hash(&self) -> u64 {
        let mut h = FlowHasher::default();
        self.hash(&mut h);
        h.finish()
    }

    /// Which of `n` buckets this flow belongs to (multiply-shift on the hash's high bits).
    #[inline]
    pub fn bucket(&self, n: usize) -> usize {
        ((u128::from(self.stable_hash()) * n as u128) >> 64) as usize
    }
}

/// The Fx hash (rotate, xor, multiply per word), as rustc uses for small keys: several times faster than
/// SipHash on 4-tuples, and the same in every process. It does not resist collision attacks; a capture
/// crafted to collide only slows its own analysis.
#[derive(Debug, Default, Clone, Copy)]
pub struct FlowHasher(u64);

const FX_SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FlowHasher {
    #[inline(always)]
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(FX_SEED);
    }
}

impl Hasher for FlowHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes([
                c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7],
            ]));
        }
        for &b in chunks.remainder() {
            self.add(u64::from(b));
        }
    }
    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }
    #[inline]
    fn write_u16(&mut self, i: u16) {
        self.add(u64::from(i));
    }
    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    #[inline]
    fn write_u128(&mut self, i: u128) {
        self.add(i as u64);
        self.add((i >> 64) as u64);
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

/// Hash maps keyed by flows use [`FlowHasher`].
pub type FlowBuildHasher = BuildHasherDefault<FlowHasher>;

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn endpoint() -> impl Strategy<Value = Endpoint> {
        let ip = prop_oneof![
            any::<[u8; 4]>().prop_map(IpAddr::from),
            any::<[u8; 16]>().prop_map(IpAddr::from),
            // Few distinct values, so that equal addresses (and ports) are compared too.
            (0u8..3).prop_map(|b| IpAddr::from([10, 0, 0, b])),
        ];
        (ip, prop_oneof![any::<u16>(), 3305u16..3308]).prop_map(|(ip, port)| Endpoint { ip, port })
    }

    proptest! {
        /// The hand-written order is the order of the (address, port) pair.
        #[test]
        fn endpoints_order_by_address_then_port(a in endpoint(), b in endpoint()) {
            prop_assert_eq!(a.cmp(&b), (a.ip, a.port).cmp(&(b.ip, b.port)));
            prop_assert_eq!(a == b, a.stable_hash_eq(&b));
        }
    }

    impl Endpoint {
        /// Equal endpoints hash alike (and here, distinct ones differently).
        fn stable_hash_eq(&self, o: &Endpoint) -> bool {
            let h = |e: &Endpoint| {
                let mut h = FlowHasher::default();
                e.hash(&mut h);
                h.finish()
            };
            h(self) == h(o)
        }
    }

    #[test]
    fn both_directions_share_one_key() {
        let a: Endpoint = "10.0.0.2:40000".parse().unwrap();
        let b: Endpoint = "10.0.0.1:3306".parse().unwrap();
        let (k1, s1) = FlowKey::of(a, b);
        let (k2, s2) = FlowKey::of(b, a);
        assert_eq!(k1, k2);
        assert_ne!(s1, s2);
    }

    #[test]
    fn ipv6_endpoints_print_and_parse_with_brackets() {
        let e: Endpoint = "[fd77::1]:3306".parse().unwrap();
        assert_eq!(e.to_string(), "[fd77::1]:3306");
        assert!("fd77::1:3306x".parse::<Endpoint>().is_err());
    }
}
