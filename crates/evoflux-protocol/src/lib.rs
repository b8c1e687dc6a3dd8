//! What evoflux's parts say to each other, apart from the engine that
//! produces it: a session's events ([`events`]), a conversation's messages
//! and a model call's request ([`message`]), what is stored beside a tool
//! result ([`metadata`], [`command`]) and what calls used and cost
//! ([`usage`]). Providers translate messages to and from their wire
//! formats; the store keeps them; front ends read the events. A crate of
//! its own, on `evoflux-core` and serde alone, so the store and every front
//! end can depend on the vocabulary without the provider crate or the
//! session engine.

pub mod command;
pub mod events;
pub mod message;
pub mod metadata;
pub mod usage;

pub use events::{Event, EventKind};
pub use message::{
    CacheHints, CacheRetention, Citation, Media, MediaKind, MediaRef, Message, ProviderItem,
    ProviderToolKind, ReasoningEffort, Request, ToolCall, ToolChoice, ToolDefinition, WebSearch,
    WebSource,
};
pub use usage::Usage;
