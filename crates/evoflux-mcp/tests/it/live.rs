//! What a server sends during a call, against the crate's rmcp test
//! server: progress and log messages reach the call's listener (in the
//! order sent, before the call returns), sampling
//! is answered by it, and a request with no call in flight — or with calls
//! of two sessions in flight — is refused with a reason the server reads.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use common::*;
use evoflux_mcp::live::{LOG_BURST, McpLogLevel};
use evoflux_mcp::testserver::{TestServerOptions, serve_http};
use evoflux_mcp::{ManagerOptions, ManagerScope, McpManager, ServerDefinition};
use serde_json::json;

const CALL: Duration = Duration::from_secs(30);

async fn ready(def: ServerDefinition) -> McpManager {
    let m = McpManager::new(ManagerScope::Global, vec![def], ManagerOptions::default()).unwrap();
    m.start_all();
    settle(&m).await;
    m
}

async fn progress_logs_and_sampling_reach_the_call(m: &McpManager, server: &str) {
    let set = m.tool_set(&BTreeSet::new());
    let seen = Arc::new(Recorder::default());
    let r = set
        .call_tool_in(
            &format!("mcp__{server}__chatter"),
            json!({}),
            CALL,
            context("s1", &seen),
        )
        .await
        .unwrap();
    assert_eq!(text(&r), "chattered");
    let progress = seen.progress.lock().unwrap().clone();
    assert_eq!(
        progress.iter().map(|p| p.progress).collect::<Vec<_>>(),
        [1.0, 2.0, 3.0]
    );
    assert_eq!(progress[2].total, Some(3.0));
    assert_eq!(progress[0].message.as_deref(), Some("step 1"));
    let logs = seen.logs.lock().unwrap().clone();
    assert_eq!(logs.len(), 1, "{logs:?}");
    assert_eq!(logs[0].level, McpLogLevel::Warning);
    assert_eq!(logs[0].logger.as_deref(), Some("chatter"));
    assert_eq!(logs[0].message, "disk almost full");

    let r = set
        .call_tool_in(
            &format!("mcp__{server}__sample"),
            json!({"prompt": "Where is the offsite?"}),
            CALL,
            context("s1", &seen),
        )
        .await
        .unwrap();
    assert_eq!(text(&r), "answer: Lisbon (model scripted)");
    let sampled = seen.sampled.lock().unwrap().clone();
    assert_eq!(sampled.len(), 1);
    assert_eq!(sampled[0].max_tokens, 50);
    assert_eq!(
        sampled[0].system_prompt.as_deref(),
        Some("Answer in one word.")
    );
    assert_eq!(sampled[0].messages[0].text, "Where is the offsite?");

    // A call without a context: the server's request is refused.
    let r = set
        .call_tool(
            &format!("mcp__{server}__sample"),
            json!({"prompt": "x"}),
            CALL,
        )
        .await
        .unwrap();
    assert!(text(&r).starts_with("error:"), "{}", text(&r));
    assert!(text(&r).contains("none is in flight"), "{}", text(&r));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_stdio_progress_logs_and_sampling_reach_the_call() {
    let m = ready(stdio("local", &[])).await;
    progress_logs_and_sampling_reach_the_call(&m, "local").await;
    m.stop_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_http_progress_logs_and_sampling_reach_the_call() {
    let srv = serve_http(TestServerOptions::default(), 0).await.unwrap();
    let m = ready(http("remote", &srv.url(), &[])).await;
    progress_logs_and_sampling_reach_the_call(&m, "remote").await;
    m.stop_all().await;
}

/// Calls `progress_then_result` many times: the progress written right
/// before each result reaches its call every time, although rmcp dispatches
/// it on a task of its own while the result goes straight to the call.
async fn progress_sent_with_the_result_reaches_the_call(m: &McpManager, server: &str) {
    let set = m.tool_set(&BTreeSet::new());
    let tool = format!("mcp__{server}__progress_then_result");
    for round in 0..200 {
        let seen = Arc::new(Recorder::default());
        let r = set
            .call_tool_in(&tool, json!({}), CALL, context("s1", &seen))
            .await
            .unwrap();
        assert_eq!(text(&r), "done");
        let progress = seen.progress.lock().unwrap().clone();
        assert_eq!(
            progress
                .iter()
                .map(|p| (p.progress, p.total))
                .collect::<Vec<_>>(),
            [(1.0, Some(1.0))],
            "round {round}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_stdio_progress_sent_with_the_result_reaches_the_call() {
    let m = ready(stdio("local", &[])).await;
    progress_sent_with_the_result_reaches_the_call(&m, "local").await;
    m.stop_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_http_progress_sent_with_the_result_reaches_the_call() {
    let srv = serve_http(TestServerOptions::default(), 0).await.unwrap();
    let m = ready(http("remote", &srv.url(), &[])).await;
    progress_sent_with_the_result_reaches_the_call(&m, "remote").await;
    m.stop_all().await;
}

/// Numbered logs written back to back, each call on a fresh connection
/// whose log rate admits that many at once.
const LOGS: u32 = 4;

/// Calls `logs_then_result` many times, on several connections (each
/// admits [`LOG_BURST`] log messages at once): the logs written right
/// before each result reach its call, and in the order written, every
/// time, although rmcp dispatches each on a task of its own while the
/// result goes straight to the call.
async fn logs_sent_with_the_result_reach_the_call_in_order(
    def: impl Fn() -> ServerDefinition,
    server: &str,
) {
    let tool = format!("mcp__{server}__logs_then_result");
    let written: Vec<String> = (0..LOGS).map(|n| format!("log {n}")).collect();
    for connection in 0..25 {
        let m = ready(def()).await;
        let set = m.tool_set(&BTreeSet::new());
        for round in 0..LOG_BURST / LOGS {
            let seen = Arc::new(Recorder::default());
            let r = set
                .call_tool_in(&tool, json!({"count": LOGS}), CALL, context("s1", &seen))
                .await
                .unwrap();
            assert_eq!(text(&r), "logged");
            let logs = seen.logs.lock().unwrap().clone();
            assert_eq!(
                logs.iter().map(|l| l.message.as_str()).collect::<Vec<_>>(),
                written,
                "connection {connection}, round {round}"
            );
            assert!(logs.iter().all(|l| l.level == McpLogLevel::Info));
        }
        m.stop_all().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_stdio_logs_sent_with_the_result_reach_the_call_in_order() {
    logs_sent_with_the_result_reach_the_call_in_order(|| stdio("local", &[]), "local").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_http_logs_sent_with_the_result_reach_the_call_in_order() {
    // Stateless, so the logs ride the call's own response stream before
    // its result. A stateful rmcp server sends a log on the standalone
    // GET stream instead: nothing orders another HTTP stream's reads
    // against the answer, and a log read after it finds no call.
    let options = TestServerOptions {
        json_response: true,
        ..TestServerOptions::default()
    };
    let srv = serve_http(options, 0).await.unwrap();
    let url = srv.url();
    logs_sent_with_the_result_reach_the_call_in_order(|| http("remote", &url, &[]), "remote").await;
}

/// Polls `last_sampling` until the server reports what it got back.
async fn last_sampling(set: &evoflux_mcp::ToolSet) -> String {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let r = set
            .call_tool("mcp__local__last_sampling", json!({}), CALL)
            .await
            .unwrap();
        if text(&r) != "nothing yet" {
            return text(&r);
        }
        assert!(tokio::time::Instant::now() < deadline, "never sampled");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_with_no_call_or_two_sessions_in_flight_is_refused() {
    let m = ready(stdio("local", &[])).await;
    let set = m.tool_set(&BTreeSet::new());
    let seen = Arc::new(Recorder::default());

    // Asked after its call ended: nobody owns it.
    set.call_tool_in(
        "mcp__local__sample_later",
        json!({"prompt": "late", "ms": 200}),
        CALL,
        context("s1", &seen),
    )
    .await
    .unwrap();
    let got = last_sampling(&set).await;
    assert!(got.contains("none is in flight"), "{got}");
    assert!(got.contains("mcp/request-unrouted"), "{got}");

    // Asked while calls of two sessions are in flight: which user should
    // answer is unknown.
    let other = Arc::new(Recorder::default());
    let (a, b, ()) = tokio::join!(
        set.call_tool_in(
            "mcp__local__sleep",
            json!({"ms": 1500}),
            CALL,
            context("s1", &seen)
        ),
        set.call_tool_in(
            "mcp__local__sleep",
            json!({"ms": 1500}),
            CALL,
            context("s2", &other)
        ),
        async {
            set.call_tool_in(
                "mcp__local__sample_later",
                json!({"prompt": "whose?", "ms": 500}),
                CALL,
                context("s1", &seen),
            )
            .await
            .unwrap();
        }
    );
    a.unwrap();
    b.unwrap();
    let got = last_sampling(&set).await;
    assert!(got.contains("mcp/request-ambiguous"), "{got}");
    assert!(seen.sampled.lock().unwrap().is_empty());
    assert!(other.sampled.lock().unwrap().is_empty());
    m.stop_all().await;
}
