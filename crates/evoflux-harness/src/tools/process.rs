//! `process`'s handler: lists, polls, waits for or terminates the
//! session's commands on its process runtime. Deferred: the model sees it
//! only once a command of the session runs. Its definition is
//! [`evoflux_graph::tool::builtin::process`].

use evoflux_model::ToolCall;

use super::{BuiltinTool, Handled, Offering};
use crate::events::ToolResult;
use crate::prepared::SessionCapabilities;
use crate::session::Harness;

#[derive(Debug)]
pub(super) struct Process;

impl BuiltinTool for Process {
    fn gap(&self, caps: &SessionCapabilities) -> Option<&'static str> {
        caps.process_gap()
    }

    fn offering(&self) -> Offering {
        Offering::Deferred
    }

    fn execute<'a>(
        &'a self,
        session: &'a mut Harness,
        call: &'a ToolCall,
    ) -> Handled<'a, ToolResult> {
        Box::pin(async move {
            let rt = match session.processes_for(call) {
                Ok(rt) => rt,
                Err(refused) => return Ok(refused),
            };
            let out = rt.process(session.session().id, &call.arguments).await;
            Ok(session.command_finished(out, false))
        })
    }
}
