//! Watching the sources a session is compiled from, so every front end
//! applies changes the same way: between turns ([`crate::host`]).
//!
//! What to watch is the application's to say (its `source_roots`, in
//! `evoflux-app`: the admin and user config folders, each workspace's
//! `.evoflux/`, the plugin registry's folder); the server's live reload
//! watches the same list.

use std::path::PathBuf;
use std::sync::Arc;

use notify::{RecursiveMode, Watcher};
use tokio::sync::watch;

use crate::events::{Event, EventSink};
use crate::host::ReopenError;
use crate::session::Harness;

/// The one refresh rule, for every front end: changed sources apply
/// between turns. `reopened` is the session opened again on them: it
/// replaces `harness` (which is shut down) and `sources_applied` is
/// emitted. When the session could not be opened on them, it keeps the
/// sources it has and `graph_invalid` says why. Returns whether they were
/// applied.
pub async fn apply(
    harness: &mut Harness,
    reopened: Result<Harness, ReopenError>,
    events: &dyn EventSink,
) -> bool {
    match reopened {
        Ok(new) => {
            std::mem::replace(harness, new).shutdown().await;
            events.emit(&Event::SourcesApplied {
                session_id: harness.session().id.to_string(),
            });
            true
        }
        Err(e) => {
            events.emit(&Event::GraphInvalid {
                code: e.code,
                message: format!(
                    "the changed sources cannot be applied; this session keeps its previous \
                     ones: {}",
                    e.message
                ),
                diagnostics: Vec::new(),
            });
            false
        }
    }
}

/// One folder to watch and how deep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceRoot {
    pub path: PathBuf,
    pub recursive: bool,
    /// Only this entry of the folder counts (a workspace is watched only
    /// to see its `.evoflux/` appear, not every file the agent writes).
    pub only: Option<PathBuf>,
}

impl SourceRoot {
    /// The folder `path`, with every file below it when `recursive`.
    pub fn folder(path: PathBuf, recursive: bool) -> SourceRoot {
        SourceRoot {
            path,
            recursive,
            only: None,
        }
    }

    /// Whether a change of `changed` is a change of this root's sources.
    fn covers(&self, changed: &std::path::Path) -> bool {
        match &self.only {
            Some(only) => changed.starts_with(only),
            None if self.recursive => changed.starts_with(&self.path),
            None => changed.parent() == Some(self.path.as_path()) || changed == self.path,
        }
    }
}

/// Counts changes under a set of source roots. Cheap to clone; the
/// watcher lives as long as any clone.
#[derive(Debug, Clone)]
pub struct SourceWatch {
    changes: watch::Receiver<u64>,
    _watcher: Arc<notify::RecommendedWatcher>,
}

impl SourceWatch {
    /// Watches `roots`; a root that cannot be watched is skipped with a
    /// warning (its changes then apply at the next session).
    pub fn start(roots: &[SourceRoot]) -> Result<SourceWatch, notify::Error> {
        let (tx, rx) = watch::channel(0u64);
        let watched = roots.to_vec();
        let mut watcher =
            notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
                let Ok(event) = event else { return };
                // Reading a file is not a change.
                if matches!(event.kind, notify::EventKind::Access(_)) {
                    return;
                }
                let relevant = event
                    .paths
                    .iter()
                    .any(|p| watched.iter().any(|r| r.covers(p)));
                if relevant {
                    tx.send_modify(|n| *n += 1);
                }
            })?;
        for root in roots {
            let mode = match root.recursive {
                true => RecursiveMode::Recursive,
                false => RecursiveMode::NonRecursive,
            };
            if let Err(e) = watcher.watch(&root.path, mode) {
                tracing::warn!("cannot watch {}: {e}", root.path.display());
            }
        }
        Ok(SourceWatch {
            changes: rx,
            _watcher: Arc::new(watcher),
        })
    }

    /// How many changes were seen so far.
    pub fn generation(&self) -> u64 {
        *self.changes.borrow()
    }

    /// Resolves at the next change; `false` once the watcher is gone.
    pub async fn changed(&mut self) -> bool {
        self.changes.changed().await.is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_change_under_a_root_is_counted_and_reading_is_not() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join(".evoflux");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(root.join("config.toml"), "").unwrap();
        let workspace = tmp.path().to_path_buf();
        let mut watch = SourceWatch::start(&[
            SourceRoot::folder(root.clone(), true),
            SourceRoot {
                path: workspace.clone(),
                recursive: false,
                only: Some(root.clone()),
            },
        ])
        .unwrap();
        assert_eq!(watch.generation(), 0);
        // A file the agent writes beside `.evoflux/` is not a source.
        std::fs::write(workspace.join("notes.md"), "x").unwrap();
        std::fs::read_to_string(root.join("config.toml")).unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        assert_eq!(watch.generation(), 0);
        std::fs::write(root.join("agents.md"), "x").unwrap();
        let changed = tokio::time::timeout(std::time::Duration::from_secs(10), watch.changed())
            .await
            .unwrap();
        assert!(changed);
        assert!(watch.generation() > 0);
    }
}
