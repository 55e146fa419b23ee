//! The log's entries put in order with bounded memory: each worker thread of the engine buffers the
//! entries it formats; a full buffer is sorted and written to an unnamed temporary file beside the
//! log (a *run*), and at the end the runs and what the buffers still hold are merged into the log.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};

use crate::ExportError;

/// Bytes of entries a worker buffers before it sorts them and writes them out as a run: the log's
/// memory is this per worker thread, whatever the capture's length.
pub(crate) const RUN_BYTES: usize = 16 << 20;

/// Bytes read ahead from the runs while they are merged, shared among them.
const MERGE_READ_BYTES: usize = 32 << 20;

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
        for (i, v) in [self.end_us, self.end_frame, self.request_frame, self.seq]
            .into_iter()
            .enumerate()
        {
            b[i * 8..i * 8 + 8].copy_from_slice(&v.to_le_bytes());
        }
        b
    }

    fn from_bytes(b: &[u8; KEY_BYTES]) -> Key {
        let v = |i: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&b[i * 8..i * 8 + 8]);
            u64::from_le_bytes(a)
        };
        Key {
            end_us: v(0),
            end_frame: v(1),
            request_frame: v(2),
            seq: v(3),
        }
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
    fn encode(schema: Option<&str>, head: &str, tail: &str, out: &mut Vec<u8>) {
        match schema {
            Some(s) => {
                out.extend_from_slice(&len32(s.len()).to_le_bytes());
                out.extend_from_slice(s.as_bytes());
            }
            None => out.extend_from_slice(&u32::MAX.to_le_bytes()),
        }
        out.extend_from_slice(&len32(head.len()).to_le_bytes());
        out.extend_from_slice(head.as_bytes());
        out.extend_from_slice(tail.as_bytes());
    }

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

/// The entries a worker formatted and has not written out yet.
#[derive(Default)]
pub(crate) struct Buffer {
    bytes: Vec<u8>,
    /// Each entry's key, and where its record lies in `bytes`.
    index: Vec<(Key, usize, usize)>,
    /// Where entries are formatted before they are added (kept: one allocation per worker).
    pub(crate) head: String,
    pub(crate) tail: String,
}

impl Buffer {
    /// Adds the entry formatted in `head` and `tail`.
    pub(crate) fn add(&mut self, key: Key, schema: Option<&str>) {
        let at = self.bytes.len();
        Record::encode(schema, &self.head, &self.tail, &mut self.bytes);
        self.index.push((key, at, self.bytes.len() - at));
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

/// Locks `m`, whose data stays consistent if a holder panicked (a holder only appends whole entries or
/// moves a buffer out).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The entries of a log being made: one buffer per worker thread, the runs written, the first error.
pub(crate) struct Pool {
    /// Where the runs are written (unnamed files, gone when closed: nothing is left if the run dies).
    dir: PathBuf,
    buffers: OnceLock<Box<[Mutex<Buffer>]>>,
    runs: Mutex<Vec<File>>,
    failed: Mutex<Option<ExportError>>,
    /// [`RUN_BYTES`], fewer in tests.
    run_bytes: usize,
}

impl Pool {
    pub(crate) fn new(dir: &Path, run_bytes: usize) -> Pool {
        Pool {
            dir: dir.to_path_buf(),
            buffers: OnceLock::new(),
            runs: Mutex::new(Vec::new()),
            failed: Mutex::new(None),
            run_bytes,
        }
    }

    /// The buffer of the calling thread: its own when it is one of the engine's workers (no other
    /// thread takes its lock), else the last one, shared.
    pub(crate) fn buffer(&self) -> &Mutex<Buffer> {
        let buffers = self.buffers.get_or_init(|| {
            (0..=rayon::current_num_threads())
                .map(|_| Mutex::new(Buffer::default()))
                .collect()
        });
        let last = buffers.len() - 1;
        let i = rayon::current_thread_index().map_or(last, |i| i.min(last));
        &buffers[i]
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
        match self.write_run(buffer) {
            Ok(run) => lock(&self.runs).push(run),
            Err(e) => {
                lock(&self.failed).get_or_insert(e);
            }
        }
        buffer.clear();
    }

    fn write_run(&self, buffer: &mut Buffer) -> Result<File, ExportError> {
        let io = |e| ExportError::io(&self.dir, e);
        buffer.sort();
        let file = tempfile::tempfile_in(&self.dir).map_err(io)?;
        let mut w = BufWriter::with_capacity(1 << 20, file);
        for i in 0..buffer.index.len() {
            if let Some((key, record)) = buffer.record(i) {
                w.write_all(&key.to_bytes()).map_err(io)?;
                w.write_all(&len32(record.len()).to_le_bytes())
                    .map_err(io)?;
                w.write_all(record).map_err(io)?;
            }
        }
        let mut file = w.into_inner().map_err(|e| io(e.into_error()))?;
        file.rewind().map_err(io)?;
        Ok(file)
    }

    /// Runs written so far.
    pub(crate) fn runs(&self) -> usize {
        lock(&self.runs).len()
    }

    /// Merges the runs and the buffers into `out`, in [`Key`] order, calling `write` with each record;
    /// returns the entries written.
    pub(crate) fn merge(
        &self,
        mut write: impl FnMut(Record<'_>) -> std::io::Result<()>,
        out_path: &Path,
    ) -> Result<u64, ExportError> {
        if let Some(e) = lock(&self.failed).take() {
            return Err(e);
        }
        let runs = std::mem::take(&mut *lock(&self.runs));
        let mut sources: Vec<Source> = Vec::new();
        let per_run = (MERGE_READ_BYTES / runs.len().max(1)).clamp(16 << 10, 1 << 20);
        for run in runs {
            let mut s = Source::File {
                reader: BufReader::with_capacity(per_run, run),
                key: None,
                record: Vec::new(),
            };
            s.advance().map_err(|e| ExportError::io(&self.dir, e))?;
            sources.push(s);
        }
        if let Some(buffers) = self.buffers.get() {
            for b in buffers.iter() {
                let mut b = std::mem::take(&mut *lock(b));
                b.sort();
                sources.push(Source::Memory { buffer: b, at: 0 });
            }
        }
        let mut heap: BinaryHeap<Reverse<(Key, usize)>> = sources
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.key().map(|k| Reverse((k, i))))
            .collect();
        let mut entries = 0;
        while let Some(Reverse((_, i))) = heap.pop() {
            let Some(source) = sources.get_mut(i) else {
                continue;
            };
            if let Some(record) = source.record() {
                write(Record::decode(record)).map_err(|e| ExportError::io(out_path, e))?;
                entries += 1;
            }
            source
                .advance()
                .map_err(|e| ExportError::io(&self.dir, e))?;
            if let Some(k) = source.key() {
                heap.push(Reverse((k, i)));
            }
        }
        Ok(entries)
    }
}

/// Sorted entries to merge: a run read back, or a buffer.
enum Source {
    File {
        reader: BufReader<File>,
        key: Option<Key>,
        record: Vec<u8>,
    },
    Memory {
        buffer: Buffer,
        at: usize,
    },
}

impl Source {
    fn key(&self) -> Option<Key> {
        match self {
            Source::File { key, .. } => *key,
            Source::Memory { buffer, at } => buffer.record(*at).map(|(k, _)| k),
        }
    }

    fn record(&self) -> Option<&[u8]> {
        match self {
            Source::File { key, record, .. } => key.map(|_| record.as_slice()),
            Source::Memory { buffer, at } => buffer.record(*at).map(|(_, r)| r),
        }
    }

    /// Moves to the next entry (the first, for a run just opened).
    fn advance(&mut self) -> std::io::Result<()> {
        match self {
            Source::File {
                reader,
                key,
                record,
            } => {
                let mut head = [0u8; KEY_BYTES + 4];
                match reader.read_exact(&mut head) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                        *key = None;
                        return Ok(());
                    }
                    Err(e) => return Err(e),
                }
                let mut k = [0u8; KEY_BYTES];
                k.copy_from_slice(&head[..KEY_BYTES]);
                let mut n = [0u8; 4];
                n.copy_from_slice(&head[KEY_BYTES..]);
                record.resize(u32::from_le_bytes(n) as usize, 0);
                reader.read_exact(record)?;
                *key = Some(Key::from_bytes(&k));
            }
            Source::Memory { at, .. } => *at += 1,
        }
        Ok(())
    }
}
