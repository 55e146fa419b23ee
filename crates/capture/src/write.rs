//! Writing captures: [`PcapWriter`] writes what Wireshark opens as the original, the source's own header
//! (pcap file header, or pcapng SHB and IDBs) followed by records copied byte for byte; [`PcapngWriter`]
//! writes records of any source as pcapng, where a packet can carry comments (for annotated extracts).
//!
//! An output appears only when complete: records go to an unnamed temporary file in the target's
//! directory (`O_TMPFILE` where the file system has it, else a hidden temporary name), which
//! [`PcapWriter::finish`] renames into place. A run that is killed or fails leaves no truncated capture
//! behind, and never an output that replaced one of its inputs: [`refuse_input_as_output`] compares
//! device and inode, so a hard link or a symlink to an input is refused as well as its own name, and
//! standard input is compared by what it is open on. An output that exists and is no regular file (a
//! device such as `/dev/null` or `/dev/stdout`, a FIFO) is written in place, never replaced by a file
//! ([`OutputFile`]); either way a write that fails (a full disk, a reader that went away) is an error.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use atomic_write_file::AtomicWriteFile;

use crate::pcapng::{BOM, SHB_TYPE};
use crate::{Capture, CaptureError, CaptureSet, FileId, LinkType, Record};

/// Fails if `output` is the same file as one of `inputs` (by device and inode, not by name; standard
/// input, `-`, by what it is open on: [`FileId::of_stdin`]).
pub fn refuse_input_as_output<'a>(
    output: &Path,
    inputs: impl IntoIterator<Item = (&'a Path, Option<FileId>)>,
) -> Result<(), CaptureError> {
    let Some(out) = FileId::of_path(output) else {
        return Ok(()); // does not exist yet: cannot be an input
    };
    match inputs.into_iter().find(|(_, id)| *id == Some(out)) {
        Some((input, _)) => Err(CaptureError::OutputIsInput {
            output: output.to_path_buf(),
            input: if input.as_os_str() == "-" {
                PathBuf::from("- (standard input)")
            } else {
                input.to_path_buf()
            },
        }),
        None => Ok(()),
    }
}

/// An output file being written: every tool's output goes through one (captures, HTML pages, plots).
///
/// * A path where nothing is, or a regular file: written to an unnamed temporary file beside it (see
///   the module docs) that [`OutputFile::commit`] puts in place, so that the path holds the old file or
///   the whole new one, never a part; dropping it uncommitted leaves nothing.
/// * A path that is a device (`/dev/null`, `/dev/stdout`, a terminal), a FIFO or a socket: written in
///   place, as `tee` or `dd` would, never replaced by a regular file (a file put at `/dev/null` by a
///   rename would break every program of the machine).
/// * A directory: refused.
///
/// Every write error is returned, the last ones by [`OutputFile::commit`]: a full disk or device
/// (`ENOSPC`), a pipe whose reader went away (`EPIPE`).
pub struct OutputFile {
    path: PathBuf,
    sink: Sink,
}

enum Sink {
    Atomic(BufWriter<AtomicWriteFile>),
    InPlace(BufWriter<File>),
    Staged(BufWriter<File>),
}

impl OutputFile {
    /// Prepares `path` for writing (see the type's docs).
    pub fn create(path: impl AsRef<Path>) -> io::Result<Self> {
        let path = path.as_ref().to_path_buf();
        let sink = match std::fs::metadata(&path) {
            Ok(m) if m.is_dir() => {
                return Err(io::Error::new(
                    io::ErrorKind::IsADirectory,
                    "it is a directory",
                ))
            }
            Ok(m) if !m.is_file() => Sink::InPlace(BufWriter::with_capacity(
                1 << 20,
                std::fs::OpenOptions::new().write(true).open(&path)?,
            )),
            _ => Sink::Atomic(BufWriter::with_capacity(
                1 << 20,
                AtomicWriteFile::open(&path)?,
            )),
        };
        Ok(OutputFile { path, sink })
    }

    /// Creates `path`, a new file in a staging directory ([`crate::staging`]) whose files are put in
    /// place as a set: written straight to its name, neither renamed nor synced on its own (the set's
    /// owner does both for the set). Fails if the file exists.
    pub fn create_staged(path: impl AsRef<Path>) -> io::Result<Self> {
        let path = path.as_ref().to_path_buf();
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)?;
        Ok(OutputFile {
            path,
            sink: Sink::Staged(BufWriter::with_capacity(1 << 20, file)),
        })
    }

    /// The path being written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the output is written in place (a device, a FIFO) rather than put in place whole.
    pub fn is_in_place(&self) -> bool {
        matches!(self.sink, Sink::InPlace(_))
    }

    /// Writes what is buffered and puts the file in place (replacing a regular file there); for a
    /// device or a FIFO, writes what is buffered. Fails if any write failed.
    pub fn commit(self) -> io::Result<()> {
        match self.sink {
            Sink::Atomic(out) => out.into_inner().map_err(|e| e.into_error())?.commit(),
            Sink::InPlace(out) | Sink::Staged(out) => {
                out.into_inner().map_err(|e| e.into_error())?;
                Ok(())
            }
        }
    }
}

impl Write for OutputFile {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        match &mut self.sink {
            Sink::Atomic(out) => out.write(bytes),
            Sink::InPlace(out) | Sink::Staged(out) => out.write(bytes),
        }
    }

    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        match &mut self.sink {
            Sink::Atomic(out) => out.write_all(bytes),
            Sink::InPlace(out) | Sink::Staged(out) => out.write_all(bytes),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.sink {
            Sink::Atomic(out) => out.flush(),
            Sink::InPlace(out) | Sink::Staged(out) => out.flush(),
        }
    }
}

/// Writes `bytes` as the whole content of `path` through an [`OutputFile`]: a regular file appears
/// only whole, a device or FIFO is written in place.
pub fn write_file(path: impl AsRef<Path>, bytes: &[u8]) -> io::Result<()> {
    let mut out = OutputFile::create(path)?;
    out.write_all(bytes)?;
    out.commit()
}

/// A capture being written, its errors naming it.
struct Output {
    path: PathBuf,
    out: OutputFile,
}

impl Output {
    fn open(path: &Path) -> Result<Self, CaptureError> {
        let path = path.to_path_buf();
        let out = OutputFile::create(&path).map_err(|source| CaptureError::Write {
            path: path.clone(),
            source,
        })?;
        Ok(Output { path, out })
    }

    fn staged(path: &Path) -> Result<Self, CaptureError> {
        let path = path.to_path_buf();
        let out = OutputFile::create_staged(&path).map_err(|source| CaptureError::Write {
            path: path.clone(),
            source,
        })?;
        Ok(Output { path, out })
    }

    fn write_all(&mut self, bytes: &[u8]) -> Result<(), CaptureError> {
        self.out
            .write_all(bytes)
            .map_err(|source| CaptureError::Write {
                path: self.path.clone(),
                source,
            })
    }

    /// Flushes the file and puts it in place at its path (replacing a file there).
    fn commit(self) -> Result<(), CaptureError> {
        let path = self.path;
        self.out
            .commit()
            .map_err(|source| CaptureError::Write { path, source })
    }
}

/// What a capture's first bytes make of the records that follow them: for pcapng, the section's byte
/// order and interfaces. A record copied byte for byte after a preamble keeps its meaning only if the
/// preamble describes it as its own file did ([`Preamble::holds`]): a pcapng file of several sections (a
/// big-endian second one, one with other link types or timestamp units) has records that the first
/// section's preamble would misdescribe.
#[derive(Debug, Clone)]
pub struct Preamble {
    /// `None` for classic pcap, whose header says the same of every record of a file.
    section: Option<crate::Section>,
}

impl Preamble {
    /// Reads what `bytes` (a pcap file header, or a pcapng SHB and the blocks after it up to the first
    /// packet) say of the records after them. `path` names them in an error.
    pub fn parse(path: &Path, bytes: &[u8]) -> Result<Self, CaptureError> {
        let is_pcapng = bytes.len() >= 4 && bytes[..4] == SHB_TYPE.to_le_bytes();
        let section = if is_pcapng {
            Some(crate::pcapng::read_preamble(path, bytes)?.0)
        } else {
            None
        };
        Ok(Preamble { section })
    }

    /// Whether `record`, copied byte for byte after this preamble, reads back as it was read: the
    /// same byte order, an interface of the same link type at its interface id, the same timestamp
    /// (units and offset) and captured length. Always for classic pcap.
    pub fn holds(&self, record: &Record<'_>) -> bool {
        let Some(section) = &self.section else {
            return true;
        };
        let raw = record.raw;
        let word = |at: usize| -> Option<u32> {
            let b: [u8; 4] = raw.get(at..at + 4)?.try_into().ok()?;
            Some(if section.big_endian {
                u32::from_be_bytes(b)
            } else {
                u32::from_le_bytes(b)
            })
        };
        match word(0) {
            Some(EPB) => {
                let (Some(if_id), Some(high), Some(low)) = (word(8), word(12), word(16)) else {
                    return false;
                };
                section.interfaces.get(if_id as usize).is_some_and(|i| {
                    i.link == record.link && crate::pcapng::timestamp(i, high, low) == record.ts
                })
            }
            Some(SPB) => {
                let (Some(i), Some(orig_len)) = (section.interfaces.first(), word(8)) else {
                    return false;
                };
                // As the reader cuts a simple packet: to its original length, then to the snap length.
                let stored = raw.len().saturating_sub(16) as u64;
                let mut captured = u64::from(orig_len).min(stored);
                if i.snaplen > 0 {
                    captured = captured.min(u64::from(i.snaplen));
                }
                i.link == record.link && captured == record.data.len() as u64
            }
            _ => false,
        }
    }
}

/// Writes selected records of a capture into a new file of the same format, link type and timestamps.
///
/// Records are copied byte for byte after the source's preamble, except where the copy would mean
/// something else ([`Preamble::holds`]: a record of a later pcapng section with another byte order,
/// link type or timestamp unit): such a record is written as an Enhanced Packet Block in the output's
/// section, with its captured bytes, lengths and timestamp (in nanoseconds) unchanged, on an interface
/// of its link type added for it; its own options are not carried over ([`PcapWriter::rewritten`]
/// counts them).
pub struct PcapWriter {
    out: Output,
    records: u64,
    preamble: Preamble,
    /// Interfaces added to the output's pcapng section for rewritten records: their link type and id.
    added: Vec<(LinkType, u32)>,
    block: Block,
    rewritten: u64,
}

impl PcapWriter {
    /// Prepares `path` (refused if it is the source itself) and writes the source's preamble. Nothing
    /// appears at `path` until [`PcapWriter::finish`].
    pub fn create(path: impl AsRef<Path>, source: &Capture) -> Result<Self, CaptureError> {
        let path = path.as_ref();
        refuse_input_as_output(path, [(source.path(), source.file_id())])?;
        Self::with_preamble(path, source.preamble())
    }

    /// Prepares `path` for records of any file of `set` (refused if it is one of them), with the
    /// preamble they share ([`CaptureSet::preamble`]).
    pub fn create_for_set(path: impl AsRef<Path>, set: &CaptureSet) -> Result<Self, CaptureError> {
        let path = path.as_ref();
        refuse_input_as_output(path, set.identities())?;
        Self::with_preamble(path, set.preamble()?)
    }

    /// Prepares `path` (refused if it is one of `inputs`) for records that follow `preamble`, the
    /// first bytes of the inputs ([`Capture::preamble`], [`CaptureSet::preamble`]).
    pub fn create_with_preamble<'a>(
        path: impl AsRef<Path>,
        preamble: &[u8],
        inputs: impl IntoIterator<Item = (&'a Path, Option<FileId>)>,
    ) -> Result<Self, CaptureError> {
        let path = path.as_ref();
        refuse_input_as_output(path, inputs)?;
        Self::with_preamble(path, preamble)
    }

    /// Creates `path`, a new file in a staging directory whose files are put in place as a set (see
    /// [`OutputFile::create_staged`]: `split`'s pieces), for records that follow `preamble`.
    pub fn create_staged(path: impl AsRef<Path>, preamble: &[u8]) -> Result<Self, CaptureError> {
        let path = path.as_ref();
        Self::with_output(Output::staged(path)?, preamble)
    }

    fn with_preamble(path: &Path, preamble: &[u8]) -> Result<Self, CaptureError> {
        Self::with_output(Output::open(path)?, preamble)
    }

    fn with_output(out: Output, preamble: &[u8]) -> Result<Self, CaptureError> {
        let parsed = Preamble::parse(&out.path, preamble)?;
        let big_endian = parsed.section.as_ref().is_some_and(|s| s.big_endian);
        let mut w = PcapWriter {
            out,
            records: 0,
            preamble: parsed,
            added: Vec::new(),
            block: Block::new(big_endian),
            rewritten: 0,
        };
        w.write_raw(preamble)?;
        Ok(w)
    }

    /// Appends one record exactly as it was stored, or rewritten where a copy would not mean the same
    /// (see the type's docs).
    pub fn write(&mut self, record: &Record<'_>) -> Result<(), CaptureError> {
        self.records += 1;
        if self.preamble.holds(record) {
            return self.write_raw(record.raw);
        }
        self.rewrite(record)
    }

    /// `record` as an Enhanced Packet Block of the output's section, on an interface of its link type
    /// with nanosecond timestamps (described first if it is the first such record).
    fn rewrite(&mut self, record: &Record<'_>) -> Result<(), CaptureError> {
        // Rare (a later section's records), so the path's copy for errors costs nothing that matters.
        let path = &self.out.path.clone();
        let frame = self.records;
        let interface = match self.added.iter().find(|(l, _)| *l == record.link) {
            Some(&(_, id)) => id,
            None => {
                let section = self.preamble.section.as_mut().ok_or_else(|| {
                    unwritable(
                        path,
                        frame,
                        "it does not fit the classic pcap header".into(),
                    )
                })?;
                let id = section.interfaces.len() as u32;
                self.block.interface(record.link, path, frame)?;
                self.out.write_all(self.block.bytes(path, frame)?)?;
                section.interfaces.push(crate::Interface {
                    link: record.link,
                    linktype: record.link.number(),
                    snaplen: 0,
                    ts_units_per_sec: 1_000_000_000,
                    ts_offset_s: 0,
                });
                self.added.push((record.link, id));
                id
            }
        };
        self.block.packet(record, interface, &[], path, frame)?;
        self.out.write_all(self.block.bytes(path, frame)?)?;
        self.rewritten += 1;
        Ok(())
    }

    /// Appends raw bytes that are whole records of the source (a contiguous run of the file).
    pub fn write_raw(&mut self, bytes: &[u8]) -> Result<(), CaptureError> {
        self.out.write_all(bytes)
    }

    /// Number of records written with [`PcapWriter::write`].
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Number of records that could not be copied byte for byte (a later pcapng section's) and were
    /// written as new packet blocks.
    pub fn rewritten(&self) -> u64 {
        self.rewritten
    }

    /// Flushes the file and puts it in place at its path (replacing a file there). Dropping a writer
    /// without finishing it discards what was written.
    pub fn finish(self) -> Result<u64, CaptureError> {
        self.out.commit()?;
        Ok(self.records)
    }
}

fn unwritable(path: &Path, frame: u64, reason: String) -> CaptureError {
    CaptureError::Unwritable {
        path: path.to_path_buf(),
        frame,
        reason,
    }
}

/// The longest packet comment written, in bytes: a pcapng option's length is 16 bits. A longer comment is
/// cut at a character boundary and ends with `…`.
pub const MAX_COMMENT_BYTES: usize = u16::MAX as usize;

/// pcapng block types and option codes (draft-ietf-opsawg-pcapng).
const IDB: u32 = 0x0000_0001;
const SPB: u32 = 0x0000_0003;
const EPB: u32 = 0x0000_0006;
const OPT_ENDOFOPT: u16 = 0;
const OPT_COMMENT: u16 = 1;
const SHB_USERAPPL: u16 = 4;
const IF_TSRESOL: u16 = 9;
/// `if_tsresol` 9: timestamps in nanoseconds, which hold every timestamp pcapsleuth reads exactly (pcap's
/// µs and ns, pcapng's usual resolutions, already converted to ns when read).
const NANOSECONDS: u8 = 9;

/// One pcapng block being built, in the byte order of the section it goes in; reused from block to block.
struct Block {
    buf: Vec<u8>,
    big_endian: bool,
}

impl Block {
    fn new(big_endian: bool) -> Self {
        Block {
            buf: Vec::with_capacity(1 << 16),
            big_endian,
        }
    }

    fn start(&mut self, block_type: u32) {
        self.buf.clear();
        self.put_u32(block_type);
        self.put_u32(0); // total length, filled in by `bytes`
    }

    /// An Interface Description Block for `link`: no snap length, nanosecond timestamps.
    fn interface(&mut self, link: LinkType, path: &Path, frame: u64) -> Result<(), CaptureError> {
        let number = link.number();
        let linktype = u16::try_from(number).map_err(|_| {
            unwritable(
                path,
                frame,
                format!("link type {number} does not fit pcapng's 16 bits"),
            )
        })?;
        self.start(IDB);
        self.put_u16(linktype);
        self.put_u16(0); // reserved
        self.put_u32(0); // snap length: none
        self.option(IF_TSRESOL, &[NANOSECONDS]);
        self.option(OPT_ENDOFOPT, &[]);
        Ok(())
    }

    /// An Enhanced Packet Block of `record` on interface `interface` (nanosecond timestamps), carrying
    /// `comments`.
    fn packet(
        &mut self,
        record: &Record<'_>,
        interface: u32,
        comments: &[&str],
        path: &Path,
        frame: u64,
    ) -> Result<(), CaptureError> {
        let ts = u64::try_from(record.ts.0).map_err(|_| {
            unwritable(
                path,
                frame,
                format!(
                    "its timestamp ({} ns) is before 1970, which pcapng cannot hold",
                    record.ts.0
                ),
            )
        })?;
        let captured = u32::try_from(record.data.len()).map_err(|_| {
            unwritable(path, frame, format!("{} captured bytes", record.data.len()))
        })?;
        self.start(EPB);
        self.put_u32(interface);
        self.put_u32((ts >> 32) as u32);
        self.put_u32(ts as u32);
        self.put_u32(captured);
        self.put_u32(record.orig_len);
        self.buf.extend_from_slice(record.data);
        self.pad();
        for comment in comments {
            let text = cut_comment(comment);
            self.option(OPT_COMMENT, text.as_bytes());
        }
        if !comments.is_empty() {
            self.option(OPT_ENDOFOPT, &[]);
        }
        Ok(())
    }

    /// The block, closed with its total length at both ends.
    fn bytes(&mut self, path: &Path, frame: u64) -> Result<&[u8], CaptureError> {
        let total = self.buf.len() + 4;
        let total = u32::try_from(total)
            .map_err(|_| unwritable(path, frame, format!("a block of {total} bytes")))?;
        let len = self.u32_bytes(total);
        self.buf[4..8].copy_from_slice(&len);
        self.put_u32(total);
        Ok(&self.buf)
    }

    fn u32_bytes(&self, v: u32) -> [u8; 4] {
        if self.big_endian {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    }

    fn put_u16(&mut self, v: u16) {
        let b = if self.big_endian {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        };
        self.buf.extend_from_slice(&b);
    }

    fn put_u32(&mut self, v: u32) {
        let b = self.u32_bytes(v);
        self.buf.extend_from_slice(&b);
    }

    /// Zero bytes up to the next multiple of 4, as every field of a block is aligned.
    fn pad(&mut self) {
        let n = self.buf.len().next_multiple_of(4) - self.buf.len();
        self.buf.extend_from_slice(&[0; 3][..n]);
    }

    /// An option: its code, its length (`value` is at most 65535 bytes), its value, padding.
    fn option(&mut self, code: u16, value: &[u8]) {
        let value = &value[..value.len().min(MAX_COMMENT_BYTES)];
        self.put_u16(code);
        self.put_u16(value.len() as u16);
        self.buf.extend_from_slice(value);
        self.pad();
    }
}

/// Writes records of any capture as pcapng, each packet with the comments given for it (`opt_comment`:
/// Wireshark shows them as packet comments, and `frame.comment` finds them).
///
/// Records become Enhanced Packet Blocks with their captured bytes, wire length and timestamp unchanged.
/// The file has one section and one interface per link type, in the order the link types first appear,
/// with nanosecond timestamps and no snap length (0: the records keep their own captured lengths). A
/// source's own packet options (pcapng flags, comments already there) are not carried over. Like
/// [`PcapWriter`], nothing appears at the path until [`PcapngWriter::finish`], and an input is never
/// overwritten.
///
/// ```no_run
/// use pcapsleuth_capture::{Capture, PcapngWriter};
/// let cap = Capture::open("fixtures/err1146-storm.pcap")?;
/// let mut out = PcapngWriter::create("annotated.pcapng", [(cap.path(), cap.file_id())])?;
/// let mut reader = cap.reader_all();
/// let mut frame = 0;
/// while let Some(record) = reader.next_record() {
///     frame += 1;
///     let note = format!("frame {frame} of err1146-storm.pcap");
///     let comments: &[&str] = if frame == 16 { &[note.as_str()] } else { &[] };
///     out.write(&record, comments)?;
/// }
/// out.finish()?;
/// # Ok::<(), pcapsleuth_capture::CaptureError>(())
/// ```
pub struct PcapngWriter {
    out: Output,
    /// The link type of each interface written, by interface id.
    interfaces: Vec<LinkType>,
    /// One block being built, reused from packet to packet.
    block: Block,
    records: u64,
}

impl PcapngWriter {
    /// Prepares `path` (refused if it is one of `inputs`) and writes the section header. Nothing appears
    /// at `path` until [`PcapngWriter::finish`].
    pub fn create<'a>(
        path: impl AsRef<Path>,
        inputs: impl IntoIterator<Item = (&'a Path, Option<FileId>)>,
    ) -> Result<Self, CaptureError> {
        let path = path.as_ref();
        refuse_input_as_output(path, inputs)?;
        let mut w = PcapngWriter {
            out: Output::open(path)?,
            interfaces: Vec::new(),
            block: Block::new(false),
            records: 0,
        };
        w.block.start(SHB_TYPE);
        w.block.put_u32(BOM);
        w.block.put_u16(1); // major version
        w.block.put_u16(0); // minor version
        w.block.buf.extend_from_slice(&(-1i64).to_le_bytes()); // section length: not given
        w.block.option(SHB_USERAPPL, b"pcapsleuth");
        w.out.write_all(w.block.bytes(path, 0)?)?;
        Ok(w)
    }

    /// Appends `record` as a packet carrying `comments` (none, one or several), after the description of
    /// its interface when it is the first of its link type. A comment longer than
    /// [`MAX_COMMENT_BYTES`] is cut.
    pub fn write(&mut self, record: &Record<'_>, comments: &[&str]) -> Result<(), CaptureError> {
        self.records += 1;
        let interface = self.interface_for(record.link)?;
        self.block
            .packet(record, interface, comments, &self.out.path, self.records)?;
        self.out
            .write_all(self.block.bytes(&self.out.path, self.records)?)
    }

    /// Number of records written.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Flushes the file and puts it in place at its path (replacing a file there). Dropping a writer
    /// without finishing it discards what was written.
    pub fn finish(self) -> Result<u64, CaptureError> {
        self.out.commit()?;
        Ok(self.records)
    }

    /// The interface id of `link`, writing its Interface Description Block the first time.
    fn interface_for(&mut self, link: LinkType) -> Result<u32, CaptureError> {
        if let Some(id) = self.interfaces.iter().position(|&l| l == link) {
            return Ok(id as u32);
        }
        self.block.interface(link, &self.out.path, self.records)?;
        self.out
            .write_all(self.block.bytes(&self.out.path, self.records)?)?;
        self.interfaces.push(link);
        Ok(self.interfaces.len() as u32 - 1)
    }
}

/// `comment`, or its longest start that fits [`MAX_COMMENT_BYTES`] with `…` appended.
fn cut_comment(comment: &str) -> std::borrow::Cow<'_, str> {
    if comment.len() <= MAX_COMMENT_BYTES {
        return comment.into();
    }
    const MARK: &str = "…";
    let mut end = MAX_COMMENT_BYTES - MARK.len();
    while !comment.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{MARK}", &comment[..end]).into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Timestamp;

    fn record(data: &[u8], ts_ns: i64, link: LinkType) -> Record<'_> {
        Record {
            offset: 0,
            raw: data,
            data,
            orig_len: data.len() as u32 + 10,
            ts: Timestamp(ts_ns),
            link,
            interface: 0,
        }
    }

    #[test]
    fn records_read_back_as_written_with_one_interface_per_link_type() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.pcapng");
        let mut w = PcapngWriter::create(&path, []).unwrap();
        // Odd lengths, so that the padding of data and comments is exercised.
        w.write(
            &record(&[1, 2, 3], 1_700_000_000_123_456_789, LinkType::RawIp),
            &["a"],
        )
        .unwrap();
        w.write(
            &record(&[4; 61], 1_700_000_001_000_000_001, LinkType::Ethernet),
            &[],
        )
        .unwrap();
        w.write(
            &record(&[5; 2], 1_700_000_002_000_000_000, LinkType::RawIp),
            &["bc", "def"],
        )
        .unwrap();
        assert_eq!(w.finish().unwrap(), 3);
        let cap = Capture::open(&path).unwrap();
        let mut reader = cap.reader_all();
        let mut got = Vec::new();
        while let Some(r) = reader.next_record() {
            got.push((r.data.to_vec(), r.orig_len, r.ts.0, r.link, r.interface));
        }
        assert!(reader.damage().is_empty(), "{:?}", reader.damage());
        assert_eq!(
            got,
            vec![
                (
                    vec![1, 2, 3],
                    13,
                    1_700_000_000_123_456_789,
                    LinkType::RawIp,
                    0
                ),
                (
                    vec![4; 61],
                    71,
                    1_700_000_001_000_000_001,
                    LinkType::Ethernet,
                    1
                ),
                (
                    vec![5; 2],
                    12,
                    1_700_000_002_000_000_000,
                    LinkType::RawIp,
                    0
                ),
            ]
        );
    }

    #[test]
    fn a_timestamp_before_1970_is_refused_not_wrapped() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = PcapngWriter::create(dir.path().join("out.pcapng"), []).unwrap();
        let refused = w.write(&record(&[0; 20], -1, LinkType::RawIp), &[]);
        assert!(
            matches!(refused, Err(CaptureError::Unwritable { frame: 1, .. })),
            "{refused:?}"
        );
    }

    #[test]
    fn records_of_a_one_section_file_are_copied_byte_for_byte() {
        for name in ["any-cooked.pcapng", "vlan.pcap"] {
            let path = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../fixtures")
                .join(name);
            let cap = Capture::open(&path).unwrap();
            let preamble = Preamble::parse(&path, cap.preamble()).unwrap();
            let mut reader = cap.reader_all();
            let mut n = 0;
            while let Some(r) = reader.next_record() {
                assert!(preamble.holds(&r), "{name}: record at {}", r.offset);
                n += 1;
            }
            assert!(n > 10, "{name}");
        }
    }

    #[test]
    fn a_long_comment_is_cut_at_a_character_boundary() {
        let long = "ab€".repeat(30_000); // 150,000 bytes, 3-byte characters
        let cut = cut_comment(&long);
        assert!(cut.len() <= MAX_COMMENT_BYTES && cut.ends_with('…'));
        assert!(long.starts_with(cut.trim_end_matches('…')));
        assert_eq!(cut_comment("short"), "short");
    }
}
