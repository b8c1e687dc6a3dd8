//! `connection_search`: finds and activates the tools held back from the
//! model's tool list: the granted MCP tools, and the built-in tools whose
//! handler joins them (`browser`). The harness offers it only while some
//! are held back (too many to send up front); the list of servers and
//! built-ins it reaches is bound per session.
//!
//! Its handler (when the session can run it, how a call is approved, run
//! and counted as evidence) is `evoflux-harness/src/tools/connection_search.rs`,
//! of the same name.

use serde_json::json;

use super::{Framework, Spec, object, string};
use crate::tool::{ActionClass, BuiltinExecutor};

/// The granted MCP tools (with the built-in tools that join them) are
/// held back from the model's tool list when there are more than this
/// many of them…
pub const DEFER_OVER_TOOLS: usize = 40;
/// …or their definitions (names, descriptions, schemas as JSON) take
/// more than this many bytes: about 8k tokens of every request.
pub const DEFER_OVER_BYTES: usize = 32 * 1024;
/// Results of one search when the call gives no `limit`.
pub const DEFAULT_RESULTS: u64 = 10;
pub const MAX_RESULTS: u64 = 25;
/// Tools one call may activate.
pub const MAX_ACTIVATE: u64 = 20;
/// A result's description is cut to this many characters; the full
/// one arrives with the tool's definition once activated.
pub const DESCRIPTION_CHARS: usize = 200;

pub(super) const TOOL: Framework = Framework {
    name: "connection_search",
    spec,
};

fn spec() -> Spec {
    Spec::ordinary(
        BuiltinExecutor::ConnectionSearch,
        ActionClass::Read,
        "Find tools of the connected MCP servers that are not in your tool list yet, by keywords (`query`), then turn on the exact ones you need (`activate`, their names); activated tools are callable from your next step.",
        object(
            json!({
                "query": {"type": "string", "minLength": 1, "maxLength": 500, "description": "Keywords matched against tool names and descriptions."},
                "server": string("Search only this server's tools."),
                "activate": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": MAX_ACTIVATE, "description": "Names of tools from search results to turn on."},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_RESULTS, "description": format!("Most results to return (default {}).", DEFAULT_RESULTS)}
            }),
            &[],
        ),
    )
}
