//! Writing captures that Wireshark opens as the original: the source's own header (pcap file header, or
//! pcapng SHB and IDBs) followed by records copied byte for byte.
//!
//! An output appears only when complete: records go to an unnamed temporary file in the target's
//! directory (`O_TMPFILE` where the file system has it, else a hidden temporary name), which
//! [`PcapWriter::finish`] renames into place. A run that is killed or fails leaves no truncated capture
//! behind, and never an output that replaced one of its inputs: [`refuse_input_as_output`] compares
//! device and inode, so a hard link or a symlink to an input is refused as well as its own name.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use atomic_write_file::AtomicWriteFile;

use crate::{Capture, CaptureError, CaptureSet, FileId, Record};

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

/// Writes selected records of a capture into a new file of the same format, link type and timestamps.
pub struct PcapWriter {
    path: PathBuf,
    out: BufWriter<AtomicWriteFile>,
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
        let path = path.to_path_buf();
        let file = AtomicWriteFile::open(&path).map_err(|source| CaptureError::Write {
            path: path.clone(),
            source,
        })?;
        let mut w = PcapWriter {
            path,
            out: BufWriter::with_capacity(1 << 20, file),
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

    /// Flushes the file and puts it in place at its path (replacing a file there). Dropping a writer
    /// without finishing it discards what was written.
    pub fn finish(self) -> Result<u64, CaptureError> {
        let path = self.path;
        let records = self.records;
        let write_error = |source| CaptureError::Write {
            path: path.clone(),
            source,
        };
        let file = self
            .out
            .into_inner()
            .map_err(|e| write_error(e.into_error()))?;
        file.commit().map_err(write_error)?;
        Ok(records)
    }
}
