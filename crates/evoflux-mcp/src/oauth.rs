//! OAuth login for Streamable HTTP servers, as the MCP authorization
//! specification describes it: a server that wants a token answers `401`
//! with `WWW-Authenticate: Bearer resource_metadata=…`; the client reads
//! the Protected Resource Metadata (RFC 9728) and the Authorization Server
//! Metadata (RFC 8414), registers itself (RFC 7591) when it has no client
//! id for the redirect it uses, sends the user to the authorization
//! endpoint with PKCE (S256) and the `resource` indicator (RFC 8707),
//! exchanges the code, keeps the tokens and refreshes them.
//!
//! The protocol work is `rmcp`'s `auth` feature (`AuthorizationManager`,
//! `AuthorizationSession`, `AuthClient`): the SDK evoflux already speaks
//! MCP through, maintained with the specification, with the address checks
//! of discovered URLs, issuer checks and refresh handling it has. What is
//! evoflux's own is kept here:
//!
//! - [`TokenStore`]: one file per server under the data directory
//!   (`mcp-oauth/`), owner-only and replaced atomically, bound to the
//!   server's reference and URL so a token is never sent to a server it was
//!   not issued for. Never the MCP config file; the tokens are never logged
//!   (rmcp's credentials redact them in `Debug`) nor returned by any API.
//! - [`OAuthLogins`]: the logins in flight, held by whoever serves the
//!   redirect (the `evoflux serve` callback): the PKCE verifier and the
//!   `state` stay in memory, for [`LOGIN_TTL`], and a callback is accepted
//!   only for a `state` it holds.
//! - Recognising a server that needs a login: a start whose handshake is
//!   refused with `401` is [`crate::ServerState::NeedsLogin`] with
//!   [`crate::codes::NEEDS_LOGIN`], not a failure.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use evoflux_core::atomic::{AtomicOptions, write_atomic};
use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationRequest, AuthorizationSession,
    CredentialRefreshGuard, CredentialStore, StoredCredentials,
};
use serde::{Deserialize, Serialize};

/// How long a login started with [`OAuthLogins::begin`] waits for its
/// callback.
pub const LOGIN_TTL: Duration = Duration::from_secs(10 * 60);
/// The folder of the token files under the data directory.
pub const TOKEN_DIR: &str = "mcp-oauth";
/// The client name evoflux registers under.
const CLIENT_NAME: &str = "evoflux";
/// How long a refresh waits for another process refreshing the same
/// server's tokens.
const REFRESH_LOCK_WAIT: Duration = Duration::from_secs(30);

/// Why a login could not start or finish. Each has a stable code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OAuthError {
    #[error("no MCP server is named `{0}`; `evoflux mcp list` lists them")]
    UnknownServer(String),
    #[error(
        "MCP server `{0}` is not a Streamable HTTP server: only those log in with OAuth \
         (a stdio server takes its credentials from its environment)"
    )]
    NotHttp(String),
    #[error("this evoflux has no place to keep MCP tokens (no data directory)")]
    NoTokenStore,
    #[error("cannot discover how to log in to MCP server `{server}`: {detail}")]
    Discovery { server: String, detail: String },
    #[error("cannot register evoflux with the authorization server of `{server}`: {detail}")]
    Registration { server: String, detail: String },
    #[error(
        "this login is not pending (its `state` is unknown, already used, or older than \
         {} minutes): start the login again",
        LOGIN_TTL.as_secs() / 60
    )]
    UnknownState,
    #[error("the authorization server refused the login to `{server}`: {error}{}",
        description.as_deref().map(|d| format!(" ({d})")).unwrap_or_default())]
    Denied {
        server: String,
        error: String,
        description: Option<String>,
    },
    #[error("the login callback has no `{0}` parameter")]
    CallbackInvalid(&'static str),
    #[error("the code for `{server}` could not be exchanged for a token: {detail}")]
    Exchange { server: String, detail: String },
    #[error("cannot keep the tokens in {}: {detail}", path.display())]
    Store { path: PathBuf, detail: String },
    #[error("cannot listen for the login's redirect on 127.0.0.1: {0}")]
    Listen(String),
    #[error("no login came back within {} s; run the login again", .0.as_secs())]
    Timeout(Duration),
}

impl OAuthError {
    /// The stable code (`mcp/...`).
    pub fn code(&self) -> &'static str {
        match self {
            OAuthError::UnknownServer(_) => "mcp/unknown-server",
            OAuthError::NotHttp(_) => "mcp/oauth-not-http",
            OAuthError::NoTokenStore => "mcp/oauth-unavailable",
            OAuthError::Discovery { .. } => "mcp/oauth-discovery-failed",
            OAuthError::Registration { .. } => "mcp/oauth-registration-failed",
            OAuthError::UnknownState => "mcp/oauth-state-unknown",
            OAuthError::Denied { .. } => "mcp/oauth-denied",
            OAuthError::CallbackInvalid(_) => "mcp/oauth-callback-invalid",
            OAuthError::Exchange { .. } => "mcp/oauth-exchange-failed",
            OAuthError::Store { .. } => "mcp/oauth-store-failed",
            OAuthError::Listen(_) => "mcp/oauth-listen-failed",
            OAuthError::Timeout(_) => "mcp/oauth-timeout",
        }
    }

    /// Whether the error is the caller's (a bad or stale request) rather
    /// than the authorization server's or the machine's.
    pub fn is_client_error(&self) -> bool {
        match self {
            OAuthError::UnknownState
            | OAuthError::CallbackInvalid(_)
            | OAuthError::Denied { .. }
            | OAuthError::NotHttp(_)
            | OAuthError::Timeout(_) => true,
            OAuthError::UnknownServer(_)
            | OAuthError::NoTokenStore
            | OAuthError::Discovery { .. }
            | OAuthError::Registration { .. }
            | OAuthError::Exchange { .. }
            | OAuthError::Store { .. }
            | OAuthError::Listen(_) => false,
        }
    }
}

/// Where the tokens of MCP servers are kept: one owner-only file per
/// server in one folder of the data directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenStore {
    dir: PathBuf,
}

/// One server's file.
#[derive(Serialize, Deserialize)]
struct TokenFile {
    /// The server's reference (`name` or `plugin/name`).
    server: String,
    /// The URL the tokens were issued for.
    url: String,
    /// The redirect the client was registered with (a registration is
    /// reused only for the same redirect).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    redirect_uri: Option<String>,
    credentials: StoredCredentials,
}

impl TokenStore {
    /// The store in `dir` (created on the first save).
    pub fn new(dir: impl Into<PathBuf>) -> TokenStore {
        TokenStore { dir: dir.into() }
    }

    /// The store of a data directory (`<data>/mcp-oauth`).
    pub fn in_data_dir(data_dir: &Path) -> TokenStore {
        TokenStore::new(data_dir.join(TOKEN_DIR))
    }

    /// The file of a server: named by a hash of its reference, which may
    /// hold a `/` and any character a name may.
    pub fn path(&self, server: &str) -> PathBuf {
        let hash = evoflux_core::hash::sha256_hex(server.as_bytes()).to_string();
        self.dir.join(format!("{}.json", &hash[..32]))
    }

    /// The credentials of `server` at `url`, for [`AuthorizationManager`].
    pub fn for_server(&self, server: &str, url: &str) -> ServerCredentials {
        ServerCredentials {
            store: self.clone(),
            server: server.to_owned(),
            url: url.to_owned(),
            redirect_uri: None,
        }
    }

    fn read(&self, server: &str, url: &str) -> Result<Option<TokenFile>, OAuthError> {
        let path = self.path(server);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => {
                return Err(OAuthError::Store {
                    path,
                    detail: e.to_string(),
                });
            }
        };
        let file: TokenFile = serde_json::from_slice(&bytes).map_err(|e| OAuthError::Store {
            detail: format!("{e}; delete the file and log in again"),
            path: path.clone(),
        })?;
        // Issued for another server or URL (the entry was edited): not
        // this server's, never sent.
        Ok((file.server == server && file.url == url).then_some(file))
    }

    fn write(&self, file: &TokenFile) -> Result<(), OAuthError> {
        let path = self.path(&file.server);
        let store_err = |detail: String| OAuthError::Store {
            path: path.clone(),
            detail,
        };
        evoflux_core::private::create_private_dir(&self.dir)
            .map_err(|e| store_err(e.to_string()))?;
        let bytes = serde_json::to_vec_pretty(file).map_err(|e| store_err(e.to_string()))?;
        write_atomic(&path, &bytes, AtomicOptions::SECRET).map_err(|e| store_err(e.to_string()))
    }

    fn remove(&self, server: &str) -> Result<(), OAuthError> {
        let path = self.path(server);
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(OAuthError::Store {
                path,
                detail: e.to_string(),
            }),
        }
    }

    /// Whether `server` at `url` has tokens (a login happened).
    pub fn has_tokens(&self, server: &str, url: &str) -> bool {
        matches!(self.read(server, url), Ok(Some(f)) if f.credentials.token_response.is_some())
    }

    /// Forgets the tokens of `server` (a log out).
    pub fn forget(&self, server: &str) -> Result<(), OAuthError> {
        self.remove(server)
    }
}

/// One server's tokens as rmcp's [`CredentialStore`]: what a connection
/// sends and refreshes, and what a login's exchange saves.
#[derive(Debug, Clone)]
pub struct ServerCredentials {
    store: TokenStore,
    server: String,
    url: String,
    /// Set for a login: the redirect its registration is for.
    redirect_uri: Option<String>,
}

impl ServerCredentials {
    /// Whether a login stored tokens for this server and URL.
    pub fn has_tokens(&self) -> bool {
        self.store.has_tokens(&self.server, &self.url)
    }

    fn store_error(e: OAuthError) -> AuthError {
        AuthError::CredentialStoreError(e.to_string())
    }
}

#[async_trait::async_trait]
impl CredentialStore for ServerCredentials {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        let this = self.clone();
        let file = tokio::task::spawn_blocking(move || this.store.read(&this.server, &this.url))
            .await
            .map_err(|e| AuthError::CredentialStoreError(e.to_string()))?
            .map_err(Self::store_error)?;
        Ok(file.map(|f| f.credentials))
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let this = self.clone();
        tokio::task::spawn_blocking(move || {
            // A refresh keeps the redirect the login registered with.
            let redirect_uri = match this.redirect_uri.clone() {
                Some(r) => Some(r),
                None => this
                    .store
                    .read(&this.server, &this.url)?
                    .and_then(|f| f.redirect_uri),
            };
            this.store.write(&TokenFile {
                server: this.server.clone(),
                url: this.url.clone(),
                redirect_uri,
                credentials,
            })
        })
        .await
        .map_err(|e| AuthError::CredentialStoreError(e.to_string()))?
        .map_err(Self::store_error)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        let this = self.clone();
        tokio::task::spawn_blocking(move || this.store.remove(&this.server))
            .await
            .map_err(|e| AuthError::CredentialStoreError(e.to_string()))?
            .map_err(Self::store_error)
    }

    /// The server's session runtimes and `evoflux serve` may refresh the
    /// same tokens at once; a refresh token used twice is often revoked,
    /// so refreshes of one server are serialized across processes.
    async fn acquire_refresh_guard(&self) -> Result<Option<CredentialRefreshGuard>, AuthError> {
        let path = self.store.path(&self.server);
        let dir = self.store.dir.clone();
        let lock = tokio::task::spawn_blocking(move || {
            evoflux_core::private::create_private_dir(&dir).map_err(|e| e.to_string())?;
            evoflux_core::lock::FileLock::acquire(&path, REFRESH_LOCK_WAIT)
                .map_err(|e| e.to_string())
        })
        .await
        .map_err(|e| AuthError::CredentialStoreError(e.to_string()))?
        .map_err(AuthError::CredentialStoreError)?;
        Ok(Some(CredentialRefreshGuard::new(lock)))
    }
}

/// What a login is for: a Streamable HTTP server, its URL and where its
/// tokens go. [`crate::McpRuntime::login_target`] finds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoginTarget {
    /// The server's reference (`name` or `plugin/name`).
    pub server: String,
    pub url: String,
    pub store: TokenStore,
}

/// A login started: where to send the user.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LoginStart {
    pub server: String,
    /// The authorization server's page, with `state` and the PKCE challenge.
    pub authorization_url: String,
    /// How long the login waits for its callback.
    pub expires_in_secs: u64,
}

/// The query of the redirect back from the authorization server.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct Callback {
    #[serde(default)]
    pub code: Option<String>,
    #[serde(default)]
    pub state: Option<String>,
    /// RFC 9207's issuer, checked when present.
    #[serde(default)]
    pub iss: Option<String>,
    #[serde(default)]
    pub error: Option<String>,
    #[serde(default)]
    pub error_description: Option<String>,
}

struct Pending {
    server: String,
    session: AuthorizationSession,
    started: Instant,
}

/// The logins in flight, keyed by their `state`. Held by whoever serves
/// the callback; cheap to share behind an `Arc`.
#[derive(Default)]
pub struct OAuthLogins {
    pending: tokio::sync::Mutex<HashMap<String, Pending>>,
}

impl std::fmt::Debug for OAuthLogins {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthLogins").finish_non_exhaustive()
    }
}

impl OAuthLogins {
    pub fn new() -> OAuthLogins {
        OAuthLogins::default()
    }

    /// Starts a login to `target` whose authorization server redirects to
    /// `redirect_uri`: discovers the metadata (from the server's `401`
    /// challenge when it gives one), registers evoflux when no earlier
    /// registration for this redirect is kept, and returns the URL to open.
    pub async fn begin(
        &self,
        target: LoginTarget,
        redirect_uri: &str,
    ) -> Result<LoginStart, OAuthError> {
        let server = target.server.clone();
        let discovery = |detail: String| OAuthError::Discovery {
            server: server.clone(),
            detail,
        };
        let challenge = probe_challenge(&target.url).await;
        let mut manager = AuthorizationManager::new_allowing_private_addresses(target.url.as_str())
            .await
            .map_err(|e| discovery(e.to_string()))?;
        let mut credentials = target.store.for_server(&target.server, &target.url);
        credentials.redirect_uri = Some(redirect_uri.to_owned());
        manager.set_credential_store(credentials);
        let resolution = manager
            .resolve_metadata_from_challenge(challenge.as_deref())
            .await
            .map_err(|e| discovery(e.to_string()))?;
        manager.set_metadata(resolution.metadata);

        let mut request = AuthorizationRequest::new(redirect_uri)
            .with_client_name(CLIENT_NAME)
            .with_initial_scope_selection();
        let kept = {
            let store = target.store.clone();
            let (s, u) = (target.server.clone(), target.url.clone());
            tokio::task::spawn_blocking(move || store.read(&s, &u))
                .await
                .map_err(|e| discovery(e.to_string()))?
        };
        if let Ok(Some(file)) = kept
            && file.redirect_uri.as_deref() == Some(redirect_uri)
        {
            request = request.with_preregistered_client(file.credentials.client_id);
        }
        let session =
            AuthorizationSession::new(manager, request)
                .await
                .map_err(|(_, e)| match e {
                    AuthError::RegistrationFailed(detail) => OAuthError::Registration {
                        server: server.clone(),
                        detail,
                    },
                    other => discovery(other.to_string()),
                })?;
        let authorization_url = session.get_authorization_url().to_owned();
        let state = url::Url::parse(&authorization_url)
            .ok()
            .and_then(|u| {
                u.query_pairs()
                    .find(|(k, _)| k == "state")
                    .map(|(_, v)| v.into_owned())
            })
            .ok_or_else(|| discovery("the authorization URL has no `state`".to_owned()))?;
        let mut pending = self.pending.lock().await;
        pending.retain(|_, p| p.started.elapsed() < LOGIN_TTL);
        pending.insert(
            state,
            Pending {
                server: target.server.clone(),
                session,
                started: Instant::now(),
            },
        );
        Ok(LoginStart {
            server: target.server,
            authorization_url,
            expires_in_secs: LOGIN_TTL.as_secs(),
        })
    }

    /// Finishes the login a callback names: only a pending `state` is
    /// accepted, once; its code is exchanged and the tokens stored.
    /// Returns the server's reference, to restart it.
    pub async fn complete(&self, callback: &Callback) -> Result<String, OAuthError> {
        let state = callback.state.as_deref().ok_or(OAuthError::UnknownState)?;
        let pending = {
            let mut pending = self.pending.lock().await;
            pending.retain(|_, p| p.started.elapsed() < LOGIN_TTL);
            pending.remove(state).ok_or(OAuthError::UnknownState)?
        };
        if let Some(error) = &callback.error {
            return Err(OAuthError::Denied {
                server: pending.server,
                error: error.clone(),
                description: callback.error_description.clone(),
            });
        }
        let code = callback
            .code
            .as_deref()
            .ok_or(OAuthError::CallbackInvalid("code"))?;
        pending
            .session
            .handle_callback_with_issuer(code, state, callback.iss.as_deref())
            .await
            .map_err(|e| match e {
                AuthError::CredentialStoreError(detail) => OAuthError::Store {
                    path: PathBuf::from(TOKEN_DIR),
                    detail,
                },
                other => OAuthError::Exchange {
                    server: pending.server.clone(),
                    detail: other.to_string(),
                },
            })?;
        Ok(pending.server)
    }

    /// How many logins wait for their callback.
    pub async fn pending(&self) -> usize {
        let mut pending = self.pending.lock().await;
        pending.retain(|_, p| p.started.elapsed() < LOGIN_TTL);
        pending.len()
    }
}

/// The redirect of a login run from a terminal (`evoflux mcp login`): a
/// listener on a free loopback port (RFC 8252's loopback redirect) that
/// takes one callback.
#[derive(Debug)]
pub struct LoopbackRedirect {
    listener: tokio::net::TcpListener,
    /// `http://127.0.0.1:<port>/callback`.
    pub redirect_uri: String,
}

/// The longest request line and headers the loopback listener reads.
const LOOPBACK_REQUEST_LIMIT: usize = 16 * 1024;

impl LoopbackRedirect {
    pub async fn bind() -> Result<LoopbackRedirect, OAuthError> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
            .await
            .map_err(|e| OAuthError::Listen(e.to_string()))?;
        let port = listener
            .local_addr()
            .map_err(|e| OAuthError::Listen(e.to_string()))?
            .port();
        Ok(LoopbackRedirect {
            listener,
            redirect_uri: format!("http://127.0.0.1:{port}/callback"),
        })
    }

    /// Waits at most `limit` for the browser to come back to `/callback`
    /// and returns its query; any other request is answered `404`.
    pub async fn wait(self, limit: Duration) -> Result<Callback, OAuthError> {
        let accept = async {
            loop {
                let Ok((mut stream, _)) = self.listener.accept().await else {
                    continue;
                };
                if let Some(callback) = read_callback(&mut stream).await {
                    return callback;
                }
            }
        };
        tokio::time::timeout(limit, accept)
            .await
            .map_err(|_| OAuthError::Timeout(limit))
    }
}

/// Reads one request; answers it, and returns the callback's query when
/// it is `GET /callback?…`.
async fn read_callback(stream: &mut tokio::net::TcpStream) -> Option<Callback> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut buf = Vec::new();
    let mut chunk = [0u8; 2048];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < LOOPBACK_REQUEST_LIMIT {
        let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut chunk))
            .await
            .ok()?
            .ok()?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let head = String::from_utf8_lossy(&buf);
    let target = head
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("GET "))
        .and_then(|l| l.split(' ').next())
        .unwrap_or("");
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let (status, body, callback) = if path == "/callback" {
        let mut callback = Callback::default();
        for (k, v) in url::form_urlencoded::parse(query.as_bytes()) {
            let v = Some(v.into_owned());
            match k.as_ref() {
                "code" => callback.code = v,
                "state" => callback.state = v,
                "iss" => callback.iss = v,
                "error" => callback.error = v,
                "error_description" => callback.error_description = v,
                _ => {}
            }
        }
        (
            "200 OK",
            "evoflux received the login; you can close this tab and return to the terminal.\n",
            Some(callback),
        )
    } else {
        ("404 Not Found", "not found\n", None)
    };
    let response = format!(
        "HTTP/1.1 {status}\r\ncontent-type: text/plain; charset=utf-8\r\ncache-control: no-store\r\n\
         referrer-policy: no-referrer\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
    callback
}

/// The `WWW-Authenticate` challenge the server answers an unauthenticated
/// `initialize` with, when it answers `401`; `None` otherwise (discovery
/// then tries the well-known locations).
async fn probe_challenge(url: &str) -> Option<String> {
    let client = crate::client::http_client().ok()?;
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": crate::PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": CLIENT_NAME, "version": env!("CARGO_PKG_VERSION")}
        }
    });
    let response = client
        .post(url)
        .header(
            reqwest::header::ACCEPT,
            "application/json, text/event-stream",
        )
        .json(&body)
        .timeout(Duration::from_secs(30))
        .send()
        .await
        .ok()?;
    if response.status() != reqwest::StatusCode::UNAUTHORIZED {
        return None;
    }
    response
        .headers()
        .get(reqwest::header::WWW_AUTHENTICATE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// An authorization manager for a connection to a server with stored
/// tokens: the metadata is discovered again (a refresh needs the token
/// endpoint) and the client id taken from the store.
pub(crate) async fn connection_manager(
    url: &str,
    credentials: ServerCredentials,
) -> Result<AuthorizationManager, AuthError> {
    let mut manager = AuthorizationManager::new_allowing_private_addresses(url).await?;
    manager.set_credential_store(credentials);
    manager.initialize_from_store().await?;
    Ok(manager)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_files_are_per_server_and_bound_to_the_url() {
        let tmp = tempfile::tempdir().unwrap();
        let store = TokenStore::in_data_dir(tmp.path());
        assert_ne!(store.path("a"), store.path("plugin/a"));
        let creds: StoredCredentials =
            serde_json::from_value(serde_json::json!({"client_id": "c", "token_response": null}))
                .unwrap();
        store
            .write(&TokenFile {
                server: "a".into(),
                url: "http://127.0.0.1:1/mcp".into(),
                redirect_uri: None,
                credentials: creds,
            })
            .unwrap();
        assert!(store.read("a", "http://127.0.0.1:1/mcp").unwrap().is_some());
        // Another URL under the same name gets nothing.
        assert!(store.read("a", "http://127.0.0.1:2/mcp").unwrap().is_none());
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(store.path("a"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        store.forget("a").unwrap();
        assert!(store.read("a", "http://127.0.0.1:1/mcp").unwrap().is_none());
    }

    #[test]
    fn every_error_has_an_mcp_code() {
        for e in [
            OAuthError::UnknownState,
            OAuthError::NoTokenStore,
            OAuthError::CallbackInvalid("code"),
        ] {
            assert!(e.code().starts_with("mcp/oauth-"), "{e:?}");
        }
    }
}
