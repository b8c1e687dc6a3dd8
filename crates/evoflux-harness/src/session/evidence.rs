//! What a session actually observed, for grounding a worker's result:
//! the line ranges its `read` calls showed and the lines its `grep` calls
//! printed, taken from its own transcript. A tool is known by its prepared
//! executor, never by its name.

use std::collections::BTreeMap;
use std::path::PathBuf;

use evoflux_graph::tool::BuiltinExecutor;
use evoflux_model::Message;
use serde_json::Value;

use super::Harness;
use crate::prepared::{Executor, PreparedKind};

/// Inclusive 1-based line spans per absolute path.
pub type ReadSpans = BTreeMap<PathBuf, Vec<(u32, u32)>>;

impl Harness {
    /// The spans this session's successful reads and searches showed.
    pub fn read_spans(&self) -> ReadSpans {
        let root = self.workspace.roots()[0].clone();
        let mut lines: BTreeMap<PathBuf, Vec<u32>> = BTreeMap::new();
        let results: BTreeMap<&str, &str> = self
            .recorder
            .messages
            .iter()
            .filter_map(|m| match m {
                Message::Tool {
                    tool_call_id,
                    content,
                    is_error: false,
                    ..
                } => Some((tool_call_id.as_str(), content.as_str())),
                _ => None,
            })
            .collect();
        for m in &self.recorder.messages {
            let Message::Assistant { tool_calls, .. } = m else {
                continue;
            };
            for call in tool_calls {
                let Some(content) = results.get(call.id.as_str()) else {
                    continue;
                };
                let executor = self.tools.get(&call.name).map(|t| &t.kind);
                match executor {
                    Some(PreparedKind::Ordinary(Executor::Builtin(BuiltinExecutor::Read))) => {
                        let Some(path) = call.arguments.get("path").and_then(Value::as_str) else {
                            continue;
                        };
                        let entry = lines.entry(root.join(path)).or_default();
                        entry.extend(content.lines().filter_map(read_line_number));
                    }
                    Some(PreparedKind::Ordinary(Executor::Builtin(BuiltinExecutor::Grep))) => {
                        for (path, n) in content.lines().filter_map(grep_line) {
                            lines.entry(root.join(path)).or_default().push(n);
                        }
                    }
                    _ => {}
                }
            }
        }
        lines
            .into_iter()
            .map(|(path, mut ns)| {
                ns.sort_unstable();
                ns.dedup();
                (path, spans(&ns))
            })
            .filter(|(_, s)| !s.is_empty())
            .collect()
    }
}

/// `   12| text` → 12.
fn read_line_number(line: &str) -> Option<u32> {
    let (number, _) = line.split_once("| ")?;
    number.trim().parse().ok()
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

/// Sorted, distinct line numbers → inclusive runs.
fn spans(ns: &[u32]) -> Vec<(u32, u32)> {
    let mut out: Vec<(u32, u32)> = Vec::new();
    for &n in ns {
        match out.last_mut() {
            Some((_, end)) if *end + 1 == n => *end = n,
            _ => out.push((n, n)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_and_grep_outputs_become_spans() {
        assert_eq!(read_line_number("    6| let x = 1;"), Some(6));
        assert_eq!(read_line_number("[Truncated: showed lines 1-5]"), None);
        assert_eq!(grep_line("src/a-b.rs:6:fn main"), Some(("src/a-b.rs", 6)));
        assert_eq!(grep_line("src/a.rs-7-  body"), Some(("src/a.rs", 7)));
        assert_eq!(grep_line("No matches for `x` in ."), None);
        assert_eq!(spans(&[1, 2, 3, 6, 8, 9]), [(1, 3), (6, 6), (8, 9)]);
    }
}
