//! What a session's tree has used, kept in memory between store reads.
//!
//! `turn_completed` reports the turn's usage and the session's (children
//! included), and `[limits] max_cost_usd` is checked before every model
//! call. Reading the tree from the store each time costs a recursive query
//! per check, which a turn against a fast model notices. The ledger reads
//! the tree once, then adds each call this harness records; once the
//! session has dispatched a child, whose calls reach the store from
//! elsewhere (a background task keeps spending after its tool call
//! returned), it reads the store every time.

use evoflux_core::ids::SessionId;
use evoflux_core::price::{Price, Usd};
use evoflux_model::Request;
use evoflux_store::{Store, StoreError, Usage};

/// Whether a call made beside the turn's own loop (the session's title,
/// an MCP server's sampling request), priced at its worst
/// ([`super::title::worst_cost`]), keeps the tree of `root` within
/// `limit` (`[limits] max_cost_usd`); always without a limit or a price.
/// It reads the store: such a call may run while the turn records its own.
pub(super) async fn side_call_within_limit(
    store: &Store,
    root: SessionId,
    limit: Option<Usd>,
    price: Option<&Price>,
    request: &Request,
) -> Result<bool, StoreError> {
    let (Some(limit), Some(price)) = (limit, price) else {
        return Ok(true);
    };
    let spent = store.tree_usage(root).await?;
    Ok(spent
        .cost_usd
        .saturating_add(super::title::worst_cost(price, request))
        <= limit)
}

#[derive(Debug, Default)]
pub(super) struct UsageLedger {
    /// The tree's total as last read plus what was recorded since; `None`
    /// until the first read, and for good once a child was dispatched.
    known: Option<Usage>,
    dispatched: bool,
    /// The tree's total when the current turn started.
    turn_start: Usage,
}

impl UsageLedger {
    /// A call this session made, already added to the store.
    pub(super) fn recorded(&mut self, usage: &Usage) {
        if let Some(known) = &mut self.known {
            *known = known.plus(usage);
        }
    }

    /// A child is about to run: its calls are recorded by its own harness.
    pub(super) fn dispatching(&mut self) {
        self.dispatched = true;
        self.known = None;
    }

    /// The session's usage with every session it dispatched.
    pub(super) async fn tree(
        &mut self,
        store: &Store,
        id: SessionId,
    ) -> Result<Usage, evoflux_store::StoreError> {
        if let Some(known) = self.known {
            return Ok(known);
        }
        let read = store.tree_usage(id).await?;
        if !self.dispatched {
            self.known = Some(read);
        }
        Ok(read)
    }

    pub(super) async fn start_turn(
        &mut self,
        store: &Store,
        id: SessionId,
    ) -> Result<(), evoflux_store::StoreError> {
        self.turn_start = self.tree(store, id).await?;
        Ok(())
    }

    /// The turn's usage and the session's, as `turn_completed` reports them.
    pub(super) async fn end_turn(
        &mut self,
        store: &Store,
        id: SessionId,
    ) -> Result<(Usage, Usage), evoflux_store::StoreError> {
        let session = self.tree(store, id).await?;
        Ok((session.since(&self.turn_start), session))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(input: u64) -> Usage {
        Usage {
            requests: 1,
            input_tokens: input,
            ..Usage::default()
        }
    }

    #[tokio::test]
    async fn reads_once_then_counts_in_memory_until_a_child_is_dispatched() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).await.unwrap();
        let s = store
            .create_session(evoflux_store::NewSession {
                workspace: evoflux_store::WorkspaceRequest::Work,
                lead: None,
                model: None,
                parent: None,
                graph_hash: None,
            })
            .await
            .unwrap();
        let mut ledger = UsageLedger::default();
        ledger.start_turn(&store, s.id).await.unwrap();
        for input in [10, 20] {
            let u = call(input);
            store.add_usage(s.id, u).await.unwrap();
            ledger.recorded(&u);
        }
        // Written behind the ledger's back: not seen while it trusts memory.
        store.add_usage(s.id, call(1_000)).await.unwrap();
        let (turn, session) = ledger.end_turn(&store, s.id).await.unwrap();
        assert_eq!((turn.input_tokens, turn.requests), (30, 2));
        assert_eq!(session.input_tokens, 30);

        // After a dispatch every answer comes from the store.
        ledger.start_turn(&store, s.id).await.unwrap();
        ledger.dispatching();
        let u = call(5);
        store.add_usage(s.id, u).await.unwrap();
        ledger.recorded(&u);
        let (turn, session) = ledger.end_turn(&store, s.id).await.unwrap();
        assert_eq!(session.input_tokens, 1_035);
        assert_eq!(turn.input_tokens, 1_005);
    }
}
