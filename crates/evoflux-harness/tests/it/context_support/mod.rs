//! A model that answers from a script, enforces its context window like a
//! real provider, and summarizes on request; plus the 60-turn Coding
//! session shared by the context tests and `benches/context.rs`.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use evoflux_agents::ToolCatalog;
use evoflux_agents::team::{EffectiveAgentConfig, compile_agent_config, load_agents};
use evoflux_core::config::ProviderKind;
use evoflux_core::{AppMode, Diagnostics};
use evoflux_graph::discover::{RootOptions, standard_roots};
use evoflux_graph::{BuiltinRegistry, CompiledGraph};
use evoflux_harness::NetworkAccess;
use evoflux_harness::{
    FixedClock, Harness, HookPipeline, Limits, NoEvents, NonInteractive, RunSetup, SessionRequest,
    TurnOptions,
};
use evoflux_model::{
    EventStream, Provider, ProviderError, Request, StopReason, StreamEvent, ToolCall, Usage,
};
use evoflux_store::{Store, WorkspaceRequest};
use evoflux_tools::{ProcessRuntime, RuntimeConfig};
use serde_json::{Value, json};

/// The summary the model writes when asked (a request without tools).
pub const SUMMARY: &str =
    "Summary: the agent inspected src/, grepped for handlers and ran the build.";

#[derive(Debug, Clone)]
pub enum Reply {
    Text(String),
    Calls(Vec<ToolCall>),
    /// Refuse this request as too long (once), then take the next reply.
    RefuseOnce,
}

pub fn text(t: &str) -> Reply {
    Reply::Text(t.to_owned())
}

pub fn call(id: &str, name: &str, args: Value) -> Reply {
    Reply::Calls(vec![ToolCall {
        id: id.to_owned(),
        name: name.to_owned(),
        arguments: args,
    }])
}

/// Serialized size of a request: what goes over the wire, roughly.
pub fn request_bytes(r: &Request) -> usize {
    serde_json::to_string(r).map(|s| s.len()).unwrap_or(0)
}

#[derive(Debug)]
pub struct Model {
    replies: Mutex<VecDeque<Reply>>,
    pub requests: Mutex<Vec<Request>>,
    pub window: Option<u64>,
    /// Refuse requests over the window, as a real provider does.
    pub enforce: bool,
    pub summaries: AtomicUsize,
    pub refusals: AtomicUsize,
}

impl Model {
    pub fn new(replies: Vec<Reply>, window: Option<u64>, enforce: bool) -> Arc<Model> {
        Arc::new(Model {
            replies: Mutex::new(replies.into()),
            requests: Mutex::new(vec![]),
            window,
            enforce,
            summaries: AtomicUsize::new(0),
            refusals: AtomicUsize::new(0),
        })
    }

    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }

    /// Requests that carried tools (the agent's calls, not summaries).
    pub fn agent_requests(&self) -> Vec<Request> {
        self.requests()
            .into_iter()
            .filter(|r| !r.tools.is_empty())
            .collect()
    }

    pub fn last_agent_request(&self) -> Request {
        self.agent_requests().pop().unwrap()
    }
}

fn events(text: String, calls: Vec<ToolCall>) -> EventStream {
    let mut ev = vec![];
    if !text.is_empty() {
        ev.push(Ok(StreamEvent::TextDelta { text }));
    }
    let stop = if calls.is_empty() {
        StopReason::EndTurn
    } else {
        StopReason::ToolUse
    };
    for call in calls {
        ev.push(Ok(StreamEvent::ToolCall { call }));
    }
    ev.push(Ok(StreamEvent::Usage {
        usage: Usage {
            input_tokens: 100,
            output_tokens: 10,
            cached_input_tokens: 0,
            cache_write_input_tokens: 0,
            web_search_requests: 0,
        },
    }));
    ev.push(Ok(StreamEvent::Stop { reason: stop }));
    ev.push(Ok(StreamEvent::Done));
    Box::pin(futures_util::stream::iter(ev))
}

fn refuse(detail: &str) -> EventStream {
    Box::pin(futures_util::stream::iter([Err(
        ProviderError::ContextExceeded {
            provider: "model".into(),
            detail: detail.into(),
        },
    )]))
}

impl Provider for Model {
    fn name(&self) -> &str {
        "model"
    }
    fn kind(&self) -> ProviderKind {
        ProviderKind::Scripted
    }
    fn context_window(&self) -> Option<u64> {
        self.window
    }
    fn stream(&self, request: Request) -> EventStream {
        let bytes = request_bytes(&request);
        let has_tools = !request.tools.is_empty();
        self.requests.lock().unwrap().push(request);
        if self.enforce
            && let Some(w) = self.window
            && (bytes as u64) / 4 > w
        {
            self.refusals.fetch_add(1, Ordering::SeqCst);
            return refuse(&format!("{} tokens > {w}", bytes / 4));
        }
        if !has_tools {
            self.summaries.fetch_add(1, Ordering::SeqCst);
            return events(SUMMARY.to_owned(), vec![]);
        }
        let mut q = self.replies.lock().unwrap();
        match q.pop_front() {
            Some(Reply::RefuseOnce) => {
                self.refusals.fetch_add(1, Ordering::SeqCst);
                refuse("scripted refusal")
            }
            Some(Reply::Text(t)) => events(t, vec![]),
            Some(Reply::Calls(c)) => events(String::new(), c),
            None => panic!("the model was called more often than the test scripted"),
        }
    }
}

/// A temp repository with `files`, and the graph compiled over it.
pub struct Repo {
    pub tmp: tempfile::TempDir,
    pub graph: CompiledGraph,
}

impl Repo {
    pub fn new(files: &[(&str, String)]) -> Repo {
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
        Repo { tmp, graph }
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
        model: Arc<Model>,
        pipeline: HookPipeline,
        processes: bool,
    ) -> RunSetup {
        let artifacts = self.data().join("artifacts");
        RunSetup {
            store: Store::open(self.data()).await.unwrap(),
            provider: model,
            model: "test-model".into(),
            model_label: "model:test-model".into(),
            price: None,
            agent: self.lead(mode),
            catalog: ToolCatalog::from_graph(&self.graph),
            pipeline,
            clock: Arc::new(FixedClock("2026-11-30".into())),
            events: Arc::new(NoEvents),
            approver: Arc::new(NonInteractive),
            limits: Limits::default(),
            can_request_input: false,
            network: NetworkAccess::Off,
            processes: processes.then(|| ProcessRuntime::new(RuntimeConfig::new(&artifacts))),
            artifacts_root: artifacts,
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

    pub fn coding(&self) -> SessionRequest {
        SessionRequest::New {
            workspace: WorkspaceRequest::Coding(vec![self.repo()]),
            graph_hash: None,
        }
    }
}

/// Files of the long session's repository: a large source file, handler
/// files to grep, and a log with many matching lines.
pub fn long_session_files() -> Vec<(&'static str, String)> {
    let big: String = (1..=3000)
        .map(|i| format!("fn item_{i}() -> u32 {{ {i} }} // generated line {i}\n"))
        .collect();
    let handlers: String = (1..=400)
        .map(|i| format!("pub fn handler_{i}(req: Request) -> Response {{ route(req, {i}) }}\n"))
        .collect();
    let log: String = (1..=900)
        .map(|i| format!("2026-11-30T10:{:02}:{:02}Z WARN request {i} took {i}ms in handler_{i} (slow path)\n", i % 60, i % 60))
        .collect();
    vec![
        ("src/big.rs", big),
        ("src/handlers.rs", handlers),
        ("logs/app.log", log),
        ("Cargo.toml", "[package]\nname = \"demo\"\n".to_owned()),
    ]
}

/// One step of the 60-turn session: the tool call of turn `i`.
pub fn long_session_step(i: usize) -> Reply {
    let id = format!("t{i}");
    match i % 6 {
        // Reads of different windows of the big file (~18 KB each).
        0 | 3 => call(
            &id,
            "read",
            json!({"path": "src/big.rs", "offset": 1 + (i * 37) % 2500, "limit": 400}),
        ),
        // Greps with a few hundred matches (~15-20 KB).
        1 => call(
            &id,
            "grep",
            json!({"pattern": "handler_", "directory": "src", "max_results": 220}),
        ),
        // Shell output, journalled and bounded by the shell itself.
        2 => call(
            &id,
            "shell",
            json!({"command": format!("seq 1 {}", 4000 + i)}),
        ),
        // A very large grep (> 40,000 chars): offloaded to an artifact.
        4 => call(
            &id,
            "grep",
            json!({"pattern": "WARN", "directory": "logs", "max_results": 900}),
        ),
        // A repeat of the read two turns back: a receipt, since that
        // result is still exact in front of the model.
        _ => match long_session_step(i - 2) {
            Reply::Calls(mut calls) => {
                calls[0].id = id;
                Reply::Calls(calls)
            }
            other => other,
        },
    }
}

pub const LONG_SESSION_TURNS: usize = 60;

/// The replies of the whole session: per turn, one tool call and a text.
pub fn long_session_replies() -> Vec<Reply> {
    (0..LONG_SESSION_TURNS)
        .flat_map(|i| [long_session_step(i), text(&format!("Step {i} noted."))])
        .collect()
}

/// Runs the 60-turn session with `pipeline`; returns the harness and the
/// model.
pub async fn run_long_session(
    repo: &Repo,
    pipeline: HookPipeline,
    window: Option<u64>,
    enforce: bool,
) -> (Harness, Arc<Model>) {
    let model = Model::new(long_session_replies(), window, enforce);
    let setup = repo
        .setup(AppMode::Coding, model.clone(), pipeline, true)
        .await;
    let mut h = Harness::open(setup, repo.coding()).await.unwrap();
    for i in 0..LONG_SESSION_TURNS {
        h.turn(
            Some(&format!("Step {i}: keep investigating.")),
            TurnOptions::default(),
        )
        .await
        .unwrap();
    }
    (h, model)
}

/// Replaces a path in a rendered string, for snapshots.
pub fn redact(text: &str, path: &Path, with: &str) -> String {
    text.replace(&path.display().to_string(), with)
}
