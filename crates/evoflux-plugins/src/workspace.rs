//! The Plugin Center's package editor: browse, read, write, create and
//! delete the files of one plugin folder, confined to it.
//!
//! A root is a folder with a regular `plugin.json`. Every path is a POSIX
//! path relative to the root, checked with the archive entry grammar (no
//! absolute paths, no `..`, no empty or `.` segments), and walked one
//! component at a time without following a symlink, so an edit can never
//! reach outside the package; symlinks themselves are listed but never
//! read or written. Saves are atomic and keep an existing file's exec bit.
//! The root `plugin.json` cannot be deleted, and only empty folders can.

use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use evoflux_core::atomic::{AtomicOptions, write_atomic};
use serde::{Deserialize, Serialize};

use crate::archive::check_entry_name;
use crate::paths::PluginPaths;

/// The manifest file at a package root.
const MANIFEST: &str = "plugin.json";
/// Folders the tree never lists (tool caches and version control).
const SKIPPED: [&str; 4] = [".git", "__pycache__", ".mypy_cache", ".pytest_cache"];
/// Most entries the tree lists.
pub const MAX_TREE_ENTRIES: usize = 2_000;
/// Largest file the editor reads or writes (1 MiB, UTF-8 text).
pub const MAX_EDIT_BYTES: u64 = 1024 * 1024;

/// A tree entry's kind. Closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EntryKind {
    File,
    Directory,
    /// Listed so the editor can show it; never read or written.
    Symlink,
}

/// One entry of the tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TreeEntry {
    pub path: String,
    pub name: String,
    pub kind: EntryKind,
    pub size: u64,
}

/// The tree of a package, bounded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Tree {
    pub root: PathBuf,
    pub entries: Vec<TreeEntry>,
    /// Whether the listing stopped at [`MAX_TREE_ENTRIES`].
    pub truncated: bool,
}

/// Why an editor operation was refused.
#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    #[error("`{}` is not a plugin folder: it has no regular plugin.json", .0.display())]
    NotAPackage(PathBuf),
    #[error("`{}` is inside the bundled plugins' tree, which evoflux manages; create or link a plugin of your own", .0.display())]
    BundledTree(PathBuf),
    #[error("path `{path}` is not allowed: {why}")]
    PathInvalid { path: String, why: &'static str },
    #[error("`{path}` passes through a symlink; only files inside the package can be edited")]
    Symlink { path: String },
    #[error("`{path}` does not exist")]
    NotFound { path: String },
    #[error("`{path}` already exists")]
    Exists { path: String },
    #[error("`{path}` is a folder")]
    IsFolder { path: String },
    #[error("`{path}` is not a folder")]
    NotAFolder { path: String },
    #[error("the folder `{path}` is not empty; delete its files first")]
    FolderNotEmpty { path: String },
    #[error("the root plugin.json cannot be deleted")]
    Manifest,
    #[error("`{path}` is larger than the editor's limit of {MAX_EDIT_BYTES} bytes")]
    TooLarge { path: String },
    #[error("`{path}` is not UTF-8 text")]
    NotText { path: String },
    #[error("cannot {action} `{}`: {source}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        source: io::Error,
    },
}

impl WorkspaceError {
    pub fn code(&self) -> &'static str {
        match self {
            WorkspaceError::NotAPackage(_) => "plugin/workspace-not-a-package",
            WorkspaceError::BundledTree(_) => "plugin/inside-bundled-tree",
            WorkspaceError::PathInvalid { .. } => "plugin/workspace-path-invalid",
            WorkspaceError::Symlink { .. } => "plugin/workspace-symlink",
            WorkspaceError::NotFound { .. } => "plugin/workspace-not-found",
            WorkspaceError::Exists { .. } => "plugin/workspace-exists",
            WorkspaceError::IsFolder { .. } => "plugin/workspace-is-folder",
            WorkspaceError::NotAFolder { .. } => "plugin/workspace-not-a-folder",
            WorkspaceError::FolderNotEmpty { .. } => "plugin/workspace-folder-not-empty",
            WorkspaceError::Manifest => "plugin/workspace-manifest-required",
            WorkspaceError::TooLarge { .. } => "plugin/workspace-file-too-large",
            WorkspaceError::NotText { .. } => "plugin/workspace-not-text",
            WorkspaceError::Io { .. } => "plugin/io",
        }
    }
}

fn io_err<'a>(
    action: &'static str,
    path: &'a Path,
) -> impl FnOnce(io::Error) -> WorkspaceError + 'a {
    move |source| WorkspaceError::Io {
        action,
        path: path.to_path_buf(),
        source,
    }
}

/// One plugin folder opened for editing.
#[derive(Debug, Clone)]
pub struct PackageWorkspace {
    root: PathBuf,
}

/// What a checked path resolves to.
struct Resolved {
    path: PathBuf,
    meta: Option<fs::Metadata>,
    segments: usize,
}

impl PackageWorkspace {
    /// Opens the plugin folder `root` (a folder with a regular
    /// `plugin.json`, outside the bundled tree of `paths`).
    pub fn open(root: &Path, paths: &PluginPaths) -> Result<PackageWorkspace, WorkspaceError> {
        let root = root
            .canonicalize()
            .map_err(|_| WorkspaceError::NotAPackage(root.to_path_buf()))?;
        if paths.is_in_bundled_tree(&root) {
            return Err(WorkspaceError::BundledTree(root));
        }
        match fs::symlink_metadata(root.join(MANIFEST)) {
            Ok(m) if m.is_file() => Ok(PackageWorkspace { root }),
            _ => Err(WorkspaceError::NotAPackage(root)),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Checks `rel` and walks it from the root without following links.
    fn resolve(&self, rel: &str) -> Result<Resolved, WorkspaceError> {
        let invalid = |why| WorkspaceError::PathInvalid {
            path: rel.to_owned(),
            why,
        };
        if rel.is_empty() {
            return Err(invalid("empty path"));
        }
        let (segments, _) = check_entry_name(rel.trim_end_matches('/')).map_err(|_| {
            invalid("use a relative POSIX path without `..`, `.` or empty segments")
        })?;
        let mut path = self.root.clone();
        let mut meta = None;
        for (i, segment) in segments.iter().enumerate() {
            path.push(segment);
            match fs::symlink_metadata(&path) {
                Ok(m) if m.file_type().is_symlink() => {
                    return Err(WorkspaceError::Symlink {
                        path: rel.to_owned(),
                    });
                }
                Ok(m) if i + 1 < segments.len() && !m.is_dir() => {
                    return Err(WorkspaceError::NotAFolder {
                        path: segments[..=i].join("/"),
                    });
                }
                Ok(m) => meta = Some(m),
                Err(_) if i + 1 < segments.len() => {
                    return Err(WorkspaceError::NotFound {
                        path: segments[..=i].join("/"),
                    });
                }
                Err(_) => meta = None,
            }
        }
        Ok(Resolved {
            path,
            meta,
            segments: segments.len(),
        })
    }

    /// Every entry under the root, folders before their contents, by path.
    pub fn tree(&self) -> Result<Tree, WorkspaceError> {
        let mut out = Tree {
            root: self.root.clone(),
            entries: Vec::new(),
            truncated: false,
        };
        self.walk(&self.root, "", &mut out)?;
        Ok(out)
    }

    fn walk(&self, dir: &Path, prefix: &str, out: &mut Tree) -> Result<(), WorkspaceError> {
        let mut entries: Vec<_> = fs::read_dir(dir)
            .map_err(io_err("list", dir))?
            .filter_map(Result::ok)
            .collect();
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
                continue;
            };
            if SKIPPED.contains(&name.as_str()) {
                continue;
            }
            if out.entries.len() >= MAX_TREE_ENTRIES {
                out.truncated = true;
                return Ok(());
            }
            let path = if prefix.is_empty() {
                name.clone()
            } else {
                format!("{prefix}/{name}")
            };
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let (kind, size) = if kind.is_symlink() {
                (EntryKind::Symlink, 0)
            } else if kind.is_dir() {
                (EntryKind::Directory, 0)
            } else {
                (EntryKind::File, entry.metadata().map_or(0, |m| m.len()))
            };
            out.entries.push(TreeEntry {
                path: path.clone(),
                name,
                kind,
                size,
            });
            if kind == EntryKind::Directory {
                self.walk(&entry.path(), &path, out)?;
            }
        }
        Ok(())
    }

    /// The text of the file `rel`.
    pub fn read(&self, rel: &str) -> Result<String, WorkspaceError> {
        let r = self.resolve(rel)?;
        match &r.meta {
            None => {
                return Err(WorkspaceError::NotFound {
                    path: rel.to_owned(),
                });
            }
            Some(m) if m.is_dir() => {
                return Err(WorkspaceError::IsFolder {
                    path: rel.to_owned(),
                });
            }
            Some(m) if m.len() > MAX_EDIT_BYTES => {
                return Err(WorkspaceError::TooLarge {
                    path: rel.to_owned(),
                });
            }
            Some(_) => {}
        }
        let mut bytes = Vec::new();
        fs::File::open(&r.path)
            .and_then(|f| f.take(MAX_EDIT_BYTES + 1).read_to_end(&mut bytes))
            .map_err(io_err("read", &r.path))?;
        if bytes.len() as u64 > MAX_EDIT_BYTES {
            return Err(WorkspaceError::TooLarge {
                path: rel.to_owned(),
            });
        }
        String::from_utf8(bytes).map_err(|_| WorkspaceError::NotText {
            path: rel.to_owned(),
        })
    }

    /// Saves `content` as the file `rel` (new or existing; its folder must
    /// exist), atomically, keeping an existing file's mode.
    pub fn write(&self, rel: &str, content: &str) -> Result<(), WorkspaceError> {
        if content.len() as u64 > MAX_EDIT_BYTES {
            return Err(WorkspaceError::TooLarge {
                path: rel.to_owned(),
            });
        }
        let r = self.resolve(rel)?;
        if r.meta.as_ref().is_some_and(fs::Metadata::is_dir) {
            return Err(WorkspaceError::IsFolder {
                path: rel.to_owned(),
            });
        }
        // The atomic write keeps the mode of the file it replaces.
        write_atomic(&r.path, content.as_bytes(), AtomicOptions::default()).map_err(|e| {
            WorkspaceError::Io {
                action: "write",
                path: r.path.clone(),
                source: io::Error::other(e.to_string()),
            }
        })
    }

    /// Creates an empty file or folder at `rel` (its folder must exist).
    pub fn create(&self, rel: &str, kind: EntryKind) -> Result<(), WorkspaceError> {
        let r = self.resolve(rel)?;
        if r.meta.is_some() {
            return Err(WorkspaceError::Exists {
                path: rel.to_owned(),
            });
        }
        match kind {
            EntryKind::Directory => fs::create_dir(&r.path).map_err(io_err("create", &r.path)),
            EntryKind::File => fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&r.path)
                .map(drop)
                .map_err(io_err("create", &r.path)),
            EntryKind::Symlink => Err(WorkspaceError::PathInvalid {
                path: rel.to_owned(),
                why: "the editor creates files and folders, not symlinks",
            }),
        }
    }

    /// Deletes the file or empty folder `rel`; never the root manifest.
    pub fn delete(&self, rel: &str) -> Result<(), WorkspaceError> {
        let r = self.resolve(rel)?;
        if r.segments == 1 && rel.trim_end_matches('/') == MANIFEST {
            return Err(WorkspaceError::Manifest);
        }
        match &r.meta {
            None => Err(WorkspaceError::NotFound {
                path: rel.to_owned(),
            }),
            Some(m) if m.is_dir() => {
                let empty = fs::read_dir(&r.path)
                    .map_err(io_err("list", &r.path))?
                    .next()
                    .is_none();
                if !empty {
                    return Err(WorkspaceError::FolderNotEmpty {
                        path: rel.to_owned(),
                    });
                }
                fs::remove_dir(&r.path).map_err(io_err("delete", &r.path))
            }
            Some(_) => fs::remove_file(&r.path).map_err(io_err("delete", &r.path)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn package() -> (tempfile::TempDir, PluginPaths, PackageWorkspace) {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("pkg");
        fs::create_dir_all(root.join("skills/a")).unwrap();
        fs::write(root.join("plugin.json"), "{}").unwrap();
        fs::write(root.join("skills/a/SKILL.md"), "x").unwrap();
        fs::create_dir(root.join(".git")).unwrap();
        let paths = PluginPaths::new(t.path().join("data"), t.path().join("cache"));
        let ws = PackageWorkspace::open(&root, &paths).unwrap();
        (t, paths, ws)
    }

    #[test]
    fn tree_lists_the_package_without_caches() {
        let (_t, _p, ws) = package();
        let tree = ws.tree().unwrap();
        let paths: Vec<_> = tree.entries.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(
            paths,
            ["plugin.json", "skills", "skills/a", "skills/a/SKILL.md"]
        );
        assert_eq!(tree.entries[1].kind, EntryKind::Directory);
    }

    #[test]
    fn edits_stay_inside_the_package_and_never_follow_links() {
        let (t, _p, ws) = package();
        let outside = t.path().join("outside");
        fs::create_dir(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, ws.root().join("link")).unwrap();
        for rel in ["../x", "/etc/passwd", "a//b", "./a", ""] {
            assert_eq!(
                ws.write(rel, "x").unwrap_err().code(),
                "plugin/workspace-path-invalid",
                "{rel}"
            );
        }
        assert_eq!(
            ws.write("link/x", "x").unwrap_err().code(),
            "plugin/workspace-symlink"
        );
        assert_eq!(
            ws.read("link").unwrap_err().code(),
            "plugin/workspace-symlink"
        );
        assert_eq!(fs::read_dir(&outside).unwrap().count(), 0);
        let tree = ws.tree().unwrap();
        assert!(
            tree.entries
                .iter()
                .any(|e| e.path == "link" && e.kind == EntryKind::Symlink)
        );
    }

    #[test]
    fn write_keeps_the_exec_bit_and_create_delete_follow_the_rules() {
        let (_t, _p, ws) = package();
        let script = ws.root().join("run.sh");
        fs::write(&script, "old").unwrap();
        fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();
        ws.write("run.sh", "#!/bin/sh\n").unwrap();
        assert_eq!(fs::read_to_string(&script).unwrap(), "#!/bin/sh\n");
        assert_eq!(
            fs::metadata(&script).unwrap().permissions().mode() & 0o777,
            0o755
        );
        assert_eq!(ws.read("run.sh").unwrap(), "#!/bin/sh\n");

        ws.create("docs", EntryKind::Directory).unwrap();
        ws.create("docs/a.md", EntryKind::File).unwrap();
        assert_eq!(
            ws.create("docs/a.md", EntryKind::File).unwrap_err().code(),
            "plugin/workspace-exists"
        );
        assert_eq!(
            ws.write("nope/a.md", "x").unwrap_err().code(),
            "plugin/workspace-not-found"
        );
        assert_eq!(
            ws.delete("docs").unwrap_err().code(),
            "plugin/workspace-folder-not-empty"
        );
        ws.delete("docs/a.md").unwrap();
        ws.delete("docs").unwrap();
        assert_eq!(
            ws.delete("plugin.json").unwrap_err().code(),
            "plugin/workspace-manifest-required"
        );
        assert_eq!(
            ws.write("big", &"a".repeat(MAX_EDIT_BYTES as usize + 1))
                .unwrap_err()
                .code(),
            "plugin/workspace-file-too-large"
        );
        fs::write(ws.root().join("bin"), [0xff, 0xfe]).unwrap();
        assert_eq!(
            ws.read("bin").unwrap_err().code(),
            "plugin/workspace-not-text"
        );
    }

    #[test]
    fn a_folder_without_a_manifest_is_not_a_package() {
        let t = tempfile::tempdir().unwrap();
        let paths = PluginPaths::new(t.path().join("data"), t.path().join("cache"));
        let e = PackageWorkspace::open(t.path(), &paths).unwrap_err();
        assert_eq!(e.code(), "plugin/workspace-not-a-package");
    }
}
