//! Claude Code plugins as portable Agent Plugins packages.
//!
//! A Claude Code plugin (`.claude-plugin/plugin.json`, `skills/`,
//! `.mcp.json`, `${CLAUDE_PLUGIN_ROOT}`) is read and written out as an
//! Agent Plugins package: `plugin.json`, the same skills, an `mcp.json` in
//! the portable shape, and the rest of its files. Nothing is run or
//! contacted. What has no portable form (slash commands, agents, hooks,
//! output styles, LSP servers, servers that need a value from the user's
//! environment in a place a package cannot take one) is named in the
//! report, never dropped silently. The result is then inspected by the
//! same rules as any package, so an import is never trusted more than a
//! package written by hand.

use std::fs;
use std::path::{Path, PathBuf};

use evoflux_core::Diagnostic;
use evoflux_core::placeholder::{Piece, env_reference, pieces};
use evoflux_graph::mcp_format::{McpFormat, file_entries};
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::codes;
use crate::extensions::CREDENTIALS_NAMESPACE;
use crate::schema::{MCP_SCHEMA_1_0_0, PLUGIN_SCHEMA_1_0_0, check_plugin_name};
use crate::tree::{EntryKind, PackageLimits, PackageTree, walk};

/// Where a Claude Code plugin keeps its manifest.
pub const CLAUDE_MANIFEST: &str = ".claude-plugin/plugin.json";

/// Whether `dir` is a Claude Code plugin and not already an Agent Plugins
/// package (a folder with both is read as the package it also is).
pub fn is_claude_plugin(dir: &Path) -> bool {
    !dir.join("plugin.json").exists() && dir.join(CLAUDE_MANIFEST).is_file()
}

/// What an import carried over and what it could not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ImportReport {
    /// The Claude Code plugin folder.
    pub source: PathBuf,
    pub name: String,
    /// Skill bundles carried over, by folder name.
    pub skills: Vec<String>,
    /// MCP servers carried over.
    pub servers: Vec<String>,
    /// Environment variables the servers read, now asked for by the
    /// package's credentials form.
    pub credentials: Vec<String>,
    /// Everything left out, each a `plugin/import-left-out` warning naming
    /// the file or field and why.
    pub left_out: Vec<Diagnostic>,
}

/// Why a folder cannot be imported at all.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("`{}` has no {CLAUDE_MANIFEST}: it is not a Claude Code plugin", .0.display())]
    NotClaudePlugin(PathBuf),
    #[error("`{}`: {reason}", path.display())]
    ManifestInvalid { path: PathBuf, reason: String },
    /// Refused before parsing by the nesting guard.
    #[error("`{}`: {error}", path.display())]
    ManifestTooComplex {
        path: PathBuf,
        error: evoflux_core::nesting::NestingError,
    },
    #[error(
        "the plugin name `{name}` cannot name an Agent Plugins package: {reason}; rename it in {CLAUDE_MANIFEST}"
    )]
    NameInvalid { name: String, reason: String },
    #[error("`{}` already exists; import into a new folder", .0.display())]
    DestinationExists(PathBuf),
    #[error("cannot import `{}`: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the plugin folder is not readable as a package: {0}")]
    Unwalkable(String),
}

impl ImportError {
    pub const fn code(&self) -> &'static str {
        match self {
            ImportError::NotClaudePlugin(_) => "plugin/import-not-claude-plugin",
            ImportError::ManifestInvalid { .. } => "plugin/import-manifest-invalid",
            ImportError::ManifestTooComplex { error, .. } => error.code(),
            ImportError::NameInvalid { .. } => "plugin/import-name-invalid",
            ImportError::DestinationExists(_) => "plugin/import-destination-exists",
            ImportError::Io { .. } => "plugin/import-io",
            ImportError::Unwalkable(_) => "plugin/import-unreadable",
        }
    }

    fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ImportError + '_ {
        move |source| ImportError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// The Claude Code parts with no portable form, by where they live.
const LEFT_OUT_FOLDERS: [(&str, &str); 4] = [
    (
        "commands",
        "slash commands are Claude Code's; write one as a skill to use it here",
    ),
    (
        "agents",
        "a plugin's agents are Claude Code's; define agents in evoflux's agents/ folder",
    ),
    (
        "hooks",
        "hooks run Claude Code's own events and are not carried over",
    ),
    (
        "output-styles",
        "output styles are Claude Code's and are not carried over",
    ),
];

/// Manifest keys carried into `plugin.json` as they are.
const CARRIED_KEYS: [&str; 6] = [
    "version",
    "description",
    "homepage",
    "repository",
    "license",
    "keywords",
];

/// Imports the Claude Code plugin at `source` into the new folder `dest`.
pub fn import(source: &Path, dest: &Path) -> Result<ImportReport, ImportError> {
    let manifest_path = source.join(CLAUDE_MANIFEST);
    if !manifest_path.is_file() {
        return Err(ImportError::NotClaudePlugin(source.to_path_buf()));
    }
    if dest.exists() {
        return Err(ImportError::DestinationExists(dest.to_path_buf()));
    }
    let invalid = |reason: String| ImportError::ManifestInvalid {
        path: manifest_path.clone(),
        reason,
    };
    let text = evoflux_core::source::read_source(&manifest_path)
        .map_err(|e| invalid(e.to_string()))
        .and_then(|b| String::from_utf8(b).map_err(|_| invalid("not UTF-8".into())))?;
    evoflux_core::nesting::check_json(&text).map_err(|error| ImportError::ManifestTooComplex {
        path: manifest_path.clone(),
        error,
    })?;
    let claude: Map<String, Value> = match serde_json::from_str(&text) {
        Ok(Value::Object(m)) => m,
        Ok(_) => return Err(invalid("the manifest is not a JSON object".into())),
        Err(e) => return Err(invalid(format!("not valid JSON: {e}"))),
    };
    let name = match claude.get("name") {
        Some(Value::String(n)) => n.clone(),
        _ => return Err(invalid("`name` is required and must be a string".into())),
    };
    check_plugin_name(&name).map_err(|e| ImportError::NameInvalid {
        name: name.clone(),
        reason: e.to_string(),
    })?;
    let mut report = ImportReport {
        source: source.to_path_buf(),
        name: name.clone(),
        skills: Vec::new(),
        servers: Vec::new(),
        credentials: Vec::new(),
        left_out: Vec::new(),
    };
    let left_out = |report: &mut ImportReport, file: &Path, field: Option<String>, why: String| {
        let mut d = Diagnostic::warning(codes::IMPORT_LEFT_OUT, why).with_file(file);
        if let Some(f) = field {
            d = d.with_field(f);
        }
        report.left_out.push(d);
    };

    // plugin.json
    let mut manifest = Map::new();
    manifest.insert("$schema".into(), Value::from(PLUGIN_SCHEMA_1_0_0));
    manifest.insert("name".into(), Value::from(name));
    let mut servers_override: Option<Value> = None;
    let mut skill_roots: Vec<String> = vec!["skills".into()];
    for (key, value) in &claude {
        match key.as_str() {
            "name" => {}
            k if CARRIED_KEYS.contains(&k) => {
                manifest.insert(key.clone(), value.clone());
            }
            "author" => match value {
                Value::Object(a) => {
                    let author: Map<String, Value> = a
                        .iter()
                        .filter(|(k, _)| matches!(k.as_str(), "name" | "email" | "url"))
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect();
                    manifest.insert("author".into(), Value::Object(author));
                }
                Value::String(n) => {
                    manifest.insert("author".into(), json!({ "name": n }));
                }
                _ => left_out(
                    &mut report,
                    &manifest_path,
                    Some("author".into()),
                    "`author` is neither a name nor an object and is left out".into(),
                ),
            },
            "mcpServers" => servers_override = Some(value.clone()),
            "skills" => match paths_of(value) {
                Some(paths) => skill_roots = paths,
                None => left_out(
                    &mut report,
                    &manifest_path,
                    Some("skills".into()),
                    "`skills` is not a path or a list of paths; the default skills/ is read".into(),
                ),
            },
            "commands" | "agents" | "hooks" | "outputStyles" | "lspServers" => left_out(
                &mut report,
                &manifest_path,
                Some(key.clone()),
                format!("`{key}` names Claude Code components that have no portable form"),
            ),
            _ => left_out(
                &mut report,
                &manifest_path,
                Some(key.clone()),
                format!("`{key}` is not an Agent Plugins manifest field"),
            ),
        }
    }
    for (folder, why) in LEFT_OUT_FOLDERS {
        let dir = source.join(folder);
        if dir.is_dir() {
            left_out(&mut report, &dir, None, format!("`{folder}/`: {why}"));
        }
    }

    // The package's files: everything but Claude Code's own parts, links
    // copied as the files they name when they stay inside (the one rule of
    // an installed copy).
    let walked = walk(source, &PackageLimits::DEFAULT);
    if !walked.complete {
        let why = walked.diagnostics.first().map_or_else(
            || "the walk stopped".to_owned(),
            |d| d.diagnostic.message.clone(),
        );
        return Err(ImportError::Unwalkable(why));
    }
    let (plan, links) = walked.tree.materialized();
    for link in links {
        left_out(
            &mut report,
            &source.join(&link.path),
            None,
            format!(
                "`{}` is a link to `{}`, outside the plugin or to no file, and is left out",
                link.path, link.target
            ),
        );
    }
    let skill_dirs = skill_bundles(source, &skill_roots);
    let carried = |path: &str| -> Option<String> {
        let first = path.split('/').next().unwrap_or(path);
        if first == ".claude-plugin"
            || path == ".mcp.json"
            || path == "plugin.json"
            || path == "mcp.json"
            || LEFT_OUT_FOLDERS.iter().any(|(f, _)| *f == first)
        {
            return None;
        }
        // Skills land in `skills/<bundle>/` whichever folder held them.
        for (bundle, rel) in &skill_dirs {
            if let Some(rest) = path
                .strip_prefix(rel.as_str())
                .and_then(|r| r.strip_prefix('/'))
            {
                return Some(format!("skills/{bundle}/{rest}"));
            }
        }
        let under_skill_root = skill_roots
            .iter()
            .any(|r| path.starts_with(&format!("{}/", r.trim_end_matches('/'))));
        (!under_skill_root).then(|| path.to_owned())
    };
    let files: Vec<(String, String, bool)> = plan
        .entries
        .iter()
        .filter_map(|e| match e.kind {
            EntryKind::File { executable, .. } => {
                carried(&e.path).map(|to| (e.path.clone(), to, executable))
            }
            EntryKind::Dir | EntryKind::Link { .. } => None,
        })
        .collect();
    report.skills = skill_dirs.iter().map(|(b, _)| b.clone()).collect();

    // mcp.json
    let (servers, credentials) = servers(source, servers_override, &mut report)?;

    if !credentials.is_empty() {
        report.credentials = credentials.iter().map(|f| f.env.clone()).collect();
        let fields: Vec<Value> = credentials.iter().map(CredentialSeed::to_field).collect();
        manifest.insert(
            "extensions".into(),
            json!({ CREDENTIALS_NAMESPACE: { "fields": fields } }),
        );
    }

    write_package(&plan, dest, &files, &manifest, servers.as_ref())?;
    Ok(report)
}

/// A path or a list of paths, `./`-relative as Claude Code writes them.
fn paths_of(value: &Value) -> Option<Vec<String>> {
    let one = |v: &Value| {
        v.as_str()
            .map(|s| s.trim_start_matches("./").trim_end_matches('/').to_owned())
    };
    match value {
        Value::String(_) => one(value).map(|p| vec![p]),
        Value::Array(items) => items.iter().map(one).collect(),
        _ => None,
    }
}

/// The skill bundles of the skill folders: each is `(bundle name, path
/// relative to the plugin)`. A folder that holds `SKILL.md` itself is one
/// bundle.
fn skill_bundles(source: &Path, roots: &[String]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut add = |name: String, rel: String| {
        if !out.iter().any(|(n, _)| *n == name) {
            out.push((name, rel));
        }
    };
    for root in roots {
        let dir = source.join(root);
        if dir.join("SKILL.md").is_file() {
            if let Some(name) = Path::new(root).file_name() {
                add(name.to_string_lossy().into_owned(), root.clone());
            }
            continue;
        }
        let Ok(read) = fs::read_dir(&dir) else {
            continue;
        };
        let mut names: Vec<String> = read
            .filter_map(Result::ok)
            .filter(|e| e.path().join("SKILL.md").is_file())
            .filter_map(|e| e.file_name().to_str().map(str::to_owned))
            .collect();
        names.sort();
        for name in names {
            add(name.clone(), format!("{root}/{name}"));
        }
    }
    out
}

/// A credential the package will ask for, seeded from a Claude Code
/// server's `env` reference.
#[derive(Debug, Clone, PartialEq, Eq)]
struct CredentialSeed {
    /// The variable the server process reads.
    env: String,
    /// The variable the user had it in (`${VAR}`), shown as the label.
    label: String,
    default: Option<String>,
}

impl CredentialSeed {
    fn to_field(&self) -> Value {
        let mut field = json!({
            "key": self.env.to_ascii_lowercase(),
            "label": self.label,
            "type": "secret",
            "env": self.env,
            "required": self.default.is_none(),
        });
        if let Some(d) = &self.default {
            field["default"] = Value::from(d.clone());
        }
        field
    }
}

/// Claude Code's variables in Agent Plugins words.
fn plugin_placeholders(text: &str) -> String {
    text.replace("${CLAUDE_PLUGIN_ROOT}", "${PLUGIN_ROOT}")
        .replace("${CLAUDE_PLUGIN_DATA}", "${PLUGIN_DATA}")
}

/// The one `${VAR}` or `${VAR:-default}` that is the whole of `text`.
fn whole_reference(text: &str) -> Option<(String, Option<String>)> {
    let mut all = pieces(text);
    let (Some(Piece::Braced { inner, .. }), None) = (all.next(), all.next()) else {
        return None;
    };
    let r = env_reference(inner)?;
    (r.name != "PLUGIN_ROOT" && r.name != "PLUGIN_DATA")
        .then(|| (r.name.to_owned(), r.default.map(str::to_owned)))
}

/// A value with a user's variable in it that a package cannot take:
/// `Ok(text)` with defaults filled in when every reference has one, else
/// the first variable without one.
fn without_references(text: &str) -> Result<(String, bool), String> {
    let mut out = String::with_capacity(text.len());
    let mut replaced = false;
    for piece in pieces(text) {
        match piece {
            Piece::Text(t) => out.push_str(t),
            Piece::Braced { inner, written } => match env_reference(inner) {
                Some(r) if r.name != "PLUGIN_ROOT" && r.name != "PLUGIN_DATA" => match r.default {
                    Some(d) => {
                        out.push_str(d);
                        replaced = true;
                    }
                    None => return Err(r.name.to_owned()),
                },
                Some(_) | None => out.push_str(written),
            },
        }
    }
    Ok((out, replaced))
}

/// The servers of `.mcp.json` (or the manifest's `mcpServers`) in the
/// portable shape, with the credentials their `env` references become.
fn servers(
    source: &Path,
    declared: Option<Value>,
    report: &mut ImportReport,
) -> Result<(Option<Value>, Vec<CredentialSeed>), ImportError> {
    let (file, entries) = match declared {
        Some(Value::Object(inline)) => {
            let file = source.join(CLAUDE_MANIFEST);
            let servers = match inline.get("mcpServers") {
                Some(Value::Object(s)) => s.clone(),
                _ => inline,
            };
            (file, servers.into_iter().collect::<Vec<_>>())
        }
        Some(Value::String(path)) => {
            let file = source.join(path.trim_start_matches("./"));
            (file.clone(), read_servers(&file, report)?)
        }
        Some(_) => {
            report.left_out.push(
                Diagnostic::warning(
                    codes::IMPORT_LEFT_OUT,
                    "`mcpServers` is neither a path nor an object; no servers are carried over",
                )
                .with_file(source.join(CLAUDE_MANIFEST))
                .with_field("mcpServers"),
            );
            return Ok((None, Vec::new()));
        }
        None => {
            let file = source.join(".mcp.json");
            if !file.is_file() {
                return Ok((None, Vec::new()));
            }
            (file.clone(), read_servers(&file, report)?)
        }
    };
    let mut out = Map::new();
    let mut credentials: Vec<CredentialSeed> = Vec::new();
    for (name, value) in entries {
        let notes = match portable_server(&value) {
            Ok(Portable {
                entry,
                credentials: found,
                notes,
            }) => {
                for seed in found {
                    if !credentials.iter().any(|c| c.env == seed.env) {
                        credentials.push(seed);
                    }
                }
                report.servers.push(name.clone());
                out.insert(name.clone(), entry);
                notes
            }
            Err(why) => vec![format!("{why}; the server is left out")],
        };
        for why in notes {
            report.left_out.push(
                Diagnostic::warning(codes::IMPORT_LEFT_OUT, format!("server `{name}`: {why}"))
                    .with_file(&file)
                    .with_field(format!("mcpServers.{name}")),
            );
        }
    }
    if out.is_empty() {
        return Ok((None, credentials));
    }
    Ok((
        Some(json!({ "$schema": MCP_SCHEMA_1_0_0, "mcpServers": out })),
        credentials,
    ))
}

fn read_servers(
    file: &Path,
    report: &mut ImportReport,
) -> Result<Vec<(String, Value)>, ImportError> {
    let bytes = evoflux_core::source::read_source(file).map_err(|e| match e {
        evoflux_core::source::SourceReadError::Io(io) => ImportError::Io {
            path: file.to_path_buf(),
            source: io,
        },
        other => ImportError::ManifestInvalid {
            path: file.to_path_buf(),
            reason: other.to_string(),
        },
    })?;
    let text = String::from_utf8_lossy(&bytes);
    match file_entries(&McpFormat::ClaudeProject, file, &text) {
        Ok(entries) => Ok(entries.into_iter().map(|e| (e.name, e.value)).collect()),
        Err(d) => {
            report.left_out.push(
                Diagnostic::warning(
                    codes::IMPORT_LEFT_OUT,
                    format!("no servers are carried over: {}", d.message),
                )
                .with_file(file),
            );
            Ok(Vec::new())
        }
    }
}

/// One server in the portable shape.
struct Portable {
    entry: Value,
    credentials: Vec<CredentialSeed>,
    /// Keys or values not carried over, the server kept.
    notes: Vec<String>,
}

/// A Claude Code server entry as an Agent Plugins `mcp.json` entry, or
/// why it has none.
fn portable_server(value: &Value) -> Result<Portable, String> {
    let Value::Object(entry) = value else {
        return Err("the entry is not an object".into());
    };
    let kind = match entry.get("type").and_then(Value::as_str) {
        Some("stdio") => "stdio",
        Some("http" | "streamable-http") => "streamable-http",
        Some("sse") => "sse",
        Some(other) => return Err(format!("its type `{other}` is unknown")),
        None if entry.contains_key("command") => "stdio",
        None if entry.contains_key("url") => "streamable-http",
        None => return Err("it has neither a `command` nor a `url`".into()),
    };
    let mut out = Map::new();
    out.insert("type".into(), Value::from(kind));
    let mut credentials = Vec::new();
    let mut notes = Vec::new();
    let known: &[&str] = if kind == "stdio" {
        &["type", "command", "args", "env", "cwd"]
    } else {
        &["type", "url", "headers"]
    };
    for key in entry.keys().filter(|k| !known.contains(&k.as_str())) {
        notes.push(format!("`{key}` is not carried over"));
    }
    let defaulted = |notes: &mut Vec<String>, what: &str| {
        notes.push(format!(
            "{what} reads your environment, which a package cannot; its default is written instead"
        ));
    };
    let reads_env = |what: &str, var: &str| {
        format!(
            "{what} needs `${{{var}}}` from your environment, which an Agent Plugins package \
             cannot take there; add the server to your own mcp.json, where references work"
        )
    };
    if kind == "stdio" {
        let command = entry
            .get("command")
            .and_then(Value::as_str)
            .ok_or("`command` is not a string")?;
        let command = match command.strip_prefix("${CLAUDE_PLUGIN_ROOT}/") {
            Some(rest) => format!("./{rest}"),
            None if command.contains("${") => {
                return Err(format!("its command `{command}` names a variable"));
            }
            None => command.to_owned(),
        };
        out.insert("command".into(), Value::from(command));
        if let Some(Value::Array(args)) = entry.get("args") {
            let mut carried = Vec::with_capacity(args.len());
            for (i, a) in args.iter().enumerate() {
                let a = plugin_placeholders(a.as_str().ok_or("`args` holds a non-string")?);
                match without_references(&a) {
                    Ok((text, replaced)) => {
                        if replaced {
                            defaulted(&mut notes, &format!("`args.{i}`"));
                        }
                        carried.push(Value::from(text));
                    }
                    Err(var) => return Err(reads_env(&format!("`args.{i}`"), &var)),
                }
            }
            out.insert("args".into(), Value::Array(carried));
        }
        if let Some(Value::Object(env)) = entry.get("env") {
            let mut carried = Map::new();
            for (k, v) in env {
                let v = plugin_placeholders(v.as_str().ok_or("`env` holds a non-string")?);
                if let Some((var, default)) = whole_reference(&v) {
                    // The credentials form asks for it and sets `k`.
                    credentials.push(CredentialSeed {
                        env: k.clone(),
                        label: var,
                        default,
                    });
                    continue;
                }
                match without_references(&v) {
                    Ok((text, replaced)) => {
                        if replaced {
                            defaulted(&mut notes, &format!("`env.{k}`"));
                        }
                        carried.insert(k.clone(), Value::from(text));
                    }
                    Err(var) => return Err(reads_env(&format!("`env.{k}`"), &var)),
                }
            }
            if !carried.is_empty() {
                out.insert("env".into(), Value::Object(carried));
            }
        }
        if let Some(Value::String(cwd)) = entry.get("cwd") {
            out.insert("cwd".into(), Value::from(plugin_placeholders(cwd)));
        }
    } else {
        let url = entry
            .get("url")
            .and_then(Value::as_str)
            .ok_or("`url` is not a string")?;
        match without_references(url) {
            Ok((text, replaced)) => {
                if replaced {
                    defaulted(&mut notes, "`url`");
                }
                out.insert("url".into(), Value::from(text));
            }
            Err(var) => return Err(reads_env("`url`", &var)),
        }
        if let Some(Value::Object(headers)) = entry.get("headers") {
            let mut carried = Map::new();
            for (h, v) in headers {
                let v = v.as_str().ok_or("`headers` holds a non-string")?;
                match without_references(v) {
                    // An optional header whose variable is unset is not
                    // sent at all.
                    Ok((text, true)) if text.trim().is_empty() => {
                        notes.push(format!(
                            "header `{h}` reads your environment, which a package cannot; it is not sent"
                        ));
                    }
                    Ok((text, replaced)) => {
                        if replaced {
                            defaulted(&mut notes, &format!("header `{h}`"));
                        }
                        carried.insert(h.clone(), Value::from(text));
                    }
                    Err(var) => return Err(reads_env(&format!("header `{h}`"), &var)),
                }
            }
            if !carried.is_empty() {
                out.insert("headers".into(), Value::Object(carried));
            }
        }
    }
    Ok(Portable {
        entry: Value::Object(out),
        credentials,
        notes,
    })
}

fn write_package(
    plan: &PackageTree,
    dest: &Path,
    files: &[(String, String, bool)],
    manifest: &Map<String, Value>,
    mcp: Option<&Value>,
) -> Result<(), ImportError> {
    fs::create_dir_all(dest).map_err(ImportError::io(dest))?;
    for (from, to, executable) in files {
        let target = dest.join(to);
        if let Some(parent) = target.parent() {
            fs::create_dir_all(parent).map_err(ImportError::io(parent))?;
        }
        let source = plan.root.join(from);
        fs::copy(&source, &target).map_err(ImportError::io(&source))?;
        crate::tree::set_file_mode(&target, *executable).map_err(ImportError::io(&target))?;
    }
    let write_json = |name: &str, value: &Value| -> Result<(), ImportError> {
        let path = dest.join(name);
        let mut text = serde_json::to_string_pretty(value).unwrap_or_default();
        text.push('\n');
        fs::write(&path, text).map_err(ImportError::io(&path))
    };
    write_json("plugin.json", &Value::Object(manifest.clone()))?;
    if let Some(mcp) = mcp {
        write_json("mcp.json", mcp)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn portable(v: Value) -> Result<Portable, String> {
        portable_server(&v)
    }

    #[test]
    fn hostile_manifest_is_refused_before_parsing() {
        let tmp = tempfile::tempdir().unwrap();
        let source = tmp.path().join("src");
        std::fs::create_dir_all(source.join(".claude-plugin")).unwrap();
        let text = format!(
            "{{\"name\": {}{}}}",
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        std::fs::write(source.join(CLAUDE_MANIFEST), text).unwrap();
        let e = import(&source, &tmp.path().join("dest")).unwrap_err();
        assert_eq!(e.code(), "json/too-deep");
        assert!(!tmp.path().join("dest").exists());
    }

    #[test]
    fn plugin_root_becomes_the_package_s_own_placeholders() {
        let p = portable(json!({
            "command": "${CLAUDE_PLUGIN_ROOT}/bin/server",
            "args": ["--data", "${CLAUDE_PLUGIN_DATA}/db", "${MODE:-fast}"],
            "env": {"API_KEY": "${SERVICE_KEY}", "LEVEL": "info", "OPT": "${OPT_IN:-no}"}
        }))
        .unwrap();
        assert_eq!(
            p.entry,
            json!({"type": "stdio", "command": "./bin/server",
                   "args": ["--data", "${PLUGIN_DATA}/db", "fast"], "env": {"LEVEL": "info"}})
        );
        assert_eq!(
            p.credentials,
            [
                CredentialSeed {
                    env: "API_KEY".into(),
                    label: "SERVICE_KEY".into(),
                    default: None
                },
                CredentialSeed {
                    env: "OPT".into(),
                    label: "OPT_IN".into(),
                    default: Some("no".into())
                }
            ]
        );
        assert_eq!(
            p.notes.len(),
            1,
            "the defaulted argument is named: {:?}",
            p.notes
        );
    }

    #[test]
    fn http_servers_that_need_the_environment_are_left_out_with_the_reason() {
        let err = portable(json!({"type": "http", "url": "https://api.example.com/mcp",
            "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}"}}))
        .err()
        .unwrap();
        assert!(err.contains("`${GITHUB_TOKEN}`"), "{err}");
        // An optional header (`${KEY:-}`) is simply not sent.
        let p = portable(
            json!({"type": "http", "url": "https://mcp.context7.com/mcp",
            "headers": {"CONTEXT7_API_KEY": "${CONTEXT7_API_KEY:-}"}, "oauth": {}}),
        )
        .unwrap();
        assert_eq!(
            p.entry,
            json!({"type": "streamable-http", "url": "https://mcp.context7.com/mcp"})
        );
        assert_eq!(p.notes.len(), 2, "{:?}", p.notes);
        assert!(portable(json!({"command": "${HOME}/bin/x"})).is_err());
        assert!(portable(json!({"type": "websocket", "url": "wss://x"})).is_err());
    }
}
