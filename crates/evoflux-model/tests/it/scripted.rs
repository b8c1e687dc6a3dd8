use std::path::Path;

use evoflux_core::config::{HarnessConfig, ModelRef, ProviderConfig, ProviderKind};
use evoflux_model::{
    Message, ProviderError, ProviderOptions, Request, ScriptError, StopReason, StreamEvent,
    ToolCall, Usage, collect, provider_for, resolve,
};
use serde_json::json;

use crate::common::{events, failure};

const SCRIPT: &str = r#"
# Two turns: list the files, then answer.
context_window: 4096
turns:
  - expect:
      user: List the files
    reply:
      text: Let me look.
      tool_calls:
        - name: ls
          arguments: {path: .}
  - expect:
      tool_result: {contains: README.md}
    reply:
      text: There is a README.
      usage: {input_tokens: 120, output_tokens: 8}
"#;

fn write_script(dir: &Path) {
    std::fs::write(dir.join("demo.yaml"), SCRIPT).unwrap();
}

fn scripted(dir: &Path) -> Box<dyn evoflux_model::Provider> {
    write_script(dir);
    let model: ModelRef = "scripted:demo.yaml".parse().unwrap();
    resolve(
        &model,
        &HarnessConfig::embedded(),
        dir,
        &ProviderOptions::default(),
    )
    .unwrap()
}

fn first_turn() -> Vec<Message> {
    vec![Message::system("sys"), Message::user("List the files")]
}

#[tokio::test]
async fn replays_the_script_turn_by_turn() {
    let dir = tempfile::tempdir().unwrap();
    let provider = scripted(dir.path());
    assert_eq!(provider.kind(), ProviderKind::Scripted);
    assert_eq!(provider.context_window(), Some(4096));

    let mut messages = first_turn();
    let got = events(provider.stream(Request::new("demo.yaml", messages.clone()))).await;
    let call = ToolCall {
        id: "call_1_1".into(),
        name: "ls".into(),
        arguments: json!({"path": "."}),
    };
    assert_eq!(
        got[0],
        StreamEvent::TextDelta {
            text: "Let me look.".into()
        }
    );
    assert!(got.contains(&StreamEvent::ToolCall { call: call.clone() }));
    assert_eq!(
        got[got.len() - 2..],
        [
            StreamEvent::Stop {
                reason: StopReason::ToolUse
            },
            StreamEvent::Done
        ]
    );

    messages.push(Message::Assistant {
        provider_items: Vec::new(),
        content: "Let me look.".into(),
        tool_calls: vec![call],
    });
    messages.push(Message::tool_result("call_1_1", "Cargo.toml\nREADME.md\n"));
    let done = collect(provider.stream(Request::new("demo.yaml", messages)))
        .await
        .unwrap();
    assert_eq!(done.message, Message::assistant("There is a README."));
    assert_eq!(done.stop, StopReason::EndTurn);
    assert_eq!(
        done.usage,
        Some(Usage {
            input_tokens: 120,
            output_tokens: 8,
            cached_input_tokens: 0,
            cache_write_input_tokens: 0,
            web_search_requests: 0,
        })
    );
}

#[tokio::test]
async fn replay_is_deterministic_across_providers() {
    let dir = tempfile::tempdir().unwrap();
    let a = events(scripted(dir.path()).stream(Request::new("m", first_turn()))).await;
    let b = events(scripted(dir.path()).stream(Request::new("m", first_turn()))).await;
    assert_eq!(a, b);
}

#[tokio::test]
async fn divergence_fails_naming_the_turn() {
    let dir = tempfile::tempdir().unwrap();
    let provider = scripted(dir.path());
    collect(provider.stream(Request::new("m", first_turn())))
        .await
        .unwrap();
    let mut messages = first_turn();
    messages.push(Message::assistant("Let me look."));
    messages.push(Message::user("Actually, delete everything"));
    let err = failure(provider.stream(Request::new("m", messages))).await;
    assert_eq!(err.code(), "model/script-diverged");
    match &err {
        ProviderError::Script(ScriptError::Diverged {
            turn,
            expected,
            actual,
            ..
        }) => {
            assert_eq!(*turn, 2);
            assert!(expected.contains("README.md"), "{expected}");
            assert!(actual.contains("delete everything"), "{actual}");
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(err.to_string().contains("turn 2"), "{err}");
}

#[tokio::test]
async fn running_out_of_turns_fails_loudly() {
    let dir = tempfile::tempdir().unwrap();
    let provider = scripted(dir.path());
    collect(provider.stream(Request::new("m", first_turn())))
        .await
        .unwrap();
    let mut messages = first_turn();
    messages.push(Message::tool_result("call_1_1", "README.md"));
    collect(provider.stream(Request::new("m", messages.clone())))
        .await
        .unwrap();
    messages.push(Message::user("and then?"));
    let err = failure(provider.stream(Request::new("m", messages))).await;
    assert!(
        matches!(
            err,
            ProviderError::Script(ScriptError::Exhausted { turns: 2, .. })
        ),
        "{err:?}"
    );
    assert_eq!(err.code(), "model/script-exhausted");
    assert!(err.to_string().contains("turn 3"), "{err}");
}

#[tokio::test]
async fn invalid_or_missing_scripts_are_setup_errors() {
    let dir = tempfile::tempdir().unwrap();
    let config = ProviderConfig {
        wire_api: None,
        reasoning_effort: None,
        images: None,
        audio: None,
        kind: ProviderKind::Scripted,
        base_url: None,
        api_key_env: None,
        context_window: None,
        model_path: None,
        limits: Default::default(),
    };
    let err = provider_for("scripted", &config, &ProviderOptions::default()).unwrap_err();
    assert_eq!(err.code(), "model/script-missing");

    let options = ProviderOptions {
        script: Some(dir.path().join("absent.yaml")),
        ..Default::default()
    };
    let err = provider_for("scripted", &config, &options).unwrap_err();
    assert_eq!(err.code(), "model/script-unreadable");

    let bad = dir.path().join("bad.yaml");
    std::fs::write(&bad, "turns:\n  - reply:\n      txt: hi\n").unwrap();
    let options = ProviderOptions {
        script: Some(bad.clone()),
        ..Default::default()
    };
    let err = provider_for("scripted", &config, &options).unwrap_err();
    assert_eq!(err.code(), "model/script-invalid");
    let d = err.to_diagnostic();
    assert_eq!(d.locator.line, Some(3));
    assert_eq!(d.locator.file.as_deref(), Some(bad.as_path()));
}

#[test]
fn provider_for_matches_every_kind() {
    let cfg = |kind, base_url: Option<&str>| ProviderConfig {
        wire_api: None,
        reasoning_effort: None,
        images: None,
        audio: None,
        kind,
        base_url: base_url.map(str::to_owned),
        api_key_env: None,
        context_window: None,
        model_path: None,
        limits: Default::default(),
    };
    let opts = ProviderOptions::default();
    let err = provider_for("local", &cfg(ProviderKind::Local, None), &opts).unwrap_err();
    if cfg!(feature = "local") {
        // No model_path and no model file: the message says how to get one.
        assert_eq!(err.code(), "model/local-model-unset");
        assert!(err.to_string().contains("fetch-local-model.sh"), "{err}");
    } else {
        assert_eq!(err.code(), "model/provider-not-available");
        assert!(err.to_string().contains("not available"), "{err}");
    }

    let err = provider_for("x", &cfg(ProviderKind::Openai, None), &opts).unwrap_err();
    assert_eq!(err.code(), "model/base-url-missing");

    let p = provider_for(
        "ollama",
        &cfg(ProviderKind::Openai, Some("http://127.0.0.1:11434/v1")),
        &opts,
    )
    .unwrap();
    assert_eq!((p.name(), p.kind()), ("ollama", ProviderKind::Openai));
    let p = provider_for(
        "claude",
        &cfg(ProviderKind::Anthropic, Some("http://127.0.0.1:1")),
        &opts,
    )
    .unwrap();
    assert_eq!(p.kind(), ProviderKind::Anthropic);

    let model: ModelRef = "nowhere:m".parse().unwrap();
    let err = resolve(&model, &HarnessConfig::embedded(), Path::new("."), &opts).unwrap_err();
    assert_eq!(err.code(), "model/provider-unknown");
}
