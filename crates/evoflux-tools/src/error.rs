//! The one error type of the file tools. Every variant carries a stable
//! code (`tool/kebab-name`) so callers and tests match on identity, and a
//! message written for the model that has to correct its call.

use std::path::PathBuf;

use crate::output::ToolOutput;

/// Why a tool call failed.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// The input JSON did not fit the tool's parameters.
    #[error("invalid input for field `{field}`: {message}")]
    InvalidInput { field: String, message: String },
    /// A path argument resolved outside every workspace root.
    #[error(
        "path `{path}` is outside the workspace roots ({roots}); only files inside them are accessible"
    )]
    OutsideWorkspace { path: String, roots: String },
    /// A write or edit aimed at one of the agent's own controls.
    #[error(
        "`{path}` is {control}: the agent's own controls are read-only to its file tools, so a run cannot change what later runs may do; ask the user to make this change"
    )]
    ProtectedControl {
        path: String,
        control: crate::workspace::Control,
    },
    /// The workspace itself could not be set up.
    #[error("workspace root {path} is unusable: {source}")]
    InvalidRoot {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The path does not exist.
    #[error("`{path}` does not exist")]
    NotFound { path: String },

    #[error(
        "`{path}` leads through a link that was not there when the path was checked: \
         nothing was read or written; check what changed the folder and try again"
    )]
    LinkOnPath { path: String },
    /// A file was expected but something else is there (or the reverse).
    #[error("`{path}` is {actual}, expected {expected}")]
    WrongKind {
        path: String,
        expected: &'static str,
        actual: &'static str,
    },
    /// `write` with `overwrite: false` found an existing file.
    #[error("`{path}` already exists and overwrite is false")]
    AlreadyExists { path: String },
    /// `read` or `edit` on a file that is not text.
    #[error("`{path}` looks like a binary file; it cannot be read or edited as text")]
    Binary { path: String },
    /// `edit` did not find exactly one match (or any match with `replace_all`).
    #[error("old_string matched {count} times in `{path}`; {hint}")]
    EditMatch {
        path: String,
        count: usize,
        hint: &'static str,
    },
    /// `read` asked for an offset past the end of the file.
    #[error("offset {offset} is past the end of `{path}` ({lines} lines)")]
    OffsetPastEnd {
        path: String,
        offset: usize,
        lines: usize,
    },
    /// A filesystem operation failed.
    #[error("cannot {action} `{path}`: {source}")]
    Io {
        action: &'static str,
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// `process` named an id this session does not track (never started,
    /// another session's, or already finished and observed).
    #[error(
        "no command process `{process_id}` in this session; use process(action='list') to see the running ones"
    )]
    ProcessNotFound { process_id: String },
    /// The command could not be started at all.
    #[error("cannot start `{program}`: {source}")]
    SpawnFailed {
        program: String,
        #[source]
        source: std::io::Error,
    },
    /// The session's output artifact could not be created.
    #[error("cannot journal command output to {path}: {source}")]
    Journal {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The session already tracks the maximum number of running commands.
    #[error(
        "this session already runs {limit} commands; terminate some with process(action='terminate') first"
    )]
    TooManyProcesses { limit: usize },
    /// The application is shutting down and starts no more commands.
    #[error("the command runtime is shutting down; no new command can start")]
    RuntimeShutDown,
    /// `preview` named an id this session has no preview under.
    #[error("no preview `{preview_id}` in this session; use preview(action='status') to list them")]
    PreviewNotFound { preview_id: String },
    /// The session already runs the most previews it may.
    #[error(
        "this session already runs {limit} previews; stop one with preview(action='stop') first"
    )]
    TooManyPreviews { limit: usize },
    /// `preview(action='snapshot')` cannot run: no browser for the
    /// session, or no preview serving.
    #[error("cannot take a snapshot of the preview: {reason}")]
    PreviewSnapshotUnavailable { reason: String },
    /// A command tool definition that the graph should have rejected
    /// (such as a placeholder spliced into a larger argument).
    #[error("command tool definition is invalid at {field}: {message}")]
    CommandToolInvalid { field: String, message: String },
    /// A confined command cannot run because the sandbox cannot be set up.
    #[error("the command was not run: {reason}")]
    SandboxUnavailable { reason: String },
    /// A file tool aimed at a file the sandbox policy denies (`.env`).
    #[error(
        "`{path}` matches the sandbox's denied patterns ({patterns}), which keep secrets such as .env files away from the agent; ask the user for what you need from it"
    )]
    DeniedFile { path: String, patterns: String },
}

impl ToolError {
    /// The stable code of this error, for tests and diagnostics.
    pub fn code(&self) -> &'static str {
        match self {
            ToolError::InvalidInput { .. } => "tool/input-invalid",
            ToolError::OutsideWorkspace { .. } => "tool/outside-workspace",
            ToolError::ProtectedControl { .. } => "tool/protected-control",
            ToolError::InvalidRoot { .. } => "tool/root-invalid",
            ToolError::NotFound { .. } => "tool/not-found",
            ToolError::LinkOnPath { .. } => "tool/link-on-path",
            ToolError::WrongKind { .. } => "tool/wrong-kind",
            ToolError::AlreadyExists { .. } => "tool/already-exists",
            ToolError::Binary { .. } => "tool/binary-file",
            ToolError::EditMatch { .. } => "tool/edit-match",
            ToolError::OffsetPastEnd { .. } => "tool/offset-past-end",
            ToolError::Io { .. } => "tool/io",
            ToolError::ProcessNotFound { .. } => "tool/process-not-found",
            ToolError::SpawnFailed { .. } => "tool/spawn-failed",
            ToolError::Journal { .. } => "tool/journal-failed",
            ToolError::TooManyProcesses { .. } => "tool/too-many-processes",
            ToolError::RuntimeShutDown => "tool/runtime-shut-down",
            ToolError::PreviewNotFound { .. } => "tool/preview-not-found",
            ToolError::TooManyPreviews { .. } => "tool/too-many-previews",
            ToolError::PreviewSnapshotUnavailable { .. } => "tool/preview-snapshot-unavailable",
            ToolError::CommandToolInvalid { .. } => "tool/command-tool-invalid",
            ToolError::SandboxUnavailable { .. } => "tool/sandbox-unavailable",
            ToolError::DeniedFile { .. } => "tool/denied-file",
        }
    }

    /// The model-visible form of this error.
    pub fn into_output(self) -> ToolOutput {
        ToolOutput::error(self.to_string())
    }

    pub(crate) fn input(field: &str, message: impl Into<String>) -> ToolError {
        ToolError::InvalidInput {
            field: field.to_owned(),
            message: message.into(),
        }
    }

    pub(crate) fn io(action: &'static str, path: &str) -> impl FnOnce(std::io::Error) -> ToolError {
        let path = path.to_owned();
        move |source| {
            let link = source
                .get_ref()
                .is_some_and(|e| e.is::<crate::beneath::LinkOnPath>());
            if link {
                ToolError::LinkOnPath { path }
            } else if source.kind() == std::io::ErrorKind::NotFound {
                ToolError::NotFound { path }
            } else {
                ToolError::Io {
                    action,
                    path,
                    source,
                }
            }
        }
    }
}
