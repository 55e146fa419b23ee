//! Arbitrary bytes after a valid classic pcap header (Ethernet; byte order, µs/ns and the "modified"
//! variant picked by the first input byte), read whole with `reader_all`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pcapsleuth_capture::Capture;
use pcapsleuth_capture_fuzz::{pcap_header, read_all, with_prefix};

fuzz_target!(|data: &[u8]| {
    let Some((&sel, body)) = data.split_first() else {
        return;
    };
    let cap = Capture::from_vec("fuzz.pcap", with_prefix(pcap_header(sel), body))
        .expect("a valid pcap header must open");
    read_all(&cap);
});
