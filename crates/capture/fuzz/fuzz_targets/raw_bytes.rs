//! Completely arbitrary bytes as a capture file: opening may fail, but nothing may panic, and whatever
//! opens reads whole, reads the same in splits, and resyncs within bounds.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pcapsleuth_capture::Capture;
use pcapsleuth_capture_fuzz::{check_resync, check_split_invariance, MAX_SPLITS};

fuzz_target!(|data: &[u8]| {
    let Ok(cap) = Capture::from_vec("fuzz.bin", data.to_vec()) else {
        return;
    };
    let _ = (
        cap.format().describe(),
        cap.preamble().len(),
        format!("{cap:?}"),
    );
    let n = data.last().map_or(1, |&b| usize::from(b) % MAX_SPLITS + 1);
    check_split_invariance(&cap, n);
    let len = cap.len();
    for (from, limit) in [
        (0, len),
        (len / 3, len / 2),
        (len / 2, len + 7),
        (len, u64::MAX),
    ] {
        check_resync(&cap, from, limit);
    }
});
