//! Transcript entries: the conversation as it happened.
//!
//! Messages are evoflux-model's own [`Message`] — the shape the loop sends
//! to providers — so nothing converts between two message types. What only
//! the transcript needs (position, time, a tool result's artifact metadata)
//! sits beside the message in [`TranscriptEntry`].

pub use evoflux_protocol::{Message, ToolCall};
use serde::{Deserialize, Serialize};

/// Who a message is from; also stored in its own column so rows can be
/// filtered without parsing bodies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EntryRole {
    System,
    User,
    Assistant,
    Tool,
}

impl EntryRole {
    pub const fn as_str(self) -> &'static str {
        match self {
            EntryRole::System => "system",
            EntryRole::User => "user",
            EntryRole::Assistant => "assistant",
            EntryRole::Tool => "tool",
        }
    }

    pub const fn of(message: &Message) -> EntryRole {
        match message {
            Message::System { .. } => EntryRole::System,
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
    /// Artifact metadata (locator, sizes, head/tail) the tool hook recorded
    /// for a tool result; opaque to the store.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub artifact: Option<serde_json::Value>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_follow_the_message() {
        let m = Message::Tool {
            tool_call_id: "c1".into(),
            content: "ok".into(),
            is_error: false,
            media: Vec::new(),
        };
        assert_eq!(EntryRole::of(&m).as_str(), "tool");
        assert_eq!(EntryRole::of(&Message::system("s")), EntryRole::System);
    }
}
