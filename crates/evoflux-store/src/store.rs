//! The SQLite store: opening, migrations, and every read and append.

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::{SystemTime, UNIX_EPOCH};

use evoflux_core::AppMode;
use evoflux_core::ids::{Ids, SessionId};
use sqlx::AnyPool;
use sqlx::Row;
use sqlx::any::AnyRow;

use crate::Usage;
use crate::database::{Backend, Database};
use crate::error::StoreError;
use crate::pending::{PendingInput, PendingInputId, PendingRequest};
use crate::session::{NewSession, Session, SessionParent, Workspace, WorkspaceRequest};
use crate::transcript::{EntryRole, Message, TranscriptEntry};

/// The database file inside the data directory.
pub const DB_FILE: &str = "evoflux.db";

/// A handle on the session database (`<data>/evoflux.db`, or a shared
/// PostgreSQL server) and the data directory beside it, where Work
/// folders and artifacts live. Cheap to clone; every clone shares one
/// connection pool.
#[derive(Debug, Clone)]
pub struct Store {
    pub(crate) pool: AnyPool,
    pub(crate) data_dir: PathBuf,
    database: Database,
    ids: Ids,
    /// The object store every replica keeps sessions' artifacts in, when
    /// one is configured: deleting a session removes its objects too.
    artifacts: Option<crate::artifacts::Artifacts>,
}

pub(crate) const SESSION_COLUMNS: &str = "id, mode, workspace, lead, model, graph_hash, \
                                          parent_id, parent_call_id, created_at_ms, \
                                          updated_at_ms, title, surface";
/// The counts of a `usage_totals` row, as [`usage_from_row`] reads them.
const USAGE_COLUMNS: &str = "requests, input_tokens, output_tokens, cache_read_tokens, \
                             cache_write_tokens, projected_results, projection_saved_chars, \
                             cost_picousd, unpriced_requests";
const PENDING_COLUMNS: &str = "id, tool_call_id, request, answer, created_at_ms, answered_at_ms";

/// The folder under a data dir that holds each session's artifacts
/// (command journals, offloaded results, records), by session id. The one
/// statement of that layout: the runtime writes there, the store removes.
pub fn artifacts_root(data_dir: &Path) -> PathBuf {
    data_dir.join("artifacts")
}

impl Store {
    pub(crate) fn pool(&self) -> &AnyPool {
        &self.pool
    }

    /// Opens (creating when absent) the SQLite database in `data_dir` with
    /// real UUIDv7 ids, and applies pending migrations.
    pub async fn open(data_dir: impl AsRef<Path>) -> Result<Store, StoreError> {
        Self::open_with_ids(data_dir, Ids::system()).await
    }

    /// Like [`Store::open`] with an injected id source, so tests get
    /// reproducible session ids.
    pub async fn open_with_ids(data_dir: impl AsRef<Path>, ids: Ids) -> Result<Store, StoreError> {
        Self::connect(data_dir, &Database::Sqlite, ids).await
    }

    /// Opens the sessions in `database`, with `data_dir` for what lives
    /// beside them on disk, and applies pending migrations.
    pub async fn connect(
        data_dir: impl AsRef<Path>,
        database: &Database,
        ids: Ids,
    ) -> Result<Store, StoreError> {
        let data_dir = data_dir.as_ref().to_path_buf();
        evoflux_core::private::create_private_dir(&data_dir).map_err(|source| {
            StoreError::DataDir {
                path: data_dir.clone(),
                source,
            }
        })?;
        let pool = crate::database::connect(database, &data_dir).await?;
        Ok(Store {
            pool,
            data_dir,
            database: database.clone(),
            ids,
            artifacts: None,
        })
    }

    /// This store with the object store sessions' artifacts are kept in
    /// (see [`crate::Artifacts`]); `None` when the data directory is all
    /// there is.
    pub fn with_artifacts(mut self, artifacts: Option<crate::artifacts::Artifacts>) -> Store {
        self.artifacts = artifacts;
        self
    }

    /// The object store sessions' artifacts are kept in, when configured.
    pub fn artifacts(&self) -> Option<&crate::artifacts::Artifacts> {
        self.artifacts.as_ref()
    }

    /// Where the sessions are.
    pub fn database(&self) -> &Database {
        &self.database
    }

    pub fn backend(&self) -> Backend {
        self.database.backend()
    }

    /// Whether the database answers: what a readiness probe asks.
    pub async fn ping(&self) -> Result<(), StoreError> {
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }

    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// The per-session folder of a Work session.
    pub fn work_folder(&self, id: SessionId) -> PathBuf {
        self.data_dir
            .join("sessions")
            .join(id.to_string())
            .join("workspace")
    }

    /// Closes the pool, waiting for connections to finish.
    pub async fn close(&self) {
        self.pool.close().await;
    }

    /// Creates and persists a session. A Work session's folder is created
    /// before the row is written, so a persisted Work session always has it.
    pub async fn create_session(&self, new: NewSession) -> Result<Session, StoreError> {
        new.workspace.check()?;
        let id = self.ids.session_id();
        let workspace = match new.workspace {
            WorkspaceRequest::Work => {
                let folder = self.work_folder(id);
                evoflux_core::private::create_private_dir(&folder).map_err(|source| {
                    StoreError::DataDir {
                        path: folder.clone(),
                        source,
                    }
                })?;
                Workspace::Work { folder }
            }
            WorkspaceRequest::Coding(repositories) => Workspace::Coding { repositories },
            WorkspaceRequest::Shared(workspace) => workspace,
        };
        let now = now_ms();
        sqlx::query(
            "INSERT INTO sessions (id, mode, workspace, lead, model, graph_hash, parent_id, \
             parent_call_id, created_at_ms, updated_at_ms)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
        )
        .bind(id.to_string())
        .bind(workspace.mode().as_str())
        .bind(roots_json(workspace.roots())?)
        .bind(new.lead.clone())
        .bind(new.model.clone())
        .bind(new.graph_hash.clone())
        .bind(new.parent.as_ref().map(|p| p.session_id.to_string()))
        .bind(new.parent.as_ref().map(|p| p.call_id.clone()))
        .bind(now)
        .bind(now)
        .execute(&self.pool)
        .await?;
        Ok(Session {
            id,
            workspace,
            lead: new.lead,
            model: new.model,
            graph_hash: new.graph_hash,
            parent: new.parent,
            title: None,
            surface: crate::SessionSurface::Standard,
            created_at_ms: now,
            updated_at_ms: now,
        })
    }

    /// Loads a session, or `None` when there is no such id.
    pub async fn session(&self, id: SessionId) -> Result<Option<Session>, StoreError> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {SESSION_COLUMNS} FROM sessions WHERE id = $1"
        )))
        .bind(id.to_string())
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(session_from_row).transpose()
    }

    /// Loads a session that must exist.
    pub async fn load(&self, id: SessionId) -> Result<Session, StoreError> {
        self.session(id)
            .await?
            .ok_or(StoreError::SessionNotFound(id))
    }

    /// Loads a session for resumption. The persisted mode and workspace are
    /// authoritative: a request naming others is refused, never migrated.
    pub async fn resume(
        &self,
        id: SessionId,
        requested_mode: Option<AppMode>,
        requested_workspace: Option<&[PathBuf]>,
    ) -> Result<Session, StoreError> {
        let session = self.load(id).await?;
        session.check_resume(requested_mode, requested_workspace)?;
        Ok(session)
    }

    /// Records that the session now runs on `model` (`provider:model`): a
    /// switch the user asked for, kept for every later resume.
    pub async fn set_model(&self, id: SessionId, model: &str) -> Result<Session, StoreError> {
        let now = now_ms();
        let done = sqlx::query("UPDATE sessions SET model = $1, updated_at_ms = $2 WHERE id = $3")
            .bind(model)
            .bind(now)
            .bind(id.to_string())
            .execute(&self.pool)
            .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::SessionNotFound(id));
        }
        self.load(id).await
    }

    /// Tags the session for `surface` (the browser surface, or back to the
    /// standard one): kept for every later resume.
    pub async fn set_surface(
        &self,
        id: SessionId,
        surface: crate::SessionSurface,
    ) -> Result<Session, StoreError> {
        let done =
            sqlx::query("UPDATE sessions SET surface = $1, updated_at_ms = $2 WHERE id = $3")
                .bind(surface.as_str())
                .bind(now_ms())
                .bind(id.to_string())
                .execute(&self.pool)
                .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::SessionNotFound(id));
        }
        self.load(id).await
    }

    /// The child session that `call_id` of `parent` dispatched, if one was
    /// opened.
    pub async fn child_of(
        &self,
        parent: SessionId,
        call_id: &str,
    ) -> Result<Option<Session>, StoreError> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {SESSION_COLUMNS} FROM sessions WHERE parent_id = $1 AND parent_call_id = $2"
        )))
        .bind(parent.to_string())
        .bind(call_id)
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(session_from_row).transpose()
    }

    /// The child sessions `parent`'s dispatches opened, oldest first.
    pub async fn children_of(&self, parent: SessionId) -> Result<Vec<Session>, StoreError> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {SESSION_COLUMNS} FROM sessions WHERE parent_id = $1 ORDER BY created_at_ms, id"
        )))
        .bind(parent.to_string())
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(session_from_row).collect()
    }

    /// A session and every session its dispatches opened, recursively; the
    /// session itself first.
    pub async fn session_tree(&self, id: SessionId) -> Result<Vec<Session>, StoreError> {
        let mut tree = vec![self.load(id).await?];
        let mut i = 0;
        while i < tree.len() {
            let children = self.children_of(tree[i].id).await?;
            tree.extend(children);
            i += 1;
        }
        Ok(tree)
    }

    /// Deletes a session with its children (the sessions its dispatches
    /// opened, recursively), their transcripts, pending inputs, usage and
    /// session-scoped approval grants, its folders under the data dir (a
    /// Work session's workspace, its artifacts) and its objects in the
    /// artifact store. The objects go first: when the object store cannot
    /// be reached nothing is deleted, and the deletion can be retried.
    /// Returns the ids deleted, the session's own first.
    pub async fn delete_session(&self, id: SessionId) -> Result<Vec<SessionId>, StoreError> {
        self.delete_tree(id, true).await
    }

    /// [`Store::delete_session`]; `collect_parts` drops the recorded
    /// request parts no call uses any more (pruning does it once, after
    /// every tree).
    pub(crate) async fn delete_tree(
        &self,
        id: SessionId,
        collect_parts: bool,
    ) -> Result<Vec<SessionId>, StoreError> {
        let doomed = self.session_tree(id).await?;
        if let Some(artifacts) = &self.artifacts {
            for s in &doomed {
                artifacts.delete_session(s.id).await?;
            }
        }
        let mut tx = self.pool.begin().await?;
        for s in &doomed {
            let key = s.id.to_string();
            sqlx::query("DELETE FROM approval_grants WHERE scope = 'session' AND scope_key = $1")
                .bind(&key)
                .execute(&mut *tx)
                .await?;
            // Transcripts, pending inputs, usage, events and leases cascade.
            sqlx::query("DELETE FROM sessions WHERE id = $1")
                .bind(&key)
                .execute(&mut *tx)
                .await?;
            // Other replicas' streams of it end (see `append_events`).
            self.announce(&mut tx, crate::replicas::EVENTS_CHANNEL, &key)
                .await?;
        }
        if collect_parts {
            crate::model_requests::drop_unused_parts(&mut tx).await?;
        }
        tx.commit().await?;
        for s in &doomed {
            // A Work session's folder and its command journals and other
            // artifacts: nothing is left of the session.
            for dir in [
                self.data_dir.join("sessions").join(s.id.to_string()),
                artifacts_root(&self.data_dir).join(s.id.to_string()),
            ] {
                if dir.is_dir() {
                    let _ = std::fs::remove_dir_all(dir);
                }
            }
        }
        Ok(doomed.into_iter().map(|s| s.id).collect())
    }

    /// Every session, newest first.
    pub async fn list_sessions(&self) -> Result<Vec<Session>, StoreError> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {SESSION_COLUMNS} FROM sessions ORDER BY created_at_ms DESC, id DESC"
        )))
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(session_from_row).collect()
    }

    /// Appends one message in its own transaction and returns it with its
    /// sequence number. The number is taken inside the insert itself, so two
    /// writers never get the same one.
    pub async fn append_message(
        &self,
        id: SessionId,
        message: &Message,
    ) -> Result<TranscriptEntry, StoreError> {
        self.append_entry(id, message, None).await
    }

    /// Appends a tool result with the artifact metadata its tool hook
    /// recorded, so a reloaded transcript carries the same metadata as the
    /// live event did.
    pub async fn append_with_artifact(
        &self,
        id: SessionId,
        message: &Message,
        artifact: &serde_json::Value,
    ) -> Result<TranscriptEntry, StoreError> {
        self.append_entry(id, message, Some(artifact)).await
    }

    async fn append_entry(
        &self,
        id: SessionId,
        message: &Message,
        artifact: Option<&serde_json::Value>,
    ) -> Result<TranscriptEntry, StoreError> {
        let now = now_ms();
        let mut tx = self.pool.begin().await?;
        touch(&mut tx, id, now).await?;
        let entry = insert_entry(&mut tx, id, message, artifact, now).await?;
        tx.commit().await?;
        Ok(entry)
    }

    /// The whole transcript in order.
    pub async fn transcript(&self, id: SessionId) -> Result<Vec<TranscriptEntry>, StoreError> {
        self.load(id).await?;
        let rows = sqlx::query(
            "SELECT seq, body, artifact, created_at_ms FROM transcript_entries
             WHERE session_id = $1 ORDER BY seq",
        )
        .bind(id.to_string())
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(entry_from_row).collect()
    }

    /// The newest `limit` entries before `before` (every entry when
    /// `None`), in order: how a long transcript is read a page at a time,
    /// newest first, without loading the rest.
    pub async fn transcript_page(
        &self,
        id: SessionId,
        before: Option<u64>,
        limit: u32,
    ) -> Result<Vec<TranscriptEntry>, StoreError> {
        self.load(id).await?;
        let rows = sqlx::query(
            "SELECT seq, body, artifact, created_at_ms FROM transcript_entries
             WHERE session_id = $1 AND seq < $2 ORDER BY seq DESC LIMIT $3",
        )
        .bind(id.to_string())
        .bind(before.map_or(i64::MAX, |b| i64::try_from(b).unwrap_or(i64::MAX)))
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?;
        let mut entries = rows
            .iter()
            .map(entry_from_row)
            .collect::<Result<Vec<_>, _>>()?;
        entries.reverse();
        Ok(entries)
    }

    /// The number of the transcript's last entry (0 when it is empty):
    /// what a turn adds comes after it.
    pub async fn transcript_last_seq(&self, id: SessionId) -> Result<u64, StoreError> {
        let seq: Option<i64> =
            sqlx::query_scalar("SELECT MAX(seq) FROM transcript_entries WHERE session_id = $1")
                .bind(id.to_string())
                .fetch_one(&self.pool)
                .await?;
        to_u64("transcript seq", seq.unwrap_or(0))
    }

    /// Persists a question the agent is waiting on.
    pub async fn create_pending_input(
        &self,
        id: SessionId,
        tool_call_id: &str,
        request: &PendingRequest,
    ) -> Result<PendingInput, StoreError> {
        let body =
            serde_json::to_string(request).map_err(|e| StoreError::corrupt("pending input", e))?;
        let now = now_ms();
        let mut tx = self.pool.begin().await?;
        touch(&mut tx, id, now).await?;
        let pending_id: i64 = sqlx::query_scalar(
            "INSERT INTO pending_inputs (session_id, tool_call_id, request, created_at_ms)
             VALUES ($1, $2, $3, $4) RETURNING id",
        )
        .bind(id.to_string())
        .bind(tool_call_id)
        .bind(body)
        .bind(now)
        .fetch_one(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(PendingInput {
            id: PendingInputId(pending_id),
            tool_call_id: tool_call_id.to_owned(),
            request: request.clone(),
            answer: None,
            created_at_ms: now,
            answered_at_ms: None,
        })
    }

    /// Records the answer to an open pending input. Answering twice is
    /// refused so that a second client cannot overwrite the first answer.
    pub async fn answer_pending_input(
        &self,
        id: SessionId,
        pending: PendingInputId,
        answer: &serde_json::Value,
    ) -> Result<PendingInput, StoreError> {
        let now = now_ms();
        let mut tx = self.pool.begin().await?;
        touch(&mut tx, id, now).await?;
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE pending_inputs SET answer = $1, answered_at_ms = $2
             WHERE id = $3 AND session_id = $4 AND answered_at_ms IS NULL
             RETURNING {PENDING_COLUMNS}"
        )))
        .bind(answer.to_string())
        .bind(now)
        .bind(pending.0)
        .bind(id.to_string())
        .fetch_optional(&mut *tx)
        .await?;
        let Some(row) = row else {
            let exists: Option<i64> = sqlx::query_scalar(
                "SELECT id FROM pending_inputs WHERE id = $1 AND session_id = $2",
            )
            .bind(pending.0)
            .bind(id.to_string())
            .fetch_optional(&mut *tx)
            .await?;
            return Err(match exists {
                Some(_) => StoreError::PendingInputAnswered {
                    session: id,
                    id: pending,
                },
                None => StoreError::PendingInputNotFound {
                    session: id,
                    id: pending,
                },
            });
        };
        let input = pending_from_row(&row)?;
        tx.commit().await?;
        Ok(input)
    }

    /// Pending inputs still waiting for an answer, oldest first.
    pub async fn open_pending_inputs(
        &self,
        id: SessionId,
    ) -> Result<Vec<PendingInput>, StoreError> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {PENDING_COLUMNS} FROM pending_inputs
             WHERE session_id = $1 AND answered_at_ms IS NULL ORDER BY id"
        )))
        .bind(id.to_string())
        .fetch_all(&self.pool)
        .await?;
        // Nothing pending is the common answer at a turn's start; only then
        // is the session looked up, so an unknown one is an error.
        if rows.is_empty() {
            self.load(id).await?;
        }
        rows.iter().map(pending_from_row).collect()
    }

    /// Every question the session's agent asked, answered or not, oldest
    /// first: what a view of its transcript shows as questions.
    pub async fn pending_inputs(&self, id: SessionId) -> Result<Vec<PendingInput>, StoreError> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {PENDING_COLUMNS} FROM pending_inputs WHERE session_id = $1 ORDER BY id"
        )))
        .bind(id.to_string())
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(pending_from_row).collect()
    }

    /// Adds one call's usage to the session total and returns the new total.
    pub async fn add_usage(&self, id: SessionId, usage: Usage) -> Result<Usage, StoreError> {
        let mut tx = self.pool.begin().await?;
        touch(&mut tx, id, now_ms()).await?;
        let total = add_usage_in(&mut tx, id, usage).await?;
        tx.commit().await?;
        Ok(total)
    }

    /// The session's usage total (zero before the first call).
    pub async fn usage(&self, id: SessionId) -> Result<Usage, StoreError> {
        self.load(id).await?;
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {USAGE_COLUMNS} FROM usage_totals WHERE session_id = $1"
        )))
        .bind(id.to_string())
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref()
            .map(usage_from_row)
            .transpose()
            .map(Option::unwrap_or_default)
    }

    /// Every session's own usage total, by id (sessions that made no
    /// model call are absent).
    pub async fn all_usage(
        &self,
    ) -> Result<std::collections::HashMap<SessionId, Usage>, StoreError> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT session_id, {USAGE_COLUMNS} FROM usage_totals"
        )))
        .fetch_all(&self.pool)
        .await?;
        let mut out = std::collections::HashMap::with_capacity(rows.len());
        for row in &rows {
            let id: String = row.try_get("session_id")?;
            let id = SessionId::from_str(&id).map_err(|_| StoreError::Corrupt {
                what: "usage session id",
                detail: id.clone(),
            })?;
            out.insert(id, usage_from_row(row)?);
        }
        Ok(out)
    }

    /// The usage of `id` and every session its dispatches opened, at any
    /// depth: what a session cost with its team.
    pub async fn tree_usage(&self, id: SessionId) -> Result<Usage, StoreError> {
        self.load(id).await?;
        // One walk for one session or a page of them (`tree_usages`).
        Ok(self
            .tree_usages(&[id])
            .await?
            .remove(&id)
            .unwrap_or_default())
    }
}

/// Appends `message` to `id`'s transcript inside the caller's transaction
/// (which touched the session). The sequence number is taken inside the
/// insert itself, so two writers never get the same one.
pub(crate) async fn insert_entry(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    id: SessionId,
    message: &Message,
    artifact: Option<&serde_json::Value>,
    now: i64,
) -> Result<TranscriptEntry, StoreError> {
    let body =
        serde_json::to_string(message).map_err(|e| StoreError::corrupt("transcript body", e))?;
    let seq: i64 = sqlx::query_scalar(
        "INSERT INTO transcript_entries (session_id, seq, role, body, artifact, created_at_ms)
         SELECT $1, COALESCE(MAX(seq), 0) + 1, $2, $3, $4, $5
         FROM transcript_entries WHERE session_id = $1
         RETURNING seq",
    )
    .bind(id.to_string())
    .bind(EntryRole::of(message).as_str())
    .bind(body)
    .bind(artifact.map(|a| a.to_string()))
    .bind(now)
    .fetch_one(&mut **tx)
    .await?;
    if let Message::User { content, .. } = message
        && let Some(title) =
            crate::finding::title_from(content, crate::finding::MESSAGE_TITLE_CHARS)
    {
        // Until a model or the user names it, a session is titled by its
        // first user message.
        sqlx::query(
            "UPDATE sessions SET title = $1, title_source = $2 WHERE id = $3 AND title IS NULL",
        )
        .bind(title)
        .bind(crate::finding::TitleSource::Message.as_str())
        .bind(id.to_string())
        .execute(&mut **tx)
        .await?;
    }
    Ok(TranscriptEntry {
        seq: to_u64("transcript seq", seq)?,
        created_at_ms: now,
        message: message.clone(),
        artifact: artifact.cloned(),
    })
}

/// Adds one call's `usage` to `id`'s total inside the caller's transaction
/// (which touched the session) and returns the new total.
pub(crate) async fn add_usage_in(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    id: SessionId,
    usage: Usage,
) -> Result<Usage, StoreError> {
    let row = sqlx::query(sqlx::AssertSqlSafe(format!(
        "INSERT INTO usage_totals (session_id, {USAGE_COLUMNS})
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
         ON CONFLICT (session_id) DO UPDATE SET
            requests = usage_totals.requests + excluded.requests,
            input_tokens = usage_totals.input_tokens + excluded.input_tokens,
            output_tokens = usage_totals.output_tokens + excluded.output_tokens,
            cache_read_tokens = usage_totals.cache_read_tokens + excluded.cache_read_tokens,
            cache_write_tokens = usage_totals.cache_write_tokens + excluded.cache_write_tokens,
            projected_results = usage_totals.projected_results + excluded.projected_results,
            projection_saved_chars = usage_totals.projection_saved_chars + excluded.projection_saved_chars,
            cost_picousd = usage_totals.cost_picousd + excluded.cost_picousd,
            unpriced_requests = usage_totals.unpriced_requests + excluded.unpriced_requests
         RETURNING {USAGE_COLUMNS}"
    )))
    .bind(id.to_string())
    .bind(to_i64(usage.requests)?)
    .bind(to_i64(usage.input_tokens)?)
    .bind(to_i64(usage.output_tokens)?)
    .bind(to_i64(usage.cache_read_tokens)?)
    .bind(to_i64(usage.cache_write_tokens)?)
    .bind(to_i64(usage.projected_results)?)
    .bind(to_i64(usage.projection_saved_chars)?)
    .bind(to_i64(usage.cost_usd.picos())?)
    .bind(to_i64(usage.unpriced_requests)?)
    .fetch_one(&mut **tx)
    .await?;
    usage_from_row(&row)
}

/// Bumps `updated_at_ms` of `id` and of every session above it (its
/// parent, the parent's parent, …) inside the caller's transaction,
/// failing with `store/session-not-found` for an unknown id. A delegated
/// child's work is its parent's activity: the session list, ordered by
/// last activity, moves the parent up while its child works (issue #48).
/// This is the one place activity is recorded. Being the first write, it
/// also takes the write lock before anything is read.
pub(crate) async fn touch(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    id: SessionId,
    now: i64,
) -> Result<(), StoreError> {
    // `UNION` (not `UNION ALL`) ends the walk on a corrupt cycle of parents.
    let done = sqlx::query(
        "UPDATE sessions SET updated_at_ms = \
         CASE WHEN updated_at_ms > $1 THEN updated_at_ms ELSE $1 END \
         WHERE id IN (WITH RECURSIVE up (id) AS (\
             SELECT CAST($2 AS TEXT) \
             UNION SELECT s.parent_id FROM sessions s JOIN up ON s.id = up.id \
             WHERE s.parent_id IS NOT NULL\
         ) SELECT id FROM up)",
    )
    .bind(now)
    .bind(id.to_string())
    .execute(&mut **tx)
    .await?;
    if done.rows_affected() == 0 {
        return Err(StoreError::SessionNotFound(id));
    }
    Ok(())
}

pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

fn roots_json(roots: &[PathBuf]) -> Result<String, StoreError> {
    serde_json::to_string(roots).map_err(|e| StoreError::corrupt("workspace", e))
}

pub(crate) fn to_u64(what: &'static str, v: i64) -> Result<u64, StoreError> {
    u64::try_from(v).map_err(|e| StoreError::corrupt(what, e))
}

pub(crate) fn to_i64(v: u64) -> Result<i64, StoreError> {
    i64::try_from(v).map_err(|e| StoreError::corrupt("usage", e))
}

pub(crate) fn session_from_row(row: &AnyRow) -> Result<Session, StoreError> {
    let id: String = row.try_get("id")?;
    let mode: String = row.try_get("mode")?;
    let workspace: String = row.try_get("workspace")?;
    let id = SessionId::from_str(&id).map_err(|e| StoreError::corrupt("session id", e))?;
    let mode = AppMode::from_str(&mode).map_err(|e| StoreError::corrupt("session mode", e))?;
    let roots: Vec<PathBuf> =
        serde_json::from_str(&workspace).map_err(|e| StoreError::corrupt("workspace", e))?;
    Ok(Session {
        id,
        workspace: Workspace::from_parts(mode, roots)?,
        lead: row.try_get("lead")?,
        model: row.try_get("model")?,
        graph_hash: row.try_get("graph_hash")?,
        parent: match (
            row.try_get::<Option<String>, _>("parent_id")?,
            row.try_get::<Option<String>, _>("parent_call_id")?,
        ) {
            (Some(id), Some(call_id)) => Some(SessionParent {
                session_id: SessionId::from_str(&id)
                    .map_err(|e| StoreError::corrupt("parent session id", e))?,
                call_id,
            }),
            _ => None,
        },
        title: row.try_get("title")?,
        surface: row
            .try_get::<String, _>("surface")?
            .parse()
            .map_err(|e| StoreError::corrupt("session surface", e))?,
        created_at_ms: row.try_get("created_at_ms")?,
        updated_at_ms: row.try_get("updated_at_ms")?,
    })
}

fn pending_from_row(row: &AnyRow) -> Result<PendingInput, StoreError> {
    let request: String = row.try_get("request")?;
    let answer: Option<String> = row.try_get("answer")?;
    let json = |s: &str| -> Result<serde_json::Value, StoreError> {
        serde_json::from_str(s).map_err(|e| StoreError::corrupt("pending input", e))
    };
    Ok(PendingInput {
        id: PendingInputId(row.try_get("id")?),
        tool_call_id: row.try_get("tool_call_id")?,
        request: serde_json::from_str(&request)
            .map_err(|e| StoreError::corrupt("pending input", e))?,
        answer: answer.as_deref().map(json).transpose()?,
        created_at_ms: row.try_get("created_at_ms")?,
        answered_at_ms: row.try_get("answered_at_ms")?,
    })
}

pub(crate) fn usage_from_row(row: &AnyRow) -> Result<Usage, StoreError> {
    let get = |col: &str| -> Result<u64, StoreError> { to_u64("usage", row.try_get(col)?) };
    Ok(Usage {
        requests: get("requests")?,
        input_tokens: get("input_tokens")?,
        output_tokens: get("output_tokens")?,
        cache_read_tokens: get("cache_read_tokens")?,
        cache_write_tokens: get("cache_write_tokens")?,
        projected_results: get("projected_results")?,
        projection_saved_chars: get("projection_saved_chars")?,
        cost_usd: evoflux_core::price::Usd::from_picos(get("cost_picousd")?),
        unpriced_requests: get("unpriced_requests")?,
    })
}

/// A `transcript_entries` row (`seq, body, artifact, created_at_ms`).
fn entry_from_row(row: &sqlx::any::AnyRow) -> Result<TranscriptEntry, StoreError> {
    let body: String = row.try_get("body")?;
    let artifact: Option<String> = row.try_get("artifact")?;
    Ok(TranscriptEntry {
        seq: to_u64("transcript seq", row.try_get("seq")?)?,
        created_at_ms: row.try_get("created_at_ms")?,
        message: serde_json::from_str(&body)
            .map_err(|e| StoreError::corrupt("transcript body", e))?,
        artifact: artifact
            .map(|a| serde_json::from_str(&a))
            .transpose()
            .map_err(|e| StoreError::corrupt("transcript artifact", e))?,
    })
}
