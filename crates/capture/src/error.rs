//! Errors that stop reading a capture ("cannot continue"), as opposed to [`crate::Damage`], which is
//! reported while reading goes on.

use std::path::PathBuf;

/// Why a capture file cannot be read at all.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    /// The file (or a directory to list) could not be opened, inspected or mapped.
    #[error("{path}: cannot open: {source}")]
    Open {
        /// The path given.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A directory was given where one capture file is needed ([`crate::Capture::open`],
    /// [`crate::Input::open`]); [`crate::expand`] turns a directory into its files.
    #[error("{path}: is a directory, not a capture file")]
    IsDirectory {
        /// The directory.
        path: PathBuf,
    },
    /// A directory named as input holds no capture file (hidden files are not looked at).
    #[error("{path}: directory without capture files")]
    EmptyDirectory {
        /// The directory.
        path: PathBuf,
    },
    /// A glob pattern named as input is malformed or matches no file.
    #[error("{pattern}: {reason}")]
    Pattern {
        /// The pattern as given.
        pattern: String,
        /// What is wrong with it ("no file matches", or the glob parser's message).
        reason: String,
    },
    /// [`crate::Capture`] was asked to map something that is not a regular file (standard input, a
    /// pipe, a socket, a device).
    #[error("{path}: {what}, not a regular file: Capture maps files; open it as a set or a Stream to read it as a stream")]
    NotRegularFile {
        /// The path given (`-` for standard input).
        path: PathBuf,
        /// What it is instead, in words ("standard input", "a pipe, socket or device").
        what: &'static str,
    },
    /// The file has no bytes.
    #[error("{path}: empty file (0 bytes), not a capture")]
    Empty {
        /// The file.
        path: PathBuf,
    },
    /// The file starts with neither a pcap magic number nor a pcapng Section Header Block.
    #[error("{path}: not a pcap or pcapng capture (first bytes {magic:02x?})")]
    NotACapture {
        /// The file.
        path: PathBuf,
        /// Its first bytes (up to 4), shown in hex in the message.
        magic: Vec<u8>,
    },
    /// The file ends inside its pcap file header or pcapng Section Header Block.
    #[error("{path}: capture header cut short at offset {offset} ({len} bytes in file)")]
    TruncatedHeader {
        /// The file.
        path: PathBuf,
        /// File offset of the header that is cut short.
        offset: u64,
        /// The file's length in bytes.
        len: u64,
    },
    /// A classic pcap file whose link type pcapsleuth cannot decode (a pcapng interface of such a type
    /// is not an error: its packets are counted, not decoded).
    #[error("{path}: unsupported link type {linktype} (supported: Ethernet 1, BSD loopback 0/108, raw IP 12/14/101/228/229, Linux cooked 113/276)")]
    UnsupportedLinkType {
        /// The file.
        path: PathBuf,
        /// The `LINKTYPE_*` number its header states.
        linktype: u32,
    },
    /// A pcapng block before the first packet (Section Header Block, Interface Description Block)
    /// cannot be read.
    #[error("{path}: malformed pcapng {what} at offset {offset}")]
    MalformedPcapng {
        /// The file.
        path: PathBuf,
        /// File offset of the block.
        offset: u64,
        /// Which block or field, in words.
        what: &'static str,
    },
    /// The file's first pcapng section is of a major version other than 1: the specification's readers
    /// must not read it (see [`crate::Section::unknown_version`]).
    #[error("{path}: pcapng section of version {major}.{minor} at offset {offset}: this reader knows only version 1, and a section of an unknown major version must not be read")]
    PcapngVersion {
        /// The file.
        path: PathBuf,
        /// File offset of the Section Header Block.
        offset: u64,
        /// The major version it gives.
        major: u16,
        /// The minor version it gives.
        minor: u16,
    },
    /// An output file is one of the inputs (the same device and inode, whatever the names): writing
    /// it would destroy the capture being read.
    #[error("{output}: is the input {input} (the same file): refusing to overwrite a capture being read; write the output elsewhere")]
    OutputIsInput {
        /// The output path given.
        output: PathBuf,
        /// The input it is the same file as.
        input: PathBuf,
    },
    /// Records of several files cannot be copied byte for byte into one capture: the files differ in
    /// format, byte order, timestamp precision, link type or pcapng interfaces.
    #[error("{other}: {reason} than {first}: records cannot be copied into one capture with the header of {first}; extract from each file on its own (or convert them with editcap first)")]
    IncompatibleInputs {
        /// The set's first file, whose header the output would have.
        first: PathBuf,
        /// The file that differs from it.
        other: PathBuf,
        /// How it differs, in words ("has link type 113, not 1").
        reason: String,
    },
    /// A compressed file's first bytes could not be decompressed.
    #[error("{path}: cannot read its {compression} compression: {source}")]
    Decompress {
        /// The file.
        path: PathBuf,
        /// The compression's name ("gzip", "zstd", "xz", "lz4").
        compression: &'static str,
        /// The decompressor's error.
        #[source]
        source: std::io::Error,
    },
    /// The capture inside a compressed file cannot be read: `source` says why.
    #[error("{source} (after {compression} decompression)")]
    Compressed {
        /// The compression's name ("gzip", "zstd", "xz", "lz4").
        compression: &'static str,
        /// What is wrong with the decompressed capture.
        source: Box<CaptureError>,
    },
    /// A record cannot be written as pcapng (a timestamp before 1970, a link type or a length that
    /// pcapng's fields cannot hold).
    #[error("{path}: cannot write frame {frame} as pcapng: {reason}")]
    Unwritable {
        /// The output file.
        path: PathBuf,
        /// The record's number among those written (1-based).
        frame: u64,
        /// What pcapng cannot hold, in words.
        reason: String,
    },
    /// Writing an output file failed (creating it, writing, or renaming it into place).
    #[error("{path}: write failed: {source}")]
    Write {
        /// The output file.
        path: PathBuf,
        /// The operating system's error.
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
