//! The benchmark suite of evoflux, as a library: a fake model server that
//! speaks the three wires evoflux talks to (OpenAI Chat Completions, OpenAI
//! Responses, Anthropic Messages), simulates the providers' prefix caches,
//! follows a scripted conversation and records what every request cost in
//! bytes and tokens. The `evoflux-bench` binary drives a harness binary
//! against it.
//!
//! Nothing here links evoflux itself: a harness is measured from outside,
//! through its HTTP requests and its process, so the same figures can be
//! taken for other tools.

pub mod cache;
pub mod long_session;
pub mod pricing;
pub mod prompt;
pub mod scenario;
pub mod server;
pub mod sse;

use serde::Serialize;

/// One of the provider wires the fake server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Wire {
    /// OpenAI Chat Completions, `POST /v1/chat/completions`.
    Chat,
    /// OpenAI Responses, `POST /v1/responses`.
    Responses,
    /// Anthropic Messages, `POST /v1/messages`.
    Anthropic,
}

impl Wire {
    pub const ALL: [Wire; 3] = [Wire::Chat, Wire::Responses, Wire::Anthropic];

    pub const fn as_str(self) -> &'static str {
        match self {
            Wire::Chat => "chat",
            Wire::Responses => "responses",
            Wire::Anthropic => "anthropic",
        }
    }
}

impl std::fmt::Display for Wire {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
