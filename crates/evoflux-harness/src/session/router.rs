//! Routing one tool call by its prepared handling: arguments checked,
//! hooks and approval asked, then an exhaustive switch on the prepared
//! kind. A built-in tool's own part (its argument hint, the command its
//! approval judges, its execution) is its handler's ([`crate::tools`]),
//! which this asks; nothing here selects behavior by a tool's name.

use std::path::Path;
use std::sync::Arc;

use evoflux_graph::tool::InputRequest;
use evoflux_model::ToolCall;
use evoflux_tools::files::FileTool;
use serde_json::Value;

use super::{Harness, PendingQuestion, pending_request_of};
use crate::approval::{
    ApprovalDecision, ApprovalRequest, ApprovalSubject, Decided, Gate, Remember, gate,
};
use crate::error::HarnessError;
use crate::events::{Event, ToolResult};
use crate::hooks::ToolGate;
use crate::prepared::{Executor, PreparedKind};
use crate::terminal::{FINAL_OUTPUT, TerminalOutput};
use crate::tools::{file_result, run_file_tool};
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
            // A tool of the agent's that this session leaves out says why
            // (a delegation tool at the last level of the dispatch tree).
            if let Some(left_out) = self.tools.unavailable.iter().find(|u| u.tool == call.name) {
                return Ok(CallOutcome::Result(ToolResult::error(
                    match left_out.code {
                        Some(code) => format!(
                            "`{}` is not offered in this session: {} [{code}]",
                            call.name, left_out.reason
                        ),
                        None => format!(
                            "`{}` is not offered in this session: {}",
                            call.name, left_out.reason
                        ),
                    },
                )));
            }
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
        let handler = tool.builtin();
        if let Err(e) = tool.check_arguments(&call.arguments) {
            let hint = match handler {
                Some(h) => h.argument_hint(self, &call.arguments).await?,
                None => None,
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
        let shell = handler
            .and_then(|h| h.gated_command(&call.arguments))
            .map(|c| (c.command, c.outside_sandbox));
        // The mode the user switched the session to, over the settings.
        let approval = match self.approvals.mode.get().applied(
            &call.name,
            tool.definition.behavior.action_class,
            approval,
            shell,
        ) {
            Ok(approval) => approval,
            Err(reason) => return Ok(CallOutcome::Result(ToolResult::error(reason))),
        };
        let grant = GrantKey {
            tool: call.name.clone(),
            command: shell.map(|(command, _)| crate::safe_command::grant_command(command)),
        };
        // Claude Code's permission rules: a deny refuses, an ask asks
        // unless the user's own [approval] names the tool, an allow stands
        // in for an "always" answer (`permission_rules`' module docs).
        let ruled = if self.approvals.rules.is_empty() {
            None
        } else {
            let facts = crate::permission_rules::CallFacts {
                tool: &call.name,
                class: tool.definition.behavior.action_class,
                command: shell.map(|(command, _)| command),
                names_paths: crate::tool_paths::declares_paths(&tool.definition),
                paths: crate::tool_paths::path_arguments(&tool.definition, &call.arguments)
                    .into_iter()
                    .filter_map(|a| self.workspace.resolve(a).ok().map(|r| r.path))
                    .collect(),
                url: call.arguments.get("url").and_then(Value::as_str),
            };
            self.approvals.rules.decide(&facts).cloned()
        };
        let effect = ruled.as_ref().map(|r| r.effect);
        if let Some(rule) = ruled
            .as_ref()
            .filter(|r| r.effect == crate::permission_rules::Effect::Deny)
        {
            let refusal = rule.refusal(&call.name);
            self.emit(&Event::Warning {
                code: crate::permission_rules::DENIED.to_owned(),
                message: refusal.clone(),
            });
            return Ok(CallOutcome::Result(ToolResult::error(refusal)));
        }
        let ask = match gate(approval, shell) {
            Gate::Run => {
                effect == Some(crate::permission_rules::Effect::Ask)
                    && !self.approvals.set.contains_key(&tool.definition.name)
                    && !self.grants.contains(&grant)
            }
            Gate::Refuse(reason) => return Ok(CallOutcome::Result(ToolResult::error(reason))),
            Gate::Ask { remembered } => {
                !(remembered
                    && (self.grants.contains(&grant)
                        || effect == Some(crate::permission_rules::Effect::Allow)))
            }
        };
        if ask {
            let subject = handler.map_or(ApprovalSubject::Call, |h| {
                h.approval_subject(&call.arguments)
            });
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
    ///
    /// The approver is asked before the event is emitted and awaited
    /// after ([`crate::approval::Approver::approve`]): the host's broker
    /// registers the call when asked, so a client that decides the moment
    /// it sees `approval_requested` finds it waiting.
    pub(crate) async fn ask(&self, call: &ToolCall, subject: ApprovalSubject) -> Asked {
        let (outside_sandbox, control) = match &subject {
            ApprovalSubject::Call => (None, None),
            ApprovalSubject::OutsideSandbox { justification } => {
                (Some(justification.clone()), None)
            }
            ApprovalSubject::Control { path, .. } => (None, Some(path.clone())),
            // Asked by the MCP call's listener, never for a call itself.
            ApprovalSubject::Sampling { .. } => (None, None),
        };
        let remember = subject.remember();
        let workdir = self
            .tools
            .get(&call.name)
            .and_then(|t| t.workdir(&call.arguments, &self.workspace));
        let request = ApprovalRequest {
            session_id: self.session.id.to_string(),
            call_id: call.id.clone(),
            tool: call.name.clone(),
            arguments: call.arguments.clone(),
            subject,
            workdir: workdir.clone(),
        };
        *self
            .awaiting_approval
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = Some(call.id.clone());
        let decided = self.approver.approve(&request);
        self.emit(&Event::ApprovalRequested {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            outside_sandbox,
            control,
            workdir: workdir.map(|w| w.display().to_string()),
            sampling: None,
        });
        let Decided { decision, by } = decided.await;
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
    pub(crate) async fn change_control(
        &mut self,
        call: &ToolCall,
        run: FileTool,
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
        Ok(match run_file_tool(ws, run, call).await? {
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
        match executor {
            Executor::Builtin(builtin) => crate::tools::handler(builtin).execute(self, call).await,
            Executor::Command(command) => {
                let rt = match self.processes_for(call) {
                    Ok(rt) => rt,
                    Err(refused) => return Ok(refused),
                };
                let out = rt
                    .run_command_tool(self.session.id, &self.workspace, &command, &call.arguments)
                    .await;
                Ok(self.command_finished(out, false))
            }
            Executor::Mcp { qualified_name } => Ok({
                // What the server sends during the call comes to this
                // session: progress, logs, sampling, forms.
                let server = self
                    .mcp
                    .tools
                    .get(&qualified_name)
                    .map(|d| d.server.clone())
                    .unwrap_or_default();
                let (context, listener) = self.mcp_call_context(&call.id, &call.name, &server);
                let over = super::mcp_live::CallOver(Arc::clone(&listener));
                let answered = self
                    .mcp
                    .tools
                    .call_tool_in(
                        &qualified_name,
                        call.arguments.clone(),
                        self.mcp.call_timeout,
                        Some(context),
                    )
                    .await;
                drop(over);
                self.mcp_call_ended(&listener);
                match answered {
                    Ok(r) => {
                        let (content, media) = r.to_text_and_media();
                        ToolResult {
                            content,
                            is_error: r.is_error,
                            metadata: None,
                            media,
                        }
                    }
                    Err(e) => ToolResult::error(format!("{} [{}]", e, e.code())),
                }
            }),
        }
    }

    /// Makes the tools skill activations turned on part of the session and
    /// grants the MCP servers of plugin skills that were loaded.
    pub(crate) fn sync_skill_tools(&mut self) {
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

/// The user's answer, as far as the subject allows.
pub(crate) enum Asked {
    /// With the scope of an "always" answer, if any.
    Approved(Option<GrantScope>),
    Denied(String),
}

/// What a built-in tool's handler ([`crate::tools`]) reaches of its
/// session, besides the session's own public face.
impl Harness {
    /// The session's workspace, whose rules every file tool keeps.
    pub(crate) fn workspace(&self) -> &evoflux_tools::Workspace {
        &self.workspace
    }

    /// Tells the front ends what a handler did that they show (a preview
    /// that serves or stopped).
    pub(crate) fn emit_event(&self, event: &Event) {
        self.emit(event);
    }

    /// The front end's client's file system, where it offers one.
    pub(crate) fn client_files(&self) -> Option<Arc<dyn crate::client_files::ClientFiles>> {
        self.client_files.clone()
    }

    /// The lead's task list.
    pub(crate) fn todo_mut(&mut self) -> &mut crate::tools::todo::TodoList {
        &mut self.builtin_state.todo
    }

    /// The user's schedules folder `schedule_task` writes to.
    pub(crate) fn schedules_dir(&self) -> Option<&Path> {
        self.schedules_dir.as_deref()
    }

    /// The session's web client, when network tools may run.
    pub(crate) fn web(&self) -> Option<&evoflux_tools::web_fetch::WebFetch> {
        self.web.as_ref()
    }

    /// The session's skill runtime.
    pub(crate) fn skill_runtime(&self) -> Option<Arc<crate::skills::SkillRuntime>> {
        self.skills.clone()
    }

    /// `code_context`'s navigator (Coding sessions).
    pub(crate) fn code_navigator(&self) -> Option<evoflux_tools::CodeNavigator> {
        self.code.clone()
    }

    /// The registered check commands `verify` runs.
    pub(crate) fn checks(&self) -> Option<&Arc<evoflux_fleet::CommandRegistry>> {
        self.checks.as_ref()
    }
}
