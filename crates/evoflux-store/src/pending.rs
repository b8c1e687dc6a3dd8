//! Pending inputs: questions the agent asked (`ask_user`) that wait for an
//! answer, possibly across a process restart.

use std::fmt;

use serde::Serialize;

/// A pending input's id, unique within the database.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct PendingInputId(pub i64);

impl fmt::Display for PendingInputId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

/// A stored question and, once given, its answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PendingInput {
    pub id: PendingInputId,
    /// The tool call that asked, so the answer becomes its tool result.
    pub tool_call_id: String,
    /// The question as the harness shaped it.
    pub request: serde_json::Value,
    pub answer: Option<serde_json::Value>,
    pub created_at_ms: i64,
    pub answered_at_ms: Option<i64>,
}

impl PendingInput {
    pub fn is_open(&self) -> bool {
        self.answer.is_none()
    }
}
