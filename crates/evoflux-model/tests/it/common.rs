//! A fake model server: answers each request with the next scripted reply,
//! streaming the body in small chunks (split mid-line on purpose), and
//! records every request for assertions.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::Response;
use evoflux_core::config::{ProviderConfig, ProviderKind, WireApi};
use evoflux_model::{
    EnvLookup, EventStream, Provider, ProviderOptions, RetryPolicy, Sleeper, StreamEvent,
    provider_for,
};
use futures_util::StreamExt;
use serde_json::Value;

#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(&'static str, String)>,
    pub chunks: Vec<Bytes>,
}

impl Reply {
    /// A 200 SSE reply whose text is cut into `chunk`-byte pieces.
    pub fn sse(text: &str, chunk: usize) -> Reply {
        let chunks = text
            .as_bytes()
            .chunks(chunk)
            .map(Bytes::copy_from_slice)
            .collect();
        Reply {
            status: 200,
            headers: vec![("content-type", "text/event-stream".into())],
            chunks,
        }
    }

    pub fn error(status: u16, body: &str) -> Reply {
        Reply {
            status,
            headers: vec![("content-type", "application/json".into())],
            chunks: vec![Bytes::copy_from_slice(body.as_bytes())],
        }
    }

    pub fn header(mut self, name: &'static str, value: &str) -> Reply {
        self.headers.push((name, value.to_owned()));
        self
    }
}

#[derive(Debug, Clone)]
pub struct Recorded {
    pub path: String,
    pub headers: HeaderMap,
    pub body: Value,
}

#[derive(Default)]
struct Shared {
    replies: Mutex<VecDeque<Reply>>,
    requests: Mutex<Vec<Recorded>>,
}

pub struct FakeServer {
    pub base: String,
    shared: Arc<Shared>,
}

impl FakeServer {
    pub async fn start(replies: Vec<Reply>) -> FakeServer {
        let shared = Arc::new(Shared {
            replies: Mutex::new(replies.into()),
            requests: Mutex::default(),
        });
        let app = Router::new().fallback(handle).with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        FakeServer {
            base: format!("http://{addr}"),
            shared,
        }
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.requests.lock().unwrap().clone()
    }
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    shared.requests.lock().unwrap().push(Recorded {
        path: uri.path().to_owned(),
        headers,
        body,
    });
    let reply = shared.replies.lock().unwrap().pop_front();
    let Some(reply) = reply else {
        return Response::builder()
            .status(StatusCode::IM_A_TEAPOT)
            .body(Body::from("no reply scripted"))
            .unwrap();
    };
    // A short pause between chunks makes each one its own write, so the
    // client really sees the body arrive piece by piece.
    let stream = futures_util::stream::iter(reply.chunks).then(|chunk| async move {
        tokio::time::sleep(Duration::from_millis(1)).await;
        Ok::<_, Infallible>(chunk)
    });
    let mut builder = Response::builder().status(reply.status);
    for (k, v) in reply.headers {
        builder = builder.header(k, v);
    }
    builder.body(Body::from_stream(stream)).unwrap()
}

/// `data: <json>` SSE framing (OpenAI).
pub fn data(json: &Value) -> String {
    format!("data: {json}\n\n")
}

/// `event: <name>` + `data: <json>` SSE framing (Anthropic).
pub fn event(json: &Value) -> String {
    let name = json["type"].as_str().unwrap();
    format!("event: {name}\ndata: {json}\n\n")
}

/// A sleeper that records the waits and returns at once.
pub fn recording_sleeper() -> (Sleeper, Arc<Mutex<Vec<Duration>>>) {
    let log = Arc::new(Mutex::new(Vec::new()));
    let l = log.clone();
    let sleeper = Sleeper::new(move |d| {
        l.lock().unwrap().push(d);
        async {}
    });
    (sleeper, log)
}

pub const KEY_VAR: &str = "EVOFLUX_TEST_MODEL_KEY";

pub struct Harness {
    pub server: FakeServer,
    pub provider: Box<dyn Provider>,
    pub sleeps: Arc<Mutex<Vec<Duration>>>,
}

/// A provider of `kind` pointed at a fresh fake server, with the key in a
/// fake environment (when `key` is set) and instant retries.
pub async fn harness(kind: ProviderKind, replies: Vec<Reply>, key: Option<&str>) -> Harness {
    harness_with(kind, None, replies, key).await
}

/// [`harness`] with an OpenAI wire protocol chosen (`wire_api`).
pub async fn harness_with(
    kind: ProviderKind,
    wire_api: Option<WireApi>,
    replies: Vec<Reply>,
    key: Option<&str>,
) -> Harness {
    let server = FakeServer::start(replies).await;
    let base_url = match kind {
        ProviderKind::Openai => format!("{}/v1", server.base),
        _ => server.base.clone(),
    };
    let config = ProviderConfig {
        wire_api,
        reasoning_effort: None,
        images: None,
        audio: None,
        kind,
        base_url: Some(base_url),
        api_key_env: Some(KEY_VAR.to_owned()),
        context_window: Some(32_000),
        model_path: None,
        limits: Default::default(),
    };
    let (sleeper, sleeps) = recording_sleeper();
    let options = ProviderOptions {
        env: EnvLookup::from_pairs(key.map(|k| (KEY_VAR, k))),
        retry: RetryPolicy {
            max_attempts: 4,
            base: Duration::from_millis(100),
            cap: Duration::from_secs(10),
        },
        sleeper,
        script: None,
        model_file: None,
        cache_dir: None,
        seed: None,
        bounds: None,
    };
    let provider = provider_for("fake", &config, &options).unwrap();
    Harness {
        server,
        provider,
        sleeps,
    }
}

/// All items of a stream.
pub async fn drain(stream: EventStream) -> Vec<Result<StreamEvent, evoflux_model::ProviderError>> {
    stream.collect().await
}

/// The events of a stream that must succeed.
pub async fn events(stream: EventStream) -> Vec<StreamEvent> {
    drain(stream)
        .await
        .into_iter()
        .map(|r| r.unwrap_or_else(|e| panic!("stream failed: {e}")))
        .collect()
}

/// The single error a failing stream ends with.
pub async fn failure(stream: EventStream) -> evoflux_model::ProviderError {
    let items = drain(stream).await;
    match items.last() {
        Some(Err(e)) => e.clone(),
        other => panic!("expected an error, got {other:?} in {items:?}"),
    }
}
