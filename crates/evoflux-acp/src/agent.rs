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

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, CancelNotification, ClientCapabilities, InitializeRequest,
    InitializeResponse, LoadSessionRequest, LoadSessionResponse, NewSessionRequest,
    NewSessionResponse, PermissionOption, PermissionOptionKind, PromptCapabilities, PromptRequest,
    PromptResponse, ReadTextFileRequest, RequestPermissionOutcome, RequestPermissionRequest,
    SessionId, SessionNotification, StopReason, ToolCallId, ToolCallUpdate, ToolCallUpdateFields,
    WriteTextFileRequest,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{ByteStreams, Client, Error};
use evoflux_app::{AppContext, ReopenBuilder, SessionBuilder, SessionOptions, WireBuilder};
use evoflux_core::AppMode;
use evoflux_harness::approval::{ApprovalFuture, ApprovalSubject, Remember};
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

use crate::updates::{ToolShapes, history, prompt_text, update_of};

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
                                        PromptCapabilities::new().embedded_context(true),
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
                    let options = SessionOptions {
                        mode: Some(AppMode::Coding),
                        workspaces: vec![request.cwd.clone()],
                        lead: state.options.lead.clone(),
                        model: state.options.model.clone(),
                        resume: None,
                        limits: state.options.limits,
                    };
                    match state.open(&cx, options).await {
                        Ok((id, _)) => responder.respond(NewSessionResponse::new(id)),
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
                    match state.load(&cx, &request.session_id).await {
                        Ok(()) => responder.respond(LoadSessionResponse::new()),
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
        .on_receive_notification(
            {
                let state = Arc::clone(&state);
                async move |notification: CancelNotification, _cx: ConnectionTo<Client>| {
                    if let Some(live) = state.live(&notification.session_id) {
                        live.cancel();
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
    sessions: Mutex<HashMap<SessionId, SessionHost>>,
    /// What the client offers, from its `initialize`.
    client: Mutex<Option<ClientCapabilities>>,
    /// This agent, as the leases of its turns name it.
    holder: Holder,
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
        HostError::Busy | HostError::Lease(LeaseError::Busy { .. }) => INVALID_PARAMS,
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
            .store(self.store.clone());
        let mut harness = builder.open().await?.harness;
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
    fn live(&self, id: &SessionId) -> Option<SessionHost> {
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
    ) -> Result<(SessionId, SessionHost), Error> {
        let events = Arc::new(ClientEvents {
            cx: cx.clone(),
            target: OnceLock::new(),
        });
        let approver = Arc::new(ClientApprover {
            cx: cx.clone(),
            session: OnceLock::new(),
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
        });
        let harness = front
            .open(wiring.wire(SessionBuilder::new(&self.app, options)))
            .await
            .map_err(|e| open_error(&e))?;
        let id = SessionId::new(harness.session().id.to_string());
        let _ = events.target.set((id.clone(), shapes_of(&harness)));
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
            .insert(id.clone(), host.clone());
        Ok((id, host))
    }

    /// `session/load`: the stored session resumed as it was persisted,
    /// its conversation replayed to the client before the answer.
    async fn load(&self, cx: &ConnectionTo<Client>, id: &SessionId) -> Result<(), Error> {
        let host = match self.live(id) {
            Some(host) => host,
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
                self.open(cx, options).await?.1
            }
        };
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
        Ok(())
    }

    /// `session/prompt`: a turn submitted to the session's host, answered
    /// when it ends.
    fn prompt(
        self: &Arc<Self>,
        request: PromptRequest,
        responder: Responder<PromptResponse>,
        _cx: ConnectionTo<Client>,
    ) -> Result<(), Error> {
        let Some(host) = self.live(&request.session_id) else {
            return responder.respond_with_error(Error::from(
                agent_client_protocol::v1::schema::Error::session_not_found(request.session_id),
            ));
        };
        let text = prompt_text(&request.prompt);
        tokio::spawn(async move {
            let ended = match host.submit(Some(text), TurnOptions::default()).await {
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
            .map(|(_, h)| h)
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
    /// for the client).
    target: OnceLock<(SessionId, ToolShapes)>,
}

impl fmt::Debug for ClientEvents {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientEvents").finish_non_exhaustive()
    }
}

impl EventSink for ClientEvents {
    fn emit(&self, event: &Event) {
        let Some((id, shapes)) = self.target.get() else {
            return;
        };
        if let Some(update) = update_of(event, shapes)
            && let Err(e) = self
                .cx
                .send_notification(SessionNotification::new(id.clone(), update))
        {
            tracing::warn!(error = %e, "a session update did not reach the client");
        }
    }
}

/// Approvals put to the client with `session/request_permission`.
struct ClientApprover {
    cx: ConnectionTo<Client>,
    session: OnceLock<SessionId>,
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
}
