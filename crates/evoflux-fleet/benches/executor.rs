//! Executor overhead per node (issue 19 asks for it): a 200-node plan of
//! read-only agent steps (no boundary, so no git) run with an instant
//! no-op agent runner, once with an in-memory journal (the scheduler and
//! receipts alone) and once with the file journal (plus an fsync per
//! journal entry, two per node). A third figure runs a 20-node chain of
//! v4 workspace steps in a real git repository, to show what write-boundary
//! enforcement (two snapshots and a diff per node) costs. Prints medians;
//! asserts nothing about time.
//!
//! `cargo bench -p evoflux-fleet --bench executor`
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use evoflux_core::Diagnostics;
use evoflux_fleet::run::{
    AgentError, AgentOutcome, AgentRequest, AgentRunner, Executor, ExecutorConfig, FileJournal,
    MemoryJournal, ProcessCommandRunner, RunFuture, RunJournal, RunStatus,
};
use evoflux_fleet::{ExecutionPlan, compile_fleet_plan, parse_fleet_contract};

const NODES: usize = 200;
const RUNS: usize = 21;
const GIT_NODES: usize = 20;
const GIT_RUNS: usize = 3;

/// Answers at once, touching nothing.
#[derive(Debug)]
struct Instant0;

impl AgentRunner for Instant0 {
    fn run_agent<'a>(
        &'a self,
        _request: &'a AgentRequest,
    ) -> RunFuture<'a, Result<AgentOutcome, AgentError>> {
        Box::pin(async {
            Ok(AgentOutcome {
                output: "ok".to_owned(),
                contract_met: true,
                ..AgentOutcome::default()
            })
        })
    }
}

/// `n` steps, each depending on the one or two before it; `version` 1
/// read-only, or 4 workspace steps each writing its own file.
fn plan(n: usize, workspace: bool, max_workers: u32) -> ExecutionPlan {
    let version = if workspace { 4 } else { 1 };
    let mut yaml = format!(
        "version: {version}\nname: bench\nmaxWorkers: {max_workers}\nonFailure: continue\nsteps:\n"
    );
    for i in 0..n {
        let deps = match i {
            0 => String::new(),
            1 => "s0".to_owned(),
            _ if workspace => format!("s{}", i - 1),
            _ => format!("s{}, s{}", i - 1, i - 2),
        };
        if workspace {
            yaml.push_str(&format!(
                "  - {{id: s{i}, agent: coder, scope: workspace, writes: [out/{i}.txt], dependencies: [{deps}]}}\n"
            ));
        } else {
            yaml.push_str(&format!(
                "  - {{id: s{i}, agent: scout, scope: readonly, dependencies: [{deps}]}}\n"
            ));
        }
    }
    let text = format!("---\n{yaml}---\nBench.\n");
    let mut diags = Diagnostics::new();
    let contract = parse_fleet_contract(Path::new("fleets/bench.md"), &text, &mut diags)
        .unwrap_or_else(|| panic!("{}", diags.render_human()));
    compile_fleet_plan(&contract, &BTreeMap::new()).unwrap()
}

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

fn run_once(
    rt: &tokio::runtime::Runtime,
    plan: &ExecutionPlan,
    journal: Arc<dyn RunJournal>,
    dir: &Path,
    run_id: &str,
    agent: Arc<dyn AgentRunner>,
) -> Duration {
    let ex = Executor::new(
        plan.clone(),
        agent,
        Arc::new(ProcessCommandRunner),
        journal,
        ExecutorConfig::new(dir, dir.join(".state")),
    );
    let start = Instant::now();
    let report = rt.block_on(ex.run(run_id)).unwrap();
    let took = start.elapsed();
    assert_eq!(report.status, RunStatus::Succeeded);
    took
}

/// Writes its node's one allowed file.
#[derive(Debug)]
struct Writer;

impl AgentRunner for Writer {
    fn run_agent<'a>(
        &'a self,
        request: &'a AgentRequest,
    ) -> RunFuture<'a, Result<AgentOutcome, AgentError>> {
        Box::pin(async move {
            let dir = request.workdir.join("out");
            std::fs::create_dir_all(&dir).unwrap();
            let name = request.node.id.trim_start_matches('s');
            std::fs::write(dir.join(format!("{name}.txt")), "x\n").unwrap();
            Ok(AgentOutcome {
                contract_met: true,
                ..AgentOutcome::default()
            })
        })
    }
}

fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .unwrap()
        .status
        .success();
    assert!(ok, "git {args:?}");
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let tmp = tempfile::tempdir().unwrap();

    println!("executor overhead, {NODES}-node plan, instant no-op agent, median of {RUNS}:");
    for workers in [1, 4] {
        let p = plan(NODES, false, workers);
        let mem: Vec<Duration> = (0..RUNS)
            .map(|i| {
                run_once(
                    &rt,
                    &p,
                    Arc::new(MemoryJournal::new()),
                    tmp.path(),
                    &format!("m{workers}-{i}"),
                    Arc::new(Instant0),
                )
            })
            .collect();
        let journal_dir = tmp.path().join(format!("journal-{workers}"));
        let file: Vec<Duration> = (0..RUNS)
            .map(|i| {
                run_once(
                    &rt,
                    &p,
                    Arc::new(FileJournal::new(&journal_dir)),
                    tmp.path(),
                    &format!("f{workers}-{i}"),
                    Arc::new(Instant0),
                )
            })
            .collect();
        let (m, f) = (median(mem), median(file));
        println!(
            "  maxWorkers {workers}: memory journal {m:?} ({:?}/node); file journal with fsync {f:?} ({:?}/node)",
            m / NODES as u32,
            f / NODES as u32
        );
    }

    println!(
        "write-boundary enforcement, {GIT_NODES}-node v4 chain in a git repo, median of {GIT_RUNS}:"
    );
    let times: Vec<Duration> = (0..GIT_RUNS)
        .map(|i| {
            let repo = tmp.path().join(format!("repo-{i}"));
            std::fs::create_dir_all(&repo).unwrap();
            std::fs::write(repo.join("README.md"), "r\n").unwrap();
            git(&repo, &["init", "-q"]);
            git(&repo, &["add", "-A"]);
            git(
                &repo,
                &[
                    "-c",
                    "user.name=b",
                    "-c",
                    "user.email=b@x.invalid",
                    "commit",
                    "-qm",
                    "i",
                ],
            );
            let ex = Executor::new(
                plan(GIT_NODES, true, 1),
                Arc::new(Writer),
                Arc::new(ProcessCommandRunner),
                Arc::new(MemoryJournal::new()),
                ExecutorConfig::new(&repo, tmp.path().join(format!("state-{i}"))),
            );
            let start = Instant::now();
            let report = rt.block_on(ex.run("g")).unwrap();
            let took = start.elapsed();
            assert_eq!(report.status, RunStatus::Succeeded);
            took
        })
        .collect();
    let g = median(times);
    println!(
        "  maxWorkers 1 (main checkout): {g:?} ({:?}/node)",
        g / GIT_NODES as u32
    );
}
