//! Parquet datasets of a capture, for engines beyond one machine: every MySQL transaction, TCP
//! connection, close and rate interval, as columnar files that Spark, Trino, DuckDB, DataFusion,
//! ClickHouse, pandas and polars read (`pcapsleuth export FILE... --parquet DIR`).
//!
//! An export writes five datasets under a root directory, each partitioned hive-style by the labels
//! given and the capture's name, so that the exports of many captures, from many hosts, into one root
//! form one dataset per table:
//!
//! ```text
//! ROOT/transactions/host=db3/capture=big/part-00000.parquet   every MySQL request and what became of it
//! ROOT/connections/host=db3/capture=big/part-00000.parquet    every TCP connection (flows --json)
//! ROOT/closes/host=db3/capture=big/part-00000.parquet         every first FIN and first RST (first-reset)
//! ROOT/rates/host=db3/capture=big/part-00000.parquet          packets/s and bits/s per interval (rate)
//! ROOT/ceilings/host=db3/capture=big/part-00000.parquet       ceilings (rate)
//! ```
//!
//! Every file also holds `capture` and the labels as constant columns, so a file read alone says where
//! it came from. The columns are listed in [`columns`] (and the README).
//!
//! **Built on the analysis trait.** `transactions` is written by [`TransactionExport`], an
//! [`pcapsleuth_analysis::Analysis`] whose instances hand each row to a buffer of the worker thread
//! they run on, written in batches while the parallel engine runs, so memory does not grow with the
//! capture; the other datasets are written at the end,
//! from what the run concluded. Files are written in a hidden staging directory in the root and renamed
//! into place when complete.
//!
//! ```no_run
//! use pcapsleuth_analysis::{analyze_set, EngineOptions};
//! use pcapsleuth_capture::CaptureSet;
//! use pcapsleuth_export::{Export, ExportOptions, Partition};
//!
//! let files = [std::path::PathBuf::from("db3.pcap")];
//! let mut set = CaptureSet::open(&files)?;
//! let partition = Partition::new("db3", vec!["host=db3".parse()?])?;
//! // Checked before anything is read: the root is no input, the partition is not there yet.
//! let export = Export::begin(
//!     ExportOptions::new("/data/pcap-parquet", partition),
//!     files.iter().map(|p| p.as_path()),
//! )?;
//! let run = analyze_set(&mut set, &EngineOptions::default(), || export.analysis(), |_, _| {});
//! let done = export.finish(&run)?;
//! println!("{} transactions", done.rows("transactions"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![deny(missing_docs)]

mod buffers;
mod chunk;
pub mod columns;
mod delta;
mod layout;
mod page;
mod pages;
mod part;
mod per_thread;
mod plain;
pub mod slowlog;
mod tables;
mod transactions;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use pcapsleuth_analysis::{Analysis, PathTiming, RateAggregate, Rates, Run};

pub use layout::{Existing, Label, Partition};
pub use slowlog::{SlowLog, SlowLogAnalysis, SlowLogCounts, SlowLogOptions, SlowLogSummary};
pub use transactions::{EndpointNames, TransactionExport, TransactionsWritten};

use layout::Staging;
use part::Syncs;
use transactions::PartPool;

/// Rows per row group: the unit engines read in parallel and skip by statistics. 128 Ki rows of
/// transactions are a few MB compressed, and a writer holds one row group in memory while it fills.
pub(crate) const ROW_GROUP_ROWS: usize = 128 * 1024;

/// Why an export failed.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// A `--label` that cannot be a column and a partition key.
    #[error("bad label `{label}`: {why}")]
    BadLabel {
        /// The label as given.
        label: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// A capture name that cannot be a partition value.
    #[error("bad capture name `{name}`: {why}")]
    BadCapture {
        /// The name as given.
        name: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// The root is an input directory or inside one, or holds an input where a partition would be
    /// replaced.
    #[error("{} and the input {} overlap: the export would write into an input", output.display(), input.display())]
    OutputIsInput {
        /// The output directory.
        output: PathBuf,
        /// The input it is, or holds.
        input: PathBuf,
    },
    /// The root exists and is not a directory.
    #[error("{}: not a directory", path.display())]
    RootNotADirectory {
        /// The root given.
        path: PathBuf,
    },
    /// A file to write (the slow log) is a directory.
    #[error("{}: is a directory", path.display())]
    OutputIsADirectory {
        /// The path given.
        path: PathBuf,
    },
    /// The partition of this capture and these labels is already there.
    #[error("{} already exists: remove it, pass another --capture name, or --replace it", path.display())]
    PartitionExists {
        /// The existing partition's directory.
        path: PathBuf,
    },
    /// Reading or writing a file or directory failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The failure.
        source: std::io::Error,
    },
    /// The Parquet writer failed.
    #[error("{}: {source}", path.display())]
    Parquet {
        /// The file being written.
        path: PathBuf,
        /// The failure.
        source: parquet::errors::ParquetError,
    },
    /// A row did not fit its dataset's columns (a defect of the export, not of the capture).
    #[error("{dataset}: a value does not fit column {column}")]
    Schema {
        /// The dataset.
        dataset: &'static str,
        /// The column and the value.
        column: String,
    },
}

impl ExportError {
    fn io(path: &Path, source: std::io::Error) -> Self {
        ExportError::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    fn parquet(path: &Path, source: parquet::errors::ParquetError) -> Self {
        ExportError::Parquet {
            path: path.to_path_buf(),
            source,
        }
    }

    /// Whether the caller asked for something that cannot be done (a bad label or name, an output that
    /// is an input, a partition already there), as opposed to a failure while writing.
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            ExportError::BadLabel { .. }
                | ExportError::BadCapture { .. }
                | ExportError::OutputIsInput { .. }
                | ExportError::RootNotADirectory { .. }
                | ExportError::OutputIsADirectory { .. }
                | ExportError::PartitionExists { .. }
        )
    }
}

/// What to export, and where.
#[derive(Debug, Clone)]
pub struct ExportOptions {
    /// The root directory of the datasets (created if missing).
    pub root: PathBuf,
    /// The capture's name and labels.
    pub partition: Partition,
    /// The interval of the `rates` series, ns (default one second).
    pub interval_ns: i64,
    /// What to do when the root already holds this partition.
    pub existing: Existing,
}

impl ExportOptions {
    /// Exports into `root` as `partition`, rates per second, refusing an existing partition.
    pub fn new(root: impl Into<PathBuf>, partition: Partition) -> Self {
        ExportOptions {
            root: root.into(),
            partition,
            interval_ns: 1_000_000_000,
            existing: Existing::Refuse,
        }
    }
}

/// The analysis an export runs: the transactions written as they complete, and the rates.
pub type ExportAnalysis = (TransactionExport, Rates);

/// An export under way: its staging directory, and the files `transactions` is written into.
pub struct Export {
    options: ExportOptions,
    staging: Staging,
    /// Staging directories that killed exports of this host had left in the root, removed.
    swept: Vec<PathBuf>,
    transactions: Arc<PartPool>,
    /// The syncs of every file closed, waited for before the datasets are put in place.
    syncs: Arc<Syncs>,
}

/// What an export wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportSummary {
    /// Each dataset's partition directory, now in place.
    pub partitions: Vec<PathBuf>,
    /// Rows per dataset.
    pub rows: Vec<(&'static str, u64)>,
    /// Files of `transactions` (the other datasets have one each).
    pub transaction_files: usize,
    /// Bytes of every file written.
    pub bytes: u64,
}

impl ExportSummary {
    /// The rows written into `dataset`.
    pub fn rows(&self, dataset: &str) -> u64 {
        self.rows
            .iter()
            .find(|(d, _)| *d == dataset)
            .map_or(0, |(_, n)| *n)
    }
}

impl Export {
    /// Checks where the export goes and prepares its staging directory, before anything is read. The
    /// root must be a directory (or not exist yet) that is neither an input directory nor inside one,
    /// no input may lie in a dataset's directory (a replaced partition would take it along), and, unless
    /// [`Existing::Replace`], the partitions must not exist yet. `inputs`: the paths given and the files
    /// they named.
    pub fn begin<'a>(
        options: ExportOptions,
        inputs: impl IntoIterator<Item = &'a Path>,
    ) -> Result<Export, ExportError> {
        let root = &options.root;
        if root.exists() && !root.is_dir() {
            return Err(ExportError::RootNotADirectory { path: root.clone() });
        }
        let root_real = real_path(root);
        let datasets: Vec<PathBuf> = columns::DATASETS
            .iter()
            .map(|d| root_real.join(d.name))
            .collect();
        let inputs: Vec<&Path> = inputs.into_iter().collect();
        if options.existing == Existing::Replace {
            refuse_replacing_an_input(root, &options.partition, &inputs)?;
        }
        for input in inputs {
            // Standard input and paths that vanished have nothing to protect.
            let Ok(real) = input.canonicalize() else {
                continue;
            };
            let writes_into = real.is_dir() && root_real.starts_with(&real);
            let inside_dataset = datasets.iter().any(|d| real.starts_with(d));
            if writes_into || inside_dataset {
                return Err(ExportError::OutputIsInput {
                    output: root.clone(),
                    input: input.to_path_buf(),
                });
            }
        }
        if options.existing == Existing::Refuse {
            let targets: Vec<PathBuf> = columns::DATASETS
                .iter()
                .map(|d| root.join(d.name).join(options.partition.relative_dir()))
                .collect();
            layout::refuse_existing(&targets)?;
        }
        let (staging, swept) = Staging::create(root, &options.partition)?;
        let dir = staging.dataset_dir(columns::TRANSACTIONS.name);
        std::fs::create_dir_all(&dir).map_err(|e| ExportError::io(&dir, e))?;
        let syncs = Arc::new(Syncs::default());
        let transactions = Arc::new(PartPool::new(dir, &options.partition, syncs.clone())?);
        Ok(Export {
            options,
            staging,
            swept,
            transactions,
            syncs,
        })
    }

    /// The staging directories that exports of this host had left in the root when they were killed
    /// (their process is gone), removed by [`Export::begin`].
    pub fn removed_stale(&self) -> &[PathBuf] {
        &self.swept
    }

    /// A [`TransactionExport`] instance: give the engine a function that calls this.
    pub fn transactions(&self) -> TransactionExport {
        TransactionExport::new(self.transactions.clone())
    }

    /// The whole analysis of an export, for the engine's factory: `|| export.analysis()`.
    pub fn analysis(&self) -> ExportAnalysis {
        (
            self.transactions(),
            Rates::with_path(self.options.interval_ns, PathTiming::Skipped),
        )
    }

    /// Writes the datasets computed at the end (`connections`, `closes`, `rates`, `ceilings`) from
    /// the finished `run`, and puts every dataset's partition in place. On an error nothing is put in
    /// place and the staging directory is removed.
    pub fn finish(
        self,
        run: &Run<<ExportAnalysis as Analysis>::Output>,
    ) -> Result<ExportSummary, ExportError> {
        self.finish_with(run, &run.output)
    }

    /// [`Export::finish`] of a run of more analyses than the export's (a tuple of them): `output` is the
    /// export's part of the run's output ([`Export::analysis`]'s).
    pub fn finish_with<O>(
        self,
        run: &Run<O>,
        output: &<ExportAnalysis as Analysis>::Output,
    ) -> Result<ExportSummary, ExportError> {
        let (written, rates) = output;
        if let Some(e) = self.transactions.take_failure() {
            return Err(e);
        }
        let dir = |d: &str| self.staging.dataset_dir(d);
        let partition = &self.options.partition;
        let syncs = &*self.syncs;
        let write_rates = || {
            tables::write_rates(
                &RateAggregate::report(rates),
                self.options.interval_ns,
                dir,
                partition,
                syncs,
            )
        };
        // `connections` and `closes` beside the rate report and its datasets, when the engine ran on
        // more than one thread (they are independent; the rate report alone is a third of the time).
        let (connections, rate_rows) = if self.transactions.threads() > 1 {
            std::thread::scope(|s| {
                let rates = s.spawn(write_rates);
                let connections = tables::write_connections(run, dir, partition, syncs);
                let rates = rates.join().unwrap_or_else(|_| {
                    Err(ExportError::io(
                        &dir(columns::RATES.name),
                        std::io::Error::other("the thread writing the rates panicked"),
                    ))
                });
                (connections, rates)
            })
        } else {
            (
                tables::write_connections(run, dir, partition, syncs),
                write_rates(),
            )
        };
        let mut rows = vec![(columns::TRANSACTIONS.name, written.rows)];
        rows.extend(connections?);
        rows.extend(rate_rows?);
        self.syncs.wait()?;
        let names: Vec<&str> = columns::DATASETS.iter().map(|d| d.name).collect();
        let bytes = names.iter().map(|d| dir_bytes(&dir(d))).sum();
        let partitions = self
            .staging
            .commit(partition, &names, self.options.existing)?;
        Ok(ExportSummary {
            partitions,
            rows,
            transaction_files: written.files,
            bytes,
        })
    }
}

/// Fails if a partition that [`Existing::Replace`] would remove holds one of `inputs` (by device and
/// inode: a hard link, or the file standard input, `-`, is open on), which the paths alone cannot show.
fn refuse_replacing_an_input(
    root: &Path,
    partition: &Partition,
    inputs: &[&Path],
) -> Result<(), ExportError> {
    use pcapsleuth_capture::FileId;
    let ids: Vec<(FileId, &Path)> = inputs
        .iter()
        .filter_map(|&p| {
            let id = if p.as_os_str() == "-" {
                FileId::of_stdin()
            } else {
                FileId::of_path(p)
            };
            id.map(|id| (id, p))
        })
        .collect();
    for dataset in columns::DATASETS {
        let mut dirs = vec![root.join(dataset.name).join(partition.relative_dir())];
        while let Some(dir) = dirs.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                // Not following links: removing a symbolic link leaves what it points to.
                let Ok(meta) = entry.path().symlink_metadata() else {
                    continue;
                };
                if meta.is_dir() {
                    dirs.push(entry.path());
                } else if let Some((_, input)) = ids.iter().find(|(id, _)| *id == FileId::of(&meta))
                {
                    return Err(ExportError::OutputIsInput {
                        output: entry.path(),
                        input: if input.as_os_str() == "-" {
                            PathBuf::from("- (standard input)")
                        } else {
                            input.to_path_buf()
                        },
                    });
                }
            }
        }
    }
    Ok(())
}

/// `path` with its existing part resolved (symbolic links, `..`), the rest as given: where it is or
/// would be.
fn real_path(path: &Path) -> PathBuf {
    let mut rest = Vec::new();
    let mut at = path.to_path_buf();
    loop {
        if let Ok(real) = at.canonicalize() {
            return rest.iter().rev().fold(real, |p, c| p.join(c));
        }
        match (at.file_name().map(ToOwned::to_owned), at.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                at = if parent.as_os_str().is_empty() {
                    PathBuf::from(".")
                } else {
                    parent.to_path_buf()
                };
            }
            _ => return path.to_path_buf(),
        }
    }
}

/// Bytes of the files directly in `dir`.
fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}
