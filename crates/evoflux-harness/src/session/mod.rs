//! The agent loop: one session, one lead, turns until the model is done.
//!
//! A turn appends the user's message (or answers the open question), then
//! repeats: assemble the model call through the [`HookPipeline`], stream
//! the provider's answer, persist it, and handle each tool call by its
//! prepared kind. Everything is written to the store as it happens, so a
//! killed process resumes where it stopped: calls that never got a result
//! are closed with an explicit "interrupted" result on the next turn.

mod commands;
mod commits;
mod dispatch;
mod evidence;
mod ledger;
pub mod lineage;
mod mcp;
mod mcp_live;
mod model_call;
mod open;
mod prompts;
mod record;
mod recorder;
mod router;
mod snapshot;
mod title;
mod turn;

pub use commits::git_heads;
pub use dispatch::WorkerEnd;
pub use lineage::Lineage;
pub use record::{SessionRecord, SessionSummary, TreeEntry};
pub use snapshot::{DEFAULT_PAGE, MAX_PAGE, SessionSnapshot, TranscriptPage};

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::approval::ApprovalPolicy;
use evoflux_agents::ToolCatalog;
use evoflux_agents::team::EffectiveAgentConfig;
use evoflux_core::AppMode;
use evoflux_core::ids::SessionId;
use evoflux_mcp::McpRuntime;
use evoflux_model::{Message, Provider, ToolCall};
use evoflux_store::{Session, Store, WorkspaceRequest};
use evoflux_tools::ProcessRuntime;
use serde::Serialize;
use serde_json::Value;

use crate::approval::Approver;
use crate::clock::Clock;
use crate::error::HarnessError;
use crate::events::{Event, EventSink, TurnStatus};
use crate::hooks::{HookContext, HookPipeline};
use crate::prepared::PreparedTools;
use evoflux_tools::web_fetch::{NetworkAccess, WebFetch};

/// Bounds on one turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Model calls in one turn.
    pub model_calls_per_turn: u32,
    /// Tool calls in one turn; calls past it get an error result.
    pub tool_calls_per_turn: u32,
    /// Times the loop reminds a model that must call `final_output`.
    pub output_reminders: u32,
    /// Background tasks one session runs at once (the fan-out of a
    /// dispatch); how deep dispatches go is the team's
    /// ([`TeamSetup::lineage`]).
    pub background_tasks: usize,
    /// `[limits] max_cost_usd`: no model call starts once the session,
    /// with every session it dispatched, has cost this much.
    pub max_cost: Option<evoflux_core::price::Usd>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            model_calls_per_turn: 50,
            tool_calls_per_turn: 200,
            output_reminders: 2,
            background_tasks: 16,
            max_cost: None,
        }
    }
}

impl Limits {
    /// These limits for a session that runs as worker `spec` (dispatched,
    /// or a fleet's agent step): its recipe's tool budget per turn.
    pub fn for_worker(self, spec: Option<&evoflux_agents::worker::spec::AgentSpec>) -> Limits {
        match spec {
            Some(spec) => Limits {
                tool_calls_per_turn: spec.budget.tool_calls.max(1),
                ..self
            },
            None => self,
        }
    }

    /// These limits for a child, bounded by what its parent has left of
    /// its turn: `(model calls, tool calls)`. A child's budget never
    /// exceeds its parent's remaining one, however deep the tree.
    pub fn within(self, (model_calls, tool_calls): (u32, u32)) -> Limits {
        Limits {
            model_calls_per_turn: self.model_calls_per_turn.min(model_calls),
            tool_calls_per_turn: self.tool_calls_per_turn.min(tool_calls),
            ..self
        }
    }

    /// What a turn under these limits has left once it has used `(model
    /// calls, tool calls)`: the bound [`Limits::within`] puts on a child it
    /// dispatches. Saturating: a count at or past a limit leaves nothing,
    /// never a wrapped-around budget.
    pub fn left_after(self, (model_calls, tool_calls): (u32, u32)) -> (u32, u32) {
        (
            self.model_calls_per_turn.saturating_sub(model_calls),
            self.tool_calls_per_turn.saturating_sub(tool_calls),
        )
    }
}

/// Everything a session runs with.
#[derive(Debug)]
pub struct RunSetup {
    pub store: Store,
    pub provider: Arc<dyn Provider>,
    /// The model name sent to the provider.
    pub model: String,
    /// `provider:model`, for events and messages.
    pub model_label: String,
    /// What the model's tokens cost; `None` when its price is unknown (its
    /// calls are counted as unpriced, never as free).
    pub price: Option<evoflux_core::price::Price>,
    pub agent: EffectiveAgentConfig,
    pub catalog: ToolCatalog,
    pub pipeline: HookPipeline,
    pub clock: Arc<dyn Clock>,
    pub events: Arc<dyn EventSink>,
    pub approver: Arc<dyn Approver>,
    pub limits: Limits,
    /// Whether the session may pause for the user's answer.
    pub can_request_input: bool,
    /// What network tools may reach.
    pub network: NetworkAccess,
    /// The application's command runtime (shell, process, command tools);
    /// `None` leaves those tools out of the session.
    pub processes: Option<ProcessRuntime>,
    /// Where artifacts go (`<data>/artifacts`); each session writes below
    /// `<artifacts_root>/<session id>`, as the process runtime does.
    pub artifacts_root: PathBuf,
    /// The MCP servers of the application. The agent's `mcp:` list grants
    /// global servers; a plugin installation's servers are granted only by
    /// loading a skill of that installation ([`Harness::grant_plugin_mcp`]).
    pub mcp: Option<McpRuntime>,
    /// The per-call timeout of MCP tools.
    pub mcp_call_timeout: Duration,
    /// The session's skill runtime (also given to the pipeline's skill
    /// owners); `None` leaves the `skill` tool out of the session.
    pub skills: Option<Arc<crate::skills::SkillRuntime>>,
    /// `config.toml`'s `[approval]`: per-tool policies that override the
    /// tool's own, for every tool including MCP tools.
    pub approvals: ApprovalPolicy,
    /// The sandbox the session's commands run under; `None` runs them as
    /// the process runtime was set up (for embedding tests only: every
    /// front end opens sessions through the builder, which always sets it).
    pub sandbox: Option<SandboxSetup>,
    /// The team the session's dispatch tools reach; `None` for a session
    /// that cannot open child sessions (a child itself, or an embedding).
    pub team: Option<TeamSetup>,
    /// The repository's registered check commands (`fleets/commands.yaml`),
    /// which `verify` runs; `None` leaves `verify` out of the session.
    pub checks: Option<Arc<evoflux_fleet::CommandRegistry>>,
    /// The user's schedules folder (`<config>/schedules`) `schedule_task`
    /// writes; `None` leaves the tool out of the session.
    pub schedules_dir: Option<PathBuf>,
    /// The cache dir under which `code_context` persists its indexes
    /// (`<cache>/code-index/`); `None` keeps them in memory only.
    pub code_cache: Option<PathBuf>,
    /// The Chromium `browser` runs
    /// ([`evoflux_tools::browser::find_chromium`]); `None` leaves the tool
    /// out of the session, reported as not installed.
    pub chromium: Option<PathBuf>,
}

/// What a session needs to run its agent's dispatches as child sessions.
#[derive(Debug, Clone)]
pub struct TeamSetup {
    /// The members the agent may hand tasks to, in roster order.
    pub members: Vec<EffectiveAgentConfig>,
    /// The worker recipes it may dispatch, by id.
    pub workers: Vec<evoflux_agents::worker::spec::AgentSpec>,
    /// The graph's tools, for the children's own tool sets.
    pub catalog: ToolCatalog,
    pub network: NetworkAccess,
    /// Builds what each child needs of its own.
    pub children: Arc<dyn ChildFactory>,
    /// The external agents it may dispatch over the Agent Client
    /// Protocol, and what starts them; empty without a starter.
    pub remote: Vec<crate::remote::RemoteAgent>,
    pub remote_runner: Option<Arc<dyn crate::remote::RemoteAgents>>,
    /// Where the session sits in its tree of dispatches, with `[teams]
    /// max_depth`: a child gets the same team one level down, and one at
    /// the last level is not offered the delegation tool.
    pub lineage: Lineage,
}

impl TeamSetup {
    /// The roster section of the prompt of an agent that dispatches this
    /// team: the members, then the workers reached by their own id and the
    /// external agents ([`crate::team_roster::render`]).
    pub fn roster(&self) -> String {
        crate::team_roster::render(
            &self
                .members
                .iter()
                .map(|m| (m.name.clone(), m.description.clone()))
                .collect::<Vec<_>>(),
            &reachable_workers(&self.members, &self.workers)
                .chain(self.remote.iter().map(|r| &r.spec))
                .cloned()
                .collect::<Vec<_>>(),
        )
    }
}

/// The workers a lead reaches by their own id: one name reaches one agent,
/// so a recipe named like a member is reached as that member.
pub fn reachable_workers<'a>(
    members: &'a [EffectiveAgentConfig],
    workers: &'a [evoflux_agents::worker::spec::AgentSpec],
) -> impl Iterator<Item = &'a evoflux_agents::worker::spec::AgentSpec> {
    workers
        .iter()
        .filter(|w| !members.iter().any(|m| m.name == w.id))
}

/// A dispatch running in the background.
#[derive(Debug)]
pub(crate) struct BackgroundTask {
    pub agent: String,
    pub child_session_id: SessionId,
    pub handle: tokio::task::JoinHandle<Result<dispatch::ChildEnd, HarnessError>>,
}

impl Drop for BackgroundTask {
    /// A task never outlives the session that started it.
    fn drop(&mut self) {
        self.handle.abort();
    }
}

/// The model a child session runs on.
#[derive(Debug, Clone)]
pub struct ChildModel {
    pub provider: Arc<dyn Provider>,
    pub model: String,
    pub label: String,
    pub price: Option<evoflux_core::price::Price>,
}

/// Builds the per-session parts of a child: its model and its pipeline
/// (with its own skill runtime). The session builder implements it from
/// the same config and graph the parent was opened with.
pub trait ChildFactory: Send + Sync + std::fmt::Debug {
    /// The model `agent` runs on: its own `model:`, else the parent's.
    fn model(&self, agent: &EffectiveAgentConfig) -> Result<ChildModel, String>;
    /// A fresh hook pipeline and skill runtime for a child in `mode`.
    fn parts(
        &self,
        mode: AppMode,
    ) -> Result<(HookPipeline, Option<Arc<crate::skills::SkillRuntime>>), crate::hooks::HookError>;
}

/// What a session's command sandbox is built from.
#[derive(Debug, Clone)]
pub struct SandboxSetup {
    /// `sandbox.toml`, layered.
    pub policy: evoflux_graph::sandbox::SandboxPolicy,
    /// evoflux's own directories (config, data, cache), which commands
    /// must not see: the session store, plugin credentials.
    pub hidden: Vec<PathBuf>,
}

/// Which session to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionRequest {
    New {
        workspace: WorkspaceRequest,
        graph_hash: Option<String>,
    },
    /// A child session a dispatch opens: it shares its parent's workspace
    /// and records the parent and the dispatching call. A `task` child runs
    /// in the background and may report with `task_update`.
    Child {
        parent: evoflux_store::SessionParent,
        workspace: evoflux_store::Workspace,
        graph_hash: Option<String>,
        task: bool,
    },
    /// An existing session; a requested mode or workspace must match the
    /// persisted one.
    Resume {
        id: SessionId,
        mode: Option<AppMode>,
        workspace: Option<Vec<std::path::PathBuf>>,
    },
}

/// Per-turn options.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TurnOptions {
    /// A JSON Schema the turn's result must match, delivered through
    /// `final_output`.
    pub output_schema: Option<Value>,
    /// Images or audio the user attached to the turn's message (an
    /// editor's image prompt blocks): stored on the user message (or, when
    /// the input answers the agent's question, on that answer's result)
    /// and sent to the model as far as it accepts them.
    pub media: Vec<evoflux_protocol::Media>,
}

/// An open question of the agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingQuestion {
    pub call_id: String,
    pub question: String,
    pub options: Vec<String>,
}

/// A turn run with [`Harness::turn_or_cancel`]: it ran to its end, or the
/// user cancelled it.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnEnd {
    Completed(TurnOutcome),
    Cancelled,
}

/// How a turn ended.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnOutcome {
    pub status: TurnStatus,
    /// The agent's last text.
    pub text: String,
    /// The validated `final_output` result.
    pub output: Option<Value>,
    pub question: Option<PendingQuestion>,
    /// Workers dispatched in this turn whose results still missed their
    /// contracts after the last repair round. The lead was told and may
    /// have gone on; a front end reports the turn as failed.
    pub unmet_contracts: Vec<UnmetContract>,
}

impl TurnOutcome {
    /// What a turn that did not simply finish means, worded once for every
    /// front end (the CLI prints these, the chat shows them, a server or an
    /// editor passes them on): a limit that stopped it, a structured result
    /// it never gave, workers whose results missed their contracts. Empty
    /// for a turn that completed or waits for the user's answer. Each has a
    /// stable code; how to go on is the front end's to add.
    pub fn diagnostics(&self) -> evoflux_core::Diagnostics {
        use evoflux_core::Diagnostic;
        let mut out = evoflux_core::Diagnostics::new();
        match self.status {
            TurnStatus::Completed | TurnStatus::WaitingForInput => {}
            TurnStatus::LimitReached => out.push(Diagnostic::error(
                "limits/model-calls-reached",
                "the turn reached its limit of model calls and stopped; send a message (or \
                 continue the session) to go on",
            )),
            TurnStatus::CostLimitReached => {
                out.push(Diagnostic::error(
                    "limits/max-cost-reached",
                    self.text.clone(),
                ));
            }
            TurnStatus::OutputMissing => out.push(Diagnostic::error(
                "output/final-output-missing",
                "the model did not produce a valid final_output for the turn's output schema",
            )),
        }
        for u in &self.unmet_contracts {
            out.push(
                Diagnostic::error(
                    "dispatch/result-contract-exhausted",
                    format!(
                        "the result of `{}` (session {}) missed its contract after {} repair \
                         rounds",
                        u.agent, u.child_session_id, u.repairs
                    ),
                )
                .with_slot(evoflux_core::Slot::new(
                    evoflux_core::SlotKind::Worker,
                    u.agent.as_str(),
                )),
            );
        }
        out
    }
}

/// A dispatch whose worker result ended `result_contract_exhausted`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UnmetContract {
    pub agent: String,
    pub child_session_id: String,
    pub repairs: u32,
}

/// A running session: the handle every front end drives. Its state is
/// grouped by the module that owns it — the model ([`model_call`]),
/// recording ([`recorder`]), commands ([`commands`]), MCP tools ([`mcp`]),
/// dispatch ([`dispatch`]), the running turn ([`turn`]) — and the rest is
/// what every turn reads.
#[derive(Debug)]
pub struct Harness {
    /// The model the session calls ([`model_call`]).
    model: model_call::SessionModel,
    /// The session whose tree `[limits] max_cost_usd` bounds: this one, or
    /// the lead session that dispatched it.
    root: SessionId,
    /// The session's usage with its children, read from the store only
    /// when memory cannot know it.
    usage: ledger::UsageLedger,
    agent: EffectiveAgentConfig,
    pipeline: HookPipeline,
    clock: Arc<dyn Clock>,
    approver: Arc<dyn Approver>,
    limits: Limits,
    session: Session,
    workspace: evoflux_tools::Workspace,
    tools: PreparedTools,
    /// Runnable tools the agent was not granted, which a skill's runtime
    /// contract may bring into the session.
    reserve: PreparedTools,
    recorder: recorder::Recorder,
    commands: commands::SessionCommands,
    mcp: mcp::SessionMcp,
    /// What built-in tools keep between calls (the todo list).
    builtin_state: crate::tools::BuiltinState,
    web: Option<WebFetch>,
    skills: Option<Arc<crate::skills::SkillRuntime>>,
    approvals: ApprovalPolicy,
    /// The team, the background tasks, and what children inherit
    /// ([`dispatch`]).
    delegation: dispatch::Delegation,
    /// The registered check commands `verify` runs, for it and its children.
    checks: Option<Arc<evoflux_fleet::CommandRegistry>>,
    /// The user's schedules folder `schedule_task` writes to.
    schedules_dir: Option<PathBuf>,
    /// `code_context`'s navigator (Coding sessions).
    code: Option<evoflux_tools::CodeNavigator>,
    /// The user's "always" answers that apply to this session (its own and
    /// its workspace's).
    grants: std::collections::BTreeSet<evoflux_store::GrantKey>,
    artifacts_dir: PathBuf,
    /// The session's browser (`browser`), started by its first call and
    /// stopped with the session.
    browser: Option<evoflux_tools::browser::Browser>,
    /// What the running turn carries between its calls ([`turn`]).
    turn: turn::TurnState,
    /// The front end's client's file system, which file tools use where
    /// it offers it ([`crate::client_files`]).
    client_files: Option<Arc<dyn crate::client_files::ClientFiles>>,
    /// The commands read from files the user can type as `/name`
    /// ([`prompts`]).
    prompt_files: Vec<crate::prompt_commands::FileCommand>,
    /// The function tools offered so far, in the order they were first
    /// offered: a tool once offered stays offered for the session, and one
    /// offered later (a deferred tool activated, an MCP server's tools
    /// found by search) is appended, so the tool list — part of every
    /// request's cached prefix — only ever grows at its end.
    tool_order: Vec<String>,
    /// The session's lease epoch this harness is current at: it was opened
    /// then, or last ran a turn under it ([`Harness::lease`]).
    lease_epoch: i64,
    /// The call whose approval the turn waits on now, so a cancellation
    /// can say it was decided.
    awaiting_approval: std::sync::Mutex<Option<String>>,
    /// Whether the model is asked for the session's title after its first
    /// turn, and the call under way ([`title`]); front ends that outlive a
    /// turn turn it on.
    titles: title::Titles,
}

/// A session's model client: what it calls and under which label, for a
/// harness that replaces this one (the application's session builder uses
/// it again when the session resolves to the same model).
#[derive(Debug, Clone)]
pub struct ModelClient {
    pub label: String,
    pub provider: Arc<dyn Provider>,
}

impl Harness {
    /// The model client this session calls.
    pub fn model_client(&self) -> ModelClient {
        ModelClient {
            label: self.session.model.clone().unwrap_or_default(),
            provider: Arc::clone(&self.model.provider),
        }
    }

    /// Emits one event to the session's sink.
    pub(super) fn emit(&self, event: &Event) {
        self.recorder.events.emit(event);
    }

    pub fn session(&self) -> &Session {
        &self.session
    }

    /// Takes the session's lease for `holder`, for one turn (or anything
    /// else that writes to the session, such as a user command), or
    /// [`LeaseError::Busy`](crate::lease::LeaseError::Busy) naming who runs
    /// a turn on it now. When another holder ran the session since this
    /// harness was opened or last held the lease, the lease
    /// [`is_stale`](crate::lease::SessionLease::is_stale): open the session
    /// again under it (the application's session builder, told the lease
    /// it holds) before the turn, as the session host does ([`crate::host`]). This harness stays stale (so does
    /// every lease it takes) until it is replaced.
    pub async fn lease(
        &mut self,
        holder: &crate::lease::Holder,
    ) -> Result<crate::lease::SessionLease, crate::lease::LeaseError> {
        let mut lease =
            crate::lease::SessionLease::acquire(&self.recorder.store, self.session.id, holder)
                .await?;
        self.adopt_lease(&mut lease);
        Ok(lease)
    }

    /// The lease epoch this harness is current at: what its opener held or
    /// read from the store when it opened the session (0 for a session
    /// nobody leased yet). The session builder sets it once the session is
    /// open; [`Harness::adopt_lease`] keeps it from then on.
    pub fn set_lease_epoch(&mut self, epoch: i64) {
        self.lease_epoch = epoch;
    }

    /// Takes `lease`, acquired for this session, as the one this harness
    /// runs under: marks it stale (and returns `true`) when another holder
    /// ran the session since this harness was opened or last held it.
    pub fn adopt_lease(&mut self, lease: &mut crate::lease::SessionLease) -> bool {
        let stale = lease.epoch() > self.lease_epoch + 1;
        lease.set_stale(stale);
        if !stale {
            self.lease_epoch = lease.epoch();
        }
        stale
    }

    /// The store the session is recorded in.
    pub fn store(&self) -> &Store {
        &self.recorder.store
    }

    /// The tools the model sees now, each with its description, in the
    /// order they are offered.
    pub fn offered_tools(&self) -> Vec<(&str, &str)> {
        self.tools
            .iter()
            .filter(|t| self.offered(t))
            .map(|t| {
                (
                    t.definition.name.as_str(),
                    t.definition.description.as_str(),
                )
            })
            .collect()
    }

    /// The skills the user may invoke in this session (`$name`,
    /// `/skill:name`): valid, available in its mode and user-invocable,
    /// each with its description.
    pub fn invocable_skills(&self) -> Vec<(&str, &str)> {
        self.skills.as_deref().map_or_else(Vec::new, |rt| {
            rt.records()
                .into_iter()
                .filter(|r| r.prefs.user_invocable)
                .map(|r| (r.name.as_str(), r.description.as_str()))
                .collect()
        })
    }

    /// From now on, `read`, `write` and `edit` go through `files` where
    /// it offers them (an editor's buffers; see [`crate::client_files`]).
    pub fn use_client_files(&mut self, files: Arc<dyn crate::client_files::ClientFiles>) {
        self.client_files = Some(files);
    }

    /// From now on, the session's [`ApprovalMode`](crate::ApprovalMode)
    /// is the one `switch` holds: its front end switches it while the
    /// session runs (an editor's `session/set_mode`), and the children it
    /// dispatches from now on follow it too.
    pub fn use_approval_mode(&mut self, switch: crate::approval::ModeSwitch) {
        self.approvals.mode = switch;
    }

    /// Compacts the conversation at the next model call, as the
    /// compaction owner does when the context is exceeded (older turns
    /// summarized, recent ones and skill activations kept).
    pub fn request_compaction(&mut self) {
        self.turn.compact_next = true;
    }

    /// The session's usage so far, all turns, with every session its
    /// dispatches opened: tokens, model calls and cost.
    pub async fn usage(&self) -> Result<evoflux_store::Usage, HarnessError> {
        Ok(self.recorder.store.tree_usage(self.session.id).await?)
    }

    /// Stops what the session started (its MCP servers, its browser), after waiting a
    /// little for its title call ([`title`]). Command processes belong to
    /// the application's runtime, which its owner shuts down.
    pub async fn shutdown(&self) {
        self.settle_title().await;
        if let Some(rt) = &self.mcp.runtime {
            rt.shutdown().await;
        }
        if let Some(browser) = &self.browser {
            browser.shutdown().await;
        }
    }

    /// Whether the model sees `tool` now: deferred tools only once
    /// something activated them (`process` after a command yielded); MCP
    /// tools, and built-ins that join them (`browser`), unless they are
    /// held back for the tool that turns them on (`connection_search`),
    /// which is offered only while some are. A built-in tool's handler
    /// says which it is ([`crate::tools::Offering`]).
    pub(super) fn offered(&self, tool: &crate::prepared::PreparedTool) -> bool {
        use crate::prepared::{Executor, PreparedKind};
        use crate::tools::Offering;
        if self.tool_order.contains(&tool.definition.name) {
            return true;
        }
        match &tool.kind {
            PreparedKind::Ordinary(Executor::Mcp { qualified_name }) => {
                return !self.mcp.held_back.contains(qualified_name);
            }
            PreparedKind::Ordinary(Executor::Builtin(_) | Executor::Command(_))
            | PreparedKind::RequestInput(_)
            | PreparedKind::Dispatch(_)
            | PreparedKind::Provider(_) => {}
        }
        match tool.builtin().map(|h| h.offering()) {
            Some(Offering::WhileToolsHeldBack) => return !self.mcp.held_back.is_empty(),
            Some(Offering::DeferredWithConnections) => {
                return !self.mcp.held_back.contains(&tool.definition.name);
            }
            Some(Offering::Always | Offering::Deferred) | None => {}
        }
        !tool.deferred
            || self
                .commands
                .processes
                .as_ref()
                .is_some_and(|rt| rt.has_processes(self.session.id))
    }

    /// The session's browser, when it can run one.
    pub(crate) fn browser(&self) -> Option<&evoflux_tools::browser::Browser> {
        self.browser.as_ref()
    }

    pub fn tools(&self) -> &PreparedTools {
        &self.tools
    }

    /// The messages of the session so far.
    pub fn messages(&self) -> &[Message] {
        &self.recorder.messages
    }

    /// The question the session is waiting on, if any.
    pub async fn pending_question(&self) -> Result<Option<PendingQuestion>, HarnessError> {
        let open = self
            .recorder
            .store
            .open_pending_inputs(self.session.id)
            .await?;
        Ok(open.first().map(PendingQuestion::of))
    }

    pub(super) fn ctx(&self) -> HookContext<'_> {
        HookContext {
            session: &self.session,
            agent: &self.agent,
            clock: self.clock.as_ref(),
            model: &self.model.name,
            context_window: self.model.provider.context_window(),
            price: self.model.price.as_ref(),
            artifacts_dir: &self.artifacts_dir,
            workspace: &self.workspace,
            tools: &self.tools,
            events: self.recorder.events.as_ref(),
        }
    }
}

impl PendingQuestion {
    /// The open question a stored pending input holds.
    pub fn of(pending: &evoflux_store::PendingInput) -> PendingQuestion {
        PendingQuestion {
            call_id: pending.tool_call_id.clone(),
            question: pending.request.question.clone(),
            options: pending.request.options.clone(),
        }
    }
}

/// The pending record of a request-input call (`ask_user`): its arguments
/// have the record's `question` and `options`; anything else in them is
/// ignored (they were checked against the tool's schema before).
fn pending_request_of(call: &ToolCall) -> evoflux_store::PendingRequest {
    let text = |v: &Value| v.as_str().map(str::to_owned);
    evoflux_store::PendingRequest {
        tool: call.name.clone(),
        question: call
            .arguments
            .get("question")
            .and_then(text)
            .unwrap_or_default(),
        options: call
            .arguments
            .get("options")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(text).collect())
            .unwrap_or_default(),
        output_schema: None,
    }
}

#[cfg(test)]
mod tests {
    use super::Limits;

    fn limits(model_calls: u32, tool_calls: u32) -> Limits {
        Limits {
            model_calls_per_turn: model_calls,
            tool_calls_per_turn: tool_calls,
            ..Limits::default()
        }
    }

    fn calls(l: Limits) -> (u32, u32) {
        (l.model_calls_per_turn, l.tool_calls_per_turn)
    }

    #[test]
    fn a_child_never_gets_more_than_its_parent_has_left() {
        let parent = limits(50, 200);
        let left = parent.left_after((12, 150));
        assert_eq!(left, (38, 50));
        // The child's own limits are larger: the parent's remainder wins.
        assert_eq!(calls(limits(50, 200).within(left)), (38, 50));
        // Smaller ones (a worker's tool budget) are kept.
        assert_eq!(calls(limits(10, 5).within(left)), (10, 5));
        // Only the call budgets change.
        let max_cost = Some(evoflux_core::price::Usd::from_picos(2_000_000_000_000));
        let own = Limits {
            output_reminders: 7,
            background_tasks: 3,
            max_cost,
            ..limits(50, 200)
        };
        let child = own.within((1, 1));
        assert_eq!(
            (
                child.output_reminders,
                child.background_tasks,
                child.max_cost
            ),
            (7, 3, max_cost)
        );
    }

    #[test]
    fn the_bound_holds_however_deep_the_tree() {
        // lead → planner → coder, each spending some of its turn before it
        // dispatches: every level is bounded by the one above's remainder.
        let lead = limits(50, 200);
        let planner = limits(50, 200).within(lead.left_after((10, 20)));
        assert_eq!(calls(planner), (40, 180));
        let coder = limits(50, 200).within(planner.left_after((5, 30)));
        assert_eq!(calls(coder), (35, 150));
        let lead_left = lead.left_after((10, 20));
        assert!(coder.model_calls_per_turn <= lead_left.0);
        assert!(coder.tool_calls_per_turn <= lead_left.1);
    }

    #[test]
    fn an_unlimited_parent_leaves_the_child_its_own_limits() {
        let parent = limits(u32::MAX, u32::MAX);
        assert_eq!(parent.left_after((3, 4)), (u32::MAX - 3, u32::MAX - 4));
        let child = limits(50, 200).within(parent.left_after((3, 4)));
        assert_eq!(calls(child), (50, 200));
        assert_eq!(
            calls(limits(50, 200).within((u32::MAX, u32::MAX))),
            (50, 200)
        );
    }

    #[test]
    fn nothing_left_gives_a_child_nothing() {
        let parent = limits(4, 9);
        assert_eq!(parent.left_after((4, 9)), (0, 0));
        assert_eq!(
            calls(limits(50, 200).within(parent.left_after((4, 9)))),
            (0, 0)
        );
        // One budget spent, the other not: each is bounded on its own.
        assert_eq!(
            calls(limits(50, 200).within(parent.left_after((4, 2)))),
            (0, 7)
        );
    }

    #[test]
    fn counts_past_a_limit_saturate_instead_of_wrapping() {
        let parent = limits(3, 5);
        assert_eq!(parent.left_after((4, 6)), (0, 0));
        assert_eq!(parent.left_after((u32::MAX, u32::MAX)), (0, 0));
        assert_eq!(limits(0, 0).left_after((1, 1)), (0, 0));
        assert_eq!(
            calls(limits(50, 200).within(parent.left_after((9, 9)))),
            (0, 0)
        );
    }
}
