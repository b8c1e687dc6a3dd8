//! Anthropic Messages API with SSE streaming.
//!
//! Request: `POST {base_url}/v1/messages` with `x-api-key`,
//! `anthropic-version: 2023-06-01` and `stream: true`. System messages go
//! to the top-level `system` field; tool results travel as `tool_result`
//! blocks inside a user message, and consecutive messages of one role are
//! merged because the API expects user and assistant turns to alternate.
//!
//! Response events: `message_start` (input usage), `content_block_start`
//! (`text` or `tool_use`), `content_block_delta` (`text_delta`,
//! `input_json_delta`), `content_block_stop`, `message_delta` (stop reason
//! and output usage), `message_stop`, plus `ping` and `error`.
//!
//! Web search is the server's own tool (`web_search_20250305`), offered
//! when the request asks for it: its `server_tool_use` and
//! `web_search_tool_result` blocks become [`ProviderItem`]s kept verbatim
//! on the assistant message and sent back in its turn, as the API wants,
//! and the search and the text's `citations_delta`s are shown as a
//! [`WebSearch`] and [`Citation`]s.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use evoflux_core::config::{ProviderConfig, ProviderKind};
use serde_json::{Value, json};
use sse_stream::Sse;

use crate::assemble::ToolCallAssembler;
use crate::error::{ProviderError, SetupError};
use crate::event::{StopReason, StreamEvent, Usage};
use crate::http::{ApiError, Endpoint, SseClient, SseDecoder, SseWire};
use crate::message::{
    CacheRetention, Media, MediaKind, Message, ProviderItem, ProviderToolKind, Request, ToolChoice,
    WebSearch,
};
use crate::provider::{EventStream, Provider, ProviderOptions};

/// The API version this module speaks.
pub const API_VERSION: &str = "2023-06-01";
/// `max_tokens` is mandatory for Anthropic; used when the request has none.
pub const DEFAULT_MAX_TOKENS: u32 = 4096;
/// The server web-search tool's version this module speaks.
pub const WEB_SEARCH_TOOL: &str = "web_search_20250305";
/// Searches one answer may run: enough to compare a few sources, few
/// enough that one question cannot run up the search bill.
pub const WEB_SEARCH_MAX_USES: u32 = 5;
/// What the Messages API runs on its own side.
const PROVIDER_TOOLS: &[ProviderToolKind] = &[ProviderToolKind::WebSearch];

/// An Anthropic Messages provider.
#[derive(Debug)]
pub struct AnthropicProvider {
    http: SseClient,
}

impl AnthropicProvider {
    pub fn new(
        name: &str,
        base_url: String,
        config: &ProviderConfig,
        options: &ProviderOptions,
    ) -> Result<Self, SetupError> {
        Ok(AnthropicProvider {
            http: SseClient::new(name, &base_url, "v1/messages", config, options)?,
        })
    }
}

impl Provider for AnthropicProvider {
    fn name(&self) -> &str {
        self.http.name()
    }

    fn kind(&self) -> ProviderKind {
        ProviderKind::Anthropic
    }

    fn context_window(&self) -> Option<u64> {
        self.http.context_window()
    }

    fn provider_tools(&self) -> &[ProviderToolKind] {
        PROVIDER_TOOLS
    }

    fn stream(&self, request: Request) -> EventStream {
        let request = self.http.fit_media(request);
        let wire = SseWire {
            headers: &[("anthropic-version", API_VERSION)],
            auth: |builder, key| builder.header("x-api-key", key),
            decoder: MessagesDecoder::new,
        };
        self.http.stream(wire, || request_body(&request))
    }
}

/// Prompt caching: a breakpoint caches everything before it (tools, then
/// system, then messages). The tools and the system prompt are byte-stable
/// within a session, and the system prompt comes after the tools, so one
/// breakpoint on the system prompt serves both. One ends the newest
/// message, so the next call reads the whole conversation from the cache;
/// one ends the user message before it, which the newest breakpoint wrote
/// on the previous call — a hit even when more than the API's 20 blocks of
/// lookback came since. Where the harness names an anchor (the end of the
/// history's part already turned into receipts, [`Request::cache`]), one
/// ends it, so the next rewrite of the history reads up to there instead
/// of back to the system prompt. The tools get their own only when there
/// is no system prompt. Four is the API's limit.
pub const MAX_CACHE_BREAKPOINTS: usize = 4;

/// A breakpoint's marker: the provider's default lifetime, or its hour
/// for a session whose pauses outlive five minutes. A longer-lived entry
/// must come before a shorter one, so only the stable part (tools,
/// system, anchor) gets the hour.
fn ephemeral(retention: CacheRetention) -> Value {
    match retention {
        CacheRetention::Short => json!({"type": "ephemeral"}),
        CacheRetention::Long => json!({"type": "ephemeral", "ttl": "1h"}),
    }
}

/// Marks the last block of the newest message, of the user message before
/// it and of the anchor (`anchor`: an index into `messages`): three at
/// most.
fn mark_conversation(messages: &mut [Value], anchor: Option<usize>, retention: CacheRetention) {
    let users: Vec<usize> = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m["role"] == "user")
        .map(|(i, _)| i)
        .collect();
    let newest = messages.len().checked_sub(1);
    let previous_user = users.iter().rev().copied().find(|&i| Some(i) != newest);
    let long_until = anchor.filter(|_| retention == CacheRetention::Long);
    let mut marks: Vec<usize> = [anchor, previous_user, newest]
        .into_iter()
        .flatten()
        .collect();
    marks.sort_unstable();
    marks.dedup();
    for i in marks {
        let marker = match long_until {
            Some(a) if i <= a => ephemeral(CacheRetention::Long),
            _ => ephemeral(CacheRetention::Short),
        };
        if let Some(block) = messages[i]["content"]
            .as_array_mut()
            .and_then(|c| c.last_mut())
        {
            block["cache_control"] = marker;
        }
    }
}

/// An answer's text with its server-tool blocks given back verbatim where
/// they streamed: the text before a search, the search and its result,
/// the text after. A paused turn continues from the last block, so the
/// order is the API's, not ours. An offset the text no longer has (the
/// message was edited) puts the block after the text.
fn text_and_server_blocks(content: &str, items: &[ProviderItem]) -> Vec<Value> {
    let mut blocks = Vec::new();
    let mut at = 0;
    for item in items {
        let (block, offset) = match item {
            ProviderItem::AnthropicBlock { block, text_offset } => (block, *text_offset),
            ProviderItem::Reasoning { .. }
            | ProviderItem::WebSearch(_)
            | ProviderItem::Citation(_) => {
                continue;
            }
        };
        let cut = if content.is_char_boundary(offset) {
            offset.max(at)
        } else {
            content.len()
        };
        if cut > at {
            blocks.push(json!({"type": "text", "text": &content[at..cut]}));
        }
        blocks.push(block.clone());
        at = cut;
    }
    if at < content.len() {
        blocks.push(json!({"type": "text", "text": &content[at..]}));
    }
    blocks
}

/// A text block (unless empty: the API refuses empty text blocks) and one
/// `image` block per image. The Messages API has no audio block, so
/// [`crate::media::fit`] leaves no clip here; one that still arrives is
/// named in text, never dropped.
fn with_media(content: &str, media: &[Media]) -> Vec<Value> {
    let mut blocks = Vec::with_capacity(media.len() + 1);
    if !content.is_empty() {
        blocks.push(json!({"type": "text", "text": content}));
    }
    for m in media {
        blocks.push(match m.kind {
            MediaKind::Image => json!({
                "type": "image",
                "source": {"type": "base64", "media_type": m.mime_type, "data": m.data},
            }),
            MediaKind::Audio => json!({
                "type": "text",
                "text": m.placeholder("the Messages API takes no audio"),
            }),
        });
    }
    blocks
}

/// The JSON body of a streaming Messages request.
pub fn request_body(request: &Request) -> Value {
    let mut system: Vec<&str> = Vec::new();
    let mut messages: Vec<(&'static str, Vec<Value>)> = Vec::new();
    // The Messages API message that holds the anchor's last block.
    let mut anchor = None;
    for (index, m) in request.messages.iter().enumerate() {
        let (role, blocks) = match m {
            Message::System { content } => {
                system.push(content);
                continue;
            }
            Message::User { content, media } if media.is_empty() => {
                ("user", vec![json!({"type": "text", "text": content})])
            }
            Message::User { content, media } => ("user", with_media(content, media)),
            Message::Assistant {
                content,
                tool_calls,
                provider_items,
            } => {
                let mut blocks = text_and_server_blocks(content, provider_items);
                for c in tool_calls {
                    blocks.push(json!({
                        "type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments,
                    }));
                }
                ("assistant", blocks)
            }
            Message::Tool {
                tool_call_id,
                content,
                is_error,
                media,
            } => {
                // A tool result holds text and image blocks alike.
                let content = if media.is_empty() {
                    json!(content)
                } else {
                    Value::Array(with_media(content, media))
                };
                let mut block = json!({
                    "type": "tool_result", "tool_use_id": tool_call_id, "content": content,
                });
                if *is_error {
                    block["is_error"] = json!(true);
                }
                ("user", vec![block])
            }
        };
        // The API rejects empty content, and an empty assistant turn says
        // nothing anyway.
        if blocks.is_empty() {
            continue;
        }
        match messages.last_mut() {
            Some((last, existing)) if *last == role => existing.extend(blocks),
            _ => messages.push((role, blocks)),
        }
        if request.cache.anchor == Some(index) {
            anchor = messages.len().checked_sub(1);
        }
    }
    let messages: Vec<Value> = messages
        .into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect();
    let mut body = json!({
        "model": request.model,
        "max_tokens": request.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
        "stream": true,
        "messages": messages,
    });
    let retention = request.cache.retention;
    if !system.is_empty() {
        body["system"] = json!([{
            "type": "text",
            "text": system.join("\n\n"),
            "cache_control": ephemeral(retention),
        }]);
    }
    if let Some(messages) = body["messages"].as_array_mut() {
        // An anchor in the newest message is no anchor: it moves on.
        let anchor = anchor.filter(|&a| a + 1 < messages.len());
        mark_conversation(messages, anchor, retention);
    }
    if !request.tools.is_empty() || !request.provider_tools.is_empty() {
        let mut tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| {
                json!({"name": t.name, "description": t.description, "input_schema": t.parameters})
            })
            .collect();
        for kind in &request.provider_tools {
            match kind {
                ProviderToolKind::WebSearch => tools.push(json!({
                    "type": WEB_SEARCH_TOOL,
                    "name": "web_search",
                    "max_uses": WEB_SEARCH_MAX_USES,
                })),
            }
        }
        // The system prompt's breakpoint covers the tools too (they come
        // first); they get their own only without one, and the
        // conversation's three at most leave room for it.
        if let Some(last) = tools.last_mut()
            && system.is_empty()
        {
            last["cache_control"] = ephemeral(retention);
        }
        body["tools"] = Value::Array(tools);
        match request.tool_choice {
            ToolChoice::Auto => {}
            ToolChoice::Required => body["tool_choice"] = json!({"type": "any"}),
        }
    }
    if let Some(t) = request.temperature {
        body["temperature"] = json!(t);
    }
    body
}

/// Decodes Messages stream events.
#[derive(Debug)]
pub(crate) struct MessagesDecoder {
    endpoint: Endpoint,
    calls: ToolCallAssembler,
    /// Content-block indexes that are `tool_use` blocks.
    tool_blocks: BTreeSet<u32>,
    /// Open `server_tool_use` blocks by index: the block as started and
    /// its input text so far.
    server_blocks: BTreeMap<u32, (Value, String)>,
    /// Bytes of text streamed so far: where each server-tool block stands
    /// in the answer's text.
    text_len: usize,
    /// Queries of finished `server_tool_use` blocks, by their id, for the
    /// result block that answers them.
    queries: BTreeMap<String, String>,
    any_calls: bool,
    usage: Usage,
    saw_usage: bool,
    stop: Option<StopReason>,
    started: bool,
}

impl MessagesDecoder {
    pub fn new(endpoint: Endpoint) -> Self {
        MessagesDecoder {
            endpoint,
            calls: ToolCallAssembler::default(),
            tool_blocks: BTreeSet::new(),
            server_blocks: BTreeMap::new(),
            text_len: 0,
            queries: BTreeMap::new(),
            any_calls: false,
            usage: Usage::default(),
            saw_usage: false,
            stop: None,
            started: false,
        }
    }

    fn stop_reason(&self, reason: &str) -> StopReason {
        match reason {
            "end_turn" => StopReason::EndTurn,
            "tool_use" => StopReason::ToolUse,
            "max_tokens" | "model_context_window_exceeded" => StopReason::MaxTokens,
            "stop_sequence" => StopReason::StopSequence,
            "refusal" => StopReason::ContentFilter,
            // The server's own tool loop stopped for breath; calls of ours
            // run first, and the next request goes on with the turn.
            "pause_turn" if !self.any_calls => StopReason::Paused,
            // Reasons added later: the calls decide.
            _ if self.any_calls => StopReason::ToolUse,
            _ => StopReason::EndTurn,
        }
    }

    /// Anthropic counts cache reads and writes apart from `input_tokens`;
    /// ours include them so input is the whole prompt.
    fn read_usage(&mut self, u: &Value) {
        let n = |k: &str| u.get(k).and_then(Value::as_u64);
        let cache_read = n("cache_read_input_tokens");
        let cache_write = n("cache_creation_input_tokens");
        if let Some(input) = n("input_tokens") {
            self.usage.input_tokens = input + cache_read.unwrap_or(0) + cache_write.unwrap_or(0);
            self.saw_usage = true;
        }
        if let Some(read) = cache_read {
            self.usage.cached_input_tokens = read;
        }
        if let Some(write) = cache_write {
            self.usage.cache_write_input_tokens = write;
        }
        if let Some(out) = n("output_tokens") {
            self.usage.output_tokens = out;
            self.saw_usage = true;
        }
        if let Some(searches) = u
            .pointer("/server_tool_use/web_search_requests")
            .and_then(Value::as_u64)
        {
            self.usage.web_search_requests = searches;
        }
    }

    /// A finished `server_tool_use` block: kept verbatim (its input
    /// parsed) for the next request, and its query remembered for the
    /// result. Input that is not JSON stays empty: the block is the
    /// server's, and the result block says what happened.
    fn server_block_done(
        &mut self,
        mut block: Value,
        input: &str,
        out: &mut VecDeque<StreamEvent>,
    ) {
        if !input.trim().is_empty()
            && let Ok(parsed) = serde_json::from_str::<Value>(input)
        {
            block["input"] = parsed;
        }
        if let (Some(id), Some(query)) = (
            block.get("id").and_then(Value::as_str),
            block.pointer("/input/query").and_then(Value::as_str),
        ) {
            self.queries.insert(id.to_owned(), query.to_owned());
        }
        out.push_back(StreamEvent::ProviderItem {
            item: ProviderItem::AnthropicBlock {
                block,
                text_offset: self.text_len,
            },
        });
    }

    /// A `web_search_tool_result` block (it arrives whole): kept verbatim
    /// for the next request, and shown as the search it answers.
    fn search_result(&mut self, block: &Value, out: &mut VecDeque<StreamEvent>) {
        let id = block
            .get("tool_use_id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let content = block.get("content");
        // A list of results, or an error object (`error_code`).
        let sources = crate::web_wire::sources(content);
        let error = content
            .and_then(|c| c.get("error_code"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        out.push_back(StreamEvent::ProviderItem {
            item: ProviderItem::AnthropicBlock {
                block: block.clone(),
                text_offset: self.text_len,
            },
        });
        out.push_back(StreamEvent::ProviderItem {
            item: ProviderItem::WebSearch(WebSearch {
                query: self.queries.get(&id).cloned(),
                id,
                sources,
                error,
            }),
        });
    }

    fn index(&self, v: &Value) -> Result<u32, ProviderError> {
        v.get("index")
            .and_then(Value::as_u64)
            .and_then(|i| u32::try_from(i).ok())
            .ok_or_else(|| {
                self.endpoint
                    .protocol("content block event without an index")
            })
    }
}

impl SseDecoder for MessagesDecoder {
    fn event(&mut self, sse: Sse, out: &mut VecDeque<StreamEvent>) -> Result<(), ProviderError> {
        let Some(data) = sse.data else {
            return Ok(());
        };
        let v: Value = serde_json::from_str(&data).map_err(|e| {
            self.endpoint
                .protocol(format!("event is not JSON ({e}): {data}"))
        })?;
        let kind = v
            .get("type")
            .and_then(Value::as_str)
            .or(sse.event.as_deref())
            .unwrap_or_default()
            .to_owned();
        match kind.as_str() {
            "message_start" => {
                self.started = true;
                if let Some(u) = v.pointer("/message/usage") {
                    self.read_usage(u);
                }
            }
            "content_block_start" => {
                let index = self.index(&v)?;
                let block = v.get("content_block").unwrap_or(&Value::Null);
                match block.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        if let Some(text) = block.get("text").and_then(Value::as_str)
                            && !text.is_empty()
                        {
                            self.text_len += text.len();
                            out.push_back(StreamEvent::TextDelta {
                                text: text.to_owned(),
                            });
                        }
                    }
                    Some("server_tool_use") => {
                        self.server_blocks
                            .insert(index, (block.clone(), String::new()));
                    }
                    Some("web_search_tool_result") => self.search_result(block, out),
                    Some("tool_use") => {
                        let id = block.get("id").and_then(Value::as_str);
                        let name = block.get("name").and_then(Value::as_str);
                        self.tool_blocks.insert(index);
                        self.any_calls = true;
                        self.calls.push(index, id, name, "");
                        out.push_back(StreamEvent::ToolCallDelta {
                            index,
                            id: id.map(str::to_owned),
                            name: name.map(str::to_owned),
                            arguments: String::new(),
                        });
                    }
                    // Thinking blocks (never asked for) and block types
                    // added after this was written.
                    _ => {}
                }
            }
            "content_block_delta" => {
                let index = self.index(&v)?;
                let delta = v.get("delta").unwrap_or(&Value::Null);
                match delta.get("type").and_then(Value::as_str) {
                    Some("text_delta") => {
                        let text = delta
                            .get("text")
                            .and_then(Value::as_str)
                            .unwrap_or_default();
                        if !text.is_empty() {
                            self.text_len += text.len();
                            out.push_back(StreamEvent::TextDelta {
                                text: text.to_owned(),
                            });
                        }
                    }
                    Some("input_json_delta") if self.server_blocks.contains_key(&index) => {
                        let part = delta
                            .get("partial_json")
                            .and_then(Value::as_str)
                            .unwrap_or_default();
                        if let Some((_, input)) = self.server_blocks.get_mut(&index) {
                            input.push_str(part);
                        }
                    }
                    Some("citations_delta") => {
                        if let Some(citation) =
                            delta.get("citation").and_then(crate::web_wire::citation)
                        {
                            out.push_back(StreamEvent::ProviderItem {
                                item: ProviderItem::Citation(citation),
                            });
                        }
                    }
                    Some("input_json_delta") => {
                        if !self.tool_blocks.contains(&index) {
                            return Err(self.endpoint.protocol(format!(
                                "input_json_delta for block {index}, which is not a tool_use block"
                            )));
                        }
                        let part = delta
                            .get("partial_json")
                            .and_then(Value::as_str)
                            .unwrap_or_default();
                        self.calls.push(index, None, None, part);
                        out.push_back(StreamEvent::ToolCallDelta {
                            index,
                            id: None,
                            name: None,
                            arguments: part.to_owned(),
                        });
                    }
                    _ => {}
                }
            }
            "content_block_stop" => {
                let index = self.index(&v)?;
                if let Some((block, input)) = self.server_blocks.remove(&index) {
                    self.server_block_done(block, &input, out);
                }
                if self.tool_blocks.remove(&index)
                    && let Some(call) = self.calls.finish(index)
                {
                    out.push_back(call.map_err(|e| self.endpoint.protocol(e))?);
                }
            }
            "message_delta" => {
                if let Some(reason) = v.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop = Some(self.stop_reason(reason));
                }
                if let Some(u) = v.get("usage") {
                    self.read_usage(u);
                }
            }
            "message_stop" => {
                // Blocks left open would be a server bug; finish them anyway.
                for call in self.calls.finish_all() {
                    out.push_back(call.map_err(|e| self.endpoint.protocol(e))?);
                }
                if self.saw_usage {
                    out.push_back(StreamEvent::Usage { usage: self.usage });
                }
                let reason = self.stop.unwrap_or(if self.any_calls {
                    StopReason::ToolUse
                } else {
                    StopReason::EndTurn
                });
                out.push_back(StreamEvent::Stop { reason });
                out.push_back(StreamEvent::Done);
            }
            "error" => {
                return Err(ApiError::from_body(None, &data).classify(&self.endpoint));
            }
            // `ping`, and event types added after this was written.
            _ => {}
        }
        Ok(())
    }

    fn end(&mut self, _out: &mut VecDeque<StreamEvent>) -> Result<(), ProviderError> {
        let what = if self.started {
            "the stream ended before message_stop"
        } else {
            "the stream ended before message_start"
        };
        Err(self.endpoint.protocol(what))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{Citation, ToolCall};

    fn breakpoints(body: &Value) -> usize {
        fn count(v: &Value) -> usize {
            match v {
                Value::Object(o) => {
                    usize::from(o.contains_key("cache_control"))
                        + o.values().map(count).sum::<usize>()
                }
                Value::Array(a) => a.iter().map(count).sum(),
                _ => 0,
            }
        }
        count(body)
    }

    #[test]
    fn a_long_session_stays_within_the_breakpoint_limit_and_its_prefix_is_stable() {
        let tools = vec![
            crate::message::ToolDefinition {
                name: "read".into(),
                description: "read".into(),
                parameters: json!({"type": "object"}),
            },
            crate::message::ToolDefinition {
                name: "ls".into(),
                description: "list".into(),
                parameters: json!({"type": "object"}),
            },
        ];
        let mut messages = vec![Message::system("sys"), Message::user("go")];
        let mut previous: Option<Value> = None;
        for i in 0..30 {
            messages.push(Message::Assistant {
                provider_items: Vec::new(),
                content: String::new(),
                tool_calls: vec![ToolCall {
                    id: format!("t{i}"),
                    name: "read".into(),
                    arguments: json!({"i": i}),
                }],
            });
            messages.push(Message::tool_result(format!("t{i}"), "x".repeat(100)));
            let body = request_body(&Request::new("m", messages.clone()).with_tools(tools.clone()));
            assert!(breakpoints(&body) <= MAX_CACHE_BREAKPOINTS, "call {i}");
            // The tools and system prompt, breakpoints included, are the
            // same bytes on every call: the cached prefix never churns.
            if let Some(p) = &previous {
                assert_eq!(p["tools"], body["tools"]);
                assert_eq!(p["system"], body["system"]);
            }
            previous = Some(body);
        }
        let last = previous.unwrap_or_default();
        let msgs = last["messages"].as_array().cloned().unwrap_or_default();
        let marked: Vec<usize> = msgs
            .iter()
            .enumerate()
            .filter(|(_, m)| breakpoints(m) > 0)
            .map(|(i, _)| i)
            .collect();
        assert_eq!(
            marked,
            [msgs.len() - 3, msgs.len() - 1],
            "the previous user message and the newest"
        );
    }

    #[test]
    fn the_anchor_gets_a_breakpoint_and_the_long_lifetime_covers_the_stable_part() {
        let mut messages = vec![Message::system("sys"), Message::user("go")];
        for i in 0..6 {
            messages.push(Message::tool_calls(
                "",
                vec![ToolCall {
                    id: format!("t{i}"),
                    name: "read".into(),
                    arguments: json!({}),
                }],
            ));
            messages.push(Message::tool_result(format!("t{i}"), "x"));
        }
        let tools = vec![crate::message::ToolDefinition {
            name: "read".into(),
            description: "read".into(),
            parameters: json!({"type": "object"}),
        }];
        let mut request = Request::new("m", messages).with_tools(tools);
        // The result of t2 (index 7 with the system message first).
        request.cache.anchor = Some(7);
        let short = request_body(&request);
        assert_eq!(breakpoints(&short), MAX_CACHE_BREAKPOINTS);
        let msgs = short["messages"].as_array().cloned().unwrap_or_default();
        let marked: Vec<usize> = msgs
            .iter()
            .enumerate()
            .filter(|(_, m)| breakpoints(m) > 0)
            .map(|(i, _)| i)
            .collect();
        // go, then (assistant, tool results) pairs: t2's results are
        // message 6.
        assert_eq!(marked, [6, msgs.len() - 3, msgs.len() - 1]);
        assert!(short["tools"][0].get("cache_control").is_none());
        assert!(!short.to_string().contains("1h"));

        request.cache.retention = CacheRetention::Long;
        let long = request_body(&request);
        assert_eq!(long["system"][0]["cache_control"]["ttl"], "1h");
        let ttl = |m: usize| {
            long["messages"][m]["content"]
                .as_array()
                .and_then(|c| c.last())
                .map(|b| b["cache_control"]["ttl"].clone())
        };
        assert_eq!(ttl(6), Some(json!("1h")));
        // After the anchor the default lifetime: a longer-lived entry
        // must come before a shorter one.
        assert_eq!(ttl(msgs.len() - 1), Some(Value::Null));
    }

    #[test]
    fn body_merges_roles_and_lifts_system() {
        let req = Request::new(
            "claude-x",
            vec![
                Message::system("a"),
                Message::system("b"),
                Message::user("hi"),
                Message::Assistant {
                    provider_items: Vec::new(),
                    content: "let me look".into(),
                    tool_calls: vec![
                        ToolCall {
                            id: "t1".into(),
                            name: "ls".into(),
                            arguments: json!({}),
                        },
                        ToolCall {
                            id: "t2".into(),
                            name: "ls".into(),
                            arguments: json!({"p": 1}),
                        },
                    ],
                },
                Message::tool_result("t1", "x"),
                Message::Tool {
                    tool_call_id: "t2".into(),
                    content: "boom".into(),
                    is_error: true,
                    media: Vec::new(),
                },
            ],
        );
        let b = request_body(&req);
        assert_eq!(
            b["system"],
            json!([{"type": "text", "text": "a\n\nb", "cache_control": {"type": "ephemeral"}}])
        );
        assert_eq!(b["max_tokens"], json!(DEFAULT_MAX_TOKENS));
        let msgs = b["messages"].as_array().unwrap();
        assert_eq!(msgs.len(), 3);
        assert_eq!(msgs[2]["role"], json!("user"));
        assert_eq!(
            msgs[2]["content"],
            json!([
                {"type": "tool_result", "tool_use_id": "t1", "content": "x"},
                {"type": "tool_result", "tool_use_id": "t2", "content": "boom", "is_error": true,
                 "cache_control": {"type": "ephemeral"}},
            ])
        );
        assert_eq!(msgs[1]["content"][1]["type"], json!("tool_use"));
        assert!(b.get("tools").is_none());
        let mut required = Request::new("m", vec![Message::user("hi")]).with_tools(vec![
            crate::message::ToolDefinition {
                name: "ls".into(),
                description: "list".into(),
                parameters: json!({"type": "object"}),
            },
        ]);
        assert!(request_body(&required).get("tool_choice").is_none());
        required.tool_choice = ToolChoice::Required;
        assert_eq!(
            request_body(&required)["tools"][0]["cache_control"],
            json!({"type": "ephemeral"})
        );
        assert_eq!(
            request_body(&required)["tool_choice"],
            json!({"type": "any"})
        );
    }

    #[test]
    fn server_blocks_go_back_where_they_streamed_even_in_edited_text() {
        let block = |n: u32, text_offset| ProviderItem::AnthropicBlock {
            block: json!({"type": "server_tool_use", "id": n}),
            text_offset,
        };
        let ty = |blocks: &[Value]| -> Vec<String> {
            blocks
                .iter()
                .map(|b| match b["type"].as_str() {
                    Some("text") => format!("text:{}", b["text"].as_str().unwrap_or_default()),
                    _ => format!("block:{}", b["id"]),
                })
                .collect()
        };
        // Before any text, between texts, and after all of it.
        let got = text_and_server_blocks(
            "ab",
            &[
                block(1, 0),
                block(2, 1),
                ProviderItem::Citation(Citation {
                    url: "u".into(),
                    title: None,
                    cited_text: None,
                }),
                block(3, 2),
            ],
        );
        assert_eq!(
            ty(&got),
            ["block:1", "text:a", "block:2", "text:b", "block:3"]
        );
        // An offset past the text, or inside a character, goes after it.
        let got = text_and_server_blocks("é", &[block(1, 1), block(2, 9)]);
        assert_eq!(ty(&got), ["text:é", "block:1", "block:2"]);
    }
}
