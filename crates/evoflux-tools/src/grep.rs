//! `grep`: regular-expression search over file contents, walking with
//! `.gitignore` respected. Output groups follow ripgrep's convention:
//! `path:line:text` for matches, `path-line-text` for context, `--`
//! between separate groups.

use regex::{Regex, RegexBuilder};
use serde_json::Value;

use evoflux_graph::tool::builtin::grep as limits;

use crate::args::Args;
use crate::clip::clip_line;
use crate::error::ToolError;
use crate::glob::PathGlob;
use crate::output::ToolOutput;
use crate::walk;
use crate::workspace::Workspace;

/// Default for `max_results`.
pub const GREP_DEFAULT_MAX: usize = 100;
/// Longest accepted pattern in characters: the schema's `maxLength`
/// (defined once in `evoflux_graph::tool::builtin`).
pub const GREP_MAX_PATTERN: usize = limits::MAX_PATTERN_CHARS as usize;
/// Files larger than this are skipped: they are data, not source.
pub const GREP_MAX_FILE_BYTES: u64 = 5 * 1024 * 1024;

/// Parameters of `grep`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrepInput {
    pub pattern: String,
    pub directory: String,
    /// File glob; `*` by default.
    pub include: String,
    pub case_insensitive: bool,
    /// Lines of context around each match, 0..=10.
    pub context: usize,
    pub max_results: usize,
}

impl GrepInput {
    /// The accepted JSON fields, matching the framework tool's schema.
    pub const FIELDS: &'static [&'static str] = &[
        "pattern",
        "directory",
        "include",
        "case_insensitive",
        "context",
        "max_results",
    ];

    pub fn parse(input: &Value) -> Result<GrepInput, ToolError> {
        let args = Args::new(input, Self::FIELDS)?;
        let pattern = args.string("pattern")?;
        if pattern.chars().count() > GREP_MAX_PATTERN {
            return Err(ToolError::input(
                "pattern",
                format!("longer than {GREP_MAX_PATTERN} characters"),
            ));
        }
        Ok(GrepInput {
            pattern,
            directory: args
                .opt_string("directory")?
                .unwrap_or_else(|| ".".to_owned()),
            include: args
                .opt_string("include")?
                .unwrap_or_else(|| "*".to_owned()),
            case_insensitive: args.opt_bool("case_insensitive")?.unwrap_or(false),
            context: args
                .opt_uint("context", limits::MIN_CONTEXT, limits::MAX_CONTEXT)?
                .unwrap_or(0),
            max_results: args
                .opt_uint("max_results", limits::MIN_RESULTS, u64::MAX)?
                .unwrap_or(GREP_DEFAULT_MAX),
        })
    }
}

fn compile(input: &GrepInput) -> Result<Regex, ToolError> {
    RegexBuilder::new(&input.pattern)
        .case_insensitive(input.case_insensitive)
        .size_limit(1 << 22)
        .build()
        .map_err(|e| ToolError::input("pattern", format!("invalid regular expression: {e}")))
}

pub(crate) fn run(ws: &Workspace, input: &GrepInput) -> Result<ToolOutput, ToolError> {
    let regex = compile(input)?;
    let include = PathGlob::new("include", &input.include)?;
    let dir = ws.resolve(&input.directory)?;
    if !dir.path.exists() {
        return Err(ToolError::NotFound { path: dir.display });
    }
    // A file named directly is searched whatever `include` says.
    let single_file = dir.path.is_file();
    let mut out = String::new();
    let mut matches = 0usize;
    let mut truncated = false;
    // Files not searched, and why: a search that skipped them must say so,
    // or "No matches" would be a lie.
    let mut skipped: Vec<(String, &'static str)> = Vec::new();
    'files: for (path, rel) in walk::files(ws, &dir.path) {
        if !single_file && !include.is_match(&rel) {
            continue;
        }
        if !std::fs::metadata(&path).is_ok_and(|m| m.len() <= GREP_MAX_FILE_BYTES) {
            skipped.push((ws.display(&path), "larger than 5 MiB"));
            continue;
        }
        let Ok(bytes) = std::fs::read(&path) else {
            skipped.push((ws.display(&path), "unreadable"));
            continue;
        };
        if bytes.iter().take(8192).any(|b| *b == 0) {
            // Binary files are not text to search; that is expected.
            continue;
        }
        let text = String::from_utf8_lossy(&bytes);
        let lines: Vec<&str> = text.lines().collect();
        let shown = ws.display(&path);
        // The last line already printed for this file, to merge overlapping context.
        let mut printed_to: Option<usize> = None;
        for (index, line) in lines.iter().enumerate() {
            if !regex.is_match(line) {
                continue;
            }
            if matches == input.max_results {
                truncated = true;
                break 'files;
            }
            matches += 1;
            let from = index.saturating_sub(input.context);
            let from = printed_to.map_or(from, |p| from.max(p + 1));
            let starts_group = printed_to.is_none_or(|p| from > p + 1);
            if starts_group && !out.is_empty() && input.context > 0 {
                out.push_str("--\n");
            }
            let to = (index + input.context).min(lines.len() - 1);
            for (n, text) in lines.iter().enumerate().take(to + 1).skip(from) {
                let is_match = n == index || (n > index && regex.is_match(text));
                let sep = if is_match { ':' } else { '-' };
                // Later matching lines inside the context are printed as
                // matches but counted when the outer loop reaches them.
                out.push_str(&format!("{shown}{sep}{}{sep}{}\n", n + 1, clip_line(text)));
            }
            printed_to = Some(printed_to.map_or(to, |p| p.max(to)));
        }
    }
    if matches == 0 {
        out = format!("No matches for `{}` in {}\n", input.pattern, dir.display);
    }
    if truncated {
        out.push_str(&format!(
            "[Truncated: showed the first {} matches; narrow the search or raise max_results]\n",
            input.max_results
        ));
    }
    if !skipped.is_empty() {
        const LISTED: usize = 10;
        let listed: Vec<String> = skipped
            .iter()
            .take(LISTED)
            .map(|(p, why)| format!("{p} ({why})"))
            .collect();
        let more = skipped.len().saturating_sub(LISTED);
        out.push_str(&format!(
            "[Not searched: {}{}; read them in pages with `read`]\n",
            listed.join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        ));
    }
    if matches == 0 && skipped.is_empty() {
        out.truncate(out.trim_end().len());
    }
    Ok(ToolOutput::ok(out))
}
