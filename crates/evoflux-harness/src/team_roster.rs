//! The lead's roster in the system prompt: who it can hand tasks to with
//! its `agent` tool. Rendered once per session from the same lists the
//! tool's `agent_id` enum is bound to, in a fixed order, so the section is
//! byte-stable across turns (it stays in the prompt cache) and adding a
//! member file is all it takes to route to it.

use crate::hooks::{Hook, HookContext, HookFuture, ModelCall, SystemSection};

pub const OWNER: &str = "team-roster";

/// How to hand work to members, for the lead.
const MEMBERS_RULE: &str = "Hand a task to a member of your team with the `agent` tool \
(agent_id = its name). The member sees only the message you give it, so write the whole task; \
its final answer comes back as the tool result. Do the work yourself when it is small or needs \
this conversation.";

/// The roster section: members (name and description, in roster order),
/// then the worker fleet as the worker roster renders it.
pub fn render(
    members: &[(String, String)],
    workers: &[evoflux_agents::worker::spec::AgentSpec],
) -> String {
    let mut out = String::new();
    if !members.is_empty() {
        out.push_str("# Team\n");
        out.push_str(MEMBERS_RULE);
        out.push('\n');
        for (name, description) in members {
            out.push_str(&format!("- {name}: {description}\n"));
        }
    }
    let fleet = evoflux_agents::worker::roster::render_roster(workers);
    if !fleet.is_empty() {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&fleet);
    }
    out
}

/// Whether the agent may hand tasks to its team: one of its tools
/// dispatches to an agent of the team.
pub fn delegates(
    agent: &evoflux_agents::team::EffectiveAgentConfig,
    catalog: &evoflux_agents::ToolCatalog,
) -> bool {
    agent.tools.iter().any(|t| {
        catalog.get(t).is_some_and(|d| {
            matches!(
                d.behavior.handling,
                evoflux_graph::tool::Handling::Dispatch {
                    action: evoflux_graph::tool::DispatchAction::SelfAgent
                }
            )
        })
    })
}

/// Adds the roster hook, with the rendered roster, to the pipeline.
pub fn register(
    pipeline: &mut crate::hooks::HookPipeline,
    roster: String,
) -> Result<(), crate::hooks::HookError> {
    pipeline.add(
        crate::hooks::HookStage::Capability,
        OWNER,
        TeamRosterHook::new(roster),
    )?;
    Ok(())
}

/// Adds the rendered roster to every model call of the lead.
#[derive(Debug)]
pub struct TeamRosterHook {
    text: String,
}

impl TeamRosterHook {
    pub fn new(text: String) -> TeamRosterHook {
        TeamRosterHook { text }
    }
}

impl Hook for TeamRosterHook {
    fn before_model<'a>(
        &'a self,
        _ctx: &'a HookContext<'a>,
        call: &'a mut ModelCall,
    ) -> HookFuture<'a> {
        if !self.text.is_empty() {
            call.system.push(SystemSection {
                owner: OWNER,
                text: self.text.clone(),
            });
        }
        Box::pin(async { Ok(()) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_roster_lists_members_in_order_and_is_stable() {
        let members = vec![
            ("researcher".to_owned(), "Finds facts.".to_owned()),
            ("writer".to_owned(), "Writes reports.".to_owned()),
        ];
        let a = render(&members, &[]);
        assert_eq!(a, render(&members, &[]));
        assert!(a.starts_with("# Team\n"));
        assert!(a.ends_with("- researcher: Finds facts.\n- writer: Writes reports.\n"));
        assert_eq!(render(&[], &[]), "");
    }
}
