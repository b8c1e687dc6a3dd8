//! The MCP client manager of evoflux, on the official Rust SDK (`rmcp`),
//! which stays behind this crate's own types.
//!
//! - [`McpManager`]: the servers of one scope (the global `connections/*`
//!   slots of the compiled graph, or one plugin installation), started in
//!   the background, each with a [`ServerState`] and its last error.
//! - [`McpRuntime`]: the global manager plus one manager per enabled plugin
//!   installation, never merged; what the agent loop holds.
//! - [`ToolSet`]: the ready tools of some managers under unique
//!   model-visible names (`mcp__<server>__<tool>`, see [`naming`]), and
//!   the call path ([`ToolSet::call_tool`]).
//! - [`PromptSet`]: the ready prompts under the same naming, for slash
//!   commands (`prompts/get`); resources are read by server reference
//!   ([`McpRuntime::read_resource`]).
//!
//! - [`live`]: what a server sends during a call (progress, log messages,
//!   sampling and elicitation requests), routed to the call's session
//!   ([`live::CallContext`], [`ToolSet::call_tool_in`]) and bounded.
//! - [`oauth`]: OAuth login for Streamable HTTP servers (tokens kept per
//!   server in the data directory, sent and refreshed by the connection).
//!
//! Transports: stdio (own process group, explicit environment, `roots/list`
//! answered, shutdown by end-of-input then SIGTERM after 500 ms) and
//! Streamable HTTP (redirects disabled, configured headers sent literally to
//! the configured URL only). On both, one call's answer is bounded in size
//! (`mcp/result-too-large`, see `bounded`) as well as in time. Legacy `sse`
//! entries are listed and never started. The handshake offers protocol
//! `2025-11-25`.

mod bounded;
pub mod client;
pub mod codes;
pub mod definition;
pub mod environment;
pub mod error;
pub mod live;
pub mod manager;
pub mod naming;
pub mod oauth;
pub mod plugin;
mod progress_order;
pub mod prompts;
pub mod references;
pub mod runtime;
#[cfg(feature = "test-server")]
#[doc(hidden)]
pub mod testserver;
#[cfg(feature = "test-server")]
#[doc(hidden)]
pub mod testserver_oauth;
pub mod toolset;
pub mod types;

pub use client::{DEFAULT_MAX_RESULT_BYTES, EOF_GRACE, PROTOCOL_VERSION, TERM_GRACE, http_client};
pub use definition::{
    HttpLaunch, Launch, PluginContext, SESSION_LAYER, ServerDefinition, ServerOwner, StdioLaunch,
    TransportKind, WebBridge, definition_diagnostics, definitions_from_graph, from_connection,
    plugin_definitions, session_http, session_owner, session_sse, session_stdio,
};
pub use error::McpError;
pub use manager::{
    DEFAULT_CALL_TIMEOUT, DEFAULT_STARTUP_TIMEOUT, ManagerOptions, ManagerScope, McpEvent,
    McpManager, ReloadReport, ServerError, ServerInfo, ServerState, ServerStatus,
};
pub use oauth::{
    Callback, LoginStart, LoginTarget, LoopbackRedirect, OAuthError, OAuthLogins, TokenStore,
};
pub use prompts::{McpPromptDescriptor, PromptSet};
pub use runtime::{McpRuntime, ServerListing};
pub use toolset::{McpToolDescriptor, ToolSet};
pub use types::{
    McpContent, McpPrompt, McpPromptArgument, McpPromptResult, McpResource, McpResourceContents,
    McpTool, McpToolResult, ResourceBody,
};
