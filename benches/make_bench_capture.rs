//! Builds a large, time-ordered benchmark capture from a real fixture: copies of it one after another,
//! each shifted in time past the previous copy and with its client addresses rewritten (IPv4: the last
//! two octets take the copy number) so every copy's connections are distinct, as in a long busy capture.
//!
//! usage: cargo run --release --example make_bench_capture -- SRC.pcap OUT.pcap SIZE_GB
//! (classic pcap sources with Ethernet link type: see copies.rs.)

use std::io::{BufWriter, Write};

use pcapsleuth::capture::Capture;

#[path = "copies.rs"]
mod copies;

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
            copies::shifted_record(r, copy, period_us, &mut rec_buf);
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
