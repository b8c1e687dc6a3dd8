//! `[model]`: the default model, named as `provider:model` ([`ModelRef`],
//! the one grammar every model reference in evoflux is written in).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The `[model]` table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelSection {
    /// `provider:model`.
    pub default: ModelRef,
}

/// A `provider:model` string, split at the first colon (model names such as
/// `llama3:8b` may contain more colons).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ModelRef {
    pub provider: String,
    pub model: String,
}

impl fmt::Display for ModelRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.provider, self.model)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{given}` is not a model reference: write `provider:model`, such as `openai:gpt-4o-mini`")]
pub struct ParseModelRefError {
    pub given: String,
}

impl FromStr for ModelRef {
    type Err = ParseModelRefError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || ParseModelRefError {
            given: s.to_owned(),
        };
        let (provider, model) = s.trim().split_once(':').ok_or_else(bad)?;
        let provider_ok = provider
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_lowercase())
            && provider
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
        if !provider_ok || model.trim().is_empty() || model.chars().any(char::is_whitespace) {
            return Err(bad());
        }
        Ok(ModelRef {
            provider: provider.to_owned(),
            model: model.to_owned(),
        })
    }
}

impl Serialize for ModelRef {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ModelRef {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}
