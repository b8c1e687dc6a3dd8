#![allow(clippy::unwrap_used, clippy::expect_used)]

//! `code_context` end to end: a Coding task through the real binary with
//! the scripted provider finds a definition and its callers and edits the
//! right file; the schema refuses a `query` field and prose before the
//! service runs; `evoflux code-context` answers people and scripts from the
//! same index, which it persists and refreshes incrementally.

use crate::common;

use common::{Sandbox, events, of_type, run, script, session_id};
use serde_json::Value;

/// Two methods named `new`: only one is the one the task is about.
fn write_repo(s: &Sandbox) {
    s.write(
        s.repo().join("src/lib.rs"),
        "pub mod config;\npub mod server;\n",
    );
    s.write(
        s.repo().join("src/config.rs"),
        "pub struct Config {\n    pub retries: u32,\n}\n\nimpl Config {\n    pub fn new() -> Config {\n        Config { retries: 0 }\n    }\n}\n\npub fn load_config() -> Config {\n    Config::new()\n}\n",
    );
    s.write(
        s.repo().join("src/server.rs"),
        "pub struct Server;\n\nimpl Server {\n    pub fn new() -> Server {\n        let _c = crate::config::load_config();\n        Server\n    }\n}\n",
    );
}

#[test]
fn a_coding_task_finds_a_definition_and_its_callers_and_edits_the_right_file() {
    let s = Sandbox::new();
    write_repo(&s);
    let model = script(
        &s,
        "navigate.yaml",
        r#"
turns:
  - expect: {user: {contains: retries}}
    reply:
      tool_calls:
        - {name: code_context, arguments: {operation: definition, query: where are retries configured}}
  - expect: {tool_result: {contains: "'query' was unexpected"}}
    reply:
      tool_calls:
        - {name: code_context, arguments: {operation: definition, symbol: where is the Config built}}
  - expect: {tool_result: {contains: "does not match"}}
    reply:
      tool_calls:
        - {name: code_context, arguments: {operation: definition, symbol: "Config::new"}}
  - expect: {tool_result: {contains: "method Config::new — src/config.rs:6-8"}}
    reply:
      tool_calls:
        - {name: code_context, arguments: {operation: callers, symbol: "Config::new"}}
  - expect: {tool_result: {contains: "caller of Config::new: function load_config — src/config.rs:11-13"}}
    reply:
      tool_calls:
        - {name: edit, arguments: {path: src/config.rs, old_string: "Config { retries: 0 }", new_string: "Config { retries: 3 }"}}
  - expect: {tool_result: {contains: src/config.rs}}
    reply:
      text: Config::new now starts with 3 retries; its only caller is load_config.
"#,
    );
    let out = run(
        &s,
        &[
            "--json",
            "run",
            "--mode",
            "coding",
            "--model",
            &model,
            "make the default retries 3",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ev = events(&out);
    let ended = of_type(&ev, "tool_ended");
    assert_eq!(ended.len(), 5);
    let done = of_type(&ev, "turn_completed");
    assert_eq!(done[0]["status"], "completed");
    let config = std::fs::read_to_string(s.repo().join("src/config.rs")).unwrap();
    assert!(config.contains("retries: 3"), "{config}");
    let server = std::fs::read_to_string(s.repo().join("src/server.rs")).unwrap();
    assert!(!server.contains("retries"), "the other `new` is untouched");
    // The schema refused the prose symbol, and the service's refusal with
    // the index's names came with it.
    let shown = s.json(&["--json", "sessions", "show", &session_id(&ev)]);
    let results: Vec<&str> = shown["transcript"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["message"]["role"] == "tool")
        .filter_map(|e| e["message"]["content"].as_str())
        .collect();
    assert!(results[1].contains("does not match"), "{}", results[1]);
    assert!(
        results[1].contains("[code/not-a-symbol]") && results[1].contains("`Config`"),
        "{}",
        results[1]
    );
}

fn cli(s: &Sandbox, args: &[&str]) -> std::process::Output {
    let repo = s.repo();
    let mut full: Vec<&str> = args.to_vec();
    let ws = repo.to_str().unwrap();
    full.extend(["--workspace", ws]);
    run(s, &full)
}

fn json_of(out: &std::process::Output) -> Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn the_command_answers_from_an_index_it_keeps_up_to_date() {
    let s = Sandbox::new();
    write_repo(&s);
    let first = json_of(&cli(&s, &["--json", "code-context", "index"]));
    assert_eq!(first["repositories"][0]["parsed"], 3);
    assert_eq!(first["repositories"][0]["files"], 3);
    let index_file = first["repositories"][0]["index_file"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        index_file.starts_with(s.home().to_str().unwrap()),
        "the index lives in the cache dir of the test's home: {index_file}"
    );
    assert!(std::path::Path::new(&index_file).is_file());

    let again = json_of(&cli(&s, &["--json", "code-context", "index"]));
    assert_eq!(again["repositories"][0]["parsed"], 0);
    assert_eq!(again["repositories"][0]["reused"], 3);

    let callers = json_of(&cli(
        &s,
        &["--json", "code-context", "Config::new", "--op", "callers"],
    ));
    let names: Vec<&str> = callers["relationships"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["entry"]["symbol"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["load_config"]);

    let outline = cli(&s, &["code-context", "src/server.rs", "--op", "outline"]);
    assert!(outline.status.success());
    let text = String::from_utf8_lossy(&outline.stdout);
    assert!(text.contains("1. type Server — src/server.rs:1"), "{text}");
    assert!(
        text.contains("2. method Server::new — src/server.rs:4-7"),
        "{text}"
    );

    let prose = cli(
        &s,
        &[
            "code-context",
            "where is the config loaded",
            "--op",
            "definition",
        ],
    );
    assert_eq!(prose.status.code(), Some(3));
    let err = String::from_utf8_lossy(&prose.stderr);
    assert!(err.contains("[code/not-a-symbol]"), "{err}");
    assert!(err.contains("`Config`"), "candidates are names: {err}");

    let bad_op = cli(&s, &["code-context", "Config", "--op", "search"]);
    assert_eq!(
        bad_op.status.code(),
        Some(2),
        "clap refuses an unknown operation"
    );
}
