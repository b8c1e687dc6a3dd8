//! Claude Code's permission rules as evoflux approval rules.
//!
//! A Claude Code user keeps what their agent may do without asking, must
//! ask for, and must never do in `permissions.allow`, `permissions.ask`
//! and `permissions.deny` of `.claude/settings.json` (and
//! `settings.local.json`, and `~/.claude/settings.json`): `Bash(npm run
//! test:*)`, `Read(./.env)`, `WebFetch(domain:example.com)`,
//! `mcp__github__create_issue`. Asking them to write it again for evoflux
//! loses it; silently ignoring a deny is worse. So each entry with a
//! meaning here becomes a [`PermissionRule`], and every entry that has
//! none is named (the caller reports them in one warning,
//! [`NOT_MAPPED`]). The files are only ever read.
//!
//! How the rules meet evoflux's own approval settings — evoflux's own
//! wins, and a deny never becomes an allow:
//!
//! - **deny** refuses a matching call, whatever else is set. It only
//!   takes something away, so it applies from every file, trusted or not.
//! - **ask** puts a matching call to the user even when evoflux's policy
//!   would run it, unless the user's own `[approval]` names that tool
//!   (their evoflux setting wins) or they answered "always" for it.
//! - **allow** stands in for an "always" answer the user could have
//!   given: it skips only a question evoflux would ask and let such an
//!   answer skip. It never runs a command outside the sandbox, and never
//!   lifts a refusal. An untrusted repository's allow rules are not
//!   applied (a repository must not approve its own commands).
//! - Among Claude's rules for one call, deny beats ask beats allow, as in
//!   Claude Code.
//!
//! A command rule matches words, not text: `Bash(npm run test:*)` (or
//! `Bash(npm run test *)`) allows `npm run test -- --watch` only when the
//! command is one simple command (no `;`, `&&`, `|`, redirection or
//! substitution), so an allowed prefix cannot carry another command with
//! it; a deny or ask rule is matched against every part of a compound
//! command. Paths follow Claude's forms (`//abs`, `~/home`, `/from the
//! settings' project`, `./from the workspace`, and a bare name at any
//! depth) with gitignore-style globs.

use std::path::{Path, PathBuf};

use evoflux_agents::team::claude::{ClaudeTool, claude_tool};
use evoflux_core::{Diagnostic, Diagnostics};
use evoflux_graph::tool::ActionClass;
use serde_json::Value;

/// The warning that names the entries of one file that cannot be mapped.
pub const NOT_MAPPED: &str = "claude/permission-not-mapped";
/// The warning for a settings file that cannot be read as Claude's JSON.
pub const INVALID: &str = "claude/settings-invalid";
/// The note that an untrusted repository's allow rules are not applied.
pub const UNTRUSTED_ALLOW: &str = "claude/permission-allow-untrusted";
/// The warning event of a call refused by a deny rule.
pub const DENIED: &str = "approval/denied-by-rule";

/// What a rule does to a matching call. Ordered: the strongest wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Effect {
    Allow,
    Ask,
    Deny,
}

impl Effect {
    /// The key of Claude's `permissions` object.
    pub const fn key(self) -> &'static str {
        match self {
            Effect::Allow => "allow",
            Effect::Ask => "ask",
            Effect::Deny => "deny",
        }
    }
}

/// Which files a file rule speaks of: Claude's `Read` (every tool that
/// reads the paths it names) or `Edit`/`Write` (every tool that changes
/// them), by the tool's declared action class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileAccess {
    Read,
    Change,
}

impl FileAccess {
    const fn class(self) -> ActionClass {
        match self {
            FileAccess::Read => ActionClass::Read,
            FileAccess::Change => ActionClass::Write,
        }
    }
}

/// What a rule matches. Closed.
#[derive(Debug, Clone)]
pub enum Target {
    /// One evoflux tool by name (a built-in, or `mcp__server__tool`).
    Tool(String),
    /// The shell tool's commands: every one, or these words.
    Command(Option<CommandWords>),
    /// Fetching a URL (`web_fetch`): every one, or this domain's.
    Fetch(Option<String>),
    /// Every file tool of this access, or only for these paths.
    Files(FileAccess, Option<PathPattern>),
    /// Every tool of one MCP server (`mcp__server`, `mcp__server__*`).
    McpServer(String),
}

/// A command rule's words, exact or as a prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandWords {
    pub words: Vec<String>,
    pub prefix: bool,
}

/// A path pattern made absolute, matched with gitignore-style globs.
#[derive(Debug, Clone)]
pub struct PathPattern {
    set: globset::GlobSet,
}

/// One rule, with the entry and file it came from.
#[derive(Debug, Clone)]
pub struct PermissionRule {
    pub effect: Effect,
    pub target: Target,
    /// The entry as the file writes it (`Bash(npm run test:*)`).
    pub entry: String,
    pub file: PathBuf,
}

/// A call as the rules see it.
#[derive(Debug, Clone)]
pub struct CallFacts<'a> {
    pub tool: &'a str,
    pub class: ActionClass,
    /// The command of a shell call.
    pub command: Option<&'a str>,
    /// Whether the tool declares path arguments (a file tool).
    pub names_paths: bool,
    /// The call's path arguments, resolved.
    pub paths: Vec<PathBuf>,
    /// The URL a fetch asks for.
    pub url: Option<&'a str>,
}

/// The rules of a session, in file order.
#[derive(Debug, Clone, Default)]
pub struct PermissionRules {
    pub rules: Vec<PermissionRule>,
}

/// Two rule sets are equal when they hold the same entries of the same
/// files with the same effects (what they compile to follows from those).
impl PartialEq for PermissionRules {
    fn eq(&self, other: &Self) -> bool {
        let key = |r: &PermissionRule| (r.effect, r.entry.clone(), r.file.clone());
        self.rules.iter().map(key).eq(other.rules.iter().map(key))
    }
}

impl Eq for PermissionRules {}

impl PermissionRules {
    /// The strongest rule matching `call` (deny, then ask, then allow).
    pub fn decide(&self, call: &CallFacts<'_>) -> Option<&PermissionRule> {
        self.rules
            .iter()
            .filter(|r| r.matches(call))
            .max_by_key(|r| r.effect)
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }
}

impl PermissionRule {
    fn matches(&self, call: &CallFacts<'_>) -> bool {
        let allow = self.effect == Effect::Allow;
        match &self.target {
            Target::Tool(name) => call.tool == name,
            Target::McpServer(server) => call
                .tool
                .strip_prefix("mcp__")
                .and_then(|rest| rest.strip_prefix(server.as_str()))
                .is_some_and(|rest| rest.starts_with("__")),
            Target::Command(words) => match (call.command, words) {
                (None, _) => false,
                (Some(_), None) => true,
                (Some(command), Some(words)) => command_matches(command, words, allow),
            },
            Target::Fetch(domain) => {
                call.tool == WEB_FETCH
                    && match domain {
                        None => true,
                        Some(domain) => call
                            .url
                            .and_then(host_of)
                            .is_some_and(|host| domain_matches(&host, domain, allow)),
                    }
            }
            Target::Files(access, pattern) => {
                if call.class != access.class() || !call.names_paths {
                    return false;
                }
                match pattern {
                    None => true,
                    Some(_) if call.paths.is_empty() => false,
                    // An allow covers the call only when it covers every
                    // path; a deny or ask catches any one.
                    Some(p) if allow => call.paths.iter().all(|path| p.set.is_match(path)),
                    Some(p) => call.paths.iter().any(|path| p.set.is_match(path)),
                }
            }
        }
    }

    /// What the model reads when a deny refuses its call.
    pub fn refusal(&self, tool: &str) -> String {
        format!(
            "`{tool}` is denied by the rule `{}` in `{}` (Claude Code's permissions.deny, which \
             evoflux applies). Do the task another way, or tell the user it needs that rule \
             changed.",
            self.entry,
            self.file.display()
        )
    }
}

/// The fetch tool Claude's `WebFetch` names, from the one table.
const WEB_FETCH: &str = "web_fetch";

fn command_matches(command: &str, rule: &CommandWords, allow: bool) -> bool {
    let covers = |words: &[String]| {
        if rule.prefix {
            words.starts_with(&rule.words)
        } else {
            words == rule.words.as_slice()
        }
    };
    if allow {
        // Only one simple command: `npm test && rm -rf x` is not `npm test`.
        return crate::safe_command::simple_words(command).is_some_and(|w| covers(&w));
    }
    command_parts(command).iter().any(|words| {
        covers(words)
            // `/bin/rm` is `rm`.
            || words.first().is_some_and(|program| {
                let base = program.rsplit('/').next().unwrap_or(program);
                let mut named = words.clone();
                named[0] = base.to_owned();
                base != program && covers(&named)
            })
    })
}

/// The words of each part of a command, split at anything the shell
/// would start another command at; quotes are removed, nothing is
/// expanded. Loose on purpose: it serves deny and ask rules, where
/// finding too much only asks or refuses.
fn command_parts(command: &str) -> Vec<Vec<String>> {
    let mut parts = Vec::new();
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let flush_word = |word: &mut String, words: &mut Vec<String>| {
        if !word.is_empty() {
            words.push(std::mem::take(word));
        }
    };
    for c in command.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => quote = Some(c),
            (None, ' ' | '\t') => flush_word(&mut word, &mut words),
            (None, ';' | '&' | '|' | '\n' | '(' | ')' | '`' | '{' | '}' | '$' | '<' | '>') => {
                flush_word(&mut word, &mut words);
                if !words.is_empty() {
                    parts.push(std::mem::take(&mut words));
                }
            }
            (None, c) => word.push(c),
        }
    }
    flush_word(&mut word, &mut words);
    if !words.is_empty() {
        parts.push(words);
    }
    parts
}

fn host_of(url: &str) -> Option<String> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next()?;
    let host = authority.rsplit('@').next()?;
    let host = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next()?,
        None => host.split(':').next()?,
    };
    (!host.is_empty()).then(|| host.to_ascii_lowercase())
}

fn domain_matches(host: &str, domain: &str, allow: bool) -> bool {
    let domain = domain.to_ascii_lowercase();
    host == domain || (!allow && host.ends_with(&format!(".{domain}")))
}

/// The directories a settings file's paths are read against.
#[derive(Debug, Clone)]
pub struct RuleBase {
    /// The directory holding `.claude/` (the repository, or the home for
    /// the user's file): what `/path` names.
    pub project: PathBuf,
    /// The workspace: what `./path` and `path` name.
    pub cwd: PathBuf,
    /// What `~/path` names.
    pub home: Option<PathBuf>,
}

/// The rules of one Claude settings file's text. Entries without a
/// meaning here, and what else in `permissions` evoflux does not carry
/// (`defaultMode`, `additionalDirectories`), are named in one
/// [`NOT_MAPPED`] warning; with `allow_trusted` false, allow rules are
/// left out and named in one [`UNTRUSTED_ALLOW`] warning.
pub fn from_claude_settings(
    file: &Path,
    text: &str,
    base: &RuleBase,
    allow_trusted: bool,
    diags: &mut Diagnostics,
) -> Vec<PermissionRule> {
    let invalid = |why: String| {
        Diagnostic::warning(
            INVALID,
            format!(
                "Claude Code's settings are not read: {why}; fix the file in Claude Code, or \
                 set `[compat] permissions = false`"
            ),
        )
        .with_file(file)
    };
    if let Err(e) = evoflux_core::nesting::check_json(text) {
        diags.push(invalid(e.to_string()));
        return Vec::new();
    }
    let root: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            diags.push(
                invalid(format!("it is not valid JSON: {e}"))
                    .with_line(u32::try_from(e.line()).unwrap_or(0)),
            );
            return Vec::new();
        }
    };
    let Some(permissions) = root.get("permissions") else {
        return Vec::new();
    };
    let Some(permissions) = permissions.as_object() else {
        diags.push(invalid("`permissions` is not an object".to_owned()).with_field("permissions"));
        return Vec::new();
    };
    let mut rules = Vec::new();
    let mut not_mapped: Vec<String> = Vec::new();
    let mut untrusted: Vec<String> = Vec::new();
    for (key, value) in permissions {
        let effect = match key.as_str() {
            "allow" => Effect::Allow,
            "ask" => Effect::Ask,
            "deny" => Effect::Deny,
            _ => {
                not_mapped.push(format!("permissions.{key}"));
                continue;
            }
        };
        let Some(entries) = value.as_array() else {
            not_mapped.push(format!("permissions.{key} (not a list)"));
            continue;
        };
        for entry in entries {
            let Some(entry) = entry.as_str() else {
                not_mapped.push(format!("permissions.{key}: {entry}"));
                continue;
            };
            match parse_entry(entry, base) {
                None => not_mapped.push(format!("{key}: {entry}")),
                Some(_) if effect == Effect::Allow && !allow_trusted => {
                    untrusted.push(entry.to_owned());
                }
                Some(target) => rules.push(PermissionRule {
                    effect,
                    target,
                    entry: entry.to_owned(),
                    file: file.to_path_buf(),
                }),
            }
        }
    }
    if !not_mapped.is_empty() {
        diags.push(
            Diagnostic::warning(
                NOT_MAPPED,
                format!(
                    "these Claude Code permission entries have no meaning in evoflux and are not \
                     applied: {}; express them in evoflux's [approval] if you need them",
                    not_mapped.join(", ")
                ),
            )
            .with_file(file)
            .with_field("permissions"),
        );
    }
    if !untrusted.is_empty() {
        diags.push(
            Diagnostic::warning(
                UNTRUSTED_ALLOW,
                format!(
                    "this repository is not trusted, so its allow rules are not applied: {} \
                     (evoflux trust)",
                    untrusted.join(", ")
                ),
            )
            .with_file(file)
            .with_field("permissions.allow"),
        );
    }
    rules
}

/// One entry as a target, or `None` when it has no meaning here.
fn parse_entry(entry: &str, base: &RuleBase) -> Option<Target> {
    let entry = entry.trim();
    if let Some(rest) = entry.strip_prefix("mcp__") {
        return mcp_target(rest);
    }
    let (tool, spec) = match entry.split_once('(') {
        Some((tool, rest)) => (tool.trim(), Some(rest.strip_suffix(')')?.trim())),
        None => (entry, None),
    };
    let spec = spec.filter(|s| !s.is_empty() && *s != "*");
    // The rule's kind comes from the one table's mapping (`Bash` is
    // `shell`, `MultiEdit` is `edit`, …), not from a second reading of the
    // Claude name.
    let ClaudeTool::Maps(evoflux) = claude_tool(tool)? else {
        return None;
    };
    match evoflux {
        "shell" => Some(Target::Command(match spec {
            None => None,
            Some(s) => Some(command_words(s)?),
        })),
        "read" => Some(Target::Files(
            FileAccess::Read,
            match spec {
                None => None,
                Some(s) => Some(path_pattern(s, base)?),
            },
        )),
        "edit" | "write" => Some(Target::Files(
            FileAccess::Change,
            match spec {
                None => None,
                Some(s) => Some(path_pattern(s, base)?),
            },
        )),
        "web_fetch" => Some(Target::Fetch(match spec {
            None => None,
            Some(s) => Some(s.strip_prefix("domain:")?.trim().to_owned())
                .filter(|d| !d.is_empty() && !d.contains(['/', '*'])),
        })),
        // Glob, Grep, LS, WebSearch, TodoWrite: the tool as a whole.
        _ => spec.is_none().then(|| Target::Tool(evoflux.to_owned())),
    }
}

fn mcp_target(rest: &str) -> Option<Target> {
    let (server, tool) = match rest.split_once("__") {
        Some((server, tool)) => (server, Some(tool)),
        None => (rest, None),
    };
    let server = evoflux_graph::mcp_format::connection_name(server)?;
    match tool {
        None | Some("*") => Some(Target::McpServer(server)),
        Some(tool) if !tool.is_empty() && !tool.contains('*') => {
            Some(Target::Tool(format!("mcp__{server}__{tool}")))
        }
        Some(_) => None,
    }
}

/// `npm run test:*`, `npm run test *` (prefixes) or `npm run test`
/// (exact); any other wildcard has no meaning here.
fn command_words(spec: &str) -> Option<CommandWords> {
    let (text, prefix) = match spec.strip_suffix(":*").or_else(|| spec.strip_suffix(" *")) {
        Some(text) => (text.trim(), true),
        None => (spec, false),
    };
    if text.contains('*') {
        return None;
    }
    let words = crate::safe_command::simple_words(text)?;
    (!words.is_empty()).then_some(CommandWords { words, prefix })
}

fn path_pattern(spec: &str, base: &RuleBase) -> Option<PathPattern> {
    let (dir, rel) = if let Some(abs) = spec.strip_prefix("//") {
        (PathBuf::from("/"), abs.to_owned())
    } else if let Some(home) = spec.strip_prefix("~/") {
        (base.home.clone()?, home.to_owned())
    } else if let Some(project) = spec.strip_prefix('/') {
        (base.project.clone(), project.to_owned())
    } else if let Some(cwd) = spec.strip_prefix("./") {
        (base.cwd.clone(), cwd.to_owned())
    } else if spec.contains('/') {
        (base.cwd.clone(), spec.to_owned())
    } else {
        // A bare name matches at any depth, as in a .gitignore.
        (base.cwd.clone(), format!("**/{spec}"))
    };
    if rel.split('/').any(|part| part == "..") {
        return None;
    }
    let rel = rel.trim_end_matches('/');
    let full = if rel.is_empty() {
        dir.display().to_string()
    } else {
        format!("{}/{rel}", dir.display().to_string().trim_end_matches('/'))
    };
    let mut set = globset::GlobSetBuilder::new();
    // The path itself, and everything below it (a folder's rule covers
    // its files).
    for pattern in [full.clone(), format!("{full}/**")] {
        set.add(
            globset::GlobBuilder::new(&pattern)
                .literal_separator(true)
                .build()
                .ok()?,
        );
    }
    Some(PathPattern {
        set: set.build().ok()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> RuleBase {
        RuleBase {
            project: PathBuf::from("/repo"),
            cwd: PathBuf::from("/repo"),
            home: Some(PathBuf::from("/home/u")),
        }
    }

    fn rules(text: &str, trusted: bool) -> (PermissionRules, Diagnostics) {
        let mut d = Diagnostics::new();
        let rules = from_claude_settings(
            Path::new("/repo/.claude/settings.json"),
            text,
            &base(),
            trusted,
            &mut d,
        );
        (PermissionRules { rules }, d)
    }

    fn shell(command: &str) -> CallFacts<'_> {
        CallFacts {
            tool: "shell",
            class: ActionClass::Execute,
            command: Some(command),
            names_paths: true,
            paths: Vec::new(),
            url: None,
        }
    }

    fn effect(r: &PermissionRules, call: &CallFacts<'_>) -> Option<Effect> {
        r.decide(call).map(|r| r.effect)
    }

    const SETTINGS: &str = r#"{
      "model": "sonnet",
      "permissions": {
        "allow": ["Bash(npm run test:*)", "Bash(git diff *)", "Read(./src/**)",
                  "WebFetch(domain:example.com)", "mcp__github", "Glob",
                  "Task", "Bash(git * main)", "NotebookEdit(x.ipynb)"],
        "ask": ["Bash(git push:*)"],
        "deny": ["Bash(rm:*)", "Read(./.env)", "Edit(/secrets/)", "mcp__db__drop_table"],
        "defaultMode": "acceptEdits"
      }
    }"#;

    #[test]
    fn mapped_rules_allow_ask_and_deny_by_words_paths_domains_and_servers() {
        let (r, d) = rules(SETTINGS, true);
        assert_eq!(d.codes(), [NOT_MAPPED]);
        let message = &d.iter().next().unwrap().message;
        for unmapped in [
            "allow: Task",
            "allow: Bash(git * main)",
            "allow: NotebookEdit(x.ipynb)",
            "permissions.defaultMode",
        ] {
            assert!(message.contains(unmapped), "{unmapped} in {message}");
        }
        assert_eq!(effect(&r, &shell("npm run test")), Some(Effect::Allow));
        assert_eq!(
            effect(&r, &shell("npm run test -- --watch")),
            Some(Effect::Allow)
        );
        assert_eq!(effect(&r, &shell("git diff HEAD~1")), Some(Effect::Allow));
        // Another command riding on an allowed prefix is not allowed.
        assert_eq!(effect(&r, &shell("npm run test && curl x | sh")), None);
        assert_eq!(effect(&r, &shell("npm run testing")), None);
        assert_eq!(effect(&r, &shell("git push origin")), Some(Effect::Ask));
        assert_eq!(effect(&r, &shell("rm -rf build")), Some(Effect::Deny));
        // A deny is found in every part of a command.
        assert_eq!(
            effect(&r, &shell("npm run test; rm -rf /")),
            Some(Effect::Deny)
        );
        assert_eq!(effect(&r, &shell("/bin/rm x")), Some(Effect::Deny));
        let read = |path: &str| CallFacts {
            tool: "read",
            class: ActionClass::Read,
            command: None,
            names_paths: true,
            paths: vec![PathBuf::from(path)],
            url: None,
        };
        assert_eq!(effect(&r, &read("/repo/src/lib.rs")), Some(Effect::Allow));
        assert_eq!(effect(&r, &read("/repo/.env")), Some(Effect::Deny));
        assert_eq!(effect(&r, &read("/repo/docs/a.md")), None);
        let edit = CallFacts {
            tool: "edit",
            class: ActionClass::Write,
            ..read("/repo/secrets/key.pem")
        };
        assert_eq!(effect(&r, &edit), Some(Effect::Deny));
        let fetch = |url: &'static str| CallFacts {
            tool: "web_fetch",
            class: ActionClass::Network,
            command: None,
            names_paths: false,
            paths: Vec::new(),
            url: Some(url),
        };
        assert_eq!(
            effect(&r, &fetch("https://example.com/a")),
            Some(Effect::Allow)
        );
        assert_eq!(effect(&r, &fetch("https://evil.example.com/a")), None);
        let tool = |name: &'static str| CallFacts {
            tool: name,
            class: ActionClass::Execute,
            command: None,
            names_paths: false,
            paths: Vec::new(),
            url: None,
        };
        assert_eq!(
            effect(&r, &tool("mcp__github__create_issue")),
            Some(Effect::Allow)
        );
        assert_eq!(effect(&r, &tool("mcp__githubx__a")), None);
        assert_eq!(effect(&r, &tool("mcp__db__drop_table")), Some(Effect::Deny));
        assert_eq!(effect(&r, &tool("glob")), Some(Effect::Allow));
    }

    #[test]
    fn an_untrusted_file_keeps_its_denies_and_loses_its_allows() {
        let (r, d) = rules(SETTINGS, false);
        assert!(d.codes().contains(&UNTRUSTED_ALLOW));
        assert!(r.rules.iter().all(|r| r.effect != Effect::Allow));
        assert_eq!(effect(&r, &shell("rm x")), Some(Effect::Deny));
        assert_eq!(effect(&r, &shell("npm run test")), None);
    }

    #[test]
    fn broken_files_warn_and_yield_nothing() {
        for text in ["{ nope", r#"{"permissions": []}"#] {
            let (r, d) = rules(text, true);
            assert!(r.is_empty());
            assert_eq!(d.codes(), [INVALID]);
        }
        let (r, d) = rules(r#"{"env": {}}"#, true);
        assert!(r.is_empty() && d.is_empty());
    }

    #[test]
    fn paths_follow_claude_s_forms() {
        let b = base();
        let m = |spec: &str, path: &str| path_pattern(spec, &b).unwrap().set.is_match(path);
        assert!(m("//etc/passwd", "/etc/passwd"));
        assert!(m("~/.ssh/**", "/home/u/.ssh/id"));
        assert!(m("/docs/*.md", "/repo/docs/a.md"));
        assert!(!m("/docs/*.md", "/repo/docs/x/a.md"));
        assert!(m("*.pem", "/repo/a/b/k.pem"));
        assert!(m("./build", "/repo/build/out.o"));
        assert!(path_pattern("../up", &b).is_none());
    }
}
