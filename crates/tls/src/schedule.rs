//! Keys from secrets: the TLS 1.3 key schedule's HKDF-Expand-Label (RFC 8446 7.1, 7.2, 7.3) and the TLS
//! 1.2 PRF and key block (RFC 5246 5, 6.3), built on RustCrypto's `hkdf`, `hmac` and `sha2`.

use hkdf::Hkdf;
use hmac::{Hmac, Mac};
use sha2::{Sha256, Sha384};

use crate::keylog::Secret;
use crate::suite::HashAlgorithm;

/// HKDF-Expand-Label(`secret`, `label`, `context`, `out.len()`) (RFC 8446 7.1): HKDF-Expand with the
/// info `length || "tls13 " + label || context`. `None` when the secret is shorter than the hash or `out`
/// longer than HKDF allows (255 hashes).
pub fn hkdf_expand_label(
    hash: HashAlgorithm,
    secret: &[u8],
    label: &[u8],
    context: &[u8],
    out: &mut [u8],
) -> Option<()> {
    const PREFIX: &[u8] = b"tls13 ";
    let len = u16::try_from(out.len()).ok()?;
    let label_len = u8::try_from(PREFIX.len() + label.len()).ok()?;
    let context_len = u8::try_from(context.len()).ok()?;
    let mut info = Vec::with_capacity(4 + PREFIX.len() + label.len() + context.len());
    info.extend_from_slice(&len.to_be_bytes());
    info.push(label_len);
    info.extend_from_slice(PREFIX);
    info.extend_from_slice(label);
    info.push(context_len);
    info.extend_from_slice(context);
    match hash {
        HashAlgorithm::Sha256 => Hkdf::<Sha256>::from_prk(secret)
            .ok()?
            .expand(&info, out)
            .ok(),
        HashAlgorithm::Sha384 => Hkdf::<Sha384>::from_prk(secret)
            .ok()?
            .expand(&info, out)
            .ok(),
    }
}

/// A direction's record key and IV (for TLS 1.2 GCM the IV is the 4-byte salt, then zeros).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct TrafficKeys {
    key: [u8; 32],
    key_len: u8,
    /// The per-record nonce's base: XORed with the sequence number (TLS 1.3, TLS 1.2 ChaCha20), or its
    /// first 4 bytes followed by the record's explicit nonce (TLS 1.2 GCM).
    pub iv: [u8; 12],
}

impl TrafficKeys {
    /// Keys from their bytes; `None` when the key is longer than 32 bytes or the IV than 12.
    pub fn new(key: &[u8], iv: &[u8]) -> Option<TrafficKeys> {
        let mut k = TrafficKeys {
            key: [0; 32],
            key_len: u8::try_from(key.len()).ok()?,
            iv: [0; 12],
        };
        k.key.get_mut(..key.len())?.copy_from_slice(key);
        k.iv.get_mut(..iv.len())?.copy_from_slice(iv);
        Some(k)
    }

    /// The cipher key.
    pub fn key(&self) -> &[u8] {
        &self.key[..usize::from(self.key_len)]
    }
}

impl std::fmt::Debug for TrafficKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TrafficKeys({}-byte key)", self.key_len)
    }
}

/// The record key and IV of a TLS 1.3 traffic secret (RFC 8446 7.3): `[sender]_write_key` and
/// `[sender]_write_iv`.
pub fn tls13_traffic_keys(
    hash: HashAlgorithm,
    secret: &Secret,
    key_len: usize,
) -> Option<TrafficKeys> {
    let mut key = [0u8; 32];
    let mut iv = [0u8; 12];
    hkdf_expand_label(
        hash,
        secret.as_bytes(),
        b"key",
        &[],
        key.get_mut(..key_len)?,
    )?;
    hkdf_expand_label(hash, secret.as_bytes(), b"iv", &[], &mut iv)?;
    TrafficKeys::new(&key[..key_len], &iv)
}

/// The traffic secret after a KeyUpdate (RFC 8446 7.2): `application_traffic_secret_N+1` from `_N`.
pub fn tls13_next_traffic_secret(hash: HashAlgorithm, secret: &Secret) -> Option<Secret> {
    let mut next = [0u8; 48];
    let out = next.get_mut(..hash.len())?;
    hkdf_expand_label(hash, secret.as_bytes(), b"traffic upd", &[], out)?;
    Secret::new(out)
}

fn p_hash<M: Mac + hmac::digest::KeyInit + Clone>(
    secret: &[u8],
    seed: &[&[u8]],
    out: &mut [u8],
) -> Option<()> {
    let keyed = <M as hmac::digest::KeyInit>::new_from_slice(secret).ok()?;
    // A(1) = HMAC(secret, seed); A(i) = HMAC(secret, A(i-1)).
    let mut a = {
        let mut m = keyed.clone();
        for s in seed {
            m.update(s);
        }
        m.finalize().into_bytes()
    };
    let mut filled = 0;
    while filled < out.len() {
        let mut m = keyed.clone();
        m.update(&a);
        for s in seed {
            m.update(s);
        }
        let block = m.finalize().into_bytes();
        let take = block.len().min(out.len() - filled);
        out.get_mut(filled..filled + take)?
            .copy_from_slice(block.get(..take)?);
        filled += take;
        let mut m = keyed.clone();
        m.update(&a);
        a = m.finalize().into_bytes();
    }
    Some(())
}

/// The TLS 1.2 PRF (RFC 5246 5): `P_hash(secret, label + seed)`, filling `out`.
pub fn tls12_prf(
    hash: HashAlgorithm,
    secret: &[u8],
    label: &[u8],
    seed: &[&[u8]],
    out: &mut [u8],
) -> Option<()> {
    let mut parts: Vec<&[u8]> = Vec::with_capacity(seed.len() + 1);
    parts.push(label);
    parts.extend_from_slice(seed);
    match hash {
        HashAlgorithm::Sha256 => p_hash::<Hmac<Sha256>>(secret, &parts, out),
        HashAlgorithm::Sha384 => p_hash::<Hmac<Sha384>>(secret, &parts, out),
    }
}

/// The keys of both directions of a TLS 1.2 connection, from its key block (RFC 5246 6.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tls12Keys {
    /// The client's MAC key (CBC suites; empty for AEAD), up to 48 bytes, and its length.
    pub client_mac: ([u8; 48], usize),
    /// The server's MAC key, as `client_mac`.
    pub server_mac: ([u8; 48], usize),
    /// The client's write key and IV.
    pub client: TrafficKeys,
    /// The server's write key and IV.
    pub server: TrafficKeys,
}

/// The TLS 1.2 key block of `master_secret` cut into the directions' keys: `mac_len` bytes of MAC key
/// (0 for AEAD suites), `key_len` of cipher key and `iv_len` of fixed IV (4 for GCM, 12 for ChaCha20,
/// 0 for CBC, whose IV is in each record) per direction.
pub fn tls12_keys(
    hash: HashAlgorithm,
    master_secret: &Secret,
    client_random: &[u8; 32],
    server_random: &[u8; 32],
    mac_len: usize,
    key_len: usize,
    iv_len: usize,
) -> Option<Tls12Keys> {
    let total = 2 * (mac_len + key_len + iv_len);
    let mut block = [0u8; 2 * (48 + 32 + 12)];
    let block = block.get_mut(..total)?;
    tls12_prf(
        hash,
        master_secret.as_bytes(),
        b"key expansion",
        &[server_random, client_random],
        block,
    )?;
    let mut at = 0;
    let mut take = |n: usize| {
        let s = block.get(at..at + n);
        at += n;
        s
    };
    let mac = |b: &[u8]| {
        let mut m = [0u8; 48];
        m[..b.len()].copy_from_slice(b);
        (m, b.len())
    };
    let client_mac = mac(take(mac_len)?);
    let server_mac = mac(take(mac_len)?);
    let client_key = take(key_len)?;
    let server_key = take(key_len)?;
    let client_iv = take(iv_len)?;
    let server_iv = take(iv_len)?;
    Some(Tls12Keys {
        client_mac,
        server_mac,
        client: TrafficKeys::new(client_key, client_iv)?,
        server: TrafficKeys::new(server_key, server_iv)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        let digits: Vec<u8> = s.bytes().filter(u8::is_ascii_hexdigit).collect();
        digits
            .chunks(2)
            .map(|p| u8::from_str_radix(std::str::from_utf8(p).unwrap(), 16).unwrap())
            .collect()
    }

    /// RFC 8448 3: the server's handshake traffic secret, its key and IV.
    #[test]
    fn rfc8448_server_handshake_keys() {
        let secret = Secret::new(&hex(
            "b6 7b 7d 69 0c c1 6c 4e 75 e5 42 13 cb 2d 37 b4 e9 c9 12 bc de d9 10 5d 42 be fd 59 d3 91 ad 38",
        ))
        .unwrap();
        let k = tls13_traffic_keys(HashAlgorithm::Sha256, &secret, 16).unwrap();
        assert_eq!(
            k.key(),
            hex("3f ce 51 60 09 c2 17 27 d0 f2 e4 e8 6e e4 03 bc")
        );
        assert_eq!(k.iv.to_vec(), hex("5d 31 3e b2 67 12 76 ee 13 00 0b 30"));
    }

    /// RFC 8448 3: the client's application traffic secret, its key and IV.
    #[test]
    fn rfc8448_client_application_keys() {
        let secret = Secret::new(&hex(
            "9e 40 64 6c e7 9a 7f 9d c0 5a f8 88 9b ce 65 52 87 5a fa 0b 06 df 00 87 f7 92 eb b7 c1 75 04 a5",
        ))
        .unwrap();
        let k = tls13_traffic_keys(HashAlgorithm::Sha256, &secret, 16).unwrap();
        assert_eq!(
            k.key(),
            hex("17 42 2d da 59 6e d5 d9 ac d8 90 e3 c6 3f 50 51")
        );
        assert_eq!(k.iv.to_vec(), hex("5b 78 92 3d ee 08 57 90 33 e5 23 d9"));
    }

    /// The TLS 1.2 PRF vectors published on the IETF TLS list (SHA-256 and SHA-384).
    #[test]
    fn tls12_prf_vectors() {
        let mut out = [0u8; 100];
        tls12_prf(
            HashAlgorithm::Sha256,
            &hex("9bbe436ba940f017b17652849a71db35"),
            b"test label",
            &[&hex("a0ba9f936cda311827a6f796ffd5198c")],
            &mut out,
        )
        .unwrap();
        assert_eq!(
            out.to_vec(),
            hex(
                "e3f229ba727be17b8d122620557cd453c2aab21d07c3d495329b52d4e61edb5a\
                 6b301791e90d35c9c9a46b4e14baf9af0fa022f7077def17abfd3797c0564bab\
                 4fbc91666e9def9b97fce34f796789baa48082d122ee42c5a72e5a5110fff701\
                 87347b66"
            )
        );
        let mut out = [0u8; 148];
        tls12_prf(
            HashAlgorithm::Sha384,
            &hex("b80b733d6ceefcdc71566ea48e5567df"),
            b"test label",
            &[&hex("cd665cf6a8447dd6ff8b27555edb7465")],
            &mut out,
        )
        .unwrap();
        assert_eq!(
            out.to_vec(),
            hex("7b0c18e9ced410ed1804f2cfa34a336a1c14dffb4900bb5fd7942107e81c83cde9ca0faa60be9fe34f82b1233c9146a0e534cb400fed2700884f9dc236f80edd8bfa961144c9e8d792eca722a7b32fc3d416d473ebc2c5fd4abfdad05d9184259b5bf8cd4d90fa0d31e2dec479e4f1a26066f2eea9a69236a3e52655c9e9aee691c8f3a26854308d5eaa3be85e0990703d73e56f")
        );
    }

    #[test]
    fn a_key_update_derives_a_new_secret_of_the_same_length() {
        let s0 = Secret::new(&[7u8; 48]).unwrap();
        let s1 = tls13_next_traffic_secret(HashAlgorithm::Sha384, &s0).unwrap();
        assert_eq!(s1.as_bytes().len(), 48);
        assert_ne!(s1, s0);
        assert!(
            tls13_next_traffic_secret(HashAlgorithm::Sha384, &Secret::new(&[1; 16]).unwrap())
                .is_none()
        );
    }
}
