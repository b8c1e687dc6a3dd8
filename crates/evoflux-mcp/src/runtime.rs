//! Every MCP manager of a process: the global one and one per enabled
//! plugin installation, side by side and never merged. This is what the
//! agent loop holds: it asks for a [`ToolSet`] each turn and the plugin
//! lifecycle adds, removes or reloads installations.

use std::collections::{BTreeMap, BTreeSet};

use evoflux_core::Diagnostic;
use evoflux_graph::CompiledGraph;
use evoflux_plugins::PluginManager;

use crate::definition::{ServerDefinition, definition_diagnostics, definitions_from_graph};
use crate::error::McpError;
use crate::manager::{ManagerOptions, ManagerScope, McpManager, ReloadReport, ServerStatus};
use crate::plugin::{installation_definitions, plugin_managers};
use crate::prompts::PromptSet;
use crate::toolset::ToolSet;

/// The global manager and the plugin managers, keyed by installation id.
#[derive(Debug, Clone)]
pub struct McpRuntime {
    global: McpManager,
    plugins: BTreeMap<String, McpManager>,
    options: ManagerOptions,
}

impl McpRuntime {
    /// Managers for the graph's connections and every enabled plugin's
    /// servers (`plugins` may be `None` when there is no plugin registry).
    /// Nothing starts until [`McpRuntime::start_all`].
    pub fn new(
        graph: &CompiledGraph,
        plugins: Option<&PluginManager>,
        options: ManagerOptions,
    ) -> Result<(McpRuntime, Vec<Diagnostic>), McpError> {
        McpRuntime::with_session_servers(graph, plugins, options, Vec::new())
    }

    /// [`McpRuntime::new`] with `session` servers beside the graph's: the
    /// servers a front end's client passed for one session (an editor's,
    /// over ACP, see [`crate::definition::session_owner`]). They join the
    /// global manager under their own names, so they are named, started,
    /// bounded and stopped exactly as configured servers are; one named
    /// like a configured server replaces it in this runtime, with a
    /// warning ([`codes::SESSION_SERVER_REPLACES`]): the client's entry is
    /// what the user set up where they are working now.
    pub fn with_session_servers(
        graph: &CompiledGraph,
        plugins: Option<&PluginManager>,
        options: ManagerOptions,
        session: Vec<ServerDefinition>,
    ) -> Result<(McpRuntime, Vec<Diagnostic>), McpError> {
        let mut definitions = definitions_from_graph(graph);
        let mut replaced = Vec::new();
        for server in session {
            if let Some(at) = definitions.iter().position(|d| d.name == server.name) {
                definitions.remove(at);
                replaced.push(Diagnostic::warning(
                    crate::codes::SESSION_SERVER_REPLACES,
                    format!(
                        "the client's MCP server `{}` replaces the configured server of that \
                         name in this session",
                        server.name
                    ),
                ));
            }
            definitions.push(server);
        }
        let mut diagnostics = collect_diagnostics(&definitions);
        diagnostics.extend(replaced);
        let global = McpManager::new(ManagerScope::Global, definitions, options.clone())?;
        let mut map = BTreeMap::new();
        if let Some(pm) = plugins {
            let (managers, diags) = plugin_managers(pm, &options)?;
            diagnostics.extend(diags);
            for m in managers {
                if let ManagerScope::Plugin { installation, .. } = m.scope() {
                    map.insert(installation.clone(), m.clone());
                }
            }
        }
        Ok((
            McpRuntime {
                global,
                plugins: map,
                options,
            },
            diagnostics,
        ))
    }

    pub fn global(&self) -> &McpManager {
        &self.global
    }

    pub fn plugin(&self, installation: &str) -> Option<&McpManager> {
        self.plugins.get(installation)
    }

    /// The global manager, then plugin managers by installation id.
    /// Starts the server a user-facing reference names (see
    /// [`crate::ServerOwner::server_ref`]): `name` is global, `<plugin>/<name>`
    /// a server of that plugin's installation.
    pub fn start_ref(&self, server_ref: &str) -> Result<(), McpError> {
        let (m, server) = self.manager_of_ref(server_ref);
        m.start(server)
    }

    /// Stops then starts the server a user-facing reference names (as
    /// [`McpRuntime::start_ref`]), in the background.
    pub async fn restart_ref(&self, server_ref: &str) -> Result<(), McpError> {
        let (m, server) = self.manager_of_ref(server_ref);
        m.restart(server).await
    }

    /// The manager a reference's server belongs to, and its name there:
    /// `<plugin>/<name>` when a plugin of that name is enabled, the
    /// global manager otherwise. The one reading of a reference.
    fn manager_of_ref<'a>(&'a self, server_ref: &'a str) -> (&'a McpManager, &'a str) {
        if let Some((plugin, server)) = server_ref.split_once('/')
            && let Some(m) = self.plugins.values().find(|m| match m.scope() {
                ManagerScope::Plugin { plugin: p, .. } => p == plugin,
                ManagerScope::Global => false,
            })
        {
            return (m, server);
        }
        (&self.global, server_ref)
    }

    /// What an OAuth login to the server a reference names is for: its URL
    /// and where its tokens go. Only a Streamable HTTP server logs in.
    pub fn login_target(
        &self,
        server_ref: &str,
    ) -> Result<crate::oauth::LoginTarget, crate::oauth::OAuthError> {
        use crate::oauth::OAuthError;
        let (m, server) = self.manager_of_ref(server_ref);
        let definition = m
            .definition(server)
            .map_err(|_| OAuthError::UnknownServer(server_ref.to_owned()))?;
        let store = self
            .options
            .oauth_tokens
            .clone()
            .ok_or(OAuthError::NoTokenStore)?;
        match &definition.launch {
            crate::definition::Launch::StreamableHttp(l) => Ok(crate::oauth::LoginTarget {
                server: definition.owner.server_ref(&definition.name),
                url: l.url.clone(),
                store,
            }),
            crate::definition::Launch::Stdio(_)
            | crate::definition::Launch::Unsupported
            | crate::definition::Launch::Invalid { .. }
            | crate::definition::Launch::NeedsCredentials { .. } => {
                Err(OAuthError::NotHttp(server_ref.to_owned()))
            }
        }
    }

    /// The graph's connections changed (the user's `mcp.json` was edited):
    /// the global manager takes the graph's definitions again, stopping
    /// removed servers, restarting changed ones and starting new ones;
    /// unchanged servers keep running.
    pub async fn reload_global(&self, graph: &CompiledGraph) -> ReloadReport {
        self.global.reload(definitions_from_graph(graph)).await
    }

    pub fn managers(&self) -> Vec<&McpManager> {
        std::iter::once(&self.global)
            .chain(self.plugins.values())
            .collect()
    }

    /// Starts every server in the background; returns at once.
    pub fn start_all(&self) {
        for m in self.managers() {
            m.start_all();
        }
    }

    /// Stops every server and waits for the processes to end.
    pub async fn shutdown(&self) {
        futures_util::future::join_all(self.managers().into_iter().map(|m| m.stop_all())).await;
    }

    /// Every server of every manager.
    pub fn statuses(&self) -> Vec<ServerStatus> {
        self.managers()
            .into_iter()
            .flat_map(|m| m.statuses())
            .collect()
    }

    /// Every server as `evoflux mcp list` and `/api/mcp/servers` show it:
    /// its reference (`name`, or `<plugin>/<name>`) and its status.
    pub fn listing(&self) -> Vec<ServerListing> {
        self.statuses()
            .into_iter()
            .map(|status| ServerListing {
                server: status.owner.server_ref(&status.name),
                status,
            })
            .collect()
    }

    /// How long the slowest server of any manager (global and plugin) may
    /// take to start before it is reported failed (`mcp/startup-timeout`):
    /// servers may set their own limit, so a caller that waits for them to
    /// settle must wait for the longest one, not the default.
    pub fn startup_timeout(&self) -> std::time::Duration {
        self.managers()
            .into_iter()
            .map(McpManager::longest_startup_timeout)
            .fold(self.options.startup_timeout, std::time::Duration::max)
    }

    /// Waits until every manager's servers have settled (ready or failed),
    /// at most `wait` per manager.
    pub async fn settle(&self, wait: std::time::Duration) {
        for m in self.managers() {
            m.wait_settled(wait).await;
        }
    }

    /// The ready tools of every manager, uniquely named.
    pub fn tool_set(&self, reserved: &BTreeSet<String>) -> ToolSet {
        ToolSet::assemble(&self.managers(), reserved)
    }

    /// The ready prompts of every manager, uniquely named.
    pub fn prompt_set(&self) -> PromptSet {
        PromptSet::assemble(&self.managers())
    }

    /// Reads `uri` from the server a reference names (`name`, or
    /// `<plugin>/<name>`).
    pub async fn read_resource(
        &self,
        server_ref: &str,
        uri: &str,
        timeout: std::time::Duration,
    ) -> Result<Vec<crate::types::McpResourceContents>, McpError> {
        let (m, server) = self.manager_of_ref(server_ref);
        m.read_resource(server, uri, timeout).await
    }

    /// The resources the server a reference names lists.
    pub async fn list_resources(
        &self,
        server_ref: &str,
        timeout: std::time::Duration,
    ) -> Result<Vec<crate::types::McpResource>, McpError> {
        let (m, server) = self.manager_of_ref(server_ref);
        m.list_resources(server, timeout).await
    }

    /// An installation was enabled, or its files or credentials changed:
    /// (re)adapts its servers and reconciles them, starting what is new or
    /// changed. Returns the diagnostics of the adaptation.
    pub async fn reconcile_plugin(
        &mut self,
        plugins: &PluginManager,
        root: &evoflux_graph::PluginRoot,
    ) -> Result<Vec<Diagnostic>, McpError> {
        let (definitions, diagnostics) = installation_definitions(plugins, root);
        match self.plugins.get(&root.installation) {
            Some(m) => {
                m.reload(definitions).await;
            }
            None => {
                let m = McpManager::new(
                    ManagerScope::Plugin {
                        installation: root.installation.clone(),
                        plugin: root.name.clone(),
                    },
                    definitions,
                    self.options.clone(),
                )?;
                m.start_all();
                self.plugins.insert(root.installation.clone(), m);
            }
        }
        Ok(diagnostics)
    }

    /// Brings the plugin managers in line with the registry as it is now:
    /// installations no longer enabled stop, new or enabled ones are
    /// adapted, and changed files or credentials restart only the servers
    /// they change (the reconcile diffs definitions). A long-running
    /// session calls this between turns so that `evoflux plugin
    /// enable|disable|credentials` or an edit to a linked plugin takes
    /// effect without restarting evoflux.
    pub async fn sync_plugins(&mut self, plugins: &PluginManager) -> Vec<Diagnostic> {
        let (roots, mut diagnostics) = plugins.enabled_plugin_roots();
        let enabled: BTreeSet<&str> = roots.iter().map(|r| r.installation.as_str()).collect();
        let gone: Vec<String> = self
            .plugins
            .keys()
            .filter(|id| !enabled.contains(id.as_str()))
            .cloned()
            .collect();
        for id in gone {
            self.remove_plugin(&id).await;
        }
        for root in &roots {
            match self.reconcile_plugin(plugins, root).await {
                Ok(d) => diagnostics.extend(d),
                Err(e) => diagnostics
                    .push(Diagnostic::error(e.code(), e.to_string()).with_file(&root.dir)),
            }
        }
        diagnostics
    }

    /// An installation was disabled or uninstalled: stops its servers.
    pub async fn remove_plugin(&mut self, installation: &str) {
        if let Some(m) = self.plugins.remove(installation) {
            m.stop_all().await;
        }
    }
}

fn collect_diagnostics(definitions: &[ServerDefinition]) -> Vec<Diagnostic> {
    definitions
        .iter()
        .flat_map(definition_diagnostics)
        .collect()
}

/// One server of a listing.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ServerListing {
    /// `name`, or `<plugin>/<name>` for a plugin's server.
    pub server: String,
    #[serde(flatten)]
    pub status: ServerStatus,
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn the_startup_timeout_is_the_slowest_servers() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(
            tmp.path().join("mcp.json"),
            r#"{"mcpServers": {
                "quick": {"command": "srv", "startup_timeout_secs": 5},
                "plain": {"command": "srv"},
                "slow": {"command": "srv", "startup_timeout_secs": 120}
            }}"#,
        )
        .unwrap();
        let graph = evoflux_graph::compile_standard(&evoflux_graph::RootOptions {
            user_config_dir: Some(tmp.path().to_path_buf()),
            ..evoflux_graph::RootOptions::default()
        })
        .unwrap();
        let options = ManagerOptions {
            startup_timeout: Duration::from_secs(30),
            ..ManagerOptions::default()
        };
        let (rt, _) = McpRuntime::new(&graph, None, options).unwrap();
        assert_eq!(rt.global().statuses().len(), 3);
        assert_eq!(rt.startup_timeout(), Duration::from_secs(120));
    }

    #[tokio::test]
    async fn a_session_server_joins_the_global_ones_and_replaces_its_namesake() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(
            tmp.path().join("mcp.json"),
            r#"{"mcpServers": {"docs": {"command": "srv"}, "other": {"command": "srv"}}}"#,
        )
        .unwrap();
        let graph = evoflux_graph::compile_standard(&evoflux_graph::RootOptions {
            user_config_dir: Some(tmp.path().to_path_buf()),
            ..evoflux_graph::RootOptions::default()
        })
        .unwrap();
        let session = vec![
            crate::definition::session_stdio(
                "docs",
                "/bin/editor-docs".into(),
                Vec::new(),
                Default::default(),
            ),
            crate::definition::session_http("remote", "https://x/mcp".into(), Default::default()),
        ];
        let (rt, diags) =
            McpRuntime::with_session_servers(&graph, None, ManagerOptions::default(), session)
                .unwrap();
        let statuses = rt.global().statuses();
        let mut names: Vec<&str> = statuses.iter().map(|s| s.name.as_str()).collect();
        names.sort_unstable();
        assert_eq!(names, ["docs", "other", "remote"]);
        let docs = statuses.iter().find(|s| s.name == "docs").unwrap();
        assert_eq!(docs.owner, crate::definition::session_owner());
        assert!(
            diags
                .iter()
                .any(|d| d.code == crate::codes::SESSION_SERVER_REPLACES)
        );
    }
}
