//! `write` and `edit`: the two tools that change file contents. Both
//! replace the file atomically so a crash never leaves half a file, and
//! both return what they changed as a diff ([`crate::change`]).

use std::ffi::OsStr;
use std::io::Read as _;

use serde_json::Value;

use crate::args::Args;
use crate::beneath::{Entry, Folder};
use crate::change::{DIFF_MAX_INPUT_BYTES, file_change};
use crate::error::ToolError;
use crate::output::ToolOutput;
use crate::workspace::Workspace;

/// Parameters of `write`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteInput {
    pub path: String,
    pub content: String,
    /// Replace an existing file (default true).
    pub overwrite: bool,
}

impl WriteInput {
    /// The accepted JSON fields, matching the framework tool's schema.
    pub const FIELDS: &'static [&'static str] = &["path", "content", "overwrite"];

    pub fn parse(input: &Value) -> Result<WriteInput, ToolError> {
        let args = Args::new(input, Self::FIELDS)?;
        Ok(WriteInput {
            path: args.string("path")?,
            content: args.string("content")?,
            overwrite: args.opt_bool("overwrite")?.unwrap_or(true),
        })
    }
}

/// Parameters of `edit`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EditInput {
    pub path: String,
    pub old_string: String,
    pub new_string: String,
    /// Replace every match instead of requiring exactly one.
    pub replace_all: bool,
}

impl EditInput {
    /// The accepted JSON fields, matching the framework tool's schema.
    pub const FIELDS: &'static [&'static str] =
        &["path", "old_string", "new_string", "replace_all"];

    pub fn parse(input: &Value) -> Result<EditInput, ToolError> {
        let args = Args::new(input, Self::FIELDS)?;
        let parsed = EditInput {
            path: args.string("path")?,
            old_string: args.string("old_string")?,
            new_string: args.string("new_string")?,
            replace_all: args.opt_bool("replace_all")?.unwrap_or(false),
        };
        if parsed.old_string.is_empty() {
            return Err(ToolError::input("old_string", "must not be empty"));
        }
        if parsed.old_string == parsed.new_string {
            return Err(ToolError::input(
                "new_string",
                "is identical to old_string; nothing would change",
            ));
        }
        Ok(parsed)
    }
}

pub(crate) fn write(ws: &Workspace, input: &WriteInput) -> Result<ToolOutput, ToolError> {
    let target = ws.resolve_for_change(&input.path)?;
    let shown = target.display.as_str();
    // Held open from here on: the file lands in this folder or nowhere.
    let (folder, name) = ws.folder_of(&target, true)?;
    let entry = folder.entry(&name).map_err(ToolError::io("write", shown))?;
    match entry {
        Entry::Dir => {
            return Err(ToolError::WrongKind {
                path: shown.to_owned(),
                expected: "a file",
                actual: "a directory",
            });
        }
        Entry::File { .. } | Entry::Other if !input.overwrite => {
            return Err(ToolError::AlreadyExists {
                path: shown.to_owned(),
            });
        }
        Entry::File { .. } | Entry::Other | Entry::Missing => {}
    }
    let existed = entry != Entry::Missing;
    // The text replaced, for the change's diff: only a regular file's
    // (never a FIFO's or a device's), and none when it cannot be read.
    let before = match entry {
        Entry::File { .. } => text_of(&folder, &name),
        Entry::Missing | Entry::Dir | Entry::Other => None,
    };
    folder
        .replace(&name, input.content.as_bytes())
        .map_err(ToolError::io("write", shown))?;
    let change = match (existed, before) {
        (false, _) => file_change(shown, None, &input.content),
        (true, Some(before)) => file_change(shown, Some(&before), &input.content),
        (true, None) => None,
    };
    let verb = if existed { "Overwrote" } else { "Created" };
    Ok(
        ToolOutput::ok(format!("{verb} {shown} ({} bytes)", input.content.len()))
            .with_change(change),
    )
}

/// The UTF-8 text of the regular file `name`, when it is small enough to
/// diff ([`DIFF_MAX_INPUT_BYTES`]).
fn text_of(folder: &Folder, name: &OsStr) -> Option<String> {
    let file = folder.open_file(name).ok()?;
    let mut bytes = Vec::new();
    file.take(DIFF_MAX_INPUT_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .ok()?;
    if bytes.len() > DIFF_MAX_INPUT_BYTES {
        return None;
    }
    String::from_utf8(bytes).ok()
}

pub(crate) fn edit(ws: &Workspace, input: &EditInput) -> Result<ToolOutput, ToolError> {
    let target = ws.resolve_for_change(&input.path)?;
    let shown = target.display.as_str();
    let (folder, name) = ws.folder_of(&target, false)?;
    let mut bytes = Vec::new();
    folder
        .open_file(&name)
        .and_then(|mut f| std::io::Read::read_to_end(&mut f, &mut bytes))
        .map_err(ToolError::io("read", shown))?;
    if bytes.contains(&0) {
        return Err(ToolError::Binary {
            path: shown.to_owned(),
        });
    }
    let text = String::from_utf8(bytes).map_err(|_| ToolError::Binary {
        path: shown.to_owned(),
    })?;
    let (updated, answer) = apply_edit(shown, &text, input)?;
    folder
        .replace(&name, updated.as_bytes())
        .map_err(ToolError::io("write", shown))?;
    Ok(answer.with_change(file_change(shown, Some(&text), &updated)))
}

/// `edit` applied to `text`, the file `shown`: the new text and the
/// tool's answer, or why the edit does not apply. One rule for the disk
/// and for a file an editor holds.
pub fn apply_edit(
    shown: &str,
    text: &str,
    input: &EditInput,
) -> Result<(String, ToolOutput), ToolError> {
    let count = text.matches(input.old_string.as_str()).count();
    let hint = match (count, input.replace_all) {
        (0, _) => Some(
            "old_string must match the file exactly, including whitespace; do not copy the `NNNNN| ` prefixes of `read`",
        ),
        (1, _) | (_, true) => None,
        (_, false) => Some(
            "add surrounding lines to make it unique, or set replace_all to change every match",
        ),
    };
    if let Some(hint) = hint {
        return Err(ToolError::EditMatch {
            path: shown.to_owned(),
            count,
            hint,
        });
    }
    let updated = text.replace(input.old_string.as_str(), &input.new_string);
    let plural = if count == 1 { "" } else { "s" };
    Ok((
        updated,
        ToolOutput::ok(format!("Replaced {count} occurrence{plural} in {shown}")),
    ))
}
