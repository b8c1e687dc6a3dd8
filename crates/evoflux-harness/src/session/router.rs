//! Routing one tool call by its prepared handling: arguments checked,
//! hooks and approval asked, then an exhaustive switch on the prepared
//! kind. Nothing here selects behavior by a tool's name.

use evoflux_graph::tool::{BuiltinExecutor, InputRequest, ToolExecutor};
use evoflux_model::{Message, ToolCall};
use serde_json::Value;

use super::commands::command_result;
use super::{Harness, PendingQuestion, pending_request_of};
use crate::approval::{
    ApprovalDecision, ApprovalRequest, ApprovalSubject, Decided, Gate, Remember, gate,
};
use crate::error::HarnessError;
use crate::events::{Event, ToolResult};
use crate::hooks::ToolGate;
use crate::prepared::{Executor, PreparedKind};
use crate::terminal::{FINAL_OUTPUT, TerminalOutput};
use evoflux_store::{GrantKey, GrantScope, PendingRequest};

impl Harness {
    /// Handles one call by its prepared kind.
    pub(super) async fn handle_call(
        &mut self,
        call: &ToolCall,
        terminal: Option<&TerminalOutput>,
    ) -> Result<CallOutcome, HarnessError> {
        if let Some(t) = terminal
            && call.name == FINAL_OUTPUT
        {
            return Ok(match t.extract(&call.arguments) {
                Ok(v) => CallOutcome::Final(v),
                Err(e) => CallOutcome::Result(ToolResult::error(e)),
            });
        }
        if self.mcp.held_back.contains(&call.name) {
            return Ok(CallOutcome::Result(ToolResult::error(
                self.held_back_call(&call.name),
            )));
        }
        let Some(tool) = self.tools.get(&call.name).filter(|t| self.offered(t)) else {
            let available: Vec<&str> = self
                .tools
                .iter()
                .filter(|t| self.offered(t))
                .map(|t| t.definition.name.as_str())
                .collect();
            return Ok(CallOutcome::Result(ToolResult::error(format!(
                "There is no tool named `{}` in this session. Available tools: {}.",
                call.name,
                available.join(", ")
            ))));
        };
        if let Err(e) = tool.check_arguments(&call.arguments) {
            let is_code_context = tool.kind
                == PreparedKind::Ordinary(Executor::Builtin(BuiltinExecutor::CodeContext));
            let hint = match is_code_context {
                true => self.code_context_hint(&call.arguments).await?,
                false => None,
            };
            return Ok(CallOutcome::Result(ToolResult::error(match hint {
                Some(h) => format!("{e}\n{h}"),
                None => e,
            })));
        }
        match self
            .pipeline
            .before_tool(&self.ctx(), call, &tool.definition)
        {
            ToolGate::Proceed => {}
            ToolGate::HoldBack { reason } => {
                return Ok(CallOutcome::Result(ToolResult::error(reason)));
            }
            ToolGate::Respond(result) => return Ok(CallOutcome::Result(result)),
        }
        // The user's configured policy for this tool wins over its own; a
        // repository's floor only raises it.
        let approval = self
            .approvals
            .for_tool(&tool.definition.name, tool.approval);
        let is_shell =
            tool.kind == PreparedKind::Ordinary(Executor::Builtin(BuiltinExecutor::Shell));
        let shell = is_shell.then(|| {
            (
                call.arguments
                    .get("command")
                    .and_then(Value::as_str)
                    .unwrap_or_default(),
                call.arguments.get("outside_sandbox") == Some(&Value::Bool(true)),
            )
        });
        let outside_sandbox = shell.is_some_and(|(_, outside)| outside);
        let grant = GrantKey {
            tool: call.name.clone(),
            command: shell.map(|(command, _)| crate::safe_command::grant_command(command)),
        };
        let ask = match gate(approval, shell) {
            Gate::Run => false,
            Gate::Refuse(reason) => return Ok(CallOutcome::Result(ToolResult::error(reason))),
            Gate::Ask { remembered } => !(remembered && self.grants.contains(&grant)),
        };
        if ask {
            let subject = match outside_sandbox {
                true => ApprovalSubject::OutsideSandbox {
                    justification: call
                        .arguments
                        .get("justification")
                        .and_then(Value::as_str)
                        .unwrap_or("(no reason given)")
                        .to_owned(),
                },
                false => ApprovalSubject::Call,
            };
            let scope = match self.ask(call, subject).await {
                Asked::Denied(reason) => {
                    return Ok(CallOutcome::Result(ToolResult::error(reason)));
                }
                Asked::Approved(scope) => scope,
            };
            if let Some(scope) = scope {
                self.recorder
                    .store
                    .add_approval_grant(self.session.id, &self.session.workspace, scope, &grant)
                    .await?;
                self.grants.insert(grant);
            }
        }
        if outside_sandbox {
            return Ok(CallOutcome::Result(
                self.run_shell_outside_sandbox(call).await,
            ));
        }
        let kind = tool.kind.clone();
        match kind {
            PreparedKind::Ordinary(executor) => {
                Ok(CallOutcome::Result(self.execute(executor, call).await?))
            }
            PreparedKind::Dispatch(targets) => {
                Ok(CallOutcome::Result(self.dispatch(call, &targets).await?))
            }
            // Not offered as a function, so only a confused model calls
            // it this way; the provider runs it when the model asks it.
            PreparedKind::Provider(_) => Ok(CallOutcome::Result(ToolResult::error(format!(
                "`{}` is run by the model provider, not called as a function: ask for it the \
                 provider's way",
                call.name
            )))),
            PreparedKind::RequestInput(InputRequest::Question) => {
                let request = PendingRequest {
                    output_schema: terminal.map(|t| t.schema().clone()),
                    ..pending_request_of(call)
                };
                let pending = self
                    .recorder
                    .store
                    .create_pending_input(self.session.id, &call.id, &request)
                    .await?;
                Ok(CallOutcome::Question(PendingQuestion::of(&pending)))
            }
        }
    }

    /// Puts one call to the approver, announcing it as an event. The
    /// scope is that of an "always" answer the subject allows.
    async fn ask(&self, call: &ToolCall, subject: ApprovalSubject) -> Asked {
        let (outside_sandbox, control) = match &subject {
            ApprovalSubject::Call => (None, None),
            ApprovalSubject::OutsideSandbox { justification } => {
                (Some(justification.clone()), None)
            }
            ApprovalSubject::Control { path, .. } => (None, Some(path.clone())),
        };
        self.emit(&Event::ApprovalRequested {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            outside_sandbox,
            control,
        });
        let remember = subject.remember();
        let request = ApprovalRequest {
            session_id: self.session.id.to_string(),
            call_id: call.id.clone(),
            tool: call.name.clone(),
            arguments: call.arguments.clone(),
            subject,
        };
        *self
            .awaiting_approval
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = Some(call.id.clone());
        let Decided { decision, by } = self.approver.approve(&request).await;
        self.awaiting_approval
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        let reason = match &decision {
            ApprovalDecision::Denied { reason } => Some(reason.clone()),
            ApprovalDecision::Approved
            | ApprovalDecision::ApprovedForSession
            | ApprovalDecision::ApprovedForWorkspace => None,
        };
        // Every client hears the decision before the call runs.
        self.emit(&Event::ApprovalDecided {
            call_id: call.id.clone(),
            decision: decision.kind(),
            reason,
            by,
        });
        // A front end offers only what the subject allows; anything wider
        // is narrowed here rather than trusted.
        match (decision, remember) {
            (ApprovalDecision::Denied { reason }, _) => Asked::Denied(reason),
            (ApprovalDecision::Approved, _)
            | (
                ApprovalDecision::ApprovedForSession | ApprovalDecision::ApprovedForWorkspace,
                Remember::Never,
            ) => Asked::Approved(None),
            (
                ApprovalDecision::ApprovedForSession,
                Remember::Session | Remember::SessionOrWorkspace,
            )
            | (ApprovalDecision::ApprovedForWorkspace, Remember::Session) => {
                Asked::Approved(Some(GrantScope::Session))
            }
            (ApprovalDecision::ApprovedForWorkspace, Remember::SessionOrWorkspace) => {
                Asked::Approved(Some(GrantScope::Workspace))
            }
        }
    }

    /// A `write` or `edit` refused because it changes one of the agent's
    /// controls: put to the user, and run with the controls writable when
    /// allowed (for the rest of the session with "always for this
    /// session"). The change takes effect from the next session, and the
    /// result says so.
    async fn change_control(
        &mut self,
        call: &ToolCall,
        builtin: BuiltinExecutor,
        refused: evoflux_tools::ToolError,
    ) -> Result<ToolResult, HarnessError> {
        let evoflux_tools::ToolError::ProtectedControl { path, control } = &refused else {
            return Ok(ToolResult::error(refused.to_string()));
        };
        let path = path.clone();
        let subject = ApprovalSubject::Control {
            path: path.clone(),
            control: control.to_string(),
        };
        let ws = match self.ask(call, subject).await {
            Asked::Denied(reason) => {
                return Ok(ToolResult::error(format!("{refused}\n{reason}")));
            }
            Asked::Approved(Some(_)) => {
                self.workspace = self.workspace.clone().allowing_controls();
                self.workspace.clone()
            }
            Asked::Approved(None) => self.workspace.clone().allowing_controls(),
        };
        Ok(match run_file_tool(ws, builtin, call).await? {
            Ok(o) if !o.is_error => {
                let note = format!(
                    "`{path}` is one of the agent's controls: the change takes effect from the \
                     next session (the next compile), not in this one."
                );
                self.emit(&Event::Warning {
                    code: "control/changed".to_owned(),
                    message: note.clone(),
                });
                ToolResult {
                    content: format!("{}\n\n{note}", o.text),
                    ..file_result(o)
                }
            }
            Ok(o) => file_result(o),
            Err(e) => ToolResult::error(e.to_string()),
        })
    }

    pub(super) async fn execute(
        &mut self,
        executor: Executor,
        call: &ToolCall,
    ) -> Result<ToolResult, HarnessError> {
        let builtin = match executor {
            Executor::Builtin(b) => b,
            Executor::Command(command) => {
                return Ok(self
                    .run_process_tool(call, &ToolExecutor::Command(command))
                    .await);
            }
            Executor::Mcp { qualified_name } => {
                return Ok(
                    match self
                        .mcp
                        .tools
                        .call_tool(
                            &qualified_name,
                            call.arguments.clone(),
                            self.mcp.call_timeout,
                        )
                        .await
                    {
                        Ok(r) => ToolResult {
                            content: r.to_text(),
                            is_error: r.is_error,
                            metadata: None,
                        },
                        Err(e) => ToolResult::error(format!("{} [{}]", e, e.code())),
                    },
                );
            }
        };
        match builtin {
            BuiltinExecutor::Read
            | BuiltinExecutor::Write
            | BuiltinExecutor::Edit
            | BuiltinExecutor::Ls
            | BuiltinExecutor::Glob
            | BuiltinExecutor::Grep
            | BuiltinExecutor::Artifact => {
                if let Some(files) = &self.client_files
                    && let Some(result) =
                        crate::client_files::run(files.as_ref(), &self.workspace, builtin, call)
                            .await
                {
                    return Ok(result);
                }
                match run_file_tool(self.workspace.clone(), builtin, call).await? {
                    Ok(o) => Ok(file_result(o)),
                    Err(e @ evoflux_tools::ToolError::ProtectedControl { .. }) => {
                        self.change_control(call, builtin, e).await
                    }
                    Err(e) => Ok(ToolResult::error(e.to_string())),
                }
            }
            BuiltinExecutor::Todo => Ok(self.todo.apply(&call.arguments)),
            BuiltinExecutor::ConnectionSearch => self.connection_search(call).await,
            BuiltinExecutor::ScheduleTask => Ok(match &self.schedules_dir {
                Some(dir) => crate::schedule_task::apply(
                    dir,
                    &self.session.id.to_string(),
                    match self.session.mode() {
                        evoflux_core::AppMode::Coding => self
                            .workspace
                            .roots()
                            .first()
                            .map(std::path::PathBuf::as_path),
                        evoflux_core::AppMode::Work => None,
                    },
                    &call.arguments,
                ),
                None => ToolResult::error("this session cannot schedule tasks"),
            }),
            BuiltinExecutor::WebFetch => Ok(match &self.web {
                Some(web) => command_result(web.run(&call.arguments).await),
                None => ToolResult::error("network tools are turned off for this session"),
            }),
            BuiltinExecutor::Shell | BuiltinExecutor::Process => Ok(self
                .run_process_tool(call, &ToolExecutor::Builtin { executor: builtin })
                .await),
            BuiltinExecutor::Skill => {
                let Some(rt) = self.skills.clone() else {
                    return Ok(ToolResult::error(format!(
                        "`{}` is not available in this session.",
                        call.name
                    )));
                };
                // The batch is the assistant message whose calls run now.
                let batch: &[ToolCall] = self
                    .recorder
                    .messages
                    .iter()
                    .rev()
                    .find_map(|m| match m {
                        Message::Assistant { tool_calls, .. } => Some(tool_calls.as_slice()),
                        Message::System { .. } | Message::User { .. } | Message::Tool { .. } => {
                            None
                        }
                    })
                    .unwrap_or(&[]);
                let tools = &self.tools;
                let is_skill_call = |c: &ToolCall| {
                    tools.get(&c.name).is_some_and(|t| {
                        t.kind == PreparedKind::Ordinary(Executor::Builtin(BuiltinExecutor::Skill))
                    })
                };
                let result = rt.execute_tool(
                    call,
                    crate::skills::tool::Batch {
                        calls: batch,
                        is_skill_call: &is_skill_call,
                    },
                );
                self.sync_skill_tools();
                Ok(result)
            }
            BuiltinExecutor::Verify => Ok(self.run_check(call).await),
            BuiltinExecutor::CodeContext => {
                let Some(nav) = self.code.clone() else {
                    return Ok(ToolResult::error(format!(
                        "`{}` navigates the repositories of a Coding session; this session has none.",
                        call.name
                    )));
                };
                let args = call.arguments.clone();
                let out = tokio::task::spawn_blocking(move || nav.run(&args))
                    .await
                    .map_err(|e| HarnessError::Join(e.to_string()))?;
                Ok(file_result(out))
            }
        }
    }

    /// For a `code_context` call the schema refused because its symbol is
    /// prose: the service's own refusal, with the index's names among its
    /// words, so the model can retry with one of them.
    async fn code_context_hint(&self, arguments: &Value) -> Result<Option<String>, HarnessError> {
        let Some(nav) = self.code.clone() else {
            return Ok(None);
        };
        let Some(symbol) = arguments
            .get("symbol")
            .and_then(Value::as_str)
            .filter(|s| !evoflux_core::code_operation::is_symbol(s))
        else {
            return Ok(None);
        };
        let args = serde_json::json!({"operation": "definition", "symbol": symbol});
        let out = tokio::task::spawn_blocking(move || nav.run(&args))
            .await
            .map_err(|e| HarnessError::Join(e.to_string()))?;
        Ok(out.is_error.then_some(out.text))
    }

    /// Makes the tools skill activations turned on part of the session and
    /// grants the MCP servers of plugin skills that were loaded.
    pub(super) fn sync_skill_tools(&mut self) {
        let Some(rt) = self.skills.clone() else {
            return;
        };
        crate::skills::apply_tool_activations(&rt, &mut self.tools, &mut self.reserve);
        for installation in rt.take_plugin_grants() {
            self.grant_plugin_mcp(&installation);
        }
    }
}

pub(super) enum CallOutcome {
    Result(ToolResult),
    Final(Value),
    Question(PendingQuestion),
}

/// Runs a synchronous file tool on a blocking thread.
async fn run_file_tool(
    ws: evoflux_tools::Workspace,
    builtin: BuiltinExecutor,
    call: &ToolCall,
) -> Result<Result<evoflux_tools::ToolOutput, evoflux_tools::ToolError>, HarnessError> {
    let args = call.arguments.clone();
    tokio::task::spawn_blocking(move || evoflux_tools::execute(&ws, builtin, &args))
        .await
        .map_err(|e| HarnessError::Join(e.to_string()))
}

/// A file tool's output as a tool result (file tools carry no metadata).
fn file_result(o: evoflux_tools::ToolOutput) -> ToolResult {
    ToolResult {
        content: o.text,
        is_error: o.is_error,
        metadata: None,
    }
}

/// The user's answer, as far as the subject allows.
enum Asked {
    /// With the scope of an "always" answer, if any.
    Approved(Option<GrantScope>),
    Denied(String),
}
