//! `sandbox.toml`: the sandbox policy every command runs under.

use std::path::Path;

use evoflux_core::{Diagnostic, Diagnostics};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::declarative::deserialize_strict;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NetworkPolicy {
    Allow,
    Deny,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxPolicy {
    /// Whether commands may use the network.
    pub network: NetworkPolicy,
    /// Upper bound for any command's `timeout_seconds`.
    pub max_timeout_seconds: u64,
    /// Environment variables passed to commands; nothing else leaks in.
    pub env_allowlist: Vec<String>,
}

impl SandboxPolicy {
    /// The framework default.
    pub fn framework_default() -> SandboxPolicy {
        SandboxPolicy {
            network: NetworkPolicy::Allow,
            max_timeout_seconds: 600,
            env_allowlist: [
                "PATH", "HOME", "LANG", "LC_ALL", "TERM", "TMPDIR", "USER", "SHELL",
            ]
            .map(str::to_owned)
            .to_vec(),
        }
    }
}

/// A sandbox file: every key optional, defaults from the framework policy.
#[derive(Debug, Deserialize)]
struct SandboxFile {
    network: Option<NetworkPolicy>,
    max_timeout_seconds: Option<u64>,
    env_allowlist: Option<Vec<String>>,
}

pub fn parse(path: &Path, value: Value, diags: &mut Diagnostics) -> Option<SandboxPolicy> {
    let file: SandboxFile = deserialize_strict(path, value, "sandbox policy", diags)?;
    let d = SandboxPolicy::framework_default();
    let policy = SandboxPolicy {
        network: file.network.unwrap_or(d.network),
        max_timeout_seconds: file.max_timeout_seconds.unwrap_or(d.max_timeout_seconds),
        env_allowlist: file.env_allowlist.unwrap_or(d.env_allowlist),
    };
    let mut ok = true;
    if policy.max_timeout_seconds == 0 {
        diags.push(
            Diagnostic::error(
                "compile/sandbox-invalid",
                "max_timeout_seconds must be at least 1",
            )
            .with_file(path)
            .with_field("max_timeout_seconds"),
        );
        ok = false;
    }
    for name in &policy.env_allowlist {
        if !crate::connection::is_env_name(name) {
            diags.push(
                Diagnostic::error(
                    "compile/sandbox-invalid",
                    format!("`{name}` in env_allowlist is not an environment variable name"),
                )
                .with_file(path)
                .with_field("env_allowlist"),
            );
            ok = false;
        }
    }
    ok.then_some(policy)
}
