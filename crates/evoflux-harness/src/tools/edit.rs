//! `edit`'s handler: through the editor where the front end's client both
//! reads and writes files ([`crate::client_files`]), else on the disk; a
//! refused change to one of the agent's controls is put to the user. The
//! file it changed (or was refused) is a run effect; the diff is the
//! result's `change` metadata, for front ends. Its definition is
//! [`evoflux_graph::tool::builtin::edit`].

use std::path::Path;

use evoflux_model::ToolCall;
use evoflux_tools::{EditInput, Workspace};
use serde_json::Value;

use super::{BuiltinTool, Effect, Handled, file_result, files};
use crate::client_files::{ClientFiles, changed, failed};
use crate::events::ToolResult;
use crate::session::Harness;

#[derive(Debug)]
pub(super) struct Edit;

impl BuiltinTool for Edit {
    fn execute<'a>(
        &'a self,
        session: &'a mut Harness,
        call: &'a ToolCall,
    ) -> Handled<'a, ToolResult> {
        Box::pin(async move {
            if let Some(client) = session.client_files().filter(|c| c.reads() && c.writes())
                && let Some(result) =
                    through_client(client.as_ref(), session.workspace(), call).await
            {
                return Ok(result);
            }
            files::on_disk(session, call, evoflux_tools::files::edit).await
        })
    }

    fn effect(&self, call: &ToolCall, _is_error: bool, root: &Path) -> Option<Effect> {
        let path = call.arguments.get("path").and_then(Value::as_str)?;
        Some(Effect::File(root.join(path)))
    }
}

/// Edits the client's text of the file; `None` when the disk path runs it
/// (see [`changed`]; also what is not a file).
async fn through_client(
    client: &dyn ClientFiles,
    workspace: &Workspace,
    call: &ToolCall,
) -> Option<ToolResult> {
    let input = match EditInput::parse(&call.arguments) {
        Ok(i) => i,
        Err(e) => return Some(failed(&e)),
    };
    let target = match changed(workspace, &input.path)? {
        Ok(t) if t.path.is_file() => t,
        Ok(_) => return None,
        Err(refused) => return Some(refused),
    };
    let text = match client.read_text(&target.path).await {
        Ok(t) => t,
        Err(e) => {
            return Some(ToolResult::error(format!(
                "the editor could not read {}: {e}",
                target.display
            )));
        }
    };
    let (updated, answer) = match evoflux_tools::apply_edit(&target.display, &text, &input) {
        Ok(done) => done,
        Err(e) => return Some(failed(&e)),
    };
    let change = evoflux_tools::file_change(&target.display, Some(&text), &updated);
    Some(match client.write_text(&target.path, &updated).await {
        Ok(()) => file_result(answer.with_change(change)),
        Err(e) => ToolResult::error(format!(
            "the editor could not write {}: {e}",
            target.display
        )),
    })
}
