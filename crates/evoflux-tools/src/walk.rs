//! The file walk shared by `glob` and `grep`: ripgrep's `ignore` walker,
//! so `.gitignore` and `.ignore` rules apply, in a stable order, never
//! leaving the workspace through a symlink. Hidden files are included
//! (agents need `.github/`, `.env.example`, dotfile configs) except the
//! `.git` directory, which is repository internals, not project files,
//! and the sandbox's denied files (`.env`), which no tool reads.

use std::path::{Path, PathBuf};

use crate::workspace::Workspace;

/// Regular files under `dir` in path order, with their path relative to
/// `dir`. Unreadable entries are skipped: a search reports what it can.
pub(crate) fn files(ws: &Workspace, dir: &Path) -> impl Iterator<Item = (PathBuf, PathBuf)> {
    let root = dir.to_path_buf();
    let ws = ws.clone();
    evoflux_core::walk::project_walker(dir)
        .sort_by_file_name(|a, b| a.cmp(b))
        .build()
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_some_and(|t| t.is_file()))
        .filter(move |entry| ws.contains(entry.path()) && !ws.is_denied(entry.path()))
        .filter_map(move |entry| {
            let rel = entry.path().strip_prefix(&root).ok()?.to_path_buf();
            Some((entry.into_path(), rel))
        })
}
