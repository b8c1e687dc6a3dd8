//! Measures the local provider on a GGUF file: cold load (with Q8_0
//! conversion), cached load, prefill and decode speed, and one constrained
//! tool call. Prints figures; asserts nothing.
//!
//! ```text
//! cargo run --release -p evoflux-model --example local_bench -- MODEL.gguf [CACHE_DIR] [quick]
//! ```
//!
//! `quick` only loads through the provider (using the cache dir as is) and
//! answers one question: run it under `/usr/bin/time -v` for peak memory.

use std::path::PathBuf;
use std::time::Instant;

use evoflux_core::config::{ProviderConfig, ProviderKind};
use evoflux_model::Provider;
use evoflux_model::local::LocalProvider;
use evoflux_model::local::chat_template;
use evoflux_model::local::constrain;
use evoflux_model::local::engine::{self, Sampler};
use evoflux_model::{Message, Request, ToolDefinition, collect};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let model = PathBuf::from(
        args.next()
            .ok_or("usage: local_bench MODEL.gguf [CACHE_DIR]")?,
    );
    let cache = match args.next() {
        Some(c) => PathBuf::from(c),
        None => std::env::temp_dir().join(format!("evoflux-bench-{}", std::process::id())),
    };
    if args.next().as_deref() == Some("quick") {
        return quick(&model, &cache);
    }
    let _ = std::fs::remove_dir_all(&cache);

    let t = Instant::now();
    let (_, cold) = engine::load(&model, Some(&cache), None)?;
    println!(
        "load cold (with conversion): {:.2} s, weights: {}",
        t.elapsed().as_secs_f64(),
        cold.weights
    );
    let t = Instant::now();
    let (mut eng, warm) = engine::load(&model, Some(&cache), None)?;
    println!(
        "load cached: {:.2} s, weights: {}",
        t.elapsed().as_secs_f64(),
        warm.weights
    );
    let t = Instant::now();
    drop(engine::load(&model, None, None)?);
    println!(
        "load without cache dir (convert to temp): {:.2} s",
        t.elapsed().as_secs_f64()
    );
    println!("context window: {}", warm.context_window);

    // Prefill a long prompt from scratch, then decode greedily.
    let long = "Summarize the following notes in one sentence.\n".to_owned()
        + &"The quick brown fox jumps over the lazy dog near the river bank at dawn. ".repeat(40);
    let parts = chat_template::render(&[Message::user(long)], &[]);
    let prompt = eng.encode_prompt(&parts)?;
    let mut sampler = Sampler::new(None, None);
    let mut out = Vec::new();
    let stats = eng.generate(&prompt, 128, None, &mut sampler, &mut |b| {
        out.extend_from_slice(b);
        true
    })?;
    println!(
        "prefill: {} tokens in {:.3} s = {:.0} tok/s",
        stats.prompt_tokens,
        stats.prefill_time.as_secs_f64(),
        stats.prompt_tokens as f64 / stats.prefill_time.as_secs_f64()
    );
    println!(
        "decode: {} tokens in {:.3} s = {:.1} tok/s ({:?})",
        stats.generated_tokens,
        stats.decode_time.as_secs_f64(),
        stats.generated_tokens as f64 / stats.decode_time.as_secs_f64(),
        stats.finish
    );
    println!("answer: {}", String::from_utf8_lossy(&out).trim());

    // A constrained tool call.
    let tools = vec![ToolDefinition {
        name: "get_weather".into(),
        description: "Get the current weather for a city.".into(),
        parameters: serde_json::json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
    }];
    let msgs = [Message::user(
        "What is the weather in Paris right now? Use the tool.",
    )];
    let parts = chat_template::render(&msgs, &tools);
    let prompt = eng.encode_prompt(&parts)?;
    let grammar = constrain::tool_grammar(&tools, evoflux_model::ToolChoice::Auto);
    let mut c = eng.constrainer()?.matcher(grammar)?;
    let mut out = Vec::new();
    let t = Instant::now();
    let stats = eng.generate(&prompt, 128, Some(&mut c), &mut sampler, &mut |b| {
        out.extend_from_slice(b);
        true
    })?;
    println!(
        "constrained: {} tokens in {:.3} s ({:.1} tok/s decode): {}",
        stats.generated_tokens,
        t.elapsed().as_secs_f64(),
        stats.generated_tokens as f64 / stats.decode_time.as_secs_f64(),
        String::from_utf8_lossy(&out)
    );

    // The same through the provider stream.
    let provider = LocalProvider::load("local", &model, &config(&model), Some(&cache), None)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let done = rt.block_on(collect(
        provider.stream(
            Request::new("m", vec![Message::user("What is the capital of France?")])
                .with_max_tokens(48),
        ),
    ))?;
    println!(
        "provider answer: {:?} stop={:?} usage={:?}",
        done.message, done.stop, done.usage
    );
    let _ = std::fs::remove_dir_all(&cache);
    Ok(())
}

fn config(model: &std::path::Path) -> ProviderConfig {
    ProviderConfig {
        wire_api: None,
        reasoning_effort: None,
        images: None,
        audio: None,
        kind: ProviderKind::Local,
        base_url: None,
        api_key_env: None,
        context_window: None,
        model_path: Some(model.to_path_buf()),
        limits: Default::default(),
    }
}

fn quick(
    model: &std::path::Path,
    cache: &std::path::Path,
) -> Result<(), Box<dyn std::error::Error>> {
    let t = Instant::now();
    let provider = LocalProvider::load("local", model, &config(model), Some(cache), None)?;
    println!(
        "load: {:.2} s ({})",
        t.elapsed().as_secs_f64(),
        provider.load_report().weights
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let request = Request::new("m", vec![Message::user("What is the capital of France?")]);
    let done = rt.block_on(collect(provider.stream(request)))?;
    println!("answer: {:?} usage={:?}", done.message, done.usage);
    Ok(())
}
