#![allow(clippy::unwrap_used, clippy::expect_used)]

//! One writer per session: the lease every front end takes before a turn
//! ([`evoflux_harness::lease`]), on its own and through the builder.

use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

use evoflux_core::AppMode;
use evoflux_core::dirs::Dirs;
use evoflux_harness::{
    AppContext, Holder, LeaseError, SessionBuilder, SessionError, SessionLease, SessionOptions,
    TurnOptions,
};
use evoflux_store::{NewSession, Store, WorkspaceRequest};

async fn session(store: &Store) -> evoflux_core::ids::SessionId {
    store
        .create_session(NewSession {
            workspace: WorkspaceRequest::Work,
            lead: None,
            model: None,
            parent: None,
            graph_hash: None,
        })
        .await
        .unwrap()
        .id
}

#[tokio::test]
async fn a_second_holder_is_refused_with_the_first_named_until_it_releases() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::open(tmp.path()).await.unwrap();
    let id = session(&store).await;
    let first = Holder::process("evoflux run");
    let lease = SessionLease::acquire(&store, id, &first).await.unwrap();
    assert!(first.took(lease.holder()));
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
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::open(tmp.path()).await.unwrap();
    let id = session(&store).await;
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
    SessionLease::acquire(&store, id, &other)
        .await
        .unwrap()
        .release()
        .await
        .unwrap();
}

#[tokio::test]
async fn a_holder_that_died_blocks_the_session_only_for_its_time_to_live() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::open(tmp.path()).await.unwrap();
    let id = session(&store).await;
    // A process killed mid-turn: its lease is never renewed nor released.
    store
        .acquire_lease(
            id,
            "evoflux run (pid 1) on host gone since 2026-01-01 00:00:00 UTC",
            Duration::from_millis(400),
        )
        .await
        .unwrap()
        .unwrap();
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
    let lease = SessionLease::acquire(&store, id, &holder).await.unwrap();
    lease.release().await.unwrap();
}

#[tokio::test]
async fn the_lease_of_a_process_of_this_host_that_died_is_taken_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::open(tmp.path()).await.unwrap();
    let id = session(&store).await;
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    let dead = gone.id();
    gone.wait().unwrap();
    // This host, as this process's holder names it.
    let this = Holder::process("evoflux run");
    let host = this.name().rsplit_once(" on host ").unwrap().1.to_owned();
    let stored = format!("evoflux run (pid {dead}) on host {host} since 2026-01-01 00:00:00 UTC");
    store
        .acquire_lease(id, &stored, Duration::from_secs(30))
        .await
        .unwrap()
        .unwrap();
    let lease = SessionLease::acquire(&store, id, &this).await.unwrap();
    assert!(this.took(lease.holder()));
    lease.release().await.unwrap();

    // A live process of this host is waited for: this one.
    let alive = format!(
        "evoflux chat (pid {}) on host {host} since 2026-01-01 00:00:00 UTC",
        std::process::id()
    );
    store
        .acquire_lease(id, &alive, Duration::from_secs(30))
        .await
        .unwrap()
        .unwrap();
    let refused = SessionLease::acquire(&store, id, &this).await.unwrap_err();
    assert_eq!(refused.code(), "session/busy");
}

#[tokio::test]
async fn a_lease_another_took_is_reported_lost() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::open(tmp.path()).await.unwrap();
    let id = session(&store).await;
    let holder = Holder::process("evoflux chat").with_ttl(Duration::from_millis(300));
    let lease = SessionLease::acquire(&store, id, &holder).await.unwrap();
    // As if this process stalled past its lease and another took it.
    store.release_lease(id, lease.holder()).await.unwrap();
    store
        .acquire_lease(id, "the other", Duration::from_secs(30))
        .await
        .unwrap()
        .unwrap();
    tokio::time::timeout(Duration::from_secs(5), lease.lost())
        .await
        .expect("the renewal saw the lease taken");
    assert!(lease.is_lost());
}

fn app(tmp: &Path) -> AppContext {
    let home = tmp.join("home");
    let admin = tmp.join("admin");
    std::fs::create_dir_all(&home).unwrap();
    let cwd = tmp.join("repo");
    std::fs::create_dir_all(&cwd).unwrap();
    let dirs = Dirs::resolve(|name| match name {
        "HOME" => Some(OsString::from(&home)),
        "EVOFLUX_ADMIN_DIR" => Some(OsString::from(&admin)),
        _ => None,
    })
    .unwrap();
    AppContext {
        dirs,
        home: Some(home),
        cwd,
        trusted_checkouts: Vec::new(),
        remote_agents: None,
        database_url: None,
        artifacts_url: None,
    }
}

fn script(tmp: &Path, yaml: &str) -> String {
    let path = tmp.join("script.yaml");
    std::fs::write(&path, yaml).unwrap();
    format!("scripted:{}", path.display())
}

fn options(model: &str, resume: Option<evoflux_core::ids::SessionId>) -> SessionOptions {
    SessionOptions {
        mode: Some(AppMode::Work),
        model: Some(model.to_owned()),
        resume,
        ..SessionOptions::default()
    }
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
    let second = SessionBuilder::new(&app, options(&model, Some(id)))
        .lease(Holder::process("evoflux sessions resume"))
        .open()
        .await
        .unwrap();
    second.lease.unwrap().release().await.unwrap();
}

#[tokio::test]
async fn a_harness_another_process_ran_turns_past_is_told_it_is_stale() {
    let tmp = tempfile::tempdir().unwrap();
    let app = app(tmp.path());
    let model = script(
        tmp.path(),
        "turns:\n  - reply: {text: one}\n  - reply: {text: two}\n",
    );
    let holder = Holder::process("evoflux chat");
    let mut chat = SessionBuilder::new(&app, options(&model, None))
        .open()
        .await
        .unwrap()
        .harness;
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
    let other = SessionBuilder::new(&app, options(&model, Some(id)))
        .lease(Holder::process("evoflux sessions resume"))
        .open()
        .await
        .unwrap();
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
