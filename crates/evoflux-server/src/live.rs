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

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use evoflux_app::{AppContext, ReopenBuilder, SessionBuilder, SessionOptions, WireBuilder};
use evoflux_core::ids::SessionId;
use evoflux_harness::events::EventKind;
use evoflux_harness::host::BoxFuture;
use evoflux_harness::{
    ApprovalDecision, Decided, Event, EventSink, Harness, Holder, HostError, HostFrontEnd,
    HostOptions, HostWiring, LeaseError, ProcessRuntime, Reopen, ReopenError, Session, SessionHost,
    Store, TurnOptions,
};
use serde_json::Value;

use crate::error::ApiError;
pub use crate::events::{EventBus, EventLog, EventWriter, SESSION_STOPPED};

/// How long a replica's hold on a running turn lasts without renewal
/// (renewed at a third of it): how soon another replica finishes the turn
/// of one that died.
pub const LEASE_TTL: Duration = Duration::from_secs(30);

/// How long a live session may sit idle before it is released from memory.
pub const IDLE_RELEASE: Duration = Duration::from_secs(15 * 60);

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

/// A session the server runs: its [`SessionHost`] (which runs its turns,
/// holds its approvals and cancels) and the log its events go to. The
/// server holds no session state of its own beyond the transport: the log,
/// and the signals other replicas send a turn that runs here.
#[derive(Debug)]
pub struct LiveSession {
    pub id: SessionId,
    pub log: Arc<EventLog>,
    host: SessionHost,
    /// When a request last touched it.
    used: Mutex<std::time::Instant>,
    store: Store,
    bus: Arc<EventBus>,
}

impl LiveSession {
    pub fn is_busy(&self) -> bool {
        self.host.is_busy()
    }

    fn touch(&self) {
        *self.used.lock().unwrap_or_else(|p| p.into_inner()) = std::time::Instant::now();
    }

    /// Idle for at least `idle`: no turn runs and no request came.
    fn idle_for(&self, idle: Duration) -> bool {
        !self.is_busy()
            && self
                .used
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .elapsed()
                >= idle
    }

    /// The prompt commands the session's user can type (after the running
    /// turn, if any).
    pub async fn prompt_commands(
        &self,
    ) -> Result<Vec<evoflux_harness::prompt_commands::PromptCommand>, ApiError> {
        self.touch();
        self.host
            .with(|harness| {
                let commands = harness.prompt_commands();
                Box::pin(async move { commands })
                    as BoxFuture<'_, Vec<evoflux_harness::prompt_commands::PromptCommand>>
            })
            .await
            .map_err(host_error)
    }

    /// Tags the session for `surface` (after the running turn, if any);
    /// returns the MCP servers it now hides, each with why.
    pub async fn set_surface(
        &self,
        surface: evoflux_store::SessionSurface,
    ) -> Result<Vec<evoflux_core::Diagnostic>, ApiError> {
        self.touch();
        let set = self
            .host
            .with(move |harness| {
                Box::pin(async move {
                    harness.set_surface(surface).await?;
                    Ok(harness.mcp_hidden())
                })
                    as BoxFuture<
                        '_,
                        Result<Vec<evoflux_core::Diagnostic>, evoflux_store::StoreError>,
                    >
            })
            .await
            .map_err(host_error)?;
        Ok(set?)
    }

    /// The MCP servers the session's surface hides, each with why
    /// (`mcp/webbridge-hidden`; empty in a standard conversation).
    pub async fn mcp_hidden(&self) -> Result<Vec<evoflux_core::Diagnostic>, ApiError> {
        self.host
            .with(|harness| {
                let hidden = harness.mcp_hidden();
                Box::pin(async move { hidden }) as BoxFuture<'_, Vec<evoflux_core::Diagnostic>>
            })
            .await
            .map_err(host_error)
    }

    /// Starts a turn; refused while one runs, here or on another replica.
    pub async fn start_turn(self: &Arc<Self>, input: Option<String>) -> Result<(), ApiError> {
        self.touch();
        let handle = self
            .host
            .submit(input, TurnOptions::default())
            .await
            .map_err(host_error)?;
        // While the turn runs, what other replicas ask of it (an approval,
        // a cancellation) arrives as signals through the store.
        let live = Arc::clone(self);
        tokio::spawn(async move {
            let signals = tokio::spawn(follow_signals(Arc::clone(&live)));
            let _ = handle.ended().await;
            signals.abort();
        });
        Ok(())
    }

    /// Cancels the running turn; `false` when none runs.
    pub fn cancel(&self) -> bool {
        self.host.cancel()
    }

    /// Decides the approval `call_id` waits on; `false` when none waits.
    pub fn decide(&self, call_id: &str, decision: ApprovalDecision) -> bool {
        self.host
            .decide(call_id, Decided::by_user(decision))
            .is_ok()
    }

    /// Answers the MCP server's form `id` waits on (checked against its
    /// schema first).
    pub fn answer_elicitation(
        &self,
        id: &str,
        answer: evoflux_harness::approval::ElicitationAnswer,
    ) -> Result<(), ApiError> {
        self.host
            .answer_elicitation(
                id,
                evoflux_harness::approval::Elicited {
                    answer,
                    by: evoflux_harness::DecidedBy::User,
                },
            )
            .map_err(host_error)
    }
}

/// The API error of a host's refusal.
fn host_error(e: HostError) -> ApiError {
    match e {
        HostError::Busy => ApiError::conflict(e.code(), e.to_string()),
        HostError::Lease(LeaseError::Store(e)) => e.into(),
        HostError::Lease(e @ LeaseError::Busy { .. }) => {
            ApiError::conflict(e.code(), e.to_string())
        }
        HostError::NoPendingApproval { .. } | HostError::NoPendingElicitation { .. } => {
            ApiError::not_found(e.code(), e.to_string())
        }
        HostError::ElicitationInvalid { .. } => {
            ApiError::bad_request(e.code(), e.to_string()).field("content")
        }
        HostError::Closed | HostError::Turn(_) | HostError::Reopen(_) => {
            ApiError::internal(e.code(), e.to_string())
        }
    }
}

/// Every live session of the server.
#[derive(Debug)]
pub struct Sessions {
    app: Arc<AppContext>,
    processes: ProcessRuntime,
    /// The server's one store, shared by every session.
    store: Store,
    live: Mutex<BTreeMap<SessionId, Arc<LiveSession>>>,
    /// Serializes opening, so one session is never opened twice.
    opening: tokio::sync::Mutex<()>,
    replica: Replica,
    bus: Arc<EventBus>,
    /// Stores every live session's events.
    writer: EventWriter,
}

/// What opening a session returned besides the live handle.
#[derive(Debug)]
pub struct Opened {
    pub live: Arc<LiveSession>,
    pub session: Session,
    pub model: String,
    pub diagnostics: evoflux_core::Diagnostics,
}

impl Sessions {
    pub fn new(
        app: Arc<AppContext>,
        processes: ProcessRuntime,
        store: Store,
        replica: Replica,
    ) -> Sessions {
        let bus = Arc::new(EventBus::default());
        let writer = EventWriter::start(store.clone(), Arc::clone(&bus));
        Sessions {
            app,
            processes,
            store,
            live: Mutex::new(BTreeMap::new()),
            opening: tokio::sync::Mutex::new(()),
            replica,
            writer,
            bus,
        }
    }

    /// What wakes this replica's event followers.
    pub fn bus(&self) -> &Arc<EventBus> {
        &self.bus
    }

    pub fn replica(&self) -> &Replica {
        &self.replica
    }

    /// Stores what this replica queued for `id`'s events.
    pub async fn flush_events(&self, id: SessionId) {
        if let Some(live) = self.peek(id) {
            live.log.flush().await;
        }
    }

    /// The id of the last event `id` has stored, once what this replica
    /// queued for it is written: a request's events are the ones after it.
    pub async fn last_event(&self, id: SessionId) -> Result<u64, ApiError> {
        self.flush_events(id).await;
        Ok(self.store.last_event_id(id).await?)
    }

    /// The sources changed: every live session applies them before its
    /// next turn.
    pub fn sources_changed(&self) {
        for live in self.all() {
            live.host.refresh();
        }
    }

    fn all(&self) -> Vec<Arc<LiveSession>> {
        self.live
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .cloned()
            .collect()
    }

    pub fn app(&self) -> &AppContext {
        &self.app
    }

    /// The server's one process runtime, where the sessions' previews run
    /// (the preview proxy finds them there).
    pub fn processes(&self) -> &ProcessRuntime {
        &self.processes
    }

    /// The live session `id`, to act on it: counts as use.
    pub fn get(&self, id: SessionId) -> Option<Arc<LiveSession>> {
        let map = self.live.lock().unwrap_or_else(|p| p.into_inner());
        let live = map.get(&id).cloned();
        // Touched under the lock, so an idle release never takes a session
        // a request has just found.
        if let Some(live) = &live {
            live.touch();
        }
        live
    }

    /// Releases the live sessions idle for `idle` from memory (their
    /// harness, MCP servers and processes); a later request opens them
    /// again from the store. Returns those released.
    pub async fn release_idle(&self, idle: Duration) -> Vec<SessionId> {
        let released: Vec<Arc<LiveSession>> = {
            let mut map = self.live.lock().unwrap_or_else(|p| p.into_inner());
            let ids: Vec<SessionId> = map
                .values()
                .filter(|l| l.idle_for(idle))
                .map(|l| l.id)
                .collect();
            ids.iter().filter_map(|id| map.remove(id)).collect()
        };
        let mut ids = Vec::with_capacity(released.len());
        for live in released {
            live.host.close().await;
            self.processes.close_session(live.id).await;
            ids.push(live.id);
        }
        ids
    }

    pub fn is_live(&self, id: SessionId) -> bool {
        self.peek(id).is_some()
    }

    /// The live session `id`, to show it: looking does not count as use
    /// (a listing never keeps sessions in memory).
    pub fn peek(&self, id: SessionId) -> Option<Arc<LiveSession>> {
        self.live
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&id)
            .cloned()
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
        let log = EventLog::new();
        let wiring = HostWiring::new(Arc::new(LogSink(Arc::clone(&log))), None);
        let front = Arc::new(ServerFront {
            app: Arc::clone(&self.app),
            store: self.store.clone(),
            processes: self.processes.clone(),
            log: Arc::clone(&log),
        });
        self.app.prune_if_due(&self.store).await;
        let opened = front
            .own(wiring.wire(SessionBuilder::new(&self.app, options)))
            .open()
            .await?;
        // The server outlives the turn: the model may title the session.
        let harness = opened.harness.with_model_titles(true);
        let session = harness.session().clone();
        let artifacts = self
            .store
            .artifacts()
            .cloned()
            .map(|a| (a, self.app.artifacts_root().join(session.id.to_string())));
        log.bind(session.id, &self.writer, artifacts);
        let host = SessionHost::start(
            harness,
            wiring,
            front,
            HostOptions {
                holder: Some(self.replica.holder.clone()),
                // The server's live reload refreshes its sessions.
                sources: None,
            },
        );
        let live = Arc::new(LiveSession {
            id: session.id,
            log,
            host,
            used: Mutex::new(std::time::Instant::now()),
            store: self.store.clone(),
            bus: Arc::clone(&self.bus),
        });
        self.live
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(session.id, Arc::clone(&live));
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
            live.host.close().await;
            self.processes.close_session(id).await;
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
        let kinds = [
            EventKind::ApprovalRequested,
            EventKind::ApprovalDecided,
            EventKind::ToolEnded,
            EventKind::TurnStarted,
        ];
        let recent = self
            .store
            .recent_events(id, &kinds.map(EventKind::as_str), 500)
            .await?;
        for e in recent {
            let data: Value = serde_json::from_str(&e.data).unwrap_or(Value::Null);
            let this_call = data.get("call_id").and_then(Value::as_str) == Some(call_id);
            // Newest first: a decision, an end or the turn's start comes
            // before any request that still waits.
            match EventKind::parse(&e.kind) {
                Some(EventKind::ApprovalDecided | EventKind::ToolEnded) if this_call => {
                    return Ok(false);
                }
                Some(EventKind::TurnStarted) => return Ok(false),
                Some(EventKind::ApprovalRequested) if this_call => return Ok(true),
                Some(_) | None => {}
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

    /// Appends an event to every live session's log (a server notice,
    /// such as a reload of the graph).
    pub fn broadcast(&self, event: &Event) {
        for session in self.all() {
            session.log.push_event(event);
        }
    }

    /// Appends a notice the harness has no event for (the server's own
    /// `graph_reloaded`, whose `type` is `kind`) to every live session's
    /// log.
    pub fn broadcast_notice(&self, kind: &'static str, value: &Value) {
        for session in self.all() {
            session.log.push_notice(kind, value);
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

/// How the server opens a session's harness, the first time and again
/// when the host asks: its events to its log, its approvals through the
/// host, the server's one process runtime and store.
#[derive(Debug)]
struct ServerFront {
    app: Arc<AppContext>,
    store: Store,
    processes: ProcessRuntime,
    log: Arc<EventLog>,
}

impl ServerFront {
    /// `builder` on the server's one process runtime and store.
    fn own<'b>(&self, builder: SessionBuilder<'b>) -> SessionBuilder<'b> {
        builder
            .processes(self.processes.clone())
            .store(self.store.clone())
    }
}

impl HostFrontEnd for ServerFront {
    fn reopen<'a>(&'a self, reopen: Reopen<'a>) -> BoxFuture<'a, Result<Harness, ReopenError>> {
        Box::pin(async move {
            self.app.prune_if_due(&self.store).await;
            let builder = self.own(reopen.builder(&self.app, Default::default()));
            Ok(builder.open().await?.harness.with_model_titles(true))
        })
    }

    /// Everything the turn emitted is stored before its lease goes, so
    /// the replica that takes it next reads the whole turn.
    fn turn_emitted(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.log.flush())
    }

    /// Only now does anyone see the turn's end.
    fn turn_released(&self) {
        self.log.release();
    }
}

/// Applies, while a turn runs here, what requests to other replicas asked
/// of it: woken by a signal to this replica or, on PostgreSQL, announced
/// by another; looked for now and then anyway.
async fn follow_signals(live: Arc<LiveSession>) {
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
        let _ = tokio::time::timeout(Duration::from_secs(1), wake.changed()).await;
    }
}

/// Applies what a request to another replica asked of this turn.
fn apply(live: &LiveSession, signal: evoflux_store::Signal) {
    match signal {
        evoflux_store::Signal::Approval { call_id, body } => {
            match serde_json::from_str::<crate::api::sessions::ApprovalBody>(&body) {
                Ok(body) => {
                    live.decide(&call_id, body.decision());
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

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::pin::pin;

    use axum::http::StatusCode;
    use evoflux_core::AppMode;
    use evoflux_store::StoredEvent;
    use futures_util::StreamExt;
    use serde_json::json;

    use super::*;
    use crate::testing;

    /// A script whose first turn runs a command, which asks for approval
    /// (every `shell` call does here), then answers.
    const ASKS: &str = r#"
turns:
  - reply:
      tool_calls:
        - {name: shell, arguments: {command: "touch asked.txt"}}
  - reply: {text: Done.}
  - reply: {text: Again.}
"#;

    /// A script that only answers.
    const ANSWERS: &str = "turns:\n  - reply: {text: One.}\n";

    /// This replica's sessions on an app in a temp folder, where `shell`
    /// asks before every command.
    async fn replica() -> (tempfile::TempDir, Sessions) {
        let (tmp, app) = testing::setup();
        let config = app.dirs.config_file();
        std::fs::create_dir_all(config.parent().unwrap()).unwrap();
        std::fs::write(&config, "[approval]\nshell = \"always\"\n").unwrap();
        let store = app.open_store().await.unwrap();
        let processes = ProcessRuntime::new(app.runtime_config());
        let sessions = Sessions::new(Arc::new(app), processes, store, Replica::new(LEASE_TTL));
        (tmp, sessions)
    }

    /// Another replica on the same database and application.
    fn other_replica(sessions: &Sessions) -> Sessions {
        Sessions::new(
            Arc::clone(&sessions.app),
            sessions.processes.clone(),
            sessions.store.clone(),
            Replica::new(LEASE_TTL),
        )
    }

    /// A new Work session on the scripted model playing `script`.
    async fn open(tmp: &Path, sessions: &Sessions, script: &str) -> Arc<LiveSession> {
        let path = tmp.join(format!("{}.yaml", uuid::Uuid::now_v7()));
        std::fs::write(&path, script).unwrap();
        sessions
            .open(SessionOptions {
                mode: Some(AppMode::Work),
                model: Some(format!("scripted:{}", path.display())),
                ..SessionOptions::default()
            })
            .await
            .unwrap()
            .live
    }

    fn resume(id: SessionId) -> SessionOptions {
        SessionOptions {
            resume: Some(id),
            ..SessionOptions::default()
        }
    }

    /// `id`'s events after `after`, as a client's stream reads them, up to
    /// the first of `kind`.
    async fn until(sessions: &Sessions, id: SessionId, after: u64, kind: &str) -> Vec<StoredEvent> {
        let mut stream = pin!(crate::events::follow(
            sessions.store.clone(),
            Arc::clone(&sessions.bus),
            id,
            after,
        ));
        let read = async {
            let mut seen = Vec::new();
            while let Some(e) = stream.next().await {
                let last = e.kind == kind;
                seen.push(e);
                if last {
                    return seen;
                }
            }
            panic!("the stream ended before {kind}: {seen:?}");
        };
        tokio::time::timeout(Duration::from_secs(60), read)
            .await
            .unwrap_or_else(|_| panic!("no {kind} came"))
    }

    fn data(event: &StoredEvent) -> Value {
        serde_json::from_str(&event.data).unwrap()
    }

    /// Starts `live`'s turn and waits for its approval request: the call
    /// waiting, and the id of the request's event.
    async fn waiting_approval(sessions: &Sessions, live: &Arc<LiveSession>) -> (String, u64) {
        live.start_turn(Some("go".to_owned())).await.unwrap();
        let asked = until(sessions, live.id, 0, "approval_requested").await;
        let last = asked.last().unwrap();
        (data(last)["call_id"].as_str().unwrap().to_owned(), last.id)
    }

    /// Whether `live`'s host is closed: its harness shut down, it runs
    /// nothing more.
    async fn closed(live: &LiveSession) -> bool {
        let ran = live.host.with(|_| Box::pin(async {})).await;
        matches!(ran, Err(HostError::Closed))
    }

    fn denied(reason: &str) -> ApprovalDecision {
        ApprovalDecision::Denied {
            reason: reason.to_owned(),
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn opening_a_live_session_again_returns_its_one_host() {
        let (tmp, sessions) = replica().await;
        let live = open(tmp.path(), &sessions, ANSWERS).await;
        let again = sessions.open(resume(live.id)).await.unwrap();
        assert!(Arc::ptr_eq(&live, &again.live));
        assert_eq!(again.session.id, live.id);
        let found = sessions.live_or_resume(live.id).await.unwrap();
        assert!(Arc::ptr_eq(&live, &found));
        // Released, it is opened again from the store once, however many
        // requests ask for it at the same time.
        sessions.stop(live.id).await;
        let (a, b) = tokio::join!(
            sessions.live_or_resume(live.id),
            sessions.live_or_resume(live.id)
        );
        let (a, b) = (a.unwrap(), b.unwrap());
        assert!(Arc::ptr_eq(&a, &b));
        assert!(!Arc::ptr_eq(&a, &live));
        sessions.stop_all().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_stopped_session_is_closed_and_forgotten_until_asked_for_again() {
        let (tmp, sessions) = replica().await;
        let live = open(tmp.path(), &sessions, ANSWERS).await;
        sessions.stop(live.id).await;
        assert!(!sessions.is_live(live.id));
        assert!(sessions.peek(live.id).is_none());
        assert!(closed(&live).await);
        // The store keeps it: the next request opens it again.
        let reopened = sessions.live_or_resume(live.id).await.unwrap();
        assert!(!Arc::ptr_eq(&live, &reopened));
        assert!(sessions.is_live(live.id));
        sessions.stop_all().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn only_sessions_without_a_turn_or_a_request_are_released() {
        let (tmp, sessions) = replica().await;
        let busy = open(tmp.path(), &sessions, ASKS).await;
        let idle = open(tmp.path(), &sessions, ANSWERS).await;
        let (call, _) = waiting_approval(&sessions, &busy).await;
        // Both were used just now.
        assert_eq!(sessions.release_idle(IDLE_RELEASE).await, []);
        // Idle for any time at all: the one whose turn waits stays.
        assert_eq!(sessions.release_idle(Duration::ZERO).await, [idle.id]);
        assert!(sessions.is_live(busy.id));
        assert!(!sessions.is_live(idle.id));
        assert!(closed(&idle).await);
        assert!(busy.decide(&call, denied("no")));
        assert!(!closed(&busy).await);
        sessions.stop_all().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_message_while_a_turn_runs_is_refused_as_busy() {
        let (tmp, sessions) = replica().await;
        let live = open(tmp.path(), &sessions, ASKS).await;
        let (call, asked) = waiting_approval(&sessions, &live).await;
        for handle in [Arc::clone(&live), sessions.get(live.id).unwrap()] {
            let refused = handle
                .start_turn(Some("again".to_owned()))
                .await
                .unwrap_err();
            assert_eq!(refused.status, StatusCode::CONFLICT);
            assert_eq!(refused.code, "session/busy");
        }
        assert!(live.decide(&call, denied("no")));
        let ended = until(&sessions, live.id, asked, "turn_completed").await;
        // A client that reads the turn's end may send its next message at
        // once.
        live.start_turn(Some("again".to_owned())).await.unwrap();
        let next = until(
            &sessions,
            live.id,
            ended.last().unwrap().id,
            "turn_completed",
        )
        .await;
        assert_eq!(data(next.last().unwrap())["text"], "Again.");
        sessions.stop_all().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_approval_is_decided_once_whichever_client_decides_first() {
        let (tmp, sessions) = replica().await;
        let live = open(tmp.path(), &sessions, ASKS).await;
        let (call, asked) = waiting_approval(&sessions, &live).await;
        let clients = [Arc::clone(&live), sessions.get(live.id).unwrap()];
        let decided: Vec<bool> = std::thread::scope(|s| {
            let deciding: Vec<_> = clients
                .iter()
                .zip(["client 1", "client 2"])
                .map(|(client, reason)| s.spawn(|| client.decide(&call, denied(reason))))
                .collect();
            deciding.into_iter().map(|d| d.join().unwrap()).collect()
        });
        assert_eq!(decided.iter().filter(|d| **d).count(), 1, "{decided:?}");
        let winner = if decided[0] { "client 1" } else { "client 2" };
        let rest = until(&sessions, live.id, asked, "turn_completed").await;
        let decisions: Vec<Value> = rest
            .iter()
            .filter(|e| e.kind == "approval_decided")
            .map(data)
            .collect();
        assert_eq!(decisions.len(), 1, "{decisions:?}");
        assert_eq!(decisions[0]["call_id"], call.as_str());
        assert_eq!(decisions[0]["decision"], "denied");
        assert_eq!(decisions[0]["reason"], winner);
        // Too late for anyone now.
        assert!(!live.decide(&call, ApprovalDecision::Approved));
        sessions.stop_all().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_approval_sent_to_another_replica_reaches_the_turn_through_the_store() {
        let (tmp, sessions) = replica().await;
        let other = other_replica(&sessions);
        let live = open(tmp.path(), &sessions, ASKS).await;
        let (call, asked) = waiting_approval(&sessions, &live).await;
        // The other replica sees the turn wait there, and on nothing else;
        // this one runs it.
        assert!(other.waits_elsewhere(live.id, &call).await.unwrap());
        assert!(!other.waits_elsewhere(live.id, "call_nope").await.unwrap());
        assert!(!sessions.waits_elsewhere(live.id, &call).await.unwrap());
        // What the other replica's API does with a decision for it.
        let body = json!({"decision": "deny", "reason": "from the other replica"});
        sessions
            .store
            .send_signal(
                live.id,
                &evoflux_store::Signal::Approval {
                    call_id: call.clone(),
                    body: body.to_string(),
                },
            )
            .await
            .unwrap();
        sessions.bus().wake_signals(live.id);
        let rest = until(&sessions, live.id, asked, "turn_completed").await;
        let decided = rest
            .iter()
            .find(|e| e.kind == "approval_decided")
            .map(data)
            .expect("the decision never reached the turn");
        assert_eq!(decided["call_id"], call.as_str());
        assert_eq!(decided["reason"], "from the other replica");
        assert_eq!(decided["by"], "user");
        assert!(!other.waits_elsewhere(live.id, &call).await.unwrap());
        sessions.stop_all().await;
        other.stop_all().await;
    }
}
