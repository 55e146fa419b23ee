//! Arbitrary bytes after a valid pcapng SHB + Ethernet IDB (byte order, IDB snap length and
//! `if_tsresol` picked by the first input byte), read whole with `reader_all`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pcapsleuth_capture::Capture;
use pcapsleuth_capture_fuzz::{pcapng_preamble, read_all, with_prefix};

fuzz_target!(|data: &[u8]| {
    let Some((&sel, body)) = data.split_first() else {
        return;
    };
    // The body may itself open with packet-free blocks that fail the preamble checks (an SHB starting a
    // section with no interfaces, an IDB of an unsupported link type): those are errors, not crashes.
    let Ok(cap) = Capture::from_vec("fuzz.pcapng", with_prefix(pcapng_preamble(sel), body)) else {
        return;
    };
    read_all(&cap);
});
