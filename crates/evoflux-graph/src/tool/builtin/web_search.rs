//! `web_search`: searches the web, run by the model provider.
//!
//! The provider runs it ([`Handling::ProviderTool`](crate::tool::Handling)):
//! it has no executor and no handler module.

use serde_json::json;

use super::{Framework, Spec, object};
use crate::tool::{ActionClass, Handling, ProviderTool};

pub(super) const TOOL: Framework = Framework {
    name: "web_search",
    spec,
};

fn spec() -> Spec {
    Spec::native(
        Handling::ProviderTool {
            provider: ProviderTool::WebSearch,
        },
        ActionClass::Network,
        &[],
        "Search the web (run by the model provider).",
        object(json!({"query": {"type": "string"}}), &["query"]),
    )
}
