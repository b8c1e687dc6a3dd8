//! The typed result every executor returns to the loop.

use crate::change::FileChange;
use crate::observation::CommandMeta;

/// What the model sees after a tool call. `is_error` tells the provider
/// adapter to flag the result as a failed call, so the model retries
/// instead of trusting the text. `meta` carries the typed facts of a
/// command observation; the loop copies it unchanged into the live event
/// and the transcript so both show the same thing; `change` likewise
/// carries what `write` or `edit` changed, for front ends only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    pub text: String,
    pub is_error: bool,
    /// Set by command executions (`shell`, `process`, command tools,
    /// `!command`); `None` for every other tool.
    pub meta: Option<CommandMeta>,
    /// Set by `write` and `edit` ([`crate::file_change`]); `None` for
    /// every other tool.
    pub change: Option<Box<FileChange>>,
}

impl ToolOutput {
    /// A successful result.
    pub fn ok(text: impl Into<String>) -> ToolOutput {
        ToolOutput {
            text: text.into(),
            is_error: false,
            meta: None,
            change: None,
        }
    }

    /// This result with what the call changed in a file.
    pub fn with_change(self, change: Option<FileChange>) -> ToolOutput {
        ToolOutput {
            change: change.map(Box::new),
            ..self
        }
    }

    /// A failed result the model can read and correct.
    pub fn error(text: impl Into<String>) -> ToolOutput {
        ToolOutput {
            text: text.into(),
            is_error: true,
            meta: None,
            change: None,
        }
    }
}
