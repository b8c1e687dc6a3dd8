//! The evoflux agent loop.
//!
//! [`Harness`] runs one session: it resolves nothing by name — the lead
//! comes compiled ([`evoflux_agents::team::compile_agent_config`]), its
//! tools come from the graph with their compiled behavior
//! ([`prepared`]), and every piece of model context comes from a
//! [`hooks::HookPipeline`] owner. Each call is handled by an exhaustive
//! switch on the prepared kind; `final_output` ([`terminal`]) is the only
//! tool the loop knows by its own identity. Progress is a typed
//! [`events::Event`] stream, and everything is persisted in the session
//! store as it happens.
//!
//! This is the session engine: sessions, turns, tools, hooks, context, the
//! session host, leases and approvals. Opening a session from what a front
//! end knows (the application's directories, trust, the compile), and the
//! services around sessions (doctor, evals, replay, fleet runs, the
//! scheduler), are the application's, in `evoflux-app`.

pub mod approval;
pub mod bounded;
pub mod client_files;
pub mod clock;
pub mod compaction;
pub mod context_cost;
pub mod error;
pub mod events;
pub mod hooks;
pub mod host;
pub mod lease;
pub mod metadata;
pub mod offload;
pub mod permission_rules;
pub mod prepared;
pub mod projection;
pub mod prompt_commands;
pub mod receipts;
pub mod remote;
pub mod safe_command;
mod schema_errors;
pub mod session;
mod side_call;
pub mod skills;
pub mod sources;
pub mod team_roster;
pub mod terminal;
pub mod tool_paths;
pub mod tools;
pub mod workspace_instructions;

pub use approval::{
    ApprovalDecision, ApprovalMode, ApprovalRequest, Approver, Decided, DecidedBy, DecisionKind,
    ModeSwitch, NonInteractive,
};
pub use clock::{Clock, FixedClock, SystemClock};
pub use error::HarnessError;
pub use events::{
    Boundary, CollectEvents, Event, EventKind, EventSink, NoEvents, ToolResult, ToolStatus,
    TurnStatus,
};
pub use evoflux_tools::web_fetch::NetworkAccess;
// What the engine's API hands out from the crates below it, named here
// so a front end drives a session through the engine alone: the command
// runtime a session runs its commands in and the workspace check its
// file tools go through (`evoflux-tools`); the process group an external
// agent started for a remote dispatch leads; the store a host works on,
// its sessions and their records, and its errors (`evoflux-store`); a
// prepared tool's definition and the class of action it takes
// (`evoflux-graph`).
pub use evoflux_graph::tool::{ActionClass, ToolDefinition};
pub use evoflux_store::{
    ActivityCursor, PendingInput, Session, SessionQuery, SessionSurface, Store, StoreError,
    TranscriptEntry,
};
pub use evoflux_tools::group::ProcessGroup;
pub use evoflux_tools::{CommandStatus, PreviewInfo, ProcessRuntime, Workspace};
pub use hooks::{HookPipeline, HookStage, PipelineOptions, base_pipeline, standard_pipeline};
pub use host::{
    HostError, HostFrontEnd, HostOptions, HostWiring, Reopen, ReopenError, SessionHost, TurnHandle,
};
pub use lease::{Holder, LeaseError, SessionLease};
pub use session::{
    ChildFactory, ChildModel, DEFAULT_PAGE, Harness, Limits, MAX_PAGE, ModelClient,
    PendingQuestion, RunSetup, SandboxSetup, SessionRecord, SessionRequest, SessionSnapshot,
    SessionSummary, TeamSetup, TranscriptPage, TurnEnd, TurnOptions, TurnOutcome, UnmetContract,
    WorkerEnd,
};
