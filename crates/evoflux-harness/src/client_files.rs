//! Files an editor holds: when a front end's client offers its file
//! system (ACP's `fs/read_text_file` and `fs/write_text_file`), `read`
//! sees the editor's buffers — unsaved changes included — and `write` and
//! `edit` go through the editor, which applies and tracks them.
//!
//! The workspace rules stay the harness's: a path is resolved and checked
//! (roots, denied files, the agent's controls) exactly as for the disk
//! before the client is asked; artifacts, directories and a change to a
//! control (which needs the user's approval first) stay on the disk path.
//!
//! This module is the client's side (the [`ClientFiles`] trait and the
//! checks every change shares); each tool's way through the client is in
//! its handler (`tools/read.rs`, `tools/write.rs`, `tools/edit.rs`).

use std::fmt;
use std::future::Future;
use std::path::Path;
use std::pin::Pin;

use evoflux_tools::{ToolError, Workspace};

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

/// A refusal of the workspace's rules (or of the input) as the call's
/// result.
pub(crate) fn failed(e: &ToolError) -> ToolResult {
    ToolResult::error(e.to_string())
}

/// The file a `write` or `edit` of `path` changes, checked as for the
/// disk; `None` when the disk path must run it (a control, which needs
/// the user's approval first, or a directory, which it reports).
pub(crate) fn changed(
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
