//! Sessions the server runs. Each live session is one task that owns its
//! [`Harness`] and runs its turns one at a time; handlers talk to it
//! through a channel, never hold it. Its events go to the store through
//! its [`EventLog`], where any replica's streams follow them (see
//! [`crate::events`]).
//!
//! Several replicas may serve one database. A live session is then only
//! this replica's cache of it: a turn runs under the session's lease
//! ([`evoflux_harness::lease::SessionLease`], the one every front end
//! takes), renewed while it runs, so exactly one replica — or `evoflux
//! run`, `sessions resume`, `chat`, `acp` — executes a session's turn at a
//! time. A replica that takes the lease after another ran the session (the
//! lease's epoch says so) opens the harness again from the store first; a
//! replica that dies mid-turn leaves the lease to expire with the turn
//! open, and any replica's sweeper ([`finish_orphaned_turns`]) takes it and
//! finishes the turn.
//!
//! When the sources change (a file under a watched root, or a change made
//! through the API: a skill, its preferences, a plugin), each live
//! session's next turn runs on a harness opened again from the store with
//! the new graph, its skills and its MCP servers; a turn that is running
//! finishes on the graph it started with.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use evoflux_core::ids::SessionId;
use evoflux_harness::{
    AppContext, ApprovalDecision, ApprovalRequest, Approver, Event, EventSink, Harness, Holder,
    LeaseError, SessionBuilder, SessionLease, SessionOptions, TurnOptions,
};
use evoflux_tools::ProcessRuntime;
use serde_json::{Value, json};
use tokio::sync::{Notify, mpsc, oneshot};

use crate::error::ApiError;
pub use crate::events::{EventBus, EventLog, SESSION_STOPPED};

/// How long a replica's hold on a running turn lasts without renewal
/// (renewed at a third of it): how soon another replica finishes the turn
/// of one that died.
pub const LEASE_TTL: Duration = Duration::from_secs(30);

/// This replica, as the leases name it.
#[derive(Debug, Clone)]
pub struct Replica {
    /// Unique per process.
    pub id: Arc<str>,
    pub lease_ttl: Duration,
    /// Who takes the leases of this replica's turns: `evoflux serve (pid
    /// N) on host H, replica ID`, with `lease_ttl` (see
    /// [`evoflux_harness::lease`], which every front end shares).
    pub holder: Holder,
}

impl Replica {
    pub fn new(lease_ttl: Duration) -> Replica {
        let id: Arc<str> = uuid::Uuid::now_v7().to_string().into();
        let holder = Holder::process("evoflux serve")
            .instance(&format!("replica {id}"))
            .with_ttl(lease_ttl);
        Replica {
            id,
            lease_ttl,
            holder,
        }
    }
}

/// The harness's event sink for a live session.
#[derive(Debug)]
struct LogSink(Arc<EventLog>);

impl EventSink for LogSink {
    fn emit(&self, event: &Event) {
        self.0.push_event(event);
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
    /// Run a turn under `lease`: a message, an answer, or `None` to
    /// continue.
    Turn {
        input: Option<String>,
        lease: SessionLease,
    },
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
    store: evoflux_store::Store,
    replica: Replica,
    /// The lease epoch the harness is current at: a lease taken at any
    /// other epoch than the next means another replica ran turns since.
    synced: AtomicI64,
    bus: Arc<EventBus>,
}

impl LiveSession {
    pub fn is_busy(&self) -> bool {
        self.busy.load(Ordering::SeqCst)
    }

    /// Starts a turn; refused while one runs, here or on another replica.
    pub async fn start_turn(&self, input: Option<String>) -> Result<(), ApiError> {
        if self
            .busy
            .compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst)
            .is_err()
        {
            return Err(busy());
        }
        // Renewed from now until the turn's end releases it.
        let lease = match SessionLease::acquire(&self.store, self.id, &self.replica.holder).await {
            Ok(lease) => lease,
            // Another replica or process: the message names it.
            Err(e @ LeaseError::Busy { .. }) => {
                self.busy.store(false, Ordering::SeqCst);
                return Err(ApiError::conflict(e.code(), e.to_string()));
            }
            Err(LeaseError::Store(e)) => {
                self.busy.store(false, Ordering::SeqCst);
                return Err(e.into());
            }
        };
        if let Err(mpsc::error::SendError(Command::Turn { lease, .. })) =
            self.commands.send(Command::Turn { input, lease })
        {
            self.busy.store(false, Ordering::SeqCst);
            let _ = lease.release().await;
            return Err(ApiError::internal(
                "session/stopped",
                "the session's task has stopped",
            ));
        }
        Ok(())
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

fn busy() -> ApiError {
    ApiError::conflict(
        "session/busy",
        "a turn is running; wait for its turn_completed event or cancel it",
    )
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
    replica: Replica,
    bus: Arc<EventBus>,
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
        replica: Replica,
    ) -> Sessions {
        Sessions {
            app,
            processes,
            store,
            live: Mutex::new(BTreeMap::new()),
            opening: tokio::sync::Mutex::new(()),
            generation: Arc::new(AtomicU64::new(0)),
            replica,
            bus: Arc::new(EventBus::default()),
        }
    }

    /// What wakes this replica's event followers.
    pub fn bus(&self) -> &Arc<EventBus> {
        &self.bus
    }

    pub fn replica(&self) -> &Replica {
        &self.replica
    }

    /// The id of the last event `id` has stored, once what this replica
    /// queued for it is written: a request's events are the ones after it.
    pub async fn last_event(&self, id: SessionId) -> Result<u64, ApiError> {
        if let Some(live) = self.get(id) {
            live.log.flush().await;
        }
        Ok(self.store.last_event_id(id).await?)
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
        // Read before the harness opens: a turn another replica runs
        // after this makes the harness stale, and the next lease says so.
        let synced = match options.resume {
            Some(id) => self.store.lease_epoch(id).await?,
            None => 0,
        };
        let log = EventLog::new();
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
        let artifacts = self
            .store
            .artifacts()
            .cloned()
            .map(|a| (a, self.app.artifacts_root().join(session.id.to_string())));
        log.bind(
            session.id,
            self.store.clone(),
            Arc::clone(&self.bus),
            artifacts,
        );
        let (tx, rx) = mpsc::unbounded_channel();
        let live = Arc::new(LiveSession {
            id: session.id,
            log,
            approvals,
            busy: AtomicBool::new(false),
            cancel: Notify::new(),
            commands: tx,
            store: self.store.clone(),
            replica: self.replica.clone(),
            synced: AtomicI64::new(synced),
            bus: Arc::clone(&self.bus),
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
    /// The streams following it end when the session is deleted.
    pub async fn stop(&self, id: SessionId) {
        let live = self
            .live
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&id);
        if let Some(live) = live {
            live.cancel();
            // Dropping the last sender ends the task's loop.
            drop(live);
            self.processes.terminate_session(id).await;
        }
    }

    /// Whether `id`'s turn runs on another replica and waits for a
    /// decision on `call_id`: its events asked for one the turn has not
    /// ended yet.
    pub async fn waits_elsewhere(&self, id: SessionId, call_id: &str) -> Result<bool, ApiError> {
        let running = self
            .store
            .lease_holder(id)
            .await?
            .is_some_and(|h| h.running && !self.replica.holder.took(&h));
        if !running {
            return Ok(false);
        }
        let recent = self
            .store
            .recent_events(
                id,
                &["approval_requested", "tool_ended", "turn_started"],
                500,
            )
            .await?;
        for e in recent {
            let data: Value = serde_json::from_str(&e.data).unwrap_or(Value::Null);
            let this_call = data.get("call_id").and_then(Value::as_str) == Some(call_id);
            match e.kind.as_str() {
                // Newest first: an end, or the turn's start, comes before
                // any request that still waits.
                "tool_ended" if this_call => return Ok(false),
                "turn_started" => return Ok(false),
                "approval_requested" if this_call => return Ok(true),
                _ => {}
            }
        }
        Ok(false)
    }

    /// Finishes the turns other replicas left open when they died (their
    /// lease expired with the turn running): each is continued here, if
    /// this replica takes its lease first. Returns the sessions taken.
    pub async fn finish_orphaned_turns(&self) -> Vec<SessionId> {
        let orphaned = match self.store.orphaned_turns().await {
            Ok(o) => o,
            Err(e) => {
                tracing::warn!(error = %e, "cannot look for orphaned turns");
                return Vec::new();
            }
        };
        let mut taken = Vec::new();
        for id in orphaned {
            let live = match self.live_or_resume(id).await {
                Ok(live) => live,
                Err(e) => {
                    tracing::warn!(session = %id, code = e.code, "cannot resume an orphaned turn");
                    continue;
                }
            };
            // Another replica may take it first: then it is theirs.
            if live.start_turn(None).await.is_ok() {
                tracing::info!(session = %id, "finishing a turn a stopped replica left open");
                taken.push(id);
            }
        }
        taken
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
    /// one was opened, or when `stale` (another replica ran turns since it
    /// was opened). On failure the session keeps its harness and its log
    /// says why; `false` then.
    async fn refresh(&mut self, harness: &mut Harness, live: &LiveSession, stale: bool) -> bool {
        let now = self.generation.load(Ordering::SeqCst);
        if now == self.opened_at && !stale {
            return true;
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
                if !stale {
                    live.log.push(&json!({
                        "type": "sources_applied",
                        "session_id": live.id.to_string(),
                    }));
                }
                true
            }
            Err(e) => {
                live.log.push(&json!({
                    "type": "graph_invalid",
                    "code": e.code(),
                    "message": format!("the changed sources cannot be applied; this session keeps its previous ones: {e}"),
                }));
                false
            }
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
            Command::Turn { input, lease } => {
                let epoch = lease.epoch();
                let stale = epoch != live.synced.load(Ordering::SeqCst) + 1;
                let current = reopen.refresh(&mut harness, &live, stale).await || !stale;
                if current {
                    turn(&mut harness, &live, input, &lease).await;
                } else {
                    // A harness that missed another replica's turns must
                    // not answer on them.
                    live.log.push_event(&Event::Error {
                        code: "session/reopen-failed".to_owned(),
                        message: "another replica ran this session since it was opened here, and it cannot be opened again; nothing was run".to_owned(),
                    });
                }
                live.log.flush().await;
                if let Err(e) = lease.release().await {
                    tracing::warn!(session = %live.id, error = %e, "cannot release a turn's lease; it expires");
                }
                // A harness that could not be opened again stays stale:
                // the next lease tries again.
                if current {
                    live.synced.store(epoch, Ordering::SeqCst);
                }
                live.busy.store(false, Ordering::SeqCst);
                // Only now does anyone see the turn's end.
                live.log.release();
            }
        }
    }
    harness.shutdown().await;
}

/// One turn under `lease`, which renews itself while it runs. A lease
/// lost (this replica stalled past it and another took the session)
/// cancels the turn.
async fn turn(
    harness: &mut Harness,
    live: &Arc<LiveSession>,
    input: Option<String>,
    lease: &SessionLease,
) {
    let signals = {
        let live = Arc::clone(live);
        tokio::spawn(async move {
            let mut wake = live.bus.watch_signals(live.id);
            loop {
                wake.borrow_and_update();
                match live.store.take_signals(live.id).await {
                    Ok(signals) => {
                        for signal in signals {
                            apply(&live, signal);
                        }
                    }
                    Err(e) => tracing::warn!(session = %live.id, error = %e, "cannot read signals"),
                }
                // Woken by a signal to this replica or, on PostgreSQL,
                // announced by another; looked for now and then anyway.
                let _ = tokio::time::timeout(Duration::from_secs(1), wake.changed()).await;
            }
        })
    };
    let cancelled = live.cancel.notified();
    tokio::pin!(cancelled);
    cancelled.as_mut().enable();
    let lost = lease.lost();
    let stop = async {
        tokio::select! {
            () = cancelled => {}
            () = lost => {
                tracing::warn!(session = %live.id, "lost the turn's lease; cancelling it");
            }
        }
    };
    // The harness stops the turn's commands and emits turn_cancelled;
    // what waits for a decision here is denied.
    let ended = harness
        .turn_or_cancel(input.as_deref(), TurnOptions::default(), stop)
        .await;
    signals.abort();
    if matches!(ended, Ok(evoflux_harness::TurnEnd::Cancelled)) {
        live.approvals.deny_all();
    }
}

/// Applies what a request to another replica asked of this turn.
fn apply(live: &LiveSession, signal: evoflux_store::Signal) {
    match signal {
        evoflux_store::Signal::Approval { call_id, body } => {
            match serde_json::from_str::<crate::api::sessions::ApprovalBody>(&body) {
                Ok(body) => {
                    live.approvals.decide(&call_id, body.decision());
                }
                Err(e) => {
                    tracing::warn!(session = %live.id, error = %e, "an approval signal did not parse")
                }
            }
        }
        evoflux_store::Signal::Cancel => {
            live.cancel();
        }
    }
}
