//! `web_fetch`'s handler: fetches a URL with the session's network policy,
//! when the session allows network tools. Its definition is
//! [`evoflux_graph::tool::builtin::web_fetch`].

use evoflux_model::ToolCall;

use super::{BuiltinTool, Handled, command_result};
use crate::events::ToolResult;
use crate::prepared::SessionCapabilities;
use crate::session::Harness;

#[derive(Debug)]
pub(super) struct WebFetch;

impl BuiltinTool for WebFetch {
    fn gap(&self, caps: &SessionCapabilities) -> Option<&'static str> {
        (!caps.network).then_some("network tools are turned off for this session")
    }

    fn execute<'a>(
        &'a self,
        session: &'a mut Harness,
        call: &'a ToolCall,
    ) -> Handled<'a, ToolResult> {
        Box::pin(async move {
            Ok(match session.web() {
                Some(web) => command_result(web.run(&call.arguments).await),
                None => ToolResult::error("network tools are turned off for this session"),
            })
        })
    }
}
