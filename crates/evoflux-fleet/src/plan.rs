//! Plan compilation: a validated contract and the run's variables become a
//! deterministic, content-hashed DAG of plan nodes.
//!
//! Loops are unrolled statically: a loop `suite` with `maxAttempts: 3`
//! becomes `suite.check.1`, `suite.repair.1`, `suite.check.2`,
//! `suite.repair.2`, `suite.check.3`, each its own node with its own id
//! (so every attempt gets its own receipt), and the runtime only decides
//! which of them are still needed. `check.1` waits for the loop's
//! dependencies, `repair.n` for `check.n`, `check.n+1` for `repair.n`. A
//! dependency on a loop stands for all of its checks; a `commitFrom` naming
//! a loop stands for its repairs, newest first.
//!
//! The same contract and variables always give the same plan and the same
//! hash: nodes are in a fixed topological order (Kahn waves over declared
//! steps, declaration order within a wave, each loop's nodes together), and
//! the hash is [`evoflux_core::hash::content_hash`] of everything that
//! changes what the run does (the rendered task, every node, the limits),
//! not of where the file lives or its description.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;

use evoflux_core::Diagnostics;
use evoflux_core::hash::{ContentHash, HashError, content_hash};
use serde::{Deserialize, Serialize};

use crate::boundary::WriteBoundary;
use crate::commands::argument_value_ok;
use crate::contract::{
    AgentWork, CODE_STEP_MAX_ARG_CHARS, CodeWork, FleetContract, FleetStep, FleetVersion,
    LoopCheck, LoopCheckKind, OnFailure, Route, Scope, loop_check_id, loop_check_position,
    loop_repair_id, loop_repair_position, validate_fleet_contract,
};
use crate::render::{
    RenderError, render_fleet_prompt, template_variables, whole_token_placeholder,
};
use crate::writes::{fleet_step_write_boundary, gate_write_boundary};

/// The shape of [`ExecutionPlan`]; bumped when its meaning changes, so an
/// old run record is never resumed against a differently shaped plan.
pub const PLAN_FORMAT_VERSION: u32 = 1;

/// Why a contract cannot be compiled.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// The contract does not validate (built by hand, or edited after
    /// parsing).
    #[error("fleet contract {} is invalid: {}", path.display(), diagnostics.summary())]
    Invalid {
        path: PathBuf,
        diagnostics: Diagnostics,
    },
    /// Variables the prompt or a code step's `args` need are missing.
    #[error(transparent)]
    Unresolved(#[from] RenderError),
    /// A `--var` value bound into a code step's argument is not data a
    /// command may receive.
    #[error(
        "code step '{position}' args[{index}]: the value of variable `{name}` must be nonempty \
         data of at most {CODE_STEP_MAX_ARG_CHARS} characters, without NUL or a leading dash"
    )]
    Argument {
        /// The step id or `<loop>.check`.
        position: String,
        index: usize,
        name: String,
    },
    #[error("plan hash: {0}")]
    Hash(#[from] HashError),
}

impl PlanError {
    /// The code of an argument value a code step cannot take.
    pub const ARGUMENT_CODE: &'static str = "fleet/argument-invalid";

    /// The stable code of this error.
    pub fn code(&self) -> &'static str {
        match self {
            PlanError::Invalid { .. } => "fleet/invalid",
            PlanError::Unresolved(_) => RenderError::CODE,
            PlanError::Argument { .. } => Self::ARGUMENT_CODE,
            PlanError::Hash(_) => "fleet/plan-hash",
        }
    }
}

/// What part of its step a node is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NodeRole {
    /// A declared non-loop step.
    Step,
    /// One verification of a loop.
    Check,
    /// One repair of a loop.
    Repair,
}

impl NodeRole {
    pub const fn as_str(self) -> &'static str {
        match self {
            NodeRole::Step => "step",
            NodeRole::Check => "check",
            NodeRole::Repair => "repair",
        }
    }
}

/// What a node runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(
    tag = "kind",
    rename_all = "kebab-case",
    rename_all_fields = "camelCase"
)]
pub enum NodeWork {
    /// A worker dispatched with the rendered task.
    Agent {
        agent: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        route: Option<Route>,
    },
    /// A registered command.
    Code {
        command: String,
        /// Bound: placeholders already filled from the run's variables.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        args: Vec<String>,
        /// A loop check: pass or fail decides the loop.
        verification: bool,
        /// A commit step's message candidates, expanded to node ids, in
        /// order of preference.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        commit_from: Vec<String>,
    },
    /// (v5) A gate author writes `path`; then `run` must fail against it.
    GateAuthor {
        agent: String,
        path: String,
        run: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        route: Option<Route>,
    },
    /// (v5) A loop check that re-runs gate `gate`'s command on its file.
    GateCheck {
        gate: String,
        path: String,
        run: String,
    },
    /// (v5) An architect proposes a delegation plan over `roster`.
    Plan {
        agent: String,
        roster: Vec<String>,
        max_tasks: u32,
        proposals: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        route: Option<Route>,
    },
}

/// One node of the plan: one receipt at run time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanNode {
    /// Unique in the plan: a step id, or `<loop>.check.<n>` /
    /// `<loop>.repair.<n>`.
    pub id: String,
    /// The declared step it comes from.
    pub step: String,
    /// Its write-boundary position: the step id, or `<loop>.check` /
    /// `<loop>.repair`.
    pub position: String,
    pub role: NodeRole,
    /// 1-based attempt of a loop node.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    pub scope: Scope,
    /// Node ids, in declaration order, each once.
    pub dependencies: Vec<String>,
    /// `None` below v4 (no claim).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub writes: Option<WriteBoundary>,
    pub work: NodeWork,
}

/// A loop's unrolled nodes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanLoop {
    pub id: String,
    pub check_kind: LoopCheckKind,
    pub max_attempts: u32,
    pub check_ids: Vec<String>,
    pub repair_ids: Vec<String>,
}

/// A compiled fleet run.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionPlan {
    pub format: u32,
    /// The contract's `name`.
    pub contract: String,
    pub contract_version: FleetVersion,
    pub max_workers: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget_usd: Option<f64>,
    pub on_failure: OnFailure,
    pub single_writer: bool,
    /// The rendered prompt body: every agent node's task.
    pub task: String,
    /// In topological order.
    pub nodes: Vec<PlanNode>,
    pub loops: Vec<PlanLoop>,
    /// The content hash of everything above.
    pub hash: ContentHash,
}

/// The hashed view of a plan: every field but the hash.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Content<'a> {
    format: u32,
    contract: &'a str,
    contract_version: FleetVersion,
    max_workers: u32,
    budget_usd: Option<f64>,
    on_failure: OnFailure,
    single_writer: bool,
    task: &'a str,
    nodes: &'a [PlanNode],
    loops: &'a [PlanLoop],
}

impl ExecutionPlan {
    pub fn node(&self, id: &str) -> Option<&PlanNode> {
        self.nodes.iter().find(|n| n.id == id)
    }

    pub fn node_ids(&self) -> impl Iterator<Item = &str> {
        self.nodes.iter().map(|n| n.id.as_str())
    }

    /// The hash the plan's content has now; equal to [`Self::hash`] unless
    /// the plan was changed after compilation (a resumed run checks this).
    pub fn compute_hash(&self) -> Result<ContentHash, HashError> {
        content_hash(&Content {
            format: self.format,
            contract: &self.contract,
            contract_version: self.contract_version,
            max_workers: self.max_workers,
            budget_usd: self.budget_usd,
            on_failure: self.on_failure,
            single_writer: self.single_writer,
            task: &self.task,
            nodes: &self.nodes,
            loops: &self.loops,
        })
    }
}

/// Compiles `contract` with the run's variables. The contract is validated
/// again (it may have been built by hand), every placeholder of the prompt
/// and of code-step `args` must resolve, and the result is hashed.
pub fn compile_fleet_plan(
    contract: &FleetContract,
    vars: &BTreeMap<String, String>,
) -> Result<ExecutionPlan, PlanError> {
    let diagnostics = validate_fleet_contract(contract);
    if diagnostics.has_errors() {
        return Err(PlanError::Invalid {
            path: contract.path.clone(),
            diagnostics,
        });
    }
    // Every missing name at once, the prompt's and the args', before any
    // node exists.
    let missing = missing_variables(contract, vars);
    if !missing.is_empty() {
        return Err(RenderError { names: missing }.into());
    }
    // A bound value is held to the argument rules now, so a bad --var fails
    // the plan instead of the run, after earlier nodes were dispatched.
    for (position, args) in code_args(contract) {
        for (index, arg) in args.iter().enumerate() {
            if let Some(name) = whole_token_placeholder(arg)
                && let Some(value) = vars.get(name)
                && !argument_value_ok(value, CODE_STEP_MAX_ARG_CHARS)
            {
                return Err(PlanError::Argument {
                    position,
                    index,
                    name: name.to_owned(),
                });
            }
        }
    }
    let task = render_fleet_prompt(&contract.body, vars)?;

    let c = Compiler::new(contract, vars);
    let mut nodes = Vec::new();
    let mut loops = Vec::new();
    for step in c.order() {
        c.emit(step, &mut nodes, &mut loops);
    }
    let mut plan = ExecutionPlan {
        format: PLAN_FORMAT_VERSION,
        contract: contract.name.clone(),
        contract_version: contract.version,
        max_workers: contract.max_workers,
        budget_usd: contract.budget_usd,
        on_failure: contract.on_failure,
        single_writer: contract.single_writer,
        task,
        nodes,
        loops,
        hash: evoflux_core::hash::sha256_hex(b""),
    };
    plan.hash = plan.compute_hash()?;
    Ok(plan)
}

/// Every variable the prompt and code-step args use that `vars` lacks, in
/// order of first appearance (prompt first), each once.
pub fn missing_variables(contract: &FleetContract, vars: &BTreeMap<String, String>) -> Vec<String> {
    let mut out: Vec<String> = template_variables(&contract.body)
        .into_iter()
        .filter(|n| !vars.contains_key(n))
        .collect();
    for (_, args) in code_args(contract) {
        for name in args.iter().filter_map(|a| whole_token_placeholder(a)) {
            if !vars.contains_key(name) && !out.iter().any(|n| n == name) {
                out.push(name.to_owned());
            }
        }
    }
    out
}

/// The `args` of every position that runs a command with arguments (code
/// steps and code-checked loops), with the position's name.
fn code_args(contract: &FleetContract) -> Vec<(String, &[String])> {
    let mut out = Vec::new();
    for step in &contract.steps {
        match step {
            FleetStep::Code(s) => out.push((s.id.clone(), s.work.args.as_slice())),
            FleetStep::Loop(l) => match &l.check {
                LoopCheck::Code(c) => out.push((loop_check_position(&l.id), c.args.as_slice())),
                LoopCheck::Agent(_) | LoopCheck::Gate { .. } => {}
            },
            FleetStep::Agent(_) | FleetStep::Gate(_) | FleetStep::Plan(_) => {}
        }
    }
    out
}

struct Compiler<'a> {
    contract: &'a FleetContract,
    vars: &'a BTreeMap<String, String>,
    by_id: HashMap<&'a str, &'a FleetStep>,
}

impl<'a> Compiler<'a> {
    fn new(contract: &'a FleetContract, vars: &'a BTreeMap<String, String>) -> Self {
        let by_id = contract.steps.iter().map(|s| (s.id(), s)).collect();
        Compiler {
            contract,
            vars,
            by_id,
        }
    }

    /// Declared steps in Kahn waves, declaration order within a wave;
    /// linear in steps and edges. The graph was validated, so every step
    /// settles.
    fn order(&self) -> Vec<&'a FleetStep> {
        let steps = &self.contract.steps;
        let index: HashMap<&str, usize> =
            steps.iter().enumerate().map(|(i, s)| (s.id(), i)).collect();
        let mut waiting: Vec<usize> = vec![0; steps.len()];
        let mut dependents: Vec<Vec<usize>> = vec![Vec::new(); steps.len()];
        for (i, step) in steps.iter().enumerate() {
            let deps: HashSet<usize> = step
                .dependencies()
                .iter()
                .filter_map(|d| index.get(d.as_str()).copied())
                .collect();
            waiting[i] = deps.len();
            for d in deps {
                dependents[d].push(i);
            }
        }
        let mut wave: Vec<usize> = (0..steps.len()).filter(|i| waiting[*i] == 0).collect();
        let mut out = Vec::with_capacity(steps.len());
        while !wave.is_empty() {
            let mut next = Vec::new();
            for &i in &wave {
                out.push(&steps[i]);
                for &d in &dependents[i] {
                    waiting[d] -= 1;
                    if waiting[d] == 0 {
                        next.push(d);
                    }
                }
            }
            next.sort_unstable();
            wave = next;
        }
        out
    }

    /// A declared dependency as node ids: a loop stands for all its checks.
    fn expand(&self, deps: &[String]) -> Vec<String> {
        let mut out: Vec<String> = Vec::with_capacity(deps.len());
        for dep in deps {
            let ids = match self.by_id.get(dep.as_str()) {
                Some(FleetStep::Loop(l)) => (1..=l.max_attempts)
                    .map(|n| loop_check_id(&l.id, n))
                    .collect(),
                Some(
                    FleetStep::Agent(_)
                    | FleetStep::Code(_)
                    | FleetStep::Gate(_)
                    | FleetStep::Plan(_),
                )
                | None => vec![dep.clone()],
            };
            for id in ids {
                if !out.contains(&id) {
                    out.push(id);
                }
            }
        }
        out
    }

    /// A commit step's candidates: a loop stands for its repairs, newest
    /// first, because the work a commit describes is whatever touched it
    /// last.
    fn expand_commit(&self, sources: &[String]) -> Vec<String> {
        let mut out = Vec::new();
        for source in sources {
            match self.by_id.get(source.as_str()) {
                Some(FleetStep::Loop(l)) => {
                    for n in (1..l.max_attempts).rev() {
                        out.push(loop_repair_id(&l.id, n));
                    }
                }
                Some(
                    FleetStep::Agent(_)
                    | FleetStep::Code(_)
                    | FleetStep::Gate(_)
                    | FleetStep::Plan(_),
                )
                | None => out.push(source.clone()),
            }
        }
        out
    }

    fn bind(&self, args: &[String]) -> Vec<String> {
        args.iter()
            .map(
                |a| match whole_token_placeholder(a).and_then(|n| self.vars.get(n)) {
                    Some(v) => v.clone(),
                    None => a.clone(),
                },
            )
            .collect()
    }

    fn writes(&self, scope: Scope, writes: Option<&WriteBoundary>) -> Option<WriteBoundary> {
        fleet_step_write_boundary(self.contract.version, scope, writes)
    }

    fn gate_writes(&self, path: &str) -> Option<WriteBoundary> {
        gate_write_boundary(self.contract.version, path)
    }

    fn agent_work(a: &AgentWork) -> NodeWork {
        NodeWork::Agent {
            agent: a.agent.clone(),
            route: a.route.clone(),
        }
    }

    fn code_work(&self, c: &CodeWork, verification: bool, commit_from: Vec<String>) -> NodeWork {
        NodeWork::Code {
            command: c.command.clone(),
            args: self.bind(&c.args),
            verification,
            commit_from,
        }
    }

    fn emit(&self, step: &FleetStep, nodes: &mut Vec<PlanNode>, loops: &mut Vec<PlanLoop>) {
        let single = |work: NodeWork, scope: Scope, writes: Option<WriteBoundary>| PlanNode {
            id: step.id().to_owned(),
            step: step.id().to_owned(),
            position: step.id().to_owned(),
            role: NodeRole::Step,
            attempt: None,
            scope,
            dependencies: self.expand(step.dependencies()),
            writes,
            work,
        };
        match step {
            FleetStep::Agent(s) => nodes.push(single(
                Self::agent_work(&s.work),
                s.work.scope,
                self.writes(s.work.scope, s.work.writes.as_ref()),
            )),
            FleetStep::Code(s) => {
                let commit = self.expand_commit(s.commit_from.as_deref().unwrap_or(&[]));
                nodes.push(single(
                    self.code_work(&s.work, false, commit),
                    s.work.scope,
                    self.writes(s.work.scope, s.work.writes.as_ref()),
                ));
            }
            FleetStep::Gate(s) => nodes.push(single(
                NodeWork::GateAuthor {
                    agent: s.agent.clone(),
                    path: s.path.clone(),
                    run: s.run.clone(),
                    route: s.route.clone(),
                },
                Scope::Workspace,
                self.gate_writes(&s.path),
            )),
            FleetStep::Plan(s) => nodes.push(single(
                NodeWork::Plan {
                    agent: s.work.agent.clone(),
                    roster: s.roster.clone(),
                    max_tasks: s.max_tasks,
                    proposals: s.proposals,
                    route: s.work.route.clone(),
                },
                s.work.scope,
                self.writes(s.work.scope, s.work.writes.as_ref()),
            )),
            FleetStep::Loop(l) => {
                let (check_scope, check_writes, check_work) = match &l.check {
                    LoopCheck::Code(c) => (
                        c.scope,
                        self.writes(c.scope, c.writes.as_ref()),
                        self.code_work(c, true, Vec::new()),
                    ),
                    LoopCheck::Agent(a) => (
                        a.scope,
                        self.writes(a.scope, a.writes.as_ref()),
                        Self::agent_work(a),
                    ),
                    LoopCheck::Gate { gate } => {
                        let (path, run) = match self.by_id.get(gate.as_str()) {
                            Some(FleetStep::Gate(g)) => (g.path.clone(), g.run.clone()),
                            Some(
                                FleetStep::Agent(_)
                                | FleetStep::Code(_)
                                | FleetStep::Loop(_)
                                | FleetStep::Plan(_),
                            )
                            | None => (String::new(), String::new()),
                        };
                        (
                            Scope::Workspace,
                            self.gate_writes(&path),
                            NodeWork::GateCheck {
                                gate: gate.clone(),
                                path,
                                run,
                            },
                        )
                    }
                };
                let repair_writes = self.writes(l.repair.scope, l.repair.writes.as_ref());
                let mut check_ids = Vec::new();
                let mut repair_ids = Vec::new();
                for attempt in 1..=l.max_attempts {
                    let check_id = loop_check_id(&l.id, attempt);
                    let dependencies = if attempt == 1 {
                        self.expand(&l.dependencies)
                    } else {
                        vec![loop_repair_id(&l.id, attempt - 1)]
                    };
                    nodes.push(PlanNode {
                        id: check_id.clone(),
                        step: l.id.clone(),
                        position: loop_check_position(&l.id),
                        role: NodeRole::Check,
                        attempt: Some(attempt),
                        scope: check_scope,
                        dependencies,
                        writes: check_writes.clone(),
                        work: check_work.clone(),
                    });
                    check_ids.push(check_id.clone());
                    if attempt < l.max_attempts {
                        let repair_id = loop_repair_id(&l.id, attempt);
                        nodes.push(PlanNode {
                            id: repair_id.clone(),
                            step: l.id.clone(),
                            position: loop_repair_position(&l.id),
                            role: NodeRole::Repair,
                            attempt: Some(attempt),
                            scope: l.repair.scope,
                            dependencies: vec![check_id],
                            writes: repair_writes.clone(),
                            work: Self::agent_work(&l.repair),
                        });
                        repair_ids.push(repair_id);
                    }
                }
                loops.push(PlanLoop {
                    id: l.id.clone(),
                    check_kind: l.check.kind(),
                    max_attempts: l.max_attempts,
                    check_ids,
                    repair_ids,
                });
            }
        }
    }
}
