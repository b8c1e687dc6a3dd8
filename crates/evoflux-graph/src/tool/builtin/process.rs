//! `process`: lists, polls, waits for or terminates the commands `shell`
//! started.
//!
//! Its handler (when the session can run it, how a call is approved, run
//! and counted as evidence) is `evoflux-harness/src/tools/process.rs`,
//! of the same name.

use serde_json::json;

use super::{Framework, Spec, object};
use crate::tool::{ActionClass, BuiltinExecutor};

/// `wait_seconds` when the call gives none.
pub const DEFAULT_WAIT_SECONDS: u64 = 10;
pub const MIN_WAIT_SECONDS: u64 = 1;
/// One `wait` blocks the turn at most this long.
pub const MAX_WAIT_SECONDS: u64 = 60;
/// The actions, in the order the schema lists them.
pub const ACTIONS: &[&str] = &["list", "poll", "wait", "terminate"];

pub(super) const TOOL: Framework = Framework {
    name: "process",
    spec,
};

fn spec() -> Spec {
    Spec::ordinary(
        BuiltinExecutor::Process,
        ActionClass::Execute,
        "List, poll, wait for or terminate commands started by `shell`.",
        object(
            json!({
                "action": {"type": "string", "enum": ACTIONS},
                "process_id": {"type": "string"},
                "wait_seconds": {
                    "type": "integer",
                    "minimum": MIN_WAIT_SECONDS,
                    "maximum": MAX_WAIT_SECONDS,
                }
            }),
            &["action"],
        ),
    )
}
