//! Eval runner overhead per case: 20 one-step Work evals with the scripted
//! provider, run one at a time and then four at once through
//! `evoflux_app::evals::run`. What is timed is the runner: a scratch
//! store and session per run, the turn, the store read-back and the
//! checks. Prints a JSON report.
//!
//! `cargo bench -p evoflux-app --bench eval_runner`

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::ffi::OsString;
use std::time::Instant;

use evoflux_app::AppContext;
use evoflux_app::evals::{self, RunOptions};
use evoflux_core::dirs::Dirs;

const CASES: usize = 20;

#[tokio::main]
async fn main() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let admin = tmp.path().join("admin");
    let repo = tmp.path().join("repo");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    let dirs = Dirs::resolve(|name| match name {
        "HOME" => Some(OsString::from(&home)),
        "EVOFLUX_ADMIN_DIR" => Some(OsString::from(&admin)),
        _ => None,
    })
    .unwrap();
    let evals_dir = dirs.config_dir().join("evals");
    std::fs::create_dir_all(evals_dir.join("scripts")).unwrap();
    for i in 0..CASES {
        std::fs::write(
            evals_dir.join(format!("case{i}.yaml")),
            format!(
                "prompt: Say hello {i}\nmodel: scripted:scripts/case{i}.yaml\nexpect:\n  text_contains: [hello]\n  max_model_calls: 1\n"
            ),
        )
        .unwrap();
        std::fs::write(
            evals_dir.join(format!("scripts/case{i}.yaml")),
            "turns:\n  - reply: {text: hello}\n",
        )
        .unwrap();
    }
    let app = AppContext {
        dirs,
        home: Some(home),
        cwd: repo,
        trusted_checkouts: Vec::new(),
        remote_agents: None,
        database_url: None,
        artifacts_url: None,
    };
    let graph = app.compile(&[]).unwrap();
    let mut figures = Vec::new();
    for jobs in [1, 4] {
        let started = Instant::now();
        let report = evals::run(
            &app,
            &graph,
            &[],
            &RunOptions {
                jobs,
                ..RunOptions::default()
            },
        )
        .await
        .unwrap();
        let elapsed = started.elapsed().as_secs_f64();
        assert_eq!(report.results.len(), CASES);
        assert!(report.all_passed(), "{:?}", report.results);
        figures.push(format!(
            "\"jobs_{jobs}_ms_per_case\": {:.1}",
            elapsed * 1e3 / CASES as f64
        ));
    }
    println!("{{\"cases\": {CASES}, {}}}", figures.join(", "));
}
