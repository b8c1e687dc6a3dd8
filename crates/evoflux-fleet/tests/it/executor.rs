//! The executor against real git repositories in temporary directories,
//! with a fake agent runner that writes files as scripted.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use evoflux_core::price::Usd;
use evoflux_fleet::run::{
    AgentError, AgentOutcome, AgentRequest, AgentRunner, ContractOutcome, Executor, ExecutorConfig,
    FailureReason, FileJournal, JournalEntry, JournalError, LoopReason, MemoryJournal, NodeOutcome,
    NodeStatus, ProcessCommandRunner, RunFuture, RunJournal, RunReport, RunStatus, SkipReason,
    Verdict, Workdir,
};
use evoflux_fleet::{CommandRegistry, ExecutionPlan, compile_fleet_plan};

// ---------------------------------------------------------------- helpers

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A repository with one commit: README.md, src/lib.rs, docs/guide.md.
struct Repo {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    state: PathBuf,
}

impl Repo {
    fn new() -> Repo {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("repo");
        let state = tmp.path().join("state");
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::create_dir_all(root.join("docs")).unwrap();
        std::fs::write(root.join("README.md"), "readme\n").unwrap();
        std::fs::write(root.join("src/lib.rs"), "pub fn a() {}\n").unwrap();
        std::fs::write(root.join("docs/guide.md"), "guide\n").unwrap();
        git(&root, &["init", "-q", "-b", "main"]);
        git(&root, &["config", "user.name", "t"]);
        git(&root, &["config", "user.email", "t@example.invalid"]);
        git(&root, &["add", "-A"]);
        git(&root, &["commit", "-q", "-m", "init"]);
        Repo {
            _tmp: tmp,
            root,
            state,
        }
    }

    fn read(&self, path: &str) -> Option<String> {
        std::fs::read_to_string(self.root.join(path)).ok()
    }

    fn config(&self) -> ExecutorConfig {
        ExecutorConfig::new(&self.root, &self.state)
    }
}

fn plan(text: &str) -> ExecutionPlan {
    plan_with(text, &[])
}

fn plan_with(text: &str, vars: &[(&str, &str)]) -> ExecutionPlan {
    let contract = common::valid(text);
    let vars: BTreeMap<String, String> = vars
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    compile_fleet_plan(&contract, &vars).unwrap()
}

/// What the fake worker does at one node.
#[derive(Debug, Clone)]
struct Script {
    /// Relative path and new content; `None` deletes.
    writes: Vec<(String, Option<String>)>,
    contract_met: bool,
    verdict: Option<Verdict>,
    cost: Usd,
    fail: bool,
    /// The answer; default `answer of <node>`.
    output: Option<String>,
}

impl Default for Script {
    fn default() -> Script {
        Script {
            writes: Vec::new(),
            contract_met: true,
            verdict: None,
            cost: Usd::ZERO,
            fail: false,
            output: None,
        }
    }
}

fn writes(files: &[(&str, &str)]) -> Script {
    Script {
        writes: files
            .iter()
            .map(|(p, c)| ((*p).to_owned(), Some((*c).to_owned())))
            .collect(),
        ..Script::default()
    }
}

#[derive(Debug, Default)]
struct FakeAgent {
    scripts: HashMap<String, Script>,
    default_cost: Usd,
    /// Node ids in call order.
    calls: Mutex<Vec<String>>,
    /// Inputs each node received.
    inputs: Mutex<HashMap<String, Vec<String>>>,
    delay: Duration,
    /// Workers running now, and the most at once.
    concurrency: Mutex<(usize, usize)>,
}

impl FakeAgent {
    fn with(scripts: &[(&str, Script)]) -> FakeAgent {
        FakeAgent {
            scripts: scripts
                .iter()
                .map(|(k, s)| ((*k).to_owned(), s.clone()))
                .collect(),
            ..FakeAgent::default()
        }
    }

    fn calls(&self) -> Vec<String> {
        self.calls.lock().unwrap().clone()
    }
}

impl AgentRunner for FakeAgent {
    fn run_agent<'a>(
        &'a self,
        request: &'a AgentRequest,
    ) -> RunFuture<'a, Result<AgentOutcome, AgentError>> {
        Box::pin(async move {
            self.calls.lock().unwrap().push(request.node.id.clone());
            self.inputs.lock().unwrap().insert(
                request.node.id.clone(),
                request.inputs.iter().map(|i| i.output.clone()).collect(),
            );
            {
                let mut c = self.concurrency.lock().unwrap();
                c.0 += 1;
                c.1 = c.1.max(c.0);
            }
            if !self.delay.is_zero() {
                tokio::time::sleep(self.delay).await;
            }
            self.concurrency.lock().unwrap().0 -= 1;
            let script = self
                .scripts
                .get(&request.node.id)
                .cloned()
                .unwrap_or_default();
            for (path, content) in &script.writes {
                let full = request.workdir.join(path);
                match content {
                    Some(c) => {
                        if let Some(parent) = full.parent() {
                            std::fs::create_dir_all(parent).unwrap();
                        }
                        std::fs::write(&full, c).unwrap();
                    }
                    None => std::fs::remove_file(&full).unwrap(),
                }
            }
            if script.fail {
                return Err(AgentError {
                    message: "dispatch refused".to_owned(),
                    cost: Usd::ZERO,
                });
            }
            Ok(AgentOutcome {
                output: script
                    .output
                    .clone()
                    .unwrap_or_else(|| format!("answer of {}", request.node.id)),
                contract_met: script.contract_met,
                repair_rounds: u32::from(!script.contract_met) * 2,
                cost: if script.cost == Usd::ZERO {
                    self.default_cost
                } else {
                    script.cost
                },
                verdict: script.verdict,
                commit_message: None,
            })
        })
    }
}

fn executor(plan: ExecutionPlan, agent: &Arc<FakeAgent>, config: ExecutorConfig) -> Executor {
    Executor::new(
        plan,
        Arc::clone(agent) as Arc<dyn AgentRunner>,
        Arc::new(ProcessCommandRunner),
        Arc::new(MemoryJournal::new()),
        config,
    )
}

fn outcome<'r>(report: &'r RunReport, node: &str) -> &'r NodeOutcome {
    &report.receipt(node).unwrap().outcome
}

fn failure(report: &RunReport, node: &str) -> FailureReason {
    match outcome(report, node) {
        NodeOutcome::Failed { reason, .. } => *reason,
        other => panic!("{node} did not fail: {other:?}"),
    }
}

fn skip(report: &RunReport, node: &str) -> SkipReason {
    match outcome(report, node) {
        NodeOutcome::Skipped { reason } => *reason,
        other => panic!("{node} was not skipped: {other:?}"),
    }
}

// ------------------------------------------------------- write boundaries

const BOUNDED: &str = "---
version: 4
name: bounded
maxWorkers: 1
onFailure: continue
steps:
  - {id: build, agent: coder, scope: workspace, writes: [src/], dependencies: []}
---
Build it.
";

#[tokio::test]
async fn a_write_outside_the_boundary_fails_and_is_rolled_back() {
    let repo = Repo::new();
    // The operator's own uncommitted edit: not the node's, never blamed.
    std::fs::write(repo.root.join("README.md"), "operator edit\n").unwrap();
    let agent = Arc::new(FakeAgent::with(&[(
        "build",
        Script {
            writes: vec![
                ("src/new.rs".to_owned(), Some("new\n".to_owned())),
                ("docs/guide.md".to_owned(), Some("vandalized\n".to_owned())),
                ("secrets/key.txt".to_owned(), Some("x\n".to_owned())),
                ("src/lib.rs".to_owned(), None),
            ],
            ..Script::default()
        },
    )]));
    let report = executor(plan(BOUNDED), &agent, repo.config())
        .run("r1")
        .await
        .unwrap();
    let r = report.receipt("build").unwrap();
    assert_eq!(failure(&report, "build"), FailureReason::WriteBoundary);
    assert_eq!(r.boundary_violations, ["docs/guide.md", "secrets/key.txt"]);
    match &r.outcome {
        NodeOutcome::Failed { message, .. } => {
            assert!(
                message.contains("docs/guide.md, secrets/key.txt"),
                "{message}"
            );
            assert!(message.contains("rolled back"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    // Rolled back: the modified file restored, the created one and its
    // directory gone.
    assert_eq!(repo.read("docs/guide.md").as_deref(), Some("guide\n"));
    assert!(!repo.root.join("secrets").exists());
    // Inside the boundary: kept, deletion included.
    assert_eq!(r.files_changed, ["src/lib.rs", "src/new.rs"]);
    assert_eq!(repo.read("src/new.rs").as_deref(), Some("new\n"));
    assert!(repo.read("src/lib.rs").is_none());
    // The operator's edit is untouched, and so is the index.
    assert_eq!(repo.read("README.md").as_deref(), Some("operator edit\n"));
    assert_eq!(git(&repo.root, &["diff", "--cached", "--name-only"]), "");
    assert_eq!(report.status, RunStatus::Failed);
    assert_eq!(r.workdir, Workdir::Main);
}

#[tokio::test]
async fn a_write_inside_the_boundary_is_kept() {
    let repo = Repo::new();
    let agent = Arc::new(FakeAgent::with(&[(
        "build",
        writes(&[("src/lib.rs", "pub fn b() {}\n"), ("src/deep/x.rs", "x\n")]),
    )]));
    let report = executor(plan(BOUNDED), &agent, repo.config())
        .run("r1")
        .await
        .unwrap();
    let r = report.receipt("build").unwrap();
    assert_eq!(r.outcome, NodeOutcome::Succeeded);
    assert_eq!(r.files_changed, ["src/deep/x.rs", "src/lib.rs"]);
    assert!(r.boundary_violations.is_empty());
    assert_eq!(r.contract, ContractOutcome::Met);
    assert_eq!(repo.read("src/lib.rs").as_deref(), Some("pub fn b() {}\n"));
    assert_eq!(report.status, RunStatus::Succeeded);
}

#[tokio::test]
async fn a_v3_workspace_step_has_no_claim_and_keeps_everything() {
    let repo = Repo::new();
    let text = "---\nversion: 3\nname: old\nmaxWorkers: 1\nonFailure: stop\nsteps:\n  - {id: build, agent: coder, scope: workspace, dependencies: []}\n---\nGo.\n";
    let agent = Arc::new(FakeAgent::with(&[(
        "build",
        writes(&[("anywhere.txt", "a\n"), ("src/lib.rs", "b\n")]),
    )]));
    let report = executor(plan(text), &agent, repo.config())
        .run("r1")
        .await
        .unwrap();
    let r = report.receipt("build").unwrap();
    assert_eq!(r.outcome, NodeOutcome::Succeeded);
    assert_eq!(r.files_changed, ["anywhere.txt", "src/lib.rs"]);
    assert_eq!(repo.read("anywhere.txt").as_deref(), Some("a\n"));
}

#[tokio::test]
async fn a_v4_readonly_step_must_change_nothing() {
    let repo = Repo::new();
    let text = "---\nversion: 4\nname: ro\nmaxWorkers: 1\nonFailure: stop\nsteps:\n  - {id: look, agent: scout, scope: readonly, dependencies: []}\n---\nLook.\n";
    let agent = Arc::new(FakeAgent::with(&[("look", writes(&[("notes.md", "n\n")]))]));
    let report = executor(plan(text), &agent, repo.config())
        .run("r1")
        .await
        .unwrap();
    assert_eq!(failure(&report, "look"), FailureReason::WriteBoundary);
    assert_eq!(
        report.receipt("look").unwrap().boundary_violations,
        ["notes.md"]
    );
    assert!(repo.read("notes.md").is_none());
}

#[tokio::test]
async fn a_checkout_that_is_not_git_is_refused_before_anything_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let agent = Arc::new(FakeAgent::default());
    let err = executor(
        plan(BOUNDED),
        &agent,
        ExecutorConfig::new(tmp.path(), tmp.path().join("state")),
    )
    .run("r1")
    .await
    .unwrap_err();
    assert_eq!(err.code(), "fleet/workspace-not-git");
    assert!(agent.calls().is_empty());
}

// ------------------------------------------------------------- worktrees

const PARALLEL: &str = "---
version: 4
name: parallel
maxWorkers: 2
onFailure: continue
steps:
  - {id: code, agent: coder, scope: workspace, writes: [src/, README.md], dependencies: []}
  - {id: docs, agent: documenter, scope: workspace, writes: [docs/, README.md], dependencies: []}
  - {id: review, agent: verifier, scope: readonly, dependencies: [code, docs]}
---
Work.
";

#[tokio::test]
async fn parallel_steps_work_in_worktrees_and_merge() {
    let repo = Repo::new();
    let mut agent = FakeAgent::with(&[
        (
            "code",
            writes(&[("src/lib.rs", "pub fn c() {}\n"), ("src/c.rs", "c\n")]),
        ),
        (
            "docs",
            writes(&[
                ("docs/guide.md", "better guide\n"),
                ("docs/new.md", "new\n"),
            ]),
        ),
    ]);
    // Long enough that both run at once even when creating the second
    // worktree is slow.
    agent.delay = Duration::from_millis(600);
    let agent = Arc::new(agent);
    let report = executor(plan(PARALLEL), &agent, repo.config())
        .run("r1")
        .await
        .unwrap();
    assert_eq!(report.status, RunStatus::Succeeded, "{report:#?}");
    // They really ran side by side.
    assert_eq!(agent.concurrency.lock().unwrap().1, 2);
    for id in ["code", "docs"] {
        let r = report.receipt(id).unwrap();
        assert_eq!(r.outcome, NodeOutcome::Succeeded);
        assert_eq!(r.workdir, Workdir::Worktree);
    }
    assert_eq!(repo.read("src/lib.rs").as_deref(), Some("pub fn c() {}\n"));
    assert_eq!(repo.read("src/c.rs").as_deref(), Some("c\n"));
    assert_eq!(
        repo.read("docs/guide.md").as_deref(),
        Some("better guide\n")
    );
    assert_eq!(repo.read("docs/new.md").as_deref(), Some("new\n"));
    // The review (v4 readonly) ran after both merged, in its own worktree.
    assert_eq!(
        report.receipt("review").unwrap().outcome,
        NodeOutcome::Succeeded
    );
    // Worktrees are gone; HEAD and the index are untouched.
    assert_eq!(git(&repo.root, &["worktree", "list"]).lines().count(), 1);
    assert_eq!(git(&repo.root, &["log", "--oneline"]).lines().count(), 1);
    assert_eq!(git(&repo.root, &["diff", "--cached", "--name-only"]), "");
}

#[tokio::test]
async fn a_merge_conflict_fails_the_later_step_with_the_paths() {
    let repo = Repo::new();
    let mut agent = FakeAgent::with(&[
        (
            "code",
            writes(&[("README.md", "from code\n"), ("src/c.rs", "c\n")]),
        ),
        (
            "docs",
            writes(&[("README.md", "from docs\n"), ("docs/d.md", "d\n")]),
        ),
    ]);
    agent.delay = Duration::from_millis(600);
    let agent = Arc::new(agent);
    let report = executor(plan(PARALLEL), &agent, repo.config())
        .run("r1")
        .await
        .unwrap();
    // Plan order: code merges first, docs conflicts.
    assert_eq!(
        report.receipt("code").unwrap().outcome,
        NodeOutcome::Succeeded
    );
    assert_eq!(failure(&report, "docs"), FailureReason::MergeConflict);
    let docs = report.receipt("docs").unwrap();
    assert_eq!(docs.conflicts, ["README.md"]);
    match &docs.outcome {
        NodeOutcome::Failed { message, .. } => assert!(message.contains("README.md"), "{message}"),
        other => panic!("{other:?}"),
    }
    // The main checkout has code's work and none of docs'.
    assert_eq!(repo.read("README.md").as_deref(), Some("from code\n"));
    assert_eq!(repo.read("src/c.rs").as_deref(), Some("c\n"));
    assert!(repo.read("docs/d.md").is_none());
    assert_eq!(skip(&report, "review"), SkipReason::DependencyBlocked);
    assert_eq!(report.status, RunStatus::Failed);
    assert_eq!(git(&repo.root, &["worktree", "list"]).lines().count(), 1);
}

#[tokio::test]
async fn a_worktree_violation_is_rolled_back_before_the_merge() {
    let repo = Repo::new();
    let mut agent = FakeAgent::with(&[
        (
            "code",
            writes(&[("src/c.rs", "c\n"), ("docs/sneaky.md", "s\n")]),
        ),
        ("docs", writes(&[("docs/d.md", "d\n")])),
    ]);
    agent.delay = Duration::from_millis(50);
    let agent = Arc::new(agent);
    let report = executor(plan(PARALLEL), &agent, repo.config())
        .run("r1")
        .await
        .unwrap();
    assert_eq!(failure(&report, "code"), FailureReason::WriteBoundary);
    assert_eq!(
        report.receipt("code").unwrap().boundary_violations,
        ["docs/sneaky.md"]
    );
    // In-boundary work of the failed step is merged like any other.
    assert_eq!(repo.read("src/c.rs").as_deref(), Some("c\n"));
    assert!(repo.read("docs/sneaky.md").is_none());
    assert_eq!(repo.read("docs/d.md").as_deref(), Some("d\n"));
}

// ------------------------------------------------------------ code steps

#[tokio::test]
async fn a_code_step_receives_exactly_the_closed_environment() {
    let tmp = tempfile::tempdir().unwrap();
    let registry = CommandRegistry::parse(
        Path::new("fleets/commands.yaml"),
        "version: 1\ncommands:\n  show-env:\n    argv: [env]\n    env: [FLEET_DECLARED]\n",
    )
    .unwrap();
    let text = "---\nversion: 2\nname: env\nmaxWorkers: 1\nonFailure: stop\nsteps:\n  - {id: show, kind: code, command: show-env, scope: readonly, dependencies: []}\n---\nGo.\n";
    let path = std::env::var_os("PATH").unwrap();
    let mut config = ExecutorConfig::new(tmp.path(), tmp.path().join("state"));
    config.parent_env = [
        ("PATH", path.clone()),
        ("HOME", OsString::from("/home/fleet")),
        ("LANG", OsString::from("C.UTF-8")),
        ("FLEET_DECLARED", OsString::from("yes")),
        ("OPENAI_API_KEY", OsString::from("sk-secret")),
        ("EVOFLUX_HOME", OsString::from("/x")),
        ("USER", OsString::from("someone")),
        ("AI_AGENT", OsString::from("spoofed")),
    ]
    .into_iter()
    .map(|(k, v)| (OsString::from(k), v))
    .collect();
    let agent = Arc::new(FakeAgent::default());
    let report = executor(plan(text), &agent, config)
        .with_registry(registry)
        .run("r1")
        .await
        .unwrap();
    let r = report.receipt("show").unwrap();
    assert_eq!(r.outcome, NodeOutcome::Succeeded);
    assert_eq!(r.command.as_deref(), Some(&["env".to_owned()][..]));
    assert_eq!(r.exit_code, Some(0));
    let got: BTreeSet<String> = r
        .output
        .as_deref()
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    let want: BTreeSet<String> = [
        format!("PATH={}", path.to_string_lossy()),
        "HOME=/home/fleet".to_owned(),
        "LANG=C.UTF-8".to_owned(),
        "FLEET_DECLARED=yes".to_owned(),
        "AI_AGENT=evoflux".to_owned(),
    ]
    .into_iter()
    .collect();
    assert_eq!(got, want);
    assert!(agent.calls().is_empty());
}

#[tokio::test]
async fn a_code_loop_check_runs_until_the_repair_makes_it_pass() {
    let repo = Repo::new();
    let registry = CommandRegistry::parse(
        Path::new("fleets/commands.yaml"),
        "version: 1\ncommands:\n  test:\n    argv: [test, -f, fixed.txt]\n",
    )
    .unwrap();
    let text = "---
version: 4
name: fix
maxWorkers: 1
onFailure: stop
steps:
  - id: suite
    kind: loop
    maxAttempts: 3
    dependencies: []
    check: {kind: code, command: test, scope: readonly}
    repair: {kind: agent, agent: coder, scope: workspace, writes: [fixed.txt]}
---
Fix it.
";
    let agent = Arc::new(FakeAgent::with(&[(
        "suite.repair.1",
        writes(&[("fixed.txt", "ok\n")]),
    )]));
    let report = executor(plan(text), &agent, repo.config())
        .with_registry(registry)
        .run("r1")
        .await
        .unwrap();
    assert_eq!(outcome(&report, "suite.check.1"), &NodeOutcome::CheckFailed);
    assert_eq!(report.receipt("suite.check.1").unwrap().exit_code, Some(1));
    assert_eq!(outcome(&report, "suite.repair.1"), &NodeOutcome::Succeeded);
    assert_eq!(outcome(&report, "suite.check.2"), &NodeOutcome::Succeeded);
    assert_eq!(skip(&report, "suite.repair.2"), SkipReason::LoopResolved);
    assert_eq!(skip(&report, "suite.check.3"), SkipReason::LoopResolved);
    assert_eq!(report.status, RunStatus::Succeeded);
    assert_eq!(agent.calls(), ["suite.repair.1"]);
}

#[tokio::test]
async fn a_failing_code_step_fails_and_a_missing_registry_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let registry = CommandRegistry::parse(
        Path::new("fleets/commands.yaml"),
        "version: 1\ncommands:\n  no:\n    argv: [\"false\"]\n",
    )
    .unwrap();
    let text = "---\nversion: 2\nname: f\nmaxWorkers: 1\nonFailure: continue\nsteps:\n  - {id: red, kind: code, command: no, scope: readonly, dependencies: []}\n---\nGo.\n";
    let agent = Arc::new(FakeAgent::default());
    let config = ExecutorConfig::new(tmp.path(), tmp.path().join("state"));
    let report = executor(plan(text), &agent, config.clone())
        .with_registry(registry)
        .run("r1")
        .await
        .unwrap();
    assert_eq!(failure(&report, "red"), FailureReason::CommandFailed);
    assert_eq!(FailureReason::CommandFailed.code(), "fleet/command-failed");
    let report = executor(plan(text), &agent, config)
        .run("r2")
        .await
        .unwrap();
    assert_eq!(failure(&report, "red"), FailureReason::CommandUnbound);
}

// ----------------------------------------------------------------- loops

const AGENT_LOOP: &str = "---
version: 3
name: review
maxWorkers: 1
onFailure: continue
steps:
  - {id: build, agent: coder, scope: readonly, dependencies: []}
  - id: review
    kind: loop
    maxAttempts: 3
    dependencies: [build]
    check: {kind: agent, agent: verifier, scope: readonly}
    repair: {kind: agent, agent: coder, scope: readonly}
  - {id: ship, agent: coder, scope: readonly, dependencies: [review]}
---
Go.
";

fn verdict(v: Verdict) -> Script {
    Script {
        verdict: Some(v),
        ..Script::default()
    }
}

#[tokio::test]
async fn a_loop_that_passes_on_attempt_two_skips_the_rest() {
    let agent = Arc::new(FakeAgent::with(&[
        ("review.check.1", verdict(Verdict::Fail)),
        ("review.check.2", verdict(Verdict::Pass)),
    ]));
    let tmp = tempfile::tempdir().unwrap();
    let report = executor(
        plan(AGENT_LOOP),
        &agent,
        ExecutorConfig::new(tmp.path(), tmp.path().join("s")),
    )
    .run("r1")
    .await
    .unwrap();
    assert_eq!(
        agent.calls(),
        [
            "build",
            "review.check.1",
            "review.repair.1",
            "review.check.2",
            "ship"
        ]
    );
    assert_eq!(
        outcome(&report, "review.check.1"),
        &NodeOutcome::CheckFailed
    );
    assert_eq!(skip(&report, "review.repair.2"), SkipReason::LoopResolved);
    assert_eq!(skip(&report, "review.check.3"), SkipReason::LoopResolved);
    assert_eq!(outcome(&report, "ship"), &NodeOutcome::Succeeded);
    let l = &report.loops[0];
    assert!(l.resolved);
    assert_eq!(
        (l.attempts, l.repairs, l.reason),
        (2, 1, LoopReason::Resolved)
    );
    // The repair received the failing check's answer.
    assert_eq!(
        agent.inputs.lock().unwrap()["review.repair.1"],
        ["answer of review.check.1"]
    );
    assert_eq!(report.status, RunStatus::Succeeded);
    assert_eq!(
        report.receipt("review.check.1").unwrap().outcome.status(),
        NodeStatus::CheckFailed
    );
}

#[tokio::test]
async fn a_loop_whose_last_check_fails_fails_and_blocks_its_dependents() {
    let agent = Arc::new(FakeAgent::with(&[
        ("review.check.1", verdict(Verdict::Fail)),
        ("review.check.2", verdict(Verdict::Fail)),
        ("review.check.3", verdict(Verdict::Fail)),
    ]));
    let tmp = tempfile::tempdir().unwrap();
    let report = executor(
        plan(AGENT_LOOP),
        &agent,
        ExecutorConfig::new(tmp.path(), tmp.path().join("s")),
    )
    .run("r1")
    .await
    .unwrap();
    assert_eq!(
        failure(&report, "review.check.3"),
        FailureReason::LoopExhausted
    );
    assert_eq!(skip(&report, "ship"), SkipReason::DependencyBlocked);
    let l = &report.loops[0];
    assert!(!l.resolved);
    assert_eq!(
        (l.attempts, l.repairs, l.reason),
        (3, 2, LoopReason::BoundExhausted)
    );
    assert_eq!(report.status, RunStatus::Failed);
}

#[tokio::test]
async fn an_agent_check_without_a_verdict_fails_closed() {
    let agent = Arc::new(FakeAgent::default());
    let tmp = tempfile::tempdir().unwrap();
    let report = executor(
        plan(AGENT_LOOP),
        &agent,
        ExecutorConfig::new(tmp.path(), tmp.path().join("s")),
    )
    .run("r1")
    .await
    .unwrap();
    assert_eq!(
        failure(&report, "review.check.1"),
        FailureReason::CheckUndecided
    );
    assert_eq!(report.loops[0].reason, LoopReason::StepFailed);
}

// ------------------------------------------------- onFailure and budget

fn policy(on_failure: &str) -> String {
    format!(
        "---\nversion: 1\nname: p\nmaxWorkers: 1\nonFailure: {on_failure}\nsteps:\n  - {{id: a, agent: coder, scope: readonly, dependencies: []}}\n  - {{id: b, agent: coder, scope: readonly, dependencies: []}}\n  - {{id: c, agent: coder, scope: readonly, dependencies: [a]}}\n  - {{id: d, agent: coder, scope: readonly, dependencies: [b]}}\n---\nGo.\n"
    )
}

fn missed() -> Script {
    Script {
        contract_met: false,
        ..Script::default()
    }
}

#[tokio::test]
async fn on_failure_stop_starts_nothing_after_a_failure() {
    let agent = Arc::new(FakeAgent::with(&[("a", missed())]));
    let tmp = tempfile::tempdir().unwrap();
    let report = executor(
        plan(&policy("stop")),
        &agent,
        ExecutorConfig::new(tmp.path(), tmp.path().join("s")),
    )
    .run("r1")
    .await
    .unwrap();
    assert_eq!(agent.calls(), ["a"]);
    assert_eq!(failure(&report, "a"), FailureReason::ResultContractMissed);
    assert_eq!(
        report.receipt("a").unwrap().contract,
        ContractOutcome::Missed
    );
    assert_eq!(report.receipt("a").unwrap().repair_rounds, 2);
    assert_eq!(skip(&report, "b"), SkipReason::Stopped);
    assert_eq!(skip(&report, "c"), SkipReason::DependencyBlocked);
    assert_eq!(skip(&report, "d"), SkipReason::Stopped);
    assert_eq!(report.status, RunStatus::Stopped);
}

#[tokio::test]
async fn on_failure_continue_keeps_independent_branches_going() {
    let agent = Arc::new(FakeAgent::with(&[(
        "a",
        Script {
            fail: true,
            ..Script::default()
        },
    )]));
    let tmp = tempfile::tempdir().unwrap();
    let report = executor(
        plan(&policy("continue")),
        &agent,
        ExecutorConfig::new(tmp.path(), tmp.path().join("s")),
    )
    .run("r1")
    .await
    .unwrap();
    assert_eq!(agent.calls(), ["a", "b", "d"]);
    assert_eq!(failure(&report, "a"), FailureReason::AgentFailed);
    assert_eq!(outcome(&report, "b"), &NodeOutcome::Succeeded);
    assert_eq!(skip(&report, "c"), SkipReason::DependencyBlocked);
    assert_eq!(outcome(&report, "d"), &NodeOutcome::Succeeded);
    assert_eq!(report.status, RunStatus::Failed);
}

#[tokio::test]
async fn the_budget_stops_a_run_before_the_next_node() {
    let text = "---\nversion: 1\nname: b\nmaxWorkers: 1\nbudgetUsd: 1\nonFailure: stop\nsteps:\n  - {id: a, agent: coder, scope: readonly, dependencies: []}\n  - {id: b, agent: coder, scope: readonly, dependencies: [a]}\n  - {id: c, agent: coder, scope: readonly, dependencies: [b]}\n---\nGo.\n";
    let agent = Arc::new(FakeAgent {
        default_cost: Usd::from_dollars(0.6).unwrap(),
        ..FakeAgent::default()
    });
    let tmp = tempfile::tempdir().unwrap();
    let report = executor(
        plan(text),
        &agent,
        ExecutorConfig::new(tmp.path(), tmp.path().join("s")),
    )
    .run("r1")
    .await
    .unwrap();
    // a starts at $0, b at $0.60 (< $1), c would start at $1.20.
    assert_eq!(agent.calls(), ["a", "b"]);
    assert_eq!(skip(&report, "c"), SkipReason::BudgetExhausted);
    assert_eq!(report.spent, Usd::from_dollars(1.2).unwrap());
    assert_eq!(report.status, RunStatus::BudgetExhausted);
}

#[tokio::test]
async fn at_most_max_workers_nodes_run_at_once() {
    #[derive(Debug, Default)]
    struct Counting {
        now: Mutex<(usize, usize)>,
    }
    impl AgentRunner for Counting {
        fn run_agent<'a>(
            &'a self,
            _request: &'a AgentRequest,
        ) -> RunFuture<'a, Result<AgentOutcome, AgentError>> {
            Box::pin(async move {
                {
                    let mut n = self.now.lock().unwrap();
                    n.0 += 1;
                    n.1 = n.1.max(n.0);
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
                self.now.lock().unwrap().0 -= 1;
                Ok(AgentOutcome {
                    contract_met: true,
                    ..AgentOutcome::default()
                })
            })
        }
    }
    let mut text =
        String::from("---\nversion: 1\nname: w\nmaxWorkers: 3\nonFailure: stop\nsteps:\n");
    for i in 0..10 {
        text.push_str(&format!(
            "  - {{id: s{i}, agent: coder, scope: readonly, dependencies: []}}\n"
        ));
    }
    text.push_str("---\nGo.\n");
    let runner = Arc::new(Counting::default());
    let tmp = tempfile::tempdir().unwrap();
    let report = Executor::new(
        plan(&text),
        Arc::clone(&runner) as Arc<dyn AgentRunner>,
        Arc::new(ProcessCommandRunner),
        Arc::new(MemoryJournal::new()),
        ExecutorConfig::new(tmp.path(), tmp.path().join("s")),
    )
    .run("r1")
    .await
    .unwrap();
    assert_eq!(report.status, RunStatus::Succeeded);
    assert_eq!(runner.now.lock().unwrap().1, 3);
}

// ------------------------------------------------------- kill and resume

const CHAIN: &str = "---
version: 4
name: chain
maxWorkers: 1
onFailure: stop
steps:
  - {id: a, agent: coder, scope: workspace, writes: [a.txt], dependencies: []}
  - {id: b, agent: coder, scope: workspace, writes: [b.txt], dependencies: [a]}
  - {id: c, agent: coder, scope: workspace, writes: [c.txt], dependencies: [b]}
  - {id: d, agent: coder, scope: workspace, writes: [d.txt], dependencies: [c]}
---
Go.
";

fn chain_scripts() -> Vec<(&'static str, Script)> {
    vec![
        ("a", writes(&[("a.txt", "a\n")])),
        ("b", writes(&[("b.txt", "b\n")])),
        // c writes outside its boundary before it is killed, and again on
        // the resumed attempt.
        ("c", writes(&[("c.txt", "c\n"), ("stray.txt", "s\n")])),
        ("d", writes(&[("d.txt", "d\n")])),
    ]
}

#[tokio::test]
async fn a_killed_run_resumes_and_judges_the_interrupted_node_from_its_first_base() {
    let repo = Repo::new();
    let journal_dir = repo.state.join("runs");
    let journal = Arc::new(FileJournal::new(&journal_dir));

    // First attempt: c's worker writes, then never returns; the run is
    // dropped as a kill would end it.
    let first = Arc::new(FakeAgent::with(&chain_scripts()));
    let killer = Arc::new(HangAfterWrites {
        inner: Arc::clone(&first),
        hang_node: "c".to_owned(),
    });
    let ex = Executor::new(
        plan(CHAIN),
        killer as Arc<dyn AgentRunner>,
        Arc::new(ProcessCommandRunner),
        Arc::clone(&journal) as Arc<dyn RunJournal>,
        repo.config(),
    );
    let killed = tokio::time::timeout(Duration::from_millis(1500), ex.run("run-1")).await;
    assert!(killed.is_err(), "the run should still be going");
    drop(ex);
    assert_eq!(first.calls(), ["a", "b", "c"]);
    assert_eq!(repo.read("stray.txt").as_deref(), Some("s\n"));

    // Resume with a fresh runner: only c and d run.
    let second = Arc::new(FakeAgent::with(&[
        ("c", writes(&[("c.txt", "c\n")])),
        ("d", writes(&[("d.txt", "d\n")])),
    ]));
    let ex = Executor::new(
        plan(CHAIN),
        Arc::clone(&second) as Arc<dyn AgentRunner>,
        Arc::new(ProcessCommandRunner),
        Arc::clone(&journal) as Arc<dyn RunJournal>,
        repo.config(),
    );
    let report = ex.run("run-1").await.unwrap();
    // c fails (below), so onFailure: stop never starts d.
    assert_eq!(second.calls(), ["c"]);
    assert_eq!(report.resumed, ["a", "b"]);
    assert_eq!(report.interrupted, ["c"]);
    // The interrupted attempt's stray write is judged against c's original
    // base, so it is still caught and rolled back.
    assert_eq!(failure(&report, "c"), FailureReason::WriteBoundary);
    assert_eq!(
        report.receipt("c").unwrap().boundary_violations,
        ["stray.txt"]
    );
    assert!(repo.read("stray.txt").is_none());
    assert_eq!(skip(&report, "d"), SkipReason::DependencyBlocked);

    // A third attempt retries the failed node and finishes.
    let third = Arc::new(FakeAgent::with(&[
        ("c", writes(&[("c.txt", "c\n")])),
        ("d", writes(&[("d.txt", "d\n")])),
    ]));
    let ex = Executor::new(
        plan(CHAIN),
        Arc::clone(&third) as Arc<dyn AgentRunner>,
        Arc::new(ProcessCommandRunner),
        Arc::clone(&journal) as Arc<dyn RunJournal>,
        repo.config(),
    );
    let report = ex.run("run-1").await.unwrap();
    assert_eq!(third.calls(), ["c", "d"]);
    assert_eq!(report.status, RunStatus::Succeeded);
    for f in ["a.txt", "b.txt", "c.txt", "d.txt"] {
        assert!(repo.read(f).is_some(), "{f}");
    }

    // Finished: a fourth attempt runs nothing.
    let fourth = Arc::new(FakeAgent::default());
    let ex = Executor::new(
        plan(CHAIN),
        Arc::clone(&fourth) as Arc<dyn AgentRunner>,
        Arc::new(ProcessCommandRunner),
        Arc::clone(&journal) as Arc<dyn RunJournal>,
        repo.config(),
    );
    let report = ex.run("run-1").await.unwrap();
    assert!(fourth.calls().is_empty());
    assert_eq!(report.status, RunStatus::Succeeded);
}

/// Delegates to a fake, but after the fake has written the files of
/// `hang_node` it never returns.
#[derive(Debug)]
struct HangAfterWrites {
    inner: Arc<FakeAgent>,
    hang_node: String,
}

impl AgentRunner for HangAfterWrites {
    fn run_agent<'a>(
        &'a self,
        request: &'a AgentRequest,
    ) -> RunFuture<'a, Result<AgentOutcome, AgentError>> {
        Box::pin(async move {
            let out = self.inner.run_agent(request).await;
            if request.node.id == self.hang_node {
                std::future::pending::<()>().await;
            }
            out
        })
    }
}

#[tokio::test]
async fn a_resume_against_a_changed_plan_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let journal = Arc::new(FileJournal::new(tmp.path().join("runs")));
    let agent = Arc::new(FakeAgent::default());
    let make = |text: &str| {
        Executor::new(
            plan(text),
            Arc::clone(&agent) as Arc<dyn AgentRunner>,
            Arc::new(ProcessCommandRunner),
            Arc::clone(&journal) as Arc<dyn RunJournal>,
            ExecutorConfig::new(tmp.path(), tmp.path().join("s")),
        )
    };
    make(&policy("stop")).run("r").await.unwrap();
    let err = make(&policy("continue")).run("r").await.unwrap_err();
    assert_eq!(err.code(), "fleet/plan-changed");
    let err = make(&policy("stop")).run("../x").await.unwrap_err();
    assert_eq!(err.code(), "fleet/run-id-invalid");
}

#[tokio::test]
async fn the_file_journal_ignores_a_torn_last_line() {
    let tmp = tempfile::tempdir().unwrap();
    let journal = FileJournal::new(tmp.path());
    let agent = Arc::new(FakeAgent::default());
    let ex = Executor::new(
        plan(&policy("stop")),
        Arc::clone(&agent) as Arc<dyn AgentRunner>,
        Arc::new(ProcessCommandRunner),
        Arc::new(journal.clone()),
        ExecutorConfig::new(tmp.path(), tmp.path().join("s")),
    );
    ex.run("r").await.unwrap();
    let path = journal.path("r").unwrap();
    let before = journal.load("r").await.unwrap().len();
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.extend_from_slice(b"{\"entry\":\"finis");
    std::fs::write(&path, &bytes).unwrap();
    assert_eq!(journal.load("r").await.unwrap().len(), before);
    // Begin, then a start and a finish per node.
    assert_eq!(before, 1 + 2 * 4);
}

#[tokio::test]
async fn a_killed_run_resumes_without_rerunning_completed_nodes() {
    let repo = Repo::new();
    let journal = Arc::new(FileJournal::new(repo.state.join("runs")));
    let scripts: Vec<(&str, Script)> = ["a", "b", "c", "d"]
        .into_iter()
        .map(|n| (n, writes(&[(&format!("{n}.txt"), "x\n")])))
        .collect();
    let first = Arc::new(FakeAgent::with(&scripts));
    let ex = Executor::new(
        plan(CHAIN),
        Arc::new(HangAfterWrites {
            inner: Arc::clone(&first),
            hang_node: "c".to_owned(),
        }) as Arc<dyn AgentRunner>,
        Arc::new(ProcessCommandRunner),
        Arc::clone(&journal) as Arc<dyn RunJournal>,
        repo.config(),
    );
    assert!(
        tokio::time::timeout(Duration::from_millis(1500), ex.run("run-2"))
            .await
            .is_err()
    );
    drop(ex);
    assert_eq!(first.calls(), ["a", "b", "c"]);

    let second = Arc::new(FakeAgent::with(&scripts));
    let report = Executor::new(
        plan(CHAIN),
        Arc::clone(&second) as Arc<dyn AgentRunner>,
        Arc::new(ProcessCommandRunner),
        Arc::clone(&journal) as Arc<dyn RunJournal>,
        repo.config(),
    )
    .run("run-2")
    .await
    .unwrap();
    assert_eq!(second.calls(), ["c", "d"]);
    assert_eq!(report.resumed, ["a", "b"]);
    assert_eq!(report.interrupted, ["c"]);
    assert_eq!(report.status, RunStatus::Succeeded);
    // c's receipt covers both attempts' work: its base is the first one.
    assert_eq!(report.receipt("c").unwrap().files_changed, ["c.txt"]);
}

// ------------------------------------------------------------------ v5

const GATED: &str = "---
version: 5
name: gated
maxWorkers: 1
onFailure: continue
steps:
  - {id: acceptance, kind: gate, agent: tester, path: tests/acceptance.sh, run: acceptance, dependencies: []}
  - id: fix
    kind: loop
    maxAttempts: 2
    dependencies: [acceptance]
    check: {kind: gate, gate: acceptance}
    repair: {kind: agent, agent: coder, scope: workspace, writes: [src/]}
---
Make the acceptance test pass.
";

fn gate_registry() -> CommandRegistry {
    CommandRegistry::parse(
        Path::new("fleets/commands.yaml"),
        "version: 1\ncommands:\n  acceptance:\n    argv: [sh, \"{{path}}\"]\n",
    )
    .unwrap()
}

#[tokio::test]
async fn a_red_gate_is_admitted_and_its_loop_runs_until_green() {
    let repo = Repo::new();
    let agent = Arc::new(FakeAgent::with(&[
        (
            "acceptance",
            writes(&[("tests/acceptance.sh", "test -f src/done.txt\n")]),
        ),
        ("fix.repair.1", writes(&[("src/done.txt", "done\n")])),
    ]));
    let report = executor(plan(GATED), &agent, repo.config())
        .with_registry(gate_registry())
        .run("r1")
        .await
        .unwrap();
    let gate = report.receipt("acceptance").unwrap();
    assert_eq!(gate.outcome, NodeOutcome::Succeeded, "{gate:#?}");
    assert_eq!(
        gate.command.as_deref(),
        Some(&["sh".to_owned(), "tests/acceptance.sh".to_owned()][..])
    );
    assert_eq!(gate.files_changed, ["tests/acceptance.sh"]);
    assert_eq!(outcome(&report, "fix.check.1"), &NodeOutcome::CheckFailed);
    assert_eq!(outcome(&report, "fix.check.2"), &NodeOutcome::Succeeded);
    assert_eq!(report.status, RunStatus::Succeeded);
}

#[tokio::test]
async fn a_gate_that_passes_at_once_does_not_discriminate() {
    let repo = Repo::new();
    let agent = Arc::new(FakeAgent::with(&[(
        "acceptance",
        writes(&[("tests/acceptance.sh", "exit 0\n")]),
    )]));
    let report = executor(plan(GATED), &agent, repo.config())
        .with_registry(gate_registry())
        .run("r1")
        .await
        .unwrap();
    assert_eq!(
        failure(&report, "acceptance"),
        FailureReason::GateNotDiscriminating
    );
    assert_eq!(skip(&report, "fix.check.1"), SkipReason::DependencyBlocked);
}

#[tokio::test]
async fn writers_one_serializes_writers_even_with_free_workers() {
    let repo = Repo::new();
    let text = "---
version: 5
name: one-writer
writers: 1
maxWorkers: 3
onFailure: continue
steps:
  - {id: code, agent: coder, scope: workspace, writes: [src/], dependencies: []}
  - {id: docs, agent: documenter, scope: workspace, writes: [docs/], dependencies: []}
---
Work.
";
    let agent = Arc::new(FakeAgent {
        scripts: [
            ("code".to_owned(), writes(&[("src/c.rs", "c\n")])),
            ("docs".to_owned(), writes(&[("docs/d.md", "d\n")])),
        ]
        .into_iter()
        .collect(),
        delay: Duration::from_millis(100),
        ..FakeAgent::default()
    });
    let report = executor(plan(text), &agent, repo.config())
        .run("r1")
        .await
        .unwrap();
    assert_eq!(report.status, RunStatus::Succeeded);
    assert_eq!(agent.concurrency.lock().unwrap().1, 1);
    assert_eq!(repo.read("src/c.rs").as_deref(), Some("c\n"));
    assert_eq!(repo.read("docs/d.md").as_deref(), Some("d\n"));
}

#[tokio::test]
async fn the_process_runner_kills_a_command_past_its_timeout() {
    use evoflux_fleet::run::{CommandRequest, CommandRunner};
    let tmp = tempfile::tempdir().unwrap();
    let request = CommandRequest {
        run_id: "r".to_owned(),
        node: "n".to_owned(),
        command: "slow".to_owned(),
        argv: vec!["sleep".to_owned(), "5".to_owned()],
        checkout: tmp.path().to_path_buf(),
        cwd: tmp.path().to_path_buf(),
        env: vec![(OsString::from("PATH"), std::env::var_os("PATH").unwrap())],
        timeout: Duration::from_millis(200),
    };
    let started = std::time::Instant::now();
    let out = ProcessCommandRunner.run_command(&request).await.unwrap();
    assert!(out.timed_out);
    assert!(!out.passed());
    assert!(started.elapsed() < Duration::from_secs(3));
    let missing = CommandRequest {
        argv: vec!["no-such-program-evoflux".to_owned()],
        ..request
    };
    let err = ProcessCommandRunner
        .run_command(&missing)
        .await
        .unwrap_err();
    assert_eq!(err.program, "no-such-program-evoflux");
}

#[tokio::test]
async fn a_red_code_step_crosses_its_edge_under_continue_and_halts_under_stop() {
    let tmp = tempfile::tempdir().unwrap();
    let registry = || {
        CommandRegistry::parse(
            Path::new("fleets/commands.yaml"),
            "version: 1\ncommands:\n  red:\n    argv: [sh, -c, \"echo 3 failing; exit 1\"]\n",
        )
        .unwrap()
    };
    let text = |on_failure: &str| {
        format!(
            "---\nversion: 2\nname: red\nmaxWorkers: 1\nonFailure: {on_failure}\nsteps:\n  - {{id: suite, kind: code, command: red, scope: readonly, dependencies: []}}\n  - {{id: triage, agent: scout, scope: readonly, dependencies: [suite]}}\n---\nGo.\n"
        )
    };
    let agent = Arc::new(FakeAgent::default());
    let config = ExecutorConfig::new(tmp.path(), tmp.path().join("s"));
    let report = executor(plan(&text("continue")), &agent, config.clone())
        .with_registry(registry())
        .run("r1")
        .await
        .unwrap();
    assert_eq!(failure(&report, "suite"), FailureReason::CommandFailed);
    assert_eq!(outcome(&report, "triage"), &NodeOutcome::Succeeded);
    assert_eq!(agent.inputs.lock().unwrap()["triage"], ["3 failing\n"]);
    assert_eq!(report.status, RunStatus::Failed);

    let agent = Arc::new(FakeAgent::default());
    let report = executor(plan(&text("stop")), &agent, config)
        .with_registry(registry())
        .run("r2")
        .await
        .unwrap();
    assert_eq!(skip(&report, "triage"), SkipReason::DependencyBlocked);
    assert!(agent.calls().is_empty());
    assert_eq!(report.status, RunStatus::Stopped);
}

#[tokio::test]
async fn a_killed_parallel_run_resumes_in_fresh_worktrees() {
    let repo = Repo::new();
    let journal = Arc::new(FileJournal::new(repo.state.join("runs")));
    let scripts = [
        ("code", writes(&[("src/c.rs", "c\n")])),
        ("docs", writes(&[("docs/d.md", "half\n")])),
    ];
    let first = Arc::new(FakeAgent::with(&scripts));
    let ex = Executor::new(
        plan(PARALLEL),
        Arc::new(HangAfterWrites {
            inner: Arc::clone(&first),
            hang_node: "docs".to_owned(),
        }) as Arc<dyn AgentRunner>,
        Arc::new(ProcessCommandRunner),
        Arc::clone(&journal) as Arc<dyn RunJournal>,
        repo.config(),
    );
    assert!(
        tokio::time::timeout(Duration::from_millis(1500), ex.run("p"))
            .await
            .is_err()
    );
    drop(ex);
    // code merged; docs' worktree is left behind, its work unmerged.
    assert_eq!(repo.read("src/c.rs").as_deref(), Some("c\n"));
    assert!(repo.read("docs/d.md").is_none());
    assert_eq!(git(&repo.root, &["worktree", "list"]).lines().count(), 2);

    let second = Arc::new(FakeAgent::with(&[(
        "docs",
        writes(&[("docs/d.md", "whole\n")]),
    )]));
    let report = Executor::new(
        plan(PARALLEL),
        Arc::clone(&second) as Arc<dyn AgentRunner>,
        Arc::new(ProcessCommandRunner),
        Arc::clone(&journal) as Arc<dyn RunJournal>,
        repo.config(),
    )
    .run("p")
    .await
    .unwrap();
    assert_eq!(second.calls(), ["docs", "review"]);
    assert_eq!(report.resumed, ["code"]);
    assert_eq!(report.interrupted, ["docs"]);
    assert_eq!(report.status, RunStatus::Succeeded);
    assert_eq!(repo.read("docs/d.md").as_deref(), Some("whole\n"));
    assert_eq!(git(&repo.root, &["worktree", "list"]).lines().count(), 1);
}

#[tokio::test]
async fn exempt_paths_are_never_blamed() {
    let repo = Repo::new();
    let agent = Arc::new(FakeAgent::with(&[(
        "build",
        writes(&[(".evoflux/cache.json", "{}\n"), ("src/x.rs", "x\n")]),
    )]));
    let mut config = repo.config();
    config.exempt = vec![".evoflux/".to_owned()];
    let report = executor(plan(BOUNDED), &agent, config)
        .run("r1")
        .await
        .unwrap();
    let r = report.receipt("build").unwrap();
    assert_eq!(r.outcome, NodeOutcome::Succeeded);
    assert_eq!(r.files_changed, [".evoflux/cache.json", "src/x.rs"]);
}

// ------------------------------------------------------- delegation plans

const SPLIT: &str = "---
version: 5
name: split
maxWorkers: 1
onFailure: stop
steps:
  - {id: plan, kind: plan, roster: [coder], maxTasks: 3, scope: workspace, writes: [src/], dependencies: []}
  - {id: after, agent: verifier, scope: readonly, dependencies: [plan]}
---
Split it.
";

#[tokio::test]
async fn spliced_tasks_run_before_the_plan_s_dependents_and_a_resume_keeps_the_splice() {
    let repo = Repo::new();
    let journal = Arc::new(FileJournal::new(repo.state.join("runs")));
    let delegation = serde_json::json!({"tasks": [
        {"id": "one", "agent": "coder", "description": "first", "depends_on": [], "writes": ["src/one.rs"]},
        {"id": "two", "agent": "coder", "description": "second", "depends_on": ["one"], "writes": ["src/two.rs"]},
    ]})
    .to_string();
    let planner = Script {
        output: Some(delegation),
        ..Script::default()
    };
    // First attempt: the second task's worker cannot be dispatched.
    let first = Arc::new(FakeAgent::with(&[
        ("plan", planner.clone()),
        ("plan.one", writes(&[("src/one.rs", "1\n")])),
        (
            "plan.two",
            Script {
                fail: true,
                ..Script::default()
            },
        ),
    ]));
    let run = |agent: &Arc<FakeAgent>| {
        Executor::new(
            plan(SPLIT),
            Arc::clone(agent) as Arc<dyn AgentRunner>,
            Arc::new(ProcessCommandRunner),
            Arc::clone(&journal) as Arc<dyn RunJournal>,
            repo.config(),
        )
    };
    let report = run(&first).run("split-1").await.unwrap();
    assert_eq!(first.calls(), ["plan", "plan.one", "plan.two"]);
    assert_eq!(failure(&report, "plan.two"), FailureReason::AgentFailed);
    assert!(matches!(
        outcome(&report, "after"),
        NodeOutcome::Skipped { .. }
    ));
    assert_eq!(
        report.receipt("plan.one").unwrap().files_changed,
        ["src/one.rs"]
    );

    // Resumed: the plan is not asked again, its splice is back, and only
    // what did not succeed runs.
    let second = Arc::new(FakeAgent::with(&[(
        "plan.two",
        writes(&[("src/two.rs", "2\n")]),
    )]));
    let report = run(&second).run("split-1").await.unwrap();
    assert_eq!(second.calls(), ["plan.two", "after"]);
    assert_eq!(report.resumed, ["plan", "plan.one"]);
    assert_eq!(report.status, RunStatus::Succeeded);
    let nodes: Vec<&str> = report.receipts.iter().map(|r| r.node.as_str()).collect();
    assert_eq!(nodes, ["plan", "after", "plan.one", "plan.two"]);
    assert_eq!(repo.read("src/two.rs").as_deref(), Some("2\n"));
}

#[tokio::test]
async fn a_delegation_plan_that_breaks_its_step_fails_it_and_splices_nothing() {
    let repo = Repo::new();
    let bad = serde_json::json!({"tasks": [
        {"id": "x", "agent": "tester", "description": "not on the roster", "depends_on": [], "writes": []},
    ]})
    .to_string();
    let agent = Arc::new(FakeAgent::with(&[(
        "plan",
        Script {
            output: Some(bad),
            ..Script::default()
        },
    )]));
    let report = executor(plan(SPLIT), &agent, repo.config())
        .run("r")
        .await
        .unwrap();
    assert_eq!(
        failure(&report, "plan"),
        FailureReason::DelegationPlanInvalid
    );
    match outcome(&report, "plan") {
        NodeOutcome::Failed { message, .. } => {
            assert!(
                message.contains("fleet/delegation-plan-roster-violation"),
                "{message}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(report.receipts.len(), 2);
    assert_eq!(agent.calls(), ["plan"]);
}

// -------------------------------------------------------------- staleness

/// A suite that passes, then a docs step that changes the workspace
/// before the review uses the green suite.
const STALE: &str = "---
version: 3
name: stale
maxWorkers: 1
onFailure: continue
steps:
  - {id: build, agent: coder, scope: workspace, dependencies: []}
  - id: suite
    kind: loop
    maxAttempts: 2
    dependencies: [build]
    check: {kind: code, command: test, scope: workspace}
    repair: {kind: agent, agent: coder, scope: workspace}
  - {id: docs, agent: coder, scope: workspace, dependencies: [build]}
  - {id: review, agent: verifier, scope: readonly, dependencies: [suite, docs]}
---
Build, test, document, review.
";

/// `test` counts its runs in `count` (outside the checkout) and passes
/// while `broken.txt` is absent.
fn counting_registry(count: &Path) -> CommandRegistry {
    CommandRegistry::parse(
        Path::new("fleets/commands.yaml"),
        &format!(
            "version: 1\ncommands:\n  test:\n    argv: [sh, -c, 'echo run >> {}; test ! -f broken.txt']\n",
            count.display()
        ),
    )
    .unwrap()
}

#[tokio::test]
async fn a_passed_verification_is_re_run_when_a_later_step_changes_the_workspace() {
    let repo = Repo::new();
    let count = repo.state.join("count");
    let agent = Arc::new(FakeAgent::with(&[
        ("build", writes(&[("a.txt", "a\n")])),
        ("docs", writes(&[("doc.md", "doc\n")])),
    ]));
    let report = executor(plan(STALE), &agent, repo.config())
        .with_registry(counting_registry(&count))
        .run("r1")
        .await
        .unwrap();
    assert_eq!(report.revalidated, ["suite.check.1"]);
    assert_eq!(std::fs::read_to_string(&count).unwrap().lines().count(), 2);
    assert_eq!(outcome(&report, "suite.check.1"), &NodeOutcome::Succeeded);
    assert_eq!(report.status, RunStatus::Succeeded);
    assert_eq!(agent.calls(), ["build", "docs", "review"]);
}

#[tokio::test]
async fn a_stale_verification_that_fails_its_re_run_fails_closed() {
    let repo = Repo::new();
    let count = repo.state.join("count");
    let agent = Arc::new(FakeAgent::with(&[
        ("build", writes(&[("a.txt", "a\n")])),
        ("docs", writes(&[("broken.txt", "oops\n")])),
    ]));
    let report = executor(plan(STALE), &agent, repo.config())
        .with_registry(counting_registry(&count))
        .run("r1")
        .await
        .unwrap();
    assert_eq!(
        failure(&report, "suite.check.1"),
        FailureReason::StaleVerification
    );
    assert_eq!(
        FailureReason::StaleVerification.code(),
        "fleet/stale-verification"
    );
    assert_eq!(skip(&report, "review"), SkipReason::DependencyBlocked);
    assert_eq!(report.status, RunStatus::Failed);
}

#[tokio::test]
async fn an_untouched_green_verification_is_not_re_run() {
    let repo = Repo::new();
    let count = repo.state.join("count");
    // docs changes nothing.
    let agent = Arc::new(FakeAgent::with(&[("build", writes(&[("a.txt", "a\n")]))]));
    let report = executor(plan(STALE), &agent, repo.config())
        .with_registry(counting_registry(&count))
        .run("r1")
        .await
        .unwrap();
    assert!(report.revalidated.is_empty());
    assert_eq!(std::fs::read_to_string(&count).unwrap().lines().count(), 1);
    assert_eq!(report.status, RunStatus::Succeeded);
}

// --------------------------------------------------------- ignored paths

/// Commits a `.gitignore` holding `patterns` to the repository.
fn ignore(repo: &Repo, patterns: &str) {
    std::fs::write(repo.root.join(".gitignore"), patterns).unwrap();
    git(&repo.root, &["add", ".gitignore"]);
    git(&repo.root, &["commit", "-q", "-m", "ignore"]);
}

#[tokio::test]
async fn a_write_into_an_ignored_path_outside_the_boundary_is_caught_and_removed() {
    let repo = Repo::new();
    ignore(&repo, "dist/\n*.log\n.fleet-state/\n");
    let agent = Arc::new(FakeAgent::with(&[(
        "build",
        writes(&[
            ("src/x.rs", "x\n"),
            // Ignored, inside the boundary: kept, as any path there.
            ("src/trace.log", "t\n"),
            // Ignored, outside it.
            ("dist/bundle.js", "evil()\n"),
            ("debug.log", "d\n"),
        ]),
    )]));
    // The run's own state, ignored inside the checkout, is never blamed.
    let config = ExecutorConfig::new(&repo.root, repo.root.join(".fleet-state"));
    let report = executor(plan(BOUNDED), &agent, config)
        .run("r1")
        .await
        .unwrap();
    let r = report.receipt("build").unwrap();
    assert_eq!(failure(&report, "build"), FailureReason::WriteBoundary);
    assert_eq!(r.boundary_violations, ["debug.log", "dist/bundle.js"]);
    match &r.outcome {
        NodeOutcome::Failed { message, .. } => {
            assert!(message.contains("rolled back"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    // The node created them, so deleting them is the whole rollback.
    assert!(!repo.root.join("dist").exists());
    assert!(repo.read("debug.log").is_none());
    assert_eq!(repo.read("src/x.rs").as_deref(), Some("x\n"));
    assert_eq!(repo.read("src/trace.log").as_deref(), Some("t\n"));
}

#[tokio::test]
async fn a_changed_ignored_file_outside_the_boundary_fails_the_step_and_is_named() {
    let repo = Repo::new();
    ignore(&repo, "build/\n");
    std::fs::create_dir_all(repo.root.join("build")).unwrap();
    std::fs::write(repo.root.join("build/cache.bin"), "old\n").unwrap();
    let agent = Arc::new(FakeAgent::with(&[(
        "build",
        writes(&[("build/cache.bin", "poisoned\n"), ("build/new.o", "o\n")]),
    )]));
    let report = executor(plan(BOUNDED), &agent, repo.config())
        .run("r1")
        .await
        .unwrap();
    let r = report.receipt("build").unwrap();
    assert_eq!(failure(&report, "build"), FailureReason::WriteBoundary);
    assert_eq!(r.boundary_violations, ["build/cache.bin", "build/new.o"]);
    match &r.outcome {
        NodeOutcome::Failed { message, .. } => {
            assert!(message.contains("ignored by git"), "{message}");
            assert!(message.contains("build/cache.bin"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    // No snapshot held the old content: nothing is half undone.
    assert_eq!(repo.read("build/cache.bin").as_deref(), Some("poisoned\n"));
    assert_eq!(repo.read("build/new.o").as_deref(), Some("o\n"));
}

#[tokio::test]
async fn an_ignored_write_in_a_worktree_is_caught_like_one_in_the_main_checkout() {
    let repo = Repo::new();
    ignore(&repo, "*.log\n");
    let mut agent = FakeAgent::with(&[
        ("code", writes(&[("src/c.rs", "c\n"), ("notes.log", "n\n")])),
        ("docs", writes(&[("docs/d.md", "d\n")])),
    ]);
    agent.delay = Duration::from_millis(50);
    let agent = Arc::new(agent);
    let report = executor(plan(PARALLEL), &agent, repo.config())
        .run("r1")
        .await
        .unwrap();
    let r = report.receipt("code").unwrap();
    assert_eq!(r.workdir, Workdir::Worktree);
    assert_eq!(failure(&report, "code"), FailureReason::WriteBoundary);
    assert_eq!(r.boundary_violations, ["notes.log"]);
    assert_eq!(repo.read("src/c.rs").as_deref(), Some("c\n"));
}

// --------------------------------------------------------------- commits

const COMMITTING: &str = "---
version: 3
name: ship
maxWorkers: 1
onFailure: stop
steps:
  - {id: build, agent: coder, scope: workspace, dependencies: []}
  - {id: commit, kind: code, command: commit, scope: workspace, dependencies: [build], commitFrom: [build]}
  - {id: after, agent: verifier, scope: readonly, dependencies: [commit]}
---
Ship it.
";

fn commit_config(repo: &Repo) -> ExecutorConfig {
    let mut config = repo.config();
    // git reads no configuration of the real home.
    config.parent_env = vec![
        (OsString::from("PATH"), std::env::var_os("PATH").unwrap()),
        (OsString::from("HOME"), repo.state.clone().into_os_string()),
    ];
    config
}

fn commit_registry() -> CommandRegistry {
    CommandRegistry::parse(
        Path::new("fleets/commands.yaml"),
        "version: 1\ncommands:\n  commit:\n    argv: [git, commit, -a, -m, '{{commitMessage}}']\n",
    )
    .unwrap()
}

#[tokio::test]
async fn a_commit_step_with_nothing_to_commit_is_not_a_failure() {
    let repo = Repo::new();
    let agent = Arc::new(FakeAgent::default());
    let report = executor(plan(COMMITTING), &agent, commit_config(&repo))
        .with_registry(commit_registry())
        .run("r1")
        .await
        .unwrap();
    assert_eq!(skip(&report, "commit"), SkipReason::NothingToCommit);
    assert_eq!(
        SkipReason::NothingToCommit.code(),
        "fleet/nothing-to-commit"
    );
    let r = report.receipt("commit").unwrap();
    assert!(r.command.is_none(), "{r:?}");
    assert!(r.output.as_deref().unwrap().contains("nothing to commit"));
    // Its dependents go on, and the run succeeds.
    assert_eq!(outcome(&report, "after"), &NodeOutcome::Succeeded);
    assert_eq!(report.status, RunStatus::Succeeded);
    assert_eq!(git(&repo.root, &["log", "--oneline"]).lines().count(), 1);

    // With something to commit, the command runs and commits it.
    let agent = Arc::new(FakeAgent::with(&[(
        "build",
        writes(&[("src/lib.rs", "pub fn b() {}\n")]),
    )]));
    let report = executor(plan(COMMITTING), &agent, commit_config(&repo))
        .with_registry(commit_registry())
        .run("r2")
        .await
        .unwrap();
    assert_eq!(outcome(&report, "commit"), &NodeOutcome::Succeeded);
    assert_eq!(report.status, RunStatus::Succeeded);
    assert_eq!(
        git(&repo.root, &["log", "-1", "--format=%s"]).trim(),
        "evoflux fleet ship: commit"
    );
}

// ------------------------------------------------- a kill during a merge

/// A journal that dies right after journalling a merge, as a run killed
/// while writing the merged paths into the main checkout would.
#[derive(Debug)]
struct DieAtMerge {
    inner: Arc<FileJournal>,
}

impl RunJournal for DieAtMerge {
    fn append<'a>(
        &'a self,
        run_id: &'a str,
        entry: &'a JournalEntry,
    ) -> RunFuture<'a, Result<(), JournalError>> {
        Box::pin(async move {
            self.inner.append(run_id, entry).await?;
            match entry {
                JournalEntry::Merging { .. } => Err(JournalError::Other("killed".to_owned())),
                _ => Ok(()),
            }
        })
    }

    fn load<'a>(
        &'a self,
        run_id: &'a str,
    ) -> RunFuture<'a, Result<Vec<JournalEntry>, JournalError>> {
        self.inner.load(run_id)
    }
}

#[tokio::test]
async fn a_kill_during_a_merge_leaves_no_half_written_paths_after_the_resume() {
    let repo = Repo::new();
    let journal = Arc::new(FileJournal::new(repo.state.join("runs")));
    let first = Arc::new(FakeAgent::with(&[
        (
            "code",
            writes(&[("src/lib.rs", "pub fn c() {}\n"), ("src/c.rs", "c\n")]),
        ),
        ("docs", writes(&[("docs/d.md", "d\n")])),
    ]));
    let err = Executor::new(
        plan(PARALLEL),
        Arc::clone(&first) as Arc<dyn AgentRunner>,
        Arc::new(ProcessCommandRunner),
        Arc::new(DieAtMerge {
            inner: Arc::clone(&journal),
        }) as Arc<dyn RunJournal>,
        repo.config(),
    )
    .run("m")
    .await
    .unwrap_err();
    assert_eq!(err.code(), "fleet/journal-io");
    // Killed mid-write: one path of the merge is there, one is torn.
    std::fs::write(repo.root.join("src/c.rs"), "c\n").unwrap();
    std::fs::write(repo.root.join("src/lib.rs"), "pub f").unwrap();

    // On the second attempt the coder only changes src/lib.rs.
    let second = Arc::new(FakeAgent::with(&[
        ("code", writes(&[("src/lib.rs", "pub fn c2() {}\n")])),
        ("docs", writes(&[("docs/d.md", "d\n")])),
    ]));
    let report = Executor::new(
        plan(PARALLEL),
        Arc::clone(&second) as Arc<dyn AgentRunner>,
        Arc::new(ProcessCommandRunner),
        Arc::clone(&journal) as Arc<dyn RunJournal>,
        repo.config(),
    )
    .run("m")
    .await
    .unwrap();
    assert_eq!(report.status, RunStatus::Succeeded, "{report:#?}");
    assert!(report.interrupted.contains(&"code".to_owned()));
    // The interrupted merge was put back before the node ran again: what
    // it half wrote is gone, and only the second attempt's work is there.
    assert!(repo.read("src/c.rs").is_none());
    assert_eq!(repo.read("src/lib.rs").as_deref(), Some("pub fn c2() {}\n"));
    assert_eq!(repo.read("docs/d.md").as_deref(), Some("d\n"));
    assert_eq!(
        report.receipt("code").unwrap().files_changed,
        ["src/lib.rs"]
    );
    let entries = journal.load("m").await.unwrap();
    assert!(
        entries
            .iter()
            .any(|e| matches!(e, JournalEntry::MergeUndone { node } if node == "code"))
    );
    assert_eq!(git(&repo.root, &["worktree", "list"]).lines().count(), 1);
}
