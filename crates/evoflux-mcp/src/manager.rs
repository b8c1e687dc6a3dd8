//! One MCP client manager per scope: the global manager (servers of the
//! compiled graph's `connections/<name>` slots) and one per plugin
//! installation. Managers are never merged; a [`crate::ToolSet`] reads
//! several of them at once.
//!
//! Servers start in the background: [`McpManager::start_all`] returns at
//! once and each server moves through [`ServerState`] on its own, so a
//! slow or broken server never blocks the caller or another server. Every
//! change is visible in [`McpManager::statuses`] and as an [`McpEvent`].

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;
use tokio::runtime::Handle;
use tokio::sync::{broadcast, watch};

use crate::client::{Connection, FailureKind, RefreshReceiver, StartFailure};
use crate::codes;
use crate::definition::{Launch, ServerDefinition, ServerOwner, TransportKind};
use crate::environment::process_base_environment;
use crate::error::McpError;
use crate::toolset::ToolSet;
use crate::types::{
    McpPrompt, McpPromptResult, McpResource, McpResourceContents, McpTool, McpToolResult,
};

/// Codex's defaults: a server gets 10 s to start; a call, 5 minutes. A
/// server that needs longer to start says so in its own entry
/// ([`ServerDefinition::startup_timeout`]).
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(10);
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(300);

/// Which configuration a manager runs. Closed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum ManagerScope {
    Global,
    Plugin {
        installation: String,
        plugin: String,
    },
}

/// How servers are run.
#[derive(Debug, Clone)]
pub struct ManagerOptions {
    /// Answered to `roots/list`: the session's workspace roots.
    pub roots: Vec<PathBuf>,
    /// The base environment of stdio servers (an allowlist of the parent's
    /// variables by default; see [`crate::environment`]).
    pub base_env: BTreeMap<String, String>,
    /// How long a server may take to start when its definition sets no
    /// limit of its own ([`ServerDefinition::startup_timeout`]).
    pub startup_timeout: Duration,
    /// Where `${VAR}` references of the user's own entries take their
    /// values (evoflux's whole environment by default; see
    /// [`crate::references`]). Never passed to a server as such.
    pub reference_env: BTreeMap<String, String>,
    /// Where the OAuth tokens of Streamable HTTP servers are kept
    /// ([`crate::oauth`]); `None` sends none, and a server that asks for a
    /// login stays [`ServerState::NeedsLogin`].
    pub oauth_tokens: Option<crate::oauth::TokenStore>,
    /// The bound of one call's result in bytes
    /// ([`crate::client::DEFAULT_MAX_RESULT_BYTES`] by default): a server
    /// that answers with more ends the call at once with
    /// `mcp/result-too-large`.
    pub max_result_bytes: usize,
}

impl Default for ManagerOptions {
    fn default() -> Self {
        ManagerOptions {
            roots: Vec::new(),
            base_env: process_base_environment(),
            startup_timeout: DEFAULT_STARTUP_TIMEOUT,
            reference_env: std::env::vars().collect(),
            oauth_tokens: None,
            max_result_bytes: crate::client::DEFAULT_MAX_RESULT_BYTES,
        }
    }
}

/// The lifecycle of one server. Closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ServerState {
    /// Spawning or connecting, handshaking, listing tools.
    Starting,
    /// Initialized with its tools listed: its tools are offered.
    Ready,
    /// Could not start, or its connection ended; see `last_error`.
    Failed,
    /// Not running (never started, or stopped).
    Stopped,
    /// Listed but never started (legacy `sse`).
    Skipped,
    /// Not started until its plugin's required credentials are set.
    NeedsCredentials,
    /// A Streamable HTTP server that refused the handshake with `401`:
    /// ready after an OAuth login ([`crate::oauth`]).
    NeedsLogin,
}

impl ServerState {
    pub const fn as_str(self) -> &'static str {
        match self {
            ServerState::Starting => "starting",
            ServerState::Ready => "ready",
            ServerState::Failed => "failed",
            ServerState::Stopped => "stopped",
            ServerState::Skipped => "skipped",
            ServerState::NeedsCredentials => "needs-credentials",
            ServerState::NeedsLogin => "needs-login",
        }
    }
}

/// Why a server is failed or skipped: a stable code and a message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ServerError {
    pub code: String,
    pub message: String,
}

impl From<StartFailure> for ServerError {
    fn from(f: StartFailure) -> Self {
        ServerError {
            code: f.code.to_owned(),
            message: f.message,
        }
    }
}

/// `serverInfo` from the handshake.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ServerInfo {
    pub name: String,
    pub version: String,
}

/// A snapshot of one server, for `evoflux mcp list` and the UI.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServerStatus {
    pub name: String,
    pub owner: ServerOwner,
    pub transport: Option<TransportKind>,
    pub state: ServerState,
    /// The tools of a ready server (raw names).
    pub tools: Vec<McpTool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<ServerError>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_info: Option<ServerInfo>,
    /// Whether WebBridge conversations are offered it (shown when they are).
    #[serde(skip_serializing_if = "crate::definition::WebBridge::is_undeclared")]
    pub webbridge: crate::definition::WebBridge,
}

/// What happened to a server, for the harness to show as a visible event.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum McpEvent {
    StateChanged {
        server: String,
        owner: ServerOwner,
        state: ServerState,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<ServerError>,
    },
    /// A ready server's tool list was refreshed after `tools/list_changed`.
    ToolsChanged {
        server: String,
        owner: ServerOwner,
        tools: usize,
    },
}

/// What [`McpManager::reload`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ReloadReport {
    pub added: Vec<String>,
    pub removed: Vec<String>,
    pub changed: Vec<String>,
    pub unchanged: Vec<String>,
}

#[derive(Debug)]
pub(crate) struct SlotState {
    /// Bumped by every start and stop, so a late result of an earlier
    /// start never overwrites a newer state.
    generation: u64,
    state: ServerState,
    tools: Arc<Vec<McpTool>>,
    /// The prompts of a ready server that offers them (listed with its
    /// tools, re-listed with them after a `list_changed`).
    prompts: Arc<Vec<McpPrompt>>,
    last_error: Option<ServerError>,
    connection: Option<Arc<Connection>>,
}

/// One server of a manager.
#[derive(Debug)]
pub(crate) struct Slot {
    pub(crate) definition: ServerDefinition,
    state: Mutex<SlotState>,
    /// Wakes waiters and publishes events; shared with the manager.
    notify: Notifier,
}

#[derive(Debug, Clone)]
struct Notifier {
    changes: Arc<watch::Sender<u64>>,
    events: broadcast::Sender<McpEvent>,
}

impl Notifier {
    fn publish(&self, event: McpEvent) {
        self.changes.send_modify(|v| *v = v.wrapping_add(1));
        // No subscriber is fine.
        let _ = self.events.send(event);
    }
}

impl Slot {
    fn lock(&self) -> MutexGuard<'_, SlotState> {
        // A poisoned lock means a panic elsewhere; the state is still usable.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn state_event(&self, state: ServerState, error: Option<ServerError>) -> McpEvent {
        McpEvent::StateChanged {
            server: self.definition.name.clone(),
            owner: self.definition.owner.clone(),
            state,
            error,
        }
    }

    /// Notices a connection that ended after the server was ready.
    fn check_exited(&self) {
        let mut st = self.lock();
        let exited =
            st.state == ServerState::Ready && st.connection.as_ref().is_some_and(|c| c.is_closed());
        if !exited {
            return;
        }
        let tail = st
            .connection
            .as_ref()
            .map(|c| c.stderr_tail())
            .unwrap_or_default();
        let error = ServerError {
            code: codes::SERVER_EXITED.to_owned(),
            message: format!("the connection to the server closed{tail}"),
        };
        st.state = ServerState::Failed;
        st.tools = Arc::new(Vec::new());
        st.prompts = Arc::new(Vec::new());
        st.last_error = Some(error.clone());
        st.connection = None;
        st.generation += 1;
        drop(st);
        self.notify
            .publish(self.state_event(ServerState::Failed, Some(error)));
    }

    pub(crate) fn status(&self) -> ServerStatus {
        self.check_exited();
        let st = self.lock();
        let conn = st.connection.as_ref();
        ServerStatus {
            name: self.definition.name.clone(),
            owner: self.definition.owner.clone(),
            transport: self.definition.transport,
            state: st.state,
            tools: st.tools.as_ref().clone(),
            last_error: st.last_error.clone(),
            protocol_version: conn.map(|c| c.protocol_version.clone()),
            server_info: conn
                .and_then(|c| c.server_info.clone())
                .map(|(name, version)| ServerInfo { name, version }),
            webbridge: self.definition.webbridge,
        }
    }

    /// The prompts of the server if it is ready.
    pub(crate) fn ready_prompts(&self) -> Option<Arc<Vec<McpPrompt>>> {
        self.check_exited();
        let st = self.lock();
        (st.state == ServerState::Ready).then(|| st.prompts.clone())
    }

    /// The connection of a ready server, or why there is none.
    fn ready_connection(&self) -> Result<Arc<Connection>, McpError> {
        self.check_exited();
        let st = self.lock();
        match (&st.state, &st.connection) {
            (ServerState::Ready, Some(c)) => Ok(c.clone()),
            (state, _) => Err(McpError::NotReady {
                server: self.definition.name.clone(),
                state: state.as_str().to_owned(),
            }),
        }
    }

    /// Expands one of the server's prompts (`prompts/get`).
    pub(crate) async fn get_prompt(
        &self,
        prompt: &str,
        args: serde_json::Map<String, Value>,
        timeout: Duration,
    ) -> Result<McpPromptResult, McpError> {
        let conn = self.ready_connection()?;
        conn.get_prompt(&self.definition.name, prompt, args, timeout)
            .await
    }

    /// Reads one of the server's resources (`resources/read`).
    pub(crate) async fn read_resource(
        &self,
        uri: &str,
        timeout: Duration,
    ) -> Result<Vec<McpResourceContents>, McpError> {
        let conn = self.ready_connection()?;
        conn.read_resource(&self.definition.name, uri, timeout)
            .await
    }

    /// The server's resources (`resources/list`); none when it offers none.
    pub(crate) async fn list_resources(
        &self,
        timeout: Duration,
    ) -> Result<Vec<McpResource>, McpError> {
        let conn = self.ready_connection()?;
        if !conn.offers_resources() {
            return Ok(Vec::new());
        }
        conn.list_resources(&self.definition.name, timeout).await
    }

    /// The tools of the server if it is ready.
    pub(crate) fn ready_tools(&self) -> Option<Arc<Vec<McpTool>>> {
        self.check_exited();
        let st = self.lock();
        (st.state == ServerState::Ready).then(|| st.tools.clone())
    }

    /// Calls a tool by its raw name; `context` receives what the server
    /// sends during the call ([`crate::live`]).
    pub(crate) async fn call(
        &self,
        tool: &str,
        args: Value,
        timeout: Duration,
        context: Option<crate::live::CallContext>,
    ) -> Result<McpToolResult, McpError> {
        let args = match args {
            Value::Object(map) => map,
            Value::Null => serde_json::Map::new(),
            other => {
                let kind = match other {
                    Value::Bool(_) => "a boolean",
                    Value::Number(_) => "a number",
                    Value::String(_) => "a string",
                    Value::Array(_) => "an array",
                    Value::Null | Value::Object(_) => "a value",
                };
                return Err(McpError::InvalidArguments(kind.to_owned()));
            }
        };
        self.check_exited();
        let conn = {
            let st = self.lock();
            match (&st.state, &st.connection) {
                (ServerState::Ready, Some(c)) => c.clone(),
                (state, _) => {
                    return Err(McpError::NotReady {
                        server: self.definition.name.clone(),
                        state: state.as_str().to_owned(),
                    });
                }
            }
        };
        let result = conn
            .call_tool(&self.definition.name, tool, args, timeout, context)
            .await;
        if result.is_err() {
            self.check_exited();
        }
        result
    }

    /// Marks the slot as starting and returns the new generation.
    fn begin_start(&self) -> u64 {
        let mut st = self.lock();
        st.generation += 1;
        st.state = ServerState::Starting;
        st.last_error = None;
        st.tools = Arc::new(Vec::new());
        st.prompts = Arc::new(Vec::new());
        let generation = st.generation;
        drop(st);
        self.notify
            .publish(self.state_event(ServerState::Starting, None));
        generation
    }

    fn fail(&self, generation: u64, error: ServerError) {
        self.settle_unready(generation, ServerState::Failed, error);
    }

    /// Ends a start that did not make the server ready, in `state`
    /// (failed, or waiting for a login).
    fn settle_unready(&self, generation: u64, state: ServerState, error: ServerError) {
        let mut st = self.lock();
        if st.generation != generation {
            return;
        }
        st.state = state;
        st.last_error = Some(error.clone());
        drop(st);
        self.notify.publish(self.state_event(state, Some(error)));
    }

    /// Installs a ready connection, or returns it when the start is stale.
    fn ready(
        &self,
        generation: u64,
        connection: Arc<Connection>,
        (tools, prompts): (Vec<McpTool>, Vec<McpPrompt>),
    ) -> Result<(), Arc<Connection>> {
        let mut st = self.lock();
        if st.generation != generation {
            return Err(connection);
        }
        st.state = ServerState::Ready;
        st.tools = Arc::new(tools);
        st.prompts = Arc::new(prompts);
        st.connection = Some(connection);
        drop(st);
        self.notify
            .publish(self.state_event(ServerState::Ready, None));
        Ok(())
    }

    /// Stops the server (if running) and marks it stopped.
    async fn stop(&self) {
        let (connection, was) = {
            let mut st = self.lock();
            st.generation += 1;
            let was = st.state;
            match st.state {
                // Never started: its state says why, and stays.
                ServerState::Skipped | ServerState::NeedsCredentials => {}
                ServerState::Failed if st.connection.is_none() && self.is_invalid() => {}
                ServerState::Starting
                | ServerState::Ready
                | ServerState::Failed
                | ServerState::NeedsLogin
                | ServerState::Stopped => {
                    st.state = ServerState::Stopped;
                    st.tools = Arc::new(Vec::new());
                    st.prompts = Arc::new(Vec::new());
                }
            }
            (st.connection.take(), was)
        };
        if let Some(c) = connection {
            c.shutdown().await;
        }
        if was != ServerState::Stopped && self.lock().state == ServerState::Stopped {
            self.notify
                .publish(self.state_event(ServerState::Stopped, None));
        }
    }

    fn is_invalid(&self) -> bool {
        matches!(self.definition.launch, Launch::Invalid { .. })
    }

    /// Applies a tool list refreshed after `tools/list_changed`.
    /// Re-listing tools after a change failed: the server stays ready with
    /// the tools it had, and the failure is its `last_error`, so listings
    /// and sessions show it instead of only a log line.
    fn refresh_failed(&self, generation: u64, message: String) {
        let mut st = self.lock();
        if st.generation != generation || st.state != ServerState::Ready {
            return;
        }
        st.last_error = Some(ServerError {
            code: codes::TOOLS_LIST_FAILED.to_owned(),
            message: format!(
                "re-listing the tools after the server changed them failed ({message}); the previous tools stay"
            ),
        });
    }

    fn refreshed(&self, generation: u64, (tools, prompts): (Vec<McpTool>, Vec<McpPrompt>)) {
        let mut st = self.lock();
        if st.generation != generation || st.state != ServerState::Ready {
            return;
        }
        let count = tools.len();
        st.tools = Arc::new(tools);
        st.prompts = Arc::new(prompts);
        if st
            .last_error
            .as_ref()
            .is_some_and(|e| e.code == codes::TOOLS_LIST_FAILED)
        {
            st.last_error = None;
        }
        drop(st);
        self.notify.publish(McpEvent::ToolsChanged {
            server: self.definition.name.clone(),
            owner: self.definition.owner.clone(),
            tools: count,
        });
    }
}

#[derive(Debug)]
struct Inner {
    scope: ManagerScope,
    options: ManagerOptions,
    runtime: Handle,
    servers: Mutex<BTreeMap<String, Arc<Slot>>>,
    notify: Notifier,
    /// Set by `start_all`, cleared by `stop_all`: whether `reload` starts
    /// the servers it adds.
    running: AtomicBool,
}

/// The MCP servers of one scope. Cheap to clone (shared state).
#[derive(Debug, Clone)]
pub struct McpManager {
    inner: Arc<Inner>,
}

impl McpManager {
    /// A manager for `definitions`; nothing starts until
    /// [`McpManager::start_all`]. Must be called inside a Tokio runtime.
    pub fn new(
        scope: ManagerScope,
        definitions: Vec<ServerDefinition>,
        options: ManagerOptions,
    ) -> Result<McpManager, McpError> {
        let runtime = Handle::try_current().map_err(|_| McpError::NoRuntime)?;
        let (changes, _) = watch::channel(0u64);
        let (events, _) = broadcast::channel(256);
        let notify = Notifier {
            changes: Arc::new(changes),
            events,
        };
        let servers = definitions
            .into_iter()
            .map(|d| (d.name.clone(), Arc::new(new_slot(d, notify.clone()))))
            .collect();
        Ok(McpManager {
            inner: Arc::new(Inner {
                scope,
                options,
                runtime,
                servers: Mutex::new(servers),
                notify,
                running: AtomicBool::new(false),
            }),
        })
    }

    pub fn scope(&self) -> &ManagerScope {
        &self.inner.scope
    }

    fn servers(&self) -> MutexGuard<'_, BTreeMap<String, Arc<Slot>>> {
        self.inner.servers.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn slots(&self) -> Vec<Arc<Slot>> {
        self.servers().values().cloned().collect()
    }

    pub(crate) fn slot_of(&self, name: &str) -> Result<Arc<Slot>, McpError> {
        self.slot(name)
    }

    fn slot(&self, name: &str) -> Result<Arc<Slot>, McpError> {
        self.servers()
            .get(name)
            .cloned()
            .ok_or_else(|| McpError::UnknownServer(name.to_owned()))
    }

    /// Starts every startable server in the background and returns at once.
    pub fn start_all(&self) {
        self.inner.running.store(true, Ordering::SeqCst);
        for slot in self.slots() {
            self.spawn_start(slot);
        }
    }

    /// Starts (or restarts, if it is not running) one server in the
    /// background.
    pub fn start(&self, name: &str) -> Result<(), McpError> {
        let slot = self.slot(name)?;
        self.spawn_start(slot);
        Ok(())
    }

    fn spawn_start(&self, slot: Arc<Slot>) {
        let launch = slot.definition.launch.clone();
        match &launch {
            Launch::Unsupported | Launch::Invalid { .. } | Launch::NeedsCredentials { .. } => {
                return;
            }
            Launch::Stdio(_) | Launch::StreamableHttp(_) => {}
        }
        if matches!(
            slot.lock().state,
            ServerState::Starting | ServerState::Ready
        ) {
            return;
        }
        let generation = slot.begin_start();
        let options = self.inner.options.clone();
        self.inner.runtime.spawn(async move {
            run_start(slot, generation, launch, options).await;
        });
    }

    /// Stops one server and waits until its process is gone.
    pub async fn stop(&self, name: &str) -> Result<(), McpError> {
        self.slot(name)?.stop().await;
        Ok(())
    }

    /// Stops then starts one server (in the background).
    pub async fn restart(&self, name: &str) -> Result<(), McpError> {
        let slot = self.slot(name)?;
        slot.stop().await;
        self.spawn_start(slot);
        Ok(())
    }

    /// Stops every server of this manager (plugin disabled or uninstalled,
    /// evoflux shutting down) and waits for their processes to end.
    pub async fn stop_all(&self) {
        self.inner.running.store(false, Ordering::SeqCst);
        let slots = self.slots();
        futures_util::future::join_all(slots.iter().map(|s| s.stop())).await;
    }

    /// Stops and starts every server (credentials saved).
    pub async fn restart_all(&self) {
        self.stop_all().await;
        self.start_all();
    }

    /// Replaces the definitions: removed servers stop, changed ones restart,
    /// new ones start (when the manager was started), unchanged ones keep
    /// running untouched. Watching files is the caller's job; this is what
    /// it calls with the re-adapted definitions.
    pub async fn reload(&self, definitions: Vec<ServerDefinition>) -> ReloadReport {
        let mut report = ReloadReport::default();
        let mut next: BTreeMap<String, ServerDefinition> = definitions
            .into_iter()
            .map(|d| (d.name.clone(), d))
            .collect();
        let mut to_stop = Vec::new();
        let mut to_start = Vec::new();
        {
            let mut servers = self.servers();
            let names: Vec<String> = servers.keys().cloned().collect();
            for name in names {
                match next.remove(&name) {
                    None => {
                        if let Some(slot) = servers.remove(&name) {
                            to_stop.push(slot);
                        }
                        report.removed.push(name);
                    }
                    Some(def) => {
                        let same = servers.get(&name).is_some_and(|s| s.definition == def);
                        if same {
                            report.unchanged.push(name);
                        } else {
                            let slot = Arc::new(new_slot(def, self.inner.notify.clone()));
                            if let Some(old) = servers.insert(name.clone(), slot.clone()) {
                                to_stop.push(old);
                            }
                            to_start.push(slot);
                            report.changed.push(name);
                        }
                    }
                }
            }
            for (name, def) in next {
                let slot = Arc::new(new_slot(def, self.inner.notify.clone()));
                servers.insert(name.clone(), slot.clone());
                to_start.push(slot);
                report.added.push(name);
            }
        }
        futures_util::future::join_all(to_stop.iter().map(|s| s.stop())).await;
        if self.inner.running.load(Ordering::SeqCst) {
            for slot in to_start {
                self.spawn_start(slot);
            }
        }
        report
    }

    /// Every server, in name order.
    pub fn statuses(&self) -> Vec<ServerStatus> {
        self.slots().iter().map(|s| s.status()).collect()
    }

    pub fn status(&self, name: &str) -> Result<ServerStatus, McpError> {
        Ok(self.slot(name)?.status())
    }

    /// The definition of one server.
    pub fn definition(&self, name: &str) -> Result<ServerDefinition, McpError> {
        Ok(self.slot(name)?.definition.clone())
    }

    /// Waits until no server is starting, at most `timeout`. Returns
    /// whether every server settled. For one-shot commands (`evoflux mcp
    /// list`); a run never waits like this.
    pub async fn wait_settled(&self, timeout: Duration) -> bool {
        let mut rx = self.inner.notify.changes.subscribe();
        let settled = async {
            loop {
                rx.borrow_and_update();
                let starting = self
                    .slots()
                    .iter()
                    .any(|s| s.lock().state == ServerState::Starting);
                if !starting {
                    return;
                }
                if rx.changed().await.is_err() {
                    return;
                }
            }
        };
        tokio::time::timeout(timeout, settled).await.is_ok()
    }

    /// The longest time any of this manager's servers may take to start:
    /// each startable server's own limit, or the manager's default for
    /// those without one. A caller that waits for the servers to settle
    /// waits this long, so a server given a longer limit is not cut short
    /// by the wait. Never less than the default, which also covers a
    /// server a later [`McpManager::reload`] adds without a limit.
    pub fn longest_startup_timeout(&self) -> Duration {
        self.slots()
            .iter()
            .filter(|s| {
                matches!(
                    s.definition.launch,
                    Launch::Stdio(_) | Launch::StreamableHttp(_)
                )
            })
            .map(|s| effective_startup_timeout(&s.definition, &self.inner.options))
            .fold(self.inner.options.startup_timeout, Duration::max)
    }

    /// Events of every server of this manager from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<McpEvent> {
        self.inner.notify.events.subscribe()
    }

    /// The ready tools of this manager alone, named avoiding `reserved`.
    /// A run combines every manager with [`ToolSet::assemble`] instead.
    pub fn tool_set(&self, reserved: &BTreeSet<String>) -> ToolSet {
        ToolSet::assemble(&[self], reserved)
    }

    /// Calls a tool by its qualified name as [`McpManager::tool_set`]
    /// names it (with nothing reserved).
    pub async fn call_tool(
        &self,
        qualified_name: &str,
        args: Value,
        timeout: Duration,
    ) -> Result<McpToolResult, McpError> {
        self.tool_set(&BTreeSet::new())
            .call_tool(qualified_name, args, timeout)
            .await
    }

    /// Calls a tool by server and raw tool name (`evoflux mcp call`).
    pub async fn call_server_tool(
        &self,
        server: &str,
        tool: &str,
        args: Value,
        timeout: Duration,
    ) -> Result<McpToolResult, McpError> {
        self.slot(server)?.call(tool, args, timeout, None).await
    }
}

/// How long `definition` may take to start: its own limit, else the
/// manager's default.
fn effective_startup_timeout(definition: &ServerDefinition, options: &ManagerOptions) -> Duration {
    definition
        .startup_timeout
        .unwrap_or(options.startup_timeout)
}

fn new_slot(definition: ServerDefinition, notify: Notifier) -> Slot {
    let (state, last_error) = match &definition.launch {
        Launch::Unsupported => (
            ServerState::Skipped,
            Some(ServerError {
                code: codes::TRANSPORT_UNSUPPORTED.to_owned(),
                message: "the legacy `sse` transport is listed but never started".to_owned(),
            }),
        ),
        Launch::Invalid { code, message } => (
            ServerState::Failed,
            Some(ServerError {
                code: (*code).to_owned(),
                message: message.clone(),
            }),
        ),
        Launch::NeedsCredentials { missing } => (
            ServerState::NeedsCredentials,
            Some(ServerError {
                code: codes::NEEDS_CREDENTIALS.to_owned(),
                message: crate::definition::needs_credentials_message(&definition, missing),
            }),
        ),
        Launch::Stdio(_) | Launch::StreamableHttp(_) => (ServerState::Stopped, None),
    };
    Slot {
        definition,
        state: Mutex::new(SlotState {
            generation: 0,
            state,
            tools: Arc::new(Vec::new()),
            prompts: Arc::new(Vec::new()),
            last_error,
            connection: None,
        }),
        notify,
    }
}

/// Connects, lists tools, and installs the result unless the start went
/// stale meanwhile.
async fn run_start(slot: Arc<Slot>, generation: u64, launch: Launch, options: ManagerOptions) {
    let connect = async {
        let unset =
            |e: crate::references::Unset| StartFailure::new(codes::ENV_UNSET, e.to_string());
        let (conn, rx) = match &launch {
            Launch::Stdio(l) => {
                let l = l.with_references(&options.reference_env).map_err(unset)?;
                Connection::stdio(
                    &l,
                    &options.base_env,
                    &options.roots,
                    options.max_result_bytes,
                )
                .await?
            }
            Launch::StreamableHttp(l) => {
                let l = l.with_references(&options.reference_env).map_err(unset)?;
                let server = slot.definition.owner.server_ref(&slot.definition.name);
                let credentials = options
                    .oauth_tokens
                    .as_ref()
                    .map(|store| store.for_server(&server, &l.url));
                Connection::http(&l, &options.roots, credentials, options.max_result_bytes).await?
            }
            Launch::Unsupported | Launch::Invalid { .. } | Launch::NeedsCredentials { .. } => {
                return Err(StartFailure::new(
                    codes::SERVER_INVALID,
                    "not a startable server",
                ));
            }
        };
        match conn.list_tools().await {
            Ok(tools) => {
                let prompts = prompts_of(&conn, &slot.definition.name).await;
                Ok((conn, rx, (tools, prompts)))
            }
            Err(message) => {
                conn.shutdown().await;
                Err(StartFailure::new(codes::TOOLS_LIST_FAILED, message))
            }
        }
    };
    let limit = effective_startup_timeout(&slot.definition, &options);
    match tokio::time::timeout(limit, connect).await {
        Err(_) => slot.fail(
            generation,
            ServerError {
                code: codes::STARTUP_TIMEOUT.to_owned(),
                message: format!("the server was not ready within {limit:?}"),
            },
        ),
        Ok(Err(failure)) => {
            let state = match failure.kind {
                FailureKind::Failed => ServerState::Failed,
                FailureKind::NeedsLogin => ServerState::NeedsLogin,
            };
            slot.settle_unready(generation, state, failure.into());
        }
        Ok(Ok((conn, rx, tools))) => {
            let conn = Arc::new(conn);
            match slot.ready(generation, conn.clone(), tools) {
                Ok(()) => {
                    let weak_slot = Arc::downgrade(&slot);
                    let weak_conn = Arc::downgrade(&conn);
                    drop(conn);
                    drop(slot);
                    refresh_loop(weak_slot, weak_conn, generation, rx).await;
                }
                Err(stale) => stale.shutdown().await,
            }
        }
    }
}

/// Re-lists tools after each `tools/list_changed` until the connection
/// ends. Holds only weak references, so dropping the manager ends it.
async fn refresh_loop(
    slot: Weak<Slot>,
    conn: Weak<Connection>,
    generation: u64,
    mut rx: RefreshReceiver,
) {
    while rx.recv().await.is_some() {
        // Several notifications in a row need one re-list.
        while rx.try_recv().is_ok() {}
        let Some(c) = conn.upgrade() else { return };
        let listed = match c.list_tools().await {
            Ok(tools) => Ok((tools, prompts_of(&c, &slot_name(&slot)).await)),
            Err(e) => Err(e),
        };
        drop(c);
        let Some(s) = slot.upgrade() else { return };
        match listed {
            Ok(tools) => s.refreshed(generation, tools),
            Err(message) => {
                tracing::warn!(server = %s.definition.name, "{message}");
                s.refresh_failed(generation, message);
            }
        }
    }
}

/// The prompts of a server that offers them. A listing that fails leaves
/// the server ready without prompts (its tools still work) and is logged.
async fn prompts_of(conn: &Connection, server: &str) -> Vec<McpPrompt> {
    if !conn.offers_prompts() {
        return Vec::new();
    }
    match conn.list_prompts().await {
        Ok(prompts) => prompts,
        Err(message) => {
            tracing::warn!(server, "{message}; the server's prompts are not offered");
            Vec::new()
        }
    }
}

fn slot_name(slot: &Weak<Slot>) -> String {
    slot.upgrade()
        .map(|s| s.definition.name.clone())
        .unwrap_or_default()
}
