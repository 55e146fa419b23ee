//! Zero-copy reading of pcap and pcapng captures, cut into byte-range splits that parallel workers read
//! independently.
//!
//! A [`Capture`] maps the file and knows its format. [`Capture::plan_splits`] cuts the record area into
//! byte ranges; each [`Split`] starts at a record boundary found by *resynchronisation* (a chain of
//! plausible record headers). A [`RecordReader`] walks one split and yields [`Record`]s borrowing the
//! file's bytes. Splits are a guess made without reading what precedes them, so every reader ends with a
//! [`ReaderState`] (where the next record starts and, for pcapng, which interfaces are defined) and the
//! caller checks that it equals the next split's starting state: [`Capture::reader_after`] re-reads a
//! split from the proven state when it does not. That check is what makes results independent of the
//! number of splits.
//!
//! Records are written out by [`PcapWriter`] (copied byte for byte, in the source's own format) and
//! [`PcapngWriter`] (as pcapng, where a packet can carry comments that Wireshark shows).
//!
//! Several files read as one capture (a rotated set, a directory, files overlapping in time) are a
//! [`CaptureSet`]; compressed files, pipes and standard input are read as a [`Stream`] of windows. What
//! reading survived (a file cut short mid-record, a corrupt header skipped by resynchronisation) is
//! [`Damage`], reported beside the records; what stops reading altogether is a [`CaptureError`].
//!
//! Reading a capture in four splits, each proven against where the previous one ended:
//!
//! ```
//! use pcapsleuth_capture::Capture;
//! let cap = Capture::open(concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/server-closes.pcap"))?;
//! let mut frames = 0u64;
//! let mut state = cap.initial_state().clone();
//! for split in cap.plan_splits(4) {
//!     // A split whose guessed start is not where the previous one ended is read from there instead.
//!     let mut reader = if split.continues(&state) {
//!         cap.reader(&split)
//!     } else {
//!         cap.reader_after(state, split.end)
//!     };
//!     while let Some(record) = reader.next_record() {
//!         frames += 1; // Wireshark's frame number of this record
//!         assert!(record.ts.as_secs_f64() > 1.7e9 && !record.is_truncated());
//!     }
//!     assert!(reader.damage().is_empty());
//!     state = reader.state();
//! }
//! assert_eq!(frames, 29);
//! # Ok::<(), pcapsleuth_capture::CaptureError>(())
//! ```

#![deny(missing_docs)]

mod error;
mod guard;
mod link;
mod merge;
mod pcap;
mod pcapng;
mod set;
mod split;
pub mod staging;
mod stream;
mod write;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

pub use error::CaptureError;
pub use link::LinkType;
pub use pcapng::DecryptionSecrets;
pub use set::{capture_stem, expand, natural_cmp, CaptureSet, Input, Order};
pub use split::Split;
pub use stream::{Compression, Stream, StreamWindow};
pub use write::{
    refuse_input_as_output, write_file, OutputFile, PcapWriter, PcapngWriter, Preamble,
    MAX_COMMENT_BYTES,
};

/// The identity of a file: device and inode. Two paths name the same file when these agree, whatever
/// the names (hard links, symlinks, `./x` and `x`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FileId {
    dev: u64,
    ino: u64,
}

impl FileId {
    /// The identity of an opened file.
    pub fn of(meta: &std::fs::Metadata) -> Self {
        use std::os::unix::fs::MetadataExt;
        FileId {
            dev: meta.dev(),
            ino: meta.ino(),
        }
    }

    /// The identity of the file at `path` (following symlinks), if there is one.
    pub fn of_path(path: &Path) -> Option<Self> {
        std::fs::metadata(path).ok().map(|m| Self::of(&m))
    }

    /// The identity of what standard input is open on (`< x.pcap`: that file; a pipe: the pipe), so
    /// that an output is never the file read through `-`.
    pub fn of_stdin() -> Option<Self> {
        use std::os::fd::AsFd;
        let fd = std::io::stdin().as_fd().try_clone_to_owned().ok()?;
        std::fs::File::from(fd)
            .metadata()
            .ok()
            .map(|m| Self::of(&m))
    }
}

/// Nanoseconds since the Unix epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Timestamp(pub i64);

impl serde::Serialize for Timestamp {
    /// Seconds since the epoch, as a float: what scripts and Wireshark's `frame.time_epoch` use.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(self.as_secs_f64())
    }
}

impl Timestamp {
    /// Seconds since the epoch as a float (for JSON and display).
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
}

/// One captured packet, borrowing the file's bytes.
#[derive(Debug, Clone, Copy)]
pub struct Record<'a> {
    /// File offset of the record (classic pcap record header or pcapng block).
    pub offset: u64,
    /// The whole record as stored (header, data, padding, options): what a byte-identical copy writes.
    pub raw: &'a [u8],
    /// The captured bytes of the packet, starting with the link-layer header.
    pub data: &'a [u8],
    /// The packet's length on the wire (may exceed `data.len()` when cut by the snap length).
    pub orig_len: u32,
    /// When the packet was captured, as the record's header says it (for pcapng, with the interface's
    /// `if_tsresol` and `if_tsoffset` applied).
    pub ts: Timestamp,
    /// How to decode `data`: the file's link type (pcap), or the link type of the record's interface
    /// (pcapng).
    pub link: LinkType,
    /// pcapng interface id (0 for classic pcap).
    pub interface: u32,
}

impl Record<'_> {
    /// Whether the snap length cut this packet short.
    pub fn is_truncated(&self) -> bool {
        (self.data.len() as u64) < u64::from(self.orig_len)
    }
}

/// Something wrong in the file that reading survived.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damage {
    /// Which file of a set of inputs (0 for a single file).
    pub input: usize,
    /// File offset where it was found.
    pub offset: u64,
    /// What was wrong, and what the reader did about it.
    pub kind: DamageKind,
}

/// Damage a stream's source records while it is read on the decompressing thread (or merged on the
/// merging one), for the last window.
pub(crate) type LateDamage = Arc<std::sync::Mutex<Vec<Damage>>>;

/// What kind of damage a reader survived.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DamageKind {
    /// The file ends inside a record (a capture killed mid-write): the partial record is dropped.
    TruncatedTail {
        /// Bytes of the record present in the file, from its header to the end of the file.
        have: u64,
        /// Bytes the record's header says it takes.
        need: u64,
    },
    /// A record header made no sense; reading resumed at the next valid record, `skipped` bytes later.
    CorruptRecord {
        /// What made no sense, in words (e.g. a captured length above what the snap length allows).
        reason: String,
        /// Bytes passed over, from the corrupt header to the next record that resynchronisation
        /// accepted (or to the end of the file).
        skipped: u64,
    },
    /// A pcapng packet block names an interface no IDB defined, or an IDB with an unusable option.
    BadInterface {
        /// Which interface or option, in words.
        reason: String,
    },
    /// The file became shorter while it was read (logrotate's `copytruncate`, a rewrite): reading
    /// stopped at the new end, `offset`.
    Shrank {
        /// The file's length in bytes when it was opened and mapped.
        mapped: u64,
    },
    /// The file grew while it was read (a capture still being written): what was added after it was
    /// opened is not read. `offset` is the length that was read.
    Grew {
        /// The file's length in bytes when the growth was noticed.
        now: u64,
    },
    /// A pcapng Section Header Block at `offset` gives a major version other than 1: nothing from it on is
    /// read (see [`Section::unknown_version`]).
    UnknownPcapngVersion {
        /// The major version it gives.
        major: u16,
        /// The minor version it gives.
        minor: u16,
    },
    /// A compressed file ends before its compressed stream does (a download or copy cut short): the
    /// records before are read.
    CompressedCutShort {
        /// The compression's name ([`Compression::name`]: "gzip", "zstd", ...).
        compression: &'static str,
    },
    /// The stream could not be read further (corrupt compressed data, a read error): `offset` is where
    /// the capture bytes stopped.
    Unreadable {
        /// The decompressor's or the read's error, in words.
        reason: String,
    },
    /// Damage in one of several files merged by time: `damage` (with its offset in that file) was
    /// found in `file`; `offset` is where the merged capture stood.
    InMergedFile {
        /// The file of the merge the damage was found in.
        file: PathBuf,
        /// The damage, as reading that file alone found it.
        damage: Box<Damage>,
    },
}

impl Damage {
    /// The damage of a read as it is said: a run of corrupt records each of which begins where the
    /// previous one's skipped bytes end (garbage across the windows of a stream, each read on its own)
    /// is one, with the bytes of all, at the first one's offset and with its reason.
    pub fn coalesced(list: Vec<Damage>) -> Vec<Damage> {
        let mut out: Vec<Damage> = Vec::with_capacity(list.len());
        for d in list {
            if let (
                Some(Damage {
                    input,
                    offset,
                    kind: DamageKind::CorruptRecord { skipped, .. },
                }),
                DamageKind::CorruptRecord { skipped: more, .. },
            ) = (out.last_mut(), &d.kind)
            {
                if *input == d.input && offset.checked_add(*skipped) == Some(d.offset) {
                    *skipped += more;
                    continue;
                }
            }
            out.push(d);
        }
        out
    }

    /// The same damage, found in input `input` of a set.
    pub fn in_input(mut self, input: usize) -> Self {
        self.input = input;
        self
    }

    /// Tail truncation is what a killed tcpdump leaves: worth a warning, not a failure.
    pub fn is_fatal(&self) -> bool {
        if let DamageKind::InMergedFile { damage, .. } = &self.kind {
            return damage.is_fatal();
        }
        !matches!(
            self.kind,
            DamageKind::TruncatedTail { .. }
                | DamageKind::Shrank { .. }
                | DamageKind::Grew { .. }
                | DamageKind::CompressedCutShort { .. }
        )
    }
}

impl fmt::Display for Damage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            DamageKind::InMergedFile { file, damage } => write!(f, "in {}: {damage}", file.display()),
            DamageKind::TruncatedTail { have, need } => write!(
                f,
                "file ends inside the record at offset {} ({have} of {need} bytes present; capture cut short?)",
                self.offset
            ),
            DamageKind::CorruptRecord { reason, skipped } => write!(
                f,
                "corrupt record at offset {}: {reason}; skipped {skipped} bytes to the next valid record",
                self.offset
            ),
            DamageKind::BadInterface { reason } => write!(f, "at offset {}: {reason}", self.offset),
            DamageKind::UnknownPcapngVersion { major, minor } => write!(
                f,
                "the pcapng section at offset {} is of version {major}.{minor}, and this reader knows only \
                 version 1: such a section must not be read, and where it ends cannot be known, so the rest \
                 of the file is not read",
                self.offset
            ),
            DamageKind::Shrank { mapped } => write!(
                f,
                "the file shrank from {mapped} to {} bytes while it was read (truncated by logrotate's copytruncate?): reading stopped where its data ended",
                self.offset
            ),
            DamageKind::CompressedCutShort { compression } => write!(
                f,
                "the {compression} stream ends early, after {} bytes of capture (file cut short?): the records before are read",
                self.offset
            ),
            DamageKind::Unreadable { reason } => write!(
                f,
                "cannot read past offset {} of the capture: {reason}",
                self.offset
            ),
            DamageKind::Grew { now } => write!(
                f,
                "the file grew from {} to {now} bytes while it was read (still being written?): results cover the first {} bytes",
                self.offset, self.offset
            ),
        }
    }
}

/// The on-disk format of a capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Classic pcap (libpcap's format), with what its file header says: byte order, timestamp precision,
    /// snap length and link type.
    Pcap(pcap::PcapFormat),
    /// pcapng; byte order and link types are per section and per interface ([`Section`]).
    PcapNg,
}

impl Format {
    /// A short human name: "pcap (µs, little-endian)", "pcapng".
    pub fn describe(&self) -> String {
        match self {
            Format::Pcap(p) => p.describe(),
            Format::PcapNg => "pcapng".into(),
        }
    }
}

/// A pcapng interface, as its Interface Description Block defined it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interface {
    /// The interface's link type, as pcapsleuth decodes it.
    pub link: LinkType,
    /// The interface's `LINKTYPE_*` number as the block states it (kept for types [`LinkType::Other`]
    /// does not name, and for messages).
    pub linktype: u32,
    /// The interface's snap length in bytes (0: no limit); longer captured lengths are cut to it.
    pub snaplen: u32,
    /// Timestamp units per second (`if_tsresol`; 10^6 when absent).
    pub ts_units_per_sec: u64,
    /// `if_tsoffset`, seconds added to every timestamp.
    pub ts_offset_s: i64,
}

/// The part of a reader's state that a split boundary must agree on besides the offset: for pcapng the
/// current section's byte order and interfaces. Shared, because it changes only at SHB/IDB blocks.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Section {
    /// Whether the section was written big-endian (from its Section Header Block's byte-order magic).
    pub big_endian: bool,
    /// The interfaces the section defined so far, in order: a packet block's interface id indexes this
    /// list.
    pub interfaces: Vec<Interface>,
    /// The section's version (major, minor) when its major version is not 1, the only one pcapng has:
    /// the specification's readers must not read such a section, whose blocks may be laid out otherwise,
    /// and where it ends cannot be known (its Section Length is not among the fields a new major version
    /// keeps in place), so nothing from its header on is read. `None` for a section that is read.
    pub unknown_version: Option<(u16, u16)>,
}

/// Where a reader stands between two records: enough to continue reading exactly as a sequential reader
/// would.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReaderState {
    /// File offset of the next record.
    pub offset: u64,
    /// The pcapng section in force at `offset` (the default, empty section for classic pcap).
    pub section: Arc<Section>,
}

enum Bytes {
    Mapped(memmap2::Mmap),
    Owned(Vec<u8>),
}

impl std::ops::Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Mapped(m) => m,
            Bytes::Owned(v) => v,
        }
    }
}

/// An opened capture file.
pub struct Capture {
    path: PathBuf,
    bytes: Bytes,
    format: Format,
    /// State before the first record: after the pcap header, or after the pcapng SHB/IDBs that precede
    /// the first packet.
    initial: ReaderState,
    /// The file, for checking its size again, and its identity.
    file: Option<(std::fs::File, FileId)>,
    /// Records are read up to here: the mapped length, lowered when the file shrinks.
    limit: AtomicU64,
    /// Makes a page that vanishes from the mapping read as zeros instead of killing the process.
    /// Declared after `bytes`, so that it is unregistered only after the mapping is gone.
    guard: Option<guard::Guard>,
}

impl fmt::Debug for Capture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Capture")
            .field("path", &self.path)
            .field("len", &self.bytes.len())
            .field("format", &self.format)
            .finish()
    }
}

const PCAPNG_SHB: [u8; 4] = [0x0A, 0x0D, 0x0D, 0x0A];

/// The format of a capture from its first bytes, and the state before its first record: after the pcap
/// header, or after the pcapng SHB and the IDBs that precede the first packet.
fn read_header(path: &Path, bytes: &[u8]) -> Result<(Format, ReaderState), CaptureError> {
    if bytes.starts_with(&PCAPNG_SHB) {
        let (section, first) = pcapng::read_preamble(path, bytes)?;
        let initial = ReaderState {
            offset: first,
            section: Arc::new(section),
        };
        return Ok((Format::PcapNg, initial));
    }
    let format = pcap::PcapFormat::parse(path, bytes)?;
    if !format.link.is_supported() {
        return Err(CaptureError::UnsupportedLinkType {
            path: path.to_path_buf(),
            linktype: format.linktype,
        });
    }
    let initial = ReaderState {
        offset: pcap::FILE_HEADER_LEN as u64,
        section: Arc::new(Section::default()),
    };
    Ok((Format::Pcap(format), initial))
}

/// What a mapped capture does if its file shrinks while it is read (logrotate's `copytruncate`): reading
/// a vanished page of a mapping raises SIGBUS, which kills the process.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Truncation {
    /// Survive it: the first guarded capture installs a process-wide SIGBUS handler that maps zeros over a
    /// vanished page of a guarded mapping, and reading stops at the file's new end (said as damage); a
    /// fault elsewhere goes to the handler installed before. The default, and what [`Capture::open`] and
    /// [`CaptureSet::open`] do.
    #[default]
    Guarded,
    /// Install no handler (for a program that owns its signal handling): a capture that shrinks while it
    /// is read kills the process with SIGBUS.
    Unguarded,
}

impl Capture {
    /// Opens and memory-maps a capture, reading its header(s). The mapping is guarded against the file
    /// shrinking while it is read, with a process-wide SIGBUS handler ([`Truncation::Guarded`]);
    /// [`Capture::open_with`] can leave the process's signal handlers alone.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, CaptureError> {
        Self::open_with(path, Truncation::Guarded)
    }

    /// [`Capture::open`], with the choice of what a file that shrinks while it is read does.
    pub fn open_with(path: impl AsRef<Path>, truncation: Truncation) -> Result<Self, CaptureError> {
        let path = path.as_ref().to_path_buf();
        if path.as_os_str() == "-" {
            return Err(CaptureError::NotRegularFile {
                path,
                what: "standard input",
            });
        }
        let meta = std::fs::metadata(&path).map_err(|source| CaptureError::Open {
            path: path.clone(),
            source,
        })?;
        if meta.is_dir() {
            return Err(CaptureError::IsDirectory { path });
        }
        if !meta.is_file() {
            return Err(CaptureError::NotRegularFile {
                path,
                what: "a pipe, socket or device",
            });
        }
        if meta.len() == 0 {
            return Err(CaptureError::Empty { path });
        }
        let file = std::fs::File::open(&path).map_err(|source| CaptureError::Open {
            path: path.clone(),
            source,
        })?;
        // SAFETY: the map is read-only; a capture being rewritten underneath us could change bytes
        // between reads, which every decoder tolerates (all lengths are re-checked against the slice),
        // and a capture truncated underneath us is survived by the guard registered just below (when
        // guarded).
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|source| CaptureError::Open {
            path: path.clone(),
            source,
        })?;
        let guard = match truncation {
            Truncation::Guarded => guard::Guard::register(map.as_ptr(), map.len()),
            Truncation::Unguarded => None,
        };
        let mut cap = Self::from_bytes_inner(path, Bytes::Mapped(map))?;
        cap.file = Some((file, FileId::of(&meta)));
        cap.guard = guard;
        Ok(cap)
    }

    /// A capture held in memory (tests, fuzzing, embedding); `name` stands in for the path in messages.
    pub fn from_vec(name: impl Into<PathBuf>, bytes: Vec<u8>) -> Result<Self, CaptureError> {
        let path = name.into();
        if bytes.is_empty() {
            return Err(CaptureError::Empty { path });
        }
        Self::from_bytes_inner(path, Bytes::Owned(bytes))
    }

    fn from_bytes_inner(path: PathBuf, bytes: Bytes) -> Result<Self, CaptureError> {
        let (format, initial) = read_header(&path, &bytes)?;
        Ok(Capture {
            path,
            limit: AtomicU64::new(bytes.len() as u64),
            bytes,
            format,
            initial,
            file: None,
            guard: None,
        })
    }

    /// The path the capture was opened from (or the name given to [`Capture::from_vec`]).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file's device and inode (`None` for a capture held in memory).
    pub fn file_id(&self) -> Option<FileId> {
        self.file.as_ref().map(|(_, id)| *id)
    }

    /// Records are read up to this offset: the file's length when it was opened, or its new length if
    /// it shrank since ([`Capture::recheck_size`]).
    pub fn readable_len(&self) -> u64 {
        self.limit.load(Ordering::Acquire)
    }

    /// Checks the file's size again. If it shrank below what is read (or a page of the mapping vanished),
    /// readers created from now on stop at the new end, and the change is returned as a warning, once.
    /// A file that grew is reported too, without changing what is read: the mapping covers the length
    /// at opening. Cheap (one `fstat`): the engine calls it after every batch.
    pub fn recheck_size(&self) -> Option<Damage> {
        let (file, _) = self.file.as_ref()?;
        let now = file.metadata().ok()?.len();
        let limit = self.readable_len();
        let mapped = self.len();
        if now < limit {
            self.limit.store(now, Ordering::Release);
            return Some(Damage {
                input: 0,
                offset: now,
                kind: DamageKind::Shrank { mapped },
            });
        }
        None
    }

    /// A warning if the file is now longer than when it was opened (a capture still being written).
    pub fn growth(&self) -> Option<Damage> {
        let (file, _) = self.file.as_ref()?;
        let now = file.metadata().ok()?.len();
        (now > self.len()).then(|| Damage {
            input: 0,
            offset: self.len(),
            kind: DamageKind::Grew { now },
        })
    }

    /// The file's format, from its header.
    pub fn format(&self) -> Format {
        self.format
    }

    /// The whole file.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The file's length in bytes when it was opened (the mapped length).
    pub fn len(&self) -> u64 {
        self.bytes.len() as u64
    }

    /// Whether the file has no bytes (never true of a capture that opened: empty files are refused).
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// State before the first record.
    pub fn initial_state(&self) -> &ReaderState {
        &self.initial
    }

    /// The bytes a copy of this capture starts with (pcap file header, or pcapng SHB + IDBs up to the
    /// first packet), for writers that keep the original link type and timestamps.
    pub fn preamble(&self) -> &[u8] {
        let end = usize::try_from(self.initial.offset)
            .unwrap_or(usize::MAX)
            .min(self.bytes.len());
        &self.bytes[..end]
    }

    /// The Decryption Secrets Blocks before the first packet of a pcapng (none for classic pcap).
    pub fn decryption_secrets(&self) -> Vec<DecryptionSecrets> {
        match self.format {
            Format::PcapNg => pcapng::decryption_secrets(self.preamble()),
            Format::Pcap(_) => Vec::new(),
        }
    }

    /// Tells the kernel this process is done with the bytes before `offset`: they stop counting in its
    /// resident memory (the page cache keeps them), so memory does not grow with the file. Reading them
    /// again stays correct; they fault back in.
    pub fn release_before(&self, offset: u64) {
        if let Bytes::Mapped(map) = &self.bytes {
            let len = usize::try_from(offset).unwrap_or(usize::MAX).min(map.len()) & !0xfff;
            if len > 0 {
                // SAFETY: a read-only file mapping; MADV_DONTNEED only drops our page-table entries and
                // later reads refault the same file contents, so no borrowed slice is invalidated.
                let _ = unsafe {
                    map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, 0, len)
                };
            }
        }
    }

    /// Like [`Capture::release_before`], for the bytes in `[from, to)` (page-aligned inwards): the engine
    /// releases each batch's splits while it reads the next.
    pub fn release(&self, from: u64, to: u64) {
        if let Bytes::Mapped(map) = &self.bytes {
            let start =
                (usize::try_from(from).unwrap_or(usize::MAX).min(map.len()) + 0xfff) & !0xfff;
            let end = usize::try_from(to).unwrap_or(usize::MAX).min(map.len()) & !0xfff;
            if end > start {
                // SAFETY: a read-only file mapping; MADV_DONTNEED only drops our page-table entries and
                // later reads refault the same file contents, so no borrowed slice is invalidated.
                let _ = unsafe {
                    map.unchecked_advise_range(
                        memmap2::UncheckedAdvice::DontNeed,
                        start,
                        end - start,
                    )
                };
            }
        }
    }

    /// Maps the bytes in `[from, to)` into this process at once, before they are read: one system call
    /// instead of a page fault every few pages (`MADV_POPULATE_READ`; a kernel without it, older than
    /// Linux 5.14, refuses the advice and the pages fault in as they are read, as before).
    pub fn populate(&self, from: u64, to: u64) {
        if let Bytes::Mapped(map) = &self.bytes {
            let start = usize::try_from(from).unwrap_or(usize::MAX).min(map.len()) & !0xfff;
            let end = usize::try_from(to).unwrap_or(usize::MAX).min(map.len());
            if end > start {
                let _ = map.advise_range(memmap2::Advice::PopulateRead, start, end - start);
            }
        }
    }

    /// The file's bytes that may be read (up to [`Capture::readable_len`]), as a chunk to plan and read.
    pub fn chunk(&self) -> Chunk<'_> {
        let readable = usize::try_from(self.readable_len()).unwrap_or(usize::MAX);
        Chunk {
            bytes: &self.bytes[..readable.min(self.bytes.len())],
            base: 0,
            format: self.format,
            tail: Tail::Final,
        }
    }

    /// Reads one split, starting at its resynchronised boundary.
    pub fn reader(&self, split: &Split) -> RecordReader<'_> {
        self.chunk().reader(split)
    }

    /// Reads the records that start in `[state.offset, end)` from a proven state (the previous split's end).
    pub fn reader_after(&self, state: ReaderState, end: u64) -> RecordReader<'_> {
        self.chunk().reader_after(state, end)
    }

    /// Reads the whole file from the start.
    pub fn reader_all(&self) -> RecordReader<'_> {
        self.chunk().reader_after(self.initial.clone(), self.len())
    }

    /// Reads the whole file once, in order, for sequential tools (`extract`, `split`): pages already
    /// read are released as it goes, so memory stays flat, and reading stops at the new end if the file
    /// shrinks meanwhile.
    pub fn pass(&self) -> Pass<'_> {
        Pass {
            cap: self,
            reader: self.reader_all(),
            next_step: PASS_STEP,
            changes: Vec::new(),
        }
    }
}

/// How often a [`Pass`] releases the pages behind it and checks the file's size.
const PASS_STEP: u64 = 64 << 20;

/// A sequential read of a whole capture: see [`Capture::pass`].
pub struct Pass<'a> {
    cap: &'a Capture,
    reader: RecordReader<'a>,
    next_step: u64,
    changes: Vec<Damage>,
}

impl<'a> Pass<'a> {
    /// The next record, or `None` at the end.
    pub fn next_record(&mut self) -> Option<Record<'a>> {
        let rec = self.reader.next_record()?;
        if rec.offset >= self.next_step {
            self.next_step = rec.offset + PASS_STEP;
            self.cap.release_before(rec.offset);
            if let Some(shrank) = self.cap.recheck_size() {
                self.reader.limit_to(shrank.offset);
                self.changes.push(shrank);
            }
        }
        Some(rec)
    }

    /// Where the next record starts.
    pub fn offset(&self) -> u64 {
        self.reader.state().offset
    }

    /// Ends the pass: the damage found, in file order, then any change of the file's size.
    pub fn finish(self) -> Vec<Damage> {
        let mut damage = self.reader.damage;
        damage.extend(self.changes);
        damage.extend(self.cap.growth());
        damage
    }
}

/// Whether more of the stream follows a [`Chunk`]'s bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tail {
    /// The bytes end where the capture ends: a record cut short there is damage (a killed tcpdump).
    Final,
    /// More bytes follow (a window of a stream): a record cut short by the end is not read, and the
    /// reader stops before it, so that the next window starts with it.
    More,
}

/// Bytes of a capture held in memory, ready to be cut into splits and read: a whole mapped file, or one
/// window of a decompressed stream. `bytes[0]` is the capture's byte `base`; every offset (splits,
/// reader states, records, damage) is a capture offset, not an index into `bytes`.
#[derive(Debug, Clone, Copy)]
pub struct Chunk<'a> {
    /// The bytes held: capture offsets `base .. base + bytes.len()`.
    pub bytes: &'a [u8],
    /// The capture offset of `bytes[0]` (0 for a whole mapped file).
    pub base: u64,
    /// The capture's format, from its header (which need not be among `bytes`).
    pub format: Format,
    /// Whether the capture ends with these bytes or more follow.
    pub tail: Tail,
}

impl<'a> Chunk<'a> {
    /// The capture offset just past the chunk.
    pub fn end(&self) -> u64 {
        self.base + self.bytes.len() as u64
    }

    /// Reads one split, starting at its resynchronised boundary.
    pub fn reader(&self, split: &Split) -> RecordReader<'a> {
        self.reader_after(split.start_state.clone(), split.end)
    }

    /// Reads the records that start in `[state.offset, end)` from a proven state (the previous split's
    /// end).
    pub fn reader_after(&self, state: ReaderState, end: u64) -> RecordReader<'a> {
        let len = self.bytes.len();
        let index = |offset: u64| {
            usize::try_from(offset.saturating_sub(self.base))
                .unwrap_or(len)
                .min(len)
        };
        RecordReader {
            bytes: self.bytes,
            base: self.base,
            format: self.format,
            plain: match self.format {
                Format::Pcap(f) => pcap::Plain::of(f),
                Format::PcapNg => None,
            },
            tail: self.tail,
            pos: index(state.offset),
            end: index(end),
            section: state.section,
            damage: Vec::new(),
        }
    }
}

/// Walks the records that start before `end`, zero-copy. Damage is recorded and survived.
pub struct RecordReader<'a> {
    bytes: &'a [u8],
    /// Capture offset of `bytes[0]`.
    base: u64,
    format: Format,
    /// The common format's constants, for [`pcap::next_plain`]: `Some` for a little-endian classic
    /// pcap with 16-byte record headers.
    plain: Option<pcap::Plain>,
    tail: Tail,
    /// Index in `bytes` of the next record.
    pos: usize,
    end: usize,
    section: Arc<Section>,
    damage: Vec<Damage>,
}

impl<'a> RecordReader<'a> {
    /// Stops before the record at index `at`, which the bytes do not hold whole.
    fn stop_at(&mut self, at: usize) {
        self.pos = at;
        self.end = at;
    }

    /// The next record, or `None` at the split's end or the end of the file.
    #[inline]
    pub fn next_record(&mut self) -> Option<Record<'a>> {
        if let Some(plain) = self.plain {
            if let Some(rec) = pcap::next_plain(self, plain) {
                return Some(rec);
            }
        }
        match self.format {
            Format::Pcap(f) => pcap::next_record(self, f),
            Format::PcapNg => pcapng::next_record(self),
        }
    }

    /// Stops reading at `end` (or where the reader already is, if further): for a capture that shrank
    /// while it was read ([`Capture::recheck_size`]).
    pub fn limit_to(&mut self, end: u64) {
        let end = usize::try_from(end)
            .unwrap_or(usize::MAX)
            .min(self.bytes.len());
        self.bytes = &self.bytes[..end];
        self.end = self.end.min(end);
        self.pos = self.pos.min(end);
    }

    /// Where the next record starts (and the pcapng section in force there).
    pub fn state(&self) -> ReaderState {
        ReaderState {
            offset: self.base + self.pos as u64,
            section: self.section.clone(),
        }
    }

    /// Damage found so far, in file order.
    pub fn damage(&self) -> &[Damage] {
        &self.damage
    }

    /// Hands over the damage found so far, in file order, leaving none in the reader.
    pub fn take_damage(&mut self) -> Vec<Damage> {
        std::mem::take(&mut self.damage)
    }
}
