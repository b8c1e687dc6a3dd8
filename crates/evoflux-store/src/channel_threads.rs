//! Channel threads: which session a user channel's route continues for a
//! rendered `session` key.

use evoflux_core::ids::SessionId;
use sqlx::Row;

use crate::error::StoreError;
use crate::store::{Store, now_ms};

impl Store {
    /// The session `route` opened for `thread`, if it still exists.
    pub async fn channel_thread(
        &self,
        route: &str,
        thread: &str,
    ) -> Result<Option<SessionId>, StoreError> {
        let row =
            sqlx::query("SELECT session_id FROM channel_threads WHERE route = $1 AND thread = $2")
                .bind(route)
                .bind(thread)
                .fetch_optional(self.pool())
                .await?;
        let Some(row) = row else { return Ok(None) };
        let id: String = row.try_get("session_id")?;
        Ok(id.parse().ok())
    }

    /// Records that `session` serves `thread` of `route`. When another
    /// request recorded one first, that one is kept and returned, so two
    /// racing requests end in one session.
    pub async fn claim_channel_thread(
        &self,
        route: &str,
        thread: &str,
        session: SessionId,
    ) -> Result<SessionId, StoreError> {
        sqlx::query(
            "INSERT INTO channel_threads (route, thread, session_id, created_at_ms) \
             VALUES ($1, $2, $3, $4) ON CONFLICT (route, thread) DO NOTHING",
        )
        .bind(route)
        .bind(thread)
        .bind(session.to_string())
        .bind(now_ms())
        .execute(self.pool())
        .await?;
        Ok(self.channel_thread(route, thread).await?.unwrap_or(session))
    }
}
