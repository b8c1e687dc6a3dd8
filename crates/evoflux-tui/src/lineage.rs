//! How a front end words where a delegated session sits in its tree of
//! dispatches: the chain of agents from the session the user started down
//! to the child ("evoflux → planner → coder"), on a line one step in from
//! the call that opened it, with the child's own calls one step further
//! in. The full-screen transcript and the line chat (`evoflux run`'s
//! printer) both word and indent their dispatch lines here, so a depth-2
//! dispatch reads the same in each.

use std::collections::HashMap;

/// Between two agents of a chain.
pub const ARROW: &str = " → ";

/// `agents` as one chain, the session the user started first.
pub fn chain(agents: &[String]) -> String {
    agents.join(ARROW)
}

/// The indent of a line `level` steps in (two columns a step).
pub fn indent(level: usize) -> String {
    "  ".repeat(level)
}

/// The step a dispatch's line is at, for a child `depth` levels below the
/// session the user started: one step in from the call that opened it.
pub fn dispatch_step(depth: u32) -> usize {
    session_step(depth).saturating_sub(1)
}

/// The step the lines of a session `depth` levels down are at (its calls,
/// what they said): one step in from its dispatch line, so a child's calls
/// sit under the line that names it, and its own dispatches under those.
pub fn session_step(depth: u32) -> usize {
    (depth as usize).saturating_mul(2)
}

/// The chain of each session of a run by its id, grown from dispatch
/// events' `parent_session_id`: for a printer that sees the events of
/// every level flattened, one after another, and so cannot tell from
/// their nesting alone which child a line belongs to.
#[derive(Debug, Default)]
pub struct Chains {
    by_session: HashMap<String, Vec<String>>,
}

impl Chains {
    /// The session the user started, run by `lead`.
    pub fn started(&mut self, session_id: &str, lead: &str) {
        self.by_session
            .insert(session_id.to_owned(), vec![lead.to_owned()]);
    }

    /// `parent` dispatched `agent` as session `child`: the child's chain,
    /// its parent's (when known) with `agent` after it.
    pub fn dispatched(&mut self, parent: &str, child: &str, agent: &str) -> Vec<String> {
        let mut chain = self.by_session.get(parent).cloned().unwrap_or_default();
        chain.push(agent.to_owned());
        self.by_session.insert(child.to_owned(), chain.clone());
        chain
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chain_follows_the_parents_down_from_the_lead() {
        let mut c = Chains::default();
        c.started("s0", "evoflux");
        assert_eq!(
            chain(&c.dispatched("s0", "s1", "planner")),
            "evoflux → planner"
        );
        assert_eq!(
            chain(&c.dispatched("s1", "s2", "coder")),
            "evoflux → planner → coder"
        );
        // A sibling of the planner starts again below the lead.
        assert_eq!(
            chain(&c.dispatched("s0", "s3", "tester")),
            "evoflux → tester"
        );
        // A parent it never saw: the chain starts at the child.
        assert_eq!(chain(&c.dispatched("elsewhere", "s4", "x")), "x");
        assert_eq!(indent(2), "    ");
        assert_eq!(indent(0), "");
        // The lead's calls at 0, the planner's line at 1 and its calls at
        // 2, the coder's line at 3 and its calls at 4.
        assert_eq!(
            (session_step(0), dispatch_step(1), session_step(1)),
            (0, 1, 2)
        );
        assert_eq!((dispatch_step(2), session_step(2)), (3, 4));
    }
}
