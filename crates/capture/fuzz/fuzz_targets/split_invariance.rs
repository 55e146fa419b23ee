//! Reading in splits equals reading the whole file: byte 0 picks the format (bit 7: pcapng, else
//! classic pcap; low bits the variant), byte 1 the split count (1..=16), the rest follows the header.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pcapsleuth_capture::Capture;
use pcapsleuth_capture_fuzz::{build_file, check_split_invariance, MAX_SPLITS};

fuzz_target!(|data: &[u8]| {
    let [sel, n, body @ ..] = data else {
        return;
    };
    let n = usize::from(*n) % MAX_SPLITS + 1;
    let Ok(cap) = Capture::from_vec("fuzz.cap", build_file(*sel, body)) else {
        return;
    };
    check_split_invariance(&cap, n);
});
