//! `ask_user`: the lead asks the user a question and the turn waits for
//! the answer.
//!
//! The harness handles it natively by its [`Handling::RequestInput`](crate::tool::Handling):
//! it has no executor and no handler module.

use serde_json::json;

use super::{Framework, Spec, object};
use crate::tool::{ActionClass, Availability, Handling, InputRequest};

pub(super) const TOOL: Framework = Framework {
    name: "ask_user",
    spec,
};

fn spec() -> Spec {
    Spec {
        lead_only: true,
        ..Spec::native(
            Handling::RequestInput {
                request: InputRequest::Question,
            },
            ActionClass::Ask,
            &[Availability::RequiresRequestInput],
            "Ask the user a question and wait for the answer.",
            object(
                json!({
                    "question": {"type": "string"},
                    "options": {"type": "array", "items": {"type": "string"}}
                }),
                &["question"],
            ),
        )
    }
}
