#![allow(clippy::unwrap_used, clippy::expect_used)]

//! Limits that tell the truth: an oversized source file is refused by
//! name, as SKILL.md is, and a flood of diagnostics is summarized.

use crate::common;

use common::Sandbox;

#[test]
fn an_agent_file_over_the_source_limit_is_refused_by_name() {
    let s = Sandbox::new();
    let body = "Be thorough. ".repeat(60_000);
    let file = s.user(
        "agents/huge.md",
        &format!("---\nname: huge\nrole: member\ndescription: Too long.\n---\n{body}\n"),
    );
    let out = s.run(&["--json", "info"]);
    let info: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let items = info["diagnostics"]["items"].as_array().unwrap();
    let refused = items
        .iter()
        .find(|d| d["code"] == "compile/file-too-large")
        .unwrap_or_else(|| panic!("{items:#?}"));
    assert_eq!(refused["locator"]["file"], file.to_str().unwrap());
}

#[test]
fn ten_thousand_unknown_config_keys_are_summarized_not_printed_whole() {
    let s = Sandbox::new();
    let keys: String = (0..10_000).map(|i| format!("unknown_{i} = 1\n")).collect();
    s.user("config.toml", &keys);
    let out = s.run(&["config", "check"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.lines().count() < 300,
        "{} lines",
        stderr.lines().count()
    );
    assert!(stderr.contains("more not shown"), "{stderr}");
    assert!(stderr.contains("config/unknown-key"), "{stderr}");
    // Every one is still in the machine-readable form.
    let json: serde_json::Value =
        serde_json::from_slice(&s.run(&["--json", "config", "check"]).stdout).unwrap();
    let listed = json["diagnostics"].as_array().unwrap();
    assert_eq!(
        listed
            .iter()
            .filter(|d| d["code"] == "config/unknown-key")
            .count(),
        10_000
    );
}

#[test]
fn a_request_far_past_the_context_window_is_refused_not_sent() {
    let s = Sandbox::new();
    s.user(
        "config.toml",
        "[providers.scripted]\nkind = \"scripted\"\ncontext_window = 2000\n",
    );
    // A script that would answer: reaching it would mean the request was sent.
    let model = common::script(&s, "answer.yaml", "turns:\n  - reply: {text: sent}\n");
    let huge = "word ".repeat(12_000);
    let out = s.run(&["--json", "run", "--model", &model, &huge]);
    assert!(!out.status.success());
    let events = common::events(&out);
    let codes: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "error")
        .filter_map(|e| e["code"].as_str())
        .collect();
    assert_eq!(codes, ["model/request-exceeds-context"], "{events:#?}");
    assert!(
        !events.iter().any(|e| e["type"] == "message_delta"),
        "the model was called"
    );
}
