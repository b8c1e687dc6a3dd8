//! The HTTP side shared by the remote providers: one client builder, one
//! way to send a streaming request and classify a failed response, and one
//! SSE-to-events driver that each wire protocol plugs a decoder into.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use futures_util::{StreamExt, TryFutureExt};
use reqwest::header::HeaderMap;
use serde_json::Value;
use sse_stream::{Sse, SseStream};

use crate::bounds::CallBounds;
use crate::error::{ProviderError, SetupError, TimeoutPhase};
use crate::event::{StopReason, StreamEvent};
use crate::provider::{EventStream, ProviderOptions, error_stream};
use crate::retry::{AnswerWindow, with_retries};

/// Redirects are rare for model APIs and a long chain means a misconfigured
/// base URL; a few are followed so `http` → `https` upgrades still work.
const MAX_REDIRECTS: usize = 5;
/// How much of an error body is kept for the message.
const ERROR_BODY_LIMIT: usize = 16 * 1024;

/// Builds every reqwest client of this crate. reqwest is compiled without a
/// rustls crypto provider of its own, so the process's one provider is
/// installed (once, by `evoflux_core::tls`) before the first client exists.
pub fn http_client() -> Result<reqwest::Client, SetupError> {
    bounded_client(&CallBounds::default())
}

/// A client that connects within `bounds.connect`. The other bounds are
/// applied per call ([`stream_sse`]), where each can be named.
pub(crate) fn bounded_client(bounds: &CallBounds) -> Result<reqwest::Client, SetupError> {
    evoflux_core::tls::install_crypto_provider();
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::limited(MAX_REDIRECTS))
        .connect_timeout(bounds.connect)
        .build()
        .map_err(|e| SetupError::HttpClient {
            detail: error_chain(&e),
        })
}

/// `base` joined with `path`, without doubling the slash.
/// The API key from the environment variable named in config, read per
/// call so a rotated key is picked up; a missing or blank one fails before
/// anything is sent, naming the variable to set.
pub(crate) fn api_key(
    provider: &str,
    var: Option<&str>,
    env: &crate::provider::EnvLookup,
) -> Result<Option<String>, ProviderError> {
    let Some(var) = var else { return Ok(None) };
    match env.get(var).filter(|k| !k.trim().is_empty()) {
        Some(key) => Ok(Some(key)),
        None => Err(ProviderError::Auth {
            provider: provider.to_owned(),
            env_var: Some(var.to_owned()),
            detail: format!("environment variable {var} is not set"),
        }),
    }
}

pub(crate) fn join_url(base: &str, path: &str) -> String {
    format!(
        "{}/{}",
        base.trim_end_matches('/'),
        path.trim_start_matches('/')
    )
}

/// An error and its sources on one line: reqwest's top-level message alone
/// ("error sending request") says nothing about the cause.
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

/// Who is talking, for error messages and classification.
#[derive(Debug, Clone)]
pub(crate) struct Endpoint {
    pub provider: String,
    pub url: String,
    pub api_key_env: Option<String>,
    pub bounds: CallBounds,
}

impl Endpoint {
    pub fn timeout(&self, phase: TimeoutPhase) -> ProviderError {
        let after = match phase {
            TimeoutPhase::Connect => self.bounds.connect,
            TimeoutPhase::FirstByte => self.bounds.first_byte,
            TimeoutPhase::Idle => self.bounds.idle,
            TimeoutPhase::Call => self.bounds.call,
        };
        ProviderError::Timeout {
            provider: self.provider.clone(),
            url: self.url.clone(),
            phase,
            after,
        }
    }

    /// A failed send: a connect timeout is named as one.
    fn send_failed(&self, e: &reqwest::Error) -> ProviderError {
        if e.is_connect() && e.is_timeout() {
            self.timeout(TimeoutPhase::Connect)
        } else {
            self.transport(error_chain(e))
        }
    }

    pub fn transport(&self, detail: String) -> ProviderError {
        ProviderError::Transport {
            provider: self.provider.clone(),
            url: self.url.clone(),
            detail,
        }
    }

    pub fn protocol(&self, detail: impl Into<String>) -> ProviderError {
        ProviderError::Protocol {
            provider: self.provider.clone(),
            detail: detail.into(),
        }
    }
}

/// The fields of an API error, wherever the wire format keeps them.
#[derive(Debug, Default, Clone)]
pub(crate) struct ApiError {
    pub status: Option<u16>,
    /// `error.type` (both OpenAI and Anthropic have one).
    pub kind: Option<String>,
    /// `error.code` (OpenAI).
    pub code: Option<String>,
    pub message: String,
    pub retry_after: Option<Duration>,
}

impl ApiError {
    /// Reads `{"error": {"type", "code", "message"}}` (OpenAI, and Anthropic
    /// inside its `{"type": "error", ...}` envelope), falling back to the
    /// raw text for servers that answer with plain text or HTML.
    pub fn from_body(status: Option<u16>, body: &str) -> ApiError {
        let parsed: Option<Value> = serde_json::from_str(body).ok();
        let err = parsed.as_ref().and_then(|v| v.get("error"));
        let field = |k: &str| {
            err.and_then(|e| e.get(k)).and_then(|v| match v {
                Value::String(s) => Some(s.clone()),
                Value::Number(n) => Some(n.to_string()),
                _ => None,
            })
        };
        let message = match (err, field("message")) {
            (_, Some(m)) => m,
            (Some(Value::String(s)), None) => s.clone(),
            _ => {
                let t = body.trim();
                if t.is_empty() {
                    "(empty response body)".to_owned()
                } else {
                    t.to_owned()
                }
            }
        };
        ApiError {
            status,
            kind: field("type"),
            code: field("code"),
            message,
            retry_after: None,
        }
    }

    fn mentions(&self, needles: &[&str]) -> bool {
        let hay = [
            self.kind.as_deref(),
            self.code.as_deref(),
            Some(self.message.as_str()),
        ];
        hay.into_iter().flatten().any(|h| {
            let h = h.to_ascii_lowercase();
            needles.iter().any(|n| h.contains(n))
        })
    }

    /// Maps the error to our taxonomy. Context overflows have no status of
    /// their own anywhere (OpenAI, Anthropic, vLLM and llama.cpp all answer
    /// 400 or 413), so they are recognized by their code or wording.
    pub fn classify(self, endpoint: &Endpoint) -> ProviderError {
        let provider = endpoint.provider.clone();
        let detail = match &self.code {
            Some(code) => format!("{} [{code}]", self.message),
            None => self.message.clone(),
        };
        let context = self.mentions(&[
            "context_length_exceeded",
            "context length",
            "context window",
            "context_window",
            "maximum context",
            "prompt is too long",
            "exceed_context_size",
            "exceeds the available context",
            "too many tokens",
            "request_too_large",
        ]);
        let may_be_context = matches!(self.status, None | Some(400 | 413 | 422));
        if context && may_be_context {
            return ProviderError::ContextExceeded { provider, detail };
        }
        let by_kind = self.kind.as_deref().map(str::to_ascii_lowercase);
        match (self.status, by_kind.as_deref()) {
            (Some(401 | 403), _)
            | (_, Some("authentication_error" | "permission_error" | "invalid_api_key")) => {
                ProviderError::Auth {
                    provider,
                    env_var: endpoint.api_key_env.clone(),
                    detail,
                }
            }
            (Some(429), _) | (_, Some("rate_limit_error" | "rate_limit_exceeded")) => {
                ProviderError::RateLimit {
                    provider,
                    retry_after: self.retry_after,
                    detail,
                }
            }
            (Some(s @ 500..=599), _) => ProviderError::Server {
                provider,
                status: Some(s),
                detail,
            },
            (None, Some("overloaded_error" | "api_error" | "server_error")) => {
                ProviderError::Server {
                    provider,
                    status: None,
                    detail,
                }
            }
            (Some(408), _) => endpoint.transport(format!("request timed out: {detail}")),
            (Some(404), _) => ProviderError::BadRequest {
                provider,
                status: 404,
                detail: format!("{detail} (check the model name and base_url)"),
            },
            (Some(s), _) => ProviderError::BadRequest {
                provider,
                status: s,
                detail,
            },
            (None, _) => ProviderError::Protocol {
                provider,
                detail: format!("error event: {detail}"),
            },
        }
    }
}

/// `retry-after-ms` (OpenAI) or `retry-after` in seconds. An HTTP-date
/// `retry-after` is ignored and the backoff applies instead.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let get = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = get("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        return Duration::try_from_secs_f64(ms / 1000.0).ok();
    }
    get("retry-after")
        .and_then(|v| v.parse::<f64>().ok())
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
}

/// What every SSE provider holds: where it talks to, with which client,
/// within which bounds. Each wire adds only its headers, its key scheme,
/// its decoder and its body ([`SseRequest`]).
#[derive(Debug)]
pub(crate) struct SseClient {
    endpoint: Endpoint,
    context_window: Option<u64>,
    media: crate::media::MediaSupport,
    client: reqwest::Client,
    options: ProviderOptions,
}

impl SseClient {
    /// The client of provider `name` posting to `path` under `base_url`.
    pub fn new(
        name: &str,
        base_url: &str,
        path: &str,
        config: &evoflux_core::config::ProviderConfig,
        options: &ProviderOptions,
    ) -> Result<Self, crate::error::SetupError> {
        let bounds = options
            .bounds
            .unwrap_or_else(|| CallBounds::from_limits(&config.limits));
        Ok(SseClient {
            endpoint: Endpoint {
                provider: name.to_owned(),
                url: join_url(base_url, path),
                api_key_env: config.api_key_env.clone(),
                bounds,
            },
            context_window: config.context_window,
            media: crate::media::MediaSupport::of(config),
            client: bounded_client(&bounds)?,
            options: options.clone(),
        })
    }

    pub fn name(&self) -> &str {
        &self.endpoint.provider
    }

    pub fn context_window(&self) -> Option<u64> {
        self.context_window
    }

    /// `request` with what the model cannot take replaced by placeholders
    /// ([`crate::media::fit`]); every wire renders what is left.
    pub fn fit_media(&self, request: crate::message::Request) -> crate::message::Request {
        crate::media::fit(request, self.media)
    }

    /// One streamed call: the API key read per call (so a rotated key is
    /// picked up, and a missing one fails before anything is sent), then
    /// retried attempts of one streaming `POST` of `body()` whose response
    /// is opened by [`open_sse`], all of them within the call's answer
    /// window ([`CallBounds::answer_within`]) until the reply begins and
    /// within its deadline to the end.
    pub fn stream<D>(&self, wire: SseWire<D>, body: impl FnOnce() -> Value) -> EventStream
    where
        D: SseDecoder + Send + 'static,
    {
        let SseWire {
            headers,
            auth,
            decoder,
        } = wire;
        let endpoint = self.endpoint.clone();
        let key = match api_key(
            &endpoint.provider,
            endpoint.api_key_env.as_deref(),
            &self.options.env,
        ) {
            Ok(key) => key,
            Err(e) => return error_stream(e),
        };
        let body = Arc::new(body());
        let client = self.client.clone();
        let bounded = endpoint.clone();
        let window = AnswerWindow::new(endpoint.bounds.answer_within());
        let answer = window.clone();
        let attempts = with_retries(
            self.options.retry,
            self.options.sleeper.clone(),
            window.clone(),
            move || {
                let mut builder = client.post(&endpoint.url);
                for (name, value) in headers {
                    builder = builder.header(*name, *value);
                }
                builder = builder
                    .header(reqwest::header::ACCEPT, "text/event-stream")
                    .json(body.as_ref());
                if let Some(key) = &key {
                    builder = auth(builder, key);
                }
                let decoder = decoder(endpoint.clone());
                let opened = open_sse(endpoint.clone(), builder, answer.deadline(), decoder);
                Box::pin(opened.try_flatten_stream())
            },
        );
        within_deadline(bounded, window, attempts)
    }
}

/// What one wire adds to a call: headers, key scheme, decoder.
pub(crate) struct SseWire<D> {
    /// Sent after the URL and before `Accept`, in this order.
    pub headers: &'static [(&'static str, &'static str)],
    /// Adds the API key, when there is one, to the request.
    pub auth: fn(reqwest::RequestBuilder, &str) -> reqwest::RequestBuilder,
    pub decoder: fn(Endpoint) -> D,
}

/// Ends `stream` with [`TimeoutPhase::Call`] when the call's deadline
/// (counted from the call's start, which `window` keeps) passes.
fn within_deadline(endpoint: Endpoint, window: AnswerWindow, stream: EventStream) -> EventStream {
    struct State {
        endpoint: Endpoint,
        window: AnswerWindow,
        stream: EventStream,
        done: bool,
    }
    let state = State {
        endpoint,
        window,
        stream,
        done: false,
    };
    Box::pin(futures_util::stream::unfold(state, |mut s| async move {
        if s.done {
            return None;
        }
        let deadline = s.window.after_start(s.endpoint.bounds.call);
        match tokio::time::timeout_at(deadline, s.stream.next()).await {
            Ok(Some(item)) => Some((item, s)),
            Ok(None) => None,
            Err(_) => {
                s.done = true;
                let e = s.endpoint.timeout(TimeoutPhase::Call);
                Some((Err(e), s))
            }
        }
    }))
}

/// Why the body of a reply stopped: a bound, or the connection.
#[derive(Debug, thiserror::Error)]
enum BodyStop {
    #[error("no data within the idle timeout")]
    Idle,
    #[error("the reply passed its size limit")]
    TooLarge,
    #[error("{0}")]
    Http(String),
}

/// The reply's bytes, each piece within the idle bound and all of them
/// within the size bound.
fn bounded_body(
    response: reqwest::Response,
    bounds: CallBounds,
) -> impl futures_util::Stream<Item = Result<bytes::Bytes, BodyStop>> + Send + Unpin {
    let state = (response.bytes_stream(), 0u64, false);
    Box::pin(futures_util::stream::unfold(
        state,
        move |(mut body, mut read, done)| async move {
            if done {
                return None;
            }
            match tokio::time::timeout(bounds.idle, body.next()).await {
                Err(_) => Some((Err(BodyStop::Idle), (body, read, true))),
                Ok(None) => None,
                Ok(Some(Err(e))) => {
                    Some((Err(BodyStop::Http(error_chain(&e))), (body, read, true)))
                }
                Ok(Some(Ok(chunk))) => {
                    read = read.saturating_add(chunk.len() as u64);
                    if read > bounds.max_response_bytes {
                        Some((Err(BodyStop::TooLarge), (body, read, true)))
                    } else {
                        Some((Ok(chunk), (body, read, false)))
                    }
                }
            }
        },
    ))
}

/// Sends `request` and returns the SSE body as a stream of our events, or
/// the classified error for a failed response. The response must begin
/// by `answer_by`, the call's answer window shared by all its attempts.
pub(crate) async fn open_sse<D>(
    endpoint: Endpoint,
    request: reqwest::RequestBuilder,
    answer_by: tokio::time::Instant,
    decoder: D,
) -> Result<EventStream, ProviderError>
where
    D: SseDecoder + Send + 'static,
{
    let response = match tokio::time::timeout_at(answer_by, request.send()).await {
        Err(_) => return Err(endpoint.timeout(TimeoutPhase::FirstByte)),
        Ok(sent) => sent.map_err(|e| endpoint.send_failed(&e))?,
    };
    let status = response.status();
    if !status.is_success() {
        let after = retry_after(response.headers());
        let body = read_limited(response).await;
        let mut api = ApiError::from_body(Some(status.as_u16()), &body);
        api.retry_after = after;
        return Err(api.classify(&endpoint));
    }
    // A missing type is let through (some local servers send none); any
    // other than an event stream is a wrong URL, not a broken stream.
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    if let Some(ct) = content_type
        && !ct
            .trim_start()
            .to_ascii_lowercase()
            .starts_with("text/event-stream")
    {
        let body = read_limited(response).await;
        let said = ApiError::from_body(None, &body).message;
        let excerpt: String = said.split_whitespace().collect::<Vec<_>>().join(" ");
        let excerpt = match excerpt.char_indices().nth(200) {
            Some((i, _)) => format!("{}…", &excerpt[..i]),
            None => excerpt,
        };
        return Err(ProviderError::NotEventStream {
            provider: endpoint.provider.clone(),
            content_type: ct,
            excerpt,
        });
    }
    let sse = SseStream::from_bytes_stream(bounded_body(response, endpoint.bounds));
    Ok(decode(endpoint, sse, decoder))
}

async fn read_limited(mut response: reqwest::Response) -> String {
    let mut body = Vec::new();
    while let Ok(Some(chunk)) = response.chunk().await {
        body.extend_from_slice(&chunk);
        if body.len() >= ERROR_BODY_LIMIT {
            body.truncate(ERROR_BODY_LIMIT);
            break;
        }
    }
    String::from_utf8_lossy(&body).into_owned()
}

/// One wire protocol's view of an SSE stream.
pub(crate) trait SseDecoder {
    /// Handles one SSE event, pushing any resulting events.
    fn event(&mut self, sse: Sse, out: &mut VecDeque<StreamEvent>) -> Result<(), ProviderError>;
    /// The byte stream ended; pushes the tail or fails if it ended early.
    fn end(&mut self, out: &mut VecDeque<StreamEvent>) -> Result<(), ProviderError>;
}

struct DecodeState<S, D> {
    endpoint: Endpoint,
    sse: S,
    decoder: D,
    queue: VecDeque<StreamEvent>,
    finished: bool,
    /// Whether any SSE event arrived: a body that ends before the first
    /// is a connection that gave nothing, not a reply cut short.
    heard: bool,
    /// Whether the reply had something to show or run: text that is not
    /// blank, or a tool call.
    answered: bool,
}

/// Drives `decoder` over `sse`. The stream ends right after
/// [`StreamEvent::Done`] or the first error.
///
/// Two rules hold for every wire here, whatever its decoder says. A body
/// that ends before its first event is a [`ProviderError::Transport`]
/// (retried like any before anything was shown): a proxy or a server that
/// dropped the request answers that way. And a reply that stops with no
/// text and no tool call is a [`ProviderError::EmptyReply`], not an answer:
/// a turn that ended on nothing would look like a hang to the user.
pub(crate) fn decode<S, D>(endpoint: Endpoint, sse: S, decoder: D) -> EventStream
where
    S: futures_util::Stream<Item = Result<Sse, sse_stream::Error>> + Send + Unpin + 'static,
    D: SseDecoder + Send + 'static,
{
    let state = DecodeState {
        endpoint,
        sse,
        decoder,
        queue: VecDeque::new(),
        finished: false,
        heard: false,
        answered: false,
    };
    Box::pin(futures_util::stream::unfold(state, |mut s| async move {
        loop {
            if let Some(event) = s.queue.pop_front() {
                match &event {
                    StreamEvent::TextDelta { text } => s.answered |= !text.trim().is_empty(),
                    StreamEvent::ToolCall { .. } | StreamEvent::InvalidToolCall { .. } => {
                        s.answered = true;
                    }
                    // A provider that paused its own tools' loop goes on in
                    // the next call; what it did so far is in its items.
                    StreamEvent::Stop { reason }
                        if !s.answered && *reason != StopReason::Paused =>
                    {
                        s.finished = true;
                        s.queue.clear();
                        let e = ProviderError::EmptyReply {
                            provider: s.endpoint.provider.clone(),
                            stop: *reason,
                        };
                        return Some((Err(e), s));
                    }
                    StreamEvent::Done => {
                        s.finished = true;
                        s.queue.clear();
                    }
                    StreamEvent::ToolCallDelta { .. }
                    | StreamEvent::ProviderItem { .. }
                    | StreamEvent::Usage { .. }
                    | StreamEvent::Stop { .. } => {}
                }
                return Some((Ok(event), s));
            }
            if s.finished {
                return None;
            }
            let step = match s.sse.next().await {
                Some(Ok(sse)) => {
                    s.heard = true;
                    s.decoder.event(sse, &mut s.queue)
                }
                Some(Err(sse_stream::Error::Body(e))) => Err(match e.downcast_ref::<BodyStop>() {
                    Some(BodyStop::Idle) => s.endpoint.timeout(TimeoutPhase::Idle),
                    Some(BodyStop::TooLarge) => ProviderError::ResponseTooLarge {
                        provider: s.endpoint.provider.clone(),
                        limit: s.endpoint.bounds.max_response_bytes,
                    },
                    Some(BodyStop::Http(detail)) => s.endpoint.transport(detail.clone()),
                    None => s.endpoint.transport(error_chain(e.as_ref())),
                }),
                Some(Err(e)) => Err(s.endpoint.protocol(format!("malformed SSE: {e}"))),
                None if !s.heard => {
                    s.finished = true;
                    Err(s.endpoint.transport(
                        "the server accepted the request but closed the event stream without \
                         sending a single event"
                            .to_owned(),
                    ))
                }
                None => {
                    s.finished = true;
                    s.decoder.end(&mut s.queue)
                }
            };
            if let Err(e) = step {
                s.finished = true;
                s.queue.clear();
                return Some((Err(e), s));
            }
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ep() -> Endpoint {
        Endpoint {
            provider: "openai".into(),
            url: "http://x/chat/completions".into(),
            api_key_env: Some("OPENAI_API_KEY".into()),
            bounds: CallBounds::default(),
        }
    }

    #[test]
    fn classifies_statuses_and_bodies() {
        let c = |status: Option<u16>, body: &str| ApiError::from_body(status, body).classify(&ep());
        assert_eq!(c(Some(401), "{}").code(), "model/auth");
        assert_eq!(c(Some(429), "slow down").code(), "model/rate-limited");
        assert_eq!(c(Some(503), "<html>").code(), "model/server");
        assert_eq!(
            c(Some(422), "{\"error\":{\"message\":\"bad\"}}").code(),
            "model/bad-request"
        );
        assert_eq!(c(Some(404), "no model").code(), "model/bad-request");
        assert_eq!(
            c(
                Some(400),
                r#"{"error":{"message":"This model's maximum context length is 8192 tokens","type":"invalid_request_error","code":"context_length_exceeded"}}"#
            )
            .code(),
            "model/context-exceeded"
        );
        assert_eq!(
            c(
                Some(400),
                r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#
            )
            .code(),
            "model/context-exceeded"
        );
        assert_eq!(
            c(
                None,
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
            )
            .code(),
            "model/server"
        );
        assert_eq!(
            c(None, r#"{"error":{"type":"weird","message":"?"}}"#).code(),
            "model/protocol"
        );
    }

    #[test]
    fn retry_after_headers() {
        let mut h = HeaderMap::new();
        assert_eq!(retry_after(&h), None);
        h.insert("retry-after", "2".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        h.insert("retry-after-ms", "1500".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_millis(1500)));
        let mut h = HeaderMap::new();
        h.insert(
            "retry-after",
            "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap(),
        );
        assert_eq!(retry_after(&h), None);
    }

    #[test]
    fn joins_urls() {
        assert_eq!(join_url("http://h/v1/", "/chat"), "http://h/v1/chat");
        assert_eq!(join_url("http://h/v1", "chat"), "http://h/v1/chat");
    }
}
