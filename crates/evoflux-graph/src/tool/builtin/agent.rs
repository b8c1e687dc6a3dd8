//! `agent`: delegates a task to a member of the team, a worker, or a
//! fresh copy of the agent itself.
//!
//! The harness handles it natively by its [`Handling::Dispatch`](crate::tool::Handling)
//! (a child session per call): it has no executor and no handler module.

use serde_json::json;

use super::{Framework, Spec, object};
use crate::tool::{ActionClass, DispatchAction, Handling};

pub(super) const TOOL: Framework = Framework {
    name: "agent",
    spec,
};

/// The tool's definition: what the framework's `tools/agent` module
/// builds, and what the team-delegation template derives from a team
/// ([`crate::derive::Template::TeamDelegation`]).
pub(crate) fn definition() -> crate::tool::ToolDefinition {
    (TOOL.spec)().build(TOOL.name)
}

fn spec() -> Spec {
    Spec::native(
        Handling::Dispatch {
            action: DispatchAction::SelfAgent,
        },
        ActionClass::Dispatch,
        // Whether a session may still hand tasks down is its team's: the
        // harness leaves it out below `[teams] max_depth`.
        &[],
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
