//! Receipts: what one plan node did, one per node per run, journalled as
//! soon as the node settles. Every status and reason is a closed enum with
//! a stable `fleet/...` code, so a stored receipt means the same thing to
//! every reader.

use evoflux_core::price::Usd;
use serde::{Deserialize, Serialize};

use crate::plan::NodeRole;
use crate::run::runner::{NodeInput, Verdict};

/// Why a node failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FailureReason {
    /// The agent runner could not run the worker.
    AgentFailed,
    /// The worker's result missed its contract after its repair rounds.
    ResultContractMissed,
    /// The command could not be bound (no registry, unknown id,
    /// placeholder without a value).
    CommandUnbound,
    /// The command could not be started.
    CommandSpawn,
    /// The command exited non-zero (a non-check node).
    CommandFailed,
    /// The command ran past its `timeoutMs` (a non-check node).
    CommandTimeout,
    /// An agent check whose answer the harness could not read.
    CheckUndecided,
    /// The loop's last check failed.
    LoopExhausted,
    /// The node changed paths its boundary does not cover; they were
    /// rolled back.
    WriteBoundary,
    /// Its worktree's changes conflict with the main checkout.
    MergeConflict,
    /// A git operation the enforcement or the worktree needs failed.
    Workspace,
    /// A gate's command passed on the fresh gate: it does not discriminate.
    GateNotDiscriminating,
    /// The node's task panicked.
    RunnerPanicked,
    /// A plan step's delegation plan broke its step's rules; nothing was
    /// spliced.
    DelegationPlanInvalid,
    /// A verification made stale failed its re-run, or went stale more
    /// than `STALENESS_REVALIDATION_LIMIT` times.
    StaleVerification,
}

impl FailureReason {
    pub const fn code(self) -> &'static str {
        match self {
            FailureReason::AgentFailed => "fleet/agent-failed",
            FailureReason::ResultContractMissed => "fleet/result-contract-missed",
            FailureReason::CommandUnbound => "fleet/command-unbound",
            FailureReason::CommandSpawn => "fleet/command-spawn",
            FailureReason::CommandFailed => "fleet/command-failed",
            FailureReason::CommandTimeout => "fleet/command-timeout",
            FailureReason::CheckUndecided => "fleet/check-undecided",
            FailureReason::LoopExhausted => "fleet/loop-exhausted",
            FailureReason::WriteBoundary => "fleet/write-boundary",
            FailureReason::MergeConflict => "fleet/merge-conflict",
            FailureReason::Workspace => "fleet/workspace",
            FailureReason::GateNotDiscriminating => "fleet/gate-not-discriminating",
            FailureReason::RunnerPanicked => "fleet/runner-panicked",
            FailureReason::DelegationPlanInvalid => "fleet/delegation-plan-invalid",
            FailureReason::StaleVerification => "fleet/stale-verification",
        }
    }
}

/// Why a node never ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SkipReason {
    /// Its loop resolved on an earlier check: not needed, not a failure.
    LoopResolved,
    /// A dependency failed or was itself skipped.
    DependencyBlocked,
    /// `onFailure: stop` after another node failed.
    Stopped,
    /// The run had spent its `budgetUsd` when the node would have started.
    BudgetExhausted,
    /// A commit step whose checkout held exactly HEAD's tree: there was
    /// nothing to commit, so its command did not run. Not a failure.
    NothingToCommit,
}

impl SkipReason {
    pub const fn code(self) -> &'static str {
        match self {
            SkipReason::LoopResolved => "fleet/loop-resolved",
            SkipReason::DependencyBlocked => "fleet/dependency-blocked",
            SkipReason::Stopped => "fleet/stopped",
            SkipReason::BudgetExhausted => "fleet/budget-exhausted",
            SkipReason::NothingToCommit => "fleet/nothing-to-commit",
        }
    }
}

/// How a node settled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum NodeOutcome {
    /// Ran and did its work; a check that passed.
    Succeeded,
    /// A loop check that ran and said fail while repairs remain: the
    /// repair runs next. Not a failure of the run.
    CheckFailed,
    Failed {
        reason: FailureReason,
        message: String,
    },
    Skipped {
        reason: SkipReason,
    },
}

/// The plain status, for listings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NodeStatus {
    Succeeded,
    CheckFailed,
    Failed,
    Skipped,
}

impl NodeOutcome {
    pub fn status(&self) -> NodeStatus {
        match self {
            NodeOutcome::Succeeded => NodeStatus::Succeeded,
            NodeOutcome::CheckFailed => NodeStatus::CheckFailed,
            NodeOutcome::Failed { .. } => NodeStatus::Failed,
            NodeOutcome::Skipped { .. } => NodeStatus::Skipped,
        }
    }

    /// Whether a dependent may go on past this node: it did its work, or
    /// it is a failed check (the loop continues and its last check decides
    /// for the dependents), or its loop no longer needed it, or it was a
    /// commit with nothing to commit.
    pub fn permits_dependents(&self) -> bool {
        match self {
            NodeOutcome::Succeeded
            | NodeOutcome::CheckFailed
            | NodeOutcome::Skipped {
                reason: SkipReason::LoopResolved | SkipReason::NothingToCommit,
            } => true,
            NodeOutcome::Failed { .. }
            | NodeOutcome::Skipped {
                reason:
                    SkipReason::DependencyBlocked | SkipReason::Stopped | SkipReason::BudgetExhausted,
            } => false,
        }
    }

    /// Whether a resumed run keeps this receipt instead of running the
    /// node again. Exactly the outcomes that permit dependents: failures
    /// and skips for a failure, stop or budget are what a resume retries.
    pub fn is_final(&self) -> bool {
        self.permits_dependents()
    }
}

/// Where a node worked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Workdir {
    /// The main checkout.
    Main,
    /// Its own git worktree, merged back afterwards.
    Worktree,
    /// It never ran.
    None,
}

/// Whether the worker's result contract held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ContractOutcome {
    /// Not an agent node, or it never ran.
    NotApplicable,
    Met,
    Missed,
}

/// What one node did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeReceipt {
    pub node: String,
    pub step: String,
    pub role: NodeRole,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    #[serde(flatten)]
    pub outcome: NodeOutcome,
    pub workdir: Workdir,
    /// Outputs handed in from dependencies.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inputs: Vec<NodeInput>,
    /// The worker's final text or the command's output (tail).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    /// The argv a code or gate node ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The command's whole output, where the runner journalled it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log: Option<std::path::PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
    /// Paths the node changed and kept (repository-relative, sorted).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files_changed: Vec<String>,
    /// Paths it changed outside its boundary, rolled back.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub boundary_violations: Vec<String>,
    /// Paths its worktree could not merge.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conflicts: Vec<String>,
    pub contract: ContractOutcome,
    #[serde(default)]
    pub repair_rounds: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit_message: Option<String>,
    /// Milliseconds since the Unix epoch; 0 for a node that never ran.
    #[serde(default)]
    pub started_at_ms: u64,
    #[serde(default)]
    pub duration_ms: u64,
    #[serde(default)]
    pub cost: Usd,
}

impl NodeReceipt {
    /// A receipt for a node that never ran.
    pub fn skipped(node: &crate::plan::PlanNode, reason: SkipReason) -> NodeReceipt {
        NodeReceipt {
            node: node.id.clone(),
            step: node.step.clone(),
            role: node.role,
            attempt: node.attempt,
            outcome: NodeOutcome::Skipped { reason },
            workdir: Workdir::None,
            inputs: Vec::new(),
            output: None,
            command: None,
            exit_code: None,
            log: None,
            verdict: None,
            files_changed: Vec::new(),
            boundary_violations: Vec::new(),
            conflicts: Vec::new(),
            contract: ContractOutcome::NotApplicable,
            repair_rounds: 0,
            commit_message: None,
            started_at_ms: 0,
            duration_ms: 0,
            cost: Usd::ZERO,
        }
    }
}
