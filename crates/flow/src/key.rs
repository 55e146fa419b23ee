//! Endpoints and direction-free flow keys.

use std::fmt;
use std::net::IpAddr;

use serde::{Serialize, Serializer};

/// An IP address and TCP port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Endpoint {
    pub ip: IpAddr,
    pub port: u16,
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
    Lo = 0,
    Hi = 1,
}

impl Side {
    pub fn other(self) -> Side {
        match self {
            Side::Lo => Side::Hi,
            Side::Hi => Side::Lo,
        }
    }
    pub fn index(self) -> usize {
        self as usize
    }
}

/// A TCP 4-tuple without direction: `lo` sorts before `hi`, so both directions map to one key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FlowKey {
    pub lo: Endpoint,
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

    pub fn endpoint(&self, side: Side) -> Endpoint {
        match side {
            Side::Lo => self.lo,
            Side::Hi => self.hi,
        }
    }

    /// A stable 64-bit hash (FNV-1a over the key's bytes) that does not depend on the process, so that
    /// bucketing flows is deterministic.
    pub fn stable_hash(&self) -> u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        let mut eat = |bytes: &[u8]| {
            for &b in bytes {
                h ^= u64::from(b);
                h = h.wrapping_mul(0x0100_0000_01b3);
            }
        };
        for e in [self.lo, self.hi] {
            match e.ip {
                IpAddr::V4(a) => eat(&a.octets()),
                IpAddr::V6(a) => eat(&a.octets()),
            }
            eat(&e.port.to_be_bytes());
        }
        h
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
