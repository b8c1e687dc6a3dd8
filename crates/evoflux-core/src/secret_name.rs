//! Which environment variables hold keys: the one rule, read by the
//! export's redaction (values of such variables never reach a script) and
//! by the MCP servers and command tools of a repository (which never take
//! such a variable from the user's environment).

use std::collections::BTreeSet;

use crate::config::HarnessConfig;

/// Whether `name` says its variable holds a key: `*_KEY`, `*_TOKEN`,
/// `*_SECRET`, `*APIKEY`, or `PASSWORD`, `API_KEY` or `SECRET` anywhere in
/// it (case and `-`/`_` do not matter).
pub fn is_key_like(name: &str) -> bool {
    let upper = name.to_ascii_uppercase().replace('-', "_");
    ["_KEY", "_TOKEN", "_SECRET", "APIKEY"]
        .iter()
        .any(|s| upper.ends_with(s))
        || ["PASSWORD", "API_KEY", "SECRET"]
            .iter()
            .any(|s| upper.contains(s))
}

/// The variables that hold keys for a configuration: every provider's
/// `api_key_env`, whatever it is called, and every key-like name
/// ([`is_key_like`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyVariables {
    named: BTreeSet<String>,
}

impl KeyVariables {
    /// The key variables of `config`'s providers, and every key-like name.
    pub fn of_config(config: &HarnessConfig) -> KeyVariables {
        KeyVariables {
            named: config
                .providers
                .values()
                .filter_map(|p| p.api_key_env.clone())
                .collect(),
        }
    }

    /// Whether `name` holds a key.
    pub fn contains(&self, name: &str) -> bool {
        self.named.contains(name) || is_key_like(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_like_names_are_recognised_by_their_shape() {
        for yes in [
            "OPENAI_API_KEY",
            "GITHUB_TOKEN",
            "AWS_SECRET_ACCESS_KEY",
            "CLIENT_SECRET",
            "STRIPEAPIKEY",
            "DB_PASSWORD_FILE",
            "my-api-key",
        ] {
            assert!(is_key_like(yes), "{yes}");
        }
        for no in [
            "PATH",
            "HOME",
            "MONKEY",
            "TOKENIZERS_PARALLELISM",
            "KEYBOARD",
        ] {
            assert!(!is_key_like(no), "{no}");
        }
    }

    #[test]
    fn a_providers_key_variable_counts_whatever_its_name() {
        let mut config = HarnessConfig::embedded();
        if let Some(p) = config.providers.values_mut().next() {
            p.api_key_env = Some("LLM_CREDS".into());
        }
        let keys = KeyVariables::of_config(&config);
        assert!(keys.contains("LLM_CREDS"));
        assert!(keys.contains("OPENAI_API_KEY"));
        assert!(!keys.contains("LLM_URL"));
        assert!(!KeyVariables::default().contains("LLM_CREDS"));
    }
}
