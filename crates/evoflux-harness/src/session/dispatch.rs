//! Dispatch: a call of the agent's delegation tool runs the task as a
//! child session — the same engine, the same store (with the parent and
//! the dispatching call recorded), the parent's workspace, the target's own
//! tools, prompt and model — and returns the child's final answer as the
//! tool result. The child's events reach the parent's sink wrapped with
//! the call ([`Event::Child`]).
//!
//! A call whose child already exists (the parent was interrupted and
//! resumed) re-attaches to it: a child that finished is not run again, its
//! answer is returned; one that did not finish continues its turn.

use std::sync::Arc;

use evoflux_model::{Message, ToolCall};
use evoflux_store::SessionParent;
use serde_json::Value;

use super::{Harness, RunSetup, SessionRequest, TurnOptions};
use crate::error::HarnessError;
use crate::events::{ChildEvents, Event, ToolResult, TurnStatus};
use crate::prepared::DispatchTarget;

impl Harness {
    pub(super) async fn dispatch(
        &mut self,
        call: &ToolCall,
        targets: &[DispatchTarget],
    ) -> Result<ToolResult, HarnessError> {
        let Some(team) = self.team.clone() else {
            return Ok(ToolResult::error(format!(
                "`{}` cannot hand tasks to other agents in this session.",
                call.name
            )));
        };
        let Some(message) = call
            .arguments
            .get("message")
            .and_then(Value::as_str)
            .filter(|m| !m.trim().is_empty())
        else {
            return Ok(ToolResult::error(
                "`message` must be the whole task, as text.",
            ));
        };
        let asked = call.arguments.get("agent_id").and_then(Value::as_str);
        let target = targets.iter().find(|t| match (t, asked) {
            (DispatchTarget::SelfAgentCall, None) => true,
            (DispatchTarget::SubagentCall { agent, .. }, Some(name)) => agent == name,
            (DispatchTarget::SelfAgentCall, Some(_))
            | (DispatchTarget::SubagentCall { .. }, None) => false,
        });
        let agent = match target {
            Some(DispatchTarget::SelfAgentCall) => Some(self.agent.clone()),
            Some(DispatchTarget::SubagentCall { agent, .. }) => {
                team.members.iter().find(|m| &m.name == agent).cloned()
            }
            None => None,
        };
        let Some(agent) = agent else {
            let names: Vec<&str> = targets
                .iter()
                .filter_map(|t| match t {
                    DispatchTarget::SubagentCall { agent, .. } => Some(agent.as_str()),
                    DispatchTarget::SelfAgentCall => None,
                })
                .collect();
            return Ok(ToolResult::error(format!(
                "There is no member `{}` in this team. Members: {}.",
                asked.unwrap_or_default(),
                if names.is_empty() {
                    "none (leave agent_id out to hand the task to a fresh copy of yourself)"
                        .to_owned()
                } else {
                    names.join(", ")
                }
            )));
        };
        let store = self.recorder.store.clone();
        let existing = store.child_of(self.session.id, &call.id).await?;
        if let Some(child) = &existing
            && let Some(answer) = finished_answer(&store.transcript(child.id).await?)
        {
            return Ok(ToolResult::ok(answer));
        }
        let model = match team.children.model(&agent) {
            Ok(m) => m,
            Err(e) => {
                return Ok(ToolResult::error(format!(
                    "the agent `{}` cannot start: {e}",
                    agent.name
                )));
            }
        };
        let (pipeline, skills) = team.children.parts(self.session.mode())?;
        let name = agent.name.clone();
        let setup = RunSetup {
            store,
            provider: model.provider,
            model: model.model,
            model_label: model.label,
            agent,
            catalog: team.catalog.clone(),
            pipeline,
            clock: Arc::clone(&self.clock),
            events: Arc::new(ChildEvents {
                parent: Arc::clone(&self.recorder.events),
                call_id: call.id.clone(),
            }),
            approver: Arc::clone(&self.approver),
            limits: self.limits,
            // Nobody answers a child's question; it ends with its answer.
            can_request_input: false,
            network: team.network,
            processes: self.commands.processes.clone(),
            artifacts_root: self
                .artifacts_dir
                .parent()
                .map(std::path::Path::to_path_buf)
                .unwrap_or_default(),
            mcp: self.mcp.runtime.clone(),
            mcp_call_timeout: self.mcp_call_timeout,
            skills,
            approvals: self.approvals.clone(),
            sandbox: self.sandbox.clone(),
            team: None,
        };
        let (request, input) = match existing {
            Some(child) => (
                SessionRequest::Resume {
                    id: child.id,
                    mode: None,
                    workspace: None,
                },
                None,
            ),
            None => (
                SessionRequest::Child {
                    parent: SessionParent {
                        session_id: self.session.id,
                        call_id: call.id.clone(),
                    },
                    workspace: self.session.workspace.clone(),
                    graph_hash: self.session.graph_hash.clone(),
                },
                Some(message),
            ),
        };
        let mut child = Harness::open(setup, request).await?;
        let child_id = child.session().id.to_string();
        self.emit(&Event::DispatchStarted {
            call_id: call.id.clone(),
            agent: name.clone(),
            child_session_id: child_id.clone(),
        });
        let turn: std::pin::Pin<Box<dyn Future<Output = _> + '_>> =
            Box::pin(child.turn(input, TurnOptions::default()));
        let outcome = turn.await;
        let (status, result) = match outcome {
            Ok(o) => {
                let result = match o.status {
                    TurnStatus::Completed => ToolResult::ok(o.text),
                    TurnStatus::LimitReached => ToolResult::error(format!(
                        "`{name}` stopped at its limit of model calls before finishing; what it \
                         said last: {}",
                        o.text
                    )),
                    TurnStatus::OutputMissing | TurnStatus::WaitingForInput => {
                        ToolResult::error(format!(
                            "`{name}` ended without an answer; what it said last: {}",
                            o.text
                        ))
                    }
                };
                (o.status, result)
            }
            Err(e) => (
                TurnStatus::LimitReached,
                ToolResult::error(format!("`{name}` failed: {e} [{}]", e.code())),
            ),
        };
        self.emit(&Event::DispatchEnded {
            call_id: call.id.clone(),
            agent: name,
            child_session_id: child_id,
            status,
            is_error: result.is_error,
        });
        Ok(result)
    }
}

/// The answer of a child whose last message is the assistant's final text
/// (no tool calls pending), if it finished.
fn finished_answer(transcript: &[evoflux_store::TranscriptEntry]) -> Option<String> {
    match &transcript.last()?.message {
        Message::Assistant {
            content,
            tool_calls,
            ..
        } if tool_calls.is_empty() => Some(content.clone()),
        Message::Assistant { .. }
        | Message::System { .. }
        | Message::User { .. }
        | Message::Tool { .. } => None,
    }
}
