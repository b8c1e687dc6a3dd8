#![allow(clippy::unwrap_used, clippy::expect_used)]

//! Provider tools through a session: `web_search` is prepared as the
//! provider's own tool exactly when the session's provider runs one, is
//! materialized beside the function tools and never among them, and what
//! the provider found reaches the events and stays on the answer.

use crate::common;

use std::sync::Arc;

use common::{Recorder, World};
use evoflux_core::AppMode;
use evoflux_core::config::ProviderKind;
use evoflux_harness::prepared::{PROVIDER_LACKS_WEB_SEARCH, PreparedKind};
use evoflux_harness::{CollectEvents, Event, Harness, NetworkAccess, SessionRequest, TurnOptions};
use evoflux_model::scripted::{Reply, Script, ScriptedProvider, Turn};
use evoflux_model::{
    Citation, EventStream, Message, Provider, ProviderItem, ProviderToolKind, Request, WebSearch,
    WebSource,
};
use evoflux_store::WorkspaceRequest;

fn search() -> WebSearch {
    WebSearch {
        id: "ws_1".into(),
        query: Some("evoflux releases".into()),
        sources: vec![WebSource {
            url: "https://example.org/releases".into(),
            title: Some("Releases".into()),
        }],
        error: None,
    }
}

fn citation() -> Citation {
    Citation {
        url: "https://example.org/releases".into(),
        title: Some("Releases".into()),
        cited_text: None,
    }
}

/// A scripted provider that runs web searches when `searches` is set.
fn scripted(world: &World, searches: bool) -> Arc<ScriptedProvider> {
    let script = Script {
        provider_tools: if searches {
            vec![ProviderToolKind::WebSearch]
        } else {
            Vec::new()
        },
        turns: vec![Turn {
            session: None,
            expect: None,
            reply: Reply {
                text: "Version 2 is out.".into(),
                provider_items: vec![
                    ProviderItem::WebSearch(search()),
                    ProviderItem::Citation(citation()),
                ],
                ..Reply::default()
            },
        }],
        ..Script::default()
    };
    Arc::new(ScriptedProvider::new(
        "scripted",
        &world.repo().join("script.yaml"),
        script,
        Some(32_000),
    ))
}

async fn open(world: &World, searches: bool, events: Arc<CollectEvents>) -> Harness {
    open_with(world, scripted(world, searches), events).await
}

/// A coding session with network tools on, whose model is `provider`.
async fn open_with(
    world: &World,
    provider: Arc<ScriptedProvider>,
    events: Arc<CollectEvents>,
) -> Harness {
    let mut setup = world
        .setup(AppMode::Coding, Recorder::new(vec![]), events)
        .await;
    setup.provider = provider;
    setup.network = NetworkAccess::PublicOnly;
    Harness::open(
        setup,
        SessionRequest::New {
            workspace: WorkspaceRequest::Coding(vec![world.repo()]),
            graph_hash: None,
        },
    )
    .await
    .unwrap()
}

#[tokio::test]
async fn a_provider_that_searches_gets_web_search_as_its_own_tool() {
    let world = World::new();
    let events = Arc::new(CollectEvents::default());
    let mut h = open(&world, true, events.clone()).await;
    let tool = h.tools().get("web_search").expect("web_search is prepared");
    assert!(matches!(tool.kind, PreparedKind::Provider(_)));
    assert!(h.tools().unavailable.iter().all(|u| u.tool != "web_search"));

    h.turn(Some("What is new?"), TurnOptions::default())
        .await
        .unwrap();
    let seen = events.take();
    assert!(
        seen.contains(&Event::WebSearch { search: search() }),
        "{seen:#?}"
    );
    assert!(seen.contains(&Event::Citation {
        citation: citation()
    }));
    // The search and the citation stay with the answer in the transcript.
    let answer = h.messages().last().unwrap();
    assert_eq!(
        answer,
        &Message::Assistant {
            content: "Version 2 is out.".into(),
            tool_calls: Vec::new(),
            provider_items: vec![
                ProviderItem::WebSearch(search()),
                ProviderItem::Citation(citation())
            ],
        }
    );
}

#[tokio::test]
async fn a_provider_without_search_leaves_web_search_out_with_a_code() {
    let world = World::new();
    let events = Arc::new(CollectEvents::default());
    let h = open(&world, false, events.clone()).await;
    assert!(h.tools().get("web_search").is_none());
    let gap = h
        .tools()
        .unavailable
        .iter()
        .find(|u| u.tool == "web_search")
        .expect("web_search is reported");
    assert_eq!(gap.code, Some(PROVIDER_LACKS_WEB_SEARCH));
    assert!(gap.reason.contains("has no web search"), "{}", gap.reason);
    let Event::SessionStarted {
        tools,
        unavailable_tools,
        ..
    } = &events.take()[0]
    else {
        panic!("first event is session_started");
    };
    assert!(!tools.contains(&"web_search".to_owned()));
    assert!(unavailable_tools.iter().any(|u| u.tool == "web_search"));
}

/// The recorder, claiming to run web searches.
#[derive(Debug)]
struct Searching(Arc<Recorder>);

impl Provider for Searching {
    fn name(&self) -> &str {
        self.0.name()
    }
    fn kind(&self) -> ProviderKind {
        ProviderKind::Anthropic
    }
    fn context_window(&self) -> Option<u64> {
        self.0.context_window()
    }
    fn provider_tools(&self) -> &[ProviderToolKind] {
        &[ProviderToolKind::WebSearch]
    }
    fn stream(&self, request: Request) -> EventStream {
        self.0.stream(request)
    }
}

#[tokio::test]
async fn the_request_carries_web_search_apart_from_the_functions() {
    for searches in [false, true] {
        let world = World::new();
        let recorder = Recorder::new(vec![common::text("ok")]);
        let mut setup = world
            .setup(
                AppMode::Coding,
                recorder.clone(),
                Arc::new(CollectEvents::default()),
            )
            .await;
        setup.network = NetworkAccess::PublicOnly;
        if searches {
            setup.provider = Arc::new(Searching(recorder.clone()));
        }
        let mut h = Harness::open(
            setup,
            SessionRequest::New {
                workspace: WorkspaceRequest::Coding(vec![world.repo()]),
                graph_hash: None,
            },
        )
        .await
        .unwrap();
        h.turn(Some("hi"), TurnOptions::default()).await.unwrap();
        let request = recorder.last_request();
        let expected: &[ProviderToolKind] = if searches {
            &[ProviderToolKind::WebSearch]
        } else {
            &[]
        };
        assert_eq!(request.provider_tools, expected);
        // Never a function, either way.
        let functions = Recorder::tool_names(&request);
        assert!(
            !functions.contains(&"web_search".to_owned()),
            "{functions:?}"
        );
        assert!(functions.contains(&"read".to_owned()), "{functions:?}");
    }
}

#[tokio::test]
async fn a_paused_answer_goes_on_in_the_same_turn() {
    let world = World::new();
    let reply = |text: &str, stop| Turn {
        session: None,
        expect: None,
        reply: Reply {
            text: text.into(),
            stop,
            ..Reply::default()
        },
    };
    let script = Script {
        provider_tools: vec![ProviderToolKind::WebSearch],
        turns: vec![
            reply("Searching. ", Some(evoflux_model::StopReason::Paused)),
            reply("Version 2 is out.", None),
        ],
        ..Script::default()
    };
    let provider = Arc::new(ScriptedProvider::new(
        "scripted",
        &world.repo().join("script.yaml"),
        script,
        Some(32_000),
    ));
    let mut h = open_with(&world, provider, Arc::new(CollectEvents::default())).await;
    let outcome = h
        .turn(Some("What is new?"), TurnOptions::default())
        .await
        .unwrap();
    // Both calls answered one turn, with no user message between them;
    // the turn's text is the whole answer.
    assert_eq!(outcome.text, "Searching. Version 2 is out.");
    let tail: Vec<&Message> = h.messages().iter().rev().take(3).collect();
    assert_eq!(tail[0], &Message::assistant("Version 2 is out."));
    assert_eq!(tail[1], &Message::assistant("Searching. "));
    assert_eq!(tail[2], &Message::user("What is new?"));
}
