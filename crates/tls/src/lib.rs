//! The TLS record layer of one captured connection, and its decryption with the keys a user can get.
//!
//! A [`TlsConnection`] takes each sender's bytes in order (reassembled TCP payload; this crate knows
//! nothing of packets), frames the records, reads the hellos (version, including `supported_versions`;
//! cipher suite; randoms; resumption), looks the client random up in a [`KeyLog`] (the NSS key log
//! format, `SSLKEYLOGFILE`), puts each version's keys in force where the protocol does (TLS 1.3's
//! handshake and application traffic keys, KeyUpdates; TLS 1.2's key block at each ChangeCipherSpec),
//! and opens every protected record: AES-128/256-GCM and ChaCha20-Poly1305 for both versions, and AES-CBC
//! with HMAC for TLS 1.2. A record that does not authenticate is counted and reported as missing bytes,
//! never handed on. Without keys, what the handshake shows and the timing of the records remain:
//! [`TlsFacts`] and [`EstimatedExchange`]s.
//!
//! The cryptography is RustCrypto's (`aes-gcm`, `chacha20poly1305`, `aes`, `cbc`, `hmac`, `hkdf`,
//! `sha1`, `sha2`); this crate only builds nonces, additional data and labels as the RFCs say.
//!
//! ```
//! use pcapsleuth_ssl::{At, KeyLog, Plaintext, Sender, TlsConnection};
//!
//! let keys = KeyLog::parse(b"# a key log, as SSLKEYLOGFILE writes it\n");
//! let mut tls = TlsConnection::new();
//! let mut data = Vec::new();
//! // A ClientHello's first bytes: framed, nothing to hand on yet.
//! tls.feed(Sender::Client, &[0x16, 0x03, 0x01, 0x00], At::default(), Some(&keys), &mut |s, p| {
//!     if let Plaintext::Data(bytes, _) = p {
//!         data.push((s, bytes.to_vec()));
//!     }
//! });
//! assert!(data.is_empty());
//! assert!(tls.facts().version.is_none());
//! ```

mod cipher;
mod connection;
mod estimate;
pub mod handshake;
mod keylog;
mod origin;
pub mod record;
pub mod schedule;
mod suite;

pub use cipher::{Framing, OpenError, Opened, Opener, TAG_LEN};
pub use connection::{Alert, KeyStatus, Plaintext, Resumption, TlsConnection, TlsFacts};
pub use estimate::{EstimatedExchange, ExchangeEnd, MIN_MESSAGE};
pub use keylog::{ClientRandom, KeyLog, KeyLogProblem, Secret, SessionSecrets};
pub use origin::{At, Sender};
pub use suite::{
    CipherSuite, HashAlgorithm, MacAlgorithm, ProtocolVersion, RecordProtection, SuiteParameters,
};
