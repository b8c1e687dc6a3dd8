//! `code_context`: navigates code by one exact symbol (Coding sessions).
//!
//! Its handler (when the session can run it, how a call is approved, run
//! and counted as evidence) is `evoflux-harness/src/tools/code_context.rs`,
//! of the same name.

use evoflux_core::AppMode;
use serde_json::json;

use super::{Framework, Spec, object};
use crate::tool::{ActionClass, BuiltinExecutor, ObservationKind};

pub(super) const TOOL: Framework = Framework {
    name: "code_context",
    spec,
};

fn spec() -> Spec {
    Spec {
        modes: &[AppMode::Coding],
        observation: Some(ObservationKind::Retrieval),
        ..Spec::ordinary(
            BuiltinExecutor::CodeContext,
            ActionClass::Read,
            "Navigate code by one exact symbol: where it is defined (with its source), its references, callers, callees, implementations, transitive impact or neighborhood; or the outline of one file. Give the name as it appears in code (`load_config`, `Config::new`, `store.Open`), never a description: find the identifier first with grep or read. Results name the repository, path, line range and file revision, ready for `read`; ambiguity is listed, not guessed.",
            object(
                json!({
                    "operation": {
                        "type": "string",
                        "enum": evoflux_core::code_operation::CodeOperation::ALL.map(|o| o.as_str()),
                        "description": "definition, references, callers, callees, implementations, impact (callers, transitively) and neighborhood (container, siblings, callers, callees) take `symbol`; outline takes `path`."
                    },
                    "symbol": {
                        "type": "string",
                        "pattern": evoflux_core::code_operation::SYMBOL_PATTERN,
                        "maxLength": evoflux_core::code_operation::MAX_SYMBOL_CHARS,
                        "description": "One exact identifier, optionally qualified by its type or module: `name`, `Type::method`, `module.func`."
                    },
                    "path": {
                        "type": "string",
                        "maxLength": 1000,
                        "description": "For outline: the file. Otherwise: a file or folder the symbol must be in."
                    },
                    "repository": {
                        "type": "string",
                        "description": "Only this repository of the session (its folder name, or `.` for the first)."
                    },
                    "depth": {"type": "integer", "minimum": 1, "maximum": 4, "description": "For impact: how many calls away to follow (default 2)."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 50, "description": "Most entries per section (default 20)."}
                }),
                &["operation"],
            ),
        )
    }
}
