//! `grep`: searches file contents with a regular expression.
//!
//! Its handler (when the session can run it, how a call is approved, run
//! and counted as evidence) is `evoflux-harness/src/tools/grep.rs`,
//! of the same name.

use serde_json::json;

use super::{Framework, Spec, object};
use crate::tool::{ActionClass, BuiltinExecutor, ObservationKind};

/// Longest accepted pattern, in characters.
pub const MAX_PATTERN_CHARS: u64 = 500;
/// Lines of context around each match.
pub const MIN_CONTEXT: u64 = 0;
pub const MAX_CONTEXT: u64 = 10;
pub const MIN_RESULTS: u64 = 1;

pub(super) const TOOL: Framework = Framework { name: "grep", spec };

fn spec() -> Spec {
    Spec::ordinary(
        BuiltinExecutor::Grep,
        ActionClass::Read,
        "Search file contents with a regular expression.",
        object(
            json!({
                "pattern": {"type": "string", "maxLength": MAX_PATTERN_CHARS},
                "directory": {"type": "string"},
                "include": {"type": "string"},
                "case_insensitive": {"type": "boolean"},
                "context": {
                    "type": "integer",
                    "minimum": MIN_CONTEXT,
                    "maximum": MAX_CONTEXT,
                },
                "max_results": {"type": "integer", "minimum": MIN_RESULTS}
            }),
            &["pattern"],
        ),
    )
    .observes(ObservationKind::Discovery)
}
