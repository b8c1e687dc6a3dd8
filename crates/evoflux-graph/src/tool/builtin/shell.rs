//! `shell`: one non-interactive command in the workspace, under the
//! session's sandbox; a long one keeps running and `process` continues it.
//!
//! Its handler (when the session can run it, how a call is approved, run
//! and counted as evidence) is `evoflux-harness/src/tools/shell.rs`,
//! of the same name.

use serde_json::json;

use super::{Framework, Spec, object, string};
use crate::tool::{ActionClass, BuiltinExecutor};

/// `timeout_seconds` when the call gives none.
pub const DEFAULT_TIMEOUT_SECONDS: u64 = 120;
/// The smallest `timeout_seconds` accepted.
pub const MIN_TIMEOUT_SECONDS: u64 = 1;
/// `yield_time_ms` when the call gives none.
pub const DEFAULT_YIELD_MS: u64 = 10_000;
/// Below this a command is barely started before the call returns.
pub const MIN_YIELD_MS: u64 = 250;
/// Above this the model waits blind; longer work continues with
/// `process`.
pub const MAX_YIELD_MS: u64 = 30_000;

pub(super) const TOOL: Framework = Framework {
    name: "shell",
    spec,
};

fn spec() -> Spec {
    Spec::ordinary(
        BuiltinExecutor::Shell,
        ActionClass::Execute,
        "Run one non-interactive shell command in the workspace (stdin closed, stderr merged). Long commands keep running after yield_time_ms; continue them with `process`.",
        object(
            json!({
                "command": string("The command line."),
                "description": string("Why you run it, in a few words."),
                "workdir": string("Directory inside the workspace."),
                "timeout_seconds": {
                    "type": "integer",
                    "minimum": MIN_TIMEOUT_SECONDS,
                    "description": format!("Default {}.", DEFAULT_TIMEOUT_SECONDS),
                },
                "yield_time_ms": {
                    "type": "integer",
                    "minimum": MIN_YIELD_MS,
                    "maximum": MAX_YIELD_MS,
                    "description": format!("Default {}.", DEFAULT_YIELD_MS),
                },
                "notify_on_exit": {"type": "boolean", "description": "If it outlives the yield, report its end without polling."},
                "outside_sandbox": {"type": "boolean", "description": "Ask the user to run this one command outside the sandbox, only when the sandbox blocks what the task needs (writing outside the workspace, the network when denied)."},
                "justification": string("With outside_sandbox: why, in one sentence the user reads.")
            }),
            &["command"],
        ),
    )
}
