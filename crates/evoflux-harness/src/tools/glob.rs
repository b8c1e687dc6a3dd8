//! `glob`'s handler: finds files by pattern on the disk of the session's workspace.
//! Its definition is [`evoflux_graph::tool::builtin::glob`].

use evoflux_model::ToolCall;

use super::{BuiltinTool, Handled, files};
use crate::events::ToolResult;
use crate::session::Harness;

#[derive(Debug)]
pub(super) struct Glob;

impl BuiltinTool for Glob {
    fn execute<'a>(
        &'a self,
        session: &'a mut Harness,
        call: &'a ToolCall,
    ) -> Handled<'a, ToolResult> {
        Box::pin(files::on_disk(session, call, evoflux_tools::files::glob))
    }
}
