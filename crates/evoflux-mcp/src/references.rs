//! Environment references in the user's own MCP entries: `${VAR}` and
//! `${VAR:-default}` in `args`, `env` values and header values (where
//! Claude Code expands them too) take their value
//! from evoflux's environment when the server starts, so a token lives in
//! the environment and never in a file (`Authorization: Bearer
//! ${GITHUB_TOKEN}`). The value is substituted into the launch only; the
//! definition, listings and inspection keep the reference.
//!
//! Plugin entries never expand references (a package must not read the
//! user's environment), and `$VAR` without braces is text.

use std::collections::BTreeMap;

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
}
