//! `read`'s handler: through the editor's buffers where the front end's
//! client reads files ([`crate::client_files`]), else from the disk; the
//! lines a read showed ground a worker's result. Its definition is
//! [`evoflux_graph::tool::builtin::read`].

use std::path::{Path, PathBuf};

use evoflux_model::ToolCall;
use evoflux_tools::{ReadInput, Workspace};
use serde_json::Value;

use super::{BuiltinTool, Handled, file_result, files};
use crate::client_files::{ClientFiles, failed};
use crate::events::ToolResult;
use crate::session::Harness;

#[derive(Debug)]
pub(super) struct Read;

impl BuiltinTool for Read {
    fn execute<'a>(
        &'a self,
        session: &'a mut Harness,
        call: &'a ToolCall,
    ) -> Handled<'a, ToolResult> {
        Box::pin(async move {
            if let Some(client) = session.client_files().filter(|c| c.reads())
                && let Some(result) =
                    through_client(client.as_ref(), session.workspace(), call).await
            {
                return Ok(result);
            }
            files::on_disk(session, call, evoflux_tools::files::read).await
        })
    }

    fn shown_lines(&self, call: &ToolCall, content: &str, root: &Path) -> Vec<(PathBuf, u32)> {
        let Some(path) = call.arguments.get("path").and_then(Value::as_str) else {
            return Vec::new();
        };
        content
            .lines()
            .filter_map(read_line_number)
            .map(|n| (root.join(path), n))
            .collect()
    }
}

/// Reads through the client; `None` when the disk answers (an artifact,
/// or what is not a file: missing, a directory).
async fn through_client(
    client: &dyn ClientFiles,
    workspace: &Workspace,
    call: &ToolCall,
) -> Option<ToolResult> {
    let input = match ReadInput::parse(&call.arguments) {
        Ok(i) => i,
        Err(e) => return Some(failed(&e)),
    };
    if workspace.names_artifact(&input.path) {
        return None;
    }
    let target = match workspace.resolve(&input.path) {
        Ok(t) => t,
        Err(e) => return Some(failed(&e)),
    };
    // What is not a file (missing, a directory) the disk says.
    if !target.path.is_file() {
        return None;
    }
    Some(match client.read_text(&target.path).await {
        Ok(text) => match evoflux_tools::read_text(&target.display, &text, &input) {
            Ok(o) => file_result(o),
            Err(e) => failed(&e),
        },
        Err(e) => ToolResult::error(format!("the editor could not read {}: {e}", target.display)),
    })
}

/// `   12| text` → 12.
fn read_line_number(line: &str) -> Option<u32> {
    let (number, _) = line.split_once("| ")?;
    number.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_outputs_become_line_numbers() {
        assert_eq!(read_line_number("    6| let x = 1;"), Some(6));
        assert_eq!(read_line_number("[Truncated: showed lines 1-5]"), None);
    }
}
