//! `glob`: files whose path matches a glob pattern.

use globset::{GlobBuilder, GlobMatcher};
use serde_json::Value;

use evoflux_graph::tool::builtin::glob as limits;

use crate::args::Args;
use crate::error::ToolError;
use crate::output::ToolOutput;
use crate::walk;
use crate::workspace::Workspace;

/// Default for `max_results`.
pub const GLOB_DEFAULT_MAX: usize = 200;

/// Parameters of `glob`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlobInput {
    pub pattern: String,
    /// Where to search; `.` by default.
    pub directory: String,
    pub max_results: usize,
}

impl GlobInput {
    /// The accepted JSON fields, matching the framework tool's schema.
    pub const FIELDS: &'static [&'static str] = &["pattern", "directory", "max_results"];

    pub fn parse(input: &Value) -> Result<GlobInput, ToolError> {
        let args = Args::new(input, Self::FIELDS)?;
        Ok(GlobInput {
            pattern: args.string("pattern")?,
            directory: args
                .opt_string("directory")?
                .unwrap_or_else(|| ".".to_owned()),
            max_results: args
                .opt_uint("max_results", limits::MIN_RESULTS, u64::MAX)?
                .unwrap_or(GLOB_DEFAULT_MAX),
        })
    }
}

/// A compiled `include`/`pattern` glob. A pattern without `/` matches the
/// file name at any depth (as in `.gitignore`); one with `/` matches the
/// path relative to the searched directory, `*` staying within one
/// component.
#[derive(Debug, Clone)]
pub struct PathGlob {
    matcher: GlobMatcher,
    by_name: bool,
}

impl PathGlob {
    pub fn new(field: &str, pattern: &str) -> Result<PathGlob, ToolError> {
        let glob = GlobBuilder::new(pattern)
            .literal_separator(true)
            .build()
            .map_err(|e| ToolError::input(field, format!("invalid glob: {e}")))?;
        Ok(PathGlob {
            matcher: glob.compile_matcher(),
            by_name: !pattern.contains('/'),
        })
    }

    pub fn is_match(&self, rel: &std::path::Path) -> bool {
        if self.by_name {
            rel.file_name()
                .is_some_and(|name| self.matcher.is_match(name))
        } else {
            self.matcher.is_match(rel)
        }
    }
}

pub(crate) fn run(ws: &Workspace, input: &GlobInput) -> Result<ToolOutput, ToolError> {
    let glob = PathGlob::new("pattern", &input.pattern)?;
    let dir = ws.resolve(&input.directory)?;
    if !dir.path.is_dir() {
        return Err(ToolError::WrongKind {
            path: dir.display,
            expected: "a directory",
            actual: if dir.path.exists() {
                "a file"
            } else {
                "missing"
            },
        });
    }
    let mut found = Vec::new();
    let mut more = false;
    for (path, rel) in walk::files(ws, &dir.path) {
        if !glob.is_match(&rel) {
            continue;
        }
        if found.len() == input.max_results {
            more = true;
            break;
        }
        found.push(ws.display(&path));
    }
    if found.is_empty() {
        return Ok(ToolOutput::ok(format!(
            "No files match `{}` in {}",
            input.pattern, dir.display
        )));
    }
    let mut out = found.join("\n");
    out.push('\n');
    if more {
        out.push_str(&format!(
            "[Truncated: showed the first {} matches; narrow the pattern or raise max_results]\n",
            input.max_results
        ));
    }
    Ok(ToolOutput::ok(out))
}
