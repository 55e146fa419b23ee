//! Properties of the record layer on RFC 8448's trace: where the bytes are cut changes nothing, and no
//! damage anywhere (a flipped byte, bytes lost) ever hands on plaintext that is not the trace's.

use proptest::prelude::*;

use crate::rfc8448::{key_log, trace};
use pcapsleuth_ssl::{Plaintext, Sender, TlsConnection};

fn side(s: Sender) -> usize {
    usize::from(s == Sender::Server)
}

/// The trace's bytes fed in pieces of `piece`, after `damage` is applied to the record at `record`;
/// returns what was handed on per sender and the facts.
fn feed(
    piece: usize,
    damage: impl Fn(usize, &mut Vec<u8>) -> Option<u64>,
) -> ([Vec<u8>; 2], String) {
    let keys = key_log();
    let mut tls = TlsConnection::new();
    let mut data = [Vec::new(), Vec::new()];
    for (n, (sender, mut bytes, at)) in trace().into_iter().enumerate() {
        let mut out = |s: Sender, p: Plaintext<'_>| {
            if let Plaintext::Data(b, _) = p {
                data[side(s)].extend_from_slice(b);
            }
        };
        if let Some(lost) = damage(n, &mut bytes) {
            tls.gap(sender, lost, at, &mut out);
        }
        for chunk in bytes.chunks(piece.max(1)) {
            tls.feed(sender, chunk, at, Some(&keys), &mut out);
        }
    }
    tls.finish();
    (data, format!("{:?}", tls.facts()))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn any_cut_gives_the_same_plaintext_and_facts(piece in 1usize..700) {
        let whole = feed(usize::MAX, |_, _| None);
        prop_assert_eq!(feed(piece, |_, _| None), whole);
    }

    #[test]
    fn a_flipped_byte_never_hands_on_other_plaintext(record in 0usize..7, at in 0usize..700, bit in 0u8..8, piece in 1usize..64) {
        let payload: Vec<u8> = (0u8..=0x31).collect();
        let (data, _) = feed(piece, |n, b| {
            if n == record && !b.is_empty() {
                let i = at % b.len();
                b[i] ^= 1 << bit;
            }
            None
        });
        for d in data {
            prop_assert!(d.is_empty() || d == payload, "{:?}", d);
        }
    }

    #[test]
    fn bytes_lost_never_hand_on_other_plaintext(record in 0usize..7, from in 0usize..700, len in 1usize..300) {
        let payload: Vec<u8> = (0u8..=0x31).collect();
        let (data, _) = feed(usize::MAX, |n, b| {
            if n != record || b.is_empty() {
                return None;
            }
            let from = from % b.len();
            let to = (from + len).min(b.len());
            // The bytes before `from` come first, then the gap, then the rest: fed as the capture would.
            let lost = (to - from) as u64;
            b.drain(from..to);
            Some(lost).filter(|_| from == 0)
        });
        for d in data {
            prop_assert!(d.is_empty() || d == payload, "{:?}", d);
        }
    }
}
