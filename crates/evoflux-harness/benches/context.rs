//! Context control on the 60-turn Coding session of the tests
//! (`tests/it/context_support`): bytes sent to the provider with the context
//! owners (offload, compaction, projection, receipts) versus the base
//! pipeline alone, and what the hooks cost per model call. Prints a JSON
//! report; asserts nothing about time.
//!
//! `cargo bench -p evoflux-harness --bench context`

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/it/context_support/mod.rs"]
mod context_support;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use context_support::{Model, Repo, request_bytes, run_long_session};
use evoflux_core::AppMode;
use evoflux_harness::hooks::{HookContext, ModelCall};
use evoflux_harness::{
    FixedClock, HookPipeline, PipelineOptions, base_pipeline, standard_pipeline,
};
use evoflux_model::Request;
use serde_json::json;

const WINDOW: u64 = 20_000;
const HOOK_ITERATIONS: u32 = 50;

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(bench());
}

struct Run {
    total_bytes: usize,
    max_request: usize,
    requests: usize,
    summaries: usize,
    projected_results: u64,
    projection_saved_chars: u64,
    hook_us: f64,
}

async fn run(pipeline: fn() -> HookPipeline) -> Run {
    let repo = Repo::new(&context_support::long_session_files());
    let (h, model) = run_long_session(&repo, pipeline(), Some(WINDOW), false).await;
    let requests = model.requests();
    let store = evoflux_store::Store::open(repo.data()).await.unwrap();
    let usage = store.usage(h.session().id).await.unwrap();
    // The hooks of one more model call on the finished session, timed
    // alone: a fresh pipeline of the same kind over the final transcript
    // (it picks the persisted compaction up from disk on the first call).
    let agent = repo.lead(AppMode::Coding);
    let clock = FixedClock("2026-11-30".into());
    let artifacts = repo
        .data()
        .join("artifacts")
        .join(h.session().id.to_string());
    let workspace = evoflux_tools::Workspace::new([repo.repo()]).unwrap();
    let ctx = HookContext {
        session: h.session(),
        agent: &agent,
        clock: &clock,
        model: "test-model",
        context_window: Some(WINDOW),
        price: None,
        artifacts_dir: &artifacts,
        workspace: &workspace,
        tools: h.tools(),
        events: &evoflux_harness::NoEvents,
    };
    let p = pipeline();
    let provider = Model::new(vec![], Some(WINDOW), false);
    let tools: Vec<_> = h.tools().iter().map(|t| t.model_definition()).collect();
    let mut elapsed = std::time::Duration::ZERO;
    for i in 0..=HOOK_ITERATIONS {
        let mut call = ModelCall::new(
            Request::new("test-model", h.messages().to_vec()).with_tools(tools.clone()),
            provider.clone(),
        );
        let started = Instant::now();
        p.before_model(&ctx, &mut call).await.unwrap();
        if i > 0 {
            elapsed += started.elapsed();
        }
    }
    Run {
        total_bytes: requests.iter().map(request_bytes).sum(),
        max_request: requests.iter().map(request_bytes).max().unwrap_or(0),
        requests: requests.len(),
        summaries: model.summaries.load(Ordering::SeqCst),
        projected_results: usage.projected_results,
        projection_saved_chars: usage.projection_saved_chars,
        hook_us: elapsed.as_secs_f64() * 1e6 / f64::from(HOOK_ITERATIONS),
    }
}

async fn bench() {
    let without = run(|| base_pipeline().unwrap()).await;
    let with = run(|| standard_pipeline(PipelineOptions::new(AppMode::Coding)).unwrap()).await;
    let report = json!({
        "session": {
            "turns": context_support::LONG_SESSION_TURNS,
            "context_window_tokens": WINDOW,
        },
        "without_context_control": {
            "requests": without.requests,
            "total_bytes_sent": without.total_bytes,
            "largest_request_bytes": without.max_request,
            "hooks_us_per_model_call": round(without.hook_us),
        },
        "with_context_control": {
            "requests": with.requests,
            "summaries": with.summaries,
            "total_bytes_sent": with.total_bytes,
            "largest_request_bytes": with.max_request,
            "projected_results": with.projected_results,
            "projection_saved_chars": with.projection_saved_chars,
            "hooks_us_per_model_call": round(with.hook_us),
        },
        "bytes_ratio_with_over_without": round3(with.total_bytes as f64 / without.total_bytes as f64),
        "goal_ratio_at_most": 0.5,
        "context_hooks_us_per_model_call": round(with.hook_us - without.hook_us),
    });
    println!("{}", serde_json::to_string_pretty(&report).unwrap());
    let _ = Arc::<()>::default();
}

fn round(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

fn round3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}
