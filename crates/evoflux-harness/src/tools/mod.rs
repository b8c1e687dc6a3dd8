//! The built-in tools' handlers: one module per tool, each implementing
//! `BuiltinTool`, and the one match that finds a tool's handler by its
//! executor (`handler`).
//!
//! A handler is everything the session engine does with its tool: whether
//! a session can run it (its capability gate) and when the model sees it
//! (`Offering`), whether it runs the registered checks, its own approval
//! policy and what a call asks the user to approve, a hint for arguments
//! its schema refused, how a call runs, what it keeps in the session and
//! how that is replayed from the transcript (`BuiltinState`), and what a
//! call leaves as evidence of a worker's work. Preparation
//! ([`crate::prepared`]), the router (`session/router.rs`), the session's
//! opening (`session/open.rs`), what it offers the model
//! (`session/mod.rs`, `session/mcp.rs`) and the evidence
//! (`session/evidence.rs`) ask the handler; none of them matches on a
//! tool.
//!
//! What a tool is for the model — its description, its schema and the
//! limits the schema states — is its definition, the module of the same
//! name in [`evoflux_graph::tool::builtin`]. The definitions stay in the
//! graph because the layers below the engine need them without one: the
//! composer builds a framework tool that wins its slot, `evoflux-agents`
//! checks teams and worker recipes against the framework catalog, and the
//! executors' tests compare their parsers with the schemas. A crate never
//! depends on one above it, and the handlers need the session, so the two
//! halves of a tool live in two modules of the same name. The executors
//! themselves are a library the handlers call ([`evoflux_tools`]).
//!
//! Adding a built-in tool: its definition module and its line in
//! `evoflux_graph::tool::builtin`, a [`BuiltinExecutor`] variant, and here
//! a module implementing `BuiltinTool` and its line in `handler` (the
//! compiler asks for it).
//! The natively handled tools (`ask_user`, `agent`, `task_update`,
//! `task_cancel`, `web_search`) have no handler: the router acts on their
//! typed [`Handling`](evoflux_graph::tool::Handling).

use std::path::{Path, PathBuf};

use evoflux_graph::tool::{Approval, BuiltinExecutor};
use evoflux_model::ToolCall;
use evoflux_tools::Workspace;
use futures_util::future::BoxFuture;
use serde_json::Value;

use crate::approval::ApprovalSubject;
use crate::error::HarnessError;
use crate::events::ToolResult;
use crate::prepared::SessionCapabilities;
use crate::session::Harness;

mod artifact;
pub(crate) mod browser;
mod code_context;
pub mod connection_search;
mod edit;
mod files;
mod glob;
mod grep;
mod ls;
mod preview;
mod process;
mod read;
mod results;
pub mod schedule_task;
mod shell;
mod skill;
pub mod todo;
mod verify;
mod web_fetch;
mod write;

pub(crate) use files::run_file_tool;
pub(crate) use results::{command_result, file_result};
pub(crate) use verify::bind_commands;

use todo::TodoList;

/// The handler of the built-in tool `executor` names: the one place a
/// built-in tool is matched on.
pub(crate) fn handler(executor: BuiltinExecutor) -> &'static dyn BuiltinTool {
    match executor {
        BuiltinExecutor::Shell => &shell::Shell,
        BuiltinExecutor::Process => &process::Process,
        BuiltinExecutor::Read => &read::Read,
        BuiltinExecutor::Write => &write::Write,
        BuiltinExecutor::Edit => &edit::Edit,
        BuiltinExecutor::Ls => &ls::Ls,
        BuiltinExecutor::Glob => &glob::Glob,
        BuiltinExecutor::Grep => &grep::Grep,
        BuiltinExecutor::Todo => &todo::Todo,
        BuiltinExecutor::WebFetch => &web_fetch::WebFetch,
        BuiltinExecutor::Skill => &skill::Skill,
        BuiltinExecutor::CodeContext => &code_context::CodeContext,
        BuiltinExecutor::Verify => &verify::Verify,
        BuiltinExecutor::Artifact => &artifact::Artifact,
        BuiltinExecutor::ScheduleTask => &schedule_task::ScheduleTask,
        BuiltinExecutor::ConnectionSearch => &connection_search::ConnectionSearch,
        BuiltinExecutor::Preview => &preview::Preview,
        BuiltinExecutor::Browser => &browser::BrowserTool,
    }
}

/// Whether the built-in tool `executor` names runs the repository's
/// registered check commands (its handler's `BuiltinTool::runs_checks`):
/// an agent that requires it cannot run where none are registered.
pub fn runs_checks(executor: BuiltinExecutor) -> bool {
    handler(executor).runs_checks()
}

/// What a handler's asynchronous answers are.
pub(crate) type Handled<'a, T> = BoxFuture<'a, Result<T, HarnessError>>;

/// A built-in tool as the session engine knows it. Every method but
/// [`BuiltinTool::execute`] has the answer of a tool that needs nothing
/// special.
pub(crate) trait BuiltinTool: Sync {
    /// Why this session cannot run the tool, if so; the tool is then left
    /// out and reported with this reason.
    fn gap(&self, _caps: &SessionCapabilities) -> Option<&'static str> {
        None
    }

    /// The tool's own approval policy; the user's `[approval]` replaces it
    /// and a repository's floor raises it.
    fn approval(&self) -> Approval {
        Approval::Never
    }

    /// When the model sees the tool.
    fn offering(&self) -> Offering {
        Offering::Always
    }

    /// Whether the tool runs the repository's registered check commands
    /// (`fleets/commands.yaml`): its schema is bound to name exactly the
    /// session's ([`bind_commands`]), and a worker that requires it cannot
    /// run where none are registered.
    fn runs_checks(&self) -> bool {
        false
    }

    /// The command a call asks to run, which the approval gate judges by
    /// itself (a read-only command never asks; one outside the sandbox
    /// always does) and an "always" answer remembers by its program.
    fn gated_command<'a>(&self, _arguments: &'a Value) -> Option<GatedCommand<'a>> {
        None
    }

    /// The absolute folder a call's command runs in, shown with its
    /// approval; `None` for a tool that runs no command (or a folder the
    /// command could not run in).
    fn workdir(&self, _arguments: &Value, _workspace: &Workspace) -> Option<PathBuf> {
        None
    }

    /// What the user is asked to approve for a call that asks.
    fn approval_subject(&self, _arguments: &Value) -> ApprovalSubject {
        ApprovalSubject::Call
    }

    /// Words added to the schema's refusal of a call's arguments, to help
    /// the model correct them.
    fn argument_hint<'a>(
        &'a self,
        _session: &'a Harness,
        _arguments: &'a Value,
    ) -> Handled<'a, Option<String>> {
        Box::pin(async { Ok(None) })
    }

    /// Runs a call that its schema, the hooks and the approval let
    /// through.
    fn execute<'a>(
        &'a self,
        session: &'a mut Harness,
        call: &'a ToolCall,
    ) -> Handled<'a, ToolResult>;

    /// Rebuilds what the tool keeps in the session from one of its calls
    /// that succeeded, as the transcript is read back when the session
    /// opens again.
    fn replay(&self, _call: &ToolCall, _state: &mut BuiltinState) {}

    /// What a call changed, for a worker's run effects; `root` is the
    /// primary workspace root.
    fn effect(&self, _call: &ToolCall, _is_error: bool, _root: &Path) -> Option<Effect> {
        None
    }

    /// The lines of files a successful call showed (`content`, its
    /// result), for grounding a worker's result in what it saw.
    fn shown_lines(&self, _call: &ToolCall, _content: &str, _root: &Path) -> Vec<(PathBuf, u32)> {
        Vec::new()
    }
}

/// When the model sees a built-in tool. Closed: the session's offer
/// (`Harness::offered`) decides each case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Offering {
    /// From the start.
    Always,
    /// Hidden until something activates it: a command of the session
    /// runs, or a loaded skill's contract turns it on (`process`).
    Deferred,
    /// The way to the tools held back from the model (too many to send):
    /// offered only while some are, and what turns them on
    /// (`connection_search`).
    WhileToolsHeldBack,
    /// Large and needed in few turns: it joins the catalog of tools the
    /// session may hold back, with the granted MCP tools. Offered from the
    /// start while that catalog fits the one budget
    /// ([`connection_search::over_budget`]); over it, held back with them
    /// until `connection_search` activates it (`browser`).
    DeferredWithConnections,
}

/// What built-in tools keep in the session between calls. It is part of
/// the conversation: each handler rebuilds its part from its successful
/// calls in the transcript ([`BuiltinTool::replay`]), so no second store
/// can drift from what the model saw.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct BuiltinState {
    /// The lead's task list (`todo`).
    pub(crate) todo: TodoList,
}

/// A command a call asks to run, for the approval gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct GatedCommand<'a> {
    pub command: &'a str,
    /// The model asks to run it outside the sandbox.
    pub outside_sandbox: bool,
}

/// What one call changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Effect {
    /// It wrote this file, or was refused writing it (by its result).
    File(PathBuf),
    /// It ran this check (a registered command by id, a command line).
    Check(String),
}
