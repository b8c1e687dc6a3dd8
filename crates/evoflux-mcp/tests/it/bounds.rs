//! Per-call bounds and shutdown against the crate's rmcp test server: a
//! flooding call ends quickly with `mcp/result-too-large` (stdio and
//! Streamable HTTP) and the connection stays usable; a stdio server that
//! ignores end-of-input is still gone within a second of a stop.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::{Duration, Instant};

use common::*;
use evoflux_mcp::testserver::{TestServerOptions, serve_http};
use evoflux_mcp::{ManagerOptions, ManagerScope, McpError, McpManager, ServerDefinition};
use serde_json::json;

const CALL: Duration = Duration::from_secs(60);
const BOUND: usize = 1024 * 1024;
/// What the issue measured: a 64 MiB answer.
const FLOOD: usize = 64 * 1024 * 1024;

fn bounded(defs: Vec<ServerDefinition>) -> McpManager {
    let options = ManagerOptions {
        max_result_bytes: BOUND,
        ..ManagerOptions::default()
    };
    McpManager::new(ManagerScope::Global, defs, options).unwrap()
}

/// Floods `server`, checks the error and that the server still answers.
async fn flood_is_cut(m: &McpManager, server: &str) {
    let small = m
        .call_server_tool(server, "flood", json!({"bytes": 1000}), CALL)
        .await
        .unwrap();
    assert_eq!(text(&small).len(), 1000, "a result under the bound passes");

    let started = Instant::now();
    let err = m
        .call_server_tool(server, "flood", json!({"bytes": FLOOD}), CALL)
        .await
        .unwrap_err();
    let took = started.elapsed();
    println!("{server}: a {FLOOD}-byte answer ended after {took:?} ({err})");
    assert_eq!(err.code(), "mcp/result-too-large", "{err}");
    match &err {
        McpError::ResultTooLarge {
            server: s,
            tool,
            limit,
        } => assert_eq!(
            (s.as_str(), tool.as_str(), *limit),
            (server, "flood", BOUND)
        ),
        other => panic!("{other:?}"),
    }
    assert!(took < Duration::from_secs(20), "took {took:?}");
    let r = m
        .call_server_tool(server, "echo", json!({"message": "after"}), CALL)
        .await
        .unwrap();
    assert_eq!(text(&r), "Echo: after", "the connection stays usable");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flooding_stdio_call_ends_with_result_too_large() {
    let m = bounded(vec![stdio("flood", &[])]);
    m.start_all();
    settle(&m).await;
    flood_is_cut(&m, "flood").await;
    m.stop_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flooding_http_call_ends_with_result_too_large() {
    let srv = serve_http(TestServerOptions::default(), 0).await.unwrap();
    let m = bounded(vec![http("flood", &srv.url(), &[])]);
    m.start_all();
    settle(&m).await;
    flood_is_cut(&m, "flood").await;
    m.stop_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flooding_http_json_body_ends_with_result_too_large() {
    let options = TestServerOptions {
        json_response: true,
        ..TestServerOptions::default()
    };
    let srv = serve_http(options, 0).await.unwrap();
    let m = bounded(vec![http("flood", &srv.url(), &[])]);
    m.start_all();
    settle(&m).await;
    flood_is_cut(&m, "flood").await;
    m.stop_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_bound_is_a_few_mebibytes() {
    let bound = ManagerOptions::default().max_result_bytes;
    assert_eq!(bound, evoflux_mcp::DEFAULT_MAX_RESULT_BYTES);
    assert!((1024 * 1024..=16 * 1024 * 1024).contains(&bound), "{bound}");
}

/// Stops `server`, returning how long the stop took and the pid it had.
async fn timed_stop(m: &McpManager, server: &str) -> (Duration, u32) {
    let pid: u32 = text(
        &m.call_server_tool(server, "pid", json!({}), CALL)
            .await
            .unwrap(),
    )
    .parse()
    .unwrap();
    let started = Instant::now();
    m.stop(server).await.unwrap();
    (started.elapsed(), pid)
}

#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_ignores_end_of_input_is_terminated_at_stop() {
    let m = McpManager::new(
        ManagerScope::Global,
        vec![stdio("polite", &[]), stdio("deaf", &["--ignore-eof"])],
        ManagerOptions::default(),
    )
    .unwrap();
    m.start_all();
    settle(&m).await;

    let (polite, pid) = timed_stop(&m, "polite").await;
    println!("a server that exits at end-of-input stopped in {polite:?}");
    assert!(process_gone(pid), "server {pid} survived its stop");

    let (deaf, pid) = timed_stop(&m, "deaf").await;
    println!(
        "a server that ignores end-of-input stopped in {deaf:?} (end-of-input grace {:?}, then SIGTERM)",
        evoflux_mcp::EOF_GRACE
    );
    assert!(process_gone(pid), "server {pid} survived its stop");
    assert!(deaf < Duration::from_secs(3), "took {deaf:?}");
}
