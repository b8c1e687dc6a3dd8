//! CONTEXT_CONTROL `summarization`: compaction of the model's view.
//!
//! The durable transcript stays authoritative; only the request sent to
//! the provider changes. When the prompt (estimated at 4 bytes a token,
//! after projection) reaches [`threshold_tokens`] of the provider's
//! context window — or when the provider refused the previous attempt as
//! too long ([`ModelCall::context_exceeded`], the loop's one retry) — the
//! older part of the conversation is summarized by the same provider in a
//! separate request without tools, and the model sees: the system prompt,
//! one `[context compacted]` user message with the summary, the exact
//! skill activation groups that fit the durable-skill budget, and the
//! recent turns verbatim.
//!
//! The summary is persisted in `<artifacts>/compaction.json` with the
//! position it covers (a message count plus the hash of the last covered
//! message), so it is applied on every later call and after a restart
//! without being recomputed. A new summary is made only when at least
//! [`MIN_NEW_MESSAGES`] more messages can be summarized (unless the
//! provider refused the request), which keeps it from compacting on every
//! call.
//!
//! Skill activations are the results of tools whose presentation is Skill.
//! Walking newest to oldest, every assistant tool-call group of the
//! summarized part that holds a successful activation is charged whole
//! (the assistant message plus every result it got) to
//! [`MAX_DURABLE_SKILL_BYTES`]; groups that fit stay byte-exact and are
//! never shown to the summarizer. An activation that does not fit is
//! dropped, and its call id is reported in [`Compacted::dropped_skill_calls`]
//! — through [`ModelCall::compacted`], the [`CompactionListener`] given to
//! the pipeline, and the persisted record ([`CompactionRecord::load`]) —
//! so the skill runtime clears that skill's loaded marker and it can be
//! loaded exactly again. Tool calls and their results are never split:
//! every cut falls before an assistant message, and groups move whole.

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use evoflux_core::AppMode;
use evoflux_core::atomic::{AtomicOptions, write_atomic};
use evoflux_core::hash::{canonical_json, sha256_hex};
use evoflux_graph::tool::Presentation;
use evoflux_model::{Message, ProviderError, Request};
use serde::{Deserialize, Serialize};

use crate::bounded::{estimate_tokens, head_tail};
use crate::hooks::{Hook, HookContext, HookFuture, ModelCall};
use crate::projection;

pub const OWNER: &str = "summarization";
/// The file the summary is kept in, below the session's artifacts dir.
pub const RECORD_FILE: &str = "compaction.json";
/// Starts the summary message the model sees.
pub const COMPACTED_HEADER: &str = "[context compacted]";
/// Bytes of exact skill activation groups kept through compaction.
pub const MAX_DURABLE_SKILL_BYTES: usize = 100_000;
/// New messages needed before the summary is remade.
pub const MIN_NEW_MESSAGES: usize = 4;
/// The threshold when the provider does not say its window.
pub const UNKNOWN_WINDOW_THRESHOLD_TOKENS: u64 = 250_000;
pub const MAX_THRESHOLD_TOKENS: u64 = 750_000;
/// Upper bound on the summary's length, in tokens.
pub const SUMMARY_MAX_TOKENS: u32 = 30_000;
/// Characters of one tool result shown to the summarizer.
pub const SUMMARIZER_RESULT_CHARS: usize = 1_500;
/// Characters of the user's latest request quoted verbatim after a
/// compaction.
pub const LATEST_REQUEST_MAX_CHARS: usize = 20_000;
const RECORD_VERSION: u32 = 1;

/// Compaction starts at this estimated prompt size:
/// `min(750,000, 0.75 × window)`, or 250,000 when the window is unknown.
pub fn threshold_tokens(context_window: Option<u64>) -> u64 {
    match context_window {
        Some(w) => (w / 4 * 3).min(MAX_THRESHOLD_TOKENS),
        None => UNKNOWN_WINDOW_THRESHOLD_TOKENS,
    }
}

/// Assistant turns kept verbatim after the summary.
pub const fn keep_recent_turns(mode: AppMode) -> usize {
    match mode {
        AppMode::Work => 3,
        AppMode::Coding => 2,
    }
}

/// Why a compaction ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CompactionReason {
    /// The prompt reached the threshold.
    PromptSize,
    /// The provider refused the previous attempt as too long.
    ContextExceeded,
}

/// How the summary was produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SummarySource {
    Model,
    /// The summarization request failed; a deterministic outline of the
    /// summarized messages stands in, and says so.
    Fallback,
}

/// What one compaction did: the typed signal for the skill runtime and
/// anyone else who keeps state about what the model can see.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Compacted {
    pub reason: CompactionReason,
    /// Leading messages of the model's transcript the summary replaces.
    pub covered_messages: usize,
    /// Skill activation call ids kept exact.
    pub kept_skill_calls: Vec<String>,
    /// Skill activation call ids that fell outside the durable-skill
    /// budget: the model no longer sees them, so their loaded marker must
    /// be cleared.
    pub dropped_skill_calls: Vec<String>,
    pub summary_source: SummarySource,
}

/// The persisted compaction of one session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompactionRecord {
    pub version: u32,
    /// How many leading messages of the model's transcript are summarized.
    pub covered_messages: usize,
    /// SHA-256 of the canonical JSON of the last covered message, to find
    /// the boundary again even if hooks inserted messages before it.
    pub anchor_sha256: String,
    pub summary: String,
    /// The user's latest request inside the covered part, quoted verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest_request: Option<String>,
    /// Assistant groups kept exact, by the id of their first tool call.
    pub protected_groups: Vec<String>,
    /// Every skill activation dropped so far.
    pub dropped_skill_calls: Vec<String>,
    pub compactions: u32,
    pub last: Compacted,
}

impl CompactionRecord {
    /// The session's record, if it has been compacted (`None` also for an
    /// unreadable record: the next call recomputes it).
    pub fn load(artifacts_dir: &Path) -> Option<CompactionRecord> {
        let bytes = std::fs::read(artifacts_dir.join(RECORD_FILE)).ok()?;
        serde_json::from_slice::<CompactionRecord>(&bytes)
            .ok()
            .filter(|r| r.version == RECORD_VERSION)
    }

    fn save(&self, artifacts_dir: &Path) -> Result<(), String> {
        evoflux_core::private::create_private_dir(artifacts_dir).map_err(|e| e.to_string())?;
        let bytes = serde_json::to_vec_pretty(self).map_err(|e| e.to_string())?;
        write_atomic(
            &artifacts_dir.join(RECORD_FILE),
            &bytes,
            AtomicOptions::SECRET,
        )
        .map_err(|e| e.to_string())
    }
}

/// Called with every new compaction (e.g. by the skill runtime to clear
/// the loaded markers of dropped activations).
#[derive(Clone)]
pub struct CompactionListener(pub Arc<dyn Fn(&Compacted) + Send + Sync>);

impl fmt::Debug for CompactionListener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CompactionListener")
    }
}

fn message_sha(m: &Message) -> String {
    canonical_json(m)
        .map(|j| sha256_hex(j.as_bytes()).as_str().to_owned())
        .unwrap_or_default()
}

/// What one image or clip counts for in the size estimate: providers bill
/// an image by its pixels, at most about 1,600 tokens (Anthropic; OpenAI's
/// high detail is similar), not by its base64 length, so each counts as
/// that many tokens' worth of text.
const MEDIA_ESTIMATE_BYTES: usize = 6_400;

pub(crate) fn message_bytes(m: &Message) -> usize {
    let media = m.media().len() * MEDIA_ESTIMATE_BYTES;
    media
        + match m {
            Message::System { content } | Message::User { content, .. } => content.len(),
            Message::Assistant {
                content,
                tool_calls,
                provider_items,
            } => {
                // Reasoning and server-tool items are sent too; their JSON is
                // close enough to their size on the wire.
                provider_items
                    .iter()
                    .map(|i| serde_json::to_string(i).map_or(0, |s| s.len()))
                    .sum::<usize>()
                    + content.len()
                    + tool_calls
                        .iter()
                        .map(|c| c.name.len() + c.id.len() + c.arguments.to_string().len())
                        .sum::<usize>()
            }
            Message::Tool {
                content,
                tool_call_id,
                ..
            } => content.len() + tool_call_id.len(),
        }
}

/// The estimated prompt size of a model call in tokens.
pub fn estimate_call_tokens(call: &ModelCall) -> u64 {
    estimate_tokens_after(head_bytes(call), &call.request.messages)
}

/// The estimated prompt size in tokens of `messages` sent after `head`
/// bytes of system sections and tool definitions ([`head_bytes`]).
pub(crate) fn estimate_tokens_after(head: usize, messages: &[Message]) -> u64 {
    estimate_tokens(head + messages.iter().map(message_bytes).sum::<usize>())
}

/// The bytes of what a call sends before its messages: the system
/// sections and the tool definitions.
pub(crate) fn head_bytes(call: &ModelCall) -> usize {
    let system: usize = call.system.iter().map(|s| s.text.len()).sum();
    let tools: usize = call
        .request
        .tools
        .iter()
        .map(|t| t.name.len() + t.description.len() + t.parameters.to_string().len())
        .sum();
    system + tools
}

/// One assistant tool-call group: the assistant message and the indices
/// of the results that answer it.
#[derive(Debug, Clone)]
struct Group {
    assistant: usize,
    results: Vec<usize>,
    first_call: String,
    skill_calls: Vec<String>,
    bytes: usize,
}

/// Groups of `messages[..end]` holding a successful skill activation.
fn skill_groups(
    messages: &[Message],
    end: usize,
    presentation: &dyn Fn(&str) -> Option<Presentation>,
) -> Vec<Group> {
    let mut out = Vec::new();
    for (i, m) in messages[..end].iter().enumerate() {
        let Message::Assistant { tool_calls, .. } = m else {
            continue;
        };
        let Some(first) = tool_calls.first() else {
            continue;
        };
        let ids: BTreeSet<&str> = tool_calls.iter().map(|c| c.id.as_str()).collect();
        let results: Vec<usize> = messages[i + 1..end]
            .iter()
            .enumerate()
            .take_while(|(_, m)| !matches!(m, Message::Assistant { .. }))
            .filter(|(_, m)| matches!(m, Message::Tool { tool_call_id, .. } if ids.contains(tool_call_id.as_str())))
            .map(|(j, _)| i + 1 + j)
            .collect();
        let ok: BTreeSet<&str> = results
            .iter()
            .filter_map(|&j| match &messages[j] {
                Message::Tool {
                    tool_call_id,
                    is_error: false,
                    ..
                } => Some(tool_call_id.as_str()),
                _ => None,
            })
            .collect();
        let skill_calls: Vec<String> = tool_calls
            .iter()
            .filter(|c| presentation(&c.name) == Some(Presentation::Skill))
            .filter(|c| ok.contains(c.id.as_str()))
            .map(|c| c.id.clone())
            .collect();
        if skill_calls.is_empty() {
            continue;
        }
        let bytes = message_bytes(m)
            + results
                .iter()
                .map(|&j| message_bytes(&messages[j]))
                .sum::<usize>();
        out.push(Group {
            assistant: i,
            results,
            first_call: first.id.clone(),
            skill_calls,
            bytes,
        });
    }
    out
}

/// Newest first within the budget: which groups stay exact, and which
/// skill calls are dropped.
fn select_durable(groups: &[Group]) -> (Vec<&Group>, Vec<String>) {
    let mut used = 0;
    let mut kept = Vec::new();
    let mut dropped = Vec::new();
    for g in groups.iter().rev() {
        if used + g.bytes <= MAX_DURABLE_SKILL_BYTES {
            used += g.bytes;
            kept.push(g);
        } else {
            dropped.extend(g.skill_calls.iter().cloned());
        }
    }
    kept.reverse();
    (kept, dropped)
}

/// Where the covered part ends in `messages` (exclusive), found by the
/// anchor near the recorded count.
fn find_boundary(messages: &[Message], record: &CompactionRecord) -> Option<usize> {
    let guess = record.covered_messages.checked_sub(1)?;
    let matches = |i: usize| {
        messages
            .get(i)
            .is_some_and(|m| message_sha(m) == record.anchor_sha256)
    };
    if matches(guess) {
        return Some(guess + 1);
    }
    (guess + 1..messages.len())
        .chain((0..guess.min(messages.len())).rev())
        .find(|&i| matches(i))
        .map(|i| i + 1)
}

fn summary_message(record: &CompactionRecord) -> Message {
    let mut text = format!(
        "{COMPACTED_HEADER} Earlier parts of this conversation ({} messages) were summarized to fit the model's context window. \
         The full transcript is kept; re-read files or re-run tools when exact details matter.",
        record.covered_messages
    );
    if !record.dropped_skill_calls.is_empty() {
        text.push_str(
            "\nSome skill instructions loaded earlier are no longer in context; load a skill again before relying on it.",
        );
    }
    if let Some(req) = &record.latest_request {
        text.push_str("\n\nThe user's latest request before this point (verbatim):\n");
        text.push_str(req);
    }
    text.push_str("\n\n## Summary\n");
    text.push_str(record.summary.trim());
    Message::user(text)
}

/// Replaces the covered part of `messages` with the summary and the kept
/// groups. Returns false when the boundary is not found (stale record).
fn apply(messages: &mut Vec<Message>, record: &CompactionRecord) -> bool {
    let Some(end) = find_boundary(messages, record) else {
        return false;
    };
    let protected: BTreeSet<&str> = record.protected_groups.iter().map(String::as_str).collect();
    let mut view = vec![summary_message(record)];
    let mut i = 0;
    while i < end {
        let keep_group = matches!(&messages[i], Message::Assistant { tool_calls, .. }
            if tool_calls.first().is_some_and(|c| protected.contains(c.id.as_str())));
        if keep_group {
            view.push(messages[i].clone());
            i += 1;
            while i < end && matches!(messages[i], Message::Tool { .. }) {
                view.push(messages[i].clone());
                i += 1;
            }
        } else {
            i += 1;
        }
    }
    view.extend(messages.drain(end..));
    *messages = view;
    true
}

/// The start of the recent part: the `keep`-th last assistant message,
/// so every cut falls before an assistant message and no call is split
/// from its results.
fn split_point(messages: &[Message], keep: usize) -> Option<usize> {
    let assistants: Vec<usize> = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| matches!(m, Message::Assistant { .. }))
        .map(|(i, _)| i)
        .collect();
    let n = assistants.len().checked_sub(keep.max(1))?;
    assistants.get(n).copied()
}

/// The summarizer's input: the previous summary and the messages to
/// summarize, each result bounded, the oldest dropped (and counted) when
/// the whole exceeds `budget` bytes.
fn render_for_summary(previous: Option<&str>, messages: &[&Message], budget: usize) -> String {
    let mut parts: Vec<String> = messages
        .iter()
        .map(|m| match m {
            Message::System { content } => format!("[system]\n{content}"),
            // The summarizer reads text: attached media are named.
            Message::User { content, media } => format!(
                "[user]\n{}",
                evoflux_protocol::message::text_with_media_notes(content, media)
            ),
            Message::Assistant {
                content,
                tool_calls,
                provider_items: _,
            } => {
                let mut t = String::from("[assistant]");
                if !content.is_empty() {
                    t.push('\n');
                    t.push_str(content);
                }
                for c in tool_calls {
                    t.push_str(&format!("\n-> {}({}) [{}]", c.name, c.arguments, c.id));
                }
                t
            }
            Message::Tool {
                tool_call_id,
                content,
                is_error,
                media,
            } => format!(
                "[result {tool_call_id}{}]\n{}",
                if *is_error { ", error" } else { "" },
                head_tail(
                    &evoflux_protocol::message::text_with_media_notes(content, media),
                    SUMMARIZER_RESULT_CHARS / 3,
                    SUMMARIZER_RESULT_CHARS * 2 / 3
                )
            ),
        })
        .collect();
    let mut total: usize = parts.iter().map(String::len).sum();
    let mut omitted = 0;
    while total > budget && parts.len() > 1 {
        total -= parts.remove(0).len();
        omitted += 1;
    }
    let mut text = String::new();
    if let Some(p) = previous {
        text.push_str("Summary of the conversation before these messages:\n");
        text.push_str(p);
        text.push_str("\n\n");
    }
    if omitted > 0 {
        text.push_str(&format!(
            "({omitted} older messages are not shown here: they did not fit the summarizer's input.)\n\n"
        ));
    }
    text.push_str("Messages to summarize:\n\n");
    text.push_str(&parts.join("\n\n"));
    text
}

fn summary_prompt(mode: AppMode) -> &'static str {
    match mode {
        AppMode::Coding => {
            "You write the handoff summary of a coding session whose earlier messages no longer fit the model's context window. \
             Another model continues the work from your summary alone, so be specific and complete. Cover: the user's goal and \
             constraints; the repositories, files and symbols involved (exact paths); what was found, decided and changed; \
             commands run and their outcomes (failures included); what remains to do and the next step. Name artifact paths \
             where full outputs are kept. Do not invent anything. Answer with the summary only."
        }
        AppMode::Work => {
            "You write the handoff summary of a work session whose earlier messages no longer fit the model's context window. \
             Another model continues from your summary alone. Cover: the user's goal and preferences, the facts gathered, the \
             decisions made, files created or changed (exact paths), open questions and the next step. Do not invent anything. \
             Answer with the summary only."
        }
    }
}

/// Asks the provider for a summary. `Err` carries the provider error.
async fn summarize(
    call: &ModelCall,
    model: &str,
    mode: AppMode,
    input: String,
    max_tokens: u32,
) -> Result<String, ProviderError> {
    let request = Request::new(
        model.to_owned(),
        vec![Message::system(summary_prompt(mode)), Message::user(input)],
    )
    .with_max_tokens(max_tokens);
    let read = crate::side_call::collect(call.provider.stream(request)).await;
    match read.failure {
        Some(e) => Err(e),
        None => Ok(read.text),
    }
}

/// A deterministic outline when the provider cannot summarize.
fn fallback_summary(messages: &[&Message], error: &str) -> String {
    let mut text = format!(
        "(The summary could not be generated: {error}. This outline lists what happened instead.)\n"
    );
    for m in messages {
        match m {
            Message::User { content, .. } => {
                text.push_str(&format!("- user: {}\n", crate::bounded::head(content, 300)));
            }
            Message::Assistant { tool_calls, .. } => {
                for c in tool_calls {
                    text.push_str(&format!(
                        "- called {}({})\n",
                        c.name,
                        crate::bounded::head(&c.arguments.to_string(), 200)
                    ));
                }
            }
            Message::System { .. } | Message::Tool { .. } => {}
        }
    }
    text
}

#[derive(Debug, Default)]
struct State {
    record: Option<CompactionRecord>,
    loaded: bool,
}

/// The compaction owner.
#[derive(Debug, Default)]
pub struct CompactionHook {
    state: Mutex<State>,
    listener: Option<CompactionListener>,
}

impl CompactionHook {
    pub fn new(listener: Option<CompactionListener>) -> CompactionHook {
        CompactionHook {
            state: Mutex::default(),
            listener,
        }
    }

    fn record(&self, artifacts_dir: &Path) -> Option<CompactionRecord> {
        let mut s = match self.state.lock() {
            Ok(s) => s,
            Err(poisoned) => poisoned.into_inner(),
        };
        if !s.loaded {
            s.loaded = true;
            s.record = CompactionRecord::load(artifacts_dir);
        }
        s.record.clone()
    }

    fn store(&self, record: CompactionRecord) {
        let mut s = match self.state.lock() {
            Ok(s) => s,
            Err(poisoned) => poisoned.into_inner(),
        };
        s.record = Some(record);
        s.loaded = true;
    }

    async fn run(&self, ctx: &HookContext<'_>, call: &mut ModelCall) {
        let presentation = |name: &str| {
            ctx.tools
                .get(name)
                .map(|t| t.definition.behavior.presentation)
        };
        let previous = self.record(ctx.artifacts_dir);
        let threshold = threshold_tokens(ctx.context_window);
        let forced = call.context_exceeded;
        // The view as it would be sent: the stored summary applied and old
        // results projected (projection runs after this owner).
        let mut view = call.request.messages.clone();
        let prev_end = previous.as_ref().and_then(|r| find_boundary(&view, r));
        if let Some(r) = &previous
            && prev_end.is_some()
        {
            apply(&mut view, r);
        }
        let head = head_bytes(call);
        let raw_tokens = estimate_tokens_after(head, &view);
        let over = raw_tokens >= threshold && {
            let mut projected = view.clone();
            projection::project(
                &mut projected,
                projection::keep_recent_batches(ctx.mode()),
                presentation,
                &call.result_metadata,
            );
            estimate_tokens_after(head, &projected) >= threshold
        };
        if !over && !forced {
            call.request.messages = view;
            return;
        }
        // A new compaction over the original messages.
        let messages = &call.request.messages;
        let start = prev_end.unwrap_or(0);
        let mut keep = keep_recent_turns(ctx.mode());
        let split = loop {
            match split_point(messages, keep) {
                Some(s) if s > start || keep <= 1 => break Some(s),
                Some(_) | None if keep > 1 => keep -= 1,
                Some(_) | None => break None,
            }
        };
        let Some(split) = split.filter(|&s| s > start) else {
            call.request.messages = view;
            return;
        };
        if split - start < MIN_NEW_MESSAGES && !forced {
            call.request.messages = view;
            return;
        }
        // An activation dropped before stays dropped: the skill runtime was
        // told, and may load it again.
        let already_dropped: BTreeSet<&str> = previous
            .as_ref()
            .map(|r| r.dropped_skill_calls.iter().map(String::as_str).collect())
            .unwrap_or_default();
        let groups: Vec<Group> = skill_groups(messages, split, &presentation)
            .into_iter()
            .filter(|g| {
                !g.skill_calls
                    .iter()
                    .any(|c| already_dropped.contains(c.as_str()))
            })
            .collect();
        let (kept, dropped) = select_durable(&groups);
        let protected_idx: BTreeSet<usize> = kept
            .iter()
            .flat_map(|g| std::iter::once(g.assistant).chain(g.results.iter().copied()))
            .collect();
        // Every dropped group was never summarized if it had been
        // protected before; summarize the new part without kept groups.
        let to_summarize: Vec<&Message> = (start..split)
            .filter(|i| !protected_idx.contains(i))
            .map(|i| &messages[i])
            .collect();
        let latest_request = messages[..split]
            .iter()
            .rev()
            .find_map(|m| match m {
                Message::User { content, .. } if !content.starts_with(COMPACTED_HEADER) => {
                    Some(crate::bounded::head(content, LATEST_REQUEST_MAX_CHARS).to_owned())
                }
                _ => None,
            })
            .or_else(|| previous.as_ref().and_then(|r| r.latest_request.clone()));
        let window_bytes = ctx
            .context_window
            .map_or(400_000, |w| (w as usize).saturating_mul(4));
        let max_tokens = ctx.context_window.map_or(SUMMARY_MAX_TOKENS, |w| {
            (w / 8).clamp(256, u64::from(SUMMARY_MAX_TOKENS)) as u32
        });
        let prev_summary = previous.as_ref().map(|r| r.summary.as_str());
        let mut budget = window_bytes / 2;
        let mut outcome = Err(String::from("not attempted"));
        for _ in 0..2 {
            let input = render_for_summary(prev_summary, &to_summarize, budget);
            match summarize(call, ctx.model, ctx.mode(), input, max_tokens).await {
                Ok(s) if !s.trim().is_empty() => {
                    outcome = Ok(s);
                    break;
                }
                Ok(_) => {
                    outcome = Err("the model answered with an empty summary".into());
                    break;
                }
                Err(ProviderError::ContextExceeded { detail, .. }) => {
                    outcome = Err(format!("the summarizer's input was too long: {detail}"));
                    budget /= 2;
                }
                Err(e) => {
                    outcome = Err(e.to_string());
                    break;
                }
            }
        }
        let (summary, source) = match outcome {
            Ok(s) => (s, SummarySource::Model),
            Err(e) => {
                ctx.warn(
                    "compaction/summary-failed",
                    format!("the model could not summarize earlier messages ({e}); an outline of them stands in"),
                );
                let mut text = prev_summary.map(|p| format!("{p}\n\n")).unwrap_or_default();
                text.push_str(&fallback_summary(&to_summarize, &e));
                (text, SummarySource::Fallback)
            }
        };
        let mut all_dropped: Vec<String> = previous
            .as_ref()
            .map(|r| r.dropped_skill_calls.clone())
            .unwrap_or_default();
        all_dropped.extend(dropped.iter().cloned());
        let compacted = Compacted {
            reason: if forced {
                CompactionReason::ContextExceeded
            } else {
                CompactionReason::PromptSize
            },
            covered_messages: split,
            kept_skill_calls: kept
                .iter()
                .flat_map(|g| g.skill_calls.iter().cloned())
                .collect(),
            dropped_skill_calls: dropped,
            summary_source: source,
        };
        let record = CompactionRecord {
            version: RECORD_VERSION,
            covered_messages: split,
            anchor_sha256: message_sha(&messages[split - 1]),
            summary,
            latest_request,
            protected_groups: kept.iter().map(|g| g.first_call.clone()).collect(),
            dropped_skill_calls: all_dropped,
            compactions: previous.as_ref().map_or(0, |r| r.compactions) + 1,
            last: compacted.clone(),
        };
        if let Err(e) = record.save(ctx.artifacts_dir) {
            ctx.warn(
                "compaction/persist-failed",
                format!("cannot save the compaction ({e}); it will be redone after a restart"),
            );
        }
        let mut messages = std::mem::take(&mut call.request.messages);
        apply(&mut messages, &record);
        call.request.messages = messages;
        self.store(record);
        if let Some(l) = &self.listener {
            (l.0)(&compacted);
        }
        call.compacted = Some(compacted);
    }
}

impl Hook for CompactionHook {
    fn before_model<'a>(
        &'a self,
        ctx: &'a HookContext<'a>,
        call: &'a mut ModelCall,
    ) -> HookFuture<'a> {
        Box::pin(async move {
            self.run(ctx, call).await;
            Ok(())
        })
    }
}

/// The ids of skill activations a persisted compaction dropped, for a
/// resumed session's skill runtime.
pub fn dropped_skill_calls(artifacts_dir: &Path) -> Vec<String> {
    CompactionRecord::load(artifacts_dir)
        .map(|r| r.dropped_skill_calls)
        .unwrap_or_default()
}

/// Where a session's compaction record lives.
pub fn record_path(artifacts_dir: &Path) -> PathBuf {
    artifacts_dir.join(RECORD_FILE)
}

/// Skill groups of a message list, keyed by first call id, for tests and
/// inspection: `(first call id, skill call ids)`.
pub fn skill_activation_groups(
    messages: &[Message],
    presentation: &dyn Fn(&str) -> Option<Presentation>,
) -> HashMap<String, Vec<String>> {
    skill_groups(messages, messages.len(), presentation)
        .into_iter()
        .map(|g| (g.first_call, g.skill_calls))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use evoflux_model::ToolCall;
    use serde_json::json;

    fn pres(name: &str) -> Option<Presentation> {
        match name {
            "skill" => Some(Presentation::Skill),
            _ => Some(Presentation::None),
        }
    }

    fn group(id: &str, tool: &str, result: &str) -> Vec<Message> {
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

    #[test]
    fn threshold_follows_the_window() {
        assert_eq!(threshold_tokens(Some(8192)), 6144);
        assert_eq!(threshold_tokens(Some(2_000_000)), MAX_THRESHOLD_TOKENS);
        assert_eq!(threshold_tokens(None), UNKNOWN_WINDOW_THRESHOLD_TOKENS);
    }

    #[test]
    fn durable_budget_keeps_newest_whole_groups() {
        let mut m = vec![Message::user("go")];
        m.extend(group("s_old", "skill", &"o".repeat(60_000)));
        m.extend(group("g1", "grep", "x"));
        m.extend(group("s_new", "skill", &"n".repeat(60_000)));
        let groups = skill_groups(&m, m.len(), &pres);
        assert_eq!(groups.len(), 2);
        let (kept, dropped) = select_durable(&groups);
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].first_call, "s_new");
        assert_eq!(dropped, ["s_old"]);
    }

    #[test]
    fn splits_only_before_assistant_messages_and_applies_by_anchor() {
        let mut m = vec![Message::user("go")];
        for i in 0..6 {
            m.extend(group(&format!("c{i}"), "grep", "r"));
        }
        let split = split_point(&m, 2).unwrap();
        assert!(matches!(m[split], Message::Assistant { .. }));
        let record = CompactionRecord {
            version: RECORD_VERSION,
            covered_messages: split,
            anchor_sha256: message_sha(&m[split - 1]),
            summary: "S".into(),
            latest_request: Some("go".into()),
            protected_groups: vec!["c1".into()],
            dropped_skill_calls: vec![],
            compactions: 1,
            last: Compacted {
                reason: CompactionReason::PromptSize,
                covered_messages: split,
                kept_skill_calls: vec![],
                dropped_skill_calls: vec![],
                summary_source: SummarySource::Model,
            },
        };
        // A message inserted before the boundary does not lose it.
        let mut shifted = m.clone();
        shifted.insert(1, Message::user("injected"));
        for msgs in [&mut m.clone(), &mut shifted] {
            assert!(apply(msgs, &record));
            assert!(
                matches!(&msgs[0], Message::User { content, .. } if content.starts_with(COMPACTED_HEADER))
            );
            // The protected group c1 survives whole, then the recent turns.
            assert!(
                matches!(&msgs[1], Message::Assistant { tool_calls, .. } if tool_calls[0].id == "c1")
            );
            assert!(matches!(&msgs[2], Message::Tool { tool_call_id, .. } if tool_call_id == "c1"));
            assert!(
                matches!(&msgs[3], Message::Assistant { tool_calls, .. } if tool_calls[0].id == "c4")
            );
            assert_eq!(msgs.len(), 3 + 4);
        }
    }
}
