#![allow(clippy::unwrap_used, clippy::expect_used)]

//! OAuth login to an MCP server over HTTP through `evoflux serve`, against
//! the MCP test server behind a bearer check and its fake authorization
//! server (`evoflux-mcp-testserver oauth`, loopback): the server is
//! `needs-login` in the API and in `evoflux mcp list`; `POST …/login`
//! returns the authorization URL; the test follows it as a browser would,
//! lands on the callback (served without the token), and the tokens are
//! stored owner-only in the data directory, never shown by the API, and
//! the server is ready with its tools. A callback with a `state` that is
//! not pending is refused with its code.

use std::os::unix::fs::PermissionsExt;

use crate::common;

use common::Sandbox;
use common::server::Server;
use serde_json::{Value, json};

/// The fixture's MCP URL, and the process (stops when its stdin closes).
pub fn oauth_fixture() -> Option<(std::process::Child, String)> {
    use std::io::BufRead;
    let bin = common::mcp_test_server()?;
    let mut child = std::process::Command::new(&bin)
        .arg("oauth")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let url = first.trim().to_owned();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    Some((child, url))
}

/// The user's `mcp.json` naming the fixture as `remote`.
pub fn configure(s: &Sandbox, url: &str) {
    s.user(
        "mcp.json",
        &json!({"mcpServers": {"remote": {"type": "streamable-http", "url": url}}}).to_string(),
    );
}

/// The token file of `remote` in the sandbox's data directory.
pub fn token_file(s: &Sandbox) -> std::path::PathBuf {
    let dirs = evoflux_app::testing::dirs(s.tmp.path());
    evoflux_mcp::TokenStore::in_data_dir(dirs.data_dir()).path("remote")
}

async fn remote(server: &Server) -> Value {
    let (status, body) = server.call("GET", "/api/mcp/servers/remote", None).await;
    assert_eq!(status, 200, "{body:#}");
    body
}

/// Opens `url` as a browser would, without following redirects: the
/// status and `Location`.
async fn open(url: &str) -> (u16, Option<String>, String) {
    evoflux_core::tls::install_crypto_provider();
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let r = client.get(url).send().await.unwrap();
    let location = r
        .headers()
        .get("location")
        .map(|v| v.to_str().unwrap().to_owned());
    (r.status().as_u16(), location, r.text().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_server_logs_in_through_the_server() {
    let Some((mut fixture, url)) = oauth_fixture() else {
        return;
    };
    let s = Sandbox::new();
    configure(&s, &url);
    let server = Server::start(&s, &[]);

    let before = remote(&server).await;
    assert_eq!(before["state"], "needs-login", "{before:#}");
    assert_eq!(before["last_error"]["code"], "mcp/needs-login");
    let cli = s.json(&["mcp", "list", "--json"]);
    let row = cli["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["server"] == "remote")
        .unwrap()
        .clone();
    assert_eq!(row["state"], "needs-login", "{cli:#}");

    // A stdio server or an unknown one does not log in.
    let (status, body) = server
        .call("POST", "/api/mcp/servers/nope/login", None)
        .await;
    assert_eq!((status, &body["code"]), (404, &json!("mcp/unknown-server")));

    let (status, start) = server
        .call("POST", "/api/mcp/servers/remote/login", None)
        .await;
    assert_eq!(status, 200, "{start:#}");
    let authorization = start["authorization_url"].as_str().unwrap().to_owned();
    let redirect = format!(
        "{}/api/mcp/oauth/callback",
        server.url.trim_end_matches('/')
    );
    let query: std::collections::BTreeMap<String, String> = reqwest::Url::parse(&authorization)
        .unwrap()
        .query_pairs()
        .into_owned()
        .collect();
    assert_eq!(query["redirect_uri"], redirect);
    assert_eq!(query["code_challenge_method"], "S256");
    assert_eq!(query["resource"], url);

    // A forged callback is refused, and changes nothing.
    let (status, _, page) = open(&format!("{redirect}?code=x&state=forged")).await;
    assert_eq!(status, 400);
    assert!(page.contains("mcp/oauth-state-unknown"), "{page}");
    assert!(!token_file(&s).exists());

    // The user consents; the browser comes back to the callback, without
    // the token.
    let (status, location, _) = open(&authorization).await;
    assert_eq!(status, 302);
    let location = location.unwrap();
    assert!(location.starts_with(&redirect), "{location}");
    let (status, _, page) = open(&location).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("Logged in"), "{page}");
    assert!(page.contains("ready"), "{page}");
    // Used once.
    let (status, _, page) = open(&location).await;
    assert_eq!(status, 400);
    assert!(page.contains("mcp/oauth-state-unknown"), "{page}");

    let file = token_file(&s);
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let stored: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let access = stored["credentials"]["token_response"]["access_token"]
        .as_str()
        .unwrap()
        .to_owned();
    // Never in the MCP config.
    let config = std::fs::read_to_string(s.config().join("mcp.json")).unwrap();
    assert!(!config.contains(&access));

    let after = remote(&server).await;
    assert_eq!(after["state"], "ready", "{after:#}");
    let tools: Vec<&str> = after["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(tools.contains(&"echo"), "{tools:?}");
    let (_, listed) = server.call("GET", "/api/mcp/servers", None).await;
    assert!(!listed.to_string().contains(&access));
    // The CLI's own runtime uses the stored login too.
    let cli = s.json(&["mcp", "list", "--json"]);
    let row = cli["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["server"] == "remote")
        .unwrap()
        .clone();
    assert_eq!(row["state"], "ready", "{cli:#}");
    drop(fixture.stdin.take());
    let _ = fixture.wait();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_login_logs_in_through_a_loopback_redirect() {
    use std::io::BufRead;
    let Some((mut fixture, url)) = oauth_fixture() else {
        return;
    };
    let s = Sandbox::new();
    configure(&s, &url);
    let mut child = s
        .command(&["mcp", "login", "remote", "--timeout", "60"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let address = tokio::task::spawn_blocking(move || {
        std::io::BufReader::new(stderr)
            .lines()
            .map(Result::unwrap)
            .find(|l| l.starts_with("http://"))
            .unwrap()
    })
    .await
    .unwrap();
    let (status, location, _) = open(&address).await;
    assert_eq!(status, 302);
    let location = location.unwrap();
    assert!(location.starts_with("http://127.0.0.1:"), "{location}");
    assert!(location.contains("/callback?"), "{location}");
    let (status, _, page) = open(&location).await;
    assert_eq!(status, 200, "{page}");
    let out = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains("Logged in to remote: ready"), "{stdout}");
    let mode = std::fs::metadata(token_file(&s))
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600);
    // A stdio server has no OAuth login.
    s.user(
        "mcp.json",
        &json!({"mcpServers": {"local": {"type": "stdio", "command": "/nonexistent"}}}).to_string(),
    );
    let out = s.run(&["mcp", "login", "local", "--timeout", "1"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("mcp/oauth-not-http"), "{stderr}");
    drop(fixture.stdin.take());
    let _ = fixture.wait();
}
