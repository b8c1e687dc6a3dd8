//! Stable diagnostic codes of the MCP runtime. Tests assert on these, never
//! on prose.

/// A legacy `sse` entry: listed, never started.
pub const TRANSPORT_UNSUPPORTED: &str = "mcp/transport-unsupported";
/// A declaration that cannot be turned into a launch (a folder that cannot
/// be created, a header value that is not a valid HTTP value, …). Only that
/// server is skipped.
pub const SERVER_INVALID: &str = "mcp/server-invalid";
/// Spawning, connecting or the `initialize` handshake failed.
pub const START_FAILED: &str = "mcp/start-failed";
/// The server did not become ready within the startup timeout.
pub const STARTUP_TIMEOUT: &str = "mcp/startup-timeout";
/// `tools/list` failed after a successful handshake.
pub const TOOLS_LIST_FAILED: &str = "mcp/tools-list-failed";
/// The server's connection closed after it was ready.
pub const SERVER_EXITED: &str = "mcp/server-exited";
/// A configured header that the MCP client itself sets was dropped.
pub const HEADER_RESERVED: &str = "mcp/header-reserved";
/// A tool's qualified name needed a hash suffix (collision or length).
pub const TOOL_NAME_ADJUSTED: &str = "mcp/tool-name-adjusted";
/// A plugin's `mcp.json` is invalid at the top level: none of its servers run.
pub const PLUGIN_MCP_DISABLED: &str = "mcp/plugin-mcp-disabled";
/// A `${VAR}` reference of the user's entry names a variable that is not
/// set and has no default.
pub const ENV_UNSET: &str = "mcp/env-unset";
/// A repository's entry refers to a variable that holds a key (a
/// provider's `api_key_env`, `*_KEY`, `*_TOKEN`, …): it is never started.
pub const PROJECT_SECRET_EXPANSION: &str = "mcp/project-secret-expansion";
/// A Streamable HTTP server refused the handshake with `401`: it waits for
/// an OAuth login (`POST /api/mcp/servers/{name}/login`, `evoflux mcp
/// login`), or its stored tokens were refused and could not be refreshed.
pub const NEEDS_LOGIN: &str = "mcp/needs-login";
/// A plugin's stdio server waits for the plugin's required credentials.
pub const NEEDS_CREDENTIALS: &str = "mcp/needs-credentials";
/// A plugin's credentials could not be read; its stdio servers start without them.
pub const CREDENTIALS_UNAVAILABLE: &str = "mcp/credentials-unavailable";
/// A repository file a repository's server runs (its program, a file an
/// argument names) changed after its trust was checked: not started.
pub const CHANGED_SINCE_TRUST: &str = evoflux_core::trust::CHANGED_SINCE_TRUST;
/// A server's sampling or elicitation request arrived with no tool call of
/// evoflux's in flight on its connection: refused, the server reads why.
pub const REQUEST_UNROUTED: &str = "mcp/request-unrouted";
/// A server's sampling or elicitation request arrived while calls of
/// several sessions were in flight on its connection: refused.
pub const REQUEST_AMBIGUOUS: &str = "mcp/request-ambiguous";
/// An elicitation answer did not fit the server's requested schema.
pub const ELICITATION_INVALID: &str = "mcp/elicitation-invalid";
/// A server a client passed for one session (an editor's, over ACP) has
/// the name of a configured server, which it replaces in that session.
pub const SESSION_SERVER_REPLACES: &str = "mcp/session-server-replaces";
/// A server is hidden in a conversation tagged for the browser surface
/// (WebBridge): it does not declare `webbridge-safe`.
pub const WEBBRIDGE_HIDDEN: &str = "mcp/webbridge-hidden";
