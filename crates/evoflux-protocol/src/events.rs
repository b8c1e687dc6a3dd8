//! The typed event stream of a session: one closed enum, serialized once.
//!
//! The engine emits these; the server streams them as JSON, `--json`
//! prints them as JSON lines, ACP maps them to `session/update`s, and the
//! store keeps them for replay. A tool's metadata appears here exactly as
//! it is stored beside the tool message in the transcript, so a live view
//! and a reloaded one show the same thing. Clients that hold events as
//! JSON tell them apart with [`EventKind`], never by matching strings.

use std::path::PathBuf;

use evoflux_core::AppMode;
use serde::Serialize;
use serde_json::Value;

use crate::message::{Media, MediaRef};
use crate::metadata::ResultMetadata;

/// The result of one tool call as the model and the transcript see it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolResult {
    pub content: String,
    pub is_error: bool,
    /// Artifact and process metadata (e.g. a journalled command's
    /// `{process_id, status, artifact, …}`); stored with the tool message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<ResultMetadata>,
    /// Images or audio the tool returned (an MCP tool's image content);
    /// they go on the tool message beside `content`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub media: Vec<Media>,
}

impl ToolResult {
    pub fn ok(content: impl Into<String>) -> ToolResult {
        ToolResult {
            content: content.into(),
            is_error: false,
            metadata: None,
            media: Vec::new(),
        }
    }

    pub fn error(content: impl Into<String>) -> ToolResult {
        ToolResult {
            content: content.into(),
            is_error: true,
            metadata: None,
            media: Vec::new(),
        }
    }
}

/// How a turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnStatus {
    /// The model finished (with `final_output` when the turn had a schema).
    Completed,
    /// The agent asked the user something; the session waits for the answer.
    WaitingForInput,
    /// A limit on model calls stopped the turn.
    LimitReached,
    /// `[limits] max_cost_usd`: the session, with the sessions it
    /// dispatched, has cost its limit, so no further model call starts.
    CostLimitReached,
    /// The turn needed a structured result and never produced a valid one.
    OutputMissing,
}

impl TurnStatus {
    pub const fn as_str(self) -> &'static str {
        match self {
            TurnStatus::Completed => "completed",
            TurnStatus::WaitingForInput => "waiting_for_input",
            TurnStatus::LimitReached => "limit_reached",
            TurnStatus::CostLimitReached => "cost_limit_reached",
            TurnStatus::OutputMissing => "output_missing",
        }
    }
}

/// One event of a session.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    SessionStarted {
        session_id: String,
        mode: AppMode,
        workspace: Vec<PathBuf>,
        lead: String,
        model: String,
        resumed: bool,
        /// Tools offered to the model, in order.
        tools: Vec<String>,
        /// Tools the agent has that this run cannot offer, with the reason.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        unavailable_tools: Vec<UnavailableTool>,
    },
    TurnStarted {
        session_id: String,
        /// What the turn answers: the user's message, or the answer to the
        /// agent's open question; absent when a turn continues. An event
        /// stream read from its start is the whole conversation.
        #[serde(skip_serializing_if = "Option::is_none")]
        input: Option<String>,
        /// The transcript's last entry when the turn started: what the
        /// turn stores comes after it, so a client can show the stored
        /// transcript up to here and this turn from its events. Absent in
        /// events logged before it was recorded.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        after_entry: Option<u64>,
    },
    MessageDelta {
        text: String,
    },
    /// The provider searched the web for the answer being streamed (its
    /// own `web_search` tool, not one the harness runs): what it searched
    /// and what it found. The search is kept on the answer in the
    /// transcript.
    WebSearch {
        search: crate::message::WebSearch,
    },
    /// The answer being streamed cites this page; kept on the answer in
    /// the transcript.
    Citation {
        citation: crate::message::Citation,
    },
    /// The user cancelled the running turn: the commands it started were
    /// stopped, every call it left open ended `cancelled` (a `tool_ended`
    /// each, before this) and an approval it waited on was decided
    /// `denied` by the cancellation. Nothing more of the turn follows.
    TurnCancelled {
        session_id: String,
    },
    ToolStarted {
        call_id: String,
        tool: String,
        arguments: Value,
    },
    ApprovalRequested {
        call_id: String,
        tool: String,
        /// The model asks to run the command outside the sandbox, for this
        /// reason.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        outside_sandbox: Option<String>,
        /// The call changes this control of the agent's (a path).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        control: Option<String>,
        /// The absolute folder the call's command would run in; only for
        /// tools that run a command.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        workdir: Option<String>,
        /// An MCP server the call runs asks the session's model for an
        /// answer (`sampling/createMessage`); `call_id` names this request
        /// (`<tool call>:sampling-<n>`), `tool` the tool call's tool.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sampling: Option<SamplingAsk>,
    },
    /// An approval asked for (`approval_requested`) was decided. Sent to
    /// every client of the session before the call runs (or is refused),
    /// so a second client, a reload or a reconnecting stream never offers
    /// a decision that was made.
    ApprovalDecided {
        call_id: String,
        decision: DecisionKind,
        /// Why it was denied, as the model reads it.
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        by: DecidedBy,
    },
    ToolEnded {
        call_id: String,
        tool: String,
        /// How the call ended; `cancelled` when the user cancelled the
        /// turn while it ran (or before it started).
        status: ToolStatus,
        is_error: bool,
        /// The result's text, each media item named on a line of its own
        /// ([`crate::message::text_with_media_notes`]).
        content: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        metadata: Option<ResultMetadata>,
        /// The images or audio the result carries, by reference: a view
        /// that can show them fetches the stored bytes.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        media: Vec<MediaRef>,
    },
    /// A background command started with `notify_on_exit` ended; its
    /// final observation joins the conversation.
    CommandEnded {
        process_id: String,
        command: String,
        is_error: bool,
        content: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        metadata: Option<ResultMetadata>,
    },
    /// A preview's dev server (the `preview` tool) listens: the user can
    /// open it. `url` is its loopback address on the machine evoflux runs
    /// on; `evoflux serve` also proxies it under the session
    /// (`GET /api/sessions/{id}/previews` gives the proxied path).
    PreviewStarted {
        preview_id: String,
        /// The server's command line.
        command: String,
        url: String,
        /// How long after its start the server was found listening.
        #[serde(skip_serializing_if = "Option::is_none")]
        startup_ms: Option<u64>,
    },
    /// A preview was stopped (`preview stop`); its URL no longer answers.
    PreviewStopped {
        preview_id: String,
    },
    /// A resumed session moved to another model at the user's request;
    /// the switch is persisted, so later resumes keep `to`.
    ModelSwitched {
        from: String,
        to: String,
    },
    /// An MCP server this session may use changed state (starting, ready,
    /// failed, …); `error` says why it is not ready.
    McpServer {
        server: String,
        owner: String,
        state: McpServerState,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// The model's view of the conversation was compacted: a summary now
    /// stands for the first `covered_messages` messages (the transcript
    /// itself is unchanged).
    ContextCompacted {
        reason: Value,
        covered_messages: usize,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        dropped_skill_calls: Vec<String>,
    },
    InputRequested {
        call_id: String,
        question: String,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        options: Vec<String>,
    },
    TurnCompleted {
        status: TurnStatus,
        text: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        output: Option<Value>,
        /// What this turn used and cost, the sessions it dispatched
        /// included.
        usage: crate::usage::Usage,
        /// The session's running total, its children included.
        session_usage: crate::usage::Usage,
    },
    /// One model call's tokens, split as providers price them, and its
    /// cost (`unpriced_requests` is 1 when the model has no known price).
    ModelCallCompleted {
        model: String,
        purpose: CallPurpose,
        usage: crate::usage::Usage,
    },
    /// Something failed. When a turn fails, this is followed by its end,
    /// `turn_failed`, with the same code.
    Error {
        code: String,
        message: String,
    },
    /// The turn ended on an error (the `error` event just before says
    /// what): a model call that failed, a store that could not be written,
    /// a session that could not be brought up to date. Nothing more of the
    /// turn follows, and the session takes the next message.
    TurnFailed {
        code: String,
        /// What the turn used and cost before it failed.
        usage: crate::usage::Usage,
        session_usage: crate::usage::Usage,
    },
    /// Changed sources (agents, skills, plugins, config) were applied
    /// between turns: the turn that follows runs on them.
    SourcesApplied {
        session_id: String,
    },
    /// Changed sources could not be applied: the session keeps the ones it
    /// ran on, and `code`/`message` say what is wrong.
    GraphInvalid {
        code: String,
        message: String,
        /// What does not compile, when the sources were compiled.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        diagnostics: Vec<evoflux_core::Diagnostic>,
    },
    /// A dispatch opened a child session running `agent`.
    DispatchStarted {
        call_id: String,
        agent: String,
        child_session_id: String,
        /// The session that dispatched it: with `child_session_id`, an
        /// edge of the dispatch tree.
        parent_session_id: String,
        /// How far below the session the user started the child runs (1
        /// for the lead's own dispatches, up to `[teams] max_depth`).
        depth: u32,
    },
    /// The child session of a dispatch finished its turn.
    DispatchEnded {
        call_id: String,
        agent: String,
        child_session_id: String,
        parent_session_id: String,
        depth: u32,
        status: TurnStatus,
        is_error: bool,
        /// For a worker: how its result met its contract.
        #[serde(skip_serializing_if = "Option::is_none")]
        contract: Option<ContractOutcome>,
        /// Repair rounds the worker needed.
        repairs: u32,
    },
    /// The session's model named it (one short side call after its first
    /// turn): the title the session list shows from now on. Emitted once
    /// the title is stored, so a front end showing the list updates its
    /// entry without asking again.
    SessionTitled {
        title: String,
    },
    /// A background task was stopped by `task_cancel`.
    TaskCancelled {
        call_id: String,
        agent: String,
        child_session_id: String,
    },
    /// A task child's report of what it is doing (`task_update`).
    TaskUpdate {
        message: String,
    },
    /// `connection_search` turned on MCP tools that were held back: they
    /// are in the model's tool list from the next model call on.
    ToolsActivated {
        tools: Vec<String>,
    },
    /// An MCP tool call's progress (`notifications/progress`), coalesced
    /// to a few a second: `progress` of `total` when the server knows it.
    ToolProgress {
        call_id: String,
        progress: f64,
        #[serde(skip_serializing_if = "Option::is_none")]
        total: Option<f64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// A log message of the MCP server a tool call runs on
    /// (`notifications/message`), rate-limited and cut to 2,000
    /// characters.
    ToolLog {
        call_id: String,
        server: String,
        level: ServerLogLevel,
        #[serde(skip_serializing_if = "Option::is_none")]
        logger: Option<String>,
        message: String,
    },
    /// An MCP server the tool call `call_id` runs asks the user to fill in
    /// a form (`elicitation/create`): answer it by `id`
    /// (`POST /api/sessions/{id}/elicitations/{elicitation_id}`, or the
    /// front end's own prompt). `schema` is the server's restricted JSON
    /// Schema: an object of string, number, integer, boolean and enum
    /// properties.
    ElicitationRequested {
        id: String,
        call_id: String,
        server: String,
        message: String,
        schema: Value,
    },
    /// The elicitation `id` was answered (or declined by a policy, or
    /// cancelled with its turn); sent to every client before the server
    /// reads it.
    ElicitationAnswered {
        id: String,
        action: ElicitationAction,
        by: DecidedBy,
    },
    /// An event of the child session the dispatch `call_id` opened.
    Child {
        call_id: String,
        event: Box<Event>,
    },
    /// Something the user should know that does not stop the session (an
    /// instruction file that cannot be read, a large result kept whole
    /// because it could not be offloaded, a compaction summarized by an
    /// outline); `code` is a stable `area/kebab-name`.
    Warning {
        code: String,
        message: String,
    },
}

/// Where an event stands in its turn, for whoever stores a session's
/// stream for other readers (a server that several replicas share).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Boundary {
    /// Within the turn; it names nothing the turn wrote.
    Within,
    /// A result: it may name a file the turn wrote among the session's
    /// artifacts (a command's journal, an offloaded result), which must be
    /// where every reader finds it before the event is.
    Result,
    /// The turn's end (completed, cancelled, failed): nothing more of the
    /// turn follows. Stored only once the turn has let go of the session,
    /// so a client that reads it may start the next turn at once. It may
    /// name artifacts too.
    End,
}

impl Event {
    pub const fn boundary(&self) -> Boundary {
        match self {
            Event::TurnCompleted { .. } | Event::TurnCancelled { .. } | Event::TurnFailed { .. } => {
                Boundary::End
            }
            Event::ToolEnded { .. } | Event::CommandEnded { .. } => Boundary::Result,
            Event::SessionStarted { .. }
            | Event::TurnStarted { .. }
            | Event::MessageDelta { .. }
            | Event::WebSearch { .. }
            | Event::Citation { .. }
            | Event::ToolStarted { .. }
            | Event::ApprovalRequested { .. }
            | Event::ApprovalDecided { .. }
            | Event::Error { .. }
            | Event::SourcesApplied { .. }
            | Event::GraphInvalid { .. }
            | Event::ModelSwitched { .. }
            | Event::PreviewStarted { .. }
            | Event::PreviewStopped { .. }
            | Event::McpServer { .. }
            | Event::ContextCompacted { .. }
            | Event::InputRequested { .. }
            | Event::ModelCallCompleted { .. }
            | Event::DispatchStarted { .. }
            | Event::DispatchEnded { .. }
            | Event::TaskCancelled { .. }
            | Event::TaskUpdate { .. }
            | Event::ToolsActivated { .. }
            | Event::SessionTitled { .. }
            | Event::ToolProgress { .. }
            | Event::ToolLog { .. }
            | Event::ElicitationRequested { .. }
            | Event::ElicitationAnswered { .. }
            // A child's results are in the child session's folder.
            | Event::Child { .. }
            | Event::Warning { .. } => Boundary::Within,
        }
    }
}

impl Event {
    /// The event's kind: its `type` on the wire.
    pub const fn kind(&self) -> EventKind {
        match self {
            Event::SessionStarted { .. } => EventKind::SessionStarted,
            Event::TurnStarted { .. } => EventKind::TurnStarted,
            Event::MessageDelta { .. } => EventKind::MessageDelta,
            Event::WebSearch { .. } => EventKind::WebSearch,
            Event::Citation { .. } => EventKind::Citation,
            Event::TurnCancelled { .. } => EventKind::TurnCancelled,
            Event::ToolStarted { .. } => EventKind::ToolStarted,
            Event::ApprovalRequested { .. } => EventKind::ApprovalRequested,
            Event::ApprovalDecided { .. } => EventKind::ApprovalDecided,
            Event::ToolEnded { .. } => EventKind::ToolEnded,
            Event::CommandEnded { .. } => EventKind::CommandEnded,
            Event::ModelSwitched { .. } => EventKind::ModelSwitched,
            Event::PreviewStarted { .. } => EventKind::PreviewStarted,
            Event::PreviewStopped { .. } => EventKind::PreviewStopped,
            Event::McpServer { .. } => EventKind::McpServer,
            Event::ContextCompacted { .. } => EventKind::ContextCompacted,
            Event::InputRequested { .. } => EventKind::InputRequested,
            Event::TurnCompleted { .. } => EventKind::TurnCompleted,
            Event::ModelCallCompleted { .. } => EventKind::ModelCallCompleted,
            Event::Error { .. } => EventKind::Error,
            Event::TurnFailed { .. } => EventKind::TurnFailed,
            Event::SourcesApplied { .. } => EventKind::SourcesApplied,
            Event::GraphInvalid { .. } => EventKind::GraphInvalid,
            Event::DispatchStarted { .. } => EventKind::DispatchStarted,
            Event::DispatchEnded { .. } => EventKind::DispatchEnded,
            Event::TaskCancelled { .. } => EventKind::TaskCancelled,
            Event::SessionTitled { .. } => EventKind::SessionTitled,
            Event::TaskUpdate { .. } => EventKind::TaskUpdate,
            Event::ToolsActivated { .. } => EventKind::ToolsActivated,
            Event::ToolProgress { .. } => EventKind::ToolProgress,
            Event::ToolLog { .. } => EventKind::ToolLog,
            Event::ElicitationRequested { .. } => EventKind::ElicitationRequested,
            Event::ElicitationAnswered { .. } => EventKind::ElicitationAnswered,
            Event::Child { .. } => EventKind::Child,
            Event::Warning { .. } => EventKind::Warning,
        }
    }
}

/// The kinds of [`Event`], for whoever holds events as JSON (a store, a
/// client reading the stream) and must tell them apart: parse the stored
/// `type` with [`EventKind::parse`] and match on the kind, never on the
/// string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventKind {
    SessionStarted,
    TurnStarted,
    MessageDelta,
    WebSearch,
    Citation,
    TurnCancelled,
    ToolStarted,
    ApprovalRequested,
    ApprovalDecided,
    ToolEnded,
    CommandEnded,
    ModelSwitched,
    PreviewStarted,
    PreviewStopped,
    McpServer,
    ContextCompacted,
    InputRequested,
    TurnCompleted,
    ModelCallCompleted,
    Error,
    TurnFailed,
    SourcesApplied,
    GraphInvalid,
    DispatchStarted,
    DispatchEnded,
    TaskCancelled,
    SessionTitled,
    TaskUpdate,
    ToolsActivated,
    ToolProgress,
    ToolLog,
    ElicitationRequested,
    ElicitationAnswered,
    Child,
    Warning,
}

impl EventKind {
    pub const ALL: [EventKind; 35] = [
        EventKind::SessionStarted,
        EventKind::TurnStarted,
        EventKind::MessageDelta,
        EventKind::WebSearch,
        EventKind::Citation,
        EventKind::TurnCancelled,
        EventKind::ToolStarted,
        EventKind::ApprovalRequested,
        EventKind::ApprovalDecided,
        EventKind::ToolEnded,
        EventKind::CommandEnded,
        EventKind::ModelSwitched,
        EventKind::PreviewStarted,
        EventKind::PreviewStopped,
        EventKind::McpServer,
        EventKind::ContextCompacted,
        EventKind::InputRequested,
        EventKind::TurnCompleted,
        EventKind::ModelCallCompleted,
        EventKind::Error,
        EventKind::TurnFailed,
        EventKind::SourcesApplied,
        EventKind::GraphInvalid,
        EventKind::DispatchStarted,
        EventKind::DispatchEnded,
        EventKind::TaskCancelled,
        EventKind::SessionTitled,
        EventKind::TaskUpdate,
        EventKind::ToolsActivated,
        EventKind::ToolProgress,
        EventKind::ToolLog,
        EventKind::ElicitationRequested,
        EventKind::ElicitationAnswered,
        EventKind::Child,
        EventKind::Warning,
    ];

    /// The `type` field of the event's JSON.
    pub const fn as_str(self) -> &'static str {
        match self {
            EventKind::SessionStarted => "session_started",
            EventKind::TurnStarted => "turn_started",
            EventKind::MessageDelta => "message_delta",
            EventKind::WebSearch => "web_search",
            EventKind::Citation => "citation",
            EventKind::TurnCancelled => "turn_cancelled",
            EventKind::ToolStarted => "tool_started",
            EventKind::ApprovalRequested => "approval_requested",
            EventKind::ApprovalDecided => "approval_decided",
            EventKind::ToolEnded => "tool_ended",
            EventKind::CommandEnded => "command_ended",
            EventKind::ModelSwitched => "model_switched",
            EventKind::PreviewStarted => "preview_started",
            EventKind::PreviewStopped => "preview_stopped",
            EventKind::McpServer => "mcp_server",
            EventKind::ContextCompacted => "context_compacted",
            EventKind::InputRequested => "input_requested",
            EventKind::TurnCompleted => "turn_completed",
            EventKind::ModelCallCompleted => "model_call_completed",
            EventKind::Error => "error",
            EventKind::TurnFailed => "turn_failed",
            EventKind::SourcesApplied => "sources_applied",
            EventKind::GraphInvalid => "graph_invalid",
            EventKind::DispatchStarted => "dispatch_started",
            EventKind::DispatchEnded => "dispatch_ended",
            EventKind::TaskCancelled => "task_cancelled",
            EventKind::SessionTitled => "session_titled",
            EventKind::TaskUpdate => "task_update",
            EventKind::ToolsActivated => "tools_activated",
            EventKind::ToolProgress => "tool_progress",
            EventKind::ToolLog => "tool_log",
            EventKind::ElicitationRequested => "elicitation_requested",
            EventKind::ElicitationAnswered => "elicitation_answered",
            EventKind::Child => "child",
            EventKind::Warning => "warning",
        }
    }

    /// The kind a stored or streamed `type` names; `None` for a notice
    /// that is not a session event (a server's `graph_reloaded`).
    pub fn parse(kind: &str) -> Option<EventKind> {
        EventKind::ALL.into_iter().find(|k| k.as_str() == kind)
    }

    /// Whether an event of this kind ends a turn (see [`Boundary::End`]).
    pub const fn ends_turn(self) -> bool {
        matches!(
            self,
            EventKind::TurnCompleted | EventKind::TurnCancelled | EventKind::TurnFailed
        )
    }
}

/// How one tool call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    Completed,
    Failed,
    Cancelled,
}

impl ToolStatus {
    pub const fn of(is_error: bool) -> ToolStatus {
        if is_error {
            ToolStatus::Failed
        } else {
            ToolStatus::Completed
        }
    }
}

/// Where an MCP server a session may use stands. Closed: a client shows
/// each state its own way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum McpServerState {
    /// Spawning or connecting, handshaking, listing tools.
    Starting,
    /// Initialized with its tools listed: its tools are offered.
    Ready,
    /// Could not start, or its connection ended; `error` says why.
    Failed,
    /// Not running (never started, or stopped).
    Stopped,
    /// Listed but never started (legacy `sse`).
    Skipped,
    /// Not started until its plugin's required credentials are set.
    NeedsCredentials,
    /// An HTTP server that wants an OAuth login first (`evoflux mcp login`
    /// or the web UI's Log in).
    NeedsLogin,
    /// The agent names a server no source defines.
    Missing,
}

impl McpServerState {
    /// The state as the wire spells it.
    pub const fn as_str(self) -> &'static str {
        match self {
            McpServerState::Starting => "starting",
            McpServerState::Ready => "ready",
            McpServerState::Failed => "failed",
            McpServerState::Stopped => "stopped",
            McpServerState::Skipped => "skipped",
            McpServerState::NeedsCredentials => "needs-credentials",
            McpServerState::NeedsLogin => "needs-login",
            McpServerState::Missing => "missing",
        }
    }
}

impl std::fmt::Display for McpServerState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a worker's result met its recipe's result contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ContractOutcome {
    Pass,
    /// Still failing after the last repair round: `result_contract_exhausted`.
    Exhausted,
}

/// A tool left out of the model's tool list, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UnavailableTool {
    pub tool: String,
    pub reason: String,
    /// A stable `area/kebab-name` code, for reasons a client may act on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<&'static str>,
}

/// An approval decision without its reason, as `approval_decided`
/// carries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecisionKind {
    Approved,
    ApprovedForSession,
    ApprovedForWorkspace,
    Denied,
}

/// Who decided an approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecidedBy {
    /// A person, at any client of the session (a terminal, a browser, an
    /// editor, a channel).
    User,
    /// Nobody could be asked (a non-interactive run): the policy denied.
    Policy,
    /// The turn was cancelled while the approval waited.
    Cancellation,
}

/// Why a model call was made: the turn's own call, or a pre-model stage's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallPurpose {
    /// A call of the agent's turn.
    #[default]
    Turn,
    /// The implicit skill resolver's decision before a turn's first call.
    SkillResolution,
    /// The session's title, asked once after its first turn.
    Title,
    /// An MCP server's `sampling/createMessage`, answered with the user's
    /// approval during one of the session's tool calls.
    Sampling,
}

/// How a front end words a tool call's progress (`tool_progress`):
/// `2/5 (40%): indexing`, `7: indexing` when the total is unknown.
pub fn progress_label(progress: f64, total: Option<f64>, message: Option<&str>) -> String {
    let amount = match total {
        Some(t) if t > 0.0 => format!(
            "{progress}/{t} ({:.0}%)",
            (progress / t * 100.0).clamp(0.0, 100.0)
        ),
        Some(_) | None => format!("{progress}"),
    };
    match message {
        Some(m) if !m.trim().is_empty() => format!("{amount}: {}", m.trim()),
        Some(_) | None => amount,
    }
}

/// What an MCP server asks the session's model, as the user approves it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SamplingAsk {
    /// The tool call during which the server asks.
    pub tool_call_id: String,
    pub server: String,
    /// The system prompt and the last message, cut to 2,000 characters.
    pub preview: String,
    pub max_tokens: u32,
}

/// The severity of an MCP server's log message: MCP's eight syslog
/// levels, least severe first. Closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ServerLogLevel {
    Debug,
    Info,
    Notice,
    Warning,
    Error,
    Critical,
    Alert,
    Emergency,
}

impl ServerLogLevel {
    /// The level as the wire spells it.
    pub const fn as_str(self) -> &'static str {
        match self {
            ServerLogLevel::Debug => "debug",
            ServerLogLevel::Info => "info",
            ServerLogLevel::Notice => "notice",
            ServerLogLevel::Warning => "warning",
            ServerLogLevel::Error => "error",
            ServerLogLevel::Critical => "critical",
            ServerLogLevel::Alert => "alert",
            ServerLogLevel::Emergency => "emergency",
        }
    }
}

/// How an elicitation was answered: MCP's three actions. Closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ElicitationAction {
    Accept,
    Decline,
    Cancel,
}

impl CallPurpose {
    /// Whether this is a turn's own call (what a request is unless marked).
    pub fn is_turn(&self) -> bool {
        matches!(self, CallPurpose::Turn)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_mcp_server_state_is_spelled_as_serde_writes_it() {
        use super::McpServerState as S;
        for state in [
            S::Starting,
            S::Ready,
            S::Failed,
            S::Stopped,
            S::Skipped,
            S::NeedsCredentials,
            S::Missing,
        ] {
            assert_eq!(
                serde_json::to_value(state).unwrap(),
                serde_json::Value::from(state.as_str())
            );
        }
    }

    use super::*;

    #[test]
    fn every_kind_is_the_type_its_event_serializes_with() {
        let events = [
            Event::TurnCancelled {
                session_id: "s".into(),
            },
            Event::ApprovalDecided {
                call_id: "c".into(),
                decision: DecisionKind::Denied,
                reason: None,
                by: DecidedBy::Cancellation,
            },
            Event::TurnFailed {
                code: "model/failed".into(),
                usage: Default::default(),
                session_usage: Default::default(),
            },
            Event::SourcesApplied {
                session_id: "s".into(),
            },
            Event::GraphInvalid {
                code: "graph/invalid".into(),
                message: "m".into(),
                diagnostics: Vec::new(),
            },
            Event::ToolEnded {
                call_id: "c".into(),
                tool: "shell".into(),
                status: ToolStatus::Cancelled,
                is_error: true,
                content: String::new(),
                metadata: None,
                media: Vec::new(),
            },
        ];
        for e in events {
            let json = serde_json::to_value(&e).unwrap();
            assert_eq!(json["type"], e.kind().as_str());
            assert_eq!(EventKind::parse(e.kind().as_str()), Some(e.kind()));
        }
        let mut names: Vec<&str> = EventKind::ALL.iter().map(|k| k.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), EventKind::ALL.len());
        assert_eq!(EventKind::parse("graph_reloaded"), None);
    }
}
