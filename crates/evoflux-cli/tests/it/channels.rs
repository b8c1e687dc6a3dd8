#![allow(clippy::unwrap_used, clippy::expect_used)]

//! User channels served by the real `evoflux serve`: each route's auth
//! (server token, none, a bearer token or a body signature from the
//! server's environment), its prompt over the request, a synchronous or
//! session-id answer, and `session` keys that continue one session.

use crate::common;

use common::server::{Server, read_events};
use common::{Sandbox, script};
use serde_json::{Value, json};

const CHANNEL: &str = r#"
[[route]]
method = "POST"
path = "/hooks/github/:repo"
agent = "evoflux"
prompt = "{{param.repo}} issue {{body.issue.number}}: {{body.issue.title}}"
session = "{{param.repo}}#{{body.issue.number}}"
auth = { hmac-sha256 = { secret_env = "GH_HOOK_SECRET", header = "X-Hub-Signature-256", prefix = "sha256=" } }

[[route]]
method = "POST"
path = "/ask"
agent = "evoflux"
prompt = "{{body}}"
auth = { bearer = { token_env = "ASK_TOKEN" } }
answer = "sync"
wait_secs = 60

[[route]]
method = "POST"
path = "/open"
agent = "evoflux"
prompt = "{{body}}"
auth = "none"

[[route]]
method = "POST"
path = "/guarded"
agent = "evoflux"
prompt = "{{body}}"
"#;

/// The input of the last turn in `events`.
fn input(events: &[common::server::Sse]) -> String {
    events
        .iter()
        .rev()
        .find(|e| e.kind == "turn_started")
        .and_then(|e| e.data["input"].as_str())
        .unwrap_or_default()
        .to_owned()
}

fn sign(secret: &str, body: &[u8]) -> String {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret.as_bytes());
    format!(
        "sha256={}",
        hex::encode(ring::hmac::sign(&key, body).as_ref())
    )
}

async fn post(server: &Server, path: &str, headers: &[(&str, &str)], body: &str) -> (u16, Value) {
    let mut request = server
        .http
        .post(format!("{}{path}", server.url))
        .body(body.to_owned());
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn channel_routes_authenticate_render_answer_and_continue_sessions() {
    let s = Sandbox::new();
    // Each session plays the script from its first turn: a session that
    // answers "second" is one an earlier request opened.
    let model = script(
        &s,
        "hooks.yaml",
        "turns:\n  - reply: {text: first}\n  - reply: {text: second}\n",
    );
    s.user("config.toml", &format!("[model]\ndefault = \"{model}\"\n"));
    s.user("channels/hooks.toml", CHANNEL);
    let server = Server::start_with_env(
        &s,
        &[],
        &[("GH_HOOK_SECRET", "gh-secret"), ("ASK_TOKEN", "ask-token")],
    );
    // Every route is in info with its auth and answer.
    let info = s.json(&["info", "--json"]);
    let routes: Vec<&Value> = info["routes"]["effective"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["action"]["kind"] == "start-session")
        .collect();
    assert_eq!(routes.len(), 4, "{routes:?}");
    let ask = routes.iter().find(|r| r["path"] == "/ask").unwrap();
    assert_eq!(
        ask["action"]["answer"],
        json!({"kind": "sync", "wait_secs": 60})
    );

    // A bearer route: refused without or with a wrong token, the turn's
    // answer with the right one.
    let (status, body) = post(&server, "/ask", &[], "sync question").await;
    assert_eq!(
        (status, body["code"].as_str()),
        (401, Some("channel/token-missing"))
    );
    let wrong = [("authorization", "Bearer nope")];
    let (status, body) = post(&server, "/ask", &wrong, "sync question").await;
    assert_eq!(
        (status, body["code"].as_str()),
        (401, Some("channel/token-invalid"))
    );
    // The server's own token is not this route's.
    let server_token = format!("Bearer {}", server.token);
    let (status, _) = post(&server, "/ask", &[("authorization", &server_token)], "x").await;
    assert_eq!(status, 401);
    let right = [("authorization", "Bearer ask-token")];
    let (status, body) = post(&server, "/ask", &right, "sync question").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["text"], "first");
    assert_eq!(body["status"], "completed");
    assert!(body["session_id"].is_string());

    // A signed webhook: a bad signature starts nothing; the same issue
    // continues one session, another issue opens its own.
    let issue = |n: u32, title: &str| json!({"issue": {"number": n, "title": title}}).to_string();
    let body7 = issue(7, "Crash on start");
    let bad = [("x-hub-signature-256", "sha256=00")];
    let (status, answer) = post(&server, "/hooks/github/evoflux", &bad, &body7).await;
    assert_eq!(
        (status, answer["code"].as_str()),
        (401, Some("channel/signature-invalid"))
    );
    let sig = sign("gh-secret", body7.as_bytes());
    let (status, first) = post(
        &server,
        "/hooks/github/evoflux",
        &[("x-hub-signature-256", &sig)],
        &body7,
    )
    .await;
    assert_eq!(status, 202, "{first}");
    let first_id = first["session_id"].as_str().unwrap().to_owned();
    let events = read_events(&server, &first_id, None, |e| e.kind == "turn_completed").await;
    assert_eq!(input(&events), "evoflux issue 7: Crash on start");
    assert_eq!(events.last().unwrap().data["text"], "first");
    let again = issue(7, "Crash on start (again)");
    let sig = sign("gh-secret", again.as_bytes());
    let (status, second) = post(
        &server,
        "/hooks/github/evoflux",
        &[("x-hub-signature-256", &sig)],
        &again,
    )
    .await;
    assert_eq!(status, 202, "{second}");
    assert_eq!(second["session_id"], first["session_id"]);
    let last = events.last().unwrap().id;
    let events = read_events(&server, &first_id, Some(last), |e| {
        e.kind == "turn_completed"
    })
    .await;
    assert_eq!(input(&events), "evoflux issue 7: Crash on start (again)");
    assert_eq!(events.last().unwrap().data["text"], "second");
    let body8 = issue(8, "Other");
    let sig = sign("gh-secret", body8.as_bytes());
    let (status, third) = post(
        &server,
        "/hooks/github/evoflux",
        &[("x-hub-signature-256", &sig)],
        &body8,
    )
    .await;
    assert_eq!(status, 202);
    assert_ne!(third["session_id"], first["session_id"]);
    let third_id = third["session_id"].as_str().unwrap();
    let events = read_events(&server, third_id, None, |e| e.kind == "turn_completed").await;
    assert_eq!(input(&events), "evoflux issue 8: Other");
    assert_eq!(events.last().unwrap().data["text"], "first");
    // A signed body without the fields the prompt reads is the caller's
    // mistake.
    let sig = sign("gh-secret", b"{}");
    let (status, answer) = post(
        &server,
        "/hooks/github/evoflux",
        &[("x-hub-signature-256", &sig)],
        "{}",
    )
    .await;
    assert_eq!(
        (status, answer["code"].as_str()),
        (400, Some("channel/body-field-missing"))
    );

    // An open route needs nothing; a route without auth needs the
    // server's token.
    let (status, open) = post(&server, "/open", &[], "anyone").await;
    assert_eq!(status, 202, "{open}");
    let events = read_events(&server, open["session_id"].as_str().unwrap(), None, |e| {
        e.kind == "turn_completed"
    })
    .await;
    assert_eq!(input(&events), "anyone");
    let (status, body) = post(&server, "/guarded", &[], "with the token").await;
    assert_eq!(
        (status, body["code"].as_str()),
        (401, Some("server/token-missing"))
    );
    let (status, guarded) = post(
        &server,
        "/guarded",
        &[("authorization", &server_token)],
        "with the token",
    )
    .await;
    assert_eq!(status, 202, "{guarded}");
    let events = read_events(
        &server,
        guarded["session_id"].as_str().unwrap(),
        None,
        |e| e.kind == "turn_completed",
    )
    .await;
    assert_eq!(input(&events), "with the token");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_route_whose_secret_is_not_set_says_so() {
    let s = Sandbox::new();
    s.user("channels/hooks.toml", CHANNEL);
    let server = Server::start(&s, &[]);
    let (status, body) = post(&server, "/ask", &[("authorization", "Bearer x")], "q").await;
    assert_eq!(
        (status, body["code"].as_str()),
        (503, Some("channel/secret-unset"))
    );
    assert!(body["message"].as_str().unwrap().contains("ASK_TOKEN"));
}

#[test]
fn channel_mistakes_are_compile_errors_with_file_and_field() {
    let s = Sandbox::new();
    s.user(
        "channels/bad.toml",
        "[[route]]\nmethod = \"POST\"\npath = \"/x\"\nagent = \"evoflux\"\nprompt = \"{{param.id}}\"\nwait_secs = 3\n",
    );
    let v = common::json(&s.run(&["info", "--json"]));
    let found: Vec<(&str, &str)> = v["diagnostics"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["code"].as_str().unwrap(),
                d["locator"]["field"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert!(
        found.contains(&("channel/placeholder-invalid", "route[0].prompt")),
        "{found:?}"
    );
    assert!(
        found.contains(&("channel/wait-without-sync", "route[0].wait_secs")),
        "{found:?}"
    );
    assert!(
        v["diagnostics"]["items"][0]["locator"]["file"]
            .as_str()
            .unwrap()
            .ends_with("channels/bad.toml")
    );
}
