//! The agents of each mode as every front end lists them (`evoflux agents
//! list`, `GET /api/agents`): who leads, who is whose member, whether each
//! file is valid, where it came from, and its effective configuration from
//! the same compiler the runtime uses.

use evoflux_core::{AppMode, Diagnostics};
use evoflux_graph::CompiledGraph;
use serde::Serialize;

use super::{
    AgentDirectory, AgentSource, EffectiveAgentConfig, Role, compile_agent_config, load_agents,
    qualified_name,
};
use crate::ToolCatalog;

/// One mode's agents.
#[derive(Debug, Clone, Serialize)]
pub struct ModeListing {
    pub mode: AppMode,
    pub default_lead: Option<String>,
    pub leads: Vec<String>,
    pub agents: Vec<AgentRow>,
}

/// One agent of a listing.
#[derive(Debug, Clone, Serialize)]
pub struct AgentRow {
    pub name: String,
    pub qualified_name: String,
    pub role: Option<Role>,
    /// The lead this agent belongs to (members) or `None` (leads).
    pub lead: Option<String>,
    pub valid: bool,
    pub description: String,
    pub source: AgentSource,
    /// What a session would run it with; `None` for a file that does not
    /// parse.
    pub effective: Option<EffectiveAgentConfig>,
}

/// The agents of `mode`; with `lead`, only that lead's team (an unknown
/// lead lists nothing and is reported in `diags`).
pub fn list_agents(
    graph: &CompiledGraph,
    tools: &ToolCatalog,
    mode: AppMode,
    lead: Option<&str>,
    diags: &mut Diagnostics,
) -> ModeListing {
    let dir = load_agents(graph, mode, diags);
    ModeListing {
        mode,
        default_lead: dir.default_lead.clone(),
        leads: dir.leads().iter().map(|s| (*s).to_owned()).collect(),
        agents: rows(&dir, tools, lead),
    }
}

fn rows(dir: &AgentDirectory, tools: &ToolCatalog, lead: Option<&str>) -> Vec<AgentRow> {
    let team = lead.and_then(|l| dir.team(Some(l)).ok());
    dir.agents
        .iter()
        .filter(|a| match &team {
            Some(t) => a.name == t.lead || t.members.contains(&a.name),
            None => lead.is_none(),
        })
        .map(|a| {
            let effective = a
                .raw
                .as_ref()
                .map(|r| compile_agent_config(r, a.source.clone(), tools, &mut Diagnostics::new()));
            let role = a.role();
            AgentRow {
                name: a.name.clone(),
                qualified_name: qualified_name(dir.mode, &a.name),
                role,
                lead: match role {
                    Some(Role::Member) => a
                        .raw
                        .as_ref()
                        .and_then(|r| r.lead.clone())
                        .or_else(|| dir.default_lead.clone()),
                    Some(Role::Lead) | None => None,
                },
                valid: a.is_valid(),
                description: effective
                    .as_ref()
                    .map(|e| e.description.clone())
                    .unwrap_or_default(),
                source: a.source.clone(),
                effective,
            }
        })
        .collect()
}
