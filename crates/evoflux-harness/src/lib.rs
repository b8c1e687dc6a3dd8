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

pub mod agent_files;
pub mod approval;
pub mod bounded;
pub mod client_files;
pub mod clock;
pub mod compaction;
pub mod connection_search;
pub mod doctor;
pub mod error;
pub mod evals;
pub mod events;
pub mod fleet_run;
pub mod hooks;
pub mod host;
pub mod lease;
pub mod metadata;
pub mod offload;
pub mod prepared;
pub mod projection;
pub mod receipts;
pub mod remote;
pub mod replay;
pub mod safe_command;
pub mod schedule_task;
pub mod scheduler;
mod schema_errors;
pub mod scratch;
pub mod session;
pub mod skills;
pub mod skills_view;
pub mod sources;
pub mod team_roster;
pub mod terminal;
pub mod todo;
pub mod tool_paths;
pub mod tree_copy;
pub mod trust_review;
pub mod workspace_instructions;

pub use approval::{
    ApprovalDecision, ApprovalRequest, Approver, Decided, DecidedBy, DecisionKind, NonInteractive,
};
pub use clock::{Clock, FixedClock, SystemClock};
pub use error::HarnessError;
pub use events::{
    Boundary, CollectEvents, Event, EventKind, EventSink, NoEvents, ToolResult, ToolStatus,
    TurnStatus,
};
pub use evoflux_tools::web_fetch::NetworkAccess;
pub use hooks::{HookPipeline, HookStage, PipelineOptions, base_pipeline, standard_pipeline};
pub use host::{HostError, HostFrontEnd, HostOptions, HostWiring, Reopen, SessionHost, TurnHandle};
pub use lease::{Holder, LeaseError, SessionLease};
pub use session::{
    AppContext, ChildFactory, ChildModel, Harness, Limits, ModelClient, ModelOrigin, OpenedSession,
    PendingQuestion, RunSetup, SandboxSetup, SessionBuilder, SessionError, SessionOptions,
    SessionRecord, SessionRequest, SessionSummary, TeamSetup, TrustQuestion, TrustedCheckout,
    TurnEnd, TurnOptions, TurnOutcome, UnmetContract, WorkerEnd, selected_config, selected_sandbox,
};
