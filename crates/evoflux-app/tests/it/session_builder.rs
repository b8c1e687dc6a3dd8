#![allow(clippy::unwrap_used, clippy::expect_used)]

//! Opening, running and resuming a session through [`SessionBuilder`]
//! alone — the path every front end takes — without the CLI crate.

use std::sync::Arc;

use evoflux_app::testing::{app, script};
use evoflux_app::{ModelOrigin, SessionBuilder, SessionError, SessionOptions};
use evoflux_core::AppMode;
use evoflux_harness::{CollectEvents, Event, TurnOptions, TurnStatus};

#[tokio::test]
async fn a_session_opens_runs_and_resumes_through_the_builder() {
    let tmp = tempfile::tempdir().unwrap();
    let app = app(tmp.path());
    let model = script(
        tmp.path(),
        r#"
turns:
  - expect: {user: Which colour?}
    reply:
      tool_calls:
        - {name: ask_user, arguments: {question: Red or blue?, options: [red, blue]}}
"#,
    );
    let events = Arc::new(CollectEvents::default());
    let opened = SessionBuilder::new(
        &app,
        SessionOptions {
            mode: Some(AppMode::Coding),
            model: Some(model.clone()),
            ..SessionOptions::default()
        },
    )
    .events(events.clone())
    .open()
    .await
    .unwrap();
    assert_eq!(opened.model_origin, ModelOrigin::Explicit);
    let mut h = opened.harness;
    let id = h.session().id;
    assert_eq!(h.session().mode(), AppMode::Coding);
    assert_eq!(h.session().model.as_deref(), Some(model.as_str()));
    let outcome = h
        .turn(Some("Which colour?"), TurnOptions::default())
        .await
        .unwrap();
    assert_eq!(outcome.status, TurnStatus::WaitingForInput);
    assert_eq!(outcome.question.unwrap().options, ["red", "blue"]);
    h.shutdown().await;
    drop(h);

    // Another handle resumes it: the persisted mode and model decide. The
    // resumed provider replays the script file from its first turn.
    script(
        tmp.path(),
        "turns:\n  - expect: {tool_result: {contains: blue}}\n    reply: {text: Blue it is.}\n",
    );
    let opened = SessionBuilder::new(
        &app,
        SessionOptions {
            resume: Some(id),
            ..SessionOptions::default()
        },
    )
    .open()
    .await
    .unwrap();
    assert_eq!(opened.model_origin, ModelOrigin::Session);
    assert_eq!(opened.model.to_string(), model);
    let mut h = opened.harness;
    assert_eq!(h.session().mode(), AppMode::Coding);
    let question = h.pending_question().await.unwrap().unwrap();
    assert_eq!(question.question, "Red or blue?");
    let outcome = h.turn(Some("blue"), TurnOptions::default()).await.unwrap();
    assert_eq!(outcome.status, TurnStatus::Completed);
    assert_eq!(outcome.text, "Blue it is.");
    h.shutdown().await;
    let started = events
        .take()
        .into_iter()
        .filter(|e| matches!(e, Event::SessionStarted { .. }))
        .count();
    assert_eq!(
        started, 1,
        "the first handle's sink saw its own session start"
    );
}

#[tokio::test]
async fn opening_errors_are_typed_and_say_whether_the_input_is_wrong() {
    let tmp = tempfile::tempdir().unwrap();
    let app = app(tmp.path());
    let model = script(tmp.path(), "turns:\n  - reply: {text: hi}\n");
    let open = |options: SessionOptions| {
        let app = &app;
        async move { SessionBuilder::new(app, options).open().await }
    };
    let mut all = Vec::new();
    let err = open(SessionOptions {
        lead: Some("nosuch".into()),
        model: Some(model.clone()),
        ..SessionOptions::default()
    })
    .await
    .unwrap_err();
    assert_eq!(err.code(), "session/lead-unknown");
    assert!(err.is_invalid_input());
    all.push(err.to_string());
    let err = open(SessionOptions {
        model: Some("no-colon".into()),
        ..SessionOptions::default()
    })
    .await
    .unwrap_err();
    assert_eq!(err.code(), "session/model-invalid");
    assert!(err.is_invalid_input());
    all.push(err.to_string());
    let err = open(SessionOptions {
        mode: Some(AppMode::Coding),
        workspaces: vec!["missing".into()],
        model: Some(model.clone()),
        ..SessionOptions::default()
    })
    .await
    .unwrap_err();
    assert!(matches!(err, SessionError::Workspace { .. }), "{err}");
    assert!(err.is_invalid_input());
    all.push(err.to_string());
    // No library error names a front end's flag.
    for e in &all {
        assert!(!e.contains("--"), "{e}");
    }
}
