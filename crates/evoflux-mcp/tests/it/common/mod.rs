//! Helpers shared by the integration tests: definitions that point at the
//! crate's own rmcp test server, waiting for states and events, and a
//! call listener that records what a server sent during a call.

#![allow(dead_code)]

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use evoflux_mcp::live::{
    BoxFuture, CallContext, CallListener, ElicitationAnswer, ElicitationRequest, McpLog,
    McpProgress, SamplingAnswer, SamplingRequest,
};

use evoflux_mcp::{
    HttpLaunch, Launch, McpEvent, McpManager, McpToolResult, ServerDefinition, ServerOwner,
    ServerState, StdioLaunch, TransportKind,
};

pub const TEST_SERVER: &str = env!("CARGO_BIN_EXE_evoflux-mcp-testserver");
/// Generous: a loaded CI machine can be slow; nothing asserts on timing.
pub const WAIT: Duration = Duration::from_secs(60);

pub fn global() -> ServerOwner {
    ServerOwner::Global {
        source: None,
        layer: None,
    }
}

pub fn stdio(name: &str, args: &[&str]) -> ServerDefinition {
    stdio_with(name, args, BTreeMap::new())
}

pub fn stdio_with(name: &str, args: &[&str], env: BTreeMap<String, String>) -> ServerDefinition {
    ServerDefinition {
        name: name.to_owned(),
        owner: global(),
        transport: Some(TransportKind::Stdio),
        launch: Launch::Stdio(StdioLaunch {
            program: TEST_SERVER.into(),
            args: args.iter().map(|s| (*s).to_owned()).collect(),
            env,
            cwd: None,
            create_dirs: Vec::new(),
            references: Default::default(),
            pinned: Vec::new(),
        }),
        startup_timeout: None,
        webbridge: evoflux_mcp::definition::WebBridge::Undeclared,
    }
}

pub fn http(name: &str, url: &str, headers: &[(&str, &str)]) -> ServerDefinition {
    ServerDefinition {
        name: name.to_owned(),
        owner: global(),
        transport: Some(TransportKind::StreamableHttp),
        launch: Launch::StreamableHttp(HttpLaunch {
            url: url.to_owned(),
            headers: headers
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            references: Default::default(),
        }),
        startup_timeout: None,
        webbridge: evoflux_mcp::definition::WebBridge::Undeclared,
    }
}

pub async fn settle(manager: &McpManager) {
    assert!(
        manager.wait_settled(WAIT).await,
        "servers still starting: {:?}",
        manager.statuses()
    );
}

pub fn state(manager: &McpManager, server: &str) -> ServerState {
    manager.status(server).unwrap().state
}

pub fn text(result: &McpToolResult) -> String {
    result.to_text()
}

/// Waits for a `ToolsChanged` event of `server`.
pub async fn tools_changed(rx: &mut tokio::sync::broadcast::Receiver<McpEvent>, server: &str) {
    let wait = async {
        loop {
            match rx.recv().await {
                Ok(McpEvent::ToolsChanged { server: s, .. }) if s == server => return,
                Ok(_) => {}
                Err(e) => panic!("event stream ended: {e}"),
            }
        }
    };
    tokio::time::timeout(WAIT, wait)
        .await
        .expect("no tools_changed event");
}

/// Whether a process is gone (absent, or a zombie waiting to be reaped).
#[cfg(target_os = "linux")]
pub fn process_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

/// Polls until `pid` is gone, at most [`WAIT`].
#[cfg(target_os = "linux")]
pub async fn wait_gone(pid: u32) -> bool {
    let deadline = tokio::time::Instant::now() + WAIT;
    while tokio::time::Instant::now() < deadline {
        if process_gone(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

/// A session's listener: records what the server sent and answers
/// elicitations from a script, in order (cancel when it runs out).
#[derive(Debug, Default)]
pub struct Recorder {
    pub progress: Mutex<Vec<McpProgress>>,
    pub logs: Mutex<Vec<McpLog>>,
    pub sampled: Mutex<Vec<SamplingRequest>>,
    pub forms: Mutex<Vec<ElicitationRequest>>,
    pub answers: Mutex<VecDeque<ElicitationAnswer>>,
}

impl CallListener for Recorder {
    fn progress(&self, progress: McpProgress) {
        self.progress.lock().unwrap().push(progress);
    }
    fn log(&self, log: McpLog) {
        self.logs.lock().unwrap().push(log);
    }
    fn sample(&self, request: SamplingRequest) -> BoxFuture<'_, Result<SamplingAnswer, String>> {
        self.sampled.lock().unwrap().push(request);
        Box::pin(async {
            Ok(SamplingAnswer {
                text: "Lisbon".to_owned(),
                model: "scripted".to_owned(),
            })
        })
    }
    fn elicit(&self, request: ElicitationRequest) -> BoxFuture<'_, ElicitationAnswer> {
        self.forms.lock().unwrap().push(request);
        let answer = self
            .answers
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or(ElicitationAnswer::Cancel);
        Box::pin(async move { answer })
    }
}

/// The call context of session `owner` whose listener is `recorder`.
pub fn context(owner: &str, recorder: &Arc<Recorder>) -> Option<CallContext> {
    Some(CallContext {
        owner: owner.to_owned(),
        listener: Arc::clone(recorder) as Arc<dyn CallListener>,
    })
}
