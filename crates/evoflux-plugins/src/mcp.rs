//! `mcp.json`: MCP server declarations of a plugin.
//!
//! Validation has two stages, as the spec requires. The document must be
//! exactly `{"$schema", "mcpServers"}` with the `$schema` of the manifest's
//! release; otherwise the plugin's MCP is disabled and nothing else is
//! affected. Each entry is then validated against the closed shape of its
//! `type`; an invalid entry skips only that server. A valid `sse` entry is
//! kept (it is shown to the user) but never started.
//!
//! Everything here is static: no file is executed and no URL is contacted.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use evoflux_core::Diagnostic;
use evoflux_graph::connection::{check_url, is_header_name, is_header_value};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::codes;
use crate::manifest::kind;
use crate::schema::SpecVersion;
use crate::scope::{Scope, ScopedDiagnostic};
use crate::tree::{normalize_lexically, stays_inside};
use crate::unique_json::UniqueJsonError;

/// The placeholder for the absolute plugin root.
pub const PLUGIN_ROOT: &str = "PLUGIN_ROOT";
/// The placeholder for the absolute installation data folder.
pub const PLUGIN_DATA: &str = "PLUGIN_DATA";

/// The transports of `mcp.json` 1.0.0. Closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum McpTransport {
    Stdio,
    StreamableHttp,
    /// Legacy HTTP+SSE: valid, reported, never started.
    Sse,
}

impl McpTransport {
    pub fn from_type(value: &str) -> Option<McpTransport> {
        match value {
            "stdio" => Some(McpTransport::Stdio),
            "streamable-http" => Some(McpTransport::StreamableHttp),
            "sse" => Some(McpTransport::Sse),
            _ => None,
        }
    }

    pub const fn as_str(self) -> &'static str {
        match self {
            McpTransport::Stdio => "stdio",
            McpTransport::StreamableHttp => "streamable-http",
            McpTransport::Sse => "sse",
        }
    }

    /// Whether evoflux starts servers of this transport.
    pub const fn is_started(self) -> bool {
        match self {
            McpTransport::Stdio | McpTransport::StreamableHttp => true,
            McpTransport::Sse => false,
        }
    }
}

impl fmt::Display for McpTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The single executable token of a stdio server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum McpCommand {
    /// A bare name, looked up on `PATH` when started.
    Bare { name: String },
    /// `./relative`: an executable bundled in the package.
    PluginRelative { raw: String, relative: PathBuf },
}

impl McpCommand {
    /// The command exactly as written.
    pub fn as_written(&self) -> &str {
        match self {
            McpCommand::Bare { name } => name,
            McpCommand::PluginRelative { raw, .. } => raw,
        }
    }
}

/// Which folder a `cwd` is relative to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CwdBase {
    PluginRoot,
    PluginData,
}

/// A validated working directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct McpCwd {
    pub raw: String,
    pub base: CwdBase,
    /// Lexically normalized, relative to `base`; empty for the base itself.
    pub relative: PathBuf,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StdioServer {
    pub command: McpCommand,
    pub args: Vec<String>,
    /// Visible configuration, not secrets; still never shown in trust review.
    /// Serialized as its names only: values can hold tokens, and no
    /// inspection output (`--json` included) may print them.
    #[serde(serialize_with = "names_only")]
    pub env: BTreeMap<String, String>,
    /// `None` means the plugin root.
    pub cwd: Option<McpCwd>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RemoteServer {
    /// The URL exactly as written (never expanded).
    pub url: String,
    /// Host and port as they appear in the URL.
    pub host: String,
    /// Serialized as its names only, as `env` is.
    #[serde(serialize_with = "names_only")]
    pub headers: BTreeMap<String, String>,
}

/// A map of names to values that may be secret, written as its names.
fn names_only<S: serde::Serializer>(
    map: &BTreeMap<String, String>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_seq(map.keys())
}

/// A valid server declaration, one variant per transport.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum McpServer {
    Stdio(StdioServer),
    StreamableHttp(RemoteServer),
    Sse(RemoteServer),
}

impl McpServer {
    pub const fn transport(&self) -> McpTransport {
        match self {
            McpServer::Stdio(_) => McpTransport::Stdio,
            McpServer::StreamableHttp(_) => McpTransport::StreamableHttp,
            McpServer::Sse(_) => McpTransport::Sse,
        }
    }
}

/// One entry of `mcpServers`, valid or not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct McpServerEntry {
    pub name: String,
    /// The declared transport, when `type` named a known one.
    pub transport: Option<McpTransport>,
    /// The server when the entry is valid; `None` means skipped.
    pub server: Option<McpServer>,
}

impl McpServerEntry {
    pub fn is_valid(&self) -> bool {
        self.server.is_some()
    }

    /// Valid and of a transport evoflux starts.
    pub fn is_startable(&self) -> bool {
        self.server
            .as_ref()
            .is_some_and(|s| s.transport().is_started())
    }

    /// Whether this server waits for the plugin's credentials: a stdio
    /// server gets them in its environment, so it is not started while a
    /// required one is missing (`missing`, from
    /// [`crate::CredentialValues::missing_required`]).
    pub fn needs_credentials(&self, missing: &[String]) -> bool {
        !missing.is_empty() && matches!(self.server, Some(McpServer::Stdio(_)))
    }
}

/// Whether one server of a plugin would be started, before anything runs:
/// what `plugin show` and the API say next to the live state of `mcp list`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Readiness {
    /// Valid; started when the plugin is enabled.
    Startable,
    /// Waits for a required credential of the plugin.
    NeedsCredentials,
    /// Valid, but of a transport evoflux does not run (`sse`).
    NotStarted,
    /// Invalid; the inspection says why.
    Skipped,
}

/// One server of a plugin and its [`Readiness`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ServerReadiness {
    pub name: String,
    pub readiness: Readiness,
}

impl ServerReadiness {
    /// The readiness of every entry, given the labels of the plugin's
    /// missing required credentials.
    pub fn of_all(entries: &[McpServerEntry], missing: &[String]) -> Vec<ServerReadiness> {
        entries
            .iter()
            .map(|e| ServerReadiness {
                name: e.name.clone(),
                readiness: match (e.is_valid(), e.is_startable(), e.needs_credentials(missing)) {
                    (false, _, _) => Readiness::Skipped,
                    (true, false, _) => Readiness::NotStarted,
                    (true, true, true) => Readiness::NeedsCredentials,
                    (true, true, false) => Readiness::Startable,
                },
            })
            .collect()
    }
}

/// A document that passed top-level validation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct McpConfig {
    /// Entries in name order.
    pub servers: Vec<McpServerEntry>,
}

/// The result of validating `mcp.json`.
#[derive(Debug, Clone, PartialEq)]
pub struct McpOutcome {
    /// `None` when the top level is invalid: MCP is disabled for the plugin.
    pub config: Option<McpConfig>,
    pub diagnostics: Vec<ScopedDiagnostic>,
}

/// Validates the text of `mcp.json` for a plugin of release `spec` rooted at
/// the canonical `root`.
pub fn validate_mcp(text: &str, file: &Path, spec: SpecVersion, root: &Path) -> McpOutcome {
    let mut diagnostics = Vec::new();
    let mut top = |d: Diagnostic| {
        diagnostics.push(ScopedDiagnostic::new(Scope::Mcp, d.with_file(file)));
    };
    if let Err(e) = evoflux_core::nesting::check_json(text) {
        top(Diagnostic::error(
            e.code(),
            format!("mcp.json: {e}; MCP is disabled for this plugin"),
        )
        .with_line(e.line));
        return McpOutcome {
            config: None,
            diagnostics,
        };
    }
    let value: Value = match crate::unique_json::parse(text) {
        Ok(v) => v,
        Err(UniqueJsonError::Syntax(e)) => {
            top(Diagnostic::error(
                codes::MCP_INVALID_JSON,
                format!("mcp.json is not valid JSON: {e}; MCP is disabled for this plugin"),
            )
            .with_line(u32::try_from(e.line()).unwrap_or(u32::MAX)));
            return McpOutcome {
                config: None,
                diagnostics,
            };
        }
        Err(UniqueJsonError::Duplicate(dup)) => {
            top(Diagnostic::error(
                codes::MCP_DUPLICATE_KEY,
                format!(
                    "mcp.json has the key `{}` twice (line {}); JSON keeps only the last, so \
                     remove or rename one; MCP is disabled for this plugin",
                    dup.path, dup.line
                ),
            )
            .with_line(dup.line)
            .with_field(dup.path));
            return McpOutcome {
                config: None,
                diagnostics,
            };
        }
    };
    let Value::Object(doc) = &value else {
        top(Diagnostic::error(
            codes::MCP_TOP_LEVEL_INVALID,
            format!(
                "mcp.json must be an object, found {}; MCP is disabled for this plugin",
                kind(&value)
            ),
        ));
        return McpOutcome {
            config: None,
            diagnostics,
        };
    };
    let mut ok = true;
    for key in doc.keys() {
        if key != "$schema" && key != "mcpServers" {
            top(Diagnostic::error(
                codes::MCP_TOP_LEVEL_INVALID,
                format!("mcp.json allows only `$schema` and `mcpServers`, found `{key}`; MCP is disabled for this plugin"),
            )
            .with_field(key.as_str()));
            ok = false;
        }
    }
    match doc.get("$schema") {
        Some(Value::String(id)) if id == spec.mcp_schema() => {}
        Some(Value::String(id)) => {
            top(Diagnostic::error(
                codes::MCP_SCHEMA_UNSUPPORTED,
                format!(
                    "`$schema` `{id}` is not the mcp.json schema of Agent Plugins {} (`{}`); MCP is disabled for this plugin",
                    spec.as_str(),
                    spec.mcp_schema()
                ),
            )
            .with_field("$schema"));
            ok = false;
        }
        Some(other) => {
            top(Diagnostic::error(
                codes::MCP_TOP_LEVEL_INVALID,
                format!(
                    "`$schema` must be a string, found {}; MCP is disabled for this plugin",
                    kind(other)
                ),
            )
            .with_field("$schema"));
            ok = false;
        }
        None => {
            top(Diagnostic::error(
                codes::MCP_TOP_LEVEL_INVALID,
                "mcp.json must declare `$schema`; MCP is disabled for this plugin",
            )
            .with_field("$schema"));
            ok = false;
        }
    }
    let servers = match doc.get("mcpServers") {
        Some(Value::Object(servers)) => Some(servers),
        Some(other) => {
            top(Diagnostic::error(
                codes::MCP_TOP_LEVEL_INVALID,
                format!(
                    "`mcpServers` must be an object, found {}; MCP is disabled for this plugin",
                    kind(other)
                ),
            )
            .with_field("mcpServers"));
            None
        }
        None => {
            top(Diagnostic::error(
                codes::MCP_TOP_LEVEL_INVALID,
                "mcp.json must declare `mcpServers`; MCP is disabled for this plugin",
            )
            .with_field("mcpServers"));
            None
        }
    };
    let (true, Some(servers)) = (ok, servers) else {
        return McpOutcome {
            config: None,
            diagnostics,
        };
    };
    let mut entries = Vec::with_capacity(servers.len());
    for (name, value) in servers {
        let mut checker = EntryChecker {
            name,
            file,
            root,
            diagnostics: &mut diagnostics,
            ok: true,
        };
        entries.push(checker.entry(value));
    }
    McpOutcome {
        config: Some(McpConfig { servers: entries }),
        diagnostics,
    }
}

/// The closed field set of a stdio entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StdioField {
    Type,
    Command,
    Args,
    Env,
    Cwd,
}

impl StdioField {
    fn from_key(key: &str) -> Option<StdioField> {
        Some(match key {
            "type" => StdioField::Type,
            "command" => StdioField::Command,
            "args" => StdioField::Args,
            "env" => StdioField::Env,
            "cwd" => StdioField::Cwd,
            _ => return None,
        })
    }
}

/// The closed field set of a remote (`streamable-http`, `sse`) entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RemoteField {
    Type,
    Url,
    Headers,
}

impl RemoteField {
    fn from_key(key: &str) -> Option<RemoteField> {
        Some(match key {
            "type" => RemoteField::Type,
            "url" => RemoteField::Url,
            "headers" => RemoteField::Headers,
            _ => return None,
        })
    }
}

struct EntryChecker<'a> {
    name: &'a str,
    file: &'a Path,
    root: &'a Path,
    diagnostics: &'a mut Vec<ScopedDiagnostic>,
    ok: bool,
}

impl EntryChecker<'_> {
    fn field(&self, key: &str) -> String {
        format!("mcpServers.{}.{key}", self.name)
    }

    fn report(&mut self, d: Diagnostic) {
        if d.is_error() {
            self.ok = false;
        }
        self.diagnostics.push(ScopedDiagnostic::new(
            Scope::McpServer(self.name.to_owned()),
            d.with_file(self.file),
        ));
    }

    fn error(&mut self, code: &'static str, key: &str, message: impl Into<String>) {
        let field = self.field(key);
        let message = format!(
            "server `{}`: {}; the server is skipped",
            self.name,
            message.into()
        );
        self.report(Diagnostic::error(code, message).with_field(field));
    }

    fn entry(&mut self, value: &Value) -> McpServerEntry {
        let name = self.name.to_owned();
        let Value::Object(map) = value else {
            self.error(
                codes::MCP_SERVER_INVALID,
                "",
                format!("an entry must be an object, found {}", kind(value)),
            );
            return McpServerEntry {
                name,
                transport: None,
                server: None,
            };
        };
        let transport = match map.get("type") {
            Some(Value::String(t)) => match McpTransport::from_type(t) {
                Some(t) => Some(t),
                None => {
                    self.error(
                        codes::MCP_SERVER_INVALID,
                        "type",
                        format!("unknown `type` `{t}` (expected stdio, streamable-http or sse)"),
                    );
                    None
                }
            },
            Some(other) => {
                self.error(
                    codes::MCP_SERVER_INVALID,
                    "type",
                    format!("`type` must be a string, found {}", kind(other)),
                );
                None
            }
            None => {
                self.error(
                    codes::MCP_SERVER_INVALID,
                    "type",
                    "`type` is required (stdio, streamable-http or sse)",
                );
                None
            }
        };
        let server = match transport {
            None => None,
            Some(McpTransport::Stdio) => self.stdio(map).map(McpServer::Stdio),
            Some(McpTransport::StreamableHttp) => self
                .remote(map, McpTransport::StreamableHttp)
                .map(McpServer::StreamableHttp),
            Some(McpTransport::Sse) => self.remote(map, McpTransport::Sse).map(McpServer::Sse),
        };
        let server = if self.ok { server } else { None };
        if let Some(McpServer::Sse(_)) = &server {
            let field = self.field("type");
            self.report(
                Diagnostic::warning(
                    codes::MCP_TRANSPORT_UNSUPPORTED,
                    format!(
                        "server `{}` uses the legacy `sse` transport, which evoflux reports but never starts",
                        self.name
                    ),
                )
                .with_field(field),
            );
        }
        McpServerEntry {
            name,
            transport,
            server,
        }
    }

    fn stdio(&mut self, map: &Map<String, Value>) -> Option<StdioServer> {
        let mut command = None;
        let mut args = Vec::new();
        let mut env = BTreeMap::new();
        let mut cwd = None;
        for (key, value) in map {
            let Some(field) = StdioField::from_key(key) else {
                self.error(
                    codes::MCP_SERVER_INVALID,
                    key,
                    format!("unknown field `{key}` for a stdio server"),
                );
                continue;
            };
            match field {
                StdioField::Type => {}
                StdioField::Command => command = self.command(value),
                StdioField::Args => args = self.args(value),
                StdioField::Env => env = self.env(value),
                StdioField::Cwd => cwd = self.cwd(value),
            }
        }
        if !map.contains_key("command") {
            self.error(
                codes::MCP_SERVER_INVALID,
                "command",
                "a stdio server requires `command`",
            );
        }
        Some(StdioServer {
            command: command?,
            args,
            env,
            cwd,
        })
    }

    fn string<'v>(&mut self, value: &'v Value, key: &str) -> Option<&'v str> {
        match value {
            Value::String(s) => Some(s),
            other => {
                self.error(
                    codes::MCP_SERVER_INVALID,
                    key,
                    format!("`{key}` must be a string, found {}", kind(other)),
                );
                None
            }
        }
    }

    fn command(&mut self, value: &Value) -> Option<McpCommand> {
        let raw = self.string(value, "command")?;
        if raw.is_empty() || raw.contains('\0') {
            self.error(
                codes::MCP_COMMAND_INVALID,
                "command",
                "`command` must be one non-empty executable token",
            );
            return None;
        }
        // A `./relative` command names one file of the package, whose name
        // may hold spaces; a bare name is looked up on PATH and must be one
        // executable (`npx -y thing` would fail only at start).
        if let Some(rest) = raw.strip_prefix("./") {
            let escapes = match normalize_lexically(Path::new(rest)) {
                Some(rel) if rel.as_os_str().is_empty() => {
                    self.error(
                        codes::MCP_COMMAND_INVALID,
                        "command",
                        format!("`{raw}` names the plugin root, not an executable"),
                    );
                    return None;
                }
                Some(rel) if !rest.contains('\\') && !rel.has_root() => {
                    if stays_inside(self.root, rest) {
                        return Some(McpCommand::PluginRelative {
                            raw: raw.to_owned(),
                            relative: rel,
                        });
                    }
                    true
                }
                Some(_) => false,
                None => true,
            };
            if escapes {
                self.error(
                    codes::MCP_PATH_ESCAPES,
                    "command",
                    format!("`{raw}` resolves outside the plugin root"),
                );
            } else {
                self.error(
                    codes::MCP_COMMAND_INVALID,
                    "command",
                    format!("`{raw}` must be a `/`-separated path inside the package"),
                );
            }
            return None;
        }
        if raw.contains('/') || raw.contains('\\') || raw.starts_with('.') {
            self.error(
                codes::MCP_COMMAND_INVALID,
                "command",
                format!(
                    "`{raw}` must be a bare executable name or a `./relative` path inside the package (no placeholders, no absolute paths)"
                ),
            );
            return None;
        }
        if !evoflux_core::child_env::is_one_executable(raw) {
            self.error(
                codes::MCP_COMMAND_INVALID,
                "command",
                format!("`{raw}` must be one executable; put its arguments in `args`"),
            );
            return None;
        }
        Some(McpCommand::Bare {
            name: raw.to_owned(),
        })
    }

    fn args(&mut self, value: &Value) -> Vec<String> {
        let Value::Array(items) = value else {
            self.error(
                codes::MCP_SERVER_INVALID,
                "args",
                format!("`args` must be an array of strings, found {}", kind(value)),
            );
            return Vec::new();
        };
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            match item {
                Value::String(s) if !s.contains('\0') => out.push(s.clone()),
                other => self.error(
                    codes::MCP_SERVER_INVALID,
                    &format!("args.{i}"),
                    format!(
                        "`args` must contain only strings without NUL, found {}",
                        kind(other)
                    ),
                ),
            }
        }
        out
    }

    fn env(&mut self, value: &Value) -> BTreeMap<String, String> {
        let Value::Object(map) = value else {
            self.error(
                codes::MCP_SERVER_INVALID,
                "env",
                format!("`env` must be an object of strings, found {}", kind(value)),
            );
            return BTreeMap::new();
        };
        let mut out = BTreeMap::new();
        for (key, v) in map {
            let field = format!("env.{key}");
            if key == PLUGIN_ROOT || key == PLUGIN_DATA {
                self.error(
                    codes::MCP_RESERVED_ENV,
                    &field,
                    format!("`{key}` is set by the host and may not be configured"),
                );
                continue;
            }
            if key.is_empty() || key.contains('=') || key.contains('\0') {
                self.error(
                    codes::MCP_SERVER_INVALID,
                    &field,
                    format!("`{key}` is not a valid environment variable name"),
                );
                continue;
            }
            match v {
                Value::String(s) if !s.contains('\0') => {
                    out.insert(key.clone(), s.clone());
                }
                other => self.error(
                    codes::MCP_SERVER_INVALID,
                    &field,
                    format!(
                        "`env` values must be strings without NUL, found {}",
                        kind(other)
                    ),
                ),
            }
        }
        out
    }

    fn cwd(&mut self, value: &Value) -> Option<McpCwd> {
        let raw = self.string(value, "cwd")?;
        let parsed = if let Some(rest) = raw.strip_prefix("./") {
            Some((CwdBase::PluginRoot, rest))
        } else {
            [
                (CwdBase::PluginRoot, "${PLUGIN_ROOT}"),
                (CwdBase::PluginData, "${PLUGIN_DATA}"),
            ]
            .into_iter()
            .find_map(|(base, placeholder)| {
                let rest = raw.strip_prefix(placeholder)?;
                if rest.is_empty() {
                    Some((base, ""))
                } else {
                    rest.strip_prefix('/').map(|r| (base, r))
                }
            })
        };
        let Some((base, rest)) = parsed else {
            self.error(
                codes::MCP_CWD_INVALID,
                "cwd",
                format!("`{raw}` must start with `./`, `${{PLUGIN_ROOT}}` or `${{PLUGIN_DATA}}`"),
            );
            return None;
        };
        if rest.contains('\\') || rest.contains('\0') {
            self.error(
                codes::MCP_CWD_INVALID,
                "cwd",
                format!("`{raw}` must be a `/`-separated path"),
            );
            return None;
        }
        // Expansion is textual, so `${PLUGIN_ROOT}//x` is `<root>//x`: drop
        // empty segments before normalizing.
        let joined: PathBuf = rest.split('/').filter(|s| !s.is_empty()).collect();
        let relative = match normalize_lexically(&joined) {
            Some(rel) => rel,
            None => {
                self.error(
                    codes::MCP_PATH_ESCAPES,
                    "cwd",
                    format!("`{raw}` climbs out of its base folder"),
                );
                return None;
            }
        };
        if base == CwdBase::PluginRoot {
            let rel = relative.to_string_lossy().replace('\\', "/");
            if !rel.is_empty() && !stays_inside(self.root, &rel) {
                self.error(
                    codes::MCP_PATH_ESCAPES,
                    "cwd",
                    format!("`{raw}` resolves outside the plugin root"),
                );
                return None;
            }
        }
        Some(McpCwd {
            raw: raw.to_owned(),
            base,
            relative,
        })
    }

    fn remote(
        &mut self,
        map: &Map<String, Value>,
        transport: McpTransport,
    ) -> Option<RemoteServer> {
        let mut url = None;
        let mut headers = BTreeMap::new();
        for (key, value) in map {
            let Some(field) = RemoteField::from_key(key) else {
                self.error(
                    codes::MCP_SERVER_INVALID,
                    key,
                    format!("unknown field `{key}` for a {transport} server"),
                );
                continue;
            };
            match field {
                RemoteField::Type => {}
                RemoteField::Url => url = self.url(value),
                RemoteField::Headers => headers = self.headers(value),
            }
        }
        if !map.contains_key("url") {
            self.error(
                codes::MCP_SERVER_INVALID,
                "url",
                format!("a {transport} server requires `url`"),
            );
        }
        let (url, host) = url?;
        Some(RemoteServer { url, host, headers })
    }

    fn url(&mut self, value: &Value) -> Option<(String, String)> {
        let raw = self.string(value, "url")?;
        match check_url(raw) {
            Ok(host) => Some((raw.to_owned(), host)),
            Err(problem) => {
                self.error(codes::MCP_URL_INVALID, "url", format!("`{raw}` {problem}"));
                None
            }
        }
    }

    fn headers(&mut self, value: &Value) -> BTreeMap<String, String> {
        let Value::Object(map) = value else {
            self.error(
                codes::MCP_SERVER_INVALID,
                "headers",
                format!(
                    "`headers` must be an object of strings, found {}",
                    kind(value)
                ),
            );
            return BTreeMap::new();
        };
        let mut out = BTreeMap::new();
        let mut seen: BTreeMap<String, &str> = BTreeMap::new();
        for (name, v) in map {
            let field = format!("headers.{name}");
            if !is_header_name(name) {
                self.error(
                    codes::MCP_HEADER_INVALID,
                    &field,
                    format!("`{name}` is not a valid HTTP header name"),
                );
                continue;
            }
            if let Some(previous) = seen.insert(name.to_ascii_lowercase(), name) {
                self.error(
                    codes::MCP_HEADER_DUPLICATE,
                    &field,
                    format!(
                        "header `{name}` repeats `{previous}` (header names are case-insensitive)"
                    ),
                );
                continue;
            }
            match v {
                Value::String(s) if is_header_value(s) => {
                    out.insert(name.clone(), s.clone());
                }
                Value::String(_) => self.error(
                    codes::MCP_HEADER_INVALID,
                    &field,
                    format!("the value of header `{name}` contains control characters"),
                ),
                other => self.error(
                    codes::MCP_HEADER_INVALID,
                    &field,
                    format!(
                        "the value of header `{name}` must be a string, found {}",
                        kind(other)
                    ),
                ),
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_nesting_disables_mcp_before_parsing() {
        let text = format!(
            "{{\"mcpServers\": {{\"a\": {{\"args\": {}{}}}}}}}",
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        let o = validate_mcp(
            &text,
            Path::new("mcp.json"),
            SpecVersion::V1_0_0,
            Path::new("/p"),
        );
        assert!(o.config.is_none());
        let codes: Vec<&str> = o.diagnostics.iter().map(ScopedDiagnostic::code).collect();
        assert_eq!(codes, ["json/too-deep"]);
    }

    #[test]
    fn transports_are_closed() {
        for t in [
            McpTransport::Stdio,
            McpTransport::StreamableHttp,
            McpTransport::Sse,
        ] {
            assert_eq!(McpTransport::from_type(t.as_str()), Some(t));
        }
        assert_eq!(McpTransport::from_type("http"), None);
        assert!(!McpTransport::Sse.is_started());
    }
}
