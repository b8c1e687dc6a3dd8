//! Why a session could not be opened ([`SessionError`]): each variant
//! carries what a front end needs to word it and has a stable code
//! (`session/…`, or the code of the error it wraps).

use std::path::PathBuf;

use evoflux_agents::team::TeamError;
use evoflux_core::config::{ModelRef, ParseModelRefError};
use evoflux_core::trust::TrustError;
use evoflux_core::{AppMode, Diagnostics};
use evoflux_harness::HarnessError;
use evoflux_harness::hooks::HookError;
use evoflux_model::SetupError;
use evoflux_store::StoreError;

use super::ModelOrigin;

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
    /// The session's lease, asked for with [`SessionBuilder::lease`](super::SessionBuilder::lease).
    #[error(transparent)]
    Lease(#[from] evoflux_harness::LeaseError),
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

    /// Another process runs a turn on the session ([`SessionBuilder::lease`](super::SessionBuilder::lease)).
    pub fn is_busy(&self) -> bool {
        matches!(
            self,
            SessionError::Lease(evoflux_harness::LeaseError::Busy { .. })
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
            SessionError::Lease(evoflux_harness::LeaseError::Store(e)) => store_input_error(e),
            SessionError::Lease(evoflux_harness::LeaseError::Busy { .. }) => false,
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
        | StoreError::ImportIntoNonEmpty { .. }
        | StoreError::TitleEmpty
        | StoreError::Cursor(_) => true,
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
