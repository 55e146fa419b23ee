//! Opening one protected record: the nonce and additional data each version builds (RFC 8446 5.2 and
//! 5.3; RFC 5288 3 and RFC 7905 2 for TLS 1.2 AEAD; RFC 5246 6.2.3.2 and RFC 7366 for CBC), the
//! authenticated decryption itself done by RustCrypto's `aes-gcm`, `chacha20poly1305`, `aes`, `cbc`
//! and `hmac`. A record that does not authenticate is refused, never returned as plaintext.

use aes::cipher::BlockDecryptMut;
use aes_gcm::aead::{AeadInPlace, KeyInit};
use aes_gcm::{Aes128Gcm, Aes256Gcm};
use chacha20poly1305::ChaCha20Poly1305;
use hmac::{Hmac, Mac};
use sha1::Sha1;
use sha2::{Sha256, Sha384};

use crate::record::{ContentType, RecordHeader};
use crate::schedule::TrafficKeys;
use crate::suite::{MacAlgorithm, RecordProtection};

/// An AEAD's tag length: 16 bytes for every suite here.
pub const TAG_LEN: usize = 16;
/// The explicit nonce a TLS 1.2 GCM record begins with.
const GCM_EXPLICIT_NONCE: usize = 8;
/// AES's block, and so a CBC record's IV.
const AES_BLOCK: usize = 16;

/// Why a record was not opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenError {
    /// The record did not authenticate (wrong key or sequence number, or damaged bytes).
    Authentication,
    /// The record is too short for its protection, or (TLS 1.3) holds no content type.
    Malformed,
}

/// A sender's AEAD or CBC cipher, keyed.
enum Engine {
    Aes128Gcm(Box<Aes128Gcm>),
    Aes256Gcm(Box<Aes256Gcm>),
    ChaCha20Poly1305(Box<ChaCha20Poly1305>),
    Aes128Cbc(Box<aes::Aes128>, Box<CbcMac>),
    Aes256Cbc(Box<aes::Aes256>, Box<CbcMac>),
}

/// The HMAC of a CBC suite, keyed once.
#[derive(Clone)]
enum CbcMac {
    Sha1(Hmac<Sha1>),
    Sha256(Hmac<Sha256>),
    Sha384(Hmac<Sha384>),
}

impl CbcMac {
    fn new(alg: MacAlgorithm, key: &[u8]) -> Option<CbcMac> {
        Some(match alg {
            MacAlgorithm::Sha1 => CbcMac::Sha1(<Hmac<Sha1> as Mac>::new_from_slice(key).ok()?),
            MacAlgorithm::Sha256 => {
                CbcMac::Sha256(<Hmac<Sha256> as Mac>::new_from_slice(key).ok()?)
            }
            MacAlgorithm::Sha384 => {
                CbcMac::Sha384(<Hmac<Sha384> as Mac>::new_from_slice(key).ok()?)
            }
        })
    }

    fn len(&self) -> usize {
        match self {
            CbcMac::Sha1(_) => 20,
            CbcMac::Sha256(_) => 32,
            CbcMac::Sha384(_) => 48,
        }
    }

    /// Whether `tag` is the MAC of the parts.
    fn verifies(&self, parts: &[&[u8]], tag: &[u8]) -> bool {
        fn check<M: Mac + Clone>(m: &M, parts: &[&[u8]], tag: &[u8]) -> bool {
            let mut m = m.clone();
            for p in parts {
                m.update(p);
            }
            m.verify_slice(tag).is_ok()
        }
        match self {
            CbcMac::Sha1(m) => check(m, parts, tag),
            CbcMac::Sha256(m) => check(m, parts, tag),
            CbcMac::Sha384(m) => check(m, parts, tag),
        }
    }
}

/// The record format of the version in force.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// TLS 1.3: the nonce is the IV XOR the sequence number, the additional data the record header, and
    /// the real content type ends the plaintext (before any zero padding).
    Tls13,
    /// TLS 1.2 (AEAD: RFC 5288 and 7905; CBC: RFC 5246, MAC-then-encrypt).
    Tls12,
    /// TLS 1.2 CBC with encrypt-then-MAC (RFC 7366).
    Tls12EncryptThenMac,
}

/// One sender's record protection: the keyed cipher, its IV, and the version's record format.
pub struct Opener {
    engine: Engine,
    iv: [u8; 12],
    framing: Framing,
}

impl std::fmt::Debug for Opener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Opener")
            .field("framing", &self.framing)
            .finish_non_exhaustive()
    }
}

/// What an opened record holds: its content type (the inner one, for TLS 1.3) and where its plaintext
/// lies in the buffer it was opened in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Opened {
    /// The content type of the plaintext.
    pub content_type: ContentType,
    /// Where the plaintext starts in the record's body.
    pub start: usize,
    /// Where it ends.
    pub end: usize,
}

impl Opener {
    /// An opener for `protection` with these keys (`mac_key`: CBC suites only). `None` when a key has
    /// the wrong length for its cipher.
    pub fn new(
        protection: RecordProtection,
        keys: &TrafficKeys,
        mac_key: &[u8],
        framing: Framing,
    ) -> Option<Opener> {
        let key = keys.key();
        let engine = match protection {
            RecordProtection::Aes128Gcm => {
                Engine::Aes128Gcm(Box::new(Aes128Gcm::new_from_slice(key).ok()?))
            }
            RecordProtection::Aes256Gcm => {
                Engine::Aes256Gcm(Box::new(Aes256Gcm::new_from_slice(key).ok()?))
            }
            RecordProtection::ChaCha20Poly1305 => {
                Engine::ChaCha20Poly1305(Box::new(ChaCha20Poly1305::new_from_slice(key).ok()?))
            }
            RecordProtection::AesCbc { key_len: 16, mac } => Engine::Aes128Cbc(
                Box::new(<aes::Aes128 as aes::cipher::KeyInit>::new_from_slice(key).ok()?),
                Box::new(CbcMac::new(mac, mac_key)?),
            ),
            RecordProtection::AesCbc { key_len: 32, mac } => Engine::Aes256Cbc(
                Box::new(<aes::Aes256 as aes::cipher::KeyInit>::new_from_slice(key).ok()?),
                Box::new(CbcMac::new(mac, mac_key)?),
            ),
            RecordProtection::AesCbc { .. } => return None,
        };
        Some(Opener {
            engine,
            iv: keys.iv,
            framing,
        })
    }

    /// Opens the record with this `header` and `body` (decrypted in place) as the `seq`th record of its
    /// sender under these keys.
    pub fn open(
        &self,
        seq: u64,
        header: &RecordHeader,
        body: &mut [u8],
    ) -> Result<Opened, OpenError> {
        match &self.engine {
            // TLS 1.2 GCM records carry an explicit nonce; ChaCha20's and TLS 1.3's are implicit.
            Engine::Aes128Gcm(c) => self.open_aead(c.as_ref(), self.gcm12(), seq, header, body),
            Engine::Aes256Gcm(c) => self.open_aead(c.as_ref(), self.gcm12(), seq, header, body),
            Engine::ChaCha20Poly1305(c) => self.open_aead(c.as_ref(), false, seq, header, body),
            Engine::Aes128Cbc(c, mac) => {
                self.open_cbc::<cbc::Decryptor<aes::Aes128>, _>(c.as_ref(), mac, seq, header, body)
            }
            Engine::Aes256Cbc(c, mac) => {
                self.open_cbc::<cbc::Decryptor<aes::Aes256>, _>(c.as_ref(), mac, seq, header, body)
            }
        }
    }

    /// The IV XOR the sequence number, right-aligned (RFC 8446 5.3, RFC 7905 2).
    fn xor_nonce(&self, seq: u64) -> [u8; 12] {
        let mut nonce = self.iv;
        for (n, s) in nonce[4..].iter_mut().zip(seq.to_be_bytes()) {
            *n ^= s;
        }
        nonce
    }

    fn gcm12(&self) -> bool {
        self.framing != Framing::Tls13
    }

    fn open_aead<A: AeadInPlace>(
        &self,
        aead: &A,
        gcm12: bool,
        seq: u64,
        header: &RecordHeader,
        body: &mut [u8],
    ) -> Result<Opened, OpenError> {
        let explicit = if gcm12 { GCM_EXPLICIT_NONCE } else { 0 };
        if body.len() < explicit + TAG_LEN {
            return Err(OpenError::Malformed);
        }
        let nonce = if gcm12 {
            let mut n = [0u8; 12];
            n[..4].copy_from_slice(&self.iv[..4]);
            n[4..].copy_from_slice(&body[..GCM_EXPLICIT_NONCE]);
            n
        } else {
            self.xor_nonce(seq)
        };
        let plain_len = body.len() - explicit - TAG_LEN;
        let aad_tls12;
        let aad: &[u8] = match self.framing {
            Framing::Tls13 => &header.bytes,
            Framing::Tls12 | Framing::Tls12EncryptThenMac => {
                aad_tls12 = tls12_aad(seq, header, plain_len);
                &aad_tls12
            }
        };
        let (text, tag) = body[explicit..].split_at_mut(plain_len);
        aead.decrypt_in_place_detached(
            aes_gcm::Nonce::<A::NonceSize>::from_slice(&nonce),
            aad,
            text,
            aes_gcm::Tag::<A::TagSize>::from_slice(tag),
        )
        .map_err(|_| OpenError::Authentication)?;
        let start = explicit;
        match self.framing {
            Framing::Tls13 => {
                // TLSInnerPlaintext: content, the real type, then zeros.
                let last = text
                    .iter()
                    .rposition(|&b| b != 0)
                    .ok_or(OpenError::Malformed)?;
                Ok(Opened {
                    content_type: ContentType::from_byte(text[last]),
                    start,
                    end: start + last,
                })
            }
            _ => Ok(Opened {
                content_type: ContentType::from_byte(header.content_type),
                start,
                end: start + plain_len,
            }),
        }
    }

    fn open_cbc<D, C>(
        &self,
        cipher: &C,
        mac: &CbcMac,
        seq: u64,
        header: &RecordHeader,
        body: &mut [u8],
    ) -> Result<Opened, OpenError>
    where
        C: Clone,
        D: BlockDecryptMut + aes::cipher::InnerIvInit<Inner = C>,
    {
        let mac_len = mac.len();
        let etm = self.framing == Framing::Tls12EncryptThenMac;
        let cipher_end = if etm {
            body.len()
                .checked_sub(mac_len)
                .ok_or(OpenError::Malformed)?
        } else {
            body.len()
        };
        let encrypted = cipher_end
            .checked_sub(AES_BLOCK)
            .ok_or(OpenError::Malformed)?;
        if encrypted == 0 || encrypted % AES_BLOCK != 0 {
            return Err(OpenError::Malformed);
        }
        if etm {
            let (covered, tag) = body.split_at(cipher_end);
            let len = (covered.len() as u16).to_be_bytes();
            let head = tls12_mac_head(seq, header);
            if !mac.verifies(&[&head, &len, covered], tag) {
                return Err(OpenError::Authentication);
            }
        }
        let (iv, text) = body[..cipher_end].split_at_mut(AES_BLOCK);
        let iv = aes::cipher::generic_array::GenericArray::from_slice(iv);
        let decryptor = D::inner_iv_init(cipher.clone(), iv);
        decryptor
            .decrypt_padded_mut::<aes::cipher::block_padding::NoPadding>(text)
            .map_err(|_| OpenError::Malformed)?;
        // Padding: its length byte last, repeated that many times before it.
        let pad = usize::from(*text.last().ok_or(OpenError::Malformed)?);
        let unpadded = text
            .len()
            .checked_sub(pad + 1)
            .ok_or(OpenError::Authentication)?;
        if text[unpadded..text.len() - 1]
            .iter()
            .any(|&b| usize::from(b) != pad)
        {
            return Err(OpenError::Authentication);
        }
        let plain_len = if etm {
            unpadded
        } else {
            let plain_len = unpadded
                .checked_sub(mac_len)
                .ok_or(OpenError::Authentication)?;
            let head = tls12_mac_head(seq, header);
            let len = (plain_len as u16).to_be_bytes();
            let (plain, tag) = text[..unpadded].split_at(plain_len);
            if !mac.verifies(&[&head, &len, plain], tag) {
                return Err(OpenError::Authentication);
            }
            plain_len
        };
        Ok(Opened {
            content_type: ContentType::from_byte(header.content_type),
            start: AES_BLOCK,
            end: AES_BLOCK + plain_len,
        })
    }
}

/// TLS 1.2's additional data: sequence number, type, version and the plaintext's length.
fn tls12_aad(seq: u64, header: &RecordHeader, plain_len: usize) -> [u8; 13] {
    let mut aad = [0u8; 13];
    aad[..11].copy_from_slice(&tls12_mac_head(seq, header));
    aad[11..].copy_from_slice(&(plain_len as u16).to_be_bytes());
    aad
}

/// What TLS 1.2's MAC and additional data begin with: sequence number, type and version.
fn tls12_mac_head(seq: u64, header: &RecordHeader) -> [u8; 11] {
    let mut h = [0u8; 11];
    h[..8].copy_from_slice(&seq.to_be_bytes());
    h[8] = header.content_type;
    h[9..].copy_from_slice(&header.version.to_be_bytes());
    h
}
