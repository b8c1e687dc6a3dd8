//! The MCP server files evoflux reads: its own `mcp.json`, and the files
//! other harnesses keep (Claude Code, codex, VS Code, Cursor), so a setup
//! made there works here as it is.
//!
//! Every format goes through one adapter into evoflux's entry shape, which
//! the one connection parser ([`crate::connection::parse`]) then checks:
//! there is no second MCP parser. Another harness's file is only ever
//! read. A problem in it is a warning, never a failed compile, because the
//! file belongs to another tool; what an adapter cannot carry over is named
//! key by key, never dropped silently.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use evoflux_core::config::ForeignMcp;
use evoflux_core::placeholder::{Piece, env_reference, pieces};
use evoflux_core::{Diagnostic, Diagnostics};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::connection;

/// How one file of MCP servers is read, and which of its scopes an entry
/// comes from. Closed: one adapter each.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum McpFormat {
    /// evoflux's own `mcp.json`: `mcpServers`, checked strictly.
    #[default]
    Evoflux,
    /// Claude Code's `.mcp.json` at a repository root, wrapped in
    /// `mcpServers` or bare.
    ClaudeProject,
    /// `mcpServers` of `~/.claude.json` (Claude Code's user scope).
    ClaudeUser,
    /// `projects.<dir>.mcpServers` of `~/.claude.json`: the servers Claude
    /// Code keeps for one directory (its default "local" scope).
    ClaudeLocal { project: String },
    /// `[mcp_servers.<name>]` of `~/.codex/config.toml`.
    Codex,
    /// `servers` of a repository's `.vscode/mcp.json` (JSON with comments).
    Vscode,
    /// `mcpServers` of a repository's `.cursor/mcp.json`.
    CursorProject,
    /// `mcpServers` of `~/.cursor/mcp.json`.
    CursorUser,
    /// `mcp` of a repository's `opencode.json` (JSON with comments):
    /// `{"type": "local", "command": [..], "environment": {..}}` or
    /// `{"type": "remote", "url": .., "headers": {..}}`.
    OpencodeProject,
    /// `mcp` of `~/.config/opencode/opencode.json`.
    OpencodeUser,
}

/// Claude Code's `~/.claude.json` also keeps its history; it is read up to
/// this size (evoflux's own files keep the usual source bound).
const MAX_CLAUDE_USER_FILE_BYTES: u64 = 64 * 1024 * 1024;

impl McpFormat {
    /// The harness whose file this is (`None` for evoflux's own).
    pub fn harness(&self) -> Option<ForeignMcp> {
        match self {
            McpFormat::Evoflux => None,
            McpFormat::ClaudeProject | McpFormat::ClaudeUser | McpFormat::ClaudeLocal { .. } => {
                Some(ForeignMcp::ClaudeCode)
            }
            McpFormat::Codex => Some(ForeignMcp::Codex),
            McpFormat::Vscode => Some(ForeignMcp::Vscode),
            McpFormat::CursorProject | McpFormat::CursorUser => Some(ForeignMcp::Cursor),
            McpFormat::OpencodeProject | McpFormat::OpencodeUser => Some(ForeignMcp::Opencode),
        }
    }

    /// The largest file of this format that is read.
    pub fn max_bytes(&self) -> u64 {
        match self {
            McpFormat::ClaudeUser | McpFormat::ClaudeLocal { .. } => MAX_CLAUDE_USER_FILE_BYTES,
            McpFormat::Evoflux
            | McpFormat::ClaudeProject
            | McpFormat::Codex
            | McpFormat::Vscode
            | McpFormat::CursorProject
            | McpFormat::CursorUser
            | McpFormat::OpencodeProject
            | McpFormat::OpencodeUser => evoflux_core::source::MAX_SOURCE_FILE_BYTES,
        }
    }

    /// Where in the file the entry `name` is, for diagnostics.
    pub fn field(&self, name: &str) -> String {
        match self {
            McpFormat::Evoflux
            | McpFormat::ClaudeProject
            | McpFormat::ClaudeUser
            | McpFormat::CursorProject
            | McpFormat::CursorUser => format!("mcpServers.{name}"),
            McpFormat::ClaudeLocal { project } => format!("projects.{project}.mcpServers.{name}"),
            McpFormat::Codex => format!("mcp_servers.{name}"),
            McpFormat::Vscode => format!("servers.{name}"),
            McpFormat::OpencodeProject | McpFormat::OpencodeUser => format!("mcp.{name}"),
        }
    }

    /// Distinguishes the scopes of one file in source ids (Claude Code's
    /// user and per-directory servers share `~/.claude.json`).
    pub fn scope_label(&self) -> String {
        match self {
            McpFormat::ClaudeLocal { project } => format!("#projects[{project}]"),
            McpFormat::Evoflux
            | McpFormat::ClaudeProject
            | McpFormat::ClaudeUser
            | McpFormat::Codex
            | McpFormat::Vscode
            | McpFormat::CursorProject
            | McpFormat::CursorUser
            | McpFormat::OpencodeProject
            | McpFormat::OpencodeUser => String::new(),
        }
    }

    /// The directory `${workspaceFolder}` names: the repository directory
    /// holding a project file (`<dir>/.vscode/mcp.json`).
    fn workspace_folder(&self, path: &Path) -> Option<PathBuf> {
        match self {
            McpFormat::Vscode | McpFormat::CursorProject => {
                path.parent().and_then(Path::parent).map(Path::to_path_buf)
            }
            McpFormat::ClaudeProject | McpFormat::OpencodeProject => {
                path.parent().map(Path::to_path_buf)
            }
            McpFormat::ClaudeLocal { project } => Some(PathBuf::from(project)),
            McpFormat::Evoflux
            | McpFormat::ClaudeUser
            | McpFormat::Codex
            | McpFormat::CursorUser
            | McpFormat::OpencodeUser => None,
        }
    }

    /// The directory `${userHome}` names, for a file in the home folder
    /// (`~/.cursor/mcp.json`).
    fn user_home(&self, path: &Path) -> Option<PathBuf> {
        match self {
            McpFormat::CursorUser => path.parent().and_then(Path::parent).map(Path::to_path_buf),
            McpFormat::ClaudeUser | McpFormat::ClaudeLocal { .. } => {
                path.parent().map(Path::to_path_buf)
            }
            // `~/.config/opencode/opencode.json`.
            McpFormat::OpencodeUser => path.ancestors().nth(3).map(Path::to_path_buf),
            McpFormat::Evoflux
            | McpFormat::ClaudeProject
            | McpFormat::Codex
            | McpFormat::Vscode
            | McpFormat::CursorProject
            | McpFormat::OpencodeProject => None,
        }
    }
}

/// One server entry of a file, with the scope it was read from.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub format: McpFormat,
    /// The name as the file writes it.
    pub name: String,
    pub value: Value,
}

/// Every server entry of a file read as `format`, by name. For
/// `~/.claude.json` every scope is returned (the user's servers, then each
/// directory's), whichever of its scopes `format` names; for the other
/// formats, `format`'s own. An `Err` is the diagnostic that says why the
/// file cannot be read (a warning for another harness's file).
pub fn file_entries(format: &McpFormat, path: &Path, text: &str) -> Result<Vec<Entry>, Diagnostic> {
    let own = |servers: Vec<(String, Value)>| {
        servers
            .into_iter()
            .map(|(name, value)| Entry {
                format: format.clone(),
                name,
                value,
            })
            .collect()
    };
    match format {
        McpFormat::Evoflux => connection::entries(path, text).map(own),
        McpFormat::ClaudeProject => {
            let root = json_object(path, text, false)?;
            // Claude Code accepts the servers wrapped in `mcpServers` or as
            // the whole file.
            match root.get("mcpServers") {
                Some(Value::Object(servers)) => Ok(own(servers.clone().into_iter().collect())),
                Some(_) => {
                    Err(foreign_invalid(path, "`mcpServers` is not an object")
                        .with_field("mcpServers"))
                }
                None => Ok(own(root
                    .into_iter()
                    .filter(|(k, v)| k != "$schema" && v.is_object())
                    .collect())),
            }
        }
        McpFormat::ClaudeUser | McpFormat::ClaudeLocal { .. } => claude_user_entries(path, text),
        McpFormat::CursorProject | McpFormat::CursorUser => {
            let mut root = json_object(path, text, false)?;
            servers_object(path, &mut root, "mcpServers").map(own)
        }
        McpFormat::Vscode => {
            let mut root = json_object(path, text, true)?;
            servers_object(path, &mut root, "servers").map(own)
        }
        McpFormat::Codex => codex_entries(path, text).map(own),
        McpFormat::OpencodeProject | McpFormat::OpencodeUser => {
            let mut root = json_object(path, text, true)?;
            servers_object(path, &mut root, "mcp").map(|servers| {
                own(servers
                    .into_iter()
                    // `enabled: false` is opencode's way to keep a server
                    // and not run it.
                    .filter(|(_, v)| v.get("enabled").and_then(Value::as_bool) != Some(false))
                    .collect())
            })
        }
    }
}

fn foreign_invalid(path: &Path, why: impl std::fmt::Display) -> Diagnostic {
    Diagnostic::warning(
        "discover/foreign-mcp-invalid",
        format!("this MCP server file of another tool is not read: {why}"),
    )
    .with_file(path)
}

/// A foreign file the nesting guard refused, as the warning that says it
/// is not read.
fn foreign_refused(path: &Path, e: &evoflux_core::nesting::NestingError) -> Diagnostic {
    Diagnostic::warning(
        e.code(),
        format!("this MCP server file of another tool is not read: {e}"),
    )
    .with_file(path)
    .with_line(e.line)
}

fn json_object(path: &Path, text: &str, comments: bool) -> Result<Map<String, Value>, Diagnostic> {
    let stripped;
    let text = if comments {
        stripped = strip_jsonc(text);
        stripped.as_str()
    } else {
        text
    };
    evoflux_core::nesting::check_json(text).map_err(|e| foreign_refused(path, &e))?;
    match serde_json::from_str(text) {
        Ok(Value::Object(root)) => Ok(root),
        Ok(_) => Err(foreign_invalid(path, "it is not a JSON object")),
        Err(e) => Err(foreign_invalid(path, format!("it is not valid JSON: {e}"))
            .with_line(u32::try_from(e.line()).unwrap_or(0))),
    }
}

/// The servers under `key`; a file without them has none.
fn servers_object(
    path: &Path,
    root: &mut Map<String, Value>,
    key: &str,
) -> Result<Vec<(String, Value)>, Diagnostic> {
    match root.remove(key) {
        Some(Value::Object(servers)) => Ok(servers.into_iter().collect()),
        Some(_) => Err(foreign_invalid(path, format!("`{key}` is not an object")).with_field(key)),
        None => Ok(Vec::new()),
    }
}

/// The parts of `~/.claude.json` that hold servers; everything else in it
/// (history, settings) is skipped unread.
#[derive(Deserialize)]
struct ClaudeUserFile {
    #[serde(default, rename = "mcpServers")]
    mcp_servers: Option<Map<String, Value>>,
    #[serde(default)]
    projects: Option<BTreeMap<String, ClaudeProjectState>>,
}

#[derive(Deserialize)]
struct ClaudeProjectState {
    #[serde(default, rename = "mcpServers")]
    mcp_servers: Option<Map<String, Value>>,
}

fn claude_user_entries(path: &Path, text: &str) -> Result<Vec<Entry>, Diagnostic> {
    evoflux_core::nesting::check_json(text).map_err(|e| foreign_refused(path, &e))?;
    let file: ClaudeUserFile = serde_json::from_str(text).map_err(|e| {
        foreign_invalid(path, format!("it is not valid JSON of Claude Code: {e}"))
            .with_line(u32::try_from(e.line()).unwrap_or(0))
    })?;
    let mut out: Vec<Entry> = file
        .mcp_servers
        .unwrap_or_default()
        .into_iter()
        .map(|(name, value)| Entry {
            format: McpFormat::ClaudeUser,
            name,
            value,
        })
        .collect();
    for (project, state) in file.projects.unwrap_or_default() {
        for (name, value) in state.mcp_servers.unwrap_or_default() {
            out.push(Entry {
                format: McpFormat::ClaudeLocal {
                    project: project.clone(),
                },
                name,
                value,
            });
        }
    }
    Ok(out)
}

fn codex_entries(path: &Path, text: &str) -> Result<Vec<(String, Value)>, Diagnostic> {
    #[derive(Deserialize)]
    struct CodexFile {
        #[serde(default)]
        mcp_servers: BTreeMap<String, toml::Value>,
    }
    let file: CodexFile = toml::from_str(text)
        .map_err(|e| foreign_invalid(path, format!("it is not valid TOML of codex: {e}")))?;
    Ok(file
        .mcp_servers
        .into_iter()
        // `enabled = false` is codex's way to keep a server and not run it.
        .filter(|(_, v)| v.get("enabled").and_then(toml::Value::as_bool) != Some(false))
        .filter_map(|(name, v)| Some((name, serde_json::to_value(v).ok()?)))
        .collect())
}

/// JSON with comments, as VS Code writes it, turned into JSON: `//` and
/// `/* */` comments become spaces (lines keep their numbers) and a comma
/// before a closing bracket is dropped. Strings are left as written.
fn strip_jsonc(text: &str) -> String {
    let b = text.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(b.len());
    let mut i = 0;
    // Where the last comma outside strings went in `out`, if only
    // whitespace and comments followed it.
    let mut pending_comma: Option<usize> = None;
    while i < b.len() {
        match b[i] {
            b'"' => {
                pending_comma = None;
                let start = i;
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i = (i + 1).min(b.len());
                out.extend_from_slice(&b[start..i]);
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    out.push(b' ');
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let end = text[i + 2..].find("*/").map_or(b.len(), |e| i + 2 + e + 2);
                for &c in &b[i..end] {
                    out.push(if c == b'\n' { b'\n' } else { b' ' });
                }
                i = end;
            }
            b',' => {
                pending_comma = Some(out.len());
                out.push(b',');
                i += 1;
            }
            c @ (b'}' | b']') => {
                if let Some(at) = pending_comma.take() {
                    out[at] = b' ';
                }
                out.push(c);
                i += 1;
            }
            c => {
                if !c.is_ascii_whitespace() {
                    pending_comma = None;
                }
                out.push(c);
                i += 1;
            }
        }
    }
    // Only ASCII bytes were replaced, so the text stays UTF-8.
    String::from_utf8(out).unwrap_or_default()
}

/// A name another harness allows but evoflux's connection names do not
/// (`brave_search`, `GitHub`) in evoflux's form: lowercase, with `-` for
/// `_`, `.` and spaces. `None` when nothing valid remains.
pub fn connection_name(foreign: &str) -> Option<String> {
    let mut name = String::with_capacity(foreign.len());
    for c in foreign.chars() {
        match c {
            'a'..='z' | '0'..='9' => name.push(c),
            'A'..='Z' => name.push(c.to_ascii_lowercase()),
            '-' | '_' | '.' | ' ' if !name.is_empty() && !name.ends_with('-') => name.push('-'),
            _ => {}
        }
    }
    while name.ends_with('-') {
        name.pop();
    }
    crate::slot::is_valid_connection_name(&name).then_some(name)
}

/// The keys evoflux's entry shape has, by transport.
const STDIO_KEYS: [&str; 5] = ["type", "command", "args", "env", "cwd"];
const HTTP_KEYS: [&str; 3] = ["type", "url", "headers"];
/// evoflux's per-server start-up limit. Only codex has one of its own
/// ([`codex_startup_timeout`] maps it here), so only a codex entry keeps
/// this key: in the other tools' files it is a key their own tool does
/// not read, and a bad value there must not fail evoflux's compile.
const STARTUP_TIMEOUT_KEY: &str = "startup_timeout_secs";

/// Turns an entry of another harness into evoflux's entry shape. Problems
/// and what could not be carried over are pushed to `diags` as warnings;
/// the result goes to [`connection::parse`] like any entry. evoflux's own
/// entries are returned as written.
pub fn adapt(
    format: &McpFormat,
    path: &Path,
    name: &str,
    value: Value,
    diags: &mut Diagnostics,
) -> Value {
    if *format == McpFormat::Evoflux {
        return value;
    }
    let Value::Object(mut entry) = value else {
        return value;
    };
    let field = format.field(name);
    let mut left_out: Vec<String> = Vec::new();
    match format {
        McpFormat::Codex => codex_to_shape(&mut entry, &mut left_out),
        McpFormat::OpencodeProject | McpFormat::OpencodeUser => {
            opencode_to_shape(&mut entry, &mut left_out);
        }
        McpFormat::Evoflux
        | McpFormat::ClaudeProject
        | McpFormat::ClaudeUser
        | McpFormat::ClaudeLocal { .. }
        | McpFormat::Vscode
        | McpFormat::CursorProject
        | McpFormat::CursorUser => {}
    }
    // The transport in evoflux's words.
    let stdio = match entry.get("type").and_then(Value::as_str) {
        Some("stdio") => true,
        Some("http" | "streamable-http" | "sse") => false,
        Some(_) => return Value::Object(entry),
        None => entry.contains_key("command"),
    };
    match entry.get("type").and_then(Value::as_str) {
        Some("http") | None if !stdio => {
            entry.insert("type".into(), Value::from("streamable-http"));
        }
        None => {
            entry.insert("type".into(), Value::from("stdio"));
        }
        Some(_) => {}
    }
    if stdio && let Some(folder) = format.workspace_folder(path) {
        resolve_relative(&mut entry, &folder);
    }
    let keys: &[&str] = if stdio { &STDIO_KEYS } else { &HTTP_KEYS };
    let timed = *format == McpFormat::Codex;
    entry.retain(|k, _| {
        let kept = keys.contains(&k.as_str()) || (timed && k == STARTUP_TIMEOUT_KEY);
        if !kept {
            left_out.push(k.clone());
        }
        kept
    });
    let workspace = format.workspace_folder(path);
    let home = format.user_home(path);
    let folders = Folders {
        workspace: workspace.as_deref(),
        home: home.as_deref(),
    };
    let mut unresolved = std::collections::BTreeSet::new();
    for (_, v) in entry.iter_mut() {
        substitute_all(v, folders, &mut unresolved);
    }
    // evoflux expands `${VAR}` in args, env and headers only.
    for key in ["command", "url", "cwd"] {
        if entry
            .get(key)
            .and_then(Value::as_str)
            .is_some_and(has_env_reference)
        {
            left_out.push(format!("{key} (its `${{…}}` reference is not expanded)"));
        }
    }
    if !left_out.is_empty() {
        diags.push(
            Diagnostic::warning(
                "compile/connection-not-carried",
                format!(
                    "server `{name}`: {} cannot be carried over from this file and {} ignored",
                    left_out
                        .iter()
                        .map(|k| format!("`{k}`"))
                        .collect::<Vec<_>>()
                        .join(", "),
                    if left_out.len() == 1 { "is" } else { "are" }
                ),
            )
            .with_file(path)
            .with_field(field.clone()),
        );
    }
    if !unresolved.is_empty() {
        diags.push(
            Diagnostic::warning(
                "compile/connection-not-carried",
                format!(
                    "server `{name}`: {} only its own tool can fill in; they are sent as written \
                     (use `${{VAR}}` with an environment variable instead)",
                    unresolved
                        .iter()
                        .map(|k| format!("`${{{k}}}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
            .with_file(path)
            .with_field(field),
        );
    }
    Value::Object(entry)
}

/// The editors run a project's server from the workspace folder, so a
/// relative command path or `cwd` in `.vscode/mcp.json` names a file of
/// the repository, not of `.vscode/`: made absolute here (evoflux would
/// resolve it against the file's own folder).
fn resolve_relative(entry: &mut Map<String, Value>, folder: &Path) {
    for key in ["command", "cwd"] {
        if let Some(Value::String(p)) = entry.get_mut(key) {
            let relative = Path::new(p.as_str()).is_relative();
            let is_path = key == "cwd" || p.contains('/');
            if relative && is_path && !p.starts_with("${") {
                *p = folder.join(p.as_str()).display().to_string();
            }
        }
    }
}

/// codex's keys in evoflux's words: `bearer_token_env_var`, `http_headers`
/// and `env_http_headers` become headers with references; the start-up
/// limit becomes `startup_timeout_secs` ([`codex_startup_timeout`]);
/// `enabled` (only `true` reaches here) is dropped.
fn codex_to_shape(entry: &mut Map<String, Value>, left_out: &mut Vec<String>) {
    entry.remove("enabled");
    codex_startup_timeout(entry, left_out);
    let mut headers: Map<String, Value> = Map::new();
    if let Some(Value::Object(h)) = entry.remove("http_headers") {
        headers.extend(h);
    }
    if let Some(Value::Object(h)) = entry.remove("env_http_headers") {
        for (header, var) in h {
            match var.as_str() {
                Some(var) => {
                    headers.insert(header, Value::from(format!("${{{var}}}")));
                }
                None => left_out.push(format!("env_http_headers.{header}")),
            }
        }
    }
    match entry.remove("bearer_token_env_var") {
        Some(Value::String(var)) => {
            headers.insert(
                "Authorization".into(),
                Value::from(format!("Bearer ${{{var}}}")),
            );
        }
        Some(_) => left_out.push("bearer_token_env_var".into()),
        None => {}
    }
    if !headers.is_empty() {
        entry.insert("headers".into(), Value::Object(headers));
    }
}

/// opencode's keys in evoflux's words: a `local` server's `command` array
/// becomes `command` and `args`, its `environment` `env`; a `remote` one is
/// Streamable HTTP; `{env:NAME}` becomes the reference `${NAME}`.
/// `enabled` (only `true` reaches here) is dropped; anything else (such as
/// `timeout`) is left for the caller to name as not carried.
fn opencode_to_shape(entry: &mut Map<String, Value>, left_out: &mut Vec<String>) {
    entry.remove("enabled");
    match entry.get("type").and_then(Value::as_str) {
        Some("local") => {
            entry.insert("type".into(), Value::from("stdio"));
            match entry.remove("command") {
                Some(Value::Array(argv)) => {
                    let mut argv = argv.into_iter();
                    if let Some(program) = argv.next() {
                        entry.insert("command".into(), program);
                    }
                    let args: Vec<Value> = argv.collect();
                    if !args.is_empty() {
                        entry.insert("args".into(), Value::Array(args));
                    }
                }
                // A string is passed on, for the one parser to judge.
                Some(other) => {
                    entry.insert("command".into(), other);
                }
                None => {}
            }
            if let Some(env) = entry.remove("environment") {
                entry.insert("env".into(), env);
            }
        }
        Some("remote") => {
            entry.insert("type".into(), Value::from("streamable-http"));
        }
        Some(_) | None => {}
    }
    if entry.remove("oauth").is_some() {
        left_out.push("oauth (use `evoflux mcp login`)".to_owned());
    }
    for (_, v) in entry.iter_mut() {
        opencode_env_references(v);
    }
}

/// opencode's `{env:NAME}` in a string as evoflux's `${NAME}`.
fn opencode_env_references(v: &mut Value) {
    match v {
        Value::String(s) if s.contains("{env:") => {
            let mut out = String::with_capacity(s.len());
            let mut rest = s.as_str();
            while let Some(at) = rest.find("{env:") {
                let (before, after) = rest.split_at(at);
                let inner = &after[5..];
                match inner.find('}') {
                    Some(end) if connection::is_env_name(&inner[..end]) => {
                        // `${env:X}` is the editors' form, handled later.
                        if before.ends_with('$') {
                            out.push_str(before);
                            out.push_str(&after[..5 + end + 1]);
                        } else {
                            out.push_str(before);
                            out.push_str(&format!("${{{}}}", &inner[..end]));
                        }
                        rest = &inner[end + 1..];
                    }
                    Some(_) | None => {
                        out.push_str(before);
                        out.push_str("{env:");
                        rest = inner;
                    }
                }
            }
            out.push_str(rest);
            *s = out;
        }
        Value::Array(items) => items.iter_mut().for_each(opencode_env_references),
        Value::Object(map) => map.iter_mut().for_each(|(_, v)| opencode_env_references(v)),
        Value::String(_) | Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// codex's start-up limit as evoflux's `startup_timeout_secs`: codex
/// reads `startup_timeout_sec` (seconds, fractions allowed) and, from
/// older configs, `startup_timeout_ms`. A fraction is rounded up, so the
/// server gets at least the time codex gives it. A value evoflux does not
/// accept (not a positive number, or above
/// [`connection::MAX_STARTUP_TIMEOUT_SECS`]) is named as not carried and
/// the server keeps evoflux's default, rather than failing the compile
/// over another tool's file.
fn codex_startup_timeout(entry: &mut Map<String, Value>, left_out: &mut Vec<String>) {
    // evoflux's own spelling is not a codex key: only codex's is read.
    if entry.remove(STARTUP_TIMEOUT_KEY).is_some() {
        left_out.push(STARTUP_TIMEOUT_KEY.to_owned());
    }
    let sec = entry.remove("startup_timeout_sec");
    let ms = entry.remove("startup_timeout_ms");
    let (key, seconds) = match (sec, ms) {
        (Some(sec), ms) => {
            if ms.is_some() {
                left_out.push("startup_timeout_ms (`startup_timeout_sec` is used)".to_owned());
            }
            ("startup_timeout_sec", sec.as_f64())
        }
        (None, Some(ms)) => ("startup_timeout_ms", ms.as_f64().map(|ms| ms / 1000.0)),
        (None, None) => return,
    };
    let max = connection::MAX_STARTUP_TIMEOUT_SECS;
    let whole = seconds
        .filter(|s| s.is_finite() && *s > 0.0)
        .map(f64::ceil)
        .filter(|s| *s <= max as f64);
    match whole {
        // In 1..=max after the checks above, so the cast is exact.
        Some(s) => {
            entry.insert(STARTUP_TIMEOUT_KEY.to_owned(), Value::from(s as u64));
        }
        None => left_out.push(format!("{key} (evoflux takes 1 to {max} seconds)")),
    }
}

fn substitute_all(
    v: &mut Value,
    folders: Folders<'_>,
    unresolved: &mut std::collections::BTreeSet<String>,
) {
    match v {
        Value::String(s) => *s = substitute(s, folders, unresolved),
        Value::Array(items) => {
            for item in items {
                substitute_all(item, folders, unresolved);
            }
        }
        Value::Object(map) => {
            for (_, item) in map.iter_mut() {
                substitute_all(item, folders, unresolved);
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// The editors' variables in evoflux's words: `${env:NAME}` becomes the
/// reference `${NAME}`, `${workspaceFolder}` (and its basename) the
/// repository directory of a project file, `${pathSeparator}` `/`.
/// `${VAR}` and `${VAR:-default}` are evoflux's own and stay. Anything
/// else (`${input:…}`, which only VS Code can prompt for) stays as written
/// and is reported.
fn substitute(
    text: &str,
    folders: Folders<'_>,
    unresolved: &mut std::collections::BTreeSet<String>,
) -> String {
    let mut out = String::with_capacity(text.len());
    for piece in pieces(text) {
        let (inner, written) = match piece {
            Piece::Text(t) => {
                out.push_str(t);
                continue;
            }
            Piece::Braced { inner, written } => (inner, written),
        };
        let replaced = match inner {
            "workspaceFolder" => folders.workspace.map(|f| f.display().to_string()),
            "workspaceFolderBasename" => folders
                .workspace
                .and_then(Path::file_name)
                .map(|n| n.to_string_lossy().into_owned()),
            "userHome" => folders.home.map(|f| f.display().to_string()),
            "pathSeparator" | "/" => Some("/".to_owned()),
            _ if env_reference(inner).is_some() => Some(written.to_owned()),
            _ => inner
                .strip_prefix("env:")
                .filter(|var| connection::is_env_name(var))
                .map(|var| format!("${{{var}}}")),
        };
        match replaced {
            Some(r) => out.push_str(&r),
            None => {
                unresolved.insert(inner.to_owned());
                out.push_str(written);
            }
        }
    }
    out
}

fn has_env_reference(text: &str) -> bool {
    pieces(text).any(|p| match p {
        Piece::Braced { inner, .. } => env_reference(inner).is_some(),
        Piece::Text(_) => false,
    })
}

/// The folders the editors' variables name, where a file's place shows
/// them.
#[derive(Clone, Copy)]
struct Folders<'a> {
    workspace: Option<&'a Path>,
    home: Option<&'a Path>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn adapted(format: &McpFormat, path: &str, v: Value) -> (Value, Vec<String>) {
        let mut d = Diagnostics::new();
        let out = adapt(format, Path::new(path), "srv", v, &mut d);
        (out, d.codes().into_iter().map(str::to_owned).collect())
    }

    #[test]
    fn opencode_servers_become_entries_in_evoflux_shape() {
        let p = Path::new("/r/opencode.json");
        let text = r#"{
          // opencode allows comments
          "$schema": "https://opencode.ai/config.json",
          "mcp": {
            "local-one": {"type": "local", "command": ["node", "srv.js", "{env:TOKEN}"],
                          "environment": {"KEY": "{env:API_KEY}"}, "enabled": true,
                          "timeout": 5000},
            "off": {"type": "local", "command": ["x"], "enabled": false},
            "web": {"type": "remote", "url": "https://mcp.example.com/mcp",
                    "headers": {"Authorization": "Bearer {env:WEB_TOKEN}"}}
          }
        }"#;
        let entries = file_entries(&McpFormat::OpencodeProject, p, text).unwrap();
        let names: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["local-one", "web"]);
        let (local, codes) = adapted(
            &McpFormat::OpencodeProject,
            "/r/opencode.json",
            entries[0].value.clone(),
        );
        assert_eq!(
            local,
            json!({"type": "stdio", "command": "node", "args": ["srv.js", "${TOKEN}"],
                   "env": {"KEY": "${API_KEY}"}})
        );
        assert_eq!(codes, ["compile/connection-not-carried"]);
        let (remote, codes) = adapted(
            &McpFormat::OpencodeUser,
            "/h/.config/opencode/opencode.json",
            entries[1].value.clone(),
        );
        assert_eq!(
            remote,
            json!({"type": "streamable-http", "url": "https://mcp.example.com/mcp",
                   "headers": {"Authorization": "Bearer ${WEB_TOKEN}"}})
        );
        assert!(codes.is_empty(), "{codes:?}");
        assert_eq!(McpFormat::OpencodeUser.field("web"), "mcp.web");
        assert_eq!(
            McpFormat::OpencodeUser.user_home(Path::new("/h/.config/opencode/opencode.json")),
            Some(PathBuf::from("/h"))
        );
    }

    #[test]
    fn claude_project_files_are_read_wrapped_and_bare() {
        let p = Path::new("/r/.mcp.json");
        let wrapped = file_entries(
            &McpFormat::ClaudeProject,
            p,
            r#"{"mcpServers": {"gh": {"command": "npx"}}}"#,
        )
        .unwrap();
        let bare = file_entries(
            &McpFormat::ClaudeProject,
            p,
            r#"{"$schema": "x", "gh": {"command": "npx"}}"#,
        )
        .unwrap();
        assert_eq!(wrapped, bare);
        assert_eq!(wrapped[0].name, "gh");
        let broken = file_entries(&McpFormat::ClaudeProject, p, "{").unwrap_err();
        assert_eq!(broken.code, "discover/foreign-mcp-invalid");
        assert!(
            !broken.is_error(),
            "another tool's file never fails a compile"
        );
    }

    #[test]
    fn hostile_nesting_in_another_tool_file_is_a_warning() {
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        for format in [
            McpFormat::ClaudeProject,
            McpFormat::ClaudeUser,
            McpFormat::CursorProject,
            McpFormat::Vscode,
        ] {
            let text = format!("{{\n// servers\n\"servers\": {deep}}}");
            let d = file_entries(&format, Path::new("/r/mcp.json"), &text).unwrap_err();
            assert_eq!(d.code, "json/too-deep", "{format:?}");
            assert!(!d.is_error(), "another tool's file never fails a compile");
        }
    }

    #[test]
    fn claude_user_file_yields_user_and_per_directory_scopes_only() {
        let text = r#"{"numStartups": 3, "history": [1,2],
            "mcpServers": {"a": {"command": "x"}},
            "projects": {"/w/repo": {"history": [], "mcpServers": {"b": {"url": "https://h/mcp"}}},
                         "/w/other": {}}}"#;
        let got = file_entries(&McpFormat::ClaudeUser, Path::new("/h/.claude.json"), text).unwrap();
        let scopes: Vec<(McpFormat, &str)> = got
            .iter()
            .map(|e| (e.format.clone(), e.name.as_str()))
            .collect();
        assert_eq!(
            scopes,
            [
                (McpFormat::ClaudeUser, "a"),
                (
                    McpFormat::ClaudeLocal {
                        project: "/w/repo".into()
                    },
                    "b"
                )
            ]
        );
    }

    #[test]
    fn codex_servers_become_entries_with_header_references() {
        let text = r#"
model = "o3"
[mcp_servers.docs]
command = "docs-server"
args = ["--port", "0"]
env = { "LEVEL" = "debug" }
startup_timeout_sec = 20

[mcp_servers.remote]
url = "https://mcp.example.com/mcp"
bearer_token_env_var = "REMOTE_TOKEN"
env_http_headers = { "X-Team" = "TEAM_ID" }

[mcp_servers.off]
command = "off"
enabled = false
"#;
        let got =
            file_entries(&McpFormat::Codex, Path::new("/h/.codex/config.toml"), text).unwrap();
        let names: Vec<&str> = got.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["docs", "remote"], "a disabled server is not read");
        let (docs, codes) = adapted(&McpFormat::Codex, "/c", got[0].value.clone());
        assert_eq!(
            docs,
            json!({"type": "stdio", "command": "docs-server", "args": ["--port", "0"],
                   "env": {"LEVEL": "debug"}, "startup_timeout_secs": 20})
        );
        assert!(codes.is_empty(), "the timeout is carried: {codes:?}");
        let (remote, codes) = adapted(&McpFormat::Codex, "/c", got[1].value.clone());
        assert_eq!(
            remote,
            json!({"type": "streamable-http", "url": "https://mcp.example.com/mcp",
                   "headers": {"Authorization": "Bearer ${REMOTE_TOKEN}", "X-Team": "${TEAM_ID}"}})
        );
        assert!(codes.is_empty(), "{codes:?}");
    }

    #[test]
    fn codex_startup_timeouts_become_whole_seconds_or_are_named() {
        let timeout = |v: Value| {
            let (out, codes) = adapted(&McpFormat::Codex, "/c", v);
            (out.get("startup_timeout_secs").cloned(), codes)
        };
        let carried = |v: Value| {
            let (secs, codes) = timeout(v.clone());
            assert!(codes.is_empty(), "{v}: {codes:?}");
            secs
        };
        assert_eq!(
            carried(json!({"command": "s", "startup_timeout_sec": 2.5})),
            Some(json!(3)),
            "a fraction is rounded up"
        );
        assert_eq!(
            carried(json!({"command": "s", "startup_timeout_ms": 45_000})),
            Some(json!(45))
        );
        assert_eq!(
            carried(json!({"url": "https://h/mcp", "startup_timeout_sec": 600})),
            Some(json!(600))
        );
        for v in [
            json!({"command": "s", "startup_timeout_sec": 0}),
            json!({"command": "s", "startup_timeout_sec": 601}),
            json!({"command": "s", "startup_timeout_sec": "20"}),
            json!({"command": "s", "startup_timeout_sec": 5, "startup_timeout_ms": 9000}),
        ] {
            let (_, codes) = timeout(v.clone());
            assert_eq!(codes, ["compile/connection-not-carried"], "{v}");
        }
        // The carried value is one the connection parser accepts.
        let (shape, _) = adapted(
            &McpFormat::Codex,
            "/c",
            json!({"command": "s", "startup_timeout_sec": 0.2}),
        );
        let mut d = Diagnostics::new();
        let def = connection::parse(Path::new("/c"), "srv", shape, &mut d);
        assert!(d.codes().is_empty(), "{:?}", d.codes());
        assert!(matches!(
            def,
            Some(connection::ConnectionDefinition::Stdio {
                startup_timeout_secs: Some(1),
                ..
            })
        ));
        // Only codex has a start-up limit; another tool's file keeps none.
        let (out, codes) = adapted(
            &McpFormat::ClaudeProject,
            "/r/.mcp.json",
            json!({"command": "s", "startup_timeout_secs": 0}),
        );
        assert!(out.get("startup_timeout_secs").is_none(), "{out}");
        assert_eq!(codes, ["compile/connection-not-carried"]);
    }

    #[test]
    fn vscode_files_with_comments_and_editor_variables() {
        let text = r#"{
  // Servers of this repository.
  "inputs": [{"type": "promptString", "id": "key"}],
  "servers": {
    "fs": {"type": "stdio", "command": "fs-server", "args": ["${workspaceFolder}/data", "a//b"],
           "env": {"TOKEN": "${env:FS_TOKEN}", "KEY": "${input:key}"}, "envFile": "x.env",},
    /* remote */ "api": {"type": "http", "url": "https://api.example.com/mcp"},
  },
}"#;
        let path = Path::new("/w/repo/.vscode/mcp.json");
        let got = file_entries(&McpFormat::Vscode, path, text).unwrap();
        let value = |n: &str| got.iter().find(|e| e.name == n).unwrap().value.clone();
        assert_eq!(got.len(), 2);
        let mut d = Diagnostics::new();
        let fs = adapt(&McpFormat::Vscode, path, "fs", value("fs"), &mut d);
        assert_eq!(
            fs,
            json!({"type": "stdio", "command": "fs-server", "args": ["/w/repo/data", "a//b"],
                   "env": {"TOKEN": "${FS_TOKEN}", "KEY": "${input:key}"}})
        );
        let messages: Vec<&str> = d.iter().map(|d| d.message.as_str()).collect();
        assert_eq!(d.codes(), ["compile/connection-not-carried"; 2]);
        assert!(messages[0].contains("`envFile`"), "{messages:?}");
        assert!(messages[1].contains("`${input:key}`"), "{messages:?}");
        let api = adapt(&McpFormat::Vscode, path, "api", value("api"), &mut d);
        assert_eq!(api["type"], "streamable-http");
    }

    #[test]
    fn claude_references_stay_evoflux_references() {
        let (v, codes) = adapted(
            &McpFormat::ClaudeProject,
            "/r/.mcp.json",
            json!({"type": "http", "url": "https://h/mcp", "headers": {"Authorization": "Bearer ${TOKEN:-none}"}}),
        );
        assert_eq!(v["headers"]["Authorization"], "Bearer ${TOKEN:-none}");
        assert!(codes.is_empty());
        let (_, codes) = adapted(
            &McpFormat::ClaudeProject,
            "/r/.mcp.json",
            json!({"command": "${HOME}/bin/srv"}),
        );
        assert_eq!(codes, ["compile/connection-not-carried"]);
    }

    #[test]
    fn foreign_names_take_evoflux_form() {
        assert_eq!(
            connection_name("brave_search").as_deref(),
            Some("brave-search")
        );
        assert_eq!(connection_name("GitHub").as_deref(), Some("github"));
        assert_eq!(
            connection_name("my server.v2").as_deref(),
            Some("my-server-v2")
        );
        assert_eq!(connection_name("__x__").as_deref(), Some("x"));
        assert_eq!(connection_name("42"), None);
        assert_eq!(connection_name("日本"), None);
    }

    #[test]
    fn jsonc_keeps_strings_and_line_numbers() {
        let text = "{\"a\": \"//not a comment\", /* x\n */ \"b\": [1, 2,],}";
        let json = strip_jsonc(text);
        assert_eq!(json.lines().count(), text.lines().count());
        let v: Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v, json!({"a": "//not a comment", "b": [1, 2]}));
    }
}
