#![allow(clippy::unwrap_used, clippy::expect_used)]

//! Remote agents (`[agents.external]`) through the harness's dispatch,
//! with an in-process [`RemoteAgents`]: admitted and held to their result
//! contract as a worker recipe is, run in the foreground, and refused a
//! name a local agent already has.

use crate::common;

use std::collections::VecDeque;
use std::path::Path;
use std::sync::{Arc, Mutex};

use common::{Recorder, World, call, text};
use evoflux_agents::ToolCatalog;
use evoflux_agents::worker::external::external_agent_spec;
use evoflux_core::config::ConfigOrigin;
use evoflux_core::external_agent::{ExternalAgentConfig, ExternalCwd};
use evoflux_core::{AppMode, Diagnostics};
use evoflux_harness::approval::Approver;
use evoflux_harness::events::ContractOutcome;
use evoflux_harness::remote::{
    RemoteAgent, RemoteAgents, RemoteFuture, RemoteSession, RemoteStop, RemoteTurn, remote_agents,
};
use evoflux_harness::{
    ChildFactory, ChildModel, CollectEvents, Event, EventSink, Harness, HookPipeline,
    SessionRequest, TeamSetup, TurnOptions,
};
use evoflux_store::WorkspaceRequest;
use serde_json::json;

#[derive(Debug)]
struct NoChildren;

impl ChildFactory for NoChildren {
    fn model(
        &self,
        _agent: &evoflux_agents::team::EffectiveAgentConfig,
    ) -> Result<ChildModel, String> {
        Err("no local children in this test".into())
    }
    fn parts(
        &self,
        _mode: AppMode,
    ) -> Result<
        (
            HookPipeline,
            Option<Arc<evoflux_harness::skills::SkillRuntime>>,
        ),
        evoflux_harness::hooks::HookError,
    > {
        Ok((evoflux_harness::base_pipeline()?, None))
    }
}

/// A remote agent that answers from a queue and keeps what it was asked.
#[derive(Debug, Default)]
struct FakeRemote {
    answers: Mutex<VecDeque<String>>,
    prompts: Arc<Mutex<Vec<String>>>,
    opened: Mutex<u32>,
}

#[derive(Debug)]
struct FakeSession {
    answers: VecDeque<String>,
    prompts: Arc<Mutex<Vec<String>>>,
    events: Arc<dyn EventSink>,
}

impl RemoteAgents for FakeRemote {
    fn open<'a>(
        &'a self,
        _agent: &'a RemoteAgent,
        _cwd: &'a Path,
        events: Arc<dyn EventSink>,
        _approver: Arc<dyn Approver>,
    ) -> RemoteFuture<'a, Box<dyn RemoteSession>> {
        *self.opened.lock().unwrap() += 1;
        let answers = std::mem::take(&mut *self.answers.lock().unwrap());
        let prompts = Arc::clone(&self.prompts);
        Box::pin(async move {
            Ok(Box::new(FakeSession {
                answers,
                prompts,
                events,
            }) as Box<dyn RemoteSession>)
        })
    }
}

impl RemoteSession for FakeSession {
    fn id(&self) -> &str {
        "remote-1"
    }
    fn prompt<'a>(&'a mut self, text: &'a str) -> RemoteFuture<'a, RemoteTurn> {
        self.prompts.lock().unwrap().push(text.to_owned());
        let answer = self.answers.pop_front().unwrap_or_default();
        self.events.emit(&Event::MessageDelta {
            text: answer.clone(),
        });
        Box::pin(async move {
            Ok(RemoteTurn {
                text: answer,
                stop: RemoteStop::EndTurn,
            })
        })
    }
}

fn declared(cwd: ExternalCwd, contract: serde_json::Value) -> ExternalAgentConfig {
    ExternalAgentConfig {
        command: vec!["helper-acp".into()],
        env: Vec::new(),
        cwd,
        description: Some("Finds things.".into()),
        result_contract: Some(contract),
        start_timeout_secs: evoflux_core::external_agent::DEFAULT_START_TIMEOUT_SECS,
        idle_timeout_secs: evoflux_core::external_agent::DEFAULT_IDLE_TIMEOUT_SECS,
    }
}

/// A Coding lead whose team is the remote agent `helper`, answering
/// `answers`; the lead calls `agent` with `arguments`, then says `done`.
async fn lead_with_helper(
    world: &World,
    cwd: ExternalCwd,
    arguments: serde_json::Value,
    answers: &[String],
) -> (Harness, Arc<FakeRemote>, Arc<CollectEvents>, Arc<Recorder>) {
    let helper = RemoteAgent {
        spec: external_agent_spec(
            "helper",
            &declared(cwd, json!({"kind": "scout-report"})),
            ConfigOrigin::User,
            None,
        )
        .unwrap(),
        launch: declared(cwd, json!({"kind": "scout-report"})),
        file: None,
        origin: ConfigOrigin::User,
    };
    let remote = Arc::new(FakeRemote {
        answers: Mutex::new(answers.iter().cloned().collect()),
        ..FakeRemote::default()
    });
    let provider = Recorder::new(vec![call("c1", "agent", arguments), text("done")]);
    let events = Arc::new(CollectEvents::default());
    let mut setup = world
        .setup(AppMode::Coding, provider.clone(), Arc::clone(&events))
        .await;
    setup.team = Some(TeamSetup {
        members: Vec::new(),
        workers: Vec::new(),
        catalog: ToolCatalog::from_graph(&world.graph),
        network: evoflux_harness::NetworkAccess::Off,
        children: Arc::new(NoChildren),
        remote: vec![helper],
        remote_runner: Some(Arc::clone(&remote) as Arc<dyn RemoteAgents>),
        lineage: evoflux_harness::session::Lineage::root(2),
    });
    let h = Harness::open(
        setup,
        SessionRequest::New {
            workspace: WorkspaceRequest::Coding(vec![world.repo()]),
            graph_hash: None,
        },
    )
    .await
    .unwrap();
    (h, remote, events, provider)
}

fn report(path: &str) -> String {
    json!({
        "findings": [{"claim": "it is here", "path": path, "line": 1}],
        "needsSplit": false,
        "proposedSubtasks": []
    })
    .to_string()
}

fn agent_result(events: &[Event]) -> (String, bool) {
    events
        .iter()
        .find_map(|e| match e {
            Event::ToolEnded {
                tool,
                content,
                is_error,
                ..
            } if tool == "agent" => Some((content.clone(), *is_error)),
            _ => None,
        })
        .unwrap()
}

#[tokio::test]
async fn a_remote_answer_that_keeps_missing_its_contract_is_exhausted_after_the_repair_rounds() {
    let world = World::with_files(&[("src/lib.rs", "pub fn here() {}\n")]);
    let wrong = report("src/missing.rs");
    let (mut h, remote, events, _) = lead_with_helper(
        &world,
        ExternalCwd::Workspace,
        json!({"agent_id": "helper", "message": "Find where here() is defined"}),
        &[wrong.clone(), wrong.clone(), wrong],
    )
    .await;
    let outcome = h.turn(Some("look"), TurnOptions::default()).await.unwrap();
    assert_eq!(outcome.unmet_contracts.len(), 1);
    assert_eq!(outcome.unmet_contracts[0].child_session_id, "remote-1");
    let events = events.take();
    let (content, is_error) = agent_result(&events);
    assert!(is_error);
    assert!(
        content.starts_with("result_contract_exhausted"),
        "{content}"
    );
    let ended = events
        .iter()
        .find_map(|e| match e {
            Event::DispatchEnded {
                contract, repairs, ..
            } => Some((*contract, *repairs)),
            _ => None,
        })
        .unwrap();
    assert_eq!(ended, (Some(ContractOutcome::Exhausted), 2));
    // The task, then two repair rounds quoting the contract, on one
    // session of the agent.
    let prompts = remote.prompts.lock().unwrap().clone();
    assert_eq!(prompts.len(), 3);
    assert!(prompts[0].contains("Find where"));
    assert!(prompts[1].contains("result contract"), "{}", prompts[1]);
    assert_eq!(*remote.opened.lock().unwrap(), 1);
    // What it said reached the lead's stream as the dispatch's child events.
    assert!(events.iter().any(|e| matches!(e,
        Event::Child { call_id, event } if call_id == "c1"
            && matches!(event.as_ref(), Event::MessageDelta { .. }))));
}

#[tokio::test]
async fn a_remote_agent_that_answers_nothing_fails_the_dispatch() {
    let world = World::with_files(&[("src/lib.rs", "pub fn here() {}\n")]);
    let (mut h, remote, events, _) = lead_with_helper(
        &world,
        ExternalCwd::Workspace,
        json!({"agent_id": "helper", "message": "Find where here() is defined"}),
        &["  \n".to_owned()],
    )
    .await;
    h.turn(Some("look"), TurnOptions::default()).await.unwrap();
    let events = events.take();
    let (content, is_error) = agent_result(&events);
    assert!(
        is_error && content.contains("[acp/empty-answer]"),
        "{content}"
    );
    // No repair round is asked of an agent that said nothing, and no
    // contract outcome is claimed for it.
    assert_eq!(remote.prompts.lock().unwrap().len(), 1);
    let contract = events
        .iter()
        .find_map(|e| match e {
            Event::DispatchEnded { contract, .. } => Some(*contract),
            _ => None,
        })
        .unwrap();
    assert_eq!(contract, None);
}

#[tokio::test]
async fn a_remote_agent_runs_in_the_foreground_and_a_scratch_one_is_refused_a_change() {
    let world = World::with_files(&[("src/lib.rs", "pub fn here() {}\n")]);
    let (mut h, remote, events, _) = lead_with_helper(
        &world,
        ExternalCwd::Workspace,
        json!({"agent_id": "helper", "message": "Find where here() is", "background": true}),
        &[report("src/lib.rs")],
    )
    .await;
    h.turn(Some("look"), TurnOptions::default()).await.unwrap();
    let (content, is_error) = agent_result(&events.take());
    assert!(
        is_error && content.contains("[dispatch/remote-foreground]"),
        "{content}"
    );
    assert_eq!(*remote.opened.lock().unwrap(), 0);

    let world = World::with_files(&[("src/lib.rs", "pub fn here() {}\n")]);
    let (mut h, remote, events, _) = lead_with_helper(
        &world,
        ExternalCwd::Scratch,
        json!({"agent_id": "helper", "message": "Implement the fix: change here() in src/lib.rs to return 1"}),
        &[report("src/lib.rs")],
    )
    .await;
    h.turn(Some("fix"), TurnOptions::default()).await.unwrap();
    let (content, is_error) = agent_result(&events.take());
    assert!(
        is_error && content.contains("[dispatch/admission-refused]"),
        "{content}"
    );
    assert_eq!(*remote.opened.lock().unwrap(), 0);
}

#[test]
fn an_external_agent_named_like_a_local_one_is_left_out_with_a_diagnostic() {
    let local = {
        let world = World::new();
        let catalog = ToolCatalog::from_graph(&world.graph);
        evoflux_agents::worker::framework_specs(&catalog).unwrap()[0]
            .id
            .clone()
    };
    // Declared in the (trusted) repository's config, which the source
    // graph selects as `remote-agents/<name>` nodes.
    let table = |name: &str, kind: &str| {
        format!(
            "[agents.external.{name}]\ncommand = [\"helper-acp\"]\nresult_contract = {{ kind = \"{kind}\" }}\n"
        )
    };
    let config = [
        table(&local, "scout-report"),
        table("helper", "scout-report"),
        table("bad-contract", "code-report"),
    ]
    .concat();
    let world = World::with_files(&[(".evoflux/config.toml", &config)]);
    assert!(
        !world.graph.has_errors(),
        "{}",
        world.graph.diagnostics.render_human()
    );
    let catalog = ToolCatalog::from_graph(&world.graph);
    let workers = evoflux_agents::worker::framework_specs(&catalog).unwrap();
    let mut diags = Diagnostics::new();
    let remote = remote_agents(&world.graph, &[], &workers, &mut diags);
    assert_eq!(
        remote
            .iter()
            .map(|r| r.spec.id.as_str())
            .collect::<Vec<_>>(),
        ["helper"]
    );
    let mut codes: Vec<String> = diags.iter().map(|d| d.code.to_string()).collect();
    codes.sort();
    assert_eq!(
        codes,
        [
            "config/external-agent-contract",
            "team/agent-name-collision"
        ]
    );
}
