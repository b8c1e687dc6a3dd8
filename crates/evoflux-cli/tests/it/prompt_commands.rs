//! Prompt commands and resource references through the real binary: a
//! Claude Code command copied as it is (`.claude/commands/review.md` with
//! `$ARGUMENTS`, in a trusted repository) and a codex prompt
//! (`~/.codex/prompts/*.md`) typed as `/name args` in `evoflux run`, the
//! scripted model checking it received the expanded text; and, against
//! `@modelcontextprotocol/server-everything` (`EVOFLUX_TEST_MCP_EVERYTHING`,
//! skipped with a note when unset), its prompts as `/mcp__everything__…`
//! and a resource attached with `@everything:<uri>`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{Sandbox, events, of_type, run, run_ok, script};
use serde_json::{Value, json};

const REVIEW: &str = "---\ndescription: Review a change for bugs\nargument-hint: [file] [focus]\n\
allowed-tools: Bash(git diff:*), Read\nmodel: sonnet\ncolor: purple\n---\n\
Review $ARGUMENTS carefully. Start with $1.\n";

/// A run of `message` whose model expects its user message to contain
/// `expect`, then answers `done`.
fn run_expecting(s: &Sandbox, mode: &str, message: &str, expect: &str) -> Vec<Value> {
    let model = script(
        s,
        "expect.yaml",
        &format!(
            "turns:\n  - expect: {{user: {{contains: {}}}}}\n    reply: {{text: done}}\n",
            json!(expect)
        ),
    );
    run_ok(
        s,
        &["--json", "run", "--mode", mode, "--model", &model, message],
    )
}

fn doctor_commands(s: &Sandbox) -> Value {
    let out = s.command(&["doctor", "--json"]).output().unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == "commands")
        .unwrap()
        .clone()
}

#[test]
fn a_copied_claude_command_expands_in_a_run_of_a_trusted_repository() {
    let s = Sandbox::new();
    s.write(s.repo().join(".claude/commands/review.md"), REVIEW);
    s.write(
        s.repo().join(".claude/commands/frontend/component.md"),
        "Make the component $1.\n",
    );
    s.write(
        s.home().join(".claude/commands/broken.md"),
        "---\ndescription: no closing fence\n",
    );

    // Untrusted: the repository's commands are not read; the line reaches
    // the model as typed.
    let ev = run_expecting(&s, "coding", "/review src/lib.rs", "/review src/lib.rs");
    assert_eq!(of_type(&ev, "turn_completed")[0]["text"], "done");

    s.trust();
    let ev = run_expecting(
        &s,
        "coding",
        "/review src/lib.rs races",
        "Review src/lib.rs races carefully. Start with src/lib.rs.",
    );
    // What the user typed is kept: the turn's input and the message's
    // first line.
    assert_eq!(
        of_type(&ev, "turn_started")[0]["input"],
        "/review src/lib.rs races"
    );
    assert_eq!(of_type(&ev, "turn_completed")[0]["text"], "done");
    run_expecting(
        &s,
        "coding",
        "/frontend:component Button",
        "Make the component Button.",
    );

    let c = doctor_commands(&s);
    let details = c["details"].to_string();
    assert!(
        details.contains("/review: Claude Code command from")
            && details.contains(".claude/commands/review.md"),
        "{details}"
    );
    assert!(details.contains("/frontend:component"), "{details}");
    let codes: Vec<&str> = c["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap())
        .collect();
    assert_eq!(codes, ["commands/front-matter-invalid"], "{c:#}");
    assert_eq!(c["status"], "warning");
}

#[test]
fn a_codex_prompt_expands_by_its_prompts_name_and_its_own_name() {
    let s = Sandbox::new();
    s.write(
        s.home().join(".codex/prompts/draftpr.md"),
        "---\ndescription: Draft a PR\nargument-hint: FILE=<path> [TOPIC=<words>]\n---\n\
Draft a PR for $FILE about $TOPIC; also look at $1.\n",
    );
    run_expecting(
        &s,
        "work",
        "/prompts:draftpr FILE=src/a.rs TOPIC=\"the cache\" notes.md",
        "Draft a PR for src/a.rs about the cache; also look at notes.md.",
    );
    run_expecting(
        &s,
        "work",
        "/draftpr FILE=b.rs TOPIC=x",
        "Draft a PR for b.rs about x; also look at .",
    );
    // An unknown `/word` stays as typed.
    run_expecting(&s, "work", "/nothing here", "/nothing here");
}

fn everything() -> Option<String> {
    match std::env::var("EVOFLUX_TEST_MCP_EVERYTHING") {
        Ok(p) if !p.is_empty() => Some(p),
        _ => {
            eprintln!(
                "note: EVOFLUX_TEST_MCP_EVERYTHING is not set; skipping the MCP prompt commands test"
            );
            None
        }
    }
}

fn node() -> String {
    std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .map(|d| d.join("node"))
        .find(|p| p.is_file())
        .expect("node on PATH")
        .to_string_lossy()
        .into_owned()
}

/// The error code of a run that failed its turn.
fn failed_code(s: &Sandbox, message: &str) -> String {
    let model = script(s, "never.yaml", "turns:\n  - reply: {text: never}\n");
    let out = run(
        s,
        &[
            "--json", "run", "--mode", "work", "--model", &model, message,
        ],
    );
    let ev = events(&out);
    assert!(of_type(&ev, "turn_completed").is_empty(), "{ev:#?}");
    of_type(&ev, "turn_failed")[0]["code"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn server_everything_prompts_and_resources_from_a_run() {
    let Some(index) = everything() else { return };
    let s = Sandbox::new();
    s.user(
        "mcp.json",
        &json!({"mcpServers": {"everything": {
            "type": "stdio", "command": node(), "args": [index, "stdio"]
        }}})
        .to_string(),
    );
    run_expecting(
        &s,
        "work",
        "/mcp__everything__simple-prompt",
        "This is a simple prompt without arguments.",
    );
    run_expecting(
        &s,
        "work",
        "/mcp__everything__args-prompt Austin Texas",
        "What's weather in Austin, Texas?",
    );
    run_expecting(
        &s,
        "work",
        "/mcp__everything__args-prompt state=Texas city=Dallas",
        "What's weather in Dallas, Texas?",
    );
    let ev = run_expecting(
        &s,
        "work",
        "summarize @everything:demo://resource/static/document/features.md please",
        "<resource server=\"everything\" uri=\"demo://resource/static/document/features.md\" mime=\"text/markdown\">",
    );
    assert_eq!(of_type(&ev, "turn_completed")[0]["text"], "done");
    run_expecting(
        &s,
        "work",
        "what is @everything:demo://resource/dynamic/blob/1",
        "[binary contents (text/plain",
    );

    assert_eq!(
        failed_code(&s, "/mcp__everything__args-prompt"),
        "commands/argument-missing"
    );
    assert_eq!(
        failed_code(
            &s,
            "read @elsewhere:demo://resource/static/document/features.md"
        ),
        "commands/resource-server-unknown"
    );
    assert_eq!(
        failed_code(&s, "read @everything:demo://nowhere/1"),
        "commands/resource-read-failed"
    );
}

/// The web UI's composer lists a session's prompt commands
/// (`GET /api/sessions/{id}/commands`), and a message sent over HTTP is
/// expanded like a typed one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_lists_a_sessions_prompt_commands_and_expands_them() {
    use common::server::{Server, read_events};
    let s = Sandbox::new();
    s.write(
        s.home().join(".codex/prompts/draftpr.md"),
        "---\ndescription: Draft a PR\nargument-hint: FILE=<path>\n---\nDraft a PR for $FILE.\n",
    );
    let model = script(
        &s,
        "web.yaml",
        "turns:\n  - expect: {user: {contains: \"Draft a PR for a.rs.\"}}\n    reply: {text: drafted}\n",
    );
    let server = Server::start(&s, &[]);
    let (status, created) = server
        .call(
            "POST",
            "/api/sessions",
            Some(json!({"mode": "work", "model": model, "message": "/prompts:draftpr FILE=a.rs"})),
        )
        .await;
    assert!(status < 300, "{status} {created}");
    let id = created["session_id"].as_str().unwrap().to_owned();
    let events = read_events(&server, &id, None, |e| {
        e.kind == "turn_completed" || e.kind == "turn_failed"
    })
    .await;
    let last = events.last().unwrap();
    assert_eq!(last.kind, "turn_completed", "{:?}", last.data);
    assert_eq!(last.data["text"], "drafted");

    let (status, listed) = server
        .call("GET", &format!("/api/sessions/{id}/commands"), None)
        .await;
    assert_eq!(status, 200, "{listed}");
    let items = listed["items"].as_array().unwrap();
    let draft = items
        .iter()
        .find(|c| c["name"] == "prompts:draftpr")
        .unwrap_or_else(|| panic!("{listed:#}"));
    assert_eq!(draft["description"], "Draft a PR");
    assert_eq!(draft["argument_hint"], "FILE=<path>");
    assert_eq!(draft["source"]["kind"], "codex_prompt");
    let (status, _) = server
        .call(
            "GET",
            "/api/sessions/00000000-0000-0000-0000-000000000000/commands",
            None,
        )
        .await;
    assert_eq!(status, 404);
}
