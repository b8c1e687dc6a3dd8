//! The typed result every executor returns to the loop.

use crate::observation::CommandMeta;

/// What the model sees after a tool call. `is_error` tells the provider
/// adapter to flag the result as a failed call, so the model retries
/// instead of trusting the text. `meta` carries the typed facts of a
/// command observation; the loop copies it unchanged into the live event
/// and the transcript so both show the same thing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    pub text: String,
    pub is_error: bool,
    /// Set by command executions (`shell`, `process`, command tools,
    /// `!command`); `None` for every other tool.
    pub meta: Option<CommandMeta>,
}

impl ToolOutput {
    /// A successful result.
    pub fn ok(text: impl Into<String>) -> ToolOutput {
        ToolOutput {
            text: text.into(),
            is_error: false,
            meta: None,
        }
    }

    /// A failed result the model can read and correct.
    pub fn error(text: impl Into<String>) -> ToolOutput {
        ToolOutput {
            text: text.into(),
            is_error: true,
            meta: None,
        }
    }
}
