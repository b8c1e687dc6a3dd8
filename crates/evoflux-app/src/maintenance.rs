//! Keeping the data directory to `[storage]`: old sessions, sessions past
//! the size budget and folders no session owns are pruned at most once a
//! day. An explicit step of its own, never a side effect of opening a
//! session: a front end takes it where it starts sessions (`run`, `chat`
//! and `sessions resume`, a session the server or an editor opens, a
//! scheduled run, a fleet run), before it opens one, so the data directory
//! keeps to `[storage]` without anyone pruning by hand. `evoflux sessions
//! prune` is the same pruning on demand.

use evoflux_store::{Retention, Store};

use crate::AppContext;

impl AppContext {
    /// Applies `[storage]` of the admin's and the user's config
    /// ([`AppContext::storage`]; a repository has no say in it) to `store`
    /// when the last automatic prune is a day old or more. It never stops
    /// what the front end does next: a prune that fails is logged, and a
    /// config that does not load prunes nothing (the session it opens
    /// reports it).
    pub async fn prune_if_due(&self, store: &Store) {
        let Ok(storage) = self.storage() else {
            return;
        };
        if let Err(e) = store.prune_if_due(&Retention::from(storage)).await {
            tracing::warn!(error = %e, "automatic pruning of the data directory failed");
        }
    }
}
