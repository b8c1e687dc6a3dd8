#![allow(clippy::unwrap_used, clippy::expect_used)]

//! `evoflux sessions list` finds sessions (issue #48): each is titled by
//! its first message until renamed (`sessions rename`), the list is by
//! last activity with children indented under their parent, and
//! `--search` looks through titles and messages.

use crate::common;

use common::{Sandbox, run_ok, script, session_id};

fn started(s: &Sandbox, file: &str, message: &str, reply: &str) -> String {
    let model = script(
        s,
        file,
        &format!("turns:\n  - reply: {{text: \"{reply}\"}}\n"),
    );
    session_id(&run_ok(s, &["--json", "run", "--model", &model, message]))
}

fn stdout(s: &Sandbox, args: &[&str]) -> String {
    let out = s.run(args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_list_shows_titles_nests_children_searches_and_renames() {
    let s = Sandbox::new();
    let a = started(
        &s,
        "a.yaml",
        "Plan the Lisbon offsite",
        "Book the Alfama venue",
    );
    let b = started(&s, "b.yaml", "Refactor the tokenizer", "Use a PEG grammar");
    let store = {
        let dirs = evoflux_app::testing::dirs(s.tmp.path());
        evoflux_store::Store::open(dirs.data_dir()).await.unwrap()
    };
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
    let child = child.id.to_string();

    let list = s.json(&["--json", "sessions", "list"]);
    let rows: Vec<(&str, &str)> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["id"].as_str().unwrap(), r["title"].as_str().unwrap()))
        .collect();
    assert_eq!(
        rows,
        [
            (b.as_str(), "Refactor the tokenizer"),
            (a.as_str(), "Plan the Lisbon offsite"),
            (child.as_str(), "Compare flights to Porto"),
        ]
    );
    // People see the titles, the child indented under its parent.
    let text = stdout(&s, &["sessions", "list"]);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert!(
        lines[0].starts_with(&b) && lines[0].contains("“Refactor the tokenizer”"),
        "{text}"
    );
    assert!(lines[1].starts_with(&a), "{text}");
    assert!(lines[2].starts_with(&format!("  {child}")), "{text}");

    // A word the model said, and a child's message.
    let found = s.json(&["--json", "sessions", "list", "--search", "grammar"]);
    assert_eq!(found.as_array().unwrap().len(), 1, "{found}");
    assert_eq!(found[0]["id"], b.as_str());
    let found = s.json(&["--json", "sessions", "list", "--search", "porto"]);
    assert_eq!(found[0]["id"], child.as_str());
    assert!(
        stdout(&s, &["sessions", "list", "--search", "nowhere"]).contains("no session matches")
    );
    // One mode's sessions.
    let coding = s.json(&["--json", "sessions", "list", "--mode", "coding"]);
    assert!(coding.as_array().unwrap().is_empty(), "{coding}");
    // A page, and the next one by its cursor.
    let first = s.json(&["--json", "sessions", "list", "--limit", "1"]);
    assert_eq!(first.as_array().unwrap().len(), 1);
    let cursor = format!("{}:{}", first[0]["updated_at_ms"], b);
    let next = s.json(&[
        "--json", "sessions", "list", "--limit", "1", "--before", &cursor,
    ]);
    assert_eq!(next.as_array().unwrap().len(), 2, "{next}");
    assert_eq!(next[0]["id"], a.as_str());
    assert!(
        !s.run(&["sessions", "list", "--before", "junk"])
            .status
            .success()
    );

    // Rename, then the list and a search show the new title.
    let renamed = s.json(&["--json", "sessions", "rename", &a, "Offsite planning"]);
    assert_eq!(renamed["title"], "Offsite planning");
    let list = s.json(&["--json", "sessions", "list"]);
    assert_eq!(list[1]["title"], "Offsite planning");
    let found = s.json(&["--json", "sessions", "list", "--search", "offsite plan"]);
    assert_eq!(found[0]["id"], a.as_str());
    let blank = s.run(&["sessions", "rename", &a, "  "]);
    assert!(!blank.status.success());
    assert!(String::from_utf8_lossy(&blank.stderr).contains("store/title-empty"));
}

/// A Responses endpoint on loopback: the title request (its prompt asks
/// for a short title) gets `title`, any other call without tools (the
/// skill resolver's) "none", and a turn's call a plain answer.
fn fake_responses(title: &'static str) -> String {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let mut reader = BufReader::new(stream);
            let mut length = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
                if line == "\r\n" {
                    break;
                }
            }
            let mut body = vec![0u8; length];
            if reader.read_exact(&mut body).is_err() {
                continue;
            }
            let text = String::from_utf8_lossy(&body);
            let reply = if text.contains("short title") {
                title
            } else if !text.contains("\"tools\"") {
                "none"
            } else {
                "The venue is booked."
            };
            let events = [
                serde_json::json!({"type": "response.created", "response": {"id": "r"}}),
                serde_json::json!({"type": "response.output_text.delta", "output_index": 0, "delta": reply}),
                serde_json::json!({"type": "response.completed", "response": {"id": "r", "status": "completed",
                    "usage": {"input_tokens": 10, "output_tokens": 3}}}),
            ];
            let answer: String = events
                .iter()
                .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
                .collect();
            let mut stream = reader.into_inner();
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{answer}",
                answer.len()
            );
        }
    });
    url
}

/// Behind the server, a remote model names the session after its first
/// turn, its call counted with the session's usage; the list and a
/// search show the new title.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_asks_a_remote_model_for_the_title_after_the_first_turn() {
    let url = fake_responses("Lisbon Offsite Logistics");
    let s = Sandbox::new();
    s.user(
        "config.toml",
        &format!(
            "[providers.oai]\nkind = \"openai\"\nbase_url = \"{url}\"\nwire_api = \"responses\"\n"
        ),
    );
    let server = common::server::Server::start(&s, &[]);
    let created: serde_json::Value = server
        .post(
            "/api/sessions",
            serde_json::json!({"mode": "work", "model": "oai:gpt-test", "message": "Plan the Lisbon offsite"}),
        )
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = created["session_id"].as_str().unwrap().to_owned();
    let mut titled = serde_json::Value::Null;
    for _ in 0..300 {
        let list: serde_json::Value = server
            .get("/api/sessions?q=logistics")
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if let Some(row) = list.as_array().and_then(|l| l.first()) {
            titled = row.clone();
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(titled["session"]["id"], id.as_str(), "never titled");
    assert_eq!(titled["session"]["title"], "Lisbon Offsite Logistics");
    // The title call is the session's: its usage counts it with the turn's.
    let shown: serde_json::Value = server
        .get(&format!("/api/sessions/{id}"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let requests = shown["usage"]["requests"].as_u64().unwrap();
    assert!(requests >= 2, "{shown:#}");
    // A rename wins over the model's title, and stays.
    let renamed = server
        .request("PATCH", &format!("/api/sessions/{id}"))
        .json(&serde_json::json!({"title": "Mine"}))
        .send()
        .await
        .unwrap();
    assert_eq!(renamed.status(), 200);
    let shown: serde_json::Value = server
        .get(&format!("/api/sessions/{id}"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(shown["session"]["title"], "Mine");
}
