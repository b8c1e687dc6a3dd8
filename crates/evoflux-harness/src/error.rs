//! Errors that stop a run. Everything the model can correct (bad
//! arguments, a denied approval, a failing tool) is a tool result instead.

use evoflux_core::ids::SessionId;
use evoflux_model::ProviderError;
use evoflux_store::StoreError;
use evoflux_tools::ToolError;

use crate::hooks::{HookError, HookFailure};
use crate::terminal::SchemaError;

#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Provider(#[from] ProviderError),
    #[error(transparent)]
    Hook(#[from] HookFailure),
    #[error(transparent)]
    Pipeline(#[from] HookError),
    #[error("the session's workspace cannot be used: {0}")]
    Workspace(#[source] ToolError),
    #[error(transparent)]
    OutputSchema(#[from] SchemaError),
    #[error(
        "session {session} belongs to lead `{persisted}`, not `{requested}`: a session's lead is fixed when it is created"
    )]
    LeadMismatch {
        session: SessionId,
        persisted: String,
        requested: String,
    },
    #[error(
        "session {session} has nothing to continue: its last message is the agent's answer; send a new message"
    )]
    NothingToContinue { session: SessionId },
    #[error("a tool task failed to complete: {0}")]
    Join(String),
    #[error("cannot set up the HTTP client: {0}")]
    Http(String),
    #[error(
        "the request is about {estimate} tokens, far past the model's context window of {window}, even after compaction: a message or tool result of the latest turns is too large; start a new session or send something shorter"
    )]
    RequestTooLarge { estimate: u64, window: u64 },
    /// A prompt command or resource reference in the user's message could
    /// not be expanded.
    #[error(transparent)]
    Command(#[from] crate::prompt_commands::CommandError),
}

impl HarnessError {
    /// The stable code of this error.
    pub fn code(&self) -> &'static str {
        match self {
            HarnessError::Store(e) => e.code(),
            HarnessError::Provider(e) => e.code(),
            HarnessError::Hook(_) => "hook/failed",
            HarnessError::Pipeline(e) => e.code(),
            HarnessError::Workspace(e) => e.code(),
            HarnessError::OutputSchema(_) => "turn/output-schema-invalid",
            HarnessError::LeadMismatch { .. } => "session/lead-mismatch",
            HarnessError::NothingToContinue { .. } => "session/nothing-to-continue",
            HarnessError::Join(_) => "tool/task-failed",
            HarnessError::Http(_) => "harness/http-client",
            HarnessError::RequestTooLarge { .. } => "model/request-exceeds-context",
            HarnessError::Command(e) => e.code(),
        }
    }
}
