#![allow(clippy::unwrap_used, clippy::expect_used)]

//! `evoflux run`, `sessions` and the command runtime, end to end through
//! the real binary with the scripted provider.

use crate::common;

use std::io::{BufRead, BufReader};
use std::process::Stdio;

use common::{Sandbox, events, of_type, run, script, session_id};
use serde_json::Value;

fn show(s: &Sandbox, id: &str) -> Value {
    s.json(&["--json", "sessions", "show", id])
}

#[test]
fn a_task_that_greps_reads_and_edits_files() {
    let s = Sandbox::new();
    s.write(
        s.repo().join("src/lib.rs"),
        "pub fn greet() -> &'static str {\n    \"helo\"\n}\n",
    );
    let model = script(
        &s,
        "fix.yaml",
        r#"
turns:
  - expect: {user: {contains: typo}}
    reply:
      text: Looking for it.
      tool_calls:
        - {name: grep, arguments: {pattern: helo}}
  - expect: {tool_result: {contains: src/lib.rs}}
    reply:
      tool_calls:
        - {name: read, arguments: {path: src/lib.rs}}
  - expect: {tool_result: {contains: helo}}
    reply:
      tool_calls:
        - {name: edit, arguments: {path: src/lib.rs, old_string: helo, new_string: hello}}
  - reply:
      text: Fixed the typo in src/lib.rs.
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
            "fix the typo",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ev = events(&out);
    assert_eq!(of_type(&ev, "tool_ended").len(), 3);
    let done = of_type(&ev, "turn_completed");
    assert_eq!(done[0]["status"], "completed");
    assert_eq!(done[0]["text"], "Fixed the typo in src/lib.rs.");
    let source = std::fs::read_to_string(s.repo().join("src/lib.rs")).unwrap();
    assert!(source.contains("\"hello\""), "{source}");
    // The session and its transcript are stored.
    let id = session_id(&ev);
    let shown = show(&s, &id);
    assert_eq!(shown["session"]["workspace"]["mode"], "coding");
    let roles: Vec<&str> = shown["transcript"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["message"]["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        [
            "user",
            "assistant",
            "tool",
            "assistant",
            "tool",
            "assistant",
            "tool",
            "assistant"
        ]
    );
    assert_eq!(shown["usage"]["requests"], 4);
    let list = s.json(&["--json", "sessions", "list"]);
    assert_eq!(list.as_array().unwrap().len(), 1);
}

#[test]
fn ask_user_pauses_and_a_new_process_resumes_with_the_answer() {
    let s = Sandbox::new();
    let first = script(
        &s,
        "ask.yaml",
        r#"
turns:
  - reply:
      tool_calls:
        - {id: q1, name: ask_user, arguments: {question: "Which format?", options: [csv, json]}}
"#,
    );
    let out = run(&s, &["run", "--model", &first, "export the report"]);
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("? Which format? [csv / json]"));
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let id = stderr
        .split("evoflux sessions resume ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .unwrap()
        .to_owned();
    assert_eq!(show(&s, &id)["pending_inputs"].as_array().unwrap().len(), 1);

    let second = script(
        &s,
        "answer.yaml",
        r#"
turns:
  - expect: {tool_result: "The user answered: json"}
    reply:
      text: Exported as JSON.
"#,
    );
    let out = run(
        &s,
        &[
            "--json", "sessions", "resume", &id, "--model", &second, "json",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ev = events(&out);
    assert_eq!(of_type(&ev, "session_started")[0]["resumed"], true);
    assert_eq!(
        of_type(&ev, "turn_completed")[0]["text"],
        "Exported as JSON."
    );
    assert!(
        show(&s, &id)["pending_inputs"]
            .as_array()
            .unwrap()
            .is_empty()
    );
}

#[test]
fn output_schema_rejects_a_wrong_result_and_prints_the_right_one() {
    let s = Sandbox::new();
    let schema = s.write(
        s.tmp.path().join("schema.json"),
        r#"{"type": "object", "properties": {"files": {"type": "integer"}}, "required": ["files"], "additionalProperties": false}"#,
    );
    let model = script(
        &s,
        "final.yaml",
        r#"
turns:
  - reply:
      tool_calls:
        - {name: final_output, arguments: {files: "two"}}
  - expect: {tool_result: {contains: "does not match the output schema"}}
    reply:
      tool_calls:
        - {name: final_output, arguments: {files: 2}}
"#,
    );
    let out = run(
        &s,
        &[
            "run",
            "--model",
            &model,
            "--output-schema",
            schema.to_str().unwrap(),
            "count",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(printed, serde_json::json!({"files": 2}));

    let bad = s.write(s.tmp.path().join("bad.json"), "{not json");
    let out = run(
        &s,
        &[
            "run",
            "--model",
            &model,
            "--output-schema",
            bad.to_str().unwrap(),
            "x",
        ],
    );
    // A schema that is not JSON is input to fix.
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("bad.json"));
}

#[test]
fn resuming_in_another_mode_is_refused() {
    let s = Sandbox::new();
    let model = script(&s, "hi.yaml", "turns:\n  - reply: {text: hi}\n");
    let out = run(
        &s,
        &[
            "--json", "run", "--mode", "coding", "--model", &model, "hello",
        ],
    );
    assert!(out.status.success());
    let id = session_id(&events(&out));
    let out = run(
        &s,
        &[
            "--json", "sessions", "resume", &id, "--mode", "work", "--model", &model, "again",
        ],
    );
    assert_eq!(out.status.code(), Some(3));
    let ev = events(&out);
    assert_eq!(of_type(&ev, "error")[0]["code"], "store/mode-mismatch");
    // Nothing was appended to the session.
    assert_eq!(show(&s, &id)["transcript"].as_array().unwrap().len(), 2);
}

#[test]
fn a_disabled_framework_tool_is_not_offered() {
    let s = Sandbox::new();
    s.project("tools/web_fetch.toml", "disable = true\n");
    s.trust();
    let model = script(&s, "hi.yaml", "turns:\n  - reply: {text: hi}\n");
    let out = run(&s, &["--json", "run", "--model", &model, "hello"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let started = &of_type(&events(&out), "session_started")[0].clone();
    let offered: Vec<&str> = started["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert!(
        offered.contains(&"read") && offered.contains(&"shell"),
        "{offered:?}"
    );
    assert!(!offered.contains(&"web_fetch"), "{offered:?}");
    let unavailable = started["unavailable_tools"].to_string();
    assert!(
        !unavailable.contains("web_fetch"),
        "a disabled tool is gone, not unavailable"
    );
}

#[test]
fn command_backed_project_tools_run_and_approval_is_denied_without_a_user() {
    let s = Sandbox::new();
    s.write(s.repo().join("notes.txt"), "one two three\n");
    s.project(
        "tools/count_words.toml",
        r#"description = "Count the words of a file."
argv = ["wc", "-w", "{{path}}"]
input_schema = { type = "object", properties = { path = { type = "string" } }, required = ["path"] }
"#,
    );
    s.project(
        "tools/deploy.toml",
        r#"description = "Deploy the site."
argv = ["echo", "deployed"]
approval = "always"
input_schema = { type = "object" }
"#,
    );
    s.trust();
    let model = script(
        &s,
        "tools.yaml",
        r#"
turns:
  - reply:
      tool_calls:
        - {name: count_words, arguments: {path: notes.txt}}
  - expect: {tool_result: {contains: "3 notes.txt"}}
    reply:
      tool_calls:
        - {name: deploy, arguments: {}}
  - expect: {tool_result: {contains: "needs the user's approval"}}
    reply: {text: "Counted; deploy needs approval."}
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
            "count and deploy",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ev = events(&out);
    let ended = of_type(&ev, "tool_ended");
    assert_eq!(ended[0]["tool"], "count_words");
    assert_eq!(ended[0]["metadata"]["status"], "succeeded");
    assert_eq!(ended[1]["is_error"], true);
    assert_eq!(of_type(&ev, "approval_requested").len(), 1);
}

#[test]
fn shell_metadata_is_the_same_live_and_reloaded() {
    let s = Sandbox::new();
    let model = script(
        &s,
        "shell.yaml",
        r#"
turns:
  - reply:
      tool_calls:
        - {name: shell, arguments: {command: "echo hello from shell; exit 3"}}
  - expect: {tool_result: {contains: "exit code 3"}}
    reply: {text: done}
"#,
    );
    let out = run(
        &s,
        &[
            "--json", "run", "--mode", "coding", "--model", &model, "run it",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ev = events(&out);
    let live = of_type(&ev, "tool_ended")[0].clone();
    assert_eq!(live["metadata"]["status"], "failed");
    assert_eq!(live["metadata"]["exit_code"], 3);
    let shown = show(&s, &session_id(&ev));
    let stored = shown["transcript"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["message"]["role"] == "tool")
        .unwrap()
        .clone();
    assert_eq!(stored["artifact"], live["metadata"]);
    assert_eq!(stored["message"]["content"], live["content"]);
    let artifact = std::path::PathBuf::from(live["metadata"]["artifact"].as_str().unwrap());
    assert_eq!(
        std::fs::read_to_string(artifact).unwrap(),
        "hello from shell\n"
    );
}

#[test]
fn a_notify_on_exit_command_wakes_the_turn() {
    let s = Sandbox::new();
    let model = script(
        &s,
        "notify.yaml",
        r#"
turns:
  - reply:
      tool_calls:
        - {name: shell, arguments: {command: "sleep 1; echo finished-now", yield_time_ms: 250, notify_on_exit: true}}
  - expect: {tool_result: {contains: "proc_"}}
    reply: {text: "Started; I will wait."}
  - expect: {user: {contains: "finished-now"}}
    reply: {text: "The build finished."}
"#,
    );
    let out = run(
        &s,
        &[
            "--json", "run", "--mode", "coding", "--model", &model, "build",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ev = events(&out);
    let ended = of_type(&ev, "command_ended");
    assert_eq!(ended.len(), 1);
    assert_eq!(ended[0]["metadata"]["status"], "succeeded");
    assert_eq!(
        of_type(&ev, "turn_completed")[0]["text"],
        "The build finished."
    );
}

#[test]
fn sigterm_stops_the_run_and_its_commands() {
    let s = Sandbox::new();
    let model = script(
        &s,
        "long.yaml",
        r#"
turns:
  - reply:
      tool_calls:
        - {name: shell, arguments: {command: "sleep 1000", yield_time_ms: 250}}
  - reply:
      tool_calls:
        - {name: process, arguments: {action: wait, process_id: "unused", wait_seconds: 60}}
  - reply:
      tool_calls:
        - {name: shell, arguments: {command: "sleep 1000"}}
"#,
    );
    let mut child = s
        .command(&[
            "--json", "run", "--mode", "coding", "--model", &model, "wait",
        ])
        .env("PATH", std::env::var("PATH").unwrap())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut pid = None;
    let mut lines = BufReader::new(stdout).lines();
    // The first tool_ended carries the pid of the yielded `sleep 1000`;
    // the third call then blocks for the default yield.
    for line in lines.by_ref() {
        let v: Value = serde_json::from_str(&line.unwrap()).unwrap();
        if v["type"] == "tool_ended" {
            pid = v["metadata"]["pid"].as_u64();
            break;
        }
    }
    let pid = pid.expect("the shell call reported its pid") as i32;
    assert!(std::path::Path::new(&format!("/proc/{pid}")).exists());
    // Signal only after the next model call's tool is running.
    for line in lines.by_ref() {
        let v: Value = serde_json::from_str(&line.unwrap()).unwrap();
        if v["type"] == "tool_started" && v["tool"] == "shell" {
            break;
        }
    }
    let status = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let exit = child.wait().unwrap();
    assert_eq!(exit.code(), Some(130));
    let gone = !std::path::Path::new(&format!("/proc/{pid}")).exists()
        || std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| s.contains(") Z "))
            .unwrap_or(true);
    assert!(gone, "the command's process {pid} survived evoflux");
}

/// The rmcp test server of `evoflux-mcp`, built beside `evoflux` by the
/// workspace's test build; `None`, with a note, otherwise.
fn mcp_test_server() -> Option<std::path::PathBuf> {
    let path = std::path::PathBuf::from(env!("CARGO_BIN_EXE_evoflux")).with_file_name(format!(
        "evoflux-mcp-testserver{}",
        std::env::consts::EXE_SUFFIX
    ));
    if path.is_file() {
        Some(path)
    } else {
        eprintln!("note: {} is not built; skipping", path.display());
        None
    }
}

/// The MCP tools a `session_started` event offers.
fn offered_mcp(started: &Value) -> Vec<String> {
    started["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t.as_str())
        .filter(|t| t.starts_with("mcp__"))
        .map(str::to_owned)
        .collect()
}

#[test]
fn granted_mcp_servers_are_awaited_at_start_and_a_turns_tools_hold_until_its_end() {
    let Some(bin) = mcp_test_server() else { return };
    let s = Sandbox::new();
    // `slow` takes 2 s to start; `never` never answers and may take 1 s;
    // `big` brings the granted tools to exactly the 40 sent up front (the
    // test server has 19 tools: twice that, and 2 fillers). The browser
    // counts in the same budget, so it is left out (no Chromium) to keep
    // the count exact wherever the test runs.
    let no_chromium = s.tmp.path().join("no-chromium-here");
    s.project(
        "mcp.json",
        &serde_json::json!({"mcpServers": {
            "slow": {"type": "stdio", "command": bin, "args": ["--start-delay-ms", "2000"]},
            "never": {
                "type": "stdio", "command": bin,
                "args": ["--start-delay-ms", "600000"], "startup_timeout_secs": 1
            },
            "big": {"type": "stdio", "command": bin, "args": ["--filler-tools", "2"]}
        }})
        .to_string(),
    );
    s.project(
        "agents/evoflux.md",
        "---\nrole: lead\nmcp: [slow, never, big]\n---\n",
    );
    s.trust();
    // The first model call uses the slow server's tool; `add_tool` takes
    // the granted tools past 40 mid-turn, and the turn's next call still
    // reaches a tool that is then over the budget.
    let model = script(
        &s,
        "startup.yaml",
        r#"
turns:
  - reply:
      tool_calls:
        - {name: mcp__slow__echo, arguments: {message: first step}}
  - expect: {tool_result: "Echo: first step"}
    reply:
      tool_calls:
        - {name: mcp__big__add_tool, arguments: {}}
  - expect: {tool_result: {contains: added dynamic_0}}
    reply:
      tool_calls:
        - {name: mcp__big__echo, arguments: {message: still here}}
  - expect: {tool_result: "Echo: still here"}
    reply: {text: done}
"#,
    );
    let out = s
        .command(&["--json", "run", "--model", &model, "go"])
        .env("PATH", std::env::var("PATH").unwrap())
        .env("EVOFLUX_CHROMIUM", &no_chromium)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let ev = events(&out);
    let started = of_type(&ev, "session_started")[0];
    let mcp = offered_mcp(started);
    assert_eq!(mcp.len(), 40, "{mcp:?}");
    assert!(mcp.contains(&"mcp__slow__echo".to_owned()));
    // The server that never started was reported, with its timeout, and
    // the run went on without it.
    let never: Vec<&Value> = of_type(&ev, "mcp_server")
        .into_iter()
        .filter(|e| e["server"] == "never")
        .collect();
    assert!(
        never.iter().any(|e| e["state"] == "failed"
            && e["error"]
                .as_str()
                .is_some_and(|m| m.contains("mcp/startup-timeout"))),
        "{never:?}"
    );
    let ended = of_type(&ev, "tool_ended");
    assert_eq!(ended.len(), 3);
    assert!(ended.iter().all(|e| e["is_error"] == false), "{ended:?}");
    assert!(of_type(&ev, "tools_activated").is_empty());

    // In a chat (one process, two turns), the crossing changes nothing in
    // its own turn; from the next one on, the tools the model was already
    // shown stay offered and callable, and the one added holds back for
    // `connection_search`.
    let model = script(
        &s,
        "chat.yaml",
        r#"
turns:
  - expect: {user: go}
    reply:
      tool_calls:
        - {name: mcp__big__add_tool, arguments: {}}
  - expect: {tool_result: {contains: added dynamic_0}}
    reply:
      tool_calls:
        - {name: mcp__big__echo, arguments: {message: same turn}}
  - expect: {tool_result: "Echo: same turn"}
    reply: {text: first done}
  - expect: {user: next}
    reply:
      tool_calls:
        - {name: mcp__big__echo, arguments: {message: next turn}}
  - expect: {tool_result: "Echo: next turn"}
    reply:
      tool_calls:
        - {name: mcp__big__dynamic_0, arguments: {}}
  - expect: {tool_result: {contains: not turned on yet}}
    reply: {text: held back now}
"#,
    );
    let mut child = s
        .command(&["chat", "--model", &model])
        .env("PATH", std::env::var("PATH").unwrap())
        .env("EVOFLUX_CHROMIUM", &no_chromium)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), b"go\nnext\n\n").unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("first done"), "{stdout}\n{stderr}");
    assert!(stdout.contains("held back now"), "{stdout}\n{stderr}");
}

#[test]
fn an_agent_granted_an_mcp_server_calls_its_tools_and_others_are_not_offered() {
    let Some(bin) = mcp_test_server() else { return };
    let s = Sandbox::new();
    s.project(
        "mcp.json",
        &serde_json::json!({"mcpServers": {
            "local": {"type": "stdio", "command": bin},
            "other": {"type": "stdio", "command": bin},
            "broken": {"type": "stdio", "command": "/nonexistent/server"}
        }})
        .to_string(),
    );
    // The Work lead is granted `local` and `broken`, not `other`.
    s.project(
        "agents/evoflux.md",
        "---\nrole: lead\nmcp: [local, broken]\n---\n",
    );
    s.trust();
    let model = script(
        &s,
        "mcp.yaml",
        r#"
turns:
  - reply:
      tool_calls:
        - {name: mcp__local__echo, arguments: {message: hi there}}
  - expect: {tool_result: "Echo: hi there"}
    reply:
      tool_calls:
        - {name: mcp__other__echo, arguments: {message: nope}}
  - expect: {tool_result: {contains: "no tool named `mcp__other__echo`"}}
    reply: {text: done}
"#,
    );
    let out = run(&s, &["--json", "run", "--model", &model, "echo"]);
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let ev = events(&out);
    let ended = of_type(&ev, "tool_ended");
    assert_eq!(ended[0]["tool"], "mcp__local__echo");
    assert_eq!(ended[0]["is_error"], false);
    assert_eq!(ended[1]["is_error"], true);
    // Server states are visible: the broken one is reported, not dropped.
    let states: Vec<(String, String)> = of_type(&ev, "mcp_server")
        .iter()
        .map(|e| {
            (
                e["server"].as_str().unwrap().to_owned(),
                e["state"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert!(
        states.contains(&("local".into(), "ready".into())),
        "{states:?}"
    );
    assert!(
        states.contains(&("broken".into(), "failed".into())),
        "{states:?}"
    );
    assert!(!states.iter().any(|(s, _)| s == "other"), "{states:?}");
}

#[test]
fn the_readme_scripted_demo_runs() {
    let s = Sandbox::new();
    s.write(
        s.repo().join("Cargo.toml"),
        "[workspace]\nmembers = [\"crates/*\"]\n",
    );
    let demo = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/scripted-demo.yaml"
    );
    let out = run(
        &s,
        &[
            "run",
            "--mode",
            "coding",
            "--model",
            &format!("scripted:{demo}"),
            "What is in this repository?",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("This is a Cargo workspace"));
}

#[test]
fn without_any_model_the_run_explains_the_three_ways_to_get_one() {
    let s = Sandbox::new();
    let out = run(&s, &["run", "hello"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("using the embedded local model"),
        "{stderr}"
    );
    assert!(stderr.contains("one of three ways"), "{stderr}");
}

#[cfg(unix)]
/// Links and enables the `demo` plugin: one stdio MCP server `svc` (the
/// test server) and one skill, `demo-echo`, that uses it.
pub(crate) fn link_demo_plugin(s: &Sandbox, bin: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt;
    let root = s.tmp.path().join("plugins/demo");
    s.write(
        root.join("plugin.json"),
        r#"{"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json", "name": "demo", "version": "1.0.0"}"#,
    );
    s.write(
        root.join("mcp.json"),
        r#"{"$schema": "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json", "mcpServers": {"svc": {"type": "stdio", "command": "./bin/server"}}}"#,
    );
    s.write(
        root.join("skills/demo-echo/SKILL.md"),
        "---\nname: demo-echo\ndescription: Echo messages through the demo service.\n---\nCall the demo service's echo tool.\n",
    );
    let server = s.write(
        root.join("bin/server"),
        &format!("#!/bin/sh\nexec '{}' \"$@\"\n", bin.display()),
    );
    std::fs::set_permissions(&server, std::fs::Permissions::from_mode(0o755)).unwrap();
    let linked = s.run(&["plugin", "link", root.to_str().unwrap(), "--enabled"]);
    assert!(
        linked.status.success(),
        "{}",
        String::from_utf8_lossy(&linked.stderr)
    );
}

#[test]
fn loading_a_plugin_skill_grants_that_plugins_mcp_tools() {
    let Some(bin) = mcp_test_server() else { return };
    let s = Sandbox::new();
    link_demo_plugin(&s, &bin);
    // The default lead would be granted the enabled plugin's servers by
    // `[mcp] default_grant`; with none, only the skill grants them.
    s.user("config.toml", "[mcp]\ndefault_grant = \"none\"\n");
    let model = script(
        &s,
        "plugin-skill.yaml",
        r#"
turns:
  - reply:
      tool_calls:
        - {name: mcp__demo_svc__echo, arguments: {message: too early}}
  - expect: {tool_result: {contains: "no tool named"}}
    reply:
      tool_calls:
        - {name: skill, arguments: {action: load, skill_name: demo-echo}}
  - expect: {tool_result: {contains: "Call the demo service"}}
    reply:
      tool_calls:
        - {name: mcp__demo_svc__echo, arguments: {message: granted}}
  - expect: {tool_result: "Echo: granted"}
    reply: {text: done}
"#,
    );
    let out = run(&s, &["--json", "run", "--model", &model, "echo"]);
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let ev = events(&out);
    let ended = of_type(&ev, "tool_ended");
    assert_eq!(
        ended[0]["is_error"], true,
        "installation alone grants nothing"
    );
    assert_eq!(ended[2]["tool"], "mcp__demo_svc__echo");
    assert_eq!(ended[2]["is_error"], false);
}

#[test]
fn an_agent_mcp_list_can_name_a_plugins_server_as_mcp_list_shows_it() {
    let Some(bin) = mcp_test_server() else { return };
    let s = Sandbox::new();
    link_demo_plugin(&s, &bin);
    let listed = s.json(&["--json", "mcp", "list"]);
    assert!(
        listed.to_string().contains("demo/svc"),
        "mcp list names the server demo/svc: {listed}"
    );
    s.project(
        "agents/echoer.md",
        "---\nrole: lead\ndescription: Echoes through the demo plugin's service.\nmcp: [demo/svc]\n---\nEcho.\n",
    );
    let model = script(
        &s,
        "plugin-server.yaml",
        r#"
turns:
  - reply:
      tool_calls:
        - {name: mcp__demo_svc__echo, arguments: {message: named}}
  - expect: {tool_result: "Echo: named"}
    reply: {text: done}
"#,
    );
    let out = run(
        &s,
        &[
            "--json", "run", "--lead", "echoer", "--model", &model, "echo",
        ],
    );
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let ev = events(&out);
    assert!(
        of_type(&ev, "mcp_server")
            .iter()
            .all(|e| e["state"] != "missing"),
        "{ev:?}"
    );
    let ended = of_type(&ev, "tool_ended");
    assert_eq!(ended[0]["tool"], "mcp__demo_svc__echo");
    assert_eq!(ended[0]["is_error"], false, "{:?}", ended[0]);
}

#[test]
fn chat_streams_approves_on_the_terminal_and_runs_bang_commands() {
    use std::io::Write;
    let s = Sandbox::new();
    s.project(
        "tools/deploy.toml",
        r#"description = "Deploy the site."
argv = ["echo", "deployed"]
approval = "always"
input_schema = { type = "object" }
"#,
    );
    s.trust();
    let model = script(
        &s,
        "chat.yaml",
        r#"
turns:
  - expect: {user: "please deploy"}
    reply:
      tool_calls:
        - {name: deploy, arguments: {}}
  - expect: {tool_result: {contains: deployed}}
    reply: {text: "Deployed."}
  - expect: {user: "what did I run?"}
    reply: {text: "I saw your command."}
"#,
    );
    let mut child = s
        .command(&["chat", "--mode", "coding", "--model", &model])
        .env("PATH", std::env::var("PATH").unwrap())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A message, the approval, a `!command`, a message about it, then an
    // empty line to end the chat.
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"please deploy\ny\n!echo from-the-user\nwhat did I run?\n\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stderr.contains("approve `deploy`"), "{stderr}");
    assert!(stdout.contains("Deployed."), "{stdout}");
    assert!(
        stdout.contains("from-the-user"),
        "the command's output is shown: {stdout}"
    );
    assert!(stdout.contains("I saw your command."), "{stdout}");
    assert!(stderr.contains("saved; continue it with `evoflux chat --session"));
    // The `!command` joined the conversation, with the shell's metadata.
    let list = s.json(&["--json", "sessions", "list"]);
    let id = list[0]["id"].as_str().unwrap().to_owned();
    let shown = show(&s, &id);
    let ran = shown["transcript"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| {
            e["message"]["content"]
                .as_str()
                .is_some_and(|c| c.contains("The user ran `echo from-the-user`"))
        })
        .expect("the user's command is in the transcript");
    assert_eq!(ran["artifact"]["status"], "succeeded");
}

#[test]
fn config_approval_guards_a_framework_tool_and_flags_a_misspelled_one() {
    let s = Sandbox::new();
    s.user(
        "config.toml",
        "[approval]\nshell = \"always\"\nshel = \"always\"\n",
    );
    let model = script(
        &s,
        "approve.yaml",
        r#"
turns:
  - reply:
      tool_calls:
        - {name: shell, arguments: {command: "touch should-not-run"}}
  - expect: {tool_result: {contains: "needs the user's approval"}}
    reply: {text: "I was not allowed to run it."}
"#,
    );
    let out = run(
        &s,
        &[
            "--json", "run", "--mode", "coding", "--model", &model, "run it",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ev = events(&out);
    assert_eq!(of_type(&ev, "approval_requested").len(), 1);
    let ended = of_type(&ev, "tool_ended");
    assert_eq!(ended[0]["is_error"], true);
    assert!(ended[0].get("metadata").is_none(), "nothing ran");
    assert_eq!(common::stderr_codes(&out), ["config/approval-tool-unknown"]);
}

#[test]
fn a_chat_applies_changed_sources_between_turns() {
    let s = Sandbox::new();
    let model = script(
        &s,
        "sources.yaml",
        r#"
turns:
  - expect: {user: one}
    reply: {text: First answer.}
  - expect: {user: two}
    reply: {text: Second answer.}
"#,
    );
    let mut child = s
        .command(&["chat", "--model", &model])
        .env("PATH", std::env::var("PATH").unwrap())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    std::io::Write::write_all(&mut stdin, b"one\n").unwrap();
    let mut line = String::new();
    while !line.contains("First answer.") {
        line.clear();
        assert_ne!(stdout.read_line(&mut line).unwrap(), 0, "the chat ended");
    }
    // A skill added between the turns applies from the next one.
    s.user(
        "skills/notes/SKILL.md",
        "---\nname: notes\ndescription: Keeps notes.\n---\nKeep notes.\n",
    );
    std::thread::sleep(std::time::Duration::from_millis(500));
    std::io::Write::write_all(&mut stdin, b"two\n\n").unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{rest}\n{stderr}");
    assert!(rest.contains("Second answer."), "{rest}\n{stderr}");
    assert!(
        stderr.contains("apply from this turn"),
        "the changed sources were not announced: {stderr}"
    );
    // Announced once, before the second turn.
    assert_eq!(
        stderr.matches("apply from this turn").count(),
        1,
        "{stderr}"
    );
}
