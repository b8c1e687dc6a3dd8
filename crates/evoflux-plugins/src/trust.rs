//! Trust review: what a plugin would run and reach, shown before it is
//! enabled.
//!
//! Built purely from the validated declarations: nothing is executed or
//! contacted. Environment and header *names* are listed so the reviewer
//! knows what is configured; their values never appear here, because they
//! may be secrets even though the spec calls them visible configuration.

use std::collections::BTreeSet;

use serde::Serialize;

use crate::extensions::{credential_env_names, mcp_capabilities};
use crate::manifest::PluginManifest;
use crate::mcp::{McpServer, McpServerEntry, McpTransport};
use crate::skills::PluginSkill;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExecutableCommand {
    pub server: String,
    /// The command exactly as written.
    pub executable: String,
    pub args: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RemoteHost {
    pub server: String,
    pub transport: McpTransport,
    /// Host and port.
    pub host: String,
    pub url: String,
    /// Whether evoflux would connect (false for `sse`).
    pub started: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HeaderName {
    pub server: String,
    pub name: String,
}

/// What a capability grants. Closed.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum CapabilityKind {
    /// A skill the agent can activate.
    AgentSkill,
    /// An MCP server of one transport.
    Mcp { transport: McpTransport },
    /// A capability declared through the MCP capability extension; its
    /// name is the capability's `name`.
    Declared,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Capability {
    /// `agent-skill`, `mcp-<transport>` or the declared name.
    pub name: String,
    #[serde(flatten)]
    pub kind: CapabilityKind,
    /// The skill folder or server name it comes from.
    pub source: String,
}

/// The static trust review of one package.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct TrustReview {
    pub executable_commands: Vec<ExecutableCommand>,
    pub remote_hosts: Vec<RemoteHost>,
    /// Sorted names of stdio `env` keys and credential variables.
    pub environment_fields: Vec<String>,
    pub header_names: Vec<HeaderName>,
    pub capabilities: Vec<Capability>,
}

impl TrustReview {
    /// Reviews the valid components of a package: only what would be
    /// loaded is listed, skipped skills and servers are not.
    pub fn build(
        manifest: &PluginManifest,
        skills: &[PluginSkill],
        servers: &[McpServerEntry],
    ) -> TrustReview {
        let mut review = TrustReview::default();
        let mut env: BTreeSet<String> = credential_env_names(manifest);
        for skill in skills.iter().filter(|s| s.valid) {
            review.capabilities.push(Capability {
                name: "agent-skill".into(),
                kind: CapabilityKind::AgentSkill,
                source: skill.dir.clone(),
            });
        }
        let declared = mcp_capabilities(manifest);
        // By server name, so the review reads the same whatever order the
        // JSON map was parsed in.
        let mut servers: Vec<&McpServerEntry> = servers.iter().collect();
        servers.sort_by(|a, b| a.name.cmp(&b.name));
        for entry in servers {
            let Some(server) = &entry.server else {
                continue;
            };
            let transport = server.transport();
            review.capabilities.push(Capability {
                name: format!("mcp-{transport}"),
                kind: CapabilityKind::Mcp { transport },
                source: entry.name.clone(),
            });
            for cap in declared.get(&entry.name).into_iter().flatten() {
                review.capabilities.push(Capability {
                    name: cap.clone(),
                    kind: CapabilityKind::Declared,
                    source: entry.name.clone(),
                });
            }
            match server {
                McpServer::Stdio(stdio) => {
                    review.executable_commands.push(ExecutableCommand {
                        server: entry.name.clone(),
                        executable: stdio.command.as_written().to_owned(),
                        args: stdio.args.clone(),
                    });
                    env.extend(stdio.env.keys().cloned());
                }
                McpServer::StreamableHttp(remote) | McpServer::Sse(remote) => {
                    review.remote_hosts.push(RemoteHost {
                        server: entry.name.clone(),
                        transport,
                        host: remote.host.clone(),
                        url: remote.url.clone(),
                        started: transport.is_started(),
                    });
                    review
                        .header_names
                        .extend(remote.headers.keys().map(|name| HeaderName {
                            server: entry.name.clone(),
                            name: name.clone(),
                        }));
                }
            }
        }
        review.environment_fields = env.into_iter().collect();
        review
    }

    pub fn is_empty(&self) -> bool {
        self.executable_commands.is_empty()
            && self.remote_hosts.is_empty()
            && self.environment_fields.is_empty()
            && self.header_names.is_empty()
            && self.capabilities.is_empty()
    }

    /// What this review has that `before` did not: the part of a new
    /// version a user has not reviewed yet.
    ///
    /// - a command is new when no command of `before` runs the same
    ///   executable with the same arguments (whatever its server is called);
    /// - a host is new when `before` never named it, or named it only for a
    ///   transport that is never started while it is started now;
    /// - an environment name is new when `before` did not list it;
    /// - a capability is new when `before` had none of the same name, kind
    ///   and source (a new skill, a new server, a declared capability on
    ///   another server).
    pub fn added_since(&self, before: &TrustReview) -> TrustChange {
        let added_commands = self
            .executable_commands
            .iter()
            .filter(|c| {
                !before
                    .executable_commands
                    .iter()
                    .any(|b| b.executable == c.executable && b.args == c.args)
            })
            .cloned()
            .collect();
        let added_hosts = self
            .remote_hosts
            .iter()
            .filter(|h| {
                !before
                    .remote_hosts
                    .iter()
                    .any(|b| b.host == h.host && (b.started || !h.started))
            })
            .cloned()
            .collect();
        let added_environment_fields = self
            .environment_fields
            .iter()
            .filter(|e| !before.environment_fields.contains(e))
            .cloned()
            .collect();
        let added_capabilities = self
            .capabilities
            .iter()
            .filter(|c| !before.capabilities.contains(c))
            .cloned()
            .collect();
        TrustChange {
            added_commands,
            added_hosts,
            added_environment_fields,
            added_capabilities,
        }
    }
}

/// What a new version of a package adds to the trust review of the
/// installed one ([`TrustReview::added_since`]). Removals are not listed:
/// they never need a new review.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct TrustChange {
    pub added_commands: Vec<ExecutableCommand>,
    pub added_hosts: Vec<RemoteHost>,
    pub added_environment_fields: Vec<String>,
    pub added_capabilities: Vec<Capability>,
}

impl TrustChange {
    /// Whether the new version reaches nothing the old one did not.
    pub fn is_empty(&self) -> bool {
        self.added_commands.is_empty()
            && self.added_hosts.is_empty()
            && self.added_environment_fields.is_empty()
            && self.added_capabilities.is_empty()
    }
}
