//! Property-based fuzzing of the provider wires: arbitrary server-sent
//! event bodies (well-formed chunks, truncated ones, unknown events, junk,
//! split at any byte) go through the same SSE parser and decoders a real
//! response does. The stream always ends, yields at most one error (coded
//! `model/...`, and last), and `Done` at most once, last.
//!
//! A fixed seed and a bounded case count in CI; `PROPTEST_CASES` raises it.

use futures_util::StreamExt;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};
use serde_json::{Value, json};

use crate::bounds::CallBounds;
use crate::event::StreamEvent;
use crate::http::{Endpoint, SseDecoder, decode};

fn config() -> Config {
    Config {
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(128),
        rng_seed: RngSeed::Fixed(0x5_5e5e),
        failure_persistence: None,
        ..Config::default()
    }
}

fn endpoint(provider: &str) -> Endpoint {
    Endpoint {
        provider: provider.into(),
        url: "http://127.0.0.1:9/v1".into(),
        api_key_env: None,
        bounds: CallBounds::default(),
    }
}

fn small_text() -> impl Strategy<Value = Value> {
    prop_oneof![
        "[ -~]{0,12}".prop_map(Value::from),
        Just(Value::Null),
        any::<i32>().prop_map(Value::from),
        Just(json!("{\"path\":")),
        Just(json!("\"}")),
        Just(json!("\u{e9}\u{1f600}")),
    ]
}

/// An OpenAI chat-completions chunk, with any field missing or mistyped.
fn openai_chunk() -> impl Strategy<Value = String> {
    (
        small_text(),
        prop::option::of((0u32..3, small_text(), small_text(), small_text())),
        prop::option::of(prop_oneof![
            Just("stop"),
            Just("tool_calls"),
            Just("length"),
            Just("x")
        ]),
        prop::option::of((any::<u16>(), any::<u16>())),
    )
        .prop_map(|(content, call, finish, usage)| {
            let mut delta = json!({"content": content});
            if let Some((index, id, name, args)) = call {
                delta["tool_calls"] = json!([{"index": index, "id": id,
                    "function": {"name": name, "arguments": args}}]);
            }
            let mut chunk = json!({"choices": [{"delta": delta, "finish_reason": finish}]});
            if let Some((p, c)) = usage {
                chunk["usage"] = json!({"prompt_tokens": p, "completion_tokens": c});
            }
            chunk.to_string()
        })
}

/// An Anthropic messages event: its name and data.
fn anthropic_event() -> impl Strategy<Value = (String, String)> {
    let name = prop_oneof![
        Just("message_start"),
        Just("content_block_start"),
        Just("content_block_delta"),
        Just("content_block_stop"),
        Just("message_delta"),
        Just("message_stop"),
        Just("ping"),
        Just("error"),
        Just("unknown"),
    ];
    (
        name,
        0u32..3,
        small_text(),
        prop_oneof![
            Just("text_delta"),
            Just("input_json_delta"),
            Just("citations_delta"),
            Just("x")
        ],
        any::<u16>(),
    )
        .prop_map(|(name, index, text, kind, n)| {
            let data = match name {
                "message_start" => json!({"type": name, "message": {"usage": {"input_tokens": n}}}),
                "content_block_start" => json!({"type": name, "index": index,
                    "content_block": {"type": kind_of_block(n), "id": text, "name": text,
                        "tool_use_id": text, "content": [{"url": text, "title": text}]}}),
                "content_block_delta" => json!({"type": name, "index": index,
                    "delta": {"type": kind, "text": text, "partial_json": text,
                        "citation": {"url": text, "cited_text": text}}}),
                "message_delta" => json!({"type": name, "delta": {"stop_reason": text},
                    "usage": {"output_tokens": n}}),
                "error" => {
                    json!({"type": name, "error": {"type": "overloaded_error", "message": text}})
                }
                _ => json!({"type": name, "index": index}),
            };
            (name.to_owned(), data.to_string())
        })
}

fn kind_of_block(n: u16) -> &'static str {
    match n % 4 {
        0 => "tool_use",
        1 => "server_tool_use",
        2 => "web_search_tool_result",
        _ => "text",
    }
}

/// A Responses API event, with any field missing or mistyped.
fn responses_event() -> impl Strategy<Value = (String, String)> {
    let name = prop_oneof![
        Just("response.created"),
        Just("response.output_text.delta"),
        Just("response.refusal.delta"),
        Just("response.output_item.added"),
        Just("response.function_call_arguments.delta"),
        Just("response.output_item.done"),
        Just("response.completed"),
        Just("response.incomplete"),
        Just("response.failed"),
        Just("error"),
        Just("unknown"),
    ];
    let item = prop_oneof![
        Just("function_call"),
        Just("reasoning"),
        Just("web_search_call"),
        Just("message"),
        Just("x")
    ];
    (name, item, 0u32..3, small_text(), any::<u16>()).prop_map(|(name, item, index, text, n)| {
        let data = json!({
            "type": name,
            "output_index": index,
            "delta": text,
            "item": {"type": item, "id": text, "call_id": text, "name": text, "arguments": text,
                     "encrypted_content": text, "summary": [{"text": text}],
                     "action": {"query": text, "sources": [{"url": text}]},
                     "content": [{"annotations": [{"type": "url_citation", "url": text}]}]},
            "response": {"usage": {"input_tokens": n, "output_tokens": n},
                         "incomplete_details": {"reason": text},
                         "error": {"code": text, "message": text}},
            "code": text,
            "message": text,
        });
        (name.to_owned(), data.to_string())
    })
}

/// One SSE event as bytes: well formed, truncated, or junk.
fn sse_event(
    data: impl Strategy<Value = (Option<String>, String)>,
) -> impl Strategy<Value = String> {
    (data, any::<prop::sample::Index>(), 0u8..10).prop_map(|((name, data), cut, form)| {
        let event = name.map(|n| format!("event: {n}\n")).unwrap_or_default();
        match form {
            0 => format!(
                "{event}data: {}\n\n",
                data.chars()
                    .take(cut.index(data.chars().count() + 1))
                    .collect::<String>()
            ),
            1 => "data: [DONE]\n\n".to_owned(),
            2 => ": keep-alive\n\n".to_owned(),
            3 => "data: not json\n\n".to_owned(),
            4 => format!("{event}data: {data}\r\n\r\n"),
            _ => format!("{event}data: {data}\n\n"),
        }
    })
}

fn body(events: Vec<String>, splits: Vec<prop::sample::Index>) -> Vec<Vec<u8>> {
    let bytes = events.concat().into_bytes();
    let mut cuts: Vec<usize> = splits.iter().map(|i| i.index(bytes.len() + 1)).collect();
    cuts.sort_unstable();
    let mut chunks = Vec::new();
    let mut at = 0;
    for cut in cuts {
        chunks.push(bytes[at..cut].to_vec());
        at = cut;
    }
    chunks.push(bytes[at..].to_vec());
    chunks
}

/// Runs `chunks` through the real SSE parser and `decoder`.
fn run<D: SseDecoder + Send + 'static>(
    endpoint: Endpoint,
    decoder: D,
    chunks: Vec<Vec<u8>>,
) -> Vec<Result<StreamEvent, String>> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async move {
        let bytes = futures_util::stream::iter(
            chunks
                .into_iter()
                .map(|c| Ok::<_, std::io::Error>(bytes::Bytes::from(c))),
        );
        let sse = sse_stream::SseStream::from_bytes_stream(bytes);
        decode(endpoint, sse, decoder)
            .map(|r| r.map_err(|e| e.code().to_owned()))
            .collect()
            .await
    })
}

fn check(out: &[Result<StreamEvent, String>]) -> Result<(), TestCaseError> {
    for (i, item) in out.iter().enumerate() {
        let last = i + 1 == out.len();
        match item {
            Err(code) => {
                prop_assert!(
                    code.starts_with("model/") && evoflux_core::diagnostic::is_valid_code(code),
                    "{code}"
                );
                prop_assert!(last, "an error ends the stream");
            }
            Ok(StreamEvent::Done) => prop_assert!(last, "Done ends the stream"),
            Ok(_) => {}
        }
    }
    prop_assert!(
        !out.is_empty(),
        "a stream always ends with Done or an error"
    );
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn openai_streams_of_any_shape_end_cleanly(
        events in prop::collection::vec(sse_event(openai_chunk().prop_map(|d| (None, d))), 0..12),
        splits in prop::collection::vec(any::<prop::sample::Index>(), 0..6),
    ) {
        let ep = endpoint("openai");
        let out = run(ep.clone(), crate::openai::ChatDecoder::new(ep), body(events, splits));
        check(&out)?;
    }

    #[test]
    fn anthropic_streams_of_any_shape_end_cleanly(
        events in prop::collection::vec(sse_event(anthropic_event().prop_map(|(n, d)| (Some(n), d))), 0..12),
        splits in prop::collection::vec(any::<prop::sample::Index>(), 0..6),
    ) {
        let ep = endpoint("anthropic");
        let out = run(ep.clone(), crate::anthropic::MessagesDecoder::new(ep), body(events, splits));
        check(&out)?;
    }

    #[test]
    fn responses_streams_of_any_shape_end_cleanly(
        events in prop::collection::vec(sse_event(responses_event().prop_map(|(n, d)| (Some(n), d))), 0..12),
        splits in prop::collection::vec(any::<prop::sample::Index>(), 0..6),
    ) {
        let ep = endpoint("openai");
        let out = run(ep.clone(), crate::responses::ResponsesDecoder::new(ep), body(events, splits));
        check(&out)?;
    }

    #[test]
    fn raw_bytes_end_cleanly(bytes in prop::collection::vec(any::<u8>(), 0..600)) {
        let ep = endpoint("openai");
        let out = run(ep.clone(), crate::openai::ChatDecoder::new(ep), vec![bytes]);
        check(&out)?;
    }
}
