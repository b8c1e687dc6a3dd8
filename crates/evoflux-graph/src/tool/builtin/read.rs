//! `read`: a file's lines, numbered, one window at a time; also the
//! session's artifacts a result named (`artifact:NAME`).
//!
//! Its handler (when the session can run it, how a call is approved, run
//! and counted as evidence) is `evoflux-harness/src/tools/read.rs`,
//! of the same name.

use serde_json::json;

use super::{Framework, Spec, object, string};
use crate::tool::{ActionClass, BuiltinExecutor, ObservationKind};

/// The first line is 1 (`offset`), and a window shows at least one
/// line (`limit`).
pub const MIN_OFFSET: u64 = 1;
pub const MIN_LIMIT: u64 = 1;
/// How a path names a file of the session's artifacts (a command's
/// full output, an offloaded result) rather than of the workspace:
/// `artifact:proc_0123456789.txt`. Observations name artifacts so,
/// never by their place in the data directory.
pub const ARTIFACT_SCHEME: &str = "artifact:";

pub(super) const TOOL: Framework = Framework { name: "read", spec };

fn spec() -> Spec {
    Spec::ordinary(
        BuiltinExecutor::Read,
        ActionClass::Read,
        "Read a file with line numbers. Use offset/limit for large files.",
        object(
            json!({
                "path": string("File path, or an artifact a result named (artifact:NAME)."),
                "offset": {"type": "integer", "minimum": MIN_OFFSET},
                "limit": {"type": "integer", "minimum": MIN_LIMIT}
            }),
            &["path"],
        ),
    )
    .observes(ObservationKind::Source)
}
