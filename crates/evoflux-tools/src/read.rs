//! `read`: a file's lines with `NNNNN| ` prefixes, windowed by
//! offset/limit and capped so one call cannot flood the context.

use std::fs::File;
use std::io::Read as _;

use serde_json::Value;

use evoflux_graph::tool::limits::read as limits;

use crate::args::Args;
use crate::clip::clip_line;
use crate::error::ToolError;
use crate::output::ToolOutput;
use crate::workspace::Workspace;

/// Bytes read from disk at most; the rest of a larger file is reported
/// as not shown.
pub const READ_MAX_BYTES: u64 = 5 * 1024 * 1024;
/// Bytes of numbered text returned at most (about 20,000 characters of
/// ASCII), so one call cannot flood the model's context.
pub const READ_MAX_OUTPUT_BYTES: usize = 20_000;

/// Parameters of `read`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadInput {
    pub path: String,
    /// First line to show, 1-based.
    pub offset: usize,
    /// Lines to show at most; `None` for up to the character cap.
    pub limit: Option<usize>,
}

impl ReadInput {
    /// The accepted JSON fields, matching the framework tool's schema.
    pub const FIELDS: &'static [&'static str] = &["path", "offset", "limit"];

    pub fn parse(input: &Value) -> Result<ReadInput, ToolError> {
        let args = Args::new(input, Self::FIELDS)?;
        Ok(ReadInput {
            path: args.string("path")?,
            offset: args
                .opt_uint("offset", limits::MIN_OFFSET, u64::MAX)?
                .unwrap_or(1),
            limit: args.opt_uint("limit", limits::MIN_LIMIT, u64::MAX)?,
        })
    }
}

pub(crate) fn run(ws: &Workspace, input: &ReadInput) -> Result<ToolOutput, ToolError> {
    let target = ws.resolve(&input.path)?;
    let shown = target.display.as_str();
    let meta = std::fs::metadata(&target.path).map_err(ToolError::io("read", shown))?;
    if !meta.is_file() {
        return Err(ToolError::WrongKind {
            path: shown.to_owned(),
            expected: "a file",
            actual: if meta.is_dir() {
                "a directory"
            } else {
                "not a regular file"
            },
        });
    }
    let mut bytes = Vec::new();
    File::open(&target.path)
        .and_then(|f| f.take(READ_MAX_BYTES).read_to_end(&mut bytes))
        .map_err(ToolError::io("read", shown))?;
    if bytes.iter().take(8192).any(|b| *b == 0) {
        return Err(ToolError::Binary {
            path: shown.to_owned(),
        });
    }
    let byte_capped = meta.len() > READ_MAX_BYTES;
    let text = String::from_utf8_lossy(&bytes);
    if text.is_empty() {
        return Ok(ToolOutput::ok(format!("({shown} is empty)")));
    }
    let lines: Vec<&str> = text.lines().collect();
    if input.offset > lines.len() {
        return Err(ToolError::OffsetPastEnd {
            path: shown.to_owned(),
            offset: input.offset,
            lines: lines.len(),
        });
    }
    let start = input.offset - 1;
    let end = input.limit.map_or(lines.len(), |limit| {
        start.saturating_add(limit).min(lines.len())
    });
    let mut out = String::new();
    let mut last = start;
    let mut char_capped = false;
    for (index, line) in lines[start..end].iter().enumerate() {
        let numbered = format!("{:>5}| {}\n", start + index + 1, clip_line(line));
        if out.len() + numbered.len() > READ_MAX_OUTPUT_BYTES && index > 0 {
            char_capped = true;
            break;
        }
        out.push_str(&numbered);
        last = start + index + 1;
    }
    if char_capped || byte_capped || end < lines.len() {
        let total = if byte_capped {
            format!(
                "more than {} lines (file larger than {READ_MAX_BYTES} bytes)",
                lines.len()
            )
        } else {
            format!("{} lines", lines.len())
        };
        out.push_str(&format!(
            "[Truncated: showed lines {}-{last} of {total}; continue with offset={}]\n",
            input.offset,
            last + 1
        ));
    }
    Ok(ToolOutput::ok(out))
}
