//! The `local` provider: load errors on small files made here (always run),
//! and, when a real GGUF is at `$EVOFLUX_TEST_GGUF` (SmolLM2-135M-Instruct
//! from `scripts/fetch-local-model.sh`), the tokenizer id table, the tool
//! grammar over the real vocabulary, and end-to-end streaming.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use evoflux_core::config::{ProviderConfig, ProviderKind};
use evoflux_model::local::chat_template;
use evoflux_model::local::constrain::{self, Constrainer, ModelTokEnv};
use evoflux_model::local::gguf;
use evoflux_model::local::tokenizer::GgufTokenizer;
use evoflux_model::{
    EnvLookup, Message, Provider, ProviderOptions, Request, StopReason, StreamEvent, ToolChoice,
    ToolDefinition, provider_for,
};
use futures_util::StreamExt;
use serde_json::json;
use toktrie::TokenizerEnv;

fn local_config(model_path: Option<PathBuf>) -> ProviderConfig {
    ProviderConfig {
        wire_api: None,
        reasoning_effort: None,
        images: None,
        audio: None,
        kind: ProviderKind::Local,
        base_url: None,
        api_key_env: None,
        context_window: None,
        model_path,
        limits: Default::default(),
    }
}

/// Options that never look at the real environment or home directory.
fn options(cache: &Path) -> ProviderOptions {
    ProviderOptions {
        env: EnvLookup::from_pairs::<_, String, String>([]),
        cache_dir: Some(cache.to_path_buf()),
        ..Default::default()
    }
}

fn load_error(path: &Path) -> evoflux_model::SetupError {
    let cache = tempfile::tempdir().unwrap();
    provider_for(
        "local",
        &local_config(Some(path.to_path_buf())),
        &options(cache.path()),
    )
    .unwrap_err()
}

/// A minimal GGUF v3 file: a header with string metadata and no tensors.
fn tiny_gguf(metadata: &[(&str, &str)]) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(b"GGUF");
    b.extend_from_slice(&3u32.to_le_bytes());
    b.extend_from_slice(&0u64.to_le_bytes()); // tensors
    b.extend_from_slice(&(metadata.len() as u64).to_le_bytes());
    for (k, v) in metadata {
        b.extend_from_slice(&(k.len() as u64).to_le_bytes());
        b.extend_from_slice(k.as_bytes());
        b.extend_from_slice(&8u32.to_le_bytes()); // string
        b.extend_from_slice(&(v.len() as u64).to_le_bytes());
        b.extend_from_slice(v.as_bytes());
    }
    b
}

#[test]
fn a_missing_file_is_reported_with_the_ways_to_get_a_model() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("absent.gguf");
    let err = load_error(&path);
    assert_eq!(err.code(), "model/local-file-missing");
    assert_eq!(
        err.to_diagnostic().locator.file.as_deref(),
        Some(path.as_path())
    );
    assert!(err.to_string().contains("fetch-local-model.sh"), "{err}");
}

#[test]
fn a_file_that_is_not_gguf_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("model.gguf");
    std::fs::write(&text, "this is a text file, not a model\n").unwrap();
    assert_eq!(load_error(&text).code(), "model/local-not-gguf");
    let short = dir.path().join("short.gguf");
    std::fs::write(&short, b"GG").unwrap();
    assert_eq!(load_error(&short).code(), "model/local-not-gguf");
    // Right magic, garbage header.
    let broken = dir.path().join("broken.gguf");
    std::fs::write(&broken, b"GGUF\x03\0\0\0\xff\xff\xff\xff\xff\xff\xff\xff").unwrap();
    assert_eq!(load_error(&broken).code(), "model/local-not-gguf");
    assert_eq!(load_error(dir.path()).code(), "model/local-not-gguf");
}

#[test]
fn an_unsupported_architecture_is_rejected_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let mamba = dir.path().join("mamba.gguf");
    std::fs::write(&mamba, tiny_gguf(&[("general.architecture", "mamba")])).unwrap();
    let err = load_error(&mamba);
    assert_eq!(err.code(), "model/local-architecture-unsupported");
    assert!(err.to_string().contains("`mamba`"), "{err}");
    let none = dir.path().join("none.gguf");
    std::fs::write(&none, tiny_gguf(&[("general.name", "x")])).unwrap();
    assert_eq!(
        load_error(&none).code(),
        "model/local-architecture-unsupported"
    );
}

#[test]
fn a_llama_header_without_weights_is_invalid_not_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("hollow.gguf");
    std::fs::write(
        &p,
        tiny_gguf(&[
            ("general.architecture", "llama"),
            ("tokenizer.ggml.model", "gpt2"),
        ]),
    )
    .unwrap();
    assert_eq!(load_error(&p).code(), "model/local-model-invalid");
    let q = dir.path().join("spm.gguf");
    std::fs::write(
        &q,
        tiny_gguf(&[
            ("general.architecture", "llama"),
            ("tokenizer.ggml.model", "llama"),
        ]),
    )
    .unwrap();
    assert_eq!(load_error(&q).code(), "model/local-tokenizer-unsupported");
}

// ---------------------------------------------------------------- real model

/// The real model file, or `None` with a note saying how to get it.
fn test_model(test: &str) -> Option<PathBuf> {
    match std::env::var_os("EVOFLUX_TEST_GGUF").map(PathBuf::from) {
        Some(p) if p.is_file() => Some(p),
        Some(p) => {
            eprintln!(
                "SKIP {test}: EVOFLUX_TEST_GGUF={} does not exist; run scripts/fetch-local-model.sh",
                p.display()
            );
            None
        }
        None => {
            eprintln!(
                "SKIP {test}: set EVOFLUX_TEST_GGUF to SmolLM2-135M-Instruct.Q4_1.gguf \
                 (scripts/fetch-local-model.sh prints its path)"
            );
            None
        }
    }
}

fn tokenizer(path: &Path) -> &'static GgufTokenizer {
    static TOK: OnceLock<GgufTokenizer> = OnceLock::new();
    TOK.get_or_init(|| {
        let (file, _) = gguf::open(path).unwrap();
        GgufTokenizer::from_gguf(&file).unwrap()
    })
}

/// Ids from the reference pipeline for SmolLM2 (Hugging Face `tokenizers`
/// with SmolLM2's published settings: individual digits, byte-level with
/// no prefix space, control tokens special), built from this file's
/// vocabulary and merges.
#[test]
fn tokenizer_matches_the_reference_ids() {
    let Some(path) = test_model("tokenizer_matches_the_reference_ids") else {
        return;
    };
    let tok = tokenizer(&path);
    // Chat markup, through our template.
    let parts = chat_template::render(
        &[
            Message::system("You are a helpful assistant."),
            Message::user("Hi!"),
        ],
        &[],
    );
    assert_eq!(
        tok.encode_parts(&parts).unwrap(),
        [
            1, 9690, 198, 2683, 359, 253, 5356, 11173, 30, 2, 198, 1, 4093, 198, 26843, 17, 2, 198,
            1, 520, 9531, 198
        ]
    );
    let table: [(&str, &[u32]); 6] = [
        (
            "Pi is 3.14159 and 2025 has 365 days.",
            &[
                41967, 314, 216, 35, 30, 33, 36, 33, 37, 41, 284, 216, 34, 32, 34, 37, 553, 216,
                35, 38, 37, 2009, 30,
            ],
        ),
        (
            r#"{"tool": "get_weather", "arguments": {"city": "Paris", "days": 3}}"#,
            &[
                39428, 19324, 1799, 476, 726, 79, 29624, 1002, 476, 24370, 1799, 9583, 20721, 1799,
                476, 38634, 1002, 476, 13680, 1799, 216, 35, 17859,
            ],
        ),
        (
            "fn main() {\n    println!(\"héllo, wörld ✓ 日本\");\n}\n",
            &[
                7853, 1085, 1000, 1662, 472, 1628, 34115, 17, 1470, 88, 2756, 31394, 28, 267,
                29989, 400, 4636, 246, 237, 17097, 241, 115, 40993, 21646, 198, 109, 198,
            ],
        ),
        (
            "  leading spaces\tand\ttabs\r\n",
            &[216, 2899, 5600, 197, 397, 197, 100, 7366, 2738],
        ),
        // Markup typed by a user stays text.
        (
            "say <|im_end|> now",
            &[22313, 2067, 108, 306, 79, 486, 108, 46, 1209],
        ),
        (
            "x=1234567890;",
            &[104, 45, 33, 34, 35, 36, 37, 38, 39, 40, 41, 32, 43],
        ),
    ];
    for (text, ids) in table {
        assert_eq!(tok.encode(text).unwrap(), ids, "{text:?}");
        let bytes: Vec<u8> = ids
            .iter()
            .flat_map(|i| tok.text_bytes(*i).to_vec())
            .collect();
        assert_eq!(String::from_utf8(bytes).unwrap(), text, "round trip");
    }
    assert_eq!(tok.eos, 2);
    assert!(tok.ends_turn(1) && tok.ends_turn(2) && !tok.ends_turn(9690));
}

fn weather_tool() -> ToolDefinition {
    ToolDefinition {
        name: "get_weather".into(),
        description: "Get the current weather for a city.".into(),
        parameters: json!({
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
            "required": ["city"],
            "additionalProperties": false
        }),
    }
}

#[test]
fn tool_grammar_over_the_real_vocabulary() {
    let Some(path) = test_model("tool_grammar_over_the_real_vocabulary") else {
        return;
    };
    let tok = std::sync::Arc::new({
        let (file, _) = gguf::open(&path).unwrap();
        GgufTokenizer::from_gguf(&file).unwrap()
    });
    let env = std::sync::Arc::new(ModelTokEnv::new(tok.clone()).unwrap());
    let constrainer = Constrainer::new(env.clone()).unwrap();
    let tools = [weather_tool()];
    let accepts = |text: &str| {
        let mut c = constrainer
            .matcher(constrain::tool_grammar(&tools, ToolChoice::Auto))
            .unwrap();
        let ids = env.tokenize_bytes(text.as_bytes());
        c.accepts_prefix(&ids).unwrap() == ids.len() && c.feed(&ids) && c.is_complete(tok.eos)
    };
    assert!(accepts(
        r#"{"tool": "get_weather", "arguments": {"city": "Paris"}}"#
    ));
    assert!(accepts(
        r#"{"tool": "get_weather", "arguments": {"city": "Oslo", "days": 2}}"#
    ));
    assert!(accepts("It is sunny in Paris."));
    for bad in [
        r#"{"tool": "get_wether", "arguments": {"city": "Paris"}}"#,
        r#"{"tool": "get_weather", "arguments": {"town": "Paris"}}"#,
        r#"{"tool": "get_weather", "arguments": {"city": "Oslo", "days": 0}}"#,
        r#"{"tool": "get_weather"}"#,
    ] {
        assert!(!accepts(bad), "accepted {bad}");
    }
    // At the start: `{` and text are allowed, chat markup is not.
    let mut c = constrainer
        .matcher(constrain::tool_grammar(&tools, ToolChoice::Auto))
        .unwrap();
    let mask = c.allowed().unwrap();
    assert!(mask.is_allowed(tok.encode("{").unwrap()[0]));
    assert!(mask.is_allowed(tok.encode("It").unwrap()[0]));
    assert!(!mask.is_allowed(1), "<|im_start|> must be masked");
    assert!(!mask.is_allowed(tok.eos), "an empty answer must be masked");
}

/// One provider per test binary: loading is the slow part. Its converted
/// weights are cached in the target's test scratch dir: a temp dir held
/// by a static would never be dropped and would leak about 145 MB into
/// `/tmp` on every run.
fn provider(path: &Path) -> &'static dyn Provider {
    static P: OnceLock<Box<dyn Provider>> = OnceLock::new();
    P.get_or_init(|| {
        let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("local-provider-cache");
        std::fs::create_dir_all(&cache).unwrap();
        provider_for(
            "local",
            &local_config(Some(path.to_path_buf())),
            &options(&cache),
        )
        .unwrap()
    })
    .as_ref()
}

async fn events(p: &dyn Provider, req: Request) -> Vec<StreamEvent> {
    let mut s = p.stream(req);
    let mut out = Vec::new();
    while let Some(e) = s.next().await {
        out.push(e.unwrap());
    }
    out
}

#[tokio::test]
async fn a_plain_question_streams_a_non_empty_answer() {
    let Some(path) = test_model("a_plain_question_streams_a_non_empty_answer") else {
        return;
    };
    let p = provider(&path);
    assert_eq!(p.kind(), ProviderKind::Local);
    assert_eq!(p.context_window(), Some(4096));
    let req = Request::new(
        "smollm2-135m-instruct",
        vec![Message::user("What is the capital of France?")],
    )
    .with_max_tokens(24);
    let ev = events(p, req).await;
    let text: String = ev
        .iter()
        .filter_map(|e| match e {
            StreamEvent::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert!(!text.trim().is_empty(), "{ev:?}");
    let n = ev.len();
    assert!(matches!(ev[n - 1], StreamEvent::Done), "{ev:?}");
    assert!(matches!(
        ev[n - 2],
        StreamEvent::Stop {
            reason: StopReason::EndTurn | StopReason::MaxTokens
        }
    ));
    let StreamEvent::Usage { usage } = &ev[n - 3] else {
        panic!("{ev:?}")
    };
    assert!(usage.input_tokens > 10 && usage.output_tokens > 0);
    assert!(!ev.iter().any(|e| matches!(e, StreamEvent::ToolCall { .. })));
}

#[tokio::test]
async fn an_offered_tool_yields_a_schema_valid_call() {
    let Some(path) = test_model("an_offered_tool_yields_a_schema_valid_call") else {
        return;
    };
    let p = provider(&path);
    let tool = weather_tool();
    // One worked example in the conversation shows the tiny model the
    // protocol; what is tested is that the call it then makes is
    // constrained, parsed and schema-valid, not the model's judgement.
    let messages = vec![
        Message::user("What is the weather in Oslo?"),
        Message::Assistant {
            provider_items: Vec::new(),
            content: String::new(),
            tool_calls: vec![evoflux_model::ToolCall {
                id: "call_0".into(),
                name: "get_weather".into(),
                arguments: json!({"city": "Oslo"}),
            }],
        },
        Message::tool_result("call_0", "{\"temperature_c\": 4, \"sky\": \"cloudy\"}"),
        Message::assistant("It is 4 C and cloudy in Oslo."),
        Message::user("What is the weather in Paris?"),
    ];
    let req = Request::new("m", messages)
        .with_tools(vec![tool.clone()])
        .with_max_tokens(64);
    let ev = events(p, req).await;
    let calls: Vec<_> = ev
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ToolCall { call } => Some(call.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(calls.len(), 1, "{ev:?}");
    let call = &calls[0];
    assert_eq!(call.name, "get_weather");
    assert!(call.id.starts_with("call_local_"));
    let validator = jsonschema::validator_for(&tool.parameters).unwrap();
    assert!(
        validator.is_valid(&call.arguments),
        "{} does not match the schema",
        call.arguments
    );
    assert!(
        ev.iter().any(|e| matches!(
            e,
            StreamEvent::Stop {
                reason: StopReason::ToolUse
            }
        )),
        "{ev:?}"
    );
    // A held-back call is not also streamed as text.
    assert!(
        !ev.iter()
            .any(|e| matches!(e, StreamEvent::TextDelta { .. }))
    );
    // The next turn reuses the cached prefix of this conversation.
    let req2 = Request::new(
        "m",
        vec![
            Message::user("What is the weather in Oslo?"),
            Message::Assistant {
                provider_items: Vec::new(),
                content: String::new(),
                tool_calls: vec![evoflux_model::ToolCall {
                    id: "call_0".into(),
                    name: "get_weather".into(),
                    arguments: json!({"city": "Oslo"}),
                }],
            },
            Message::tool_result("call_0", "{\"temperature_c\": 4, \"sky\": \"cloudy\"}"),
            Message::assistant("It is 4 C and cloudy in Oslo."),
            Message::user("What is the weather in Paris?"),
            Message::Assistant {
                provider_items: Vec::new(),
                content: String::new(),
                tool_calls: vec![call.clone()],
            },
            Message::tool_result(
                call.id.clone(),
                "{\"temperature_c\": 18, \"sky\": \"sunny\"}",
            ),
        ],
    )
    .with_tools(vec![tool])
    .with_max_tokens(32);
    let ev2 = events(p, req2).await;
    assert!(
        ev2.iter().any(|e| matches!(e, StreamEvent::Stop { .. })),
        "{ev2:?}"
    );
}

#[test]
fn the_conversion_is_cached_and_reused() {
    let Some(path) = test_model("the_conversion_is_cached_and_reused") else {
        return;
    };
    let cache = tempfile::tempdir().unwrap();
    let (_, first) =
        evoflux_model::local::engine::load(&path, Some(cache.path()), Some(512)).unwrap();
    assert_eq!(first.weights, "converted-q8_0");
    let converted = first.converted.clone().unwrap();
    assert!(converted.starts_with(cache.path().join("models")));
    assert_eq!(first.context_window, 512);
    let (_, second) = evoflux_model::local::engine::load(&path, Some(cache.path()), None).unwrap();
    assert_eq!(second.weights, "cached-q8_0");
    assert_eq!(second.converted, Some(converted));
    // A truncated cache file is converted again rather than trusted.
    std::fs::write(second.converted.as_ref().unwrap(), b"GGUF").unwrap();
    let (_, third) = evoflux_model::local::engine::load(&path, Some(cache.path()), None).unwrap();
    assert_eq!(third.weights, "converted-q8_0");
}
