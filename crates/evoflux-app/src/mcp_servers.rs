//! The application's MCP servers: the global `connections/*` of the
//! compiled graph and every enabled plugin's, under the plugin registry
//! of the application's directories. One rule for which servers an
//! application runs, whoever asks: a session opening, `doctor`,
//! `evoflux mcp` and `GET /api/mcp/servers`. Nothing starts here; whoever
//! holds the runtime starts what it needs and stops it again.

use std::path::PathBuf;

use evoflux_core::Diagnostic;
use evoflux_graph::CompiledGraph;
use evoflux_mcp::{ManagerOptions, McpError};

use crate::AppContext;

/// The runtime [`AppContext::mcp_servers`] returns, and one server as its
/// listing shows it.
pub use evoflux_mcp::{McpRuntime, ServerListing};

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
    /// checks).
    pub fn mcp_servers_with(
        &self,
        graph: &CompiledGraph,
        options: ManagerOptions,
    ) -> Result<(McpRuntime, Vec<Diagnostic>), McpError> {
        McpRuntime::new(graph, Some(&self.plugins()), options)
    }
}
