//! What a session actually observed and did, for grounding a worker's
//! result: the line ranges its `read` calls showed and the lines its
//! `grep` calls printed, and the files its write tools changed or were
//! refused, with the checks it ran, all taken from its own transcript. A
//! tool is known by its prepared executor, never by its name.

use std::collections::BTreeMap;
use std::path::PathBuf;

use evoflux_graph::tool::BuiltinExecutor;
use evoflux_model::Message;
use serde_json::Value;

use evoflux_agents::contract::RunEffects;

use super::Harness;
use crate::prepared::{Executor, PreparedKind};

/// Inclusive 1-based line spans per absolute path.
pub type ReadSpans = BTreeMap<PathBuf, Vec<(u32, u32)>>;

impl Harness {
    /// Each call of the transcript that has a result, with that result's
    /// text and whether it was an error.
    fn calls_with_results(&self) -> Vec<(&evoflux_model::ToolCall, &str, bool)> {
        let results: BTreeMap<&str, (&str, bool)> = self
            .recorder
            .messages
            .iter()
            .filter_map(|m| match m {
                Message::Tool {
                    tool_call_id,
                    content,
                    is_error,
                    ..
                } => Some((tool_call_id.as_str(), (content.as_str(), *is_error))),
                _ => None,
            })
            .collect();
        self.recorder
            .messages
            .iter()
            .filter_map(|m| match m {
                Message::Assistant { tool_calls, .. } => Some(tool_calls),
                _ => None,
            })
            .flatten()
            .filter_map(|c| results.get(c.id.as_str()).map(|(t, e)| (c, *t, *e)))
            .collect()
    }

    /// What this session's tools changed: files written by `write`, `edit`
    /// and `artifact` (and those whose every write was refused), and the
    /// checks it ran (`verify` commands by id, `shell` command lines).
    pub fn run_effects(&self) -> RunEffects {
        let root = self.workspace.roots()[0].clone();
        let mut written: Vec<PathBuf> = Vec::new();
        let mut refused: Vec<PathBuf> = Vec::new();
        let mut checks: Vec<String> = Vec::new();
        for (call, _, is_error) in self.calls_with_results() {
            let arg = |k: &str| call.arguments.get(k).and_then(Value::as_str);
            let Some(PreparedKind::Ordinary(Executor::Builtin(executor))) =
                self.tools.get(&call.name).map(|t| &t.kind)
            else {
                continue;
            };
            let path = match executor {
                BuiltinExecutor::Write | BuiltinExecutor::Edit => arg("path").map(|p| root.join(p)),
                BuiltinExecutor::Artifact => {
                    arg("path").and_then(|p| evoflux_tools::artifact_path(&root, p))
                }
                BuiltinExecutor::Verify => {
                    if let Some(id) = arg("command") {
                        checks.push(format!("verify {id}"));
                    }
                    None
                }
                BuiltinExecutor::Shell => {
                    if let Some(command) = arg("command").filter(|_| !is_error) {
                        checks.push(command.split_whitespace().collect::<Vec<_>>().join(" "));
                    }
                    None
                }
                BuiltinExecutor::Process
                | BuiltinExecutor::Read
                | BuiltinExecutor::Ls
                | BuiltinExecutor::Glob
                | BuiltinExecutor::Grep
                | BuiltinExecutor::Todo
                | BuiltinExecutor::WebFetch
                | BuiltinExecutor::Skill
                | BuiltinExecutor::CodeContext
                | BuiltinExecutor::ScheduleTask
                | BuiltinExecutor::ConnectionSearch => None,
            };
            match (path, is_error) {
                (Some(p), false) => written.push(p),
                (Some(p), true) => refused.push(p),
                (None, _) => {}
            }
        }
        refused.retain(|p| !written.contains(p));
        for v in [&mut written, &mut refused] {
            v.sort();
            v.dedup();
        }
        checks.sort();
        checks.dedup();
        RunEffects {
            written_paths: written,
            refused_paths: refused,
            validation_commands: checks,
        }
    }

    /// The spans this session's successful reads and searches showed.
    pub fn read_spans(&self) -> ReadSpans {
        let root = self.workspace.roots()[0].clone();
        let mut lines: BTreeMap<PathBuf, Vec<u32>> = BTreeMap::new();
        for (call, content, is_error) in self.calls_with_results() {
            if is_error {
                continue;
            }
            match self.tools.get(&call.name).map(|t| &t.kind) {
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
