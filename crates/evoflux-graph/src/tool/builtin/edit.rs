//! `edit`: replaces exact text in a file.
//!
//! Its handler (when the session can run it, how a call is approved, run
//! and counted as evidence) is `evoflux-harness/src/tools/edit.rs`,
//! of the same name.

use serde_json::json;

use super::{Framework, Spec, object, string};
use crate::tool::{ActionClass, BuiltinExecutor};

pub(super) const TOOL: Framework = Framework { name: "edit", spec };

fn spec() -> Spec {
    Spec::ordinary(
        BuiltinExecutor::Edit,
        ActionClass::Write,
        "Replace exact text in a file.",
        object(
            json!({
                "path": string("File path."),
                "old_string": {"type": "string"},
                "new_string": {"type": "string"},
                "replace_all": {"type": "boolean"}
            }),
            &["path", "old_string", "new_string"],
        ),
    )
}
