//! From a record's link-layer bytes to the TCP facts tracking needs, zero-copy (etherparse's lax slicing,
//! so packets cut by the snap length still decode as far as their bytes go).

use std::net::IpAddr;

use etherparse::{EtherType, LaxNetSlice, LaxSlicedPacket, TransportSlice};
use pcapsleuth_capture::LinkType;

use crate::fields::{be16, ETHERTYPE_IPV4, ETHERTYPE_IPV6};
use crate::{fragments, tunnel, Endpoint, IpFragment};

/// TCP header flag bits, as on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct TcpFlags(pub u8);

impl TcpFlags {
    /// FIN (RFC 9293): the sender has no more data to send.
    pub const FIN: u8 = 0x01;
    /// SYN: synchronise sequence numbers (opens a connection).
    pub const SYN: u8 = 0x02;
    /// RST: reset the connection.
    pub const RST: u8 = 0x04;
    /// PSH: push the data to the receiving application.
    pub const PSH: u8 = 0x08;
    /// ACK: the acknowledgment number is significant.
    pub const ACK: u8 = 0x10;
    /// Whether FIN is set.
    pub fn fin(self) -> bool {
        self.0 & Self::FIN != 0
    }
    /// Whether SYN is set.
    pub fn syn(self) -> bool {
        self.0 & Self::SYN != 0
    }
    /// Whether RST is set.
    pub fn rst(self) -> bool {
        self.0 & Self::RST != 0
    }
    /// Whether ACK is set.
    pub fn ack(self) -> bool {
        self.0 & Self::ACK != 0
    }
}

/// One decoded TCP segment; `payload` borrows the record (possibly shorter than `payload_len` when the
/// snap length cut the packet).
#[derive(Debug, Clone, Copy)]
pub struct TcpSegment<'a> {
    /// The sender's IP address (of the innermost packet, for a tunnelled one).
    pub src: IpAddr,
    /// The sender's TCP port.
    pub src_port: u16,
    /// The receiver's IP address.
    pub dst: IpAddr,
    /// The receiver's TCP port.
    pub dst_port: u16,
    /// The sequence number as on the wire (absolute, not relative to the ISN as Wireshark shows it).
    pub seq: u32,
    /// The acknowledgment number as on the wire (meaningful only when `flags` has ACK).
    pub ack: u32,
    /// The window field as on the wire, before any window scaling.
    pub window: u16,
    /// The TCP flags.
    pub flags: TcpFlags,
    /// The TCP options (the header after its first 20 bytes), which directly precede the payload in
    /// the record.
    pub options: &'a [u8],
    /// Captured payload bytes.
    pub payload: &'a [u8],
    /// Payload length on the wire, from the IP header.
    pub payload_len: u32,
    /// The IP header's TTL (IPv6: its hop limit) as the packet reached the capture point (of the
    /// innermost packet, for a tunnelled one): what tells a packet forged by a device on the path from its
    /// endpoint's own.
    pub ttl: u8,
}

impl TcpSegment<'_> {
    /// The sender's address and port.
    pub fn src_endpoint(&self) -> Endpoint {
        Endpoint {
            ip: self.src,
            port: self.src_port,
        }
    }

    /// The receiver's address and port.
    pub fn dst_endpoint(&self) -> Endpoint {
        Endpoint {
            ip: self.dst,
            port: self.dst_port,
        }
    }
}

/// What a packet turned out to be.
#[derive(Debug, Clone, Copy)]
pub enum Decoded<'a> {
    /// A TCP segment, in an IP packet that is not fragmented.
    Tcp(TcpSegment<'a>),
    /// A fragment of an IP datagram (of the innermost packet, for a tunnelled one), to be put back
    /// together with the others by an [`crate::IpReassembler`]: what it carries is known only then.
    Fragment(IpFragment<'a>),
    /// IP but not TCP (UDP, ICMP, ...).
    OtherIp,
    /// Not IP (ARP, LLDP, ...).
    NotIp,
    /// The link type is not one pcapsleuth decodes.
    UnsupportedLink,
    /// Too short or inconsistent to reach the TCP header (snap length below the headers, bad lengths).
    Undecodable,
}

/// Linux cooked v1 header length; the protocol field is its last two bytes.
const SLL_LEN: usize = 16;
/// Linux cooked v2 header length; the protocol field is its first two bytes.
const SLL2_LEN: usize = 20;

/// Decodes a packet of the given link type, through any tunnels (VXLAN, Geneve, GRE and ERSPAN, IP in
/// IP, MPLS) to the innermost TCP segment.
#[inline]
pub fn decode(link: LinkType, data: &[u8]) -> Decoded<'_> {
    decode_at(link, data, 0)
}

/// A packet [`decode_segment`] found no TCP segment in: the other answers of [`decode`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotTcp {
    /// As [`Decoded::Fragment`]: [`decode`] gives the fragment itself.
    Fragment,
    /// As [`Decoded::OtherIp`].
    OtherIp,
    /// As [`Decoded::NotIp`].
    NotIp,
    /// As [`Decoded::UnsupportedLink`].
    UnsupportedLink,
    /// As [`Decoded::Undecodable`].
    Undecodable,
}

/// [`decode`], with a TCP segment, the common case, returned by itself rather than in a [`Decoded`]: the
/// scan of every packet calls this, and the segment (some 90 bytes) is not moved into one enum and out
/// again (`Result<TcpSegment, NotTcp>` has the segment's own size and layout).
#[inline]
pub fn decode_segment(link: LinkType, data: &[u8]) -> Result<TcpSegment<'_>, NotTcp> {
    match fast_tcp(link, data) {
        Some(seg) => Ok(seg),
        None => match general_at(link, data, 0) {
            Decoded::Tcp(seg) => Ok(seg),
            Decoded::Fragment(_) => Err(NotTcp::Fragment),
            Decoded::OtherIp => Err(NotTcp::OtherIp),
            Decoded::NotIp => Err(NotTcp::NotIp),
            Decoded::UnsupportedLink => Err(NotTcp::UnsupportedLink),
            Decoded::Undecodable => Err(NotTcp::Undecodable),
        },
    }
}

#[inline]
fn decode_at(link: LinkType, data: &[u8], depth: u8) -> Decoded<'_> {
    match fast_tcp(link, data) {
        Some(seg) => Decoded::Tcp(seg),
        None => general_at(link, data, depth),
    }
}

/// Decodes what a tunnel carried: a TCP segment or an IP fragment, or else the outer packet counts as IP of
/// another protocol (a tunnel's own control traffic, or a port that only looked like a tunnel's).
fn carried<'a>(inner: Option<(LinkType, &'a [u8])>, depth: u8) -> Option<Decoded<'a>> {
    let (link, bytes) = inner?;
    if depth >= tunnel::MAX_DEPTH {
        return Some(Decoded::OtherIp);
    }
    Some(match decode_at(link, bytes, depth + 1) {
        found @ (Decoded::Tcp(_) | Decoded::Fragment(_)) => found,
        _ => Decoded::OtherIp,
    })
}

/// The common case, decoded by reading header fields in place: link header (Ethernet with VLAN tags,
/// cooked, raw, loopback) → IPv4 without fragmentation or IPv6 without extension headers → a TCP header
/// captured whole. Anything else returns `None` and goes to etherparse ([`decode_general`]), which this
/// must agree with wherever it answers (a test checks every packet of the real captures). It exists
/// because etherparse's general slicing cost half the scan time in profiles.
#[inline]
fn fast_tcp(link: LinkType, d: &[u8]) -> Option<TcpSegment<'_>> {
    let (ether_type, off) = link_header(link, d)?;
    let version = *d.get(off)? >> 4;
    let et = ether_type.unwrap_or(match version {
        4 => ETHERTYPE_IPV4,
        6 => ETHERTYPE_IPV6,
        _ => return None,
    });
    let (src, dst, tcp_at, ip_payload, ttl) = match (et, version) {
        (ETHERTYPE_IPV4, 4) => {
            // The fixed header's 20 bytes checked once, then read at constant offsets.
            let h: &[u8; 20] = d.get(off..off + 20)?.try_into().ok()?;
            let ihl = usize::from(h[0] & 0x0f) * 4;
            let total = usize::from(u16::from_be_bytes([h[2], h[3]]));
            let fragment = u16::from_be_bytes([h[6], h[7]]) & 0x3fff;
            if ihl < 20 || total < ihl || fragment != 0 || h[9] != 6 || d.len() < off + ihl {
                return None;
            }
            let src = IpAddr::V4(u32::from_be_bytes([h[12], h[13], h[14], h[15]]).into());
            let dst = IpAddr::V4(u32::from_be_bytes([h[16], h[17], h[18], h[19]]).into());
            (src, dst, off + ihl, total - ihl, h[8])
        }
        (ETHERTYPE_IPV6, 6) => {
            let h = d.get(off..off + 40)?;
            if h[6] != 6 {
                return None;
            }
            let payload = usize::from(u16::from_be_bytes([h[4], h[5]]));
            let src: [u8; 16] = h[8..24].try_into().ok()?;
            let dst: [u8; 16] = h[24..40].try_into().ok()?;
            (
                IpAddr::V6(src.into()),
                IpAddr::V6(dst.into()),
                off + 40,
                payload,
                h[7],
            )
        }
        _ => return None,
    };
    let tcp: &[u8; 20] = d.get(tcp_at..tcp_at + 20)?.try_into().ok()?;
    let header_len = usize::from(tcp[12] >> 4) * 4;
    if header_len < 20 || ip_payload < header_len || d.len() < tcp_at + header_len {
        return None;
    }
    let payload_end = d.len().min(tcp_at + ip_payload);
    let payload = &d[tcp_at + header_len..payload_end];
    Some(TcpSegment {
        src,
        src_port: u16::from_be_bytes([tcp[0], tcp[1]]),
        dst,
        dst_port: u16::from_be_bytes([tcp[2], tcp[3]]),
        seq: u32::from_be_bytes([tcp[4], tcp[5], tcp[6], tcp[7]]),
        ack: u32::from_be_bytes([tcp[8], tcp[9], tcp[10], tcp[11]]),
        window: u16::from_be_bytes([tcp[14], tcp[15]]),
        flags: TcpFlags(tcp[13] & 0x1f),
        options: &d[tcp_at + 20..tcp_at + header_len],
        payload,
        payload_len: ((ip_payload - header_len) as u32).max(payload.len() as u32),
        ttl,
    })
}

/// The link header's ether type (after any VLAN tags), where the link has one, and the length of the
/// header.
#[inline(always)]
fn link_header(link: LinkType, d: &[u8]) -> Option<(Option<u16>, usize)> {
    Some(match link {
        LinkType::Ethernet => {
            let mut et = be16(d, 12)?;
            let mut off = 14;
            while et == 0x8100 || et == 0x88A8 {
                et = be16(d, off + 2)?;
                off += 4;
            }
            (Some(et), off)
        }
        LinkType::LinuxSll => (Some(be16(d, SLL_LEN - 2)?), SLL_LEN),
        LinkType::LinuxSll2 => (Some(be16(d, 0)?), SLL2_LEN),
        LinkType::RawIp | LinkType::Ipv4 | LinkType::Ipv6 => (None, 0),
        LinkType::Null | LinkType::Loop => (None, 4),
        LinkType::Other(_) => return None,
    })
}

/// Decodes any packet with etherparse's lax slicing (VLAN, IPv6 extension headers, ...), and follows
/// tunnels to the packet they carry; IP fragments are told as such ([`Decoded::Fragment`]).
pub fn decode_general(link: LinkType, data: &[u8]) -> Decoded<'_> {
    general_at(link, data, 0)
}

fn general_at(link: LinkType, data: &[u8], depth: u8) -> Decoded<'_> {
    if let Some((et, off)) = link_header(link, data) {
        // MPLS is not sliced by etherparse: its label stack is popped here.
        if let Some(et) = et.filter(|&et| tunnel::is_mpls(et)) {
            let inner = data.get(off..).and_then(|b| tunnel::by_ether_type(et, b));
            return carried(inner, depth).unwrap_or(Decoded::Undecodable);
        }
        // Fragments are read here rather than from etherparse's slices, which parse a later fragment's
        // data as if it began with the transport header.
        if let Some(f) = data.get(off..).and_then(|ip| fragments::parse(et, ip)) {
            return Decoded::Fragment(f);
        }
    }
    let sliced = match link {
        LinkType::Ethernet => LaxSlicedPacket::from_ethernet(data).ok(),
        LinkType::RawIp | LinkType::Ipv4 | LinkType::Ipv6 => LaxSlicedPacket::from_ip(data).ok(),
        LinkType::Null | LinkType::Loop => {
            // The 4-byte address family is the writer's byte order (NULL) or network order (LOOP); IP's
            // version nibble after it says which protocol follows either way.
            data.get(4..)
                .and_then(|ip| LaxSlicedPacket::from_ip(ip).ok())
        }
        LinkType::LinuxSll => cooked(data, SLL_LEN - 2, SLL_LEN),
        LinkType::LinuxSll2 => cooked(data, 0, SLL2_LEN),
        LinkType::Other(_) => return Decoded::UnsupportedLink,
    };
    let Some(p) = sliced else {
        return Decoded::Undecodable;
    };
    let (payload_len_ip, fragmented) = match &p.net {
        Some(LaxNetSlice::Ipv4(v4)) => {
            let h = v4.header();
            let ip_payload = u32::from(h.total_len()).saturating_sub(u32::from(h.ihl()) * 4);
            (Some(ip_payload), v4.is_payload_fragmented())
        }
        Some(LaxNetSlice::Ipv6(v6)) => {
            let ext = v6.extensions().slice().len() as u32;
            let ip_payload = u32::from(v6.header().payload_length()).saturating_sub(ext);
            (Some(ip_payload), v6.is_payload_fragmented())
        }
        Some(LaxNetSlice::Arp(_)) | None => {
            return if p.link.is_some() && p.stop_err.is_none() {
                Decoded::NotIp
            } else {
                Decoded::Undecodable
            }
        }
    };
    let (src, dst, ttl) = match &p.net {
        Some(LaxNetSlice::Ipv4(v4)) => (
            IpAddr::V4(v4.header().source_addr()),
            IpAddr::V4(v4.header().destination_addr()),
            v4.header().ttl(),
        ),
        Some(LaxNetSlice::Ipv6(v6)) => (
            IpAddr::V6(v6.header().source_addr()),
            IpAddr::V6(v6.header().destination_addr()),
            v6.header().hop_limit(),
        ),
        _ => return Decoded::Undecodable,
    };
    match &p.transport {
        Some(TransportSlice::Tcp(tcp)) if !fragmented => {
            let header_len = u32::from(tcp.data_offset()) * 4;
            let wire = payload_len_ip
                .filter(|&l| l > 0)
                .map(|l| l.saturating_sub(header_len))
                .unwrap_or(tcp.payload().len() as u32);
            Decoded::Tcp(TcpSegment {
                src,
                src_port: tcp.source_port(),
                dst,
                dst_port: tcp.destination_port(),
                seq: tcp.sequence_number(),
                ack: tcp.acknowledgment_number(),
                window: tcp.window_size(),
                flags: TcpFlags(flag_bits(tcp)),
                options: tcp.header_slice().get(20..).unwrap_or(&[]),
                payload: tcp.payload(),
                payload_len: wire.max(tcp.payload().len() as u32),
                ttl,
            })
        }
        Some(TransportSlice::Udp(udp)) if !fragmented => {
            carried(tunnel::in_udp(udp.destination_port(), udp.payload()), depth)
                .unwrap_or(Decoded::OtherIp)
        }
        Some(_) => Decoded::OtherIp,
        None => {
            let inner = p
                .net
                .as_ref()
                .and_then(|net| net.ip_payload_ref())
                .filter(|ip| !ip.fragmented)
                .and_then(|ip| tunnel::in_ip(ip.ip_number.0, ip.payload));
            match carried(inner, depth) {
                Some(d) => d,
                None if p.stop_err.is_some() => Decoded::Undecodable,
                None => Decoded::OtherIp,
            }
        }
    }
}

fn flag_bits(tcp: &etherparse::TcpSlice<'_>) -> u8 {
    let mut f = 0;
    if tcp.fin() {
        f |= TcpFlags::FIN;
    }
    if tcp.syn() {
        f |= TcpFlags::SYN;
    }
    if tcp.rst() {
        f |= TcpFlags::RST;
    }
    if tcp.psh() {
        f |= TcpFlags::PSH;
    }
    if tcp.ack() {
        f |= TcpFlags::ACK;
    }
    f
}

fn cooked(data: &[u8], proto_at: usize, header_len: usize) -> Option<LaxSlicedPacket<'_>> {
    let proto = data.get(proto_at..proto_at + 2)?;
    let payload = data.get(header_len..)?;
    let ether_type = EtherType(u16::from_be_bytes([proto[0], proto[1]]));
    Some(LaxSlicedPacket::from_ether_type(ether_type, payload))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// What both decoders must agree on, as comparable text.
    fn facts(d: Decoded<'_>) -> Option<String> {
        match d {
            Decoded::Tcp(t) => Some(format!("{t:?}")),
            _ => None,
        }
    }

    proptest! {
        /// Random mutations of a real-shaped frame: wherever the fast path answers, etherparse agrees.
        #[test]
        fn fast_path_agrees_with_etherparse(
            edits in proptest::collection::vec((0usize..60, any::<u8>()), 0..6),
            cut in 0usize..80,
            link in prop_oneof![Just(LinkType::Ethernet), Just(LinkType::RawIp), Just(LinkType::LinuxSll2)],
        ) {
            let mut f = syn_frame();
            f.extend_from_slice(b"payload bytes");
            f[17] = 44 + 13;
            if link == LinkType::RawIp { f.drain(..14); }
            if link == LinkType::LinuxSll2 {
                let mut g = vec![0x08, 0x00, 0, 0, 0, 0, 0, 2, 0, 1, 0, 6, 0, 0, 0, 0, 0, 0, 0, 0];
                g.extend_from_slice(&f[14..]);
                f = g;
            }
            for (at, b) in edits { if at < f.len() { f[at] = b; } }
            f.truncate(f.len().saturating_sub(cut).max(1));
            if let Some(fast) = fast_tcp(link, &f) {
                prop_assert_eq!(facts(Decoded::Tcp(fast)), facts(decode_general(link, &f)));
            }
        }
    }

    /// An Ethernet + IPv4 + TCP SYN built by hand (decoder unit test only).
    fn syn_frame() -> Vec<u8> {
        let mut f = vec![0u8; 12];
        f.extend_from_slice(&[0x08, 0x00]);
        f.extend_from_slice(&[
            0x45, 0, 0, 44, 0, 1, 0x40, 0, 64, 6, 0, 0, 10, 0, 0, 2, 10, 0, 0, 1,
        ]);
        f.extend_from_slice(&[
            0xa4, 0x1d, 0x0c, 0xea, 0, 0, 0, 100, 0, 0, 0, 0, 0x60, 0x02, 0xfa, 0xf0, 0, 0, 0, 0,
            2, 4, 5, 0xb4,
        ]);
        f
    }

    #[test]
    fn ethernet_ipv4_syn_decodes_ports_seq_and_flags() {
        let f = syn_frame();
        let Decoded::Tcp(t) = decode(LinkType::Ethernet, &f) else {
            panic!("not tcp")
        };
        assert_eq!((t.src_port, t.dst_port, t.seq), (42013, 3306, 100));
        assert!(t.flags.syn() && !t.flags.ack());
        assert_eq!(t.payload_len, 0);
    }

    #[test]
    fn truncated_headers_are_undecodable_not_a_panic() {
        let f = syn_frame();
        for cut in 0..f.len() {
            let _ = decode(LinkType::Ethernet, &f[..cut]);
            let _ = decode(LinkType::LinuxSll2, &f[..cut]);
            let _ = decode(LinkType::Null, &f[..cut]);
        }
    }

    /// `inner` wrapped in Ethernet + IPv4 (protocol `proto`) + optionally a UDP header to `udp_port`.
    fn outer(proto: u8, udp_port: Option<u16>, inner: &[u8]) -> Vec<u8> {
        let mut body = Vec::new();
        if let Some(port) = udp_port {
            let len = (8 + inner.len()) as u16;
            body.extend_from_slice(&[0xc3, 0x50]);
            body.extend_from_slice(&port.to_be_bytes());
            body.extend_from_slice(&len.to_be_bytes());
            body.extend_from_slice(&[0, 0]);
        }
        body.extend_from_slice(inner);
        let total = (20 + body.len()) as u16;
        let mut f = vec![0u8; 12];
        f.extend_from_slice(&[0x08, 0x00, 0x45, 0]);
        f.extend_from_slice(&total.to_be_bytes());
        f.extend_from_slice(&[0, 1, 0x40, 0, 64, proto, 0, 0, 172, 16, 0, 1, 172, 16, 0, 2]);
        f.extend_from_slice(&body);
        f
    }

    #[test]
    fn tunnels_are_followed_to_the_inner_segment() {
        let inner = syn_frame();
        let mut vxlan = vec![0x08, 0, 0, 0, 0, 0, 42, 0];
        vxlan.extend_from_slice(&inner);
        let mut gre_ip = vec![0, 0, 0x08, 0x00];
        gre_ip.extend_from_slice(&inner[14..]);
        for (what, f) in [
            ("vxlan", outer(17, Some(4789), &vxlan)),
            ("gre", outer(47, None, &gre_ip)),
            ("ipip", outer(4, None, &inner[14..])),
        ] {
            let Decoded::Tcp(t) = decode(LinkType::Ethernet, &f) else {
                panic!("{what}: not tcp")
            };
            assert_eq!(
                (t.src.to_string(), t.dst_port, t.seq),
                ("10.0.0.2".into(), 3306, 100),
                "{what}"
            );
        }
        // The same bytes to a port no tunnel uses are plain UDP.
        assert!(matches!(
            decode(LinkType::Ethernet, &outer(17, Some(4000), &vxlan)),
            Decoded::OtherIp
        ));
    }

    proptest! {
        /// Whatever a tunnel seems to carry, decoding never panics, and a segment it finds lies in the frame.
        #[test]
        fn any_bytes_inside_a_tunnel_decode_without_panic(
            tunnel in 0usize..6,
            body in proptest::collection::vec(any::<u8>(), 0..120),
        ) {
            let f = match tunnel {
                0 => outer(17, Some(4789), &body),
                1 => outer(17, Some(6081), &body),
                2 => outer(47, None, &body),
                3 => outer(4, None, &body),
                4 => outer(41, None, &body),
                _ => {
                    let mut f = vec![0u8; 12];
                    f.extend_from_slice(&[0x88, 0x47]);
                    f.extend_from_slice(&body);
                    f
                }
            };
            for cut in [f.len(), f.len() / 2, 40] {
                let f = &f[..cut.min(f.len())];
                if let Decoded::Tcp(t) = decode(LinkType::Ethernet, f) {
                    let (start, end) = (f.as_ptr() as usize, f.as_ptr() as usize + f.len());
                    let p = t.payload.as_ptr() as usize;
                    prop_assert!(p >= start && p + t.payload.len() <= end);
                }
            }
        }
    }

    #[test]
    fn tunnels_nested_too_deep_are_not_followed() {
        let mut f = syn_frame();
        for _ in 0..tunnel::MAX_DEPTH {
            f = outer(4, None, &f[14..]);
        }
        assert!(matches!(decode(LinkType::Ethernet, &f), Decoded::Tcp(_)));
        f = outer(4, None, &f[14..]);
        assert!(matches!(decode(LinkType::Ethernet, &f), Decoded::OtherIp));
    }

    #[test]
    fn linux_cooked_v2_carries_the_ether_type_first() {
        let eth = syn_frame();
        let mut f = vec![
            0x08, 0x00, 0, 0, 0, 0, 0, 2, 0, 1, 0, 6, 0, 0, 0, 0, 0, 0, 0, 0,
        ];
        f.extend_from_slice(&eth[14..]);
        assert!(matches!(decode(LinkType::LinuxSll2, &f), Decoded::Tcp(t) if t.dst_port == 3306));
    }
}
