//! `artifact`: writes a terminal artifact under the workspace's
//! `.evoflux/artifacts/`, nowhere else; only an agent or recipe that names
//! it gets it.
//!
//! Its handler (when the session can run it, how a call is approved, run
//! and counted as evidence) is `evoflux-harness/src/tools/artifact.rs`,
//! of the same name.

use serde_json::json;

use super::{Framework, Spec, object, string};
use crate::tool::{ActionClass, BuiltinExecutor};

pub(super) const TOOL: Framework = Framework {
    name: "artifact",
    spec,
};

fn spec() -> Spec {
    Spec {
        on_request: true,
        ..Spec::ordinary(
            BuiltinExecutor::Artifact,
            ActionClass::Artifact,
            "Write a terminal artifact (a plan, a report) under the workspace's .evoflux/artifacts/ folder; it cannot write anywhere else.",
            object(
                json!({
                    "path": string("Path inside .evoflux/artifacts/, such as PLAN.md."),
                    "content": {"type": "string"}
                }),
                &["path", "content"],
            ),
        )
    }
}
