//! The layers of the configuration: the embedded defaults, the admin's
//! file, the user's, each repository's ([`ConfigScope`]), and how one
//! checked file ([`ConfigLayer`]) is laid over the ones below it into the
//! effective [`LoadedConfig`], with where each part came from.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::HarnessConfig;
use super::approval::Approval;
use super::compat::CompatFile;
use super::limits::LimitsConfig;
use super::model::ModelSection;
use super::providers::ProviderConfig;
use super::skills::SkillsConfig;
use super::storage::StorageConfig;
use super::store::StoreConfig;
use super::teams::TeamsConfig;
use crate::diagnostic::{Diagnostic, Diagnostics};
use crate::price::Price;
use crate::trust::Trust;

/// Where each part of the effective configuration came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ConfigOrigin {
    Embedded,
    Admin,
    User,
    Project,
}

/// Which layer a config file belongs to, and so what it may say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigScope {
    /// Machine-wide policy (`/etc/evoflux/config.toml`).
    Admin,
    /// The user's own file.
    User,
    /// A repository's `.evoflux/config.toml`.
    Project(Trust),
}

impl ConfigScope {
    pub const fn origin(self) -> ConfigOrigin {
        match self {
            ConfigScope::Admin => ConfigOrigin::Admin,
            ConfigScope::User => ConfigOrigin::User,
            ConfigScope::Project(_) => ConfigOrigin::Project,
        }
    }
}

/// One file that contributed to the effective configuration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigSource {
    pub path: PathBuf,
    pub origin: ConfigOrigin,
}

/// The effective configuration plus its provenance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoadedConfig {
    /// The files that were merged, lowest precedence first.
    pub files: Vec<ConfigSource>,
    pub config: HarnessConfig,
    pub model_origin: ConfigOrigin,
    /// The layer that set `[skills] resolver_model`, when one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolver_model_origin: Option<ConfigOrigin>,
    pub provider_origins: BTreeMap<String, ConfigOrigin>,
    /// The file that set `[mcp] default_grant`, when one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_grant_source: Option<ConfigSource>,
}

/// One checked config file, ready to be layered over the ones below it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigLayer {
    pub(super) source: ConfigSource,
    pub(super) model: Option<ModelSection>,
    pub(super) providers: BTreeMap<String, ProviderConfig>,
    pub(super) approval: BTreeMap<String, Approval>,
    pub(super) storage: Option<StorageConfig>,
    pub(super) store: Option<StoreConfig>,
    pub(super) compat: Option<CompatFile>,
    pub(super) prices: BTreeMap<String, Price>,
    pub(super) limits: LimitsConfig,
    pub(super) teams: TeamsConfig,
    pub(super) skills: Option<SkillsConfig>,
    /// What the file's `[mcp]` sets.
    pub(super) mcp: super::mcp::McpLayer,
}

impl LoadedConfig {
    pub fn embedded() -> LoadedConfig {
        let config = HarnessConfig::embedded();
        LoadedConfig {
            files: Vec::new(),
            provider_origins: config
                .providers
                .keys()
                .map(|k| (k.clone(), ConfigOrigin::Embedded))
                .collect(),
            model_origin: ConfigOrigin::Embedded,
            resolver_model_origin: None,
            default_grant_source: None,
            config,
        }
    }

    /// The file of the highest precedence that contributed, if any.
    pub fn file(&self) -> Option<&Path> {
        self.files.last().map(|f| f.path.as_path())
    }

    /// Lays `layer` over what is loaded so far. A provider replaces the one
    /// of its name whole; a user or admin `[approval]` entry replaces the
    /// one below it, a repository's only raises the floor.
    pub fn apply(&mut self, layer: ConfigLayer) {
        let origin = layer.source.origin;
        if let Some(model) = layer.model {
            self.config.model = model;
            self.model_origin = origin;
        }
        for (name, provider) in layer.providers {
            self.provider_origins.insert(name.clone(), origin);
            self.config.providers.insert(name, provider);
        }
        // Key by key: a repository may turn the resolver off for its
        // skills or pick which of the configured models decides.
        if let Some(skills) = layer.skills {
            let current = &mut self.config.skills;
            current.resolver = skills.resolver.or(current.resolver);
            if let Some(model) = skills.resolver_model {
                current.resolver_model = Some(model);
                self.resolver_model_origin = Some(origin);
            }
        }
        match origin {
            ConfigOrigin::Project => {
                for (tool, policy) in layer.approval {
                    let floor = self.config.approval_floor.entry(tool).or_insert(policy);
                    *floor = (*floor).max(policy);
                }
                // A repository may lower what a session may spend, never
                // raise it.
                if let Some(mine) = layer.limits.max_cost_usd {
                    let current = &mut self.config.limits.max_cost_usd;
                    *current = Some(current.map_or(mine, |c| c.min(mine)));
                }
                // Nor let delegation go deeper.
                if let Some(mine) = layer.teams.max_depth {
                    let current = &mut self.config.teams.max_depth;
                    *current = Some(current.map_or(mine, |c| c.min(mine)));
                }
            }
            ConfigOrigin::Embedded | ConfigOrigin::Admin | ConfigOrigin::User => {
                self.config.approval.extend(layer.approval);
                self.config.prices.extend(layer.prices);
                if let Some(max) = layer.limits.max_cost_usd {
                    self.config.limits.max_cost_usd = Some(max);
                }
                if let Some(depth) = layer.teams.max_depth {
                    self.config.teams.max_depth = Some(depth);
                }
                // Key by key, as the rest of the file layers.
                if let Some(storage) = layer.storage {
                    let current = &mut self.config.storage;
                    current.max_age_days = storage.max_age_days.or(current.max_age_days);
                    current.max_total_mib = storage.max_total_mib.or(current.max_total_mib);
                }
                if let Some(store) = layer.store {
                    let current = &mut self.config.store;
                    current.url = store.url.or(current.url.take());
                    current.artifacts = store.artifacts.or(current.artifacts.take());
                }
                if let Some(grant) = layer.mcp.default_grant {
                    self.config.mcp.default_grant = grant;
                    self.default_grant_source = Some(layer.source.clone());
                }
                if let Some(mib) = layer.mcp.max_result_mib {
                    self.config.mcp.max_result_mib = Some(mib);
                }
                if let Some(compat) = layer.compat {
                    let current = &mut self.config.compat;
                    current.instructions = compat.instructions.unwrap_or(current.instructions);
                    current.permissions = compat.permissions.unwrap_or(current.permissions);
                    if let Some(mcp) = compat.mcp {
                        current.mcp = mcp;
                    }
                }
            }
        }
        self.files.push(layer.source);
    }

    /// Checks what only the merged result can show: that the default model
    /// and the skill resolver's model name defined providers. `false` when
    /// an error was pushed.
    pub fn check(&self, diags: &mut Diagnostics) -> bool {
        let mut refs = vec![(
            "model.default",
            &self.config.model.default,
            self.model_origin,
        )];
        if let (Some(model), Some(origin)) = (
            &self.config.skills.resolver_model,
            self.resolver_model_origin,
        ) {
            refs.push(("skills.resolver_model", model, origin));
        }
        let mut ok = true;
        for (field, model, origin) in refs {
            if self.config.providers.contains_key(&model.provider) {
                continue;
            }
            ok = false;
            let known: Vec<&str> = self.config.providers.keys().map(String::as_str).collect();
            let mut d = Diagnostic::error(
                "config/provider-unknown",
                format!(
                    "{field} `{model}` names provider `{}`, which is not defined: add \
                     [providers.{}] or use one of {}",
                    model.provider,
                    model.provider,
                    known.join(", ")
                ),
            )
            .with_field(field);
            if let Some(file) = self.files.iter().rev().find(|f| f.origin == origin) {
                d = d.with_file(&file.path);
            }
            diags.push(d);
        }
        ok
    }
}
