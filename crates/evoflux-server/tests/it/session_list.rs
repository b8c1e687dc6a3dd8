#![allow(clippy::unwrap_used, clippy::expect_used)]

//! Sessions can be found through the API (issue #48): each has a title
//! (its first message until renamed), `GET /api/sessions` lists them by
//! last activity (a child's activity is its parent's too) with children
//! after their parent, each with what it cost with the sessions below it,
//! pages with `limit` and `before`, and searches titles and messages
//! (any word form) with `q`; `PATCH /api/sessions/{id}` renames.

use crate::common;

use std::time::{Duration, Instant};

use serde_json::{Value, json};

struct Api {
    client: reqwest::Client,
    url: String,
}

impl Api {
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

    async fn send(&self, method: reqwest::Method, path: &str, body: Value) -> (u16, Value) {
        let r = self
            .client
            .request(method, format!("{}{path}", self.url))
            .bearer_auth(common::TOKEN)
            .json(&body)
            .send()
            .await
            .unwrap();
        (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
    }

    /// Starts a session with `message` and waits for its turn to end.
    async fn session(&self, dir: &std::path::Path, message: &str, reply: &str) -> String {
        let script = dir.join(format!("{}.yaml", message.replace(' ', "-")));
        std::fs::write(
            &script,
            format!("turns:\n  - reply: {{text: \"{reply}\"}}\n"),
        )
        .unwrap();
        let (status, created) = self
            .send(
                reqwest::Method::POST,
                "/api/sessions",
                json!({
                    "mode": "work",
                    "model": format!("scripted:{}", script.display()),
                    "message": message,
                }),
            )
            .await;
        assert_eq!(status, 201, "{created}");
        let id = created["session_id"].as_str().unwrap().to_owned();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let (_, shown) = self.get(&format!("/api/sessions/{id}")).await;
            if shown["transcript"].as_array().is_some_and(|t| t.len() >= 2) {
                break;
            }
            assert!(Instant::now() < deadline, "no reply: {shown}");
            tokio::time::sleep(Duration::from_millis(30)).await;
        }
        id
    }

    async fn list(&self, query: &str) -> Vec<(String, Value)> {
        let (status, list) = self.get(&format!("/api/sessions{query}")).await;
        assert_eq!(status, 200, "{list}");
        list.as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r["session"]["id"].as_str().unwrap().to_owned(),
                    r["session"]["title"].clone(),
                )
            })
            .collect()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_are_titled_listed_by_activity_paged_searched_and_renamed() {
    let (tmp, app) = common::setup();
    let server = common::start(&app, |_| {}).await;
    let api = Api {
        client: reqwest::Client::new(),
        url: server.url(),
    };
    let a = api
        .session(
            tmp.path(),
            "Plan the Lisbon offsite",
            "Book the Alfama venue",
        )
        .await;
    let b = api
        .session(tmp.path(), "Refactor the tokenizer", "Use a PEG grammar")
        .await;
    let store = app.open_store().await.unwrap();
    let child = store
        .create_session(evoflux_store::NewSession {
            workspace: evoflux_store::WorkspaceRequest::Work,
            lead: None,
            model: None,
            graph_hash: None,
            parent: Some(evoflux_store::SessionParent {
                session_id: a.parse().unwrap(),
                call_id: "call_1".into(),
            }),
        })
        .await
        .unwrap();
    store
        .append_message(
            child.id,
            &evoflux_store::Message::user("Compare flights to Porto"),
        )
        .await
        .unwrap();
    store
        .add_usage(
            child.id,
            evoflux_store::Usage {
                requests: 1,
                input_tokens: 7_000,
                ..evoflux_store::Usage::default()
            },
        )
        .await
        .unwrap();
    let child = child.id.to_string();

    // By last activity, each family together: the child worked last, so
    // a (with its child) is first, then b.
    let all = api.list("").await;
    assert_eq!(
        all,
        [
            (a.clone(), json!("Plan the Lisbon offsite")),
            (child.clone(), json!("Compare flights to Porto")),
            (b.clone(), json!("Refactor the tokenizer")),
        ]
    );
    // Each row costs what it cost with the sessions below it.
    let (_, rows) = api.get("/api/sessions").await;
    let tokens = |rows: &Value, id: &str| {
        rows.as_array()
            .unwrap()
            .iter()
            .find(|r| r["session"]["id"] == id)
            .map(|r| r["usage"]["input_tokens"].as_u64().unwrap())
    };
    let own_a = store.usage(a.parse().unwrap()).await.unwrap().input_tokens;
    assert_eq!(tokens(&rows, &a), Some(own_a + 7_000), "{rows:#}");
    assert_eq!(tokens(&rows, &child), Some(7_000));
    // A search finds the child alone: its total is still its tree's, and
    // its parent's is not computed.
    let (_, found_child) = api.get("/api/sessions?q=flights").await;
    assert_eq!(tokens(&found_child, &child), Some(7_000), "{found_child:#}");
    assert_eq!(tokens(&found_child, &a), None);

    // One mode's sessions.
    assert_eq!(api.list("?mode=work").await, all);
    assert!(api.list("?mode=coding").await.is_empty());

    // Paged by top-level session (with its family), a cursor at a time.
    let (_, first) = api.get("/api/sessions?limit=1").await;
    assert_eq!(first.as_array().unwrap().len(), 2, "{first:#}");
    let last = &first[0]["session"];
    assert_eq!(last["id"], a.as_str());
    let cursor = format!("{}:{}", last["updated_at_ms"], last["id"].as_str().unwrap());
    let next = api.list(&format!("/?limit=1&before={cursor}")[1..]).await;
    assert_eq!(
        next.iter().map(|(id, _)| id.as_str()).collect::<Vec<_>>(),
        [b.as_str()]
    );
    let (status, e) = api.get("/api/sessions?before=yesterday").await;
    assert_eq!(status, 400, "{e}");
    assert_eq!(e["code"], "store/cursor-invalid");

    // Search: a word the model said, a child's message, part of a title.
    let found = |q: &str| {
        let q = q.to_owned();
        let api = &api;
        async move {
            api.list(&format!("?q={q}"))
                .await
                .into_iter()
                .map(|(id, _)| id)
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(found("grammar").await, [b.as_str()]);
    assert_eq!(found("porto").await, [child.as_str()]);
    assert_eq!(found("lisbon%20off").await, [a.as_str()]);
    // Word forms: "booking" finds "Book the Alfama venue".
    assert_eq!(found("booking").await, [a.as_str()]);
    assert!(found("nowhere").await.is_empty());

    // Rename: kept, shown, and not counted as activity.
    let (status, renamed) = api
        .send(
            reqwest::Method::PATCH,
            &format!("/api/sessions/{a}"),
            json!({"title": "  Offsite\nplanning "}),
        )
        .await;
    assert_eq!(status, 200, "{renamed}");
    assert_eq!(renamed["title"], "Offsite planning");
    assert_eq!(
        api.list("").await[0],
        (a.clone(), json!("Offsite planning"))
    );
    assert_eq!(found("offsite").await, [a.as_str()]);
    let (status, e) = api
        .send(
            reqwest::Method::PATCH,
            &format!("/api/sessions/{a}"),
            json!({"title": "  "}),
        )
        .await;
    assert_eq!(
        (status, e["code"].clone()),
        (422, json!("store/title-empty"))
    );
    let (status, _) = api
        .send(
            reqwest::Method::PATCH,
            "/api/sessions/019b76da-a800-7000-8000-0000000000ff",
            json!({"title": "x"}),
        )
        .await;
    assert_eq!(status, 404);
    server.stop().await;
}
