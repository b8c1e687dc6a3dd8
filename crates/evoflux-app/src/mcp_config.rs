//! Adding, replacing and removing servers in the user's own `mcp.json`
//! (`<config>/mcp.json`), for front ends that edit MCP servers
//! (`/api/mcp/servers`), and where every listed server comes from.
//!
//! The user's file is the only one written (and a repository's own
//! `.evoflux/mcp.json` when the user names it on the command line,
//! `evoflux mcp add --scope project`): a repository's `mcp.json`,
//! the files of other tools (Claude Code, codex, VS Code, Cursor) and
//! plugin packages are shown with where they come from and refused with
//! where to change them instead. An edit is checked by the same rules the
//! compile applies ([`connection::entries`] for the file,
//! [`connection::parse`] for the entry, the connection-name rule for the
//! name), so what is saved is what runs. The file is edited as text: only
//! the bytes of the one server that changes are touched, every other key
//! and server stays byte for byte, and the result is checked to be the
//! file with exactly that change before it replaces the old one
//! atomically. Values are stored as written: `${VAR}` is never resolved
//! here and is returned as the file has it.

use std::path::{Path, PathBuf};

use evoflux_core::atomic::{AtomicOptions, write_atomic};
use evoflux_core::{Diagnostic, Diagnostics};
use evoflux_graph::{connection, slot};
use evoflux_mcp::{ServerListing, ServerOwner};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::AppContext;

/// Which `mcp.json` an edit writes: the user's own, or the repository's
/// (`<repository>/.evoflux/mcp.json`, shared with whoever clones it, so
/// written only when asked for by name). Closed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum McpScope {
    #[default]
    User,
    Project,
}

/// What [`AppContext::add_mcp_server`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum McpAdded {
    Added,
    /// `force` replaced a server of that name in the same file.
    Replaced,
}

/// Where a listed server is defined, and so where it is changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum McpServerSource {
    /// The user's own `mcp.json`: the one file this editor writes.
    User { path: PathBuf },
    /// Another file evoflux reads: a repository's `mcp.json` or another
    /// tool's file (`.mcp.json`, `~/.claude.json`, codex, VS Code,
    /// Cursor). Only ever read.
    File {
        path: PathBuf,
        #[serde(skip_serializing_if = "Option::is_none")]
        layer: Option<String>,
    },
    /// An enabled plugin's package.
    Plugin {
        plugin: String,
        installation: String,
    },
    /// Defined by no file (a built-in connection).
    Builtin,
}

impl McpServerSource {
    /// The source of a server `owner` declares, `user_file` being the
    /// user's `mcp.json`.
    pub fn of(owner: &ServerOwner, user_file: &Path) -> McpServerSource {
        match owner {
            ServerOwner::Global {
                source: Some(path),
                layer,
            } => {
                if same_file(path, user_file) {
                    McpServerSource::User { path: path.clone() }
                } else {
                    McpServerSource::File {
                        path: path.clone(),
                        layer: layer.clone(),
                    }
                }
            }
            ServerOwner::Global { source: None, .. } => McpServerSource::Builtin,
            ServerOwner::Plugin {
                installation,
                plugin,
            } => McpServerSource::Plugin {
                plugin: plugin.clone(),
                installation: installation.clone(),
            },
        }
    }

    pub fn editable(&self) -> bool {
        match self {
            McpServerSource::User { .. } => true,
            McpServerSource::File { .. }
            | McpServerSource::Plugin { .. }
            | McpServerSource::Builtin => false,
        }
    }

    /// Where a server of this source is changed, in words.
    pub fn where_to_change(&self) -> String {
        match self {
            McpServerSource::User { path } => format!("your mcp.json ({})", path.display()),
            McpServerSource::File { path, .. } => format!(
                "it is defined in {}, which evoflux only reads; change it there, or add a \
                 server of another name to your own mcp.json",
                path.display()
            ),
            McpServerSource::Plugin { plugin, .. } => format!(
                "it comes from the plugin `{plugin}`; change the plugin's package, or disable \
                 the plugin in the Plugin Center"
            ),
            McpServerSource::Builtin => {
                "it is built in; add a server of another name to your own mcp.json".to_owned()
            }
        }
    }
}

/// One server as the MCP settings show it: its state and tools, where it
/// comes from, whether this editor may change it, and for the user's own
/// servers the entry exactly as the file has it (`${VAR}` unresolved).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct McpServerView {
    #[serde(flatten)]
    pub listing: ServerListing,
    pub source: McpServerSource,
    pub editable: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entry: Option<Value>,
}

/// What to do to one server of the user's `mcp.json`.
#[derive(Debug, Clone, PartialEq)]
pub enum McpServerChange {
    /// A new server; refused when the name is taken.
    Add { name: String, entry: Value },
    /// Replace the user's entry of that name.
    Replace { name: String, entry: Value },
    /// Remove the user's entry of that name.
    Remove { name: String },
}

impl McpServerChange {
    pub fn name(&self) -> &str {
        match self {
            McpServerChange::Add { name, .. }
            | McpServerChange::Replace { name, .. }
            | McpServerChange::Remove { name } => name,
        }
    }
}

/// Why a change was refused (nothing was written).
#[derive(Debug, thiserror::Error)]
pub enum McpEditError {
    /// The name breaks the connection-name rule.
    #[error("{}", .0.message)]
    Name(Diagnostic),
    #[error("an MCP server `{name}` already exists ({}); choose another name", .from.where_to_change())]
    Exists { name: String, from: McpServerSource },
    #[error("no MCP server `{0}` in your mcp.json")]
    NotFound(String),
    #[error("MCP server `{name}` cannot be changed here: {}", .from.where_to_change())]
    NotEditable { name: String, from: McpServerSource },
    /// The entry fails the connection parser (its diagnostics name the
    /// fields).
    #[error("the server entry has errors")]
    Invalid { diagnostics: Diagnostics },
    /// The user's file as it is cannot be read as `mcp.json`; it is left
    /// alone for the user to fix.
    #[error("{}: {}; fix the file by hand first, nothing was changed", .0.locator.file.as_deref().map(Path::display).map(|d| d.to_string()).unwrap_or_default(), .0.message)]
    FileInvalid(Diagnostic),
    /// The edit did not come out as the file with exactly that change (a
    /// duplicate key, say): nothing was written.
    #[error("{}: the edit could not be made without touching other entries ({why}); edit the file by hand", path.display())]
    EditFailed { path: PathBuf, why: String },
    #[error("cannot write {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl McpEditError {
    /// The stable code: the validator's own for a refused name, entry or
    /// file.
    pub fn code(&self) -> &str {
        match self {
            McpEditError::Name(d) | McpEditError::FileInvalid(d) => &d.code,
            McpEditError::Exists { .. } => "mcp/server-exists",
            McpEditError::NotFound(_) => "mcp/server-not-found",
            McpEditError::NotEditable { .. } => "mcp/server-not-editable",
            McpEditError::Invalid { diagnostics } => diagnostics
                .iter()
                .find(|d| d.is_error())
                .map_or("compile/connection-invalid", |d| &d.code),
            McpEditError::EditFailed { .. } => "mcp/config-edit-failed",
            McpEditError::Io { .. } => "mcp/config-io",
        }
    }

    /// The request field at fault: `name`, or `entry.<key>` for the first
    /// error of the entry.
    pub fn field(&self) -> Option<String> {
        match self {
            McpEditError::Name(_) => Some("name".to_owned()),
            McpEditError::Invalid { diagnostics } => diagnostics
                .iter()
                .find(|d| d.is_error())
                .and_then(|d| d.locator.field.as_deref())
                .map(entry_field),
            McpEditError::Exists { .. } => Some("name".to_owned()),
            McpEditError::NotFound(_)
            | McpEditError::NotEditable { .. }
            | McpEditError::FileInvalid(_)
            | McpEditError::EditFailed { .. }
            | McpEditError::Io { .. } => None,
        }
    }

    /// The refusal as diagnostics, for a front end that reports
    /// diagnostics (the CLI): the validator's own for a refused entry,
    /// else one error with this error's code, naming `file` (the file the
    /// edit was for) and the field at fault.
    pub fn to_diagnostics(&self, file: &Path) -> Diagnostics {
        let one = |code: &'static str| {
            let d = Diagnostic::error(code, self.to_string()).with_file(file);
            match self.field() {
                Some(field) => d.with_field(field),
                None => d,
            }
        };
        let d = match self {
            McpEditError::Invalid { diagnostics } => return diagnostics.clone(),
            McpEditError::Name(d) | McpEditError::FileInvalid(d) => d.clone(),
            McpEditError::Exists { .. } => one("mcp/server-exists"),
            McpEditError::NotFound(_) => one("mcp/server-not-found"),
            McpEditError::NotEditable { .. } => one("mcp/server-not-editable"),
            McpEditError::EditFailed { .. } => one("mcp/config-edit-failed"),
            McpEditError::Io { .. } => one("mcp/config-io"),
        };
        Diagnostics::from(vec![d])
    }

    pub fn diagnostics(&self) -> Option<&Diagnostics> {
        match self {
            McpEditError::Invalid { diagnostics } => Some(diagnostics),
            McpEditError::Name(_)
            | McpEditError::Exists { .. }
            | McpEditError::NotFound(_)
            | McpEditError::NotEditable { .. }
            | McpEditError::FileInvalid(_)
            | McpEditError::EditFailed { .. }
            | McpEditError::Io { .. } => None,
        }
    }
}

/// `mcpServers.<name>.<key>` (the file's field) as the request's
/// `entry.<key>`; `entry` for the entry as a whole.
pub fn entry_field(file_field: &str) -> String {
    let rest = file_field
        .strip_prefix("mcpServers.")
        .and_then(|r| r.split_once('.').map(|(_, key)| key));
    match rest {
        Some(key) => format!("entry.{key}"),
        None => "entry".to_owned(),
    }
}

impl AppContext {
    /// The user's own `mcp.json`: the one MCP file evoflux writes.
    pub fn user_mcp_file(&self) -> PathBuf {
        self.dirs.config_dir().join("mcp.json")
    }

    /// The servers of a runtime's listing as the MCP settings show them:
    /// each with its source, whether it is editable and, for the user's
    /// own, the entry as written.
    pub fn mcp_server_views(&self, listing: Vec<ServerListing>) -> Vec<McpServerView> {
        let user_file = self.user_mcp_file();
        let own = std::fs::read_to_string(&user_file)
            .ok()
            .and_then(|text| connection::entries(&user_file, &text).ok())
            .unwrap_or_default();
        listing
            .into_iter()
            .map(|listing| {
                let source = McpServerSource::of(&listing.status.owner, &user_file);
                let editable = source.editable();
                let entry = editable
                    .then(|| {
                        own.iter()
                            .find(|(n, _)| *n == listing.status.name)
                            .map(|(_, v)| v.clone())
                    })
                    .flatten();
                McpServerView {
                    listing,
                    source,
                    editable,
                    entry,
                }
            })
            .collect()
    }

    /// Applies `change` to the user's `mcp.json`. `listed` is every server
    /// as the runtime lists it now: a name taken by another source is
    /// refused for `Add`, and `Replace`/`Remove` of a server the user's
    /// file does not hold say where that server is changed instead.
    pub fn change_mcp_server(
        &self,
        listed: &[ServerListing],
        change: &McpServerChange,
    ) -> Result<(), McpEditError> {
        self.change_mcp_server_in(&self.user_mcp_file(), listed, change)
    }

    /// A repository's own `mcp.json` (`<repository>/.evoflux/mcp.json`,
    /// `<repository>` the git root above `workspace`): written only when
    /// the user asks for it by name (`evoflux mcp add --scope project`),
    /// since the file is shared with everyone who clones the repository.
    pub fn project_mcp_file(&self, workspace: &Path) -> PathBuf {
        evoflux_core::trust::repository_root(workspace)
            .join(".evoflux")
            .join("mcp.json")
    }

    /// The `mcp.json` of `scope`: the user's, or the repository of the
    /// first of `workspaces` (the start directory's when none is named).
    pub fn mcp_file(&self, scope: McpScope, workspaces: &[PathBuf]) -> PathBuf {
        match scope {
            McpScope::User => self.user_mcp_file(),
            McpScope::Project => self.project_mcp_file(workspaces.first().unwrap_or(&self.cwd)),
        }
    }

    /// Adds `name` to the `mcp.json` at `path` (`evoflux mcp add`, the web
    /// UI's "Add server"). With `force`, a server of that name in the same
    /// file is replaced instead of refused; one another file or a plugin
    /// defines is still refused, saying where it is changed.
    pub fn add_mcp_server(
        &self,
        path: &Path,
        listed: &[ServerListing],
        name: &str,
        entry: &Value,
        force: bool,
    ) -> Result<McpAdded, McpEditError> {
        let add = McpServerChange::Add {
            name: name.to_owned(),
            entry: entry.clone(),
        };
        match self.change_mcp_server_in(path, listed, &add) {
            Ok(()) => Ok(McpAdded::Added),
            Err(McpEditError::Exists { from, .. }) if force && from.editable() => {
                let replace = McpServerChange::Replace {
                    name: name.to_owned(),
                    entry: entry.clone(),
                };
                self.change_mcp_server_in(path, listed, &replace)
                    .map(|()| McpAdded::Replaced)
            }
            Err(e) => Err(e),
        }
    }

    /// [`AppContext::change_mcp_server`] on the `mcp.json` at `path`: the
    /// user's own, or a repository's the user named
    /// ([`AppContext::project_mcp_file`]). The same rules and the same
    /// in-place edit either way.
    pub fn change_mcp_server_in(
        &self,
        path: &Path,
        listed: &[ServerListing],
        change: &McpServerChange,
    ) -> Result<(), McpEditError> {
        let path = path.to_path_buf();
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => Some(text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(source) => return Err(McpEditError::Io { path, source }),
        };
        let name = change.name();
        let own = match &text {
            Some(text) => connection::entries(&path, text).map_err(McpEditError::FileInvalid)?,
            None => Vec::new(),
        };
        let in_file = own.iter().any(|(n, _)| n == name);
        let elsewhere = listed
            .iter()
            .find(|l| l.server == name)
            .map(|l| McpServerSource::of(&l.status.owner, &path))
            .filter(|s| !s.editable());
        match (change, in_file, elsewhere) {
            (McpServerChange::Add { .. }, false, Some(source)) => {
                return Err(McpEditError::Exists {
                    name: name.to_owned(),
                    from: source,
                });
            }
            (McpServerChange::Replace { .. } | McpServerChange::Remove { .. }, false, Some(s)) => {
                return Err(McpEditError::NotEditable {
                    name: name.to_owned(),
                    from: s,
                });
            }
            _ => {}
        }
        let edited = edit_text(&path, text.as_deref(), change)?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|source| McpEditError::Io {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        write_atomic(&path, edited.as_bytes(), AtomicOptions::default()).map_err(|e| {
            McpEditError::Io {
                path: path.clone(),
                source: e.source,
            }
        })
    }
}

/// `change` applied to `text`, the user's `mcp.json` at `path` (`None`
/// when it does not exist yet): checked, edited in place, and verified to
/// be the old file with only that change.
pub fn edit_text(
    path: &Path,
    text: Option<&str>,
    change: &McpServerChange,
) -> Result<String, McpEditError> {
    let name = change.name();
    let own = match text {
        Some(text) => connection::entries(path, text).map_err(McpEditError::FileInvalid)?,
        None => Vec::new(),
    };
    let exists = own.iter().any(|(n, _)| n == name);
    let entry = match change {
        McpServerChange::Add { entry, .. } | McpServerChange::Replace { entry, .. } => Some(entry),
        McpServerChange::Remove { .. } => None,
    };
    match change {
        McpServerChange::Add { .. } => {
            if !slot::is_valid_connection_name(name) {
                return Err(McpEditError::Name(
                    Diagnostic::error(
                        "discover/connection-name-invalid",
                        format!(
                            "server name `{name}` must start with a lowercase letter and use \
                             only lowercase letters, digits and `-` (at most 64 characters)"
                        ),
                    )
                    .with_file(path)
                    .with_field(format!("mcpServers.{name}")),
                ));
            }
            if exists {
                return Err(McpEditError::Exists {
                    name: name.to_owned(),
                    from: McpServerSource::User {
                        path: path.to_path_buf(),
                    },
                });
            }
        }
        McpServerChange::Replace { .. } | McpServerChange::Remove { .. } => {
            if !exists {
                return Err(McpEditError::NotFound(name.to_owned()));
            }
        }
    }
    if let Some(entry) = entry {
        let mut diagnostics = Diagnostics::new();
        let parsed = connection::parse(path, name, entry.clone(), &mut diagnostics);
        if parsed.is_none() || diagnostics.has_errors() {
            return Err(McpEditError::Invalid { diagnostics });
        }
    }
    let failed = |why: &str| McpEditError::EditFailed {
        path: path.to_path_buf(),
        why: why.to_owned(),
    };
    let edited = match text {
        None => {
            let mut out = String::from("{\n  \"mcpServers\": {");
            if let Some(entry) = entry {
                out.push_str("\n    ");
                out.push_str(&member(name, entry, "    "));
                out.push_str("\n  ");
            }
            out.push_str("}\n}\n");
            out
        }
        Some(text) => splice(text, name, entry).ok_or_else(|| failed("unexpected layout"))?,
    };
    // The edit must be the old file with exactly this change.
    let mut expected: Value = match text {
        Some(text) => serde_json::from_str(text).map_err(|_| failed("unreadable before"))?,
        None => Value::Object(Map::from_iter([(
            "mcpServers".to_owned(),
            Value::Object(Map::new()),
        )])),
    };
    let servers = expected
        .get_mut("mcpServers")
        .and_then(Value::as_object_mut)
        .ok_or_else(|| failed("no mcpServers"))?;
    match entry {
        Some(entry) => {
            servers.insert(name.to_owned(), entry.clone());
        }
        None => {
            servers.remove(name);
        }
    }
    let count = servers.len();
    let got: Value = serde_json::from_str(&edited).map_err(|_| failed("unreadable after"))?;
    let after = connection::entries(path, &edited).map_err(McpEditError::FileInvalid)?;
    if got != expected || after.len() != count {
        return Err(failed("the result differs from the requested change"));
    }
    Ok(edited)
}

// ---- the text edit ---------------------------------------------------------

/// One `"key": value` member of an object: where its key starts and where
/// its value starts and ends (byte offsets).
#[derive(Debug)]
struct Member {
    key: String,
    key_start: usize,
    value_start: usize,
    value_end: usize,
}

/// An object's braces and members.
#[derive(Debug)]
struct ObjectSpan {
    open: usize,
    close: usize,
    members: Vec<Member>,
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

/// The end (exclusive) of the string starting at `i` (its opening quote).
fn string_end(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    while j < b.len() {
        match b[j] {
            b'\\' => j += 2,
            b'"' => return Some(j + 1),
            _ => j += 1,
        }
    }
    None
}

/// The end (exclusive) of the value starting at `i`.
fn value_end(b: &[u8], i: usize) -> Option<usize> {
    match *b.get(i)? {
        b'"' => string_end(b, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            while j < b.len() {
                match b[j] {
                    b'"' => {
                        j = string_end(b, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            None
        }
        _ => {
            let mut j = i;
            while j < b.len() && !matches!(b[j], b',' | b'}' | b']') && !b[j].is_ascii_whitespace()
            {
                j += 1;
            }
            Some(j)
        }
    }
}

/// The object starting at `open` (its `{`), member by member.
fn scan_object(text: &str, open: usize) -> Option<ObjectSpan> {
    let b = text.as_bytes();
    if b.get(open) != Some(&b'{') {
        return None;
    }
    let mut members = Vec::new();
    let mut i = skip_ws(b, open + 1);
    if b.get(i) == Some(&b'}') {
        return Some(ObjectSpan {
            open,
            close: i,
            members,
        });
    }
    loop {
        let key_start = i;
        let key_end = string_end(b, key_start)?;
        let key: String = serde_json::from_str(text.get(key_start..key_end)?).ok()?;
        i = skip_ws(b, key_end);
        if b.get(i) != Some(&b':') {
            return None;
        }
        let value_start = skip_ws(b, i + 1);
        let end = value_end(b, value_start)?;
        members.push(Member {
            key,
            key_start,
            value_start,
            value_end: end,
        });
        i = skip_ws(b, end);
        match b.get(i)? {
            b',' => i = skip_ws(b, i + 1),
            b'}' => {
                return Some(ObjectSpan {
                    open,
                    close: i,
                    members,
                });
            }
            _ => return None,
        }
    }
}

/// The whitespace that starts the line holding byte `at`, when only
/// whitespace comes before `at` on that line.
fn line_indent(text: &str, at: usize) -> Option<&str> {
    let line_start = text[..at].rfind('\n').map_or(0, |n| n + 1);
    let before = &text[line_start..at];
    before
        .bytes()
        .all(|c| c == b' ' || c == b'\t')
        .then_some(before)
}

/// `"name": entry`, the entry laid out at `indent` (the member's own
/// indentation), its keys in the order people read them.
fn member(name: &str, entry: &Value, indent: &str) -> String {
    format!(
        "{}: {}",
        Value::from(name),
        render_entry(entry, Some(indent))
    )
}

/// The keys of an entry in reading order; any other key after them.
const KEY_ORDER: [&str; 8] = [
    "type",
    "command",
    "url",
    "args",
    "env",
    "headers",
    "cwd",
    "startup_timeout_secs",
];

/// An entry as JSON text: pretty at `indent`, or on one line for `None`.
fn render_entry(entry: &Value, indent: Option<&str>) -> String {
    let Value::Object(map) = entry else {
        return entry.to_string();
    };
    let mut keys: Vec<&String> = map.keys().collect();
    keys.sort_by_key(|k| {
        KEY_ORDER
            .iter()
            .position(|o| o == k)
            .unwrap_or(KEY_ORDER.len())
    });
    if keys.is_empty() {
        return "{}".to_owned();
    }
    let pretty = |v: &Value, at: &str| -> String {
        serde_json::to_string_pretty(v)
            .unwrap_or_else(|_| v.to_string())
            .replace('\n', &format!("\n{at}"))
    };
    match indent {
        None => {
            let parts: Vec<String> = keys
                .iter()
                .map(|k| format!("{}: {}", Value::from(k.as_str()), map[*k]))
                .collect();
            format!("{{{}}}", parts.join(", "))
        }
        Some(indent) => {
            let inner = format!("{indent}  ");
            let parts: Vec<String> = keys
                .iter()
                .map(|k| {
                    format!(
                        "{inner}{}: {}",
                        Value::from(k.as_str()),
                        pretty(&map[*k], &inner)
                    )
                })
                .collect();
            format!("{{\n{}\n{indent}}}", parts.join(",\n"))
        }
    }
}

/// `text` with the member `name` of `mcpServers` set to `entry` (added
/// or replaced), or removed for `None`; every other byte as it was.
fn splice(text: &str, name: &str, entry: Option<&Value>) -> Option<String> {
    let b = text.as_bytes();
    let root = scan_object(text, skip_ws(b, 0))?;
    let servers_member = root.members.iter().find(|m| m.key == "mcpServers")?;
    let servers = scan_object(text, servers_member.value_start)?;
    let found = servers.members.iter().position(|m| m.key == name);
    // The indentation of members: as the file lays them out, else one
    // step deeper than the `mcpServers` key.
    let outer = line_indent(text, servers_member.key_start);
    let inner: Option<String> = match servers.members.first() {
        Some(first) => line_indent(text, first.key_start).map(str::to_owned),
        None => outer.map(|o| format!("{o}  ")),
    };
    let render = |entry: &Value| match &inner {
        Some(indent) => member(name, entry, indent),
        None => format!("{}: {}", Value::from(name), render_entry(entry, None)),
    };
    let mut out = String::with_capacity(text.len() + 256);
    match (found, entry) {
        (Some(i), Some(entry)) => {
            let m = &servers.members[i];
            let value = match &inner {
                Some(indent) => render_entry(entry, Some(indent)),
                None => render_entry(entry, None),
            };
            out.push_str(&text[..m.value_start]);
            out.push_str(&value);
            out.push_str(&text[m.value_end..]);
        }
        (None, Some(entry)) => match servers.members.last() {
            Some(last) => {
                out.push_str(&text[..last.value_end]);
                match &inner {
                    Some(indent) => {
                        out.push_str(",\n");
                        out.push_str(indent);
                    }
                    None => out.push_str(", "),
                }
                out.push_str(&render(entry));
                out.push_str(&text[last.value_end..]);
            }
            None => {
                out.push_str(&text[..=servers.open]);
                match (&inner, outer) {
                    (Some(indent), Some(outer)) => {
                        out.push('\n');
                        out.push_str(indent);
                        out.push_str(&render(entry));
                        out.push('\n');
                        out.push_str(outer);
                    }
                    _ => out.push_str(&render(entry)),
                }
                out.push_str(&text[servers.close..]);
            }
        },
        (Some(i), None) => {
            let members = &servers.members;
            let (from, to) = if members.len() == 1 {
                (servers.open + 1, servers.close)
            } else if i + 1 < members.len() {
                (members[i].key_start, members[i + 1].key_start)
            } else {
                (members[i - 1].value_end, members[i].value_end)
            };
            out.push_str(&text[..from]);
            out.push_str(&text[to..]);
        }
        (None, None) => return None,
    }
    Some(out)
}

fn same_file(a: &Path, b: &Path) -> bool {
    a == b
        || matches!(
            (std::fs::canonicalize(a), std::fs::canonicalize(b)),
            (Ok(x), Ok(y)) if x == y
        )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use serde_json::json;

    use super::*;

    const FILE: &str = r#"{
  "$schema": "https://example.com/mcp.schema.json",
  "mcpServers": {
    "alpha": { "command": "alpha-srv",   "args": ["--x"],
               "env": {"TOKEN": "${ALPHA_TOKEN}"} },
    "beta": {
      "type": "http",
      "url": "https://beta.example/mcp",
      "headers": {"Authorization": "Bearer ${BETA_TOKEN}"}
    }
  }
}
"#;

    fn path() -> PathBuf {
        PathBuf::from("/config/mcp.json")
    }

    fn add(name: &str, entry: Value) -> McpServerChange {
        McpServerChange::Add {
            name: name.to_owned(),
            entry,
        }
    }

    /// The text of `name`'s member in `text`.
    fn member_text<'a>(text: &'a str, name: &str) -> &'a str {
        let root = scan_object(text, skip_ws(text.as_bytes(), 0)).unwrap();
        let servers = root.members.iter().find(|m| m.key == "mcpServers").unwrap();
        let servers = scan_object(text, servers.value_start).unwrap();
        let m = servers.members.iter().find(|m| m.key == name).unwrap();
        &text[m.key_start..m.value_end]
    }

    #[test]
    fn an_added_server_keeps_every_other_byte_and_its_references_as_written() {
        let entry = json!({"type": "stdio", "command": "gamma", "args": ["${HOME}/x"],
            "env": {"KEY": "${GAMMA_KEY:-none}"}});
        let out = edit_text(&path(), Some(FILE), &add("gamma", entry.clone())).unwrap();
        // Everything before the insertion point is untouched, and so is
        // the tail of the file.
        let last = FILE.find("\n  }\n}\n").unwrap();
        assert_eq!(&out[..last], &FILE[..last]);
        assert!(out.ends_with("\n  }\n}\n"), "{out}");
        assert_eq!(member_text(&out, "alpha"), member_text(FILE, "alpha"));
        assert_eq!(member_text(&out, "beta"), member_text(FILE, "beta"));
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["mcpServers"]["gamma"], entry);
        assert_eq!(v["$schema"], "https://example.com/mcp.schema.json");
        assert!(out.contains("\"${GAMMA_KEY:-none}\""), "{out}");
        // Laid out like its neighbours.
        assert!(
            out.contains("\n    \"gamma\": {\n      \"type\": \"stdio\",\n"),
            "{out}"
        );
    }

    #[test]
    fn replace_and_remove_touch_only_their_server() {
        let entry = json!({"command": "alpha-2"});
        let out = edit_text(
            &path(),
            Some(FILE),
            &McpServerChange::Replace {
                name: "alpha".into(),
                entry: entry.clone(),
            },
        )
        .unwrap();
        assert_eq!(member_text(&out, "beta"), member_text(FILE, "beta"));
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["mcpServers"]["alpha"], entry);
        // Removing the first keeps the second byte for byte, and removing
        // the last leaves no trailing comma.
        let first = edit_text(
            &path(),
            Some(FILE),
            &McpServerChange::Remove {
                name: "alpha".into(),
            },
        )
        .unwrap();
        assert_eq!(member_text(&first, "beta"), member_text(FILE, "beta"));
        assert!(!first.contains("alpha"), "{first}");
        let last = edit_text(
            &path(),
            Some(FILE),
            &McpServerChange::Remove {
                name: "beta".into(),
            },
        )
        .unwrap();
        assert_eq!(member_text(&last, "alpha"), member_text(FILE, "alpha"));
        let v: Value = serde_json::from_str(&last).unwrap();
        assert_eq!(v["mcpServers"].as_object().unwrap().len(), 1);
        // Removing both leaves an empty, valid file with `$schema` kept.
        let none = edit_text(
            &path(),
            Some(&last),
            &McpServerChange::Remove {
                name: "alpha".into(),
            },
        )
        .unwrap();
        let v: Value = serde_json::from_str(&none).unwrap();
        assert_eq!(
            v,
            json!({"$schema": "https://example.com/mcp.schema.json", "mcpServers": {}})
        );
        // And adding to the empty object works again.
        let again = edit_text(&path(), Some(&none), &add("one", json!({"command": "x"}))).unwrap();
        let v: Value = serde_json::from_str(&again).unwrap();
        assert_eq!(v["mcpServers"]["one"]["command"], "x");
    }

    #[test]
    fn a_one_line_file_and_a_missing_file_are_edited_too() {
        let one = r#"{"mcpServers": {"a": {"command": "a"}}}"#;
        let out = edit_text(&path(), Some(one), &add("b", json!({"command": "b"}))).unwrap();
        assert!(
            out.starts_with(r#"{"mcpServers": {"a": {"command": "a"}, "b": "#),
            "{out}"
        );
        let fresh = edit_text(
            &path(),
            None,
            &add("b", json!({"url": "https://b.example/mcp"})),
        )
        .unwrap();
        let v: Value = serde_json::from_str(&fresh).unwrap();
        assert_eq!(v["mcpServers"]["b"]["url"], "https://b.example/mcp");
    }

    #[test]
    fn invalid_entries_names_and_files_are_refused_with_the_validators_codes() {
        let bad = edit_text(
            &path(),
            Some(FILE),
            &add("gamma", json!({"command": "a b c"})),
        )
        .unwrap_err();
        assert_eq!(bad.code(), "compile/connection-invalid");
        assert_eq!(bad.field().as_deref(), Some("entry.command"));
        let env = edit_text(
            &path(),
            Some(FILE),
            &add("gamma", json!({"command": "x", "env": {"1BAD": "v"}})),
        )
        .unwrap_err();
        assert_eq!(env.field().as_deref(), Some("entry.env"));
        let url = edit_text(
            &path(),
            Some(FILE),
            &add("gamma", json!({"url": "not a url"})),
        )
        .unwrap_err();
        assert_eq!(url.field().as_deref(), Some("entry.url"));
        let unknown = edit_text(
            &path(),
            Some(FILE),
            &add("gamma", json!({"command": "x", "colour": "red"})),
        )
        .unwrap_err();
        assert_eq!(unknown.code(), "compile/connection-invalid");
        let timeout = edit_text(
            &path(),
            Some(FILE),
            &add("gamma", json!({"command": "x", "startup_timeout_secs": 0})),
        )
        .unwrap_err();
        assert_eq!(timeout.code(), "compile/connection-bad-startup-timeout");
        assert_eq!(
            timeout.field().as_deref(),
            Some("entry.startup_timeout_secs")
        );
        let name = edit_text(
            &path(),
            Some(FILE),
            &add("Bad_Name", json!({"command": "x"})),
        )
        .unwrap_err();
        assert_eq!(name.code(), "discover/connection-name-invalid");
        assert_eq!(name.field().as_deref(), Some("name"));
        let taken =
            edit_text(&path(), Some(FILE), &add("alpha", json!({"command": "x"}))).unwrap_err();
        assert_eq!(taken.code(), "mcp/server-exists");
        let missing = edit_text(
            &path(),
            Some(FILE),
            &McpServerChange::Remove {
                name: "nope".into(),
            },
        )
        .unwrap_err();
        assert_eq!(missing.code(), "mcp/server-not-found");
        // A file the compile refuses is left for the user to fix.
        let broken = edit_text(
            &path(),
            Some(r#"{"mcpServers": {}, "extra": 1}"#),
            &add("x", json!({"command": "x"})),
        )
        .unwrap_err();
        assert_eq!(broken.code(), "discover/mcp-json-invalid");
    }

    #[test]
    fn a_duplicate_key_is_never_edited_blindly() {
        let dup = r#"{"mcpServers": {"a": {"command": "one"}, "a": {"command": "two"}}}"#;
        let out = edit_text(
            &path(),
            Some(dup),
            &McpServerChange::Replace {
                name: "a".into(),
                entry: json!({"command": "three"}),
            },
        );
        match out {
            Err(e) => assert!(
                matches!(
                    e.code(),
                    "mcp/config-edit-failed" | "discover/mcp-json-invalid"
                ),
                "{e}"
            ),
            Ok(text) => panic!("edited a file with a duplicate key: {text}"),
        }
    }

    #[test]
    fn sources_say_what_is_editable() {
        let user = path();
        let own = ServerOwner::Global {
            source: Some(user.clone()),
            layer: Some("user".into()),
        };
        assert!(McpServerSource::of(&own, &user).editable());
        let repo = ServerOwner::Global {
            source: Some(PathBuf::from("/repo/.mcp.json")),
            layer: Some("project".into()),
        };
        let s = McpServerSource::of(&repo, &user);
        assert!(!s.editable());
        assert!(s.where_to_change().contains("/repo/.mcp.json"));
        let plugin = ServerOwner::Plugin {
            installation: "i1".into(),
            plugin: "svc".into(),
        };
        assert!(!McpServerSource::of(&plugin, &user).editable());
        assert_eq!(entry_field("mcpServers.x.headers"), "entry.headers");
        assert_eq!(entry_field("mcpServers.x"), "entry");
    }
}
