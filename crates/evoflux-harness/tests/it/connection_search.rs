#![allow(clippy::unwrap_used, clippy::expect_used)]

//! Deferred MCP tools end to end: a real MCP server (the rmcp test server
//! over Streamable HTTP on loopback) with 300 extra tools, a session whose
//! agent is granted it, and the exact requests the model is sent.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::{Recorder, World, call, text};
use evoflux_core::AppMode;
use evoflux_graph::tool::builtin::connection_search as limits;
use evoflux_harness::tools::connection_search::BUILTIN_OWNER;
use evoflux_harness::{
    CollectEvents, Event, Harness, NetworkAccess, RunSetup, SessionRequest, TurnOptions,
};
use evoflux_mcp::testserver::{TestHttpServer, TestServerOptions, serve_http};
use evoflux_mcp::{ManagerOptions, McpRuntime};
use evoflux_model::{Message, Request};
use evoflux_store::{ConnectionTool, WorkspaceRequest};
use serde_json::{Value, json};

const ECHO: &str = "mcp__big__echo";

async fn server(filler_tools: usize) -> TestHttpServer {
    serve_http(
        TestServerOptions {
            filler_tools,
            ..TestServerOptions::default()
        },
        0,
    )
    .await
    .unwrap()
}

/// A repository whose `mcp.json` names the server `big`.
fn world(server: &TestHttpServer) -> World {
    let mcp = json!({"mcpServers": {"big": {"type": "http", "url": server.url()}}});
    World::with_files(&[(".evoflux/mcp.json", &mcp.to_string())])
}

fn runtime(world: &World) -> McpRuntime {
    McpRuntime::new(&world.graph, None, ManagerOptions::default())
        .unwrap()
        .0
}

/// Opens a session granted `big` (with `tools`, the agent's own list, when
/// given) and waits for the server to be ready.
async fn open(
    world: &World,
    rt: &McpRuntime,
    provider: Arc<Recorder>,
    events: Arc<CollectEvents>,
    request: SessionRequest,
    tools: Option<Vec<String>>,
) -> Harness {
    open_with(world, rt, provider, events, request, |setup| {
        if let Some(tools) = tools {
            setup.agent.tools = tools;
        }
    })
    .await
}

/// [`open`], with `configure` applied to the session's setup first.
async fn open_with(
    world: &World,
    rt: &McpRuntime,
    provider: Arc<Recorder>,
    events: Arc<CollectEvents>,
    request: SessionRequest,
    configure: impl FnOnce(&mut RunSetup),
) -> Harness {
    let mut setup = world.setup(AppMode::Work, provider, events).await;
    setup.agent.mcp = vec!["big".into()];
    setup.mcp = Some(rt.clone());
    configure(&mut setup);
    let h = Harness::open(setup, request).await.unwrap();
    rt.settle(Duration::from_secs(20)).await;
    h
}

/// Lets the session run `browser` (the Work lead's): a Chromium path (the
/// harness's hook for it, never started here: these tests only look at
/// what is offered) and a network for it to reach.
fn with_browser(world: &World) -> impl FnOnce(&mut RunSetup) {
    let chromium = world.data().join("chromium");
    move |setup| {
        setup.chromium = Some(chromium);
        setup.network = NetworkAccess::PublicOnly;
    }
}

const BROWSER: &str = "browser";

fn work() -> SessionRequest {
    SessionRequest::New {
        workspace: WorkspaceRequest::Work,
        graph_hash: None,
    }
}

fn names(request: &Request) -> Vec<String> {
    Recorder::tool_names(request)
}

fn tool_bytes(request: &Request) -> usize {
    serde_json::to_string(&request.tools).unwrap().len()
}

fn results(h: &Harness) -> Vec<(String, bool)> {
    h.messages()
        .iter()
        .filter_map(|m| match m {
            Message::Tool {
                content, is_error, ..
            } => Some((content.clone(), *is_error)),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_hundred_tools_wait_for_search_and_activation_survives_resume() {
    let srv = server(300).await;
    let world = world(&srv);
    let rt = runtime(&world);
    let provider = Recorder::new(vec![
        // Called before it is turned on.
        call("c1", ECHO, json!({"message": "hi"})),
        call("c2", "connection_search", json!({"query": "echo message"})),
        call("c3", "connection_search", json!({"activate": [ECHO]})),
        call("c4", ECHO, json!({"message": "hi"})),
        text("Done."),
    ]);
    let events = Arc::new(CollectEvents::default());
    let mut h = open(&world, &rt, provider.clone(), events.clone(), work(), None).await;
    h.turn(
        Some("Say hi through the echo tool."),
        TurnOptions::default(),
    )
    .await
    .unwrap();
    let requests = provider.requests();
    assert_eq!(requests.len(), 5);

    // The first request carries none of the server's tools, only the
    // search tool, whose description names the server.
    let first = names(&requests[0]);
    assert!(!first.iter().any(|n| n.starts_with("mcp__")), "{first:?}");
    let search = requests[0]
        .tools
        .iter()
        .find(|t| t.name == "connection_search")
        .expect("connection_search is offered");
    assert!(
        search.description.contains("`big` ("),
        "{}",
        search.description
    );
    assert!(
        tool_bytes(&requests[0]) < limits::DEFER_OVER_BYTES,
        "{} bytes",
        tool_bytes(&requests[0])
    );

    let r = results(&h);
    // A held-back tool says how to turn it on.
    assert!(r[0].1 && r[0].0.contains("connection_search"), "{:?}", r[0]);
    // The search finds it first, not yet active.
    let found: Value = serde_json::from_str(&r[1].0).unwrap();
    assert!(!r[1].1);
    assert_eq!(found["matches"][0]["name"], ECHO);
    assert_eq!(found["matches"][0]["active"], false);
    assert!(found["searched"].as_u64().unwrap() > 300);
    // Activation, then the call runs on the real server.
    let activated: Value = serde_json::from_str(&r[2].0).unwrap();
    assert_eq!(activated["activated"], json!([ECHO]));
    assert_eq!(r[3], ("Echo: hi".to_owned(), false));
    // From the step after activation on, exactly that tool joins.
    let fourth = names(&requests[3]);
    assert!(fourth.contains(&ECHO.to_owned()), "{fourth:?}");
    assert!(!fourth.iter().any(|n| n.starts_with("mcp__big__filler")));
    assert!(!names(&requests[2]).contains(&ECHO.to_owned()));
    // Activation is an event, and one durable record.
    let activations: Vec<Vec<String>> = events
        .take()
        .into_iter()
        .filter_map(|e| match e {
            Event::ToolsActivated { tools } => Some(tools),
            _ => None,
        })
        .collect();
    assert_eq!(activations, [vec![ECHO.to_owned()]]);
    let id = h.session().id;
    let store = evoflux_store::Store::open(world.data()).await.unwrap();
    assert_eq!(
        store.connection_tools(id).await.unwrap(),
        [ConnectionTool {
            owner: "global".into(),
            server: "big".into(),
            tool: "echo".into(),
        }]
    );
    drop(h);

    // Resumed, the session still has the activated tool and nothing else.
    let again = Recorder::new(vec![
        call("c5", ECHO, json!({"message": "back"})),
        text("ok"),
    ]);
    let mut h = open(
        &world,
        &rt,
        again.clone(),
        Arc::new(CollectEvents::default()),
        SessionRequest::Resume {
            id,
            mode: None,
            workspace: None,
        },
        None,
    )
    .await;
    h.turn(Some("Again."), TurnOptions::default())
        .await
        .unwrap();
    let resumed = names(&again.requests()[0]);
    assert!(resumed.contains(&ECHO.to_owned()), "{resumed:?}");
    assert!(resumed.contains(&"connection_search".to_owned()));
    assert_eq!(
        resumed.iter().filter(|n| n.starts_with("mcp__")).count(),
        1,
        "{resumed:?}"
    );
    assert_eq!(
        results(&h).last().unwrap(),
        &("Echo: back".to_owned(), false)
    );
    rt.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_small_server_is_sent_directly_and_bad_searches_are_explained() {
    let srv = server(0).await;
    let world = world(&srv);
    let rt = runtime(&world);
    let provider = Recorder::new(vec![text("Done.")]);
    let mut h = open(
        &world,
        &rt,
        provider.clone(),
        Arc::new(CollectEvents::default()),
        work(),
        None,
    )
    .await;
    h.turn(Some("hi"), TurnOptions::default()).await.unwrap();
    let first = names(&provider.last_request());
    assert!(first.contains(&ECHO.to_owned()), "{first:?}");
    assert!(
        !first.contains(&"connection_search".to_owned()),
        "{first:?}"
    );
    rt.shutdown().await;

    // Over the budget: unknown names activate nothing and suggest.
    let srv = server(300).await;
    let world = self::world(&srv);
    let rt = runtime(&world);
    let provider = Recorder::new(vec![
        call(
            "c1",
            "connection_search",
            json!({"activate": ["mcp__big__ech"]}),
        ),
        call(
            "c2",
            "connection_search",
            json!({"query": "echo", "server": "nope"}),
        ),
        call("c3", "connection_search", json!({})),
        text("Done."),
    ]);
    let mut h = open(
        &world,
        &rt,
        provider.clone(),
        Arc::new(CollectEvents::default()),
        work(),
        None,
    )
    .await;
    h.turn(Some("hi"), TurnOptions::default()).await.unwrap();
    let r = results(&h);
    assert!(
        r[0].1 && r[0].0.contains("`mcp__big__ech`") && r[0].0.contains(ECHO),
        "{:?}",
        r[0]
    );
    assert!(
        r[1].1 && r[1].0.contains("`nope`") && r[1].0.contains("big"),
        "{:?}",
        r[1]
    );
    assert!(r[2].1 && r[2].0.contains("`query`"), "{:?}", r[2]);
    let store = evoflux_store::Store::open(world.data()).await.unwrap();
    assert!(
        store
            .connection_tools(h.session().id)
            .await
            .unwrap()
            .is_empty()
    );
    rt.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_without_connection_search_gets_every_tool() {
    let srv = server(300).await;
    let world = world(&srv);
    let rt = runtime(&world);
    let provider = Recorder::new(vec![text("Done.")]);
    let tools: Vec<String> = world
        .lead(AppMode::Work)
        .tools
        .into_iter()
        .filter(|t| t != "connection_search")
        .collect();
    let mut h = open(
        &world,
        &rt,
        provider.clone(),
        Arc::new(CollectEvents::default()),
        work(),
        Some(tools),
    )
    .await;
    h.turn(Some("hi"), TurnOptions::default()).await.unwrap();
    let request = provider.last_request();
    let mcp = names(&request)
        .iter()
        .filter(|n| n.starts_with("mcp__"))
        .count();
    assert!(mcp > 300, "{mcp}");
    assert!(tool_bytes(&request) > limits::DEFER_OVER_BYTES);
    rt.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_catalog_holds_the_browser_back_until_search_activates_it() {
    let srv = server(300).await;
    let world = world(&srv);
    let rt = runtime(&world);
    let provider = Recorder::new(vec![
        // Called before it is turned on.
        call("c1", BROWSER, json!({"action": "read"})),
        call("c2", "connection_search", json!({"query": "browser"})),
        call(
            "c3",
            "connection_search",
            json!({"query": "click web page screenshot"}),
        ),
        call("c4", "connection_search", json!({"activate": [BROWSER]})),
        text("Done."),
    ]);
    let events = Arc::new(CollectEvents::default());
    let mut h = open_with(
        &world,
        &rt,
        provider.clone(),
        events.clone(),
        work(),
        with_browser(&world),
    )
    .await;
    h.turn(Some("Look at a page."), TurnOptions::default())
        .await
        .unwrap();
    let requests = provider.requests();
    assert_eq!(requests.len(), 5);

    // The first request has neither the server's tools nor the browser;
    // the search tool names both.
    let first = names(&requests[0]);
    assert!(!first.contains(&BROWSER.to_owned()), "{first:?}");
    assert!(!first.iter().any(|n| n.starts_with("mcp__")), "{first:?}");
    let search = requests[0]
        .tools
        .iter()
        .find(|t| t.name == "connection_search")
        .expect("connection_search is offered");
    assert!(
        search.description.contains("`big` (") && search.description.contains("`browser`"),
        "{}",
        search.description
    );

    let r = results(&h);
    // A call of the held-back browser gets the held-back refusal.
    assert!(
        r[0].1 && r[0].0.contains("not turned on yet") && r[0].0.contains("connection_search"),
        "{:?}",
        r[0]
    );
    // A search finds it, first, not yet active, with no server.
    let found: Value = serde_json::from_str(&r[1].0).unwrap();
    assert!(!r[1].1);
    assert_eq!(found["matches"][0]["name"], BROWSER);
    assert_eq!(found["matches"][0]["active"], false);
    assert!(found["matches"][0].get("server").is_none(), "{found}");
    // What it does finds it too.
    let found: Value = serde_json::from_str(&r[2].0).unwrap();
    assert_eq!(found["matches"][0]["name"], BROWSER, "{found}");
    // Activation turns it on from the next step, and nothing else.
    let activated: Value = serde_json::from_str(&r[3].0).unwrap();
    assert_eq!(activated["activated"], json!([BROWSER]));
    assert!(!names(&requests[3]).contains(&BROWSER.to_owned()));
    let fifth = names(&requests[4]);
    assert!(fifth.contains(&BROWSER.to_owned()), "{fifth:?}");
    assert!(!fifth.iter().any(|n| n.starts_with("mcp__")), "{fifth:?}");
    assert!(h.offered_tools().iter().any(|(n, _)| *n == BROWSER));
    let activations: Vec<Vec<String>> = events
        .take()
        .into_iter()
        .filter_map(|e| match e {
            Event::ToolsActivated { tools } => Some(tools),
            _ => None,
        })
        .collect();
    assert_eq!(activations, [vec![BROWSER.to_owned()]]);
    // One durable record, under the built-ins' owner.
    let id = h.session().id;
    let store = evoflux_store::Store::open(world.data()).await.unwrap();
    assert_eq!(
        store.connection_tools(id).await.unwrap(),
        [ConnectionTool {
            owner: BUILTIN_OWNER.into(),
            server: String::new(),
            tool: BROWSER.into(),
        }]
    );
    drop(h);

    // Resumed, the browser is offered from the first request.
    let again = Recorder::new(vec![text("ok")]);
    let mut h = open_with(
        &world,
        &rt,
        again.clone(),
        Arc::new(CollectEvents::default()),
        SessionRequest::Resume {
            id,
            mode: None,
            workspace: None,
        },
        with_browser(&world),
    )
    .await;
    h.turn(Some("Again."), TurnOptions::default())
        .await
        .unwrap();
    let resumed = names(&again.requests()[0]);
    assert!(resumed.contains(&BROWSER.to_owned()), "{resumed:?}");
    assert!(resumed.contains(&"connection_search".to_owned()));
    assert!(
        !resumed.iter().any(|n| n.starts_with("mcp__")),
        "{resumed:?}"
    );
    rt.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_small_catalog_offers_the_browser_from_the_start() {
    let srv = server(0).await;
    let world = world(&srv);
    let rt = runtime(&world);
    let provider = Recorder::new(vec![text("Done.")]);
    let mut h = open_with(
        &world,
        &rt,
        provider.clone(),
        Arc::new(CollectEvents::default()),
        work(),
        with_browser(&world),
    )
    .await;
    h.turn(Some("hi"), TurnOptions::default()).await.unwrap();
    let first = names(&provider.last_request());
    assert!(first.contains(&BROWSER.to_owned()), "{first:?}");
    assert!(first.contains(&ECHO.to_owned()), "{first:?}");
    assert!(
        !first.contains(&"connection_search".to_owned()),
        "{first:?}"
    );
    rt.shutdown().await;
}
