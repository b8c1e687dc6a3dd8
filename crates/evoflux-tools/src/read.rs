//! `read`: a file's lines with `NNNNN| ` prefixes, windowed by
//! offset/limit and capped so one call cannot flood the context.

use std::io::{BufRead, BufReader};

use serde_json::Value;

use evoflux_graph::tool::builtin::read as limits;

use crate::args::Args;
use crate::beneath::Entry;
use crate::clip::clip_line_of;
use crate::error::ToolError;
use crate::output::ToolOutput;
use crate::workspace::Workspace;

/// Bytes read past the shown window to count the file's remaining lines;
/// beyond them the total is reported as "more than".
pub const READ_SCAN_BYTES: u64 = 5 * 1024 * 1024;
/// Bytes of one line kept (its display is clipped further); the rest of a
/// longer line is read past, never held in memory.
const MAX_LINE_BYTES: usize = 64 * 1024;
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
    let (folder, name, shown) = match ws.artifact(&input.path) {
        Some(artifact) => {
            let (folder, name) = artifact?;
            (folder, name, input.path.clone())
        }
        None => {
            let target = ws.resolve(&input.path)?;
            let (folder, name) = ws.folder_of(&target, false)?;
            (folder, name, target.display)
        }
    };
    let shown = shown.as_str();
    let actual = match folder.entry(&name).map_err(ToolError::io("read", shown))? {
        Entry::File { .. } => None,
        Entry::Missing => {
            return Err(ToolError::NotFound {
                path: shown.to_owned(),
            });
        }
        Entry::Dir => Some("a directory"),
        Entry::Other => Some("not a regular file"),
    };
    if let Some(actual) = actual {
        return Err(ToolError::WrongKind {
            path: shown.to_owned(),
            expected: "a file",
            actual,
        });
    }
    let reader = BufReader::new(
        folder
            .open_file(&name)
            .map_err(ToolError::io("read", shown))?,
    );
    render(shown, reader, input)
}

/// `read`'s answer for a file's text that comes from elsewhere than the
/// disk (an editor's buffer, which may hold unsaved changes), shown as
/// `shown`: the same numbered lines, limits and truncation notes.
pub fn read_text(shown: &str, text: &str, input: &ReadInput) -> Result<ToolOutput, ToolError> {
    render(shown, std::io::Cursor::new(text.as_bytes()), input)
}

/// The numbered window of `reader` that `input` asks for.
fn render<R: BufRead>(
    shown: &str,
    mut reader: R,
    input: &ReadInput,
) -> Result<ToolOutput, ToolError> {
    let head = reader.fill_buf().map_err(ToolError::io("read", shown))?;
    if head.iter().take(8192).any(|b| *b == 0) {
        return Err(ToolError::Binary {
            path: shown.to_owned(),
        });
    }
    if head.is_empty() {
        return Ok(ToolOutput::ok(format!("({shown} is empty)")));
    }
    // Stream the file: skip to `offset`, show the window, then count what
    // follows up to a scan budget, so any line of a file of any size can
    // be reached and nothing is held but one line at a time.
    let mut line = Vec::new();
    let mut number = 0usize;
    type Line = Option<(u64, usize)>;
    let next_line = |reader: &mut R, line: &mut Vec<u8>| -> Result<Line, ToolError> {
        line.clear();
        let (n, chars) = read_line_bounded(reader, line).map_err(ToolError::io("read", shown))?;
        Ok((n > 0).then_some((n, chars)))
    };
    while number + 1 < input.offset {
        if next_line(&mut reader, &mut line)?.is_none() {
            return Err(ToolError::OffsetPastEnd {
                path: shown.to_owned(),
                offset: input.offset,
                lines: number,
            });
        }
        number += 1;
    }
    let mut out = String::new();
    let mut last = number;
    let mut capped = false;
    let limit = input.limit.unwrap_or(usize::MAX);
    let mut shown_lines = 0usize;
    while shown_lines < limit {
        let Some((_, chars)) = next_line(&mut reader, &mut line)? else {
            break;
        };
        number += 1;
        let text = String::from_utf8_lossy(trim_eol(&line));
        let numbered = format!("{:>5}| {}\n", number, clip_line_of(&text, chars));
        if out.len() + numbered.len() > READ_MAX_OUTPUT_BYTES && shown_lines > 0 {
            capped = true;
            break;
        }
        out.push_str(&numbered);
        last = number;
        shown_lines += 1;
    }
    if shown_lines == 0 {
        return Err(ToolError::OffsetPastEnd {
            path: shown.to_owned(),
            offset: input.offset,
            lines: number,
        });
    }
    // What follows the window: counted within the scan budget.
    let mut scanned = 0u64;
    let mut more = 0usize;
    let mut open_ended = false;
    loop {
        if scanned > READ_SCAN_BYTES {
            open_ended = true;
            break;
        }
        match next_line(&mut reader, &mut line)? {
            Some((n, _)) => {
                scanned += n;
                more += 1;
            }
            None => break,
        }
    }
    // `number` counts the lines consumed so far (one past the window when
    // the character cap stopped it).
    let total = number + more;
    if capped || more > 0 || open_ended {
        let total = if open_ended {
            format!("more than {total} lines (the rest of the file was not counted)")
        } else {
            format!("{total} lines")
        };
        out.push_str(&format!(
            "[Truncated: showed lines {}-{last} of {total}; continue with offset={}]\n",
            input.offset,
            last + 1
        ));
    }
    Ok(ToolOutput::ok(out))
}

/// One line into `line` (its end of line included), at most
/// [`MAX_LINE_BYTES`] of it kept: the rest of a longer line is read past,
/// never held. Returns the bytes consumed (0 at the end of the file) and
/// the characters of the whole line, its end of line left out.
fn read_line_bounded<R: BufRead>(
    reader: &mut R,
    line: &mut Vec<u8>,
) -> std::io::Result<(u64, usize)> {
    let mut consumed = 0u64;
    let mut chars = 0usize;
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            return Ok((consumed, chars));
        }
        let (take, done) = match buf.iter().position(|b| *b == b'\n') {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        let room = MAX_LINE_BYTES.saturating_sub(line.len());
        line.extend_from_slice(&buf[..take.min(room)]);
        // UTF-8 characters are the bytes that do not continue one.
        chars += buf[..take]
            .iter()
            .filter(|b| (**b & 0xC0) != 0x80 && **b != b'\n' && **b != b'\r')
            .count();
        reader.consume(take);
        consumed += take as u64;
        if done {
            return Ok((consumed, chars));
        }
    }
}

fn trim_eol(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}
