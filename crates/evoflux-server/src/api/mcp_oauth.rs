//! OAuth login to an MCP server over HTTP, through this server: `POST
//! /api/mcp/servers/{name}/login` starts it and returns the authorization
//! URL to open (the `state` and PKCE verifier stay in
//! [`ServerState::mcp_logins`], for a few minutes); the authorization
//! server sends the browser back to `GET /api/mcp/oauth/callback`, which
//! is served without the token (a redirect cannot carry it) and accepted
//! only for a pending `state`: the code is exchanged, the tokens stored
//! in the data directory, the server restarted, and a small page says so.
//! The flow itself is the application's ([`evoflux_app::mcp_servers`],
//! over `evoflux_mcp::oauth`); this is its HTTP front.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use evoflux_app::mcp_servers::{Callback, LoginStart, OAuthError};

use crate::api::mcp::{MCP_SETTLE, runtime, started};
use crate::error::ApiError;
use crate::state::ServerState;

/// The callback's path, which the redirect URI names.
pub const CALLBACK_PATH: &str = "/api/mcp/oauth/callback";

/// What the callback page may load: the UI's stylesheet, nothing else.
const PAGE_CSP: &str = "default-src 'none'; style-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

fn oauth_error(e: OAuthError) -> ApiError {
    let status = match &e {
        OAuthError::UnknownServer(_) => StatusCode::NOT_FOUND,
        e if e.is_client_error() => StatusCode::BAD_REQUEST,
        _ => StatusCode::BAD_GATEWAY,
    };
    ApiError::new(status, e.code(), e.to_string())
}

/// Where the authorization server sends the browser back: this server as
/// the browser reaches it. The `Origin` of the request (the page's, with
/// its scheme) when it names the host the request was sent to, else
/// `http://` and that host; the host check has already accepted the host.
fn redirect_uri(headers: &HeaderMap) -> Result<String, ApiError> {
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .filter(|h| !h.is_empty())
        .ok_or_else(|| {
            ApiError::bad_request(
                "mcp/oauth-no-host",
                "the request has no Host header to build the login's redirect from",
            )
        })?;
    let origin = headers
        .get(header::ORIGIN)
        .and_then(|v| v.to_str().ok())
        .and_then(|o| o.parse::<axum::http::Uri>().ok())
        .and_then(|o| {
            let scheme = o.scheme_str().filter(|s| matches!(*s, "http" | "https"))?;
            let authority = o
                .authority()
                .filter(|a| a.as_str().eq_ignore_ascii_case(host))?;
            Some(format!("{scheme}://{authority}"))
        });
    let base = origin.unwrap_or_else(|| format!("http://{host}"));
    Ok(format!("{base}{CALLBACK_PATH}"))
}

#[utoipa::path(post, path = "/api/mcp/servers/{name}/login", operation_id = "mcp_server_login", tag = "mcp",
    params(("name" = String, Path, description = "The server: `name`, or `plugin/name` (the slash percent-encoded); a Streamable HTTP server")),
    responses(
        (status = 200, description = "The login started: open `authorization_url` in a browser; the authorization server sends it back to `/api/mcp/oauth/callback`, which stores the tokens and restarts the server. The login waits `expires_in_secs`.", body = Object),
        (status = 400, description = "The server is not a Streamable HTTP server (`mcp/oauth-not-http`)", body = ApiError),
        (status = 404, description = "No such server", body = ApiError),
        (status = 502, description = "Discovery or registration at the authorization server failed (`mcp/oauth-discovery-failed`, `mcp/oauth-registration-failed`)", body = ApiError)
    ))]
pub async fn login(
    State(state): State<Arc<ServerState>>,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> Result<Json<LoginStart>, ApiError> {
    let redirect = redirect_uri(&headers)?;
    let target = {
        let mut diags = evoflux_core::Diagnostics::new();
        let slot = runtime(&state, &mut diags).await?;
        started(&slot)?.login_target(&name).map_err(oauth_error)?
    };
    let start = state
        .mcp_logins
        .begin(target, &redirect)
        .await
        .map_err(oauth_error)?;
    Ok(Json(start))
}

#[utoipa::path(get, path = "/api/mcp/oauth/callback", operation_id = "mcp_oauth_callback", tag = "mcp",
    params(
        ("code" = Option<String>, Query, description = "The authorization code"),
        ("state" = Option<String>, Query, description = "The pending login's state"),
        ("iss" = Option<String>, Query, description = "The issuer (RFC 9207), checked when present"),
        ("error" = Option<String>, Query, description = "The authorization server's refusal")
    ),
    responses(
        (status = 200, description = "An HTML page: the login worked, the tokens are stored and the server restarted", content_type = "text/html"),
        (status = 400, description = "An HTML page naming the code: `mcp/oauth-state-unknown` (no pending login has this state), `mcp/oauth-denied`, `mcp/oauth-callback-invalid`", content_type = "text/html"),
        (status = 502, description = "An HTML page naming the code: the exchange failed (`mcp/oauth-exchange-failed`)", content_type = "text/html")
    ))]
pub async fn callback(
    State(state): State<Arc<ServerState>>,
    Query(callback): Query<Callback>,
) -> Response {
    match state.mcp_logins.complete(&callback).await {
        Ok(server) => {
            let now = restart(&state, &server).await;
            page(
                StatusCode::OK,
                "Logged in",
                &format!("evoflux is logged in to the MCP server {server}. {now}"),
                None,
            )
        }
        Err(e) => {
            let status = oauth_error(e.clone()).status;
            page(status, "Login failed", &e.to_string(), Some(e.code()))
        }
    }
}

/// Restarts the server in this server's runtime (when it runs one) and
/// says where it stands.
async fn restart(state: &ServerState, server: &str) -> String {
    let slot = state.mcp.lock().await;
    let Some(runtime) = slot.as_ref() else {
        return "It starts with the next session.".to_owned();
    };
    if let Err(e) = runtime.restart_ref(server).await {
        return format!("It could not be restarted: {e}.");
    }
    runtime.settle(MCP_SETTLE).await;
    let now = runtime
        .listing()
        .into_iter()
        .find(|l| l.server == server)
        .map(|l| l.status.state.as_str());
    match now {
        Some(s) => format!("It is {s} now."),
        None => String::new(),
    }
}

fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The small page the browser lands on: what happened, the code of a
/// failure, and the way back to the MCP servers.
fn page(status: StatusCode, title: &str, message: &str, code: Option<&str>) -> Response {
    let code = code
        .map(|c| format!("<p>Code: <code id=\"code\">{}</code></p>", escape(c)))
        .unwrap_or_default();
    let html = format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{title} — evoflux</title><link rel=\"stylesheet\" href=\"/ui/app.css\"></head>\
         <body><main class=\"card\"><h1>{title}</h1><p id=\"message\">{message}</p>{code}\
         <p><a href=\"/#/settings/mcp\">Back to the MCP servers</a></p></main></body></html>\n",
        title = escape(title),
        message = escape(message),
    );
    let mut response = (status, html).into_response();
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(PAGE_CSP),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn the_redirect_is_this_server_as_the_browser_reaches_it() {
        let plain = headers(&[("host", "127.0.0.1:4747")]);
        assert_eq!(
            redirect_uri(&plain).unwrap(),
            "http://127.0.0.1:4747/api/mcp/oauth/callback"
        );
        let tls = headers(&[
            ("host", "evo.example:8443"),
            ("origin", "https://evo.example:8443"),
        ]);
        assert_eq!(
            redirect_uri(&tls).unwrap(),
            "https://evo.example:8443/api/mcp/oauth/callback"
        );
        // An origin of another host is not taken.
        let other = headers(&[
            ("host", "localhost:1"),
            ("origin", "https://elsewhere.example"),
        ]);
        assert_eq!(
            redirect_uri(&other).unwrap(),
            "http://localhost:1/api/mcp/oauth/callback"
        );
        assert_eq!(
            redirect_uri(&HeaderMap::new()).unwrap_err().code,
            "mcp/oauth-no-host"
        );
    }

    #[test]
    fn the_page_escapes_what_it_shows() {
        let r = page(StatusCode::BAD_REQUEST, "x", "<script>", Some("mcp/a"));
        assert_eq!(r.status(), StatusCode::BAD_REQUEST);
        assert!(
            r.headers()[header::CONTENT_SECURITY_POLICY]
                .to_str()
                .unwrap()
                .contains("default-src 'none'")
        );
    }
}
