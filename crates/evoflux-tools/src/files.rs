//! The file tools on the model's JSON input: `read`, `write`, `edit`,
//! `ls`, `glob`, `grep` and `artifact`, each a synchronous function over
//! the session's [`Workspace`] that the harness's handler of the tool of
//! the same name calls (on a blocking thread). Every path stays inside the
//! workspace's roots.
//!
//! Errors the model caused (bad input, a path outside the workspace, an
//! ambiguous edit) come back as `Err` like every other failure; turn them
//! into a model-visible result with [`ToolError::into_output`].

use serde_json::Value;

use crate::error::ToolError;
use crate::output::ToolOutput;
use crate::workspace::Workspace;
use crate::{ArtifactInput, EditInput, GlobInput, GrepInput, LsInput, ReadInput, WriteInput};

/// One file tool on the model's JSON input.
pub type FileTool = fn(&Workspace, &Value) -> Result<ToolOutput, ToolError>;

/// `read`: a file's lines, numbered and windowed.
pub fn read(ws: &Workspace, input: &Value) -> Result<ToolOutput, ToolError> {
    crate::read::run(ws, &ReadInput::parse(input)?)
}

/// `write`: a whole file.
pub fn write(ws: &Workspace, input: &Value) -> Result<ToolOutput, ToolError> {
    crate::write::write(ws, &WriteInput::parse(input)?)
}

/// `edit`: exact text replaced in a file.
pub fn edit(ws: &Workspace, input: &Value) -> Result<ToolOutput, ToolError> {
    crate::write::edit(ws, &EditInput::parse(input)?)
}

/// `ls`: a directory's entries.
pub fn ls(ws: &Workspace, input: &Value) -> Result<ToolOutput, ToolError> {
    crate::ls::run(ws, &LsInput::parse(input)?)
}

/// `glob`: files by pattern.
pub fn glob(ws: &Workspace, input: &Value) -> Result<ToolOutput, ToolError> {
    crate::glob::run(ws, &GlobInput::parse(input)?)
}

/// `grep`: lines matching a regular expression.
pub fn grep(ws: &Workspace, input: &Value) -> Result<ToolOutput, ToolError> {
    crate::grep::run(ws, &GrepInput::parse(input)?)
}

/// `artifact`: a whole file under the workspace's artifacts folder.
pub fn artifact(ws: &Workspace, input: &Value) -> Result<ToolOutput, ToolError> {
    crate::artifact::run(ws, &ArtifactInput::parse(input)?)
}
