//! The team agents as every front end lists them (`evoflux agents list`,
//! `GET /api/agents`): each mode's agents with their role, lead and
//! source, compiled by the runtime's own compiler against the tools of
//! the graph, so a listing cannot disagree with what a session runs.

use evoflux_agents::ToolCatalog;
use evoflux_agents::team::listing::list_agents;
use evoflux_core::{AppMode, Diagnostics};
use evoflux_graph::CompiledGraph;

/// One mode's agents, as [`agent_listings`] returns them.
pub use evoflux_agents::team::listing::ModeListing;

/// The agents of `mode` (of every mode when `None`), only `lead` and its
/// members when a lead is given; what the listing finds wrong goes to
/// `diags`.
pub fn agent_listings(
    graph: &CompiledGraph,
    mode: Option<AppMode>,
    lead: Option<&str>,
    diags: &mut Diagnostics,
) -> Vec<ModeListing> {
    let tools = ToolCatalog::from_graph(graph);
    modes(mode)
        .into_iter()
        .map(|m| list_agents(graph, &tools, m, lead, diags))
        .collect()
}

/// `mode`, or every mode when none is given.
pub fn modes(mode: Option<AppMode>) -> Vec<AppMode> {
    mode.map_or_else(|| AppMode::ALL.to_vec(), |m| vec![m])
}
