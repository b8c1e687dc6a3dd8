//! OpenAI Chat Completions with SSE streaming, for OpenAI itself and every
//! compatible server (Ollama, vLLM, llama.cpp, LM Studio).
//!
//! Request: `POST {base_url}/chat/completions` with `stream: true` and
//! `stream_options.include_usage` so the last chunk carries token counts.
//! `max_tokens` (not `max_completion_tokens`) is sent because every
//! compatible server understands it.
//!
//! Response: `data:` chunks whose `choices[0].delta` holds text and
//! index-keyed tool-call fragments, a chunk with `finish_reason`, a usage
//! chunk with empty `choices`, then `data: [DONE]`.

use std::collections::VecDeque;

use evoflux_core::config::{ProviderConfig, ProviderKind};
use serde_json::{Value, json};
use sse_stream::Sse;

use crate::assemble::ToolCallAssembler;
use crate::error::{ProviderError, SetupError};
use crate::event::{StopReason, StreamEvent, Usage};
use crate::http::{ApiError, Endpoint, SseClient, SseDecoder, SseWire};
use crate::message::{Media, MediaKind, Message, Request, ToolChoice};
use crate::provider::{EventStream, Provider, ProviderOptions};

/// A Chat Completions provider.
#[derive(Debug)]
pub struct OpenAiProvider {
    http: SseClient,
}

impl OpenAiProvider {
    pub fn new(
        name: &str,
        base_url: String,
        config: &ProviderConfig,
        options: &ProviderOptions,
    ) -> Result<Self, SetupError> {
        Ok(OpenAiProvider {
            http: SseClient::new(name, &base_url, "chat/completions", config, options)?,
        })
    }
}

impl Provider for OpenAiProvider {
    fn name(&self) -> &str {
        self.http.name()
    }

    fn kind(&self) -> ProviderKind {
        ProviderKind::Openai
    }

    fn context_window(&self) -> Option<u64> {
        self.http.context_window()
    }

    fn stream(&self, request: Request) -> EventStream {
        let request = self.http.fit_media(request);
        let wire = SseWire {
            headers: &[],
            auth: |builder, key| builder.bearer_auth(key),
            decoder: ChatDecoder::new,
        };
        self.http.stream(wire, || request_body(&request))
    }
}

/// The JSON body of a streaming Chat Completions request.
pub fn request_body(request: &Request) -> Value {
    let messages = messages_json(&request.messages);
    let mut body = json!({
        "model": request.model,
        "messages": messages,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| {
                json!({
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.parameters,
                    }
                })
            })
            .collect();
        body["tools"] = Value::Array(tools);
        match request.tool_choice {
            ToolChoice::Auto => {}
            ToolChoice::Required => body["tool_choice"] = json!("required"),
        }
    }
    if let Some(max) = request.max_tokens {
        body["max_tokens"] = json!(max);
    }
    if let Some(t) = request.temperature {
        body["temperature"] = json!(t);
    }
    // `request.provider_tools` is not rendered: Chat Completions has no
    // provider-run tools, and this provider lists none, so the harness
    // never asks for one.
    // Compatible servers that know no prompt cache ignore the field.
    if let Some(key) = &request.cache_key {
        body["prompt_cache_key"] = json!(key);
    }
    body
}

/// The messages, in order. A tool message holds text only on this wire,
/// so the media of a run of tool results follow the run as one user
/// message (after the last result: the results must directly follow the
/// assistant turn that called them), each introduced by its call id.
fn messages_json(messages: &[Message]) -> Vec<Value> {
    let mut out = Vec::with_capacity(messages.len());
    let mut held: Vec<Value> = Vec::new();
    for m in messages {
        if !matches!(m, Message::Tool { .. }) {
            flush_tool_media(&mut held, &mut out);
        }
        if let Message::Tool {
            tool_call_id,
            media,
            ..
        } = m
            && !media.is_empty()
        {
            held.push(json!({
                "type": "text",
                "text": format!("The result of tool call {tool_call_id} attached:"),
            }));
            held.extend(media.iter().map(media_part));
        }
        out.push(message_json(m));
    }
    flush_tool_media(&mut held, &mut out);
    out
}

fn flush_tool_media(held: &mut Vec<Value>, out: &mut Vec<Value>) {
    if !held.is_empty() {
        out.push(json!({"role": "user", "content": std::mem::take(held)}));
    }
}

/// One content part for an image (`image_url` with a data URL) or a clip
/// (`input_audio`, format `wav` or `mp3`).
fn media_part(media: &Media) -> Value {
    match media.kind {
        MediaKind::Image => json!({"type": "image_url", "image_url": {"url": media.data_url()}}),
        MediaKind::Audio => {
            let format = match media.mime_type.as_str() {
                "audio/mpeg" | "audio/mp3" => "mp3",
                _ => "wav",
            };
            json!({"type": "input_audio", "input_audio": {"data": media.data, "format": format}})
        }
    }
}

fn message_json(m: &Message) -> Value {
    match m {
        Message::System { content } => json!({"role": "system", "content": content}),
        Message::User { content, media } if media.is_empty() => {
            json!({"role": "user", "content": content})
        }
        Message::User { content, media } => {
            let mut parts = Vec::with_capacity(media.len() + 1);
            if !content.is_empty() {
                parts.push(json!({"type": "text", "text": content}));
            }
            parts.extend(media.iter().map(media_part));
            json!({"role": "user", "content": parts})
        }
        // Chat Completions has no reasoning or server-tool items to carry.
        Message::Assistant {
            content,
            tool_calls,
            provider_items: _,
        } => {
            let mut v = json!({
                "role": "assistant",
                "content": if content.is_empty() { Value::Null } else { json!(content) },
            });
            if !tool_calls.is_empty() {
                let calls: Vec<Value> = tool_calls
                    .iter()
                    .map(|c| {
                        json!({
                            "id": c.id,
                            "type": "function",
                            "function": {"name": c.name, "arguments": c.arguments.to_string()},
                        })
                    })
                    .collect();
                v["tool_calls"] = Value::Array(calls);
            }
            v
        }
        // Chat Completions has no error flag on tool results; the content
        // itself says what went wrong. Media follow ([`messages_json`]).
        Message::Tool {
            tool_call_id,
            content,
            media,
            is_error: _,
        } => {
            let content = if media.is_empty() {
                content.clone()
            } else {
                let note = format!(
                    "[{} attached in the next message]",
                    media
                        .iter()
                        .map(Media::describe)
                        .collect::<Vec<_>>()
                        .join("; ")
                );
                if content.is_empty() {
                    note
                } else {
                    format!("{content}\n{note}")
                }
            };
            json!({"role": "tool", "tool_call_id": tool_call_id, "content": content})
        }
    }
}

/// Decodes `chat.completion.chunk` events.
#[derive(Debug)]
pub(crate) struct ChatDecoder {
    endpoint: Endpoint,
    calls: ToolCallAssembler,
    any_calls: bool,
    stop: Option<StopReason>,
    usage: Option<Usage>,
}

impl ChatDecoder {
    pub fn new(endpoint: Endpoint) -> Self {
        ChatDecoder {
            endpoint,
            calls: ToolCallAssembler::default(),
            any_calls: false,
            stop: None,
            usage: None,
        }
    }

    fn flush_calls(&mut self, out: &mut VecDeque<StreamEvent>) -> Result<(), ProviderError> {
        for call in self.calls.finish_all() {
            out.push_back(call.map_err(|e| self.endpoint.protocol(e))?);
        }
        Ok(())
    }

    /// Completed calls, usage, stop, done.
    fn tail(&mut self, out: &mut VecDeque<StreamEvent>) -> Result<(), ProviderError> {
        self.flush_calls(out)?;
        if let Some(usage) = self.usage.take() {
            out.push_back(StreamEvent::Usage { usage });
        }
        let reason = self.stop.unwrap_or(if self.any_calls {
            StopReason::ToolUse
        } else {
            StopReason::EndTurn
        });
        out.push_back(StreamEvent::Stop { reason });
        out.push_back(StreamEvent::Done);
        Ok(())
    }

    fn finish_reason(&self, reason: &str) -> StopReason {
        let by_calls = if self.any_calls {
            StopReason::ToolUse
        } else {
            StopReason::EndTurn
        };
        match reason {
            "length" => StopReason::MaxTokens,
            "tool_calls" | "function_call" => StopReason::ToolUse,
            "content_filter" => StopReason::ContentFilter,
            // Some compatible servers say "stop" after tool calls; the calls
            // are what the harness must act on. Unknown reasons from exotic
            // servers are read the same way.
            _ => by_calls,
        }
    }

    fn chunk(&mut self, v: &Value, out: &mut VecDeque<StreamEvent>) -> Result<(), ProviderError> {
        if let Some(err) = v.get("error") {
            let body = json!({"error": err}).to_string();
            return Err(ApiError::from_body(None, &body).classify(&self.endpoint));
        }
        let choices = v.get("choices").and_then(Value::as_array);
        // Only the first choice is ours: we never ask for n > 1.
        if let Some(choice) = choices.and_then(|c| c.first()) {
            let delta = choice.get("delta");
            if let Some(text) = delta.and_then(|d| d.get("content")).and_then(Value::as_str)
                && !text.is_empty()
            {
                out.push_back(StreamEvent::TextDelta {
                    text: text.to_owned(),
                });
            }
            let tool_calls = delta
                .and_then(|d| d.get("tool_calls"))
                .and_then(Value::as_array);
            for (pos, tc) in tool_calls.into_iter().flatten().enumerate() {
                // Servers that omit `index` send one call per entry.
                let index = tc
                    .get("index")
                    .and_then(Value::as_u64)
                    .and_then(|i| u32::try_from(i).ok())
                    .unwrap_or_else(|| u32::try_from(pos).unwrap_or(u32::MAX));
                let id = tc.get("id").and_then(Value::as_str);
                let function = tc.get("function");
                let name = function.and_then(|f| f.get("name")).and_then(Value::as_str);
                let arguments = match function.and_then(|f| f.get("arguments")) {
                    Some(Value::String(s)) => s.clone(),
                    // A few servers send the arguments object already parsed.
                    Some(other @ Value::Object(_)) => other.to_string(),
                    _ => String::new(),
                };
                self.any_calls = true;
                self.calls.push(index, id, name, &arguments);
                out.push_back(StreamEvent::ToolCallDelta {
                    index,
                    id: id.map(str::to_owned),
                    name: name.map(str::to_owned),
                    arguments,
                });
            }
            if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
                self.stop = Some(self.finish_reason(reason));
                self.flush_calls(out)?;
            }
        }
        if let Some(u) = v.get("usage").filter(|u| u.is_object()) {
            let n = |p: &str| u.pointer(p).and_then(Value::as_u64).unwrap_or(0);
            self.usage = Some(Usage {
                input_tokens: n("/prompt_tokens"),
                output_tokens: n("/completion_tokens"),
                cached_input_tokens: n("/prompt_tokens_details/cached_tokens"),
                cache_write_input_tokens: 0,
                web_search_requests: 0,
            });
        }
        Ok(())
    }
}

impl SseDecoder for ChatDecoder {
    fn event(&mut self, sse: Sse, out: &mut VecDeque<StreamEvent>) -> Result<(), ProviderError> {
        let Some(data) = sse.data else {
            return Ok(());
        };
        let data = data.trim();
        if data == "[DONE]" {
            return self.tail(out);
        }
        let v: Value = serde_json::from_str(data).map_err(|e| {
            self.endpoint
                .protocol(format!("chunk is not JSON ({e}): {data}"))
        })?;
        self.chunk(&v, out)
    }

    fn end(&mut self, out: &mut VecDeque<StreamEvent>) -> Result<(), ProviderError> {
        // A finish_reason means the answer is complete even if the server
        // closed without `[DONE]`; otherwise the answer was cut off.
        match self.stop {
            Some(_) => self.tail(out),
            None => Err(self
                .endpoint
                .protocol("the stream ended before the response was complete (no [DONE])")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{ToolCall, ToolDefinition};

    #[test]
    fn body_shape() {
        let req = Request::new(
            "gpt-4o-mini",
            vec![
                Message::system("be brief"),
                Message::user("hi"),
                Message::Assistant {
                    provider_items: Vec::new(),
                    content: String::new(),
                    tool_calls: vec![ToolCall {
                        id: "c1".into(),
                        name: "ls".into(),
                        arguments: json!({"path": "."}),
                    }],
                },
                Message::tool_result("c1", "a.txt"),
            ],
        )
        .with_tools(vec![ToolDefinition {
            name: "ls".into(),
            description: "list".into(),
            parameters: json!({"type": "object"}),
        }])
        .with_max_tokens(100);
        let b = request_body(&req);
        assert_eq!(b["stream"], json!(true));
        assert_eq!(b["stream_options"], json!({"include_usage": true}));
        assert_eq!(b["max_tokens"], json!(100));
        assert!(b.get("temperature").is_none());
        assert_eq!(b["messages"][2]["content"], Value::Null);
        assert_eq!(
            b["messages"][2]["tool_calls"][0]["function"]["arguments"],
            json!("{\"path\":\".\"}")
        );
        assert_eq!(
            b["messages"][3],
            json!({"role": "tool", "tool_call_id": "c1", "content": "a.txt"})
        );
        assert_eq!(b["tools"][0]["function"]["name"], json!("ls"));
        assert!(b.get("tool_choice").is_none());
        assert!(b.get("prompt_cache_key").is_none());
        let keyed = req.clone().with_cache_key("0192-session");
        assert_eq!(
            request_body(&keyed)["prompt_cache_key"],
            json!("0192-session")
        );
        let mut required = req.clone();
        required.tool_choice = ToolChoice::Required;
        assert_eq!(request_body(&required)["tool_choice"], json!("required"));
    }
}
