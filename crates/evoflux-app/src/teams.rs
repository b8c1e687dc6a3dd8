//! Teams as the application shows and opens them: each mode's lead with
//! the members and workers it reaches, the external agents it may
//! dispatch, and the projection `evoflux info` and `/api/info` show. A
//! session is opened with the same members and workers
//! ([`crate::SessionBuilder`]), so what is shown is what runs.

use std::path::PathBuf;

use evoflux_agents::ToolCatalog;
use evoflux_agents::team::{AgentSource, compile_agent_config, load_agents, worker_agent_config};
use evoflux_agents::worker::recipe::RecipeSource;
use evoflux_core::{AppMode, Diagnostic, Diagnostics};
use evoflux_graph::CompiledGraph;

use crate::{AppContext, SessionError, selected_config};

impl AppContext {
    /// What `evoflux info` and the server's `/api/info` show: the graph's
    /// projection, the trust of the repositories `workspaces` name, and
    /// each mode's team. One projection for every front end.
    pub fn info(
        &self,
        graph: &CompiledGraph,
        workspaces: &[PathBuf],
        mode: Option<AppMode>,
    ) -> Result<evoflux_graph::info::Info, SessionError> {
        let mut projection = evoflux_graph::info::project(graph, mode);
        if self.chromium().is_none() {
            mark_browser_unavailable(&mut projection.tools.entries);
        }
        projection.repositories = self.repositories(graph, workspaces)?;
        let (teams, remote, _) = self.team_nodes(graph);
        projection.teams = teams;
        projection.remote_agents = evoflux_graph::info::InfoList::new(
            remote
                .into_iter()
                .map(|(lead_node, r)| remote_node(lead_node, r))
                .collect(),
        );
        let loaded = selected_config(graph)
            .0
            .unwrap_or_else(evoflux_core::config::LoadedConfig::embedded);
        projection.user_instructions = self.user_instructions(&loaded.config).files;
        projection.mcp_bounds = Some(mcp_bounds(&loaded.config));
        self.mark_webbridge(graph, &mut projection);
        Ok(projection)
    }

    /// The session's repositories with their trust and the instruction
    /// files that serve them (`AGENTS.md`, or another harness's file).
    pub fn repositories(
        &self,
        graph: &CompiledGraph,
        workspaces: &[PathBuf],
    ) -> Result<Vec<evoflux_graph::info::InfoRepository>, SessionError> {
        let files = evoflux_harness::workspace_instructions::InstructionFiles::from_compat(
            selected_config(graph)
                .0
                .is_none_or(|loaded| loaded.config.compat.instructions),
        );
        Ok(self
            .trust_states(workspaces)?
            .into_iter()
            .map(|(path, trust)| evoflux_graph::info::InfoRepository {
                instructions: evoflux_harness::workspace_instructions::root_chain(&path)
                    .iter()
                    .filter_map(|dir| {
                        evoflux_harness::workspace_instructions::instruction_file_in(dir, files)
                    })
                    .collect(),
                path,
                trust,
            })
            .collect())
    }

    /// The ids of the worker recipes a session of `mode` reaches in
    /// `graph` (what [`SessionBuilder::worker`](crate::SessionBuilder::worker) accepts), sorted.
    pub fn worker_ids(&self, graph: &CompiledGraph, mode: AppMode) -> Vec<String> {
        let catalog = ToolCatalog::from_graph(graph);
        let mut ids: Vec<String> =
            dispatchable_workers(graph, &catalog, mode, &mut Diagnostics::new())
                .into_iter()
                .map(|w| w.id)
                .collect();
        ids.sort();
        ids
    }

    /// Each mode's default team in `graph`: its lead, the members and the
    /// workers the lead's `agent` tool reaches, as a session would bind them.
    pub fn teams(&self, graph: &CompiledGraph) -> Vec<evoflux_graph::info::InfoTeam> {
        self.checked_teams(graph).0
    }

    /// [`teams`](Self::teams) with what is wrong with them: the problems
    /// of the agents, members and workers they load, and a mode without a
    /// lead (`team/…` codes).
    pub fn checked_teams(
        &self,
        graph: &CompiledGraph,
    ) -> (Vec<evoflux_graph::info::InfoTeam>, Diagnostics) {
        let (teams, _, diags) = self.team_nodes(graph);
        (teams, diags)
    }

    /// The remote agents the default leads reach, once each (every lead
    /// reaches the same ones), as dispatch binds them: the graph's
    /// winners less those whose name a member or worker holds (what is
    /// wrong with them is `info`'s and a session's to report).
    pub fn remote_agents(
        &self,
        graph: &CompiledGraph,
    ) -> Vec<evoflux_harness::remote::RemoteAgent> {
        let (_, nodes, _) = self.team_nodes(graph);
        let mut agents: Vec<evoflux_harness::remote::RemoteAgent> = Vec::new();
        for (_, agent) in nodes {
            if !agents.iter().any(|a| a.spec.id == agent.spec.id) {
                agents.push(agent);
            }
        }
        agents
    }

    /// Each mode's team, the external agents each lead reaches (with the
    /// lead's node), and what is wrong with them.
    #[allow(clippy::type_complexity)]
    fn team_nodes(
        &self,
        graph: &CompiledGraph,
    ) -> (
        Vec<evoflux_graph::info::InfoTeam>,
        Vec<(String, evoflux_harness::remote::RemoteAgent)>,
        Diagnostics,
    ) {
        let catalog = ToolCatalog::from_graph(graph);
        let mut diags = Diagnostics::new();
        let mut remote_nodes = Vec::new();
        let teams = [AppMode::Work, AppMode::Coding]
            .into_iter()
            .filter_map(|mode| {
                let directory = load_agents(graph, mode, &mut diags);
                let team = match directory.team(None) {
                    Ok(team) => team,
                    Err(e) => {
                        diags.push(Diagnostic::error(e.code(), e.to_string()));
                        return None;
                    }
                };
                let members = team_members(&directory, &team, &catalog, &mut diags);
                let workers = dispatchable_workers(graph, &catalog, mode, &mut diags);
                let lead_node = format!("{mode}/{}", team.lead);
                let node =
                    |agent: evoflux_agents::team::EffectiveAgentConfig,
                     worker: Option<&evoflux_agents::worker::spec::AgentSpec>| {
                        evoflux_graph::info::InfoAgentNode {
                            node_id: format!("{lead_node}/{}", agent.name),
                            parent_node_id: lead_node.clone(),
                            origin: match (agent.source, worker.map(|w| w.source)) {
                                (_, Some(RecipeSource::Framework)) | (AgentSource::Builtin, _) => {
                                    evoflux_graph::info::InfoOrigin::Builtin
                                }
                                (AgentSource::File { path, layer }, _) => {
                                    evoflux_graph::info::InfoOrigin::File { path, layer }
                                }
                            },
                            name: agent.name,
                            description: agent.description,
                            model: agent.model,
                            tools: agent.tools,
                            skills: agent.skills,
                            mcp: agent.mcp,
                            capability_class: worker.map(|w| w.capability_class.to_string()),
                            result_contract: worker.map(|w| w.result_contract.kind.to_string()),
                        }
                    };
                let worker_nodes = evoflux_harness::session::reachable_workers(&members, &workers)
                    .map(|w| node(worker_agent_config(w, mode, &catalog), Some(w)))
                    .collect();
                // The same problem in both modes is reported once.
                let mut remote_diags = Diagnostics::new();
                let remote = evoflux_harness::remote::remote_agents(
                    graph,
                    &members,
                    &workers,
                    &mut remote_diags,
                );
                for d in remote_diags.iter() {
                    if !diags.iter().any(|seen| seen.message == d.message) {
                        diags.push(d.clone());
                    }
                }
                remote_nodes.extend(remote.into_iter().map(|r| (lead_node.clone(), r)));
                Some(evoflux_graph::info::InfoTeam {
                    mode,
                    lead: team.lead,
                    members: members.into_iter().map(|m| node(m, None)).collect(),
                    workers: worker_nodes,
                    node_id: lead_node.clone(),
                })
            })
            .collect();
        (teams, remote_nodes, diags)
    }
}

/// The members the lead hands tasks to, each compiled by the one agent
/// compiler, in roster order.
pub(crate) fn team_members(
    directory: &evoflux_agents::team::AgentDirectory,
    team: &evoflux_agents::team::Team,
    catalog: &ToolCatalog,
    diags: &mut Diagnostics,
) -> Vec<evoflux_agents::team::EffectiveAgentConfig> {
    team.members
        .iter()
        .filter_map(|name| directory.get(name))
        .filter_map(|e| {
            e.raw
                .as_ref()
                .map(|raw| compile_agent_config(raw, e.source.clone(), catalog, diags))
        })
        .collect()
}

/// The worker recipes a lead of `mode` may dispatch: the catalog's base,
/// custom and shadow recipes, in Coding mode. A broken framework recipe is
/// a bug reported as an error; user recipes are quarantined by the catalog
/// and reported by `evoflux workers`. A recipe named like a member is
/// reached as that member ([`reachable_workers`]).
pub(crate) fn dispatchable_workers(
    graph: &CompiledGraph,
    catalog: &ToolCatalog,
    mode: AppMode,
    diags: &mut Diagnostics,
) -> Vec<evoflux_agents::worker::spec::AgentSpec> {
    match mode {
        AppMode::Coding => {
            match evoflux_agents::worker::load_workers(graph, catalog, &mut Diagnostics::new()) {
                Ok(c) => c.dispatchable(mode).cloned().collect(),
                Err(e) => {
                    diags.push(Diagnostic::error("worker/catalog-defective", e.to_string()));
                    Vec::new()
                }
            }
        }
        AppMode::Work => Vec::new(),
    }
}

/// The bounds every MCP server runs under, for `info` and `doctor`.
pub(crate) fn mcp_bounds(
    config: &evoflux_core::config::HarnessConfig,
) -> evoflux_graph::info::InfoMcpBounds {
    let mib = |bytes: usize| u64::try_from(bytes / (1024 * 1024)).unwrap_or(u64::MAX);
    evoflux_graph::info::InfoMcpBounds {
        max_result_mib: config
            .mcp
            .max_result_mib
            .unwrap_or_else(|| mib(evoflux_mcp::DEFAULT_MAX_RESULT_BYTES)),
        max_result_set: config.mcp.max_result_mib.is_some(),
        call_timeout_secs: evoflux_mcp::DEFAULT_CALL_TIMEOUT.as_secs(),
        start_timeout_secs: evoflux_mcp::DEFAULT_STARTUP_TIMEOUT.as_secs(),
    }
}

/// Marks the tools Chromium runs (`browser`) as unavailable on a machine
/// without it: found by their executor, never by name.
fn mark_browser_unavailable(tools: &mut [evoflux_graph::info::InfoTool]) {
    use evoflux_graph::info::InfoExecutor;
    use evoflux_graph::tool::BuiltinExecutor;
    for tool in tools {
        let runs_chromium = match &tool.executor {
            InfoExecutor::Builtin { executor } => *executor == BuiltinExecutor::Browser,
            InfoExecutor::Command { .. } | InfoExecutor::Native => false,
        };
        if runs_chromium {
            tool.runnable = false;
            tool.unavailable_code = Some(evoflux_tools::browser::NOT_INSTALLED_CODE);
            tool.unavailable_reason = Some(evoflux_tools::browser::NOT_INSTALLED);
        }
    }
}

/// A remote agent as `info`'s roster shows it, under the lead (`lead_node`)
/// that reaches it.
fn remote_node(
    lead_node: String,
    r: evoflux_harness::remote::RemoteAgent,
) -> evoflux_graph::info::InfoRemoteAgent {
    evoflux_graph::info::InfoRemoteAgent {
        node_id: format!("{lead_node}/{}", r.spec.id),
        parent_node_id: lead_node,
        name: r.spec.id.clone(),
        description: r.spec.description.clone(),
        protocol: "acp",
        command: r.launch.command.clone(),
        env: r.launch.env.clone(),
        cwd: r.launch.cwd.as_str(),
        capability_class: r.spec.capability_class.to_string(),
        result_contract: r.spec.result_contract.kind.to_string(),
        start_timeout_secs: r.launch.start_timeout_secs,
        idle_timeout_secs: r.launch.idle_timeout_secs,
        provenance: evoflux_graph::info::InfoRemoteProvenance {
            kind: "config",
            origin: r.origin,
            path: r.file,
        },
    }
}
