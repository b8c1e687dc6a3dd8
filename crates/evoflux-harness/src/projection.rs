//! CONTEXT_CONTROL `tool-context-projection`: old oversized tool results
//! become receipts at the provider boundary only.
//!
//! A *batch* is an assistant message carrying tool calls. The most recent
//! [`keep_recent_batches`] batches stay exact (more, between steps: see
//! [`Exact`]); a result of an older batch
//! whose text is longer than [`PROJECT_MIN_CHARS`] is replaced, in the
//! request being sent, by a deterministic receipt: status line, a short
//! head and tail, and the artifact locator from the result's stored
//! metadata when there is one. The persisted transcript is never touched
//! (the hook rewrites the request's copy). Skill results (tools whose
//! presentation is Skill) are never projected, and neither is a result
//! whose tool this session cannot identify — exactness wins when in
//! doubt. Messages are text-only in this build, so no multimodal part can
//! be projected. The figures go to the session's usage record.

use std::collections::HashMap;

use evoflux_core::AppMode;
use evoflux_graph::tool::Presentation;
use evoflux_model::Message;
use std::path::Path;

use crate::metadata::ResultMetadata;

use crate::bounded::{chars_over, head, tail};
use crate::hooks::{ContextStats, Hook, HookContext, HookFuture, ModelCall};

pub const OWNER: &str = "tool-context-projection";
/// Results at most this long (in characters) are never projected.
pub const PROJECT_MIN_CHARS: usize = 1_200;
pub const STATUS_MAX_CHARS: usize = 160;
pub const HEAD_CHARS: usize = 180;
pub const TAIL_CHARS: usize = 420;

/// How many recent tool-call batches stay exact.
pub const fn keep_recent_batches(mode: AppMode) -> usize {
    match mode {
        AppMode::Coding => 3,
        AppMode::Work => 4,
    }
}

/// How far the boundary between receipts and exact results moves at once,
/// in batches.
///
/// A prompt cache matches a request's prefix, so the request that turns
/// one more result into a receipt pays for everything after it again. When
/// the boundary followed every new batch, each call of a long turn broke
/// the cache a few batches from its end: on a 30-step session with 14 KB
/// results a third of the input tokens were cached. Moving it 16 batches
/// at a time leaves the prefix untouched in between: 89% cached on the
/// same session, for more bytes sent. 16 is where the uncached tokens (the
/// provider's prefill, and full price) bottom out; docs/BENCHMARKS.md has
/// the figures and the trade-off against smaller and larger steps.
pub const PROJECTION_STEP_BATCHES: usize = 16;

/// Which batches of a request stay exact: at least the `recent` ones, and
/// the boundary before them moves `step` batches at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exact {
    pub recent: usize,
    pub step: usize,
}

impl Exact {
    /// What a request sends: the cache-stable boundary.
    pub const fn cache_stable(mode: AppMode) -> Exact {
        Exact {
            recent: keep_recent_batches(mode),
            step: PROJECTION_STEP_BATCHES,
        }
    }

    /// As small as projection makes a request: everything before the
    /// recent batches (for the compaction owner's estimate, and for a
    /// request that presses on the context window).
    pub const fn tightest(mode: AppMode) -> Exact {
        Exact {
            recent: keep_recent_batches(mode),
            step: 1,
        }
    }

    /// How many of `batches` batches, oldest first, are projected.
    fn projected(self, batches: usize) -> usize {
        let step = self.step.max(1);
        batches.saturating_sub(self.recent) / step * step
    }
}

/// The receipt that stands in for an old result.
pub fn receipt(tool: &str, content: &str, chars: usize, artifact: Option<&Path>) -> String {
    let status = head(content.lines().next().unwrap_or_default(), STATUS_MAX_CHARS);
    let mut text = format!(
        "[Earlier {tool} result compacted]\nOriginal size: {chars} chars\nStatus: {status}\n"
    );
    if let Some(a) = artifact {
        text.push_str(&format!(
            "Full output: {}\n",
            evoflux_tools::artifact_locator(a)
        ));
    }
    let h = head(content, HEAD_CHARS);
    let t = tail(&content[h.len()..], TAIL_CHARS);
    text.push_str(&format!("\n{h}\n\n...\n\n{t}"));
    if artifact.is_none() {
        text.push_str("\nRe-run the tool if exact omitted details are needed.");
    }
    text
}

/// Projects old oversized results of `messages` in place. `presentation`
/// maps a called tool's name to its presentation (`None`: unknown tool);
/// `metadata` holds stored result metadata by call id.
pub fn project(
    messages: &mut [Message],
    exact: Exact,
    presentation: impl Fn(&str) -> Option<Presentation>,
    metadata: &HashMap<String, ResultMetadata>,
) -> ContextStats {
    let mut stats = ContextStats::default();
    // The index of the first kept batch: everything from there stays.
    let batches: Vec<usize> = messages
        .iter()
        .enumerate()
        .filter(
            |(_, m)| matches!(m, Message::Assistant { tool_calls, .. } if !tool_calls.is_empty()),
        )
        .map(|(i, _)| i)
        .collect();
    let projected = exact.projected(batches.len());
    if projected == 0 {
        return stats;
    }
    let first_kept = batches.get(projected).copied().unwrap_or(messages.len());
    let mut tool_of: HashMap<String, String> = HashMap::new();
    for m in &messages[..first_kept] {
        if let Message::Assistant { tool_calls, .. } = m {
            for c in tool_calls {
                tool_of.insert(c.id.clone(), c.name.clone());
            }
        }
    }
    for m in &mut messages[..first_kept] {
        let Message::Tool {
            tool_call_id,
            content,
            ..
        } = m
        else {
            continue;
        };
        let Some(chars) = chars_over(content, PROJECT_MIN_CHARS) else {
            continue;
        };
        let Some(tool) = tool_of.get(tool_call_id.as_str()) else {
            continue;
        };
        match presentation(tool) {
            Some(Presentation::None) => {}
            Some(Presentation::Skill) | None => continue,
        }
        let meta = metadata.get(tool_call_id.as_str());
        let artifact = meta.and_then(ResultMetadata::artifact);
        let projected = receipt(tool, content, chars, artifact);
        stats.projected_results += 1;
        stats.projection_saved_chars += (chars - projected.chars().count()) as u64;
        *content = projected;
    }
    stats
}

/// The projection owner.
#[derive(Debug, Default)]
pub struct ToolContextProjectionHook;

impl Hook for ToolContextProjectionHook {
    fn before_model<'a>(
        &'a self,
        ctx: &'a HookContext<'a>,
        call: &'a mut ModelCall,
    ) -> HookFuture<'a> {
        // A request that fills half the window gives up cache stability
        // for room.
        let pressed = ctx
            .context_window
            .is_some_and(|window| crate::compaction::estimate_call_tokens(call) > window / 2);
        let exact = if pressed {
            Exact::tightest(ctx.mode())
        } else {
            Exact::cache_stable(ctx.mode())
        };
        let stats = project(
            &mut call.request.messages,
            exact,
            |name| {
                ctx.tools
                    .get(name)
                    .map(|t| t.definition.behavior.presentation)
            },
            &call.result_metadata,
        );
        call.stats.projected_results += stats.projected_results;
        call.stats.projection_saved_chars += stats.projection_saved_chars;
        Box::pin(async { Ok(()) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use evoflux_model::ToolCall;
    use serde_json::json;

    fn batch(id: &str, tool: &str, result: &str) -> Vec<Message> {
        vec![
            Message::Assistant {
                provider_items: Vec::new(),
                content: String::new(),
                tool_calls: vec![ToolCall {
                    id: id.into(),
                    name: tool.into(),
                    arguments: json!({}),
                }],
            },
            Message::tool_result(id, result),
        ]
    }

    fn pres(name: &str) -> Option<Presentation> {
        match name {
            "skill" => Some(Presentation::Skill),
            "grep" | "shell" => Some(Presentation::None),
            _ => None,
        }
    }

    #[test]
    fn a_long_single_line_projects_below_the_limit() {
        let big = "z".repeat(20_000);
        let r = receipt("grep", &big, 20_000, None);
        assert!(r.chars().count() < PROJECT_MIN_CHARS, "{}", r.len());
    }

    #[test]
    fn keeps_recent_batches_and_skills_exact() {
        let big = "a".repeat(5_000);
        let mut m = vec![Message::user("go")];
        m.extend(batch("s1", "skill", &big));
        m.extend(batch("c1", "grep", &big));
        m.extend(batch("c2", "shell", &big));
        m.extend(batch("u1", "unknown", &big));
        for i in 0..3 {
            m.extend(batch(&format!("k{i}"), "grep", &big));
        }
        let meta = HashMap::from([(
            "c2".to_owned(),
            ResultMetadata::from_stored(&json!({
                "offloaded": true, "artifact": "/art/proc_1.txt", "lines": 1, "chars": 5000,
                "output_bytes": 5000, "shown_bytes": 10, "omitted_bytes": 4990,
            }))
            .unwrap(),
        )]);
        let exact = Exact { recent: 3, step: 1 };
        let stats = project(&mut m, exact, pres, &meta);
        assert_eq!(stats.projected_results, 2);
        let content = |id: &str| {
            m.iter()
                .find_map(|x| match x {
                    Message::Tool {
                        tool_call_id,
                        content,
                        ..
                    } if tool_call_id == id => Some(content.clone()),
                    _ => None,
                })
                .unwrap()
        };
        assert_eq!(content("s1"), big);
        assert_eq!(content("u1"), big);
        assert!(content("c1").starts_with("[Earlier grep result compacted]"));
        assert!(content("c1").contains("Re-run the tool"));
        assert!(content("c2").contains("Full output: artifact:proc_1.txt"));
        for i in 0..3 {
            assert_eq!(content(&format!("k{i}")), big);
        }
        assert!(stats.projection_saved_chars > 8_000);
    }
}

#[cfg(test)]
mod step_tests {
    use super::*;
    use evoflux_model::ToolCall;
    use serde_json::json;

    fn session(batches: usize) -> Vec<Message> {
        let big = "r".repeat(5_000);
        let mut m = vec![Message::user("go")];
        for i in 0..batches {
            m.push(Message::tool_calls(
                "",
                vec![ToolCall {
                    id: format!("c{i}"),
                    name: "grep".into(),
                    arguments: json!({}),
                }],
            ));
            m.push(Message::tool_result(format!("c{i}"), big.clone()));
        }
        m
    }

    fn projected(batches: usize, exact: Exact) -> (u64, Vec<Message>) {
        let mut m = session(batches);
        let stats = project(&mut m, exact, |_| Some(Presentation::None), &HashMap::new());
        (stats.projected_results, m)
    }

    #[test]
    fn the_boundary_moves_a_step_at_a_time_so_the_prefix_stays_between_steps() {
        let exact = Exact { recent: 3, step: 4 };
        let counts: Vec<u64> = (0..14).map(|b| projected(b, exact).0).collect();
        assert_eq!(counts, [0, 0, 0, 0, 0, 0, 0, 4, 4, 4, 4, 8, 8, 8]);
        // Between steps a request is the previous one plus what is new.
        let (_, before) = projected(8, exact);
        let (_, after) = projected(10, exact);
        assert_eq!(after[..before.len()], before[..]);
        // The tightest view keeps only the recent batches.
        assert_eq!(projected(10, Exact::tightest(AppMode::Coding)).0, 7);
        assert_eq!(
            Exact::cache_stable(AppMode::Coding).step,
            PROJECTION_STEP_BATCHES
        );
    }
}
