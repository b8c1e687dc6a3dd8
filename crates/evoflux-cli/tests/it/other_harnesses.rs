//! A setup made for Claude Code, codex, VS Code or Cursor works in
//! evoflux as it is: their MCP server files join the user and project
//! layers (each written here as its tool's public documentation describes
//! it), evoflux's own `mcp.json` wins over them, `[compat] mcp` chooses
//! which are read, and a token a server needs stays in the environment.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::Sandbox;
use serde_json::{Value, json};

/// Every connection of `info --json`, by name: (owner folder, layer,
/// binding file, transport).
fn connections(info: &Value) -> Vec<(String, String, String, String, String)> {
    info["connections"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let src = &c["source"];
            (
                src["slot"]
                    .as_str()
                    .unwrap()
                    .trim_start_matches("connections/")
                    .to_owned(),
                src["owner"]["folder"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                src["layer"].as_str().unwrap().to_owned(),
                src["binding"]["path"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                c["transport"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

fn codes(info: &Value) -> Vec<String> {
    info["diagnostics"]["items"]
        .as_array()
        .map(|d| {
            d.iter()
                .map(|d| d["code"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// One file of each format, as each tool writes it.
fn write_every_format(s: &Sandbox) {
    let repo = s.repo().canonicalize().unwrap();
    // Claude Code: a repository's `.mcp.json` (bare form), and
    // `~/.claude.json` with a user server, the servers it keeps for this
    // repository, and its history.
    s.write(
        repo.join(".mcp.json"),
        &json!({"claude-project": {"command": "claude-project-server", "args": ["--stdio"]}})
            .to_string(),
    );
    s.write(
        s.home().join(".claude.json"),
        &json!({
            "numStartups": 12,
            "history": [{"display": "fix the build"}],
            "mcpServers": {
                "claude-user": {"type": "http", "url": "https://claude-user.example.com/mcp"},
                "shared": {"type": "stdio", "command": "from-claude"}
            },
            "projects": {
                repo.display().to_string(): {
                    "allowedTools": [],
                    "mcpServers": {"claude-local": {"type": "stdio", "command": "local-server"}}
                },
                "/elsewhere": {"mcpServers": {"elsewhere": {"command": "x"}}}
            }
        })
        .to_string(),
    );
    // codex: `[mcp_servers]` in `~/.codex/config.toml`.
    s.write(
        s.home().join(".codex/config.toml"),
        r#"model = "o3"

[mcp_servers.brave_search]
command = "brave-mcp"
args = ["--stdio"]
env = { "LOG" = "warn" }

[mcp_servers.codex-remote]
url = "https://codex-remote.example.com/mcp"
bearer_token_env_var = "CODEX_REMOTE_TOKEN"

[mcp_servers.switched-off]
command = "never"
enabled = false
"#,
    );
    // VS Code: `.vscode/mcp.json`, JSON with comments.
    s.write(
        repo.join(".vscode/mcp.json"),
        r#"{
  // Servers for this workspace.
  "servers": {
    "vscode-fs": {
      "type": "stdio",
      "command": "node",
      "args": ["${workspaceFolder}/tools/fs.js"],
      "env": {"TOKEN": "${env:FS_TOKEN}"},
    },
  },
}"#,
    );
    // Cursor: the repository's and the user's `mcp.json`.
    s.write(
        repo.join(".cursor/mcp.json"),
        &json!({"mcpServers": {"cursor-project": {"url": "https://cursor.example.com/mcp"}}})
            .to_string(),
    );
    s.write(
        s.home().join(".cursor/mcp.json"),
        &json!({"mcpServers": {"cursor-user": {"command": "cursor-user-server"},
                                "shared": {"command": "from-cursor"}}})
        .to_string(),
    );
}

#[test]
fn every_other_harness_file_compiles_into_connections_with_its_source() {
    let s = Sandbox::new();
    write_every_format(&s);
    s.trust();
    let info = s.json(&["info", "--json"]);
    let got = connections(&info);
    let home = s.home().display().to_string();
    let repo = s.repo().canonicalize().unwrap().display().to_string();
    let expected = [
        (
            "brave-search",
            "codex",
            "user",
            format!("{home}/.codex/config.toml"),
            "stdio",
        ),
        (
            "claude-local",
            "claude",
            "user",
            format!("{home}/.claude.json"),
            "stdio",
        ),
        (
            "claude-project",
            "claude",
            "project",
            format!("{repo}/.mcp.json"),
            "stdio",
        ),
        (
            "claude-user",
            "claude",
            "user",
            format!("{home}/.claude.json"),
            "streamable-http",
        ),
        (
            "codex-remote",
            "codex",
            "user",
            format!("{home}/.codex/config.toml"),
            "streamable-http",
        ),
        (
            "cursor-project",
            "cursor",
            "project",
            format!("{repo}/.cursor/mcp.json"),
            "streamable-http",
        ),
        (
            "cursor-user",
            "cursor",
            "user",
            format!("{home}/.cursor/mcp.json"),
            "stdio",
        ),
        // In Claude Code's and Cursor's user files: the first read wins.
        (
            "shared",
            "claude",
            "user",
            format!("{home}/.claude.json"),
            "stdio",
        ),
        (
            "vscode-fs",
            "vscode",
            "project",
            format!("{repo}/.vscode/mcp.json"),
            "stdio",
        ),
    ];
    let expected: Vec<(String, String, String, String, String)> = expected
        .into_iter()
        .map(|(a, b, c, d, e)| (a.into(), b.into(), c.into(), d, e.into()))
        .collect();
    assert_eq!(got, expected);
    let codes = codes(&info);
    for code in ["discover/foreign-name-renamed", "compile/derived-duplicate"] {
        assert!(
            codes.iter().any(|c| c == code),
            "{code} missing from {codes:?}"
        );
    }
    assert!(
        !codes
            .iter()
            .any(|c| c.starts_with("compile/connection-invalid")),
        "{codes:?}"
    );
    // The VS Code entry in evoflux's words: the workspace folder filled in,
    // `${env:…}` an evoflux reference (never its value).
    let list = s.json(&["mcp", "list", "--json"]);
    let fs = list["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["server"] == "vscode-fs")
        .unwrap();
    assert_eq!(fs["owner"]["layer"], "project");
    let text = serde_json::to_string(&info).unwrap();
    assert!(
        !text.contains("switched-off"),
        "a disabled codex server is not read"
    );
    assert!(
        !text.contains("elsewhere"),
        "another directory's Claude servers are not read"
    );
}

#[test]
fn evoflux_own_file_wins_and_compat_chooses_what_is_read() {
    let s = Sandbox::new();
    write_every_format(&s);
    s.trust();
    // evoflux's own user mcp.json defines `claude-user` too: it wins over
    // Claude Code's file in the same layer.
    s.user(
        "mcp.json",
        &json!({"mcpServers": {"claude-user": {"type": "stdio", "command": "mine"}}}).to_string(),
    );
    let info = s.json(&["info", "--json"]);
    let mine = connections(&info)
        .into_iter()
        .find(|c| c.0 == "claude-user")
        .unwrap();
    assert_eq!(mine.1, "evoflux");
    assert_eq!(mine.4, "stdio");
    let shadowed: Vec<&Value> = info["composition"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["slot"] == "connections/claude-user")
        .collect();
    assert_eq!(shadowed.len(), 1, "{shadowed:?}");
    assert_eq!(shadowed[0]["kind"], "shadowed");

    // Only codex's file.
    s.user("config.toml", "[compat]\nmcp = [\"codex\"]\n");
    let info = s.json(&["info", "--json"]);
    let names: Vec<String> = connections(&info).into_iter().map(|c| c.0).collect();
    assert_eq!(names, ["brave-search", "claude-user", "codex-remote"]);
    // None.
    s.user("config.toml", "[compat]\nmcp = []\n");
    let info = s.json(&["info", "--json"]);
    let names: Vec<String> = connections(&info).into_iter().map(|c| c.0).collect();
    assert_eq!(names, ["claude-user"]);
    // A repository cannot choose which of the user's files are read.
    s.user("config.toml", "");
    s.project("config.toml", "[compat]\nmcp = []\n");
    let out = s.run(&["info", "--json"]);
    assert!(
        common::json(&out)["diagnostics"]["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["code"] == "config/project-compat")
    );
}

#[test]
fn an_untrusted_repository_s_files_wait_for_trust_and_broken_files_only_warn() {
    let s = Sandbox::new();
    write_every_format(&s);
    s.write(s.home().join(".cursor/mcp.json"), "{ not json");
    let info = s.json(&["info", "--json"]);
    let got = connections(&info);
    assert!(
        got.iter().all(|c| c.2 == "user"),
        "an untrusted repository's servers are not loaded: {got:?}"
    );
    let waiting: Vec<&str> = info["awaiting_trust"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["slot"].as_str().unwrap())
        .collect();
    for slot in [
        "connections/claude-project",
        "connections/vscode-fs",
        "connections/cursor-project",
    ] {
        assert!(waiting.contains(&slot), "{slot} not in {waiting:?}");
    }
    let diagnostics = info["diagnostics"]["items"].as_array().unwrap();
    let broken = diagnostics
        .iter()
        .find(|d| d["code"] == "discover/foreign-mcp-invalid")
        .unwrap();
    assert_eq!(broken["severity"], "warning");
    assert!(
        broken["locator"]["file"]
            .as_str()
            .unwrap()
            .ends_with(".cursor/mcp.json")
    );
}

fn all_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.filter_map(Result::ok) {
            let p = e.path();
            if p.is_dir() {
                out.extend(all_files(&p));
            } else if p.is_file() {
                out.push(p);
            }
        }
    }
    out
}

#[test]
fn a_codex_bearer_token_reaches_the_server_from_the_environment_only() {
    let Some((mut child, url)) = common::mcp_http_test_server() else {
        return;
    };
    let s = Sandbox::new();
    s.write(
        s.home().join(".codex/config.toml"),
        &format!(
            "[mcp_servers.remote]\nurl = \"{url}\"\nbearer_token_env_var = \"REMOTE_TOKEN\"\n\
             tool_timeout_sec = 30\n"
        ),
    );
    let token = "tok-codex-51aa";
    let out = s
        .command(&["mcp", "call", "remote", "headers", "--json"])
        .env("REMOTE_TOKEN", token)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = common::json(&out);
    let headers: Value = serde_json::from_str(r["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(headers["authorization"], format!("Bearer {token}"));
    let info = s
        .command(&["info", "--json"])
        .env("REMOTE_TOKEN", token)
        .output()
        .unwrap();
    let shown =
        String::from_utf8_lossy(&info.stdout).into_owned() + &String::from_utf8_lossy(&info.stderr);
    assert!(!shown.contains(token), "the token was shown");
    let info = common::json(&info);
    let not_carried = info["diagnostics"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["code"] == "compile/connection-not-carried")
        .unwrap();
    assert!(
        not_carried["message"]
            .as_str()
            .unwrap()
            .contains("`tool_timeout_sec`")
    );

    // A session whose lead uses the server stores no trace of the token:
    // not in the session store, its events or any artifact.
    s.user("agents/evoflux.md", "---\nrole: lead\nmcp: [remote]\n---\n");
    let model = common::script(
        &s,
        "remote.yaml",
        "turns:\n  - reply:\n      tool_calls:\n        - {name: mcp__remote__echo, arguments: {message: hi}}\n  - expect: {tool_result: \"Echo: hi\"}\n    reply: {text: done}\n",
    );
    let out = s
        .command(&["--json", "run", "--model", &model, "echo"])
        .env("REMOTE_TOKEN", token)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains(token));
    let mut files = 0;
    for file in all_files(&s.home()) {
        files += 1;
        let bytes = std::fs::read(&file).unwrap();
        assert!(
            !bytes.windows(token.len()).any(|w| w == token.as_bytes()),
            "the token is in {}",
            file.display()
        );
    }
    assert!(files > 0, "the session left its store");
    drop(child.stdin.take());
    child.wait().unwrap();
}
