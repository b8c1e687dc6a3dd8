//! The models a user can switch a session to (`/model` in the chat): each
//! configured provider's models the built-in price table knows, the
//! models `[prices]` names, and the configured default. A picker offers
//! these; any other `provider:model` can still be typed.

use std::collections::BTreeSet;

use evoflux_core::config::ProviderKind;

use crate::AppContext;
use crate::session::SessionError;

/// One model a session can run on.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ModelChoice {
    /// `provider:model`, what a session's model is set to.
    pub reference: String,
    /// Where the choice comes from, for the picker's second column.
    pub source: ModelSource,
}

/// Why a model is offered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ModelSource {
    /// `[model] default`.
    Default,
    /// A `[prices]` entry names it.
    Priced,
    /// The built-in price table knows it for the provider's kind.
    Known,
}

impl ModelSource {
    pub const fn as_str(self) -> &'static str {
        match self {
            ModelSource::Default => "default",
            ModelSource::Priced => "priced in config",
            ModelSource::Known => "known model",
        }
    }
}

impl AppContext {
    /// The models of the admin's and the user's configured providers.
    pub fn model_choices(&self) -> Result<Vec<ModelChoice>, SessionError> {
        let config = self.owner_config()?;
        let mut seen = BTreeSet::new();
        let mut out = Vec::new();
        let mut add = |reference: String, source| {
            if seen.insert(reference.clone()) {
                out.push(ModelChoice { reference, source });
            }
        };
        add(config.model.default.to_string(), ModelSource::Default);
        for key in config.prices.keys() {
            if let Some((provider, model)) = key.split_once(':')
                && model != "*"
                && config.providers.contains_key(provider)
            {
                add(key.clone(), ModelSource::Priced);
            }
        }
        for (name, provider) in &config.providers {
            match provider.kind {
                ProviderKind::Openai | ProviderKind::Anthropic => {
                    for model in evoflux_core::price::built_in_models(provider.kind) {
                        add(format!("{name}:{model}"), ModelSource::Known);
                    }
                }
                // A local provider runs the file it names; a scripted one
                // the script a model names: nothing to list.
                ProviderKind::Local | ProviderKind::Scripted => {}
            }
        }
        Ok(out)
    }
}
