//! `doctor`: checks a setup the way a session would use it and says what
//! to fix. Every front end shows the same report (the CLI's `evoflux
//! doctor`, its `--json`); none of them holds a check of its own.
//!
//! The checks run in order, and a check that needs the compiled sources
//! is skipped, saying why, when they do not compile. Each check has a
//! status and findings: diagnostics with stable codes (`doctor/…`, or the
//! code of the problem it found, such as `compile/connection-invalid`),
//! whose error severity makes the setup unhealthy. Secrets are named,
//! never shown: a key is "set" or "not set".

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use evoflux_core::config::{ConfigOrigin, LoadedConfig, ModelRef, ProviderKind};
use evoflux_core::{Diagnostic, Diagnostics, Severity};
use evoflux_graph::CompiledGraph;
use evoflux_graph::candidate::{AppFolder, Owner};
use evoflux_graph::compose::CompositionEntry;
use evoflux_graph::sandbox::{FilesystemPolicy, NetworkPolicy};
use serde::Serialize;

use crate::{AppContext, selected_config, selected_sandbox};

/// What `doctor` checks. Closed; reported in this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Check {
    /// The data directory: present or creatable, writable, private.
    DataDir,
    /// The sources compile: config, sandbox, tools, connections, ….
    Sources,
    /// Each provider's key variable, by name.
    Keys,
    /// The model sessions use answers a minimal request.
    Model,
    /// Every MCP server starts.
    Mcp,
    /// Every skill is valid.
    Skills,
    /// Each mode has a lead, and its agents load.
    Agents,
    /// Commands can be confined as `sandbox.toml` asks.
    Sandbox,
    /// Other harnesses' files found, and how they were read.
    OtherHarnesses,
    /// Prompt commands read from files (Claude Code's commands, codex's
    /// prompts), and the files that could not be read.
    Commands,
}

impl Check {
    pub const fn as_str(self) -> &'static str {
        match self {
            Check::DataDir => "data-dir",
            Check::Sources => "sources",
            Check::Keys => "keys",
            Check::Model => "model",
            Check::Mcp => "mcp",
            Check::Skills => "skills",
            Check::Agents => "agents",
            Check::Sandbox => "sandbox",
            Check::OtherHarnesses => "other-harnesses",
            Check::Commands => "commands",
        }
    }
}

/// How a check came out. Closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    Ok,
    /// Not checked (or partly); `summary` or a detail says why.
    Skipped,
    /// Works, with something worth knowing.
    Warning,
    /// Something to fix.
    Problem,
}

/// One check's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct CheckResult {
    pub check: Check,
    pub status: Status,
    /// One line for a person.
    pub summary: String,
    /// What was found, one line each (a key "set", a server "ready").
    pub details: Vec<String>,
    /// The problems and warnings, with codes.
    pub findings: Vec<Diagnostic>,
    /// The MCP check's: per server, which agents may use it and why
    /// ([`crate::mcp_grant`]), as its details say for a person.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub grants: Vec<crate::mcp_grant::ServerGrants>,
}

impl CheckResult {
    fn new(check: Check, summary: impl Into<String>) -> CheckResult {
        CheckResult {
            check,
            status: Status::Ok,
            summary: summary.into(),
            details: Vec::new(),
            findings: Vec::new(),
            grants: Vec::new(),
        }
    }

    fn skipped(check: Check, why: impl Into<String>) -> CheckResult {
        CheckResult {
            status: Status::Skipped,
            ..CheckResult::new(check, why)
        }
    }

    /// Adds a finding; the status follows the worst one.
    fn find(&mut self, d: Diagnostic) {
        let status = match d.severity {
            Severity::Error => Status::Problem,
            Severity::Warning => Status::Warning,
            Severity::Info => Status::Ok,
        };
        self.status = self.status.max(status);
        self.findings.push(d);
    }
}

/// The whole report.
#[derive(Debug, Clone, Serialize)]
pub struct DoctorReport {
    /// No check found a problem.
    pub healthy: bool,
    pub checks: Vec<CheckResult>,
}

/// What `doctor` is run with; the environment is explicit so that nothing
/// below reads the process's own.
#[derive(Debug, Clone)]
pub struct DoctorOptions {
    /// The workspaces whose sources are checked (default: the start
    /// directory's repository).
    pub workspaces: Vec<PathBuf>,
    /// Check this model instead of the configured one.
    pub model: Option<String>,
    /// The environment keys and references are read from, and `PATH`.
    pub env: Vec<(OsString, OsString)>,
    /// How long MCP servers may take to start.
    pub mcp_wait: Duration,
    /// How long the minimal model request may take.
    pub model_timeout: Duration,
}

/// Runs every check.
pub async fn doctor(app: &AppContext, options: &DoctorOptions) -> DoctorReport {
    let env: BTreeMap<String, String> = options
        .env
        .iter()
        .filter_map(|(k, v)| Some((k.to_str()?.to_owned(), v.to_str()?.to_owned())))
        .collect();
    let mut checks = vec![data_dir(app.dirs.data_dir())];
    match app.compile(&options.workspaces) {
        Err(e) => {
            let mut sources = CheckResult::new(Check::Sources, "the sources do not compile");
            sources.find(Diagnostic::error(e.code(), e.to_string()));
            checks.push(sources);
            for check in [
                Check::Keys,
                Check::Model,
                Check::Mcp,
                Check::Skills,
                Check::Agents,
                Check::Sandbox,
                Check::OtherHarnesses,
            ] {
                checks.push(CheckResult::skipped(check, "the sources do not compile"));
            }
            checks.push(commands(app, options));
        }
        Ok(graph) => {
            checks.push(sources(&graph));
            // The selected config, read once for the checks that need it.
            let config = selected_config(&graph).0;
            let models = models_to_check(config.as_ref(), options);
            checks.push(keys(config.as_ref(), &models, &env));
            checks.push(model(app, config.as_ref(), &models, &env, options.model_timeout).await);
            checks.push(mcp(app, &graph, options, &env).await);
            checks.push(skills(app, &graph));
            checks.push(agents(app, &graph));
            checks.push(sandbox(&graph, &env));
            checks.push(other_harnesses(app, &graph, options));
            checks.push(commands(app, options));
        }
    }
    DoctorReport {
        healthy: checks.iter().all(|c| c.status != Status::Problem),
        checks,
    }
}

fn data_dir(dir: &Path) -> CheckResult {
    let mut c = CheckResult::new(Check::DataDir, dir.display().to_string());
    if !dir.exists() {
        // Created (private) on first use; its parent must allow that.
        let parent = dir.ancestors().skip(1).find(|p| p.exists());
        match parent {
            Some(p) if writable(p) => c.details.push("not created yet; made on first use".into()),
            _ => c.find(
                Diagnostic::error(
                    "doctor/data-dir-unwritable",
                    "the data directory does not exist and cannot be created: set \
                     EVOFLUX_DATA_DIR or XDG_DATA_HOME to a folder you can write",
                )
                .with_file(dir),
            ),
        }
        return c;
    }
    if !dir.is_dir() {
        c.find(
            Diagnostic::error(
                "doctor/data-dir-unwritable",
                "the data directory is not a directory: move the file away, or set \
                 EVOFLUX_DATA_DIR to a folder",
            )
            .with_file(dir),
        );
        return c;
    }
    if !writable(dir) {
        c.find(
            Diagnostic::error(
                "doctor/data-dir-unwritable",
                "the data directory is not writable: sessions and plugins cannot be saved",
            )
            .with_file(dir),
        );
    } else {
        c.details.push("writable".into());
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if let Ok(meta) = std::fs::metadata(dir) {
            let mode = meta.permissions().mode() & 0o777;
            if mode & 0o077 != 0 {
                c.find(
                    Diagnostic::error(
                        "doctor/data-dir-not-private",
                        format!(
                            "the data directory is readable by others (mode {mode:o}): it holds \
                             transcripts and plugin credentials; run chmod 700 on it"
                        ),
                    )
                    .with_file(dir),
                );
            } else {
                c.details.push(format!("private (mode {mode:o})"));
            }
        }
    }
    c
}

/// Whether a file can be created in `dir` (tried, then removed).
fn writable(dir: &Path) -> bool {
    let probe = dir.join(format!(".evoflux-doctor-{}", std::process::id()));
    let created = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
        .is_ok();
    if created {
        let _ = std::fs::remove_file(&probe);
    }
    created
}

fn sources(graph: &CompiledGraph) -> CheckResult {
    let mut c = CheckResult::new(
        Check::Sources,
        format!("{} sources selected", graph.nodes.len()),
    );
    for d in graph.diagnostics.iter() {
        // Skill problems are the skills check's, foreign files the other
        // harnesses check's.
        let on_skill = d
            .locator
            .slot
            .as_ref()
            .is_some_and(|s| s.kind == evoflux_core::SlotKind::Skill);
        if on_skill
            || d.code.starts_with("discover/foreign-")
            || d.code == "compile/connection-not-carried"
        {
            continue;
        }
        if d.severity != Severity::Info {
            c.find(d.clone());
        }
    }
    c
}

/// The models a session would use: the one asked for, else the config's
/// default.
fn models_to_check(config: Option<&LoadedConfig>, options: &DoctorOptions) -> Vec<String> {
    match &options.model {
        Some(m) => vec![m.clone()],
        None => config
            .map(|loaded| vec![loaded.config.model.default.to_string()])
            .unwrap_or_default(),
    }
}

fn keys(
    config: Option<&LoadedConfig>,
    models: &[String],
    env: &BTreeMap<String, String>,
) -> CheckResult {
    let mut c = CheckResult::new(Check::Keys, "no provider reads a key");
    let Some(loaded) = config else {
        return CheckResult::skipped(Check::Keys, "config.toml has errors");
    };
    let in_use: Vec<String> = models
        .iter()
        .filter_map(|m| m.parse::<ModelRef>().ok().map(|r| r.provider))
        .collect();
    let mut count = 0;
    for (name, provider) in &loaded.config.providers {
        let Some(var) = &provider.api_key_env else {
            continue;
        };
        count += 1;
        let set = env.get(var).is_some_and(|v| !v.is_empty());
        if set {
            c.details.push(format!("{name}: {var} is set"));
        } else if in_use.contains(name) {
            c.find(Diagnostic::error(
                "doctor/key-missing",
                format!(
                    "provider `{name}` reads its key from {var}, which is not set: export it \
                     before starting evoflux"
                ),
            ));
        } else if loaded.provider_origins.get(name) == Some(&ConfigOrigin::Embedded) {
            // A provider evoflux ships, unused: nothing the user set up.
            c.details
                .push(format!("{name}: {var} is not set (not in use)"));
        } else {
            c.find(Diagnostic::warning(
                "doctor/key-unset",
                format!("provider `{name}` reads its key from {var}, which is not set; its models fail until it is"),
            ));
        }
    }
    if count > 0 {
        c.summary = format!("{count} provider key{}", if count == 1 { "" } else { "s" });
    }
    c
}

async fn model(
    app: &AppContext,
    config: Option<&LoadedConfig>,
    models: &[String],
    env: &BTreeMap<String, String>,
    timeout: Duration,
) -> CheckResult {
    let Some(loaded) = config else {
        return CheckResult::skipped(Check::Model, "config.toml has errors");
    };
    let mut c = CheckResult::new(Check::Model, models.join(", "));
    for model in models {
        let model_ref: ModelRef = match model.parse() {
            Ok(r) => r,
            Err(e) => {
                c.find(Diagnostic::error(
                    "session/model-invalid",
                    format!("`{model}` is not a model: {e}"),
                ));
                continue;
            }
        };
        if let Some(var) = loaded
            .config
            .providers
            .get(&model_ref.provider)
            .and_then(|p| p.api_key_env.as_ref())
            .filter(|var| env.get(*var).is_none_or(String::is_empty))
        {
            c.status = c.status.max(Status::Skipped);
            c.details
                .push(format!("{model}: not called, because {var} is not set"));
            continue;
        }
        let lookup = env.clone();
        let provider_options = evoflux_model::ProviderOptions {
            env: evoflux_model::EnvLookup::new(move |k| lookup.get(k).cloned()),
            cache_dir: Some(app.dirs.cache_dir().join("models")),
            ..evoflux_model::ProviderOptions::default()
        };
        let provider =
            match evoflux_model::resolve(&model_ref, &loaded.config, &app.cwd, &provider_options) {
                Ok(p) => p,
                Err(e) => {
                    c.find(Diagnostic::error(e.code(), format!("{model}: {e}")));
                    continue;
                }
            };
        match provider.kind() {
            // A script is replayed, not reached: loading it is the check.
            ProviderKind::Scripted => {
                c.details
                    .push(format!("{model}: the script loads (not called)"));
                continue;
            }
            ProviderKind::Openai | ProviderKind::Anthropic | ProviderKind::Local => {}
        }
        let request = evoflux_model::Request {
            model: model_ref.model.clone(),
            messages: vec![evoflux_model::Message::user("Reply with the word ok.")],
            tools: Vec::new(),
            max_tokens: Some(1),
            temperature: Some(0.0),
            tool_choice: evoflux_model::ToolChoice::Auto,
            cache_key: None,
            provider_tools: Vec::new(),
            reasoning_effort: None,
            purpose: evoflux_model::CallPurpose::Turn,
            cache: evoflux_model::CacheHints::default(),
        };
        let started = Instant::now();
        let answer =
            tokio::time::timeout(timeout, evoflux_model::collect(provider.stream(request))).await;
        match answer {
            Ok(Ok(_)) => c.details.push(format!(
                "{model}: answered in {} ms",
                started.elapsed().as_millis()
            )),
            Ok(Err(e)) => c.find(Diagnostic::error(
                "doctor/model-unreachable",
                format!(
                    "{model} did not answer a minimal request: {e} ({})",
                    e.code()
                ),
            )),
            Err(_) => c.find(Diagnostic::error(
                "doctor/model-unreachable",
                format!(
                    "{model} did not answer a minimal request within {} s",
                    timeout.as_secs()
                ),
            )),
        }
    }
    c
}

async fn mcp(
    app: &AppContext,
    graph: &CompiledGraph,
    options: &DoctorOptions,
    env: &BTreeMap<String, String>,
) -> CheckResult {
    let roots = app
        .root_options(&options.workspaces)
        .map(|o| o.workspaces)
        .unwrap_or_default();
    let manager_options = evoflux_mcp::ManagerOptions {
        roots,
        reference_env: env.clone(),
        ..evoflux_mcp::ManagerOptions::default()
    };
    let (runtime, diagnostics) = match app.mcp_servers_with(graph, manager_options) {
        Ok(r) => r,
        Err(e) => {
            let mut c = CheckResult::new(Check::Mcp, "the MCP servers cannot be set up");
            c.find(Diagnostic::error(e.code(), e.to_string()));
            return c;
        }
    };
    let mut c = CheckResult::new(Check::Mcp, "no MCP servers");
    let bounds = crate::teams::mcp_bounds(
        &selected_config(graph)
            .0
            .unwrap_or_else(LoadedConfig::embedded)
            .config,
    );
    c.details.push(format!(
        "bounds: each call's result up to {} MiB ({}), {} s per call, {} s to start unless an \
         entry sets startup_timeout_secs",
        bounds.max_result_mib,
        if bounds.max_result_set {
            "[mcp] max_result_mib"
        } else {
            "the default; set [mcp] max_result_mib"
        },
        bounds.call_timeout_secs,
        bounds.start_timeout_secs
    ));
    for d in diagnostics
        .into_iter()
        .filter(|d| d.severity != Severity::Info)
    {
        c.find(d);
    }
    runtime.start_all();
    runtime.settle(options.mcp_wait).await;
    let listing = runtime.listing();
    runtime.shutdown().await;
    let ready = listing
        .iter()
        .filter(|s| s.status.state == evoflux_mcp::ServerState::Ready)
        .count();
    if !listing.is_empty() {
        c.summary = format!("{ready} of {} servers ready", listing.len());
    }
    for s in &listing {
        let name = &s.server;
        match s.status.state {
            evoflux_mcp::ServerState::Ready => c.details.push(format!(
                "{name}: ready, {} tool{}",
                s.status.tools.len(),
                if s.status.tools.len() == 1 { "" } else { "s" }
            )),
            evoflux_mcp::ServerState::Failed => {
                let (code, why) = s.status.last_error.as_ref().map_or_else(
                    || ("mcp/failed".to_owned(), "it failed".to_owned()),
                    |e| (e.code.clone(), e.message.clone()),
                );
                c.find(Diagnostic::error(
                    "doctor/mcp-failed",
                    format!("server `{name}` does not start: {why} ({code})"),
                ));
            }
            evoflux_mcp::ServerState::Starting | evoflux_mcp::ServerState::Stopped => {
                c.find(Diagnostic::error(
                    "doctor/mcp-failed",
                    format!(
                        "server `{name}` did not become ready within {} s",
                        options.mcp_wait.as_secs()
                    ),
                ));
            }
            evoflux_mcp::ServerState::NeedsLogin => c.find(Diagnostic::warning(
                "doctor/mcp-needs-login",
                format!(
                    "server `{name}` asks for an OAuth login: log in from the web UI's MCP \
                     servers, or with `evoflux mcp login {name}`"
                ),
            )),
            evoflux_mcp::ServerState::NeedsCredentials => c.find(Diagnostic::warning(
                "doctor/mcp-needs-credentials",
                format!("server `{name}` waits for its plugin's credentials"),
            )),
            evoflux_mcp::ServerState::Skipped => c.find(Diagnostic::warning(
                "doctor/mcp-not-started",
                format!("server `{name}` uses the legacy `sse` transport and is never started"),
            )),
        }
    }
    grants(graph, &listing, &mut c);
    let waiting: Vec<String> = graph
        .composition
        .entries
        .iter()
        .filter_map(|e| match e {
            CompositionEntry::AwaitingTrust { source }
                if source.slot.starts_with("connections/") =>
            {
                Some(source.slot.trim_start_matches("connections/").to_owned())
            }
            CompositionEntry::AwaitingTrust { .. }
            | CompositionEntry::Shadowed { .. }
            | CompositionEntry::Disabled { .. }
            | CompositionEntry::Layered { .. } => None,
        })
        .collect();
    if !waiting.is_empty() {
        c.find(Diagnostic::warning(
            "doctor/mcp-awaiting-trust",
            format!(
                "{} of this repository wait{} until you trust it (evoflux trust)",
                waiting
                    .iter()
                    .map(|n| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(", "),
                if waiting.len() == 1 { "s" } else { "" }
            ),
        ));
    }
    c
}

/// Which agents may use each server and why, one detail line per agent
/// and server, and `[mcp] default_grant` names that match no server.
fn grants(graph: &CompiledGraph, listing: &[evoflux_mcp::ServerListing], c: &mut CheckResult) {
    let loaded = selected_config(graph)
        .0
        .unwrap_or_else(LoadedConfig::embedded);
    let servers: Vec<String> = listing.iter().map(|s| s.server.clone()).collect();
    for d in crate::mcp_grant::unknown_grant_names(&loaded, &servers) {
        c.find(d);
    }
    let grants = crate::mcp_grant::server_grants(graph, &loaded.config.mcp.default_grant, &servers);
    for g in &grants {
        for a in &g.agents {
            c.details.push(format!(
                "{}: {} {}: {}",
                g.server,
                a.agent,
                if a.granted {
                    "can use it"
                } else {
                    "cannot use it"
                },
                a.reason.describe()
            ));
        }
        if g.agents.is_empty() {
            c.details.push(format!(
                "{}: no agent can use it: list it in an agent file's `mcp:` or in [mcp] \
                 default_grant",
                g.server
            ));
        }
    }
    c.grants = grants;
}

fn skills(app: &AppContext, graph: &CompiledGraph) -> CheckResult {
    let view = crate::skills_view::SkillsView::load(
        &app.dirs,
        graph,
        evoflux_skills::selection::Depth::Settled,
    );
    let rows = view.rows(None);
    let valid = rows.iter().filter(|r| r.valid).count();
    let mut c = CheckResult::new(
        Check::Skills,
        format!("{valid} of {} skills valid", rows.len()),
    );
    for r in rows.iter().filter(|r| !r.valid) {
        c.find(
            Diagnostic::error(
                "doctor/skill-invalid",
                format!(
                    "skill `{}` is invalid ({}); `evoflux skills show {}` says why",
                    r.name,
                    r.diagnostics.join(", "),
                    r.name
                ),
            )
            .with_file(&r.skill_file),
        );
    }
    for d in view
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
    {
        c.find(d.clone());
    }
    c
}

fn agents(app: &AppContext, graph: &CompiledGraph) -> CheckResult {
    let (teams, diags) = app.checked_teams(graph);
    let mut c = CheckResult::new(
        Check::Agents,
        teams
            .iter()
            .map(|t| format!("{} lead `{}`", t.mode, t.lead))
            .collect::<Vec<_>>()
            .join(", "),
    );
    for t in &teams {
        c.details.push(format!(
            "{}: lead `{}`, {} member{}, {} worker{}",
            t.mode,
            t.lead,
            t.members.len(),
            if t.members.len() == 1 { "" } else { "s" },
            t.workers.len(),
            if t.workers.len() == 1 { "" } else { "s" },
        ));
    }
    // Claude Code's subagents join the Coding team as read-only members:
    // say which were picked up and from where.
    for node in graph
        .nodes
        .iter()
        .filter(|n| n.slot.kind == evoflux_graph::SlotKind::CodingAgent)
    {
        let Some(bound) = graph.binding(&node.source_id) else {
            continue;
        };
        if let (
            Owner::Application {
                folder: AppFolder::Claude,
                ..
            },
            evoflux_graph::Binding::File { path, .. },
        ) = (&bound.owner, &bound.binding)
        {
            c.details.push(format!(
                "coding: Claude Code agent `{}` from {} ({} layer, read-only)",
                node.slot.name,
                path.display(),
                bound.layer
            ));
        }
    }
    // The same problem reached through both modes is one finding.
    let mut seen = std::collections::BTreeSet::new();
    for d in Diagnostics::into_iter(diags) {
        if d.severity != Severity::Info && seen.insert((d.code.clone(), d.message.clone())) {
            c.find(d);
        }
    }
    c
}

fn sandbox(graph: &CompiledGraph, env: &BTreeMap<String, String>) -> CheckResult {
    let policy = match selected_sandbox(graph) {
        Ok(p) => p,
        Err(_) => return CheckResult::skipped(Check::Sandbox, "sandbox.toml has errors"),
    };
    if policy.filesystem == FilesystemPolicy::FullAccess && policy.network == NetworkPolicy::Allow {
        let mut c = CheckResult::new(
            Check::Sandbox,
            "commands run unconfined, as sandbox.toml says",
        );
        c.details
            .push("filesystem = \"full-access\" and the network is allowed".into());
        return c;
    }
    let path = env.get("PATH").map(std::ffi::OsStr::new);
    match evoflux_tools::sandbox::probe_bubblewrap(path) {
        Ok(program) => {
            let layers = evoflux_tools::sandbox::probe_layers(path);
            let required = |l: &&evoflux_tools::sandbox::Layer| {
                l.role == evoflux_tools::sandbox::LayerRole::Required
            };
            let missing = layers
                .iter()
                .filter(required)
                .filter(|l| l.state.is_err())
                .count();
            let mut c = CheckResult::new(
                Check::Sandbox,
                match missing {
                    0 => format!("commands are confined by {}", program.display()),
                    n => format!(
                        "commands are confined by {}, with {n} layer{} missing",
                        program.display(),
                        if n == 1 { "" } else { "s" }
                    ),
                },
            );
            for layer in layers {
                match (layer.state, layer.role) {
                    (Ok(what), _) => c.details.push(format!("{}: {what}", layer.name)),
                    (Err(why), evoflux_tools::sandbox::LayerRole::Extra) => {
                        c.details.push(format!("{}: not used ({why})", layer.name));
                    }
                    (Err(why), evoflux_tools::sandbox::LayerRole::Required) => {
                        c.details.push(format!("{}: missing", layer.name));
                        c.find(
                            Diagnostic::warning(
                                "doctor/sandbox-layer-missing",
                                format!("{}: {why}", layer.name),
                            )
                            .with_field(layer.name),
                        );
                    }
                }
            }
            c
        }
        Err(why) => {
            let mut c = CheckResult::new(Check::Sandbox, "commands cannot be confined");
            c.find(Diagnostic::error("doctor/sandbox-unavailable", why));
            c
        }
    }
}

fn other_harnesses(
    app: &AppContext,
    graph: &CompiledGraph,
    options: &DoctorOptions,
) -> CheckResult {
    let mut c = CheckResult::new(Check::OtherHarnesses, "nothing of other tools found");
    let mut read: BTreeMap<PathBuf, Vec<String>> = BTreeMap::new();
    let foreign = |owner: &Owner| match owner {
        Owner::Application { folder, path, .. } => match folder {
            AppFolder::Claude
            | AppFolder::Codex
            | AppFolder::Vscode
            | AppFolder::Cursor
            | AppFolder::Opencode => Some(path.clone()),
            AppFolder::Evoflux | AppFolder::Agents => None,
        },
        Owner::Framework { .. } | Owner::Plugin { .. } => None,
    };
    for node in &graph.nodes {
        if let Some(bound) = graph.binding(&node.source_id)
            && let Some(path) = foreign(&bound.owner)
        {
            read.entry(path)
                .or_default()
                .push(format!("{} (used)", node.slot));
        }
    }
    for entry in &graph.composition.entries {
        let (kind, source, _) = entry.parts();
        if let Some(path) = foreign(&source.owner) {
            let how = match kind {
                evoflux_graph::compose::EntryKind::Shadowed => "shadowed by another source",
                evoflux_graph::compose::EntryKind::Disabled => "disabled",
                evoflux_graph::compose::EntryKind::Layered => "layered",
                evoflux_graph::compose::EntryKind::AwaitingTrust => "waits for trust",
            };
            read.entry(path)
                .or_default()
                .push(format!("{} ({how})", source.slot));
        }
    }
    for (path, slots) in &read {
        c.details
            .push(format!("{}: {}", path.display(), slots.join(", ")));
    }
    let loaded = selected_config(graph)
        .0
        .unwrap_or_else(LoadedConfig::embedded);
    let user = app.user_instructions(&loaded.config);
    if let Some(home) = &user.home {
        for file in &user.files {
            c.details.push(format!(
                "{}: your instructions, before every repository's",
                file.display()
            ));
            imports(
                evoflux_harness::workspace_instructions::load_user_instruction(file, home),
                &mut c,
            );
        }
    }
    if let Ok(repositories) = app.repositories(graph, &options.workspaces) {
        for repo in &repositories {
            for file in &repo.instructions {
                let name = file.file_name().map(|n| n.to_string_lossy().into_owned());
                if name.as_deref() != Some("AGENTS.md") {
                    c.details.push(format!(
                        "{}: instructions, read where AGENTS.md would be",
                        file.display()
                    ));
                }
                imports(
                    evoflux_harness::workspace_instructions::load_instruction(file),
                    &mut c,
                );
            }
        }
        let roots: Vec<PathBuf> = repositories.iter().map(|r| r.path.clone()).collect();
        let claude = app.claude_permissions(&roots, loaded.config.compat.permissions);
        for (file, rules) in &claude.files {
            c.details.push(format!(
                "{}: {rules} permission rule{} applied",
                file.display(),
                if *rules == 1 { "" } else { "s" }
            ));
        }
        for d in claude.diagnostics {
            c.find(d);
        }
    }
    for d in graph.diagnostics.iter().filter(|d| {
        d.code.starts_with("discover/foreign-") || d.code == "compile/connection-not-carried"
    }) {
        c.find(d.clone());
    }
    if !c.details.is_empty() {
        c.summary = format!(
            "{} file{} of other tools read",
            c.details.len(),
            if c.details.len() == 1 { "" } else { "s" }
        );
    }
    c
}

/// The prompt commands a session here would offer from files, each with
/// where it comes from, and every file that could not be read.
fn commands(app: &AppContext, options: &DoctorOptions) -> CheckResult {
    use evoflux_harness::prompt_commands::PromptSource;
    let (files, diags) = match app.prompt_files(&options.workspaces) {
        Ok(found) => found,
        Err(e) => {
            let mut c = CheckResult::new(Check::Commands, "the command folders cannot be listed");
            c.find(Diagnostic::warning(e.code(), e.to_string()));
            return c;
        }
    };
    let mut c = CheckResult::new(
        Check::Commands,
        match files.len() {
            0 => "no command files found".to_owned(),
            1 => "1 command from files".to_owned(),
            n => format!("{n} commands from files"),
        },
    );
    for f in &files {
        let (what, path) = match &f.command.source {
            PromptSource::ClaudeCommand { path } => ("Claude Code command", path.display()),
            PromptSource::CodexPrompt { path } => ("codex prompt", path.display()),
            PromptSource::McpPrompt { .. } => continue,
        };
        c.details.push(format!(
            "/{}: {what} from {path} (read-only)",
            f.command.name
        ));
    }
    for d in diags {
        c.find(d);
    }
    c
}

/// An instruction file's `@path` imports: the files inlined, and each one
/// that was not, as a finding.
fn imports(
    file: Option<evoflux_harness::workspace_instructions::InstructionFile>,
    c: &mut CheckResult,
) {
    let Some(file) = file else { return };
    if !file.imported.is_empty() {
        c.details.push(format!(
            "{}: imports {}",
            file.path.display(),
            file.imported
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    for problem in &file.problems {
        c.find(problem.to_diagnostic());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn codes(c: &CheckResult) -> Vec<&str> {
        c.findings.iter().map(|d| d.code.as_ref()).collect()
    }

    #[cfg(unix)]
    #[test]
    fn a_data_dir_others_can_read_is_a_problem() {
        use std::os::unix::fs::PermissionsExt;
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("data");
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let c = data_dir(&dir);
        assert_eq!(c.status, Status::Problem);
        assert_eq!(codes(&c), ["doctor/data-dir-not-private"]);
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        let c = data_dir(&dir);
        assert_eq!(c.status, Status::Ok, "{:?}", c.findings);
        assert!(
            std::fs::read_dir(&dir).unwrap().next().is_none(),
            "the write probe is removed"
        );
    }

    #[test]
    fn a_data_dir_that_cannot_be_written_is_a_problem() {
        let t = tempfile::tempdir().unwrap();
        // A file where a folder should be: nothing can be created in it.
        let file = t.path().join("data");
        std::fs::write(&file, "").unwrap();
        let c = data_dir(&file);
        assert_eq!(codes(&c), ["doctor/data-dir-unwritable"]);
        let c = data_dir(&file.join("below"));
        assert_eq!(codes(&c), ["doctor/data-dir-unwritable"]);
        let c = data_dir(&t.path().join("new"));
        assert_eq!(c.status, Status::Ok);
        assert_eq!(c.details, ["not created yet; made on first use"]);
    }

    #[test]
    fn the_worst_finding_decides_and_skipped_never_hides_a_problem() {
        let mut c = CheckResult::skipped(Check::Model, "x");
        c.find(Diagnostic::warning("doctor/a", "w"));
        assert_eq!(c.status, Status::Warning);
        c.find(Diagnostic::error("doctor/b", "e"));
        c.find(Diagnostic::info("doctor/c", "i"));
        assert_eq!(c.status, Status::Problem);
    }
}
