//! Feeds arbitrary chunks in both directions, with gaps and closes, to a
//! session; checks that nothing panics and that splitting every chunk into
//! smaller pieces gives the same transactions, counters and replication stream.
//!
//! Input: byte 0 picks the start mode and the re-chunking size; then records
//! of `op, len, bytes[len]`: op & 3 = 0/1 data, 2 gap (len * 97 bytes), 3 close;
//! op & 4 = server direction; op & 8 = RST.
#![no_main]

use libfuzzer_sys::fuzz_target;

include!("../session_script.rs");

fuzz_target!(|data: &[u8]| {
    let Some((&head, rest)) = data.split_first() else {
        return;
    };
    let mode = if head & 1 == 0 {
        StartMode::Handshake
    } else {
        StartMode::MidStream
    };
    let piece = usize::from(head >> 1) % 7 + 1;
    let evs = parse(rest);
    let whole = run(mode, &evs, usize::MAX);
    let split = run(mode, &evs, piece);
    assert_eq!(whole, split, "chunking changed the result");
});
