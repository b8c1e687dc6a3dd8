//! The executor: runs a compiled [`ExecutionPlan`] node by node.
//!
//! # Scheduling
//!
//! A node is ready when every dependency has settled and permits it
//! ([`NodeOutcome::permits_dependents`]; under `onFailure: continue` a code
//! step that ran and went red also hands its output on). Ready nodes start
//! in plan order,
//! at most `maxWorkers` at once. A node whose dependency failed (or was
//! skipped for anything but its loop resolving) is skipped as
//! `dependency-blocked`. After a failure, `onFailure: stop` starts nothing
//! new (running nodes finish; the rest are skipped as `stopped`), while
//! `continue` keeps every branch that does not depend on the failure going.
//! Before each start the spend so far (every receipt of the run, earlier
//! attempts included) is compared with `budgetUsd`: at or over it, nothing
//! more starts and the rest is skipped as `budget-exhausted`.
//!
//! # Loops
//!
//! Loops arrive unrolled (`<loop>.check.<n>`, `<loop>.repair.<n>`). A
//! check that passes resolves the loop: its later nodes are skipped as
//! `loop-resolved`, which is not a failure. A check that fails settles as
//! `check-failed` and hands its output to the repair after it, whose
//! success lets the next check run. A failing *last* check fails the loop
//! (`fleet/loop-exhausted`), and everything depending on the loop is
//! blocked.
//!
//! # Workspaces and write boundaries
//!
//! A node that may touch the checkout (scope `workspace`, or any node with
//! a declared boundary, v4+) is observed through git (see
//! [`git`](crate::run::git)): its base is snapshotted before it runs and
//! compared afterwards. Changes its boundary does not cover (below v4 there
//! is no claim and nothing is judged) are rolled back and fail the node
//! (`fleet/write-boundary`) naming each path; changes inside the boundary
//! are kept. Git-ignored paths are judged the same way (see
//! [`git`](crate::run::git) for how they are seen without a snapshot): one
//! the node created outside its boundary is deleted again; one it changed
//! or deleted there fails the node just the same, named, and is left as it
//! is, since no snapshot holds what it was. A step whose commands write
//! build outputs or caches into the checkout names them in its boundary.
//! (A resumed node is judged on ignored paths from its resume, not its
//! first attempt.) Paths under [`ExecutorConfig::exempt`] (the harness's
//! state directory) and the state directory itself, when it lies inside
//! the checkout, are never blamed. A read-only node without a declared
//! boundary needs no git at all.
//!
//! With `maxWorkers: 1` nodes work in the main checkout one at a time.
//! With more, every git-observed node works in its own detached
//! `git worktree`, created from a scratch commit of the main checkout as it
//! is when the node starts (HEAD plus everything merged so far, plus the
//! operator's uncommitted changes), on no branch. When it settles, its
//! kept changes are merged back with `git merge-tree` against that scratch
//! commit, in plan order among the nodes that ran side by side, and the
//! merged tree is written into the main checkout without touching its
//! index or HEAD. A conflict fails the node (`fleet/merge-conflict`) with
//! the paths named and leaves the main checkout as it was. Read-only
//! nodes without a boundary run in the main checkout. The write is
//! journalled before it starts ([`JournalEntry::Merging`]): a run killed
//! while writing leaves paths half merged, and its resume puts each of
//! them back as it was before the merge before anything else runs; the
//! node, which never settled, runs again.
//!
//! A failed node's changes inside its boundary are kept (and merged) like a
//! successful one's: only boundary violations are rolled back, the same in
//! both modes.
//!
//! # Gates, plans, commits
//!
//! A v5 gate author is an agent node followed by the gate's command on the
//! fresh gate file: red admits the gate, green fails the node
//! (`fleet/gate-not-discriminating`); a gate-checked loop runs the command
//! as its check. A commit step's `{{commitMessage}}` is the first
//! `commitFrom` candidate that authored one, else
//! `evoflux fleet <contract>: <step>`. A commit step whose checkout holds
//! exactly HEAD's tree has nothing to commit: its command does not run
//! and it settles as skipped (`fleet/nothing-to-commit`), which is no
//! failure and lets its dependents go on. A v5 plan node's answer is a
//! delegation plan ([`delegation`](crate::delegation)): a valid one is
//! journalled and spliced in as nodes after it (everything that waited for
//! the plan node waits for them too), an invalid one fails the node
//! (`fleet/delegation-plan-invalid`) and adds nothing.
//!
//! # Staleness
//!
//! A loop's code check that passed goes stale when a later step changes
//! the workspace while a step that depends on it has not started: it is
//! journalled stale and runs again first, at most
//! [`STALENESS_REVALIDATION_LIMIT`] times; a red re-run (its loop already
//! resolved) or one more change fails it (`fleet/stale-verification`).
//! Commit steps and verifications themselves make nothing stale.
//!
//! # Durability
//!
//! Every start and every settled receipt is appended to the
//! [`RunJournal`] before the run moves on. Running the same run id again
//! resumes it: nodes whose receipt is final (succeeded, a failed check
//! that handed over to its repair, skipped because the loop resolved) keep
//! it and are not run again; failed, blocked, stopped and interrupted
//! nodes run again. A resume against a plan with a different hash is
//! refused.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use evoflux_core::price::Usd;
use serde::Serialize;
use tokio::task::JoinSet;

use crate::boundary::WriteBoundary;
use crate::commands::CommandRegistry;
use crate::contract::{OnFailure, Scope};
use crate::delegation::{DelegationTask, delegated_nodes, parse_delegation_plan};
use crate::plan::{ExecutionPlan, NodeRole, NodeWork, PlanNode};
use crate::run::git::{Git, GitError, IgnoredFiles, MergeOutcome, Oid};
use crate::run::journal::{JournalEntry, JournalError, RunJournal, valid_run_id};
use crate::run::observe::{listed, observe};
use crate::run::receipt::{
    ContractOutcome, FailureReason, NodeOutcome, NodeReceipt, SkipReason, Workdir,
};
use crate::run::runner::{
    AgentRequest, AgentRunner, CommandRequest, CommandRunner, NodeInput, Verdict,
};

/// The longest output excerpt kept in a receipt (the tail).
pub const RECEIPT_OUTPUT_MAX_BYTES: usize = 8_000;

/// How many times one passed verification is re-run because a later step
/// changed the workspace before its result was used; past it the run
/// fails closed (`fleet/stale-verification`).
pub const STALENESS_REVALIDATION_LIMIT: u32 = 3;

/// Where and how a run works.
#[derive(Debug, Clone)]
pub struct ExecutorConfig {
    /// The main checkout.
    pub workspace: PathBuf,
    /// Scratch space outside the checkout: worktrees
    /// (`worktrees/<run>/<n>`) and private index files. Inside the
    /// checkout it must be git-ignored, or snapshots would see it; it is
    /// never blamed on a node.
    pub state_dir: PathBuf,
    /// The environment commands start from: only the base names and each
    /// command's declared names are taken from it. Defaults to this
    /// process's environment.
    pub parent_env: Vec<(OsString, OsString)>,
    /// Repository-relative path prefixes never blamed on a node (the
    /// harness's own state), e.g. `.evoflux/`.
    pub exempt: Vec<String>,
}

impl ExecutorConfig {
    pub fn new(workspace: impl Into<PathBuf>, state_dir: impl Into<PathBuf>) -> ExecutorConfig {
        ExecutorConfig {
            workspace: workspace.into(),
            state_dir: state_dir.into(),
            parent_env: std::env::vars_os().collect(),
            exempt: Vec::new(),
        }
    }
}

/// Why a run could not be carried out at all (a node's own failure is in
/// its receipt, never here).
#[derive(Debug, thiserror::Error)]
pub enum ExecutorError {
    #[error(transparent)]
    Journal(#[from] JournalError),
    #[error("fleet run '{0}': a run id is 1-128 characters of [A-Za-z0-9._-]")]
    RunId(String),
    #[error(
        "fleet run '{run_id}' was begun with plan {journal} and cannot resume with plan {plan}: \
         the contract or its variables changed"
    )]
    PlanChanged {
        run_id: String,
        journal: String,
        plan: String,
    },
    #[error(
        "fleet run '{run_id}': the journal does not begin with the run's plan; it is not a run \
         this executor wrote"
    )]
    JournalShape { run_id: String },
    #[error(
        "{}: not a git checkout; steps that touch the workspace are observed through git",
        path.display()
    )]
    NotGit { path: PathBuf },
    #[error("fleet run: {0}")]
    Git(#[from] GitError),
}

impl ExecutorError {
    pub fn code(&self) -> &'static str {
        match self {
            ExecutorError::Journal(e) => e.code(),
            ExecutorError::RunId(_) => "fleet/run-id-invalid",
            ExecutorError::PlanChanged { .. } => "fleet/plan-changed",
            ExecutorError::JournalShape { .. } => "fleet/journal-corrupt",
            ExecutorError::NotGit { .. } => "fleet/workspace-not-git",
            ExecutorError::Git(_) => "fleet/workspace",
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RunStatus {
    /// Every node succeeded, or was a failed check its loop got past, or
    /// was not needed.
    Succeeded,
    /// Some node failed or was blocked; independent branches ran
    /// (`onFailure: continue`).
    Failed,
    /// A node failed and `onFailure: stop` started nothing after it.
    Stopped,
    /// `budgetUsd` was spent before every node could start.
    BudgetExhausted,
}

/// Why a loop ended the way it did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LoopReason {
    Resolved,
    /// Its last check failed.
    BoundExhausted,
    /// One of its nodes failed for another reason.
    StepFailed,
    /// It never reached a verdict (blocked, stopped, budget).
    NotReached,
}

/// A loop's outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LoopOutcome {
    pub id: String,
    pub resolved: bool,
    /// Checks that ran.
    pub attempts: u32,
    /// Repairs that ran.
    pub repairs: u32,
    pub reason: LoopReason,
}

/// What a run came to.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunReport {
    pub run_id: String,
    pub plan_hash: String,
    pub status: RunStatus,
    /// One per plan node, in plan order.
    pub receipts: Vec<NodeReceipt>,
    pub loops: Vec<LoopOutcome>,
    /// Every receipt's cost, earlier attempts of a resumed run included.
    pub spent: Usd,
    /// Nodes whose receipt came from an earlier attempt of this run.
    pub resumed: Vec<String>,
    /// Nodes an earlier attempt started and never settled (killed).
    pub interrupted: Vec<String>,
    /// Passed verifications re-run because a later step changed the
    /// workspace before their result was used, once per re-run.
    pub revalidated: Vec<String>,
}

impl RunReport {
    pub fn receipt(&self, node: &str) -> Option<&NodeReceipt> {
        self.receipts.iter().find(|r| r.node == node)
    }
}

/// Runs one plan. Cheap to share: runners and the journal are `Arc`s.
#[derive(Debug)]
pub struct Executor {
    plan: Arc<ExecutionPlan>,
    registry: Option<Arc<CommandRegistry>>,
    agents: Arc<dyn AgentRunner>,
    commands: Arc<dyn CommandRunner>,
    journal: Arc<dyn RunJournal>,
    config: ExecutorConfig,
}

/// Where a started node works.
#[derive(Debug, Clone)]
enum Mode {
    /// The main checkout, unobserved (read-only without a boundary).
    Plain,
    /// The main checkout, observed from `base`.
    Main { base: Oid },
    /// Its own worktree at `dir`, checked out at `commit` (tree `base`).
    Worktree {
        dir: PathBuf,
        commit: Oid,
        base: Oid,
    },
}

/// Everything a node's task needs, owned.
#[derive(Debug)]
struct Job {
    run_id: String,
    index: usize,
    node: PlanNode,
    task: String,
    mode: Mode,
    workdir: PathBuf,
    scratch: PathBuf,
    exempt: Vec<String>,
    /// The checkout's ignored files before the node, when it has a
    /// boundary to be held to (see [`git`](crate::run::git)).
    ignored: Option<IgnoredFiles>,
    inputs: Vec<NodeInput>,
    /// The bound command of a code or gate node, or why it cannot be bound.
    command: Option<Result<CommandRequest, String>>,
    /// A commit step whose checkout holds exactly HEAD's tree: there is
    /// nothing to commit, and its command does not run.
    nothing_to_commit: bool,
    agents: Arc<dyn AgentRunner>,
    commands: Arc<dyn CommandRunner>,
}

/// A task's answer.
#[derive(Debug)]
struct JobResult {
    index: usize,
    receipt: NodeReceipt,
    /// A plan node's valid delegation plan (its text, for the journal, and
    /// its tasks), spliced in when it settles.
    delegation: Option<(String, Vec<DelegationTask>)>,
    /// The worktree's tree after the node (violations rolled back).
    final_tree: Option<Oid>,
}

enum State {
    Pending,
    Running,
    Done(Box<NodeReceipt>),
}

impl Executor {
    pub fn new(
        plan: ExecutionPlan,
        agents: Arc<dyn AgentRunner>,
        commands: Arc<dyn CommandRunner>,
        journal: Arc<dyn RunJournal>,
        config: ExecutorConfig,
    ) -> Executor {
        Executor {
            plan: Arc::new(plan),
            registry: None,
            agents,
            commands,
            journal,
            config,
        }
    }

    /// The registry code and gate nodes bind their commands against.
    /// Without one, such a node fails `fleet/command-unbound`.
    pub fn with_registry(mut self, registry: CommandRegistry) -> Executor {
        self.registry = Some(Arc::new(registry));
        self
    }

    pub fn plan(&self) -> &ExecutionPlan {
        &self.plan
    }

    /// Runs (or resumes) run `run_id` to its end. Dropping the future
    /// abandons the run: running tasks are aborted and their child
    /// processes killed; the journal holds what settled, and running the
    /// same id again resumes.
    pub async fn run(&self, run_id: &str) -> Result<RunReport, ExecutorError> {
        if !valid_run_id(run_id) {
            return Err(ExecutorError::RunId(run_id.to_owned()));
        }
        let plan = &self.plan;
        let main = Git::new(&self.config.workspace, self.config.state_dir.join("index"));
        let splices = |n: &PlanNode| matches!(n.work, NodeWork::Plan { .. });
        if plan.nodes.iter().any(|n| needs_git(n) || splices(n)) && !main.is_work_tree().await {
            return Err(ExecutorError::NotGit {
                path: self.config.workspace.clone(),
            });
        }

        let mut run = RunState::new(self, run_id, main);
        run.restore().await?;
        run.clear_stale_worktrees().await;
        run.drive().await?;
        Ok(run.report())
    }
}

/// Why a worktree's result could not be merged back.
#[derive(Debug)]
enum MergeError {
    /// Git failed: the node fails (`fleet/workspace`).
    Git(GitError),
    /// The merge could not be journalled: the run stops.
    Journal(JournalError),
}

impl From<GitError> for MergeError {
    fn from(e: GitError) -> MergeError {
        MergeError::Git(e)
    }
}

/// Repository-relative prefixes never blamed on a node: the configured
/// ones, and the state directory when it lies inside the checkout.
fn exempt_paths(config: &ExecutorConfig) -> Vec<String> {
    let mut exempt = config.exempt.clone();
    if let Ok(rel) = config.state_dir.strip_prefix(&config.workspace)
        && let Some(rel) = rel.to_str()
        && !rel.is_empty()
    {
        exempt.push(format!("{}/", rel.trim_end_matches('/')));
    }
    exempt
}

/// Why a node could not be started.
#[derive(Debug)]
enum Prepare {
    /// Its checkout could not be set up: the node fails.
    Workspace(GitError),
    /// The start could not be made durable: the run stops.
    Journal(JournalError),
}

impl From<GitError> for Prepare {
    fn from(e: GitError) -> Prepare {
        Prepare::Workspace(e)
    }
}

/// Whether the node may write (for `writers: 1`): a workspace node whose
/// boundary, if declared, is not empty.
fn is_writer(node: &PlanNode) -> bool {
    node.scope == Scope::Workspace && node.writes.as_ref().is_none_or(|w| !w.is_empty())
}

/// Whether the node is a code verification (a loop's code check): a
/// passed one goes stale when a later step changes the workspace.
fn is_verification(node: &PlanNode) -> bool {
    matches!(
        node.work,
        NodeWork::Code {
            verification: true,
            ..
        }
    )
}

/// Whether the node is a commit step (it changes history, not the work).
fn is_commit(node: &PlanNode) -> bool {
    matches!(&node.work, NodeWork::Code { commit_from, .. } if !commit_from.is_empty())
}

/// Whether git observes the node: it may touch the workspace, or it has a
/// boundary to be held to (a v4 read-only node must change nothing).
fn needs_git(node: &PlanNode) -> bool {
    node.scope == Scope::Workspace || node.writes.is_some()
}

/// Milliseconds since the Unix epoch: the clock of receipts and run
/// records.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// The last `max` bytes of `s`, on a character boundary.
fn tail(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    let mut start = s.len() - max;
    while !s.is_char_boundary(start) {
        start += 1;
    }
    format!("[... truncated ...]\n{}", &s[start..])
}

struct RunState<'e> {
    ex: &'e Executor,
    run_id: String,
    main: Git,
    /// The plan's nodes, then the tasks delegation plans spliced in.
    nodes: Vec<PlanNode>,
    /// The task of each spliced node (the others run the plan's).
    tasks: HashMap<usize, String>,
    /// Plan nodes whose delegation plan splices in when they settle.
    pending_splice: HashMap<usize, (String, Vec<DelegationTask>)>,
    /// Re-runs of each passed verification made stale.
    revalidations: HashMap<usize, u32>,
    revalidated: Vec<String>,
    states: Vec<State>,
    index: HashMap<String, usize>,
    deps: Vec<Vec<usize>>,
    /// Loop index of each loop node.
    loop_of: HashMap<usize, usize>,
    budget: Option<Usd>,
    spent: Usd,
    halt: Option<SkipReason>,
    resumed: Vec<String>,
    interrupted: Vec<String>,
    /// Main-checkout bases of interrupted nodes, from their `Started`.
    resume_base: HashMap<usize, Oid>,
    worktrees: BTreeMap<usize, Mode>,
    running_worktrees: BTreeSet<usize>,
    pending_merge: BTreeMap<usize, JobResult>,
    /// Writers running now, for `writers: 1`.
    running_writers: usize,
    /// Every node before this index has settled: scans start here, so a
    /// long plan is not rescanned from the top after every node.
    first_open: usize,
    /// Paths never blamed: the configured ones, and the state directory
    /// when it lies inside the checkout (its private index files come and
    /// go while nodes run).
    exempt: Vec<String>,
}

impl<'e> RunState<'e> {
    fn new(ex: &'e Executor, run_id: &str, main: Git) -> RunState<'e> {
        let plan = &ex.plan;
        let index: HashMap<String, usize> = plan
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.id.clone(), i))
            .collect();
        let deps = plan
            .nodes
            .iter()
            .map(|n| {
                n.dependencies
                    .iter()
                    .filter_map(|d| index.get(d).copied())
                    .collect()
            })
            .collect();
        let mut loop_of = HashMap::new();
        for (li, l) in plan.loops.iter().enumerate() {
            for id in l.check_ids.iter().chain(&l.repair_ids) {
                if let Some(&i) = index.get(id) {
                    loop_of.insert(i, li);
                }
            }
        }
        RunState {
            ex,
            run_id: run_id.to_owned(),
            main,
            nodes: plan.nodes.clone(),
            tasks: HashMap::new(),
            pending_splice: HashMap::new(),
            revalidations: HashMap::new(),
            revalidated: Vec::new(),
            states: plan.nodes.iter().map(|_| State::Pending).collect(),
            index,
            deps,
            loop_of,
            budget: plan.budget_usd.and_then(Usd::from_dollars),
            spent: Usd::ZERO,
            halt: None,
            resumed: Vec::new(),
            interrupted: Vec::new(),
            resume_base: HashMap::new(),
            worktrees: BTreeMap::new(),
            running_worktrees: BTreeSet::new(),
            pending_merge: BTreeMap::new(),
            running_writers: 0,
            first_open: 0,
            exempt: exempt_paths(&ex.config),
        }
    }

    /// Reads the journal: begins the run, or resumes it.
    async fn restore(&mut self) -> Result<(), ExecutorError> {
        let plan = &self.ex.plan;
        let entries = self.ex.journal.load(&self.run_id).await?;
        let mut entries = entries.into_iter();
        match entries.next() {
            None => {
                let begin = JournalEntry::Begin {
                    run_id: self.run_id.clone(),
                    contract: plan.contract.clone(),
                    plan_hash: plan.hash.to_string(),
                    started_at_ms: now_ms(),
                };
                self.ex.journal.append(&self.run_id, &begin).await?;
                return Ok(());
            }
            Some(JournalEntry::Begin { plan_hash, .. }) => {
                if plan_hash != plan.hash.to_string() {
                    return Err(ExecutorError::PlanChanged {
                        run_id: self.run_id.clone(),
                        journal: plan_hash,
                        plan: plan.hash.to_string(),
                    });
                }
            }
            Some(
                JournalEntry::Started { .. }
                | JournalEntry::Spliced { .. }
                | JournalEntry::Stale { .. }
                | JournalEntry::Merging { .. }
                | JournalEntry::MergeUndone { .. }
                | JournalEntry::Finished { .. },
            ) => {
                return Err(ExecutorError::JournalShape {
                    run_id: self.run_id.clone(),
                });
            }
        }
        let entries: Vec<JournalEntry> = entries.collect();
        // Splices first, so the nodes they added are known below: a plan
        // node's last splice, when the node then settled as succeeded.
        let mut splices: Vec<(String, String)> = Vec::new();
        let mut settled_ok: BTreeSet<&str> = BTreeSet::new();
        for entry in &entries {
            match entry {
                JournalEntry::Spliced { node, plan } => {
                    splices.retain(|(n, _)| n != node);
                    splices.push((node.clone(), plan.clone()));
                }
                JournalEntry::Finished { receipt } => {
                    if receipt.outcome == NodeOutcome::Succeeded {
                        settled_ok.insert(receipt.node.as_str());
                    } else {
                        settled_ok.remove(receipt.node.as_str());
                    }
                }
                JournalEntry::Begin { .. }
                | JournalEntry::Started { .. }
                | JournalEntry::Stale { .. }
                | JournalEntry::Merging { .. }
                | JournalEntry::MergeUndone { .. } => {}
            }
        }
        for (node, plan) in splices {
            if settled_ok.contains(node.as_str())
                && let Some(&i) = self.index.get(&node)
                && let Ok(tasks) = parse_delegation_plan(&plan, &self.nodes[i])
            {
                self.splice(i, &tasks);
            }
        }
        let mut last: HashMap<usize, NodeReceipt> = HashMap::new();
        let mut started: BTreeMap<usize, Option<Oid>> = BTreeMap::new();
        // Merges begun and neither settled nor undone, in journal order.
        let mut merging: Vec<(String, Oid, Oid)> = Vec::new();
        for entry in entries {
            match entry {
                JournalEntry::Begin { .. } | JournalEntry::Spliced { .. } => {}
                JournalEntry::Merging {
                    node,
                    before,
                    merged,
                } => {
                    merging.retain(|(n, _, _)| *n != node);
                    merging.push((node, before, merged));
                }
                JournalEntry::MergeUndone { node } => merging.retain(|(n, _, _)| *n != node),
                // A verification made stale is not final: it runs again.
                JournalEntry::Stale { node } => {
                    if let Some(&i) = self.index.get(&node) {
                        last.remove(&i);
                        *self.revalidations.entry(i).or_default() += 1;
                        self.revalidated.push(node);
                    }
                }
                JournalEntry::Started { node, base } => {
                    if let Some(&i) = self.index.get(&node) {
                        started.insert(i, base);
                    }
                }
                JournalEntry::Finished { receipt } => {
                    self.spent = self.spent.saturating_add(receipt.cost);
                    merging.retain(|(n, _, _)| *n != receipt.node);
                    if let Some(&i) = self.index.get(&receipt.node) {
                        started.remove(&i);
                        last.insert(i, *receipt);
                    }
                }
            }
        }
        for (node, before, merged) in merging {
            self.undo_merge(node, &before, &merged).await?;
        }
        for (i, base) in started {
            self.interrupted.push(self.nodes[i].id.clone());
            if let Some(b) = base {
                self.resume_base.insert(i, b);
            }
        }
        let mut kept: Vec<usize> = last
            .iter()
            .filter(|(_, r)| r.outcome.is_final())
            .map(|(i, _)| *i)
            .collect();
        kept.sort_unstable();
        for i in kept {
            if let Some(r) = last.remove(&i) {
                self.resumed.push(r.node.clone());
                self.states[i] = State::Done(Box::new(r));
            }
        }
        Ok(())
    }

    /// Puts back every path of a merge the run was killed in the middle
    /// of writing: the main checkout gets `before`'s content for each path
    /// that differs between `before` and `merged` (a path the merge would
    /// have created is deleted), whether the kill came before, during or
    /// after its write. Its node never settled, so it runs again from the
    /// checkout as it was.
    async fn undo_merge(
        &mut self,
        node: String,
        before: &str,
        merged: &str,
    ) -> Result<(), ExecutorError> {
        let changes = self.main.diff_trees(before, merged).await?;
        self.main.restore_paths(before, &changes).await?;
        self.ex
            .journal
            .append(&self.run_id, &JournalEntry::MergeUndone { node })
            .await?;
        Ok(())
    }

    /// Removes the worktrees an earlier, killed attempt of this run left
    /// behind (their work was never merged, so it is not the run's).
    async fn clear_stale_worktrees(&self) {
        let dir = self
            .ex
            .config
            .state_dir
            .join("worktrees")
            .join(&self.run_id);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return;
        };
        for entry in entries.flatten() {
            self.main.remove_worktree(&entry.path()).await;
        }
    }

    /// Adds the tasks of plan node `i`'s delegation plan after it: each a
    /// node of its own, and everything that waited for the plan node waits
    /// for them too.
    fn splice(&mut self, i: usize, tasks: &[DelegationTask]) {
        let waiting: Vec<usize> = (0..self.nodes.len())
            .filter(|&j| self.deps[j].contains(&i))
            .collect();
        let header = format!(
            "{}\n\n---\nYour task, from the delegation plan of step `{}`:\n",
            self.ex.plan.task.trim_end(),
            self.nodes[i].id
        );
        let mut added = Vec::new();
        for (node, task) in delegated_nodes(&self.nodes[i], tasks)
            .into_iter()
            .zip(tasks)
        {
            if self.index.contains_key(&node.id) {
                continue;
            }
            let k = self.nodes.len();
            let deps = node
                .dependencies
                .iter()
                .filter_map(|d| self.index.get(d).copied())
                .collect();
            self.index.insert(node.id.clone(), k);
            self.deps.push(deps);
            self.states.push(State::Pending);
            self.tasks
                .insert(k, format!("{header}{}", task.description));
            self.nodes.push(node);
            added.push(k);
        }
        for j in waiting {
            self.deps[j].extend(&added);
        }
    }

    fn done(&self, i: usize) -> Option<&NodeReceipt> {
        match &self.states[i] {
            State::Done(r) => Some(r),
            State::Pending | State::Running => None,
        }
    }

    /// Journals a receipt and applies its consequences: spend, the stop
    /// policy, loop resolution.
    async fn settle(&mut self, i: usize, mut receipt: NodeReceipt) -> Result<(), ExecutorError> {
        // A plan node that succeeded splices its tasks in, journalled
        // before its receipt so a resume finds them.
        if let Some((plan, tasks)) = self.pending_splice.remove(&i)
            && receipt.outcome == NodeOutcome::Succeeded
        {
            self.ex
                .journal
                .append(
                    &self.run_id,
                    &JournalEntry::Spliced {
                        node: receipt.node.clone(),
                        plan,
                    },
                )
                .await?;
            self.splice(i, &tasks);
        }
        // A re-run of a verification that had passed, red: its loop had
        // resolved, so there is no repair left to hand it to.
        if receipt.outcome == NodeOutcome::CheckFailed && self.revalidations.contains_key(&i) {
            receipt.outcome = NodeOutcome::Failed {
                reason: FailureReason::StaleVerification,
                message: "it passed, a later step changed the workspace, and re-run it failed"
                    .to_owned(),
            };
        }
        // A failing last check fails its loop.
        if receipt.outcome == NodeOutcome::CheckFailed
            && let Some(&li) = self.loop_of.get(&i)
        {
            let l = &self.ex.plan.loops[li];
            if l.check_ids.last() == Some(&receipt.node) {
                receipt.outcome = NodeOutcome::Failed {
                    reason: FailureReason::LoopExhausted,
                    message: format!(
                        "loop '{}' failed all {} of its checks",
                        l.id, l.max_attempts
                    ),
                };
            }
        }
        self.ex
            .journal
            .append(
                &self.run_id,
                &JournalEntry::Finished {
                    receipt: Box::new(receipt.clone()),
                },
            )
            .await?;
        self.spent = self.spent.saturating_add(receipt.cost);
        let resolved = receipt.role == NodeRole::Check && receipt.outcome == NodeOutcome::Succeeded;
        let mutated = receipt.outcome == NodeOutcome::Succeeded
            && !receipt.files_changed.is_empty()
            && !is_verification(&self.nodes[i])
            && !is_commit(&self.nodes[i]);
        if matches!(receipt.outcome, NodeOutcome::Failed { .. })
            && self.ex.plan.on_failure == OnFailure::Stop
            && self.halt.is_none()
        {
            self.halt = Some(SkipReason::Stopped);
        }
        if matches!(self.states[i], State::Running) && is_writer(&self.nodes[i]) {
            self.running_writers = self.running_writers.saturating_sub(1);
        }
        self.states[i] = State::Done(Box::new(receipt));
        if resolved && let Some(&li) = self.loop_of.get(&i) {
            let l = &self.ex.plan.loops[li];
            let members: Vec<usize> = l
                .check_ids
                .iter()
                .chain(&l.repair_ids)
                .filter_map(|id| self.index.get(id).copied())
                .collect();
            let mut later: Vec<usize> = members
                .into_iter()
                .filter(|&m| matches!(self.states[m], State::Pending))
                .collect();
            later.sort_unstable();
            for m in later {
                let r = NodeReceipt::skipped(&self.nodes[m], SkipReason::LoopResolved);
                Box::pin(self.settle(m, r)).await?;
            }
        }
        if mutated {
            self.revalidate_stale(i).await?;
        }
        Ok(())
    }

    /// After node `i` changed the workspace: every passed verification
    /// whose result some step has yet to use is run again before that
    /// step starts, at most [`STALENESS_REVALIDATION_LIMIT`] times each.
    async fn revalidate_stale(&mut self, i: usize) -> Result<(), ExecutorError> {
        let stale: Vec<usize> = (0..self.nodes.len())
            .filter(|&v| {
                v != i
                    && is_verification(&self.nodes[v])
                    && self
                        .done(v)
                        .is_some_and(|r| r.outcome == NodeOutcome::Succeeded)
                    && (0..self.nodes.len()).any(|j| {
                        self.deps[j].contains(&v) && matches!(self.states[j], State::Pending)
                    })
            })
            .collect();
        for v in stale {
            let count = self.revalidations.entry(v).or_default();
            *count += 1;
            if *count > STALENESS_REVALIDATION_LIMIT {
                let mut r = NodeReceipt::skipped(&self.nodes[v], SkipReason::Stopped);
                r.outcome = NodeOutcome::Failed {
                    reason: FailureReason::StaleVerification,
                    message: format!(
                        "the workspace changed after each of its {STALENESS_REVALIDATION_LIMIT} \
                         re-runs; the run fails closed rather than use a stale result"
                    ),
                };
                Box::pin(self.settle(v, r)).await?;
                continue;
            }
            let node = self.nodes[v].id.clone();
            self.ex
                .journal
                .append(&self.run_id, &JournalEntry::Stale { node: node.clone() })
                .await?;
            self.revalidated.push(node);
            self.states[v] = State::Pending;
            self.first_open = self.first_open.min(v);
        }
        Ok(())
    }

    /// Skips every pending node a settled dependency blocks. Plan order is
    /// topological, so one pass reaches the fixpoint.
    async fn skip_blocked(&mut self) -> Result<(), ExecutorError> {
        while self.first_open < self.states.len() && self.done(self.first_open).is_some() {
            self.first_open += 1;
        }
        for i in self.first_open..self.states.len() {
            if !matches!(self.states[i], State::Pending) {
                continue;
            }
            let blocked = self.deps[i].iter().any(|&d| {
                self.done(d)
                    .is_some_and(|r| !r.outcome.permits_dependents() && !self.crosses(d, r))
            });
            if blocked {
                let r = NodeReceipt::skipped(&self.nodes[i], SkipReason::DependencyBlocked);
                self.settle(i, r).await?;
            }
        }
        Ok(())
    }

    /// Whether a failed dependency still hands its output forward: under
    /// `onFailure: continue` a code step that ran and went red (exit code
    /// or timeout) is evidence for what follows (a red suite is what a
    /// later step works from), as in the reference executor. Anything else
    /// that failed blocks.
    fn crosses(&self, dep: usize, receipt: &NodeReceipt) -> bool {
        self.ex.plan.on_failure == OnFailure::Continue
            && matches!(
                self.nodes[dep].work,
                NodeWork::Code {
                    verification: false,
                    ..
                }
            )
            && matches!(
                receipt.outcome,
                NodeOutcome::Failed {
                    reason: FailureReason::CommandFailed | FailureReason::CommandTimeout,
                    ..
                }
            )
    }

    fn ready(&self, i: usize) -> bool {
        matches!(self.states[i], State::Pending)
            && self.deps[i].iter().all(|&d| self.done(d).is_some())
    }

    async fn drive(&mut self) -> Result<(), ExecutorError> {
        let max = usize::try_from(self.ex.plan.max_workers.max(1)).unwrap_or(1);
        let mut set: JoinSet<JobResult> = JoinSet::new();
        let mut task_node: HashMap<tokio::task::Id, usize> = HashMap::new();
        loop {
            self.skip_blocked().await?;
            if self.halt.is_none() {
                for i in self.first_open..self.states.len() {
                    if set.len() >= max {
                        break;
                    }
                    if !self.ready(i) {
                        continue;
                    }
                    if let Some(b) = self.budget
                        && self.spent >= b
                    {
                        self.halt = Some(SkipReason::BudgetExhausted);
                        break;
                    }
                    if self.ex.plan.single_writer
                        && is_writer(&self.nodes[i])
                        && self.running_writers > 0
                    {
                        // `writers: 1`: the next writer waits its turn;
                        // a later reader may still start.
                        continue;
                    }
                    match self.prepare(i, max).await {
                        Ok(job) => {
                            self.states[i] = State::Running;
                            if is_writer(&job.node) {
                                self.running_writers += 1;
                            }
                            let handle = set.spawn(run_job(job));
                            task_node.insert(handle.id(), i);
                        }
                        Err(Prepare::Journal(e)) => return Err(e.into()),
                        Err(Prepare::Workspace(e)) => {
                            if let Some(Mode::Worktree { dir, .. }) = self.worktrees.remove(&i) {
                                self.main.remove_worktree(&dir).await;
                            }
                            self.running_worktrees.remove(&i);
                            let mut r = NodeReceipt::skipped(&self.nodes[i], SkipReason::Stopped);
                            r.outcome = NodeOutcome::Failed {
                                reason: FailureReason::Workspace,
                                message: format!("cannot prepare its checkout: {e}"),
                            };
                            self.settle(i, r).await?;
                            self.merge_ready().await?;
                        }
                    }
                }
            }
            let Some(joined) = set.join_next_with_id().await else {
                break;
            };
            match joined {
                Ok((id, result)) => {
                    task_node.remove(&id);
                    self.finish(result).await?;
                }
                Err(e) => {
                    let Some(i) = task_node.remove(&e.id()) else {
                        continue;
                    };
                    let mut r = NodeReceipt::skipped(&self.nodes[i], SkipReason::Stopped);
                    r.outcome = NodeOutcome::Failed {
                        reason: FailureReason::RunnerPanicked,
                        message: format!("the node's task ended abnormally: {e}"),
                    };
                    if let Some(Mode::Worktree { dir, .. }) = self.worktrees.remove(&i) {
                        self.running_worktrees.remove(&i);
                        self.main.remove_worktree(&dir).await;
                        r.workdir = Workdir::Worktree;
                    }
                    self.settle(i, r).await?;
                    self.merge_ready().await?;
                }
            }
        }
        // Whatever never started.
        let reason = self.halt.unwrap_or(SkipReason::DependencyBlocked);
        for i in 0..self.states.len() {
            if matches!(self.states[i], State::Pending) {
                let r = NodeReceipt::skipped(&self.nodes[i], reason);
                self.settle(i, r).await?;
            }
        }
        Ok(())
    }

    /// Chooses the node's workdir, takes its base, binds its command and
    /// journals its start. An error here is a workspace failure of the node.
    async fn prepare(&mut self, i: usize, max: usize) -> Result<Job, Prepare> {
        let ex = self.ex;
        let node = self.nodes[i].clone();
        let mode = if !needs_git(&node) {
            Mode::Plain
        } else if max == 1 {
            let base = match self.resume_base.remove(&i) {
                Some(b) => b,
                None => self.main.snapshot().await?,
            };
            Mode::Main { base }
        } else {
            let base = self.main.snapshot().await?;
            let head = self.main.head().await?;
            let commit = self
                .main
                .commit_tree(
                    &base,
                    head.as_deref(),
                    &format!("evoflux fleet run {}: base of {}", self.run_id, node.id),
                )
                .await?;
            let dir = ex
                .config
                .state_dir
                .join("worktrees")
                .join(&self.run_id)
                .join(format!("{i}"));
            let mode = Mode::Worktree {
                dir: dir.clone(),
                commit: commit.clone(),
                base,
            };
            // Registered first, so a failure below is cleaned up.
            self.worktrees.insert(i, mode.clone());
            self.running_worktrees.insert(i);
            self.main.add_worktree(&dir, &commit).await?;
            mode
        };
        let workdir = match &mode {
            Mode::Plain | Mode::Main { .. } => ex.config.workspace.clone(),
            Mode::Worktree { dir, .. } => dir.clone(),
        };
        // Ignored files are only ever judged against a boundary.
        let ignored = match (&mode, &node.writes) {
            (Mode::Main { .. } | Mode::Worktree { .. }, Some(_)) => Some(
                Git::new(&workdir, ex.config.state_dir.join("index"))
                    .ignored()
                    .await?,
            ),
            (Mode::Plain, _) | (_, None) => None,
        };
        let nothing_to_commit = is_commit(&node) && self.nothing_to_commit(&mode).await;
        let base = match &mode {
            Mode::Main { base } => Some(base.clone()),
            Mode::Plain | Mode::Worktree { .. } => None,
        };
        ex.journal
            .append(
                &self.run_id,
                &JournalEntry::Started {
                    node: node.id.clone(),
                    base,
                },
            )
            .await
            .map_err(Prepare::Journal)?;
        let inputs = self.deps[i]
            .iter()
            .filter_map(|&d| self.done(d))
            .filter_map(|r| {
                r.output.as_ref().map(|o| NodeInput {
                    node: r.node.clone(),
                    output: o.clone(),
                })
            })
            .collect();
        let command = self.bind_command(&node, &workdir);
        Ok(Job {
            run_id: self.run_id.clone(),
            index: i,
            node,
            task: self
                .tasks
                .get(&i)
                .cloned()
                .unwrap_or_else(|| ex.plan.task.clone()),
            mode,
            workdir,
            scratch: ex.config.state_dir.join("index"),
            exempt: self.exempt.clone(),
            ignored,
            inputs,
            command,
            nothing_to_commit,
            agents: Arc::clone(&ex.agents),
            commands: Arc::clone(&ex.commands),
        })
    }

    /// Whether the checkout a commit node starts from is exactly HEAD's
    /// tree (as a snapshot sees it: tracked and untracked files, ignored
    /// ones aside), so no commit could record anything. Anything unknown
    /// (no HEAD yet, a git error) answers no, and the command runs.
    async fn nothing_to_commit(&self, mode: &Mode) -> bool {
        let tree = match mode {
            Mode::Main { base } | Mode::Worktree { base, .. } => base.clone(),
            Mode::Plain => match self.main.snapshot().await {
                Ok(t) => t,
                Err(_) => return false,
            },
        };
        match self.main.head().await {
            Ok(Some(head)) => self
                .main
                .tree_of(&head)
                .await
                .is_ok_and(|head_tree| head_tree == tree),
            Ok(None) | Err(_) => false,
        }
    }

    /// The command a code or gate node runs, with its placeholders bound:
    /// `{{commitMessage}}` from the first `commitFrom` candidate that
    /// authored one, `{{path}}` for gates.
    fn bind_command(
        &self,
        node: &PlanNode,
        workdir: &std::path::Path,
    ) -> Option<Result<CommandRequest, String>> {
        let mut vars = BTreeMap::new();
        let (id, args): (&str, &[String]) = match &node.work {
            NodeWork::Code {
                command,
                args,
                commit_from,
                ..
            } => {
                if !commit_from.is_empty() {
                    let message = commit_from
                        .iter()
                        .filter_map(|c| self.index.get(c))
                        .filter_map(|&c| self.done(c))
                        .find_map(|r| r.commit_message.clone())
                        .unwrap_or_else(|| {
                            format!("evoflux fleet {}: {}", self.ex.plan.contract, node.step)
                        });
                    vars.insert("commitMessage".to_owned(), message);
                }
                (command.as_str(), args.as_slice())
            }
            NodeWork::GateAuthor { path, run, .. } | NodeWork::GateCheck { path, run, .. } => {
                vars.insert("path".to_owned(), path.clone());
                (run.as_str(), &[])
            }
            NodeWork::Agent { .. } | NodeWork::Plan { .. } => return None,
        };
        let Some(registry) = &self.ex.registry else {
            return Some(Err(format!(
                "node '{}' runs command '{id}' but the run has no command registry",
                node.id
            )));
        };
        let bound = registry.require(id).and_then(|cmd| {
            let argv = cmd.bind(&vars, args)?;
            Ok(CommandRequest {
                run_id: self.run_id.clone(),
                node: node.id.clone(),
                command: id.to_owned(),
                argv,
                checkout: workdir.to_path_buf(),
                cwd: workdir.join(&cmd.cwd),
                env: cmd.environment(&self.ex.config.parent_env),
                timeout: Duration::from_millis(cmd.timeout_ms),
            })
        });
        Some(bound.map_err(|e| e.to_string()))
    }

    /// A task came back: plain and main-checkout nodes settle now;
    /// worktree nodes wait for their turn to merge.
    async fn finish(&mut self, mut result: JobResult) -> Result<(), ExecutorError> {
        if let Some(plan) = result.delegation.take() {
            self.pending_splice.insert(result.index, plan);
        }
        let i = result.index;
        if self.running_worktrees.remove(&i) {
            self.pending_merge.insert(i, result);
            self.merge_ready().await
        } else {
            self.settle(i, result.receipt).await
        }
    }

    /// Merges finished worktree nodes in plan order: the lowest waiting
    /// one, once no worktree node before it in the plan is still running.
    async fn merge_ready(&mut self) -> Result<(), ExecutorError> {
        while let Some((&i, _)) = self.pending_merge.first_key_value() {
            if self.running_worktrees.iter().any(|&r| r < i) {
                break;
            }
            let Some(mut result) = self.pending_merge.remove(&i) else {
                break;
            };
            let mode = self.worktrees.remove(&i);
            if let Some(Mode::Worktree { dir, commit, .. }) = &mode {
                if !result.receipt.files_changed.is_empty()
                    && let Some(tree) = &result.final_tree
                {
                    match self.merge_back(&result.receipt.node, commit, tree).await {
                        Ok(MergeOutcome::Clean(_)) => {}
                        Ok(MergeOutcome::Conflict(paths)) => {
                            result.receipt.outcome = NodeOutcome::Failed {
                                reason: FailureReason::MergeConflict,
                                message: format!(
                                    "its changes conflict with the main checkout in: {}",
                                    paths.join(", ")
                                ),
                            };
                            result.receipt.conflicts = paths;
                        }
                        Err(MergeError::Git(e)) => {
                            result.receipt.outcome = NodeOutcome::Failed {
                                reason: FailureReason::Workspace,
                                message: format!("cannot merge its worktree back: {e}"),
                            };
                        }
                        // The merge could not be made durable: the run
                        // stops, as for any start it cannot journal.
                        Err(MergeError::Journal(e)) => {
                            self.main.remove_worktree(dir).await;
                            return Err(e.into());
                        }
                    }
                }
                self.main.remove_worktree(dir).await;
            }
            self.settle(i, result.receipt).await?;
        }
        Ok(())
    }

    /// Three-way merge of the worktree's result into the main checkout.
    /// Journalled before the checkout is written ([`JournalEntry::Merging`]),
    /// so a run killed while writing it puts the paths back on resume.
    async fn merge_back(
        &self,
        node: &str,
        base_commit: &str,
        theirs_tree: &str,
    ) -> Result<MergeOutcome, MergeError> {
        let current = self.main.snapshot().await?;
        let head = self.main.head().await?;
        let ours = self
            .main
            .commit_tree(&current, head.as_deref(), "evoflux fleet: main checkout")
            .await?;
        let theirs = self
            .main
            .commit_tree(theirs_tree, Some(base_commit), "evoflux fleet: node result")
            .await?;
        let outcome = self.main.merge(base_commit, &ours, &theirs).await?;
        if let MergeOutcome::Clean(tree) = &outcome {
            let changes = self.main.diff_trees(tree, &current).await?;
            if !changes.is_empty() {
                self.ex
                    .journal
                    .append(
                        &self.run_id,
                        &JournalEntry::Merging {
                            node: node.to_owned(),
                            before: current.clone(),
                            merged: tree.clone(),
                        },
                    )
                    .await
                    .map_err(MergeError::Journal)?;
            }
            self.main.restore_paths(tree, &changes).await?;
        }
        Ok(outcome)
    }

    fn report(self) -> RunReport {
        let plan = &self.ex.plan;
        let receipts: Vec<NodeReceipt> = self
            .states
            .into_iter()
            .zip(&self.nodes)
            .map(|(s, n)| match s {
                State::Done(r) => *r,
                State::Pending | State::Running => {
                    NodeReceipt::skipped(n, SkipReason::DependencyBlocked)
                }
            })
            .collect();
        let by_id: HashMap<&str, &NodeReceipt> =
            receipts.iter().map(|r| (r.node.as_str(), r)).collect();
        let loops = plan
            .loops
            .iter()
            .map(|l| {
                let ran = |ids: &[String]| {
                    let n = ids
                        .iter()
                        .filter_map(|id| by_id.get(id.as_str()))
                        .filter(|r| !matches!(r.outcome, NodeOutcome::Skipped { .. }))
                        .count();
                    u32::try_from(n).unwrap_or(u32::MAX)
                };
                let outcomes: Vec<&NodeOutcome> = l
                    .check_ids
                    .iter()
                    .chain(&l.repair_ids)
                    .filter_map(|id| by_id.get(id.as_str()).map(|r| &r.outcome))
                    .collect();
                let resolved = l.check_ids.iter().any(|id| {
                    by_id
                        .get(id.as_str())
                        .is_some_and(|r| r.outcome == NodeOutcome::Succeeded)
                });
                let reason = if resolved {
                    LoopReason::Resolved
                } else if outcomes.iter().any(|o| {
                    matches!(
                        o,
                        NodeOutcome::Failed {
                            reason: FailureReason::LoopExhausted,
                            ..
                        }
                    )
                }) {
                    LoopReason::BoundExhausted
                } else if outcomes
                    .iter()
                    .any(|o| matches!(o, NodeOutcome::Failed { .. }))
                {
                    LoopReason::StepFailed
                } else {
                    LoopReason::NotReached
                };
                LoopOutcome {
                    id: l.id.clone(),
                    resolved,
                    attempts: ran(&l.check_ids),
                    repairs: ran(&l.repair_ids),
                    reason,
                }
            })
            .collect();
        let status = match self.halt {
            Some(SkipReason::BudgetExhausted) => RunStatus::BudgetExhausted,
            Some(SkipReason::Stopped) => RunStatus::Stopped,
            Some(
                SkipReason::LoopResolved
                | SkipReason::DependencyBlocked
                | SkipReason::NothingToCommit,
            )
            | None => {
                if receipts.iter().all(|r| r.outcome.permits_dependents()) {
                    RunStatus::Succeeded
                } else {
                    RunStatus::Failed
                }
            }
        };
        RunReport {
            run_id: self.run_id,
            plan_hash: plan.hash.to_string(),
            status,
            receipts,
            loops,
            spent: self.spent,
            resumed: self.resumed,
            interrupted: self.interrupted,
            revalidated: self.revalidated,
        }
    }
}

/// Runs one node's work and judges its changes; never fails (a problem is
/// the node's outcome).
async fn run_job(job: Job) -> JobResult {
    let started = Instant::now();
    let mut r = NodeReceipt::skipped(&job.node, SkipReason::Stopped);
    r.outcome = NodeOutcome::Succeeded;
    r.started_at_ms = now_ms();
    r.inputs = job.inputs.clone();
    r.workdir = match job.mode {
        Mode::Plain | Mode::Main { .. } => Workdir::Main,
        Mode::Worktree { .. } => Workdir::Worktree,
    };
    let is_check = job.node.role == NodeRole::Check;
    let mut delegation = None;
    match &job.node.work {
        NodeWork::Agent { .. } => {
            run_agent(&job, &mut r, is_check).await;
        }
        NodeWork::Plan { .. } => {
            let answer = run_agent(&job, &mut r, false).await;
            if r.outcome == NodeOutcome::Succeeded {
                match parse_delegation_plan(&answer, &job.node) {
                    Ok(tasks) => delegation = Some((answer, tasks)),
                    Err(e) => {
                        r.outcome = NodeOutcome::Failed {
                            reason: FailureReason::DelegationPlanInvalid,
                            message: format!("{e} [{}]", e.code()),
                        };
                    }
                }
            }
        }
        NodeWork::Code { .. } if job.nothing_to_commit => {
            r.outcome = NodeOutcome::Skipped {
                reason: SkipReason::NothingToCommit,
            };
            r.output = Some(
                "nothing to commit: the checkout holds exactly HEAD's tree, so the commit \
                 command did not run"
                    .to_owned(),
            );
        }
        NodeWork::Code { verification, .. } => {
            run_command(&job, &mut r, *verification || is_check).await;
        }
        NodeWork::GateCheck { .. } => {
            run_command(&job, &mut r, true).await;
        }
        NodeWork::GateAuthor { path, .. } => {
            run_agent(&job, &mut r, false).await;
            if r.outcome == NodeOutcome::Succeeded {
                let authored = r.output.take();
                run_command(&job, &mut r, true).await;
                // Red admits the gate; green means it tests nothing new.
                r.outcome = match r.outcome {
                    NodeOutcome::CheckFailed => NodeOutcome::Succeeded,
                    NodeOutcome::Succeeded => NodeOutcome::Failed {
                        reason: FailureReason::GateNotDiscriminating,
                        message: format!(
                            "the gate command passed against the fresh gate '{path}', so it \
                             cannot tell the work apart from none"
                        ),
                    },
                    other @ (NodeOutcome::Failed { .. } | NodeOutcome::Skipped { .. }) => other,
                };
                r.verdict = None;
                if r.output.is_none() {
                    r.output = authored;
                }
            }
        }
    }
    let mut final_tree = None;
    let (base, dir) = match &job.mode {
        Mode::Plain => (None, None),
        Mode::Main { base } => (Some(base.clone()), None),
        Mode::Worktree { dir, base, .. } => (Some(base.clone()), Some(dir.clone())),
    };
    if let Some(base) = base {
        let git = Git::new(&job.workdir, &job.scratch);
        match observe(
            &git,
            &base,
            job.ignored.as_ref(),
            job.node.writes.as_ref(),
            &job.exempt,
        )
        .await
        {
            Ok(seen) => {
                r.files_changed = seen.kept;
                if !seen.violations.is_empty() {
                    let paths = listed(&seen.violations);
                    let boundary = job
                        .node
                        .writes
                        .as_ref()
                        .map(WriteBoundary::to_string)
                        .unwrap_or_default();
                    r.outcome = NodeOutcome::Failed {
                        reason: FailureReason::WriteBoundary,
                        message: match seen.rollback_error {
                            None => format!(
                                "changed paths outside its write boundary ({boundary}), rolled \
                                 back: {paths}"
                            ),
                            Some(e) => format!(
                                "changed paths outside its write boundary ({boundary}): \
                                 {paths}; the rollback failed: {e}"
                            ),
                        },
                    };
                    r.boundary_violations = seen.violations;
                }
                if dir.is_some() {
                    final_tree = Some(seen.tree);
                }
            }
            Err(e) => {
                r.outcome = NodeOutcome::Failed {
                    reason: FailureReason::Workspace,
                    message: format!("cannot observe what it changed: {e}"),
                };
            }
        }
    }
    r.duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    JobResult {
        index: job.index,
        receipt: r,
        delegation,
        final_tree,
    }
}

/// Runs an agent node; returns the worker's whole answer (the receipt
/// keeps its tail).
async fn run_agent(job: &Job, r: &mut NodeReceipt, is_check: bool) -> String {
    let request = AgentRequest {
        run_id: job.run_id.clone(),
        node: job.node.clone(),
        task: job.task.clone(),
        workdir: job.workdir.clone(),
        writes: job.node.writes.clone(),
        inputs: job.inputs.clone(),
    };
    match job.agents.run_agent(&request).await {
        Err(e) => {
            r.cost = e.cost;
            r.outcome = NodeOutcome::Failed {
                reason: FailureReason::AgentFailed,
                message: e.message,
            };
            String::new()
        }
        Ok(out) => {
            r.cost = out.cost;
            r.repair_rounds = out.repair_rounds;
            r.output = Some(tail(&out.output, RECEIPT_OUTPUT_MAX_BYTES));
            r.commit_message = out.commit_message;
            r.contract = if out.contract_met {
                ContractOutcome::Met
            } else {
                ContractOutcome::Missed
            };
            r.verdict = out.verdict;
            r.outcome = if !out.contract_met {
                NodeOutcome::Failed {
                    reason: FailureReason::ResultContractMissed,
                    message: format!(
                        "the worker's result missed its contract after {} repair rounds",
                        out.repair_rounds
                    ),
                }
            } else if !is_check {
                NodeOutcome::Succeeded
            } else {
                match out.verdict {
                    Some(Verdict::Pass) => NodeOutcome::Succeeded,
                    Some(Verdict::Fail) => NodeOutcome::CheckFailed,
                    None => NodeOutcome::Failed {
                        reason: FailureReason::CheckUndecided,
                        message: "the check's answer gave no verdict".to_owned(),
                    },
                }
            };
            out.output
        }
    }
}

async fn run_command(job: &Job, r: &mut NodeReceipt, is_check: bool) {
    let request = match &job.command {
        Some(Ok(req)) => req,
        Some(Err(message)) => {
            r.outcome = NodeOutcome::Failed {
                reason: FailureReason::CommandUnbound,
                message: message.clone(),
            };
            return;
        }
        None => {
            r.outcome = NodeOutcome::Failed {
                reason: FailureReason::CommandUnbound,
                message: "the node has no command".to_owned(),
            };
            return;
        }
    };
    r.command = Some(request.argv.clone());
    match job.commands.run_command(request).await {
        Err(e) => {
            r.outcome = NodeOutcome::Failed {
                reason: FailureReason::CommandSpawn,
                message: e.to_string(),
            };
        }
        Ok(out) => {
            r.exit_code = out.exit_code;
            r.output = Some(tail(&out.output, RECEIPT_OUTPUT_MAX_BYTES));
            r.log = out.log.clone();
            let passed = out.passed();
            if is_check {
                r.verdict = Some(if passed { Verdict::Pass } else { Verdict::Fail });
            }
            r.outcome = match (passed, is_check) {
                (true, _) => NodeOutcome::Succeeded,
                (false, true) => NodeOutcome::CheckFailed,
                (false, false) if out.timed_out => NodeOutcome::Failed {
                    reason: FailureReason::CommandTimeout,
                    message: format!(
                        "`{}` ran past its timeout of {} ms",
                        request.argv.join(" "),
                        request.timeout.as_millis()
                    ),
                },
                (false, false) => NodeOutcome::Failed {
                    reason: FailureReason::CommandFailed,
                    message: format!(
                        "`{}` exited {}",
                        request.argv.join(" "),
                        out.exit_code
                            .map_or_else(|| "by a signal".to_owned(), |c| c.to_string())
                    ),
                },
            };
        }
    }
}
