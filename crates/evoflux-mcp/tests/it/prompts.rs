//! MCP prompts and resources against the reference server
//! `@modelcontextprotocol/server-everything` (its `dist/index.js` named by
//! `EVOFLUX_TEST_MCP_EVERYTHING`; skipped with a note when unset): prompts
//! are listed with the server's tools under the tools' naming, expanded
//! with `prompts/get`, and resources listed and read.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::PathBuf;
use std::time::Duration;

use common::*;
use evoflux_mcp::{
    Launch, ManagerOptions, ManagerScope, McpManager, ResourceBody, ServerDefinition, ServerState,
    StdioLaunch, TransportKind,
};
use serde_json::{Map, Value};

const CALL: Duration = Duration::from_secs(30);

fn everything() -> Option<PathBuf> {
    match std::env::var_os("EVOFLUX_TEST_MCP_EVERYTHING") {
        Some(p) if !p.is_empty() => Some(PathBuf::from(p)),
        _ => {
            eprintln!(
                "note: EVOFLUX_TEST_MCP_EVERYTHING is not set; skipping the MCP prompts test"
            );
            None
        }
    }
}

fn node() -> PathBuf {
    std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .map(|d| d.join("node"))
        .find(|p| p.is_file())
        .expect("node on PATH")
}

fn everything_server(index: &std::path::Path) -> ServerDefinition {
    ServerDefinition {
        name: "everything".into(),
        owner: global(),
        transport: Some(TransportKind::Stdio),
        launch: Launch::Stdio(StdioLaunch {
            program: node(),
            args: vec![index.to_string_lossy().into_owned(), "stdio".into()],
            env: Default::default(),
            cwd: None,
            create_dirs: Vec::new(),
            references: Default::default(),
            pinned: Vec::new(),
        }),
        startup_timeout: Some(WAIT),
        webbridge: evoflux_mcp::definition::WebBridge::Undeclared,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prompts_and_resources_of_server_everything() {
    let Some(index) = everything() else { return };
    let m = McpManager::new(
        ManagerScope::Global,
        vec![everything_server(&index)],
        ManagerOptions::default(),
    )
    .unwrap();
    m.start_all();
    settle(&m).await;
    assert_eq!(state(&m, "everything"), ServerState::Ready);

    let set = evoflux_mcp::PromptSet::assemble(&[&m]);
    let names: Vec<&str> = set
        .prompts()
        .iter()
        .map(|p| p.qualified_name.as_str())
        .collect();
    assert!(
        names.contains(&"mcp__everything__simple-prompt"),
        "{names:?}"
    );
    let args = set.get("mcp__everything__args-prompt").unwrap();
    let declared: Vec<(&str, bool)> = args
        .arguments
        .iter()
        .map(|a| (a.name.as_str(), a.required))
        .collect();
    assert_eq!(declared, [("city", true), ("state", false)]);

    let simple = set
        .get_prompt("mcp__everything__simple-prompt", Map::new(), CALL)
        .await
        .unwrap();
    assert_eq!(simple.messages.len(), 1);
    assert_eq!(simple.messages[0].0, "user");
    assert_eq!(
        simple.messages[0].1.to_text(),
        "This is a simple prompt without arguments."
    );
    let mut a = Map::new();
    a.insert("city".into(), Value::from("Austin"));
    a.insert("state".into(), Value::from("Texas"));
    let r = set
        .get_prompt("mcp__everything__args-prompt", a, CALL)
        .await
        .unwrap();
    assert_eq!(
        r.messages[0].1.to_text(),
        "What's weather in Austin, Texas?"
    );
    // A required argument left out: the server refuses (a protocol error).
    let e = set
        .get_prompt("mcp__everything__args-prompt", Map::new(), CALL)
        .await
        .unwrap_err();
    assert_eq!(e.code(), "mcp/protocol-error", "{e}");

    let resources = m.list_resources("everything", CALL).await.unwrap();
    let doc = "demo://resource/static/document/features.md";
    assert!(resources.iter().any(|r| r.uri == doc), "{resources:?}");
    let parts = m.read_resource("everything", doc, CALL).await.unwrap();
    assert_eq!(parts[0].mime_type.as_deref(), Some("text/markdown"));
    assert!(matches!(&parts[0].body, ResourceBody::Text { text } if !text.is_empty()));
    let blob = m
        .read_resource("everything", "demo://resource/dynamic/blob/1", CALL)
        .await
        .unwrap();
    assert!(
        matches!(&blob[0].body, ResourceBody::Blob { .. }),
        "{blob:?}"
    );
    let e = m
        .read_resource("everything", "demo://nowhere/at/all", CALL)
        .await
        .unwrap_err();
    assert_eq!(e.code(), "mcp/protocol-error", "{e}");
    let e = m.read_resource("nope", doc, CALL).await.unwrap_err();
    assert_eq!(e.code(), "mcp/unknown-server");
    m.stop_all().await;
}

/// The test server's prompts: listed at start, expanded with their
/// arguments, and listed again after `prompts/list_changed`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prompts_list_changed_refreshes_the_prompts() {
    let m = McpManager::new(
        ManagerScope::Global,
        vec![stdio("local", &[])],
        ManagerOptions::default(),
    )
    .unwrap();
    m.start_all();
    settle(&m).await;
    let set = evoflux_mcp::PromptSet::assemble(&[&m]);
    let names: Vec<&str> = set
        .prompts()
        .iter()
        .map(|p| p.qualified_name.as_str())
        .collect();
    assert_eq!(names, ["mcp__local__greet"]);
    let mut a = Map::new();
    a.insert("name".into(), Value::from("Ada"));
    let r = set.get_prompt("mcp__local__greet", a, CALL).await.unwrap();
    assert_eq!(r.messages[0].1.to_text(), "Say hello to Ada.");
    let e = set
        .get_prompt("mcp__nope__x", Map::new(), CALL)
        .await
        .unwrap_err();
    assert_eq!(e.code(), "mcp/unknown-tool");

    m.call_server_tool("local", "add_prompt", serde_json::json!({}), CALL)
        .await
        .unwrap();
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let set = evoflux_mcp::PromptSet::assemble(&[&m]);
        if let Some(p) = set.get("mcp__local__dynamic_prompt_0") {
            assert_eq!(p.prompt, "dynamic_prompt_0");
            let r = set
                .get_prompt("mcp__local__dynamic_prompt_0", Map::new(), CALL)
                .await
                .unwrap();
            assert_eq!(r.messages[0].1.to_text(), "dynamic_prompt_0 expanded.");
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the new prompt never appeared"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    m.stop_all().await;
    assert!(evoflux_mcp::PromptSet::assemble(&[&m]).prompts().is_empty());
}
