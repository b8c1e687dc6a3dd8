//! Fleet contracts: `fleets/<name>.md`, a Markdown file whose YAML front
//! matter declares a versioned DAG of steps and whose body is the strict
//! `{{var}}` prompt every agent step receives.
//!
//! ```markdown
//! ---
//! version: 3
//! name: build-test
//! maxWorkers: 1
//! onFailure: stop
//! steps:
//!   - {id: build, agent: coder, scope: workspace, dependencies: []}
//!   - id: suite
//!     kind: loop
//!     maxAttempts: 3
//!     dependencies: [build]
//!     check: {kind: code, command: test, scope: workspace}
//!     repair: {kind: agent, agent: coder, scope: workspace}
//! ---
//! Make {{target}} pass its tests.
//! ```
//!
//! The version literal picks the schema, and each version is a deliberate
//! bump rather than an optional field: v1 is agent steps only, v2 adds code
//! steps, v3 bounded loops and commit steps (`commitFrom`), v4 declared and
//! enforced write boundaries (`writes`), v5 gate and plan steps, per-step
//! `target`/`profile` routing and `writers: 1`. A key or kind newer than the
//! declared version is refused *by name*, because the two readings are far
//! apart: the author wrote a boundary (or a gate) and an older reader would
//! have ignored it. A kind nobody knows refuses the whole contract, never a
//! partial DAG.

mod parse;

use std::path::PathBuf;

use serde::{Serialize, Serializer};

use crate::boundary::WriteBoundary;

/// The diagnostic codes of reading a contract, one per kind of problem
/// (graph, boundary and binding codes live beside their checks).
pub mod codes {
    /// The file has no YAML front matter.
    pub const FRONTMATTER_MISSING: &str = "fleet/frontmatter-missing";
    /// `version` is missing or not 1 to 5: nothing else can be read without it.
    pub const VERSION_UNSUPPORTED: &str = "fleet/version-unsupported";
    /// A key the position only has from a later version, refused by name.
    pub const KEY_REQUIRES_VERSION: &str = "fleet/key-requires-version";
    /// A key the position has at no version.
    pub const KEY_UNKNOWN: &str = "fleet/key-unknown";
    /// A required key is absent.
    pub const KEY_MISSING: &str = "fleet/key-missing";
    /// A value of the wrong type or outside its range.
    pub const FIELD_INVALID: &str = "fleet/field-invalid";
    /// A step or loop-check kind no version has: the whole contract is refused.
    pub const KIND_UNKNOWN: &str = "fleet/kind-unknown";
    /// A kind newer than the declared version.
    pub const KIND_REQUIRES_VERSION: &str = "fleet/kind-requires-version";
    /// A `writes` entry the boundary grammar refuses.
    pub const WRITES_INVALID: &str = "fleet/writes-invalid";
    /// More `writes` entries than `WRITE_BOUNDARY_MAX_ENTRIES`.
    pub const WRITES_TOO_MANY: &str = "fleet/writes-too-many";
    /// `target` and `profile` on one position.
    pub const ROUTE_CONFLICT: &str = "fleet/route-conflict";
    /// A code step's `args`: too many, NUL or oversized, or a placeholder inside a token.
    pub const ARGS_INVALID: &str = "fleet/args-invalid";
    /// A gate declares `writes` (its boundary is its `path`).
    pub const GATE_WRITES: &str = "fleet/gate-writes";
    /// A gate `path` that is not one normalized, repository-relative file.
    pub const GATE_PATH_INVALID: &str = "fleet/gate-path-invalid";
    /// A plan step's roster names an agent twice.
    pub const ROSTER_DUPLICATE: &str = "fleet/roster-duplicate";
    /// No prompt after the front matter.
    pub const BODY_EMPTY: &str = "fleet/body-empty";
}

pub use parse::parse_fleet_contract;

/// Every check that holds for a contract value however it was made: the
/// graph ([`validate_fleet_graph`](crate::graph::validate_fleet_graph),
/// loop bounds included) and the write boundaries
/// ([`validate_write_boundaries`](crate::writes::validate_write_boundaries)).
/// The parser runs it on what it read and plan compilation on what it is
/// handed, so the two cannot drift apart.
pub fn validate_fleet_contract(contract: &FleetContract) -> evoflux_core::Diagnostics {
    let mut diags = crate::graph::validate_fleet_graph(contract);
    diags.extend(crate::writes::validate_write_boundaries(contract));
    diags
}

/// The version at which `writes` boundaries are declared and enforced.
pub const FLEET_WRITE_BOUNDARY_VERSION: FleetVersion = FleetVersion::V4;
/// The version that adds gate and plan steps, `target`/`profile` and
/// `writers`.
pub const FLEET_DYNAMIC_STEP_VERSION: FleetVersion = FleetVersion::V5;

/// The upper bound on any declared loop: five attempts already cost five
/// verifications and four repair dispatches, and a workflow that needs more
/// is not converging. Do not raise it without changing the repair loop's
/// cost model.
pub const FLEET_LOOP_MAX_ATTEMPTS: u32 = 5;

/// Whether a loop may declare `maxAttempts: n`: at least one verification,
/// at most [`FLEET_LOOP_MAX_ATTEMPTS`]. The one statement of the bound, read
/// by the parser and again by graph validation, so a contract built or
/// edited by hand cannot unroll into more nodes than the spec allows (or
/// into none).
pub const fn loop_attempts_allowed(n: u64) -> bool {
    n >= 1 && n <= FLEET_LOOP_MAX_ATTEMPTS as u64
}

/// What is wrong with a `maxAttempts` outside [`loop_attempts_allowed`].
pub fn loop_attempts_message() -> String {
    format!(
        "'maxAttempts' must be an integer from 1 to {FLEET_LOOP_MAX_ATTEMPTS}: the bound counts \
         verifications, and a loop that needs more is not converging"
    )
}

/// A plan step's roster holds 1..=16 distinct agents.
pub const PLAN_ROSTER_MAX: usize = 16;
/// A plan step proposes 1..=16 tasks.
pub const PLAN_MAX_TASKS: u32 = 16;
/// The agent of a plan step that names none.
pub const DEFAULT_PLAN_AGENT: &str = "architect";
/// A code step passes at most this many `args`: one per argument slot, so
/// no more than a command can declare.
pub const CODE_STEP_MAX_ARGS: usize = crate::commands::MAX_ARGUMENT_SLOTS;
/// The longest code-step argument, in characters: the longest value any
/// slot can accept.
pub const CODE_STEP_MAX_ARG_CHARS: usize = crate::commands::MAX_SLOT_LENGTH;

/// The contract schema version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FleetVersion {
    V1,
    V2,
    V3,
    V4,
    V5,
}

impl FleetVersion {
    pub const ALL: [FleetVersion; 5] = [
        FleetVersion::V1,
        FleetVersion::V2,
        FleetVersion::V3,
        FleetVersion::V4,
        FleetVersion::V5,
    ];

    pub const fn number(self) -> u8 {
        match self {
            FleetVersion::V1 => 1,
            FleetVersion::V2 => 2,
            FleetVersion::V3 => 3,
            FleetVersion::V4 => 4,
            FleetVersion::V5 => 5,
        }
    }

    pub fn from_number(n: u64) -> Option<FleetVersion> {
        FleetVersion::ALL
            .into_iter()
            .find(|v| u64::from(v.number()) == n)
    }

    /// Whether steps of this version declare (and are held to) `writes`.
    pub fn enforces_write_boundaries(self) -> bool {
        self >= FLEET_WRITE_BOUNDARY_VERSION
    }
}

impl Serialize for FleetVersion {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u8(self.number())
    }
}

impl std::fmt::Display for FleetVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.number())
    }
}

/// The step kinds, a closed set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StepKind {
    Agent,
    Code,
    Loop,
    Gate,
    Plan,
}

impl StepKind {
    pub const fn as_str(self) -> &'static str {
        match self {
            StepKind::Agent => "agent",
            StepKind::Code => "code",
            StepKind::Loop => "loop",
            StepKind::Gate => "gate",
            StepKind::Plan => "plan",
        }
    }

    pub fn parse(s: &str) -> Option<StepKind> {
        match s {
            "agent" => Some(StepKind::Agent),
            "code" => Some(StepKind::Code),
            "loop" => Some(StepKind::Loop),
            "gate" => Some(StepKind::Gate),
            "plan" => Some(StepKind::Plan),
            _ => None,
        }
    }

    /// The first version whose schema has this kind.
    pub const fn since(self) -> FleetVersion {
        match self {
            StepKind::Agent => FleetVersion::V1,
            StepKind::Code => FleetVersion::V2,
            StepKind::Loop => FleetVersion::V3,
            StepKind::Gate | StepKind::Plan => FleetVersion::V5,
        }
    }
}

/// What a step may touch: nothing, or the workspace (within its `writes`
/// from v4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    Readonly,
    Workspace,
}

impl Scope {
    pub const fn as_str(self) -> &'static str {
        match self {
            Scope::Readonly => "readonly",
            Scope::Workspace => "workspace",
        }
    }

    pub fn parse(s: &str) -> Option<Scope> {
        match s {
            "readonly" => Some(Scope::Readonly),
            "workspace" => Some(Scope::Workspace),
            _ => None,
        }
    }
}

/// What the run does after a failing step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OnFailure {
    /// Stop scheduling new work.
    Stop,
    /// Keep independent branches going.
    Continue,
}

impl OnFailure {
    pub fn parse(s: &str) -> Option<OnFailure> {
        match s {
            "stop" => Some(OnFailure::Stop),
            "continue" => Some(OnFailure::Continue),
            _ => None,
        }
    }

    pub const fn as_str(self) -> &'static str {
        match self {
            OnFailure::Stop => "stop",
            OnFailure::Continue => "continue",
        }
    }
}

/// A v5 step's route: a named target, or a profile; never both.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Route {
    Target(String),
    Profile(String),
}

/// An agent at one position: a whole agent step, or a loop half.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AgentWork {
    /// A worker recipe id.
    pub agent: String,
    pub scope: Scope,
    /// `None` when the key is absent (always below v4); `Some` of the
    /// normalized allowlist otherwise, possibly empty.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub writes: Option<WriteBoundary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub route: Option<Route>,
}

/// A registered command at one position: a code step or a loop's code check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CodeWork {
    /// An id of `fleets/commands.yaml`, never an invocation.
    pub command: String,
    /// Values for the command's declared argument slots; a whole-token
    /// `{{var}}` is filled at plan time.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    pub scope: Scope,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub writes: Option<WriteBoundary>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AgentStep {
    pub id: String,
    pub dependencies: Vec<String>,
    #[serde(flatten)]
    pub work: AgentWork,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CodeStep {
    pub id: String,
    pub dependencies: Vec<String>,
    #[serde(flatten)]
    pub work: CodeWork,
    /// Set on a commit step (v3+): the steps whose answer may author the
    /// commit message, most recent first.
    #[serde(rename = "commitFrom", skip_serializing_if = "Option::is_none")]
    pub commit_from: Option<Vec<String>>,
}

/// What a loop's check is, a closed set of its own: a loop is never checked
/// by a loop or a plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LoopCheckKind {
    Code,
    Agent,
    Gate,
}

impl LoopCheckKind {
    pub fn parse(s: &str) -> Option<LoopCheckKind> {
        match s {
            "code" => Some(LoopCheckKind::Code),
            "agent" => Some(LoopCheckKind::Agent),
            "gate" => Some(LoopCheckKind::Gate),
            _ => None,
        }
    }

    pub const fn as_str(self) -> &'static str {
        match self {
            LoopCheckKind::Code => "code",
            LoopCheckKind::Agent => "agent",
            LoopCheckKind::Gate => "gate",
        }
    }

    /// The first version whose loops may be checked this way.
    pub const fn since(self) -> FleetVersion {
        match self {
            LoopCheckKind::Code | LoopCheckKind::Agent => FleetVersion::V3,
            LoopCheckKind::Gate => FLEET_DYNAMIC_STEP_VERSION,
        }
    }
}

/// The verification half of a loop: the question that decides whether the
/// loop continues.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum LoopCheck {
    Code(CodeWork),
    Agent(AgentWork),
    /// (v5) Re-run a declared gate step's command against its file.
    Gate {
        gate: String,
    },
}

/// A bounded check/repair loop. `max_attempts` counts verifications, so at
/// most `max_attempts - 1` repairs run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LoopStep {
    pub id: String,
    #[serde(rename = "maxAttempts")]
    pub max_attempts: u32,
    pub dependencies: Vec<String>,
    pub check: LoopCheck,
    /// Always an agent: a deterministic repair would just be a check.
    pub repair: AgentWork,
}

/// (v5) An author agent writes exactly `path`; the `run` command must then
/// fail against it on the untouched tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GateStep {
    pub id: String,
    pub agent: String,
    /// A single normalized, repository-relative file: also the step's whole
    /// write boundary.
    pub path: String,
    /// A command id whose argv holds a whole-token `{{path}}`.
    pub run: String,
    pub dependencies: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub route: Option<Route>,
}

/// (v5) An architect answers a delegation plan over a roster; its tasks
/// are spliced into the run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlanStep {
    pub id: String,
    pub roster: Vec<String>,
    #[serde(rename = "maxTasks")]
    pub max_tasks: u32,
    pub proposals: bool,
    pub dependencies: Vec<String>,
    #[serde(flatten)]
    pub work: AgentWork,
}

/// One declared step: a closed enum, matched exhaustively everywhere.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum FleetStep {
    Agent(AgentStep),
    Code(CodeStep),
    Loop(LoopStep),
    Gate(GateStep),
    Plan(PlanStep),
}

impl LoopCheck {
    pub fn kind(&self) -> LoopCheckKind {
        match self {
            LoopCheck::Code(_) => LoopCheckKind::Code,
            LoopCheck::Agent(_) => LoopCheckKind::Agent,
            LoopCheck::Gate { .. } => LoopCheckKind::Gate,
        }
    }
}

impl FleetStep {
    pub fn id(&self) -> &str {
        match self {
            FleetStep::Agent(s) => &s.id,
            FleetStep::Code(s) => &s.id,
            FleetStep::Loop(s) => &s.id,
            FleetStep::Gate(s) => &s.id,
            FleetStep::Plan(s) => &s.id,
        }
    }

    pub fn dependencies(&self) -> &[String] {
        match self {
            FleetStep::Agent(s) => &s.dependencies,
            FleetStep::Code(s) => &s.dependencies,
            FleetStep::Loop(s) => &s.dependencies,
            FleetStep::Gate(s) => &s.dependencies,
            FleetStep::Plan(s) => &s.dependencies,
        }
    }

    pub fn kind(&self) -> StepKind {
        match self {
            FleetStep::Agent(_) => StepKind::Agent,
            FleetStep::Code(_) => StepKind::Code,
            FleetStep::Loop(_) => StepKind::Loop,
            FleetStep::Gate(_) => StepKind::Gate,
            FleetStep::Plan(_) => StepKind::Plan,
        }
    }
}

/// A parsed, validated fleet contract.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FleetContract {
    pub version: FleetVersion,
    /// The front matter `name`.
    pub name: String,
    pub description: String,
    pub steps: Vec<FleetStep>,
    /// At most this many steps run at once.
    #[serde(rename = "maxWorkers")]
    pub max_workers: u32,
    /// A run stops before spending more than this.
    #[serde(rename = "budgetUsd", skip_serializing_if = "Option::is_none")]
    pub budget_usd: Option<f64>,
    #[serde(rename = "onFailure")]
    pub on_failure: OnFailure,
    /// (v5) `writers: 1`: write tasks are serialized through one token.
    #[serde(rename = "singleWriter")]
    pub single_writer: bool,
    /// The prompt template, trimmed, placeholders unresolved.
    pub body: String,
    /// The file it was read from.
    pub path: PathBuf,
}

impl FleetContract {
    pub fn step(&self, id: &str) -> Option<&FleetStep> {
        self.steps.iter().find(|s| s.id() == id)
    }
}

/// Plan-node id of one unrolled loop verification; attempts are 1-based.
pub fn loop_check_id(loop_id: &str, attempt: u32) -> String {
    format!("{loop_id}.check.{attempt}")
}

/// Plan-node id of one unrolled loop repair; repair `n` follows check `n`.
pub fn loop_repair_id(loop_id: &str, attempt: u32) -> String {
    format!("{loop_id}.repair.{attempt}")
}

/// The contract-level position of a loop's check half, `<loop>.check`:
/// what boundary rules and diagnostics name (every attempt inherits it).
pub fn loop_check_position(loop_id: &str) -> String {
    format!("{loop_id}.check")
}

/// The contract-level position of a loop's repair half, `<loop>.repair`.
pub fn loop_repair_position(loop_id: &str) -> String {
    format!("{loop_id}.repair")
}
