//! A stored session as every front end shows it: the session, its durable
//! transcript (with the same artifact metadata live events carry), its
//! open questions, its usage and the children its dispatches opened.

use evoflux_core::ids::SessionId;
use evoflux_store::{PendingInput, Session, Store, StoreError, TranscriptEntry, Usage};
use serde::Serialize;

/// `evoflux sessions show --json` and `GET /api/sessions/{id}`.
#[derive(Debug, Clone, Serialize)]
pub struct SessionRecord {
    pub session: Session,
    pub transcript: Vec<TranscriptEntry>,
    pub pending_inputs: Vec<PendingInput>,
    pub usage: Usage,
    pub children: Vec<Session>,
}

impl SessionRecord {
    pub async fn load(store: &Store, id: SessionId) -> Result<SessionRecord, StoreError> {
        let session = store.load(id).await?;
        Ok(SessionRecord {
            transcript: store.transcript(id).await?,
            pending_inputs: store.open_pending_inputs(id).await?,
            usage: store.usage(id).await?,
            children: store.children_of(id).await?,
            session,
        })
    }
}
