//! What every handler shares.

use std::path::PathBuf;

use evoflux_store::Store;

use crate::live::Sessions;

/// The server's state.
#[derive(Debug)]
pub struct ServerState {
    pub sessions: Sessions,
    /// The store every session lives in (one pool for the server).
    pub store: Store,
    /// The repositories the server serves (canonical), for Coding
    /// sessions and for compiling the graph `/api/info` shows.
    pub workspaces: Vec<PathBuf>,
    /// The server's own view of the MCP servers (global and per plugin),
    /// started on the first `/api/mcp/servers` and stopped at shutdown;
    /// sessions run their own.
    pub mcp: tokio::sync::OnceCell<evoflux_mcp::McpRuntime>,
}
