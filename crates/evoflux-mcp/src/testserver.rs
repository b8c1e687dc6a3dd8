//! A small MCP server built on `rmcp`, for tests of this crate and of the
//! CLI: served over stdio by the `evoflux-mcp-testserver` binary, or over
//! Streamable HTTP on a loopback port (in-process with [`serve_http`], or
//! by the binary with `http`).
//!
//! Tools: `echo`, `add`, `get_env` (the variables the process sees),
//! `fail` (a tool error, `isError: true`), `sleep` (for timeouts),
//! `add_tool` (adds a tool and sends `tools/list_changed`), `roots` (asks
//! the client for `roots/list`), `headers` (the HTTP request headers),
//! `pid`, `spawn_child` (a `sleep` grandchild, for orphan checks),
//! `crash` (exits the process), `flood` (a text result of `bytes` bytes,
//! for the result bound), plus `filler_<n>` tools and a page size to
//! force `tools/list` pagination.

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
    /// Set by `add_tool` with `{"break_listing": true}`: every later
    /// `tools/list` fails, to test how a failed re-list is reported.
    listing_broken: std::sync::atomic::AtomicBool,
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
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
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
