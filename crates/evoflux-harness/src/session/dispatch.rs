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

use evoflux_agents::contract::evidence::{DiskFilesystem, RunEvidence, ValidationContext};
use evoflux_agents::contract::repair::{RESULT_CONTRACT_REPAIR_LIMIT, repair_message};
use evoflux_agents::contract::shape::result_contract_shape;
use evoflux_agents::contract::validate::{Conformance, validate_recipe_result};
use evoflux_agents::team::worker_agent_config;
use evoflux_agents::worker::admission::{MismatchDecision, assess_capability_mismatch};
use evoflux_agents::worker::compat::resolve_tool_compatibility;
use evoflux_agents::worker::spec::AgentSpec;

use std::collections::BTreeMap;
use std::time::Duration;

use evoflux_agents::team::EffectiveAgentConfig;
use evoflux_core::ids::SessionId;

use super::lineage::Callee;
use super::{
    BackgroundTask, Harness, RunSetup, SandboxSetup, SessionRequest, TeamSetup, TurnOptions,
};
use crate::error::HarnessError;
use crate::events::{ChildEvents, ContractOutcome, Event, ToolResult, TurnStatus};
use crate::prepared::DispatchTarget;
use crate::remote::{RemoteError, RemoteSession, RemoteStop, RemoteTurn};
use std::path::{Path, PathBuf};

/// The future of a dispatch, boxed and named: a dispatch runs a child's
/// turn, which may dispatch in turn, so the type must not be opaque.
pub(super) type DispatchFuture<'a> =
    std::pin::Pin<Box<dyn Future<Output = Result<ToolResult, HarnessError>> + Send + 'a>>;

/// What a session needs to dispatch: the team its dispatch tools reach,
/// the background tasks still running, and what its children get of it
/// that the session itself does not read.
#[derive(Debug)]
pub(super) struct Delegation {
    /// The team the dispatch tools reach (`None` in a child session).
    pub(super) team: Option<TeamSetup>,
    /// Background tasks still running, by the dispatching call's id.
    pub(super) tasks: BTreeMap<String, BackgroundTask>,
    /// The sandbox the session was set up with, for its children.
    pub(super) sandbox: Option<SandboxSetup>,
    /// Where `code_context` persists its indexes, for the children.
    pub(super) code_cache: Option<PathBuf>,
    /// The per-call timeout of MCP tools, for the children.
    pub(super) mcp_call_timeout: Duration,
    /// The Chromium the session's `browser` runs, for the children.
    pub(super) chromium: Option<PathBuf>,
}

impl Harness {
    /// Runs one dispatch call (see the module documentation).
    pub(super) fn dispatch<'a>(
        &'a mut self,
        call: &'a ToolCall,
        targets: &'a [DispatchTarget],
    ) -> DispatchFuture<'a> {
        Box::pin(self.run_dispatch(call, targets))
    }

    /// The task tools (`task_update`, `task_cancel`) answer at once; a
    /// call that hands a task to another agent goes through
    /// [`Harness::dispatch_task`], whose refusals are the call's result.
    async fn run_dispatch(
        &mut self,
        call: &ToolCall,
        targets: &[DispatchTarget],
    ) -> Result<ToolResult, HarnessError> {
        if targets.contains(&DispatchTarget::TaskUpdate) {
            return Ok(self.task_update(call));
        }
        if targets.contains(&DispatchTarget::TaskCancel) {
            return Ok(self.task_cancel(call).await);
        }
        match self.dispatch_task(call, targets).await {
            Ok(result) | Err(Early::Result(result)) => Ok(result),
            Err(Early::Failed(e)) => Err(e),
        }
    }

    /// The phases of a dispatch that hands a task to another agent: the
    /// request read (the team, the task), the target its `agent_id` names
    /// and the agent the child runs (an external agent is dispatched over
    /// its protocol instead), the fan-out and the
    /// worker's admission checked, a child an earlier run of the call
    /// opened found, the child's setup built and its tools checked, the
    /// child opened and run — in the background or to its result.
    async fn dispatch_task(
        &mut self,
        call: &ToolCall,
        targets: &[DispatchTarget],
    ) -> Result<ToolResult, Early> {
        let (team, message) = self.dispatch_request(call)?;
        let asked = call.arguments.get("agent_id").and_then(Value::as_str);
        let target = named_target(targets, asked);
        // Depth and cycles, before anything else is looked at.
        if let Some(callee) = target.and_then(callee)
            && let Err(refused) = team.lineage.admit(&self.agent.name, callee)
        {
            return Err(Early::Result(ToolResult::error(refused.message())));
        }
        if let Some(DispatchTarget::RemoteAgentCall { agent, .. }) = target {
            return Ok(self.remote_dispatch(call, &team, agent, message).await?);
        }
        let Some((agent, worker)) = self.child_agent(target, &team) else {
            return Err(Early::Result(no_such_member(targets, asked)));
        };
        let background = call.arguments.get("background") == Some(&Value::Bool(true));
        self.check_fan_out(background)?;
        // From here a child may run, recording its own calls.
        self.usage.dispatching();
        // Admission, before anything runs.
        let flag = match &worker {
            Some(spec) => admission(spec, message, &team.workers).map_err(Early::Result)?,
            None => None,
        };
        let earlier = self.earlier_child(call).await?;
        let name = agent.name.clone();
        let setup = self.child_setup(call, team, agent, worker.as_ref())?;
        if let Some(spec) = &worker {
            self.check_child_tools(spec, &setup, background)?;
        }
        let (request, input) = self.child_request(call, earlier, message, background);
        let child = Harness::open(setup, request).await?;
        let child_session = child.session().id;
        let child_id = child_session.to_string();
        self.emit(&Event::DispatchStarted {
            call_id: call.id.clone(),
            agent: name.clone(),
            child_session_id: child_id.clone(),
            parent_session_id: self.session.id.to_string(),
            depth: self.child_depth(),
        });
        let input = input.map(str::to_owned);
        let run = run_child(child, name.clone(), worker, flag, input);
        if background {
            return Ok(self.start_task(call, name, child_session, run));
        }
        let ended = run.await?;
        Ok(self.child_ended(&call.id, &name, &child_id, ended))
    }

    /// The team the call reaches and the task it hands over: refused in a
    /// session without a team, and for a `message` that is not the task
    /// as text.
    fn dispatch_request<'c>(&self, call: &'c ToolCall) -> Result<(TeamSetup, &'c str), Early> {
        let Some(team) = self.delegation.team.clone() else {
            return Err(Early::Result(ToolResult::error(format!(
                "`{}` cannot hand tasks to other agents in this session.",
                call.name
            ))));
        };
        let Some(message) = call
            .arguments
            .get("message")
            .and_then(Value::as_str)
            .filter(|m| !m.trim().is_empty())
        else {
            return Err(Early::Result(ToolResult::error(
                "`message` must be the whole task, as text.",
            )));
        };
        Ok((team, message))
    }

    /// The agent a child session runs for `target` (the lead itself, a
    /// team member, or a worker recipe run as an agent of its own, with
    /// its recipe); `None` when the team has no such agent.
    fn child_agent(
        &self,
        target: Option<&DispatchTarget>,
        team: &TeamSetup,
    ) -> Option<(EffectiveAgentConfig, Option<AgentSpec>)> {
        match target? {
            DispatchTarget::SelfAgentCall => Some((self.agent.clone(), None)),
            DispatchTarget::SubagentCall { agent, .. } => team
                .members
                .iter()
                .find(|m| &m.name == agent)
                .map(|m| (m.clone(), None)),
            DispatchTarget::WorkerCall { worker, .. } => {
                let spec = team.workers.iter().find(|w| &w.id == worker)?;
                Some((
                    worker_agent_config(spec, self.session.mode(), &team.catalog),
                    Some(spec.clone()),
                ))
            }
            DispatchTarget::TaskUpdate
            | DispatchTarget::TaskCancel
            | DispatchTarget::RemoteAgentCall { .. } => None,
        }
    }

    /// A background dispatch is refused once the session runs as many
    /// background tasks as it may at once.
    fn check_fan_out(&self, background: bool) -> Result<(), Early> {
        let running = self.delegation.tasks.len();
        if background && running >= self.limits.background_tasks {
            return Err(Early::Result(ToolResult::error(format!(
                "{running} background tasks are already running, the most one session runs at \
                 once; pause to collect their answers, or stop one with task_cancel, then \
                 dispatch again [dispatch/fan-out-limit]"
            ))));
        }
        Ok(())
    }

    /// The child an earlier run of this call opened (the parent was
    /// interrupted and resumed), if any: one that finished is not run
    /// again — its answer is the result — and one that did not is
    /// resumed, with the task only if it never got it (it may have been
    /// stopped between opening and recording it).
    async fn earlier_child(&self, call: &ToolCall) -> Result<Option<EarlierChild>, Early> {
        let store = &self.recorder.store;
        let Some(child) = store.child_of(self.session.id, &call.id).await? else {
            return Ok(None);
        };
        let transcript = store.transcript(child.id).await?;
        if let Some(answer) = finished_answer(&transcript) {
            return Err(Early::Result(ToolResult::ok(answer)));
        }
        let given = transcript
            .iter()
            .any(|e| matches!(e.message, Message::User { .. }));
        Ok(Some(EarlierChild {
            id: child.id,
            given,
        }))
    }

    /// What the child runs with: its agent's own model and a fresh
    /// pipeline (an agent whose model cannot start is refused), the
    /// parent's store, clock, approver, command runtime, MCP servers,
    /// approval policy, sandbox and checks, its events wrapped with the
    /// call. A child never asks the user and writes no schedules; it
    /// dispatches the same team one level down (offered the delegation
    /// tool, with the team's roster, only above the last level), within
    /// what is left of this turn's model and tool calls.
    fn child_setup(
        &self,
        call: &ToolCall,
        team: TeamSetup,
        agent: EffectiveAgentConfig,
        worker: Option<&AgentSpec>,
    ) -> Result<RunSetup, Early> {
        let model = match team.children.model(&agent) {
            Ok(m) => m,
            Err(e) => {
                return Err(Early::Result(ToolResult::error(format!(
                    "the agent `{}` cannot start: {e}",
                    agent.name
                ))));
            }
        };
        let (mut pipeline, skills) = team
            .children
            .parts(self.session.mode())
            .map_err(HarnessError::from)?;
        let child_team = TeamSetup {
            lineage: team.lineage.below(&self.agent.name),
            ..team
        };
        // Only an agent that may still hand tasks down reads the roster.
        if crate::team_roster::delegates(&agent, &child_team.catalog)
            && child_team.lineage.last_level().is_none()
        {
            let roster = child_team.roster();
            if !roster.is_empty() {
                crate::team_roster::register(&mut pipeline, roster).map_err(HarnessError::from)?;
            }
        }
        Ok(RunSetup {
            store: self.recorder.store.clone(),
            provider: model.provider,
            model: model.model,
            model_label: model.label,
            price: model.price,
            agent,
            catalog: child_team.catalog.clone(),
            pipeline,
            clock: Arc::clone(&self.clock),
            events: Arc::new(ChildEvents {
                parent: Arc::clone(&self.recorder.events),
                call_id: call.id.clone(),
            }),
            approver: Arc::clone(&self.approver),
            limits: self.limits.for_worker(worker).within(self.remaining()),
            // Nobody answers a child's question; it ends with its answer.
            can_request_input: false,
            network: child_team.network,
            processes: self.commands.processes.clone(),
            artifacts_root: self
                .artifacts_dir
                .parent()
                .map(std::path::Path::to_path_buf)
                .unwrap_or_default(),
            mcp: self.mcp.runtime.clone(),
            mcp_call_timeout: self.delegation.mcp_call_timeout,
            skills,
            approvals: self.approvals.clone(),
            sandbox: self.delegation.sandbox.clone(),
            team: Some(child_team),
            checks: self.checks.clone(),
            schedules_dir: None,
            code_cache: self.delegation.code_cache.clone(),
            chromium: self.delegation.chromium.clone(),
        })
    }

    /// Tool compatibility after narrowing: a worker whose required tools
    /// the child `setup` would not be offered is refused before it opens,
    /// with why each one is missing.
    fn check_child_tools(
        &self,
        spec: &AgentSpec,
        setup: &RunSetup,
        background: bool,
    ) -> Result<(), Early> {
        let caps = super::open::capabilities(setup, false, background);
        let prepared = crate::prepared::PreparedTools::prepare(
            &setup.catalog,
            &setup.agent.tools,
            self.session.mode(),
            &caps,
        );
        match tool_incompatibility(spec, &prepared) {
            Some(refused) => Err(Early::Result(ToolResult::error(refused))),
            None => Ok(()),
        }
    }

    /// Which session the child runs in and the message its turn starts
    /// with: the `earlier` child resumed (given the task only if it never
    /// got it), or a new child sharing this session's workspace, recording
    /// this session and the call as its parent.
    fn child_request<'m>(
        &self,
        call: &ToolCall,
        earlier: Option<EarlierChild>,
        message: &'m str,
        background: bool,
    ) -> (SessionRequest, Option<&'m str>) {
        match earlier {
            Some(child) => (
                SessionRequest::Resume {
                    id: child.id,
                    mode: None,
                    workspace: None,
                },
                (!child.given).then_some(message),
            ),
            None => (
                SessionRequest::Child {
                    parent: SessionParent {
                        session_id: self.session.id,
                        call_id: call.id.clone(),
                    },
                    workspace: self.session.workspace.clone(),
                    graph_hash: self.session.graph_hash.clone(),
                    task: background,
                },
                Some(message),
            ),
        }
    }

    /// Runs the child as a background task, which the lead collects at its
    /// next pause ([`Harness::deliver_tasks`]); the call's result says so.
    fn start_task(
        &mut self,
        call: &ToolCall,
        name: String,
        child_session: SessionId,
        run: impl Future<Output = Result<ChildEnd, HarnessError>> + Send + 'static,
    ) -> ToolResult {
        self.delegation.tasks.insert(
            call.id.clone(),
            BackgroundTask {
                agent: name.clone(),
                child_session_id: child_session,
                handle: tokio::spawn(run),
            },
        );
        ToolResult::ok(format!(
            "Started background task `{}` ({name}, session {child_session}). Keep working: its \
             answer arrives when you pause; task_cancel stops it.",
            call.id
        ))
    }

    /// The depth this session's children run at (1 for the session the
    /// user started).
    fn child_depth(&self) -> u32 {
        self.delegation
            .team
            .as_ref()
            .map_or(0, |t| t.lineage.depth())
            .saturating_add(1)
    }

    /// What is left of this turn's model and tool calls, which bounds a
    /// child's own.
    fn remaining(&self) -> (u32, u32) {
        self.limits
            .left_after((self.turn.model_calls_used, self.turn.tool_calls_used))
    }

    /// Reports a child's end and returns its result.
    fn child_ended(
        &mut self,
        call_id: &str,
        agent: &str,
        child_session_id: &str,
        ended: ChildEnd,
    ) -> ToolResult {
        if ended.contract == Some(ContractOutcome::Exhausted) {
            self.turn.unmet.push(super::UnmetContract {
                agent: agent.to_owned(),
                child_session_id: child_session_id.to_owned(),
                repairs: ended.repairs,
            });
        }
        self.emit(&Event::DispatchEnded {
            call_id: call_id.to_owned(),
            agent: agent.to_owned(),
            child_session_id: child_session_id.to_owned(),
            parent_session_id: self.session.id.to_string(),
            depth: self.child_depth(),
            status: ended.status,
            is_error: ended.result.is_error,
            contract: ended.contract,
            repairs: ended.repairs,
        });
        ended.result
    }

    /// At a pause of the lead (a model reply without tool calls): waits for
    /// every background task and hands each answer to the lead as a
    /// message. `false` when there were none.
    pub(super) async fn deliver_tasks(&mut self) -> Result<bool, HarnessError> {
        if self.delegation.tasks.is_empty() {
            return Ok(false);
        }
        let tasks = std::mem::take(&mut self.delegation.tasks);
        for (id, mut task) in tasks {
            let ended = match (&mut task.handle).await {
                Ok(ended) => ended?,
                Err(e) => ChildEnd {
                    status: TurnStatus::LimitReached,
                    result: ToolResult::error(format!("`{}` stopped: {e}", task.agent)),
                    contract: None,
                    repairs: 0,
                },
            };
            let result =
                self.child_ended(&id, &task.agent, &task.child_session_id.to_string(), ended);
            let message = Message::user(format!(
                "[evoflux] Background task `{id}` ({}) {}:\n{}",
                task.agent,
                if result.is_error {
                    "failed"
                } else {
                    "finished"
                },
                result.content
            ));
            self.recorder.append(message, None).await?;
        }
        Ok(true)
    }

    /// `task_cancel`: stops the named background tasks and every command
    /// they started.
    async fn task_cancel(&mut self, call: &ToolCall) -> ToolResult {
        let ids: Vec<String> = call
            .arguments
            .get("task_ids")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        let mut lines = Vec::new();
        for id in ids {
            match self.delegation.tasks.remove(&id) {
                Some(task) => {
                    task.handle.abort();
                    if let Some(rt) = &self.commands.processes {
                        rt.terminate_session(task.child_session_id).await;
                    }
                    self.emit(&Event::TaskCancelled {
                        call_id: id.clone(),
                        agent: task.agent.clone(),
                        child_session_id: task.child_session_id.to_string(),
                    });
                    lines.push(format!("cancelled `{id}` ({})", task.agent));
                }
                None => lines.push(format!("no running task `{id}`")),
            }
        }
        ToolResult::ok(lines.join("\n"))
    }

    /// `task_update` in a task child: the update goes to the parent's
    /// stream.
    fn task_update(&self, call: &ToolCall) -> ToolResult {
        let message = call
            .arguments
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        self.emit(&Event::TaskUpdate { message });
        ToolResult::ok("The parent has your update; carry on.")
    }
}

/// A dispatch that ends before its child runs: with the call's result (a
/// refusal the model reads, or the answer of a child that already
/// finished), or with an error of the session.
enum Early {
    Result(ToolResult),
    Failed(HarnessError),
}

impl From<HarnessError> for Early {
    fn from(e: HarnessError) -> Early {
        Early::Failed(e)
    }
}

impl From<evoflux_store::StoreError> for Early {
    fn from(e: evoflux_store::StoreError) -> Early {
        Early::Failed(e.into())
    }
}

/// A child an earlier run of the dispatching call opened and that did not
/// finish.
struct EarlierChild {
    id: SessionId,
    /// Its transcript already has the task.
    given: bool,
}

/// The target among `targets` that a call's `agent_id` (`asked`) names:
/// none names the lead itself (a fresh copy of it), a name names the
/// member, worker or external agent of that id.
fn named_target<'t>(
    targets: &'t [DispatchTarget],
    asked: Option<&str>,
) -> Option<&'t DispatchTarget> {
    targets.iter().find(|t| match (t, asked) {
        (DispatchTarget::SelfAgentCall, None) => true,
        (DispatchTarget::SubagentCall { agent, .. }, Some(name)) => agent == name,
        (DispatchTarget::WorkerCall { worker, .. }, Some(name)) => worker == name,
        (DispatchTarget::RemoteAgentCall { agent, .. }, Some(name)) => agent == name,
        (DispatchTarget::SelfAgentCall, Some(_))
        | (
            DispatchTarget::SubagentCall { .. }
            | DispatchTarget::WorkerCall { .. }
            | DispatchTarget::RemoteAgentCall { .. },
            None,
        )
        | (DispatchTarget::TaskUpdate | DispatchTarget::TaskCancel, _) => false,
    })
}

/// Whom a dispatch to `target` hands its task to, for the lineage's
/// admission rule; `None` for the task controls, which hand nothing.
fn callee(target: &DispatchTarget) -> Option<Callee<'_>> {
    match target {
        DispatchTarget::SelfAgentCall => Some(Callee::SelfCopy),
        DispatchTarget::SubagentCall { agent, .. }
        | DispatchTarget::RemoteAgentCall { agent, .. } => Some(Callee::Named(agent)),
        DispatchTarget::WorkerCall { worker, .. } => Some(Callee::Named(worker)),
        DispatchTarget::TaskUpdate | DispatchTarget::TaskCancel => None,
    }
}

/// The refusal of an `agent_id` (`asked`) that names no agent among
/// `targets`, with the names there are.
fn no_such_member(targets: &[DispatchTarget], asked: Option<&str>) -> ToolResult {
    let names: Vec<&str> = targets
        .iter()
        .filter_map(|t| match t {
            DispatchTarget::SubagentCall { agent, .. } => Some(agent.as_str()),
            DispatchTarget::WorkerCall { worker, .. } => Some(worker.as_str()),
            DispatchTarget::RemoteAgentCall { agent, .. } => Some(agent.as_str()),
            DispatchTarget::SelfAgentCall
            | DispatchTarget::TaskUpdate
            | DispatchTarget::TaskCancel => None,
        })
        .collect();
    ToolResult::error(format!(
        "There is no member `{}` in this team. Members: {}.",
        asked.unwrap_or_default(),
        if names.is_empty() {
            "none (leave agent_id out to hand the task to a fresh copy of yourself)".to_owned()
        } else {
            names.join(", ")
        }
    ))
}

/// Admission of worker `spec` for `message` among `installed`: a worker
/// that cannot do what the task asks is refused before anything runs,
/// with the remedy (`Err`, the call's result); a doubtful fit is flagged
/// (`Ok(Some(detail))`), to be added to its answer.
fn admission(
    spec: &AgentSpec,
    message: &str,
    installed: &[AgentSpec],
) -> Result<Option<String>, ToolResult> {
    match assess_capability_mismatch(spec, message, installed, false) {
        None => Ok(None),
        Some(mismatch) => match mismatch.decision {
            MismatchDecision::Refuse => Err(ToolResult::error(format!(
                "{} [dispatch/admission-refused]",
                mismatch.detail
            ))),
            MismatchDecision::Flag => Ok(Some(mismatch.detail)),
        },
    }
}

/// Why worker `spec` cannot run with `prepared` (a required tool its
/// session would not be offered), with why each missing one is missing;
/// `None` when it can.
fn tool_incompatibility(
    spec: &AgentSpec,
    prepared: &crate::prepared::PreparedTools,
) -> Option<String> {
    let offered: Vec<&str> = prepared
        .iter()
        .map(|t| t.definition.name.as_str())
        .collect();
    let compat = resolve_tool_compatibility(spec, &offered, false);
    if compat.compatible {
        return None;
    }
    let missing: Vec<&String> = spec
        .tool_requirements
        .required
        .iter()
        .map(|r| r.members())
        .filter(|m| !m.iter().any(|t| offered.contains(&t.as_str())))
        .flatten()
        .collect();
    let why: Vec<String> = prepared
        .unavailable
        .iter()
        .filter(|u| missing.contains(&&u.tool))
        .map(|u| format!("{}: {}", u.tool, u.reason))
        .collect();
    Some(format!(
        "dispatch: admission denied: agent '{}' is incompatible with this session after tool \
         narrowing; missing required tools: {}{} [dispatch/admission-refused]",
        spec.id,
        compat.missing_required.join(", "),
        if why.is_empty() {
            String::new()
        } else {
            format!(" ({})", why.join("; "))
        }
    ))
}

/// How a child's run ended.
#[derive(Debug)]
pub(crate) struct ChildEnd {
    status: TurnStatus,
    result: ToolResult,
    contract: Option<ContractOutcome>,
    repairs: u32,
}

/// A worker session's answer to one task ([`Harness::worker_task`]).
#[derive(Debug, Clone, PartialEq)]
pub struct WorkerEnd {
    /// `Completed` when the worker answered and met its contract.
    pub status: TurnStatus,
    /// The answer, or why there is none.
    pub text: String,
    /// Whether the answer is the worker's (`false`: the text says why the
    /// run failed).
    pub answered: bool,
    pub contract: Option<ContractOutcome>,
    /// Result-contract repair rounds used.
    pub repairs: u32,
}

impl Harness {
    /// Runs `task` in this session as worker `spec` (opened as that worker
    /// by the application's session builder, `SessionBuilder::worker`), and
    /// checks the answer against the recipe's result contract with the
    /// same repair rounds a dispatched worker gets: a fleet's agent step
    /// goes through the one path a team's dispatch does.
    pub async fn worker_task(
        &mut self,
        spec: &AgentSpec,
        task: &str,
    ) -> Result<WorkerEnd, HarnessError> {
        if let Some(refused) = tool_incompatibility(spec, &self.tools) {
            return Ok(WorkerEnd {
                status: TurnStatus::OutputMissing,
                text: refused,
                answered: false,
                contract: None,
                repairs: 0,
            });
        }
        let name = spec.id.clone();
        let end = child_turn(self, &name, Some(spec), Some(task)).await?;
        Ok(WorkerEnd {
            status: end.status,
            answered: !end.result.is_error,
            text: end.result.content,
            contract: end.contract,
            repairs: end.repairs,
        })
    }
}

/// Runs a child's turn to its answer, checking a worker's against its
/// contract; owns the child, so it can run in the background.
async fn run_child(
    mut child: Harness,
    name: String,
    worker: Option<AgentSpec>,
    flag: Option<String>,
    input: Option<String>,
) -> Result<ChildEnd, HarnessError> {
    let mut end = child_turn(&mut child, &name, worker.as_ref(), input.as_deref()).await?;
    if let Some(flag) = flag {
        end.result.content = format!("{}\n\n[admission] {flag}", end.result.content);
    }
    Ok(end)
}

/// A child's turn and, for a worker, its contract check.
async fn child_turn(
    child: &mut Harness,
    name: &str,
    worker: Option<&AgentSpec>,
    input: Option<&str>,
) -> Result<ChildEnd, HarnessError> {
    let outcome = child.turn(input, TurnOptions::default()).await;
    let (mut status, mut result) = match outcome {
        Ok(o) => {
            let result = match o.status {
                TurnStatus::Completed => ToolResult::ok(o.text),
                TurnStatus::LimitReached => ToolResult::error(format!(
                    "`{name}` stopped at its limit of model calls before finishing; what it said \
                     last: {}",
                    o.text
                )),
                TurnStatus::CostLimitReached => {
                    ToolResult::error(format!("`{name}` stopped: {}", o.text))
                }
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
    let mut contract = None;
    let mut repairs = 0;
    if let Some(spec) = worker
        && status == TurnStatus::Completed
    {
        let checked =
            check_worker_result(Answerer::Local(child), spec, result.content.clone()).await?;
        contract = Some(checked.outcome);
        repairs = checked.repairs;
        status = checked.status;
        result = checked.result;
    }
    Ok(ChildEnd {
        status,
        result,
        contract,
        repairs,
    })
}

/// Checks a worker's answer against its recipe's result contract, with the
/// files of the workspace and the spans the child actually read; a failing
/// answer gets a repair round quoting the validator's reason and the exact
/// shape, at most [`RESULT_CONTRACT_REPAIR_LIMIT`] times. Each round: what
/// the answerer did is observed, the answer validated, then passed,
/// exhausted or asked to repair.
async fn check_worker_result(
    mut child: Answerer<'_>,
    spec: &AgentSpec,
    mut answer: String,
) -> Result<Checked, HarnessError> {
    let cwd = child.cwd();
    let mut repairs = 0;
    loop {
        let observed = child.observed();
        let Some(reason) = contract_failure(spec, &answer, &cwd, &observed) else {
            return Ok(Checked {
                outcome: ContractOutcome::Pass,
                repairs,
                status: TurnStatus::Completed,
                result: ToolResult::ok(answer),
            });
        };
        if repairs >= RESULT_CONTRACT_REPAIR_LIMIT {
            return Ok(exhausted(spec, repairs, &reason, &observed, &cwd));
        }
        repairs += 1;
        let message = repair_request(spec, repairs, &reason, &observed, &cwd);
        answer = match child.repair(&message).await? {
            Ok(answer) => answer,
            Err(e) => {
                return Ok(Checked {
                    outcome: ContractOutcome::Exhausted,
                    repairs,
                    status: TurnStatus::OutputMissing,
                    result: ToolResult::error(format!(
                        "`{}` failed in repair round {repairs}: {e} [{}]",
                        spec.id, e.code
                    )),
                });
            }
        };
    }
}

/// What an answerer did, which its answer is checked against.
struct Observed {
    /// What it read and wrote (unknown for a remote agent).
    evidence: RunEvidence,
    /// Whether it had a network posture that allows external research.
    network_allowed: bool,
}

impl Observed {
    /// The spans it read, per file.
    fn read(&self) -> impl Iterator<Item = (&PathBuf, &Vec<(u32, u32)>)> {
        self.evidence.read_spans.iter().flatten()
    }
}

/// `path` as the worker is told it: relative to its working directory
/// `cwd` when under it.
fn shown(path: &Path, cwd: &Path) -> String {
    path.strip_prefix(cwd).unwrap_or(path).display().to_string()
}

/// Why `answer` fails `spec`'s result contract, as the validator says;
/// `None` when it passes.
fn contract_failure(
    spec: &AgentSpec,
    answer: &str,
    cwd: &Path,
    observed: &Observed,
) -> Option<String> {
    let ctx = ValidationContext {
        cwd,
        network_allowed: observed.network_allowed,
        filesystem: &DiskFilesystem,
        evidence: &observed.evidence,
    };
    let validation = validate_recipe_result(Some(&spec.result_contract), Some(answer), true, &ctx)
        .and_then(|o| o.validation)?;
    match validation.conformance {
        Conformance::Pass => None,
        Conformance::Fail => Some(validation.reason.unwrap_or_default()),
    }
}

/// The end of a worker that did not meet its contract within the repair
/// rounds: why, with what it read.
fn exhausted(
    spec: &AgentSpec,
    repairs: u32,
    reason: &str,
    observed: &Observed,
    cwd: &Path,
) -> Checked {
    let read: Vec<String> = observed
        .read()
        .map(|(p, s)| {
            let ranges: Vec<String> = s.iter().map(|(a, b)| format!("{a}-{b}")).collect();
            format!("{}:{}", shown(p, cwd), ranges.join(","))
        })
        .collect();
    Checked {
        outcome: ContractOutcome::Exhausted,
        repairs,
        status: TurnStatus::OutputMissing,
        result: ToolResult::error(format!(
            "result_contract_exhausted: `{}` did not meet its result contract after \
                 {repairs} repair rounds: {reason} (the run read {})",
            spec.id,
            if read.is_empty() {
                "nothing".to_owned()
            } else {
                read.join("; ")
            }
        )),
    }
}

/// The message of repair round `round`: the validator's reason, the
/// contract's exact shape, and the places the worker read, to cite.
fn repair_request(
    spec: &AgentSpec,
    round: u32,
    reason: &str,
    observed: &Observed,
    cwd: &Path,
) -> String {
    let anchors: Vec<String> = observed
        .read()
        .flat_map(|(p, s)| {
            let shown = shown(p, cwd);
            s.iter().map(move |(a, _)| format!("{shown}:{a}"))
        })
        .collect();
    repair_message(
        round,
        reason,
        &result_contract_shape(&spec.result_contract),
        &anchors,
    )
}

/// Whose answer [`check_worker_result`] checks and asks to repair.
enum Answerer<'a> {
    /// A child session of this process, with what it read and wrote.
    Local(&'a mut Harness),
    /// A remote agent's session, working in `cwd`.
    Remote {
        session: &'a mut dyn RemoteSession,
        cwd: PathBuf,
    },
}

impl Answerer<'_> {
    /// Where it works: the contract's paths are relative to it.
    fn cwd(&self) -> PathBuf {
        match self {
            Answerer::Local(child) => child.workspace.roots()[0].clone(),
            Answerer::Remote { cwd, .. } => cwd.clone(),
        }
    }

    /// What it did so far.
    fn observed(&self) -> Observed {
        match self {
            Answerer::Local(child) => Observed {
                evidence: RunEvidence {
                    read_spans: Some(child.read_spans()),
                    effects: Some(child.run_effects()),
                },
                // External research needs a network posture the child
                // actually had.
                network_allowed: child.tools.iter().any(|t| {
                    child.offered(t)
                        && t.definition.behavior.action_class
                            == evoflux_graph::tool::ActionClass::Network
                }),
            },
            // What a remote agent read and wrote happened on the other side
            // of the protocol: the contract is checked on its answer and the
            // workspace as they are, and its own tools may reach the network.
            Answerer::Remote { .. } => Observed {
                evidence: RunEvidence {
                    read_spans: None,
                    effects: None,
                },
                network_allowed: true,
            },
        }
    }

    /// Its answer to a repair round's `message`. A remote agent that
    /// fails to answer is `Ok(Err(_))`, which ends the check; a local
    /// child's failure is the session's error.
    async fn repair(&mut self, message: &str) -> Result<Result<String, RemoteError>, HarnessError> {
        Ok(match self {
            Answerer::Local(child) => Ok(child
                .turn(Some(message), TurnOptions::default())
                .await?
                .text),
            Answerer::Remote { session, .. } => session.prompt(message).await.map(|t| t.text),
        })
    }
}

/// A worker's checked answer.
struct Checked {
    outcome: ContractOutcome,
    repairs: u32,
    status: TurnStatus,
    result: ToolResult,
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

impl Harness {
    /// A dispatch to external agent `name`: admitted and checked for tool
    /// compatibility as a worker is, started in its working directory over
    /// the Agent Client Protocol, its updates streamed into this session's
    /// events, its final message held to its result contract with the
    /// same repair rounds. It runs in the foreground: the answer is the
    /// call's result.
    async fn remote_dispatch(
        &mut self,
        call: &ToolCall,
        team: &TeamSetup,
        name: &str,
        message: &str,
    ) -> Result<ToolResult, HarnessError> {
        let (Some(remote), Some(runner)) = (
            team.remote.iter().find(|r| r.spec.id == name),
            team.remote_runner.as_ref(),
        ) else {
            return Ok(ToolResult::error(format!(
                "the external agent `{name}` cannot be reached from this session"
            )));
        };
        if call.arguments.get("background") == Some(&Value::Bool(true)) {
            return Ok(ToolResult::error(format!(
                "`{name}` is an external agent, which runs in the foreground: dispatch it again \
                 without `background` [dispatch/remote-foreground]"
            )));
        }
        let spec = &remote.spec;
        let installed: Vec<AgentSpec> = team
            .workers
            .iter()
            .cloned()
            .chain(team.remote.iter().map(|r| r.spec.clone()))
            .collect();
        let flag = match admission(spec, message, &installed) {
            Ok(flag) => flag,
            Err(refused) => return Ok(refused),
        };
        if let Some(refused) = tool_incompatibility(spec, &self.tools) {
            return Ok(ToolResult::error(refused));
        }
        // A scratch agent gets an empty folder of its own, gone after.
        let scratch;
        let cwd = match remote.launch.cwd {
            evoflux_core::external_agent::ExternalCwd::Workspace => {
                self.workspace.roots()[0].clone()
            }
            evoflux_core::external_agent::ExternalCwd::Scratch => {
                scratch = tempfile::Builder::new()
                    .prefix("evoflux-remote-")
                    .tempdir()
                    .map_err(|e| HarnessError::Join(format!("no scratch folder: {e}")))?;
                scratch.path().to_path_buf()
            }
        };
        let events = Arc::new(ChildEvents {
            parent: Arc::clone(&self.recorder.events),
            call_id: call.id.clone(),
        });
        let mut session = match runner
            .open(remote, &cwd, events, Arc::clone(&self.approver))
            .await
        {
            Ok(session) => session,
            Err(e) => {
                return Ok(ToolResult::error(format!(
                    "the external agent `{name}` cannot start: {e} [{}]",
                    e.code
                )));
            }
        };
        let child_id = session.id().to_owned();
        self.emit(&Event::DispatchStarted {
            call_id: call.id.clone(),
            agent: name.to_owned(),
            child_session_id: child_id.clone(),
            parent_session_id: self.session.id.to_string(),
            depth: self.child_depth(),
        });
        let mut ended = remote_turn(session.as_mut(), spec, message, cwd).await?;
        drop(session);
        if let Some(flag) = flag {
            ended.result.content = format!("{}\n\n[admission] {flag}", ended.result.content);
        }
        Ok(self.child_ended(&call.id, name, &child_id, ended))
    }
}

/// A remote agent's answer to `message` and its contract check.
async fn remote_turn(
    session: &mut dyn RemoteSession,
    spec: &AgentSpec,
    message: &str,
    cwd: PathBuf,
) -> Result<ChildEnd, HarnessError> {
    let name = &spec.id;
    let (status, result) = match session.prompt(message).await {
        // Nothing said is no answer, whatever the contract would accept.
        Ok(RemoteTurn {
            text,
            stop: RemoteStop::EndTurn,
        }) if text.trim().is_empty() => (
            TurnStatus::OutputMissing,
            ToolResult::error(format!(
                "`{name}` ended its turn without an answer [acp/empty-answer]"
            )),
        ),
        Ok(RemoteTurn {
            text,
            stop: RemoteStop::EndTurn,
        }) => (TurnStatus::Completed, ToolResult::ok(text)),
        Ok(RemoteTurn {
            text,
            stop: RemoteStop::MaxTokens | RemoteStop::MaxTurnRequests,
        }) => (
            TurnStatus::LimitReached,
            ToolResult::error(format!(
                "`{name}` stopped at its limit before finishing; what it said last: {text}"
            )),
        ),
        Ok(RemoteTurn {
            text,
            stop: RemoteStop::Refusal,
        }) => (
            TurnStatus::OutputMissing,
            ToolResult::error(format!("`{name}` refused the task: {text}")),
        ),
        Ok(RemoteTurn {
            stop: RemoteStop::Cancelled,
            ..
        }) => (
            TurnStatus::OutputMissing,
            ToolResult::error(format!("`{name}` cancelled its turn without an answer")),
        ),
        Err(e) => (
            TurnStatus::OutputMissing,
            ToolResult::error(format!("`{name}` failed: {e} [{}]", e.code)),
        ),
    };
    if status != TurnStatus::Completed {
        return Ok(ChildEnd {
            status,
            result,
            contract: None,
            repairs: 0,
        });
    }
    let checked =
        check_worker_result(Answerer::Remote { session, cwd }, spec, result.content).await?;
    Ok(ChildEnd {
        status: checked.status,
        result: checked.result,
        contract: Some(checked.outcome),
        repairs: checked.repairs,
    })
}
