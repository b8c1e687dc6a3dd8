//! The checks every entry passes before anything is read or written.

use std::collections::{BTreeMap, BTreeSet};
use std::io;

use zip::ZipArchive;

use super::{ExtractError, ExtractLimits, NameProblem};

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

/// Checks every entry of an opened archive against the module's rules, before
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
    let files: BTreeSet<&str> = plan
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

    /// An in-memory stored archive holding `entries` (name, unix mode).
    fn archive(entries: &[(&str, Option<u32>)]) -> ZipArchive<io::Cursor<Vec<u8>>> {
        use std::io::Write;
        use zip::write::SimpleFileOptions;
        let mut zip = zip::ZipWriter::new(io::Cursor::new(Vec::new()));
        for (name, mode) in entries {
            let mut opts =
                SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
            if let Some(mode) = mode {
                opts = opts.unix_permissions(*mode);
            }
            zip.start_file(*name, opts).unwrap();
            zip.write_all(b"x").unwrap();
        }
        ZipArchive::new(io::Cursor::new(zip.finish().unwrap().into_inner())).unwrap()
    }

    fn refusal(entries: &[(&str, Option<u32>)]) -> &'static str {
        check_entries(&mut archive(entries), &ExtractLimits::DEFAULT)
            .unwrap_err()
            .code()
    }

    #[test]
    fn names_that_collide_on_disk_are_refused() {
        let case_fold = "plugin/archive-case-fold-duplicate";
        assert_eq!(
            refusal(&[("a/Read.md", None), ("A/read.MD", None)]),
            case_fold
        );
        assert_eq!(
            refusal(&[("stra\u{df}e", None), ("STRASSE", None)]),
            case_fold
        );
        // NFC `é` and NFD `e` + combining acute.
        assert_eq!(
            refusal(&[("caf\u{e9}", None), ("cafe\u{301}", None)]),
            case_fold
        );
        assert_eq!(
            refusal(&[("a", None), ("a/b", None)]),
            "plugin/archive-duplicate-entry"
        );
    }

    #[test]
    fn symlinks_and_limits_are_refused() {
        use zip::write::SimpleFileOptions;
        let mut zip = zip::ZipWriter::new(io::Cursor::new(Vec::new()));
        zip.add_symlink("link", "../../etc/passwd", SimpleFileOptions::default())
            .unwrap();
        let bytes = zip.finish().unwrap().into_inner();
        let err = check_entries(
            &mut ZipArchive::new(io::Cursor::new(bytes)).unwrap(),
            &ExtractLimits::DEFAULT,
        )
        .unwrap_err();
        assert_eq!(err.code(), "plugin/archive-symlink");
        let limits = ExtractLimits {
            max_entries: 1,
            ..ExtractLimits::DEFAULT
        };
        let err = check_entries(&mut archive(&[("a", None), ("b", None)]), &limits).unwrap_err();
        assert_eq!(err.code(), "plugin/archive-too-many-entries");
    }

    #[test]
    fn a_clean_archive_yields_its_entries() {
        let plan = check_entries(
            &mut archive(&[("bin/run", Some(0o755)), ("docs/a.md", None)]),
            &ExtractLimits::DEFAULT,
        )
        .unwrap();
        let paths: Vec<(&str, bool)> = plan
            .iter()
            .map(|e| (e.path.as_str(), e.executable))
            .collect();
        assert_eq!(paths, [("bin/run", true), ("docs/a.md", false)]);
    }
}
