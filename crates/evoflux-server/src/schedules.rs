//! The scheduler inside `evoflux serve`: every tick compiles the sources
//! the server serves and fires the schedules that are due, each as a new
//! session in the server's store (see `evoflux_app::scheduler`, which
//! keeps the state durable, so a restart neither fires an occurrence twice
//! nor loses one).

use std::sync::Arc;
use std::time::Duration;

use evoflux_app::scheduler::{EngineRunner, Now, Scheduler, TickEvent};
use evoflux_harness::{ProcessRuntime, Store};

use crate::state::ServerState;

/// How often the server looks for due schedules. An occurrence fires at
/// most this late; the finest trigger is a minute.
pub const TICK: Duration = Duration::from_secs(15);

/// The server's scheduler: runs go through the engine, in `store`.
pub fn scheduler(
    app: &evoflux_app::AppContext,
    store: &Store,
    processes: ProcessRuntime,
    now: Arc<dyn Now>,
) -> Scheduler {
    let runner = EngineRunner {
        app: app.clone(),
        store: store.clone(),
        processes: Some(processes),
    };
    Scheduler::new(store.clone(), now, Arc::new(runner))
}

/// Starts the loop; it ends when the returned handle is aborted.
pub fn start(state: Arc<ServerState>, tick: Duration) -> tokio::task::JoinHandle<()> {
    let scheduler = state.scheduler.clone();
    tokio::spawn(async move {
        match scheduler.recover().await {
            Ok(0) => {}
            Ok(n) => tracing::warn!("{n} scheduled runs were cut short by the last stop"),
            Err(e) => tracing::warn!(error = %e, "cannot read the scheduler's state"),
        }
        let mut interval = tokio::time::interval(tick);
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            interval.tick().await;
            // A replica that died mid-run is noticed by the others.
            if let Err(e) = scheduler.recover().await {
                tracing::warn!(error = %e, "cannot look for interrupted scheduled runs");
            }
            let graph = match state.sessions.app().compile(&state.workspaces) {
                Ok(g) if !g.has_errors() => g,
                // The reload loop reports a graph with errors; schedules
                // wait for one that compiles.
                Ok(_) | Err(_) => continue,
            };
            match scheduler.tick(&graph).await {
                Ok(events) => {
                    for e in events {
                        match e {
                            TickEvent::Armed { name, next } => {
                                tracing::info!(schedule = %name, next = %next, "schedule armed");
                            }
                            TickEvent::Started { name, run } => {
                                tracing::info!(schedule = %name, run, "scheduled run started");
                            }
                            TickEvent::Recorded { name, run, status } => {
                                tracing::info!(schedule = %name, run, ?status, "occurrence recorded");
                            }
                        }
                    }
                }
                Err(e) => tracing::warn!(error = %e, "the scheduler cannot reach the store"),
            }
        }
    })
}
