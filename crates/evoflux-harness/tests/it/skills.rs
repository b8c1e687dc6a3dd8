#![allow(clippy::unwrap_used, clippy::expect_used)]

//! Skills in the loop, end to end against a recording provider: the
//! Tier-1 catalog, assigned-skill preload, explicit `$name` activation,
//! the implicit resolver, the `skill` tool and durable activations across
//! a restart.

use crate::common;

use std::sync::Arc;

use common::{Recorder, World, call, text};
use evoflux_core::AppMode;
use evoflux_harness::skills::{ActivationRecord, ResolverPolicy, SkillRuntime};
use evoflux_harness::{
    CollectEvents, Event, Harness, PipelineOptions, SessionRequest, TurnOptions, TurnStatus,
    standard_pipeline,
};
use evoflux_model::{EventStream, Message, Provider, Request};
use evoflux_skills::resolver::{RESOLVER_SYSTEM_PROMPT, ResolutionStatus};
use evoflux_skills::selection::{Depth, skill_slots};
use evoflux_skills::{LoadOptions, OverlaySnapshot, PlaceholderDirs};
use evoflux_store::WorkspaceRequest;
use serde_json::{Value, json};

const ALPHA_BODY: &str = "# Alpha workflow\n\nALPHA-BODY-MARKER: follow these exact steps.\n1. Read `references/guide.md` only when the build fails.\n";
const BETA_BODY: &str = "BETA-BODY-MARKER: the beta steps.\n";
const OPS_BODY: &str = "OPS-BODY-MARKER: deploy carefully.\n";

fn skill_md(name: &str, description: &str, extra: &str, body: &str) -> String {
    format!("---\nname: {name}\ndescription: {description}\n{extra}---\n{body}")
}

/// A repository with three project skills: `alpha` (with resources and
/// control-plane files), `beta`, and the manual-only `ops`.
fn skill_files() -> Vec<(String, String)> {
    vec![
        (
            ".evoflux/skills/alpha/SKILL.md".into(),
            skill_md(
                "alpha",
                "Fix failing builds in Rust workspaces; use when cargo build fails.",
                "",
                ALPHA_BODY,
            ),
        ),
        (
            ".evoflux/skills/alpha/references/guide.md".into(),
            "RESOURCE-CONTENT-MARKER\n".into(),
        ),
        (
            ".evoflux/skills/alpha/agents/evoflux.yaml".into(),
            "interface:\n  display_name: Alpha\n  short_description: Build fixer\n".into(),
        ),
        (
            ".evoflux/skills/alpha/evals/trigger-cases.json".into(),
            "[{\"query\": \"EVAL-MARKER\", \"should_trigger\": true}]".into(),
        ),
        (
            ".evoflux/skills/beta/SKILL.md".into(),
            skill_md(
                "beta",
                "Write release notes from a changelog.",
                "",
                BETA_BODY,
            ),
        ),
        (
            ".evoflux/skills/ops/SKILL.md".into(),
            skill_md(
                "ops",
                "Deploy the service to production.",
                "disable-model-invocation: true\n",
                OPS_BODY,
            ),
        ),
    ]
}

fn world_with(extra: &[(&str, &str)]) -> World {
    let mut files = skill_files();
    files.extend(
        extra
            .iter()
            .map(|(a, b)| ((*a).to_owned(), (*b).to_owned())),
    );
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    World::with_files(&refs)
}

/// The recorder with a known, roomy context window so the catalog is not
/// squeezed by the tiny default of the shared test provider.
#[derive(Debug)]
struct Wide(Arc<Recorder>);

impl Provider for Wide {
    fn name(&self) -> &str {
        self.0.name()
    }
    fn kind(&self) -> evoflux_core::config::ProviderKind {
        self.0.kind()
    }
    fn context_window(&self) -> Option<u64> {
        Some(128_000)
    }
    fn stream(&self, request: Request) -> EventStream {
        self.0.stream(request)
    }
}

fn runtime(world: &World, mode: AppMode, resolver: ResolverPolicy) -> Arc<SkillRuntime> {
    let config = world.tmp.path().join("config");
    let options = LoadOptions::new(PlaceholderDirs::from_config_dir(&config));
    let overlay = OverlaySnapshot::empty(config.join("skill-settings.json"));
    let (slots, problems) = skill_slots(&world.graph, &options, &overlay, Depth::Settled);
    assert!(problems.is_empty(), "{problems:?}");
    Arc::new(SkillRuntime::new(
        &slots,
        mode,
        options.placeholders,
        resolver,
    ))
}

struct Opened {
    harness: Harness,
    runtime: Arc<SkillRuntime>,
    events: Arc<CollectEvents>,
}

struct Options<'a> {
    /// Instead of the recorder (which still counts as the test's provider).
    provider: Option<Arc<dyn Provider>>,
    assigned: &'a [&'a str],
    resolver: ResolverPolicy,
    opt_out: &'a [&'a str],
    session: Option<SessionRequest>,
    mode: AppMode,
}

impl Default for Options<'_> {
    fn default() -> Self {
        Options {
            provider: None,
            assigned: &[],
            resolver: ResolverPolicy::off(),
            opt_out: &[],
            session: None,
            mode: AppMode::Coding,
        }
    }
}

async fn open(world: &World, provider: &Arc<Recorder>, options: Options<'_>) -> Opened {
    let mode = options.mode;
    let events = Arc::new(CollectEvents::default());
    let mut setup = world.setup(mode, provider.clone(), events.clone()).await;
    setup.provider = options
        .provider
        .unwrap_or_else(|| Arc::new(Wide(provider.clone())));
    setup.agent.skills = options.assigned.iter().map(|s| (*s).to_owned()).collect();
    setup
        .agent
        .tools
        .retain(|t| !options.opt_out.contains(&t.as_str()));
    let rt = runtime(world, mode, options.resolver);
    setup.pipeline = standard_pipeline(PipelineOptions {
        skills: Some(rt.clone()),
        on_compacted: Some(rt.compaction_listener()),
        ..PipelineOptions::new(mode)
    })
    .unwrap();
    setup.skills = Some(rt.clone());
    let request = options.session.unwrap_or(SessionRequest::New {
        workspace: match mode {
            AppMode::Coding => WorkspaceRequest::Coding(vec![world.repo()]),
            AppMode::Work => WorkspaceRequest::Work,
        },
        graph_hash: None,
    });
    let harness = Harness::open(setup, request).await.unwrap();
    Opened {
        harness,
        runtime: rt,
        events,
    }
}

fn system_text(request: &Request) -> String {
    match request.messages.first() {
        Some(Message::System { content }) => content.clone(),
        other => panic!("no system message first: {other:?}"),
    }
}

/// The catalog section: from its heading to the end of the system prompt
/// (it is appended after every stable section).
fn catalog_section(request: &Request) -> String {
    let system = system_text(request);
    let at = system.find("## Skills").expect("no catalog in the prompt");
    system[at..].to_owned()
}

fn all_text(request: &Request) -> String {
    serde_json::to_string(request).unwrap()
}

fn tool_result(request: &Request, call_id: &str) -> (String, bool) {
    request
        .messages
        .iter()
        .find_map(|m| match m {
            Message::Tool {
                tool_call_id,
                content,
                is_error,
                ..
            } if tool_call_id == call_id => Some((content.clone(), *is_error)),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no result for {call_id}"))
}

fn load(id: &str, name: &str) -> common::Reply {
    call(id, "skill", json!({"action": "load", "skill_name": name}))
}

#[tokio::test]
async fn tier1_catalog_holds_metadata_and_no_body() {
    let world = world_with(&[]);
    let provider = Recorder::new(vec![text("ok")]);
    let mut o = open(&world, &provider, Options::default()).await;
    o.harness
        .turn(
            Some("the release notes need writing"),
            TurnOptions::default(),
        )
        .await
        .unwrap();
    let request = provider.last_request();
    let catalog = catalog_section(&request);
    // Implicit-eligible only (no ops), by name whatever the request ranked,
    // names and descriptions only.
    insta::assert_snapshot!(catalog);
    let system = system_text(&request);
    assert_eq!(system.matches("## Skills").count(), 1);
    for absent in [
        "ALPHA-BODY-MARKER",
        "BETA-BODY-MARKER",
        "OPS-BODY-MARKER",
        "SKILL.md",
        "RESOURCE-CONTENT-MARKER",
        "EVAL-MARKER",
    ] {
        assert!(!all_text(&request).contains(absent), "{absent} leaked");
    }
    assert!(!catalog.contains(&world.repo().display().to_string()));
    let report = o.runtime.last_catalog().unwrap();
    assert_eq!(report.included, ["alpha", "beta"]);
    assert_eq!(
        report.query_ranked.first().map(String::as_str),
        Some("beta")
    );
    assert_eq!(report.budget_bytes, 10_240);
}

#[tokio::test]
async fn assigned_skills_preload_exact_bodies_and_unassigned_stay_on_demand() {
    let world = world_with(&[]);
    let provider = Recorder::new(vec![text("ok"), text("again")]);
    let mut o = open(
        &world,
        &provider,
        Options {
            assigned: &["alpha"],
            ..Options::default()
        },
    )
    .await;
    o.harness
        .turn(Some("hello"), TurnOptions::default())
        .await
        .unwrap();
    let first = provider.last_request();
    // [system, user, assistant(configured load), tool(activation)]
    assert_eq!(first.messages.len(), 4, "{:#?}", first.messages);
    assert!(matches!(&first.messages[1], Message::User { content, .. } if content == "hello"));
    let Message::Assistant { tool_calls, .. } = &first.messages[2] else {
        panic!("no synthetic call: {:?}", first.messages[2]);
    };
    assert_eq!(tool_calls.len(), 1);
    assert!(tool_calls[0].id.starts_with("configured_"));
    assert_eq!(tool_calls[0].name, "skill");
    assert_eq!(
        tool_calls[0].arguments,
        json!({"action": "load", "skill_name": "alpha"})
    );
    let (content, is_error) = tool_result(&first, &tool_calls[0].id);
    assert!(!is_error);
    // The exact body, byte for byte, inside the canonical wrapper.
    assert!(
        content.contains(&format!("<instructions>\n{ALPHA_BODY}</instructions>")),
        "{content}"
    );
    assert!(!all_text(&first).contains("BETA-BODY-MARKER"));
    assert!(o.runtime.is_loaded("alpha"));
    assert!(!o.runtime.is_loaded("beta"));
    // Persisted like any call, with its activation record beside it.
    assert_eq!(o.harness.messages().len(), 4);
    let ended: Vec<Event> = o
        .events
        .take()
        .into_iter()
        .filter(|e| matches!(e, Event::ToolEnded { .. }))
        .collect();
    let Some(Event::ToolEnded { metadata, tool, .. }) = ended.first() else {
        panic!("no tool_ended for the preload");
    };
    assert_eq!(tool, "skill");
    let record = ActivationRecord::from_metadata(metadata.as_ref().unwrap()).unwrap();
    assert_eq!(record.skill, "alpha");
    // The preload happens once: the next turn adds no second pair.
    o.harness
        .turn(Some("more"), TurnOptions::default())
        .await
        .unwrap();
    let second = provider.last_request();
    assert_eq!(all_text(&second).matches("ALPHA-BODY-MARKER").count(), 1);
}

#[tokio::test]
async fn manual_only_skills_stay_out_of_implicit_resolution_but_load_by_dollar_name() {
    let world = world_with(&[]);
    let provider = Recorder::new(vec![
        // Turn 1: the resolver, then the main call.
        text(r#"{"skill_name": null, "confidence": 0.1, "reason": "none"}"#),
        text("ok"),
        // Turn 2: `$ops` suppresses the resolver; only the main call.
        text("deployed"),
    ]);
    let mut o = open(
        &world,
        &provider,
        Options {
            resolver: ResolverPolicy::on(),
            ..Options::default()
        },
    )
    .await;
    o.harness
        .turn(
            Some("deploy the service to production"),
            TurnOptions::default(),
        )
        .await
        .unwrap();
    let requests = provider.requests();
    let resolver_input: Value = match &requests[0].messages[1] {
        Message::User { content, .. } => serde_json::from_str(content).unwrap(),
        other => panic!("{other:?}"),
    };
    let names: Vec<&str> = resolver_input["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["alpha", "beta"], "ops is manual-only");
    assert!(!catalog_section(&requests[1]).contains("ops"));

    o.harness
        .turn(Some("$ops ship it"), TurnOptions::default())
        .await
        .unwrap();
    let requests = provider.requests();
    assert_eq!(requests.len(), 3, "no resolver call after an explicit pick");
    assert!(all_text(&requests[2]).contains("OPS-BODY-MARKER"));
    assert!(o.runtime.is_loaded("ops"));
    // The model can load it by its exact name too (the tool does not check
    // the implicit policy).
    let provider = Recorder::new(vec![load("m1", "ops"), text("ok")]);
    let mut o = open(&world, &provider, Options::default()).await;
    o.harness
        .turn(Some("go"), TurnOptions::default())
        .await
        .unwrap();
    let (content, is_error) = tool_result(&provider.last_request(), "m1");
    assert!(!is_error, "{content}");
    assert!(content.contains("OPS-BODY-MARKER"));
}

#[tokio::test]
async fn explicit_activation_lands_right_after_the_user_message() {
    let world = world_with(&[]);
    let provider = Recorder::new(vec![text("ok")]);
    let mut o = open(
        &world,
        &provider,
        Options {
            resolver: ResolverPolicy::on(),
            ..Options::default()
        },
    )
    .await;
    o.harness
        .turn(
            Some("/skill:alpha the build is red\nmore details"),
            TurnOptions::default(),
        )
        .await
        .unwrap();
    let requests = provider.requests();
    assert_eq!(
        requests.len(),
        1,
        "the explicit pick suppresses the resolver"
    );
    let m = &requests[0].messages;
    assert!(matches!(&m[1], Message::User { content, .. } if content.starts_with("/skill:alpha")));
    let Message::Assistant { tool_calls, .. } = &m[2] else {
        panic!("{:?}", m[2]);
    };
    assert!(tool_calls[0].id.starts_with("explicit_"));
    let Message::Tool {
        tool_call_id,
        content,
        is_error: false,
        ..
    } = &m[3]
    else {
        panic!("{:?}", m[3]);
    };
    assert_eq!(tool_call_id, &tool_calls[0].id);
    assert!(content.starts_with("<skill_content name=\"alpha\""));
    assert_eq!(m.len(), 4);
    // Unknown `$names` are prose, not errors.
    let provider = Recorder::new(vec![text("ok")]);
    let mut o = open(&world, &provider, Options::default()).await;
    o.harness
        .turn(Some("it costs $5 and $nothing"), TurnOptions::default())
        .await
        .unwrap();
    assert_eq!(provider.last_request().messages.len(), 2);
}

#[tokio::test]
async fn activation_advertises_resource_paths_but_loads_no_contents() {
    let world = world_with(&[]);
    let provider = Recorder::new(vec![
        load("c1", "alpha"),
        call(
            "c2",
            "skill",
            json!({"action": "read_resource", "skill_name": "alpha", "resource_path": "references/guide.md"}),
        ),
        call(
            "c3",
            "skill",
            json!({"action": "read_resource", "skill_name": "alpha", "resource_path": "agents/evoflux.yaml"}),
        ),
        call(
            "c4",
            "skill",
            json!({"action": "read_resource", "skill_name": "beta", "resource_path": "x.md"}),
        ),
        text("done"),
    ]);
    let mut o = open(&world, &provider, Options::default()).await;
    o.harness
        .turn(Some("the build fails"), TurnOptions::default())
        .await
        .unwrap();
    let last = provider.last_request();
    let (activation, _) = tool_result(&last, "c1");
    assert!(
        activation
            .contains("<skill_resources>\n- references/guide.md (24 bytes)\n</skill_resources>"),
        "{activation}"
    );
    for absent in [
        "RESOURCE-CONTENT-MARKER",
        "agents/",
        "evals/",
        "EVAL-MARKER",
    ] {
        assert!(!activation.contains(absent), "{absent} in {activation}");
    }
    let (resource, is_error) = tool_result(&last, "c2");
    assert!(!is_error);
    assert!(resource.contains("RESOURCE-CONTENT-MARKER"));
    let (control, is_error) = tool_result(&last, "c3");
    assert!(is_error);
    assert!(
        control.contains("[skill/resource-control-plane]"),
        "{control}"
    );
    let (unloaded, is_error) = tool_result(&last, "c4");
    assert!(is_error);
    assert!(unloaded.contains("[skill/not-loaded]"), "{unloaded}");
}

#[tokio::test]
async fn a_second_load_gets_the_already_loaded_receipt() {
    let world = world_with(&[]);
    let provider = Recorder::new(vec![
        load("c1", "alpha"),
        load("c2", "alpha"),
        load("c3", "nope-such"),
        load("c4", "alpah"),
        text("done"),
    ]);
    let mut o = open(&world, &provider, Options::default()).await;
    o.harness
        .turn(Some("go"), TurnOptions::default())
        .await
        .unwrap();
    let last = provider.last_request();
    assert_eq!(all_text(&last).matches("ALPHA-BODY-MARKER").count(), 1);
    let (receipt, is_error) = tool_result(&last, "c2");
    assert!(!is_error);
    assert_eq!(
        receipt,
        "Skill 'alpha' is already loaded; reuse its visible instructions."
    );
    let (missing, _) = tool_result(&last, "c3");
    assert!(missing.contains("[skill/not-found]"), "{missing}");
    let (typo, _) = tool_result(&last, "c4");
    assert!(typo.contains("Did you mean: alpha?"), "{typo}");
    // Compaction dropping the visible pair clears the marker: the next load
    // is exact again.
    assert_eq!(o.runtime.forget_calls(["c1"]), ["alpha"]);
    assert!(!o.runtime.is_loaded("alpha"));
}

#[tokio::test]
async fn batch_guard_caps_and_dedupes_skill_calls() {
    let world = world_with(&[]);
    let mut calls = [
        load("c0", "alpha"),
        load("c1", "alpha"),
        load("c2", "beta"),
        load("c3", "ops"),
        call("c4", "skill", json!({"action": "list"})),
        load("c5", "x1"),
        load("c6", "x2"),
    ];
    let batch = common::Reply {
        text: String::new(),
        calls: calls.iter_mut().flat_map(|r| r.calls.drain(..)).collect(),
    };
    let provider = Recorder::new(vec![batch, text("done")]);
    let mut o = open(&world, &provider, Options::default()).await;
    o.harness
        .turn(Some("go"), TurnOptions::default())
        .await
        .unwrap();
    let last = provider.last_request();
    let (dup, _) = tool_result(&last, "c1");
    assert!(dup.contains("Same call as `c0`"), "{dup}");
    assert!(!tool_result(&last, "c5").0.contains("batch-limit"));
    let (limited, is_error) = tool_result(&last, "c6");
    assert!(is_error);
    assert!(limited.contains("[skill/batch-limit]"), "{limited}");
}

#[tokio::test]
async fn resolver_failure_falls_back_to_the_catalog_and_sees_only_request_mode_and_metadata() {
    let world = world_with(&[("src/lib.rs", "pub fn secret_tool_output() {}\n")]);
    let provider = Recorder::new(vec![
        // Turn 1: resolver says nothing useful; the model reads a file.
        text(r#"{"skill_name": null, "confidence": 0.0, "reason": "chat"}"#),
        call("r1", "read", json!({"path": "src/lib.rs"})),
        text("read it"),
        // Turn 2: the resolver answers garbage: non-fatal.
        text("I think you want the alpha skill!"),
        text("fine"),
    ]);
    let mut o = open(
        &world,
        &provider,
        Options {
            resolver: ResolverPolicy::on(),
            ..Options::default()
        },
    )
    .await;
    o.harness
        .turn(Some("look at lib.rs"), TurnOptions::default())
        .await
        .unwrap();
    let out = o
        .harness
        .turn(
            Some("now fix the failing cargo build"),
            TurnOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(out.status, TurnStatus::Completed);
    assert_eq!(
        o.runtime.last_resolution().unwrap().status,
        ResolutionStatus::Invalid
    );
    let requests = provider.requests();
    assert_eq!(requests.len(), 5);
    let resolver = &requests[3];
    assert!(resolver.tools.is_empty(), "the resolver gets no tools");
    assert_eq!(resolver.messages.len(), 2);
    assert_eq!(
        resolver.messages[0],
        Message::system(RESOLVER_SYSTEM_PROMPT)
    );
    let Message::User { content, .. } = &resolver.messages[1] else {
        panic!("{:?}", resolver.messages[1]);
    };
    let input: Value = serde_json::from_str(content).unwrap();
    assert_eq!(
        input,
        json!({
            "mode": "coding",
            "request": "now fix the failing cargo build",
            "skills": [
                {"name": "alpha", "description": "Fix failing builds in Rust workspaces; use when cargo build fails."},
                {"name": "beta", "description": "Write release notes from a changelog."}
            ]
        })
    );
    let sent = all_text(resolver);
    for absent in ["secret_tool_output", "look at lib.rs", "ALPHA-BODY-MARKER"] {
        assert!(!sent.contains(absent), "{absent} reached the resolver");
    }
    // The main call still has the catalog and no activation.
    let main = &requests[4];
    assert!(catalog_section(main).contains("- alpha: Fix failing builds"));
    assert!(!all_text(main).contains("ALPHA-BODY-MARKER"));
    assert!(!o.runtime.is_loaded("alpha"));
}

#[tokio::test]
async fn a_confident_resolver_decision_injects_a_resolved_pair() {
    let world = world_with(&[]);
    let provider = Recorder::new(vec![
        text(r#"{"skill_name": "alpha", "confidence": 0.93, "reason": "build failure"}"#),
        text("on it"),
    ]);
    let mut o = open(
        &world,
        &provider,
        Options {
            resolver: ResolverPolicy::on(),
            ..Options::default()
        },
    )
    .await;
    o.harness
        .turn(Some("cargo build fails on main"), TurnOptions::default())
        .await
        .unwrap();
    let main = provider.last_request();
    let Message::Assistant { tool_calls, .. } = &main.messages[2] else {
        panic!("{:?}", main.messages[2]);
    };
    assert!(tool_calls[0].id.starts_with("resolved_"));
    assert!(all_text(&main).contains("ALPHA-BODY-MARKER"));
    assert_eq!(
        o.runtime.last_resolution().unwrap().status,
        ResolutionStatus::Selected
    );
}

#[tokio::test]
async fn loading_a_skill_activates_its_declared_tool_dependencies_atomically() {
    let deps = "interface:\n  display_name: Gamma\n  short_description: Search helper\ndependencies:\n  tools:\n    - type: builtin\n      value: grep\n";
    let broken = "dependencies:\n  tools:\n    - type: builtin\n      value: grep\n    - type: builtin\n      value: no_such_tool\n";
    let gamma = skill_md("gamma", "Search the code base.", "", "GAMMA-BODY\n");
    let delta = skill_md("delta", "Needs a tool nobody has.", "", "DELTA-BODY\n");
    let world = world_with(&[
        (".evoflux/skills/gamma/SKILL.md", &gamma),
        (".evoflux/skills/gamma/agents/evoflux.yaml", deps),
        (".evoflux/skills/delta/SKILL.md", &delta),
        (".evoflux/skills/delta/agents/evoflux.yaml", broken),
    ]);
    let provider = Recorder::new(vec![
        load("d1", "delta"),
        load("g1", "gamma"),
        call("g2", "grep", json!({"pattern": "x"})),
        text("done"),
    ]);
    let mut o = open(
        &world,
        &provider,
        Options {
            opt_out: &["grep"],
            ..Options::default()
        },
    )
    .await;
    o.harness
        .turn(Some("search"), TurnOptions::default())
        .await
        .unwrap();
    let requests = provider.requests();
    let names = |r: &Request| Recorder::tool_names(r);
    assert!(!names(&requests[0]).contains(&"grep".to_owned()));
    // delta fails whole: nothing loaded, grep not turned on.
    let (failed, is_error) = tool_result(&requests[1], "d1");
    assert!(is_error);
    assert!(failed.contains("no_such_tool"), "{failed}");
    assert!(failed.contains("[skill/dependency-missing]"), "{failed}");
    assert!(!o.runtime.is_loaded("delta"));
    assert!(!names(&requests[1]).contains(&"grep".to_owned()));
    // gamma turns grep on for the session.
    assert!(names(&requests[2]).contains(&"grep".to_owned()));
    let (grep, is_error) = tool_result(&requests[3], "g2");
    assert!(!is_error, "{grep}");
    let record = o.runtime.loaded();
    assert_eq!(record["gamma"].required_tools, ["grep"]);
}

#[tokio::test]
async fn durable_activations_survive_a_restart() {
    let deps = "dependencies:\n  tools:\n    - type: builtin\n      value: grep\n";
    let gamma = skill_md("gamma", "Search the code base.", "", "GAMMA-BODY\n");
    let world = world_with(&[
        (".evoflux/skills/gamma/SKILL.md", &gamma),
        (".evoflux/skills/gamma/agents/evoflux.yaml", deps),
    ]);
    let provider = Recorder::new(vec![load("g1", "gamma"), text("loaded")]);
    let o = {
        let mut o = open(
            &world,
            &provider,
            Options {
                opt_out: &["grep"],
                assigned: &["beta"],
                ..Options::default()
            },
        )
        .await;
        o.harness
            .turn(Some("search"), TurnOptions::default())
            .await
            .unwrap();
        o
    };
    let id = o.harness.session().id;
    drop(o);

    // A new process: new runtime, same store.
    let provider = Recorder::new(vec![load("g2", "gamma"), text("ok")]);
    let o = open(
        &world,
        &provider,
        Options {
            opt_out: &["grep"],
            assigned: &["beta"],
            session: Some(SessionRequest::Resume {
                id,
                mode: None,
                workspace: None,
            }),
            ..Options::default()
        },
    )
    .await;
    let mut o = o;
    assert!(o.runtime.is_loaded("gamma"));
    assert!(o.runtime.is_loaded("beta"), "the preload is durable too");
    assert!(o.runtime.rehydration_problems().is_empty());
    o.harness
        .turn(Some("again"), TurnOptions::default())
        .await
        .unwrap();
    let first = &provider.requests()[0];
    // The contract is back: grep is offered without loading again, and the
    // preload is not repeated.
    assert!(Recorder::tool_names(first).contains(&"grep".to_owned()));
    assert_eq!(all_text(first).matches("BETA-BODY-MARKER").count(), 1);
    let (receipt, _) = tool_result(&provider.last_request(), "g2");
    assert!(receipt.contains("already loaded"), "{receipt}");
}

#[tokio::test]
async fn prose_is_never_turned_into_a_repository_query() {
    let world = world_with(&[("src/config.rs", "pub fn parse_config() {}\n")]);
    let provider = Recorder::new(vec![
        text(r#"{"skill_name": null, "confidence": 0.2, "reason": "lookup"}"#),
        text("It is in src/config.rs."),
    ]);
    let mut o = open(
        &world,
        &provider,
        Options {
            resolver: ResolverPolicy::on(),
            ..Options::default()
        },
    )
    .await;
    let prose = "where is parse_config defined and who calls it?";
    o.harness
        .turn(Some(prose), TurnOptions::default())
        .await
        .unwrap();
    // No stage made a call of its own: the transcript is the user's message
    // and the model's answer, and the only side request is the resolver's.
    assert_eq!(o.harness.messages().len(), 2);
    let requests = provider.requests();
    assert_eq!(requests.len(), 2);
    let main = &requests[1];
    assert_eq!(main.messages.len(), 2);
    assert!(!all_text(main).contains("pub fn parse_config"));
    let catalog = catalog_section(main);
    assert!(catalog.contains("Never turn the request into a `code_context` query"));
    assert!(
        o.events
            .take()
            .iter()
            .all(|e| !matches!(e, Event::ToolStarted { .. })),
        "no tool ran"
    );
}

#[tokio::test]
async fn an_explicit_activation_offers_its_tool_dependencies_in_the_same_call() {
    let deps = "dependencies:\n  tools:\n    - type: builtin\n      value: grep\n";
    let gamma = skill_md("gamma", "Search the code base.", "", "GAMMA-BODY\n");
    let world = world_with(&[
        (".evoflux/skills/gamma/SKILL.md", &gamma),
        (".evoflux/skills/gamma/agents/evoflux.yaml", deps),
        ("src/a.rs", "needle\n"),
    ]);
    let provider = Recorder::new(vec![
        call("g1", "grep", json!({"pattern": "needle"})),
        text("found"),
    ]);
    let mut o = open(
        &world,
        &provider,
        Options {
            opt_out: &["grep"],
            ..Options::default()
        },
    )
    .await;
    o.harness
        .turn(Some("$gamma find the needle"), TurnOptions::default())
        .await
        .unwrap();
    let requests = provider.requests();
    assert!(Recorder::tool_names(&requests[0]).contains(&"grep".to_owned()));
    let (found, is_error) = tool_result(&requests[1], "g1");
    assert!(!is_error, "{found}");
    assert!(found.contains("src/a.rs"), "{found}");
}

#[tokio::test]
async fn work_cannot_load_a_coding_only_bundled_skill_but_loads_its_own() {
    use evoflux_graph::BuiltinRegistry;
    use evoflux_graph::discover::{RootOptions, standard_roots};
    let base = world_with(&[]);
    let opts = RootOptions {
        admin_dir: Some(base.tmp.path().join("admin")),
        user_config_dir: Some(base.tmp.path().join("config")),
        home: None,
        workspaces: vec![base.repo()],
        trusted: vec![base.repo()],
        plugins: vec![],
        foreign_mcp: Vec::new(),
    };
    let graph = evoflux_graph::compile(
        &[
            BuiltinRegistry::framework(),
            evoflux_skills::bundled::registry(),
        ],
        &standard_roots(&opts),
    )
    .unwrap();
    let world = World {
        tmp: base.tmp,
        graph,
    };
    let provider = Recorder::new(vec![
        load("c1", "debugging"),
        load("c2", "research"),
        text("done"),
    ]);
    let mut o = open(
        &world,
        &provider,
        Options {
            mode: AppMode::Work,
            ..Options::default()
        },
    )
    .await;
    o.harness
        .turn(Some("go"), TurnOptions::default())
        .await
        .unwrap();
    let last = provider.last_request();
    let (refused, is_error) = tool_result(&last, "c1");
    assert!(is_error);
    assert_eq!(
        refused,
        "Skill 'debugging' is not available in work mode. Available modes: coding. [skill/not-in-mode]"
    );
    let (loaded, is_error) = tool_result(&last, "c2");
    assert!(!is_error, "{loaded}");
    assert!(loaded.starts_with("<skill_content name=\"research\""));
    let catalog = catalog_section(&provider.requests()[0]);
    assert!(catalog.contains("- research:"));
    assert!(!catalog.contains("- debugging:"));
}

/// A provider for speculative resolution. The resolver's answer waits until
/// the turn's main request has been sent (up to 5 s, then it answers and
/// notes that it was not), so a resolver that holds the main call up is
/// caught without hanging. Main calls answer from a queue; one marked
/// `stall` sends its text and then nothing, until it is dropped.
#[derive(Debug)]
struct Gated {
    verdict: String,
    main: std::sync::Mutex<std::collections::VecDeque<(&'static str, bool)>>,
    main_sent: tokio::sync::watch::Sender<bool>,
    requests: std::sync::Mutex<Vec<Request>>,
    /// Whether the main request was on the wire before the resolver answered.
    overlapped: Arc<std::sync::atomic::AtomicBool>,
    /// Whether the stalled reply was dropped (its request cancelled).
    stalled_dropped: Arc<std::sync::atomic::AtomicBool>,
}

impl Gated {
    fn new(verdict: &str, main: &[(&'static str, bool)]) -> Arc<Gated> {
        Arc::new(Gated {
            verdict: verdict.to_owned(),
            main: std::sync::Mutex::new(main.iter().copied().collect()),
            main_sent: tokio::sync::watch::channel(false).0,
            requests: std::sync::Mutex::default(),
            overlapped: Arc::default(),
            stalled_dropped: Arc::default(),
        })
    }
}

struct DropFlag(Arc<std::sync::atomic::AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Provider for Gated {
    fn name(&self) -> &str {
        "gated"
    }
    fn kind(&self) -> evoflux_core::config::ProviderKind {
        evoflux_core::config::ProviderKind::Openai
    }
    fn context_window(&self) -> Option<u64> {
        Some(128_000)
    }
    fn stream(&self, request: Request) -> EventStream {
        use evoflux_model::StreamEvent;
        use futures_util::StreamExt;
        let resolver = request.tools.is_empty()
            && request.messages.first() == Some(&Message::system(RESOLVER_SYSTEM_PROMPT));
        self.requests.lock().unwrap().push(request);
        let usage = Ok(StreamEvent::Usage {
            usage: evoflux_model::Usage {
                input_tokens: 100,
                output_tokens: 10,
                cached_input_tokens: 0,
                cache_write_input_tokens: 0,
                web_search_requests: 0,
            },
        });
        if resolver {
            let mut sent = self.main_sent.subscribe();
            let overlapped = self.overlapped.clone();
            let verdict = self.verdict.clone();
            return Box::pin(
                futures_util::stream::once(async move {
                    let waited = tokio::time::timeout(
                        std::time::Duration::from_secs(5),
                        sent.wait_for(|s| *s),
                    )
                    .await;
                    overlapped.store(
                        matches!(waited, Ok(Ok(_))),
                        std::sync::atomic::Ordering::SeqCst,
                    );
                })
                .flat_map(move |()| {
                    futures_util::stream::iter([
                        Ok(StreamEvent::TextDelta {
                            text: verdict.clone(),
                        }),
                        usage.clone(),
                        Ok(StreamEvent::Done),
                    ])
                }),
            );
        }
        let (text, stall) = self
            .main
            .lock()
            .unwrap()
            .pop_front()
            .expect("more main calls than the test scripted");
        let main_sent = self.main_sent.clone();
        let first = futures_util::stream::once(async move {
            main_sent.send_replace(true);
            Ok(StreamEvent::TextDelta { text: text.into() })
        });
        if stall {
            let flag = DropFlag(self.stalled_dropped.clone());
            return Box::pin(first.chain(futures_util::stream::pending()).map(move |e| {
                let _ = &flag;
                e
            }));
        }
        Box::pin(first.chain(futures_util::stream::iter([
            usage,
            Ok(StreamEvent::Stop {
                reason: evoflux_model::StopReason::EndTurn,
            }),
            Ok(StreamEvent::Done),
        ])))
    }
}

async fn open_speculative(world: &World, gated: &Arc<Gated>) -> Opened {
    open(
        world,
        &Recorder::new(vec![]),
        Options {
            provider: Some(gated.clone()),
            resolver: ResolverPolicy::speculative(),
            ..Options::default()
        },
    )
    .await
}

fn deltas(events: &[Event]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            Event::MessageDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn speculative_no_skill_sends_the_main_call_before_the_resolver_answers() {
    let world = world_with(&[]);
    let gated = Gated::new(
        r#"{"skill_name": null, "confidence": 0.1, "reason": "chat"}"#,
        &[("hello there", false)],
    );
    let mut o = open_speculative(&world, &gated).await;
    let out = o
        .harness
        .turn(Some("say hello"), TurnOptions::default())
        .await
        .unwrap();
    assert_eq!(out.status, TurnStatus::Completed);
    assert_eq!(out.text, "hello there");
    assert!(
        gated.overlapped.load(std::sync::atomic::Ordering::SeqCst),
        "the main request waited for the resolver"
    );
    let requests = gated.requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 2, "one resolver call, one main call");
    assert!(!all_text(&requests[1]).contains("ALPHA-BODY-MARKER"));
    assert_eq!(
        o.runtime.last_resolution().unwrap().status,
        ResolutionStatus::None
    );
    // The held reply reached the user once, and both calls were counted.
    assert_eq!(deltas(&o.events.take()), "hello there");
    let usage = o.harness.usage().await.unwrap();
    assert_eq!(usage.requests, 2);
}

#[tokio::test]
async fn speculative_selection_discards_the_held_reply_without_a_trace() {
    let world = world_with(&[]);
    let gated = Gated::new(
        r#"{"skill_name": "alpha", "confidence": 0.93, "reason": "build failure"}"#,
        &[("DISCARDED-REPLY", true), ("fixing it with alpha", false)],
    );
    let mut o = open_speculative(&world, &gated).await;
    let out = o
        .harness
        .turn(Some("cargo build fails on main"), TurnOptions::default())
        .await
        .unwrap();
    assert_eq!(out.text, "fixing it with alpha");
    assert!(gated.overlapped.load(std::sync::atomic::Ordering::SeqCst));
    assert!(
        gated
            .stalled_dropped
            .load(std::sync::atomic::Ordering::SeqCst),
        "the held call was not cancelled"
    );
    let requests = gated.requests.lock().unwrap().clone();
    assert_eq!(
        requests.len(),
        3,
        "resolver, held call, call with the skill"
    );
    assert!(!all_text(&requests[1]).contains("ALPHA-BODY-MARKER"));
    let again = &requests[2];
    assert!(all_text(again).contains("ALPHA-BODY-MARKER"));
    let Message::Assistant { tool_calls, .. } = &again.messages[2] else {
        panic!("{:?}", again.messages[2]);
    };
    assert!(tool_calls[0].id.starts_with("resolved_"));
    // What the user saw and what the session keeps hold no trace of it.
    let seen = o.events.take();
    assert_eq!(deltas(&seen), "fixing it with alpha");
    let events = serde_json::to_string(&seen).unwrap();
    assert!(!events.contains("DISCARDED-REPLY"));
    let kept = serde_json::to_string(o.harness.messages()).unwrap();
    assert!(!kept.contains("DISCARDED-REPLY"));
    assert!(kept.contains("ALPHA-BODY-MARKER"));
    assert_eq!(
        o.runtime.last_resolution().unwrap().status,
        ResolutionStatus::Selected
    );
}

#[tokio::test]
async fn the_prompt_prefix_is_byte_stable_across_turns_with_different_requests() {
    // Prompt caches match on the prefix: tools, then the system prompt,
    // then the conversation. Anything in the first two that moves with the
    // request (the catalog's order, a counter, a time) costs the cache the
    // whole conversation after it.
    let world = world_with(&[]);
    let provider = Recorder::new(vec![text("one"), text("two"), text("three")]);
    let mut o = open(&world, &provider, Options::default()).await;
    for message in [
        "the release notes need writing",
        "cargo build fails on main",
        "hello",
    ] {
        o.harness
            .turn(Some(message), TurnOptions::default())
            .await
            .unwrap();
    }
    let requests = provider.requests();
    assert_eq!(requests.len(), 3);
    for later in &requests[1..] {
        assert_eq!(system_text(later), system_text(&requests[0]));
        assert_eq!(
            serde_json::to_string(&later.tools).unwrap(),
            serde_json::to_string(&requests[0].tools).unwrap()
        );
        // The conversation so far is sent again as it was.
        assert_eq!(later.messages[..2], requests[0].messages[..2]);
    }
    assert!(catalog_section(&requests[0]).contains("- alpha:"));
}

#[tokio::test]
async fn the_system_prompt_and_tools_are_byte_identical_across_every_call_of_a_session() {
    // Every call of a session whose sources do not change, over turns with
    // different requests, a skill loaded, a nested instruction file found
    // by a read and tool results of every kind: the system prompt and the
    // tool list — the start of every request's cached prefix — are the
    // same bytes. The nested file reaches the model in the read's result.
    let world = world_with(&[
        ("AGENTS.md", "ROOT-RULES: keep it simple.\n"),
        ("docs/AGENTS.md", "NESTED-RULES: wrap at 80.\n"),
        ("docs/guide.md", "# Guide\n"),
    ]);
    let provider = Recorder::new(vec![
        call("r1", "read", json!({"path": "docs/guide.md"})),
        call("l1", "ls", json!({"path": "."})),
        text("one"),
        load("s1", "alpha"),
        call("g1", "grep", json!({"pattern": "Guide"})),
        text("two"),
        text("three"),
    ]);
    let mut o = open(&world, &provider, Options::default()).await;
    for message in [
        "the release notes need writing",
        "cargo build fails on main",
        "hello",
    ] {
        o.harness
            .turn(Some(message), TurnOptions::default())
            .await
            .unwrap();
    }
    let requests = provider.requests();
    assert_eq!(requests.len(), 7, "every scripted reply was asked for");
    let first_system = system_text(&requests[0]);
    let first_tools = serde_json::to_string(&requests[0].tools).unwrap();
    assert!(first_system.contains("ROOT-RULES"));
    for (i, r) in requests.iter().enumerate() {
        assert_eq!(system_text(r), first_system, "call {i}: system prompt");
        assert_eq!(
            serde_json::to_string(&r.tools).unwrap(),
            first_tools,
            "call {i}: tools"
        );
        assert!(!system_text(r).contains("NESTED-RULES"), "call {i}");
    }
    let (read, _) = tool_result(&requests[1], "r1");
    assert!(read.contains("NESTED-RULES"), "{read}");
    // Once, where it applied, in every later request.
    for r in &requests[1..] {
        assert_eq!(all_text(r).matches("NESTED-RULES").count(), 1);
    }
}
