//! `write`: a whole file.
//!
//! Its handler (when the session can run it, how a call is approved, run
//! and counted as evidence) is `evoflux-harness/src/tools/write.rs`,
//! of the same name.

use serde_json::json;

use super::{Framework, Spec, object, string};
use crate::tool::{ActionClass, BuiltinExecutor};

pub(super) const TOOL: Framework = Framework {
    name: "write",
    spec,
};

fn spec() -> Spec {
    Spec::ordinary(
        BuiltinExecutor::Write,
        ActionClass::Write,
        "Write a whole file.",
        object(
            json!({"path": string("File path."), "content": {"type": "string"}, "overwrite": {"type": "boolean"}}),
            &["path", "content"],
        ),
    )
}
