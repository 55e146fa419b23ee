//! Several capture files read as one capture: a rotated set (`tcpdump -C` numbered files, `-G` time-stamped
//! ones, logrotate's `.1 .2`), a directory, compressed files, pipes, standard input.
//!
//! Files are put in time order (their first packet), names deciding ties with numbers compared as numbers
//! (`big.pcap2` before `big.pcap10`). Files that follow each other in time are read one after the other,
//! as `mergecap -a` concatenates them; frames are numbered across the set, and every frame also has its
//! file and its number in that file.

use std::cmp::Ordering;
use std::path::{Path, PathBuf};

use crate::{
    Capture, CaptureError, Compression, Damage, FileId, Format, Record, Stream, Timestamp,
};

/// One file of a set: mapped when it is a regular uncompressed file (read in parallel splits), streamed
/// otherwise (compressed, a pipe, standard input).
#[derive(Debug)]
pub enum Input {
    /// A regular, uncompressed file, memory-mapped.
    Mapped(Capture),
    /// A compressed file, a pipe or standard input, read as a stream of windows.
    Streamed(Stream),
}

impl Input {
    /// Opens `path` (`-` is standard input) the way it can be read.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, CaptureError> {
        let path = path.as_ref();
        if path.as_os_str() == "-" {
            return Stream::open(path).map(Input::Streamed);
        }
        let meta = std::fs::metadata(path).map_err(|source| CaptureError::Open {
            path: path.to_path_buf(),
            source,
        })?;
        if meta.is_dir() {
            return Err(CaptureError::IsDirectory {
                path: path.to_path_buf(),
            });
        }
        if meta.is_file()
            && meta.len() > 0
            && Compression::detect(&magic(path)) == Compression::None
        {
            return Capture::open(path).map(Input::Mapped);
        }
        if meta.is_file() && meta.len() == 0 {
            return Err(CaptureError::Empty {
                path: path.to_path_buf(),
            });
        }
        Stream::open(path).map(Input::Streamed)
    }

    /// The path it was opened from (`-` for standard input).
    pub fn path(&self) -> &Path {
        match self {
            Input::Mapped(c) => c.path(),
            Input::Streamed(s) => s.path(),
        }
    }

    /// The file's device and inode (`None` for standard input and for captures held in memory).
    pub fn file_id(&self) -> Option<FileId> {
        match self {
            Input::Mapped(c) => c.file_id(),
            Input::Streamed(s) => s.file_id(),
        }
    }

    /// The capture's format, from its header.
    pub fn format(&self) -> Format {
        match self {
            Input::Mapped(c) => c.format(),
            Input::Streamed(s) => s.format(),
        }
    }

    /// "pcap (µs, little-endian, link type 1), zstd-compressed".
    pub fn describe(&self) -> String {
        match self {
            Input::Mapped(c) => c.format().describe(),
            Input::Streamed(s) => s.describe(),
        }
    }

    /// Bytes as stored (compressed size for a compressed file; `None` for a pipe).
    pub fn stored_len(&self) -> Option<u64> {
        match self {
            Input::Mapped(c) => Some(c.len()),
            Input::Streamed(s) => s.stored_len(),
        }
    }

    /// The bytes a copy of this file starts with (see [`Capture::preamble`]).
    pub fn preamble(&self) -> &[u8] {
        match self {
            Input::Mapped(c) => c.preamble(),
            Input::Streamed(s) => s.preamble(),
        }
    }

    /// Time of the first record.
    pub fn first_ts(&self) -> Option<Timestamp> {
        match self {
            Input::Mapped(c) => c.reader_all().next_record().map(|r| r.ts),
            Input::Streamed(s) => s.first_ts(),
        }
    }

    /// Time of the last record, where it can be known without reading the whole file (a mapped file:
    /// the records of its last megabyte).
    pub fn last_ts(&self) -> Option<Timestamp> {
        let Input::Mapped(c) = self else {
            return None;
        };
        let from = c.len().saturating_sub(1 << 20);
        let start = if from <= c.initial_state().offset {
            c.initial_state().clone()
        } else {
            let at = c.resync(from, c.len())?;
            crate::ReaderState {
                offset: at,
                section: c.initial_state().section.clone(),
            }
        };
        let mut reader = c.reader_after(start, c.len());
        let mut last = None;
        while let Some(r) = reader.next_record() {
            last = last.max(Some(r.ts));
        }
        last
    }
}

/// Window of decompressed bytes a [`CaptureSet::pass`] reads a stream in.
const PASS_WINDOW: usize = 16 << 20;
/// A [`CaptureSet::pass`] reports progress after this many bytes of a mapped file.
const PROGRESS_STEP: u64 = 4 << 20;

/// The first bytes of a file (empty if unreadable).
fn magic(path: &Path) -> Vec<u8> {
    use std::io::Read;
    let mut head = Vec::with_capacity(6);
    if let Ok(f) = std::fs::File::open(path) {
        let _ = f.take(6).read_to_end(&mut head);
    }
    head
}

/// How the files of a set make one capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// One file.
    Single,
    /// One after the other, in time order (`mergecap -a` on the files in that order).
    Concatenated,
    /// Merged record by record in time order, because they overlap in time (`mergecap` without `-a`):
    /// frames are numbered as in the merged file `mergecap` writes.
    Merged,
}

/// Files read as one capture; see the module documentation.
#[derive(Debug)]
pub struct CaptureSet {
    /// The inputs in the order they are read: time order for a concatenated set, one merging input for a
    /// merged one. Frame numbers count across them in this order.
    pub inputs: Vec<Input>,
    /// How the inputs make one capture.
    pub order: Order,
    /// Files that overlap in time with the next one (captured at once on several interfaces, or given
    /// twice): `(earlier, later)`. They are merged by time ([`Order::Merged`]) when they can be, else
    /// read one after the other, and [`CaptureSet::not_merged`] says why.
    pub overlaps: Vec<(PathBuf, PathBuf)>,
    /// Why overlapping files were read one after the other rather than merged by time.
    pub not_merged: Option<String>,
    /// The files merged into the one input of an [`Order::Merged`] set, in the set's order.
    pub merged: Vec<(PathBuf, Option<FileId>)>,
    /// Files of a directory named that are not captures, left out.
    pub skipped: Vec<PathBuf>,
}

impl CaptureSet {
    /// Opens the files named (directories are read for their files; a name with `*`, `?` or `[` that
    /// is not a file is matched as a pattern) and puts them in time order.
    pub fn open(names: &[PathBuf]) -> Result<Self, CaptureError> {
        let mut inputs = Vec::new();
        let mut skipped = Vec::new();
        for name in names {
            let paths = expand(std::slice::from_ref(name))?;
            if !name.is_dir() {
                for p in &paths {
                    inputs.push(Input::open(p)?);
                }
                continue;
            }
            // A directory may hold other files beside the captures: those are skipped, and said.
            let before = inputs.len();
            for p in paths {
                match Input::open(&p) {
                    Ok(i) => inputs.push(i),
                    Err(_) => skipped.push(p),
                }
            }
            if inputs.len() == before {
                return Err(CaptureError::EmptyDirectory { path: name.clone() });
            }
        }
        if inputs.len() > 1 {
            let mut keyed: Vec<(Option<Timestamp>, Input)> =
                inputs.into_iter().map(|i| (i.first_ts(), i)).collect();
            keyed.sort_by(|(ta, a), (tb, b)| {
                // A file without records sorts by name among the others.
                match (ta, tb) {
                    (Some(x), Some(y)) if x != y => x.cmp(y),
                    _ => natural_cmp(a.path(), b.path()),
                }
            });
            inputs = keyed.into_iter().map(|(_, i)| i).collect();
        }
        let overlaps: Vec<(PathBuf, PathBuf)> = (1..inputs.len())
            .filter(|&i| {
                let (Some(end), Some(next)) = (inputs[i - 1].last_ts(), inputs[i].first_ts())
                else {
                    return false;
                };
                end > next
            })
            .map(|i| {
                (
                    inputs[i - 1].path().to_path_buf(),
                    inputs[i].path().to_path_buf(),
                )
            })
            .collect();
        let mut set = CaptureSet {
            order: match inputs.len() {
                1 => Order::Single,
                _ => Order::Concatenated,
            },
            inputs,
            overlaps,
            not_merged: None,
            merged: Vec::new(),
            skipped,
        };
        if !set.overlaps.is_empty() {
            set.not_merged = set.merge()?;
        }
        Ok(set)
    }

    /// Turns the inputs into one, merged by time; or says why they cannot be (`Ok(Some(why))`): merging
    /// reads the files side by side, which needs them mapped (not compressed, not pipes), and writes
    /// their records into one capture, which needs them to agree on what records mean.
    fn merge(&mut self) -> Result<Option<String>, CaptureError> {
        if let Some(streamed) = self.inputs.iter().find(|i| matches!(i, Input::Streamed(_))) {
            return Ok(Some(format!(
                "{} is a stream (compressed, or a pipe), and merging by time reads uncompressed files side by side",
                streamed.path().display()
            )));
        }
        if let Err(e) = self.preamble() {
            return Ok(Some(e.to_string()));
        }
        let merged = self
            .identities()
            .map(|(p, id)| (p.to_path_buf(), id))
            .collect();
        let caps = std::mem::take(&mut self.inputs)
            .into_iter()
            .filter_map(|i| match i {
                Input::Mapped(c) => Some(c),
                Input::Streamed(_) => None,
            })
            .collect();
        self.inputs = vec![Input::Streamed(Stream::merged(caps)?)];
        self.merged = merged;
        self.order = Order::Merged;
        Ok(None)
    }

    /// Reads every record once, file after file, for sequential tools (`extract`, `split`): mapped
    /// files release their pages as they go and streams are decompressed ahead into recycled windows,
    /// so memory stays flat whatever the size. `visit(input, record)` sees each record in order (an
    /// error from it stops the pass); `progress(done, total)` is called every few megabytes with bytes
    /// as stored (the total counts what is known: pipes have none). Returns the damage found, each
    /// naming its input.
    pub fn pass<E>(
        &mut self,
        mut visit: impl FnMut(usize, &Record<'_>) -> Result<(), E>,
        progress: impl Fn(u64, u64),
    ) -> Result<Vec<Damage>, E> {
        let total: u64 = self.inputs.iter().filter_map(Input::stored_len).sum();
        let mut done_before = 0;
        let mut damage = Vec::new();
        for (input, source) in self.inputs.iter_mut().enumerate() {
            match source {
                Input::Mapped(cap) => {
                    let mut pass = cap.pass();
                    let mut next_report = 0;
                    while let Some(rec) = pass.next_record() {
                        if rec.offset >= next_report {
                            next_report = rec.offset + PROGRESS_STEP;
                            progress(done_before + rec.offset, total);
                        }
                        visit(input, &rec)?;
                    }
                    damage.extend(pass.finish().into_iter().map(|d| d.in_input(input)));
                    // The file stays open until the set is dropped: its pages must not stay resident
                    // with it, or memory would grow with the number of files read.
                    cap.release(0, cap.len());
                    done_before += cap.len();
                }
                Input::Streamed(stream) => {
                    stream.read_windows(PASS_WINDOW, |w| {
                        let mut reader = w.chunk.reader_after(w.start, w.chunk.end());
                        while let Some(rec) = reader.next_record() {
                            visit(input, &rec)?;
                        }
                        damage.extend(reader.take_damage().into_iter().map(|d| d.in_input(input)));
                        damage.extend(w.damage.iter().map(|d| d.clone().in_input(input)));
                        progress(done_before + w.stored_read, total);
                        Ok(reader.state())
                    })?;
                    done_before += stream.stored_len().unwrap_or(0);
                }
            }
        }
        progress(done_before, total);
        Ok(Damage::coalesced(damage))
    }

    /// The first bytes of a capture holding records of any of the files (for writers): the first file's
    /// preamble, if the files agree on what their records mean. Classic pcap must have the same link
    /// type, byte order and timestamp unit (snap lengths may differ); pcapng the same section header and
    /// interfaces (a rotated set of one `tcpdump` or `dumpcap`).
    pub fn preamble(&self) -> Result<&[u8], CaptureError> {
        let Some(first) = self.inputs.first() else {
            return Ok(&[]);
        };
        for other in &self.inputs[1..] {
            let reason = match (first.format(), other.format()) {
                (Format::Pcap(a), Format::Pcap(b)) => {
                    if (a.big_endian, a.nanosecond, a.modified)
                        != (b.big_endian, b.nanosecond, b.modified)
                    {
                        Some(format!("is {}, not {}", b.describe(), a.describe()))
                    } else if a.linktype != b.linktype {
                        Some(format!("has link type {}, not {}", b.linktype, a.linktype))
                    } else {
                        None
                    }
                }
                (Format::PcapNg, Format::PcapNg) => (first.preamble() != other.preamble())
                    .then(|| "has another pcapng section header or other interfaces".to_string()),
                (a, b) => Some(format!("is {}, not {}", b.describe(), a.describe())),
            };
            if let Some(reason) = reason {
                return Err(CaptureError::IncompatibleInputs {
                    first: first.path().to_path_buf(),
                    other: other.path().to_path_buf(),
                    reason,
                });
            }
        }
        Ok(first.preamble())
    }

    /// The inputs' paths and identities (every file of a merge), for refusing an output that is one
    /// of them.
    pub fn identities(&self) -> impl Iterator<Item = (&Path, Option<FileId>)> {
        self.inputs
            .iter()
            .map(|i| (i.path(), i.file_id()))
            .chain(self.merged.iter().map(|(p, id)| (p.as_path(), *id)))
    }
}

/// The capture files `names` stand for, in the order given: a directory gives its files (hidden ones
/// excluded) in natural order; a name with glob characters that is not itself a file gives its matches
/// in natural order.
pub fn expand(names: &[PathBuf]) -> Result<Vec<PathBuf>, CaptureError> {
    let mut out = Vec::new();
    for name in names {
        let text = name.to_string_lossy();
        if name.is_dir() {
            let mut files: Vec<PathBuf> = std::fs::read_dir(name)
                .map_err(|source| CaptureError::Open {
                    path: name.clone(),
                    source,
                })?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    p.is_file()
                        && !p
                            .file_name()
                            .is_some_and(|n| n.to_string_lossy().starts_with('.'))
                })
                .collect();
            files.sort_by(|a, b| natural_cmp(a, b));
            if files.is_empty() {
                return Err(CaptureError::EmptyDirectory { path: name.clone() });
            }
            out.extend(files);
        } else if !name.exists() && text.contains(['*', '?', '[']) {
            let mut files: Vec<PathBuf> = glob::glob(&text)
                .map_err(|e| CaptureError::Pattern {
                    pattern: text.to_string(),
                    reason: e.msg.to_string(),
                })?
                .filter_map(Result::ok)
                .filter(|p| p.is_file())
                .collect();
            files.sort_by(|a, b| natural_cmp(a, b));
            if files.is_empty() {
                return Err(CaptureError::Pattern {
                    pattern: text.to_string(),
                    reason: "no file matches".into(),
                });
            }
            out.extend(files);
        } else {
            out.push(name.clone());
        }
    }
    Ok(out)
}

/// A capture file's name without its compression and capture extensions, as what is made from it is
/// named (`split`'s pieces, `export`'s capture): `db3.pcap.gz` → `db3`, `big.pcap3` (a rotated file) →
/// `big`, `x.pcapng` and `x.cap` → `x`; `stdin` for standard input (`-`).
pub fn capture_stem(path: &Path) -> String {
    let name = match path.file_name() {
        Some(n) if path.as_os_str() != "-" => n.to_string_lossy().into_owned(),
        _ => return "stdin".into(),
    };
    let mut stem = name.as_str();
    for ext in [".gz", ".zst", ".xz", ".lz4"] {
        stem = stem.strip_suffix(ext).unwrap_or(stem);
    }
    // `big.pcap`, `big.pcap3` (rotated), `big.pcapng`, `big.cap`: the capture extension goes.
    if let Some((base, ext)) = stem.rsplit_once('.') {
        if !base.is_empty() && (ext.starts_with("pcap") || ext == "cap") {
            stem = base;
        }
    }
    stem.to_string()
}

/// Names compared with runs of digits as numbers: `big.pcap` < `big.pcap2` < `big.pcap10`.
pub fn natural_cmp(a: &Path, b: &Path) -> Ordering {
    let (a, b) = (a.to_string_lossy(), b.to_string_lossy());
    let (mut x, mut y) = (a.as_bytes(), b.as_bytes());
    loop {
        match (x.first(), y.first()) {
            (None, None) => return a.cmp(&b),
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(p), Some(q)) if p.is_ascii_digit() && q.is_ascii_digit() => {
                let dx = x.iter().take_while(|c| c.is_ascii_digit()).count();
                let dy = y.iter().take_while(|c| c.is_ascii_digit()).count();
                let (nx, ny) = (trim_zeros(&x[..dx]), trim_zeros(&y[..dy]));
                let by_value = nx.len().cmp(&ny.len()).then_with(|| nx.cmp(ny));
                if by_value != Ordering::Equal {
                    return by_value;
                }
                x = &x[dx..];
                y = &y[dy..];
            }
            (Some(p), Some(q)) if p != q => return p.cmp(q),
            _ => {
                x = &x[1..];
                y = &y[1..];
            }
        }
    }
}

fn trim_zeros(digits: &[u8]) -> &[u8] {
    let zeros = digits.iter().take_while(|&&c| c == b'0').count();
    &digits[zeros..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotated_names_sort_by_their_numbers() {
        let mut names: Vec<PathBuf> = [
            "big.pcap10",
            "big.pcap2",
            "big.pcap",
            "big.pcap1",
            "big.pcap11.gz",
            "dump-20240101-0900.pcap",
            "dump-20240101-1000.pcap",
        ]
        .iter()
        .map(PathBuf::from)
        .collect();
        names.sort_by(|a, b| natural_cmp(a, b));
        let got: Vec<_> = names.iter().map(|p| p.to_str().unwrap()).collect();
        assert_eq!(
            got,
            [
                "big.pcap",
                "big.pcap1",
                "big.pcap2",
                "big.pcap10",
                "big.pcap11.gz",
                "dump-20240101-0900.pcap",
                "dump-20240101-1000.pcap"
            ]
        );
    }
}
