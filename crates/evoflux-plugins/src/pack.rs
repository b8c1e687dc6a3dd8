//! Packing a plugin folder into a deterministic `.evoplugin` ZIP.
//!
//! The same tree always yields the same bytes: entries are the package's
//! regular files sorted by path, every entry has the fixed timestamp
//! 1980-01-01 00:00:00, mode 0755 (any exec bit) or 0644, Unix as the
//! creating system, DEFLATE level 9, and no folder entries or extra fields.
//! Caches are skipped exactly as the digest skips them. The archive adds no
//! manifest of its own: it wraps the folder and nothing else.
//!
//! What is never packed: `.env` and `.env.*` files and folders at any depth
//! (secrets a developer keeps beside the code), and whatever the package's
//! root `.evopluginignore` names, in gitignore syntax (its `!` lines may
//! bring a default back, such as `!.env.example`). [`select`] decides this
//! once; the archive, the report's list of what was left out and the
//! report's digest all come from that one selection, so the digest is the
//! digest of the packed tree and of the tree an install extracts from it.
//! An install from a folder copies by the same rule ([`copy_plan`]).

use std::collections::BTreeSet;
use std::fs;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use evoflux_core::Diagnostic;
use evoflux_core::hash::ContentHash;
use ignore::Match;
use ignore::gitignore::GitignoreBuilder;
use serde::Serialize;
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, DateTime, System, ZipWriter};

use crate::inspect::{PluginInspection, inspect};
use crate::manifest::PluginManifest;
use crate::scope::ScopedDiagnostic;
use crate::skills::SkillValidator;
use crate::tree::{
    DigestError, EntryKind, LeftOutLink, PackageTree, normalize_lexically, stays_inside,
};

/// Where to write the archive and which trees it must never land in.
#[derive(Debug, Clone, Default)]
pub struct PackOptions {
    /// The archive path; [`default_pack_output`] when `None`.
    pub output: Option<PathBuf>,
    /// Trees the output must stay out of, such as the release-bundled
    /// plugin tree.
    pub forbidden_roots: Vec<PathBuf>,
}

/// A written archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackReport {
    pub output: PathBuf,
    /// Number of file entries.
    pub entries: usize,
    /// Digest of the packed tree; extraction yields a tree with this digest.
    pub content_sha256: ContentHash,
    /// What was left out, top-most paths only (a left-out folder stands for
    /// everything in it).
    pub excluded: Vec<ExcludedEntry>,
}

/// The package's ignore file, at its root.
pub const IGNORE_FILE: &str = ".evopluginignore";
/// Largest `.evopluginignore` read (64 KiB).
pub const MAX_IGNORE_FILE_BYTES: u64 = 64 * 1024;
/// What is never packed unless `.evopluginignore` brings it back.
const DEFAULT_EXCLUDES: [&str; 2] = [".env", ".env.*"];

/// Which rule left an entry out. Closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ExcludedBy {
    /// The built-in `.env` / `.env.*` rule.
    Default,
    /// A line of `.evopluginignore`.
    IgnoreFile,
    /// A symlink that resolves outside the plugin root (`pattern` holds
    /// its target).
    EscapingLink,
    /// A symlink to a folder, or to nothing (`pattern` holds its target).
    Link,
}

/// One entry left out of the archive.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExcludedEntry {
    /// `/`-separated, relative to the package root.
    pub path: String,
    /// Whether it is a folder (left out with everything in it).
    pub folder: bool,
    pub by: ExcludedBy,
    /// The pattern that matched, as written; for a link, its target.
    pub pattern: String,
}

/// The part of a walked tree that is packed, and what is left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackSelection {
    /// The packed entries (same root as the walked tree).
    pub tree: PackageTree,
    pub excluded: Vec<ExcludedEntry>,
}

/// Splits `tree` (the walk of the canonical package root) into what is
/// packed and what is left out: the default `.env` rule, then the lines of
/// the root `.evopluginignore`, gitignore-style, top-down (nothing inside a
/// left-out folder comes back).
pub fn select(tree: &PackageTree) -> Result<PackSelection, PackError> {
    let root = &tree.root;
    let mut builder = GitignoreBuilder::new(root);
    for pattern in DEFAULT_EXCLUDES {
        builder
            .add_line(None, pattern)
            .map_err(|e| PackError::IgnoreFile {
                reason: e.to_string(),
            })?;
    }
    if let Some(text) = read_ignore_file(root)? {
        let from = root.join(IGNORE_FILE);
        for (i, line) in text.lines().enumerate() {
            builder
                .add_line(Some(from.clone()), line)
                .map_err(|e| PackError::IgnoreFile {
                    reason: format!("line {}: {e}", i + 1),
                })?;
        }
    }
    let matcher = builder.build().map_err(|e| PackError::IgnoreFile {
        reason: e.to_string(),
    })?;
    let mut kept = Vec::new();
    let mut excluded: Vec<ExcludedEntry> = Vec::new();
    let mut excluded_dirs: BTreeSet<&str> = BTreeSet::new();
    // Entries are sorted by path bytes, so a folder comes before its contents.
    for entry in &tree.entries {
        let inside_excluded = ancestors(&entry.path).any(|a| excluded_dirs.contains(a));
        if inside_excluded {
            continue;
        }
        let is_dir = matches!(entry.kind, EntryKind::Dir);
        if let Match::Ignore(glob) = matcher.matched(&entry.path, is_dir) {
            if entry.path == "plugin.json" {
                return Err(PackError::ManifestExcluded {
                    pattern: glob.original().to_owned(),
                });
            }
            if is_dir {
                excluded_dirs.insert(&entry.path);
            }
            excluded.push(ExcludedEntry {
                path: entry.path.clone(),
                folder: is_dir,
                by: match glob.from() {
                    None => ExcludedBy::Default,
                    Some(_) => ExcludedBy::IgnoreFile,
                },
                pattern: glob.original().to_owned(),
            });
            continue;
        }
        kept.push(entry.clone());
    }
    Ok(PackSelection {
        tree: PackageTree {
            root: root.clone(),
            entries: kept,
        },
        excluded,
    })
}

/// What a copy of a package holds once it leaves its folder, as an archive
/// or as an installed copy: one rule for both, so `.env` never reaches an
/// installation that `pack` would have kept it out of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackageCopy {
    /// The files copied: [`select`]ed, with links inside the root to a
    /// file read as that file ([`PackageTree::materialized`]).
    pub tree: PackageTree,
    /// What [`select`] left out (`.env`, `.evopluginignore`).
    pub excluded: Vec<ExcludedEntry>,
    /// The links a copy cannot hold.
    pub left_out: Vec<LeftOutLink>,
}

/// The copy of the walked package `tree` ([`PackageCopy`]).
pub fn copy_plan(tree: &PackageTree) -> Result<PackageCopy, PackError> {
    let selection = select(tree)?;
    let (tree, left_out) = selection.tree.materialized();
    Ok(PackageCopy {
        tree,
        excluded: selection.excluded,
        left_out,
    })
}

/// The proper ancestors of a `/`-separated relative path, nearest last.
fn ancestors(path: &str) -> impl Iterator<Item = &str> {
    path.match_indices('/').map(move |(i, _)| &path[..i])
}

/// The root `.evopluginignore`, if there is one: a regular file inside the
/// root, within [`MAX_IGNORE_FILE_BYTES`], UTF-8.
fn read_ignore_file(root: &Path) -> Result<Option<String>, PackError> {
    let path = root.join(IGNORE_FILE);
    if fs::symlink_metadata(&path).is_err() {
        return Ok(None);
    }
    let invalid = |reason: &str| PackError::IgnoreFile {
        reason: reason.to_owned(),
    };
    if !stays_inside(root, IGNORE_FILE) {
        return Err(invalid("it resolves outside the plugin root"));
    }
    let meta = fs::metadata(&path).map_err(PackError::io(&path))?;
    if !meta.is_file() {
        return Err(invalid("it must be a regular file"));
    }
    if meta.len() > MAX_IGNORE_FILE_BYTES {
        return Err(invalid("it is larger than 64 KiB"));
    }
    let bytes = fs::read(&path).map_err(PackError::io(&path))?;
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| invalid("it is not UTF-8"))
}

#[derive(Debug, thiserror::Error)]
pub enum PackError {
    #[error("the package is not valid and cannot be packed")]
    Invalid { diagnostics: Vec<ScopedDiagnostic> },
    #[error("output `{0}` already exists")]
    OutputExists(PathBuf),
    #[error("output `{0}` must be outside the package")]
    OutputInsidePackage(PathBuf),
    #[error("output `{0}` must be outside `{1}`")]
    OutputForbidden(PathBuf, PathBuf),
    /// Packing failed on `path`, the file or folder the error concerns.
    #[error("cannot pack: `{}`: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// Writing the archive `path` (a temp file beside the output) failed.
    #[error("cannot write the archive `{}`: {source}", path.display())]
    Zip {
        path: PathBuf,
        #[source]
        source: zip::result::ZipError,
    },
    #[error("package changed while it was being packed")]
    Changed,
    #[error("`.evopluginignore` cannot be used: {reason}")]
    IgnoreFile { reason: String },
    #[error(
        "`.evopluginignore` leaves out `plugin.json` (pattern `{pattern}`); an archive without its manifest is no plugin"
    )]
    ManifestExcluded { pattern: String },
}

impl PackError {
    /// The stable diagnostic code.
    pub const fn code(&self) -> &'static str {
        match self {
            PackError::Invalid { .. } => "plugin/pack-invalid-package",
            PackError::OutputExists(_) => "plugin/pack-output-exists",
            PackError::OutputInsidePackage(_) => "plugin/pack-output-inside-package",
            PackError::OutputForbidden(..) => "plugin/pack-output-forbidden",
            PackError::Io { .. } | PackError::Zip { .. } => "plugin/pack-io",
            PackError::Changed => "plugin/pack-changed",
            PackError::IgnoreFile { .. } => "plugin/pack-ignore-file-invalid",
            PackError::ManifestExcluded { .. } => "plugin/pack-manifest-excluded",
        }
    }

    /// Whether the error is a verdict on the package (its validity, its
    /// `.evopluginignore`) rather than on the output or the environment.
    pub const fn is_validation(&self) -> bool {
        match self {
            PackError::Invalid { .. }
            | PackError::IgnoreFile { .. }
            | PackError::ManifestExcluded { .. } => true,
            PackError::OutputExists(_)
            | PackError::OutputInsidePackage(_)
            | PackError::OutputForbidden(..)
            | PackError::Io { .. }
            | PackError::Zip { .. }
            | PackError::Changed => false,
        }
    }

    /// Wraps an IO error with the path it concerns.
    pub fn io(path: &Path) -> impl FnOnce(io::Error) -> PackError + '_ {
        move |source| PackError::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    fn zip(path: &Path) -> impl FnOnce(zip::result::ZipError) -> PackError + '_ {
        move |source| PackError::Zip {
            path: path.to_path_buf(),
            source,
        }
    }

    pub fn to_diagnostic(&self) -> Diagnostic {
        Diagnostic::error(self.code(), self.to_string())
    }
}

/// `<parent>/<name>-<version|unversioned>.evoplugin`, the version reduced to
/// `[A-Za-z0-9._-]` so it is a safe file name.
pub fn default_pack_output(root: &Path, manifest: &PluginManifest) -> PathBuf {
    let version = match &manifest.version {
        Some(v) if !v.is_empty() => v
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                    c
                } else {
                    '-'
                }
            })
            .take(80)
            .collect(),
        _ => "unversioned".to_owned(),
    };
    let parent = root.parent().unwrap_or(root);
    parent.join(format!("{}-{version}.evoplugin", manifest.name))
}

fn absolute(path: &Path) -> io::Result<PathBuf> {
    let abs = std::path::absolute(path)?;
    Ok(normalize_lexically(&abs).unwrap_or(abs))
}

/// Where `path` lands once the links of its existing ancestors are resolved.
fn resolved(path: &Path) -> io::Result<PathBuf> {
    let abs = absolute(path)?;
    Ok(crate::tree::resolve_existing_prefix(&abs).unwrap_or(abs))
}

/// Packs the plugin folder `root`.
pub fn pack(
    root: &Path,
    options: &PackOptions,
    validator: &dyn SkillValidator,
) -> Result<PackReport, PackError> {
    let inspection = inspect(root, validator);
    pack_inspected(&inspection, options, validator)
}

/// Packs a package already inspected (it is re-inspected after writing to
/// prove the tree did not change meanwhile).
pub fn pack_inspected(
    inspection: &PluginInspection,
    options: &PackOptions,
    validator: &dyn SkillValidator,
) -> Result<PackReport, PackError> {
    let (true, Some(manifest), Some(tree), Some(digest)) = (
        inspection.valid,
        &inspection.manifest,
        &inspection.tree,
        &inspection.content_sha256,
    ) else {
        return Err(PackError::Invalid {
            diagnostics: inspection.diagnostics.clone(),
        });
    };
    let mut selection = copy_plan(tree)?;
    // An archive holds only files: a link inside the root to a file is
    // packed as that file, and every other link is left out and listed.
    let left_out = std::mem::take(&mut selection.left_out);
    selection
        .excluded
        .extend(left_out.into_iter().map(|link| ExcludedEntry {
            path: link.path,
            folder: false,
            by: match link.escapes_root {
                true => ExcludedBy::EscapingLink,
                false => ExcludedBy::Link,
            },
            pattern: link.target,
        }));
    let packed_digest = selection.tree.digest().map_err(|e| match e {
        DigestError::Io { path, source } => PackError::Io {
            path: tree.root.join(path),
            source,
        },
        DigestError::Hash(e) => PackError::Io {
            path: tree.root.clone(),
            source: io::Error::other(e.to_string()),
        },
    })?;
    let root = &inspection.root;
    let output = match &options.output {
        Some(o) => o.clone(),
        None => default_pack_output(root, manifest),
    };
    if fs::symlink_metadata(&output).is_ok() {
        return Err(PackError::OutputExists(output));
    }
    let target = resolved(&output).map_err(PackError::io(&output))?;
    if target.starts_with(root) {
        return Err(PackError::OutputInsidePackage(output));
    }
    for forbidden in &options.forbidden_roots {
        let forbidden = resolved(forbidden).map_err(PackError::io(forbidden))?;
        if target.starts_with(&forbidden) {
            return Err(PackError::OutputForbidden(output, forbidden));
        }
    }
    let parent = match target.parent() {
        Some(p) => p.to_path_buf(),
        None => return Err(PackError::OutputInsidePackage(output)),
    };
    fs::create_dir_all(&parent).map_err(PackError::io(&parent))?;

    let mut temp = tempfile::Builder::new()
        .prefix(".evoplugin-")
        .tempfile_in(&parent)
        .map_err(PackError::io(&parent))?;
    let temp_path = temp.path().to_path_buf();
    let mut entries = 0;
    {
        let mut zip = ZipWriter::new(BufWriter::new(temp.as_file_mut()));
        let base = SimpleFileOptions::default()
            .compression_method(CompressionMethod::Deflated)
            .compression_level(Some(9))
            .last_modified_time(DateTime::default())
            .system(System::Unix);
        for (path, executable) in selection.tree.files() {
            let mode = if executable { 0o755 } else { 0o644 };
            zip.start_file(path, base.unix_permissions(mode))
                .map_err(PackError::zip(&temp_path))?;
            let source = root.join(path);
            let mut file = fs::File::open(&source).map_err(PackError::io(&source))?;
            io::copy(&mut file, &mut zip).map_err(PackError::io(&source))?;
            entries += 1;
        }
        let mut writer = zip.finish().map_err(PackError::zip(&temp_path))?;
        writer.flush().map_err(PackError::io(&temp_path))?;
    }
    temp.as_file()
        .sync_all()
        .map_err(PackError::io(&temp_path))?;
    set_shareable_mode(&temp_path).map_err(PackError::io(&temp_path))?;
    let after = inspect(root, validator);
    if after.content_sha256.as_ref() != Some(digest) {
        return Err(PackError::Changed);
    }
    temp.persist_noclobber(&target)
        .map_err(|e| match e.error.kind() {
            io::ErrorKind::AlreadyExists => PackError::OutputExists(output.clone()),
            _ => PackError::io(&target)(e.error),
        })?;
    Ok(PackReport {
        output: target,
        entries,
        content_sha256: packed_digest,
        excluded: selection.excluded,
    })
}

/// Temp files are created 0600; an archive is meant to be shared.
#[cfg(unix)]
fn set_shareable_mode(path: &Path) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(0o644))
}

#[cfg(not(unix))]
fn set_shareable_mode(_path: &Path) -> io::Result<()> {
    Ok(())
}
