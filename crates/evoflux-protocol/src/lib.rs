//! What evoflux's parts say to each other, apart from the engine that
//! produces it: a conversation's messages, tool calls and what the provider
//! found on the web, the request a model call is given, and what calls
//! used and cost. Providers
//! translate these to and from their wire formats; the store keeps them;
//! front ends read them. A crate of its own so the store and every front
//! end can depend on the vocabulary without the provider crate or the
//! session engine.

pub mod command;
pub mod events;
pub mod message;
pub mod metadata;
pub mod usage;

pub use message::{
    Citation, Message, ProviderItem, ProviderToolKind, ReasoningEffort, Request, ToolCall,
    ToolChoice, ToolDefinition, WebSearch, WebSource,
};
pub use usage::Usage;
