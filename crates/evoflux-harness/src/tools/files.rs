//! Not a tool: what the file tools (`read`, `write`, `edit`, `ls`, `glob`,
//! `grep`, `artifact`) share. Each runs its synchronous executor of
//! [`evoflux_tools::files`] on a blocking thread over the session's
//! workspace; a change the workspace refuses because it touches one of the
//! agent's controls is put to the user (`Harness::change_control`) instead
//! of failing outright.

use evoflux_model::ToolCall;
use evoflux_tools::files::FileTool;
use evoflux_tools::{ToolError, ToolOutput, Workspace};

use super::file_result;
use crate::error::HarnessError;
use crate::events::ToolResult;
use crate::session::Harness;

/// Runs `call` of the file tool `run` on the disk of the session's
/// workspace.
pub(super) async fn on_disk(
    session: &mut Harness,
    call: &ToolCall,
    run: FileTool,
) -> Result<ToolResult, HarnessError> {
    match run_file_tool(session.workspace().clone(), run, call).await? {
        Ok(o) => Ok(file_result(o)),
        Err(e @ ToolError::ProtectedControl { .. }) => session.change_control(call, run, e).await,
        Err(e) => Ok(ToolResult::error(e.to_string())),
    }
}

/// Runs a synchronous file tool on a blocking thread.
pub(crate) async fn run_file_tool(
    ws: Workspace,
    run: FileTool,
    call: &ToolCall,
) -> Result<Result<ToolOutput, ToolError>, HarnessError> {
    let args = call.arguments.clone();
    tokio::task::spawn_blocking(move || run(&ws, &args))
        .await
        .map_err(|e| HarnessError::Join(e.to_string()))
}
