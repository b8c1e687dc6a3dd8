#![allow(clippy::unwrap_used, clippy::expect_used)]

//! `evoflux sessions list` finds sessions (issue #48): each is titled by
//! its first message until renamed (`sessions rename`), the list is by
//! last activity (a child's counts as its parent's) with children
//! indented under their parent, and `--search` looks through titles and
//! messages. Behind the server, the session's model names it after the
//! first turn (a remote model through the common fake, a scripted one by
//! its `title:`) and `session_titled` says so; the chat's `/sessions`
//! shows titles and dates and leaves children out.

use crate::common;

use common::fake_model::FakeModel;
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
    // The child's message was its parent's activity too: `a`, started
    // first, is the most recently active.
    assert_eq!(
        rows,
        [
            (a.as_str(), "Plan the Lisbon offsite"),
            (child.as_str(), "Compare flights to Porto"),
            (b.as_str(), "Refactor the tokenizer"),
        ]
    );
    assert_eq!(list[0]["updated_at_ms"], list[1]["updated_at_ms"]);
    // People see the titles, the child indented under its parent.
    let text = stdout(&s, &["sessions", "list"]);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert!(
        lines[0].starts_with(&a) && lines[0].contains("“Plan the Lisbon offsite”"),
        "{text}"
    );
    assert!(lines[1].starts_with(&format!("  {child}")), "{text}");
    assert!(lines[2].starts_with(&b), "{text}");

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
    // A page (one top-level session with its family), and the next one
    // by its cursor.
    let first = s.json(&["--json", "sessions", "list", "--limit", "1"]);
    assert_eq!(first.as_array().unwrap().len(), 2, "{first}");
    let cursor = format!("{}:{}", first[0]["updated_at_ms"], a);
    let next = s.json(&[
        "--json", "sessions", "list", "--limit", "1", "--before", &cursor,
    ]);
    assert_eq!(next.as_array().unwrap().len(), 1, "{next}");
    assert_eq!(next[0]["id"], b.as_str());
    assert!(
        !s.run(&["sessions", "list", "--before", "junk"])
            .status
            .success()
    );

    // Rename, then the list and a search show the new title.
    let renamed = s.json(&["--json", "sessions", "rename", &a, "Offsite planning"]);
    assert_eq!(renamed["title"], "Offsite planning");
    let list = s.json(&["--json", "sessions", "list"]);
    assert_eq!(list[0]["title"], "Offsite planning");
    let found = s.json(&["--json", "sessions", "list", "--search", "offsite plan"]);
    assert_eq!(found[0]["id"], a.as_str());
    let blank = s.run(&["sessions", "rename", &a, "  "]);
    assert!(!blank.status.success());
    assert!(String::from_utf8_lossy(&blank.stderr).contains("store/title-empty"));
}

/// Behind the server, a remote model names the session after its first
/// turn, its call counted with the session's usage; `session_titled`
/// carries the title, and the list and a search show it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_asks_a_remote_model_for_the_title_after_the_first_turn() {
    let fake = FakeModel::titling(
        |_| "The venue is booked.".to_owned(),
        "Lisbon Offsite Logistics",
    );
    let s = Sandbox::new();
    s.user(
        "config.toml",
        &format!(
            "[providers.oai]\nkind = \"openai\"\nbase_url = \"{}\"\n",
            fake.url
        ),
    );
    let server = common::server::Server::start(&s, &[]);
    let id = start_session(&server, "oai:gpt-test", "Plan the Lisbon offsite").await;
    let titled = titled_event(&server, &id).await;
    assert_eq!(titled["title"], "Lisbon Offsite Logistics");
    let list: serde_json::Value = server
        .get("/api/sessions?q=logistics")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(list[0]["session"]["id"], id.as_str(), "{list:#}");
    assert_eq!(list[0]["session"]["title"], "Lisbon Offsite Logistics");
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

/// A scripted model answers the title call from its script's `title:`
/// (without taking one of the script's turns), so a scripted session is
/// titled as a remote one is; a script without `title:` leaves the
/// message's title.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scripted_model_titles_a_session_from_its_script() {
    let s = Sandbox::new();
    let titled = script(
        &s,
        "titled.yaml",
        "title: Offsite in Lisbon\nturns:\n  - reply: {text: \"Booked.\"}\n  - reply: {text: \"Again.\"}\n",
    );
    let plain = script(&s, "plain.yaml", "turns:\n  - reply: {text: \"Done.\"}\n");
    let server = common::server::Server::start(&s, &[]);
    let id = start_session(&server, &titled, "Plan the Lisbon offsite please").await;
    let event = titled_event(&server, &id).await;
    assert_eq!(event["title"], "Offsite in Lisbon");
    // The script's second turn is still the second message's.
    let mut status = 0;
    for _ in 0..100 {
        (status, _) = server
            .call(
                "POST",
                &format!("/api/sessions/{id}/messages"),
                Some(serde_json::json!({"text": "And again"})),
            )
            .await;
        // The first turn may not have let go of the session yet.
        if status != 409 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(status, 202);
    let events = common::server::read_events(&server, &id, None, |e| {
        e.kind == "turn_completed" && e.data["text"] == "Again."
    })
    .await;
    assert_eq!(
        events.iter().filter(|e| e.kind == "session_titled").count(),
        1
    );

    let other = start_session(&server, &plain, "Refactor the parser").await;
    common::server::read_events(&server, &other, None, |e| e.kind == "turn_completed").await;
    let shown: serde_json::Value = server
        .get(&format!("/api/sessions/{other}"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(shown["session"]["title"], "Refactor the parser");
}

/// Starts a Work session on `model` with `message`; its id.
async fn start_session(server: &common::server::Server, model: &str, message: &str) -> String {
    let created: serde_json::Value = server
        .post(
            "/api/sessions",
            serde_json::json!({"mode": "work", "model": model, "message": message}),
        )
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    created["session_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{created:#}"))
        .to_owned()
}

/// The session's `session_titled` event.
async fn titled_event(server: &common::server::Server, id: &str) -> serde_json::Value {
    let events =
        common::server::read_events(server, id, None, |e| e.kind == "session_titled").await;
    events.last().unwrap().data.clone()
}

/// The chat's `/sessions` at a terminal: top-level sessions with their
/// titles and when they were last active; a delegated child is not listed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_chat_s_sessions_command_shows_titles_and_dates_without_children() {
    let s = Sandbox::new();
    let a = started(&s, "a.yaml", "Plan the Lisbon offsite", "Booked.");
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
    let model = script(&s, "none.yaml", "turns: []\n");
    let listed = tokio::task::spawn_blocking({
        let command = s.command(&["chat", "--plain", "--mode", "work", "--model", &model]);
        move || {
            let mut command = command;
            command
                .env("PATH", std::env::var("PATH").unwrap())
                .env("TERM", "xterm-256color");
            let mut p = rexpect::session::spawn_command(command, Some(20_000)).unwrap();
            let bytes = |t: &str| -> String { t.bytes().map(char::from).collect() };
            let text = |raw: String| -> String {
                String::from_utf8_lossy(&raw.chars().map(|c| c as u8).collect::<Vec<_>>())
                    .into_owned()
            };
            p.exp_string(&bytes("› ")).unwrap();
            p.send("/sessions\r").unwrap();
            p.flush().unwrap();
            let listed = text(p.exp_string(&bytes("/resume ID")).unwrap());
            p.send("/exit\r").unwrap();
            p.flush().unwrap();
            let _ = p.exp_eof();
            listed
        }
    })
    .await
    .unwrap();
    let row = listed
        .lines()
        .find(|l| l.contains(&a))
        .unwrap_or_else(|| panic!("{listed}"));
    assert!(row.contains("“Plan the Lisbon offsite”"), "{row}");
    // When it was last active, as a local date and time.
    let when = row.split_whitespace().nth(1).unwrap_or_default();
    assert!(
        when.len() == 10 && when.as_bytes()[4] == b'-' && when.as_bytes()[7] == b'-',
        "{row}"
    );
    assert!(!listed.contains(&child.id.to_string()), "{listed}");
    assert!(!listed.contains("Porto"), "{listed}");
    // The chat's own new session has no message yet.
    assert!(listed.contains("(untitled)"), "{listed}");
}

/// The title call is skipped when, priced at its worst (every character of
/// its input a token, and the 32 tokens it may write), it could take the
/// session past `[limits] max_cost_usd`: the session keeps its message's
/// title and pays for its turns only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_title_call_is_made_when_it_could_pass_the_session_s_cost_limit() {
    let s = Sandbox::new();
    // $1 per million tokens each way; each turn costs 110 tokens, $0.00011,
    // and the limit leaves $0.00009 after the first: less than the title
    // call's ~300 characters and 32 tokens would cost at worst.
    s.user(
        "config.toml",
        "[prices.\"scripted:*\"]\ninput = 1.0\noutput = 1.0\n\n[limits]\nmax_cost_usd = 0.0002\n",
    );
    let model = script(
        &s,
        "limited.yaml",
        "title: Never asked\nturns:\n  - reply: {text: \"Booked.\", usage: {input_tokens: 100, output_tokens: 10}}\n  - reply: {text: \"Again.\", usage: {input_tokens: 10, output_tokens: 1}}\n",
    );
    let server = common::server::Server::start(&s, &[]);
    let id = start_session(&server, &model, "Plan the Lisbon offsite").await;
    common::server::read_events(&server, &id, None, |e| e.kind == "turn_completed").await;
    // A second turn: were the title call made, its answer (at once, from
    // the script) would be in by its end.
    let mut status = 0;
    for _ in 0..100 {
        (status, _) = server
            .call(
                "POST",
                &format!("/api/sessions/{id}/messages"),
                Some(serde_json::json!({"text": "And again"})),
            )
            .await;
        if status != 409 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(status, 202);
    let events = common::server::read_events(&server, &id, None, |e| {
        e.kind == "turn_completed" && e.data["text"] == "Again."
    })
    .await;
    assert!(
        !events
            .iter()
            .any(|e| e.kind == "session_titled" || e.data["purpose"] == "title"),
        "{events:#?}"
    );
    let shown: serde_json::Value = server
        .get(&format!("/api/sessions/{id}"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(shown["session"]["title"], "Plan the Lisbon offsite");
    assert_eq!(shown["usage"]["requests"], 2, "{shown:#}");
}
