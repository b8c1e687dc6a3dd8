//! A small MCP server built on `rmcp`, for tests of this crate and of the
//! CLI: served over stdio by the `evoflux-mcp-testserver` binary, or over
//! Streamable HTTP on a loopback port (in-process with [`serve_http`], or
//! by the binary with `http`).
//!
//! Tools: `echo`, `add`, `get_env` (the variables the process sees),
//! `fail` (a tool error, `isError: true`), `sleep` (for timeouts),
//! `add_tool` (adds a tool and sends `tools/list_changed`), `add_prompt`
//! (adds a prompt and sends `prompts/list_changed`; the prompt `greet`
//! takes a required `name`), `roots` (asks
//! the client for `roots/list`), `headers` (the HTTP request headers),
//! `pid`, `spawn_child` (a `sleep` grandchild, for orphan checks),
//! `crash` (exits the process), `flood` (a text result of `bytes` bytes,
//! for the result bound), `chatter` (three progress notifications and a
//! warning log message during the call), `progress_then_result` (one
//! progress notification written immediately before the result, to test
//! that it still reaches the call), `logs_then_result` (`count` numbered
//! info log messages back to back, then the result at once, to test that
//! they reach the call in order), `sample` (asks the client's model
//! during the call), `sample_later` and `last_sampling` (asks after the
//! call ended, when no call is in flight, and reports how that went),
//! plus `filler_<n>` tools and a page size to force `tools/list`
//! pagination.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ErrorData, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{RoleServer, ServerHandler, ServiceExt};
use serde_json::{Map, Value, json};

/// How the server lists its tools.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TestServerOptions {
    /// Tools per `tools/list` page; 0 lists everything at once.
    pub page_size: usize,
    /// How many `filler_<n>` tools to add.
    pub filler_tools: usize,
    /// Over HTTP: stateless, answering each request with a plain JSON body
    /// instead of an SSE stream (the other shape of a Streamable HTTP
    /// answer).
    pub json_response: bool,
}

#[derive(Debug, Clone)]
struct TestServer {
    options: TestServerOptions,
    /// State shared by every session of one server.
    dynamic: Arc<Shared>,
}

/// What `add_tool` changes, shared by every session of one server.
#[derive(Debug, Default)]
struct Shared {
    /// Tools added by `add_tool`.
    added: AtomicUsize,
    /// Prompts added by `add_prompt` (`dynamic_prompt_<n>`, besides `greet`).
    prompts_added: AtomicUsize,
    /// Set by `add_tool` with `{"break_listing": true}`: every later
    /// `tools/list` fails, to test how a failed re-list is reported.
    listing_broken: std::sync::atomic::AtomicBool,
    /// What the last `sample_later` request got back.
    last_sampling: std::sync::Mutex<Option<String>>,
}

/// A `sampling/createMessage` with one user message, answered as text or
/// as the client's error.
#[allow(deprecated)] // sampling is deprecated only in 2026-07-28
async fn ask_for_sample(peer: &rmcp::Peer<RoleServer>, prompt: &str) -> String {
    let params: Result<rmcp::model::CreateMessageRequestParams, _> =
        serde_json::from_value(json!({
            "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
            "systemPrompt": "Answer in one word.",
            "maxTokens": 50,
        }));
    let params = match params {
        Ok(p) => p,
        Err(e) => return format!("error: {e}"),
    };
    match peer.create_message(params).await {
        Ok(result) => match serde_json::to_value(&result) {
            Ok(v) => format!(
                "answer: {} (model {})",
                v["content"]["text"].as_str().unwrap_or_default(),
                v["model"].as_str().unwrap_or_default()
            ),
            Err(e) => format!("error: {e}"),
        },
        Err(e) => format!("error: {e}"),
    }
}

fn schema(properties: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": properties, "required": required})
}

fn tool(name: &str, description: &str, input_schema: Value) -> Result<Tool, ErrorData> {
    serde_json::from_value(json!({
        "name": name,
        "description": description,
        "inputSchema": input_schema,
    }))
    .map_err(|e| ErrorData::internal_error(e.to_string(), None))
}

/// A 1x1 PNG, base64: what the `image` tool returns.
pub const TINY_PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

fn text_result(text: impl Into<String>, is_error: bool) -> Result<CallToolResponse, ErrorData> {
    let result: CallToolResult = serde_json::from_value(json!({
        "content": [{"type": "text", "text": text.into()}],
        "isError": is_error,
    }))
    .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
    Ok(CallToolResponse::Complete(result))
}

fn int_arg(args: &Map<String, Value>, key: &str) -> Result<i64, ErrorData> {
    args.get(key)
        .and_then(Value::as_i64)
        .ok_or_else(|| ErrorData::invalid_params(format!("`{key}` must be an integer"), None))
}

impl TestServer {
    fn all_tools(&self) -> Result<Vec<Tool>, ErrorData> {
        let mut tools = vec![
            tool(
                "echo",
                "Echoes the message back.",
                schema(json!({"message": {"type": "string"}}), &["message"]),
            )?,
            tool(
                "add",
                "Adds two integers.",
                schema(
                    json!({"a": {"type": "integer"}, "b": {"type": "integer"}}),
                    &["a", "b"],
                ),
            )?,
            tool(
                "get_env",
                "Returns the environment variables of the server process.",
                schema(json!({}), &[]),
            )?,
            tool(
                "fail",
                "Always reports a tool error.",
                schema(json!({"message": {"type": "string"}}), &[]),
            )?,
            tool(
                "sleep",
                "Sleeps for `ms` milliseconds.",
                schema(json!({"ms": {"type": "integer"}}), &["ms"]),
            )?,
            tool(
                "add_tool",
                "Adds a tool and notifies tools/list_changed.",
                schema(json!({}), &[]),
            )?,
            tool(
                "roots",
                "Asks the client for its roots.",
                schema(json!({}), &[]),
            )?,
            tool(
                "headers",
                "Returns the HTTP request headers (empty over stdio).",
                schema(json!({}), &[]),
            )?,
            tool(
                "pid",
                "Returns the server's process id.",
                schema(json!({}), &[]),
            )?,
            tool(
                "spawn_child",
                "Starts `sleep 600` as a child and returns its process id.",
                schema(json!({}), &[]),
            )?,
            tool(
                "flood",
                "Returns a text of `bytes` bytes.",
                schema(json!({"bytes": {"type": "integer"}}), &["bytes"]),
            )?,
            tool(
                "crash",
                "Exits the server process at once.",
                schema(json!({}), &[]),
            )?,
            tool(
                "image",
                "Returns a caption, a 1x1 PNG as image content and the same PNG as an \
                 embedded resource blob.",
                schema(json!({}), &[]),
            )?,
            tool(
                "chatter",
                "Sends three progress notifications and a warning log message.",
                schema(json!({}), &[]),
            )?,
            tool(
                "progress_then_result",
                "Sends one finished progress notification and answers at once.",
                schema(json!({}), &[]),
            )?,
            tool(
                "logs_then_result",
                "Sends `count` info log messages `log 0`, `log 1`, … back to back and \
                 answers at once.",
                schema(json!({"count": {"type": "integer"}}), &["count"]),
            )?,
            tool(
                "sample",
                "Asks the client's model `prompt` during the call.",
                schema(json!({"prompt": {"type": "string"}}), &["prompt"]),
            )?,
            tool(
                "sample_later",
                "Asks the client's model `prompt` `ms` milliseconds after the call ended.",
                schema(
                    json!({"prompt": {"type": "string"}, "ms": {"type": "integer"}}),
                    &["prompt", "ms"],
                ),
            )?,
            tool(
                "last_sampling",
                "What the last `sample_later` request got back (once).",
                schema(json!({}), &[]),
            )?,
        ];
        for n in 0..self.options.filler_tools {
            tools.push(tool(
                &format!("filler_{n}"),
                "A filler tool.",
                schema(json!({}), &[]),
            )?);
        }
        for n in 0..self.dynamic.added.load(Ordering::SeqCst) {
            tools.push(tool(
                &format!("dynamic_{n}"),
                "A tool added at run time.",
                schema(json!({}), &[]),
            )?);
        }
        Ok(tools)
    }
}

impl ServerHandler for TestServer {
    #[allow(deprecated)] // logging is deprecated only in 2026-07-28
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_logging()
            .enable_prompts()
            .enable_prompts_list_changed()
            .enable_tools()
            .enable_tool_list_changed()
            .build();
        ServerConfig::new(capabilities)
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        if self.dynamic.listing_broken.load(Ordering::SeqCst) {
            return Err(ErrorData::internal_error(
                "tools/list is broken on purpose",
                None,
            ));
        }
        let tools = self.all_tools()?;
        let start: usize = request
            .and_then(|r| r.cursor)
            .map(|c| c.parse())
            .transpose()
            .map_err(|_| ErrorData::invalid_params("bad cursor", None))?
            .unwrap_or(0);
        let size = if self.options.page_size == 0 {
            tools.len()
        } else {
            self.options.page_size
        };
        let end = (start + size).min(tools.len());
        let page: Vec<Tool> = tools
            .get(start..end)
            .map(<[Tool]>::to_vec)
            .unwrap_or_default();
        let next = (end < tools.len()).then(|| end.to_string());
        serde_json::from_value(json!({"tools": page, "nextCursor": next}))
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListPromptsResult, ErrorData> {
        let mut prompts = vec![json!({
            "name": "greet",
            "description": "Greets someone.",
            "arguments": [{"name": "name", "description": "who", "required": true}]
        })];
        for n in 0..self.dynamic.prompts_added.load(Ordering::SeqCst) {
            prompts.push(json!({"name": format!("dynamic_prompt_{n}")}));
        }
        serde_json::from_value(json!({ "prompts": prompts }))
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))
    }

    async fn get_prompt(
        &self,
        request: rmcp::model::GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetPromptResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        let text = match request.name.as_str() {
            "greet" => match args.get("name").and_then(Value::as_str) {
                Some(name) => format!("Say hello to {name}."),
                None => return Err(ErrorData::invalid_params("`name` is required", None)),
            },
            other if other.starts_with("dynamic_prompt_") => format!("{other} expanded."),
            other => {
                return Err(ErrorData::invalid_params(
                    format!("no prompt named {other}"),
                    None,
                ));
            }
        };
        let result = serde_json::from_value(json!({
            "messages": [{"role": "user", "content": {"type": "text", "text": text}}]
        }))
        .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        Ok(rmcp::model::GetPromptResponse::Complete(result))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.clone().unwrap_or_default();
        let name = request.name.as_ref();
        if (name.starts_with("filler_") || name.starts_with("dynamic_"))
            && self.all_tools()?.iter().any(|t| t.name == name)
        {
            return text_result(name, false);
        }
        match name {
            "echo" => {
                let message = args.get("message").and_then(Value::as_str).unwrap_or("");
                text_result(format!("Echo: {message}"), false)
            }
            "add" => text_result(
                (int_arg(&args, "a")? + int_arg(&args, "b")?).to_string(),
                false,
            ),
            "get_env" => {
                let env: Map<String, Value> = std::env::vars()
                    .map(|(k, v)| (k, Value::String(v)))
                    .collect();
                text_result(Value::Object(env).to_string(), false)
            }
            "fail" => {
                let message = args
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("this tool always fails");
                text_result(message, true)
            }
            "sleep" => {
                let ms = u64::try_from(int_arg(&args, "ms")?).unwrap_or(0);
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_millis(ms)) => text_result("slept", false),
                    () = context.ct.cancelled() => text_result("cancelled", true),
                }
            }
            "add_tool" => {
                if args.get("break_listing") == Some(&Value::Bool(true)) {
                    self.dynamic.listing_broken.store(true, Ordering::SeqCst);
                }
                let n = self.dynamic.added.fetch_add(1, Ordering::SeqCst);
                context
                    .peer
                    .notify_tool_list_changed()
                    .await
                    .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                text_result(format!("added dynamic_{n}"), false)
            }
            "add_prompt" => {
                let n = self.dynamic.prompts_added.fetch_add(1, Ordering::SeqCst);
                context
                    .peer
                    .notify_prompt_list_changed()
                    .await
                    .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                text_result(format!("added dynamic_prompt_{n}"), false)
            }
            "roots" => {
                #[allow(deprecated)] // roots are deprecated only in 2026-07-28
                let roots = context
                    .peer
                    .list_roots()
                    .await
                    .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                let value = serde_json::to_value(&roots)
                    .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                text_result(value.to_string(), false)
            }
            "headers" => {
                let headers: Map<String, Value> = context
                    .extensions
                    .get::<axum::http::request::Parts>()
                    .map(|parts| {
                        parts
                            .headers
                            .iter()
                            .map(|(k, v)| {
                                (
                                    k.as_str().to_owned(),
                                    Value::String(String::from_utf8_lossy(v.as_bytes()).into()),
                                )
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                text_result(Value::Object(headers).to_string(), false)
            }
            "pid" => text_result(std::process::id().to_string(), false),
            "spawn_child" => {
                let mut child = std::process::Command::new("sleep")
                    .arg("600")
                    .spawn()
                    .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                let pid = child.id();
                std::thread::spawn(move || child.wait());
                text_result(pid.to_string(), false)
            }
            "flood" => {
                let bytes = usize::try_from(int_arg(&args, "bytes")?).unwrap_or(0);
                text_result("x".repeat(bytes), false)
            }
            "crash" => std::process::exit(3),
            "image" => {
                let result: CallToolResult = serde_json::from_value(json!({
                    "content": [
                        {"type": "text", "text": "a red dot"},
                        {"type": "image", "data": TINY_PNG, "mimeType": "image/png"},
                        {"type": "resource", "resource": {
                            "uri": "test://dot.png", "mimeType": "image/png", "blob": TINY_PNG,
                        }},
                    ],
                }))
                .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                Ok(CallToolResponse::Complete(result))
            }
            "chatter" => {
                let token = context.meta.get_progress_token();
                for step in 1..=3 {
                    if let Some(token) = &token {
                        let mut p =
                            rmcp::model::ProgressNotificationParam::new(token.clone(), step.into());
                        p.total = Some(3.0);
                        p.message = Some(format!("step {step}"));
                        let _ = context.peer.notify_progress(p).await;
                    }
                    // Apart, so none is coalesced away.
                    tokio::time::sleep(Duration::from_millis(150)).await;
                }
                #[allow(deprecated)] // logging is deprecated only in 2026-07-28
                let log = rmcp::model::LoggingMessageNotificationParam::new(
                    rmcp::model::LoggingLevel::Warning,
                    json!("disk almost full"),
                )
                .with_logger("chatter");
                #[allow(deprecated)]
                let _ = context.peer.notify_logging_message(log).await;
                // Let the notifications arrive before the answer.
                tokio::time::sleep(Duration::from_millis(100)).await;
                text_result("chattered", false)
            }
            "progress_then_result" => {
                if let Some(token) = context.meta.get_progress_token() {
                    let mut p = rmcp::model::ProgressNotificationParam::new(token, 1.0);
                    p.total = Some(1.0);
                    let _ = context.peer.notify_progress(p).await;
                }
                // No pause: the result follows the progress on the wire.
                text_result("done", false)
            }
            "logs_then_result" => {
                for n in 0..int_arg(&args, "count")? {
                    #[allow(deprecated)] // logging is deprecated only in 2026-07-28
                    let log = rmcp::model::LoggingMessageNotificationParam::new(
                        rmcp::model::LoggingLevel::Info,
                        json!(format!("log {n}")),
                    );
                    #[allow(deprecated)]
                    let _ = context.peer.notify_logging_message(log).await;
                }
                // No pause: the result follows the logs on the wire.
                text_result("logged", false)
            }
            "sample" => {
                let prompt = args.get("prompt").and_then(Value::as_str).unwrap_or("");
                text_result(ask_for_sample(&context.peer, prompt).await, false)
            }
            "sample_later" => {
                let prompt = args
                    .get("prompt")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned();
                let ms = u64::try_from(int_arg(&args, "ms")?).unwrap_or(0);
                let peer = context.peer.clone();
                let shared = Arc::clone(&self.dynamic);
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    let got = ask_for_sample(&peer, &prompt).await;
                    *shared
                        .last_sampling
                        .lock()
                        .unwrap_or_else(|p| p.into_inner()) = Some(got);
                });
                text_result("scheduled", false)
            }
            "last_sampling" => {
                let got = self
                    .dynamic
                    .last_sampling
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .take();
                text_result(got.unwrap_or_else(|| "nothing yet".to_owned()), false)
            }
            other => Err(ErrorData::invalid_params(
                format!("Unknown tool: {other}"),
                None,
            )),
        }
    }
}

fn server(options: TestServerOptions, dynamic: Arc<Shared>) -> TestServer {
    TestServer { options, dynamic }
}

/// Serves one client over this process's stdin and stdout until stdin
/// closes.
pub async fn serve_stdio(options: TestServerOptions) -> Result<(), String> {
    let running = server(options, Arc::new(Shared::default()))
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| e.to_string())?;
    running.waiting().await.map_err(|e| e.to_string())?;
    Ok(())
}

/// [`serve_stdio`] that keeps running after its stdin closes, as servers
/// that ignore end-of-input do; only a signal ends it.
pub async fn serve_stdio_ignoring_eof(options: TestServerOptions) -> Result<(), String> {
    serve_stdio(options).await?;
    std::future::pending::<()>().await;
    Ok(())
}

/// A Streamable HTTP test server on a loopback port; stops when dropped.
#[derive(Debug)]
pub struct TestHttpServer {
    pub addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl TestHttpServer {
    /// The MCP endpoint (`http://127.0.0.1:<port>/mcp`).
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }
}

impl Drop for TestHttpServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The axum router serving the test server at `/mcp`.
pub fn http_router(options: TestServerOptions) -> axum::Router {
    let dynamic = Arc::new(Shared::default());
    let service: StreamableHttpService<TestServer, LocalSessionManager> =
        StreamableHttpService::new(
            move || Ok(server(options, dynamic.clone())),
            Arc::default(),
            if options.json_response {
                StreamableHttpServerConfig::default()
                    .with_sse_keep_alive(None)
                    .with_legacy_session_mode(false)
                    .with_json_response(true)
            } else {
                StreamableHttpServerConfig::default().with_sse_keep_alive(None)
            },
        );
    axum::Router::new().nest_service("/mcp", service)
}

/// Starts the HTTP server on `127.0.0.1:port` (0 picks a free port).
pub async fn serve_http(options: TestServerOptions, port: u16) -> Result<TestHttpServer, String> {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .map_err(|e| e.to_string())?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let router = http_router(options);
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    Ok(TestHttpServer { addr, task })
}
