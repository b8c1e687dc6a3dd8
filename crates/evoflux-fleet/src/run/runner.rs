//! The two seams through which a node's work leaves the executor: an
//! [`AgentRunner`] (the harness dispatches a worker) and a
//! [`CommandRunner`] (a registered command runs). Both are traits so the
//! harness can route them through its dispatch path and its process
//! runtime and journal; [`ProcessCommandRunner`] is the plain
//! `tokio::process` implementation.
//!
//! Futures are boxed (`RunFuture`) rather than `async fn` in traits, so
//! the runners can be held as `Arc<dyn …>` without a proc-macro crate, the
//! same shape as the harness's hooks.

use std::ffi::OsString;
use std::fmt;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::process::Stdio;
use std::time::{Duration, Instant};

use evoflux_core::price::Usd;
use serde::{Deserialize, Serialize};
use tokio::io::AsyncReadExt;
use tokio::process::Command;

use crate::boundary::WriteBoundary;
use crate::plan::PlanNode;

/// A boxed, sendable future borrowing from its runner and request.
pub type RunFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What an earlier node hands to this one: its output (a repair receives
/// the failing check's output this way).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeInput {
    pub node: String,
    pub output: String,
}

/// One agent node to run.
#[derive(Debug, Clone)]
pub struct AgentRequest {
    pub run_id: String,
    pub node: PlanNode,
    /// The rendered contract body: every agent node's task.
    pub task: String,
    /// The checkout the worker works in: the main one, or the node's own
    /// worktree. Nothing outside it belongs to the node.
    pub workdir: PathBuf,
    /// The boundary the executor will hold the node to (`None` below v4),
    /// so the worker can be told before it writes.
    pub writes: Option<WriteBoundary>,
    /// Outputs of the node's direct dependencies, in dependency order.
    pub inputs: Vec<NodeInput>,
}

/// A loop check's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Pass,
    Fail,
}

/// What a worker run came to.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AgentOutcome {
    /// The worker's final text.
    pub output: String,
    /// Whether its result contract was met (after repairs).
    pub contract_met: bool,
    /// Result-contract repair rounds used.
    pub repair_rounds: u32,
    pub cost: Usd,
    /// For an agent loop check: the harness's reading of the answer.
    /// `None` on a check fails the node (`fleet/check-undecided`): an
    /// answer nobody could read approves nothing.
    pub verdict: Option<Verdict>,
    /// A `commitMessage` the result authored, for commit steps naming this
    /// node in `commitFrom`.
    pub commit_message: Option<String>,
}

/// The worker could not be run at all (dispatch refused, provider down).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct AgentError {
    pub message: String,
    /// Whatever the harness spent before it failed.
    pub cost: Usd,
}

/// Runs agent nodes. The application implements it with the engine's
/// dispatch path (recipe lookup, admission, result contract and repair
/// rounds).
pub trait AgentRunner: Send + Sync + fmt::Debug {
    fn run_agent<'a>(
        &'a self,
        request: &'a AgentRequest,
    ) -> RunFuture<'a, Result<AgentOutcome, AgentError>>;
}

/// One registered command to run, fully resolved by the executor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandRequest {
    pub run_id: String,
    pub node: String,
    /// The registry id.
    pub command: String,
    /// Program first; placeholders already bound.
    pub argv: Vec<String>,
    /// The checkout the node works in (the repository, or the node's own
    /// worktree): everything the command may write is in it.
    pub checkout: PathBuf,
    /// Absolute: the node's checkout joined with the command's `cwd`.
    pub cwd: PathBuf,
    /// The whole environment (see
    /// [`FleetCommand::environment`](crate::commands::FleetCommand::environment)):
    /// a runner passes exactly this and nothing of its own.
    pub env: Vec<(OsString, OsString)>,
    pub timeout: Duration,
}

/// What a command did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandOutput {
    /// `None` when killed by a signal or the timeout.
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    /// Standard output then standard error, lossily decoded, at most
    /// [`OUTPUT_CAPTURE_MAX_BYTES`] (the tail is kept).
    pub output: String,
    pub duration: Duration,
    /// The file holding the command's whole output, when the runner
    /// journals it.
    pub log: Option<PathBuf>,
}

impl CommandOutput {
    pub fn passed(&self) -> bool {
        !self.timed_out && self.exit_code == Some(0)
    }
}

/// The command could not be started (missing program, bad cwd).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot start `{program}`: {message}")]
pub struct CommandSpawnError {
    pub program: String,
    pub message: String,
}

/// Runs registered commands.
pub trait CommandRunner: Send + Sync + fmt::Debug {
    fn run_command<'a>(
        &'a self,
        request: &'a CommandRequest,
    ) -> RunFuture<'a, Result<CommandOutput, CommandSpawnError>>;
}

/// The most output kept per stream; the tail, because a failing test
/// prints its verdict last.
pub const OUTPUT_CAPTURE_MAX_BYTES: usize = 1 << 20;

/// `tokio::process` without a shell: `env_clear`, then exactly the
/// request's environment; stdin closed; killed on timeout and when the
/// run is dropped.
#[derive(Debug, Default, Clone, Copy)]
pub struct ProcessCommandRunner;

impl CommandRunner for ProcessCommandRunner {
    fn run_command<'a>(
        &'a self,
        request: &'a CommandRequest,
    ) -> RunFuture<'a, Result<CommandOutput, CommandSpawnError>> {
        Box::pin(async move {
            let spawn_err = |message: String| CommandSpawnError {
                program: request.argv.first().cloned().unwrap_or_default(),
                message,
            };
            let Some((program, args)) = request.argv.split_first() else {
                return Err(spawn_err("empty argv".to_owned()));
            };
            let started = Instant::now();
            let mut child = Command::new(program)
                .args(args)
                .current_dir(&request.cwd)
                .env_clear()
                .envs(request.env.iter().map(|(k, v)| (k, v)))
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .kill_on_drop(true)
                .spawn()
                .map_err(|e| spawn_err(e.to_string()))?;
            let mut stdout = child.stdout.take();
            let mut stderr = child.stderr.take();
            let read_out = async {
                let mut buf = Vec::new();
                if let Some(s) = stdout.as_mut() {
                    let _ = s.read_to_end(&mut buf).await;
                }
                buf
            };
            let read_err = async {
                let mut buf = Vec::new();
                if let Some(s) = stderr.as_mut() {
                    let _ = s.read_to_end(&mut buf).await;
                }
                buf
            };
            let waited = tokio::time::timeout(request.timeout, async {
                let (out, err, status) = tokio::join!(read_out, read_err, child.wait());
                (out, err, status)
            })
            .await;
            let (out, err, exit_code, timed_out) = match waited {
                Ok((out, err, status)) => {
                    let code = status.ok().and_then(|s| s.code());
                    (out, err, code, false)
                }
                Err(_) => {
                    let _ = child.kill().await;
                    (Vec::new(), Vec::new(), None, true)
                }
            };
            let mut text = tail(&out);
            text.push_str(&tail(&err));
            Ok(CommandOutput {
                exit_code,
                timed_out,
                output: text,
                duration: started.elapsed(),
                log: None,
            })
        })
    }
}

/// The last [`OUTPUT_CAPTURE_MAX_BYTES`] of `bytes`, lossily decoded.
fn tail(bytes: &[u8]) -> String {
    let start = bytes.len().saturating_sub(OUTPUT_CAPTURE_MAX_BYTES);
    String::from_utf8_lossy(&bytes[start..]).into_owned()
}
