//! `agent`: delegates a task to a member of the team, a worker, or a
//! fresh copy of the agent itself.
//!
//! The harness handles it natively by its [`Handling::Dispatch`](crate::tool::Handling)
//! (a child session per call): it has no executor and no handler module.

use serde_json::json;

use super::{Framework, Spec, object};
use crate::tool::{ActionClass, Availability, DispatchAction, Handling};

pub(super) const TOOL: Framework = Framework {
    name: "agent",
    spec,
};

fn spec() -> Spec {
    Spec::native(
        Handling::Dispatch {
            action: DispatchAction::SelfAgent,
        },
        ActionClass::Dispatch,
        &[Availability::RootSession],
        "Delegate a task to a member of your team (agent_id), or to a fresh copy of yourself (no agent_id); waits for its final answer, which is returned.",
        object(
            json!({
                "message": {"type": "string", "minLength": 1, "description": "The whole task: the agent sees nothing else of this conversation."},
                "agent_id": {"type": "string", "description": "The member to hand the task to."},
                "background": {"type": "boolean", "description": "Run it as a background task: this call returns its task id at once, you keep working, and its answer arrives when you pause; task_cancel stops it."}
            }),
            &["message"],
        ),
    )
}
