//! Keeping the data directory to `[storage]`: old sessions, sessions past
//! the size budget and folders no session owns are pruned at most once a
//! day. An explicit step of its own, never a side effect of opening a
//! session: a front end takes it where it starts sessions (`run`, `chat`
//! and `sessions resume`, a session the server or an editor opens, a
//! scheduled run, a fleet run), before it opens one, so the data directory
//! keeps to `[storage]` without anyone pruning by hand. `evoflux sessions
//! prune` is the same pruning on demand.

use evoflux_store::Store;

use crate::{AppContext, SessionError};

/// A retention policy ([`AppContext::retention`]), and what pruning a
/// store to one removed (`Store::prune`).
pub use evoflux_store::{Pruned, Retention};

impl AppContext {
    /// The retention policy of the data directory: `[storage]` of the
    /// admin's and the user's config ([`AppContext::storage`]), which the
    /// automatic prune keeps to and `evoflux sessions prune` applies when
    /// it is given no limits of its own.
    pub fn retention(&self) -> Result<Retention, SessionError> {
        self.storage().map(Retention::from)
    }

    /// Applies `[storage]` of the admin's and the user's config
    /// ([`AppContext::storage`]; a repository has no say in it) to `store`
    /// when the last automatic prune is a day old or more. It never stops
    /// what the front end does next: a prune that fails is logged, and a
    /// config that does not load prunes nothing (the session it opens
    /// reports it).
    pub async fn prune_if_due(&self, store: &Store) {
        let Ok(policy) = self.retention() else {
            return;
        };
        if let Err(e) = store.prune_if_due(&policy).await {
            tracing::warn!(error = %e, "automatic pruning of the data directory failed");
        }
    }
}
