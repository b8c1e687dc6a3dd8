//! The scheduler: fires the compiled graph's schedules through the session
//! engine. It keeps no state of its own between ticks: each schedule's
//! next run time and every occurrence live in the store, and an
//! occurrence is claimed in the same transaction that moves the next run
//! time, so a restart neither fires one twice nor loses one.
//!
//! A tick compares each enabled schedule's stored next run with the
//! clock. A schedule seen for the first time (or changed) starts from now.
//! When the next run has passed, the occurrence fires, unless the
//! previous run still works (`overlap`: skipped, or queued until it
//! ends). When several passed while nothing ran the scheduler, the latest
//! runs once and the others are recorded missed (`missed = "run-once"`),
//! or all are recorded missed (`missed = "skip"`).

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use evoflux_core::AppMode;
use evoflux_core::ids::SessionId;
use evoflux_graph::schedule::{Missed, Overlap, ScheduleDefinition};
use evoflux_graph::{CompiledGraph, Definition, SlotKind};
use evoflux_store::{Claim, RunTrigger, ScheduleState, Store, StoreError};
use futures_util::future::BoxFuture;

use evoflux_harness::TurnOptions;

use crate::{AppContext, SessionBuilder, SessionOptions};

pub mod enabled;

pub use enabled::{EnabledChange, ScheduleEditError, set_enabled};

/// A schedule's run as [`Scheduler::run_now`] and the history return it,
/// and how it ended.
pub use evoflux_store::{RunStatus, ScheduleRun};

/// The most occurrences one tick counts through (a years-long gap of a
/// one-minute schedule stops counting here).
const MAX_COUNTED_OCCURRENCES: u32 = 100_000;

/// The source of the current instant, injectable for tests.
pub trait Now: Send + Sync + std::fmt::Debug {
    fn now(&self) -> DateTime<Utc>;
}

/// The real clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemNow;

impl Now for SystemNow {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// A clock tests move by hand.
#[derive(Debug)]
pub struct ManualNow(Mutex<DateTime<Utc>>);

impl ManualNow {
    pub fn new(at: DateTime<Utc>) -> ManualNow {
        ManualNow(Mutex::new(at))
    }

    pub fn set(&self, at: DateTime<Utc>) {
        if let Ok(mut now) = self.0.lock() {
            *now = at;
        }
    }
}

impl Now for ManualNow {
    fn now(&self) -> DateTime<Utc> {
        self.0.lock().map_or_else(|_| Utc::now(), |now| *now)
    }
}

/// Why a scheduled task did not complete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunFailure {
    /// The session, when one was opened.
    pub session: Option<SessionId>,
    pub message: String,
}

/// What runs a schedule's task: the session engine, or a test's stand-in.
pub trait TaskRunner: Send + Sync {
    fn run<'a>(
        &'a self,
        name: &'a str,
        schedule: &'a ScheduleDefinition,
    ) -> BoxFuture<'a, Result<SessionId, RunFailure>>;
}

/// Runs a task as a new session through the engine, as `evoflux run`
/// does: no one is there to answer, so a tool that needs approval is
/// denied and a question ends the turn.
#[derive(Debug, Clone)]
pub struct EngineRunner {
    pub app: AppContext,
    pub store: Store,
    pub processes: Option<evoflux_tools::ProcessRuntime>,
}

impl TaskRunner for EngineRunner {
    fn run<'a>(
        &'a self,
        _name: &'a str,
        schedule: &'a ScheduleDefinition,
    ) -> BoxFuture<'a, Result<SessionId, RunFailure>> {
        Box::pin(async move {
            let options = SessionOptions {
                mode: Some(schedule.mode),
                workspaces: match schedule.mode {
                    AppMode::Coding => schedule.workspace.iter().cloned().collect(),
                    AppMode::Work => Vec::new(),
                },
                lead: schedule.lead.clone(),
                model: schedule.model.clone(),
                resume: None,
                limits: Default::default(),
            };
            // The data directory is pruned when it is due before the
            // scheduled session opens.
            self.app.prune_if_due(&self.store).await;
            let mut builder = SessionBuilder::new(&self.app, options).store(self.store.clone());
            if let Some(p) = &self.processes {
                builder = builder.processes(p.clone());
            }
            let opened = builder.open().await.map_err(|e| RunFailure {
                session: None,
                message: format!("{e} ({})", e.code()),
            })?;
            let mut harness = opened.harness;
            let id = harness.session().id;
            match harness
                .turn(Some(&schedule.prompt), TurnOptions::default())
                .await
            {
                Ok(outcome) => match outcome.status {
                    evoflux_harness::TurnStatus::Completed => Ok(id),
                    other => Err(RunFailure {
                        session: Some(id),
                        message: format!("the turn ended {}", other.as_str()),
                    }),
                },
                Err(e) => Err(RunFailure {
                    session: Some(id),
                    message: format!("{e} ({})", e.code()),
                }),
            }
        })
    }
}

/// What one tick did to one schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TickEvent {
    /// First seen (or changed): its next run is set.
    Armed { name: String, next: DateTime<Utc> },
    /// An occurrence started.
    Started { name: String, run: i64 },
    /// An occurrence was recorded without running.
    Recorded {
        name: String,
        run: i64,
        status: RunStatus,
    },
}

/// Fires schedules. Cheap to clone; clones share the runs in flight.
#[derive(Clone)]
pub struct Scheduler {
    store: Store,
    now: Arc<dyn Now>,
    runner: Arc<dyn TaskRunner>,
    /// Schedules whose run is in flight in this process.
    running: Arc<Mutex<BTreeSet<String>>>,
    /// Runs in flight, so a caller can wait for them.
    tasks: Arc<Mutex<Vec<tokio::task::JoinHandle<()>>>>,
}

impl std::fmt::Debug for Scheduler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scheduler").finish_non_exhaustive()
    }
}

/// The schedule nodes of a graph with their definitions, in slot order.
fn schedule_nodes(
    graph: &CompiledGraph,
) -> impl Iterator<Item = (&evoflux_graph::Node, &ScheduleDefinition)> {
    graph
        .nodes
        .iter()
        .filter(|n| n.slot.kind == SlotKind::Schedule)
        .filter_map(|n| match &n.definition {
            Definition::Schedule(s) => Some((n, s)),
            Definition::Config(_)
            | Definition::Sandbox(_)
            | Definition::Tool(_)
            | Definition::Channel(_)
            | Definition::Connection(_)
            | Definition::Eval(_)
            | Definition::RemoteAgent(_)
            | Definition::Document { .. } => None,
        })
}

/// The schedules of a graph, by name.
pub fn schedules(graph: &CompiledGraph) -> Vec<(String, ScheduleDefinition)> {
    schedule_nodes(graph)
        .map(|(n, s)| (n.slot.name.clone(), s.clone()))
        .collect()
}

/// What a stored next run was computed from: a changed trigger makes the
/// stored one stale.
fn trigger_key(schedule: &ScheduleDefinition) -> String {
    serde_json::to_string(&schedule.trigger).unwrap_or_default()
}

impl Scheduler {
    pub fn new(store: Store, now: Arc<dyn Now>, runner: Arc<dyn TaskRunner>) -> Scheduler {
        Scheduler {
            store,
            now,
            runner,
            running: Arc::new(Mutex::new(BTreeSet::new())),
            tasks: Arc::new(Mutex::new(Vec::new())),
        }
    }

    /// Marks the runs a stopped process left running as interrupted (the
    /// ones their runner no longer keeps alive: runs of other live
    /// replicas are left alone). Every replica calls it at start and on
    /// every tick, so a replica that dies mid-run is noticed.
    pub async fn recover(&self) -> Result<u64, StoreError> {
        self.store.interrupt_running_runs().await
    }

    /// One pass over `graph`'s schedules.
    pub async fn tick(&self, graph: &CompiledGraph) -> Result<Vec<TickEvent>, StoreError> {
        let mut events = Vec::new();
        for (name, schedule) in schedules(graph) {
            self.tick_one(&name, &schedule, &mut events).await?;
        }
        Ok(events)
    }

    async fn tick_one(
        &self,
        name: &str,
        schedule: &ScheduleDefinition,
        events: &mut Vec<TickEvent>,
    ) -> Result<(), StoreError> {
        if !schedule.enabled {
            return self.store.clear_schedule_state(name).await;
        }
        let now = self.now.now();
        let key = trigger_key(schedule);
        let state = self.store.schedule_state(name).await?;
        let next = match state {
            Some(ScheduleState {
                trigger_key,
                next_run_at_ms,
            }) if trigger_key == key => match next_run_at_ms {
                Some(next) => DateTime::<Utc>::from_timestamp_millis(next),
                // No occurrence is left (a one-off that ran).
                None => return Ok(()),
            },
            Some(_) | None => None,
        };
        let Some(next) = next else {
            // New or changed: it starts from now. A one-off keeps its time
            // even when that has just passed (written less than a tick
            // before it), so it still runs once.
            let next = match &schedule.trigger {
                evoflux_graph::schedule::Trigger::At { at } => DateTime::parse_from_rfc3339(at)
                    .ok()
                    .map(|t| t.with_timezone(&Utc)),
                evoflux_graph::schedule::Trigger::Cron { .. }
                | evoflux_graph::schedule::Trigger::Every { .. } => {
                    schedule.trigger.next_after(now)
                }
            };
            self.store
                .set_schedule_state(
                    name,
                    &ScheduleState {
                        trigger_key: key,
                        next_run_at_ms: next.map(|t| t.timestamp_millis()),
                    },
                )
                .await?;
            if let Some(next) = next {
                events.push(TickEvent::Armed {
                    name: name.to_owned(),
                    next,
                });
            }
            return Ok(());
        };
        if next > now {
            return Ok(());
        }
        // Every occurrence that has passed, the latest last.
        let mut latest = next;
        let mut passed: u32 = 1;
        while passed < MAX_COUNTED_OCCURRENCES {
            match schedule.trigger.next_after(latest) {
                Some(n) if n <= now => {
                    latest = n;
                    passed += 1;
                }
                Some(_) | None => break,
            }
        }
        let following = ScheduleState {
            trigger_key: key,
            next_run_at_ms: schedule
                .trigger
                .next_after(latest)
                .map(|t| t.timestamp_millis()),
        };
        let missed = match schedule.missed {
            Missed::RunOnce => passed - 1,
            Missed::Skip if passed > 1 => passed,
            Missed::Skip => 0,
        };
        if missed > 0 {
            let detail = format!(
                "{missed} occurrence{} from {} passed while the scheduler was not running",
                if missed == 1 { "" } else { "s" },
                next.to_rfc3339()
            );
            let moves = (missed == passed).then_some(&following);
            if let Some(run) = self
                .store
                .claim_occurrence(
                    &Claim {
                        name,
                        occurrence_at_ms: next.timestamp_millis(),
                        trigger: RunTrigger::Scheduled,
                        status: RunStatus::Missed,
                        detail: Some(detail),
                    },
                    moves,
                )
                .await?
            {
                events.push(TickEvent::Recorded {
                    name: name.to_owned(),
                    run,
                    status: RunStatus::Missed,
                });
            }
            if missed == passed {
                return Ok(());
            }
        }
        // Overlap is judged across replicas: another one's live run of
        // the schedule counts.
        let busy = self.is_running(name) || self.store.has_running_run(name).await?;
        let (status, detail) = match (busy, schedule.overlap) {
            (false, _) => (RunStatus::Running, None),
            (true, Overlap::Skip) => (
                RunStatus::Skipped,
                Some("the previous run was still working".to_owned()),
            ),
            (true, Overlap::Queue) => (RunStatus::Queued, None),
        };
        let Some(run) = self
            .store
            .claim_occurrence(
                &Claim {
                    name,
                    occurrence_at_ms: latest.timestamp_millis(),
                    trigger: RunTrigger::Scheduled,
                    status,
                    detail,
                },
                Some(&following),
            )
            .await?
        else {
            // Claimed before (by an earlier process): only move on.
            self.store.set_schedule_state(name, &following).await?;
            return Ok(());
        };
        match status {
            RunStatus::Running => {
                self.spawn(name, schedule, run);
                events.push(TickEvent::Started {
                    name: name.to_owned(),
                    run,
                });
            }
            RunStatus::Queued
            | RunStatus::Done
            | RunStatus::Failed
            | RunStatus::Skipped
            | RunStatus::Missed
            | RunStatus::Interrupted => events.push(TickEvent::Recorded {
                name: name.to_owned(),
                run,
                status,
            }),
        }
        Ok(())
    }

    fn is_running(&self, name: &str) -> bool {
        self.running.lock().is_ok_and(|r| r.contains(name))
    }

    /// Runs `run` of `name` in the background; when it ends, the oldest
    /// queued run of the schedule starts.
    fn spawn(&self, name: &str, schedule: &ScheduleDefinition, run: i64) {
        if let Ok(mut r) = self.running.lock() {
            r.insert(name.to_owned());
        }
        let this = self.clone();
        let name = name.to_owned();
        let schedule = schedule.clone();
        let handle = tokio::spawn(async move {
            let mut run = run;
            loop {
                this.execute(&name, &schedule, run).await;
                let queued = this
                    .store
                    .schedule_runs(&name, 1000)
                    .await
                    .ok()
                    .and_then(|runs| {
                        runs.into_iter()
                            .filter(|r| r.status == RunStatus::Queued)
                            .min_by_key(|r| r.id)
                    });
                match queued {
                    Some(q) => {
                        let _ = this
                            .store
                            .update_run(q.id, RunStatus::Running, None, None)
                            .await;
                        run = q.id;
                    }
                    None => break,
                }
            }
            if let Ok(mut r) = this.running.lock() {
                r.remove(&name);
            }
        });
        if let Ok(mut tasks) = self.tasks.lock() {
            tasks.retain(|t| !t.is_finished());
            tasks.push(handle);
        }
    }

    /// Runs one claimed run to its end and records how it ended.
    async fn execute(&self, name: &str, schedule: &ScheduleDefinition, run: i64) {
        // Kept alive while it runs, so other replicas leave it alone.
        let keepalive = {
            let store = self.store.clone();
            tokio::spawn(async move {
                loop {
                    if let Err(e) = store.renew_run(run).await {
                        tracing::warn!(run, error = %e, "cannot keep a scheduled run alive");
                    }
                    tokio::time::sleep(evoflux_store::RUN_LEASE / 3).await;
                }
            })
        };
        let result = self.runner.run(name, schedule).await;
        keepalive.abort();
        let recorded = match result {
            Ok(session) => {
                self.store
                    .update_run(run, RunStatus::Done, Some(session), None)
                    .await
            }
            Err(f) => {
                self.store
                    .update_run(run, RunStatus::Failed, f.session, Some(&f.message))
                    .await
            }
        };
        if let Err(e) = recorded {
            tracing::warn!(schedule = name, error = %e, "cannot record the end of a scheduled run");
        }
    }

    /// Runs `name` now, whatever its trigger, and waits for it to end (a
    /// disabled schedule runs too: someone asked for it).
    pub async fn run_now(
        &self,
        name: &str,
        schedule: &ScheduleDefinition,
    ) -> Result<ScheduleRun, StoreError> {
        let run = self.claim_manual(name).await?;
        self.execute(name, schedule, run).await;
        self.run_record(name, run).await
    }

    /// Starts `name` now in the background and returns its run, running;
    /// the history shows how it ends.
    pub async fn start_now(
        &self,
        name: &str,
        schedule: &ScheduleDefinition,
    ) -> Result<ScheduleRun, StoreError> {
        let run = self.claim_manual(name).await?;
        let record = self.run_record(name, run).await?;
        self.spawn(name, schedule, run);
        Ok(record)
    }

    async fn claim_manual(&self, name: &str) -> Result<i64, StoreError> {
        let at = self.now.now().timestamp_millis();
        let mut offset = 0;
        loop {
            let claim = Claim {
                name,
                occurrence_at_ms: at + offset,
                trigger: RunTrigger::Manual,
                status: RunStatus::Running,
                detail: None,
            };
            if let Some(run) = self.store.claim_occurrence(&claim, None).await? {
                return Ok(run);
            }
            // Two manual runs in one millisecond: the next one is later.
            offset += 1;
        }
    }

    async fn run_record(&self, name: &str, run: i64) -> Result<ScheduleRun, StoreError> {
        let runs = self.store.schedule_runs(name, 1000).await?;
        runs.into_iter()
            .find(|r| r.id == run)
            .ok_or(StoreError::Corrupt {
                what: "schedule run",
                detail: format!("run {run} vanished"),
            })
    }

    /// Waits for every run in flight (tests, and a server shutting down).
    pub async fn drain(&self) {
        loop {
            let tasks: Vec<_> = match self.tasks.lock() {
                Ok(mut t) => t.drain(..).collect(),
                Err(_) => return,
            };
            if tasks.is_empty() {
                return;
            }
            for t in tasks {
                let _ = t.await;
            }
        }
    }
}

/// One schedule as the front ends list it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ScheduleRow {
    pub name: String,
    #[serde(flatten)]
    pub schedule: ScheduleDefinition,
    /// The file that defines it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<std::path::PathBuf>,
    /// Whether enabling and disabling it edits its file: it is in the
    /// user's config folder or a repository's (see [`set_enabled`]).
    pub editable: bool,
    /// When it fires next (RFC 3339), once a scheduler has seen it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_run_at: Option<String>,
    /// Its newest run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_run: Option<ScheduleRun>,
}

/// Every schedule of `graph` with its stored next run and newest run.
pub async fn rows(store: &Store, graph: &CompiledGraph) -> Result<Vec<ScheduleRow>, StoreError> {
    let mut out = Vec::new();
    for (node, schedule) in schedule_nodes(graph) {
        let name = node.slot.name.clone();
        let key = trigger_key(schedule);
        let next_run_at = store
            .schedule_state(&name)
            .await?
            .filter(|s| s.trigger_key == key && schedule.enabled)
            .and_then(|s| s.next_run_at_ms)
            .and_then(DateTime::<Utc>::from_timestamp_millis)
            .map(|t| t.to_rfc3339());
        let last_run = store.schedule_runs(&name, 1).await?.into_iter().next();
        let bound = graph.binding(&node.source_id);
        let file = bound.and_then(|b| match &b.binding {
            evoflux_graph::Binding::File { path, .. } => Some(path.clone()),
            evoflux_graph::Binding::Builtin { .. } => None,
        });
        let editable = bound.is_some_and(|b| enabled::editable_file(&name, b).is_ok());
        out.push(ScheduleRow {
            name,
            schedule: schedule.clone(),
            file,
            editable,
            next_run_at,
            last_run,
        });
    }
    Ok(out)
}

/// The folder a user's own schedules go in (`<config>/schedules`), for
/// front ends that say where to add one.
pub fn user_folder(app: &AppContext) -> std::path::PathBuf {
    app.dirs.config_dir().join("schedules")
}

/// Unix milliseconds as RFC 3339 (UTC), for listings.
pub fn rfc3339(ms: i64) -> String {
    DateTime::<Utc>::from_timestamp_millis(ms).map_or_else(|| ms.to_string(), |t| t.to_rfc3339())
}
