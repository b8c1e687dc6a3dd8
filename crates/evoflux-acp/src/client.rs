//! External agents as remote workers: evoflux as an ACP client of an
//! agent it starts (`[agents.external.<name>]`).
//!
//! The agent runs as the leader of its own process group, in the working
//! directory its declaration chooses, with the environment allowlist every
//! child of evoflux gets plus exactly the variables it declares. One
//! dispatch is one connection and one ACP session: what the agent streams
//! becomes the dispatching session's events, the permissions it asks for
//! go to that session's approver, and its final message (the text after
//! its last tool call) is the answer the harness checks against the
//! agent's result contract.
//!
//! An agent is a program evoflux does not control, so every wait on it is
//! bounded: it has `start_timeout_secs` to answer `initialize` and
//! `session/new`, and may stay silent for at most `idle_timeout_secs`
//! while it works on a prompt (time its permission requests wait for the
//! user does not count). Past either, its process group is killed and the
//! dispatch fails with a code the lead sees (`acp/start-timeout`,
//! `acp/idle-timeout`) and the key to raise. A turn in which one of its
//! permission requests was denied fails (`acp/permission-denied`): what it
//! answered after being blocked is not the task done.

use std::fmt;
use std::path::Path;
use std::pin::Pin;
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    ClientCapabilities, ContentBlock, Implementation, InitializeRequest, NewSessionRequest,
    PermissionOptionKind, PromptRequest, RequestPermissionOutcome, RequestPermissionRequest,
    RequestPermissionResponse, SelectedPermissionOutcome, SessionNotification, StopReason,
    TextContent,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{ByteStreams, Error};
use evoflux_core::external_agent::{MAX_IDLE_TIMEOUT_SECS, MAX_START_TIMEOUT_SECS};
use evoflux_harness::approval::{ApprovalDecision, ApprovalRequest, ApprovalSubject, Approver};
use evoflux_harness::remote::{
    RemoteAgent, RemoteAgents, RemoteError, RemoteFuture, RemoteSession, RemoteStop, RemoteTurn,
};
use evoflux_harness::{Event, EventSink, ProcessGroup};
use tokio::io::{AsyncRead, AsyncReadExt, ReadBuf};
use tokio::sync::{mpsc, oneshot};
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

use crate::updates::RemoteCalls;

/// How long a closed agent has to exit before its process group is
/// killed.
pub const REMOTE_EXIT_GRACE: Duration = Duration::from_secs(2);

/// The most of a failed agent's stderr an error quotes.
const STDERR_TAIL_BYTES: usize = 2_000;

/// Starts external agents over ACP.
#[derive(Debug, Default, Clone, Copy)]
pub struct AcpRemoteAgents;

impl RemoteAgents for AcpRemoteAgents {
    fn open<'a>(
        &'a self,
        agent: &'a RemoteAgent,
        cwd: &'a Path,
        events: Arc<dyn EventSink>,
        approver: Arc<dyn Approver>,
    ) -> RemoteFuture<'a, Box<dyn RemoteSession>> {
        Box::pin(async move {
            let session = open(agent, cwd, events, approver).await?;
            Ok(Box::new(session) as Box<dyn RemoteSession>)
        })
    }
}

fn failed(code: &'static str, message: impl Into<String>) -> RemoteError {
    RemoteError {
        code,
        message: message.into(),
    }
}

/// A prompt for the connection's task, and where its end goes.
type Prompt = (String, oneshot::Sender<Result<RemoteTurn, RemoteError>>);

/// When the agent last sent anything, and how many of its permission
/// requests are waiting for an answer (while one waits, the agent is
/// waiting on us, not silent).
#[derive(Debug)]
struct Activity {
    last: Mutex<Instant>,
    asking: AtomicUsize,
}

impl Activity {
    fn new() -> Activity {
        Activity {
            last: Mutex::new(Instant::now()),
            asking: AtomicUsize::new(0),
        }
    }

    fn touch(&self) {
        *self.last.lock().unwrap_or_else(|p| p.into_inner()) = Instant::now();
    }

    fn last(&self) -> Instant {
        *self.last.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether the agent has been silent for `idle`, with nothing of its
    /// waiting on us.
    fn silent_for(&self, idle: Duration) -> bool {
        self.asking.load(Ordering::SeqCst) == 0 && self.last().elapsed() >= idle
    }

    /// When to look again whether it has been silent for `idle`.
    fn next_look(&self, idle: Duration) -> tokio::time::Instant {
        let from = if self.asking.load(Ordering::SeqCst) > 0 {
            Instant::now()
        } else {
            self.last()
        };
        tokio::time::Instant::from_std(from + idle)
    }

    /// Marks a permission request of the agent's as waiting until the
    /// guard drops; its answer counts as activity.
    fn asking(self: &Arc<Self>) -> Asking {
        self.asking.fetch_add(1, Ordering::SeqCst);
        Asking(Arc::clone(self))
    }
}

struct Asking(Arc<Activity>);

impl Drop for Asking {
    fn drop(&mut self) {
        self.0.touch();
        self.0.asking.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The agent's stdout, noting each read in its [`Activity`]: any message
/// it sends (a response, a notification, a request of its own) shows it
/// is alive.
struct Watched<R> {
    inner: R,
    activity: Arc<Activity>,
}

impl<R: AsyncRead + Unpin> AsyncRead for Watched<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.activity.touch();
        }
        polled
    }
}

/// One of the agent's bounds, clamped to what the config accepts (a
/// [`RemoteAgent`] built in code is not checked by the config reader).
fn bound(secs: u64, max: u64) -> Duration {
    Duration::from_secs(secs.clamp(1, max))
}

/// ` in <file>` when the agent's declaring file is known.
fn in_file(agent: &RemoteAgent) -> String {
    agent
        .file
        .as_ref()
        .map(|f| format!(" in {}", f.display()))
        .unwrap_or_default()
}

/// Kills the agent's process group now and reaps its leader, so nothing
/// of it is left running when the dispatch reports the failure.
async fn stop_now(group: Option<ProcessGroup>, child: Option<&mut tokio::process::Child>) {
    if let Some(group) = group {
        group.kill();
    }
    if let Some(child) = child {
        let _ = child.start_kill();
        let _ = tokio::time::timeout(REMOTE_EXIT_GRACE, child.wait()).await;
    }
}

async fn open(
    agent: &RemoteAgent,
    cwd: &Path,
    events: Arc<dyn EventSink>,
    approver: Arc<dyn Approver>,
) -> Result<AcpSession, RemoteError> {
    let name = agent.spec.id.clone();
    let Some((program, args)) = agent.launch.command.split_first() else {
        return Err(failed(
            "acp/agent-start-failed",
            format!("external agent `{name}` has no command"),
        ));
    };
    let mut command = tokio::process::Command::new(program);
    command
        .args(args)
        .current_dir(cwd)
        .env_clear()
        .envs(environment(&agent.launch.env))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    // Its own group, so closing the session reaches every process it
    // started, and a Ctrl-C in evoflux's terminal does not hit it directly.
    command.process_group(0);
    let mut child = command.spawn().map_err(|e| {
        failed(
            "acp/agent-start-failed",
            format!("cannot start `{program}` for external agent `{name}`: {e}"),
        )
    })?;
    let group = child.id().and_then(ProcessGroup::led_by);
    let (Some(stdin), Some(stdout), Some(mut stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        stop_now(group, Some(&mut child)).await;
        return Err(failed(
            "acp/agent-start-failed",
            format!("external agent `{name}` started without its pipes"),
        ));
    };
    // The tail of what it says on stderr, for the error when it fails.
    let tail = Arc::new(Mutex::new(Vec::new()));
    let stderr_tail = Arc::clone(&tail);
    tokio::spawn(async move {
        let mut buf = [0u8; 4096];
        while let Ok(n) = stderr.read(&mut buf).await {
            if n == 0 {
                break;
            }
            let mut tail = stderr_tail.lock().unwrap_or_else(|p| p.into_inner());
            tail.extend_from_slice(&buf[..n]);
            let excess = tail.len().saturating_sub(STDERR_TAIL_BYTES);
            tail.drain(..excess);
        }
    });

    let (ready_tx, ready_rx) = oneshot::channel::<Result<String, RemoteError>>();
    let (prompts_tx, mut prompts_rx) = mpsc::unbounded_channel::<Prompt>();
    // The agent's message since its last tool call.
    let message = Arc::new(Mutex::new(String::new()));
    // The permissions denied to it during the current prompt.
    let denied = Arc::new(Mutex::new(Vec::<String>::new()));
    let activity = Arc::new(Activity::new());
    let watched = Watched {
        inner: stdout,
        activity: Arc::clone(&activity),
    };
    let transport = ByteStreams::new(stdin.compat_write(), watched.compat());
    let cwd = cwd.to_path_buf();
    let streamed = Arc::clone(&message);
    let calls = Arc::new(Mutex::new(RemoteCalls::default()));
    let asked = Arc::clone(&activity);
    let refused = Arc::clone(&denied);
    let connection_name = name.clone();
    let connection = tokio::spawn(async move {
        let ready_name = connection_name.clone();
        agent_client_protocol::Client
            .v1()
            .name("evoflux")
            .on_receive_notification(
                async move |notification: SessionNotification,
                            _cx: ConnectionTo<agent_client_protocol::Agent>| {
                    let seen = calls
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .events_of(&notification.update);
                    let mut text = streamed.lock().unwrap_or_else(|p| p.into_inner());
                    if seen.new_stretch {
                        text.clear();
                    }
                    for event in &seen.events {
                        if let Event::MessageDelta { text: delta } = event {
                            text.push_str(delta);
                        }
                    }
                    drop(text);
                    for event in &seen.events {
                        events.emit(event);
                    }
                    Ok(())
                },
                agent_client_protocol::on_receive_notification!(),
            )
            .on_receive_request(
                async move |request: RequestPermissionRequest,
                            responder: Responder<RequestPermissionResponse>,
                            _cx: ConnectionTo<agent_client_protocol::Agent>| {
                    // The dispatching session's approver decides, off the
                    // connection's loop (it may wait for the user).
                    tokio::spawn(answer_permission(
                        Arc::clone(&approver),
                        request,
                        responder,
                        asked.asking(),
                        Arc::clone(&refused),
                    ));
                    Ok(())
                },
                agent_client_protocol::on_receive_request!(),
            )
            .connect_with(
                transport,
                async move |cx: ConnectionTo<agent_client_protocol::Agent>| {
                    let started = start_session(&cx, &cwd).await;
                    let session = match started {
                        Ok(session) => {
                            let _ = ready_tx.send(Ok(session.to_string()));
                            session
                        }
                        Err(e) => {
                            let _ = ready_tx.send(Err(failed(
                                "acp/agent-start-failed",
                                format!(
                                    "external agent `{ready_name}` did not open a session: {e}"
                                ),
                            )));
                            return Ok(());
                        }
                    };
                    while let Some((text, reply)) = prompts_rx.recv().await {
                        message.lock().unwrap_or_else(|p| p.into_inner()).clear();
                        denied.lock().unwrap_or_else(|p| p.into_inner()).clear();
                        let request = PromptRequest::new(
                            session.clone(),
                            vec![ContentBlock::Text(TextContent::new(text))],
                        );
                        let answered = cx.send_request(request).block_task().await;
                        let text =
                            std::mem::take(&mut *message.lock().unwrap_or_else(|p| p.into_inner()));
                        let refusals =
                            std::mem::take(&mut *denied.lock().unwrap_or_else(|p| p.into_inner()));
                        let _ = reply.send(match answered {
                            Ok(_) if !refusals.is_empty() => Err(failed(
                                "acp/permission-denied",
                                format!(
                                    "external agent `{connection_name}` was denied permission \
                                     for {}, so its turn does not count as the task done; what \
                                     it said last: {text}",
                                    refusals.join(", ")
                                ),
                            )),
                            Ok(response) => Ok(RemoteTurn {
                                text,
                                stop: stop_of(response.stop_reason),
                            }),
                            Err(e) => Err(failed(
                                "acp/prompt-failed",
                                format!(
                                    "external agent `{connection_name}` failed the prompt: {e}"
                                ),
                            )),
                        });
                    }
                    Ok(())
                },
            )
            .await
    });
    let start = bound(agent.launch.start_timeout_secs, MAX_START_TIMEOUT_SECS);
    let id = match tokio::time::timeout(start, ready_rx).await {
        Ok(Ok(Ok(id))) => id,
        Ok(Ok(Err(e))) => {
            stop_now(group, Some(&mut child)).await;
            return Err(with_stderr(e, &tail));
        }
        Err(_) => {
            connection.abort();
            stop_now(group, Some(&mut child)).await;
            return Err(with_stderr(
                failed(
                    "acp/start-timeout",
                    format!(
                        "external agent `{name}` did not answer `initialize` and `session/new` \
                         within {} s, so it was stopped; if it needs longer to start, raise \
                         `agents.external.{name}.start_timeout_secs`{}",
                        start.as_secs(),
                        in_file(agent)
                    ),
                ),
                &tail,
            ));
        }
        Ok(Err(_)) => {
            let ended = connection.await;
            let why = match ended {
                Ok(Err(e)) => e.to_string(),
                Ok(Ok(())) => "it closed the connection".to_owned(),
                Err(e) => e.to_string(),
            };
            stop_now(group, Some(&mut child)).await;
            return Err(with_stderr(
                failed(
                    "acp/agent-start-failed",
                    format!("external agent `{name}` did not start: {why}"),
                ),
                &tail,
            ));
        }
    };
    Ok(AcpSession {
        idle_message: format!(
            "raise `agents.external.{name}.idle_timeout_secs`{}",
            in_file(agent)
        ),
        name,
        id,
        idle: bound(agent.launch.idle_timeout_secs, MAX_IDLE_TIMEOUT_SECS),
        activity,
        prompts: Some(prompts_tx),
        connection: Some(connection),
        child: Some(child),
        group,
        stderr: tail,
    })
}

/// Initializes the connection and opens a session in `cwd`.
async fn start_session(
    cx: &ConnectionTo<agent_client_protocol::Agent>,
    cwd: &Path,
) -> Result<agent_client_protocol::v1::schema::SessionId, Error> {
    cx.send_request(
        InitializeRequest::new(ProtocolVersion::V1)
            // evoflux offers no file system or terminal of its own: the
            // agent works on the directory it runs in.
            .client_capabilities(ClientCapabilities::new())
            .client_info(Implementation::new("evoflux", env!("CARGO_PKG_VERSION"))),
    )
    .block_task()
    .await?;
    Ok(cx
        .send_request(NewSessionRequest::new(cwd.to_path_buf()))
        .block_task()
        .await?
        .session_id)
}

/// Puts the agent's permission request to the dispatching session's
/// approver and answers with the option of the matching kind; a denial is
/// noted in `denied` (before the agent hears it, so before its turn can
/// end). The agent counts as waiting on us until `_asking` drops.
async fn answer_permission(
    approver: Arc<dyn Approver>,
    request: RequestPermissionRequest,
    responder: Responder<RequestPermissionResponse>,
    _asking: Asking,
    denied: Arc<Mutex<Vec<String>>>,
) -> Result<(), Error> {
    let approval = ApprovalRequest {
        session_id: request.session_id.to_string(),
        call_id: request.tool_call.tool_call_id.to_string(),
        tool: request
            .tool_call
            .fields
            .title
            .clone()
            .unwrap_or_else(|| "a tool of the external agent".to_owned()),
        arguments: request
            .tool_call
            .fields
            .raw_input
            .clone()
            .unwrap_or(serde_json::Value::Null),
        subject: ApprovalSubject::Call,
        // The external agent runs its tools where it runs; ACP's request
        // does not say in which folder.
        workdir: None,
    };
    let wanted: &[PermissionOptionKind] = match approver.approve(&approval).await.decision {
        ApprovalDecision::Approved => &[PermissionOptionKind::AllowOnce],
        ApprovalDecision::ApprovedForSession | ApprovalDecision::ApprovedForWorkspace => &[
            PermissionOptionKind::AllowAlways,
            PermissionOptionKind::AllowOnce,
        ],
        ApprovalDecision::Denied { reason } => {
            denied
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(format!("`{}` ({reason})", approval.tool));
            &[PermissionOptionKind::RejectOnce]
        }
    };
    let chosen = wanted.iter().find_map(|kind| {
        request
            .options
            .iter()
            .find(|o| o.kind == *kind)
            .map(|o| o.option_id.clone())
    });
    responder.respond(RequestPermissionResponse::new(match chosen {
        Some(id) => RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(id)),
        None => RequestPermissionOutcome::Cancelled,
    }))
}

fn stop_of(reason: StopReason) -> RemoteStop {
    match reason {
        StopReason::EndTurn => RemoteStop::EndTurn,
        StopReason::MaxTokens => RemoteStop::MaxTokens,
        StopReason::MaxTurnRequests => RemoteStop::MaxTurnRequests,
        StopReason::Refusal => RemoteStop::Refusal,
        StopReason::Cancelled => RemoteStop::Cancelled,
        // A reason of a later protocol: the turn ended all the same.
        _ => RemoteStop::EndTurn,
    }
}

/// The agent's environment: the allowlist every child of evoflux gets,
/// plus the declared names that are set (only the user's or admin's
/// config declares an external agent, so their choice stands).
fn environment(declared: &[String]) -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
    std::env::vars_os()
        .filter(|(name, _)| {
            name.to_str().is_some_and(|n| {
                evoflux_core::child_env::is_inherited(n) || declared.iter().any(|d| d == n)
            })
        })
        .collect()
}

fn with_stderr(mut error: RemoteError, tail: &Mutex<Vec<u8>>) -> RemoteError {
    let tail = tail.lock().unwrap_or_else(|p| p.into_inner());
    let text = String::from_utf8_lossy(&tail);
    let text = text.trim();
    if !text.is_empty() {
        error.message = format!("{}; its stderr ends with: {text}", error.message);
    }
    error
}

/// One ACP session on a started agent. Dropping it closes the connection
/// and the agent's stdin, gives the agent [`REMOTE_EXIT_GRACE`] to exit,
/// then kills its process group.
struct AcpSession {
    name: String,
    id: String,
    /// How long it may stay silent during a prompt, and what to do about
    /// it when it does.
    idle: Duration,
    idle_message: String,
    activity: Arc<Activity>,
    prompts: Option<mpsc::UnboundedSender<Prompt>>,
    connection: Option<tokio::task::JoinHandle<Result<(), Error>>>,
    child: Option<tokio::process::Child>,
    group: Option<ProcessGroup>,
    stderr: Arc<Mutex<Vec<u8>>>,
}

impl fmt::Debug for AcpSession {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AcpSession")
            .field("name", &self.name)
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl RemoteSession for AcpSession {
    fn id(&self) -> &str {
        &self.id
    }

    fn prompt<'a>(&'a mut self, text: &'a str) -> RemoteFuture<'a, RemoteTurn> {
        Box::pin(async move {
            let (reply, ended) = oneshot::channel();
            let sent = self
                .prompts
                .as_ref()
                .is_some_and(|p| p.send((text.to_owned(), reply)).is_ok());
            let lost = || {
                with_stderr(
                    failed(
                        "acp/agent-exited",
                        format!("external agent `{}` is gone", self.name),
                    ),
                    &self.stderr,
                )
            };
            if !sent {
                return Err(lost());
            }
            self.activity.touch();
            let mut ended = ended;
            loop {
                let look = self.activity.next_look(self.idle);
                tokio::select! {
                    turn = &mut ended => return turn.unwrap_or_else(|_| Err(lost())),
                    () = tokio::time::sleep_until(look) => {
                        if self.activity.silent_for(self.idle) {
                            break;
                        }
                    }
                }
            }
            self.prompts.take();
            if let Some(connection) = self.connection.take() {
                connection.abort();
            }
            stop_now(self.group, self.child.as_mut()).await;
            Err(with_stderr(
                failed(
                    "acp/idle-timeout",
                    format!(
                        "external agent `{}` sent nothing for {} s while working on the task, \
                         so it was stopped; if it works silently for longer, {}",
                        self.name,
                        self.idle.as_secs(),
                        self.idle_message
                    ),
                ),
                &self.stderr,
            ))
        })
    }
}

impl Drop for AcpSession {
    fn drop(&mut self) {
        // No more prompts: the connection's task returns, which closes the
        // agent's stdin.
        self.prompts.take();
        let connection = self.connection.take();
        let child = self.child.take();
        let group = self.group;
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            if let Some(group) = group {
                group.kill();
            }
            return;
        };
        runtime.spawn(async move {
            let exited = async {
                if let Some(connection) = connection {
                    let _ = connection.await;
                }
                if let Some(mut child) = child {
                    let _ = child.wait().await;
                }
            };
            if tokio::time::timeout(REMOTE_EXIT_GRACE, exited)
                .await
                .is_err()
                && let Some(group) = group
            {
                group.kill();
            }
            // What the agent left behind in its group goes with it.
            if let Some(group) = group
                && group.is_alive()
            {
                group.kill();
            }
        });
    }
}
