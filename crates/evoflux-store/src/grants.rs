//! Approval grants: a user's "always for this session" and "always in this
//! workspace" answers, kept with the session so a resumed session and the
//! next session in the workspace honour them.

use evoflux_core::ids::SessionId;
use serde::{Deserialize, Serialize};
use sqlx::Row;

use crate::error::StoreError;
use crate::session::Workspace;
use crate::store::{Store, now_ms};

/// How far a grant reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GrantScope {
    Session,
    Workspace,
}

impl GrantScope {
    const fn as_str(self) -> &'static str {
        match self {
            GrantScope::Session => "session",
            GrantScope::Workspace => "workspace",
        }
    }
}

/// What a grant lets run without asking.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct GrantKey {
    pub tool: String,
    /// For a shell command: its program, or the whole command line when it
    /// is not a simple command. `None` for other tools.
    pub command: Option<String>,
}

/// The key a workspace's grants are stored under: its roots, sorted.
fn workspace_key(workspace: &Workspace) -> String {
    let mut roots: Vec<String> = workspace
        .roots()
        .iter()
        .map(|r| r.display().to_string())
        .collect();
    roots.sort();
    roots.join("\n")
}

impl Store {
    /// Records one grant of `session` (in its workspace for a workspace
    /// grant).
    pub async fn add_approval_grant(
        &self,
        session: SessionId,
        workspace: &Workspace,
        scope: GrantScope,
        key: &GrantKey,
    ) -> Result<(), StoreError> {
        let scope_key = match scope {
            GrantScope::Session => session.to_string(),
            GrantScope::Workspace => workspace_key(workspace),
        };
        sqlx::query(
            "INSERT INTO approval_grants (scope, scope_key, tool, command, created_at_ms) \
             VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(scope.as_str())
        .bind(scope_key)
        .bind(&key.tool)
        .bind(key.command.as_deref())
        .bind(now_ms())
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// Every grant that applies to `session`: its own and its workspace's.
    pub async fn approval_grants(
        &self,
        session: SessionId,
        workspace: &Workspace,
    ) -> Result<Vec<GrantKey>, StoreError> {
        let rows = sqlx::query(
            "SELECT tool, command FROM approval_grants \
             WHERE (scope = 'session' AND scope_key = $1) OR (scope = 'workspace' AND scope_key = $2) \
             ORDER BY id",
        )
        .bind(session.to_string())
        .bind(workspace_key(workspace))
        .fetch_all(self.pool())
        .await?;
        rows.iter()
            .map(|r| {
                Ok(GrantKey {
                    tool: r.try_get("tool")?,
                    command: r.try_get("command")?,
                })
            })
            .collect()
    }
}
