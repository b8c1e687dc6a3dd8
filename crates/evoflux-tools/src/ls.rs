//! `ls`: the entries of one directory, sorted, directories marked with `/`.

use serde_json::Value;

use crate::args::Args;
use crate::error::ToolError;
use crate::output::ToolOutput;
use crate::workspace::Workspace;

/// Entries listed at most, so a huge directory cannot flood the context.
pub const LS_MAX_ENTRIES: usize = 1000;

/// Parameters of `ls`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LsInput {
    /// Directory; `.` (the primary root) by default.
    pub path: String,
}

impl LsInput {
    /// The accepted JSON fields, matching the framework tool's schema.
    pub const FIELDS: &'static [&'static str] = &["path"];

    pub fn parse(input: &Value) -> Result<LsInput, ToolError> {
        let args = Args::new(input, Self::FIELDS)?;
        Ok(LsInput {
            path: args.opt_string("path")?.unwrap_or_else(|| ".".to_owned()),
        })
    }
}

pub(crate) fn run(ws: &Workspace, input: &LsInput) -> Result<ToolOutput, ToolError> {
    let target = ws.resolve(&input.path)?;
    let shown = target.display.as_str();
    let meta = std::fs::metadata(&target.path).map_err(ToolError::io("list", shown))?;
    if !meta.is_dir() {
        return Err(ToolError::WrongKind {
            path: shown.to_owned(),
            expected: "a directory",
            actual: "a file",
        });
    }
    let mut names = Vec::new();
    for entry in std::fs::read_dir(&target.path).map_err(ToolError::io("list", shown))? {
        let entry = entry.map_err(ToolError::io("list", shown))?;
        let mut name = entry.file_name().to_string_lossy().into_owned();
        // `metadata` follows symlinks, so a link to a directory reads as one.
        if entry.path().is_dir() {
            name.push('/');
        }
        names.push(name);
    }
    names.sort();
    let total = names.len();
    if total == 0 {
        return Ok(ToolOutput::ok(format!("({shown} is empty)")));
    }
    let mut out = names
        .into_iter()
        .take(LS_MAX_ENTRIES)
        .collect::<Vec<_>>()
        .join("\n");
    out.push('\n');
    if total > LS_MAX_ENTRIES {
        out.push_str(&format!(
            "[Truncated: showed {LS_MAX_ENTRIES} of {total} entries]\n"
        ));
    }
    Ok(ToolOutput::ok(out))
}
