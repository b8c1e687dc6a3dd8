//! The package tree: a bounded walk, containment of links, and the content
//! digest.
//!
//! The digest is computed over the sorted tree so that the same files give
//! the same digest wherever they live: each file contributes its relative
//! path, its executable bit and the SHA-256 of its bytes; each symlink its
//! relative path and target. Folders contribute nothing on their own (an
//! empty folder is not content), and caches that [`pack()`](crate::pack())
//! skips are skipped here too, so a packed and re-extracted package has the
//! digest of its source.

use std::fs;
use std::io::{self, Read};
use std::path::{Component, Path, PathBuf};

use evoflux_core::Diagnostic;
use evoflux_core::hash::{ContentHash, content_hash};
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::codes;
use crate::scope::{Scope, ScopedDiagnostic};

/// Size and count limits of an unpacked package.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PackageLimits {
    pub max_entries: usize,
    pub max_total_bytes: u64,
    pub max_manifest_bytes: u64,
    pub max_skill_bytes: u64,
    pub max_mcp_bytes: u64,
}

impl PackageLimits {
    /// EvoFlux's limits: 2,000 entries, 200 MiB, `plugin.json` 512 KiB, each
    /// `SKILL.md` 512 KiB, `mcp.json` 2 MiB.
    pub const DEFAULT: PackageLimits = PackageLimits {
        max_entries: 2_000,
        max_total_bytes: 200 * 1024 * 1024,
        max_manifest_bytes: 512 * 1024,
        max_skill_bytes: 512 * 1024,
        max_mcp_bytes: 2 * 1024 * 1024,
    };
}

impl Default for PackageLimits {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// Folder names that are caches, never package content.
const SKIPPED_DIRS: [&str; 5] = [
    ".git",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    "__pycache__",
];

/// Whether a tree entry named `name` (a folder when `is_dir`) is a cache or
/// editor artefact that the digest, pack and listing skip.
pub fn is_skipped(name: &str, is_dir: bool) -> bool {
    if is_dir {
        SKIPPED_DIRS.contains(&name)
    } else {
        name == ".DS_Store" || name.ends_with(".pyc") || name.ends_with(".pyo")
    }
}

/// What one entry of the tree is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum EntryKind {
    File { executable: bool, size: u64 },
    Dir,
    Link { target: String },
}

/// One entry, by its `/`-separated path relative to the root.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TreeEntry {
    pub path: String,
    #[serde(flatten)]
    pub kind: EntryKind,
}

/// The walked tree, entries sorted by path bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackageTree {
    /// The canonical root.
    pub root: PathBuf,
    pub entries: Vec<TreeEntry>,
}

impl PackageTree {
    pub fn has_symlinks(&self) -> bool {
        self.entries
            .iter()
            .any(|e| matches!(e.kind, EntryKind::Link { .. }))
    }

    pub fn files(&self) -> impl Iterator<Item = (&str, bool)> {
        self.entries.iter().filter_map(|e| match e.kind {
            EntryKind::File { executable, .. } => Some((e.path.as_str(), executable)),
            EntryKind::Dir | EntryKind::Link { .. } => None,
        })
    }

    /// The content digest (see the module docs).
    pub fn digest(&self) -> Result<ContentHash, DigestError> {
        #[derive(Serialize)]
        #[serde(tag = "type", rename_all = "lowercase")]
        enum Item<'a> {
            File {
                path: &'a str,
                executable: bool,
                sha256: String,
            },
            Link {
                path: &'a str,
                target: &'a str,
            },
        }
        let mut items = Vec::with_capacity(self.entries.len());
        for entry in &self.entries {
            match &entry.kind {
                EntryKind::File { executable, .. } => items.push(Item::File {
                    path: &entry.path,
                    executable: *executable,
                    sha256: file_sha256(&self.root.join(&entry.path)).map_err(|source| {
                        DigestError::Io {
                            path: entry.path.clone(),
                            source,
                        }
                    })?,
                }),
                EntryKind::Link { target } => items.push(Item::Link {
                    path: &entry.path,
                    target,
                }),
                EntryKind::Dir => {}
            }
        }
        content_hash(&serde_json::json!({
            "format": "evoflux-plugin-tree/1",
            "entries": items,
        }))
        .map_err(DigestError::Hash)
    }
}

/// A link a copy of the package (an installed copy, an archive) leaves
/// out: copies hold only files, so a link inside the root to a regular
/// file is copied as that file, and every other link is left out, and
/// said so. Only the components that reached through it fail.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LeftOutLink {
    /// `/`-separated, relative to the package root.
    pub path: String,
    pub target: String,
    /// Whether it resolves outside the plugin root (else it names a
    /// folder, or nothing).
    pub escapes_root: bool,
}

impl LeftOutLink {
    /// The warning that reports it, scoped to the package; its locator is
    /// the link's path in the package.
    pub fn diagnostic(&self) -> ScopedDiagnostic {
        let why = match self.escapes_root {
            true => "it resolves outside the plugin root",
            false => "it does not name a file inside the plugin root",
        };
        ScopedDiagnostic::new(
            Scope::Package,
            Diagnostic::warning(
                codes::LINK_LEFT_OUT,
                format!(
                    "symlink `{}` -> `{}` was left out of the copy: {why}; what reads through it is unavailable",
                    self.path, self.target
                ),
            )
            .with_field(self.path.clone()),
        )
    }
}

impl PackageTree {
    /// The tree as a copy holds it (see [`LeftOutLink`]): each link that
    /// stays inside the root and names a regular file becomes a file entry
    /// (whose bytes, read through the link, are the target's), and the
    /// other links are returned as left out.
    pub fn materialized(&self) -> (PackageTree, Vec<LeftOutLink>) {
        let mut entries = Vec::with_capacity(self.entries.len());
        let mut left_out = Vec::new();
        for entry in &self.entries {
            let EntryKind::Link { target } = &entry.kind else {
                entries.push(entry.clone());
                continue;
            };
            let inside = stays_inside(&self.root, &entry.path);
            match fs::metadata(self.root.join(&entry.path)) {
                Ok(meta) if inside && meta.is_file() => entries.push(TreeEntry {
                    path: entry.path.clone(),
                    kind: EntryKind::File {
                        executable: is_executable(&meta),
                        size: meta.len(),
                    },
                }),
                _ => left_out.push(LeftOutLink {
                    path: entry.path.clone(),
                    target: target.clone(),
                    escapes_root: !inside,
                }),
            }
        }
        let tree = PackageTree {
            root: self.root.clone(),
            entries,
        };
        (tree, left_out)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum DigestError {
    #[error("cannot read `{path}` while hashing the package: {source}")]
    Io { path: String, source: io::Error },
    #[error(transparent)]
    Hash(evoflux_core::hash::HashError),
}

fn file_sha256(path: &Path) -> io::Result<String> {
    let mut file = fs::File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hex::encode(hasher.finalize()))
}

pub(crate) use evoflux_core::archive::set_file_mode;

#[cfg(unix)]
fn is_executable(meta: &fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn is_executable(_meta: &fs::Metadata) -> bool {
    false
}

/// The result of [`walk`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalkOutcome {
    pub tree: PackageTree,
    pub diagnostics: Vec<ScopedDiagnostic>,
    /// False when the walk stopped early (a limit was exceeded or a folder
    /// could not be read): the tree is partial and has no digest.
    pub complete: bool,
}

/// Walks `root` (already canonical) without following links, within
/// `limits`. Every problem is a `package` diagnostic; the walk stops early
/// only when a limit is exceeded or a folder cannot be read.
pub fn walk(root: &Path, limits: &PackageLimits) -> WalkOutcome {
    let mut complete = true;
    let mut diagnostics = Vec::new();
    let mut entries = Vec::new();
    let mut total: u64 = 0;
    let mut stack: Vec<(PathBuf, String)> = vec![(root.to_path_buf(), String::new())];
    let push = |diagnostics: &mut Vec<ScopedDiagnostic>, d: Diagnostic| {
        diagnostics.push(ScopedDiagnostic::new(Scope::Package, d));
    };
    'walk: while let Some((dir, prefix)) = stack.pop() {
        let read = match fs::read_dir(&dir) {
            Ok(read) => read,
            Err(e) => {
                push(
                    &mut diagnostics,
                    Diagnostic::error(
                        codes::PACKAGE_UNREADABLE,
                        format!("cannot read folder: {e}"),
                    )
                    .with_file(&dir),
                );
                complete = false;
                break;
            }
        };
        for item in read {
            let item = match item {
                Ok(item) => item,
                Err(e) => {
                    push(
                        &mut diagnostics,
                        Diagnostic::error(
                            codes::PACKAGE_UNREADABLE,
                            format!("cannot read folder: {e}"),
                        )
                        .with_file(&dir),
                    );
                    complete = false;
                    break 'walk;
                }
            };
            let path = item.path();
            let Some(name) = item.file_name().to_str().map(str::to_owned) else {
                push(
                    &mut diagnostics,
                    Diagnostic::error(
                        codes::PATH_NOT_UTF8,
                        "package paths must be valid UTF-8 so they mean the same on every platform",
                    )
                    .with_file(&path),
                );
                continue;
            };
            let rel = if prefix.is_empty() {
                name.clone()
            } else {
                format!("{prefix}/{name}")
            };
            let meta = match fs::symlink_metadata(&path) {
                Ok(meta) => meta,
                Err(e) => {
                    push(
                        &mut diagnostics,
                        Diagnostic::error(codes::PACKAGE_UNREADABLE, format!("cannot stat: {e}"))
                            .with_file(&path),
                    );
                    continue;
                }
            };
            let ft = meta.file_type();
            if is_skipped(&name, ft.is_dir()) {
                continue;
            }
            let kind = if ft.is_symlink() {
                let target = match fs::read_link(&path) {
                    Ok(t) => t,
                    Err(e) => {
                        push(
                            &mut diagnostics,
                            Diagnostic::error(
                                codes::PACKAGE_UNREADABLE,
                                format!("cannot read link: {e}"),
                            )
                            .with_file(&path),
                        );
                        continue;
                    }
                };
                // A warning, not a rejection: the spec fails only the
                // component that reads through an escaping path (a skill,
                // a server's command or cwd) and denies other access, so a
                // stray link must not reject the package. Developer links
                // refuse packages that carry this code.
                if !link_stays_inside(root, &path, &target) {
                    push(
                        &mut diagnostics,
                        Diagnostic::warning(
                            codes::ESCAPING_SYMLINK,
                            format!(
                                "symlink `{rel}` -> `{}` resolves outside the plugin root",
                                target.display()
                            ),
                        )
                        .with_file(&path),
                    );
                }
                EntryKind::Link {
                    target: target.to_string_lossy().into_owned(),
                }
            } else if ft.is_dir() {
                stack.push((path.clone(), rel.clone()));
                EntryKind::Dir
            } else if ft.is_file() {
                total = total.saturating_add(meta.len());
                EntryKind::File {
                    executable: is_executable(&meta),
                    size: meta.len(),
                }
            } else {
                push(
                    &mut diagnostics,
                    Diagnostic::error(
                        codes::UNSUPPORTED_ENTRY,
                        format!("`{rel}` is not a regular file, folder or symlink"),
                    )
                    .with_file(&path),
                );
                continue;
            };
            entries.push(TreeEntry { path: rel, kind });
            if entries.len() > limits.max_entries {
                push(
                    &mut diagnostics,
                    Diagnostic::error(
                        codes::TOO_MANY_ENTRIES,
                        format!("the package has more than {} entries", limits.max_entries),
                    )
                    .with_file(root),
                );
                complete = false;
                break 'walk;
            }
            if total > limits.max_total_bytes {
                push(
                    &mut diagnostics,
                    Diagnostic::error(
                        codes::PACKAGE_TOO_LARGE,
                        format!(
                            "the package holds more than {} bytes",
                            limits.max_total_bytes
                        ),
                    )
                    .with_file(root),
                );
                complete = false;
                break 'walk;
            }
        }
    }
    entries.sort_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));
    WalkOutcome {
        tree: PackageTree {
            root: root.to_path_buf(),
            entries,
        },
        diagnostics,
        complete,
    }
}

/// Normalizes `path` lexically: `.` dropped, `..` pops. `None` when a `..`
/// would climb above the start of a relative path.
pub fn normalize_lexically(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    let mut depth = 0usize;
    for c in path.components() {
        match c {
            Component::Prefix(_) | Component::RootDir => {
                out.push(c.as_os_str());
                depth = 0;
            }
            Component::CurDir => {}
            Component::ParentDir => {
                if depth == 0 {
                    if out.has_root() {
                        continue;
                    }
                    return None;
                }
                out.pop();
                depth -= 1;
            }
            Component::Normal(s) => {
                out.push(s);
                depth += 1;
            }
        }
    }
    Some(out)
}

/// Resolves `path` as far as it exists: the longest existing ancestor is
/// canonicalized (following every link) and the rest is appended lexically.
pub fn resolve_existing_prefix(path: &Path) -> Option<PathBuf> {
    let path = normalize_lexically(path)?;
    let mut existing = path.as_path();
    let mut rest = Vec::new();
    loop {
        match existing.canonicalize() {
            Ok(canon) => {
                let mut out = canon;
                for part in rest.iter().rev() {
                    out.push(part);
                }
                return normalize_lexically(&out);
            }
            Err(_) => {
                rest.push(existing.file_name()?.to_owned());
                existing = existing.parent()?;
            }
        }
    }
}

/// Whether `relative` (a `/`-separated path inside the package) resolves,
/// after links that exist, inside the canonical `root`.
pub fn stays_inside(root: &Path, relative: &str) -> bool {
    let Some(rel) = normalize_lexically(Path::new(relative)) else {
        return false;
    };
    if rel.has_root() {
        return false;
    }
    match resolve_existing_prefix(&root.join(rel)) {
        Some(resolved) => resolved.starts_with(root),
        None => false,
    }
}

fn link_stays_inside(root: &Path, link: &Path, target: &Path) -> bool {
    let Some(parent) = link.parent() else {
        return false;
    };
    match resolve_existing_prefix(&parent.join(target)) {
        Some(resolved) => resolved.starts_with(root),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexical_normalization() {
        assert_eq!(
            normalize_lexically(Path::new("a/./b/../c")),
            Some(PathBuf::from("a/c"))
        );
        assert_eq!(normalize_lexically(Path::new("a/../..")), None);
        assert_eq!(normalize_lexically(Path::new("..")), None);
        assert_eq!(
            normalize_lexically(Path::new("/x/../../y")),
            Some(PathBuf::from("/y"))
        );
    }

    #[test]
    fn containment_follows_existing_links() {
        let outside = tempfile::tempdir().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        fs::create_dir(root.join("inner")).unwrap();
        assert!(stays_inside(&root, "inner/not-yet"));
        assert!(stays_inside(&root, "missing/x"));
        assert!(!stays_inside(&root, "../x"));
        assert!(!stays_inside(&root, "/etc"));
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(outside.path(), root.join("out")).unwrap();
            assert!(!stays_inside(&root, "out/x"));
            std::os::unix::fs::symlink("inner", root.join("in")).unwrap();
            assert!(stays_inside(&root, "in/x"));
        }
    }

    #[test]
    fn skipped_names() {
        assert!(is_skipped(".git", true));
        assert!(is_skipped("__pycache__", true));
        assert!(!is_skipped(".git", false));
        assert!(is_skipped("x.pyc", false));
        assert!(is_skipped(".DS_Store", false));
        assert!(!is_skipped("skills", true));
    }
}
