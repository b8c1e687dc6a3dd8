//! `todo`: the lead's task list for the session.
//!
//! Its handler (when the session can run it, how a call is approved, run
//! and counted as evidence) is `evoflux-harness/src/tools/todo.rs`,
//! of the same name.

use serde_json::json;

use super::{Framework, Spec, object};
use crate::tool::{ActionClass, BuiltinExecutor};

pub(super) const TOOL: Framework = Framework { name: "todo", spec };

fn spec() -> Spec {
    Spec {
        lead_only: true,
        ..Spec::ordinary(
            BuiltinExecutor::Todo,
            ActionClass::Write,
            "Read or replace the task list. Omit `todos` to read it.",
            object(
                json!({"todos": {"type": "array", "items": object(json!({
                    "content": {"type": "string"},
                    "status": {"type": "string", "enum": ["pending", "in_progress", "completed", "cancelled"]}
                }), &["content", "status"])}}),
                &[],
            ),
        )
    }
}
