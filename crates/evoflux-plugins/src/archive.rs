//! Safe extraction of `.evoplugin` and `.zip` archives.
//!
//! Every entry name and size is checked before a single byte is written:
//! traversal, absolute names, `:` in a segment (drive letters, alternate
//! streams), backslashes, empty or dot segments, duplicates and names that
//! collide once case-folded, symlink entries, too many entries, too large an
//! archive, too much expanded data and large entries with a suspicious
//! compression ratio are all refused. Extraction then writes only into a
//! fresh destination folder, counts real bytes (declared sizes can lie) and
//! removes the destination again if anything fails, so nothing
//! half-extracted is left behind.

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use evoflux_core::Diagnostic;
use zip::ZipArchive;

/// Archive limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExtractLimits {
    pub max_archive_bytes: u64,
    pub max_entries: usize,
    pub max_expanded_bytes: u64,
    /// Entries larger than this are checked against `max_ratio`.
    pub ratio_check_min_bytes: u64,
    pub max_ratio: u64,
}

impl ExtractLimits {
    /// EvoFlux's limits: 50 MiB compressed, 2,000 entries, 200 MiB
    /// expanded, and at most 200:1 for entries over 1 MiB.
    pub const DEFAULT: ExtractLimits = ExtractLimits {
        max_archive_bytes: 50 * 1024 * 1024,
        max_entries: 2_000,
        max_expanded_bytes: 200 * 1024 * 1024,
        ratio_check_min_bytes: 1024 * 1024,
        max_ratio: 200,
    };
}

impl Default for ExtractLimits {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// Why an entry name is refused. Closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameProblem {
    Absolute,
    Backslash,
    Colon,
    EmptySegment,
    DotSegment,
    Traversal,
    NotUtf8,
}

impl NameProblem {
    const fn describe(self) -> &'static str {
        match self {
            NameProblem::Absolute => "is absolute",
            NameProblem::Backslash => "contains a backslash",
            NameProblem::Colon => "contains `:` in a segment",
            NameProblem::EmptySegment => "is empty or has an empty segment",
            NameProblem::DotSegment => "has a `.` segment",
            NameProblem::Traversal => "has a `..` segment",
            NameProblem::NotUtf8 => "is not UTF-8",
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ExtractError {
    #[error("the archive is larger than {limit} bytes")]
    ArchiveTooLarge { limit: u64 },
    #[error("the archive has more than {limit} entries")]
    TooManyEntries { limit: usize },
    #[error("entry `{name}` {}", problem.describe())]
    UnsafeName { name: String, problem: NameProblem },
    #[error("entry `{name}` appears twice")]
    Duplicate { name: String },
    /// The reader folds repeated names into one entry, so the name itself
    /// is no longer known; the repetition is still refused.
    #[error("the central directory repeats an entry name")]
    DuplicateInDirectory,
    #[error("entry `{name}` is a file and also the folder of other entries")]
    FileIsFolder { name: String },
    #[error(
        "entries `{first}` and `{second}` name the same file on a case-insensitive or Unicode-normalizing file system (they differ only in letter case or normalization)"
    )]
    CaseFoldDuplicate { first: String, second: String },
    #[error("entry `{name}` is a symlink; archives may hold only files and folders")]
    Symlink { name: String },
    #[error("entry `{name}` is encrypted")]
    Encrypted { name: String },
    #[error("the archive expands to more than {limit} bytes")]
    ExpandedTooLarge { limit: u64 },
    #[error("entry `{name}` has a suspicious compression ratio ({size} bytes from {compressed})")]
    SuspiciousRatio {
        name: String,
        size: u64,
        compressed: u64,
    },
    #[error("the destination `{0}` already exists")]
    DestinationExists(PathBuf),
    #[error("not a valid ZIP archive: {0}")]
    Invalid(#[from] zip::result::ZipError),
    #[error(
        "the file is {format}, not a ZIP archive: a plugin archive (.evoplugin or .zip) is the plugin folder packed as a ZIP"
    )]
    NotZip { format: &'static str },
    /// Reading the archive or writing `path` failed; `path` is the file or
    /// folder the error concerns.
    #[error("cannot extract the archive: `{}`: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

impl ExtractError {
    /// The stable diagnostic code.
    pub const fn code(&self) -> &'static str {
        match self {
            ExtractError::ArchiveTooLarge { .. } => "plugin/archive-too-large",
            ExtractError::TooManyEntries { .. } => "plugin/archive-too-many-entries",
            ExtractError::UnsafeName { problem, .. } => match problem {
                NameProblem::Absolute => "plugin/archive-absolute-path",
                NameProblem::Backslash => "plugin/archive-backslash",
                NameProblem::Colon => "plugin/archive-colon-segment",
                NameProblem::EmptySegment | NameProblem::DotSegment => {
                    "plugin/archive-empty-segment"
                }
                NameProblem::Traversal => "plugin/archive-path-traversal",
                NameProblem::NotUtf8 => "plugin/archive-name-not-utf8",
            },
            ExtractError::NotZip { .. } => "plugin/archive-not-zip",
            ExtractError::Duplicate { .. }
            | ExtractError::DuplicateInDirectory
            | ExtractError::FileIsFolder { .. } => "plugin/archive-duplicate-entry",
            ExtractError::CaseFoldDuplicate { .. } => "plugin/archive-case-fold-duplicate",
            ExtractError::Symlink { .. } => "plugin/archive-symlink",
            ExtractError::Encrypted { .. } => "plugin/archive-encrypted",
            ExtractError::ExpandedTooLarge { .. } => "plugin/archive-expanded-too-large",
            ExtractError::SuspiciousRatio { .. } => "plugin/archive-suspicious-ratio",
            ExtractError::DestinationExists(_) => "plugin/archive-destination-exists",
            ExtractError::Invalid(_) => "plugin/archive-invalid",
            ExtractError::Io { .. } => "plugin/archive-io",
        }
    }

    /// Wraps an IO error with the path it concerns.
    pub fn io(path: &Path) -> impl FnOnce(io::Error) -> ExtractError + '_ {
        move |source| ExtractError::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    pub fn to_diagnostic(&self, archive: &Path) -> Diagnostic {
        Diagnostic::error(self.code(), self.to_string()).with_file(archive)
    }
}

/// What was extracted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtractReport {
    pub files: usize,
    pub expanded_bytes: u64,
}

/// Checks one entry name; returns its segments and whether it names a folder.
pub fn check_entry_name(name: &str) -> Result<(Vec<&str>, bool), NameProblem> {
    if name.starts_with('/') {
        return Err(NameProblem::Absolute);
    }
    if name.contains('\\') {
        return Err(NameProblem::Backslash);
    }
    let (body, is_dir) = match name.strip_suffix('/') {
        Some(body) => (body, true),
        None => (name, false),
    };
    let segments: Vec<&str> = body.split('/').collect();
    for segment in &segments {
        match *segment {
            "" => return Err(NameProblem::EmptySegment),
            "." => return Err(NameProblem::DotSegment),
            ".." => return Err(NameProblem::Traversal),
            s if s.contains(':') => return Err(NameProblem::Colon),
            s if s.contains('\0') => return Err(NameProblem::EmptySegment),
            _ => {}
        }
    }
    Ok((segments, is_dir))
}

const S_IFMT: u32 = 0o170_000;
const S_IFLNK: u32 = 0o120_000;

/// An entry that passed every check of [`check_entries`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckedEntry {
    /// Its index in the archive.
    pub index: usize,
    /// Its name, `/`-separated, without a trailing slash.
    pub path: String,
    pub is_dir: bool,
    pub executable: bool,
    /// The expanded size it declares (readers still count real bytes).
    pub size: u64,
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

/// The name under which file systems that ignore letter case (macOS,
/// Windows) or Unicode normalization (macOS) see `path`: NFC, then full
/// case folding (`ß` and `SS` are one name), then NFC again. Full folding
/// is lower(upper(lower(s))), which `str` offers; it agrees with Unicode's
/// full case folding for the letters file names use.
fn collision_key(path: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    let nfc: String = path.nfc().collect();
    let folded = nfc.to_lowercase().to_uppercase().to_lowercase();
    folded.nfc().collect()
}

/// Checks every entry of an opened archive against the rules above, before
/// anything is read or written. The one check of every ZIP the host opens:
/// plugin packages, and the Office documents the viewer renders.
pub fn check_entries<R: io::Read + io::Seek>(
    zip: &mut ZipArchive<R>,
    limits: &ExtractLimits,
) -> Result<Vec<CheckedEntry>, ExtractError> {
    if zip.len() > limits.max_entries {
        return Err(ExtractError::TooManyEntries {
            limit: limits.max_entries,
        });
    }
    if zip.has_duplicate_names() {
        return Err(ExtractError::DuplicateInDirectory);
    }
    let mut seen: BTreeMap<String, String> = BTreeMap::new();
    let mut folded: BTreeMap<String, String> = BTreeMap::new();
    let mut declared: u64 = 0;
    let mut plan = Vec::with_capacity(zip.len());
    for index in 0..zip.len() {
        let entry = zip.by_index_raw(index)?;
        let Ok(name) = std::str::from_utf8(entry.name_raw()).map(str::to_owned) else {
            return Err(ExtractError::UnsafeName {
                name: String::from_utf8_lossy(entry.name_raw()).into_owned(),
                problem: NameProblem::NotUtf8,
            });
        };
        let (segments, is_dir) =
            check_entry_name(&name).map_err(|problem| ExtractError::UnsafeName {
                name: name.clone(),
                problem,
            })?;
        let path = segments.join("/");
        let mode = entry.unix_mode();
        if entry.is_symlink() || mode.is_some_and(|m| m & S_IFMT == S_IFLNK) {
            return Err(ExtractError::Symlink { name });
        }
        if entry.encrypted() {
            return Err(ExtractError::Encrypted { name });
        }
        if seen.insert(path.clone(), name.clone()).is_some() {
            return Err(ExtractError::Duplicate { name });
        }
        if let Some(first) = folded.insert(collision_key(&path), name.clone()) {
            return Err(ExtractError::CaseFoldDuplicate {
                first,
                second: name,
            });
        }
        let size = entry.size();
        let compressed = entry.compressed_size();
        declared = declared.saturating_add(size);
        if declared > limits.max_expanded_bytes {
            return Err(ExtractError::ExpandedTooLarge {
                limit: limits.max_expanded_bytes,
            });
        }
        if size > limits.ratio_check_min_bytes
            && size > compressed.max(1).saturating_mul(limits.max_ratio)
        {
            return Err(ExtractError::SuspiciousRatio {
                name,
                size,
                compressed,
            });
        }
        plan.push(CheckedEntry {
            index,
            path,
            is_dir: is_dir || entry.is_dir(),
            executable: mode.is_some_and(|m| m & 0o111 != 0),
            size,
        });
    }
    // A file entry that is also the parent of another entry cannot be laid
    // out on disk; catch it before writing.
    let files: std::collections::BTreeSet<&str> = plan
        .iter()
        .filter(|p| !p.is_dir)
        .map(|p| p.path.as_str())
        .collect();
    for p in &plan {
        let mut prefix = p.path.as_str();
        while let Some((parent, _)) = prefix.rsplit_once('/') {
            if files.contains(parent) {
                return Err(ExtractError::FileIsFolder {
                    name: parent.to_owned(),
                });
            }
            prefix = parent;
        }
    }
    Ok(plan)
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
        crate::tree::set_file_mode(&target, p.executable).map_err(ExtractError::io(&target))?;
    }
    Ok(ExtractReport {
        files,
        expanded_bytes: expanded,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_names() {
        assert_eq!(check_entry_name("a/b.txt"), Ok((vec!["a", "b.txt"], false)));
        assert_eq!(check_entry_name("skills/"), Ok((vec!["skills"], true)));
        assert_eq!(check_entry_name("/etc/x"), Err(NameProblem::Absolute));
        assert_eq!(check_entry_name("a\\b"), Err(NameProblem::Backslash));
        assert_eq!(check_entry_name("C:/x"), Err(NameProblem::Colon));
        assert_eq!(check_entry_name("a/b:c"), Err(NameProblem::Colon));
        assert_eq!(check_entry_name(""), Err(NameProblem::EmptySegment));
        assert_eq!(check_entry_name("a//b"), Err(NameProblem::EmptySegment));
        assert_eq!(check_entry_name("./a"), Err(NameProblem::DotSegment));
        assert_eq!(check_entry_name("a/../../b"), Err(NameProblem::Traversal));
    }
}
