//! Executors of evoflux's built-in file tools: `read`, `write`, `edit`,
//! `ls`, `glob` and `grep`.
//!
//! The loop finds an executor by the typed [`BuiltinExecutor`] that the
//! graph compiled into the tool's definition, never by the tool's name,
//! and hands the model's JSON input to [`execute`]. Every path stays
//! inside the session's [`Workspace`] roots. Executors built elsewhere
//! (shell, process, todo, web_fetch, skill, code_context) answer
//! [`ToolError::NotImplemented`] here rather than pretending to work.

mod args;
mod clip;
mod error;
mod glob;
mod grep;
mod ls;
mod output;
mod read;
mod walk;
mod workspace;
mod write;

use evoflux_graph::tool::BuiltinExecutor;
use serde_json::Value;

pub use clip::MAX_LINE_CHARS;
pub use error::ToolError;
pub use glob::{GLOB_DEFAULT_MAX, GlobInput};
pub use grep::{GREP_DEFAULT_MAX, GREP_MAX_FILE_BYTES, GREP_MAX_PATTERN, GrepInput};
pub use ls::{LS_MAX_ENTRIES, LsInput};
pub use output::ToolOutput;
pub use read::{READ_MAX_BYTES, READ_MAX_OUTPUT_BYTES, ReadInput};
pub use workspace::{Resolved, Workspace};
pub use write::{EditInput, WriteInput};

/// Runs one built-in executor on the model's JSON input.
///
/// Errors the model caused (bad input, a path outside the workspace, an
/// ambiguous edit) come back as `Err` like every other failure; turn
/// them into a model-visible result with [`ToolError::into_output`].
/// [`ToolError::NotImplemented`] is the one error the caller should
/// treat as its own wiring problem.
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
        BuiltinExecutor::Shell
        | BuiltinExecutor::Process
        | BuiltinExecutor::Todo
        | BuiltinExecutor::WebFetch
        | BuiltinExecutor::Skill
        | BuiltinExecutor::CodeContext => Err(ToolError::NotImplemented { executor }),
    }
}
