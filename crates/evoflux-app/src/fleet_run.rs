//! Running a fleet (`evoflux fleet run`): the application's side of
//! [`evoflux_fleet::run`].
//!
//! The fleet crate schedules nodes, enforces write boundaries against git
//! and keeps the journal; this module supplies what it leaves to the
//! application:
//!
//! * [`WorkerAgents`]: each agent node is a real session opened through
//!   the one [`SessionBuilder`] as the step's worker recipe
//!   ([`SessionBuilder::worker`]), in the node's checkout (the repository,
//!   or the node's own worktree, trusted as the repository is), kept in the
//!   user's store like any session, and its answer checked against the
//!   recipe's result contract with the repair rounds a dispatched worker
//!   gets ([`Harness::worker_task`](evoflux_harness::Harness::worker_task)). Every
//!   node shares one model client, so a scripted model's place in its
//!   script and a provider's connections carry over from node to node.
//! * Durability: the journal is a [`FileJournal`] under
//!   `<data>/fleet-runs/`, beside a manifest (`<run>.json`: the fleet, its
//!   variables, the repository) from which `--resume` rebuilds the same
//!   plan, and, once the run ends, its end (`<run>.end.json`). Worktrees
//!   and private index files live in `<run>.state/`, outside the checkout.
//! * Progress: every journal append is also reported to a
//!   [`FleetProgress`], so a front end shows a line per node as it starts
//!   and settles without holding any run logic.
//!
//! * [`FleetReadiness`]: what a run refuses before its first step, beyond
//!   what the catalog checked (agents that are no worker recipe, a worker
//!   that requires `verify` while the check commands wait for
//!   `evoflux trust`); `fleet validate` and `fleet plan` ask it too, so
//!   they say what the run would.
//! * [`JournalledCommands`]: code steps run on the process runtime like
//!   every command evoflux runs: argv only, exactly the closed environment
//!   the registry grants (the sandbox adds nothing of its own allowlist),
//!   confined by the repository's sandbox to the
//!   node's checkout, killed on timeout, their whole output journalled
//!   under `<run>.logs/` (the receipt's `log`). The run's runtime records
//!   itself in `<run>.lineage/`, so resuming a killed run first stops the
//!   commands its earlier attempt left running.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use evoflux_core::price::Usd;
use evoflux_core::{AppMode, Diagnostics};
use evoflux_fleet::run::{
    AgentError, AgentOutcome, AgentRequest, AgentRunner, CommandOutput, CommandRequest,
    CommandRunner, CommandSpawnError, Executor, ExecutorConfig, ExecutorError, FileJournal,
    JournalEntry, JournalError, NodeReceipt, OUTPUT_CAPTURE_MAX_BYTES, RunFuture, RunJournal,
    RunReport, RunStatus, Verdict, now_ms,
};
use evoflux_fleet::{CatalogFleet, NodeRole, NodeWork, PlanError, RegistryState, Scope};
use evoflux_graph::CompiledGraph;
use evoflux_store::Store;
use evoflux_tools::ProcessRuntime;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use evoflux_agents::contract::extract::extract_json_object;
use evoflux_agents::contract::mutation::result_contract_authorship;

use evoflux_harness::events::ContractOutcome;
use evoflux_harness::{ModelClient, NonInteractive};

use crate::{AppContext, SessionBuilder, SessionError, SessionOptions};

/// The data dir's folder of fleet runs.
pub const FLEET_RUNS_DIR: &str = "fleet-runs";

/// What to run.
#[derive(Debug, Clone, Default)]
pub struct FleetRunOptions {
    /// The fleet's name; on a resume, `None` takes the manifest's.
    pub fleet: Option<String>,
    /// Prompt variables; on a resume they are laid over the manifest's.
    pub vars: BTreeMap<String, String>,
    /// An explicit `provider:model` for every agent node.
    pub model: Option<String>,
    /// Resume this run: nodes that settled are not run again.
    pub resume: Option<String>,
    /// The repository to work in (relative to the start directory);
    /// `None`: the one around the start directory. A resumed run keeps
    /// its own.
    pub workspace: Option<PathBuf>,
}

/// What a run was started with: enough to compile the same plan again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunManifest {
    pub run_id: String,
    pub fleet: String,
    pub vars: BTreeMap<String, String>,
    /// The repository the run works in.
    pub workspace: PathBuf,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    pub plan_hash: String,
    pub started_at_ms: u64,
}

/// Where a run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RunState {
    Succeeded,
    Failed,
    Stopped,
    BudgetExhausted,
    /// It never reached its end (killed, or still running): `--resume`
    /// carries it on.
    Incomplete,
}

impl RunState {
    pub const fn as_str(self) -> &'static str {
        match self {
            RunState::Succeeded => "succeeded",
            RunState::Failed => "failed",
            RunState::Stopped => "stopped",
            RunState::BudgetExhausted => "budget-exhausted",
            RunState::Incomplete => "incomplete",
        }
    }
}

impl From<RunStatus> for RunState {
    fn from(s: RunStatus) -> RunState {
        match s {
            RunStatus::Succeeded => RunState::Succeeded,
            RunStatus::Failed => RunState::Failed,
            RunStatus::Stopped => RunState::Stopped,
            RunStatus::BudgetExhausted => RunState::BudgetExhausted,
        }
    }
}

/// How a run ended, written when it does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RunEnd {
    state: RunState,
    finished_at_ms: u64,
}

/// A run as `fleet runs` and `fleet show-run` see it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunRecord {
    #[serde(flatten)]
    pub manifest: RunManifest,
    pub state: RunState,
    /// Each node's latest receipt, in the order they settled.
    pub receipts: Vec<NodeReceipt>,
    /// Nodes started and never settled (the run was killed under them).
    pub unsettled: Vec<String>,
    /// Every receipt's cost, earlier attempts included.
    pub spent: Usd,
}

/// Told as nodes start and settle.
pub trait FleetProgress: Send + Sync + std::fmt::Debug {
    fn started(&self, run_id: &str, node: &str);
    fn settled(&self, run_id: &str, receipt: &NodeReceipt);
}

/// Why a run could not be carried out (a node's own failure is in its
/// receipt, never here).
#[derive(Debug, thiserror::Error)]
pub enum FleetRunError {
    #[error("no fleet `{name}`; the fleets are: {}", known.join(", "))]
    NotFound { name: String, known: Vec<String> },
    #[error("fleet `{name}` is invalid: {}", diagnostics.summary())]
    Invalid {
        name: String,
        diagnostics: Diagnostics,
    },
    #[error("fleet `{name}`: {source}")]
    Plan {
        name: String,
        path: PathBuf,
        #[source]
        source: PlanError,
    },
    #[error("fleet `{name}` names agents that are not worker recipes: {}", diagnostics.summary())]
    UnknownAgents {
        name: String,
        diagnostics: Diagnostics,
    },
    /// The fleet needs the repository's check commands, which wait for
    /// `evoflux trust`: refused before any step runs, so no step edits
    /// what nothing could check.
    #[error("fleet `{name}` needs check commands that wait for trust: {}", diagnostics.summary())]
    ChecksAwaitingTrust {
        name: String,
        diagnostics: Diagnostics,
    },
    #[error("no fleet run `{run_id}` in {}", dir.display())]
    RunNotFound { run_id: String, dir: PathBuf },
    #[error("fleet run `{run_id}` runs fleet `{was}`, not `{asked}`")]
    ResumeMismatch {
        run_id: String,
        was: String,
        asked: String,
    },
    #[error("name a fleet to run, or a run to resume")]
    NothingToRun,
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: not a fleet run record: {source}", path.display())]
    Corrupt {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error(transparent)]
    Session(#[from] SessionError),
    #[error(transparent)]
    Journal(#[from] JournalError),
    #[error(transparent)]
    Executor(#[from] ExecutorError),
}

impl FleetRunError {
    pub fn code(&self) -> &'static str {
        match self {
            FleetRunError::NotFound { .. } => "fleet/not-found",
            FleetRunError::Invalid { .. } => "fleet/invalid",
            FleetRunError::Plan { source, .. } => source.code(),
            FleetRunError::UnknownAgents { .. } => "fleet/agent-unknown",
            FleetRunError::ChecksAwaitingTrust { .. } => {
                evoflux_fleet::bind::codes::REGISTRY_AWAITING_TRUST
            }
            FleetRunError::RunNotFound { .. } => "fleet/run-not-found",
            FleetRunError::ResumeMismatch { .. } => "fleet/resume-mismatch",
            FleetRunError::NothingToRun => "fleet/nothing-to-run",
            FleetRunError::Io { .. } => "fleet/run-io",
            FleetRunError::Corrupt { .. } => "fleet/journal-corrupt",
            FleetRunError::Session(e) => e.code(),
            FleetRunError::Journal(e) => e.code(),
            FleetRunError::Executor(e) => e.code(),
        }
    }

    /// Whether what the user asked for is what is wrong.
    pub fn is_invalid_input(&self) -> bool {
        match self {
            FleetRunError::NotFound { .. }
            | FleetRunError::Invalid { .. }
            | FleetRunError::Plan { .. }
            | FleetRunError::UnknownAgents { .. }
            | FleetRunError::ChecksAwaitingTrust { .. }
            | FleetRunError::RunNotFound { .. }
            | FleetRunError::ResumeMismatch { .. }
            | FleetRunError::NothingToRun => true,
            FleetRunError::Executor(e) => matches!(
                e,
                ExecutorError::PlanChanged { .. }
                    | ExecutorError::NotGit { .. }
                    | ExecutorError::RunId(_)
            ),
            FleetRunError::Session(e) => e.is_invalid_input(),
            FleetRunError::Io { .. }
            | FleetRunError::Corrupt { .. }
            | FleetRunError::Journal(_) => false,
        }
    }
}

/// The folder of the data dir `data_dir`'s fleet runs.
pub fn runs_dir(data_dir: &Path) -> PathBuf {
    data_dir.join(FLEET_RUNS_DIR)
}

/// Runs (or resumes) a fleet in the repository around the start directory
/// (a resumed run: its own repository) and returns its report.
pub async fn run_fleet(
    app: &AppContext,
    processes: ProcessRuntime,
    options: FleetRunOptions,
    progress: Arc<dyn FleetProgress>,
) -> Result<RunReport, FleetRunError> {
    let dir = runs_dir(app.dirs.data_dir());
    let earlier = match &options.resume {
        Some(id) => Some(read_manifest(&dir, id)?),
        None => None,
    };
    let name = match (&options.fleet, &earlier) {
        (Some(asked), Some(m)) if asked != &m.fleet => {
            return Err(FleetRunError::ResumeMismatch {
                run_id: m.run_id.clone(),
                was: m.fleet.clone(),
                asked: asked.clone(),
            });
        }
        (Some(name), _) => name.clone(),
        (None, Some(m)) => m.fleet.clone(),
        (None, None) => return Err(FleetRunError::NothingToRun),
    };
    let workspace = match &earlier {
        Some(m) => m.workspace.clone(),
        None => {
            let asked = app
                .cwd
                .join(options.workspace.as_deref().unwrap_or(Path::new(".")));
            let dir = std::fs::canonicalize(&asked).map_err(|source| FleetRunError::Io {
                path: asked,
                source,
            })?;
            evoflux_core::trust::repository_root(&dir)
        }
    };
    let mut vars = earlier.as_ref().map(|m| m.vars.clone()).unwrap_or_default();
    vars.extend(options.vars.clone());
    let model = options
        .model
        .clone()
        .or_else(|| earlier.as_ref().and_then(|m| m.model.clone()));

    let graph = app.compile(std::slice::from_ref(&workspace))?;
    let catalog = evoflux_fleet::load_fleets(&graph);
    let Some(fleet) = catalog.get(&name) else {
        return Err(FleetRunError::NotFound {
            name,
            known: catalog.fleets.iter().map(|f| f.name.clone()).collect(),
        });
    };
    let (Some(contract), true) = (&fleet.contract, fleet.is_valid()) else {
        return Err(FleetRunError::Invalid {
            name,
            diagnostics: fleet.diagnostics.clone(),
        });
    };
    let plan = evoflux_fleet::compile_fleet_plan(contract, &vars).map_err(|source| {
        FleetRunError::Plan {
            name: name.clone(),
            path: contract.path.clone(),
            source,
        }
    })?;
    // Every agent the contract names must be a worker recipe, and the
    // checks it needs must be loaded, both before any node runs.
    let ready = FleetReadiness::new(app, &graph).check(fleet, &catalog.registry);
    if !ready.unknown_agents.is_empty() {
        return Err(FleetRunError::UnknownAgents {
            name,
            diagnostics: ready.unknown_agents,
        });
    }
    if !ready.awaiting_trust.is_empty() {
        return Err(FleetRunError::ChecksAwaitingTrust {
            name,
            diagnostics: ready.awaiting_trust,
        });
    }
    let manifest = match earlier {
        Some(m) => m,
        None => {
            let started_at_ms = now_ms();
            let manifest = RunManifest {
                run_id: format!("{name}-{started_at_ms}"),
                fleet: name.clone(),
                vars,
                workspace: workspace.clone(),
                model: model.clone(),
                plan_hash: plan.hash.to_string(),
                started_at_ms,
            };
            write_json(&dir.join(format!("{}.json", manifest.run_id)), &manifest)?;
            manifest
        }
    };
    let run_id = manifest.run_id.clone();
    let store = app.open_store().await?;
    // The data directory is pruned when it is due before the run's agent
    // steps open their sessions.
    app.prune_if_due(&store).await;
    let agents = WorkerAgents {
        app: app.clone(),
        repository: workspace.clone(),
        contract: name,
        store,
        processes,
        model,
        client: Mutex::new(None),
    };
    let journal = ProgressJournal {
        inner: FileJournal::new(&dir),
        progress,
    };
    let mut config = app.runtime_config();
    config.artifacts_root = dir.join(format!("{run_id}.logs"));
    config.runs_dir = Some(dir.join(format!("{run_id}.lineage")));
    let sandbox = crate::selected_sandbox(&graph)
        .map_err(|diagnostics| FleetRunError::Session(SessionError::Sandbox { diagnostics }))?;
    let commands = Arc::new(JournalledCommands {
        processes: ProcessRuntime::new(config),
        sandbox,
        hidden: crate::context::hidden_dirs(&app.dirs),
    });
    let mut executor = Executor::new(
        plan,
        Arc::new(agents),
        commands.clone(),
        Arc::new(journal),
        ExecutorConfig::new(&workspace, dir.join(format!("{run_id}.state"))),
    );
    if let RegistryState::Loaded(registry) = evoflux_fleet::catalog::command_registry(&graph) {
        executor = executor.with_registry(registry);
    }
    let report = executor.run(&run_id).await;
    commands.processes.shutdown().await;
    let report = report?;
    write_json(
        &dir.join(format!("{run_id}.end.json")),
        &RunEnd {
            state: report.status.into(),
            finished_at_ms: now_ms(),
        },
    )?;
    Ok(report)
}

/// What a fleet needs of the session side before any of its steps runs,
/// beyond what the catalog checked: the agents it names are worker
/// recipes, and a worker that requires `verify` has check commands to run
/// (not ones waiting for `evoflux trust`). `fleet validate`, `fleet plan`
/// and `fleet run` all ask it, so what they say of a fleet agrees.
#[derive(Debug, Clone)]
pub struct FleetReadiness {
    /// The worker recipes a run can open.
    workers: Vec<String>,
    /// Those that cannot open without the check registry.
    checking: Vec<String>,
}

/// What [`FleetReadiness::check`] found, by kind.
#[derive(Debug, Clone, Default)]
pub struct Readiness {
    /// `fleet/agent-unknown`, one per field.
    pub unknown_agents: Diagnostics,
    /// `fleet/commands-awaiting-trust`, at most one.
    pub awaiting_trust: Diagnostics,
}

impl Readiness {
    /// Every diagnostic, agents first.
    pub fn all(&self) -> Diagnostics {
        let mut all = self.unknown_agents.clone();
        all.extend(self.awaiting_trust.iter().cloned());
        all
    }
}

impl FleetReadiness {
    pub fn new(app: &AppContext, graph: &CompiledGraph) -> FleetReadiness {
        FleetReadiness {
            workers: app.worker_ids(graph, AppMode::Coding),
            checking: checking_workers(graph),
        }
    }

    /// Checks `fleet` against the workers and `registry` (the catalog's).
    pub fn check(&self, fleet: &CatalogFleet, registry: &RegistryState) -> Readiness {
        let Some(contract) = &fleet.contract else {
            return Readiness::default();
        };
        // A fleet that runs commands has the catalog's diagnostic for a
        // registry waiting for trust; its agents add nothing to it.
        let awaiting_trust = if evoflux_fleet::fleet_command_ids(contract).is_empty() {
            evoflux_fleet::bind_awaiting_trust(contract, registry, &self.checking)
        } else {
            Diagnostics::new()
        };
        Readiness {
            unknown_agents: evoflux_fleet::bind_fleet_agents(contract, &self.workers),
            awaiting_trust,
        }
    }
}

/// The worker recipes that cannot open without the check registry: one of
/// their required tools (every alternative of it) is a tool that runs
/// registered checks, as its handler says
/// ([`evoflux_harness::tools::runs_checks`]), found by its executor, not
/// its name.
fn checking_workers(graph: &CompiledGraph) -> Vec<String> {
    use evoflux_graph::tool::ToolExecutor;
    let tools = evoflux_agents::ToolCatalog::from_graph(graph);
    let runs_checks = |name: &String| match tools.get(name).and_then(|t| t.executor.as_ref()) {
        Some(ToolExecutor::Builtin { executor }) => evoflux_harness::tools::runs_checks(*executor),
        Some(ToolExecutor::Command(_)) | None => false,
    };
    let Ok(workers) = evoflux_agents::worker::load_workers(graph, &tools, &mut Diagnostics::new())
    else {
        return Vec::new();
    };
    workers
        .specs
        .into_iter()
        .filter(|spec| {
            spec.tool_requirements.required.iter().any(|r| {
                let members = r.members();
                !members.is_empty() && members.iter().all(runs_checks)
            })
        })
        .map(|spec| spec.id)
        .collect()
}

/// Every run in `data_dir`, newest first.
pub async fn list_runs(data_dir: &Path) -> Result<Vec<RunRecord>, FleetRunError> {
    let dir = runs_dir(data_dir);
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => return Err(FleetRunError::Io { path: dir, source }),
    };
    let mut ids = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|source| FleetRunError::Io {
            path: dir.clone(),
            source,
        })?;
        let file = entry.file_name();
        let file = file.to_string_lossy();
        if let Some(id) = file.strip_suffix(".json")
            && !id.ends_with(".end")
        {
            ids.push(id.to_owned());
        }
    }
    let mut runs = Vec::new();
    for id in ids {
        runs.push(show_run(data_dir, &id).await?);
    }
    runs.sort_by(|a, b| {
        (b.manifest.started_at_ms, &b.manifest.run_id)
            .cmp(&(a.manifest.started_at_ms, &a.manifest.run_id))
    });
    Ok(runs)
}

/// One run: what it was started with, its receipts and where it stands.
pub async fn show_run(data_dir: &Path, run_id: &str) -> Result<RunRecord, FleetRunError> {
    let dir = runs_dir(data_dir);
    let manifest = read_manifest(&dir, run_id)?;
    let entries = FileJournal::new(&dir).load(run_id).await?;
    let mut receipts: Vec<NodeReceipt> = Vec::new();
    let mut started: Vec<String> = Vec::new();
    let mut spent = Usd::ZERO;
    for entry in entries {
        match entry {
            JournalEntry::Begin { .. }
            | JournalEntry::Spliced { .. }
            | JournalEntry::Stale { .. }
            | JournalEntry::Merging { .. }
            | JournalEntry::MergeUndone { .. } => {}
            JournalEntry::Started { node, .. } => started.push(node),
            JournalEntry::Finished { receipt } => {
                spent = spent.saturating_add(receipt.cost);
                started.retain(|n| n != &receipt.node);
                receipts.retain(|r| r.node != receipt.node);
                receipts.push(*receipt);
            }
        }
    }
    let end_path = dir.join(format!("{run_id}.end.json"));
    let state = match std::fs::read(&end_path) {
        Ok(bytes) => {
            serde_json::from_slice::<RunEnd>(&bytes)
                .map_err(|source| FleetRunError::Corrupt {
                    path: end_path.clone(),
                    source,
                })?
                .state
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => RunState::Incomplete,
        Err(source) => {
            return Err(FleetRunError::Io {
                path: end_path,
                source,
            });
        }
    };
    // A resume that is under way has an earlier end; it is not over.
    let state = if started.is_empty() {
        state
    } else {
        RunState::Incomplete
    };
    Ok(RunRecord {
        manifest,
        state,
        receipts,
        unsettled: started,
        spent,
    })
}

fn read_manifest(dir: &Path, run_id: &str) -> Result<RunManifest, FleetRunError> {
    let not_found = || FleetRunError::RunNotFound {
        run_id: run_id.to_owned(),
        dir: dir.to_path_buf(),
    };
    if !evoflux_fleet::run::journal::valid_run_id(run_id) {
        return Err(not_found());
    }
    let path = dir.join(format!("{run_id}.json"));
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(not_found()),
        Err(source) => return Err(FleetRunError::Io { path, source }),
    };
    serde_json::from_slice(&bytes).map_err(|source| FleetRunError::Corrupt { path, source })
}

fn write_json(path: &Path, value: &impl Serialize) -> Result<(), FleetRunError> {
    let io = |source| FleetRunError::Io {
        path: path.to_path_buf(),
        source,
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(io)?;
    }
    let mut text = serde_json::to_vec_pretty(value).map_err(|e| io(std::io::Error::other(e)))?;
    text.push(b'\n');
    evoflux_core::atomic::write_atomic(path, &text, Default::default())
        .map_err(|e| io(std::io::Error::other(e.to_string())))
}

/// A [`FileJournal`] that also tells a [`FleetProgress`].
#[derive(Debug)]
struct ProgressJournal {
    inner: FileJournal,
    progress: Arc<dyn FleetProgress>,
}

impl RunJournal for ProgressJournal {
    fn append<'a>(
        &'a self,
        run_id: &'a str,
        entry: &'a JournalEntry,
    ) -> RunFuture<'a, Result<(), JournalError>> {
        Box::pin(async move {
            self.inner.append(run_id, entry).await?;
            match entry {
                JournalEntry::Begin { .. }
                | JournalEntry::Spliced { .. }
                | JournalEntry::Stale { .. }
                | JournalEntry::Merging { .. }
                | JournalEntry::MergeUndone { .. } => {}
                JournalEntry::Started { node, .. } => self.progress.started(run_id, node),
                JournalEntry::Finished { receipt } => self.progress.settled(run_id, receipt),
            }
            Ok(())
        })
    }

    fn load<'a>(
        &'a self,
        run_id: &'a str,
    ) -> RunFuture<'a, Result<Vec<JournalEntry>, JournalError>> {
        self.inner.load(run_id)
    }
}

/// Agent nodes as worker sessions (see the module documentation).
#[derive(Debug)]
pub struct WorkerAgents {
    app: AppContext,
    /// The run's repository: a node's worktree is trusted as it is.
    repository: PathBuf,
    contract: String,
    store: Store,
    processes: ProcessRuntime,
    model: Option<String>,
    /// The first node's model client, shared by the rest.
    client: Mutex<Option<ModelClient>>,
}

impl AgentRunner for WorkerAgents {
    fn run_agent<'a>(
        &'a self,
        request: &'a AgentRequest,
    ) -> RunFuture<'a, Result<AgentOutcome, AgentError>> {
        Box::pin(self.run(request))
    }
}

impl WorkerAgents {
    async fn run(&self, request: &AgentRequest) -> Result<AgentOutcome, AgentError> {
        let failed = |message: String, cost: Usd| AgentError { message, cost };
        let agent = match &request.node.work {
            NodeWork::Agent { agent, .. }
            | NodeWork::GateAuthor { agent, .. }
            | NodeWork::Plan { agent, .. } => agent,
            NodeWork::Code { .. } | NodeWork::GateCheck { .. } => {
                return Err(failed(
                    format!("node `{}` runs a command, not an agent", request.node.id),
                    Usd::ZERO,
                ));
            }
        };
        let mut task = node_task(&self.contract, request);
        let mut spent = Usd::ZERO;
        if let NodeWork::Plan {
            roster,
            proposals: true,
            ..
        } = &request.node.work
        {
            let (briefing, cost) = self.proposals(request, agent, roster).await?;
            spent = cost;
            task.push_str(&format!("\n\nWhat the roster proposed:\n\n{briefing}"));
        }
        let opened = self
            .open(agent, &request.workdir)
            .await
            .map_err(|message| failed(message, spent))?;
        let Some(mut spec) = opened.worker else {
            return Err(failed(format!("`{agent}` did not open as a worker"), spent));
        };
        // A plan step's architect answers a delegation plan, whatever its
        // recipe answers elsewhere.
        if let NodeWork::Plan { .. } = &request.node.work {
            spec.result_contract = evoflux_agents::contract::kind::ResultContract::new(
                evoflux_agents::contract::kind::ResultContractKind::DelegationPlan,
            );
        }
        let mut harness = opened.harness;
        let session = harness.session().id;
        let end = harness.worker_task(&spec, &task).await;
        harness.shutdown().await;
        let cost = self.session_cost(session).await.saturating_add(spent);
        let end = end.map_err(|e| failed(format!("{e} [{}]", e.code()), cost))?;
        let contract_met = end.contract == Some(ContractOutcome::Pass);
        if !end.answered && end.contract != Some(ContractOutcome::Exhausted) {
            return Err(failed(format!("{} (session {session})", end.text), cost));
        }
        // The answer's object as the contract validator found it (bare, or
        // in a fenced block, or amid prose).
        let object = extract_json_object(Some(&end.text)).ok();
        let verdict = match object
            .as_ref()
            .and_then(|o| o.get("verdict"))
            .and_then(Value::as_str)
        {
            Some("pass") => Some(Verdict::Pass),
            Some("fail") => Some(Verdict::Fail),
            Some(_) | None => None,
        };
        let commit_message = result_contract_authorship(&spec.result_contract, &end.text)
            .and_then(|a| a.commit_message);
        // A delegation plan goes to the executor as that object alone.
        let output = match object {
            Some(o) if matches!(request.node.work, NodeWork::Plan { .. }) => {
                Value::Object(o).to_string()
            }
            Some(_) | None => end.text,
        };
        Ok(AgentOutcome {
            commit_message,
            output,
            contract_met,
            repair_rounds: end.repairs,
            cost,
            verdict,
        })
    }

    /// What session `id` cost, as the store summed it.
    async fn session_cost(&self, id: evoflux_core::ids::SessionId) -> Usd {
        self.store.usage(id).await.map_or(Usd::ZERO, |u| u.cost_usd)
    }

    /// A session as worker `agent` in `workdir` (trusted as the run's
    /// repository is), on the run's shared model client.
    async fn open(&self, agent: &str, workdir: &Path) -> Result<crate::OpenedSession, String> {
        let mut app = self.app.clone();
        if workdir != self.repository {
            app.inherit_trust(&self.repository, workdir)
                .map_err(|e| format!("{e} [{}]", e.code()))?;
        }
        let client = self.client.lock().ok().and_then(|c| c.clone());
        let mut builder = SessionBuilder::new(
            &app,
            SessionOptions {
                mode: Some(AppMode::Coding),
                workspaces: vec![workdir.to_path_buf()],
                model: self.model.clone(),
                ..SessionOptions::default()
            },
        )
        .worker(agent)
        .store(self.store.clone())
        .approver(Arc::new(NonInteractive))
        .processes(self.processes.clone());
        if let Some(client) = client {
            builder = builder.reuse_model(client);
        }
        let opened = builder
            .open()
            .await
            .map_err(|e| format!("{e} [{}]", e.code()))?;
        if let Ok(mut slot) = self.client.lock()
            && slot.is_none()
        {
            *slot = Some(opened.harness.model_client());
        }
        Ok(opened)
    }

    /// (v5 `proposals: true`) Each roster member's proposal for the plan
    /// step, asked one by one before the architect plans: the briefing
    /// (`PROPOSAL <agent>` sections, at most
    /// [`DELEGATION_PROPOSAL_BRIEFING_MAX_BYTES`]) and what it cost.
    async fn proposals(
        &self,
        request: &AgentRequest,
        architect: &str,
        roster: &[String],
    ) -> Result<(String, Usd), AgentError> {
        let mut briefing = Vec::new();
        let mut cost = Usd::ZERO;
        for member in roster {
            let opened = self
                .open(member, &request.workdir)
                .await
                .map_err(|message| AgentError {
                    message: format!("proposal of `{member}`: {message}"),
                    cost,
                })?;
            let mut harness = opened.harness;
            let session = harness.session().id;
            let ask = format!(
                "{}\n\n---\nStep `{}` of fleet `{}` is about to be planned by `{architect}`, who \
                 will split it into tasks for {}. Propose your part in a few lines: what you \
                 would change, in which files and order, and the risks. Change no files: this \
                 is a proposal, not the work.",
                request.task.trim_end(),
                request.node.id,
                self.contract,
                roster.join(", ")
            );
            let turn = harness
                .turn(Some(&ask), evoflux_harness::TurnOptions::default())
                .await;
            harness.shutdown().await;
            cost = cost.saturating_add(self.session_cost(session).await);
            let answer = turn.map_err(|e| AgentError {
                message: format!("proposal of `{member}`: {e} [{}]", e.code()),
                cost,
            })?;
            briefing.push(format!("PROPOSAL {member}\n{}", answer.text.trim_end()));
        }
        let mut text = briefing.join("\n\n");
        if text.len() > DELEGATION_PROPOSAL_BRIEFING_MAX_BYTES {
            let mut end = DELEGATION_PROPOSAL_BRIEFING_MAX_BYTES;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            text.truncate(end);
            text.push_str("\n[truncated]");
        }
        Ok((text, cost))
    }
}

/// The most of the roster's proposals an architect is shown.
pub const DELEGATION_PROPOSAL_BRIEFING_MAX_BYTES: usize = 12_000;

/// The task a node's worker is given: the fleet's rendered prompt, then
/// which step it is, what it may change, and what the steps before it
/// reported.
pub fn node_task(contract: &str, request: &AgentRequest) -> String {
    let node = &request.node;
    let mut task = request.task.trim_end().to_owned();
    task.push_str(&format!(
        "\n\n---\nYou are step `{}` of fleet `{contract}` (run {}).",
        node.id, request.run_id
    ));
    match node.role {
        NodeRole::Step => {}
        NodeRole::Check => task.push_str(
            " You verify: your verdict decides whether the work is done or goes back for repair.",
        ),
        NodeRole::Repair => task
            .push_str(" You repair exactly what the verification before you found, nothing else."),
    }
    if let NodeWork::Plan {
        roster, max_tasks, ..
    } = &node.work
    {
        task.push_str(&format!(
            " You plan, and change nothing: split the work into at most {max_tasks} tasks for \
             {}, each with the paths it may change (inside this step's boundary), and answer \
             with the plan as one JSON object: {}.",
            roster.join(", "),
            evoflux_agents::contract::shape::result_contract_shape(
                &evoflux_agents::contract::kind::ResultContract::new(
                    evoflux_agents::contract::kind::ResultContractKind::DelegationPlan,
                )
            )
        ));
    }
    let plans = matches!(node.work, NodeWork::Plan { .. });
    match (&request.writes, node.scope) {
        _ if plans => {}
        (Some(b), _) if b.is_empty() => task.push_str(" Change no files."),
        (Some(b), _) => task.push_str(&format!(
            " Change only {}: a change anywhere else is undone and fails the step.",
            evoflux_fleet::describe_write_boundary(b)
        )),
        (None, Scope::Readonly) => task.push_str(" This step is read-only: change no files."),
        (None, Scope::Workspace) => {}
    }
    if !request.inputs.is_empty() {
        task.push_str("\n\nWhat the steps before you reported:\n");
        for input in &request.inputs {
            task.push_str(&format!(
                "\n### {}\n{}\n",
                input.node,
                input.output.trim_end()
            ));
        }
    }
    task
}

#[cfg(test)]
mod tests {
    use super::*;
    use evoflux_fleet::WriteBoundary;
    use evoflux_fleet::plan::PlanNode;
    use evoflux_fleet::run::NodeInput;

    fn request(role: NodeRole, scope: Scope, writes: Option<Vec<&str>>) -> AgentRequest {
        AgentRequest {
            run_id: "fix-1".to_owned(),
            node: PlanNode {
                id: "verify.repair.1".to_owned(),
                step: "verify".to_owned(),
                position: "verify.repair".to_owned(),
                role,
                attempt: Some(1),
                scope,
                dependencies: vec!["verify.check.1".to_owned()],
                writes: writes.map(|w| {
                    WriteBoundary::try_from(w.into_iter().map(str::to_owned).collect::<Vec<_>>())
                        .unwrap()
                }),
                work: NodeWork::Agent {
                    agent: "coder".to_owned(),
                    route: None,
                },
            },
            task: "Fix the parser.\n".to_owned(),
            workdir: PathBuf::from("/repo"),
            writes: None,
            inputs: vec![NodeInput {
                node: "verify.check.1".to_owned(),
                output: "{\"verdict\":\"fail\"}\n".to_owned(),
            }],
        }
    }

    #[test]
    fn a_node_s_task_names_its_step_role_boundary_and_inputs() {
        let mut r = request(NodeRole::Repair, Scope::Workspace, Some(vec!["src/"]));
        r.writes = r.node.writes.clone();
        let task = node_task("fix", &r);
        assert!(task.starts_with("Fix the parser.\n\n---\n"), "{task}");
        assert!(task.contains("step `verify.repair.1` of fleet `fix` (run fix-1)"));
        assert!(task.contains("You repair exactly what the verification"));
        assert!(task.contains("Change only src/"), "{task}");
        assert!(
            task.ends_with("### verify.check.1\n{\"verdict\":\"fail\"}\n"),
            "{task}"
        );

        let mut r = request(NodeRole::Check, Scope::Readonly, Some(vec![]));
        r.writes = r.node.writes.clone();
        r.inputs.clear();
        let task = node_task("fix", &r);
        assert!(task.contains("your verdict decides"));
        assert!(task.ends_with("Change no files."), "{task}");

        // Below v4 there is no claim; a read-only step is still told.
        let r = request(NodeRole::Step, Scope::Readonly, None);
        assert!(node_task("fix", &r).contains("This step is read-only"));
        let r = request(NodeRole::Step, Scope::Workspace, None);
        let task = node_task("fix", &r);
        assert!(
            !task.contains("Change") && !task.contains("read-only"),
            "{task}"
        );
    }
}

/// The sandbox policy one code step runs under: the repository's, with
/// its environment allowlist narrowed to the names the step's closed
/// environment holds (the registry's base list, the command's declared
/// names, the agent marker). The sandbox tops a command's environment up
/// from the parent with every allowlisted name it lacks, and the default
/// allowlist holds more than the closed list (`TERM`, `SHELL`, `USER`):
/// narrowed, it adds nothing, while a policy that leaves a name out
/// still keeps it out.
fn step_policy(
    policy: &evoflux_graph::sandbox::SandboxPolicy,
    env: &[(std::ffi::OsString, std::ffi::OsString)],
) -> evoflux_graph::sandbox::SandboxPolicy {
    let mut policy = policy.clone();
    policy
        .env_allowlist
        .retain(|allowed| env.iter().any(|(name, _)| name == allowed.as_str()));
    policy
}

/// Code nodes on the process runtime (see the module documentation).
#[derive(Debug)]
pub struct JournalledCommands {
    processes: ProcessRuntime,
    sandbox: evoflux_graph::sandbox::SandboxPolicy,
    hidden: Vec<PathBuf>,
}

impl CommandRunner for JournalledCommands {
    fn run_command<'a>(
        &'a self,
        request: &'a CommandRequest,
    ) -> RunFuture<'a, Result<CommandOutput, CommandSpawnError>> {
        Box::pin(self.run(request))
    }
}

impl JournalledCommands {
    async fn run(&self, request: &CommandRequest) -> Result<CommandOutput, CommandSpawnError> {
        let failed = |message: String| CommandSpawnError {
            program: request.argv.first().cloned().unwrap_or_default(),
            message,
        };
        // Each command its own id: its own sandbox (roots differ between
        // a worktree and the repository) and its own log folder.
        let id = evoflux_core::ids::Ids::system().session_id();
        let workspace = evoflux_tools::Workspace::new([&request.checkout])
            .map_err(|e| failed(e.to_string()))?;
        let sandbox = evoflux_tools::sandbox::CommandSandbox::new(
            step_policy(&self.sandbox, &request.env),
            evoflux_tools::sandbox::Confinement::Repositories,
            vec![request.checkout.clone()],
            self.hidden.clone(),
        )
        .map_err(|e| failed(e.to_string()))?;
        self.processes.confine(id, sandbox);
        let out = self
            .processes
            .run_argv(
                id,
                &workspace,
                evoflux_tools::ArgvCommand {
                    argv: request.argv.clone(),
                    cwd: request.cwd.clone(),
                    env: request.env.clone(),
                    timeout: request.timeout,
                },
            )
            .await
            .map_err(|e| failed(e.to_string()))?;
        let Some(meta) = out.meta else {
            return Err(failed(out.text));
        };
        let output = match tokio::fs::read(&meta.artifact).await {
            Ok(bytes) => {
                let start = bytes.len().saturating_sub(OUTPUT_CAPTURE_MAX_BYTES);
                String::from_utf8_lossy(&bytes[start..]).into_owned()
            }
            Err(_) => out.text,
        };
        Ok(CommandOutput {
            exit_code: meta.exit_code,
            timed_out: meta.status == evoflux_tools::CommandStatus::TimedOut,
            output,
            duration: std::time::Duration::from_millis(meta.duration_ms),
            log: Some(meta.artifact),
        })
    }
}
