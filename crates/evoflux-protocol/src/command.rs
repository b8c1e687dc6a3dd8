//! A command's observation as the transcript and the live `tool_ended`
//! event carry it.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Where a command stands at an observation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CommandStatus {
    /// Still running past its yield; continue with `process`.
    Running,
    /// Exited with status 0.
    Succeeded,
    /// Exited non-zero or was killed by a signal it was not sent by us.
    Failed,
    /// Killed by the runtime when its timeout elapsed.
    TimedOut,
    /// Stopped on request: `process terminate`, session end or shutdown.
    Terminated,
}

impl CommandStatus {
    /// The stable lower-case name used in `process list`.
    pub const fn as_str(self) -> &'static str {
        match self {
            CommandStatus::Running => "running",
            CommandStatus::Succeeded => "succeeded",
            CommandStatus::Failed => "failed",
            CommandStatus::TimedOut => "timed_out",
            CommandStatus::Terminated => "terminated",
        }
    }

    /// Whether the provider should flag the result as a failed call. A
    /// non-zero exit or a timeout is; a command still running or stopped
    /// on request is not.
    pub const fn is_error(self) -> bool {
        match self {
            CommandStatus::Failed | CommandStatus::TimedOut => true,
            CommandStatus::Running | CommandStatus::Succeeded | CommandStatus::Terminated => false,
        }
    }
}

/// Typed metadata of one command observation. The harness puts exactly
/// this value into the live `tool ended` event and the transcript message,
/// so a reloaded session shows what the live one did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandMeta {
    /// The opaque id `process` takes (never the OS pid).
    pub process_id: String,
    /// The OS pid of the command's process-group leader.
    pub pid: u32,
    pub status: CommandStatus,
    /// The exit code, when the command exited by itself.
    pub exit_code: Option<i32>,
    /// Wall time since start, at this observation.
    pub duration_ms: u64,
    /// The file holding the command's complete raw output.
    pub artifact: PathBuf,
    /// Artifact offset where the bytes this observation covers start.
    pub output_offset: u64,
    /// Bytes produced since the previous observation (what this one covers).
    pub output_bytes: u64,
    /// Of those, bytes shown in the text.
    pub shown_bytes: u64,
    /// Of those, bytes left out of the text (in the artifact, unless the
    /// journal cap dropped them).
    pub omitted_bytes: u64,
    /// Output bytes the journal cap dropped from the artifact's middle so
    /// far (absent below the cap).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub journal_dropped_bytes: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
