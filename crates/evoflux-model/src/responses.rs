//! The OpenAI Responses API with SSE streaming (`kind = "openai"`,
//! `wire_api = "responses"`).
//!
//! Request: `POST {base_url}/responses` with `stream: true` and
//! `store: false`, so the server keeps nothing between calls: every
//! request carries the whole conversation as `input` items, including the
//! reasoning items of earlier answers, by their encrypted content (never
//! by id: nothing is stored to refer to). A request with a reasoning
//! effort, which only reasoning models take, asks for that content with
//! `include: ["reasoning.encrypted_content"]`; one without does not,
//! because models without reasoning (gpt-4o, gpt-4.1) refuse any request
//! that asks (400, "Encrypted content is not supported with this model").
//! The leading system messages become `instructions`; a system message later
//! in the conversation stays an input item where it is, so the prefix of
//! earlier calls never changes. Function tools are sent non-strict (our
//! schemas are not written for strict mode), and `web_search` is the
//! provider-run tool when the request asks for it.
//!
//! Response events: `response.created`, `response.output_item.added` and
//! `.done` (messages, function calls, reasoning and web-search items),
//! `response.output_text.delta` (or `response.refusal.delta`),
//! `response.function_call_arguments.delta`,
//! then exactly one of `response.completed`, `response.incomplete` or
//! `response.failed`; an `error` event may come instead of any of them.

use std::collections::VecDeque;

use evoflux_core::config::{ProviderConfig, ProviderKind, ReasoningEffort};
use serde_json::{Value, json};
use sse_stream::Sse;

use crate::assemble::{ToolCallAssembler, assemble_one};
use crate::error::{ProviderError, SetupError};
use crate::event::{StopReason, StreamEvent, Usage};
use crate::http::{ApiError, Endpoint, SseClient, SseDecoder, SseWire};
use crate::message::{
    Media, MediaKind, Message, ProviderItem, ProviderToolKind, Request, ToolChoice, WebSearch,
};
use crate::provider::{EventStream, Provider, ProviderOptions};

/// What the Responses API runs on its own side.
const PROVIDER_TOOLS: &[ProviderToolKind] = &[ProviderToolKind::WebSearch];

/// A Responses API provider.
#[derive(Debug)]
pub struct ResponsesProvider {
    http: SseClient,
    reasoning_effort: Option<ReasoningEffort>,
}

impl ResponsesProvider {
    pub fn new(
        name: &str,
        base_url: String,
        config: &ProviderConfig,
        options: &ProviderOptions,
    ) -> Result<Self, SetupError> {
        Ok(ResponsesProvider {
            http: SseClient::new(name, &base_url, "responses", config, options)?,
            reasoning_effort: config.reasoning_effort,
        })
    }
}

impl Provider for ResponsesProvider {
    fn name(&self) -> &str {
        self.http.name()
    }

    fn kind(&self) -> ProviderKind {
        ProviderKind::Openai
    }

    fn context_window(&self) -> Option<u64> {
        self.http.context_window()
    }

    fn provider_tools(&self) -> &[ProviderToolKind] {
        PROVIDER_TOOLS
    }

    fn stream(&self, request: Request) -> EventStream {
        let mut request = self.http.fit_media(request);
        if request.reasoning_effort.is_none() {
            request.reasoning_effort = self.reasoning_effort;
        }
        let wire = SseWire {
            headers: &[],
            auth: |builder, key| builder.bearer_auth(key),
            decoder: ResponsesDecoder::new,
        };
        self.http.stream(wire, || request_body(&request))
    }
}

/// The JSON body of a streaming Responses request.
pub fn request_body(request: &Request) -> Value {
    let leading = request
        .messages
        .iter()
        .take_while(|m| matches!(m, Message::System { .. }))
        .count();
    let instructions: Vec<&str> = request.messages[..leading]
        .iter()
        .filter_map(|m| match m {
            Message::System { content } => Some(content.as_str()),
            Message::User { .. } | Message::Assistant { .. } | Message::Tool { .. } => None,
        })
        .collect();
    let mut input = Vec::new();
    for m in &request.messages[leading..] {
        input_items(m, &mut input);
    }
    let mut include = Vec::new();
    if request.reasoning_effort.is_some() {
        include.push(json!("reasoning.encrypted_content"));
    }
    let mut body = json!({
        "model": request.model,
        "input": input,
        "stream": true,
        "store": false,
    });
    if !instructions.is_empty() {
        body["instructions"] = json!(instructions.join("\n\n"));
    }
    let mut tools: Vec<Value> = request
        .tools
        .iter()
        .map(|t| {
            json!({
                "type": "function",
                "name": t.name,
                "description": t.description,
                "parameters": t.parameters,
                "strict": false,
            })
        })
        .collect();
    for kind in &request.provider_tools {
        match kind {
            ProviderToolKind::WebSearch => {
                tools.push(json!({"type": "web_search"}));
                include.push(json!("web_search_call.action.sources"));
            }
        }
    }
    if !tools.is_empty() {
        body["tools"] = Value::Array(tools);
        body["tool_choice"] = json!(match request.tool_choice {
            ToolChoice::Auto => "auto",
            ToolChoice::Required => "required",
        });
    }
    if !include.is_empty() {
        body["include"] = Value::Array(include);
    }
    if let Some(effort) = request.reasoning_effort {
        body["reasoning"] = json!({"effort": effort.as_str()});
    }
    if let Some(max) = request.max_tokens {
        body["max_output_tokens"] = json!(max);
    }
    if let Some(t) = request.temperature {
        body["temperature"] = json!(t);
    }
    if let Some(key) = &request.cache_key {
        body["prompt_cache_key"] = json!(key);
    }
    body
}

/// The input items of one message, in the order the API produced them:
/// reasoning, then text, then function calls.
fn input_items(m: &Message, out: &mut Vec<Value>) {
    match m {
        Message::System { content } => out.push(json!({
            "type": "message", "role": "system",
            "content": [{"type": "input_text", "text": content}],
        })),
        Message::User { content, media } => out.push(json!({
            "type": "message", "role": "user", "content": input_parts(content, media),
        })),
        Message::Assistant {
            content,
            tool_calls,
            provider_items,
        } => {
            for item in provider_items {
                match item {
                    // Without its encrypted content a reasoning item says
                    // nothing the server can use, and its id refers to
                    // nothing stored.
                    ProviderItem::Reasoning {
                        id: _,
                        encrypted_content: Some(encrypted),
                        summary,
                    } => {
                        let summary: Vec<Value> = summary
                            .iter()
                            .map(|s| json!({"type": "summary_text", "text": s}))
                            .collect();
                        out.push(json!({
                            "type": "reasoning",
                            "summary": summary,
                            "encrypted_content": encrypted,
                        }));
                    }
                    ProviderItem::Reasoning {
                        encrypted_content: None,
                        ..
                    }
                    | ProviderItem::AnthropicBlock { .. }
                    | ProviderItem::WebSearch(_)
                    | ProviderItem::Citation(_) => {}
                }
            }
            if !content.is_empty() {
                out.push(json!({
                    "type": "message", "role": "assistant",
                    "content": [{"type": "output_text", "text": content}],
                }));
            }
            for c in tool_calls {
                out.push(json!({
                    "type": "function_call",
                    "call_id": c.id,
                    "name": c.name,
                    "arguments": c.arguments.to_string(),
                }));
            }
        }
        // The Responses API has no error flag on a call's output; the
        // content itself says what went wrong.
        // With media the output is a list of content parts (the API takes
        // `input_text` and `input_image` there); a string otherwise.
        Message::Tool {
            tool_call_id,
            content,
            media,
            is_error: _,
        } => {
            let output = if media.is_empty() {
                json!(content)
            } else {
                Value::Array(input_parts(content, media))
            };
            out.push(json!({
                "type": "function_call_output", "call_id": tool_call_id, "output": output,
            }));
        }
    }
}

/// The text (left out when empty beside media) and the media as input
/// content parts.
fn input_parts(content: &str, media: &[Media]) -> Vec<Value> {
    let mut parts = Vec::with_capacity(media.len() + 1);
    if !content.is_empty() || media.is_empty() {
        parts.push(json!({"type": "input_text", "text": content}));
    }
    parts.extend(media.iter().map(media_part));
    parts
}

/// One input content part for `media`: `input_image` with a data URL. The
/// wire has no audio input, so [`crate::media::fit`] leaves no clip here;
/// one that still arrives is named in text, never dropped.
fn media_part(media: &Media) -> Value {
    match media.kind {
        MediaKind::Image => json!({"type": "input_image", "image_url": media.data_url()}),
        MediaKind::Audio => json!({
            "type": "input_text",
            "text": media.placeholder("the Responses API takes no audio"),
        }),
    }
}

/// Decodes Responses stream events.
#[derive(Debug)]
pub(crate) struct ResponsesDecoder {
    endpoint: Endpoint,
    calls: ToolCallAssembler,
    any_calls: bool,
    /// The answer is a refusal (`refusal` content instead of
    /// `output_text`): its words are the text, and it stops as filtered.
    refused: bool,
    started: bool,
    /// Finished `web_search_call` items: the API bills each, and its usage
    /// object does not count them.
    searches: u64,
}

impl ResponsesDecoder {
    pub fn new(endpoint: Endpoint) -> Self {
        ResponsesDecoder {
            endpoint,
            calls: ToolCallAssembler::default(),
            any_calls: false,
            refused: false,
            started: false,
            searches: 0,
        }
    }

    fn output_index(&self, v: &Value) -> Result<u32, ProviderError> {
        v.get("output_index")
            .and_then(Value::as_u64)
            .and_then(|i| u32::try_from(i).ok())
            .ok_or_else(|| {
                self.endpoint
                    .protocol("output item event without an output_index")
            })
    }

    /// A finished output item: a call, a reasoning item, a web search, or
    /// a message whose annotations cite pages.
    fn item_done(
        &mut self,
        index: u32,
        item: &Value,
        out: &mut VecDeque<StreamEvent>,
    ) -> Result<(), ProviderError> {
        let s = |k: &str| item.get(k).and_then(Value::as_str);
        match s("type") {
            Some("function_call") => {
                // The finished item holds the whole argument text; the
                // deltas were only for display.
                let _ = self.calls.finish(index);
                let (Some(call_id), Some(name)) = (s("call_id"), s("name")) else {
                    return Err(self.endpoint.protocol(format!(
                        "function_call item {index} without call_id or name"
                    )));
                };
                self.any_calls = true;
                out.push_back(assemble_one(
                    call_id,
                    name,
                    s("arguments").unwrap_or_default(),
                ));
            }
            Some("reasoning") => {
                let summary = item
                    .get("summary")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|p| p.get("text").and_then(Value::as_str))
                    .map(str::to_owned)
                    .collect();
                out.push_back(StreamEvent::ProviderItem {
                    item: ProviderItem::Reasoning {
                        id: s("id").unwrap_or_default().to_owned(),
                        encrypted_content: s("encrypted_content").map(str::to_owned),
                        summary,
                    },
                });
            }
            Some("web_search_call") => {
                self.searches += 1;
                let action = item.get("action");
                let sources = crate::web_wire::sources(action.and_then(|a| a.get("sources")));
                let error = (s("status") == Some("failed")).then(|| "failed".to_owned());
                out.push_back(StreamEvent::ProviderItem {
                    item: ProviderItem::WebSearch(WebSearch {
                        id: s("id").unwrap_or_default().to_owned(),
                        query: action
                            .and_then(|a| a.get("query"))
                            .and_then(Value::as_str)
                            .map(str::to_owned),
                        sources,
                        error,
                    }),
                });
            }
            Some("message") => {
                let annotations = item
                    .get("content")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|part| part.get("annotations").and_then(Value::as_array))
                    .flatten();
                for a in annotations {
                    if a.get("type").and_then(Value::as_str) != Some("url_citation") {
                        continue;
                    }
                    if let Some(citation) = crate::web_wire::citation(a) {
                        out.push_back(StreamEvent::ProviderItem {
                            item: ProviderItem::Citation(citation),
                        });
                    }
                }
            }
            // Item types added after this was written.
            _ => {}
        }
        Ok(())
    }

    /// Usage, stop and done, after any call left unfinished.
    fn tail(
        &mut self,
        response: &Value,
        reason: StopReason,
        out: &mut VecDeque<StreamEvent>,
    ) -> Result<(), ProviderError> {
        for call in self.calls.finish_all() {
            self.any_calls = true;
            out.push_back(call.map_err(|e| self.endpoint.protocol(e))?);
        }
        if let Some(u) = response.get("usage").filter(|u| u.is_object()) {
            let n = |p: &str| u.pointer(p).and_then(Value::as_u64).unwrap_or(0);
            out.push_back(StreamEvent::Usage {
                usage: Usage {
                    input_tokens: n("/input_tokens"),
                    output_tokens: n("/output_tokens"),
                    cached_input_tokens: n("/input_tokens_details/cached_tokens"),
                    cache_write_input_tokens: 0,
                    web_search_requests: self.searches,
                },
            });
        }
        out.push_back(StreamEvent::Stop { reason });
        out.push_back(StreamEvent::Done);
        Ok(())
    }

    /// An error the server reported inside the stream, classified like
    /// an error response.
    fn failed(&self, error: Option<&Value>) -> ProviderError {
        let field = |k: &str| error.and_then(|e| e.get(k)).cloned();
        let code = field("code").unwrap_or(Value::Null);
        let message = field("message").unwrap_or_else(|| json!("the response failed"));
        // Responses errors name their kind in `code`; an `error` event's
        // own `type` is just "error".
        let kind = field("type")
            .filter(|t| t != "error")
            .unwrap_or_else(|| code.clone());
        let body = json!({"error": {"type": kind, "code": code, "message": message}});
        ApiError::from_body(None, &body.to_string()).classify(&self.endpoint)
    }
}

impl SseDecoder for ResponsesDecoder {
    fn event(&mut self, sse: Sse, out: &mut VecDeque<StreamEvent>) -> Result<(), ProviderError> {
        let Some(data) = sse.data else {
            return Ok(());
        };
        let data = data.trim();
        // Some proxies end every stream the Chat Completions way.
        if data == "[DONE]" {
            return Ok(());
        }
        let v: Value = serde_json::from_str(data).map_err(|e| {
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
            "response.created" | "response.in_progress" => self.started = true,
            // A refusal streams its words apart from text; the user reads
            // them as the answer, which otherwise would be empty.
            "response.output_text.delta" | "response.refusal.delta" => {
                self.refused |= kind == "response.refusal.delta";
                let text = v.get("delta").and_then(Value::as_str).unwrap_or_default();
                if !text.is_empty() {
                    out.push_back(StreamEvent::TextDelta {
                        text: text.to_owned(),
                    });
                }
            }
            "response.output_item.added" => {
                let item = v.get("item").unwrap_or(&Value::Null);
                if item.get("type").and_then(Value::as_str) == Some("function_call") {
                    let index = self.output_index(&v)?;
                    let id = item.get("call_id").and_then(Value::as_str);
                    let name = item.get("name").and_then(Value::as_str);
                    let arguments = item
                        .get("arguments")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    self.calls.push(index, id, name, arguments);
                    out.push_back(StreamEvent::ToolCallDelta {
                        index,
                        id: id.map(str::to_owned),
                        name: name.map(str::to_owned),
                        arguments: arguments.to_owned(),
                    });
                }
            }
            "response.function_call_arguments.delta" => {
                let index = self.output_index(&v)?;
                let part = v.get("delta").and_then(Value::as_str).unwrap_or_default();
                self.calls.push(index, None, None, part);
                out.push_back(StreamEvent::ToolCallDelta {
                    index,
                    id: None,
                    name: None,
                    arguments: part.to_owned(),
                });
            }
            "response.output_item.done" => {
                let index = self.output_index(&v)?;
                let item = v.get("item").unwrap_or(&Value::Null);
                self.item_done(index, item, out)?;
            }
            "response.completed" => {
                let response = v.get("response").unwrap_or(&Value::Null);
                let reason = if self.any_calls || !self.calls.is_empty() {
                    StopReason::ToolUse
                } else if self.refused {
                    StopReason::ContentFilter
                } else {
                    StopReason::EndTurn
                };
                self.tail(response, reason, out)?;
            }
            "response.incomplete" => {
                let response = v.get("response").unwrap_or(&Value::Null);
                let reason = match response
                    .pointer("/incomplete_details/reason")
                    .and_then(Value::as_str)
                {
                    Some("content_filter") => StopReason::ContentFilter,
                    // `max_output_tokens`, and reasons added later: the
                    // answer was cut short.
                    _ => StopReason::MaxTokens,
                };
                self.tail(response, reason, out)?;
            }
            "response.failed" => {
                return Err(self.failed(v.pointer("/response/error")));
            }
            "error" => {
                return Err(self.failed(Some(v.get("error").unwrap_or(&v))));
            }
            // Deltas of reasoning summaries, web-search progress, content
            // parts, annotations (read whole from the finished item), and
            // event types added after this was written.
            _ => {}
        }
        Ok(())
    }

    fn end(&mut self, _out: &mut VecDeque<StreamEvent>) -> Result<(), ProviderError> {
        let what = if self.started {
            "the stream ended before response.completed"
        } else {
            "the stream ended before response.created"
        };
        Err(self.endpoint.protocol(what))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{ToolCall, ToolDefinition};

    #[test]
    fn later_system_messages_stay_in_place_and_instructions_lead() {
        let req = Request::new(
            "gpt-5",
            vec![
                Message::system("a"),
                Message::system("b"),
                Message::user("hi"),
                Message::system("note"),
            ],
        );
        let b = request_body(&req);
        assert_eq!(b["instructions"], json!("a\n\nb"));
        let input = b["input"].as_array().unwrap();
        assert_eq!(input.len(), 2);
        assert_eq!(input[1]["role"], json!("system"));
        assert!(b.get("tools").is_none() && b.get("tool_choice").is_none());
        // No effort: maybe no reasoning model, which would refuse the
        // request that asks for encrypted reasoning.
        assert!(b.get("include").is_none() && b.get("reasoning").is_none());
        let mut req = req;
        req.reasoning_effort = Some(ReasoningEffort::Minimal);
        let b = request_body(&req);
        assert_eq!(b["include"], json!(["reasoning.encrypted_content"]));
        assert_eq!(b["reasoning"], json!({"effort": "minimal"}));
    }

    #[test]
    fn reasoning_without_encrypted_content_is_not_sent() {
        let req = Request::new(
            "m",
            vec![
                Message::user("hi"),
                Message::Assistant {
                    content: String::new(),
                    tool_calls: vec![ToolCall {
                        id: "c".into(),
                        name: "ls".into(),
                        arguments: json!({}),
                    }],
                    provider_items: vec![ProviderItem::Reasoning {
                        id: "rs_1".into(),
                        encrypted_content: None,
                        summary: vec![],
                    }],
                },
            ],
        )
        .with_tools(vec![ToolDefinition {
            name: "ls".into(),
            description: "list".into(),
            parameters: json!({"type": "object"}),
        }]);
        let b = request_body(&req);
        let types: Vec<&str> = b["input"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|i| i["type"].as_str())
            .collect();
        assert_eq!(types, ["message", "function_call"]);
    }
}
