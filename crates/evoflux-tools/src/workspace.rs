//! The directories a session's file tools may touch. Every path argument
//! goes through [`Workspace::resolve`], which refuses anything that lands
//! outside every root, both lexically (`..`) and after following the
//! symlinks of the parts that exist (a link pointing out of the tree).

use std::path::{Component, Path, PathBuf};

use crate::beneath::Folder;
pub use crate::controls::Control;
use crate::error::ToolError;
use crate::sandbox::DeniedFiles;

/// One or more root directories; the first one anchors relative paths.
#[derive(Debug, Clone)]
pub struct Workspace {
    /// Canonical (symlink-free, absolute) roots, in the order given.
    roots: Vec<PathBuf>,
    /// Files no tool may read or change (the sandbox's denied patterns).
    denied: DeniedFiles,
    /// Whether `write` and `edit` may change the agent's own controls: only
    /// after the user allowed it.
    controls_writable: bool,
    /// The session's artifacts folder, which `read` reaches through
    /// `artifact:` locators (read-only; no other tool sees it).
    artifacts: Option<PathBuf>,
}

/// A path argument that passed the workspace check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The real path: symlinks of existing parents followed.
    pub path: PathBuf,
    /// How to show it to the model: relative to its root, or absolute
    /// when several roots could make a relative path ambiguous.
    pub display: String,
}

impl Workspace {
    /// Builds a workspace from existing directories. At least one root is
    /// required; roots are canonicalized once so later checks compare real
    /// paths.
    pub fn new<I, P>(roots: I) -> Result<Workspace, ToolError>
    where
        I: IntoIterator<Item = P>,
        P: AsRef<Path>,
    {
        let mut canonical = Vec::new();
        for root in roots {
            let root = root.as_ref();
            let real = root
                .canonicalize()
                .map_err(|source| ToolError::InvalidRoot {
                    path: root.to_path_buf(),
                    source,
                })?;
            if !real.is_dir() {
                return Err(ToolError::InvalidRoot {
                    path: root.to_path_buf(),
                    source: std::io::Error::new(
                        std::io::ErrorKind::NotADirectory,
                        "not a directory",
                    ),
                });
            }
            canonical.push(real);
        }
        if canonical.is_empty() {
            return Err(ToolError::InvalidRoot {
                path: PathBuf::new(),
                source: std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    "no workspace root given",
                ),
            });
        }
        Ok(Workspace {
            roots: canonical,
            denied: DeniedFiles::default(),
            controls_writable: false,
            artifacts: None,
        })
    }

    /// The same workspace with the agent's controls writable, for a change
    /// the user allowed.
    pub fn allowing_controls(mut self) -> Workspace {
        self.controls_writable = true;
        self
    }

    /// The same workspace, with `dir` as the session's artifacts folder.
    pub fn with_artifacts(mut self, dir: impl Into<PathBuf>) -> Workspace {
        self.artifacts = Some(dir.into());
        self
    }

    /// The artifact a locator names, held open in its folder, with the
    /// name to show.
    pub(crate) fn artifact(
        &self,
        argument: &str,
    ) -> Option<Result<(Folder, std::ffi::OsString), ToolError>> {
        let name = crate::locator::artifact_name(argument)?;
        let not_found = || ToolError::NotFound {
            path: argument.to_owned(),
        };
        let Some(dir) = &self.artifacts else {
            return Some(Err(not_found()));
        };
        Some(
            Folder::open(dir, Path::new(""), false)
                .map(|folder| (folder, name.into()))
                .map_err(|_| not_found()),
        )
    }

    /// Whether `argument` is an `artifact:` locator (read from the
    /// session's artifacts, never from a workspace file).
    pub fn names_artifact(&self, argument: &str) -> bool {
        crate::locator::artifact_name(argument).is_some()
    }

    /// The same workspace, refusing the files `denied` matches.
    pub fn with_denied(mut self, denied: DeniedFiles) -> Workspace {
        self.denied = denied;
        self
    }

    /// Whether `real` (already resolved) is a denied file.
    pub fn is_denied(&self, real: &Path) -> bool {
        self.root_of(real)
            .and_then(|root| real.strip_prefix(root).ok())
            .is_some_and(|rel| self.denied.is_denied(rel))
    }

    /// The canonical roots, the first being the primary one.
    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    /// Resolves a path argument: relative to the first root, or absolute.
    /// Refused when it leaves every root.
    pub fn resolve(&self, argument: &str) -> Result<Resolved, ToolError> {
        let given = Path::new(argument);
        let joined = if given.is_absolute() {
            given.to_path_buf()
        } else {
            self.roots[0].join(given)
        };
        let lexical = normalize(&joined);
        let real = real_path(&lexical);
        let real_root = real.as_deref().and_then(|r| self.root_of(r));
        // An absolute argument may name a root through a symlinked prefix
        // (e.g. `/tmp` → `/private/tmp`), so only the real path decides for
        // absolute arguments; relative ones must also stay inside lexically.
        let lexically_inside = given.is_absolute() || self.root_of(&lexical).is_some();
        match (lexically_inside, real_root, real) {
            (true, Some(_), Some(real)) if self.is_denied(&real) => Err(ToolError::DeniedFile {
                path: argument.to_owned(),
                patterns: self.denied.patterns().join(", "),
            }),
            (true, Some(_), Some(real)) => Ok(Resolved {
                display: self.display(&real),
                path: real,
            }),
            _ => Err(ToolError::OutsideWorkspace {
                path: argument.to_owned(),
                roots: self.roots_list(),
            }),
        }
    }

    /// [`Workspace::resolve`] for a tool that changes the file: the agent's
    /// own controls ([`Control`]) are refused, so a run cannot grant itself
    /// tools, lift approvals or rewrite its instructions for later runs.
    pub fn resolve_for_change(&self, argument: &str) -> Result<Resolved, ToolError> {
        let resolved = self.resolve(argument)?;
        if self.controls_writable {
            return Ok(resolved);
        }
        match self
            .root_of(&resolved.path)
            .and_then(|root| resolved.path.strip_prefix(root).ok().and_then(Control::of))
        {
            Some(control) => Err(ToolError::ProtectedControl {
                path: resolved.display,
                control,
            }),
            None => Ok(resolved),
        }
    }

    /// The folder holding a resolved path, held open below its root
    /// without following a link (see [`crate::beneath`]), and the file's
    /// name in it; `create` makes missing folders on the way.
    pub(crate) fn folder_of(
        &self,
        resolved: &Resolved,
        create: bool,
    ) -> Result<(Folder, std::ffi::OsString), ToolError> {
        let shown = resolved.display.as_str();
        let root = self.root_of(&resolved.path);
        let relative =
            root.and_then(|root| resolved.path.strip_prefix(root).ok().map(|rel| (root, rel)));
        let (root, name, parent) = match relative {
            Some((root, rel)) => match (rel.file_name(), rel.parent()) {
                (Some(name), Some(parent)) => (root, name.to_owned(), parent),
                _ => {
                    return Err(ToolError::WrongKind {
                        path: shown.to_owned(),
                        expected: "a file",
                        actual: "a directory",
                    });
                }
            },
            None => {
                return Err(ToolError::OutsideWorkspace {
                    path: shown.to_owned(),
                    roots: self.roots_list(),
                });
            }
        };
        let action = match create {
            true => "create the parent directories of",
            false => "open",
        };
        let folder = Folder::open(root, parent, create).map_err(ToolError::io(action, shown))?;
        Ok((folder, name))
    }

    fn roots_list(&self) -> String {
        self.roots
            .iter()
            .map(|r| r.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Whether `real` (already resolved) is inside a root.
    pub fn contains(&self, real: &Path) -> bool {
        self.root_of(real).is_some()
    }

    fn root_of(&self, path: &Path) -> Option<&Path> {
        self.roots
            .iter()
            .find(|r| path.starts_with(r))
            .map(PathBuf::as_path)
    }

    /// The model-facing form of a real path inside the workspace: relative
    /// to the primary root when under it, absolute otherwise.
    pub fn display(&self, real: &Path) -> String {
        match real.strip_prefix(&self.roots[0]) {
            Ok(rel) if rel.as_os_str().is_empty() => ".".to_owned(),
            Ok(rel) => rel.display().to_string(),
            Err(_) => real.display().to_string(),
        }
    }
}

/// Removes `.` and folds `..` without touching the filesystem.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Follows symlinks of the longest existing prefix of `path` (which is
/// absolute and normalized), keeping the missing tail as written, so that
/// a file about to be created is checked by where it would really land.
/// `None` for an entry that exists but cannot be resolved, such as a
/// dangling symlink, whose target could be anywhere.
fn real_path(path: &Path) -> Option<PathBuf> {
    let mut existing = path.to_path_buf();
    let mut tail = Vec::new();
    loop {
        if let Ok(real) = existing.canonicalize() {
            let mut out = real;
            for part in tail.iter().rev() {
                out.push(part);
            }
            return Some(out);
        }
        if existing.symlink_metadata().is_ok() {
            return None;
        }
        match (
            existing.file_name().map(ToOwned::to_owned),
            existing.parent(),
        ) {
            (Some(name), Some(parent)) => {
                tail.push(name);
                existing = parent.to_path_buf();
            }
            _ => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_folds_dots() {
        assert_eq!(normalize(Path::new("/a/./b/../c")), PathBuf::from("/a/c"));
        assert_eq!(normalize(Path::new("/a/../../x")), PathBuf::from("/x"));
    }
}
