//! Replay speed: a 200-step Work session (20 turns of 9 `ls` calls and an
//! answer) recorded with the scripted provider, exported, and replayed
//! through `evoflux_app::replay`. Prints steps per second of the
//! replay (a fresh scratch store and session included) and the export's
//! time and size. Prints a JSON report.
//!
//! `cargo bench -p evoflux-app --bench replay`

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::ffi::OsString;
use std::fmt::Write as _;
use std::time::Instant;

use evoflux_app::replay::{self, ReplayOptions, Secrets};
use evoflux_app::{AppContext, SessionBuilder, SessionOptions};
use evoflux_core::AppMode;
use evoflux_core::dirs::Dirs;
use evoflux_harness::TurnOptions;

const TURNS: usize = 20;
const CALLS_PER_TURN: usize = 9;

#[tokio::main]
async fn main() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let admin = tmp.path().join("admin");
    let cwd = tmp.path().join("cwd");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&cwd).unwrap();
    let dirs = Dirs::resolve(|name| match name {
        "HOME" => Some(OsString::from(&home)),
        "EVOFLUX_ADMIN_DIR" => Some(OsString::from(&admin)),
        _ => None,
    })
    .unwrap();
    let app = AppContext {
        dirs,
        home: Some(home),
        cwd,
        trusted_checkouts: Vec::new(),
        remote_agents: None,
        database_url: None,
        artifacts_url: None,
    };
    let mut yaml = String::from("turns:\n");
    for _ in 0..TURNS {
        for _ in 0..CALLS_PER_TURN {
            yaml.push_str(
                "  - reply:\n      tool_calls:\n        - {name: ls, arguments: {path: .}}\n",
            );
        }
        yaml.push_str("  - reply: {text: listed}\n");
    }
    let script = tmp.path().join("record.yaml");
    std::fs::write(&script, yaml).unwrap();
    let opened = SessionBuilder::new(
        &app,
        SessionOptions {
            mode: Some(AppMode::Work),
            model: Some(format!("scripted:{}", script.display())),
            ..SessionOptions::default()
        },
    )
    // Commands can run, as in a front end's session and in the replay.
    .processes(evoflux_tools::ProcessRuntime::new(app.runtime_config()))
    .open()
    .await
    .unwrap();
    let mut harness = opened.harness;
    let record = Instant::now();
    for i in 0..TURNS {
        harness
            .turn(
                Some(&format!("list the folder, round {i}")),
                TurnOptions::default(),
            )
            .await
            .unwrap();
    }
    let record_s = record.elapsed().as_secs_f64();
    let id = harness.session().id;
    harness.shutdown().await;
    let store = evoflux_store::Store::open(app.dirs.data_dir())
        .await
        .unwrap();
    let export = Instant::now();
    let exported = replay::export(&store, id, &Secrets::default())
        .await
        .unwrap();
    let text = exported.to_yaml().unwrap();
    let export_ms = export.elapsed().as_secs_f64() * 1e3;
    let file = tmp.path().join("exported.yaml");
    std::fs::write(&file, &text).unwrap();
    let mut runs = Vec::new();
    for _ in 0..3 {
        let r = replay::replay(&app, &file, &ReplayOptions::default())
            .await
            .unwrap();
        assert!(r.matched_all(), "{:?}", r.divergence);
        runs.push(r.elapsed.as_secs_f64());
    }
    runs.sort_by(f64::total_cmp);
    let steps = exported.steps();
    let median = runs[runs.len() / 2];
    let mut out = String::new();
    write!(
        out,
        "{{\"steps\": {steps}, \"record_steps_per_s\": {:.0}, \"replay_s_median\": {median:.3}, \
         \"replay_steps_per_s\": {:.0}, \"export_ms\": {export_ms:.1}, \"script_bytes\": {}}}",
        steps as f64 / record_s,
        steps as f64 / median,
        text.len()
    )
    .unwrap();
    println!("{out}");
}
