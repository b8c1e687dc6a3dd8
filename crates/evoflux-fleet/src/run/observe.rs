//! Observing what a node changed in its checkout and holding it to its
//! write boundary: the snapshot after the node against its base (and,
//! with a boundary, the ignored files before against after), rollback of
//! what the boundary does not cover, and what was kept.

use crate::boundary::WriteBoundary;
use crate::run::git::{Change, ChangeKind, Git, GitError, IgnoredFiles, Oid};

/// The most paths a receipt lists as violations; a message names fewer.
pub const RECEIPT_PATHS_MAX: usize = 1_000;
/// The most paths one failure message names.
const MESSAGE_PATHS_MAX: usize = 20;

/// Paths as a message names them: the first few, then how many more.
pub(crate) fn listed(paths: &[String]) -> String {
    let mut text = paths
        .iter()
        .take(MESSAGE_PATHS_MAX)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if paths.len() > MESSAGE_PATHS_MAX {
        text.push_str(&format!(
            " and {} more ({} in all)",
            paths.len() - MESSAGE_PATHS_MAX,
            paths.len()
        ));
    }
    text
}

/// What a node changed, judged against its boundary.
#[derive(Debug)]
pub(crate) struct Seen {
    /// Paths it changed inside its boundary (or with no claim), sorted.
    pub kept: Vec<String>,
    /// Paths it changed outside, sorted, at most [`RECEIPT_PATHS_MAX`].
    pub violations: Vec<String>,
    /// Why some violation could not be undone.
    pub rollback_error: Option<String>,
    /// The checkout's tree after any rollback.
    pub tree: Oid,
}

/// Compares the checkout with the node's base (its tree and, when the
/// node has a boundary, its ignored files), rolls back what the boundary
/// does not cover, and says what was kept and what was not.
///
/// Ignored paths outside the boundary are rolled back when the node only
/// created them (they are deleted again). When it changed or deleted an
/// ignored file that was there before, no snapshot holds the old content:
/// every ignored path is left as the node left it (deleting only the new
/// ones would leave, say, a build directory half old and half new), and
/// the failure names them.
pub(crate) async fn observe(
    git: &Git,
    base: &str,
    ignored: Option<&IgnoredFiles>,
    writes: Option<&WriteBoundary>,
    exempt: &[String],
) -> Result<Seen, GitError> {
    let after = git.snapshot().await?;
    let ignored_after = match ignored {
        Some(_) => Some(git.ignored().await?),
        None => None,
    };
    let blamed = |c: &Change| {
        writes.is_some_and(|b| !b.covers(&c.path))
            && !exempt.iter().any(|e| c.path.starts_with(e.as_str()))
    };
    let changes = git.diff_trees(base, &after).await?;
    let (bad, good): (Vec<Change>, Vec<Change>) = changes.into_iter().partition(blamed);
    let ignored_bad: Vec<Change> = match (ignored, &ignored_after) {
        (Some(before), Some(now)) => before.changes(now).into_iter().filter(blamed).collect(),
        (Some(_) | None, _) => Vec::new(),
    };
    let mut kept: Vec<String> = good.into_iter().map(|c| c.path).collect();
    kept.sort();
    let mut violations: Vec<String> = bad
        .iter()
        .chain(&ignored_bad)
        .map(|c| c.path.clone())
        .collect();
    violations.sort();
    violations.dedup();
    violations.truncate(RECEIPT_PATHS_MAX);
    let mut rollback_error = None;
    let mut tree = after;
    if !bad.is_empty() {
        match git.restore_paths(base, &bad).await {
            Ok(()) => tree = git.snapshot().await?,
            Err(e) => rollback_error = Some(e.to_string()),
        }
    }
    if ignored_bad.iter().all(|c| c.kind == ChangeKind::Added) {
        let created: Vec<String> = ignored_bad.into_iter().map(|c| c.path).collect();
        if let Err(e) = git.remove_created_paths(&created) {
            rollback_error.get_or_insert(e.to_string());
        }
    } else {
        let paths: Vec<String> = ignored_bad.into_iter().map(|c| c.path).collect();
        rollback_error.get_or_insert(format!(
            "{} are ignored by git, so no snapshot holds what was there before; they are left \
             as the step left them",
            listed(&paths)
        ));
    }
    Ok(Seen {
        kept,
        violations,
        rollback_error,
        tree,
    })
}
