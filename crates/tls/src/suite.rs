//! Protocol versions and cipher suites: their IANA numbers and names, and what each needs to decrypt a
//! record (RFC 8446 B.4 for TLS 1.3; RFC 5246, 5288, 5289 and 7905 for TLS 1.2).

use std::fmt;

/// A TLS protocol version as it is written on the wire (`0x0303` is TLS 1.2, `0x0304` TLS 1.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ProtocolVersion(pub u16);

impl ProtocolVersion {
    /// SSL 3.0.
    pub const SSL3_0: ProtocolVersion = ProtocolVersion(0x0300);
    /// TLS 1.0.
    pub const TLS1_0: ProtocolVersion = ProtocolVersion(0x0301);
    /// TLS 1.1.
    pub const TLS1_1: ProtocolVersion = ProtocolVersion(0x0302);
    /// TLS 1.2.
    pub const TLS1_2: ProtocolVersion = ProtocolVersion(0x0303);
    /// TLS 1.3.
    pub const TLS1_3: ProtocolVersion = ProtocolVersion(0x0304);

    /// "TLS 1.3", "TLS 1.2", ..., or the number (`0x7f1c`) for one this crate does not name (a draft,
    /// GREASE).
    pub fn name(&self) -> String {
        match self.0 {
            0x0300 => "SSL 3.0".into(),
            0x0301 => "TLS 1.0".into(),
            0x0302 => "TLS 1.1".into(),
            0x0303 => "TLS 1.2".into(),
            0x0304 => "TLS 1.3".into(),
            n => format!("{n:#06x}"),
        }
    }
}

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// The hash of a cipher suite: the TLS 1.3 key schedule's (HKDF), or the TLS 1.2 PRF's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HashAlgorithm {
    /// SHA-256 (32-byte secrets).
    Sha256,
    /// SHA-384 (48-byte secrets).
    Sha384,
}

impl HashAlgorithm {
    /// The digest's length in bytes: the length of every TLS 1.3 secret of the suite.
    pub fn len(&self) -> usize {
        match self {
            HashAlgorithm::Sha256 => 32,
            HashAlgorithm::Sha384 => 48,
        }
    }

    /// Never true: a digest has bytes (the pair of [`HashAlgorithm::len`], for clippy).
    pub fn is_empty(&self) -> bool {
        false
    }
}

/// How a record's payload is protected, as far as decrypting it goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RecordProtection {
    /// AES-128 in Galois/Counter Mode (AEAD).
    Aes128Gcm,
    /// AES-256 in Galois/Counter Mode (AEAD).
    Aes256Gcm,
    /// ChaCha20 with Poly1305 (AEAD, RFC 8439).
    ChaCha20Poly1305,
    /// AES in CBC mode with an HMAC (TLS 1.2 only; MAC-then-encrypt, or encrypt-then-MAC when both hellos
    /// ask for RFC 7366).
    AesCbc {
        /// The AES key length: 16 or 32 bytes.
        key_len: u8,
        /// The HMAC's hash.
        mac: MacAlgorithm,
    },
}

impl RecordProtection {
    /// The cipher's key length in bytes.
    pub fn key_len(&self) -> usize {
        match self {
            RecordProtection::Aes128Gcm => 16,
            RecordProtection::Aes256Gcm | RecordProtection::ChaCha20Poly1305 => 32,
            RecordProtection::AesCbc { key_len, .. } => usize::from(*key_len),
        }
    }
}

/// The HMAC of a TLS 1.2 CBC suite.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MacAlgorithm {
    /// HMAC-SHA1 (20 bytes).
    Sha1,
    /// HMAC-SHA256 (32 bytes).
    Sha256,
    /// HMAC-SHA384 (48 bytes).
    Sha384,
}

impl MacAlgorithm {
    /// The MAC's length in bytes (and its key's).
    pub fn len(&self) -> usize {
        match self {
            MacAlgorithm::Sha1 => 20,
            MacAlgorithm::Sha256 => 32,
            MacAlgorithm::Sha384 => 48,
        }
    }

    /// Never true (the pair of [`MacAlgorithm::len`], for clippy).
    pub fn is_empty(&self) -> bool {
        false
    }
}

/// A cipher suite as its IANA number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CipherSuite(pub u16);

/// What decrypting a record under a suite needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SuiteParameters {
    /// The suite's IANA name (`TLS_AES_256_GCM_SHA384`).
    pub name: &'static str,
    /// A TLS 1.3 suite (else TLS 1.2).
    pub tls13: bool,
    /// How records are protected.
    pub protection: RecordProtection,
    /// The key schedule's hash (TLS 1.3) or the PRF's (TLS 1.2).
    pub hash: HashAlgorithm,
}

const fn suite(
    id: u16,
    name: &'static str,
    tls13: bool,
    protection: RecordProtection,
    hash: HashAlgorithm,
) -> (u16, SuiteParameters) {
    (
        id,
        SuiteParameters {
            name,
            tls13,
            protection,
            hash,
        },
    )
}

use HashAlgorithm::{Sha256 as H256, Sha384 as H384};
use RecordProtection::{Aes128Gcm as G128, Aes256Gcm as G256, ChaCha20Poly1305 as CHACHA};

const fn cbc(key_len: u8, mac: MacAlgorithm) -> RecordProtection {
    RecordProtection::AesCbc { key_len, mac }
}

/// Every suite this crate decrypts.
const SUITES: &[(u16, SuiteParameters)] = &[
    suite(0x1301, "TLS_AES_128_GCM_SHA256", true, G128, H256),
    suite(0x1302, "TLS_AES_256_GCM_SHA384", true, G256, H384),
    suite(0x1303, "TLS_CHACHA20_POLY1305_SHA256", true, CHACHA, H256),
    suite(0x009C, "TLS_RSA_WITH_AES_128_GCM_SHA256", false, G128, H256),
    suite(0x009D, "TLS_RSA_WITH_AES_256_GCM_SHA384", false, G256, H384),
    suite(
        0x009E,
        "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256",
        false,
        G128,
        H256,
    ),
    suite(
        0x009F,
        "TLS_DHE_RSA_WITH_AES_256_GCM_SHA384",
        false,
        G256,
        H384,
    ),
    suite(
        0xC02B,
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
        false,
        G128,
        H256,
    ),
    suite(
        0xC02C,
        "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
        false,
        G256,
        H384,
    ),
    suite(
        0xC02F,
        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
        false,
        G128,
        H256,
    ),
    suite(
        0xC030,
        "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
        false,
        G256,
        H384,
    ),
    suite(
        0xCCA8,
        "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
        false,
        CHACHA,
        H256,
    ),
    suite(
        0xCCA9,
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
        false,
        CHACHA,
        H256,
    ),
    suite(
        0xCCAA,
        "TLS_DHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
        false,
        CHACHA,
        H256,
    ),
    suite(
        0x002F,
        "TLS_RSA_WITH_AES_128_CBC_SHA",
        false,
        cbc(16, MacAlgorithm::Sha1),
        H256,
    ),
    suite(
        0x0035,
        "TLS_RSA_WITH_AES_256_CBC_SHA",
        false,
        cbc(32, MacAlgorithm::Sha1),
        H256,
    ),
    suite(
        0x003C,
        "TLS_RSA_WITH_AES_128_CBC_SHA256",
        false,
        cbc(16, MacAlgorithm::Sha256),
        H256,
    ),
    suite(
        0x003D,
        "TLS_RSA_WITH_AES_256_CBC_SHA256",
        false,
        cbc(32, MacAlgorithm::Sha256),
        H256,
    ),
    suite(
        0x0033,
        "TLS_DHE_RSA_WITH_AES_128_CBC_SHA",
        false,
        cbc(16, MacAlgorithm::Sha1),
        H256,
    ),
    suite(
        0x0039,
        "TLS_DHE_RSA_WITH_AES_256_CBC_SHA",
        false,
        cbc(32, MacAlgorithm::Sha1),
        H256,
    ),
    suite(
        0x0067,
        "TLS_DHE_RSA_WITH_AES_128_CBC_SHA256",
        false,
        cbc(16, MacAlgorithm::Sha256),
        H256,
    ),
    suite(
        0x006B,
        "TLS_DHE_RSA_WITH_AES_256_CBC_SHA256",
        false,
        cbc(32, MacAlgorithm::Sha256),
        H256,
    ),
    suite(
        0xC009,
        "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
        false,
        cbc(16, MacAlgorithm::Sha1),
        H256,
    ),
    suite(
        0xC00A,
        "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA",
        false,
        cbc(32, MacAlgorithm::Sha1),
        H256,
    ),
    suite(
        0xC013,
        "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
        false,
        cbc(16, MacAlgorithm::Sha1),
        H256,
    ),
    suite(
        0xC014,
        "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
        false,
        cbc(32, MacAlgorithm::Sha1),
        H256,
    ),
    suite(
        0xC023,
        "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256",
        false,
        cbc(16, MacAlgorithm::Sha256),
        H256,
    ),
    suite(
        0xC024,
        "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA384",
        false,
        cbc(32, MacAlgorithm::Sha384),
        H384,
    ),
    suite(
        0xC027,
        "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256",
        false,
        cbc(16, MacAlgorithm::Sha256),
        H256,
    ),
    suite(
        0xC028,
        "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384",
        false,
        cbc(32, MacAlgorithm::Sha384),
        H384,
    ),
];

/// Suites seen in the wild that this crate does not decrypt, named so that a report can say which.
const NAMED_ONLY: &[(u16, &str)] = &[
    (0x1304, "TLS_AES_128_CCM_SHA256"),
    (0x1305, "TLS_AES_128_CCM_8_SHA256"),
    (0x000A, "TLS_RSA_WITH_3DES_EDE_CBC_SHA"),
    (0x0005, "TLS_RSA_WITH_RC4_128_SHA"),
    (0xC012, "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA"),
    (0xC0AC, "TLS_ECDHE_ECDSA_WITH_AES_128_CCM"),
];

impl CipherSuite {
    /// What decrypting under this suite needs; `None` for a suite this crate does not decrypt.
    pub fn parameters(&self) -> Option<&'static SuiteParameters> {
        SUITES.iter().find(|(id, _)| *id == self.0).map(|(_, p)| p)
    }

    /// The IANA name (`TLS_AES_256_GCM_SHA384`), or the number (`0x1304`-style hex) of a suite not known
    /// here.
    pub fn name(&self) -> String {
        if let Some(p) = self.parameters() {
            return p.name.to_string();
        }
        match NAMED_ONLY.iter().find(|(id, _)| *id == self.0) {
            Some((_, name)) => (*name).to_string(),
            None => format!("{:#06x}", self.0),
        }
    }
}

impl fmt::Display for CipherSuite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_suite_is_listed_once() {
        for (i, (id, _)) in SUITES.iter().enumerate() {
            assert!(
                SUITES[i + 1..].iter().all(|(other, _)| other != id),
                "{id:#x}"
            );
            assert!(NAMED_ONLY.iter().all(|(other, _)| other != id), "{id:#x}");
        }
    }

    #[test]
    fn names_and_numbers() {
        assert_eq!(CipherSuite(0x1302).name(), "TLS_AES_256_GCM_SHA384");
        assert_eq!(CipherSuite(0x1304).name(), "TLS_AES_128_CCM_SHA256");
        assert!(CipherSuite(0x1304).parameters().is_none());
        assert_eq!(CipherSuite(0xabcd).name(), "0xabcd");
        assert_eq!(ProtocolVersion::TLS1_3.name(), "TLS 1.3");
        assert_eq!(ProtocolVersion(0x7f1c).name(), "0x7f1c");
        let p = CipherSuite(0xC030).parameters().unwrap();
        assert!(!p.tls13);
        assert_eq!(p.hash, HashAlgorithm::Sha384);
        assert_eq!(p.protection.key_len(), 32);
    }
}
