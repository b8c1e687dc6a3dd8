#![allow(clippy::unwrap_used, clippy::expect_used)]

//! Export and replay of a session whose calls carried different dates: a
//! session that ran across midnight replays with each call's own date,
//! not one date for all of them. (The binary has no clock to set, so the
//! session is recorded here through [`SessionBuilder`] with a clock the
//! test turns past midnight.)

use std::sync::{Arc, Mutex};

use evoflux_app::replay::{self, ReplayOptions, Secrets};
use evoflux_app::testing::{app, script};
use evoflux_app::{SessionBuilder, SessionOptions};
use evoflux_harness::{Clock, TurnOptions};
use evoflux_tools::ProcessRuntime;

/// A clock the test moves on by hand.
#[derive(Debug)]
struct WallClock(Mutex<String>);

impl WallClock {
    fn set(&self, day: &str) {
        *self.0.lock().unwrap() = day.to_owned();
    }
}

impl Clock for WallClock {
    fn today(&self) -> String {
        self.0.lock().unwrap().clone()
    }
}

#[tokio::test]
async fn a_session_that_crossed_midnight_replays_with_each_call_s_date() {
    let tmp = tempfile::tempdir().unwrap();
    let app = app(tmp.path());
    let model = script(
        tmp.path(),
        "turns:\n  - reply: {text: still the old year}\n  - reply: {text: happy new year}\n",
    );
    let clock = Arc::new(WallClock(Mutex::new("2026-12-31".to_owned())));
    // As every front end opens it: with processes, so with the shell tool.
    let processes = ProcessRuntime::new(app.runtime_config());
    let mut h = SessionBuilder::new(
        &app,
        SessionOptions {
            model: Some(model),
            ..SessionOptions::default()
        },
    )
    .clock(clock.clone())
    .processes(processes.clone())
    .open()
    .await
    .unwrap()
    .harness;
    let id = h.session().id;
    h.turn(Some("what year is it?"), TurnOptions::default())
        .await
        .unwrap();
    clock.set("2027-01-01");
    h.turn(Some("and now?"), TurnOptions::default())
        .await
        .unwrap();
    h.shutdown().await;
    processes.shutdown().await;

    let store = app.open_store().await.unwrap();
    let exported = replay::export(&store, id, &Secrets::default())
        .await
        .unwrap();
    let days: Vec<&str> = exported
        .recording
        .calls
        .iter()
        .map(|c| c.day.as_str())
        .collect();
    assert_eq!(days, ["2026-12-31", "2027-01-01"]);
    let file = tmp.path().join("midnight.yaml");
    std::fs::write(&file, exported.to_yaml().unwrap()).unwrap();

    let report = replay::replay(&app, &file, &ReplayOptions::default())
        .await
        .unwrap();
    assert!(report.divergence.is_none(), "{:?}", report.divergence);
    assert_eq!(report.matched, 2);
    assert_eq!(report.turns, 2);
}
