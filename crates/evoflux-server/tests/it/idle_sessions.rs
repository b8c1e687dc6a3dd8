#![allow(clippy::unwrap_used, clippy::expect_used)]

//! Live sessions idle for a while are released from memory (their
//! harness, MCP servers, processes) and opened again from the store on
//! their next message.

use crate::common;

use std::time::{Duration, Instant};

use serde_json::{Value, json};

async fn listed(client: &reqwest::Client, url: &str, id: &str) -> Value {
    let list: Value = client
        .get(format!("{url}/api/sessions"))
        .bearer_auth(common::TOKEN)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    list.as_array()
        .unwrap()
        .iter()
        .find(|s| s["session"]["id"] == id)
        .cloned()
        .expect("the session is listed")
}

/// Waits until `done` holds for the session's listing entry.
async fn until(client: &reqwest::Client, url: &str, id: &str, done: impl Fn(&Value) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let entry = listed(client, url, id).await;
        if done(&entry) {
            return;
        }
        assert!(Instant::now() < deadline, "never: {entry}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_session_is_released_and_its_next_message_opens_it_again() {
    let (tmp, app) = common::setup();
    let script = tmp.path().join("idle.yaml");
    std::fs::write(
        &script,
        "turns:\n  - expect: {user: first}\n    reply: {text: One.}\n  - expect: {user: second}\n    reply: {text: Two.}\n",
    )
    .unwrap();
    let server = common::start(&app, |o| o.idle_release = Duration::from_millis(300)).await;
    let url = server.url();
    let client = reqwest::Client::new();
    let created: Value = client
        .post(format!("{url}/api/sessions"))
        .bearer_auth(common::TOKEN)
        .json(&json!({
            "mode": "work",
            "model": format!("scripted:{}", script.display()),
            "message": "first",
        }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = created["session_id"].as_str().unwrap().to_owned();
    // Listing it does not keep it: once its turn is over, it goes.
    until(&client, &url, &id, |e| e["live"] == false).await;
    // Opened again, the scripted model reads its script from the start.
    std::fs::write(
        &script,
        "turns:\n  - expect: {user: second}\n    reply: {text: Two.}\n",
    )
    .unwrap();
    let sent = client
        .post(format!("{url}/api/sessions/{id}/messages"))
        .bearer_auth(common::TOKEN)
        .json(&json!({"text": "second"}))
        .send()
        .await
        .unwrap();
    assert_eq!(sent.status(), 202, "{}", sent.text().await.unwrap());
    // The message opened it again; its answer continues the conversation.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let shown: Value = client
            .get(format!("{url}/api/sessions/{id}"))
            .bearer_auth(common::TOKEN)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if shown.to_string().contains("Two.") {
            break;
        }
        assert!(Instant::now() < deadline, "no second answer: {shown}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    server.stop().await;
}
