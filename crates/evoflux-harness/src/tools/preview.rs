//! `preview`'s handler: starts, follows and stops the session's dev-server
//! previews on its process runtime, and tells the front ends when one
//! serves (`preview_started`, with its URL) or stops (`preview_stopped`).
//! `snapshot` takes its screenshot with the session's browser and returns
//! it as the call's image, exactly as `browser`'s screenshot does (see
//! [`evoflux_tools::PreviewBrowser`] for what the browser may then reach).
//! Offered where commands run and the sandbox shares the host's network,
//! since a server in a network namespace of its own cannot be reached. Its
//! definition is [`evoflux_graph::tool::builtin::preview`].

use std::path::PathBuf;

use evoflux_model::ToolCall;
use evoflux_tools::{PreviewBrowser, PreviewChange, PreviewRequest, Workspace};
use serde_json::Value;

use super::{BuiltinTool, GatedCommand, Handled, command_result};
use crate::events::{Event, ToolResult};
use crate::prepared::SessionCapabilities;
use crate::session::Harness;

#[derive(Debug)]
pub(super) struct Preview;

impl BuiltinTool for Preview {
    fn gap(&self, caps: &SessionCapabilities) -> Option<&'static str> {
        caps.process_gap().or_else(|| caps.preview_gap())
    }

    /// `start` runs a command, which the approval gate judges like any
    /// (`status`, `logs` and `stop` run none).
    fn gated_command<'a>(&self, arguments: &'a Value) -> Option<GatedCommand<'a>> {
        let starts = arguments.get("action").and_then(Value::as_str) == Some("start");
        starts.then(|| GatedCommand {
            command: arguments
                .get("command")
                .and_then(Value::as_str)
                .unwrap_or_default(),
            outside_sandbox: false,
        })
    }

    fn workdir(&self, arguments: &Value, workspace: &Workspace) -> Option<PathBuf> {
        PreviewRequest::parse(arguments)
            .ok()?
            .working_folder(workspace)
            .ok()
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
            let browser = match session.browser() {
                Some(b) => PreviewBrowser::Session(b),
                None => PreviewBrowser::Unavailable(NO_BROWSER),
            };
            let outcome = match rt
                .preview_in(
                    session.session().id,
                    session.workspace(),
                    &call.arguments,
                    browser,
                )
                .await
            {
                Ok(outcome) => outcome,
                Err(e) => return Ok(ToolResult::error(format!("{e} ({})", e.code()))),
            };
            match &outcome.change {
                Some(PreviewChange::Serving(info)) => {
                    if let Some(url) = info.url() {
                        session.emit_event(&Event::PreviewStarted {
                            preview_id: info.preview_id.clone(),
                            command: info.command.clone(),
                            url,
                            startup_ms: info.startup_ms,
                        });
                    }
                }
                Some(PreviewChange::Stopped(info)) => {
                    session.emit_event(&Event::PreviewStopped {
                        preview_id: info.preview_id.clone(),
                    });
                }
                None => {}
            }
            let mut result = command_result(outcome.output);
            if let Some(shot) = outcome.screenshot {
                result.media.push(shot.into_media());
            }
            Ok(result)
        })
    }
}

/// Why `snapshot` cannot run in a session without a browser (the
/// `browser` tool's own gap names which).
const NO_BROWSER: &str = "this session has no browser: Chromium is not installed (install the \
     `chromium` package), or network tools are off for it";
