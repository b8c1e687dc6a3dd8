//! Delegation depth: where a session sits in its tree of dispatches, and
//! the one admission rule for handing a task further down it.
//!
//! The session the user started is at depth 0; a session it dispatches is
//! at depth 1, and so on down to `[teams] max_depth`. Two dispatches are
//! refused, each with its own code the model reads as the call's result:
//! one that would go deeper than the limit ([`DEPTH_LIMIT`]), and one that
//! hands the task to an agent already on the path from the root
//! ([`CYCLE`]) — a member asking its own caller would loop until the
//! budget runs out. The one exception is the self-delegated root: the
//! user's lead may hand a task to a fresh copy of itself, as it always
//! could. A session at the last level is not offered the delegation tool
//! at all ([`Lineage::last_level`]), so the model never sees a tool that
//! cannot run.

/// A dispatch that would go deeper than `[teams] max_depth`.
pub const DEPTH_LIMIT: &str = "dispatch/depth-limit";
/// A dispatch to an agent already on the dispatch path.
pub const CYCLE: &str = "dispatch/cycle";

/// Where a session sits in its tree of dispatches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lineage {
    /// The agents of the sessions above this one, the root's first.
    above: Vec<String>,
    /// `[teams] max_depth`: the deepest level a child may run at.
    max_depth: u32,
}

/// Whom a dispatch hands its task to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Callee<'a> {
    /// A fresh copy of the dispatching agent itself.
    SelfCopy,
    /// A member, worker or external agent, by the name it runs as.
    Named(&'a str),
}

/// Why a dispatch is refused before anything runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The child would run deeper than `max_depth`.
    DepthLimit { depth: u32, max_depth: u32 },
    /// `agent` already runs on the path (`path`, root first).
    Cycle { agent: String, path: Vec<String> },
}

impl Refusal {
    /// The stable code of the refusal.
    pub fn code(&self) -> &'static str {
        match self {
            Refusal::DepthLimit { .. } => DEPTH_LIMIT,
            Refusal::Cycle { .. } => CYCLE,
        }
    }

    /// Why, and what to do instead.
    pub fn reason(&self) -> String {
        match self {
            Refusal::DepthLimit { depth, max_depth } => format!(
                "a child of this session would run at depth {depth}, deeper than [teams] \
                 max_depth = {max_depth}: do the task yourself"
            ),
            Refusal::Cycle { agent, path } => format!(
                "`{agent}` is already on the dispatch path ({}): an agent cannot be handed a \
                 task below itself; do the task yourself or hand it to another agent",
                path.join(" → "),
            ),
        }
    }

    /// What the model reads as the call's result: the reason and the code.
    pub fn message(&self) -> String {
        format!("{} [{}]", self.reason(), self.code())
    }
}

impl Lineage {
    /// The lineage of a session the user started (depth 0).
    pub fn root(max_depth: u32) -> Lineage {
        Lineage {
            above: Vec::new(),
            max_depth,
        }
    }

    /// How many dispatches below the root this session runs.
    pub fn depth(&self) -> u32 {
        u32::try_from(self.above.len()).unwrap_or(u32::MAX)
    }

    /// The lineage of a child that the session running `agent` dispatches.
    pub fn below(&self, agent: &str) -> Lineage {
        let mut above = self.above.clone();
        above.push(agent.to_owned());
        Lineage {
            above,
            max_depth: self.max_depth,
        }
    }

    /// Why a session at this lineage is not offered its delegation tool —
    /// it is at the last level `max_depth` allows — or `None` when it may
    /// still dispatch.
    pub fn last_level(&self) -> Option<Refusal> {
        let depth = self.depth().saturating_add(1);
        (depth > self.max_depth).then_some(Refusal::DepthLimit {
            depth,
            max_depth: self.max_depth,
        })
    }

    /// The admission rule: may the session running `me` at this lineage
    /// hand a task to `callee`?
    pub fn admit(&self, me: &str, callee: Callee<'_>) -> Result<(), Refusal> {
        if let Some(refused) = self.last_level() {
            return Err(refused);
        }
        let agent = match callee {
            // The self-delegated root: the user's lead may run a copy.
            Callee::SelfCopy if self.above.is_empty() => return Ok(()),
            Callee::SelfCopy => me,
            Callee::Named(name) => name,
        };
        let mut path = self.above.clone();
        path.push(me.to_owned());
        if path.iter().any(|a| a == agent) {
            return Err(Refusal::Cycle {
                agent: agent.to_owned(),
                path,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_member_may_dispatch_down_to_max_depth_and_no_further() {
        let root = Lineage::root(2);
        assert_eq!(root.depth(), 0);
        assert_eq!(root.admit("lead", Callee::Named("planner")), Ok(()));
        let member = root.below("lead");
        assert_eq!(member.depth(), 1);
        assert_eq!(member.last_level(), None);
        assert_eq!(member.admit("planner", Callee::Named("coder")), Ok(()));
        let grandchild = member.below("planner");
        assert_eq!(grandchild.depth(), 2);
        let refused = grandchild
            .admit("coder", Callee::Named("tester"))
            .unwrap_err();
        assert_eq!(refused.code(), DEPTH_LIMIT);
        assert_eq!(
            refused,
            Refusal::DepthLimit {
                depth: 3,
                max_depth: 2
            }
        );
        assert_eq!(grandchild.last_level(), Some(refused));
    }

    #[test]
    fn depth_one_keeps_todays_rule_only_the_lead_dispatches() {
        let root = Lineage::root(1);
        assert_eq!(root.last_level(), None);
        let member = root.below("lead");
        assert_eq!(member.last_level().map(|r| r.code()), Some(DEPTH_LIMIT));
        assert_eq!(
            member
                .admit("planner", Callee::Named("coder"))
                .unwrap_err()
                .code(),
            DEPTH_LIMIT
        );
    }

    #[test]
    fn an_agent_on_the_path_is_never_dispatched_below_itself() {
        let member = Lineage::root(4).below("lead");
        // Back to itself, and back to its caller.
        for callee in [
            Callee::Named("planner"),
            Callee::SelfCopy,
            Callee::Named("lead"),
        ] {
            let refused = member.admit("planner", callee).unwrap_err();
            assert_eq!(refused.code(), CYCLE, "{callee:?}");
            let message = refused.message();
            assert!(message.contains("lead → planner"), "{message}");
        }
        // Two levels down, the root's member is still on the path.
        let deeper = member.below("planner");
        assert_eq!(
            deeper
                .admit("coder", Callee::Named("planner"))
                .unwrap_err()
                .code(),
            CYCLE
        );
        assert_eq!(deeper.admit("coder", Callee::Named("tester")), Ok(()));
    }

    #[test]
    fn the_root_lead_may_still_run_a_fresh_copy_of_itself() {
        let root = Lineage::root(2);
        assert_eq!(root.admit("lead", Callee::SelfCopy), Ok(()));
        assert_eq!(
            root.admit("lead", Callee::Named("lead"))
                .unwrap_err()
                .code(),
            CYCLE
        );
    }
}
