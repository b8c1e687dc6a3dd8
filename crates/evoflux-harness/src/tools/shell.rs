//! `shell`'s handler: one command on the session's process runtime, under
//! its sandbox — or outside it, for the one command the user approved so
//! (the model asks with `outside_sandbox` and a `justification`). The
//! approval gate judges the command itself (a read-only one never asks),
//! a command that outlives its yield with `notify_on_exit` is awaited by
//! the turn, and a command that ran is a check a worker ran. Its
//! definition is [`evoflux_graph::tool::builtin::shell`].

use std::path::{Path, PathBuf};

use evoflux_model::ToolCall;
use evoflux_tools::{ShellRequest, Workspace};
use serde_json::Value;

use super::{BuiltinTool, Effect, GatedCommand, Handled, command_result};
use crate::approval::ApprovalSubject;
use crate::events::ToolResult;
use crate::prepared::SessionCapabilities;
use crate::session::Harness;

#[derive(Debug)]
pub(super) struct Shell;

impl BuiltinTool for Shell {
    fn gap(&self, caps: &SessionCapabilities) -> Option<&'static str> {
        caps.process_gap()
    }

    fn gated_command<'a>(&self, arguments: &'a Value) -> Option<GatedCommand<'a>> {
        Some(GatedCommand {
            command: arguments
                .get("command")
                .and_then(Value::as_str)
                .unwrap_or_default(),
            outside_sandbox: outside_sandbox(arguments),
        })
    }

    fn workdir(&self, arguments: &Value, workspace: &Workspace) -> Option<PathBuf> {
        ShellRequest::parse(arguments)
            .ok()?
            .working_folder(workspace)
            .ok()
    }

    fn approval_subject(&self, arguments: &Value) -> ApprovalSubject {
        match outside_sandbox(arguments) {
            true => ApprovalSubject::OutsideSandbox {
                justification: arguments
                    .get("justification")
                    .and_then(Value::as_str)
                    .unwrap_or("(no reason given)")
                    .to_owned(),
            },
            false => ApprovalSubject::Call,
        }
    }

    fn execute<'a>(
        &'a self,
        session: &'a mut Harness,
        call: &'a ToolCall,
    ) -> Handled<'a, ToolResult> {
        Box::pin(async move {
            let rt = match session.processes_for(call) {
                Ok(rt) => rt,
                Err(refused) => return Ok(refused),
            };
            let id = session.session().id;
            // The approval gate let it through: the user approved this
            // one command outside the sandbox.
            if outside_sandbox(&call.arguments) {
                let request = match ShellRequest::parse(&call.arguments) {
                    Ok(r) => r,
                    Err(e) => return Ok(ToolResult::error(e.to_string())),
                };
                return Ok(
                    match rt
                        .run_shell_outside_sandbox(id, session.workspace(), request)
                        .await
                    {
                        Ok(out) => command_result(out),
                        Err(e) => ToolResult::error(e.to_string()),
                    },
                );
            }
            let out = rt.shell(id, session.workspace(), &call.arguments).await;
            let notify = call.arguments.get("notify_on_exit") == Some(&Value::Bool(true));
            Ok(session.command_finished(out, notify))
        })
    }

    fn effect(&self, call: &ToolCall, is_error: bool, _root: &Path) -> Option<Effect> {
        let command = call
            .arguments
            .get("command")
            .and_then(Value::as_str)
            .filter(|_| !is_error)?;
        Some(Effect::Check(
            command.split_whitespace().collect::<Vec<_>>().join(" "),
        ))
    }
}

/// Whether the call asks to run its command outside the sandbox.
fn outside_sandbox(arguments: &Value) -> bool {
    arguments.get("outside_sandbox") == Some(&Value::Bool(true))
}
