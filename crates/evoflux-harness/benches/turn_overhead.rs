//! Harness overhead per turn on a 200-message session.
//!
//! The provider answers instantly from memory and the turns call no
//! tools, so what is timed is the harness itself: hooks, request
//! assembly with every standard owner (instructions, offload, compaction
//! check, projection, receipts), event emission, and the durable writes of the user message,
//! the assistant message and the usage. Prints a JSON report.
//!
//! `cargo bench -p evoflux-harness --bench turn_overhead`

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use evoflux_agents::ToolCatalog;
use evoflux_agents::team::{compile_agent_config, load_agents};
use evoflux_core::config::ProviderKind;
use evoflux_core::{AppMode, Diagnostics};
use evoflux_graph::BuiltinRegistry;
use evoflux_graph::discover::{RootOptions, standard_roots};
use evoflux_harness::NetworkAccess;
use evoflux_harness::{
    FixedClock, Harness, Limits, NoEvents, NonInteractive, PipelineOptions, RunSetup,
    SessionRequest, TurnOptions, standard_pipeline,
};
use evoflux_model::{EventStream, Message, Provider, Request, StopReason, StreamEvent, ToolCall};
use evoflux_store::{NewSession, Store, WorkspaceRequest};
use serde_json::json;

const HISTORY: usize = 200;
const WARMUP: usize = 10;
const TURNS: usize = 200;

#[derive(Debug)]
struct Instant_;

impl Provider for Instant_ {
    fn name(&self) -> &str {
        "bench"
    }
    fn kind(&self) -> ProviderKind {
        ProviderKind::Scripted
    }
    fn context_window(&self) -> Option<u64> {
        None
    }
    fn stream(&self, _request: Request) -> EventStream {
        Box::pin(futures_util::stream::iter([
            Ok(StreamEvent::TextDelta {
                text: "Noted.".into(),
            }),
            Ok(StreamEvent::Stop {
                reason: StopReason::EndTurn,
            }),
            Ok(StreamEvent::Done),
        ]))
    }
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(bench());
}

async fn bench() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    let repo = repo.canonicalize().unwrap();
    let opts = RootOptions {
        admin_dir: Some(tmp.path().join("admin")),
        user_config_dir: Some(tmp.path().join("config")),
        home: None,
        trusted: vec![repo.clone()],
        workspaces: vec![repo.clone()],
        plugins: vec![],
        foreign_mcp: Vec::new(),
    };
    let graph =
        evoflux_graph::compile(&[BuiltinRegistry::framework()], &standard_roots(&opts)).unwrap();
    let mut diags = Diagnostics::new();
    let dir = load_agents(&graph, AppMode::Coding, &mut diags);
    let team = dir.team(None).unwrap();
    let entry = dir.get(&team.lead).unwrap();
    let catalog = ToolCatalog::from_graph(&graph);
    let agent = compile_agent_config(
        entry.raw.as_ref().unwrap(),
        entry.source.clone(),
        &catalog,
        &mut diags,
    );

    // A session with a 200-message history of reads and answers.
    let store = Store::open(tmp.path().join("data")).await.unwrap();
    let session = store
        .create_session(NewSession {
            workspace: WorkspaceRequest::Coding(vec![repo.clone()]),
            lead: Some(agent.name.clone()),
            model: None,
            graph_hash: None,
            parent: None,
        })
        .await
        .unwrap();
    let body = "x".repeat(400);
    for i in 0..HISTORY / 4 {
        let id = format!("h{i}");
        for m in [
            Message::user(format!("step {i}: {body}")),
            Message::Assistant {
                provider_items: Vec::new(),
                content: String::new(),
                tool_calls: vec![ToolCall {
                    id: id.clone(),
                    name: "read".into(),
                    arguments: json!({"path": "src/lib.rs"}),
                }],
            },
            Message::Tool {
                tool_call_id: id,
                content: body.clone(),
                is_error: false,
                media: Vec::new(),
            },
            Message::assistant(format!("done {i}")),
        ] {
            store.append_message(session.id, &m).await.unwrap();
        }
    }

    let setup = RunSetup {
        store,
        provider: Arc::new(Instant_),
        model: "bench".into(),
        model_label: "bench:bench".into(),
        price: None,
        agent,
        catalog,
        // Every owner a CLI Coding session has (skills aside).
        pipeline: standard_pipeline(PipelineOptions::new(AppMode::Coding)).unwrap(),
        clock: Arc::new(FixedClock("2026-11-30".into())),
        events: Arc::new(NoEvents),
        approver: Arc::new(NonInteractive),
        limits: Limits::default(),
        can_request_input: true,
        network: NetworkAccess::Off,
        processes: None,
        artifacts_root: tmp.path().join("data/artifacts"),
        mcp: None,
        mcp_call_timeout: std::time::Duration::from_secs(30),
        skills: None,
        approvals: Default::default(),
        sandbox: None,
        team: None,
        checks: None,
        schedules_dir: None,
        code_cache: None,
        chromium: None,
    };
    let mut h = Harness::open(
        setup,
        SessionRequest::Resume {
            id: session.id,
            mode: None,
            workspace: None,
        },
    )
    .await
    .unwrap();
    assert_eq!(h.messages().len(), HISTORY);

    let mut samples: Vec<Duration> = Vec::with_capacity(TURNS);
    for i in 0..WARMUP + TURNS {
        let start = Instant::now();
        h.turn(Some("one more thing"), TurnOptions::default())
            .await
            .unwrap();
        if i >= WARMUP {
            samples.push(start.elapsed());
        }
    }
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let report = json!({
        "bench": "harness_turn_overhead",
        "history_messages": HISTORY,
        "turns": TURNS,
        "median_ms": ms(samples[TURNS / 2]),
        "p90_ms": ms(samples[TURNS * 9 / 10]),
        "min_ms": ms(samples[0]),
        "max_ms": ms(samples[TURNS - 1]),
        "goal_median_ms": 2.0,
    });
    println!("{}", serde_json::to_string_pretty(&report).unwrap());
}
