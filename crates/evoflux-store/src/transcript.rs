//! The durable transcript: what was said and done, in order.
//!
//! The transcript is authoritative for reload, audit and UI rendering, so a
//! tool result keeps its artifact metadata here exactly as the live event
//! carried it.

use serde::{Deserialize, Serialize};

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub enum Message {
    User {
        content: String,
    },
    Assistant {
        content: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
    },
    Tool {
        tool_call_id: String,
        content: String,
        #[serde(default)]
        is_error: bool,
        /// Artifact metadata (locator, sizes, head/tail) as the tool hook
        /// recorded it; opaque to the store.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        artifact: Option<serde_json::Value>,
    },
}

/// A tool call the model asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: serde_json::Value,
}

/// Who a message is from; also stored in its own column so rows can be
/// filtered without parsing bodies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EntryRole {
    User,
    Assistant,
    Tool,
}

impl EntryRole {
    pub const fn as_str(self) -> &'static str {
        match self {
            EntryRole::User => "user",
            EntryRole::Assistant => "assistant",
            EntryRole::Tool => "tool",
        }
    }
}

impl Message {
    pub fn role(&self) -> EntryRole {
        match self {
            Message::User { .. } => EntryRole::User,
            Message::Assistant { .. } => EntryRole::Assistant,
            Message::Tool { .. } => EntryRole::Tool,
        }
    }
}

/// A stored message with its position.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TranscriptEntry {
    /// 1-based, gapless within a session.
    pub seq: u64,
    pub created_at_ms: i64,
    pub message: Message,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_shape_is_tagged_by_role() {
        let m = Message::Tool {
            tool_call_id: "c1".into(),
            content: "ok".into(),
            is_error: false,
            artifact: Some(serde_json::json!({"path": "a/1.log"})),
        };
        let v = serde_json::to_value(&m).unwrap();
        assert_eq!(v["role"], "tool");
        assert_eq!(v["artifact"]["path"], "a/1.log");
        assert_eq!(m.role().as_str(), "tool");
        let back: Message = serde_json::from_value(v).unwrap();
        assert_eq!(back, m);
    }
}
