//! The EvoFlux manifest extensions, as far as static inspection needs them.
//!
//! Trust review must list the environment variables a credentials form will
//! inject and the MCP capabilities a plugin claims, so this module reads
//! just those parts, leniently: a malformed declaration contributes nothing
//! here, and is reported by the full extension validation (credentials are
//! a later step of the issue). Canonical namespaces win over their legacy,
//! read-only aliases when both are present.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use crate::manifest::PluginManifest;

/// The credentials extension and its legacy alias.
pub const CREDENTIALS_NAMESPACE: &str = "org.evoelsewhere.evoflux.credentials";
pub const CREDENTIALS_NAMESPACE_ALIAS: &str = "evoflux.credentials";
/// The MCP capability extension and its legacy alias.
pub const MCP_NAMESPACE: &str = "org.evoelsewhere.evoflux.mcp";
pub const MCP_NAMESPACE_ALIAS: &str = "evoflux.mcp";

/// The EvoFlux extensions evoflux gives meaning to. Closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EvofluxExtension {
    Credentials,
    McpCapabilities,
}

impl EvofluxExtension {
    pub const fn namespace(self) -> &'static str {
        match self {
            EvofluxExtension::Credentials => CREDENTIALS_NAMESPACE,
            EvofluxExtension::McpCapabilities => MCP_NAMESPACE,
        }
    }

    pub const fn alias(self) -> &'static str {
        match self {
            EvofluxExtension::Credentials => CREDENTIALS_NAMESPACE_ALIAS,
            EvofluxExtension::McpCapabilities => MCP_NAMESPACE_ALIAS,
        }
    }

    /// The declaration in effect: canonical first, alias otherwise.
    pub fn declaration(self, manifest: &PluginManifest) -> Option<&Map<String, Value>> {
        manifest
            .extension(self.namespace())
            .or_else(|| manifest.extension(self.alias()))
    }
}

/// Environment variable names a credentials declaration injects.
pub fn credential_env_names(manifest: &PluginManifest) -> BTreeSet<String> {
    let Some(decl) = EvofluxExtension::Credentials.declaration(manifest) else {
        return BTreeSet::new();
    };
    let Some(Value::Array(fields)) = decl.get("fields") else {
        return BTreeSet::new();
    };
    fields
        .iter()
        .filter_map(|f| f.get("env")?.as_str().map(str::to_owned))
        .collect()
}

/// The declared MCP server capabilities evoflux acts on. Closed: another
/// declared name is listed by the trust review and otherwise ignored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum McpServerCapability {
    /// The server may stay available in a conversation tagged for the
    /// browser surface (WebBridge); undeclared servers are hidden there.
    WebbridgeSafe,
}

impl McpServerCapability {
    pub const ALL: [McpServerCapability; 1] = [McpServerCapability::WebbridgeSafe];

    /// The declared (casefolded) name.
    pub const fn as_str(self) -> &'static str {
        match self {
            McpServerCapability::WebbridgeSafe => "webbridge-safe",
        }
    }

    /// The capability a casefolded declared name means, if evoflux knows it.
    pub fn from_declared(name: &str) -> Option<McpServerCapability> {
        McpServerCapability::ALL
            .into_iter()
            .find(|c| c.as_str() == name)
    }
}

/// The capabilities of [`McpServerCapability`] each server declares, by
/// server name (servers declaring none of them are left out).
pub fn mcp_server_capabilities(
    manifest: &PluginManifest,
) -> BTreeMap<String, BTreeSet<McpServerCapability>> {
    mcp_capabilities(manifest)
        .into_iter()
        .filter_map(|(server, names)| {
            let known: BTreeSet<McpServerCapability> = names
                .iter()
                .filter_map(|n| McpServerCapability::from_declared(n))
                .collect();
            (!known.is_empty()).then_some((server, known))
        })
        .collect()
}

/// Declared MCP capabilities by server name, casefolded and sorted.
pub fn mcp_capabilities(manifest: &PluginManifest) -> BTreeMap<String, BTreeSet<String>> {
    let Some(decl) = EvofluxExtension::McpCapabilities.declaration(manifest) else {
        return BTreeMap::new();
    };
    let Some(Value::Object(servers)) = decl.get("servers") else {
        return BTreeMap::new();
    };
    servers
        .iter()
        .filter_map(|(name, server)| {
            let caps = server.get("capabilities")?.as_array()?;
            let caps: BTreeSet<String> = caps
                .iter()
                .filter_map(|c| c.as_str().map(str::to_lowercase))
                .collect();
            Some((name.clone(), caps))
        })
        .collect()
}
