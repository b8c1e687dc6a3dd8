//! `[approval]`: whether a tool call needs the user's approval first, as a
//! tool name → policy table (the user's entries replace the ones below;
//! a repository's only raise a floor, see [`super::LoadedConfig::apply`]).

use serde::{Deserialize, Serialize};

/// Whether a tool call needs the user's approval first (`approval` of a
/// command tool, and `config.toml`'s `[approval]` table for any tool).
/// Ordered from the most permissive to the strictest, so "the stricter of
/// two" is `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Approval {
    /// Runs without asking (inside the sandbox, for commands).
    Never,
    /// Runs without asking inside the sandbox; the model may ask to run
    /// one command outside it, and the user decides.
    OnRequest,
    /// Asks before every call (safe read-only commands excepted).
    Always,
}
