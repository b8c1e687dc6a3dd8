//! What an MCP server sends during a session's tool call, end to end
//! against the reference server `@modelcontextprotocol/server-everything`
//! (named by `EVOFLUX_TEST_MCP_EVERYTHING`; skipped with a note without
//! it) and the crate's own test server: progress and logs become events
//! on the call, sampling is answered by the session's (scripted) model
//! after the user's approval and counted in the turn's usage, a form is
//! answered through the session's approver, and a run nobody watches
//! declines both with a reason the server reads.

use crate::common;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{Recorder, World, call, text};
use evoflux_core::AppMode;
use evoflux_harness::approval::{
    ApprovalDecision, ApprovalFuture, ApprovalRequest, ApprovalSubject, Approver, Decided,
    DecidedBy, ElicitationAnswer, ElicitationAsk, ElicitationFuture, Elicited,
};
use evoflux_harness::events::{CallPurpose, ElicitationAction, ServerLogLevel};
use evoflux_harness::{CollectEvents, Event, Harness, NonInteractive, SessionRequest, TurnOptions};
use evoflux_mcp::{ManagerOptions, McpRuntime};
use evoflux_store::WorkspaceRequest;
use serde_json::json;

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

/// Approves sampling and fills in forms as a user at a terminal would,
/// keeping what it was asked.
#[derive(Debug, Default)]
struct User {
    approvals: Mutex<Vec<ApprovalRequest>>,
    forms: Mutex<Vec<ElicitationAsk>>,
}

impl Approver for User {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> ApprovalFuture<'a> {
        self.approvals.lock().unwrap().push(request.clone());
        Box::pin(async { Decided::by_user(ApprovalDecision::Approved) })
    }

    fn elicit<'a>(&'a self, request: &'a ElicitationAsk) -> ElicitationFuture<'a> {
        self.forms.lock().unwrap().push(request.clone());
        let content = json!({"name": "Ada Lovelace", "check": true, "integer": 7});
        Box::pin(async move {
            Elicited {
                answer: ElicitationAnswer::Accept {
                    content: content.as_object().cloned().unwrap_or_default(),
                },
                by: DecidedBy::User,
            }
        })
    }
}

async fn session(
    world: &World,
    provider: Arc<Recorder>,
    events: Arc<CollectEvents>,
    approver: Arc<dyn Approver>,
    server: &str,
) -> (Harness, McpRuntime) {
    let rt = McpRuntime::new(&world.graph, None, ManagerOptions::default())
        .unwrap()
        .0;
    let mut setup = world
        .setup_with(AppMode::Work, provider, events, approver)
        .await;
    setup.agent.mcp = vec![server.into()];
    setup.mcp = Some(rt.clone());
    let request = SessionRequest::New {
        workspace: WorkspaceRequest::Work,
        graph_hash: None,
    };
    let h = Harness::open(setup, request).await.unwrap();
    rt.settle(Duration::from_secs(60)).await;
    (h, rt)
}

fn everything_world(index: &std::path::Path) -> World {
    let mcp = json!({"mcpServers": {"every": {
        "command": "node",
        "args": [index.to_string_lossy(), "stdio"],
    }}});
    World::with_files(&[(".evoflux/mcp.json", &mcp.to_string())])
}

fn result_of(events: &[Event], id: &str) -> String {
    events
        .iter()
        .find_map(|e| match e {
            Event::ToolEnded {
                call_id, content, ..
            } if call_id == id => Some(content.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no result of {id}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_sampling_and_a_form_reach_the_user_and_the_model() {
    let Some(index) = everything() else { return };
    let world = everything_world(&index);
    let provider = Recorder::new(vec![
        call(
            "c1",
            "mcp__every__trigger-long-running-operation",
            json!({"duration": 1, "steps": 3}),
        ),
        call(
            "c2",
            "mcp__every__trigger-sampling-request",
            json!({"prompt": "Name a city", "maxTokens": 40}),
        ),
        // The sampling request's answer, from the session's model.
        text("Lisbon"),
        call("c3", "mcp__every__trigger-elicitation-request", json!({})),
        text("Done."),
    ]);
    let events = Arc::new(CollectEvents::default());
    let user = Arc::new(User::default());
    let (mut h, rt) = session(
        &world,
        provider.clone(),
        events.clone(),
        user.clone(),
        "every",
    )
    .await;
    h.turn(Some("Go."), TurnOptions::default()).await.unwrap();
    let events = events.take();

    // Progress, on the running call.
    let progress: Vec<(f64, Option<f64>)> = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolProgress {
                call_id,
                progress,
                total,
                ..
            } if call_id == "c1" => Some((*progress, *total)),
            _ => None,
        })
        .collect();
    assert!(!progress.is_empty(), "no progress event");
    assert_eq!(progress.last(), Some(&(3.0, Some(3.0))), "{progress:?}");

    // Sampling: approved by the user, answered by the session's model.
    let asked = user.approvals.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0].call_id, "c2:sampling-1");
    match &asked[0].subject {
        ApprovalSubject::Sampling {
            server,
            preview,
            max_tokens,
        } => {
            assert_eq!(server, "every");
            assert_eq!(*max_tokens, 40);
            assert!(preview.contains("Name a city"), "{preview}");
            assert!(
                preview.contains("You are a helpful test server."),
                "{preview}"
            );
        }
        other => panic!("asked for {other:?}"),
    }
    assert!(events.iter().any(|e| matches!(
        e,
        Event::ApprovalRequested { call_id, sampling: Some(s), .. }
            if call_id == "c2:sampling-1" && s.server == "every"
    )));
    let requests = provider.requests();
    assert_eq!(requests.len(), 5);
    let sampling = &requests[2];
    assert_eq!(sampling.purpose, CallPurpose::Sampling);
    assert_eq!(sampling.max_tokens, Some(40));
    assert!(sampling.tools.is_empty());
    assert!(result_of(&events, "c2").contains("Lisbon"));
    assert!(events.iter().any(|e| matches!(
        e,
        Event::ModelCallCompleted {
            purpose: CallPurpose::Sampling,
            ..
        }
    )));
    // Counted in the turn's usage: four turn calls and the sampling one.
    let usage = events
        .iter()
        .find_map(|e| match e {
            Event::TurnCompleted { usage, .. } => Some(*usage),
            _ => None,
        })
        .unwrap();
    assert_eq!(usage.requests, 5);

    // The form: asked through the approver, answered, shown to the server.
    let forms = user.forms.lock().unwrap().clone();
    assert_eq!(forms.len(), 1);
    assert_eq!(forms[0].id, "c3:elicitation-1");
    assert_eq!(forms[0].server, "every");
    assert_eq!(forms[0].schema["required"], json!(["name"]));
    assert!(events.iter().any(|e| matches!(
        e,
        Event::ElicitationRequested { id, call_id, .. } if id == "c3:elicitation-1" && call_id == "c3"
    )));
    assert!(events.iter().any(|e| matches!(
        e,
        Event::ElicitationAnswered {
            action: ElicitationAction::Accept,
            by: DecidedBy::User,
            ..
        }
    )));
    let answered = result_of(&events, "c3");
    assert!(answered.contains("Ada Lovelace"), "{answered}");
    rt.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_nobody_watches_declines_sampling_and_forms_with_a_reason() {
    let Some(index) = everything() else { return };
    let world = everything_world(&index);
    let provider = Recorder::new(vec![
        call(
            "c1",
            "mcp__every__trigger-sampling-request",
            json!({"prompt": "Name a city"}),
        ),
        call("c2", "mcp__every__trigger-elicitation-request", json!({})),
        text("Done."),
    ]);
    let events = Arc::new(CollectEvents::default());
    let (mut h, rt) = session(
        &world,
        provider.clone(),
        events.clone(),
        Arc::new(NonInteractive),
        "every",
    )
    .await;
    h.turn(Some("Go."), TurnOptions::default()).await.unwrap();
    let events = events.take();
    // No sampling call reached the model.
    assert_eq!(provider.requests().len(), 3);
    let refused = result_of(&events, "c1");
    assert!(refused.contains("non-interactive"), "{refused}");
    assert!(events.iter().any(|e| matches!(
        e,
        Event::Warning { code, .. } if code == "mcp/sampling-refused"
    )));
    assert!(events.iter().any(|e| matches!(
        e,
        Event::ElicitationAnswered {
            action: ElicitationAction::Decline,
            by: DecidedBy::Policy,
            ..
        }
    )));
    let declined = result_of(&events, "c2");
    assert!(declined.to_lowercase().contains("decline"), "{declined}");
    rt.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_servers_log_messages_are_events_on_the_call() {
    let srv = evoflux_mcp::testserver::serve_http(Default::default(), 0)
        .await
        .unwrap();
    let mcp = json!({"mcpServers": {"live": {"type": "http", "url": srv.url()}}});
    let world = World::with_files(&[(".evoflux/mcp.json", &mcp.to_string())]);
    let provider = Recorder::new(vec![
        call("c1", "mcp__live__chatter", json!({})),
        text("Done."),
    ]);
    let events = Arc::new(CollectEvents::default());
    let (mut h, rt) = session(
        &world,
        provider,
        events.clone(),
        Arc::new(NonInteractive),
        "live",
    )
    .await;
    h.turn(Some("Go."), TurnOptions::default()).await.unwrap();
    let events = events.take();
    let logs: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolLog {
                call_id,
                server,
                level,
                logger,
                message,
            } => Some((
                call_id.as_str(),
                server.as_str(),
                *level,
                logger.as_deref(),
                message.as_str(),
            )),
            _ => None,
        })
        .collect();
    assert_eq!(
        logs,
        [(
            "c1",
            "live",
            ServerLogLevel::Warning,
            Some("chatter"),
            "disk almost full"
        )]
    );
    let steps = events
        .iter()
        .filter(|e| matches!(e, Event::ToolProgress { call_id, .. } if call_id == "c1"))
        .count();
    assert_eq!(steps, 3);
    // Progress comes before the call's end.
    let ended = events
        .iter()
        .position(|e| matches!(e, Event::ToolEnded { .. }))
        .unwrap();
    let last_progress = events
        .iter()
        .rposition(|e| matches!(e, Event::ToolProgress { .. }))
        .unwrap();
    assert!(last_progress < ended);
    rt.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_everythings_simulated_logging_reaches_the_session_during_a_call() {
    let Some(index) = everything() else { return };
    let world = everything_world(&index);
    let provider = Recorder::new(vec![
        call("c1", "mcp__every__toggle-simulated-logging", json!({})),
        // Its logs come every 5 s: this call is in flight for one of them.
        call(
            "c2",
            "mcp__every__trigger-long-running-operation",
            json!({"duration": 6, "steps": 2}),
        ),
        call("c3", "mcp__every__toggle-simulated-logging", json!({})),
        text("Done."),
    ]);
    let events = Arc::new(CollectEvents::default());
    let (mut h, rt) = session(
        &world,
        provider,
        events.clone(),
        Arc::new(NonInteractive),
        "every",
    )
    .await;
    h.turn(Some("Go."), TurnOptions::default()).await.unwrap();
    let logs: Vec<(String, String)> = events
        .take()
        .into_iter()
        .filter_map(|e| match e {
            Event::ToolLog {
                call_id,
                server,
                message,
                ..
            } => {
                assert_eq!(server, "every");
                Some((call_id, message))
            }
            _ => None,
        })
        .collect();
    assert!(
        logs.iter()
            // `Info-level message`, `Alert level-message`, … (its words).
            .any(|(call, message)| call == "c2" && message.contains("level")),
        "{logs:?}"
    );
    rt.shutdown().await;
}
