//! The commits a session's repositories are at: recorded when a session
//! is created, so a replay (in `evoflux-app`) can check the same state out
//! again, and read by that replay through the same function.

use std::path::PathBuf;

/// The commit each root that is a git repository is at.
pub fn git_heads(roots: &[PathBuf]) -> Vec<(PathBuf, String)> {
    roots
        .iter()
        .filter_map(|r| {
            evoflux_core::trust::git_head(&evoflux_core::trust::repository_root(r))
                .map(|c| (r.clone(), c))
        })
        .collect()
}
