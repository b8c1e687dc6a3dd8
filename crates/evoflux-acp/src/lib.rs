//! The Agent Client Protocol both ways, on the protocol's official Rust
//! SDK (protocol v1):
//!
//! - [`agent`]: `evoflux acp`, evoflux as an agent that editors (Zed,
//!   JetBrains IDEs, Neovim plugins) drive over stdio;
//! - [`client`]: external agents (`[agents.external.<name>]`) as remote
//!   workers a lead dispatches, through the harness's
//!   [`RemoteAgents`](evoflux_harness::remote::RemoteAgents).
//!
//! Both sides keep the session logic in the harness: this crate only
//! translates between its events and the protocol's messages
//! ([`updates`]).

pub mod agent;
pub mod client;
mod session_mcp;
mod updates;

pub use agent::{AcpError, AgentOptions, serve, serve_stdio};
pub use client::AcpRemoteAgents;
