#![allow(clippy::unwrap_used, clippy::expect_used)]

//! One scenario, every front end, one event sequence: the same turn driven
//! through the CLI (`--json` run and chat, `sessions resume`) and through
//! the HTTP API emits the same events in the same order — the session
//! host and the engine's event protocol are the front ends' one source.
//! Each scenario's sequence is also pinned here, so a change to it is a
//! deliberate one.

use crate::common;

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::Duration;

use common::server::{Server, read_events};
use common::{Sandbox, events, run, script, session_id};
use serde_json::{Value, json};

/// The kinds of a turn's events, from its `turn_started` to its end
/// (usage events left out: how many model calls a turn makes is the
/// script's, not the front end's).
fn turn_kinds(events: &[(String, Value)]) -> Vec<String> {
    let start = events
        .iter()
        .position(|(k, _)| k == "turn_started")
        .expect("no turn_started");
    let mut out = Vec::new();
    for (kind, _) in &events[start..] {
        if kind == "model_call_completed" {
            continue;
        }
        out.push(kind.clone());
        if matches!(
            kind.as_str(),
            "turn_completed" | "turn_failed" | "turn_cancelled"
        ) {
            break;
        }
    }
    out
}

fn cli_events(out: &std::process::Output) -> Vec<(String, Value)> {
    events(out)
        .into_iter()
        .map(|e| (e["type"].as_str().unwrap().to_owned(), e))
        .collect()
}

/// A session over HTTP whose first message is `message`; its id.
async fn http_session(server: &Server, model: &str, message: &str) -> String {
    let created: Value = server
        .post(
            "/api/sessions",
            json!({"mode": "work", "model": model, "message": message}),
        )
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    created["session_id"].as_str().unwrap().to_owned()
}

/// The session's events over SSE after `after`, until `stop`.
async fn http_events(
    server: &Server,
    id: &str,
    after: Option<u64>,
    stop: impl Fn(&str) -> bool,
) -> Vec<(u64, String, Value)> {
    read_events(server, id, after, |e| stop(&e.kind))
        .await
        .into_iter()
        .map(|e| (e.id, e.kind, e.data))
        .collect()
}

/// A session over HTTP whose first message asks for an approval, decided
/// `decision` by this client; its events to the turn's end.
async fn http_decided(server: &Server, model: &str, decision: &str) -> Vec<(String, Value)> {
    let id = http_session(server, model, "go").await;
    let asked = http_events(server, &id, None, |k| k == "approval_requested").await;
    let call = asked.last().unwrap().2["call_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let decided = server
        .post(
            &format!("/api/sessions/{id}/approvals/{call}"),
            json!({ "decision": decision }),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(decided.status(), 202);
    kinds_of(&http_events(server, &id, None, ends).await)
}

fn kinds_of(events: &[(u64, String, Value)]) -> Vec<(String, Value)> {
    events
        .iter()
        .map(|(_, k, d)| (k.clone(), d.clone()))
        .collect()
}

fn ends(kind: &str) -> bool {
    matches!(kind, "turn_completed" | "turn_failed" | "turn_cancelled")
}

fn strs(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| (*s).to_owned()).collect()
}

const ASKS: &str = "[approval]\nshell = \"always\"\n";

const CALLS_SHELL: &str = r#"
turns:
  - expect: {user: go}
    reply:
      tool_calls:
        - {name: shell, arguments: {command: "mkdir -p made && echo made-it"}}
  - expect: {tool_result: {contains: __RESULT__}}
    reply: {text: finished}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_call_reads_the_same_from_the_cli_and_over_http() {
    let s = Sandbox::new();
    s.user("config.toml", ASKS);
    // The CLI's run is non-interactive: its policy denies.
    let model = script(&s, "cli.yaml", &CALLS_SHELL.replace("__RESULT__", "denied"));
    let out = run(&s, &["--json", "run", "--model", &model, "go"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let cli = cli_events(&out);
    let decided = cli.iter().find(|(k, _)| k == "approval_decided").unwrap();
    assert_eq!(decided.1["decision"], "denied");
    assert_eq!(decided.1["by"], "policy");

    let server = Server::start(&s, &[]);
    let model = script(
        &s,
        "http.yaml",
        &CALLS_SHELL.replace("__RESULT__", "denied"),
    );
    let http = http_decided(&server, &model, "deny").await;
    let decided = http.iter().find(|(k, _)| k == "approval_decided").unwrap();
    assert_eq!(decided.1["by"], "user");

    let expected = strs(&[
        "turn_started",
        "tool_started",
        "approval_requested",
        "approval_decided",
        "tool_ended",
        "message_delta",
        "turn_completed",
    ]);
    assert_eq!(turn_kinds(&cli), expected);
    assert_eq!(turn_kinds(&http), expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_call_reads_the_same_from_a_chat_and_over_http() {
    let s = Sandbox::new();
    s.user("config.toml", ASKS);
    let model = script(
        &s,
        "chat.yaml",
        &CALLS_SHELL.replace("__RESULT__", "made-it"),
    );
    let mut child = s
        .command(&["--json", "chat", "--model", &model])
        .env("PATH", std::env::var("PATH").unwrap())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The message, then the approval, then the end of the chat.
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), b"go\ny\n\n").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let chat = cli_events(&out);
    let decided = chat.iter().find(|(k, _)| k == "approval_decided").unwrap();
    assert_eq!(decided.1["decision"], "approved");

    let server = Server::start(&s, &[]);
    let model = script(
        &s,
        "http.yaml",
        &CALLS_SHELL.replace("__RESULT__", "made-it"),
    );
    let http = http_decided(&server, &model, "approve").await;

    let expected = strs(&[
        "turn_started",
        "tool_started",
        "approval_requested",
        "approval_decided",
        "tool_ended",
        "message_delta",
        "turn_completed",
    ]);
    assert_eq!(turn_kinds(&chat), expected);
    assert_eq!(turn_kinds(&http), expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_model_call_reads_the_same_from_the_cli_and_over_http() {
    let s = Sandbox::new();
    // The script expects another message: the model call fails.
    let diverges = "turns:\n  - expect: {user: hello}\n    reply: {text: hi}\n";
    let model = script(&s, "cli.yaml", diverges);
    let out = run(&s, &["--json", "run", "--model", &model, "something else"]);
    assert!(!out.status.success());
    let cli = cli_events(&out);

    let server = Server::start(&s, &[]);
    let model = script(&s, "http.yaml", diverges);
    let id = http_session(&server, &model, "something else").await;
    let http = kinds_of(&http_events(&server, &id, None, ends).await);

    let expected = strs(&["turn_started", "error", "turn_failed"]);
    assert_eq!(turn_kinds(&cli), expected);
    assert_eq!(turn_kinds(&http), expected);
    // One code, on the error and on the turn's end.
    let code = |events: &[(String, Value)], kind: &str| {
        events.iter().find(|(k, _)| k == kind).unwrap().1["code"].clone()
    };
    assert_eq!(code(&cli, "error"), code(&cli, "turn_failed"));
    assert_eq!(code(&http, "error"), code(&http, "turn_failed"));
    // The server's session takes the next message: the turn is over.
    let next = server
        .post(
            &format!("/api/sessions/{id}/messages"),
            json!({"text": "hello"}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(next.status(), 202);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_and_its_answer_read_the_same_from_the_cli_and_over_http() {
    let s = Sandbox::new();
    let asks = "turns:\n  - expect: {user: pick}\n    reply:\n      tool_calls:\n        - {name: ask_user, arguments: {question: Red or blue?, options: [red, blue]}}\n";
    let answers = "  - expect: {tool_result: {contains: blue}}\n    reply: {text: Blue it is.}\n";
    let model = script(&s, "cli.yaml", asks);
    let out = run(&s, &["--json", "run", "--model", &model, "pick"]);
    assert_eq!(out.status.code(), Some(4), "waiting for the answer");
    let first_cli = cli_events(&out);
    let id = session_id(&events(&out));
    // A new process reads the script from its start.
    script(&s, "cli.yaml", &format!("turns:\n{answers}"));
    let out = run(&s, &["--json", "sessions", "resume", &id, "blue"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let second_cli = cli_events(&out);

    let server = Server::start(&s, &[]);
    let model = script(&s, "http.yaml", &format!("{asks}{answers}"));
    let id = http_session(&server, &model, "pick").await;
    let first = http_events(&server, &id, None, ends).await;
    let last = first.last().unwrap().0;
    let answered = server
        .post(
            &format!("/api/sessions/{id}/input"),
            json!({"text": "blue"}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(answered.status(), 202);
    let second = http_events(&server, &id, Some(last), ends).await;

    let asked = strs(&[
        "turn_started",
        "tool_started",
        "input_requested",
        "turn_completed",
    ]);
    let answer = strs(&[
        "turn_started",
        "tool_ended",
        "message_delta",
        "turn_completed",
    ]);
    assert_eq!(turn_kinds(&first_cli), asked);
    assert_eq!(turn_kinds(&kinds_of(&first)), asked);
    assert_eq!(turn_kinds(&second_cli), answer);
    assert_eq!(turn_kinds(&kinds_of(&second)), answer);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_cancelled_during_a_command_reads_the_same_from_the_cli_and_over_http() {
    let s = Sandbox::new();
    let waits = "turns:\n  - expect: {user: wait}\n    reply:\n      tool_calls:\n        - {name: shell, arguments: {command: \"sleep 30\", yield_time_ms: 30000}}\n";
    let model = script(&s, "cli.yaml", waits);
    let mut child = s
        .command(&["--json", "run", "--model", &model, "wait"])
        .env("PATH", std::env::var("PATH").unwrap())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut lines = Vec::new();
    loop {
        let mut line = String::new();
        assert_ne!(stdout.read_line(&mut line).unwrap(), 0, "ended early");
        let started = line.contains("\"tool_started\"");
        lines.push(line);
        if started {
            break;
        }
    }
    std::thread::sleep(Duration::from_millis(500));
    // Ctrl-C.
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    let _ = child.wait().unwrap();
    let cli: Vec<(String, Value)> = lines
        .into_iter()
        .chain(rest.lines().map(|l| format!("{l}\n")))
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: Value = serde_json::from_str(&l).unwrap();
            (v["type"].as_str().unwrap().to_owned(), v)
        })
        .collect();

    let server = Server::start(&s, &[]);
    let model = script(&s, "http.yaml", waits);
    let id = http_session(&server, &model, "wait").await;
    http_events(&server, &id, None, |k| k == "tool_started").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let cancelled = server
        .post(&format!("/api/sessions/{id}/cancel"), json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(cancelled.status(), 202);
    let http = kinds_of(&http_events(&server, &id, None, ends).await);

    let expected = strs(&[
        "turn_started",
        "tool_started",
        "tool_ended",
        "turn_cancelled",
    ]);
    assert_eq!(turn_kinds(&cli), expected);
    assert_eq!(turn_kinds(&http), expected);
    for events in [&cli, &http] {
        let ended = events.iter().find(|(k, _)| k == "tool_ended").unwrap();
        assert_eq!(ended.1["status"], "cancelled");
    }
}
