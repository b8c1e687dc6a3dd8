//! `verify`: runs one of the repository's registered check commands by id.
//! The command enum is bound per session from the registry
//! (`PreparedTools::bind_checks`); the graph does not know it.
//!
//! Its handler (when the session can run it, how a call is approved, run
//! and counted as evidence) is `evoflux-harness/src/tools/verify.rs`,
//! of the same name.

use serde_json::json;

use super::{Framework, Spec, object, string};
use crate::tool::{ActionClass, BuiltinExecutor};

pub(super) const TOOL: Framework = Framework {
    name: "verify",
    spec,
};

fn spec() -> Spec {
    Spec::ordinary(
        BuiltinExecutor::Verify,
        ActionClass::Verify,
        "Run one of the repository's registered check commands (fleets/commands.yaml) by id: argv only, no shell, a closed environment. Returns whether it passed, its exit code and the tail of its output.",
        object(
            json!({
                "command": string("The registered command's id."),
                "args": {"type": "array", "items": {"type": "string"}, "maxItems": 64, "description": "Values for the command's declared argument slots, in order; nothing else."}
            }),
            &["command"],
        ),
    )
}
