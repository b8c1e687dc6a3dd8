#![allow(clippy::unwrap_used, clippy::expect_used)]

//! `tools/list_changed` end to end: a real MCP server (the rmcp test
//! server over Streamable HTTP on loopback) adds a tool during a turn; the
//! model's tool list stays as it was for the rest of that turn and offers
//! the new tool from the next turn on.

use crate::common;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use common::{Recorder, World, call, text};
use evoflux_core::AppMode;
use evoflux_harness::{CollectEvents, Harness, SessionRequest, TurnOptions};
use evoflux_mcp::testserver::{TestServerOptions, serve_http};
use evoflux_mcp::{ManagerOptions, McpRuntime};
use evoflux_store::WorkspaceRequest;
use serde_json::json;

const ADDED: &str = "mcp__live__dynamic_0";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_added_mid_turn_is_offered_from_the_next_turn() {
    let srv = serve_http(TestServerOptions::default(), 0).await.unwrap();
    let mcp = json!({"mcpServers": {"live": {"type": "http", "url": srv.url()}}});
    let world = World::with_files(&[(".evoflux/mcp.json", &mcp.to_string())]);
    let rt = McpRuntime::new(&world.graph, None, ManagerOptions::default())
        .unwrap()
        .0;
    let provider = Recorder::new(vec![
        // Turn 1: the server adds `dynamic_0` and sends list_changed; the
        // sleep gives the runtime time to re-list before the next step.
        call("c1", "mcp__live__add_tool", json!({})),
        call("c2", "mcp__live__sleep", json!({"ms": 1500})),
        text("First done."),
        // Turn 2.
        text("Second done."),
    ]);
    let mut setup = world
        .setup(
            AppMode::Work,
            provider.clone(),
            Arc::new(CollectEvents::default()),
        )
        .await;
    setup.agent.mcp = vec!["live".into()];
    setup.mcp = Some(rt.clone());
    let request = SessionRequest::New {
        workspace: WorkspaceRequest::Work,
        graph_hash: None,
    };
    let mut h = Harness::open(setup, request).await.unwrap();
    rt.settle(Duration::from_secs(20)).await;

    h.turn(Some("Add a tool."), TurnOptions::default())
        .await
        .unwrap();
    // The runtime re-listed during the turn (the manager's refresh).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while rt.tool_set(&BTreeSet::new()).get(ADDED).is_none() {
        assert!(tokio::time::Instant::now() < deadline, "never re-listed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    h.turn(Some("And now?"), TurnOptions::default())
        .await
        .unwrap();

    let requests = provider.requests();
    assert_eq!(requests.len(), 4);
    for (i, r) in requests[..3].iter().enumerate() {
        let names = Recorder::tool_names(r);
        assert!(
            names.contains(&"mcp__live__add_tool".to_owned()),
            "{names:?}"
        );
        assert!(
            !names.contains(&ADDED.to_owned()),
            "turn 1, step {i} already offers the new tool: {names:?}"
        );
    }
    let next = Recorder::tool_names(&requests[3]);
    assert!(next.contains(&ADDED.to_owned()), "turn 2: {next:?}");
    rt.shutdown().await;
}
