//! Prompt commands: what a user types as `/name args` to send a prompt
//! someone already wrote — Claude Code's custom commands
//! (`.claude/commands/**/*.md`), codex's custom prompts
//! (`~/.codex/prompts/*.md`) and the prompts of the session's MCP servers
//! (`/mcp__<server>__<prompt>`) — and `@server:uri` references that attach
//! an MCP resource to the message.
//!
//! Why here: every front end (line chat, full-screen chat, web UI, ACP,
//! `run`) submits text to the harness, so expanding it where the turn
//! takes its input gives all of them the same commands. Front ends only
//! list [`crate::session::Harness::prompt_commands`] for help and
//! completion. The files are read-only: which folders are read is the
//! application's choice ([`CommandDir`]); parsing, naming, substitution
//! and argument mapping are this module's, once.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use evoflux_core::Diagnostic;
use evoflux_mcp::McpPromptArgument;
use serde::Serialize;
use serde_json::{Map, Value};

/// One command the user can type as `/name args`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PromptCommand {
    /// What follows the `/` (`review`, `frontend:component`,
    /// `prompts:draft`, `mcp__everything__simple-prompt`).
    pub name: String,
    pub description: String,
    /// What the arguments look like (`argument-hint`, or the MCP prompt's
    /// declared arguments).
    pub argument_hint: Option<String>,
    pub source: PromptSource,
}

/// Where a command comes from. Closed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PromptSource {
    /// A Claude Code custom command file.
    ClaudeCommand { path: PathBuf },
    /// A codex custom prompt file (invoked as `/prompts:<name>`, or
    /// `/<name>` when no other command has that name).
    CodexPrompt { path: PathBuf },
    /// A prompt of an MCP server the session may use (`server` as the
    /// user names it: `name`, or `<plugin>/<name>`).
    McpPrompt { server: String, prompt: String },
}

/// Which kind of command folder a [`CommandDir`] is. Closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CommandFolder {
    /// `.claude/commands`: every `*.md` below it; a subfolder adds
    /// `<dir>:` to the name, as in Claude Code.
    ClaudeCommands,
    /// `~/.codex/prompts`: the `*.md` files directly in it.
    CodexPrompts,
}

/// One folder to read commands from, in precedence order (the first
/// folder's command wins a name; a later one is reported as shadowed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandDir {
    pub dir: PathBuf,
    pub folder: CommandFolder,
}

/// A command read from a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileCommand {
    pub command: PromptCommand,
    /// The body after the front matter, with its placeholders.
    pub template: String,
    /// `allowed-tools` and `model` as written: accepted and shown, not
    /// applied (the session's agent decides its tools and model).
    pub allowed_tools: Option<String>,
    pub model: Option<String>,
}

/// The largest command file read.
pub const MAX_COMMAND_FILE: u64 = 256 * 1024;
/// How deep subfolders of `.claude/commands` are read.
const MAX_DEPTH: usize = 4;
/// How many files one folder may hold before the rest are skipped.
const MAX_FILES: usize = 1000;
/// The most text one `@server:uri` reference attaches.
pub const MAX_RESOURCE_TEXT: usize = 64 * 1024;
/// The most text all references of one message attach together.
pub const MAX_RESOURCES_TEXT: usize = 256 * 1024;

/// Stable codes of this module.
pub mod codes {
    /// A command file or folder could not be read.
    pub const UNREADABLE: &str = "commands/unreadable";
    /// A command file's front matter is not valid YAML: the file is skipped.
    pub const FRONT_MATTER_INVALID: &str = "commands/front-matter-invalid";
    /// A command file is larger than [`super::MAX_COMMAND_FILE`].
    pub const TOO_LARGE: &str = "commands/too-large";
    /// A command of the same name came earlier (project over user).
    pub const SHADOWED: &str = "commands/shadowed";
    /// A folder held more files than are read.
    pub const FOLDER_LIMIT: &str = "commands/folder-limit";
}

/// Reads every command of `dirs`, first folder first. Missing folders
/// are fine; anything else that cannot be read is a diagnostic naming the
/// file and what to do.
pub fn load_files(dirs: &[CommandDir]) -> (Vec<FileCommand>, Vec<Diagnostic>) {
    let mut out: Vec<FileCommand> = Vec::new();
    let mut diags = Vec::new();
    for dir in dirs {
        if !dir.dir.is_dir() {
            continue;
        }
        let mut files = Vec::new();
        let depth = match dir.folder {
            CommandFolder::ClaudeCommands => MAX_DEPTH,
            CommandFolder::CodexPrompts => 0,
        };
        collect(&dir.dir, &[], depth, &mut files, &mut diags);
        if files.len() > MAX_FILES {
            diags.push(
                Diagnostic::warning(
                    codes::FOLDER_LIMIT,
                    format!(
                        "{} command files; only the first {MAX_FILES} are read",
                        files.len()
                    ),
                )
                .with_file(&dir.dir),
            );
            files.truncate(MAX_FILES);
        }
        for (segments, path) in files {
            let name = match dir.folder {
                CommandFolder::ClaudeCommands => segments.join(":"),
                CommandFolder::CodexPrompts => format!("prompts:{}", segments.join(":")),
            };
            let Some(cmd) = read_command(&path, name, dir.folder, &mut diags) else {
                continue;
            };
            if let Some(first) = out.iter().find(|c| c.command.name == cmd.command.name) {
                diags.push(
                    Diagnostic::info(
                        codes::SHADOWED,
                        format!(
                            "command `/{}` is also defined in {}, which is used",
                            cmd.command.name,
                            source_path(&first.command.source)
                                .map_or_else(String::new, |p| p.display().to_string())
                        ),
                    )
                    .with_file(&path),
                );
                continue;
            }
            out.push(cmd);
        }
    }
    (out, diags)
}

fn source_path(source: &PromptSource) -> Option<&Path> {
    match source {
        PromptSource::ClaudeCommand { path } | PromptSource::CodexPrompt { path } => Some(path),
        PromptSource::McpPrompt { .. } => None,
    }
}

/// The `*.md` files below `dir` with their name segments, sorted.
fn collect(
    dir: &Path,
    prefix: &[String],
    depth: usize,
    out: &mut Vec<(Vec<String>, PathBuf)>,
    diags: &mut Vec<Diagnostic>,
) {
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) => {
            diags.push(
                Diagnostic::warning(
                    codes::UNREADABLE,
                    format!("cannot list the command folder: {e}; check its permissions"),
                )
                .with_file(dir),
            );
            return;
        }
    };
    let mut entries: Vec<(String, PathBuf)> = rd
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_owned();
            (!name.starts_with('.')).then(|| (name, e.path()))
        })
        .collect();
    entries.sort();
    for (name, path) in entries {
        if path.is_dir() {
            if depth > 0 {
                let mut p = prefix.to_vec();
                p.push(name);
                collect(&path, &p, depth - 1, out, diags);
            }
        } else if let Some(stem) = name.strip_suffix(".md")
            && !stem.is_empty()
        {
            let mut p = prefix.to_vec();
            p.push(stem.to_owned());
            out.push((p, path));
        }
    }
}

/// One command file, or `None` with a diagnostic saying why it is skipped.
fn read_command(
    path: &Path,
    name: String,
    folder: CommandFolder,
    diags: &mut Vec<Diagnostic>,
) -> Option<FileCommand> {
    match std::fs::metadata(path) {
        Ok(m) if m.len() > MAX_COMMAND_FILE => {
            diags.push(
                Diagnostic::warning(
                    codes::TOO_LARGE,
                    format!(
                        "the command file is {} bytes; command files are at most \
                         {MAX_COMMAND_FILE} bytes: shorten it",
                        m.len()
                    ),
                )
                .with_file(path),
            );
            return None;
        }
        Ok(_) => {}
        Err(e) => {
            diags.push(
                Diagnostic::warning(codes::UNREADABLE, format!("cannot read it: {e}"))
                    .with_file(path),
            );
            return None;
        }
    }
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            diags.push(
                Diagnostic::warning(
                    codes::UNREADABLE,
                    format!("cannot read it as UTF-8 text: {e}"),
                )
                .with_file(path),
            );
            return None;
        }
    };
    // Claude Code reads its front matter leniently (`argument-hint: [pr]
    // [priority]` is not valid YAML), so the keys are read line by line
    // as the text written; only an unclosed block skips the file.
    let doc = match evoflux_core::frontmatter::split(&text) {
        Ok(doc) => doc,
        Err(e) => {
            let mut d = e.to_diagnostic(path);
            d.code = codes::FRONT_MATTER_INVALID.into();
            // One command skipped: the session still works.
            d.severity = evoflux_core::Severity::Warning;
            d.message = format!("{}; the command is skipped until it is fixed", d.message);
            diags.push(d);
            return None;
        }
    };
    // Unknown keys are kept in the file and ignored here.
    let keys = front_matter_fields(doc.yaml.unwrap_or(""));
    let field = |key: &str| keys.get(key).filter(|v| !v.is_empty()).cloned();
    let template = doc.body.trim_start_matches(['\n', '\r']).to_owned();
    let description = field("description").unwrap_or_else(|| first_line(&template));
    let source = match folder {
        CommandFolder::ClaudeCommands => PromptSource::ClaudeCommand {
            path: path.to_path_buf(),
        },
        CommandFolder::CodexPrompts => PromptSource::CodexPrompt {
            path: path.to_path_buf(),
        },
    };
    Some(FileCommand {
        command: PromptCommand {
            name,
            description,
            argument_hint: field("argument-hint").or_else(|| field("argument_hint")),
            source,
        },
        template,
        allowed_tools: field("allowed-tools"),
        model: field("model"),
    })
}

/// The top-level `key: value` lines of a front matter block, each value
/// as written (surrounding quotes removed); a key with a `- item` list
/// below it gets the items joined with `, `.
fn front_matter_fields(yaml: &str) -> BTreeMap<String, String> {
    let mut out: BTreeMap<String, String> = BTreeMap::new();
    let mut list_key: Option<String> = None;
    for line in yaml.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if line.starts_with([' ', '\t', '-']) {
            if let (Some(key), Some(item)) = (&list_key, trimmed.strip_prefix('-')) {
                let entry = out.entry(key.clone()).or_default();
                if !entry.is_empty() {
                    entry.push_str(", ");
                }
                entry.push_str(unquote(item.trim()));
            }
            continue;
        }
        list_key = None;
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if value.is_empty() {
            list_key = Some(key.trim().to_owned());
        }
        out.insert(key.trim().to_owned(), unquote(value).to_owned());
    }
    out
}

fn unquote(v: &str) -> &str {
    for q in ['"', '\''] {
        if v.len() >= 2 && v.starts_with(q) && v.ends_with(q) {
            return &v[1..v.len() - 1];
        }
    }
    v
}

/// The first non-empty line, shortened: a command without a
/// `description` is described by how it starts (as Claude Code does).
fn first_line(text: &str) -> String {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    let mut out: String = line.chars().take(80).collect();
    if line.chars().count() > 80 {
        out.push('…');
    }
    out
}

/// Splits arguments as a shell would for `$1..$9`: whitespace separates,
/// single or double quotes keep a part together (and are removed).
pub fn split_arguments(args: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut started = false;
    for c in args.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => cur.push(c),
            None if c == '"' || c == '\'' => {
                quote = Some(c);
                started = true;
            }
            None if c.is_whitespace() => {
                if started {
                    out.push(std::mem::take(&mut cur));
                    started = false;
                }
            }
            None => {
                cur.push(c);
                started = true;
            }
        }
    }
    if started {
        out.push(cur);
    }
    out
}

/// `KEY=value` when `KEY` is an upper-case identifier (codex's named
/// arguments).
fn named_argument(token: &str) -> Option<(&str, &str)> {
    let (key, value) = token.split_once('=')?;
    let mut chars = key.chars();
    let first = chars.next()?;
    (first.is_ascii_uppercase()
        && chars.all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
    .then_some((key, value))
}

/// Fills a file command's placeholders: `$ARGUMENTS` is everything after
/// the name, `$1`..`$9` its shell-split parts, and (codex prompts) `$KEY`
/// a `KEY=value` part; `$$` is a literal `$`. A template with no
/// placeholder gets the arguments appended (`ARGUMENTS: …`), as Claude
/// Code does, so none are lost.
pub fn substitute(template: &str, args: &str, folder: CommandFolder) -> String {
    let args = args.trim();
    let parts = split_arguments(args);
    let mut named: BTreeMap<&str, &str> = BTreeMap::new();
    let mut positional: Vec<&str> = Vec::new();
    for p in &parts {
        match (folder, named_argument(p)) {
            (CommandFolder::CodexPrompts, Some((k, v))) => {
                named.insert(k, v);
            }
            (CommandFolder::CodexPrompts | CommandFolder::ClaudeCommands, _) => {
                positional.push(p);
            }
        }
    }
    let mut out = String::with_capacity(template.len() + args.len());
    let mut used = false;
    let mut rest = template;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
            continue;
        }
        if let Some(tail) = after.strip_prefix("ARGUMENTS") {
            out.push_str(args);
            used = true;
            rest = tail;
            continue;
        }
        let mut chars = after.chars();
        match chars.next() {
            Some(d @ '1'..='9') => {
                let n = (d as usize) - ('0' as usize);
                out.push_str(positional.get(n - 1).copied().unwrap_or(""));
                used = true;
                rest = &after[1..];
            }
            Some(c) if c.is_ascii_uppercase() && folder == CommandFolder::CodexPrompts => {
                let len = after
                    .find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
                    .unwrap_or(after.len());
                let key = &after[..len];
                match named.get(key) {
                    Some(v) => {
                        out.push_str(v);
                        used = true;
                    }
                    None => {
                        out.push('$');
                        out.push_str(key);
                    }
                }
                rest = &after[len..];
            }
            _ => {
                out.push('$');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    if !used && !args.is_empty() {
        out = format!("{}\n\nARGUMENTS: {args}", out.trim_end());
    }
    out
}

/// Why a typed command or reference could not be expanded. Each names
/// what the user typed and what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    #[error(
        "`/{command}` needs the argument `{argument}`{hint}: type it after the command, in \
         order or as `{argument}=value`"
    )]
    ArgumentMissing {
        command: String,
        argument: String,
        hint: String,
    },
    #[error("`/{command}` takes no argument named `{argument}`; its arguments are: {declared}")]
    ArgumentUnknown {
        command: String,
        argument: String,
        declared: String,
    },
    #[error("`/{command}` failed: {message} ({code})")]
    PromptFailed {
        command: String,
        code: &'static str,
        message: String,
    },
    #[error(
        "`@{server}:{uri}`: no MCP server this session may use is named `{server}`; the \
         servers are: {known}"
    )]
    ResourceServerUnknown {
        server: String,
        uri: String,
        known: String,
    },
    #[error("`@{server}:{uri}` could not be read: {message} ({code})")]
    ResourceReadFailed {
        server: String,
        uri: String,
        code: &'static str,
        message: String,
    },
}

impl CommandError {
    /// The stable code of this error.
    pub fn code(&self) -> &'static str {
        match self {
            CommandError::ArgumentMissing { .. } => "commands/argument-missing",
            CommandError::ArgumentUnknown { .. } => "commands/argument-unknown",
            CommandError::PromptFailed { .. } => "commands/prompt-failed",
            CommandError::ResourceServerUnknown { .. } => "commands/resource-server-unknown",
            CommandError::ResourceReadFailed { .. } => "commands/resource-read-failed",
        }
    }
}

/// Maps typed arguments onto an MCP prompt's declared arguments:
/// `name=value` for a declared name, the other parts in declaration order
/// to the arguments not named (the last one takes what is left, so a
/// sentence fills a single argument). A required argument left out is an
/// error naming it.
pub fn map_prompt_arguments(
    command: &str,
    declared: &[McpPromptArgument],
    args: &str,
) -> Result<Map<String, Value>, CommandError> {
    let mut map = Map::new();
    let mut positional: Vec<String> = Vec::new();
    for part in split_arguments(args) {
        match part.split_once('=') {
            Some((key, value)) if declared.iter().any(|a| a.name == key) => {
                map.insert(key.to_owned(), Value::from(value));
            }
            Some((key, _))
                if !key.is_empty()
                    && key
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
                    && !declared.is_empty()
                    && positional.len() >= declared.len() =>
            {
                return Err(CommandError::ArgumentUnknown {
                    command: command.to_owned(),
                    argument: key.to_owned(),
                    declared: declared
                        .iter()
                        .map(|a| a.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                });
            }
            _ => positional.push(part),
        }
    }
    let open: Vec<&McpPromptArgument> = declared
        .iter()
        .filter(|a| !map.contains_key(&a.name))
        .collect();
    let mut parts = positional.into_iter();
    for (i, arg) in open.iter().enumerate() {
        let value = if i + 1 == open.len() {
            let rest: Vec<String> = parts.by_ref().collect();
            (!rest.is_empty()).then(|| rest.join(" "))
        } else {
            parts.next()
        };
        if let Some(v) = value {
            map.insert(arg.name.clone(), Value::from(v));
        }
    }
    if let Some(missing) = declared
        .iter()
        .find(|a| a.required && !map.contains_key(&a.name))
    {
        return Err(CommandError::ArgumentMissing {
            command: command.to_owned(),
            argument: missing.name.clone(),
            hint: missing
                .description
                .as_ref()
                .map_or_else(String::new, |d| format!(" ({d})")),
        });
    }
    Ok(map)
}

/// The argument hint of an MCP prompt: `<required> [optional]`.
pub fn prompt_argument_hint(declared: &[McpPromptArgument]) -> Option<String> {
    (!declared.is_empty()).then(|| {
        declared
            .iter()
            .map(|a| match a.required {
                true => format!("<{}>", a.name),
                false => format!("[{}]", a.name),
            })
            .collect::<Vec<_>>()
            .join(" ")
    })
}

/// `/name args` on the message's first line: the name and the rest of
/// the message (the first line's remainder and the lines after it).
pub fn parse_invocation(text: &str) -> Option<(&str, &str)> {
    let rest = text.strip_prefix('/')?;
    let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let name = &rest[..end];
    if name.is_empty() || name.contains('/') {
        return None;
    }
    Some((name, rest[end..].trim_start_matches([' ', '\t'])))
}

/// `@server:scheme://…` references in a message, in order: the server
/// reference and the URI. Only a URI with a scheme counts, so file
/// mentions (`@src/main.rs:12`) stay as typed.
pub fn resource_references(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for token in text.split_whitespace() {
        let Some(body) = token.strip_prefix('@') else {
            continue;
        };
        let Some((server, uri)) = body.split_once(':') else {
            continue;
        };
        let uri = uri.trim_end_matches(['.', ',', ';', ')', '!', '?']);
        let scheme_ok = uri.split_once("://").is_some_and(|(scheme, rest)| {
            !scheme.is_empty()
                && !rest.is_empty()
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        });
        if server.is_empty() || !scheme_ok {
            continue;
        }
        let pair = (server.to_owned(), uri.to_owned());
        if !out.contains(&pair) {
            out.push(pair);
        }
    }
    out
}

/// Cuts `text` to at most `max` bytes on a character boundary.
pub(crate) fn clip(text: &str, max: usize) -> (&str, bool) {
    if text.len() <= max {
        return (text, false);
    }
    (&text[..text.floor_char_boundary(max)], true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arg(name: &str, required: bool) -> McpPromptArgument {
        McpPromptArgument {
            name: name.to_owned(),
            description: Some(format!("the {name}")),
            required,
        }
    }

    #[test]
    fn arguments_and_positions_are_substituted() {
        let t = "Review $ARGUMENTS now. First: $1, second: $2, none: $3. Cost $$5.";
        assert_eq!(
            substitute(t, "a.rs \"b c.rs\"", CommandFolder::ClaudeCommands),
            "Review a.rs \"b c.rs\" now. First: a.rs, second: b c.rs, none: . Cost $5."
        );
    }

    #[test]
    fn a_template_without_placeholders_gets_the_arguments_appended() {
        assert_eq!(
            substitute(
                "Fix the tests.\n",
                "in crate x",
                CommandFolder::ClaudeCommands
            ),
            "Fix the tests.\n\nARGUMENTS: in crate x"
        );
        assert_eq!(
            substitute("Fix the tests.\n", "", CommandFolder::ClaudeCommands),
            "Fix the tests.\n"
        );
    }

    #[test]
    fn codex_named_arguments_fill_keys_and_others_stay() {
        let t = "Draft a PR for $FILE about $TOPIC; $HOME stays; first $1.";
        assert_eq!(
            substitute(
                t,
                "FILE=src/a.rs TOPIC=\"the cache\" extra",
                CommandFolder::CodexPrompts
            ),
            "Draft a PR for src/a.rs about the cache; $HOME stays; first extra."
        );
        // Claude commands have no named arguments: `$FILE` stays.
        assert_eq!(
            substitute("$FILE and $1", "FILE=x", CommandFolder::ClaudeCommands),
            "$FILE and FILE=x"
        );
    }

    #[test]
    fn prompt_arguments_map_by_position_and_by_name() {
        let declared = [arg("city", true), arg("state", false)];
        let m = map_prompt_arguments("p", &declared, "Paris France").unwrap();
        assert_eq!(m["city"], "Paris");
        assert_eq!(m["state"], "France");
        let m = map_prompt_arguments("p", &declared, "state=Texas Austin").unwrap();
        assert_eq!(m["city"], "Austin");
        assert_eq!(m["state"], "Texas");
        // The last argument takes the rest.
        let m = map_prompt_arguments("p", &[arg("text", true)], "a whole sentence").unwrap();
        assert_eq!(m["text"], "a whole sentence");
        // Optional ones may be left out.
        let m = map_prompt_arguments("p", &declared, "Rome").unwrap();
        assert!(!m.contains_key("state"));
    }

    #[test]
    fn a_missing_required_argument_is_named() {
        let declared = [arg("city", true), arg("state", false)];
        let e = map_prompt_arguments("mcp__x__p", &declared, "").unwrap_err();
        assert_eq!(e.code(), "commands/argument-missing");
        assert!(
            matches!(e, CommandError::ArgumentMissing { ref argument, .. } if argument == "city")
        );
        let e = map_prompt_arguments("p", &declared, "Rome Italy planet=earth").unwrap_err();
        assert_eq!(e.code(), "commands/argument-unknown");
    }

    #[test]
    fn invocations_and_references_are_recognized() {
        assert_eq!(parse_invocation("/review a b"), Some(("review", "a b")));
        assert_eq!(
            parse_invocation("/frontend:component x\nmore"),
            Some(("frontend:component", "x\nmore"))
        );
        assert_eq!(parse_invocation("/usr/bin/env"), None);
        assert_eq!(parse_invocation("hello /review"), None);
        let refs = resource_references(
            "see @everything:demo://resource/static/document/1.txt, and @src/main.rs:12 and me@x.org",
        );
        assert_eq!(
            refs,
            [(
                "everything".to_owned(),
                "demo://resource/static/document/1.txt".to_owned()
            )]
        );
    }

    #[test]
    fn folders_are_read_with_subfolder_names_and_precedence() {
        let tmp = tempfile::tempdir().unwrap();
        let project = tmp.path().join("p/.claude/commands");
        let user = tmp.path().join("u/.claude/commands");
        let codex = tmp.path().join("u/.codex/prompts");
        std::fs::create_dir_all(project.join("frontend")).unwrap();
        std::fs::create_dir_all(&user).unwrap();
        std::fs::create_dir_all(&codex).unwrap();
        std::fs::write(
            project.join("review.md"),
            "---\ndescription: \"Review a change\"\nargument-hint: [file] [focus]\nallowed-tools:\n  - Bash(git diff:*)\n  - Read\nmodel: sonnet\ncolor: blue\n---\nReview $ARGUMENTS.\n",
        )
        .unwrap();
        std::fs::write(
            project.join("frontend/component.md"),
            "Make a component $1.\n",
        )
        .unwrap();
        std::fs::write(user.join("review.md"), "The user's review.\n").unwrap();
        std::fs::write(
            user.join("broken.md"),
            "---\ndescription: no closing fence\nx\n",
        )
        .unwrap();
        std::fs::write(codex.join("draft.md"), "Draft $1.\n").unwrap();
        let (cmds, diags) = load_files(&[
            CommandDir {
                dir: project,
                folder: CommandFolder::ClaudeCommands,
            },
            CommandDir {
                dir: user,
                folder: CommandFolder::ClaudeCommands,
            },
            CommandDir {
                dir: codex,
                folder: CommandFolder::CodexPrompts,
            },
        ]);
        let names: Vec<&str> = cmds.iter().map(|c| c.command.name.as_str()).collect();
        assert_eq!(names, ["frontend:component", "review", "prompts:draft"]);
        let review = &cmds[1];
        assert_eq!(review.command.description, "Review a change");
        assert_eq!(
            review.command.argument_hint.as_deref(),
            Some("[file] [focus]")
        );
        assert_eq!(
            review.allowed_tools.as_deref(),
            Some("Bash(git diff:*), Read")
        );
        assert_eq!(review.model.as_deref(), Some("sonnet"));
        assert_eq!(cmds[0].command.description, "Make a component $1.");
        let codes: Vec<&str> = diags.iter().map(|d| d.code.as_ref()).collect();
        assert!(codes.contains(&codes::SHADOWED), "{codes:?}");
        assert!(codes.contains(&codes::FRONT_MATTER_INVALID), "{codes:?}");
    }
}
