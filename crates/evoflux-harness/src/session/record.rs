//! A stored session as every front end shows it: the session, its durable
//! transcript (with the same artifact metadata live events carry), its
//! open questions, its usage and the children its dispatches opened.

use evoflux_core::ids::SessionId;
use evoflux_store::{
    PendingInput, Session, SessionQuery, Store, StoreError, TranscriptEntry, Usage,
};
use serde::Serialize;

/// `evoflux sessions show --json` and `GET /api/sessions/{id}`.
#[derive(Debug, Clone, Serialize)]
pub struct SessionRecord {
    pub session: Session,
    pub transcript: Vec<TranscriptEntry>,
    pub pending_inputs: Vec<PendingInput>,
    /// This session's own model calls.
    pub usage: Usage,
    /// With every session its dispatches opened: what it cost in all.
    pub usage_with_children: Usage,
    pub children: Vec<Session>,
}

impl SessionRecord {
    pub async fn load(store: &Store, id: SessionId) -> Result<SessionRecord, StoreError> {
        let session = store.load(id).await?;
        Ok(SessionRecord {
            transcript: store.transcript(id).await?,
            pending_inputs: store.open_pending_inputs(id).await?,
            usage: store.usage(id).await?,
            usage_with_children: store.tree_usage(id).await?,
            children: store.children_of(id).await?,
            session,
        })
    }
}

/// One row of `evoflux sessions list`: the session and what it cost.
#[derive(Debug, Clone, Serialize)]
pub struct SessionSummary {
    #[serde(flatten)]
    pub session: Session,
    /// With every session its dispatches opened.
    pub usage_with_children: Usage,
}

impl SessionSummary {
    /// Every session, newest first, each with its usage and its
    /// children's (two queries, however many sessions there are).
    pub async fn list(store: &Store) -> Result<Vec<SessionSummary>, StoreError> {
        let sessions = store.list_sessions().await?;
        with_totals(store, sessions).await
    }

    /// A page of the session list as [`Store::find_sessions`] orders it
    /// (by last activity, children after their parent, or what a search
    /// found), each with its usage and its children's: two queries, the
    /// totals only of the page's sessions and the sessions below them.
    pub async fn find(
        store: &Store,
        query: &SessionQuery,
    ) -> Result<Vec<SessionSummary>, StoreError> {
        let page = store.find_sessions(query).await?;
        with_totals(store, page).await
    }
}

/// `sessions`, each with its usage and that of every session its
/// dispatches opened ([`Store::tree_usages`], one query).
async fn with_totals(
    store: &Store,
    sessions: Vec<Session>,
) -> Result<Vec<SessionSummary>, StoreError> {
    let ids: Vec<SessionId> = sessions.iter().map(|s| s.id).collect();
    let mut totals = store.tree_usages(&ids).await?;
    Ok(sessions
        .into_iter()
        .map(|session| SessionSummary {
            usage_with_children: totals.remove(&session.id).unwrap_or_default(),
            session,
        })
        .collect())
}
