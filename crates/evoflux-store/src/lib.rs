//! Durable evoflux sessions.
//!
//! A session's identity (id, mode, workspace, lead, graph hash), its
//! transcript, its pending inputs and its usage live in one SQLite database
//! in the data directory (`<data>/evoflux.db`, WAL mode), written through
//! sqlx with embedded migrations. Every append is its own transaction and is
//! committed before the call returns, so a process killed at any point
//! leaves every earlier entry readable and the session resumable.
//!
//! Once persisted, a session's mode and workspace are authoritative:
//! [`Store::resume`] refuses a request that names other values instead of
//! migrating the session as a side effect.

mod artifacts;
mod channel_threads;
mod connection_tools;
mod database;
mod error;
mod finding;
mod grants;
mod model_requests;
mod pending;
mod replicas;
mod retention;
mod schedules;
mod session;
mod store;
mod surface;
#[doc(hidden)]
pub mod testing;
mod transcript;
mod transfer;

pub use artifacts::Artifacts;
pub use connection_tools::ConnectionTool;
pub use database::{Backend, Database, DatabaseUrl};
pub use error::StoreError;
pub use evoflux_protocol::Usage;
pub use finding::{
    ActivityCursor, MAX_PAGE, MESSAGE_TITLE_CHARS, SessionQuery, TITLE_CHARS, TitleSource,
    title_from,
};
pub use grants::{GrantKey, GrantScope};
pub use model_requests::{PromptShaping, RecordedCall, RecordedRequest, RequestParts, SystemPart};
pub use pending::{PendingInput, PendingInputId, PendingRequest};
pub use replicas::{
    Announcement, EVENTS_CHANNEL, EventNotifications, Lease, LeaseClaim, LeaseHolder, LeaseProcess,
    PidNamespace, RUN_LEASE, SIGNALS_CHANNEL, Signal, StoredEvent,
};
pub use retention::{PRUNE_INTERVAL, Pruned, Retention};
pub use schedules::{Claim, RunStatus, RunTrigger, ScheduleRun, ScheduleState};
pub use session::{NewSession, Session, SessionParent, Workspace, WorkspaceRequest};
pub use store::{DB_FILE, Store, artifacts_root};
pub use surface::{SessionSurface, UnknownSurface};
pub use transcript::{EntryRole, Message, ToolCall, TranscriptEntry};
pub use transfer::{DERIVED_TABLE_PREFIX, EXPORT_FORMAT, TABLES, Table, Transferred};
