//! `evoflux mcp list | tools | call` end to end, against the rmcp test
//! server of `evoflux-mcp` (`evoflux-mcp-testserver`), configured through a
//! project `mcp.json` and a linked plugin in the sandbox.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{Sandbox, json};
use serde_json::{Value, json};

/// The repository's own `mcp.json`, in a repository its owner trusts (an
/// untrusted repository's servers never start).
fn project_mcp(s: &Sandbox, servers: Value) {
    s.project("mcp.json", &json!({ "mcpServers": servers }).to_string());
    s.trust();
}

fn server<'a>(list: &'a Value, name: &str) -> &'a Value {
    list["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["server"] == name)
        .unwrap_or_else(|| panic!("no server {name} in {list}"))
}

#[test]
fn list_reports_state_tools_and_errors_of_every_server() {
    let Some(bin) = common::mcp_test_server() else {
        return;
    };
    let s = Sandbox::new();
    project_mcp(
        &s,
        json!({
            "local": {"type": "stdio", "command": bin, "args": ["--filler-tools", "2"]},
            "broken": {"type": "stdio", "command": "/nonexistent/evoflux-server"},
            "old": {"type": "sse", "url": "http://127.0.0.1:9/sse"}
        }),
    );
    let list = s.json(&["mcp", "list", "--json"]);
    let local = server(&list, "local");
    assert_eq!(local["state"], "ready");
    assert_eq!(local["transport"], "stdio");
    assert_eq!(local["owner"]["kind"], "global");
    assert_eq!(local["owner"]["layer"], "project");
    assert_eq!(local["protocol_version"], "2025-11-25");
    let tools: Vec<&str> = local["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        tools.contains(&"echo") && tools.contains(&"filler_1"),
        "{tools:?}"
    );
    let broken = server(&list, "broken");
    assert_eq!(broken["state"], "failed");
    assert_eq!(broken["last_error"]["code"], "mcp/start-failed");
    let old = server(&list, "old");
    assert_eq!(old["state"], "skipped");
    assert_eq!(old["last_error"]["code"], "mcp/transport-unsupported");

    let human = s.run(&["mcp", "list"]);
    assert!(human.status.success());
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(text.starts_with("SERVER\tOWNER\tTRANSPORT\tSTATE\tTOOLS\tLAST ERROR"));
    assert!(text.contains("local\tglobal\tstdio\tready\t"), "{text}");
}

#[test]
fn tools_and_call_over_stdio_with_an_isolated_environment() {
    let Some(bin) = common::mcp_test_server() else {
        return;
    };
    let s = Sandbox::new();
    project_mcp(
        &s,
        json!({"local": {"type": "stdio", "command": bin, "env": {"CONFIGURED": "1"}}}),
    );
    let tools = s.json(&["mcp", "tools", "local", "--json"]);
    assert!(
        tools["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "echo")
    );

    let r = s.json(&[
        "mcp",
        "call",
        "local",
        "add",
        "--args",
        r#"{"a": 1, "b": 2}"#,
        "--json",
    ]);
    assert_eq!(r["is_error"], false);
    assert_eq!(r["content"][0]["text"], "3");
    let out = s.run(&[
        "mcp",
        "call",
        "local",
        "echo",
        "--args",
        r#"{"message": "hi"}"#,
    ]);
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout), "Echo: hi\n");

    // A tool error is printed and exits 1.
    let out = s.run(&["mcp", "call", "local", "fail", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(json(&out)["is_error"], true);

    // Bad arguments and unknown servers fail cleanly.
    let out = s.run(&["mcp", "call", "local", "echo", "--args", "[1"]);
    assert_eq!(out.status.code(), Some(1));
    let out = s.run(&["mcp", "tools", "nope"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no MCP server is named `nope`"));

    // The server sees the allowlisted base and its own env, nothing else.
    let out = s
        .command(&["mcp", "call", "local", "get_env", "--json"])
        .env("LEAKY_SECRET", "must-not-leak")
        .output()
        .unwrap();
    assert!(out.status.success());
    let env: Value =
        serde_json::from_str(json(&out)["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(env["CONFIGURED"], "1");
    assert_eq!(env["HOME"], json!(s.home()));
    assert!(env.get("LEAKY_SECRET").is_none());
    assert!(env.get("EVOFLUX_ADMIN_DIR").is_none());
}

#[test]
fn an_http_entry_sends_its_headers_with_references_from_the_environment() {
    let Some((mut child, url)) = common::mcp_http_test_server() else {
        return;
    };

    let s = Sandbox::new();
    // Claude Code's `"type": "http"`, and a token taken from the
    // environment rather than written in the file: the user's own entry
    // (a repository's never gets a key variable).
    s.user(
        "mcp.json",
        &json!({"mcpServers": {"remote": {
            "type": "http",
            "url": url,
            "headers": {"Authorization": "Bearer ${TEST_MCP_TOKEN}", "X-Literal": "$HOME ${x y}"}
        }}})
        .to_string(),
    );
    let token = "tok-env-7c1e";
    let run = |args: &[&str]| {
        let out = s
            .command(args)
            .env("TEST_MCP_TOKEN", token)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let all = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        (json(&out), all)
    };
    let (r, _) = run(&["mcp", "call", "remote", "headers", "--json"]);
    let headers: Value = serde_json::from_str(r["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(headers["authorization"], format!("Bearer {token}"));
    assert_eq!(headers["x-literal"], "$HOME ${x y}");
    let (list, printed) = run(&["mcp", "list", "--json"]);
    assert_eq!(server(&list, "remote")["transport"], "streamable-http");
    assert_eq!(server(&list, "remote")["state"], "ready");
    let (_, info) = run(&["info", "--json"]);
    for shown in [printed, info] {
        assert!(!shown.contains(token), "the token was shown: {shown}");
    }
    // Without the variable the server fails alone, naming it.
    let list = s.json(&["mcp", "list", "--json"]);
    assert_eq!(
        server(&list, "remote")["last_error"]["code"],
        "mcp/env-unset"
    );
    // Closing its stdin stops the server.
    drop(child.stdin.take());
    child.wait().unwrap();
}

#[cfg(unix)]
#[test]
fn plugin_servers_are_listed_and_called_under_their_plugin() {
    use std::os::unix::fs::PermissionsExt;
    let Some(bin) = common::mcp_test_server() else {
        return;
    };
    let s = Sandbox::new();
    let root = s.tmp.path().join("plugins/demo");
    s.write(
        root.join("plugin.json"),
        &json!({
            "$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
            "name": "demo",
            "version": "1.0.0"
        })
        .to_string(),
    );
    s.write(
        root.join("mcp.json"),
        &json!({
            "$schema": "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json",
            "mcpServers": {"svc": {
                "type": "stdio",
                "command": "./bin/server",
                "env": {"DB": "${PLUGIN_DATA}/db"}
            }}
        })
        .to_string(),
    );
    let script = s.write(
        root.join("bin/server"),
        &format!("#!/bin/sh\nexec '{}' \"$@\"\n", bin.display()),
    );
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let linked = s.run(&["plugin", "link", root.to_str().unwrap(), "--enabled"]);
    assert!(
        linked.status.success(),
        "{}",
        String::from_utf8_lossy(&linked.stderr)
    );

    let list = s.json(&["mcp", "list", "--json"]);
    let svc = server(&list, "demo/svc");
    assert_eq!(svc["state"], "ready", "{svc}");
    assert_eq!(svc["owner"]["kind"], "plugin");
    assert_eq!(svc["owner"]["plugin"], "demo");

    let r = s.json(&["mcp", "call", "demo/svc", "get_env", "--json"]);
    let env: Value = serde_json::from_str(r["content"][0]["text"].as_str().unwrap()).unwrap();
    let plugin_root = root.canonicalize().unwrap();
    assert_eq!(env["PLUGIN_ROOT"], json!(plugin_root));
    let data = env["PLUGIN_DATA"].as_str().unwrap();
    assert!(std::path::Path::new(data).is_dir());
    assert_eq!(env["DB"], format!("{data}/db"));
}
