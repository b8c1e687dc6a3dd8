//! CONTEXT_CONTROL `observation-receipts`: a repeated read of an unchanged
//! source range is answered by a receipt naming the earlier call.
//!
//! What a tool observes is declared on its definition
//! ([`ObservationKind`]), never inferred from its name. For a
//! [`ObservationKind::Source`] tool (arguments `path`, `offset`, `limit`)
//! the revision of the file is `device:inode:size:mtime_ns`, taken with the
//! path resolved exactly as the tool resolves it. An exact repeat with an
//! unchanged revision gets `[Observation reused — source revision
//! unchanged]`; a narrower range inside the lines an earlier result showed
//! gets `[Observation range already covered — …]`. Any change to the file
//! invalidates both. A receipt is only given while the earlier result is
//! still in front of the model exactly: before each model call the hook
//! checks the outgoing request (it runs after compaction and projection)
//! and forgets observations that were summarized or projected away, so a
//! receipt never points at something the model can no longer see.
//! Discovery and retrieval tools have no single revision; they are counted
//! and always run. No quota ever blocks a call.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use evoflux_core::hash::sha256_hex;
use evoflux_graph::tool::{ObservationKind, ToolDefinition};
use evoflux_model::{Message, ToolCall};
use serde::Serialize;
use serde_json::Value;

use crate::events::ToolResult;
use crate::hooks::{Hook, HookContext, HookFuture, ModelCall, ToolGate};
use crate::metadata::{ObservationReuse, ResultMetadata};
use crate::tool_paths::path_arguments;

pub const OWNER: &str = "observation-receipts";
pub const REUSED_HEADER: &str = "[Observation reused — source revision unchanged]";
pub const COVERED_HEADER: &str = "[Observation range already covered — source revision unchanged]";

/// A file's revision: any change to it changes one of these.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Revision {
    pub device: u64,
    pub inode: u64,
    pub size: u64,
    pub mtime_ns: i128,
}

impl Revision {
    pub fn of(path: &std::path::Path) -> Option<Revision> {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(path).ok()?;
        m.is_file().then(|| Revision {
            device: m.dev(),
            inode: m.ino(),
            size: m.size(),
            mtime_ns: i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
        })
    }
}

/// Counts of observations, by kind.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ObservationStats {
    pub requests: u64,
    pub executed: u64,
    pub reused: u64,
    pub by_kind: HashMap<String, u64>,
}

/// A read request: 1-based first line and optional line count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Range {
    offset: u64,
    limit: Option<u64>,
}

impl Range {
    fn of(arguments: &Value) -> Range {
        Range {
            offset: arguments.get("offset").and_then(Value::as_u64).unwrap_or(1),
            limit: arguments.get("limit").and_then(Value::as_u64),
        }
    }

    fn last(self) -> Option<u64> {
        self.limit.map(|l| self.offset + l.saturating_sub(1))
    }
}

#[derive(Debug, Clone)]
struct Observed {
    call_id: String,
    path: std::path::PathBuf,
    revision: Revision,
    range: Range,
    /// First and last line numbers the result showed.
    shown: Option<(u64, u64)>,
    sha256: String,
    content_len: usize,
}

#[derive(Debug)]
struct Pending {
    path: std::path::PathBuf,
    revision: Revision,
    range: Range,
}

#[derive(Debug, Default)]
struct State {
    observed: Vec<Observed>,
    pending: HashMap<String, Pending>,
}

/// The receipts owner.
#[derive(Debug, Default)]
pub struct ObservationReceiptsHook {
    state: Mutex<State>,
    stats: Arc<Mutex<ObservationStats>>,
}

/// The line numbers a numbered `read` result shows (`NNNNN| text`).
fn shown_lines(content: &str) -> Option<(u64, u64)> {
    let number = |line: &str| -> Option<u64> {
        let (n, _) = line.split_once("| ")?;
        n.trim_start().parse().ok()
    };
    let first = content.lines().find_map(number)?;
    let last = content.lines().rev().find_map(number)?;
    (first <= last).then_some((first, last))
}

impl ObservationReceiptsHook {
    pub fn new() -> ObservationReceiptsHook {
        ObservationReceiptsHook::default()
    }

    /// A handle on the counts, readable while the pipeline runs.
    pub fn stats(&self) -> Arc<Mutex<ObservationStats>> {
        self.stats.clone()
    }

    fn with_state<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        match self.state.lock() {
            Ok(mut s) => f(&mut s),
            Err(poisoned) => f(&mut poisoned.into_inner()),
        }
    }

    fn count(&self, kind: ObservationKind, f: impl FnOnce(&mut ObservationStats)) {
        let mut s = match self.stats.lock() {
            Ok(s) => s,
            Err(poisoned) => poisoned.into_inner(),
        };
        s.requests += 1;
        let name = match kind {
            ObservationKind::Source => "source",
            ObservationKind::Discovery => "discovery",
            ObservationKind::Retrieval => "retrieval",
        };
        *s.by_kind.entry(name.to_owned()).or_default() += 1;
        f(&mut s);
    }

    fn source_gate(
        &self,
        ctx: &HookContext<'_>,
        call: &ToolCall,
        tool: &ToolDefinition,
    ) -> ToolGate {
        let Some(argument) = path_arguments(tool, &call.arguments).into_iter().next() else {
            return ToolGate::Proceed;
        };
        let Ok(resolved) = ctx.workspace.resolve(argument) else {
            return ToolGate::Proceed;
        };
        let Some(revision) = Revision::of(&resolved.path) else {
            return ToolGate::Proceed;
        };
        let range = Range::of(&call.arguments);
        self.with_state(|s| {
            // A changed file invalidates every observation of it.
            s.observed
                .retain(|o| o.path != resolved.path || o.revision == revision);
            let earlier = s.observed.iter().rev().filter(|o| o.path == resolved.path);
            let mut covered = None;
            for o in earlier {
                if o.range == range {
                    return ToolGate::Respond(ToolResult {
                        content: format!(
                            "{REUSED_HEADER}\noriginal_call_id: {}\nresult_sha256: {}\npath: {}\n\
                             The result of that call is still in this conversation and the file has not changed since; use it instead of reading again.",
                            o.call_id, o.sha256, resolved.display
                        ),
                        is_error: false,
                        metadata: Some(reuse(o, None)),
                        media: Vec::new(),
                    });
                }
                if covered.is_none()
                    && let (Some((first, last)), Some(want_last)) = (o.shown, range.last())
                    && first <= range.offset
                    && want_last <= last
                {
                    covered = Some((o.clone(), first, last, want_last));
                }
            }
            if let Some((o, first, last, want_last)) = covered {
                return ToolGate::Respond(ToolResult {
                    content: format!(
                        "{COVERED_HEADER}\noriginal_call_id: {}\nresult_sha256: {}\npath: {}\ncovered_range: {first}-{last}\nrequested_range: {}-{want_last}\n\
                         Those lines are in the result of that call and the file has not changed since; use it instead of reading again.",
                        o.call_id, o.sha256, resolved.display, range.offset
                    ),
                    is_error: false,
                    metadata: Some(reuse(
                        &o,
                        Some(([first, last], [range.offset, want_last])),
                    )),
                    media: Vec::new(),
                });
            }
            s.pending.insert(
                call.id.clone(),
                Pending {
                    path: resolved.path.clone(),
                    revision,
                    range,
                },
            );
            ToolGate::Proceed
        })
    }
}

/// The metadata of a read answered by an earlier result: all of it, or
/// the `(covered, requested)` line ranges of it.
fn reuse(o: &Observed, ranges: Option<([u64; 2], [u64; 2])>) -> ResultMetadata {
    ResultMetadata {
        observation: Some(Box::new(ObservationReuse {
            kind: "source".to_owned(),
            reused: true,
            original_call_id: o.call_id.clone(),
            result_sha256: o.sha256.clone(),
            covered_range: ranges.map(|(c, _)| c),
            requested_range: ranges.map(|(_, r)| r),
        })),
        ..ResultMetadata::default()
    }
}

impl Hook for ObservationReceiptsHook {
    fn before_model<'a>(
        &'a self,
        _ctx: &'a HookContext<'a>,
        call: &'a mut ModelCall,
    ) -> HookFuture<'a> {
        // Keep only observations whose exact result the model still sees
        // in this request (projection always shortens what it replaces).
        let visible: HashMap<&str, usize> = call
            .request
            .messages
            .iter()
            .filter_map(|m| match m {
                Message::Tool {
                    tool_call_id,
                    content,
                    ..
                } => Some((tool_call_id.as_str(), content.len())),
                Message::System { .. } | Message::User { .. } | Message::Assistant { .. } => None,
            })
            .collect();
        self.with_state(|s| {
            s.observed
                .retain(|o| visible.get(o.call_id.as_str()) == Some(&o.content_len));
        });
        Box::pin(async { Ok(()) })
    }

    fn before_tool(
        &self,
        ctx: &HookContext<'_>,
        call: &ToolCall,
        tool: &ToolDefinition,
    ) -> ToolGate {
        let Some(kind) = tool.behavior.observation else {
            return ToolGate::Proceed;
        };
        let gate = match kind {
            ObservationKind::Source => self.source_gate(ctx, call, tool),
            ObservationKind::Discovery | ObservationKind::Retrieval => ToolGate::Proceed,
        };
        self.count(kind, |s| match &gate {
            ToolGate::Respond(_) => s.reused += 1,
            ToolGate::Proceed | ToolGate::HoldBack { .. } => s.executed += 1,
        });
        gate
    }

    fn after_tool(
        &self,
        _ctx: &HookContext<'_>,
        call: &ToolCall,
        _tool: &ToolDefinition,
        result: &mut ToolResult,
    ) {
        self.with_state(|s| {
            let Some(p) = s.pending.remove(&call.id) else {
                return;
            };
            // Only a clean result of a file that did not change while it
            // was read can stand for later reads.
            if result.is_error || Revision::of(&p.path) != Some(p.revision) {
                return;
            }
            s.observed.push(Observed {
                call_id: call.id.clone(),
                path: p.path,
                revision: p.revision,
                range: p.range,
                shown: shown_lines(&result.content),
                sha256: sha256_hex(result.content.as_bytes()).as_str().to_owned(),
                content_len: result.content.len(),
            });
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shown_lines_reads_the_number_prefixes() {
        let text = "   10| a\n   11| b|c\n   12| \n[Truncated: showed lines 10-12 of 40; continue with offset=13]\n";
        assert_eq!(shown_lines(text), Some((10, 12)));
        assert_eq!(shown_lines("(a.txt is empty)"), None);
    }

    #[test]
    fn revision_changes_with_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.txt");
        std::fs::write(&p, "one").unwrap();
        let r1 = Revision::of(&p).unwrap();
        std::fs::write(&p, "one two").unwrap();
        assert_ne!(Revision::of(&p).unwrap(), r1);
        assert!(Revision::of(dir.path()).is_none());
    }
}
