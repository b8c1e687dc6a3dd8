//! What every handler shares.

use std::collections::BTreeMap;
use std::path::PathBuf;

use evoflux_app::mcp_servers::McpRuntime;
use evoflux_harness::Store;

use crate::live::Sessions;

/// The server's state.
#[derive(Debug)]
pub struct ServerState {
    /// Wakes the reload loop: a change made through the API (a skill, a
    /// plugin) compiles the graph again at once, without waiting for the
    /// file watcher.
    pub reload: tokio::sync::Notify,
    pub sessions: Sessions,
    /// The store every session lives in (one pool for the server).
    pub store: Store,
    /// The repositories the server serves (canonical), for Coding
    /// sessions and for compiling the graph `/api/info` shows.
    pub workspaces: Vec<PathBuf>,
    /// The server's own view of the MCP servers (global and per plugin),
    /// started on the first `/api/mcp/servers` and stopped at shutdown;
    /// sessions run their own.
    pub mcp: tokio::sync::Mutex<Option<McpRuntime>>,
    /// The OAuth logins to MCP servers waiting for their callback (their
    /// `state` and PKCE verifier stay here, never in a response).
    pub mcp_logins: evoflux_app::mcp_servers::OAuthLogins,
    /// Fires the schedules (its loop runs beside the server) and starts
    /// runs asked for through the API.
    pub scheduler: evoflux_app::scheduler::Scheduler,
    /// The environment `evoflux serve` runs in, where channel routes read
    /// the secrets their auth names.
    pub environment: BTreeMap<String, String>,
    /// The document viewer (its cache under the cache dir) and the slots
    /// that bound how many documents render at once.
    pub viewer: evoflux_viewer::Viewer,
    pub viewer_slots: tokio::sync::Semaphore,
    /// The keys of the sessions' preview proxies.
    pub previews: crate::preview::PreviewKeys,
}

impl ServerState {
    /// A change through the API altered the sources (a skill bundle or its
    /// preferences, a plugin's files, state or credentials): the server's
    /// own MCP view is brought in line with the plugin registry, every
    /// live session reopens on the new sources before its next turn, and
    /// the router is rebuilt from the graph compiled again.
    pub async fn sources_changed(&self) {
        self.sessions.sources_changed();
        if let Some(runtime) = self.mcp.lock().await.as_mut() {
            let plugins = self.sessions.app().plugins();
            for d in runtime.sync_plugins(&plugins).await {
                tracing::warn!("{}: {}", d.code, d.message);
            }
        }
        self.reload.notify_one();
    }
}
