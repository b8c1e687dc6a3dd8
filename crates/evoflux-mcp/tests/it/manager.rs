//! The manager against the crate's rmcp test server, over stdio and
//! Streamable HTTP: handshake, paging, list_changed, calls, isolation,
//! lifecycle.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::*;
use evoflux_mcp::environment::{BASE_VARS, base_environment};
use evoflux_mcp::testserver::{TestServerOptions, serve_http};
use evoflux_mcp::{
    Launch, ManagerOptions, ManagerScope, McpError, McpManager, ServerDefinition, ServerOwner,
    ServerState, ToolSet, TransportKind, codes,
};
use serde_json::{Value, json};

const CALL: Duration = Duration::from_secs(30);

fn manager(defs: Vec<ServerDefinition>) -> McpManager {
    McpManager::new(ManagerScope::Global, defs, ManagerOptions::default()).unwrap()
}

fn manager_with(defs: Vec<ServerDefinition>, options: ManagerOptions) -> McpManager {
    McpManager::new(ManagerScope::Global, defs, options).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_handshake_lists_tools_and_calls() {
    let m = manager(vec![stdio("local", &[])]);
    m.start_all();
    settle(&m).await;
    let status = m.status("local").unwrap();
    assert_eq!(status.state, ServerState::Ready, "{status:?}");
    assert_eq!(status.protocol_version.as_deref(), Some("2025-11-25"));
    assert_eq!(status.transport, Some(TransportKind::Stdio));
    let names: BTreeSet<_> = status.tools.iter().map(|t| t.name.as_str()).collect();
    for expected in ["echo", "add", "get_env", "fail", "sleep", "add_tool"] {
        assert!(names.contains(expected), "{names:?}");
    }

    let set = m.tool_set(&BTreeSet::new());
    let echo = set.get("mcp__local__echo").unwrap();
    assert_eq!(echo.server, "local");
    assert_eq!(echo.tool, "echo");
    assert_eq!(echo.input_schema["required"], json!(["message"]));
    assert_eq!(echo.description, "Echoes the message back.");

    let r = set
        .call_tool("mcp__local__echo", json!({"message": "hi"}), CALL)
        .await
        .unwrap();
    assert!(!r.is_error);
    assert_eq!(text(&r), "Echo: hi");
    let r = m
        .call_tool("mcp__local__add", json!({"a": 2, "b": 40}), CALL)
        .await
        .unwrap();
    assert_eq!(text(&r), "42");
    m.stop_all().await;
    assert_eq!(state(&m, "local"), ServerState::Stopped);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_handshake_lists_tools_and_calls() {
    let server = serve_http(TestServerOptions::default(), 0).await.unwrap();
    let m = manager(vec![http("remote", &server.url(), &[])]);
    m.start_all();
    settle(&m).await;
    let status = m.status("remote").unwrap();
    assert_eq!(status.state, ServerState::Ready, "{status:?}");
    assert_eq!(status.protocol_version.as_deref(), Some("2025-11-25"));
    let r = m
        .call_server_tool("remote", "echo", json!({"message": "over http"}), CALL)
        .await
        .unwrap();
    assert_eq!(text(&r), "Echo: over http");
    m.stop_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_list_is_paginated() {
    let server = serve_http(
        TestServerOptions {
            page_size: 3,
            filler_tools: 10,
            ..TestServerOptions::default()
        },
        0,
    )
    .await
    .unwrap();
    let m = manager(vec![
        stdio("paged", &["--page-size", "2", "--filler-tools", "7"]),
        http("paged-http", &server.url(), &[]),
    ]);
    m.start_all();
    settle(&m).await;
    let stdio_tools = m.status("paged").unwrap().tools;
    let http_tools = m.status("paged-http").unwrap().tools;
    // Every page was read: the last filler tools are there.
    assert!(stdio_tools.iter().any(|t| t.name == "filler_6"));
    assert!(http_tools.iter().any(|t| t.name == "filler_9"));
    assert_eq!(http_tools.len(), stdio_tools.len() + 3);
    let unique: BTreeSet<_> = stdio_tools.iter().map(|t| &t.name).collect();
    assert_eq!(unique.len(), stdio_tools.len());
    m.stop_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_changed_refreshes_tools_over_stdio_and_http() {
    let server = serve_http(TestServerOptions::default(), 0).await.unwrap();
    let m = manager(vec![stdio("s", &[]), http("h", &server.url(), &[])]);
    let mut events = m.subscribe();
    m.start_all();
    settle(&m).await;
    for name in ["s", "h"] {
        assert!(
            m.tool_set(&BTreeSet::new())
                .get(&format!("mcp__{name}__dynamic_0"))
                .is_none()
        );
        let r = m
            .call_server_tool(name, "add_tool", json!({}), CALL)
            .await
            .unwrap();
        assert_eq!(text(&r), "added dynamic_0");
        tools_changed(&mut events, name).await;
        let set = m.tool_set(&BTreeSet::new());
        let qualified = format!("mcp__{name}__dynamic_0");
        assert!(set.get(&qualified).is_some(), "{name}: {:?}", set.tools());
        let r = set.call_tool(&qualified, json!({}), CALL).await.unwrap();
        assert_eq!(text(&r), "dynamic_0");
    }
    m.stop_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_re_list_is_the_servers_last_error_and_keeps_its_tools() {
    let m = manager(vec![stdio("s", &[])]);
    m.start_all();
    settle(&m).await;
    let before = m.status("s").unwrap().tools.len();
    m.call_server_tool("s", "add_tool", json!({"break_listing": true}), CALL)
        .await
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let status = loop {
        let st = m.status("s").unwrap();
        if st.last_error.is_some() || std::time::Instant::now() > deadline {
            break st;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let error = status.last_error.expect("the failed re-list is reported");
    assert_eq!(error.code, "mcp/tools-list-failed");
    assert_eq!(status.state, ServerState::Ready);
    assert_eq!(status.tools.len(), before, "the previous tools stay");
    m.stop_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_errors_are_results_and_failures_are_typed() {
    let m = manager(vec![stdio("t", &[])]);
    m.start_all();
    settle(&m).await;
    let set = m.tool_set(&BTreeSet::new());

    let r = set
        .call_tool("mcp__t__fail", json!({"message": "boom"}), CALL)
        .await
        .unwrap();
    assert!(r.is_error);
    assert_eq!(text(&r), "boom");

    let err = set
        .call_tool(
            "mcp__t__sleep",
            json!({"ms": 60_000}),
            Duration::from_millis(300),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), "mcp/call-timeout");
    // The server still answers after a timed-out call.
    let r = set
        .call_tool("mcp__t__echo", json!({"message": "still here"}), CALL)
        .await
        .unwrap();
    assert_eq!(text(&r), "Echo: still here");

    let err = set
        .call_tool("mcp__t__nope", json!({}), CALL)
        .await
        .unwrap_err();
    assert!(matches!(err, McpError::UnknownTool(_)));
    // A tool the server does not know, called by raw name: JSON-RPC error.
    let err = m
        .call_server_tool("t", "nope", json!({}), CALL)
        .await
        .unwrap_err();
    assert_eq!(err.code(), "mcp/protocol-error", "{err}");
    let err = set
        .call_tool("mcp__t__echo", json!([1]), CALL)
        .await
        .unwrap_err();
    assert_eq!(err.code(), "mcp/invalid-arguments");
    m.stop_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_environment_is_built_explicitly() {
    let parent = [
        ("PATH", std::env::var("PATH").unwrap_or_default()),
        ("HOME", "/home/tester".to_owned()),
        ("OPENAI_API_KEY", "sk-must-not-leak".to_owned()),
        ("LEAKY_SECRET", "nope".to_owned()),
    ];
    let options = ManagerOptions {
        base_env: base_environment(parent),
        ..ManagerOptions::default()
    };
    let overlay = BTreeMap::from([("CONFIGURED".to_owned(), "yes".to_owned())]);
    let m = manager_with(vec![stdio_with("env", &[], overlay)], options);
    m.start_all();
    settle(&m).await;
    let r = m
        .call_server_tool("env", "get_env", json!({}), CALL)
        .await
        .unwrap();
    let env: BTreeMap<String, String> = serde_json::from_str(&text(&r)).unwrap();
    assert_eq!(env["CONFIGURED"], "yes");
    assert_eq!(env["HOME"], "/home/tester");
    assert!(!env.contains_key("OPENAI_API_KEY"));
    assert!(!env.contains_key("LEAKY_SECRET"));
    // Nothing of the test process (CARGO_*, RUST_*, …) leaks either.
    for key in env.keys() {
        assert!(
            key == "CONFIGURED" || BASE_VARS.contains(&key.as_str()),
            "leaked {key}"
        );
    }
    m.stop_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn roots_list_is_answered_with_the_session_roots() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let options = ManagerOptions {
        roots: vec![root.clone()],
        ..ManagerOptions::default()
    };
    let m = manager_with(vec![stdio("r", &[])], options);
    m.start_all();
    settle(&m).await;
    let r = m
        .call_server_tool("r", "roots", json!({}), CALL)
        .await
        .unwrap();
    let roots: Value = serde_json::from_str(&text(&r)).unwrap();
    let uri = url::Url::from_file_path(&root).unwrap().to_string();
    assert_eq!(roots["roots"][0]["uri"], json!(uri));
    m.stop_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_whose_pinned_file_changed_is_not_started_again() {
    let tmp = tempfile::tempdir().unwrap();
    let script = tmp.path().join("server.js");
    std::fs::write(&script, "serve();\n").unwrap();
    let mut pinned = stdio("pinned", &[]);
    if let Launch::Stdio(l) = &mut pinned.launch {
        l.pinned = vec![evoflux_graph::grants::LaunchFile {
            path: script.clone(),
            source: "server.js".into(),
            sha256: Some(evoflux_core::hash::sha256_hex(b"serve();\n").to_string()),
        }];
    }
    let m = manager(vec![pinned]);
    m.start_all();
    settle(&m).await;
    assert_eq!(state(&m, "pinned"), ServerState::Ready);
    m.stop("pinned").await.unwrap();

    // Rewritten while it ran: a restart is refused.
    std::fs::write(&script, "serve(); steal();\n").unwrap();
    m.start("pinned").unwrap();
    settle(&m).await;
    let s = m.status("pinned").unwrap();
    assert_eq!(s.state, ServerState::Failed, "{s:?}");
    let error = s.last_error.unwrap();
    assert_eq!(error.code, codes::CHANGED_SINCE_TRUST);
    assert!(error.message.contains("`server.js`"), "{error:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_bad_server_does_not_affect_the_good_one() {
    let mut missing = stdio("missing", &[]);
    if let Launch::Stdio(l) = &mut missing.launch {
        l.program = "/nonexistent/evoflux-no-such-server".into();
    }
    let crashing = ServerDefinition {
        launch: Launch::Stdio(evoflux_mcp::StdioLaunch {
            program: "sh".into(),
            args: vec!["-c".into(), "echo 'config broken' >&2; exit 1".into()],
            env: BTreeMap::new(),
            cwd: None,
            create_dirs: Vec::new(),
            references: Default::default(),
            pinned: Vec::new(),
        }),
        ..stdio("crashing", &[])
    };
    let refused = http("refused", "http://127.0.0.1:9/mcp", &[]);
    let sse = ServerDefinition {
        transport: Some(TransportKind::Sse),
        launch: Launch::Unsupported,
        ..stdio("legacy", &[])
    };
    let m = manager(vec![missing, crashing, refused, sse, stdio("good", &[])]);
    m.start_all();
    settle(&m).await;
    for bad in ["missing", "crashing", "refused"] {
        let s = m.status(bad).unwrap();
        assert_eq!(s.state, ServerState::Failed, "{s:?}");
        assert_eq!(s.last_error.as_ref().unwrap().code, codes::START_FAILED);
    }
    // The process's stderr explains the failure.
    let crashed = m.status("crashing").unwrap().last_error.unwrap();
    assert!(crashed.message.contains("config broken"), "{crashed:?}");
    let legacy = m.status("legacy").unwrap();
    assert_eq!(legacy.state, ServerState::Skipped);
    assert_eq!(
        legacy.last_error.unwrap().code,
        codes::TRANSPORT_UNSUPPORTED
    );
    assert_eq!(state(&m, "good"), ServerState::Ready);
    let set = m.tool_set(&BTreeSet::new());
    assert!(set.tools().iter().all(|t| t.server == "good"));
    assert!(set.get("mcp__good__echo").is_some());
    let err = m
        .call_server_tool("missing", "echo", json!({}), CALL)
        .await
        .unwrap_err();
    assert_eq!(err.code(), "mcp/server-not-ready");
    m.stop_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_server_never_blocks_and_times_out() {
    let slow = ServerDefinition {
        launch: Launch::Stdio(evoflux_mcp::StdioLaunch {
            program: "sleep".into(),
            args: vec!["30".into()],
            env: BTreeMap::new(),
            cwd: None,
            create_dirs: Vec::new(),
            references: Default::default(),
            pinned: Vec::new(),
        }),
        ..stdio("slow", &[])
    };
    let options = ManagerOptions {
        startup_timeout: Duration::from_millis(500),
        ..ManagerOptions::default()
    };
    let m = manager_with(vec![slow, stdio("fast", &[])], options);
    m.start_all();
    // start_all returned while the servers are still starting.
    assert_eq!(state(&m, "slow"), ServerState::Starting);
    settle(&m).await;
    let s = m.status("slow").unwrap();
    assert_eq!(s.state, ServerState::Failed);
    assert_eq!(s.last_error.unwrap().code, codes::STARTUP_TIMEOUT);
    // The fast one may or may not have made it in 500 ms on a busy
    // machine; restarted with a normal timeout it must be ready.
    let m2 = manager(vec![stdio("fast", &[])]);
    m2.start_all();
    settle(&m2).await;
    assert_eq!(state(&m2, "fast"), ServerState::Ready);
    m.stop_all().await;
    m2.stop_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_servers_own_startup_timeout_overrides_the_managers() {
    let slow = ServerDefinition {
        startup_timeout: Some(Duration::from_secs(1)),
        ..stdio("slow", &["--start-delay-ms", "600000"])
    };
    // Far beyond `settle`'s wait: were the manager's default used, the
    // server would still be starting when `settle` gives up.
    let options = ManagerOptions {
        startup_timeout: WAIT * 10,
        ..ManagerOptions::default()
    };
    let m = manager_with(vec![slow], options);
    m.start_all();
    settle(&m).await;
    let s = m.status("slow").unwrap();
    assert_eq!(s.state, ServerState::Failed, "{s:?}");
    assert_eq!(s.last_error.unwrap().code, codes::STARTUP_TIMEOUT);
    m.stop_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_longest_startup_timeout_counts_every_startable_server() {
    let options = ManagerOptions {
        startup_timeout: Duration::from_secs(10),
        ..ManagerOptions::default()
    };
    let with = |name: &str, secs: u64| ServerDefinition {
        startup_timeout: Some(Duration::from_secs(secs)),
        ..stdio(name, &[])
    };
    // Shorter own limits never shorten the wait below the default.
    let short = manager_with(vec![with("a", 2), stdio("b", &[])], options.clone());
    assert_eq!(short.longest_startup_timeout(), Duration::from_secs(10));
    let long = manager_with(vec![with("a", 2), with("c", 120)], options.clone());
    assert_eq!(long.longest_startup_timeout(), Duration::from_secs(120));
    // A server that never starts is never waited for.
    let never = ServerDefinition {
        transport: Some(TransportKind::Sse),
        launch: Launch::Unsupported,
        ..with("legacy", 300)
    };
    let skipped = manager_with(vec![never], options);
    assert_eq!(skipped.longest_startup_timeout(), Duration::from_secs(10));
}

#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_leaves_no_processes_and_restart_starts_a_new_one() {
    let m = manager(vec![stdio("p", &[])]);
    m.start_all();
    settle(&m).await;
    let pid: u32 = text(
        &m.call_server_tool("p", "pid", json!({}), CALL)
            .await
            .unwrap(),
    )
    .parse()
    .unwrap();
    let child: u32 = text(
        &m.call_server_tool("p", "spawn_child", json!({}), CALL)
            .await
            .unwrap(),
    )
    .parse()
    .unwrap();
    assert!(!process_gone(pid) && !process_gone(child));

    m.restart("p").await.unwrap();
    // The old server and the grandchild it started are gone.
    assert!(wait_gone(pid).await, "server {pid} survived");
    assert!(wait_gone(child).await, "grandchild {child} survived");
    settle(&m).await;
    assert_eq!(state(&m, "p"), ServerState::Ready);
    let new_pid: u32 = text(
        &m.call_server_tool("p", "pid", json!({}), CALL)
            .await
            .unwrap(),
    )
    .parse()
    .unwrap();
    assert_ne!(new_pid, pid);

    m.stop("p").await.unwrap();
    assert_eq!(state(&m, "p"), ServerState::Stopped);
    assert!(wait_gone(new_pid).await);
    let err = m
        .call_server_tool("p", "echo", json!({}), CALL)
        .await
        .unwrap_err();
    assert_eq!(err.code(), "mcp/server-not-ready");
}

#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_manager_kills_its_servers() {
    let pid: u32 = {
        let m = manager(vec![stdio("d", &[])]);
        m.start_all();
        settle(&m).await;
        text(
            &m.call_server_tool("d", "pid", json!({}), CALL)
                .await
                .unwrap(),
        )
        .parse()
        .unwrap()
    };
    assert!(wait_gone(pid).await, "server {pid} outlived its manager");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_server_is_reported_failed() {
    let m = manager(vec![stdio("c", &[])]);
    m.start_all();
    settle(&m).await;
    let err = m
        .call_server_tool("c", "crash", json!({}), CALL)
        .await
        .unwrap_err();
    assert_eq!(err.code(), "mcp/transport-error", "{err}");
    // The closed transport is noticed on the next look.
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let s = m.status("c").unwrap();
        if s.state == ServerState::Failed {
            assert_eq!(s.last_error.unwrap().code, codes::SERVER_EXITED);
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{s:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(m.tool_set(&BTreeSet::new()).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reload_diffs_definitions() {
    let m = manager(vec![
        stdio("keep", &[]),
        stdio("change", &[]),
        stdio("drop", &[]),
    ]);
    m.start_all();
    settle(&m).await;
    let keep_pid = text(
        &m.call_server_tool("keep", "pid", json!({}), CALL)
            .await
            .unwrap(),
    );
    let report = m
        .reload(vec![
            stdio("keep", &[]),
            stdio("change", &["--filler-tools", "1"]),
            stdio("new", &[]),
        ])
        .await;
    assert_eq!(report.unchanged, ["keep"]);
    assert_eq!(report.changed, ["change"]);
    assert_eq!(report.removed, ["drop"]);
    assert_eq!(report.added, ["new"]);
    settle(&m).await;
    let names: Vec<_> = m.statuses().into_iter().map(|s| s.name).collect();
    assert_eq!(names, ["change", "keep", "new"]);
    assert!(m.statuses().iter().all(|s| s.state == ServerState::Ready));
    assert!(
        m.status("change")
            .unwrap()
            .tools
            .iter()
            .any(|t| t.name == "filler_0")
    );
    // The unchanged server kept running (same process).
    let again = text(
        &m.call_server_tool("keep", "pid", json!({}), CALL)
            .await
            .unwrap(),
    );
    assert_eq!(keep_pid, again);
    m.stop_all().await;
}

/// A loopback server that records whether it was contacted, and one that
/// redirects there: configured headers must never reach the second origin.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redirects_are_refused() {
    let hits = Arc::new(AtomicUsize::new(0));
    let target = {
        let hits = hits.clone();
        let app = axum::Router::new().fallback(move || {
            let hits = hits.clone();
            async move {
                hits.fetch_add(1, Ordering::SeqCst);
                "x"
            }
        });
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(l, app).await });
        addr
    };
    let redirector = {
        let location = format!("http://{target}/mcp");
        let app = axum::Router::new().fallback(move || {
            let location = location.clone();
            async move {
                (
                    axum::http::StatusCode::TEMPORARY_REDIRECT,
                    [(axum::http::header::LOCATION, location)],
                )
            }
        });
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(l, app).await });
        addr
    };
    let m = manager(vec![http(
        "redirecting",
        &format!("http://{redirector}/mcp"),
        &[("X-Api-Key", "secret")],
    )]);
    m.start_all();
    settle(&m).await;
    let s = m.status("redirecting").unwrap();
    assert_eq!(s.state, ServerState::Failed, "{s:?}");
    assert_eq!(hits.load(Ordering::SeqCst), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configured_headers_are_sent_literally_and_reserved_ones_dropped() {
    let server = serve_http(TestServerOptions::default(), 0).await.unwrap();
    let m = manager(vec![http(
        "hdr",
        &server.url(),
        &[
            ("X-Api-Key", "${PLUGIN_DATA} $HOME literal"),
            ("Authorization", "Bearer tok"),
            ("Accept", "text/plain"),
        ],
    )]);
    m.start_all();
    settle(&m).await;
    assert_eq!(state(&m, "hdr"), ServerState::Ready);
    let r = m
        .call_server_tool("hdr", "headers", json!({}), CALL)
        .await
        .unwrap();
    let headers: BTreeMap<String, String> = serde_json::from_str(&text(&r)).unwrap();
    assert_eq!(headers["x-api-key"], "${PLUGIN_DATA} $HOME literal");
    assert_eq!(headers["authorization"], "Bearer tok");
    assert!(
        headers["accept"].contains("text/event-stream"),
        "{headers:?}"
    );
    m.stop_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn qualified_names_are_unique_across_managers_and_reserved_names() {
    let server = serve_http(TestServerOptions::default(), 0).await.unwrap();
    // `demo_svc` (global) and server `svc` of plugin `demo` both qualify as
    // `mcp__demo_svc__*`.
    let global = manager(vec![http("demo_svc", &server.url(), &[])]);
    let mut plugin_def = http("svc", &server.url(), &[]);
    plugin_def.owner = ServerOwner::Plugin {
        installation: "0".repeat(32),
        plugin: "demo".into(),
    };
    let plugin = McpManager::new(
        ManagerScope::Plugin {
            installation: "0".repeat(32),
            plugin: "demo".into(),
        },
        vec![plugin_def],
        ManagerOptions::default(),
    )
    .unwrap();
    global.start_all();
    plugin.start_all();
    settle(&global).await;
    settle(&plugin).await;
    let reserved = BTreeSet::from(["mcp__demo_svc__add".to_owned()]);
    let set = ToolSet::assemble(&[&global, &plugin], &reserved);
    let names: Vec<&str> = set
        .tools()
        .iter()
        .map(|t| t.qualified_name.as_str())
        .collect();
    let unique: BTreeSet<_> = names.iter().collect();
    assert_eq!(unique.len(), names.len());
    assert!(!names.contains(&"mcp__demo_svc__add"));
    // The global server's tools come first and keep plain names.
    let echo: Vec<_> = set.tools().iter().filter(|t| t.tool == "echo").collect();
    assert_eq!(echo.len(), 2);
    assert_eq!(echo[0].qualified_name, "mcp__demo_svc__echo");
    assert!(matches!(echo[0].owner, ServerOwner::Global { .. }));
    assert!(echo[1].qualified_name.starts_with("mcp__demo_svc__echo_"));
    assert!(matches!(echo[1].owner, ServerOwner::Plugin { .. }));
    assert!(
        set.diagnostics()
            .iter()
            .all(|d| d.code == codes::TOOL_NAME_ADJUSTED)
    );
    assert!(!set.diagnostics().is_empty());
    // Both names reach their own server.
    for t in echo {
        let r = set
            .call_tool(&t.qualified_name, json!({"message": "x"}), CALL)
            .await
            .unwrap();
        assert_eq!(text(&r), "Echo: x");
    }
    global.stop_all().await;
    plugin.stop_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_users_entries_take_references_from_the_environment_at_start() {
    let server = serve_http(TestServerOptions::default(), 0).await.unwrap();
    let from_env = |name: &str, value: &str| {
        let mut def = http(name, &server.url(), &[("Authorization", value)]);
        if let Launch::StreamableHttp(l) = &mut def.launch {
            l.references = evoflux_mcp::references::References::FromEnvironment;
        }
        def
    };
    let options = ManagerOptions {
        reference_env: BTreeMap::from([("GITHUB_TOKEN".to_owned(), "tok-from-env".to_owned())]),
        ..ManagerOptions::default()
    };
    let m = manager_with(
        vec![
            from_env("set", "Bearer ${GITHUB_TOKEN}"),
            from_env("defaulted", "Bearer ${OTHER_TOKEN:-anonymous}"),
            from_env("unset", "Bearer ${MISSING_TOKEN}"),
        ],
        options,
    );
    m.start_all();
    settle(&m).await;
    for (server, sent) in [
        ("set", "Bearer tok-from-env"),
        ("defaulted", "Bearer anonymous"),
    ] {
        let r = m
            .call_server_tool(server, "headers", json!({}), CALL)
            .await
            .unwrap();
        let headers: BTreeMap<String, String> = serde_json::from_str(&text(&r)).unwrap();
        assert_eq!(headers["authorization"], sent);
    }
    // An unset variable without a default fails that server alone, by name.
    let unset = m.status("unset").unwrap();
    assert_eq!(unset.state, ServerState::Failed);
    let error = unset.last_error.unwrap();
    assert_eq!(error.code, "mcp/env-unset");
    assert!(error.message.contains("MISSING_TOKEN"), "{}", error.message);
    // The value is substituted into the launch only, never shown.
    let shown = format!("{:?}", m.statuses());
    assert!(!shown.contains("tok-from-env"), "{shown}");
}
