#![allow(clippy::unwrap_used, clippy::expect_used)]

//! The session host: one turn at a time, one cancellation path, one
//! approval broker shared by every client, one refresh policy — driven the
//! way every front end drives it, through a [`SessionBuilder`] wired to
//! the host.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use evoflux_app::testing::{app, script};
use evoflux_app::{AppContext, SessionBuilder, SessionOptions};
use evoflux_core::AppMode;
use evoflux_harness::host::BoxFuture;
use evoflux_harness::{
    ApprovalDecision, Decided, DecidedBy, DecisionKind, Event, EventKind, EventSink, Harness,
    HostError, HostFrontEnd, HostOptions, HostWiring, Reopen, ReopenError, SessionHost, ToolStatus,
    TurnEnd, TurnOptions, TurnStatus,
};
use evoflux_model::Message;
use evoflux_tools::ProcessRuntime;
use tokio::sync::Notify;

/// Keeps every event and wakes whoever waits for one.
#[derive(Debug, Default)]
struct Events {
    seen: Mutex<Vec<Event>>,
    changed: Notify,
}

impl EventSink for Events {
    fn emit(&self, event: &Event) {
        self.seen.lock().unwrap().push(event.clone());
        self.changed.notify_waiters();
    }
}

impl Events {
    fn all(&self) -> Vec<Event> {
        self.seen.lock().unwrap().clone()
    }

    fn kinds(&self) -> Vec<EventKind> {
        self.all().iter().map(Event::kind).collect()
    }

    /// The first event of `kind`, waiting for it.
    async fn wait(&self, kind: EventKind) -> Event {
        tokio::time::timeout(Duration::from_secs(60), async {
            loop {
                let changed = self.changed.notified();
                if let Some(e) = self.all().into_iter().find(|e| e.kind() == kind) {
                    return e;
                }
                changed.await;
            }
        })
        .await
        .unwrap_or_else(|_| panic!("no {kind:?} event came: {:?}", self.kinds()))
    }
}

/// How the tests' front end opens sessions: through the builder, wired to
/// the host, on one process runtime; it can be told to fail.
#[derive(Debug)]
struct Front {
    app: Arc<AppContext>,
    processes: ProcessRuntime,
    fail: AtomicBool,
    reopened: AtomicUsize,
}

impl Front {
    fn builder(&self, options: SessionOptions, wiring: &HostWiring) -> SessionBuilder<'_> {
        SessionBuilder::new(&self.app, options)
            .events(wiring.events())
            .approver(wiring.approver())
            .processes(self.processes.clone())
    }
}

impl HostFrontEnd for Front {
    fn reopen<'a>(&'a self, reopen: Reopen<'a>) -> BoxFuture<'a, Result<Harness, ReopenError>> {
        Box::pin(async move {
            self.reopened.fetch_add(1, Ordering::SeqCst);
            let options = SessionOptions {
                resume: Some(reopen.session),
                // A model that does not exist: the sources do not open.
                model: self
                    .fail
                    .load(Ordering::SeqCst)
                    .then(|| "nosuchprovider:nothing".to_owned()),
                ..SessionOptions::default()
            };
            let builder = self
                .builder(options, reopen.wiring)
                .reuse_model(reopen.model);
            Ok(builder.open().await?.harness)
        })
    }
}

struct Hosted {
    _tmp: tempfile::TempDir,
    host: SessionHost,
    events: Arc<Events>,
    front: Arc<Front>,
}

/// A Coding session on the scripted model `yaml`, hosted; `config` is the
/// user's config.toml.
async fn hosted(yaml: &str, config: &str) -> Hosted {
    let tmp = tempfile::tempdir().unwrap();
    let app = app(tmp.path());
    let config_dir = app.dirs.config_dir().to_path_buf();
    std::fs::create_dir_all(&config_dir).unwrap();
    std::fs::write(config_dir.join("config.toml"), config).unwrap();
    let model = script(tmp.path(), yaml);
    let processes = ProcessRuntime::new(app.runtime_config());
    let front = Arc::new(Front {
        app: Arc::new(app),
        processes,
        fail: AtomicBool::new(false),
        reopened: AtomicUsize::new(0),
    });
    let events = Arc::new(Events::default());
    let wiring = HostWiring::new(events.clone(), None);
    let opened = front
        .builder(
            SessionOptions {
                mode: Some(AppMode::Coding),
                model: Some(model),
                ..SessionOptions::default()
            },
            &wiring,
        )
        .open()
        .await
        .unwrap();
    let host = SessionHost::start(
        opened.harness,
        wiring,
        front.clone(),
        HostOptions::default(),
    );
    Hosted {
        _tmp: tmp,
        host,
        events,
        front,
    }
}

impl Hosted {
    /// Submits `text`; the turn runs on.
    async fn start(&self, text: &str) -> evoflux_harness::TurnHandle {
        self.host
            .submit(Some(text.to_owned()), TurnOptions::default())
            .await
            .unwrap()
    }

    /// Submits `text` and waits for the turn's end.
    async fn say(&self, text: &str) -> Result<TurnEnd, HostError> {
        self.start(text).await.ended().await
    }

    /// The call whose approval the running turn asks for, once asked.
    async fn asked(&self) -> String {
        match self.events.wait(EventKind::ApprovalRequested).await {
            Event::ApprovalRequested { call_id, .. } => call_id,
            other => panic!("{other:?}"),
        }
    }
}

fn position(kinds: &[EventKind], kind: EventKind) -> usize {
    kinds
        .iter()
        .position(|k| *k == kind)
        .unwrap_or_else(|| panic!("no {kind:?} in {kinds:?}"))
}

const ASKS_FOR_SHELL: &str = "[approval]\nshell = \"always\"\n";

#[tokio::test]
async fn one_decision_reaches_every_client_before_the_call_runs_and_a_second_is_refused() {
    let h = hosted(
        r#"
turns:
  - expect: {user: build it}
    reply:
      tool_calls:
        - {name: shell, arguments: {command: "mkdir -p made && echo built"}}
  - expect: {tool_result: {contains: built}}
    reply: {text: Built.}
"#,
        ASKS_FOR_SHELL,
    )
    .await;
    let turn = h.start("build it").await;
    let call_id = h.asked().await;
    assert_eq!(h.host.pending_approvals(), std::slice::from_ref(&call_id));
    // Two clients decide; the first one wins.
    h.host
        .decide(&call_id, Decided::by_user(ApprovalDecision::Approved))
        .unwrap();
    let second = h
        .host
        .decide(
            &call_id,
            Decided::by_user(ApprovalDecision::Denied {
                reason: "too late".into(),
            }),
        )
        .unwrap_err();
    assert_eq!(second.code(), "session/no-pending-approval");
    let TurnEnd::Completed(outcome) = turn.ended().await.unwrap() else {
        panic!("the turn was cancelled")
    };
    assert_eq!(outcome.status, TurnStatus::Completed);
    let kinds = h.events.kinds();
    assert!(
        position(&kinds, EventKind::ApprovalRequested)
            < position(&kinds, EventKind::ApprovalDecided)
    );
    assert!(position(&kinds, EventKind::ApprovalDecided) < position(&kinds, EventKind::ToolEnded));
    let decided = h.events.wait(EventKind::ApprovalDecided).await;
    assert!(matches!(
        decided,
        Event::ApprovalDecided {
            decision: DecisionKind::Approved,
            by: DecidedBy::User,
            ..
        }
    ));
    assert!(h.host.pending_approvals().is_empty());
    h.host.close().await;
}

#[tokio::test]
async fn cancelling_during_a_command_ends_its_call_then_the_turn_and_the_next_turn_runs() {
    let h = hosted(
        r#"
turns:
  - expect: {user: wait}
    reply:
      tool_calls:
        - {name: shell, arguments: {command: "sleep 30"}}
  - expect: {user: again}
    reply: {text: Here again.}
"#,
        "",
    )
    .await;
    let turn = h.start("wait").await;
    h.events.wait(EventKind::ToolStarted).await;
    // One turn at a time: a second message is refused while it runs.
    let busy = h
        .host
        .submit(Some("more".into()), TurnOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(busy, HostError::Busy), "{busy:?}");
    assert_eq!(busy.code(), "session/busy");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(h.host.cancel());
    assert_eq!(turn.ended().await.unwrap(), TurnEnd::Cancelled);
    let all = h.events.all();
    let kinds = h.events.kinds();
    // The call ends cancelled, before the turn's end, which is the last.
    let ended = all
        .iter()
        .find_map(|e| match e {
            Event::ToolEnded { status, .. } => Some(*status),
            _ => None,
        })
        .unwrap();
    assert_eq!(ended, ToolStatus::Cancelled);
    assert!(position(&kinds, EventKind::ToolEnded) < position(&kinds, EventKind::TurnCancelled));
    assert_eq!(kinds.last(), Some(&EventKind::TurnCancelled));
    assert!(!h.host.is_busy());
    // The transcript holds the cancelled call's result: a reload shows it
    // ended, and the next turn closes nothing.
    let last = h
        .host
        .with(|harness: &mut Harness| {
            let last = harness.messages().last().cloned();
            Box::pin(async move { last }) as BoxFuture<'_, _>
        })
        .await
        .unwrap();
    assert!(
        matches!(last, Some(Message::Tool { is_error: true, .. })),
        "{last:?}"
    );
    let next = h.say("again").await.unwrap();
    assert!(matches!(next, TurnEnd::Completed(ref o) if o.text == "Here again."));
    let ended_calls = h
        .events
        .kinds()
        .iter()
        .filter(|k| **k == EventKind::ToolEnded)
        .count();
    assert_eq!(ended_calls, 1, "the next turn closed the call again");
    h.host.close().await;
}

#[tokio::test]
async fn cancelling_while_an_approval_waits_decides_it_for_every_client() {
    let h = hosted(
        r#"
turns:
  - expect: {user: build it}
    reply:
      tool_calls:
        - {name: shell, arguments: {command: "mkdir -p made && echo built"}}
"#,
        ASKS_FOR_SHELL,
    )
    .await;
    let turn = h.start("build it").await;
    let call_id = h.asked().await;
    assert!(h.host.cancel());
    assert_eq!(turn.ended().await.unwrap(), TurnEnd::Cancelled);
    let decided = h.events.wait(EventKind::ApprovalDecided).await;
    assert_eq!(
        decided,
        Event::ApprovalDecided {
            call_id: call_id.clone(),
            decision: DecisionKind::Denied,
            reason: Some("the turn was cancelled".into()),
            by: DecidedBy::Cancellation,
        }
    );
    // Nobody can decide it any more.
    let late = h
        .host
        .decide(&call_id, Decided::by_user(ApprovalDecision::Approved))
        .unwrap_err();
    assert_eq!(late.code(), "session/no-pending-approval");
    let kinds = h.events.kinds();
    assert!(
        position(&kinds, EventKind::ApprovalDecided) < position(&kinds, EventKind::TurnCancelled)
    );
    h.host.close().await;
}

#[tokio::test]
async fn a_failing_model_call_ends_the_turn_and_the_session_takes_the_next_message() {
    // The script expects another message: the model call fails.
    let h = hosted(
        "turns:\n  - expect: {user: hello}\n    reply: {text: Hi.}\n",
        "",
    )
    .await;
    let failed = h.say("something else").await.unwrap_err();
    let code = failed.code();
    let kinds = h.events.kinds();
    // `error`, then the turn's end with the same code, last.
    assert!(position(&kinds, EventKind::Error) < position(&kinds, EventKind::TurnFailed));
    assert_eq!(kinds.last(), Some(&EventKind::TurnFailed));
    let Event::TurnFailed { code: ended, .. } = h.events.wait(EventKind::TurnFailed).await else {
        unreachable!()
    };
    assert_eq!(ended, code);
    assert!(!h.host.is_busy());
    // Not refused as busy: the turn is over.
    let again = h.say("hello").await;
    assert!(!matches!(again, Err(HostError::Busy)), "{again:?}");
    h.host.close().await;
}

#[tokio::test]
async fn a_question_is_answered_through_the_host() {
    let h = hosted(
        r#"
turns:
  - expect: {user: pick}
    reply:
      tool_calls:
        - {name: ask_user, arguments: {question: Red or blue?, options: [red, blue]}}
  - expect: {tool_result: {contains: blue}}
    reply: {text: Blue it is.}
"#,
        "",
    )
    .await;
    let asked = h.say("pick").await.unwrap();
    let TurnEnd::Completed(asked) = asked else {
        panic!("cancelled")
    };
    assert_eq!(asked.status, TurnStatus::WaitingForInput);
    let answered = h.say("blue").await.unwrap();
    assert!(matches!(answered, TurnEnd::Completed(ref o) if o.text == "Blue it is."));
    h.host.close().await;
}

#[tokio::test]
async fn changed_sources_apply_between_turns_and_sources_that_do_not_open_are_reported() {
    let h = hosted(
        r#"
turns:
  - expect: {user: one}
    reply: {text: One.}
  - expect: {user: two}
    reply: {text: Two.}
  - expect: {user: three}
    reply: {text: Three.}
"#,
        "",
    )
    .await;
    let run = |text: &'static str| {
        let host = h.host.clone();
        async move {
            host.submit(Some(text.into()), TurnOptions::default())
                .await
                .unwrap()
                .ended()
                .await
                .unwrap()
        }
    };
    run("one").await;
    assert_eq!(h.front.reopened.load(Ordering::SeqCst), 0);
    h.host.refresh();
    run("two").await;
    assert_eq!(h.front.reopened.load(Ordering::SeqCst), 1);
    let kinds = h.events.kinds();
    let applied = position(&kinds, EventKind::SourcesApplied);
    let second_turn = kinds
        .iter()
        .enumerate()
        .filter(|(_, k)| **k == EventKind::TurnStarted)
        .nth(1)
        .unwrap()
        .0;
    assert!(applied < second_turn, "{kinds:?}");
    // Sources that do not open: the session keeps its own and says so.
    h.front.fail.store(true, Ordering::SeqCst);
    h.host.refresh();
    let third = run("three").await;
    assert!(matches!(third, TurnEnd::Completed(ref o) if o.text == "Three."));
    let invalid = h.events.wait(EventKind::GraphInvalid).await;
    assert!(matches!(invalid, Event::GraphInvalid { .. }));
    h.host.close().await;
}

#[tokio::test]
async fn an_exclusive_operation_runs_between_turns_and_frees_the_session_when_it_answers() {
    let h = hosted(
        "turns:\n  - expect: {user: after}\n    reply: {text: After.}\n",
        "",
    )
    .await;
    let ran = h
        .host
        .exclusive(|harness: &mut Harness| {
            Box::pin(async move { harness.user_command("echo from-the-user").await })
                as BoxFuture<'_, Result<evoflux_harness::ToolResult, evoflux_harness::HarnessError>>
        })
        .await
        .unwrap()
        .unwrap();
    assert!(ran.content.contains("from-the-user"), "{}", ran.content);
    // Free at once: the next message is not refused as busy.
    let next = h.say("after").await.unwrap();
    assert!(matches!(next, TurnEnd::Completed(ref o) if o.text == "After."));
    h.host.close().await;
}

/// Another session on `h`'s front end (its app, config and process
/// runtime) on the scripted model `yaml`, hosted with `events` and
/// `options`.
async fn host_another(
    h: &Hosted,
    yaml: &str,
    events: Arc<dyn EventSink>,
    options: HostOptions,
) -> SessionHost {
    let wiring = HostWiring::new(events, None);
    let opened = h
        .front
        .builder(
            SessionOptions {
                mode: Some(AppMode::Coding),
                model: Some(script(h._tmp.path(), yaml)),
                ..SessionOptions::default()
            },
            &wiring,
        )
        .open()
        .await
        .unwrap();
    SessionHost::start(opened.harness, wiring, h.front.clone(), options)
}

/// Polls `closing` once: the close has begun (the host is marked closed
/// and told to stop) and its task has not run yet.
async fn begin(closing: std::pin::Pin<&mut impl std::future::Future<Output = ()>>) {
    tokio::select! {
        biased;
        () = closing => {}
        () = std::future::ready(()) => {}
    }
}

const ONE_TURN: &str = "turns:\n  - expect: {user: hello}\n    reply: {text: Hi.}\n";

#[tokio::test]
async fn an_operation_racing_close_is_refused_and_every_operation_after_it_answers_closed() {
    let h = hosted(ONE_TURN, "").await;
    let closing = h.host.close();
    tokio::pin!(closing);
    begin(closing.as_mut()).await;
    // Asked while the close is under way: refused, not queued behind it
    // and dropped.
    let raced = h
        .host
        .submit(Some("hello".into()), TurnOptions::default())
        .await;
    assert!(matches!(raced, Err(HostError::Closed)), "{raced:?}");
    closing.await;
    // Closed, deterministically, for every operation.
    let submitted = h
        .host
        .submit(Some("hello".into()), TurnOptions::default())
        .await;
    assert!(matches!(submitted, Err(HostError::Closed)), "{submitted:?}");
    let with = h
        .host
        .with(|_: &mut Harness| Box::pin(async {}) as BoxFuture<'_, ()>)
        .await;
    assert!(matches!(with, Err(HostError::Closed)), "{with:?}");
    let exclusive = h
        .host
        .exclusive(|_: &mut Harness| Box::pin(async {}) as BoxFuture<'_, ()>)
        .await;
    assert!(matches!(exclusive, Err(HostError::Closed)), "{exclusive:?}");
    let decided = h
        .host
        .decide("call-1", Decided::by_user(ApprovalDecision::Approved))
        .unwrap_err();
    assert_eq!(decided.code(), "session/stopped");
    assert!(!h.host.is_busy());
    // Closing again returns at once.
    h.host.close().await;
}

#[tokio::test]
async fn closing_a_leased_host_leaves_its_lease_free_even_when_a_submit_races_it() {
    let h = hosted(ONE_TURN, "").await;
    h.host.close().await;
    let host = host_another(
        &h,
        ONE_TURN,
        Arc::new(Events::default()),
        HostOptions {
            holder: Some(evoflux_harness::Holder::named("this host")),
            sources: None,
        },
    )
    .await;
    let ran = host
        .submit(Some("hello".into()), TurnOptions::default())
        .await
        .unwrap()
        .ended()
        .await
        .unwrap();
    assert!(matches!(ran, TurnEnd::Completed(ref o) if o.text == "Hi."));
    let store = host
        .with(|harness: &mut Harness| {
            let store = harness.store().clone();
            Box::pin(async move { store }) as BoxFuture<'_, _>
        })
        .await
        .unwrap();
    let closing = host.close();
    tokio::pin!(closing);
    begin(closing.as_mut()).await;
    let raced = host.submit(None, TurnOptions::default()).await;
    assert!(matches!(raced, Err(HostError::Closed)), "{raced:?}");
    closing.await;
    // Another process takes the session at once: nothing holds its lease.
    let other = evoflux_harness::Holder::named("another process");
    let lease = evoflux_harness::SessionLease::acquire(&store, host.id(), &other)
        .await
        .unwrap();
    lease.release().await.unwrap();
}

/// A client that decides every approval the moment it hears of it, from
/// inside the event; keeps what each decision answered.
#[derive(Debug, Default)]
struct DecidesAtOnce {
    host: std::sync::OnceLock<SessionHost>,
    answers: Mutex<Vec<Result<(), String>>>,
    events: Events,
}

impl EventSink for DecidesAtOnce {
    fn emit(&self, event: &Event) {
        if let Event::ApprovalRequested { call_id, .. } = event {
            let host = self.host.get().expect("the session is hosted");
            let answer = host
                .decide(call_id, Decided::by_user(ApprovalDecision::Approved))
                .map_err(|e| e.code().to_owned());
            self.answers.lock().unwrap().push(answer);
        }
        self.events.emit(event);
    }
}

#[tokio::test]
async fn a_client_that_decides_on_approval_requested_always_finds_the_approval_waiting() {
    let yaml = r#"
turns:
  - expect: {user: build it}
    reply:
      tool_calls:
        - {name: shell, arguments: {command: "mkdir -p made && echo built"}}
  - expect: {tool_result: {contains: built}}
    reply: {text: Built.}
  - expect: {user: again}
    reply:
      tool_calls:
        - {name: shell, arguments: {command: "mkdir -p more && echo again"}}
  - expect: {tool_result: {contains: again}}
    reply: {text: Again.}
"#;
    let h = hosted(yaml, ASKS_FOR_SHELL).await;
    h.host.close().await;
    let client = Arc::new(DecidesAtOnce::default());
    let host = host_another(&h, yaml, client.clone(), HostOptions::default()).await;
    client.host.set(host.clone()).unwrap();
    for (text, answer) in [("build it", "Built."), ("again", "Again.")] {
        let turn = host
            .submit(Some(text.into()), TurnOptions::default())
            .await
            .unwrap();
        client.events.wait(EventKind::ApprovalRequested).await;
        // Decided from inside the event: the approval was already waiting.
        assert!(
            client.answers.lock().unwrap().iter().all(Result::is_ok),
            "{:?}",
            client.answers.lock().unwrap()
        );
        let ended = turn.ended().await.unwrap();
        assert!(
            matches!(ended, TurnEnd::Completed(ref o) if o.text == answer),
            "{ended:?}"
        );
    }
    assert_eq!(*client.answers.lock().unwrap(), [Ok(()), Ok(())]);
    let decided = client
        .events
        .all()
        .into_iter()
        .filter(|e| {
            matches!(
                e,
                Event::ApprovalDecided {
                    decision: DecisionKind::Approved,
                    by: DecidedBy::User,
                    ..
                }
            )
        })
        .count();
    assert_eq!(decided, 2);
    host.close().await;
}
