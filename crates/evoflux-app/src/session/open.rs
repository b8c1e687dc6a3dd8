//! [`SessionBuilder::open`] in its phases, each named after what it
//! decides, in the order a session is opened: where it lives ([`Place`]:
//! its store, the session it resumes, its mode and repositories), the
//! compile, its lead (or the worker it runs as, [`Lead`]), the settings
//! the graph selects, the diagnostics shown, its model ([`Model`]), its
//! skills, its MCP servers, its team, its hooks, the run setup, and the
//! start under its lease. The order is the order of the refusals: the
//! first phase that refuses the session says why, and nothing that has to
//! be stopped is started before the last one.

use std::path::PathBuf;
use std::sync::Arc;

use evoflux_agents::ToolCatalog;
use evoflux_agents::team::{
    AgentDirectory, EffectiveAgentConfig, Team, compile_agent_config, load_agents,
    worker_agent_config,
};
use evoflux_agents::worker::spec::AgentSpec;
use evoflux_core::config::{ConfigOrigin, LoadedConfig, ModelRef};
use evoflux_core::ids::SessionId;
use evoflux_core::price::Price;
use evoflux_core::trust::repository_root;
use evoflux_core::{AppMode, Diagnostic, Diagnostics};
use evoflux_graph::sandbox::SandboxPolicy;
use evoflux_graph::{CompiledGraph, Slot};
use evoflux_harness::hooks::{HookError, PipelineOptions, standard_pipeline};
use evoflux_harness::lease::{Holder, SessionLease};
use evoflux_harness::skills::{ResolverPolicy, SkillRuntime};
use evoflux_harness::{
    Harness, HookPipeline, Limits, ModelClient, RunSetup, SandboxSetup, SessionRequest,
    SystemClock, TeamSetup,
};
use evoflux_store::{Session, Store, WorkspaceRequest};

use super::children::{BuilderChildren, SkillInputs, price_of, resolver_policy};
use super::{ModelOrigin, OpenedSession, SessionBuilder, SessionError, SessionOptions};
use crate::context::{canonical, hidden_dirs};
use crate::teams::{dispatchable_workers, team_members};
use crate::{selected_checks, selected_config, selected_sandbox};

/// Where the session lives.
struct Place {
    store: Store,
    /// The session resumed; `None` for a new one.
    resumed: Option<Session>,
    /// The persisted mode of a resumed session (a different request is
    /// refused by the store with the session's own words), else the
    /// requested one.
    mode: AppMode,
    /// Coding repositories: as named (canonical, each once), or the
    /// resumed session's, or the repository around the start directory.
    repositories: Vec<PathBuf>,
}

/// The agent the session runs as, and the agents it reaches.
struct Lead {
    directory: AgentDirectory,
    team: Team,
    catalog: ToolCatalog,
    /// The lead, compiled; the worker's recipe as an agent when the
    /// session runs as one.
    agent: EffectiveAgentConfig,
    /// The worker recipes the lead may dispatch.
    workers: Vec<AgentSpec>,
    /// The worker recipe the session runs as ([`SessionBuilder::worker`]).
    worker: Option<AgentSpec>,
    /// The session runs as its mode's default lead and its file lists no
    /// `mcp:`: `[mcp] default_grant` decides its servers
    /// ([`crate::mcp_grant`]).
    default_grant: bool,
    /// What loading the agents found.
    diags: Diagnostics,
}

impl Lead {
    /// The members the lead hands tasks to, in roster order; what is
    /// wrong with them is shown.
    fn members(&self, shown: &mut Diagnostics) -> Vec<EffectiveAgentConfig> {
        let mut diags = Diagnostics::new();
        let members = team_members(&self.directory, &self.team, &self.catalog, &mut diags);
        shown.extend(diags.errors());
        members
    }
}

/// The session's model.
struct Model {
    model_ref: ModelRef,
    origin: ModelOrigin,
    provider: Arc<dyn evoflux_model::Provider>,
    price: Option<Price>,
    /// What the provider was resolved with, for the resolver's and the
    /// children's models.
    options: evoflux_model::ProviderOptions,
}

impl SessionBuilder<'_> {
    /// Opens the session: resolves everything, then creates or resumes it.
    pub async fn open(mut self) -> Result<OpenedSession, SessionError> {
        let reuse_model = self.reuse_model.take();
        let resolver = self.resolver.take();
        let place = self.place().await?;
        let graph = self.compile(&place)?;
        let lead = self.lead(&graph, &place)?;
        let (loaded, policy) = settings(&graph)?;
        let mut shown = shown(&graph, &lead, &loaded);
        // Claude Code commands and codex prompts: what cannot be read is
        // shown (warnings); `doctor` lists the rest.
        let (prompt_files, prompt_diags) = self.app.prompt_files(&self.sources(&place))?;
        shown.extend(
            prompt_diags
                .into_iter()
                .filter(|d| d.severity != evoflux_core::Severity::Info),
        );
        let model = self.model(&place, &lead.agent, &loaded, reuse_model)?;
        let (skill_inputs, resolver) = self.skills(&graph, &loaded, &model, resolver)?;
        let skills = skill_inputs.runtime(place.mode, resolver.clone());
        let mcp = self.mcp(&graph, &place, &mut shown)?;
        let mut lead = lead;
        if lead.default_grant {
            lead.agent.mcp = default_granted(&loaded, &mcp, &mut shown);
        }
        // The client's servers are the lead's, whatever its `mcp:` says.
        for server in &self.session_mcp {
            if !lead.agent.mcp.contains(&server.name) {
                lead.agent.mcp.push(server.name.clone());
            }
        }
        let members = lead.members(&mut shown);
        let checks = selected_checks(&graph, &mut shown);
        let Lead {
            catalog,
            agent,
            workers,
            worker,
            ..
        } = lead;
        let team = self.team(
            (&graph, &loaded),
            &model,
            (members, workers, &catalog),
            (skill_inputs, resolver),
            &mut shown,
        );
        // Claude Code's permission rules (`claude_settings`); what cannot
        // be mapped is `doctor`'s to report.
        let claude = self.app.claude_permissions(
            match place.mode {
                AppMode::Coding => &place.repositories,
                AppMode::Work => &[],
            },
            loaded.config.compat.permissions,
        );
        let pipeline = hooks(
            place.mode,
            &agent,
            &catalog,
            &team,
            &skills,
            (&loaded, self.app.user_instructions(&loaded.config)),
        )?;
        let Place {
            store,
            resumed,
            mode,
            repositories,
        } = place;
        let request = request(&self.options, resumed.as_ref(), mode, repositories, &graph);
        let (holder, held) = (self.lease.take(), self.held_lease);
        let app = self.app;
        let setup = RunSetup {
            store: store.clone(),
            provider: Arc::clone(&model.provider),
            model: model.model_ref.model.clone(),
            model_label: model.model_ref.to_string(),
            price: model.price,
            agent,
            catalog,
            pipeline,
            clock: self.clock.clone().unwrap_or_else(|| Arc::new(SystemClock)),
            events: self.events,
            approver: self.approver,
            limits: Limits {
                model_calls_per_turn: self.options.limits.model_calls_per_turn.max(1),
                max_cost: self
                    .options
                    .limits
                    .max_cost
                    .or(loaded.config.limits.max_cost_usd),
                ..self.options.limits
            }
            .for_worker(worker.as_ref()),
            can_request_input: self.can_request_input,
            network: self.network,
            processes: self.processes,
            artifacts_root: app.artifacts_root(),
            mcp: Some(mcp),
            mcp_call_timeout: evoflux_mcp::DEFAULT_CALL_TIMEOUT,
            skills: Some(skills),
            approvals: evoflux_harness::approval::ApprovalPolicy::from_config(&loaded.config)
                .with_rules(claude.rules),
            sandbox: Some(SandboxSetup {
                policy,
                hidden: hidden_dirs(&app.dirs),
            }),
            // A worker hands nothing on.
            team: worker.is_none().then_some(team),
            checks,
            // Only a root session schedules; its tasks are the user's.
            schedules_dir: Some(app.dirs.config_dir().join("schedules")),
            code_cache: Some(app.dirs.cache_dir().to_path_buf()),
            chromium: app.chromium(),
        };
        let resumed = resumed.map(|s| s.id);
        let (mut harness, lease) =
            start(&store, resumed, held, holder.as_ref(), setup, request).await?;
        harness.use_prompt_files(prompt_files);
        Ok(OpenedSession {
            harness,
            diagnostics: shown,
            model: model.model_ref,
            model_origin: model.origin,
            worker,
            lease,
        })
    }

    /// The store, the session resumed, the mode and the repositories.
    async fn place(&self) -> Result<Place, SessionError> {
        let app = self.app;
        let opts = &self.options;
        let store = match self.store.clone() {
            Some(s) => s,
            None => app.open_store().await?,
        };
        let resumed = match opts.resume {
            Some(id) => Some(store.load(id).await?),
            None => None,
        };
        let mode = match &resumed {
            Some(s) => opts.mode.unwrap_or(s.mode()),
            None => opts.new_session_mode(),
        };
        // Folders named for a Work session (asked for, or resumed) would be
        // silently ignored: refuse them.
        if mode == AppMode::Work && !opts.workspaces.is_empty() {
            return Err(SessionError::WorkspaceInWorkMode {
                workspaces: opts.workspaces.clone(),
            });
        }
        let repositories = match (&resumed, opts.workspaces.is_empty()) {
            (Some(s), true) if s.mode() == AppMode::Coding => s.workspace.roots().to_vec(),
            (_, true) => canonical(&app.cwd, std::slice::from_ref(&app.cwd))?
                .iter()
                .map(|d| repository_root(d))
                .collect(),
            (_, false) => canonical(&app.cwd, &opts.workspaces)?,
        };
        Ok(Place {
            store,
            resumed,
            mode,
            repositories,
        })
    }

    /// The graph of the session's sources. A resumed Coding session is
    /// compiled with its repositories, so its project sources are the ones
    /// it started with.
    fn compile(&self, place: &Place) -> Result<CompiledGraph, SessionError> {
        self.app.compile(&self.sources(place))
    }

    /// The folders whose project sources the session reads.
    fn sources(&self, place: &Place) -> Vec<PathBuf> {
        match place.mode {
            AppMode::Coding => place.repositories.clone(),
            AppMode::Work => self.options.workspaces.clone(),
        }
    }

    /// The lead (the requested one, the resumed session's, or the mode's
    /// default), compiled, with the workers it may dispatch; or the worker
    /// recipe the session runs as.
    fn lead(&self, graph: &CompiledGraph, place: &Place) -> Result<Lead, SessionError> {
        let mode = place.mode;
        let mut diags = Diagnostics::new();
        let lead_name = match (&place.resumed, &self.options.lead) {
            (Some(s), None) => s.lead.clone(),
            (_, lead) => lead.clone(),
        };
        let directory = load_agents(graph, mode, &mut diags);
        let team = directory
            .team(lead_name.as_deref())
            .map_err(|source| SessionError::Lead {
                source,
                diagnostics: diags.errors(),
            })?;
        // The user's own file for the lead that does not load would leave
        // a lower layer's lead (the built-in) to answer in its place: what
        // the user wrote is never passed over in silence.
        let lead_file = graph.slot_diagnostics(&Slot::new(
            evoflux_agents::team::agent_slot_kind(mode),
            team.lead.clone(),
        ));
        if lead_file.has_errors() {
            return Err(SessionError::LeadUnloadable {
                lead: team.lead,
                diagnostics: lead_file.errors(),
            });
        }
        let catalog = ToolCatalog::from_graph(graph);
        let Some((raw, source)) = directory
            .get(&team.lead)
            .and_then(|e| e.raw.as_ref().map(|r| (r, e.source.clone())))
        else {
            return Err(SessionError::LeadUnloadable {
                lead: team.lead,
                diagnostics: diags.errors(),
            });
        };
        let mut agent = compile_agent_config(raw, source, &catalog, &mut diags);
        let mut default_grant = crate::mcp_grant::takes_default_grant(
            raw,
            directory.default_lead.as_deref() == Some(team.lead.as_str()),
        );
        let workers = dispatchable_workers(graph, &catalog, mode, &mut diags);
        let worker = match &self.worker {
            None => None,
            Some(id) => {
                let Some(spec) = workers.iter().find(|w| &w.id == id) else {
                    return Err(SessionError::WorkerUnknown {
                        worker: id.clone(),
                        mode,
                        known: workers.iter().map(|w| w.id.clone()).collect(),
                    });
                };
                agent = worker_agent_config(spec, mode, &catalog);
                // A worker gets only what its recipe declares.
                default_grant = false;
                Some(spec.clone())
            }
        };
        Ok(Lead {
            directory,
            team,
            catalog,
            agent,
            workers,
            worker,
            default_grant,
            diags,
        })
    }

    /// The session's model ([`choose_model`]) and its provider: the
    /// replaced harness's client when it is the same model, else one
    /// resolved now.
    fn model(
        &self,
        place: &Place,
        agent: &EffectiveAgentConfig,
        loaded: &LoadedConfig,
        reuse: Option<ModelClient>,
    ) -> Result<Model, SessionError> {
        let app = self.app;
        let (model, origin) = choose_model(&self.options, place.resumed.as_ref(), agent, loaded);
        let model_ref: ModelRef = model.parse().map_err(|source| SessionError::ModelInvalid {
            value: model.clone(),
            source,
        })?;
        let options = evoflux_model::ProviderOptions {
            cache_dir: Some(app.dirs.cache_dir().join("models")),
            model_file: None,
            ..evoflux_model::ProviderOptions::default()
        };
        let provider: Arc<dyn evoflux_model::Provider> =
            match reuse.filter(|c| c.label == model_ref.to_string()) {
                Some(client) => client.provider,
                None => Arc::from(
                    evoflux_model::resolve(
                        &model_ref,
                        &loaded.config,
                        self.model_dir.as_deref().unwrap_or(&app.cwd),
                        &options,
                    )
                    .map_err(|source| SessionError::Provider {
                        model: model_ref.clone(),
                        origin,
                        source,
                    })?,
                ),
            };
        let price = price_of(&loaded.config, &model_ref, provider.kind());
        Ok(Model {
            model_ref,
            origin,
            provider,
            price,
            options,
        })
    }

    /// What the session's skill runtime is built from, and how its skill
    /// resolver runs: as the builder was told ([`SessionBuilder::resolver`]),
    /// else as `[skills]` says.
    fn skills(
        &self,
        graph: &CompiledGraph,
        loaded: &LoadedConfig,
        model: &Model,
        resolver: Option<ResolverPolicy>,
    ) -> Result<(SkillInputs, ResolverPolicy), SessionError> {
        let inputs = SkillInputs::read(&self.app.dirs, graph);
        let resolver = match resolver {
            Some(policy) => policy,
            None => resolver_policy(
                loaded,
                model.provider.kind(),
                self.model_dir.as_deref().unwrap_or(&self.app.cwd),
                &model.options,
            )?,
        };
        Ok((inputs, resolver))
    }

    /// The MCP servers of the application: nothing starts here; the
    /// session starts the ones its agent is granted, in the background.
    fn mcp(
        &self,
        graph: &CompiledGraph,
        place: &Place,
        shown: &mut Diagnostics,
    ) -> Result<evoflux_mcp::McpRuntime, SessionError> {
        let (mcp, mcp_diags) = self.app.session_mcp_servers(
            graph,
            evoflux_mcp::ManagerOptions {
                roots: match place.mode {
                    AppMode::Coding => place.repositories.clone(),
                    AppMode::Work => Vec::new(),
                },
                ..evoflux_mcp::ManagerOptions::default()
            },
            self.session_mcp.clone(),
        )?;
        let diags = Diagnostics::from(mcp_diags);
        shown.extend(diags.errors());
        // What the client's servers replaced is the client's to know.
        shown.extend(
            diags
                .iter()
                .filter(|d| d.code == evoflux_mcp::codes::SESSION_SERVER_REPLACES)
                .cloned(),
        );
        Ok(mcp)
    }

    /// The team the session's dispatch tools reach: its members and
    /// workers, the external agents (with a starter for them), and what
    /// builds each child's model and pipeline from what this session was
    /// opened with.
    fn team(
        &self,
        (graph, loaded): (&CompiledGraph, &LoadedConfig),
        model: &Model,
        (members, workers, catalog): (Vec<EffectiveAgentConfig>, Vec<AgentSpec>, &ToolCatalog),
        (skills, resolver): (SkillInputs, ResolverPolicy),
        shown: &mut Diagnostics,
    ) -> TeamSetup {
        let app = self.app;
        let remote = match &app.remote_agents {
            Some(_) => evoflux_harness::remote::remote_agents(graph, &members, &workers, shown),
            None => Vec::new(),
        };
        TeamSetup {
            remote,
            remote_runner: app.remote_agents.clone(),
            lineage: evoflux_harness::session::Lineage::root(loaded.config.teams.max_depth()),
            members,
            workers,
            catalog: catalog.clone(),
            network: self.network,
            children: Arc::new(BuilderChildren {
                user_instructions: app.user_instructions(&loaded.config),
                config: loaded.config.clone(),
                cwd: self.model_dir.clone().unwrap_or_else(|| app.cwd.clone()),
                provider_options: model.options.clone(),
                parent: evoflux_harness::ChildModel {
                    provider: Arc::clone(&model.provider),
                    model: model.model_ref.model.clone(),
                    label: model.model_ref.to_string(),
                    price: model.price,
                },
                skills,
                resolver,
            }),
        }
    }
}

/// The servers `[mcp] default_grant` grants the default lead, of those the
/// application runs; a name it lists that no server has is shown.
fn default_granted(
    loaded: &LoadedConfig,
    mcp: &evoflux_mcp::McpRuntime,
    shown: &mut Diagnostics,
) -> Vec<String> {
    let servers: Vec<String> = mcp.listing().into_iter().map(|l| l.server).collect();
    shown.extend(crate::mcp_grant::unknown_grant_names(loaded, &servers));
    crate::mcp_grant::AgentMcp::Default(&loaded.config.mcp.default_grant).servers(&servers)
}

/// The config and the sandbox policy the graph selects: a session never
/// runs on broken ones.
fn settings(graph: &CompiledGraph) -> Result<(LoadedConfig, SandboxPolicy), SessionError> {
    let (loaded, config_diags) = selected_config(graph);
    let Some(loaded) = loaded else {
        return Err(SessionError::Config {
            diagnostics: config_diags,
        });
    };
    let policy =
        selected_sandbox(graph).map_err(|diagnostics| SessionError::Sandbox { diagnostics })?;
    Ok((loaded, policy))
}

/// What the user is told about how the session was opened, so far: the
/// agents' errors, what a trusted repository changed since it was trusted
/// (which waits), and `[approval]` entries that name no tool.
fn shown(graph: &CompiledGraph, lead: &Lead, loaded: &LoadedConfig) -> Diagnostics {
    let mut shown = lead.diags.errors();
    shown.extend(
        graph
            .diagnostics
            .iter()
            .filter(|d| d.code == evoflux_core::trust::CHANGED_SINCE_TRUST)
            .cloned(),
    );
    shown.extend(unknown_approval_tools(loaded, &lead.catalog));
    shown
}

/// The session's hook pipeline: the standard one for its mode, with its
/// skills, its instruction files, and the roster of its team when the
/// agent has a dispatch tool.
fn hooks(
    mode: AppMode,
    agent: &EffectiveAgentConfig,
    catalog: &ToolCatalog,
    team: &TeamSetup,
    skills: &Arc<SkillRuntime>,
    (loaded, user_instructions): (
        &LoadedConfig,
        evoflux_harness::workspace_instructions::UserFiles,
    ),
) -> Result<HookPipeline, HookError> {
    // Only an agent with a dispatch tool gets the roster.
    let dispatches = evoflux_harness::team_roster::delegates(agent, catalog);
    standard_pipeline(PipelineOptions {
        on_compacted: Some(skills.compaction_listener()),
        skills: Some(skills.clone()),
        roster: Some(team.roster()).filter(|r| !r.is_empty() && dispatches),
        instructions: evoflux_harness::workspace_instructions::InstructionFiles::from_compat(
            loaded.config.compat.instructions,
        ),
        user_instructions,
        ..PipelineOptions::new(mode)
    })
}

/// Which session the engine opens: the resumed one (a requested mode or
/// workspace must match it), or a new one in the mode's workspace.
fn request(
    opts: &SessionOptions,
    resumed: Option<&Session>,
    mode: AppMode,
    repositories: Vec<PathBuf>,
    graph: &CompiledGraph,
) -> SessionRequest {
    match resumed {
        Some(s) => SessionRequest::Resume {
            id: s.id,
            mode: opts.mode,
            workspace: match mode {
                AppMode::Coding if !opts.workspaces.is_empty() => Some(repositories),
                AppMode::Coding | AppMode::Work => None,
            },
        },
        None => SessionRequest::New {
            workspace: match mode {
                AppMode::Work => WorkspaceRequest::Work,
                AppMode::Coding => WorkspaceRequest::Coding(repositories),
            },
            graph_hash: Some(graph.hash.to_string()),
        },
    }
}

/// Opens the session in the engine under its lease: a resumed session's
/// is taken (for `holder`) before anything is written to it, a new
/// session's as soon as it exists; `held` is the epoch of a lease the
/// caller holds already. The harness is current at the lease it was
/// opened under.
async fn start(
    store: &Store,
    resumed: Option<SessionId>,
    held: Option<i64>,
    holder: Option<&Holder>,
    setup: RunSetup,
    request: SessionRequest,
) -> Result<(Harness, Option<SessionLease>), SessionError> {
    // The lease is taken once nothing but the store can refuse the
    // session, so a refusal leaves nothing behind to stop.
    let mut lease = None;
    let synced = match (resumed, held, holder) {
        (_, Some(epoch), _) => epoch,
        (Some(id), None, Some(holder)) => {
            let taken = SessionLease::acquire(store, id, holder).await?;
            let epoch = taken.epoch();
            lease = Some(taken);
            epoch
        }
        (Some(id), None, None) => evoflux_harness::lease::synced_epoch(store, id).await?,
        (None, None, _) => 0,
    };
    let mut harness = match Harness::open(setup, request).await {
        Ok(h) => h,
        Err(e) => {
            if let Some(lease) = lease
                && let Err(e) = lease.release().await
            {
                tracing::warn!(error = %e, "cannot release the session's lease; it expires");
            }
            return Err(e.into());
        }
    };
    harness.set_lease_epoch(synced);
    // A new session is leased as soon as it exists.
    if resumed.is_none()
        && held.is_none()
        && let Some(holder) = holder
    {
        match SessionLease::acquire(store, harness.session().id, holder).await {
            Ok(taken) => {
                harness.set_lease_epoch(taken.epoch());
                lease = Some(taken);
            }
            Err(e) => {
                harness.shutdown().await;
                return Err(e.into());
            }
        }
    }
    Ok((harness, lease))
}

/// The explicit model, else the resumed session's, else the agent's, else
/// config.toml's default (or the embedded one).
fn choose_model(
    opts: &SessionOptions,
    resumed: Option<&Session>,
    agent: &EffectiveAgentConfig,
    loaded: &LoadedConfig,
) -> (String, ModelOrigin) {
    if let Some(m) = &opts.model {
        return (m.clone(), ModelOrigin::Explicit);
    }
    if let Some(m) = resumed.and_then(|s| s.model.clone()) {
        return (m, ModelOrigin::Session);
    }
    if let Some(m) = &agent.model {
        return (m.clone(), ModelOrigin::Agent);
    }
    (
        loaded.config.model.default.to_string(),
        match loaded.model_origin {
            ConfigOrigin::Embedded => ModelOrigin::Embedded,
            ConfigOrigin::Admin | ConfigOrigin::User | ConfigOrigin::Project => ModelOrigin::Config,
        },
    )
}

/// A misspelled tool in `[approval]` would silently protect nothing.
fn unknown_approval_tools(loaded: &LoadedConfig, catalog: &ToolCatalog) -> Diagnostics {
    loaded
        .config
        .approval
        .keys()
        .chain(loaded.config.approval_floor.keys())
        .filter(|name| catalog.get(name).is_none())
        .map(|name| {
            let mut d = Diagnostic::warning(
                "config/approval-tool-unknown",
                format!(
                    "[approval] names `{name}`, which is not a tool of the compiled graph; check \
                     its spelling (an MCP tool's qualified name applies once its server is ready)"
                ),
            )
            .with_field(format!("approval.{name}"));
            if let Some(file) = loaded.file() {
                d = d.with_file(file);
            }
            d
        })
        .collect()
}
