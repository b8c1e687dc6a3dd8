//! How evoflux walks a project's files, the way git sees them: `.gitignore`
//! and `.ignore` rules apply (even before the folder is a git repository),
//! hidden files are kept (agents need `.github/`, dotfile configs), `.git`
//! is repository internals and left out, symlinks are not followed. The
//! file tools' walk, the code index and workspace copies all start here.

use std::path::Path;

/// A walker over `root` with evoflux's rules; callers add their own order
/// and filters.
pub fn project_walker(root: &Path) -> ignore::WalkBuilder {
    let mut builder = ignore::WalkBuilder::new(root);
    builder
        .standard_filters(true)
        .hidden(false)
        .filter_entry(|entry| entry.file_name() != ".git")
        .require_git(false)
        .follow_links(false);
    builder
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ignored_files_and_git_internals_are_left_out_and_dotfiles_kept() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = dir.path();
        for (p, t) in [
            (".gitignore", "target/\n"),
            ("target/out.rs", ""),
            (".git/HEAD", "ref: refs/heads/main\n"),
            (".github/ci.yml", ""),
            ("src/lib.rs", ""),
        ] {
            let f = root.join(p);
            std::fs::create_dir_all(f.parent().unwrap_or(root)).unwrap_or_else(|e| panic!("{e}"));
            std::fs::write(f, t).unwrap_or_else(|e| panic!("{e}"));
        }
        let mut files: Vec<String> = project_walker(root)
            .build()
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
            .filter_map(|e| {
                e.path()
                    .strip_prefix(root)
                    .ok()
                    .map(|p| p.display().to_string())
            })
            .collect();
        files.sort();
        assert_eq!(files, [".github/ci.yml", ".gitignore", "src/lib.rs"]);
    }
}
