//! A session's event stream, shared by every replica on one database.
//!
//! Events are written to the store ([`EventLog`] per live session, one
//! [`EventWriter`] per replica, which stores what all its sessions emitted
//! at once in one transaction that numbers them) and followed by every
//! reader ([`follow`]): the SSE stream of any replica, and a channel
//! waiting for its turn's end. What this replica stored reaches its own
//! followers from memory; the store is read to replay (`Last-Event-ID`,
//! across replicas and restarts) and to follow another replica's writes.
//! Followers sleep until [`EventBus`] wakes them: this replica's writer
//! wakes it, and on PostgreSQL so does every other replica's commit
//! (`LISTEN`); a slow poll covers what neither announces (another process
//! on one SQLite file).

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

/// The last batch of a session's events this replica stored, as its
/// followers take it from memory; `None` when something new is in the
/// store that this replica did not write (another replica's events, a
/// deletion), which they read from there.
type Latest = Option<Arc<Vec<StoredEvent>>>;

/// Which sessions have new events, or new signals for the turn this
/// replica runs, per replica.
#[derive(Debug, Default)]
pub struct EventBus {
    sessions: Mutex<HashMap<SessionId, watch::Sender<Latest>>>,
    signals: Mutex<HashMap<SessionId, watch::Sender<()>>>,
}

impl EventBus {
    /// Wakes `session`'s followers to read the store.
    pub fn wake(&self, session: SessionId) {
        notify(&self.sessions, session, None);
    }

    /// Hands `events`, just stored by this replica, to `session`'s
    /// followers.
    pub fn publish(&self, session: SessionId, events: Arc<Vec<StoredEvent>>) {
        notify(&self.sessions, session, Some(events));
    }

    /// Wakes every follower and signal watcher (a lost `LISTEN`
    /// connection may have missed announcements).
    pub fn wake_all(&self) {
        for tx in self
            .sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .values()
        {
            tx.send_replace(None);
        }
        for tx in self
            .signals
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .values()
        {
            tx.send_replace(());
        }
    }

    /// Wakes the watcher of `session`'s signals.
    pub fn wake_signals(&self, session: SessionId) {
        notify(&self.signals, session, ());
    }

    fn watch(&self, session: SessionId) -> watch::Receiver<Latest> {
        subscribe(&self.sessions, session)
    }

    /// What wakes the turn running `session` when a signal comes for it.
    pub fn watch_signals(&self, session: SessionId) -> watch::Receiver<()> {
        subscribe(&self.signals, session)
    }
}

fn notify<T>(map: &Mutex<HashMap<SessionId, watch::Sender<T>>>, session: SessionId, value: T) {
    let map = map.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(tx) = map.get(&session) {
        tx.send_replace(value);
    }
}

fn subscribe<T: Default>(
    map: &Mutex<HashMap<SessionId, watch::Sender<T>>>,
    session: SessionId,
) -> watch::Receiver<T> {
    let mut map = map.lock().unwrap_or_else(|p| p.into_inner());
    map.retain(|_, tx| tx.receiver_count() > 0);
    map.entry(session)
        .or_insert_with(|| watch::channel(T::default()).0)
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
    kind: &'static str,
    data: String,
    boundary: Boundary,
}

enum Write {
    Event(Queued),
    Flush(oneshot::Sender<()>),
    /// The turn has ended and released the session: what was held back
    /// may be stored.
    Release,
    /// The session's log is bound: where its artifacts are copied.
    Bind(Option<(Artifacts, PathBuf)>),
    /// The session is no longer live here.
    Close,
}

impl std::fmt::Debug for Write {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Write::Event(e) => write!(f, "Event({})", e.kind),
            Write::Flush(_) => f.write_str("Flush"),
            Write::Release => f.write_str("Release"),
            Write::Bind(_) => f.write_str("Bind"),
            Write::Close => f.write_str("Close"),
        }
    }
}

/// The replica's one writer of session events: every live session's
/// events go through it, and what several sessions emitted at once is
/// stored in one transaction ([`Store::append_event_batches`]) — one
/// commit for many sessions rather than one each. After each commit the
/// stored events are handed to this replica's followers from memory
/// ([`EventBus`]), so a stream reads the store only to replay or to follow
/// another replica.
#[derive(Debug, Clone)]
pub struct EventWriter {
    tx: mpsc::UnboundedSender<(SessionId, Write)>,
}

impl EventWriter {
    /// Starts the writer; it runs until every [`EventWriter`] and bound
    /// [`EventLog`] is gone.
    pub fn start(store: Store, bus: Arc<EventBus>) -> EventWriter {
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(write(store, bus, rx));
        EventWriter { tx }
    }
}

/// Where a live session's harness sends its events: to the replica's
/// [`EventWriter`], in order. Events queue here until the log is bound to
/// its session ([`EventLog::bind`]): a new session's id is known only once
/// the harness has opened it.
#[derive(Debug)]
pub struct EventLog {
    state: Mutex<LogState>,
}

#[derive(Debug)]
enum LogState {
    Unbound(Vec<Write>),
    Bound {
        session: SessionId,
        writer: EventWriter,
    },
}

impl EventLog {
    pub fn new() -> Arc<EventLog> {
        Arc::new(EventLog {
            state: Mutex::new(LogState::Unbound(Vec::new())),
        })
    }

    /// Starts writing the events to `session`'s stream through `writer`
    /// (once; later calls do nothing). With `artifacts`, the session's
    /// folder is copied to the object store before an event that may name
    /// what is in it is stored, so no replica sees a locator before the
    /// file.
    pub fn bind(
        &self,
        session: SessionId,
        writer: &EventWriter,
        artifacts: Option<(Artifacts, PathBuf)>,
    ) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let LogState::Unbound(queued) = &mut *state else {
            return;
        };
        let queued = std::mem::take(queued);
        let _ = writer.tx.send((session, Write::Bind(artifacts)));
        for w in queued {
            let _ = writer.tx.send((session, w));
        }
        *state = LogState::Bound {
            session,
            writer: writer.clone(),
        };
    }

    fn send(&self, w: Write) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        match &mut *state {
            LogState::Unbound(queued) => queued.push(w),
            LogState::Bound { session, writer } => {
                let _ = writer.tx.send((*session, w));
            }
        }
    }

    /// Queues one of the harness's events.
    pub fn push_event(&self, event: &Event) {
        match serde_json::to_string(event) {
            Ok(data) => self.send(Write::Event(Queued {
                kind: event.kind().as_str(),
                data,
                boundary: event.boundary(),
            })),
            Err(e) => tracing::warn!("an event did not serialize: {e}"),
        }
    }

    /// Queues one of the server's own notices (`type` is `kind`): within a
    /// turn, if one runs.
    pub fn push_notice(&self, kind: &'static str, value: &Value) {
        self.send(Write::Event(Queued {
            kind,
            data: value.to_string(),
            boundary: Boundary::Within,
        }));
    }

    /// Lets the events held back since the turn's last event be stored:
    /// the session is free for the next turn now, so a client that reads
    /// `turn_completed` may send its next message at once.
    pub fn release(&self) {
        self.send(Write::Release);
    }

    /// Waits until every event queued so far is stored (but those held
    /// back for [`EventLog::release`]).
    pub async fn flush(&self) {
        let (tx, rx) = oneshot::channel();
        self.send(Write::Flush(tx));
        let _ = rx.await;
    }
}

impl Drop for EventLog {
    /// The writer forgets the session once what it queued is written.
    fn drop(&mut self) {
        let state = self.state.get_mut().unwrap_or_else(|p| p.into_inner());
        if let LogState::Bound { session, writer } = state {
            let _ = writer.tx.send((*session, Write::Close));
        }
    }
}

/// What the writer keeps per session.
#[derive(Default)]
struct Pending {
    artifacts: Option<(Artifacts, PathBuf)>,
    /// Events to store in the next transaction.
    ready: Vec<Queued>,
    /// An event that ends the turn, and whatever follows it, wait for the
    /// turn to release the session ([`EventLog::release`]).
    held: Vec<Queued>,
    holding: bool,
    flushed: Vec<oneshot::Sender<()>>,
    closed: bool,
}

async fn write(
    store: Store,
    bus: Arc<EventBus>,
    mut rx: mpsc::UnboundedReceiver<(SessionId, Write)>,
) {
    let mut sessions: HashMap<SessionId, Pending> = HashMap::new();
    while let Some(first) = rx.recv().await {
        let mut next = Some(first);
        let mut queued = 0usize;
        while let Some((session, w)) = next.take() {
            let p = sessions.entry(session).or_default();
            match w {
                Write::Event(e) => {
                    p.holding = p.holding || e.boundary == Boundary::End;
                    match p.holding {
                        true => p.held.push(e),
                        false => {
                            p.ready.push(e);
                            queued += 1;
                        }
                    }
                }
                Write::Flush(done) => p.flushed.push(done),
                Write::Release => {
                    queued += p.held.len();
                    p.ready.append(&mut p.held);
                    p.holding = false;
                }
                Write::Bind(artifacts) => p.artifacts = artifacts,
                Write::Close => p.closed = true,
            }
            if queued < BATCH {
                next = rx.try_recv().ok();
            }
        }
        store_ready(&store, &bus, &mut sessions).await;
        for p in sessions.values_mut() {
            for done in p.flushed.drain(..) {
                let _ = done.send(());
            }
        }
        sessions.retain(|_, p| !(p.closed && p.held.is_empty()));
    }
}

/// Stores every session's ready events in one transaction (one per
/// session if that fails: a deleted session's last events have nowhere to
/// go, and must not take the others with them), then hands them to this
/// replica's followers.
async fn store_ready(store: &Store, bus: &EventBus, sessions: &mut HashMap<SessionId, Pending>) {
    let mut writing: Vec<(SessionId, Vec<Queued>)> = Vec::new();
    for (session, p) in sessions.iter_mut() {
        if p.ready.is_empty() {
            continue;
        }
        if let Some((artifacts, folder)) = &p.artifacts
            && p.ready.iter().any(|e| e.boundary != Boundary::Within)
            && let Err(e) = artifacts.upload_session(*session, folder).await
        {
            tracing::warn!(%session, error = %e, "cannot copy artifacts to the object store");
        }
        writing.push((*session, std::mem::take(&mut p.ready)));
    }
    if writing.is_empty() {
        return;
    }
    let rows: Vec<Vec<(&str, &str)>> = writing
        .iter()
        .map(|(_, events)| events.iter().map(|e| (e.kind, e.data.as_str())).collect())
        .collect();
    let batches: Vec<(SessionId, &[(&str, &str)])> = writing
        .iter()
        .zip(&rows)
        .map(|((session, _), rows)| (*session, rows.as_slice()))
        .collect();
    let stored: Vec<Option<u64>> = match store.append_event_batches(&batches).await {
        Ok(last) => last.into_iter().map(Some).collect(),
        Err(_) => {
            let mut one_by_one = Vec::with_capacity(batches.len());
            for (session, rows) in &batches {
                match store.append_events(*session, rows).await {
                    Ok(last) => one_by_one.push(Some(last)),
                    Err(e) => {
                        tracing::debug!(%session, error = %e, "events not stored");
                        one_by_one.push(None);
                    }
                }
            }
            one_by_one
        }
    };
    for ((session, events), last) in writing.into_iter().zip(stored) {
        let Some(last) = last else { continue };
        let first = last + 1 - events.len() as u64;
        let published: Vec<StoredEvent> = events
            .into_iter()
            .zip(first..)
            .map(|(e, id)| StoredEvent {
                id,
                kind: e.kind.to_owned(),
                data: e.data,
            })
            .collect();
        bus.publish(session, Arc::new(published));
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
        wake: watch::Receiver<Latest>,
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
            let latest = s.wake.borrow_and_update().clone();
            // What this replica just stored comes from memory when it
            // follows on from the cursor; a gap (a batch missed, another
            // replica's events) is read from the store.
            if woken && let Some(batch) = latest {
                match (batch.first(), batch.last()) {
                    (Some(first), Some(last)) if first.id == s.cursor + 1 => {
                        s.cursor = last.id;
                        s.quiet = 0;
                        s.pending.extend(batch.iter().cloned());
                        continue;
                    }
                    (Some(_), Some(last)) if last.id <= s.cursor => continue,
                    _ => {}
                }
            }
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

#[cfg(test)]
mod tests {
    use std::pin::pin;

    use evoflux_store::{NewSession, WorkspaceRequest};
    use futures_util::StreamExt;
    use serde_json::json;

    use super::*;

    /// A store in a temp folder with one session, and one replica's bus and
    /// writer on it.
    struct Replica {
        _tmp: tempfile::TempDir,
        store: Store,
        bus: Arc<EventBus>,
        writer: EventWriter,
        session: SessionId,
    }

    async fn replica() -> Replica {
        let tmp = tempfile::tempdir().unwrap();
        let store = Store::open(tmp.path()).await.unwrap();
        let session = store
            .create_session(NewSession {
                workspace: WorkspaceRequest::Work,
                lead: None,
                model: None,
                graph_hash: None,
                parent: None,
            })
            .await
            .unwrap()
            .id;
        let bus = Arc::new(EventBus::default());
        let writer = EventWriter::start(store.clone(), Arc::clone(&bus));
        Replica {
            _tmp: tmp,
            store,
            bus,
            writer,
            session,
        }
    }

    impl Replica {
        /// A client's stream of the session's events after `after`.
        fn follow(&self, after: u64) -> impl Stream<Item = StoredEvent> + Send + 'static {
            follow(
                self.store.clone(),
                Arc::clone(&self.bus),
                self.session,
                after,
            )
        }

        async fn stored(&self) -> Vec<StoredEvent> {
            self.store.events_after(self.session, 0, 100).await.unwrap()
        }
    }

    /// The next `n` events of `stream`; a stream that stalls fails the test
    /// instead of hanging it.
    async fn next(stream: impl Stream<Item = StoredEvent>, n: usize) -> Vec<StoredEvent> {
        tokio::time::timeout(Duration::from_secs(60), stream.take(n).collect())
            .await
            .expect("the stream stalled")
    }

    /// Each event's id and the number the test's notice carries.
    fn numbered(events: &[StoredEvent]) -> Vec<(u64, u64)> {
        events
            .iter()
            .map(|e| {
                let data: Value = serde_json::from_str(&e.data).unwrap();
                (e.id, data["n"].as_u64().unwrap())
            })
            .collect()
    }

    fn kinds(events: &[StoredEvent]) -> Vec<&str> {
        events.iter().map(|e| e.kind.as_str()).collect()
    }

    #[tokio::test]
    async fn two_followers_get_every_event_in_order_and_a_reconnect_replays_the_rest() {
        let r = replica().await;
        let first = pin!(r.follow(0));
        let second = pin!(r.follow(0));
        let log = EventLog::new();
        // Queued before the session's id is known (a new session's harness
        // emits before it is bound), then written first, in order.
        for n in 0..3 {
            log.push_notice("test_notice", &json!({"n": n}));
        }
        log.bind(r.session, &r.writer, None);
        for n in 3..6 {
            log.push_notice("test_notice", &json!({"n": n}));
        }
        log.flush().await;
        for n in 6..10 {
            log.push_notice("test_notice", &json!({"n": n}));
        }
        let expected: Vec<(u64, u64)> = (0..10).map(|n| (n + 1, n)).collect();
        let (first, second) = tokio::join!(next(first, 10), next(second, 10));
        assert_eq!(numbered(&first), expected);
        assert_eq!(numbered(&second), expected);
        // A client reconnecting with the id of the last event it saw
        // (`Last-Event-ID`) gets what came after it, and then what comes.
        let mut again = pin!(r.follow(4));
        log.push_notice("test_notice", &json!({"n": 10}));
        let replayed = next(&mut again, 7).await;
        assert_eq!(numbered(&replayed), [&expected[4..], &[(11, 10)]].concat());
    }

    #[tokio::test]
    async fn a_turn_s_end_and_what_follows_it_are_stored_once_the_turn_lets_go() {
        let r = replica().await;
        let log = EventLog::new();
        log.bind(r.session, &r.writer, None);
        log.push_notice("test_notice", &json!({"n": 0}));
        log.push_event(&Event::TurnCancelled {
            session_id: r.session.to_string(),
        });
        log.push_notice("test_notice", &json!({"n": 1}));
        log.flush().await;
        // The session is still busy: no client may read the turn's end yet.
        assert_eq!(kinds(&r.stored().await), ["test_notice"]);
        log.release();
        log.flush().await;
        assert_eq!(
            kinds(&r.stored().await),
            ["test_notice", "turn_cancelled", "test_notice"]
        );
    }

    #[tokio::test]
    async fn the_stream_of_a_deleted_session_ends_with_session_stopped() {
        let r = replica().await;
        let log = EventLog::new();
        log.bind(r.session, &r.writer, None);
        log.push_notice("test_notice", &json!({"n": 0}));
        let mut stream = pin!(r.follow(0));
        assert_eq!(numbered(&next(&mut stream, 1).await), [(1, 0)]);
        r.store.delete_session(r.session).await.unwrap();
        r.bus.wake(r.session);
        let rest: Vec<StoredEvent> =
            tokio::time::timeout(Duration::from_secs(60), stream.collect())
                .await
                .expect("the stream of a deleted session never ended");
        assert_eq!(kinds(&rest), [SESSION_STOPPED]);
        assert_eq!(rest[0].id, 2);
        let data: Value = serde_json::from_str(&rest[0].data).unwrap();
        assert_eq!(data["session_id"], r.session.to_string());
    }
}
