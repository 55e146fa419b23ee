//! Hidden staging directories: where a tool writes a set of files (`split`'s pieces, `export`'s
//! datasets) before it puts them in place, so that a reader of the output never sees part of a set.
//!
//! A staging directory is named `.pcapsleuth-KIND-LABEL-hHOST-PID-N`: the kind of output, a label (the
//! capture's name), a hash of the host's name, the process id and a counter. It is removed when its
//! [`StagingDir`] is dropped, by [`remove_all`] when the process is interrupted (the CLI calls it on
//! SIGINT, SIGTERM and SIGHUP), and, when a process was killed outright (SIGKILL, a crash, a power
//! loss), by the next run that stages in the same place ([`remove_stale`]): only those of this host
//! whose process is gone, so that a run on another host writing to a shared directory, or a run still
//! going here, is never disturbed.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

/// Numbers the staging directories of one process.
static COUNTER: AtomicU64 = AtomicU64::new(0);

/// The staging directories of this process that exist, for [`remove_all`].
static LIVE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// A hash of this host's name (FNV-1a), so that staging directories of another host sharing the
/// directory are told apart from this host's; 0 where the name cannot be read.
fn host() -> u64 {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_default();
    name.trim().bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// A staging directory (see the module docs), removed when dropped unless [`StagingDir::into_place`]
/// moved it.
#[derive(Debug)]
pub struct StagingDir {
    path: PathBuf,
}

impl StagingDir {
    /// Creates `PARENT/.pcapsleuth-KIND-LABEL-hHOST-PID-N` (the parent must exist); the label is cut
    /// to 64 bytes, so that the name stays well within a file system's limit.
    pub fn create_in(parent: &Path, kind: &str, label: &str) -> std::io::Result<Self> {
        let mut end = label.len().min(64);
        while !label.is_char_boundary(end) {
            end -= 1;
        }
        let label = &label[..end];
        let path = parent.join(format!(
            ".pcapsleuth-{kind}-{label}-h{:016x}-{}-{}",
            host(),
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir(&path)?;
        LIVE.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(path.clone());
        Ok(StagingDir { path })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Renames the whole directory to `target` (which must not exist, or be an empty directory), in
    /// one step: the set appears at once.
    pub fn into_place(self, target: &Path) -> std::io::Result<()> {
        std::fs::rename(&self.path, target)?;
        forget(&self.path);
        std::mem::forget(self);
        Ok(())
    }
}

impl Drop for StagingDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
        forget(&self.path);
    }
}

fn forget(path: &Path) {
    LIVE.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .retain(|p| p != path);
}

/// Removes every staging directory of this process: what an interrupted run calls before it ends (its
/// destructors will not run).
pub fn remove_all() {
    let live = std::mem::take(&mut *LIVE.lock().unwrap_or_else(PoisonError::into_inner));
    for dir in live {
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// Removes the staging directories of `kind` in `parent` that processes of this host left when they
/// were killed (their process is gone): returns them. Needs `/proc` to tell a live process from a
/// dead one; without it nothing is removed.
pub fn remove_stale(parent: &Path, kind: &str) -> Vec<PathBuf> {
    if !Path::new("/proc/self").exists() {
        return Vec::new();
    }
    let prefix = format!(".pcapsleuth-{kind}-");
    let ours = format!("h{:016x}", host());
    let mut removed = Vec::new();
    for entry in std::fs::read_dir(parent).into_iter().flatten().flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(&prefix)) else {
            continue;
        };
        // LABEL-hHOST-PID-N, read from the right: the label may hold dashes.
        let mut fields = rest.rsplitn(4, '-');
        let (Some(n), Some(pid), Some(host), Some(_label)) =
            (fields.next(), fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        let numbers = n.parse::<u64>().is_ok() && pid.parse::<u32>().is_ok();
        let gone = !Path::new("/proc").join(pid).exists();
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        let dead_of_ours =
            numbers && host == ours && gone && is_dir && pid != std::process::id().to_string();
        if dead_of_ours && std::fs::remove_dir_all(entry.path()).is_ok() {
            removed.push(entry.path());
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_staging_directory_goes_with_its_owner_and_only_dead_runs_of_this_host_are_swept() {
        let parent = tempfile::tempdir().unwrap();
        let dir = StagingDir::create_in(parent.path(), "test", "cap-1").unwrap();
        let path = dir.path().to_path_buf();
        assert!(path.is_dir());
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        assert!(name.starts_with(".pcapsleuth-test-cap-1-h"), "{name}");
        // Ours, and alive: never swept.
        assert!(remove_stale(parent.path(), "test").is_empty());
        drop(dir);
        assert!(!path.exists());

        // A dead process of this host (pid far above any pid_max), another host's, and a live one's.
        let dead = parent.path().join(format!(
            ".pcapsleuth-test-x-y-h{:016x}-4294967294-0",
            host()
        ));
        let other_host = parent
            .path()
            .join(".pcapsleuth-test-x-h0123456789abcdef-4294967294-0");
        let live = parent
            .path()
            .join(format!(".pcapsleuth-test-x-h{:016x}-1-0", host()));
        for d in [&dead, &other_host, &live] {
            std::fs::create_dir(d).unwrap();
            std::fs::write(d.join("part"), b"x").unwrap();
        }
        assert_eq!(remove_stale(parent.path(), "test"), vec![dead.clone()]);
        assert!(!dead.exists() && other_host.exists() && live.exists());
        assert!(remove_stale(parent.path(), "other").is_empty());

        let a = StagingDir::create_in(parent.path(), "test", "a").unwrap();
        let b = StagingDir::create_in(parent.path(), "test", "b").unwrap();
        let (pa, pb) = (a.path().to_path_buf(), b.path().to_path_buf());
        remove_all();
        assert!(!pa.exists() && !pb.exists());
        let target = parent.path().join("set");
        let c = StagingDir::create_in(parent.path(), "test", "c").unwrap();
        std::fs::write(c.path().join("piece"), b"1").unwrap();
        c.into_place(&target).unwrap();
        assert_eq!(std::fs::read(target.join("piece")).unwrap(), b"1");
        drop((a, b));
    }
}
