//! Where an export's files go: the hive-style partition of a capture (`key=value` directories), and the
//! staging directory everything is written in before it is put in place.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use pcapsleuth_capture::staging::{self, StagingDir};

use crate::columns::DATASETS;
use crate::ExportError;

/// The longest key or value accepted: a path segment stays well under any file system's limit.
const MAX_NAME: usize = 128;

/// Whether `c` may appear in a partition value. Letters, digits, `.`, `_` and `-`: what every engine
/// and object store takes in a path without escaping (Hadoop's paths reject `:`; `/` and `=` would cut
/// the segment; `%` is an escape).
fn value_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')
}

fn check_value(value: &str) -> Result<(), &'static str> {
    if value.is_empty() {
        return Err("the value is empty");
    }
    if value.len() > MAX_NAME {
        return Err("the value is longer than 128 characters");
    }
    if matches!(value, "." | "..") {
        return Err("`.` and `..` name directories");
    }
    if !value.chars().all(value_char) {
        return Err("a value may hold only letters, digits, `.`, `_` and `-`");
    }
    Ok(())
}

/// A constant column and partition key of every row of an export: `--label host=db3`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Label {
    key: String,
    value: String,
}

impl Label {
    /// `key=value`, checked: the key is a lower-case SQL identifier (`[a-z_][a-z0-9_]*`) that names no
    /// column of any dataset and is not `capture`; the value holds letters, digits, `.`, `_` and `-`.
    pub fn new(key: &str, value: &str) -> Result<Self, ExportError> {
        let bad = |why: &'static str| ExportError::BadLabel {
            label: format!("{key}={value}"),
            why,
        };
        let mut chars = key.chars();
        let starts_well = chars
            .next()
            .is_some_and(|c| c.is_ascii_lowercase() || c == '_');
        if !starts_well
            || !chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
            || key.len() > MAX_NAME
        {
            return Err(bad(
                "the key must be a lower-case name: letters a-z, digits and `_`, not starting with a digit",
            ));
        }
        if key == "capture"
            || DATASETS
                .iter()
                .any(|d| d.columns.iter().any(|c| c.name == key))
        {
            return Err(bad("the key names a column of the datasets"));
        }
        check_value(value).map_err(bad)?;
        Ok(Label {
            key: key.to_string(),
            value: value.to_string(),
        })
    }

    /// The column's name.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The value of every row.
    pub fn value(&self) -> &str {
        &self.value
    }
}

impl FromStr for Label {
    type Err = ExportError;

    /// `host=db3`.
    fn from_str(s: &str) -> Result<Self, ExportError> {
        match s.split_once('=') {
            Some((k, v)) => Label::new(k, v),
            None => Err(ExportError::BadLabel {
                label: s.to_string(),
                why: "a label is KEY=VALUE",
            }),
        }
    }
}

impl fmt::Display for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.key, self.value)
    }
}

/// Which rows of a dataset an export writes: those of one capture, under its labels. Each dataset keeps
/// them in the directory `DATASET/k1=v1/.../capture=NAME/`, so that exports of many captures (from
/// many hosts) into one root form one hive-partitioned dataset per table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Partition {
    capture: String,
    labels: Vec<Label>,
}

impl Partition {
    /// The partition of the capture `capture` (letters, digits, `.`, `_`, `-`), under `labels` (each
    /// key once).
    pub fn new(capture: &str, labels: Vec<Label>) -> Result<Self, ExportError> {
        check_value(capture).map_err(|why| ExportError::BadCapture {
            name: capture.to_string(),
            why,
        })?;
        for (i, l) in labels.iter().enumerate() {
            if labels[..i].iter().any(|o| o.key == l.key) {
                return Err(ExportError::BadLabel {
                    label: l.to_string(),
                    why: "the key is given twice",
                });
            }
        }
        Ok(Partition {
            capture: capture.to_string(),
            labels,
        })
    }

    /// A capture's name from its first file: the file name without compression and capture extensions
    /// (`db3-2026-11-22.pcap.gz` → `db3-2026-11-22`); `stdin` for standard input. Two different file
    /// names never give the same name (else `--replace` of one capture would replace another's
    /// partition): each byte of a character other than an ASCII letter, digit, `.`, `_` or `-` is
    /// written `_xHH` (`ü` → `_xc3_xbc`, a space `_x20`), and so is a `_` followed by `x`, so that every
    /// `_x` of a name starts an escape; `.` and `..` are escaped whole. A name longer than 128 characters
    /// keeps its first 111 and ends with `-` and 16 hexadecimal digits of a hash of the whole name.
    pub fn capture_name_of(path: &Path) -> String {
        let stem = pcapsleuth_capture::capture_stem(path);
        let mut name = String::with_capacity(stem.len());
        let mut chars = stem.chars().peekable();
        while let Some(c) = chars.next() {
            let escape = !value_char(c) || (c == '_' && chars.peek() == Some(&'x'));
            if escape {
                let mut utf8 = [0u8; 4];
                for b in c.encode_utf8(&mut utf8).bytes() {
                    name.push_str(&format!("_x{b:02x}"));
                }
            } else {
                name.push(c);
            }
        }
        match name.as_str() {
            "" => return "_x00".into(), // no file name is empty: a name of its own
            "." | ".." => return name.replace('.', "_x2e"),
            _ => {}
        }
        if name.len() > MAX_NAME {
            // FNV-1a of the whole stem: names that share their first 111 characters stay apart.
            let hash = stem.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
            });
            name.truncate(MAX_NAME - 17);
            name.push_str(&format!("-{hash:016x}"));
        }
        name
    }

    /// The capture's name.
    pub fn capture(&self) -> &str {
        &self.capture
    }

    /// The labels, in the order given.
    pub fn labels(&self) -> &[Label] {
        &self.labels
    }

    /// `k1=v1/.../capture=NAME`, relative to a dataset's directory.
    pub fn relative_dir(&self) -> PathBuf {
        let mut p = PathBuf::new();
        for l in &self.labels {
            p.push(format!("{}={}", l.key, l.value));
        }
        p.push(format!("capture={}", self.capture));
        p
    }
}

/// What to do when the root already holds the partition of this capture and labels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Existing {
    /// Refuse before reading anything ([`ExportError::PartitionExists`]).
    #[default]
    Refuse,
    /// Put the new partition in its place: a task run again (a retried Spark task) gives the same
    /// dataset.
    Replace,
}

/// A hidden directory in the root (`.pcapsleuth-export-NAME-hHOST-PID-N`, a
/// [`pcapsleuth_capture::staging::StagingDir`]) where the datasets are written; [`Staging::commit`]
/// renames each dataset's partition into place, so a reader never sees a partition half written.
/// Removed when dropped (after a commit only its emptied shell is left to remove), when the CLI is
/// interrupted, and by the next export into the root if its process was killed. Readers of
/// `ROOT/DATASET/...` never look into it.
pub(crate) struct Staging {
    root: PathBuf,
    dir: PathBuf,
    /// Owns the directory: removes it when dropped.
    _staged: StagingDir,
}

impl Staging {
    /// Creates the staging directory in `root` (created if missing), after removing those that killed
    /// exports of this host left there; returns them too, for the caller to say.
    pub(crate) fn create(
        root: &Path,
        partition: &Partition,
    ) -> Result<(Self, Vec<PathBuf>), ExportError> {
        std::fs::create_dir_all(root).map_err(|e| ExportError::io(root, e))?;
        let swept = staging::remove_stale(root, "export");
        let staged = StagingDir::create_in(root, "export", &partition.capture)
            .map_err(|e| ExportError::io(root, e))?;
        Ok((
            Staging {
                root: root.to_path_buf(),
                dir: staged.path().to_path_buf(),
                _staged: staged,
            },
            swept,
        ))
    }

    /// Where a dataset's files are written before the commit.
    pub(crate) fn dataset_dir(&self, dataset: &str) -> PathBuf {
        self.dir.join(dataset)
    }

    /// Puts each dataset's staged partition in place, `ROOT/DATASET/<partition>`; with
    /// [`Existing::Replace`] an existing one is moved aside first and removed with the staging
    /// directory. Returns the partitions' directories.
    pub(crate) fn commit(
        &self,
        partition: &Partition,
        datasets: &[&str],
        existing: Existing,
    ) -> Result<Vec<PathBuf>, ExportError> {
        let targets: Vec<PathBuf> = datasets
            .iter()
            .map(|d| self.root.join(d).join(partition.relative_dir()))
            .collect();
        if existing == Existing::Refuse {
            refuse_existing(&targets)?;
        }
        for (d, target) in datasets.iter().zip(&targets) {
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent).map_err(|e| ExportError::io(parent, e))?;
            }
            if target.exists() {
                let aside = self.dir.join(format!("replaced-{d}"));
                std::fs::rename(target, &aside).map_err(|e| ExportError::io(target, e))?;
            }
            let staged = self.dataset_dir(d);
            std::fs::rename(&staged, target).map_err(|e| ExportError::io(target, e))?;
        }
        Ok(targets)
    }
}

/// Fails on the first of `targets` that exists.
pub(crate) fn refuse_existing(targets: &[PathBuf]) -> Result<(), ExportError> {
    match targets.iter().find(|t| t.exists()) {
        Some(t) => Err(ExportError::PartitionExists { path: t.clone() }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_checked() {
        assert!("host=db3".parse::<Label>().is_ok());
        assert!("dc=eu-west-1.a".parse::<Label>().is_ok());
        for bad in [
            "host",
            "=db3",
            "Host=db3",
            "3host=x",
            "host=",
            "host=a/b",
            "host=a=b",
            "host=a:b",
            "host=..",
            "capture=x",
            "state=x",
            "rt_us=1",
        ] {
            assert!(bad.parse::<Label>().is_err(), "{bad} was accepted");
        }
    }

    #[test]
    fn a_key_given_twice_is_refused() {
        let l = |s: &str| s.parse::<Label>().expect("a good label");
        assert!(Partition::new("c", vec![l("host=a"), l("host=b")]).is_err());
        assert!(Partition::new("c", vec![l("host=a"), l("app=b")]).is_ok());
    }

    #[test]
    fn partitions_are_hive_directories_labels_first() {
        let p = Partition::new(
            "big",
            vec![
                "host=db3".parse().expect("label"),
                "app=api".parse().expect("label"),
            ],
        )
        .expect("partition");
        assert_eq!(p.relative_dir(), Path::new("host=db3/app=api/capture=big"));
    }

    #[test]
    fn capture_names_come_from_the_first_file() {
        let n = |p: &str| Partition::capture_name_of(Path::new(p));
        assert_eq!(n("/x/err1146-storm.pcap"), "err1146-storm");
        assert_eq!(n("db3.2026-11-22.pcapng.zst"), "db3.2026-11-22");
        assert_eq!(n("big.pcap3"), "big");
        assert_eq!(n("eth0 capture (1).cap"), "eth0_x20capture_x20_x281_x29");
        assert_eq!(n("-"), "stdin");
        assert_eq!(n("dump"), "dump");
        assert_eq!(n("db3_2026_11.pcap"), "db3_2026_11");
        for name in [
            "x/err1146-storm.pcap",
            "a b.pcap",
            "-",
            ".pcap",
            "..pcap",
            "ü.pcap",
        ] {
            assert!(Partition::new(&n(name), vec![]).is_ok(), "{name}");
        }
    }

    #[test]
    fn different_file_names_give_different_capture_names() {
        let n = |p: &str| Partition::capture_name_of(Path::new(p));
        let long = "x".repeat(200);
        let names = [
            "ü.pcap",
            "é.pcap",
            "_.pcap",
            "__.pcap",
            "_xc3_xbc.pcap",
            "_x.pcap",
            "a b.pcap",
            "a_b.pcap",
            "a_x20b.pcap",
            "..pcap",
            "...pcap",
            "_x2e.pcap",
            "日本.pcap",
            "капча.pcap",
            "a\u{1b}b.pcap",
            "capture.pcap",
            "stdin.pcap",
        ];
        let mut seen = std::collections::HashMap::new();
        for name in names
            .iter()
            .map(|s| s.to_string())
            .chain([format!("{long}a.pcap"), format!("{long}b.pcap")])
        {
            let capture = n(&name);
            assert!(
                Partition::new(&capture, vec![]).is_ok(),
                "{name} -> {capture}"
            );
            if let Some(other) = seen.insert(capture.clone(), name.clone()) {
                panic!("{name} and {other} both give {capture}");
            }
        }
        assert_eq!(n("ü.pcap"), "_xc3_xbc");
    }
}
