//! TLS records (RFC 8446 5.1, RFC 5246 6.2): a 5-byte header (content type, version, length) and a body
//! of at most 2^14 bytes plus what protection adds.

/// A record header's length.
pub const HEADER_LEN: usize = 5;

/// The longest record body accepted: 2^14 bytes of plaintext plus 2,048 of protection (RFC 5246's bound
/// for TLS 1.2 ciphertext; TLS 1.3 allows only 256). A longer length is not a record.
pub const MAX_BODY: usize = (1 << 14) + 2048;

/// A record's content type (the outer one; for TLS 1.3 the real type is inside the protected record).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ContentType {
    /// change_cipher_spec (20): TLS 1.2's switch to the new keys; in TLS 1.3 only for middleboxes.
    ChangeCipherSpec,
    /// alert (21).
    Alert,
    /// handshake (22).
    Handshake,
    /// application_data (23): for TLS 1.3, every protected record.
    ApplicationData,
    /// heartbeat (24).
    Heartbeat,
    /// Any other value.
    Other(u8),
}

impl ContentType {
    /// The type of this byte.
    pub fn from_byte(b: u8) -> ContentType {
        match b {
            20 => ContentType::ChangeCipherSpec,
            21 => ContentType::Alert,
            22 => ContentType::Handshake,
            23 => ContentType::ApplicationData,
            24 => ContentType::Heartbeat,
            o => ContentType::Other(o),
        }
    }
}

/// A record header as it was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordHeader {
    /// The header's bytes (TLS 1.3's additional data).
    pub bytes: [u8; HEADER_LEN],
    /// The content type byte.
    pub content_type: u8,
    /// The record layer's version (`0x0303` for every TLS 1.2 and 1.3 record after the ClientHello).
    pub version: u16,
    /// The body's length.
    pub len: usize,
}

impl RecordHeader {
    /// The header in these 5 bytes, if they can start a record: a known content type, an SSL 3.0 to TLS
    /// 1.2 record version, a length within [`MAX_BODY`] (and not 0 but for application data).
    pub fn parse(bytes: [u8; HEADER_LEN]) -> Option<RecordHeader> {
        let content_type = bytes[0];
        let version = u16::from_be_bytes([bytes[1], bytes[2]]);
        let len = usize::from(u16::from_be_bytes([bytes[3], bytes[4]]));
        let known = (20..=24).contains(&content_type);
        let plausible_version = (0x0300..=0x0304).contains(&version);
        let plausible_len = len <= MAX_BODY && (len > 0 || content_type == 23);
        (known && plausible_version && plausible_len).then_some(RecordHeader {
            bytes,
            content_type,
            version,
            len,
        })
    }

    /// The record's content type.
    pub fn content_type(&self) -> ContentType {
        ContentType::from_byte(self.content_type)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers() {
        let h = RecordHeader::parse([0x16, 0x03, 0x01, 0x00, 0xc4]).unwrap();
        assert_eq!(
            (h.content_type(), h.version, h.len),
            (ContentType::Handshake, 0x0301, 196)
        );
        assert!(
            RecordHeader::parse([0x17, 0x03, 0x03, 0x48, 0x01]).is_none(),
            "too long"
        );
        assert!(
            RecordHeader::parse([0x19, 0x03, 0x03, 0x00, 0x10]).is_none(),
            "unknown type"
        );
        assert!(
            RecordHeader::parse([0x17, 0x02, 0x00, 0x00, 0x10]).is_none(),
            "SSL 2"
        );
        assert!(
            RecordHeader::parse([0x16, 0x03, 0x03, 0x00, 0x00]).is_none(),
            "empty handshake"
        );
        assert!(
            RecordHeader::parse([0x17, 0x03, 0x03, 0x00, 0x00]).is_some(),
            "empty data"
        );
    }
}
