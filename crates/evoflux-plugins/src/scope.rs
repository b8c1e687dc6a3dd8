//! Failure boundaries of a plugin package and diagnostics tagged with them.
//!
//! The spec isolates failures: a manifest problem rejects the package, a bad
//! skill skips only that skill, a bad `mcp.json` disables only MCP, a bad
//! server skips only that server. Every diagnostic therefore carries the
//! boundary it belongs to as a typed [`Scope`], so callers decide validity
//! by scope instead of by reading codes or prose.

use std::fmt;
use std::str::FromStr;

use evoflux_core::{Diagnostic, Diagnostics};
use serde::{Deserialize, Serialize};

/// The failure boundary a diagnostic belongs to. Serialized as `package`,
/// `manifest`, `skills`, `skill:<dir>`, `mcp` or `mcp:<name>`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum Scope {
    /// The package tree as a whole (root, limits, links).
    Package,
    /// `plugin.json`.
    Manifest,
    /// The `skills/` location itself.
    Skills,
    /// One skill, named by its folder under `skills/`.
    Skill(String),
    /// `mcp.json` as a document.
    Mcp,
    /// One entry of `mcpServers`.
    McpServer(String),
}

impl Scope {
    /// Whether an error in this scope rejects the whole package (the spec's
    /// fatal boundary); every other scope only disables a component.
    pub const fn rejects_package(&self) -> bool {
        match self {
            Scope::Package | Scope::Manifest => true,
            Scope::Skills | Scope::Skill(_) | Scope::Mcp | Scope::McpServer(_) => false,
        }
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scope::Package => f.write_str("package"),
            Scope::Manifest => f.write_str("manifest"),
            Scope::Skills => f.write_str("skills"),
            Scope::Skill(dir) => write!(f, "skill:{dir}"),
            Scope::Mcp => f.write_str("mcp"),
            Scope::McpServer(name) => write!(f, "mcp:{name}"),
        }
    }
}

impl From<Scope> for String {
    fn from(scope: Scope) -> String {
        scope.to_string()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown diagnostic scope `{0}`")]
pub struct ScopeParseError(String);

impl FromStr for Scope {
    type Err = ScopeParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "package" => Ok(Scope::Package),
            "manifest" => Ok(Scope::Manifest),
            "skills" => Ok(Scope::Skills),
            "mcp" => Ok(Scope::Mcp),
            _ => {
                if let Some(dir) = s.strip_prefix("skill:") {
                    Ok(Scope::Skill(dir.to_owned()))
                } else if let Some(name) = s.strip_prefix("mcp:") {
                    Ok(Scope::McpServer(name.to_owned()))
                } else {
                    Err(ScopeParseError(s.to_owned()))
                }
            }
        }
    }
}

impl TryFrom<String> for Scope {
    type Error = ScopeParseError;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

/// A diagnostic and the failure boundary it belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScopedDiagnostic {
    pub scope: Scope,
    #[serde(flatten)]
    pub diagnostic: Diagnostic,
}

impl ScopedDiagnostic {
    pub fn new(scope: Scope, diagnostic: Diagnostic) -> Self {
        ScopedDiagnostic { scope, diagnostic }
    }

    pub fn code(&self) -> &str {
        &self.diagnostic.code
    }

    pub fn is_error(&self) -> bool {
        self.diagnostic.is_error()
    }
}

/// Helpers over a list of scoped diagnostics.
pub trait ScopedDiagnosticsExt {
    /// Whether any diagnostic carries `code` in `scope`.
    fn has(&self, scope: &Scope, code: &str) -> bool;
    /// Whether any error rejects the package.
    fn rejects_package(&self) -> bool;
    /// The plain diagnostics, for sinks that do not know scopes.
    fn to_diagnostics(&self) -> Diagnostics;
}

impl ScopedDiagnosticsExt for [ScopedDiagnostic] {
    fn has(&self, scope: &Scope, code: &str) -> bool {
        self.iter().any(|d| &d.scope == scope && d.code() == code)
    }

    fn rejects_package(&self) -> bool {
        self.iter()
            .any(|d| d.is_error() && d.scope.rejects_package())
    }

    fn to_diagnostics(&self) -> Diagnostics {
        self.iter().map(|d| d.diagnostic.clone()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_round_trip_as_strings() {
        for (scope, text) in [
            (Scope::Package, "package"),
            (Scope::Manifest, "manifest"),
            (Scope::Skills, "skills"),
            (Scope::Skill("a:b".into()), "skill:a:b"),
            (Scope::Mcp, "mcp"),
            (Scope::McpServer("srv".into()), "mcp:srv"),
        ] {
            assert_eq!(scope.to_string(), text);
            assert_eq!(text.parse::<Scope>(), Ok(scope));
        }
        assert!("plugin".parse::<Scope>().is_err());
    }

    #[test]
    fn scoped_diagnostic_serializes_flat() {
        let d = ScopedDiagnostic::new(
            Scope::McpServer("x".into()),
            Diagnostic::error("plugin/mcp-server-invalid", "bad").with_field("mcpServers.x"),
        );
        let v = serde_json::to_value(&d).unwrap();
        assert_eq!(v["scope"], "mcp:x");
        assert_eq!(v["code"], "plugin/mcp-server-invalid");
        let back: ScopedDiagnostic = serde_json::from_value(v).unwrap();
        assert_eq!(back, d);
        assert!(!d.scope.rejects_package());
        assert!(Scope::Manifest.rejects_package());
    }
}
