//! Interop against the official Python MCP SDK (PyPI `mcp`, its high-level
//! `MCPServer`): the server `tests/fixtures/python_sdk_server.py`, run by
//! the interpreter named by `EVOFLUX_TEST_PYTHON_MCP` (a Python with `mcp`
//! installed), over stdio and Streamable HTTP. Skipped, with a note, when
//! the variable is unset.
//!
//! Why: most servers users bring are written with the Python or TypeScript
//! SDK; server-everything covers the TypeScript one (everything.rs), this
//! file the Python one, through the same manager API the harness uses —
//! tools and images, progress and logs reaching the call, elicitation and
//! sampling answered through the call context, prompts and resources.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use evoflux_mcp::live::{ElicitationAnswer, McpLogLevel, SamplingRole};
use evoflux_mcp::{
    Launch, ManagerOptions, ManagerScope, McpManager, ResourceBody, ServerDefinition, ServerState,
    StdioLaunch, TransportKind,
};
use evoflux_protocol::MediaKind;
use serde_json::{Map, Value, json};

const CALL: Duration = Duration::from_secs(30);
const SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/python_sdk_server.py"
);
/// The base64 of the script's 1x1 PNG.
const TINY_PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

fn python() -> Option<PathBuf> {
    match std::env::var_os("EVOFLUX_TEST_PYTHON_MCP") {
        Some(p) if !p.is_empty() => Some(PathBuf::from(p)),
        _ => {
            eprintln!(
                "note: EVOFLUX_TEST_PYTHON_MCP is not set; skipping the Python MCP SDK tests"
            );
            None
        }
    }
}

fn stdio_server(python: &Path) -> ServerDefinition {
    ServerDefinition {
        name: "py".into(),
        owner: global(),
        transport: Some(TransportKind::Stdio),
        launch: Launch::Stdio(StdioLaunch {
            program: python.to_path_buf(),
            args: vec![SCRIPT.to_owned(), "stdio".into()],
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

async fn ready(def: ServerDefinition) -> McpManager {
    let name = def.name.clone();
    let m = McpManager::new(ManagerScope::Global, vec![def], ManagerOptions::default()).unwrap();
    m.start_all();
    settle(&m).await;
    let status = m.status(&name).unwrap();
    assert_eq!(status.state, ServerState::Ready, "{status:?}");
    assert_eq!(status.protocol_version.as_deref(), Some("2025-11-25"));
    assert_eq!(
        status.server_info.as_ref().map(|s| s.name.as_str()),
        Some("python-sdk-interop")
    );
    m
}

/// Tools listed and called, an image as media, progress and logs reaching
/// the call, an elicitation and a sampling request answered through the
/// call context — all against server `server` of `m`.
async fn tools_and_what_a_call_receives(m: &McpManager, server: &str) {
    let set = m.tool_set(&BTreeSet::new());
    let tool = |t: &str| format!("mcp__{server}__{t}");
    let names: BTreeSet<&str> = set
        .tools()
        .iter()
        .map(|t| t.qualified_name.as_str())
        .collect();
    for t in [
        "echo",
        "tiny_image",
        "count",
        "chatter",
        "book",
        "ask_model",
    ] {
        assert!(names.contains(tool(t).as_str()), "{t} missing: {names:?}");
    }

    let r = set
        .call_tool(&tool("echo"), json!({"message": "hello"}), CALL)
        .await
        .unwrap();
    assert!(!r.is_error);
    assert_eq!(text(&r), "Echo: hello");

    // The SDK validates arguments: a missing one is a tool error.
    let r = set.call_tool(&tool("echo"), json!({}), CALL).await.unwrap();
    assert!(r.is_error, "{r:?}");

    // Its image becomes conversation media; the text keeps only the caption.
    let r = set
        .call_tool(&tool("tiny_image"), json!({}), CALL)
        .await
        .unwrap();
    let (caption, media) = r.to_text_and_media();
    assert_eq!(caption, "a red pixel");
    assert_eq!(media.len(), 1, "{media:?}");
    assert_eq!(media[0].kind, MediaKind::Image);
    assert_eq!(media[0].mime_type, "image/png");
    assert_eq!(media[0].data, TINY_PNG);

    let session = Arc::new(Recorder::default());
    let r = set
        .call_tool_in(
            &tool("count"),
            json!({"steps": 3}),
            CALL,
            context("s1", &session),
        )
        .await
        .unwrap();
    assert_eq!(text(&r), "counted to 3");
    let progress = session.progress.lock().unwrap().clone();
    assert_eq!(
        progress.iter().map(|p| p.progress).collect::<Vec<_>>(),
        [1.0, 2.0, 3.0],
        "{progress:?}"
    );
    assert!(
        progress.iter().all(|p| p.total == Some(3.0)),
        "{progress:?}"
    );
    assert_eq!(progress[0].message.as_deref(), Some("step 1 of 3"));

    let r = set
        .call_tool_in(&tool("chatter"), json!({}), CALL, context("s1", &session))
        .await
        .unwrap();
    assert_eq!(text(&r), "chattered");
    let logs = session.logs.lock().unwrap().clone();
    assert_eq!(logs.len(), 2, "{logs:?}");
    // In the order sent: both ride one stream, and the client delivers
    // what it reads in read order (progress_order.rs).
    assert_eq!(logs[0].level, McpLogLevel::Info);
    assert_eq!(logs[0].logger.as_deref(), Some("chatter"));
    assert_eq!(logs[0].message, "starting the chatter");
    assert_eq!(logs[1].level, McpLogLevel::Warning);
    let warning = &logs[1];
    // Structured log data arrives as its JSON.
    let data: Value = serde_json::from_str(&warning.message).unwrap();
    assert_eq!(data, json!({"disk": "almost full"}));

    // A form: accepted with content that fits the schema the SDK derived
    // from its pydantic model, then declined, then answered with content
    // that does not fit (refused by the client: nothing is sent).
    session.answers.lock().unwrap().extend([
        ElicitationAnswer::Accept {
            content: json!({"city": "Porto", "nights": 2, "breakfast": true})
                .as_object()
                .unwrap()
                .clone(),
        },
        ElicitationAnswer::Decline { reason: None },
        ElicitationAnswer::Accept {
            content: json!({"city": "Porto", "nights": "two"})
                .as_object()
                .unwrap()
                .clone(),
        },
    ]);
    let r = set
        .call_tool_in(&tool("book"), json!({}), CALL, context("s1", &session))
        .await
        .unwrap();
    assert_eq!(text(&r), "booked 2 nights in Porto (breakfast: True)");
    let forms = session.forms.lock().unwrap().clone();
    assert_eq!(forms.len(), 1);
    assert_eq!(forms[0].message, "Where and for how long?");
    assert_eq!(forms[0].schema["required"], json!(["city", "nights"]));
    assert_eq!(forms[0].schema["properties"]["nights"]["type"], "integer");
    let fields: Vec<String> = evoflux_mcp::live::form_fields(&forms[0].schema)
        .into_iter()
        .map(|f| f.name)
        .collect();
    assert_eq!(fields.len(), 3, "{fields:?}");
    let r = set
        .call_tool_in(&tool("book"), json!({}), CALL, context("s1", &session))
        .await
        .unwrap();
    assert_eq!(text(&r), "declined");
    // The SDK passes the client's refusal on as the call's JSON-RPC error.
    let e = set
        .call_tool_in(&tool("book"), json!({}), CALL, context("s1", &session))
        .await
        .unwrap_err();
    assert_eq!(e.code(), "mcp/protocol-error", "{e}");
    assert_eq!(session.forms.lock().unwrap().len(), 3);

    let r = set
        .call_tool_in(
            &tool("ask_model"),
            json!({"question": "Where is the offsite?"}),
            CALL,
            context("s1", &session),
        )
        .await
        .unwrap();
    assert_eq!(text(&r), "model scripted said: Lisbon");
    let sampled = session.sampled.lock().unwrap().clone();
    assert_eq!(sampled.len(), 1);
    assert_eq!(sampled[0].max_tokens, 64);
    assert_eq!(
        sampled[0].system_prompt.as_deref(),
        Some("Answer in one word.")
    );
    assert_eq!(sampled[0].messages.len(), 1);
    assert_eq!(sampled[0].messages[0].role, SamplingRole::User);
    assert_eq!(sampled[0].messages[0].text, "Where is the offsite?");

    // Without a call context the client refuses the sampling request; the
    // SDK passes the refusal, with its code, on as the call's error.
    let e = set
        .call_tool(&tool("ask_model"), json!({"question": "x"}), CALL)
        .await
        .unwrap_err();
    assert_eq!(e.code(), "mcp/protocol-error", "{e}");
    assert!(e.to_string().contains("mcp/request-unrouted"), "{e}");
    assert_eq!(session.sampled.lock().unwrap().len(), 1);
}

/// The prompt listed with its arguments and expanded, the resource listed
/// and read.
async fn prompts_and_resources(m: &McpManager, server: &str) {
    let prompts = evoflux_mcp::PromptSet::assemble(&[m]);
    let name = format!("mcp__{server}__review");
    let review = prompts.get(&name).unwrap();
    assert_eq!(review.description, "Asks for a review of a piece of code.");
    let declared: Vec<(&str, bool)> = review
        .arguments
        .iter()
        .map(|a| (a.name.as_str(), a.required))
        .collect();
    assert_eq!(declared, [("code", true), ("language", false)]);
    let mut args = Map::new();
    args.insert("code".into(), Value::from("x = 1"));
    let r = prompts.get_prompt(&name, args.clone(), CALL).await.unwrap();
    assert_eq!(r.messages.len(), 1);
    assert_eq!(r.messages[0].0, "user");
    assert_eq!(r.messages[0].1.to_text(), "Review this python code:\nx = 1");
    args.insert("language".into(), Value::from("rust"));
    let r = prompts.get_prompt(&name, args, CALL).await.unwrap();
    assert_eq!(r.messages[0].1.to_text(), "Review this rust code:\nx = 1");
    let e = prompts
        .get_prompt(&name, Map::new(), CALL)
        .await
        .unwrap_err();
    assert_eq!(e.code(), "mcp/protocol-error", "{e}");

    let resources = m.list_resources(server, CALL).await.unwrap();
    let uri = "notes://greeting";
    let listed = resources.iter().find(|r| r.uri == uri).unwrap();
    assert_eq!(listed.mime_type.as_deref(), Some("text/plain"));
    let parts = m.read_resource(server, uri, CALL).await.unwrap();
    assert_eq!(parts.len(), 1);
    assert_eq!(parts[0].uri, uri);
    assert_eq!(parts[0].mime_type.as_deref(), Some("text/plain"));
    assert!(
        matches!(&parts[0].body, ResourceBody::Text { text } if text == "Hello from the Python SDK"),
        "{parts:?}"
    );
    let e = m
        .read_resource(server, "notes://nowhere", CALL)
        .await
        .unwrap_err();
    assert_eq!(e.code(), "mcp/protocol-error", "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_server_over_stdio() {
    let Some(python) = python() else { return };
    let m = ready(stdio_server(&python)).await;
    tools_and_what_a_call_receives(&m, "py").await;
    prompts_and_resources(&m, "py").await;
    m.stop_all().await;
    assert_eq!(state(&m, "py"), ServerState::Stopped);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_server_over_streamable_http() {
    let Some(python) = python() else { return };
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let mut child = tokio::process::Command::new(&python)
        .arg(SCRIPT)
        .arg("http")
        .arg(port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let deadline = tokio::time::Instant::now() + WAIT;
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the Python SDK server did not listen"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let url = format!("http://127.0.0.1:{port}/mcp");
    let m = ready(http("pyhttp", &url, &[])).await;
    tools_and_what_a_call_receives(&m, "pyhttp").await;
    prompts_and_resources(&m, "pyhttp").await;
    m.stop_all().await;
    let _ = child.kill().await;
}
