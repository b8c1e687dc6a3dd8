//! Opening a session from what a front end knows: the application's
//! directories, a mode, repositories, a lead, a model. Every front end
//! (`evoflux run`, `chat`, `sessions resume`, the server) opens sessions
//! through [`SessionBuilder`], so lead resolution, the `[approval]` check,
//! model choice, the skill-resolver policy and MCP roots are decided in one
//! place. Errors are typed ([`SessionError`]); the front end words them and
//! picks its exit code from [`SessionError::is_invalid_input`].
//!
//! Opening runs in named phases (the module `open`); keeping the data directory to
//! `[storage]` is not one of them but a maintenance step of its own
//! ([`crate::maintenance`]).

mod children;
mod error;
mod open;

pub use error::SessionError;

use std::path::PathBuf;
use std::sync::Arc;

use evoflux_core::config::ModelRef;
use evoflux_core::ids::SessionId;
use evoflux_core::{AppMode, Diagnostics};
use evoflux_harness::skills::ResolverPolicy;
use evoflux_harness::{
    Approver, EventSink, Harness, Limits, ModelClient, NetworkAccess, NoEvents, NonInteractive,
};
use evoflux_store::Store;
use evoflux_tools::ProcessRuntime;

use crate::AppContext;

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
    pub lease: Option<evoflux_harness::lease::SessionLease>,
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
    reuse_model: Option<ModelClient>,
    clock: Option<Arc<dyn evoflux_harness::Clock>>,
    resolver: Option<ResolverPolicy>,
    model_dir: Option<PathBuf>,
    worker: Option<String>,
    /// Who takes the session's lease while it opens.
    lease: Option<evoflux_harness::lease::Holder>,
    /// The epoch of the lease the caller holds (a reopen under it).
    held_lease: Option<i64>,
    /// MCP servers the front end's client passed for this session only
    /// ([`SessionBuilder::session_mcp`]).
    session_mcp: Vec<evoflux_mcp::ServerDefinition>,
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
            session_mcp: Vec::new(),
        }
    }

    /// MCP servers the front end's client passed for this session (an
    /// editor's `mcpServers` in ACP's `session/new` and `session/load`):
    /// run beside the configured ones and named like them, a configured
    /// server of the same name replaced
    /// ([`evoflux_mcp::McpRuntime::with_session_servers`]), and granted to
    /// the session's lead only — its members and workers keep their own
    /// grants. Like every granted server, they are started with the
    /// session and awaited before its first turn, and stop with it. A
    /// front end that reopens the session passes them again.
    pub fn session_mcp(mut self, servers: Vec<evoflux_mcp::ServerDefinition>) -> Self {
        self.session_mcp = servers;
        self
    }

    /// Takes the session's lease for `holder` while opening it
    /// ([`evoflux_harness::lease`]): a resumed session's is taken before its
    /// transcript is read or anything is written to it (and before any of
    /// its servers start), a new session's as soon as it exists. The
    /// session is refused with [`SessionError::Lease`] while another
    /// process runs a turn on it, and is this front end's until it
    /// releases [`OpenedSession::lease`]. For a front end that runs its
    /// turns at once (`evoflux run`); one that keeps the session open takes
    /// the lease per turn ([`Harness::lease`](evoflux_harness::Harness::lease)).
    pub fn lease(mut self, holder: evoflux_harness::lease::Holder) -> Self {
        self.lease = Some(holder);
        self
    }

    /// Opens the session again under `lease`, which the caller holds (its
    /// harness was stale, [`evoflux_harness::lease::SessionLease::is_stale`]): the new
    /// harness is current at it.
    pub fn held_lease(mut self, lease: &evoflux_harness::lease::SessionLease) -> Self {
        self.held_lease = Some(lease.epoch());
        self
    }

    /// Runs the session as worker recipe `id` (its prompt, tools and tool
    /// budget) instead of a lead: a fleet's agent step. Coding mode only,
    /// as dispatch reaches workers; the worker hands nothing on (no team),
    /// and [`OpenedSession::worker`] is its spec, for
    /// [`Harness::worker_task`](evoflux_harness::Harness::worker_task).
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
    pub fn clock(mut self, clock: Arc<dyn evoflux_harness::Clock>) -> Self {
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
    pub fn reuse_model(mut self, client: ModelClient) -> Self {
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
}
