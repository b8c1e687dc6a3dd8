//! Copying and walking a workspace the way git sees it: ignored files and
//! `.git` left out, hidden files kept. A replay's overlay of the project's
//! sources, a replay in a given folder and an eval's copy of the
//! repository all copy through [`copy_tree`], and an eval's changed-files
//! check walks through [`walk`].

use std::path::{Path, PathBuf};

/// A copy that failed, at the path it failed on.
#[derive(Debug, thiserror::Error)]
#[error("{}: {source}", .path.display())]
pub struct CopyError {
    pub path: PathBuf,
    pub source: std::io::Error,
}

/// The files and folders under `root`, git's ignore rules applied.
pub fn walk(root: &Path) -> ignore::Walk {
    evoflux_core::walk::project_walker(root).build()
}

/// Copies the tree `from` into `to` (created), files and folders only.
pub fn copy_tree(from: &Path, to: &Path) -> Result<(), CopyError> {
    let failed = |path: &Path| {
        let path = path.to_owned();
        move |source| CopyError { path, source }
    };
    std::fs::create_dir_all(to).map_err(failed(to))?;
    for entry in walk(from).flatten() {
        let path = entry.path();
        let Ok(rel) = path.strip_prefix(from) else {
            continue;
        };
        let target = to.join(rel);
        let kind = entry.file_type();
        if kind.is_some_and(|t| t.is_dir()) {
            std::fs::create_dir_all(&target).map_err(failed(&target))?;
        } else if kind.is_some_and(|t| t.is_file()) {
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent).map_err(failed(parent))?;
            }
            std::fs::copy(path, &target).map_err(failed(path))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ignored_files_and_git_stay_behind() {
        let from = tempfile::tempdir().unwrap();
        let to = tempfile::tempdir().unwrap();
        let f = from.path();
        std::fs::create_dir_all(f.join(".git")).unwrap();
        std::fs::write(f.join(".git/HEAD"), "ref: x\n").unwrap();
        std::fs::write(f.join(".gitignore"), "target/\n").unwrap();
        std::fs::create_dir_all(f.join("target")).unwrap();
        std::fs::write(f.join("target/big"), "x").unwrap();
        std::fs::create_dir_all(f.join(".evoflux/skills/a")).unwrap();
        std::fs::write(f.join(".evoflux/skills/a/SKILL.md"), "s").unwrap();
        copy_tree(f, &to.path().join("copy")).unwrap();
        let c = to.path().join("copy");
        assert!(c.join(".evoflux/skills/a/SKILL.md").is_file());
        assert!(c.join(".gitignore").is_file());
        assert!(!c.join(".git").exists());
        assert!(!c.join("target").exists());
    }
}
