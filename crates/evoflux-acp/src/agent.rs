//! `evoflux acp`: evoflux as an ACP agent that an editor drives over
//! stdio.
//!
//! Each ACP session is an evoflux session opened through the one
//! [`SessionBuilder`]: Coding mode on the client's working directory for a
//! new one; a loaded one resumes as it was persisted (its mode and
//! workspace are authoritative, whatever the client's `cwd`). A prompt is
//! a turn run on its own task, so `session/cancel` and the answers to the
//! agent's own requests keep flowing while it runs; its events become
//! `session/update` notifications ([`crate::updates`]) and a tool whose
//! approval policy asks becomes `session/request_permission`.
//!
//! Where the client offers its file system, `read` sees the editor's
//! buffers and `write` and `edit` go through it
//! ([`evoflux_harness::client_files`]). Its terminal is not used: commands
//! run in evoflux's own sandbox and journal, which an editor's terminal
//! would escape.
//!
//! What an editor brings to a session is served too:
//!
//! - the MCP servers it passes in `session/new` and `session/load` run as
//!   that session's own servers ([`crate::session_mcp`]), granted to its
//!   lead, started and awaited before its first prompt, stopped with it;
//! - its session modes are evoflux's approval presets
//!   ([`ApprovalMode`]: ask, auto-edit, read-only), switched with
//!   `session/set_mode` at once, even while a prompt runs;
//! - the prompt commands and the skills the user may invoke are its
//!   available commands (`/<name>`, `/skill:<name>`), the `todo` list its
//!   plan, and `session/list` lists the store's top-level sessions;
//! - images and audio in a prompt go on the user message as media, and an
//!   MCP server's form is put to an editor that shows forms
//!   (`elicitation/create`);
//! - `session/resume` opens a stored session without replaying it, and
//!   `session/close` stops one (its MCP servers with it).

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate,
    CancelNotification, ClientCapabilities, CloseSessionRequest, CloseSessionResponse,
    CurrentModeUpdate, InitializeRequest, InitializeResponse, ListSessionsRequest,
    ListSessionsResponse, LoadSessionRequest, LoadSessionResponse, McpCapabilities, McpServer,
    NewSessionRequest, NewSessionResponse, PermissionOption, PermissionOptionKind,
    PromptCapabilities, PromptRequest, PromptResponse, ReadTextFileRequest,
    RequestPermissionOutcome, RequestPermissionRequest, ResumeSessionRequest,
    ResumeSessionResponse, SessionCapabilities, SessionCloseCapabilities, SessionId, SessionInfo,
    SessionListCapabilities, SessionMode, SessionModeState, SessionNotification,
    SessionResumeCapabilities, SessionUpdate, SetSessionModeRequest, SetSessionModeResponse,
    StopReason, ToolCallId, ToolCallUpdate, ToolCallUpdateFields, UnstructuredCommandInput,
    WriteTextFileRequest,
};
use agent_client_protocol::v1::schema::{
    CreateElicitationRequest, ElicitationAction, ElicitationFormMode, ElicitationMode,
    ElicitationSchema, ElicitationSessionScope,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{ByteStreams, Client, Error};
use evoflux_app::{AppContext, ReopenBuilder, SessionBuilder, SessionOptions, WireBuilder};
use evoflux_core::AppMode;
use evoflux_harness::approval::{
    ApprovalFuture, ApprovalMode, ApprovalSubject, ElicitationAnswer, ElicitationAsk,
    ElicitationFuture, Elicited, ModeSwitch, Remember,
};
use evoflux_harness::client_files::{ClientFiles, FilesFuture};
use evoflux_harness::host::BoxFuture;
use evoflux_harness::sources::SourceWatch;
use evoflux_harness::{
    ApprovalDecision, ApprovalRequest, Approver, Decided, DecidedBy, Event, EventSink, Harness,
    Holder, HostError, HostFrontEnd, HostOptions, HostWiring, LeaseError, Limits, ProcessRuntime,
    Reopen, ReopenError, SessionHost, Store, StoreError, TurnEnd, TurnOptions, TurnStatus,
};
use std::path::Path;
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

use crate::session_mcp::{ClientServers, InvalidServer, client_servers};
use crate::updates::{
    InvalidBlock, ToolShapes, history, mcp_notice, plan_of, prompt_input, thought, update_of,
};

/// How many sessions one `session/list` page holds.
const LIST_PAGE: usize = 50;

/// JSON-RPC's "invalid params": what the client sent cannot be served.
const INVALID_PARAMS: i32 = -32602;
/// JSON-RPC's "internal error": evoflux failed.
const INTERNAL_ERROR: i32 = -32603;

/// How `evoflux acp` opens its sessions.
#[derive(Debug, Clone, Default)]
pub struct AgentOptions {
    /// The model new sessions run on (`provider:model`); unset, the
    /// configured default.
    pub model: Option<String>,
    /// The lead new sessions run; unset, Coding mode's default.
    pub lead: Option<String>,
    /// Model calls one prompt may make.
    pub limits: Limits,
}

/// Why serving stopped.
#[derive(Debug, thiserror::Error)]
pub enum AcpError {
    #[error("the session store cannot be opened: {0}")]
    Store(#[from] StoreError),
    #[error("the session store cannot be opened: {0}")]
    Config(#[from] evoflux_app::SessionError),
    #[error("the ACP connection failed: {0}")]
    Connection(String),
}

impl AcpError {
    pub fn code(&self) -> &'static str {
        match self {
            AcpError::Store(e) => e.code(),
            AcpError::Config(e) => e.code(),
            AcpError::Connection(_) => "acp/connection-failed",
        }
    }
}

/// Serves ACP on this process's stdin and stdout until the client closes
/// stdin.
pub async fn serve_stdio(
    app: Arc<AppContext>,
    processes: ProcessRuntime,
    options: AgentOptions,
) -> Result<(), AcpError> {
    serve(
        app,
        processes,
        options,
        tokio::io::stdin(),
        tokio::io::stdout(),
    )
    .await
}

/// Serves ACP over `incoming` and `outgoing` until `incoming` ends.
pub async fn serve<R, W>(
    app: Arc<AppContext>,
    processes: ProcessRuntime,
    options: AgentOptions,
    incoming: R,
    outgoing: W,
) -> Result<(), AcpError>
where
    R: tokio::io::AsyncRead + Send + 'static,
    W: tokio::io::AsyncWrite + Send + 'static,
{
    let store = app.open_store().await?;
    let state = Arc::new(AgentState {
        app,
        processes: processes.clone(),
        store,
        options,
        sessions: Mutex::new(HashMap::new()),
        client: Mutex::new(None),
        holder: Holder::process("evoflux acp"),
    });
    let transport = ByteStreams::new(outgoing.compat_write(), incoming.compat());
    let served = agent_client_protocol::Agent
        .v1()
        .name("evoflux")
        .on_receive_request(
            {
                let state = Arc::clone(&state);
                async move |request: InitializeRequest,
                            responder: Responder<InitializeResponse>,
                            _cx: ConnectionTo<Client>| {
                    // Protocol v1 is the one this agent speaks; a client asking
                    // for a later one is answered with v1, as the protocol says.
                    *state.client.lock().unwrap_or_else(|p| p.into_inner()) =
                        Some(request.client_capabilities);
                    responder.respond(
                        InitializeResponse::new(ProtocolVersion::V1)
                            .agent_capabilities(
                                AgentCapabilities::new()
                                    .load_session(true)
                                    .prompt_capabilities(
                                        PromptCapabilities::new()
                                            .embedded_context(true)
                                            .image(true)
                                            .audio(true),
                                    )
                                    // Streamable HTTP servers run; legacy SSE does not.
                                    .mcp_capabilities(McpCapabilities::new().http(true))
                                    .session_capabilities(
                                        SessionCapabilities::new()
                                            .list(SessionListCapabilities::new())
                                            .resume(SessionResumeCapabilities::new())
                                            .close(SessionCloseCapabilities::new()),
                                    ),
                            )
                            .agent_info(agent_client_protocol::v1::schema::Implementation::new(
                                "evoflux",
                                env!("CARGO_PKG_VERSION"),
                            )),
                    )
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let state = Arc::clone(&state);
                async move |request: NewSessionRequest,
                            responder: Responder<NewSessionResponse>,
                            cx: ConnectionTo<Client>| {
                    let servers = match client_servers(&request.mcp_servers) {
                        Ok(servers) => servers,
                        Err(e) => return responder.respond_with_error(invalid_server(&e)),
                    };
                    let options = SessionOptions {
                        mode: Some(AppMode::Coding),
                        workspaces: vec![request.cwd.clone()],
                        lead: state.options.lead.clone(),
                        model: state.options.model.clone(),
                        resume: None,
                        limits: state.options.limits,
                    };
                    match state.open(&cx, options, servers).await {
                        Ok(opened) => {
                            responder.respond(
                                NewSessionResponse::new(opened.id.clone())
                                    .modes(modes(ApprovalMode::default())),
                            )?;
                            opened.announce(&cx)
                        }
                        Err(e) => responder.respond_with_error(e),
                    }
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let state = Arc::clone(&state);
                async move |request: LoadSessionRequest,
                            responder: Responder<LoadSessionResponse>,
                            cx: ConnectionTo<Client>| {
                    match state
                        .load(&cx, &request.session_id, &request.mcp_servers, true)
                        .await
                    {
                        Ok(opened) => {
                            responder.respond(
                                LoadSessionResponse::new().modes(modes(opened.mode.get())),
                            )?;
                            opened.announce(&cx)
                        }
                        Err(e) => responder.respond_with_error(e),
                    }
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let state = Arc::clone(&state);
                async move |request: PromptRequest,
                            responder: Responder<PromptResponse>,
                            cx: ConnectionTo<Client>| {
                    state.prompt(request, responder, cx)
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let state = Arc::clone(&state);
                async move |request: ResumeSessionRequest,
                            responder: Responder<ResumeSessionResponse>,
                            cx: ConnectionTo<Client>| {
                    match state
                        .load(&cx, &request.session_id, &request.mcp_servers, false)
                        .await
                    {
                        Ok(opened) => {
                            responder.respond(
                                ResumeSessionResponse::new().modes(modes(opened.mode.get())),
                            )?;
                            opened.announce(&cx)
                        }
                        Err(e) => responder.respond_with_error(e),
                    }
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let state = Arc::clone(&state);
                async move |request: CloseSessionRequest,
                            responder: Responder<CloseSessionResponse>,
                            _cx: ConnectionTo<Client>| {
                    match state.close(&request.session_id).await {
                        Ok(()) => responder.respond(CloseSessionResponse::new()),
                        Err(e) => responder.respond_with_error(e),
                    }
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let state = Arc::clone(&state);
                async move |request: SetSessionModeRequest,
                            responder: Responder<SetSessionModeResponse>,
                            cx: ConnectionTo<Client>| {
                    match state.set_mode(&cx, &request) {
                        Ok(()) => responder.respond(SetSessionModeResponse::new()),
                        Err(e) => responder.respond_with_error(e),
                    }
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let state = Arc::clone(&state);
                async move |request: ListSessionsRequest,
                            responder: Responder<ListSessionsResponse>,
                            _cx: ConnectionTo<Client>| {
                    responder.respond_with_result(state.list(&request).await)
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            {
                let state = Arc::clone(&state);
                async move |notification: CancelNotification, _cx: ConnectionTo<Client>| {
                    if let Some(live) = state.live(&notification.session_id) {
                        live.host.cancel();
                    }
                    Ok(())
                }
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(transport)
        .await;
    state.shutdown().await;
    processes.shutdown().await;
    served.map_err(|e| AcpError::Connection(e.to_string()))
}

/// The agent's sessions.
#[derive(Debug)]
struct AgentState {
    app: Arc<AppContext>,
    processes: ProcessRuntime,
    store: Store,
    options: AgentOptions,
    sessions: Mutex<HashMap<SessionId, Live>>,
    /// What the client offers, from its `initialize`.
    client: Mutex<Option<ClientCapabilities>>,
    /// This agent, as the leases of its turns name it.
    holder: Holder,
}

/// A session this agent hosts: its host, and the approval mode the client
/// switches.
#[derive(Debug, Clone)]
struct Live {
    host: SessionHost,
    mode: ModeSwitch,
    /// The commands the client was last told of.
    commands: Arc<Mutex<Vec<AvailableCommand>>>,
}

/// A session just opened or loaded, and what the client is told once it
/// has the answer: the session's commands and what its start found wrong.
struct Opened {
    id: SessionId,
    mode: ModeSwitch,
    commands: Vec<AvailableCommand>,
    /// What the session's start found wrong (its MCP servers that did not
    /// come up, the client's entries evoflux does not run), in order.
    notices: Vec<SessionUpdate>,
}

impl Opened {
    /// Tells the client what follows the answer to `session/new` or
    /// `session/load`: the available commands, then the notices.
    fn announce(self, cx: &ConnectionTo<Client>) -> Result<(), Error> {
        cx.send_notification(SessionNotification::new(
            self.id.clone(),
            SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(self.commands)),
        ))?;
        for notice in self.notices {
            cx.send_notification(SessionNotification::new(self.id.clone(), notice))?;
        }
        Ok(())
    }
}

/// The session modes a client may switch between, `current` on.
fn modes(current: ApprovalMode) -> SessionModeState {
    SessionModeState::new(
        current.id(),
        ApprovalMode::ALL
            .into_iter()
            .map(|m| SessionMode::new(m.id(), m.title()).description(m.description()))
            .collect(),
    )
}

/// The commands the user may give in `harness`'s session, each typed as
/// `/<name> <input>` and expanded by the harness where the turn takes its
/// message: the prompt commands (Claude Code's commands, codex's prompts,
/// the MCP servers' prompts), then each skill they may invoke, as
/// `/skill:<name>`.
fn available_commands(harness: &Harness) -> Vec<AvailableCommand> {
    let unstructured =
        |hint: &str| AvailableCommandInput::Unstructured(UnstructuredCommandInput::new(hint));
    let mut commands: Vec<AvailableCommand> = harness
        .prompt_commands()
        .into_iter()
        .map(|c| {
            let command = AvailableCommand::new(c.name, c.description);
            match c.argument_hint {
                Some(hint) => command.input(unstructured(&hint)),
                None => command,
            }
        })
        .collect();
    commands.extend(
        harness
            .invocable_skills()
            .into_iter()
            .map(|(name, description)| {
                AvailableCommand::new(format!("skill:{name}"), description)
                    .input(unstructured("what the skill is for this time"))
            }),
    );
    commands
}

/// [`available_commands`] of a hosted session, between its turns.
async fn commands_of(host: &SessionHost) -> Result<Vec<AvailableCommand>, HostError> {
    host.with(|harness: &mut Harness| {
        let commands = available_commands(harness);
        Box::pin(async move { commands }) as BoxFuture<'_, Vec<AvailableCommand>>
    })
    .await
}

/// The ACP error of an `mcpServers` entry evoflux cannot run.
fn invalid_server(e: &InvalidServer) -> Error {
    Error::new(INVALID_PARAMS, format!("{e} [{}]", InvalidServer::CODE))
}

/// The ACP error of a session that cannot be opened.
fn open_error(e: &evoflux_app::SessionError) -> Error {
    let code = if e.is_invalid_input() {
        INVALID_PARAMS
    } else {
        INTERNAL_ERROR
    };
    Error::new(code, format!("{e} [{}]", e.code()))
}

/// The ACP error of a prompt the host refused or that failed.
fn host_error(e: &HostError) -> Error {
    let code = match e {
        HostError::Busy
        | HostError::Lease(LeaseError::Busy { .. })
        | HostError::NoPendingElicitation { .. }
        | HostError::ElicitationInvalid { .. } => INVALID_PARAMS,
        HostError::Lease(LeaseError::Store(_))
        | HostError::NoPendingApproval { .. }
        | HostError::Closed
        | HostError::Turn(_)
        | HostError::Reopen(_) => INTERNAL_ERROR,
    };
    let message = match e {
        HostError::Busy => {
            "a prompt is already running in this session: wait for its answer or cancel it"
                .to_owned()
        }
        _ => e.to_string(),
    };
    Error::new(code, format!("{message} [{}]", e.code()))
}

/// How this agent opens a session's harness, the first time and again
/// when its host asks: wired to the host, on the agent's store and
/// process runtime, its file tools through the editor where it offers
/// them.
struct AcpFront {
    app: Arc<AppContext>,
    processes: ProcessRuntime,
    store: Store,
    cx: ConnectionTo<Client>,
    /// The editor's file system, as its `initialize` offered it.
    files: Option<agent_client_protocol::v1::schema::FileSystemCapabilities>,
    /// Model calls one prompt may make.
    limits: Limits,
    /// The MCP servers the client passed for this session, started again
    /// whenever the session is opened again.
    servers: Vec<evoflux_mcp::ServerDefinition>,
    /// The session's approval mode, kept across its reopenings.
    mode: ModeSwitch,
}

impl fmt::Debug for AcpFront {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AcpFront").finish_non_exhaustive()
    }
}

impl AcpFront {
    /// Opens what `builder` names on the agent's store and process runtime
    /// (the data directory pruned first when it is due), its file tools
    /// through the editor where it offers them.
    async fn open(
        &self,
        builder: SessionBuilder<'_>,
    ) -> Result<Harness, evoflux_app::SessionError> {
        self.app.prune_if_due(&self.store).await;
        let builder = builder
            .processes(self.processes.clone())
            .store(self.store.clone())
            .session_mcp(self.servers.clone());
        let opened = builder.open().await?;
        for d in opened.diagnostics.iter() {
            tracing::warn!(code = %d.code, "{}", d.message);
        }
        let mut harness = opened.harness;
        harness.use_approval_mode(self.mode.clone());
        if let Some(fs) = &self.files
            && (fs.read_text_file || fs.write_text_file)
        {
            harness.use_client_files(Arc::new(EditorFiles {
                cx: self.cx.clone(),
                session: SessionId::new(harness.session().id.to_string()),
                reads: fs.read_text_file,
                writes: fs.write_text_file,
            }));
        }
        Ok(harness)
    }
}

impl HostFrontEnd for AcpFront {
    fn reopen<'a>(&'a self, reopen: Reopen<'a>) -> BoxFuture<'a, Result<Harness, ReopenError>> {
        Box::pin(async move { Ok(self.open(reopen.builder(&self.app, self.limits)).await?) })
    }
}

impl AgentState {
    fn live(&self, id: &SessionId) -> Option<Live> {
        self.sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(id)
            .cloned()
    }

    /// Opens a session whose events go to the client and whose approvals
    /// are put to it, hosted until the connection ends.
    async fn open(
        &self,
        cx: &ConnectionTo<Client>,
        options: SessionOptions,
        servers: ClientServers,
    ) -> Result<Opened, Error> {
        let events = Arc::new(ClientEvents {
            cx: cx.clone(),
            target: OnceLock::new(),
            early: Mutex::new(Vec::new()),
            todos: Mutex::new(HashMap::new()),
        });
        let forms = self
            .client
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .and_then(|c| c.elicitation.as_ref())
            .is_some_and(|e| e.form.is_some());
        let approver = Arc::new(ClientApprover {
            cx: cx.clone(),
            session: OnceLock::new(),
            forms,
        });
        let wiring = HostWiring::new(
            Arc::clone(&events) as Arc<dyn EventSink>,
            Some(Arc::clone(&approver) as Arc<dyn Approver>),
        );
        let files = self
            .client
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .map(|c| c.fs.clone());
        let front = Arc::new(AcpFront {
            app: Arc::clone(&self.app),
            processes: self.processes.clone(),
            store: self.store.clone(),
            cx: cx.clone(),
            files,
            limits: self.options.limits,
            servers: servers.definitions,
            mode: ModeSwitch::default(),
        });
        let mode = front.mode.clone();
        let harness = front
            .open(wiring.wire(SessionBuilder::new(&self.app, options)))
            .await
            .map_err(|e| open_error(&e))?;
        let id = SessionId::new(harness.session().id.to_string());
        let commands = available_commands(&harness);
        let _ = events.target.set((id.clone(), shapes_of(&harness)));
        let mut notices: Vec<SessionUpdate> = servers.notices.into_iter().map(thought).collect();
        notices.extend(std::mem::take(
            &mut *events.early.lock().unwrap_or_else(|p| p.into_inner()),
        ));
        let _ = approver.session.set(id.clone());
        // Changed agents, skills, plugins or config apply from the next
        // prompt, as in every front end.
        let roots = self.app.source_roots(harness.session().workspace.roots());
        let sources = match SourceWatch::start(&roots) {
            Ok(watch) => Some(watch),
            Err(e) => {
                tracing::warn!(error = %e, "cannot watch the sources; changes apply to new sessions");
                None
            }
        };
        let host = SessionHost::start(
            harness,
            wiring,
            front,
            HostOptions {
                holder: Some(self.holder.clone()),
                sources,
            },
        );
        self.sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(
                id.clone(),
                Live {
                    host,
                    mode: mode.clone(),
                    commands: Arc::new(Mutex::new(commands.clone())),
                },
            );
        Ok(Opened {
            id,
            mode,
            commands,
            notices,
        })
    }

    /// `session/load` (`replay`) and `session/resume`: the stored session
    /// resumed as it was persisted, with the client's MCP servers; on
    /// load, its conversation replayed to the client before the answer.
    async fn load(
        &self,
        cx: &ConnectionTo<Client>,
        id: &SessionId,
        servers: &[McpServer],
        replay: bool,
    ) -> Result<Opened, Error> {
        let servers = client_servers(servers).map_err(|e| invalid_server(&e))?;
        let opened = match self.live(id) {
            Some(live) => {
                // The session runs with the servers it was opened with;
                // the client is told, never ignored in silence.
                let mut notices = Vec::new();
                if !servers.definitions.is_empty() {
                    let message = format!(
                        "this session is already open here with its MCP servers; the {} passed \
                         now apply when it is loaded in a new connection",
                        servers.definitions.len()
                    );
                    tracing::warn!("{message}");
                    notices.push(thought(message));
                }
                let commands = commands_of(&live.host).await.map_err(|e| host_error(&e))?;
                Opened {
                    id: id.clone(),
                    mode: live.mode,
                    commands,
                    notices,
                }
            }
            None => {
                let stored = id.to_string().parse().map_err(|_| {
                    Error::from(agent_client_protocol::v1::schema::Error::session_not_found(
                        id.clone(),
                    ))
                })?;
                let options = SessionOptions {
                    mode: None,
                    workspaces: Vec::new(),
                    lead: None,
                    model: None,
                    resume: Some(stored),
                    limits: self.options.limits,
                };
                self.open(cx, options, servers).await?
            }
        };
        if !replay {
            return Ok(opened);
        }
        let host = self
            .live(id)
            .map(|l| l.host)
            .ok_or_else(|| host_error(&HostError::Closed))?;
        let updates: Vec<_> = host
            .with(|harness: &mut Harness| {
                let updates = history(harness.messages(), &shapes_of(harness));
                Box::pin(async move { updates }) as BoxFuture<'_, _>
            })
            .await
            .map_err(|e| host_error(&e))?;
        for update in updates {
            cx.send_notification(SessionNotification::new(id.clone(), update))?;
        }
        Ok(opened)
    }

    /// `session/close`: the session's running prompt is cancelled and its
    /// MCP servers (the client's among them) stop; it stays in the store,
    /// to be loaded again.
    async fn close(&self, id: &SessionId) -> Result<(), Error> {
        let live = self
            .sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(id);
        match live {
            Some(live) => {
                live.host.close().await;
                Ok(())
            }
            None => Err(Error::from(
                agent_client_protocol::v1::schema::Error::session_not_found(id.clone()),
            )),
        }
    }

    /// `session/set_mode`: the session's approval mode switched at once
    /// (a running prompt's next call is decided under it), and the client
    /// told with `current_mode_update`.
    fn set_mode(
        &self,
        cx: &ConnectionTo<Client>,
        request: &SetSessionModeRequest,
    ) -> Result<(), Error> {
        let Some(live) = self.live(&request.session_id) else {
            return Err(Error::from(
                agent_client_protocol::v1::schema::Error::session_not_found(
                    request.session_id.clone(),
                ),
            ));
        };
        let id = request.mode_id.to_string();
        let Some(mode) = ApprovalMode::from_id(&id) else {
            let known: Vec<&str> = ApprovalMode::ALL.iter().map(|m| m.id()).collect();
            return Err(Error::new(
                INVALID_PARAMS,
                format!(
                    "modeId: `{id}` is not a mode of evoflux; use one of {} [acp/unknown-mode]",
                    known.join(", ")
                ),
            ));
        };
        live.mode.set(mode);
        cx.send_notification(SessionNotification::new(
            request.session_id.clone(),
            SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(mode.id())),
        ))
    }

    /// `session/list`: the store's top-level sessions, newest first, in
    /// pages of [`LIST_PAGE`]; with `cwd`, those working in that folder.
    async fn list(&self, request: &ListSessionsRequest) -> Result<ListSessionsResponse, Error> {
        let start = match &request.cursor {
            None => 0,
            Some(cursor) => cursor.parse::<usize>().map_err(|_| {
                Error::new(
                    INVALID_PARAMS,
                    format!(
                        "cursor: `{cursor}` is not a cursor this agent gave; start again without \
                         one [acp/invalid-cursor]"
                    ),
                )
            })?,
        };
        let sessions = self.store.list_sessions().await.map_err(|e| {
            Error::new(
                INTERNAL_ERROR,
                format!("the session store cannot be read: {e} [{}]", e.code()),
            )
        })?;
        // Sessions keep their folders canonical; the client's may not be.
        let cwd = request
            .cwd
            .as_ref()
            .map(|cwd| std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.clone()));
        let listed: Vec<SessionInfo> = sessions
            .into_iter()
            .filter(|s| s.parent.is_none())
            .filter(|s| {
                cwd.as_ref()
                    .is_none_or(|cwd| s.workspace.roots().iter().any(|r| r == cwd))
            })
            .filter_map(|s| {
                let (cwd, more) = s.workspace.roots().split_first()?;
                let updated = chrono::DateTime::from_timestamp_millis(s.updated_at_ms)
                    .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true));
                Some(
                    SessionInfo::new(s.id.to_string(), cwd.clone())
                        .additional_directories(more.to_vec())
                        .title(s.title.clone())
                        .updated_at(updated),
                )
            })
            .collect();
        let end = listed.len().min(start.saturating_add(LIST_PAGE));
        let next = (end < listed.len()).then(|| end.to_string());
        let page = listed.into_iter().skip(start).take(LIST_PAGE).collect();
        Ok(ListSessionsResponse::new(page).next_cursor(next))
    }

    /// `session/prompt`: a turn submitted to the session's host, answered
    /// when it ends.
    fn prompt(
        self: &Arc<Self>,
        request: PromptRequest,
        responder: Responder<PromptResponse>,
        cx: ConnectionTo<Client>,
    ) -> Result<(), Error> {
        let Some(Live { host, commands, .. }) = self.live(&request.session_id) else {
            return responder.respond_with_error(Error::from(
                agent_client_protocol::v1::schema::Error::session_not_found(request.session_id),
            ));
        };
        let (text, media) = match prompt_input(&request.prompt) {
            Ok(input) => input,
            Err(e) => {
                return responder.respond_with_error(Error::new(
                    INVALID_PARAMS,
                    format!("{e} [{}]", InvalidBlock::CODE),
                ));
            }
        };
        tokio::spawn(async move {
            let options = TurnOptions {
                media,
                ..TurnOptions::default()
            };
            let ended = match host.submit(Some(text), options).await {
                Ok(turn) => turn.ended().await,
                Err(e) => Err(e),
            };
            let answer = match ended {
                Ok(TurnEnd::Cancelled) => Ok(PromptResponse::new(StopReason::Cancelled)),
                Ok(TurnEnd::Completed(outcome)) => {
                    Ok(PromptResponse::new(stop_reason(outcome.status)))
                }
                Err(e) => Err(host_error(&e)),
            };
            let _ = responder.respond_with_result(answer);
            // Changed skills or commands files, or an MCP server's prompts,
            // reach the client after the turn that applied them.
            if let Ok(now) = commands_of(&host).await {
                let changed = {
                    let mut told = commands.lock().unwrap_or_else(|p| p.into_inner());
                    let changed = *told != now;
                    *told = now.clone();
                    changed
                };
                if changed
                    && let Err(e) = cx.send_notification(SessionNotification::new(
                        request.session_id.clone(),
                        SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(now)),
                    ))
                {
                    tracing::warn!(error = %e, "the available commands did not reach the client");
                }
            }
        });
        Ok(())
    }

    /// Stops every session's running prompt and MCP servers.
    async fn shutdown(&self) {
        let hosts: Vec<SessionHost> = self
            .sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain()
            .map(|(_, live)| live.host)
            .collect();
        for host in hosts {
            host.close().await;
        }
    }
}

/// The editor's file system, for the file tools of a session
/// ([`evoflux_harness::client_files`]).
struct EditorFiles {
    cx: ConnectionTo<Client>,
    session: SessionId,
    reads: bool,
    writes: bool,
}

impl fmt::Debug for EditorFiles {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EditorFiles")
            .field("reads", &self.reads)
            .field("writes", &self.writes)
            .finish_non_exhaustive()
    }
}

impl ClientFiles for EditorFiles {
    fn reads(&self) -> bool {
        self.reads
    }

    fn writes(&self) -> bool {
        self.writes
    }

    fn read_text<'a>(&'a self, path: &'a Path) -> FilesFuture<'a, String> {
        Box::pin(async move {
            self.cx
                .send_request(ReadTextFileRequest::new(self.session.clone(), path))
                .block_task()
                .await
                .map(|r| r.content)
                .map_err(|e| e.to_string())
        })
    }

    fn write_text<'a>(&'a self, path: &'a Path, content: &'a str) -> FilesFuture<'a, ()> {
        Box::pin(async move {
            self.cx
                .send_request(WriteTextFileRequest::new(
                    self.session.clone(),
                    path,
                    content.to_owned(),
                ))
                .block_task()
                .await
                .map(|_| ())
                .map_err(|e| e.to_string())
        })
    }
}

/// How `harness`'s tools are shown to the client.
fn shapes_of(harness: &Harness) -> ToolShapes {
    ToolShapes::new(
        harness.tools().iter().map(|t| &t.definition),
        harness
            .session()
            .workspace
            .roots()
            .first()
            .map_or(Path::new("/"), |p| p.as_path()),
    )
}

/// How a turn's end reads as an ACP stop reason.
fn stop_reason(status: TurnStatus) -> StopReason {
    match status {
        // A question the agent asks was streamed as its message; the
        // next prompt answers it.
        TurnStatus::Completed | TurnStatus::WaitingForInput | TurnStatus::OutputMissing => {
            StopReason::EndTurn
        }
        TurnStatus::LimitReached | TurnStatus::CostLimitReached => StopReason::MaxTurnRequests,
    }
}

/// A session's events, as `session/update` notifications to the client.
struct ClientEvents {
    cx: ConnectionTo<Client>,
    /// Set once the session is open (what it emits while opening is not
    /// for the client, but what keeps an MCP server away is: see `early`).
    target: OnceLock<(SessionId, ToolShapes)>,
    /// What the session's start said about its MCP servers before the
    /// client knew its id; told after the answer ([`Opened::announce`]).
    early: Mutex<Vec<SessionUpdate>>,
    /// The `todo` calls running, by call id, with their arguments: the
    /// plan their successful end leaves is sent as `plan`.
    todos: Mutex<HashMap<String, serde_json::Value>>,
}

impl fmt::Debug for ClientEvents {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientEvents").finish_non_exhaustive()
    }
}

impl EventSink for ClientEvents {
    fn emit(&self, event: &Event) {
        if let Event::McpServer {
            server,
            state,
            error,
            ..
        } = event
            && let Some(notice) = mcp_notice(server, *state, error.as_deref())
        {
            tracing::warn!("{notice}");
            if self.target.get().is_none() {
                self.early
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(thought(notice));
                return;
            }
        }
        let Some((id, shapes)) = self.target.get() else {
            return;
        };
        let mut updates: Vec<SessionUpdate> = update_of(event, shapes).into_iter().collect();
        let mut todos = self.todos.lock().unwrap_or_else(|p| p.into_inner());
        match event {
            Event::ToolStarted {
                call_id,
                tool,
                arguments,
            } if shapes.is_todo(tool) => {
                todos.insert(call_id.clone(), arguments.clone());
            }
            Event::ToolEnded {
                call_id, is_error, ..
            } => {
                if let Some(arguments) = todos.remove(call_id)
                    && !*is_error
                {
                    updates.extend(plan_of(&arguments));
                }
            }
            _ => {}
        }
        drop(todos);
        for update in updates {
            if let Err(e) = self
                .cx
                .send_notification(SessionNotification::new(id.clone(), update))
            {
                tracing::warn!(error = %e, "a session update did not reach the client");
            }
        }
    }
}

/// Approvals put to the client with `session/request_permission`.
struct ClientApprover {
    cx: ConnectionTo<Client>,
    session: OnceLock<SessionId>,
    /// Whether the client shows MCP servers' forms (`elicitation.form` in
    /// its `initialize`).
    forms: bool,
}

impl fmt::Debug for ClientApprover {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientApprover").finish_non_exhaustive()
    }
}

impl Approver for ClientApprover {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> ApprovalFuture<'a> {
        Box::pin(async move {
            let Some(session) = self.session.get() else {
                return Decided {
                    decision: ApprovalDecision::Denied {
                        reason: "the session is not open yet".to_owned(),
                    },
                    by: DecidedBy::Policy,
                };
            };
            // The answers the client may give, each with its decision;
            // "always" only where the subject allows remembering it.
            let mut answers = vec![(
                PermissionOption::new("allow-once", "Allow", PermissionOptionKind::AllowOnce),
                ApprovalDecision::Approved,
            )];
            match request.subject.remember() {
                Remember::Never => {}
                Remember::Session | Remember::SessionOrWorkspace => answers.push((
                    PermissionOption::new(
                        "allow-session",
                        "Allow for this session",
                        PermissionOptionKind::AllowAlways,
                    ),
                    ApprovalDecision::ApprovedForSession,
                )),
            }
            answers.push((
                PermissionOption::new("reject", "Reject", PermissionOptionKind::RejectOnce),
                ApprovalDecision::Denied {
                    reason: format!("the user rejected `{}`", request.tool),
                },
            ));
            let title = match &request.subject {
                ApprovalSubject::Call => format!("{} needs your approval", request.tool),
                ApprovalSubject::OutsideSandbox { justification } => {
                    format!("{} outside the sandbox: {justification}", request.tool)
                }
                ApprovalSubject::Control { path, .. } => {
                    format!("{} changes the agent's own {path}", request.tool)
                }
                ApprovalSubject::Sampling {
                    server, preview, ..
                } => format!(
                    "the MCP server {server} asks the session's model for an answer: {preview}"
                ),
            };
            let call = ToolCallUpdate::new(
                ToolCallId::new(request.call_id.clone()),
                ToolCallUpdateFields::new()
                    .title(title)
                    .raw_input(request.arguments.clone()),
            );
            let asked = RequestPermissionRequest::new(
                session.clone(),
                call,
                answers.iter().map(|(o, _)| o.clone()).collect(),
            );
            let decision = match self.cx.send_request(asked).block_task().await {
                Ok(answer) => match answer.outcome {
                    RequestPermissionOutcome::Selected(selected) => answers
                        .into_iter()
                        .find(|(o, _)| o.option_id == selected.option_id)
                        .map_or_else(
                            || ApprovalDecision::Denied {
                                reason: "the editor answered with an option it was not offered"
                                    .to_owned(),
                            },
                            |(_, decision)| decision,
                        ),
                    RequestPermissionOutcome::Cancelled => ApprovalDecision::Denied {
                        reason: "the prompt was cancelled".to_owned(),
                    },
                    _ => ApprovalDecision::Denied {
                        reason: "the editor's answer is not one evoflux knows".to_owned(),
                    },
                },
                Err(e) => ApprovalDecision::Denied {
                    reason: format!("the editor did not answer: {e}"),
                },
            };
            Decided::by_user(decision)
        })
    }
    /// An MCP server's form, put to the editor with `elicitation/create`
    /// (form mode, scoped to the tool call that asks) where it shows forms;
    /// declined, saying why, where it does not.
    fn elicit<'a>(&'a self, request: &'a ElicitationAsk) -> ElicitationFuture<'a> {
        Box::pin(async move {
            let declined = |reason: String| Elicited {
                answer: ElicitationAnswer::Decline {
                    reason: Some(reason),
                },
                by: DecidedBy::Policy,
            };
            let Some(session) = self.session.get() else {
                return declined("the session is not open yet".to_owned());
            };
            if !self.forms {
                return declined(
                    "the editor does not show forms (its `initialize` offered no \
                     elicitation.form); answer it in evoflux's chat or web UI"
                        .to_owned(),
                );
            }
            let schema: ElicitationSchema = match serde_json::from_value(request.schema.clone()) {
                Ok(schema) => schema,
                Err(e) => {
                    return declined(format!(
                        "the form's schema cannot be shown in the editor: {e}"
                    ));
                }
            };
            let scope = ElicitationSessionScope::new(session.clone())
                .tool_call_id(ToolCallId::new(request.call_id.clone()));
            let asked = CreateElicitationRequest::new(
                ElicitationMode::Form(ElicitationFormMode::new(scope, schema)),
                format!("{} asks: {}", request.server, request.message),
            );
            let by_user = |answer| Elicited {
                answer,
                by: DecidedBy::User,
            };
            match self.cx.send_request(asked).block_task().await {
                Ok(answer) => match answer.action {
                    ElicitationAction::Accept(accepted) => {
                        let content = serde_json::to_value(accepted.content.unwrap_or_default())
                            .ok()
                            .and_then(|v| v.as_object().cloned())
                            .unwrap_or_default();
                        by_user(ElicitationAnswer::Accept { content })
                    }
                    ElicitationAction::Decline => {
                        by_user(ElicitationAnswer::Decline { reason: None })
                    }
                    ElicitationAction::Cancel => by_user(ElicitationAnswer::Cancel),
                    _ => declined("the editor's answer is not one evoflux knows".to_owned()),
                },
                Err(e) => declined(format!("the editor did not answer the form: {e}")),
            }
        })
    }
}
