#![allow(clippy::unwrap_used, clippy::expect_used)]

//! Record, export, replay through the real binary: a scripted session is
//! exported as a script and replayed green in a fresh checkout; changing a
//! skill's body or a tool's description makes the replay report the
//! divergence at the right step with a diff naming where it is; a
//! credential value in a tool result never reaches the script. A session
//! recorded on a real provider (a loopback OpenAI-compatible server) replays
//! with the context window and resolver decisions it had; a member's
//! changed prompt is reported as that member's diff.

use crate::common;

use std::path::Path;
use std::process::Output;

use common::fake_model::FakeModel;
use common::{Sandbox, git_repo, run, run_in, run_ok, script, session_id};
use serde_json::Value;

const SKILL: &str = "---\nname: build-fixer\ndescription: Fix failing cargo builds.\n---\n# Build fixer\n\n## Steps\n\nFIXER-BODY: run cargo check first.\n";

const TOOL: &str = r#"description = "Count the words of a file."
argv = ["wc", "-w", "{{path}}"]
input_schema = { type = "object", properties = { path = { type = "string" } }, required = ["path"] }
"#;

fn report(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

#[test]
fn a_recorded_session_replays_green_and_a_changed_skill_or_tool_is_reported_with_a_diff() {
    let s = Sandbox::new();
    s.project("skills/build-fixer/SKILL.md", SKILL);
    s.project("tools/count_words.toml", TOOL);
    s.write(s.repo().join("notes.txt"), "one two three\n");
    git_repo(&s);
    s.trust();
    let model = script(
        &s,
        "record.yaml",
        r#"
turns:
  - reply:
      tool_calls:
        - {name: skill, arguments: {action: load, skill_name: build-fixer}}
  - reply:
      tool_calls:
        - {name: read, arguments: {path: notes.txt}}
  - reply:
      tool_calls:
        - {name: count_words, arguments: {path: notes.txt}}
  - reply: {text: "Three words."}
"#,
    );
    let ev = run_in(&s, "coding", &model, "count the words");
    let id = session_id(&ev);
    // A second turn of the same session, answered by another script.
    let more = script(
        &s,
        "more.yaml",
        "turns:\n  - reply: {text: \"Still three.\"}\n",
    );
    run_ok(
        &s,
        &[
            "--json", "sessions", "resume", &id, "and now?", "--model", &more,
        ],
    );

    let file = s.tmp.path().join("session.yaml");
    let file = file.to_str().unwrap();
    let exported = s.json(&["--json", "sessions", "export", &id, "--as-script", file]);
    assert_eq!(exported["steps"], 5);
    let text = std::fs::read_to_string(file).unwrap();
    // Paths are placeholders, and the recorded commit is there.
    assert!(
        !text.contains(s.repo().to_str().unwrap()) || text.contains("path:"),
        "{text}"
    );
    assert!(text.contains("${workspace}"), "{text}");
    assert!(text.contains("commit: "), "{text}");

    // Replayed as recorded: exit 0, every step matched, two turns.
    let out = run(&s, &["--json", "sessions", "replay", file]);
    let r = report(&out);
    assert!(out.status.success(), "{r}");
    assert_eq!(r["divergence"], Value::Null);
    assert_eq!(r["matched"], 5);
    assert_eq!(r["turns"], 2);
    // In a fresh checkout, not the user's repository.
    let ws = r["workspaces"][0].as_str().unwrap();
    assert_ne!(Path::new(ws), s.repo().canonicalize().unwrap());

    // The skill's body changes in the working tree (uncommitted): its
    // activation result, the second step's new message, diverges.
    s.project(
        "skills/build-fixer/SKILL.md",
        &SKILL.replace("cargo check first", "cargo clippy first"),
    );
    let out = run(&s, &["--json", "sessions", "replay", file]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let d = &report(&out)["divergence"];
    assert_eq!(d["step"], 2, "{d}");
    assert_eq!(d["part"], serde_json::json!({"input": {"index": 0}}));
    assert_eq!(d["session"], "lead");
    let diff = d["diff"].as_str().unwrap();
    assert!(
        diff.contains("-FIXER-BODY: run cargo check first."),
        "{diff}"
    );
    assert!(
        diff.contains("+FIXER-BODY: run cargo clippy first."),
        "{diff}"
    );
    assert!(
        diff.contains("<skill_content name=\"build-fixer\""),
        "{diff}"
    );
    // The human report says the same.
    let out = run(&s, &["sessions", "replay", file]);
    let human = String::from_utf8_lossy(&out.stdout);
    assert!(
        human.contains("replay diverged at step 2 of 5 (lead): new message 1"),
        "{human}"
    );

    // Back to the recorded skill; now a tool's description changes: the
    // first request's tool list diverges and the diff names the tool.
    s.project("skills/build-fixer/SKILL.md", SKILL);
    s.project(
        "tools/count_words.toml",
        &TOOL.replace(
            "Count the words of a file.",
            "Count words, lines and bytes.",
        ),
    );
    // A tool changed since trust waits for it; its owner trusts the change.
    s.trust();
    let out = run(&s, &["--json", "sessions", "replay", file]);
    assert_eq!(out.status.code(), Some(1));
    let d = &report(&out)["divergence"];
    assert_eq!(d["step"], 1, "{d}");
    assert_eq!(d["part"], "tool_list");
    let diff = d["diff"].as_str().unwrap();
    assert!(diff.contains("tool count_words"), "{diff}");
    assert!(diff.contains("-  | Count the words of a file."), "{diff}");
    assert!(
        diff.contains("+  | Count words, lines and bytes."),
        "{diff}"
    );
}

#[test]
fn a_team_session_exports_its_children_and_replays_in_a_fresh_work_folder() {
    let s = Sandbox::new();
    s.project(
        "agents/mine.md",
        "---\nrole: member\ndescription: Mine.\n---\nMine.\n",
    );
    let lead = script(
        &s,
        "lead.yaml",
        r#"
turns:
  - reply:
      tool_calls:
        - {name: write, arguments: {path: plan.md, content: "step one\n"}}
  - reply:
      tool_calls:
        - {name: agent, arguments: {agent_id: mine, message: "do it"}}
  - expect: {user: {contains: "do it"}}
    reply:
      tool_calls:
        - {name: read, arguments: {path: plan.md}}
  - reply: {text: "mine did step one"}
  - expect: {tool_result: {contains: "mine did step one"}}
    reply: {text: "done"}
"#,
    );
    let ev = run_ok(&s, &["--json", "run", "--model", &lead, "go"]);
    let id = session_id(&ev);
    let file = s.tmp.path().join("team.yaml");
    let file = file.to_str().unwrap();
    let exported = s.json(&["--json", "sessions", "export", &id, "--as-script", file]);
    assert_eq!(exported["steps"], 5);
    let text = std::fs::read_to_string(file).unwrap();
    assert!(text.contains("session: child1 (mine)"), "{text}");
    let turns = &text[text.find("\nturns:").unwrap()..];
    assert!(
        !turns.contains(&id),
        "the session id is a placeholder: {turns}"
    );
    let out = run(&s, &["--json", "sessions", "replay", file]);
    let r = report(&out);
    assert!(
        out.status.success(),
        "{r}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(r["matched"], 5);
}

#[test]
fn export_redacts_a_credential_value_that_appeared_in_a_tool_result() {
    let s = Sandbox::new();
    let secret = "sk-test-0123456789abcdef";
    s.write(s.repo().join("leak.txt"), &format!("token={secret}\n"));
    let model = script(
        &s,
        "leak.yaml",
        r#"
turns:
  - reply:
      tool_calls:
        - {name: read, arguments: {path: leak.txt}}
  - reply: {text: "read it"}
"#,
    );
    let out = s
        .command(&[
            "--json",
            "run",
            "--mode",
            "coding",
            "--model",
            &model,
            "read the file",
        ])
        .env("PATH", std::env::var("PATH").unwrap())
        .env("EXAMPLE_API_KEY", secret)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let id = session_id(&common::events(&out));
    let file = s.tmp.path().join("leak-export.yaml");
    let out = s
        .command(&[
            "--json",
            "sessions",
            "export",
            &id,
            "--as-script",
            file.to_str().unwrap(),
        ])
        .env("EXAMPLE_API_KEY", secret)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = report(&out);
    assert_eq!(r["redacted"][0]["name"], "EXAMPLE_API_KEY", "{r}");
    assert_eq!(r["redacted"][0]["step"], 2);
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(!text.contains(secret), "{text}");
    assert!(text.contains("[redacted: EXAMPLE_API_KEY]"), "{text}");
}

#[test]
fn bad_inputs_are_refused_with_codes() {
    let s = Sandbox::new();
    // A hand-written script is not an export.
    let plain = s.write(
        s.tmp.path().join("plain.yaml"),
        "turns:\n  - reply: {text: hi}\n",
    );
    let out = run(&s, &["sessions", "replay", plain.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("[replay/not-exported]"));
    // An unknown session.
    let out = run(
        &s,
        &[
            "sessions",
            "export",
            "01900000-0000-7000-8000-000000000000",
            "--as-script",
            "x.yaml",
        ],
    );
    assert_eq!(out.status.code(), Some(3));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("session-not-found"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_turn_that_had_to_end_in_a_structured_result_replays_with_its_schema() {
    let s = Sandbox::new();
    let schema = s.write(
        s.tmp.path().join("schema.json"),
        r#"{"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}"#,
    );
    let model = script(
        &s,
        "structured.yaml",
        "turns:\n  - reply:\n      tool_calls:\n        - {name: final_output, arguments: {answer: \"42\"}}\n",
    );
    let out = run(
        &s,
        &[
            "--json",
            "run",
            "--model",
            &model,
            "--output-schema",
            schema.to_str().unwrap(),
            "answer",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let id = session_id(&common::events(&out));
    let file = s.tmp.path().join("structured-export.yaml");
    let file = file.to_str().unwrap();
    s.json(&["--json", "sessions", "export", &id, "--as-script", file]);
    let out = run(&s, &["--json", "sessions", "replay", file]);
    let r = report(&out);
    assert!(out.status.success(), "{r}");
    assert_eq!(r["matched"], 1);
}

#[test]
fn export_redacts_a_plugin_credential() {
    let s = Sandbox::new();
    let root = s.tmp.path().join("svc");
    s.write(
        root.join("plugin.json"),
        &serde_json::json!({
            "$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
            "name": "svc",
            "extensions": {"org.evoelsewhere.evoflux.credentials": {"fields": [
                {"key": "token", "label": "API token", "type": "secret", "env": "SERVICE_CREDENTIAL", "required": true}
            ]}}
        })
        .to_string(),
    );
    let installed = s.json(&["--json", "plugin", "install", root.to_str().unwrap()]);
    let id = installed["installation"]["id"].as_str().unwrap().to_owned();
    let secret = "tok-0123-plugin-SECRET";
    s.json(&[
        "--json",
        "plugin",
        "credentials",
        &id,
        "set",
        &format!("token={secret}"),
    ]);
    s.write(
        s.repo().join("pasted.txt"),
        &format!("the token is {secret}\n"),
    );
    let model = script(
        &s,
        "paste.yaml",
        "turns:\n  - reply:\n      tool_calls:\n        - {name: read, arguments: {path: pasted.txt}}\n  - reply: {text: seen}\n",
    );
    let ev = run_in(&s, "coding", &model, "look");
    let id = session_id(&ev);
    let file = s.tmp.path().join("paste-export.yaml");
    let r = s.json(&[
        "--json",
        "sessions",
        "export",
        &id,
        "--as-script",
        file.to_str().unwrap(),
    ]);
    assert_eq!(
        r["redacted"][0]["name"], "plugin svc credential token",
        "{r}"
    );
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(!text.contains(secret), "{text}");
}

#[test]
fn a_script_naming_a_url_a_bad_commit_or_placeholder_is_refused() {
    let s = Sandbox::new();
    s.write(s.repo().join("a.txt"), "a\n");
    git_repo(&s);
    let model = script(&s, "one.yaml", "turns:\n  - reply: {text: ok}\n");
    let ev = run_in(&s, "coding", &model, "hi");
    let id = session_id(&ev);
    let file = s.tmp.path().join("one-export.yaml");
    s.json(&[
        "--json",
        "sessions",
        "export",
        &id,
        "--as-script",
        file.to_str().unwrap(),
    ]);
    let text = std::fs::read_to_string(&file).unwrap();
    let repo = s.repo().canonicalize().unwrap();
    let repo = repo.to_str().unwrap();
    let commit_line = text
        .lines()
        .find(|l| l.trim_start().starts_with("commit: "))
        .unwrap();
    for (name, edited) in [
        (
            "url",
            text.replace(&format!("path: {repo}"), "path: https://example.com/x.git"),
        ),
        (
            "commit",
            text.replace(commit_line, "    commit: --upload-pack=touch"),
        ),
        (
            "placeholder",
            text.replace("placeholder: ${workspace}", "placeholder: ''"),
        ),
    ] {
        assert_ne!(edited, text, "{name}");
        let f = s.tmp.path().join(format!("{name}.yaml"));
        std::fs::write(&f, edited).unwrap();
        let out = run(&s, &["sessions", "replay", f.to_str().unwrap()]);
        assert_eq!(
            out.status.code(),
            Some(3),
            "{name}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("[replay/not-exported]"),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// The fake server's answer: the skill resolver's question (its system
/// prompt names the stage) gets a decision loading `build-fixer`, every
/// other request "done".
fn resolves_build_fixer(body: &Value) -> String {
    let system = body["messages"][0]["content"].as_str().unwrap_or_default();
    if system.contains("skill-resolution stage") {
        r#"{"skill_name": "build-fixer", "confidence": 0.95, "reason": "a build to fix"}"#
            .to_owned()
    } else {
        "done".to_owned()
    }
}

#[test]
fn a_session_recorded_on_a_provider_with_a_context_window_replays_exactly() {
    let fake = FakeModel::answering(resolves_build_fixer);
    let s = Sandbox::new();
    s.project("skills/build-fixer/SKILL.md", SKILL);
    // A small window: the skill catalog gets 8% of it, far less than a
    // provider with no known window gets.
    s.user(
        "config.toml",
        &format!(
            "[providers.fake]\nkind = \"openai\"\nbase_url = \"{}\"\ncontext_window = 3000\n",
            fake.url
        ),
    );
    git_repo(&s);
    s.trust();
    let ev = run_in(&s, "coding", "fake:m", "the build is broken");
    let id = session_id(&ev);
    let file = s.tmp.path().join("real.yaml");
    let file = file.to_str().unwrap();
    let exported = s.json(&["--json", "sessions", "export", &id, "--as-script", file]);
    assert_eq!(exported["steps"], 1);
    let text = std::fs::read_to_string(file).unwrap();
    // What shaped the prompt is in the script.
    for fact in [
        "context_window: 3000",
        "catalog_budget_bytes: 240",
        "resolver: speculative",
        "resolved: build-fixer",
        "model: fake:m",
    ] {
        assert!(text.contains(fact), "{fact}: {text}");
    }
    // The recorded prompt carried the resolver's load of the skill.
    assert!(text.contains("FIXER-BODY"), "{text}");

    // Replayed with the recorded window and decision: the catalog and the
    // loaded skill are as recorded, and no real model is asked.
    fake.take();
    let out = run(&s, &["--json", "sessions", "replay", file]);
    let r = report(&out);
    assert!(
        out.status.success(),
        "{r}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(r["divergence"], Value::Null);
    assert_eq!(r["matched"], 1);
    assert_eq!(fake.take(), Vec::<String>::new());
}

#[test]
fn a_member_s_changed_prompt_is_reported_as_that_member_s_diff() {
    let s = Sandbox::new();
    let member = "---\nrole: member\ndescription: Mine.\n---\nMINE-PROMPT: read the plan first.\n";
    s.project("agents/mine.md", member);
    let lead = script(
        &s,
        "lead.yaml",
        r#"
turns:
  - reply:
      tool_calls:
        - {name: agent, arguments: {agent_id: mine, message: "do it"}}
  - expect: {user: {contains: "do it"}}
    reply: {text: "mine did it"}
  - expect: {tool_result: {contains: "mine did it"}}
    reply: {text: "done"}
"#,
    );
    let ev = run_ok(&s, &["--json", "run", "--model", &lead, "go"]);
    let id = session_id(&ev);
    let file = s.tmp.path().join("team-prompt.yaml");
    let file = file.to_str().unwrap();
    s.json(&["--json", "sessions", "export", &id, "--as-script", file]);

    // The member's own prompt changes: its call, step 2, diverges, and
    // the diff is of its prompt, not of the lead's next request.
    s.project(
        "agents/mine.md",
        &member.replace("read the plan first", "write the plan first"),
    );
    let out = run(&s, &["--json", "sessions", "replay", file]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let d = &report(&out)["divergence"];
    assert_eq!(d["step"], 2, "{d}");
    assert_eq!(d["session"], "child1 (mine)", "{d}");
    assert_eq!(d["part"], "system_prompt", "{d}");
    let diff = d["diff"].as_str().unwrap();
    assert!(
        diff.contains("-MINE-PROMPT: read the plan first."),
        "{diff}"
    );
    assert!(
        diff.contains("+MINE-PROMPT: write the plan first."),
        "{diff}"
    );
    // That one line is all that changed: the diff is not of the lead's.
    let changed = diff
        .lines()
        .filter(|l| {
            (l.starts_with('+') || l.starts_with('-'))
                && !l.starts_with("+++")
                && !l.starts_with("---")
        })
        .count();
    assert_eq!(changed, 2, "{diff}");
}
