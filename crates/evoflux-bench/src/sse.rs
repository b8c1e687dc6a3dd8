//! The streamed answers, frame by frame, in each API's documented shape:
//! the events, field names and ordering a real client of that API parses.
//! Text is streamed in word-sized deltas and tool arguments in small
//! fragments, so a client's reassembly is exercised as by the real APIs.

use serde_json::{Value, json};

use crate::scenario::Reply;

/// The token counts one answer reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// All input tokens, cached and written ones included.
    pub input: u64,
    pub cached: u64,
    /// Written to the cache (reported by Anthropic only).
    pub written: u64,
    pub output: u64,
}

/// One SSE frame.
pub fn frame(event: Option<&str>, data: &str) -> String {
    match event {
        Some(e) => format!("event: {e}\ndata: {data}\n\n"),
        None => format!("data: {data}\n\n"),
    }
}

/// The estimated output tokens of a reply.
pub fn output_tokens(reply: &Reply) -> u64 {
    let bytes = match reply {
        Reply::Text(t) => t.len(),
        Reply::ToolCalls(calls) => calls
            .iter()
            .map(|c| c.name.len() + c.arguments.to_string().len())
            .sum(),
    };
    (bytes as u64).div_ceil(4).max(1)
}

/// Text split into word-sized pieces whose concatenation is the text.
fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    for c in text.chars() {
        current.push(c);
        if c == ' ' {
            out.push(std::mem::take(&mut current));
        }
    }
    if !current.is_empty() || out.is_empty() {
        out.push(current);
    }
    out
}

/// JSON text split into fragments of at most 12 characters.
fn fragments(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(12).map(|c| c.iter().collect()).collect()
}

/// OpenAI Chat Completions with `stream_options.include_usage`: a first
/// chunk with the role, content or index-keyed tool-call deltas, a chunk
/// with `finish_reason`, a usage chunk with empty `choices`, `[DONE]`.
pub fn chat(reply: &Reply, model: &str, id: &str, usage: Usage) -> Vec<String> {
    let chunk = |delta: Value, finish: Value| {
        frame(
            None,
            &json!({
                "id": format!("chatcmpl-{id}"), "object": "chat.completion.chunk", "created": 0,
                "model": model, "system_fingerprint": "fp_bench",
                "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}],
                "usage": null,
            })
            .to_string(),
        )
    };
    let mut out = Vec::new();
    let finish = match reply {
        Reply::Text(text) => {
            out.push(chunk(
                json!({"role": "assistant", "content": "", "refusal": null}),
                Value::Null,
            ));
            for w in words(text) {
                out.push(chunk(json!({"content": w}), Value::Null));
            }
            "stop"
        }
        Reply::ToolCalls(calls) => {
            for (i, call) in calls.iter().enumerate() {
                let mut head = json!({"tool_calls": [{
                    "index": i, "id": format!("call_{id}_{i}"), "type": "function",
                    "function": {"name": call.name, "arguments": ""},
                }]});
                if i == 0 {
                    head["role"] = json!("assistant");
                    head["content"] = Value::Null;
                    head["refusal"] = Value::Null;
                }
                out.push(chunk(head, Value::Null));
                for f in fragments(&call.arguments.to_string()) {
                    out.push(chunk(
                        json!({"tool_calls": [{"index": i, "function": {"arguments": f}}]}),
                        Value::Null,
                    ));
                }
            }
            "tool_calls"
        }
    };
    out.push(chunk(json!({}), json!(finish)));
    out.push(frame(
        None,
        &json!({
            "id": format!("chatcmpl-{id}"), "object": "chat.completion.chunk", "created": 0,
            "model": model, "system_fingerprint": "fp_bench", "choices": [],
            "usage": {
                "prompt_tokens": usage.input,
                "completion_tokens": usage.output,
                "total_tokens": usage.input + usage.output,
                "prompt_tokens_details": {"cached_tokens": usage.cached, "audio_tokens": 0},
                "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                    "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0},
            },
        })
        .to_string(),
    ));
    out.push(frame(None, "[DONE]"));
    out
}

/// OpenAI Responses: named events with a `type` equal to the event name
/// and a running `sequence_number`: `response.created`,
/// `response.in_progress`, per output item `response.output_item.added`,
/// its deltas (`response.output_text.delta` inside a content part, or
/// `response.function_call_arguments.delta`), their `.done` events and
/// `response.output_item.done`, then `response.completed` with the whole
/// response and its usage.
pub fn responses(reply: &Reply, model: &str, id: &str, usage: Usage) -> Vec<String> {
    let mut out = Vec::new();
    let mut seq = 0u64;
    let mut emit = |kind: &str, mut data: Value| {
        data["type"] = json!(kind);
        data["sequence_number"] = json!(seq);
        seq += 1;
        out.push(frame(Some(kind), &data.to_string()));
    };
    let response = |status: &str, output: Value, usage: Value| {
        json!({
            "id": format!("resp_{id}"), "object": "response", "created_at": 0, "status": status,
            "model": model, "output": output, "parallel_tool_calls": true,
            "store": false, "tool_choice": "auto", "usage": usage,
        })
    };
    emit(
        "response.created",
        json!({"response": response("in_progress", json!([]), Value::Null)}),
    );
    emit(
        "response.in_progress",
        json!({"response": response("in_progress", json!([]), Value::Null)}),
    );
    let mut items = Vec::new();
    match reply {
        Reply::Text(text) => {
            let item_id = format!("msg_{id}");
            emit(
                "response.output_item.added",
                json!({"output_index": 0, "item": {"id": item_id, "type": "message",
                    "status": "in_progress", "role": "assistant", "content": []}}),
            );
            emit(
                "response.content_part.added",
                json!({"item_id": item_id, "output_index": 0, "content_index": 0,
                    "part": {"type": "output_text", "text": "", "annotations": []}}),
            );
            for w in words(text) {
                emit(
                    "response.output_text.delta",
                    json!({"item_id": item_id, "output_index": 0, "content_index": 0,
                        "delta": w, "logprobs": []}),
                );
            }
            emit(
                "response.output_text.done",
                json!({"item_id": item_id, "output_index": 0, "content_index": 0,
                    "text": text, "logprobs": []}),
            );
            let part = json!({"type": "output_text", "text": text, "annotations": []});
            emit(
                "response.content_part.done",
                json!({"item_id": item_id, "output_index": 0, "content_index": 0, "part": part}),
            );
            let item = json!({"id": item_id, "type": "message", "status": "completed",
                "role": "assistant", "content": [part]});
            emit(
                "response.output_item.done",
                json!({"output_index": 0, "item": item}),
            );
            items.push(item);
        }
        Reply::ToolCalls(calls) => {
            for (i, call) in calls.iter().enumerate() {
                let item_id = format!("fc_{id}_{i}");
                let call_id = format!("call_{id}_{i}");
                let arguments = call.arguments.to_string();
                emit(
                    "response.output_item.added",
                    json!({"output_index": i, "item": {"id": item_id, "type": "function_call",
                        "status": "in_progress", "arguments": "", "call_id": call_id,
                        "name": call.name}}),
                );
                for f in fragments(&arguments) {
                    emit(
                        "response.function_call_arguments.delta",
                        json!({"item_id": item_id, "output_index": i, "delta": f}),
                    );
                }
                emit(
                    "response.function_call_arguments.done",
                    json!({"item_id": item_id, "output_index": i, "arguments": arguments}),
                );
                let item = json!({"id": item_id, "type": "function_call", "status": "completed",
                    "arguments": arguments, "call_id": call_id, "name": call.name});
                emit(
                    "response.output_item.done",
                    json!({"output_index": i, "item": item}),
                );
                items.push(item);
            }
        }
    }
    let usage = json!({
        "input_tokens": usage.input,
        "input_tokens_details": {"cached_tokens": usage.cached},
        "output_tokens": usage.output,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": usage.input + usage.output,
    });
    emit(
        "response.completed",
        json!({"response": response("completed", Value::Array(items), usage)}),
    );
    out
}

/// Anthropic Messages: `message_start` (whose usage splits input into
/// uncached `input_tokens`, `cache_read_input_tokens` and
/// `cache_creation_input_tokens`, as the API counts them), a `ping`,
/// `content_block_start`/`_delta`/`_stop` per block (`text_delta`, or
/// `input_json_delta` for `tool_use`), `message_delta` with the stop
/// reason and output usage, `message_stop`.
pub fn anthropic(reply: &Reply, model: &str, id: &str, usage: Usage) -> Vec<String> {
    let mut out = Vec::new();
    let mut emit = |kind: &str, mut data: Value| {
        data["type"] = json!(kind);
        out.push(frame(Some(kind), &data.to_string()));
    };
    let uncached = usage.input.saturating_sub(usage.cached + usage.written);
    emit(
        "message_start",
        json!({"message": {
            "id": format!("msg_{id}"), "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": uncached, "cache_creation_input_tokens": usage.written,
                "cache_read_input_tokens": usage.cached, "output_tokens": 1},
        }}),
    );
    emit("ping", json!({}));
    let stop = match reply {
        Reply::Text(text) => {
            emit(
                "content_block_start",
                json!({"index": 0, "content_block": {"type": "text", "text": ""}}),
            );
            for w in words(text) {
                emit(
                    "content_block_delta",
                    json!({"index": 0, "delta": {"type": "text_delta", "text": w}}),
                );
            }
            emit("content_block_stop", json!({"index": 0}));
            "end_turn"
        }
        Reply::ToolCalls(calls) => {
            for (i, call) in calls.iter().enumerate() {
                emit(
                    "content_block_start",
                    json!({"index": i, "content_block": {"type": "tool_use",
                        "id": format!("toolu_{id}_{i}"), "name": call.name, "input": {}}}),
                );
                for f in fragments(&call.arguments.to_string()) {
                    emit(
                        "content_block_delta",
                        json!({"index": i, "delta": {"type": "input_json_delta", "partial_json": f}}),
                    );
                }
                emit("content_block_stop", json!({"index": i}));
            }
            "tool_use"
        }
    };
    emit(
        "message_delta",
        json!({"delta": {"stop_reason": stop, "stop_sequence": null},
            "usage": {"output_tokens": usage.output}}),
    );
    emit("message_stop", json!({}));
    out
}

/// The frames of `reply` on `wire`.
pub fn stream(
    wire: crate::Wire,
    reply: &Reply,
    model: &str,
    id: &str,
    usage: Usage,
) -> Vec<String> {
    match wire {
        crate::Wire::Chat => chat(reply, model, id, usage),
        crate::Wire::Responses => responses(reply, model, id, usage),
        crate::Wire::Anthropic => anthropic(reply, model, id, usage),
    }
}

/// The same answer as one JSON body, for a request without
/// `"stream": true`.
pub fn complete(wire: crate::Wire, reply: &Reply, model: &str, id: &str, usage: Usage) -> Value {
    match wire {
        crate::Wire::Chat => {
            let (message, finish) = match reply {
                Reply::Text(t) => (
                    json!({"role": "assistant", "content": t, "refusal": null}),
                    "stop",
                ),
                Reply::ToolCalls(calls) => {
                    let calls: Vec<Value> = calls
                        .iter()
                        .enumerate()
                        .map(|(i, c)| {
                            json!({"id": format!("call_{id}_{i}"), "type": "function",
                                "function": {"name": c.name, "arguments": c.arguments.to_string()}})
                        })
                        .collect();
                    (
                        json!({"role": "assistant", "content": null, "tool_calls": calls, "refusal": null}),
                        "tool_calls",
                    )
                }
            };
            json!({
                "id": format!("chatcmpl-{id}"), "object": "chat.completion", "created": 0, "model": model,
                "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": finish}],
                "usage": {"prompt_tokens": usage.input, "completion_tokens": usage.output,
                    "total_tokens": usage.input + usage.output,
                    "prompt_tokens_details": {"cached_tokens": usage.cached}},
            })
        }
        crate::Wire::Responses => {
            // The last event's response is the whole answer.
            let frames = responses(reply, model, id, usage);
            frames
                .last()
                .and_then(|f| f.split_once("data: "))
                .and_then(|(_, d)| serde_json::from_str::<Value>(d.trim()).ok())
                .map(|v| v["response"].clone())
                .unwrap_or(Value::Null)
        }
        crate::Wire::Anthropic => {
            let (content, stop) = match reply {
                Reply::Text(t) => (json!([{"type": "text", "text": t}]), "end_turn"),
                Reply::ToolCalls(calls) => (
                    Value::Array(
                        calls
                            .iter()
                            .enumerate()
                            .map(|(i, c)| {
                                json!({"type": "tool_use", "id": format!("toolu_{id}_{i}"),
                                    "name": c.name, "input": c.arguments})
                            })
                            .collect(),
                    ),
                    "tool_use",
                ),
            };
            json!({
                "id": format!("msg_{id}"), "type": "message", "role": "assistant", "model": model,
                "content": content, "stop_reason": stop, "stop_sequence": null,
                "usage": {"input_tokens": usage.input.saturating_sub(usage.cached + usage.written),
                    "cache_creation_input_tokens": usage.written,
                    "cache_read_input_tokens": usage.cached, "output_tokens": usage.output},
            })
        }
    }
}

/// A client's reading of a stream, for the tests: each wire decoded the
/// way its API documents, checking the event shapes on the way.
#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
pub(crate) mod client {
    use std::collections::BTreeMap;

    use serde_json::Value;

    use super::Usage;
    use crate::Wire;

    #[derive(Debug, Default, PartialEq)]
    pub struct Decoded {
        pub text: String,
        /// (name, parsed arguments, call id)
        pub calls: Vec<(String, Value, String)>,
        pub usage: Usage,
        pub stop: String,
    }

    /// (event name, data) of each frame of an SSE body.
    pub fn frames(body: &str) -> Vec<(Option<String>, String)> {
        body.split("\n\n")
            .filter(|f| !f.trim().is_empty())
            .map(|f| {
                let mut event = None;
                let mut data = Vec::new();
                for line in f.lines() {
                    if let Some(e) = line.strip_prefix("event: ") {
                        event = Some(e.to_owned());
                    } else if let Some(d) = line.strip_prefix("data: ") {
                        data.push(d);
                    } else {
                        panic!("not an SSE line: {line:?}");
                    }
                }
                (event, data.join("\n"))
            })
            .collect()
    }

    pub fn decode(wire: Wire, body: &str) -> Decoded {
        match wire {
            Wire::Chat => chat(body),
            Wire::Responses => responses(body),
            Wire::Anthropic => anthropic(body),
        }
    }

    fn chat(body: &str) -> Decoded {
        let mut d = Decoded::default();
        let frames = frames(body);
        assert_eq!(frames.last().unwrap().1, "[DONE]", "ends with [DONE]");
        let mut calls: BTreeMap<u64, (String, String, String)> = BTreeMap::new();
        for (event, data) in &frames[..frames.len() - 1] {
            assert!(event.is_none(), "chat completions frames are unnamed");
            let v: Value = serde_json::from_str(data).unwrap();
            assert_eq!(v["object"], "chat.completion.chunk");
            let choices = v["choices"].as_array().unwrap();
            if choices.is_empty() {
                let u = &v["usage"];
                d.usage = Usage {
                    input: u["prompt_tokens"].as_u64().unwrap(),
                    cached: u["prompt_tokens_details"]["cached_tokens"]
                        .as_u64()
                        .unwrap(),
                    written: 0,
                    output: u["completion_tokens"].as_u64().unwrap(),
                };
                assert_eq!(
                    u["total_tokens"].as_u64().unwrap(),
                    d.usage.input + d.usage.output
                );
                continue;
            }
            assert!(v["usage"].is_null(), "usage only in the last chunk");
            let delta = &choices[0]["delta"];
            if let Some(t) = delta["content"].as_str() {
                d.text.push_str(t);
            }
            for tc in delta["tool_calls"].as_array().into_iter().flatten() {
                let entry = calls.entry(tc["index"].as_u64().unwrap()).or_default();
                if let Some(id) = tc["id"].as_str() {
                    entry.2 = id.to_owned();
                    entry.0 = tc["function"]["name"].as_str().unwrap().to_owned();
                }
                entry
                    .1
                    .push_str(tc["function"]["arguments"].as_str().unwrap());
            }
            if let Some(f) = choices[0]["finish_reason"].as_str() {
                d.stop = f.to_owned();
            }
        }
        d.calls = calls
            .into_values()
            .map(|(n, a, id)| (n, serde_json::from_str(&a).unwrap(), id))
            .collect();
        d
    }

    fn responses(body: &str) -> Decoded {
        let mut d = Decoded::default();
        let mut args: BTreeMap<String, String> = BTreeMap::new();
        let mut items: BTreeMap<String, (String, String)> = BTreeMap::new();
        for (i, (event, data)) in frames(body).iter().enumerate() {
            let v: Value = serde_json::from_str(data).unwrap();
            let event = event.as_deref().expect("responses events are named");
            assert_eq!(v["type"], event, "type matches the event name");
            assert_eq!(v["sequence_number"], i as u64);
            match event {
                "response.output_item.added" if v["item"]["type"] == "function_call" => {
                    let item = &v["item"];
                    items.insert(
                        item["id"].as_str().unwrap().to_owned(),
                        (
                            item["name"].as_str().unwrap().to_owned(),
                            item["call_id"].as_str().unwrap().to_owned(),
                        ),
                    );
                }
                "response.output_text.delta" => d.text.push_str(v["delta"].as_str().unwrap()),
                "response.function_call_arguments.delta" => args
                    .entry(v["item_id"].as_str().unwrap().to_owned())
                    .or_default()
                    .push_str(v["delta"].as_str().unwrap()),
                "response.function_call_arguments.done" => {
                    let id = v["item_id"].as_str().unwrap();
                    assert_eq!(args[id], v["arguments"].as_str().unwrap());
                }
                "response.output_item.done" if v["item"]["type"] == "function_call" => {
                    let item = &v["item"];
                    let (name, call_id) = &items[item["id"].as_str().unwrap()];
                    let a = item["arguments"].as_str().unwrap();
                    d.calls.push((
                        name.clone(),
                        serde_json::from_str(a).unwrap(),
                        call_id.clone(),
                    ));
                }
                "response.completed" => {
                    let r = &v["response"];
                    assert_eq!(r["status"], "completed");
                    let u = &r["usage"];
                    d.usage = Usage {
                        input: u["input_tokens"].as_u64().unwrap(),
                        cached: u["input_tokens_details"]["cached_tokens"].as_u64().unwrap(),
                        written: 0,
                        output: u["output_tokens"].as_u64().unwrap(),
                    };
                    d.stop = "completed".to_owned();
                }
                _ => {}
            }
        }
        d
    }

    fn anthropic(body: &str) -> Decoded {
        let mut d = Decoded::default();
        let mut blocks: BTreeMap<u64, (String, String, String)> = BTreeMap::new();
        let frames = frames(body);
        assert_eq!(frames[0].0.as_deref(), Some("message_start"));
        assert_eq!(frames.last().unwrap().0.as_deref(), Some("message_stop"));
        for (event, data) in &frames {
            let v: Value = serde_json::from_str(data).unwrap();
            let event = event.as_deref().expect("messages events are named");
            assert_eq!(v["type"], event);
            match event {
                "message_start" => {
                    let u = &v["message"]["usage"];
                    let uncached = u["input_tokens"].as_u64().unwrap();
                    d.usage.cached = u["cache_read_input_tokens"].as_u64().unwrap();
                    d.usage.written = u["cache_creation_input_tokens"].as_u64().unwrap();
                    d.usage.input = uncached + d.usage.cached + d.usage.written;
                }
                "content_block_start" => {
                    let b = &v["content_block"];
                    let entry = blocks.entry(v["index"].as_u64().unwrap()).or_default();
                    if b["type"] == "tool_use" {
                        entry.0 = b["name"].as_str().unwrap().to_owned();
                        entry.2 = b["id"].as_str().unwrap().to_owned();
                    }
                }
                "content_block_delta" => {
                    let delta = &v["delta"];
                    let entry = blocks.get_mut(&v["index"].as_u64().unwrap()).unwrap();
                    match delta["type"].as_str().unwrap() {
                        "text_delta" => d.text.push_str(delta["text"].as_str().unwrap()),
                        "input_json_delta" => {
                            entry.1.push_str(delta["partial_json"].as_str().unwrap())
                        }
                        other => panic!("unknown delta {other}"),
                    }
                }
                "message_delta" => {
                    d.stop = v["delta"]["stop_reason"].as_str().unwrap().to_owned();
                    d.usage.output = v["usage"]["output_tokens"].as_u64().unwrap();
                }
                _ => {}
            }
        }
        d.calls = blocks
            .into_values()
            .filter(|(name, _, _)| !name.is_empty())
            .map(|(n, a, id)| (n, serde_json::from_str(&a).unwrap(), id))
            .collect();
        d
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::client::decode;
    use super::*;
    use crate::Wire;
    use crate::scenario::ToolCall;

    const USAGE: Usage = Usage {
        input: 5000,
        cached: 3968,
        written: 512,
        output: 17,
    };

    fn two_calls() -> Reply {
        Reply::ToolCalls(vec![
            ToolCall {
                name: "shell".into(),
                arguments: json!({"command": "ls -la \"dir with spaces\"", "description": "list ü"}),
            },
            ToolCall {
                name: "read".into(),
                arguments: json!({"path": "notes.txt"}),
            },
        ])
    }

    #[test]
    fn text_round_trips_on_every_wire() {
        let text = "The notes say: build with cargo, tag releases vX.Y.Z.";
        for wire in Wire::ALL {
            let body = stream(wire, &Reply::Text(text.into()), "m", "r1", USAGE).concat();
            let d = decode(wire, &body);
            assert_eq!(d.text, text, "{wire}");
            assert!(d.calls.is_empty());
            let stop = match wire {
                Wire::Chat => "stop",
                Wire::Responses => "completed",
                Wire::Anthropic => "end_turn",
            };
            assert_eq!(d.stop, stop);
        }
    }

    #[test]
    fn parallel_tool_calls_round_trip_on_every_wire() {
        for wire in Wire::ALL {
            let body = stream(wire, &two_calls(), "m", "r2", USAGE).concat();
            let d = decode(wire, &body);
            let names: Vec<&str> = d.calls.iter().map(|c| c.0.as_str()).collect();
            assert_eq!(names, ["shell", "read"], "{wire}");
            assert_eq!(d.calls[0].1["command"], "ls -la \"dir with spaces\"");
            assert_eq!(d.calls[0].1["description"], "list ü");
            assert_eq!(d.calls[1].1, json!({"path": "notes.txt"}));
            assert_ne!(d.calls[0].2, d.calls[1].2, "distinct call ids");
            assert!(d.text.is_empty());
            let stop = match wire {
                Wire::Chat => "tool_calls",
                Wire::Responses => "completed",
                Wire::Anthropic => "tool_use",
            };
            assert_eq!(d.stop, stop);
        }
    }

    #[test]
    fn usage_is_reported_in_each_wire_s_own_terms() {
        let chat = decode(
            Wire::Chat,
            &chat(&Reply::Text("ok".into()), "m", "u", USAGE).concat(),
        );
        assert_eq!(
            chat.usage,
            Usage {
                written: 0,
                ..USAGE
            }
        );
        let responses = decode(
            Wire::Responses,
            &responses(&Reply::Text("ok".into()), "m", "u", USAGE).concat(),
        );
        assert_eq!(responses.usage, chat.usage);
        // Anthropic's input_tokens count only the uncached rest.
        let frames = anthropic(&Reply::Text("ok".into()), "m", "u", USAGE);
        let start: serde_json::Value =
            serde_json::from_str(frames[0].split("data: ").nth(1).unwrap().trim()).unwrap();
        let u = &start["message"]["usage"];
        assert_eq!(u["input_tokens"], 5000 - 3968 - 512);
        assert_eq!(u["cache_read_input_tokens"], 3968);
        assert_eq!(u["cache_creation_input_tokens"], 512);
        assert_eq!(decode(Wire::Anthropic, &frames.concat()).usage, USAGE);
    }

    #[test]
    fn arguments_are_streamed_in_several_fragments() {
        let frames = chat(&two_calls(), "m", "f", USAGE);
        // Chunks that carry only an argument fragment (no call id).
        let argument_chunks = super::client::frames(&frames.concat())
            .iter()
            .filter_map(|(_, data)| serde_json::from_str::<serde_json::Value>(data).ok())
            .filter(|v| {
                let call = &v["choices"][0]["delta"]["tool_calls"][0];
                call["function"]["arguments"].is_string() && call.get("id").is_none()
            })
            .count();
        // {"command":"ls -la \"dir with spaces\"","description":"list ü"} and
        // {"path":"notes.txt"}, 12 characters a fragment.
        assert_eq!(argument_chunks, 6 + 2);
    }
}
