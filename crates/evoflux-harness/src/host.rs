//! The session host: the one way a front end runs a live session.
//!
//! A [`SessionHost`] owns one open [`Harness`] on a task of its own and is
//! all a front end holds: it submits a message or an answer, decides an
//! approval by call id, cancels, asks for the sources to be applied again,
//! and closes. The server, ACP and the chat all host sessions through it,
//! so a turn behaves the same wherever it is driven:
//!
//! - **One turn at a time.** A submit while a turn runs is refused with
//!   [`HostError::Busy`]; the session's lease ([`crate::lease`]) is taken
//!   before the turn is queued, so a turn another process runs refuses the
//!   submit too, naming who runs it.
//! - **One cancellation path.** [`SessionHost::cancel`] (or a lease lost
//!   mid-turn) goes through [`Harness::turn_or_cancel`], which stops the
//!   turn's commands, ends every open call `cancelled`, says the approval
//!   it waited on was decided, and emits `turn_cancelled`.
//! - **One approval broker per session**, keyed by call id and shared by
//!   every client: the first decision wins, the others get
//!   [`HostError::NoPendingApproval`], and the harness emits
//!   `approval_decided` before the call runs. A front end that asks the
//!   user itself (a terminal, an editor) plugs its asker into the broker,
//!   racing any other client.
//! - **One refresh policy.** Changed sources are applied between turns:
//!   the session is opened again on them before the next turn and
//!   `sources_applied` is emitted; sources that do not open leave the
//!   session on the previous ones with `graph_invalid`.
//! - **One end.** [`SessionHost::close`] returns once the host's task has
//!   stopped: from then on every operation answers [`HostError::Closed`],
//!   and whatever was queued but never ran was refused with its lease
//!   released, rather than dropped with the lease held until it expires.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use evoflux_core::ids::SessionId;
use tokio::sync::{Notify, mpsc, oneshot, watch};

use crate::approval::{
    ApprovalDecision, ApprovalFuture, ApprovalRequest, Approver, Decided, ElicitationAnswer,
    ElicitationAsk, ElicitationFuture, Elicited,
};
use crate::events::EventSink;
use crate::lease::{Holder, LeaseError, SessionLease};
use crate::session::{Harness, ModelClient, TurnEnd, TurnOptions};

/// A boxed future, as the host's callbacks return them.
pub type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

/// Why the host did not do what it was asked.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// A turn runs in this session now.
    #[error(
        "a turn is running; wait for its end (turn_completed, turn_failed or turn_cancelled) or cancel it"
    )]
    Busy,
    /// Another process or replica runs a turn on the session, or its lease
    /// could not be read.
    #[error(transparent)]
    Lease(#[from] LeaseError),
    /// No approval of this call waits for a decision (it was decided, the
    /// turn ended, or there never was one).
    #[error(
        "no approval of call `{call_id}` waits for a decision; it was decided already or its turn ended"
    )]
    NoPendingApproval { call_id: String },
    /// No elicitation of this id waits for an answer.
    #[error("no form `{id}` waits for an answer; it was answered already or its tool call ended")]
    NoPendingElicitation { id: String },
    /// The answer does not fit the form's schema; nothing was sent, the
    /// form still waits.
    #[error("the answer does not fit the form `{id}`: {detail}; correct it and answer again")]
    ElicitationInvalid { id: String, detail: String },
    /// The host was closed.
    #[error("the session is closed")]
    Closed,
    /// The turn itself failed (its `error` and `turn_failed` events were
    /// emitted).
    #[error(transparent)]
    Turn(#[from] crate::error::HarnessError),
    /// The session could not be opened again on its current state (another
    /// process ran turns since); nothing was run.
    #[error("{0}")]
    Reopen(String),
}

impl HostError {
    pub fn code(&self) -> &'static str {
        match self {
            HostError::Busy => "session/busy",
            HostError::Lease(e) => e.code(),
            HostError::NoPendingApproval { .. } => "session/no-pending-approval",
            HostError::NoPendingElicitation { .. } => "session/no-pending-elicitation",
            HostError::ElicitationInvalid { .. } => "session/elicitation-invalid",
            HostError::Closed => "session/stopped",
            HostError::Turn(e) => e.code(),
            HostError::Reopen(_) => REOPEN_FAILED,
        }
    }
}

/// The code of a turn that did not run because the session could not be
/// brought up to date.
pub const REOPEN_FAILED: &str = "session/reopen-failed";

/// Why the front end could not open the session again
/// ([`HostFrontEnd::reopen`]): the stable code of its error and its words.
/// Changed sources that do not open are reported with them
/// (`graph_invalid`); a session another process ran that does not open
/// again refuses the turn ([`HostError::Reopen`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ReopenError {
    pub code: String,
    pub message: String,
}

/// Approvals of one session, keyed by call id and shared by every client
/// of it. The harness asks through it; whoever decides first wins.
pub struct ApprovalBroker {
    pending: Mutex<HashMap<String, oneshot::Sender<Decided>>>,
    /// MCP servers' forms waiting for the user ([`Approver::elicit`]),
    /// keyed by their id, answered the same way: first answer wins.
    forms: Mutex<HashMap<String, (ElicitationAsk, oneshot::Sender<Elicited>)>>,
    /// The front end's own way to ask (a terminal prompt, an editor's
    /// permission request), raced against decisions made through
    /// [`ApprovalBroker::decide`].
    asker: Option<Arc<dyn Approver>>,
    /// The session's cancellation: an asker that answers "cancel" (Ctrl-C
    /// at a terminal's prompt) cancels the turn before its denial lets the
    /// turn go on.
    cancel: Arc<Notify>,
}

impl fmt::Debug for ApprovalBroker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApprovalBroker")
            .field("pending", &self.pending_calls())
            .field("asker", &self.asker.is_some())
            .finish()
    }
}

impl ApprovalBroker {
    fn new(asker: Option<Arc<dyn Approver>>, cancel: Arc<Notify>) -> ApprovalBroker {
        ApprovalBroker {
            pending: Mutex::new(HashMap::new()),
            forms: Mutex::new(HashMap::new()),
            asker,
            cancel,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, oneshot::Sender<Decided>>> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The calls that wait for a decision now.
    pub fn pending_calls(&self) -> Vec<String> {
        let mut calls: Vec<String> = self.lock().keys().cloned().collect();
        calls.sort();
        calls
    }

    /// Decides the approval `call_id` waits on.
    pub fn decide(&self, call_id: &str, decided: Decided) -> Result<(), HostError> {
        let waiting = self.lock().remove(call_id);
        match waiting.map(|tx| tx.send(decided)) {
            Some(Ok(())) => Ok(()),
            Some(Err(_)) | None => Err(HostError::NoPendingApproval {
                call_id: call_id.to_owned(),
            }),
        }
    }

    fn forms(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<String, (ElicitationAsk, oneshot::Sender<Elicited>)>>
    {
        self.forms.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The forms that wait for an answer now.
    pub fn pending_elicitations(&self) -> Vec<ElicitationAsk> {
        let mut forms: Vec<ElicitationAsk> =
            self.forms().values().map(|(ask, _)| ask.clone()).collect();
        forms.sort_by(|a, b| a.id.cmp(&b.id));
        forms
    }

    /// Answers the form `id` waits on. An `accept` whose content does not
    /// fit the schema is refused and the form keeps waiting.
    pub fn answer(&self, id: &str, elicited: Elicited) -> Result<(), HostError> {
        let mut forms = self.forms();
        let Some((ask, _)) = forms.get(id) else {
            return Err(HostError::NoPendingElicitation { id: id.to_owned() });
        };
        if let Err(detail) = ask.check(&elicited.answer) {
            return Err(HostError::ElicitationInvalid {
                id: id.to_owned(),
                detail,
            });
        }
        match forms.remove(id).map(|(_, tx)| tx.send(elicited)) {
            Some(Ok(())) => Ok(()),
            Some(Err(_)) | None => Err(HostError::NoPendingElicitation { id: id.to_owned() }),
        }
    }

    /// Forgets every waiting approval and form (its turn ended without
    /// them).
    fn clear(&self) {
        self.lock().clear();
        self.forms().clear();
    }
}

impl Approver for ApprovalBroker {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> ApprovalFuture<'a> {
        // Registered now, before the session announces the request: a
        // client that decides on `approval_requested` finds it waiting.
        let (tx, rx) = oneshot::channel();
        self.lock().insert(request.call_id.clone(), tx);
        Box::pin(async move {
            let decided = match &self.asker {
                Some(asker) => {
                    tokio::select! {
                        decided = rx => decided.ok(),
                        decided = asker.approve(request) => {
                            if decided.by == crate::approval::DecidedBy::Cancellation {
                                self.cancel.notify_waiters();
                                // Hand control back once, so the turn's
                                // cancellation (checked first) stops it
                                // before the denied call's turn goes on.
                                tokio::task::yield_now().await;
                            }
                            Some(decided)
                        }
                    }
                }
                None => rx.await.ok(),
            };
            self.lock().remove(&request.call_id);
            decided.unwrap_or(Decided {
                decision: ApprovalDecision::Denied {
                    reason: "nobody can decide any more (the session was closed)".to_owned(),
                },
                by: crate::approval::DecidedBy::Cancellation,
            })
        })
    }

    fn elicit<'a>(&'a self, request: &'a ElicitationAsk) -> ElicitationFuture<'a> {
        // Registered now, before the session announces it, as approvals are.
        let (tx, rx) = oneshot::channel();
        self.forms()
            .insert(request.id.clone(), (request.clone(), tx));
        Box::pin(async move {
            let answered = match &self.asker {
                Some(asker) => {
                    tokio::select! {
                        answered = rx => answered.ok(),
                        answered = asker.elicit(request) => Some(answered),
                    }
                }
                None => rx.await.ok(),
            };
            self.forms().remove(&request.id);
            answered.unwrap_or(Elicited {
                answer: ElicitationAnswer::Cancel,
                by: crate::approval::DecidedBy::Cancellation,
            })
        })
    }
}

/// What a hosted harness is wired to: the front end's event sink and the
/// session's approval broker. A harness opened for a host (first, or again
/// on changed sources) is built with exactly these.
#[derive(Debug, Clone)]
pub struct HostWiring {
    events: Arc<dyn EventSink>,
    approvals: Arc<ApprovalBroker>,
    /// What cancels the running turn (the host's, shared with the broker).
    cancel: Arc<Notify>,
}

impl HostWiring {
    /// `asker` is the front end's own way to ask for approvals, if it has
    /// one; without it, approvals wait for [`SessionHost::decide`].
    pub fn new(events: Arc<dyn EventSink>, asker: Option<Arc<dyn Approver>>) -> HostWiring {
        let cancel = Arc::new(Notify::new());
        HostWiring {
            events,
            approvals: Arc::new(ApprovalBroker::new(asker, Arc::clone(&cancel))),
            cancel,
        }
    }

    pub fn events(&self) -> Arc<dyn EventSink> {
        Arc::clone(&self.events)
    }

    pub fn approver(&self) -> Arc<dyn Approver> {
        Arc::clone(&self.approvals) as Arc<dyn Approver>
    }
}

/// What the host asks to open the session again.
#[derive(Debug)]
pub struct Reopen<'a> {
    pub session: SessionId,
    /// Build the harness with these ([`HostWiring::events`],
    /// [`HostWiring::approver`]).
    pub wiring: &'a HostWiring,
    /// Held for the coming turn when the session changed under this host:
    /// the harness opened again is current at it.
    pub lease: Option<&'a SessionLease>,
    /// The model client to keep when the session resolves to the same
    /// model, so its connections (and a scripted model's place in its
    /// script) carry over.
    pub model: ModelClient,
}

/// The front end's part: how it opens its sessions (its store, process
/// runtime, client files), and what it does around a turn's end.
pub trait HostFrontEnd: Send + Sync + fmt::Debug {
    /// Opens the session again as `reopen` says (the application's session
    /// builder does, `evoflux_app::ReopenBuilder`).
    fn reopen<'a>(&'a self, reopen: Reopen<'a>) -> BoxFuture<'a, Result<Harness, ReopenError>>;

    /// Every event of the turn was emitted; the lease is released next. A
    /// sink that writes in batches writes what it holds now, so whoever
    /// takes the lease next reads the whole turn.
    fn turn_emitted(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }

    /// The session takes the next message.
    fn turn_released(&self) {}
}

/// How a host runs.
#[derive(Debug, Clone, Default)]
pub struct HostOptions {
    /// Who takes the session's lease for each turn; `None` runs turns
    /// without one (a front end that holds the lease for the whole
    /// session, or an embedding).
    pub holder: Option<Holder>,
    /// The sources to follow: each change is a [`SessionHost::refresh`].
    /// `None` for a front end that tells the host itself (the server,
    /// whose live reload also recompiles its routes).
    pub sources: Option<crate::sources::SourceWatch>,
}

/// A turn submitted to a host: await [`TurnHandle::ended`] for how it
/// ended, or drop it to let it run.
#[derive(Debug)]
pub struct TurnHandle(oneshot::Receiver<Result<TurnEnd, HostError>>);

impl TurnHandle {
    pub async fn ended(self) -> Result<TurnEnd, HostError> {
        self.0.await.unwrap_or(Err(HostError::Closed))
    }
}

/// Something run on the harness between turns ([`SessionHost::with`]).
type Between = Box<dyn for<'h> FnOnce(&'h mut Harness) -> BoxFuture<'h, ()> + Send>;

/// A submitted turn, as the host's task receives it.
struct Submitted {
    input: Option<String>,
    options: TurnOptions,
    lease: Option<SessionLease>,
    done: oneshot::Sender<Result<TurnEnd, HostError>>,
}

/// Something run on the harness under the session's lease
/// ([`SessionHost::exclusive`]).
struct Exclusive {
    lease: Option<SessionLease>,
    f: Between,
    /// Told once the session is free again, so the caller's next message
    /// is never refused as busy: whether the session could be brought up
    /// to date (`f` ran only then).
    done: oneshot::Sender<Result<(), HostError>>,
}

enum Command {
    Turn(Box<Submitted>),
    Exclusive(Box<Exclusive>),
    With(Between),
    /// Stop taking commands; [`SessionHost::close`] waits for
    /// [`Shared::stopped`].
    Close,
}

#[derive(Debug)]
struct Shared {
    id: SessionId,
    store: evoflux_store::Store,
    wiring: HostWiring,
    options: HostOptions,
    busy: AtomicBool,
    cancel: Arc<Notify>,
    /// Bumped by [`SessionHost::refresh`]; the task applies the sources
    /// before a turn when it moved since it last did.
    generation: AtomicU64,
    /// Set by [`SessionHost::close`] before anything else: no operation
    /// asked from then on is queued.
    closed: AtomicBool,
    /// `true` once the host's task has stopped (closed, forgotten, or
    /// gone with a panic): nothing it was sent will run any more.
    stopped: watch::Sender<bool>,
}

/// One live session and the only way to run it. Cheap to clone; the
/// session closes when [`SessionHost::close`] is called or the last clone
/// is dropped.
#[derive(Debug, Clone)]
pub struct SessionHost {
    shared: Arc<Shared>,
    commands: mpsc::UnboundedSender<Command>,
}

impl SessionHost {
    /// Hosts `harness`, which must have been opened with `wiring`.
    pub fn start(
        harness: Harness,
        wiring: HostWiring,
        front: Arc<dyn HostFrontEnd>,
        options: HostOptions,
    ) -> SessionHost {
        let shared = Arc::new(Shared {
            id: harness.session().id,
            store: harness.store().clone(),
            cancel: Arc::clone(&wiring.cancel),
            wiring,
            options,
            busy: AtomicBool::new(false),
            generation: AtomicU64::new(0),
            closed: AtomicBool::new(false),
            stopped: watch::Sender::new(false),
        });
        let sources = shared.options.sources.clone();
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(run(harness, Arc::clone(&shared), front, rx));
        if let Some(mut sources) = sources {
            // Holds the host only weakly: once every handle is gone (or
            // the host closed), the next change ends it.
            let weak = Arc::downgrade(&shared);
            let handles = tx.downgrade();
            tokio::spawn(async move {
                while sources.changed().await {
                    let (Some(shared), Some(open)) = (weak.upgrade(), handles.upgrade()) else {
                        return;
                    };
                    if open.is_closed() {
                        return;
                    }
                    shared.generation.fetch_add(1, Ordering::SeqCst);
                }
            });
        }
        SessionHost {
            shared,
            commands: tx,
        }
    }

    pub fn id(&self) -> SessionId {
        self.shared.id
    }

    /// Whether a turn runs (or was accepted and is about to).
    pub fn is_busy(&self) -> bool {
        self.shared.busy.load(Ordering::SeqCst)
    }

    /// Submits a message, the answer to the agent's question, or `None` to
    /// continue an interrupted turn. Refused while a turn runs here or,
    /// under the session's lease, anywhere else.
    pub async fn submit(
        &self,
        input: Option<String>,
        options: TurnOptions,
    ) -> Result<TurnHandle, HostError> {
        let lease = self.take().await?;
        let (done, rx) = oneshot::channel();
        let sent = self.commands.send(Command::Turn(Box::new(Submitted {
            input,
            options,
            lease,
            done,
        })));
        if let Err(mpsc::error::SendError(command)) = sent {
            give_back(&self.shared, command).await;
            return Err(HostError::Closed);
        }
        Ok(TurnHandle(rx))
    }

    /// Runs `f` on the session's harness as a turn would run: one at a
    /// time (refused with [`HostError::Busy`] while a turn runs), under the
    /// session's lease, on a session brought up to date — for what a user
    /// does to the session outside a turn (a `!command`).
    pub async fn exclusive<R, F>(&self, f: F) -> Result<R, HostError>
    where
        R: Send + 'static,
        F: for<'h> FnOnce(&'h mut Harness) -> BoxFuture<'h, R> + Send + 'static,
    {
        let lease = self.take().await?;
        let (tx, rx) = oneshot::channel();
        let (done, free) = oneshot::channel();
        let command = Command::Exclusive(Box::new(Exclusive {
            lease,
            f: Box::new(move |harness: &mut Harness| {
                Box::pin(async move {
                    let _ = tx.send(f(harness).await);
                })
            }),
            done,
        }));
        if let Err(mpsc::error::SendError(command)) = self.commands.send(command) {
            give_back(&self.shared, command).await;
            return Err(HostError::Closed);
        }
        free.await.map_err(|_| HostError::Closed)??;
        rx.await.map_err(|_| HostError::Closed)
    }

    /// Refuses what is asked of a closed host.
    fn open(&self) -> Result<(), HostError> {
        match self.shared.closed.load(Ordering::SeqCst) {
            true => Err(HostError::Closed),
            false => Ok(()),
        }
    }

    /// Marks the session busy and takes its lease (when the host has a
    /// holder): what every turn and exclusive operation starts with.
    async fn take(&self) -> Result<Option<SessionLease>, HostError> {
        self.open()?;
        if self
            .shared
            .busy
            .compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst)
            .is_err()
        {
            return Err(HostError::Busy);
        }
        match &self.shared.options.holder {
            Some(holder) => {
                match SessionLease::acquire(&self.shared.store, self.shared.id, holder).await {
                    Ok(lease) => Ok(Some(lease)),
                    Err(e) => {
                        self.shared.busy.store(false, Ordering::SeqCst);
                        Err(e.into())
                    }
                }
            }
            None => Ok(None),
        }
    }

    /// Cancels the running turn; `false` when none runs.
    pub fn cancel(&self) -> bool {
        if !self.is_busy() {
            return false;
        }
        self.shared.cancel.notify_waiters();
        true
    }

    /// Decides the approval `call_id` waits on, for every client.
    pub fn decide(&self, call_id: &str, decided: Decided) -> Result<(), HostError> {
        self.open()?;
        self.shared.wiring.approvals.decide(call_id, decided)
    }

    /// The calls whose approval waits for a decision now.
    pub fn pending_approvals(&self) -> Vec<String> {
        self.shared.wiring.approvals.pending_calls()
    }

    /// Answers the MCP server's form `id` waits on, for every client.
    pub fn answer_elicitation(&self, id: &str, elicited: Elicited) -> Result<(), HostError> {
        self.open()?;
        self.shared.wiring.approvals.answer(id, elicited)
    }

    /// The MCP servers' forms that wait for an answer now.
    pub fn pending_elicitations(&self) -> Vec<ElicitationAsk> {
        self.shared.wiring.approvals.pending_elicitations()
    }

    /// The sources changed: they are applied before the next turn.
    pub fn refresh(&self) {
        self.shared.generation.fetch_add(1, Ordering::SeqCst);
    }

    /// Runs `f` on the session's harness between turns (after the running
    /// one, if any) and returns what it returns.
    pub async fn with<R, F>(&self, f: F) -> Result<R, HostError>
    where
        R: Send + 'static,
        F: for<'h> FnOnce(&'h mut Harness) -> BoxFuture<'h, R> + Send + 'static,
    {
        self.open()?;
        let (tx, rx) = oneshot::channel();
        let command = Command::With(Box::new(move |harness: &mut Harness| {
            Box::pin(async move {
                let _ = tx.send(f(harness).await);
            })
        }));
        self.commands.send(command).map_err(|_| HostError::Closed)?;
        rx.await.map_err(|_| HostError::Closed)
    }

    /// Cancels the running turn, if any, and closes the session (its MCP
    /// servers stop). Returns once the host's task has stopped: every
    /// operation asked from the start of the close answers
    /// [`HostError::Closed`], and one that raced it was refused with its
    /// lease released.
    pub async fn close(&self) {
        self.shared.closed.store(true, Ordering::SeqCst);
        self.cancel();
        // Fails only when the task stopped already.
        let _ = self.commands.send(Command::Close);
        let mut stopped = self.shared.stopped.subscribe();
        // `Shared` holds the sender, so it outlives this wait.
        let _ = stopped.wait_for(|stopped| *stopped).await;
    }
}

/// Tells [`SessionHost::close`] the host's task stopped, however it ends
/// (a panic included).
struct Stopped(Arc<Shared>);

impl Drop for Stopped {
    fn drop(&mut self) {
        self.0.stopped.send_replace(true);
    }
}

/// The host's task: turns one at a time, until it is closed or forgotten.
async fn run(
    harness: Harness,
    shared: Arc<Shared>,
    front: Arc<dyn HostFrontEnd>,
    commands: mpsc::UnboundedReceiver<Command>,
) {
    let stopped = Stopped(Arc::clone(&shared));
    serve(harness, &shared, front, commands).await;
    drop(stopped);
}

/// Runs the commands in order until [`Command::Close`] (or until every
/// handle is gone), then refuses what was queued behind it and shuts the
/// harness down.
async fn serve(
    mut harness: Harness,
    shared: &Shared,
    front: Arc<dyn HostFrontEnd>,
    mut commands: mpsc::UnboundedReceiver<Command>,
) {
    let mut applied = shared.generation.load(Ordering::SeqCst);
    while let Some(command) = commands.recv().await {
        match command {
            Command::Turn(submitted) => {
                let Submitted {
                    input,
                    options,
                    mut lease,
                    done,
                } = *submitted;
                let ended = turn(
                    &mut harness,
                    shared,
                    front.as_ref(),
                    &mut applied,
                    &mut lease,
                    input,
                    options,
                )
                .await;
                free(shared, front.as_ref(), lease).await;
                let _ = done.send(ended);
            }
            Command::Exclusive(exclusive) => {
                let Exclusive { mut lease, f, done } = *exclusive;
                let prepared = bring_up_to_date(
                    &mut harness,
                    shared,
                    front.as_ref(),
                    &mut applied,
                    &mut lease,
                )
                .await;
                if prepared.is_ok() {
                    f(&mut harness).await;
                }
                free(shared, front.as_ref(), lease).await;
                let _ = done.send(prepared);
            }
            Command::With(f) => f(&mut harness).await,
            Command::Close => break,
        }
    }
    // From here a send fails (its sender gives the command back); what
    // was queued before is given back here.
    commands.close();
    while let Some(command) = commands.recv().await {
        give_back(shared, command).await;
    }
    harness.shutdown().await;
}

/// A command the task will never run (the host closed): a turn or an
/// exclusive operation frees the session, releases its lease and is
/// answered [`HostError::Closed`]; anything else is dropped, which its
/// caller hears as `Closed`.
async fn give_back(shared: &Shared, command: Command) {
    let lease = match command {
        Command::Turn(submitted) => {
            let _ = submitted.done.send(Err(HostError::Closed));
            submitted.lease
        }
        Command::Exclusive(exclusive) => {
            let _ = exclusive.done.send(Err(HostError::Closed));
            exclusive.lease
        }
        Command::With(_) | Command::Close => return,
    };
    if let Some(lease) = lease {
        release(lease).await;
    }
    shared.busy.store(false, Ordering::SeqCst);
}

/// What ends every turn and exclusive operation: the front end stores what
/// it emitted, the lease goes, and the session takes the next message.
async fn free(shared: &Shared, front: &dyn HostFrontEnd, lease: Option<SessionLease>) {
    front.turn_emitted().await;
    if let Some(lease) = lease {
        release(lease).await;
    }
    shared.busy.store(false, Ordering::SeqCst);
    front.turn_released();
}

/// Brings the session up to date before it is run under `lease`: opened
/// again when another holder ran it since (the lease is stale) or when its
/// sources changed. Changed sources that do not open leave it on its own
/// (`graph_invalid`); a stale session that does not open is an error.
async fn bring_up_to_date(
    harness: &mut Harness,
    shared: &Shared,
    front: &dyn HostFrontEnd,
    applied: &mut u64,
    lease: &mut Option<SessionLease>,
) -> Result<(), HostError> {
    let stale = match lease.as_mut() {
        Some(lease) => harness.adopt_lease(lease),
        None => false,
    };
    let wanted = shared.generation.load(Ordering::SeqCst);
    let changed = wanted != *applied;
    if stale || changed {
        let reopened = front
            .reopen(Reopen {
                session: shared.id,
                wiring: &shared.wiring,
                lease: lease.as_ref().filter(|_| stale),
                model: harness.model_client(),
            })
            .await;
        match reopened {
            Err(e) if stale => {
                return Err(HostError::Reopen(format!(
                    "another process ran this session since it was opened here, and it cannot be \
                     opened again ({e}); nothing was run"
                )));
            }
            reopened => {
                *applied = wanted;
                match (reopened, changed) {
                    (reopened, true) => {
                        crate::sources::apply(harness, reopened, shared.wiring.events.as_ref())
                            .await;
                    }
                    // Only brought up to date with another holder's turns.
                    (Ok(new), false) => std::mem::replace(harness, new).shutdown().await,
                    (Err(_), false) => {}
                }
            }
        }
    }
    Ok(())
}

/// One turn: the session brought up to date (another holder's turns,
/// changed sources), then run until it ends or is cancelled.
async fn turn(
    harness: &mut Harness,
    shared: &Shared,
    front: &dyn HostFrontEnd,
    applied: &mut u64,
    lease: &mut Option<SessionLease>,
    input: Option<String>,
    options: TurnOptions,
) -> Result<TurnEnd, HostError> {
    if let Err(e) = bring_up_to_date(harness, shared, front, applied, lease).await {
        // A harness that missed another holder's turns must not answer on
        // them: the turn fails without running.
        harness.fail_turn(e.code(), &e.to_string()).await;
        return Err(e);
    }
    let cancelled = shared.cancel.notified();
    tokio::pin!(cancelled);
    cancelled.as_mut().enable();
    let lost = lease.as_ref().map(SessionLease::lost);
    let events = shared.wiring.events();
    let stop = async move {
        match lost {
            Some(lost) => {
                tokio::select! {
                    () = cancelled => {}
                    () = lost => {
                        // This process stalled past its lease and another
                        // took the session: every client hears why.
                        events.emit(&crate::events::Event::Error {
                            code: crate::lease::LEASE_LOST.to_owned(),
                            message: "another process took this session; the turn was stopped"
                                .to_owned(),
                        });
                    }
                }
            }
            None => cancelled.await,
        }
    };
    let ended = harness
        .turn_or_cancel(input.as_deref(), options, stop)
        .await;
    // Whatever still waits belonged to this turn.
    shared.wiring.approvals.clear();
    Ok(ended?)
}

async fn release(lease: SessionLease) {
    if let Err(e) = lease.release().await {
        tracing::warn!(error = %e, "cannot release the session's lease; it expires");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approval::DecidedBy;

    fn ask() -> ElicitationAsk {
        ElicitationAsk {
            session_id: "s".into(),
            id: "c1:elicitation-1".into(),
            call_id: "c1".into(),
            tool: "mcp__every__ask".into(),
            server: "every".into(),
            message: "Who are you?".into(),
            schema: serde_json::json!({
                "type": "object",
                "properties": {"name": {"type": "string"}},
                "required": ["name"]
            }),
        }
    }

    fn accept(content: serde_json::Value) -> Elicited {
        Elicited {
            answer: ElicitationAnswer::Accept {
                content: content.as_object().cloned().unwrap_or_default(),
            },
            by: DecidedBy::User,
        }
    }

    #[tokio::test]
    async fn a_form_waits_in_the_broker_until_an_answer_fits_its_schema() {
        let broker = ApprovalBroker::new(None, Arc::new(Notify::new()));
        let request = ask();
        let answered = broker.elicit(&request);
        assert_eq!(
            broker.pending_elicitations(),
            std::slice::from_ref(&request)
        );
        // A wrong answer is refused and the form keeps waiting.
        let wrong = broker.answer(&request.id, accept(serde_json::json!({"name": 7})));
        assert_eq!(
            wrong.err().map(|e| e.code()),
            Some("session/elicitation-invalid")
        );
        assert_eq!(broker.pending_elicitations().len(), 1);
        let unknown = broker.answer("nope", accept(serde_json::json!({})));
        assert_eq!(
            unknown.err().map(|e| e.code()),
            Some("session/no-pending-elicitation")
        );
        broker
            .answer(&request.id, accept(serde_json::json!({"name": "Ada"})))
            .unwrap();
        let got = answered.await;
        assert_eq!(got, accept(serde_json::json!({"name": "Ada"})));
        assert!(broker.pending_elicitations().is_empty());
    }

    #[tokio::test]
    async fn a_form_left_when_its_turn_ends_is_cancelled() {
        let broker = ApprovalBroker::new(None, Arc::new(Notify::new()));
        let request = ask();
        let answered = broker.elicit(&request);
        broker.clear();
        let got = answered.await;
        assert_eq!(got.answer, ElicitationAnswer::Cancel);
        assert_eq!(got.by, DecidedBy::Cancellation);
    }
}
