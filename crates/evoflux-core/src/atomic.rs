//! Atomic file replacement.
//!
//! Readers of a file evoflux writes (registries, settings overlays, compiled
//! graphs, credentials) must see either the old content or the new content,
//! never a torn mix, and a writer killed half-way must leave nothing behind
//! that looks like a file. On Linux the data is written into an anonymous
//! `O_TMPFILE` inode in the target's directory, so a writer killed while
//! writing leaves no directory entry at all; only when the data is complete
//! and synced is it linked under a hidden temporary name and renamed over the
//! target. Where `O_TMPFILE` is unavailable, a hidden named temporary file is
//! used instead. Either way the directory is synced after the rename.

use std::ffi::OsString;
use std::fs::{self, File, Permissions};
use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Options for [`write_atomic`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AtomicOptions {
    /// Exact permission bits for the new file (such as `0o600` for secrets),
    /// applied before the file becomes visible. `None` keeps the mode of the
    /// file being replaced, or uses the process umask for a new file.
    pub mode: Option<u32>,
}

impl AtomicOptions {
    /// Owner read/write only: for credentials and tokens.
    pub const SECRET: AtomicOptions = AtomicOptions { mode: Some(0o600) };
}

/// A failed atomic write; the target is untouched.
#[derive(Debug, thiserror::Error)]
#[error("cannot write {path}: {step}: {source}")]
pub struct AtomicWriteError {
    pub path: PathBuf,
    pub step: &'static str,
    #[source]
    pub source: io::Error,
}

fn err<'a>(path: &'a Path, step: &'static str) -> impl FnOnce(io::Error) -> AtomicWriteError + 'a {
    move |source| AtomicWriteError {
        path: path.to_path_buf(),
        step,
        source,
    }
}

/// Replaces `path` with `bytes` atomically.
pub fn write_atomic(
    path: &Path,
    bytes: &[u8],
    options: AtomicOptions,
) -> Result<(), AtomicWriteError> {
    write_atomic_with(path, options, |file| file.write_all(bytes))
}

/// Replaces `path` with whatever `fill` writes into the provided file, for
/// content produced incrementally.
pub fn write_atomic_with(
    path: &Path,
    options: AtomicOptions,
    fill: impl FnOnce(&mut File) -> io::Result<()>,
) -> Result<(), AtomicWriteError> {
    let dir = parent_dir(path);
    let file_name = path.file_name().ok_or_else(|| AtomicWriteError {
        path: path.to_path_buf(),
        step: "resolve the file name",
        source: io::Error::new(io::ErrorKind::InvalidInput, "path has no file name"),
    })?;
    let mode = match options.mode {
        Some(mode) => Some(mode),
        // Keep the permissions of the file being replaced.
        None => match fs::metadata(path) {
            Ok(meta) => Some(meta.permissions().mode() & 0o7777),
            Err(_) => None,
        },
    };

    #[cfg(any(target_os = "linux", target_os = "android"))]
    if let Some(file) =
        anonymous::create(&dir, mode).map_err(err(path, "create a temporary file"))?
    {
        return finish_anonymous(path, &dir, file_name, mode, file, fill);
    }

    write_named(path, &dir, file_name, mode, fill)
}

/// The portable path: a hidden named temporary file beside the target.
fn write_named(
    path: &Path,
    dir: &Path,
    file_name: &std::ffi::OsStr,
    mode: Option<u32>,
    fill: impl FnOnce(&mut File) -> io::Result<()>,
) -> Result<(), AtomicWriteError> {
    let prefix = hidden_prefix(file_name);
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(".tmp");
    if let Some(mode) = mode {
        builder.permissions(Permissions::from_mode(mode));
    }
    let mut tmp = builder
        .tempfile_in(dir)
        .map_err(err(path, "create a temporary file"))?;
    if let Some(mode) = mode {
        // `permissions` above is subject to the umask; the requested mode is exact.
        fs::set_permissions(tmp.path(), Permissions::from_mode(mode))
            .map_err(err(path, "set permissions"))?;
    }
    fill(tmp.as_file_mut()).map_err(err(path, "write"))?;
    tmp.as_file().sync_all().map_err(err(path, "sync"))?;
    tmp.persist(path)
        .map_err(|e| err(path, "rename into place")(e.error))?;
    sync_dir(dir).map_err(err(path, "sync the directory"))
}

#[cfg(any(target_os = "linux", target_os = "android"))]
fn finish_anonymous(
    path: &Path,
    dir: &Path,
    file_name: &std::ffi::OsStr,
    mode: Option<u32>,
    mut file: File,
    fill: impl FnOnce(&mut File) -> io::Result<()>,
) -> Result<(), AtomicWriteError> {
    fill(&mut file).map_err(err(path, "write"))?;
    file.sync_all().map_err(err(path, "sync"))?;
    let tmp = match anonymous::link(&file, dir, file_name) {
        Ok(tmp) => tmp,
        // Linking goes through /proc/self/fd, which a sandbox may not
        // mount: copy the finished content to a named temporary instead.
        Err(_) => return copy_to_named(path, dir, file_name, mode, file),
    };
    if let Err(e) = fs::rename(&tmp, path) {
        let _ = fs::remove_file(&tmp);
        return Err(err(path, "rename into place")(e));
    }
    sync_dir(dir).map_err(err(path, "sync the directory"))
}

/// Writes the finished content of an unnamed file through a named
/// temporary file.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn copy_to_named(
    path: &Path,
    dir: &Path,
    file_name: &std::ffi::OsStr,
    mode: Option<u32>,
    mut file: File,
) -> Result<(), AtomicWriteError> {
    write_named(path, dir, file_name, mode, |dst| {
        use std::io::Seek;
        file.rewind()?;
        io::copy(&mut file, dst).map(drop)
    })
}

fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// `.name.` so temporary files are hidden from listings and from discovery.
fn hidden_prefix(file_name: &std::ffi::OsStr) -> OsString {
    let mut prefix = OsString::from(".");
    prefix.push(file_name);
    prefix.push(".");
    prefix
}

/// Flushes a directory's entries (the rename) to disk.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

#[cfg(any(target_os = "linux", target_os = "android"))]
mod anonymous {
    use super::*;
    use rustix::fs::{AtFlags, CWD, Mode, OFlags};
    use std::os::fd::AsRawFd;

    /// An unnamed file in `dir`, or `None` when the filesystem has no
    /// `O_TMPFILE` support (the caller then uses a named temporary file).
    pub(super) fn create(dir: &Path, mode: Option<u32>) -> io::Result<Option<File>> {
        let open_mode = Mode::from_bits_truncate(mode.unwrap_or(0o666));
        match rustix::fs::open(
            dir,
            OFlags::TMPFILE | OFlags::RDWR | OFlags::CLOEXEC,
            open_mode,
        ) {
            Ok(fd) => {
                let file = File::from(fd);
                if let Some(mode) = mode {
                    // The open mode went through the umask; make it exact.
                    file.set_permissions(Permissions::from_mode(mode))?;
                }
                Ok(Some(file))
            }
            Err(e)
                if e == rustix::io::Errno::OPNOTSUPP
                    || e == rustix::io::Errno::ISDIR
                    || e == rustix::io::Errno::INVAL
                    || e == rustix::io::Errno::NOSYS =>
            {
                Ok(None)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Gives the finished file a hidden name in `dir` and returns it.
    pub(super) fn link(
        file: &File,
        dir: &Path,
        file_name: &std::ffi::OsStr,
    ) -> io::Result<PathBuf> {
        let proc_path = format!("/proc/self/fd/{}", file.as_raw_fd());
        for attempt in 0u32..100 {
            let mut name = hidden_prefix(file_name);
            name.push(format!("{}.{attempt}.tmp", std::process::id()));
            let tmp = dir.join(name);
            match rustix::fs::linkat(CWD, proc_path.as_str(), CWD, &tmp, AtFlags::SYMLINK_FOLLOW) {
                Ok(()) => return Ok(tmp),
                Err(rustix::io::Errno::EXIST) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            "no free temporary name after 100 attempts",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn creates_and_replaces() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("registry.json");
        write_atomic(&path, b"one", AtomicOptions::default()).unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"one");
        write_atomic(&path, b"two", AtomicOptions::default()).unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"two");
        assert_eq!(entries(dir.path()), ["registry.json"]);
    }

    #[test]
    fn secret_mode_is_exact_and_replacement_keeps_mode() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("credentials.json");
        write_atomic(&path, b"{}", AtomicOptions::SECRET).unwrap();
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        // A later write without a mode keeps 0600 rather than widening it.
        write_atomic(&path, b"{\"a\":1}", AtomicOptions::default()).unwrap();
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );

        let other = dir.path().join("script.sh");
        write_atomic(&other, b"#!/bin/sh\n", AtomicOptions { mode: Some(0o755) }).unwrap();
        assert_eq!(
            fs::metadata(&other).unwrap().permissions().mode() & 0o777,
            0o755
        );
    }

    #[test]
    fn failing_fill_leaves_old_content_and_no_litter() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        fs::write(&path, b"old").unwrap();
        let e = write_atomic_with(&path, AtomicOptions::default(), |f| {
            f.write_all(b"half")?;
            Err(io::Error::other("boom"))
        })
        .unwrap_err();
        assert_eq!(e.step, "write");
        assert!(e.to_string().contains("settings.json"));
        assert_eq!(fs::read(&path).unwrap(), b"old");
        assert_eq!(entries(dir.path()), ["settings.json"]);
    }

    #[cfg(any(target_os = "linux", target_os = "android"))]
    #[test]
    fn content_of_an_anonymous_file_can_be_copied_to_a_named_one() {
        // The fallback when /proc is not mounted: what was written into the
        // unnamed file lands intact, with the requested mode, and no litter.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("registry.json");
        fs::write(&path, b"old").unwrap();
        let mut anon = anonymous::create(dir.path(), None).unwrap().unwrap();
        anon.write_all(b"fresh content").unwrap();
        copy_to_named(
            &path,
            dir.path(),
            std::ffi::OsStr::new("registry.json"),
            Some(0o600),
            anon,
        )
        .unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"fresh content");
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert_eq!(entries(dir.path()), ["registry.json"]);
    }

    #[test]
    fn missing_directory_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nope").join("x.json");
        let e = write_atomic(&path, b"x", AtomicOptions::default()).unwrap_err();
        assert!(e.to_string().contains("nope/x.json"), "{e}");
    }
}
