//! Images and audio on every wire: how each renders media in user
//! messages and tool results (Chat Completions' follow-up user message,
//! Responses' list output, Anthropic's blocks inside `tool_result`), and a
//! real provider against a fake server sending an MCP tool's image, or its
//! placeholder when the provider's config says the model takes none.

use evoflux_core::config::{ProviderConfig, ProviderKind, WireApi};
use evoflux_model::{
    EnvLookup, Media, MediaKind, Message, ProviderOptions, Request, ToolCall, anthropic, openai,
    provider_for, responses,
};
use serde_json::{Value, json};

use crate::common::{FakeServer, KEY_VAR, Reply, data, events};

/// A 1x1 PNG (what the MCP test server's `image` tool returns).
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

fn png() -> Media {
    Media::new(MediaKind::Image, "image/png", PNG)
}

fn data_url() -> String {
    format!("data:image/png;base64,{PNG}")
}

/// A user message with an image, then two parallel calls whose first
/// result carries an image.
fn conversation() -> Request {
    let call = |id: &str| ToolCall {
        id: id.into(),
        name: "mcp__local__image".into(),
        arguments: json!({}),
    };
    Request::new(
        "m",
        vec![
            Message::user_with_media("What is this?", vec![png()]),
            Message::tool_calls("", vec![call("c1"), call("c2")]),
            Message::Tool {
                tool_call_id: "c1".into(),
                content: "a red dot".into(),
                is_error: false,
                media: vec![png()],
            },
            Message::tool_result("c2", "nothing"),
        ],
    )
}

#[test]
fn chat_completions_sends_image_parts_and_follows_tool_results_with_their_images() {
    let body = openai::request_body(&conversation());
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(
        messages[0],
        json!({"role": "user", "content": [
            {"type": "text", "text": "What is this?"},
            {"type": "image_url", "image_url": {"url": data_url()}},
        ]})
    );
    // Both results directly after the calls, then one user message with
    // the images of the run.
    assert_eq!(messages[2]["role"], "tool");
    assert_eq!(
        messages[2]["content"],
        "a red dot\n[image: image/png, 70 B attached in the next message]"
    );
    assert_eq!(
        messages[3],
        json!({"role": "tool", "tool_call_id": "c2", "content": "nothing"})
    );
    assert_eq!(
        messages[4],
        json!({"role": "user", "content": [
            {"type": "text", "text": "The result of tool call c1 attached:"},
            {"type": "image_url", "image_url": {"url": data_url()}},
        ]})
    );
    assert_eq!(messages.len(), 5);
}

#[test]
fn chat_completions_sends_audio_as_input_audio() {
    let clip = Media::new(MediaKind::Audio, "audio/mpeg", "AAAA");
    let body = openai::request_body(&Request::new(
        "m",
        vec![Message::user_with_media("", vec![clip])],
    ));
    assert_eq!(
        body["messages"][0]["content"],
        json!([{"type": "input_audio", "input_audio": {"data": "AAAA", "format": "mp3"}}])
    );
}

#[test]
fn responses_sends_input_images_and_a_list_output_for_tool_results() {
    let body = responses::request_body(&conversation());
    let input = body["input"].as_array().unwrap();
    assert_eq!(
        input[0]["content"],
        json!([
            {"type": "input_text", "text": "What is this?"},
            {"type": "input_image", "image_url": data_url()},
        ])
    );
    let outputs: Vec<&Value> = input
        .iter()
        .filter(|i| i["type"] == "function_call_output")
        .collect();
    assert_eq!(
        outputs[0]["output"],
        json!([
            {"type": "input_text", "text": "a red dot"},
            {"type": "input_image", "image_url": data_url()},
        ])
    );
    assert_eq!(outputs[1]["output"], "nothing");
}

#[test]
fn anthropic_sends_image_blocks_in_user_content_and_tool_results() {
    let body = anthropic::request_body(&conversation());
    let messages = body["messages"].as_array().unwrap();
    let image = json!({
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": PNG},
    });
    let mut first = messages[0]["content"].clone();
    // The newest user turns carry a cache breakpoint; not this test's point.
    for block in first.as_array_mut().unwrap() {
        block.as_object_mut().unwrap().remove("cache_control");
    }
    assert_eq!(
        first,
        json!([{"type": "text", "text": "What is this?"}, image.clone()])
    );
    let results = messages[2]["content"].as_array().unwrap();
    assert_eq!(results[0]["type"], "tool_result");
    assert_eq!(
        results[0]["content"],
        json!([{"type": "text", "text": "a red dot"}, image])
    );
    assert_eq!(results[1]["content"], "nothing");
}

fn config(kind: ProviderKind, base_url: String, images: Option<bool>) -> ProviderConfig {
    ProviderConfig {
        kind,
        base_url: Some(base_url),
        api_key_env: Some(KEY_VAR.to_owned()),
        context_window: None,
        model_path: None,
        limits: Default::default(),
        wire_api: Some(WireApi::ChatCompletions),
        reasoning_effort: None,
        images,
        audio: None,
    }
}

fn hello() -> String {
    [
        data(&json!({"choices": [{"index": 0, "delta": {"content": "a dot"}, "finish_reason": null}]})),
        data(&json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat()
}

/// What a Chat Completions provider configured with `images` sends for
/// [`conversation`].
async fn sent_by(images: Option<bool>) -> Value {
    let server = FakeServer::start(vec![Reply::sse(&hello(), 64)]).await;
    let options = ProviderOptions {
        env: EnvLookup::from_pairs([(KEY_VAR, "k")]),
        ..ProviderOptions::default()
    };
    let provider = provider_for(
        "fake",
        &config(ProviderKind::Openai, format!("{}/v1", server.base), images),
        &options,
    )
    .unwrap();
    events(provider.stream(conversation())).await;
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    requests[0].body.clone()
}

#[tokio::test]
async fn a_provider_sends_the_image_over_its_wire() {
    let body = sent_by(None).await;
    assert_eq!(
        body["messages"][4]["content"][1],
        json!({"type": "image_url", "image_url": {"url": data_url()}})
    );
}

#[tokio::test]
async fn a_model_without_images_gets_a_placeholder_naming_each() {
    let body = sent_by(Some(false)).await;
    let placeholder = "[image: image/png, 70 B — this model does not accept images]";
    assert_eq!(
        body["messages"][0],
        json!({"role": "user", "content": format!("What is this?\n{placeholder}")})
    );
    assert_eq!(
        body["messages"][2]["content"],
        format!("a red dot\n{placeholder}")
    );
    // No follow-up message: nothing is left to attach.
    assert_eq!(body["messages"].as_array().unwrap().len(), 4);
    assert!(!body.to_string().contains(PNG));
}
