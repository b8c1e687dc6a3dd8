//! Model providers for evoflux.
//!
//! One object-safe [`Provider`] trait streams [`StreamEvent`]s for a
//! [`Request`] over our own [`Message`] types. Implementations:
//!
//! - [`openai`]: Chat Completions over SSE, for OpenAI and any compatible
//!   server (Ollama, vLLM, llama.cpp, LM Studio);
//! - [`responses`]: the OpenAI Responses API over SSE (`kind = "openai"`
//!   with `wire_api = "responses"`);
//! - [`anthropic`]: the Messages API over SSE;
//! - [`scripted`]: replays a YAML script deterministically;
//! - `local` (cargo feature `local`, on by default): a GGUF model run
//!   in-process on the CPU, with constrained decoding for tool calls.
//!   Without the feature [`provider_for`] reports the kind as not available.
//!
//! Remote calls are retried by [`retry`] while nothing has been
//! streamed, and every failure is one of the closed [`ProviderError`] kinds.

pub mod anthropic;
mod assemble;
pub mod bounds;
pub mod error;
pub mod event;
mod http;
#[cfg(feature = "local")]
pub mod local;
pub mod local_models;
pub mod media;
/// The conversation vocabulary lives in `evoflux-protocol`; providers
/// reach it here as before.
pub use evoflux_protocol::message;
pub mod openai;
pub mod provider;
pub mod responses;
pub mod retry;
pub mod scripted;
mod web_wire;
#[cfg(test)]
mod wire_fuzz;

pub use bounds::CallBounds;
pub use error::{
    LocalError, MODEL_SETUP_HINT, ProviderError, ScriptError, SetupError, TimeoutPhase,
};
pub use event::{StopReason, StreamEvent, Usage};
pub use evoflux_protocol::events::CallPurpose;
pub use http::http_client;
pub use message::{
    CacheHints, CacheRetention, Citation, Media, MediaKind, Message, ProviderItem,
    ProviderToolKind, ReasoningEffort, Request, ToolCall, ToolChoice, ToolDefinition, WebSearch,
    WebSource,
};
pub use provider::{
    Completion, EnvLookup, EventStream, Provider, ProviderOptions, collect, provider_for, resolve,
};
pub use retry::{RetryPolicy, Sleeper};
