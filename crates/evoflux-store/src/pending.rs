//! Pending inputs: questions the agent asked (`ask_user`) that wait for an
//! answer, possibly across a process restart.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A pending input's id, unique within the database.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct PendingInputId(pub i64);

impl fmt::Display for PendingInputId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

/// What the agent asked, as stored: one typed record that the harness
/// writes and every reader (the turn that answers it, `sessions show`, a
/// server) reads, instead of each picking keys out of JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingRequest {
    /// The model-visible name of the tool that asked, so the answer is
    /// recorded as that call's result.
    #[serde(default)]
    pub tool: String,
    pub question: String,
    /// Answers to choose from; empty for a free-text answer.
    #[serde(default)]
    pub options: Vec<String>,
    /// A JSON Schema the interrupted turn must still end with, so the
    /// answer resumes a turn under the same contract.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<serde_json::Value>,
}

impl PendingRequest {
    /// A free-text question of `tool`.
    pub fn question(tool: impl Into<String>, question: impl Into<String>) -> PendingRequest {
        PendingRequest {
            tool: tool.into(),
            question: question.into(),
            options: Vec::new(),
            output_schema: None,
        }
    }
}

/// A stored question and, once given, its answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PendingInput {
    pub id: PendingInputId,
    /// The tool call that asked, so the answer becomes its tool result.
    pub tool_call_id: String,
    /// What was asked.
    pub request: PendingRequest,
    pub answer: Option<serde_json::Value>,
    pub created_at_ms: i64,
    pub answered_at_ms: Option<i64>,
}

impl PendingInput {
    pub fn is_open(&self) -> bool {
        self.answer.is_none()
    }
}
