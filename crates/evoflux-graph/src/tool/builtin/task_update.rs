//! `task_update`: a delegated task tells its parent what it is doing.
//!
//! The harness handles it natively by its [`Handling::Dispatch`](crate::tool::Handling):
//! it has no executor and no handler module.

use serde_json::json;

use super::{Framework, Spec, object};
use crate::tool::{ActionClass, Availability, DispatchAction, Handling};

pub(super) const TOOL: Framework = Framework {
    name: "task_update",
    spec,
};

fn spec() -> Spec {
    Spec::native(
        Handling::Dispatch {
            action: DispatchAction::TaskUpdate,
        },
        ActionClass::Dispatch,
        &[Availability::DelegatedTaskChild],
        "Tell the parent what this delegated task is doing.",
        object(
            json!({"message": {"type": "string", "minLength": 1}}),
            &["message"],
        ),
    )
}
