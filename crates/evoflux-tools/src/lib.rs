//! Executors of evoflux's built-in tools: a library the harness's
//! per-tool handlers call (`evoflux-harness/src/tools/<name>.rs`, found by
//! the typed [`BuiltinExecutor`](evoflux_graph::tool::BuiltinExecutor) of
//! the tool's definition, never by its name). What a tool is for the model
//! (its description, schema and limits) is its module in
//! `evoflux_graph::tool::builtin`; the limits are enforced here.
//!
//! * The file tools (`read`, `write`, `edit`, `ls`, `glob`, `grep`,
//!   `artifact`) are synchronous: [`files`]. Every path stays inside the
//!   session's [`Workspace`] roots. What `write` and `edit` changed comes
//!   back as a diff for front ends ([`file_change`]).
//! * Commands (`shell`, `process`, command-backed project tools, `verify`'s
//!   registered checks, the user's `!command`) need state that outlives a
//!   call, so they run on the application's [`ProcessRuntime`] (async,
//!   tokio), which journals output once per command and returns bounded
//!   observations carrying a typed [`CommandMeta`].
//! * `web_fetch` is async too: [`web_fetch::WebFetch`], one HTTP client per
//!   process, with each session's [`web_fetch::NetworkAccess`] policy.
//! * `code_context` keeps its index across a session's calls
//!   ([`CodeNavigator`], over evoflux-code).
//!
//! `todo`, `skill`, `schedule_task` and `connection_search` act on session
//! state (the task list, the loaded skills, the user's schedules through
//! the approval policy, the held-back MCP tools), so they have no executor
//! here: their handlers in the harness run them.

mod args;
mod artifact;
mod beneath;
pub mod browser;
mod change;
mod clip;
mod code_context;
mod command_tool;
mod controls;
mod env;
mod error;
pub mod files;
mod glob;
mod grep;
pub mod group;
mod journal;
mod limits;
mod lineage;
mod listening;
mod locator;
mod ls;
mod observation;
mod output;
mod preview;
mod process;
mod read;
mod runtime;
pub mod sandbox;
mod seccomp;
mod shell;
mod sync;
mod tracked;
mod walk;
pub mod web_fetch;
mod workspace;
mod write;

pub use artifact::{ARTIFACTS_DIR, ArtifactInput, artifact_path};
pub use change::{DIFF_LIMIT_BYTES, DIFF_MAX_INPUT_BYTES, DIFF_TIMEOUT, FileChange, file_change};
pub use clip::MAX_LINE_CHARS;
pub use code_context::CodeNavigator;
pub use command_tool::working_folder as command_working_folder;
pub use controls::GitControl;
pub use env::ALLOWED_ENV;
pub use error::ToolError;
pub use glob::{GLOB_DEFAULT_MAX, GlobInput, PathGlob};
pub use grep::{GREP_DEFAULT_MAX, GREP_MAX_FILE_BYTES, GREP_MAX_PATTERN, GrepInput};
pub use limits::{Limits, ProcessLimit};
pub use lineage::LINEAGE_VAR;
pub use locator::{ARTIFACT_SCHEME, artifact_locator};
pub use ls::{LS_MAX_ENTRIES, LsInput};
pub use observation::{CommandMeta, CommandStatus, FAILURE_OUTPUT_LIMIT, SUCCESS_OUTPUT_LIMIT};
pub use output::ToolOutput;
pub use preview::{
    MAX_SESSION_PREVIEWS, PREVIEW_DEFAULT_WAIT_SECONDS, PREVIEW_MAX_WAIT_SECONDS,
    PREVIEW_MIN_WAIT_SECONDS, PreviewAction, PreviewBrowser, PreviewChange, PreviewInfo,
    PreviewOutcome, PreviewRequest,
};
pub use process::{
    PROCESS_DEFAULT_WAIT_SECONDS, PROCESS_MAX_WAIT_SECONDS, PROCESS_MIN_WAIT_SECONDS,
    ProcessAction, ProcessRequest,
};
pub use read::{READ_MAX_OUTPUT_BYTES, READ_SCAN_BYTES, ReadInput, read_text};
pub use runtime::{
    ArgvCommand, DEFAULT_EXIT_DRAIN, DEFAULT_MAX_TIMEOUT, DEFAULT_TERMINATE_GRACE, ExitNotice,
    MAX_SESSION_PROCESSES, ProcessRuntime, RuntimeConfig,
};
pub use shell::{
    SHELL_DEFAULT_TIMEOUT_SECONDS, SHELL_DEFAULT_YIELD_MS, SHELL_MAX_YIELD_MS,
    SHELL_MIN_TIMEOUT_SECONDS, SHELL_MIN_YIELD_MS, ShellRequest,
};
pub use workspace::{Control, Resolved, Workspace};
pub use write::{EditInput, WriteInput, apply_edit};
