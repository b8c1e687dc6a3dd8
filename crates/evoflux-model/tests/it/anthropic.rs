use std::time::Duration;

use evoflux_core::config::ProviderKind;
use evoflux_model::{
    Message, Request, StopReason, StreamEvent, ToolCall, ToolDefinition, Usage, collect,
};
use serde_json::{Value, json};

use crate::common::{KEY_VAR, Reply, event, events, failure, harness};

fn message_start(input: u64, cache_read: u64) -> String {
    event(&json!({
        "type": "message_start",
        "message": {
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
            "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": input, "cache_read_input_tokens": cache_read,
                      "cache_creation_input_tokens": 3, "output_tokens": 1},
        },
    }))
}

fn block_start(index: u32, block: Value) -> String {
    event(&json!({"type": "content_block_start", "index": index, "content_block": block}))
}

fn block_delta(index: u32, delta: Value) -> String {
    event(&json!({"type": "content_block_delta", "index": index, "delta": delta}))
}

fn block_stop(index: u32) -> String {
    event(&json!({"type": "content_block_stop", "index": index}))
}

fn message_end(reason: &str, output: u64) -> String {
    [
        event(&json!({
            "type": "message_delta",
            "delta": {"stop_reason": reason, "stop_sequence": null},
            "usage": {"output_tokens": output},
        })),
        event(&json!({"type": "message_stop"})),
    ]
    .concat()
}

fn hello_stream() -> String {
    [
        message_start(20, 5),
        block_start(0, json!({"type": "text", "text": ""})),
        event(&json!({"type": "ping"})),
        block_delta(0, json!({"type": "text_delta", "text": "Hel"})),
        block_delta(0, json!({"type": "text_delta", "text": "lo"})),
        block_stop(0),
        message_end("end_turn", 7),
    ]
    .concat()
}

fn simple_request() -> Request {
    Request::new("claude-test", vec![Message::user("hi")])
}

#[tokio::test]
async fn streams_text_and_usage_and_sends_the_wire_request() {
    let h = harness(
        ProviderKind::Anthropic,
        vec![Reply::sse(&hello_stream(), 9)],
        Some("ak-test"),
    )
    .await;
    let request = Request::new(
        "claude-test",
        vec![
            Message::system("You are terse."),
            Message::user("List files"),
            Message::Assistant {
                provider_items: Vec::new(),
                content: "Looking.".into(),
                tool_calls: vec![ToolCall {
                    id: "toolu_1".into(),
                    name: "ls".into(),
                    arguments: json!({"path": "."}),
                }],
            },
            Message::Tool {
                tool_call_id: "toolu_1".into(),
                content: "permission denied".into(),
                is_error: true,
                media: Vec::new(),
            },
        ],
    )
    .with_tools(vec![ToolDefinition {
        name: "ls".into(),
        description: "List a directory.".into(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
    }])
    .with_max_tokens(256);

    let got = events(h.provider.stream(request)).await;
    assert_eq!(
        got,
        vec![
            StreamEvent::TextDelta { text: "Hel".into() },
            StreamEvent::TextDelta { text: "lo".into() },
            StreamEvent::Usage {
                usage: Usage {
                    input_tokens: 28,
                    output_tokens: 7,
                    cached_input_tokens: 5,
                    cache_write_input_tokens: 3,
                    web_search_requests: 0,
                }
            },
            StreamEvent::Stop {
                reason: StopReason::EndTurn
            },
            StreamEvent::Done,
        ]
    );

    let reqs = h.server.requests();
    assert_eq!(reqs.len(), 1);
    let r = &reqs[0];
    assert_eq!(r.path, "/v1/messages");
    assert_eq!(r.headers["x-api-key"], "ak-test");
    assert_eq!(r.headers["anthropic-version"], "2023-06-01");
    assert!(r.headers.get("authorization").is_none());
    assert_eq!(
        r.body,
        json!({
            "model": "claude-test",
            "max_tokens": 256,
            "stream": true,
            // Breakpoints end the tools, the system prompt, the user
            // message before the newest, and the newest message.
            "system": [{"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}],
            "messages": [
                {"role": "user", "content": [
                    {"type": "text", "text": "List files", "cache_control": {"type": "ephemeral"}},
                ]},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Looking."},
                    {"type": "tool_use", "id": "toolu_1", "name": "ls", "input": {"path": "."}},
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1",
                     "content": "permission denied", "is_error": true,
                     "cache_control": {"type": "ephemeral"}},
                ]},
            ],
            "tools": [{
                "name": "ls",
                "description": "List a directory.",
                "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
            }],
        })
    );
}

#[tokio::test]
async fn assembles_tool_use_from_input_json_deltas() {
    let body = [
        message_start(50, 0),
        block_start(0, json!({"type": "text", "text": ""})),
        block_delta(0, json!({"type": "text_delta", "text": "Reading."})),
        block_stop(0),
        block_start(
            1,
            json!({"type": "tool_use", "id": "toolu_a", "name": "read", "input": {}}),
        ),
        block_delta(1, json!({"type": "input_json_delta", "partial_json": ""})),
        block_delta(
            1,
            json!({"type": "input_json_delta", "partial_json": "{\"path\": \"sr"}),
        ),
        block_delta(
            1,
            json!({"type": "input_json_delta", "partial_json": "c/lib.rs\", \"limit\""}),
        ),
        block_delta(
            1,
            json!({"type": "input_json_delta", "partial_json": ": 20}"}),
        ),
        block_stop(1),
        block_start(
            2,
            json!({"type": "tool_use", "id": "toolu_b", "name": "now", "input": {}}),
        ),
        block_stop(2),
        message_end("tool_use", 40),
    ]
    .concat();
    let h = harness(
        ProviderKind::Anthropic,
        vec![Reply::sse(&body, 5)],
        Some("k"),
    )
    .await;
    let got = events(h.provider.stream(simple_request())).await;
    let json_deltas: String = got
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ToolCallDelta {
                index: 1,
                arguments,
                ..
            } => Some(arguments.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(json_deltas, "{\"path\": \"src/lib.rs\", \"limit\": 20}");

    let calls: Vec<_> = got
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ToolCall { call } => Some(call.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        calls,
        vec![
            ToolCall {
                id: "toolu_a".into(),
                name: "read".into(),
                arguments: json!({"path": "src/lib.rs", "limit": 20}),
            },
            ToolCall {
                id: "toolu_b".into(),
                name: "now".into(),
                arguments: json!({}),
            },
        ]
    );
    assert_eq!(
        got[got.len() - 2],
        StreamEvent::Stop {
            reason: StopReason::ToolUse
        }
    );

    let h = harness(
        ProviderKind::Anthropic,
        vec![Reply::sse(&body, 64)],
        Some("k"),
    )
    .await;
    let done = collect(h.provider.stream(simple_request())).await.unwrap();
    assert_eq!(
        done.message,
        Message::Assistant {
            provider_items: Vec::new(),
            content: "Reading.".into(),
            tool_calls: calls,
        }
    );
    assert_eq!(done.usage.unwrap().output_tokens, 40);
}

#[tokio::test]
async fn overloaded_error_event_before_content_is_retried() {
    let overloaded = [
        message_start(10, 0),
        event(&json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})),
    ]
    .concat();
    let h = harness(
        ProviderKind::Anthropic,
        vec![Reply::sse(&overloaded, 11), Reply::sse(&hello_stream(), 11)],
        Some("k"),
    )
    .await;
    let done = collect(h.provider.stream(simple_request())).await.unwrap();
    assert_eq!(done.message, Message::assistant("Hello"));
    assert_eq!(h.server.requests().len(), 2);
    assert_eq!(h.sleeps.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn rate_limit_honours_retry_after() {
    let h = harness(
        ProviderKind::Anthropic,
        vec![
            Reply::error(
                429,
                r#"{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}"#,
            )
            .header("retry-after", "3"),
            Reply::sse(&hello_stream(), 32),
        ],
        Some("k"),
    )
    .await;
    let done = collect(h.provider.stream(simple_request())).await.unwrap();
    assert_eq!(done.stop, StopReason::EndTurn);
    assert_eq!(*h.sleeps.lock().unwrap(), vec![Duration::from_secs(3)]);
}

#[tokio::test]
async fn a_stream_that_ends_with_zero_bytes_is_retried() {
    let h = harness(
        ProviderKind::Anthropic,
        vec![Reply::sse("", 16), Reply::sse(&hello_stream(), 32)],
        Some("k"),
    )
    .await;
    let done = collect(h.provider.stream(simple_request())).await.unwrap();
    assert_eq!(done.message, Message::assistant("Hello"));
    assert_eq!(h.server.requests().len(), 2);
    assert_eq!(h.sleeps.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn an_empty_reply_is_an_error_not_an_answer() {
    let body = [
        message_start(20, 0),
        block_start(0, json!({"type": "text", "text": ""})),
        block_stop(0),
        message_end("end_turn", 1),
    ]
    .concat();
    let h = harness(
        ProviderKind::Anthropic,
        vec![Reply::sse(&body, 32)],
        Some("k"),
    )
    .await;
    let err = failure(h.provider.stream(simple_request())).await;
    assert_eq!(err.code(), "model/empty-reply", "{err}");
    assert!(err.to_string().contains("end_turn"), "{err}");
    assert_eq!(h.server.requests().len(), 1);
}

#[tokio::test]
async fn unauthorized_is_auth_and_not_retried() {
    let h = harness(
        ProviderKind::Anthropic,
        vec![Reply::error(
            401,
            r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#,
        )],
        Some("bad"),
    )
    .await;
    let err = failure(h.provider.stream(simple_request())).await;
    assert_eq!(err.code(), "model/auth");
    assert!(err.to_string().contains(KEY_VAR), "{err}");
    assert_eq!(h.server.requests().len(), 1);
}

#[tokio::test]
async fn prompt_too_long_is_context_exceeded() {
    let h = harness(
        ProviderKind::Anthropic,
        vec![Reply::error(
            400,
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#,
        )],
        Some("k"),
    )
    .await;
    let err = failure(h.provider.stream(simple_request())).await;
    assert_eq!(err.code(), "model/context-exceeded");
    assert_eq!(h.server.requests().len(), 1);
}

#[tokio::test]
async fn stream_cut_before_message_stop_is_protocol() {
    let body = [
        message_start(10, 0),
        block_start(0, json!({"type": "text", "text": ""})),
        block_delta(0, json!({"type": "text_delta", "text": "Hi"})),
    ]
    .concat();
    let h = harness(
        ProviderKind::Anthropic,
        vec![Reply::sse(&body, 13)],
        Some("k"),
    )
    .await;
    let items = crate::common::drain(h.provider.stream(simple_request())).await;
    assert_eq!(items.len(), 2);
    assert_eq!(items[1].clone().unwrap_err().code(), "model/protocol");
    assert_eq!(h.server.requests().len(), 1);
}

#[tokio::test]
async fn json_delta_for_a_text_block_is_protocol() {
    let body = [
        message_start(10, 0),
        block_start(0, json!({"type": "text", "text": ""})),
        block_delta(0, json!({"type": "input_json_delta", "partial_json": "{}"})),
    ]
    .concat();
    let h = harness(
        ProviderKind::Anthropic,
        vec![Reply::sse(&body, 13)],
        Some("k"),
    )
    .await;
    let err = failure(h.provider.stream(simple_request())).await;
    assert_eq!(err.code(), "model/protocol");
}

#[tokio::test]
async fn a_server_web_search_is_shown_with_its_citations_and_sent_back_verbatim() {
    let result = json!({
        "type": "web_search_tool_result",
        "tool_use_id": "srvtoolu_1",
        "content": [
            {"type": "web_search_result", "url": "https://blog.rust-lang.org/2025/02/20/Rust-1.85.0/",
             "title": "Announcing Rust 1.85.0", "encrypted_content": "EqgfCioIARgB", "page_age": "February 20, 2025"},
            {"type": "web_search_result", "url": "https://doc.rust-lang.org/edition-guide/",
             "title": "The Edition Guide", "encrypted_content": "EqgfCioIARgC"},
        ],
    });
    let citation = json!({
        "type": "web_search_result_location",
        "url": "https://blog.rust-lang.org/2025/02/20/Rust-1.85.0/",
        "title": "Announcing Rust 1.85.0",
        "encrypted_index": "Eo8BCioIAhgB",
        "cited_text": "Rust 1.85.0 stabilizes the 2024 edition.",
    });
    let body = [
        message_start(40, 0),
        block_start(0, json!({"type": "text", "text": ""})),
        block_delta(0, json!({"type": "text_delta", "text": "Let me check. "})),
        block_stop(0),
        block_start(
            1,
            json!({"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}),
        ),
        block_delta(1, json!({"type": "input_json_delta", "partial_json": "{\"query\": \"rust 2024"})),
        block_delta(1, json!({"type": "input_json_delta", "partial_json": " edition\"}"})),
        block_stop(1),
        block_start(2, result.clone()),
        block_stop(2),
        block_start(3, json!({"type": "text", "text": "", "citations": []})),
        block_delta(3, json!({"type": "citations_delta", "citation": citation})),
        block_delta(3, json!({"type": "text_delta", "text": "It shipped in 1.85."})),
        block_stop(3),
        // The API counts the searches it ran (each billed) in the usage.
        event(&json!({
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn", "stop_sequence": null},
            "usage": {"output_tokens": 30, "server_tool_use": {"web_search_requests": 1}},
        })),
        event(&json!({"type": "message_stop"})),
    ]
    .concat();
    let h = harness(
        ProviderKind::Anthropic,
        vec![Reply::sse(&body, 13), Reply::sse(&hello_stream(), 64)],
        Some("k"),
    )
    .await;
    assert_eq!(
        h.provider.provider_tools(),
        [evoflux_model::ProviderToolKind::WebSearch]
    );
    let ask = |messages: Vec<Message>| {
        Request::new("claude-test", messages)
            .with_provider_tools(vec![evoflux_model::ProviderToolKind::WebSearch])
    };
    let done = collect(h.provider.stream(ask(vec![Message::user("When?")])))
        .await
        .unwrap();
    let Message::Assistant {
        content,
        provider_items,
        ..
    } = &done.message
    else {
        panic!("not an assistant message");
    };
    assert_eq!(content, "Let me check. It shipped in 1.85.");
    assert_eq!(done.usage.as_ref().map(|u| u.web_search_requests), Some(1));
    let server_use = json!({"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search",
                            "input": {"query": "rust 2024 edition"}});
    assert_eq!(
        provider_items,
        &[
            evoflux_model::ProviderItem::AnthropicBlock {
                block: server_use.clone(),
                text_offset: "Let me check. ".len(),
            },
            evoflux_model::ProviderItem::AnthropicBlock {
                block: result.clone(),
                text_offset: "Let me check. ".len(),
            },
            evoflux_model::ProviderItem::WebSearch(evoflux_model::WebSearch {
                id: "srvtoolu_1".into(),
                query: Some("rust 2024 edition".into()),
                sources: vec![
                    evoflux_model::WebSource {
                        url: "https://blog.rust-lang.org/2025/02/20/Rust-1.85.0/".into(),
                        title: Some("Announcing Rust 1.85.0".into()),
                    },
                    evoflux_model::WebSource {
                        url: "https://doc.rust-lang.org/edition-guide/".into(),
                        title: Some("The Edition Guide".into()),
                    },
                ],
                error: None,
            }),
            evoflux_model::ProviderItem::Citation(evoflux_model::Citation {
                url: "https://blog.rust-lang.org/2025/02/20/Rust-1.85.0/".into(),
                title: Some("Announcing Rust 1.85.0".into()),
                cited_text: Some("Rust 1.85.0 stabilizes the 2024 edition.".into()),
            }),
        ]
    );

    // The next request gives the server blocks back verbatim, between
    // the text before the search and the text after it, as they streamed,
    // and offers the search tool again.
    let next = vec![
        Message::user("When?"),
        done.message.clone(),
        Message::user("Thanks."),
    ];
    let _ = collect(h.provider.stream(ask(next))).await.unwrap();
    let sent = &h.server.requests()[1].body;
    assert_eq!(
        sent["messages"][1]["content"],
        json!([
            {"type": "text", "text": "Let me check. "},
            server_use,
            result,
            {"type": "text", "text": "It shipped in 1.85."},
        ])
    );
    assert_eq!(
        sent["tools"],
        json!([{"type": "web_search_20250305", "name": "web_search", "max_uses": 5,
                "cache_control": {"type": "ephemeral"}}])
    );
}

#[tokio::test]
async fn a_paused_turn_is_paused_and_goes_on_from_its_last_block() {
    // The server's search loop paused after a search: no result yet.
    let body = [
        message_start(40, 0),
        block_start(0, json!({"type": "text", "text": "Searching."})),
        block_stop(0),
        block_start(
            1,
            json!({"type": "server_tool_use", "id": "srvtoolu_9", "name": "web_search",
                   "input": {"query": "evoflux"}}),
        ),
        block_stop(1),
        message_end("pause_turn", 9),
    ]
    .concat();
    let h = harness(
        ProviderKind::Anthropic,
        vec![Reply::sse(&body, 64), Reply::sse(&hello_stream(), 64)],
        Some("k"),
    )
    .await;
    let ask = |messages: Vec<Message>| {
        Request::new("claude-test", messages)
            .with_provider_tools(vec![evoflux_model::ProviderToolKind::WebSearch])
    };
    let paused = collect(h.provider.stream(ask(vec![Message::user("Find it.")])))
        .await
        .unwrap();
    assert_eq!(paused.stop, StopReason::Paused);
    // Going on: the answer so far is the last message, its server block
    // last, so the server resumes the search rather than the text.
    let _ = collect(
        h.provider
            .stream(ask(vec![Message::user("Find it."), paused.message.clone()])),
    )
    .await
    .unwrap();
    let sent = &h.server.requests()[1].body;
    let last = sent["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(last["role"], "assistant");
    assert_eq!(
        last["content"][0],
        json!({"type": "text", "text": "Searching."})
    );
    assert_eq!(last["content"][1]["type"], "server_tool_use");
    assert_eq!(last["content"][1]["id"], "srvtoolu_9");
    assert_eq!(last["content"].as_array().unwrap().len(), 2);
}
