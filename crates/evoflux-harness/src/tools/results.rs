//! Not a tool: an executor's output as the call's result, shared by the
//! handlers and the session's commands.

use evoflux_tools::ToolOutput;

use crate::events::ToolResult;
use crate::metadata::ResultMetadata;

/// A file tool's output as a tool result: the only metadata a file tool
/// carries is what `write` or `edit` changed, for front ends to show.
pub(crate) fn file_result(o: ToolOutput) -> ToolResult {
    ToolResult {
        content: o.text,
        is_error: o.is_error,
        metadata: o.change.map(|c| ResultMetadata {
            change: Some(c),
            ..ResultMetadata::default()
        }),
        media: Vec::new(),
    }
}

/// An executor's output as a tool result, a command's metadata serialized
/// once so the event and the transcript carry the same value.
pub(crate) fn command_result(out: ToolOutput) -> ToolResult {
    ToolResult {
        metadata: out.meta.map(|m| ResultMetadata {
            command: Some(Box::new(m)),
            ..ResultMetadata::default()
        }),
        content: out.text,
        is_error: out.is_error,
        media: Vec::new(),
    }
}
