#![allow(clippy::unwrap_used, clippy::expect_used)]

//! The lead's view of its team: members defined as files appear in the
//! `agent` tool's enum and the roster section without a code change; a
//! member bound to another lead never does.

use crate::common;

use std::sync::Arc;

use common::{Recorder, World, redact, sorted, text};
use evoflux_agents::ToolCatalog;
use evoflux_agents::team::{compile_agent_config, load_agents};
use evoflux_core::{AppMode, Diagnostics};
use evoflux_harness::{
    ChildFactory, ChildModel, CollectEvents, Harness, HookPipeline, PipelineOptions,
    SessionRequest, TeamSetup, TurnOptions, standard_pipeline,
};
use evoflux_store::WorkspaceRequest;

/// This test never dispatches.
#[derive(Debug)]
struct NoChildren;

impl ChildFactory for NoChildren {
    fn model(
        &self,
        _agent: &evoflux_agents::team::EffectiveAgentConfig,
    ) -> Result<ChildModel, String> {
        Err("no children in this test".into())
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

#[tokio::test]
async fn members_defined_as_files_are_the_enum_and_the_roster() {
    let world = World::with_files(&[
        (
            ".evoflux/agents/researcher.md",
            "---\nrole: member\ndescription: Finds facts in the sources.\n---\nResearch.\n",
        ),
        (
            ".evoflux/agents/boss.md",
            "---\nrole: lead\ndescription: Another lead.\n---\nLead.\n",
        ),
        (
            ".evoflux/agents/bosses-helper.md",
            "---\nrole: member\nlead: boss\ndescription: Helps the boss.\n---\nHelp.\n",
        ),
    ]);
    let catalog = ToolCatalog::from_graph(&world.graph);
    let mut diags = Diagnostics::new();
    let directory = load_agents(&world.graph, AppMode::Work, &mut diags);
    let team = directory.team(None).unwrap();
    let members: Vec<_> = team
        .members
        .iter()
        .map(|n| {
            let e = directory.get(n).unwrap();
            compile_agent_config(
                e.raw.as_ref().unwrap(),
                e.source.clone(),
                &catalog,
                &mut diags,
            )
        })
        .collect();
    let pairs: Vec<(String, String)> = members
        .iter()
        .map(|m| (m.name.clone(), m.description.clone()))
        .collect();
    let provider = Recorder::new(vec![text("ok")]);
    let mut setup = world
        .setup(
            AppMode::Work,
            provider.clone(),
            Arc::new(CollectEvents::default()),
        )
        .await;
    setup.pipeline = standard_pipeline(PipelineOptions {
        roster: Some(evoflux_harness::team_roster::render(&pairs, &[])),
        ..PipelineOptions::new(AppMode::Work)
    })
    .unwrap();
    setup.team = Some(TeamSetup {
        members,
        workers: Vec::new(),
        catalog,
        network: evoflux_harness::NetworkAccess::Off,
        children: Arc::new(NoChildren),
        remote: Vec::new(),
        remote_runner: None,
        lineage: evoflux_harness::session::Lineage::root(2),
    });
    let mut h = Harness::open(
        setup,
        SessionRequest::New {
            workspace: WorkspaceRequest::Work,
            graph_hash: None,
        },
    )
    .await
    .unwrap();
    h.turn(Some("who is on the team?"), TurnOptions::default())
        .await
        .unwrap();
    let request = provider.last_request();
    let agent = request.tools.iter().find(|t| t.name == "agent").unwrap();
    let names: Vec<&str> = agent.parameters["properties"]["agent_id"]["enum"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(names.contains(&"researcher"), "{names:?}");
    assert!(!names.contains(&"bosses-helper"), "{names:?}");
    let system = match &request.messages[0] {
        evoflux_model::Message::System { content } => content.clone(),
        other => panic!("first message is not the system prompt: {other:?}"),
    };
    let roster = system
        .split("# Team\n")
        .nth(1)
        .map(|r| format!("# Team\n{}", r.split("\n\n").next().unwrap_or_default()))
        .unwrap();
    insta::assert_snapshot!(
        "team_roster",
        format!(
            "{}\n---\n{}",
            redact(&roster, &world.repo(), "[REPO]"),
            serde_json::to_string_pretty(&sorted(agent.parameters.clone())).unwrap()
        )
    );
}
