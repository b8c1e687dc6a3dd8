//! A stored session as every front end shows it: the session, its durable
//! transcript (with the same artifact metadata live events carry), its
//! open questions, its usage and the children its dispatches opened.

use std::collections::HashMap;

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
        let mut totals = tree_totals(store, &sessions).await?;
        Ok(sessions
            .into_iter()
            .map(|session| SessionSummary {
                usage_with_children: totals.remove(&session.id).unwrap_or_default(),
                session,
            })
            .collect())
    }

    /// A page of the session list as [`Store::find_sessions`] orders it
    /// (by last activity, children after their parent, or what a search
    /// found), each with its usage and its children's.
    pub async fn find(
        store: &Store,
        query: &SessionQuery,
    ) -> Result<Vec<SessionSummary>, StoreError> {
        let page = store.find_sessions(query).await?;
        let mut totals = tree_totals(store, &store.list_sessions().await?).await?;
        Ok(page
            .into_iter()
            .map(|session| SessionSummary {
                usage_with_children: totals.remove(&session.id).unwrap_or_default(),
                session,
            })
            .collect())
    }
}

/// Each of `sessions`' usage with every session its dispatches opened.
async fn tree_totals(
    store: &Store,
    sessions: &[Session],
) -> Result<HashMap<SessionId, Usage>, StoreError> {
    let own = store.all_usage().await?;
    let parents: HashMap<SessionId, SessionId> = sessions
        .iter()
        .filter_map(|s| s.parent.as_ref().map(|p| (s.id, p.session_id)))
        .collect();
    let mut totals: HashMap<SessionId, Usage> = HashMap::new();
    for (id, usage) in &own {
        // The session itself and each of its ancestors. The walk is
        // bounded by the number of sessions, so a corrupt cycle of
        // parents cannot hang it.
        let mut at = Some(*id);
        for _ in 0..=sessions.len() {
            let Some(current) = at else { break };
            let total = totals.entry(current).or_default();
            *total = total.plus(usage);
            at = parents.get(&current).copied();
        }
    }
    Ok(totals)
}
