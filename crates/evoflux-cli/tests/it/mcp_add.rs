//! `evoflux mcp add | remove` end to end: servers written to the user's
//! (or the repository's) `mcp.json` through the MCP config editor, seen by
//! `mcp list` / `mcp tools` against the rmcp test server, every other key
//! and server of the file kept byte for byte, refusals with their codes;
//! and `[mcp] max_result_mib` bounding a flooding call.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{Sandbox, stderr_codes};
use serde_json::{Value, json};

/// A user `mcp.json` with a key evoflux does not use and a server of its
/// own, laid out by hand.
const USER_FILE: &str = r#"{
  "$schema": "https://example.com/mcp.schema.json",
  "mcpServers": {
    "other": { "command": "/nonexistent/other-srv",   "args": ["--x"] }
  }
}
"#;
const OTHER: &str = r#""other": { "command": "/nonexistent/other-srv",   "args": ["--x"] }"#;

fn server<'a>(list: &'a Value, name: &str) -> Option<&'a Value> {
    list["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["server"] == name)
}

fn user_file(s: &Sandbox) -> String {
    std::fs::read_to_string(s.config().join("mcp.json")).unwrap()
}

fn exit_code(out: &std::process::Output) -> Option<i32> {
    out.status.code()
}

#[test]
fn an_added_stdio_server_is_listed_and_started_and_the_file_keeps_the_rest() {
    let Some(bin) = common::mcp_test_server() else {
        return;
    };
    let bin = bin.to_str().unwrap();
    let s = Sandbox::new();
    s.user("mcp.json", USER_FILE);
    let out = s.run(&[
        "mcp",
        "add",
        "local",
        "--command",
        bin,
        "--arg=--filler-tools",
        "--arg",
        "2",
        "--env",
        "API_TOKEN=${TEST_ADD_TOKEN}",
        "--env",
        "SERVICE_KEY=sk-literal-9f2",
        "--json",
    ]);
    assert!(out.status.success(), "{out:?}");
    let report = common::json(&out);
    assert_eq!(report["action"], "added");
    assert_eq!(report["scope"], "user");
    assert_eq!(report["entry"]["args"], json!(["--filler-tools", "2"]));
    // A reference is shown as written; a literal value is masked, and a
    // literal secret gets a warning to use a reference.
    assert_eq!(report["entry"]["env"]["API_TOKEN"], "${TEST_ADD_TOKEN}");
    assert_eq!(report["entry"]["env"]["SERVICE_KEY"], "********");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("sk-literal-9f2"));
    assert!(!String::from_utf8_lossy(&out.stderr).contains("sk-literal-9f2"));
    assert_eq!(stderr_codes(&out), ["mcp/literal-secret"]);

    // The file: the unknown key and the other server byte for byte, the
    // new entry with its reference unresolved.
    let text = user_file(&s);
    assert!(text.contains(OTHER), "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["$schema"], "https://example.com/mcp.schema.json");
    assert_eq!(
        v["mcpServers"]["local"]["env"]["API_TOKEN"],
        "${TEST_ADD_TOKEN}"
    );
    assert_eq!(
        v["mcpServers"]["other"]["command"],
        "/nonexistent/other-srv"
    );

    let run = |args: &[&str]| {
        let out = s
            .command(args)
            .env("TEST_ADD_TOKEN", "tok-1")
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {out:?}");
        common::json(&out)
    };
    let list = run(&["mcp", "list", "--json", "--wait", "20"]);
    let local = server(&list, "local").unwrap_or_else(|| panic!("{list}"));
    assert_eq!(local["state"], "ready", "{local}");
    assert_eq!(local["owner"]["layer"], "user");
    let tools = run(&["mcp", "tools", "local", "--json"]);
    let names: Vec<&str> = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"echo") && names.contains(&"filler_1"),
        "{names:?}"
    );

    // Adding the name again is refused, unless --force replaces it.
    let again = s.run(&["mcp", "add", "local", "--command", bin, "--json"]);
    assert_eq!(exit_code(&again), Some(3), "{again:?}");
    assert_eq!(stderr_codes(&again), ["mcp/server-exists"]);
    let forced = s.json(&["mcp", "add", "local", "--command", bin, "--force", "--json"]);
    assert_eq!(forced["action"], "replaced");
    let v: Value = serde_json::from_str(&user_file(&s)).unwrap();
    assert_eq!(
        v["mcpServers"]["local"],
        json!({"type": "stdio", "command": bin})
    );
    assert!(user_file(&s).contains(OTHER));
}

#[test]
fn an_http_server_is_added_then_removed_leaving_the_rest_of_the_file() {
    let Some((mut child, url)) = common::mcp_http_test_server() else {
        return;
    };
    let s = Sandbox::new();
    s.user("mcp.json", USER_FILE);
    let added = s.json(&[
        "mcp",
        "add",
        "remote",
        "--url",
        &url,
        "--header",
        "Authorization=Bearer ${TEST_MCP_TOKEN}",
        "--header",
        "X-Api-Key=literal-key-55",
        "--json",
    ]);
    assert_eq!(added["entry"]["type"], "http");
    assert_eq!(added["entry"]["url"], url.as_str());
    assert_eq!(
        added["entry"]["headers"]["Authorization"],
        "Bearer ${TEST_MCP_TOKEN}"
    );
    assert_eq!(added["entry"]["headers"]["X-Api-Key"], "********");
    let list = {
        let out = s
            .command(&["mcp", "list", "--json", "--wait", "20"])
            .env("TEST_MCP_TOKEN", "tok-2")
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        common::json(&out)
    };
    let remote = server(&list, "remote").unwrap_or_else(|| panic!("{list}"));
    assert_eq!(remote["transport"], "streamable-http", "{remote}");
    assert_eq!(remote["state"], "ready", "{remote}");

    let removed = s.json(&["mcp", "remove", "remote", "--json"]);
    assert_eq!(removed["action"], "removed");
    assert_eq!(user_file(&s), USER_FILE);
    let list = s.json(&["mcp", "list", "--json", "--wait", "5"]);
    assert!(server(&list, "remote").is_none(), "{list}");

    // Removing it again: nothing of that name in the file.
    let missing = s.run(&["mcp", "remove", "remote", "--json"]);
    assert_eq!(exit_code(&missing), Some(3), "{missing:?}");
    assert_eq!(stderr_codes(&missing), ["mcp/server-not-found"]);
    assert_eq!(user_file(&s), USER_FILE);

    drop(child.stdin.take());
    let _ = child.wait();
}

#[test]
fn bad_input_is_refused_with_the_validators_codes_and_nothing_written() {
    let s = Sandbox::new();
    s.user("mcp.json", USER_FILE);
    let refused = |args: &[&str]| -> Vec<String> {
        let out = s.run(args);
        assert_eq!(exit_code(&out), Some(3), "{args:?}: {out:?}");
        assert_eq!(user_file(&s), USER_FILE, "{args:?} wrote the file");
        stderr_codes(&out)
    };
    assert_eq!(
        refused(&["mcp", "add", "web", "--url", "not a url", "--json"]),
        ["compile/connection-invalid"]
    );
    let out = s.run(&["mcp", "add", "web", "--url", "not a url", "--json"]);
    let err: Value = serde_json::from_slice(&out.stderr).unwrap();
    let d = &err["diagnostics"][0];
    assert!(
        d["locator"]["field"]
            .as_str()
            .unwrap_or_default()
            .ends_with("url"),
        "{d}"
    );
    assert!(d["message"].as_str().unwrap().contains("not a url"), "{d}");
    assert_eq!(
        refused(&["mcp", "add", "Bad_Name", "--command", "x", "--json"]),
        ["discover/connection-name-invalid"]
    );
    assert_eq!(
        refused(&["mcp", "add", "other", "--command", "x", "--json"]),
        ["mcp/server-exists"]
    );
    assert_eq!(
        refused(&["mcp", "remove", "nope", "--json"]),
        ["mcp/server-not-found"]
    );

    // Usage errors (clap's exit 2): both transports, neither, a pair
    // without `=`, a header for a local server.
    for args in [
        &["mcp", "add", "x", "--command", "c", "--url", "http://h/mcp"][..],
        &["mcp", "add", "x"],
        &["mcp", "add", "x", "--command", "c", "--env", "NOEQUALS"],
        &["mcp", "add", "x", "--command", "c", "--header", "A=b"],
    ] {
        let out = s.run(args);
        assert_eq!(exit_code(&out), Some(2), "{args:?}: {out:?}");
    }
    let out = s.run(&["mcp", "add", "x", "--command", "c", "--env", "NOEQUALS"]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("NOEQUALS"),
        "{out:?}"
    );
    assert_eq!(user_file(&s), USER_FILE);
}

#[test]
fn a_repository_server_is_named_as_where_to_change_it_and_project_scope_writes_its_file() {
    let s = Sandbox::new();
    s.project(
        "mcp.json",
        &json!({"mcpServers": {"repo-srv": {"command": "/nonexistent/r"}}}).to_string(),
    );
    s.trust();
    // The user's file cannot take the repository's name, nor remove it.
    let out = s.run(&[
        "mcp",
        "add",
        "repo-srv",
        "--command",
        "x",
        "--force",
        "--json",
    ]);
    assert_eq!(exit_code(&out), Some(3), "{out:?}");
    assert_eq!(stderr_codes(&out), ["mcp/server-exists"]);
    let out = s.run(&["mcp", "remove", "repo-srv", "--json"]);
    assert_eq!(exit_code(&out), Some(3), "{out:?}");
    assert_eq!(stderr_codes(&out), ["mcp/server-not-editable"]);
    assert!(!s.config().join("mcp.json").exists());

    // `--scope project` edits the repository's own file.
    let added = s.json(&[
        "mcp",
        "add",
        "second",
        "--command",
        "/nonexistent/s",
        "--scope",
        "project",
        "--json",
    ]);
    assert_eq!(added["scope"], "project");
    let project = s.repo().join(".evoflux").join("mcp.json");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&project).unwrap()).unwrap();
    assert_eq!(v["mcpServers"]["second"]["command"], "/nonexistent/s");
    assert_eq!(v["mcpServers"]["repo-srv"]["command"], "/nonexistent/r");
    let removed = s.json(&["mcp", "remove", "repo-srv", "--scope", "project", "--json"]);
    assert_eq!(removed["action"], "removed");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&project).unwrap()).unwrap();
    assert_eq!(
        v["mcpServers"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["second"]
    );
}

#[test]
fn a_configured_result_bound_ends_a_flooding_call() {
    let Some(bin) = common::mcp_test_server() else {
        return;
    };
    let s = Sandbox::new();
    s.json(&[
        "mcp",
        "add",
        "local",
        "--command",
        bin.to_str().unwrap(),
        "--json",
    ]);
    let flood = r#"{"bytes": 1600000}"#;
    // Under the default bound (8 MiB) 1.6 MB comes back whole...
    let whole = s.run(&["mcp", "call", "local", "flood", "--args", flood, "--json"]);
    assert!(whole.status.success(), "{whole:?}");
    // ...and with `[mcp] max_result_mib = 1` the call ends with the code.
    s.user("config.toml", "[mcp]\nmax_result_mib = 1\n");
    let cut = s.run(&["mcp", "call", "local", "flood", "--args", flood, "--json"]);
    assert!(!cut.status.success(), "{cut:?}");
    let err: Value = serde_json::from_slice(&cut.stderr).unwrap();
    assert!(
        err["error"]
            .as_str()
            .unwrap()
            .contains("mcp/result-too-large"),
        "{err}"
    );
    // A bound of 0 is refused, naming the file and the key.
    s.user("config.toml", "[mcp]\nmax_result_mib = 0\n");
    let bad = s.run(&["config", "show", "--json"]);
    let text = String::from_utf8_lossy(&bad.stderr);
    assert!(text.contains("config/mcp-max-result-invalid"), "{bad:?}");
    assert!(text.contains("config.toml"), "{text}");
}
