//! `[mcp] default_grant` end to end: each mode's default lead uses the
//! MCP servers the user configured without an agent file naming them, a
//! setting or an agent's own `mcp:` list narrows that, and `doctor` says
//! which agent can use which server and why. Real server processes (the
//! rmcp test server, `evoflux-mcp-testserver`) and the scripted model.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{Sandbox, events, json, of_type, run, script};
use serde_json::{Value, json};

/// The user's own `mcp.json` with the test server as each of `names`.
fn user_servers(s: &Sandbox, bin: &std::path::Path, names: &[&str]) {
    let servers: serde_json::Map<String, Value> = names
        .iter()
        .map(|n| ((*n).to_owned(), json!({"type": "stdio", "command": bin})))
        .collect();
    s.user("mcp.json", &json!({ "mcpServers": servers }).to_string());
}

/// A run whose first step calls `tool` with `message`, then ends.
fn call_first(s: &Sandbox, mode: &str, tool: &str, expect: &str) -> Vec<Value> {
    let model = script(
        s,
        &format!("{mode}-{tool}.yaml"),
        &format!(
            r#"
turns:
  - reply:
      tool_calls:
        - {{name: {tool}, arguments: {{message: first step}}}}
  - expect: {{tool_result: {{contains: "{expect}"}}}}
    reply: {{text: done}}
"#
        ),
    );
    let out = run(
        s,
        &["--json", "run", "--mode", mode, "--model", &model, "go"],
    );
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    events(&out)
}

/// The `mcp__*` tools the session offered at its start.
fn offered_mcp(ev: &[Value]) -> Vec<String> {
    of_type(ev, "session_started")[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t.as_str())
        .filter(|t| t.starts_with("mcp__"))
        .map(str::to_owned)
        .collect()
}

fn ended(ev: &[Value]) -> &Value {
    of_type(ev, "tool_ended")[0]
}

#[test]
fn the_default_lead_calls_a_user_servers_tool_on_its_first_step() {
    let Some(bin) = common::mcp_test_server() else {
        return;
    };
    let s = Sandbox::new();
    user_servers(&s, &bin, &["local"]);
    for mode in ["work", "coding"] {
        let ev = call_first(&s, mode, "mcp__local__echo", "Echo: first step");
        assert_eq!(ended(&ev)["tool"], "mcp__local__echo");
        assert_eq!(ended(&ev)["is_error"], false, "{mode}: {:?}", ended(&ev));
        assert!(offered_mcp(&ev).contains(&"mcp__local__echo".to_owned()));
    }
}

#[cfg(unix)]
#[test]
fn an_enabled_plugins_servers_are_the_default_leads_too() {
    let Some(bin) = common::mcp_test_server() else {
        return;
    };
    let s = Sandbox::new();
    crate::run::link_demo_plugin(&s, &bin);
    let ev = call_first(&s, "work", "mcp__demo_svc__echo", "Echo: first step");
    assert_eq!(ended(&ev)["is_error"], false, "{:?}", ended(&ev));
}

#[test]
fn none_grants_nothing_and_a_list_grants_only_its_servers() {
    let Some(bin) = common::mcp_test_server() else {
        return;
    };
    let s = Sandbox::new();
    user_servers(&s, &bin, &["local", "other"]);
    s.user("config.toml", "[mcp]\ndefault_grant = \"none\"\n");
    let ev = call_first(&s, "work", "mcp__local__echo", "no tool named");
    assert_eq!(ended(&ev)["is_error"], true);
    assert!(offered_mcp(&ev).is_empty(), "{:?}", offered_mcp(&ev));
    assert!(of_type(&ev, "mcp_server").is_empty(), "nothing starts");

    s.user("config.toml", "[mcp]\ndefault_grant = [\"other\"]\n");
    let ev = call_first(&s, "coding", "mcp__other__echo", "Echo: first step");
    assert_eq!(ended(&ev)["is_error"], false, "{:?}", ended(&ev));
    let offered = offered_mcp(&ev);
    assert!(
        offered.iter().all(|t| t.starts_with("mcp__other__")),
        "{offered:?}"
    );
    let ev = call_first(&s, "coding", "mcp__local__echo", "no tool named");
    assert_eq!(ended(&ev)["is_error"], true);
}

#[test]
fn an_agent_files_own_list_is_kept_exactly() {
    let Some(bin) = common::mcp_test_server() else {
        return;
    };
    let s = Sandbox::new();
    user_servers(&s, &bin, &["local", "other"]);
    // The Work default lead lists none; the Coding one lists `other`.
    s.user("agents/evoflux.md", "---\nrole: lead\nmcp: []\n---\n");
    s.user(
        "agents/coding/evoflux.md",
        "---\nrole: lead\nmcp: [other]\n---\n",
    );
    let ev = call_first(&s, "work", "mcp__local__echo", "no tool named");
    assert!(offered_mcp(&ev).is_empty(), "{:?}", offered_mcp(&ev));
    let ev = call_first(&s, "coding", "mcp__local__echo", "no tool named");
    assert_eq!(ended(&ev)["is_error"], true);
    assert!(
        offered_mcp(&ev)
            .iter()
            .all(|t| t.starts_with("mcp__other__")),
        "{:?}",
        offered_mcp(&ev)
    );
}

#[test]
fn an_untrusted_repositorys_servers_are_not_granted() {
    let Some(bin) = common::mcp_test_server() else {
        return;
    };
    let s = Sandbox::new();
    s.write(
        s.repo().join(".mcp.json"),
        &json!({"mcpServers": {"repo": {"command": bin}}}).to_string(),
    );
    let ev = call_first(&s, "coding", "mcp__repo__echo", "no tool named");
    assert_eq!(ended(&ev)["is_error"], true);
    // Trusted, the same file's server is the default lead's.
    s.trust();
    let ev = call_first(&s, "coding", "mcp__repo__echo", "Echo: first step");
    assert_eq!(ended(&ev)["is_error"], false, "{:?}", ended(&ev));
}

fn doctor_mcp(s: &Sandbox) -> (Value, String) {
    let mut cmd = s.command(&["doctor", "--json", "--mcp-wait", "20"]);
    cmd.env("PATH", std::env::var("PATH").unwrap());
    let report = json(&cmd.output().unwrap());
    let mcp = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == "mcp")
        .unwrap()
        .clone();
    let mut cmd = s.command(&["doctor", "--mcp-wait", "20"]);
    cmd.env("PATH", std::env::var("PATH").unwrap());
    let text = String::from_utf8_lossy(&cmd.output().unwrap().stdout).into_owned();
    (mcp, text)
}

/// The reason `agent` has for `server` in doctor's JSON.
fn reason<'a>(mcp: &'a Value, server: &str, agent: &str) -> Option<&'a Value> {
    mcp["grants"]
        .as_array()?
        .iter()
        .find(|g| g["server"] == server)?["agents"]
        .as_array()?
        .iter()
        .find(|a| a["agent"] == agent)
}

#[test]
fn doctor_says_which_agent_can_use_which_server_and_why() {
    let Some(bin) = common::mcp_test_server() else {
        return;
    };
    let s = Sandbox::new();
    user_servers(&s, &bin, &["local", "other"]);
    s.user(
        "agents/coding/reviewer.md",
        "---\ndescription: Reviews.\nmcp: [other]\n---\n",
    );
    let (mcp, text) = doctor_mcp(&s);
    let lead = reason(&mcp, "local", "evoflux").unwrap();
    assert_eq!(lead["granted"], true);
    assert_eq!(lead["reason"]["kind"], "default-grant");
    assert_eq!(lead["reason"]["setting"], "all");
    assert_eq!(
        reason(&mcp, "local", "coding/evoflux").unwrap()["reason"]["kind"],
        "default-grant"
    );
    let member = reason(&mcp, "other", "coding/reviewer").unwrap();
    assert_eq!(member["reason"]["kind"], "agent-file");
    assert_eq!(member["reason"]["mcp"], json!(["other"]));
    assert!(reason(&mcp, "local", "coding/reviewer").is_none());
    assert!(
        text.contains(
            "local: coding/evoflux can use it: default grant ([mcp] default_grant = \"all\")"
        ),
        "{text}"
    );
    assert!(
        text.contains("other: coding/reviewer can use it: agent file mcp: [other]"),
        "{text}"
    );

    // Not granted, saying by what; a name no server has is a warning.
    s.user("config.toml", "[mcp]\ndefault_grant = \"none\"\n");
    let (mcp, text) = doctor_mcp(&s);
    let lead = reason(&mcp, "local", "evoflux").unwrap();
    assert_eq!(lead["granted"], false);
    assert_eq!(lead["reason"]["kind"], "not-granted");
    assert!(
        text.contains("local: evoflux cannot use it: not granted: [mcp] default_grant = \"none\""),
        "{text}"
    );
    s.user(
        "config.toml",
        "[mcp]\ndefault_grant = [\"local\", \"nope\"]\n",
    );
    let (mcp, _) = doctor_mcp(&s);
    let finding = mcp["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "mcp/default-grant-unknown")
        .unwrap_or_else(|| panic!("{mcp}"));
    assert!(
        finding["locator"]["file"]
            .as_str()
            .unwrap()
            .ends_with("config.toml"),
        "{finding}"
    );
    assert_eq!(reason(&mcp, "other", "evoflux").unwrap()["granted"], false);
    assert_eq!(reason(&mcp, "local", "evoflux").unwrap()["granted"], true);
}

#[test]
fn a_bad_default_grant_is_refused_naming_the_file_and_value() {
    let s = Sandbox::new();
    s.user("config.toml", "[mcp]\ndefault_grant = \"some\"\n");
    let out = s.run(&["config", "check", "--json"]);
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "{all}");
    assert!(all.contains("config/mcp-default-grant-invalid"), "{all}");
    assert!(
        all.contains("\\\"some\\\"") || all.contains("\"some\""),
        "{all}"
    );
    assert!(all.contains("config.toml"), "{all}");
}
