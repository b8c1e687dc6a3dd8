//! Model providers for evoflux.
//!
//! One object-safe [`Provider`] trait streams [`StreamEvent`]s for a
//! [`Request`] over our own [`Message`] types. Implementations:
//!
//! - [`openai`]: Chat Completions over SSE, for OpenAI and any compatible
//!   server (Ollama, vLLM, llama.cpp, LM Studio);
//! - [`anthropic`]: the Messages API over SSE;
//! - [`scripted`]: replays a YAML script deterministically.
//!
//! The `local` kind is built elsewhere; [`provider_for`] reports it as not
//! available. Remote calls are retried by [`retry`] while nothing has been
//! streamed, and every failure is one of the closed [`ProviderError`] kinds.

pub mod anthropic;
mod assemble;
pub mod error;
pub mod event;
mod http;
pub mod message;
pub mod openai;
pub mod provider;
pub mod retry;
pub mod scripted;

pub use error::{ProviderError, ScriptError, SetupError};
pub use event::{StopReason, StreamEvent, Usage};
pub use http::http_client;
pub use message::{Message, Request, ToolCall, ToolDefinition};
pub use provider::{
    Completion, EnvLookup, EventStream, Provider, ProviderOptions, collect, provider_for, resolve,
};
pub use retry::{RetryPolicy, Sleeper};
