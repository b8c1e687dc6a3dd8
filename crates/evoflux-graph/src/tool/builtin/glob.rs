//! `glob`: finds files by pattern.
//!
//! Its handler (when the session can run it, how a call is approved, run
//! and counted as evidence) is `evoflux-harness/src/tools/glob.rs`,
//! of the same name.

use serde_json::json;

use super::{Framework, Spec, object};
use crate::tool::{ActionClass, BuiltinExecutor, ObservationKind};

pub const MIN_RESULTS: u64 = 1;

pub(super) const TOOL: Framework = Framework { name: "glob", spec };

fn spec() -> Spec {
    Spec::ordinary(
        BuiltinExecutor::Glob,
        ActionClass::Read,
        "Find files by glob pattern.",
        object(
            json!({
                "pattern": {"type": "string"},
                "directory": {"type": "string"},
                "max_results": {"type": "integer", "minimum": MIN_RESULTS}
            }),
            &["pattern"],
        ),
    )
    .observes(ObservationKind::Discovery)
}
