//! The one definition of each built-in tool's limits and defaults.
//!
//! The model learns a tool's bounds from its JSON schema (built in
//! [`super::framework_tool`]) and the executor enforces them; both read the
//! constants below, so the two cannot drift apart. They live here rather
//! than beside the executors in `evoflux-tools` because the dependency runs
//! one way: `evoflux-tools` depends on this crate (for
//! [`super::BuiltinExecutor`]), and the graph compiler must build the
//! schemas without knowing any executor. `evoflux-tools` re-exports these
//! under its own names and its tests compare them with the compiled schema.
//!
//! Changing a value changes the schema, and therefore the builtin
//! definition's hash: that is intended, since the model-visible contract
//! changed.

/// `shell`.
pub mod shell {
    /// `timeout_seconds` when the call gives none.
    pub const DEFAULT_TIMEOUT_SECONDS: u64 = 120;
    /// The smallest `timeout_seconds` accepted.
    pub const MIN_TIMEOUT_SECONDS: u64 = 1;
    /// `yield_time_ms` when the call gives none.
    pub const DEFAULT_YIELD_MS: u64 = 10_000;
    /// Below this a command is barely started before the call returns.
    pub const MIN_YIELD_MS: u64 = 250;
    /// Above this the model waits blind; longer work continues with
    /// `process`.
    pub const MAX_YIELD_MS: u64 = 30_000;
}

/// `process`.
pub mod process {
    /// `wait_seconds` when the call gives none.
    pub const DEFAULT_WAIT_SECONDS: u64 = 10;
    pub const MIN_WAIT_SECONDS: u64 = 1;
    /// One `wait` blocks the turn at most this long.
    pub const MAX_WAIT_SECONDS: u64 = 60;
    /// The actions, in the order the schema lists them.
    pub const ACTIONS: &[&str] = &["list", "poll", "wait", "terminate"];
}

/// `read`.
pub mod read {
    /// The first line is 1 (`offset`), and a window shows at least one
    /// line (`limit`).
    pub const MIN_OFFSET: u64 = 1;
    pub const MIN_LIMIT: u64 = 1;
    /// How a path names a file of the session's artifacts (a command's
    /// full output, an offloaded result) rather than of the workspace:
    /// `artifact:proc_0123456789.txt`. Observations name artifacts so,
    /// never by their place in the data directory.
    pub const ARTIFACT_SCHEME: &str = "artifact:";
}

/// `glob`.
pub mod glob {
    pub const MIN_RESULTS: u64 = 1;
}

/// `grep`.
pub mod grep {
    /// Longest accepted pattern, in characters.
    pub const MAX_PATTERN_CHARS: u64 = 500;
    /// Lines of context around each match.
    pub const MIN_CONTEXT: u64 = 0;
    pub const MAX_CONTEXT: u64 = 10;
    pub const MIN_RESULTS: u64 = 1;
}

/// `web_fetch`.
pub mod web_fetch {
    /// `timeout` (seconds) when the call gives none.
    pub const DEFAULT_TIMEOUT_SECONDS: u64 = 30;
    pub const MIN_TIMEOUT_SECONDS: u64 = 1;
    pub const MAX_TIMEOUT_SECONDS: u64 = 120;
    /// The output formats, in the order the schema lists them.
    pub const FORMATS: &[&str] = &["markdown", "text", "html"];
}

/// `connection_search` and the deferral of MCP tools it serves.
pub mod connection_search {
    /// Granted MCP tools are held back from the model's tool list when
    /// there are more than this many of them…
    pub const DEFER_OVER_TOOLS: usize = 40;
    /// …or their definitions (names, descriptions, schemas as JSON) take
    /// more than this many bytes: about 8k tokens of every request.
    pub const DEFER_OVER_BYTES: usize = 32 * 1024;
    /// Results of one search when the call gives no `limit`.
    pub const DEFAULT_RESULTS: u64 = 10;
    pub const MAX_RESULTS: u64 = 25;
    /// Tools one call may activate.
    pub const MAX_ACTIVATE: u64 = 20;
    /// A result's description is cut to this many characters; the full
    /// one arrives with the tool's definition once activated.
    pub const DESCRIPTION_CHARS: usize = 200;
}
