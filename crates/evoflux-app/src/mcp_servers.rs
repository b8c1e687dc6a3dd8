//! The application's MCP servers: the global `connections/*` of the
//! compiled graph and every enabled plugin's, under the plugin registry
//! of the application's directories. One rule for which servers an
//! application runs, whoever asks: a session opening, `doctor`,
//! `evoflux mcp` and `GET /api/mcp/servers`. Nothing starts here; whoever
//! holds the runtime starts what it needs and stops it again.

use std::path::PathBuf;

use evoflux_core::Diagnostic;
use evoflux_graph::CompiledGraph;
use evoflux_mcp::{ManagerOptions, ServerDefinition};

use crate::AppContext;

/// OAuth login for Streamable HTTP servers (see [`evoflux_mcp::oauth`]):
/// the logins in flight a front end holds, a callback's query, what a
/// started login returns, why one failed, and the tokens' store.
pub use evoflux_mcp::{Callback, LoginStart, OAuthError, OAuthLogins, TokenStore};
/// The runtime [`AppContext::mcp_servers`] returns, one server as its
/// listing shows it, and why an operation on it failed.
pub use evoflux_mcp::{McpError, McpRuntime, ServerListing};

impl AppContext {
    /// The application's MCP servers for `graph`, answering `roots` to a
    /// server's `roots/list`, none started; with what their setup found
    /// wrong.
    pub fn mcp_servers(
        &self,
        graph: &CompiledGraph,
        roots: Vec<PathBuf>,
    ) -> Result<(McpRuntime, Vec<Diagnostic>), McpError> {
        self.mcp_servers_with(
            graph,
            ManagerOptions {
                roots,
                ..ManagerOptions::default()
            },
        )
    }

    /// [`AppContext::mcp_servers`] with every option of their managers
    /// (`doctor` resolves the servers' references in the environment it
    /// checks). The user's `[mcp] max_result_mib`, when set, bounds each
    /// call's result whoever asks: the setting is the user's, not the
    /// caller's.
    pub fn mcp_servers_with(
        &self,
        graph: &CompiledGraph,
        options: ManagerOptions,
    ) -> Result<(McpRuntime, Vec<Diagnostic>), McpError> {
        self.session_mcp_servers(graph, options, Vec::new())
    }

    /// [`AppContext::mcp_servers_with`] with the servers a client passed
    /// for one session (an editor's, over ACP) beside the configured ones
    /// ([`McpRuntime::with_session_servers`]).
    pub fn session_mcp_servers(
        &self,
        graph: &CompiledGraph,
        options: ManagerOptions,
        session: Vec<ServerDefinition>,
    ) -> Result<(McpRuntime, Vec<Diagnostic>), McpError> {
        let configured = crate::selected_config(graph)
            .0
            .and_then(|loaded| loaded.config.mcp.max_result_bytes());
        let options = ManagerOptions {
            oauth_tokens: options.oauth_tokens.or_else(|| Some(self.mcp_tokens())),
            max_result_bytes: configured.unwrap_or(options.max_result_bytes),
            ..options
        };
        McpRuntime::with_session_servers(graph, Some(&self.plugins()), options, session)
    }

    /// Where the OAuth tokens of the application's Streamable HTTP servers
    /// are kept: one owner-only file per server under the data directory,
    /// never in the MCP config.
    pub fn mcp_tokens(&self) -> TokenStore {
        TokenStore::in_data_dir(self.dirs.data_dir())
    }
}

impl AppContext {
    /// What `info` says of each MCP server in a WebBridge conversation (a
    /// session tagged for the browser surface): the graph's connections
    /// get it in place, and the enabled plugins' servers are listed with
    /// it. The standing and its reason are the ones a session reports
    /// ([`evoflux_mcp::WebBridge::hidden_diagnostic`]). Nothing starts.
    pub(crate) fn mark_webbridge(
        &self,
        graph: &CompiledGraph,
        info: &mut evoflux_graph::info::Info,
    ) {
        let global = evoflux_mcp::definitions_from_graph(graph);
        for c in &mut info.connections.entries {
            c.webbridge = global
                .iter()
                .find(|d| d.name == c.name)
                .map(webbridge_standing);
        }
        let plugins = self.plugins();
        info.plugin_mcp_servers = plugins
            .enabled_plugin_roots()
            .0
            .iter()
            .flat_map(|root| evoflux_mcp::plugin::installation_definitions(&plugins, root).0)
            .filter_map(|d| match &d.owner {
                evoflux_mcp::ServerOwner::Plugin { plugin, .. } => {
                    Some(evoflux_graph::info::InfoPluginServer {
                        name: d.owner.server_ref(&d.name),
                        plugin: plugin.clone(),
                        webbridge: webbridge_standing(&d),
                    })
                }
                evoflux_mcp::ServerOwner::Global { .. } => None,
            })
            .collect();
    }
}

/// A server's standing in WebBridge conversations.
fn webbridge_standing(def: &ServerDefinition) -> evoflux_graph::info::InfoWebBridge {
    match def.webbridge.hidden_diagnostic(&def.owner, &def.name) {
        None => evoflux_graph::info::InfoWebBridge::Offered,
        Some(hidden) => evoflux_graph::info::InfoWebBridge::Hidden {
            code: hidden.code.into_owned(),
            reason: hidden.message,
        },
    }
}
