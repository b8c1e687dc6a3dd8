//! `ls`: lists a directory.
//!
//! Its handler (when the session can run it, how a call is approved, run
//! and counted as evidence) is `evoflux-harness/src/tools/ls.rs`,
//! of the same name.

use serde_json::json;

use super::{Framework, Spec, object, string};
use crate::tool::{ActionClass, BuiltinExecutor, ObservationKind};

pub(super) const TOOL: Framework = Framework { name: "ls", spec };

fn spec() -> Spec {
    Spec::ordinary(
        BuiltinExecutor::Ls,
        ActionClass::Read,
        "List a directory.",
        object(json!({"path": string("Directory; default `.`.")}), &[]),
    )
    .observes(ObservationKind::Discovery)
}
