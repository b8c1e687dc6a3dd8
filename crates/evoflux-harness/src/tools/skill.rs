//! `skill`'s handler: lists, loads or reads skills through the session's
//! skill runtime, one load per skill in a batch of calls; the tools a
//! loaded skill's contract turns on join the session after the call. Its
//! definition is [`evoflux_graph::tool::builtin::skill`].

use evoflux_graph::tool::BuiltinExecutor;
use evoflux_model::{Message, ToolCall};

use super::{BuiltinTool, Handled};
use crate::events::ToolResult;
use crate::prepared::{Executor, PreparedKind, SessionCapabilities};
use crate::session::Harness;

#[derive(Debug)]
pub(super) struct Skill;

impl BuiltinTool for Skill {
    fn gap(&self, caps: &SessionCapabilities) -> Option<&'static str> {
        (!caps.skills).then_some("no skill runtime is attached to this session")
    }

    fn execute<'a>(
        &'a self,
        session: &'a mut Harness,
        call: &'a ToolCall,
    ) -> Handled<'a, ToolResult> {
        Box::pin(async move {
            let Some(rt) = session.skill_runtime() else {
                return Ok(ToolResult::error(format!(
                    "`{}` is not available in this session.",
                    call.name
                )));
            };
            // The batch is the assistant message whose calls run now.
            let batch: &[ToolCall] = session
                .messages()
                .iter()
                .rev()
                .find_map(|m| match m {
                    Message::Assistant { tool_calls, .. } => Some(tool_calls.as_slice()),
                    Message::System { .. } | Message::User { .. } | Message::Tool { .. } => None,
                })
                .unwrap_or(&[]);
            let tools = session.tools();
            let is_skill_call = |c: &ToolCall| {
                tools.get(&c.name).is_some_and(|t| {
                    t.kind == PreparedKind::Ordinary(Executor::Builtin(BuiltinExecutor::Skill))
                })
            };
            let result = rt.execute_tool(
                call,
                crate::skills::tool::Batch {
                    calls: batch,
                    is_skill_call: &is_skill_call,
                },
            );
            session.sync_skill_tools();
            Ok(result)
        })
    }
}
