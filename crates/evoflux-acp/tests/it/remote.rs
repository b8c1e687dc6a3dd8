//! External agents over ACP, against a fake agent that is a small POSIX
//! shell script (`tests/fixtures/fake-acp-agent.sh`): one that never
//! answers `initialize`, one that goes silent mid-prompt, one that keeps
//! talking, one whose permission request is denied, and one that repeats
//! its tool calls. The script writes its pid (and any child it starts) to
//! a file, so a test can tell that what timed out is gone.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use evoflux_acp::AcpRemoteAgents;
use evoflux_core::Diagnostics;
use evoflux_harness::approval::{
    ApprovalDecision, ApprovalFuture, ApprovalRequest, Approver, Decided, NonInteractive,
};
use evoflux_harness::remote::{RemoteAgent, RemoteAgents, RemoteError, remote_agents};
use evoflux_harness::{CollectEvents, Event};

/// The fake agent: `sh <this> <pids file> <scenario>`.
const FAKE_AGENT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/fake-acp-agent.sh"
);

struct Fake {
    dir: tempfile::TempDir,
    agent: RemoteAgent,
}

impl Fake {
    fn pids_file(&self) -> PathBuf {
        self.dir.path().join("pids")
    }

    /// Every pid the agent wrote down.
    fn pids(&self) -> Vec<u32> {
        std::fs::read_to_string(self.pids_file())
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect()
    }

    async fn open(
        &self,
        events: Arc<CollectEvents>,
        approver: Arc<dyn Approver>,
    ) -> Result<Box<dyn evoflux_harness::remote::RemoteSession>, RemoteError> {
        AcpRemoteAgents
            .open(&self.agent, self.dir.path(), events, approver)
            .await
    }
}

/// `helper`, the fake agent playing `scenario`, with these bounds.
fn fake(scenario: &str, start_timeout_secs: u64, idle_timeout_secs: u64) -> Fake {
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    // Declared as a user would: a table of the user's config.toml, which
    // the source graph selects as `remote-agents/helper`.
    let config = dir.path().join("config");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("config.toml"),
        format!(
            "[agents.external.helper]\ncommand = {:?}\nstart_timeout_secs = {start_timeout_secs}\n\
             idle_timeout_secs = {idle_timeout_secs}\n",
            ["sh", FAKE_AGENT, &pids.display().to_string(), scenario]
        ),
    )
    .unwrap();
    let graph = evoflux_graph::compile_standard(&evoflux_graph::RootOptions {
        user_config_dir: Some(config),
        ..evoflux_graph::RootOptions::default()
    })
    .unwrap();
    assert!(!graph.has_errors(), "{}", graph.diagnostics.render_human());
    let mut diags = Diagnostics::new();
    let mut agents = remote_agents(&graph, &[], &[], &mut diags);
    assert!(diags.is_empty(), "{diags:?}");
    Fake {
        dir,
        agent: agents.remove(0),
    }
}

/// Whether `pid` is a running process (a zombie waiting to be reaped is
/// not).
fn running(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let state = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.trim_start().chars().next());
    !matches!(state, Some('Z' | 'X') | None)
}

/// Waits briefly for every pid the agent wrote down to stop running.
async fn all_gone(fake: &Fake, at_least: usize) {
    let pids = fake.pids();
    assert!(pids.len() >= at_least, "the agent wrote its pids: {pids:?}");
    let deadline = Instant::now() + Duration::from_secs(5);
    while pids.iter().any(|p| running(*p)) {
        assert!(
            Instant::now() < deadline,
            "still running: {:?}",
            pids.iter().filter(|p| running(**p)).collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[derive(Debug)]
struct Approve;

impl Approver for Approve {
    fn approve<'a>(&'a self, _request: &'a ApprovalRequest) -> ApprovalFuture<'a> {
        Box::pin(async { Decided::by_user(ApprovalDecision::Approved) })
    }
}

fn deny() -> Arc<dyn Approver> {
    Arc::new(NonInteractive)
}

#[tokio::test]
async fn an_agent_that_never_answers_initialize_is_stopped_at_its_start_timeout() {
    let fake = fake("never-starts", 1, 300);
    let began = Instant::now();
    let err = fake
        .open(Arc::new(CollectEvents::default()), deny())
        .await
        .unwrap_err();
    let took = began.elapsed();
    assert_eq!(err.code, "acp/start-timeout");
    assert!(
        took >= Duration::from_secs(1) && took < Duration::from_secs(5),
        "{took:?}"
    );
    assert!(
        err.message
            .contains("agents.external.helper.start_timeout_secs"),
        "{}",
        err.message
    );
    // The script and the `sleep` it started, its whole group, are gone.
    all_gone(&fake, 2).await;
}

#[tokio::test]
async fn an_agent_silent_mid_prompt_is_stopped_at_its_idle_timeout() {
    let fake = fake("goes-silent", 30, 1);
    let events = Arc::new(CollectEvents::default());
    let mut session = fake.open(Arc::clone(&events), deny()).await.unwrap();
    let began = Instant::now();
    let err = session.prompt("Summarize the notes").await.unwrap_err();
    let took = began.elapsed();
    assert_eq!(err.code, "acp/idle-timeout");
    assert!(
        took >= Duration::from_secs(1) && took < Duration::from_secs(5),
        "{took:?}"
    );
    assert!(
        err.message
            .contains("agents.external.helper.idle_timeout_secs"),
        "{}",
        err.message
    );
    all_gone(&fake, 2).await;
    // What it said before going silent reached the stream.
    assert!(events.take().iter().any(|e| matches!(e,
        Event::MessageDelta { text } if text == "Working on it")));
    // The session is over: a later prompt is told so at once.
    let again = session.prompt("Still there?").await.unwrap_err();
    assert_eq!(again.code, "acp/agent-exited");
}

#[tokio::test]
async fn an_agent_that_keeps_talking_outlives_its_idle_timeout() {
    let fake = fake("keeps-talking", 30, 1);
    let mut session = fake
        .open(Arc::new(CollectEvents::default()), deny())
        .await
        .unwrap();
    let began = Instant::now();
    let turn = session.prompt("Count to four").await.unwrap();
    assert!(began.elapsed() >= Duration::from_secs(2));
    assert_eq!(turn.text, "step 1. step 2. step 3. step 4. ");
}

#[tokio::test]
async fn a_denied_permission_fails_the_turn_and_an_approved_one_does_not() {
    let fake_denied = fake("asks", 30, 300);
    let mut session = fake_denied
        .open(Arc::new(CollectEvents::default()), deny())
        .await
        .unwrap();
    let err = session.prompt("Write the notes").await.unwrap_err();
    assert_eq!(err.code, "acp/permission-denied");
    assert!(
        err.message.contains("Write notes.txt") && err.message.contains("could not write"),
        "{}",
        err.message
    );

    let fake_approved = fake("asks", 30, 300);
    let mut session = fake_approved
        .open(Arc::new(CollectEvents::default()), Arc::new(Approve))
        .await
        .unwrap();
    let turn = session.prompt("Write the notes").await.unwrap();
    assert_eq!(turn.text, "Wrote notes.txt");
}

#[tokio::test]
async fn a_tool_call_the_agent_repeats_is_one_start_and_one_end() {
    let fake = fake("repeats", 30, 300);
    let events = Arc::new(CollectEvents::default());
    let mut session = fake.open(Arc::clone(&events), deny()).await.unwrap();
    let turn = session.prompt("Run the tests").await.unwrap();
    assert_eq!(turn.text, "All tests pass.");
    let tools: Vec<(&str, String)> = events
        .take()
        .into_iter()
        .filter_map(|e| match e {
            Event::ToolStarted { call_id, .. } => Some(("started", call_id)),
            Event::ToolEnded { call_id, tool, .. } => {
                assert_eq!(tool, "Run tests");
                Some(("ended", call_id))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        tools,
        [("started", "t1".to_owned()), ("ended", "t1".to_owned())]
    );
}
