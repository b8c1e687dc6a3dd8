//! Errors of the MCP runtime. A tool that reports `isError` is not an
//! error here: it is an [`crate::McpToolResult`] with `is_error` set, which
//! goes back to the model like any other result.

use std::time::Duration;

/// Why a call (or a management operation) failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McpError {
    #[error("no MCP tool is named `{0}`")]
    UnknownTool(String),
    #[error("no MCP server is named `{0}`")]
    UnknownServer(String),
    #[error("MCP server `{server}` is not ready ({state})")]
    NotReady { server: String, state: String },
    #[error("MCP tool `{tool}` on server `{server}` did not answer within {timeout:?}")]
    Timeout {
        server: String,
        tool: String,
        timeout: Duration,
    },
    /// The server's answer passed the per-call result bound
    /// ([`crate::ManagerOptions::max_result_bytes`]): the call ended as soon
    /// as it did and the rest of the answer was skipped.
    #[error(
        "MCP tool `{tool}` on server `{server}` answered with more than {limit} bytes, the \
         bound of one call's result; its answer was dropped (ask for less, e.g. a narrower \
         query or a page)"
    )]
    ResultTooLarge {
        server: String,
        tool: String,
        limit: usize,
    },
    /// A request other than a tool call (`prompts/get`, `resources/read`,
    /// …) passed its time bound.
    #[error("MCP server `{server}` did not answer {request} within {timeout:?}")]
    RequestTimeout {
        server: String,
        request: String,
        timeout: Duration,
    },
    #[error("tool arguments must be a JSON object, found {0}")]
    InvalidArguments(String),
    /// The server answered with a JSON-RPC error (for example an unknown
    /// tool on servers that report it that way).
    #[error("MCP server `{server}` returned error {code}: {message}")]
    Protocol {
        server: String,
        code: i32,
        message: String,
    },
    /// The connection failed or closed.
    #[error("MCP server `{server}`: {detail}")]
    Transport { server: String, detail: String },
    #[error("the MCP manager needs a Tokio runtime")]
    NoRuntime,
}

impl McpError {
    /// The stable code of this error (`mcp/...`), for events and tests.
    pub fn code(&self) -> &'static str {
        match self {
            McpError::UnknownTool(_) => "mcp/unknown-tool",
            McpError::UnknownServer(_) => "mcp/unknown-server",
            McpError::NotReady { .. } => "mcp/server-not-ready",
            McpError::Timeout { .. } => "mcp/call-timeout",
            McpError::RequestTimeout { .. } => "mcp/request-timeout",
            McpError::ResultTooLarge { .. } => "mcp/result-too-large",
            McpError::InvalidArguments(_) => "mcp/invalid-arguments",
            McpError::Protocol { .. } => "mcp/protocol-error",
            McpError::Transport { .. } => "mcp/transport-error",
            McpError::NoRuntime => "mcp/no-runtime",
        }
    }
}
