//! `grep`'s handler: searches file contents on the disk of the session's
//! workspace; the lines it printed (matches and context) ground a worker's
//! result. Its definition is [`evoflux_graph::tool::builtin::grep`].

use std::path::{Path, PathBuf};

use evoflux_model::ToolCall;

use super::{BuiltinTool, Handled, files};
use crate::events::ToolResult;
use crate::session::Harness;

#[derive(Debug)]
pub(super) struct Grep;

impl BuiltinTool for Grep {
    fn execute<'a>(
        &'a self,
        session: &'a mut Harness,
        call: &'a ToolCall,
    ) -> Handled<'a, ToolResult> {
        Box::pin(files::on_disk(session, call, evoflux_tools::files::grep))
    }

    fn shown_lines(&self, _call: &ToolCall, content: &str, root: &Path) -> Vec<(PathBuf, u32)> {
        content
            .lines()
            .filter_map(grep_line)
            .map(|(path, n)| (root.join(path), n))
            .collect()
    }
}

/// `path:12:text` (a match) or `path-12-text` (context) → (path, 12).
fn grep_line(line: &str) -> Option<(&str, u32)> {
    for (i, c) in line.char_indices() {
        if c != ':' && c != '-' {
            continue;
        }
        let rest = &line[i + 1..];
        let digits = rest.chars().take_while(char::is_ascii_digit).count();
        if digits > 0 && rest[digits..].starts_with(c) && i > 0 {
            return Some((&line[..i], rest[..digits].parse().ok()?));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grep_outputs_become_line_numbers() {
        assert_eq!(grep_line("src/a-b.rs:6:fn main"), Some(("src/a-b.rs", 6)));
        assert_eq!(grep_line("src/a.rs-7-  body"), Some(("src/a.rs", 7)));
        assert_eq!(grep_line("No matches for `x` in ."), None);
    }
}
