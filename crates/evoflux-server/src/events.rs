//! A session's event stream, shared by every replica on one database.
//!
//! Events are written to the store ([`EventLog`]: a writer task per live
//! session batches what the harness emits into one transaction, which
//! numbers them) and read back from it by every follower ([`follow`]):
//! the SSE stream of any replica, and a channel waiting for its turn's end.
//! So a client may connect to any replica, and `Last-Event-ID` replays
//! across replicas and restarts. Followers sleep until [`EventBus`] wakes
//! them: this replica's writers wake it, and on PostgreSQL so does every
//! other replica's commit (`LISTEN`); a slow poll covers what neither
//! announces (another process on one SQLite file).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use evoflux_core::ids::SessionId;
use evoflux_harness::{Boundary, Event};
use evoflux_store::{Artifacts, Store, StoredEvent};
use futures_util::Stream;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot, watch};

/// The type of the last event of a deleted session's stream.
pub const SESSION_STOPPED: &str = "session_stopped";

/// How long a follower sleeps without a wakeup before it looks anyway.
const POLL: Duration = Duration::from_millis(500);

/// Events one write takes at most.
const BATCH: usize = 512;

/// Events one read takes at most.
const PAGE: u32 = 512;

/// Which sessions have new events, or new signals for the turn this
/// replica runs, per replica.
#[derive(Debug, Default)]
pub struct EventBus {
    sessions: Mutex<HashMap<SessionId, watch::Sender<()>>>,
    signals: Mutex<HashMap<SessionId, watch::Sender<()>>>,
}

impl EventBus {
    /// Wakes `session`'s followers.
    pub fn wake(&self, session: SessionId) {
        notify(&self.sessions, session);
    }

    /// Wakes every follower and signal watcher (a lost `LISTEN`
    /// connection may have missed announcements).
    pub fn wake_all(&self) {
        for map in [&self.sessions, &self.signals] {
            let map = map.lock().unwrap_or_else(|p| p.into_inner());
            for tx in map.values() {
                tx.send_replace(());
            }
        }
    }

    /// Wakes the watcher of `session`'s signals.
    pub fn wake_signals(&self, session: SessionId) {
        notify(&self.signals, session);
    }

    fn watch(&self, session: SessionId) -> watch::Receiver<()> {
        subscribe(&self.sessions, session)
    }

    /// What wakes the turn running `session` when a signal comes for it.
    pub fn watch_signals(&self, session: SessionId) -> watch::Receiver<()> {
        subscribe(&self.signals, session)
    }
}

fn notify(map: &Mutex<HashMap<SessionId, watch::Sender<()>>>, session: SessionId) {
    let map = map.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(tx) = map.get(&session) {
        tx.send_replace(());
    }
}

fn subscribe(
    map: &Mutex<HashMap<SessionId, watch::Sender<()>>>,
    session: SessionId,
) -> watch::Receiver<()> {
    let mut map = map.lock().unwrap_or_else(|p| p.into_inner());
    map.retain(|_, tx| tx.receiver_count() > 0);
    map.entry(session)
        .or_insert_with(|| watch::channel(()).0)
        .subscribe()
}

/// Wakes this replica's followers of the sessions other replicas write
/// to, for as long as the server runs (PostgreSQL only).
pub async fn listen(store: Store, bus: Arc<EventBus>) {
    let mut notifications = match store.event_notifications().await {
        Ok(Some(n)) => n,
        Ok(None) => return,
        Err(e) => {
            tracing::warn!(error = %e, "cannot listen for other replicas' events; streams poll");
            return;
        }
    };
    loop {
        match notifications.next().await {
            Ok(Some(evoflux_store::Announcement::Events(session))) => bus.wake(session),
            Ok(Some(evoflux_store::Announcement::Signals(session))) => bus.wake_signals(session),
            Ok(None) => bus.wake_all(),
            Err(e) => {
                tracing::warn!(error = %e, "lost the event announcements; streams poll");
                bus.wake_all();
                tokio::time::sleep(POLL).await;
            }
        }
    }
}

/// One event on its way to the store.
struct Queued {
    kind: String,
    data: String,
    boundary: Boundary,
}

enum Write {
    Event(Queued),
    Flush(oneshot::Sender<()>),
    /// The turn has ended and released the session: what was held back
    /// may be stored.
    Release,
}

/// Where a live session's harness sends its events: to the store, in
/// order, through one writer task. Events queue until the log is bound to
/// its session ([`EventLog::bind`]): a new session's id is known only once
/// the harness has opened it.
#[derive(Debug)]
pub struct EventLog {
    tx: mpsc::UnboundedSender<Write>,
    rx: Mutex<Option<mpsc::UnboundedReceiver<Write>>>,
}

impl std::fmt::Debug for Write {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Write::Event(e) => write!(f, "Event({})", e.kind),
            Write::Flush(_) => f.write_str("Flush"),
            Write::Release => f.write_str("Release"),
        }
    }
}

impl EventLog {
    pub fn new() -> Arc<EventLog> {
        let (tx, rx) = mpsc::unbounded_channel();
        Arc::new(EventLog {
            tx,
            rx: Mutex::new(Some(rx)),
        })
    }

    /// Starts writing the events to `session`'s stream (once; later calls
    /// do nothing). With `artifacts`, the session's folder is copied to
    /// the object store before an event that may name what is in it is
    /// stored, so no replica sees a locator before the file.
    pub fn bind(
        &self,
        session: SessionId,
        store: Store,
        bus: Arc<EventBus>,
        artifacts: Option<(Artifacts, PathBuf)>,
    ) {
        let rx = self.rx.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(rx) = rx {
            tokio::spawn(write(session, store, bus, artifacts, rx));
        }
    }

    /// Queues one of the harness's events.
    pub fn push_event(&self, event: &Event) {
        match serde_json::to_value(event) {
            Ok(value) => self.queue(&value, event.boundary()),
            Err(e) => tracing::warn!("an event did not serialize: {e}"),
        }
    }

    /// Queues one of the server's own notices (a JSON object with a
    /// `type`: the sources were reloaded, a graph is invalid): within a
    /// turn, if one runs.
    pub fn push(&self, value: &Value) {
        self.queue(value, Boundary::Within);
    }

    fn queue(&self, value: &Value, boundary: Boundary) {
        let kind = value
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("event")
            .to_owned();
        let _ = self.tx.send(Write::Event(Queued {
            kind,
            data: value.to_string(),
            boundary,
        }));
    }

    /// Lets the events held back since the turn's last event be stored:
    /// the session is free for the next turn now, so a client that reads
    /// `turn_completed` may send its next message at once.
    pub fn release(&self) {
        let _ = self.tx.send(Write::Release);
    }

    /// Waits until every event queued so far is stored (but those held
    /// back for [`EventLog::release`]).
    pub async fn flush(&self) {
        let (tx, rx) = oneshot::channel();
        if self.tx.send(Write::Flush(tx)).is_ok() {
            let _ = rx.await;
        }
    }
}

async fn write(
    session: SessionId,
    store: Store,
    bus: Arc<EventBus>,
    artifacts: Option<(Artifacts, PathBuf)>,
    mut rx: mpsc::UnboundedReceiver<Write>,
) {
    let mut events: Vec<Queued> = Vec::new();
    // An event that ends the turn, and whatever follows it, wait for the
    // turn to release the session ([`EventLog::release`]).
    let mut held: Vec<Queued> = Vec::new();
    let mut holding = false;
    let mut flushed = Vec::new();
    while let Some(first) = rx.recv().await {
        let mut next = Some(first);
        while let Some(w) = next.take() {
            match w {
                Write::Event(e) => {
                    holding = holding || e.boundary == Boundary::End;
                    match holding {
                        true => held.push(e),
                        false => events.push(e),
                    }
                }
                Write::Flush(done) => flushed.push(done),
                Write::Release => {
                    events.append(&mut held);
                    holding = false;
                }
            }
            if events.len() < BATCH {
                next = rx.try_recv().ok();
            }
        }
        if let Some((artifacts, folder)) = &artifacts
            && events.iter().any(|e| e.boundary != Boundary::Within)
            && let Err(e) = artifacts.upload_session(session, folder).await
        {
            tracing::warn!(%session, error = %e, "cannot copy artifacts to the object store");
        }
        if !events.is_empty() {
            let batch: Vec<(&str, &str)> = events
                .iter()
                .map(|e| (e.kind.as_str(), e.data.as_str()))
                .collect();
            match store.append_events(session, &batch).await {
                Ok(_) => bus.wake(session),
                // A deleted session's last events have nowhere to go.
                Err(e) => tracing::debug!(%session, error = %e, "events not stored"),
            }
            events.clear();
        }
        for done in flushed.drain(..) {
            let _ = done.send(());
        }
    }
}

/// `session`'s events after `after`, then each as it is stored, from
/// whichever replica writes it. When the session is deleted the stream
/// says so with a last `session_stopped` event and ends.
pub fn follow(
    store: Store,
    bus: Arc<EventBus>,
    session: SessionId,
    after: u64,
) -> impl Stream<Item = StoredEvent> + Send + 'static {
    struct State {
        store: Store,
        wake: watch::Receiver<()>,
        session: SessionId,
        cursor: u64,
        pending: std::collections::VecDeque<StoredEvent>,
        /// The last read found everything there was: wait before the next.
        caught_up: bool,
        /// Quiet waits since events last came.
        quiet: u32,
        ended: bool,
    }
    let state = State {
        wake: bus.watch(session),
        store,
        session,
        cursor: after,
        pending: std::collections::VecDeque::new(),
        caught_up: false,
        quiet: 0,
        ended: false,
    };
    futures_util::stream::unfold(state, |mut s| async move {
        loop {
            if let Some(e) = s.pending.pop_front() {
                return Some((e, s));
            }
            if s.ended {
                return None;
            }
            let mut woken = false;
            if s.caught_up {
                match tokio::time::timeout(POLL, s.wake.changed()).await {
                    Ok(Ok(())) => woken = true,
                    // The replica is shutting down.
                    Ok(Err(_)) => return None,
                    Err(_) => s.quiet += 1,
                }
            }
            // Marked seen before reading, so a wakeup during the read is
            // not lost.
            s.wake.borrow_and_update();
            match s.store.events_after(s.session, s.cursor, PAGE).await {
                Ok(batch) if !batch.is_empty() => {
                    s.caught_up = batch.len() < PAGE as usize;
                    s.quiet = 0;
                    s.cursor = batch.last().map_or(s.cursor, |e| e.id);
                    s.pending.extend(batch);
                }
                Ok(_) => {
                    s.caught_up = true;
                    // A delete wakes the followers and leaves nothing to
                    // read; a quiet stream checks now and then too.
                    let check = woken || s.quiet % 10 == 0;
                    if check && matches!(s.store.session(s.session).await, Ok(None)) {
                        s.ended = true;
                        s.pending.push_back(stopped(s.session, s.cursor + 1));
                    }
                }
                Err(e) => {
                    s.caught_up = true;
                    tracing::debug!(session = %s.session, error = %e, "cannot read events");
                }
            }
        }
    })
}

fn stopped(session: SessionId, id: u64) -> StoredEvent {
    StoredEvent {
        id,
        kind: SESSION_STOPPED.to_owned(),
        data: serde_json::json!({
            "type": SESSION_STOPPED,
            "session_id": session.to_string(),
        })
        .to_string(),
    }
}
