//! Opening a session: create or resume it in the store, prepare its
//! tools, replay what the transcript makes durable (skill activations,
//! the todo list, result metadata) and report what the session runs with.

use std::sync::Arc;

use evoflux_core::AppMode;
use evoflux_tools::sandbox::{CommandSandbox, Confinement};

use crate::metadata::ResultMetadata;
use evoflux_graph::tool::BuiltinExecutor;
use evoflux_model::Message;
use evoflux_store::{NewSession, WorkspaceRequest};

use super::commands::SessionCommands;
use super::mcp::SessionMcp;
use super::recorder::Recorder;
use super::{Harness, RunSetup, SessionRequest};
use crate::error::HarnessError;
use crate::events::Event;
use crate::prepared::{Executor, PreparedKind, PreparedTools, SessionCapabilities};
use crate::todo::TodoList;
use evoflux_tools::web_fetch::{NetworkAccess, WebFetch};

impl Harness {
    /// Creates or resumes the session and prepares its tools.
    pub async fn open(setup: RunSetup, request: SessionRequest) -> Result<Harness, HarnessError> {
        let mut task_child = false;
        let (session, resumed, switched_from) = match request {
            SessionRequest::New {
                workspace,
                graph_hash,
            } => {
                let s = setup
                    .store
                    .create_session(NewSession {
                        workspace,
                        lead: Some(setup.agent.name.clone()),
                        model: Some(setup.model_label.clone()),
                        graph_hash,
                        parent: None,
                    })
                    .await?;
                // The commits its repositories are at, for a replay that
                // checks the same state out again.
                let heads = crate::replay::git_heads(s.workspace.roots());
                if !heads.is_empty() {
                    setup.store.set_session_commits(s.id, &heads).await?;
                }
                (s, false, None)
            }
            SessionRequest::Child {
                parent,
                workspace,
                graph_hash,
                task,
            } => {
                task_child = task;
                let s = setup
                    .store
                    .create_session(NewSession {
                        workspace: WorkspaceRequest::Shared(workspace),
                        lead: Some(setup.agent.name.clone()),
                        model: Some(setup.model_label.clone()),
                        graph_hash,
                        parent: Some(parent),
                    })
                    .await?;
                (s, false, None)
            }
            SessionRequest::Resume {
                id,
                mode,
                workspace,
            } => {
                let s = setup.store.resume(id, mode, workspace.as_deref()).await?;
                if let Some(persisted) = &s.lead
                    && persisted != &setup.agent.name
                {
                    return Err(HarnessError::LeadMismatch {
                        session: s.id,
                        persisted: persisted.clone(),
                        requested: setup.agent.name.clone(),
                    });
                }
                // The front end passes another model only when the user
                // asked for one: that switch is recorded for later resumes.
                match s.model.clone() {
                    Some(persisted) if persisted == setup.model_label => (s, true, None),
                    previous => {
                        let s = setup.store.set_model(s.id, &setup.model_label).await?;
                        (s, true, previous)
                    }
                }
            }
        };
        // Command journals and offloaded results land in the session's
        // artifacts folder; `read` reaches them by their `artifact:` locator.
        let mut workspace = evoflux_tools::Workspace::new(session.workspace.roots())
            .map_err(HarnessError::Workspace)?
            .with_artifacts(setup.artifacts_root.join(session.id.to_string()));
        if let Some(sandbox) = &setup.sandbox {
            let confinement = match session.mode() {
                AppMode::Coding => Confinement::Repositories,
                AppMode::Work => Confinement::SessionWorkspace,
            };
            let sandbox = CommandSandbox::new(
                sandbox.policy.clone(),
                confinement,
                workspace.roots().to_vec(),
                sandbox.hidden.clone(),
            )
            .map_err(HarnessError::Workspace)?;
            workspace = workspace.with_denied(sandbox.denied().clone());
            if let Some(processes) = &setup.processes {
                processes.confine(session.id, sandbox);
            }
        }
        let caps = capabilities(&setup, session.parent.is_none(), task_child);
        let mut tools =
            PreparedTools::prepare(&setup.catalog, &setup.agent.tools, session.mode(), &caps);
        if let Some(checks) = &setup.checks {
            tools.bind_checks(
                &checks
                    .iter()
                    .map(|c| {
                        (
                            c.id.clone(),
                            c.description.clone().unwrap_or_else(|| c.display()),
                        )
                    })
                    .collect::<Vec<_>>(),
            );
        }
        match &setup.team {
            Some(team) => {
                let members: Vec<(String, String)> = team
                    .members
                    .iter()
                    .map(|m| (m.name.clone(), m.description.clone()))
                    .collect();
                let workers: Vec<(String, String)> =
                    super::reachable_workers(&team.members, &team.workers)
                        .map(|w| {
                            (
                                w.id.clone(),
                                evoflux_agents::worker::roster::purpose(&w.description),
                            )
                        })
                        .collect();
                let remote: Vec<(String, String)> = team
                    .remote
                    .iter()
                    .map(|r| {
                        (
                            r.spec.id.clone(),
                            evoflux_agents::worker::roster::purpose(&r.spec.description),
                        )
                    })
                    .collect();
                tools.bind_team(&members, &workers, &remote);
            }
            None => tools.drop_dispatch("this session cannot open child sessions"),
        }
        let entries = setup.store.transcript(session.id).await?;
        // The one durable record of the tools `connection_search`
        // activated; a new session has none.
        let activated = setup.store.connection_tools(session.id).await?;
        let grants = setup
            .store
            .approval_grants(session.id, &session.workspace)
            .await?
            .into_iter()
            .collect();
        let result_metadata: std::collections::HashMap<String, ResultMetadata> = entries
            .iter()
            .filter_map(|e| match (&e.message, &e.artifact) {
                (Message::Tool { tool_call_id, .. }, Some(meta)) => {
                    Some((tool_call_id.clone(), ResultMetadata::from_stored(meta)?))
                }
                _ => None,
            })
            .collect();
        let mut reserve = PreparedTools::default();
        if let Some(rt) = &setup.skills {
            reserve = crate::skills::reserve_tools(
                &setup.catalog,
                &setup.agent.tools,
                session.mode(),
                &caps,
            );
            // Durable activations re-apply their runtime contracts.
            rt.attach(
                &setup.catalog,
                &tools,
                &reserve,
                &setup.agent.skills,
                &entries,
            );
            crate::skills::apply_tool_activations(rt, &mut tools, &mut reserve);
        }
        let messages: Vec<Message> = entries.into_iter().map(|e| e.message).collect();
        let todo = replay_todo(&messages, &tools);
        let session_id = session.id;
        let web = match setup.network {
            NetworkAccess::Off => None,
            access @ (NetworkAccess::PublicOnly | NetworkAccess::Any) => {
                Some(WebFetch::new(access).map_err(HarnessError::Http)?)
            }
        };
        let code = match session.mode() {
            evoflux_core::AppMode::Coding => Some(evoflux_tools::CodeNavigator::new(
                &workspace,
                setup.code_cache.as_deref(),
            )),
            evoflux_core::AppMode::Work => None,
        };
        // A child's cost counts against the session the user started.
        let mut root = session.id;
        let mut parent = session.parent.clone();
        while let Some(p) = parent {
            root = p.session_id;
            parent = setup.store.load(root).await?.parent;
        }
        let mut harness = Harness {
            provider: setup.provider,
            model: setup.model,
            price: setup.price,
            root,
            usage: super::ledger::UsageLedger::default(),
            agent: setup.agent,
            pipeline: setup.pipeline,
            clock: setup.clock,
            approver: setup.approver,
            limits: setup.limits,
            workspace,
            tools,
            reserve,
            recorder: Recorder {
                store: setup.store,
                session_id,
                events: setup.events,
                messages,
                result_metadata: Arc::new(result_metadata),
            },
            commands: SessionCommands::new(setup.processes, session_id),
            mcp: SessionMcp::new(setup.mcp, setup.mcp_call_timeout, activated),
            todo,
            web,
            skills: setup.skills,
            approvals: setup.approvals,
            team: setup.team,
            tasks: Default::default(),
            sandbox: setup.sandbox.clone(),
            checks: setup.checks.clone(),
            schedules_dir: setup.schedules_dir.clone(),
            code,
            code_cache: setup.code_cache.clone(),
            mcp_call_timeout: setup.mcp_call_timeout,
            grants,
            artifacts_dir: setup.artifacts_root.join(session_id.to_string()),
            turn_input: None,
            unmet: Vec::new(),
            compact_next: false,
            client_files: None,
            lease_epoch: 0,
            awaiting_approval: std::sync::Mutex::new(None),
            session,
        };
        if let Some(from) = switched_from {
            harness.emit(&Event::ModelSwitched {
                from,
                to: setup.model_label.clone(),
            });
        }
        // The granted servers start with the session and are awaited
        // (each at most its startup timeout), so the first model call and
        // `session_started` have their tools.
        harness.start_granted_mcp();
        harness.await_granted_mcp().await;
        let mcp_states = harness.mcp_quiet();
        harness.emit(&Event::SessionStarted {
            session_id: harness.session.id.to_string(),
            mode: harness.session.mode(),
            workspace: harness.session.workspace.roots().to_vec(),
            lead: harness.agent.name.clone(),
            model: setup.model_label,
            resumed,
            tools: harness
                .offered_tools()
                .into_iter()
                .map(|(name, _)| name.to_owned())
                .collect(),
            unavailable_tools: harness.tools.unavailable.clone(),
        });
        for e in mcp_states {
            harness.emit(&e);
        }
        Ok(harness)
    }
}

/// Rebuilds the todo list from the successful `todo` calls of the
/// transcript (identified by the prepared executor, not the name).
fn replay_todo(messages: &[Message], tools: &PreparedTools) -> TodoList {
    let mut list = TodoList::default();
    let ok_results: std::collections::HashSet<&str> = messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool {
                tool_call_id,
                is_error: false,
                ..
            } => Some(tool_call_id.as_str()),
            Message::Tool { .. }
            | Message::System { .. }
            | Message::User { .. }
            | Message::Assistant { .. } => None,
        })
        .collect();
    for m in messages {
        let Message::Assistant { tool_calls, .. } = m else {
            continue;
        };
        for c in tool_calls {
            let is_todo = tools.get(&c.name).is_some_and(|t| {
                t.kind == PreparedKind::Ordinary(Executor::Builtin(BuiltinExecutor::Todo))
            });
            if is_todo && ok_results.contains(c.id.as_str()) {
                list.apply(&c.arguments);
            }
        }
    }
    list
}

/// What a session set up with `setup` offers its tools: a root session or
/// a child (a child's agent does not dispatch further), a background task
/// child or not. One rule for a session being opened and for a dispatch
/// checking, before it opens a child, what the child would be offered.
pub(super) fn capabilities(
    setup: &RunSetup,
    root_session: bool,
    task_child: bool,
) -> SessionCapabilities {
    SessionCapabilities {
        root_session,
        delegated_task_child: task_child,
        can_request_input: setup.can_request_input,
        processes: setup.processes.is_some(),
        skills: setup.skills.is_some(),
        network: setup.network != NetworkAccess::Off,
        checks: setup.checks.as_ref().is_some_and(|c| !c.is_empty()),
        schedules: setup.schedules_dir.is_some(),
        provider: setup.provider.kind(),
        provider_tools: setup.provider.provider_tools().to_vec(),
    }
}
