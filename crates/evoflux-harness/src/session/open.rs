//! Opening a session: create or resume it in the store, prepare its
//! tools, replay what the transcript makes durable (skill activations,
//! what built-in tools keep such as the todo list, result metadata) and
//! report what the session runs with.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use evoflux_core::AppMode;
use evoflux_core::ids::SessionId;
use evoflux_tools::sandbox::{CommandSandbox, Confinement};

use crate::metadata::ResultMetadata;
use evoflux_model::Message;
use evoflux_store::{
    ConnectionTool, GrantKey, NewSession, Session, Store, TranscriptEntry, WorkspaceRequest,
};

use super::commands::SessionCommands;
use super::dispatch::Delegation;
use super::mcp::SessionMcp;
use super::model_call::SessionModel;
use super::recorder::Recorder;
use super::turn::TurnState;
use super::{Harness, RunSetup, SessionRequest};
use crate::error::HarnessError;
use crate::events::Event;
use crate::prepared::{PreparedTool, PreparedTools, SessionCapabilities};
use crate::tools::BuiltinState;
use evoflux_tools::web_fetch::{NetworkAccess, WebFetch};

impl Harness {
    /// Creates or resumes the session and prepares its tools.
    ///
    /// The phases, in order: the session's record in the store, its
    /// workspace (and command sandbox), its tools, what its transcript
    /// makes durable, the services its tools call, the session whose
    /// cost it counts against; then the harness is assembled and started
    /// (its MCP servers up, `session_started` emitted).
    pub async fn open(setup: RunSetup, request: SessionRequest) -> Result<Harness, HarnessError> {
        let opened = open_record(&setup, request).await?;
        let session = &opened.session;
        let workspace = session_workspace(&setup, session)?;
        let caps = capabilities(&setup, session.parent.is_none(), opened.task_child);
        let mut tools = prepare_tools(&setup, session.mode(), &caps);
        let replayed = replay_transcript(&setup, session, &caps, &mut tools).await?;
        let web = web_fetch(setup.network)?;
        let code = code_navigator(session.mode(), &workspace, setup.code_cache.as_deref());
        let root = cost_root(&setup.store, session).await?;
        let model_label = setup.model_label.clone();
        let mut harness = Harness::assemble(
            setup,
            Parts {
                session: opened.session,
                workspace,
                tools,
                replayed,
                web,
                code,
                root,
            },
        );
        harness
            .start(opened.resumed, opened.switched_from, model_label)
            .await;
        Ok(harness)
    }

    /// The harness of a session opened with `setup`, from the parts the
    /// opening phases made; everything else starts empty.
    fn assemble(setup: RunSetup, parts: Parts) -> Harness {
        let Parts {
            session,
            workspace,
            tools,
            replayed,
            web,
            code,
            root,
        } = parts;
        let session_id = session.id;
        let artifacts_dir = setup.artifacts_root.join(session_id.to_string());
        let browser = crate::tools::browser::for_session(&setup, &artifacts_dir);
        Harness {
            model: SessionModel {
                provider: setup.provider,
                name: setup.model,
                price: setup.price,
            },
            root,
            usage: super::ledger::UsageLedger::default(),
            agent: setup.agent,
            pipeline: setup.pipeline,
            clock: setup.clock,
            approver: setup.approver,
            limits: setup.limits,
            workspace,
            tools,
            reserve: replayed.reserve,
            recorder: Recorder {
                store: setup.store,
                session_id,
                events: setup.events,
                messages: replayed.messages,
                result_metadata: Arc::new(replayed.result_metadata),
            },
            commands: SessionCommands::new(setup.processes, session_id),
            mcp: SessionMcp::new(setup.mcp, setup.mcp_call_timeout, replayed.activated),
            builtin_state: replayed.builtin_state,
            web,
            skills: setup.skills,
            approvals: setup.approvals,
            delegation: Delegation {
                team: setup.team,
                tasks: Default::default(),
                sandbox: setup.sandbox,
                code_cache: setup.code_cache,
                mcp_call_timeout: setup.mcp_call_timeout,
                chromium: setup.chromium,
            },
            checks: setup.checks,
            schedules_dir: setup.schedules_dir,
            code,
            grants: replayed.grants,
            artifacts_dir,
            browser,
            turn: TurnState::default(),
            client_files: None,
            prompt_files: Vec::new(),
            tool_order: Vec::new(),
            lease_epoch: 0,
            awaiting_approval: std::sync::Mutex::new(None),
            titles: Default::default(),
            session,
        }
    }

    /// Starts the assembled session and says what it runs with: the model
    /// switch the user asked for, then — once the granted MCP servers are
    /// up — `session_started` with the tools offered, then the servers'
    /// states.
    async fn start(&mut self, resumed: bool, switched_from: Option<String>, model_label: String) {
        if let Some(from) = switched_from {
            self.emit(&Event::ModelSwitched {
                from,
                to: model_label.clone(),
            });
        }
        // The granted servers start with the session and are awaited
        // (each at most its startup timeout), so the first model call and
        // `session_started` have their tools.
        self.start_granted_mcp();
        self.await_granted_mcp().await;
        let mcp_states = self.mcp_quiet();
        self.emit(&Event::SessionStarted {
            session_id: self.session.id.to_string(),
            mode: self.session.mode(),
            workspace: self.session.workspace.roots().to_vec(),
            lead: self.agent.name.clone(),
            model: model_label,
            resumed,
            tools: self
                .offered_tools()
                .into_iter()
                .map(|(name, _)| name.to_owned())
                .collect(),
            unavailable_tools: self.tools.unavailable.clone(),
        });
        for e in mcp_states {
            self.emit(&e);
        }
    }
}

/// The session's record as [`open_record`] left it.
struct OpenedRecord {
    session: Session,
    /// An existing session was resumed (not created).
    resumed: bool,
    /// The model the resumed session ran on before the user asked for
    /// another one.
    switched_from: Option<String>,
    /// A child a dispatch runs in the background, which may report with
    /// `task_update`.
    task_child: bool,
}

/// The session's record in the store: a new session (with the commits its
/// repositories are at), a dispatch's child, or a resumed session — which
/// must have the lead it was created with, and records a model switch the
/// front end asked for.
async fn open_record(
    setup: &RunSetup,
    request: SessionRequest,
) -> Result<OpenedRecord, HarnessError> {
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
            let heads = super::git_heads(s.workspace.roots());
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
    Ok(OpenedRecord {
        session,
        resumed,
        switched_from,
        task_child,
    })
}

/// The session's workspace: its roots, its artifacts folder (command
/// journals and offloaded results land there; `read` reaches them by
/// their `artifact:` locator) and, under a sandbox, the paths commands
/// must not see — confined to the repositories in Coding mode, to the
/// session's workspace in Work mode. The process runtime is told the
/// same sandbox for the session's commands.
fn session_workspace(
    setup: &RunSetup,
    session: &Session,
) -> Result<evoflux_tools::Workspace, HarnessError> {
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
    Ok(workspace)
}

/// The agent's tools as this session offers them (`caps` decides which
/// it can run), bound to what the session reaches: the registered checks
/// `verify` runs, and the team the dispatch tools hand tasks to — a
/// session without one drops its dispatch tools.
fn prepare_tools(setup: &RunSetup, mode: AppMode, caps: &SessionCapabilities) -> PreparedTools {
    let mut tools = PreparedTools::prepare(&setup.catalog, &setup.agent.tools, mode, caps);
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
    // At the last level `[teams] max_depth` allows, the delegation tool
    // could only answer "too deep": it is not offered.
    let last_level = setup.team.as_ref().and_then(|t| t.lineage.last_level());
    match (&setup.team, last_level) {
        (Some(_), Some(last)) => tools.drop_dispatch(&last.reason(), Some(last.code())),
        (Some(team), None) => {
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
            let self_copy = team.lineage.depth() == 0;
            if !self_copy && members.is_empty() && workers.is_empty() && remote.is_empty() {
                tools.drop_dispatch("the team has no agent to hand tasks to", None);
            } else {
                tools.bind_team(&members, &workers, &remote, self_copy);
            }
        }
        (None, _) => tools.drop_dispatch("this session cannot open child sessions", None),
    }
    tools
}

/// What [`replay_transcript`] read back of a session.
struct Replayed {
    messages: Vec<Message>,
    /// Metadata stored beside tool results, by tool call id.
    result_metadata: HashMap<String, ResultMetadata>,
    /// The tools `connection_search` activated.
    activated: Vec<ConnectionTool>,
    /// The user's "always" answers for the session and its workspace.
    grants: BTreeSet<GrantKey>,
    /// Runnable tools the agent was not granted, which a skill's runtime
    /// contract may bring in.
    reserve: PreparedTools,
    builtin_state: BuiltinState,
}

/// What the store makes durable of a session, read back: its transcript
/// (with the metadata beside its tool results), the tools
/// `connection_search` activated (the one durable record of them; a new
/// session has none), the approval grants that apply, the skill
/// activations — whose runtime contracts change `tools` and the reserve
/// again — and what built-in tools keep, as their calls built it (the
/// todo list).
async fn replay_transcript(
    setup: &RunSetup,
    session: &Session,
    caps: &SessionCapabilities,
    tools: &mut PreparedTools,
) -> Result<Replayed, HarnessError> {
    let entries = setup.store.transcript(session.id).await?;
    let activated = setup.store.connection_tools(session.id).await?;
    let grants = setup
        .store
        .approval_grants(session.id, &session.workspace)
        .await?
        .into_iter()
        .collect();
    let result_metadata: HashMap<String, ResultMetadata> = entries
        .iter()
        .filter_map(|e| match (&e.message, &e.artifact) {
            (Message::Tool { tool_call_id, .. }, Some(meta)) => {
                Some((tool_call_id.clone(), ResultMetadata::from_stored(meta)?))
            }
            _ => None,
        })
        .collect();
    let reserve = replay_skills(setup, session.mode(), caps, tools, &entries);
    let messages: Vec<Message> = entries.into_iter().map(|e| e.message).collect();
    let builtin_state = replay_builtin_state(&messages, tools);
    Ok(Replayed {
        messages,
        result_metadata,
        activated,
        grants,
        reserve,
        builtin_state,
    })
}

/// The reserve of a session with a skill runtime (the runnable tools the
/// agent was not granted), after the transcript's durable skill
/// activations re-applied their runtime contracts to it and to `tools`.
/// Empty without a skill runtime.
fn replay_skills(
    setup: &RunSetup,
    mode: AppMode,
    caps: &SessionCapabilities,
    tools: &mut PreparedTools,
    entries: &[TranscriptEntry],
) -> PreparedTools {
    let mut reserve = PreparedTools::default();
    if let Some(rt) = &setup.skills {
        reserve = crate::skills::reserve_tools(&setup.catalog, &setup.agent.tools, mode, caps);
        // Durable activations re-apply their runtime contracts.
        rt.attach(
            &setup.catalog,
            tools,
            &reserve,
            &setup.agent.skills,
            entries,
        );
        crate::skills::apply_tool_activations(rt, tools, &mut reserve);
    }
    reserve
}

/// The client `web_fetch` uses, for the network access the session has;
/// `None` when it has none.
fn web_fetch(network: NetworkAccess) -> Result<Option<WebFetch>, HarnessError> {
    Ok(match network {
        NetworkAccess::Off => None,
        access @ (NetworkAccess::PublicOnly | NetworkAccess::Any) => {
            Some(WebFetch::new(access).map_err(HarnessError::Http)?)
        }
    })
}

/// `code_context`'s navigator over `workspace`, for a Coding session
/// (persisting its indexes under `cache` when there is one).
fn code_navigator(
    mode: AppMode,
    workspace: &evoflux_tools::Workspace,
    cache: Option<&std::path::Path>,
) -> Option<evoflux_tools::CodeNavigator> {
    match mode {
        AppMode::Coding => Some(evoflux_tools::CodeNavigator::new(workspace, cache)),
        AppMode::Work => None,
    }
}

/// The session whose tree `[limits] max_cost_usd` bounds: a child's cost
/// counts against the session the user started, found up its parents.
async fn cost_root(store: &Store, session: &Session) -> Result<SessionId, HarnessError> {
    let mut root = session.id;
    let mut parent = session.parent.clone();
    while let Some(p) = parent {
        root = p.session_id;
        parent = store.load(root).await?.parent;
    }
    Ok(root)
}

/// What the opening phases made, for [`Harness::assemble`].
struct Parts {
    session: Session,
    workspace: evoflux_tools::Workspace,
    tools: PreparedTools,
    replayed: Replayed,
    web: Option<WebFetch>,
    code: Option<evoflux_tools::CodeNavigator>,
    root: SessionId,
}

/// Rebuilds what built-in tools keep in the session from their successful
/// calls in the transcript, each by its handler (found by the prepared
/// executor, not the name).
fn replay_builtin_state(messages: &[Message], tools: &PreparedTools) -> BuiltinState {
    let mut state = BuiltinState::default();
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
            let Some(handler) = tools.get(&c.name).and_then(PreparedTool::builtin) else {
                continue;
            };
            if ok_results.contains(c.id.as_str()) {
                handler.replay(c, &mut state);
            }
        }
    }
    state
}

/// What a session set up with `setup` offers its tools: a root session or
/// a child (whether a child dispatches further is its team's lineage,
/// [`prepare_tools`]), a background task child or not. One rule for a session being opened and for a dispatch
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
        host_network: setup
            .sandbox
            .as_ref()
            .is_none_or(|s| s.policy.network == evoflux_graph::sandbox::NetworkPolicy::Allow),
        checks: setup.checks.as_ref().is_some_and(|c| !c.is_empty()),
        schedules: setup.schedules_dir.is_some(),
        browser: crate::tools::browser::gap(setup),
        provider: setup.provider.kind(),
        provider_tools: setup.provider.provider_tools().to_vec(),
    }
}
