#![allow(clippy::unwrap_used, clippy::expect_used)]

//! The Agent Client Protocol both ways, through the real binary:
//! `evoflux acp` driven as an editor drives it (with the protocol's own
//! SDK as the client), and a lead dispatching to an external agent that is
//! `evoflux acp` itself.

use crate::common;

use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    CancelNotification, ClientCapabilities, ContentBlock, FileSystemCapabilities,
    InitializeRequest, LoadSessionRequest, NewSessionRequest, PermissionOptionKind, PromptRequest,
    ReadTextFileRequest, ReadTextFileResponse, RequestPermissionOutcome, RequestPermissionRequest,
    RequestPermissionResponse, SelectedPermissionOutcome, SessionId, SessionNotification,
    SessionUpdate, StopReason, TextContent, ToolCallStatus, ToolKind, WriteTextFileRequest,
    WriteTextFileResponse,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, ByteStreams, Client};
use common::{Sandbox, events, of_type, run, script, with_marker};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

async fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < deadline, "timed out: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn text(s: &str) -> ContentBlock {
    ContentBlock::Text(TextContent::new(s.to_owned()))
}

/// What the editor saw, and what it offers.
#[derive(Default)]
struct Seen {
    permissions: Mutex<Vec<RequestPermissionRequest>>,
    /// With a buffer, the editor offers its file system: every file reads
    /// as this text, and writes are recorded here instead of the disk.
    buffer: Option<String>,
    writes: Mutex<Vec<(std::path::PathBuf, String)>>,
    /// What reached the editor, in order: each update's kind, and
    /// `permission` for each permission request.
    log: Mutex<Vec<String>>,
}

/// Runs `evoflux acp` in `s` and drives it with `scenario`, the editor's
/// part; updates arrive on the channel it is given.
async fn editor<F, Fut>(s: &Sandbox, model: &str, seen: Arc<Seen>, scenario: F)
where
    F: FnOnce(ConnectionTo<Agent>, mpsc::UnboundedReceiver<SessionNotification>) -> Fut
        + Send
        + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let mut command = tokio::process::Command::from(s.command(&["acp", "--model", model]));
    command
        .env("PATH", std::env::var("PATH").unwrap())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
    let mut child = command.spawn().unwrap();
    let transport = ByteStreams::new(
        child.stdin.take().unwrap().compat_write(),
        child.stdout.take().unwrap().compat(),
    );
    let (tx, rx) = mpsc::unbounded_channel();
    let files = Arc::clone(&seen);
    let written = Arc::clone(&seen);
    let logged = Arc::clone(&seen);
    let offers_fs = seen.buffer.is_some();
    Client
        .v1()
        .on_receive_request(
            async move |request: ReadTextFileRequest,
                        responder: Responder<ReadTextFileResponse>,
                        _cx: ConnectionTo<Agent>| {
                responder
                    .respond(ReadTextFileResponse::new(
                        files.buffer.clone().unwrap_or_default(),
                    ))
                    .map(|()| drop(request))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: WriteTextFileRequest,
                        responder: Responder<WriteTextFileResponse>,
                        _cx: ConnectionTo<Agent>| {
                written
                    .writes
                    .lock()
                    .unwrap()
                    .push((request.path, request.content));
                responder.respond(WriteTextFileResponse::new())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .name("test-editor")
        .on_receive_notification(
            async move |n: SessionNotification, _cx: ConnectionTo<Agent>| {
                logged.log.lock().unwrap().push(update_kind(&n.update));
                let _ = tx.send(n);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |request: RequestPermissionRequest,
                        responder: Responder<RequestPermissionResponse>,
                        _cx: ConnectionTo<Agent>| {
                let allow = request
                    .options
                    .iter()
                    .find(|o| o.kind == PermissionOptionKind::AllowOnce)
                    .map(|o| o.option_id.clone())
                    .unwrap();
                seen.log.lock().unwrap().push("permission".to_owned());
                seen.permissions.lock().unwrap().push(request);
                responder.respond(RequestPermissionResponse::new(
                    RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(allow)),
                ))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(transport, async move |cx: ConnectionTo<Agent>| {
            let init = cx
                .send_request(
                    InitializeRequest::new(ProtocolVersion::V1).client_capabilities(
                        ClientCapabilities::new().fs(FileSystemCapabilities::new()
                            .read_text_file(offers_fs)
                            .write_text_file(offers_fs)),
                    ),
                )
                .block_task()
                .await?;
            assert!(init.agent_capabilities.load_session);
            assert_eq!(init.agent_info.unwrap().name, "evoflux");
            scenario(cx, rx).await;
            Ok(())
        })
        .await
        .unwrap();
    let _ = tokio::time::timeout(Duration::from_secs(10), child.wait()).await;
}

/// An update as the order tests name it.
fn update_kind(update: &SessionUpdate) -> String {
    match update {
        SessionUpdate::ToolCall(_) => "tool_call".to_owned(),
        SessionUpdate::ToolCallUpdate(u) => match u.fields.status {
            Some(ToolCallStatus::Completed) => "tool_completed".to_owned(),
            Some(ToolCallStatus::Failed) => "tool_failed".to_owned(),
            _ => "tool_call_update".to_owned(),
        },
        SessionUpdate::AgentMessageChunk(_) => "message".to_owned(),
        SessionUpdate::AgentThoughtChunk(_) => "thought".to_owned(),
        SessionUpdate::UserMessageChunk(_) => "user_message".to_owned(),
        SessionUpdate::AvailableCommandsUpdate(_) => "commands".to_owned(),
        _ => "other".to_owned(),
    }
}

/// The updates received so far.
fn drain(rx: &mut mpsc::UnboundedReceiver<SessionNotification>) -> Vec<SessionUpdate> {
    let mut out = Vec::new();
    while let Ok(n) = rx.try_recv() {
        out.push(n.update);
    }
    out
}

fn message_text(updates: &[SessionUpdate]) -> String {
    updates
        .iter()
        .filter_map(|u| match u {
            SessionUpdate::AgentMessageChunk(c) => match &c.content {
                ContentBlock::Text(t) => Some(t.text.clone()),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_editor_prompts_approves_cancels_and_loads_an_earlier_session() {
    let s = Sandbox::new();
    s.user("config.toml", "[approval]\nwrite = \"always\"\n");
    let marker = "987661";
    let model = script(
        &s,
        "acp.yaml",
        &format!(
            "turns:\n  - expect: {{user: {{contains: \"write the notes\"}}}}\n    reply:\n      tool_calls:\n        - {{name: write, arguments: {{path: notes.txt, content: \"hello\\n\"}}}}\n  - expect: {{tool_result: {{contains: notes.txt}}}}\n    reply: {{text: \"wrote notes.txt\"}}\n  - expect: {{user: {{contains: wait}}}}\n    reply:\n      tool_calls:\n        - {{name: shell, arguments: {{command: \"sleep {marker}; touch after.txt\", yield_time_ms: 30000}}}}\n"
        ),
    );
    let seen = Arc::new(Seen::default());
    let repo = s.repo();
    let session: Arc<Mutex<Option<SessionId>>> = Arc::default();
    let opened = Arc::clone(&session);
    editor(
        &s,
        &model,
        Arc::clone(&seen),
        move |cx, mut rx| async move {
            let id = cx
                .send_request(NewSessionRequest::new(repo.clone()))
                .block_task()
                .await
                .unwrap()
                .session_id;
            *opened.lock().unwrap() = Some(id.clone());

            // A prompt whose tool needs approval: asked, allowed, streamed.
            let answer = cx
                .send_request(PromptRequest::new(
                    id.clone(),
                    vec![text("write the notes")],
                ))
                .block_task()
                .await
                .unwrap();
            assert_eq!(answer.stop_reason, StopReason::EndTurn);
            let updates = drain(&mut rx);
            let call = updates
                .iter()
                .find_map(|u| match u {
                    SessionUpdate::ToolCall(c) => Some(c.clone()),
                    _ => None,
                })
                .expect("the write was streamed as a tool call");
            assert_eq!(call.kind, ToolKind::Edit);
            assert_eq!(call.status, ToolCallStatus::InProgress);
            assert_eq!(call.raw_input.as_ref().unwrap()["path"], "notes.txt");
            assert!(call.locations[0].path.ends_with("notes.txt"));
            let completed = updates.iter().any(|u| {
                matches!(u, SessionUpdate::ToolCallUpdate(c)
                if c.tool_call_id == call.tool_call_id
                    && c.fields.status == Some(ToolCallStatus::Completed))
            });
            assert!(completed, "the write's end was streamed");
            assert!(message_text(&updates).contains("wrote notes.txt"));
            assert_eq!(
                std::fs::read_to_string(repo.join("notes.txt")).unwrap(),
                "hello\n"
            );

            // A prompt cancelled while its command runs: the command stops.
            let prompt = cx
                .send_request(PromptRequest::new(id.clone(), vec![text("wait for it")]))
                .block_task();
            let waiting = tokio::spawn(prompt);
            eventually("the command started", || !with_marker(marker).is_empty()).await;
            let shown = drain(&mut rx);
            let command = shown
                .iter()
                .find_map(|u| match u {
                    SessionUpdate::ToolCall(c) if c.kind == ToolKind::Execute => {
                        Some(c.tool_call_id.clone())
                    }
                    _ => None,
                })
                .expect("the command was streamed as a tool call");
            cx.send_notification(CancelNotification::new(id.clone()))
                .unwrap();
            let answer = tokio::time::timeout(Duration::from_secs(20), waiting)
                .await
                .expect("the cancelled prompt answered")
                .unwrap()
                .unwrap();
            assert_eq!(answer.stop_reason, StopReason::Cancelled);
            eventually("the command is gone", || with_marker(marker).is_empty()).await;
            assert!(!repo.join("after.txt").exists());
            // The cancelled call ended before the prompt's answer: the
            // editor shows no call still running.
            let ended = drain(&mut rx);
            assert!(
                ended.iter().any(|u| matches!(u,
                    SessionUpdate::ToolCallUpdate(c) if c.tool_call_id == command
                        && c.fields.status == Some(ToolCallStatus::Failed))),
                "{ended:?}"
            );
        },
    )
    .await;
    {
        let permissions = seen.permissions.lock().unwrap();
        assert_eq!(permissions.len(), 1, "only the write asked");
        assert_eq!(
            permissions[0].tool_call.fields.raw_input.as_ref().unwrap()["path"],
            "notes.txt"
        );
    }

    // Another editor process loads the session: its conversation is
    // replayed before the answer.
    let id = session.lock().unwrap().clone().unwrap();
    let repo = s.repo();
    editor(
        &s,
        &model,
        Arc::new(Seen::default()),
        move |cx, mut rx| async move {
            cx.send_request(LoadSessionRequest::new(id.clone(), repo))
                .block_task()
                .await
                .unwrap();
            let replayed = drain(&mut rx);
            assert!(replayed.iter().any(|u| matches!(u,
            SessionUpdate::UserMessageChunk(c)
                if matches!(&c.content, ContentBlock::Text(t) if t.text == "write the notes"))));
            assert!(message_text(&replayed).contains("wrote notes.txt"));
            assert!(replayed.iter().any(|u| matches!(u,
            SessionUpdate::ToolCall(c) if c.kind == ToolKind::Edit)));
            // An id evoflux never gave is refused.
            let unknown = cx
                .send_request(LoadSessionRequest::new(
                    SessionId::new("not-a-session"),
                    std::path::PathBuf::from("/"),
                ))
                .block_task()
                .await;
            assert!(unknown.is_err());
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn where_the_editor_offers_its_files_the_agent_reads_its_buffers_and_writes_through_it() {
    let s = Sandbox::new();
    s.write(s.repo().join("notes.md"), "saved text\n");
    let model = script(
        &s,
        "fs.yaml",
        "turns:\n  - expect: {user: {contains: buffer}}\n    reply:\n      tool_calls:\n        - {name: read, arguments: {path: notes.md}}\n  - expect: {tool_result: {contains: \"unsaved buffer text\"}}\n    reply:\n      tool_calls:\n        - {name: edit, arguments: {path: notes.md, old_string: unsaved, new_string: edited}}\n  - expect: {tool_result: {contains: \"Replaced 1\"}}\n    reply: {text: done}\n",
    );
    let seen = Arc::new(Seen {
        buffer: Some("unsaved buffer text\n".to_owned()),
        ..Seen::default()
    });
    let repo = s.repo();
    editor(&s, &model, Arc::clone(&seen), move |cx, _rx| async move {
        let id = cx
            .send_request(NewSessionRequest::new(repo))
            .block_task()
            .await
            .unwrap()
            .session_id;
        let answer = cx
            .send_request(PromptRequest::new(id, vec![text("edit the buffer")]))
            .block_task()
            .await
            .unwrap();
        assert_eq!(answer.stop_reason, StopReason::EndTurn);
    })
    .await;
    let writes = seen.writes.lock().unwrap().clone();
    assert_eq!(writes.len(), 1);
    assert!(writes[0].0.ends_with("notes.md"));
    assert_eq!(writes[0].1, "edited buffer text\n");
    // The editor applies its writes; evoflux left the disk alone.
    assert_eq!(
        std::fs::read_to_string(s.repo().join("notes.md")).unwrap(),
        "saved text\n"
    );
}

fn scout_report(path: &str, line: u32) -> String {
    serde_json::json!({
        "findings": [{"claim": "the config loader reads the environment", "path": path, "line": line}],
        "needsSplit": false,
        "proposedSubtasks": []
    })
    .to_string()
}

/// A user config declaring `helper`: `evoflux acp` itself on `child`'s
/// script, held to a scout report.
fn declare_helper(s: &Sandbox, child_model: &str) {
    s.user(
        "config.toml",
        &format!(
            "[agents.external.helper]\ncommand = [{}, \"acp\", \"--model\", {}]\ndescription = \"Finds where things are, over ACP.\"\nresult_contract = {{ kind = \"scout-report\" }}\n",
            serde_json::to_string(env!("CARGO_BIN_EXE_evoflux")).unwrap(),
            serde_json::to_string(child_model).unwrap(),
        ),
    );
    s.write(
        s.repo().join("src/config.rs"),
        "pub struct Config;\n\nimpl Config {\n    pub fn from_env() -> Config { todo!() }\n}\n",
    );
}

#[test]
fn a_lead_dispatches_to_an_external_acp_agent_which_repairs_its_result_over_acp() {
    let s = Sandbox::new();
    // The external agent's own script: a report citing a file that does
    // not exist, then, asked to repair, one that does.
    let child = script(
        &s,
        "child.yaml",
        &format!(
            "turns:\n  - expect: {{user: {{contains: \"Find where\"}}}}\n    reply: {{text: {}}}\n  - expect: {{user: {{contains: \"result contract\"}}}}\n    reply: {{text: {}}}\n",
            serde_json::to_string(&scout_report("src/missing.rs", 1)).unwrap(),
            serde_json::to_string(&scout_report("src/config.rs", 4)).unwrap(),
        ),
    );
    declare_helper(&s, &child);
    let lead = script(
        &s,
        "lead.yaml",
        "turns:\n  - reply:\n      tool_calls:\n        - {name: agent, arguments: {agent_id: helper, message: \"Find where the config reads the environment\"}}\n  - expect: {tool_result: {contains: \"src/config.rs\"}}\n    reply: {text: done}\n",
    );
    let out = run(
        &s,
        &[
            "--json", "run", "--mode", "coding", "--model", &lead, "look",
        ],
    );
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let ev = events(&out);
    let started = of_type(&ev, "dispatch_started");
    assert_eq!(started[0]["agent"], "helper");
    let ended = of_type(&ev, "dispatch_ended");
    assert_eq!(ended[0]["contract"], "pass");
    assert_eq!(ended[0]["repairs"], 1);
    // The remote child's message streamed into the lead's events.
    let streamed: String = of_type(&ev, "child")
        .iter()
        .filter(|e| e["event"]["type"] == "message_delta")
        .map(|e| e["event"]["text"].as_str().unwrap().to_owned())
        .collect();
    assert!(streamed.contains("src/missing.rs"), "{streamed}");
    assert!(streamed.contains("src/config.rs"), "{streamed}");
    let result = of_type(&ev, "tool_ended")
        .into_iter()
        .find(|e| e["tool"] == "agent")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(result.contains("src/config.rs") && !result.contains("src/missing.rs"));

    // `info` lists it as a remote agent, apart from the local ones, with
    // where it was declared.
    let info = s.json(&["--json", "info"]);
    let schema: Value = serde_json::from_str(evoflux_graph::info::INFO_SCHEMA).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    assert!(validator.is_valid(&info), "info matches its schema");
    assert_eq!(
        evoflux_graph::info::check_invariants(&info),
        Vec::<String>::new()
    );
    let remote = &info["remote_agents"];
    let entries = remote["entries"].as_array().unwrap();
    assert_eq!(remote["total"], entries.len());
    let coding = entries
        .iter()
        .find(|e| e["parent_node_id"].as_str().unwrap().starts_with("coding/"))
        .unwrap();
    assert_eq!(coding["name"], "helper");
    assert_eq!(coding["protocol"], "acp");
    assert_eq!(coding["result_contract"], "scout-report");
    assert_eq!(coding["provenance"]["origin"], "user");
    assert!(Path::new(coding["provenance"]["path"].as_str().unwrap()).ends_with("config.toml"));
    let human = s.run(&["info"]);
    let human = String::from_utf8_lossy(&human.stdout);
    assert_eq!(
        human.matches("remote agent  helper over acp").count(),
        1,
        "{human}"
    );
    for team in info["teams"].as_array().unwrap() {
        for local in ["members", "workers"] {
            assert!(
                !team[local]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|n| n["name"] == "helper"),
                "a remote agent is not counted among the {local}"
            );
        }
    }
}

#[test]
fn an_external_agent_that_cannot_start_fails_the_dispatch_with_its_code() {
    let s = Sandbox::new();
    s.user(
        "config.toml",
        "[agents.external.helper]\ncommand = [\"/nonexistent/agent\"]\n",
    );
    let lead = script(
        &s,
        "lead.yaml",
        "turns:\n  - reply:\n      tool_calls:\n        - {name: agent, arguments: {agent_id: helper, message: \"Summarize the notes\"}}\n  - expect: {tool_result: {contains: \"acp/agent-start-failed\"}}\n    reply: {text: \"it could not start\"}\n",
    );
    let out = run(
        &s,
        &[
            "--json", "run", "--mode", "coding", "--model", &lead, "look",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ev = events(&out);
    let result: Vec<&Value> = of_type(&ev, "tool_ended")
        .into_iter()
        .filter(|e| e["tool"] == "agent")
        .collect();
    assert_eq!(result[0]["is_error"], true);
}

/// A user config declaring `helper`: the ACP crate's fake agent playing
/// `scenario` (see `crates/evoflux-acp/tests/fixtures/fake-acp-agent.sh`),
/// with `extra` lines; returns the file its pids go to.
fn declare_fake_helper(s: &Sandbox, scenario: &str, extra: &str) -> std::path::PathBuf {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../evoflux-acp/tests/fixtures/fake-acp-agent.sh"
    );
    let pids = s.tmp.path().join("fake-agent.pids");
    s.user(
        "config.toml",
        &format!(
            "[agents.external.helper]\ncommand = [\"sh\", {}, {}, {}]\n{extra}",
            serde_json::to_string(script).unwrap(),
            serde_json::to_string(&pids.display().to_string()).unwrap(),
            serde_json::to_string(scenario).unwrap(),
        ),
    );
    pids
}

/// A lead that dispatches `helper` and expects its result to contain
/// `code`; returns the `agent` call's result.
fn dispatch_expecting(s: &Sandbox, code: &str) -> Value {
    let lead = script(
        s,
        "lead.yaml",
        &format!(
            "turns:\n  - reply:\n      tool_calls:\n        - {{name: agent, arguments: {{agent_id: helper, message: \"Summarize the notes\"}}}}\n  - expect: {{tool_result: {{contains: \"{code}\"}}}}\n    reply: {{text: \"it failed\"}}\n"
        ),
    );
    let out = run(
        s,
        &[
            "--json", "run", "--mode", "coding", "--model", &lead, "look",
        ],
    );
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let ev = events(&out);
    of_type(&ev, "tool_ended")
        .into_iter()
        .find(|e| e["tool"] == "agent")
        .unwrap()
        .clone()
}

#[test]
fn a_hanging_external_agent_is_stopped_at_its_start_timeout() {
    let s = Sandbox::new();
    let pids = declare_fake_helper(&s, "never-starts", "start_timeout_secs = 1\n");
    let began = Instant::now();
    let result = dispatch_expecting(&s, "acp/start-timeout");
    assert!(
        began.elapsed() < Duration::from_secs(20),
        "{:?}",
        began.elapsed()
    );
    assert_eq!(result["is_error"], true);
    let content = result["content"].as_str().unwrap();
    assert!(
        content.contains("agents.external.helper.start_timeout_secs")
            && content.contains("config.toml"),
        "{content}"
    );
    // The agent and the `sleep` it started are gone.
    let pids: Vec<i32> = std::fs::read_to_string(&pids)
        .unwrap()
        .lines()
        .map(|l| l.trim().parse().unwrap())
        .collect();
    assert_eq!(pids.len(), 2);
    for pid in pids {
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok();
        let state = state
            .as_deref()
            .and_then(|st| st.rsplit_once(')'))
            .and_then(|(_, rest)| rest.trim_start().chars().next());
        assert!(
            matches!(state, None | Some('Z' | 'X')),
            "pid {pid} still runs"
        );
    }
}

#[test]
fn an_external_agent_denied_a_permission_or_answering_nothing_fails_the_dispatch() {
    // `evoflux run` has no one to ask: the agent's permission request is
    // denied, and its turn is no answer.
    let s = Sandbox::new();
    declare_fake_helper(&s, "asks", "");
    let result = dispatch_expecting(&s, "acp/permission-denied");
    assert_eq!(result["is_error"], true);

    let s = Sandbox::new();
    declare_fake_helper(&s, "answers-nothing", "");
    let result = dispatch_expecting(&s, "acp/empty-answer");
    assert_eq!(result["is_error"], true);
}

/// The sandbox's session store, as the binary opens it.
async fn store(s: &Sandbox) -> evoflux_store::Store {
    let dirs = evoflux_app::testing::dirs(s.tmp.path());
    evoflux_store::Store::open(dirs.data_dir()).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_is_refused_while_another_process_holds_the_session_and_runs_once_free() {
    let s = Sandbox::new();
    let model = script(&s, "lease.yaml", "turns:\n  - reply: {text: answered}\n");
    let out = run(
        &s,
        &[
            "--json", "run", "--mode", "coding", "--model", &model, "first",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let id = common::session_id(&events(&out));
    let held_by = "evoflux run (pid 4242) on host elsewhere since 2026-01-01 00:00:00 UTC";
    let store = store(&s).await;
    let session: evoflux_core::ids::SessionId = id.parse().unwrap();
    store
        .acquire_lease(session, held_by, Duration::from_secs(30))
        .await
        .unwrap()
        .unwrap();
    let repo = s.repo();
    let shown_id = id.clone();
    let sandbox = Arc::new(s);
    let other = Arc::clone(&sandbox);
    let model_for_other = model.clone();
    editor(
        &sandbox,
        &model,
        Arc::new(Seen::default()),
        move |cx, _rx| async move {
            let acp_id = SessionId::new(id.clone());
            cx.send_request(LoadSessionRequest::new(acp_id.clone(), repo))
                .block_task()
                .await
                .unwrap();
            // Another process runs a turn on it: the prompt is refused,
            // naming it.
            let refused = cx
                .send_request(PromptRequest::new(acp_id.clone(), vec![text("second")]))
                .block_task()
                .await
                .unwrap_err();
            let said = format!("{refused:?}");
            assert!(said.contains("session/busy"), "{said}");
            assert!(said.contains(held_by), "{said}");
            store.release_lease(session, held_by).await.unwrap();

            // Free again, but another process ran a turn since this one
            // opened it: the prompt runs on the session opened again.
            let out = tokio::task::spawn_blocking(move || {
                run(
                    &other,
                    &[
                        "--json",
                        "sessions",
                        "resume",
                        &id,
                        "elsewhere",
                        "--model",
                        &model_for_other,
                    ],
                )
            })
            .await
            .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let answer = cx
                .send_request(PromptRequest::new(acp_id, vec![text("third")]))
                .block_task()
                .await
                .unwrap();
            assert_eq!(answer.stop_reason, StopReason::EndTurn);
        },
    )
    .await;
    let shown = sandbox.json(&["--json", "sessions", "show", &shown_id]);
    let users: Vec<&str> = shown["transcript"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["message"]["role"] == "user")
        .map(|e| e["message"]["content"].as_str().unwrap())
        .collect();
    assert_eq!(users, ["first", "elsewhere", "third"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changed_sources_apply_from_the_next_prompt() {
    let s = Sandbox::new();
    let model = script(
        &s,
        "sources.yaml",
        "turns:\n  - expect: {user: one}\n    reply: {text: First.}\n  - expect: {user: two}\n    reply: {text: Second.}\n",
    );
    let repo = s.repo();
    let skill = s.config().join("skills/notes/SKILL.md");
    editor(
        &s,
        &model,
        Arc::new(Seen::default()),
        move |cx, mut rx| async move {
            let id = cx
                .send_request(NewSessionRequest::new(repo.clone()))
                .block_task()
                .await
                .unwrap()
                .session_id;
            cx.send_request(PromptRequest::new(id.clone(), vec![text("one")]))
                .block_task()
                .await
                .unwrap();
            assert!(message_text(&drain(&mut rx)).contains("First."));
            std::fs::create_dir_all(skill.parent().unwrap()).unwrap();
            std::fs::write(
                &skill,
                "---\nname: notes\ndescription: Keeps notes.\n---\nKeep notes.\n",
            )
            .unwrap();
            tokio::time::sleep(Duration::from_millis(500)).await;
            let answer = cx
                .send_request(PromptRequest::new(id.clone(), vec![text("two")]))
                .block_task()
                .await
                .unwrap();
            assert_eq!(answer.stop_reason, StopReason::EndTurn);
            let updates = drain(&mut rx);
            assert!(message_text(&updates).contains("Second."));
            let announced = updates.iter().any(|u| matches!(u,
                SessionUpdate::AgentThoughtChunk(c)
                    if matches!(&c.content, ContentBlock::Text(t) if t.text.contains("apply from this prompt"))));
            assert!(announced, "{updates:?}");
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_call_reaches_the_editor_in_the_order_the_engine_emitted_it() {
    let s = Sandbox::new();
    s.user("config.toml", "[approval]\nshell = \"always\"\n");
    // The same scenario as the CLI's and the HTTP API's
    // (tests/it/front_ends.rs): a call that asks, approved, then an answer.
    let model = script(
        &s,
        "acp.yaml",
        "turns:\n  - expect: {user: go}\n    reply:\n      tool_calls:\n        - {name: shell, arguments: {command: \"mkdir -p made && echo made-it\"}}\n  - expect: {tool_result: {contains: made-it}}\n    reply: {text: finished}\n",
    );
    let seen = Arc::new(Seen::default());
    let repo = s.repo();
    let stop: Arc<Mutex<Option<StopReason>>> = Arc::default();
    let stopped = Arc::clone(&stop);
    editor(&s, &model, Arc::clone(&seen), move |cx, _rx| async move {
        let id = cx
            .send_request(NewSessionRequest::new(repo.clone()))
            .block_task()
            .await
            .unwrap()
            .session_id;
        let answer = cx
            .send_request(PromptRequest::new(id, vec![text("go")]))
            .block_task()
            .await
            .unwrap();
        *stopped.lock().unwrap() = Some(answer.stop_reason);
    })
    .await;
    assert_eq!(*stop.lock().unwrap(), Some(StopReason::EndTurn));
    // The engine's sequence for this turn, as every front end emits it
    // (tests/it/front_ends.rs pins it), projected onto what ACP shows: the
    // turn's start and the decision are the editor's own to know.
    let engine = [
        "turn_started",
        "tool_started",
        "approval_requested",
        "approval_decided",
        "tool_ended",
        "message_delta",
        "turn_completed",
    ];
    // Before the turn: the session's available commands, told after the
    // answer to `session/new`.
    let expected: Vec<&str> = std::iter::once("commands")
        .chain(engine.iter().filter_map(|kind| match *kind {
            "tool_started" => Some("tool_call"),
            "approval_requested" => Some("permission"),
            "tool_ended" => Some("tool_completed"),
            "message_delta" => Some("message"),
            _ => None,
        }))
        .collect();
    let log = seen.log.lock().unwrap().clone();
    assert_eq!(log, expected);
}
