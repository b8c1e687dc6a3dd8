//! Opening a session from what a front end knows: the application's
//! directories, a mode, repositories, a lead, a model. Every front end
//! (`evoflux run`, `chat`, `sessions resume`, the server) opens sessions
//! through [`SessionBuilder`], so lead resolution, the `[approval]` check,
//! model choice, the skill-resolver policy and MCP roots are decided in one
//! place. Errors are typed ([`SessionError`]); the front end words them and
//! picks its exit code from [`SessionError::is_invalid_input`].

use std::path::{Path, PathBuf};
use std::sync::Arc;

use evoflux_agents::ToolCatalog;
use evoflux_agents::team::{
    AgentSource, TeamError, compile_agent_config, load_agents, worker_agent_config,
};
use evoflux_agents::worker::recipe::RecipeSource;
use evoflux_core::config::{
    self as core_config, ConfigOrigin, ForeignMcp, LoadedConfig, ModelRef, ParseModelRefError,
    ProviderKind,
};
use evoflux_core::dirs::Dirs;
use evoflux_core::ids::SessionId;
use evoflux_core::trust::{Trust, TrustError, TrustList, TrustState, repository_root};
use evoflux_core::{AppMode, Diagnostic, Diagnostics};
use evoflux_graph::compose::CompositionEntry;
use evoflux_graph::sandbox::SandboxPolicy;
use evoflux_graph::{BuiltinRegistry, CompiledGraph, Definition, RootOptions, Slot};
use evoflux_model::SetupError;
use evoflux_plugins::{PluginManager, PluginPaths};
use evoflux_store::{Database, Store, StoreError, WorkspaceRequest};
use evoflux_tools::ProcessRuntime;

use super::{Harness, Limits, RunSetup, SessionRequest};
use crate::approval::{Approver, NonInteractive};
use crate::clock::SystemClock;
use crate::error::HarnessError;
use crate::events::{EventSink, NoEvents};
use crate::hooks::{HookError, PipelineOptions, standard_pipeline};
use crate::skills::{ResolverPolicy, SkillRuntime};
use evoflux_tools::web_fetch::NetworkAccess;

/// The application sessions run in: its directories, the user's home (for
/// compatible skill roots) and the directory it was started in. Front ends
/// build it once; nothing below reads the process environment.
#[derive(Debug, Clone)]
pub struct AppContext {
    pub dirs: Dirs,
    pub home: Option<PathBuf>,
    pub cwd: PathBuf,
    /// Repositories trusted for this process only, never written to the
    /// trust list: a replay's checkout of a repository the user trusts,
    /// held to what the user granted that repository.
    pub trusted_checkouts: Vec<TrustedCheckout>,
    /// What starts the external agents of `[agents.external]` (the Agent
    /// Client Protocol, from `evoflux-acp`): with it, leads may dispatch
    /// them as remote workers; without it, they are in no team.
    pub remote_agents: Option<Arc<dyn crate::remote::RemoteAgents>>,
    /// The session database named by the process environment
    /// (`EVOFLUX_DATABASE_URL`), over `[store] url`; `None` defers to the
    /// config.
    pub database_url: Option<String>,
    /// The artifact store named by the process environment
    /// (`EVOFLUX_ARTIFACTS_URL`), over `[store] artifacts`.
    pub artifacts_url: Option<String>,
}

/// A copy of a repository the user trusts, trusted for this process as the
/// repository it was made from ([`AppContext::inherit_trust`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustedCheckout {
    /// The copy's root.
    pub path: PathBuf,
    /// The trusted repository it was made from, whose grants hold for it.
    pub original: PathBuf,
}

impl AppContext {
    /// Every builtin registry the application ships: the framework
    /// defaults and the bundled skills.
    pub fn registries() -> Vec<BuiltinRegistry> {
        vec![
            BuiltinRegistry::framework(),
            evoflux_skills::bundled::registry(),
        ]
    }

    /// The roots to compile: enabled plugins, admin and user directories,
    /// the user's compatible skill roots below home, and the workspaces
    /// (default: the start directory).
    pub fn root_options(&self, workspaces: &[PathBuf]) -> Result<RootOptions, SessionError> {
        let workspaces = if workspaces.is_empty() {
            vec![self.cwd.clone()]
        } else {
            canonical(&self.cwd, workspaces)?
        };
        let trust = self.trust_list()?;
        let trusted = workspaces
            .iter()
            .map(|ws| repository_root(ws))
            .filter(|repo| {
                trust.state(repo).trust() == Trust::Trusted
                    || self.trusted_checkouts.iter().any(|c| c.path == *repo)
            })
            .collect();
        Ok(RootOptions {
            admin_dir: Some(self.dirs.admin_dir().to_path_buf()),
            user_config_dir: Some(self.dirs.config_dir().to_path_buf()),
            home: self.home.clone(),
            workspaces,
            trusted,
            // Enabled installed, linked and bundled plugins; problems with
            // the registry are reported by the plugin commands.
            plugins: self.plugins().enabled_plugin_roots().0,
            // Which harnesses' MCP files join is the owner's say, so it is
            // read before the compile; a broken config file is reported
            // by the compile itself, which then reads the defaults.
            foreign_mcp: self
                .owner_config()
                .map_or_else(|_| ForeignMcp::ALL.to_vec(), |c| c.compat.mcp),
        })
    }

    /// The compile step: the standard roots for these workspaces, with
    /// every registry, each trusted repository held to what the user
    /// granted it (a source changed or added since waits for trust again).
    pub fn compile(&self, workspaces: &[PathBuf]) -> Result<CompiledGraph, SessionError> {
        let opts = self.root_options(workspaces)?;
        let grants = self.trust_grants(&opts.trusted)?;
        evoflux_graph::compile_with_grants(
            &Self::registries(),
            &evoflux_graph::discover::standard_roots(&opts),
            &grants,
        )
        .map(|(graph, _)| graph)
        .map_err(|e| SessionError::Compile(Box::new(e)))
    }

    /// What the user granted each of the `trusted` repositories (a trusted
    /// checkout: what its original was granted), for the compile to hold
    /// them to.
    pub(crate) fn trust_grants(
        &self,
        trusted: &[PathBuf],
    ) -> Result<evoflux_graph::grants::TrustGrants, SessionError> {
        let list = self.trust_list()?;
        let mut grants = evoflux_graph::grants::TrustGrants::new();
        for repo in trusted {
            let original = self
                .trusted_checkouts
                .iter()
                .find(|c| c.path == *repo)
                .map_or(repo.as_path(), |c| c.original.as_path());
            let granted = list.granted(original).unwrap_or_default().to_vec();
            grants.enforce(repo.clone(), granted);
        }
        Ok(grants)
    }

    /// Trusts `copy` for this process when the user trusts `original`: a
    /// replay's checkout or an eval's copy of a repository is as trusted
    /// as the repository it was made from (and held to what it was
    /// granted), and nothing is written to the trust list.
    pub fn inherit_trust(&mut self, original: &Path, copy: &Path) -> Result<(), SessionError> {
        if self.trust_list()?.state(original).trust() == Trust::Trusted {
            self.trusted_checkouts.push(TrustedCheckout {
                path: copy.to_path_buf(),
                original: original.to_path_buf(),
            });
        }
        Ok(())
    }

    /// The user's repository trust decisions.
    pub fn trust_list(&self) -> Result<TrustList, SessionError> {
        TrustList::load(&TrustList::path_in(self.dirs.data_dir())).map_err(SessionError::Trust)
    }

    /// The repository of each workspace (default: the start directory)
    /// with its trust state, for `info` and the trust prompt.
    pub fn trust_states(
        &self,
        workspaces: &[PathBuf],
    ) -> Result<Vec<(PathBuf, TrustState)>, SessionError> {
        let list = self.trust_list()?;
        let dirs = if workspaces.is_empty() {
            vec![self.cwd.clone()]
        } else {
            canonical(&self.cwd, workspaces)?
        };
        let mut out: Vec<(PathBuf, TrustState)> = Vec::new();
        for dir in dirs {
            let repo = repository_root(&dir);
            if !out.iter().any(|(r, _)| *r == repo) {
                let state = list.state(&repo);
                out.push((repo, state));
            }
        }
        Ok(out)
    }

    /// What to ask a user who opens an interactive session in a repository
    /// whose sources wait for trust (it is not trusted, or they changed
    /// since it was): `None` when there is nothing to ask.
    pub fn trust_question(
        &self,
        workspaces: &[PathBuf],
    ) -> Result<Option<TrustQuestion>, SessionError> {
        let list = self.trust_list()?;
        let dirs = if workspaces.is_empty() {
            vec![self.cwd.clone()]
        } else {
            canonical(&self.cwd, workspaces)?
        };
        let graph = self.compile(workspaces)?;
        for workspace in dirs {
            let repository = repository_root(&workspace);
            let state = list.state(&repository);
            let withheld: Vec<String> = graph
                .composition
                .entries
                .iter()
                .filter_map(|e| match e {
                    CompositionEntry::AwaitingTrust { source }
                        if source.file().is_some_and(|f| f.starts_with(&repository)) =>
                    {
                        Some(source.slot.clone())
                    }
                    CompositionEntry::AwaitingTrust { .. }
                    | CompositionEntry::Shadowed { .. }
                    | CompositionEntry::Disabled { .. }
                    | CompositionEntry::Layered { .. } => None,
                })
                .collect();
            if !withheld.is_empty() {
                return Ok(Some(TrustQuestion {
                    repository,
                    workspace,
                    withheld,
                    since_trust: state.trust() == Trust::Trusted,
                }));
            }
        }
        Ok(None)
    }

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
        projection.repositories = self.repositories(graph, workspaces)?;
        let (teams, remote, _) = self.team_nodes(graph);
        projection.teams = teams;
        projection.remote_agents = evoflux_graph::info::InfoList::new(remote);
        Ok(projection)
    }

    /// The session's repositories with their trust and the instruction
    /// files that serve them (`AGENTS.md`, or another harness's file).
    pub fn repositories(
        &self,
        graph: &CompiledGraph,
        workspaces: &[PathBuf],
    ) -> Result<Vec<evoflux_graph::info::InfoRepository>, SessionError> {
        let files = crate::workspace_instructions::InstructionFiles::from_compat(
            selected_config(graph)
                .0
                .is_none_or(|loaded| loaded.config.compat.instructions),
        );
        Ok(self
            .trust_states(workspaces)?
            .into_iter()
            .map(|(path, trust)| evoflux_graph::info::InfoRepository {
                instructions: crate::workspace_instructions::root_chain(&path)
                    .iter()
                    .filter_map(|dir| {
                        crate::workspace_instructions::instruction_file_in(dir, files)
                    })
                    .collect(),
                path,
                trust,
            })
            .collect())
    }

    /// The ids of the worker recipes a session of `mode` reaches in
    /// `graph` (what [`SessionBuilder::worker`] accepts), sorted.
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

    /// Each mode's team, the external agents each lead reaches, and what
    /// is wrong with them.
    fn team_nodes(
        &self,
        graph: &CompiledGraph,
    ) -> (
        Vec<evoflux_graph::info::InfoTeam>,
        Vec<evoflux_graph::info::InfoRemoteAgent>,
        Diagnostics,
    ) {
        let catalog = ToolCatalog::from_graph(graph);
        let mut diags = Diagnostics::new();
        let (loaded, _) = selected_config(graph);
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
                let worker_nodes = super::reachable_workers(&members, &workers)
                    .map(|w| node(worker_agent_config(w, mode, &catalog), Some(w)))
                    .collect();
                if let Some(loaded) = &loaded {
                    // The same problem in both modes is reported once.
                    let mut remote_diags = Diagnostics::new();
                    let remote =
                        crate::remote::remote_agents(loaded, &members, &workers, &mut remote_diags);
                    for d in remote_diags.iter() {
                        if !diags.iter().any(|seen| seen.message == d.message) {
                            diags.push(d.clone());
                        }
                    }
                    remote_nodes.extend(remote.into_iter().map(|r| {
                        evoflux_graph::info::InfoRemoteAgent {
                            node_id: format!("{lead_node}/{}", r.spec.id),
                            parent_node_id: lead_node.clone(),
                            name: r.spec.id.clone(),
                            description: r.spec.description.clone(),
                            protocol: "acp",
                            command: r.launch.command.clone(),
                            env: r.launch.env.clone(),
                            cwd: r.launch.cwd.as_str(),
                            capability_class: r.spec.capability_class.to_string(),
                            result_contract: r.spec.result_contract.kind.to_string(),
                            provenance: evoflux_graph::info::InfoRemoteProvenance {
                                kind: "config",
                                origin: loaded
                                    .external_agent_sources
                                    .get(&r.spec.id)
                                    .map_or(evoflux_core::config::ConfigOrigin::User, |s| s.origin),
                                path: r.file,
                            },
                        }
                    }));
                }
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

    /// The retention policy of the data directory: `[storage]` of the
    /// admin's and the user's config.toml, layered as every session's
    /// config is (a repository has no say in it).
    pub fn storage(&self) -> Result<evoflux_core::config::StorageConfig, SessionError> {
        self.owner_config().map(|c| c.storage)
    }

    /// The session database: `EVOFLUX_DATABASE_URL` as the front end
    /// read it, else `[store] url` of the admin's and the user's config,
    /// else the data directory's SQLite file.
    pub fn database(&self) -> Result<Database, SessionError> {
        let url = match &self.database_url {
            Some(url) => Some(url.clone()),
            None => self.owner_config()?.store.url,
        };
        Ok(match url {
            Some(url) => Database::parse(&url)?,
            None => Database::Sqlite,
        })
    }

    /// The object store sessions' artifacts are kept in for every
    /// replica: `EVOFLUX_ARTIFACTS_URL`, else `[store] artifacts`; `None`
    /// when neither names one (the data directory is all there is).
    pub fn artifacts(&self) -> Result<Option<evoflux_store::Artifacts>, SessionError> {
        let url = match &self.artifacts_url {
            Some(url) => Some(url.clone()),
            None => self.owner_config()?.store.artifacts,
        };
        Ok(url
            .map(|u| evoflux_store::Artifacts::open(&u))
            .transpose()?)
    }

    /// Opens the session store on [`AppContext::database`], with the data
    /// directory for what lives on disk beside it and the
    /// [`AppContext::artifacts`] object store, so every front end that
    /// deletes or prunes a session removes its objects too.
    pub async fn open_store(&self) -> Result<Store, SessionError> {
        let database = self.database()?;
        let artifacts = self.artifacts()?;
        Ok(Store::connect(
            self.dirs.data_dir(),
            &database,
            evoflux_core::ids::Ids::system(),
        )
        .await?
        .with_artifacts(artifacts))
    }

    /// The admin's and the user's `config.toml` over the embedded
    /// defaults: the settings read before any compile, which a repository
    /// has no say in (`[storage]`, `[compat]`).
    fn owner_config(&self) -> Result<evoflux_core::config::HarnessConfig, SessionError> {
        use evoflux_core::config::ConfigScope;
        let mut diags = evoflux_core::Diagnostics::new();
        let loaded = evoflux_core::config::load_layers(
            &[
                (
                    self.dirs.admin_dir().join("config.toml"),
                    ConfigScope::Admin,
                ),
                (
                    self.dirs.config_dir().join("config.toml"),
                    ConfigScope::User,
                ),
            ],
            &mut diags,
        );
        match diags.has_errors() {
            true => Err(SessionError::Config { diagnostics: diags }),
            false => Ok(loaded.config),
        }
    }

    /// Records the user's trust in the repository holding `dir`, granting
    /// its sources as they are now (see [`AppContext::trust_review`] to
    /// show them first).
    pub fn trust(&self, dir: &Path) -> Result<(), SessionError> {
        let review = self.trust_review(dir)?;
        self.grant(&review).map(|_| ())
    }

    /// The plugin manager of these directories.
    pub fn plugins(&self) -> PluginManager {
        PluginManager::new(PluginPaths::from_dirs(&self.dirs))
    }

    /// Where command output and offloaded results go.
    pub fn artifacts_root(&self) -> PathBuf {
        evoflux_store::artifacts_root(self.dirs.data_dir())
    }

    /// The command runtime's setup for these directories: journals below
    /// the artifacts root, and the runs folder through which a new runtime
    /// stops what a killed one left running.
    pub fn runtime_config(&self) -> evoflux_tools::RuntimeConfig {
        let mut config = evoflux_tools::RuntimeConfig::new(self.artifacts_root());
        config.runs_dir = Some(self.dirs.data_dir().join("runs"));
        config
    }
}

/// A repository and the sources it holds that wait for trust.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustQuestion {
    pub repository: PathBuf,
    /// The workspace of the session in it, whose sources
    /// [`AppContext::trust_review`] reviews.
    pub workspace: PathBuf,
    /// The slots withheld (`tools/deploy`, `connections/db`, …).
    pub withheld: Vec<String>,
    /// The repository is trusted, and these changed or were added since.
    pub since_trust: bool,
}

/// The graph's layered `config` (the embedded default, then the admin's,
/// the user's and the repositories' files) and the diagnostics of that
/// slot; `None` when the slot has errors.
pub fn selected_config(graph: &CompiledGraph) -> (Option<LoadedConfig>, Diagnostics) {
    let diags = graph.slot_diagnostics(&Slot::config());
    let loaded = graph
        .node(&Slot::config())
        .and_then(|node| match &node.definition {
            Definition::Config(loaded) => Some(loaded.clone()),
            _ => None,
        });
    let loaded = if diags.has_errors() { None } else { loaded };
    (loaded, diags)
}

/// The graph's layered sandbox policy; the diagnostics of the `sandbox`
/// slot when it has errors (a broken policy never falls back to the
/// default).
pub fn selected_sandbox(graph: &CompiledGraph) -> Result<SandboxPolicy, Diagnostics> {
    let diags = graph.slot_diagnostics(&Slot::sandbox());
    if diags.has_errors() {
        return Err(diags.errors());
    }
    Ok(graph
        .node(&Slot::sandbox())
        .and_then(|node| match &node.definition {
            Definition::Sandbox(policy) => Some(policy.clone()),
            _ => None,
        })
        .unwrap_or_else(SandboxPolicy::framework_default))
}

/// The graph's registered check commands (`fleets/commands.yaml`), which
/// `verify` runs. A registry that does not parse is reported (file and
/// field) and leaves `verify` out; it never stops the session.
pub fn selected_checks(
    graph: &CompiledGraph,
    diags: &mut Diagnostics,
) -> Option<Arc<evoflux_fleet::CommandRegistry>> {
    use evoflux_fleet::RegistryState;
    match evoflux_fleet::catalog::command_registry(graph) {
        RegistryState::Loaded(r) => Some(Arc::new(r)),
        RegistryState::Missing | RegistryState::AwaitingTrust { .. } => None,
        RegistryState::Invalid(d) => {
            diags.push(d);
            None
        }
    }
}

/// What selects and shapes a session.
#[derive(Debug, Clone, Default)]
pub struct SessionOptions {
    /// The mode; a resumed session's persisted mode decides when `None`.
    /// A new session takes [`SessionOptions::new_session_mode`].
    pub mode: Option<AppMode>,
    /// Coding repositories as the user named them (relative to the start
    /// directory). Empty: the repository around the start directory.
    pub workspaces: Vec<PathBuf>,
    /// The lead; `None` is the mode's default lead, or a resumed session's.
    pub lead: Option<String>,
    /// An explicit `provider:model`. On resume it is a recorded switch.
    pub model: Option<String>,
    /// Resume this session instead of creating one.
    pub resume: Option<SessionId>,
    pub limits: Limits,
}

impl SessionOptions {
    /// The mode a new session opens in ([`AppMode::for_new_session`]).
    pub fn new_session_mode(&self) -> AppMode {
        AppMode::for_new_session(self.mode, !self.workspaces.is_empty())
    }
}

/// Where the session's model came from, for the user.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelOrigin {
    /// The front end named it (`--model`, a request field).
    Explicit,
    /// The resumed session was created with it (or switched to it).
    Session,
    /// The lead's `model:`.
    Agent,
    /// `[model] default` in config.toml.
    Config,
    /// No model anywhere: the embedded default.
    Embedded,
    /// `[skills] resolver_model` in config.toml.
    SkillResolver,
}

impl ModelOrigin {
    pub fn as_str(self) -> &'static str {
        match self {
            ModelOrigin::Explicit => "explicit",
            ModelOrigin::Session => "the session's model",
            ModelOrigin::Agent => "the agent's model",
            ModelOrigin::Config => "config.toml",
            ModelOrigin::Embedded => "embedded default",
            ModelOrigin::SkillResolver => "[skills] resolver_model in config.toml",
        }
    }
}

/// Why a session could not be opened. Each variant carries what the front
/// end needs to word it; none names a front end's flags.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("workspace `{}` cannot be used: {source}", path.display())]
    Workspace {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "repositories were given for a Work session: a Work session's workspace is its own folder; use Coding mode to work in repositories"
    )]
    WorkspaceInWorkMode { workspaces: Vec<PathBuf> },
    #[error(transparent)]
    Compile(Box<evoflux_graph::GraphError>),
    #[error("{source}")]
    Lead {
        #[source]
        source: TeamError,
        /// The diagnostics of the agents that were loaded.
        diagnostics: Diagnostics,
    },
    #[error(
        "there is no worker recipe `{worker}` in {mode} mode; known: {}",
        if known.is_empty() { "none".to_owned() } else { known.join(", ") }
    )]
    WorkerUnknown {
        worker: String,
        mode: AppMode,
        known: Vec<String>,
    },
    #[error("lead `{lead}` cannot be loaded")]
    LeadUnloadable {
        lead: String,
        diagnostics: Diagnostics,
    },
    #[error(transparent)]
    Trust(TrustError),
    #[error("sandbox.toml has errors")]
    Sandbox { diagnostics: Diagnostics },
    #[error("the selected config.toml has errors")]
    Config { diagnostics: Diagnostics },
    #[error("model `{value}` is not a valid model: {source}")]
    ModelInvalid {
        value: String,
        #[source]
        source: ParseModelRefError,
    },
    #[error("model `{model}` ({}): {source}", origin.as_str())]
    Provider {
        model: ModelRef,
        origin: ModelOrigin,
        #[source]
        source: SetupError,
    },
    #[error(transparent)]
    Pipeline(#[from] HookError),
    #[error("cannot set up MCP servers: {0}")]
    Mcp(#[from] evoflux_mcp::McpError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Harness(#[from] HarnessError),
    /// The session's lease, asked for with [`SessionBuilder::lease`].
    #[error(transparent)]
    Lease(#[from] crate::lease::LeaseError),
}

impl SessionError {
    /// The stable code of this error.
    pub fn code(&self) -> &'static str {
        match self {
            SessionError::Workspace { .. } => "session/workspace-unusable",
            SessionError::WorkspaceInWorkMode { .. } => "session/workspace-in-work-mode",
            SessionError::Compile(_) => "session/compile-failed",
            SessionError::Lead { .. } => "session/lead-unknown",
            SessionError::LeadUnloadable { .. } => "session/lead-unloadable",
            SessionError::WorkerUnknown { .. } => "session/worker-unknown",
            SessionError::Trust(e) => e.code(),
            SessionError::Config { .. } => "config/invalid",
            SessionError::Sandbox { .. } => "sandbox/invalid",
            SessionError::ModelInvalid { .. } => "session/model-invalid",
            SessionError::Provider { source, .. } => source.code(),
            SessionError::Pipeline(e) => e.code(),
            SessionError::Mcp(e) => e.code(),
            SessionError::Store(e) => e.code(),
            SessionError::Harness(e) => e.code(),
            SessionError::Lease(e) => e.code(),
        }
    }

    /// Another process runs a turn on the session ([`SessionBuilder::lease`]).
    pub fn is_busy(&self) -> bool {
        matches!(
            self,
            SessionError::Lease(crate::lease::LeaseError::Busy { .. })
        )
    }

    /// Whether the user's input is what is wrong (a front end's "invalid
    /// input" exit), rather than the machine or a service.
    pub fn is_invalid_input(&self) -> bool {
        match self {
            SessionError::Workspace { .. }
            | SessionError::WorkspaceInWorkMode { .. }
            | SessionError::Lead { .. }
            | SessionError::LeadUnloadable { .. }
            | SessionError::WorkerUnknown { .. }
            | SessionError::Config { .. }
            | SessionError::Sandbox { .. }
            | SessionError::ModelInvalid { .. } => true,
            SessionError::Provider { source, .. } => match source {
                SetupError::UnknownProvider { .. }
                | SetupError::BaseUrlMissing { .. }
                | SetupError::ScriptMissing { .. }
                | SetupError::ScriptUnreadable { .. }
                | SetupError::ScriptInvalid { .. } => true,
                SetupError::NotAvailable { .. }
                | SetupError::HttpClient { .. }
                | SetupError::Local(_) => false,
            },
            SessionError::Store(e) => store_input_error(e),
            SessionError::Harness(HarnessError::Store(e)) => store_input_error(e),
            SessionError::Harness(HarnessError::LeadMismatch { .. }) => true,
            SessionError::Lease(crate::lease::LeaseError::Store(e)) => store_input_error(e),
            SessionError::Lease(crate::lease::LeaseError::Busy { .. }) => false,
            SessionError::Trust(_) => true,
            SessionError::Compile(_)
            | SessionError::Pipeline(_)
            | SessionError::Mcp(_)
            | SessionError::Harness(_) => false,
        }
    }

    /// Diagnostics that explain the error (agents, config), to show with it.
    pub fn diagnostics(&self) -> Option<&Diagnostics> {
        match self {
            SessionError::Lead { diagnostics, .. }
            | SessionError::LeadUnloadable { diagnostics, .. }
            | SessionError::Config { diagnostics }
            | SessionError::Sandbox { diagnostics } => Some(diagnostics),
            SessionError::Workspace { .. }
            | SessionError::WorkspaceInWorkMode { .. }
            | SessionError::WorkerUnknown { .. }
            | SessionError::Trust(_)
            | SessionError::Compile(_)
            | SessionError::ModelInvalid { .. }
            | SessionError::Provider { .. }
            | SessionError::Pipeline(_)
            | SessionError::Mcp(_)
            | SessionError::Store(_)
            | SessionError::Harness(_)
            | SessionError::Lease(_) => None,
        }
    }
}

fn store_input_error(e: &StoreError) -> bool {
    match e {
        StoreError::SessionNotFound(_)
        | StoreError::ModeMismatch { .. }
        | StoreError::WorkspaceMismatch { .. }
        | StoreError::CodingWorkspaceEmpty
        | StoreError::WorkspaceNotAbsolute(_)
        | StoreError::DatabaseUrl { .. }
        | StoreError::ArtifactsUrl { .. }
        | StoreError::Transfer { .. }
        | StoreError::ImportIntoNonEmpty { .. } => true,
        StoreError::DataDir { .. }
        | StoreError::Artifacts { .. }
        | StoreError::Open { .. }
        | StoreError::Migrate { .. }
        | StoreError::Database(_)
        | StoreError::PendingInputNotFound { .. }
        | StoreError::PendingInputAnswered { .. }
        | StoreError::Corrupt { .. } => false,
    }
}

/// An opened session and what the front end should tell the user about
/// how it was opened.
#[derive(Debug)]
pub struct OpenedSession {
    pub harness: Harness,
    /// Warnings and errors found while opening (agents, config, MCP),
    /// none of which stopped the session.
    pub diagnostics: Diagnostics,
    pub model: ModelRef,
    pub model_origin: ModelOrigin,
    /// The worker recipe the session runs as ([`SessionBuilder::worker`]).
    pub worker: Option<evoflux_agents::worker::spec::AgentSpec>,
    /// The session's lease, when [`SessionBuilder::lease`] asked for it:
    /// the front end releases it when its turns end.
    pub lease: Option<crate::lease::SessionLease>,
}

/// Opens or resumes one session; see the module documentation.
#[derive(Debug)]
pub struct SessionBuilder<'a> {
    app: &'a AppContext,
    options: SessionOptions,
    events: Arc<dyn EventSink>,
    approver: Arc<dyn Approver>,
    processes: Option<ProcessRuntime>,
    network: NetworkAccess,
    can_request_input: bool,
    store: Option<Store>,
    reuse_model: Option<super::ModelClient>,
    clock: Option<Arc<dyn crate::clock::Clock>>,
    resolver: Option<ResolverPolicy>,
    model_dir: Option<PathBuf>,
    worker: Option<String>,
    /// Who takes the session's lease while it opens.
    lease: Option<crate::lease::Holder>,
    /// The epoch of the lease the caller holds (a reopen under it).
    held_lease: Option<i64>,
}

impl<'a> SessionBuilder<'a> {
    pub fn new(app: &'a AppContext, options: SessionOptions) -> SessionBuilder<'a> {
        SessionBuilder {
            app,
            options,
            events: Arc::new(NoEvents),
            approver: Arc::new(NonInteractive),
            processes: None,
            network: NetworkAccess::PublicOnly,
            can_request_input: true,
            store: None,
            reuse_model: None,
            clock: None,
            resolver: None,
            model_dir: None,
            worker: None,
            lease: None,
            held_lease: None,
        }
    }

    /// Takes the session's lease for `holder` while opening it
    /// ([`crate::lease`]): a resumed session's is taken before its
    /// transcript is read or anything is written to it (and before any of
    /// its servers start), a new session's as soon as it exists. The
    /// session is refused with [`SessionError::Lease`] while another
    /// process runs a turn on it, and is this front end's until it
    /// releases [`OpenedSession::lease`]. For a front end that runs its
    /// turns at once (`evoflux run`); one that keeps the session open takes
    /// the lease per turn ([`Harness::lease`](super::Harness::lease)).
    pub fn lease(mut self, holder: crate::lease::Holder) -> Self {
        self.lease = Some(holder);
        self
    }

    /// Opens the session again under `lease`, which the caller holds (its
    /// harness was stale, [`crate::lease::SessionLease::is_stale`]): the new
    /// harness is current at it.
    pub fn held_lease(mut self, lease: &crate::lease::SessionLease) -> Self {
        self.held_lease = Some(lease.epoch());
        self
    }

    /// Runs the session as worker recipe `id` (its prompt, tools and tool
    /// budget) instead of a lead: a fleet's agent step. Coding mode only,
    /// as dispatch reaches workers; the worker hands nothing on (no team),
    /// and [`OpenedSession::worker`] is its spec, for
    /// [`Harness::worker_task`](super::Harness::worker_task).
    pub fn worker(mut self, id: impl Into<String>) -> Self {
        self.worker = Some(id.into());
        self
    }

    /// Where a model's relative path (a `scripted:` script) starts
    /// (default: the start directory); an eval's own model starts at its
    /// file.
    pub fn model_dir(mut self, dir: PathBuf) -> Self {
        self.model_dir = Some(dir);
        self
    }

    /// The clock the session's prompts take the date from (default: the
    /// system's); a replay stops it at the recorded date.
    pub fn clock(mut self, clock: Arc<dyn crate::clock::Clock>) -> Self {
        self.clock = Some(clock);
        self
    }

    /// How the session's skill resolver runs, instead of what `[skills]`
    /// says (and without building its model): a replay answers it with the
    /// recorded decisions.
    pub fn resolver(mut self, policy: ResolverPolicy) -> Self {
        self.resolver = Some(policy);
        self
    }

    /// The model client of the harness this session replaces (a session
    /// reopened on changed sources): used again when the session resolves
    /// to the same model, so its connections, and a scripted model's
    /// place in its script, carry over.
    pub fn reuse_model(mut self, client: super::ModelClient) -> Self {
        self.reuse_model = Some(client);
        self
    }

    /// The store to keep the session in (default: the data dir's, opened
    /// for this session). A server passes its one pool to every session.
    pub fn store(mut self, store: Store) -> Self {
        self.store = Some(store);
        self
    }

    /// Where the session's events go.
    pub fn events(mut self, events: Arc<dyn EventSink>) -> Self {
        self.events = events;
        self
    }

    /// Who decides tools that need approval (default: deny).
    pub fn approver(mut self, approver: Arc<dyn Approver>) -> Self {
        self.approver = approver;
        self
    }

    /// The application's command runtime; without one, command tools are
    /// left out of the session.
    pub fn processes(mut self, processes: ProcessRuntime) -> Self {
        self.processes = Some(processes);
        self
    }

    /// What network tools may reach (default: public addresses only).
    pub fn network(mut self, network: NetworkAccess) -> Self {
        self.network = network;
        self
    }

    /// Opens the session: resolves everything, then creates or resumes it.
    pub async fn open(mut self) -> Result<OpenedSession, SessionError> {
        let reuse_model = self.reuse_model.take();
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
        // The persisted mode decides; a different request is refused by the
        // store with the session's own words.
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
        // Coding repositories: as named (canonical, each once), or the
        // repository around the start directory.
        let repositories = match (&resumed, opts.workspaces.is_empty()) {
            (Some(s), true) if s.mode() == AppMode::Coding => s.workspace.roots().to_vec(),
            (_, true) => canonical(&app.cwd, std::slice::from_ref(&app.cwd))?
                .iter()
                .map(|d| repository_root(d))
                .collect(),
            (_, false) => canonical(&app.cwd, &opts.workspaces)?,
        };
        // Compile with the session's repositories when resuming a Coding
        // session, so its project sources are the ones it started with.
        let sources = match mode {
            AppMode::Coding => repositories.clone(),
            AppMode::Work => opts.workspaces.clone(),
        };
        let graph = app.compile(&sources)?;
        let mut diags = Diagnostics::new();
        let lead_name = match (&resumed, &opts.lead) {
            (Some(s), None) => s.lead.clone(),
            (_, lead) => lead.clone(),
        };
        let directory = load_agents(&graph, mode, &mut diags);
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
        let catalog = ToolCatalog::from_graph(&graph);
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
        let workers = dispatchable_workers(&graph, &catalog, mode, &mut diags);
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
                Some(spec.clone())
            }
        };
        let (loaded, config_diags) = selected_config(&graph);
        let Some(loaded) = loaded else {
            return Err(SessionError::Config {
                diagnostics: config_diags,
            });
        };
        let policy = selected_sandbox(&graph)
            .map_err(|diagnostics| SessionError::Sandbox { diagnostics })?;
        // Retention runs at most once a day, here, so the data dir keeps to
        // `[storage]` without anyone pruning by hand; it never stops a
        // session.
        if let Err(e) = store
            .prune_if_due(&evoflux_store::Retention::from(loaded.config.storage))
            .await
        {
            tracing::warn!(error = %e, "automatic pruning of the data directory failed");
        }
        let mut shown = diags.errors();
        // What a trusted repository changed since it was trusted waits, and
        // the user is told what.
        shown.extend(
            graph
                .diagnostics
                .iter()
                .filter(|d| d.code == evoflux_core::trust::CHANGED_SINCE_TRUST)
                .cloned(),
        );
        shown.extend(unknown_approval_tools(&loaded, &catalog));
        let (model, model_origin) = choose_model(opts, resumed.as_ref(), &agent, &loaded);
        let model_ref: ModelRef = model.parse().map_err(|source| SessionError::ModelInvalid {
            value: model.clone(),
            source,
        })?;
        let provider_options = evoflux_model::ProviderOptions {
            cache_dir: Some(app.dirs.cache_dir().join("models")),
            model_file: None,
            ..evoflux_model::ProviderOptions::default()
        };
        let provider: Arc<dyn evoflux_model::Provider> =
            match reuse_model.filter(|c| c.label == model_ref.to_string()) {
                Some(client) => client.provider,
                None => Arc::from(
                    evoflux_model::resolve(
                        &model_ref,
                        &loaded.config,
                        self.model_dir.as_deref().unwrap_or(&app.cwd),
                        &provider_options,
                    )
                    .map_err(|source| SessionError::Provider {
                        model: model_ref.clone(),
                        origin: model_origin,
                        source,
                    })?,
                ),
            };
        let price = price_of(&loaded.config, &model_ref, provider.kind());
        let skill_inputs = SkillInputs::read(&app.dirs, &graph);
        let resolver = match self.resolver.take() {
            Some(policy) => policy,
            None => resolver_policy(
                &loaded,
                provider.kind(),
                self.model_dir.as_deref().unwrap_or(&app.cwd),
                &provider_options,
            )?,
        };
        let skills = skill_inputs.runtime(mode, resolver.clone());
        // MCP servers: nothing starts here; the session starts the ones its
        // agent is granted, in the background.
        let (mcp, mcp_diags) = evoflux_mcp::McpRuntime::new(
            &graph,
            Some(&app.plugins()),
            evoflux_mcp::ManagerOptions {
                roots: match mode {
                    AppMode::Coding => repositories.clone(),
                    AppMode::Work => Vec::new(),
                },
                ..evoflux_mcp::ManagerOptions::default()
            },
        )?;
        shown.extend(Diagnostics::from(mcp_diags).errors());
        let mut member_diags = Diagnostics::new();
        let members = team_members(&directory, &team, &catalog, &mut member_diags);
        shown.extend(member_diags.errors());
        let checks = selected_checks(&graph, &mut shown);
        let remote = match &app.remote_agents {
            Some(_) => crate::remote::remote_agents(&loaded, &members, &workers, &mut shown),
            None => Vec::new(),
        };
        let team_setup = super::TeamSetup {
            remote,
            remote_runner: app.remote_agents.clone(),
            members,
            workers,
            catalog: catalog.clone(),
            network: self.network,
            children: Arc::new(BuilderChildren {
                config: loaded.config.clone(),
                cwd: self.model_dir.clone().unwrap_or_else(|| app.cwd.clone()),
                provider_options: provider_options.clone(),
                parent: super::ChildModel {
                    provider: Arc::clone(&provider),
                    model: model_ref.model.clone(),
                    label: model_ref.to_string(),
                    price,
                },
                skills: skill_inputs.clone(),
                resolver,
            }),
        };
        // Only an agent with a dispatch tool gets the roster.
        let dispatches = agent.tools.iter().any(|t| {
            catalog.get(t).is_some_and(|d| {
                matches!(
                    d.behavior.handling,
                    evoflux_graph::tool::Handling::Dispatch {
                        action: evoflux_graph::tool::DispatchAction::SelfAgent
                    }
                )
            })
        });
        let setup = RunSetup {
            store: store.clone(),
            provider,
            model: model_ref.model.clone(),
            model_label: model_ref.to_string(),
            price,
            agent,
            catalog,
            pipeline: standard_pipeline(PipelineOptions {
                on_compacted: Some(skills.compaction_listener()),
                skills: Some(skills.clone()),
                roster: Some(crate::team_roster::render(
                    &team_setup
                        .members
                        .iter()
                        .map(|m| (m.name.clone(), m.description.clone()))
                        .collect::<Vec<_>>(),
                    &super::reachable_workers(&team_setup.members, &team_setup.workers)
                        .chain(team_setup.remote.iter().map(|r| &r.spec))
                        .cloned()
                        .collect::<Vec<_>>(),
                ))
                .filter(|r| !r.is_empty() && dispatches),
                instructions: crate::workspace_instructions::InstructionFiles::from_compat(
                    loaded.config.compat.instructions,
                ),
                ..PipelineOptions::new(mode)
            })?,
            clock: self.clock.clone().unwrap_or_else(|| Arc::new(SystemClock)),
            events: self.events,
            approver: self.approver,
            limits: Limits {
                model_calls_per_turn: opts.limits.model_calls_per_turn.max(1),
                max_cost: opts.limits.max_cost.or(loaded.config.limits.max_cost_usd),
                ..opts.limits
            }
            .for_worker(worker.as_ref()),
            can_request_input: self.can_request_input,
            network: self.network,
            processes: self.processes,
            artifacts_root: app.artifacts_root(),
            mcp: Some(mcp),
            mcp_call_timeout: evoflux_mcp::DEFAULT_CALL_TIMEOUT,
            skills: Some(skills),
            approvals: crate::approval::ApprovalPolicy::from_config(&loaded.config),
            sandbox: Some(super::SandboxSetup {
                policy,
                hidden: hidden_dirs(&app.dirs),
            }),
            // A worker hands nothing on.
            team: worker.is_none().then_some(team_setup),
            checks,
            // Only a root session schedules; its tasks are the user's.
            schedules_dir: Some(app.dirs.config_dir().join("schedules")),
            code_cache: Some(app.dirs.cache_dir().to_path_buf()),
        };
        let request = match &resumed {
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
        };
        // The lease is taken once nothing but the store can refuse the
        // session, so a refusal leaves nothing behind to stop.
        let mut lease = None;
        let synced = match (&resumed, self.held_lease, &self.lease) {
            (_, Some(epoch), _) => epoch,
            (Some(s), None, Some(holder)) => {
                let held = crate::lease::SessionLease::acquire(&store, s.id, holder).await?;
                let epoch = held.epoch();
                lease = Some(held);
                epoch
            }
            (Some(s), None, None) => crate::lease::synced_epoch(&store, s.id).await?,
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
        harness.lease_epoch = synced;
        // A new session is leased as soon as it exists.
        if resumed.is_none()
            && self.held_lease.is_none()
            && let Some(holder) = &self.lease
        {
            match crate::lease::SessionLease::acquire(&store, harness.session().id, holder).await {
                Ok(held) => {
                    harness.lease_epoch = held.epoch();
                    lease = Some(held);
                }
                Err(e) => {
                    harness.shutdown().await;
                    return Err(e.into());
                }
            }
        }
        Ok(OpenedSession {
            harness,
            diagnostics: shown,
            model: model_ref,
            model_origin,
            worker,
            lease,
        })
    }
}

/// The members the lead hands tasks to, each compiled by the one agent
/// compiler, in roster order.
fn team_members(
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
fn dispatchable_workers(
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

/// evoflux's own directories, which commands must not see.
pub(crate) fn hidden_dirs(dirs: &Dirs) -> Vec<PathBuf> {
    vec![
        dirs.config_dir().to_path_buf(),
        dirs.data_dir().to_path_buf(),
        dirs.cache_dir().to_path_buf(),
    ]
}

/// Builds child sessions' models and pipelines from what the parent was
/// opened with.
#[derive(Debug)]
struct BuilderChildren {
    config: core_config::HarnessConfig,
    cwd: PathBuf,
    provider_options: evoflux_model::ProviderOptions,
    parent: super::ChildModel,
    skills: SkillInputs,
    /// The lead's: a child's skills are resolved the same way.
    resolver: ResolverPolicy,
}

impl super::ChildFactory for BuilderChildren {
    fn model(
        &self,
        agent: &evoflux_agents::team::EffectiveAgentConfig,
    ) -> Result<super::ChildModel, String> {
        let Some(model) = &agent.model else {
            return Ok(self.parent.clone());
        };
        let model_ref: ModelRef = model
            .parse()
            .map_err(|e: ParseModelRefError| e.to_string())?;
        let provider =
            evoflux_model::resolve(&model_ref, &self.config, &self.cwd, &self.provider_options)
                .map_err(|e| e.to_string())?;
        let price = price_of(&self.config, &model_ref, provider.kind());
        Ok(super::ChildModel {
            provider: Arc::from(provider),
            model: model_ref.model.clone(),
            label: model_ref.to_string(),
            price,
        })
    }

    fn parts(
        &self,
        mode: AppMode,
    ) -> Result<(crate::hooks::HookPipeline, Option<Arc<SkillRuntime>>), HookError> {
        let skills = self.skills.runtime(mode, self.resolver.clone());
        let pipeline = standard_pipeline(PipelineOptions {
            on_compacted: Some(skills.compaction_listener()),
            skills: Some(skills.clone()),
            instructions: crate::workspace_instructions::InstructionFiles::from_compat(
                self.config.compat.instructions,
            ),
            ..PipelineOptions::new(mode)
        })?;
        Ok((pipeline, Some(skills)))
    }
}

/// The session's implicit skill resolver, from `[skills]`. Unset, it is
/// speculative when the model that decides is a remote one, and off for a
/// scripted provider (its script is the main conversation, with no answers
/// to spare for a side call) and the embedded local demo model (too small
/// for a reliable decision).
fn resolver_policy(
    loaded: &core_config::LoadedConfig,
    session: ProviderKind,
    model_dir: &Path,
    provider_options: &evoflux_model::ProviderOptions,
) -> Result<ResolverPolicy, SessionError> {
    let skills = &loaded.config.skills;
    let model = match &skills.resolver_model {
        Some(model_ref) => {
            let provider: Arc<dyn evoflux_model::Provider> = Arc::from(
                evoflux_model::resolve(model_ref, &loaded.config, model_dir, provider_options)
                    .map_err(|source| SessionError::Provider {
                        model: model_ref.clone(),
                        origin: ModelOrigin::SkillResolver,
                        source,
                    })?,
            );
            Some(crate::skills::ResolverModel {
                price: price_of(&loaded.config, model_ref, provider.kind()),
                provider,
                model: model_ref.model.clone(),
            })
        }
        None => None,
    };
    let decider = model.as_ref().map_or(session, |m| m.provider.kind());
    let mode = skills.resolver.unwrap_or(if decider.is_remote() {
        core_config::ResolverMode::Speculative
    } else {
        core_config::ResolverMode::Off
    });
    Ok(ResolverPolicy { mode, model })
}

/// What `model` costs by the configured and built-in prices.
fn price_of(
    config: &core_config::HarnessConfig,
    model: &ModelRef,
    kind: evoflux_core::config::ProviderKind,
) -> Option<evoflux_core::price::Price> {
    config
        .price_table()
        .lookup(&model.provider, kind, &model.model)
        .map(|(price, _)| price)
}

/// The explicit model, else the resumed session's, else the agent's, else
/// config.toml's default (or the embedded one).
fn choose_model(
    opts: &SessionOptions,
    resumed: Option<&evoflux_store::Session>,
    agent: &evoflux_agents::team::EffectiveAgentConfig,
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

/// What a session's skill runtime is built from: the graph's skill slots
/// with the user's preferences applied. Read once per opened session and
/// reused for every child it dispatches.
#[derive(Debug, Clone)]
struct SkillInputs {
    slots: Vec<evoflux_skills::selection::SkillSlot>,
    placeholders: evoflux_skills::PlaceholderDirs,
}

impl SkillInputs {
    fn read(dirs: &Dirs, graph: &CompiledGraph) -> SkillInputs {
        let overlay = evoflux_skills::SkillSettingsStore::in_config_dir(dirs.config_dir()).read();
        let options = evoflux_skills::LoadOptions::new(
            evoflux_skills::PlaceholderDirs::from_config_dir(dirs.config_dir()),
        );
        let (slots, _) = evoflux_skills::selection::skill_slots(
            graph,
            &options,
            &overlay,
            evoflux_skills::selection::Depth::Settled,
        );
        SkillInputs {
            slots,
            placeholders: options.placeholders,
        }
    }

    /// The runtime of one session.
    fn runtime(&self, mode: AppMode, resolver: ResolverPolicy) -> Arc<SkillRuntime> {
        Arc::new(SkillRuntime::new(
            &self.slots,
            mode,
            self.placeholders.clone(),
            resolver,
        ))
    }
}

/// Absolute, link-free paths, each once, in the order given.
fn canonical(cwd: &Path, paths: &[PathBuf]) -> Result<Vec<PathBuf>, SessionError> {
    let mut out: Vec<PathBuf> = Vec::with_capacity(paths.len());
    for p in paths {
        let full = cwd.join(p);
        let c = full
            .canonicalize()
            .map_err(|source| SessionError::Workspace {
                path: p.clone(),
                source,
            })?;
        if !c.is_dir() {
            return Err(SessionError::Workspace {
                path: p.clone(),
                source: std::io::Error::new(std::io::ErrorKind::NotADirectory, "not a directory"),
            });
        }
        if !out.contains(&c) {
            out.push(c);
        }
    }
    Ok(out)
}
