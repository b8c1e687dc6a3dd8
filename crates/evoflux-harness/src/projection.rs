//! CONTEXT_CONTROL `tool-context-projection`: old oversized tool results
//! become receipts at the provider boundary only.
//!
//! A *batch* is an assistant message carrying tool calls. The most recent
//! [`keep_recent_batches`] batches always stay exact, and older ones only
//! turn into receipts when the cost model ([`crate::context_cost`]) says
//! the rewrite pays for what it breaks in the provider's cache, in epochs;
//! a result of an older batch
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

use crate::bounded::{chars_over, estimate_tokens, head, tail};
use crate::context_cost::{BatchTokens, CacheRules, EpochModel, Epochs};
use crate::hooks::{ContextStats, Hook, HookContext, HookFuture, ModelCall};
use evoflux_model::CacheRetention;

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

/// The receipts a transcript's older batches would get: which message
/// each replaces, by batch. Built once per request, then sized for the
/// cost model and applied up to the boundary it chose.
struct Receipts {
    /// The index of each batch's assistant message, oldest first.
    starts: Vec<usize>,
    /// (batch, message index, receipt, original chars), in message order.
    receipts: Vec<(usize, usize, String, usize)>,
}

impl Receipts {
    /// The receipts of every batch but the last `keep` ones (only those
    /// can ever be projected).
    fn of(
        messages: &[Message],
        keep: usize,
        presentation: &impl Fn(&str) -> Option<Presentation>,
        metadata: &HashMap<String, ResultMetadata>,
    ) -> Receipts {
        let starts: Vec<usize> = messages
            .iter()
            .enumerate()
            .filter(
                |(_, m)| matches!(m, Message::Assistant { tool_calls, .. } if !tool_calls.is_empty()),
            )
            .map(|(i, _)| i)
            .collect();
        let eligible = starts.len().saturating_sub(keep);
        let end = starts.get(eligible).copied().unwrap_or(messages.len());
        let mut tool_of: HashMap<&str, (&str, usize)> = HashMap::new();
        let mut batch = 0;
        let mut receipts = Vec::new();
        for (i, m) in messages[..end].iter().enumerate() {
            while starts.get(batch + 1).is_some_and(|&s| s <= i) {
                batch += 1;
            }
            match m {
                Message::Assistant { tool_calls, .. } => {
                    for c in tool_calls {
                        tool_of.insert(c.id.as_str(), (c.name.as_str(), batch));
                    }
                }
                Message::Tool {
                    tool_call_id,
                    content,
                    ..
                } => {
                    let Some(chars) = chars_over(content, PROJECT_MIN_CHARS) else {
                        continue;
                    };
                    let Some(&(tool, of_batch)) = tool_of.get(tool_call_id.as_str()) else {
                        continue;
                    };
                    match presentation(tool) {
                        Some(Presentation::None) => {}
                        Some(Presentation::Skill) | None => continue,
                    }
                    let artifact = metadata
                        .get(tool_call_id.as_str())
                        .and_then(ResultMetadata::artifact);
                    receipts.push((of_batch, i, receipt(tool, content, chars, artifact), chars));
                }
                Message::System { .. } | Message::User { .. } => {}
            }
        }
        Receipts { starts, receipts }
    }

    /// Each batch's estimated tokens, exact and with its receipts, and
    /// the tokens before the first batch.
    fn sizes(&self, messages: &[Message]) -> (u64, Vec<BatchTokens>) {
        let bytes = crate::compaction::message_bytes;
        let head = self.starts.first().copied().unwrap_or(messages.len());
        let head_bytes: usize = messages[..head].iter().map(bytes).sum();
        let mut batches: Vec<BatchTokens> = self
            .starts
            .iter()
            .enumerate()
            .map(|(b, &start)| {
                let end = self.starts.get(b + 1).copied().unwrap_or(messages.len());
                let exact = estimate_tokens(messages[start..end].iter().map(bytes).sum());
                BatchTokens {
                    exact,
                    projected: exact,
                }
            })
            .collect();
        for (batch, i, text, _) in &self.receipts {
            if let Some(b) = batches.get_mut(*batch) {
                let saved = estimate_tokens(bytes(&messages[*i]).saturating_sub(text.len()));
                b.projected = b.projected.saturating_sub(saved);
            }
        }
        (estimate_tokens(head_bytes), batches)
    }

    /// Puts the receipts of the first `projected` batches in place.
    fn apply(self, messages: &mut [Message], projected: usize) -> ContextStats {
        let mut stats = ContextStats::default();
        for (batch, i, text, chars) in self.receipts {
            if batch >= projected {
                break;
            }
            if let Message::Tool { content, .. } = &mut messages[i] {
                stats.projected_results += 1;
                stats.projection_saved_chars += chars.saturating_sub(text.chars().count()) as u64;
                *content = text;
            }
        }
        stats
    }
}

/// Projects old oversized results of `messages` in place: those of every
/// batch but the last `keep_recent` ones, as small as projection makes a
/// request (for the compaction owner's estimate, and for a request that
/// presses on the context window). `presentation` maps a called tool's
/// name to its presentation (`None`: unknown tool); `metadata` holds
/// stored result metadata by call id.
pub fn project(
    messages: &mut [Message],
    keep_recent: usize,
    presentation: impl Fn(&str) -> Option<Presentation>,
    metadata: &HashMap<String, ResultMetadata>,
) -> ContextStats {
    let receipts = Receipts::of(messages, keep_recent, &presentation, metadata);
    let projected = receipts.starts.len().saturating_sub(keep_recent);
    receipts.apply(messages, projected)
}

/// What the cost model decided for one request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Planned {
    pub stats: ContextStats,
    pub epochs: Epochs,
    /// The index of the last message of the projected part (receipts
    /// included), where a breakpoint wire marks a cache breakpoint so the
    /// next rewrite reads up to it.
    pub anchor: Option<usize>,
}

/// Projects `messages` where the cost model says it pays: the epochs are
/// replayed over the transcript's batches (see [`crate::context_cost`]).
/// `model.head_tokens` holds the tokens of the system prompt and tools;
/// those of the messages before the first batch are added to them.
pub fn project_planned(
    messages: &mut [Message],
    model: EpochModel<'_>,
    presentation: impl Fn(&str) -> Option<Presentation>,
    metadata: &HashMap<String, ResultMetadata>,
) -> Planned {
    let receipts = Receipts::of(messages, model.keep_recent, &presentation, metadata);
    let (head, batches) = receipts.sizes(messages);
    let epochs = EpochModel {
        head_tokens: model.head_tokens + head,
        ..model
    }
    .replay(&batches);
    let anchor = match epochs.boundary {
        0 => None,
        b => receipts
            .starts
            .get(b)
            .map(|&next| next.saturating_sub(1))
            .or(Some(messages.len().saturating_sub(1))),
    };
    let stats = receipts.apply(messages, epochs.boundary);
    Planned {
        stats,
        epochs,
        anchor,
    }
}

/// The projection owner. It keeps, per session, the pace of its calls:
/// a pause that outlived the provider's short cache lifetime but not its
/// long one turns the long lifetime on for the rest of the session.
#[derive(Debug, Default)]
pub struct ToolContextProjectionHook {
    pace: std::sync::Mutex<Pace>,
}

#[derive(Debug, Default)]
struct Pace {
    last_call: Option<std::time::Instant>,
    long: bool,
}

impl ToolContextProjectionHook {
    /// Records a call at `now` and answers whether the long cache
    /// lifetime pays from here on.
    fn long_retention(&self, rules: &CacheRules, now: std::time::Instant) -> bool {
        let Ok(mut pace) = self.pace.lock() else {
            return false;
        };
        if let Some(gap) = pace
            .last_call
            .map(|last| now.saturating_duration_since(last))
            && rules.long_pays(gap)
        {
            pace.long = true;
        }
        pace.last_call = Some(now);
        pace.long
    }
}

impl Hook for ToolContextProjectionHook {
    fn before_model<'a>(
        &'a self,
        ctx: &'a HookContext<'a>,
        call: &'a mut ModelCall,
    ) -> HookFuture<'a> {
        let presentation = |name: &str| {
            ctx.tools
                .get(name)
                .map(|t| t.definition.behavior.presentation)
        };
        let head = crate::compaction::head_bytes(call);
        // A request that fills half the window gives up cache stability
        // for room.
        let pressed = ctx.context_window.is_some_and(|window| {
            crate::compaction::estimate_tokens_after(head, &call.request.messages) > window / 2
        });
        let rules = CacheRules::for_provider(call.provider.kind());
        let stats = if pressed {
            call.request.cache.anchor = None;
            project(
                &mut call.request.messages,
                keep_recent_batches(ctx.mode()),
                presentation,
                &call.result_metadata,
            )
        } else {
            let model = EpochModel {
                rules: &rules,
                rates: rules.rates(ctx.price),
                head_tokens: estimate_tokens(head),
                keep_recent: keep_recent_batches(ctx.mode()),
            };
            let planned = project_planned(
                &mut call.request.messages,
                model,
                presentation,
                &call.result_metadata,
            );
            call.request.cache.anchor = planned.anchor;
            planned.stats
        };
        if self.long_retention(&rules, std::time::Instant::now()) {
            call.request.cache.retention = CacheRetention::Long;
        }
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

#[cfg(test)]
mod plan_tests {
    use super::*;
    use crate::context_cost::CacheRates;
    use evoflux_core::config::ProviderKind;
    use evoflux_model::ToolCall;
    use serde_json::json;

    fn session(batches: usize) -> Vec<Message> {
        let big = "r".repeat(14_000);
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

    fn planned(batches: usize, read: f64) -> (Planned, Vec<Message>) {
        let rules = CacheRules::for_provider(ProviderKind::Openai);
        let model = EpochModel {
            rules: &rules,
            rates: CacheRates { read, miss: 1.0 },
            head_tokens: 3_700,
            keep_recent: 3,
        };
        let mut m = session(batches);
        let p = project_planned(&mut m, model, |_| Some(Presentation::None), &HashMap::new());
        (p, m)
    }

    #[test]
    fn between_epochs_a_request_is_the_previous_one_plus_what_is_new() {
        let boundaries: Vec<usize> = (0..31).map(|b| planned(b, 0.1).0.epochs.boundary).collect();
        // The boundary only moves forward, in jumps, and never into the
        // three recent batches.
        assert!(
            boundaries.windows(2).all(|w| w[0] <= w[1]),
            "{boundaries:?}"
        );
        assert!(
            boundaries
                .iter()
                .enumerate()
                .all(|(b, &p)| p <= b.saturating_sub(3)),
            "{boundaries:?}"
        );
        let epochs = planned(30, 0.1).0.epochs.rewrites;
        assert!((2..=8).contains(&epochs), "{boundaries:?}");
        for b in 1..30 {
            let (p0, before) = planned(b, 0.1);
            let (p1, after) = planned(b + 1, 0.1);
            if p0.epochs.boundary == p1.epochs.boundary {
                assert_eq!(after[..before.len()], before[..], "batch {b}");
            }
        }
    }

    #[test]
    fn the_anchor_ends_the_last_projected_result() {
        let (p, m) = planned(30, 0.1);
        let anchor = p.anchor.expect("an epoch happened");
        assert!(
            matches!(&m[anchor], Message::Tool { content, .. } if content.starts_with("[Earlier grep result compacted]"))
        );
        assert!(matches!(&m[anchor + 1], Message::Assistant { .. }));
        assert_eq!(p.stats.projected_results, p.epochs.boundary as u64);
        let (none, _) = planned(3, 0.1);
        assert_eq!(none.anchor, None);
    }
}
