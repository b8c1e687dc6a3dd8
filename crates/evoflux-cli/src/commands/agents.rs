//! `evoflux agents`: team agents as the library compiles them.
//!
//! Every effective configuration printed here comes from
//! `evoflux_agents::team::compile_agent_config`, the same function the
//! runtime and the HTTP API call. Listing, showing, validating and
//! compiling are read-only; only `init` writes (seed files that do not
//! exist yet).

use clap::{Args, Subcommand};
use evoflux_agents::ToolCatalog;
use evoflux_agents::team::seed::init_seeds;
use evoflux_agents::team::{
    AgentSource, EffectiveAgentConfig, Role, compile_agent_config, members_shadowing_workers,
    parse_qualified_name, qualified_name,
};
use evoflux_app::CompiledGraph;
use evoflux_app::agents_view::{agent_listings, modes};
use evoflux_core::{AppMode, Diagnostic, Diagnostics, Slot, SlotKind};
use serde::Serialize;

use crate::cli::SourceArgs;
use crate::output::{Exit, Output};

fn parse_mode(s: &str) -> Result<AppMode, String> {
    s.parse()
        .map_err(|e: evoflux_core::mode::ParseModeError| e.to_string())
}

#[derive(Debug, Subcommand)]
pub enum AgentsCommand {
    /// List the agents of each mode (or one) with their role, lead and source.
    List(ListArgs),
    /// Show one agent's effective configuration (`<name>` or `coding/<name>`).
    Show {
        /// `<name>` for a Work agent, `coding/<name>` for a Coding agent.
        name: String,
        #[command(flatten)]
        sources: SourceArgs,
    },
    /// Check every agent file and the team rules; exit 3 on errors.
    Validate {
        #[arg(long, value_parser = parse_mode)]
        mode: Option<AppMode>,
        #[command(flatten)]
        sources: SourceArgs,
    },
    /// Print the effective configuration of a lead's team.
    Compile {
        /// The mode (default: work).
        #[arg(long, value_parser = parse_mode)]
        mode: Option<AppMode>,
        /// The lead whose team to compile (default: the mode's default lead).
        #[arg(long, value_name = "NAME")]
        lead: Option<String>,
        #[command(flatten)]
        sources: SourceArgs,
    },
    /// Write the built-in agents' seed files into the user config directory
    /// (existing files are never overwritten).
    Init,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    #[arg(long, value_parser = parse_mode)]
    pub mode: Option<AppMode>,
    /// Only this lead and its members.
    #[arg(long, value_name = "NAME")]
    pub lead: Option<String>,
    #[command(flatten)]
    pub sources: SourceArgs,
}

pub fn run(out: &Output, command: &AgentsCommand) -> anyhow::Result<Exit> {
    match command {
        AgentsCommand::List(args) => list(out, args),
        AgentsCommand::Show { name, sources } => show(out, name, sources),
        AgentsCommand::Validate { mode, sources } => validate(out, *mode, sources),
        AgentsCommand::Compile {
            mode,
            lead,
            sources,
        } => compile(out, mode.unwrap_or(AppMode::Work), lead.as_deref(), sources),
        AgentsCommand::Init => init(out),
    }
}

/// Compiles the graph the way `evoflux info` does.
fn graph(out: &Output, sources: &SourceArgs) -> anyhow::Result<Result<CompiledGraph, Exit>> {
    let dirs = match super::resolve_dirs(out) {
        Ok(d) => d,
        Err(exit) => return Ok(Err(exit)),
    };
    Ok(Ok(super::compile_graph(&dirs, sources)?))
}

fn source_label(s: &AgentSource) -> String {
    match s {
        AgentSource::Builtin => "builtin".to_owned(),
        AgentSource::File { path, layer } => format!("{layer} {}", path.display()),
    }
}

fn list(out: &Output, args: &ListArgs) -> anyhow::Result<Exit> {
    let graph = match graph(out, &args.sources)? {
        Ok(g) => g,
        Err(exit) => return Ok(exit),
    };
    let mut diags = Diagnostics::new();
    // A file the graph could not select (broken front matter) has no
    // entry to list; it is reported instead of silently left out.
    let unlisted: Diagnostics = agent_graph_diagnostics(&graph, args.mode)
        .into_iter()
        .collect();
    let mut lead_errors = Diagnostics::new();
    if let Some(lead) = args.lead.as_deref() {
        for mode in modes(args.mode) {
            let dir = evoflux_agents::team::load_agents(&graph, mode, &mut Diagnostics::new());
            if let Err(e) = dir.team(Some(lead)) {
                lead_errors.push(Diagnostic::error("agent/team-invalid", e.to_string()));
            }
        }
    }
    let listings = agent_listings(&graph, args.mode, args.lead.as_deref(), &mut diags);
    // A lead that is no lead in any listed mode is an error, not an empty
    // listing.
    if lead_errors.len() == listings.len() && !lead_errors.is_empty() {
        out.diagnostics(&lead_errors);
        return Ok(Exit::Invalid);
    }
    out.result(&listings, || {
        let mut s = String::new();
        for l in &listings {
            s.push_str(&format!(
                "{} (default lead: {})\n",
                l.mode,
                l.default_lead.as_deref().unwrap_or("none")
            ));
            for r in &l.agents {
                let role = match (r.role, &r.lead) {
                    (Some(Role::Lead), _) => "lead".to_owned(),
                    (Some(Role::Member), Some(lead)) => format!("member of {lead}"),
                    (Some(Role::Member), None) => "member".to_owned(),
                    (None, _) => "invalid".to_owned(),
                };
                s.push_str(&format!(
                    "  {:<24} {:<24} {:<10} {}\n",
                    r.qualified_name,
                    role,
                    if r.valid { "ok" } else { "invalid" },
                    source_label(&r.source)
                ));
            }
        }
        s
    });
    out.diagnostics(&unlisted);
    Ok(Exit::Ok)
}

#[derive(Serialize)]
struct Shown {
    qualified_name: String,
    valid: bool,
    source: AgentSource,
    effective: Option<EffectiveAgentConfig>,
    /// The agent's tools this build cannot run (never offered to a model).
    tools_not_in_build: Vec<ToolNotInBuild>,
    diagnostics: Diagnostics,
}

fn show(out: &Output, name: &str, sources: &SourceArgs) -> anyhow::Result<Exit> {
    let (mode, bare) = match parse_qualified_name(name) {
        Ok(x) => x,
        Err(d) => {
            out.diagnostics(&Diagnostics::from(vec![d]));
            return Ok(Exit::Failure);
        }
    };
    let graph = match graph(out, sources)? {
        Ok(g) => g,
        Err(exit) => return Ok(exit),
    };
    let tools = ToolCatalog::from_graph(&graph);
    let dir = evoflux_agents::team::load_agents(&graph, mode, &mut Diagnostics::new());
    // What the graph said about this agent's file: a file it could not
    // select (broken front matter) has no entry, and one that falls back
    // to a built-in of the same name must not look fine.
    let slot = Slot::new(evoflux_agents::team::agent_slot_kind(mode), bare.as_str());
    let unselected = graph.slot_diagnostics(&slot);
    let Some(entry) = dir.get(&bare) else {
        if unselected.is_empty() {
            out.diagnostics(&Diagnostics::from(vec![Diagnostic::error(
                "agent/not-found",
                format!("no {mode} agent named `{bare}`"),
            )]));
            return Ok(Exit::Failure);
        }
        out.diagnostics(&unselected);
        return Ok(if unselected.has_errors() {
            Exit::Invalid
        } else {
            Exit::Failure
        });
    };
    let file_broken = unselected.has_errors();
    let mut diags = unselected;
    diags.extend(entry.diagnostics.iter().cloned());
    let workers = worker_catalog(&graph, &tools, &mut diags);
    diags.extend(
        members_shadowing_workers(&dir, &workers)
            .into_iter()
            .filter(|d| d.locator.slot.as_ref() == Some(&slot)),
    );
    let effective = entry
        .raw
        .as_ref()
        .map(|r| compile_agent_config(r, entry.source.clone(), &tools, &mut diags));
    let shown = Shown {
        qualified_name: qualified_name(mode, &bare),
        valid: entry.is_valid() && !file_broken,
        source: entry.source.clone(),
        tools_not_in_build: tools_not_in_build(&tools, effective.iter().flat_map(|e| &e.tools)),
        effective,
        diagnostics: diags,
    };
    out.result(&shown, || {
        let mut s = format!(
            "{} ({})\n",
            shown.qualified_name,
            source_label(&shown.source)
        );
        match &shown.effective {
            Some(e) => {
                s.push_str(&format!("role: {}\n", e.role.as_str()));
                if let Some(l) = &e.lead {
                    s.push_str(&format!("lead: {l}\n"));
                }
                s.push_str(&format!("description: {}\n", e.description));
                s.push_str(&format!(
                    "model: {}\n",
                    e.model.as_deref().unwrap_or("(harness default)")
                ));
                s.push_str(&format!(
                    "tools: {}\n",
                    tool_list(&e.tools, &shown.tools_not_in_build)
                ));
                s.push_str(&format!("skills: {}\n", e.skills.join(", ")));
                s.push_str(&format!("mcp: {}\n", e.mcp.join(", ")));
                s.push_str(&format!("\n{}\n", e.prompt));
            }
            None => s.push_str("invalid: see the diagnostics\n"),
        }
        s
    });
    out.diagnostics(&shown.diagnostics);
    Ok(if shown.valid { Exit::Ok } else { Exit::Invalid })
}

/// Graph diagnostics about agent files: those on an agent slot (also a
/// file the graph could not select, such as one with broken front matter,
/// which has no node), and the discovery code for unsupported agent
/// folders.
fn agent_graph_diagnostics(graph: &CompiledGraph, mode: Option<AppMode>) -> Vec<Diagnostic> {
    let kinds: Vec<SlotKind> = modes(mode)
        .into_iter()
        .map(evoflux_agents::team::agent_slot_kind)
        .collect();
    graph
        .diagnostics
        .iter()
        .filter(|d| {
            let on_slot = d
                .locator
                .slot
                .as_ref()
                .is_some_and(|s| kinds.contains(&s.kind));
            on_slot || d.code == "discover/agent-folder-invalid"
        })
        .cloned()
        .collect()
}

/// A tool an agent has that this build cannot run, and why.
#[derive(Serialize)]
struct ToolNotInBuild {
    tool: String,
    code: &'static str,
    reason: &'static str,
}

/// The agents' tools this build cannot run, each once, in first-seen order.
fn tools_not_in_build<'a>(
    tools: &ToolCatalog,
    names: impl IntoIterator<Item = &'a String>,
) -> Vec<ToolNotInBuild> {
    let mut out: Vec<ToolNotInBuild> = Vec::new();
    for name in names {
        if out.iter().any(|t| &t.tool == name) {
            continue;
        }
        if let Some(gap) = tools.not_in_build(name) {
            out.push(ToolNotInBuild {
                tool: name.clone(),
                code: gap.code(),
                reason: gap.message(),
            });
        }
    }
    out
}

/// `a, b (not in this build: why), c`.
fn tool_list(names: &[String], gaps: &[ToolNotInBuild]) -> String {
    names
        .iter()
        .map(|n| match gaps.iter().find(|g| &g.tool == n) {
            Some(g) => format!("{n} (not in this build: {})", g.reason),
            None => n.clone(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[derive(Serialize)]
struct Validation {
    valid: bool,
    errors: usize,
    warnings: usize,
}

fn validate(out: &Output, mode: Option<AppMode>, sources: &SourceArgs) -> anyhow::Result<Exit> {
    let graph = match graph(out, sources)? {
        Ok(g) => g,
        Err(exit) => return Ok(exit),
    };
    let tools = ToolCatalog::from_graph(&graph);
    let mut diags: Diagnostics = agent_graph_diagnostics(&graph, mode).into_iter().collect();
    let servers = match super::resolve_dirs(out) {
        Ok(dirs) => evoflux_mcp::plugin::server_refs(&graph, &super::app_context(&dirs)?.plugins()),
        Err(exit) => return Ok(exit),
    };
    let workers = worker_catalog(&graph, &tools, &mut diags);
    for m in modes(mode) {
        let dir = evoflux_agents::team::load_agents(&graph, m, &mut diags);
        for agent in dir.compile_all(&tools, &mut diags) {
            diags.extend(unknown_mcp_servers(&agent, &servers));
        }
        diags.extend(members_shadowing_workers(&dir, &workers));
    }
    let v = Validation {
        valid: !diags.has_errors(),
        errors: diags.count(evoflux_core::Severity::Error),
        warnings: diags.count(evoflux_core::Severity::Warning),
    };
    out.result(&v, || {
        if v.valid {
            format!("agents are valid ({} warnings)\n", v.warnings)
        } else {
            format!("agents have {} errors\n", v.errors)
        }
    });
    out.diagnostics(&diags);
    Ok(if v.valid { Exit::Ok } else { Exit::Invalid })
}

/// The worker catalog the team's names are checked against. A defective
/// framework worker is evoflux's bug: reported, and nothing is shadowed.
fn worker_catalog(
    graph: &CompiledGraph,
    tools: &ToolCatalog,
    diags: &mut Diagnostics,
) -> evoflux_agents::worker::WorkerCatalog {
    match evoflux_agents::worker::load_workers(graph, tools, &mut Diagnostics::new()) {
        Ok(c) => c,
        Err(e) => {
            diags.push(Diagnostic::error("worker/catalog-defective", e.to_string()));
            evoflux_agents::worker::WorkerCatalog::default()
        }
    }
}

/// An `mcp:` entry no server answers to would leave the agent without
/// those tools, found only at run time; say so while validating.
fn unknown_mcp_servers(
    agent: &EffectiveAgentConfig,
    servers: &std::collections::BTreeSet<String>,
) -> Vec<evoflux_core::Diagnostic> {
    agent
        .mcp
        .iter()
        .filter(|name| !servers.contains(name.as_str()))
        .map(|name| {
            let known: Vec<&str> = servers.iter().map(String::as_str).collect();
            let mut d = evoflux_core::Diagnostic::warning(
                "agent/mcp-server-unknown",
                format!(
                    "agent `{}` names MCP server `{name}`, which no mcp.json or enabled plugin defines; \
                     known servers: {} (a plugin's server is named `<plugin>/<server>`, as `evoflux mcp list` shows)",
                    agent.name,
                    if known.is_empty() { "none".to_owned() } else { known.join(", ") }
                ),
            )
            .with_field("mcp");
            if let evoflux_agents::team::AgentSource::File { path, .. } = &agent.source {
                d = d.with_file(path);
            }
            d
        })
        .collect()
}

#[derive(Serialize)]
struct Compiled {
    mode: AppMode,
    lead: String,
    members: Vec<String>,
    agents: Vec<EffectiveAgentConfig>,
    /// The team's tools this build cannot run (never offered to a model).
    tools_not_in_build: Vec<ToolNotInBuild>,
}

fn compile(
    out: &Output,
    mode: AppMode,
    lead: Option<&str>,
    sources: &SourceArgs,
) -> anyhow::Result<Exit> {
    let graph = match graph(out, sources)? {
        Ok(g) => g,
        Err(exit) => return Ok(exit),
    };
    let tools = ToolCatalog::from_graph(&graph);
    let mut diags = Diagnostics::new();
    let dir = evoflux_agents::team::load_agents(&graph, mode, &mut diags);
    let team = match dir.team(lead) {
        Ok(t) => t,
        Err(e) => {
            diags.push(Diagnostic::error("agent/team-invalid", e.to_string()));
            out.diagnostics(&diags);
            return Ok(Exit::Invalid);
        }
    };
    let mut agents = Vec::new();
    for name in std::iter::once(&team.lead).chain(&team.members) {
        if let Some(entry) = dir.get(name)
            && let Some(raw) = &entry.raw
        {
            agents.push(compile_agent_config(
                raw,
                entry.source.clone(),
                &tools,
                &mut diags,
            ));
        }
    }
    let compiled = Compiled {
        mode,
        lead: team.lead,
        members: team.members,
        tools_not_in_build: tools_not_in_build(&tools, agents.iter().flat_map(|a| &a.tools)),
        agents,
    };
    out.result(&compiled, || {
        let mut s = format!(
            "{} team of {}: {}\n",
            compiled.mode,
            compiled.lead,
            compiled.members.join(", ")
        );
        for a in &compiled.agents {
            s.push_str(&format!(
                "\n{} ({})\n  tools: {}\n  skills: {}\n  mcp: {}\n",
                a.name,
                a.role.as_str(),
                tool_list(&a.tools, &compiled.tools_not_in_build),
                a.skills.join(", "),
                a.mcp.join(", ")
            ));
        }
        s
    });
    out.diagnostics(&diags);
    Ok(if diags.has_errors() {
        Exit::Invalid
    } else {
        Exit::Ok
    })
}

fn init(out: &Output) -> anyhow::Result<Exit> {
    let dirs = match super::resolve_dirs(out) {
        Ok(d) => d,
        Err(exit) => return Ok(exit),
    };
    let report = init_seeds(dirs.config_dir())?;
    out.result(&report, || {
        let mut s = String::new();
        for p in &report.created {
            s.push_str(&format!("created {}\n", p.display()));
        }
        for p in &report.kept {
            s.push_str(&format!("kept    {}\n", p.display()));
        }
        s
    });
    Ok(Exit::Ok)
}
