//! The SDK boundary: everything that touches `rmcp` lives here, and only
//! our own types leave this module.
//!
//! One [`Connection`] is one initialized MCP session over stdio (a child
//! process in its own process group) or Streamable HTTP (our reqwest client
//! with redirects disabled). The handshake is pinned to protocol
//! `2025-11-25`, the newest revision with the `initialize` lifecycle that
//! every server in the field speaks; a server may answer with an older
//! version it supports.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotificationParam, ClientCapabilities,
    ClientConfig, ClientRequest, ErrorData, GetPromptRequestParams, Implementation,
    ProtocolVersion, ReadResourceRequestParams, RequestId, RootsCapabilities, ServerResult,
};
#[allow(deprecated)] // sampling and logging are deprecated only in 2026-07-28
use rmcp::model::{
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
    ElicitationCapability, ErrorCode, FormElicitationCapability, LoggingMessageNotificationParam,
    ProgressNotificationParam, SamplingCapability,
};
use rmcp::service::{
    InboundStreamOrigin, NotificationContext, Peer, PeerRequestOptions, RequestContext,
    RunningService, ServiceError,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::auth::AuthClient;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpClientTransportConfig,
};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Map, Value};
use tokio::io::AsyncBufReadExt;
use tokio::sync::mpsc;

use crate::bounded::{BoundedHttp, BoundedLines, CutAnswers};
use crate::codes;
use crate::definition::{HttpLaunch, StdioLaunch};
use crate::environment::compose;
use crate::error::McpError;
use crate::live::{
    Arrival, CallContext, CallListener, ElicitationAnswer, ElicitationRequest, InFlight, McpLog,
    McpLogLevel, McpProgress, SamplingMessage, SamplingRequest, SamplingRole,
};
use crate::oauth::ServerCredentials;
use crate::progress_order::{ReadSeq, Sequenced};
use crate::types::{
    McpPrompt, McpPromptResult, McpResource, McpResourceContents, McpTool, McpToolResult,
};

/// The protocol revision offered in `initialize`.
pub const PROTOCOL_VERSION: &str = "2025-11-25";
/// How long a Streamable HTTP session gets to be deleted at shutdown.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(8);
/// How long a stdio server gets to exit after its stdin closes (the MCP
/// stdio shutdown) before its process group gets `SIGTERM`: a server that
/// ignores end-of-input costs at most this at exit.
pub const EOF_GRACE: Duration = Duration::from_millis(500);
/// How long the process group gets after `SIGTERM` before `SIGKILL`.
pub const TERM_GRACE: Duration = Duration::from_millis(500);
/// The default bound of one call's result, in bytes of the server's
/// answer as sent (JSON-RPC text): past it the call ends at once with
/// `mcp/result-too-large` ([`McpError::ResultTooLarge`]) instead of
/// reading the rest. 8 MiB holds a large page of text or a few base64
/// screenshots; a model could not use more in one step.
pub const DEFAULT_MAX_RESULT_BYTES: usize = 8 * 1024 * 1024;
/// Headroom of rmcp's own line cap above ours: only the short error
/// response [`BoundedLines`] writes can pass the bound.
const LINE_SLACK: usize = 64 * 1024;
/// Lines of a server's stderr kept for error messages.
const STDERR_LINES: usize = 20;
/// Headers the MCP client sets itself; a configured header of the same
/// name (case-insensitive) is dropped so the client's value wins.
pub const RESERVED_HEADERS: [&str; 8] = [
    "accept",
    "content-type",
    "mcp-session-id",
    "mcp-protocol-version",
    "last-event-id",
    "mcp-method",
    "mcp-name",
    "host",
];

/// Why a server could not be started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartFailure {
    pub code: &'static str,
    pub message: String,
    pub kind: FailureKind,
}

/// What a failed start leaves the server as. Closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// Failed: see the code.
    Failed,
    /// Refused with `401`: waits for an OAuth login.
    NeedsLogin,
}

impl StartFailure {
    pub(crate) fn new(code: &'static str, message: impl Into<String>) -> Self {
        StartFailure {
            code,
            message: message.into(),
            kind: FailureKind::Failed,
        }
    }

    fn needs_login(message: impl Into<String>) -> Self {
        StartFailure {
            code: codes::NEEDS_LOGIN,
            message: message.into(),
            kind: FailureKind::NeedsLogin,
        }
    }
}

/// Answers the server's requests and forwards `tools/list_changed`;
/// progress, log messages, sampling and elicitation go to the call in
/// flight they belong to ([`crate::live`]).
#[derive(Clone)]
struct Handler {
    roots: Arc<Vec<(String, Option<String>)>>,
    refresh: mpsc::UnboundedSender<()>,
    live: Arc<InFlight>,
}

impl Handler {
    fn new(roots: &[PathBuf], refresh: mpsc::UnboundedSender<()>) -> Handler {
        Handler {
            roots: Arc::new(root_uris(roots)),
            refresh,
            live: Arc::new(InFlight::default()),
        }
    }

    /// The session a server's request belongs to, or the error the server
    /// reads (and a warning in the log) when it belongs to none.
    fn owner(
        &self,
        method: &str,
        context: &RequestContext<RoleClient>,
    ) -> Result<Arc<dyn CallListener>, ErrorData> {
        self.live
            .route(&arrival(&context.extensions))
            .map_err(|why| {
                let reason = why.reason(method);
                tracing::warn!(code = why.code(), "{reason}");
                ErrorData::invalid_request(
                    format!("{reason} [{}]", why.code()),
                    Some(serde_json::json!({"code": why.code()})),
                )
            })
    }
}

/// Where a server's message arrived: on a call's response stream
/// (Streamable HTTP tells), or somewhere that names no call.
fn arrival(extensions: &rmcp::model::Extensions) -> Arrival {
    match extensions.get::<InboundStreamOrigin>() {
        Some(InboundStreamOrigin::OutboundRequest(id)) => Arrival::OnCall(id.to_string()),
        Some(InboundStreamOrigin::Unassociated) | None => Arrival::Unknown,
    }
}

/// A sampling request in our own shape: text only, an image or audio block
/// replaced by a note naming it.
fn sampling_request(params: &Value) -> SamplingRequest {
    let messages = params
        .get("messages")
        .and_then(Value::as_array)
        .map(|messages| {
            messages
                .iter()
                .map(|m| {
                    let role = match m.get("role").and_then(Value::as_str) {
                        Some("assistant") => SamplingRole::Assistant,
                        _ => SamplingRole::User,
                    };
                    let blocks = match m.get("content") {
                        Some(Value::Array(blocks)) => blocks.clone(),
                        Some(block) => vec![block.clone()],
                        None => Vec::new(),
                    };
                    let text = blocks
                        .iter()
                        .map(|b| match b.get("type").and_then(Value::as_str) {
                            Some("text") => b
                                .get("text")
                                .and_then(Value::as_str)
                                .unwrap_or_default()
                                .to_owned(),
                            Some(kind) => {
                                format!("[{kind} content left out: evoflux samples text only]")
                            }
                            None => "[content left out]".to_owned(),
                        })
                        .collect::<Vec<_>>()
                        .join("\n");
                    SamplingMessage { role, text }
                })
                .collect()
        })
        .unwrap_or_default();
    SamplingRequest {
        messages,
        system_prompt: params
            .get("systemPrompt")
            .and_then(Value::as_str)
            .map(str::to_owned),
        max_tokens: params
            .get("maxTokens")
            .and_then(Value::as_u64)
            .and_then(|n| u32::try_from(n).ok())
            .unwrap_or(1024),
    }
}

fn log_level(level: &Value) -> McpLogLevel {
    serde_json::from_value(level.clone()).unwrap_or(McpLogLevel::Info)
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        // Set field by field: rmcp's capability builders exist only with its
        // server features, which only the test server enables.
        let mut capabilities = ClientCapabilities::default();
        #[allow(deprecated)] // roots are deprecated only in 2026-07-28
        {
            capabilities.roots = Some(RootsCapabilities::default());
            // Sampling is answered by the calling session's model, after
            // its user approves; elicitation in form mode, by its user.
            capabilities.sampling = Some(SamplingCapability::default());
        }
        capabilities.elicitation = Some(
            ElicitationCapability::new()
                .with_form(FormElicitationCapability::new().with_schema_validation(true)),
        );
        ClientConfig::new(
            capabilities,
            Implementation::new("evoflux", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::V_2025_11_25)
    }

    #[allow(deprecated)] // roots are deprecated only in 2026-07-28
    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ListRootsResult, ErrorData> {
        let roots = self
            .roots
            .iter()
            .map(|(uri, name)| {
                let root = rmcp::model::Root::new(uri.clone());
                match name {
                    Some(n) => root.with_name(n.clone()),
                    None => root,
                }
            })
            .collect();
        Ok(rmcp::model::ListRootsResult::new(roots))
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        // The receiver is gone only while the connection shuts down.
        let _ = self.refresh.send(());
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        context: NotificationContext<RoleClient>,
    ) {
        // Delivered in read order, and before a call whose answer was read
        // after this returns ([`crate::progress_order`]).
        let _turn = self
            .live
            .order
            .turn(context.extensions.get::<ReadSeq>().copied())
            .await;
        let token = params.progress_token.0.to_string();
        self.live.progress(
            &token,
            McpProgress {
                progress: params.progress,
                total: params.total,
                message: params.message,
            },
        );
    }

    #[allow(deprecated)] // logging is deprecated only in 2026-07-28
    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        context: NotificationContext<RoleClient>,
    ) {
        // Delivered in read order, and before a call whose answer was read
        // after this returns ([`crate::progress_order`]); admitted by the
        // log rate in that order too.
        let _turn = self
            .live
            .order
            .turn(context.extensions.get::<ReadSeq>().copied())
            .await;
        let wire = serde_json::to_value(&params).unwrap_or_default();
        let log = McpLog {
            level: log_level(&wire["level"]),
            logger: params.logger.clone(),
            message: match &params.data {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            },
        };
        let Some(log) = self.live.admit_log(log) else {
            return;
        };
        match self.live.route(&arrival(&context.extensions)) {
            Ok(listener) => listener.log(log),
            // Between calls (or shared by several sessions): the log only.
            Err(_) => tracing::info!(
                level = log.level.as_str(),
                logger = log.logger.as_deref().unwrap_or(""),
                "MCP server log: {}",
                log.message
            ),
        }
    }

    #[allow(deprecated)] // sampling is deprecated only in 2026-07-28
    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        let listener = self.owner("sampling/createMessage", &context)?;
        let wire = serde_json::to_value(&params)
            .map_err(|e| ErrorData::invalid_params(e.to_string(), None))?;
        let answer = listener
            .sample(sampling_request(&wire))
            .await
            // MCP's code for a sampling request the user rejected.
            .map_err(|reason| ErrorData::new(ErrorCode(-1), reason, None))?;
        serde_json::from_value(serde_json::json!({
            "role": "assistant",
            "content": {"type": "text", "text": answer.text},
            "model": answer.model,
            "stopReason": "endTurn",
        }))
        .map_err(|e| ErrorData::internal_error(e.to_string(), None))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let (message, schema) = match request {
            ElicitRequestParams::FormElicitationParams {
                message,
                requested_schema,
                ..
            } => (
                message,
                serde_json::to_value(&requested_schema).unwrap_or_default(),
            ),
            // URL mode (and whatever a later revision adds) is not offered.
            _ => {
                return Err(ErrorData::invalid_params(
                    "evoflux answers elicitation in form mode only; URL mode is not supported",
                    None,
                ));
            }
        };
        let listener = self.owner("elicitation/create", &context)?;
        let answer = listener
            .elicit(ElicitationRequest {
                message: crate::live::cut(&message),
                schema: schema.clone(),
            })
            .await;
        let result = match answer {
            ElicitationAnswer::Accept { content } => {
                // Checked once more here, whatever front end answered.
                if let Err(why) = crate::live::validate_elicitation(&schema, &content) {
                    return Err(ErrorData::invalid_params(
                        format!("the answer does not fit the requested schema: {why}"),
                        Some(serde_json::json!({"code": codes::ELICITATION_INVALID})),
                    ));
                }
                serde_json::json!({"action": "accept", "content": content})
            }
            ElicitationAnswer::Decline {
                reason: Some(reason),
            } => {
                serde_json::json!({"action": "decline", "_meta": {"reason": reason}})
            }
            ElicitationAnswer::Decline { reason: None } => serde_json::json!({"action": "decline"}),
            ElicitationAnswer::Cancel => serde_json::json!({"action": "cancel"}),
        };
        serde_json::from_value(result).map_err(|e| ErrorData::internal_error(e.to_string(), None))
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        // One refresh re-lists tools and prompts (the manager's refresh loop).
        let _ = self.refresh.send(());
    }
}

/// `file://` URIs of the session roots, named after their folder.
fn root_uris(roots: &[PathBuf]) -> Vec<(String, Option<String>)> {
    roots
        .iter()
        .filter_map(|p| {
            let uri = url::Url::from_file_path(p).ok()?;
            let name = p.file_name().map(|n| n.to_string_lossy().into_owned());
            Some((uri.to_string(), name))
        })
        .collect()
}

/// The last lines a server wrote to stderr (stderr is free-form logging,
/// not an error signal, but it explains most failed starts).
#[derive(Debug, Clone, Default)]
struct StderrTail(Arc<Mutex<VecDeque<String>>>);

impl StderrTail {
    fn push(&self, line: String) {
        if let Ok(mut lines) = self.0.lock() {
            if lines.len() == STDERR_LINES {
                lines.pop_front();
            }
            lines.push_back(line);
        }
    }

    fn render(&self) -> String {
        match self.0.lock() {
            Ok(lines) if !lines.is_empty() => {
                format!(
                    "; stderr: {}",
                    lines.iter().cloned().collect::<Vec<_>>().join(" | ")
                )
            }
            _ => String::new(),
        }
    }
}

/// A child's process group. Dropping it kills whatever is left in the
/// group, so no server (or a grandchild it spawned, like `npx` → `node`)
/// outlives its connection.
#[derive(Debug)]
struct ProcessGroup {
    pgid: Option<i32>,
    /// The server process itself, waited for at shutdown.
    child: Option<tokio::process::Child>,
}

impl ProcessGroup {
    #[cfg(unix)]
    fn pid(&self) -> Option<rustix::process::Pid> {
        self.pgid.and_then(rustix::process::Pid::from_raw)
    }

    /// Whether any process of the group is still alive.
    fn alive(&self) -> bool {
        #[cfg(unix)]
        {
            self.pid()
                .is_some_and(|p| rustix::process::test_kill_process_group(p).is_ok())
        }
        #[cfg(not(unix))]
        {
            false
        }
    }

    fn signal_terminate(&self) {
        #[cfg(unix)]
        if let Some(p) = self.pid() {
            let _ = rustix::process::kill_process_group(p, rustix::process::Signal::TERM);
        }
    }

    fn kill(&mut self) {
        #[cfg(unix)]
        if let Some(p) = self.pid() {
            let _ = rustix::process::kill_process_group(p, rustix::process::Signal::KILL);
        }
        self.pgid = None;
    }

    /// Waits until the server exits on its own (its stdin is closed), at
    /// most until `deadline`; then terminates what is left of the group
    /// and, after [`TERM_GRACE`], kills it.
    async fn reap(&mut self, deadline: tokio::time::Instant) {
        if let Some(child) = self.child.as_mut() {
            let _ = tokio::time::timeout_at(deadline, child.wait()).await;
        }
        if self.alive() {
            self.signal_terminate();
            let until = tokio::time::Instant::now() + TERM_GRACE;
            loop {
                if let Some(child) = self.child.as_mut() {
                    // Reaps the server as soon as it exits, so it does not
                    // keep the group alive as a zombie.
                    let _ = child.try_wait();
                }
                if !self.alive() || tokio::time::Instant::now() >= until {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
        self.kill();
        if let Some(mut child) = self.child.take() {
            let _ = child.wait().await;
        }
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.kill();
    }
}

/// One live MCP session.
pub struct Connection {
    running: tokio::sync::Mutex<Option<RunningService<RoleClient, Handler>>>,
    peer: Peer<RoleClient>,
    group: tokio::sync::Mutex<Option<ProcessGroup>>,
    stderr: StderrTail,
    /// The bound of one call's result ([`DEFAULT_MAX_RESULT_BYTES`]).
    max_result_bytes: usize,
    /// The calls whose answer passed that bound.
    cut: CutAnswers,
    /// The calls in flight, for what the server sends during them.
    live: Arc<InFlight>,
    /// The protocol version the server agreed to.
    pub protocol_version: String,
    /// `serverInfo.name` and `.version`.
    pub server_info: Option<(String, String)>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("protocol_version", &self.protocol_version)
            .field("server_info", &self.server_info)
            .finish_non_exhaustive()
    }
}

/// The receiving end of `tools/list_changed` notifications.
pub type RefreshReceiver = mpsc::UnboundedReceiver<()>;

/// The HTTP client of Streamable HTTP servers: the workspace reqwest
/// (rustls with the process's one crypto provider, installed by
/// `evoflux_core::tls`), with redirects disabled so configured headers
/// never reach another origin.
pub fn http_client() -> Result<reqwest::Client, String> {
    evoflux_core::tls::install_crypto_provider();
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(Duration::from_secs(30))
        .build()
        .map_err(|e| e.to_string())
}

/// Splits configured headers into those sent and those dropped because the
/// client sets them itself.
pub fn partition_headers(
    headers: &BTreeMap<String, String>,
) -> (BTreeMap<String, String>, Vec<String>) {
    let mut sent = BTreeMap::new();
    let mut dropped = Vec::new();
    for (name, value) in headers {
        let lower = name.to_ascii_lowercase();
        if RESERVED_HEADERS.contains(&lower.as_str()) || lower.starts_with("mcp-param-") {
            dropped.push(name.clone());
        } else {
            sent.insert(name.clone(), value.clone());
        }
    }
    (sent, dropped)
}

fn init_message(e: &dyn std::fmt::Display) -> String {
    format!(
        "the MCP handshake failed: {}",
        without_type_names(&e.to_string())
    )
}

/// The SDK's transport errors name the Rust types they came through
/// (`Transport [rmcp::transport::worker::WorkerTransport<…>] error: …`),
/// which tells a user nothing: every `path::Type<…>` token is dropped,
/// with the brackets it leaves empty, and the rest is kept as it was.
pub(crate) fn without_type_names(text: &str) -> String {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let starts_token = is_ident(chars[i]) && (i == 0 || !is_ident(chars[i - 1]));
        if !starts_token {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        let (mut j, mut depth, mut path) = (i, 0usize, false);
        while j < chars.len() {
            match chars[j] {
                c if is_ident(c) => j += 1,
                ':' if chars.get(j + 1) == Some(&':') => {
                    path = true;
                    j += 2;
                }
                '<' => {
                    depth += 1;
                    j += 1;
                }
                '>' if depth > 0 => {
                    depth -= 1;
                    j += 1;
                }
                ',' | ' ' | '&' | '\'' if depth > 0 => j += 1,
                _ => break,
            }
        }
        if !(path && depth == 0) {
            out.extend(&chars[i..j]);
        }
        i = j;
    }
    out.replace("[]", "")
        .replace("()", "")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The SDK's error of a request to `server` as ours: the server's own
/// JSON-RPC error as it sent it, anything else a transport failure told
/// without the SDK's type names.
fn request_error(server: &str, e: ServiceError) -> McpError {
    match e {
        ServiceError::McpError(e) => McpError::Protocol {
            server: server.to_owned(),
            code: e.code.0,
            message: e.message.into_owned(),
        },
        e => McpError::Transport {
            server: server.to_owned(),
            detail: without_type_names(&e.to_string()),
        },
    }
}

/// An SDK type as one of ours, through their shared JSON shape.
fn ours<T: serde::de::DeserializeOwned>(sdk: &impl serde::Serialize) -> serde_json::Result<T> {
    serde_json::to_value(sdk).and_then(serde_json::from_value)
}

/// Initializes a session over `client` (plain, or rmcp's [`AuthClient`]
/// that sends and refreshes the stored token).
async fn serve_http<C>(
    client: C,
    config: StreamableHttpClientTransportConfig,
    handler: impl FnOnce(mpsc::UnboundedSender<()>) -> Handler,
    max_result_bytes: usize,
) -> Result<(Connection, RefreshReceiver), StartFailure>
where
    C: StreamableHttpClient + Send + Sync + 'static,
{
    let cut = CutAnswers::default();
    let transport =
        StreamableHttpClientTransport::with_client(BoundedHttp::new(client, cut.clone()), config);
    let (tx, rx) = mpsc::unbounded_channel();
    let handler = handler(tx);
    let transport = Sequenced::new(transport, Arc::clone(&handler.live.order));
    match handler.serve(transport).await {
        Ok(running) => {
            let connection =
                Connection::new(running, None, StderrTail::default(), max_result_bytes, cut);
            Ok((connection, rx))
        }
        // The SDK's reading: the server's `401` challenge, directly or after
        // the stored token was refused and could not be refreshed.
        Err(e) if e.is_authorization_required() => Err(StartFailure::needs_login(
            "the server asks for a login (HTTP 401): log in from the web UI's MCP servers, \
             or with `evoflux mcp login SERVER`",
        )),
        Err(e) => Err(StartFailure::new(codes::START_FAILED, init_message(&e))),
    }
}

impl Connection {
    /// Spawns a stdio server and initializes it.
    pub async fn stdio(
        launch: &StdioLaunch,
        base_env: &BTreeMap<String, String>,
        roots: &[PathBuf],
        max_result_bytes: usize,
    ) -> Result<(Connection, RefreshReceiver), StartFailure> {
        if let Some(file) = launch.pinned.iter().find(|f| !f.unchanged()) {
            return Err(StartFailure::new(
                codes::CHANGED_SINCE_TRUST,
                format!(
                    "`{}`, which this repository's server runs, changed since its trust was \
                     checked: it is not started until you trust the repository again (evoflux \
                     trust)",
                    file.source
                ),
            ));
        }
        for dir in &launch.create_dirs {
            std::fs::create_dir_all(dir).map_err(|e| {
                StartFailure::new(
                    codes::SERVER_INVALID,
                    format!("cannot create `{}`: {e}", dir.display()),
                )
            })?;
        }
        let mut cmd = tokio::process::Command::new(&launch.program);
        cmd.args(&launch.args)
            .env_clear()
            .envs(compose(base_env, &launch.env));
        if let Some(cwd) = &launch.cwd {
            cmd.current_dir(cwd);
        }
        // Its own group, so shutdown reaches every process it started and
        // a Ctrl-C in evoflux's terminal does not hit it directly.
        #[cfg(unix)]
        cmd.process_group(0);
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().map_err(|e| {
            StartFailure::new(
                codes::START_FAILED,
                format!("cannot start `{}`: {e}", launch.program.display()),
            )
        })?;
        let (stdin, stdout, stderr) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take());
        let group = ProcessGroup {
            pgid: child.id().and_then(|p| i32::try_from(p).ok()),
            child: Some(child),
        };
        let (Some(stdin), Some(stdout)) = (stdin, stdout) else {
            return Err(StartFailure::new(
                codes::START_FAILED,
                format!(
                    "cannot talk to `{}`: no stdin or stdout pipe",
                    launch.program.display()
                ),
            ));
        };
        // Our own stdio transport rather than rmcp's child-process one: it
        // bounds each answer ([`BoundedLines`]) and leaves the shutdown
        // sequence to [`Connection::shutdown`] (rmcp's waits 3 s twice).
        let cut = CutAnswers::default();
        let process = AsyncRwTransport::new_client(
            BoundedLines::new(stdout, max_result_bytes, cut.clone()),
            stdin,
        )
        .with_max_line_length(max_result_bytes.saturating_add(LINE_SLACK));
        let tail = StderrTail::default();
        if let Some(stderr) = stderr {
            let tail = tail.clone();
            tokio::spawn(async move {
                let mut lines = tokio::io::BufReader::new(stderr).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    tail.push(line);
                }
            });
        }
        let (tx, rx) = mpsc::unbounded_channel();
        let handler = Handler::new(roots, tx);
        let process = Sequenced::new(process, Arc::clone(&handler.live.order));
        match handler.serve(process).await {
            Ok(running) => {
                let connection = Connection::new(running, Some(group), tail, max_result_bytes, cut);
                Ok((connection, rx))
            }
            Err(e) => {
                // Give the stderr reader a moment to collect the reason.
                tokio::time::sleep(Duration::from_millis(50)).await;
                let message = format!("{}{}", init_message(&e), tail.render());
                drop(group);
                Err(StartFailure::new(codes::START_FAILED, message))
            }
        }
    }

    /// Connects to a Streamable HTTP server and initializes it, sending
    /// (and refreshing) the OAuth tokens `credentials` holds when a login
    /// stored some. A server that refuses the handshake with `401` is a
    /// [`FailureKind::NeedsLogin`].
    pub async fn http(
        launch: &HttpLaunch,
        roots: &[PathBuf],
        credentials: Option<ServerCredentials>,
        max_result_bytes: usize,
    ) -> Result<(Connection, RefreshReceiver), StartFailure> {
        let client = http_client().map_err(|e| {
            StartFailure::new(
                codes::START_FAILED,
                format!("cannot build the HTTP client: {e}"),
            )
        })?;
        let (sent, _) = partition_headers(&launch.headers);
        let mut headers = HashMap::new();
        for (name, value) in sent {
            let name = reqwest::header::HeaderName::from_bytes(name.as_bytes()).map_err(|e| {
                StartFailure::new(
                    codes::SERVER_INVALID,
                    format!("header `{name}` is not valid: {e}"),
                )
            })?;
            let value = reqwest::header::HeaderValue::from_str(&value).map_err(|e| {
                StartFailure::new(
                    codes::SERVER_INVALID,
                    format!("the value of header `{name}` is not valid: {e}"),
                )
            })?;
            headers.insert(name, value);
        }
        let config = StreamableHttpClientTransportConfig::with_uri(launch.url.as_str())
            .custom_headers(headers)
            .max_json_response_size(max_result_bytes)
            .max_sse_event_size(max_result_bytes);
        let handler = |tx| Handler::new(roots, tx);
        match credentials.filter(ServerCredentials::has_tokens) {
            None => serve_http(client, config, handler, max_result_bytes).await,
            Some(credentials) => {
                let manager = crate::oauth::connection_manager(&launch.url, credentials)
                    .await
                    .map_err(|e| {
                        StartFailure::new(
                            codes::START_FAILED,
                            format!(
                                "cannot use the stored login (the authorization server's \
                                 metadata): {}",
                                without_type_names(&e.to_string())
                            ),
                        )
                    })?;
                serve_http(
                    AuthClient::new(client, manager),
                    config,
                    handler,
                    max_result_bytes,
                )
                .await
            }
        }
    }

    fn new(
        running: RunningService<RoleClient, Handler>,
        group: Option<ProcessGroup>,
        stderr: StderrTail,
        max_result_bytes: usize,
        cut: CutAnswers,
    ) -> Connection {
        let peer = running.peer().clone();
        let live = Arc::clone(&running.service().live);
        let info = running.peer_info();
        let protocol_version = info
            .as_ref()
            .map(|i| i.protocol_version.to_string())
            .unwrap_or_else(|| PROTOCOL_VERSION.to_owned());
        let server_info = info
            .as_ref()
            .and_then(|i| i.server_info.as_ref())
            .map(|s| (s.name.clone(), s.version.clone()));
        Connection {
            running: tokio::sync::Mutex::new(Some(running)),
            peer,
            group: tokio::sync::Mutex::new(group),
            stderr,
            max_result_bytes,
            cut,
            live,
            protocol_version,
            server_info,
        }
    }

    /// Whether the session has ended (the process exited or the transport
    /// failed).
    pub fn is_closed(&self) -> bool {
        self.peer.is_transport_closed()
    }

    /// The server's stderr tail, for messages about a closed connection.
    pub fn stderr_tail(&self) -> String {
        self.stderr.render()
    }

    /// Every tool, following `nextCursor` until the last page.
    pub async fn list_tools(&self) -> Result<Vec<McpTool>, String> {
        let tools = self
            .peer
            .list_all_tools()
            .await
            .map_err(|e| format!("tools/list failed: {e}"))?;
        tools
            .iter()
            .map(|t| {
                ours::<McpTool>(t)
                    .map_err(|e| format!("tools/list returned a tool evoflux cannot read: {e}"))
            })
            .collect()
    }

    /// Calls `tool` with `args`, waiting at most `timeout`. On timeout the
    /// request is dropped, which sends `notifications/cancelled`. An answer
    /// past the result bound ends the call at once
    /// ([`McpError::ResultTooLarge`]). With a `context`, what the server
    /// sends during the call (progress, logs, sampling, elicitation) goes
    /// to it; without one, its requests are refused.
    pub async fn call_tool(
        &self,
        server: &str,
        tool: &str,
        args: Map<String, Value>,
        timeout: Duration,
        context: Option<CallContext>,
    ) -> Result<McpToolResult, McpError> {
        // Registered before the request goes out, so a request the server
        // sends at once finds its owner.
        let registration = context.map(|c| self.live.register(c));
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(args);
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let transport = |e: ServiceError| McpError::Transport {
            server: server.to_owned(),
            detail: without_type_names(&e.to_string()),
        };
        let call = async {
            // Sent with its id in hand, so a cut answer is known as this call's.
            let handle = self
                .peer
                .send_request_with_option(request, PeerRequestOptions::no_options())
                .await?;
            if let Some(r) = &registration {
                // rmcp sets the `_meta.progressToken` of every request.
                r.sent(handle.id.to_string(), handle.progress_token.0.to_string());
            }
            let mut guard = CancelUnanswered {
                peer: self.peer.clone(),
                id: Some(handle.id.clone()),
            };
            let id = handle.id.clone();
            let answer = handle.await_response().await;
            guard.id = None;
            if let Some(r) = &registration {
                r.answered().await;
            }
            Ok::<_, ServiceError>((id, answer))
        };
        let (id, answer) = match tokio::time::timeout(timeout, call).await {
            Err(_) => {
                return Err(McpError::Timeout {
                    server: server.to_owned(),
                    tool: tool.to_owned(),
                    timeout,
                });
            }
            Ok(Err(e)) => return Err(transport(e)),
            Ok(Ok(sent)) => sent,
        };
        let result = match answer {
            Err(_) if self.cut.take(&id) => {
                return Err(McpError::ResultTooLarge {
                    server: server.to_owned(),
                    tool: tool.to_owned(),
                    limit: self.max_result_bytes,
                });
            }
            Err(e) => return Err(request_error(server, e)),
            Ok(ServerResult::CallToolResult(r)) => serde_json::to_value(&r),
            // A server that answers `{}`: a result without content.
            Ok(ServerResult::EmptyResult(_)) => Ok(serde_json::json!({"content": []})),
            Ok(_) => {
                return Err(McpError::Transport {
                    server: server.to_owned(),
                    detail: "the server answered tools/call with something other than a tool \
                             result"
                        .to_owned(),
                });
            }
        };
        let wire = result.map_err(|e| McpError::Transport {
            server: server.to_owned(),
            detail: format!("cannot read the tool result: {e}"),
        })?;
        Ok(McpToolResult::from_wire(&wire))
    }

    /// Whether the server declared prompts in its capabilities.
    pub fn offers_prompts(&self) -> bool {
        self.peer
            .peer_info()
            .is_some_and(|i| i.capabilities.prompts.is_some())
    }

    /// Whether the server declared resources in its capabilities.
    pub fn offers_resources(&self) -> bool {
        self.peer
            .peer_info()
            .is_some_and(|i| i.capabilities.resources.is_some())
    }

    /// Every prompt (`prompts/list`, following `nextCursor`).
    pub async fn list_prompts(&self) -> Result<Vec<McpPrompt>, String> {
        let prompts = self.peer.list_all_prompts().await.map_err(|e| {
            format!(
                "prompts/list failed: {}",
                without_type_names(&e.to_string())
            )
        })?;
        prompts
            .iter()
            .map(|p| {
                ours::<McpPrompt>(p)
                    .map_err(|e| format!("prompts/list returned a prompt evoflux cannot read: {e}"))
            })
            .collect()
    }

    /// Every resource (`resources/list`, following `nextCursor`), at most
    /// `timeout`.
    pub async fn list_resources(
        &self,
        server: &str,
        timeout: Duration,
    ) -> Result<Vec<McpResource>, McpError> {
        let listed = self
            .bounded(
                server,
                "resources/list",
                timeout,
                self.peer.list_all_resources(),
            )
            .await?;
        listed
            .iter()
            .map(|r| {
                ours::<McpResource>(r).map_err(|e| McpError::Transport {
                    server: server.to_owned(),
                    detail: format!("resources/list returned a resource evoflux cannot read: {e}"),
                })
            })
            .collect()
    }

    /// Expands prompt `name` with `args` (`prompts/get`), at most `timeout`.
    pub async fn get_prompt(
        &self,
        server: &str,
        name: &str,
        args: Map<String, Value>,
        timeout: Duration,
    ) -> Result<McpPromptResult, McpError> {
        let params = GetPromptRequestParams::new(name.to_owned()).with_arguments(args);
        let result = self
            .bounded(
                server,
                &format!("prompts/get `{name}`"),
                timeout,
                self.peer.get_prompt(params),
            )
            .await?;
        let wire = serde_json::to_value(&result).map_err(|e| McpError::Transport {
            server: server.to_owned(),
            detail: format!("cannot read the prompt: {e}"),
        })?;
        Ok(McpPromptResult::from_wire(&wire))
    }

    /// Reads the resource at `uri` (`resources/read`), at most `timeout`.
    pub async fn read_resource(
        &self,
        server: &str,
        uri: &str,
        timeout: Duration,
    ) -> Result<Vec<McpResourceContents>, McpError> {
        let result = self
            .bounded(
                server,
                &format!("resources/read `{uri}`"),
                timeout,
                self.peer
                    .read_resource(ReadResourceRequestParams::new(uri.to_owned())),
            )
            .await?;
        let wire = serde_json::to_value(&result).map_err(|e| McpError::Transport {
            server: server.to_owned(),
            detail: format!("cannot read the resource: {e}"),
        })?;
        Ok(McpResourceContents::from_wire(&wire))
    }

    /// One request other than a tool call, bounded in time, its SDK error
    /// turned into ours.
    async fn bounded<T>(
        &self,
        server: &str,
        request: &str,
        timeout: Duration,
        call: impl std::future::Future<Output = Result<T, ServiceError>>,
    ) -> Result<T, McpError> {
        match tokio::time::timeout(timeout, call).await {
            Err(_) => Err(McpError::RequestTimeout {
                server: server.to_owned(),
                request: request.to_owned(),
                timeout,
            }),
            Ok(Err(e)) => Err(request_error(server, e)),
            Ok(Ok(v)) => Ok(v),
        }
    }

    /// Ends the session. Stdio: closes the server's stdin (end-of-input),
    /// gives it [`EOF_GRACE`] to exit, then sends `SIGTERM` to its process
    /// group and `SIGKILL` after [`TERM_GRACE`]. HTTP: deletes the session,
    /// at most [`SHUTDOWN_GRACE`].
    pub async fn shutdown(&self) {
        let running = self.running.lock().await.take();
        let mut group = self.group.lock().await.take();
        let started = tokio::time::Instant::now();
        if let Some(mut running) = running {
            // Ending the service closes the transport, which drops stdin.
            let grace = match group {
                Some(_) => EOF_GRACE,
                None => SHUTDOWN_GRACE,
            };
            let _ = tokio::time::timeout(grace, running.close()).await;
        }
        if let Some(group) = group.as_mut() {
            group.reap(started + EOF_GRACE).await;
        }
    }
}

/// Sends `notifications/cancelled` for a call dropped before its answer
/// (its timeout passed), as rmcp's own `call_tool` does; the cancellation
/// also frees rmcp's slot for the answer.
struct CancelUnanswered {
    peer: Peer<RoleClient>,
    id: Option<RequestId>,
}

impl Drop for CancelUnanswered {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let peer = self.peer.clone();
        runtime.spawn(async move {
            let reason = Some("the call's time bound passed".to_owned());
            let _ = peer
                .notify_cancelled(CancelledNotificationParam::new(Some(id), reason))
                .await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::without_type_names;

    #[test]
    fn transport_errors_lose_their_rust_type_names() {
        let sdk = "Transport [rmcp::transport::worker::WorkerTransport<rmcp::transport::streamable_http_client::StreamableHttpClientWorker<reqwest::Client>>] error: Client error: HTTP status client error (401 Unauthorized)";
        assert_eq!(
            without_type_names(sdk),
            "Transport error: Client error: HTTP status client error (401 Unauthorized)"
        );
        // Everything else stays: URLs, addresses, plain words.
        let plain = "connection refused at http://127.0.0.1:9/mcp ([::1]:9), retry: no";
        assert_eq!(without_type_names(plain), plain);
    }
}
