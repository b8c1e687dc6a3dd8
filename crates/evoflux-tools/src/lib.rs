//! Executors of evoflux's built-in tools.
//!
//! The loop finds an executor by the typed [`BuiltinExecutor`] that the
//! graph compiled into the tool's definition, never by the tool's name.
//!
//! * The file tools (`read`, `write`, `edit`, `ls`, `glob`, `grep`) are
//!   synchronous: [`execute`]. Every path stays inside the session's
//!   [`Workspace`] roots.
//! * Commands (`shell`, `process`, command-backed project tools, the
//!   user's `!command`) need state that outlives a call, so they run on
//!   the application's [`ProcessRuntime`] (async, tokio), which journals
//!   output once per command and returns bounded observations carrying a
//!   typed [`CommandMeta`]. [`ProcessRuntime::execute`] routes every
//!   executor, file tools included, and is the entry point for the loop.
//!
//! * `web_fetch` is async too: [`web_fetch::WebFetch`], one HTTP client per
//!   process, with each session's [`web_fetch::NetworkAccess`] policy.
//!
//! `todo` and `skill` act on session state (the task list, the loaded
//! skills), `verify` runs a command of the session's registry on the
//! [`ProcessRuntime`] ([`ProcessRuntime::run_argv`]), `schedule_task`
//! writes the user's schedules through the approval policy and
//! `connection_search` searches and activates the session's held-back MCP
//! tools, so the harness executes them; `code_context` keeps its index
//! across a session's calls ([`CodeNavigator`], over evoflux-code). For
//! those
//! [`execute`] answers [`ToolError::NotImplemented`]: the caller's wiring
//! error, never a result a model sees.

mod args;
mod artifact;
mod beneath;
mod clip;
mod code_context;
mod command_tool;
mod controls;
mod env;
mod error;
mod glob;
mod grep;
pub mod group;
mod journal;
mod limits;
mod lineage;
mod locator;
mod ls;
mod observation;
mod output;
mod process;
mod read;
mod runtime;
pub mod sandbox;
mod seccomp;
mod shell;
mod sync;
mod tracked;
mod walk;
pub mod web_fetch;
mod workspace;
mod write;

use evoflux_graph::tool::BuiltinExecutor;
use serde_json::Value;

pub use artifact::{ARTIFACTS_DIR, ArtifactInput, artifact_path};
pub use clip::MAX_LINE_CHARS;
pub use code_context::CodeNavigator;
pub use controls::GitControl;
pub use env::ALLOWED_ENV;
pub use error::ToolError;
pub use glob::{GLOB_DEFAULT_MAX, GlobInput, PathGlob};
pub use grep::{GREP_DEFAULT_MAX, GREP_MAX_FILE_BYTES, GREP_MAX_PATTERN, GrepInput};
pub use limits::{Limits, ProcessLimit};
pub use lineage::LINEAGE_VAR;
pub use locator::{ARTIFACT_SCHEME, artifact_locator};
pub use ls::{LS_MAX_ENTRIES, LsInput};
pub use observation::{CommandMeta, CommandStatus, FAILURE_OUTPUT_LIMIT, SUCCESS_OUTPUT_LIMIT};
pub use output::ToolOutput;
pub use process::{
    PROCESS_DEFAULT_WAIT_SECONDS, PROCESS_MAX_WAIT_SECONDS, PROCESS_MIN_WAIT_SECONDS,
    ProcessAction, ProcessRequest,
};
pub use read::{READ_MAX_OUTPUT_BYTES, READ_SCAN_BYTES, ReadInput, read_text};
pub use runtime::{
    ArgvCommand, DEFAULT_EXIT_DRAIN, DEFAULT_MAX_TIMEOUT, DEFAULT_TERMINATE_GRACE, ExitNotice,
    MAX_SESSION_PROCESSES, ProcessRuntime, RuntimeConfig,
};
pub use shell::{
    SHELL_DEFAULT_TIMEOUT_SECONDS, SHELL_DEFAULT_YIELD_MS, SHELL_MAX_YIELD_MS,
    SHELL_MIN_TIMEOUT_SECONDS, SHELL_MIN_YIELD_MS, ShellRequest,
};
pub use workspace::{Control, Resolved, Workspace};
pub use write::{EditInput, WriteInput, apply_edit};

/// Runs one built-in executor on the model's JSON input.
///
/// Errors the model caused (bad input, a path outside the workspace, an
/// ambiguous edit) come back as `Err` like every other failure; turn
/// them into a model-visible result with [`ToolError::into_output`].
/// [`ToolError::NotImplemented`] is the one error the caller should
/// treat as its own wiring problem; `shell` and `process` answer it here
/// because they run on [`ProcessRuntime`], which routes them itself.
pub fn execute(
    ws: &Workspace,
    executor: BuiltinExecutor,
    input: &Value,
) -> Result<ToolOutput, ToolError> {
    match executor {
        BuiltinExecutor::Read => read::run(ws, &ReadInput::parse(input)?),
        BuiltinExecutor::Write => write::write(ws, &WriteInput::parse(input)?),
        BuiltinExecutor::Edit => write::edit(ws, &EditInput::parse(input)?),
        BuiltinExecutor::Ls => ls::run(ws, &LsInput::parse(input)?),
        BuiltinExecutor::Glob => glob::run(ws, &GlobInput::parse(input)?),
        BuiltinExecutor::Grep => grep::run(ws, &GrepInput::parse(input)?),
        BuiltinExecutor::Artifact => artifact::run(ws, &ArtifactInput::parse(input)?),
        BuiltinExecutor::Shell
        | BuiltinExecutor::Process
        | BuiltinExecutor::Todo
        | BuiltinExecutor::WebFetch
        | BuiltinExecutor::Skill
        | BuiltinExecutor::CodeContext
        | BuiltinExecutor::Verify
        | BuiltinExecutor::ScheduleTask
        | BuiltinExecutor::ConnectionSearch => Err(ToolError::NotImplemented { executor }),
    }
}
