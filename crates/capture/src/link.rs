//! Link-layer types (the `LINKTYPE_*` values of tcpdump.org) that pcapsleuth can decode.

/// The link-layer header type of a packet's captured bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LinkType {
    /// LINKTYPE_ETHERNET (1), with any 802.1Q / 802.1ad VLAN tags.
    Ethernet,
    /// LINKTYPE_NULL (0): BSD loopback, 4-byte address family in the writer's byte order.
    Null,
    /// LINKTYPE_LOOP (108): OpenBSD loopback, 4-byte address family in network byte order.
    Loop,
    /// LINKTYPE_RAW (101, and DLT 12/14 written by some systems): a bare IPv4 or IPv6 packet.
    RawIp,
    /// LINKTYPE_IPV4 (228).
    Ipv4,
    /// LINKTYPE_IPV6 (229).
    Ipv6,
    /// LINKTYPE_LINUX_SLL (113): Linux cooked capture v1 (`tcpdump -i any`, older libpcap).
    LinuxSll,
    /// LINKTYPE_LINUX_SLL2 (276): Linux cooked capture v2.
    LinuxSll2,
    /// Anything else: packets are counted, not decoded.
    Other(u32),
}

impl LinkType {
    /// Maps a `LINKTYPE_*` number.
    pub fn from_number(n: u32) -> Self {
        match n {
            0 => LinkType::Null,
            1 => LinkType::Ethernet,
            12 | 14 | 101 => LinkType::RawIp,
            108 => LinkType::Loop,
            113 => LinkType::LinuxSll,
            228 => LinkType::Ipv4,
            229 => LinkType::Ipv6,
            276 => LinkType::LinuxSll2,
            other => LinkType::Other(other),
        }
    }

    /// The `LINKTYPE_*` number to write for it: raw IP read as DLT 12 or 14 is written as
    /// LINKTYPE_RAW (101), which means the same everywhere (12 and 14 differ between systems).
    pub fn number(self) -> u32 {
        match self {
            LinkType::Null => 0,
            LinkType::Ethernet => 1,
            LinkType::RawIp => 101,
            LinkType::Loop => 108,
            LinkType::LinuxSll => 113,
            LinkType::Ipv4 => 228,
            LinkType::Ipv6 => 229,
            LinkType::LinuxSll2 => 276,
            LinkType::Other(n) => n,
        }
    }

    /// Whether pcapsleuth decodes packets of this link type.
    pub fn is_supported(self) -> bool {
        !matches!(self, LinkType::Other(_))
    }
}
