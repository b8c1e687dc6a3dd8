//! `artifact`'s handler: writes a terminal artifact under the workspace's
//! `.evoflux/artifacts/` on the disk; the file it wrote (or was refused) is
//! a run effect. Its definition is
//! [`evoflux_graph::tool::builtin::artifact`].

use std::path::Path;

use evoflux_model::ToolCall;
use serde_json::Value;

use super::{BuiltinTool, Effect, Handled, files};
use crate::events::ToolResult;
use crate::session::Harness;

#[derive(Debug)]
pub(super) struct Artifact;

impl BuiltinTool for Artifact {
    fn execute<'a>(
        &'a self,
        session: &'a mut Harness,
        call: &'a ToolCall,
    ) -> Handled<'a, ToolResult> {
        Box::pin(files::on_disk(
            session,
            call,
            evoflux_tools::files::artifact,
        ))
    }

    fn effect(&self, call: &ToolCall, _is_error: bool, root: &Path) -> Option<Effect> {
        let path = call.arguments.get("path").and_then(Value::as_str)?;
        evoflux_tools::artifact_path(root, path).map(Effect::File)
    }
}
