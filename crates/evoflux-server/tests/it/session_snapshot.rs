//! A view opens a session from a snapshot, not from its first event
//! (issue #48): `GET /api/sessions/{id}/snapshot` holds the stored
//! transcript up to the start of the last turn and the event id to follow
//! from, so the last turn arrives as events and nothing shows twice;
//! `GET /api/sessions/{id}/transcript?before=` pages older history without
//! cutting a tool result from its call.

use crate::common;

use std::time::{Duration, Instant};

use evoflux_core::ids::SessionId;
use evoflux_store::{Message, ToolCall};
use serde_json::{Value, json};

struct Api {
    client: reqwest::Client,
    url: String,
}

impl Api {
    fn new(url: String) -> Api {
        Api {
            client: reqwest::Client::new(),
            url,
        }
    }

    async fn get(&self, path: &str) -> (u16, Value) {
        let r = self
            .client
            .get(format!("{}{path}", self.url))
            .bearer_auth(common::TOKEN)
            .send()
            .await
            .unwrap();
        (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
    }

    async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        let r = self
            .client
            .post(format!("{}{path}", self.url))
            .bearer_auth(common::TOKEN)
            .json(&body)
            .send()
            .await
            .unwrap();
        (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
    }

    /// Waits until the session's transcript holds `entries` entries and no
    /// turn runs.
    async fn settled(&self, id: &str, entries: usize) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let (_, shown) = self.get(&format!("/api/sessions/{id}")).await;
            if shown["transcript"].as_array().map(Vec::len) == Some(entries)
                && shown["busy"] == false
            {
                return;
            }
            assert!(Instant::now() < deadline, "never settled: {shown}");
            tokio::time::sleep(Duration::from_millis(30)).await;
        }
    }

    /// The events after `after`, read from the stream until `last` arrives.
    async fn events_until(&self, id: &str, after: u64, last: &str) -> Vec<(String, Value)> {
        let mut response = self
            .client
            .get(format!(
                "{}/api/sessions/{id}/events?after={after}",
                self.url
            ))
            .bearer_auth(common::TOKEN)
            .send()
            .await
            .unwrap();
        let mut text = String::new();
        let deadline = Instant::now() + Duration::from_secs(30);
        while !text.contains(&format!("event: {last}\n")) {
            let chunk = tokio::time::timeout_at(deadline.into(), response.chunk())
                .await
                .expect("the events arrive")
                .unwrap()
                .expect("the stream stays open");
            text.push_str(&String::from_utf8_lossy(&chunk));
        }
        text.split("\n\n")
            .filter_map(|frame| {
                let kind = frame.lines().find_map(|l| l.strip_prefix("event:"))?;
                let data = frame.lines().find_map(|l| l.strip_prefix("data:"))?;
                Some((
                    kind.trim().to_owned(),
                    serde_json::from_str(data.trim()).unwrap(),
                ))
            })
            .collect()
    }
}

fn script(dir: &std::path::Path, turns: &[&str]) -> String {
    let path = dir.join("snapshot.yaml");
    let body: String = turns
        .iter()
        .map(|reply| format!("  - reply: {{text: \"{reply}\"}}\n"))
        .collect();
    std::fs::write(&path, format!("turns:\n{body}")).unwrap();
    format!("scripted:{}", path.display())
}

async fn create(api: &Api, model: &str, message: &str) -> String {
    let (status, created) = api
        .post(
            "/api/sessions",
            json!({ "mode": "work", "model": model, "message": message }),
        )
        .await;
    assert_eq!(status, 201, "{created}");
    created["session_id"].as_str().unwrap().to_owned()
}

fn users(entries: &Value) -> Vec<String> {
    entries
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["message"]["role"] == "user")
        .map(|e| e["message"]["content"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_snapshot_holds_finished_turns_and_the_last_turn_comes_as_events() {
    let (tmp, app) = common::setup();
    let server = common::start(&app, |_| {}).await;
    let api = Api::new(server.url());
    let model = script(tmp.path(), &["One.", "Two.", "Three."]);
    let id = create(&api, &model, "first").await;
    api.settled(&id, 2).await;
    for (n, text) in [(4, "second"), (6, "third")] {
        let (status, body) = api
            .post(
                &format!("/api/sessions/{id}/messages"),
                json!({ "text": text }),
            )
            .await;
        assert_eq!(status, 202, "{body}");
        api.settled(&id, n).await;
    }

    let (status, snapshot) = api.get(&format!("/api/sessions/{id}/snapshot")).await;
    assert_eq!(status, 200, "{snapshot}");
    // Two finished turns stored; the third is the events' to show.
    assert_eq!(users(&snapshot["transcript"]), ["first", "second"]);
    assert!(snapshot.get("earlier").is_none(), "{snapshot}");
    assert_eq!(snapshot["live"], true);
    let after = snapshot["after_event"].as_u64().unwrap();
    let events = api.events_until(&id, after, "turn_completed").await;
    let inputs: Vec<&str> = events
        .iter()
        .filter(|(k, _)| k == "turn_started")
        .filter_map(|(_, d)| d["input"].as_str())
        .collect();
    assert_eq!(inputs, ["third"], "{events:?}");
    let answer = events
        .iter()
        .find(|(k, _)| k == "turn_completed")
        .map(|(_, d)| d["text"].clone());
    assert_eq!(answer, Some(json!("Three.")));

    // The same session, no longer live in a new server, opens the same way.
    server.stop().await;
    let server = common::start(&app, |_| {}).await;
    let api = Api::new(server.url());
    let (_, stored) = api.get(&format!("/api/sessions/{id}/snapshot")).await;
    assert_eq!(stored["live"], false);
    assert_eq!(users(&stored["transcript"]), ["first", "second"]);
    assert_eq!(stored["after_event"], snapshot["after_event"]);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn older_history_pages_back_whole_and_never_cuts_a_result_from_its_call() {
    let (tmp, app) = common::setup();
    let server = common::start(&app, |_| {}).await;
    let api = Api::new(server.url());
    let model = script(tmp.path(), &["Hello.", "Done."]);
    let id = create(&api, &model, "start").await;
    api.settled(&id, 2).await;
    // Earlier history: exchanges of a user message, a call, its result and
    // an answer, written as a long session's turns would have stored them.
    let store = app.open_store().await.unwrap();
    let sid: SessionId = id.parse().unwrap();
    for i in 0..75 {
        store
            .append_message(sid, &Message::user(format!("question {i}")))
            .await
            .unwrap();
        let call = ToolCall {
            id: format!("call_{i}"),
            name: "read".into(),
            arguments: json!({ "path": format!("f{i}.txt") }),
        };
        store
            .append_message(sid, &Message::tool_calls("", vec![call]))
            .await
            .unwrap();
        store
            .append_message(sid, &Message::tool_result(format!("call_{i}"), "text"))
            .await
            .unwrap();
        store
            .append_message(sid, &Message::assistant(format!("answer {i}")))
            .await
            .unwrap();
    }
    let (status, body) = api
        .post(
            &format!("/api/sessions/{id}/messages"),
            json!({ "text": "last" }),
        )
        .await;
    assert_eq!(status, 202, "{body}");
    api.settled(&id, 304).await;

    let (_, snapshot) = api
        .get(&format!("/api/sessions/{id}/snapshot?limit=25"))
        .await;
    let mut pages = vec![snapshot["transcript"].as_array().unwrap().clone()];
    let mut earlier = snapshot["earlier"].as_u64();
    while let Some(before) = earlier {
        let (status, page) = api
            .get(&format!(
                "/api/sessions/{id}/transcript?before={before}&limit=25"
            ))
            .await;
        assert_eq!(status, 200, "{page}");
        pages.push(page["transcript"].as_array().unwrap().clone());
        earlier = page["earlier"].as_u64();
    }
    assert!(
        pages.len() >= 10,
        "{:?}",
        pages
            .iter()
            .map(|p| (p.len(), p[0]["seq"].clone()))
            .collect::<Vec<_>>()
    );
    for page in &pages {
        assert!(!page.is_empty());
        assert_ne!(page[0]["message"]["role"], "tool", "{page:?}");
        assert!(page.len() <= 25 + 16, "{}", page.len());
    }
    // Newest page first: read back in order, every entry once, up to the
    // last turn's start.
    let seqs: Vec<u64> = pages
        .iter()
        .rev()
        .flatten()
        .map(|e| e["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, (1..=302).collect::<Vec<_>>());

    let (status, bad) = api
        .get(&format!("/api/sessions/{id}/transcript?before=x"))
        .await;
    assert_eq!(status, 400, "{bad}");
    server.stop().await;
}
