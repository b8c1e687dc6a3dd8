//! `evoflux acp` served in-process ([`evoflux_acp::serve`]) to the
//! protocol's Rust SDK as the editor, on a test application and the
//! scripted model: the editor's MCP servers, the modes, the available
//! commands, the plan, images in prompts and `session/list`, each checked
//! by what the editor receives (codes, never prose).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    ClientCapabilities, CloseSessionRequest, ContentBlock, ImageContent, InitializeRequest,
    ListSessionsRequest, McpServer, McpServerHttp, McpServerSse, McpServerStdio, NewSessionRequest,
    PlanEntryStatus, PromptRequest, RequestPermissionOutcome, RequestPermissionRequest,
    RequestPermissionResponse, ResumeSessionRequest, SelectedPermissionOutcome, SessionId,
    SessionNotification, SessionUpdate, SetSessionModeRequest, StopReason, TextContent,
    ToolCallStatus,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, ByteStreams, Client};
use evoflux_acp::AgentOptions;
use evoflux_app::testing;
use tokio::sync::mpsc;
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

fn text(s: &str) -> ContentBlock {
    ContentBlock::Text(TextContent::new(s.to_owned()))
}

/// The MCP test server (`evoflux-mcp-testserver`, an `echo` tool), built
/// beside the test binaries when the workspace's tests are built; `None`,
/// with a note, otherwise.
fn mcp_test_server() -> Option<PathBuf> {
    let exe = std::env::current_exe().unwrap();
    let path = exe
        .parent()
        .and_then(|deps| deps.parent())
        .map(|dir| dir.join("evoflux-mcp-testserver"))?;
    if path.is_file() {
        return Some(path);
    }
    eprintln!(
        "note: {} is not built (`cargo build -p evoflux-mcp --features test-server`); skipping",
        path.display()
    );
    None
}

/// The updates received so far.
fn drain(rx: &mut mpsc::UnboundedReceiver<SessionNotification>) -> Vec<SessionUpdate> {
    let mut out = Vec::new();
    while let Ok(n) = rx.try_recv() {
        out.push(n.update);
    }
    out
}

/// Waits for the first update `pick` takes, keeping the others.
async fn next<T>(
    rx: &mut mpsc::UnboundedReceiver<SessionNotification>,
    mut pick: impl FnMut(&SessionUpdate) -> Option<T>,
) -> T {
    tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let n = rx.recv().await.expect("the agent is still connected");
            if let Some(found) = pick(&n.update) {
                return found;
            }
        }
    })
    .await
    .expect("the update arrived")
}

/// A test application with the scripted model `yaml` and the user's skill
/// `notes`; serves ACP to `scenario`, the editor's part.
async fn editor<F, Fut>(yaml: &str, scenario: F)
where
    F: FnOnce(
            ConnectionTo<Agent>,
            mpsc::UnboundedReceiver<SessionNotification>,
            PathBuf,
            PathBuf,
        ) -> Fut
        + Send
        + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let (tmp, app) = testing::setup();
    let skill = app.dirs.config_dir().join("skills/notes/SKILL.md");
    std::fs::create_dir_all(skill.parent().unwrap()).unwrap();
    std::fs::write(
        &skill,
        "---\nname: notes\ndescription: Keeps notes.\n---\nKeep notes.\n",
    )
    .unwrap();
    let model = testing::script(tmp.path(), yaml);
    let repo = std::fs::canonicalize(&app.cwd).unwrap();
    let root = tmp.path().to_path_buf();
    let processes = evoflux_harness::ProcessRuntime::new(app.runtime_config());
    let (client_end, agent_end) = tokio::io::duplex(1 << 20);
    let (agent_in, agent_out) = tokio::io::split(agent_end);
    let served = tokio::spawn(evoflux_acp::serve(
        Arc::new(app),
        processes,
        AgentOptions {
            model: Some(model),
            ..AgentOptions::default()
        },
        agent_in,
        agent_out,
    ));
    let (client_in, client_out) = tokio::io::split(client_end);
    let transport = ByteStreams::new(client_out.compat_write(), client_in.compat());
    let (tx, rx) = mpsc::unbounded_channel();
    Client
        .v1()
        .name("test-editor")
        .on_receive_notification(
            async move |n: SessionNotification, _cx: ConnectionTo<Agent>| {
                let _ = tx.send(n);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |request: RequestPermissionRequest,
                        responder: Responder<RequestPermissionResponse>,
                        _cx: ConnectionTo<Agent>| {
                let allow = request.options[0].option_id.clone();
                responder.respond(RequestPermissionResponse::new(
                    RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(allow)),
                ))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(transport, async move |cx: ConnectionTo<Agent>| {
            let init = cx
                .send_request(
                    InitializeRequest::new(ProtocolVersion::V1)
                        .client_capabilities(ClientCapabilities::new()),
                )
                .block_task()
                .await?;
            let caps = &init.agent_capabilities;
            assert!(caps.prompt_capabilities.image);
            assert!(caps.mcp_capabilities.http);
            assert!(!caps.mcp_capabilities.sse);
            assert!(caps.session_capabilities.list.is_some());
            assert!(caps.session_capabilities.close.is_some());
            scenario(cx, rx, repo, root).await;
            Ok(())
        })
        .await
        .unwrap();
    let _ = tokio::time::timeout(Duration::from_secs(20), served).await;
    drop(tmp);
}

/// The JSON-RPC error a request got.
fn error_of<T: std::fmt::Debug>(
    r: Result<T, agent_client_protocol::Error>,
) -> agent_client_protocol::Error {
    r.expect_err("the request is refused")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn modes_commands_plans_and_the_session_list_reach_the_editor() {
    let yaml = r#"
turns:
  - expect: {user: {contains: plan it}}
    reply:
      tool_calls:
        - name: todo
          arguments:
            todos:
              - {content: read the code, status: completed}
              - {content: fix the bug, status: in_progress}
  - expect: {tool_result: {contains: fix the bug}}
    reply: {text: planned}
  - expect: {user: {contains: write the notes}}
    reply:
      tool_calls:
        - {name: write, arguments: {path: notes.txt, content: "hello\n"}}
  - expect: {tool_result: {contains: read-only}}
    reply: {text: "I may only read."}
"#;
    editor(yaml, |cx, mut rx, repo, _| async move {
        let opened = cx
            .send_request(NewSessionRequest::new(repo.clone()))
            .block_task()
            .await
            .unwrap();
        let id = opened.session_id.clone();
        let modes = opened.modes.expect("modes are offered");
        assert_eq!(modes.current_mode_id.to_string(), "ask");
        let ids: Vec<String> = modes
            .available_modes
            .iter()
            .map(|m| m.id.to_string())
            .collect();
        assert_eq!(ids, ["ask", "auto-edit", "read-only"]);

        // The user's skill is a command, right after the answer.
        let commands = next(&mut rx, |u| match u {
            SessionUpdate::AvailableCommandsUpdate(c) => Some(c.available_commands.clone()),
            _ => None,
        })
        .await;
        assert!(
            commands.iter().any(|c| c.name == "skill:notes"),
            "{commands:?}"
        );

        // The todo list is the plan.
        let answer = cx
            .send_request(PromptRequest::new(id.clone(), vec![text("plan it")]))
            .block_task()
            .await
            .unwrap();
        assert_eq!(answer.stop_reason, StopReason::EndTurn);
        let plan = drain(&mut rx)
            .into_iter()
            .find_map(|u| match u {
                SessionUpdate::Plan(p) => Some(p),
                _ => None,
            })
            .expect("a plan update");
        let entries: Vec<(String, PlanEntryStatus)> = plan
            .entries
            .iter()
            .map(|e| (e.content.clone(), e.status.clone()))
            .collect();
        assert_eq!(
            entries,
            [
                ("read the code".to_owned(), PlanEntryStatus::Completed),
                ("fix the bug".to_owned(), PlanEntryStatus::InProgress)
            ]
        );

        // Read-only: switched, announced, and a write is refused.
        cx.send_request(SetSessionModeRequest::new(id.clone(), "read-only"))
            .block_task()
            .await
            .unwrap();
        let mode = next(&mut rx, |u| match u {
            SessionUpdate::CurrentModeUpdate(m) => Some(m.current_mode_id.to_string()),
            _ => None,
        })
        .await;
        assert_eq!(mode, "read-only");
        cx.send_request(PromptRequest::new(
            id.clone(),
            vec![text("write the notes")],
        ))
        .block_task()
        .await
        .unwrap();
        let failed = drain(&mut rx).into_iter().any(|u| {
            matches!(u, SessionUpdate::ToolCallUpdate(c)
                if c.fields.status == Some(ToolCallStatus::Failed))
        });
        assert!(failed, "the write was refused");
        assert!(!repo.join("notes.txt").exists());
        let unknown = error_of(
            cx.send_request(SetSessionModeRequest::new(id.clone(), "yolo"))
                .block_task()
                .await,
        );
        assert_eq!(i32::from(unknown.code), -32602);
        assert!(unknown.message.contains("acp/unknown-mode"), "{unknown:?}");

        // The session is listed, in its folder; a cursor it never gave is
        // refused.
        let listed = cx
            .send_request(ListSessionsRequest::new().cwd(repo.clone()))
            .block_task()
            .await
            .unwrap();
        assert!(
            listed
                .sessions
                .iter()
                .any(|s| s.session_id == id && s.cwd == repo),
            "{listed:?}"
        );
        let elsewhere = cx
            .send_request(ListSessionsRequest::new().cwd(PathBuf::from("/nowhere")))
            .block_task()
            .await
            .unwrap();
        assert!(elsewhere.sessions.is_empty());
        let cursor = error_of(
            cx.send_request(ListSessionsRequest::new().cursor("x".to_owned()))
                .block_task()
                .await,
        );
        assert!(cursor.message.contains("acp/invalid-cursor"), "{cursor:?}");
        let missing = error_of(
            cx.send_request(SetSessionModeRequest::new(
                SessionId::new("not-a-session"),
                "ask",
            ))
            .block_task()
            .await,
        );
        assert_ne!(i32::from(missing.code), -32601);

        // Resumed while open here: the mode it runs in now, no replay.
        drain(&mut rx);
        let resumed = cx
            .send_request(ResumeSessionRequest::new(id.clone(), repo.clone()))
            .block_task()
            .await
            .unwrap();
        assert_eq!(
            resumed.modes.unwrap().current_mode_id.to_string(),
            "read-only"
        );
        let after = next(&mut rx, |u| match u {
            SessionUpdate::AvailableCommandsUpdate(_) => Some(()),
            SessionUpdate::UserMessageChunk(_) => panic!("a resume replays nothing"),
            _ => None,
        });
        after.await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_editors_mcp_server_runs_for_its_session_and_bad_entries_are_refused() {
    let Some(server) = mcp_test_server() else {
        return;
    };
    let yaml = r#"
turns:
  - expect: {user: {contains: echo}}
    reply:
      tool_calls:
        - {name: mcp__editor__echo, arguments: {message: from the editor}}
  - expect: {tool_result: {contains: "Echo: from the editor"}}
    reply: {text: echoed}
"#;
    editor(yaml, move |cx, mut rx, repo, root| async move {
        // Refused before anything starts, naming the field.
        for (servers, field) in [
            (
                vec![McpServer::Stdio(McpServerStdio::new("a", ""))],
                "mcpServers[0].command",
            ),
            (
                vec![McpServer::Http(McpServerHttp::new("h", "ftp://x"))],
                "mcpServers[0].url",
            ),
            (
                vec![
                    McpServer::Stdio(McpServerStdio::new("a", "srv")),
                    McpServer::Stdio(McpServerStdio::new("a", "srv")),
                ],
                "mcpServers[1].name",
            ),
        ] {
            let e = error_of(
                cx.send_request(NewSessionRequest::new(repo.clone()).mcp_servers(servers))
                    .block_task()
                    .await,
            );
            assert_eq!(i32::from(e.code), -32602);
            assert!(e.message.contains(field), "{field}: {e:?}");
            assert!(e.message.contains("acp/mcp-server-invalid"), "{e:?}");
        }

        let opened = cx
            .send_request(NewSessionRequest::new(repo.clone()).mcp_servers(vec![
                // The server through a shell that writes its pid down.
                McpServer::Stdio(McpServerStdio::new("editor", "/bin/sh").args(vec![
                    "-c".to_owned(),
                    format!(
                        "echo $$ > '{}'; exec '{}'",
                        root.join("mcp.pid").display(),
                        server.display()
                    ),
                ])),
                McpServer::Stdio(McpServerStdio::new("gone", "/nonexistent/mcp-server")),
                McpServer::Sse(McpServerSse::new("old", "https://example.com/sse")),
            ]))
            .block_task()
            .await
            .unwrap();
        // What did not start is told, after the answer.
        let mut thoughts = Vec::new();
        while thoughts.len() < 2 {
            thoughts.push(
                next(&mut rx, |u| match u {
                    SessionUpdate::AgentThoughtChunk(c) => match &c.content {
                        ContentBlock::Text(t) => Some(t.text.clone()),
                        _ => None,
                    },
                    _ => None,
                })
                .await,
            );
        }
        assert!(
            thoughts
                .iter()
                .any(|t| t.contains("`old`")
                    && t.contains(evoflux_mcp::codes::TRANSPORT_UNSUPPORTED)),
            "{thoughts:?}"
        );
        assert!(
            thoughts
                .iter()
                .any(|t| t.contains("`gone`") && t.contains("failed")),
            "{thoughts:?}"
        );
        let answer = cx
            .send_request(PromptRequest::new(
                opened.session_id.clone(),
                vec![text("echo")],
            ))
            .block_task()
            .await
            .unwrap();
        assert_eq!(answer.stop_reason, StopReason::EndTurn);
        let updates = drain(&mut rx);
        let call = updates
            .iter()
            .find_map(|u| match u {
                SessionUpdate::ToolCall(c) if c.title == "mcp__editor__echo" => {
                    Some(c.tool_call_id.clone())
                }
                _ => None,
            })
            .unwrap_or_else(|| panic!("the editor's tool was called: {updates:?}"));
        assert!(updates.iter().any(|u| matches!(u,
            SessionUpdate::ToolCallUpdate(c) if c.tool_call_id == call
                && c.fields.status == Some(ToolCallStatus::Completed))));

        // Closing the session stops its servers; it is no longer served.
        let pid = std::fs::read_to_string(root.join("mcp.pid")).unwrap();
        let proc = PathBuf::from(format!("/proc/{}", pid.trim()));
        assert!(proc.exists(), "the editor's server runs");
        cx.send_request(CloseSessionRequest::new(opened.session_id.clone()))
            .block_task()
            .await
            .unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while proc.exists() && !is_zombie(&proc) {
            assert!(
                std::time::Instant::now() < deadline,
                "the editor's server outlived its session"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let closed = error_of(
            cx.send_request(PromptRequest::new(opened.session_id, vec![text("echo")]))
                .block_task()
                .await,
        );
        assert_ne!(i32::from(closed.code), -32601);
    })
    .await;
}

/// Whether the process at `proc` has ended and waits for its parent.
fn is_zombie(proc: &std::path::Path) -> bool {
    std::fs::read_to_string(proc.join("stat"))
        .map(|stat| {
            stat.rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
        })
        .unwrap_or(true)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_in_a_prompt_is_taken_and_a_bad_one_is_refused_by_its_place() {
    let yaml = r#"
turns:
  - expect: {user: {contains: what is this}}
    reply: {text: a picture}
"#;
    editor(yaml, |cx, _rx, repo, root| async move {
        let id = cx
            .send_request(NewSessionRequest::new(repo))
            .block_task()
            .await
            .unwrap()
            .session_id;
        // One transparent pixel.
        let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=";
        let bad = error_of(
            cx.send_request(PromptRequest::new(
                id.clone(),
                vec![
                    text("what is this"),
                    ContentBlock::Image(ImageContent::new(png, "text/plain")),
                ],
            ))
            .block_task()
            .await,
        );
        assert_eq!(i32::from(bad.code), -32602);
        assert!(bad.message.contains("prompt[1].mimeType"), "{bad:?}");
        assert!(bad.message.contains("acp/prompt-block-invalid"), "{bad:?}");
        let answer = cx
            .send_request(PromptRequest::new(
                id.clone(),
                vec![
                    text("what is this"),
                    ContentBlock::Image(
                        ImageContent::new(png, "image/png").uri("file:///pixel.png".to_owned()),
                    ),
                ],
            ))
            .block_task()
            .await
            .unwrap();
        assert_eq!(answer.stop_reason, StopReason::EndTurn);
        // The image is on the stored user message.
        let store = testing::app(&root).open_store().await.unwrap();
        let stored: evoflux_core::ids::SessionId = id.to_string().parse().unwrap();
        let media: Vec<evoflux_protocol::Media> = store
            .transcript(stored)
            .await
            .unwrap()
            .into_iter()
            .flat_map(|e| e.message.media().to_vec())
            .collect();
        assert_eq!(media.len(), 1, "{media:?}");
        assert_eq!(media[0].mime_type, "image/png");
        assert_eq!(media[0].data, png);
        assert_eq!(media[0].source.as_deref(), Some("file:///pixel.png"));
    })
    .await;
}
