//! `task_cancel`: the lead cancels background tasks.
//!
//! The harness handles it natively by its [`Handling::Dispatch`](crate::tool::Handling):
//! it has no executor and no handler module.

use serde_json::json;

use super::{Framework, Spec, object};
use crate::tool::{ActionClass, DispatchAction, Handling};

pub(super) const TOOL: Framework = Framework {
    name: "task_cancel",
    spec,
};

fn spec() -> Spec {
    Spec::native(
        Handling::Dispatch {
            action: DispatchAction::TaskCancel,
        },
        ActionClass::Dispatch,
        // Whether a session may still hand tasks down is its team's: the
        // harness leaves it out below `[teams] max_depth`.
        &[],
        "Cancel delegated tasks by id.",
        object(
            json!({"task_ids": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 50}}),
            &["task_ids"],
        ),
    )
}
