//! The OpenAI Responses wire (`kind = "openai"`, `wire_api = "responses"`)
//! against a fake server: exact request bodies, streamed text, calls,
//! reasoning items, web searches, usage and errors.

use evoflux_core::config::{ProviderKind, WireApi};
use evoflux_model::{
    Citation, Message, ProviderItem, ProviderToolKind, ReasoningEffort, Request, StopReason,
    StreamEvent, ToolCall, ToolDefinition, Usage, WebSearch, WebSource, collect,
};
use serde_json::{Value, json};

use crate::common::{Reply, data, events, failure, harness_with};

async fn responses(replies: Vec<Reply>) -> crate::common::Harness {
    harness_with(
        ProviderKind::Openai,
        Some(WireApi::Responses),
        replies,
        Some("sk-test"),
    )
    .await
}

fn ev(v: Value) -> String {
    // The real API names each event twice, in `event:` and in `type`.
    let name = v["type"].as_str().unwrap().to_owned();
    format!("event: {name}\n{}", data(&v))
}

fn created() -> String {
    ev(json!({"type": "response.created", "sequence_number": 0,
              "response": {"id": "resp_1", "status": "in_progress", "output": []}}))
}

fn completed(input: u64, cached: u64, output: u64) -> String {
    ev(json!({
        "type": "response.completed",
        "response": {
            "id": "resp_1", "status": "completed",
            "usage": {
                "input_tokens": input,
                "input_tokens_details": {"cached_tokens": cached},
                "output_tokens": output,
                "output_tokens_details": {"reasoning_tokens": 20},
                "total_tokens": input + output,
            },
        },
    }))
}

fn reasoning_item() -> Value {
    json!({
        "type": "reasoning", "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "Read the file first."}],
        "encrypted_content": "gAAAA-encrypted-1",
    })
}

/// A reasoning item, then a `read` call whose arguments stream in pieces.
fn tool_call_stream(arguments: &str) -> String {
    let (a, b) = arguments.split_at(arguments.len() / 2);
    [
        created(),
        ev(json!({"type": "response.output_item.added", "output_index": 0,
                  "item": {"type": "reasoning", "id": "rs_1", "summary": []}})),
        ev(json!({"type": "response.output_item.done", "output_index": 0, "item": reasoning_item()})),
        ev(json!({"type": "response.output_item.added", "output_index": 1,
                  "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1",
                           "name": "read", "arguments": ""}})),
        ev(json!({"type": "response.function_call_arguments.delta", "output_index": 1,
                  "item_id": "fc_1", "delta": a})),
        ev(json!({"type": "response.function_call_arguments.delta", "output_index": 1,
                  "item_id": "fc_1", "delta": b})),
        ev(json!({"type": "response.function_call_arguments.done", "output_index": 1,
                  "item_id": "fc_1", "arguments": arguments})),
        ev(json!({"type": "response.output_item.done", "output_index": 1,
                  "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1",
                           "name": "read", "arguments": arguments, "status": "completed"}})),
        completed(120, 64, 30),
    ]
    .concat()
}

fn text_stream(text: &str) -> String {
    [
        created(),
        ev(
            json!({"type": "response.output_item.added", "output_index": 0,
                  "item": {"type": "message", "id": "msg_1", "role": "assistant", "content": []}}),
        ),
        ev(
            json!({"type": "response.output_text.delta", "output_index": 0, "content_index": 0,
                  "delta": text}),
        ),
        ev(
            json!({"type": "response.output_item.done", "output_index": 0,
                  "item": {"type": "message", "id": "msg_1", "role": "assistant",
                           "content": [{"type": "output_text", "text": text, "annotations": []}]}}),
        ),
        completed(200, 180, 5),
    ]
    .concat()
}

fn read_tool() -> ToolDefinition {
    ToolDefinition {
        name: "read".into(),
        description: "Read a file.".into(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
    }
}

fn first_turn() -> Vec<Message> {
    vec![Message::system("Be brief."), Message::user("Read a.txt")]
}

fn reasoning() -> ProviderItem {
    ProviderItem::Reasoning {
        id: "rs_1".into(),
        encrypted_content: Some("gAAAA-encrypted-1".into()),
        summary: vec!["Read the file first.".into()],
    }
}

fn request(messages: Vec<Message>) -> Request {
    let mut r = Request::new("gpt-5-mini", messages)
        .with_tools(vec![read_tool()])
        .with_cache_key("0192-session");
    r.reasoning_effort = Some(ReasoningEffort::Low);
    r
}

#[tokio::test]
async fn streams_a_call_with_its_reasoning_item_and_cached_usage() {
    let h = responses(vec![Reply::sse(
        &tool_call_stream("{\"path\":\"a.txt\"}"),
        11,
    )])
    .await;
    let got = events(h.provider.stream(request(first_turn()))).await;
    assert_eq!(got[0], StreamEvent::ProviderItem { item: reasoning() });
    assert_eq!(
        got[1],
        StreamEvent::ToolCallDelta {
            index: 1,
            id: Some("call_1".into()),
            name: Some("read".into()),
            arguments: String::new(),
        }
    );
    let tail = &got[got.len() - 4..];
    assert_eq!(
        tail,
        [
            StreamEvent::ToolCall {
                call: ToolCall {
                    id: "call_1".into(),
                    name: "read".into(),
                    arguments: json!({"path": "a.txt"}),
                }
            },
            StreamEvent::Usage {
                usage: Usage {
                    input_tokens: 120,
                    output_tokens: 30,
                    cached_input_tokens: 64,
                    cache_write_input_tokens: 0,
                    web_search_requests: 0,
                }
            },
            StreamEvent::Stop {
                reason: StopReason::ToolUse
            },
            StreamEvent::Done,
        ]
    );
    let r = &h.server.requests()[0];
    assert_eq!(r.path, "/v1/responses");
    assert_eq!(r.headers["authorization"], "Bearer sk-test");
}

#[tokio::test]
async fn the_second_request_carries_the_reasoning_item_call_and_output_exactly() {
    let h = responses(vec![
        Reply::sse(&tool_call_stream("{\"path\":\"a.txt\"}"), 64),
        Reply::sse(&text_stream("It says hello."), 64),
    ])
    .await;
    let first = collect(h.provider.stream(request(first_turn())))
        .await
        .unwrap();
    assert_eq!(first.stop, StopReason::ToolUse);
    let mut messages = first_turn();
    messages.push(first.message);
    messages.push(Message::tool_result("call_1", "hello"));
    let second = collect(h.provider.stream(request(messages))).await.unwrap();
    assert_eq!(second.message, Message::assistant("It says hello."));
    assert_eq!(second.usage.unwrap().cached_input_tokens, 180);

    let reqs = h.server.requests();
    let tools = json!([{
        "type": "function",
        "name": "read",
        "description": "Read a file.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        "strict": false,
    }]);
    assert_eq!(
        reqs[1].body,
        json!({
            "model": "gpt-5-mini",
            "instructions": "Be brief.",
            "input": [
                {"type": "message", "role": "user",
                 "content": [{"type": "input_text", "text": "Read a.txt"}]},
                {"type": "reasoning",
                 "summary": [{"type": "summary_text", "text": "Read the file first."}],
                 "encrypted_content": "gAAAA-encrypted-1"},
                {"type": "function_call", "call_id": "call_1", "name": "read",
                 "arguments": "{\"path\":\"a.txt\"}"},
                {"type": "function_call_output", "call_id": "call_1", "output": "hello"},
            ],
            "tools": tools,
            "tool_choice": "auto",
            "stream": true,
            "store": false,
            "include": ["reasoning.encrypted_content"],
            "reasoning": {"effort": "low"},
            "prompt_cache_key": "0192-session",
        })
    );
    // The prefix the provider caches never churns: the same instructions,
    // tools and key, and the first request's input starts the second's.
    let (a, b) = (&reqs[0].body, &reqs[1].body);
    for key in [
        "instructions",
        "tools",
        "prompt_cache_key",
        "include",
        "store",
    ] {
        assert_eq!(a[key], b[key], "{key}");
    }
    let a_input = a["input"].as_array().unwrap();
    assert_eq!(a_input[..], b["input"].as_array().unwrap()[..a_input.len()]);
}

#[tokio::test]
async fn a_configured_effort_applies_when_the_request_names_none() {
    let h = harness_with(
        ProviderKind::Openai,
        Some(WireApi::Responses),
        vec![
            Reply::sse(&text_stream("ok"), 64),
            Reply::sse(&text_stream("ok"), 64),
            Reply::sse(&text_stream("ok"), 64),
        ],
        Some("k"),
    )
    .await;
    // The common harness sets no effort: none is sent.
    let _ = events(
        h.provider
            .stream(Request::new("m", vec![Message::user("hi")])),
    )
    .await;
    let body = &h.server.requests()[0].body;
    assert!(body.get("reasoning").is_none());
    assert!(body.get("include").is_none(), "{body}");
    assert!(body.get("tools").is_none() && body.get("tool_choice").is_none());
    assert!(body.get("instructions").is_none());

    let mut config = evoflux_core::config::ProviderConfig {
        kind: ProviderKind::Openai,
        base_url: Some("http://127.0.0.1:9/v1".into()),
        api_key_env: None,
        context_window: None,
        model_path: None,
        limits: Default::default(),
        wire_api: Some(WireApi::Responses),
        reasoning_effort: Some(ReasoningEffort::High),
        images: None,
        audio: None,
    };
    let provider = evoflux_model::provider_for("x", &config, &Default::default()).unwrap();
    assert_eq!(provider.provider_tools(), [ProviderToolKind::WebSearch]);

    // A provider configured with an effort asks for it, and for the
    // encrypted reasoning a reasoning model returns, on every call that
    // names none; a call's own effort wins.
    config.base_url = Some(format!("{}/v1", h.server.base));
    let configured = evoflux_model::provider_for("x", &config, &Default::default()).unwrap();
    let _ = events(configured.stream(Request::new("m", vec![Message::user("hi")]))).await;
    let mut low = Request::new("m", vec![Message::user("hi")]);
    low.reasoning_effort = Some(ReasoningEffort::Low);
    let _ = events(configured.stream(low)).await;
    let sent = h.server.requests();
    assert_eq!(sent[1].body["reasoning"], json!({"effort": "high"}));
    assert_eq!(
        sent[1].body["include"],
        json!(["reasoning.encrypted_content"])
    );
    assert_eq!(sent[2].body["reasoning"], json!({"effort": "low"}));
    config.base_url = Some("http://127.0.0.1:9/v1".into());
    config.wire_api = None;
    let chat = evoflux_model::provider_for("x", &config, &Default::default()).unwrap();
    assert!(
        chat.provider_tools().is_empty(),
        "Chat Completions has none"
    );
}

#[tokio::test]
async fn web_search_calls_and_url_citations_are_provider_items() {
    let text = "Rust 2024 shipped in 1.85.";
    let stream = [
        created(),
        ev(json!({"type": "response.output_item.added", "output_index": 0,
                  "item": {"type": "web_search_call", "id": "ws_1", "status": "in_progress"}})),
        ev(json!({"type": "response.web_search_call.searching", "output_index": 0, "item_id": "ws_1"})),
        ev(json!({"type": "response.output_item.done", "output_index": 0,
                  "item": {"type": "web_search_call", "id": "ws_1", "status": "completed",
                           "action": {"type": "search", "query": "rust 2024 edition release",
                                      "sources": [{"type": "url", "url": "https://blog.rust-lang.org/2025/02/20/Rust-1.85.0/"},
                                                  {"type": "url", "url": "https://doc.rust-lang.org/edition-guide/"}]}}})),
        ev(json!({"type": "response.output_text.delta", "output_index": 1, "content_index": 0,
                  "delta": text})),
        ev(json!({"type": "response.output_text.annotation.added", "output_index": 1,
                  "annotation": {"type": "url_citation", "url": "https://blog.rust-lang.org/2025/02/20/Rust-1.85.0/"}})),
        ev(json!({"type": "response.output_item.done", "output_index": 1,
                  "item": {"type": "message", "id": "msg_1", "role": "assistant",
                           "content": [{"type": "output_text", "text": text, "annotations": [
                               {"type": "url_citation", "start_index": 0, "end_index": 26,
                                "url": "https://blog.rust-lang.org/2025/02/20/Rust-1.85.0/",
                                "title": "Announcing Rust 1.85.0"}]}]}})),
        completed(50, 0, 12),
    ]
    .concat();
    let h = responses(vec![Reply::sse(&stream, 17)]).await;
    let req = Request::new("gpt-5", vec![Message::user("When did Rust 2024 ship?")])
        .with_provider_tools(vec![ProviderToolKind::WebSearch]);
    let done = collect(h.provider.stream(req)).await.unwrap();
    // The usage object does not count searches; each finished
    // `web_search_call` item is one billed search.
    assert_eq!(done.usage.as_ref().map(|u| u.web_search_requests), Some(1));
    let Message::Assistant {
        content,
        tool_calls,
        provider_items,
    } = done.message
    else {
        panic!("not an assistant message");
    };
    assert_eq!(content, text);
    assert!(tool_calls.is_empty());
    assert_eq!(done.stop, StopReason::EndTurn);
    assert_eq!(
        provider_items,
        [
            ProviderItem::WebSearch(WebSearch {
                id: "ws_1".into(),
                query: Some("rust 2024 edition release".into()),
                sources: vec![
                    WebSource {
                        url: "https://blog.rust-lang.org/2025/02/20/Rust-1.85.0/".into(),
                        title: None,
                    },
                    WebSource {
                        url: "https://doc.rust-lang.org/edition-guide/".into(),
                        title: None,
                    },
                ],
                error: None,
            }),
            ProviderItem::Citation(Citation {
                url: "https://blog.rust-lang.org/2025/02/20/Rust-1.85.0/".into(),
                title: Some("Announcing Rust 1.85.0".into()),
                cited_text: None,
            }),
        ]
    );
    let body = &h.server.requests()[0].body;
    assert_eq!(body["tools"], json!([{"type": "web_search"}]));
    // No reasoning effort, so no encrypted reasoning asked for; the
    // search's sources are.
    assert_eq!(body["include"], json!(["web_search_call.action.sources"]));
}

#[test]
fn web_search_is_materialized_only_by_wires_that_have_it() {
    let req = Request::new("m", vec![Message::user("search")])
        .with_provider_tools(vec![ProviderToolKind::WebSearch]);
    assert_eq!(
        evoflux_model::responses::request_body(&req)["tools"],
        json!([{"type": "web_search"}])
    );
    assert_eq!(
        evoflux_model::anthropic::request_body(&req)["tools"],
        json!([{"type": "web_search_20250305", "name": "web_search", "max_uses": 5,
                "cache_control": {"type": "ephemeral"}}])
    );
    let chat = evoflux_model::openai::request_body(&req);
    assert!(chat.get("tools").is_none(), "{chat}");
    assert!(!chat.to_string().contains("web_search"), "{chat}");
    // Without the request asking, no wire sends it.
    let plain = Request::new("m", vec![Message::user("search")]);
    for body in [
        evoflux_model::responses::request_body(&plain),
        evoflux_model::anthropic::request_body(&plain),
    ] {
        assert!(!body.to_string().contains("web_search"), "{body}");
    }
}

#[tokio::test]
async fn invalid_call_arguments_are_an_invalid_tool_call() {
    let h = responses(vec![Reply::sse(&tool_call_stream("{\"path\": \"a.t"), 64)]).await;
    let got = events(h.provider.stream(request(first_turn()))).await;
    let invalid = got
        .iter()
        .find_map(|e| match e {
            StreamEvent::InvalidToolCall {
                call,
                raw_arguments,
                error,
            } => Some((call.clone(), raw_arguments.clone(), error.clone())),
            _ => None,
        })
        .expect("an invalid call");
    assert_eq!(invalid.0.id, "call_1");
    assert_eq!(invalid.0.arguments, json!({}));
    assert_eq!(invalid.1, "{\"path\": \"a.t");
    assert!(!invalid.2.is_empty());
    assert!(
        !got.iter()
            .any(|e| matches!(e, StreamEvent::ToolCall { .. })),
        "{got:?}"
    );
}

#[tokio::test]
async fn failed_responses_and_error_events_are_classified() {
    let failed = [
        created(),
        ev(
            json!({"type": "response.failed", "response": {"id": "resp_1", "status": "failed",
                  "error": {"code": "context_length_exceeded",
                            "message": "Your input exceeds the context window of this model."}}}),
        ),
    ]
    .concat();
    let h = responses(vec![Reply::sse(&failed, 64)]).await;
    let e = failure(h.provider.stream(request(first_turn()))).await;
    assert_eq!(e.code(), "model/context-exceeded", "{e}");

    // After text has streamed nothing is retried: the error ends the stream.
    let mid = [
        created(),
        ev(json!({"type": "response.output_text.delta", "output_index": 0, "delta": "Hal"})),
        ev(
            json!({"type": "error", "code": "rate_limit_exceeded", "message": "Slow down.",
                  "param": null}),
        ),
    ]
    .concat();
    let h = responses(vec![Reply::sse(&mid, 64)]).await;
    let items = crate::common::drain(h.provider.stream(request(first_turn()))).await;
    assert_eq!(items.len(), 2, "{items:?}");
    assert_eq!(
        items[0].as_ref().unwrap(),
        &StreamEvent::TextDelta { text: "Hal".into() }
    );
    let e = items[1].as_ref().unwrap_err();
    assert_eq!(e.code(), "model/rate-limited", "{e}");
}

#[tokio::test]
async fn a_stream_that_ends_with_zero_bytes_is_retried() {
    let h = responses(vec![Reply::sse("", 16), Reply::sse(&text_stream("Hi"), 64)]).await;
    let done = collect(h.provider.stream(request(first_turn())))
        .await
        .unwrap();
    assert_eq!(done.message, Message::assistant("Hi"));
    assert_eq!(h.server.requests().len(), 2);
    assert_eq!(h.sleeps.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn an_empty_reply_is_an_error_not_an_answer() {
    // A reasoning item alone: the model thought and said nothing.
    let body = [
        created(),
        ev(json!({"type": "response.output_item.done", "output_index": 0, "item": reasoning_item()})),
        completed(40, 0, 20),
    ]
    .concat();
    let h = responses(vec![Reply::sse(&body, 64)]).await;
    let err = failure(h.provider.stream(request(first_turn()))).await;
    assert_eq!(err.code(), "model/empty-reply", "{err}");
    assert_eq!(h.server.requests().len(), 1);
}

#[tokio::test]
async fn incomplete_is_a_stop_reason_and_a_cut_stream_is_a_protocol_error() {
    let incomplete = [
        created(),
        ev(json!({"type": "response.output_text.delta", "output_index": 0, "delta": "Long"})),
        ev(json!({"type": "response.incomplete", "response": {"id": "resp_1", "status": "incomplete",
                  "incomplete_details": {"reason": "max_output_tokens"},
                  "usage": {"input_tokens": 9, "output_tokens": 16}}})),
    ]
    .concat();
    let h = responses(vec![Reply::sse(&incomplete, 64)]).await;
    let done = collect(h.provider.stream(request(first_turn())))
        .await
        .unwrap();
    assert_eq!(done.stop, StopReason::MaxTokens);
    assert_eq!(done.usage.unwrap().output_tokens, 16);

    let cut = [
        created(),
        ev(json!({"type": "response.output_text.delta", "output_index": 0, "delta": "Hal"})),
    ]
    .concat();
    let h = responses(vec![Reply::sse(&cut, 64)]).await;
    let e = failure(h.provider.stream(request(first_turn()))).await;
    assert_eq!(e.code(), "model/protocol", "{e}");
}

#[tokio::test]
async fn a_refusal_is_the_answer_text_and_stops_as_filtered() {
    let words = "I can't help with that.";
    let stream = [
        created(),
        ev(
            json!({"type": "response.output_item.added", "output_index": 0,
                  "item": {"type": "message", "id": "msg_1", "role": "assistant", "content": []}}),
        ),
        ev(
            json!({"type": "response.refusal.delta", "output_index": 0, "content_index": 0,
                  "item_id": "msg_1", "delta": words}),
        ),
        ev(
            json!({"type": "response.refusal.done", "output_index": 0, "content_index": 0,
                  "item_id": "msg_1", "refusal": words}),
        ),
        ev(
            json!({"type": "response.output_item.done", "output_index": 0,
                  "item": {"type": "message", "id": "msg_1", "role": "assistant",
                           "content": [{"type": "refusal", "refusal": words}]}}),
        ),
        completed(30, 0, 8),
    ]
    .concat();
    let h = responses(vec![Reply::sse(&stream, 64)]).await;
    let done = collect(h.provider.stream(request(first_turn())))
        .await
        .unwrap();
    assert_eq!(done.message, Message::assistant(words));
    assert_eq!(done.stop, StopReason::ContentFilter);
}
