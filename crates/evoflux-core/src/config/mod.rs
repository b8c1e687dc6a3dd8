//! `config.toml`: harness defaults (the default model and the providers).
//!
//! The file is optional: without it evoflux runs on its embedded defaults.
//! Everything in it is checked strictly, because a misspelled key that is
//! silently ignored is a setting the user believes in and does not have:
//! unknown keys are errors that name their full key path.
//!
//! ```toml
//! [model]
//! default = "openai:gpt-4o-mini"
//!
//! [providers.openai]
//! kind = "openai"
//! base_url = "https://api.openai.com/v1"
//! api_key_env = "OPENAI_API_KEY"
//! context_window = 128000
//! ```
//!
//! A provider defined in the file replaces the embedded provider of the
//! same name as a whole; fields are not merged, so what `config show`
//! prints is exactly what runs.
//!
//! Files are layered: the admin file, then the user's, then each
//! repository's `.evoflux/config.toml`. A repository is someone else's text,
//! so its layer is restricted ([`ConfigScope::Project`]): it may choose a
//! default model and tighten `[approval]`, but it can never name a key
//! variable (a key only goes to the base URL it was configured with by the
//! user or the admin), and while the repository is untrusted it cannot
//! define providers at all.
//!
//! The schema is one module per table (`providers`, `model`, `approval`,
//! `storage`, `store`, `compat`, `prices`, `limits`, `teams`, `skills`, `mcp`;
//! `[agents.external]` is [`crate::external_agent`]'s); reading a file is
//! `file`, laying files over each other `layer`. The modules are private and
//! everything is re-exported here, so `evoflux_core::config::X` is the one
//! path to each type.

mod approval;
mod compat;
mod file;
mod layer;
mod limits;
mod mcp;
mod model;
mod prices;
mod providers;
mod skills;
mod storage;
mod store;
mod teams;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::price::{Price, PriceTable};

pub use approval::Approval;
pub use compat::{CompatConfig, ForeignMcp};
pub use file::{load, load_layers, parse, parse_layer, read_layer};
pub use layer::{ConfigLayer, ConfigOrigin, ConfigScope, ConfigSource, LoadedConfig};
pub use limits::LimitsConfig;
pub use mcp::{DefaultGrant, McpConfig};
pub use model::{ModelRef, ModelSection, ParseModelRefError};
pub use providers::{ProviderConfig, ProviderKind, ProviderLimits, ReasoningEffort, WireApi};
pub use skills::{ResolverMode, SkillsConfig};
pub use storage::StorageConfig;
pub use store::StoreConfig;
pub use teams::{DEFAULT_MAX_DEPTH, MAX_DEPTH_INVALID, MAX_MAX_DEPTH, TeamsConfig};

/// The effective harness configuration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HarnessConfig {
    pub model: ModelSection,
    pub providers: BTreeMap<String, ProviderConfig>,
    /// `[approval]`: tool name → policy, overriding the tool's own (e.g.
    /// `shell = "always"` to be asked before every command in `chat`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub approval: BTreeMap<String, Approval>,
    /// Repositories' `[approval]` entries: floors that only tighten. The
    /// effective policy of a tool is the stricter of this and what the user
    /// (or the tool itself) says.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub approval_floor: BTreeMap<String, Approval>,
    /// `[storage]`: how long sessions and their artifacts are kept.
    #[serde(default, skip_serializing_if = "StorageConfig::is_unset")]
    pub storage: StorageConfig,
    /// `[store]`: which database holds the sessions.
    #[serde(default, skip_serializing_if = "StoreConfig::is_unset")]
    pub store: StoreConfig,
    /// `[compat]`: which other harnesses' files evoflux reads.
    #[serde(default, skip_serializing_if = "CompatConfig::is_default")]
    pub compat: CompatConfig,
    /// `[prices]`: what models cost, over the built-in table (see
    /// [`crate::price::PriceTable::lookup`] for the keys).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub prices: BTreeMap<String, Price>,
    /// `[limits]`: what one session may spend.
    #[serde(default, skip_serializing_if = "LimitsConfig::is_unset")]
    pub limits: LimitsConfig,
    /// `[teams]`: how deep delegation goes.
    #[serde(default, skip_serializing_if = "TeamsConfig::is_unset")]
    pub teams: TeamsConfig,
    /// `[skills]`: how a turn's implicit skill resolution runs.
    #[serde(default, skip_serializing_if = "SkillsConfig::is_unset")]
    pub skills: SkillsConfig,
    /// `[mcp]`: which MCP servers each mode's default lead is granted.
    #[serde(default, skip_serializing_if = "McpConfig::is_unset")]
    pub mcp: McpConfig,
}

impl HarnessConfig {
    /// The prices sessions are costed with.
    pub fn price_table(&self) -> PriceTable {
        PriceTable::new(self.prices.clone())
    }
}

/// The default model evoflux runs when nothing is configured: the small
/// embedded local model, so a fresh machine needs no key and no server.
pub const EMBEDDED_DEFAULT_MODEL: &str = "local:smollm2-135m-instruct";

impl HarnessConfig {
    /// The configuration compiled into the binary.
    pub fn embedded() -> HarnessConfig {
        let provider = |kind, base_url: Option<&str>, key: Option<&str>| ProviderConfig {
            kind,
            base_url: base_url.map(str::to_owned),
            api_key_env: key.map(str::to_owned),
            context_window: None,
            model_path: None,
            limits: Default::default(),
            wire_api: None,
            reasoning_effort: None,
            images: None,
            audio: None,
        };
        let providers = BTreeMap::from([
            (
                "openai".to_owned(),
                provider(
                    ProviderKind::Openai,
                    Some("https://api.openai.com/v1"),
                    Some("OPENAI_API_KEY"),
                ),
            ),
            (
                "anthropic".to_owned(),
                provider(
                    ProviderKind::Anthropic,
                    Some("https://api.anthropic.com"),
                    Some("ANTHROPIC_API_KEY"),
                ),
            ),
            (
                "local".to_owned(),
                ProviderConfig {
                    context_window: Some(8192),
                    ..provider(ProviderKind::Local, None, None)
                },
            ),
            (
                "scripted".to_owned(),
                provider(ProviderKind::Scripted, None, None),
            ),
        ]);
        HarnessConfig {
            model: ModelSection {
                default: ModelRef {
                    provider: "local".to_owned(),
                    model: "smollm2-135m-instruct".to_owned(),
                },
            },
            providers,
            approval: BTreeMap::new(),
            approval_floor: BTreeMap::new(),
            storage: StorageConfig::default(),
            store: StoreConfig::default(),
            compat: CompatConfig::default(),
            prices: BTreeMap::new(),
            limits: LimitsConfig::default(),
            teams: TeamsConfig::default(),
            skills: SkillsConfig::default(),
            mcp: McpConfig::default(),
        }
    }
}
