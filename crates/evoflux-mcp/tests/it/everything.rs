//! Against the reference server `@modelcontextprotocol/server-everything`
//! (npm), run with the machine's `node` from a local install whose
//! `dist/index.js` is named by `EVOFLUX_TEST_MCP_EVERYTHING`. Skipped, with
//! a note, when the variable is unset.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Duration;

use common::*;
use evoflux_mcp::environment::BASE_VARS;
use evoflux_mcp::{
    ManagerOptions, ManagerScope, McpManager, PluginContext, ServerState, plugin_definitions,
};
use evoflux_plugins::McpTransport;
use evoflux_plugins::mcp::{McpCommand, McpServer, McpServerEntry, StdioServer};
use serde_json::json;

const CALL: Duration = Duration::from_secs(30);

fn everything() -> Option<PathBuf> {
    match std::env::var_os("EVOFLUX_TEST_MCP_EVERYTHING") {
        Some(p) if !p.is_empty() => Some(PathBuf::from(p)),
        _ => {
            eprintln!(
                "note: EVOFLUX_TEST_MCP_EVERYTHING is not set; skipping the server-everything test"
            );
            None
        }
    }
}

/// Polls until the ready tool set contains `name`.
async fn wait_for_tool(m: &McpManager, name: &str) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while m.tool_set(&BTreeSet::new()).get(name).is_none() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{name} never appeared: {:?}",
            m.tool_set(&BTreeSet::new())
                .tools()
                .iter()
                .map(|t| &t.qualified_name)
                .collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_everything_as_a_plugin_server_over_stdio() {
    let Some(index) = everything() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap().join("plugin");
    std::fs::create_dir_all(&root).unwrap();
    let data = tmp.path().canonicalize().unwrap().join("data");
    let ctx = PluginContext {
        installation: "f".repeat(32),
        plugin: "every".into(),
        root: root.clone(),
        data_dir: data.clone(),
        credentials: BTreeMap::from([("SERVICE_API_TOKEN".into(), "tok-1".into())]),
        missing_credentials: Vec::new(),
        capabilities: BTreeMap::new(),
    };
    let entry = McpServerEntry {
        name: "everything".into(),
        transport: Some(McpTransport::Stdio),
        server: Some(McpServer::Stdio(StdioServer {
            command: McpCommand::Bare {
                name: "node".into(),
            },
            args: vec![index.to_string_lossy().into_owned(), "stdio".into()],
            env: BTreeMap::from([("STORE".into(), "${PLUGIN_DATA}/store".into())]),
            cwd: None,
        })),
    };
    let options = ManagerOptions {
        roots: vec![root.clone()],
        ..ManagerOptions::default()
    };
    let m = McpManager::new(
        ManagerScope::Plugin {
            installation: ctx.installation.clone(),
            plugin: ctx.plugin.clone(),
        },
        plugin_definitions(&ctx, &[entry]),
        options,
    )
    .unwrap();
    let mut events = m.subscribe();
    m.start_all();
    settle(&m).await;
    let status = m.status("everything").unwrap();
    assert_eq!(status.state, ServerState::Ready, "{status:?}");
    assert_eq!(status.protocol_version.as_deref(), Some("2025-11-25"));
    assert_eq!(
        status.server_info.as_ref().map(|s| s.name.as_str()),
        Some("mcp-servers/everything")
    );

    // It registers `get-roots-list` after `initialized` because we declared
    // roots, and says so with tools/list_changed.
    wait_for_tool(&m, "mcp__every_everything__get-roots-list").await;
    tools_changed(&mut events, "everything").await;
    let set = m.tool_set(&BTreeSet::new());
    let r = set
        .call_tool(
            "mcp__every_everything__echo",
            json!({"message": "hello"}),
            CALL,
        )
        .await
        .unwrap();
    assert_eq!(r.to_text(), "Echo: hello");
    let r = set
        .call_tool("mcp__every_everything__get-roots-list", json!({}), CALL)
        .await
        .unwrap();
    let uri = url::Url::from_file_path(&root).unwrap().to_string();
    assert!(r.to_text().contains(&uri), "{}", r.to_text());

    // Its image content becomes conversation media (and no base64 in text).
    let r = set
        .call_tool("mcp__every_everything__get-tiny-image", json!({}), CALL)
        .await
        .unwrap();
    let (text, media) = r.to_text_and_media();
    assert!(
        media
            .iter()
            .any(|m| m.kind == evoflux_protocol::MediaKind::Image && m.mime_type == "image/png"),
        "{media:?}"
    );
    assert!(media.iter().all(|m| !text.contains(&m.data)), "{text}");

    let r = set
        .call_tool("mcp__every_everything__get-env", json!({}), CALL)
        .await
        .unwrap();
    let seen: BTreeMap<String, serde_json::Value> = serde_json::from_str(&r.to_text()).unwrap();
    let s = |k: &str| {
        seen.get(k)
            .and_then(|v| v.as_str())
            .unwrap_or_default()
            .to_owned()
    };
    assert_eq!(s("PLUGIN_ROOT"), root.to_string_lossy());
    assert_eq!(s("PLUGIN_DATA"), data.to_string_lossy());
    assert_eq!(s("STORE"), format!("{}/store", data.to_string_lossy()));
    assert_eq!(s("SERVICE_API_TOKEN"), "tok-1");
    let allowed: BTreeSet<&str> = ["PLUGIN_ROOT", "PLUGIN_DATA", "STORE", "SERVICE_API_TOKEN"]
        .into_iter()
        .chain(BASE_VARS.iter().copied())
        .collect();
    for key in seen.keys() {
        assert!(allowed.contains(key.as_str()), "leaked {key}");
    }

    // Unknown tools come back as a tool error (TypeScript SDK style).
    let r = m
        .call_server_tool("everything", "nope", json!({}), CALL)
        .await;
    match r {
        Ok(result) => assert!(result.is_error),
        Err(e) => assert_eq!(e.code(), "mcp/protocol-error"),
    }
    m.stop_all().await;
    assert_eq!(m.status("everything").unwrap().state, ServerState::Stopped);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_everything_over_streamable_http() {
    let Some(index) = everything() else { return };
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let mut child = tokio::process::Command::new("node")
        .arg(&index)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    // Wait until it listens.
    let deadline = tokio::time::Instant::now() + WAIT;
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "server-everything did not listen"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let url = format!("http://127.0.0.1:{port}/mcp");
    let m = McpManager::new(
        ManagerScope::Global,
        vec![http("everything", &url, &[("X-Test", "literal")])],
        ManagerOptions::default(),
    )
    .unwrap();
    m.start_all();
    settle(&m).await;
    let status = m.status("everything").unwrap();
    assert_eq!(status.state, ServerState::Ready, "{status:?}");
    assert_eq!(status.protocol_version.as_deref(), Some("2025-11-25"));
    let r = m
        .call_server_tool("everything", "echo", json!({"message": "over http"}), CALL)
        .await
        .unwrap();
    assert_eq!(r.to_text(), "Echo: over http");
    let r = m
        .call_server_tool("everything", "get-sum", json!({"a": 2, "b": 3}), CALL)
        .await
        .unwrap();
    assert!(r.to_text().contains('5'), "{}", r.to_text());
    m.stop_all().await;
    let _ = child.kill().await;
}
