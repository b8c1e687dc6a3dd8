//! The eval runner: `evals/<name>.yaml` tasks run as real sessions in
//! scratch workspaces and checked against what their outcome must show,
//! and the bundled skills' activation evals, through one report.
//!
//! A task eval opens a session through the same [`SessionBuilder`] every
//! front end uses, in a fresh store and a fresh workspace (a Work folder,
//! or a copy of the repository the command runs in, its ignored files
//! left out), as a team under a lead or as one worker recipe alone (the
//! way a fleet's agent step runs it), gives it the prompt and checks the
//! outcome: tools called or not (by name or action class, across the
//! team), files changed, the `final_output`, workers' contracts, the
//! answer (its text and its `final_output`), and the model
//! calls and tokens spent. Runs go in parallel, bounded by `jobs`; each
//! repeat is a fresh run. Activation evals rank the trigger cases of every
//! bundled skill (`evoflux_skills::evals::run_evals`) and count each case
//! as a run. [`compare`] sets a report against an earlier one.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use evoflux_agents::ToolCatalog;
use evoflux_core::AppMode;
use evoflux_core::ids::SessionId;
use evoflux_graph::eval::{ContractExpect, EvalDefinition, EvalTarget};
use evoflux_graph::{CompiledGraph, Definition, SlotKind};
use evoflux_model::Message;
use evoflux_store::Store;
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};

use evoflux_harness::events::ContractOutcome;
use evoflux_harness::{
    HarnessError, NonInteractive, TurnOptions, TurnOutcome, TurnStatus, WorkerEnd,
};

use crate::scratch::Scratch;
use crate::{AppContext, SessionBuilder, SessionError, SessionOptions};

mod answer;
mod check;

use answer::Answer;
pub use check::problems;

/// The format of [`EvalReport`]; `--compare` refuses others.
pub const REPORT_FORMAT: u32 = 1;
/// The prefix of the bundled skills' activation evals' names.
pub const ACTIVATION_PREFIX: &str = "activation/";

/// One task eval of the graph.
#[derive(Debug, Clone)]
pub struct TaskEval {
    pub name: String,
    /// The file it was read from (its directory is where a relative
    /// `scripted:` model path starts).
    pub file: Option<PathBuf>,
    pub definition: EvalDefinition,
}

/// The task evals a compiled graph selected, by name.
pub fn task_evals(graph: &CompiledGraph) -> Vec<TaskEval> {
    graph
        .nodes
        .iter()
        .filter(|n| n.slot.kind == SlotKind::Eval)
        .filter_map(|n| match &n.definition {
            Definition::Eval(e) => Some(TaskEval {
                name: n.slot.name.clone(),
                file: graph.binding(&n.source_id).and_then(|b| match &b.binding {
                    evoflux_graph::Binding::File { path, .. } => Some(path.clone()),
                    evoflux_graph::Binding::Builtin { .. } => None,
                }),
                definition: e.clone(),
            }),
            Definition::Config(_)
            | Definition::RemoteAgent(_)
            | Definition::Sandbox(_)
            | Definition::Tool(_)
            | Definition::Channel(_)
            | Definition::Connection(_)
            | Definition::Schedule(_)
            | Definition::Document { .. } => None,
        })
        .collect()
}

/// The evals of untrusted repositories, which wait for trust (they run a
/// model and tools), by name.
pub fn awaiting_trust(graph: &CompiledGraph) -> Vec<String> {
    let mut names: Vec<String> = graph
        .composition
        .entries
        .iter()
        .filter_map(|e| match e {
            evoflux_graph::compose::CompositionEntry::AwaitingTrust { source } => {
                use evoflux_graph::slot::PathClass;
                match evoflux_graph::slot::classify(&source.logical_path) {
                    PathClass::Slot { slot, .. } if slot.kind == SlotKind::Eval => Some(slot.name),
                    PathClass::Slot { .. }
                    | PathClass::McpServers
                    | PathClass::SkillResource
                    | PathClass::EvalResource
                    | PathClass::RunArtifact
                    | PathClass::InvalidName { .. }
                    | PathClass::Unsupported => None,
                }
            }
            evoflux_graph::compose::CompositionEntry::Shadowed { .. }
            | evoflux_graph::compose::CompositionEntry::Disabled { .. }
            | evoflux_graph::compose::CompositionEntry::Layered { .. } => None,
        })
        .collect();
    names.sort();
    names.dedup();
    names
}

/// The names of the bundled skills' activation evals.
pub fn activation_names() -> Vec<String> {
    evoflux_skills::bundled::bundled()
        .iter()
        .filter(|s| !s.trigger_cases.is_empty())
        .map(|s| format!("{ACTIVATION_PREFIX}{}", s.name))
        .collect()
}

/// How to run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Replaces every eval's `model`.
    pub model: Option<String>,
    /// Runs of each task eval.
    pub repeat: usize,
    /// Runs at once.
    pub jobs: usize,
    /// Also every bundled skill's activation eval (one named is run
    /// anyway).
    pub activation: bool,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            model: None,
            repeat: 1,
            jobs: 4,
            activation: false,
        }
    }
}

/// Which runner an eval went through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EvalKind {
    Task,
    Activation,
}

/// One failed check of one run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure {
    /// 1-based run (a case, for activation evals).
    pub run: usize,
    /// `eval/…`.
    pub code: String,
    pub message: String,
}

/// An eval's runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvalResult {
    pub name: String,
    pub kind: EvalKind,
    pub runs: usize,
    pub passed: usize,
    /// Model calls over every run (task evals).
    #[serde(default)]
    pub model_calls: u64,
    #[serde(default)]
    pub tokens: u64,
    /// Wall time over every run, in milliseconds.
    #[serde(default)]
    pub elapsed_ms: u64,
    pub failures: Vec<Failure>,
}

impl EvalResult {
    pub fn pass_rate(&self) -> f64 {
        if self.runs == 0 {
            0.0
        } else {
            self.passed as f64 / self.runs as f64
        }
    }
}

/// A whole run of the runner; what `--json` prints and the report file
/// holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvalReport {
    pub format: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    pub repeat: usize,
    pub results: Vec<EvalResult>,
}

impl EvalReport {
    /// Every run of every task eval passed. (Activation evals measure the
    /// catalog's ranking as a rate; a miss is reported, not failed.)
    pub fn all_passed(&self) -> bool {
        self.results
            .iter()
            .filter(|r| r.kind == EvalKind::Task)
            .all(|r| r.passed == r.runs)
    }
}

/// Why the runner could not run.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    #[error("no eval is named {}; the evals here are: {}", .missing.join(", "), .known.join(", "))]
    Unknown {
        missing: Vec<String>,
        known: Vec<String>,
    },
    #[error(
        "the evals {} belong to a repository you have not trusted, and an eval runs a model and tools; run `evoflux trust` to run them",
        .names.join(", ")
    )]
    AwaitingTrust { names: Vec<String> },
    #[error("{}: not an eval report of this evoflux ({detail})", .path.display())]
    Report { path: PathBuf, detail: String },
}

impl EvalError {
    pub fn code(&self) -> &'static str {
        match self {
            EvalError::Unknown { .. } => "eval/unknown",
            EvalError::AwaitingTrust { .. } => "eval/awaiting-trust",
            EvalError::Report { .. } => "eval/report-invalid",
        }
    }
}

/// Runs the evals named (every one when `names` is empty): the graph's
/// task evals, and the bundled skills' activation evals that are named
/// or, with [`RunOptions::activation`], all of them.
pub async fn run(
    app: &AppContext,
    graph: &CompiledGraph,
    names: &[String],
    options: &RunOptions,
) -> Result<EvalReport, EvalError> {
    // Never a green run that skipped evals waiting for trust.
    let waiting: Vec<String> = awaiting_trust(graph)
        .into_iter()
        .filter(|n| names.is_empty() || names.contains(n))
        .collect();
    if !waiting.is_empty() {
        return Err(EvalError::AwaitingTrust { names: waiting });
    }
    let tasks = task_evals(graph);
    let activations = activation_names();
    let known: Vec<String> = tasks
        .iter()
        .map(|t| t.name.clone())
        .chain(activations.iter().cloned())
        .collect();
    let missing: Vec<String> = names
        .iter()
        .filter(|n| !known.contains(n))
        .cloned()
        .collect();
    if !missing.is_empty() {
        return Err(EvalError::Unknown { missing, known });
    }
    let wanted = |name: &str| names.is_empty() || names.iter().any(|n| n == name);
    let activation_wanted =
        |name: &str| names.iter().any(|n| n == name) || (options.activation && names.is_empty());
    let catalog = Arc::new(ToolCatalog::from_graph(graph));
    let repeat = options.repeat.max(1);
    let runs: Vec<(usize, usize)> = tasks
        .iter()
        .enumerate()
        .filter(|(_, t)| wanted(&t.name))
        .flat_map(|(i, _)| (1..=repeat).map(move |r| (i, r)))
        .collect();
    let outcomes: Vec<(usize, RunOutcome)> = futures_util::stream::iter(runs)
        .map(|(i, r)| {
            let task = &tasks[i];
            let catalog = Arc::clone(&catalog);
            async move { (i, run_task(app, task, options, &catalog, r).await) }
        })
        .buffer_unordered(options.jobs.max(1))
        .collect()
        .await;
    let mut results: Vec<EvalResult> = Vec::new();
    for (i, task) in tasks.iter().enumerate().filter(|(_, t)| wanted(&t.name)) {
        let mut mine: Vec<&RunOutcome> = outcomes
            .iter()
            .filter(|(j, _)| *j == i)
            .map(|(_, o)| o)
            .collect();
        mine.sort_by_key(|o| o.run);
        results.push(EvalResult {
            name: task.name.clone(),
            kind: EvalKind::Task,
            runs: mine.len(),
            passed: mine.iter().filter(|o| o.failures.is_empty()).count(),
            model_calls: mine.iter().map(|o| o.model_calls).sum(),
            tokens: mine.iter().map(|o| o.tokens).sum(),
            elapsed_ms: mine.iter().map(|o| o.elapsed_ms).sum(),
            failures: mine.iter().flat_map(|o| o.failures.clone()).collect(),
        });
    }
    if activations.iter().any(|a| activation_wanted(a)) {
        results.extend(activation_results(&activation_wanted));
    }
    Ok(EvalReport {
        format: REPORT_FORMAT,
        model: options.model.clone(),
        repeat,
        results,
    })
}

/// The bundled skills' trigger cases through the catalog's ranking, one
/// result per skill, each case a run.
fn activation_results(wanted: &dyn Fn(&str) -> bool) -> Vec<EvalResult> {
    let started = Instant::now();
    let report = evoflux_skills::evals::run_evals(evoflux_skills::bundled::bundled());
    let elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    report
        .skills
        .iter()
        .map(|s| (format!("{ACTIVATION_PREFIX}{}", s.name), s))
        .filter(|(name, _)| wanted(name))
        .map(|(name, s)| EvalResult {
            name,
            kind: EvalKind::Activation,
            runs: s.positives.total + s.negatives.total,
            passed: s.positives.hit + s.negatives.hit,
            model_calls: 0,
            tokens: 0,
            elapsed_ms,
            failures: s
                .misses
                .iter()
                .enumerate()
                .map(|(i, m)| Failure {
                    run: i + 1,
                    code: if m.should_trigger {
                        "eval/skill-not-activated".to_owned()
                    } else {
                        "eval/skill-activated".to_owned()
                    },
                    message: format!(
                        "{:?} {} (ranked first: {})",
                        m.request,
                        if m.should_trigger {
                            "should load the skill"
                        } else {
                            "should not load the skill"
                        },
                        m.ranked_first.as_deref().unwrap_or("nothing")
                    ),
                })
                .collect(),
        })
        .collect()
}

/// What one run of a task eval showed.
#[derive(Debug)]
struct RunOutcome {
    run: usize,
    failures: Vec<Failure>,
    model_calls: u64,
    tokens: u64,
    elapsed_ms: u64,
}

async fn run_task(
    app: &AppContext,
    task: &TaskEval,
    options: &RunOptions,
    catalog: &ToolCatalog,
    run: usize,
) -> RunOutcome {
    let started = Instant::now();
    let mut outcome = match run_task_inner(app, task, options, catalog, run).await {
        Ok(o) => o,
        Err(e) => RunOutcome {
            run,
            failures: vec![Failure {
                run,
                code: "eval/run-failed".to_owned(),
                message: e,
            }],
            model_calls: 0,
            tokens: 0,
            elapsed_ms: 0,
        },
    };
    outcome.elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    outcome
}

async fn run_task_inner(
    app: &AppContext,
    task: &TaskEval,
    options: &RunOptions,
    catalog: &ToolCatalog,
    run: usize,
) -> Result<RunOutcome, String> {
    let def = &task.definition;
    let mode = AppMode::from(def.mode);
    let scratch = Scratch::open("evoflux-eval-")
        .await
        .map_err(|e| e.to_string())?;
    let mut app = app.clone();
    let mut workspaces = Vec::new();
    if mode == AppMode::Coding {
        let repo = evoflux_core::trust::repository_root(&app.cwd);
        let copy = scratch
            .root
            .join("workspace")
            .join(repo.file_name().unwrap_or_else(|| "repository".as_ref()));
        let (from, to) = (repo.clone(), copy.clone());
        tokio::task::spawn_blocking(move || crate::tree_copy::copy_tree(&from, &to))
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())?;
        app.inherit_trust(&repo, &copy).map_err(|e| e.to_string())?;
        workspaces.push(copy);
    }
    // The eval's own model's relative path starts at its file; one given
    // on the command line, where the command runs.
    let model_dir = match (&options.model, task.file.as_deref().and_then(Path::parent)) {
        (None, Some(dir)) => dir.to_path_buf(),
        (Some(_), _) | (None, None) => app.cwd.clone(),
    };
    let (lead, worker) = match def.target() {
        EvalTarget::Lead(lead) => (lead.map(str::to_owned), None),
        EvalTarget::Worker(id) => (None, Some(id)),
    };
    let mut builder = SessionBuilder::new(
        &app,
        SessionOptions {
            mode: Some(mode),
            workspaces: workspaces.clone(),
            lead,
            model: options.model.clone().or_else(|| def.model.clone()),
            ..SessionOptions::default()
        },
    )
    .store(scratch.store.clone())
    .approver(Arc::new(NonInteractive))
    .processes(scratch.processes.clone())
    .model_dir(model_dir);
    if let Some(id) = worker {
        builder = builder.worker(id);
    }
    let opened = builder
        .open()
        .await
        .map_err(|e: SessionError| format!("{e} [{}]", e.code()))?;
    let spec = opened.worker;
    let mut harness = opened.harness;
    let root = harness
        .session()
        .workspace
        .roots()
        .first()
        .cloned()
        .unwrap_or_default();
    let before = snapshot_blocking(root.clone()).await;
    let ran = match &spec {
        None => Ran::Lead(
            harness
                .turn(
                    Some(&def.prompt),
                    TurnOptions {
                        output_schema: def.output_schema.clone(),
                        ..TurnOptions::default()
                    },
                )
                .await,
        ),
        Some(spec) => Ran::Worker(harness.worker_task(spec, &def.prompt).await),
    };
    let id = harness.session().id;
    harness.shutdown().await;
    let after = snapshot_blocking(root.clone()).await;
    let seen = Seen::read(&scratch.store, id).await;
    scratch.close(false).await;
    let seen = seen.map_err(|e| e.to_string())?;
    let mut failures = Vec::new();
    let mut fail = |code: &str, message: String| {
        failures.push(Failure {
            run,
            code: code.to_owned(),
            message,
        });
    };
    let answer = match ran {
        Ran::Lead(turn) => lead_answer(turn, def.expect.contract, &mut fail),
        Ran::Worker(end) => worker_answer(end, def.expect.contract, &mut fail),
    };
    let x = &def.expect;
    for name in &x.tools_called {
        if !seen.tools.contains(name) {
            fail("eval/tool-not-called", format!("`{name}` was never called"));
        }
    }
    for name in &x.tools_not_called {
        if seen.tools.contains(name) {
            fail("eval/tool-called", format!("`{name}` was called"));
        }
    }
    let kinds: BTreeSet<_> = seen
        .tools
        .iter()
        .filter_map(|t| catalog.get(t).map(|d| d.behavior.action_class))
        .collect();
    for kind in &x.kinds_called {
        if !kinds.contains(kind) {
            fail(
                "eval/kind-not-called",
                format!("no tool of kind `{}` was called", kind_name(*kind)),
            );
        }
    }
    for kind in &x.kinds_not_called {
        if kinds.contains(kind) {
            fail(
                "eval/kind-called",
                format!("a tool of kind `{}` was called", kind_name(*kind)),
            );
        }
    }
    let changed = changed_files(&before, &after);
    for pattern in &x.files_changed {
        let Ok(glob) = evoflux_tools::PathGlob::new("expect.files_changed", pattern) else {
            continue;
        };
        if !changed.iter().any(|f| glob.is_match(Path::new(f))) {
            fail(
                "eval/files-not-changed",
                format!(
                    "no changed file matches `{pattern}` (changed: {})",
                    list(&changed)
                ),
            );
        }
    }
    for pattern in &x.files_unchanged {
        let Ok(glob) = evoflux_tools::PathGlob::new("expect.files_unchanged", pattern) else {
            continue;
        };
        let hit: Vec<String> = changed
            .iter()
            .filter(|f| glob.is_match(Path::new(f)))
            .cloned()
            .collect();
        if !hit.is_empty() {
            fail(
                "eval/file-changed",
                format!("changed, though `{pattern}` should not be: {}", list(&hit)),
            );
        }
    }
    for needle in &x.text_contains {
        if !answer.contains(needle) {
            fail(
                "eval/text-missing",
                format!("the answer does not contain {needle:?}"),
            );
        }
    }
    for needle in &x.text_not_contains {
        if answer.contains(needle) {
            fail(
                "eval/text-forbidden",
                format!("the answer contains {needle:?}"),
            );
        }
    }
    if let Some(max) = x.max_model_calls
        && seen.model_calls > max
    {
        fail(
            "eval/too-many-model-calls",
            format!("{} model calls, at most {max} allowed", seen.model_calls),
        );
    }
    if let Some(max) = x.max_tokens
        && seen.tokens > max
    {
        fail(
            "eval/too-many-tokens",
            format!("{} tokens, at most {max} allowed", seen.tokens),
        );
    }
    Ok(RunOutcome {
        run,
        failures,
        model_calls: seen.model_calls,
        tokens: seen.tokens,
        elapsed_ms: 0,
    })
}

/// What the run's session did with the prompt.
enum Ran {
    /// A lead's turn, with the team it dispatched to.
    Lead(Result<TurnOutcome, HarnessError>),
    /// A worker recipe's task, its answer held to the recipe's contract.
    Worker(Result<WorkerEnd, HarnessError>),
}

/// A lead's turn: how it ended, and whether the workers it dispatched met
/// their contracts (checked only when the eval says which it expects).
fn lead_answer(
    turn: Result<TurnOutcome, HarnessError>,
    contract: Option<ContractExpect>,
    fail: &mut dyn FnMut(&str, String),
) -> Answer {
    let outcome = match turn {
        Ok(outcome) => outcome,
        Err(e) => {
            fail("eval/turn-failed", format!("{e} [{}]", e.code()));
            return Answer::default();
        }
    };
    match outcome.status {
        TurnStatus::Completed => {}
        TurnStatus::LimitReached => fail(
            "eval/limit-reached",
            "the turn reached its model-call limit".into(),
        ),
        TurnStatus::CostLimitReached => fail("eval/cost-limit-reached", outcome.text.clone()),
        TurnStatus::OutputMissing => fail(
            "eval/output-missing",
            "the model did not produce a final_output that matches output_schema".into(),
        ),
        TurnStatus::WaitingForInput => fail(
            "eval/asked-a-question",
            format!(
                "the agent stopped to ask: {}",
                outcome
                    .question
                    .as_ref()
                    .map_or("", |q| q.question.as_str())
            ),
        ),
    }
    let unmet = !outcome.unmet_contracts.is_empty();
    match (contract, unmet) {
        (Some(ContractExpect::Met), true) => fail(
            "eval/contract-unmet",
            format!(
                "dispatched workers missed their contracts: {}",
                outcome
                    .unmet_contracts
                    .iter()
                    .map(|u| u.agent.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ),
        (Some(ContractExpect::Unmet), false) => fail(
            "eval/contract-met",
            "every dispatched worker met its contract, and the eval expected one to miss".into(),
        ),
        (Some(ContractExpect::Met), false) | (Some(ContractExpect::Unmet), true) | (None, _) => {}
    }
    Answer {
        text: outcome.text,
        output: outcome.output,
    }
}

/// A worker recipe's task: how it ended, and its own result contract,
/// which it is expected to meet unless the eval says `contract: unmet`
/// (a recipe's answer is its contract's shape, as a lead's is its
/// `output_schema`'s).
fn worker_answer(
    end: Result<WorkerEnd, HarnessError>,
    contract: Option<ContractExpect>,
    fail: &mut dyn FnMut(&str, String),
) -> Answer {
    let end = match end {
        Ok(end) => end,
        Err(e) => {
            fail("eval/turn-failed", format!("{e} [{}]", e.code()));
            return Answer::default();
        }
    };
    let exhausted = end.contract == Some(ContractOutcome::Exhausted);
    match end.status {
        TurnStatus::Completed => {}
        TurnStatus::LimitReached => fail("eval/limit-reached", end.text.clone()),
        TurnStatus::CostLimitReached => fail("eval/cost-limit-reached", end.text.clone()),
        // A missed contract is the contract's check, below.
        TurnStatus::OutputMissing if exhausted => {}
        // The session could not run the recipe (a tool it requires).
        TurnStatus::OutputMissing => fail("eval/worker-refused", end.text.clone()),
        TurnStatus::WaitingForInput => fail("eval/asked-a-question", end.text.clone()),
    }
    match (contract.unwrap_or(ContractExpect::Met), end.contract) {
        (ContractExpect::Met, Some(ContractOutcome::Exhausted)) => {
            fail("eval/contract-unmet", end.text.clone())
        }
        (ContractExpect::Unmet, Some(ContractOutcome::Pass)) => fail(
            "eval/contract-met",
            "the worker met its result contract, and the eval expected it to miss".into(),
        ),
        (ContractExpect::Met, Some(ContractOutcome::Pass))
        | (ContractExpect::Unmet, Some(ContractOutcome::Exhausted))
        // Never checked: the worker did not answer, said above.
        | (_, None) => {}
    }
    Answer {
        text: end.text,
        output: None,
    }
}

fn kind_name(kind: evoflux_graph::tool::ActionClass) -> String {
    serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

fn list(files: &[String]) -> String {
    if files.is_empty() {
        "none".to_owned()
    } else {
        files.join(", ")
    }
}

/// What the run's team did, read back from its store.
struct Seen {
    tools: BTreeSet<String>,
    model_calls: u64,
    tokens: u64,
}

impl Seen {
    async fn read(store: &Store, id: SessionId) -> Result<Seen, evoflux_store::StoreError> {
        let tree = store.session_tree(id).await?;
        let mut seen = Seen {
            tools: BTreeSet::new(),
            model_calls: 0,
            tokens: 0,
        };
        for s in &tree {
            for e in store.transcript(s.id).await? {
                if let Message::Assistant { tool_calls, .. } = e.message {
                    seen.tools.extend(tool_calls.into_iter().map(|c| c.name));
                }
            }
            let u = store.usage(s.id).await?;
            seen.model_calls += u.requests;
            seen.tokens += u.input_tokens + u.output_tokens;
        }
        Ok(seen)
    }
}

/// [`snapshot`] off the runtime's threads, so runs in parallel do not
/// wait on each other's file reads.
async fn snapshot_blocking(root: PathBuf) -> BTreeMap<String, String> {
    tokio::task::spawn_blocking(move || snapshot(&root))
        .await
        .unwrap_or_default()
}

/// Largest file hashed for the changed-files check (bigger ones compare
/// by size and time).
const SNAPSHOT_HASH_MAX: u64 = 8 * 1024 * 1024;

/// Each file under `root` (ignored files and `.git` left out) by its
/// relative path, with a fingerprint of its content.
fn snapshot(root: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    if !root.is_dir() {
        return out;
    }
    for entry in crate::tree_copy::walk(root).flatten() {
        let path = entry.path();
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let Ok(rel) = path.strip_prefix(root) else {
            continue;
        };
        let key = rel.to_string_lossy().replace('\\', "/");
        let print = match std::fs::metadata(path) {
            Ok(m) if m.len() <= SNAPSHOT_HASH_MAX => std::fs::read(path)
                .map(|b| evoflux_core::hash::sha256_hex(&b).to_string())
                .unwrap_or_default(),
            Ok(m) => format!("{}:{:?}", m.len(), m.modified().ok()),
            Err(_) => String::new(),
        };
        out.insert(key, print);
    }
    out
}

/// Files added, changed or removed between two snapshots.
fn changed_files(
    before: &BTreeMap<String, String>,
    after: &BTreeMap<String, String>,
) -> Vec<String> {
    let keys: BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    keys.into_iter()
        .filter(|k| before.get(*k) != after.get(*k))
        .cloned()
        .collect()
}

/// How one eval's pass rate moved between two reports.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    pub name: String,
    pub trend: Trend,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Trend {
    Better,
    Worse,
    Same,
    /// Only in the new report.
    New,
    /// Only in the earlier report.
    Gone,
}

/// Reads a report written by an earlier run.
pub fn read_report(path: &Path) -> Result<EvalReport, EvalError> {
    let bad = |detail: String| EvalError::Report {
        path: path.to_owned(),
        detail,
    };
    let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
    let report: EvalReport = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
    if report.format != REPORT_FORMAT {
        return Err(bad(format!(
            "format {} (this evoflux reads {REPORT_FORMAT})",
            report.format
        )));
    }
    Ok(report)
}

/// Each eval's pass rate in `earlier` against `now`, in `now`'s order, then
/// those that are gone.
pub fn compare(earlier: &EvalReport, now: &EvalReport) -> Vec<Change> {
    let before: BTreeMap<&str, f64> = earlier
        .results
        .iter()
        .map(|r| (r.name.as_str(), r.pass_rate()))
        .collect();
    let mut out: Vec<Change> = now
        .results
        .iter()
        .map(|r| {
            let after = r.pass_rate();
            let was = before.get(r.name.as_str()).copied();
            let trend = match was {
                None => Trend::New,
                Some(b) if after > b + f64::EPSILON => Trend::Better,
                Some(b) if after + f64::EPSILON < b => Trend::Worse,
                Some(_) => Trend::Same,
            };
            Change {
                name: r.name.clone(),
                trend,
                before: was,
                after: Some(after),
            }
        })
        .collect();
    for r in &earlier.results {
        if !now.results.iter().any(|n| n.name == r.name) {
            out.push(Change {
                name: r.name.clone(),
                trend: Trend::Gone,
                before: Some(r.pass_rate()),
                after: None,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(name: &str, runs: usize, passed: usize) -> EvalResult {
        EvalResult {
            name: name.into(),
            kind: EvalKind::Task,
            runs,
            passed,
            model_calls: 0,
            tokens: 0,
            elapsed_ms: 0,
            failures: Vec::new(),
        }
    }

    fn report(results: Vec<EvalResult>) -> EvalReport {
        EvalReport {
            format: REPORT_FORMAT,
            model: None,
            repeat: 1,
            results,
        }
    }

    #[test]
    fn compare_names_what_moved() {
        let old = report(vec![
            result("a", 3, 3),
            result("b", 3, 1),
            result("c", 1, 1),
            result("gone", 1, 1),
        ]);
        let new = report(vec![
            result("a", 3, 2),
            result("b", 3, 3),
            result("c", 1, 1),
            result("fresh", 1, 0),
        ]);
        let trends: Vec<(String, Trend)> = compare(&old, &new)
            .into_iter()
            .map(|c| (c.name, c.trend))
            .collect();
        assert_eq!(
            trends,
            [
                ("a".to_owned(), Trend::Worse),
                ("b".to_owned(), Trend::Better),
                ("c".to_owned(), Trend::Same),
                ("fresh".to_owned(), Trend::New),
                ("gone".to_owned(), Trend::Gone),
            ]
        );
    }

    #[test]
    fn changed_files_counts_added_modified_and_removed() {
        let before: BTreeMap<String, String> = [
            ("a".into(), "1".into()),
            ("b".into(), "2".into()),
            ("c".into(), "3".into()),
        ]
        .into();
        let after: BTreeMap<String, String> = [
            ("a".into(), "1".into()),
            ("b".into(), "9".into()),
            ("d".into(), "4".into()),
        ]
        .into();
        assert_eq!(changed_files(&before, &after), ["b", "c", "d"]);
    }
}
