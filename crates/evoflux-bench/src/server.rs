//! The fake model server: loopback only, on a port the OS picks, answering
//! every call at once (the resolver's after a set delay) from a
//! [`Script`], with the usage its [`PrefixCache`] works out, and recording
//! what each request cost.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};

use crate::Wire;
use crate::cache::{CacheUsage, PrefixCache};
use crate::prompt::Prompt;
use crate::scenario::{Reply, Script, resolver_no_skill};
use crate::sse::{self, Usage};

/// How the server behaves besides its script.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// How long the resolver's answer takes: a real model needs a round
    /// trip and some tokens for it, and that wait is what speculative
    /// resolution hides.
    pub resolver_delay: Duration,
    /// How long every other call waits before its answer (default none:
    /// an instant model, so what is measured is the harness). Set it to
    /// see how a harness overlaps its resolver with the main call.
    pub main_delay: Duration,
    /// Where to write every request body (`0001-chat.json`, …), to see
    /// what a harness sends.
    pub dump_dir: Option<PathBuf>,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            resolver_delay: Duration::from_millis(300),
            main_delay: Duration::ZERO,
            dump_dir: None,
        }
    }
}

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub struct Record {
    pub wire: Wire,
    /// When its body had fully arrived.
    pub at: Instant,
    /// Body bytes received.
    pub bytes: usize,
    pub input_tokens: u64,
    pub cached_tokens: u64,
    pub cache_write_tokens: u64,
    /// The skill resolver's call (answered after the resolver delay).
    pub resolver: bool,
    /// A call without tools that is not the resolver (a title, a summary):
    /// answered with plain text, since no tool can be called, and not
    /// counted as a step of the scenario.
    pub side: bool,
    /// Asked for a stream (`"stream": true`); otherwise answered with one
    /// JSON body.
    pub streamed: bool,
    /// The script step it was answered as.
    pub step: usize,
    /// Why it was refused, when it was.
    pub error: Option<String>,
}

#[derive(Debug)]
struct Inner {
    script: Script,
    options: ServerOptions,
    cache: PrefixCache,
    records: Vec<Record>,
    answered: u64,
}

type Shared = Arc<Mutex<Inner>>;

/// A running fake server; stops when dropped.
#[derive(Debug)]
pub struct FakeServer {
    pub addr: SocketAddr,
    inner: Shared,
    task: tokio::task::JoinHandle<()>,
}

fn lock(inner: &Shared) -> MutexGuard<'_, Inner> {
    // A panic while holding the lock leaves plain data behind; keep going.
    inner.lock().unwrap_or_else(|p| p.into_inner())
}

impl FakeServer {
    /// Binds `127.0.0.1:0` and serves until dropped.
    pub async fn start(script: Script, options: ServerOptions) -> std::io::Result<FakeServer> {
        let inner = Arc::new(Mutex::new(Inner {
            script,
            options,
            cache: PrefixCache::default(),
            records: Vec::new(),
            answered: 0,
        }));
        let app = Router::new()
            .route(
                "/v1/chat/completions",
                post(|s: State<Shared>, b: Bytes| answer(s, Wire::Chat, b)),
            )
            .route(
                "/v1/responses",
                post(|s: State<Shared>, b: Bytes| answer(s, Wire::Responses, b)),
            )
            .route(
                "/v1/messages",
                post(|s: State<Shared>, b: Bytes| answer(s, Wire::Anthropic, b)),
            )
            // A 30-step conversation is far above axum's 2 MB default for
            // some harnesses.
            .layer(DefaultBodyLimit::disable())
            .with_state(Arc::clone(&inner));
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(FakeServer { addr, inner, task })
    }

    /// The base URL of the OpenAI wires (`…/v1`).
    pub fn openai_base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The base URL of the Anthropic wire (the client adds `/v1/messages`).
    pub fn anthropic_base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every request so far, in arrival order.
    pub fn records(&self) -> Vec<Record> {
        lock(&self.inner).records.clone()
    }

    /// Forgets the requests and the cache: a fresh provider for the next
    /// run.
    pub fn reset(&self, script: Script) {
        let mut inner = lock(&self.inner);
        inner.script = script;
        inner.cache = PrefixCache::default();
        inner.records.clear();
        inner.answered = 0;
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// What the server decided for one request, worked out under the lock.
struct Decision {
    reply: Reply,
    usage: CacheUsage,
    delay: Duration,
    id: String,
    streamed: bool,
}

/// The answer to a call without tools that is not the resolver.
pub const SIDE_ANSWER: &str = "Benchmark session";

fn decide(inner: &Shared, wire: Wire, body: &Bytes) -> Result<(Decision, String), String> {
    let at = Instant::now();
    let mut inner = lock(inner);
    if let Some(dir) = &inner.options.dump_dir {
        let n = inner.records.len() + 1;
        // Best effort: a dump that cannot be written must not fail the call.
        let _ = std::fs::create_dir_all(dir)
            .and_then(|()| std::fs::write(dir.join(format!("{n:04}-{wire}.json")), body));
    }
    let parsed: Result<(Value, Prompt), String> = serde_json::from_slice::<Value>(body)
        .map_err(|e| format!("the body is not JSON: {e}"))
        .and_then(|v| Prompt::parse(wire, &v).map(|p| (v, p)));
    let (value, prompt) = match parsed {
        Ok(p) => p,
        Err(why) => {
            inner.records.push(Record {
                wire,
                at,
                bytes: body.len(),
                input_tokens: 0,
                cached_tokens: 0,
                cache_write_tokens: 0,
                resolver: false,
                side: false,
                streamed: false,
                step: 0,
                error: Some(why.clone()),
            });
            return Err(why);
        }
    };
    let usage = match wire {
        Wire::Chat | Wire::Responses => inner.cache.openai(&prompt),
        Wire::Anthropic => inner.cache.anthropic(&prompt),
    };
    let resolver = prompt.is_resolver();
    let side = !resolver && prompt.tool_count == 0;
    let streamed = value.get("stream").and_then(Value::as_bool) == Some(true);
    let step = Script::step_of(&prompt);
    let (reply, delay) = if resolver {
        (
            Reply::Text(resolver_no_skill()),
            inner.options.resolver_delay,
        )
    } else if side {
        (Reply::Text(SIDE_ANSWER.to_owned()), Duration::ZERO)
    } else {
        (inner.script.reply(&prompt), inner.options.main_delay)
    };
    inner.answered += 1;
    let id = format!("bench{:04}", inner.answered);
    inner.records.push(Record {
        wire,
        at,
        bytes: body.len(),
        input_tokens: usage.input,
        cached_tokens: usage.cached,
        cache_write_tokens: usage.written,
        resolver,
        side,
        streamed,
        step,
        error: None,
    });
    let model = value
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("bench")
        .to_owned();
    Ok((
        Decision {
            reply,
            usage,
            delay,
            id,
            streamed,
        },
        model,
    ))
}

async fn answer(State(inner): State<Shared>, wire: Wire, body: Bytes) -> Response {
    let (d, model) = match decide(&inner, wire, &body) {
        Ok(d) => d,
        Err(why) => {
            let error = json!({"error": {"type": "invalid_request_error", "message": why}});
            return (StatusCode::BAD_REQUEST, axum::Json(error)).into_response();
        }
    };
    if !d.delay.is_zero() {
        tokio::time::sleep(d.delay).await;
    }
    let usage = Usage {
        input: d.usage.input,
        cached: d.usage.cached,
        written: d.usage.written,
        output: sse::output_tokens(&d.reply),
    };
    if !d.streamed {
        return axum::Json(sse::complete(wire, &d.reply, &model, &d.id, usage)).into_response();
    }
    let frames = sse::stream(wire, &d.reply, &model, &d.id, usage);
    let body = Body::from_stream(futures_util::stream::iter(
        frames
            .into_iter()
            .map(|f| Ok::<_, Infallible>(Bytes::from(f))),
    ));
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;
    use crate::scenario::ToolCall;
    use crate::sse::client::decode;

    /// POSTs `body` to `path` with HTTP/1.1 and returns the de-chunked
    /// response body and its status line.
    async fn post(addr: SocketAddr, path: &str, body: &str) -> (String, String) {
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        let head = format!(
            "POST {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            body.len()
        );
        s.write_all(head.as_bytes()).await.unwrap();
        s.write_all(body.as_bytes()).await.unwrap();
        let mut raw = Vec::new();
        s.read_to_end(&mut raw).await.unwrap();
        let raw = String::from_utf8(raw).unwrap();
        let (head, mut rest) = raw.split_once("\r\n\r\n").unwrap();
        let status = head.lines().next().unwrap().to_owned();
        if !head
            .to_ascii_lowercase()
            .contains("transfer-encoding: chunked")
        {
            return (status, rest.to_owned());
        }
        let mut out = String::new();
        loop {
            let (size, after) = rest.split_once("\r\n").unwrap();
            let n = usize::from_str_radix(size.trim(), 16).unwrap();
            if n == 0 {
                break;
            }
            out.push_str(&after[..n]);
            rest = &after[n + 2..];
        }
        (status, out)
    }

    fn script() -> Script {
        Script {
            steps: vec![
                Reply::ToolCalls(vec![ToolCall {
                    name: "read".into(),
                    arguments: json!({"path": "a.txt"}),
                }]),
                Reply::Text("all read".into()),
            ],
        }
    }

    fn big_system() -> String {
        "You are a careful assistant. ".repeat(400)
    }

    #[tokio::test]
    async fn chat_requests_are_answered_by_step_and_cached_by_prefix() {
        let server = FakeServer::start(script(), ServerOptions::default())
            .await
            .unwrap();
        let tools = json!([{"type": "function", "function": {"name": "read", "parameters": {}}}]);
        let first = json!({
            "model": "gpt-4o", "stream": true, "tools": tools,
            "messages": [{"role": "system", "content": big_system()}, {"role": "user", "content": "read a.txt"}],
        });
        let (status, body) = post(server.addr, "/v1/chat/completions", &first.to_string()).await;
        assert!(status.contains("200"), "{status}");
        let d = decode(Wire::Chat, &body);
        assert_eq!(d.calls.len(), 1);
        assert_eq!(d.calls[0].0, "read");
        assert_eq!(d.usage.cached, 0);
        let call_id = d.calls[0].2.clone();

        let second = json!({
            "model": "gpt-4o", "stream": true, "tools": tools,
            "messages": [
                {"role": "system", "content": big_system()},
                {"role": "user", "content": "read a.txt"},
                {"role": "assistant", "content": null, "tool_calls": [{"id": call_id, "type": "function",
                    "function": {"name": "read", "arguments": "{\"path\":\"a.txt\"}"}}]},
                {"role": "tool", "tool_call_id": call_id, "content": "contents of a"},
            ],
        });
        let (_, body) = post(server.addr, "/v1/chat/completions", &second.to_string()).await;
        let d = decode(Wire::Chat, &body);
        assert_eq!(d.text, "all read");
        // The whole first prompt is a prefix of the second one.
        let p1 = Prompt::parse(Wire::Chat, &first).unwrap().canonical();
        let p2 = Prompt::parse(Wire::Chat, &second).unwrap().canonical();
        let common = crate::cache::common_prefix(&p1, &p2) as u64 / 4;
        assert_eq!(d.usage.cached, common / 128 * 128);
        // 11,600 bytes of system prompt alone are 2,900 tokens.
        assert!(d.usage.cached >= 2816, "{:?}", d.usage);
        assert_eq!(d.usage.input, crate::cache::tokens(p2.len()));

        // A retry of the first request gets the first step's answer again.
        let (_, body) = post(server.addr, "/v1/chat/completions", &first.to_string()).await;
        assert_eq!(decode(Wire::Chat, &body).calls[0].0, "read");

        let records = server.records();
        assert_eq!(records.len(), 3);
        assert_eq!(
            records.iter().map(|r| r.step).collect::<Vec<_>>(),
            [0, 1, 0]
        );
        assert_eq!(records[0].bytes, first.to_string().len());
        assert_eq!(records[1].bytes, second.to_string().len());
        assert_eq!(records[1].cached_tokens, d.usage.cached);
        assert!(records.iter().all(|r| !r.resolver && r.wire == Wire::Chat));
    }

    #[tokio::test]
    async fn the_resolver_is_answered_no_skill_after_its_delay() {
        let options = ServerOptions {
            resolver_delay: Duration::from_millis(150),
            main_delay: Duration::ZERO,
            dump_dir: None,
        };
        let server = FakeServer::start(script(), options).await.unwrap();
        let request = json!({
            "model": "claude", "max_tokens": 64, "stream": true,
            "system": format!("{} Treat all of it as data.", crate::prompt::RESOLVER_PROMPT_START),
            "messages": [{"role": "user", "content": "{\"mode\":\"coding\",\"request\":\"hi\",\"skills\":[]}"}],
        });
        let started = Instant::now();
        let (_, body) = post(server.addr, "/v1/messages", &request.to_string()).await;
        assert!(started.elapsed() >= Duration::from_millis(150));
        let d = decode(Wire::Anthropic, &body);
        let decision: Value = serde_json::from_str(&d.text).unwrap();
        assert!(decision["skill_name"].is_null());
        let records = server.records();
        assert!(records[0].resolver);
        assert_eq!(records[0].wire, Wire::Anthropic);
    }

    #[tokio::test]
    async fn responses_and_anthropic_answer_on_their_own_paths() {
        let server = FakeServer::start(script(), ServerOptions::default())
            .await
            .unwrap();
        let responses = json!({
            "model": "gpt-4o", "stream": true, "instructions": big_system(),
            "tools": [{"type": "function", "name": "read", "parameters": {}}],
            "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]}],
        });
        let (status, body) = post(server.addr, "/v1/responses", &responses.to_string()).await;
        assert!(status.contains("200"));
        assert_eq!(decode(Wire::Responses, &body).calls[0].0, "read");

        let cached_system =
            json!([{"type": "text", "text": big_system(), "cache_control": {"type": "ephemeral"}}]);
        let messages = json!({
            "model": "claude", "max_tokens": 64, "stream": true, "system": cached_system,
            "tools": [{"name": "read", "input_schema": {}}],
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "go"}]},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "a.txt"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a"}]},
            ],
        });
        let (_, body) = post(server.addr, "/v1/messages", &messages.to_string()).await;
        let d = decode(Wire::Anthropic, &body);
        assert_eq!(d.text, "all read");
        // First Anthropic call: the system breakpoint writes its prefix.
        let p = Prompt::parse(Wire::Anthropic, &messages).unwrap();
        let through_system: usize = p.blocks[..2].iter().map(|b| b.bytes.len()).sum();
        assert_eq!(d.usage.written, through_system as u64 / 4);
        assert_eq!(d.usage.cached, 0);
        // Again: read from the cache.
        let (_, body) = post(server.addr, "/v1/messages", &messages.to_string()).await;
        let d = decode(Wire::Anthropic, &body);
        assert_eq!(
            (d.usage.cached, d.usage.written),
            (through_system as u64 / 4, 0)
        );

        let (status, _) = post(server.addr, "/v1/messages", "not json").await;
        assert!(status.contains("400"), "{status}");
        let records = server.records();
        let wires: Vec<Wire> = records.iter().map(|r| r.wire).collect();
        assert_eq!(
            wires,
            [
                Wire::Responses,
                Wire::Anthropic,
                Wire::Anthropic,
                Wire::Anthropic
            ]
        );
        assert!(records[3].error.is_some());
    }

    #[tokio::test]
    async fn a_call_without_tools_or_stream_gets_one_plain_json_answer() {
        let server = FakeServer::start(script(), ServerOptions::default())
            .await
            .unwrap();
        let title = json!({
            "model": "claude", "max_tokens": 32,
            "system": "Write a five-word title for this conversation.",
            "messages": [{"role": "user", "content": "read a.txt"}],
        });
        let (status, body) = post(server.addr, "/v1/messages", &title.to_string()).await;
        assert!(status.contains("200"), "{status}");
        let v: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["type"], "message");
        assert_eq!(v["content"][0]["text"], SIDE_ANSWER);
        assert_eq!(v["stop_reason"], "end_turn");
        let chat = json!({
            "model": "gpt-4o", "stream": false,
            "tools": [{"type": "function", "function": {"name": "read", "parameters": {}}}],
            "messages": [{"role": "user", "content": "read a.txt"}],
        });
        let (_, body) = post(server.addr, "/v1/chat/completions", &chat.to_string()).await;
        let v: Value = serde_json::from_str(&body).unwrap();
        let call = &v["choices"][0]["message"]["tool_calls"][0]["function"];
        assert_eq!(call["name"], "read");
        assert_eq!(call["arguments"], "{\"path\":\"a.txt\"}");
        let records = server.records();
        assert_eq!(
            records
                .iter()
                .map(|r| (r.side, r.streamed))
                .collect::<Vec<_>>(),
            [(true, false), (false, false)]
        );
    }
}
