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
}
