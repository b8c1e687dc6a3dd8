//! The scheduler with an injected clock and a stand-in runner: occurrences
//! fire on time, overlap skips or queues, missed occurrences follow the
//! policy, and a restart neither fires one twice nor loses one.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use chrono::{DateTime, Utc};
use evoflux_app::scheduler::{ManualNow, RunFailure, Scheduler, TaskRunner, TickEvent};
use evoflux_core::ids::{Ids, SessionId};
use evoflux_graph::schedule::ScheduleDefinition;
use evoflux_graph::{CompiledGraph, RootOptions};
use evoflux_store::{RunStatus, RunTrigger, Store};
use futures_util::future::BoxFuture;
use tokio::sync::Semaphore;

/// Counts runs; each waits for a permit when `gate` is set.
struct Runner {
    runs: AtomicUsize,
    ids: Ids,
    gate: Option<Arc<Semaphore>>,
}

impl TaskRunner for Runner {
    fn run<'a>(
        &'a self,
        _name: &'a str,
        schedule: &'a ScheduleDefinition,
    ) -> BoxFuture<'a, Result<SessionId, RunFailure>> {
        Box::pin(async move {
            if let Some(gate) = &self.gate {
                gate.acquire().await.unwrap().forget();
            }
            self.runs.fetch_add(1, Ordering::SeqCst);
            if schedule.prompt == "fail" {
                return Err(RunFailure {
                    session: None,
                    message: "the model is down".into(),
                });
            }
            Ok(self.ids.session_id())
        })
    }
}

fn runner(gate: Option<Arc<Semaphore>>) -> Arc<Runner> {
    Arc::new(Runner {
        runs: AtomicUsize::new(0),
        ids: Ids::sequential(),
        gate,
    })
}

fn graph(dir: &Path, schedules: &[(&str, &str)]) -> CompiledGraph {
    let config = dir.join("config");
    let _ = std::fs::remove_dir_all(config.join("schedules"));
    std::fs::create_dir_all(config.join("schedules")).unwrap();
    for (name, text) in schedules {
        std::fs::write(config.join(format!("schedules/{name}.toml")), text).unwrap();
    }
    let g = evoflux_graph::compile_standard(&RootOptions {
        user_config_dir: Some(config),
        ..RootOptions::default()
    })
    .unwrap();
    assert!(!g.has_errors(), "{:?}", g.diagnostics);
    g
}

fn at(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

fn started(events: &[TickEvent]) -> usize {
    events
        .iter()
        .filter(|e| matches!(e, TickEvent::Started { .. }))
        .count()
}

#[tokio::test]
async fn an_interval_fires_on_time_and_records_each_run() {
    let t = tempfile::tempdir().unwrap();
    let store = Store::open(t.path().join("data")).await.unwrap();
    let g = graph(
        t.path(),
        &[("tick", "every = \"1m\"\nprompt = \"hello\"\n")],
    );
    let clock = Arc::new(ManualNow::new(at("2026-12-01T10:00:00Z")));
    let r = runner(None);
    let s = Scheduler::new(store.clone(), clock.clone(), r.clone());
    let ev = s.tick(&g).await.unwrap();
    assert_eq!(
        ev,
        [TickEvent::Armed {
            name: "tick".into(),
            next: at("2026-12-01T10:01:00Z")
        }]
    );
    clock.set(at("2026-12-01T10:00:59Z"));
    assert!(s.tick(&g).await.unwrap().is_empty(), "not yet");
    clock.set(at("2026-12-01T10:01:00Z"));
    assert_eq!(started(&s.tick(&g).await.unwrap()), 1);
    s.drain().await;
    // The next occurrence is anchored to the last one, not to the tick.
    clock.set(at("2026-12-01T10:02:10Z"));
    assert_eq!(started(&s.tick(&g).await.unwrap()), 1);
    s.drain().await;
    assert_eq!(r.runs.load(Ordering::SeqCst), 2);
    let runs = store.schedule_runs("tick", 10).await.unwrap();
    assert_eq!(runs.len(), 2);
    for run in &runs {
        assert_eq!(run.status, RunStatus::Done);
        assert_eq!(run.trigger, RunTrigger::Scheduled);
        assert!(run.session_id.is_some(), "each run names its session");
    }
    assert_eq!(
        runs[0].occurrence_at_ms,
        at("2026-12-01T10:02:00Z").timestamp_millis()
    );
}

#[tokio::test]
async fn overlap_skips_or_queues_while_the_previous_run_works() {
    for (policy, expected) in [("skip", RunStatus::Skipped), ("queue", RunStatus::Queued)] {
        let t = tempfile::tempdir().unwrap();
        let store = Store::open(t.path().join("data")).await.unwrap();
        let g = graph(
            t.path(),
            &[(
                "slow",
                &format!("every = \"1m\"\nprompt = \"p\"\noverlap = \"{policy}\"\n"),
            )],
        );
        let clock = Arc::new(ManualNow::new(at("2026-12-01T10:00:00Z")));
        let gate = Arc::new(Semaphore::new(0));
        let r = runner(Some(gate.clone()));
        let s = Scheduler::new(store.clone(), clock.clone(), r.clone());
        s.tick(&g).await.unwrap();
        clock.set(at("2026-12-01T10:01:00Z"));
        assert_eq!(started(&s.tick(&g).await.unwrap()), 1);
        clock.set(at("2026-12-01T10:02:00Z"));
        let ev = s.tick(&g).await.unwrap();
        assert!(
            matches!(&ev[..], [TickEvent::Recorded { status, .. }] if *status == expected),
            "{policy}: {ev:?}"
        );
        gate.add_permits(2);
        s.drain().await;
        let runs = store.schedule_runs("slow", 10).await.unwrap();
        let statuses: Vec<RunStatus> = runs.iter().map(|r| r.status).collect();
        match policy {
            "skip" => {
                assert_eq!(statuses, [RunStatus::Skipped, RunStatus::Done]);
                assert_eq!(r.runs.load(Ordering::SeqCst), 1);
            }
            _ => {
                assert_eq!(
                    statuses,
                    [RunStatus::Done, RunStatus::Done],
                    "the queued run ran"
                );
                assert_eq!(r.runs.load(Ordering::SeqCst), 2);
            }
        }
    }
}

#[tokio::test]
async fn a_restart_neither_fires_twice_nor_loses_an_occurrence() {
    let t = tempfile::tempdir().unwrap();
    let data = t.path().join("data");
    let g = graph(t.path(), &[("tick", "every = \"1h\"\nprompt = \"p\"\n")]);
    let clock = Arc::new(ManualNow::new(at("2026-12-01T10:00:00Z")));
    let r = runner(None);
    {
        let s = Scheduler::new(Store::open(&data).await.unwrap(), clock.clone(), r.clone());
        s.tick(&g).await.unwrap();
        clock.set(at("2026-12-01T11:00:00Z"));
        assert_eq!(started(&s.tick(&g).await.unwrap()), 1);
        s.drain().await;
    }
    // A new process at the same instant: the occurrence is not fired again.
    let store = Store::open(&data).await.unwrap();
    let s = Scheduler::new(store.clone(), clock.clone(), r.clone());
    assert_eq!(s.recover().await.unwrap(), 0);
    assert!(s.tick(&g).await.unwrap().is_empty());
    // Down across the next occurrence: it runs once, when the scheduler
    // is back.
    clock.set(at("2026-12-01T12:20:00Z"));
    assert_eq!(started(&s.tick(&g).await.unwrap()), 1);
    s.drain().await;
    assert_eq!(r.runs.load(Ordering::SeqCst), 2);
    // Down across three: the latest runs, two are recorded missed.
    clock.set(at("2026-12-01T15:30:00Z"));
    let ev = s.tick(&g).await.unwrap();
    assert_eq!(started(&ev), 1);
    s.drain().await;
    let runs = store.schedule_runs("tick", 10).await.unwrap();
    assert_eq!(runs[0].status, RunStatus::Done);
    assert_eq!(
        runs[0].occurrence_at_ms,
        at("2026-12-01T15:00:00Z").timestamp_millis()
    );
    assert_eq!(runs[1].status, RunStatus::Missed);
    assert!(
        runs[1]
            .detail
            .as_deref()
            .unwrap()
            .starts_with("2 occurrences")
    );
    assert_eq!(r.runs.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn missed_skip_runs_none_of_what_passed_and_failures_are_recorded() {
    let t = tempfile::tempdir().unwrap();
    let store = Store::open(t.path().join("data")).await.unwrap();
    let g = graph(
        t.path(),
        &[
            (
                "strict",
                "every = \"1h\"\nprompt = \"p\"\nmissed = \"skip\"\n",
            ),
            ("broken", "every = \"1h\"\nprompt = \"fail\"\n"),
            ("off", "every = \"1h\"\nprompt = \"p\"\nenabled = false\n"),
        ],
    );
    let clock = Arc::new(ManualNow::new(at("2026-12-01T10:00:00Z")));
    let r = runner(None);
    let s = Scheduler::new(store.clone(), clock.clone(), r.clone());
    s.tick(&g).await.unwrap();
    clock.set(at("2026-12-01T13:30:00Z"));
    let ev = s.tick(&g).await.unwrap();
    s.drain().await;
    let strict = store.schedule_runs("strict", 10).await.unwrap();
    assert_eq!(strict.len(), 1);
    assert_eq!(strict[0].status, RunStatus::Missed);
    assert!(
        strict[0]
            .detail
            .as_deref()
            .unwrap()
            .starts_with("3 occurrences")
    );
    let broken = store.schedule_runs("broken", 10).await.unwrap();
    assert_eq!(broken[0].status, RunStatus::Failed);
    assert_eq!(broken[0].detail.as_deref(), Some("the model is down"));
    assert!(store.schedule_runs("off", 10).await.unwrap().is_empty());
    assert_eq!(started(&ev), 1, "only `broken` ran: {ev:?}");
    // The next future occurrence of `strict` runs on time.
    clock.set(at("2026-12-01T14:00:00Z"));
    let ev = s.tick(&g).await.unwrap();
    s.drain().await;
    assert!(
        ev.iter()
            .any(|e| matches!(e, TickEvent::Started { name, .. } if name == "strict")),
        "{ev:?}"
    );
    // A changed trigger starts over from now.
    let g = graph(
        t.path(),
        &[(
            "strict",
            "every = \"2h\"\nprompt = \"p\"\nmissed = \"skip\"\n",
        )],
    );
    let ev = s.tick(&g).await.unwrap();
    assert_eq!(
        ev,
        [TickEvent::Armed {
            name: "strict".into(),
            next: at("2026-12-01T16:00:00Z")
        }]
    );
    // Run now runs a disabled schedule too, and records it as manual.
    let off = evoflux_app::scheduler::schedules(&graph(
        t.path(),
        &[("off", "every = \"1h\"\nprompt = \"p\"\nenabled = false\n")],
    ));
    let run = s.run_now("off", &off[0].1).await.unwrap();
    assert_eq!(
        (run.trigger, run.status),
        (RunTrigger::Manual, RunStatus::Done)
    );
}

#[tokio::test]
async fn a_one_off_runs_once_even_when_first_seen_just_after_its_time() {
    let t = tempfile::tempdir().unwrap();
    let store = Store::open(t.path().join("data")).await.unwrap();
    let g = graph(
        t.path(),
        &[("once", "at = \"2026-12-01T10:00:00Z\"\nprompt = \"p\"\n")],
    );
    let clock = Arc::new(ManualNow::new(at("2026-12-01T10:00:05Z")));
    let r = runner(None);
    let s = Scheduler::new(store.clone(), clock.clone(), r.clone());
    s.tick(&g).await.unwrap();
    assert_eq!(started(&s.tick(&g).await.unwrap()), 1);
    s.drain().await;
    clock.set(at("2026-12-02T10:00:00Z"));
    assert!(s.tick(&g).await.unwrap().is_empty(), "once only");
    assert!(s.tick(&g).await.unwrap().is_empty());
    assert_eq!(r.runs.load(Ordering::SeqCst), 1);
}
