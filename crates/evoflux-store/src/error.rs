//! The store's one error type, with a stable diagnostic code per variant.

use std::path::PathBuf;

use evoflux_core::ids::SessionId;
use evoflux_core::{AppMode, Diagnostic};

use crate::pending::PendingInputId;

/// Everything that can go wrong reading or writing sessions.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot prepare the data directory `{}`: {source}", path.display())]
    DataDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot open the session database `{database}`: {source}")]
    Open {
        /// The SQLite file, or the PostgreSQL URL without its password.
        database: String,
        #[source]
        source: sqlx::Error,
    },
    #[error("cannot migrate the session database `{database}`: {source}")]
    Migrate {
        database: String,
        #[source]
        source: sqlx::migrate::MigrateError,
    },
    #[error("the database URL `{url}` cannot be used: {reason}")]
    DatabaseUrl { url: String, reason: String },
    #[error("session database error: {0}")]
    Database(#[from] sqlx::Error),
    #[error("no session {0}")]
    SessionNotFound(SessionId),
    #[error(
        "session {id} is a {persisted} session and cannot be resumed in {requested} mode: a session's mode is fixed when it is created; start a new session for {requested} mode"
    )]
    ModeMismatch {
        id: SessionId,
        persisted: AppMode,
        requested: AppMode,
    },
    #[error(
        "session {id} belongs to workspace [{}], not [{}]: a session's workspace is fixed when it is created; resume without a workspace or start a new session",
        join(persisted),
        join(requested)
    )]
    WorkspaceMismatch {
        id: SessionId,
        persisted: Vec<PathBuf>,
        requested: Vec<PathBuf>,
    },
    #[error("a coding session needs at least one repository path")]
    CodingWorkspaceEmpty,
    #[error("workspace path `{}` must be absolute", .0.display())]
    WorkspaceNotAbsolute(PathBuf),
    #[error("no pending input {id} in session {session}")]
    PendingInputNotFound {
        session: SessionId,
        id: PendingInputId,
    },
    #[error("pending input {id} in session {session} was already answered")]
    PendingInputAnswered {
        session: SessionId,
        id: PendingInputId,
    },
    #[error("the store export is unusable at line {line}: {detail}")]
    Transfer { line: usize, detail: String },
    #[error(
        "cannot import into `{database}`: it already holds rows (table `{table}`); import into a new, empty database"
    )]
    ImportIntoNonEmpty { database: String, table: String },
    #[error("the artifact store `{url}` cannot be used: {reason}")]
    ArtifactsUrl { url: String, reason: String },
    #[error("artifact store: {detail}")]
    Artifacts { detail: String },
    #[error("a session title needs at least one visible character")]
    TitleEmpty,
    #[error(
        "`{0}` is not a session list cursor: pass `<updated_at_ms>:<session id>` of the last session of the previous page"
    )]
    Cursor(String),
    #[error("corrupt row in the session database ({what}): {detail}")]
    Corrupt { what: &'static str, detail: String },
}

fn join(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

impl StoreError {
    /// The stable `area/kebab-name` code tests and clients match on.
    pub fn code(&self) -> &'static str {
        match self {
            StoreError::DataDir { .. } => "store/data-dir",
            StoreError::Open { .. } => "store/open-failed",
            StoreError::Migrate { .. } => "store/migration-failed",
            StoreError::DatabaseUrl { .. } => "store/database-url",
            StoreError::Database(_) => "store/database",
            StoreError::SessionNotFound(_) => "store/session-not-found",
            StoreError::ModeMismatch { .. } => "store/mode-mismatch",
            StoreError::WorkspaceMismatch { .. } => "store/workspace-mismatch",
            StoreError::CodingWorkspaceEmpty => "store/coding-workspace-empty",
            StoreError::WorkspaceNotAbsolute(_) => "store/workspace-not-absolute",
            StoreError::PendingInputNotFound { .. } => "store/pending-input-not-found",
            StoreError::PendingInputAnswered { .. } => "store/pending-input-answered",
            StoreError::Corrupt { .. } => "store/corrupt-row",
            StoreError::Transfer { .. } => "store/export-unusable",
            StoreError::ArtifactsUrl { .. } => "store/artifacts-url",
            StoreError::Artifacts { .. } => "store/artifacts",
            StoreError::ImportIntoNonEmpty { .. } => "store/import-not-empty",
            StoreError::TitleEmpty => "store/title-empty",
            StoreError::Cursor(_) => "store/cursor-invalid",
        }
    }

    pub fn to_diagnostic(&self) -> Diagnostic {
        let d = Diagnostic::error(self.code(), self.to_string());
        match self {
            StoreError::DataDir { path, .. } | StoreError::WorkspaceNotAbsolute(path) => {
                d.with_file(path.clone())
            }
            StoreError::Open { database, .. } | StoreError::Migrate { database, .. } => {
                d.with_file(PathBuf::from(database))
            }
            StoreError::DatabaseUrl { .. } => d.with_field("store.url"),
            StoreError::ArtifactsUrl { .. } => d.with_field("store.artifacts"),
            StoreError::ModeMismatch { .. } => d.with_field("mode"),
            StoreError::TitleEmpty => d.with_field("title"),
            StoreError::Cursor(_) => d.with_field("before"),
            StoreError::WorkspaceMismatch { .. } | StoreError::CodingWorkspaceEmpty => {
                d.with_field("workspace")
            }
            StoreError::Database(_)
            | StoreError::SessionNotFound(_)
            | StoreError::PendingInputNotFound { .. }
            | StoreError::PendingInputAnswered { .. }
            | StoreError::Corrupt { .. }
            | StoreError::Transfer { .. }
            | StoreError::Artifacts { .. }
            | StoreError::ImportIntoNonEmpty { .. } => d,
        }
    }

    pub(crate) fn corrupt(what: &'static str, detail: impl std::fmt::Display) -> StoreError {
        StoreError::Corrupt {
            what,
            detail: detail.to_string(),
        }
    }
}
