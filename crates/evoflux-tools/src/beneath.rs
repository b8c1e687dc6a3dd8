//! Opening a workspace file without a window between check and use.
//!
//! [`crate::Workspace::resolve`] decides, on the real path, that a file is
//! inside a root. Opening that path afterwards by name would let another
//! process swap a folder on it for a link to `/etc` in between, and the
//! read or write would land outside. So the file tools never open by full
//! path: they open the root, then each folder of the real path relative to
//! the one before it with `O_NOFOLLOW`, and finally the file relative to
//! its folder's handle. The real path holds no links, so a link found on
//! the way can only be one swapped in since the check: the open fails with
//! [`LinkOnPath`] instead of following it. A write goes into a temporary file
//! in the held folder and is renamed over the target there, so it lands in
//! the folder that was checked or nowhere. This works on every Linux
//! kernel (no `openat2` needed) and costs one `openat` per folder.

use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::OwnedFd;
use std::path::{Component, Path};
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{
    AtFlags, CWD, FileType, Mode, OFlags, fchmod, fsync, mkdirat, openat, renameat, statat,
    unlinkat,
};
use rustix::io::Errno;

/// The error a swapped-in link causes (inside an `io::Error`, so that
/// [`crate::ToolError::io`] can tell it apart).
#[derive(Debug, thiserror::Error)]
#[error("a link appeared on the path after it was checked; nothing was followed")]
pub(crate) struct LinkOnPath;

const DIR: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

/// What is at a name inside a held folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Entry {
    Missing,
    File { mode: u32 },
    Dir,
    Other,
}

/// A folder below a workspace root, held open.
#[derive(Debug)]
pub(crate) struct Folder {
    fd: OwnedFd,
}

impl Folder {
    /// Opens `relative` (plain names only) below `root`, creating missing
    /// folders when `create` is set.
    pub(crate) fn open(root: &Path, relative: &Path, create: bool) -> io::Result<Folder> {
        let mut fd = openat(
            CWD,
            root,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        for part in relative.components() {
            let Component::Normal(name) = part else {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "not a plain relative path",
                ));
            };
            fd = match openat(&fd, name, DIR, Mode::empty()) {
                Err(Errno::NOENT) if create => {
                    match mkdirat(&fd, name, Mode::from_raw_mode(0o777)) {
                        Ok(()) | Err(Errno::EXIST) => {}
                        Err(e) => return Err(e.into()),
                    }
                    openat(&fd, name, DIR, Mode::empty()).map_err(swapped)?
                }
                other => other.map_err(swapped)?,
            };
        }
        Ok(Folder { fd })
    }

    /// What `name` is, without following a link.
    pub(crate) fn entry(&self, name: &OsStr) -> io::Result<Entry> {
        match statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(match FileType::from_raw_mode(st.st_mode) {
                FileType::RegularFile => Entry::File {
                    mode: st.st_mode & 0o7777,
                },
                FileType::Directory => Entry::Dir,
                _ => Entry::Other,
            }),
            Err(Errno::NOENT) => Ok(Entry::Missing),
            Err(e) => Err(e.into()),
        }
    }

    /// Opens the file `name` for reading, refusing a link.
    pub(crate) fn open_file(&self, name: &OsStr) -> io::Result<File> {
        openat(
            &self.fd,
            name,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map(File::from)
        .map_err(swapped)
    }

    /// Replaces `name` with `bytes` atomically, keeping the replaced
    /// file's mode (a new file gets the umask's).
    pub(crate) fn replace(&self, name: &OsStr, bytes: &[u8]) -> io::Result<()> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let keep = match self.entry(name)? {
            Entry::File { mode } => Some(mode),
            Entry::Missing | Entry::Dir | Entry::Other => None,
        };
        let mut tmp_name = std::ffi::OsString::from(".");
        tmp_name.push(name);
        tmp_name.push(format!(
            ".{}.{}.tmp",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let fd = openat(
            &self.fd,
            &tmp_name,
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o666),
        )?;
        let written = (|| -> io::Result<()> {
            if let Some(mode) = keep {
                fchmod(&fd, Mode::from_raw_mode(mode))?;
            }
            let mut file = File::from(fd);
            file.write_all(bytes)?;
            file.sync_all()?;
            renameat(&self.fd, &tmp_name, &self.fd, name)?;
            Ok(())
        })();
        if let Err(e) = written {
            let _ = unlinkat(&self.fd, &tmp_name, AtFlags::empty());
            return Err(e);
        }
        // The rename is durable once the folder is.
        fsync(&self.fd).map_err(Into::into)
    }
}

/// A link where a folder or file was expected (`ELOOP` with
/// `O_NOFOLLOW`, `ENOTDIR` for a link to a file) becomes [`SWAPPED`].
fn swapped(e: Errno) -> io::Error {
    match e {
        Errno::LOOP | Errno::NOTDIR => io::Error::other(LinkOnPath),
        e => e.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn opens_creates_and_replaces_below_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let folder = Folder::open(root, Path::new("a/b"), true).unwrap();
        assert!(root.join("a/b").is_dir());
        assert_eq!(folder.entry(OsStr::new("f")).unwrap(), Entry::Missing);
        folder.replace(OsStr::new("f"), b"one").unwrap();
        assert_eq!(std::fs::read(root.join("a/b/f")).unwrap(), b"one");
        std::fs::set_permissions(
            root.join("a/b/f"),
            std::os::unix::fs::PermissionsExt::from_mode(0o640),
        )
        .unwrap();
        folder.replace(OsStr::new("f"), b"two").unwrap();
        assert_eq!(std::fs::read(root.join("a/b/f")).unwrap(), b"two");
        assert_eq!(
            folder.entry(OsStr::new("f")).unwrap(),
            Entry::File { mode: 0o640 }
        );
        // No temporary file is left behind.
        assert_eq!(std::fs::read_dir(root.join("a/b")).unwrap().count(), 1);
        let mut text = String::new();
        std::io::Read::read_to_string(&mut folder.open_file(OsStr::new("f")).unwrap(), &mut text)
            .unwrap();
        assert_eq!(text, "two");
    }

    #[test]
    fn a_link_on_the_way_is_refused_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "s").unwrap();
        let root = dir.path();
        symlink(outside.path(), root.join("swapped")).unwrap();
        let err = Folder::open(root, Path::new("swapped"), true).unwrap_err();
        assert!(err.get_ref().unwrap().is::<LinkOnPath>());
        symlink(outside.path().join("secret"), root.join("link")).unwrap();
        let here = Folder::open(root, Path::new(""), false).unwrap();
        let err = here.open_file(OsStr::new("link")).unwrap_err();
        assert!(err.get_ref().unwrap().is::<LinkOnPath>());
        // Replacing a link replaces the link, never its target.
        here.replace(OsStr::new("link"), b"mine").unwrap();
        assert_eq!(
            std::fs::read_to_string(outside.path().join("secret")).unwrap(),
            "s"
        );
        assert_eq!(std::fs::read_to_string(root.join("link")).unwrap(), "mine");
    }
}
