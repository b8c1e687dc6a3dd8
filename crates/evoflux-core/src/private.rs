//! Private by default: the data and cache folders hold every transcript,
//! command output and credential, so evoflux creates them (and the folders
//! and files it writes inside them) for its owner alone, whatever the
//! umask, and tightens an existing folder that others can read.

use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::Path;

/// Owner-only folder.
pub const PRIVATE_DIR: u32 = 0o700;
/// Owner read/write file.
pub const PRIVATE_FILE: u32 = 0o600;

/// Creates `path` and any missing parents as owner-only folders; an
/// existing `path` is left as it is (see [`tighten`]).
pub fn create_private_dir(path: &Path) -> io::Result<()> {
    match fs::metadata(path) {
        Ok(m) if m.is_dir() => Ok(()),
        _ => fs::DirBuilder::new()
            .recursive(true)
            .mode(PRIVATE_DIR)
            .create(path),
    }
}

/// Removes the group and other bits of `path` when it has any; returns
/// the mode it had, `None` when it was already private or is absent.
pub fn tighten(path: &Path) -> io::Result<Option<u32>> {
    let meta = match fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    if meta.file_type().is_symlink() {
        return Ok(None);
    }
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o077 == 0 {
        return Ok(None);
    }
    fs::set_permissions(path, fs::Permissions::from_mode(mode & 0o700))?;
    Ok(Some(mode))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn creates_owner_only_and_tightens_loose_modes() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("a/b");
        create_private_dir(&dir).unwrap();
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&t.path().join("a")), 0o700);
        let file = dir.join("f");
        fs::write(&file, "x").unwrap();
        fs::set_permissions(&file, fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(tighten(&file).unwrap(), Some(0o644));
        assert_eq!(mode(&file), 0o600);
        assert_eq!(tighten(&file).unwrap(), None);
        assert_eq!(tighten(&t.path().join("absent")).unwrap(), None);
    }
}
