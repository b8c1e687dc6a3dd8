#![allow(clippy::unwrap_used, clippy::expect_used)]

//! The scheduler inside the real server, on a loopback port, with a clock
//! the test moves: a schedule that runs every minute fires once per
//! minute as a session through the engine (the scripted model answers),
//! its history is served over `/api/scheduler`, and a restarted server
//! neither fires an occurrence again nor loses the next one.

use crate::common;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use common::{Running, TOKEN, setup};
use evoflux_app::AppContext;
use evoflux_app::scheduler::ManualNow;
use serde_json::Value;

/// Serves `app` with its scheduler on the clock `now`, ticking every 50 ms.
async fn start(app: &AppContext, now: Arc<ManualNow>) -> Running {
    common::start(app, |options| {
        options.schedule_clock = now;
        options.schedule_tick = Duration::from_millis(50);
    })
    .await
}

async fn get(server: &Running, path: &str) -> Value {
    reqwest::Client::new()
        .get(format!("{}{path}", server.url()))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// The history once it has `n` runs that ended (waiting for the ticks).
async fn runs_when(server: &Running, n: usize) -> Vec<Value> {
    for _ in 0..200 {
        let history = get(server, "/api/scheduler/minutely/history").await;
        let runs = history["runs"].as_array().cloned().unwrap_or_default();
        let ended = runs.iter().filter(|r| r["finished_at_ms"].is_i64()).count();
        if ended >= n {
            return runs;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no {n} finished runs");
}

/// The user's `minutely` schedule ("Write the minute's note" every
/// minute) and a scripted default model that answers with `turns_yaml`.
fn minutely_schedule(app: &AppContext, tmp: &Path, turns_yaml: &str) {
    let config = app.dirs.config_dir();
    std::fs::create_dir_all(config.join("schedules")).unwrap();
    let script = tmp.join("model.yaml");
    std::fs::write(&script, turns_yaml).unwrap();
    std::fs::write(
        config.join("config.toml"),
        format!("[model]\ndefault = \"scripted:{}\"\n", script.display()),
    )
    .unwrap();
    std::fs::write(
        config.join("schedules/minutely.toml"),
        "every = \"1m\"\nprompt = \"Write the minute's note\"\n",
    )
    .unwrap();
}

fn at(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_minutely_schedule_fires_once_per_minute_across_a_restart() {
    let (tmp, app) = setup();
    minutely_schedule(
        &app,
        tmp.path(),
        "turns:\n  - expect: {user: \"Write the minute's note\"}\n    reply: {text: noted}\n",
    );

    let now = Arc::new(ManualNow::new(at("2026-12-02T09:00:00Z")));
    let server = start(&app, Arc::clone(&now)).await;
    // Armed at the first tick: due a minute after it was first seen.
    let mut armed = Value::Null;
    for _ in 0..200 {
        armed = get(&server, "/api/scheduler/minutely").await;
        if armed["schedule"]["next_run_at"].is_string() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        armed["schedule"]["next_run_at"], "2026-12-02T09:01:00+00:00",
        "{armed}"
    );
    assert!(armed["runs"].as_array().unwrap().is_empty());

    now.set(at("2026-12-02T09:01:05Z"));
    let runs = runs_when(&server, 1).await;
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["status"], "done", "{runs:?}");
    assert_eq!(runs[0]["trigger"], "scheduled");
    // The run is a session of the server's store, answered by the model.
    let session = runs[0]["session_id"].as_str().unwrap().to_owned();
    let shown = get(&server, &format!("/api/sessions/{session}")).await;
    assert_eq!(shown["session"]["id"], session.as_str(), "{shown}");
    // Ticks at the same minute fire nothing more.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(runs_when(&server, 1).await.len(), 1);

    now.set(at("2026-12-02T09:02:01Z"));
    let runs = runs_when(&server, 2).await;
    assert_eq!(runs.len(), 2, "{runs:?}");
    server.stop_and_wait().await;

    // Restarted at the same time: nothing fires twice; the next minute
    // still does.
    let server = start(&app, Arc::clone(&now)).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(runs_when(&server, 2).await.len(), 2);
    now.set(at("2026-12-02T09:03:00Z"));
    let runs = runs_when(&server, 3).await;
    assert_eq!(runs.len(), 3, "{runs:?}");
    let occurrences: Vec<i64> = runs
        .iter()
        .map(|r| r["occurrence_at_ms"].as_i64().unwrap())
        .collect();
    let minute = |m: &str| at(&format!("2026-12-02T09:{m}:00Z")).timestamp_millis();
    assert_eq!(occurrences, [minute("03"), minute("02"), minute("01")]);
    server.stop_and_wait().await;
}

/// Runs of `name` (newest first) once `n` of them ended.
async fn ended_runs(server: &Running, name: &str, n: usize) -> Vec<Value> {
    for _ in 0..400 {
        let history = get(server, &format!("/api/scheduler/{name}/history?limit=1000")).await;
        let runs = history["runs"].as_array().cloned().unwrap_or_default();
        if runs.iter().filter(|r| r["finished_at_ms"].is_i64()).count() >= n {
            return runs;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("no {n} finished runs of {name}");
}

/// Two servers on one PostgreSQL database, their schedulers ticking on
/// the same clock: a schedule due every minute for thirty minutes fires
/// exactly thirty times between them, each occurrence once; stopped
/// while ten more pass, it fires once on recovery and records the rest
/// missed.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_replicas_fire_each_occurrence_exactly_once() {
    let (tmp, mut app) = setup();
    let Some(evoflux_store::Database::Postgres(url)) =
        evoflux_store::testing::postgres_database().await
    else {
        return;
    };
    app.database_url = Some(url.expose().to_owned());
    minutely_schedule(&app, tmp.path(), "turns:\n  - reply: {text: noted}\n");

    let start_at = at("2026-12-02T09:00:00Z");
    let now = Arc::new(ManualNow::new(start_at));
    let one = start(&app, Arc::clone(&now)).await;
    let two = start(&app, Arc::clone(&now)).await;
    for _ in 0..200 {
        let armed = get(&one, "/api/scheduler/minutely").await;
        if armed["schedule"]["next_run_at"].is_string() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    for minute in 1..=30 {
        now.set(start_at + chrono::Duration::seconds(60 * minute + 1));
        let runs = ended_runs(
            if minute % 2 == 0 { &one } else { &two },
            "minutely",
            minute as usize,
        )
        .await;
        assert_eq!(runs.len(), minute as usize, "minute {minute}: {runs:#?}");
        // Both schedulers tick a few times at this minute.
        tokio::time::sleep(Duration::from_millis(60)).await;
    }
    let runs = ended_runs(&one, "minutely", 30).await;
    assert_eq!(runs.len(), 30);
    let mut occurrences: Vec<i64> = runs
        .iter()
        .map(|r| r["occurrence_at_ms"].as_i64().unwrap())
        .collect();
    occurrences.sort_unstable();
    let want: Vec<i64> = (1..=30)
        .map(|m| (start_at + chrono::Duration::seconds(60 * m)).timestamp_millis())
        .collect();
    assert_eq!(occurrences, want);
    assert!(runs.iter().all(|r| r["status"] == "done"), "{runs:#?}");
    let sessions: std::collections::BTreeSet<&str> = runs
        .iter()
        .map(|r| r["session_id"].as_str().unwrap())
        .collect();
    assert_eq!(sessions.len(), 30, "one session per occurrence");
    one.stop_and_wait().await;
    two.stop_and_wait().await;

    // Ten minutes pass with no replica up; both come back.
    now.set(start_at + chrono::Duration::seconds(60 * 40 + 1));
    let one = start(&app, Arc::clone(&now)).await;
    let two = start(&app, Arc::clone(&now)).await;
    let runs = ended_runs(&two, "minutely", 32).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let runs_after = ended_runs(&one, "minutely", 32).await;
    assert_eq!(runs.len(), 32, "{runs:#?}");
    assert_eq!(runs_after.len(), 32, "{runs_after:#?}");
    let statuses: Vec<&str> = runs[..2]
        .iter()
        .map(|r| r["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["done", "missed"], "{runs:#?}");
    one.stop_and_wait().await;
    two.stop_and_wait().await;
}
