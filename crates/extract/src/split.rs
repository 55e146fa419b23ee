//! [`split()`]: a capture cut into pieces of N packets or N megabytes, put in place together.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use pcapsleuth_capture::{
    capture_stem, refuse_input_as_output, staging, Capture, CaptureError, CaptureSet, Damage,
    Format, Input, PcapWriter, Preamble,
};

use crate::{set_len, set_name, Error, Observer};

/// How large each piece of a split is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PieceSize {
    /// This many packets (the last piece may hold fewer).
    Packets(u64),
    /// At most this many megabytes (10^6 bytes) of records, and at least one record.
    Megabytes(u64),
}

/// What [`split()`] does with the pieces of an earlier split already in its output directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Existing {
    /// Refuse: nothing is written.
    Refuse,
    /// The new set takes their place, and earlier pieces beyond it are removed.
    Replace,
}

/// What [`split()`] cuts, and where the pieces go.
#[derive(Debug, Clone)]
pub struct SplitOptions {
    /// The size of each piece.
    pub size: PieceSize,
    /// The directory of the pieces `STEM_00000.EXT`, ... (created if missing). The pieces appear
    /// together when all are written.
    pub output: PathBuf,
    /// What to do with an earlier split's pieces there.
    pub existing: Existing,
}

/// What [`split()`] wrote.
#[derive(Debug)]
pub struct SplitSummary {
    /// The capture as it was read.
    pub set: CaptureSet,
    /// Pieces written.
    pub pieces: usize,
    /// Records of a later pcapng section written as new packet blocks (see [`PcapWriter`]).
    pub rewritten: u64,
    /// Damage the reading survived.
    pub damage: Vec<Damage>,
    /// Whether the single uncompressed file was copied in parallel, in runs of whole records (else it
    /// was read record by record, as a stream).
    pub copied_in_parallel: bool,
}

/// `split` copies a piece in steps of this size, releasing each step's pages: memory stays flat however
/// large the pieces.
const COPY_STEP: u64 = 64 << 20;

/// Cuts the capture `files` make (read as one capture, in time order) into pieces of `opts.size`,
/// written as the format read: a single uncompressed file is copied in parallel; several files,
/// compressed files and standard input are cut as they stream. Refused (a usage error) when the output
/// directory holds an earlier split's pieces and `opts.existing` refuses, and always when a piece would
/// be an input.
pub fn split(
    files: &[PathBuf],
    opts: &SplitOptions,
    observer: &dyn Observer,
) -> Result<SplitSummary, Error> {
    if matches!(opts.size, PieceSize::Packets(0) | PieceSize::Megabytes(0)) {
        return Err(Error::Usage("split size must be at least 1".into()));
    }
    let mut set = CaptureSet::open(files)?;
    let (stem, ext) = piece_naming(&set.inputs[0]);
    let pieces = Pieces::begin(&opts.output, &stem, ext, opts.existing, &set, observer)?;
    // Whether a piece holding `in_piece` records is full before a record ending `bytes` after its
    // first record.
    let size = opts.size;
    let full = move |in_piece: u64, bytes: u64| match size {
        PieceSize::Packets(n) => in_piece >= n,
        PieceSize::Megabytes(mb) => in_piece > 0 && bytes > mb * 1_000_000,
    };
    if let [Input::Mapped(cap)] = &set.inputs[..] {
        if let Some((count, damage)) = split_mapped(cap, full, |i| pieces.staged(i), observer)? {
            pieces.commit(count)?;
            return Ok(SplitSummary {
                set,
                pieces: count,
                rewritten: 0,
                damage,
                copied_in_parallel: true,
            });
        }
        // A pcapng file of several sections: its pieces are written record by record, as a stream's.
    }
    let (count, rewritten, damage) = split_streamed(&mut set, full, &pieces, observer)?;
    pieces.commit(count)?;
    Ok(SplitSummary {
        set,
        pieces: count,
        rewritten,
        damage,
        copied_in_parallel: false,
    })
}

/// Several files or a stream: cut as they are read, one piece open at a time. The pieces written, the
/// records rewritten, the damage met.
fn split_streamed(
    set: &mut CaptureSet,
    full: impl Fn(u64, u64) -> bool,
    pieces: &Pieces,
    observer: &dyn Observer,
) -> Result<(usize, u64, Vec<Damage>), Error> {
    let preamble = set.preamble()?.to_vec();
    let create = |i: usize| PcapWriter::create_staged(pieces.staged(i), &preamble);
    observer.begin("splitting", &set_name(set), set_len(set));
    let mut writer: Option<PcapWriter> = None;
    let (mut count, mut in_piece, mut bytes, mut rewritten) = (0usize, 0u64, 0u64, 0u64);
    let damage = set.pass(
        |_, rec| {
            let len = rec.raw.len() as u64;
            let w = match writer.take() {
                Some(w) if !full(in_piece, bytes + len) => w,
                done => {
                    if let Some(done) = done {
                        rewritten += done.rewritten();
                        done.finish()?;
                    }
                    count += 1;
                    (in_piece, bytes) = (0, 0);
                    create(count - 1)?
                }
            };
            in_piece += 1;
            bytes += len;
            writer.insert(w).write(rec)
        },
        |done, total| observer.progress(done, total),
    )?;
    if let Some(w) = writer {
        rewritten += w.rewritten();
        w.finish()?;
    }
    observer.end();
    Ok((count, rewritten, damage))
}

/// `split` of one uncompressed file: piece boundaries from a sequential walk of record headers (fast),
/// then pieces copied in parallel, each as one contiguous run of whole records after the file's header,
/// into `piece_path(i)` (new files in a staging directory). The number of pieces and the exit code; or
/// `None`, having written nothing, when a record would not mean the same after the file's preamble (a
/// pcapng file of several sections): such a file is cut record by record.
fn split_mapped(
    cap: &Capture,
    full: impl Fn(u64, u64) -> bool,
    piece_path: impl Fn(usize) -> PathBuf + Sync,
    observer: &dyn Observer,
) -> Result<Option<(usize, Vec<Damage>)>, Error> {
    use rayon::prelude::*;
    let file = cap.path();
    let preamble = Preamble::parse(file, cap.preamble())?;
    observer.begin("splitting", &file.display().to_string(), cap.len());
    let mut cuts = vec![cap.initial_state().offset];
    let mut pass = cap.pass();
    let (mut in_piece, mut piece_start) = (0u64, cap.initial_state().offset);
    while let Some(rec) = pass.next_record() {
        if !preamble.holds(&rec) {
            observer.end();
            return Ok(None);
        }
        // The walk is the quick half: the copy shows the second half of the progress.
        observer.progress(rec.offset / 2, cap.len());
        if full(in_piece, rec.offset + rec.raw.len() as u64 - piece_start) {
            cuts.push(rec.offset);
            piece_start = rec.offset;
            in_piece = 0;
        }
        in_piece += 1;
    }
    cuts.push(pass.offset());
    let damage = pass.finish();
    let pieces: Vec<(PathBuf, u64, u64)> = cuts
        .windows(2)
        .filter(|w| w[1] > w[0])
        .enumerate()
        .map(|(i, w)| (piece_path(i), w[0], w[1]))
        .collect();
    let copied = std::sync::atomic::AtomicU64::new(0);
    let written: Result<Vec<&PathBuf>, CaptureError> = pieces
        .par_iter()
        .map(|(path, a, b)| {
            let mut w = PcapWriter::create_staged(path, cap.preamble())?;
            // In steps, releasing what was copied: a piece can be gigabytes.
            let mut at = *a;
            while at < *b {
                let to = (at + COPY_STEP).min(*b);
                w.write_raw(&cap.bytes()[at as usize..to as usize])?;
                cap.release(at, to);
                let done = copied.fetch_add(to - at, std::sync::atomic::Ordering::Relaxed);
                observer.progress((cap.len() + done + to - at) / 2, cap.len());
                at = to;
            }
            w.finish()?;
            Ok(path)
        })
        .collect();
    let written = written?;
    observer.end();
    Ok(Some((written.len(), damage)))
}

/// `x_00000.pcap`-style names for the pieces of `input`: its name without compression or capture
/// extension, and the extension of what is written (the format read, whatever the input was named).
fn piece_naming(input: &Input) -> (String, &'static str) {
    let ext = match input.format() {
        Format::PcapNg => "pcapng",
        Format::Pcap(_) => "pcap",
    };
    (capture_stem(input.path()), ext)
}

/// The pieces of one `split` run: written into a hidden staging directory, then put in place as a set
/// ([`Pieces::commit`]): a reader of the output directory never sees part of a set, nor pieces of two
/// runs mixed. Pieces are not synced one by one (editcap syncs none); the set is synced once, before it
/// is put in place.
struct Pieces {
    out_dir: PathBuf,
    stem: String,
    ext: &'static str,
    staging: staging::StagingDir,
    /// Whether `out_dir` existed: then each piece is renamed into it; else the staging directory becomes
    /// it.
    into_existing: bool,
    /// Pieces of an earlier run in `out_dir` (`--replace`): removed once the new set is in place.
    earlier: Vec<PathBuf>,
}

impl Pieces {
    /// Prepares the pieces `STEM_NNNNN.EXT` of a split into `out_dir`. Refused (exit code 2) when a
    /// piece of an earlier split is there, unless `existing` says to replace the set, and always when
    /// one of them is an input.
    fn begin(
        out_dir: &Path,
        stem: &str,
        ext: &'static str,
        existing: Existing,
        set: &CaptureSet,
        observer: &dyn Observer,
    ) -> Result<Self, Error> {
        let into_existing = out_dir.exists();
        let mut earlier = Vec::new();
        if into_existing {
            if !out_dir.is_dir() {
                return Err(Error::Usage(format!(
                    "{}: not a directory",
                    out_dir.display()
                )));
            }
            earlier = std::fs::read_dir(out_dir)
                .map_err(Error::io(format!("reading {}", out_dir.display())))?
                .flatten()
                .map(|e| e.path())
                .filter(|p| is_piece_name(p, stem, ext))
                .collect();
            earlier.sort();
            for piece in &earlier {
                refuse_input_as_output(piece, set.identities())?;
            }
            if !earlier.is_empty() && existing == Existing::Refuse {
                let names: Vec<String> = earlier
                    .iter()
                    .take(3)
                    .map(|p| p.display().to_string())
                    .collect();
                return Err(Error::Usage(format!(
                    "{} already holds {} of an earlier split ({}{}): split into another directory, remove them, or pass --replace to replace that set",
                    out_dir.display(),
                    pcapsleuth_analysis::units::counted(earlier.len() as u64, "piece", "pieces"),
                    names.join(", "),
                    if earlier.len() > 3 { ", ..." } else { "" }
                )));
            }
        }
        let parent = match (into_existing, out_dir.parent()) {
            (true, _) => out_dir.to_path_buf(),
            (false, Some(p)) if !p.as_os_str().is_empty() => p.to_path_buf(),
            (false, _) => PathBuf::from("."),
        };
        std::fs::create_dir_all(&parent)
            .map_err(Error::io(format!("creating {}", parent.display())))?;
        for left in staging::remove_stale(&parent, "split") {
            observer.note(&format!(
                "removed {}, left by a split that was killed",
                left.display()
            ));
        }
        let staging = staging::StagingDir::create_in(&parent, "split", stem).map_err(Error::io(
            format!("creating a staging directory in {}", parent.display()),
        ))?;
        Ok(Pieces {
            out_dir: out_dir.to_path_buf(),
            stem: stem.to_string(),
            ext,
            staging,
            into_existing,
            earlier,
        })
    }

    fn name(&self, i: usize) -> String {
        format!("{}_{i:05}.{}", self.stem, self.ext)
    }

    /// Where piece `i` is written (in the staging directory).
    fn staged(&self, i: usize) -> PathBuf {
        self.staging.path().join(self.name(i))
    }

    /// Syncs the `count` pieces written (one `syncfs` for the set) and puts them in place; then removes
    /// the earlier set's pieces that the new set did not replace.
    fn commit(self, count: usize) -> Result<(), Error> {
        let failed = || {
            format!(
                "cannot put the pieces in place in {}",
                self.out_dir.display()
            )
        };
        sync_file_system(self.staging.path()).map_err(Error::io(failed()))?;
        if !self.into_existing {
            return self
                .staging
                .into_place(&self.out_dir)
                .map_err(Error::io(failed()));
        }
        for i in 0..count {
            std::fs::rename(self.staged(i), self.out_dir.join(self.name(i)))
                .map_err(Error::io(failed()))?;
        }
        let placed: BTreeSet<String> = (0..count).map(|i| self.name(i)).collect();
        for old in &self.earlier {
            let name = old.file_name().map(|n| n.to_string_lossy().into_owned());
            if name.is_some_and(|n| !placed.contains(&n)) {
                std::fs::remove_file(old).map_err(Error::io(format!(
                    "removing {} of the earlier split",
                    old.display()
                )))?;
            }
        }
        Ok(())
    }
}

/// Whether `path`'s name is a piece's: `STEM_` then five or more digits then `.EXT`.
pub fn is_piece_name(path: &Path, stem: &str, ext: &str) -> bool {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    name.strip_prefix(stem)
        .and_then(|r| r.strip_prefix('_'))
        .and_then(|r| r.strip_suffix(ext))
        .and_then(|r| r.strip_suffix('.'))
        .is_some_and(|digits| digits.len() >= 5 && digits.bytes().all(|b| b.is_ascii_digit()))
}

/// Writes what the file system holding `dir` has not yet written to its disk: one call for a whole set
/// of pieces, instead of one sync per piece.
fn sync_file_system(dir: &Path) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let d = std::fs::File::open(dir)?;
    // SAFETY: syncfs only reads the descriptor, which `d` keeps open for the call.
    if unsafe { libc::syncfs(d.as_raw_fd()) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}
