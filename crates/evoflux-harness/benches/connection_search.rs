//! Deferred MCP tools: what the first request costs with a 300-tool MCP
//! server granted, with and without deferral, and how long a search takes.
//!
//! A real MCP server (the rmcp test server over Streamable HTTP on
//! loopback) lists 300 filler tools besides its own; the model answers
//! instantly from memory. Prints a JSON report.
//!
//! `cargo bench -p evoflux-harness --bench connection_search`

#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

#[path = "../tests/it/common/mod.rs"]
mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{Recorder, World, call, text};
use evoflux_core::AppMode;
use evoflux_harness::tools::connection_search::{Deferrable, search};
use evoflux_harness::{CollectEvents, Harness, SessionRequest, TurnOptions};
use evoflux_mcp::testserver::{TestServerOptions, serve_http};
use evoflux_mcp::{ManagerOptions, McpRuntime};
use evoflux_store::WorkspaceRequest;
use serde_json::json;

const FILLER: usize = 300;
const SEARCHES: usize = 50;
const PURE_RUNS: usize = 2000;

async fn first_request(world: &World, rt: &McpRuntime, deferral: bool) -> (usize, usize) {
    let provider = Recorder::new(vec![text("Done.")]);
    let mut setup = world
        .setup(
            AppMode::Work,
            provider.clone(),
            Arc::new(CollectEvents::default()),
        )
        .await;
    setup.agent.mcp = vec!["big".into()];
    if !deferral {
        setup.agent.tools.retain(|t| t != "connection_search");
    }
    setup.mcp = Some(rt.clone());
    let mut h = Harness::open(setup, work()).await.unwrap();
    rt.settle(Duration::from_secs(20)).await;
    h.turn(Some("hi"), TurnOptions::default()).await.unwrap();
    let request = provider.last_request();
    (
        serde_json::to_string(&request).unwrap().len(),
        request.tools.len(),
    )
}

fn work() -> SessionRequest {
    SessionRequest::New {
        workspace: WorkspaceRequest::Work,
        graph_hash: None,
    }
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let server = serve_http(
            TestServerOptions {
                filler_tools: FILLER,
                ..TestServerOptions::default()
            },
            0,
        )
        .await
        .unwrap();
        let mcp = json!({"mcpServers": {"big": {"type": "http", "url": server.url()}}});
        let world = World::with_files(&[(".evoflux/mcp.json", &mcp.to_string())]);
        let rt = McpRuntime::new(&world.graph, None, ManagerOptions::default())
            .unwrap()
            .0;
        let (deferred_bytes, deferred_tools) = first_request(&world, &rt, true).await;
        let (direct_bytes, direct_tools) = first_request(&world, &rt, false).await;

        // The scoring alone, over the server's tools.
        let set = rt.tool_set(&Default::default());
        let tools: Vec<Deferrable<'_>> = set.tools().iter().map(Deferrable::mcp).collect();
        let queries = [
            "echo message",
            "filler 150",
            "environment variables",
            "nothing",
        ];
        let start = Instant::now();
        for i in 0..PURE_RUNS {
            std::hint::black_box(search(&tools, queries[i % queries.len()], 10));
        }
        let pure_us = start.elapsed().as_secs_f64() * 1e6 / PURE_RUNS as f64;

        // Whole calls through a session: argument checks, hooks, the
        // search, the durable tool message.
        let mut replies: Vec<_> = (0..SEARCHES)
            .map(|i| {
                call(
                    &format!("c{i}"),
                    "connection_search",
                    json!({"query": queries[i % queries.len()]}),
                )
            })
            .collect();
        replies.push(text("Done."));
        let provider = Recorder::new(replies);
        let mut setup = world
            .setup(
                AppMode::Work,
                provider.clone(),
                Arc::new(CollectEvents::default()),
            )
            .await;
        setup.agent.mcp = vec!["big".into()];
        setup.mcp = Some(rt.clone());
        let mut h = Harness::open(setup, work()).await.unwrap();
        rt.settle(Duration::from_secs(20)).await;
        let start = Instant::now();
        h.turn(Some("search"), TurnOptions::default())
            .await
            .unwrap();
        let per_step_us = start.elapsed().as_secs_f64() * 1e6 / SEARCHES as f64;
        rt.shutdown().await;
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({
                "mcp_tools": tools.len(),
                "first_request_bytes": {"deferred": deferred_bytes, "direct": direct_bytes},
                "first_request_tools": {"deferred": deferred_tools, "direct": direct_tools},
                "search_us": {"scoring_only": (pure_us * 10.0).round() / 10.0,
                               "per_model_step_with_one_search_call": per_step_us.round()},
            }))
            .unwrap()
        );
    });
}
