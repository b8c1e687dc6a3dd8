//! The user's view of a session's previews (the `preview` tool's dev
//! servers): their list, and a reverse proxy that serves each under the
//! session, so the web UI shows it beside the chat and a browser opens it
//! in a tab wherever the server is reached from.
//!
//! The proxied pages are loaded by an `<iframe>` and a new tab, which
//! cannot send the bearer token, so the proxy's path carries a key instead:
//! an HMAC of the session and preview ids under a secret this server drew
//! at start, handed out only by the token-checked list
//! (`GET /api/sessions/{id}/previews`). The key is as good as the token
//! for this one preview and nothing else. Every proxied response is
//! sandboxed by its `Content-Security-Policy` (a unique origin), so the
//! previewed app — code the agent wrote — cannot read the web UI's token
//! or call the API as the user.
//!
//! An app's root-absolute links (`/static/app.js`) are moved under the
//! proxy in the HTML and CSS it serves ([`links`], which says why).

use std::sync::Arc;

use axum::Json;
use axum::body::{Body, Bytes};
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use evoflux_core::ids::SessionId;
use evoflux_harness::{CommandStatus, PreviewInfo, ProcessRuntime};
use serde::Serialize;
use utoipa::ToSchema;

mod links;

use crate::api::sessions::session_id;
use crate::error::ApiError;
use crate::state::ServerState;

/// Hex characters of a proxy key (128 bits of the HMAC).
const KEY_CHARS: usize = 32;
/// The sandbox every proxied response runs in: scripts and forms work,
/// but the page has an origin of its own.
const SANDBOX: &str = "sandbox allow-scripts allow-forms allow-popups allow-modals allow-downloads";
/// Headers that describe one connection, never forwarded (RFC 9110 7.6.1).
const HOP_BY_HOP: [&str; 8] = [
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// The secret proxy keys are derived from, drawn once per server.
pub struct PreviewKeys {
    key: ring::hmac::Key,
}

impl std::fmt::Debug for PreviewKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PreviewKeys")
    }
}

impl Default for PreviewKeys {
    fn default() -> PreviewKeys {
        let secret: [u8; 32] = rand::random();
        PreviewKeys {
            key: ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &secret),
        }
    }
}

impl PreviewKeys {
    /// The key of `preview` of `session`.
    pub fn key(&self, session: SessionId, preview: &str) -> String {
        let tag = ring::hmac::sign(&self.key, format!("{session}/{preview}").as_bytes());
        let mut hex = hex::encode(tag.as_ref());
        hex.truncate(KEY_CHARS);
        hex
    }

    fn accepts(&self, session: SessionId, preview: &str, presented: &str) -> bool {
        crate::auth::same_secret(self.key(session, preview).as_bytes(), presented.as_bytes())
    }

    /// Where the proxy serves `preview` of `session`.
    pub fn proxy_path(&self, session: SessionId, preview: &str) -> String {
        path_with_key(session, preview, &self.key(session, preview))
    }
}

/// Where the proxy serves `preview` of `session`, whose key is `key`.
fn path_with_key(session: SessionId, preview: &str, key: &str) -> String {
    format!("/api/sessions/{session}/previews/{preview}/{key}/")
}

/// One preview of `GET /api/sessions/{id}/previews`.
#[derive(Debug, Serialize, ToSchema)]
pub struct PreviewItem {
    pub preview_id: String,
    /// The server's command line.
    pub command: String,
    /// `running`, or how it ended.
    pub status: String,
    /// Its loopback URL on the machine evoflux runs on, once it listens.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Where this server proxies it (no token needed), once it listens.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proxy_path: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub startup_ms: Option<u64>,
}

/// `GET /api/sessions/{id}/previews`.
#[derive(Debug, Serialize, ToSchema)]
pub struct PreviewList {
    pub items: Vec<PreviewItem>,
}

#[utoipa::path(get, path = "/api/sessions/{id}/previews", operation_id = "session_previews", tag = "sessions",
    params(("id" = String, Path, description = "The session id")),
    responses(
        (status = 200, description = "The session's previews (dev servers its `preview` tool runs), each with the `proxy_path` this server serves it under", body = PreviewList),
        (status = 400, description = "Not a session id", body = ApiError)
    ))]
pub async fn list(
    State(state): State<Arc<ServerState>>,
    Path(id): Path<String>,
) -> Result<Json<PreviewList>, ApiError> {
    let id = session_id(&id)?;
    let items = state
        .sessions
        .processes()
        .previews(id)
        .into_iter()
        .map(|p| item(&state.previews, id, p))
        .collect();
    Ok(Json(PreviewList { items }))
}

fn item(keys: &PreviewKeys, session: SessionId, p: PreviewInfo) -> PreviewItem {
    PreviewItem {
        url: p.url(),
        proxy_path: p.address.map(|_| keys.proxy_path(session, &p.preview_id)),
        status: p.status.as_str().to_owned(),
        startup_ms: p.startup_ms,
        preview_id: p.preview_id,
        command: p.command,
    }
}

/// The proxy's root without its slash: to the root, so the page's
/// relative links resolve under the proxy.
pub async fn root(Path((id, preview, key)): Path<(String, String, String)>) -> Response {
    Redirect::permanent(&format!("/api/sessions/{id}/previews/{preview}/{key}/")).into_response()
}

/// The page at the proxy's root.
pub async fn index(
    State(state): State<Arc<ServerState>>,
    Path((id, preview, key)): Path<(String, String, String)>,
    RawQuery(query): RawQuery,
    method: Method,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let target = Target {
        id,
        preview,
        key,
        path: String::new(),
        query,
    };
    forward(&state, target, method, headers, body).await
}

/// Any path below the proxy's root.
pub async fn path(
    State(state): State<Arc<ServerState>>,
    Path((id, preview, key, path)): Path<(String, String, String, String)>,
    RawQuery(query): RawQuery,
    method: Method,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let target = Target {
        id,
        preview,
        key,
        path,
        query,
    };
    forward(&state, target, method, headers, body).await
}

/// One proxied request's destination as its path names it.
struct Target {
    id: String,
    preview: String,
    key: String,
    path: String,
    query: Option<String>,
}

async fn forward(
    state: &ServerState,
    target: Target,
    method: Method,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    match proxied(
        state.sessions.processes(),
        &state.previews,
        target,
        method,
        headers,
        body,
    )
    .await
    {
        Ok(response) => response,
        Err(e) => e.into_response(),
    }
}

async fn proxied(
    processes: &ProcessRuntime,
    keys: &PreviewKeys,
    target: Target,
    method: Method,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let gone = || {
        ApiError::not_found(
            "server/preview-not-found",
            "no such preview is running in this session; it was stopped, its session closed, or \
             the link is not this server's (open it again from the session's Preview pane)",
        )
    };
    let session = session_id(&target.id)?;
    // A wrong key answers like a missing preview: it tells nothing.
    if !keys.accepts(session, &target.preview, &target.key) {
        return Err(gone());
    }
    let info = processes
        .preview_info(session, &target.preview)
        .ok_or_else(gone)?;
    let Some(address) = info
        .address
        .filter(|_| info.status == CommandStatus::Running)
    else {
        return Err(gone());
    };
    let origin = format!("http://{address}");
    let url = match &target.query {
        Some(q) => format!("{origin}/{}?{q}", target.path),
        None => format!("{origin}/{}", target.path),
    };
    let mut request = client()?.request(method, &url);
    for (name, value) in &headers {
        // Uncompressed answers, so their links can be rewritten.
        if forwardable(name) && name != header::ACCEPT_ENCODING {
            request = request.header(name, value);
        }
    }
    let upstream = request.body(body).send().await.map_err(|e| {
        ApiError::new(
            StatusCode::BAD_GATEWAY,
            "server/preview-unreachable",
            format!("the preview's server at {origin} did not answer: {e}"),
        )
    })?;
    // Accepted above, so the presented key is the preview's key.
    let prefix = path_with_key(session, &target.preview, &target.key);
    let rewrite = Rewrite::of(upstream.headers());
    let mut response = Response::builder().status(upstream.status());
    if let Some(h) = response.headers_mut() {
        for (name, value) in upstream.headers() {
            if !forwardable(name)
                || name == header::CONTENT_SECURITY_POLICY
                || (name == header::CONTENT_LENGTH && rewrite != Rewrite::Keep)
            {
                continue;
            }
            match name == header::LOCATION {
                true => {
                    if let Some(v) = value
                        .to_str()
                        .ok()
                        .and_then(|l| HeaderValue::from_str(&relocated(l, &origin, &prefix)).ok())
                    {
                        h.insert(header::LOCATION, v);
                    }
                }
                false => {
                    h.append(name, value.clone());
                }
            }
        }
        h.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(SANDBOX),
        );
        h.insert(
            header::REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        );
        // The sandboxed page's origin is opaque, so its own `fetch` and
        // module scripts are cross-origin requests; without this header
        // every app that loads a module (Vite, for one) is blank. The
        // proxied URL holds the preview's key and no credential rides on
        // these requests, so naming any origin gives away nothing the key
        // does not.
        h.insert(
            header::ACCESS_CONTROL_ALLOW_ORIGIN,
            HeaderValue::from_static("*"),
        );
    }
    let body = match rewrite {
        Rewrite::Keep => Body::from_stream(upstream.bytes_stream()),
        Rewrite::Html | Rewrite::Css => rewritten(upstream, rewrite, &prefix).await,
    };
    response
        .body(body)
        .map_err(|e| ApiError::internal("server/preview-response", e.to_string()))
}

/// The most bytes of one HTML or CSS answer read whole to rewrite its
/// links ([`links`]); a larger answer passes unchanged past this point.
const MAX_REWRITE_BYTES: usize = 8 * 1024 * 1024;

/// Whether an answer's root-absolute links are moved under the proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rewrite {
    Html,
    Css,
    /// Anything else, and compressed answers: passed as they come.
    Keep,
}

impl Rewrite {
    fn of(headers: &HeaderMap) -> Rewrite {
        let encoded = headers
            .get(header::CONTENT_ENCODING)
            .is_some_and(|e| !e.as_bytes().eq_ignore_ascii_case(b"identity"));
        let essence = headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .map(|v| v.trim().to_ascii_lowercase());
        match (encoded, essence.as_deref()) {
            (false, Some("text/html" | "application/xhtml+xml")) => Rewrite::Html,
            (false, Some("text/css")) => Rewrite::Css,
            _ => Rewrite::Keep,
        }
    }
}

/// The answer's body with its links rewritten, read whole up to
/// [`MAX_REWRITE_BYTES`]; past that (or not UTF-8) it passes unchanged.
async fn rewritten(upstream: reqwest::Response, rewrite: Rewrite, prefix: &str) -> Body {
    use futures_util::StreamExt as _;
    let mut stream = upstream.bytes_stream();
    let mut read = Vec::new();
    while let Some(chunk) = stream.next().await {
        match chunk {
            Ok(chunk) => read.extend_from_slice(&chunk),
            Err(e) => {
                let head = futures_util::stream::iter([Ok(Bytes::from(read)), Err(e)]);
                return Body::from_stream(head);
            }
        }
        if read.len() > MAX_REWRITE_BYTES {
            let head = futures_util::stream::iter([Ok::<_, reqwest::Error>(Bytes::from(read))]);
            return Body::from_stream(head.chain(stream));
        }
    }
    match String::from_utf8(read) {
        Ok(text) => Body::from(match rewrite {
            Rewrite::Html => links::html(&text, prefix),
            Rewrite::Css => links::css(&text, prefix),
            Rewrite::Keep => text,
        }),
        Err(e) => Body::from(e.into_bytes()),
    }
}

/// Whether a header goes through the proxy: not the hop-by-hop ones, not
/// the host (the client sets its own), not the server's token.
fn forwardable(name: &HeaderName) -> bool {
    let n = name.as_str();
    !HOP_BY_HOP.contains(&n) && name != header::HOST && name != header::AUTHORIZATION
}

/// A redirect of the previewed server, kept under the proxy: its own
/// absolute URLs and root-relative paths move below `prefix`.
fn relocated(location: &str, origin: &str, prefix: &str) -> String {
    let rest = location.strip_prefix(origin).unwrap_or(location);
    match rest.strip_prefix('/') {
        Some(path) if !rest.starts_with("//") => format!("{prefix}{path}"),
        _ => location.to_owned(),
    }
}

/// One HTTP client for every proxied request: no system proxy (the
/// preview is on loopback), no redirects followed (the browser follows
/// them, under the proxy).
fn client() -> Result<reqwest::Client, ApiError> {
    static CLIENT: std::sync::OnceLock<Result<reqwest::Client, String>> =
        std::sync::OnceLock::new();
    CLIENT
        .get_or_init(|| {
            evoflux_core::tls::install_crypto_provider();
            reqwest::Client::builder()
                .no_proxy()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .map_err(|e| e.to_string())
        })
        .clone()
        .map_err(|e| ApiError::internal("server/preview-client", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_belong_to_one_preview_of_one_server() {
        let keys = PreviewKeys::default();
        let session = evoflux_core::ids::Ids::sequential().session_id();
        let key = keys.key(session, "preview_1");
        assert_eq!(key.len(), KEY_CHARS);
        assert!(keys.accepts(session, "preview_1", &key));
        assert!(!keys.accepts(session, "preview_2", &key));
        assert!(!PreviewKeys::default().accepts(session, "preview_1", &key));
        assert_eq!(
            keys.proxy_path(session, "preview_1"),
            format!("/api/sessions/{session}/previews/preview_1/{key}/")
        );
    }

    #[test]
    fn redirects_stay_under_the_proxy() {
        let prefix = "/api/sessions/s/previews/p/k/";
        let origin = "http://127.0.0.1:8000";
        assert_eq!(
            relocated("http://127.0.0.1:8000/docs/", origin, prefix),
            "/api/sessions/s/previews/p/k/docs/"
        );
        assert_eq!(
            relocated("/a?b=1", origin, prefix),
            format!("{prefix}a?b=1")
        );
        assert_eq!(relocated("docs/", origin, prefix), "docs/");
        assert_eq!(
            relocated("https://example.com/x", origin, prefix),
            "https://example.com/x"
        );
        assert_eq!(
            relocated("//cdn.example/x", origin, prefix),
            "//cdn.example/x"
        );
    }
}
