//! What a session actually observed and did, for grounding a worker's
//! result: the line ranges its `read` calls showed and the lines its
//! `grep` calls printed, and the files its write tools changed or were
//! refused, with the checks it ran, all taken from its own transcript. A
//! tool is known by its prepared executor, never by its name: what a call
//! changed or showed is its handler's to say ([`crate::tools`]).

use std::collections::BTreeMap;
use std::path::PathBuf;

use evoflux_model::Message;

use evoflux_agents::contract::RunEffects;

use super::Harness;
use crate::tools::Effect;

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
            let Some(handler) = self.tools.get(&call.name).and_then(|t| t.builtin()) else {
                continue;
            };
            match (handler.effect(call, is_error, &root), is_error) {
                (Some(Effect::File(p)), false) => written.push(p),
                (Some(Effect::File(p)), true) => refused.push(p),
                (Some(Effect::Check(c)), _) => checks.push(c),
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
            let Some(handler) = self.tools.get(&call.name).and_then(|t| t.builtin()) else {
                continue;
            };
            for (path, n) in handler.shown_lines(call, content, &root) {
                lines.entry(path).or_default().push(n);
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

    // How `read` and `grep` outputs become line numbers is tested with
    // their handlers (`tools/read.rs`, `tools/grep.rs`).
    #[test]
    fn read_and_grep_outputs_become_spans() {
        assert_eq!(spans(&[1, 2, 3, 6, 8, 9]), [(1, 3), (6, 6), (8, 9)]);
    }
}
