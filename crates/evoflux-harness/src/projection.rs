//! CONTEXT_CONTROL `tool-context-projection`: old oversized tool results
//! become receipts at the provider boundary only.
//!
//! A *batch* is an assistant message carrying tool calls. The most recent
//! [`keep_recent_batches`] batches stay exact; a result of an older batch
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
    keep_batches: usize,
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
    let Some(&first_kept) = batches
        .len()
        .checked_sub(keep_batches)
        .and_then(|n| batches.get(n))
    else {
        return stats;
    };
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
        let stats = project(
            &mut call.request.messages,
            keep_recent_batches(ctx.mode()),
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
        let stats = project(&mut m, 3, pres, &meta);
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
