//! Which agent may use which MCP server, and why. One rule, applied by the
//! session to the agent it runs as and reported by `doctor`:
//!
//! - an agent file (or a built-in profile) with an `mcp:` list gets
//!   exactly that list, even an empty one;
//! - each mode's default lead without one gets what `[mcp] default_grant`
//!   says of the servers the application runs (`"all"` by default): the
//!   user's `mcp.json`, the other tools' files `[compat] mcp` reads, a
//!   trusted repository's (an untrusted repository's servers are withheld
//!   from the graph, so they are never among them) and enabled plugins';
//! - members and workers get only what they list.
//!
//! A user who configured servers expects the agent they talk to to use
//! them; before this rule the default leads got none until an agent file
//! listed them again.

use evoflux_agents::team::{RawAgentConfig, Role, load_agents, qualified_name};
use evoflux_core::config::{DefaultGrant, LoadedConfig};
use evoflux_core::{AppMode, Diagnostic, Diagnostics};
use evoflux_graph::CompiledGraph;
use serde::Serialize;

/// A `[mcp] default_grant` name that matches no server the application
/// runs (a warning: the other names still grant).
pub const DEFAULT_GRANT_UNKNOWN: &str = "mcp/default-grant-unknown";

/// How an agent's MCP servers are decided. Closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentMcp<'a> {
    /// Its file's `mcp:` list, exactly.
    Listed(&'a [String]),
    /// A mode's default lead with no `mcp:`: `[mcp] default_grant`.
    Default(&'a DefaultGrant),
    /// A member, or a lead other than the default, with no `mcp:`: none.
    Unlisted,
}

/// Whether `[mcp] default_grant` decides the servers of the agent of
/// `raw`: it is its mode's default lead and its file lists no `mcp:`.
pub fn takes_default_grant(raw: &RawAgentConfig, default_lead: bool) -> bool {
    default_lead && raw.role == Role::Lead && raw.mcp.is_none()
}

/// How the servers of the agent of `raw` are decided (`default_lead`: it
/// is its mode's default lead).
pub fn agent_mcp<'a>(
    raw: &'a RawAgentConfig,
    default_lead: bool,
    setting: &'a DefaultGrant,
) -> AgentMcp<'a> {
    match &raw.mcp {
        Some(list) => AgentMcp::Listed(list),
        None if takes_default_grant(raw, default_lead) => AgentMcp::Default(setting),
        None => AgentMcp::Unlisted,
    }
}

/// Why an agent may, or may not, use a server. Closed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum GrantReason {
    /// A default lead, granted by `[mcp] default_grant`.
    DefaultGrant { setting: DefaultGrant },
    /// The agent's file lists it in `mcp:`.
    AgentFile { mcp: Vec<String> },
    /// A default lead that `[mcp] default_grant` does not grant it.
    NotGranted { setting: DefaultGrant },
}

impl GrantReason {
    pub fn granted(&self) -> bool {
        match self {
            GrantReason::DefaultGrant { .. } | GrantReason::AgentFile { .. } => true,
            GrantReason::NotGranted { .. } => false,
        }
    }

    /// For a person: `default grant ([mcp] default_grant = "all")`.
    pub fn describe(&self) -> String {
        match self {
            GrantReason::DefaultGrant { setting } => {
                format!("default grant ({})", setting.as_setting())
            }
            GrantReason::AgentFile { mcp } => {
                format!("agent file mcp: [{}]", mcp.join(", "))
            }
            GrantReason::NotGranted { setting } => {
                format!("not granted: {}", setting.as_setting())
            }
        }
    }
}

impl AgentMcp<'_> {
    /// The references of the servers granted, of `servers` (every server
    /// the application runs, by reference: `name` or `<plugin>/<name>`).
    /// A listed name no server has stays, for the session to report.
    pub fn servers(&self, servers: &[String]) -> Vec<String> {
        match self {
            AgentMcp::Listed(list) => list.to_vec(),
            AgentMcp::Default(setting) => servers
                .iter()
                .filter(|s| setting.grants(s))
                .cloned()
                .collect(),
            AgentMcp::Unlisted => Vec::new(),
        }
    }

    /// Why the agent may or may not use `server`; `None` when nothing
    /// concerns it there (a member not listing it).
    pub fn reason(&self, server: &str) -> Option<GrantReason> {
        match self {
            AgentMcp::Listed(list) => list
                .iter()
                .any(|s| s == server)
                .then(|| GrantReason::AgentFile { mcp: list.to_vec() }),
            AgentMcp::Default(setting) => Some(match setting.grants(server) {
                true => GrantReason::DefaultGrant {
                    setting: (*setting).clone(),
                },
                false => GrantReason::NotGranted {
                    setting: (*setting).clone(),
                },
            }),
            AgentMcp::Unlisted => None,
        }
    }
}

/// The names `[mcp] default_grant` lists that no server of `servers` has,
/// as warnings naming the file that set it.
pub fn unknown_grant_names(loaded: &LoadedConfig, servers: &[String]) -> Diagnostics {
    let mut out = Diagnostics::new();
    let DefaultGrant::Named(names) = &loaded.config.mcp.default_grant else {
        return out;
    };
    for name in names.iter().filter(|n| !servers.contains(n)) {
        let mut d = Diagnostic::warning(
            DEFAULT_GRANT_UNKNOWN,
            format!(
                "[mcp] default_grant names `{name}`, which no MCP server is; the servers are: {} \
                 (a plugin's as `<plugin>/<server>`)",
                if servers.is_empty() {
                    "none".to_owned()
                } else {
                    servers.join(", ")
                }
            ),
        )
        .with_field("mcp.default_grant");
        if let Some(source) = &loaded.default_grant_source {
            d = d.with_file(&source.path);
        }
        out.push(d);
    }
    out
}

/// One agent's access to one server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AgentGrant {
    /// `name` for a Work agent, `coding/<name>` for a Coding one.
    pub agent: String,
    pub granted: bool,
    pub reason: GrantReason,
}

/// Which agents may use one server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ServerGrants {
    pub server: String,
    pub agents: Vec<AgentGrant>,
}

/// For each of `servers`, the agents of both modes that the rule says
/// something about: every default lead (granted or not, and why) and
/// every agent whose `mcp:` lists it.
pub fn server_grants(
    graph: &CompiledGraph,
    setting: &DefaultGrant,
    servers: &[String],
) -> Vec<ServerGrants> {
    let mut agents: Vec<(String, &RawAgentConfig, bool)> = Vec::new();
    let directories: Vec<_> = [AppMode::Work, AppMode::Coding]
        .into_iter()
        .map(|mode| load_agents(graph, mode, &mut Diagnostics::new()))
        .collect();
    for dir in &directories {
        for entry in dir.agents.iter().filter(|e| e.is_valid()) {
            let Some(raw) = &entry.raw else { continue };
            let default = dir.default_lead.as_deref() == Some(entry.name.as_str());
            agents.push((qualified_name(dir.mode, &entry.name), raw, default));
        }
    }
    servers
        .iter()
        .map(|server| ServerGrants {
            server: server.clone(),
            agents: agents
                .iter()
                .filter_map(|(name, raw, default)| {
                    let reason = agent_mcp(raw, *default, setting).reason(server)?;
                    Some(AgentGrant {
                        agent: name.clone(),
                        granted: reason.granted(),
                        reason,
                    })
                })
                .collect(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(role: Role, mcp: Option<Vec<&str>>) -> RawAgentConfig {
        RawAgentConfig {
            name: "a".into(),
            mode: AppMode::Work,
            role,
            description: None,
            model: None,
            fallback_model: None,
            thinking_level: None,
            responses_api: None,
            tools: vec![],
            tools_add: vec![],
            tools_opt_out: vec![],
            skills: vec![],
            mcp: mcp.map(|l| l.into_iter().map(str::to_owned).collect()),
            lead: None,
            extra_prompt: String::new(),
        }
    }

    #[test]
    fn only_a_default_lead_without_a_list_takes_the_default_grant() {
        let servers = ["gh".to_owned(), "p/search".to_owned()];
        let all = DefaultGrant::All;
        let lead = raw(Role::Lead, None);
        assert_eq!(agent_mcp(&lead, true, &all).servers(&servers), servers);
        assert_eq!(
            agent_mcp(&lead, true, &DefaultGrant::None).servers(&servers),
            Vec::<String>::new()
        );
        let named = DefaultGrant::Named(vec!["p/search".into()]);
        assert_eq!(
            agent_mcp(&lead, true, &named).servers(&servers),
            ["p/search"]
        );
        // Another lead, a member, or any explicit list: the list only.
        assert!(agent_mcp(&lead, false, &all).servers(&servers).is_empty());
        let member = raw(Role::Member, None);
        assert!(agent_mcp(&member, true, &all).servers(&servers).is_empty());
        let empty = raw(Role::Lead, Some(vec![]));
        assert!(agent_mcp(&empty, true, &all).servers(&servers).is_empty());
        let listed = raw(Role::Lead, Some(vec!["gh"]));
        assert_eq!(agent_mcp(&listed, true, &all).servers(&servers), ["gh"]);
        assert_eq!(
            agent_mcp(&listed, true, &all).reason("gh"),
            Some(GrantReason::AgentFile {
                mcp: vec!["gh".into()]
            })
        );
        assert_eq!(agent_mcp(&listed, true, &all).reason("p/search"), None);
        let reason = agent_mcp(&lead, true, &DefaultGrant::None)
            .reason("gh")
            .unwrap();
        assert!(!reason.granted());
        assert_eq!(
            reason.describe(),
            "not granted: [mcp] default_grant = \"none\""
        );
    }

    #[test]
    fn a_named_grant_without_its_server_is_a_warning_with_the_file() {
        let mut loaded = LoadedConfig::embedded();
        loaded.config.mcp.default_grant = DefaultGrant::Named(vec!["gh".into(), "nope".into()]);
        loaded.default_grant_source = Some(evoflux_core::config::ConfigSource {
            path: "/u/config.toml".into(),
            origin: evoflux_core::config::ConfigOrigin::User,
        });
        let diags = unknown_grant_names(&loaded, &["gh".to_owned()]);
        assert_eq!(diags.codes(), [DEFAULT_GRANT_UNKNOWN]);
        let d = diags.iter().next().unwrap();
        assert_eq!(
            d.locator.file.as_deref(),
            Some(std::path::Path::new("/u/config.toml"))
        );
        assert!(d.message.contains("`nope`"));
    }
}
