//! `info`: the inspection projection of a compiled graph.
//!
//! Everything here is read from the graph: each active primitive appears
//! once, with its logical path, source id, layer and owner; tools carry
//! their prepared handling and availability; routes are the effective route
//! plan; shadowed and disabled candidates appear only as composition
//! diagnostics, never as rows. The JSON shape is fixed by
//! `schema/info.schema.json`; the text for people is the front end's
//! (`evoflux info` renders it in the CLI).

use evoflux_core::{AppMode, Diagnostic, Severity};
use serde::Serialize;

use crate::candidate::{Owner, SourceId};
use crate::channel::{Method, RouteAction};
use crate::compose::{Binding, CompositionEntry, Definition, EntryKind, Node};
use crate::connection::ConnectionDefinition;
use crate::graph::CompiledGraph;
use crate::layer::Layer;
use crate::route_plan::{Preflight, ShadowedRoute};
use crate::runnable::NotInBuild;
use crate::sandbox::{FilesystemPolicy, NetworkPolicy};
use crate::slot::SlotKind;
use crate::tool::{ActionClass, Availability, Handling, Presentation, ToolExecutor};

pub const INFO_KIND: &str = "evoflux-info";
pub const INFO_VERSION: u32 = 1;

/// The committed JSON Schema of [`Info`].
pub const INFO_SCHEMA: &str = include_str!("../schema/info.schema.json");

#[derive(Debug, Clone, Serialize)]
pub struct InfoSource {
    pub slot: String,
    pub logical_path: String,
    pub source_id: SourceId,
    pub layer: Layer,
    pub owner: Owner,
    pub binding: Binding,
}

#[derive(Debug, Clone, Serialize)]
pub struct InfoList<T> {
    pub entries: Vec<T>,
    pub total: usize,
}

impl<T> InfoList<T> {
    pub fn new(entries: Vec<T>) -> Self {
        InfoList {
            total: entries.len(),
            entries,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct InfoConfig {
    pub source: InfoSource,
    pub default_model: String,
    pub providers: Vec<String>,
    /// `[teams]` as it is in effect (its defaults filled in).
    pub teams: InfoTeamsConfig,
}

/// `[teams]` in effect: how deep a tree of dispatches may go.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct InfoTeamsConfig {
    pub max_depth: u32,
}

#[derive(Debug, Clone, Serialize)]
pub struct InfoSandbox {
    pub source: InfoSource,
    pub filesystem: FilesystemPolicy,
    pub network: NetworkPolicy,
    pub max_timeout_seconds: u64,
    pub journal_cap_mib: u64,
}

#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum InfoExecutor {
    Builtin {
        executor: crate::tool::BuiltinExecutor,
    },
    Command {
        argv0: String,
    },
    /// Handled natively by the harness; there is no executor.
    Native,
}

#[derive(Debug, Clone, Serialize)]
pub struct InfoTool {
    pub name: String,
    pub description: String,
    pub handling: Handling,
    pub availability: Vec<Availability>,
    pub presentation: Presentation,
    pub action_class: ActionClass,
    pub modes: Vec<AppMode>,
    pub lead_only: bool,
    /// Given only to agents that name it, never by a mode's default set.
    pub on_request: bool,
    pub executor: InfoExecutor,
    /// Whether this build can run the tool
    /// ([`ToolDefinition::not_in_build`](crate::tool::ToolDefinition::not_in_build)).
    pub runnable: bool,
    /// Why not, when it cannot: the stable code and the reason in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unavailable_code: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unavailable_reason: Option<&'static str>,
    /// A provider tool runs only in sessions whose provider has it: which
    /// ones, in words ([`ToolDefinition::needs_provider`](crate::tool::ToolDefinition::needs_provider)).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub needs_provider: Option<&'static str>,
    pub source: InfoSource,
}

#[derive(Debug, Clone, Serialize)]
pub struct InfoNamed {
    pub name: String,
    pub source: InfoSource,
}

/// A schedule: when it fires, in which mode, whether it is on.
#[derive(Debug, Clone, Serialize)]
pub struct InfoSchedule {
    pub name: String,
    pub trigger: crate::schedule::Trigger,
    pub mode: AppMode,
    pub enabled: bool,
    pub source: InfoSource,
}

#[derive(Debug, Clone, Serialize)]
pub struct InfoConnection {
    pub name: String,
    pub transport: &'static str,
    pub source: InfoSource,
    /// Whether sessions tagged `surface = webbridge` are offered it;
    /// filled by the application, which holds the MCP rule.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub webbridge: Option<InfoWebBridge>,
}

/// An MCP server in a WebBridge conversation (a session tagged for the
/// browser surface): offered, or hidden with the diagnostic the session
/// itself reports (`mcp/webbridge-hidden`) and what to do about it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "kebab-case")]
pub enum InfoWebBridge {
    /// Its plugin declares it `webbridge-safe`.
    Offered,
    Hidden {
        /// The stable code (`mcp/webbridge-hidden`).
        code: String,
        /// Why, and how to reach it.
        reason: String,
    },
}

/// An enabled plugin's MCP server (plugins contribute servers outside the
/// graph's connections), with its WebBridge standing.
#[derive(Debug, Clone, Serialize)]
pub struct InfoPluginServer {
    /// As an agent's `mcp:` list names it (`plugin/server`).
    pub name: String,
    pub plugin: String,
    pub webbridge: InfoWebBridge,
}

#[derive(Debug, Clone, Serialize)]
pub struct InfoRoute {
    pub method: Method,
    pub path: String,
    pub action: RouteAction,
    pub source_id: SourceId,
}

#[derive(Debug, Clone, Serialize)]
pub struct InfoRoutes {
    pub effective: Vec<InfoRoute>,
    pub total: usize,
    pub preflights: Vec<Preflight>,
    pub shadowed: Vec<ShadowedRoute>,
}

#[derive(Debug, Clone, Serialize)]
pub struct InfoCompositionEntry {
    pub kind: EntryKind,
    pub slot: String,
    pub logical_path: String,
    pub layer: Layer,
    pub owner: Owner,
    pub source_id: SourceId,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub winner_source_id: Option<SourceId>,
}

#[derive(Debug, Clone, Serialize)]
pub struct InfoDiagnostics {
    pub errors: usize,
    pub warnings: usize,
    pub items: Vec<Diagnostic>,
}

/// The inspection payload.
#[derive(Debug, Clone, Serialize)]
pub struct Info {
    pub kind: &'static str,
    pub version: u32,
    pub status: &'static str,
    pub mode: Option<AppMode>,
    pub graph_hash: String,
    pub config: Option<InfoConfig>,
    pub sandbox: Option<InfoSandbox>,
    pub tools: InfoList<InfoTool>,
    pub connections: InfoList<InfoConnection>,
    pub skills: InfoList<InfoNamed>,
    pub agents: InfoList<InfoNamed>,
    pub workers: InfoList<InfoNamed>,
    pub fleets: InfoList<InfoNamed>,
    pub schedules: InfoList<InfoSchedule>,
    pub evals: InfoList<InfoNamed>,
    pub routes: InfoRoutes,
    pub composition: Vec<InfoCompositionEntry>,
    /// The session's repositories and whether each is trusted; filled by
    /// the application, which holds the user's trust decisions.
    pub repositories: Vec<InfoRepository>,
    /// Each mode's default lead with the members and workers its `agent`
    /// tool reaches; filled by the application, which compiles the teams.
    pub teams: Vec<InfoTeam>,
    /// The external agents (`[agents.external]`) each mode's lead may
    /// dispatch over the Agent Client Protocol: flat over every team, each
    /// under its lead's node, and apart from the local members and
    /// workers, which they do not count among; filled by the application.
    pub remote_agents: InfoList<InfoRemoteAgent>,
    /// Sources of untrusted repositories that are not loaded until the
    /// user trusts them.
    pub awaiting_trust: Vec<InfoAwaitingTrust>,
    /// The user's own instruction files of other harnesses
    /// (`~/.codex/AGENTS.md`, `~/.claude/CLAUDE.md`) that come before every
    /// repository's in a Coding session; filled by the application.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub user_instructions: Vec<std::path::PathBuf>,
    /// The bounds of every MCP call and start; filled by the application,
    /// which knows the MCP client's defaults.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mcp_bounds: Option<InfoMcpBounds>,
    /// The MCP servers of enabled plugins; filled by the application.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub plugin_mcp_servers: Vec<InfoPluginServer>,
    pub diagnostics: InfoDiagnostics,
}

/// The bounds the MCP client puts on every server.
#[derive(Debug, Clone, Serialize)]
pub struct InfoMcpBounds {
    /// One call's result, in MiB (`[mcp] max_result_mib`).
    pub max_result_mib: u64,
    /// Whether `max_result_mib` is the user's setting (else the default).
    pub max_result_set: bool,
    /// How long one call may take.
    pub call_timeout_secs: u64,
    /// How long a server may take to start, unless its entry sets
    /// `startup_timeout_secs`.
    pub start_timeout_secs: u64,
}

/// One mode's default team as a tree of agent nodes: the lead, then the
/// members and the workers its `agent` tool reaches, each with its own
/// effective configuration and where it was defined.
#[derive(Debug, Clone, Serialize)]
pub struct InfoTeam {
    pub mode: AppMode,
    pub lead: String,
    /// The lead's node (`<mode>/<lead>`), every child's parent.
    pub node_id: String,
    pub members: Vec<InfoAgentNode>,
    /// Worker recipes the lead may dispatch (Coding).
    pub workers: Vec<InfoAgentNode>,
}

/// A member or worker of a team, as a child session would run it.
#[derive(Debug, Clone, Serialize)]
pub struct InfoAgentNode {
    /// `<mode>/<lead>/<name>`.
    pub node_id: String,
    pub parent_node_id: String,
    pub name: String,
    pub description: String,
    /// Its own model, when it has one (otherwise it runs on the lead's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The tools it is given (before session conditions).
    pub tools: Vec<String>,
    pub skills: Vec<String>,
    /// The MCP servers it is granted.
    pub mcp: Vec<String>,
    /// A worker's capability class and result contract.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capability_class: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_contract: Option<String>,
    pub origin: InfoOrigin,
}

/// An external agent a lead may dispatch.
#[derive(Debug, Clone, Serialize)]
pub struct InfoRemoteAgent {
    /// `<mode>/<lead>/<name>`.
    pub node_id: String,
    pub parent_node_id: String,
    pub name: String,
    pub description: String,
    /// How it is reached: `acp` (the Agent Client Protocol over stdio).
    pub protocol: &'static str,
    /// The program and its arguments.
    pub command: Vec<String>,
    /// The names of the variables of the environment it gets.
    pub env: Vec<String>,
    /// Where it runs: `workspace` or `scratch`.
    pub cwd: &'static str,
    pub capability_class: String,
    pub result_contract: String,
    /// Seconds it has to answer `initialize` and `session/new`.
    pub start_timeout_secs: u64,
    /// Seconds it may stay silent while it works.
    pub idle_timeout_secs: u64,
    /// The config file that declared it, and that file's layer.
    pub provenance: InfoRemoteProvenance,
}

/// Where an external agent was declared.
#[derive(Debug, Clone, Serialize)]
pub struct InfoRemoteProvenance {
    pub kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<std::path::PathBuf>,
    pub origin: evoflux_core::config::ConfigOrigin,
}

/// Where an agent was defined.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum InfoOrigin {
    /// Compiled into evoflux.
    Builtin,
    File {
        path: std::path::PathBuf,
        layer: crate::Layer,
    },
}

#[derive(Debug, Clone, Serialize)]
pub struct InfoRepository {
    pub path: std::path::PathBuf,
    pub trust: evoflux_core::trust::TrustState,
    /// The instruction files that serve its directories, top first
    /// (`AGENTS.md`, or another harness's file where it has none).
    pub instructions: Vec<std::path::PathBuf>,
}

#[derive(Debug, Clone, Serialize)]
pub struct InfoAwaitingTrust {
    pub slot: String,
    pub source_id: SourceId,
    pub file: Option<std::path::PathBuf>,
}

fn source(graph: &CompiledGraph, node: &Node) -> Option<InfoSource> {
    let b = graph.binding(&node.source_id)?;
    Some(InfoSource {
        slot: node.slot.to_string(),
        logical_path: b.logical_path.clone(),
        source_id: node.source_id.clone(),
        layer: b.layer,
        owner: b.owner.clone(),
        binding: b.binding.clone(),
    })
}

fn in_mode(mode: Option<AppMode>, modes: &[AppMode]) -> bool {
    mode.is_none_or(|m| modes.contains(&m))
}

/// Projects a graph, optionally for one mode.
pub fn project(graph: &CompiledGraph, mode: Option<AppMode>) -> Info {
    let mut info = Info {
        kind: INFO_KIND,
        version: INFO_VERSION,
        status: if graph.has_errors() { "failed" } else { "ok" },
        mode,
        graph_hash: graph.hash.to_string(),
        config: None,
        sandbox: None,
        tools: InfoList::new(Vec::new()),
        connections: InfoList::new(Vec::new()),
        skills: InfoList::new(Vec::new()),
        agents: InfoList::new(Vec::new()),
        workers: InfoList::new(Vec::new()),
        fleets: InfoList::new(Vec::new()),
        schedules: InfoList::new(Vec::new()),
        evals: InfoList::new(Vec::new()),
        routes: InfoRoutes {
            total: graph.route_plan.effective.len(),
            effective: graph
                .route_plan
                .effective
                .iter()
                .map(|r| InfoRoute {
                    method: r.method,
                    path: r.path.clone(),
                    action: r.action.clone(),
                    source_id: r.source_id.clone(),
                })
                .collect(),
            preflights: graph.route_plan.preflights.clone(),
            shadowed: graph.route_plan.shadowed.clone(),
        },
        repositories: Vec::new(),
        teams: Vec::new(),
        remote_agents: InfoList::new(Vec::new()),
        user_instructions: Vec::new(),
        mcp_bounds: None,
        plugin_mcp_servers: Vec::new(),
        awaiting_trust: graph
            .composition
            .entries
            .iter()
            .filter_map(|e| match e {
                CompositionEntry::AwaitingTrust { source } => Some(InfoAwaitingTrust {
                    slot: source.slot.clone(),
                    source_id: source.source_id.clone(),
                    file: source.file().map(std::path::Path::to_path_buf),
                }),
                CompositionEntry::Shadowed { .. }
                | CompositionEntry::Disabled { .. }
                | CompositionEntry::Layered { .. } => None,
            })
            .collect(),
        composition: graph
            .composition
            .entries
            .iter()
            .map(|e| {
                let (kind, source, winner) = e.parts();
                InfoCompositionEntry {
                    kind,
                    slot: source.slot.clone(),
                    logical_path: source.logical_path.clone(),
                    layer: source.layer,
                    owner: source.owner.clone(),
                    source_id: source.source_id.clone(),
                    winner_source_id: winner.cloned(),
                }
            })
            .collect(),
        diagnostics: InfoDiagnostics {
            errors: graph.diagnostics.count(Severity::Error),
            warnings: graph.diagnostics.count(Severity::Warning),
            items: graph.diagnostics.as_slice().to_vec(),
        },
    };
    let mut tools = Vec::new();
    let mut connections = Vec::new();
    let mut evals = Vec::new();
    let (mut skills, mut agents, mut workers, mut fleets, mut schedules) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for node in &graph.nodes {
        let Some(src) = source(graph, node) else {
            continue;
        };
        let named = |src: InfoSource| InfoNamed {
            name: node.slot.name.clone(),
            source: src,
        };
        match &node.definition {
            Definition::Config(c) => {
                info.config = Some(InfoConfig {
                    source: src,
                    default_model: c.config.model.default.to_string(),
                    providers: c.config.providers.keys().cloned().collect(),
                    teams: InfoTeamsConfig {
                        max_depth: c.config.teams.max_depth(),
                    },
                });
            }
            Definition::Sandbox(s) => {
                info.sandbox = Some(InfoSandbox {
                    source: src,
                    filesystem: s.filesystem,
                    network: s.network,
                    max_timeout_seconds: s.max_timeout_seconds,
                    journal_cap_mib: s.journal_cap_mib,
                });
            }
            Definition::Tool(t) => {
                if !in_mode(mode, &t.behavior.modes) {
                    continue;
                }
                let gap = t.not_in_build();
                tools.push(InfoTool {
                    name: t.name.clone(),
                    description: t.description.clone(),
                    handling: t.behavior.handling,
                    availability: t.behavior.availability.clone(),
                    presentation: t.behavior.presentation,
                    action_class: t.behavior.action_class,
                    modes: t.behavior.modes.clone(),
                    lead_only: t.behavior.lead_only,
                    on_request: t.behavior.on_request,
                    executor: match &t.executor {
                        Some(ToolExecutor::Builtin { executor }) => InfoExecutor::Builtin {
                            executor: *executor,
                        },
                        Some(ToolExecutor::Command(c)) => InfoExecutor::Command {
                            argv0: c.argv.first().cloned().unwrap_or_default(),
                        },
                        None => InfoExecutor::Native,
                    },
                    runnable: gap.is_none(),
                    unavailable_code: gap.map(NotInBuild::code),
                    unavailable_reason: gap.map(NotInBuild::message),
                    needs_provider: t.needs_provider(),
                    source: src,
                });
            }
            Definition::Channel(_) => {}
            Definition::Connection(c) => connections.push(InfoConnection {
                name: node.slot.name.clone(),
                transport: match c {
                    ConnectionDefinition::Stdio { .. } => "stdio",
                    ConnectionDefinition::StreamableHttp { .. } => "streamable-http",
                    ConnectionDefinition::Sse { .. } => "sse",
                },
                source: src,
                webbridge: None,
            }),
            Definition::Schedule(s) => schedules.push(InfoSchedule {
                name: node.slot.name.clone(),
                trigger: s.trigger.clone(),
                mode: s.mode,
                enabled: s.enabled,
                source: src,
            }),
            Definition::Eval(_) => evals.push(named(src)),
            // Listed under the lead that reaches them (`remote_agents`),
            // with what the application knows of their contract.
            Definition::RemoteAgent(_) => {}
            Definition::Document { .. } => match node.slot.kind {
                SlotKind::Skill => skills.push(named(src)),
                SlotKind::WorkAgent if in_mode(mode, &[AppMode::Work]) => agents.push(named(src)),
                SlotKind::CodingAgent if in_mode(mode, &[AppMode::Coding]) => {
                    agents.push(InfoNamed {
                        name: format!("coding/{}", node.slot.name),
                        source: src,
                    })
                }
                SlotKind::Worker => workers.push(named(src)),
                SlotKind::Fleet | SlotKind::FleetCommands => fleets.push(named(src)),

                SlotKind::WorkAgent
                | SlotKind::CodingAgent
                | SlotKind::Config
                | SlotKind::Sandbox
                | SlotKind::Tool
                | SlotKind::Channel
                | SlotKind::Schedule
                | SlotKind::Eval
                | SlotKind::Connection
                | SlotKind::RemoteAgent => {}
            },
        }
    }
    // A preview's server must be reachable from evoflux: where the sandbox
    // denies commands the network it would listen in a namespace of its
    // own, so `preview` is marked, with the reason sessions give.
    if info
        .sandbox
        .as_ref()
        .is_some_and(|s| s.network == NetworkPolicy::Deny)
    {
        use crate::tool::builtin::preview::{NEEDS_HOST_NETWORK, NEEDS_HOST_NETWORK_CODE};
        let previews = tools.iter_mut().filter(|t| {
            matches!(
                t.executor,
                InfoExecutor::Builtin {
                    executor: crate::tool::BuiltinExecutor::Preview
                }
            )
        });
        for t in previews {
            t.runnable = false;
            t.unavailable_code = Some(NEEDS_HOST_NETWORK_CODE);
            t.unavailable_reason = Some(NEEDS_HOST_NETWORK);
        }
    }
    info.tools = InfoList::new(tools);
    info.connections = InfoList::new(connections);
    info.skills = InfoList::new(skills);
    info.agents = InfoList::new(agents);
    info.workers = InfoList::new(workers);
    info.fleets = InfoList::new(fleets);
    info.schedules = InfoList::new(schedules);
    info.evals = InfoList::new(evals);
    info
}

/// Invariants the schema cannot express: unique identities per family and
/// totals equal to list lengths. Returns what is violated.
pub fn check_invariants(info: &serde_json::Value) -> Vec<String> {
    let mut problems = Vec::new();
    for family in [
        "tools",
        "connections",
        "skills",
        "agents",
        "workers",
        "fleets",
        "schedules",
        "evals",
    ] {
        let entries = info[family]["entries"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if info[family]["total"].as_u64() != Some(entries.len() as u64) {
            problems.push(format!("{family}.total differs from its entries"));
        }
        let mut names = std::collections::BTreeSet::new();
        for e in &entries {
            if !names.insert(e["name"].as_str().unwrap_or_default().to_owned()) {
                problems.push(format!("{family} lists `{}` twice", e["name"]));
            }
        }
    }
    // Remote agents: counted apart, each under a lead of `teams`.
    let remote = info["remote_agents"]["entries"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if info["remote_agents"]["total"].as_u64() != Some(remote.len() as u64) {
        problems.push("remote_agents.total differs from its entries".into());
    }
    let leads: std::collections::BTreeSet<&str> = info["teams"]
        .as_array()
        .map(|t| t.iter().filter_map(|t| t["node_id"].as_str()).collect())
        .unwrap_or_default();
    let mut nodes = std::collections::BTreeSet::new();
    for r in &remote {
        let node = r["node_id"].as_str().unwrap_or_default();
        if !nodes.insert(node.to_owned()) {
            problems.push(format!("remote_agents lists `{node}` twice"));
        }
        let parent = r["parent_node_id"].as_str().unwrap_or_default();
        if !leads.contains(parent) {
            problems.push(format!(
                "remote agent `{node}` is under `{parent}`, which is no team's lead"
            ));
        }
    }
    let routes = info["routes"]["effective"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if info["routes"]["total"].as_u64() != Some(routes.len() as u64) {
        problems.push("routes.total differs from its entries".into());
    }
    let mut ids = std::collections::BTreeSet::new();
    for r in &routes {
        let path = r["path"].as_str().unwrap_or_default();
        // The route plan's own identity rule; a path that does not parse
        // is a problem in itself.
        let identity = match crate::route_plan::RoutePattern::parse(path) {
            Ok(p) => p.identity,
            Err(why) => {
                problems.push(format!("route path `{path}` {why}"));
                continue;
            }
        };
        if !ids.insert(format!("{} {identity}", r["method"])) {
            problems.push(format!("route `{} {path}` listed twice", r["method"]));
        }
    }
    problems
}
