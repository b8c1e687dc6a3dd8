#![allow(clippy::unwrap_used, clippy::expect_used)]

//! Previews end to end: the scripted model starts `python3 -m http.server`
//! with the `preview` tool in a session of a real `evoflux serve`; the page
//! is reachable through the server's proxy (no token: the key in the path),
//! and the server process is gone after the session closes, after SIGTERM
//! of evoflux, and after `kill -9` of evoflux plus the next start.

use crate::common;

use std::time::{Duration, Instant};

use common::server::{Server, read_events};
use common::{Sandbox, script, with_marker};
use serde_json::{Value, json};

/// The interpreter, outside any user's home (the sandbox hides homes).
const PYTHON: &str = "/usr/bin/python3";

fn python() -> bool {
    let found = std::path::Path::new(PYTHON).exists();
    if !found {
        evoflux_core::prerequisite::missing("python3", "install Python 3 (Debian: python3)");
    }
    found
}

/// Waits (at most 20 s) until `done` holds.
fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < deadline, "timed out: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A marker for the `n`th test's server, unique to this process: the same
/// tests run at once as root and as `nobody` (the processes carrying it are
/// looked for in the whole process table, and `p12x1` is no part of
/// `p123x1`).
fn unique_marker(n: u32) -> String {
    format!("p{}x{n}", std::process::id())
}

/// A repository with a page to serve from `site-<marker>` (the marker is
/// on the server's command line), and a model that previews it.
fn previewing(s: &Sandbox, marker: &str) -> String {
    s.write(
        s.repo().join(format!("site-{marker}/hello.txt")),
        "hello through the proxy\n",
    );
    let command =
        format!("exec {PYTHON} -m http.server 0 --bind 127.0.0.1 --directory site-{marker}");
    script(
        s,
        "preview.yaml",
        &format!(
            "turns:\n  - reply:\n      tool_calls:\n        - {{name: preview, arguments: {{action: start, command: {}}}}}\n  - expect: {{tool_result: {{contains: serving}}}}\n    reply: {{text: \"It is up.\"}}\n",
            serde_json::to_string(&command).unwrap()
        ),
    )
}

/// A Coding session on the scripted model that starts the preview; its id
/// and the `preview_started` event.
async fn start_preview(server: &Server, model: &str) -> (String, Value) {
    let created = server
        .post(
            "/api/sessions",
            json!({"mode": "coding", "model": model, "message": "show me the site"}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    let created: Value = created.json().await.unwrap();
    let id = created["session_id"].as_str().unwrap().to_owned();
    let events = read_events(server, &id, None, |e| e.kind == "turn_completed").await;
    let started = events
        .iter()
        .find(|e| e.kind == "preview_started")
        .unwrap_or_else(|| panic!("no preview_started in {events:#?}"));
    assert_eq!(
        events.last().unwrap().data["text"],
        "It is up.",
        "{events:#?}"
    );
    (id, started.data.clone())
}

/// The session's one preview as `GET /api/sessions/{id}/previews` lists it.
async fn listed(server: &Server, id: &str) -> Value {
    let (status, list) = server
        .call("GET", &format!("/api/sessions/{id}/previews"), None)
        .await;
    assert_eq!(status, 200, "{list}");
    let items = list["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{list}");
    items[0].clone()
}

/// `GET` of a proxied path, without the token, as a frame or a tab loads it.
async fn through_proxy(server: &Server, path: &str) -> (u16, String, reqwest::header::HeaderMap) {
    let response = server
        .http
        .get(format!("{}{path}", server.url))
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    (status, response.text().await.unwrap(), headers)
}

/// Starts the preview in a session and checks that its page is served
/// through the proxy.
async fn serving_through_the_proxy(server: &Server, model: &str) {
    let (id, _) = start_preview(server, model).await;
    let proxy = listed(server, &id).await["proxy_path"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        through_proxy(server, &format!("{proxy}hello.txt")).await.0,
        200
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_preview_is_proxied_and_gone_when_its_session_closes() {
    if !python() {
        return;
    }
    let s = Sandbox::new();
    let marker = &unique_marker(1);
    let model = previewing(&s, marker);
    let server = Server::start(&s, &[]);
    let (id, started) = start_preview(&server, &model).await;
    let preview_id = started["preview_id"].as_str().unwrap();
    assert!(
        started["url"]
            .as_str()
            .unwrap()
            .starts_with("http://127.0.0.1:")
    );
    println!(
        "measure: preview start-to-URL {} ms (through evoflux serve)",
        started["startup_ms"]
    );
    assert!(!with_marker(marker).is_empty(), "the server runs");

    let item = listed(&server, &id).await;
    assert_eq!(item["preview_id"], preview_id);
    assert_eq!(item["status"], "running");
    let proxy = item["proxy_path"].as_str().unwrap().to_owned();
    assert!(proxy.starts_with(&format!("/api/sessions/{id}/previews/{preview_id}/")));

    let (status, body, headers) = through_proxy(&server, &format!("{proxy}hello.txt")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body, "hello through the proxy\n");
    // The previewed page runs in an origin of its own.
    assert!(
        headers["content-security-policy"]
            .to_str()
            .unwrap()
            .starts_with("sandbox")
    );
    // The directory listing at the root links relatively, under the proxy.
    let (status, listing, _) = through_proxy(&server, &proxy).await;
    assert_eq!(status, 200);
    assert!(listing.contains("href=\"hello.txt\""), "{listing}");
    // Another key is refused like a missing preview.
    let forged = proxy.replace(
        proxy.trim_end_matches('/').rsplit('/').next().unwrap(),
        "00000000000000000000000000000000",
    );
    let (status, body, _) = through_proxy(&server, &format!("{forged}hello.txt")).await;
    assert_eq!(status, 404);
    assert!(body.contains("server/preview-not-found"), "{body}");
    // The listing needs the token.
    let anonymous = server
        .http
        .get(format!("{}/api/sessions/{id}/previews", server.url))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), 401);

    // Closing the session (deleting it) stops the server.
    let (status, _) = server
        .call("DELETE", &format!("/api/sessions/{id}"), None)
        .await;
    assert_eq!(status, 204);
    eventually("the preview's server is gone", || {
        with_marker(marker).is_empty()
    });
    let (status, body, _) = through_proxy(&server, &format!("{proxy}hello.txt")).await;
    assert_eq!(status, 404, "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_of_evoflux_stops_its_previews() {
    if !python() {
        return;
    }
    let s = Sandbox::new();
    let marker = &unique_marker(2);
    let model = previewing(&s, marker);
    let mut server = Server::start(&s, &[]);
    serving_through_the_proxy(&server, &model).await;
    server.stop();
    eventually("the preview's server is gone", || {
        with_marker(marker).is_empty()
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_next_start_reaps_a_preview_a_killed_evoflux_left() {
    if !python() {
        return;
    }
    let s = Sandbox::new();
    // Unconfined: no PID namespace dies with evoflux, so only the reaping
    // of the next start can end the server.
    s.write(
        s.config().join("sandbox.toml"),
        "filesystem = \"full-access\"\n",
    );
    let marker = &unique_marker(3);
    let model = previewing(&s, marker);
    let mut server = Server::start(&s, &[]);
    serving_through_the_proxy(&server, &model).await;
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        !with_marker(marker).is_empty(),
        "an unconfined preview outlives kill -9"
    );
    let hello = script(&s, "hello.yaml", "turns:\n  - reply: {text: hello}\n");
    let out = s.run(&["run", "--model", &hello, "hi"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    eventually("the left preview is reaped", || {
        with_marker(marker).is_empty()
    });
}

/// Previews run on the sandboxed process runtime, which behaves otherwise
/// for root (most containers) than for a user: every test above runs again
/// as `nobody`.
#[test]
fn previews_work_for_an_unprivileged_user_too() {
    if !python() {
        return;
    }
    common::rerun_unprivileged("preview::", "previews_work_for_an_unprivileged_user_too");
}
