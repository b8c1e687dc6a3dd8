//! MCP call overhead and startup behaviour, against the stdio test server.
//!
//! - `direct`: `tools/call` through a bare rmcp client session.
//! - `manager`: the same call through `McpManager` / `ToolSet` (name
//!   lookup, per-call timeout, result conversion).
//! - `start_all_returns_ms`: how long starting a server that needs 2 s to
//!   come up blocks the caller (a session opening), and `ready_after_ms`:
//!   when its tools are listed.
//!
//! `cargo bench -p evoflux-mcp --bench calls` prints a JSON report.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use evoflux_mcp::{
    Launch, ManagerOptions, ManagerScope, McpManager, ServerDefinition, ServerOwner, StdioLaunch,
    TransportKind,
};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use serde_json::json;

const CALLS: usize = 300;

fn server() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_evoflux-mcp-testserver"))
}

fn definition(name: &str, program: PathBuf, args: Vec<String>) -> ServerDefinition {
    ServerDefinition {
        name: name.to_owned(),
        owner: ServerOwner::Global {
            source: None,
            layer: None,
        },
        transport: Some(TransportKind::Stdio),
        launch: Launch::Stdio(StdioLaunch {
            program,
            args,
            env: BTreeMap::new(),
            cwd: None,
            create_dirs: Vec::new(),
            references: Default::default(),
            pinned: Vec::new(),
        }),
        startup_timeout: None,
        webbridge: evoflux_mcp::definition::WebBridge::Undeclared,
    }
}

fn median_us(mut samples: Vec<Duration>) -> f64 {
    samples.sort();
    samples[samples.len() / 2].as_secs_f64() * 1e6
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(bench());
}

async fn bench() {
    let options = ManagerOptions {
        base_env: evoflux_mcp::environment::process_base_environment(),
        ..ManagerOptions::default()
    };

    // Direct SDK session.
    let client =
        ().serve(TokioChildProcess::new(tokio::process::Command::new(server())).unwrap())
            .await
            .unwrap();
    let mut direct = Vec::with_capacity(CALLS);
    for i in 0..CALLS + 20 {
        let args = json!({"message": "ping"}).as_object().cloned().unwrap();
        let start = Instant::now();
        client
            .call_tool(CallToolRequestParams::new("echo").with_arguments(args))
            .await
            .unwrap();
        if i >= 20 {
            direct.push(start.elapsed());
        }
    }
    let _ = client.cancel().await;

    // The same server through the manager.
    let manager = McpManager::new(
        ManagerScope::Global,
        vec![definition("local", server(), vec![])],
        options.clone(),
    )
    .unwrap();
    manager.start_all();
    assert!(manager.wait_settled(Duration::from_secs(30)).await);
    let set = manager.tool_set(&BTreeSet::new());
    let mut managed = Vec::with_capacity(CALLS);
    for i in 0..CALLS + 20 {
        let start = Instant::now();
        set.call_tool(
            "mcp__local__echo",
            json!({"message": "ping"}),
            Duration::from_secs(30),
        )
        .await
        .unwrap();
        if i >= 20 {
            managed.push(start.elapsed());
        }
    }
    manager.stop_all().await;

    // A server that takes 2 s to come up.
    let slow = McpManager::new(
        ManagerScope::Global,
        vec![definition(
            "slow",
            PathBuf::from("/bin/sh"),
            vec!["-c".into(), format!("sleep 2; exec {}", server().display())],
        )],
        options,
    )
    .unwrap();
    let start = Instant::now();
    slow.start_all();
    let returned = start.elapsed();
    let empty_at_once = slow.tool_set(&BTreeSet::new()).is_empty();
    assert!(slow.wait_settled(Duration::from_secs(30)).await);
    let ready = start.elapsed();
    slow.stop_all().await;

    let direct_us = median_us(direct);
    let managed_us = median_us(managed);
    let report = json!({
        "bench": "mcp_calls",
        "calls": CALLS,
        "direct_sdk_median_us": direct_us,
        "manager_median_us": managed_us,
        "manager_overhead_us": managed_us - direct_us,
        "slow_server": {
            "start_all_returns_ms": returned.as_secs_f64() * 1e3,
            "tools_offered_while_starting": !empty_at_once,
            "ready_after_ms": ready.as_secs_f64() * 1e3,
        }
    });
    println!("{}", serde_json::to_string_pretty(&report).unwrap());
}
