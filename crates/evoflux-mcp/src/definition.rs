//! What the manager starts: a server definition adapted from a connection
//! slot of the compiled graph (global servers) or from a plugin's validated
//! `mcp.json` entry (plugin servers), resolved into a launch that needs no
//! further interpretation.
//!
//! Nothing here is spawned or contacted, and the only inputs are typed
//! definitions that were already validated upstream
//! (`evoflux_graph::connection`, `evoflux_plugins::mcp`). Nothing re-parses
//! `mcp.json`. The one thing read is the content of the repository files
//! a repository's server runs, pinned for its start ([`StdioLaunch::pinned`]).

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use evoflux_core::Diagnostic;
use evoflux_core::secret_name::KeyVariables;
use evoflux_graph::connection::{self, ConnectionDefinition};
use evoflux_graph::grants::LaunchFile;
use evoflux_graph::{Binding, CompiledGraph, Definition, Layer};
use evoflux_plugins::extensions::McpServerCapability;
use evoflux_plugins::mcp::{CwdBase, McpCommand, McpServer, McpServerEntry};
use serde::Serialize;

use crate::codes;
use crate::environment::expand_placeholders;
use crate::references::{References, Unset};

/// The transports of a declaration. Closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TransportKind {
    Stdio,
    StreamableHttp,
    /// Legacy HTTP+SSE: listed, never started.
    Sse,
}

impl TransportKind {
    pub const fn as_str(self) -> &'static str {
        match self {
            TransportKind::Stdio => "stdio",
            TransportKind::StreamableHttp => "streamable-http",
            TransportKind::Sse => "sse",
        }
    }
}

impl fmt::Display for TransportKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Who declared a server. Plugin servers live in their own manager and are
/// never merged into the global configuration.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum ServerOwner {
    /// A `connections/<name>` slot of the compiled graph.
    Global {
        /// The `mcp.json` that won the slot.
        #[serde(skip_serializing_if = "Option::is_none")]
        source: Option<PathBuf>,
        /// The layer of that file (`user`, `project`, …).
        #[serde(skip_serializing_if = "Option::is_none")]
        layer: Option<String>,
    },
    /// An entry of a plugin installation's `mcp.json`.
    Plugin {
        installation: String,
        plugin: String,
    },
}

impl ServerOwner {
    /// How people name a server of this owner: `name` for a global one,
    /// `<plugin>/<name>` for a plugin's — as `evoflux mcp list` shows it and
    /// an agent's `mcp:` list selects it. The one spelling of that rule.
    pub fn server_ref(&self, server: &str) -> String {
        match self {
            ServerOwner::Global { .. } => server.to_owned(),
            ServerOwner::Plugin { plugin, .. } => format!("{plugin}/{server}"),
        }
    }

    /// `global` or `plugin:<name>`, for listings.
    pub fn label(&self) -> String {
        match self {
            ServerOwner::Global { .. } => "global".to_owned(),
            ServerOwner::Plugin { plugin, .. } => format!("plugin:{plugin}"),
        }
    }
}

/// Whether a server stays available in a conversation tagged for the
/// browser surface (WebBridge). Only a plugin can declare it, through the
/// `webbridge-safe` capability of its manifest's MCP extension; every
/// other server is hidden there, so an undeclared MCP browser cannot
/// bypass the browser the user chose. Closed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum WebBridge {
    /// Declared `webbridge-safe`: offered in WebBridge conversations.
    Safe,
    /// Not declared: hidden in WebBridge conversations.
    #[default]
    Undeclared,
}

impl WebBridge {
    pub fn is_undeclared(&self) -> bool {
        *self == WebBridge::Undeclared
    }

    /// Why `server` of `owner` is hidden in a WebBridge conversation
    /// ([`codes::WEBBRIDGE_HIDDEN`]), or `None` when it is offered there.
    /// The locator's field is the server's reference.
    pub fn hidden_diagnostic(self, owner: &ServerOwner, server: &str) -> Option<Diagnostic> {
        let reference = owner.server_ref(server);
        let why = match (self, owner) {
            (WebBridge::Safe, _) => return None,
            (WebBridge::Undeclared, ServerOwner::Global { .. }) => format!(
                "MCP server `{reference}` is hidden in WebBridge conversations: only a \
                 plugin's server can declare `webbridge-safe`, and this one is configured in \
                 an mcp.json; use a standard conversation to reach it"
            ),
            (WebBridge::Undeclared, ServerOwner::Plugin { plugin, .. }) => format!(
                "MCP server `{reference}` is hidden in WebBridge conversations: plugin \
                 `{plugin}` does not declare `webbridge-safe` for it (its manifest's \
                 extensions.\"{}\".servers.{server}.capabilities); use a standard \
                 conversation to reach it",
                evoflux_plugins::extensions::MCP_NAMESPACE
            ),
        };
        Some(Diagnostic::info(codes::WEBBRIDGE_HIDDEN, why).with_field(reference))
    }
}

/// A child process to spawn. `env` is the overlay on top of the base
/// environment, already in its final precedence (configured values, then
/// credentials, then `PLUGIN_ROOT`/`PLUGIN_DATA`); its values may be
/// secrets, so `Debug` shows only the names.
#[derive(Clone, PartialEq, Eq)]
pub struct StdioLaunch {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub cwd: Option<PathBuf>,
    /// Folders created before spawning (a plugin's `PLUGIN_DATA`).
    pub create_dirs: Vec<PathBuf>,
    /// Whether `args` and `env` values may hold `${VAR}` references.
    pub references: References,
    /// A repository's server: the repository files it runs, with the
    /// content its trust was checked against when the graph compiled. It
    /// runs outside the command sandbox, so a start (or restart) after one
    /// changed is refused (`trust/changed-since-trust`).
    pub pinned: Vec<LaunchFile>,
}

impl StdioLaunch {
    /// The launch with its references expanded from `env` (itself when
    /// it holds none).
    pub fn with_references(&self, env: &BTreeMap<String, String>) -> Result<StdioLaunch, Unset> {
        match self.references {
            References::Literal => Ok(self.clone()),
            References::FromEnvironment => Ok(StdioLaunch {
                args: self
                    .args
                    .iter()
                    .map(|a| crate::references::expand(a, env))
                    .collect::<Result<_, _>>()?,
                env: crate::references::expand_values(&self.env, env)?,
                ..self.clone()
            }),
        }
    }
}

impl fmt::Debug for StdioLaunch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StdioLaunch")
            .field("program", &self.program)
            .field("args", &self.args)
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .field("cwd", &self.cwd)
            .field("create_dirs", &self.create_dirs)
            .field("pinned", &self.pinned)
            .finish()
    }
}

/// A Streamable HTTP endpoint. Headers are sent literally, only to `url`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpLaunch {
    pub url: String,
    pub headers: BTreeMap<String, String>,
    /// Whether header values may hold `${VAR}` references.
    pub references: References,
}

impl HttpLaunch {
    /// The launch with its references expanded from `env`.
    pub fn with_references(&self, env: &BTreeMap<String, String>) -> Result<HttpLaunch, Unset> {
        match self.references {
            References::Literal => Ok(self.clone()),
            References::FromEnvironment => Ok(HttpLaunch {
                headers: crate::references::expand_values(&self.headers, env)?,
                ..self.clone()
            }),
        }
    }
}

/// How to reach a server, or why it is not started. Closed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Launch {
    Stdio(StdioLaunch),
    StreamableHttp(HttpLaunch),
    /// A valid declaration of a transport evoflux does not run (`sse`).
    Unsupported,
    /// The declaration cannot be started; only this server is skipped.
    Invalid {
        code: &'static str,
        message: String,
    },
    /// A valid stdio server of a plugin whose required credentials (these
    /// labels) are not set: not started until they are.
    NeedsCredentials {
        missing: Vec<String>,
    },
}

/// One server as the manager sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerDefinition {
    /// The name in `mcp.json` (unique within its manager).
    pub name: String,
    pub owner: ServerOwner,
    /// `None` for an entry whose `type` was unknown.
    pub transport: Option<TransportKind>,
    pub launch: Launch,
    /// This server's own limit on starting (spawn or connect, handshake,
    /// first tool list), from its entry's `startup_timeout_secs`: a server
    /// known to start slowly gets longer without stretching every other
    /// server's limit. `None` uses the manager's
    /// [`crate::ManagerOptions::startup_timeout`].
    pub startup_timeout: Option<Duration>,
    /// Whether it is offered in WebBridge conversations.
    pub webbridge: WebBridge,
}

impl ServerDefinition {
    /// The server part of qualified tool names: the name for global
    /// servers; `<plugin>_<server>` for plugin servers, because plugins
    /// commonly name their only server the same (`server`, `main`) and a
    /// readable prefix beats a hash suffix.
    pub fn naming_key(&self) -> String {
        match &self.owner {
            ServerOwner::Global { .. } => self.name.clone(),
            ServerOwner::Plugin { plugin, .. } => format!("{plugin}_{}", self.name),
        }
    }
}

/// The MCP servers of a compiled graph: one per `connections/<name>` slot,
/// in slot order. A relative `cwd`, or a relative command path with a `/`,
/// is resolved against the folder of the winning `mcp.json`. A
/// repository's server whose `args`, `env` or headers refer to a variable
/// that holds a key is never started
/// ([`codes::PROJECT_SECRET_EXPANSION`]); a repository's stdio server is
/// pinned to the content of the repository files it runs
/// ([`StdioLaunch::pinned`]).
pub fn definitions_from_graph(graph: &CompiledGraph) -> Vec<ServerDefinition> {
    let keys = match graph
        .node(&evoflux_graph::Slot::config())
        .map(|n| &n.definition)
    {
        Some(Definition::Config(loaded)) => KeyVariables::of_config(&loaded.config),
        _ => KeyVariables::default(),
    };
    let mut out = Vec::new();
    for node in &graph.nodes {
        let Definition::Connection(def) = &node.definition else {
            continue;
        };
        let bound = graph.binding(&node.source_id);
        let source = bound.and_then(|b| match &b.binding {
            Binding::File { path, .. } => Some(path.clone()),
            Binding::Builtin { .. } => None,
        });
        let owner = ServerOwner::Global {
            layer: bound.map(|b| b.layer.to_string()),
            source: source.clone(),
        };
        let base = source.as_deref().and_then(Path::parent);
        let mut server = from_connection(&node.slot.name, def, owner, base);
        let project = bound.is_some_and(|b| b.layer == Layer::Project);
        if project
            && let Some(mcp_json) = source.as_deref()
            && let Launch::Stdio(launch) = &mut server.launch
        {
            launch.pinned = evoflux_graph::grants::launch_files(
                &evoflux_graph::grants::repository_of(mcp_json),
                mcp_json,
                def,
            );
        }
        if project && let Some(var) = repository_key_reference(def, &keys) {
            server.launch = Launch::Invalid {
                code: codes::PROJECT_SECRET_EXPANSION,
                message: format!(
                    "{}: the repository's MCP server `{}` refers to `${{{var}}}`, a variable that \
                     holds a key; a repository's server never gets a key from your environment, \
                     trusted or not, so it is not started (define the server in your own \
                     mcp.json to give it the key)",
                    source
                        .as_deref()
                        .map_or_else(|| "mcp.json".to_owned(), |p| p.display().to_string()),
                    node.slot.name
                ),
            };
        }
        out.push(server);
    }
    out
}

/// The first key variable the values `${VAR}` is expanded in (`args`,
/// `env`, headers) refer to.
fn repository_key_reference<'a>(
    def: &'a ConnectionDefinition,
    keys: &KeyVariables,
) -> Option<&'a str> {
    match def {
        ConnectionDefinition::Stdio { args, env, .. } => crate::references::key_reference(
            args.iter().chain(env.values()).map(String::as_str),
            keys,
        ),
        ConnectionDefinition::StreamableHttp { headers, .. }
        | ConnectionDefinition::Sse { headers, .. } => {
            crate::references::key_reference(headers.values().map(String::as_str), keys)
        }
    }
}

/// Adapts one global connection.
pub fn from_connection(
    name: &str,
    def: &ConnectionDefinition,
    owner: ServerOwner,
    base_dir: Option<&Path>,
) -> ServerDefinition {
    let (transport, launch, startup_timeout_secs) = match def {
        ConnectionDefinition::Stdio {
            command,
            args,
            env,
            cwd,
            startup_timeout_secs,
        } => (
            TransportKind::Stdio,
            Launch::Stdio(StdioLaunch {
                program: connection::stdio_program(command, base_dir),
                args: args.clone(),
                env: env.clone(),
                cwd: cwd
                    .as_deref()
                    .map(|c| connection::resolve_path(c, base_dir)),
                create_dirs: Vec::new(),
                references: References::FromEnvironment,
                pinned: Vec::new(),
            }),
            *startup_timeout_secs,
        ),
        ConnectionDefinition::StreamableHttp {
            url,
            headers,
            startup_timeout_secs,
        } => (
            TransportKind::StreamableHttp,
            Launch::StreamableHttp(HttpLaunch {
                url: url.clone(),
                headers: headers.clone(),
                references: References::FromEnvironment,
            }),
            *startup_timeout_secs,
        ),
        ConnectionDefinition::Sse { .. } => (TransportKind::Sse, Launch::Unsupported, None),
    };
    ServerDefinition {
        name: name.to_owned(),
        owner,
        transport: Some(transport),
        launch,
        startup_timeout: startup_timeout_secs.map(Duration::from_secs),
        webbridge: WebBridge::Undeclared,
    }
}

/// The layer of the servers a front end's client passed for one session
/// (an editor's `mcpServers` over ACP), as their owner names it.
pub const SESSION_LAYER: &str = "session";

/// The owner of a server a client passed for one session: global (its
/// tools are named `mcp__<name>__<tool>` like a configured server's), of
/// no file, in the [`SESSION_LAYER`]. It exists only in that session's
/// runtime ([`crate::McpRuntime::with_session_servers`]).
pub fn session_owner() -> ServerOwner {
    ServerOwner::Global {
        source: None,
        layer: Some(SESSION_LAYER.to_owned()),
    }
}

/// A stdio server a client passed for one session: its program, arguments
/// and environment overlay exactly as the client sent them (a client
/// resolves its own variables, so nothing is expanded here), on the same
/// allowlisted base environment as every server.
pub fn session_stdio(
    name: &str,
    program: PathBuf,
    args: Vec<String>,
    env: BTreeMap<String, String>,
) -> ServerDefinition {
    ServerDefinition {
        name: name.to_owned(),
        owner: session_owner(),
        transport: Some(TransportKind::Stdio),
        launch: Launch::Stdio(StdioLaunch {
            program,
            args,
            env,
            cwd: None,
            create_dirs: Vec::new(),
            references: References::Literal,
            pinned: Vec::new(),
        }),
        startup_timeout: None,
        webbridge: WebBridge::Undeclared,
    }
}

/// A Streamable HTTP server a client passed for one session, its headers
/// sent literally to `url` only.
pub fn session_http(
    name: &str,
    url: String,
    headers: BTreeMap<String, String>,
) -> ServerDefinition {
    ServerDefinition {
        name: name.to_owned(),
        owner: session_owner(),
        transport: Some(TransportKind::StreamableHttp),
        launch: Launch::StreamableHttp(HttpLaunch {
            url,
            headers,
            references: References::Literal,
        }),
        startup_timeout: None,
        webbridge: WebBridge::Undeclared,
    }
}

/// A legacy SSE server a client passed for one session: listed as skipped
/// ([`codes::TRANSPORT_UNSUPPORTED`]), never started.
pub fn session_sse(name: &str) -> ServerDefinition {
    ServerDefinition {
        name: name.to_owned(),
        owner: session_owner(),
        transport: Some(TransportKind::Sse),
        launch: Launch::Unsupported,
        startup_timeout: None,
        webbridge: WebBridge::Undeclared,
    }
}

/// What a plugin installation contributes to the adaptation of its
/// servers. `credentials` maps declared environment names to values and
/// is injected only into this installation's stdio processes.
#[derive(Clone, PartialEq, Eq)]
pub struct PluginContext {
    pub installation: String,
    pub plugin: String,
    /// The absolute plugin root.
    pub root: PathBuf,
    /// The absolute `PLUGIN_DATA` folder (created before a stdio spawn).
    pub data_dir: PathBuf,
    pub credentials: BTreeMap<String, String>,
    /// The labels of the plugin's required credentials without a value.
    pub missing_credentials: Vec<String>,
    /// The capabilities the manifest declares, by server name.
    pub capabilities: BTreeMap<String, std::collections::BTreeSet<McpServerCapability>>,
}

impl fmt::Debug for PluginContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PluginContext")
            .field("installation", &self.installation)
            .field("plugin", &self.plugin)
            .field("root", &self.root)
            .field("data_dir", &self.data_dir)
            .field("credentials", &self.credentials.keys().collect::<Vec<_>>())
            .field("missing_credentials", &self.missing_credentials)
            .finish()
    }
}

/// The environment names the host sets last, overriding everything.
pub const PLUGIN_ROOT_VAR: &str = "PLUGIN_ROOT";
pub const PLUGIN_DATA_VAR: &str = "PLUGIN_DATA";

/// Adapts a plugin's validated `mcp.json` entries, in their order. An
/// invalid entry becomes a server that is never started and shows why.
pub fn plugin_definitions(
    ctx: &PluginContext,
    entries: &[McpServerEntry],
) -> Vec<ServerDefinition> {
    entries
        .iter()
        .map(|entry| plugin_definition(ctx, entry))
        .collect()
}

fn plugin_definition(ctx: &PluginContext, entry: &McpServerEntry) -> ServerDefinition {
    let owner = ServerOwner::Plugin {
        installation: ctx.installation.clone(),
        plugin: ctx.plugin.clone(),
    };
    let transport = entry.transport.map(|t| match t {
        evoflux_plugins::McpTransport::Stdio => TransportKind::Stdio,
        evoflux_plugins::McpTransport::StreamableHttp => TransportKind::StreamableHttp,
        evoflux_plugins::McpTransport::Sse => TransportKind::Sse,
    });
    let launch = match &entry.server {
        None => Launch::Invalid {
            code: codes::SERVER_INVALID,
            message: format!(
                "the declaration of `{}` in the plugin's mcp.json is invalid; the plugin's inspection lists why",
                entry.name
            ),
        },
        Some(McpServer::Stdio(_)) if entry.needs_credentials(&ctx.missing_credentials) => {
            Launch::NeedsCredentials {
                missing: ctx.missing_credentials.clone(),
            }
        }
        Some(McpServer::Stdio(s)) => {
            let root = ctx.root.to_string_lossy();
            let data = ctx.data_dir.to_string_lossy();
            let expand = |v: &str| expand_placeholders(v, &root, &data);
            let program = match &s.command {
                McpCommand::Bare { name } => PathBuf::from(name),
                McpCommand::PluginRelative { relative, .. } => ctx.root.join(relative),
            };
            let cwd = match &s.cwd {
                None => ctx.root.clone(),
                Some(c) => {
                    let base = match c.base {
                        CwdBase::PluginRoot => &ctx.root,
                        CwdBase::PluginData => &ctx.data_dir,
                    };
                    if c.relative.as_os_str().is_empty() {
                        base.clone()
                    } else {
                        base.join(&c.relative)
                    }
                }
            };
            // Precedence: configured env, then credentials, then the two
            // host variables last.
            let mut env: BTreeMap<String, String> =
                s.env.iter().map(|(k, v)| (k.clone(), expand(v))).collect();
            env.extend(ctx.credentials.clone());
            env.insert(PLUGIN_ROOT_VAR.to_owned(), root.clone().into_owned());
            env.insert(PLUGIN_DATA_VAR.to_owned(), data.clone().into_owned());
            Launch::Stdio(StdioLaunch {
                program,
                args: s.args.iter().map(|a| expand(a)).collect(),
                env,
                cwd: Some(cwd),
                create_dirs: vec![ctx.data_dir.clone()],
                references: References::Literal,
                pinned: Vec::new(),
            })
        }
        Some(McpServer::StreamableHttp(r)) => Launch::StreamableHttp(HttpLaunch {
            url: r.url.clone(),
            headers: r.headers.clone(),
            references: References::Literal,
        }),
        Some(McpServer::Sse(_)) => Launch::Unsupported,
    };
    ServerDefinition {
        name: entry.name.clone(),
        owner,
        transport,
        launch,
        // A plugin's `mcp.json` is checked by `evoflux_plugins::mcp`, whose
        // entry shape has no start-up limit: the manager's default applies.
        startup_timeout: None,
        webbridge: match ctx
            .capabilities
            .get(&entry.name)
            .is_some_and(|c| c.contains(&McpServerCapability::WebbridgeSafe))
        {
            true => WebBridge::Safe,
            false => WebBridge::Undeclared,
        },
    }
}

/// What a user should know about a definition before it runs: why it is
/// not started (`mcp/transport-unsupported`, `mcp/server-invalid`, …) and
/// which configured headers are dropped because the client sets them
/// (`mcp/header-reserved`).
pub fn definition_diagnostics(def: &ServerDefinition) -> Vec<Diagnostic> {
    let mut out: Vec<Diagnostic> = skipped_diagnostic(def).into_iter().collect();
    out.extend(reserved_header_diagnostics(def));
    out
}

/// `mcp/header-reserved` for each configured header the client overrides.
/// (Plugin inspection reports everything else about plugin entries.)
pub fn reserved_header_diagnostics(def: &ServerDefinition) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    if let Launch::StreamableHttp(l) = &def.launch {
        let (_, dropped) = crate::client::partition_headers(&l.headers);
        for name in dropped {
            out.push(
                Diagnostic::warning(
                    codes::HEADER_RESERVED,
                    format!(
                        "MCP server `{}` ({}): header `{name}` is set by the MCP client and the configured value is ignored",
                        def.name,
                        def.owner.label()
                    ),
                )
                .with_field(format!("mcpServers.{}.headers.{name}", def.name)),
            );
        }
    }
    out
}

/// Why a server waits: the missing credentials, by label.
pub fn needs_credentials_message(def: &ServerDefinition, missing: &[String]) -> String {
    format!(
        "MCP server `{}` ({}) is not started until the plugin's required credentials are set: {}",
        def.name,
        def.owner.label(),
        missing.join(", ")
    )
}

/// The diagnostic for a server that is listed but not started.
pub fn skipped_diagnostic(def: &ServerDefinition) -> Option<Diagnostic> {
    match &def.launch {
        Launch::Unsupported => Some(Diagnostic::warning(
            codes::TRANSPORT_UNSUPPORTED,
            format!(
                "MCP server `{}` ({}) uses the legacy `sse` transport, which evoflux lists but never starts",
                def.name,
                def.owner.label()
            ),
        )),
        Launch::Invalid { code, message } => {
            let d = Diagnostic::error(code, message.clone())
                .with_field(format!("mcpServers.{}", def.name));
            Some(match &def.owner {
                ServerOwner::Global {
                    source: Some(file), ..
                } => d.with_file(file),
                ServerOwner::Global { source: None, .. } | ServerOwner::Plugin { .. } => d,
            })
        }
        Launch::NeedsCredentials { missing } => Some(Diagnostic::warning(
            codes::NEEDS_CREDENTIALS,
            needs_credentials_message(def, missing),
        )),
        Launch::Stdio(_) | Launch::StreamableHttp(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use evoflux_plugins::mcp::{McpCwd, StdioServer};

    fn ctx() -> PluginContext {
        PluginContext {
            installation: "0123".into(),
            plugin: "demo".into(),
            root: PathBuf::from("/plugins/demo"),
            data_dir: PathBuf::from("/data/0123"),
            credentials: BTreeMap::from([("API_TOKEN".into(), "s3cret".into())]),
            missing_credentials: Vec::new(),
            capabilities: BTreeMap::new(),
        }
    }

    #[test]
    fn only_a_server_its_plugin_declares_webbridge_safe_is_safe() {
        let mut ctx = ctx();
        ctx.capabilities.insert(
            "safe".into(),
            [McpServerCapability::WebbridgeSafe].into_iter().collect(),
        );
        // An invalid entry is enough: the capability does not depend on it.
        let entry = |name: &str| McpServerEntry {
            name: name.into(),
            transport: None,
            server: None,
        };
        assert_eq!(
            plugin_definition(&ctx, &entry("safe")).webbridge,
            WebBridge::Safe
        );
        assert_eq!(
            plugin_definition(&ctx, &entry("other")).webbridge,
            WebBridge::Undeclared
        );
    }

    fn stdio(server: StdioServer) -> ServerDefinition {
        plugin_definition(
            &ctx(),
            &McpServerEntry {
                name: "svc".into(),
                transport: Some(evoflux_plugins::McpTransport::Stdio),
                server: Some(McpServer::Stdio(server)),
            },
        )
    }

    #[test]
    fn plugin_stdio_is_adapted() {
        let def = stdio(StdioServer {
            command: McpCommand::PluginRelative {
                raw: "./bin/server".into(),
                relative: PathBuf::from("bin/server"),
            },
            args: vec!["--root=${PLUGIN_ROOT}".into(), "$HOME".into()],
            env: BTreeMap::from([
                ("DB".into(), "${PLUGIN_DATA}/db".into()),
                ("API_TOKEN".into(), "configured".into()),
            ]),
            cwd: Some(McpCwd {
                raw: "${PLUGIN_DATA}/work".into(),
                base: CwdBase::PluginData,
                relative: PathBuf::from("work"),
            }),
        });
        let Launch::Stdio(l) = &def.launch else {
            panic!("{def:?}")
        };
        assert_eq!(l.program, PathBuf::from("/plugins/demo/bin/server"));
        assert_eq!(l.args, ["--root=/plugins/demo", "$HOME"]);
        assert_eq!(l.env["DB"], "/data/0123/db");
        // Credentials override configured values of the same name.
        assert_eq!(l.env["API_TOKEN"], "s3cret");
        assert_eq!(l.env["PLUGIN_ROOT"], "/plugins/demo");
        assert_eq!(l.env["PLUGIN_DATA"], "/data/0123");
        assert_eq!(l.cwd.as_deref(), Some(Path::new("/data/0123/work")));
        assert_eq!(l.create_dirs, [PathBuf::from("/data/0123")]);
        assert_eq!(def.naming_key(), "demo_svc");
        // Secrets never show in Debug output.
        assert!(!format!("{l:?}").contains("s3cret"));
        assert!(!format!("{:?}", ctx()).contains("s3cret"));
    }

    #[test]
    fn plugin_default_cwd_is_the_root_and_bare_commands_stay_bare() {
        let def = stdio(StdioServer {
            command: McpCommand::Bare {
                name: "node".into(),
            },
            args: vec![],
            env: BTreeMap::new(),
            cwd: None,
        });
        let Launch::Stdio(l) = &def.launch else {
            panic!()
        };
        assert_eq!(l.program, PathBuf::from("node"));
        assert_eq!(l.cwd.as_deref(), Some(Path::new("/plugins/demo")));
    }

    #[test]
    fn invalid_and_sse_entries_are_listed_not_started() {
        let invalid = plugin_definition(
            &ctx(),
            &McpServerEntry {
                name: "bad".into(),
                transport: None,
                server: None,
            },
        );
        assert!(
            matches!(invalid.launch, Launch::Invalid { code, .. } if code == codes::SERVER_INVALID)
        );
        let d = skipped_diagnostic(&invalid).unwrap();
        assert_eq!(d.code, codes::SERVER_INVALID);

        let sse = from_connection(
            "old",
            &ConnectionDefinition::Sse {
                url: "http://127.0.0.1:1/sse".into(),
                headers: BTreeMap::new(),
            },
            ServerOwner::Global {
                source: None,
                layer: None,
            },
            None,
        );
        assert_eq!(sse.launch, Launch::Unsupported);
        assert_eq!(
            skipped_diagnostic(&sse).unwrap().code,
            codes::TRANSPORT_UNSUPPORTED
        );
    }

    #[test]
    fn reserved_headers_are_reported() {
        let def = from_connection(
            "h",
            &ConnectionDefinition::StreamableHttp {
                url: "https://example.com/mcp".into(),
                headers: BTreeMap::from([
                    ("Accept".into(), "x".into()),
                    ("Mcp-Session-Id".into(), "y".into()),
                    ("X-Api-Key".into(), "z".into()),
                ]),
                startup_timeout_secs: None,
            },
            ServerOwner::Global {
                source: None,
                layer: None,
            },
            None,
        );
        let codes: Vec<_> = definition_diagnostics(&def)
            .into_iter()
            .map(|d| d.code)
            .collect();
        assert_eq!(codes, [codes::HEADER_RESERVED, codes::HEADER_RESERVED]);
    }

    #[test]
    fn a_connections_startup_timeout_is_its_own_and_a_plugins_is_the_default() {
        let global = |def: ConnectionDefinition| {
            from_connection(
                "s",
                &def,
                ServerOwner::Global {
                    source: None,
                    layer: None,
                },
                None,
            )
            .startup_timeout
        };
        assert_eq!(
            global(ConnectionDefinition::Stdio {
                command: "srv".into(),
                args: Vec::new(),
                env: BTreeMap::new(),
                cwd: None,
                startup_timeout_secs: Some(90),
            }),
            Some(Duration::from_secs(90))
        );
        assert_eq!(
            global(ConnectionDefinition::StreamableHttp {
                url: "https://example.com/mcp".into(),
                headers: BTreeMap::new(),
                startup_timeout_secs: Some(5),
            }),
            Some(Duration::from_secs(5))
        );
        assert_eq!(
            global(ConnectionDefinition::Stdio {
                command: "srv".into(),
                args: Vec::new(),
                env: BTreeMap::new(),
                cwd: None,
                startup_timeout_secs: None,
            }),
            None
        );
        let plugin = stdio(StdioServer {
            command: McpCommand::Bare {
                name: "node".into(),
            },
            args: vec![],
            env: BTreeMap::new(),
            cwd: None,
        });
        assert_eq!(plugin.startup_timeout, None);
    }

    #[test]
    fn global_relative_paths_resolve_against_the_mcp_json_folder() {
        let def = from_connection(
            "local",
            &ConnectionDefinition::Stdio {
                command: "./bin/srv".into(),
                args: vec!["${PLUGIN_ROOT}".into()],
                env: BTreeMap::new(),
                cwd: Some("work".into()),
                startup_timeout_secs: None,
            },
            ServerOwner::Global {
                source: None,
                layer: None,
            },
            Some(Path::new("/repo/.evoflux")),
        );
        let Launch::Stdio(l) = &def.launch else {
            panic!()
        };
        assert_eq!(l.program, PathBuf::from("/repo/.evoflux/./bin/srv"));
        assert_eq!(l.cwd.as_deref(), Some(Path::new("/repo/.evoflux/work")));
        // Placeholders are a plugin feature: global args stay literal.
        assert_eq!(l.args, ["${PLUGIN_ROOT}"]);
        assert_eq!(def.naming_key(), "local");
    }
}

#[cfg(test)]
mod reference_tests {
    use super::*;

    fn launch(references: References) -> StdioLaunch {
        StdioLaunch {
            program: PathBuf::from("srv"),
            args: vec!["--root=${ROOT}".into(), "${MODE:-fast}".into()],
            env: BTreeMap::from([("KEY".into(), "${KEY}".into())]),
            cwd: None,
            create_dirs: Vec::new(),
            references,
            pinned: Vec::new(),
        }
    }

    #[test]
    fn args_and_env_take_references_as_claude_code_expands_them() {
        let env = BTreeMap::from([
            ("ROOT".to_owned(), "/data".to_owned()),
            ("KEY".to_owned(), "k-1".to_owned()),
        ]);
        let expanded = launch(References::FromEnvironment)
            .with_references(&env)
            .unwrap();
        assert_eq!(expanded.args, ["--root=/data", "fast"]);
        assert_eq!(expanded.env["KEY"], "k-1");
        // A plugin's launch is sent as written.
        let literal = launch(References::Literal).with_references(&env).unwrap();
        assert_eq!(literal.args, ["--root=${ROOT}", "${MODE:-fast}"]);
        let unset = launch(References::FromEnvironment)
            .with_references(&BTreeMap::new())
            .unwrap_err();
        assert_eq!(unset.name, "ROOT");
    }
}

#[cfg(test)]
mod repository_key_tests {
    use super::*;
    use evoflux_graph::RootOptions;

    /// The servers of a graph with `user` as `mcp.json` in the user's
    /// config dir (`config`) and `project` as a trusted repository's
    /// (`repo`) `.evoflux/mcp.json`, once `files` (paths below the temp
    /// folder, and their text) are written; and that folder, which holds
    /// what the servers run.
    fn servers_with(
        user: &str,
        project: &str,
        files: &[(&str, &str)],
    ) -> (tempfile::TempDir, Vec<ServerDefinition>) {
        let tmp = tempfile::tempdir().unwrap();
        let (config, repo) = (tmp.path().join("config"), tmp.path().join("repo"));
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join(".evoflux")).unwrap();
        std::fs::create_dir_all(&config).unwrap();
        for (path, text) in files {
            std::fs::write(tmp.path().join(path), text).unwrap();
        }
        std::fs::write(config.join("mcp.json"), user).unwrap();
        std::fs::write(repo.join(".evoflux/mcp.json"), project).unwrap();
        let graph = evoflux_graph::compile_standard(&RootOptions {
            user_config_dir: Some(config),
            trusted: vec![repo.clone()],
            workspaces: vec![repo],
            ..RootOptions::default()
        })
        .unwrap();
        (tmp, definitions_from_graph(&graph))
    }

    /// [`servers_with`] with no other files: the servers alone.
    fn servers(user: &str, project: &str) -> Vec<ServerDefinition> {
        servers_with(user, project, &[]).1
    }

    fn server<'a>(all: &'a [ServerDefinition], name: &str) -> &'a ServerDefinition {
        all.iter().find(|s| s.name == name).unwrap()
    }

    #[test]
    fn a_repositorys_server_is_pinned_to_the_files_it_runs_and_the_users_is_not() {
        let (_tmp, all) = servers_with(
            r#"{"mcpServers": {"mine": {"command": "./mine.sh"}}}"#,
            r#"{"mcpServers": {"theirs": {"command": "./run.sh", "args": ["srv.py", "-v"]}}}"#,
            &[
                ("repo/.evoflux/run.sh", "run\n"),
                ("repo/srv.py", "serve()\n"),
                ("config/mine.sh", "mine\n"),
            ],
        );
        let pinned = |name: &str| match &server(&all, name).launch {
            Launch::Stdio(l) => l
                .pinned
                .iter()
                .map(|f| (f.source.clone(), f.unchanged()))
                .collect::<Vec<_>>(),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            pinned("theirs"),
            [
                (".evoflux/run.sh".to_owned(), true),
                ("srv.py".to_owned(), true)
            ]
        );
        assert!(pinned("mine").is_empty());
    }

    #[test]
    fn a_repositorys_server_never_refers_to_a_key_variable_and_the_users_does() {
        let all = servers(
            r#"{"mcpServers": {"mine": {"command": "srv", "env": {"K": "${OPENAI_API_KEY}"}}}}"#,
            r#"{"mcpServers": {
                "leaky": {"command": "srv", "env": {"K": "${OPENAI_API_KEY}"}},
                "header": {"url": "https://x.example/mcp", "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}"}},
                "arg": {"command": "srv", "args": ["--key=${ANTHROPIC_API_KEY:-none}"]},
                "fine": {"command": "srv", "args": ["${HOME}/x"], "env": {"MODE": "${MODE:-a}"}}
            }}"#,
        );
        for name in ["leaky", "header", "arg"] {
            let def = server(&all, name);
            let Launch::Invalid { code, message } = &def.launch else {
                panic!("{name} would start: {:?}", def.launch)
            };
            assert_eq!(*code, codes::PROJECT_SECRET_EXPANSION);
            assert!(message.contains(&format!("`{name}`")), "{message}");
            assert!(message.contains(".evoflux/mcp.json"), "{message}");
            let d = definition_diagnostics(def);
            assert_eq!(d[0].code, codes::PROJECT_SECRET_EXPANSION);
            assert!(d[0].locator.file.is_some());
        }
        assert!(message_names(
            &server(&all, "leaky").launch,
            "OPENAI_API_KEY"
        ));
        assert!(message_names(
            &server(&all, "header").launch,
            "GITHUB_TOKEN"
        ));
        assert!(matches!(server(&all, "fine").launch, Launch::Stdio(_)));
        assert!(matches!(server(&all, "mine").launch, Launch::Stdio(_)));
    }

    fn message_names(launch: &Launch, var: &str) -> bool {
        matches!(launch, Launch::Invalid { message, .. } if message.contains(&format!("${{{var}}}")))
    }
}
