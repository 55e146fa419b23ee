//! Header fields as the wire carries them: big-endian integers read at an offset (`None` past the end,
//! never a panic), and the EtherType numbers (IEEE 802) the link decoders and the tunnels both use.

/// The big-endian `u16` at `at`, if the bytes hold it.
#[inline(always)]
pub(crate) fn be16(d: &[u8], at: usize) -> Option<u16> {
    // One bounds check for both bytes (two `get`s of one byte each were two).
    let b = d.get(at..at.checked_add(2)?)?;
    Some(u16::from_be_bytes([b[0], b[1]]))
}

/// EtherType of IPv4.
pub(crate) const ETHERTYPE_IPV4: u16 = 0x0800;
/// EtherType of IPv6.
pub(crate) const ETHERTYPE_IPV6: u16 = 0x86DD;
