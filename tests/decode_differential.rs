//! The hand-read fast path of packet decoding must say exactly what etherparse says, on every packet of
//! every real capture.

use crate::common;

use pcapsleuth::capture::Capture;
use pcapsleuth::flow::{decode, decode_general, Decoded};

fn facts(d: Decoded<'_>) -> String {
    match d {
        Decoded::Tcp(t) => format!(
            "{}:{}>{}:{} seq {} ack {} win {} flags {:#x} options {:?} payload {:?} len {} ttl {}",
            t.src,
            t.src_port,
            t.dst,
            t.dst_port,
            t.seq,
            t.ack,
            t.window,
            t.flags.0,
            t.options,
            t.payload,
            t.payload_len,
            t.ttl
        ),
        other => format!("{other:?}"),
    }
}

#[test]
fn fast_decoder_agrees_with_etherparse_on_every_real_packet() {
    let mut tcp = 0;
    for path in common::real_captures() {
        let cap = Capture::open(&path).unwrap();
        let mut r = cap.reader_all();
        while let Some(rec) = r.next_record() {
            let fast = decode(rec.link, rec.data);
            tcp += usize::from(matches!(fast, Decoded::Tcp(_)));
            assert_eq!(
                facts(fast),
                facts(decode_general(rec.link, rec.data)),
                "{path:?} frame at offset {}",
                rec.offset
            );
        }
    }
    assert!(tcp > 50_000, "only {tcp} TCP packets compared");
}
