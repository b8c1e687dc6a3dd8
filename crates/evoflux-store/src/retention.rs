//! What of the data directory is kept: sessions past an age or past a
//! total size are deleted with everything they own, and folders no session
//! owns (left by a crash, and older than an hour) are removed.
//!
//! The policy comes from `[storage]` in the user's config; the CLI's
//! `sessions prune` applies it (or a given age) at once, and every session
//! start applies it at most once per [`PRUNE_INTERVAL`], so a data dir
//! stays within its policy without anyone remembering to prune.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use evoflux_core::ids::SessionId;

use crate::error::StoreError;
use crate::session::Session;
use crate::store::{Store, artifacts_root, now_ms};

/// How often a session start applies the policy by itself.
pub const PRUNE_INTERVAL: Duration = Duration::from_secs(24 * 60 * 60);

/// The file whose modification time records the last automatic prune.
const STAMP_FILE: &str = "retention.stamp";

/// Sessions changed this recently are never deleted to make room: another
/// evoflux may have them open.
const KEEP_RECENT: Duration = Duration::from_secs(60 * 60);

/// A retention policy. `None` keeps everything on that count.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Retention {
    /// Top-level sessions not changed for this long are deleted.
    pub max_age: Option<Duration>,
    /// When the sessions' folders (journals, artifacts, Work folders) hold
    /// more bytes than this, the least recently changed are deleted until
    /// they fit.
    pub max_total_bytes: Option<u64>,
}

impl From<evoflux_core::config::StorageConfig> for Retention {
    fn from(c: evoflux_core::config::StorageConfig) -> Retention {
        Retention {
            max_age: c
                .max_age_days
                .map(|d| Duration::from_secs(d.saturating_mul(24 * 60 * 60))),
            max_total_bytes: c.max_total_mib.map(|m| m.saturating_mul(1024 * 1024)),
        }
    }
}

/// What a prune removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pruned {
    /// Sessions deleted, each tree's root first.
    pub deleted: Vec<SessionId>,
    /// Folders no session owned.
    pub orphans: Vec<PathBuf>,
    /// Bytes of the session folders removed, orphans included.
    pub bytes_freed: u64,
}

impl Store {
    /// Applies `policy` now, then removes the artifact and session folders
    /// no session owns.
    pub async fn prune(&self, policy: &Retention) -> Result<Pruned, StoreError> {
        let sessions = self.list_sessions().await?;
        let mut pruned = Pruned::default();
        let mut trees = trees(&sessions);
        // Oldest first, so both rules delete what was left alone longest.
        trees.sort_by_key(|t| t.updated_at_ms);
        let now = now_ms();
        let age_ms = |d: Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
        // Folder sizes are walked only when the size rule needs them all;
        // otherwise only the trees deleted are measured, for the report.
        let sizes: Option<Vec<u64>> = policy
            .max_total_bytes
            .map(|_| trees.iter().map(|t| self.tree_bytes(t)).collect());
        let mut total: u64 = sizes.iter().flatten().sum();
        for (i, tree) in trees.iter().enumerate() {
            let too_old = policy
                .max_age
                .is_some_and(|age| tree.updated_at_ms < now.saturating_sub(age_ms(age)));
            let too_big = policy.max_total_bytes.is_some_and(|max| total > max)
                && tree.updated_at_ms < now.saturating_sub(age_ms(KEEP_RECENT));
            if !(too_old || too_big) {
                continue;
            }
            let bytes = match &sizes {
                Some(sizes) => sizes[i],
                None => self.tree_bytes(tree),
            };
            match self.delete_tree(tree.root, false).await {
                Ok(ids) => pruned.deleted.extend(ids),
                // Another evoflux pruned it first.
                Err(StoreError::SessionNotFound(_)) => {}
                Err(e) => return Err(e),
            }
            total = total.saturating_sub(bytes);
            pruned.bytes_freed += bytes;
        }
        if !pruned.deleted.is_empty() {
            let mut tx = self.pool.begin().await?;
            crate::model_requests::drop_unused_parts(&mut tx).await?;
            tx.commit().await?;
        }
        let live: BTreeSet<String> = sessions
            .iter()
            .filter(|s| !pruned.deleted.contains(&s.id))
            .map(|s| s.id.to_string())
            .collect();
        for root in self.session_folder_roots() {
            let Ok(entries) = std::fs::read_dir(&root) else {
                continue;
            };
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                let path = entry.path();
                let Ok(id) = name.parse::<SessionId>() else {
                    continue;
                };
                if live.contains(&name) || !path.is_dir() || minted_recently(id, &path, now) {
                    continue;
                }
                let bytes = folder_bytes(&path);
                if std::fs::remove_dir_all(&path).is_ok() {
                    pruned.bytes_freed += bytes;
                    pruned.orphans.push(path);
                }
            }
        }
        Ok(pruned)
    }

    /// Applies `policy` when the last automatic prune is older than
    /// [`PRUNE_INTERVAL`] (or never happened); `None` when it was not due.
    pub async fn prune_if_due(&self, policy: &Retention) -> Result<Option<Pruned>, StoreError> {
        let stamp = self.data_dir.join(STAMP_FILE);
        let due = std::fs::metadata(&stamp)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|at| SystemTime::now().duration_since(at).ok())
            .is_none_or(|since| since >= PRUNE_INTERVAL);
        if !due {
            return Ok(None);
        }
        // Stamped first: two evoflux starting together prune once, and a
        // prune that fails is not retried at every start.
        let _ = evoflux_core::atomic::write_atomic(
            &stamp,
            b"",
            evoflux_core::atomic::AtomicOptions::SECRET,
        );
        self.prune(policy).await.map(Some)
    }

    /// The folders each session may own, by session id.
    fn session_folder_roots(&self) -> [PathBuf; 2] {
        [
            self.data_dir.join("sessions"),
            artifacts_root(&self.data_dir),
        ]
    }

    /// Bytes the folders of a tree's sessions hold.
    fn tree_bytes(&self, tree: &Tree) -> u64 {
        let roots = self.session_folder_roots();
        tree.members
            .iter()
            .flat_map(|id| roots.iter().map(move |dir| dir.join(id.to_string())))
            .map(|dir| folder_bytes(&dir))
            .sum()
    }
}

/// Each top-level session with its children, and when the tree last
/// changed (the latest of its sessions).
fn trees(sessions: &[Session]) -> Vec<Tree> {
    let parent: BTreeMap<SessionId, SessionId> = sessions
        .iter()
        .filter_map(|s| s.parent.as_ref().map(|p| (s.id, p.session_id)))
        .collect();
    let root_of = |mut id: SessionId| {
        // Bounded by the number of sessions, so a cycle cannot hang.
        for _ in 0..=sessions.len() {
            match parent.get(&id) {
                Some(p) => id = *p,
                None => break,
            }
        }
        id
    };
    let mut trees: BTreeMap<SessionId, Tree> = BTreeMap::new();
    for s in sessions {
        let root = root_of(s.id);
        let tree = trees.entry(root).or_insert(Tree {
            root,
            updated_at_ms: i64::MIN,
            members: Vec::new(),
        });
        tree.updated_at_ms = tree.updated_at_ms.max(s.updated_at_ms);
        tree.members.push(s.id);
    }
    trees.into_values().collect()
}

#[derive(Debug)]
struct Tree {
    root: SessionId,
    updated_at_ms: i64,
    members: Vec<SessionId>,
}

/// Whether the folder of session `id` may belong to a session being
/// created right now rather than to one a crash left: a Work session's
/// folder is made before its row is written, and another evoflux (a CLI
/// run, another server replica) may be creating sessions on this data dir
/// while this one prunes. Such folders are left for [`KEEP_RECENT`]. A
/// session id carries the time it was minted (UUIDv7); an id without one
/// is aged by its folder's modification time.
fn minted_recently(id: SessionId, folder: &Path, now_ms: i64) -> bool {
    let keep_ms = i64::try_from(KEEP_RECENT.as_millis()).unwrap_or(i64::MAX);
    let minted_ms = match id.as_uuid().get_timestamp() {
        Some(ts) => {
            let (secs, nanos) = ts.to_unix();
            i64::try_from(secs)
                .unwrap_or(i64::MAX)
                .saturating_mul(1000)
                .saturating_add(i64::from(nanos / 1_000_000))
        }
        None => match std::fs::metadata(folder).and_then(|m| m.modified()) {
            Ok(at) => at
                .duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX)),
            // Unreadable: leave it rather than guess.
            Err(_) => return true,
        },
    };
    minted_ms > now_ms.saturating_sub(keep_ms)
}

/// Bytes of the files below `dir`, links not followed; 0 when it is
/// missing.
fn folder_bytes(dir: &Path) -> u64 {
    crate::artifacts::files_below(dir)
        .iter()
        .map(|(_, len)| len)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::{NewSession, SessionParent, WorkspaceRequest};

    async fn session(
        store: &Store,
        parent: Option<SessionId>,
        days_ago: i64,
        bytes: usize,
    ) -> SessionId {
        let s = store
            .create_session(NewSession {
                workspace: WorkspaceRequest::Work,
                lead: None,
                model: None,
                graph_hash: None,
                parent: parent.map(|p| SessionParent {
                    session_id: p,
                    call_id: "call".into(),
                }),
            })
            .await
            .unwrap();
        let at = now_ms() - days_ago * 24 * 60 * 60 * 1000;
        sqlx::query("UPDATE sessions SET updated_at_ms = $1 WHERE id = $2")
            .bind(at)
            .bind(s.id.to_string())
            .execute(&store.pool)
            .await
            .unwrap();
        let dir = artifacts_root(&store.data_dir).join(s.id.to_string());
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("proc_1.txt"), vec![b'x'; bytes]).unwrap();
        s.id
    }

    #[tokio::test]
    async fn age_and_size_delete_the_least_recently_changed_trees_first() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).await.unwrap();
        let oldest = session(&store, None, 40, 1000).await;
        let child = session(&store, Some(oldest), 40, 500).await;
        let old = session(&store, None, 20, 1000).await;
        let middle = session(&store, None, 10, 1000).await;
        // Too big, but changed just now: another evoflux may have it open.
        let fresh = session(&store, None, 0, 5000).await;

        let nothing = store.prune(&Retention::default()).await.unwrap();
        assert_eq!(nothing, Pruned::default());

        let by_age = store
            .prune(&Retention {
                max_age: Some(Duration::from_secs(30 * 24 * 60 * 60)),
                max_total_bytes: None,
            })
            .await
            .unwrap();
        assert_eq!(by_age.deleted, [oldest, child]);
        assert_eq!(by_age.bytes_freed, 1500);
        assert!(!artifacts_root(dir.path()).join(child.to_string()).exists());

        // 7000 bytes left; fitting in 6500 deletes `old` alone, and no
        // limit makes the store delete `fresh`.
        let by_size = store
            .prune(&Retention {
                max_age: None,
                max_total_bytes: Some(6500),
            })
            .await
            .unwrap();
        assert_eq!(by_size.deleted, [old]);
        let tiny = store
            .prune(&Retention {
                max_age: None,
                max_total_bytes: Some(1),
            })
            .await
            .unwrap();
        assert_eq!(tiny.deleted, [middle]);
        let left: Vec<SessionId> = store
            .list_sessions()
            .await
            .unwrap()
            .iter()
            .map(|s| s.id)
            .collect();
        assert_eq!(left, [fresh]);
    }

    #[tokio::test]
    async fn the_automatic_prune_runs_once_per_interval() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).await.unwrap();
        let orphan = artifacts_root(dir.path()).join("01a20000-0000-7000-8000-000000000000");
        std::fs::create_dir_all(&orphan).unwrap();
        let first = store.prune_if_due(&Retention::default()).await.unwrap();
        assert_eq!(first.unwrap().orphans, std::slice::from_ref(&orphan));
        std::fs::create_dir_all(&orphan).unwrap();
        assert_eq!(
            store.prune_if_due(&Retention::default()).await.unwrap(),
            None
        );
        assert!(orphan.is_dir());
        // A stamp older than the interval makes it due again.
        let stamp = std::fs::File::options()
            .write(true)
            .open(dir.path().join(STAMP_FILE))
            .unwrap();
        stamp
            .set_modified(SystemTime::now() - PRUNE_INTERVAL - Duration::from_secs(1))
            .unwrap();
        assert!(
            store
                .prune_if_due(&Retention::default())
                .await
                .unwrap()
                .is_some()
        );
        assert!(!orphan.exists());
    }

    #[tokio::test]
    async fn a_folder_of_a_session_being_created_is_not_an_orphan() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).await.unwrap();
        // Folders made just now for sessions whose rows are not written yet
        // (here: never), by this process or another one on the data dir.
        let young = evoflux_core::ids::Ids::system().session_id();
        let young_work = store.work_folder(young);
        let young_artifacts = artifacts_root(dir.path()).join(young.to_string());
        std::fs::create_dir_all(&young_work).unwrap();
        std::fs::create_dir_all(&young_artifacts).unwrap();
        // An id without a time (not UUIDv7) is aged by its folder.
        let timeless = artifacts_root(dir.path()).join("0f000000-0000-4000-8000-000000000000");
        std::fs::create_dir_all(&timeless).unwrap();
        let crashed = artifacts_root(dir.path()).join("01a20000-0000-7000-8000-000000000000");
        std::fs::create_dir_all(&crashed).unwrap();

        let pruned = store.prune(&Retention::default()).await.unwrap();
        assert_eq!(pruned.orphans, [crashed]);
        assert!(young_work.is_dir() && young_artifacts.is_dir() && timeless.is_dir());

        std::fs::File::open(&timeless)
            .unwrap()
            .set_modified(SystemTime::now() - KEEP_RECENT - Duration::from_secs(1))
            .unwrap();
        let pruned = store.prune(&Retention::default()).await.unwrap();
        assert_eq!(pruned.orphans, [timeless]);
        assert!(young_work.is_dir() && young_artifacts.is_dir());
    }
}
