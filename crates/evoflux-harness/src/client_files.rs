//! Files an editor holds: when a front end's client offers its file
//! system (ACP's `fs/read_text_file` and `fs/write_text_file`), `read`
//! sees the editor's buffers — unsaved changes included — and `write` and
//! `edit` go through the editor, which applies and tracks them.
//!
//! The workspace rules stay the harness's: a path is resolved and checked
//! (roots, denied files, the agent's controls) exactly as for the disk
//! before the client is asked; artifacts, directories and a change to a
//! control (which needs the user's approval first) stay on the disk path.

use std::fmt;
use std::future::Future;
use std::path::Path;
use std::pin::Pin;

use evoflux_graph::tool::BuiltinExecutor;
use evoflux_model::ToolCall;
use evoflux_tools::{EditInput, ReadInput, ToolError, Workspace, WriteInput};

use crate::events::ToolResult;

pub type FilesFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, String>> + Send + 'a>>;

/// A client's file system.
pub trait ClientFiles: Send + Sync + fmt::Debug {
    /// Whether the client reads files for the agent.
    fn reads(&self) -> bool;
    /// Whether the client writes files for the agent.
    fn writes(&self) -> bool;
    /// The text of the file at the absolute `path`, as the client has it.
    fn read_text<'a>(&'a self, path: &'a Path) -> FilesFuture<'a, String>;
    /// Makes the file at the absolute `path` hold `content`.
    fn write_text<'a>(&'a self, path: &'a Path, content: &'a str) -> FilesFuture<'a, ()>;
}

fn failed(e: &ToolError) -> ToolResult {
    ToolResult::error(e.to_string())
}

fn output(o: evoflux_tools::ToolOutput) -> ToolResult {
    ToolResult {
        content: o.text,
        is_error: o.is_error,
        metadata: None,
    }
}

/// Runs `call` of file tool `builtin` through `files`; `None` when it is
/// the disk's to run (see the module documentation).
pub(crate) async fn run(
    files: &dyn ClientFiles,
    workspace: &Workspace,
    builtin: BuiltinExecutor,
    call: &ToolCall,
) -> Option<ToolResult> {
    match builtin {
        BuiltinExecutor::Read if files.reads() => {
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
            Some(match files.read_text(&target.path).await {
                Ok(text) => match evoflux_tools::read_text(&target.display, &text, &input) {
                    Ok(o) => output(o),
                    Err(e) => failed(&e),
                },
                Err(e) => {
                    ToolResult::error(format!("the editor could not read {}: {e}", target.display))
                }
            })
        }
        BuiltinExecutor::Write if files.writes() => {
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
            Some(match files.write_text(&target.path, &input.content).await {
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
            })
        }
        BuiltinExecutor::Edit if files.reads() && files.writes() => {
            let input = match EditInput::parse(&call.arguments) {
                Ok(i) => i,
                Err(e) => return Some(failed(&e)),
            };
            let target = match changed(workspace, &input.path)? {
                Ok(t) if t.path.is_file() => t,
                Ok(_) => return None,
                Err(refused) => return Some(refused),
            };
            let text = match files.read_text(&target.path).await {
                Ok(t) => t,
                Err(e) => {
                    return Some(ToolResult::error(format!(
                        "the editor could not read {}: {e}",
                        target.display
                    )));
                }
            };
            let (updated, answer) = match evoflux_tools::apply_edit(&target.display, &text, &input)
            {
                Ok(done) => done,
                Err(e) => return Some(failed(&e)),
            };
            Some(match files.write_text(&target.path, &updated).await {
                Ok(()) => output(answer),
                Err(e) => ToolResult::error(format!(
                    "the editor could not write {}: {e}",
                    target.display
                )),
            })
        }
        _ => None,
    }
}

/// The file a `write` or `edit` of `path` changes, checked as for the
/// disk; `None` when the disk path must run it (a control, which needs
/// the user's approval first, or a directory, which it reports).
fn changed(
    workspace: &Workspace,
    path: &str,
) -> Option<Result<evoflux_tools::Resolved, ToolResult>> {
    match workspace.resolve_for_change(path) {
        Ok(t) if t.path.is_dir() => None,
        Ok(t) => Some(Ok(t)),
        Err(ToolError::ProtectedControl { .. }) => None,
        Err(e) => Some(Err(failed(&e))),
    }
}
