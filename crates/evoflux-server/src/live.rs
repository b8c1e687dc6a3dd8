//! Sessions the server runs. Each live session is one task that owns its
//! [`Harness`] and runs its turns one at a time; handlers talk to it
//! through a channel, never hold it. Its events go to an [`EventLog`]: a
//! numbered, bounded log that SSE subscribers replay from (`Last-Event-ID`)
//! and then follow, so a reconnect loses and duplicates nothing.
//!
//! When the sources change (a file under a watched root, or a change made
//! through the API: a skill, its preferences, a plugin), each live
//! session's next turn runs on a harness opened again from the store with
//! the new graph, its skills and its MCP servers; a turn that is running
//! finishes on the graph it started with.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use evoflux_core::ids::SessionId;
use evoflux_harness::{
    AppContext, ApprovalDecision, ApprovalRequest, Approver, Event, EventSink, Harness,
    SessionBuilder, SessionOptions, TurnOptions,
};
use evoflux_tools::ProcessRuntime;
use serde_json::{Value, json};
use tokio::sync::{Notify, broadcast, mpsc, oneshot};

use crate::error::ApiError;

/// Events a session's log keeps for replay; older ones are dropped (a
/// subscriber asking for them is told where the log now starts).
pub const EVENT_LOG_CAPACITY: usize = 10_000;

/// The type of the last event of a stopped session's stream.
pub const SESSION_STOPPED: &str = "session_stopped";

/// One logged event: its id (1-based, per session) and its JSON.
#[derive(Debug, Clone)]
pub struct Logged {
    pub id: u64,
    pub kind: String,
    pub data: Arc<str>,
}

/// A session's numbered events.
#[derive(Debug)]
pub struct EventLog {
    inner: Mutex<LogInner>,
    tx: broadcast::Sender<Logged>,
}

#[derive(Debug)]
struct LogInner {
    next: u64,
    events: VecDeque<Logged>,
}

impl EventLog {
    fn new() -> EventLog {
        EventLog {
            inner: Mutex::new(LogInner {
                next: 1,
                events: VecDeque::new(),
            }),
            tx: broadcast::channel(1024).0,
        }
    }

    /// Appends one event (a JSON object with a `type`).
    pub fn push(&self, value: &Value) {
        let kind = value
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("event")
            .to_owned();
        let data: Arc<str> = value.to_string().into();
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let logged = Logged {
            id: inner.next,
            kind,
            data,
        };
        inner.next += 1;
        inner.events.push_back(logged.clone());
        if inner.events.len() > EVENT_LOG_CAPACITY {
            inner.events.pop_front();
        }
        // Sent under the lock, so subscribers see ids in order.
        let _ = self.tx.send(logged);
    }

    /// The events after `after`, and a receiver for the ones that follow:
    /// taken together under the log's lock, so nothing falls between.
    pub fn subscribe(&self, after: u64) -> (Vec<Logged>, Option<u64>, broadcast::Receiver<Logged>) {
        let inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let rx = self.tx.subscribe();
        let first = inner.events.front().map(|e| e.id);
        let gap = first.filter(|f| after + 1 < *f);
        let replay = inner
            .events
            .iter()
            .filter(|e| e.id > after)
            .cloned()
            .collect();
        (replay, gap, rx)
    }

    /// The id of the last event logged, 0 before the first.
    pub fn last_id(&self) -> u64 {
        self.inner.lock().unwrap_or_else(|p| p.into_inner()).next - 1
    }

    /// The events after `after` still in the log.
    pub fn since(&self, after: u64) -> Vec<Logged> {
        let inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        inner
            .events
            .iter()
            .filter(|e| e.id > after)
            .cloned()
            .collect()
    }
}

/// The harness's event sink for a live session.
#[derive(Debug)]
struct LogSink(Arc<EventLog>);

impl EventSink for LogSink {
    fn emit(&self, event: &Event) {
        match serde_json::to_value(event) {
            Ok(v) => self.0.push(&v),
            Err(e) => tracing::warn!("an event did not serialize: {e}"),
        }
    }
}

/// Approvals answered over HTTP: a call that needs one waits until
/// `POST /api/sessions/{id}/approvals/{call_id}` decides it.
#[derive(Debug, Default)]
pub struct HttpApprover {
    pending: Mutex<HashMap<String, oneshot::Sender<ApprovalDecision>>>,
}

impl Approver for HttpApprover {
    fn approve<'a>(
        &'a self,
        request: &'a ApprovalRequest,
    ) -> evoflux_harness::approval::ApprovalFuture<'a> {
        let (tx, rx) = oneshot::channel();
        self.pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(request.call_id.clone(), tx);
        Box::pin(async move {
            rx.await.unwrap_or(ApprovalDecision::Denied {
                reason: "the turn was cancelled before anyone decided".to_owned(),
            })
        })
    }
}

impl HttpApprover {
    /// Decides the pending approval of `call_id`; `false` when none waits.
    pub fn decide(&self, call_id: &str, decision: ApprovalDecision) -> bool {
        let tx = self
            .pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(call_id);
        tx.is_some_and(|tx| tx.send(decision).is_ok())
    }

    /// Denies everything that waits (the turn is being cancelled).
    fn deny_all(&self) {
        let pending: Vec<_> = self
            .pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain()
            .collect();
        for (_, tx) in pending {
            let _ = tx.send(ApprovalDecision::Denied {
                reason: "the turn was cancelled".to_owned(),
            });
        }
    }
}

/// What a live session's task is asked to do.
#[derive(Debug)]
enum Command {
    /// Run a turn: a message, an answer, or `None` to continue.
    Turn(Option<String>),
}

/// A session the server runs.
#[derive(Debug)]
pub struct LiveSession {
    pub id: SessionId,
    pub log: Arc<EventLog>,
    pub approvals: Arc<HttpApprover>,
    busy: AtomicBool,
    cancel: Notify,
    commands: mpsc::UnboundedSender<Command>,
}

impl LiveSession {
    pub fn is_busy(&self) -> bool {
        self.busy.load(Ordering::SeqCst)
    }

    /// Starts a turn; refused while one runs.
    pub fn start_turn(&self, input: Option<String>) -> Result<(), ApiError> {
        if self
            .busy
            .compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst)
            .is_err()
        {
            return Err(ApiError::conflict(
                "session/busy",
                "a turn is running; wait for its turn_completed event or cancel it",
            ));
        }
        self.commands.send(Command::Turn(input)).map_err(|_| {
            self.busy.store(false, Ordering::SeqCst);
            ApiError::internal("session/stopped", "the session's task has stopped")
        })
    }

    /// Cancels the running turn; `false` when none runs.
    pub fn cancel(&self) -> bool {
        if !self.is_busy() {
            return false;
        }
        self.cancel.notify_waiters();
        true
    }
}

/// Every live session of the server.
#[derive(Debug)]
pub struct Sessions {
    app: Arc<AppContext>,
    processes: ProcessRuntime,
    /// The server's one store, shared by every session.
    store: evoflux_store::Store,
    live: Mutex<BTreeMap<SessionId, Arc<LiveSession>>>,
    /// Serializes opening, so one session is never opened twice.
    opening: tokio::sync::Mutex<()>,
    /// Bumped whenever the sources change; a session whose harness was
    /// opened at an older generation reopens before its next turn.
    generation: Arc<AtomicU64>,
}

/// What opening a session returned besides the live handle.
#[derive(Debug)]
pub struct Opened {
    pub live: Arc<LiveSession>,
    pub session: evoflux_store::Session,
    pub model: String,
    pub diagnostics: evoflux_core::Diagnostics,
}

impl Sessions {
    pub fn new(
        app: Arc<AppContext>,
        processes: ProcessRuntime,
        store: evoflux_store::Store,
    ) -> Sessions {
        Sessions {
            app,
            processes,
            store,
            live: Mutex::new(BTreeMap::new()),
            opening: tokio::sync::Mutex::new(()),
            generation: Arc::new(AtomicU64::new(0)),
        }
    }

    /// The sources changed: every live session reopens on the new graph
    /// before its next turn.
    pub fn sources_changed(&self) {
        self.generation.fetch_add(1, Ordering::SeqCst);
    }

    pub fn app(&self) -> &AppContext {
        &self.app
    }

    pub fn get(&self, id: SessionId) -> Option<Arc<LiveSession>> {
        self.live
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&id)
            .cloned()
    }

    pub fn is_live(&self, id: SessionId) -> bool {
        self.get(id).is_some()
    }

    /// Opens a session (new, or `options.resume`) and starts its task.
    pub async fn open(&self, options: SessionOptions) -> Result<Opened, ApiError> {
        let _guard = self.opening.lock().await;
        if let Some(id) = options.resume
            && let Some(live) = self.get(id)
        {
            let session = self.store.load(id).await?;
            return Ok(Opened {
                live,
                model: session.model.clone().unwrap_or_default(),
                session,
                diagnostics: evoflux_core::Diagnostics::new(),
            });
        }
        let log = Arc::new(EventLog::new());
        let approvals = Arc::new(HttpApprover::default());
        let generation = self.generation.load(Ordering::SeqCst);
        let opened = builder(
            &self.app,
            options,
            &log,
            &approvals,
            &self.processes,
            &self.store,
        )
        .open()
        .await?;
        let harness = opened.harness;
        let session = harness.session().clone();
        let (tx, rx) = mpsc::unbounded_channel();
        let live = Arc::new(LiveSession {
            id: session.id,
            log,
            approvals,
            busy: AtomicBool::new(false),
            cancel: Notify::new(),
            commands: tx,
        });
        self.live
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(session.id, Arc::clone(&live));
        let reopen = Reopen {
            app: Arc::clone(&self.app),
            store: self.store.clone(),
            processes: self.processes.clone(),
            generation: Arc::clone(&self.generation),
            opened_at: generation,
        };
        tokio::spawn(run(harness, Arc::clone(&live), reopen, rx));
        Ok(Opened {
            live,
            session,
            model: opened.model.to_string(),
            diagnostics: opened.diagnostics,
        })
    }

    /// The live session `id`, resuming a stored one.
    pub async fn live_or_resume(&self, id: SessionId) -> Result<Arc<LiveSession>, ApiError> {
        if let Some(live) = self.get(id) {
            return Ok(live);
        }
        let opened = self
            .open(SessionOptions {
                mode: None,
                workspaces: Vec::new(),
                lead: None,
                model: None,
                resume: Some(id),
                limits: Default::default(),
            })
            .await?;
        Ok(opened.live)
    }

    /// Stops a live session's task and forgets it (its turn is cancelled).
    pub async fn stop(&self, id: SessionId) {
        let live = self
            .live
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&id);
        if let Some(live) = live {
            live.cancel();
            live.log
                .push(&json!({"type": SESSION_STOPPED, "session_id": id.to_string()}));
            // Dropping the last sender ends the task's loop.
            drop(live);
            self.processes.terminate_session(id).await;
        }
    }

    /// Appends an event to every live session's log (a server event, such
    /// as a reload of the graph).
    pub fn broadcast(&self, value: &Value) {
        let live: Vec<Arc<LiveSession>> = self
            .live
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .cloned()
            .collect();
        for session in live {
            session.log.push(value);
        }
    }

    /// Stops every session (graceful shutdown).
    pub async fn stop_all(&self) {
        let ids: Vec<SessionId> = self
            .live
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .keys()
            .copied()
            .collect();
        for id in ids {
            self.stop(id).await;
        }
        self.processes.shutdown().await;
    }
}

/// How the server opens a session's harness, the first time and again on
/// changed sources: its events to its log, its approvals over HTTP, the
/// server's one process runtime and store.
fn builder<'a>(
    app: &'a AppContext,
    options: SessionOptions,
    log: &Arc<EventLog>,
    approvals: &Arc<HttpApprover>,
    processes: &ProcessRuntime,
    store: &evoflux_store::Store,
) -> SessionBuilder<'a> {
    SessionBuilder::new(app, options)
        .events(Arc::new(LogSink(Arc::clone(log))))
        .approver(Arc::clone(approvals) as Arc<dyn Approver>)
        .processes(processes.clone())
        .store(store.clone())
}

/// What a live session's task needs to open its harness again on a new
/// graph.
struct Reopen {
    app: Arc<AppContext>,
    store: evoflux_store::Store,
    processes: ProcessRuntime,
    generation: Arc<AtomicU64>,
    /// The generation the current harness was opened at.
    opened_at: u64,
}

impl Reopen {
    /// A harness on the current sources when they changed since the last
    /// one was opened. On failure the session keeps its harness and its
    /// log says why.
    async fn refresh(&mut self, harness: &mut Harness, live: &LiveSession) {
        let now = self.generation.load(Ordering::SeqCst);
        if now == self.opened_at {
            return;
        }
        self.opened_at = now;
        let options = SessionOptions {
            mode: None,
            workspaces: Vec::new(),
            lead: None,
            model: None,
            resume: Some(live.id),
            limits: Default::default(),
        };
        let opened = builder(
            &self.app,
            options,
            &live.log,
            &live.approvals,
            &self.processes,
            &self.store,
        )
        .reuse_model(harness.model_client())
        .open()
        .await;
        match opened {
            Ok(opened) => {
                let old = std::mem::replace(harness, opened.harness);
                old.shutdown().await;
                live.log.push(&json!({
                    "type": "sources_applied",
                    "session_id": live.id.to_string(),
                }));
            }
            Err(e) => live.log.push(&json!({
                "type": "graph_invalid",
                "code": e.code(),
                "message": format!("the changed sources cannot be applied; this session keeps its previous ones: {e}"),
            })),
        }
    }
}

/// A live session's task: its turns, one at a time, until the server
/// forgets it.
async fn run(
    mut harness: Harness,
    live: Arc<LiveSession>,
    mut reopen: Reopen,
    mut commands: mpsc::UnboundedReceiver<Command>,
) {
    // The task holds only a weak interest: when the registry drops the
    // session, the sender goes and this loop ends.
    let weak = Arc::downgrade(&live);
    drop(live);
    while let Some(command) = commands.recv().await {
        let Some(live) = weak.upgrade() else { break };
        match command {
            Command::Turn(input) => {
                reopen.refresh(&mut harness, &live).await;
                let cancelled = live.cancel.notified();
                tokio::pin!(cancelled);
                cancelled.as_mut().enable();
                // The harness stops the turn's commands and emits
                // turn_cancelled; what waits for a decision here is denied.
                let ended = harness
                    .turn_or_cancel(input.as_deref(), TurnOptions::default(), cancelled)
                    .await;
                if matches!(ended, Ok(evoflux_harness::TurnEnd::Cancelled)) {
                    live.approvals.deny_all();
                }
                live.busy.store(false, Ordering::SeqCst);
            }
        }
    }
    harness.shutdown().await;
}
