//! The per-call result bound of stdio servers, applied while the server's
//! stdout is read.
//!
//! Why here and not after decoding: a flooding server (a 64 MiB result)
//! would otherwise be read whole into memory, and rmcp drops a line longer
//! than its own cap without answering the request, so the call waited for
//! its whole timeout. [`BoundedLines`] passes stdout through line by line
//! (one line is one JSON-RPC message) and, the moment a line passes the
//! bound, ends it and puts in its place an error response to the same
//! request id, which the call reads as `mcp/result-too-large`
//! ([`crate::McpError::ResultTooLarge`]). The rest of the line is skipped
//! without being kept.
//!
//! The request id is found by a small scanner of the line's top level
//! (depth, strings and escapes only; no value is built). A server that
//! writes `id` before `result` (rmcp, the Python SDK) is answered as soon
//! as the bound is passed; one that writes it after (the TypeScript SDK
//! writes `{"result":…,"jsonrpc":"2.0","id":…}`) is answered when the
//! skipped line ends. An oversized request or notification from the server
//! is dropped as rmcp drops it, never turned into a response.
//!
//! Streamable HTTP: rmcp bounds a JSON body and each SSE event itself (set
//! to the same bound) and then fails the request as a closed stream;
//! [`BoundedHttp`] notes which request that was.
//!
//! Either way the request id goes into the connection's [`CutAnswers`],
//! and a call whose id is there reads its failure as
//! [`crate::McpError::ResultTooLarge`]: one rule for both transports.

use std::collections::{HashMap, HashSet};
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use futures_util::StreamExt;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, JsonRpcMessage, RequestId};
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use serde_json::{Value, json};
use tokio::io::{AsyncRead, ReadBuf};

/// The requests of one connection whose answer passed the bound, by the
/// id's JSON text. Shared by the transport, which fills it, and the calls,
/// which take their own id out of it.
#[derive(Debug, Clone, Default)]
pub(crate) struct CutAnswers(Arc<Mutex<HashSet<String>>>);

impl CutAnswers {
    fn insert(&self, id: &Value) {
        if let Ok(mut ids) = self.0.lock() {
            ids.insert(id.to_string());
        }
    }

    fn insert_request(&self, id: &RequestId) {
        if let Ok(id) = serde_json::to_value(id) {
            self.insert(&id);
        }
    }

    /// Whether the answer to `id` was cut (and forgets it).
    pub(crate) fn take(&self, id: &RequestId) -> bool {
        let Ok(key) = serde_json::to_value(id) else {
            return false;
        };
        self.0
            .lock()
            .map(|mut ids| ids.remove(&key.to_string()))
            .unwrap_or(false)
    }
}

/// The JSON-RPC error code of the response that replaces an oversized
/// result (in the range JSON-RPC leaves to implementations). It only wakes
/// the call, which reads its failure from [`CutAnswers`].
const RESULT_TOO_LARGE_RPC_CODE: i32 = -32_099;
/// Named in that response's `data`, for logs.
const RESULT_TOO_LARGE_MARKER: &str = "evoflux/result-too-large";
/// Longest request id kept (ids are numbers or short strings).
const MAX_ID_BYTES: usize = 256;
/// Longest top-level key compared (`result`, `method`, …).
const MAX_KEY_BYTES: usize = 16;
/// Bytes read from the server per poll.
const CHUNK: usize = 64 * 1024;

/// Which top-level value of the message the scanner is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Member {
    #[default]
    None,
    Id,
    Other,
}

/// Follows one JSON-RPC line's top level: its `id` (raw JSON) and whether
/// it is a response (`result`/`error`) or a request (`method`).
#[derive(Debug, Default)]
struct TopLevel {
    depth: u32,
    in_string: bool,
    escaped: bool,
    expect_key: bool,
    in_key: bool,
    key: Vec<u8>,
    member: Member,
    raw_id: Vec<u8>,
    id: Option<Vec<u8>>,
    response: bool,
    request: bool,
}

impl TopLevel {
    fn feed(&mut self, b: u8) {
        let at_top = self.depth == 1;
        if self.in_string {
            if self.escaped {
                self.escaped = false;
            } else if b == b'\\' {
                self.escaped = true;
            } else if b == b'"' {
                self.in_string = false;
                if self.in_key {
                    self.in_key = false;
                    return;
                }
            }
            if self.in_key {
                if self.key.len() <= MAX_KEY_BYTES {
                    self.key.push(b);
                }
            } else if at_top && self.member == Member::Id {
                self.push_id(b);
            }
            return;
        }
        match b {
            b'"' => {
                self.in_string = true;
                if at_top && self.expect_key {
                    self.in_key = true;
                    self.key.clear();
                } else if at_top && self.member == Member::Id {
                    self.push_id(b);
                }
            }
            b'{' | b'[' => {
                self.depth += 1;
                if self.depth == 1 {
                    self.expect_key = true;
                }
            }
            b'}' | b']' => {
                if at_top {
                    self.end_member();
                }
                self.depth = self.depth.saturating_sub(1);
            }
            b':' if at_top => {
                self.expect_key = false;
                self.member = match self.key.as_slice() {
                    b"id" => Member::Id,
                    b"result" | b"error" => {
                        self.response = true;
                        Member::Other
                    }
                    b"method" => {
                        self.request = true;
                        Member::Other
                    }
                    _ => Member::Other,
                };
                self.raw_id.clear();
            }
            b',' if at_top => {
                self.end_member();
                self.expect_key = true;
            }
            b' ' | b'\t' | b'\r' => {}
            _ if at_top && self.member == Member::Id => self.push_id(b),
            _ => {}
        }
    }

    fn push_id(&mut self, b: u8) {
        if self.raw_id.len() < MAX_ID_BYTES {
            self.raw_id.push(b);
        }
    }

    fn end_member(&mut self) {
        if self.member == Member::Id && !self.raw_id.is_empty() {
            self.id = Some(std::mem::take(&mut self.raw_id));
        }
        self.member = Member::None;
    }

    /// The id of a response whose id has been read whole.
    fn response_id(&self) -> Option<Value> {
        if !self.response || self.request {
            return None;
        }
        let raw = self.id.as_deref()?;
        match serde_json::from_slice::<Value>(raw).ok()? {
            v @ (Value::Number(_) | Value::String(_)) => Some(v),
            _ => None,
        }
    }
}

/// Where the current line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Line {
    /// Within the bound: passed through.
    Passing,
    /// Past the bound: skipped to its end; `answered` once its replacement
    /// error response was put out.
    Skipping { answered: bool },
}

/// A server's stdout with every line bounded to `limit` bytes (see the
/// module documentation).
pub(crate) struct BoundedLines<R> {
    inner: R,
    limit: usize,
    cut: CutAnswers,
    line_len: usize,
    line: Line,
    scan: TopLevel,
    /// Bytes ready for the reader, from `pos`.
    out: Vec<u8>,
    pos: usize,
    chunk: Box<[u8]>,
}

impl<R> BoundedLines<R> {
    pub(crate) fn new(inner: R, limit: usize, cut: CutAnswers) -> Self {
        BoundedLines {
            inner,
            limit,
            cut,
            line_len: 0,
            line: Line::Passing,
            scan: TopLevel::default(),
            out: Vec::new(),
            pos: 0,
            chunk: vec![0; CHUNK].into_boxed_slice(),
        }
    }

    fn end_line(&mut self) {
        self.line_len = 0;
        self.line = Line::Passing;
        self.scan = TopLevel::default();
    }

    /// Puts out the error response that replaces the oversized result, if
    /// the line is a response whose id is known. Returns whether it did.
    fn answer(&mut self) -> bool {
        let Some(id) = self.scan.response_id() else {
            return false;
        };
        self.cut.insert(&id);
        let response = json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {
                "code": RESULT_TOO_LARGE_RPC_CODE,
                "message": format!("the result is larger than {} bytes", self.limit),
                "data": {"marker": RESULT_TOO_LARGE_MARKER, "limit": self.limit},
            },
        });
        self.out.extend_from_slice(response.to_string().as_bytes());
        self.out.push(b'\n');
        true
    }

    /// Moves `n` bytes of `self.chunk` through the bound into `self.out`.
    fn process(&mut self, n: usize) {
        let mut i = 0;
        while i < n {
            match self.line {
                Line::Skipping { answered: true } => {
                    // Nothing more to learn from this line: jump to its end.
                    match self.chunk[i..n].iter().position(|&b| b == b'\n') {
                        Some(at) => {
                            i += at + 1;
                            self.end_line();
                        }
                        None => i = n,
                    }
                }
                Line::Skipping { answered: false } => {
                    let b = self.chunk[i];
                    i += 1;
                    if b == b'\n' {
                        if !self.answer() {
                            tracing::warn!(
                                limit = self.limit,
                                "an MCP server sent a message larger than the bound; dropped"
                            );
                        }
                        self.end_line();
                    } else {
                        self.scan.feed(b);
                    }
                }
                Line::Passing => {
                    let b = self.chunk[i];
                    i += 1;
                    if b == b'\n' {
                        self.out.push(b);
                        self.end_line();
                        continue;
                    }
                    self.line_len += 1;
                    self.scan.feed(b);
                    if self.line_len > self.limit {
                        // Ends the partial line for the decoder, which
                        // ignores it as unparsable, then answers the call.
                        self.out.push(b'\n');
                        let answered = self.answer();
                        self.line = Line::Skipping { answered };
                    } else {
                        self.out.push(b);
                    }
                }
            }
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for BoundedLines<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            if this.pos < this.out.len() {
                let n = buf.remaining().min(this.out.len() - this.pos);
                buf.put_slice(&this.out[this.pos..this.pos + n]);
                this.pos += n;
                if this.pos == this.out.len() {
                    this.out.clear();
                    this.pos = 0;
                }
                return Poll::Ready(Ok(()));
            }
            let mut chunk = ReadBuf::new(&mut this.chunk);
            match Pin::new(&mut this.inner).poll_read(cx, &mut chunk) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Ready(Ok(())) => {
                    let n = chunk.filled().len();
                    if n == 0 {
                        // End of output.
                        return Poll::Ready(Ok(()));
                    }
                    this.process(n);
                }
            }
        }
    }
}

/// A Streamable HTTP client that notes which requests rmcp failed because
/// their answer passed the bound (see the module documentation).
#[derive(Clone)]
pub(crate) struct BoundedHttp<C> {
    inner: C,
    cut: CutAnswers,
}

impl<C> BoundedHttp<C> {
    pub(crate) fn new(inner: C, cut: CutAnswers) -> Self {
        BoundedHttp { inner, cut }
    }
}

fn request_id(message: &ClientJsonRpcMessage) -> Option<RequestId> {
    match message {
        JsonRpcMessage::Request(r) => Some(r.id.clone()),
        _ => None,
    }
}

/// Whether an SSE stream error is rmcp's oversized-event error. Its type
/// is private to rmcp, so its text is read; rmcp is pinned to one version
/// and `bounds::a_flooding_http_call_ends_with_result_too_large` fails if
/// the text changes.
fn is_event_too_large(error: &impl std::fmt::Display) -> bool {
    error
        .to_string()
        .contains("SSE event exceeded the maximum size")
}

impl<C: StreamableHttpClient + Sync> StreamableHttpClient for BoundedHttp<C> {
    type Error = C::Error;

    fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<Output = Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>>>
    + Send
    + '_ {
        self.inner
            .post_message(uri, message, session_id, auth_header, custom_headers)
    }

    fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> impl Future<Output = Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>>>
    + Send
    + '_ {
        self.inner.post_message_with_max_sse_event_size(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            max_sse_event_size,
        )
    }

    fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> impl Future<Output = Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>>>
    + Send
    + '_ {
        let id = request_id(&message);
        let cut = self.cut.clone();
        let post = self.inner.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            limits,
        );
        async move {
            let Some(id) = id else {
                return post.await;
            };
            match post.await {
                Err(e @ StreamableHttpError::ResponseBodyTooLarge { .. }) => {
                    cut.insert_request(&id);
                    Err(e)
                }
                Ok(StreamableHttpPostResponse::Sse(stream, session)) => {
                    let stream = stream
                        .inspect(move |item| {
                            if let Err(e) = item
                                && is_event_too_large(e)
                            {
                                cut.insert_request(&id);
                            }
                        })
                        .boxed();
                    Ok(StreamableHttpPostResponse::Sse(stream, session))
                }
                other => other,
            }
        }
    }

    fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<Output = Result<(), StreamableHttpError<Self::Error>>> + Send + '_ {
        self.inner
            .delete_session(uri, session_id, auth_header, custom_headers)
    }

    fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<
        Output = Result<
            futures_util::stream::BoxStream<'static, Result<sse_stream::Sse, sse_stream::Error>>,
            StreamableHttpError<Self::Error>,
        >,
    > + Send
    + '_ {
        self.inner
            .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncReadExt;

    use super::*;

    async fn through(input: &[u8], limit: usize) -> String {
        let mut out = Vec::new();
        BoundedLines::new(input, limit, CutAnswers::default())
            .read_to_end(&mut out)
            .await
            .unwrap();
        String::from_utf8(out).unwrap()
    }

    fn lines(s: &str) -> Vec<Value> {
        s.lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    #[tokio::test]
    async fn lines_within_the_bound_pass_unchanged() {
        let input = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n{\"a\":\"b\\\"}\"}\n";
        assert_eq!(through(input.as_bytes(), 64).await, input);
    }

    #[tokio::test]
    async fn an_oversized_result_becomes_an_error_for_its_id() {
        for (id, raw) in [(json!(7), "7"), (json!("a\"b"), "\"a\\\"b\"")] {
            let big = "x".repeat(10_000);
            let input = format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":{raw},\"result\":{{\"t\":\"{big}\"}}}}\n{{\"jsonrpc\":\"2.0\",\"id\":8,\"result\":{{}}}}\n"
            );
            let out = through(input.as_bytes(), 100).await;
            assert!(out.len() < 600, "the oversized line was skipped: {out}");
            let msgs = lines(&out);
            assert_eq!(msgs.len(), 2, "{out}");
            assert_eq!(msgs[0]["id"], id);
            assert_eq!(msgs[0]["error"]["code"], RESULT_TOO_LARGE_RPC_CODE);
            assert_eq!(msgs[0]["error"]["data"]["marker"], RESULT_TOO_LARGE_MARKER);
            assert_eq!(msgs[1]["id"], 8);
        }
    }

    #[tokio::test]
    async fn an_id_after_the_result_is_answered_when_the_line_ends() {
        let big = "y".repeat(5_000);
        let input =
            format!("{{\"result\":{{\"id\":99,\"t\":\"{big}\"}},\"jsonrpc\":\"2.0\",\"id\":3}}\n");
        let msgs = lines(&through(input.as_bytes(), 100).await);
        assert_eq!(msgs.len(), 1);
        assert_eq!(msgs[0]["id"], 3, "the nested id is not the message's");
    }

    #[tokio::test]
    async fn an_oversized_request_is_dropped_not_answered() {
        let big = "z".repeat(5_000);
        let input = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"sampling/createMessage\",\"params\":\"{big}\"}}\n"
        );
        assert!(lines(&through(input.as_bytes(), 100).await).is_empty());
    }
}
