//! `mcp.json`: top-level failures disable only MCP, entry failures skip only
//! that server, `sse` is valid but never started.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{Fixture, codes_in};
use evoflux_core::Severity;
use evoflux_plugins::mcp::{CwdBase, McpCommand};
use evoflux_plugins::{MCP_SCHEMA_1_0_0, McpServer, McpStatus, McpTransport, PluginInspection};
use serde_json::{Value, json};

fn with_servers(servers: Value) -> (Fixture, PluginInspection) {
    let f = Fixture::minimal();
    f.mcp_servers(servers);
    let i = f.inspect();
    (f, i)
}

fn server<'a>(i: &'a PluginInspection, name: &str) -> &'a evoflux_plugins::McpServerEntry {
    i.mcp_servers.iter().find(|s| s.name == name).unwrap()
}

/// Each `(name, entry, code)` must be skipped alone with `code` in scope
/// `mcp:<name>`, while a valid sibling still loads.
fn assert_each_skipped(cases: &[(&str, Value, &str)]) {
    for (name, entry, code) in cases {
        let (_f, i) = with_servers(json!({
            *name: entry,
            "recovery-valid": {"type": "stdio", "command": "node"}
        }));
        assert!(i.valid);
        assert_eq!(i.mcp_status, McpStatus::Loaded);
        let scope = format!("mcp:{name}");
        assert!(
            codes_in(&i, &scope).contains(&code.to_string()),
            "{name}: expected {code}, got {:?}",
            codes_in(&i, &scope)
        );
        assert!(!server(&i, name).is_valid(), "{name} must be skipped");
        assert!(server(&i, "recovery-valid").is_startable());
        assert!(codes_in(&i, "mcp:recovery-valid").is_empty());
    }
}

#[test]
fn invalid_json_disables_only_mcp() {
    let f = Fixture::minimal();
    f.skill(
        "conformance-invalid-mcp-valid",
        "conformance-invalid-mcp-valid",
    );
    f.write(
        "mcp.json",
        format!("{{\"$schema\": \"{MCP_SCHEMA_1_0_0}\", \"mcpServers\":\n}}"),
    );
    let i = f.inspect();
    assert!(i.valid);
    assert_eq!(i.mcp_status, McpStatus::Disabled);
    assert_eq!(codes_in(&i, "mcp"), ["plugin/mcp-invalid-json"]);
    assert_eq!(i.valid_skills().count(), 1);
    assert!(i.mcp_servers.is_empty());
}

#[test]
fn invalid_top_level_disables_only_mcp() {
    let cases = [
        (json!([]), "plugin/mcp-top-level-invalid"),
        (
            json!({"$schema": MCP_SCHEMA_1_0_0, "mcpServers": {}, "servers": {}}),
            "plugin/mcp-top-level-invalid",
        ),
        (
            json!({"$schema": MCP_SCHEMA_1_0_0}),
            "plugin/mcp-top-level-invalid",
        ),
        (
            json!({"$schema": MCP_SCHEMA_1_0_0, "mcpServers": []}),
            "plugin/mcp-top-level-invalid",
        ),
        (json!({"mcpServers": {}}), "plugin/mcp-top-level-invalid"),
        (
            json!({"$schema": "https://agent-plugins.org/schemas/1.1.0/mcp.schema.json", "mcpServers": {}}),
            "plugin/mcp-schema-unsupported",
        ),
        (
            json!({"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json", "mcpServers": {}}),
            "plugin/mcp-schema-unsupported",
        ),
        // A VS Code style file without `$schema` is not Agent Plugins format.
        (
            json!({"servers": {"x": {"type": "local", "command": "x"}}}),
            "plugin/mcp-top-level-invalid",
        ),
    ];
    for (doc, code) in cases {
        let f = Fixture::minimal();
        f.skill("a", "a");
        f.write("mcp.json", doc.to_string());
        let i = f.inspect();
        assert!(i.valid);
        assert_eq!(i.mcp_status, McpStatus::Disabled, "{doc}");
        assert!(
            codes_in(&i, "mcp").contains(&code.to_string()),
            "{doc}: {:?}",
            codes_in(&i, "mcp")
        );
        assert_eq!(i.valid_skills().count(), 1);
        assert!(i.trust.executable_commands.is_empty());
    }
}

#[test]
fn mcp_json_that_is_a_folder_or_too_large_disables_mcp() {
    let f = Fixture::minimal();
    std::fs::create_dir(f.root.join("mcp.json")).unwrap();
    let i = f.inspect();
    assert!(i.valid);
    assert_eq!(i.mcp_status, McpStatus::Disabled);
    assert_eq!(codes_in(&i, "mcp"), ["plugin/mcp-not-file"]);

    let f = Fixture::minimal();
    f.write("mcp.json", " ".repeat(2 * 1024 * 1024 + 1));
    let i = f.inspect();
    assert_eq!(codes_in(&i, "mcp"), ["plugin/mcp-too-large"]);
}

#[test]
fn empty_server_map_is_valid() {
    let (_f, i) = with_servers(json!({}));
    assert_eq!(i.mcp_status, McpStatus::Loaded);
    assert!(i.diagnostics.is_empty());
}

#[test]
fn recovery_entries_are_skipped_alone() {
    assert_each_skipped(&[
        (
            "recovery-invalid",
            json!({"type": "stdio"}),
            "plugin/mcp-server-invalid",
        ),
        (
            "recovery-cwd-escape",
            json!({"type": "stdio", "command": "node", "cwd": "./.."}),
            "plugin/mcp-path-escapes",
        ),
        (
            "recovery-cwd-data-escape",
            json!({"type": "stdio", "command": "node", "cwd": "${PLUGIN_DATA}/.."}),
            "plugin/mcp-path-escapes",
        ),
        (
            "recovery-unknown-field",
            json!({"type": "stdio", "command": "node", "timeout": 5}),
            "plugin/mcp-server-invalid",
        ),
        (
            "recovery-env-plugin-root",
            json!({"type": "stdio", "command": "node", "env": {"PLUGIN_ROOT": "/x"}}),
            "plugin/mcp-reserved-env",
        ),
        (
            "recovery-env-plugin-data",
            json!({"type": "stdio", "command": "node", "env": {"PLUGIN_DATA": "/x"}}),
            "plugin/mcp-reserved-env",
        ),
        (
            "recovery-http-fragment",
            json!({"type": "streamable-http", "url": "https://example.com/mcp#frag"}),
            "plugin/mcp-url-invalid",
        ),
        (
            "recovery-http-duplicate-headers",
            json!({"type": "streamable-http", "url": "https://example.com/mcp",
                   "headers": {"X-Apc-Duplicate": "a", "x-apc-duplicate": "b"}}),
            "plugin/mcp-header-duplicate",
        ),
    ]);
}

#[cfg(unix)]
#[test]
fn cwd_through_an_escaping_symlink_is_skipped() {
    let f = Fixture::minimal();
    f.symlink(f.dir.path(), "escape-link");
    f.mcp_servers(json!({
        "recovery-cwd-symlink-escape": {"type": "stdio", "command": "node", "cwd": "./escape-link"},
        "command-link-escape": {"type": "stdio", "command": "./escape-link/tool"},
        "recovery-valid": {"type": "stdio", "command": "node"}
    }));
    let i = f.inspect();
    assert!(i.valid, "the link fails only the servers that use it");
    assert_eq!(
        codes_in(&i, "mcp:recovery-cwd-symlink-escape"),
        ["plugin/mcp-path-escapes"]
    );
    assert_eq!(
        codes_in(&i, "mcp:command-link-escape"),
        ["plugin/mcp-path-escapes"]
    );
    assert!(server(&i, "recovery-valid").is_startable());
}

#[test]
fn entry_shape_violations() {
    assert_each_skipped(&[
        ("not-object", json!("node"), "plugin/mcp-server-invalid"),
        (
            "no-type",
            json!({"command": "node"}),
            "plugin/mcp-server-invalid",
        ),
        (
            "claude-http",
            json!({"type": "http", "url": "https://a.b/"}),
            "plugin/mcp-server-invalid",
        ),
        (
            "type-number",
            json!({"type": 1, "command": "node"}),
            "plugin/mcp-server-invalid",
        ),
        (
            "other-variant-field",
            json!({"type": "stdio", "command": "node", "url": "https://a.b/"}),
            "plugin/mcp-server-invalid",
        ),
        (
            "remote-with-command",
            json!({"type": "streamable-http", "url": "https://a.b/", "command": "x"}),
            "plugin/mcp-server-invalid",
        ),
        (
            "remote-no-url",
            json!({"type": "sse"}),
            "plugin/mcp-server-invalid",
        ),
        (
            "args-not-array",
            json!({"type": "stdio", "command": "node", "args": "a b"}),
            "plugin/mcp-server-invalid",
        ),
        (
            "args-number",
            json!({"type": "stdio", "command": "node", "args": ["a", 1]}),
            "plugin/mcp-server-invalid",
        ),
        (
            "env-number",
            json!({"type": "stdio", "command": "node", "env": {"A": 1}}),
            "plugin/mcp-server-invalid",
        ),
        (
            "env-bad-key",
            json!({"type": "stdio", "command": "node", "env": {"A=B": "x"}}),
            "plugin/mcp-server-invalid",
        ),
        (
            "headers-array",
            json!({"type": "streamable-http", "url": "https://a.b/", "headers": ["x"]}),
            "plugin/mcp-server-invalid",
        ),
    ]);
}

#[test]
fn command_rules() {
    assert_each_skipped(&[
        (
            "empty",
            json!({"type": "stdio", "command": ""}),
            "plugin/mcp-command-invalid",
        ),
        (
            "with-arguments",
            json!({"type": "stdio", "command": "npx -y thing"}),
            "plugin/mcp-command-invalid",
        ),
        (
            "absolute",
            json!({"type": "stdio", "command": "/usr/bin/node"}),
            "plugin/mcp-command-invalid",
        ),
        (
            "placeholder",
            json!({"type": "stdio", "command": "${PLUGIN_ROOT}/server"}),
            "plugin/mcp-command-invalid",
        ),
        (
            "bare-path",
            json!({"type": "stdio", "command": "bin/server"}),
            "plugin/mcp-command-invalid",
        ),
        (
            "parent",
            json!({"type": "stdio", "command": "../server"}),
            "plugin/mcp-command-invalid",
        ),
        (
            "hidden",
            json!({"type": "stdio", "command": ".server"}),
            "plugin/mcp-command-invalid",
        ),
        (
            "backslash",
            json!({"type": "stdio", "command": "bin\\server.exe"}),
            "plugin/mcp-command-invalid",
        ),
        (
            "root-itself",
            json!({"type": "stdio", "command": "./"}),
            "plugin/mcp-command-invalid",
        ),
        (
            "dot-escape",
            json!({"type": "stdio", "command": "./../server"}),
            "plugin/mcp-path-escapes",
        ),
        (
            "number",
            json!({"type": "stdio", "command": 5}),
            "plugin/mcp-server-invalid",
        ),
    ]);
}

#[test]
fn valid_commands_keep_the_token_intact() {
    let (_f, i) = with_servers(json!({
        "command-token-posix": {"type": "stdio", "command": "./bin/posix/probe token.sh"},
        "bare": {"type": "stdio", "command": "uvx", "args": ["a b", "", "${PLUGIN_ROOT}", "${APC_UNKNOWN}"]},
        "windows": {"type": "stdio", "command": "probe.cmd"}
    }));
    assert!(i.diagnostics.is_empty(), "{:?}", i.diagnostics);
    let Some(McpServer::Stdio(s)) = &server(&i, "command-token-posix").server else {
        panic!("stdio expected");
    };
    assert_eq!(
        s.command,
        McpCommand::PluginRelative {
            raw: "./bin/posix/probe token.sh".into(),
            relative: "bin/posix/probe token.sh".into()
        }
    );
    let Some(McpServer::Stdio(s)) = &server(&i, "bare").server else {
        panic!("stdio expected");
    };
    // Arguments are kept exactly as written; expansion happens at start.
    assert_eq!(s.args, ["a b", "", "${PLUGIN_ROOT}", "${APC_UNKNOWN}"]);
}

#[test]
fn cwd_forms() {
    let (_f, i) = with_servers(json!({
        "relative": {"type": "stdio", "command": "node", "cwd": "./probe-workdir"},
        "root": {"type": "stdio", "command": "node", "cwd": "${PLUGIN_ROOT}/probe-workdir"},
        "root-bare": {"type": "stdio", "command": "node", "cwd": "${PLUGIN_ROOT}"},
        "data": {"type": "stdio", "command": "node", "cwd": "${PLUGIN_DATA}"},
        "data-sub": {"type": "stdio", "command": "node", "cwd": "${PLUGIN_DATA}/a/../b"},
        "omitted": {"type": "stdio", "command": "node"}
    }));
    assert!(i.diagnostics.is_empty(), "{:?}", i.diagnostics);
    let cwd = |name: &str| match &server(&i, name).server {
        Some(McpServer::Stdio(s)) => s.cwd.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(cwd("omitted"), None);
    assert_eq!(cwd("relative").unwrap().base, CwdBase::PluginRoot);
    assert_eq!(
        cwd("root").unwrap().relative,
        std::path::Path::new("probe-workdir")
    );
    assert_eq!(cwd("data").unwrap().base, CwdBase::PluginData);
    assert_eq!(cwd("data-sub").unwrap().relative, std::path::Path::new("b"));

    assert_each_skipped(&[
        (
            "plain",
            json!({"type": "stdio", "command": "node", "cwd": "work"}),
            "plugin/mcp-cwd-invalid",
        ),
        (
            "absolute",
            json!({"type": "stdio", "command": "node", "cwd": "/tmp"}),
            "plugin/mcp-cwd-invalid",
        ),
        (
            "suffix",
            json!({"type": "stdio", "command": "node", "cwd": "${PLUGIN_ROOT_SUFFIX}"}),
            "plugin/mcp-cwd-invalid",
        ),
        (
            "home",
            json!({"type": "stdio", "command": "node", "cwd": "$HOME"}),
            "plugin/mcp-cwd-invalid",
        ),
        (
            "root-escape",
            json!({"type": "stdio", "command": "node", "cwd": "${PLUGIN_ROOT}/a/../.."}),
            "plugin/mcp-path-escapes",
        ),
        (
            "number",
            json!({"type": "stdio", "command": "node", "cwd": 1}),
            "plugin/mcp-server-invalid",
        ),
    ]);
}

#[test]
fn url_and_header_rules() {
    let (_f, i) = with_servers(json!({
        "http": {"type": "streamable-http", "url": "http://127.0.0.1:43187/conformance/mcp?value=$APC_HTTP_VALUE",
                 "headers": {"AcCePt": "text/plain", "Authorization": "Bearer ${TOKEN}"}},
        "local": {"type": "streamable-http", "url": "http://localhost:8080/mcp"},
        "remote": {"type": "streamable-http", "url": "https://mcp.example.com/v1"}
    }));
    assert!(i.diagnostics.is_empty(), "{:?}", i.diagnostics);
    let Some(McpServer::StreamableHttp(r)) = &server(&i, "http").server else {
        panic!()
    };
    assert_eq!(
        r.headers["Authorization"], "Bearer ${TOKEN}",
        "headers stay literal"
    );

    assert_each_skipped(&[
        (
            "plain-http",
            json!({"type": "streamable-http", "url": "http://example.com/mcp"}),
            "plugin/mcp-url-invalid",
        ),
        (
            "userinfo",
            json!({"type": "streamable-http", "url": "https://u:p@example.com/"}),
            "plugin/mcp-url-invalid",
        ),
        (
            "relative",
            json!({"type": "streamable-http", "url": "/mcp"}),
            "plugin/mcp-url-invalid",
        ),
        (
            "ws",
            json!({"type": "sse", "url": "ws://localhost/"}),
            "plugin/mcp-url-invalid",
        ),
        (
            "empty",
            json!({"type": "streamable-http", "url": ""}),
            "plugin/mcp-url-invalid",
        ),
        (
            "bad-header-name",
            json!({"type": "streamable-http", "url": "https://a.b/", "headers": {"X Bad": "v"}}),
            "plugin/mcp-header-invalid",
        ),
        (
            "header-injection",
            json!({"type": "streamable-http", "url": "https://a.b/", "headers": {"X-A": "v\r\nX-B: w"}}),
            "plugin/mcp-header-invalid",
        ),
        (
            "header-number",
            json!({"type": "streamable-http", "url": "https://a.b/", "headers": {"X-A": 1}}),
            "plugin/mcp-header-invalid",
        ),
    ]);
}

#[test]
fn sse_is_valid_reported_and_never_started() {
    let (_f, i) = with_servers(json!({
        "sse": {"type": "sse", "url": "http://127.0.0.1:43189/sse", "headers": {"X-Key": "v"}},
        "http": {"type": "streamable-http", "url": "https://a.b/"}
    }));
    assert!(i.valid);
    let sse = server(&i, "sse");
    assert!(sse.is_valid());
    assert!(!sse.is_startable());
    assert_eq!(sse.transport, Some(McpTransport::Sse));
    assert_eq!(
        codes_in(&i, "mcp:sse"),
        ["plugin/mcp-transport-unsupported"]
    );
    assert_eq!(i.diagnostics[0].diagnostic.severity, Severity::Warning);
    let startable: Vec<_> = i.startable_servers().map(|s| s.name.as_str()).collect();
    assert_eq!(startable, ["http"]);
}

#[test]
fn several_problems_in_one_entry_are_all_reported() {
    let (_f, i) = with_servers(json!({
        "bad": {"type": "stdio", "command": "/bin/sh", "cwd": "x", "env": {"PLUGIN_ROOT": "r"}, "extra": 1}
    }));
    let mut codes = codes_in(&i, "mcp:bad");
    codes.sort();
    assert_eq!(
        codes,
        [
            "plugin/mcp-command-invalid",
            "plugin/mcp-cwd-invalid",
            "plugin/mcp-reserved-env",
            "plugin/mcp-server-invalid"
        ]
    );
    let fields: Vec<_> = i
        .diagnostics
        .iter()
        .map(|d| d.diagnostic.locator.field.clone().unwrap())
        .collect();
    assert!(
        fields.contains(&"mcpServers.bad.env.PLUGIN_ROOT".to_string()),
        "{fields:?}"
    );
}
