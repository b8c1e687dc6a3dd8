//! What a provider stream yields.
//!
//! A stream is a sequence of deltas followed by a fixed tail: every
//! completed [`ToolCall`], then [`Usage`] (when the server reported it),
//! then exactly one [`StreamEvent::Stop`], then [`StreamEvent::Done`].
//! Consumers that only want the final message use [`crate::collect`].

use serde::{Deserialize, Serialize};

use crate::message::{ProviderItem, ToolCall};

/// One streamed event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamEvent {
    /// A piece of assistant text, to show as it arrives.
    TextDelta { text: String },
    /// A piece of a tool call as the server sent it. `index` keys the call
    /// within this response; `id` and `name` arrive once, usually first.
    ToolCallDelta {
        index: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        arguments: String,
    },
    /// A tool call assembled from its deltas, with parsed arguments.
    ToolCall { call: ToolCall },
    /// A tool call whose argument text is not JSON. It is the model's
    /// mistake, not the stream's: the call (with empty arguments) belongs
    /// to the assistant message, and the harness answers it with `error`
    /// so the model can correct itself.
    InvalidToolCall {
        call: ToolCall,
        /// The argument text exactly as the model sent it.
        raw_arguments: String,
        /// Why it does not parse.
        error: String,
    },
    /// Something the provider produced besides text and function calls
    /// (a reasoning item, a server-tool block, a web search it ran, a
    /// citation): it belongs to the assistant message, in stream order.
    ProviderItem { item: ProviderItem },
    /// Token counts for the whole call.
    Usage { usage: Usage },
    /// Why the model stopped.
    Stop { reason: StopReason },
    /// The stream finished cleanly; nothing follows.
    Done,
}

/// Token counts reported by the server.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Input tokens served from the provider's prompt cache (part of
    /// `input_tokens`), when the server says.
    #[serde(default)]
    pub cached_input_tokens: u64,
    /// Input tokens written to the provider's prompt cache by this call
    /// (part of `input_tokens`; Anthropic prices them apart).
    #[serde(default)]
    pub cache_write_input_tokens: u64,
    /// Searches the provider ran for this call (its own `web_search`
    /// tool), which it bills apart from tokens.
    #[serde(default)]
    pub web_search_requests: u64,
}

/// Why generation stopped, normalized across providers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model finished its answer.
    EndTurn,
    /// The model wants its tool calls run.
    ToolUse,
    /// `max_tokens` cut the answer short.
    MaxTokens,
    /// A stop sequence ended the answer.
    StopSequence,
    /// The provider withheld or refused the content.
    ContentFilter,
    /// The provider paused a long turn of its own tools (Anthropic's
    /// `pause_turn`): sending the conversation back as it is, the answer
    /// last, lets it go on.
    Paused,
}

impl StopReason {
    pub const fn as_str(self) -> &'static str {
        match self {
            StopReason::EndTurn => "end_turn",
            StopReason::ToolUse => "tool_use",
            StopReason::MaxTokens => "max_tokens",
            StopReason::StopSequence => "stop_sequence",
            StopReason::ContentFilter => "content_filter",
            StopReason::Paused => "paused",
        }
    }
}
