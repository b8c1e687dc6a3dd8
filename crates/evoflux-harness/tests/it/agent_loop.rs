#![allow(clippy::unwrap_used, clippy::expect_used)]

//! The loop end to end against a recording provider: prompts, typed
//! handling, pending input across a restart, terminal output, limits.

use crate::common;

use std::sync::Arc;

use common::{Recorder, World, call, redact, sorted, text};
use evoflux_core::AppMode;
use evoflux_core::ids::Ids;
use evoflux_harness::{CollectEvents, Event, Harness, SessionRequest, TurnOptions, TurnStatus};
use evoflux_model::Message;
use evoflux_store::{Store, WorkspaceRequest};
use serde_json::json;

fn coding(world: &World) -> SessionRequest {
    SessionRequest::New {
        workspace: WorkspaceRequest::Coding(vec![world.repo()]),
        graph_hash: None,
    }
}

fn tool_messages(h: &Harness) -> Vec<(String, bool)> {
    h.messages()
        .iter()
        .filter_map(|m| match m {
            Message::Tool {
                content, is_error, ..
            } => Some((content.clone(), *is_error)),
            _ => None,
        })
        .collect()
}

/// The exact request of the first model call, with the temp paths and the
/// session id replaced so the snapshot is stable.
async fn first_request(mode: AppMode) -> String {
    let world = World::with_files(&[("README.md", "hello\n")]);
    let provider = Recorder::new(vec![text("Done.")]);
    let mut setup = world
        .setup(mode, provider.clone(), Arc::new(CollectEvents::default()))
        .await;
    setup.store = Store::open_with_ids(world.data(), Ids::sequential())
        .await
        .unwrap();
    // Exactly what a CLI session sends: every standard owner.
    setup.pipeline =
        evoflux_harness::standard_pipeline(evoflux_harness::PipelineOptions::new(mode)).unwrap();
    let request = match mode {
        AppMode::Work => SessionRequest::New {
            workspace: WorkspaceRequest::Work,
            graph_hash: None,
        },
        AppMode::Coding => coding(&world),
    };
    let mut h = Harness::open(setup, request).await.unwrap();
    h.turn(Some("Summarize the README."), TurnOptions::default())
        .await
        .unwrap();
    // Keys sorted: serde_json keeps insertion order when another crate of
    // the build turns on `preserve_order`, and the snapshot must not care.
    let request = sorted(serde_json::to_value(provider.last_request()).unwrap());
    let rendered = serde_json::to_string_pretty(&request).unwrap();
    let rendered = redact(&rendered, &world.data(), "[DATA]");
    let rendered = redact(&rendered, &world.repo(), "[REPO]");
    rendered.replace(
        &format!("{} ({})", std::env::consts::OS, std::env::consts::ARCH),
        "[PLATFORM]",
    )
}

#[tokio::test]
async fn prompt_of_a_work_session() {
    insta::assert_snapshot!(first_request(AppMode::Work).await);
}

#[tokio::test]
async fn prompt_of_a_coding_session() {
    insta::assert_snapshot!(first_request(AppMode::Coding).await);
}

#[tokio::test]
async fn reads_edits_and_greps_in_the_workspace() {
    let world = World::with_files(&[("src/main.rs", "fn main() { println!(\"helo\"); }\n")]);
    let provider = Recorder::new(vec![
        call("c1", "grep", json!({"pattern": "helo"})),
        call("c2", "read", json!({"path": "src/main.rs"})),
        call(
            "c3",
            "edit",
            json!({"path": "src/main.rs", "old_string": "helo", "new_string": "hello"}),
        ),
        call("c4", "read", json!({"path": "../outside.txt"})),
        text("Fixed."),
    ]);
    let events = Arc::new(CollectEvents::default());
    let setup = world
        .setup(AppMode::Coding, provider.clone(), events.clone())
        .await;
    let mut h = Harness::open(setup, coding(&world)).await.unwrap();
    let out = h
        .turn(Some("fix the typo"), TurnOptions::default())
        .await
        .unwrap();
    assert_eq!(out.status, TurnStatus::Completed);
    assert_eq!(out.text, "Fixed.");
    let source = std::fs::read_to_string(world.repo().join("src/main.rs")).unwrap();
    assert!(source.contains("hello"), "{source}");
    let results = tool_messages(&h);
    assert!(results[0].0.contains("src/main.rs"), "{results:?}");
    assert!(results[1].0.contains("helo"));
    assert!(!results[2].1);
    // Outside the workspace: refused, and the model is told so.
    assert!(results[3].1);
    assert!(
        results[3].0.contains("outside the workspace"),
        "{}",
        results[3].0
    );
    // The transcript holds the same conversation.
    let store = Store::open(world.data()).await.unwrap();
    let transcript = store.transcript(h.session().id).await.unwrap();
    assert_eq!(transcript.len(), h.messages().len());
    let usage = store.usage(h.session().id).await.unwrap();
    assert_eq!(usage.requests, 5);
    let kinds: Vec<&str> = events
        .take()
        .iter()
        .map(|e| match e {
            Event::SessionStarted { .. } => "session",
            Event::TurnStarted { .. } => "turn",
            Event::MessageDelta { .. } => "delta",
            Event::ToolStarted { .. } => "tool_started",
            Event::ToolEnded { .. } => "tool_ended",
            Event::TurnCompleted { .. } => "completed",
            _ => "other",
        })
        .collect();
    assert_eq!(kinds.first(), Some(&"session"));
    assert_eq!(kinds.last(), Some(&"completed"));
    assert_eq!(kinds.iter().filter(|k| **k == "tool_ended").count(), 4);
}

#[tokio::test]
async fn ask_user_waits_and_resumes_after_a_restart() {
    let world = World::new();
    let first = Recorder::new(vec![call(
        "q1",
        "ask_user",
        json!({"question": "Which format?", "options": ["csv", "json"]}),
    )]);
    let setup = world
        .setup(
            AppMode::Work,
            first.clone(),
            Arc::new(CollectEvents::default()),
        )
        .await;
    let mut h = Harness::open(
        setup,
        SessionRequest::New {
            workspace: WorkspaceRequest::Work,
            graph_hash: None,
        },
    )
    .await
    .unwrap();
    let out = h
        .turn(Some("export the data"), TurnOptions::default())
        .await
        .unwrap();
    assert_eq!(out.status, TurnStatus::WaitingForInput);
    assert_eq!(out.question.as_ref().unwrap().question, "Which format?");
    let id = h.session().id;
    drop(h);

    // A new process: a fresh store handle and harness on the same data dir.
    let second = Recorder::new(vec![text("Exported as json.")]);
    let events = Arc::new(CollectEvents::default());
    let setup = world
        .setup(AppMode::Work, second.clone(), events.clone())
        .await;
    let mut h = Harness::open(
        setup,
        SessionRequest::Resume {
            id,
            mode: None,
            workspace: None,
        },
    )
    .await
    .unwrap();
    assert_eq!(
        h.pending_question().await.unwrap().unwrap().options,
        ["csv", "json"]
    );
    let out = h.turn(Some("json"), TurnOptions::default()).await.unwrap();
    assert_eq!(out.status, TurnStatus::Completed);
    // The model saw the answer as the result of its ask_user call.
    let sent = second.last_request();
    let answer = sent.messages.iter().find_map(|m| match m {
        Message::Tool {
            tool_call_id,
            content,
            ..
        } if tool_call_id == "q1" => Some(content.clone()),
        _ => None,
    });
    assert_eq!(answer.as_deref(), Some("The user answered: json"));
    assert!(h.pending_question().await.unwrap().is_none());
}

#[tokio::test]
async fn final_output_is_validated_and_a_wrong_one_goes_back_to_the_model() {
    let world = World::new();
    let provider = Recorder::new(vec![
        call("f1", "final_output", json!({"files": "three"})),
        call("f2", "final_output", json!({"files": 3})),
    ]);
    let setup = world
        .setup(
            AppMode::Coding,
            provider.clone(),
            Arc::new(CollectEvents::default()),
        )
        .await;
    let mut h = Harness::open(setup, coding(&world)).await.unwrap();
    let schema = json!({
        "type": "object",
        "properties": {"files": {"type": "integer"}},
        "required": ["files"],
        "additionalProperties": false
    });
    let out = h
        .turn(
            Some("count the files"),
            TurnOptions {
                output_schema: Some(schema),
                ..TurnOptions::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(out.status, TurnStatus::Completed);
    assert_eq!(out.output, Some(json!({"files": 3})));
    let results = tool_messages(&h);
    assert!(results[0].1, "the wrong result is an error result");
    assert!(results[0].0.contains("/files"), "{}", results[0].0);
    // final_output exists only in a turn with a schema.
    let first = &provider.requests()[0];
    assert!(Recorder::tool_names(first).contains(&"final_output".to_owned()));
}

#[tokio::test]
async fn a_turn_without_schema_has_no_final_output_and_a_missing_result_is_reported() {
    let world = World::new();
    let provider = Recorder::new(vec![text("a"), text("b"), text("c"), text("d")]);
    let setup = world
        .setup(
            AppMode::Coding,
            provider.clone(),
            Arc::new(CollectEvents::default()),
        )
        .await;
    let mut h = Harness::open(setup, coding(&world)).await.unwrap();
    h.turn(Some("hi"), TurnOptions::default()).await.unwrap();
    assert!(!Recorder::tool_names(&provider.requests()[0]).contains(&"final_output".to_owned()));
    let out = h
        .turn(
            Some("give me json"),
            TurnOptions {
                output_schema: Some(json!({"type": "object"})),
                ..TurnOptions::default()
            },
        )
        .await
        .unwrap();
    // Two reminders, then the turn ends without a result.
    assert_eq!(out.status, TurnStatus::OutputMissing);
    assert_eq!(provider.requests().len(), 4);
}

#[tokio::test]
async fn unknown_tools_bad_arguments_and_unbuilt_dispatch_are_tool_errors() {
    let world = World::new();
    let provider = Recorder::new(vec![
        call("u1", "no_such_tool", json!({})),
        call("u2", "read", json!({"path": 7})),
        call("u3", "task_cancel", json!({"task_ids": ["t1"]})),
        text("ok"),
    ]);
    let setup = world
        .setup(
            AppMode::Coding,
            provider.clone(),
            Arc::new(CollectEvents::default()),
        )
        .await;
    let mut h = Harness::open(setup, coding(&world)).await.unwrap();
    h.turn(Some("go"), TurnOptions::default()).await.unwrap();
    let results = tool_messages(&h);
    assert!(results.iter().all(|(_, err)| *err));
    assert!(results[0].0.contains("no tool named `no_such_tool`"));
    assert!(results[1].0.contains("invalid arguments for `read`"));
    // This session cannot open child sessions: `task_cancel` is never
    // offered, and a call to it says why.
    assert!(
        results[2]
            .0
            .contains("`task_cancel` is not offered in this session"),
        "{}",
        results[2].0
    );
    assert!(!Recorder::tool_names(&provider.requests()[0]).contains(&"task_cancel".to_owned()));
}

#[tokio::test]
async fn interrupted_calls_are_closed_on_the_next_turn() {
    let world = World::new();
    let provider = Recorder::new(vec![text("resumed")]);
    let setup = world
        .setup(
            AppMode::Coding,
            provider.clone(),
            Arc::new(CollectEvents::default()),
        )
        .await;
    // Simulate a process killed after the assistant's tool call was stored.
    let store = Store::open(world.data()).await.unwrap();
    let session = store
        .create_session(evoflux_store::NewSession {
            workspace: WorkspaceRequest::Coding(vec![world.repo()]),
            lead: Some("evoflux".into()),
            model: None,
            graph_hash: None,
            parent: None,
        })
        .await
        .unwrap();
    store
        .append_message(session.id, &Message::user("list"))
        .await
        .unwrap();
    store
        .append_message(
            session.id,
            &Message::Assistant {
                provider_items: Vec::new(),
                content: String::new(),
                tool_calls: vec![evoflux_model::ToolCall {
                    id: "k1".into(),
                    name: "ls".into(),
                    arguments: json!({}),
                }],
            },
        )
        .await
        .unwrap();
    let mut h = Harness::open(
        setup,
        SessionRequest::Resume {
            id: session.id,
            mode: Some(AppMode::Coding),
            workspace: None,
        },
    )
    .await
    .unwrap();
    let out = h.turn(None, TurnOptions::default()).await.unwrap();
    assert_eq!(out.text, "resumed");
    let results = tool_messages(&h);
    assert_eq!(results.len(), 1);
    assert!(results[0].1 && results[0].0.contains("interrupted"));
    // Every call of the request the provider got has its result.
    let sent = provider.last_request();
    assert!(
        sent.messages
            .iter()
            .any(|m| matches!(m, Message::Tool { tool_call_id, .. } if tool_call_id == "k1"))
    );
}

#[tokio::test]
async fn resume_refuses_another_mode_and_another_lead() {
    let world = World::new();
    let setup = world
        .setup(
            AppMode::Coding,
            Recorder::new(vec![]),
            Arc::new(CollectEvents::default()),
        )
        .await;
    let h = Harness::open(setup, coding(&world)).await.unwrap();
    let id = h.session().id;
    drop(h);
    let setup = world
        .setup(
            AppMode::Work,
            Recorder::new(vec![]),
            Arc::new(CollectEvents::default()),
        )
        .await;
    let err = Harness::open(
        setup,
        SessionRequest::Resume {
            id,
            mode: Some(AppMode::Work),
            workspace: None,
        },
    )
    .await
    .unwrap_err();
    assert_eq!(err.code(), "store/mode-mismatch");
    let mut setup = world
        .setup(
            AppMode::Coding,
            Recorder::new(vec![]),
            Arc::new(CollectEvents::default()),
        )
        .await;
    setup.agent.name = "other-lead".into();
    let err = Harness::open(
        setup,
        SessionRequest::Resume {
            id,
            mode: None,
            workspace: None,
        },
    )
    .await
    .unwrap_err();
    assert_eq!(err.code(), "session/lead-mismatch");
}

#[tokio::test]
async fn the_todo_list_survives_a_restart() {
    let world = World::new();
    let provider = Recorder::new(vec![
        call(
            "t1",
            "todo",
            json!({"todos": [{"content": "write tests", "status": "in_progress"}]}),
        ),
        text("planned"),
    ]);
    let setup = world
        .setup(
            AppMode::Coding,
            provider,
            Arc::new(CollectEvents::default()),
        )
        .await;
    let mut h = Harness::open(setup, coding(&world)).await.unwrap();
    h.turn(Some("plan"), TurnOptions::default()).await.unwrap();
    let id = h.session().id;
    drop(h);
    let provider = Recorder::new(vec![call("t2", "todo", json!({})), text("read")]);
    let setup = world
        .setup(
            AppMode::Coding,
            provider,
            Arc::new(CollectEvents::default()),
        )
        .await;
    let mut h = Harness::open(
        setup,
        SessionRequest::Resume {
            id,
            mode: None,
            workspace: None,
        },
    )
    .await
    .unwrap();
    h.turn(Some("what is left?"), TurnOptions::default())
        .await
        .unwrap();
    let results = tool_messages(&h);
    assert!(results.last().unwrap().0.contains("[~] write tests"));
}

#[tokio::test]
async fn the_model_call_limit_stops_a_looping_turn() {
    let world = World::new();
    let replies = (0..3)
        .map(|i| call(&format!("l{i}"), "ls", json!({})))
        .collect();
    let provider = Recorder::new(replies);
    let mut setup = world
        .setup(
            AppMode::Coding,
            provider.clone(),
            Arc::new(CollectEvents::default()),
        )
        .await;
    setup.limits.model_calls_per_turn = 3;
    let mut h = Harness::open(setup, coding(&world)).await.unwrap();
    let out = h.turn(Some("loop"), TurnOptions::default()).await.unwrap();
    assert_eq!(out.status, TurnStatus::LimitReached);
    assert_eq!(provider.requests().len(), 3);
}

#[tokio::test]
async fn unavailable_tools_are_reported_not_offered() {
    let world = World::new();
    let provider = Recorder::new(vec![text("hi")]);
    let events = Arc::new(CollectEvents::default());
    let mut setup = world
        .setup(AppMode::Work, provider.clone(), events.clone())
        .await;
    setup.can_request_input = false;
    let mut h = Harness::open(
        setup,
        SessionRequest::New {
            workspace: WorkspaceRequest::Work,
            graph_hash: None,
        },
    )
    .await
    .unwrap();
    h.turn(Some("hi"), TurnOptions::default()).await.unwrap();
    let offered = Recorder::tool_names(&provider.last_request());
    assert!(!offered.contains(&"ask_user".to_owned()));
    assert!(!offered.contains(&"web_fetch".to_owned()));
    let Event::SessionStarted {
        unavailable_tools, ..
    } = &events.take()[0]
    else {
        panic!("first event is session_started");
    };
    let names: Vec<&str> = unavailable_tools.iter().map(|u| u.tool.as_str()).collect();
    assert!(
        names.contains(&"ask_user") && names.contains(&"web_fetch"),
        "{names:?}"
    );
}
