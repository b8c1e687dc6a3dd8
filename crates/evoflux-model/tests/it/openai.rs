use std::time::Duration;

use evoflux_core::config::ProviderKind;
use evoflux_model::{
    Message, ProviderError, Request, StopReason, StreamEvent, ToolCall, ToolDefinition, Usage,
    collect,
};
use serde_json::{Value, json};

use crate::common::{KEY_VAR, Reply, data, events, failure, harness};

fn chunk(delta: Value, finish: Option<&str>) -> String {
    data(&json!({
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "model": "gpt-test",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }))
}

fn usage_chunk(prompt: u64, completion: u64, cached: u64) -> String {
    data(&json!({
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "choices": [],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached},
        },
    }))
}

fn hello_stream() -> String {
    [
        chunk(json!({"role": "assistant", "content": ""}), None),
        chunk(json!({"content": "Hel"}), None),
        chunk(json!({"content": "lo"}), None),
        chunk(json!({}), Some("stop")),
        usage_chunk(12, 2, 4),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat()
}

fn read_tool() -> ToolDefinition {
    ToolDefinition {
        name: "read".into(),
        description: "Read a file.".into(),
        parameters: json!({
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        }),
    }
}

fn simple_request() -> Request {
    Request::new("gpt-test", vec![Message::user("hi")])
}

#[tokio::test]
async fn streams_text_and_usage_and_sends_the_wire_request() {
    let h = harness(
        ProviderKind::Openai,
        vec![Reply::sse(&hello_stream(), 7)],
        Some("sk-test"),
    )
    .await;
    let request = Request::new(
        "gpt-test",
        vec![
            Message::system("Be brief."),
            Message::user("Read a.txt"),
            Message::Assistant {
                provider_items: Vec::new(),
                content: String::new(),
                tool_calls: vec![ToolCall {
                    id: "call_0".into(),
                    name: "read".into(),
                    arguments: json!({"path": "a.txt"}),
                }],
            },
            Message::tool_result("call_0", "hello"),
        ],
    )
    .with_tools(vec![read_tool()])
    .with_temperature(0.5)
    .with_max_tokens(64);

    let got = events(h.provider.stream(request)).await;
    assert_eq!(
        got,
        vec![
            StreamEvent::TextDelta { text: "Hel".into() },
            StreamEvent::TextDelta { text: "lo".into() },
            StreamEvent::Usage {
                usage: Usage {
                    input_tokens: 12,
                    output_tokens: 2,
                    cached_input_tokens: 4,
                    cache_write_input_tokens: 0,
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
    assert_eq!(r.path, "/v1/chat/completions");
    assert_eq!(r.headers["authorization"], "Bearer sk-test");
    assert_eq!(
        r.body,
        json!({
            "model": "gpt-test",
            "stream": true,
            "stream_options": {"include_usage": true},
            "max_tokens": 64,
            "temperature": 0.5,
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "Read a.txt"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "call_0", "type": "function",
                     "function": {"name": "read", "arguments": "{\"path\":\"a.txt\"}"}}
                ]},
                {"role": "tool", "tool_call_id": "call_0", "content": "hello"},
            ],
            "tools": [{"type": "function", "function": {
                "name": "read",
                "description": "Read a file.",
                "parameters": {
                    "type": "object",
                    "properties": {"path": {"type": "string"}},
                    "required": ["path"],
                },
            }}],
        })
    );
    assert!(h.sleeps.lock().unwrap().is_empty());
}

#[tokio::test]
async fn assembles_tool_calls_from_split_interleaved_deltas() {
    let call = |index: u32, id: Option<&str>, name: Option<&str>, args: &str| {
        let mut function = json!({"arguments": args});
        if let Some(n) = name {
            function["name"] = json!(n);
        }
        let mut tc = json!({"index": index, "function": function});
        if let Some(id) = id {
            tc["id"] = json!(id);
            tc["type"] = json!("function");
        }
        chunk(json!({"tool_calls": [tc]}), None)
    };
    let body = [
        chunk(json!({"role": "assistant", "content": null}), None),
        call(0, Some("call_a"), Some("read"), ""),
        call(0, None, None, "{\"pa"),
        call(1, Some("call_b"), Some("ls"), "{\"path\""),
        call(0, None, None, "th\": \"src/ma"),
        call(1, None, None, ": \".\"}"),
        call(0, None, None, "in.rs\"}"),
        chunk(json!({}), Some("tool_calls")),
        usage_chunk(30, 9, 0),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat();
    // 5-byte chunks split every SSE line, and JSON tokens, in the middle.
    let h = harness(ProviderKind::Openai, vec![Reply::sse(&body, 5)], Some("k")).await;
    let got = events(h.provider.stream(simple_request())).await;

    let deltas: Vec<_> = got
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ToolCallDelta {
                index, arguments, ..
            } => Some((*index, arguments.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(deltas.len(), 6);
    assert_eq!(deltas[2], (1, "{\"path\"".to_owned()));

    let tail: Vec<_> = got
        .iter()
        .filter(|e| !matches!(e, StreamEvent::ToolCallDelta { .. }))
        .cloned()
        .collect();
    assert_eq!(
        tail,
        vec![
            StreamEvent::ToolCall {
                call: ToolCall {
                    id: "call_a".into(),
                    name: "read".into(),
                    arguments: json!({"path": "src/main.rs"}),
                }
            },
            StreamEvent::ToolCall {
                call: ToolCall {
                    id: "call_b".into(),
                    name: "ls".into(),
                    arguments: json!({"path": "."}),
                }
            },
            StreamEvent::Usage {
                usage: Usage {
                    input_tokens: 30,
                    output_tokens: 9,
                    cached_input_tokens: 0,
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
}

#[tokio::test]
async fn collect_builds_the_assistant_message() {
    let h = harness(
        ProviderKind::Openai,
        vec![Reply::sse(&hello_stream(), 64)],
        Some("k"),
    )
    .await;
    let done = collect(h.provider.stream(simple_request())).await.unwrap();
    assert_eq!(done.message, Message::assistant("Hello"));
    assert_eq!(done.stop, StopReason::EndTurn);
    assert_eq!(done.usage.map(|u| u.output_tokens), Some(2));
    assert_eq!(h.provider.context_window(), Some(32_000));
}

#[tokio::test]
async fn rate_limit_honours_retry_after_then_succeeds() {
    let h = harness(
        ProviderKind::Openai,
        vec![
            Reply::error(
                429,
                r#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}"#,
            )
            .header("retry-after", "2"),
            Reply::sse(&hello_stream(), 16),
        ],
        Some("k"),
    )
    .await;
    let done = collect(h.provider.stream(simple_request())).await.unwrap();
    assert_eq!(done.message, Message::assistant("Hello"));
    assert_eq!(h.server.requests().len(), 2);
    assert_eq!(*h.sleeps.lock().unwrap(), vec![Duration::from_secs(2)]);
}

#[tokio::test]
async fn a_longer_retry_after_than_the_policy_waits_is_reported_at_once_with_the_wait() {
    let h = harness(
        ProviderKind::Openai,
        vec![
            Reply::error(
                429,
                r#"{"error":{"message":"You exceeded your current quota","type":"requests","code":"rate_limit_exceeded"}}"#,
            )
            .header("retry-after", "86400"),
            Reply::sse(&hello_stream(), 16),
        ],
        Some("k"),
    )
    .await;
    let err = failure(h.provider.stream(simple_request())).await;
    assert_eq!(err.code(), "model/rate-limited");
    assert_eq!(err.retry_after(), Some(Duration::from_secs(86400)));
    let msg = err.to_string();
    assert!(msg.contains("24.0 h") && msg.contains("quota"), "{msg}");
    assert_eq!(
        h.server.requests().len(),
        1,
        "asking again is refused again"
    );
    assert!(h.sleeps.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_stream_that_ends_with_zero_bytes_is_retried() {
    let h = harness(
        ProviderKind::Openai,
        vec![Reply::sse("", 16), Reply::sse(&hello_stream(), 16)],
        Some("k"),
    )
    .await;
    let done = collect(h.provider.stream(simple_request())).await.unwrap();
    assert_eq!(done.message, Message::assistant("Hello"));
    assert_eq!(h.server.requests().len(), 2);
    assert_eq!(h.sleeps.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn streams_of_zero_bytes_to_the_last_attempt_are_a_transport_error() {
    let replies = (0..4).map(|_| Reply::sse("", 16)).collect();
    let h = harness(ProviderKind::Openai, replies, Some("k")).await;
    let err = failure(h.provider.stream(simple_request())).await;
    assert_eq!(err.code(), "model/transport", "{err}");
    assert!(
        err.to_string().contains("without sending a single event"),
        "{err}"
    );
    assert_eq!(h.server.requests().len(), 4);
}

#[tokio::test]
async fn an_empty_reply_is_an_error_not_an_answer() {
    for content in ["", " \n"] {
        let body = [
            chunk(json!({"role": "assistant", "content": content}), None),
            chunk(json!({}), Some("stop")),
            usage_chunk(12, 0, 0),
            "data: [DONE]\n\n".to_owned(),
        ]
        .concat();
        let h = harness(ProviderKind::Openai, vec![Reply::sse(&body, 16)], Some("k")).await;
        let items = crate::common::drain(h.provider.stream(simple_request())).await;
        let err = items.last().unwrap().clone().unwrap_err();
        assert_eq!(err.code(), "model/empty-reply", "{content:?}: {err}");
        assert!(err.to_string().contains("end_turn"), "{err}");
        assert!(!err.is_retryable());
        assert_eq!(h.server.requests().len(), 1);
        assert!(
            items
                .iter()
                .all(|i| !matches!(i, Ok(StreamEvent::Stop { .. }))),
            "no stop reason is reported for it: {items:?}"
        );
    }
}

#[tokio::test]
async fn server_errors_are_retried_with_backoff() {
    let h = harness(
        ProviderKind::Openai,
        vec![
            Reply::error(
                500,
                r#"{"error":{"message":"internal","type":"server_error"}}"#,
            ),
            Reply::error(502, "<html>bad gateway</html>"),
            Reply::sse(&hello_stream(), 16),
        ],
        Some("k"),
    )
    .await;
    let done = collect(h.provider.stream(simple_request())).await.unwrap();
    assert_eq!(done.message, Message::assistant("Hello"));
    assert_eq!(h.server.requests().len(), 3);
    let sleeps = h.sleeps.lock().unwrap().clone();
    assert_eq!(sleeps.len(), 2);
    // 100 ms then 200 ms, each with ±10 % jitter.
    assert!(sleeps[0] >= Duration::from_millis(90) && sleeps[0] <= Duration::from_millis(110));
    assert!(sleeps[1] >= Duration::from_millis(180) && sleeps[1] <= Duration::from_millis(220));
}

#[tokio::test]
async fn server_errors_give_up_after_max_attempts() {
    let replies = (0..4).map(|_| Reply::error(503, "busy")).collect();
    let h = harness(ProviderKind::Openai, replies, Some("k")).await;
    let err = failure(h.provider.stream(simple_request())).await;
    assert_eq!(err.code(), "model/server");
    assert!(matches!(
        err,
        ProviderError::Server {
            status: Some(503),
            ..
        }
    ));
    assert_eq!(h.server.requests().len(), 4);
}

#[tokio::test]
async fn unauthorized_is_auth_names_the_env_var_and_is_not_retried() {
    let h = harness(
        ProviderKind::Openai,
        vec![Reply::error(
            401,
            r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}"#,
        )],
        Some("sk-wrong"),
    )
    .await;
    let err = failure(h.provider.stream(simple_request())).await;
    assert_eq!(err.code(), "model/auth");
    let msg = err.to_string();
    assert!(msg.contains(KEY_VAR), "{msg}");
    assert!(msg.contains("Incorrect API key"), "{msg}");
    assert_eq!(h.server.requests().len(), 1);
    assert!(h.sleeps.lock().unwrap().is_empty());
}

#[tokio::test]
async fn missing_key_fails_before_any_request() {
    let h = harness(ProviderKind::Openai, vec![], None).await;
    let err = failure(h.provider.stream(simple_request())).await;
    assert!(
        matches!(&err, ProviderError::Auth { env_var: Some(v), .. } if v == KEY_VAR),
        "{err:?}"
    );
    assert!(h.server.requests().is_empty());
}

#[tokio::test]
async fn malformed_sse_is_a_protocol_error_and_not_retried() {
    for body in ["data: {not json\n\n", "this line has no colon\n\n"] {
        let h = harness(ProviderKind::Openai, vec![Reply::sse(body, 4)], Some("k")).await;
        let err = failure(h.provider.stream(simple_request())).await;
        assert_eq!(err.code(), "model/protocol", "{body:?}: {err}");
        assert_eq!(h.server.requests().len(), 1);
    }
}

#[tokio::test]
async fn stream_cut_off_before_done_is_a_protocol_error() {
    let body = chunk(json!({"content": "partial"}), None);
    let h = harness(ProviderKind::Openai, vec![Reply::sse(&body, 8)], Some("k")).await;
    let items = crate::common::drain(h.provider.stream(simple_request())).await;
    assert_eq!(
        items[0],
        Ok(StreamEvent::TextDelta {
            text: "partial".into()
        })
    );
    let err = items[1].clone().unwrap_err();
    assert_eq!(err.code(), "model/protocol");
    assert_eq!(items.len(), 2);
}

#[tokio::test]
async fn error_after_streamed_text_is_not_retried() {
    let body = [
        chunk(json!({"content": "Hi"}), None),
        data(&json!({"error": {"message": "upstream failed", "type": "server_error"}})),
    ]
    .concat();
    let h = harness(
        ProviderKind::Openai,
        vec![Reply::sse(&body, 16), Reply::sse(&hello_stream(), 16)],
        Some("k"),
    )
    .await;
    let items = crate::common::drain(h.provider.stream(simple_request())).await;
    assert_eq!(items.len(), 2);
    assert_eq!(items[1].clone().unwrap_err().code(), "model/server");
    assert_eq!(h.server.requests().len(), 1);
}

#[tokio::test]
async fn context_length_error_is_classified() {
    let h = harness(
        ProviderKind::Openai,
        vec![Reply::error(
            400,
            r#"{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
        )],
        Some("k"),
    )
    .await;
    let err = failure(h.provider.stream(simple_request())).await;
    assert_eq!(err.code(), "model/context-exceeded");
    assert!(!err.is_retryable());
    assert_eq!(h.server.requests().len(), 1);
}

#[tokio::test]
async fn other_client_errors_are_bad_requests() {
    let h = harness(
        ProviderKind::Openai,
        vec![Reply::error(
            404,
            r#"{"error":{"message":"The model `gpt-nope` does not exist","type":"invalid_request_error","code":"model_not_found"}}"#,
        )],
        Some("k"),
    )
    .await;
    let err = failure(h.provider.stream(simple_request())).await;
    assert!(
        matches!(err, ProviderError::BadRequest { status: 404, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("base_url"), "{err}");
}

#[tokio::test]
async fn unreachable_server_is_a_transport_error_after_retries() {
    // Bind and drop a listener so the port is (very likely) closed.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let config = evoflux_core::config::ProviderConfig {
        wire_api: None,
        reasoning_effort: None,
        images: None,
        audio: None,
        kind: ProviderKind::Openai,
        base_url: Some(format!("http://127.0.0.1:{port}/v1")),
        api_key_env: None,
        context_window: None,
        model_path: None,
        limits: Default::default(),
    };
    let (sleeper, sleeps) = crate::common::recording_sleeper();
    let options = evoflux_model::ProviderOptions {
        sleeper,
        retry: evoflux_model::RetryPolicy {
            max_attempts: 3,
            ..Default::default()
        },
        ..Default::default()
    };
    let provider = evoflux_model::provider_for("ollama", &config, &options).unwrap();
    let err = failure(provider.stream(simple_request())).await;
    assert_eq!(err.code(), "model/transport");
    assert!(err.to_string().contains("base_url"), "{err}");
    assert_eq!(sleeps.lock().unwrap().len(), 2);
}
