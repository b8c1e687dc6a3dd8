//! A recording provider and a ready-made session setup for the loop tests.

#![allow(dead_code)]

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use evoflux_agents::ToolCatalog;
use evoflux_agents::team::{EffectiveAgentConfig, compile_agent_config, load_agents};
use evoflux_core::config::ProviderKind;
use evoflux_core::{AppMode, Diagnostics};
use evoflux_graph::discover::{RootOptions, standard_roots};
use evoflux_graph::{BuiltinRegistry, CompiledGraph};
use evoflux_harness::NetworkAccess;
use evoflux_harness::{
    Approver, CollectEvents, FixedClock, Limits, NonInteractive, RunSetup, base_pipeline,
};
use evoflux_model::{EventStream, Provider, Request, StopReason, StreamEvent, ToolCall, Usage};
use evoflux_store::Store;
use serde_json::Value;

/// One scripted answer of the fake model.
#[derive(Debug, Clone, Default)]
pub struct Reply {
    pub text: String,
    pub calls: Vec<ToolCall>,
}

pub fn text(t: &str) -> Reply {
    Reply {
        text: t.to_owned(),
        calls: vec![],
    }
}

pub fn call(id: &str, name: &str, args: Value) -> Reply {
    Reply {
        text: String::new(),
        calls: vec![ToolCall {
            id: id.to_owned(),
            name: name.to_owned(),
            arguments: args,
        }],
    }
}

/// Answers from a queue and keeps every request it was sent.
#[derive(Debug, Default)]
pub struct Recorder {
    replies: Mutex<VecDeque<Reply>>,
    pub requests: Mutex<Vec<Request>>,
}

impl Recorder {
    pub fn new(replies: Vec<Reply>) -> Arc<Recorder> {
        Arc::new(Recorder {
            replies: Mutex::new(replies.into()),
            requests: Mutex::new(vec![]),
        })
    }

    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }

    pub fn last_request(&self) -> Request {
        self.requests.lock().unwrap().last().cloned().unwrap()
    }

    pub fn tool_names(request: &Request) -> Vec<String> {
        request.tools.iter().map(|t| t.name.clone()).collect()
    }
}

impl Provider for Recorder {
    fn name(&self) -> &str {
        "recorder"
    }
    fn kind(&self) -> ProviderKind {
        ProviderKind::Scripted
    }
    fn context_window(&self) -> Option<u64> {
        Some(8192)
    }
    fn stream(&self, request: Request) -> EventStream {
        self.requests.lock().unwrap().push(request);
        let reply = self
            .replies
            .lock()
            .unwrap()
            .pop_front()
            .expect("the model was called more often than the test scripted");
        let mut events = vec![];
        if !reply.text.is_empty() {
            events.push(Ok(StreamEvent::TextDelta { text: reply.text }));
        }
        let stop = if reply.calls.is_empty() {
            StopReason::EndTurn
        } else {
            StopReason::ToolUse
        };
        for call in reply.calls {
            events.push(Ok(StreamEvent::ToolCall { call }));
        }
        events.push(Ok(StreamEvent::Usage {
            usage: Usage {
                input_tokens: 100,
                output_tokens: 10,
                cached_input_tokens: 0,
                cache_write_input_tokens: 0,
                web_search_requests: 0,
            },
        }));
        events.push(Ok(StreamEvent::Stop { reason: stop }));
        events.push(Ok(StreamEvent::Done));
        Box::pin(futures_util::stream::iter(events))
    }
}

/// A temp world: data dir, a repository, and a graph compiled from them.
pub struct World {
    pub tmp: tempfile::TempDir,
    pub graph: CompiledGraph,
}

impl World {
    pub fn new() -> World {
        World::with_files(&[])
    }

    /// `files` are written below the repository before compiling.
    pub fn with_files(files: &[(&str, &str)]) -> World {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        for (rel, text) in files {
            let p = repo.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        let opts = RootOptions {
            admin_dir: Some(tmp.path().join("admin")),
            user_config_dir: Some(tmp.path().join("config")),
            home: None,
            workspaces: vec![repo.canonicalize().unwrap()],
            trusted: vec![repo.canonicalize().unwrap()],
            plugins: vec![],
            foreign_mcp: Vec::new(),
        };
        let graph = evoflux_graph::compile(&[BuiltinRegistry::framework()], &standard_roots(&opts))
            .unwrap();
        World { tmp, graph }
    }

    pub fn repo(&self) -> PathBuf {
        self.tmp.path().join("repo").canonicalize().unwrap()
    }

    pub fn data(&self) -> PathBuf {
        self.tmp.path().join("data")
    }

    pub fn lead(&self, mode: AppMode) -> EffectiveAgentConfig {
        let mut diags = Diagnostics::new();
        let dir = load_agents(&self.graph, mode, &mut diags);
        let team = dir.team(None).unwrap();
        let entry = dir.get(&team.lead).unwrap();
        compile_agent_config(
            entry.raw.as_ref().unwrap(),
            entry.source.clone(),
            &ToolCatalog::from_graph(&self.graph),
            &mut diags,
        )
    }

    pub async fn setup(
        &self,
        mode: AppMode,
        provider: Arc<Recorder>,
        events: Arc<CollectEvents>,
    ) -> RunSetup {
        self.setup_with(mode, provider, events, Arc::new(NonInteractive))
            .await
    }

    pub async fn setup_with(
        &self,
        mode: AppMode,
        provider: Arc<Recorder>,
        events: Arc<CollectEvents>,
        approver: Arc<dyn Approver>,
    ) -> RunSetup {
        RunSetup {
            store: Store::open(self.data()).await.unwrap(),
            provider,
            model: "test-model".into(),
            model_label: "recorder:test-model".into(),
            price: None,
            agent: self.lead(mode),
            catalog: ToolCatalog::from_graph(&self.graph),
            pipeline: base_pipeline().unwrap(),
            clock: Arc::new(FixedClock("2026-11-30".into())),
            events,
            approver,
            limits: Limits::default(),
            can_request_input: true,
            network: NetworkAccess::Off,
            processes: None,
            artifacts_root: self.data().join("artifacts"),
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
        }
    }
}

/// Replaces a path in a rendered string, for snapshots.
pub fn redact(text: &str, path: &Path, with: &str) -> String {
    text.replace(&path.display().to_string(), with)
}

/// `v` with every object's keys sorted: serde_json keeps insertion order
/// when another crate of the build turns on `preserve_order`, and a
/// snapshot must not care.
pub fn sorted(v: serde_json::Value) -> serde_json::Value {
    match v {
        serde_json::Value::Object(map) => {
            let mut entries: Vec<_> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            serde_json::Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        serde_json::Value::Array(items) => {
            serde_json::Value::Array(items.into_iter().map(sorted).collect())
        }
        other => other,
    }
}
