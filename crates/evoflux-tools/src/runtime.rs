//! The application's command runtime: it owns every command started by
//! `shell`, a command-backed tool or a user's `!command`, scoped by
//! session, and stops them all at shutdown.
//!
//! One [`ProcessRuntime`] exists per application (clones share it). Each
//! command journals its output to `<artifacts_root>/<session>/<id>.txt`.
//! A session sees and touches only its own commands: `process` in another
//! session answers "not found" for an id it did not start.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use evoflux_core::ids::{Ids, SessionId};
use evoflux_graph::tool::CommandTool;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::time::{Instant, sleep, timeout};

use crate::error::ToolError;
use crate::group::ProcessGroup;
use crate::lineage::Lineage;
use crate::observation::CommandStatus;
use crate::output::ToolOutput;
use crate::preview::{
    MAX_SESSION_PREVIEWS, Preview, PreviewAction, PreviewBrowser, PreviewChange, PreviewInfo,
    PreviewOutcome, PreviewRequest,
};
use crate::process::{ProcessAction, ProcessRequest};
use crate::sandbox::{Bubblewrap, CommandSandbox};
use crate::shell::{ShellRequest, user_shell};
use crate::sync::lock;
use crate::tracked::{Moment, Role, SpawnSpec, Tracked};
use crate::workspace::Workspace;

/// A command fixed by its caller, for [`ProcessRuntime::run_argv`].
#[derive(Debug, Clone)]
pub struct ArgvCommand {
    /// Program first; a relative program with a slash is relative to the
    /// primary root, a bare name is looked up on the command's `PATH`.
    pub argv: Vec<String>,
    pub cwd: PathBuf,
    /// The whole environment.
    pub env: Vec<(OsString, OsString)>,
    pub timeout: Duration,
}

/// Default ceiling of any command's timeout (the sandbox policy's
/// `max_execution_seconds` default).
pub const DEFAULT_MAX_TIMEOUT: Duration = Duration::from_secs(600);
/// Time a command gets between SIGTERM and SIGKILL.
pub const DEFAULT_TERMINATE_GRACE: Duration = Duration::from_secs(5);
/// How long, after a command's main process exited, the journal waits for
/// processes it left in the background to close the output pipe.
pub const DEFAULT_EXIT_DRAIN: Duration = Duration::from_millis(500);
/// Commands one session may track at once.
pub const MAX_SESSION_PROCESSES: usize = 100;

/// How the runtime is set up. Built with [`RuntimeConfig::new`] and
/// adjusted field by field.
#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    /// `<data_dir>/artifacts`; each session journals under its own folder.
    pub artifacts_root: PathBuf,
    /// Ceiling for `timeout_seconds` (the sandbox policy's limit).
    pub max_timeout: Duration,
    pub terminate_grace: Duration,
    pub exit_drain: Duration,
    /// The environment commands draw their allowlisted variables from:
    /// the application's own environment by default, explicit in tests.
    pub parent_env: Vec<(OsString, OsString)>,
    /// Source of the opaque process ids.
    pub ids: Ids,
    /// Where live runtimes record themselves (`<data_dir>/runs`), so the
    /// next one reaps what a killed one left; `None`: no record, no reaping.
    pub runs_dir: Option<PathBuf>,
}

impl RuntimeConfig {
    /// Defaults, with the current process environment as the parent.
    pub fn new(artifacts_root: impl Into<PathBuf>) -> RuntimeConfig {
        RuntimeConfig {
            artifacts_root: artifacts_root.into(),
            max_timeout: DEFAULT_MAX_TIMEOUT,
            terminate_grace: DEFAULT_TERMINATE_GRACE,
            exit_drain: DEFAULT_EXIT_DRAIN,
            parent_env: std::env::vars_os().collect(),
            ids: Ids::system(),
            runs_dir: None,
        }
    }
}

/// The final observation of a command started with `notify_on_exit`,
/// sent when it ends while no call is waiting on it. The harness wakes
/// the session's turn with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExitNotice {
    pub session: SessionId,
    pub process_id: String,
    pub command: String,
    /// The same text and [`crate::CommandMeta`] a `process wait` would
    /// have returned.
    pub output: ToolOutput,
}

/// Owns every tracked command of the application. Cheap to clone.
#[derive(Debug, Clone)]
pub struct ProcessRuntime {
    inner: Arc<Inner>,
}

#[derive(Debug)]
pub(crate) struct Inner {
    config: RuntimeConfig,
    shell: PathBuf,
    closed: AtomicBool,
    sessions: Mutex<HashMap<SessionId, SessionState>>,
    /// Every process group started and possibly still alive, including
    /// those whose leader ended but left background jobs behind.
    groups: Mutex<Vec<(SessionId, Role, ProcessGroup)>>,
    /// The sandbox program, found once for every session's commands.
    bwrap: Bubblewrap,
    /// The tag every command carries, to find the ones that escaped.
    pub(crate) lineage: Lineage,
    /// Whether any command started (nothing to sweep otherwise).
    started_any: AtomicBool,
}

#[derive(Debug, Default)]
struct SessionState {
    /// Tracked commands in start order.
    processes: Vec<Arc<Tracked>>,
    /// The session's previews, apart from its commands.
    previews: Vec<Arc<Preview>>,
    exits: Option<mpsc::UnboundedSender<ExitNotice>>,
    /// Notices sent before anyone subscribed, handed to the subscriber.
    unclaimed: Option<mpsc::UnboundedReceiver<ExitNotice>>,
    /// The sandbox the session's commands run under.
    sandbox: Option<Arc<CommandSandbox>>,
}

impl ProcessRuntime {
    /// A runtime, first reaping what runtimes killed before it left
    /// running (see `runs_dir`).
    pub fn new(config: RuntimeConfig) -> ProcessRuntime {
        let shell = user_shell(&config.parent_env);
        let (lineage, reaped) = Lineage::start(config.runs_dir.as_deref());
        if reaped > 0 {
            tracing::warn!(
                reaped,
                "stopped processes that a killed evoflux left running"
            );
        }
        ProcessRuntime {
            inner: Arc::new(Inner {
                config,
                shell,
                closed: AtomicBool::new(false),
                sessions: Mutex::new(HashMap::new()),
                groups: Mutex::new(Vec::new()),
                bwrap: Bubblewrap::default(),
                lineage,
                started_any: AtomicBool::new(false),
            }),
        }
    }

    /// The shell `shell` runs commands with (`$SHELL` of the parent
    /// environment when it is a POSIX shell).
    pub fn shell_program(&self) -> &std::path::Path {
        &self.inner.shell
    }

    /// The `shell` tool on the model's JSON input.
    pub async fn shell(
        &self,
        session: SessionId,
        ws: &Workspace,
        input: &Value,
    ) -> Result<ToolOutput, ToolError> {
        self.run_shell(session, ws, ShellRequest::parse(input)?)
            .await
    }

    /// Runs one shell command: a completed observation when it ends within
    /// `yield_time_ms`, else a running one with its process id.
    pub async fn run_shell(
        &self,
        session: SessionId,
        ws: &Workspace,
        request: ShellRequest,
    ) -> Result<ToolOutput, ToolError> {
        if request.command.trim().is_empty() {
            return Ok(ToolOutput::ok("[Succeeded]\n\n(No output)"));
        }
        let spec = request.spawn_spec(ws, &self.inner.shell, &self.inner.config)?;
        let tracked = self.inner.start(session, &spec)?;
        Ok(self
            .inner
            .first_observation(&tracked, Some(request.yield_time()))
            .await)
    }

    /// Runs one shell command outside the session's sandbox (its timeout
    /// ceiling and environment allowlist still apply). Only for a command
    /// the user approved running outside: the harness calls this after
    /// asking; nothing the model sends reaches it directly.
    pub async fn run_shell_outside_sandbox(
        &self,
        session: SessionId,
        ws: &Workspace,
        request: ShellRequest,
    ) -> Result<ToolOutput, ToolError> {
        if request.command.trim().is_empty() {
            return Ok(ToolOutput::ok("[Succeeded]\n\n(No output)"));
        }
        let mut spec = request.spawn_spec(ws, &self.inner.shell, &self.inner.config)?;
        spec.outside_sandbox = true;
        let tracked = self.inner.start(session, &spec)?;
        Ok(self
            .inner
            .first_observation(&tracked, Some(request.yield_time()))
            .await)
    }

    /// A command the user typed as `!command` in chat: the same runtime,
    /// formatter and [`crate::CommandMeta`] as the model's `shell`.
    pub async fn run_user_command(
        &self,
        session: SessionId,
        ws: &Workspace,
        command: &str,
    ) -> Result<ToolOutput, ToolError> {
        self.run_shell(session, ws, ShellRequest::new(command))
            .await
    }

    /// The `process` tool on the model's JSON input.
    pub async fn process(
        &self,
        session: SessionId,
        input: &Value,
    ) -> Result<ToolOutput, ToolError> {
        self.run_process(session, ProcessRequest::parse(input)?)
            .await
    }

    /// `list`, `poll`, `wait` or `terminate` on this session's commands.
    pub async fn run_process(
        &self,
        session: SessionId,
        request: ProcessRequest,
    ) -> Result<ToolOutput, ToolError> {
        match request.action {
            ProcessAction::List => Ok(ToolOutput::ok(self.inner.list(session))),
            ProcessAction::Poll => {
                let tracked = self.inner.find(session, request.id()?)?;
                Ok(self.inner.observe(&tracked, Moment::Later))
            }
            ProcessAction::Wait => {
                let tracked = self.inner.find(session, request.id()?)?;
                let waiter = tracked.waiter();
                let _ = timeout(request.wait_time(), tracked.finished()).await;
                let output = self.inner.observe(&tracked, Moment::Later);
                drop(waiter);
                Ok(output)
            }
            ProcessAction::Terminate => {
                let tracked = self.inner.find(session, request.id()?)?;
                let waiter = tracked.waiter();
                tracked.request_stop();
                let _ = timeout(self.inner.stop_bound(), tracked.finished()).await;
                let output = self.inner.observe(&tracked, Moment::Later);
                drop(waiter);
                Ok(output)
            }
        }
    }

    /// Runs a command-backed project tool: `argv` with whole-argument
    /// placeholders filled from `input`, no shell, a closed environment,
    /// stdin closed, the tool's timeout, in the primary workspace root.
    /// Waits for the end; the observation is the same as `shell`'s.
    pub async fn run_command_tool(
        &self,
        session: SessionId,
        ws: &Workspace,
        tool: &CommandTool,
        input: &Value,
    ) -> Result<ToolOutput, ToolError> {
        let spec = crate::command_tool::spawn_spec(tool, ws, input, &self.inner.config)?;
        let tracked = self.inner.start(session, &spec)?;
        Ok(self.inner.first_observation(&tracked, None).await)
    }

    /// Runs a command its caller fixed completely (a registered check
    /// command of `fleets/commands.yaml`): argv without a shell, no stdin,
    /// in `cwd`, with exactly `env`, under the session's sandbox, journalled
    /// like every command, waiting for its end or its timeout.
    pub async fn run_argv(
        &self,
        session: SessionId,
        ws: &Workspace,
        command: ArgvCommand,
    ) -> Result<ToolOutput, ToolError> {
        let mut argv = command.argv.into_iter();
        let Some(first) = argv.next() else {
            return Err(ToolError::CommandToolInvalid {
                field: "argv".into(),
                message: "argv names no program".into(),
            });
        };
        let display = std::iter::once(first.as_str())
            .chain(argv.as_slice().iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ");
        let spec = SpawnSpec {
            program: crate::command_tool::program(&ws.roots()[0], &first.into()),
            args: argv.map(OsString::from).collect(),
            cwd: command.cwd,
            env: command.env,
            display,
            timeout: command.timeout,
            notify_on_exit: false,
            outside_sandbox: false,
            fds: Vec::new(),
            role: crate::tracked::Role::Command,
        };
        let tracked = self.inner.start(session, &spec)?;
        Ok(self.inner.first_observation(&tracked, None).await)
    }

    /// The environment commands are given a selection of.
    pub fn parent_env(&self) -> &[(OsString, OsString)] {
        &self.inner.config.parent_env
    }

    /// Confines every later command of `session` to `sandbox`. The
    /// harness sets it when the session opens; a session without one runs
    /// commands as the library's caller set them up (tests of this crate).
    pub fn confine(&self, session: SessionId, sandbox: CommandSandbox) {
        lock(&self.inner.sessions)
            .entry(session)
            .or_default()
            .sandbox = Some(Arc::new(sandbox));
    }

    /// Whether the session tracks any command (running, or ended but not
    /// yet observed): the harness offers the deferred `process` tool then.
    pub fn has_processes(&self, session: SessionId) -> bool {
        lock(&self.inner.sessions)
            .get(&session)
            .is_some_and(|s| !s.processes.is_empty())
    }

    /// The session's exit notices (for commands started with
    /// `notify_on_exit`). Notices sent before the first subscription are
    /// buffered and delivered to it; subscribing again replaces the
    /// previous receiver, which then sees its channel closed.
    pub fn subscribe_exits(&self, session: SessionId) -> mpsc::UnboundedReceiver<ExitNotice> {
        let mut sessions = lock(&self.inner.sessions);
        let state = sessions.entry(session).or_default();
        match (state.exits.is_some(), state.unclaimed.take()) {
            (true, Some(buffered)) => buffered,
            _ => {
                let (tx, rx) = mpsc::unbounded_channel();
                state.exits = Some(tx);
                rx
            }
        }
    }

    /// Stops every command of one session (TERM, grace, KILL), including
    /// jobs they left in the background, and forgets them. Its previews
    /// keep running (a cancelled turn calls this): closing the session is
    /// [`ProcessRuntime::close_session`].
    pub async fn terminate_session(&self, session: SessionId) {
        self.inner
            .stop(Scope {
                session: Some(session),
                previews: false,
            })
            .await;
        let mut sessions = lock(&self.inner.sessions);
        if let Some(state) = sessions.get_mut(&session) {
            state.processes.clear();
        }
    }

    /// The session closes: stops its commands and its previews, and
    /// forgets them.
    pub async fn close_session(&self, session: SessionId) {
        self.inner
            .stop(Scope {
                session: Some(session),
                previews: true,
            })
            .await;
        let mut sessions = lock(&self.inner.sessions);
        if let Some(state) = sessions.get_mut(&session) {
            state.processes.clear();
            state.previews.clear();
        }
    }

    /// Stops every command and preview of every session and refuses new
    /// ones. Call before the application exits so that no process group
    /// survives it.
    pub async fn shutdown(&self) {
        self.inner.closed.store(true, Ordering::SeqCst);
        self.inner
            .stop(Scope {
                session: None,
                previews: true,
            })
            .await;
    }

    /// The `preview` tool on the model's JSON input, with the session's
    /// browser for `snapshot`.
    pub async fn preview_in(
        &self,
        session: SessionId,
        ws: &Workspace,
        input: &Value,
        browser: PreviewBrowser<'_>,
    ) -> Result<PreviewOutcome, ToolError> {
        let result = self
            .run_preview(session, ws, PreviewRequest::parse(input)?, browser)
            .await;
        // Whatever the call did, the browser reaches exactly the previews
        // running now.
        if let PreviewBrowser::Session(browser) = browser {
            browser.previews().set(self.serving(session));
        }
        result
    }

    /// The addresses of the session's running previews.
    fn serving(&self, session: SessionId) -> Vec<std::net::SocketAddr> {
        self.inner
            .previews_of(session)
            .iter()
            .map(|p| p.info())
            .filter(|i| i.status == CommandStatus::Running)
            .filter_map(|i| i.address)
            .collect()
    }

    /// `start`, `status`, `logs`, `stop` or `snapshot` on this session's
    /// previews.
    async fn run_preview(
        &self,
        session: SessionId,
        ws: &Workspace,
        request: PreviewRequest,
        browser: PreviewBrowser<'_>,
    ) -> Result<PreviewOutcome, ToolError> {
        match request.action {
            PreviewAction::Start => {
                let spec =
                    request.spawn_spec(ws, &self.inner.shell, &self.inner.config.parent_env)?;
                let tracked = self.inner.start(session, &spec)?;
                let preview = self.inner.find_preview(session, &tracked.id)?;
                let address = preview.wait_for_address(request.wait_time()).await;
                let observed = tracked.observe(Moment::Preview).0;
                let info = preview.info();
                match (address, info.status) {
                    (Some(_), _) => Ok(PreviewOutcome {
                        output: ToolOutput {
                            text: crate::preview::serving_text(&info, &observed.text),
                            ..observed
                        },
                        change: Some(PreviewChange::Serving(info)),
                        screenshot: None,
                    }),
                    (None, CommandStatus::Running) => Ok(PreviewOutcome::quiet(ToolOutput {
                        text: format!(
                            "Preview {id} started but listens on no port yet after {secs} s.                              Check with preview(action='status', preview_id='{id}') or read                              preview(action='logs', preview_id='{id}').\n\n{text}",
                            id = info.preview_id,
                            secs = request.wait_time().as_secs(),
                            text = observed.text,
                        ),
                        ..observed
                    })),
                    (None, _) => {
                        self.inner.forget_preview(session, &info.preview_id);
                        Ok(PreviewOutcome::quiet(ToolOutput {
                            text: format!(
                                "The preview's server ended before it listened on a port.\n\n{}",
                                observed.text
                            ),
                            is_error: true,
                            ..observed
                        }))
                    }
                }
            }
            PreviewAction::Status => match request.preview_id.as_deref() {
                None => {
                    let previews = self.inner.previews_of(session);
                    let mut lines = Vec::new();
                    let mut change = None;
                    for p in &previews {
                        if let (Some(_), true) = p.detect().await {
                            change = Some(PreviewChange::Serving(p.info()));
                        }
                        lines.push(p.info().line());
                    }
                    let text = match lines.is_empty() {
                        true => "No previews.".to_owned(),
                        false => lines.join("\n"),
                    };
                    Ok(PreviewOutcome {
                        output: ToolOutput::ok(text),
                        change,
                        screenshot: None,
                    })
                }
                Some(id) => {
                    let preview = self.inner.find_preview(session, id)?;
                    let (_, new) = preview.detect().await;
                    let info = preview.info();
                    Ok(PreviewOutcome {
                        output: ToolOutput::ok(info.line()),
                        change: new.then_some(PreviewChange::Serving(info)),
                        screenshot: None,
                    })
                }
            },
            PreviewAction::Logs => {
                let preview = self.inner.find_preview(session, request.id()?)?;
                Ok(PreviewOutcome::quiet(
                    preview.tracked.observe(Moment::Preview).0,
                ))
            }
            PreviewAction::Stop => {
                let preview = self.inner.find_preview(session, request.id()?)?;
                let waiter = preview.tracked.waiter();
                preview.tracked.request_stop();
                let _ = timeout(self.inner.stop_bound(), preview.tracked.finished()).await;
                let output = preview.tracked.observe(Moment::Preview).0;
                drop(waiter);
                self.inner.forget_preview(session, &preview.tracked.id);
                Ok(PreviewOutcome {
                    output,
                    change: Some(PreviewChange::Stopped(preview.info())),
                    screenshot: None,
                })
            }
            PreviewAction::Snapshot => {
                let unavailable = |reason: String| ToolError::PreviewSnapshotUnavailable { reason };
                let browser = match browser {
                    PreviewBrowser::Session(b) => b,
                    PreviewBrowser::Unavailable(why) => return Err(unavailable(why.to_owned())),
                };
                let preview = match request.preview_id.as_deref() {
                    Some(id) => self.inner.find_preview(session, id)?,
                    None => self
                        .inner
                        .previews_of(session)
                        .into_iter()
                        .rev()
                        .find(|p| p.tracked.status() == CommandStatus::Running)
                        .ok_or_else(|| {
                            unavailable(
                                "no preview runs in this session; start one with                                  preview(action='start')"
                                    .to_owned(),
                            )
                        })?,
                };
                let (_, new) = preview.detect().await;
                let info = preview.info();
                let url = match (info.status, info.url()) {
                    (CommandStatus::Running, Some(url)) => url,
                    (CommandStatus::Running, None) => {
                        return Err(unavailable(format!(
                            "preview {} listens on no port yet; wait with                              preview(action='status', preview_id='{}')",
                            info.preview_id, info.preview_id
                        )));
                    }
                    (status, _) => {
                        return Err(unavailable(format!(
                            "preview {} is not running ({})",
                            info.preview_id,
                            status.as_str()
                        )));
                    }
                };
                browser.previews().set(self.serving(session));
                let shot = browser.snapshot(&url, request.wait_time()).await;
                let mut output = shot.output;
                if shot.screenshot.is_some() {
                    output.text =
                        format!("Snapshot of preview {}: {}", info.preview_id, output.text);
                }
                Ok(PreviewOutcome {
                    output,
                    change: new.then_some(PreviewChange::Serving(info)),
                    screenshot: shot.screenshot,
                })
            }
        }
    }

    /// The session's previews, for front ends (the server's proxy).
    pub fn previews(&self, session: SessionId) -> Vec<PreviewInfo> {
        self.inner
            .previews_of(session)
            .iter()
            .map(|p| p.info())
            .collect()
    }

    /// One preview of the session, if it has it.
    pub fn preview_info(&self, session: SessionId, preview_id: &str) -> Option<PreviewInfo> {
        self.inner
            .find_preview(session, preview_id)
            .ok()
            .map(|p| p.info())
    }
}

impl Inner {
    /// Registers and starts one command under `session`.
    fn start(
        self: &Arc<Self>,
        session: SessionId,
        spec: &SpawnSpec,
    ) -> Result<Arc<Tracked>, ToolError> {
        if self.closed.load(Ordering::SeqCst) {
            return Err(ToolError::RuntimeShutDown);
        }
        match spec.role {
            Role::Command => self.make_room(session)?,
            Role::Preview => self.preview_room(session)?,
        }
        let dir = self.config.artifacts_root.join(session.to_string());
        evoflux_core::private::create_private_dir(&dir).map_err(|source| ToolError::Journal {
            path: dir.clone(),
            source,
        })?;
        let sandbox = lock(&self.sessions)
            .get(&session)
            .and_then(|s| s.sandbox.clone());
        let journal_cap = sandbox
            .as_ref()
            .map_or(evoflux_graph::sandbox::DEFAULT_JOURNAL_CAP_BYTES, |s| {
                s.journal_cap()
            });
        let confined;
        let (spec, after) = match sandbox {
            Some(sandbox) => {
                confined = sandbox.wrap(
                    spec.clone(),
                    &self.config.parent_env,
                    &self.bwrap,
                    &dir.join("tmp"),
                    &dir.join("quarantine"),
                )?;
                (&confined.spec, confined.after)
            }
            None => (spec, None),
        };
        self.started_any.store(true, Ordering::SeqCst);
        let (tracked, child) = self.spawn_unique(session, &dir, spec, journal_cap, after)?;
        {
            let mut sessions = lock(&self.sessions);
            let state = sessions.entry(session).or_default();
            match spec.role {
                Role::Command => state.processes.push(Arc::clone(&tracked)),
                Role::Preview => state
                    .previews
                    .push(Arc::new(Preview::new(Arc::clone(&tracked)))),
            }
        }
        {
            let mut groups = lock(&self.groups);
            groups.retain(|(_, _, g)| g.is_alive());
            groups.push((session, spec.role, tracked.group));
        }
        let deadline = Instant::now() + spec.timeout;
        tokio::spawn(Arc::clone(&tracked).supervise(
            child,
            deadline,
            self.config.terminate_grace,
            self.config.exit_drain,
        ));
        Ok(tracked)
    }

    /// Spawns with a fresh opaque id, retrying the (unlikely) case of an
    /// id whose artifact already exists.
    fn spawn_unique(
        self: &Arc<Self>,
        session: SessionId,
        dir: &std::path::Path,
        spec: &SpawnSpec,
        journal_cap: u64,
        mut after: Option<crate::sandbox::AfterCommand>,
    ) -> Result<(Arc<Tracked>, tokio::process::Child), ToolError> {
        let mut attempts = 0;
        loop {
            let id = self.next_id(spec.role);
            let artifact = dir.join(format!("{id}.txt"));
            match Tracked::spawn(self, session, id, artifact, spec, journal_cap, &mut after) {
                Err(ToolError::Journal { source, .. })
                    if source.kind() == std::io::ErrorKind::AlreadyExists && attempts < 8 =>
                {
                    attempts += 1;
                }
                other => return other,
            }
        }
    }

    /// `proc_` (a preview's: `preview_`) and 10 hex digits from the
    /// random part of a fresh id.
    fn next_id(&self, role: Role) -> String {
        let hex = self.config.ids.run_id().as_uuid().simple().to_string();
        let prefix = match role {
            Role::Command => "proc",
            Role::Preview => "preview",
        };
        format!("{prefix}_{}", &hex[hex.len() - 10..])
    }

    /// Refuses a preview past the session's limit, forgetting the ended
    /// ones first.
    fn preview_room(&self, session: SessionId) -> Result<(), ToolError> {
        let mut sessions = lock(&self.sessions);
        let Some(state) = sessions.get_mut(&session) else {
            return Ok(());
        };
        state
            .previews
            .retain(|p| matches!(p.tracked.status(), CommandStatus::Running));
        match state.previews.len() >= MAX_SESSION_PREVIEWS {
            true => Err(ToolError::TooManyPreviews {
                limit: MAX_SESSION_PREVIEWS,
            }),
            false => Ok(()),
        }
    }

    fn previews_of(&self, session: SessionId) -> Vec<Arc<Preview>> {
        lock(&self.sessions)
            .get(&session)
            .map(|s| s.previews.clone())
            .unwrap_or_default()
    }

    fn find_preview(&self, session: SessionId, id: &str) -> Result<Arc<Preview>, ToolError> {
        lock(&self.sessions)
            .get(&session)
            .and_then(|s| s.previews.iter().find(|p| p.tracked.id == id).cloned())
            .ok_or_else(|| ToolError::PreviewNotFound {
                preview_id: id.to_owned(),
            })
    }

    fn forget_preview(&self, session: SessionId, id: &str) {
        if let Some(state) = lock(&self.sessions).get_mut(&session) {
            state.previews.retain(|p| p.tracked.id != id);
        }
    }

    /// Frees the slots of ended-but-unobserved commands when the session
    /// is at its limit.
    fn make_room(&self, session: SessionId) -> Result<(), ToolError> {
        let mut sessions = lock(&self.sessions);
        let Some(state) = sessions.get_mut(&session) else {
            return Ok(());
        };
        if state.processes.len() >= MAX_SESSION_PROCESSES {
            state
                .processes
                .retain(|t| matches!(t.status(), crate::CommandStatus::Running));
        }
        match state.processes.len() >= MAX_SESSION_PROCESSES {
            true => Err(ToolError::TooManyProcesses {
                limit: MAX_SESSION_PROCESSES,
            }),
            false => Ok(()),
        }
    }

    async fn first_observation(
        &self,
        tracked: &Arc<Tracked>,
        within: Option<Duration>,
    ) -> ToolOutput {
        let waiter = tracked.waiter();
        match within {
            Some(limit) => {
                let _ = timeout(limit, tracked.finished()).await;
            }
            None => tracked.finished().await,
        }
        let output = self.observe(tracked, Moment::First);
        drop(waiter);
        output
    }

    /// Takes an observation; the one that sees the end also forgets the
    /// command.
    fn observe(&self, tracked: &Arc<Tracked>, moment: Moment) -> ToolOutput {
        let (output, last) = tracked.observe(moment);
        if last {
            self.forget(tracked);
        }
        output
    }

    fn forget(&self, tracked: &Tracked) {
        if let Some(state) = lock(&self.sessions).get_mut(&tracked.session) {
            state.processes.retain(|t| t.id != tracked.id);
        }
    }

    /// Called when a command's final observation became an exit notice.
    pub(crate) fn notify_exit(&self, tracked: &Tracked, output: ToolOutput) {
        self.forget(tracked);
        let notice = ExitNotice {
            session: tracked.session,
            process_id: tracked.id.clone(),
            command: tracked.display.clone(),
            output,
        };
        let mut sessions = lock(&self.sessions);
        let state = sessions.entry(tracked.session).or_default();
        if state.exits.is_none() {
            let (tx, rx) = mpsc::unbounded_channel();
            state.exits = Some(tx);
            state.unclaimed = Some(rx);
        }
        if let Some(sender) = &state.exits {
            // A dropped receiver means the harness stopped listening; the
            // output stays in the artifact.
            let _ = sender.send(notice);
        }
    }

    fn find(&self, session: SessionId, id: &str) -> Result<Arc<Tracked>, ToolError> {
        lock(&self.sessions)
            .get(&session)
            .and_then(|s| s.processes.iter().find(|t| t.id == id).cloned())
            .ok_or_else(|| ToolError::ProcessNotFound {
                process_id: id.to_owned(),
            })
    }

    fn list(&self, session: SessionId) -> String {
        let sessions = lock(&self.sessions);
        let lines: Vec<String> = sessions
            .get(&session)
            .map(|s| {
                s.processes
                    .iter()
                    .map(|t| {
                        let command: String = t.display.chars().take(100).collect();
                        format!(
                            "{}  {}  pid={}  {}",
                            t.id,
                            t.status().as_str(),
                            t.pid,
                            command
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        match lines.is_empty() {
            true => "No tracked command processes.".to_owned(),
            false => lines.join("\n"),
        }
    }

    /// The longest a stop can take: grace, then SIGKILL, then the drain.
    fn stop_bound(&self) -> Duration {
        self.config.terminate_grace + self.config.exit_drain + Duration::from_secs(5)
    }

    /// Stops the groups in `scope`: SIGTERM, wait until they are gone or
    /// the grace period passed, SIGKILL what is left, then let the
    /// supervisors record the outcome.
    async fn stop(&self, scope: Scope) {
        let session = scope.session;
        let in_scope = |s: &SessionId| session.is_none_or(|wanted| wanted == *s);
        let covers = |s: &SessionId, role: Role| in_scope(s) && scope.covers(role);
        let tracked: Vec<Arc<Tracked>> = lock(&self.sessions)
            .iter()
            .filter(|(s, _)| in_scope(s))
            .flat_map(|(_, state)| {
                let previews = state
                    .previews
                    .iter()
                    .filter(|_| scope.previews)
                    .map(|p| Arc::clone(&p.tracked));
                state.processes.iter().cloned().chain(previews)
            })
            .collect();
        for t in &tracked {
            t.mark_stopped();
        }
        let groups: Vec<ProcessGroup> = lock(&self.groups)
            .iter()
            .filter(|(s, role, _)| covers(s, *role))
            .map(|(_, _, g)| *g)
            .collect();
        for g in &groups {
            g.terminate();
        }
        let deadline = Instant::now() + self.config.terminate_grace;
        while groups.iter().any(|g| g.is_alive()) && Instant::now() < deadline {
            sleep(Duration::from_millis(20)).await;
        }
        for g in &groups {
            g.kill();
        }
        // What left its group (`setsid`, a double fork) still carries the
        // lineage.
        if self.started_any.load(Ordering::SeqCst) {
            self.lineage.sweep(session);
            if let (Some(session), true) = (session, scope.previews) {
                self.lineage.sweep_previews(session);
            }
        }
        for t in &tracked {
            let _ = timeout(self.stop_bound(), t.finished()).await;
        }
        lock(&self.groups).retain(|(s, role, g)| !covers(s, *role) && g.is_alive());
    }
}

/// What a stop reaches: one session's processes or every session's, with
/// or without the previews.
#[derive(Debug, Clone, Copy)]
struct Scope {
    session: Option<SessionId>,
    previews: bool,
}

impl Scope {
    fn covers(self, role: Role) -> bool {
        match role {
            Role::Command => true,
            Role::Preview => self.previews,
        }
    }
}

impl Drop for Inner {
    /// Last resort when the application drops the runtime without
    /// [`ProcessRuntime::shutdown`]: no command group outlives it.
    fn drop(&mut self) {
        for (_, _, group) in lock(&self.groups).iter() {
            group.kill();
        }
        if self.started_any.load(Ordering::SeqCst) {
            self.lineage.sweep(None);
        }
    }
}
