//! The session's MCP tools: which servers the session is granted, their
//! state changes as events, and the ready tools joined to each model call.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use evoflux_mcp::{McpRuntime, ServerOwner, ServerState, ToolSet};

use super::Harness;
use crate::events::Event;

/// The session's view of the application's MCP servers.
#[derive(Debug)]
pub(crate) struct SessionMcp {
    pub(crate) runtime: Option<McpRuntime>,
    pub(crate) call_timeout: Duration,
    /// The MCP tools offered in the current model call.
    pub(crate) tools: ToolSet,
    /// Plugin installations whose MCP tools this session may use.
    pub(crate) installations: BTreeSet<String>,
    /// Last reported state and error per MCP server, to report changes once.
    pub(crate) states: BTreeMap<(String, String), (ServerState, Option<String>)>,
}

impl SessionMcp {
    pub(crate) fn new(runtime: Option<McpRuntime>, call_timeout: Duration) -> SessionMcp {
        SessionMcp {
            runtime,
            call_timeout,
            tools: ToolSet::default(),
            installations: BTreeSet::new(),
            states: BTreeMap::new(),
        }
    }
}

impl Harness {
    /// Whether this session may use `server` of `owner`: the agent's `mcp:`
    /// list names it (`name`, or `<plugin>/<name>` for a plugin's server),
    /// or a loaded skill granted its plugin installation.
    fn mcp_granted(&self, owner: &ServerOwner, server: &str) -> bool {
        granted(&self.agent.mcp, &self.mcp.installations, owner, server)
    }

    /// Starts the MCP servers the agent's `mcp:` list grants; they
    /// come up in the background and join the tools when ready. A name
    /// that no server has is reported, not ignored.
    pub(super) fn start_granted_mcp(&mut self) {
        let Some(rt) = &self.mcp.runtime else {
            for name in &self.agent.mcp {
                self.emit(&Event::McpServer {
                    server: name.clone(),
                    owner: "global".into(),
                    state: "missing".into(),
                    error: Some("no MCP runtime is attached to this session".into()),
                });
            }
            return;
        };
        for name in &self.agent.mcp {
            if let Err(e) = rt.start_ref(name) {
                self.emit(&Event::McpServer {
                    server: name.clone(),
                    owner: "global".into(),
                    state: "missing".into(),
                    error: Some(e.to_string()),
                });
            }
        }
    }

    /// Grants (and starts) the MCP servers of one plugin installation for
    /// the rest of this session — called when a skill that the
    /// installation contributed is loaded. Installation alone grants
    /// nothing.
    pub fn grant_plugin_mcp(&mut self, installation: &str) {
        if !self.mcp.installations.insert(installation.to_owned()) {
            return;
        }
        if let Some(manager) = self
            .mcp
            .runtime
            .as_ref()
            .and_then(|rt| rt.plugin(installation))
        {
            manager.start_all();
        }
    }

    /// Picks up plugin changes made while the session runs (enable,
    /// disable, credentials, edits to a linked plugin) without restarting
    /// evoflux; call it between turns. Returns the adaptation diagnostics.
    pub async fn sync_plugins(
        &mut self,
        plugins: &evoflux_plugins::PluginManager,
    ) -> Vec<evoflux_core::Diagnostic> {
        match &mut self.mcp.runtime {
            Some(rt) => rt.sync_plugins(plugins).await,
            None => Vec::new(),
        }
    }

    /// Refreshes the MCP tools offered to the next model call and reports
    /// every server whose state changed (a failed or slow server is shown,
    /// never dropped silently).
    pub(super) fn refresh_mcp(&mut self) {
        let Some(rt) = &self.mcp.runtime else { return };
        let (named, installations) = (&self.agent.mcp, &self.mcp.installations);
        let granted =
            |owner: &ServerOwner, server: &str| granted(named, installations, owner, server);
        let mut changes = Vec::new();
        for status in rt.statuses() {
            if !granted(&status.owner, &status.name) {
                continue;
            }
            let key = (status.owner.label(), status.name.clone());
            let error = status
                .last_error
                .map(|e| format!("{}: {}", e.code, e.message));
            let now = (status.state, error);
            if self.mcp.states.get(&key) != Some(&now) {
                changes.push(Event::McpServer {
                    server: status.name.clone(),
                    owner: status.owner.label(),
                    state: serde_json::to_value(status.state)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_owned))
                        .unwrap_or_default(),
                    error: now.1.clone(),
                });
                self.mcp.states.insert(key, now);
            }
        }
        let set = rt.tool_set(&self.tools.reserved_names());
        self.tools
            .set_mcp(set.tools().iter().filter(|d| granted(&d.owner, &d.server)));
        self.mcp.tools = set;
        for e in changes {
            self.emit(&e);
        }
    }

    /// A call named a tool nobody offers while a granted MCP server is
    /// still starting: the name may be one of its tools (a skill or the
    /// user can name them before they are listed), so wait for those
    /// servers to settle once instead of failing the call. Turns that do
    /// not call such a tool never wait. Returns whether it waited.
    pub(super) async fn wait_for_starting_mcp(&self) -> bool {
        let Some(rt) = &self.mcp.runtime else {
            return false;
        };
        let mut waited = false;
        for m in rt.managers() {
            let starting = m
                .statuses()
                .into_iter()
                .any(|s| s.state == ServerState::Starting && self.mcp_granted(&s.owner, &s.name));
            if starting {
                m.wait_settled(evoflux_mcp::DEFAULT_STARTUP_TIMEOUT).await;
                waited = true;
            }
        }
        waited
    }
}

/// See [`Harness::mcp_granted`]; apart from `self` so callers can borrow
/// the session's other fields meanwhile.
fn granted(
    named: &[String],
    installations: &BTreeSet<String>,
    owner: &ServerOwner,
    server: &str,
) -> bool {
    let listed = || {
        let r = owner.server_ref(server);
        named.contains(&r)
    };
    match owner {
        ServerOwner::Global { .. } => listed(),
        ServerOwner::Plugin { installation, .. } => {
            installations.contains(installation) || listed()
        }
    }
}
