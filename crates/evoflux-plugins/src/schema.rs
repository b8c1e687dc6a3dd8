//! The published Agent Plugins schema identifiers and the small grammars the
//! schemas state (plugin names, extension namespaces).
//!
//! The schemas are encoded here as code rather than vendored as JSON Schema:
//! the spec text gives two non-fatal exceptions (unknown root fields and a
//! non-object `extensions`) that a generic schema validator cannot express,
//! and a package must never make us fetch anything at load time.

use serde::{Deserialize, Serialize};

/// `$schema` of a 1.0.0 `plugin.json`.
pub const PLUGIN_SCHEMA_1_0_0: &str = "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json";
/// `$schema` of a 1.0.0 `mcp.json`.
pub const MCP_SCHEMA_1_0_0: &str = "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json";

/// The Agent Plugins specification releases evoflux implements. Closed: a
/// `$schema` naming any other release rejects the manifest (or disables MCP),
/// because its rules are unknown to us.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum SpecVersion {
    #[serde(rename = "1.0.0")]
    V1_0_0,
}

impl SpecVersion {
    /// Every release we understand, oldest first.
    pub const ALL: [SpecVersion; 1] = [SpecVersion::V1_0_0];

    pub const fn as_str(self) -> &'static str {
        match self {
            SpecVersion::V1_0_0 => "1.0.0",
        }
    }

    pub const fn plugin_schema(self) -> &'static str {
        match self {
            SpecVersion::V1_0_0 => PLUGIN_SCHEMA_1_0_0,
        }
    }

    pub const fn mcp_schema(self) -> &'static str {
        match self {
            SpecVersion::V1_0_0 => MCP_SCHEMA_1_0_0,
        }
    }

    /// The release whose `plugin.json` schema id is exactly `id`.
    pub fn from_plugin_schema(id: &str) -> Option<SpecVersion> {
        Self::ALL.into_iter().find(|v| v.plugin_schema() == id)
    }

    /// The release whose `mcp.json` schema id is exactly `id`.
    pub fn from_mcp_schema(id: &str) -> Option<SpecVersion> {
        Self::ALL.into_iter().find(|v| v.mcp_schema() == id)
    }
}

/// Longest plugin name the schema allows.
pub const MAX_PLUGIN_NAME_LEN: usize = 64;

/// Why a plugin name breaks the grammar
/// `^(?!.*(?:--|\.\.))[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?$`, length 1 to 64.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    #[error("the name is empty")]
    Empty,
    #[error("the name is longer than {MAX_PLUGIN_NAME_LEN} characters")]
    TooLong,
    #[error("the name may contain only lowercase ASCII letters, digits, `-` and `.`")]
    InvalidCharacter,
    #[error("the name must start and end with a lowercase letter or digit")]
    BadEdge,
    #[error("the name must not contain `--` or `..`")]
    DoubledSeparator,
}

/// Checks a plugin name against the 1.0.0 grammar. The look-ahead of the
/// published pattern (no `--`, no `..`) is checked separately because it
/// is a rule of its own in the spec text.
pub fn check_plugin_name(name: &str) -> Result<(), NameError> {
    if name.is_empty() {
        return Err(NameError::Empty);
    }
    if name.len() > MAX_PLUGIN_NAME_LEN {
        return Err(NameError::TooLong);
    }
    let bytes = name.as_bytes();
    if !bytes
        .iter()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-' || *b == b'.')
    {
        return Err(NameError::InvalidCharacter);
    }
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    if !alnum(bytes[0]) || !alnum(bytes[bytes.len() - 1]) {
        return Err(NameError::BadEdge);
    }
    if name.contains("--") || name.contains("..") {
        return Err(NameError::DoubledSeparator);
    }
    Ok(())
}

/// Whether `key` is a reverse-DNS namespace such as `com.example.client`:
/// at least two dot-separated labels of ASCII letters, digits and inner
/// hyphens. Extension members under any other key carry no meaning.
pub fn is_extension_namespace(key: &str) -> bool {
    let labels: Vec<&str> = key.split('.').collect();
    labels.len() >= 2
        && labels.iter().all(|label| {
            let b = label.as_bytes();
            !b.is_empty()
                && b.len() <= 63
                && b[0].is_ascii_alphanumeric()
                && b[b.len() - 1].is_ascii_alphanumeric()
                && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_from_the_spec() {
        for good in ["my-plugin", "acme.tools", "lint3r", "a", "a1.b-c"] {
            assert_eq!(check_plugin_name(good), Ok(()), "{good}");
        }
        assert_eq!(check_plugin_name(""), Err(NameError::Empty));
        assert_eq!(
            check_plugin_name("My-Plugin"),
            Err(NameError::InvalidCharacter)
        );
        assert_eq!(check_plugin_name("-start"), Err(NameError::BadEdge));
        assert_eq!(check_plugin_name("end."), Err(NameError::BadEdge));
        assert_eq!(
            check_plugin_name("has--double"),
            Err(NameError::DoubledSeparator)
        );
        assert_eq!(
            check_plugin_name("too.many..dots"),
            Err(NameError::DoubledSeparator)
        );
        assert_eq!(check_plugin_name(&"a".repeat(64)), Ok(()));
        assert_eq!(check_plugin_name(&"a".repeat(65)), Err(NameError::TooLong));
        assert_eq!(
            check_plugin_name("snake_case"),
            Err(NameError::InvalidCharacter)
        );
    }

    #[test]
    fn namespaces() {
        for good in [
            "com.github.awesome-copilot",
            "org.evoelsewhere.evoflux.credentials",
            "evoflux.mcp",
        ] {
            assert!(is_extension_namespace(good), "{good}");
        }
        for bad in ["", "single", "a..b", "-a.b", "a.b-", "a b.c", ".a.b"] {
            assert!(!is_extension_namespace(bad), "{bad}");
        }
    }

    #[test]
    fn schema_ids_round_trip() {
        assert_eq!(
            SpecVersion::from_plugin_schema(PLUGIN_SCHEMA_1_0_0),
            Some(SpecVersion::V1_0_0)
        );
        assert_eq!(
            SpecVersion::from_mcp_schema(MCP_SCHEMA_1_0_0),
            Some(SpecVersion::V1_0_0)
        );
        assert_eq!(SpecVersion::from_plugin_schema(MCP_SCHEMA_1_0_0), None);
        assert_eq!(
            SpecVersion::from_plugin_schema(
                "https://agent-plugins.org/schemas/1.1.0/plugin.schema.json"
            ),
            None
        );
    }
}
