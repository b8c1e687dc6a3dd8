//! `write`'s handler: through the editor where the front end's client
//! writes files ([`crate::client_files`]), else to the disk; a refused
//! change to one of the agent's controls is put to the user. The file it
//! wrote (or was refused) is a run effect; what it changed (a diff against
//! the replaced text, the editor's when it reads files) is the result's
//! `change` metadata, for front ends. Its definition is
//! [`evoflux_graph::tool::builtin::write`].

use std::path::Path;

use evoflux_model::ToolCall;
use evoflux_tools::{ToolError, ToolOutput, Workspace, WriteInput};
use serde_json::Value;

use super::{BuiltinTool, Effect, Handled, file_result, files};
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
    // The text replaced, as the editor has it when it reads files (unsaved
    // changes included), else as the disk has it; none when unreadable.
    let before = match existed {
        false => None,
        true if client.reads() => client.read_text(&target.path).await.ok(),
        true => on_disk_text(&target.path).await,
    };
    let change = match (existed, before) {
        (false, _) => evoflux_tools::file_change(&target.display, None, &input.content),
        (true, Some(before)) => {
            evoflux_tools::file_change(&target.display, Some(&before), &input.content)
        }
        (true, None) => None,
    };
    Some(
        match client.write_text(&target.path, &input.content).await {
            Ok(()) => file_result(
                ToolOutput::ok(format!(
                    "{} {} ({} bytes) in the editor",
                    if existed { "Overwrote" } else { "Created" },
                    target.display,
                    input.content.len()
                ))
                .with_change(change),
            ),
            Err(e) => ToolResult::error(format!(
                "the editor could not write {}: {e}",
                target.display
            )),
        },
    )
}

/// The UTF-8 text of the regular file at `path`, when it is small enough
/// to diff.
async fn on_disk_text(path: &Path) -> Option<String> {
    let meta = tokio::fs::metadata(path).await.ok()?;
    if !meta.is_file() || meta.len() > evoflux_tools::DIFF_MAX_INPUT_BYTES as u64 {
        return None;
    }
    tokio::fs::read_to_string(path).await.ok()
}
