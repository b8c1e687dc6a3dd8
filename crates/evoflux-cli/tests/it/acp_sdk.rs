#![allow(clippy::unwrap_used, clippy::expect_used)]

//! `evoflux acp` driven by the official ACP TypeScript SDK's client
//! (`@agentclientprotocol/sdk` from npm), as the editors that use it do:
//! the script `crates/evoflux-acp/tests/fixtures/acp-sdk-client.mjs` opens
//! a session with an MCP server of its own, has the model call that
//! server's tool, and checks the available commands, the plan, the modes
//! and `session/list` (see the script for each check). Run with the
//! machine's `node` when `EVOFLUX_TEST_ACP_SDK` names the SDK's package
//! folder (`.ci/run` installs it); skipped, with a note, otherwise.

use crate::common;

use std::path::PathBuf;
use std::process::Command;

use common::{Sandbox, evoflux_bin, script};
use evoflux_app::testing;

fn sdk() -> Option<PathBuf> {
    match std::env::var_os("EVOFLUX_TEST_ACP_SDK") {
        Some(p) if !p.is_empty() => Some(PathBuf::from(p)),
        _ => {
            eprintln!("note: EVOFLUX_TEST_ACP_SDK is not set; skipping the ACP SDK client test");
            None
        }
    }
}

#[test]
fn the_acp_sdk_client_uses_an_editor_mcp_server_commands_plans_and_modes() {
    let Some(sdk) = sdk() else {
        return;
    };
    let Some(server) = common::mcp_test_server() else {
        return;
    };
    let s = Sandbox::new();
    s.user(
        "skills/notes/SKILL.md",
        "---\nname: notes\ndescription: Keeps notes.\n---\nKeep notes.\n",
    );
    let model = script(
        &s,
        "sdk.yaml",
        r#"
turns:
  - expect: {user: {contains: "use the editor's server"}}
    reply:
      tool_calls:
        - {name: mcp__editor__echo, arguments: {message: hello from the editor}}
  - expect: {tool_result: {contains: "Echo: hello from the editor"}}
    reply:
      tool_calls:
        - name: todo
          arguments:
            todos:
              - {content: read the code, status: completed}
              - {content: fix the bug, status: in_progress}
              - {content: an idea dropped, status: cancelled}
  - expect: {tool_result: {contains: "fix the bug"}}
    reply: {text: planned}
  - expect: {user: {contains: write the notes}}
    reply:
      tool_calls:
        - {name: write, arguments: {path: notes.txt, content: "hello\n"}}
  - expect: {tool_result: {contains: read-only}}
    reply: {text: "I may only read now."}
"#,
    );
    let script_path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../evoflux-acp/tests/fixtures/acp-sdk-client.mjs");
    let out = Command::new("node")
        .arg(&script_path)
        .env_clear()
        .envs(testing::env(s.tmp.path()))
        .env("PATH", std::env::var("PATH").unwrap())
        .env("EVOFLUX_TEST_ACP_SDK", &sdk)
        .env("ACP_AGENT", evoflux_bin())
        .env("ACP_MODEL", &model)
        .env("ACP_REPO", s.repo())
        .env("ACP_MCP_SERVER", &server)
        .env("ACP_SKILL", "notes")
        .current_dir(s.repo())
        .output()
        .expect("node runs");
    assert!(
        out.status.success(),
        "the SDK client's checks failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "ok");
    assert!(
        !s.repo().join("notes.txt").exists(),
        "read-only mode wrote nothing"
    );
}
