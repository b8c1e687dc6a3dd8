//! Environment references in the user's own MCP entries: `${VAR}` and
//! `${VAR:-default}` in `args`, `env` values and header values (where
//! Claude Code expands them too) take their value
//! from evoflux's environment when the server starts, so a token lives in
//! the environment and never in a file (`Authorization: Bearer
//! ${GITHUB_TOKEN}`). The value is substituted into the launch only; the
//! definition, listings and inspection keep the reference.
//!
//! Plugin entries never expand references (a package must not read the
//! user's environment), and `$VAR` without braces is text. A repository's
//! entries expand references, but never to a variable that holds a key
//! ([`key_reference`]): such an entry is not started at all.

use std::collections::BTreeMap;

use evoflux_core::secret_name::KeyVariables;

/// Whether a launch's values may hold environment references. Closed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum References {
    /// The values are sent as written (plugin servers).
    #[default]
    Literal,
    /// `${VAR}` and `${VAR:-default}` take evoflux's environment (the
    /// user's and admin's `mcp.json`, a trusted repository's).
    FromEnvironment,
}

/// A reference to a variable that is not set and has no default.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`${{{name}}}` is not set in evoflux's environment; set it, or give a default as `${{{name}:-value}}`"
)]
pub struct Unset {
    pub name: String,
}

/// Expands the references of `text` from `env`.
pub fn expand(text: &str, env: &BTreeMap<String, String>) -> Result<String, Unset> {
    use evoflux_core::placeholder::{EnvReference, Piece, env_reference, pieces};
    let mut out = String::with_capacity(text.len());
    for piece in pieces(text) {
        match piece {
            Piece::Text(t) => out.push_str(t),
            Piece::Braced { inner, written } => match env_reference(inner) {
                // Not a reference: kept as written.
                None => out.push_str(written),
                Some(EnvReference { name, default }) => match (env.get(name), default) {
                    (Some(value), _) => out.push_str(value),
                    (None, Some(default)) => out.push_str(default),
                    (None, None) => {
                        return Err(Unset {
                            name: name.to_owned(),
                        });
                    }
                },
            },
        }
    }
    Ok(out)
}

/// The first variable that holds a key (a provider's `api_key_env`,
/// `*_KEY`, `*_TOKEN`, …) among the references [`expand`] would fill in
/// `values`. A repository's entry, trusted or not, may never name one: the
/// user's key would reach a server the repository chose.
pub fn key_reference<'a>(
    values: impl IntoIterator<Item = &'a str>,
    keys: &KeyVariables,
) -> Option<&'a str> {
    use evoflux_core::placeholder::{Piece, env_reference, pieces};
    values.into_iter().find_map(|text| {
        pieces(text).find_map(|piece| match piece {
            Piece::Braced { inner, .. } => env_reference(inner)
                .map(|r| r.name)
                .filter(|name| keys.contains(name)),
            Piece::Text(_) => None,
        })
    })
}

/// [`expand`] over every value of a map.
pub fn expand_values(
    values: &BTreeMap<String, String>,
    env: &BTreeMap<String, String>,
) -> Result<BTreeMap<String, String>, Unset> {
    values
        .iter()
        .map(|(k, v)| Ok((k.clone(), expand(v, env)?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_take_the_environment_or_their_default() {
        let env = BTreeMap::from([("TOKEN".to_owned(), "t0k".to_owned())]);
        assert_eq!(expand("Bearer ${TOKEN}", &env).unwrap(), "Bearer t0k");
        assert_eq!(
            expand("${MISSING:-fallback}/x", &env).unwrap(),
            "fallback/x"
        );
        assert_eq!(expand("${MISSING:-}", &env).unwrap(), "");
        assert_eq!(
            expand("$TOKEN ${not a name} ${", &env).unwrap(),
            "$TOKEN ${not a name} ${"
        );
        assert_eq!(expand("${MISSING}", &env).unwrap_err().name, "MISSING");
    }

    #[test]
    fn a_key_variable_is_found_among_the_references_only() {
        let keys = KeyVariables::default();
        let found = |values: &[&'static str]| key_reference(values.iter().copied(), &keys);
        assert_eq!(
            found(&["--x", "Bearer ${GITHUB_TOKEN}"]),
            Some("GITHUB_TOKEN")
        );
        assert_eq!(found(&["${OPENAI_API_KEY:-none}"]), Some("OPENAI_API_KEY"));
        // Text, a name that holds no key, and a braced non-name are not.
        assert_eq!(
            found(&["$GITHUB_TOKEN", "${HOME}/x", "${not a name}"]),
            None
        );
    }
}
