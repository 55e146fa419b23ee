//! Builds a large, time-ordered benchmark capture from a real fixture: copies of it one after another,
//! each shifted in time past the previous copy and with its client addresses rewritten (IPv4: the last
//! two octets take the copy number) so every copy's connections are distinct, as in a long busy capture.
//!
//! usage: cargo run --release --example make_bench_capture -- SRC.pcap OUT.pcap SIZE_GB
//! (classic pcap sources with Ethernet link type; checksums are not recomputed, as no reader checks them.)

use std::io::{BufWriter, Write};

use pcapsleuth::capture::Capture;
use pcapsleuth::flow::{decode, Decoded};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 4 {
        return Err("usage: make_bench_capture SRC.pcap OUT.pcap SIZE_GB".into());
    }
    let cap = Capture::open(&args[1])?;
    let target = (args[3].parse::<f64>()? * 1e9) as u64;
    let bytes = cap.bytes();
    let mut records = Vec::new();
    let mut reader = cap.reader_all();
    while let Some(r) = reader.next_record() {
        records.push(r);
    }
    let (first, last) = (records[0].ts.0, records[records.len() - 1].ts.0);
    let period_us = ((last - first) / 1000 + 1_000_000) as u64;
    let mut out = BufWriter::with_capacity(8 << 20, std::fs::File::create(&args[2])?);
    out.write_all(&bytes[..24])?;
    let mut written = 24u64;
    let mut copy: u64 = 0;
    let mut rec_buf = Vec::new();
    while written < target {
        for r in &records {
            rec_buf.clear();
            rec_buf.extend_from_slice(r.raw);
            // Timestamp: classic little-endian µs header (the fixtures are).
            let ts_us = (r.ts.0 / 1000) as u64 + copy * period_us;
            rec_buf[0..4].copy_from_slice(&((ts_us / 1_000_000) as u32).to_le_bytes());
            rec_buf[4..8].copy_from_slice(&((ts_us % 1_000_000) as u32).to_le_bytes());
            if let Decoded::Tcp(seg) = decode(r.link, r.data) {
                // The client is the side with the higher port; its IPv4 address sits at 26 (src) or 30 (dst)
                // of the Ethernet frame, i.e. 16 + 26/30 in the record.
                let client_is_src = seg.src_port > seg.dst_port;
                let at = 16 + if client_is_src { 26 } else { 30 };
                if let Some(addr) = rec_buf.get_mut(at + 2..at + 4) {
                    addr.copy_from_slice(&((copy % 60_000) as u16 + 1024).to_be_bytes());
                }
            }
            out.write_all(&rec_buf)?;
            written += rec_buf.len() as u64;
        }
        copy += 1;
    }
    out.flush()?;
    eprintln!(
        "wrote {written} bytes, {copy} copies of {} records",
        records.len()
    );
    Ok(())
}
