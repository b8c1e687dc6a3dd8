//! Running a compiled plan: the executor, its seams and its records.
//!
//! * [`executor`]: [`Executor`] schedules plan nodes (at most `maxWorkers`
//!   at once), applies loop semantics, `onFailure` and the budget stop,
//!   enforces write boundaries against git and merges worktrees back.
//! * [`runner`]: the traits the application implements to run a node's work
//!   ([`AgentRunner`], [`CommandRunner`]) and the plain
//!   [`ProcessCommandRunner`].
//! * [`journal`]: [`RunJournal`], where a run is made durable so it can be
//!   resumed ([`FileJournal`], [`MemoryJournal`]).
//! * [`receipt`]: [`NodeReceipt`], one per node, with closed statuses and
//!   `fleet/...` codes.
//! * [`observe`]: what a node changed, held to its write boundary (ignored
//!   files included) and rolled back where it may not.
//! * [`git`]: the git subprocesses enforcement needs (snapshots through a
//!   private index, ignored-file listings, rollback, worktrees, tree
//!   merges).

pub mod executor;
pub mod git;
pub mod journal;
pub mod observe;
pub mod receipt;
pub mod runner;

pub use executor::{
    Executor, ExecutorConfig, ExecutorError, LoopOutcome, LoopReason, RECEIPT_OUTPUT_MAX_BYTES,
    RunReport, RunStatus, STALENESS_REVALIDATION_LIMIT, now_ms,
};
pub use journal::{FileJournal, JournalEntry, JournalError, MemoryJournal, RunJournal};
pub use observe::RECEIPT_PATHS_MAX;
pub use receipt::{
    ContractOutcome, FailureReason, NodeOutcome, NodeReceipt, NodeStatus, SkipReason, Workdir,
};
pub use runner::{
    AgentError, AgentOutcome, AgentRequest, AgentRunner, CommandOutput, CommandRequest,
    CommandRunner, CommandSpawnError, NodeInput, OUTPUT_CAPTURE_MAX_BYTES, ProcessCommandRunner,
    RunFuture, Verdict,
};
