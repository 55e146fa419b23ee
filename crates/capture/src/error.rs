//! Errors that stop reading a capture ("cannot continue"), as opposed to [`crate::Damage`], which is
//! reported while reading goes on.

use std::path::PathBuf;

/// Why a capture file cannot be read at all.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    #[error("{path}: cannot open: {source}")]
    Open {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: is a directory, not a capture file")]
    IsDirectory { path: PathBuf },
    #[error("{path}: directory without capture files")]
    EmptyDirectory { path: PathBuf },
    #[error("{pattern}: {reason}")]
    Pattern { pattern: String, reason: String },
    #[error("{path}: {what}, not a regular file: Capture maps files; open it as a set or a Stream to read it as a stream")]
    NotRegularFile { path: PathBuf, what: &'static str },
    #[error("{path}: empty file (0 bytes), not a capture")]
    Empty { path: PathBuf },
    #[error("{path}: not a pcap or pcapng capture (first bytes {magic:02x?})")]
    NotACapture { path: PathBuf, magic: Vec<u8> },
    #[error("{path}: capture header cut short at offset {offset} ({len} bytes in file)")]
    TruncatedHeader {
        path: PathBuf,
        offset: u64,
        len: u64,
    },
    #[error("{path}: unsupported link type {linktype} (supported: Ethernet 1, BSD loopback 0/108, raw IP 12/14/101/228/229, Linux cooked 113/276)")]
    UnsupportedLinkType { path: PathBuf, linktype: u32 },
    #[error("{path}: malformed pcapng {what} at offset {offset}")]
    MalformedPcapng {
        path: PathBuf,
        offset: u64,
        what: &'static str,
    },
    #[error("{output}: is the input {input} (the same file): refusing to overwrite a capture being read; write the output elsewhere")]
    OutputIsInput { output: PathBuf, input: PathBuf },
    #[error("{other}: {reason} than {first}: records cannot be copied into one capture with the header of {first}; extract from each file on its own (or convert them with editcap first)")]
    IncompatibleInputs {
        first: PathBuf,
        other: PathBuf,
        reason: String,
    },
    #[error("{path}: cannot read its {compression} compression: {source}")]
    Decompress {
        path: PathBuf,
        compression: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("{source} (after {compression} decompression)")]
    Compressed {
        compression: &'static str,
        source: Box<CaptureError>,
    },
    #[error("{path}: cannot write frame {frame} as pcapng: {reason}")]
    Unwritable {
        path: PathBuf,
        /// The record's number among those written (1-based).
        frame: u64,
        reason: String,
    },
    #[error("{path}: write failed: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl CaptureError {
    /// Says that the capture this error is about was found inside a `compression` stream.
    pub(crate) fn inside(self, compression: &'static str) -> CaptureError {
        CaptureError::Compressed {
            compression,
            source: Box::new(self),
        }
    }
}
