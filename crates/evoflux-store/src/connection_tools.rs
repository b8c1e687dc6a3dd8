//! The MCP tools a session activated through `connection_search`: one row
//! per tool, the sole durable record of the session's discovered tools.

use evoflux_core::ids::SessionId;
use serde::{Deserialize, Serialize};
use sqlx::Row;

use crate::error::StoreError;
use crate::store::{Store, now_ms};

/// One MCP tool by its stable identity: the server's owner label, the
/// server's name and the tool's name as the server lists it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ConnectionTool {
    pub owner: String,
    pub server: String,
    pub tool: String,
}

impl Store {
    /// Records that `session` activated `tools`; activating one twice
    /// keeps its first time.
    pub async fn activate_connection_tools(
        &self,
        session: SessionId,
        tools: &[ConnectionTool],
    ) -> Result<(), StoreError> {
        let mut tx = self.pool().begin().await?;
        let now = now_ms();
        for t in tools {
            sqlx::query(
                "INSERT INTO connection_tools \
                 (session_id, owner, server, tool, activated_at_ms) VALUES ($1, $2, $3, $4, $5) \
                 ON CONFLICT (session_id, owner, server, tool) DO NOTHING",
            )
            .bind(session.to_string())
            .bind(&t.owner)
            .bind(&t.server)
            .bind(&t.tool)
            .bind(now)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// The tools `session` activated, in activation order.
    pub async fn connection_tools(
        &self,
        session: SessionId,
    ) -> Result<Vec<ConnectionTool>, StoreError> {
        let rows = sqlx::query(
            "SELECT owner, server, tool FROM connection_tools WHERE session_id = $1 \
             ORDER BY activated_at_ms, owner, server, tool",
        )
        .bind(session.to_string())
        .fetch_all(self.pool())
        .await?;
        rows.iter()
            .map(|r| {
                Ok(ConnectionTool {
                    owner: r.try_get("owner")?,
                    server: r.try_get("server")?,
                    tool: r.try_get("tool")?,
                })
            })
            .collect()
    }
}
