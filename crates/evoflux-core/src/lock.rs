//! Cross-process locks on a sibling `.lock` file.
//!
//! Files that several evoflux processes update (the plugin registry, the
//! skill settings overlay) are guarded by an exclusive advisory lock on
//! `<file>.lock`, never on the file itself, because the file is replaced by
//! rename and a lock on the old inode would guard nothing. The kernel drops
//! the lock when its holder exits, so a crashed holder never leaves a stale
//! lock. The holder writes its pid into the lock file so that a waiter that
//! gives up can say who it was waiting for.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{self, Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// An acquired lock; released when dropped.
#[derive(Debug)]
pub struct FileLock {
    file: File,
    path: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error(
        "timed out after {waited:?} waiting for the lock {} ({}); wait for that process to finish, or stop it",
        path.display(),
        holder.map_or_else(|| "holder unknown".to_owned(), |pid| format!("held by pid {pid}"))
    )]
    Timeout {
        /// The lock file.
        path: PathBuf,
        waited: Duration,
        /// The pid the holder recorded, when it could be read.
        holder: Option<u32>,
    },
    #[error("cannot lock {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// The lock file that guards `target`: `registry.json` → `registry.json.lock`.
pub fn lock_path_for(target: &Path) -> PathBuf {
    let mut name = target.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

impl FileLock {
    /// Locks `target` (through its sibling `.lock` file), waiting at most
    /// `wait`. A zero wait tries exactly once.
    pub fn acquire(target: &Path, wait: Duration) -> Result<FileLock, LockError> {
        let path = lock_path_for(target);
        let io_err = |source| LockError::Io {
            path: path.clone(),
            source,
        };
        let mut options = OpenOptions::new();
        options.read(true).write(true).create(true).truncate(false);
        // It holds a pid and sits among private files: the owner's alone.
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let file = options.open(&path).map_err(io_err)?;
        let started = Instant::now();
        let mut pause = Duration::from_millis(2);
        loop {
            match file.try_lock() {
                Ok(()) => break,
                Err(TryLockError::WouldBlock) => {
                    let waited = started.elapsed();
                    if waited >= wait {
                        return Err(LockError::Timeout {
                            holder: read_holder(&path),
                            path,
                            waited,
                        });
                    }
                    std::thread::sleep(pause.min(wait - waited));
                    pause = (pause * 2).min(Duration::from_millis(100));
                }
                Err(TryLockError::Error(e)) => return Err(io_err(e)),
            }
        }
        let mut lock = FileLock { file, path };
        match lock.record_holder() {
            Ok(()) => Ok(lock),
            Err(source) => Err(LockError::Io {
                path: lock.path.clone(),
                source,
            }),
        }
    }

    /// The lock file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn record_holder(&mut self) -> io::Result<()> {
        self.file.set_len(0)?;
        self.file.rewind()?;
        writeln!(self.file, "{}", std::process::id())?;
        self.file.flush()
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        // Leave the lock file in place: deleting it would let a waiter that
        // already opened it and a newcomer that creates a new one both
        // "hold" the lock. Clearing the pid keeps the record honest.
        let _ = self.file.set_len(0);
        let _ = self.file.unlock();
    }
}

fn read_holder(path: &Path) -> Option<u32> {
    let mut text = String::new();
    File::open(path).ok()?.read_to_string(&mut text).ok()?;
    text.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_path_is_a_sibling() {
        assert_eq!(
            lock_path_for(Path::new("/a/registry.json")),
            PathBuf::from("/a/registry.json.lock")
        );
    }

    #[test]
    fn second_lock_in_process_times_out_naming_path_and_holder() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("registry.json");
        let held = FileLock::acquire(&target, Duration::ZERO).unwrap();
        let err = FileLock::acquire(&target, Duration::from_millis(30)).unwrap_err();
        match &err {
            LockError::Timeout { path, holder, .. } => {
                assert_eq!(path, held.path());
                assert_eq!(*holder, Some(std::process::id()));
            }
            other => panic!("unexpected {other:?}"),
        }
        let msg = err.to_string();
        assert!(msg.contains("registry.json.lock"), "{msg}");
        assert!(
            msg.contains(&format!("pid {}", std::process::id())),
            "{msg}"
        );
        drop(held);
        FileLock::acquire(&target, Duration::ZERO).unwrap();
    }

    #[test]
    fn unwritable_location_is_an_io_error() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("missing-dir").join("x.json");
        let err = FileLock::acquire(&target, Duration::ZERO).unwrap_err();
        assert!(matches!(err, LockError::Io { .. }));
        assert!(err.to_string().contains("x.json.lock"));
    }
}
