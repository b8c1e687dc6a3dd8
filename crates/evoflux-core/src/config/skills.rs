//! `[skills]`: how a turn's implicit skill resolution runs, and with which
//! model. Layered key by key; a repository may set it too.

use serde::{Deserialize, Serialize};

use super::model::ModelRef;

/// `[skills]`: the implicit skill resolver, a pre-model stage that asks a
/// model whether the user's message calls for one of the skills.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillsConfig {
    /// Unset: `speculative` when the resolver's model is a remote one,
    /// `off` for the embedded and scripted providers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolver: Option<ResolverMode>,
    /// The model that decides, as `provider:model` (a small fast one
    /// saves most of the resolver's cost and wait); unset, the session's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolver_model: Option<ModelRef>,
}

impl SkillsConfig {
    pub fn is_unset(&self) -> bool {
        *self == SkillsConfig::default()
    }
}

/// When the implicit skill resolver runs, relative to the turn's first
/// model call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ResolverMode {
    /// Never: the catalog in the system prompt is the only way to a skill.
    Off,
    /// Before the first call, which waits for the decision.
    On,
    /// At the same time as the first call, whose reply is held back until
    /// the decision; a selected skill discards it and the call is made
    /// again with the skill loaded.
    Speculative,
}

impl ResolverMode {
    pub const fn as_str(self) -> &'static str {
        match self {
            ResolverMode::Off => "off",
            ResolverMode::On => "on",
            ResolverMode::Speculative => "speculative",
        }
    }
}
