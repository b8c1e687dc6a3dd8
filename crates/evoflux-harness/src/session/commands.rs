//! The session's commands: the application's process runtime that
//! `shell`, `process`, `verify` and command tools run on (their handlers
//! are in `crate::tools`), exit notices of background commands, and
//! commands the user runs (`!command`).

use std::collections::BTreeSet;

use evoflux_core::ids::SessionId;
use evoflux_model::{Message, ToolCall};
use evoflux_tools::{CommandStatus, ExitNotice, ProcessRuntime, ToolError, ToolOutput};
use tokio::sync::mpsc;

use super::Harness;
use crate::error::HarnessError;
use crate::events::{Event, ToolResult};
use crate::prepared::NO_PROCESS_RUNTIME;
use crate::tools::command_result;

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
    /// The process runtime a call runs its command on (`shell`, `process`,
    /// a command tool), or the call's result in a session without one.
    pub(crate) fn processes_for(&self, call: &ToolCall) -> Result<ProcessRuntime, ToolResult> {
        self.commands.processes.clone().ok_or_else(|| {
            ToolResult::error(format!(
                "`{}` runs a command and {NO_PROCESS_RUNTIME}.",
                call.name
            ))
        })
    }

    /// The application's process runtime, if the session has one.
    pub(crate) fn processes(&self) -> Option<&ProcessRuntime> {
        self.commands.processes.as_ref()
    }

    /// A command call's output as its result, noting the commands whose
    /// end the turn should wait for: one still running that the call asked
    /// to hear of (`notify_on_exit`), until it ends.
    pub(crate) fn command_finished(
        &mut self,
        out: Result<ToolOutput, ToolError>,
        notify_on_exit: bool,
    ) -> ToolResult {
        let out = match out {
            Ok(o) => o,
            Err(e) => return ToolResult::error(e.to_string()),
        };
        if let Some(meta) = &out.meta {
            match meta.status == CommandStatus::Running {
                true if notify_on_exit => {
                    self.commands.awaiting_exit.insert(meta.process_id.clone());
                }
                false => {
                    self.commands.awaiting_exit.remove(&meta.process_id);
                }
                true => {}
            }
        }
        command_result(out)
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
            return Ok(ToolResult::error(NO_PROCESS_RUNTIME));
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
