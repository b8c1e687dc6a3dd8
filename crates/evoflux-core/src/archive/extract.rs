//! Writing a checked archive into a fresh folder.

use std::fs;
use std::io::{self, Read, Write};
use std::path::Path;

use zip::ZipArchive;

use super::{CheckedEntry, ExtractError, ExtractLimits, check_entries};

/// What was extracted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtractReport {
    pub files: usize,
    pub expanded_bytes: u64,
}

/// Extracts `archive` into `dest`, which must not exist yet (its parent is
/// created). On any error `dest` is removed again.
pub fn extract_archive(
    archive: &Path,
    dest: &Path,
    limits: &ExtractLimits,
) -> Result<ExtractReport, ExtractError> {
    let file = fs::File::open(archive).map_err(ExtractError::io(archive))?;
    let size = file.metadata().map_err(ExtractError::io(archive))?.len();
    if size > limits.max_archive_bytes {
        return Err(ExtractError::ArchiveTooLarge {
            limit: limits.max_archive_bytes,
        });
    }
    let mut file = file;
    if let Some(format) = other_format(&mut file).map_err(ExtractError::io(archive))? {
        return Err(ExtractError::NotZip { format });
    }
    let mut zip = ZipArchive::new(io::BufReader::new(file))?;
    let plan = check_entries(&mut zip, limits)?;
    if fs::symlink_metadata(dest).is_ok() {
        return Err(ExtractError::DestinationExists(dest.to_path_buf()));
    }
    if let Some(parent) = dest.parent() {
        fs::create_dir_all(parent).map_err(ExtractError::io(parent))?;
    }
    fs::create_dir(dest).map_err(ExtractError::io(dest))?;
    match write_plan(&mut zip, &plan, dest, limits) {
        Ok(report) => Ok(report),
        Err(e) => {
            let _ = fs::remove_dir_all(dest);
            Err(e)
        }
    }
}

/// What a file that is not a ZIP is, by its magic bytes, when it is a
/// format people mistake for one (a tarball, a compressed file); `None`
/// for a ZIP or anything unrecognized (the ZIP reader then says what is
/// wrong). The file is rewound.
fn other_format(file: &mut fs::File) -> io::Result<Option<&'static str>> {
    use std::io::{Read, Seek};
    let mut head = [0u8; 512];
    let mut n = 0;
    while n < head.len() {
        match file.read(&mut head[n..])? {
            0 => break,
            read => n += read,
        }
    }
    file.seek(io::SeekFrom::Start(0))?;
    let head = &head[..n];
    let format = if head.starts_with(b"PK") {
        None
    } else if head.starts_with(&[0x1f, 0x8b]) {
        Some("a gzip file (a .tar.gz or .gz)")
    } else if head.starts_with(b"BZh") {
        Some("a bzip2 file")
    } else if head.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0x00]) {
        Some("an xz file")
    } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        Some("a zstd file")
    } else if head.starts_with(&[b'7', b'z', 0xbc, 0xaf, 0x27, 0x1c]) {
        Some("a 7-Zip archive")
    } else if head.starts_with(b"Rar!") {
        Some("a RAR archive")
    } else if head.get(257..262) == Some(b"ustar") {
        Some("a tar archive")
    } else {
        None
    };
    Ok(format)
}

fn write_plan<R: io::Read + io::Seek>(
    zip: &mut ZipArchive<R>,
    plan: &[CheckedEntry],
    dest: &Path,
    limits: &ExtractLimits,
) -> Result<ExtractReport, ExtractError> {
    let mut expanded: u64 = 0;
    let mut files = 0;
    for p in plan {
        let target = dest.join(&p.path);
        if p.is_dir {
            fs::create_dir_all(&target).map_err(ExtractError::io(&target))?;
            continue;
        }
        if let Some(parent) = target.parent() {
            fs::create_dir_all(parent).map_err(ExtractError::io(parent))?;
        }
        let mut entry = zip.by_index(p.index)?;
        let declared = entry.size();
        let mut out = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&target)
            .map_err(ExtractError::io(&target))?;
        // Never trust the declared size: read at most one byte past it and
        // past the remaining budget.
        let budget = limits.max_expanded_bytes.saturating_sub(expanded);
        let cap = declared.min(budget).saturating_add(1);
        let written =
            io::copy(&mut (&mut entry).take(cap), &mut out).map_err(ExtractError::io(&target))?;
        if written > budget {
            return Err(ExtractError::ExpandedTooLarge {
                limit: limits.max_expanded_bytes,
            });
        }
        if written > declared {
            return Err(ExtractError::Invalid(
                zip::result::ZipError::InvalidArchive(
                    "an entry holds more data than it declares".into(),
                ),
            ));
        }
        out.flush().map_err(ExtractError::io(&target))?;
        expanded += written;
        files += 1;
        set_file_mode(&target, p.executable).map_err(ExtractError::io(&target))?;
    }
    Ok(ExtractReport {
        files,
        expanded_bytes: expanded,
    })
}

/// Gives a package file the one mode it may have: 0755 when it is
/// executable, 0644 otherwise; never setuid, setgid or world-writable
/// whatever an archive declares (extraction, and every package copy of
/// `evoflux-plugins`, go through this).
#[cfg(unix)]
pub fn set_file_mode(path: &Path, executable: bool) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mode = if executable { 0o755 } else { 0o644 };
    fs::set_permissions(path, fs::Permissions::from_mode(mode))
}

#[cfg(not(unix))]
pub fn set_file_mode(_path: &Path, _executable: bool) -> io::Result<()> {
    Ok(())
}
