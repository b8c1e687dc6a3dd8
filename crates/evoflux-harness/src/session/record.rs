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
    /// Every session below this one, each after its parent (depth first,
    /// in the order they were dispatched), with how far below it runs:
    /// the dispatch tree when members delegate further.
    pub tree: Vec<TreeEntry>,
}

/// One session of a [`SessionRecord`]'s dispatch tree.
#[derive(Debug, Clone, Serialize)]
pub struct TreeEntry {
    /// 1 for a child of the shown session, 2 for its children, …
    pub depth: u32,
    pub session: Session,
}

/// The most sessions a record's tree lists: a tree is bounded by
/// `[teams] max_depth` and the turns' budgets, so more is a store that
/// something else wrote.
const MAX_TREE: usize = 10_000;

impl SessionRecord {
    pub async fn load(store: &Store, id: SessionId) -> Result<SessionRecord, StoreError> {
        let session = store.load(id).await?;
        let children = store.children_of(id).await?;
        Ok(SessionRecord {
            transcript: store.transcript(id).await?,
            pending_inputs: store.open_pending_inputs(id).await?,
            usage: store.usage(id).await?,
            usage_with_children: store.tree_usage(id).await?,
            tree: tree(store, id).await?,
            children,
            session,
        })
    }
}

/// The sessions below session `id`, depth first.
pub(super) async fn tree(store: &Store, id: SessionId) -> Result<Vec<TreeEntry>, StoreError> {
    let mut out = Vec::new();
    let mut stack: Vec<TreeEntry> = store
        .children_of(id)
        .await?
        .into_iter()
        .rev()
        .map(|s| TreeEntry {
            depth: 1,
            session: s,
        })
        .collect();
    while let Some(entry) = stack.pop() {
        if out.len() >= MAX_TREE {
            break;
        }
        let below = store.children_of(entry.session.id).await?;
        stack.extend(below.into_iter().rev().map(|s| TreeEntry {
            depth: entry.depth.saturating_add(1),
            session: s,
        }));
        out.push(entry);
    }
    Ok(out)
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
