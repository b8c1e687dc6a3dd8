//! `write`'s handler: through the editor where the front end's client
//! writes files ([`crate::client_files`]), else to the disk; a refused
//! change to one of the agent's controls is put to the user. The file it
//! wrote (or was refused) is a run effect. Its definition is
//! [`evoflux_graph::tool::builtin::write`].

use std::path::Path;

use evoflux_model::ToolCall;
use evoflux_tools::{ToolError, Workspace, WriteInput};
use serde_json::Value;

use super::{BuiltinTool, Effect, Handled, files};
use crate::client_files::{ClientFiles, changed, failed};
use crate::events::ToolResult;
use crate::session::Harness;

#[derive(Debug)]
pub(super) struct Write;

impl BuiltinTool for Write {
    fn execute<'a>(
        &'a self,
        session: &'a mut Harness,
        call: &'a ToolCall,
    ) -> Handled<'a, ToolResult> {
        Box::pin(async move {
            if let Some(client) = session.client_files().filter(|c| c.writes())
                && let Some(result) =
                    through_client(client.as_ref(), session.workspace(), call).await
            {
                return Ok(result);
            }
            files::on_disk(session, call, evoflux_tools::files::write).await
        })
    }

    fn effect(&self, call: &ToolCall, _is_error: bool, root: &Path) -> Option<Effect> {
        let path = call.arguments.get("path").and_then(Value::as_str)?;
        Some(Effect::File(root.join(path)))
    }
}

/// Writes through the client; `None` when the disk path runs it (see
/// [`changed`]).
async fn through_client(
    client: &dyn ClientFiles,
    workspace: &Workspace,
    call: &ToolCall,
) -> Option<ToolResult> {
    let input = match WriteInput::parse(&call.arguments) {
        Ok(i) => i,
        Err(e) => return Some(failed(&e)),
    };
    let target = match changed(workspace, &input.path)? {
        Ok(t) => t,
        Err(refused) => return Some(refused),
    };
    let existed = target.path.exists();
    if existed && !input.overwrite {
        return Some(failed(&ToolError::AlreadyExists {
            path: target.display,
        }));
    }
    Some(
        match client.write_text(&target.path, &input.content).await {
            Ok(()) => ToolResult::ok(format!(
                "{} {} ({} bytes) in the editor",
                if existed { "Overwrote" } else { "Created" },
                target.display,
                input.content.len()
            )),
            Err(e) => ToolResult::error(format!(
                "the editor could not write {}: {e}",
                target.display
            )),
        },
    )
}
