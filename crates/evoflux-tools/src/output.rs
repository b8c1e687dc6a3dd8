//! The typed result every executor returns to the loop.

/// What the model sees after a tool call. `is_error` tells the provider
/// adapter to flag the result as a failed call, so the model retries
/// instead of trusting the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    pub text: String,
    pub is_error: bool,
}

impl ToolOutput {
    /// A successful result.
    pub fn ok(text: impl Into<String>) -> ToolOutput {
        ToolOutput {
            text: text.into(),
            is_error: false,
        }
    }

    /// A failed result the model can read and correct.
    pub fn error(text: impl Into<String>) -> ToolOutput {
        ToolOutput {
            text: text.into(),
            is_error: true,
        }
    }
}
