//! The session's commands: `shell`, `process` and command tools on the
//! application's process runtime, exit notices of background commands,
//! and commands the user runs (`!command`).

use std::collections::BTreeSet;

use evoflux_core::ids::SessionId;
use evoflux_graph::tool::{BuiltinExecutor, ToolExecutor};
use evoflux_model::{Message, ToolCall};
use evoflux_tools::{CommandStatus, ExitNotice, ProcessRuntime};
use serde_json::Value;
use tokio::sync::mpsc;

use super::Harness;
use crate::error::HarnessError;
use crate::events::{Event, ToolResult};
use crate::metadata::ResultMetadata;

/// The session's commands on the application's process runtime.
#[derive(Debug)]
pub(crate) struct SessionCommands {
    /// `None` leaves command tools out of the session.
    pub(crate) processes: Option<ProcessRuntime>,
    /// Exit notices of this session's `notify_on_exit` commands.
    pub(crate) exits: Option<mpsc::UnboundedReceiver<ExitNotice>>,
    /// Commands started with `notify_on_exit` whose end the turn waits for.
    pub(crate) awaiting_exit: BTreeSet<String>,
}

impl SessionCommands {
    pub(crate) fn new(processes: Option<ProcessRuntime>, session: SessionId) -> SessionCommands {
        SessionCommands {
            exits: processes.as_ref().map(|rt| rt.subscribe_exits(session)),
            processes,
            awaiting_exit: BTreeSet::new(),
        }
    }
}

impl Harness {
    /// Runs `shell`, `process` or a command tool on the process runtime and
    /// notes commands whose end the turn should wait for.
    pub(super) async fn run_process_tool(
        &mut self,
        call: &ToolCall,
        executor: &ToolExecutor,
    ) -> ToolResult {
        let Some(rt) = &self.commands.processes else {
            return ToolResult::error(format!(
                "`{}` runs a command and no process runtime is attached to this session.",
                call.name
            ));
        };
        let out = match rt
            .execute(self.session.id, &self.workspace, executor, &call.arguments)
            .await
        {
            Ok(o) => o,
            Err(e) => return ToolResult::error(e.to_string()),
        };
        if let Some(meta) = &out.meta {
            let running = meta.status == CommandStatus::Running;
            let wants_notice = call.arguments.get("notify_on_exit") == Some(&Value::Bool(true));
            match (running, executor) {
                (
                    true,
                    ToolExecutor::Builtin {
                        executor: BuiltinExecutor::Shell,
                    },
                ) if wants_notice => {
                    self.commands.awaiting_exit.insert(meta.process_id.clone());
                }
                (false, _) => {
                    self.commands.awaiting_exit.remove(&meta.process_id);
                }
                (true, _) => {}
            }
        }
        command_result(out)
    }

    /// `verify`: runs one registered check command by id, with values for
    /// its declared argument slots only. The registry fixed the argv; the
    /// environment is the registry's closed one; the session's sandbox
    /// applies. The first line says whether the check passed.
    pub(super) async fn run_check(&mut self, call: &ToolCall) -> ToolResult {
        let (Some(rt), Some(checks)) = (&self.commands.processes, &self.checks) else {
            return ToolResult::error(format!(
                "`{}` needs registered check commands and a process runtime; this session has \
                 neither",
                call.name
            ));
        };
        let id = call
            .arguments
            .get("command")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let args: Vec<String> = match call.arguments.get("args") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => match items
                .iter()
                .map(|v| v.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
            {
                Some(a) => a,
                None => return ToolResult::error("`args` must be a list of strings"),
            },
            Some(_) => return ToolResult::error("`args` must be a list of strings"),
        };
        let bound = checks
            .require(id)
            .and_then(|c| Ok((c, c.bind(&Default::default(), &args)?)));
        let (command, argv) = match bound {
            Ok(b) => b,
            Err(e) => return ToolResult::error(format!("{e} [{}]", e.code())),
        };
        let run = evoflux_tools::ArgvCommand {
            argv,
            cwd: self.workspace.roots()[0].join(&command.cwd),
            env: command.environment(rt.parent_env()),
            timeout: std::time::Duration::from_millis(command.timeout_ms),
        };
        let out = match rt.run_argv(self.session.id, &self.workspace, run).await {
            Ok(o) => o,
            Err(e) => return ToolResult::error(format!("check `{id}` could not start: {e}")),
        };
        let verdict = match out.meta.as_ref().map(|m| (m.status, m.exit_code)) {
            Some((_, Some(0))) => "passed (exit 0)".to_owned(),
            Some((_, Some(code))) => format!("failed (exit {code})"),
            Some((status, None)) => format!("failed ({status:?})").to_lowercase(),
            None => "failed".to_owned(),
        };
        let mut result = command_result(out);
        result.content = format!("check `{id}` {verdict}\n{}", result.content);
        result
    }

    /// A `shell` call the user approved running outside the sandbox.
    pub(super) async fn run_shell_outside_sandbox(&mut self, call: &ToolCall) -> ToolResult {
        let Some(rt) = &self.commands.processes else {
            return ToolResult::error(format!(
                "`{}` runs a command and no process runtime is attached to this session.",
                call.name
            ));
        };
        let request = match evoflux_tools::ShellRequest::parse(&call.arguments) {
            Ok(r) => r,
            Err(e) => return ToolResult::error(e.to_string()),
        };
        match rt
            .run_shell_outside_sandbox(self.session.id, &self.workspace, request)
            .await
        {
            Ok(out) => command_result(out),
            Err(e) => ToolResult::error(e.to_string()),
        }
    }

    /// Appends the exit notices that arrived, as messages the model reads
    /// on its next call. With `wait`, blocks for the next notice when the
    /// turn has nothing else to do but wait for a command it started.
    pub(super) async fn deliver_exit_notices(&mut self, wait: bool) -> Result<bool, HarnessError> {
        let Some(exits) = self.commands.exits.as_mut() else {
            return Ok(false);
        };
        let mut notices = Vec::new();
        if wait
            && !self.commands.awaiting_exit.is_empty()
            && let Some(n) = exits.recv().await
        {
            notices.push(n);
        }
        while let Ok(n) = exits.try_recv() {
            notices.push(n);
        }
        let mut delivered = false;
        for notice in notices {
            if !self.commands.awaiting_exit.remove(&notice.process_id) {
                continue;
            }
            let result = command_result(notice.output);
            let message = Message::user(format!(
                "[evoflux] Background command {} (`{}`) ended:\n{}",
                notice.process_id, notice.command, result.content
            ));
            self.recorder
                .append(message, result.metadata.as_ref())
                .await?;
            self.emit(&Event::CommandEnded {
                process_id: notice.process_id,
                command: notice.command,
                is_error: result.is_error,
                content: result.content,
                metadata: result.metadata,
            });
            delivered = true;
        }
        Ok(delivered)
    }

    /// Runs a command the user typed (`!command` in chat) through the same
    /// runtime, formatter and metadata as the model's `shell`, and puts the
    /// observation in the conversation for the model to see.
    pub async fn user_command(&mut self, command: &str) -> Result<ToolResult, HarnessError> {
        let Some(rt) = &self.commands.processes else {
            return Ok(ToolResult::error(
                "no process runtime is attached to this session",
            ));
        };
        let result = match rt
            .run_user_command(self.session.id, &self.workspace, command)
            .await
        {
            Ok(o) => command_result(o),
            Err(e) => ToolResult::error(e.to_string()),
        };
        let message = Message::user(format!(
            "[evoflux] The user ran `{command}`:\n{}",
            result.content
        ));
        self.recorder
            .append(message, result.metadata.as_ref())
            .await?;
        Ok(result)
    }
}

/// An executor's output as a tool result, a command's metadata serialized once
/// so the event and the transcript carry the same value.
pub(super) fn command_result(out: evoflux_tools::ToolOutput) -> ToolResult {
    ToolResult {
        metadata: out.meta.map(|m| ResultMetadata {
            command: Some(Box::new(m)),
            ..ResultMetadata::default()
        }),
        content: out.text,
        is_error: out.is_error,
    }
}
