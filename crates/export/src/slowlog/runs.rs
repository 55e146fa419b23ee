//! The log's entries put in order with bounded memory: each worker thread of the engine buffers the
//! entries it formats; a full buffer is sorted and written, lz4-compressed, to an unnamed temporary
//! file beside the log (a *run*), and at the end the runs and what the buffers still hold are merged
//! into the log (runs beyond [`MAX_FAN_IN`] merged into fewer first).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{BufWriter, Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::per_thread::{lock, PerThread};
use crate::ExportError;

/// Bytes of entries a worker buffers before it sorts them and writes them out as a run: the log's
/// memory is this per worker thread, whatever the capture's length.
pub(crate) const RUN_BYTES: usize = 16 << 20;

/// Bytes of records compressed together in a run. A run being merged holds one block, and its
/// compressed bytes: merging [`MAX_FAN_IN`] runs takes 8 MiB. (The log's text compresses about eight
/// times: a run takes an eighth of the disk and of the reading and writing it would uncompressed.)
const BLOCK_BYTES: usize = 64 << 10;

/// Runs merged at once; more are first merged into fewer, a pass over their bytes each time.
pub(crate) const MAX_FAN_IN: usize = 64;

/// Where an entry goes in the log: the order the server writes its slow log in, by completion (the
/// response's last byte, in the microsecond the entry shows), then by the frames, then by the
/// entry's place on its connection (pipelined requests share frames). A total order of the capture's
/// entries, whatever thread formatted them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Key {
    pub(crate) end_us: u64,
    pub(crate) end_frame: u64,
    pub(crate) request_frame: u64,
    pub(crate) seq: u64,
}

const KEY_BYTES: usize = 32;

impl Key {
    fn to_bytes(self) -> [u8; KEY_BYTES] {
        let mut b = [0u8; KEY_BYTES];
        for (chunk, v) in
            b.chunks_exact_mut(8)
                .zip([self.end_us, self.end_frame, self.request_frame, self.seq])
        {
            chunk.copy_from_slice(&v.to_le_bytes());
        }
        b
    }

    fn from_bytes(b: &[u8]) -> Option<Key> {
        let v = |i: usize| -> Option<u64> {
            Some(u64::from_le_bytes(
                b.get(i * 8..i * 8 + 8)?.try_into().ok()?,
            ))
        };
        Some(Key {
            end_us: v(0)?,
            end_frame: v(1)?,
            request_frame: v(2)?,
            seq: v(3)?,
        })
    }
}

/// An entry's bytes: its schema (a length, `u32::MAX` for none, and the name), its header lines (a
/// length and the text), then the rest (`SET timestamp` and the statement). The `use` line goes
/// between the header and the rest, and is decided when the entries are in their order.
pub(crate) struct Record<'a> {
    pub(crate) schema: Option<&'a [u8]>,
    pub(crate) head: &'a [u8],
    pub(crate) tail: &'a [u8],
}

impl<'a> Record<'a> {
    fn decode(b: &'a [u8]) -> Record<'a> {
        let u32_at = |at: usize| {
            b.get(at..at + 4)
                .and_then(|w| <[u8; 4]>::try_from(w).ok())
                .map_or(0, u32::from_le_bytes)
        };
        let schema_len = u32_at(0);
        let (schema, at) = if schema_len == u32::MAX {
            (None, 4)
        } else {
            let end = 4 + schema_len as usize;
            (b.get(4..end), end)
        };
        let head_len = u32_at(at) as usize;
        let head = b.get(at + 4..at + 4 + head_len).unwrap_or_default();
        let tail = b.get(at + 4 + head_len..).unwrap_or_default();
        Record { schema, head, tail }
    }
}

/// A length that fits the record's 32-bit fields (an entry is at most a statement of the decoder's cap
/// and a few lines).
fn len32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX - 1)
}

/// The entries a worker formatted and has not written out yet, their records one after another.
#[derive(Default)]
pub(crate) struct Buffer {
    bytes: Vec<u8>,
    /// Each entry's key, and where its record lies in `bytes`.
    index: Vec<(Key, usize, usize)>,
    /// The timestamps the worker wrote last.
    pub(crate) times: super::entry::Times,
}

/// An entry being added to a [`Buffer`] (see [`Buffer::start`]).
pub(crate) struct Adding {
    start: usize,
    head_len_at: usize,
}

impl Buffer {
    /// Starts an entry of `schema`: its header lines are to be appended to [`Buffer::text`], then
    /// [`Buffer::end_head`], then the rest, then [`Buffer::finish`]. (Written in place: a copy saved
    /// per entry.)
    pub(crate) fn start(&mut self, schema: Option<&str>) -> Adding {
        let start = self.bytes.len();
        match schema {
            Some(s) => {
                self.bytes.extend_from_slice(&len32(s.len()).to_le_bytes());
                self.bytes.extend_from_slice(s.as_bytes());
            }
            None => self.bytes.extend_from_slice(&u32::MAX.to_le_bytes()),
        }
        let head_len_at = self.bytes.len();
        self.bytes.extend_from_slice(&[0; 4]);
        Adding { start, head_len_at }
    }

    /// Where the entry's text is appended, and the timestamps written last.
    pub(crate) fn text(&mut self) -> (&mut Vec<u8>, &mut super::entry::Times) {
        (&mut self.bytes, &mut self.times)
    }

    /// The header lines are written.
    pub(crate) fn end_head(&mut self, a: &Adding) {
        let len = len32(self.bytes.len() - a.head_len_at - 4);
        if let Some(at) = self.bytes.get_mut(a.head_len_at..a.head_len_at + 4) {
            at.copy_from_slice(&len.to_le_bytes());
        }
    }

    /// The entry is written: it goes at `key` in the log.
    pub(crate) fn finish(&mut self, key: Key, a: Adding) {
        self.index.push((key, a.start, self.bytes.len() - a.start));
    }

    fn len_bytes(&self) -> usize {
        self.bytes.len()
    }

    fn sort(&mut self) {
        self.index.sort_unstable_by_key(|&(k, _, _)| k);
    }

    fn record(&self, i: usize) -> Option<(Key, &[u8])> {
        let &(k, at, len) = self.index.get(i)?;
        Some((k, self.bytes.get(at..at + len)?))
    }

    fn clear(&mut self) {
        self.bytes.clear();
        self.index.clear();
    }
}

/// A run being written: records in key order, in compressed blocks (`[raw length: u32][compressed
/// length: u32][lz4 block]`), each record `[key][length: u32][record]`.
struct RunWriter {
    out: BufWriter<File>,
    raw: Vec<u8>,
    compressed: Vec<u8>,
}

impl RunWriter {
    fn create(dir: &Path) -> std::io::Result<RunWriter> {
        Ok(RunWriter {
            out: BufWriter::with_capacity(256 << 10, tempfile::tempfile_in(dir)?),
            raw: Vec::with_capacity(BLOCK_BYTES * 2),
            compressed: Vec::new(),
        })
    }

    fn push(&mut self, key: Key, record: &[u8]) -> std::io::Result<()> {
        self.raw.extend_from_slice(&key.to_bytes());
        self.raw
            .extend_from_slice(&len32(record.len()).to_le_bytes());
        self.raw.extend_from_slice(record);
        if self.raw.len() >= BLOCK_BYTES {
            self.flush_block()?;
        }
        Ok(())
    }

    fn flush_block(&mut self) -> std::io::Result<()> {
        if self.raw.is_empty() {
            return Ok(());
        }
        self.compressed
            .resize(lz4_flex::block::get_maximum_output_size(self.raw.len()), 0);
        let n = lz4_flex::block::compress_into(&self.raw, &mut self.compressed)
            .map_err(std::io::Error::other)?;
        self.out.write_all(&len32(self.raw.len()).to_le_bytes())?;
        self.out.write_all(&len32(n).to_le_bytes())?;
        self.out
            .write_all(self.compressed.get(..n).unwrap_or_default())?;
        self.raw.clear();
        Ok(())
    }

    /// The run, written, read from its start.
    fn finish(mut self) -> std::io::Result<File> {
        self.flush_block()?;
        let mut file = self.out.into_inner().map_err(|e| e.into_error())?;
        file.rewind()?;
        Ok(file)
    }
}

/// A run being read back, one block at a time.
struct RunReader {
    file: File,
    raw: Vec<u8>,
    compressed: Vec<u8>,
    /// Where the current record lies in `raw`, and its key.
    at: usize,
    current: Option<(Key, usize, usize)>,
}

impl RunReader {
    fn open(file: File) -> std::io::Result<RunReader> {
        let mut r = RunReader {
            file,
            raw: Vec::new(),
            compressed: Vec::new(),
            at: 0,
            current: None,
        };
        r.advance()?;
        Ok(r)
    }

    /// Moves to the next record (reading the next block when this one is done).
    fn advance(&mut self) -> std::io::Result<()> {
        let bad = || std::io::Error::other("a temporary run of the slow log does not read back");
        if self.at >= self.raw.len() {
            let mut head = [0u8; 8];
            match self.file.read_exact(&mut head) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                    self.current = None;
                    return Ok(());
                }
                Err(e) => return Err(e),
            }
            let raw_len = u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as usize;
            let len = u32::from_le_bytes([head[4], head[5], head[6], head[7]]) as usize;
            self.compressed.resize(len, 0);
            self.file.read_exact(&mut self.compressed)?;
            self.raw.resize(raw_len, 0);
            let n = lz4_flex::block::decompress_into(&self.compressed, &mut self.raw)
                .map_err(std::io::Error::other)?;
            if n != raw_len {
                return Err(bad());
            }
            self.at = 0;
        }
        let key = self
            .raw
            .get(self.at..self.at + KEY_BYTES)
            .and_then(Key::from_bytes)
            .ok_or_else(bad)?;
        let len = self
            .raw
            .get(self.at + KEY_BYTES..self.at + KEY_BYTES + 4)
            .and_then(|b| <[u8; 4]>::try_from(b).ok())
            .map(u32::from_le_bytes)
            .ok_or_else(bad)? as usize;
        let start = self.at + KEY_BYTES + 4;
        if start + len > self.raw.len() {
            return Err(bad());
        }
        self.current = Some((key, start, len));
        self.at = start + len;
        Ok(())
    }

    fn current(&self) -> Option<(Key, &[u8])> {
        let (k, at, len) = self.current?;
        Some((k, self.raw.get(at..at + len)?))
    }
}

/// The entries of a log being made: one buffer per worker thread, the runs written, the first error.
pub(crate) struct Pool {
    /// Where the runs are written (unnamed files, gone when closed: nothing is left if the run dies).
    dir: PathBuf,
    buffers: PerThread<Buffer>,
    runs: Mutex<Vec<File>>,
    failed: Mutex<Option<ExportError>>,
    /// [`RUN_BYTES`], or what the options say.
    run_bytes: usize,
}

impl Pool {
    pub(crate) fn new(dir: &Path, run_bytes: usize) -> Pool {
        Pool {
            dir: dir.to_path_buf(),
            buffers: PerThread::new(),
            runs: Mutex::new(Vec::new()),
            failed: Mutex::new(None),
            run_bytes,
        }
    }

    /// The buffer of the calling thread ([`PerThread::get`]).
    pub(crate) fn buffer(&self) -> &Mutex<Buffer> {
        self.buffers.get()
    }

    /// Writes `buffer` out as a run if it is full.
    pub(crate) fn spill_if_full(&self, buffer: &mut Buffer) {
        if buffer.len_bytes() < self.run_bytes {
            return;
        }
        if lock(&self.failed).is_some() {
            buffer.clear();
            return;
        }
        buffer.sort();
        let written = (|| {
            let mut w = RunWriter::create(&self.dir)?;
            for i in 0..buffer.index.len() {
                if let Some((key, record)) = buffer.record(i) {
                    w.push(key, record)?;
                }
            }
            w.finish()
        })();
        match written {
            Ok(run) => lock(&self.runs).push(run),
            Err(e) => {
                lock(&self.failed).get_or_insert(ExportError::io(&self.dir, e));
            }
        }
        buffer.clear();
    }

    /// Runs written so far.
    pub(crate) fn runs(&self) -> usize {
        lock(&self.runs).len()
    }

    /// Calls `write` with every record of the runs and the buffers, in [`Key`] order; returns how
    /// many. `out_path` names the failures of `write`.
    pub(crate) fn merge(
        &self,
        mut write: impl FnMut(Record<'_>) -> std::io::Result<()>,
        out_path: &Path,
    ) -> Result<u64, ExportError> {
        if let Some(e) = lock(&self.failed).take() {
            return Err(e);
        }
        let io = |e| ExportError::io(&self.dir, e);
        let mut runs = std::mem::take(&mut *lock(&self.runs));
        // Runs beyond the fan-in are merged into fewer first (whichever: the order is the keys').
        while runs.len() > MAX_FAN_IN {
            let group: Vec<File> = runs.drain(..MAX_FAN_IN).collect();
            let mut w = RunWriter::create(&self.dir).map_err(io)?;
            let sources = group
                .into_iter()
                .map(|f| RunReader::open(f).map(Source::Run))
                .collect::<std::io::Result<Vec<Source>>>()
                .map_err(io)?;
            merge_sources(sources, |k, r| w.push(k, r)).map_err(|e| match e {
                Merge::Read(e) | Merge::Write(e) => io(e),
            })?;
            runs.push(w.finish().map_err(io)?);
        }
        let mut sources = runs
            .into_iter()
            .map(|f| RunReader::open(f).map(Source::Run))
            .collect::<std::io::Result<Vec<Source>>>()
            .map_err(io)?;
        for b in self.buffers.all() {
            let mut b = std::mem::take(&mut *lock(b));
            b.sort();
            sources.push(Source::Memory { buffer: b, at: 0 });
        }
        merge_sources(sources, |_, r| write(Record::decode(r))).map_err(|e| match e {
            Merge::Write(e) => ExportError::io(out_path, e),
            Merge::Read(e) => io(e),
        })
    }
}

/// Why a merge stopped: reading a run, or the caller's write.
enum Merge {
    Read(std::io::Error),
    Write(std::io::Error),
}

/// Calls `write` with every record of `sources`, in key order; returns how many.
fn merge_sources(
    mut sources: Vec<Source>,
    mut write: impl FnMut(Key, &[u8]) -> std::io::Result<()>,
) -> Result<u64, Merge> {
    let mut heap: BinaryHeap<Reverse<(Key, usize)>> = sources
        .iter()
        .enumerate()
        .filter_map(|(i, s)| s.current().map(|(k, _)| Reverse((k, i))))
        .collect();
    let mut n = 0;
    while let Some(Reverse((_, i))) = heap.pop() {
        let Some(source) = sources.get_mut(i) else {
            continue;
        };
        if let Some((k, record)) = source.current() {
            write(k, record).map_err(Merge::Write)?;
            n += 1;
        }
        source.advance().map_err(Merge::Read)?;
        if let Some((k, _)) = source.current() {
            heap.push(Reverse((k, i)));
        }
    }
    Ok(n)
}

/// Sorted entries to merge: a run read back, or a buffer.
enum Source {
    Run(RunReader),
    Memory { buffer: Buffer, at: usize },
}

impl Source {
    fn current(&self) -> Option<(Key, &[u8])> {
        match self {
            Source::Run(r) => r.current(),
            Source::Memory { buffer, at } => buffer.record(*at),
        }
    }

    fn advance(&mut self) -> std::io::Result<()> {
        match self {
            Source::Run(r) => r.advance(),
            Source::Memory { at, .. } => {
                *at += 1;
                Ok(())
            }
        }
    }
}
