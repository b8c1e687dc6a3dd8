//! OAuth login for a Streamable HTTP server, against a fake authorization
//! server and the test MCP server behind a bearer check (both loopback):
//! the server needs a login, discovery → registration → authorize (the
//! test follows the redirect itself) → callback → tokens stored owner-only
//! → ready with its tools; an expired token and a refused one are
//! refreshed; a callback with a `state` that is not pending is refused.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::os::unix::fs::PermissionsExt;

use common::*;
use evoflux_mcp::testserver_oauth::OAuthFixture;
use evoflux_mcp::{
    Callback, LoginTarget, ManagerOptions, ManagerScope, McpManager, OAuthLogins, ServerState,
    TokenStore, codes,
};
use serde_json::{Value, json};

/// Where the fake authorization server sends the browser back; nothing
/// listens there: the test reads the redirect itself.
const REDIRECT: &str = "http://127.0.0.1:9/api/mcp/oauth/callback";

struct World {
    fixture: OAuthFixture,
    store: TokenStore,
    manager: McpManager,
    _tmp: tempfile::TempDir,
}

async fn world() -> World {
    let fixture = OAuthFixture::start().await.unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let store = TokenStore::in_data_dir(tmp.path());
    let manager = McpManager::new(
        ManagerScope::Global,
        vec![http("remote", &fixture.mcp_url, &[])],
        ManagerOptions {
            oauth_tokens: Some(store.clone()),
            ..ManagerOptions::default()
        },
    )
    .unwrap();
    World {
        fixture,
        store,
        manager,
        _tmp: tmp,
    }
}

/// Opens the authorization URL as a browser would (the user consents at
/// once) and returns the callback's query.
async fn follow(authorization_url: &str) -> Callback {
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let response = client.get(authorization_url).send().await.unwrap();
    assert_eq!(
        response.status(),
        reqwest::StatusCode::FOUND,
        "{}",
        response.text().await.unwrap_or_default()
    );
    let location = response.headers()[reqwest::header::LOCATION]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(location.starts_with(REDIRECT), "{location}");
    let url = url::Url::parse(&location).unwrap();
    let get = |k: &str| {
        url.query_pairs()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.into_owned())
    };
    Callback {
        code: get("code"),
        state: get("state"),
        ..Callback::default()
    }
}

async fn log_in(w: &World, logins: &OAuthLogins) {
    let target = LoginTarget {
        server: "remote".into(),
        url: w.fixture.mcp_url.clone(),
        store: w.store.clone(),
    };
    let start = logins.begin(target, REDIRECT).await.unwrap();
    assert_eq!(start.server, "remote");
    let url = url::Url::parse(&start.authorization_url).unwrap();
    let query: std::collections::BTreeMap<String, String> =
        url.query_pairs().into_owned().collect();
    assert_eq!(query["code_challenge_method"], "S256");
    assert_eq!(query["resource"], w.fixture.mcp_url);
    assert_eq!(query["redirect_uri"], REDIRECT);
    let callback = follow(&start.authorization_url).await;
    assert_eq!(logins.complete(&callback).await.unwrap(), "remote");
}

fn stored(w: &World) -> Value {
    let bytes = std::fs::read(w.store.path("remote")).unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

fn access_token(w: &World) -> String {
    stored(w)["credentials"]["token_response"]["access_token"]
        .as_str()
        .unwrap()
        .to_owned()
}

async fn restart_ready(w: &World) {
    w.manager.restart("remote").await.unwrap();
    settle(&w.manager).await;
    let status = w.manager.status("remote").unwrap();
    assert_eq!(status.state, ServerState::Ready, "{status:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_login_makes_a_server_that_needs_one_ready() {
    let w = world().await;
    w.manager.start_all();
    settle(&w.manager).await;
    let status = w.manager.status("remote").unwrap();
    assert_eq!(status.state, ServerState::NeedsLogin, "{status:?}");
    assert_eq!(status.last_error.unwrap().code, codes::NEEDS_LOGIN);
    assert_eq!(
        serde_json::to_value(ServerState::NeedsLogin).unwrap(),
        json!("needs-login")
    );

    let logins = OAuthLogins::new();
    log_in(&w, &logins).await;
    assert_eq!(w.fixture.registrations(), 1);
    assert_eq!(logins.pending().await, 0);
    let path = w.store.path("remote");
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let file = stored(&w);
    assert_eq!(file["url"], w.fixture.mcp_url.as_str());
    assert!(w.fixture.accepts(&access_token(&w)));

    restart_ready(&w).await;
    let r = w
        .manager
        .call_server_tool("remote", "echo", json!({"message": "authorized"}), WAIT)
        .await
        .unwrap();
    assert_eq!(text(&r), "Echo: authorized");
    // A second login for the same redirect reuses the registration.
    log_in(&w, &logins).await;
    assert_eq!(w.fixture.registrations(), 1);
    w.manager.stop_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_and_refused_tokens_are_refreshed() {
    let w = world().await;
    let logins = OAuthLogins::new();
    log_in(&w, &logins).await;
    let first = access_token(&w);

    // Expired: received long ago. The connection refreshes before sending.
    let mut file = stored(&w);
    file["credentials"]["token_received_at"] = json!(1);
    std::fs::write(w.store.path("remote"), serde_json::to_vec(&file).unwrap()).unwrap();
    w.fixture.revoke_access_tokens();
    restart_ready(&w).await;
    assert_eq!(w.fixture.refreshes(), 1);
    let second = access_token(&w);
    assert_ne!(first, second);
    assert!(w.fixture.accepts(&second));

    // Refused while not expired (revoked): one refresh, one retry.
    w.fixture.revoke_access_tokens();
    restart_ready(&w).await;
    assert_eq!(w.fixture.refreshes(), 2);
    assert!(w.fixture.accepts(&access_token(&w)));
    // Every token request named the server as its resource (RFC 8707).
    let resources = w.fixture.token_resources();
    assert_eq!(resources.len(), 3);
    assert!(
        resources.iter().all(|r| *r == w.fixture.mcp_url),
        "{resources:?}"
    );
    w.manager.stop_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_callback_is_accepted_only_for_a_pending_state() {
    let w = world().await;
    let logins = OAuthLogins::new();
    let target = LoginTarget {
        server: "remote".into(),
        url: w.fixture.mcp_url.clone(),
        store: w.store.clone(),
    };
    let start = logins.begin(target, REDIRECT).await.unwrap();
    let callback = follow(&start.authorization_url).await;
    let forged = Callback {
        state: Some("not-a-pending-state".into()),
        ..callback.clone()
    };
    let e = logins.complete(&forged).await.unwrap_err();
    assert_eq!(e.code(), "mcp/oauth-state-unknown");
    let e = logins.complete(&Callback::default()).await.unwrap_err();
    assert_eq!(e.code(), "mcp/oauth-state-unknown");
    assert!(!w.store.path("remote").exists());
    // The real one still works, once.
    logins.complete(&callback).await.unwrap();
    let e = logins.complete(&callback).await.unwrap_err();
    assert_eq!(e.code(), "mcp/oauth-state-unknown");
    // A refusal at the authorization server is reported with its code.
    let target = LoginTarget {
        server: "remote".into(),
        url: w.fixture.mcp_url.clone(),
        store: w.store.clone(),
    };
    let start = logins.begin(target, REDIRECT).await.unwrap();
    let state = follow(&start.authorization_url).await.state;
    let denied = Callback {
        state,
        error: Some("access_denied".into()),
        ..Callback::default()
    };
    let e = logins.complete(&denied).await.unwrap_err();
    assert_eq!(e.code(), "mcp/oauth-denied");
}
