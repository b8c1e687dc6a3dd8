//! The agent loop: one session, one lead, turns until the model is done.
//!
//! A turn appends the user's message (or answers the open question), then
//! repeats: assemble the model call through the [`HookPipeline`], stream
//! the provider's answer, persist it, and handle each tool call by its
//! prepared kind. Everything is written to the store as it happens, so a
//! killed process resumes where it stopped: calls that never got a result
//! are closed with an explicit "interrupted" result on the next turn.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use evoflux_agents::ToolCatalog;
use evoflux_agents::team::EffectiveAgentConfig;
use evoflux_core::AppMode;
use evoflux_core::ids::SessionId;
use evoflux_graph::tool::{
    Approval, BuiltinExecutor, DispatchAction, InputRequest, ProviderTool, ToolExecutor,
};
use evoflux_mcp::{McpRuntime, ServerOwner, ServerState, ToolSet};
use evoflux_model::{Message, Provider, Request, StreamEvent, ToolCall, ToolChoice};
use evoflux_store::{NewSession, Session, Store, WorkspaceRequest};
use evoflux_tools::{CommandStatus, ExitNotice, ProcessRuntime};
use futures_util::StreamExt;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::approval::{ApprovalDecision, ApprovalRequest, Approver};
use crate::clock::Clock;
use crate::error::HarnessError;
use crate::events::{Event, EventSink, ToolResult, TurnStatus};
use crate::hooks::{HookContext, HookPipeline, ModelCall, ToolGate};
use crate::prepared::{Executor, PreparedKind, PreparedTools, SessionCapabilities};
use crate::terminal::{FINAL_OUTPUT, TerminalOutput};
use crate::todo::TodoList;
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
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            model_calls_per_turn: 50,
            tool_calls_per_turn: 200,
            output_reminders: 2,
        }
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
    pub approvals: BTreeMap<String, Approval>,
}

/// Which session to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionRequest {
    New {
        workspace: WorkspaceRequest,
        graph_hash: Option<String>,
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
}

/// An open question of the agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingQuestion {
    pub call_id: String,
    pub question: String,
    pub options: Vec<String>,
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
}

/// A running session.
#[derive(Debug)]
pub struct Harness {
    store: Store,
    provider: Arc<dyn Provider>,
    model: String,
    agent: EffectiveAgentConfig,
    pipeline: HookPipeline,
    clock: Arc<dyn Clock>,
    events: Arc<dyn EventSink>,
    approver: Arc<dyn Approver>,
    limits: Limits,
    session: Session,
    workspace: evoflux_tools::Workspace,
    tools: PreparedTools,
    messages: Vec<Message>,
    todo: TodoList,
    web: Option<WebFetch>,
    processes: Option<ProcessRuntime>,
    /// Exit notices of this session's `notify_on_exit` commands.
    exits: Option<mpsc::UnboundedReceiver<ExitNotice>>,
    /// Commands started with `notify_on_exit` whose end the turn waits for.
    awaiting_exit: BTreeSet<String>,
    artifacts_dir: PathBuf,
    /// Stored metadata of tool results by call id, for context hooks.
    result_metadata: Arc<std::collections::HashMap<String, Value>>,
    mcp: Option<McpRuntime>,
    mcp_call_timeout: Duration,
    /// The MCP tools offered in the current model call.
    mcp_tools: ToolSet,
    /// Plugin installations whose MCP tools this session may use.
    mcp_installations: BTreeSet<String>,
    /// Last reported state per MCP server, to report changes once.
    mcp_states: BTreeMap<(String, String), ServerState>,
    skills: Option<Arc<crate::skills::SkillRuntime>>,
    approvals: BTreeMap<String, Approval>,
    /// Runnable tools the agent was not granted, which a skill's runtime
    /// contract may bring into the session.
    reserve: PreparedTools,
    /// The user message that opened the current turn, until its first
    /// model call takes it.
    turn_input: Option<String>,
}

impl Harness {
    /// Creates or resumes the session and prepares its tools.
    pub async fn open(setup: RunSetup, request: SessionRequest) -> Result<Harness, HarnessError> {
        let (session, resumed) = match request {
            SessionRequest::New {
                workspace,
                graph_hash,
            } => {
                let s = setup
                    .store
                    .create_session(NewSession {
                        workspace,
                        lead: Some(setup.agent.name.clone()),
                        graph_hash,
                    })
                    .await?;
                (s, false)
            }
            SessionRequest::Resume {
                id,
                mode,
                workspace,
            } => {
                let s = setup.store.resume(id, mode, workspace.as_deref()).await?;
                if let Some(persisted) = &s.lead
                    && persisted != &setup.agent.name
                {
                    return Err(HarnessError::LeadMismatch {
                        session: s.id,
                        persisted: persisted.clone(),
                        requested: setup.agent.name.clone(),
                    });
                }
                (s, true)
            }
        };
        let workspace = evoflux_tools::Workspace::new(session.workspace.roots())
            .map_err(HarnessError::Workspace)?;
        let caps = SessionCapabilities {
            root_session: true,
            delegated_task_child: false,
            can_request_input: setup.can_request_input,
            processes: setup.processes.is_some(),
            skills: setup.skills.is_some(),
            network: setup.network != NetworkAccess::Off,
            provider: setup.provider.kind(),
        };
        let mut tools =
            PreparedTools::prepare(&setup.catalog, &setup.agent.tools, session.mode(), &caps);
        let entries = setup.store.transcript(session.id).await?;
        let result_metadata: std::collections::HashMap<String, Value> = entries
            .iter()
            .filter_map(|e| match (&e.message, &e.artifact) {
                (Message::Tool { tool_call_id, .. }, Some(meta)) => {
                    Some((tool_call_id.clone(), meta.clone()))
                }
                _ => None,
            })
            .collect();
        let mut reserve = PreparedTools::default();
        if let Some(rt) = &setup.skills {
            reserve = crate::skills::reserve_tools(
                &setup.catalog,
                &setup.agent.tools,
                session.mode(),
                &caps,
            );
            // Durable activations re-apply their runtime contracts.
            rt.attach(
                &setup.catalog,
                &tools,
                &reserve,
                &setup.agent.skills,
                &entries,
            );
            crate::skills::apply_tool_activations(rt, &mut tools, &mut reserve);
        }
        let messages: Vec<Message> = entries.into_iter().map(|e| e.message).collect();
        let todo = replay_todo(&messages, &tools);
        let session_id = session.id;
        let web = match setup.network {
            NetworkAccess::Off => None,
            access @ (NetworkAccess::PublicOnly | NetworkAccess::Any) => {
                Some(WebFetch::new(access).map_err(HarnessError::Http)?)
            }
        };
        let mut harness = Harness {
            store: setup.store,
            provider: setup.provider,
            model: setup.model,
            agent: setup.agent,
            pipeline: setup.pipeline,
            clock: setup.clock,
            events: setup.events,
            approver: setup.approver,
            limits: setup.limits,
            session,
            workspace,
            tools,
            messages,
            todo,
            web,
            exits: setup
                .processes
                .as_ref()
                .map(|rt| rt.subscribe_exits(session_id)),
            processes: setup.processes,
            awaiting_exit: BTreeSet::new(),
            artifacts_dir: setup.artifacts_root.join(session_id.to_string()),
            result_metadata: Arc::new(result_metadata),
            mcp: setup.mcp,
            mcp_call_timeout: setup.mcp_call_timeout,
            mcp_tools: ToolSet::default(),
            mcp_installations: BTreeSet::new(),
            mcp_states: BTreeMap::new(),
            skills: setup.skills,
            approvals: setup.approvals,
            reserve,
            turn_input: None,
        };
        harness.events.emit(&Event::SessionStarted {
            session_id: harness.session.id.to_string(),
            mode: harness.session.mode(),
            workspace: harness.session.workspace.roots().to_vec(),
            lead: harness.agent.name.clone(),
            model: setup.model_label,
            resumed,
            tools: harness
                .tools
                .iter()
                .filter(|t| harness.offered(t))
                .map(|t| t.definition.name.clone())
                .collect(),
            unavailable_tools: harness.tools.unavailable.clone(),
        });
        harness.start_granted_mcp();
        Ok(harness)
    }

    pub fn session(&self) -> &Session {
        &self.session
    }

    /// Stops what the session started (its MCP servers). Command processes
    /// belong to the application's runtime, which its owner shuts down.
    pub async fn shutdown(&self) {
        if let Some(rt) = &self.mcp {
            rt.shutdown().await;
        }
    }

    /// Starts the global MCP servers the agent's `mcp:` list grants; they
    /// come up in the background and join the tools when ready. A name
    /// that no server has is reported, not ignored.
    fn start_granted_mcp(&mut self) {
        let Some(rt) = &self.mcp else {
            for name in &self.agent.mcp {
                self.events.emit(&Event::McpServer {
                    server: name.clone(),
                    owner: "global".into(),
                    state: "missing".into(),
                    error: Some("no MCP runtime is attached to this session".into()),
                });
            }
            return;
        };
        for name in &self.agent.mcp {
            if let Err(e) = rt.global().start(name) {
                self.events.emit(&Event::McpServer {
                    server: name.clone(),
                    owner: "global".into(),
                    state: "missing".into(),
                    error: Some(e.to_string()),
                });
            }
        }
    }

    /// Grants (and starts) the MCP servers of one plugin installation for
    /// the rest of this session — called when a skill that the
    /// installation contributed is loaded. Installation alone grants
    /// nothing.
    pub fn grant_plugin_mcp(&mut self, installation: &str) {
        if !self.mcp_installations.insert(installation.to_owned()) {
            return;
        }
        if let Some(manager) = self.mcp.as_ref().and_then(|rt| rt.plugin(installation)) {
            manager.start_all();
        }
    }

    /// Picks up plugin changes made while the session runs (enable,
    /// disable, credentials, edits to a linked plugin) without restarting
    /// evoflux; call it between turns. Returns the adaptation diagnostics.
    pub async fn sync_plugins(
        &mut self,
        plugins: &evoflux_plugins::PluginManager,
    ) -> Vec<evoflux_core::Diagnostic> {
        match &mut self.mcp {
            Some(rt) => rt.sync_plugins(plugins).await,
            None => Vec::new(),
        }
    }

    /// Refreshes the MCP tools offered to the next model call and reports
    /// every server whose state changed (a failed or slow server is shown,
    /// never dropped silently).
    fn refresh_mcp(&mut self) {
        let Some(rt) = &self.mcp else { return };
        let granted = |owner: &ServerOwner, server: &str| match owner {
            ServerOwner::Global { .. } => self.agent.mcp.iter().any(|m| m == server),
            ServerOwner::Plugin { installation, .. } => {
                self.mcp_installations.contains(installation)
            }
        };
        let mut changes = Vec::new();
        for status in rt.statuses() {
            if !granted(&status.owner, &status.name) {
                continue;
            }
            let key = (status.owner.label(), status.name.clone());
            if self.mcp_states.get(&key) != Some(&status.state) {
                self.mcp_states.insert(key, status.state);
                changes.push(Event::McpServer {
                    server: status.name.clone(),
                    owner: status.owner.label(),
                    state: serde_json::to_value(status.state)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_owned))
                        .unwrap_or_default(),
                    error: status
                        .last_error
                        .map(|e| format!("{}: {}", e.code, e.message)),
                });
            }
        }
        let set = rt.tool_set(&self.tools.reserved_names());
        self.tools
            .set_mcp(set.tools().iter().filter(|d| granted(&d.owner, &d.server)));
        self.mcp_tools = set;
        for e in changes {
            self.events.emit(&e);
        }
    }

    /// A call named a tool nobody offers while a granted MCP server is
    /// still starting: the name may be one of its tools (a skill or the
    /// user can name them before they are listed), so wait for those
    /// servers to settle once instead of failing the call. Turns that do
    /// not call such a tool never wait. Returns whether it waited.
    async fn wait_for_starting_mcp(&self) -> bool {
        let Some(rt) = &self.mcp else { return false };
        let starting = rt.statuses().into_iter().any(|s| {
            s.state == ServerState::Starting
                && match &s.owner {
                    ServerOwner::Global { .. } => self.agent.mcp.contains(&s.name),
                    ServerOwner::Plugin { installation, .. } => {
                        self.mcp_installations.contains(installation)
                    }
                }
        });
        if !starting {
            return false;
        }
        let managers = std::iter::once(rt.global())
            .chain(self.mcp_installations.iter().filter_map(|i| rt.plugin(i)));
        for m in managers {
            m.wait_settled(evoflux_mcp::DEFAULT_STARTUP_TIMEOUT).await;
        }
        true
    }

    /// Whether the model sees `tool` now: deferred tools only once
    /// something activated them (`process` after a command yielded).
    fn offered(&self, tool: &crate::prepared::PreparedTool) -> bool {
        !tool.deferred
            || self
                .processes
                .as_ref()
                .is_some_and(|rt| rt.has_processes(self.session.id))
    }

    pub fn tools(&self) -> &PreparedTools {
        &self.tools
    }

    /// The messages of the session so far.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// The question the session is waiting on, if any.
    pub async fn pending_question(&self) -> Result<Option<PendingQuestion>, HarnessError> {
        let open = self.store.open_pending_inputs(self.session.id).await?;
        Ok(open
            .first()
            .map(|p| question_of(&p.tool_call_id, &p.request)))
    }

    fn ctx(&self) -> HookContext<'_> {
        HookContext {
            session: &self.session,
            agent: &self.agent,
            clock: self.clock.as_ref(),
            model: &self.model,
            context_window: self.provider.context_window(),
            artifacts_dir: &self.artifacts_dir,
            workspace: &self.workspace,
            tools: &self.tools,
        }
    }

    /// Runs one turn. `input` is the user's message — or, when the agent
    /// asked a question, the answer to it. `None` continues an interrupted
    /// turn without a new message.
    pub async fn turn(
        &mut self,
        input: Option<&str>,
        options: TurnOptions,
    ) -> Result<TurnOutcome, HarnessError> {
        self.events.emit(&Event::TurnStarted {
            session_id: self.session.id.to_string(),
        });
        let result = self.turn_inner(input, options).await;
        match &result {
            Ok(outcome) => self.events.emit(&Event::TurnCompleted {
                status: outcome.status,
                text: outcome.text.clone(),
                output: outcome.output.clone(),
            }),
            Err(e) => self.events.emit(&Event::Error {
                code: e.code().to_owned(),
                message: e.to_string(),
            }),
        }
        result
    }

    async fn turn_inner(
        &mut self,
        input: Option<&str>,
        options: TurnOptions,
    ) -> Result<TurnOutcome, HarnessError> {
        let mut terminal = options.output_schema.map(TerminalOutput::new).transpose()?;
        let open = self.store.open_pending_inputs(self.session.id).await?;
        self.close_interrupted_calls(&open).await?;
        match (open.first(), input) {
            (Some(pending), Some(answer)) => {
                self.store
                    .answer_pending_input(self.session.id, pending.id, &json!({"text": answer}))
                    .await?;
                if terminal.is_none()
                    && let Some(schema) = pending
                        .request
                        .get("output_schema")
                        .filter(|s| !s.is_null())
                {
                    terminal = Some(TerminalOutput::new(schema.clone())?);
                }
                let tool = pending
                    .request
                    .get("tool")
                    .and_then(Value::as_str)
                    .unwrap_or("ask_user")
                    .to_owned();
                let call = ToolCall {
                    id: pending.tool_call_id.clone(),
                    name: tool,
                    arguments: pending.request.clone(),
                };
                self.record(
                    &call,
                    ToolResult::ok(format!("The user answered: {answer}")),
                )
                .await?;
                if let Some(next) = open.get(1) {
                    let q = question_of(&next.tool_call_id, &next.request);
                    return Ok(self.waiting(q));
                }
            }
            (Some(pending), None) => {
                let q = question_of(&pending.tool_call_id, &pending.request);
                return Ok(self.waiting(q));
            }
            (None, Some(text)) => {
                self.turn_input = Some(text.to_owned());
                let m = Message::user(text);
                self.append(m, None).await?;
            }
            (None, None) => {
                if matches!(self.messages.last(), None | Some(Message::Assistant { .. })) {
                    return Err(HarnessError::NothingToContinue {
                        session: self.session.id,
                    });
                }
            }
        }
        self.run_model_loop(terminal).await
    }

    fn waiting(&self, question: PendingQuestion) -> TurnOutcome {
        self.events.emit(&Event::InputRequested {
            call_id: question.call_id.clone(),
            question: question.question.clone(),
            options: question.options.clone(),
        });
        TurnOutcome {
            status: TurnStatus::WaitingForInput,
            text: String::new(),
            output: None,
            question: Some(question),
        }
    }

    /// Tool calls of the last assistant message that never got a result
    /// and are not waiting for the user: the process stopped mid-call.
    async fn close_interrupted_calls(
        &mut self,
        open: &[evoflux_store::PendingInput],
    ) -> Result<(), HarnessError> {
        let Some(last_assistant) = self.messages.iter().rposition(
            |m| matches!(m, Message::Assistant { tool_calls, .. } if !tool_calls.is_empty()),
        ) else {
            return Ok(());
        };
        let Message::Assistant { tool_calls, .. } = &self.messages[last_assistant] else {
            return Ok(());
        };
        let answered: Vec<&str> = self.messages[last_assistant..]
            .iter()
            .filter_map(|m| match m {
                Message::Tool { tool_call_id, .. } => Some(tool_call_id.as_str()),
                Message::System { .. } | Message::User { .. } | Message::Assistant { .. } => None,
            })
            .collect();
        let missing: Vec<ToolCall> = tool_calls
            .iter()
            .filter(|c| !answered.contains(&c.id.as_str()))
            .filter(|c| !open.iter().any(|p| p.tool_call_id == c.id))
            .cloned()
            .collect();
        for call in missing {
            self.record(
                &call,
                ToolResult::error(
                    "This call was interrupted before it finished (the process stopped). \
                     Run it again if it is still needed.",
                ),
            )
            .await?;
        }
        Ok(())
    }

    async fn run_model_loop(
        &mut self,
        terminal: Option<TerminalOutput>,
    ) -> Result<TurnOutcome, HarnessError> {
        let mut reminders = 0;
        let mut tool_calls_used: u32 = 0;
        let mut last_text = String::new();
        for _ in 0..self.limits.model_calls_per_turn {
            self.deliver_exit_notices(false).await?;
            self.refresh_mcp();
            let (text, calls) = self.call_model(terminal.as_ref()).await?;
            if !text.is_empty() {
                last_text = text;
            }
            if calls.is_empty() {
                // A command started with notify_on_exit wakes the turn
                // when it ends, instead of the model polling for it.
                if self.deliver_exit_notices(true).await? {
                    continue;
                }
                if terminal.is_some() {
                    if reminders < self.limits.output_reminders {
                        reminders += 1;
                        let m = Message::user(format!(
                            "[evoflux] This turn must end with a structured result: call `{FINAL_OUTPUT}` with arguments that match its schema."
                        ));
                        self.append(m, None).await?;
                        continue;
                    }
                    return Ok(TurnOutcome {
                        status: TurnStatus::OutputMissing,
                        text: last_text,
                        output: None,
                        question: None,
                    });
                }
                return Ok(TurnOutcome {
                    status: TurnStatus::Completed,
                    text: last_text,
                    output: None,
                    question: None,
                });
            }
            let mut questions = Vec::new();
            let mut output = None;
            for call in calls {
                if tool_calls_used >= self.limits.tool_calls_per_turn {
                    let r = ToolResult::error(format!(
                        "The limit of {} tool calls per turn is reached; finish with what you have.",
                        self.limits.tool_calls_per_turn
                    ));
                    self.record(&call, r).await?;
                    continue;
                }
                tool_calls_used += 1;
                self.events.emit(&Event::ToolStarted {
                    call_id: call.id.clone(),
                    tool: call.name.clone(),
                    arguments: call.arguments.clone(),
                });
                match self.handle_call(&call, terminal.as_ref()).await? {
                    CallOutcome::Result(mut result) => {
                        if let Some(tool) = self.tools.get(&call.name) {
                            self.pipeline.after_tool(
                                &self.ctx(),
                                &call,
                                &tool.definition,
                                &mut result,
                            );
                        }
                        self.record(&call, result).await?;
                    }
                    CallOutcome::Final(value) => {
                        self.record(&call, ToolResult::ok("Result accepted."))
                            .await?;
                        output = Some(value);
                    }
                    CallOutcome::Question(q) => questions.push(q),
                }
            }
            if let Some(output) = output {
                return Ok(TurnOutcome {
                    status: TurnStatus::Completed,
                    text: last_text,
                    output: Some(output),
                    question: None,
                });
            }
            if let Some(q) = questions.into_iter().next() {
                return Ok(self.waiting(q));
            }
        }
        Ok(TurnOutcome {
            status: TurnStatus::LimitReached,
            text: last_text,
            output: None,
            question: None,
        })
    }

    /// One model call: hooks, provider stream, persistence, usage.
    async fn call_model(
        &mut self,
        terminal: Option<&TerminalOutput>,
    ) -> Result<(String, Vec<ToolCall>), HarnessError> {
        self.sync_skill_tools();
        let mut tools: Vec<evoflux_model::ToolDefinition> = self
            .tools
            .iter()
            .filter(|t| self.offered(t))
            .filter(|t| terminal.is_none() || t.definition.name != FINAL_OUTPUT)
            .map(|t| t.model_definition())
            .collect();
        if let Some(t) = terminal {
            tools.push(t.tool_definition());
        }
        // A request the provider refuses as too long is assembled once more
        // with `context_exceeded` set, so the compaction owner compacts
        // before the one retry.
        let mut context_exceeded = false;
        let (mut stream, stats) = loop {
            let mut call = ModelCall::new(
                Request {
                    // A turn that must end with final_output ends only
                    // through a tool call, so no call of it may end in text.
                    tool_choice: match terminal {
                        Some(_) => ToolChoice::Required,
                        None => ToolChoice::Auto,
                    },
                    ..Request::new(self.model.clone(), self.messages.clone())
                        .with_tools(tools.clone())
                },
                self.provider.clone(),
            );
            call.result_metadata = self.result_metadata.clone();
            call.context_exceeded = context_exceeded;
            call.turn_input = self.turn_input.take();
            let ctx = self.ctx();
            self.pipeline.before_model(&ctx, &mut call).await?;
            let durable = std::mem::take(&mut call.durable);
            self.persist_durable(durable).await?;
            if let Some(c) = call.compacted.take() {
                self.events.emit(&Event::ContextCompacted {
                    reason: serde_json::to_value(c.reason).unwrap_or(Value::Null),
                    covered_messages: c.covered_messages,
                    dropped_skill_calls: c.dropped_skill_calls,
                });
            }
            // A hook's activation may have turned tools on for this call.
            self.sync_skill_tools();
            let system: Vec<&str> = call
                .system
                .iter()
                .map(|s| s.text.as_str())
                .filter(|t| !t.is_empty())
                .collect();
            let mut request = call.request;
            if !system.is_empty() {
                request
                    .messages
                    .insert(0, Message::system(system.join("\n\n")));
            }
            let mut stream = self.provider.stream(request);
            let first = stream.next().await;
            match first {
                Some(Err(evoflux_model::ProviderError::ContextExceeded { .. }))
                    if !context_exceeded =>
                {
                    context_exceeded = true;
                }
                first => break (futures_util::stream::iter(first).chain(stream), call.stats),
            }
        };
        let mut text = String::new();
        let mut calls = Vec::new();
        let mut usage = None;
        let mut stop = evoflux_model::StopReason::EndTurn;
        while let Some(event) = stream.next().await {
            match event? {
                StreamEvent::TextDelta { text: delta } => {
                    self.events.emit(&Event::MessageDelta {
                        text: delta.clone(),
                    });
                    text.push_str(&delta);
                }
                StreamEvent::ToolCallDelta { .. } => {}
                StreamEvent::ToolCall { call } => calls.push(call),
                StreamEvent::Usage { usage: u } => usage = Some(u),
                StreamEvent::Stop { reason } => stop = reason,
                StreamEvent::Done => break,
            }
        }
        let message = Message::Assistant {
            content: text.clone(),
            tool_calls: calls.clone(),
        };
        let completion = evoflux_model::Completion {
            message: message.clone(),
            usage,
            stop,
        };
        self.pipeline.after_model(&self.ctx(), &completion);
        self.append(message, None).await?;
        let u = usage.unwrap_or_default();
        self.store
            .add_usage(
                self.session.id,
                evoflux_store::Usage {
                    requests: 1,
                    input_tokens: u.input_tokens,
                    output_tokens: u.output_tokens,
                    cache_read_tokens: u.cached_input_tokens,
                    cache_write_tokens: 0,
                    projected_results: stats.projected_results,
                    projection_saved_chars: stats.projection_saved_chars,
                },
            )
            .await?;
        Ok((text, calls))
    }

    /// Handles one call by its prepared kind.
    async fn handle_call(
        &mut self,
        call: &ToolCall,
        terminal: Option<&TerminalOutput>,
    ) -> Result<CallOutcome, HarnessError> {
        if let Some(t) = terminal
            && call.name == FINAL_OUTPUT
        {
            return Ok(match t.extract(&call.arguments) {
                Ok(v) => CallOutcome::Final(v),
                Err(e) => CallOutcome::Result(ToolResult::error(e)),
            });
        }
        if self.tools.get(&call.name).is_none() {
            // A server may have become ready since the model call began.
            self.refresh_mcp();
            if self.tools.get(&call.name).is_none() && self.wait_for_starting_mcp().await {
                self.refresh_mcp();
            }
        }
        let Some(tool) = self.tools.get(&call.name).filter(|t| self.offered(t)) else {
            let available: Vec<&str> = self
                .tools
                .iter()
                .filter(|t| self.offered(t))
                .map(|t| t.definition.name.as_str())
                .collect();
            return Ok(CallOutcome::Result(ToolResult::error(format!(
                "There is no tool named `{}` in this session. Available tools: {}.",
                call.name,
                available.join(", ")
            ))));
        };
        if let Err(e) = tool.check_arguments(&call.arguments) {
            return Ok(CallOutcome::Result(ToolResult::error(e)));
        }
        match self
            .pipeline
            .before_tool(&self.ctx(), call, &tool.definition)
        {
            ToolGate::Proceed => {}
            ToolGate::HoldBack { reason } => {
                return Ok(CallOutcome::Result(ToolResult::error(reason)));
            }
            ToolGate::Respond(result) => return Ok(CallOutcome::Result(result)),
        }
        // The user's configured policy for this tool wins over its own.
        let approval = self
            .approvals
            .get(&tool.definition.name)
            .copied()
            .unwrap_or(tool.approval);
        match approval {
            Approval::Never => {}
            Approval::Always => {
                self.events.emit(&Event::ApprovalRequested {
                    call_id: call.id.clone(),
                    tool: call.name.clone(),
                });
                let request = ApprovalRequest {
                    session_id: self.session.id.to_string(),
                    call_id: call.id.clone(),
                    tool: call.name.clone(),
                    arguments: call.arguments.clone(),
                };
                match self.approver.approve(&request).await {
                    ApprovalDecision::Approved => {}
                    ApprovalDecision::Denied { reason } => {
                        return Ok(CallOutcome::Result(ToolResult::error(reason)));
                    }
                }
            }
        }
        let kind = tool.kind.clone();
        match kind {
            PreparedKind::Ordinary(executor) => {
                Ok(CallOutcome::Result(self.execute(executor, call).await?))
            }
            PreparedKind::RequestInput(InputRequest::Question) => {
                // The call's arguments and the pending record share the
                // `question`/`options` keys, so one reader serves both.
                let question = question_of(&call.id, &call.arguments);
                let request = json!({
                    "tool": call.name,
                    "question": question.question,
                    "options": question.options,
                    "output_schema": terminal.map(|t| t.schema().clone()),
                });
                self.store
                    .create_pending_input(self.session.id, &call.id, &request)
                    .await?;
                Ok(CallOutcome::Question(question))
            }
            PreparedKind::Dispatch(action) => {
                let what = match action {
                    DispatchAction::SelfAgent => "delegating to another agent",
                    DispatchAction::TaskUpdate | DispatchAction::TaskCancel => {
                        "controlling delegated tasks"
                    }
                };
                Ok(CallOutcome::Result(ToolResult::error(format!(
                    "`{}` is not available in this session: {what} is not supported yet. Do the work yourself.",
                    call.name
                ))))
            }
            PreparedKind::ProviderTool(ProviderTool::WebSearch) => {
                // Provider tools are materialized only for providers that
                // run them, and those answer them inside the stream.
                Ok(CallOutcome::Result(ToolResult::error(format!(
                    "`{}` is executed by the model provider and cannot be called here.",
                    call.name
                ))))
            }
        }
    }

    async fn execute(
        &mut self,
        executor: Executor,
        call: &ToolCall,
    ) -> Result<ToolResult, HarnessError> {
        let builtin = match executor {
            Executor::Builtin(b) => b,
            Executor::Command(command) => {
                return Ok(self
                    .run_process_tool(call, &ToolExecutor::Command(command))
                    .await);
            }
            Executor::Mcp { qualified_name } => {
                return Ok(
                    match self
                        .mcp_tools
                        .call_tool(
                            &qualified_name,
                            call.arguments.clone(),
                            self.mcp_call_timeout,
                        )
                        .await
                    {
                        Ok(r) => ToolResult {
                            content: r.to_text(),
                            is_error: r.is_error,
                            metadata: None,
                        },
                        Err(e) => ToolResult::error(format!("{} [{}]", e, e.code())),
                    },
                );
            }
        };
        match builtin {
            BuiltinExecutor::Read
            | BuiltinExecutor::Write
            | BuiltinExecutor::Edit
            | BuiltinExecutor::Ls
            | BuiltinExecutor::Glob
            | BuiltinExecutor::Grep => {
                let ws = self.workspace.clone();
                let args = call.arguments.clone();
                let out = tokio::task::spawn_blocking(move || {
                    evoflux_tools::execute(&ws, builtin, &args)
                })
                .await
                .map_err(|e| HarnessError::Join(e.to_string()))?;
                Ok(match out {
                    Ok(o) => ToolResult {
                        content: o.text,
                        is_error: o.is_error,
                        metadata: None,
                    },
                    Err(e) => ToolResult::error(e.to_string()),
                })
            }
            BuiltinExecutor::Todo => Ok(self.todo.apply(&call.arguments)),
            BuiltinExecutor::WebFetch => Ok(match &self.web {
                Some(web) => command_result(web.run(&call.arguments).await),
                None => ToolResult::error("network tools are turned off for this session"),
            }),
            BuiltinExecutor::Shell | BuiltinExecutor::Process => Ok(self
                .run_process_tool(call, &ToolExecutor::Builtin { executor: builtin })
                .await),
            BuiltinExecutor::Skill => {
                let Some(rt) = self.skills.clone() else {
                    return Ok(ToolResult::error(format!(
                        "`{}` is not available in this session.",
                        call.name
                    )));
                };
                // The batch is the assistant message whose calls run now.
                let batch: &[ToolCall] = self
                    .messages
                    .iter()
                    .rev()
                    .find_map(|m| match m {
                        Message::Assistant { tool_calls, .. } => Some(tool_calls.as_slice()),
                        Message::System { .. } | Message::User { .. } | Message::Tool { .. } => {
                            None
                        }
                    })
                    .unwrap_or(&[]);
                let tools = &self.tools;
                let is_skill_call = |c: &ToolCall| {
                    tools.get(&c.name).is_some_and(|t| {
                        t.kind == PreparedKind::Ordinary(Executor::Builtin(BuiltinExecutor::Skill))
                    })
                };
                let result = rt.execute_tool(
                    call,
                    crate::skills::tool::Batch {
                        calls: batch,
                        is_skill_call: &is_skill_call,
                    },
                );
                self.sync_skill_tools();
                Ok(result)
            }
            BuiltinExecutor::CodeContext => Ok(ToolResult::error(format!(
                "`{}` is not available in this session.",
                call.name
            ))),
        }
    }

    /// Runs `shell`, `process` or a command tool on the process runtime and
    /// notes commands whose end the turn should wait for.
    async fn run_process_tool(&mut self, call: &ToolCall, executor: &ToolExecutor) -> ToolResult {
        let Some(rt) = &self.processes else {
            return ToolResult::error(format!(
                "`{}` runs a command and no process runtime is attached to this session.",
                call.name
            ));
        };
        let out = match rt
            .execute(self.session.id, &self.workspace, executor, &call.arguments)
            .await
        {
            Ok(o) => o,
            Err(e) => return ToolResult::error(e.to_string()),
        };
        if let Some(meta) = &out.meta {
            let running = meta.status == CommandStatus::Running;
            let wants_notice = call.arguments.get("notify_on_exit") == Some(&Value::Bool(true));
            match (running, executor) {
                (
                    true,
                    ToolExecutor::Builtin {
                        executor: BuiltinExecutor::Shell,
                    },
                ) if wants_notice => {
                    self.awaiting_exit.insert(meta.process_id.clone());
                }
                (false, _) => {
                    self.awaiting_exit.remove(&meta.process_id);
                }
                (true, _) => {}
            }
        }
        command_result(out)
    }

    /// Appends the exit notices that arrived, as messages the model reads
    /// on its next call. With `wait`, blocks for the next notice when the
    /// turn has nothing else to do but wait for a command it started.
    async fn deliver_exit_notices(&mut self, wait: bool) -> Result<bool, HarnessError> {
        let Some(exits) = self.exits.as_mut() else {
            return Ok(false);
        };
        let mut notices = Vec::new();
        if wait
            && !self.awaiting_exit.is_empty()
            && let Some(n) = exits.recv().await
        {
            notices.push(n);
        }
        while let Ok(n) = exits.try_recv() {
            notices.push(n);
        }
        let mut delivered = false;
        for notice in notices {
            if !self.awaiting_exit.remove(&notice.process_id) {
                continue;
            }
            let result = command_result(notice.output);
            let message = Message::user(format!(
                "[evoflux] Background command {} (`{}`) ended:\n{}",
                notice.process_id, notice.command, result.content
            ));
            self.append(message, result.metadata.as_ref()).await?;
            self.events.emit(&Event::CommandEnded {
                process_id: notice.process_id,
                command: notice.command,
                is_error: result.is_error,
                content: result.content,
                metadata: result.metadata,
            });
            delivered = true;
        }
        Ok(delivered)
    }

    /// Runs a command the user typed (`!command` in chat) through the same
    /// runtime, formatter and metadata as the model's `shell`, and puts the
    /// observation in the conversation for the model to see.
    pub async fn user_command(&mut self, command: &str) -> Result<ToolResult, HarnessError> {
        let Some(rt) = &self.processes else {
            return Ok(ToolResult::error(
                "no process runtime is attached to this session",
            ));
        };
        let result = match rt
            .run_user_command(self.session.id, &self.workspace, command)
            .await
        {
            Ok(o) => command_result(o),
            Err(e) => ToolResult::error(e.to_string()),
        };
        let message = Message::user(format!(
            "[evoflux] The user ran `{command}`:\n{}",
            result.content
        ));
        self.append(message, result.metadata.as_ref()).await?;
        Ok(result)
    }

    /// Makes the tools skill activations turned on part of the session and
    /// grants the MCP servers of plugin skills that were loaded.
    fn sync_skill_tools(&mut self) {
        let Some(rt) = self.skills.clone() else {
            return;
        };
        crate::skills::apply_tool_activations(&rt, &mut self.tools, &mut self.reserve);
        for installation in rt.take_plugin_grants() {
            self.grant_plugin_mcp(&installation);
        }
    }

    /// Persists the messages hooks added for good (synthetic skill
    /// activation pairs) and emits their tool events, so a live view shows
    /// them like any call.
    async fn persist_durable(
        &mut self,
        durable: Vec<crate::hooks::DurableMessage>,
    ) -> Result<(), HarnessError> {
        for d in durable {
            match &d.message {
                Message::Assistant { tool_calls, .. } => {
                    for c in tool_calls {
                        self.events.emit(&Event::ToolStarted {
                            call_id: c.id.clone(),
                            tool: c.name.clone(),
                            arguments: c.arguments.clone(),
                        });
                    }
                }
                Message::Tool {
                    tool_call_id,
                    content,
                    is_error,
                } => {
                    let tool = self
                        .messages
                        .iter()
                        .rev()
                        .find_map(|m| match m {
                            Message::Assistant { tool_calls, .. } => tool_calls
                                .iter()
                                .find(|c| &c.id == tool_call_id)
                                .map(|c| c.name.clone()),
                            Message::System { .. }
                            | Message::User { .. }
                            | Message::Tool { .. } => None,
                        })
                        .unwrap_or_default();
                    self.events.emit(&Event::ToolEnded {
                        call_id: tool_call_id.clone(),
                        tool,
                        is_error: *is_error,
                        content: content.clone(),
                        metadata: d.metadata.clone(),
                    });
                }
                Message::System { .. } | Message::User { .. } => {}
            }
            self.append(d.message, d.metadata.as_ref()).await?;
        }
        Ok(())
    }

    /// Appends one message to the durable transcript (with its metadata
    /// beside it) and to the conversation; a tool result's metadata is
    /// also kept for hooks that read it (projection, receipts).
    async fn append(
        &mut self,
        message: Message,
        metadata: Option<&Value>,
    ) -> Result<(), HarnessError> {
        match metadata {
            Some(meta) => {
                self.store
                    .append_with_artifact(self.session.id, &message, meta)
                    .await?;
                if let Message::Tool { tool_call_id, .. } = &message {
                    Arc::make_mut(&mut self.result_metadata)
                        .insert(tool_call_id.clone(), meta.clone());
                }
            }
            None => {
                self.store.append_message(self.session.id, &message).await?;
            }
        }
        self.messages.push(message);
        Ok(())
    }

    /// Persists a tool result (with its metadata beside it) and emits the
    /// matching event with exactly that metadata.
    async fn record(&mut self, call: &ToolCall, result: ToolResult) -> Result<(), HarnessError> {
        let message = Message::Tool {
            tool_call_id: call.id.clone(),
            content: result.content.clone(),
            is_error: result.is_error,
        };
        self.append(message, result.metadata.as_ref()).await?;
        self.events.emit(&Event::ToolEnded {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            is_error: result.is_error,
            content: result.content,
            metadata: result.metadata,
        });
        Ok(())
    }
}

enum CallOutcome {
    Result(ToolResult),
    Final(Value),
    Question(PendingQuestion),
}

/// An executor's output as a tool result, a command's metadata serialized once
/// so the event and the transcript carry the same value.
fn command_result(out: evoflux_tools::ToolOutput) -> ToolResult {
    ToolResult {
        metadata: out.meta.and_then(|m| serde_json::to_value(m).ok()),
        content: out.text,
        is_error: out.is_error,
    }
}

/// The question in an `ask_user` call's arguments or in its pending record.
fn question_of(call_id: &str, request: &Value) -> PendingQuestion {
    PendingQuestion {
        call_id: call_id.to_owned(),
        question: request
            .get("question")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        options: request
            .get("options")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default(),
    }
}

/// Rebuilds the todo list from the successful `todo` calls of the
/// transcript (identified by the prepared executor, not the name).
fn replay_todo(messages: &[Message], tools: &PreparedTools) -> TodoList {
    let mut list = TodoList::default();
    let ok_results: std::collections::HashSet<&str> = messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool {
                tool_call_id,
                is_error: false,
                ..
            } => Some(tool_call_id.as_str()),
            Message::Tool { .. }
            | Message::System { .. }
            | Message::User { .. }
            | Message::Assistant { .. } => None,
        })
        .collect();
    for m in messages {
        let Message::Assistant { tool_calls, .. } = m else {
            continue;
        };
        for c in tool_calls {
            let is_todo = tools.get(&c.name).is_some_and(|t| {
                t.kind == PreparedKind::Ordinary(Executor::Builtin(BuiltinExecutor::Todo))
            });
            if is_todo && ok_results.contains(c.id.as_str()) {
                list.apply(&c.arguments);
            }
        }
    }
    list
}
