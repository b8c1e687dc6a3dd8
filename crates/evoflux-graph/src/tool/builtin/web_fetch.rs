//! `web_fetch`: fetches a URL as markdown, text or html.
//!
//! Its handler (when the session can run it, how a call is approved, run
//! and counted as evidence) is `evoflux-harness/src/tools/web_fetch.rs`,
//! of the same name.

use serde_json::json;

use super::{Framework, Spec, object};
use crate::tool::{ActionClass, BuiltinExecutor};

/// `timeout` (seconds) when the call gives none.
pub const DEFAULT_TIMEOUT_SECONDS: u64 = 30;
pub const MIN_TIMEOUT_SECONDS: u64 = 1;
pub const MAX_TIMEOUT_SECONDS: u64 = 120;
/// The output formats, in the order the schema lists them.
pub const FORMATS: &[&str] = &["markdown", "text", "html"];

pub(super) const TOOL: Framework = Framework {
    name: "web_fetch",
    spec,
};

fn spec() -> Spec {
    Spec::ordinary(
        BuiltinExecutor::WebFetch,
        ActionClass::Network,
        "Fetch a URL and return its content as markdown, text or html.",
        object(
            json!({
                "url": {"type": "string", "format": "uri"},
                "format": {"type": "string", "enum": FORMATS},
                "timeout": {
                    "type": "integer",
                    "minimum": MIN_TIMEOUT_SECONDS,
                    "maximum": MAX_TIMEOUT_SECONDS,
                }
            }),
            &["url"],
        ),
    )
}
