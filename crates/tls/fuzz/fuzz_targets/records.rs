//! Feeds arbitrary bytes of both senders, with gaps and a close, to a TLS connection, with the key log of
//! RFC 8448's trace or none; checks that nothing panics and that cutting every chunk into smaller pieces
//! hands on the same plaintext, says the same bytes missing, and ends in the same facts and exchanges.
//!
//! Input: byte 0: bit 0 gives the key log, bits 1..=4 the re-chunking size (1 to 16); then records of
//! `op, len, bytes[len]`: op & 1 = server, op & 6 = 2 a gap of len * 31 bytes, 4 the close, else data.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pcapsleuth_ssl::{At, KeyLog, Plaintext, Sender, TlsConnection};

const CLIENT_RANDOM: &str = "cb34ecb1e78163ba1c38c6dacb196a6dffa21a8d9912ec18a2ef6283024dece7";

fn key_log() -> KeyLog {
    KeyLog::parse(
        format!(
            "CLIENT_HANDSHAKE_TRAFFIC_SECRET {CLIENT_RANDOM} b3eddb126e067f35a780b3abf45e2d8f3b1a950738f52e9600746a0e27a55a21\n\
             SERVER_HANDSHAKE_TRAFFIC_SECRET {CLIENT_RANDOM} b67b7d690cc16c4e75e54213cb2d37b4e9c912bcded9105d42befd59d391ad38\n\
             CLIENT_TRAFFIC_SECRET_0 {CLIENT_RANDOM} 9e40646ce79a7f9dc05af8889bce6552875afa0b06df0087f792ebb7c17504a5\n\
             SERVER_TRAFFIC_SECRET_0 {CLIENT_RANDOM} a11af9f05531f856ad47116b45a950328204b4f44bfb6b3a4b4f1f3fcb631643\n\
             CLIENT_RANDOM {} {}\n",
            "00".repeat(32),
            "11".repeat(48)
        )
        .as_bytes(),
    )
}

enum Ev<'a> {
    Data(Sender, &'a [u8]),
    Gap(Sender, u64),
    Close,
}

fn parse(data: &[u8]) -> Vec<Ev<'_>> {
    let mut evs = Vec::new();
    let mut i = 0;
    while i + 1 < data.len() {
        let (op, len) = (data[i], usize::from(data[i + 1]));
        i += 2;
        let sender = if op & 1 != 0 { Sender::Server } else { Sender::Client };
        match op & 6 {
            2 => evs.push(Ev::Gap(sender, len as u64 * 31)),
            4 => evs.push(Ev::Close),
            _ => {
                let end = (i + len).min(data.len());
                evs.push(Ev::Data(sender, &data[i..end]));
                i = end;
            }
        }
    }
    evs
}

#[derive(Debug, PartialEq)]
struct Outcome {
    plaintext: [Vec<u8>; 2],
    missing: [u64; 2],
    facts: String,
    exchanges: String,
}

fn run(evs: &[Ev<'_>], keys: Option<&KeyLog>, piece: usize) -> Outcome {
    let mut tls = TlsConnection::new();
    let mut plaintext = [Vec::new(), Vec::new()];
    let mut missing = [0u64; 2];
    let mut exchanges = Vec::new();
    for (n, ev) in evs.iter().enumerate() {
        let at = At {
            ts_ns: n as u64 * 1000,
            frame: n as u64 + 1,
        };
        let mut out = |s: Sender, p: Plaintext<'_>| {
            let k = usize::from(s == Sender::Server);
            match p {
                Plaintext::Data(b, _) => plaintext[k].extend_from_slice(b),
                Plaintext::Missing(m, _) => missing[k] += m,
            }
        };
        match ev {
            Ev::Data(s, bytes) => {
                for chunk in bytes.chunks(piece) {
                    tls.feed(*s, chunk, at, keys, &mut out);
                }
                if bytes.is_empty() {
                    tls.feed(*s, bytes, at, keys, &mut out);
                }
            }
            Ev::Gap(s, len) => tls.gap(*s, *len, at, &mut out),
            Ev::Close => tls.closed(),
        }
        exchanges.extend(tls.take_exchanges());
    }
    tls.finish();
    exchanges.extend(tls.take_exchanges());
    Outcome {
        plaintext,
        missing,
        facts: format!("{:?}", tls.facts()),
        exchanges: format!("{exchanges:?}"),
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&head, rest)) = data.split_first() else {
        return;
    };
    let keys = key_log();
    let keys = (head & 1 != 0).then_some(&keys);
    let piece = usize::from((head >> 1) & 15) + 1;
    let evs = parse(rest);
    let whole = run(&evs, keys, usize::MAX);
    let cut = run(&evs, keys, piece);
    assert_eq!(whole, cut, "re-chunked by {piece}");
});
