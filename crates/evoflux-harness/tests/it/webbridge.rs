//! WebBridge conversations: a session tagged for the browser surface is
//! offered only the MCP servers whose plugin declares `webbridge-safe`,
//! says why every other granted server is hidden (`mcp/webbridge-hidden`),
//! and keeps the tag when it is resumed. Real server processes: a linked
//! plugin whose two stdio servers run `evoflux-mcp-testserver`.

use crate::common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use common::{Recorder, World, text};
use evoflux_core::AppMode;
use evoflux_harness::{CollectEvents, Harness, SessionRequest, TurnOptions};
use evoflux_mcp::{ManagerOptions, McpRuntime};
use evoflux_plugins::{MCP_SCHEMA_1_0_0, PLUGIN_SCHEMA_1_0_0, PluginManager, PluginPaths};
use evoflux_store::{SessionSurface, WorkspaceRequest};
use serde_json::json;

/// The MCP test server, built beside the test binaries when the
/// workspace's tests are built.
fn test_server() -> Option<PathBuf> {
    let exe = std::env::current_exe().unwrap();
    let path = exe
        .parent()
        .and_then(|deps| deps.parent())
        .map(|dir| dir.join("evoflux-mcp-testserver"))?;
    if path.is_file() {
        return Some(path);
    }
    evoflux_core::prerequisite::missing(
        &format!("the MCP test server {}", path.display()),
        "build it with `cargo build -p evoflux-mcp --features test-server`",
    );
    None
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A linked plugin `web` with servers `safe` (declared `webbridge-safe`,
/// spelled in another case as authors may) and `plain` (declares another
/// capability only), both running the test server.
fn plugin(base: &Path, server: &Path) -> PluginManager {
    let root = base.join("plugin");
    write(
        &root.join("plugin.json"),
        &json!({
            "$schema": PLUGIN_SCHEMA_1_0_0,
            "name": "web",
            "version": "1.0.0",
            "extensions": {"org.evoelsewhere.evoflux.mcp": {"servers": {
                "safe": {"capabilities": ["WebBridge-Safe"]},
                "plain": {"capabilities": ["something-else"]}
            }}}
        })
        .to_string(),
    );
    write(
        &root.join("mcp.json"),
        &json!({
            "$schema": MCP_SCHEMA_1_0_0,
            "mcpServers": {
                "safe": {"type": "stdio", "command": "./bin/server"},
                "plain": {"type": "stdio", "command": "./bin/server"}
            }
        })
        .to_string(),
    );
    let script = root.join("bin/server");
    write(
        &script,
        &format!("#!/bin/sh\nexec '{}' \"$@\"\n", server.display()),
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let plugins = PluginManager::new(PluginPaths::new(base.join("data"), base.join("cache")));
    plugins.link(&root, true).unwrap();
    plugins
}

async fn harness(
    world: &World,
    rt: &McpRuntime,
    provider: Arc<Recorder>,
    request: SessionRequest,
) -> Harness {
    let mut setup = world
        .setup(AppMode::Work, provider, Arc::new(CollectEvents::default()))
        .await;
    setup.agent.mcp = vec!["web/safe".into(), "web/plain".into()];
    setup.mcp = Some(rt.clone());
    Harness::open(setup, request).await.unwrap()
}

fn mcp_tools(provider: &Recorder) -> Vec<String> {
    Recorder::tool_names(&provider.last_request())
        .into_iter()
        .filter(|n| n.starts_with("mcp__") && n.ends_with("__echo"))
        .collect()
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webbridge_session_offers_only_webbridge_safe_servers_and_keeps_its_tag() {
    let Some(server) = test_server() else { return };
    let world = World::new();
    let plugins = plugin(&world.tmp.path().canonicalize().unwrap(), &server);
    let (rt, diagnostics) =
        McpRuntime::new(&world.graph, Some(&plugins), ManagerOptions::default()).unwrap();
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    rt.start_all();
    rt.settle(Duration::from_secs(60)).await;

    // A standard conversation is offered both servers.
    let provider = Recorder::new(vec![text("Hi."), text("Hi again.")]);
    let mut h = harness(
        &world,
        &rt,
        provider.clone(),
        SessionRequest::New {
            workspace: WorkspaceRequest::Work,
            graph_hash: None,
        },
    )
    .await;
    h.turn(Some("Go."), TurnOptions::default()).await.unwrap();
    assert_eq!(
        mcp_tools(&provider),
        ["mcp__web_plain__echo", "mcp__web_safe__echo"]
    );
    assert!(h.mcp_hidden().is_empty());

    // Tagged for the browser surface: the undeclared server is hidden,
    // and says why.
    h.set_surface(SessionSurface::WebBridge).await.unwrap();
    assert_eq!(h.session().surface, SessionSurface::WebBridge);
    h.turn(Some("Again."), TurnOptions::default())
        .await
        .unwrap();
    assert_eq!(mcp_tools(&provider), ["mcp__web_safe__echo"]);
    let hidden = h.mcp_hidden();
    assert_eq!(hidden.len(), 1, "{hidden:?}");
    assert_eq!(hidden[0].code, "mcp/webbridge-hidden");
    assert_eq!(hidden[0].locator.field.as_deref(), Some("web/plain"));
    assert!(hidden[0].message.contains("webbridge-safe"));
    let id = h.session().id;
    drop(h);

    // Resumed: still WebBridge, still only the safe server.
    let provider = Recorder::new(vec![text("Back.")]);
    let mut resumed = harness(
        &world,
        &rt,
        provider.clone(),
        SessionRequest::Resume {
            id,
            mode: None,
            workspace: None,
        },
    )
    .await;
    assert_eq!(resumed.session().surface, SessionSurface::WebBridge);
    resumed
        .turn(Some("Still there?"), TurnOptions::default())
        .await
        .unwrap();
    assert_eq!(mcp_tools(&provider), ["mcp__web_safe__echo"]);
    assert_eq!(resumed.mcp_hidden().len(), 1);
    rt.shutdown().await;
}
