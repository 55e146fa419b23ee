//! Writing captures: [`PcapWriter`] writes what Wireshark opens as the original, the source's own header
//! (pcap file header, or pcapng SHB and IDBs) followed by records copied byte for byte; [`PcapngWriter`]
//! writes records of any source as pcapng, where a packet can carry comments (for annotated extracts).
//!
//! An output appears only when complete: records go to an unnamed temporary file in the target's
//! directory (`O_TMPFILE` where the file system has it, else a hidden temporary name), which
//! [`PcapWriter::finish`] renames into place. A run that is killed or fails leaves no truncated capture
//! behind, and never an output that replaced one of its inputs: [`refuse_input_as_output`] compares
//! device and inode, so a hard link or a symlink to an input is refused as well as its own name.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use atomic_write_file::AtomicWriteFile;

use crate::pcapng::{BOM, SHB_TYPE};
use crate::{Capture, CaptureError, CaptureSet, FileId, LinkType, Record};

/// Fails if `output` is the same file as one of `inputs` (by device and inode, not by name).
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
            input: input.to_path_buf(),
        }),
        None => Ok(()),
    }
}

/// A file being written: an unnamed temporary file in the target's directory until [`Output::commit`]
/// puts it in place.
struct Output {
    path: PathBuf,
    out: BufWriter<AtomicWriteFile>,
}

impl Output {
    fn open(path: &Path) -> Result<Self, CaptureError> {
        let path = path.to_path_buf();
        let file = AtomicWriteFile::open(&path).map_err(|source| CaptureError::Write {
            path: path.clone(),
            source,
        })?;
        Ok(Output {
            path,
            out: BufWriter::with_capacity(1 << 20, file),
        })
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
        let write_error = |source| CaptureError::Write {
            path: path.clone(),
            source,
        };
        let file = self
            .out
            .into_inner()
            .map_err(|e| write_error(e.into_error()))?;
        file.commit().map_err(write_error)
    }
}

/// Writes selected records of a capture into a new file of the same format, link type and timestamps.
pub struct PcapWriter {
    out: Output,
    records: u64,
}

impl PcapWriter {
    /// Prepares `path` (refused if it is the source itself) and writes the source's preamble. Records of
    /// a pcapng source must come from its first section (every capture tool writes one section). Nothing
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

    fn with_preamble(path: &Path, preamble: &[u8]) -> Result<Self, CaptureError> {
        let mut w = PcapWriter {
            out: Output::open(path)?,
            records: 0,
        };
        w.write_raw(preamble)?;
        Ok(w)
    }

    /// Appends one record exactly as it was stored.
    pub fn write(&mut self, record: &Record<'_>) -> Result<(), CaptureError> {
        self.records += 1;
        self.write_raw(record.raw)
    }

    /// Appends raw bytes that are whole records of the source (a contiguous run of the file).
    pub fn write_raw(&mut self, bytes: &[u8]) -> Result<(), CaptureError> {
        self.out.write_all(bytes)
    }

    /// Number of records written with [`PcapWriter::write`].
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Flushes the file and puts it in place at its path (replacing a file there). Dropping a writer
    /// without finishing it discards what was written.
    pub fn finish(self) -> Result<u64, CaptureError> {
        self.out.commit()?;
        Ok(self.records)
    }
}

/// The longest packet comment written, in bytes: a pcapng option's length is 16 bits. A longer comment is
/// cut at a character boundary and ends with `…`.
pub const MAX_COMMENT_BYTES: usize = u16::MAX as usize;

/// pcapng block types and option codes (draft-ietf-opsawg-pcapng).
const IDB: u32 = 0x0000_0001;
const EPB: u32 = 0x0000_0006;
const OPT_ENDOFOPT: u16 = 0;
const OPT_COMMENT: u16 = 1;
const SHB_USERAPPL: u16 = 4;
const IF_TSRESOL: u16 = 9;
/// `if_tsresol` 9: timestamps in nanoseconds, which hold every timestamp pcapsleuth reads exactly (pcap's
/// µs and ns, pcapng's usual resolutions, already converted to ns when read).
const NANOSECONDS: u8 = 9;

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
    block: Vec<u8>,
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
            block: Vec::with_capacity(1 << 16),
            records: 0,
        };
        w.start_block(SHB_TYPE);
        w.put_u32(BOM);
        w.put_u16(1); // major version
        w.put_u16(0); // minor version
        w.block.extend_from_slice(&(-1i64).to_le_bytes()); // section length: not given
        w.put_option(SHB_USERAPPL, b"pcapsleuth");
        w.end_block()?;
        Ok(w)
    }

    /// Appends `record` as a packet carrying `comments` (none, one or several), after the description of
    /// its interface when it is the first of its link type. A comment longer than
    /// [`MAX_COMMENT_BYTES`] is cut.
    pub fn write(&mut self, record: &Record<'_>, comments: &[&str]) -> Result<(), CaptureError> {
        self.records += 1;
        let interface = self.interface_for(record.link)?;
        let unwritable = |reason: String| CaptureError::Unwritable {
            path: self.out.path.clone(),
            frame: self.records,
            reason,
        };
        let ts = u64::try_from(record.ts.0).map_err(|_| {
            unwritable(format!(
                "its timestamp ({} ns) is before 1970, which pcapng cannot hold",
                record.ts.0
            ))
        })?;
        let captured = u32::try_from(record.data.len())
            .map_err(|_| unwritable(format!("{} captured bytes", record.data.len())))?;
        self.start_block(EPB);
        self.put_u32(interface);
        self.put_u32((ts >> 32) as u32);
        self.put_u32(ts as u32);
        self.put_u32(captured);
        self.put_u32(record.orig_len);
        self.block.extend_from_slice(record.data);
        self.pad();
        for comment in comments {
            let text = cut_comment(comment);
            self.put_option(OPT_COMMENT, text.as_bytes());
        }
        if !comments.is_empty() {
            self.put_option(OPT_ENDOFOPT, &[]);
        }
        self.end_block()
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
        // Blocks are whole before the next one starts: the caller's EPB is built after this IDB is out.
        let number = link.number();
        let linktype = u16::try_from(number).map_err(|_| CaptureError::Unwritable {
            path: self.out.path.clone(),
            frame: self.records,
            reason: format!("link type {number} does not fit pcapng's 16 bits"),
        })?;
        self.start_block(IDB);
        self.put_u16(linktype);
        self.put_u16(0); // reserved
        self.put_u32(0); // snap length: none
        self.put_option(IF_TSRESOL, &[NANOSECONDS]);
        self.put_option(OPT_ENDOFOPT, &[]);
        self.end_block()?;
        self.interfaces.push(link);
        Ok(self.interfaces.len() as u32 - 1)
    }

    fn start_block(&mut self, block_type: u32) {
        self.block.clear();
        self.put_u32(block_type);
        self.put_u32(0); // total length, filled in by end_block
    }

    /// Closes the block with its total length at both ends and writes it.
    fn end_block(&mut self) -> Result<(), CaptureError> {
        let total = self.block.len() + 4;
        let total = u32::try_from(total).map_err(|_| CaptureError::Unwritable {
            path: self.out.path.clone(),
            frame: self.records,
            reason: format!("a block of {total} bytes"),
        })?;
        self.block[4..8].copy_from_slice(&total.to_le_bytes());
        self.put_u32(total);
        self.out.write_all(&self.block)
    }

    fn put_u16(&mut self, v: u16) {
        self.block.extend_from_slice(&v.to_le_bytes());
    }

    fn put_u32(&mut self, v: u32) {
        self.block.extend_from_slice(&v.to_le_bytes());
    }

    /// Zero bytes up to the next multiple of 4, as every field of a block is aligned.
    fn pad(&mut self) {
        let n = self.block.len().next_multiple_of(4) - self.block.len();
        self.block.extend_from_slice(&[0; 3][..n]);
    }

    /// An option: its code, its length (`value` is at most 65535 bytes), its value, padding.
    fn put_option(&mut self, code: u16, value: &[u8]) {
        self.put_u16(code);
        self.put_u16(value.len().min(MAX_COMMENT_BYTES) as u16);
        self.block
            .extend_from_slice(&value[..value.len().min(MAX_COMMENT_BYTES)]);
        self.pad();
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
    fn a_long_comment_is_cut_at_a_character_boundary() {
        let long = "ab€".repeat(30_000); // 150,000 bytes, 3-byte characters
        let cut = cut_comment(&long);
        assert!(cut.len() <= MAX_COMMENT_BYTES && cut.ends_with('…'));
        assert!(long.starts_with(cut.trim_end_matches('…')));
        assert_eq!(cut_comment("short"), "short");
    }
}
