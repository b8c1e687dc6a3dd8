#![allow(clippy::unwrap_used, clippy::expect_used)]

//! Approvals people can live with, through the real binary: "always for
//! this session" and "always in this workspace" answers in chat, safe
//! read-only commands that never ask, and an on-request escalation out of
//! the sandbox that covers exactly one command.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::{Sandbox, chat, events, of_type, run, run_ok, script};

fn asked(out: &Output, tool: &str) -> usize {
    String::from_utf8_lossy(&out.stderr)
        .matches(&format!("approve `{tool}`"))
        .count()
}

fn shell_turn(command: &str, expect: &str) -> String {
    let call = serde_json::json!({"name": "shell", "arguments": {"command": command}});
    format!(
        "  - reply:\n      tool_calls:\n        - {call}\n  - expect: {{tool_result: {{contains: \"{expect}\"}}}}\n    reply: {{text: ok}}\n"
    )
}

#[test]
fn always_for_this_session_is_not_asked_again_in_it_and_is_in_the_next() {
    let s = Sandbox::new();
    s.user("config.toml", "[approval]\nshell = \"always\"\n");
    let model = script(
        &s,
        "session.yaml",
        &format!(
            "turns:\n{}{}",
            shell_turn("touch one.txt", "Succeeded"),
            shell_turn("touch two.txt", "Succeeded")
        ),
    );
    // Answer "s" once; the second `touch` is not asked.
    let out = chat(&s, &model, "first\ns\nsecond\n\n");
    assert_eq!(asked(&out, "shell"), 1);
    assert!(s.repo().join("two.txt").exists());

    // A new session asks again (and is denied).
    let model = script(
        &s,
        "next.yaml",
        &format!("turns:\n{}", shell_turn("touch three.txt", "denied")),
    );
    let out = chat(&s, &model, "third\nn\n\n");
    assert_eq!(asked(&out, "shell"), 1);
    assert!(!s.repo().join("three.txt").exists());
}

#[test]
fn always_in_this_workspace_carries_to_the_next_session() {
    let s = Sandbox::new();
    s.user("config.toml", "[approval]\nshell = \"always\"\n");
    let model = script(
        &s,
        "a.yaml",
        &format!("turns:\n{}", shell_turn("touch a.txt", "Succeeded")),
    );
    let out = chat(&s, &model, "go\nw\n\n");
    assert_eq!(asked(&out, "shell"), 1);
    let model = script(
        &s,
        "b.yaml",
        &format!("turns:\n{}", shell_turn("touch b.txt", "Succeeded")),
    );
    let out = chat(&s, &model, "again\n\n");
    assert_eq!(asked(&out, "shell"), 0);
    assert!(s.repo().join("b.txt").exists());
}

#[test]
fn a_safe_read_only_command_never_asks() {
    let s = Sandbox::new();
    s.user("config.toml", "[approval]\nshell = \"always\"\n");
    s.write(s.repo().join("notes.txt"), "hello notes\n");
    let cat = serde_json::json!({"name": "shell", "arguments": {"command": "cat notes.txt"}});
    let touch = serde_json::json!({"name": "shell", "arguments": {"command": "touch x.txt"}});
    let model = script(
        &s,
        "safe.yaml",
        &format!(
            "turns:\n  - reply:\n      tool_calls:\n        - {cat}\n  - expect: {{tool_result: {{contains: hello notes}}}}\n    reply:\n      tool_calls:\n        - {touch}\n  - expect: {{tool_result: {{contains: \"needs the user's approval\"}}}}\n    reply: {{text: ok}}\n"
        ),
    );
    let ev = run_ok(
        &s,
        &["--json", "run", "--mode", "coding", "--model", &model, "go"],
    );
    let requested: Vec<_> = of_type(&ev, "approval_requested");
    assert_eq!(requested.len(), 1, "only the touch is asked: {requested:?}");
}

/// A fresh directory outside every temporary directory.
fn outside_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("approval-tests")
        .join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn an_on_request_escalation_is_asked_and_honoured_for_exactly_one_command() {
    let s = Sandbox::new();
    s.user("config.toml", "[approval]\nshell = \"on-request\"\n");
    let outside = outside_dir("escalate");
    let escalated = serde_json::json!({"name": "shell", "arguments": {
        "command": format!("echo out > {}/a.txt && echo wrote-a", outside.display()),
        "outside_sandbox": true,
        "justification": "The build cache lives outside the workspace."
    }});
    let model = script(
        &s,
        "escalate.yaml",
        &format!(
            "turns:\n  - reply:\n      tool_calls:\n        - {escalated}\n  - expect: {{tool_result: {{contains: wrote-a}}}}\n    reply: {{text: ok}}\n{}",
            shell_turn(
                &format!("echo out > {}/b.txt || echo refused-b", outside.display()),
                "refused-b"
            )
        ),
    );
    let out = chat(&s, &model, "escalate\ny\nagain\n\n");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("OUTSIDE the sandbox"), "{stderr}");
    assert!(stderr.contains("The build cache lives outside"), "{stderr}");
    assert!(outside.join("a.txt").exists());
    assert!(!outside.join("b.txt").exists());

    // Non-interactive, the escalation is denied with a reason the model reads.
    let model = script(
        &s,
        "denied.yaml",
        &format!(
            "turns:\n  - reply:\n      tool_calls:\n        - {escalated}\n  - expect: {{tool_result: {{contains: \"needs the user's approval\"}}}}\n    reply: {{text: ok}}\n"
        ),
    );
    std::fs::remove_file(outside.join("a.txt")).unwrap();
    let out = run(
        &s,
        &["--json", "run", "--mode", "coding", "--model", &model, "go"],
    );
    assert!(out.status.success());
    let ev = events(&out);
    assert_eq!(
        of_type(&ev, "approval_requested")[0]["outside_sandbox"],
        "The build cache lives outside the workspace."
    );
    assert!(!outside.join("a.txt").exists());

    // With the default policy (never ask), leaving the sandbox is refused.
    s.user("config.toml", "");
    let model = script(
        &s,
        "never.yaml",
        &format!(
            "turns:\n  - reply:\n      tool_calls:\n        - {escalated}\n  - expect: {{tool_result: {{contains: on-request}}}}\n    reply: {{text: ok}}\n"
        ),
    );
    let out = run(
        &s,
        &["--json", "run", "--mode", "coding", "--model", &model, "go"],
    );
    assert!(out.status.success());
    assert!(!outside.join("a.txt").exists());
}

#[test]
fn the_user_can_allow_a_change_to_the_agents_controls_which_applies_next_session() {
    let s = Sandbox::new();
    let write = serde_json::json!({"name": "write", "arguments": {
        "path": ".evoflux/agents/helper.md",
        "content": "---\nrole: member\ndescription: Helps.\n---\nHelp.\n"
    }});
    let turns = |expect: &str| {
        format!(
            "turns:\n  - reply:\n      tool_calls:\n        - {write}\n  - expect: {{tool_result: {{contains: \"{expect}\"}}}}\n    reply: {{text: ok}}\n"
        )
    };
    // Refused when the user says no (and in any non-interactive run).
    let model = script(&s, "no.yaml", &turns("read-only to its file tools"));
    let out = chat(&s, &model, "add an agent\nn\n\n");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("takes effect from the next session"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!s.repo().join(".evoflux/agents/helper.md").exists());
    // Allowed once: written, and the result says when it applies.
    let model = script(&s, "yes.yaml", &turns("takes effect from the next session"));
    chat(&s, &model, "add an agent\ny\n\n");
    assert!(s.repo().join(".evoflux/agents/helper.md").exists());
    let agents = s.json(&["--json", "agents", "list", "--mode", "work"]);
    assert!(agents.to_string().contains("helper"), "{agents}");
}
