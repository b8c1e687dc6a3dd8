#![allow(clippy::unwrap_used, clippy::expect_used)]

//! One writer per session: the lease every front end takes before a turn
//! ([`evoflux_harness::lease`]), on its own and through the builder.

use std::sync::Arc;
use std::time::Duration;

use evoflux_app::testing::{app, script};
use evoflux_app::{
    AppContext, OpenedSession, ReopenBuilder, SessionBuilder, SessionError, SessionOptions,
    WireBuilder,
};
use evoflux_core::AppMode;
use evoflux_core::ids::SessionId;
use evoflux_harness::host::BoxFuture;
use evoflux_harness::{
    Harness, Holder, HostFrontEnd, HostOptions, HostWiring, LeaseError, Reopen, ReopenError,
    SessionHost, SessionLease, TurnOptions,
};
use evoflux_store::{LeaseClaim, LeaseProcess, NewSession, PidNamespace, Store, WorkspaceRequest};

/// A store in a temp folder, and a new session in it.
async fn store_with_session() -> (tempfile::TempDir, Store, SessionId) {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::open(tmp.path()).await.unwrap();
    let id = store
        .create_session(NewSession {
            workspace: WorkspaceRequest::Work,
            lead: None,
            model: None,
            parent: None,
            graph_hash: None,
        })
        .await
        .unwrap()
        .id;
    (tmp, store, id)
}

/// Leaves `holder`'s lease on `id` for `ttl`, as a process killed
/// mid-turn leaves it: never renewed nor released.
async fn left<'a>(store: &Store, id: SessionId, holder: impl Into<LeaseClaim<'a>>, ttl: Duration) {
    store
        .acquire_lease(id, holder, ttl)
        .await
        .unwrap()
        .expect("the session was free");
}

/// Expects `holder` to take `id`'s lease, and releases it.
async fn takes_and_releases(store: &Store, id: SessionId, holder: &Holder) {
    SessionLease::acquire(store, id, holder)
        .await
        .unwrap()
        .release()
        .await
        .unwrap();
}

#[tokio::test]
async fn a_second_holder_is_refused_with_the_first_named_until_it_releases() {
    let (_tmp, store, id) = store_with_session().await;
    let first = Holder::process("evoflux run");
    let lease = SessionLease::acquire(&store, id, &first).await.unwrap();
    let held = store.lease_holder(id).await.unwrap().unwrap();
    assert!(first.took(&held));
    assert_eq!(held.holder, lease.holder());
    assert_eq!(held.process.as_ref(), first.lease_process());
    assert_eq!(held.process.unwrap().pid, std::process::id());
    assert!(
        lease
            .holder()
            .contains(&format!("(pid {})", std::process::id()))
    );
    assert!(lease.holder().contains(" on host "));
    assert!(lease.holder().contains(" since "));

    let second = Holder::process("evoflux sessions resume");
    let refused = SessionLease::acquire(&store, id, &second)
        .await
        .unwrap_err();
    assert_eq!(refused.code(), "session/busy");
    match &refused {
        LeaseError::Busy {
            session, holder, ..
        } => {
            assert_eq!(*session, id);
            assert_eq!(holder, lease.holder());
        }
        LeaseError::Store(e) => panic!("{e}"),
    }
    let message = refused.to_string();
    assert!(
        message.starts_with(&format!("session {id} is busy: held by evoflux run (pid ")),
        "{message}"
    );

    let first_epoch = lease.epoch();
    lease.release().await.unwrap();
    let next = SessionLease::acquire(&store, id, &second).await.unwrap();
    assert_eq!(next.epoch(), first_epoch + 1);
    next.release().await.unwrap();
}

#[tokio::test]
async fn a_held_lease_is_renewed_past_its_time_to_live() {
    let (_tmp, store, id) = store_with_session().await;
    let holder = Holder::process("evoflux run").with_ttl(Duration::from_millis(300));
    let lease = SessionLease::acquire(&store, id, &holder).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let other = Holder::named("someone else");
    assert_eq!(
        SessionLease::acquire(&store, id, &other)
            .await
            .unwrap_err()
            .code(),
        "session/busy"
    );
    assert!(!lease.is_lost());
    lease.release().await.unwrap();
    takes_and_releases(&store, id, &other).await;
}

#[tokio::test]
async fn a_holder_that_died_blocks_the_session_only_for_its_time_to_live() {
    let (_tmp, store, id) = store_with_session().await;
    // A process killed mid-turn: its lease is never renewed nor released.
    left(
        &store,
        id,
        "evoflux run (pid 1) on host gone since 2026-01-01 00:00:00 UTC",
        Duration::from_millis(400),
    )
    .await;
    let holder = Holder::process("evoflux sessions resume");
    let refused = SessionLease::acquire(&store, id, &holder)
        .await
        .unwrap_err();
    assert!(
        refused
            .to_string()
            .contains("held by evoflux run (pid 1) on host gone")
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    takes_and_releases(&store, id, &holder).await;
}

/// A process id that no longer runs: a child of this process, waited for.
fn dead_pid() -> u32 {
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    let dead = gone.id();
    gone.wait().unwrap();
    dead
}

/// Leaves a lease held by `process` (named `name`) on `id`, as a process
/// killed mid-turn leaves it: never renewed nor released.
async fn left_by(store: &Store, id: SessionId, name: &str, process: &LeaseProcess) {
    let holder = format!("{name} since 2026-01-01 00:00:00 UTC");
    let claim = LeaseClaim {
        holder: &holder,
        name: Some(name),
        process: Some(process),
    };
    left(store, id, claim, Duration::from_secs(30)).await;
}

#[tokio::test]
async fn the_lease_of_a_process_that_died_where_this_one_sees_it_is_taken_at_once() {
    let (_tmp, store, id) = store_with_session().await;
    let this = Holder::process("evoflux run");
    let here = this.lease_process().unwrap().clone();
    assert!(
        here.namespace.is_some(),
        "this test runs where /proc tells the boot and PID namespace"
    );
    // Dead, in this boot and PID namespace: taken at once.
    let dead = LeaseProcess {
        pid: dead_pid(),
        ..here.clone()
    };
    left_by(&store, id, "evoflux run (pid ?) on host here", &dead).await;
    let lease = SessionLease::acquire(&store, id, &this).await.unwrap();
    assert!(this.took(&store.lease_holder(id).await.unwrap().unwrap()));
    lease.release().await.unwrap();

    // A live process of this namespace is waited for: this one.
    left_by(&store, id, "evoflux chat (pid ?) on host here", &here).await;
    let refused = SessionLease::acquire(&store, id, &this).await.unwrap_err();
    assert_eq!(refused.code(), "session/busy");
}

#[tokio::test]
async fn a_holder_of_another_pid_namespace_is_waited_for_whatever_its_host_says() {
    let (_tmp, store, id) = store_with_session().await;
    let this = Holder::process("evoflux run");
    let here = this.lease_process().unwrap().clone();
    let ours = here.namespace.clone().unwrap();
    let dead = dead_pid();
    // Another container with this host name: its pid is not one this
    // process can ask about, dead here or not.
    for elsewhere in [
        Some(PidNamespace {
            inode: ours.inode.wrapping_add(1),
            ..ours.clone()
        }),
        // This namespace's inode on another boot (another machine).
        Some(PidNamespace {
            boot_id: "00000000-0000-4000-8000-000000000000".to_owned(),
            ..ours.clone()
        }),
        // A holder that could not tell.
        None,
    ] {
        let process = LeaseProcess {
            pid: dead,
            host: here.host.clone(),
            namespace: elsewhere.clone(),
        };
        left_by(&store, id, "evoflux run (pid ?) on host here", &process).await;
        let refused = SessionLease::acquire(&store, id, &this).await.unwrap_err();
        assert_eq!(refused.code(), "session/busy", "{elsewhere:?}");
        // Free it for the next.
        let held = store.lease_holder(id).await.unwrap().unwrap();
        store.release_lease(id, &held.holder).await.unwrap();
    }
}

#[tokio::test]
async fn a_lease_stored_without_its_holder_waits_for_its_expiry() {
    let (_tmp, store, id) = store_with_session().await;
    let this = Holder::process("evoflux run");
    // As a lease taken before holders were stored as data: its text names
    // a process of this host that no longer runs, which is not read.
    let legacy = format!(
        "evoflux run (pid {}) on host {} since 2026-01-01 00:00:00 UTC",
        dead_pid(),
        this.lease_process().unwrap().host
    );
    left(&store, id, &legacy, Duration::from_millis(400)).await;
    let held = store.lease_holder(id).await.unwrap().unwrap();
    assert_eq!((&held.name, &held.process), (&None, &None));
    assert!(!this.took(&held));
    let refused = SessionLease::acquire(&store, id, &this).await.unwrap_err();
    assert!(refused.to_string().contains(&format!("held by {legacy}")));
    tokio::time::sleep(Duration::from_millis(500)).await;
    takes_and_releases(&store, id, &this).await;
}

#[tokio::test]
async fn a_lease_another_took_is_reported_lost() {
    let (_tmp, store, id) = store_with_session().await;
    let holder = Holder::process("evoflux chat").with_ttl(Duration::from_millis(300));
    let lease = SessionLease::acquire(&store, id, &holder).await.unwrap();
    // As if this process stalled past its lease and another took it.
    store.release_lease(id, lease.holder()).await.unwrap();
    left(&store, id, "the other", Duration::from_secs(30)).await;
    tokio::time::timeout(Duration::from_secs(5), lease.lost())
        .await
        .expect("the renewal saw the lease taken");
    assert!(lease.is_lost());
}

fn options(model: &str, resume: Option<SessionId>) -> SessionOptions {
    SessionOptions {
        mode: Some(AppMode::Work),
        model: Some(model.to_owned()),
        resume,
        ..SessionOptions::default()
    }
}

/// A new session of `app` on `model`, opened without a lease, as chat
/// and ACP open theirs.
async fn open_unleased(app: &AppContext, model: &str) -> Harness {
    SessionBuilder::new(app, options(model, None))
        .open()
        .await
        .unwrap()
        .harness
}

/// `id` resumed as `evoflux sessions resume` would, leasing it.
async fn resumed(app: &AppContext, model: &str, id: SessionId) -> OpenedSession {
    SessionBuilder::new(app, options(model, Some(id)))
        .lease(Holder::process("evoflux sessions resume"))
        .open()
        .await
        .unwrap()
}

/// An app in a temp folder, and a scripted model that answers two turns.
fn two_turns() -> (tempfile::TempDir, AppContext, String) {
    let tmp = tempfile::tempdir().unwrap();
    let app = app(tmp.path());
    let model = script(
        tmp.path(),
        "turns:\n  - reply: {text: one}\n  - reply: {text: two}\n",
    );
    (tmp, app, model)
}

#[tokio::test]
async fn the_builder_leases_the_session_it_opens_and_refuses_a_second() {
    let tmp = tempfile::tempdir().unwrap();
    let app = app(tmp.path());
    let model = script(tmp.path(), "turns:\n  - reply: {text: one}\n");
    let first = SessionBuilder::new(&app, options(&model, None))
        .lease(Holder::process("evoflux run"))
        .open()
        .await
        .unwrap();
    let id = first.harness.session().id;
    let lease = first.lease.expect("the new session is leased");
    assert_eq!(lease.session(), id);

    let refused = SessionBuilder::new(&app, options(&model, Some(id)))
        .lease(Holder::process("evoflux sessions resume"))
        .open()
        .await
        .unwrap_err();
    assert!(refused.is_busy(), "{refused}");
    assert_eq!(refused.code(), "session/busy");
    assert!(!refused.is_invalid_input());
    assert!(matches!(refused, SessionError::Lease(_)));

    first.harness.shutdown().await;
    lease.release().await.unwrap();
    let second = resumed(&app, &model, id).await;
    second.lease.unwrap().release().await.unwrap();
}

#[tokio::test]
async fn a_harness_another_process_ran_turns_past_is_told_it_is_stale() {
    let (_tmp, app, model) = two_turns();
    let holder = Holder::process("evoflux chat");
    let mut chat = open_unleased(&app, &model).await;
    let id = chat.session().id;
    let lease = chat.lease(&holder).await.unwrap();
    assert!(!lease.is_stale(), "its own first turn");
    chat.turn(Some("hello"), TurnOptions::default())
        .await
        .unwrap();
    lease.release().await.unwrap();
    let lease = chat.lease(&holder).await.unwrap();
    assert!(!lease.is_stale(), "nobody else ran it");
    lease.release().await.unwrap();

    // Another process runs a turn in between.
    let other = resumed(&app, &model, id).await;
    other.lease.unwrap().release().await.unwrap();
    other.harness.shutdown().await;

    let lease = chat.lease(&holder).await.unwrap();
    assert!(lease.is_stale());
    // Opened again under the lease, the session is current.
    let mut again = SessionBuilder::new(&app, options(&model, Some(id)))
        .held_lease(&lease)
        .open()
        .await
        .unwrap()
        .harness;
    lease.release().await.unwrap();
    let lease = again.lease(&holder).await.unwrap();
    assert!(!lease.is_stale());
    lease.release().await.unwrap();
}

/// How the test's host opens its session again: through the builder,
/// under the lease it is given, failing while `fail` is set.
#[derive(Debug)]
struct Front {
    app: AppContext,
    fail: std::sync::atomic::AtomicBool,
}

impl HostFrontEnd for Front {
    fn reopen<'a>(&'a self, reopen: Reopen<'a>) -> BoxFuture<'a, Result<Harness, ReopenError>> {
        Box::pin(async move {
            assert!(reopen.lease.is_some_and(SessionLease::is_stale));
            if self.fail.load(std::sync::atomic::Ordering::SeqCst) {
                // A model that does not exist: the session does not open.
                let options = SessionOptions {
                    resume: Some(reopen.session),
                    model: Some("nosuchprovider:nothing".to_owned()),
                    ..SessionOptions::default()
                };
                return Ok(reopen
                    .wiring
                    .wire(SessionBuilder::new(&self.app, options))
                    .open()
                    .await?
                    .harness);
            }
            Ok(reopen
                .builder(&self.app, Default::default())
                .open()
                .await?
                .harness)
        })
    }
}

#[tokio::test]
async fn a_hosted_session_another_process_ran_is_opened_again_under_its_turn_s_lease() {
    let tmp = tempfile::tempdir().unwrap();
    let app = app(tmp.path());
    let model = script(
        tmp.path(),
        "turns:\n  - reply: {text: one}\n  - reply: {text: two}\n  - reply: {text: three}\n",
    );
    let holder = Holder::process("evoflux chat");
    let wiring = HostWiring::new(Arc::new(evoflux_harness::NoEvents), None);
    let chat = wiring
        .wire(SessionBuilder::new(&app, options(&model, None)))
        .open()
        .await
        .unwrap()
        .harness;
    let id = chat.session().id;
    let front = Arc::new(Front {
        app: app.clone(),
        fail: std::sync::atomic::AtomicBool::new(false),
    });
    let host = SessionHost::start(
        chat,
        wiring,
        front.clone(),
        HostOptions {
            holder: Some(holder),
            sources: None,
        },
    );
    let turn = |text: &'static str| {
        let host = host.clone();
        async move {
            host.submit(Some(text.into()), TurnOptions::default())
                .await
                .unwrap()
                .ended()
                .await
        }
    };
    // Its own turns: current, nothing is opened again (the front asserts).
    turn("hello").await.unwrap();

    // Another process runs a turn in between.
    let other_model = script(tmp.path(), "turns:\n  - reply: {text: theirs}\n");
    let mut other = SessionBuilder::new(&app, options(&other_model, Some(id)))
        .lease(Holder::process("evoflux sessions resume"))
        .open()
        .await
        .unwrap();
    other
        .harness
        .turn(Some("again"), TurnOptions::default())
        .await
        .unwrap();
    other.lease.unwrap().release().await.unwrap();
    other.harness.shutdown().await;
    let count = |host: &SessionHost| {
        let host = host.clone();
        async move {
            host.with(|h: &mut Harness| {
                let n = h.messages().len();
                Box::pin(async move { n }) as BoxFuture<'_, usize>
            })
            .await
            .unwrap()
        }
    };
    let seen = count(&host).await;

    // It cannot be opened again: nothing runs, the lease is released and
    // the harness stays as it was.
    front.fail.store(true, std::sync::atomic::Ordering::SeqCst);
    let failed = turn("mine").await.unwrap_err();
    assert_eq!(failed.code(), "session/reopen-failed", "{failed:?}");
    assert!(
        !store(&app)
            .await
            .lease_holder(id)
            .await
            .unwrap()
            .unwrap()
            .running,
        "the lease was released"
    );
    assert_eq!(count(&host).await, seen);

    // Opened again under the next turn's lease, it answers on the other's
    // turn too.
    front.fail.store(false, std::sync::atomic::Ordering::SeqCst);
    turn("mine").await.unwrap();
    assert!(count(&host).await > seen + 1, "the other's turn is in it");
    host.close().await;
}

async fn store(app: &AppContext) -> Store {
    app.open_store().await.unwrap()
}
