//! Encapsulations that carry whole packets inside others, as captured at mirror and overlay points:
//!
//! * VXLAN (RFC 7348) on UDP 4789 (AWS VPC Traffic Mirroring, most overlays) and 8472 (the Linux kernel's
//!   and flannel's default);
//! * Geneve (RFC 8926) on UDP 6081 (AWS Gateway Load Balancer, OVN);
//! * GRE (RFC 2784/2890) carrying Ethernet (transparent bridging), IP or MPLS, and ERSPAN types I, II
//!   and III (switch port mirroring to a remote collector);
//! * IP in IP (IPv4 or IPv6 inside IPv4 or IPv6: Calico's IPIP mode, 6in4);
//! * MPLS label stacks (with a pseudowire control word before Ethernet).
//!
//! The decoder follows them to the innermost TCP segment: flows are keyed by the inner addresses, since the
//! outer headers only carried the conversation from the tap to the collector.

use pcapsleuth_capture::LinkType;

use crate::fields::{be16, ETHERTYPE_IPV4, ETHERTYPE_IPV6};

/// How many encapsulations deep the decoder follows (a hostile capture could nest them without end).
pub(crate) const MAX_DEPTH: u8 = 4;

const ETHERTYPE_TEB: u16 = 0x6558;
const ETHERTYPE_MPLS: u16 = 0x8847;
const ETHERTYPE_MPLS_MULTICAST: u16 = 0x8848;
const ETHERTYPE_ERSPAN_1_2: u16 = 0x88BE;
const ETHERTYPE_ERSPAN_3: u16 = 0x22EB;

/// IP protocol numbers of the encapsulations.
pub(crate) const IP_IN_IP: u8 = 4;
pub(crate) const IPV6_IN_IP: u8 = 41;
pub(crate) const GRE: u8 = 47;

/// The packet an ether type names, if it is one the decoder can start from.
pub(crate) fn by_ether_type(ether_type: u16, body: &[u8]) -> Option<(LinkType, &[u8])> {
    match ether_type {
        ETHERTYPE_TEB => Some((LinkType::Ethernet, body)),
        ETHERTYPE_IPV4 | ETHERTYPE_IPV6 => Some((LinkType::RawIp, body)),
        ETHERTYPE_MPLS | ETHERTYPE_MPLS_MULTICAST => mpls(body),
        _ => None,
    }
}

/// Whether an ether type is MPLS, which etherparse does not slice.
pub(crate) fn is_mpls(ether_type: u16) -> bool {
    matches!(ether_type, ETHERTYPE_MPLS | ETHERTYPE_MPLS_MULTICAST)
}

/// The packet inside a UDP datagram to `dst_port`, if the port is a tunnel's and the header fits.
pub(crate) fn in_udp(dst_port: u16, payload: &[u8]) -> Option<(LinkType, &[u8])> {
    match dst_port {
        4789 | 8472 => {
            // 8 bytes: flags (I = 0x08: the VNI is valid), 3 reserved, VNI (3), 1 reserved.
            let flags = *payload.first()?;
            (flags & 0x08 != 0).then_some(())?;
            Some((LinkType::Ethernet, payload.get(8..)?))
        }
        6081 => {
            // Version (2 bits, 0) and options length (6 bits, in 4-byte words), flags, protocol type,
            // VNI (3), reserved; then the options.
            let first = *payload.first()?;
            (first >> 6 == 0).then_some(())?;
            let options = usize::from(first & 0x3f) * 4;
            by_ether_type(be16(payload, 2)?, payload.get(8 + options..)?)
        }
        _ => None,
    }
}

/// The packet inside an IP payload of protocol `ip_number`.
pub(crate) fn in_ip(ip_number: u8, payload: &[u8]) -> Option<(LinkType, &[u8])> {
    match ip_number {
        IP_IN_IP | IPV6_IN_IP => Some((LinkType::RawIp, payload)),
        GRE => gre(payload),
        _ => None,
    }
}

/// GRE: flags and version, protocol type, then the optional checksum (C), key (K) and sequence
/// number (S) words.
fn gre(p: &[u8]) -> Option<(LinkType, &[u8])> {
    let flags = be16(p, 0)?;
    // Version 1 is PPTP's enhanced GRE (PPP inside); the routing bit (R) belongs to the obsolete RFC 1701.
    if flags & 0x0007 != 0 || flags & 0x4000 != 0 {
        return None;
    }
    let sequenced = flags & 0x1000 != 0;
    // One 4-byte word for each of C (0x8000), K (0x2000) and S (0x1000) that is set.
    let options = (flags & 0xB000).count_ones() as usize;
    let body = p.get(4 + 4 * options..)?;
    match be16(p, 2)? {
        // Type I has no header of its own (and no sequence number); type II has 8 bytes.
        ETHERTYPE_ERSPAN_1_2 if sequenced => Some((LinkType::Ethernet, body.get(8..)?)),
        ETHERTYPE_ERSPAN_1_2 => Some((LinkType::Ethernet, body)),
        // Type III: 12 bytes, and 8 more of platform data when its O bit (the last bit) is set.
        ETHERTYPE_ERSPAN_3 => {
            let platform = if body.get(11)? & 0x01 != 0 { 8 } else { 0 };
            Some((LinkType::Ethernet, body.get(12 + platform..)?))
        }
        other => by_ether_type(other, body),
    }
}

/// An MPLS label stack (4 bytes per label, the last with the bottom-of-stack bit), then IP (its version
/// nibble says which) or, after a pseudowire control word (first nibble 0), Ethernet.
fn mpls(p: &[u8]) -> Option<(LinkType, &[u8])> {
    let mut at = 0;
    loop {
        let bottom = p.get(at + 2)? & 0x01 != 0;
        at += 4;
        if bottom {
            break;
        }
    }
    let body = p.get(at..)?;
    match body.first()? >> 4 {
        4 | 6 => Some((LinkType::RawIp, body)),
        0 => Some((LinkType::Ethernet, body.get(4..)?)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vxlan_needs_its_valid_vni_flag() {
        let mut h = vec![0x08, 0, 0, 0, 0, 0x10, 0x92, 0];
        h.extend_from_slice(b"frame");
        assert_eq!(in_udp(4789, &h), Some((LinkType::Ethernet, &b"frame"[..])));
        assert_eq!(in_udp(8472, &h), Some((LinkType::Ethernet, &b"frame"[..])));
        assert_eq!(in_udp(53, &h), None);
        h[0] = 0;
        assert_eq!(in_udp(4789, &h), None);
    }

    #[test]
    fn geneve_skips_its_options() {
        // One 4-byte option word, protocol Ethernet.
        let mut h = vec![0x01, 0, 0x65, 0x58, 0, 0, 1, 0, 9, 9, 9, 9];
        h.extend_from_slice(b"frame");
        assert_eq!(in_udp(6081, &h), Some((LinkType::Ethernet, &b"frame"[..])));
        h[0] = 0x41; // version 1
        assert_eq!(in_udp(6081, &h), None);
    }

    #[test]
    fn gre_skips_checksum_key_and_sequence_words() {
        let plain = [0x00, 0x00, 0x08, 0x00, 0x45];
        assert_eq!(in_ip(GRE, &plain), Some((LinkType::RawIp, &plain[4..])));
        let keyed = [0x30, 0x00, 0x65, 0x58, 0, 0, 0, 7, 0, 0, 0, 1, 0xee];
        assert_eq!(in_ip(GRE, &keyed), Some((LinkType::Ethernet, &keyed[12..])));
        let pptp = [0x30, 0x01, 0x88, 0x0b, 0, 0, 0, 0, 0, 0, 0, 0];
        assert_eq!(in_ip(GRE, &pptp), None);
    }

    #[test]
    fn erspan_types_one_two_and_three() {
        let one = [0x00, 0x00, 0x88, 0xbe, 0xee];
        assert_eq!(in_ip(GRE, &one), Some((LinkType::Ethernet, &one[4..])));
        let mut two = vec![0x10, 0x00, 0x88, 0xbe, 0, 0, 0, 1];
        two.extend_from_slice(&[0x10, 0, 0, 1, 0, 0, 0, 0, 0xee]);
        assert_eq!(in_ip(GRE, &two), Some((LinkType::Ethernet, &two[16..])));
        let mut three = vec![0x10, 0x00, 0x22, 0xeb, 0, 0, 0, 1];
        three.extend_from_slice(&[0x20, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0x01]);
        three.extend_from_slice(&[0; 8]);
        three.push(0xee);
        assert_eq!(in_ip(GRE, &three), Some((LinkType::Ethernet, &[0xee][..])));
    }

    #[test]
    fn mpls_pops_labels_to_ip_or_a_pseudowire() {
        let ip = [0, 0x01, 0x00, 64, 0, 0x02, 0x01, 64, 0x45, 0];
        assert_eq!(
            by_ether_type(0x8847, &ip),
            Some((LinkType::RawIp, &ip[8..]))
        );
        let pw = [0, 0x01, 0x01, 64, 0, 0, 0, 0, 0xee];
        assert_eq!(
            by_ether_type(0x8847, &pw),
            Some((LinkType::Ethernet, &pw[8..]))
        );
        assert_eq!(by_ether_type(0x8847, &[0, 1, 0, 64]), None);
    }
}
