//! Writing captures that Wireshark opens as the original: the source's own header (pcap file header, or
//! pcapng SHB and IDBs) followed by records copied byte for byte.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::{Capture, CaptureError, Record};

/// Writes selected records of a capture into a new file of the same format, link type and timestamps.
pub struct PcapWriter {
    path: PathBuf,
    out: BufWriter<File>,
    records: u64,
}

impl PcapWriter {
    /// Creates `path` and writes the source's preamble. Records of a pcapng source must come from its first
    /// section (every capture tool writes one section).
    pub fn create(path: impl AsRef<Path>, source: &Capture) -> Result<Self, CaptureError> {
        let path = path.as_ref().to_path_buf();
        let file = File::create(&path).map_err(|source| CaptureError::Write {
            path: path.clone(),
            source,
        })?;
        let mut w = PcapWriter {
            path,
            out: BufWriter::with_capacity(1 << 20, file),
            records: 0,
        };
        w.write_raw(source.preamble())?;
        Ok(w)
    }

    /// Appends one record exactly as it was stored.
    pub fn write(&mut self, record: &Record<'_>) -> Result<(), CaptureError> {
        self.records += 1;
        self.write_raw(record.raw)
    }

    /// Appends raw bytes that are whole records of the source (a contiguous run of the file).
    pub fn write_raw(&mut self, bytes: &[u8]) -> Result<(), CaptureError> {
        self.out
            .write_all(bytes)
            .map_err(|source| CaptureError::Write {
                path: self.path.clone(),
                source,
            })
    }

    /// Number of records written with [`PcapWriter::write`].
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Flushes and closes the file.
    pub fn finish(mut self) -> Result<u64, CaptureError> {
        self.out.flush().map_err(|source| CaptureError::Write {
            path: self.path.clone(),
            source,
        })?;
        Ok(self.records)
    }
}
