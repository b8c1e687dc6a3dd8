//! A fake OAuth authorization server and the crate's test MCP server
//! behind it, both on loopback, for the OAuth tests of this crate and of
//! the CLI. The MCP server answers `401` with
//! `WWW-Authenticate: Bearer resource_metadata=…` to any request without
//! a token the authorization server issued (and has not revoked), and
//! publishes its Protected Resource Metadata (RFC 9728); the authorization
//! server publishes its metadata (RFC 8414), registers clients (RFC 7591),
//! and checks what a real one checks: the registered redirect, PKCE S256,
//! the `resource` indicator (RFC 8707), one use per code, refresh tokens
//! (rotated on each refresh).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};

use axum::extract::{Form, Query, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{Value, json};

use crate::testserver::{TestServerOptions, http_router};

/// How long an issued access token lives, as the token response says.
pub const TOKEN_LIFETIME_SECS: u64 = 3600;

#[derive(Debug)]
struct IssuedCode {
    client_id: String,
    redirect_uri: String,
    challenge: String,
}

#[derive(Debug, Default)]
struct Fake {
    next: u64,
    /// Client id → its registered redirects.
    clients: HashMap<String, Vec<String>>,
    codes: HashMap<String, IssuedCode>,
    access: HashSet<String>,
    /// Refresh token → client id.
    refresh: HashMap<String, String>,
    registrations: usize,
    refreshes: usize,
    /// `resource` values the token endpoint was sent.
    resources: Vec<String>,
}

#[derive(Debug, Clone)]
struct Shared {
    fake: Arc<Mutex<Fake>>,
    issuer: String,
    mcp_url: String,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Fake> {
        self.fake.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The two servers; dropping it stops them.
#[derive(Debug)]
pub struct OAuthFixture {
    /// The MCP endpoint (`http://127.0.0.1:<port>/mcp`).
    pub mcp_url: String,
    /// The authorization server (`http://127.0.0.1:<port>`).
    pub issuer: String,
    shared: Shared,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for OAuthFixture {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

impl OAuthFixture {
    /// Starts both servers on free loopback ports.
    pub async fn start() -> Result<OAuthFixture, String> {
        let bind = || async {
            tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .map_err(|e| e.to_string())
        };
        let (as_listener, mcp_listener) = (bind().await?, bind().await?);
        let as_addr = as_listener.local_addr().map_err(|e| e.to_string())?;
        let mcp_addr = mcp_listener.local_addr().map_err(|e| e.to_string())?;
        let shared = Shared {
            fake: Arc::default(),
            issuer: format!("http://{as_addr}"),
            mcp_url: format!("http://{mcp_addr}/mcp"),
        };
        let authorization = Router::new()
            .route("/.well-known/oauth-authorization-server", get(as_metadata))
            .route("/register", post(register))
            .route("/authorize", get(authorize))
            .route("/token", post(token))
            .with_state(shared.clone());
        let protected = http_router(TestServerOptions::default()).layer(
            axum::middleware::from_fn_with_state(shared.clone(), require_bearer),
        );
        let mcp = Router::new()
            .route(
                "/.well-known/oauth-protected-resource/mcp",
                get(resource_metadata),
            )
            .route(
                "/.well-known/oauth-protected-resource",
                get(resource_metadata),
            )
            .with_state(shared.clone())
            .merge(protected);
        let tasks = vec![
            tokio::spawn(async move {
                let _ = axum::serve(as_listener, authorization).await;
            }),
            tokio::spawn(async move {
                let _ = axum::serve(mcp_listener, mcp).await;
            }),
        ];
        Ok(OAuthFixture {
            mcp_url: shared.mcp_url.clone(),
            issuer: shared.issuer.clone(),
            shared,
            tasks,
        })
    }

    /// How many clients registered.
    pub fn registrations(&self) -> usize {
        self.shared.lock().registrations
    }

    /// How many refresh grants were answered.
    pub fn refreshes(&self) -> usize {
        self.shared.lock().refreshes
    }

    /// The `resource` every token request named.
    pub fn token_resources(&self) -> Vec<String> {
        self.shared.lock().resources.clone()
    }

    /// Whether `token` is an access token the MCP server accepts.
    pub fn accepts(&self, token: &str) -> bool {
        self.shared.lock().access.contains(token)
    }

    /// The MCP server refuses every access token issued so far (refresh
    /// tokens stay valid).
    pub fn revoke_access_tokens(&self) {
        self.shared.lock().access.clear();
    }
}

async fn as_metadata(State(s): State<Shared>) -> Json<Value> {
    let i = &s.issuer;
    Json(json!({
        "issuer": i,
        "authorization_endpoint": format!("{i}/authorize"),
        "token_endpoint": format!("{i}/token"),
        "registration_endpoint": format!("{i}/register"),
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none"]
    }))
}

async fn resource_metadata(State(s): State<Shared>) -> Json<Value> {
    Json(json!({
        "resource": s.mcp_url,
        "authorization_servers": [s.issuer],
        "bearer_methods_supported": ["header"]
    }))
}

async fn require_bearer(State(s): State<Shared>, request: Request, next: Next) -> Response {
    let token = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_owned);
    let accepted = token.is_some_and(|t| s.lock().access.contains(&t));
    if accepted {
        return next.run(request).await;
    }
    let base = s.mcp_url.trim_end_matches("/mcp");
    let challenge =
        format!("Bearer resource_metadata=\"{base}/.well-known/oauth-protected-resource/mcp\"");
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, challenge)],
        "login required",
    )
        .into_response()
}

fn bad(message: impl Into<String>) -> Response {
    (
        StatusCode::BAD_REQUEST,
        Json(json!({"error": "invalid_request", "error_description": message.into()})),
    )
        .into_response()
}

async fn register(State(s): State<Shared>, Json(body): Json<Value>) -> Response {
    let redirects: Vec<String> = body["redirect_uris"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    if redirects.is_empty() {
        return bad("redirect_uris is required");
    }
    let mut f = s.lock();
    f.next += 1;
    f.registrations += 1;
    let client_id = format!("client-{}", f.next);
    f.clients.insert(client_id.clone(), redirects.clone());
    (
        StatusCode::CREATED,
        Json(json!({
            "client_id": client_id,
            "redirect_uris": redirects,
            "client_name": body["client_name"],
            "token_endpoint_auth_method": "none"
        })),
    )
        .into_response()
}

async fn authorize(State(s): State<Shared>, Query(q): Query<HashMap<String, String>>) -> Response {
    let get = |k: &str| q.get(k).cloned().unwrap_or_default();
    let mut f = s.lock();
    let registered = f
        .clients
        .get(&get("client_id"))
        .cloned()
        .unwrap_or_default();
    if get("response_type") != "code" {
        return bad("response_type must be code");
    }
    if !registered.contains(&get("redirect_uri")) {
        return bad("redirect_uri is not registered for this client");
    }
    if get("code_challenge_method") != "S256" || get("code_challenge").is_empty() {
        return bad("PKCE S256 is required");
    }
    if get("resource") != s.mcp_url {
        return bad(format!("resource must be {}", s.mcp_url));
    }
    if get("state").is_empty() {
        return bad("state is required");
    }
    f.next += 1;
    let code = format!("code-{}", f.next);
    f.codes.insert(
        code.clone(),
        IssuedCode {
            client_id: get("client_id"),
            redirect_uri: get("redirect_uri"),
            challenge: get("code_challenge"),
        },
    );
    let Ok(mut location) = url::Url::parse(&get("redirect_uri")) else {
        return bad("redirect_uri is not a URL");
    };
    location
        .query_pairs_mut()
        .append_pair("code", &code)
        .append_pair("state", &get("state"));
    (
        StatusCode::FOUND,
        [(header::LOCATION, location.to_string())],
    )
        .into_response()
}

fn issue(f: &mut Fake, client_id: &str) -> Value {
    f.next += 1;
    let access = format!("access-{}", f.next);
    let refresh = format!("refresh-{}", f.next);
    f.access.insert(access.clone());
    f.refresh.insert(refresh.clone(), client_id.to_owned());
    json!({
        "access_token": access,
        "token_type": "Bearer",
        "expires_in": TOKEN_LIFETIME_SECS,
        "refresh_token": refresh
    })
}

async fn token(State(s): State<Shared>, Form(form): Form<HashMap<String, String>>) -> Response {
    let get = |k: &str| form.get(k).cloned().unwrap_or_default();
    let mut f = s.lock();
    f.resources.push(get("resource"));
    if get("resource") != s.mcp_url {
        return bad(format!("resource must be {}", s.mcp_url));
    }
    match get("grant_type").as_str() {
        "authorization_code" => {
            let Some(issued) = f.codes.remove(&get("code")) else {
                return (
                    StatusCode::BAD_REQUEST,
                    Json(json!({"error": "invalid_grant"})),
                )
                    .into_response();
            };
            if issued.redirect_uri != get("redirect_uri") {
                return bad("redirect_uri differs from the authorization request's");
            }
            if s256(&get("code_verifier")) != issued.challenge {
                return (
                    StatusCode::BAD_REQUEST,
                    Json(json!({"error": "invalid_grant", "error_description": "PKCE"})),
                )
                    .into_response();
            }
            Json(issue(&mut f, &issued.client_id)).into_response()
        }
        "refresh_token" => {
            let Some(client) = f.refresh.remove(&get("refresh_token")) else {
                return (
                    StatusCode::BAD_REQUEST,
                    Json(json!({"error": "invalid_grant"})),
                )
                    .into_response();
            };
            f.refreshes += 1;
            Json(issue(&mut f, &client)).into_response()
        }
        _ => (
            StatusCode::BAD_REQUEST,
            Json(json!({"error": "unsupported_grant_type"})),
        )
            .into_response(),
    }
}

/// `BASE64URL(SHA256(verifier))` without padding (RFC 7636).
fn s256(verifier: &str) -> String {
    let hex = evoflux_core::hash::sha256_hex(verifier.as_bytes()).to_string();
    let bytes: Vec<u8> = (0..hex.len())
        .step_by(2)
        .filter_map(|i| u8::from_str_radix(&hex[i..i + 2], 16).ok())
        .collect();
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..=chunk.len() {
            out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn s256_matches_rfc_7636() {
        // RFC 7636, appendix B.
        assert_eq!(
            super::s256("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }
}
