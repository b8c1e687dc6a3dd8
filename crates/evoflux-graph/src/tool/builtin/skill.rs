//! `skill`: lists skills, loads one, or reads one of its resources; its
//! calls are shown as skill activations.
//!
//! Its handler (when the session can run it, how a call is approved, run
//! and counted as evidence) is `evoflux-harness/src/tools/skill.rs`,
//! of the same name.

use serde_json::json;

use super::{Framework, Spec, object};
use crate::tool::{ActionClass, BuiltinExecutor, Presentation};

pub(super) const TOOL: Framework = Framework {
    name: "skill",
    spec,
};

fn spec() -> Spec {
    Spec {
        presentation: Presentation::Skill,
        ..Spec::ordinary(
            BuiltinExecutor::Skill,
            ActionClass::Read,
            "List skills, load one by name, or read one of its resources.",
            object(
                json!({
                    "skill_name": {"type": "string"},
                    "action": {"type": "string", "enum": ["list", "load", "read_resource"]},
                    "resource_path": {"type": "string"}
                }),
                &[],
            ),
        )
    }
}
